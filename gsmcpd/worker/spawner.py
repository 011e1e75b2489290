"""The spawner: the one preloaded process that forks every worker.

The router starts it once, through multiprocessing's forkserver (so it holds no
client socket and has every worker module imported, rehearsed and frozen), and
asks it for spare workers. Each worker is a `multiprocessing` fork of the
spawner: that skips the forkserver's per-start work (pickling the Process object,
unpickling it in the child, re-preparing `sys.path` and `__main__`), which was
half of a new worker's CPU and page faults. Forking here, not on a thread of the
router, also keeps the router single-threaded: it only receives finished spares.

Protocol on the control socket (SOCK_SEQPACKET: one message per send):
  router -> spawner: first, and again whenever they change (a log reopened after a
                     rotation), b"stdio" with two fds: the router's stdout and stderr, which
                     the spawner takes as its own, so every worker forked from then on
                     inherits them (it was started with the forkserver's, which a rotation
                     leaves pointing at the file rotated away)
  spawner -> router: first, b"hello" with one fd: a pidfd for the spawner itself
                     (opened by the router from the pid, it could name a stranger
                     if the spawner died and its pid was reused in between)
  router -> spawner: b"more <n> <router pid>"
  spawner -> router: per worker, b"spare <pid> <its directory's name>" with two fds: a
                     pidfd for the worker and the router's end of its frame socket (no
                     name without private temporary directories);
                     or b"error <reason>" with none, when a fork failed.
  router -> spawner: first, b"orphans <name> ..." with a pidfd for each: the live workers
                     of dead spawners (the forkserver's now) and their directories' names
                     ("-": none), in as many messages as it takes; then b"sweep": they were
                     all, so every other worker's directory in the daemon's is a dead
                     worker's, and every other child of the forkserver a stray (what a dead
                     worker left). Each directory is removed, the orphans' once their pidfds
                     say they have ended, and each stray killed (Orphans).
  spawner -> router: b"exit <pid> <code>" as it reaps a worker: its exit code as
                     os.waitstatus_to_exitcode gives it (-N: signal N), which the router
                     has no other way to learn (gsmcpd.wire.worker_exit words it).
The router signals and watches each worker through its pidfd, which can never
name a recycled pid. The spawner reaps its workers itself, on SIGCHLD, and kills
every other child it has: it is a child subreaper, so what a worker that died on its
own left running is reparented to it (gsmcpd.worker.reaper). When the router closes
its end, the spawner kills every child it still has, workers included, and exits.
"""

from __future__ import annotations

import logging
import multiprocessing
import multiprocessing.resource_tracker
import os
import resource
import select
import signal
import socket
import sys
import time

from gsmcpd.raised import raised
from gsmcpd.wire.break_signals import BREAK_SIGNALS
from gsmcpd.worker import environment
from gsmcpd.worker import main as worker_main
from gsmcpd.worker import reaper
from gsmcpd.worker import tmpdirs

ORPHANS_AT_ONCE = 200   # in one message, below the kernel's 253 descriptors (SCM_MAX_FD)
REQUEST_SIZE = 16 + ORPHANS_AT_ONCE * 20   # the longest: "orphans" and that many names
STDIO_FDS = 2   # a b"stdio" message's: stdout and stderr
MAX_BATCH = 64  # spares asked for at once; more is a confused router
END_WAIT = 3.0  # seconds the spawner's end waits for its children to die (the router waits 5)
OOM_STEP = 500  # how far above the router's oom_score_adj every worker runs (1000 at most)
OOM_SCORE_ADJ = "/proc/self/oom_score_adj"


