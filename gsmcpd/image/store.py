"""The committed image on disk: snapshot reads, atomic commits, the journal.

The image is a directory of Python source. Its state lives beside the source in
a hidden `.gsmcpd/` directory: `lock` (fcntl.flock: shared to read a snapshot,
exclusive to commit), `journal.jsonl` (one JSON line per commit) and
`journal.count` (how many lines the journal had at which size, so opening a view
does not read the whole history to learn its version). A commit
writes each file as temp file + fsync + rename + directory fsync, so a crash at
any point leaves each file either old or new, never torn.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import stat
import re
import time
from dataclasses import dataclass
from pathlib import Path

STATE_DIR = ".gsmcpd"
LOCK_NAME = "lock"
JOURNAL_NAME = "journal.jsonl"
COUNT_NAME = "journal.count"
TEMP_NAME = re.compile(r"\..+\.tmp-\d+")   # _write_atomically's temp files


def sha256(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


def module_name_of(relpath: str) -> str:
    """'shop/models.py' -> 'shop.models'; 'shop/__init__.py' -> 'shop'."""
    parts = relpath[:-3].split("/")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def relpath_of(module_name: str, *, package: bool = False) -> str:
    base = module_name.replace(".", "/")
    return base + "/__init__.py" if package else base + ".py"


@dataclass
class Snapshot:
    files: dict[str, bytes]      # relpath -> content
    version: int                 # journal length when read


class CommitConflict(Exception):
    """Files changed on disk since the view read them; nothing was written."""

    def __init__(self, files: list[str]):
        super().__init__(", ".join(files))
        self.files = files


class ImageStore:
    def __init__(self, image_dir: Path):
        self.image_dir = Path(image_dir).resolve()
        self.state_dir = self.image_dir / STATE_DIR
        self.journal_path = self.state_dir / JOURNAL_NAME
        self.count_path = self.state_dir / COUNT_NAME
        self._lock_path = str(self.state_dir / LOCK_NAME)

    # -- locking ---------------------------------------------------------

    @contextlib.contextmanager
    def _locked(self, mode: int):
        # flock works on a read-only descriptor too, so an account that may only
        # read the image can still take the shared lock another account created.
        try:
            fd = os.open(self._lock_path, os.O_RDONLY)
        except FileNotFoundError:
            with contextlib.suppress(FileExistsError):
                self.state_dir.mkdir()
                os.chmod(self.state_dir, 0o775)  # shared by the accounts sharing the image
            fd = _create_shared(self._lock_path, os.O_RDONLY)
        try:
            fcntl.flock(fd, mode)
            yield
        finally:
            os.close(fd)    # closing releases the flock

    # -- reading ---------------------------------------------------------

    def read_snapshot(self) -> Snapshot:
        """Every module file, read under the shared lock so no commit is half-seen."""
        with self._locked(fcntl.LOCK_SH):
            files = {}
            root = str(self.image_dir)
            for rel in self._scan():
                try:
                    with open(os.path.join(root, rel), "rb", buffering=0) as module:
                        files[rel] = module.readall()
                except PermissionError:
                    continue  # per-user workers: what this account may not read, it does not see
            return Snapshot(files, self._journal_length())

    def _scan(self) -> list[str]:
        """Relative paths of importable module files: hidden dirs, caches and
        directories that are not regular packages are left out. (os.scandir and
        plain strings, not pathlib: this runs in every new worker, where each
        object touched for the first time copies a shared page.)"""
        found = []

        def walk(directory: str, prefix: str) -> None:
            with os.scandir(directory) as scan:
                entries = sorted(scan, key=_entry_name)
            for entry in entries:
                name = entry.name
                if name.startswith(".") or name == "__pycache__":
                    continue
                if entry.is_dir():
                    if name.isidentifier() and os.path.isfile(os.path.join(entry.path, "__init__.py")):
                        walk(entry.path, prefix + name + "/")
                elif name.endswith(".py") and name[:-3].isidentifier():
                    found.append(prefix + name)

        walk(str(self.image_dir), "")
        return found

    def _journal_length(self) -> int:
        """Commits in the journal (call under the lock). Only lines past the size the
        count file remembers are read: none, unless a commit was killed between
        appending its line and updating the count, or the count file is unusable."""
        try:
            journal = open(self.journal_path, "rb")
        except FileNotFoundError:
            return 0
        with journal:
            known, offset = self._remembered_count(journal)
            journal.seek(offset)
            return known + sum(1 for line in journal if line.strip())

    def _remembered_count(self, journal) -> tuple[int, int]:
        """(lines, size) from the count file when it describes a prefix of this
        journal that ends at a line boundary, else (0, 0): count from the start."""
        try:
            lines, size = (int(field) for field in self.count_path.read_bytes().split())
        except (OSError, ValueError):
            return 0, 0
        if lines < 0 or size <= 0 or size > os.fstat(journal.fileno()).st_size:
            return 0, 0
        journal.seek(size - 1)
        return (lines, size) if journal.read(1) == b"\n" else (0, 0)

    def _remember_count(self, lines: int) -> None:
        # Only a cache of the journal: a commit never fails for want of writing it.
        with contextlib.suppress(OSError):
            size = os.stat(self.journal_path).st_size
            fd = _create_shared(self.count_path, os.O_WRONLY | os.O_TRUNC)
            try:
                _write_all(fd, b"%d %d\n" % (lines, size))
            finally:
                os.close(fd)

    def journal(self) -> list[dict]:
        try:
            text = self.journal_path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    # -- committing ------------------------------------------------------

    def commit(self, changes: dict[str, bytes | None], base_hashes: dict[str, str | None],
               *, user: str, session_id: str) -> int:
        """Write `changes` (relpath -> new bytes, None = delete) if every file
        still hashes to `base_hashes[relpath]` (None = must not exist).
        Returns the new journal length; raises CommitConflict, writing nothing."""
        with self._locked(fcntl.LOCK_EX):
            conflicts = [rel for rel in sorted(changes)
                         if self._disk_hash(rel) != base_hashes.get(rel)]
            if conflicts:
                raise CommitConflict(conflicts)
            self._sweep_temps({(self.image_dir / rel).parent for rel in changes})
            records = []
            for rel in sorted(changes):
                data = changes[rel]
                records.append({"file": rel, "old": base_hashes.get(rel), "new": sha256(data)})
                if data is None:
                    self._remove(rel)
                else:
                    self._write_atomically(rel, data)
            self._append_journal({
                "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "user": user, "session": session_id, "files": records,
            })
            version = self._journal_length()
            self._remember_count(version)
            return version

    def _sweep_temps(self, directories) -> None:
        """Temp files a killed commit left behind; under the exclusive lock no
        other commit is writing, so every one of them is stale."""
        for directory in directories:
            if not directory.is_dir():
                continue
            for entry in directory.iterdir():
                if TEMP_NAME.fullmatch(entry.name) and entry.is_file():
                    with contextlib.suppress(FileNotFoundError):
                        entry.unlink()

    def _disk_hash(self, rel: str) -> str | None:
        try:
            return sha256((self.image_dir / rel).read_bytes())
        except FileNotFoundError:
            return None

    def _write_atomically(self, rel: str, data: bytes) -> None:
        target = self.image_dir / rel
        self._make_dirs(target.parent)
        temp = target.parent / f".{target.name}.tmp-{os.getpid()}"
        try:
            mode = stat.S_IMODE(os.stat(target).st_mode)  # a commit never widens who may read
        except FileNotFoundError:
            mode = 0o644
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.fchmod(fd, mode)
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, target)
        _fsync_dir(target.parent)

    def _make_dirs(self, directory: Path) -> None:
        missing = []
        while not directory.exists():
            missing.append(directory)
            directory = directory.parent
        for path in reversed(missing):
            path.mkdir()
            _fsync_dir(path.parent)

    def _remove(self, rel: str) -> None:
        target = self.image_dir / rel
        with contextlib.suppress(FileNotFoundError):
            target.unlink()
        _fsync_dir(target.parent)
        parent = target.parent
        # A package directory left with nothing but caches goes too.
        while parent != self.image_dir and not any(
                p.name != "__pycache__" for p in parent.iterdir()):
            for cache in parent.iterdir():
                _remove_tree(cache)
            parent.rmdir()
            _fsync_dir(parent.parent)
            parent = parent.parent

    def _append_journal(self, record: dict) -> None:
        line = (json.dumps(record, sort_keys=True) + "\n").encode()
        try:
            fd = os.open(self.journal_path, os.O_WRONLY | os.O_APPEND)
        except FileNotFoundError:
            fd = _create_shared(self.journal_path, os.O_WRONLY | os.O_APPEND)
        try:
            _write_all(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)


def _entry_name(entry: os.DirEntry) -> str:
    return entry.name


def _create_shared(path: Path | str, flags: int) -> int:
    """Create a state file group-writable whatever the umask: with per-user workers,
    every account sharing the image (through a group) must be able to use it."""
    fd = os.open(path, flags | os.O_CREAT, 0o664)
    with contextlib.suppress(PermissionError):
        os.fchmod(fd, 0o664)  # fails only if another account created it first
    return fd


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove_tree(path: Path) -> None:
    if path.is_dir():
        for child in path.iterdir():
            _remove_tree(child)
        path.rmdir()
    else:
        path.unlink()
