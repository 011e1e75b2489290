"""End-to-end: the router's short poll for a due reply or request (GS_MCP_POLL_US)."""

import contextlib
import time

from bench.procs import cpu_seconds
from helpers import Client, Daemon, tool_text, wait_for_port


def test_calls_are_answered_with_and_without_the_poll_and_long_waits_are_slept_through(tmp_path):
    # The three daemons start side by side (their start-ups are independent); each is
    # then tested on its own, one after the other, so no two routers' CPU overlaps.
    daemons = {}
    with contextlib.ExitStack() as stack:   # each stopped, whichever stop fails
        for poll in ("200", "0", "10000"):
            env = {"GS_MCP_TOOLSETS": "execution,bench", "GS_MCP_SPARE_WORKERS": "1",
                   "GS_MCP_POLL_US": poll}
            home = tmp_path / ("poll-" + poll)
            home.mkdir()
            daemons[poll] = Daemon(home, env=env).start(wait=False)
            stack.callback(daemons[poll].stop)
        for daemon in daemons.values():
            wait_for_port(daemon.port, proc=daemon.proc)
        for poll, daemon in daemons.items():
            client = Client(daemon.port)
            client.initialize()
            for i in range(50):
                assert client.tool("echo", text="n%d" % i)["content"][0]["text"] == "n%d" % i
            if poll == "0":
                continue   # nothing polls: the waits below would test nothing
            # A call that takes half a second, and a client that pauses for as long, are slept
            # through, not busy-waited for (which would use the whole half second, each); the
            # policy itself (one poll, its bounds, the back-off, when it is asked for) is
            # tested in test_router_loop.py and test_router_sessions_poll.py.
            before = cpu_seconds(daemon.proc.pid)
            assert tool_text(client.tool("execute_code", code="import time; time.sleep(0.5); 7")) == "7"
            time.sleep(0.5)
            assert client.tool("echo", text="after")["content"][0]["text"] == "after"
            assert cpu_seconds(daemon.proc.pid) - before < 0.3
