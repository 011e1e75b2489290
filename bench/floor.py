"""The floors: bare selectors HTTP/1.1 servers answering one fixed JSON-RPC result.

`floor` is what one Python loop can do on this machine with no protocol work at all:
it reads a request head, skips Content-Length bytes of body and writes the same
canned reply (with an Mcp-Session-Id, so the harness's session setup works against
it too).

`floor --hop` adds gsmcpd's one hop per call and nothing else: each connection gets
its own backend process (forked at accept, niced and SCHED_BATCH like gsmcpd's
workers, waiting in poll() as they do), each request's body goes to it as a
length-prefixed frame over a socketpair, and the reply frame it sends back is written
to the client. So it is the least a router of gsmcpd's design costs in Python before
any protocol work: the floor for the router CPU target's ratio, given the design.

`floor --min` adds to the hop the least protocol work any router of gsmcpd's design
must do per tools/call: it parses the request head into a header map, checks Host and
Origin (loopback only), finds the session by Mcp-Session-Id, checks
MCP-Protocol-Version, parses the JSON body and checks its JSON-RPC envelope, frames the
body behind the call's sequence number, matches the reply frame to the call in flight
and writes a response head sized to the body. Nothing else (no tracing, timers,
deadlines, queues, streams or logging): a lower bound for gsmcpd's router, not a server.
`initialize` gets a canned reply with a session id, a notification 202, anything
refused an empty 400.
"""

import argparse
import json
import os
import select
import selectors
import signal
import socket

BODY = b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hello"}],"isError":false}}'
HEAD = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: floor\r\n"
        b"Content-Length: %d\r\n\r\n")
REPLY = HEAD % len(BODY) + BODY
RECV_SIZE = 65536
BACKEND_NICE = 10  # gsmcpd's default GS_MCP_WORKER_NICE
STOP_POLL = 0.05  # seconds an idle loop waits before looking at the SIGTERM flag again


def _content_length(head):
    lower = head.lower()
    at = lower.find(b"content-length:")
    if at < 0:
        return 0
    end = lower.find(b"\r\n", at)
    return int(lower[at + 15:end if end >= 0 else None])


def _listen(port, host):
    """A selector with the listening socket registered (data None), and the flag
    SIGTERM clears."""
    sel = selectors.DefaultSelector()
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, port))
    listener.listen(1024)
    listener.setblocking(False)
    sel.register(listener, selectors.EVENT_READ, None)
    running = [True]
    signal.signal(signal.SIGTERM, lambda *_: running.__setitem__(0, False))
    return sel, listener, running


def _accept(listener):
    """The next client, non-blocking, Nagle off; None when it is gone already."""
    try:
        conn, _ = listener.accept()
    except BlockingIOError:
        return None
    conn.setblocking(False)
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return conn


def serve(port, host="127.0.0.1"):
    sel, listener, running = _listen(port, host)
    buffers = {}
    while running[0]:
        for key, _ in sel.select(STOP_POLL):
            if key.data is None:
                conn = _accept(listener)
                if conn is None:
                    continue
                buffers[conn] = bytearray()
                sel.register(conn, selectors.EVENT_READ, True)
                continue
            conn = key.fileobj
            try:
                data = conn.recv(65536)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                data = b""
            if not data:
                sel.unregister(conn)
                buffers.pop(conn, None)
                conn.close()
                continue
            buf = buffers[conn]
            buf += data
            replies = 0
            while True:
                end = buf.find(b"\r\n\r\n")
                if end < 0:
                    break
                total = end + 4 + _content_length(bytes(buf[:end]))
                if len(buf) < total:
                    break
                del buf[:total]
                replies += 1
            if replies:
                conn.sendall(REPLY * replies)  # replies are tiny: the send buffer takes them
    sel.close()
    listener.close()


# -- the floor with one hop ----------------------------------------------------------
# A loop of its own rather than a mode of serve(): the floor's loop is left exactly as
# every earlier run measured it.

def take_messages(buf):
    """(head, body) of each complete request at the start of buf, removed from it."""
    messages = []
    while True:
        end = buf.find(b"\r\n\r\n")
        if end < 0:
            return messages
        head = bytes(buf[:end])
        total = end + 4 + _content_length(head)
        if len(buf) < total:
            return messages
        messages.append((head, bytes(buf[end + 4:total])))
        del buf[:total]


