"""The committed image on disk: snapshot reads, all-or-nothing commits, the journal.

The image is a directory of Python source. Its state lives beside the source in
a hidden `.gsmcpd/` directory: `lock` (fcntl.flock: shared to read a snapshot,
exclusive to commit), `journal.jsonl` (one JSON line per commit),
`journal.count` (how many records the journal had at which size, so opening a view
does not read the whole history to learn its version), only while a commit
is being applied, `commit.intent`, and, for a commit whose session could not tell
whether it stands until it settles it, `unsettled.<commit id>` (see keep_record).

The journal is bounded: once past `journal_limit` bytes (and twice its size after the
last compaction), a commit rewrites it with the last JOURNAL_KEEP records and, before
them, each file's last record (what a conflict reads to name who made the file so)
and each unsettled commit's (what settling it reads), behind a first line
`{"dropped": N, "size": S}` counting the records left out, so the version (the number
of commits ever) goes on. Written as a temp file renamed over it:
a crash leaves the old journal or the new one, whole.

A commit is all-or-nothing. Under the exclusive lock it writes each new file as
a fsynced temp file beside its target, then the intent (which temp goes where,
what is removed, the journal record), atomically: that is the commit point.
Then it renames the temps into place, removes what goes, appends the journal
line and deletes the intent. A commit killed before the intent is in place
changed nothing; one killed after it is finished by the next commit (or daemon
start), and until then every snapshot reads the image as if it were finished.
Each file is replaced by rename, so no file is ever seen torn.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import io
import itertools
import json
import logging
import os
import posixpath
import stat
import re
import secrets
import shutil
import time
import tokenize
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from gsmcpd.accounts import account_name, group_name
from gsmcpd.image import holders
from gsmcpd.image.dirfd import (ImageDirs, UntrustedLink, fsync_dir as _fsync_dir, is_entry, open_dir, readable,
                                trusted_owners, walk_held)
from gsmcpd.image.fsflags import protection_of
from gsmcpd.image.layout import JOURNAL_LIMIT, LOCK_NAME, LOCK_WAIT, STATE_DIR

log = logging.getLogger("gsmcpd.image")

UNREADABLE = object()   # ImageStore._contents: there, but this account may not read it
JOURNAL_NAME = "journal.jsonl"
COUNT_NAME = "journal.count"
INTENT_NAME = "commit.intent"
JOURNAL_KEEP = 100            # the last records compaction keeps whole, whatever files they name
TEMP_NAME = re.compile(r"\..+\.tmp-\d+")   # what temp_name makes
UNSETTLED = re.compile(r"unsettled\.((?:call\d{1,20}-)?[0-9a-f]{1,64})")   # keep_record's mark of a commit id (call_tag, hex)
PID_DIGITS = 7   # a Linux pid is at most 4194304 (pid_max's ceiling), in a temp file's name


# How far back from its end the router reads the journal for a dead worker's call (commits_of_call).
CALL_SCAN_LIMIT = 4 * JOURNAL_LIMIT
JOURNAL_CHUNK = 65536   # how much of the journal one read takes, read back from its end
# What commits_of_call returns, on a store made with a call_scan_step, while it has read back
# only part of the journal: ask again.
READING_ON = "reading on"


def call_tag(seq) -> str:
    """How the id of each commit made in the call the router numbered `seq` begins: the
    router finds them by it if the call's worker dies in it (ImageStore.commits_of_call)."""
    return f"call{seq}-"


class JournalScanLimit(Exception):
    """The journal would be read back further than a scan was allowed to (_records_from_end)."""


def temp_name(name: str, pid: int | str) -> str:
    """The temp file a writer `pid` writes `name` as, beside it, before renaming it."""
    return f".{name}.tmp-{pid}"


def sha256(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


UTF8_BOM = b"\xef\xbb\xbf"


def alike_hashes(data: bytes | None) -> set[str | None]:
    """The hashes of the files holding the text `data` holds as Python reads source: its
    own, and, for UTF-8 source, that of the same bytes with a BOM put on or taken off (a
    BOM says how the file is encoded, not what it says). {None} for no file."""
    if data is None:
        return {None}
    plain = data[len(UTF8_BOM):] if data.startswith(UTF8_BOM) else data
    try:
        plain.decode("utf-8")
        encoding, _ = tokenize.detect_encoding(io.BytesIO(plain).readline)
    except (SyntaxError, UnicodeError, LookupError):
        return {sha256(data)}
    if encoding != "utf-8":   # another codec's declaration: a BOM would make it a SyntaxError
        return {sha256(data)}
    return {sha256(data), sha256(plain if plain is not data else UTF8_BOM + data)}


def _intent_shape_problem(intent) -> str | None:
    """What a parsed intent lacks of the shape _apply and the scan read, or None."""
    if not isinstance(intent, dict):
        return "not a JSON object"
    if not (isinstance(intent.get("writes"), dict)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in intent["writes"].items())):
        return '"writes" is not an object of file names to temporary files'
    if not (isinstance(intent.get("removes"), list) and all(isinstance(r, str) for r in intent["removes"])):
        return '"removes" is not a list of file names'
    if not (isinstance(intent.get("record"), dict) and "id" in intent["record"]):
        return '"record" is not a journal record with an id'
    # Applied by whichever account commits next: with per-user workers another account
    # can write this file, so it may name only module files of the image and temps
    # beside them, never a path outside it ("/home/b/.bashrc", "../../x").
    for rel, temp in intent["writes"].items():
        if not _is_module_path(rel):
            return f'"writes" names {rel!r}, not a module file of the image'
        if not _is_temp_of(temp, rel):
            return f'"writes" names {temp!r}, not a temporary file beside {rel!r}'
    for rel in intent["removes"]:
        if not _is_module_path(rel):
            return f'"removes" names {rel!r}, not a module file of the image'
    return None


def _is_module_path(rel: str) -> bool:
    """A relative, normalised path of a .py file, as the image names its files."""
    parts = rel.split("/")
    return (rel.endswith(".py") and posixpath.normpath(rel) == rel and "\\" not in rel
            and "\0" not in rel and not rel.startswith("/") and parts[0] != STATE_DIR
            and all(part not in ("", ".", "..") for part in parts))


def _is_temp_of(temp: str, rel: str) -> bool:
    """Whether `temp` is a temp file a commit writes `rel` as (temp_name, any pid)."""
    directory, name = posixpath.split(rel)
    temp_dir, temp_leaf = posixpath.split(temp)
    prefix = temp_name(name, "")
    return temp_dir == directory and temp_leaf.startswith(prefix) and temp_leaf[len(prefix):].isdigit()


def module_name_of(relpath: str) -> str:
    """'shop/models.py' -> 'shop.models'; 'shop/__init__.py' -> 'shop'."""
    parts = relpath[:-3].split("/")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def relpath_of(module_name: str, *, package: bool = False) -> str:
    base = module_name.replace(".", "/")
    return base + "/__init__.py" if package else base + ".py"


def packages_of(relpath: str) -> list[str]:
    """The `__init__.py` of each package the file lies in, outermost first: 'a/b/m.py' ->
    ['a/__init__.py', 'a/b/__init__.py']; 'a/b/__init__.py' -> ['a/__init__.py']."""
    parts = relpath.split("/")[:-2 if relpath.endswith("/__init__.py") else -1]
    return ["/".join(parts[:depth]) + "/__init__.py" for depth in range(1, len(parts) + 1)]


def other_form(relpath: str) -> str:
    """The file the same module would be in the other form: 'q.py' <-> 'q/__init__.py'."""
    if relpath.endswith("/__init__.py"):
        return relpath[:-len("/__init__.py")] + ".py"
    return relpath[:-len(".py")] + "/__init__.py"


@dataclass
class Snapshot:
    files: dict[str, bytes]      # relpath -> content
    version: int                 # journal length when read
    unlisted: list[str] = ()     # directories this account may not list or enter (see _scan)
    too_long: list[str] = ()     # files and directories ("d/") left out: paths over PATH_MAX
    unwalked: dict[str, str] = field(default_factory=dict)   # asked-for files on disk in no package -> hash


class CommitConflict(Exception):
    """Files changed on disk since the view read them, or (`unreadable`) that the commit
    stands on but this account may not read (per-user workers: another account's
    module, which the view never saw); nothing was written."""

    def __init__(self, files: list[str], unreadable: list[str] = (), how: dict[str, str] | None = None,
                 by: dict[str, dict | None] | None = None):
        super().__init__(", ".join([*files, *unreadable]))
        self.files = files
        self.unreadable = list(unreadable)
        # file -> what happened to it on disk since the base: "changed", "created", "removed"
        self.how = {rel: (how or {}).get(rel, "changed") for rel in files}
        # file -> who made it as the disk has it: the last commit's {"user", "session",
        # "time"}, or None for an edit outside gsmcpd (a file not known is left out)
        self.by = dict(by or {})


def _how(base: str | None, there: bool) -> str:
    """What happened on disk to a file the commit's base had with hash `base` (None: it
    had none) and that is now `there` or not, given it is not as the base had it."""
    return "created" if base is None else "changed" if there else "removed"


class CommitPending(OSError):
    """The commit is decided (past its commit point) but could not be fully applied;
    every snapshot already reads it as applied, and the next commit finishes it."""

    def __init__(self, error: OSError):
        super().__init__(error.errno, f"the commit is recorded but not yet fully applied "
                                      f"(the next commit finishes it): {error}")


