"""Ending every process a session's user code started, not only its process group.

A process the code moves out of the worker's group (`os.setsid()`, a double-forked
daemon, `Popen(..., start_new_session=True)`) would otherwise be reparented to init
and outlive its session. So every worker is a child subreaper (prctl
PR_SET_CHILD_SUBREAPER, Linux): an orphan among its descendants is reparented to the
worker, not to init, and stays one of its descendants for as long as the session
lives. When the worker ends, it kills them all (`kill_descendants`, then its group
and itself). The spawner is a subreaper too: what a worker that died on its own
(crash, OOM kill, `os._exit` in user code, SIGKILL from outside) left behind is
reparented to the spawner, which kills every child of its own that is not one of
its workers (`Sweeper`). Once a spawner is killed, its workers, and what they leave,
are the forkserver's: the next spawner kills what they leave (`kill_strays`), and the
forkserver, as it exits, all it still has (gsmcpd.worker.forkserver_reaper).

Each kill is of a process known to be a descendant at that moment, never of a pid
that may have been reused: see `kill_descendants`, `Sweeper.sweep` and `kill_strays`
for why.
This kernel may lack /proc/<pid>/task/<tid>/children (CONFIG_PROC_CHILDREN), so
children are found by reading every /proc/<pid>/stat: about 25 us a process,
spent only when there are children to find (worker) or at most a few percent of a
CPU (spawner, see Sweeper).
"""

from __future__ import annotations

import ctypes
import errno
import logging
import os
import resource
import select
import signal
import sys
import time

from gsmcpd import procstat
from gsmcpd.worker import tmpdirs

log = logging.getLogger("gsmcpd.worker")

PR_SET_CHILD_SUBREAPER = 36
END_WAIT = 2.0        # seconds a worker's end spends killing its descendants, at most
# Then, at most, for multiprocessing's resource tracker to unlink what is left and exit (its
# exit ends the wait): a niced tracker on a swamped host took up to 0.19 s, of 0.5 s before.
# END_WAIT + this stays within the router's SHUTDOWN_GRACE (3 s).
TRACKER_WAIT = 1.0
SWEEP_SHARE = 0.05    # the spawner's sweeps take at most this share of a CPU
SWEEP_RETRY = 1.0     # seconds before a sweep (or a hunt) that could not read /proc is tried again

try:
    _prctl = ctypes.CDLL(None, use_errno=True).prctl
    _prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    _prctl.restype = ctypes.c_int
except (OSError, AttributeError):   # not Linux (or no prctl in this libc)
    _prctl = None


def become_subreaper() -> str | None:
    """Make this process a child subreaper; None if it is one, else why not. Not
    inherited by a fork: each worker calls it (one system call; the function was
    looked up once, here, in the forkserver)."""
    if _prctl is None:
        return "prctl is not available (not Linux)"
    if _prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        return "prctl(PR_SET_CHILD_SUBREAPER): %s" % os.strerror(ctypes.get_errno())
    return None


def has_children() -> bool:
    """Whether this process has any child, live or zombie (one system call)."""
    try:
        os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return False
    return True


def reap() -> list[int]:
    """Reap every child that has exited; their pids."""
    reaped = []
    while True:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return reaped
        if not pid:
            return reaped
        reaped.append(pid)


def parent_of(pid: int) -> int | None:
    """The parent of a live process; None for a zombie or a process that is gone. Out of
    descriptors (procstat.SHORT) to read it, OSError: the process may be there."""
    stat = procstat.fields(pid, strict=True)
    if stat is None or procstat.gone(stat):
        return None
    return procstat.ppid(stat)


def lift_descriptor_limit() -> None:
    """Raise this process's soft RLIMIT_NOFILE to its hard limit. A session's code may have
    lowered it (resource.setrlimit) and opened files up to it; finding what it started
    opens /proc. Needs no descriptor, nor privilege (a hard limit it lowered stays)."""
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft != hard:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (OSError, ValueError):
        pass