def serve(control: socket.socket, worker_nice: int = 0, worker_memory: int | None = None,
          worker_env: tuple[str, ...] | None = None, tmp_dir: str | None = None) -> None:
    """Fork the spares asked for, until the router closes its end. Each runs
    `worker_nice` nicer than the router, and may hold `worker_memory` bytes of data
    (None: no limit of ours). Per-user workers get only the allow-listed environment
    and the `worker_env` names (None: they run as the daemon's account and keep it all).
    Each gets a private temporary directory in `tmp_dir` (None: the daemon's TMPDIR),
    which it makes when claimed, removed once it is reaped (gsmcpd.worker.tmpdirs).
    Also kills what a dead worker left (the spawner is a subreaper, see
    gsmcpd.worker.reaper), and at its end every child."""
    if worker_env is not None:
        # Before the hello: a spawner that did not scrub never forks a worker.
        environment.scrub(worker_env)
    signal.signal(signal.SIGINT, signal.SIG_IGN)    # a terminal's ^C is the router's to handle
    # A break signal's default action ends a process: every worker is born ignoring them
    # (a fork keeps dispositions) until its loop handles them, so a break sent to one still
    # starting (claimed at once, a deadline shorter than its start) cannot kill it.
    for signum in BREAK_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)
    # The router's stdio before anything is logged: set-up warnings go to the current log.
    control.setblocking(True)
    first = _read_request(control, STDIO_FDS)
    if first is None:
        return
    _take_stdio(*first)
    # SIGCHLD is handled, not ignored: the sweeper reaps, so an unreaped child's pid is
    # never reused under it (reaper.Sweeper). The handler does nothing; the wake-up
    # pipe's byte is what wakes the loop below.
    wakeup, wakeup_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(wakeup_w, warn_on_full_buffer=False)
    signal.signal(signal.SIGCHLD, _on_child)
    sweeper = reaper.Sweeper()
    not_subreaper = reaper.become_subreaper()
    # What every worker would otherwise set up for itself, done once to be inherited.
    worker_main.configure_process()
    if not_subreaper:
        logging.getLogger("gsmcpd.worker").warning(
            "what user code moves out of its worker's process group may outlive its session: %s",
            not_subreaper)
    # The spawner itself keeps the router's priority: it reports each worker's exit
    # status (which the dead worker's session waits for), forks the spares every open
    # claims and removes temporary files, and at the workers' nice it was starved under
    # load. Each worker lowers its own, once forked.
    worker_priority = _worker_priority(worker_nice)
    _offer_to_oom_killer(OOM_STEP)
    _limit_data(worker_memory)
    adopter = _forkserver()
    # The hello after the set-up: what it warns of is in the log before the router, which
    # waits for the hello, listens, so a detached serve hands it to its `start` too.
    own = os.pidfd_open(os.getpid())
    try:
        if not _send(control, b"hello", [own]):
            return
    finally:
        os.close(own)
    forking = multiprocessing.get_context("fork")
    waiting = select.poll()
    waiting.register(control, select.POLLIN)
    waiting.register(wakeup, select.POLLIN)
    orphans = Orphans(waiting, sweeper, tmp_dir, adopter)
    try:
        while True:
            due = min((due for due in (sweeper.due(), orphans.due()) if due is not None), default=None)
            ready = {fd for fd, _ in waiting.poll(None if due is None else due * 1000)}
            if wakeup in ready:
                reaper.drain(wakeup)
                sweeper.child_exited()
            orphans.ended(ready)
            # The statuses first: a dead worker's session waits for its status, at most
            # router.exit_status.PATIENCE, and a sweep reads all of /proc; the directories
            # go last, as a big one takes long (at the router's priority: one the spawner
            # waited for at the workers' would hold up every later status and spare).
            if not _report_exits(control, sweeper):
                return
            orphans.hunt()    # after the statuses too: it reads all of /proc
            if sweeper.due() == 0:
                sweeper.sweep()
                if not _report_exits(control, sweeper):
                    return
                sweeper.remove_dirs()
            if control.fileno() not in ready:
                continue
            read = _read_request(control, ORPHANS_AT_ONCE)
            if read is None:
                return
            request, fds, flags = read
            if request == b"sweep" or request.startswith(b"orphans "):
                orphans.told(request, fds, flags)
                orphans.hunt()
                continue
            if request == b"stdio":
                _take_stdio(request, fds, flags)
                continue
            for fd in fds:
                os.close(fd)
            try:
                count, router_pid = _parse(request)
            except ValueError as error:
                count, router_pid = 0, None
                _send(control, b"error %s" % str(error).encode(), [])
            for _ in range(count):
                try:
                    pid, pidfd, router_end, tmp = _fork(forking, router_pid, tmp_dir, worker_priority)
                except Exception as error:  # the router reports it; the spawner goes on
                    if not _send(control, b"error %s" % raised(error).encode(), []):
                        return
                    continue
                sweeper.forked(pid, tmp)
                named = b"" if tmp is None else b" " + os.path.basename(tmp).encode()
                try:
                    if not _send(control, b"spare %d%s" % (pid, named), [pidfd, router_end.fileno()]):
                        return
                finally:
                    os.close(pidfd)
                    router_end.close()
    finally:
        # The router is done with every worker, or gone: none may outlive this spawner
        # (its orphans would go to the forkserver, which kills them only at its exit), and
        # nor may what they leave.
        try:
            sweeper.end(wakeup, END_WAIT)
        finally:
            orphans.close()


