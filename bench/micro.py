"""Per-request cost of the router's pure steps, timed in-process (no sockets).

`python -m bench.micro` times each step the router takes for one tools/call echo
(parse the HTTP request, the gates' header lookups, JSON-RPC parse, frame encode,
frame decode of the reply, serialise the response, write the HTTP response, the
lifetime/break bookkeeping, the selector re-registrations, the idle timer) so the
profile's "where the time goes" can be given in microseconds. What is left of the
measured router CPU per call after these is syscalls, scheduling and loop glue.
"""

import json
import socket
import sys
import timeit

from gsmcpd.router.app import accepts
from gsmcpd.router.breaks import Breaks
from gsmcpd.router.lifetime import Lifetime, LifetimeSettings
from gsmcpd.router.loop import Loop
from gsmcpd.wire import frames, http, jsonrpc

SID = "0123456789abcdef0123456789abcdef"
BODY = b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}'
REQUEST = (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:8000\r\nAccept: application/json, text/event-stream\r\n"
           b"Content-Type: application/json\r\nMcp-Session-Id: " + SID.encode() +
           b"\r\nMcp-Protocol-Version: 2025-11-25\r\nContent-Length: %d\r\n\r\n" % len(BODY)) + BODY
RESULT = {"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": "hello"}], "isError": False}}
REPLY_FRAME = frames.encode({"op": "reply", "seq": 7, "message": RESULT})


def steps():
    message = json.loads(BODY)
    parsed_request = _parse_http()
    lifetime = Lifetime(LifetimeSettings(), 0.0)
    lifetime.session_opened(SID, 0.0)
    breaks = Breaks()
    loop = Loop()
    a, b = socket.socketpair()
    a.setblocking(False)
    loop.set_interest(a, lambda: None, None)

    def gates():
        r = parsed_request
        r.header("origin")
        r.header("host")
        accepts(r, "text/event-stream")
        r.header("accept")
        r.header("mcp-session-id")
        r.header("mcp-protocol-version")

    def bookkeeping():
        lifetime.request_arrived(SID, 1.0)
        lifetime.call_started(SID, 1.0)
        breaks.call_started(SID, 7, "tools/call", 1.0)
        lifetime.call_finished(SID, 1.0)
        breaks.call_finished(SID)
        lifetime.info(SID, 1.0)

    def interest():
        loop.set_interest(a, None, None)          # busy: stop reading
        loop.set_interest(a, lambda: None, None)  # answered: read again

    def idle_timer():
        loop.call_later(300, lambda: None).cancel()

    decoder = frames.FrameDecoder()
    return [
        ("HTTP parse (RequestParser.feed + next_request)", _parse_http),
        ("gates (Host/Origin, Accept, session and version headers)", gates),
        ("JSON-RPC parse (jsonrpc.parse)", lambda: jsonrpc.parse(BODY)),
        ("call frame encode (frames.encode)", lambda: frames.encode({"op": "call", "seq": 7, "message": message})),
        ("reply frame decode (FrameDecoder.feed)", lambda: decoder.feed(REPLY_FRAME)),
        ("response serialise (jsonrpc.dumps)", lambda: jsonrpc.dumps(RESULT)),
        ("HTTP response (http.response)", lambda: http.response(200, [("Content-Type", "application/json")],
                                                                  b"x" * 96)),
        ("lifetime + breaks bookkeeping", bookkeeping),
        ("selector re-registration x2 (epoll_ctl)", interest),
        ("idle timer re-arm (heap push)", idle_timer),
    ]


def _parse_http():
    parser = http.RequestParser()
    parser.feed(REQUEST)
    return parser.next_request()


def measure(number=20000):
    out = []
    for label, fn in steps():
        fn()
        best = min(timeit.repeat(fn, number=number, repeat=3)) / number
        out.append((label, round(best * 1e6, 2)))
    return out


def main():
    rows = measure()
    total = sum(us for _, us in rows)
    for label, us in rows:
        print("%8.2f us  %s" % (us, label))
    print("%8.2f us  total of the pure steps" % total)
    return 0


if __name__ == "__main__":
    sys.exit(main())
