"""User map parsing, account resolution, and the root-only switch to an account."""
import os
import pwd
import shutil
import tempfile
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gsmcpd.auth.usermap import (NO_SUCH_ACCOUNT, NOT_MAPPED, ROOT_ACCOUNT, SYSTEM_ACCOUNT, AccountRefused, AccountResolver, UserMapError,
                                 accounts_served, lines_never_served, load_user_map, login_uid_range, mapping_changed, never_served_warnings,
                                 named, parse_user_map, read_user_map_setting)
from gsmcpd.router.trace import USER_CAP, shown_user
from helpers import local_account


def user_map_problem(setting):
    return read_user_map_setting(setting)[1]


def test_parse_with_comments_and_blank_lines():
    text = textwrap.dedent("""\
        # claim-value  account
        alice@example.com   alice

        bob  nobody  extra
        """)
    with pytest.raises(UserMapError) as info:
        parse_user_map(text, "users.map")
    assert info.value.line == 4
    assert str(info.value) == "users.map:4: expected 'claim-value account', got 3 fields"
    assert parse_user_map("# x\n\nalice@example.com alice\n  bob\tnobody  \n") == {
        "alice@example.com": "alice", "bob": "nobody"}


@pytest.mark.parametrize("line, message", [
    ("alice", "expected 'claim-value account', got 1 field"),
    ("alice ../etc root2", "expected 'claim-value account', got 3 fields"),
    ("alice ../etc", "not a valid account name: '../etc'"),
    ("alice -rf", "not a valid account name: '-rf'"),
])
def test_bad_lines_are_refused_with_line_number(line, message):
    with pytest.raises(UserMapError, match=f"^m:2: {message}"):
        parse_user_map(f"ok nobody\n{line}\n", "m")


def test_duplicate_claim_value_is_refused():
    with pytest.raises(UserMapError, match="m:3: 'a' is mapped twice"):
        parse_user_map("a nobody\n\na daemon\n", "m")


def test_load_from_file(tmp_path):
    path = tmp_path / "users.map"
    path.write_text("alice nobody\n")
    assert load_user_map(path) == {"alice": "nobody"}
    assert AccountResolver.from_file(path).resolve("alice") == "nobody"


def refusal(resolver, user):
    with pytest.raises(AccountRefused) as refused:
        resolver.resolve(user)
    return refused.value.reason


def test_user_map_problem_names_what_is_wrong_with_the_setting(tmp_path):
    good = tmp_path / "good.map"
    good.write_text("alice nobody\n")
    binary = tmp_path / "binary.map"
    binary.write_bytes(b"\xff\xfe")
    assert user_map_problem("identity") is None and user_map_problem(str(good)) is None
    assert user_map_problem(str(tmp_path / "gone.map")) == \
        f"cannot read the MCP_USER_MAP file {tmp_path / 'gone.map'}: No such file or directory"
    assert user_map_problem(str(tmp_path)) == f"cannot read the MCP_USER_MAP file {tmp_path}: Is a directory"
    assert user_map_problem(str(binary)) == f"the MCP_USER_MAP file {binary} is not UTF-8 text (byte 0)"
    good.write_text("alice\n")
    assert user_map_problem(str(good)) == f"MCP_USER_MAP {good}:1: expected 'claim-value account', got 1 field"


def test_the_lines_whose_account_never_runs_a_worker_are_named_by_file_and_line():
    text = ("# claim  account\nann nobody\nsys daemon\n\nrooted root\nghost no-such-account-xyz\n")
    assert lines_never_served(parse_user_map(text, "/etc/gsmcpd/users.map")) == [
        "/etc/gsmcpd/users.map:5: user 'rooted' names root account 'root' (uid 0), which never runs a worker",
        "/etc/gsmcpd/users.map:6: user 'ghost' is mapped to account 'no-such-account-xyz', which does not exist"]
    assert lines_never_served(parse_user_map("ann nobody\nsys daemon\n")) == []   # a system account is allowed


def test_check_and_serve_warn_of_those_lines_in_the_same_words():
    text = "ann nobody\nrooted root\n"
    assert never_served_warnings(parse_user_map(text, "users.map")) == [
        "users.map:2: user 'rooted' names root account 'root' (uid 0), which never runs a worker: that user gets 403"]
    assert never_served_warnings(parse_user_map("ann nobody\n")) == never_served_warnings(None) == []


def test_the_accounts_a_map_serves_are_each_named_once_leaving_out_lines_never_served():
    text = "ann nobody\nrooted root\nsys daemon\nghost no-such-account-xyz\nnemo nobody\n"
    assert accounts_served(parse_user_map(text)) == ["nobody", "daemon"]
    assert accounts_served(None) is None        # identity: any login account


