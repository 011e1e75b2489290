"""End-to-end: opening and ending sessions many times leaks no worker and no descriptor."""

import os

from helpers import Client, Daemon, pid_alive, wait_until, worker_pids

CYCLES = 500
SPARES = 2


def assert_only_the_drains_pipes(fds):
    """The pipes among a worker's descriptors `fds` (descriptors()) are the two its calls'
    fds 1 and 2 write to (gsmcpd.worker.descriptors), both ends of each, made at its first call."""
    pipes = sorted(target for target in fds.values() if target.startswith("pipe:"))
    assert len(pipes) == 4 and pipes[0] == pipes[1] != pipes[2] == pipes[3], fds


def descriptors(pid):
    """{fd: what it names} of process `pid`, a pidfd named with the pid it is of."""
    named = {}
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            target = os.readlink("/proc/%d/fd/%s" % (pid, fd))
            if target == "anon_inode:[pidfd]":
                with open("/proc/%d/fdinfo/%s" % (pid, fd)) as info:
                    target = "pidfd of %s" % info.read().split("Pid:")[1].split()[0]
        except (OSError, IndexError):   # closed meanwhile
            continue
        named[int(fd)] = target
    return named


def holds_just_its_spares(router):
    """Whether the router holds a pidfd of each of its SPARES live workers and of no
    process that has ended. In between, a count of its descriptors is off by a worker's
    two (pidfd and socket) either way: a spare forked but still on its way to the router
    over the spawner's socket, or a worker ended whose end the router has not yet seen."""
    workers = worker_pids(router)
    held = [target.split()[-1] for target in descriptors(router).values() if target.startswith("pidfd of")]
    return (len(workers) == SPARES and {str(pid) for pid in workers} <= set(held)
            and all(pid.isdigit() and pid_alive(int(pid)) for pid in held))


def test_500_initialize_delete_cycles_leave_nothing_behind(tmp_path):
    with Daemon(tmp_path, env={"GS_MCP_SPARE_WORKERS": str(SPARES), "GS_MCP_TOOLSETS": "bench"}) as d:
        warm = Client(d.port)
        warm.initialize()
        assert warm.delete().status == 200
        warm.close()
        assert wait_until(lambda: holds_just_its_spares(d.proc.pid)), (worker_pids(d.proc.pid), descriptors(d.proc.pid))
        baseline = descriptors(d.proc.pid)
        c = Client(d.port)
        for _ in range(CYCLES):
            c.session = None
            c.initialize()
            assert c.tool("echo", text="x")["content"][0]["text"] == "x"
            assert c.delete().status == 200
        c.close()
        assert wait_until(lambda: holds_just_its_spares(d.proc.pid), timeout=15), (
            worker_pids(d.proc.pid), descriptors(d.proc.pid))
        assert wait_until(lambda: len(descriptors(d.proc.pid)) <= len(baseline), timeout=15), (
            baseline, descriptors(d.proc.pid))
