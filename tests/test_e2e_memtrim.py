"""End-to-end: the router gives its freed heap back (malloc_trim) on the maintenance pass
after sessions end, and still serves after it."""

import pytest

from gsmcpd.router import memtrim
from helpers import Client, Daemon, wait_until

TRIM_LINE = "freed heap returned to the system (malloc_trim)"

pytestmark = pytest.mark.skipif(memtrim._TRIM is None, reason="no malloc_trim in this libc")


def session_used_and_ended(port):
    c = Client(port)
    try:
        c.initialize()
        assert c.tool("execute_code", code="6 * 7")
        assert c.request("DELETE").status == 200
    finally:
        c.close()


def test_sessions_ended_are_followed_by_one_trim_and_the_router_still_serves(tmp_path):
    env = {"GS_MCP_LOG_LEVEL": "debug", "GS_MCP_MAINTENANCE_INTERVAL": "0.5", "GS_MCP_SPARE_WORKERS": "1"}
    with Daemon(tmp_path, env=env) as d:
        for _ in range(3):
            session_used_and_ended(d.port)
        assert wait_until(lambda: TRIM_LINE + ", trim 1" in d.log_text(), timeout=30)
        session_used_and_ended(d.port)
        assert wait_until(lambda: TRIM_LINE + ", trim 2" in d.log_text(), timeout=30)
        assert d.log_text().count(TRIM_LINE) == 2   # one a pass with ends behind it, not one an end

