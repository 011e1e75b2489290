"""The exit statuses of `serve`, `start` and `check`: whether trying again may help.

systemd restarts a `serve` that failed (Restart=on-failure) unless it exited REFUSED
(the unit's RestartPreventExitStatus=2): a refused configuration fails the same way on
every try, so restarting it every RestartSec only fills the journal. 2 is also what
argparse exits with for a command line it refuses, the same kind of failure.
"""

from __future__ import annotations

import errno

OK = 0
FAILED = 1    # may pass when tried again: the port in use, a full disk, an unforeseen failure
REFUSED = 2   # a setting is wrong (a value, a path, a certificate): the same until it is changed

# What an OSError says of the file or directory a setting names: no such thing, not one's
# to use, not of the kind needed. None of these changes by waiting. The rest may
# (ENOSPC: space is freed; EADDRINUSE: the port's holder exits; EADDRNOTAVAIL: the
# address comes up, at boot; EMFILE, EIO, ...).
_SETTING_AT_FAULT = frozenset({
    errno.EACCES, errno.EPERM, errno.ENOENT, errno.ENOTDIR, errno.EISDIR, errno.ELOOP,
    errno.ENAMETOOLONG, errno.EROFS, errno.EEXIST, errno.ENXIO, errno.EINVAL, errno.ESPIPE,
})


def of_os_error(exc: OSError) -> int:
    """REFUSED when `exc` says a configured path or address is unusable, else FAILED."""
    return REFUSED if exc.errno in _SETTING_AT_FAULT else FAILED


class StartRefused(Exception):
    """serve refuses to start with this configuration (a certificate that does not load,
    an image directory it cannot use): the message names the setting; `status` is
    REFUSED unless the cause may pass (FAILED)."""

    def __init__(self, message: str, status: int = REFUSED):
        super().__init__(message)
        self.status = status