def _read_request(control, max_fds):
    """(request, fds, flags) of the router's next message; None once the router is gone."""
    try:
        request, fds, flags, _ = socket.recv_fds(control, REQUEST_SIZE, max_fds)
    except OSError:
        return None
    return (request, fds, flags) if request else None


def _take_stdio(request, fds, flags) -> None:
    """The router's b"stdio": its stdout and stderr become ours (and so every later
    worker's). A garbled one is said and leaves them as they were."""
    try:
        if request == b"stdio" and len(fds) == STDIO_FDS and not flags & socket.MSG_CTRUNC:
            os.dup2(fds[0], 1)
            os.dup2(fds[1], 2)
        else:
            logging.getLogger("gsmcpd.worker").error(
                "spawner: bad stdio message %r with %d descriptor(s)", request[:40], len(fds))
    finally:
        for fd in fds:
            os.close(fd)


class Orphans:
    """A dead spawner's live workers, adopted by the forkserver, which reaps but neither
    kills nor removes anything: the router tells this spawner each one's pidfd and
    directory's name ("-": none), then to sweep once it has told them all. Then every
    other worker's directory in the daemon's was a dead worker's (one the dead spawner
    reaped and had not removed yet), and every other child of the forkserver but this
    spawner is a stray: what such a worker's code started, reparented to the forkserver as
    the worker died (the worker's own group, what had left it), or what the dead spawner
    left. Strays are killed at the sweep, as each orphan ends, and as each stray killed
    ends (its children are the forkserver's in turn); what is left at the daemon's stop,
    the forkserver kills as it exits. An orphan's directory goes once its pidfd says it has
    ended. While one was not told right, or while the router could not tell them all (it
    says no sweep), nothing is swept or killed."""

    def __init__(self, waiting, sweeper, tmp_dir, adopter=None):
        self.waiting, self.sweeper, self.tmp_dir = waiting, sweeper, tmp_dir
        self.adopter = adopter   # (pid, pidfd) of the forkserver (reaper.open_adopter); None: no strays killed
        self.live = {}           # pidfd -> (its worker's pid, its directory or None)
        self.strays = {}         # pidfd -> pid of each stray killed, until it has ended
        self.garbled = False
        self.complete = False    # every live orphan told: the forkserver's other children are strays
        self.hunting = False     # a stray may have come to the forkserver since the last hunt
        self._retry_at = None    # when a hunt that could not read /proc is tried again
        self._shortage = reaper.Shortage("what a dead spawner's workers left")

    def told(self, request, fds, flags) -> None:
        if request == b"sweep":
            if not self.garbled:
                self.complete = self.hunting = self.adopter is not None
                self._sweep()
            return
        names = request.decode("ascii", "replace").split()[1:]
        pids = [reaper.pid_of(pidfd) for pidfd in fds]   # None: ended, nothing to spare
        if (len(names) == len(fds) and not flags & socket.MSG_CTRUNC and all(map(self._names_one, names))
                and all(pid is not None or reaper.has_ended(pidfd) for pid, pidfd in zip(pids, fds))):
            for pidfd, pid, name in zip(fds, pids, names):
                self.live[pidfd] = (pid, None if name == "-" else os.path.join(self.tmp_dir, name))
                self.waiting.register(pidfd, select.POLLIN)
            return
        self.garbled, self.complete = True, False
        logging.getLogger("gsmcpd.worker").error("spawner: bad orphans message %r", request[:60])
        for fd in fds:
            os.close(fd)

    def _names_one(self, name):
        """Whether an orphan's `name` is "-" (it has no directory) or that of a directory."""
        return name == "-" or (self.tmp_dir is not None and tmpdirs.is_worker_dir_name(name))

    def ended(self, ready) -> None:
        """Of the pidfds `ready`, the orphans' and strays' that have ended: an orphan's
        directory is removed; what either left is the next hunt's."""
        for pidfd in ready & (self.live.keys() | self.strays.keys()):
            self.waiting.unregister(pidfd)
            os.close(pidfd)
            if pidfd in self.live:
                _, path = self.live.pop(pidfd)
                if path is not None:
                    self.sweeper.removable([path])
            else:
                del self.strays[pidfd]
            self.hunting = self.complete

    def due(self) -> float | None:
        """Seconds until a hunt that failed is tried again (0: now); None if none did, or
        if hunts have stopped since (a garbled message): a retry due at 0 would spin the poll."""
        if self._retry_at is None or not self.hunting:
            return None
        return max(0.0, self._retry_at - time.monotonic())

    def hunt(self) -> None:
        """Kill the strays, if one may have come since the last hunt (one read of /proc)."""
        # Not spaced as the Sweeper's sweeps are (SWEEP_SHARE): they follow every worker's
        # exit, a hunt only the ends seen in one wake-up of orphans and strays, which exist
        # once a spawner has died, each ending once. A read took 2.5 ms of CPU among 330
        # processes (15 ms among 2000); spaced, the strays it exists to kill would run on.
        if not self.hunting:
            return
        if self._retry_at is not None and time.monotonic() < self._retry_at:
            return   # out of descriptors at the last try: not a /proc read at every wake-up meanwhile
        self.hunting = False
        spared = {pid for pid, _ in self.live.values()} | set(self.strays.values()) | {os.getpid()}
        try:
            killed = reaper.kill_strays(self.adopter, spared)
        except OSError as error:   # out of descriptors (EMFILE): again SWEEP_RETRY later
            self._shortage.failed(error)
            self.hunting, self._retry_at = True, time.monotonic() + reaper.SWEEP_RETRY
            return
        self._shortage.passed()
        self._retry_at = None
        for pidfd, pid in killed.items():
            self.strays[pidfd] = pid
            self.waiting.register(pidfd, select.POLLIN)

    def _sweep(self) -> None:
        if self.tmp_dir is None:
            return
        keep = {path for _, path in self.live.values()} | set(self.sweeper.workers.values())
        try:
            names = os.listdir(self.tmp_dir)
        except FileNotFoundError:   # the daemon removed it: it is ending (its port in use...)
            return
        except OSError as error:
            logging.getLogger("gsmcpd.worker").warning("spawner: cannot list %s: %s", self.tmp_dir, error)
            return
        self.sweeper.removable([path for path in (os.path.join(self.tmp_dir, name) for name in names
                                                  if tmpdirs.is_worker_dir_name(name)) if path not in keep])

    def close(self) -> None:
        """At the spawner's end: those still running are the router's to stop, their
        directories the daemon's stop's to remove, and what is left then the forkserver's
        to kill as it exits (gsmcpd.worker.forkserver_reaper)."""
        for pidfd in [*self.live, *self.strays] + ([self.adopter[1]] if self.adopter else []):
            os.close(pidfd)
        self.live, self.strays, self.adopter = {}, {}, None


