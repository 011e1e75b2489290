"""A process's /proc/<pid>/stat fields (Linux, proc(5)), for the worker's and the image's
process checks. Imports nothing but errno (built in): every worker imports it at its start.

Field 2, comm, is the command name in parentheses and may hold spaces and ")" itself,
so the fields are read from after its last ")": fields(pid)[0] is field 3, the state.
The accessors below take what fields() returned and name the fields by proc(5)'s numbers.
"""

from __future__ import annotations

import errno

GONE = (b"Z", b"X")   # the states of a process that has ended: zombie, dead
# Why an open fails for want of descriptors (the process's, the system's) or memory: it says
# nothing of the process asked about.
SHORT = (errno.EMFILE, errno.ENFILE, errno.ENOMEM)


def fields(pid: int | str, strict: bool = False) -> list[bytes] | None:
    """/proc/<pid>/stat from field 3 (the state) on, or None if /proc does not show it.
    `pid` may be "self". `strict`: an open that failed for a SHORT reason raises, for a
    caller that must not take the process for gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()
    except OSError as error:
        if strict and error.errno in SHORT:
            raise
        return None
    except IndexError:
        return None


def field(stat: list[bytes], number: int) -> bytes:
    """Field `number` (3 or more) of /proc/<pid>/stat, numbered as proc(5) does, of fields()."""
    return stat[number - 3]


def gone(stat: list[bytes]) -> bool:
    """Whether the process has ended (a zombie, or dead) but is still listed."""
    return field(stat, 3) in GONE


def ppid(stat: list[bytes]) -> int:
    """Its parent's pid (field 4)."""
    return int(field(stat, 4))


def pgrp(stat: list[bytes]) -> int:
    """Its process group's id (field 5)."""
    return int(field(stat, 5))


def start_time(stat: list[bytes]) -> int:
    """When it started, in clock ticks after boot (field 22): with the pid, it names one
    process, not a later one given the same pid."""
    return int(field(stat, 22))


def env_block(stat: list[bytes]) -> tuple[int, int]:
    """env_start and env_end (fields 50 and 51): where the environment strings the
    kernel placed at exec lie in its memory."""
    return int(field(stat, 50)), int(field(stat, 51))
