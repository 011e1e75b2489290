"""The daemon's log file: created private, written a whole line at a time, and never
silent about lines it cannot take.

A file can open and seek yet refuse every write (/dev/full, a full filesystem, a file
at its size limit). `open_for_appending` finds that writing nothing, so `check` and
`serve` name it before serving. A file that starts refusing later costs its lines,
never the server: the first refusal is said once on stderr (unless stderr is that same
file), `gsmcpd status` shows it for as long as it lasts (log_file_refusal), and the first
line the file takes again is a warning saying since when and how many lines were lost.
A file removed while open (its directory too) takes every line and shows none, its space
never freed: `gsmcpd status` shows that too (log_file_removed), until a SIGHUP reopens it.
"""

from __future__ import annotations

import errno
import logging
import os
import stat
import sys
import time
from pathlib import Path


class RefusesWrites(OSError):
    """A log file that opens but would refuse the lines written to it."""


def open_for_appending(path: str | Path, *, create: bool = True, nonblocking: bool = False) -> int:
    """A descriptor appending to `path`, made 0600 if missing; OSError when it cannot be
    opened or seeked to its end (a file under /proc), RefusesWrites when it opens but
    would refuse writes. nonblocking: a FIFO with no reader fails (ENXIO) instead of waiting."""
    flags = os.O_WRONLY | os.O_APPEND | (os.O_NONBLOCK if nonblocking else 0)
    fd = open_private(path, flags) if create else os.open(path, flags)
    try:
        try:
            os.lseek(fd, 0, os.SEEK_END)   # as open(path, "a") does
        except OSError as exc:
            if exc.errno != errno.ESPIPE:  # a FIFO or a terminal: nothing to seek
                raise
        refusal = write_refusal(fd)
        if refusal is not None:
            raise RefusesWrites(refusal.errno, refusal.strerror, str(path))
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_private(path: str | Path, flags: int) -> int:
    """`path` opened with `flags`, created 0600 whatever the umask when missing (open's mode
    is cut by it: 0400 under umask 0277, which a reopen could not write); a file already
    there, or a link to one, is opened as it is and keeps the mode its owner gave it. A
    link to nothing yet has its target made as `path` would be (O_EXCL never follows a
    link: O_CREAT alone made that target with the umask's mode)."""
    try:
        fd = os.open(path, flags | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        try:
            return os.open(path, flags)
        except FileNotFoundError:   # a dangling link (else made meanwhile and gone: as for a new file)
            return open_private(os.path.realpath(path), flags)
    try:
        os.fchmod(fd, 0o600)
    except BaseException:
        os.close(fd)
        raise
    return fd


def write_refusal(fd: int) -> OSError | None:
    """Why writes to `fd` would fail, found writing nothing. A device that refuses every
    write (/dev/full) refuses an empty one too; a regular file on a filesystem with no
    block left takes at most what fits in its last block."""
    try:
        os.write(fd, b"")
    except OSError as exc:
        return exc
    if stat.S_ISREG(os.fstat(fd).st_mode) and no_space_left(fd):
        return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    return None


def no_space_left(target: int | str | Path) -> bool:
    """Whether the filesystem holding `target` (a descriptor or a path) has no block left
    for this account (root may use the blocks kept back for it)."""
    fs = os.statvfs(target)
    free = fs.f_bfree if os.geteuid() == 0 else fs.f_bavail
    return fs.f_blocks > 0 and free == 0   # /proc and its kind count no blocks at all


class LineStream:
    """A log handler's stream that writes each line whole, at once, or raises. A buffered
    stream keeps a refused line and writes it later, after lines logged since, or half of
    it; this one keeps nothing, so what is lost is known."""

    def __init__(self, fd: int, encoding: str = "utf-8", errors: str = "strict"):
        self.fd, self.encoding, self.errors = fd, encoding, errors
        self._cut = False   # the file ends inside a line it took only part of

    def fileno(self) -> int:
        return self.fd

    def write(self, text: str) -> None:
        data = text.encode(self.encoding, self.errors)
        if self._cut:   # the next line must not run on from the part already written
            data = b"\n" + data
        written = 0
        try:
            while written < len(data):
                written += os.write(self.fd, data[written:])
        finally:
            if written:
                self._cut = data[written - 1:written] != b"\n"

    def flush(self) -> None:
        pass

    def close(self) -> None:
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            os.close(fd)


class _Refusal:
    def __init__(self, reason: str):
        self.since, self.reason, self.lost = time.time(), reason, 0


def local_time(seconds: float) -> str:
    """A time as the log's lines and notes give it."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(seconds))


def log_file_refusal() -> dict | None:
    """The process's log file refusing writes now, as PrivateFileHandler.refusal says it;
    None if it takes them (or the process logs elsewhere)."""
    for handler in logging.getLogger().handlers:
        if isinstance(handler, PrivateFileHandler) and (refusal := handler.refusal()) is not None:
            return refusal
    return None


def log_file_removed() -> str | None:
    """The process's log file's path if the file it writes to has been removed (no path
    names it any more: its lines reach no one), else None."""
    for handler in logging.getLogger().handlers:
        if isinstance(handler, PrivateFileHandler) and handler.removed():
            return handler.baseFilename
    return None


class PrivateFileHandler(logging.FileHandler):
    """The log file: created 0600 whatever the umask (and on every reopen), as it holds
    user names and, with the message trace on, every argument every client sent; a file
    already there keeps the mode its owner gave it. Lines it refuses are counted and
    reported as the module says."""

    def __init__(self, filename: str | Path, encoding: str = "utf-8"):
        self._refusal: _Refusal | None = None
        super().__init__(filename, encoding=encoding)

    def _open(self) -> LineStream:
        # A lone surrogate (a path's byte that is not UTF-8, read from the environment) is
        # written escaped, as sys.stderr writes it: strict made the line a logging traceback.
        return LineStream(open_for_appending(self.baseFilename), self.encoding or "utf-8",
                          self.errors or "backslashreplace")

    def refusal(self) -> dict | None:
        """While the file refuses writes (until it takes a line again): the file, since when
        (seconds since the epoch), why, and the lines lost so far; None while it takes them.
        A detached daemon has no stderr to say it on: `gsmcpd status` shows this."""
        refusal = self._refusal
        if refusal is None:
            return None
        return {"file": self.baseFilename, "since": refusal.since, "reason": refusal.reason,
                "lines_lost": refusal.lost}

    def removed(self) -> bool:
        """Whether the open file has no name left (removed, or its directory): what it
        takes, no one reads."""
        try:
            return os.fstat(self.stream.fileno()).st_nlink == 0
        except (OSError, AttributeError, ValueError):   # not open (yet), or closed
            return False

    def emit(self, record: logging.LogRecord) -> None:
        if self._refusal is not None and not self._wrote_resumed_note():
            self._refusal.lost += 1
            return
        super().emit(record)

    def handleError(self, record: logging.LogRecord) -> None:
        error = sys.exc_info()[1]
        if not isinstance(error, OSError):
            super().handleError(record)   # a message that cannot be formatted: its traceback
            return
        if self._refusal is None:
            self._refusal = _Refusal(error.strerror or str(error))
            self._tell_stderr(f"gsmcpd: cannot write to the log file {self.baseFilename}: "
                              f"{self._refusal.reason}; serving on, its lines lost until it takes "
                              "writes again (its first line then says how many)\n")
        self._refusal.lost += 1

    def _wrote_resumed_note(self) -> bool:
        refusal = self._refusal
        since = local_time(refusal.since)
        note = logging.LogRecord(__name__, logging.WARNING, __file__, 0,
                                 "the log file refused writes from %s until now (%s): %d line(s) lost",
                                 (since, refusal.reason, refusal.lost), None)
        try:
            self.stream.write(self.format(note) + self.terminator)
        except OSError:
            return False
        self._refusal = None
        return True

    def _tell_stderr(self, text: str) -> None:
        """Once per spell of refusals; not when stderr is the log file itself (a detached
        daemon's), which would refuse it too."""
        try:
            mine, stderr = os.fstat(self.stream.fileno()), os.fstat(2)
            if (mine.st_dev, mine.st_ino) != (stderr.st_dev, stderr.st_ino):
                os.write(2, text.encode("utf-8", "backslashreplace"))
        except (OSError, AttributeError, ValueError):   # no stderr, or the stream closed
            pass
