"""The worker process: frame loop, break signals, router watchdog.

`run(sock, router_pid)` is the multiprocessing target. The worker serves one
call at a time over its frame socket (see docs/internals.md, "Router ↔ worker
frames"). Breaks are signals of the router's own (gsmcpd.wire.break_signals): the soft
one raises SoftBreak (a KeyboardInterrupt) in the tool, the hard one HardBreak; either
way the call is answered with -32001 and the worker stays usable. A break that arrives
while idle is ignored. SIGINT and SIGUSR1 keep Python's defaults for the user's code:
its own SIGINT is its own KeyboardInterrupt, its own SIGUSR1 ends the process. Between
calls the loop holds SIGINT with a handler that does nothing (see _run).
"""

from __future__ import annotations

import _signal
import _thread
import contextlib
import faulthandler
import logging
import os
import select
import signal
import socket
import sys
import threading

from gsmcpd import procstat
from gsmcpd.image import own
from gsmcpd.image.store import call_tag
from gsmcpd.raised import raised
from gsmcpd.wire import frames, jsonrpc
from gsmcpd.wire.break_signals import HARD_BREAK_SIGNAL, SOFT_BREAK_SIGNAL
from gsmcpd.wire.worker_exit import CHANNEL_LOST
from gsmcpd.worker import reaper, stderr_log, tmpdirs
from gsmcpd.worker.capture import BytesOutput
from gsmcpd.worker.memory_limit import MemoryReserve
from gsmcpd.worker.server import build_server, error_result, kernel_ties_note
from gsmcpd.worker.toolset import BREAKS, HardBreak, SoftBreak, mark_soft_break
from gsmcpd.worker.toolsets.session import UNDECIDED

__all__ = ["run", "HardBreak", "WorkerLoop"]

log = logging.getLogger("gsmcpd.worker")

WATCHDOG_INTERVAL = 3.0   # seconds between pid checks where there is no pidfd
LOG_SEND_WAIT = 1.0       # seconds a log record waits for the socket before going to stderr
RECV_SIZE = 64 * 1024  # bigger recv buffers cost an mmap/munmap per call (~25 us)


def configure_process() -> None:
    """Output and scheduling; a no-op in a fork of a process that did it already."""
    _configure_output()
    _batch_scheduling()


def run(sock: socket.socket, router_pid: int, tmp: str | None = None) -> None:
    configure_process()
    loop = WorkerLoop(sock, tmp)
    _log_to_router(loop)
    _log_off_stdio()
    loop.install_breaks()
    os.register_at_fork(after_in_child=loop.forked)
    # A bare thread: threading.Thread's bookkeeping and start handshake were two
    # thirds of this thread's cost to every new worker (80 page faults against 28),
    # and the watchdog needs none of it (it ends the process with os._exit). Its pidfd
    # is opened here, not in the thread: the worker's descriptors are then the same
    # whenever the user's code looks, however late the thread first runs.
    _thread.start_new_thread(_watch_router, (sock, router_pid, _open_pidfd(router_pid)))
    status = loop.serve()
    view = getattr(loop.server, "view", None)
    if view is not None:   # the session ends: the kernel cannot tidy what it marked in the image
        view.release_unsettled()
    # Nothing else is left to clean up that the kernel does not: skipping interpreter and
    # multiprocessing teardown frees the CPU for the sessions still running.
    logging.shutdown()
    end_process(status)


def end_process(status: int = 0) -> None:
    """Exit, taking along what the user's code started (subprocesses, forks, pools,
    daemons). The spawner made this worker the leader of its own process group, which
    they inherit, and a child subreaper, so that even one that left the group (setsid,
    a double fork) is still below us: kill every descendant (reaper.kill_descendants,
    one system call when there is none), then the group, which ends us too. What
    survives that (a fork that raced it) is reparented to the spawner, which kills it.
    multiprocessing's resource tracker, if the code started one, is spared until the
    rest are gone, so it unlinks the shared memory and semaphores they left in /dev/shm.
    Not a group leader (a worker run by the tests, a fork of the user's): just exit.
    A `status` other than 0 is for the router (worker_exit): no group kill, which would end
    us by SIGKILL; the spawner kills the group as it reaps us."""
    if os.getpgrp() == os.getpid():
        # The code may have taken every descriptor its lowered limit allows: the search
        # below, and the tracker's pidfd, need a few.
        reaper.lift_descriptor_limit()
        tracker = reaper.resource_tracker()
        reaper.kill_descendants(spare=None if tracker is None else tracker[0])
        if tracker is not None:
            reaper.let_tracker_clean(tracker)
        try:
            if status == 0:
                os.killpg(os.getpid(), signal.SIGKILL)
        except OSError:
            pass
    os._exit(status)


