"""Who holds an unsettled mark (ImageStore.keep_record), told apart from a later process
given the same pid: its pid and its start time, field 22 of /proc/<pid>/stat."""

from __future__ import annotations

import os

from gsmcpd import procstat


def this_process() -> bytes:
    """The holder line keep_record writes into its mark: b"<pid> <start time>\\n", or b""
    (a mark never removed for its holder's death) if /proc does not show this process."""
    pid = os.getpid()
    stat = procstat.fields(pid)
    return f"{pid} {procstat.start_time(stat)}\n".encode() if stat else b""


def holder_of(content: bytes) -> tuple[int, int] | None:
    """(pid, start time) of the holder a mark names; None for a mark of no holder line
    (being written, or by an older gsmcpd, which wrote none)."""
    try:
        pid, started = (int(field) for field in content.split())
    except ValueError:
        return None
    return (pid, started) if pid > 0 else None


def holder_gone(content: bytes) -> bool:
    """True only if the mark's holder is sure to be gone: its pid runs no process, or a
    zombie, or one that started at another time (the pid reused). A mark of no holder
    line (holder_of) or of a process /proc hides from this account (hidepid) may be a
    live session's: kept."""
    holder = holder_of(content)
    if holder is None:
        return False
    pid, started = holder
    stat = procstat.fields(pid)
    if stat:
        return procstat.gone(stat) or procstat.start_time(stat) != started
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:   # another account's process, hidden by /proc: alive
        return False
    return False
