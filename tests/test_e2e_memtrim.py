"""End-to-end: the router gives its freed heap back (malloc_trim) on the maintenance pass
after sessions end, and still serves after it."""

import os
import signal

import pytest

from gsmcpd.router import memtrim
from helpers import PROTOCOL, Client, Daemon, wait_until

TRIM_LINE = "heap trimmed (malloc_trim)"
# What each trim's line ends with: whether it returned memory (malloc_trim's answer).
OUTCOMES = (": freed memory returned to the system", ": no free memory to return")

pytestmark = pytest.mark.skipif(memtrim._TRIM is None, reason="no malloc_trim in this libc")


def session_used(port):
    """A client whose session ran a call and is open still."""
    c = Client(port)
    c.initialize()
    assert c.tool("execute_code", code="6 * 7")
    return c


def session_used_and_ended(port):
    c = session_used(port)
    try:
        assert c.request("DELETE").status == 200
    finally:
        c.close()


def test_sessions_ended_are_followed_by_one_trim_and_the_router_still_serves(tmp_path):
    env = {"GS_MCP_LOG_LEVEL": "debug", "GS_MCP_MAINTENANCE_INTERVAL": "0.5", "GS_MCP_SPARE_WORKERS": "1"}
    with Daemon(tmp_path, env=env) as d:
        # Three ends in one pass of the router's loop: their DELETEs are all there as it
        # wakes. (Ended one by one, on a loaded host a pass, and so a trim, could fall
        # between any two, and the counts below were the machine's speed.)
        clients = [session_used(d.port) for _ in range(3)]
        os.kill(d.proc.pid, signal.SIGSTOP)
        try:
            for c in clients:
                c.conn.request("DELETE", "/mcp", headers={"MCP-Session-Id": c.session,
                                                          "MCP-Protocol-Version": PROTOCOL})
        finally:
            os.kill(d.proc.pid, signal.SIGCONT)
        for c in clients:
            assert c.conn.getresponse().status == 200
            c.close()
        assert wait_until(lambda: TRIM_LINE + ", trim 1" in d.log_text(), timeout=30)
        assert d.log_text().count(TRIM_LINE) == 1   # one a pass with ends behind it, not one an end
        session_used_and_ended(d.port)
        assert wait_until(lambda: TRIM_LINE + ", trim 2" in d.log_text(), timeout=30)
        assert d.log_text().count(TRIM_LINE) == 2
        said = [line for line in d.log_text().splitlines() if TRIM_LINE in line]
        assert all(line.endswith(OUTCOMES) for line in said), said
