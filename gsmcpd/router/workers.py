"""Worker processes as the router sees them: start, frame channel, signals, spares.

Workers are forked by the spawner (gsmcpd.worker.spawner), itself started once
through multiprocessing's forkserver, so no worker ever inherits the listening
socket or any client socket: each receives exactly one fd, its end of the
session's socketpair. The router holds a pidfd per worker: it signals through it
(a pidfd never names a recycled pid) and learns of the worker's death from it
becoming readable, or from EOF on the frame socket, whichever comes first, and
never waits for either.
"""

import collections
import errno
import functools
import logging
import multiprocessing
import os
import signal
import socket
import threading
import time

from gsmcpd.router.connection import RECV_SIZE
from gsmcpd.router import worker_log
from gsmcpd.router.exit_status import ExitStatus
from gsmcpd.router.loop import recv_some, send_some
from gsmcpd.router.trace import shown
from gsmcpd.wire import frames
from gsmcpd.worker.reaper import has_ended

log = logging.getLogger("gsmcpd.workers")
relayed_log = logging.getLogger("gsmcpd.worker_log")   # workers' own records, prefixed

PRELOAD = ["gsmcpd.worker.forkserver_reaper", "gsmcpd.worker.preload"]
SPAWNER_TIMEOUT = 30.0  # seconds a new session waits for its worker before it is refused
SPAWNER_STOP_WAIT = 5.0  # seconds shutdown waits for a spawner still being started
SPAWNER_END_GRACE = 5.0  # seconds a spawner told to stop gets to end (its own END_WAIT is 3) before SIGKILL
SPAWNER_KILL_WAIT = 5.0  # seconds a killed spawner is waited for
# After a second stop signal: a spawner that is not stuck ends in milliseconds (it kills its
# children, and what they left, at once), so this is only how long a stuck one holds the exit.
SPAWNER_HURRIED_GRACE = 0.5
LAUNCH_POLL = 0.05       # how often shutdown looks whether a spawner's start has ended
# Characters of a bad frame's reason in the log and the session's error: the worker chose
# the frame (a log level of 256 KiB went whole into both); every fault's own words fit.
BAD_FRAME_CAP = 200
SPAWNER_HELLO_WAIT = 30.0  # seconds a started spawner may take to say hello (its first act)
FORKSERVER_END_WAIT = 1.0  # seconds a forkserver that hung up on us is given to be seen ended, at most


class SpawnerNotStarted(RuntimeError):
    """The worker spawner did not start (it, or the forkserver it is forked from, died or
    hung): the daemon's start fails (exit FAILED: it may pass when tried again); a later
    one is tried again."""


def _leave_a_deleted_directory():
    """multiprocessing hands a new process the router's working directory by name
    (os.getcwd()), which fails once that directory is deleted (the one `start` was run
    in, removed since): no spawner, and so no session, could start again. Work in /."""
    try:
        os.getcwd()
    except FileNotFoundError:
        os.chdir("/")
        log.warning("the directory this server was started in is gone: its workers now run in /")


