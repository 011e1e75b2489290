"""Who holds an unsettled mark (ImageStore.keep_record), told apart from a later process
given the same pid: its pid and its start time, field 22 of /proc/<pid>/stat."""

from __future__ import annotations

import os


def this_process() -> bytes:
    """The holder line keep_record writes into its mark: b"<pid> <start time>\\n", or b""
    (a mark never removed for its holder's death) if /proc does not show this process."""
    pid = os.getpid()
    fields = _stat_fields(pid)
    return f"{pid} {int(fields[22 - 3])}\n".encode() if fields else b""


def holder_gone(content: bytes) -> bool:
    """True only if the mark's holder is sure to be gone: its pid runs no process, or a
    zombie, or one that started at another time (the pid reused). A mark of no holder
    line (being written, or by an older gsmcpd) or of a process /proc hides from this
    account (hidepid) may be a live session's: kept."""
    try:
        pid, started = (int(field) for field in content.split())
    except ValueError:
        return False
    if pid <= 0:
        return False
    fields = _stat_fields(pid)
    if fields:
        return fields[0] in (b"Z", b"X") or int(fields[22 - 3]) != started
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:   # another account's process, hidden by /proc: alive
        return False
    return False


def _stat_fields(pid: int) -> list[bytes] | None:
    """/proc/<pid>/stat from field 3 (the state) on, or None if /proc does not show it."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()   # after comm, which may hold spaces
    except (OSError, IndexError):
        return None
