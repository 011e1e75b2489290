"""Rate bounds for what a worker sends the router (pure: the caller passes the time).

A worker runs the user's code, which can send frames in a tight loop; the router is
shared, so it bounds how many it passes on. TokenBucket is the budget; Pacer applies
it to one call's notifications (progress), which MCP lets a sender thin out: one
over the rate is held as the latest pending, replaced by any newer one, and sent when
the budget allows or as the call ends, so the client's last progress is never lost.
"""

from __future__ import annotations

__all__ = ["TokenBucket", "Pacer", "NOTIFY_RATE", "NOTIFY_BURST"]

# A progress bar needs no more than a screen refresh or so; the burst passes the few
# steps a short call reports at once (a test class's handful) untouched.
NOTIFY_RATE = 10.0   # notifications a second, per call, after the burst
NOTIFY_BURST = 10    # notifications a call may send at once


class TokenBucket:
    """`burst` tokens, refilled at `rate` a second; `take(now)` spends one if it can."""

    __slots__ = ("rate", "burst", "tokens", "last")

    def __init__(self, rate: float, burst: int, now: float):
        self.rate, self.burst = rate, burst
        self.tokens = float(burst)
        self.last = now

    def _refill(self, now: float) -> None:
        if now > self.last:   # a clock that stepped back refills nothing
            self.tokens = min(self.burst, self.tokens + (now - self.last) * self.rate)
            self.last = now

    def take(self, now: float) -> bool:
        self._refill(now)
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False

    def delay(self, now: float) -> float:
        """Seconds from `now` until a token is there (0: one is)."""
        self._refill(now)
        return max(0.0, (1.0 - self.tokens) / self.rate)


class Pacer:
    """One call's notifications: which to send now, which to hold.

    offer() answers (message to send now or None, seconds after which to call due(),
    or None when no new wake-up is needed: one is already set whenever a message is
    pending). flush() as the call ends gives the pending one, whatever the budget."""

    __slots__ = ("bucket", "pending")

    def __init__(self, now: float, rate: float = NOTIFY_RATE, burst: int = NOTIFY_BURST):
        self.bucket = TokenBucket(rate, burst, now)
        self.pending = None

    def offer(self, message, now: float):
        if self.pending is None:
            if self.bucket.take(now):
                return message, None
            self.pending = message
            return None, self.bucket.delay(now)
        self.pending = message   # the newer one wins; the wake-up already set sends it
        return None, None

    def due(self, now: float):
        """The wake-up came: (the pending message now, or None; a new delay, or None)."""
        if self.pending is None:
            return None, None
        if self.bucket.take(now):
            message, self.pending = self.pending, None
            return message, None
        return None, self.bucket.delay(now)   # early (a coarse clock): wait again

    def flush(self):
        """The call ends: the pending message, to send before its reply (or None)."""
        message, self.pending = self.pending, None
        return message
