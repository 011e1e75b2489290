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
"""

import argparse
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
        for key, _ in sel.select(0.5):
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

def take_requests(buf):
    """The bodies of the complete requests at the start of buf, removed from it."""
    bodies = []
    while True:
        end = buf.find(b"\r\n\r\n")
        if end < 0:
            return bodies
        total = end + 4 + _content_length(bytes(buf[:end]))
        if len(buf) < total:
            return bodies
        bodies.append(bytes(buf[end + 4:total]))
        del buf[:total]


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


def backend(sock):
    """A hop's far end: answers each frame with the canned body, as a frame."""
    os.nice(BACKEND_NICE)
    os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
    answer = frame(BODY)
    readable = select.poll()
    readable.register(sock.fileno(), select.POLLIN)
    buf = bytearray()
    while True:
        readable.poll()
        data = sock.recv(RECV_SIZE)
        if not data:
            os._exit(0)
        buf += data
        count = len(take_frames(buf))
        if count:
            sock.sendall(answer * count)


def serve_hop(port, host="127.0.0.1"):
    sel, listener, running = _listen(port, host)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # backends are reaped by the kernel
    while running[0]:
        for key, _ in sel.select(0.5):
            if key.data is None:
                conn = _accept(listener)
                if conn is None:
                    continue
                ours, theirs = socket.socketpair()
                if os.fork() == 0:
                    sel.close()
                    listener.close()
                    conn.close()
                    ours.close()
                    backend(theirs)
                theirs.close()
                ours.setblocking(False)
                pair = (conn, ours, bytearray(), bytearray())
                sel.register(conn, selectors.EVENT_READ, (True, pair))
                sel.register(ours, selectors.EVENT_READ, (False, pair))
                continue
            from_client, (conn, ours, requests, replies) = key.data
            try:
                data = key.fileobj.recv(RECV_SIZE)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                data = b""
            if not data:
                for sock in (conn, ours):
                    sel.unregister(sock)
                    sock.close()
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


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--hop", action="store_true", help="relay each request through a per-connection process")
    args = parser.parse_args()
    (serve_hop if args.hop else serve)(args.port)


if __name__ == "__main__":
    main()