class UnsafePath(OSError):
    """A commit would write or remove through a symbolic link to a directory that
    another account (not this process's, not root) owns: with per-user workers one can
    be planted in the shared image, and this account's process must not write where
    it points. Nothing was written. A link this account or root made is followed."""

    def __init__(self, rel: str):
        super().__init__(errno.ELOOP, f"{rel}: its directory in the image is (or lies under) a "
                                      f"symbolic link; a commit writes only inside the image")


class DirectoryMoved(OSError):
    """A directory a commit wrote its temp files in was moved or replaced (by another
    account sharing the image) before the commit point: the commit is refused, and
    what it wrote removed, rather than committed where the image no longer shows it."""

    def __init__(self, rel: str):
        super().__init__(errno.EAGAIN, f"{rel}: its directory in the image was moved or replaced "
                                       f"while this commit wrote it; nothing was committed")


class LinkedModule(OSError):
    """A commit would write a module whose file in the image is a symbolic link: the
    rename that makes a commit all or nothing would replace the link with a file, and the
    file it points to would never get the change. Nothing was written."""

    def __init__(self, rel: str, target: str):
        super().__init__(errno.ELOOP, f"{rel} is a symbolic link (to {target}): a commit would "
                                      "replace the link with a file, leaving what it points to "
                                      "unchanged, so nothing was written; link the module's "
                                      "directory instead (a commit follows a linked directory), "
                                      "or put the file itself in the image")


class DirectoryInTheWay(OSError):
    """A commit would write a module whose path in the image is a directory (made there
    behind gsmcpd's back): no rename can put a file in its place, so, past the commit
    point, the commit could never be finished and every later one would fail on it.
    Refused before that point; nothing was written."""

    def __init__(self, rel: str):
        super().__init__(errno.EISDIR, f"{rel} is a directory in the image, not a module's file: "
                                       "a commit cannot put the module's file in its place, so "
                                       "nothing was written; move the directory away and commit "
                                       "again")


class UnlistedDirectory(OSError):
    """A commit would write or remove in a directory of the image this account may not
    list or enter (another account's, mode 0311 or 0700): the view never saw what is in
    it, so the commit could overwrite it, or leave it in no package. Nothing was written."""

    def __init__(self, directory: str):
        super().__init__(errno.EACCES, f"{directory}/ is a directory of the image this account "
                                       "may not list or enter, so this session never saw what is in "
                                       "it and a commit must not write or remove there; nothing was "
                                       "written; its owner must make it readable (or move it away)")
        self.directory = directory


class UnwritableModule(OSError):
    """A commit would change or remove a module whose file this account may not write
    (another account's, not group-writable; or, in a sticky directory, not its own): the
    rename that replaces it needs only the directory's write permission, so the file's
    own would not have been honoured. Nothing was written."""

    def __init__(self, rel: str, owner: str, mode: int, why: str, remedy: str):
        super().__init__(errno.EACCES, f"{rel} may not be changed by this account ({why}: owner "
                                       f"{owner}, mode {mode:04o}), so nothing was written; {remedy}")


class ProtectedFile(OSError):
    """A commit would replace or remove a file, or write in a directory, that is
    immutable or append-only (chattr +i, +a): refused even to root, and shown by no
    mode, so met only past the commit point unless looked for. Nothing was written."""

    def __init__(self, what: str, protection: str, consequence: str):
        flag = "i" if protection == "immutable" else "a"
        super().__init__(errno.EPERM, f"{what} is {protection} (chattr +{flag}, shown by "
                                      f"lsattr), so {consequence}, even by root; nothing was written; "
                                      f"an administrator must clear it (chattr -{flag}) for the commit "
                                      "to be made")


class StickyStateDirectory(OSError):
    """The image's state directory is sticky and neither this account's nor root's:
    every account's commit replaces and removes the commit intent there (and the journal,
    compacting it), which a sticky directory allows only a file's owner, so a commit
    another account left pending would fail every commit of this one's. Refused before
    anything is read or written rather than met past a commit point."""

    def __init__(self, problem: str):
        super().__init__(errno.EPERM, problem)


def sticky_state_problem(image_dir: str, *, any_account: bool = False) -> str | None:
    """Why the image's state directory would fail commits as StickyStateDirectory says:
    for this process's account, or (`any_account`: per-user workers, never root) for
    every account but the directory's owner. None if it is not sticky, or not there yet."""
    state = os.path.join(image_dir, STATE_DIR)
    try:
        info = os.stat(state, follow_symlinks=False)
    except OSError:
        return None   # made 0775 on first use; a link there is refused where it is used
    if not (stat.S_ISDIR(info.st_mode) and info.st_mode & stat.S_ISVTX):
        return None
    if not any_account and os.geteuid() in (0, info.st_uid):
        return None   # the directory's owner and root may replace and remove any file in it
    owner = account_name(info.st_uid)
    by = "root" if info.st_uid == 0 else f"{owner} or root"
    return (f"the image's state directory {state} is sticky (mode {stat.S_IMODE(info.st_mode):04o}, "
            f"owner {owner}): there only a file's owner may replace or remove it, and every "
            f"account's commit replaces and removes the commit intent there, so a commit "
            f"another account left pending would fail every other's; remove the bit: "
            f"chmod -t {state} (as {by})")


class ReadOnlySession(PermissionError):
    """A write to the image in the worker of a read-only session (refuse_writes): a commit
    its own tools never make, but the image's code may (a test calling its view's commit).
    Nothing was written."""

    def __init__(self, what: str):
        super().__init__(errno.EPERM, f"this session is read-only: {what} is refused, nothing was "
                                      "written; open a read-write session to change the image")


# Set once, in the worker of a read-only session before any of the image's code runs:
# every ImageStore of the process then refuses to write, one that code made itself
# included. An in-process guard against the image's code writing through gsmcpd's API;
# code that writes files itself (open()) meets only its account's rights.
_writes_refused = False


def refuse_writes() -> None:
    """From now on this process writes nothing to any image (ReadOnlySession)."""
    global _writes_refused
    _writes_refused = True


def check_writable(what: str) -> None:
    if _writes_refused:
        raise ReadOnlySession(what)


class ImageLockTimeout(OSError):
    """The image lock was not free within the wait: a process holds it (another
    account's code, say, flock on .gsmcpd/lock). Nothing was read or written."""

    def __init__(self, lock_file: str, waited: float, holders: list[str]):
        held = f"held by {', '.join(holders)}" if holders else "its holder not found in /proc/locks"
        super().__init__(errno.ETIMEDOUT, f"the image lock {lock_file} was not free after {waited:g}s "
                                          f"(GS_MCP_IMAGE_LOCK_WAIT): {held}; nothing was read or "
                                          "written; the administrator can end the session holding it "
                                          "(gsmcpd status, gsmcpd end)")


def lock_holders(fd: int) -> list[str]:
    """'pid N (account A)' for each process /proc/locks says holds a lock on `fd`'s file."""
    info = os.fstat(fd)
    inode = b"%02x:%02x:%d" % (os.major(info.st_dev), os.minor(info.st_dev), info.st_ino)
    holders = []
    try:   # bytes: a per-user worker may not be able to import a text codec it lacks
        with open("/proc/locks", "rb") as locks:
            for line in locks:
                fields = line.split()
                if b"->" in fields or len(fields) < 6 or fields[5] != inode:
                    continue   # a waiter's line, or another file's
                pid = fields[4].decode()
                try:
                    uid = os.stat("/proc/" + pid).st_uid
                except OSError:
                    holders.append(f"pid {pid}")
                    continue
                holders.append(f"pid {pid} (account {account_name(uid)})")
    except OSError:
        pass
    return holders