def _on_child(signum, frame):
    pass


def _forkserver():
    """(pid, pidfd) of the forkserver, this spawner's parent, the router's child; None
    (and said) if it cannot be had: then what a dead spawner's workers leave stays."""
    router = multiprocessing.parent_process()
    adopter = None if router is None else reaper.open_adopter(router.pid)
    if adopter is None:
        logging.getLogger("gsmcpd.worker").warning(
            "spawner: its parent is not the router's forkserver: what the workers of a killed "
            "spawner leave as they die may outlive them")
    return adopter


def _worker_priority(increment: int) -> int | None:
    """The nice value each worker takes as it starts, `increment` nicer than the
    spawner (the router's priority); None to keep the spawner's. Worked out once, and
    anything wrong said once, not by every worker.

    The one router thread carries every session's traffic; a worker runs one
    session's tools. At equal priority busy workers took the CPU from the router and
    every session waited (docs/PERFORMANCE.md). With the usual RLIMIT_NICE of 0 a
    worker's code cannot undo the step. Lowering a priority needs no privilege, so
    what could refuse it (seccomp, a security module) refuses setting the spawner's
    own again too: that is tried here."""
    if increment <= 0:
        return None
    log = logging.getLogger("gsmcpd.worker")
    ours = os.getpriority(os.PRIO_PROCESS, 0)
    try:
        os.setpriority(os.PRIO_PROCESS, 0, ours)
    except OSError as error:
        log.warning("workers run at the router's priority: cannot lower theirs (%s)", error)
        return None
    theirs = min(19, ours + increment)
    if theirs - ours < increment:
        log.warning("workers run %d nicer than the router, not %d: nice 19 is the lowest "
                    "priority", theirs - ours, increment)
    return theirs if theirs > ours else None