class Spawner:
    """The router's handle on the spawner process and its control socket."""

    def __init__(self, worker_nice=0, worker_memory=None, worker_env=None, tmp_dir=None):
        self.worker_nice = worker_nice
        self.worker_memory = worker_memory
        self.worker_env = worker_env    # None: workers keep the daemon's environment
        self.tmp_dir = tmp_dir          # where each worker's own TMPDIR is made; None: none
        self.process = None
        self.pidfd = None     # stop() signals through it: the pid may be reaped and reused
        self.control = None

    def launch(self):
        _leave_a_deleted_directory()
        context = multiprocessing.get_context("forkserver")
        # Imported once in the forkserver, inherited by the spawner and shared
        # copy-on-write by every worker, so preparing a session costs no imports.
        context.set_forkserver_preload(PRELOAD)
        from gsmcpd.worker import spawner

        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            process = context.Process(target=spawner.serve, name="gsmcpd-spawner",
                                      args=(theirs, self.worker_nice, self.worker_memory, self.worker_env,
                                            self.tmp_dir))
            try:
                process.start()
            except EOFError:   # the forkserver hung up before naming the spawner: it died
                raise SpawnerNotStarted(_forkserver_died()) from None
            # Ours to end (EOF on its socket, see stop()), not multiprocessing's to
            # join at exit: a join before that EOF would wait forever.
            multiprocessing.process._children.discard(process)
            theirs.close()   # now, so that a spawner that ends before its hello is EOF here
            try:   # its first message, read before its set-up logs anything
                _send_stdio(ours)
            except (BrokenPipeError, ConnectionResetError):
                pass    # one gone already: its missing hello says so
            except OSError as error:
                # Not its fault (EMFILE, ENOBUFS): it would wait for this message all the
                # hello's wait, to be called silent. Said at once; ours closed, it ends on EOF.
                raise SpawnerNotStarted("the worker spawner did not start: cannot send it the log's "
                                   "descriptors (%s)" % error) from None
            pidfd = _hello(ours, process)
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        ours.setblocking(False)
        self.process, self.pidfd, self.control = process, pidfd, ours

    def ask(self, count):
        """Ask for `count` more spares; they arrive as messages on `control`."""
        self.control.send(b"more %d %d" % (count, os.getpid()))

    def share_stdio(self):
        """Tell the spawner to take our stdout and stderr again: a log reopened after a
        rotation points them at the new file, and every worker forked from then on
        inherits the spawner's. Never waits (the socket is non-blocking); False if the
        message could not go."""
        try:
            _send_stdio(self.control)
        except OSError as error:
            log.warning("cannot point the worker spawner at the reopened log file: %s", error)
            return False
        return True

    def hand_over(self, orphans, all_told=True):
        """Tell the spawner the dead spawners' live workers, {their pidfds: their
        directories' names, or None}, then, if these are `all_told`, to sweep: to remove
        every other worker's directory and kill every other child of the forkserver
        (gsmcpd.worker.spawner.Orphans). False if a send failed: then no sweep is asked,
        which would take a live worker's directory, and kill it."""
        from gsmcpd.worker.spawner import ORPHANS_AT_ONCE   # imported by launch() already

        items = list(orphans.items())
        try:
            for at in range(0, len(items), ORPHANS_AT_ONCE):
                batch = items[at:at + ORPHANS_AT_ONCE]
                names = [b"-" if name is None else name.encode() for _, name in batch]
                socket.send_fds(self.control, [b" ".join([b"orphans"] + names)], [pidfd for pidfd, _ in batch])
            if all_told:
                self.control.send(b"sweep")
        except OSError as error:
            log.warning("cannot tell the new worker spawner which workers still run: %s", error)
            return False
        return True

    def receive(self):
        """The next message: ("spare", (pid, pidfd, socket, its directory's name or
        None)), ("exit", (pid, exit code)),
        ("error", text), ("eof", text), or None when nothing is waiting. Descriptors that
        did not fit are closed."""
        try:
            message, fds, flags = _recv_fds(self.control, 256, 2)
        except (BlockingIOError, InterruptedError):
            return None
        except OSError as error:
            return "eof", str(error)
        if not message:
            return "eof", None
        verb, _, rest = message.partition(b" ")
        pid, _, name = rest.partition(b" ")
        if verb == b"spare" and pid.isdigit() and len(fds) == 2 and not flags & socket.MSG_CTRUNC:
            return "spare", (int(pid), fds[0], socket.socket(fileno=fds[1]),
                             name.decode("ascii", "replace") or None)
        if verb == b"exit" and not fds:
            try:
                pid, code = map(int, rest.split())
                return "exit", (pid, code)
            except ValueError:
                pass
        for fd in fds:
            os.close(fd)
        if verb == b"spare" and flags & socket.MSG_CTRUNC:
            return "error", "a spare worker arrived but this router is out of file descriptors"
        if verb != b"error":
            return "error", "unexpected message from the spawner: %r" % message[:60]
        return "error", rest.decode("utf-8", "replace")

    def stop(self, grace=SPAWNER_END_GRACE):
        """EOF on its socket ends the spawner; its workers are the router's to stop.
        Waits for it to end, killing it after `grace`."""
        pidfd = self._let_go()
        if pidfd is not None:
            try:
                if not has_ended(pidfd, grace):
                    _kill(pidfd)
                    has_ended(pidfd, SPAWNER_KILL_WAIT)
            finally:
                os.close(pidfd)

    def stop_on(self, loop, then):
        """stop() with `loop` watching it end, so the loop waits for nothing: `then()` is
        called from it once the spawner has ended (or, killed, is still not gone after
        SPAWNER_KILL_WAIT). The _SpawnerEnd watching it, or None if there was none to stop."""
        pidfd = self._let_go()
        if pidfd is None:
            then()
            return None
        return _SpawnerEnd(loop, pidfd, then)

    def _let_go(self):
        """Close our end of its socket, the EOF that ends it; its pidfd (None if none),
        the caller's to close."""
        control, pidfd = self.control, self.pidfd
        self.process = self.pidfd = self.control = None   # a second stop closes nothing
        if control is not None:
            control.close()
        return pidfd


