"""Each worker's private temporary directory, removed once the worker is gone.

A worker ends with os._exit (or a SIGKILL), so Python's exit handlers never run and
what they would remove (tempfile's files and directories, multiprocessing's pymp-*)
would stay in /tmp for good. Instead each worker's TMPDIR is a directory of its own,
which the spawner, outliving it, removes whole when it reaps the worker (after a kill -9
too); the router removes the daemon's at its stop, and a start what a crash left.

  <the daemon's TMPDIR>/gsmcpd-tmp.<random>/   the daemon's, its `lock` held while it runs
      pymp-<random>/                           the router's own (its forkserver's socket)
      gsmcpd-rehearsal-<random>/               the forkserver's preload's, while it rehearses
      w.<random>/                              one per worker: 0700, made by the worker
                                               as its session's account once claimed

A per-user worker makes its directory itself, after the switch to its account, so it
is the account's without a chown (the unit's root holds no CAP_CHOWN); the daemon's
directory is then 1733, like /tmp but unlistable. A directory of another account is
removed by a child switched to that account, never by root walking into it.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import multiprocessing.process
import os
import pwd
import re
import shutil
import stat
import sys
import tempfile
import time

from gsmcpd.accounts import account_name, group_name
from gsmcpd.raised import raised
from gsmcpd.router.control import SUN_PATH_MAX
from gsmcpd.worker.as_account import said_as

log = logging.getLogger("gsmcpd.worker")

PREFIX = "gsmcpd-tmp."
WORKER_PREFIX = "w."
_WORKER_NAME = re.compile(re.escape(WORKER_PREFIX) + "[0-9a-f]{16}")
LOCK = "lock"
LOCK_MAKING = LOCK + ".new"
# A daemon's directory without its lock is one being made, for microseconds (DaemonTmp);
# one unchanged for this long was left by a daemon killed in between.
MAKING_GRACE = 60.0
SHARED_MODE = 0o1733   # accounts may make entries, not list or remove others'
# The router's forkserver listens at <its directory>/pymp-<8 random>/listener-<8 random>
# (multiprocessing's names), a unix socket whose path must fit in sun_path.
_FORKSERVER_SOCKET = os.path.join(PREFIX + 8 * "x", "pymp-" + 8 * "x", "listener-" + 8 * "x")


class DaemonTmp:
    """The router's: the daemon's directory, locked while this daemon runs."""

    def __init__(self, parent: str | None = None):
        parent = tempfile.gettempdir() if parent is None else parent
        self.parent = parent
        self.swept = sweep_earlier(parent)
        # The order a crash at any step leaves sweepable (sweep_earlier): the directory,
        # then its lock made under another name, locked, renamed. A lock another daemon's
        # sweep could find unlocked, between its making and its locking, would get this
        # one removed; a crash before the rename leaves a directory holding at most that
        # unlocked LOCK_MAKING, which a start MAKING_GRACE later takes for a dead one's.
        self.path = tempfile.mkdtemp(prefix=PREFIX, dir=parent)
        self._environ_tmpdir: str | None = None   # TMPDIR before hold_multiprocessing
        making = os.path.join(self.path, LOCK_MAKING)
        self._lock = os.open(making, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        fcntl.flock(self._lock, fcntl.LOCK_EX)
        os.rename(making, os.path.join(self.path, LOCK))

    def hold_multiprocessing(self) -> None:
        """The router's own multiprocessing directory (its forkserver's socket) in here
        too, and the TMPDIR of the processes it starts (the forkserver's rehearsal makes
        an image), so that a crash leaves everything in here; before the forkserver starts."""
        config = multiprocessing.process.current_process()._config
        if config.get("tempdir") is None:
            config["tempdir"] = tempfile.mkdtemp(prefix="pymp-", dir=self.path)
        self._environ_tmpdir = os.environ.get("TMPDIR")
        os.environ["TMPDIR"] = self.path

    def share(self) -> None:
        """Let per-user workers make their directories in it, as their accounts."""
        os.chmod(self.path, SHARED_MODE)

    def close(self) -> None:
        """At the daemon's stop, its workers ended: remove everything they left."""
        config = multiprocessing.process.current_process()._config
        if (config.get("tempdir") or "").startswith(self.path + os.sep):
            del config["tempdir"]
        if os.environ.get("TMPDIR") == self.path:
            if self._environ_tmpdir is None:
                del os.environ["TMPDIR"]
            else:
                os.environ["TMPDIR"] = self._environ_tmpdir
        problem = remove(self.path)
        if problem:
            log.warning("workers' temporary files stay in %s: %s", self.path, problem)
        os.close(self._lock)


