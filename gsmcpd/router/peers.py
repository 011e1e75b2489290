"""Which local account holds the other end of a loopback TCP connection.

Without auth nothing else tells clients apart, and any account on the host can connect
to a loopback port: the router asks the kernel who owns the client's socket (its
sock_diag netlink interface, as `ss -tne` does), so only the daemon's own account (and
root) drive a server that runs code as that account, and each session is shown as
its client's account (with GS_MCP_LOCAL_CLIENTS=any too).
"""

import logging
import os
import socket
import struct

from gsmcpd.accounts import account_and_uid, account_name

log = logging.getLogger("gsmcpd.peers")

_NETLINK_SOCK_DIAG = 4
_SOCK_DIAG_BY_FAMILY = 20
_NLM_F_REQUEST = 1
_NO_COOKIE = 0xFFFFFFFF
_ANY_STATE = 0xFFFFFFFF
# nlmsghdr (16 bytes), then inet_diag_msg: family, state, timer, retrans (4), the socket
# id (48), expires, rqueue, wqueue (12), then the owner's uid and the socket's inode.
_UID_OFFSET = 16 + 4 + 48 + 12
_SOCKID_OFFSET = 16 + 4   # its source and destination ports first, big-endian


def _diag_request(family, local, remote):
    """A SOCK_DIAG_BY_FAMILY request for the one TCP socket at local, connected to remote
    (inet_diag_req_v2 with an exact inet_diag_sockid: the kernel looks it up, no dump)."""
    def address(ip):
        packed = socket.inet_pton(family, ip)
        return packed + bytes(16 - len(packed))
    sockid = (struct.pack("!HH", local[1], remote[1]) + address(local[0]) + address(remote[0])
              + struct.pack("=III", 0, _NO_COOKIE, _NO_COOKIE))
    body = struct.pack("=BBBBI", family, socket.IPPROTO_TCP, 0, 0, _ANY_STATE) + sockid
    return struct.pack("=IHHII", 16 + len(body), _SOCK_DIAG_BY_FAMILY, _NLM_F_REQUEST, 1, 0) + body


def _mapped(address):
    """An IPv4 (ip, port) as an IPv6 socket connected to it names it (::ffff:a.b.c.d)."""
    return "::ffff:" + address[0], address[1]


def peer_uid(sock, diag):
    """The uid owning the client's end of an accepted loopback TCP socket, or None when
    the kernel does not name it (the client already gone). `diag`: a diag_socket()."""
    try:
        # A client that reset before its accept left a socket with no peer (ENOTCONN).
        ours, theirs = sock.getsockname()[:2], sock.getpeername()[:2]
        searches = [(sock.family, theirs, ours)]   # the client's socket: local is our peer, remote us
        if sock.family == socket.AF_INET:   # a client's IPv6 socket may reach an IPv4 listener
            searches.append((socket.AF_INET6, _mapped(theirs), _mapped(ours)))
        for family, local, remote in searches:
            diag.send(_diag_request(family, local, remote))
            reply = diag.recv(8192, socket.MSG_DONTWAIT)   # the kernel answers as it is asked
            _, kind = struct.unpack_from("=IH", reply)
            # The ports the reply's socket id names are the asked ones: an answer to
            # another question (out of step) must never name this client's account.
            if (kind == _SOCK_DIAG_BY_FAMILY
                    and struct.unpack_from("!HH", reply, _SOCKID_OFFSET) == (local[1], remote[1])):
                uid, inode = struct.unpack_from("=II", reply, _UID_OFFSET)
                # inode 0: no process holds it any more (the client closed at once);
                # the kernel may have made it a TIME_WAIT one, which names uid 0
                # (root) whoever made it.
                return uid if inode else None
    except (OSError, struct.error):
        pass
    return None


def diag_socket():
    """The netlink socket peer_uid asks through: one, opened at start, as a new one per
    connection could find the descriptors all taken (the client's accept took the last)."""
    return socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, _NETLINK_SOCK_DIAG)


class LocalClients:
    """The clients of a server without auth: the account owning each one's socket names
    its sessions (log lines, status, the commits they make), and, `own_only`
    (GS_MCP_LOCAL_CLIENTS=own), a connection from another account than the daemon's
    own (or root) is refused, so no other account runs code as this one."""

    def __init__(self, own_only=True):
        self.own_only = own_only
        self.uids = frozenset({0, os.getuid()})
        self.owner = account_and_uid(os.getuid())
        self.served = self.owner if os.getuid() == 0 else self.owner + " and root"
        # uid: its refusal, made and logged once; uid: its name. So a loop cannot flood the
        # log, nor hold the router's one loop on a name lookup (NSS, maybe over the
        # network) per connection.
        self._refusals = {}
        self._names = {}
        self._diag = None
        try:
            self._diag = diag_socket()
        except OSError as exc:
            why = exc.strerror or exc
            if not own_only:   # served all the same: only the name is lost
                log.warning("cannot ask the kernel which account a client connects as (sock_diag netlink: "
                            "%s), so every session is shown as this server's account, %s: allow AF_NETLINK "
                            "to show each as its client's", why, self.owner)
            else:   # a sandbox without AF_NETLINK: every client is refused, saying why
                log.warning("cannot ask the kernel which account a client connects as (sock_diag netlink: "
                            "%s), so every connection will be refused: allow AF_NETLINK, or set "
                            "GS_MCP_LOCAL_CLIENTS=any", why)
            self._unasked = (
                "Forbidden: this server runs without auth, so it serves only the clients of %s, and it "
                "cannot ask the kernel which account a connection is from (sock_diag netlink: %s): allow "
                "AF_NETLINK (systemd: RestrictAddressFamilies=), or start the server with auth "
                "(GS_MCP_AUTH=1), or with GS_MCP_LOCAL_CLIENTS=any to let every local account run code "
                "as %s" % (self.owner, why, self.owner))

    def close(self):
        if self._diag is not None:
            self._diag.close()

    def admit(self, sock):
        """(the account its sessions are shown as, None or the message refusing every
        request on this accepted connection). The account is the client's, or this
        server's own when the kernel names none (it cannot be asked, or the client is gone)."""
        if self._diag is None:
            return (None, self._unasked) if self.own_only else (self._name(os.getuid()), None)
        uid = peer_uid(sock, self._diag)
        refusal = self._refusal(uid) if self.own_only else None
        if refusal is not None:   # no session to name
            return None, refusal
        return self._name(os.getuid() if uid is None else uid), None

    def _name(self, uid):
        name = self._names.get(uid)
        if name is None:
            name = self._names[uid] = account_name(uid)
        return name

    def _refusal(self, uid):
        if uid in self.uids:
            return None
        refusal = self._refusals.get(uid)
        if refusal is None:
            who = "from an account the kernel does not name" if uid is None else "from " + account_and_uid(uid)
            # None: the client is gone already (a port probe's connect and close, start's
            # own): no account to warn of, and every start logged this warning.
            if uid is not None:
                log.warning("refusing connections %s: without auth only the clients of %s are served "
                            "(GS_MCP_LOCAL_CLIENTS)", who, self.served)
            refusal = self._refusals[uid] = (
                "Forbidden: this server runs without auth, so it serves only the clients of %s; "
                "this connection is %s. Run the client as %s, or start the server with "
                "auth (GS_MCP_AUTH=1), or with GS_MCP_LOCAL_CLIENTS=any to let every local account run "
                "code as %s" % (self.owner, who, self.owner, self.owner))
        return refusal
