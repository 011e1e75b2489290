"""The floor: a bare selectors HTTP/1.1 server answering one fixed JSON-RPC result.

What one Python loop can do on this machine with no protocol work at all: it reads
a request head, skips Content-Length bytes of body and writes the same canned reply
(with an Mcp-Session-Id, so the harness's session setup works against it too).
"""

import argparse
import selectors
import signal
import socket

BODY = b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hello"}],"isError":false}}'
REPLY = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: floor\r\n"
         b"Content-Length: %d\r\n\r\n" % len(BODY)) + BODY


def _content_length(head):
    lower = head.lower()
    at = lower.find(b"content-length:")
    if at < 0:
        return 0
    end = lower.find(b"\r\n", at)
    return int(lower[at + 15:end if end >= 0 else None])


def serve(port, host="127.0.0.1"):
    sel = selectors.DefaultSelector()
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, port))
    listener.listen(1024)
    listener.setblocking(False)
    sel.register(listener, selectors.EVENT_READ, None)
    buffers = {}
    running = [True]
    signal.signal(signal.SIGTERM, lambda *_: running.__setitem__(0, False))
    while running[0]:
        for key, _ in sel.select(0.5):
            if key.data is None:
                try:
                    conn, _ = listener.accept()
                except BlockingIOError:
                    continue
                conn.setblocking(False)
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
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


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    serve(parser.parse_args().port)


if __name__ == "__main__":
    main()