def check_temp_dir(parent: str) -> None:
    """Raise OSError naming `parent`, the daemon's TMPDIR, when serve cannot use it: a path
    that is not UTF-8 (as the config refuses such an image: the workers' warm-up, in the
    spawner, is told its image made there in a UTF-8 frame, and failed at every start), or
    one too long for the spawner's socket (check_room_for_sockets)."""
    try:
        parent.encode("utf-8")
    except UnicodeEncodeError:
        shown = os.fsencode(parent).decode("utf-8", "backslashreplace")   # the byte as \xff, as typed
        raise OSError(errno.EINVAL, "not UTF-8, as a path the workers are told in UTF-8 frames must be; "
                      "set TMPDIR to a UTF-8 path", shown) from None
    check_room_for_sockets(parent)


def check_room_for_sockets(parent: str) -> None:
    """Raise ENAMETOOLONG, saying how long `parent` may be, when the forkserver's socket
    in it would not fit in a unix socket's path: it failed later as "cannot serve on
    HOST:PORT: AF_UNIX path too long", naming neither TMPDIR nor the limit."""
    needed = len(os.fsencode(os.path.join(parent, _FORKSERVER_SOCKET)))
    if needed > SUN_PATH_MAX:
        room = SUN_PATH_MAX - (needed - len(os.fsencode(parent)))
        raise OSError(errno.ENAMETOOLONG,
                      f"too long a path: the worker spawner's unix socket in it would take {needed} "
                      f"bytes, over the {SUN_PATH_MAX} one may have; set TMPDIR to a directory of at "
                      f"most {room} bytes", parent)


def passed_over_warning(used: str) -> str | None:
    """A warning if TMPDIR is set but Python passed it over for `used` (it picks the
    first directory it can write in, silently): the administrator asked for another."""
    asked = os.environ.get("TMPDIR")
    if not asked or os.path.abspath(asked) == used:
        return None
    shown = os.fsencode(asked).decode("utf-8", "backslashreplace")   # a byte not UTF-8 as \xff, as typed
    return (f"TMPDIR {shown} is not a directory {account_name(os.geteuid())} can write in, so temporary files "
            f"go in {used}")


def unreachable_warnings(parent: str, accounts: list[str] | None) -> list[str]:
    """What `check` lists and `serve` logs at start and reload, in the same words, when per-user
    workers' accounts cannot search their way to `parent`, the daemon's TMPDIR: each
    makes its directory in there, and fails its session's open if it cannot. `accounts`:
    those a user map names (None: MCP_USER_MAP=identity, any account: "other" ones).
    One warning per directory in the way, naming the accounts it stops."""
    if accounts is None:
        try:
            found = _first_unsearchable(parent, -1, set())     # no owner's uid, in no group: "other"
        except OSError:   # gone, or not ours to stat: serve says so where it makes its directory
            return []
        if found is None:
            return []
        where, st, _ = found
        return [f"TMPDIR {parent}: {described_path(where, st)}, is not searchable by other accounts: with "
                f"MCP_USER_MAP=identity the sessions of accounts neither its owner nor in its group will fail "
                f"to open; make {where} searchable (chmod o+x) or set TMPDIR to a directory every account can "
                f"reach, such as /tmp"]
    if _searchable_by_all(parent):   # /tmp's case: no account need be looked up (LDAP, on the loop)
        return []
    warnings = []
    for where, described, who, names in closed_to(accounts, lambda uid, gids: _first_unsearchable(parent, uid, gids)):
        them, their, they = ("them", "their", "they") if len(names) > 1 else ("it", "its", "it")
        warnings.append(
            f"TMPDIR {parent}: account{'s' if len(names) > 1 else ''} {', '.join(names)} cannot reach it "
            f"({described}, is not searchable by {them}): {their} sessions will fail to open; make "
            f"{where} searchable by {them} (chmod {who}+x) or set TMPDIR to a directory {they} can reach, "
            f"such as /tmp")
    return warnings


def closed_to(accounts: list[str], first_closed_for) -> list[tuple[str, str, str, list[str]]]:
    """What keeps the named `accounts` out, one entry per place: (the place, described,
    the class of its mode bits that applies, the accounts it stops), by
    `first_closed_for(uid, gids)` (a found place's path, stat and class, or None). An
    account that does not exist, or whose place cannot be read, is passed over."""
    stopped: dict[tuple[str, str], list[str]] = {}
    described = {}
    for name in dict.fromkeys(accounts):
        try:
            entry = pwd.getpwnam(name)
            found = first_closed_for(entry.pw_uid, set(os.getgrouplist(name, entry.pw_gid)))
        except (KeyError, OSError):
            continue
        if found is not None:
            where, st, who = found
            stopped.setdefault((where, who), []).append(name)
            described[where] = described_path(where, st)
    return [(where, described[where], who, names) for (where, who), names in stopped.items()]


