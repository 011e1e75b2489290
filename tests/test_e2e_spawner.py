"""Workers as the running daemon forks them: through its spawner, each on its own."""

import os
import signal

from helpers import Client, Daemon, _children, pid_alive, tool_text, wait_until, worker_pids


def session(daemon):
    client = Client(daemon.port)
    client.initialize()
    return client


def spawner_of(daemon):
    [forkserver] = [c for c in _children(daemon.proc.pid)
                    if b"forkserver" in open("/proc/%d/cmdline" % c, "rb").read()]
    [spawner] = _children(forkserver)
    return spawner


def test_each_worker_logs_under_its_own_pid_and_a_killed_spawner_is_replaced(tmp_path):
    with Daemon(tmp_path, env={"GS_MCP_TOOLSETS": "execution", "GS_MCP_SPARE_WORKERS": "1"}) as daemon:
        first, second = session(daemon), session(daemon)
        pids = [int(tool_text(c.tool("execute_code", code="import os; os.getpid()"))) for c in (first, second)]
        assert pids[0] != pids[1] and set(pids) <= set(worker_pids(daemon.proc.pid))
        # Logging was set up once, in the spawner; a record still names its own worker.
        for client, pid in zip((first, second), pids):
            client.tool("execute_code", code="import logging; logging.getLogger('t').warning('hello %d', 7)")
            assert wait_until(lambda: "gsmcpd-worker[%d] WARNING hello 7" % pid in daemon.log_text())

        spawner = spawner_of(daemon)
        os.kill(spawner, signal.SIGKILL)
        assert wait_until(lambda: not pid_alive(spawner))
        # Opening sessions goes on: the next start finds the spawner gone and starts another.
        for _ in range(3):
            client = session(daemon)
            assert tool_text(client.tool("execute_code", code="6 * 7")) == "42"
        assert spawner_of(daemon) != spawner
        # The sessions opened before still answer: their workers never needed the spawner.
        assert tool_text(first.tool("execute_code", code="1 + 1")) == "2"
