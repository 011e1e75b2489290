"""A worker under a data limit (GS_MCP_WORKER_MEMORY, its RLIMIT_DATA): what a
MemoryError says of it, and room kept for the worker's own work.

Code that fills the limit and keeps what it filled (a list appended to until MemoryError,
left in the workspace) left its worker no room to receive the next call: the receive
buffer was a MemoryError, the worker died and the session with it. So while a limit is
in force, RESERVE bytes are held while the code runs and given back when it returns: the
code meets its MemoryError that much earlier, and its answer and the next call have room.
"""

from __future__ import annotations

import mmap
import resource

# Room for an answer at execute_code's caps (a million characters each of output, value
# and traceback, in text and structuredContent, then JSON and a frame) and a receive.
RESERVE = 8 * 1024 * 1024

DATA_LIMIT_NOTE = ("(this worker may hold %.0f MiB of data, its RLIMIT_DATA: GS_MCP_WORKER_MEMORY "
                   "sets it; what the workspace holds counts, `del` what it no longer needs)")


def data_limit() -> int | None:
    """This worker's data limit in bytes (its soft RLIMIT_DATA); None without one."""
    limit = resource.getrlimit(resource.RLIMIT_DATA)[0]
    return None if limit == resource.RLIM_INFINITY else limit


def data_limit_note() -> str | None:
    """What a MemoryError should add under a data limit; None without one."""
    limit = data_limit()
    return None if limit is None else DATA_LIMIT_NOTE % (limit / (1 << 20))


class MemoryReserve:
    def __init__(self):
        self.size = 0 if data_limit() is None else RESERVE
        self._held = None

    def hold(self) -> None:
        """Take the room, if a limit is in force (once per call: an mmap, no page touched)."""
        if self.size and self._held is None:
            try:
                # Private, so RLIMIT_DATA counts it (a shared mapping it would not).
                self._held = mmap.mmap(-1, self.size, flags=mmap.MAP_PRIVATE)
            except (OSError, MemoryError):
                pass       # the workspace holds it all: the code runs without, as before

    def release(self) -> None:
        if self._held is not None:
            self._held.close()
            self._held = None
