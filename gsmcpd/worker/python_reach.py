"""Whether per-user workers' accounts can run the daemon's python.

A deletion's trial import (gsmcpd.image.trial) starts that python as the session's
account; one that cannot run it (a venv made from a python under /root or a home of mode
0700) only notes that the import was not tried (importNotTried). `check` and `serve`
say so beforehand, in the same words, by the mode bits as tmpdirs reads them.
"""
from __future__ import annotations

import os

from gsmcpd.worker.tmpdirs import closed_to, described_path, first_closed, open_to_all, way_to

_FIX = ("or run the daemon from a venv made from a python they can run (rm -r VENV && "
        "PYTHON=/usr/bin/python3.11 ./install.sh)")


def unrunnable_python_warnings(python: str, accounts: list[str] | None) -> list[str]:
    """One warning per directory (or the file itself) that keeps mapped accounts from
    running `python`, naming them. `accounts`: those a user map names (None:
    MCP_USER_MAP=identity, any account: "other" ones)."""
    try:
        places = way_to(python)   # the directories on the way, through each link, then the file it runs
    except OSError:   # a link root may not read (/proc/1/root): nothing to tell of it
        return []
    if open_to_all(places):   # /usr/bin/python3.11's case: no account looked up (on the loop)
        return []
    if accounts is None:
        try:
            found = first_closed(places, -1, set())   # no owner's uid, in no group: "other"
        except OSError:
            return []
        if found is None:
            return []
        where, st, who = found
        return [f"the daemon's python {python}: {described_path(where, st)}, is not {_kind(where)} by other "
                f"accounts: with MCP_USER_MAP=identity a deletion's trial import in the sessions of accounts "
                f"neither its owner nor in its group is not tried (importNotTried), as it runs that python as "
                f"the session's account; make {where} {_kind(where)} by them (chmod {who}+x) {_FIX}"]
    warnings = []
    for where, described, who, names in closed_to(accounts, lambda uid, gids: first_closed(places, uid, gids)):
        them, their = ("them", "their") if len(names) > 1 else ("it", "its")
        warnings.append(
            f"the daemon's python {python}: account{'s' if len(names) > 1 else ''} {', '.join(names)} cannot "
            f"run it ({described}, is not {_kind(where)} by {them}): a deletion's trial import, which "
            f"runs that python as the session's account, is not tried in {their} sessions (importNotTried); "
            f"make {where} {_kind(where)} by {them} (chmod {who}+x) {_FIX}")
    return warnings


def _kind(path: str) -> str:
    return "searchable" if os.path.isdir(path) else "executable"
