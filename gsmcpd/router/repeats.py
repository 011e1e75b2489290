"""Log lines a client can cause at will, one per request, kept from flooding the log.

A client looping on a refused request (a valid token whose user the map does not map)
would write a line per request. So such a line is written the first time, and the same
kind of line (its key: the line itself unless the caller says) coming again within
INTERVAL is held back and counted; when the interval ends one line says how many were,
and the next interval counts on. A key with nothing held back when its interval ends is
forgotten (its next line is written again); an orderly stop writes the counts still
held back (RepeatedLog.flush). At most KEYS keys are remembered: beyond, the lines of
other keys are counted together, under one line for them all, so a client cycling
through keys cannot grow the router or flood the log either.

RepeatLimit is the pure bookkeeping (the caller passes the time); RepeatedLog, the
router's one, writes through it on the loop, its timer saying the counts as intervals end.
"""

from __future__ import annotations

import logging

__all__ = ["INTERVAL", "KEYS", "RepeatLimit", "RepeatedLog", "held_line", "others_line"]

INTERVAL = 60.0   # seconds a line written holds back the lines of its key after it
KEYS = 1000       # keys remembered at once

others_log = logging.getLogger("gsmcpd.http")


def held_line(text: str, held: int, interval: float) -> str:
    return "%s (and %d more like it within %g s, not logged one by one)" % (text, held, interval)


def others_line(held: int, interval: float, keys: int) -> str:
    return ("%d more log line%s of clients' requests within %g s not logged: more than %d "
            "different ones came at once" % (held, "" if held == 1 else "s", interval, keys))


class _Window:
    __slots__ = ("until", "logger", "level", "text", "held")

    def __init__(self, until: float, logger: logging.Logger, level: int, text: str):
        self.until, self.logger, self.level, self.text, self.held = until, logger, level, text, 0


class RepeatLimit:
    """Which of the lines clients cause to write now, and what to say as intervals end."""

    def __init__(self, interval: float = INTERVAL, keys: int = KEYS):
        self.interval, self.keys = interval, keys
        self._windows: dict[object, _Window] = {}
        self._others: _Window | None = None   # the lines of keys beyond the KEYS remembered

    def admit(self, logger: logging.Logger, level: int, text: str, key: object, now: float) -> bool:
        """Write `text` now? False: held back and counted (`sweep` reports it)."""
        window = self._windows.get(key)
        if window is None and len(self._windows) < self.keys:
            self._windows[key] = _Window(now + self.interval, logger, level, text)
            return True
        if window is None:
            if self._others is None:
                self._others = _Window(now + self.interval, others_log, logging.WARNING, "")
            window = self._others
        window.held += 1
        window.level = max(window.level, level)
        return False

    def next_due(self) -> float | None:
        """When `sweep` has something to do (None: nothing remembered)."""
        windows = list(self._windows.values()) + ([self._others] if self._others else [])
        return min((window.until for window in windows), default=None)

    def sweep(self, now: float) -> list[tuple[logging.Logger, int, str]]:
        """(logger, level, line) for each key with lines held back in an interval ended by
        `now`; the keys with none held back are forgotten."""
        said = []
        for key, window in list(self._windows.items()):
            if window.until > now:
                continue
            if window.held:
                said.append((window.logger, window.level, held_line(window.text, window.held, self.interval)))
                window.until, window.held = now + self.interval, 0
            else:
                del self._windows[key]
        if self._others is not None and self._others.until <= now:
            said.append((self._others.logger, self._others.level,
                         others_line(self._others.held, self.interval, self.keys)))
            self._others = None
        return said

    def flush(self) -> list[tuple[logging.Logger, int, str]]:
        """sweep's lines for every interval still open, as if all had ended (the router
        stops: what was held back is said, not lost); everything is forgotten."""
        said = self.sweep(float("inf"))
        self._windows.clear()
        return said


class RepeatedLog:
    """The router's lines that a client can cause at will, through one RepeatLimit, on `loop`."""

    def __init__(self, loop, limit: RepeatLimit | None = None):
        self.loop = loop
        self.limit = limit or RepeatLimit()
        self._timer = None

    def log(self, logger: logging.Logger, level: int, text: str, key: object = None) -> None:
        """`key`: which lines count as the same (default the text itself): a line naming
        what the client chose afresh each time (a request id) needs one that does not."""
        if self.limit.admit(logger, level, text, text if key is None else key, self.loop.now):
            logger.log(level, "%s", text)
        self._arm()

    def _arm(self) -> None:
        if self._timer is not None:   # set for the earliest interval to end: a new one ends later
            return
        due = self.limit.next_due()
        if due is not None:
            self._timer = self.loop.call_at(due, self._sweep)

    def flush(self) -> None:
        """At an orderly stop: the counts of lines still held back, written now (a timer
        left set finds nothing to say)."""
        self._write(self.limit.flush())

    def _sweep(self) -> None:
        self._timer = None
        self._write(self.limit.sweep(self.loop.now))
        self._arm()

    @staticmethod
    def _write(said) -> None:
        for logger, level, line in said:
            logger.log(level, "%s", line)
