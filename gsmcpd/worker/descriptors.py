"""What a tool call's code writes to file descriptors 1 and 2 (os.write, a subprocess,
C code's printf): part of the call's output, as pytest's capfd takes it. For the call,
fds 1 and 2 are pipes a thread of the worker's drains into the call's Captures, which
keep their cap and count the rest: neither the worker's memory nor the daemon's log
takes what is cut. The pipes and the thread are made once, at the first call: between
calls they drain what a subprocess the code left running writes, to nowhere."""

from __future__ import annotations

import codecs
import contextlib
import fcntl
import os
import select
import struct
import termios
import threading

# At most a pipe's default 64 KiB: not enlarged (F_SETPIPE_SZ), as the kernel counts every
# pipe's size against the account's pipe-user-pages-soft, past which each new pipe of the
# account's gets 4 KiB. (C code writing more than that while it holds the GIL waits for the
# drain, which needs the GIL, until a break's signal interrupts the write.)
CHUNK = 64 * 1024

_drain = None


class DescriptorCapture:
    """`with DescriptorCapture(stdout, stderr):` fds 1 and 2 write into those Captures
    (the same one for both: one stream), restored after. What Python code prints drains
    the pipes first, so both come in the order they were written."""

    def __init__(self, stdout, stderr):
        self._sinks = {1: stdout, 2: stderr}
        self._drain = None
        self._saved: dict[int, int] = {}

    def __enter__(self):
        try:
            self._drain = _drain_for_call()
            for fd in (1, 2):
                self._saved[fd] = os.dup(fd)
        except (OSError, RuntimeError):   # no descriptor or thread left (the code's doing): uncaptured
            self._give_back()
            self._drain = None
            return self
        self._drain.start_call(self._sinks)
        return self

    def __exit__(self, *exc_info):
        self._give_back()
        if self._drain is not None:
            # The fds given back first: what the code wrote is in the pipes, and is the call's.
            self._drain.end_call()
        return False

    def _give_back(self) -> None:
        """fds 1 and 2 as they were before the call (else /dev/null: the code closed the
        copies, os.closerange); a subprocess still running writes on to the pipe."""
        for fd, saved in self._saved.items():
            try:
                os.dup2(saved, fd)
            except OSError:
                with contextlib.suppress(OSError):
                    null = os.open(os.devnull, os.O_WRONLY)
                    os.dup2(null, fd)
                    os.close(null)
            with contextlib.suppress(OSError):
                os.close(saved)
        self._saved = {}


def drain_thread() -> int | None:
    """The native id of this process's drain thread, if it has one: the worker's, never
    a thread the code started."""
    return _drain.thread_id if _drain is not None and not _drain.forked else None


def _drain_for_call() -> _Drain:
    """This process's drain, made anew if the code closed a pipe of its (os.closerange)."""
    global _drain
    if _drain is None or _drain.broken or _drain.forked:
        if _drain is not None:
            _drain.stop()
        _drain = _Drain()
    return _drain


def _forked() -> None:
    if _drain is not None:
        _drain.forked = True   # the pipes are its parent's to read, the lock may be held


os.register_at_fork(after_in_child=_forked)


class _Drain:
    """Two pipes, for fds 1 and 2, and the thread that reads them into the call's
    Captures (between calls, to nowhere)."""

    def __init__(self):
        self.forked = False
        self.broken = False    # a pipe closed by the code: made anew at the next call
        self.lock = threading.RLock()   # a signal handler's print may land mid-drain
        self.pipes: dict[int, tuple[int, int]] = {}   # fd: (read end, write end)
        self.inodes: dict[int, int] = {}              # fd: its pipe's (both ends have it)
        self.sinks: dict = {}
        self.decoders: dict = {}
        self.stopped = False
        self.thread_id = None
        try:
            for fd in (1, 2):
                read, write = os.pipe()
                self.pipes[fd] = (read, write)
                self.inodes[fd] = os.fstat(read).st_ino
                os.set_blocking(read, False)
            thread = threading.Thread(target=self._run, name="gsmcpd-fd-drain", daemon=True)
            thread.start()
        except (OSError, RuntimeError):   # no descriptor, or no thread, left
            self.stop()
            raise
        self.thread_id = thread.native_id

    def stop(self) -> None:
        """Its thread ends at its next wake-up; the ends still its own are closed (not a
        number the code closed and opened again)."""
        self.stopped = True
        if self.forked:
            return
        with self.lock:
            for fd, ends in self.pipes.items():
                for end in ends:
                    with contextlib.suppress(OSError):
                        if os.fstat(end).st_ino == self.inodes.get(fd):
                            os.close(end)
            self.pipes = {}

    def start_call(self, sinks: dict) -> None:
        with self.lock:
            self.pump()   # what a subprocess wrote between calls, not yet drained, is nobody's
            self.sinks = sinks
            self.decoders = {fd: codecs.getincrementaldecoder("utf-8")("backslashreplace").decode
                             for fd in sinks}
            for fd, (_, write) in self.pipes.items():
                os.dup2(write, fd)   # inheritable: a subprocess writes here too
            for sink in sinks.values():
                sink.before_write = self.pump

    def end_call(self) -> None:
        with self.lock:
            self.pump()
            for fd, sink in self.sinks.items():
                sink.before_write = None
                sink.keep(self.decoders[fd](b"", final=True))
            self.sinks, self.decoders = {}, {}

    def _run(self) -> None:
        poller = select.poll()
        for read, _ in self.pipes.values():
            poller.register(read, select.POLLIN)
        while not self.stopped:
            for fd, events in poller.poll():
                if not events & select.POLLIN:   # closed by the code
                    self.broken = True
                    return
            self.pump()

    def pump(self) -> None:
        """Everything the pipes hold now, into the call's Captures (between calls, nowhere)."""
        if self.forked:
            return
        with self.lock:
            for fd, (read, _) in self.pipes.items():
                sink, decode = self.sinks.get(fd), self.decoders.get(fd)
                # As much as the pipe holds, asked first: a read allocates all it may
                # read, and every print of the code's drains (with its memory full, too).
                while (held := _held(read)) > 0:
                    try:
                        data = os.read(read, min(held, CHUNK))
                    except OSError:
                        break
                    if sink is not None:
                        sink.keep(decode(data))


def _held(read: int) -> int:
    """Bytes pipe `read` holds now; 0 if it is closed (the code's os.closerange)."""
    try:
        return struct.unpack("i", fcntl.ioctl(read, termios.FIONREAD, b"\0\0\0\0"))[0]
    except OSError:
        return 0
