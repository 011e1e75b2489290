"""The pipe between `start` and the detached `serve` it waits for (--ready-fd).

serve writes lines, then closes it: `WARNING <text>` for each warning it logs while it
starts (so `start` prints them, not only the log file), then one last line, `READY <pid>
<url>` once it listens, or `ERROR <why>` (a retry may pass) or `REFUSED <why>` (a setting
is wrong) if it does not.
"""

from __future__ import annotations

import fcntl
import logging
import os
import select
import struct
import termios
import threading
import time
from typing import Callable

from gsmcpd.exitcodes import REFUSED

log = logging.getLogger("gsmcpd.daemon")

WARNING = "WARNING "
# Bytes of a line a non-blocking write puts in the pipe whole or not at all (PIPE_BUF, 4096
# on Linux): a longer warning is cut (the log has it whole).
LONGEST_WARNING = 4000
# Bytes of the pipe no warning may take: the last line's (READY, ERROR, REFUSED).
LAST_LINE_ROOM = 4096


def failure_line(message: str, status: int) -> str:
    """The last line of a serve that does not listen."""
    return ("REFUSED " if status == REFUSED else "ERROR ") + message.replace("\n", " ")


class Reporter:
    """serve's end of the pipe; `fd` None: no `start` waits (systemd, a terminal)."""

    def __init__(self, fd: int | None):
        self.fd, self.sent = fd, fd is None
        self._lock = threading.Lock()   # a thread's warning against the last line and the close
        self._forwarder: _WarningsToStarter | None = None

    def forward_warnings(self) -> None:
        """From now until the last line, send the starter each warning this process logs.
        Never waiting: a warning the pipe has no room for (a `start` stopped with ^Z)
        is in the log only."""
        if self.fd is None or self.sent:
            return
        os.set_blocking(self.fd, False)
        self._forwarder = _WarningsToStarter(self)
        logging.getLogger().addHandler(self._forwarder)

    def ready(self, url: str) -> None:
        self._send(f"READY {os.getpid()} {url}")

    def error(self, message: str, status: int) -> None:
        self._send(failure_line(message, status))

    def warn(self, text: str) -> None:
        line = (WARNING + text.replace("\n", " ")).encode("utf-8", errors="replace")[:LONGEST_WARNING]
        with self._lock:
            if self.sent:
                return
            try:
                # Room kept for the last line: a READY the full pipe refused would leave
                # start reading EOF ("exited during startup") from a server that serves.
                if _room(self.fd) >= len(line) + 1 + LAST_LINE_ROOM:
                    os.write(self.fd, line + b"\n")
            except OSError:   # no room, or the starter is gone: the log has it
                pass

    def _send(self, line: str) -> None:
        with self._lock:
            if self.sent or self.fd is None:
                return
            self.sent = True
            if self._forwarder is not None:
                logging.getLogger().removeHandler(self._forwarder)
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
    """Each WARNING record of this process (not of a child forked meanwhile) to the
    starter. Not ERROR: a failure to start is the last line itself."""

    def __init__(self, reporter: Reporter):
        super().__init__(logging.WARNING)
        self.reporter, self.pid = reporter, os.getpid()

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno < logging.ERROR and os.getpid() == self.pid:
            try:
                self.reporter.warn(record.getMessage())
            except Exception:   # a record that will not format: the log's handler says so
                pass


def read_outcome(fd: int, timeout: float, warned: Callable[[str], None]) -> str | None:
    """start's end: hand each warning to `warned` as it comes, and return the last line
    (READY, ERROR, REFUSED; "EOF" if serve ended without one), or None after `timeout`."""
    deadline = time.monotonic() + timeout
    data = b""
    while True:
        while b"\n" in data:
            raw, data = data.split(b"\n", 1)
            line = raw.decode("utf-8", errors="replace")
            if not line.startswith(WARNING):
                return line
            warned(line[len(WARNING):])
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
