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
