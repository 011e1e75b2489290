"""A file's or directory's immutable and append-only attributes (chattr +i, +a), which
refuse a rename over it, or (a directory's) in it, even to root: modes do not show them."""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import struct

# FS_IOC_GETFLAGS = _IOR('f', 1, long); the kernel writes an int through it.
GETFLAGS = (2 << 30) | (struct.calcsize("l") << 16) | (ord("f") << 8) | 1
IMMUTABLE = 0x10
APPEND_ONLY = 0x20
# A file system that keeps no such flags says so in one of these.
NO_FLAGS = {errno.ENOTTY, errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS}


def protection(fd: int) -> str | None:
    """"immutable" or "append-only" if the open (not O_PATH) `fd` is so flagged, else None."""
    buffer = bytearray(struct.calcsize("l"))
    try:
        fcntl.ioctl(fd, GETFLAGS, buffer)
    except OSError as error:
        if error.errno in NO_FLAGS:
            return None
        raise
    flags = struct.unpack_from("I", buffer)[0]
    return "immutable" if flags & IMMUTABLE else "append-only" if flags & APPEND_ONLY else None


def protection_of(name: str, dir_fd: int) -> str | None:
    """protection() of the regular file or directory `name` in `dir_fd` ("." for `dir_fd`'s
    own); None where it cannot be opened to read (gone, not this account's to read: the
    other checks say so) or is neither."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC,
                     dir_fd=dir_fd)
    except OSError:
        return None
    try:
        mode = os.fstat(fd).st_mode
        return protection(fd) if stat.S_ISREG(mode) or stat.S_ISDIR(mode) else None
    finally:
        os.close(fd)
