"""Workers as the running daemon forks them: through its spawner, each on its own."""

import contextlib
import os
import resource
import select
import signal
import socket
import time

import pytest

from helpers import (LIST_FDS, Client, Daemon, _children, parent_of, pid_alive, tool_text, wait_for_port,
                     wait_until, worker_pids)
from helpers import open_session as session
from test_e2e_cycles import assert_only_the_drains_pipes, descriptors
from test_e2e_lifetime import worker_pid
from test_e2e_user_code import START_ESCAPERS, START_SLEEP, start


def forkserver_of(daemon):
    [forkserver] = [c for c in _children(daemon.proc.pid)
                    if b"forkserver" in open("/proc/%d/cmdline" % c, "rb").read()]
    return forkserver


def spawners(daemon):
    """The forkserver's children that lead no process group: its spawners (every worker
    leads its own group, and a killed spawner's workers are the forkserver's children too)."""
    def leads_a_group(pid):
        try:
            return os.getpgid(pid) == pid
        except ProcessLookupError:
            return True   # gone: no spawner either way
    return [c for c in _children(forkserver_of(daemon)) if not leads_a_group(c)]


def spawner_of(daemon):
    [spawner] = spawners(daemon)
    return spawner


def spawner_after(daemon, dead):
    """The spawner started to replace `dead`, once it runs and has forked a spare: a spare
    of the dead one's, still booting as it was killed, leads no group yet either, but has
    no children (the one to replace it is asked for spares at once)."""
    return wait_until(lambda: next((pid for pid in spawners(daemon) if pid != dead and _children(pid)), None))


def test_each_worker_logs_under_its_own_pid_and_a_killed_spawner_is_replaced(tmp_path):
    with Daemon(tmp_path, env={"GS_MCP_TOOLSETS": "execution", "GS_MCP_SPARE_WORKERS": "1"}) as daemon:
        first, second = session(daemon), session(daemon)
        pids = [int(tool_text(c.tool("execute_code", code="import os; os.getpid()"))) for c in (first, second)]
        assert pids[0] != pids[1] and set(pids) <= set(worker_pids(daemon.proc.pid))
        # A record reaches the router's log naming its own worker and session.
        for client, pid in zip((first, second), pids):
            client.tool("execute_code", code="import logging; logging.getLogger('t').warning('hello %d', 7)")
            said = "WARNING worker %d session %s user " % (pid, client.session[:8])
            assert wait_until(lambda: any(said in line and line.endswith(" logged: hello 7")
                                          for line in daemon.log_text().splitlines()))

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


def test_a_spawner_killed_by_user_code_leaves_no_spare_behind(tmp_path):
    # The spawner is every worker's parent: user code can kill it.
    with Daemon(tmp_path, env={"GS_MCP_TOOLSETS": "execution", "GS_MCP_SPARE_WORKERS": "2"}) as daemon:
        killer = session(daemon)
        worker = int(tool_text(killer.tool("execute_code", code="import os; os.getpid()")))
        spawner, forkserver = spawner_of(daemon), forkserver_of(daemon)
        assert wait_until(lambda: len(worker_pids(daemon.proc.pid)) == 3)     # its worker, 2 spares
        spares = set(worker_pids(daemon.proc.pid)) - {worker}
        said = killer.tool("execute_code", code="import os; os.kill(os.getppid(), 9); 'killed'")
        assert tool_text(said) == "'killed'"
        # The dead spawner's spares are ended and reaped, not left running under init...
        assert wait_until(lambda: not any(os.path.exists("/proc/%d" % pid) for pid in spares), 20), \
            [(pid, parent_of(pid)) for pid in spares]
        # ...and replaced by the new spawner's, which a new session gets.
        new_spawner = spawner_after(daemon, spawner)
        fresh = session(daemon)
        fresh_worker = int(tool_text(fresh.tool("execute_code", code="import os; os.getpid()")))
        assert parent_of(fresh_worker) == new_spawner
        # The killer's session goes on, its worker adopted by the forkserver (not init).
        assert tool_text(killer.tool("execute_code", code="6 * 7")) == "42"
        assert parent_of(worker) == forkserver
        assert "ending 2 spare worker(s) of the dead spawner" in daemon.log_text()
    assert wait_until(lambda: not any(os.path.exists("/proc/%d" % pid)
                                      for pid in spares | {worker, fresh_worker, new_spawner}))