def take_requests(buf):
    """The bodies of the complete requests at the start of buf, removed from it."""
    return [body for _, body in take_messages(buf)]


def take_frames(buf):
    """The payloads of the complete length-prefixed frames at the start of buf, removed."""
    payloads = []
    while len(buf) >= 4:
        end = 4 + int.from_bytes(buf[:4], "big")
        if len(buf) < end:
            break
        payloads.append(bytes(buf[4:end]))
        del buf[:end]
    return payloads


def frame(payload):
    return len(payload).to_bytes(4, "big") + payload


def backend(sock, reply_to):
    """A hop's far end: answers the frames each read brings, reply_to(payload) each,
    in one send. Niced and SCHED_BATCH, waiting in poll(), as gsmcpd's workers do."""
    os.nice(BACKEND_NICE)
    os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
    readable = select.poll()
    readable.register(sock.fileno(), select.POLLIN)
    buf = bytearray()
    while True:
        readable.poll()
        data = sock.recv(RECV_SIZE)
        if not data:
            os._exit(0)
        buf += data
        replies = [reply_to(payload) for payload in take_frames(buf)]
        if replies:
            sock.sendall(b"".join(replies))


def _canned_reply(payload, answer=frame(BODY)):
    return answer


def _accept_with_backend(sel, listener, reply_to):
    """The next client and our end of its backend's socketpair (non-blocking), the
    backend forked to answer with reply_to on its end; None when the client is gone."""
    conn = _accept(listener)
    if conn is None:
        return None
    ours, theirs = socket.socketpair()
    if os.fork() == 0:
        sel.close()
        listener.close()
        conn.close()
        ours.close()
        backend(theirs, reply_to)
    theirs.close()
    ours.setblocking(False)
    return conn, ours


def _receive(sel, sock, both):
    """What sock has now; None when nothing yet, or when its peer has gone (both
    sockets of the connection, client and backend, are then closed)."""
    try:
        data = sock.recv(RECV_SIZE)
    except (BlockingIOError, InterruptedError):
        return None
    except OSError:
        data = b""
    if not data:
        for end in both:
            sel.unregister(end)
            end.close()
        return None
    return data


def serve_hop(port, host="127.0.0.1"):
    sel, listener, running = _listen(port, host)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # backends are reaped by the kernel
    while running[0]:
        for key, _ in sel.select(STOP_POLL):
            if key.data is None:
                accepted = _accept_with_backend(sel, listener, _canned_reply)
                if accepted is None:
                    continue
                conn, ours = accepted
                pair = (conn, ours, bytearray(), bytearray())
                sel.register(conn, selectors.EVENT_READ, (True, pair))
                sel.register(ours, selectors.EVENT_READ, (False, pair))
                continue
            from_client, (conn, ours, requests, replies) = key.data
            data = _receive(sel, key.fileobj, (conn, ours))
            if data is None:
                continue
            if from_client:
                requests += data
                bodies = take_requests(requests)
                if bodies:
                    ours.sendall(b"".join(frame(body) for body in bodies))
            else:
                replies += data
                payloads = take_frames(replies)
                if payloads:
                    conn.sendall(b"".join(HEAD % len(p) + p for p in payloads))
    sel.close()
    listener.close()


# -- the floor with one hop and the least protocol work ------------------------------
# Again a loop of its own (see the module docstring for what it does): the other two
# floors are left exactly as earlier runs measured them.

ALLOWED_HOSTS = frozenset({"127.0.0.1", "localhost", "[::1]"})
SUPPORTED_VERSIONS = frozenset({"2025-11-25", "2025-06-18"})  # gsmcpd's
MIN_SESSION = "0123456789abcdef0123456789abcdef"
MIN_HEAD = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: "
            + MIN_SESSION.encode() + b"\r\nContent-Length: %d\r\n\r\n")
INITIALIZE_REPLY = MIN_HEAD % len(BODY) + BODY  # the harness reads only the status and the session id
ACCEPTED = b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n"
REFUSED = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"


def parse_head(head):
    """(method, target, {lower-case name: value}) of a request head; None when the
    request line is not three parts."""
    lines = head.decode("latin-1").split("\r\n")
    request_line = lines[0].split(" ")
    if len(request_line) != 3:
        return None
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return request_line[0], request_line[1], headers


def _hostname(authority):
    """host of host[:port]; a bracketed IPv6 host keeps its brackets."""
    host, colon, port = authority.rpartition(":")
    return host if colon and port.isdigit() else authority


