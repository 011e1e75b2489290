"""A worker's own log records in the router's log (pure).

A worker sends its `logging` records as log frames (gsmcpd.wire.frames.log_frame);
the router writes each as one line of its own log. The worker runs the user's code,
which can send anything on that socket, so nothing in a frame is trusted: each line
starts with a prefix naming the worker (so it cannot pass for the router's own), its
text is cut and escaped as the message trace is (so it stays one line), and each
worker's records pass a token bucket (so a loop of `log.error(...)` cannot flood the
log); what the bucket drops is counted and reported in one line.
"""

from __future__ import annotations

import logging

from gsmcpd.router.pacing import TokenBucket
from gsmcpd.router.trace import escape, shown_user
from gsmcpd.wire.frames import LOG_MESSAGE_CAP, cut_log_message

__all__ = ["LEVELS", "BURST", "RATE", "BadLogFrame", "TokenBucket", "LogGate",
           "parse", "label", "line", "dropped_line"]

LEVELS = {"DEBUG": logging.DEBUG, "INFO": logging.INFO, "WARNING": logging.WARNING,
          "ERROR": logging.ERROR, "CRITICAL": logging.CRITICAL}
BURST = 20       # records a worker may log at once (a failure can log a few)
RATE = 2.0       # records per second after the burst


class BadLogFrame(ValueError):
    """A log frame without a level name or a string message: a broken worker."""


def parse(frame: dict) -> tuple[int, str]:
    """(logging level number, message) of a log frame; BadLogFrame if malformed."""
    level, message = frame.get("level"), frame.get("message")
    if not isinstance(level, str) or level not in LEVELS:
        raise BadLogFrame("log frame with level %r" % (level,) if isinstance(level, str)
                          else "log frame without a level name")
    if not isinstance(message, str):
        raise BadLogFrame("log frame without a message string")
    return LEVELS[level], message


def label(pid: int, session_short: str | None = None, user: str | None = None) -> str:
    """`worker 4242 session 71ff1f5c user alice`: whose records a line carries."""
    text = "worker %d" % pid
    if session_short is not None:
        text += " session %s" % escape(session_short)
    if user is not None:
        text += " user %s" % shown_user(user)
    return text


def line(who: str, message: str, cap: int = LOG_MESSAGE_CAP) -> str:
    """`<who> logged: <message>` on one line; the cap counts characters before escaping."""
    return "%s logged: %s" % (who, escape(cut_log_message(message, cap)))


def dropped_line(who: str, count: int, burst: int = BURST, rate: float = RATE) -> str:
    return "%s: %d log record%s dropped (more than %d at once, then %g a second)" % (
        who, count, "" if count == 1 else "s", burst, rate)


class LogGate:
    """One worker's records: which to write, and how many were dropped since the last written."""

    __slots__ = ("bucket", "dropped")

    def __init__(self, now: float, rate: float = RATE, burst: int = BURST):
        self.bucket = TokenBucket(rate, burst, now)
        self.dropped = 0

    def admit(self, now: float) -> tuple[bool, int]:
        """(write this record?, records dropped before it to report now: 0 for none).
        The report rides on the next record admitted, so reports are rate-limited too."""
        if not self.bucket.take(now):
            self.dropped += 1
            return False, 0
        dropped, self.dropped = self.dropped, 0
        return True, dropped

    def take_dropped(self) -> int:
        """Dropped and not yet reported (the worker's end reports them)."""
        dropped, self.dropped = self.dropped, 0
        return dropped