class WorkerLoop:
    def __init__(self, sock: socket.socket, tmp: str | None = None):
        self.sock = sock
        self.tmp = tmp                # its private temporary directory (spawner), if any
        self.sock.setblocking(True)
        self.decoder = frames.FrameDecoder()
        self.server = None
        self.in_call = False
        self._held = b""              # frames written with the next write (see prepare)
        self._writing = False         # the main thread is mid-frame: breaks wait until it is whole
        self._send_lock = threading.Lock()   # a tool's threads send progress too: a frame at a time
        self._pending_break = None
        self._unread_view = None      # reserved at prepare, read once initialize is answered
        self._view_error = None       # why it could not be read: every later call says so
        self._reading_view = None     # "call": read for the call in hand; "ahead": before any came
        self._call_in_hand = False    # its frame is here and it has not started: breaks are its
        self._break_before_start = None   # a break that landed as the call waited to start
        self.is_fork = False          # a child the user's code forked (see forked)
        self._breaks = {}             # signal -> our handler (install_breaks)
        self._code_sigint = None      # the user's code's SIGINT handler, held between calls
        self.reserve = MemoryReserve()   # room the loop gets back from each call's code

    def forked(self) -> None:
        """In a child the user's code forked: it never writes to the router, and one
        that comes back to this loop (a plain os.fork() returns twice) exits there,
        or two processes would take turns serving the session."""
        self.is_fork = True
        self.sock.close()

    # -- breaks ----------------------------------------------------------

    def install_breaks(self) -> None:
        self._breaks = {SOFT_BREAK_SIGNAL: self.break_handler(SoftBreak, "soft break"),
                        HARD_BREAK_SIGNAL: self.break_handler(HardBreak, "hard break")}
        for signum, handler in self._breaks.items():
            signal.signal(signum, handler)
        # _signal's, as each call gives it back with: signal.signal returns SIG_IGN and
        # SIG_DFL as enums, which _signal.signal refuses (an inherited SIG_IGN failed every call).
        self._code_sigint = _signal.signal(signal.SIGINT, _between_calls)
        if self._code_sigint is None:     # not set from Python: the default it would have had
            self._code_sigint = signal.default_int_handler

    def _restore_breaks(self) -> None:
        """Before each call: a previous call's code (or a library it imported) may have
        ignored, replaced or blocked the break signals, which would leave this call
        to the last step of a break, SIGKILL, and the session with it."""
        if not self._breaks:
            return                    # a loop run without them (the rehearsal, tests)
        # _signal's own functions: signal.getsignal's enum lookup raises and catches a
        # ValueError for every handler that is a function (~4 us each, on every call).
        for signum, handler in self._breaks.items():
            if _signal.getsignal(signum) is not handler:
                signal.signal(signum, handler)
        _signal.pthread_sigmask(signal.SIG_UNBLOCK, self._breaks)

    def _hold_sigint(self) -> None:
        """After a call: SIGINT to the do-nothing handler, keeping the code's to give back.
        signal.signal first runs the handlers of signals already caught, and one of them
        may raise (the code's own SIGINT, caught as the call ended: too late for it), so
        it is tried again, what was raised logged and dropped: the call's answer stands.
        Each try runs what was caught before it; only a flood sent all the while outlasts
        SWAP_TRIES, and then SIGINT keeps the code's handler, logged too. The handler
        found is the code's, unless the call never got that far (a break landed as it
        began)."""
        raised = None
        for _ in range(SWAP_TRIES):
            try:
                found = _signal.signal(signal.SIGINT, _between_calls)
            except BaseException as error:   # a handler raised; the swap did not happen
                raised = raised or error
                continue
            if found is not _between_calls:
                self._code_sigint = found
            if raised is not None:
                log.warning("a SIGINT handler raised %s as its call ended; dropped", own.NAME(type(raised)))
            return
        log.error("SIGINT kept coming as a call ended (%d tries): its handler stays the code's between "
                  "calls", SWAP_TRIES)

    def break_handler(self, exception_class, label):
        def on_signal(signum, frame):
            if not self.in_call:
                if self._breaks_waiting_call():
                    self._break_before_start = exception_class(label)
                return                # idle: nothing to break
            if exception_class is SoftBreak:
                mark_soft_break()
            if self._writing:
                self._pending_break = exception_class(label)
                return
            raise exception_class(label)
        return on_signal

    # -- frames ----------------------------------------------------------

    def serve(self) -> int:
        """Until EOF, a stop frame, or a broken frame; the status to exit with: CHANNEL_LOST
        if the socket failed (the session's code closed it), so the client is told."""
        # Wait in poll(), not in a blocking recv: a recv's wait is woken by every
        # write-space wake-up too, which the kernel sends each time the router reads
        # one of our replies; a poll for POLLIN filters those out.
        readable = select.poll()
        readable.register(self.sock.fileno(), select.POLLIN)
        while True:
            try:
                readable.poll()
                data = self.sock.recv(RECV_SIZE)
            except OSError as error:
                log.warning("worker %d: frame socket failed (%s); exiting", os.getpid(), error)
                return CHANNEL_LOST
            if not data:
                return 0              # the router closed our socket (or died)
            try:
                messages = self.decoder.feed(data)
            except frames.FrameError as error:
                log.error("worker %d: bad frame from the router (%s); exiting", os.getpid(), error)
                return 0
            try:
                for message in messages:
                    if not self.dispatch(message):
                        return 0
                self._flush()
                self._read_view()
            except OSError as error:
                log.warning("worker %d: cannot answer the router (%s); exiting", os.getpid(), error)
                return CHANNEL_LOST

    def dispatch(self, frame: dict) -> bool:
        """Act on one router frame; False means exit."""
        op = frame.get("op")
        if op == "call":
            self.call(frame.get("seq"), frame.get("message"))
        elif op == "prepare":
            self.prepare(frame.get("session") or {})
        elif op == "stop":
            return False
        else:
            log.warning("worker %d: ignoring unknown frame op %r", os.getpid(), op)
        return True

    def send(self, frame: dict) -> None:
        self._send_bytes(frames.encode(frame))

    def send_message(self, op: str, seq, message) -> bool:
        """A reply or notification frame, in the form the router relays unparsed; False
        if it was dropped (from a fork of the user's, see _send_bytes)."""
        try:
            data = jsonrpc.dumps(message)
        except UnicodeEncodeError:   # a lone surrogate the user's code made: sent as its escape
            data = jsonrpc.dumps(frames.all_carried(message))
        except (TypeError, ValueError) as error:
            raise frames.FrameError(f"not JSON: {error}") from error
        return self._send_bytes(frames.message_frame(op, seq, data))

    def _send_bytes(self, data: bytes, wait: float = -1) -> bool:
        """Write a frame from any thread; False if it did not go: from a fork of the
        user's (progress, a log record: dropped), or the socket busy past `wait`
        seconds (-1: wait as long as it takes). A broken socket raises OSError."""
        if self.is_fork:
            return False
        # Breaks land in the main thread, so only its own writes hold them back.
        in_main = threading.current_thread() is threading.main_thread()
        if not self._send_lock.acquire(timeout=wait):
            return False
        try:   # at once: nothing between the acquire and the try for a break to land on
            if self._held:
                data, self._held = self._held + data, b""
            self._writing = in_main
            try:
                self.sock.sendall(data)
            finally:
                self._writing = False
        finally:
            self._send_lock.release()
        if in_main:
            pending, self._pending_break = self._pending_break, None
            if pending is not None and self.in_call:
                raise pending
        return True

    def send_log(self, data: bytes) -> bool:
        """A log frame; False if it cannot go (see _send_bytes). It waits LOG_SEND_WAIT at
        most: a handler of the user's that logs from inside a frame write of this same
        thread must not wait forever. A broken socket is the main loop's to find."""
        try:
            return self._send_bytes(data, wait=LOG_SEND_WAIT)
        except OSError:
            return False

    # -- ops -------------------------------------------------------------

    def prepare(self, session: dict) -> None:
        try:
            if self.server is not None:
                raise ValueError("this worker is already prepared")
            if session.get("account"):
                from gsmcpd.auth.usermap import become
                _detach_stdio()
                become(session["account"])
            if session.get("read_only"):   # before any of the image's code runs in this worker
                from gsmcpd.image.store import refuse_writes
                refuse_writes()
            if self.tmp is not None:   # as the session's account: it owns it, no chown needed
                try:
                    tmpdirs.make(self.tmp)
                except OSError as error:   # the deployment's to fix (TMPDIR): said, no traceback
                    raise ValueError(tmpdirs.unmade_error(error, session.get("account"), self.tmp)) from None
            view = None
            if session.get("image"):
                from gsmcpd.image.store import (JOURNAL_LIMIT, LOCK_WAIT, ImageLockTimeout,
                                                StickyStateDirectory)
                from gsmcpd.image.view import View
                # Fixed now, read after the initialize reply (_read_view): a session
                # open waits for the lock, not for the read. (The path stays a string:
                # the store makes no Path on this path, see ImageStore.__init__.)
                try:
                    view = View.reserve(session["image"], user=session.get("user"),
                                        session_id=session.get("session_id"),
                                        lock_wait=session.get("image_lock_wait", LOCK_WAIT),
                                        journal_limit=session.get("journal_limit", JOURNAL_LIMIT))
                except (StickyStateDirectory, ImageLockTimeout) as error:
                    # The deployment's to fix (the bit, the lock's holder): said, no traceback.
                    raise ValueError(f"{type(error).__name__}: {error.strerror}") from None
                except PermissionError as error:
                    if not session.get("account"):
                        raise
                    raise ValueError(_image_refused(error, session["account"])) from None
            try:
                self.server = build_server(session, view)
            except BaseException:
                if view is not None:
                    view.close()
                raise
            self._unread_view = view
        except ValueError as error:
            self.send({"op": "prepared", "ok": False, "error": str(error)})
            return
        except Exception as error:
            log.exception("worker %d: prepare failed", os.getpid())
            self.send({"op": "prepared", "ok": False, "error": raised(error)})
            return
        # Held until the next write or the end of this read: a session's initialize
        # arrives right behind its prepare, and one write wakes the router once.
        self._held += frames.encode({"op": "prepared", "ok": True, "pid": os.getpid()})

    def _flush(self) -> None:
        if self._held:
            self._send_bytes(b"")

    def _read_view(self, reading: str = "ahead") -> None:
        """Read the view reserved at prepare: at the end of the read that brought the
        prepare (the router writes the initialize with it, so after that reply), or
        before any other call, whichever is first (`reading` "call")."""
        view, self._unread_view = self._unread_view, None
        if view is None:
            return
        self._reading_view = reading
        try:
            view.load()
        except Exception as error:
            log.exception("worker %d: cannot read the image", os.getpid())
            view.close()
            self._view_error = raised(error)
        finally:
            # A call whose frame came in a read ahead waits in the socket: a break from
            # here on is its own, though the loop has yet to take it (set before the
            # "ahead" ends, so no break finds neither).
            if reading == "ahead" and self._frame_waiting():
                self._call_in_hand = True
            self._reading_view = None

    def _breaks_waiting_call(self) -> bool:
        """Whether a break landing now (no call running) is for a call waiting to start:
        its deadline runs from when the router sent it, the view read included (a big
        image's read takes seconds). Once the loop holds the call (or a read ahead ended
        with its frame here) until its try block, it is; read ahead of any call, only if
        its frame is here: a break that came before it was an earlier call's (the
        initialize's), now over. One landing as an idle loop wakes to a frame stays
        dropped: it may be the last call's, sent as its answer left."""
        if self._call_in_hand:
            return True
        return self._reading_view == "ahead" and self._frame_waiting()

    def _frame_waiting(self) -> bool:
        try:
            return bool(select.select([self.sock], [], [], 0)[0])
        except (OSError, ValueError):
            return False

    def call(self, seq, message) -> None:
        self._call_in_hand = True     # until _run's try block: a break landing meanwhile is this call's
        if not (isinstance(message, dict) and message.get("method") == "initialize"):
            self._read_view("call")
        if self.server is None:
            reply = _error_for(message, jsonrpc.INTERNAL_ERROR, "worker not prepared")
        elif self._view_error is not None:
            reply = _error_for(message, jsonrpc.INTERNAL_ERROR,
                               f"worker could not be prepared: {self._view_error}")
        else:
            reply = self._run(seq, message)
            if self.is_fork:
                os._exit(0)
        self._call_in_hand = False    # (a call answered without _run: not prepared, no view)
        self._pending_break = self._break_before_start = None
        try:
            self.send_message("reply", seq, reply)
        except frames.FrameError as error:  # e.g. a tool's result that is not JSON, or too large
            self.send_message("reply", seq, _unsendable(message, f"the result cannot be sent: {error}"))

    def _run(self, seq, message):
        def notify(notification):
            return self.send_message("notify", seq, notification)

        view = self.server.view
        if view is not None:   # its commits are found by it if this process dies in the call
            view.call_tag = call_tag(seq)
        commits_before = view.commit_count if view is not None else 0
        undecided_before = view.undecided if view is not None else None   # a commit makes a new list
        self._restore_breaks()
        mark_soft_break(False)        # a break of an earlier call is not this one's
        self.reserve.hold()
        try:
            self.in_call = True
            self._call_in_hand = False   # second: a break from here on raises in the call itself
            try:
                # SIGINT is the code's while it runs (Python's KeyboardInterrupt, or the
                # handler the code set), and held between calls: one the code's threads or
                # children send later must not raise KeyboardInterrupt into the loop's own
                # frame writes (a frame cut short) or its wait (the session lost).
                if self._breaks:
                    _signal.signal(signal.SIGINT, self._code_sigint)
                early, self._break_before_start = self._break_before_start, None
                if early is not None:   # landed as the call waited to start (the view read, say)
                    if isinstance(early, SoftBreak):
                        mark_soft_break()
                    raise early
                return self.server.handle(message, notify)
            finally:
                self.in_call = False  # first: a break landing from here on finds the call over
                if self._breaks:
                    self._hold_sigint()
                self.reserve.release()   # before the answer is made and sent
        except BREAKS as interruption:
            text = f"request interrupted: {interruption or type(interruption).__name__}"
            if view is not None and view.commit_count > commits_before:
                text += _commits_stand(view, view.commit_count - commits_before)
            elif view is not None and view.undecided and view.undecided is not undecided_before:
                text += _commit_undecided(view)
            data = {}
            partial = getattr(interruption, "partial", None)   # see toolset.carry_partial
            if partial is not None:
                text += f"; {interruption.partial_said} in the error's data (partial)"
                data["partial"] = partial
            # What the call's re-imports did before the break stands: told here, as a
            # tool's answer tells it (server.call_tool), not left to the next answer.
            ties = view.lost_kernel_ties() if getattr(view, "kernel_ties", None) is not None else {}
            if ties:
                text += "\n" + kernel_ties_note(ties)
                data["kernelTies"] = dict(sorted(ties.items()))
            return _error_for(message, jsonrpc.REQUEST_TIMEOUT, text, data or None)
        except frames.FrameError as error:
            return _error_for(message, jsonrpc.INTERNAL_ERROR, f"cannot send a notification: {error}")
        except OSError:
            raise                     # our socket is gone: let the process end
        except BaseException as error:   # a dispatcher bug answers this call, not the whole session
            log.exception("worker %d: dispatch failed", os.getpid())
            return _error_for(message, jsonrpc.INTERNAL_ERROR, raised(error))


