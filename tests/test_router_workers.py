"""The router's side of worker starts: real spares forked by the real spawner."""

import contextlib
import errno
import gc
import multiprocessing
import os
import resource
import select
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from gsmcpd.router import workers
from gsmcpd.router.loop import Loop
from gsmcpd.router.workers import Spawner, WorkerPool, has_descriptors
from gsmcpd.wire import frames
from gsmcpd.wire.break_signals import BREAK_SIGNALS
from helpers import parent_of, pid_alive, signals_of, steady_descriptors, wait_until
from test_e2e_cycles import descriptors


@pytest.fixture
def spawner():
    spawner = Spawner()
    spawner.launch()
    yield spawner
    spawner.stop()


def received(spawner, timeout=20):
    """The spawner's next message, waited for as the router's loop would."""
    assert select.select([spawner.control], [], [], timeout)[0], "nothing from the spawner"
    return spawner.receive()


def spares(spawner, count):
    spawner.ask(count)
    got = [received(spawner) for _ in range(count)]
    assert [kind for kind, _ in got] == ["spare"] * count, got
    return [detail[:3] for _, detail in got]     # (pid, pidfd, socket): no temporary directory's name


def prepare_and_ping(sock):
    sock.settimeout(20)
    sock.sendall(frames.encode({"op": "prepare", "session": {"toolsets": ["bench"]}}) +
                 frames.encode({"op": "call", "seq": 1,
                                "message": {"jsonrpc": "2.0", "id": 1, "method": "ping"}}))
    decoder, got = frames.FrameDecoder(), []
    while len(got) < 2:
        data = sock.recv(65536)
        assert data, "the worker closed its socket (it died) before answering"
        got += decoder.feed(data)
    return got


def test_spares_answer_exit_on_eof_and_their_pidfds_say_so(spawner):
    (pid, pidfd, sock), (pid2, pidfd2, sock2) = spares(spawner, 2)
    assert pid != pid2 and pid_alive(pid) and pid_alive(pid2)
    assert spawner.process not in multiprocessing.active_children()  # ours to end, not atexit's
    got = prepare_and_ping(sock)
    assert got[0]["op"] == "prepared" and got[0]["ok"] is True
    assert got[1] == {"op": "reply", "seq": 1, "message": {"jsonrpc": "2.0", "id": 1, "result": {}}}
    for s, fd, p in ((sock, pidfd, pid), (sock2, pidfd2, pid2)):
        s.close()   # EOF: the worker exits, the pidfd turns readable, the kernel reaps it
        assert select.select([fd], [], [], 20)[0]
        assert wait_until(lambda p=p: not os.path.exists("/proc/%d" % p), 20)
        os.close(fd)
    # Each reaped is reported (a worker's own end kills its process group, itself included),
    # and nothing more: no spare was asked for.
    assert sorted([received(spawner), received(spawner)]) == sorted([("exit", (pid, -signal.SIGKILL)),
                                                                       ("exit", (pid2, -signal.SIGKILL))])
    assert spawner.receive() is None


def test_the_spawner_reports_how_each_worker_ended(spawner):
    # The router is not the workers' parent: only the spawner, which reaps them, can say.
    ended = spares(spawner, 3)
    for (pid, pidfd, sock), signum in zip(ended, (signal.SIGALRM, signal.SIGKILL, signal.SIGXCPU)):
        signal.pidfd_send_signal(pidfd, signum)
        assert received(spawner) == ("exit", (pid, -signum))
        sock.close()
        os.close(pidfd)


def test_signals_go_through_the_pidfd(spawner):
    [(pid, pidfd, sock)] = spares(spawner, 1)
    signal.pidfd_send_signal(pidfd, signal.SIGKILL)
    assert select.select([pidfd], [], [], 20)[0]
    sock.close()
    os.close(pidfd)


def test_a_spare_gets_a_clean_start(spawner):
    # Only its frame socket (plus the std streams and what multiprocessing's own
    # forkserver holds), default SIGCHLD for its tools' subprocesses, and the
    # scheduling the spawner set up once for all its workers.
    [(pid, pidfd, sock)] = spares(spawner, 1)
    try:
        assert prepare_and_ping(sock)[0]["ok"] is True     # it is running
        targets = []
        for fd in os.listdir("/proc/%d/fd" % pid):
            try:   # a file the worker has open for a moment (its watchdog reads /proc) may go
                targets.append(os.readlink("/proc/%d/fd/%s" % (pid, fd)))
            except FileNotFoundError:
                pass
        assert sum(t.startswith("socket:") for t in targets) <= 2, targets
        ignored = signals_of(pid, "SigIgn")
        assert signal.SIGCHLD not in ignored
        # The break signals handled by its loop; SIGINT by Python, SIGUSR1 at its default
        handled = signals_of(pid, "SigCgt")
        assert set(BREAK_SIGNALS) <= handled and signal.SIGINT in handled
        assert signal.SIGUSR1 not in handled | ignored
        assert os.sched_getscheduler(pid) == os.SCHED_BATCH
    finally:
        sock.close()
        select.select([pidfd], [], [], 20)
        os.close(pidfd)


def test_a_break_sent_to_a_spare_still_starting_does_not_kill_it(spawner):
    # A break signal's default action ends a process: the spawner ignores them, so a
    # spare is born ignoring them until its loop handles them. Sent through the pidfd as
    # the router sends them, from the moment the spawner says the spare exists.
    assert set(BREAK_SIGNALS) <= signals_of(spawner.process.pid, "SigIgn")
    spawner.ask(1)
    kind, (pid, pidfd, sock, _) = received(spawner)
    try:
        for _ in range(20):
            for signum in BREAK_SIGNALS:
                signal.pidfd_send_signal(pidfd, signum)
        assert prepare_and_ping(sock)[0]["ok"] is True
        assert pid_alive(pid)
    finally:
        sock.close()
        select.select([pidfd], [], [], 20)
        os.close(pidfd)


def test_spares_run_as_much_nicer_than_the_router_as_asked_and_the_spawner_does_not():
    ours = os.getpriority(os.PRIO_PROCESS, 0)
    for asked in (0, 4, 19):
        spawner = Spawner(worker_nice=asked)
        spawner.launch()
        try:
            [(pid, pidfd, sock)] = spares(spawner, 1)
            assert prepare_and_ping(sock)[0]["ok"] is True
            assert os.getpriority(os.PRIO_PROCESS, pid) == min(19, ours + asked)
            sock.close()
            os.close(pidfd)
            # The spawner reports the workers' exits and forks the spares sessions wait
            # for: at the workers' priority it was starved by busy processes.
            assert os.getpriority(os.PRIO_PROCESS, spawner.process.pid) == ours
        finally:
            spawner.stop()
    assert os.getpriority(os.PRIO_PROCESS, 0) == ours      # the router's own is untouched


# A child already at nice 15 (or more), as a daemon started at nice 15 would be.
AT_NICE_15 = ("import logging, os, sys\n"
              "logging.basicConfig(stream=sys.stdout, format='%(message)s')\n"
              "os.nice(max(0, 15 - os.nice(0)))\n")