class _SpawnerEnd:
    """A spawner told to stop, watched from the loop: its pidfd is readable once it has
    ended. Killed after SPAWNER_END_GRACE (or hurry()); given up on SPAWNER_KILL_WAIT after that."""

    def __init__(self, loop, pidfd, then):
        self.loop, self.pidfd, self.then = loop, pidfd, then
        self.killed = False
        self._why = "%gs of being told to stop" % SPAWNER_END_GRACE
        loop.add_reader(pidfd, self._ended)
        self._kill_at = loop.now + SPAWNER_END_GRACE
        self._timer = loop.call_later(SPAWNER_END_GRACE, self._overdue)

    def hurry(self):
        """A second stop signal: the rest of its grace is cut to SPAWNER_HURRIED_GRACE."""
        if self.pidfd is None or self.killed or self._kill_at <= self.loop.now + SPAWNER_HURRIED_GRACE:
            return
        self._why = "%gs of a second stop signal" % SPAWNER_HURRIED_GRACE
        self._timer.cancel()
        self._kill_at = self.loop.now + SPAWNER_HURRIED_GRACE
        self._timer = self.loop.call_later(SPAWNER_HURRIED_GRACE, self._overdue)

    def _overdue(self):
        log.warning("the worker spawner did not end within %s; killed it", self._why)
        self.killed = True
        _kill(self.pidfd)
        self._timer = self.loop.call_later(SPAWNER_KILL_WAIT, self._ended)

    def _ended(self):
        if self.pidfd is None:
            return
        self.loop.remove(self.pidfd)
        self._timer.cancel()
        os.close(self.pidfd)
        self.pidfd = None
        self.then()


def _kill(pidfd):
    try:
        signal.pidfd_send_signal(pidfd, signal.SIGKILL)
    except ProcessLookupError:
        pass     # gone already


def _send_stdio(control):
    """b"stdio" with our stdout and stderr (gsmcpd.worker.spawner); /dev/null for one
    closed, which the spawner's would otherwise stay."""
    fds = [fd if _is_open(fd) else os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC) for fd in (1, 2)]
    try:
        socket.send_fds(control, [b"stdio"], fds)
    finally:
        for fd in fds:
            if fd > 2:
                os.close(fd)


def _is_open(fd):
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def _recv_fds(sock, size, maxfds):
    """One message and the descriptors it carried, close-on-exec like every
    descriptor Python opens (socket.recv_fds drops its flags argument before 3.12)."""
    message, fds, flags, _addr = socket.recv_fds(sock, size, maxfds)
    for fd in fds:
        os.set_inheritable(fd, False)
    return message, fds, flags


def _hello(control, process):
    """The pidfd a new spawner sends of itself, its first message. A pidfd opened
    here from the pid could name a stranger, had the spawner died and been reaped
    and its pid reused; one it opened of itself cannot."""
    control.settimeout(SPAWNER_HELLO_WAIT)
    try:
        message, fds, flags = _recv_fds(control, 64, 1)
    except OSError as error:
        if process.is_alive():
            # Silent: most likely hung in its start. Its pid is its own unless it ended just
            # now and the forkserver has not told us yet; the window a pidfd closes elsewhere.
            process.kill()
        why = ("no hello within %gs" % SPAWNER_HELLO_WAIT if isinstance(error, TimeoutError)
               else "cannot read its hello (%s)" % error)
        raise SpawnerNotStarted("the worker spawner did not start: %s" % why) from None
    if message == b"hello" and len(fds) == 1 and not flags & socket.MSG_CTRUNC:
        return fds[0]
    for fd in fds:
        os.close(fd)
    why = ("it ended before saying hello" if not message else
           "unexpected first message %r" % message[:40] if message != b"hello" else
           "its hello came with more than its pidfd" if flags & socket.MSG_CTRUNC else
           "its hello came without its pidfd")
    raise SpawnerNotStarted("the worker spawner did not start: %s" % why)


def _forkserver_died():
    """Why a spawner did not start whose forkserver hung up on the router: how the
    forkserver (the router's child) ended, seen without reaping it: multiprocessing reaps
    it as it starts the next, which it does as the next spawner is started."""
    from multiprocessing import forkserver

    pid = forkserver._forkserver._forkserver_pid
    ended = None
    deadline = time.monotonic() + FORKSERVER_END_WAIT
    while pid is not None and ended is None and time.monotonic() < deadline:
        try:
            ended = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:   # reaped already: no status to tell
            break
        if ended is None:
            time.sleep(0.01)   # it hung up as it died; its end follows at once
    why = "what it wrote is in the log"
    if ended is None:
        how = "died"
    elif ended.si_code == os.CLD_EXITED:
        how = "exited with status %d" % ended.si_status
    elif ended.si_status == signal.SIGKILL:
        how, why = "was killed by SIGKILL", "a kill -9, or the kernel's OOM killer: see `journalctl -k` / dmesg"
    else:   # CLD_KILLED, CLD_DUMPED
        try:
            name = signal.Signals(ended.si_status).name
        except ValueError:
            name = "signal %d" % ended.si_status
        how = "was killed by %s" % name
    return ("the worker spawner did not start: multiprocessing's forkserver%s, which it and every worker "
            "are forked from, %s before it forked it (%s)" % ("" if pid is None else " (pid %d)" % pid, how, why))


DESCRIPTOR_HEADROOM = 16  # kept free beyond what the spares asked for will take
MAX_ASK = 16              # spares asked for in one message


