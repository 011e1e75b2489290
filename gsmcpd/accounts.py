"""A local account as messages name it."""

import grp
import pwd


def account_name(uid: int) -> str:
    """The account's name, or "uid N" for a uid no account has."""
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def account_and_uid(uid: int) -> str:
    """`name (uid N)`, or "uid N" for a uid no account has."""
    name = account_name(uid)
    return name if name.startswith("uid ") else f"{name} (uid {uid})"


def group_name(gid: int) -> str:
    """The group's name, or "gid N" for a gid no group has."""
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return f"gid {gid}"


def private_group_problem(uid: int, gid: int) -> str | None:
    """Why group `gid` is not account `uid`'s user-private group (useradd's
    --user-group: named as the account, its primary group, no other account in it), or
    None when it is one, so that group write on the account's files lets no one else write.
    Asks NSS for every account: for the few checks at start, never per request."""
    try:
        owner = pwd.getpwuid(uid)
    except KeyError:
        return f"uid {uid} has no account"
    try:
        group = grp.getgrgid(gid)
    except KeyError:
        return f"gid {gid} has no group"
    if group.gr_name != owner.pw_name or gid != owner.pw_gid:
        return f"group {group.gr_name} is not {owner.pw_name}'s primary group named as it"
    others = sorted(set(group.gr_mem) - {owner.pw_name})
    others += sorted(p.pw_name for p in pwd.getpwall() if p.pw_gid == gid and p.pw_uid != uid
                     and p.pw_name not in others)
    if others:
        return f"group {group.gr_name} has other accounts in it: {', '.join(others)}"
    return None