SWAP_TRIES = 1000   # each runs every handler caught before it: a few signals, not a flood


def _between_calls(signum, frame):
    """SIGINT's handler while no call runs: no call of the code's to interrupt. A Python
    handler, not SIG_IGN, so what a thread of the code's execs meanwhile gets the default."""


def _commits_stand(view, made: int) -> str:
    """What a break did not undo: the commits this call made before it landed."""
    if made == 1:
        told = "the commit this call made, which stands (committed"
    else:
        told = f"the {made} commits this call made, which stand (the last committed"
    return f"; it came too late to stop {told} {', '.join(view.last_commit)}; view version {view.version})"


def _commit_undecided(view) -> str:
    """A break that landed in a commit which then could not tell whether it stands (View.undecided)."""
    return f"; it broke the commit of {', '.join(view.undecided)}, and {UNDECIDED}"


def _unsendable(message, text: str):
    """The answer in place of one that cannot be sent: for a tool call, a tool error."""
    if isinstance(message, dict) and message.get("method") == "tools/call" and "id" in message:
        return jsonrpc.result(message["id"], error_result("other", text))
    return _error_for(message, jsonrpc.INTERNAL_ERROR, text)


def _error_for(message, code: int, text: str, data=None):
    """An error response for a request; None for a notification (nothing to answer)."""
    if not isinstance(message, dict) or "id" not in message:
        return None
    return jsonrpc.error(message["id"], code, text, data)


