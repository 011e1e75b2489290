"""End-to-end: opening and ending sessions many times leaks no worker and no descriptor."""

import os

from helpers import Client, Daemon, wait_until, worker_pids

CYCLES = 500


def open_fds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def test_500_initialize_delete_cycles_leave_nothing_behind(tmp_path):
    with Daemon(tmp_path, env={"GS_MCP_SPARE_WORKERS": "2", "GS_MCP_TOOLSETS": "bench"}) as d:
        warm = Client(d.port)
        warm.initialize()
        assert warm.delete().status == 200
        warm.close()
        spares = 2
        assert wait_until(lambda: len(worker_pids(d.proc.pid)) == spares)
        baseline = open_fds(d.proc.pid)
        c = Client(d.port)
        for _ in range(CYCLES):
            c.session = None
            c.initialize()
            assert c.tool("echo", text="x")["content"][0]["text"] == "x"
            assert c.delete().status == 200
        c.close()
        assert wait_until(lambda: len(worker_pids(d.proc.pid)) == spares, timeout=15), worker_pids(d.proc.pid)
        assert wait_until(lambda: open_fds(d.proc.pid) <= baseline, timeout=15), (open_fds(d.proc.pid), baseline)
