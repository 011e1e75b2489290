"""Which local account a token's user runs as, and the switch to it.

A map file holds `claim-value account` lines (`#` comments, blank lines).
Without a map the claim value itself must name an existing local account.
Root (uid 0) is never a target: a token must not buy a root worker.
"""
from __future__ import annotations

import os
import pwd
import re
from pathlib import Path

# POSIX-portable user names (plus the `$` some systems allow at the end).
_ACCOUNT = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,31}\$?")


class UserMapError(ValueError):
    def __init__(self, source: str, line: int, message: str):
        super().__init__(f"{source}:{line}: {message}")
        self.source, self.line = source, line


class AccountSwitchError(RuntimeError):
    """The worker could not (verifiably) drop to the mapped account."""


def parse_user_map(text: str, source: str = "<user map>") -> dict[str, str]:
    mapping: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        fields = line.split()
        if len(fields) != 2:
            raise UserMapError(source, number, f"expected 'claim-value account', got {len(fields)} fields")
        user, account = fields
        if not _ACCOUNT.fullmatch(account):
            raise UserMapError(source, number, f"not a valid account name: {account!r}")
        if user in mapping:
            raise UserMapError(source, number, f"{user!r} is mapped twice")
        mapping[user] = account
    return mapping


def load_user_map(path: str | os.PathLike) -> dict[str, str]:
    path = Path(path)
    return parse_user_map(path.read_text(encoding="utf-8"), str(path))


def _usable_account(name: str) -> str | None:
    if not _ACCOUNT.fullmatch(name):
        return None
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        return None
    return None if entry.pw_uid == 0 else entry.pw_name


class AccountResolver:
    """`resolve_account(user)` → local account name, or None (router answers 403)."""

    def __init__(self, user_map: dict[str, str] | None = None):
        self.user_map = user_map

    @classmethod
    def from_file(cls, path: str | os.PathLike | None) -> "AccountResolver":
        return cls(load_user_map(path) if path else None)

    def resolve_account(self, user: str) -> str | None:
        if self.user_map is not None:
            account = self.user_map.get(user)
            return _usable_account(account) if account else None
        return _usable_account(user)


def resolve_account(user: str, user_map: dict[str, str] | None = None) -> str | None:
    return AccountResolver(user_map).resolve_account(user)


def become(account: str) -> bool:
    """Drop this (worker) process to `account`; False if not root (nothing to do).

    Call before the worker reads the image. Sets supplementary groups, gid and
    uid (real, effective, saved) and HOME/USER/LOGNAME, then proves the switch
    took and that root cannot be regained.
    """
    if os.geteuid() != 0:
        return False
    try:
        entry = pwd.getpwnam(account)
    except KeyError:
        raise AccountSwitchError(f"no such account: {account}") from None
    if entry.pw_uid == 0:
        raise AccountSwitchError("refusing to run a worker as root")
    os.initgroups(entry.pw_name, entry.pw_gid)
    os.setresgid(entry.pw_gid, entry.pw_gid, entry.pw_gid)
    os.setresuid(entry.pw_uid, entry.pw_uid, entry.pw_uid)
    if os.getresuid() != (entry.pw_uid,) * 3 or os.getresgid() != (entry.pw_gid,) * 3:
        raise AccountSwitchError(f"uid/gid did not change to {account}")
    if _can_regain_root():
        raise AccountSwitchError("root could be regained after the switch")
    os.environ.update(HOME=entry.pw_dir, USER=entry.pw_name, LOGNAME=entry.pw_name)
    return True


def _can_regain_root() -> bool:
    try:
        os.setuid(0)
    except PermissionError:
        return False
    return True
