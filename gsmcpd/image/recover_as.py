"""The image's recovery sweep (ImageStore.recover) run as the account owning its state
directory, for a root router refused it (Permission denied).

Under the per-user drop-in root holds no CAP_DAC_OVERRIDE, so it may not write the
state directory (or a package) a user's commit made: what a killed commit left there
stayed until the next commit. A child switched to that account (its groups included,
the image's shared one among them) may, as that account's next commit would; it does
no more than that account could do anyway. tmpdirs removes a worker's directory so too.
"""
from __future__ import annotations

import os
import pwd
from pathlib import Path
from typing import Callable

from gsmcpd.image.layout import STATE_DIR
from gsmcpd.worker.as_account import said_as

_FINISHED, _TIDIED, _FAILED = b"F", b"T", b"E"


def recover_as_owner(image: Path, recover: Callable[[], bool]) -> bool:
    """`recover()` (the store's recover, made in the child) in a child switched to the
    owner of `image`'s state directory: True if it finished a commit. OSError with the
    child's reason if it failed, or there is no such account to switch to."""
    owner = os.stat(image / STATE_DIR).st_uid
    try:
        entry = pwd.getpwuid(owner)
    except KeyError:
        raise PermissionError(f"{image / STATE_DIR} belongs to uid {owner}, which names no account") from None
    said = said_as(owner, entry.pw_gid, os.getgrouplist(entry.pw_name, entry.pw_gid),
                   lambda: _FINISHED if recover() else _TIDIED,
                   lambda error: _FAILED + f"{error} (as account {entry.pw_name})".encode(errors="replace"))
    if said in (_FINISHED, _TIDIED):
        return said == _FINISHED
    raise OSError(said[1:].decode(errors="replace") or f"the recovery as account {entry.pw_name} died")
