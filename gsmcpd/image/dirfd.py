"""The image's directories reached by descriptor, never by path (Linux only).

With per-user workers the image is shared and several accounts may create entries in
it, so one of them can swap a directory of the image for a symbolic link (to another
account's home, say). A commit checks the directories it writes to; if its writes then
named paths, the kernel would resolve them again, and a swap between the check and a
write would be followed. So here a directory is opened once, by walking from a
descriptor of the image root one component at a time with O_NOFOLLOW, and every write
of a commit names only an entry of a directory so held (openat, renameat, unlinkat,
mkdirat, rmdir with dir_fd, fsync and scandir of the descriptor): the walk is the check.

Guaranteed:
- A write lands in the very directory the walk reached, and every link on the way to
  it was owned by this process's effective uid or root when it was followed: a link is
  examined through a descriptor of the link itself (O_PATH|O_NOFOLLOW: fstat for its
  owner, readlinkat for its target), so the owner checked is the owner of the target
  followed. A link another account owns raises UntrustedLink (ELOOP); more than
  MAX_LINKS links on one walk raise ELOOP too.
- A directory made by ImageDirs is made in a held parent and opened like any other
  component, so a link put in its place meanwhile is examined, not followed blindly.

Not guaranteed:
- That a held directory is still at its path when written: an account that may write
  to the image can move it meanwhile, and the writes go with it (never through a
  link). ImageDirs.unmoved tells whether a fresh walk still reaches it; the store asks
  before its commit point, not after.
- The image root itself is trusted as configured: its path is resolved by the kernel
  like any path. So is whatever a trusted link leads to.
"""

from __future__ import annotations

import contextlib
import errno
import os
import posixpath
import stat
from typing import Callable, Iterator

MAX_LINKS = 40   # the kernel's own bound on links in one path resolution
_HANDLE = os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC   # names an entry, link or not; reads nothing


class UntrustedLink(OSError):
    """A symbolic link on the way is owned by an account neither this process's nor root."""

    def __init__(self, name: str, owner: int):
        super().__init__(errno.ELOOP, f"symbolic link owned by uid {owner}, not followed", name)


def trusted_owners() -> frozenset[int]:
    """Whose links are followed: this process's effective account and root."""
    return frozenset({os.geteuid(), 0})


def open_dir(dir_fd: int, path: str, trusted: frozenset[int]) -> int:
    """An O_PATH descriptor of the directory `path` (relative to `dir_fd`, or absolute),
    opened one component at a time with O_NOFOLLOW. A link met on the way is followed
    only if a descriptor of the link itself shows an owner in `trusted` (UntrustedLink
    otherwise): its target from the link's own directory, or from / if absolute.
    FileNotFoundError for a missing component, NotADirectoryError for a file."""
    pending = _components(path)[::-1]
    current = os.open("/" if path.startswith("/") else ".", _HANDLE | os.O_DIRECTORY, dir_fd=dir_fd)
    links = 0
    try:
        while pending:
            name = pending.pop()
            entry = os.open(name, _HANDLE, dir_fd=current)
            try:
                info = os.fstat(entry)
                if stat.S_ISDIR(info.st_mode):
                    current, entry = entry, current   # step in; the old one is closed below
                    continue
                if not stat.S_ISLNK(info.st_mode):
                    raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), name)
                if info.st_uid not in trusted:
                    raise UntrustedLink(name, info.st_uid)
                links += 1
                if links > MAX_LINKS:
                    raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), path)
                target = os.readlink("", dir_fd=entry)   # this link's, whatever its name holds now
                pending.extend(_components(target)[::-1])
                if target.startswith("/"):
                    root = os.open("/", _HANDLE | os.O_DIRECTORY)
                    os.close(current)
                    current = root
            finally:
                os.close(entry)
        return current
    except BaseException:
        os.close(current)
        raise


def _components(path: str) -> list[str]:
    return [part for part in path.split("/") if part not in ("", ".")]


@contextlib.contextmanager
def readable(fd: int):
    """A descriptor that reads the directory `fd` holds (an O_PATH one cannot be
    fsynced or listed): "." opened in it, which names that very directory."""
    reading = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=fd)
    try:
        yield reading
    finally:
        os.close(reading)


def fsync_dir(fd: int) -> None:
    with readable(fd) as reading:
        os.fsync(reading)


def is_entry(dir_fd: int, name: str, fd: int) -> bool:
    """Whether `name` in `dir_fd` is (still) the directory `fd` holds, not a link to it
    or anything put in its place."""
    try:
        return os.path.samestat(os.stat(name, dir_fd=dir_fd, follow_symlinks=False), os.fstat(fd))
    except FileNotFoundError:
        return False