def take_descriptors(count):
    """Up to `count` descriptors, as many as can be opened now (copies of stderr:
    placeholders that anyone's close frees for the next open)."""
    taken = []
    try:
        for _ in range(count):
            taken.append(os.dup(2))
    except OSError:
        pass
    return taken


def release_descriptors(fds):
    for fd in fds:
        os.close(fd)


def free_descriptors(count):
    """How many of `count` more descriptors can be opened now: a probe that takes and
    gives them back (listing /proc/self/fd cost milliseconds at 1000 sessions)."""
    taken = take_descriptors(count)
    release_descriptors(taken)
    return len(taken)


def has_descriptors(count):
    return free_descriptors(count) == count


class Worker:
    """One worker process and the router's end of its frame socket."""

    def __init__(self, loop, started):
        self.loop = loop
        self.pid, self.pidfd, self.sock, *named = started
        self.tmp_name = named[0] if named else None   # its private TMPDIR's, in the daemon's
        self.sock.setblocking(False)
        self.decoder = frames.FrameDecoder(raw_messages=True)  # replies are relayed, not parsed
        self.out = bytearray()
        self.alive = True
        self.listener = None  # object with on_worker_frame(worker, msg), on_worker_exit(worker)
        self.log_owner = None  # (session short id, user) once a session has it: its log lines say so
        self.exit = ExitStatus()   # the spawner reports it (WorkerPool)
        self._log_gate = None  # made at its first log frame
        loop.add_reader(self.pidfd, self._on_exit)  # readable once the process has exited
        self._update_interest()

    # -- frames ------------------------------------------------------------
    def send(self, message):
        return self.send_bytes(frames.encode(message))

    def send_bytes(self, data):
        if not self.alive:
            return False
        if not self.out:
            try:
                sent = send_some(self.sock, data)
            except OSError:
                self._on_exit()
                return False
            data = data[sent:]
        if data:
            self.out += data
            self._update_interest()
        return True

    def _on_writable(self):
        try:
            sent = send_some(self.sock, self.out)
        except OSError:
            self._on_exit()
            return
        del self.out[:sent]
        if not self.out:
            self._update_interest()

    def _on_readable(self):
        data = recv_some(self.sock, RECV_SIZE)
        if data is None:
            return
        if not data:
            self._on_exit()
            return
        try:
            messages = self.decoder.feed(data)
        except frames.FrameError as exc:
            self.reject(exc)
            return
        for message in messages:
            if self.listener is not None:
                self.listener.on_worker_frame(self, message)
            if not self.alive:
                return

    def reject(self, why):
        """A worker that speaks garbage is ended; the router never is."""
        why = shown(why, BAD_FRAME_CAP)
        log.error("worker %d sent a bad frame (%s); stopping it", self.pid, why)
        self.exit.stopped_for = "it sent a bad frame (%s)" % why
        self.end()

    def end(self):
        """Kill it and be done with it now, not once its exit is seen."""
        self.kill()
        self._on_exit()

    def relay_log(self, frame):
        """A log frame: one line of the router's log, prefixed with whose it is, escaped,
        within this worker's rate (gsmcpd.router.worker_log); a malformed one is a bad frame."""
        try:
            level, message = worker_log.parse(frame)
        except worker_log.BadLogFrame as error:
            self.reject(error)
            return
        now = self.loop.now
        if self._log_gate is None:
            self._log_gate = worker_log.LogGate(now)
        admitted, dropped = self._log_gate.admit(now)
        if dropped:
            relayed_log.warning(worker_log.dropped_line(self._log_label(), dropped))
        if admitted:
            relayed_log.log(level, worker_log.line(self._log_label(), message))

    def _log_label(self):
        return worker_log.label(self.pid, *(self.log_owner or ()))

    def _update_interest(self):
        if self.alive:
            self.loop.set_interest(self.sock, self._on_readable, self._on_writable if self.out else None)

    # -- signals and death ---------------------------------------------------
    def signal(self, signum):
        if self.alive:
            try:
                signal.pidfd_send_signal(self.pidfd, signum)
            except ProcessLookupError:
                pass

    def kill(self):
        # It leads its own process group (spawner): what its code started goes too. Only
        # while it lives, so the group id cannot be another's yet: not just while the loop
        # has not seen it end (`alive`), as the spawner reaps it at once and its pid may be
        # reused by then, but while its pidfd says it runs. What left the group is
        # reparented to the spawner as the worker dies, which kills it.
        if self.alive and not has_ended(self.pidfd):
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except OSError:
                pass
        self.signal(signal.SIGKILL)

    def stop(self):
        """Ask politely; the sentinel tells us when it has gone."""
        self.send({"op": "stop"})

    def _on_exit(self):
        if not self.alive:
            return
        try:
            signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)  # EOF first: make sure it is gone
        except ProcessLookupError:
            pass
        self.alive = False
        self.loop.remove(self.sock)
        self.loop.remove(self.pidfd)
        for closing in (self.sock.close, lambda: os.close(self.pidfd)):
            try:
                closing()
            except OSError:
                pass
        # Nothing to reap: the spawner is the parent, and reaps it (and kills what it left).
        if self._log_gate is not None and self._log_gate.dropped:
            relayed_log.warning(worker_log.dropped_line(self._log_label(), self._log_gate.take_dropped()))
        if self.listener is not None:
            self.listener.on_worker_exit(self)


