"""Which mapped accounts cannot run the daemon's python, which a deletion's trial import
starts as the session's account (by the mode bits, as for the daemon's TMPDIR)."""

import grp
import os
import pwd

from helpers import searchable_dir
from gsmcpd.worker.python_reach import unrunnable_python_warnings

FIX = "or run the daemon from a venv made from a python they can run (rm -r VENV && " \
      "PYTHON=/usr/bin/python3.11 ./install.sh)"


def venv_linking_to(base_dir, venv_dir):
    """venv_dir/bin/python -> python3 -> base_dir/python3.11, as venv makes them; the python file."""
    base_dir.mkdir(parents=True)
    python = base_dir / "python3.11"
    python.write_text("#!/bin/sh\n")
    python.chmod(0o755)
    (venv_dir / "bin").mkdir(parents=True)
    (venv_dir / "bin" / "python3").symlink_to(python)
    (venv_dir / "bin" / "python").symlink_to("python3")
    return python


def test_a_venv_linking_to_a_python_in_a_private_directory_is_warned_of_naming_it_and_the_fix():
    # As a venv made from pyenv's python under /root (0700): its link was not followed.
    with searchable_dir() as open_dir:
        home = open_dir / "home"
        python = venv_linking_to(home / "pyenv" / "bin", open_dir / "venv")
        home.chmod(0o700)
        venv_python = str(open_dir / "venv" / "bin" / "python")
        owner = pwd.getpwuid(os.geteuid()).pw_name
        group = grp.getgrgid(os.getegid()).gr_name
        described = f"{home}, mode 0700, owner {owner}, group {group}"
        assert unrunnable_python_warnings(venv_python, ["nobody", "no-such-account-xyz", "nobody"]) == [
            f"the daemon's python {venv_python}: account nobody cannot run it ({described}, is not searchable "
            f"by it): a deletion's trial import, which runs that python as the session's account, is not tried "
            f"in its sessions (importNotTried); make {home} searchable by it (chmod o+x) {FIX}"]
        assert unrunnable_python_warnings(venv_python, None) == [      # identity: any account
            f"the daemon's python {venv_python}: {described}, is not searchable by other accounts: with "
            f"MCP_USER_MAP=identity a deletion's trial import in the sessions of accounts neither its owner nor "
            f"in its group is not tried (importNotTried), as it runs that python as the session's account; "
            f"make {home} searchable by them (chmod o+x) {FIX}"]
        home.chmod(0o755)
        python.chmod(0o754)      # reachable, but not executable by others
        file_described = f"{python}, mode 0754, owner {owner}, group {group}"
        assert unrunnable_python_warnings(venv_python, ["nobody"]) == [
            f"the daemon's python {venv_python}: account nobody cannot run it ({file_described}, is not "
            f"executable by it): a deletion's trial import, which runs that python as the session's account, "
            f"is not tried in its sessions (importNotTried); make {python} executable by it (chmod o+x) {FIX}"]
        python.chmod(0o755)
        assert unrunnable_python_warnings(venv_python, ["nobody"]) == []
        assert unrunnable_python_warnings(venv_python, None) == []


def test_root_and_the_python_of_an_unreadable_path_are_no_warning():
    assert unrunnable_python_warnings("/nonexistent/bin/python", ["nobody"]) == []
    assert unrunnable_python_warnings("/nonexistent/bin/python", None) == []
    assert unrunnable_python_warnings("/proc/1/root/bin/python", ["root"]) == []


def test_a_link_on_the_way_in_a_private_directory_is_warned_of():
    # venv/bin/python -> home/bin/python3 (home 0700) -> pub/python3.11: the kernel reads the
    # middle link as the account, which may not; only the first and last places were looked at.
    with searchable_dir() as open_dir:
        python = venv_linking_to(open_dir / "pub", open_dir / "venv")
        home = open_dir / "home"
        (home / "bin").mkdir(parents=True)
        (home / "bin" / "python3").symlink_to(python)
        (open_dir / "venv" / "bin" / "python3").unlink()
        (open_dir / "venv" / "bin" / "python3").symlink_to(home / "bin" / "python3")
        home.chmod(0o700)
        venv_python = str(open_dir / "venv" / "bin" / "python")
        warnings = unrunnable_python_warnings(venv_python, ["nobody"])
        assert len(warnings) == 1 and warnings[0].startswith(
            f"the daemon's python {venv_python}: account nobody cannot run it ({home}, mode 0700")
        assert unrunnable_python_warnings(venv_python, None)[0].startswith(
            f"the daemon's python {venv_python}: {home}, mode 0700")
        home.chmod(0o755)
        assert unrunnable_python_warnings(venv_python, ["nobody"]) == []


def test_a_python_every_account_may_run_looks_no_account_up(monkeypatch):
    # serve warns at start and on each reload of the map, on its loop: with the python's way
    # open to all (/usr/bin/python3.11's), each account's groups were listed all the same
    # (NSS, LDAP), as the TMPDIR warning does not.
    def listed(*_):
        raise AssertionError("an account's groups listed")

    with searchable_dir() as open_dir:
        venv_linking_to(open_dir / "pub", open_dir / "venv")
        monkeypatch.setattr(os, "getgrouplist", listed)
        assert unrunnable_python_warnings(str(open_dir / "venv" / "bin" / "python"), ["nobody"]) == []


def test_a_link_in_the_middle_of_the_way_leading_through_a_private_directory_is_warned_of():
    # venv -> home/venv2 (home 0700) -> real/venv: the python's path goes through a link to a
    # link the account may not read; only links at the python itself were followed.
    with searchable_dir() as open_dir:
        venv_linking_to(open_dir / "pub", open_dir / "real" / "venv")
        home = open_dir / "home"
        home.mkdir()
        (home / "venv2").symlink_to(open_dir / "real" / "venv")
        (open_dir / "venv").symlink_to(home / "venv2")
        home.chmod(0o700)
        venv_python = str(open_dir / "venv" / "bin" / "python")
        warnings = unrunnable_python_warnings(venv_python, ["nobody"])
        assert len(warnings) == 1 and warnings[0].startswith(
            f"the daemon's python {venv_python}: account nobody cannot run it ({home}, mode 0700"), warnings
        home.chmod(0o755)
        assert unrunnable_python_warnings(venv_python, ["nobody"]) == []


def test_a_relative_link_going_up_from_a_directory_reached_by_a_link_is_followed_from_there():
    # venv -> real/venv; venv/bin/python -> ../../base/python3.11 (real/base 0700): the kernel
    # reads `..` from the link's own directory (real/venv/bin), so into real/base; it was
    # joined to the path as written (<open>/base, not there), whose stat failing dropped the warning.
    with searchable_dir() as open_dir:
        base = open_dir / "real" / "base"
        python = venv_linking_to(base, open_dir / "real" / "venv")
        (open_dir / "real" / "venv" / "bin" / "python3").unlink()
        (open_dir / "real" / "venv" / "bin" / "python3").symlink_to(os.path.join("..", "..", "base", python.name))
        (open_dir / "venv").symlink_to(open_dir / "real" / "venv")
        base.chmod(0o700)
        venv_python = str(open_dir / "venv" / "bin" / "python")
        warnings = unrunnable_python_warnings(venv_python, ["nobody"])
        assert len(warnings) == 1 and warnings[0].startswith(
            f"the daemon's python {venv_python}: account nobody cannot run it ({base}, mode 0700"), warnings
        base.chmod(0o755)
        assert unrunnable_python_warnings(venv_python, ["nobody"]) == []