def _first_unsearchable(path: str, uid: int, gids: set[int]) -> tuple[str, os.stat_result, str] | None:
    """The first directory on `path` (itself included) the account `uid` in `gids` may
    not search by its mode bits, its stat and the class that applies ("u", "g" or "o");
    None if there is none. Root (uid 0) never runs a worker."""
    return first_closed(way_to(path), uid, gids)


def first_closed(paths: list[str], uid: int, gids: set[int]) -> tuple[str, os.stat_result, str] | None:
    """The first of `paths` whose x bit (search, for a directory) the account `uid` in
    `gids` lacks by its mode bits, its stat and the class that applies ("u", "g" or "o");
    None if there is none. Root (uid 0) never runs a worker."""
    if uid == 0:
        return None
    for where in dict.fromkeys(paths):
        st = os.stat(where)
        who, bit = (("u", stat.S_IXUSR) if st.st_uid == uid else ("g", stat.S_IXGRP) if st.st_gid in gids
                    else ("o", stat.S_IXOTH))
        if not st.st_mode & bit:
            return where, st, who
    return None


def _searchable_by_all(path: str) -> bool:
    """Whether every directory on `path` may be searched by its owner, its group and
    everyone else alike (x for all three), so by every account."""
    try:
        return open_to_all(way_to(path))
    except OSError:
        return False


def open_to_all(paths: list[str]) -> bool:
    """Whether each of `paths` has its x bit for its owner, its group and everyone else
    alike, so for every account: none need be looked up (NSS, LDAP)."""
    try:
        return all(os.stat(where).st_mode & 0o111 == 0o111 for where in dict.fromkeys(paths))
    except OSError:
        return False


def way_to(path: str) -> list[str]:
    """Each directory the kernel searches looking `path` up (as the account: it reads each
    link met, in the middle of the way too, and goes on from its target; a `..` after a link
    leads up from where the link led, not from the link's name), then `path` resolved: each
    as it is, no link in it. A place that does not exist is listed as is (stat says so)."""
    at = os.sep
    places = [at]
    pending = os.path.join(os.getcwd(), path).split(os.sep)[::-1]   # the names yet to look up, the next last
    links = 0
    while pending:
        name = pending.pop()
        if name in ("", "."):
            continue
        if name == "..":
            at = os.path.dirname(at)   # searched already, on the way in
            continue
        here = os.path.join(at, name)
        if os.path.islink(here) and links < 40:   # ELOOP's bound
            links += 1
            target = os.readlink(here)
            at = os.sep if os.path.isabs(target) else at
            pending.extend(target.split(os.sep)[::-1])
            continue
        at = here
        places.append(at)
    return places


def described_path(path: str, st: os.stat_result) -> str:
    return (f"{path}, mode {stat.S_IMODE(st.st_mode):04o}, owner {account_name(st.st_uid)}, "
            f"group {group_name(st.st_gid)}")


def unmade_error(error: OSError, account: str | None, path: str) -> str:
    """Why a worker could not make its directory `path` (for the client): naming the
    daemon's TMPDIR, and what to do when the session's account may not reach it."""
    parent = os.path.dirname(os.path.dirname(path))
    said = f"{raised(error)}; "
    if account and isinstance(error, PermissionError):
        return (said + f"account {account} cannot make its temporary directory in the daemon's TMPDIR "
                f"{parent}: per-user workers need every directory on its path searchable by the mapped "
                f"accounts (chmod o+x, as /tmp is), or TMPDIR set to such a directory")
    return said + f"cannot make the session's temporary directory in the daemon's TMPDIR {parent}"


def sweep_earlier(parent: str) -> list[str]:
    """Remove what daemons of this account that ended without their stop (a crash, a
    kill -9) left in `parent`: each directory named so, owned by us, whose lock no live
    daemon holds. One without a lock is another daemon's being made, left alone unless
    it holds nothing else and is MAKING_GRACE old: a daemon killed while making it."""
    removed = []
    try:
        names = [name for name in os.listdir(parent) if name.startswith(PREFIX)]
    except OSError:
        return removed
    for name in names:
        path = os.path.join(parent, name)
        try:
            st = os.lstat(path)
            if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
                continue
            if not _unlocked(path, st):
                continue
        except OSError:
            continue
        problem = remove(path)
        if problem:
            log.warning("cannot remove an earlier run's temporary files %s: %s", path, problem)
        else:
            removed.append(path)
    return removed