def children(parent: int) -> list[int]:
    """The live children of `parent`, found by reading every /proc/<pid>/stat. OSError if
    /proc, or one process's stat, cannot be read for want of descriptors: then some may
    be missing."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit() and parent_of(int(name)) == parent:
            found.append(int(name))
    return found


def kill_descendants(wait: float = END_WAIT, spare: int | None = None) -> None:
    """Kill every descendant of this process (a subreaper: they are all below it)
    but the child `spare`, taking up to `wait` seconds; what is left then goes to the
    spawner when we end.

    Top down, a round at a time: kill every child; as each dies its own children are
    reparented to us (before it can be seen to have died); reap, and again, until
    there is no child. The user's threads may still run, fork and reap meanwhile, so
    a pid read from /proc is never signalled: a pidfd is opened from it first, then
    the pid checked to be a live child of ours. If the pid was reused between the
    read and the open, the pidfd names the new process, which is signalled only if
    it is our child too; if it was reused after the open, the pidfd still names the
    old, dead process, and the signal does nothing. A live child stays ours while we
    live (a parent changes only when the parent dies).

    Out of descriptors for the next pidfd (more children than descriptors free), the round
    ends at those it holds: they are killed, waited for and closed, and the next round goes
    on with the rest. Out of descriptors for /proc or for a first pidfd even so (the code
    lowered the hard limit too), it gives up, said once: nothing that needs none can tell our
    children from reused pids. What is left then is killed as the worker's group, and by the
    spawner (see Sweeper)."""
    me = os.getpid()
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        reap()
        if not has_children():
            return
        pidfds = []
        try:
            found = [pid for pid in children(me) if pid != spare]
            if spare is not None and not found:
                return                           # what a zombie or a fork under way leaves, killpg ends
            pidfds = list(_open_children(found, me))   # out of descriptors: these now, the rest next round
            _kill_all(pidfds)
            if pidfds:
                _wait_all(pidfds, deadline - time.monotonic())
            else:
                time.sleep(0.01)                 # a zombie reap() just missed, or a fork under way
        except OSError as error:
            log.warning("process %d cannot look for the processes below it (%s): a worker's are "
                        "left to its group's kill and the spawner's", me, error)
            return
        finally:
            for pidfd in pidfds:
                os.close(pidfd)


def resource_tracker() -> tuple[int, int, int] | None:
    """(pid, pidfd, our end of its pipe) of multiprocessing's resource tracker, if this
    process started one that still runs; else None. The tracker unlinks the shared
    memory and semaphores (files in /dev/shm: memory) still registered with it once
    every process holding its pipe has exited, which a SIGKILL of it would prevent."""
    module = sys.modules.get("multiprocessing.resource_tracker")
    tracker = getattr(module, "_resource_tracker", None)
    pid, fd = getattr(tracker, "_pid", None), getattr(tracker, "_fd", None)
    if not isinstance(pid, int) or not isinstance(fd, int):   # none started, or not as we know it
        return None
    try:
        pidfd = _open_child(pid, os.getpid())   # None: gone, and its pid maybe reused
    except OSError:                             # out of descriptors: not known to be ours
        return None
    return None if pidfd is None else (pid, pidfd, fd)


def let_tracker_clean(tracker: tuple[int, int, int], wait: float = TRACKER_WAIT) -> None:
    """Close our end of the resource tracker's pipe (every other holder killed by
    now) and give it up to `wait` seconds to unlink what is left and exit."""
    _pid, pidfd, fd = tracker
    try:
        os.close(fd)
        _wait_all([pidfd], wait)
    finally:
        os.close(pidfd)


def open_adopter(grandparent: int) -> tuple[int, int] | None:
    """(pid, pidfd) of this process's parent if it is a child of `grandparent`: the
    spawner's is the forkserver, the router's child, which adopts what dies under the
    spawner once the spawner is dead (gsmcpd.worker.forkserver_reaper). None if it is
    not (it has died: whoever adopted us, init maybe, has children not ours to kill)."""
    pid = os.getppid()
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:
        return None
    try:
        adopter = os.getppid() == pid and parent_of(pid) == grandparent   # the first: it died before the open
    except OSError:   # out of descriptors: not known to be
        adopter = False
    if not adopter:
        os.close(pidfd)
        return None
    return pid, pidfd


def pid_of(pidfd: int) -> int | None:
    """The pid `pidfd` names (its /proc fdinfo); None once that process is reaped, or if
    the kernel does not say."""
    try:
        with open("/proc/self/fdinfo/%d" % pidfd, "rb") as info:
            for line in info:
                if line.startswith(b"Pid:"):
                    pid = int(line.split()[1])
                    return pid if pid > 0 else None
    except (OSError, ValueError, IndexError):
        pass
    return None


def has_ended(pidfd: int, within: float = 0) -> bool:
    """Whether the process behind `pidfd` has ended, waiting up to `within` seconds (poll,
    not select: a busy router's descriptors run past select's 1024)."""
    ending = select.poll()
    ending.register(pidfd, select.POLLIN)
    return bool(ending.poll(within * 1000))


def open_group(pgid: int) -> list[int]:
    """Pidfds of the processes in group `pgid` but its leader, the caller's to close. Only
    while the leader is not reaped is its pid, and so the group's id, its own: a process found
    in the group then is one of the group's, never another's given the pid since. Those
    out of descriptors to open are left out."""
    opened = []
    try:
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) == pgid:
                continue
            stat = procstat.fields(name)
            if stat is None or procstat.pgrp(stat) != pgid:
                continue
            try:
                pidfd = _open_pidfd(int(name))
            except OSError:
                break
            if pidfd is None:
                continue
            stat = procstat.fields(name)   # its pid may have been reaped and reused before the open
            if stat is None or procstat.pgrp(stat) != pgid:
                os.close(pidfd)
            else:
                opened.append(pidfd)
    except BaseException:   # a break landing in the scan: none of the pidfds left open
        for pidfd in opened:
            os.close(pidfd)
        raise
    return opened


def reap_those(pidfds: list[int], wait: float) -> None:
    """Reap each process of `pidfds` that has ended, within `wait` seconds, as our child
    (one whose parent lives on is its parent's), and close the pidfds. Only these: never
    another child, whose status the code that started it may be waiting for."""
    try:
        _wait_all(pidfds, wait)
        for pidfd in pidfds:
            try:
                os.waitid(os.P_PIDFD, pidfd, os.WEXITED | os.WNOHANG)
            except ChildProcessError:
                pass
    finally:
        for pidfd in pidfds:
            os.close(pidfd)


def kill_strays(adopter: tuple[int, int], spared) -> dict[int, int]:
    """SIGKILL every live child of `adopter`, (pid, pidfd) of open_adopter's, whose pid
    is not in `spared`; {pidfd: pid} of each one signalled, the caller's to watch and close.

    They are not our children: the adopter may reap one, and its pid be reused, at any
    moment. So each pid read from /proc is opened as a pidfd, then checked to be a live
    child of the adopter's still, and the adopter checked to live still after that (so its
    pid named it during the checks). If the pid was reused before the open, the pidfd names
    the new process, signalled only if it is the adopter's child too; if after, the pidfd
    names the old, dead one, which the signal cannot reach. Which of the adopter's children
    may be killed is the caller's to know (the spawner's: all but itself and the orphans
    the router still has sessions on). Out of descriptors for the next pidfd (more strays
    than descriptors free), those held so far are killed and returned, the rest left to the
    next hunt, once these have ended and their pidfds are closed. Out of descriptors for
    /proc or for a first pidfd, OSError, none signalled: the caller tries again."""
    pid, pidfd = adopter
    # Out of descriptors: these now, the rest next hunt.
    found = _open_children([child for child in children(pid) if child not in spared], pid)
    if found and has_ended(pidfd):                # its pid may have named another in the checks
        for child_fd in found:
            os.close(child_fd)
        return {}
    _kill_all(found)
    return found


def _open_children(pids: list[int], parent: int) -> dict[int, int]:
    """{pidfd: pid} of those of `pids` that are live children of `parent` once opened
    (_open_child), as many as there are descriptors for: out of them with some open, the
    rest are left out (the caller's next round); with none open, OSError."""
    opened = {}
    for pid in pids:
        try:
            pidfd = _open_child(pid, parent)
        except OSError:
            if not opened:
                raise
            break
        if pidfd is not None:                     # else gone already, or its pid another's
            opened[pidfd] = pid
    return opened


def _kill_all(pidfds) -> None:
    """SIGKILL the process of each pidfd (one that has ended already: nothing to do)."""
    for pidfd in pidfds:
        try:
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        except OSError:
            pass


def _open_child(pid: int, parent: int) -> int | None:
    """A pidfd of `pid` if it is a live child of `parent` once opened; None if it is not
    (gone, or its pid another's). Out of descriptors for the pidfd or the check, OSError."""
    pidfd = _open_pidfd(pid)
    if pidfd is None:
        return None
    try:
        ours = parent_of(pid) == parent
    except OSError:
        os.close(pidfd)
        raise
    if not ours:
        os.close(pidfd)
        return None
    return pidfd


def _open_pidfd(pid: int) -> int | None:
    """A pidfd of `pid`; None if it is gone. Out of descriptors (procstat.SHORT), OSError."""
    try:
        return os.pidfd_open(pid)
    except OSError as error:
        if error.errno in procstat.SHORT:
            raise
        return None


def _wait_all(pidfds, seconds):
    """Until every process behind `pidfds` has exited, or `seconds` have passed."""
    deadline = time.monotonic() + seconds
    waiting = select.poll()
    for pidfd in pidfds:
        waiting.register(pidfd, select.POLLIN)
    left = len(pidfds)
    while left:
        timeout = deadline - time.monotonic()
        if timeout <= 0:
            return
        for pidfd, _events in waiting.poll(timeout * 1000):
            waiting.unregister(pidfd)
            left -= 1


class Shortage:
    """A spawner's look at /proc that failed for want of descriptors, tried again (every
    SWEEP_RETRY while it serves, sooner within its end's wait): said as the first try
    fails, and as one works again, not at every try."""

    def __init__(self, looking_for: str):
        self.looking_for = looking_for
        self.failing = False

    def failed(self, error: OSError) -> None:
        if not self.failing:
            self.failing = True
            log.warning("spawner: cannot look for %s (tried again until it can): %s",
                        self.looking_for, error)

    def passed(self) -> None:
        if self.failing:
            self.failing = False
            log.warning("spawner: can look for %s again", self.looking_for)


class Sweeper:
    """The spawner's side: kill every child of the spawner that is not one of its
    workers, that is, whatever a worker that died left behind, and reap them all.

    The spawner handles SIGCHLD (it does not ignore it: an ignored SIGCHLD would have
    the kernel reap its children at once), so a child of the spawner, a worker or an
    orphan it adopted, is a zombie from its exit until this thread reaps it (on its
    SIGCHLD), and its pid cannot be reused meanwhile. The spawner has one thread, which both forks workers
    (recording each pid at once) and sweeps: a pid `sweep` reads from /proc as a
    child that is not a worker therefore names that same adopted process (alive or a
    zombie) until the same thread reaps it, so the kill cannot reach anyone else, even
    though the spawner may run as root and the orphans as any user.

    A sweep follows every SIGCHLD: a worker's exit, or an adopted orphan's, whose
    children come to us in turn. Finding the orphans reads all of /proc, so the
    sweeps are spaced to take at most SWEEP_SHARE of a CPU (after a sweep of 20 ms,
    the next is at least 0.4 s later); `due()` says when the next may run.

    A worker's temporary directory (gsmcpd.worker.tmpdirs) is removed once the sweep
    that reaped it has killed what it left (which may still be writing there), by
    remove_dirs, which the spawner calls after it has sent the statuses (a big directory
    takes long), and every worker's at the end."""

    def __init__(self):
        self.workers = {}           # pid -> its temporary directory, or None
        self.unremoved = []         # temporary directories of workers reaped
        self._retried = set()
        self.exits = []             # (pid, exit code) of workers reaped, for the router
        self.pending = False
        self._next = 0.0
        self._shortage = Shortage("what ended workers left")

    def forked(self, pid: int, tmp: str | None = None) -> None:
        self.workers[pid] = tmp

    def child_exited(self) -> None:
        """A SIGCHLD: the exited are reaped now (cheap: their statuses go to the router at
        once, see take_exits); the sweep of /proc for orphans waits until due()."""
        self.pending = True
        self._reap_workers_groups_first()

    def take_exits(self) -> list[tuple[int, int]]:
        """(pid, exit code as os.waitstatus_to_exitcode gives it) of each worker reaped
        since the last call."""
        exits, self.exits = self.exits, []
        return exits

    def due(self) -> float | None:
        """Seconds until the next sweep may run (0: now); None if none is pending."""
        if not self.pending:
            return None
        return max(0.0, self._next - time.monotonic())

    def sweep(self) -> int:
        """Reap, then kill every child that is not a worker; how many were killed."""
        self.pending = False
        started = time.monotonic()
        self._reap_workers_groups_first()
        killed = 0
        me = os.getpid()
        try:
            found = children(me)
        except OSError as error:   # out of descriptors to read /proc (EMFILE): swept again later
            self._shortage.failed(error)
            self.pending, self._next = True, time.monotonic() + SWEEP_RETRY
            return 0
        self._shortage.passed()
        for pid in found:
            if pid not in self.workers:
                try:
                    os.kill(pid, signal.SIGKILL)
                    killed += 1
                except OSError as error:   # never expected: it is our unreaped child
                    if error.errno != errno.ESRCH:
                        log.warning("spawner: cannot kill orphan %d: %s", pid, error)
        took = time.monotonic() - started
        self._next = time.monotonic() + took / SWEEP_SHARE
        return killed

    def removable(self, paths: list[str]) -> None:
        """Directories of workers ended some other way (a dead spawner's), to remove
        after the next sweep, as the reaped workers' are."""
        if paths:
            self.unremoved += paths
            self.pending = True

    def remove_dirs(self) -> None:
        """After a sweep: the temporary directories of the workers reaped by then. Not
        counted in the sweeps' spacing: it is each ended worker's once, not every sweep's."""
        self._remove_dirs(final=False)

    def end(self, wakeup_fd: int, wait: float) -> None:
        """The spawner's last act: kill every child, workers too (the router is done
        with them, or gone), and what they leave us, until none is left or `wait`
        seconds have passed. Safe for the same reason as sweep."""
        deadline = time.monotonic() + wait
        me = os.getpid()
        for pid, tmp in self.workers.items():   # each unreaped, live or not: its group id is its own
            _kill_group(pid)
            if tmp is not None:
                self.unremoved.append(tmp)
        try:
            self._kill_all(me, deadline, wakeup_fd)
        finally:
            self._remove_dirs(final=True)

    def _kill_all(self, me: int, deadline: float, wakeup_fd: int) -> None:
        waiting = select.poll()
        waiting.register(wakeup_fd, select.POLLIN)
        while True:
            reap()
            if not has_children():
                return
            try:
                found = children(me)
            except OSError as error:   # out of descriptors: none killed this round, maybe the next
                self._shortage.failed(error)
                found = []
            for pid in found:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            left = deadline - time.monotonic()
            if left <= 0:
                log.warning("spawner: children still running at exit")
                return
            if waiting.poll(min(left, 0.1) * 1000):   # a SIGCHLD, or 0.1 s
                drain(wakeup_fd)

    def _reap_workers_groups_first(self) -> None:
        """Reap every child that has exited; a worker's process group is killed first,
        while its zombie still holds the group's id (no new process can take it until
        the reap): what its code started there goes at once, a fork bomb or a chain of
        hundreds included, not one generation per sweep as each is adopted in turn."""
        while True:
            try:
                exited = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                return
            if exited is None:
                return
            worker = exited.si_pid in self.workers
            if worker:
                tmp = self.workers.pop(exited.si_pid)
                _kill_group(exited.si_pid)
                if tmp is not None:
                    self.unremoved.append(tmp)
            _, status = os.waitpid(exited.si_pid, 0)     # it has exited: this does not wait
            if worker:
                self.exits.append((exited.si_pid, os.waitstatus_to_exitcode(status)))

    def _remove_dirs(self, final: bool) -> None:
        """Remove the reaped workers' directories; one that fails is tried once more, at
        a sweep of its own (what was still writing there has died by then), then left."""
        unremoved, self.unremoved = self.unremoved, []
        for path in unremoved:
            problem = tmpdirs.remove(path)
            if problem is None:
                self._retried.discard(path)
            elif final or path in self._retried:
                self._retried.discard(path)
                log.warning("spawner: a worker's temporary files stay in %s: %s", path, problem)
            else:
                self._retried.add(path)
                self.unremoved.append(path)
                self.pending = True


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass                                 # no one left in it


def drain(fd: int) -> None:
    try:
        while os.read(fd, 512):
            pass
    except (BlockingIOError, InterruptedError):
        pass
