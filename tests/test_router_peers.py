"""router/peers.py: which local account holds a loopback client's socket, and the gate
a server without auth keeps with it (only its own account, and root)."""

import os
import pwd
import socket
import struct

import pytest
from helpers import connect_as

from gsmcpd.router.peers import LocalClients, diag_socket, peer_uid

NOBODY = 65534
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root, to connect as another account")


@pytest.fixture(scope="module")
def diag():
    with diag_socket() as made:
        yield made


@pytest.fixture
def gate():
    made = LocalClients(own_only=True)
    yield made
    made.close()


def accepted(connect):
    """(the accepted socket, what connect() returned) for one loopback connection."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    with listener:
        client = connect(listener.getsockname())
        server, _ = listener.accept()
    return server, client


def test_a_client_of_this_account_is_shown_as_this_account(diag):
    server, client = accepted(socket.create_connection)
    with server, client:
        assert peer_uid(server, diag) == os.getuid()


def test_a_client_on_an_ipv6_socket_reaching_an_ipv4_listener_is_found_too(diag):
    def connect_v6(address):
        sock = socket.socket(socket.AF_INET6)
        sock.connect(("::ffff:" + address[0], address[1]))
        return sock
    server, client = accepted(connect_v6)
    with server, client:
        assert peer_uid(server, diag) == os.getuid()


@as_root
def test_another_accounts_client_is_shown_as_that_account(diag):
    server, client = accepted(lambda address: connect_as(NOBODY, address))
    with server, client:
        assert peer_uid(server, diag) == NOBODY


@as_root
def test_another_accounts_client_that_closed_at_once_names_no_account(diag):
    # Its socket, orphaned, may be a TIME_WAIT one, which the kernel shows as uid 0
    # whoever made it: taken for root's, another account's request would get through.
    def connect_send_and_close(address):
        sock = connect_as(NOBODY, address)
        sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\n\r\n")
        sock.close()
        return socket.socket()
    server, client = accepted(connect_send_and_close)
    with server, client:
        assert peer_uid(server, diag) is None


def reset_at_once(address):
    """Connect and reset (SO_LINGER 0) before the listener accepts: a socket left behind."""
    sock = socket.create_connection(address)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()
    return socket.socket()


def test_a_client_that_reset_before_its_accept_names_no_account_and_is_refused(gate, diag):
    # Its accepted socket has no peer (getpeername: ENOTCONN): that raised out of the
    # router's accept, a traceback per reset, its connection left outside every gate.
    server, client = accepted(reset_at_once)
    with server, client:
        assert peer_uid(server, diag) is None
        assert "this connection is from an account the kernel does not name" in gate.admit(server)[1]


def test_a_client_gone_before_its_account_is_asked_is_refused_without_a_warning(caplog, gate):
    # `start` connects and closes at once to prove the port listens (so do port probes):
    # every start logged "WARNING refusing connections from an account the kernel does
    # not name", as if a stranger had been turned away.
    server, client = accepted(reset_at_once)
    with server, client:
        assert gate.admit(server)[1] is not None
    assert [r.getMessage() for r in caplog.records if "refusing connections" in r.getMessage()] == []


def test_the_own_account_gate_lets_this_account_through(gate):
    server, client = accepted(socket.create_connection)
    with server, client:
        assert gate.admit(server)[1] is None


def test_closing_the_own_account_gate_closes_its_netlink_socket():
    # Each unit test's App opened one and left it to the collector (ResourceWarning).
    gate = LocalClients(own_only=True)
    diag = gate._diag
    gate.close()
    assert diag.fileno() == -1


@as_root
def test_the_own_account_gate_refuses_another_account_saying_who_and_what_to_do(caplog, gate):
    for _ in range(2):
        server, client = accepted(lambda address: connect_as(NOBODY, address))
        with server, client:
            refusal = gate.admit(server)[1]
        name = pwd.getpwuid(NOBODY).pw_name
        assert refusal.startswith("Forbidden: this server runs without auth, so it serves only the clients "
                                  "of root (uid 0); this connection is from %s (uid %d)." % (name, NOBODY))
        assert "GS_MCP_AUTH=1" in refusal and "GS_MCP_LOCAL_CLIENTS=any" in refusal
    logged = [r.getMessage() for r in caplog.records if "refusing connections" in r.getMessage()]
    assert logged == ["refusing connections from %s (uid %d): without auth only the clients of root (uid 0) are served "
                      "(GS_MCP_LOCAL_CLIENTS)" % (name, NOBODY)]   # once per account, not per connection


@as_root
def test_the_own_account_gate_names_a_refused_account_once_not_per_connection(monkeypatch, gate):
    # Each refusal looked the account's name up again, in the router's one loop: with
    # accounts in LDAP, every connection another account opened could hold it on the network.
    from gsmcpd.router import peers
    looked_up = []
    monkeypatch.setattr(peers, "account_and_uid", lambda uid: looked_up.append(uid) or "uid %d" % uid)
    refusals = set()
    for _ in range(3):
        server, client = accepted(lambda address: connect_as(NOBODY, address))
        with server, client:
            refusals.add(gate.admit(server)[1])
    assert looked_up == [NOBODY] and len(refusals) == 1



def test_without_sock_diag_the_refusal_says_the_server_cannot_ask_not_to_run_the_client_as_another(monkeypatch):
    # A sandbox without AF_NETLINK (an old unit's RestrictAddressFamilies=): the 403 told
    # the daemon's own account's client to "run the client as" that very account.
    from gsmcpd.router import peers

    def no_netlink():
        raise OSError(97, "Address family not supported by protocol")
    monkeypatch.setattr(peers, "diag_socket", no_netlink)
    gate = LocalClients(own_only=True)
    server, client = accepted(socket.create_connection)
    with server, client:
        refusal = gate.admit(server)[1]
    assert refusal == (
        "Forbidden: this server runs without auth, so it serves only the clients of %s, and it cannot "
        "ask the kernel which account a connection is from (sock_diag netlink: Address family not "
        "supported by protocol): allow AF_NETLINK (systemd: RestrictAddressFamilies=), or start the "
        "server with auth (GS_MCP_AUTH=1), or with GS_MCP_LOCAL_CLIENTS=any to let every local "
        "account run code as %s" % (gate.owner, gate.owner))


# -- the account each client's sessions are shown as ------------------------------------
@pytest.fixture
def any_account():
    made = LocalClients(own_only=False)
    yield made
    made.close()


@as_root
def test_with_any_account_another_accounts_client_is_served_and_named_as_its_account(any_account, gate):
    server, client = accepted(lambda address: connect_as(NOBODY, address))
    with server, client:
        assert any_account.admit(server) == (pwd.getpwuid(NOBODY).pw_name, None)
    server, client = accepted(lambda address: connect_as(NOBODY, address))
    with server, client:
        account, refusal = gate.admit(server)   # the own-account gate: refused, no session to name
    assert account is None and refusal.startswith("Forbidden: ")


def test_a_client_of_this_account_is_named_as_it_by_either_gate(any_account, gate):
    for clients in (any_account, gate):
        server, client = accepted(socket.create_connection)
        with server, client:
            assert clients.admit(server) == (pwd.getpwuid(os.getuid()).pw_name, None)


def test_with_any_account_a_client_the_kernel_does_not_name_is_served_as_the_daemons_account(any_account):
    server, client = accepted(reset_at_once)
    with server, client:
        assert any_account.admit(server) == (pwd.getpwuid(os.getuid()).pw_name, None)


@as_root
def test_a_served_account_is_looked_up_once_not_per_connection(monkeypatch, any_account):
    from gsmcpd.router import peers
    looked_up = []
    monkeypatch.setattr(peers, "account_name", lambda uid: looked_up.append(uid) or "uid %d" % uid)
    for _ in range(3):
        server, client = accepted(lambda address: connect_as(NOBODY, address))
        with server, client:
            assert any_account.admit(server) == ("uid %d" % NOBODY, None)
    assert looked_up == [NOBODY]


def test_with_any_account_and_no_sock_diag_clients_are_served_as_the_daemons_account_saying_why(
        monkeypatch, caplog):
    from gsmcpd.router import peers

    def no_netlink():
        raise OSError(97, "Address family not supported by protocol")
    monkeypatch.setattr(peers, "diag_socket", no_netlink)
    clients = LocalClients(own_only=False)
    server, client = accepted(socket.create_connection)
    with server, client:
        assert clients.admit(server) == (pwd.getpwuid(os.getuid()).pw_name, None)
    assert [r.getMessage() for r in caplog.records] == [
        "cannot ask the kernel which account a client connects as (sock_diag netlink: Address family "
        "not supported by protocol), so every session is shown as this server's account, %s: allow "
        "AF_NETLINK to show each as its client's" % clients.owner]