def _unlocked(path: str, st: os.stat_result) -> bool:
    """Whether the daemon's directory `path` is no live daemon's: its lock, or while
    it has none the one being made, can be taken; without a lock, only once it is old."""
    try:
        return _lock_free(os.path.join(path, LOCK))
    except FileNotFoundError:
        pass
    if set(os.listdir(path)) - {LOCK_MAKING} or time.time() - st.st_mtime < MAKING_GRACE:
        return False
    try:
        return _lock_free(os.path.join(path, LOCK_MAKING))
    except FileNotFoundError:
        return True        # killed before it made even that


def _lock_free(lock_path: str) -> bool:
    lock = os.open(lock_path, os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False                          # a live daemon's
    finally:
        os.close(lock)
    return True


def worker_dir(daemon_dir: str) -> str:
    """A new worker's directory, named by the spawner, made by the worker (make). The
    name cannot be guessed: in a shared daemon directory, no other account could take it
    first."""
    return os.path.join(daemon_dir, WORKER_PREFIX + os.urandom(8).hex())


def is_worker_dir_name(name: str) -> bool:
    """Whether `name` is one worker_dir gives."""
    return _WORKER_NAME.fullmatch(name) is not None


def use(path: str) -> None:
    """In a new worker: every temporary file goes to `path`. tempfile caches its
    directory (the spawner may have asked already), and multiprocessing its pymp-* one
    in the process's config, which a spawner got a copy of from the router's."""
    os.environ["TMPDIR"] = path
    tempfile.tempdir = path
    multiprocessing.process.current_process()._config.pop("tempdir", None)


def make(path: str) -> None:
    """In the worker, as its session's account, before any code of the session's."""
    os.mkdir(path, 0o700)


def remove(path: str) -> str | None:
    """Remove `path` and all it holds, following no link planted inside (shutil.rmtree's
    descriptor-based walk), each directory of another account as that account; None once
    gone, else why not."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as error:
        return f"{path}: {error.strerror}"
    if st.st_uid != os.geteuid():
        return _remove_as(st.st_uid, st.st_gid, path)
    problems = []
    if stat.S_ISDIR(st.st_mode):
        try:
            with os.scandir(path) as entries:
                foreign = [(entry.path, entry.stat(follow_symlinks=False)) for entry in entries]
        except OSError:
            foreign = []
        for entry_path, entry_st in foreign:
            if entry_st.st_uid != os.geteuid() and stat.S_ISDIR(entry_st.st_mode):
                problem = _remove_as(entry_st.st_uid, entry_st.st_gid, entry_path)
                if problem:
                    problems.append(problem)
    problems += _remove_own(path)
    return "; ".join(problems[:3]) or None


def _remove_own(path: str) -> list[str]:
    try:
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            os.unlink(path)   # the code put a link (or file) in its directory's place
            return []
    except FileNotFoundError:
        return []
    except OSError as error:
        return [f"{path}: {error.strerror}"]
    problems = _rmtree(path)
    if problems and _make_changeable(path):
        problems = _rmtree(path)   # once more, now that the code's chmods are undone
    return problems


def _remove_as(uid: int, gid: int, path: str) -> str | None:
    """Remove `path` in a child switched to the account that owns it: root may lack
    CAP_DAC_OVERRIDE (the unit's bounding set), and walks no user's tree anyway."""
    said = said_as(uid, gid, [], lambda: "; ".join(_remove_own(path)[:3]).encode(),
                   lambda error: f"cannot switch to uid {uid} to remove {path}: {error}".encode())
    try:
        os.rmdir(path)    # emptied, in a directory of ours the account may not write to
    except FileNotFoundError:
        return None       # the account's child removed it
    except OSError:
        return said.decode(errors="replace") or f"{path}: still there"
    return None


def _rmtree(path: str) -> list[str]:
    problems = []

    def failed(function, name, error):
        if not isinstance(error, FileNotFoundError):
            problems.append(f"{name}: {error.strerror or error}")

    if sys.version_info >= (3, 12):
        shutil.rmtree(path, onexc=failed)   # onerror is deprecated from 3.12 on (3.12.0 warned at each call)
    else:   # 3.11 has only onerror, given sys.exc_info() where onexc is given the exception
        shutil.rmtree(path, onerror=lambda function, name, info: failed(function, name, info[1]))
    return problems


def _make_changeable(top: str) -> bool:
    """u+rwx on every directory under `top`, which the code may have made unreadable or
    unwritable; whether any was changed. Run as the owner of `top`: a link swapped in
    between the lstat and the chmod gains the code nothing it could not chmod itself."""
    changed = False
    stack = [top]
    while stack:
        path = stack.pop()
        try:
            if not stat.S_ISDIR(os.lstat(path).st_mode):
                continue
            os.chmod(path, 0o700)
            changed = True
            stack.extend(os.path.join(path, name) for name in os.listdir(path))
        except OSError:
            continue
    return changed
