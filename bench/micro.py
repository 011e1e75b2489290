"""Per-request cost of the pure steps of one tools/call echo, timed in-process (no sockets).

`python -m bench.micro` times each step the router takes (parse the HTTP request, the
gates' header lookups, JSON-RPC parse, the call frame spliced around the body, the
reply frame split back out unparsed, the HTTP response, the lifetime/break
bookkeeping) and each step the worker takes (decode the call frame, McpServer.handle,
encode the reply frame), so the profile's "where the time goes" can be given in
microseconds. What is left of the measured CPU per call after these is syscalls,
wake-ups, scheduling and loop glue. These are hot-loop figures: in place, after a
context switch, the same code runs with cold caches and costs more.
"""

import argparse
import json
import sys
import timeit

from gsmcpd.router.app import accepts
from gsmcpd.router.breaks import Breaks
from gsmcpd.router.lifetime import Lifetime, LifetimeSettings
from gsmcpd.wire import frames, http, jsonrpc

SID = "0123456789abcdef0123456789abcdef"
BODY = b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}'
REQUEST = (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:8000\r\nAccept: application/json, text/event-stream\r\n"
           b"Content-Type: application/json\r\nMcp-Session-Id: " + SID.encode() +
           b"\r\nMcp-Protocol-Version: 2025-11-25\r\nContent-Length: %d\r\n\r\n" % len(BODY)) + BODY
RESULT = {"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": "hello"}]}}
CALL_FRAME = frames.message_frame("call", 7, BODY)
REPLY_FRAME = frames.message_frame("reply", 7, jsonrpc.dumps(RESULT))


def router_steps():
    parsed_request = _parse_http()
    lifetime = Lifetime(LifetimeSettings(), 0.0)
    lifetime.session_opened(SID, 0.0)
    breaks = Breaks()

    def gates():
        r = parsed_request
        r.header("origin")
        r.header("host")
        accepts(r, "text/event-stream")
        r.header("mcp-session-id")
        r.header("mcp-protocol-version")

    def bookkeeping():  # what Supervisor does per call with no request timeout set
        lifetime.request_arrived(SID, 1.0)
        lifetime.call_started(SID, 1.0)
        lifetime.call_finished(SID, 1.0)   # answers the session's new deadline too
        breaks.call_finished(SID)

    relay = frames.FrameDecoder(raw_messages=True)
    keep_alive = http.RequestParser()

    def parse_again():   # a keep-alive connection's parser, its head seen before
        keep_alive.feed(REQUEST)
        return keep_alive.next_request()

    return [
        ("HTTP parse on a keep-alive connection (the head seen before)", parse_again),
        ("gates (Host/Origin, Accept, session and version headers)", gates),
        ("JSON-RPC parse (jsonrpc.parse)", lambda: jsonrpc.parse(BODY)),
        ("call frame around the body (frames.message_frame)", lambda: frames.message_frame("call", 7, BODY)),
        ("reply frame split, unparsed (FrameDecoder raw_messages)", lambda: relay.feed(REPLY_FRAME)),
        ("HTTP response (http.response)", lambda: http.response(200, [("Content-Type", "application/json")],
                                                                  b"x" * 96)),
        ("lifetime + breaks bookkeeping", bookkeeping),
    ]


def worker_steps():
    import gsmcpd.worker.preload  # noqa: F401  (what a worker has loaded)
    from gsmcpd.worker.server import build_server

    server = build_server({"toolsets": ["bench"], "session_id": SID, "user": "bench"})
    decoder = frames.FrameDecoder()
    message = json.loads(BODY)
    return [
        ("call frame decode (FrameDecoder.feed)", lambda: decoder.feed(CALL_FRAME)),
        ("McpServer.handle (tools/call echo)", lambda: server.handle(message, None)),
        ("reply frame encode (jsonrpc.dumps + frames.message_frame)",
         lambda: frames.message_frame("reply", 7, jsonrpc.dumps(RESULT))),
    ]


def _parse_http():
    parser = http.RequestParser()
    parser.feed(REQUEST)
    return parser.next_request()


NOT_SUMMED = [("HTTP parse of a head not seen before: a new connection, or a new Content-Length "
               "(not in the sum above)", _parse_http)]


def measure(steps, number=20000):
    out = []
    for label, fn in steps:
        fn()
        best = min(timeit.repeat(fn, number=number, repeat=3)) / number
        out.append((label, round(best * 1e6, 2)))
    return out


def main(argv=None):
    # No options, but --help says what this is rather than run it (and a typo is refused).
    summary = __doc__.split("\n", 1)[0]
    argparse.ArgumentParser(prog="python -m bench.micro", description=summary).parse_args(argv)
    for side, steps in (("router", router_steps()), ("worker", worker_steps())):
        rows = measure(steps)
        for label, us in rows:
            print("%8.2f us  %s" % (us, label))
        print("%8.2f us  the %s's pure steps in all\n" % (sum(us for _, us in rows), side))
    for label, us in measure(NOT_SUMMED):
        print("%8.2f us  %s" % (us, label))
    return 0


if __name__ == "__main__":
    sys.exit(main())