def ended_pidfds(router):
    """How many of the router's descriptors are pidfds of processes that have ended."""
    return sum(target == "pidfd of -1" for target in descriptors(router).values())


def test_a_killed_spawners_sessions_once_ended_leave_the_router_no_descriptor(tmp_path):
    # The router kept a pidfd of each of them (to tell later spawners) until another spawner
    # died: after one kill, held for good, one per session open then (a soak: 18).
    with Daemon(tmp_path, env={"GS_MCP_TOOLSETS": "execution", "GS_MCP_SPARE_WORKERS": "1"}) as daemon:
        clients = [session(daemon) for _ in range(3)]
        workers = [worker_pid(client) for client in clients]
        spawner = spawner_of(daemon)
        os.kill(spawner, signal.SIGKILL)
        assert spawner_after(daemon, spawner)
        for client in clients:
            assert client.delete().status == 200
        assert wait_until(lambda: not any(pid_alive(pid) for pid in workers))
        assert wait_until(lambda: ended_pidfds(daemon.proc.pid) == 0), descriptors(daemon.proc.pid)


# What a worker's user code sees of its descriptors, and its resource tracker's pipe.
LIST_FDS_AND_TRACKER = LIST_FDS + """
import multiprocessing.resource_tracker as tracker
(fds, tracker._resource_tracker._fd)
"""


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    """One daemon for the tests that only open a session of their own and look at its worker
    (those that kill or stop a spawner, or count workers, start their own)."""
    with Daemon(tmp_path_factory.mktemp("spawner"),
                env={"GS_MCP_TOOLSETS": "execution", "GS_MCP_SPARE_WORKERS": "1"}) as d:
        yield d


def test_a_worker_holds_only_stdio_its_log_its_own_socket_and_the_routers_pidfd(daemon):
    # The spawner's tree holds multiprocessing's pipes (the forkserver's alive pipe,
    # the resource tracker's) and the control socket: none may reach user code.
    client = session(daemon)
    fds, tracker_fd = eval(tool_text(client.tool("execute_code", code=LIST_FDS_AND_TRACKER)))
    assert [fd for fd, _ in fds][:3] == [0, 1, 2]
    assert tracker_fd is None
    # Between calls (a call's fds 1 and 2 are its output's pipes): stdio /dev/null, the log
    # on a descriptor of its own (gsmcpd.worker.main._log_off_stdio), its frame socket, and
    # the watchdog's pidfd of the router (nothing opened now and then: a file the watchdog
    # read the router's state from was seen here).
    held = descriptors(worker_pid(client))
    assert [held[fd] for fd in (0, 1, 2)] == ["/dev/null"] * 3, held
    others = sorted(target for fd, target in held.items() if fd > 2 and not target.startswith("pipe:"))
    assert len(others) == 3 and others[:2] == [str(daemon.log_path), "pidfd of %d" % daemon.proc.pid], held
    assert others[2].startswith("socket:"), held
    assert_only_the_drains_pipes(held)


def test_workers_run_nicer_than_the_router_by_the_configured_step(tmp_path):
    parent_and_niceness = "import os; (os.getppid(), os.getpriority(os.PRIO_PROCESS, 0))"

    def worker_of(client):
        return eval(tool_text(client.tool("execute_code", code=parent_and_niceness)))

    # The three daemons start side by side, each in a directory of its own; each is then
    # checked on its own.
    daemons = []
    with contextlib.ExitStack() as stack:
        for env, step in (({}, 10), ({"GS_MCP_WORKER_NICE": "3"}, 3), ({"GS_MCP_WORKER_NICE": "0"}, 0)):
            env = dict(env, GS_MCP_TOOLSETS="execution", GS_MCP_SPARE_WORKERS="1")
            home = tmp_path / ("nice-%d" % step)
            home.mkdir()
            daemon = Daemon(home, env=env).start(wait=False)
            stack.callback(daemon.stop)
            daemons.append((daemon, step))
        for daemon, _ in daemons:
            wait_for_port(daemon.port, proc=daemon.proc)
        for daemon, step in daemons:
            router = os.getpriority(os.PRIO_PROCESS, daemon.proc.pid)
            first = spawner_of(daemon)
            assert worker_of(session(daemon)) == (first, min(19, router + step))
            # The spawner itself keeps the router's priority: it reports how workers end
            # and forks the spares sessions wait for (it has forked one by now).
            assert os.getpriority(os.PRIO_PROCESS, first) == router
            # A spawner started to replace a dead one applies the same step to its workers
            # (the spare the dead one left is ended, never handed out), and not to itself.
            os.kill(first, signal.SIGKILL)
            replacement = spawner_after(daemon, first)
            assert worker_of(session(daemon)) == (replacement, min(19, router + step))
            assert os.getpriority(os.PRIO_PROCESS, replacement) == router
            assert os.getpriority(os.PRIO_PROCESS, daemon.proc.pid) == router