def run_at_nice_15(code):
    out = subprocess.run([sys.executable, "-c", AT_NICE_15 + code], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=60,
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert out.returncode == 0, out.stdout
    return out.stdout, max(15, os.getpriority(os.PRIO_PROCESS, 0))


def test_a_step_cut_short_at_nice_19_is_said_once_not_by_every_worker():
    # From nice 15 (or more), a step of 10 can go only 4 (or less) further.
    said, started = run_at_nice_15(
        "from gsmcpd.worker import spawner\n"
        "theirs = spawner._worker_priority(10)\n"
        "for _ in range(2):   # as the spawner's workers do, first thing\n"
        "    pid = os.fork()\n"
        "    if pid == 0:\n"
        "        spawner._lower_priority(theirs)\n"
        "        print('worker at', os.getpriority(os.PRIO_PROCESS, 0), flush=True)\n"
        "        os._exit(0)\n"
        "    os.waitpid(pid, 0)\n"
        "print('spawner at', os.getpriority(os.PRIO_PROCESS, 0))\n")
    assert said.count("nicer than the router") == 1, said
    assert ("workers run %d nicer than the router, not 10: nice 19 is the lowest priority\n"
            % (19 - started)) in said
    assert said.count("worker at 19\n") == 2 and "spawner at %d\n" % started in said, said


def test_workers_keep_the_routers_priority_where_it_cannot_be_set(monkeypatch, caplog):
    from gsmcpd.worker import spawner as spawner_module

    def refused(which, who, priority):
        raise PermissionError(1, "Operation not permitted")
    monkeypatch.setattr(os, "setpriority", refused)
    assert spawner_module._worker_priority(10) is None
    assert ("workers run at the router's priority: cannot lower theirs ([Errno 1] Operation not permitted)"
            in caplog.text)
    assert spawner_module._worker_priority(0) is None          # nothing asked: nothing tried
    # Where the spawner could, a worker that cannot (not expected) says so and serves on.
    spawner_module._lower_priority(19)
    assert ("worker %d runs at the router's priority: cannot lower it ([Errno 1] Operation not permitted)"
            % os.getpid()) in caplog.text


# A spawner's serve in a process of its own, which is no forkserver's child: told its stdio,
# then its router gone, so the hello it tries is its last act. Each line it writes on its
# stderr says, in order, what it logged and when it tried the hello.
HELLO_SCENARIO = r"""
import os, socket
from gsmcpd.worker import spawner
send = spawner._send

def noted(control, message, fds):
    if message == b"hello":
        os.write(2, b"hello tried\n")
    return send(control, message, fds)
spawner._send = noted
ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
socket.send_fds(ours, [b"stdio"], [1, 2])
ours.close()
spawner.serve(theirs)
"""


def test_the_spawners_warning_of_no_forkserver_to_adopt_orphans_is_logged_before_its_hello():
    # It was logged after: a detached start, which hands on what is logged before the router
    # listens (which it does after the hello), did not print it.
    out = subprocess.run([sys.executable, "-c", HELLO_SCENARIO], capture_output=True, text=True,
                         timeout=60, cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert out.returncode == 0, out.stderr
    lines = out.stderr.splitlines()
    warned = [at for at, line in enumerate(lines) if "its parent is not the router's forkserver" in line]
    assert warned and lines.index("hello tried") > warned[0], out.stderr


def test_bad_requests_get_errors_and_eof_ends_the_spawner(spawner):
    for request in (b"more 0 1", b"more many 1", b"fork 1 1", b"more 1000 1"):
        spawner.control.send(request)
        kind, detail = received(spawner)
        assert kind == "error" and "bad request" in detail
    process = spawner.process
    spawner.control.close()
    process.join(20)
    assert process.exitcode == 0


def test_a_new_spawner_removes_a_dead_spawners_workers_directories_a_live_ones_once_it_ends(tmp_path):
    live = tmp_path / ("w." + 16 * "1")      # a session's worker, still running
    dead = tmp_path / ("w." + 16 * "2")      # one the dead spawner reaped, not removed yet
    for path in (live, dead):
        path.mkdir()
        (path / "left.tmp").write_text("x")
    (tmp_path / "pymp-router").mkdir()        # none of a worker's
    orphan = subprocess.Popen(["sleep", "60"])
    pidfd = os.pidfd_open(orphan.pid)
    spawner = Spawner(tmp_dir=str(tmp_path))
    try:
        spawner.launch()
        assert spawner.hand_over({pidfd: live.name})
        assert wait_until(lambda: not dead.exists())
        assert (live / "left.tmp").exists() and (tmp_path / "pymp-router").exists()
        spawner.ask(1)
        kind, (_, worker_pidfd, sock, name) = received(spawner)   # named, for the router to hand on
        os.close(worker_pidfd)
        sock.close()
        assert name.startswith("w.") and len(name) == 18 and name != live.name
        orphan.kill()
        orphan.wait()
        assert wait_until(lambda: not live.exists())
    finally:
        orphan.kill()
        os.close(pidfd)
        spawner.stop()


def test_a_garbled_orphans_message_stops_the_sweep_that_would_take_a_live_workers_directory(tmp_path):
    from gsmcpd.worker.spawner import Orphans

    swept = []

    class Sweeper:
        workers = {}

        def removable(self, paths):
            swept.extend(paths)

    (tmp_path / ("w." + 16 * "1")).mkdir()
    orphans = Orphans(select.poll(), Sweeper(), str(tmp_path))
    reader, writer = os.pipe()
    orphans.told(b"orphans w." + 16 * b"1" + b" w." + 16 * b"2", [reader], 0)   # a descriptor short
    orphans.told(b"sweep", [], 0)
    assert swept == [] and orphans.live == {}
    with pytest.raises(OSError):
        os.fstat(reader)                      # closed, not leaked
    os.close(writer)


def test_a_sweep_of_a_directory_the_daemon_has_removed_is_quiet(tmp_path, caplog):
    # A serve whose port was in use removed its directory as it ended, while the spawner
    # was told to sweep it: "cannot list ...: No such file or directory" was logged on each
    # of a unit's port-in-use restarts. Another failure to list is still said.
    from gsmcpd.worker.spawner import Orphans

    class Sweeper:
        workers = {}

        def removable(self, paths):
            raise AssertionError(paths)

    Orphans(select.poll(), Sweeper(), str(tmp_path / "gone")).told(b"sweep", [], 0)
    assert "cannot list" not in caplog.text
    (tmp_path / "file").write_text("")
    Orphans(select.poll(), Sweeper(), str(tmp_path / "file")).told(b"sweep", [], 0)
    assert "cannot list %s" % (tmp_path / "file") in caplog.text


def test_stop_kills_a_spawner_that_does_not_end_and_is_quiet_about_one_gone():
    def descriptors():
        return sorted(os.listdir("/proc/self/fd"))

    # The forkserver, started by the first spawner this process launches, keeps its
    # descriptors for good: counted before, whether this test runs first or not.
    first = Spawner()
    first.launch()
    first.stop(grace=0)
    before = descriptors()
    stuck = Spawner()
    stuck.launch()
    assert stuck.pidfd is not None and len(descriptors()) > len(before)
    process = stuck.process
    os.kill(process.pid, signal.SIGSTOP)     # EOF alone cannot end it now
    stuck.stop(grace=0.2)
    process.join(20)
    assert process.exitcode == -signal.SIGKILL
    assert (stuck.process, stuck.pidfd, stuck.control) == (None, None, None)
    stuck.stop()                              # a second stop has nothing left to close
    del process
    assert descriptors() == before            # control socket and pidfd closed

    gone = Spawner()
    gone.launch()
    process = gone.process
    os.kill(process.pid, signal.SIGKILL)
    process.join(20)                          # reaped by the forkserver: its pid is free
    gone.stop(grace=0)                        # signals nothing, through the pidfd or by pid
    assert (gone.process, gone.pidfd, gone.control) == (None, None, None)
    del process
    assert descriptors() == before


@contextlib.contextmanager
def stdio_at(path):
    """Our stdout and stderr pointed at `path` (a daemon's log, reopened after a rotation)."""
    saved = [os.dup(1), os.dup(2)]
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for kept in saved + [fd]:
            os.close(kept)


def stdio_of(pid):
    return [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in (1, 2)]


def logs_to(pid, log):
    """Whether worker `pid` keeps `log` (the spawner's stderr as it forked it) on a descriptor
    of its own, its fds 1 and 2 /dev/null (gsmcpd.worker.main._log_off_stdio), once it has started."""
    def held():
        return stdio_of(pid) == ["/dev/null"] * 2 and log in descriptors(pid).values()
    return wait_until(held)


def test_the_spawner_takes_the_routers_stdio_at_its_start_and_when_told_and_its_later_workers_too(
        spawner, tmp_path):
    # It inherited the forkserver's, which a log's rotation leaves on the rotated file:
    # neither a spawner started after the rotation nor a running one left it.
    before = stdio_of(spawner.process.pid)
    [(old_pid, old_pidfd, old_sock)] = spares(spawner, 1)
    rotated, reopened = str(tmp_path / "rotated.log"), str(tmp_path / "reopened.log")
    with stdio_at(rotated):
        later = Spawner()
        later.launch()           # the forkserver, already running, still has the old ones
    try:
        assert wait_until(lambda: stdio_of(later.process.pid) == [rotated, rotated])
    finally:
        later.stop()
    with stdio_at(reopened):
        assert spawner.share_stdio()
    [(pid, pidfd, sock)] = spares(spawner, 1)    # asked after it was told: ordered after it
    assert stdio_of(spawner.process.pid) == [reopened, reopened]
    assert logs_to(pid, reopened)
    assert logs_to(old_pid, before[1])           # a worker forked before keeps its own
    for fd, sock_ in ((old_pidfd, old_sock), (pidfd, sock)):
        sock_.close()
        os.close(fd)


def test_a_garbled_stdio_message_changes_nothing_and_the_spawner_serves_on(spawner, tmp_path):
    before = stdio_of(spawner.process.pid)
    fd = os.open(tmp_path / "one.log", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        socket.send_fds(spawner.control, [b"stdio"], [fd])   # one descriptor, not two
    finally:
        os.close(fd)
    [(pid, pidfd, sock)] = spares(spawner, 1)
    assert stdio_of(spawner.process.pid) == before
    assert logs_to(pid, before[1])
    sock.close()
    os.close(pidfd)


def pid_named_by(pidfd):
    with open("/proc/self/fdinfo/%d" % pidfd) as info:
        return int(next(line for line in info if line.startswith("Pid:")).split()[1])


def test_the_spawners_pidfd_is_the_one_it_sent_of_itself(spawner):
    assert pid_named_by(spawner.pidfd) == spawner.process.pid
    assert not os.get_inheritable(spawner.pidfd)
    assert spawner.receive() is None        # launch took the hello; nothing else is waiting
    (pid, pidfd, sock), = spares(spawner, 1)
    assert pid != spawner.process.pid and pid_named_by(pidfd) == pid
    assert not os.get_inheritable(pidfd) and not sock.get_inheritable()
    os.close(pidfd)
    sock.close()


class FakeProcess:
    def __init__(self, alive):
        self.alive = alive
        self.killed = False

    def is_alive(self):
        return self.alive

    def kill(self):
        self.killed = True


@pytest.mark.parametrize("first, fds, alive, reason, killed", [
    (None, 0, False, "it ended before saying hello", False),
    (b"spare 12", 1, False, "unexpected first message b'spare 12'", False),
    (b"hello", 0, False, "its hello came without its pidfd", False),
    (b"hello", 2, False, "its hello came with more than its pidfd", False),   # truncated
    (b"spare 12", 0, True, "unexpected first message b'spare 12'", False),   # it ends on EOF
    (b"", 0, True, "no hello within 0.2s", True),                      # silent, still alive
])
def test_a_spawner_that_does_not_say_hello_properly_is_refused(monkeypatch, first, fds, alive, reason, killed):
    monkeypatch.setattr(workers, "SPAWNER_HELLO_WAIT", 0.2)
    with steady_descriptors():
        before = sorted(os.listdir("/proc/self/fd"))
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        process = FakeProcess(alive)
        try:
            if first is None:
                theirs.close()
            elif first:
                passed = [os.dup(0) for _ in range(fds)]
                socket.send_fds(theirs, [first], passed)
                for fd in passed:
                    os.close(fd)
            with pytest.raises(RuntimeError) as raised:
                workers._hello(ours, process)
        finally:
            ours.close()
            theirs.close()
        assert sorted(os.listdir("/proc/self/fd")) == before    # nothing received was kept
    assert str(raised.value).startswith("the worker spawner did not start: " + reason)
    assert process.killed is killed


@pytest.mark.parametrize("failure", [OSError(errno.EMFILE, "Too many open files"),
                                     OSError(errno.ENOBUFS, "No buffer space available")])
def test_a_failed_send_of_the_stdio_fails_the_launch_at_once_with_its_reason_and_the_spawner_ends(
        monkeypatch, failure):
    # It was taken for a spawner already gone: the launch waited SPAWNER_HELLO_WAIT for a hello
    # the spawner, waiting for that message, never sent, then said "no hello within 30s".
    started = []
    start = multiprocessing.context.ForkServerProcess.start

    def recorded(process):
        start(process)
        started.append(process)

    def failing(control):
        raise failure
    monkeypatch.setattr(multiprocessing.context.ForkServerProcess, "start", recorded)
    monkeypatch.setattr(workers, "_send_stdio", failing)
    spawner = Spawner()
    with pytest.raises(RuntimeError) as raised:
        spawner.launch()
    assert str(raised.value) == "the worker spawner did not start: cannot send it the log's descriptors (%s)" % failure
    assert spawner.control is None
    [process] = started
    process.join(20)                     # our end closed: EOF on its first read ends it
    assert process.exitcode == 0


def test_a_spawner_gone_before_its_stdio_is_sent_is_reported_by_its_missing_hello(monkeypatch):
    heard = []

    def gone(control):
        raise BrokenPipeError(errno.EPIPE, "Broken pipe")

    def hello(control, process):
        heard.append(process)
        raise RuntimeError("the worker spawner did not start: it ended before saying hello")
    monkeypatch.setattr(workers, "_send_stdio", gone)
    monkeypatch.setattr(workers, "_hello", hello)
    with pytest.raises(RuntimeError, match="it ended before saying hello"):
        Spawner().launch()
    [process] = heard                    # its hello was waited for: that is the report
    process.join(20)
    assert process.exitcode == 0


def slow_spawner(started, release, stopped):
    """A Spawner class whose launch (on the pool's starter thread) sets `started`, then
    holds until `release` is set; each one stopped is appended to `stopped`."""
    class SlowSpawner:
        def __init__(self, worker_nice=0, worker_memory=None, worker_env=None, tmp_dir=None):
            self.worker_nice, self.worker_memory, self.worker_env = worker_nice, worker_memory, worker_env
            self.tmp_dir = tmp_dir
            self.control = None

        def launch(self):
            started.set()
            release.wait(20)

        def stop(self, grace=5.0):
            stopped.append(self)
    return SlowSpawner


def test_a_spawner_whose_start_outlasts_shutdown_is_stopped_by_its_starter(monkeypatch):
    started, release, stopped = threading.Event(), threading.Event(), []
    monkeypatch.setattr(workers, "Spawner", slow_spawner(started, release, stopped))
    monkeypatch.setattr(workers, "SPAWNER_STOP_WAIT", 0.1)
    loop = Loop()
    try:
        pool = WorkerPool(loop, 0)
        old = pool.spawner
        pool._relaunch()
        assert started.wait(20)
        new = pool.spawner
        pool.close()
        stop_spawner(loop, pool)             # gives up waiting: the start is still running
        assert stopped == [old]
        release.set()
        pool._launcher.join(20)
        assert stopped == [old, new]         # its starter stopped it, no loop was asked to
        assert not loop._soon
    finally:
        release.set()
        loop.close()


def test_the_descriptor_probe_gives_back_what_it_takes():
    with steady_descriptors():
        before = len(os.listdir("/proc/self/fd"))
        assert has_descriptors(8)
        assert not has_descriptors(10 ** 7)
        assert len(os.listdir("/proc/self/fd")) == before


def test_a_garbled_message_from_the_spawner_is_an_error_and_its_descriptors_are_closed():
    spawner = Spawner()
    spawner.control, other = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        with steady_descriptors():
            before = len(os.listdir("/proc/self/fd"))
            for message, count in ((b"spare notapid", 2), (b"spare 12", 1), (b"hello", 0),
                                   (b"exit 12", 0), (b"exit 12 nine", 0), (b"exit 12 -9", 1)):
                passed = [os.dup(0) for _ in range(count)]
                socket.send_fds(other, [message], passed)
                for fd in passed:
                    os.close(fd)
                kind, detail = received(spawner, 5)
                assert kind == "error" and detail, (message, detail)
            assert len(os.listdir("/proc/self/fd")) == before   # nothing received was kept
        other.close()
        assert received(spawner, 5)[0] == "eof"
    finally:
        spawner.control.close()


# -- the pool: claims and spawner restarts, on a real loop -------------------------

def stop_spawner(loop, pool):
    """What shutdown does last, the loop turned until the spawner has ended."""
    ended = []
    pool.stop_spawner(lambda: ended.append(True))
    assert run_until(loop, lambda: ended, 30)
    assert ended == [True]


def run_until(loop, done, timeout=10.0):
    """Turn the loop (a pass at most every 50 ms) until done() or the timeout."""
    deadline = time.monotonic() + timeout
    while not done() and time.monotonic() < deadline:
        loop.call_later(0.05, lambda: None)
        loop._run_once()
    return done()


class Outcome:
    """What a claim ended with: a worker, or the reason it was refused."""

    def __init__(self):
        self.worker = self.failure = None

    def on_worker(self, worker):
        self.worker = worker

    def on_failure(self, reason):
        self.failure = reason

    @property
    def done(self):
        return self.worker is not None or self.failure is not None


class HandSpawner:
    """The spawner's side of the control socket, played by the test: spares are `sleep`
    processes with a socket, so the pool's bookkeeping can be driven step by step."""

    def __init__(self):
        self.control, self.peer = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.control.setblocking(False)
        self.process = None
        self.asked = 0
        self.kept = []

    def ask(self, count):
        self.asked += count

    receive = Spawner.receive
    hand_over = Spawner.hand_over
    share_stdio = Spawner.share_stdio

    def stop(self, grace=0):
        self.control.close()

    def stop_on(self, loop, then):
        self.control.close()
        then()

    def spare(self, tmp_name=None):
        process = subprocess.Popen(["sleep", "60"])
        pidfd = os.pidfd_open(process.pid)
        ours, theirs = socket.socketpair()
        named = b"" if tmp_name is None else b" " + tmp_name.encode()
        socket.send_fds(self.peer, [b"spare %d%s" % (process.pid, named)], [pidfd, ours.fileno()])
        os.close(pidfd)
        ours.close()
        self.kept += [theirs, process]

    def error(self, text):
        socket.send_fds(self.peer, [b"error " + text.encode()], [])

    def close(self):
        for kept in self.kept:
            kept.kill() if isinstance(kept, subprocess.Popen) else kept.close()
        self.peer.close()
        self.control.close()


@pytest.fixture
def hand_pool():
    loop = Loop()
    pools = []

    def make(target):
        pool = WorkerPool(loop, target)
        pool.spawner = HandSpawner()
        pool._adopt_spawner()
        pool.replenish()
        pools.append(pool)
        return pool

    yield loop, make
    for pool in pools:
        hand = pool.spawner
        pool.close()
        hand.close()
    loop.close()


def test_a_failed_fork_refuses_a_waiting_claim_only_when_too_few_workers_are_coming(hand_pool):
    loop, make = hand_pool
    pool = make(2)
    hand = pool.spawner
    assert hand.asked == 2
    waiting = Outcome()
    pool.claim(waiting.on_worker, waiting.on_failure)
    assert hand.asked == 3 and not waiting.done      # its own worker is asked for too
    hand.error("BlockingIOError: [Errno 11] Resource temporarily unavailable")
    hand.spare()
    hand.spare()
    assert run_until(loop, lambda: waiting.done and len(pool.spares) == 1)
    assert waiting.worker is not None and waiting.failure is None   # two were still coming

    lone = make(0)
    refused = Outcome()
    lone.claim(refused.on_worker, refused.on_failure)
    assert lone.spawner.asked == 1
    lone.spawner.error("BlockingIOError: [Errno 11] Resource temporarily unavailable")
    assert run_until(loop, lambda: refused.done)
    assert refused.failure == ("no worker could be started: "
                               "BlockingIOError: [Errno 11] Resource temporarily unavailable")


def test_a_reported_exit_reaches_its_worker_and_a_dead_spawners_workers_wait_for_none(hand_pool, monkeypatch):
    monkeypatch.setattr(WorkerPool, "STARVED_PAUSE", 60.0)   # no restart within the test
    loop, make = hand_pool
    pool = make(2)
    pool.spawner.spare()
    assert run_until(loop, lambda: len(pool.spares) == 1)
    [first] = pool.spares
    socket.send_fds(pool.spawner.peer, [b"exit %d -14" % first.pid], [])
    assert run_until(loop, lambda: first.exit.known)
    assert first.exit.code == -signal.SIGALRM
    assert pool._asked == 1              # an exit is no spare arriving: one is still coming
    pool.spawner.spare()
    assert run_until(loop, lambda: len(pool.spares) == 2)
    second = pool.spares[1]
    pool.spawner.peer.close()            # the spawner dies: no status of its workers will come
    assert run_until(loop, lambda: second.exit.known)
    assert second.exit.code is None and pool.by_pid == {}


def test_statuses_are_still_read_once_a_graceful_stop_began_until_the_spawner_is_stopped(hand_pool):
    # The stop's pool.close() read the spawner no more: a worker dying in the stop's graces
    # was told "worker N exited", its signal lost.
    loop, make = hand_pool
    pool = make(0)
    for _ in range(2):
        pool.spawner.spare()
    assert run_until(loop, lambda: len(pool.spares) == 2)
    first, second = pool.spares
    pool.close()
    assert not first.exit.known and not second.exit.known   # not told "none will come"
    socket.send_fds(pool.spawner.peer, [b"exit %d -9" % first.pid], [])
    assert run_until(loop, lambda: first.exit.known)
    assert first.exit.code == -signal.SIGKILL
    pool.spawner.error("moot now")   # an error in the stop starves nothing, refuses no one
    pool.spawner.spare()             # nor is a late spare kept: it is killed
    late = pool.spawner.kept[-1]
    assert run_until(loop, lambda: late.poll() is not None)
    assert pool.spares == [] and pool._paused_until == 0.0
    stop_spawner(loop, pool)         # its reports are read no more: none will come
    assert second.exit.known and second.exit.code is None and pool.by_pid == {}


def test_a_spawner_dying_during_a_graceful_stop_is_not_restarted_and_its_workers_wait_for_no_status(
        hand_pool, monkeypatch):
    monkeypatch.setattr(WorkerPool, "STARVED_PAUSE", 0.0)   # a restart would come at once
    loop, make = hand_pool
    pool = make(0)
    pool.spawner.spare()
    assert run_until(loop, lambda: len(pool.spares) == 1)
    [worker] = pool.spares
    pool.close()
    pool.spawner.peer.close()        # its EOF
    assert run_until(loop, lambda: worker.exit.known)
    assert worker.exit.code is None and pool._relaunching is None and pool._retry is None


def told_of_orphans(hand):
    """What a new spawner is told at its adoption: [(orphan names, the pids their
    pidfds name)], then b"sweep"."""
    told = []
    while True:
        message, fds, _, _ = socket.recv_fds(hand.peer, 65536, 250)
        if message == b"sweep":
            return told
        told.append((message.split()[1:], [pid_named_by(fd) for fd in fds]))
        for fd in fds:
            os.close(fd)


def test_a_dead_spawners_claimed_workers_are_handed_to_each_new_spawner_until_they_end(hand_pool, monkeypatch):
    # Their directories stayed until the daemon's stop: nobody was told to remove them.
    monkeypatch.setattr(WorkerPool, "STARVED_PAUSE", 60.0)   # no restart within the test: the test adopts
    loop, make = hand_pool
    pool = make(1)
    assert told_of_orphans(pool.spawner) == []                # a first spawner sweeps too: nothing to keep
    pool.spawner.spare("w." + 16 * "1")
    pool.spawner.spare("w." + 16 * "2")
    assert run_until(loop, lambda: len(pool.spares) == 2)
    claimed = Outcome()
    pool.claim(claimed.on_worker, claimed.on_failure)
    worker = claimed.worker
    assert worker.tmp_name == "w." + 16 * "1"
    dead = pool.spawner
    dead.peer.close()                                         # the spawner dies; its spare is ended
    assert run_until(loop, lambda: pool._relaunching is not None)

    def adopted():
        """What a new spawner is told, as the pool adopts it; then it dies too."""
        pool.spawner = HandSpawner()
        pool._adopt_spawner()
        told = told_of_orphans(pool.spawner)
        loop.remove(pool.spawner.control)
        pool.spawner.close()
        return told

    for _ in range(2):                                        # and the next, before the worker ends
        assert adopted() == [([b"w." + 16 * b"1"], [worker.pid])]
    [process] = [p for p in dead.kept if isinstance(p, subprocess.Popen) and p.pid == worker.pid]
    process.kill()
    process.wait()
    assert adopted() == [] and pool._orphans == {}            # its directory is the next sweep's
    pool.spawner = HandSpawner()                              # for the fixture's close
    dead.close()


def claimed(loop, pool, tmp_name=None):
    """A session's worker, claimed from the pool's (hand) spawner."""
    pool.spawner.spare(tmp_name)
    assert run_until(loop, lambda: len(pool.spares) == 1)
    claim = Outcome()
    pool.claim(claim.on_worker, claim.on_failure)
    return claim.worker


def spawner_died(loop, pool):
    """The pool's (hand) spawner dies: it, once the pool has seen it and starts another."""
    dead = pool.spawner
    dead.peer.close()
    assert run_until(loop, lambda: pool._relaunching is not None)
    return dead


def is_open(fd):
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


@pytest.mark.parametrize("ends", ["after the new spawner is adopted", "while none is"])
def test_a_dead_spawners_worker_that_ends_lets_go_of_the_pidfd_kept_of_it(hand_pool, monkeypatch, ends):
    # The copy kept to tell later spawners of it was closed only at the next spawner's death:
    # after one killed spawner, a router serving on for weeks held a pidfd per session it
    # had had then (a soak: 18 descriptors of ended workers, never given back).
    monkeypatch.setattr(WorkerPool, "STARVED_PAUSE", 60.0)   # no restart within the test: the test adopts
    loop, make = hand_pool
    pool = make(0)
    assert told_of_orphans(pool.spawner) == []
    worker = claimed(loop, pool, "w." + 16 * "1")
    dead = spawner_died(loop, pool)
    kept = list(pool._orphans)
    assert len(kept) == 1 and is_open(kept[0])
    if ends == "after the new spawner is adopted":
        pool.spawner = HandSpawner()
        pool._adopt_spawner()
        assert told_of_orphans(pool.spawner) == [([b"w." + 16 * b"1"], [worker.pid])]
    [process] = [p for p in dead.kept if isinstance(p, subprocess.Popen) and p.pid == worker.pid]
    process.kill()
    process.wait()
    assert run_until(loop, lambda: not worker.alive and not pool._orphans)
    assert not is_open(kept[0])
    if ends == "while none is":
        pool.spawner = HandSpawner()
        pool._adopt_spawner()
        assert told_of_orphans(pool.spawner) == []            # nothing left to spare: its directory is swept
    dead.close()


def test_a_worker_outliving_two_dead_spawners_is_kept_once(hand_pool, monkeypatch):
    # A guard (a review took it for a leak): a spawner's death copies the pidfds of the
    # workers it forked, not those kept at an earlier death (no longer in by_pid since).
    monkeypatch.setattr(WorkerPool, "STARVED_PAUSE", 60.0)   # no restart within the test: the test adopts
    loop, make = hand_pool
    pool = make(0)
    worker = claimed(loop, pool, "w." + 16 * "2")
    first = spawner_died(loop, pool)
    pool.spawner = HandSpawner()
    pool._relaunched(pool.spawner, None)                      # adopted as a restart's would be
    second = spawner_died(loop, pool)
    assert len(pool._orphans) == 1
    pool.spawner = HandSpawner()
    pool._relaunched(pool.spawner, None)
    assert told_of_orphans(pool.spawner) == [([b"w." + 16 * b"2"], [worker.pid])]
    first.close()
    second.close()


def test_a_dead_spawners_worker_without_a_directory_is_handed_over_too(hand_pool, monkeypatch):
    # Only named workers were: the new spawner, told the list was whole, would take an
    # unnamed one for what a dead worker left, and kill it.
    monkeypatch.setattr(WorkerPool, "STARVED_PAUSE", 60.0)   # no restart within the test: the test adopts
    loop, make = hand_pool
    pool = make(0)
    assert told_of_orphans(pool.spawner) == []
    worker = claimed(loop, pool)
    dead = spawner_died(loop, pool)
    pool.spawner = HandSpawner()
    pool._adopt_spawner()
    assert told_of_orphans(pool.spawner) == [([b"-"], [worker.pid])]
    dead.close()


def no_descriptor_left(fd):
    """os.dup out of descriptors."""
    raise OSError(errno.EMFILE, "Too many open files")


def test_no_new_spawner_sweeps_once_a_dead_spawners_worker_could_not_be_kept(hand_pool, monkeypatch, caplog):
    # Out of descriptors, a live worker went untold, and the sweep took its directory (and
    # now would kill it).
    monkeypatch.setattr(WorkerPool, "STARVED_PAUSE", 60.0)
    loop, make = hand_pool
    pool = make(0)
    assert told_of_orphans(pool.spawner) == []
    worker = claimed(loop, pool, "w." + 16 * "1")
    with monkeypatch.context() as patched:
        patched.setattr(workers.os, "dup", no_descriptor_left)
        dead = spawner_died(loop, pool)
    assert "worker %d could not be kept track of" % worker.pid in caplog.text
    for _ in range(2):                                        # nor the next, while it cannot be kept
        pool.spawner = HandSpawner()
        pool._adopt_spawner()
        pool.spawner.peer.setblocking(False)
        with pytest.raises(BlockingIOError):
            pool.spawner.peer.recv(65536)                     # nothing told: no orphans, no sweep
        loop.remove(pool.spawner.control)
        pool.spawner.close()
    pool.spawner = HandSpawner()                              # for the fixture's close
    dead.close()


@pytest.mark.parametrize("then", ["it ends", "descriptors are back"])
def test_a_dead_spawners_worker_not_kept_holds_the_sweep_back_only_until_it_ends_or_is_kept(
        hand_pool, monkeypatch, then):
    # One failed dup stopped every later sweep until the daemon's stop: what dead spawners'
    # workers left, and their directories, stayed however long after the worker had ended.
    monkeypatch.setattr(WorkerPool, "STARVED_PAUSE", 60.0)   # no restart within the test: the test adopts
    monkeypatch.setattr(WorkerPool, "KEEP_RETRY", 0.01, raising=False)
    loop, make = hand_pool
    pool = make(0)
    assert told_of_orphans(pool.spawner) == []
    worker = claimed(loop, pool, "w." + 16 * "1")
    with monkeypatch.context() as patched:
        patched.setattr(workers.os, "dup", no_descriptor_left)
        dead = spawner_died(loop, pool)
        pool.spawner = HandSpawner()
        pool._relaunched(pool.spawner, None)                  # as the launch thread's start ends
        assert not run_until(loop, lambda: select.select([pool.spawner.peer], [], [], 0)[0], timeout=0.2)
        if then == "it ends":
            [process] = [p for p in dead.kept if isinstance(p, subprocess.Popen) and p.pid == worker.pid]
            process.kill()
            process.wait()
            assert run_until(loop, lambda: not worker.alive)
    assert run_until(loop, lambda: select.select([pool.spawner.peer], [], [], 0)[0])
    kept = [] if then == "it ends" else [([b"w." + 16 * b"1"], [worker.pid])]
    assert told_of_orphans(pool.spawner) == kept          # then b"sweep"
    loop.remove(pool.spawner.control)
    pool.spawner.close()
    pool.spawner = HandSpawner()                              # for the fixture's close
    dead.close()


def told_stdio(hand):
    """The b"stdio" messages waiting for a spawner, as the inodes of the files they pass."""
    told = []
    while select.select([hand.peer], [], [], 0)[0]:
        message, fds, _, _ = socket.recv_fds(hand.peer, 65536, 250)
        if message == b"stdio":
            told.append([os.fstat(fd).st_ino for fd in fds])
        for fd in fds:
            os.close(fd)
    return told


def test_a_reopened_log_is_passed_to_the_spawner_or_to_the_next_one_if_it_is_being_restarted(
        hand_pool, monkeypatch):
    monkeypatch.setattr(WorkerPool, "STARVED_PAUSE", 60.0)   # no restart within the test: the test adopts
    loop, make = hand_pool
    pool = make(0)
    ours = [os.fstat(fd).st_ino for fd in (1, 2)]
    told_stdio(pool.spawner)                                  # what its adoption told it
    pool.stdio_changed()
    assert told_stdio(pool.spawner) == [ours]
    dead = spawner_died(loop, pool)
    pool.stdio_changed()             # a new one being started may have been sent the old ones
    pool.spawner = HandSpawner()
    pool._adopt_spawner()
    assert told_stdio(pool.spawner) == [ours]
    pool._adopt_spawner()            # told once: not again at a later adoption
    assert told_stdio(pool.spawner) == []
    dead.close()


def test_a_reopened_log_the_spawner_could_not_be_told_of_is_told_before_it_is_next_asked_to_fork(
        hand_pool, monkeypatch):
    # A send that failed (its socket full, say) was tried again only at the next spawner's
    # adoption: every worker forked until then wrote to the file rotated away.
    loop, make = hand_pool
    pool = make(0)
    ours = [os.fstat(fd).st_ino for fd in (1, 2)]
    told_stdio(pool.spawner)                                  # what its adoption told it
    send_stdio, failures = workers._send_stdio, [BlockingIOError(errno.EAGAIN, "full")]

    def failing_once(control):
        if failures:
            raise failures.pop()
        send_stdio(control)
    monkeypatch.setattr(workers, "_send_stdio", failing_once)
    pool.stdio_changed()
    assert told_stdio(pool.spawner) == []
    waiting = Outcome()
    pool.claim(waiting.on_worker, waiting.on_failure)         # a fork asked for
    assert pool.spawner.asked == 1
    assert told_stdio(pool.spawner) == [ours]
    pool.claim(waiting.on_worker, waiting.on_failure)
    assert told_stdio(pool.spawner) == []                     # told once


def test_a_worker_the_router_kills_for_a_bad_frame_is_said_to_be_stopped_by_it(hand_pool):
    # Not "killed by signal 9 (kill -9, or the OOM killer)", as its status will say.
    loop, make = hand_pool
    pool = make(0)
    pool.spawner.spare()
    assert run_until(loop, lambda: len(pool.spares) == 1)
    [worker] = pool.spares
    worker.reject("junk")
    assert worker.exit.stopped_for == "it sent a bad frame (junk)" and not worker.alive


def test_a_bad_frames_reason_is_cut_short_in_the_log_and_the_sessions_error(hand_pool, caplog):
    # A log level of the worker's choosing went whole into both: 256 KiB here.
    loop, make = hand_pool
    pool = make(0)
    pool.spawner.spare()
    assert run_until(loop, lambda: len(pool.spares) == 1)
    [worker] = pool.spares
    channel = pool.spawner.kept[-2]   # the worker's end of its frame socket
    frame = frames.encode({"op": "log", "level": "A" * (frames.MAX_OTHER_FRAME - 64), "message": "m"})
    sending = threading.Thread(target=channel.sendall, args=(frame,), daemon=True)   # more than its buffer
    sending.start()
    assert run_until(loop, lambda: not worker.alive)
    sending.join(10)
    said = worker.exit.stopped_for
    assert said.startswith("it sent a bad frame (log frame with level 'AAAA") and said.endswith("...)")
    assert len(said) == len("it sent a bad frame ()") + workers.BAD_FRAME_CAP + len("...")
    [line] = [r.getMessage() for r in caplog.records if "sent a bad frame" in r.getMessage()]
    assert line == "worker %d sent a bad frame (%s); stopping it" % (worker.pid, said[len("it sent a bad frame ("):-1])


# A worker that exits at once, leaving a child in its process group: that child holds the
# group's id, as a process given the worker's pid (reused once the spawner reaped it) could.
EXITS_LEAVING_ITS_GROUP = r"""
import subprocess
print(subprocess.Popen(["sleep", "60"], stdout=subprocess.DEVNULL).pid, flush=True)
"""


def test_a_worker_that_has_exited_has_no_group_killed_before_the_loop_sees_it_end():
    # killpg was guarded by `alive` alone, the router's view, which lags the exit by a loop
    # turn at least: the group id might be another's by then.
    loop = Loop()
    ending = subprocess.Popen([sys.executable, "-c", EXITS_LEAVING_ITS_GROUP], stdout=subprocess.PIPE,
                              start_new_session=True, text=True)
    pidfd = os.pidfd_open(ending.pid)
    ours, theirs = socket.socketpair()
    worker = workers.Worker(loop, (ending.pid, pidfd, ours))
    holder = int(ending.stdout.readline())
    holding = os.pidfd_open(holder)
    try:
        ending.wait()
        assert worker.alive                               # the loop has not turned since
        worker.kill()
        assert not workers.has_ended(holding, 0.5)        # a SIGKILL would have ended it by far sooner
    finally:
        signal.pidfd_send_signal(holding, signal.SIGKILL)
        os.close(holding)
        ending.stdout.close()
        worker.end()
        theirs.close()
        loop.close()


def test_a_bad_frames_reason_is_escaped_and_kept_whole_when_short():
    class Rejected(workers.Worker):
        def __init__(self):
            self.pid, self.exit = 7, workers.ExitStatus()

        def end(self):
            pass
    worker = Rejected()
    worker.reject(frames.FrameError("frame is not UTF-8: 'utf-8' codec can't decode byte 0xff in position 0"))
    assert worker.exit.stopped_for == ("it sent a bad frame (frame is not UTF-8: 'utf-8' codec can't decode "
                                       "byte 0xff in position 0)")
    worker.reject("unknown op 'a\nb'")   # a control character: escaped, as in every log line
    assert worker.exit.stopped_for == "it sent a bad frame (unknown op 'a\\nb')"


def test_claims_take_the_oldest_spare_first(hand_pool):
    loop, make = hand_pool
    pool = make(3)
    for _ in range(3):
        pool.spawner.spare()
    assert run_until(loop, lambda: len(pool.spares) == 3)
    made = [p.pid for p in pool.spawner.kept if isinstance(p, subprocess.Popen)]
    os.kill(made[0], signal.SIGKILL)     # the oldest dies: it is dropped, not handed out
    assert run_until(loop, lambda: len(pool.spares) == 2)
    taken = []
    for _ in range(2):
        got = Outcome()
        pool.claim(got.on_worker, got.on_failure)
        taken.append(got.worker.pid)
    assert taken == made[1:]


def test_a_worker_given_back_by_a_refused_open_goes_to_the_next_claim(hand_pool):
    # A session refused as its worker came (its user unmapped meanwhile: AuthGate.readmit)
    # gives the worker back, unused: the open behind it waits for no other fork.
    loop, make = hand_pool
    pool = make(0)
    refused, next_one = Outcome(), Outcome()
    pool.claim(pool.give_back, refused.on_failure)
    pool.claim(next_one.on_worker, next_one.on_failure)
    pool.spawner.spare()
    assert run_until(loop, lambda: next_one.done)
    assert next_one.worker.pid == pool.spawner.kept[-1].pid and not refused.done
    assert not pool.claims and not pool.spares
    given = Outcome()
    pool.give_back(next_one.worker)              # no claim waits: a spare again
    assert pool.spares == [next_one.worker]
    pool.claim(given.on_worker, given.on_failure)
    assert given.worker is next_one.worker


def test_a_dead_spawners_spares_are_ended_and_never_handed_out(hand_pool, monkeypatch):
    monkeypatch.setattr(WorkerPool, "STARVED_PAUSE", 60.0)   # no restart within the test
    loop, make = hand_pool
    pool = make(2)
    for _ in range(2):
        pool.spawner.spare()
    assert run_until(loop, lambda: len(pool.spares) == 2)
    made = [p for p in pool.spawner.kept if isinstance(p, subprocess.Popen)]
    pool.spawner.peer.close()            # the spawner dies: EOF on its control socket
    assert run_until(loop, lambda: pool._relaunching is not None)
    assert pool.spares == []
    assert [p.wait(10) for p in made] == [-signal.SIGKILL] * 2
    waiting = Outcome()
    pool.claim(waiting.on_worker, waiting.on_failure)
    run_until(loop, lambda: waiting.done, 0.3)
    assert not waiting.done              # it waits for the new spawner's spares
    pool.close()
    assert waiting.failure == "the server is shutting down"


def test_a_killed_spawners_spares_are_replaced_and_reaped_not_left_to_init():
    loop = Loop()
    pool = WorkerPool(loop, 2)
    pool.start()
    try:
        assert run_until(loop, lambda: len(pool.spares) == 2, 20)
        old_spawner = pool.spawner.process.pid
        old = [w.pid for w in pool.spares]
        forkserver = parent_of(old_spawner)
        os.kill(old_spawner, signal.SIGKILL)
        # Orphaned, they go to the forkserver (a subreaper), not to init, which may not reap;
        # the loop, not turned yet, has not ended them.
        assert wait_until(lambda: [parent_of(pid) for pid in old] == [forkserver] * 2)
        # Ended, and reaped: none is left behind.
        assert run_until(loop, lambda: not any(os.path.exists("/proc/%d" % pid) for pid in old), 20), \
            [(pid, parent_of(pid)) for pid in old]
        assert run_until(loop, lambda: len(pool.spares) == 2 and pool.spawner.process is not None, 20)
        new_spawner = pool.spawner.process.pid
        assert new_spawner != old_spawner
        assert [parent_of(w.pid) for w in pool.spares] == [new_spawner] * 2
        assert not set(old) & {w.pid for w in pool.spares}
    finally:
        for worker in pool.close():
            worker.end()
        stop_spawner(loop, pool)


def test_a_claim_after_close_is_refused_at_once(hand_pool):
    loop, make = hand_pool
    pool = make(1)
    pool.spawner.spare()
    assert run_until(loop, lambda: len(pool.spares) == 1)
    pool.close()
    late = Outcome()
    pool.claim(late.on_worker, late.on_failure)
    assert late.failure == "the server is shutting down" and pool.spares == []


def test_a_spawner_restart_that_fails_is_retried_until_it_works_but_not_after_close(monkeypatch):
    monkeypatch.setattr(WorkerPool, "STARVED_PAUSE", 0.2)
    loop = Loop()
    pool = WorkerPool(loop, 0)
    pool.start()
    real_start = threading.Thread.start
    starts = []

    def start_fails_twice(thread):
        if thread.name == "gsmcpd-spawner-launch":
            starts.append(thread)
            if len(starts) <= 2:
                raise RuntimeError("can't start new thread")
        return real_start(thread)

    monkeypatch.setattr(threading.Thread, "start", start_fails_twice)
    try:
        os.kill(pool.spawner.process.pid, signal.SIGKILL)
        waiting = Outcome()
        assert run_until(loop, lambda: len(starts) >= 1)
        pool.claim(waiting.on_worker, waiting.on_failure)   # waits through the restarts
        assert run_until(loop, lambda: waiting.done, 20)
        assert waiting.worker is not None and len(starts) == 3
        waiting.worker.kill()

        # Once closed, a failed restart is not tried again.
        os.kill(pool.spawner.process.pid, signal.SIGKILL)
        starts.clear()
        assert run_until(loop, lambda: len(starts) == 1)
        pool.close()
        run_until(loop, lambda: False, 0.6)   # three pauses, each time enough for a retry
        assert len(starts) == 1
    finally:
        stop_spawner(loop, pool)


def test_a_claim_that_times_out_during_a_restart_names_the_restart(monkeypatch):
    monkeypatch.setattr(WorkerPool, "STARVED_PAUSE", 0.2)
    monkeypatch.setattr(workers, "SPAWNER_TIMEOUT", 0.5)
    loop = Loop()
    pool = WorkerPool(loop, 0)
    pool.start()

    def launch_fails(spawner):
        raise OSError("the forkserver is unreachable")

    try:
        monkeypatch.setattr(Spawner, "launch", launch_fails)
        os.kill(pool.spawner.process.pid, signal.SIGKILL)
        assert run_until(loop, lambda: pool._relaunching is not None)
        refused = Outcome()
        pool.claim(refused.on_worker, refused.on_failure)
        assert run_until(loop, lambda: refused.done)
        assert refused.failure == ("no worker could be started: the worker spawner could not be "
                                   "restarted (the forkserver is unreachable)")
    finally:
        pool.close()


def test_a_spawner_that_keeps_dying_is_restarted_at_most_once_a_pause(monkeypatch):
    monkeypatch.setattr(WorkerPool, "STARVED_PAUSE", 0.3)
    loop = Loop()
    pool = WorkerPool(loop, 0)
    pool.start()
    started = []
    try:
        # At least 1.5 s, and until one restart was seen (a launch is slow on a busy
        # machine); at most one restart a pause over however long that took.
        began = time.monotonic()
        while time.monotonic() < began + 1.5 or (len(started) < 2 and time.monotonic() < began + 30):
            process = pool.spawner.process
            if process is not None and pool._relaunching is None and process.pid not in started:
                started.append(process.pid)
                os.kill(process.pid, signal.SIGKILL)     # dies as soon as it is adopted
            run_until(loop, lambda: False, 0.05)
        elapsed = time.monotonic() - began
        assert 2 <= len(started) <= elapsed / 0.3 + 1, (started, elapsed)
    finally:
        pool.close()
        stop_spawner(loop, pool)


def test_shutdown_during_a_spawner_restart_stops_the_new_spawner(monkeypatch):
    loop = Loop()
    pool = WorkerPool(loop, 0)
    pool.start()
    real_launch = Spawner.launch
    launched = []

    def slow_launch(spawner):
        time.sleep(0.5)
        real_launch(spawner)
        launched.append(spawner.process.pid)

    monkeypatch.setattr(Spawner, "launch", slow_launch)
    monkeypatch.setattr(WorkerPool, "STARVED_PAUSE", 0.0)
    os.kill(pool.spawner.process.pid, signal.SIGKILL)
    assert run_until(loop, lambda: pool._launcher is not None)
    new = pool.spawner
    pool.close()            # what shutdown does, then (its workers gone) stop_spawner
    stop_spawner(loop, pool)
    # Started before the close was seen, or not at all after it; never left running.
    assert len(launched) <= 1 and new.process is None and new.control is None
    assert all(wait_until(lambda: not pid_alive(pid)) for pid in launched)


@pytest.mark.parametrize("room", [True, False])
def test_short_of_descriptors_with_a_session_waiting_the_pool_asks_the_router_for_room(monkeypatch, room):
    loop = Loop()
    try:
        pool = WorkerPool(loop, 1)
        asked, wanted = [], []
        monkeypatch.setattr(pool.spawner, "ask", asked.append)
        monkeypatch.setattr(workers, "has_descriptors", lambda count: False)
        pool.make_room = lambda needed: wanted.append(needed) or room
        with pytest.raises(OSError, match="too few file descriptors"):
            pool._ask(1)   # for a spare alone, no connection is closed
        assert wanted == [] and asked == []
        pool.claims.append(workers.Claim(lambda worker: None, lambda reason: None))
        pool._paused_until = 0.0
        if room:   # three asked for (spares with it): room is made for the one that waits
            pool._ask(3)
            assert asked == [1] and pool._asked == 1
        else:
            with pytest.raises(OSError, match="too few file descriptors"):
                pool._ask(3)
            assert asked == [] and pool._paused_until > loop.now
        assert wanted == [workers.DESCRIPTOR_HEADROOM + 2]
    finally:
        loop.close()


@pytest.fixture
def few_descriptors():
    """This process's descriptor limit brought down to a few above those open, and a
    list for the test's own placeholders, all closed after it. Threads an earlier test
    left running (a spawner's starter finishing its start) are waited for first: a
    descriptor one of them opens or closes meanwhile is one the test counted on (it was
    seen to leave the test no placeholder to hold, on a loaded machine); so is what
    earlier tests left to the garbage collector (steady_descriptors)."""
    for thread in threading.enumerate():
        if thread.name == "gsmcpd-spawner-launch":
            thread.join(30)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    taken = []
    with steady_descriptors():
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(map(int, os.listdir("/proc/self/fd"))) + 64, hard))
        try:
            yield taken
        finally:
            workers.release_descriptors(taken)
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def _closing(connections):
    """A make_room that does what the router's does: closes idle connections."""
    def make_room(needed):
        workers.release_descriptors([connections.pop() for _ in range(needed)])
        return True
    return make_room


def test_descriptors_freed_for_a_waiting_sessions_worker_are_held_for_it(hand_pool, few_descriptors):
    loop, make = hand_pool
    pool = make(0)
    few_descriptors += workers.take_descriptors(10 ** 6)   # every one, as if clients held them
    pool.make_room = _closing(few_descriptors)
    waiting = Outcome()
    pool.claim(waiting.on_worker, waiting.on_failure)
    assert pool.spawner.asked == 1 and len(pool._held) == 2
    pool.spawner.spare()
    # Clients connecting before the spare arrives take every descriptor left free...
    few_descriptors += workers.take_descriptors(10 ** 6)
    assert run_until(loop, lambda: waiting.done)
    # ...but not those held for it: the spare is received, and the session has it.
    assert waiting.failure is None and waiting.worker is not None
    assert pool._held == []
    waiting.worker.kill()


def test_descriptors_held_for_a_worker_asked_for_count_as_its_own(hand_pool, few_descriptors):
    # Room for a second waiting session was reckoned as if the first's worker still needed
    # its two: held for it, they were not free, so two more connections were closed, and
    # with no more to close the second session was refused though room enough was held.
    loop, make = hand_pool
    pool = make(0)
    few_descriptors += workers.take_descriptors(10 ** 6)   # every one, as if clients held them
    closed = []

    def make_room(needed):   # as the router's: closes as many as descriptors are short
        short = needed - workers.free_descriptors(needed)
        closed.append(short)
        workers.release_descriptors([few_descriptors.pop() for _ in range(short)])
        return True
    pool.make_room = make_room
    first, second = Outcome(), Outcome()
    pool.claim(first.on_worker, first.on_failure)
    assert closed == [workers.DESCRIPTOR_HEADROOM + 2] and len(pool._held) == 2
    pool.claim(second.on_worker, second.on_failure)
    assert closed[1:] == [2] and pool.spawner.asked == 2 and len(pool._held) == 4


def test_held_descriptors_are_given_back_when_the_session_waiting_goes(hand_pool, few_descriptors):
    loop, make = hand_pool
    pool = make(0)
    few_descriptors += workers.take_descriptors(10 ** 6)
    pool.make_room = _closing(few_descriptors)
    first, second = Outcome(), Outcome()
    pool.claim(first.on_worker, first.on_failure)
    pool.claim(second.on_worker, second.on_failure)
    assert pool.spawner.asked == 2 and len(pool._held) == 4
    pool._fail_claim(pool.claims[1], "timed out")   # as a claim's timer does
    assert len(pool._held) == 2 and second.failure == "timed out"
    pool.close()
    assert pool._held == [] and first.failure == "the server is shutting down"


class _ClosedWhenCollected:
    """Garbage holding a descriptor, as a socket an earlier test left in a reference cycle."""

    def __init__(self):
        self.fd, self.cycle = os.dup(2), self

    def __del__(self):
        os.close(self.fd)


@pytest.fixture
def garbage_holding_a_descriptor():
    _ClosedWhenCollected()    # unreachable at once: only a collection closes its descriptor


def test_garbage_an_earlier_test_left_frees_none_of_the_descriptors_taken(garbage_holding_a_descriptor,
                                                                         few_descriptors):
    # A collection tripping mid-test closed what earlier tests of this file had left (their
    # loops, sockets): descriptors freed after every one was taken, and counted as free.
    few_descriptors += workers.take_descriptors(10 ** 6)
    gc.collect()    # as one tripping now would
    assert workers.free_descriptors(1) == 0


def oom_score_adj(pid):
    with open("/proc/%d/oom_score_adj" % pid) as adj:
        return int(adj.read())


def test_spares_are_the_oom_killers_choice_before_the_router():
    # A session allocating without bound must cost that session: its worker, not the
    # router, is the one the kernel's OOM killer ends.
    ours = oom_score_adj(os.getpid())
    spawner = Spawner()
    spawner.launch()
    try:
        [(pid, pidfd, sock)] = spares(spawner, 1)
        assert prepare_and_ping(sock)[0]["ok"] is True
        assert oom_score_adj(pid) == oom_score_adj(spawner.process.pid) == min(1000, ours + 500)
        sock.close()
        os.close(pidfd)
    finally:
        spawner.stop()
    assert oom_score_adj(os.getpid()) == ours      # the router's own is untouched


def test_the_oom_step_stops_at_1000():
    code = ("from gsmcpd.worker import spawner\n"
            "open('/proc/self/oom_score_adj', 'w').write('800')\n"
            "spawner._offer_to_oom_killer(500)\n"
            "print(open('/proc/self/oom_score_adj').read().strip())\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "1000"


def data_limits(pid):
    """(soft, hard) of a process's RLIMIT_DATA, as /proc shows it ("unlimited" as None)."""
    with open("/proc/%d/limits" % pid) as limits:
        [line] = [line for line in limits if line.startswith("Max data size")]
    return tuple(None if word == "unlimited" else int(word) for word in line.split()[3:5])


def test_spares_hold_no_more_data_than_asked():
    ours = data_limits(os.getpid())
    for asked, expected in ((None, ours), (128 << 20, (128 << 20, 128 << 20))):
        spawner = Spawner(worker_memory=asked)
        spawner.launch()
        try:
            [(pid, pidfd, sock)] = spares(spawner, 1)
            assert prepare_and_ping(sock)[0]["ok"] is True
            assert data_limits(pid) == expected
            sock.close()
            os.close(pidfd)
        finally:
            spawner.stop()
    assert data_limits(os.getpid()) == ours      # the router's own is untouched



@contextlib.contextmanager
def stuck_spawner(monkeypatch, grace):
    """(loop, pool, the spawner's pid) of a closed pool whose spawner is stopped (SIGSTOP:
    it cannot read its EOF, as a hung one would not), given `grace` to end once told."""
    monkeypatch.setattr(workers, "SPAWNER_END_GRACE", grace)
    loop = Loop()
    pool = WorkerPool(loop, 0)
    pool.start()
    spawner = pool.spawner.process.pid
    try:
        os.kill(spawner, signal.SIGSTOP)
        pool.close()
        yield loop, pool, spawner
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(spawner, signal.SIGKILL)
        loop.close()


def test_a_spawner_that_does_not_end_is_waited_for_by_the_loop_not_in_it_and_killed(monkeypatch, caplog):
    # The stop waited in the loop's own call, up to 5 s before its SIGKILL (and 5 more after):
    # the router did nothing else meanwhile, a second stop signal included.
    with stuck_spawner(monkeypatch, 0.2) as (loop, pool, spawner):
        order = []
        pool.stop_spawner(lambda: order.append("ended"))
        assert order == [] and pid_alive(spawner)   # returned at once, the spawner still there
        loop.call_soon(lambda: order.append("the loop ran on"))
        assert run_until(loop, lambda: "ended" in order, 20)
        assert order == ["the loop ran on", "ended"]
        assert wait_until(lambda: not pid_alive(spawner))
        assert "the worker spawner did not end within 0.2s of being told to stop; killed it" in caplog.text


def test_a_spawner_that_ends_when_told_is_neither_killed_nor_warned_of(caplog):
    loop = Loop()
    pool = WorkerPool(loop, 0)
    pool.start()
    spawner = pool.spawner.process.pid
    try:
        pool.close()
        stop_spawner(loop, pool)
        assert wait_until(lambda: not pid_alive(spawner))
        assert "did not end" not in caplog.text and pool.spawner.control is None
    finally:
        loop.close()


@pytest.mark.parametrize("hurried_while", ["waiting for its end", "before its stop"])
def test_a_second_stop_signal_cuts_a_stuck_spawners_grace(monkeypatch, caplog, hurried_while):
    # It cut the calls' and the workers' waits, not the spawner's: a stuck one still held
    # the exit for its whole grace (5 s) after "press Ctrl-C twice".
    with stuck_spawner(monkeypatch, 60.0) as (loop, pool, spawner):   # a grace longer than the test waits
        ended = []
        if hurried_while == "before its stop":
            pool.hurry()
        pool.stop_spawner(lambda: ended.append(True))
        if hurried_while == "waiting for its end":
            assert run_until(loop, lambda: False, 0.1) is False and not ended   # it is waited for
            pool.hurry()
        assert run_until(loop, lambda: ended, 20)
        assert wait_until(lambda: not pid_alive(spawner))
        assert ("the worker spawner did not end within %gs of a second stop signal; killed it"
                % workers.SPAWNER_HURRIED_GRACE) in caplog.text


def test_a_second_stop_signal_does_not_wait_for_a_spawner_still_being_started(monkeypatch):
    started, release, stopped = threading.Event(), threading.Event(), []
    monkeypatch.setattr(workers, "Spawner", slow_spawner(started, release, stopped))
    monkeypatch.setattr(workers, "SPAWNER_STOP_WAIT", 60.0)   # longer than the test waits
    loop = Loop()
    try:
        pool = WorkerPool(loop, 0)
        pool._relaunch()
        assert started.wait(20)
        new = pool.spawner
        pool.close()
        pool.hurry()
        ended = []
        pool.stop_spawner(lambda: ended.append(True))
        assert ended == [True]               # at once: its starter stops it once started
        release.set()
        pool._launcher.join(20)
        assert stopped[-1] is new
    finally:
        release.set()
        loop.close()
