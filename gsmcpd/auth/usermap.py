"""Which local account a token's user runs as, and the switch to it.

A map file holds `claim-value account` lines (`#` comments, blank lines).
Without a map the claim value itself must name an existing login account (uid from
the system's UID_MIN to its UID_MAX). Root (uid 0) is never a target: a token must not
buy a root worker.
"""
from __future__ import annotations

import os
import pwd
import re
from pathlib import Path

from gsmcpd.knob_words import IDENTITY_MAP
from gsmcpd.router.trace import shown_user

# POSIX-portable user names (plus the `$` some systems allow at the end).
_ACCOUNT = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,31}\$?")


def named(user: str) -> str:
    """A user name as a message or log line quotes it: as every log line shows it
    (trace.shown_user), in quotes."""
    return "'%s'" % shown_user(user)


class UserMapError(ValueError):
    def __init__(self, source: str, line: int, message: str):
        super().__init__(f"{source}:{line}: {message}")
        self.source, self.line = source, line


class AccountSwitchError(RuntimeError):
    """The worker could not (verifiably) drop to the mapped account."""


class UserMap(dict):
    """claim value → account, remembering the file and line of each entry (for `gsmcpd check`)."""

    def __init__(self, source: str):
        super().__init__()
        self.source = source
        self.lines: dict[str, int] = {}


def parse_user_map(text: str, source: str = "<user map>") -> UserMap:
    mapping = UserMap(source)
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        fields = line.split()
        if len(fields) != 2:
            from gsmcpd.worker.paging import counted   # here: the router needs it only to refuse
            raise UserMapError(source, number, f"expected 'claim-value account', got {counted(len(fields), 'fields')}")
        user, account = fields
        if not _ACCOUNT.fullmatch(account):
            raise UserMapError(source, number, f"not a valid account name: {account!r}")
        if user in mapping:
            raise UserMapError(source, number, f"{user!r} is mapped twice")
        mapping[user] = account
        mapping.lines[user] = number
    return mapping


def load_user_map(path: str | os.PathLike) -> UserMap:
    path = Path(path)
    return parse_user_map(path.read_text(encoding="utf-8"), str(path))


def read_user_map_setting(setting: str) -> tuple[UserMap | None, str | None]:
    """(the map MCP_USER_MAP names, None for `identity`; None) or (None, what a root
    daemon meets loading it)."""
    if setting == IDENTITY_MAP:
        return None, None
    try:
        return load_user_map(setting), None
    except OSError as exc:
        return None, f"cannot read the MCP_USER_MAP file {setting}: {exc.strerror or exc}"
    except UnicodeDecodeError as exc:
        return None, f"the MCP_USER_MAP file {setting} is not UTF-8 text (byte {exc.start})"
    except UserMapError as exc:
        return None, f"MCP_USER_MAP {exc}"


# shadow's defaults, where /etc/login.defs sets none
DEFAULT_UID_MIN, DEFAULT_UID_MAX = 1000, 60000
NOT_MAPPED = "this user is not mapped to a local account"
NO_SUCH_ACCOUNT = "this user maps to a local account that does not exist"
ROOT_ACCOUNT = "this user maps to the root account, which never runs a worker"
SYSTEM_ACCOUNT = "this user maps to a system account, not a login account"


class AccountRefused(Exception):
    """A user who gets no worker: `reason` is for the client (403), str() for the log."""

    def __init__(self, reason: str, detail: str):
        super().__init__(detail)
        self.reason = reason


def login_uid_range(path: str = "/etc/login.defs") -> tuple[int, int]:
    """The uids of ordinary login accounts: UID_MIN to UID_MAX in login.defs, each else
    1000 and 60000."""
    found = {"UID_MIN": DEFAULT_UID_MIN, "UID_MAX": DEFAULT_UID_MAX}
    try:
        with open(path, encoding="utf-8", errors="replace") as defs:
            for line in defs:
                fields = line.split()
                if len(fields) >= 2 and fields[0] in found and fields[1].isdigit():
                    found[fields[0]] = int(fields[1])
    except OSError:
        pass
    return found["UID_MIN"], found["UID_MAX"]


def _account(name: str):
    if not _ACCOUNT.fullmatch(name):
        return None
    try:
        return pwd.getpwnam(name)
    except KeyError:
        return None


