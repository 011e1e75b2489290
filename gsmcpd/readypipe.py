"""The pipe between `start` and the detached `serve` it waits for (--ready-fd).

serve writes lines, then closes it: `LOG <LEVEL> <text>` for each record of WARNING or
worse logged while it starts (so `start` prints them, not only the log file), then one
last line, `READY <pid> <url>` once it listens, or `ERROR <why>` (a retry may pass) or
`REFUSED <why>` (a setting is wrong) if it does not. Its own records as they are logged;
those of the forkserver and the spawner, other processes writing to the same log file
(their stderr), read back from that file just before the last line: those written since
forwarding began, by processes running below this one, as each line says (another daemon
may share the file), even one that has ended since.
"""

from __future__ import annotations

import fcntl
import logging
import os
import select
import stat
import struct
import termios
import threading
import time
from typing import Callable

from gsmcpd.exitcodes import REFUSED
from gsmcpd.worker.stderr_log import warnings_in

log = logging.getLogger("gsmcpd.daemon")

LOGGED = "LOG "
# Bytes of a line a non-blocking write puts in the pipe whole or not at all (PIPE_BUF, 4096
# on Linux): a longer warning is cut (the log has it whole).
LONGEST_WARNING = 4000
# Bytes of the pipe no warning may take: the last line's (READY, ERROR, REFUSED).
LAST_LINE_ROOM = 4096
# Bytes of the log file read back for the other processes' lines: a start's are a few.
OTHERS_READ = 1 << 20


def failure_line(message: str, status: int) -> str:
    """The last line of a serve that does not listen."""
    return ("REFUSED " if status == REFUSED else "ERROR ") + message.replace("\n", " ")


class Reporter:
    """serve's end of the pipe; `fd` None: no `start` waits (systemd, a terminal)."""

    def __init__(self, fd: int | None):
        self.fd, self.sent = fd, fd is None
        self._lock = threading.Lock()   # a thread's warning against the last line and the close
        self._forwarder: _WarningsToStarter | None = None
        self._log_file: int | None = None   # read from where it ended when forwarding began

    def forward_warnings(self, log_file: str | os.PathLike | None = None) -> None:
        """From now until the last line, send the starter each warning or error this
        process logs, and before the last line those the forkserver and the spawner wrote
        to `log_file` meanwhile (their stderr, as it is a detached serve's). Never waiting:
        a line the pipe has no room for (a `start` stopped with ^Z) is in the log only."""
        if self.fd is None or self.sent:
            return
        os.set_blocking(self.fd, False)
        if log_file is not None:
            try:
                self._log_file = os.open(log_file, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
                if not stat.S_ISREG(os.fstat(self._log_file).st_mode):   # a FIFO's reads are its reader's
                    raise OSError("not a regular file")
                os.lseek(self._log_file, 0, os.SEEK_END)
            except OSError:   # unreadable or no file: their lines stay where they went
                self._close_log_file()
        self._forwarder = _WarningsToStarter(self)
        logging.getLogger().addHandler(self._forwarder)

    def ready(self, url: str) -> None:
        self._send(f"READY {os.getpid()} {url}")

    def error(self, message: str, status: int) -> None:
        self._send(failure_line(message, status))

    def warn(self, text: str, level: str = "WARNING") -> None:
        with self._lock:
            if not self.sent:
                self._write_logged(level, text)

    def _write_logged(self, level: str, text: str) -> None:
        line = f"{LOGGED}{level} {text.replace(chr(10), ' ')}".encode("utf-8", errors="replace")
        line = line[:LONGEST_WARNING]
        try:
            # Room kept for the last line: a READY the full pipe refused would leave
            # start reading EOF ("exited during startup") from a server that serves.
            if _room(self.fd) >= len(line) + 1 + LAST_LINE_ROOM:
                os.write(self.fd, line + b"\n")
        except OSError:   # no room, or the starter is gone: the log has it
            pass

    def _others_logged(self) -> list[tuple[str, str]]:
        """The warnings and errors this process's own below it wrote to the log file since."""
        if self._log_file is None:
            return []
        try:
            text = os.read(self._log_file, OTHERS_READ).decode("utf-8", errors="replace")
        except OSError:
            text = ""
        self._close_log_file()
        return warnings_in(text, daemon=os.getpid())

    def _close_log_file(self) -> None:
        if self._log_file is not None:
            os.close(self._log_file)
            self._log_file = None

    def _send(self, line: str) -> None:
        with self._lock:
            if self.sent or self.fd is None:
                return
            self.sent = True
            if self._forwarder is not None:
                logging.getLogger().removeHandler(self._forwarder)
            for level, text in self._others_logged():
                self._write_logged(level, text)
            fd, self.fd = self.fd, None
            try:
                os.write(fd, (line + "\n").encode("utf-8"))
                failed = None
            except OSError as exc:  # the starter gave up waiting; keep serving regardless
                failed = exc
            finally:
                os.close(fd)
        if failed is not None:
            log.warning("could not report readiness to the starter: %s", failed)


def _room(fd: int) -> int:
    """Bytes the pipe `fd` can take now: its size less what the reader has not read."""
    unread = struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0" * 4))[0]
    return fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ) - unread


class _WarningsToStarter(logging.Handler):
    """Each record of WARNING or worse of this process (not of a child forked meanwhile)
    to the starter. A failure to start is the last line: serve sends that before it
    logs it, so it is not said twice."""

    def __init__(self, reporter: Reporter):
        super().__init__(logging.WARNING)
        self.reporter, self.pid = reporter, os.getpid()

    def emit(self, record: logging.LogRecord) -> None:
        if os.getpid() == self.pid:
            try:
                self.reporter.warn(record.getMessage(), record.levelname)
            except Exception:   # a record that will not format: the log's handler says so
                pass


def read_outcome(fd: int, timeout: float, logged: Callable[[str, str], None]) -> str | None:
    """start's end: hand each logged line to `logged` (level name, text) as it comes, and
    return the last line (READY, ERROR, REFUSED; "EOF" if serve ended without one), or
    None after `timeout`."""
    deadline = time.monotonic() + timeout
    data = b""
    while True:
        while b"\n" in data:
            raw, data = data.split(b"\n", 1)
            line = raw.decode("utf-8", errors="replace")
            if not line.startswith(LOGGED):
                return line
            level, _, text = line[len(LOGGED):].partition(" ")
            logged(level, text)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None
        readable, _, _ = select.select([fd], [], [], remaining)
        if not readable:
            return None
        chunk = os.read(fd, 4096)
        if not chunk:
            return data.decode("utf-8", errors="replace") or "EOF"
        data += chunk
