"""Giving the router's freed heap back to the system: glibc's malloc_trim(0), now and then.

What a session allocated in the router is freed when it ends, but glibc keeps the freed
memory (holes between blocks still live) for reuse: after a load peak the router's RSS
stays near the peak's for good. malloc_trim(0) returns those free pages. It costs about
half a millisecond (a hundred under heavy load), so it runs at most once per maintenance
interval, on the supervisor's timer, and only if sessions ended since the last one:
never on a request's path, and never in an idle router that has nothing new to give back.
Requests that make no session (refusals, a flood of them) do not make it due: what they
grow is not free pages a trim returns (measured: docs/internals.md, Lifetime).

`TrimPolicy` decides (pure, clock passed in); `malloc_trim` is the one call into libc.
"""

import ctypes


class TrimPolicy:
    def __init__(self, interval: float, now: float):
        self.interval = interval
        self._last = now
        self._ended = 0
        self.trims = 0

    def session_ended(self):
        self._ended += 1

    def due(self, now: float) -> bool:
        """Whether to trim now: sessions ended since the last trim, an interval ago or more."""
        return self._ended > 0 and now - self._last >= self.interval

    def trimmed(self, now: float):
        self._last = now
        self._ended = 0
        self.trims += 1


def _load_trim():
    """libc's malloc_trim, or None where there is none (musl, not Linux). Looked up among
    the symbols the process has loaded: find_library would run ldconfig at each start."""
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


_TRIM = _load_trim()


def malloc_trim() -> bool | None:
    """Return the heap's free pages to the system: whether any were (glibc says 1 when it
    released memory, 0 when there was none to give back), None if this libc cannot."""
    if _TRIM is None:
        return None
    return _TRIM(0) == 1