def test_resolve_with_map():
    resolver = AccountResolver({"alice": "nobody", "bob": "no-such-account-xyz", "eve": "root"})
    assert resolver.resolve("alice") == "nobody"
    assert refusal(resolver, "carol") == NOT_MAPPED              # unmapped
    assert refusal(resolver, "bob") == NO_SUCH_ACCOUNT           # mapped to a missing account
    assert refusal(resolver, "eve") == ROOT_ACCOUNT              # never root


@pytest.mark.parametrize("user, logged, reason", [
    ("carol", "user 'carol' has no local account mapping", NOT_MAPPED),
    ("bob", "user 'bob' is mapped to account 'no-such-account-xyz', which does not exist", NO_SUCH_ACCOUNT),
    ("eve", "user 'eve' names root account 'root' (uid 0), which never runs a worker", ROOT_ACCOUNT),
])
def test_the_log_says_why_a_user_gets_no_account_and_the_client_the_same_reason(user, logged, reason):
    # All three read "has no local account mapping" in the log: an administrator whose
    # map names a mistyped account, or root, was told the user is not in the map. The
    # client then heard "not mapped" for a user the log said was mapped (to root, to no one).
    resolver = AccountResolver({"alice": "nobody", "bob": "no-such-account-xyz", "eve": "root"})
    with pytest.raises(AccountRefused) as refused:
        resolver.resolve(user)
    assert (refused.value.reason, str(refused.value)) == (reason, logged)


def test_a_refusal_quotes_a_user_cut_however_long_the_claim():
    # It quoted the claim whole: a refusal is logged at every request, and the claim is as
    # long as the token (some 64 KiB), so each request of an unmapped user logged that much.
    resolver = AccountResolver({"alice": "nobody"})
    with pytest.raises(AccountRefused) as refused:
        resolver.resolve("m" * 60_000)
    assert str(refused.value) == "user '%s...' has no local account mapping" % ("m" * USER_CAP)
    assert mapping_changed(AccountResolver({"m" * 100: "daemon"}), "m" * 100, "nobody") == (
        "user '%s...' now maps to account 'daemon'" % ("m" * USER_CAP))


@pytest.mark.parametrize("user", ["o\\brien", "eve\x1b]0;owned\x07\nx", "zero\u200bwidth", "it's", "lone\ud800"])
def test_a_refusal_shows_the_user_as_every_other_log_line_does(user):
    # It showed the name by repr (a backslash doubled, U+200B escaped, quotes switched),
    # unlike the session's, the worker's and `gsmcpd status`'s lines the README says are
    # escaped the same way; a lone surrogate, which UTF-8 cannot write, is escaped in all.
    assert named(user) == "'%s'" % shown_user(user)
    with pytest.raises(AccountRefused) as refused:
        AccountResolver({"alice": "nobody"}).resolve(user)
    assert str(refused.value) == "user '%s' has no local account mapping" % shown_user(user)
    assert "\ud800" not in named(user)


def test_a_reloaded_map_says_which_sessions_may_serve_no_longer_and_why():
    # Read once at start, a map could not take a user's access away without a restart
    # ending everyone's sessions; each session's worker runs as the account it opened with.
    reloaded = AccountResolver({"alice": "nobody", "bob": "daemon"})
    assert mapping_changed(reloaded, "alice", "nobody") is None
    assert mapping_changed(reloaded, "bob", "nobody") == "user 'bob' now maps to account 'daemon'"
    assert mapping_changed(reloaded, "carol", "nobody") == "user 'carol' has no local account mapping"


def test_resolve_without_map_uses_the_claim_as_account():
    nobody = pwd.getpwnam("nobody").pw_uid        # a login account where UID_MAX reaches it
    resolver = AccountResolver(uid_range=(1, nobody))
    assert resolver.resolve("nobody") == "nobody"
    for user in ("no-such-account-xyz", "../nobody", ""):
        assert refusal(resolver, user) == NOT_MAPPED, user
    assert refusal(resolver, "root") == ROOT_ACCOUNT


def test_the_login_uids_come_from_login_defs_else_1000_to_60000(tmp_path):
    defs = tmp_path / "login.defs"
    defs.write_text("# UID_MIN 5\nSYS_UID_MIN 100\nUID_MIN\t\t\t 2000\nUID_MAX 59000\nSUB_UID_MAX 600100000\n")
    assert login_uid_range(str(defs)) == (2000, 59000)
    defs.write_text("UID_MAX 60000\n")
    assert login_uid_range(str(defs)) == (1000, 60000)
    defs.write_text("UID_MIN 500\n")
    assert login_uid_range(str(defs)) == (500, 60000)
    assert login_uid_range(str(tmp_path / "missing")) == (1000, 60000)