def walk_held(root_fd: int, descend: Callable[[str], bool]) -> Iterator[int]:
    """A descriptor (readable) of each directory below `root_fd` and of itself, outermost
    first, held while it is yielded: into no link, and into a subdirectory only if
    `descend(name)`. One gone or swapped for a link meanwhile is skipped. A loop, not a
    recursion as os.fwalk is (Python 3.11): a tree may be nested deeper than the
    recursion limit. The directories on the way down stay open meanwhile."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    walking = []   # (descriptor, the names of its subdirectories still to walk)
    try:
        fd = os.open(".", flags, dir_fd=root_fd)
        while fd is not None:
            with os.scandir(fd) as scan:
                names = [entry.name for entry in scan
                         if entry.is_dir(follow_symlinks=False) and descend(entry.name)]
            walking.append((fd, iter(sorted(names))))
            yield fd
            fd = None
            while walking and fd is None:
                parent, names = walking[-1]
                name = next(names, None)
                if name is None:
                    os.close(walking.pop()[0])
                    continue
                with contextlib.suppress(OSError):   # gone, or a link now (ELOOP)
                    fd = os.open(name, flags, dir_fd=parent)
    finally:
        for held, _ in walking:
            os.close(held)


class ImageDirs:
    """The image's directories one commit (or recovery) works in, each opened once with
    open_dir, from the root down, and held until close(): every later step acts on the
    directory that was checked, whatever its path names by then. Paths are the image's,
    relative and '/'-separated ("" is the root)."""

    def __init__(self, root: str):
        self.trusted = trusted_owners()
        self.root_fd = os.open(root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)   # trusted as configured
        self._held = {"": self.root_fd}
        self.made: list[str] = []   # directories made, outermost first

    def __enter__(self) -> "ImageDirs":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def close(self) -> None:
        for fd in self._held.values():
            os.close(fd)
        self._held = {}

    def open(self, path: str, *, make: bool = False) -> int:
        """The held O_PATH descriptor of the image's directory `path`, walked to now if
        not held yet (UntrustedLink, FileNotFoundError, NotADirectoryError as open_dir).
        With `make`, missing directories are made, each taking its parent's mode."""
        # The missing directories from `path` up to the nearest held one, then opened
        # outermost first: a loop, not a recursion per level (a tree may be nested deeper
        # than the recursion limit).
        missing, walked = [], path
        while walked not in self._held:
            parent_path, name = posixpath.split(walked)
            if name in ("", ".", "..") or parent_path.startswith("/"):
                raise ValueError(f"{path!r} is not a directory path inside the image")
            missing.append((parent_path, name, walked))
            walked = parent_path
        for parent_path, name, walked in reversed(missing):
            parent = self._held[parent_path]
            try:
                fd = open_dir(parent, name, self.trusted)
            except FileNotFoundError:
                if not make:
                    raise
                self._make(parent, name, walked)
                fd = open_dir(parent, name, self.trusted)   # examined like any other entry
            self._held[walked] = fd
        return self._held[path]

    def _make(self, parent: int, name: str, path: str) -> None:
        try:
            os.mkdir(name, 0o700, dir_fd=parent)
        except FileExistsError:
            return   # someone else's: opened and examined by the caller
        self.made.append(path)
        # Its parent's mode, whatever the umask (the unit's is 0077): with per-user
        # workers every account sharing the image must read it and commit into it.
        made = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
        try:
            os.fchmod(made, stat.S_IMODE(os.fstat(parent).st_mode))
        finally:
            os.close(made)
        fsync_dir(parent)

    def held(self, path: str) -> int | None:
        return self._held.get(path)

    def forget(self, path: str) -> None:
        """Stop holding `path` (removed): a later open walks to whatever is there then."""
        fd = self._held.pop(path, None)
        if fd is not None:
            os.close(fd)

    def unmoved(self, path: str) -> bool:
        """Whether a fresh walk from the root still reaches the directory held for
        `path` (UntrustedLink if it now meets such a link)."""
        try:
            fresh = open_dir(self.root_fd, path, self.trusted)
        except (FileNotFoundError, NotADirectoryError):
            return False
        try:
            return os.path.samestat(os.fstat(fresh), os.fstat(self._held[path]))
        finally:
            os.close(fresh)

    def unmake(self) -> None:
        """Remove the directories this commit made, innermost first, each from its held
        parent; one no longer empty (or not ours any more) stays."""
        for path in reversed(self.made):
            parent_path, name = posixpath.split(path)
            fd = self._held.get(path)
            with contextlib.suppress(OSError):
                if fd is not None and is_entry(self._held[parent_path], name, fd):
                    os.rmdir(name, dir_fd=self._held[parent_path])
        self.made = []