# -- router watchdog ---------------------------------------------------

def _batch_scheduling() -> None:
    """SCHED_BATCH: a woken worker does not preempt the running router. On two
    cores every call wakes a worker, and preempting the router mid-send stalled
    every other client behind one call; the worker still gets its fair CPU share.
    (A fork inherits it: the spawner sets it once for all its workers.)"""
    try:
        if os.sched_getscheduler(0) != os.SCHED_BATCH:
            os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
    except (AttributeError, OSError) as error:
        log.info("worker %d: SCHED_BATCH unavailable (%s)", os.getpid(), error)


GONE = -1   # what _open_pidfd says of a process that has exited already


def _open_pidfd(pid: int) -> int | None:
    """A pidfd of `pid`; GONE if it has exited already; None where there are no pidfds."""
    try:
        return os.pidfd_open(pid)
    except ProcessLookupError:
        return GONE
    except (AttributeError, OSError):
        return None


def _watch_router(sock: socket.socket, router_pid: int, pidfd: int | None) -> None:
    """End the worker when its router is gone, even while a tool runs.

    The kernel closes a dead router's end of the socketpair, which poll reports as
    POLLRDHUP at once; a pidfd of the router becomes readable when it exits, which
    covers a router gone while something else still holds its end of the socket.
    Neither wakes the thread until then (a thousand idle workers must not poll the
    CPU awake). Where pidfds are missing (Linux before 5.3), the router's pid is
    checked every few seconds instead.
    """
    poller = select.poll()
    poller.register(sock.fileno(), select.POLLRDHUP)
    if pidfd is None:
        while _process_exists(router_pid):
            if poller.poll(WATCHDOG_INTERVAL * 1000):
                break
    elif pidfd != GONE:
        poller.register(pidfd, select.POLLIN)
        poller.poll()
    end_process()


