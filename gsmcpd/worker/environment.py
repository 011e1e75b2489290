"""A per-user worker's environment: an allow-list, and the rest wiped from memory.

A worker switched to a user's account runs that user's code, which can read all the
environment its process holds. The daemon's may hold a site's secrets (a cloud
credential, a proxy password in gsmcpd.env) and holds its own GS_MCP_*/MCP_* settings:
none of that is the user's. Such a worker keeps what running Python code relies on,
plus the names GS_MCP_WORKER_ENV lists; the account switch then sets HOME, USER and
LOGNAME (gsmcpd.auth.usermap.become).
"""

from __future__ import annotations

import ctypes
import os
import posix
import re
from typing import Iterable, Mapping

from gsmcpd import procstat

KEPT = frozenset({
    "PATH", "LANG", "LANGUAGE", "TZ", "TMPDIR", "TERM",
    # CPython's own (its documented POSIX variables): how the worker's code, and a Python
    # it starts, finds modules and runs.
    "PYTHONPATH", "PYTHONHOME", "PYTHONSAFEPATH", "PYTHONPLATLIBDIR", "PYTHONNOUSERSITE",
    "PYTHONUSERBASE", "PYTHONSTARTUP", "PYTHONHASHSEED", "PYTHONOPTIMIZE", "PYTHONDEBUG",
    "PYTHONINSPECT", "PYTHONUNBUFFERED", "PYTHONVERBOSE", "PYTHONCASEOK",
    "PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX", "PYTHONIOENCODING", "PYTHONUTF8",
    "PYTHONCOERCECLOCALE", "PYTHONWARNINGS", "PYTHONDEVMODE", "PYTHONFAULTHANDLER",
    "PYTHONTRACEMALLOC", "PYTHONPROFILEIMPORTTIME", "PYTHONASYNCIODEBUG", "PYTHONMALLOC",
    "PYTHONMALLOCSTATS", "PYTHONBREAKPOINT", "PYTHONNODEBUGRANGES", "PYTHONINTMAXSTRDIGITS",
})
KEPT_PREFIX = "LC_"
# The account switch sets these to the account's own: the daemon's are never passed.
ACCOUNT_NAMES = ("HOME", "USER", "LOGNAME")
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

# Where a bytes object's data starts (PyBytesObject.ob_sval).
_BYTES_DATA = bytes.__basicsize__ - 1


def unused_list_warning(listed: Iterable[str], per_user: bool) -> str | None:
    """What start and check say of GS_MCP_WORKER_ENV set where no worker is scrubbed:
    workers on the daemon's own account keep its whole environment, so the list does nothing."""
    if not listed or per_user:
        return None
    return ("GS_MCP_WORKER_ENV is set, but workers run as the daemon's own account and keep its "
            "whole environment, so it has no effect: only workers a root daemon switches to "
            "users' accounts (MCP_USER_MAP) are given the allow-list and the names it lists")


def worker_environ(environ: Mapping[str, str], listed: Iterable[str] = ()) -> dict[str, str]:
    """What of `environ` a per-user worker keeps: the allow-list and the `listed` names."""
    listed = frozenset(listed)
    return {name: value for name, value in environ.items() if _kept(name, listed)}


def _kept(name: str, listed: frozenset[str]) -> bool:
    return name in KEPT or name.startswith(KEPT_PREFIX) or name in listed


def scrub(listed: Iterable[str] = ()) -> None:
    """Make worker_environ(os.environ, listed) this process's whole environment, and wipe
    what it drops from memory too, where code running here could still read it: unsetenv
    only drops pointers, to the strings the kernel placed at exec (what
    /proc/self/environ shows) and to Python's own copies (posix.environ). For the
    spawner, before it forks any per-user worker."""
    # Only the kept values are decoded: os.environ.items() would make a str copy of every
    # secret too, freed unwiped (Python 3.13's allocator left one whole in the heap).
    listed = frozenset(listed)
    kept = {name: os.environ[name] for name in map(os.fsdecode, posix.environ) if _kept(name, listed)}
    for name, value in posix.environ.items():
        if os.fsdecode(name) not in kept and len(value) > 1:   # b"" and b"x" are shared singletons
            ctypes.memset(id(value) + _BYTES_DATA, 0, len(value))
    os.environ.clear()
    ctypes.CDLL(None).clearenv()    # also any entry Python does not list (one without "=")
    os.environ.update(kept)         # copies made now, off the block wiped below
    start, end = _exec_environment_block()
    ctypes.memset(start, 0, end - start)


def _exec_environment_block() -> tuple[int, int]:
    """The addresses of the environment strings the kernel placed at exec: env_start and
    env_end, fields 50 and 51 of /proc/self/stat."""
    stat = procstat.fields("self")
    if stat is None:
        raise OSError("cannot read /proc/self/stat, so the environment strings placed at exec "
                      "cannot be found to be wiped")
    return procstat.env_block(stat)