def _lower_priority(priority: int | None) -> None:
    """In a new worker, first: its priority, and so that of everything it starts."""
    if priority is None:
        return
    try:
        os.setpriority(os.PRIO_PROCESS, 0, priority)
    except OSError as error:   # not expected: the spawner could set its own
        logging.getLogger("gsmcpd.worker").warning(
            "worker %d runs at the router's priority: cannot lower it (%s)", os.getpid(), error)


def _offer_to_oom_killer(step: int) -> None:
    """Make this process, and so every worker and what its code starts, the kernel OOM
    killer's choice before the router: a session whose code allocates without bound
    must cost that session, not every session. Raising the value needs no privilege;
    lowering it again does (CAP_SYS_RESOURCE), so a per-user worker's code cannot undo
    it. Taken here, once, for all workers."""
    try:
        with open(OOM_SCORE_ADJ, "rb") as adj:
            before = int(adj.read())
        with open(OOM_SCORE_ADJ, "wb", buffering=0) as adj:
            adj.write(b"%d" % min(1000, before + step))
    except (OSError, ValueError) as error:
        logging.getLogger("gsmcpd.worker").warning(
            "workers are no likelier than the router to be the OOM killer's choice: cannot "
            "raise their oom_score_adj (%s)", error)


def _limit_data(limit: int | None) -> None:
    """Bound each worker's data (RLIMIT_DATA: its heap, thread stacks and private
    mappings, what Python allocates), so code allocating without bound gets a
    MemoryError in its own call long before the host runs out. Not RLIMIT_AS: glibc
    reserves 64 MiB of address space per thread that allocates, so a thread pool would
    meet an address-space limit with next to nothing in use. The hard limit too: a
    per-user worker's code cannot raise it. Set here, once, and inherited."""
    if limit is None:
        return
    hard = resource.getrlimit(resource.RLIMIT_DATA)[1]
    if hard != resource.RLIM_INFINITY and hard < limit:
        logging.getLogger("gsmcpd.worker").warning(
            "workers may hold %d bytes of data, not the %d GS_MCP_WORKER_MEMORY asks: the "
            "daemon's own hard limit (RLIMIT_DATA) is lower", hard, limit)
        limit = hard
    resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))