def _process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A dead but unreaped process still answers kill(0); it is gone all the same.
    stat = procstat.fields(pid)
    return not stat or not procstat.gone(stat)


# -- output ------------------------------------------------------------

def _image_refused(error: PermissionError, account: str) -> str:
    """Why a per-user worker cannot use the image, and the deployment's fix."""
    return (f"PermissionError: {error}; account {account} may not use the image: per-user "
            "workers need GS_MCP_IMAGE outside the daemon's state directory and group-writable "
            "by the users' accounts (README: systemd)")


def _detach_stdio() -> None:
    """Point fds 0-2 at /dev/null and let go of the log's own (_log_off_stdio): they are the
    daemon's log, and a user's code could write whole forged lines to it. (The worker's own
    log records go to the router as log frames, see _FrameLogHandler; only what cannot be
    sent so is lost.)"""
    faulthandler.disable()
    log_stream = _set_fallback_stream(sys.__stderr__)   # fd 2: /dev/null from here
    if isinstance(log_stream, _LogFile):
        log_stream.close()
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    if null > 2:
        os.close(null)


def _log_off_stdio() -> None:
    """fds 1 and 2 to /dev/null, the log kept on a descriptor of its own: a thread or
    subprocess of the user's writing there between calls wrote unbounded, unescaped bytes
    into the daemon's log (during a call they are its output: descriptors). The log's own
    descriptor takes the records the router cannot be sent, and faulthandler's dump of a
    crash (a segfault, an abort), so that one stays diagnosable."""
    log_stream = _LogFile(os.dup(2))   # not inherited
    _set_fallback_stream(log_stream)
    faulthandler.enable(file=log_stream)
    null = os.open(os.devnull, os.O_WRONLY)
    for fd in (1, 2):
        os.dup2(null, fd)
    os.close(null)