class AccountResolver:
    """`resolve(user)` → local account name, or AccountRefused (router answers 403).

    Without a map (identity) a token's claim may only name a login account (uid from
    UID_MIN to UID_MAX), never a system one such as `daemon` or `postgres`, nor
    `nobody` (the overflow uid: services drop to it, and NFS squashes root's files to
    it, so code run as it could signal those and write these); a map file's accounts
    are the administrator's explicit choice, so any but root may be listed.
    """

    def __init__(self, user_map: dict[str, str] | None = None, uid_range: tuple[int, int] | None = None):
        self.user_map = user_map
        # (UID_MIN, UID_MAX) a claim may name, without a map; None: any account but root
        self.login_uids = None if user_map is not None else uid_range or login_uid_range()

    @classmethod
    def from_file(cls, path: str | os.PathLike | None) -> "AccountResolver":
        return cls(load_user_map(path) if path else None)

    def resolve(self, user: str) -> str:
        name = user if self.user_map is None else self.user_map.get(user)
        entry = _account(name) if name else None
        # The client hears the reason the log gives (a map line naming a missing account or
        # root is the administrator's to fix), without the account's name: "not mapped" for
        # those contradicted the log line.
        if self.user_map is not None and name and entry is None:
            raise AccountRefused(NO_SUCH_ACCOUNT, f"user {named(user)} is mapped to account {name!r}, "
                                                  f"which does not exist")
        if entry is not None and entry.pw_uid == 0:
            raise AccountRefused(ROOT_ACCOUNT, f"user {named(user)} names root account {entry.pw_name!r} (uid 0), "
                                               f"which never runs a worker")
        if entry is None:
            raise AccountRefused(NOT_MAPPED, f"user {named(user)} has no local account mapping")
        if self.login_uids is not None:
            uid_min, uid_max = self.login_uids
            if not uid_min <= entry.pw_uid <= uid_max:
                bound = f"below UID_MIN {uid_min}" if entry.pw_uid < uid_min else f"above UID_MAX {uid_max}"
                raise AccountRefused(SYSTEM_ACCOUNT, f"user {named(user)} names system account {entry.pw_name!r} "
                                                     f"(uid {entry.pw_uid}, {bound})")
        return entry.pw_name


def mapping_changed(resolver: AccountResolver, user: str, account: str | None) -> str | None:
    """Why a session of `user` whose worker runs as `account` may serve no longer under
    `resolver` (a map read again): unmapped, or mapped to another account; None if not."""
    try:
        now = resolver.resolve(user)
    except AccountRefused as refusal:
        return str(refusal)
    return None if now == account else f"user {named(user)} now maps to account {now!r}"


def lines_never_served(user_map: UserMap) -> list[str]:
    """`file:line: why` for each entry whose account never runs a worker (root, or no such
    account): serve loads such a map and refuses the user only when they come, in a log line."""
    resolver = AccountResolver(user_map)
    found = []
    for user, line in user_map.lines.items():
        try:
            resolver.resolve(user)
        except AccountRefused as refusal:
            found.append(f"{user_map.source}:{line}: {refusal}")
    return found


def accounts_served(user_map: UserMap | None) -> list[str] | None:
    """The accounts the map's users run as, each once (lines never served left out);
    None for `identity`, whose accounts are any login account."""
    if user_map is None:
        return None
    resolver = AccountResolver(user_map)
    served = {}
    for user in user_map:
        try:
            served[resolver.resolve(user)] = None
        except AccountRefused:
            continue
    return list(served)


def never_served_warnings(user_map: UserMap | None) -> list[str]:
    """What `check` lists and `serve` logs at start of those lines, in the same words
    (`user_map` None: `identity`, which has no lines)."""
    return [f"{line}: that user gets 403" for line in lines_never_served(user_map)] if user_map else []


def become(account: str) -> bool:
    """Drop this (worker) process to `account`; False if not root (nothing to do).

    Call before the worker reads the image. Sets supplementary groups, gid and
    uid (real, effective, saved) and HOME/USER/LOGNAME (the rest of the environment is
    the spawner's allow-listed one, gsmcpd.worker.environment), then proves the switch
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