def test_identity_mapping_refuses_system_accounts():
    # `daemon` (uid 1 on Debian, Fedora, Alpine...) is a system account.
    resolver = AccountResolver(uid_range=(1000, 60000))
    with pytest.raises(AccountRefused, match=r"system account 'daemon' \(uid 1, below UID_MIN 1000\)") as refused:
        resolver.resolve("daemon")
    assert refused.value.reason == SYSTEM_ACCOUNT
    assert AccountResolver(uid_range=(1, 60000)).resolve("daemon") == "daemon"
    assert AccountResolver().login_uids == login_uid_range()


def test_identity_mapping_refuses_nobody_above_uid_max():
    # nobody (65534, the overflow uid) was taken as a login account for being above
    # UID_MIN, though README promises identity only ordinary login accounts: services
    # drop to it, and NFS squashes root's files to it.
    nobody = pwd.getpwnam("nobody").pw_uid
    resolver = AccountResolver(uid_range=(1000, nobody - 1))
    with pytest.raises(AccountRefused, match=r"^user 'nobody' names system account 'nobody' \(uid %d, "
                                             r"above UID_MAX %d\)$" % (nobody, nobody - 1)) as refused:
        resolver.resolve("nobody")
    assert refused.value.reason == SYSTEM_ACCOUNT
    assert AccountResolver({"ann": "nobody"}).resolve("ann") == "nobody"   # a map file may name it


def test_a_map_file_may_name_a_system_account_explicitly():
    resolver = AccountResolver({"svc": "daemon", "eve": "root"})
    assert resolver.resolve("svc") == "daemon"
    assert refusal(resolver, "eve") == ROOT_ACCOUNT   # never root, even by name


# -- become(): root only -----------------------------------------------------------------
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="become() switches uid: needs root to test")


@pytest.fixture
def throwaway_account():
    with local_account() as account:
        yield account.pw_name


@pytest.fixture
def shared_dir():
    # pytest's tmp_path sits under a 0700 directory no other account can traverse.
    path = Path(tempfile.mkdtemp(prefix="gsmcpd-become-", dir="/tmp"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path)


WORKER = textwrap.dedent("""\
    import os, sys
    from gsmcpd.auth.usermap import become
    switched = become(sys.argv[1])
    print(switched, os.getuid(), os.geteuid(), os.getgid(), os.environ["HOME"])
    for path in sys.argv[2:]:
        try:
            open(path).read()
            print("read-ok")
        except PermissionError:
            print("read-denied")
    try:
        os.setuid(0)
        print("regained-root")
    except PermissionError:
        print("root-gone")
    """)


def private_file(directory, name, account):
    entry = pwd.getpwnam(account)
    path = directory / name
    path.write_text(f"for {account}")
    os.chown(path, entry.pw_uid, entry.pw_gid)
    path.chmod(0o600)
    return path


@needs_root
def test_become_switches_uid_and_drops_root(throwaway_account, shared_dir):
    entry = pwd.getpwnam(throwaway_account)
    mine = private_file(shared_dir, "mine.txt", throwaway_account)
    theirs = private_file(shared_dir, "theirs.txt", "nobody")
    result = subprocess.run([sys.executable, "-c", WORKER, throwaway_account, str(mine), str(theirs)],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"True {entry.pw_uid} {entry.pw_uid} {entry.pw_gid} /nonexistent/{throwaway_account}",
        "read-ok", "read-denied", "root-gone"]


@needs_root
def test_become_refuses_root_and_unknown_accounts():
    from gsmcpd.auth.usermap import AccountSwitchError, become
    with pytest.raises(AccountSwitchError, match="refusing to run a worker as root"):
        become("root")
    with pytest.raises(AccountSwitchError, match="no such account: no-such-account-xyz"):
        become("no-such-account-xyz")


def test_become_without_root_does_not_switch():
    # Drop to nobody first (when root), then become() must report "no switch".
    script = textwrap.dedent("""\
        import os
        from gsmcpd.auth.usermap import become
        if os.geteuid() == 0:
            import pwd
            os.setuid(pwd.getpwnam("nobody").pw_uid)
        uid = os.getuid()
        print(become("daemon"), os.getuid() == uid)
        """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "True"]