class _LogFile:
    """The log's own descriptor, as the fallback handler's stream and faulthandler's file.
    Unbuffered, and a write that fails is dropped: once the code closed the descriptor
    (os.closerange), logging's report of the error went to that same log, without end."""

    def __init__(self, fd: int):
        self.fd = fd

    def write(self, text: str) -> int:
        with contextlib.suppress(OSError):
            os.write(self.fd, text.encode("utf-8", "backslashreplace"))
        return len(text)

    def flush(self) -> None:
        pass

    def fileno(self) -> int:
        return self.fd

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)


def _set_fallback_stream(stream):
    """Where _FrameLogHandler's fallback writes from now; the stream it wrote to, or None."""
    fallback = next((handler.fallback for handler in logging.getLogger().handlers
                     if isinstance(handler, _FrameLogHandler)), None)
    if isinstance(fallback, logging.StreamHandler):
        return fallback.setStream(stream)
    return None


PARTIAL_CAP = 8192   # characters of an unended line a _LoggedStream holds before logging it


class _LoggedStream:
    """Stands in for stdout/stderr: the worker writes to its inherited streams only via logging."""

    encoding = "utf-8"
    errors = "replace"

    def __init__(self, level: int):
        self.level = level
        self._partial = ""
        self.buffer = BytesOutput(self)   # bytes a thread writes between calls, as in a call

    def write(self, text: str) -> int:
        lines = (self._partial + text).split("\n")
        self._partial = lines.pop()
        if len(self._partial) > PARTIAL_CAP:   # a progress bar redrawn with \r never ends its line
            lines.append(self._partial)
            self._partial = ""
        for line in lines:
            log.log(self.level, "output: %s", line)
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def writable(self) -> bool:
        return True