class ImageStore:
    def __init__(self, image_dir: Path | str, lock_wait: float = LOCK_WAIT,
                 journal_limit: int = JOURNAL_LIMIT, call_scan_step: int | None = None):
        # Plain strings; image_dir and state_dir are Paths only when asked for. Every
        # new worker makes one of these and takes its lock on its session open's path,
        # where each object touched for the first time copies a page shared with the
        # spawner (Path.resolve and four joins cost ~0.3 ms there, os.path ~0.15 ms).
        self.root = os.path.realpath(image_dir)
        self._state = os.path.join(self.root, STATE_DIR)
        self.lock_file = os.path.join(self._state, LOCK_NAME)
        self.journal_file = os.path.join(self._state, JOURNAL_NAME)
        self.count_file = os.path.join(self._state, COUNT_NAME)
        self.intent_file = os.path.join(self._state, INTENT_NAME)
        self._dirs: ImageDirs | None = None   # held while the exclusive lock is (_exclusive)
        self.lock_wait = lock_wait
        self.journal_limit = journal_limit
        self.locked_for: str | None = None    # the commit_id of the last commit that took the lock
        self.call_scan_step = call_scan_step  # bytes commits_of_call reads back at one go (None: all)
        self._call_scan: _CallScan | None = None   # commits_of_call's last, or the one it goes on with

    @property
    def image_dir(self) -> Path:
        return Path(self.root)

    def name_problem(self, rel: str) -> str | None:
        """Why the file `rel` could never be written into the image (a name or path too
        long for its file system, counting the temp file a commit writes beside it),
        or None."""
        name_max = os.pathconf(self.root, "PC_NAME_MAX")
        path_max = os.pathconf(self.root, "PC_PATH_MAX")
        *dirs, leaf = rel.split("/")
        temp = temp_name(leaf, "9" * PID_DIGITS)
        for part in dirs:
            if len(os.fsencode(part)) > name_max:
                return f"a directory name is longer than the image's file system allows ({name_max} bytes)"
        if len(os.fsencode(temp)) > name_max:
            return (f"the file name, with the affixes of the temp file a commit writes, is longer "
                    f"than the image's file system allows ({name_max} bytes)")
        if len(os.fsencode(os.path.join(self.root, *dirs, temp))) >= path_max:
            return f"the path is longer than the image's file system allows ({path_max - 1} bytes)"
        return None

    @property
    def state_dir(self) -> Path:
        return Path(self._state)

    # -- locking ---------------------------------------------------------

    def _locked(self, mode: int) -> "_Held":
        """The lock, taken in `mode` now; released when the returned object is closed
        (a `with` closes it). Refused in a sticky state directory (StickyStateDirectory):
        a session open or commit there would fail later, past a commit point."""
        problem = sticky_state_problem(self.root)
        if problem:
            raise StickyStateDirectory(problem)
        # flock works on a read-only descriptor too, so an account that may only
        # read the image can still take the shared lock another account created.
        try:
            fd = os.open(self.lock_file, os.O_RDONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            fd = self._create_lock()
        try:
            if mode & fcntl.LOCK_NB:
                fcntl.flock(fd, mode)
            else:
                self._wait_for(fd, mode)
        except BaseException:
            os.close(fd)
            raise
        return _Held(fd)

    def _wait_for(self, fd: int, mode: int) -> None:
        """flock `fd` in `mode`, waiting at most lock_wait (ImageLockTimeout)."""
        deadline, pause = time.monotonic() + self.lock_wait, 0.001
        while True:
            try:
                fcntl.flock(fd, mode | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ImageLockTimeout(self.lock_file, self.lock_wait, lock_holders(fd)) from None
                time.sleep(min(pause, left))
                pause = min(pause * 2, 0.01)   # a commit's wait: a few ms, not a wake-up's worth

    def _create_lock(self) -> int:
        """The state directory and its lock file, made on first use, every step through
        descriptors: the directory is reached as a commit reaches the image's
        (dirfd.open_dir), so a link another account planted in its place is refused, not
        followed to create a file or change a mode where it points."""
        try:
            os.mkdir(self._state, 0o775)   # the image root is trusted as configured
            made = True
        except FileExistsError:
            made = False
        try:
            with self._state_held() as state:
                if made:
                    with readable(state) as fd:
                        # Shared by the accounts sharing the image, whatever the umask; only if
                        # still ours (another account may have put its own in its place). The
                        # setgid bit it took from a setgid image stays: it gives the journal
                        # and the rest the image's group, not their first writer's own.
                        info = os.fstat(fd)
                        if info.st_uid == os.geteuid():
                            os.fchmod(fd, 0o775 | (info.st_mode & stat.S_ISGID))
                return _create_shared(LOCK_NAME, os.O_RDONLY, dir_fd=state)
        except UntrustedLink as error:
            raise UnsafePath(os.path.join(STATE_DIR, LOCK_NAME)) from error

    @contextlib.contextmanager
    def _state_held(self):
        """The state directory, held by an O_PATH descriptor (dirfd.open_dir): a link
        another account planted in its place is refused (UntrustedLink), not followed."""
        root = os.open(self.root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            state = open_dir(root, STATE_DIR, trusted_owners())
        finally:
            os.close(root)
        try:
            yield state
        finally:
            os.close(state)

    @contextlib.contextmanager
    def _exclusive(self, wait: bool = True):
        """The exclusive lock, and while it is held the image's directories reached by
        descriptor (dirfd.ImageDirs, also in self._dirs): every write of a commit or a
        recovery goes through them, never through a path resolved again."""
        with self._locked(fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB)), ImageDirs(self.root) as dirs:
            self._dirs = dirs
            try:
                yield dirs
            finally:
                self._dirs = None

    # -- reading ---------------------------------------------------------

    def hold_shared(self) -> "_Held":
        """The shared lock, taken now and kept until the returned object is closed
        (read_snapshot(held) closes it): no commit lands meanwhile, so a snapshot read
        under it later is the image as it is now."""
        return self._locked(fcntl.LOCK_SH)

    def read_snapshot(self, held: "_Held | None" = None, unwalked: Iterable[str] = ()) -> Snapshot:
        """Every module file, read under the shared lock so no commit is half-seen:
        taken now, or the one `held` from hold_shared(), released when done.
        A commit killed past its commit point is read as finished (see _apply).
        Each file of `unwalked` the walk left out (its directory no longer a package)
        that is on disk all the same has its hash in `Snapshot.unwalked`: a commit
        checks such a file by its hash, as it checks any other."""
        with held if held is not None else self._locked(fcntl.LOCK_SH):
            snapshot = self._snapshot()
            snapshot.unwalked = self._unwalked_hashes(unwalked, snapshot)
            return snapshot

    def _unwalked_hashes(self, rels: Iterable[str], snapshot: Snapshot) -> dict[str, str]:
        intent = self._pending_intent()
        writes = intent["writes"] if intent is not None else {}
        removes = frozenset(intent["removes"]) if intent is not None else frozenset()
        hashes = {}
        for rel in rels:
            if rel in snapshot.files or rel in removes:
                continue
            data = self._pending_bytes(rel, writes[rel]) if rel in writes else self._read(rel)
            if data is not None:
                hashes[rel] = sha256(data)
        return hashes

    def _snapshot(self, known: dict[str, bytes] | None = None) -> Snapshot:
        """read_snapshot's read (call under the lock); a file in `known` is taken to hold
        those bytes, not read (a commit's own writes)."""
        known = known or {}
        intent = self._pending_intent()
        writes = intent["writes"] if intent is not None else {}
        files, unlisted, too_long = {}, [], []
        for rel in self._scan(intent, unlisted, too_long):
            try:
                data = (known[rel] if rel in known else self._pending_bytes(rel, writes[rel])
                        if rel in writes else self._read(rel))
            except OSError as error:
                if error.errno != errno.ENAMETOOLONG:
                    raise
                too_long.append(rel)
                continue
            if data is not None:
                files[rel] = data
        version = self._journal_length()
        if intent is not None and not self._journaled(intent):
            version += 1   # its journal line, not written yet
        return Snapshot(files, version, unlisted, sorted(too_long))

    def _read(self, rel: str) -> bytes | None:
        """A file's bytes; None if it is missing or this account may not read it
        (per-user workers: what an account may not read, it does not see)."""
        data = self._contents(rel)
        return None if data is UNREADABLE else data

    def _contents(self, rel: str) -> bytes | None | object:
        """A file's bytes, None if it is missing, UNREADABLE if this account may not read it."""
        try:
            return _file_bytes(os.path.join(self.root, rel))
        except FileNotFoundError:
            return None
        except PermissionError:
            return UNREADABLE

    def _scan(self, intent: dict | None = None, unlisted: list[str] | None = None,
              too_long: list[str] | None = None) -> list[str]:
        """Relative paths of importable module files: hidden dirs, caches and
        directories that are not regular packages are left out. With a pending
        commit's intent, as they will be once it is applied: its new files are in,
        its removed files out, and so are the modules of the packages it makes or
        unmakes (an `__init__.py` written or removed). A directory this account may not
        list or enter is left out, whole, and named in `unlisted`: what an account may not
        read, it does not see (its sessions open all the same). A directory whose path is
        too long for the system to open (PATH_MAX) is left out the same way, named in
        `too_long` with a trailing "/". (os.scandir and plain
        strings, not pathlib: this runs in every new worker, where each object
        touched for the first time copies a shared page.)"""
        written = intent["writes"] if intent is not None else {}
        removed = frozenset(intent["removes"]) if intent is not None else frozenset()
        found = []
        walked = {""}
        unlisted = [] if unlisted is None else unlisted
        too_long = [] if too_long is None else too_long

        def is_package(path: str, package: str) -> bool:
            init = package + "/__init__.py"
            if init in written or init in removed:
                return init in written
            try:
                return stat.S_ISREG(os.stat(os.path.join(path, "__init__.py")).st_mode)
            except PermissionError:   # may not enter it: a package, for all it knows
                unlisted.append(package)
            except OSError as error:
                if error.errno == errno.ENAMETOOLONG:
                    too_long.append(package + "/")
            return False

        def entries_of(directory: str, prefix: str):
            """_sorted_entries, or None for a directory this account may not list (named
            in `unlisted`) or whose path is too long to open (in `too_long`)."""
            try:
                return _sorted_entries(directory)
            except PermissionError:
                if not prefix:
                    raise   # the image itself: no snapshot at all
                unlisted.append(prefix[:-1])
            except OSError as error:
                if not prefix or error.errno != errno.ENAMETOOLONG:
                    raise
                too_long.append(prefix)
            walked.discard(prefix)
            return None

        # A stack of the directories being walked, each with its entries still to see,
        # not a recursion: a package tree nested past the recursion limit is read too.
        walking = [(entries_of(self.root, ""), "")]
        while walking:
            entries, prefix = walking[-1]
            entry = next(entries, None)
            if entry is None:
                walking.pop()
                continue
            name = entry.name
            if name.startswith(".") or name == "__pycache__":
                continue
            if entry.is_dir():
                if _importable(name) and is_package(entry.path, prefix + name):
                    walked.add(prefix + name + "/")
                    inner = entries_of(entry.path, prefix + name + "/")
                    if inner is not None:
                        walking.append((inner, prefix + name + "/"))
            elif (name.endswith(".py") and _importable(name[:-3]) and prefix + name not in removed
                  and prefix + name != "__init__.py"   # the root is no package: no module ""
                  and entry.is_file()):   # a FIFO or socket would hang the read forever
                found.append(prefix + name)

        if written:   # files only the pending commit has, in packages that are there
            present = set(found)
            found += sorted(rel for rel in written
                            if rel not in present and rel[:rel.rfind("/") + 1] in walked)
        return found

    def _journal_length(self) -> int:
        """Commits in the journal (call under the lock). Only lines past the size the
        count file remembers are read: none, unless a commit was killed between
        appending its line and updating the count, or the count file is unusable."""
        try:
            journal = open(self.journal_file, "rb")
        except FileNotFoundError:
            return 0
        with journal:
            known, offset = self._remembered_count(journal)
            journal.seek(offset)
            if offset == 0:   # from the start: a compacted journal's first line counts those left out
                count = _compaction(journal.readline())
                if count is None:
                    journal.seek(0)
                else:
                    known = count[0]
            # an unterminated last line is an append that was cut off: no commit
            return known + sum(1 for line in journal if line.endswith(b"\n") and line.strip())

    def _remembered_count(self, journal) -> tuple[int, int]:
        """(records, size) from the count file when it describes a prefix of this
        journal that ends at a line boundary, else (0, 0): count from the start. Its
        third field, the journal's inode, tells a count of the journal before a
        compaction replaced it (one written by an older gsmcpd has none)."""
        try:
            lines, size, *inode = (int(field) for field in _file_bytes(self.count_file, follow=False).split())
        except (OSError, ValueError):
            return 0, 0
        info = os.fstat(journal.fileno())
        if lines < 0 or size <= 0 or size > info.st_size or inode not in ([], [info.st_ino]):
            return 0, 0
        journal.seek(size - 1)
        return (lines, size) if journal.read(1) == b"\n" else (0, 0)

    def _remember_count(self, lines: int, state: int) -> None:
        # Only a cache of the journal: a commit never fails for want of writing it.
        with contextlib.suppress(OSError):
            info = os.stat(JOURNAL_NAME, dir_fd=state, follow_symlinks=False)
            fd = _create_shared(COUNT_NAME, os.O_WRONLY | os.O_TRUNC, dir_fd=state)
            try:
                _write_all(fd, b"%d %d %d\n" % (lines, info.st_size, info.st_ino))
            finally:
                os.close(fd)

    def journal(self) -> list[dict]:
        """The journal's records, first first, and a pending commit's last. A line that is
        no JSON object (another account sharing the image can write the journal) is passed
        over, as every other read of the journal does (_record_of); it still counts toward
        the version, as it did when it was appended (_journal_length)."""
        with self._locked(fcntl.LOCK_SH):
            try:
                with open(self.journal_file, "rb") as journal:
                    data = journal.read()
            except FileNotFoundError:
                data = b""
            data = data[:data.rfind(b"\n") + 1]   # a line cut off mid-append is no record
            lines = data.splitlines()
            if lines and _compaction(lines[0]) is not None:
                lines = lines[1:]   # a compaction's count, no record
            records = [record for record in map(_record_of, lines) if record is not None]
            intent = self._pending_intent()
            if intent is not None and not (records and records[-1].get("id") == intent["record"]["id"]):
                records.append(intent["record"])
            return records

    # -- committing ------------------------------------------------------

    def commit(self, changes: dict[str, bytes | None], base_hashes: dict[str, str | None],
               *, user: str, session_id: str, commit_id: str | None = None,
               already_committed: list[str] | None = None, read_back: list[Snapshot] | None = None,
               rebased: dict[str, str] | None = None) -> int:
        """Write `changes` (relpath -> new bytes, None = delete) if every file
        still hashes to `base_hashes[relpath]` (None = must not exist), and so does
        what those stand on (see _conflicts: `base_hashes` is the committer's whole
        base, a module it lacks is one it never saw), all or nothing. A file the disk
        already holds exactly as changed (another's identical commit) is no conflict:
        it is left out, neither written nor journalled, and appended to
        `already_committed` before anything else happens (so the caller has it whatever
        follows); with nothing else to write, no commit is made. A file whose disk holds
        its base's text but for a BOM put on or taken off is no conflict either: it is
        written with the disk's BOM, and `rebased` gets its new hash. Returns the new
        journal length; raises CommitConflict, writing nothing, or OSError (see
        CommitPending for a failure past the commit point).
        `commit_id` names the journal record (random if not given): after any other
        exception, `has_commit(commit_id)` tells whether the commit stands, if it got as
        far as the lock (`locked_for`): one that did not wrote nothing.
        With `read_back`, the image as this commit leaves it is appended to it, read before
        the lock is let go (_read_back), so no later commit is in it: the snapshot a
        committing view steps onto. Left empty if that read fails; the commit stands."""
        check_writable("a commit")
        # Every directory is reached through `dirs` (see dirfd.py): checked once, then
        # held, so no write follows a link swapped in after the check.
        with self._exclusive() as dirs:
            self.locked_for = commit_id
            self._finish_pending()
            for rel in sorted(changes):
                self._refuse_unlisted(rel, dirs)
                if base_hashes.get(rel) is None:   # nor made where its other form may be
                    self._refuse_unlisted(other_form(rel), dirs)
                self._check(rel, dirs)
                if changes[rel] is not None:
                    self._refuse_unreplaceable(rel, dirs)
            # Each changed file read once: what is already there, then what conflicts.
            on_disk = {rel: self._disk_hash(rel, dirs) for rel in changes}
            already = _already_there(changes, base_hashes, on_disk)
            if already_committed is not None:
                already_committed.extend(sorted(already))
            # What is already there is the base the rest stands on.
            base_hashes = {**base_hashes, **already}
            changes = {rel: data for rel, data in changes.items() if rel not in already}
            rebommed = self._bom_changed_only(changes, base_hashes, on_disk, dirs)
            base_hashes = {**base_hashes, **{rel: on_disk[rel] for rel in rebommed}}
            changes = {**changes, **rebommed}
            if rebased is not None:
                rebased.update({rel: sha256(data) for rel, data in rebommed.items() if data is not None})
            conflicts, unreadable = self._conflicts(changes, base_hashes, on_disk)
            if conflicts or unreadable:
                raise CommitConflict(sorted(conflicts), unreadable, how=conflicts,
                                     by=self._made_by(sorted(conflicts)))
            for rel in sorted(changes):   # after the conflicts: one made since is said so first
                self._refuse_unwritable(rel, dirs)
                self._refuse_protected(rel, dirs)
            if changes:
                self._refuse_protected_journal(dirs)
            if not changes:
                self._read_back(read_back)
                return self._journal_length()
            state = dirs.open(STATE_DIR)
            self._sweep_temps([state] + [fd for fd in {dirs.held(_dir_of(rel)) for rel in changes}
                                         if fd is not None])
            intent = {
                "record": {
                    "id": commit_id or secrets.token_hex(8),
                    "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    "user": user, "session": session_id,
                    "files": [{"file": rel, "old": base_hashes.get(rel), "new": sha256(changes[rel])}
                              for rel in sorted(changes)],
                },
                "writes": {},
                "removes": sorted(rel for rel, data in changes.items() if data is None),
            }
            try:
                for rel in sorted(changes):
                    if changes[rel] is not None:
                        intent["writes"][rel] = self._write_temp(rel, changes[rel], dirs)
                # The temps' names made durable before the intent naming them: a temp lost
                # to a power cut the intent survived is taken by _apply for one moved
                # already, and its file never gets the commit.
                for directory in sorted({_dir_of(temp) for temp in intent["writes"].values()}):
                    _fsync_dir(dirs.open(directory))
                # The last moment a move can still be refused: one fresh walk a directory.
                for rel in {_dir_of(rel): rel for rel in sorted(changes, reverse=True)}.values():
                    self._check_unmoved(rel, dirs)
                self._write_intent(intent)
            except BaseException:
                if not _exists(INTENT_NAME, state):   # not committed: leave no trace
                    for temp in intent["writes"].values():
                        with contextlib.suppress(OSError):   # its directory is held: it was written there
                            os.unlink(posixpath.basename(temp), dir_fd=dirs.open(_dir_of(temp)))
                    dirs.unmake()   # a directory no longer empty is someone else's now: it stays
                raise
            try:   # past the commit point: what fails now is finished later, not undone
                _fsync_dir(state)
                version = self._apply(intent)
            except OSError as error:
                raise CommitPending(error) from error
            self._read_back(read_back, {rel: data for rel, data in changes.items() if data is not None})
            return version

    def _read_back(self, read_back: list[Snapshot] | None, written: dict[str, bytes] | None = None) -> None:
        """The image as the commit leaves it, appended to `read_back` (call under the lock,
        once the commit is done); what it wrote is not read again. Only the files' bytes
        are read here: decoding and hashing them is the caller's, once the lock is let go.
        The read a view made right after its commit anyway, moved under the commit's lock:
        a few ms more holding it on a large image (docs/PERFORMANCE.md)."""
        if read_back is None:
            return
        try:
            read_back.append(self._snapshot(written))
        except OSError as error:   # the commit stands: the caller reads the image itself
            log.warning("the image could not be read back under the commit's lock: %s", error)

    def _conflicts(self, changes: dict[str, bytes | None], base_hashes: dict[str, str | None],
                   on_disk: dict[str, str | None]) -> tuple[dict[str, str], list[str]]:
        """The files on disk that are not as the commit's base had them, among those it
        changes and those its new or removed modules stand on (call under the lock): the
        `__init__.py` of each package it writes into (removed since, the module would be
        in no package: no view would see it), each module in a package it removes (one
        added or changed since would be left in no package), and a module it creates
        made meanwhile in the other form (`q.py` beside a new `q/__init__.py`, or the
        other way round: two files for one module). And, apart, such files this account
        may not read: the view never saw them, so no refresh brings them in. The conflicts
        are a dict: file -> what happened to it (see _how). `on_disk`: each changed file's
        hash as the disk has it (None: absent)."""
        conflicts = {}
        for rel in changes:
            disk = on_disk[rel]
            if disk != base_hashes.get(rel):
                conflicts[rel] = _how(base_hashes.get(rel), disk is not None)
        unreadable = set()
        modules, unlisted = None, []   # scanned once, for the first package removed
        for rel, data in changes.items():
            if data is None:
                if rel.endswith("/__init__.py"):
                    package = rel[:-len("__init__.py")]
                    modules = self._scan(None, unlisted) if modules is None else modules
                    for directory in unlisted:   # what it holds would be left in no package
                        if (directory + "/").startswith(package):
                            raise UnlistedDirectory(directory)
                    for other in modules:
                        if other.startswith(package) and other not in changes:
                            data = self._contents(other)
                            if data is UNREADABLE:
                                unreadable.add(other)
                            elif base_hashes.get(other) not in alike_hashes(data):   # a BOM alone: no conflict
                                conflicts[other] = _how(base_hashes.get(other), data is not None)
                continue
            for init in packages_of(rel):
                if (init not in changes and base_hashes.get(init) is not None
                        and not os.path.isfile(os.path.join(self.root, init))):
                    conflicts[init] = "removed"
            twin = other_form(rel)
            if base_hashes.get(rel) is None and twin not in changes and base_hashes.get(twin) is None:
                data = self._contents(twin)
                if data is UNREADABLE:
                    unreadable.add(twin)
                elif data is not None:
                    conflicts[twin] = "created"
        return conflicts, sorted(unreadable)

    def _made_by(self, files: list[str]) -> dict[str, dict | None]:
        """Who made each file as the disk has it now (call under the lock): the journal's
        last commit of it, {"user", "session", "time"}, if that commit left it so; None
        if not, or if no commit names it: the disk's content came from outside gsmcpd.
        A file this account may not read is left out."""
        disk = {}
        for rel in files:
            data = self._contents(rel)
            if data is not UNREADABLE:
                disk[rel] = sha256(data)
        last = {}   # file -> (record, the hash it left the file with)
        for record in self._records_from_end():
            for entry in record_entries(record):
                rel = entry["file"]
                if rel in disk and rel not in last:
                    last[rel] = (record, entry.get("new"))
            if len(last) == len(disk):
                break
        # Strings only: another account sharing the image can write the journal.
        return {rel: ({key: value if isinstance(value := last[rel][0].get(key), str) else None
                       for key in ("user", "session", "time")}
                      if rel in last and last[rel][1] == digest else None)
                for rel, digest in disk.items()}

    def _records_from_end(self, within: int | None = None, holding: bytes = b"", pauses: bool = False):
        """The journal's records, last first (call under the lock), read back from its end
        a chunk at a time: a conflict asks only for the last commits of a few files, and a
        pending commit's finish for the last record. A line that is no JSON object is
        passed over. `within`: JournalScanLimit once more than that many bytes would be
        read; `holding`: only lines holding those bytes are parsed (a scan for one session's);
        `pauses`: None is yielded after each chunk, where a caller may leave off and come
        back (the journal is held open: it reads the file as it was, whatever is appended
        or renamed over it meanwhile)."""
        try:
            journal = open(self.journal_file, "rb")
        except FileNotFoundError:
            return
        with journal:
            fd = journal.fileno()
            end, rest = _complete_length(fd, os.fstat(fd).st_size), b""
            last = end
            while end > 0:
                start = max(0, end - JOURNAL_CHUNK)
                if within is not None and last - start > within:
                    raise JournalScanLimit(within)
                lines, rest = os.pread(fd, end - start, start) + rest, b""
                if start > 0:   # the first line's start is in the chunk before
                    rest, _, lines = lines.partition(b"\n")
                for line in _lines_holding(lines, holding):
                    record = _record_of(line)
                    if record is not None:
                        yield record
                end = start
                if pauses:
                    yield None

    def has_commit(self, commit_id: str) -> bool:
        """True once the commit named `commit_id` is decided (applied or pending). Asked
        right after that commit was tried (its record, if any, is then the pending intent's
        or the journal's last), and by the session's next commit or refresh to settle one
        that could not tell (View._settle), however many commits others made since: the
        journal is read back from its end until the record is found."""
        with self._locked(fcntl.LOCK_SH):
            return any(record.get("id") == commit_id for record in self._decided_records())

    def commits_of_call(self, session_id: str, seq) -> list[dict] | None:
        """The records of the commits that stand (applied or pending) of session
        `session_id`'s call `seq` (see call_tag), last first: asked by the router, on its
        loop, once the call's worker is gone, so without waiting. None if that cannot be
        told now: none found while the lock is held (by another session's commit, which
        finishes a pending one first, or by the worker not quite gone), or none found within
        CALL_SCAN_LIMIT bytes of the journal's end. The scan stops at the session's record
        of an earlier call: this call's come after it. (A session's first call has none, so
        the scan goes on to the bound; what it found by then stands all the same.)
        On a store made with a `call_scan_step`, each call reads back at most that many
        bytes and returns READING_ON until the scan is done: ask again, it reads on where it
        left off. Asked again once done, the journal is read again only if it changed."""
        if not os.path.isdir(self._state):
            return []   # never committed to
        of = (session_id, call_tag(seq), CALL_SCAN_LIMIT)
        scan = self._call_scan
        if scan is not None and scan.of == of and not scan.done:   # a look under way
            self._read_on(scan)
            return scan.answer() if scan.done else READING_ON
        try:
            held = self._locked(fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            # Read all the same: a record found stands, whoever holds the lock. The intent
            # is read before the journal, and a commit appends its record to the journal
            # before it removes the intent, so neither read misses it.
            held = None
        with held or contextlib.nullcontext():
            intent = self._pending_intent()
            journal = self._journal_key()
            if scan is not None and scan.of == of and journal is not None and journal == scan.journal:
                scan.look_again(intent, held is not None)   # the journal as that look read it
            else:
                if scan is not None:
                    scan.close()
                scan = self._call_scan = _CallScan(of, journal, intent, held is not None, self._records_from_end(
                    within=CALL_SCAN_LIMIT, holding=session_id.encode(), pauses=True))
                self._read_on(scan)   # its first step under the lock: the journal is opened in it
        return scan.answer() if scan.done else READING_ON

    def _read_on(self, scan: "_CallScan") -> None:
        try:
            scan.read_on(self.call_scan_step)
        except BaseException:   # a read failed: the next look begins again
            self._call_scan = None
            scan.close()
            raise

    def _journal_key(self) -> tuple | None:
        """What tells the journal changed (another file renamed over it, appended to), None
        if there is none."""
        try:
            journal = os.stat(self.journal_file)
        except FileNotFoundError:
            return None
        return journal.st_dev, journal.st_ino, journal.st_size, journal.st_mtime_ns

    def _decided_records(self):
        """Every decided commit's record, last first (call under the lock): a pending
        intent's, then the journal's."""
        intent = self._pending_intent()
        if intent is not None:
            yield intent["record"]
        yield from self._records_from_end()

    def keep_record(self, commit_id: str) -> None:
        """Mark the commit `commit_id`, whose session is about to ask whether it stands and
        may not be told, so that compaction keeps its record, if it has one, until
        release_record: its session settles it by that record (has_commit) at its next
        commit, refresh or abort, however many commits others made since. Taken without
        the lock (what failed may be the wait for it), as soon as the commit failed:
        compaction leaves out only a record JOURNAL_KEEP commits old. Only keeps a record:
        never fails (the settle then reads the journal as it is). The mark names this
        process (holders.this_process): once it is gone, compaction and recover remove it."""
        check_writable("marking a commit unsettled")
        name = self._unsettled_name(commit_id)
        with contextlib.suppress(OSError), self._state_held() as state:
            fd = _create_shared(name, os.O_WRONLY | os.O_TRUNC, dir_fd=state)
            try:   # its holder: a worker killed unsettled leaves it to _sweep_dead_marks
                _write_all(fd, holders.this_process())
            finally:
                os.close(fd)

    def release_record(self, commit_id: str) -> None:
        """Compaction may leave the record of `commit_id` out again (keep_record): settled."""
        check_writable("unmarking a commit unsettled")
        name = self._unsettled_name(commit_id)
        with contextlib.suppress(OSError), self._state_held() as state:
            os.unlink(name, dir_fd=state)

    @staticmethod
    def _unsettled_name(commit_id: str) -> str:
        name = f"unsettled.{commit_id}"
        if not UNSETTLED.fullmatch(name):
            raise ValueError(f"commit id {commit_id!r} is not a commit's: a call tag (call_tag), "
                             "then 1 to 64 lowercase hex digits")
        return name

    def finish_pending(self) -> bool:
        """Finish a commit left pending on disk (True if there was one), as every commit
        does first: for a session that settled its own commit found pending, so it is not
        left for whichever commit comes next."""
        check_writable("finishing a pending commit")
        with self._exclusive():
            return self._finish_pending()

    def recover(self, wait: bool = True) -> bool:
        """Finish a commit that was killed past its commit point (True if there was
        one), and remove the temp files of any killed before it, image-wide (a commit
        sweeps only the directories it writes to), and the unsettled marks of processes
        gone (_sweep_dead_marks). `wait=False`: BlockingIOError at once
        if another process holds the lock."""
        check_writable("tidying the image")
        with self._exclusive(wait) as dirs:
            finished = self._finish_pending()
            with _named_in(STATE_DIR):
                self._sweep_temps([dirs.open(STATE_DIR)])
            _sweep_dead_marks(dirs.open(STATE_DIR), lambda: {record.get("id") for record in self._records_from_end()})
            # Every directory of the image but hidden ones (.gsmcpd among them) and caches;
            # walk_held holds each by descriptor and descends into no link.
            for fd in walk_held(dirs.root_fd, lambda name: not name.startswith(".") and name != "__pycache__"):
                self._sweep_temps([fd])
            return finished

    # -- the intent --------------------------------------------------------

    def _pending_intent(self) -> dict | None:
        """The intent of a commit not yet fully applied (call under the lock)."""
        try:
            text = _file_bytes(self.intent_file)
        except FileNotFoundError:
            return None
        try:
            intent = json.loads(text)
        except ValueError as error:   # written by rename, so only tampering gets here
            raise ValueError(f"{self.intent_file} is not a commit intent ({error}); "
                             f"restore it or move it away") from error
        missing = _intent_shape_problem(intent)
        if missing:
            raise ValueError(f"{self.intent_file} is not a commit intent ({missing}); "
                             f"restore it or move it away")
        return intent

    def _finish_pending(self) -> bool:
        intent = self._pending_intent()
        if intent is None:
            return False
        self._apply(intent)
        return True

    def _write_intent(self, intent: dict) -> None:
        # the commit point (made durable by the caller)
        with _named_in(STATE_DIR):
            self._replace_state_file(INTENT_NAME, json.dumps(intent, sort_keys=True).encode(),
                                     self._dirs.open(STATE_DIR))

    def _apply(self, intent: dict) -> int:
        """Make the disk what the intent says; safe to repeat after a kill at any step."""
        dirs = self._dirs
        for rel in sorted({*intent["writes"], *intent["removes"]}):
            self._check(rel, dirs)   # a link planted since the commit checked (or never did)
        for rel, temp in sorted(intent["writes"].items()):
            fd = dirs.open(_dir_of(rel))   # the temp is beside its target (_intent_shape_problem)
            with contextlib.suppress(FileNotFoundError):   # moved by an earlier attempt
                os.replace(posixpath.basename(temp), posixpath.basename(rel), src_dir_fd=fd, dst_dir_fd=fd)
            _fsync_dir(fd)
        for rel in intent["removes"]:
            self._remove(rel, dirs)
        state = dirs.open(STATE_DIR)
        if not self._journaled(intent):
            self._append_journal(intent["record"], state)
        version = self._journal_length()
        self._compact_journal(version, state)
        self._remember_count(version, state)
        os.unlink(INTENT_NAME, dir_fd=state)
        _fsync_dir(state)
        return version

    def _pending_bytes(self, rel: str, temp: str) -> bytes | None:
        """What `rel` holds once a pending commit is applied: its temp file's bytes
        while the temp is there, else (moved already) the file's own."""
        try:
            return _file_bytes(os.path.join(self.root, temp))
        except FileNotFoundError:
            return self._read(rel)
        except PermissionError:
            return None                       # not this account's to read

    def _journaled(self, intent: dict) -> bool:
        """Whether a pending commit's journal line is written (it is then the last record;
        a line after it that is no record, which only another account's write can put
        there, is passed over as every reader of the journal passes it over)."""
        last = next(self._records_from_end(), None)
        return last is not None and last.get("id") == intent["record"]["id"]

    def _refuse_unlisted(self, rel: str, dirs: ImageDirs) -> None:
        """UnlistedDirectory for the outermost directory `rel` lies in that is there but
        this account may not list or enter: the session's view left it out (see _scan)."""
        parts = rel.split("/")[:-1]
        for depth in range(1, len(parts) + 1):
            directory = "/".join(parts[:depth])
            try:
                with readable(dirs.open(directory)):
                    pass
            except (FileNotFoundError, NotADirectoryError, UntrustedLink):
                return   # made by this commit, or refused by _check
            except PermissionError:
                raise UnlistedDirectory(directory) from None

    def _check(self, rel: str, dirs: ImageDirs) -> None:
        """Open `rel`'s directory into `dirs`, refusing (UnsafePath) a symbolic link on
        the way that another account made; a link this process's account or root owns
        (say image/mypkg -> ~/src/mypkg, made by the user) is trusted and followed. A
        directory not there yet is made, and checked, when a temp file is written."""
        try:
            dirs.open(_dir_of(rel))
        except UntrustedLink as error:
            raise UnsafePath(rel) from error
        except (FileNotFoundError, NotADirectoryError):
            pass

    def _refuse_unreplaceable(self, rel: str, dirs: ImageDirs) -> None:
        """LinkedModule if `rel` is a symbolic link in its (held) directory,
        DirectoryInTheWay if it is a directory: what the commit's rename must not or
        cannot replace."""
        held = dirs.held(_dir_of(rel))
        if held is None:
            return   # its directory is made by this commit: nothing in it yet
        name = posixpath.basename(rel)
        try:
            mode = os.stat(name, dir_fd=held, follow_symlinks=False).st_mode
        except FileNotFoundError:
            return
        if stat.S_ISLNK(mode):
            raise LinkedModule(rel, os.readlink(name, dir_fd=held))
        if stat.S_ISDIR(mode):
            raise DirectoryInTheWay(rel)

    def _refuse_unwritable(self, rel: str, dirs: ImageDirs) -> None:
        """UnwritableModule if `rel` is a file in its (held) directory that this account
        could not write, or (sticky directory) not rename over: with per-user workers the
        file's permissions are the owner's word on who may change it."""
        held = dirs.held(_dir_of(rel))
        if held is None:
            return   # its directory is made by this commit: nothing in it yet
        name = posixpath.basename(rel)
        try:
            info = os.stat(name, dir_fd=held, follow_symlinks=False)
        except FileNotFoundError:
            return
        if not stat.S_ISREG(info.st_mode) or os.geteuid() == 0:
            return   # a link or directory is refused (or removed) as such; root may write all
        directory = os.fstat(held)
        where = f"its directory {_dir_of(rel)}/" if _dir_of(rel) else "the image's directory"
        if not os.access(name, os.W_OK, dir_fd=held, effective_ids=True):
            if os.fstatvfs(held).f_flag & os.ST_RDONLY:
                return   # not the owner's word: a read-only file system, whose first write fails (EROFS)
            # A shared image's file, but this account is not of the group that shares it:
            # the administrator's fix (the group), not the owner's (the mode).
            outside_group = bool(info.st_mode & stat.S_IWGRP) and not _in_group(info.st_gid)
            if outside_group:
                group, account = group_name(info.st_gid), account_name(os.geteuid())
                why = f"its file is writable by its group {group}, and this account is not in it"
                remedy = (f"an administrator must add {account} to {group} (usermod -aG {group} "
                          f"{account}; the sessions it opens after that are in it)")
            else:
                why, remedy = "its file is not writable by it", "its owner must make it writable to you"
            group_opens_the_directory = (outside_group and directory.st_gid == info.st_gid
                                         and directory.st_mode & stat.S_IWGRP)
            if not (group_opens_the_directory or os.access(".", os.W_OK, dir_fd=held, effective_ids=True)):
                # The file is replaced by a rename there: its own mode alone would not do.
                remedy += (f", and {where} (owner {account_name(directory.st_uid)}) must be made "
                           "writable to you too")
            if not outside_group:
                remedy += " (group-writable in a shared image)"
        elif directory.st_mode & stat.S_ISVTX and os.geteuid() not in (info.st_uid, directory.st_uid):
            why = "its directory is sticky and the file another account's"   # the rename would fail: EPERM
            # Sticky, only the file's or the directory's owner may replace it, whatever its mode.
            remedy = (f"its owner must change it, or {where} lose its sticky bit (chmod -t, by its "
                      f"owner {account_name(directory.st_uid)})")
        else:
            return
        raise UnwritableModule(rel, account_name(info.st_uid), stat.S_IMODE(info.st_mode), why, remedy)

    def _refuse_protected(self, rel: str, dirs: ImageDirs) -> None:
        """ProtectedFile if `rel`'s file or its (held) directory is immutable or
        append-only: the rename past the commit point would fail, even root's, and the
        commit would stand on disk half applied, failing every commit after it."""
        held = dirs.held(_dir_of(rel))
        if held is None:
            return   # its directory is made by this commit: nothing in it yet
        protected = protection_of(".", held)
        if protected:
            where = f"{_dir_of(rel)} in the image" if _dir_of(rel) else "the image's directory"
            raise ProtectedFile(where, protected, f"{rel} cannot be written or removed in it")
        protected = protection_of(posixpath.basename(rel), held)
        if protected:
            raise ProtectedFile(f"{rel} in the image", protected, "it cannot be replaced or removed")

    def _refuse_protected_journal(self, dirs: ImageDirs) -> None:
        """ProtectedFile if the journal cannot take the commit's line: an immutable file
        (append-only takes it), or a state directory either flag keeps the intent out of."""
        state = dirs.open(STATE_DIR)
        protected = protection_of(".", state)
        if protected:
            raise ProtectedFile(f"{STATE_DIR} in the image", protected, "the commit's intent cannot be put in it")
        if protection_of(JOURNAL_NAME, state) == "immutable":
            raise ProtectedFile(f"{STATE_DIR}/{JOURNAL_NAME} in the image", "immutable",
                                "the commit's record cannot be added")

    def _check_unmoved(self, rel: str, dirs: ImageDirs) -> None:
        """Refuse the commit if `rel`'s held directory is no longer the one its path
        reaches (swapped for a link, or moved, by another account since it was opened)."""
        if dirs.held(_dir_of(rel)) is None:
            return   # a removal from a directory that is not there: nothing held, nothing written
        try:
            unmoved = dirs.unmoved(_dir_of(rel))
        except UntrustedLink as error:
            raise UnsafePath(rel) from error
        if not unmoved:
            raise DirectoryMoved(rel)

    def _sweep_temps(self, directories) -> None:
        """Temp files a killed commit left behind (or links planted in their place) in
        the held `directories`; under the exclusive lock no other commit is writing, so
        every one is stale."""
        for directory in directories:
            with readable(directory) as reading, os.scandir(reading) as entries:
                stale = [entry.name for entry in entries if TEMP_NAME.fullmatch(entry.name)
                         and (entry.is_symlink() or entry.is_file(follow_symlinks=False))]
            for name in stale:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(name, dir_fd=directory)

    def _disk_hash(self, rel: str, dirs: ImageDirs) -> str | None:
        return sha256(self._disk_bytes(rel, dirs))

    def _disk_bytes(self, rel: str, dirs: ImageDirs) -> bytes | None:
        try:
            return _file_bytes(posixpath.basename(rel), dir_fd=dirs.open(_dir_of(rel)))
        except (FileNotFoundError, NotADirectoryError):
            return None

    def _bom_changed_only(self, changes: dict[str, bytes | None], base_hashes: dict[str, str | None],
                          on_disk: dict[str, str | None], dirs: ImageDirs) -> dict[str, bytes | None]:
        """The changed files whose disk holds the base's text but for a BOM put on or taken
        off since (alike_hashes), as refresh takes them: no conflict, the change goes over
        it keeping the disk's BOM. File -> the change's bytes with that BOM, None for a file
        it removes, whatever BOM it has (call under the lock)."""
        rebommed = {}
        for rel, data in changes.items():
            base = base_hashes.get(rel)
            if base is None or on_disk[rel] in (base, None):
                continue
            disk = self._disk_bytes(rel, dirs)
            if disk is None or base not in alike_hashes(disk):
                continue   # another text
            if data is None:
                rebommed[rel] = None
                continue
            if len(alike_hashes(data)) < 2:
                continue   # source a BOM cannot go on (another codec)
            plain = data[len(UTF8_BOM):] if data.startswith(UTF8_BOM) else data
            rebommed[rel] = UTF8_BOM + plain if disk.startswith(UTF8_BOM) else plain
        return rebommed

    def _write_temp(self, rel: str, data: bytes, dirs: ImageDirs) -> str:
        """`data` in a fsynced temp file beside `rel` (its mode kept: a commit never
        widens who may read); returns the temp's path relative to the image. Missing
        directories are made (dirs.made lists them)."""
        directory, name = posixpath.split(rel)
        try:
            fd = dirs.open(directory, make=True)
        except UntrustedLink as error:   # planted where a directory was missing at the check
            raise UnsafePath(rel) from error
        temp = temp_name(name, os.getpid())
        try:
            mode = stat.S_IMODE(os.stat(name, dir_fd=fd).st_mode)
        except FileNotFoundError:
            # A new module: its directory's read and write bits, whatever the umask, so a
            # shared (group-writable) image's other accounts may commit to it too; never
            # writable by every account, even in a directory that is.
            mode = stat.S_IMODE(os.fstat(fd).st_mode) & 0o664
        try:
            out = _create_own(temp, dir_fd=fd)
        except OSError as error:   # named in the image: the bare name says not where
            raise OSError(error.errno, error.strerror, posixpath.join(directory, temp)) from None
        try:
            os.fchmod(out, mode)
            _write_all(out, data)
            os.fsync(out)
        except BaseException:
            os.close(out)
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=fd)
            raise
        os.close(out)
        return posixpath.join(directory, temp)

    def _remove(self, rel: str, dirs: ImageDirs) -> None:
        directory = _dir_of(rel)
        try:
            fd = dirs.open(directory)
        except (FileNotFoundError, NotADirectoryError):   # removed with its package by an earlier attempt
            return
        with contextlib.suppress(FileNotFoundError):
            os.unlink(posixpath.basename(rel), dir_fd=fd)
        _fsync_dir(fd)
        # A package directory left with nothing but caches goes too. A linked one stays
        # (the link is the user's, and so is what it points to), and so does one that
        # is no longer the entry its parent names (moved, or swapped for a link).
        while directory:
            parent_path, name = posixpath.split(directory)
            fd, parent = dirs.open(directory), dirs.open(parent_path)
            if not is_entry(parent, name, fd):
                return
            with readable(fd) as reading:
                names = os.listdir(reading)
            if any(entry != "__pycache__" for entry in names):
                return
            for cache in names:
                _remove_tree(fd, cache)
            os.rmdir(name, dir_fd=parent)
            dirs.forget(directory)
            _fsync_dir(parent)
            directory = parent_path

    def _append_journal(self, record: dict, state: int) -> None:
        line = (json.dumps(record, sort_keys=True) + "\n").encode()
        with _named_in(STATE_DIR):
            try:
                fd = os.open(JOURNAL_NAME, os.O_RDWR | os.O_APPEND | os.O_NOFOLLOW, dir_fd=state)
            except FileNotFoundError:
                fd = _create_shared(JOURNAL_NAME, os.O_RDWR | os.O_APPEND, dir_fd=state)
        try:
            size = os.fstat(fd).st_size
            complete = _complete_length(fd, size)
            if complete < size:   # the tail of an append that was cut off: no record
                os.ftruncate(fd, complete)
            _write_all(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)

    def _compact_journal(self, version: int, state: int) -> None:
        """Rewrite the journal (of `version` records) bounded, once it has grown past
        journal_limit and twice its size after the last compaction (so one whose kept
        records alone come near the limit is not read whole and rewritten on every commit): the last
        JOURNAL_KEEP records, and before them each file's last record (what _made_by
        reads) and each unsettled commit's (keep_record), in their order, behind the count
        of those left out. A temp renamed over it: a crash leaves one journal or the other,
        whole (a temp left is swept as a commit's). Only bounds the journal: a commit never
        fails for want of it."""
        with contextlib.suppress(OSError):
            fd = os.open(JOURNAL_NAME, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=state)
            with open(fd, "rb") as journal:
                size = os.fstat(fd).st_size
                header = _compaction(journal.readline())
                if size <= max(self.journal_limit, 2 * header[1] if header else 0):
                    return
                data = os.pread(fd, _complete_length(fd, size), 0)
            lines = [line for line in data.split(b"\n")[1 if header else 0:] if line.strip()]
            # Written even with nothing left out: its count line's size is what spares the
            # next commits reading it whole again, until it has doubled.
            _sweep_dead_marks(state, lambda: {record.get("id") for record in map(_record_of, lines) if record})
            kept = _worth_keeping(lines, _unsettled_ids(state))
            body = b"".join(line + b"\n" for line in kept)
            count = {"dropped": version - len(kept), "size": len(body)}
            head = json.dumps(count, sort_keys=True).encode() + b"\n"
            self._replace_state_file(JOURNAL_NAME, head + body, state)
            _fsync_dir(state)

    def _replace_state_file(self, name: str, data: bytes, state: int) -> None:
        """`name` in the state directory replaced, whole, by `data` (every account reads
        it: 0664), never through a link; the rename made durable by the caller."""
        temp = temp_name(name, os.getpid())
        out = _create_own(temp, 0o664, dir_fd=state)
        try:
            try:
                with contextlib.suppress(PermissionError):
                    os.fchmod(out, 0o664)   # whatever the umask
                with contextlib.suppress(OSError):   # the group of the one replaced: the sharing accounts'
                    os.fchown(out, -1, os.stat(name, dir_fd=state, follow_symlinks=False).st_gid)
                _write_all(out, data)
                os.fsync(out)
            finally:
                os.close(out)
            os.replace(temp, name, src_dir_fd=state, dst_dir_fd=state)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=state)
            raise


class _Held:
    """A flock held on an open descriptor; closing the descriptor releases it. Also a
    context manager, and closed when dropped: a break that lands before a `with` is
    entered must not leave the image locked. (A class, not a generator context
    manager: a new worker takes the lock on its session open's path.)"""

    __slots__ = ("fd",)

    def __init__(self, fd: int):
        self.fd = fd

    def __enter__(self) -> "_Held":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def close(self) -> None:
        fd, self.fd = self.fd, None
        if fd is not None:
            os.close(fd)

    __del__ = close


def _file_bytes(path: str, follow: bool = True, dir_fd: int | None = None) -> bytes:
    """A regular file's bytes. Anything else at `path` (a FIFO another account put in a
    module's place, a device) reads as missing: opened non-blocking and refused, it can
    never stall a read under the image's lock, and every commit waiting on it."""
    flags = os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | (0 if follow else os.O_NOFOLLOW)
    fd = os.open(path, flags, dir_fd=dir_fd)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise FileNotFoundError(errno.ENOENT, "not a regular file", path)
    with open(fd, "rb", buffering=0) as file:
        return file.readall()


def _already_there(changes: dict[str, bytes | None], base_hashes: dict[str, str | None],
                   on_disk: dict[str, str | None]) -> dict[str, str | None]:
    """The changed files the disk holds as changed (the same text, if maybe not the same
    BOM: alike_hashes) though not as the base had them: file -> its hash on disk
    (`on_disk`'s; None: removed)."""
    return {rel: on_disk[rel] for rel, data in changes.items()
            if on_disk[rel] != base_hashes.get(rel) and on_disk[rel] in alike_hashes(data)}


def _compaction(line: bytes) -> tuple[int, int] | None:
    """(records left out, size of the records kept) from a compacted journal's first
    line; None if `line` is no such count (a record: a journal never compacted)."""
    if not line.startswith(b'{"dropped": '):
        return None
    try:
        count = json.loads(line)
    except (ValueError, RecursionError):   # another account sharing the image can write the journal
        return None
    dropped, size = count.get("dropped"), count.get("size")
    if not all(isinstance(value, int) and value >= 0 for value in (dropped, size)):
        return None
    return dropped, size


def _unsettled_ids(state: int) -> set[str]:
    """The commit ids keep_record marked in the state directory `state`."""
    with readable(state) as reading:
        names = os.listdir(reading)
    return {match.group(1) for match in map(UNSETTLED.fullmatch, names) if match}


def _sweep_dead_marks(state: int, recorded) -> None:
    """Remove the unsettled marks (keep_record) whose holder is gone: a worker killed
    before its session settled its commit, which would otherwise keep that record through
    every compaction. Under the exclusive lock, a pending commit finished; a mark whose
    holder may live, this daemon's or another's sharing the image, is never removed
    (holders.holder_gone). A mark naming no holder (an older gsmcpd's, which wrote none)
    is removed only if its commit has no record (`recorded()`: the journal's ids): it keeps
    nothing, and a session that may still settle by it finds none either way (its commit
    failed before the mark was made: no record comes later). One whose commit has a
    record is kept: its holder, if another daemon's live session, may settle by it
    whenever it next commits, refreshes or aborts, and nothing bounds when that is."""
    with readable(state) as reading:
        names = [name for name in os.listdir(reading) if UNSETTLED.fullmatch(name)]
    nameless = []
    for name in names:
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=state)
        except OSError:   # released meanwhile, or a link planted: not a mark to judge
            continue
        try:
            content = os.read(fd, 64) if stat.S_ISREG(os.fstat(fd).st_mode) else None
        finally:
            os.close(fd)
        if content is None:   # planted: no mark of keep_record's, left to whoever planted it
            continue
        if holders.holder_gone(content):
            with contextlib.suppress(OSError):
                os.unlink(name, dir_fd=state)
        elif holders.holder_of(content) is None:
            nameless.append(name)
    if nameless:
        ids = recorded()
        for name in nameless:
            if UNSETTLED.fullmatch(name).group(1) not in ids:
                with contextlib.suppress(OSError):
                    os.unlink(name, dir_fd=state)


