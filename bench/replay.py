"""The router's whole per-call path for one tools/call echo, replayed in one process.

`python -m bench.replay` builds a real Router with one session whose Worker and one
client Connection sit on socketpairs; this script plays the client and the worker, and
steps the router's loop by hand. Each call is one request in, one call frame out, one
reply frame in, one response out: the same code, syscalls included, as under load, but
on one CPU with nothing else running, so a figure moves by well under a microsecond from
run to run, where the in-place CPU per call (bench.run) moves by ten. `bench.micro`
times the pure steps alone; this adds the loop, the connection, the relay and the
bookkeeping around them. The sends and receives, both the replay's and the router's,
are timed apart with no router between and subtracted: what is left is the router's
code, its selector waits included. `--profile` prints a cProfile of the replay instead (function calls per
call, and where the time goes).
"""

import argparse
import cProfile
import os
import pstats
import socket
import sys
import time

from gsmcpd.config import Config
from gsmcpd.router.connection import Connection
from gsmcpd.router.main import Router
from gsmcpd.router.sessions import Session
from gsmcpd.router.workers import Worker
from gsmcpd.wire import frames, jsonrpc

from bench.micro import BODY, REQUEST, RESULT, SID

REPLY = jsonrpc.dumps(RESULT)
_SEQ_AT = len(b'\0\0\0\0{"op":"call","seq":')


class Replay:
    def __init__(self):
        self.router = Router(Config())
        self.loop = self.router.loop
        self.worker_end, theirs = socket.socketpair()
        # A pidfd of this process: never readable, as a live worker's is not.
        self.worker = worker = Worker(self.loop, (os.getpid(), os.pidfd_open(os.getpid()), theirs))
        sessions = self.router.sessions
        session = Session(SID, worker, self.router.user, False, self.loop.now)
        worker.listener = sessions
        sessions.by_id[SID] = session
        sessions._by_worker[worker] = session
        self.router.session_opened(session)
        self.client_end, theirs = socket.socketpair()
        self.connection = Connection(self.router, theirs, ("replay", 0))
        self.router.connections.add(self.connection)

    def call(self):
        """One tools/call through the router; the response bytes."""
        self.client_end.send(REQUEST)
        self.loop._run_once()
        frame = self.worker_end.recv(65536)
        seq = int(frame[_SEQ_AT:frame.index(b",", _SEQ_AT)])
        self.worker_end.send(frames.message_frame("reply", seq, REPLY))
        self.loop._run_once()
        return self.client_end.recv(65536)

    def close(self):
        self.connection.close()
        for sock in (self.worker.sock, self.worker_end, self.client_end):
            sock.close()
        os.close(self.worker.pidfd)
        self.loop.close()


def measure(calls=20000, repeats=5):
    """(µs per call through the router, µs of it the sends and receives, both sides'):
    best of `repeats`."""
    replay = Replay()
    response = replay.call()
    if not (response.startswith(b"HTTP/1.1 200 OK") and response.endswith(REPLY)):
        raise RuntimeError("the router answered %r" % response[:200])
    pairs = (socket.socketpair(), socket.socketpair())
    best = harness = float("inf")
    try:
        for _ in range(repeats):
            start = time.perf_counter()
            for _ in range(calls):
                replay.call()
            best = min(best, (time.perf_counter() - start) / calls)
            start = time.perf_counter()
            for _ in range(calls):
                _harness(pairs, response)
            harness = min(harness, (time.perf_counter() - start) / calls)
    finally:
        replay.close()
        for pair in pairs:
            for sock in pair:
                sock.close()
    return round(best * 1e6, 2), round(harness * 1e6, 2)


def _harness(pairs, response):
    """A call's sends and receives, the replay's and the router's (request in, frame
    out, frame in, response out), with no router code between."""
    (client, router_side), (worker, router_end) = pairs
    client.send(REQUEST)
    router_side.recv(65536)
    router_end.send(REQUEST)
    worker.recv(65536)
    worker.send(REPLY)
    router_end.recv(65536)
    router_side.send(response)
    client.recv(65536)


def profile(calls=20000, top=40):
    replay = Replay()
    replay.call()
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        replay.call()
    profiler.disable()
    replay.close()
    stats = pstats.Stats(profiler)
    print("function calls per call (Python and C, the replay's own included): %.1f"
          % (sum(entry[1] for entry in stats.stats.values()) / calls))
    stats.sort_stats("tottime").print_stats(top)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bench.replay", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--profile", action="store_true", help="a cProfile of the replay instead of timing it")
    args = parser.parse_args(argv)
    if args.profile:
        profile(args.calls)
        return 0
    total, harness = measure(args.calls)
    print("%8.2f us  per call through the router" % total)
    print("%8.2f us  of it the sends and receives, the replay's and the router's" % harness)
    print("%8.2f us  the router's code per call, its selector waits included" % (total - harness))
    return 0


if __name__ == "__main__":
    sys.exit(main())