class _FrameLogHandler(logging.Handler):
    """The worker's log records, to the router as log frames: its stdio may be
    /dev/null (a per-user worker), and the router marks each line as this worker's,
    escapes it and limits its rate, which it could not do for raw writes to stderr.
    What cannot be sent (the socket is gone) goes to `fallback`, stderr."""

    _LEVEL_NAMES = ((logging.CRITICAL, "CRITICAL"), (logging.ERROR, "ERROR"),
                    (logging.WARNING, "WARNING"), (logging.INFO, "INFO"))

    def __init__(self, loop: WorkerLoop, fallback: logging.Handler | None):
        super().__init__()
        self.loop = loop
        self.fallback = fallback
        self.setFormatter(logging.Formatter("%(message)s"))   # the router adds time and level

    def emit(self, record: logging.LogRecord) -> None:
        level = self._level_name(record.levelno)
        try:
            text = self.format(record)
        except Exception as error:   # a record of the user's whose arguments do not format
            level, text = "ERROR", "cannot format a log record from %s:%s: %s" % (
                record.pathname, record.lineno, raised(error))
        if self.loop.send_log(frames.log_frame(level, text)) or self.fallback is None or self.loop.is_fork:
            return
        self.fallback.handle(logging.makeLogRecord(
            {"name": record.name, "levelno": logging.getLevelName(level), "levelname": level, "msg": text}))

    @classmethod
    def _level_name(cls, levelno: int) -> str:
        """A standard level's name (a custom level counts as the one below it)."""
        for number, name in cls._LEVEL_NAMES:
            if levelno >= number:
                return name
        return "DEBUG"


def _log_to_router(loop: WorkerLoop) -> None:
    """Route this worker's records through its frame socket; stderr is the fallback."""
    root = logging.getLogger()
    fallback = root.handlers[0] if root.handlers else None
    root.handlers = [_FrameLogHandler(loop, fallback)]


def _configure_output() -> None:
    """Logging to the real stderr, and print() to logging. Once per process tree:
    the spawner does it before it forks (it was ~150 page faults and ~1 ms of
    every new worker), and a fork inherits it; each record names its own pid."""
    if isinstance(sys.stdout, _LoggedStream):
        return
    # The real stderr, captured before sys.stderr is replaced (else logging would loop).
    stderr_log.log_to(sys.__stderr__ if sys.__stderr__ is not None else open(os.devnull, "w"))
    sys.stdout = _LoggedStream(logging.INFO)
    sys.stderr = _LoggedStream(logging.WARNING)