def _record_of(line: bytes) -> dict | None:
    """The record a journal line holds; None for a blank line or one that is no JSON object
    (not JSON, nested past the parser's depth, another value): another account sharing the
    image can write the journal."""
    if not line.strip():
        return None
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return record if isinstance(record, dict) else None


def _lines_holding(lines: bytes, holding: bytes):
    """The lines of `lines` (split at newlines) that hold the bytes `holding`, last first. The
    bytes are searched for first, so a line without them is never split out (a scan for
    one session's records passes over the others' lines at the speed of bytes.rfind)."""
    if not holding:
        yield from reversed(lines.split(b"\n"))
        return
    if b"\n" in holding:   # no line holds a newline
        return
    end = len(lines)
    while (at := lines.rfind(holding, 0, end)) >= 0:
        end = lines.rfind(b"\n", 0, at) + 1
        stop = lines.find(b"\n", at)
        yield lines[end:stop if stop >= 0 else len(lines)]


class _CallScan:
    """One look for a call's commits (ImageStore.commits_of_call), as the image was when it
    began: the pending intent's record, then the session's records in the journal read back
    from its end (`reading`: _records_from_end with pauses) up to its first not of the call,
    a step at a time."""

    def __init__(self, of, journal, intent, held, reading):
        self.of = of                  # (session id, call tag, CALL_SCAN_LIMIT)
        self.journal = journal        # ImageStore._journal_key when it began
        self.look_again(intent, held)
        self.records, self.bounded, self.done = [], False, False
        self._reading = reading

    def look_again(self, intent, held):
        """The intent read now, and whether the lock was taken for it."""
        self.intent = [intent["record"]] if intent is not None else []
        self.held = held

    def read_on(self, step):
        """Read on, at most `step` bytes (None: to the end); done once the session's record
        of another call, the journal's start or CALL_SCAN_LIMIT is reached."""
        chunks = None if step is None else max(1, step // JOURNAL_CHUNK)
        session_id, tag, _ = self.of
        try:
            for record in self._reading:
                if record is None:   # a chunk read
                    if chunks is not None and (chunks := chunks - 1) == 0:
                        return
                elif record.get("session") == session_id:
                    self.records.append(record)
                    if not _of_call(record, tag):
                        break
        except JournalScanLimit:
            self.bounded = True
        self.close()

    def close(self):
        self._reading.close()
        self.done = True

    def answer(self) -> list[dict] | None:
        """ImageStore.commits_of_call's, once done."""
        session_id, tag, _ = self.of
        found = {}
        for record in itertools.chain(self.intent, self.records):
            if record.get("session") != session_id:
                continue
            if not _of_call(record, tag):
                break
            found.setdefault(record["id"], record)   # a pending one may be journalled already
        else:
            if self.bounded:
                return list(found.values()) or None
        return list(found.values()) if found or self.held else None


def _of_call(record: dict, tag: str) -> bool:
    """Whether the journal record is of the call tagged `tag` (call_tag): its id begins so."""
    record_id = record.get("id")
    return isinstance(record_id, str) and record_id.startswith(tag)


def record_entries(record) -> list[dict]:
    """The file entries of a journal record ({"file": name, "old", "new"}), those of the
    shape a commit writes only: another account sharing the image can write the journal,
    so a record read back may be anything."""
    entries = record.get("files") if isinstance(record, dict) else None
    if not isinstance(entries, list):
        return []
    return [entry for entry in entries if isinstance(entry, dict) and isinstance(entry.get("file"), str)]


def _worth_keeping(lines: list[bytes], unsettled: set[str] = frozenset()) -> list[bytes]:
    """The journal lines compaction keeps, in order: the last JOURNAL_KEEP, each file's
    last record (a record naming a file no later one names) and the records of the
    commit ids `unsettled` (keep_record)."""
    kept, named_later = [], set()
    for index in range(len(lines) - 1, -1, -1):
        record = _record_of(lines[index])
        commit_id = record.get("id") if isinstance(record, dict) else None
        named = {entry["file"] for entry in record_entries(record)}
        if (index >= len(lines) - JOURNAL_KEEP or not named <= named_later
                or (isinstance(commit_id, str) and commit_id in unsettled)):
            kept.append(lines[index])
        named_later |= named
    kept.reverse()
    return kept


def _dir_of(rel: str) -> str:
    """The image directory a module file (or its temp) is in: "" for the root."""
    return posixpath.dirname(rel)


def _exists(name: str, dir_fd: int) -> bool:
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


def _complete_length(fd: int, size: int) -> int:
    """The length of the file's newline-terminated prefix (what follows the last
    newline was cut off mid-append)."""
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return size
    end = size
    while end > 0:
        start = max(0, end - JOURNAL_CHUNK)
        newline = os.pread(fd, end - start, start).rfind(b"\n")
        if newline >= 0:
            return start + newline + 1
        end = start
    return 0


def _importable(stem: str) -> bool:
    """A file or directory name an import statement can reach: an identifier as Python
    reads it (NFKC), since `import ｐkg` looks for `pkg`, never for `ｐkg`."""
    return stem.isidentifier() and (stem.isascii() or unicodedata.normalize("NFKC", stem) == stem)


def _entry_name(entry: os.DirEntry) -> str:
    return entry.name


def _sorted_entries(directory: str):
    """An iterator over the directory's entries by name (read whole now: no scandir is
    left open while the walk is deeper)."""
    with os.scandir(directory) as scan:
        return iter(sorted(scan, key=_entry_name))


def _create_shared(path: Path | str, flags: int, dir_fd: int | None = None) -> int:
    """Create a state file group-writable whatever the umask: with per-user workers,
    every account sharing the image (through a group) must be able to use it."""
    # O_NOFOLLOW: the state directory is shared, and a link planted at one of these
    # names would have this account's process write wherever it points.
    fd = os.open(path, flags | os.O_CREAT | os.O_NOFOLLOW, 0o664, dir_fd=dir_fd)
    with contextlib.suppress(PermissionError):
        os.fchmod(fd, 0o664)  # fails only if another account created it first
    return fd


def _in_group(gid: int) -> bool:
    return gid == os.getegid() or gid in os.getgroups()


@contextlib.contextmanager
def _named_in(directory: str):
    """An OSError met on a name relative to a descriptor of the image's `directory`
    names it in the image, as a module's temp file is named: the bare name says not where."""
    try:
        yield
    except OSError as error:
        for which in ("filename", "filename2"):   # a rename's error names both
            name = getattr(error, which)
            if isinstance(name, str) and not name.startswith("/"):
                setattr(error, which, posixpath.join(directory, name))
        raise


def _create_own(name: str, mode: int = 0o600, *, dir_fd: int) -> int:
    """A new file `name` in the directory `dir_fd` for this writer alone, never through
    a link: whatever is there (a temp left by a killed commit, or a link another account
    planted) is removed first, and O_EXCL refuses anything that takes its place meanwhile."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(name, dir_fd=dir_fd)
    return os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode,
                   dir_fd=dir_fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _remove_tree(dir_fd: int, name: str) -> None:
    """Remove `name` from the held directory `dir_fd`: a file or link goes (never what
    a link points to), a directory with all below it (rmtree by descriptor)."""
    try:
        os.unlink(name, dir_fd=dir_fd)
    except IsADirectoryError:
        shutil.rmtree(name, dir_fd=dir_fd)