class Claim:
    """A new session waiting for its worker: `on_worker(worker)` once it has one, or
    `on_failure(reason)` if none can be had."""

    __slots__ = ("on_worker", "on_failure", "timer")

    def __init__(self, on_worker, on_failure):
        self.on_worker = on_worker
        self.on_failure = on_failure
        self.timer = None


class WorkerPool:
    """Spare workers, forked ahead by the spawner, so opening a session does not wait
    for a fork. The router only asks for more and adopts what arrives, from its loop:
    it never forks and never waits for one (its only thread, short-lived, replaces a
    dead spawner). A session opened when no spare is ready waits as a Claim, served in
    order as spares arrive."""

    STARVED_PAUSE = 1.0  # seconds without asking after running out of descriptors or a failed fork
    KEEP_RETRY = 1.0     # seconds between tries to keep a dead spawner's worker that could not be

    def __init__(self, loop, spares, *, worker_nice=0, worker_memory=None, worker_env=None,
                 tmp_dir=None):
        self.loop = loop
        self.target = spares
        self.spares = []
        self.by_pid = {}   # this spawner's workers whose exit it has yet to report
        self.claims = collections.deque()   # sessions waiting for a worker, oldest first
        self.closed = False
        self.spawner = Spawner(worker_nice, worker_memory, worker_env, tmp_dir)
        self._asked = 0             # spares asked for and not yet arrived
        self._paused_until = 0.0
        self._relaunching = None    # why no spawner is running, while a new one is started
        self._retry = None          # the timer of the next start
        self._launcher = None       # the thread starting it
        self._adopted_at = 0.0
        self.hurried = False        # a second stop signal: the spawner's stop waits the least
        self._spawner_end = None    # the stopping spawner's watch, at shutdown's end
        # The router's: close idle client connections until `needed` descriptors are
        # free; True once they are (Router._make_room_for_workers). Asked only while a
        # claim waits.
        self.make_room = lambda needed: False
        # Descriptors held for the workers asked for after room was made, two each, so
        # clients connecting meanwhile cannot take them: freed as the spawner's next
        # messages are read (_on_spawner).
        self._held = []
        # Dead spawners' live workers, adopted by the forkserver, which kills and removes
        # nothing: copies of their pidfds and their directories' names, for each new spawner
        # to spare them and remove their directories once they have ended, and kill what they
        # leave (_hand_over_orphans); each copy is closed as its worker ends (_forget_orphan),
        # not held until the next spawner's death. Those that could not be kept (out of
        # descriptors) are tried again every second until kept or ended; meanwhile no sweep is asked.
        self._orphans = {}
        self._unkept = []            # their Workers
        self._keep_retry = None      # the timer of the next try
        self._orphans_told = False   # the current spawner was told every kept orphan
        # The router's stdio changed while no spawner could be told: the next one adopted is.
        self._stdio_changed = False

    def start(self):
        self.spawner.launch()   # before the port is bound: there is no one to keep waiting yet
        self._adopt_spawner()
        self.replenish()

    def _adopt_spawner(self):
        self._asked = 0
        self._adopted_at = self.loop.now
        self.loop.add_reader(self.spawner.control, self._on_spawner)
        self._share_changed_stdio()   # after its start sent it the old ones (on the launch thread)
        self._hand_over_orphans()

    def stdio_changed(self):
        """The router's stdout and stderr point at a new file (its log reopened): the
        spawner takes them, for the workers it forks from now on. One being started
        is told once adopted (it may have been sent the old ones)."""
        if self.closed:
            return
        self._stdio_changed = True
        if not self._relaunching and self.spawner.control is not None:
            self._share_changed_stdio()

    def _share_changed_stdio(self):
        """Tell the spawner of a change of stdio it has not been told yet: now, and again
        before each ask if a send failed (the spawner forks only when asked)."""
        if self._stdio_changed:
            self._stdio_changed = not self.spawner.share_stdio()

    def _keep_orphans(self):
        """The dead spawner's workers still running (sessions' workers: its spares end)."""
        for worker in self.by_pid.values():
            if worker.alive and worker not in self.spares:
                try:
                    self._keep_orphan(os.dup(worker.pidfd), worker.tmp_name)
                except OSError as error:
                    # Out of descriptors: no spawner can be told of it, so none may sweep (it
                    # would kill it and take its directory) until it is kept, or has ended.
                    self._unkept.append(worker)
                    log.warning("worker %d could not be kept track of: what the dead spawners' workers "
                                "leave, and their temporary directories, stay until it is or it has "
                                "ended: %s", worker.pid, error)
        if self._unkept and self._keep_retry is None:
            self._keep_retry = self.loop.call_later(self.KEEP_RETRY, self._keep_unkept)

    def _keep_unkept(self):
        """Every second while some could not be kept: keep those that can be now, forget
        those that have ended. Once none is left, the spawner told every other orphan is
        told these, and to sweep (a spawner being started is, as it is adopted)."""
        self._keep_retry = None
        if self.closed:
            return
        unkept, self._unkept, kept = self._unkept, [], {}
        for worker in unkept:
            if not worker.alive:   # it has ended (or been killed): nothing to spare
                continue
            try:
                pidfd = os.dup(worker.pidfd)
            except OSError:
                self._unkept.append(worker)
                continue
            self._keep_orphan(pidfd, worker.tmp_name)
            kept[pidfd] = worker.tmp_name
        if self._unkept:
            self._keep_retry = self.loop.call_later(self.KEEP_RETRY, self._keep_unkept)
            return
        log.warning("every live worker of the dead spawners is kept track of again: what they leave "
                    "is killed, their directories removed")
        if self._orphans_told and not self._relaunching:
            self._orphans_told = self.spawner.hand_over(kept)

    def _keep_orphan(self, pidfd, tmp_name):
        self._orphans[pidfd] = tmp_name
        self.loop.add_reader(pidfd, functools.partial(self._forget_orphan, pidfd))   # readable once it has ended

    def _forget_orphan(self, pidfd):
        """Close the copy kept of a dead spawner's worker: it has ended (nothing left to spare:
        the spawner told of it removes its directory, or the next one's sweep), or the daemon stops."""
        self.loop.remove(pidfd)
        os.close(pidfd)
        del self._orphans[pidfd]

    def _hand_over_orphans(self):
        """The new spawner spares the orphans, removes their directories as they end and
        kills what they leave, and removes every other worker's directory it finds: those of
        workers ended meanwhile. Kept here until then, in case it dies too (each is told to
        every spawner until the worker has ended)."""
        for pidfd in list(self._orphans):
            if has_ended(pidfd, 0):   # the next spawner's sweep takes its directory
                self._forget_orphan(pidfd)
        self._orphans_told = self.spawner.hand_over(self._orphans, not self._unkept)

    def _let_orphans_go(self):
        if self._keep_retry is not None:
            self._keep_retry.cancel()
            self._keep_retry = None
        self._unkept = []
        for pidfd in list(self._orphans):
            self._forget_orphan(pidfd)

    # -- replacing a dead spawner ------------------------------------------
    def _relaunch(self):
        """A new spawner, started on a short-lived thread: a start goes through the
        forkserver and waits for its answer (for its whole preload, if it has to be
        started again too), which the loop must not. Claims wait meanwhile."""
        self._retry = None
        if self.closed:
            return
        old = self.spawner
        new = Spawner(old.worker_nice, old.worker_memory, old.worker_env, old.tmp_dir)
        self.spawner = new
        if self._relaunching is None:
            self._relaunching = "the worker spawner is being restarted"

        def launch():
            try:
                old.stop(grace=0)
            except OSError as error:   # it is dead or killed either way; the new one matters
                log.warning("stopping the old worker spawner: %s", error)
            if self.closed:   # shutdown began while the old one was stopped
                return
            try:
                new.launch()
                failure = None
            except Exception as error:  # reported by the loop, which tries again
                failure = error
            if self.closed:   # shutdown began meanwhile: no loop will adopt it
                new.stop(grace=0)
                return
            self.loop.call_soon_threadsafe(lambda: self._relaunched(new, failure))

        self._launcher = threading.Thread(target=launch, name="gsmcpd-spawner-launch", daemon=True)
        try:
            self._launcher.start()
        except RuntimeError as error:   # no thread to be had now (processes or memory run out)
            self._launcher = None
            self._relaunch_failed("cannot start a thread to start it: %s" % error)

    def _relaunched(self, spawner, failure):
        self._launcher = None
        if self.closed or spawner is not self.spawner:   # not wanted any more
            spawner.stop(grace=0)
        elif failure is not None:
            self._relaunch_failed(str(failure))
        else:
            self._relaunching = None
            self._adopt_spawner()
            self.replenish()

    def _relaunch_failed(self, why):
        log.error("cannot start a new worker spawner (%s); trying again in %.0f s", why, self.STARVED_PAUSE)
        self._relaunching = "the worker spawner could not be restarted (%s)" % why
        self._retry = self.loop.call_later(self.STARVED_PAUSE, self._relaunch)

    # -- claims ------------------------------------------------------------
    def claim(self, on_worker, on_failure):
        """A worker for a new session: `on_worker(worker)` now if a spare is ready, else
        once one arrives; `on_failure(reason)` if the spawner cannot make one or none
        comes within SPAWNER_TIMEOUT. The loop never waits for a fork."""
        claim = Claim(on_worker, on_failure)
        if self.closed:
            on_failure("the server is shutting down")
            return
        self.claims.append(claim)
        self._serve_claims()
        if claim not in self.claims:
            return
        self.replenish()
        if not self._asked and not self._relaunching:
            # None on its way (asking is paused after a failure): a waiting client asks anyway.
            try:
                self._ask(1)
            except OSError as error:
                if error.errno == errno.EMFILE:
                    self._fail_claim(claim, "no worker could be started: %s" % error.strerror)
                    return
                # else the spawner is gone: its EOF starts a new one, which serves the claim
        claim.timer = self.loop.call_later(SPAWNER_TIMEOUT, lambda: self._timed_out(claim))

    def _timed_out(self, claim):
        if self._relaunching:
            self._fail_claim(claim, "no worker could be started: %s" % self._relaunching)
        else:
            self._fail_claim(claim, "the spawner sent no worker in %.0f s" % SPAWNER_TIMEOUT)

    def _serve_claims(self):
        while self.claims and self.spares:
            # The oldest first: it has surely finished starting, while the newest may
            # still be booting beside the open that would claim it.
            worker = self.spares.pop(0)
            if not worker.alive:
                continue
            claim = self.claims.popleft()
            if claim.timer is not None:
                claim.timer.cancel()
            # After this pass, once the session's first frames are on their way:
            # asking (and the descriptor probe before it) is not the open's work.
            self.loop.call_soon(self.replenish)
            claim.on_worker(worker)

    def give_back(self, worker):
        """A claimed worker whose session was refused before anything was sent to it: a
        spare again, first in line (it has started), for the next claim."""
        self.spares.insert(0, worker)
        self._serve_claims()

    def _fail_claim(self, claim, reason):
        if claim in self.claims:
            self.claims.remove(claim)
            if claim.timer is not None:
                claim.timer.cancel()
            self._hold_for(len(self._held) // 2)
            claim.on_failure(reason)

    def replenish(self):
        if self.closed or self._relaunching or self.loop.now < self._paused_until:
            return
        self.spares = [w for w in self.spares if w.alive]
        wanted = min(self.target + len(self.claims) - len(self.spares) - self._asked, MAX_ASK)
        if wanted > 0:
            try:
                self._ask(wanted)
            except OSError as error:  # starved (paused above), or the spawner is gone (EOF follows)
                log.debug("no spares asked for: %s", error)

    def _ask(self, count):
        # Those held are the asked-for workers' own: taken already, not to be free too.
        needed = DESCRIPTOR_HEADROOM + 2 * (self._asked + count) - len(self._held)
        if not has_descriptors(needed):
            # Connections are closed for room only for session opens that wait, not
            # for spares: short, ask for no more workers than there are such opens.
            count = min(count, len(self.claims))
            needed = DESCRIPTOR_HEADROOM + 2 * (self._asked + count) - len(self._held)
            if not count or not self.make_room(needed):
                self._starved("out of file descriptors")
                raise OSError(errno.EMFILE, "too few file descriptors left to take a worker")
            self._held += take_descriptors(2 * count)
        self._share_changed_stdio()   # first: the workers this ask forks inherit the new stdio
        self.spawner.ask(count)
        self._asked += count

    def _starved(self, why):
        log.warning("not starting spare workers for %.0f s: %s", self.STARVED_PAUSE, why)
        self._paused_until = self.loop.now + self.STARVED_PAUSE
        self.loop.call_later(self.STARVED_PAUSE, self.replenish)

    def _on_spawner(self):
        # What arrives now needs the held descriptors (_hold_for keeps the rest).
        held = self._release_held()
        try:
            while not self._relaunching:   # until EOF
                received = self.spawner.receive()
                if received is None:
                    return
                if not self.closed:
                    self._take(*received)
                elif not self._take_while_closed(*received):
                    return
        finally:
            self._hold_for(held)

    def _release_held(self):
        """Frees the held descriptors; how many workers they were held for."""
        held, self._held = self._held, []
        release_descriptors(held)
        return len(held) // 2

    def _hold_for(self, workers):
        """Descriptors held for up to `workers` of those still asked for while sessions
        wait for them, two each: what no waiting session needs is given back; what is
        missing is taken again (not while closing or restarting the spawner), freed in
        this loop turn, so no client can have taken it."""
        keep = 2 * min(workers, self._asked, len(self.claims))
        release_descriptors(self._held[keep:])
        del self._held[keep:]
        if not self.closed and not self._relaunching:
            self._held += take_descriptors(keep - len(self._held))

    def _take(self, kind, detail):
        """One message from the spawner."""
        if kind == "eof":
            log.error("the worker spawner is gone (%s); starting a new one", detail or "EOF")
            self.loop.remove(self.spawner.control)
            self._keep_orphans()
            self._end_orphaned_spares()
            self._no_exits_coming()
            # One that dies as soon as it starts is not restarted more than once a pause.
            self._relaunching = "the worker spawner is being restarted"
            delay = max(0.0, self._adopted_at + self.STARVED_PAUSE - self.loop.now)
            self._retry = self.loop.call_later(delay, self._relaunch)
            return
        if kind == "exit":
            pid, code = detail
            worker = self.by_pid.pop(pid, None)
            if worker is not None:
                worker.exit.report(code)
            return
        self._asked = max(0, self._asked - 1)
        if kind == "error":
            log.error("the spawner could not make a spare worker: %s", detail)
            self._starved(detail)
            if len(self.claims) > self._asked:   # fewer coming than sessions waiting for one
                self._fail_claim(self.claims[0], "no worker could be started: %s" % detail)
            return
        worker = Worker(self.loop, detail)
        # A pid is freed only by the reap this spawner reports first, on the same ordered socket.
        self.by_pid[worker.pid] = worker
        if self.closed:
            worker.kill()
            return
        worker.listener = _SpareListener(self)
        self.spares.append(worker)
        self._serve_claims()

    def _take_while_closed(self, kind, detail):
        """One message from the spawner during the stop: the statuses are still read, for the
        calls of workers dying in the stop's graces; a spare is ended, an error is moot.
        False at its EOF: no new spawner now, and whoever waits for a status is told none comes."""
        if kind == "eof":
            self.loop.remove(self.spawner.control)
            self._no_exits_coming()
            return False
        if kind != "error":
            self._take(kind, detail)
        return True

    def _end_orphaned_spares(self):
        """A dead spawner's spares are not a spawner's children any more (the forkserver
        adopted them: gsmcpd.worker.forkserver_reaper), so what one left if it died on its
        own would outlive its session. None is claimed yet: they end, and the new
        spawner's replace them."""
        spares, self.spares = self.spares, []
        if spares:
            log.warning("ending %d spare worker(s) of the dead spawner", len(spares))
        for worker in spares:
            worker.end()

    def _no_exits_coming(self):
        """The dead spawner's workers (adopted by the forkserver) are reaped by no one who
        reports: whoever waits for their status is told at once that none will come."""
        workers, self.by_pid = self.by_pid, {}
        for worker in workers.values():
            worker.exit.report(None)

    def close(self):
        self.closed = True
        self._release_held()
        self._let_orphans_go()   # their directories go with the daemon's, at its stop
        if self._retry is not None:
            self._retry.cancel()
        if self._relaunching:   # no spawner reports: a dead worker's calls are told now
            self._no_exits_coming()
        # Else the spawner is read on, for the statuses of workers dying in the stop's graces,
        # until stop_spawner (each dead worker's call waits for its status at most
        # exit_status.PATIENCE, so the stop is no longer for it).
        while self.claims:
            self._fail_claim(self.claims[0], "the server is shutting down")
        spares, self.spares = self.spares, []
        for worker in spares:
            worker.stop()
        return spares

    def stop_spawner(self, then):
        """At the end of shutdown, its workers gone: the spawner is stopped, and `then()`
        called once it has ended. The loop runs on meanwhile, never blocked (a spawner
        ends once its children have, and a stuck one is killed only after
        SPAWNER_END_GRACE). One still being started is given SPAWNER_STOP_WAIT to be,
        then left to its starting thread, which stops it once its start ends. After
        hurry(), a stuck spawner is killed SPAWNER_HURRIED_GRACE after its stop, and one
        still being started is not waited for."""
        self._stop_once_started(then, self.loop.now + SPAWNER_STOP_WAIT)

    def hurry(self):
        """A second stop signal: the spawner's stop, under way or to come, waits the least."""
        self.hurried = True
        if self._spawner_end is not None:
            self._spawner_end.hurry()

    def _stop_once_started(self, then, deadline):
        launcher = self._launcher
        if launcher is not None and launcher.is_alive():
            if self.loop.now < deadline and not self.hurried:
                self.loop.call_later(LAUNCH_POLL, functools.partial(self._stop_once_started, then, deadline))
            else:
                then()   # it stops the spawner it starts itself, once its start ends
            return
        if self.spawner.control is not None:
            self.loop.remove(self.spawner.control)
        self._no_exits_coming()   # its reports are read no more
        self._spawner_end = self.spawner.stop_on(self.loop, then)
        if self.hurried:
            self.hurry()



class _SpareListener:
    def __init__(self, pool):
        self.pool = pool

    def on_worker_frame(self, worker, message):
        if message.get("op") == "log":
            worker.relay_log(message)
        else:
            log.warning("spare worker %d sent an unexpected frame: %r", worker.pid, message)

    def on_worker_exit(self, worker):
        if worker in self.pool.spares:
            self.pool.spares.remove(worker)