def _parse(request):
    verb, count, router_pid = (request.split() + [b"", b""])[:3]
    if verb != b"more" or not count.isdigit() or not router_pid.isdigit() or not 0 < int(count) <= MAX_BATCH:
        raise ValueError("bad request %r" % request[:40])
    return int(count), int(router_pid)


def _send(control, message, fds):
    try:
        socket.send_fds(control, [message], fds)
        return True
    except OSError:
        return False


def _report_exits(control, sweeper) -> bool:
    """Send the router the exit status of each worker reaped since the last report;
    False if the router is gone."""
    return all(_send(control, b"exit %d %d" % (pid, code), []) for pid, code in sweeper.take_exits())


def _fork(forking, router_pid, tmp_dir, priority=None):
    """One worker, at nice `priority` (None: the spawner's): (pid, pidfd, the router's
    end of its frame socket, its temporary directory or None)."""
    tmp = tmpdirs.worker_dir(tmp_dir) if tmp_dir is not None else None
    router_end, worker_end = socket.socketpair()
    try:
        process = forking.Process(target=_worker, name="gsmcpd-worker",
                                  args=(worker_end, router_pid, tmp, priority))
        process.start()
    except BaseException:
        router_end.close()
        raise
    finally:
        worker_end.close()
    # The spawner never joins its workers; multiprocessing would poll each one at
    # every later start (O(workers)) and keep it in memory.
    multiprocessing.process._children.discard(process)
    return process.pid, os.pidfd_open(process.pid), router_end, tmp


def _worker(sock: socket.socket, router_pid: int, tmp: str | None = None,
            priority: int | None = None) -> None:
    # At once, as a spare waiting to be claimed: nothing of a session runs before it.
    _lower_priority(priority)
    # A fork inherits the spawner's descriptors and dispositions: keep only stdio and
    # our own socket, and give tools back a normal SIGCHLD and SIGINT (subprocess needs
    # the first; SIGINT is the user's code's, the router breaks with signals of its own,
    # ignored until worker_main.run handles them). The spawner's wake-up fd first: a
    # signal with a Python handler would write to whatever reuses its number.
    signal.set_wakeup_fd(-1)
    _close_inherited(sock.fileno())
    _stdin_from_devnull()
    # A process group of its own: what the user's code starts is in it, and ends with it
    # (worker_main.end_process; the router's kill takes the group too). And a subreaper:
    # what leaves the group stays below us, not init, and ends with us too (reaper).
    os.setpgid(0, 0)
    reaper.become_subreaper()        # if it cannot be, the spawner said so once
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if tmp is not None:
        tmpdirs.use(tmp)
    worker_main.run(sock, router_pid, tmp)


def _stdin_from_devnull() -> None:
    """multiprocessing left sys.stdin reading a /dev/null descriptor of the spawner's that
    _close_inherited has just closed: the next file the code opened would take its number,
    and input() would read that file. Stdin is /dev/null at fd 0, as for a daemon's child
    (never the terminal a foreground daemon was started from): reading it is EOF."""
    null = os.open(os.devnull, os.O_RDONLY)
    if null != 0:
        os.dup2(null, 0)
        os.close(null)
    sys.stdin = sys.__stdin__ = open(0, encoding="utf-8", closefd=False)


def _close_inherited(keep: int) -> None:
    """Close every descriptor but 0-2 and `keep`, before any user code runs (or the
    switch to a user's account): the spawner's control socket, the router's end of our
    socket (else we would never see EOF), multiprocessing's pipes (the forkserver's alive
    pipe, whose write crashes it; root's resource tracker, told what to unlink at exit).
    One close_range call, cheap on the session-open path."""
    os.closerange(3, keep)
    os.closerange(keep + 1, max(keep + 1, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    # Its pipe is closed: a tool using shared memory must start a tracker of its own,
    # not write to whatever file reuses that number.
    tracker = multiprocessing.resource_tracker._resource_tracker
    tracker._fd = tracker._pid = None