def checked_call(body):
    """The JSON-RPC message's (id, method), id None for a notification; None when the
    body is not a JSON-RPC 2.0 request or notification."""
    try:
        message = json.loads(body)
    except ValueError:
        return None
    if type(message) is not dict or message.get("jsonrpc") != "2.0":
        return None
    method, msg_id = message.get("method"), message.get("id")
    # type() rather than isinstance(): a bool is an int to isinstance, not an id
    if type(method) is not str or type(msg_id) not in (int, str, type(None)):
        return None
    return msg_id, method


class MinSession:
    """One connection's session: its client, its backend, and its one call in flight
    (the harness waits for each reply before the next call)."""

    __slots__ = ("conn", "backend", "seq", "inflight", "requests", "replies")

    def __init__(self, conn, backend):
        self.conn, self.backend = conn, backend
        self.seq = 0
        self.inflight = None  # the seq of the call awaiting its reply frame
        self.requests = bytearray()
        self.replies = bytearray()


def min_request(session, sessions, head, body):
    """Gate and parse one request: (call frame, None) to send to the backend, or
    (None, reply) to write to the client."""
    parsed = parse_head(head)
    if parsed is None:
        return None, REFUSED
    method, target, headers = parsed
    if method != "POST" or target != "/mcp":
        return None, REFUSED
    if _hostname(headers.get("host", "")) not in ALLOWED_HOSTS:
        return None, REFUSED
    origin = headers.get("origin")
    if origin is not None and _hostname(origin.partition("://")[2]) not in ALLOWED_HOSTS:
        return None, REFUSED
    call = checked_call(body)
    if call is None:
        return None, REFUSED
    msg_id, rpc_method = call
    if rpc_method == "initialize":  # the harness's session set-up, not measured
        return None, INITIALIZE_REPLY
    if sessions.get(headers.get("mcp-session-id")) is not session:
        return None, REFUSED
    version = headers.get("mcp-protocol-version")
    if version is not None and version not in SUPPORTED_VERSIONS:
        return None, REFUSED
    if msg_id is None:
        return None, ACCEPTED
    session.seq += 1
    session.inflight = session.seq
    return frame(session.seq.to_bytes(4, "big") + body), None


def min_reply(session, payload):
    """The HTTP reply for a reply frame of the call in flight (its first 4 bytes are
    the call's seq), or None for a frame of no call in flight."""
    if int.from_bytes(payload[:4], "big") != session.inflight:
        return None
    session.inflight = None
    body = payload[4:]
    return MIN_HEAD % len(body) + body


def min_reply_frame(payload):
    """serve_min's backend's answer to a call frame: the canned body, framed behind
    the call's seq."""
    return frame(payload[:4] + BODY)


def serve_min(port, host="127.0.0.1"):
    sel, listener, running = _listen(port, host)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # backends are reaped by the kernel
    # Every connection's session has the same id, since each connection has its own
    # backend (the load's shape). Storing the connection's session under it and looking
    # it up again per request is what a router's session map costs per call.
    sessions = {}
    while running[0]:
        for key, _ in sel.select(STOP_POLL):
            if key.data is None:
                accepted = _accept_with_backend(sel, listener, min_reply_frame)
                if accepted is None:
                    continue
                session = MinSession(*accepted)
                sel.register(session.conn, selectors.EVENT_READ, (True, session))
                sel.register(session.backend, selectors.EVENT_READ, (False, session))
                continue
            from_client, session = key.data
            data = _receive(sel, key.fileobj, (session.conn, session.backend))
            if data is None:
                continue
            if from_client:
                session.requests += data
                for head, body in take_messages(session.requests):
                    sessions[MIN_SESSION] = session
                    call, reply = min_request(session, sessions, head, body)
                    if call is not None:
                        session.backend.sendall(call)
                    else:
                        session.conn.sendall(reply)
            else:
                session.replies += data
                replies = [min_reply(session, p) for p in take_frames(session.replies)]
                out = b"".join(r for r in replies if r is not None)
                if out:
                    session.conn.sendall(out)
    sel.close()
    listener.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--hop", action="store_true", help="relay each request through a per-connection process")
    parser.add_argument("--min", action="store_true", help="the hop and the least protocol work")
    args = parser.parse_args()
    (serve_min if args.min else serve_hop if args.hop else serve)(args.port)


if __name__ == "__main__":
    main()