INITIALIZE = {"jsonrpc": "2.0", "id": "init", "method": "initialize",
              "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                         "clientInfo": {"name": "t", "version": "0"}}}


@contextlib.contextmanager
def stopped(pid):
    """The process held with SIGSTOP for the block, whatever the block does."""
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


def read_by_the_server(sock, port):
    """True once the server side of this loopback TCP connection has nothing left
    unread (its rx_queue in /proc/net/tcp); the request is sent before this is asked."""
    ours = "%04X" % sock.getsockname()[1]
    theirs = "%04X" % port
    for line in open("/proc/net/tcp").read().splitlines()[1:]:
        fields = line.split()
        if fields[1].endswith(":" + theirs) and fields[2].endswith(":" + ours):
            return int(fields[4].split(":")[1], 16) == 0
    return False


def waiting_initialize(daemon, half_close=False, headers=None):
    """An initialize on its own connection, returned once the router has read it; its
    reply comes to the returned Exchange."""
    from test_e2e_lifetime import Exchange
    exchange = Exchange(daemon.port, "POST", body=INITIALIZE, accept="application/json", headers=headers)
    if half_close:
        exchange.sock.shutdown(socket.SHUT_WR)
    assert wait_until(lambda: read_by_the_server(exchange.sock, daemon.port))
    return exchange


def opened(daemon, exchange):
    """A client on the session the answered initialize `exchange` opened."""
    assert exchange.wait_head(timeout=20) == 200
    assert exchange.json()["result"]["protocolVersion"] == "2025-11-25"
    client = Client(daemon.port)
    client.session = exchange.headers["mcp-session-id"]
    return client


def test_a_session_waiting_for_its_worker_never_stalls_the_others(tmp_path):
    with Daemon(tmp_path, env={"GS_MCP_TOOLSETS": "execution", "GS_MCP_SPARE_WORKERS": "1"}) as daemon:
        first = session(daemon)
        assert wait_until(lambda: len(worker_pids(daemon.proc.pid)) == 2)   # its spare is replaced
        with stopped(spawner_of(daemon)):     # no worker will be forked meanwhile
            second = session(daemon)          # takes the one spare
            waiting = waiting_initialize(daemon)
            # The router serves everyone else while that open waits (it used to wait
            # for the fork in its loop, for up to 30 s).
            for client in (first, second, first):
                assert tool_text(client.tool("execute_code", code="6 * 7")) == "42"
                assert client.call("ping").status == 200
            assert not waiting.head_read.is_set()
        third = opened(daemon, waiting)
        assert third.call("ping").status == 200
        assert tool_text(third.tool("execute_code", code="7 * 6")) == "42"


def lowest_free_fd(pid):
    used = {int(name) for name in os.listdir("/proc/%d/fd" % pid)}
    return next(fd for fd in range(len(used) + 1) if fd not in used)


def test_a_session_whose_worker_cannot_be_forked_is_refused_with_the_reason(tmp_path):
    with Daemon(tmp_path, env={"GS_MCP_TOOLSETS": "execution", "GS_MCP_SPARE_WORKERS": "0"}) as daemon:
        spawner = spawner_of(daemon)
        limits = resource.prlimit(spawner, resource.RLIMIT_NOFILE)
        # No descriptor left to the spawner: the socketpair of the next worker fails.
        resource.prlimit(spawner, resource.RLIMIT_NOFILE, (lowest_free_fd(spawner), limits[1]))
        try:
            refused = Client(daemon.port).post(INITIALIZE)
        finally:
            resource.prlimit(spawner, resource.RLIMIT_NOFILE, limits)
        assert refused.status == 503 and refused.header("retry-after") == "5"
        assert refused.header("mcp-session-id") is None
        error = refused.json()["error"]
        assert error["message"].startswith("Service Unavailable: cannot start a worker process "
                                           "(no worker could be started: ")
        assert "Too many open files" in error["message"]
        assert "the spawner could not make a spare worker" in daemon.log_text()
        # The next open has its worker: a waiting client asks even while asking is
        # paused after the failed fork.
        assert Client(daemon.port).post(INITIALIZE).status == 200
        assert tool_text(session(daemon).tool("execute_code", code="6 * 7")) == "42"


def test_a_session_waiting_for_its_worker_at_shutdown_is_refused_and_the_daemon_exits(tmp_path):
    with Daemon(tmp_path, env={"GS_MCP_TOOLSETS": "execution", "GS_MCP_SPARE_WORKERS": "0"}) as daemon:
        with stopped(spawner_of(daemon)):
            waiting = waiting_initialize(daemon)
            daemon.proc.send_signal(signal.SIGTERM)
            assert waiting.wait_head() == 503
            assert waiting.json()["error"]["message"] == (
                "Service Unavailable: cannot start a worker process (the server is shutting down)")
        assert daemon.proc.wait(10) == 0


def test_a_new_spawner_that_is_slow_to_start_never_stalls_the_router(tmp_path):
    with Daemon(tmp_path, env={"GS_MCP_TOOLSETS": "execution", "GS_MCP_SPARE_WORKERS": "1"}) as daemon:
        first = Client(daemon.port, timeout=10)
        first.initialize()
        assert wait_until(lambda: len(worker_pids(daemon.proc.pid)) == 2)   # its spare is replaced
        spawner = spawner_of(daemon)
        with stopped(forkserver_of(daemon)):   # a new spawner cannot start meanwhile
            os.kill(spawner, signal.SIGKILL)
            assert wait_until(lambda: "the worker spawner is gone" in daemon.log_text())
            # The router starts the new one off its loop, and serves everyone meanwhile. A
            # new session waits for it: the spare forked before was ended with its spawner.
            waiting = waiting_initialize(daemon)
            assert tool_text(first.tool("execute_code", code="6 * 7")) == "42"
            assert first.call("ping").status == 200
            assert not waiting.head_read.is_set()   # no worker to be had yet
        second = opened(daemon, waiting)
        assert tool_text(second.tool("execute_code", code="7 * 6")) == "42"
        assert spawner_after(daemon, spawner)


def test_a_half_closed_client_still_gets_its_session_once_a_worker_comes(tmp_path):
    # As for every request: a client that shuts its sending side after its
    # initialize may still read the reply, even one that had to wait for a fork.
    with Daemon(tmp_path, env={"GS_MCP_TOOLSETS": "execution", "GS_MCP_SPARE_WORKERS": "0"}) as daemon:
        with stopped(spawner_of(daemon)):
            waiting = waiting_initialize(daemon, half_close=True)
            assert not waiting.head_read.is_set()
        client = opened(daemon, waiting)
        assert tool_text(client.tool("execute_code", code="6 * 7")) == "42"


def test_workers_and_what_their_code_starts_are_the_oom_killers_choice_before_the_router(daemon):
    # Code that allocates without bound must cost its own session: its worker (or what the
    # code started) is what the kernel's OOM killer ends, never the router.
    code = ("import subprocess\n"
            "(int(open('/proc/self/oom_score_adj').read()),\n"
            " int(subprocess.run(['cat', '/proc/self/oom_score_adj'], capture_output=True).stdout))")
    with open("/proc/%d/oom_score_adj" % daemon.proc.pid) as adj:
        router = int(adj.read())
    raised = min(1000, router + 500)
    assert eval(tool_text(session(daemon).tool("execute_code", code=code))) == (raised, raised)


def started_by_its_code(client):
    """Pidfds of the long-lived processes a session's code starts: in its worker's process
    group and out of it."""
    return [os.pidfd_open(pid) for pid in start(client, START_SLEEP) + start(client, START_ESCAPERS)]


def end_on_its_own(client, worker, how):
    if how == "os._exit":
        reply = client.call("tools/call", {"name": "execute_code", "arguments": {"code": "import os\nos._exit(3)"}})
        assert reply.json()["error"]["code"] == -32003, reply
    else:
        os.kill(worker, signal.SIGKILL)
    assert wait_until(lambda: not pid_alive(worker))


def all_end_within(pidfds, seconds=20):
    """Whether every process behind `pidfds` ends within `seconds`. Each is closed after,
    what still runs killed first: a failing test leaves nothing behind."""
    ending = select.poll()
    for pidfd in pidfds:
        ending.register(pidfd, select.POLLIN)
    left, deadline = set(pidfds), time.monotonic() + seconds
    while left and time.monotonic() < deadline:
        left -= {fd for fd, _ in ending.poll((deadline - time.monotonic()) * 1000)}
    for pidfd in pidfds:
        if pidfd in left:
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        os.close(pidfd)
    return not left


@pytest.mark.parametrize("how", ["os._exit", "kill -9 from outside"])
def test_what_a_dead_spawners_worker_started_ends_when_the_worker_dies_on_its_own(tmp_path, how):
    # A killed spawner's workers are the forkserver's, which reaps but never kills: what
    # such a worker's code had started outlived the worker, and the daemon. The new
    # spawner kills it.
    with Daemon(tmp_path, env={"GS_MCP_TOOLSETS": "execution", "GS_MCP_SPARE_WORKERS": "1"}) as daemon:
        client = session(daemon)
        worker = worker_pid(client)
        started = started_by_its_code(client)
        spawner = spawner_of(daemon)
        os.kill(spawner, signal.SIGKILL)
        assert spawner_after(daemon, spawner)
        assert parent_of(worker) == forkserver_of(daemon)
        end_on_its_own(client, worker, how)
        assert all_end_within(started)
        assert tool_text(session(daemon).tool("execute_code", code="6 * 7")) == "42"


def limit_free_fds(pid, free):
    """Lower process `pid`'s soft descriptor limit to leave it `free` descriptors (numbers
    below the limit unused: an open takes the lowest); its limits before."""
    limits = resource.prlimit(pid, resource.RLIMIT_NOFILE)
    used = {int(name) for name in os.listdir("/proc/%d/fd" % pid)}
    unused = [fd for fd in range(len(used) + free) if fd not in used]
    resource.prlimit(pid, resource.RLIMIT_NOFILE, (unused[free - 1] + 1, limits[1]))
    return limits


def test_what_a_dead_spawners_worker_started_ends_even_if_more_than_the_new_spawner_has_descriptors_for(
        tmp_path):
    # The new spawner's hunt opened a pidfd of every stray before it killed one: with more
    # strays than descriptors it failed (EMFILE) every second, killing none, for good.
    with Daemon(tmp_path, env={"GS_MCP_TOOLSETS": "execution", "GS_MCP_SPARE_WORKERS": "1"}) as daemon:
        client = session(daemon)
        worker = worker_pid(client)
        started = [os.pidfd_open(pid) for pid in start(client, (
            "import subprocess\n"
            "[subprocess.Popen(['sleep', '300'], start_new_session=True).pid for _ in range(24)]"))]
        spawner = spawner_of(daemon)
        os.kill(spawner, signal.SIGKILL)
        new = spawner_after(daemon, spawner)
        assert new and parent_of(worker) == forkserver_of(daemon)
        limits = limit_free_fds(new, 4)
        try:
            end_on_its_own(client, worker, "os._exit")
            assert all_end_within(started)
            assert "cannot look for" not in daemon.log_text()
        finally:
            resource.prlimit(new, resource.RLIMIT_NOFILE, limits)
        assert tool_text(session(daemon).tool("execute_code", code="6 * 7")) == "42"


def test_what_a_dead_spawners_worker_started_is_gone_once_the_daemon_has_stopped(tmp_path):
    # No new spawner runs before the stop (the forkserver is held stopped until then): the
    # forkserver, exiting after the router, kills it.
    with Daemon(tmp_path, env={"GS_MCP_TOOLSETS": "execution", "GS_MCP_SPARE_WORKERS": "1"}) as daemon:
        client = session(daemon)
        worker = worker_pid(client)
        started = started_by_its_code(client)
        spawner = spawner_of(daemon)
        with stopped(forkserver_of(daemon)):
            os.kill(spawner, signal.SIGKILL)
            end_on_its_own(client, worker, "os._exit")
            daemon.proc.send_signal(signal.SIGTERM)
        assert daemon.proc.wait(20) == 0
    assert all_end_within(started)
