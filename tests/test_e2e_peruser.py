"""End-to-end: per-user workers (MCP_USER_MAP) when the daemon runs as root.

The test creates two throwaway local accounts (removed afterwards) and a shared
image they may both use, plus one file only the first may read. Each token's
worker must run as its mapped account, so the kernel's own permission checks
apply to what that session reads; an unmapped user gets no worker at all.
"""

import contextlib
import ctypes
import grp
import json
import os
import pwd
import secrets
import shutil
import signal
import stat
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

from gsmcpd.auth.usermap import login_uid_range
from gsmcpd.image import default
from gsmcpd.worker.environment import worker_environ
from helpers import SEARCH_OWN_MEMORY, Client, Daemon, free_port, local_account, local_group, wait_until
from idp import Idp
from test_e2e_cycles import assert_only_the_drains_pipes, descriptors
from test_e2e_spawner import spawner_of, stopped, waiting_initialize

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="per-user workers need a root daemon "
                                "(it switches each worker to its account); run the suite as root, as CI does")

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "peruser-tests", "version": "0"}}}
SECRET = "only the first account may read this\n"


def _run(*cmd):
    subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=60)


@pytest.fixture(scope="module")
def accounts():
    """Two fresh local accounts sharing a primary group, and that group's name."""
    with local_group() as group, local_account(group=group.gr_gid) as first, \
            local_account(group=group.gr_gid) as second:
        yield [first, second], group.gr_name


@pytest.fixture(scope="module")
def image(accounts):
    """A shared image both accounts can read and commit to, and a file only the first can read."""
    (first, _), group = accounts
    top = Path(tempfile.mkdtemp(prefix="gsmcpd-peruser-", dir="/tmp"))
    try:
        image_dir = default.ensure_default_image(top)
        gid = pwd.getpwnam(first.pw_name).pw_gid
        os.chmod(top, 0o755)
        for path in [image_dir, *image_dir.rglob("*")]:
            os.chown(path, 0, gid)
            os.chmod(path, 0o2775 if path.is_dir() else 0o664)
        # Commits by either account need the lock and journal group-writable; the store
        # creates them 0644 as whoever comes first, so the deployment prepares them.
        state = image_dir / ".gsmcpd"
        state.mkdir(exist_ok=True)
        os.chown(state, 0, gid)
        os.chmod(state, 0o2775)
        for name in ("lock", "journal.jsonl"):
            (state / name).touch()
            os.chown(state / name, 0, gid)
            os.chmod(state / name, 0o664)
        secret = image_dir / "secret.txt"
        secret.write_text(SECRET)
        os.chown(secret, first.pw_uid, first.pw_gid)
        os.chmod(secret, 0o600)
        yield image_dir
    finally:
        shutil.rmtree(top, ignore_errors=True)


# What systemd/per-user-workers.conf leaves the root router (its CapabilityBoundingSet),
# read from the shipped file: the daemon is run with exactly that set too.
DROP_IN = Path(__file__).resolve().parent.parent / "systemd" / "per-user-workers.conf"
CAPABILITY_NUMBERS = {"CAP_KILL": 5, "CAP_SETGID": 6, "CAP_SETUID": 7}   # linux/capability.h
PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 24, 38


def unit_capabilities():
    for line in DROP_IN.read_text().splitlines():
        if line.startswith("CapabilityBoundingSet="):
            return [CAPABILITY_NUMBERS[name] for name in line.split("=", 1)[1].split()]
    raise AssertionError("%s sets no CapabilityBoundingSet" % DROP_IN)


def as_the_unit_runs_it(keep):
    """In the daemon's process before exec: the bounding set `keep` and no_new_privs, as
    systemd applies the unit and its drop-in (root then holds only `keep`)."""
    def apply():
        libc = ctypes.CDLL(None, use_errno=True)
        last = int(Path("/proc/sys/kernel/cap_last_cap").read_text())
        for cap in range(last + 1):
            if cap not in keep and libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
                raise OSError(ctypes.get_errno(), "cannot drop capability %d" % cap)
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "cannot set no_new_privs")
    return apply


def effective_capabilities(pid):
    for line in Path("/proc/%d/status" % pid).read_text().splitlines():
        if line.startswith("CapEff:"):
            return int(line.split()[1], 16)
    raise AssertionError("no CapEff line for pid %d" % pid)


def peruser_daemon(tmp, image, user_map, *, preexec=None, **env):
    """(daemon, idp): a daemon not yet started, with auth from a fresh IdP, per-user
    workers by `user_map` (a path or "identity") on the shared image; `env` adds knobs."""
    port = free_port()
    audience = "http://127.0.0.1:%d/mcp" % port
    idp = Idp(issuer="https://idp.test", audience=audience, kinds=("rsa",))
    jwks = idp.write_jwks(tmp / "jwks.json")
    daemon = Daemon(tmp, port=port, preexec=preexec, env=dict({
        "GS_MCP_AUTH": "1", "MCP_ISSUER": idp.issuer, "MCP_AUDIENCE": audience, "MCP_JWKS_FILE": str(jwks),
        "MCP_USER_MAP": str(user_map), "GS_MCP_IMAGE": str(image), "GS_MCP_SPARE_WORKERS": "0"}, **env))
    return daemon, idp


# What a site sets for the daemon (its unit, gsmcpd.env): a credential, written in
# halves so that no test code holding it is searched for; and a name GS_MCP_WORKER_ENV lists.
SITE_SECRET = ("cloud-credential-", secrets.token_hex(8))
LISTED_NAME, LISTED_VALUE = "GSMCPD_TEST_REGION", "eu-west-%s" % secrets.token_hex(2)
SITE_ENVIRONMENT = {"GSMCPD_TEST_SECRET": "".join(SITE_SECRET), LISTED_NAME: LISTED_VALUE}


@pytest.fixture(scope="module", params=["root", "the unit's capabilities"])
def env(request, tmp_path_factory, accounts, image):
    (first, second), _ = accounts
    tmp = tmp_path_factory.mktemp("peruser")
    user_map = tmp / "users.map"
    user_map.write_text("# claim  account\nann %s\nben %s\nrooted root\nghost %s\n"
                        % (first.pw_name, second.pw_name, MISSING_ACCOUNT))
    keep = unit_capabilities()
    daemon, idp = peruser_daemon(tmp, image, user_map, GS_MCP_SPARE_WORKERS="1",
                                 preexec=None if request.param == "root" else as_the_unit_runs_it(keep),
                                 GS_MCP_WORKER_ENV=LISTED_NAME, **SITE_ENVIRONMENT)
    with daemon:
        if request.param != "root":   # it runs with those capabilities and no others
            assert effective_capabilities(daemon.proc.pid) == sum(1 << cap for cap in keep)
        yield daemon, idp


def bearer(idp, sub):
    return {"Authorization": "Bearer " + idp.mint(sub=sub)}


def with_token(client, idp, sub):
    """`client`, each of its requests sent with a token of `sub`."""
    token = bearer(idp, sub)
    original = client.request

    def request(method, body=None, headers=None, path="/mcp"):
        return original(method, body, dict(headers or {}, **token), path)

    client.request = request
    return client


def session_for(daemon, idp, sub):
    client = with_token(Client(daemon.port), idp, sub)
    client.initialize()
    return client


def run(client, code):
    result = client.tool("execute_code", code=code)
    return "".join(item.get("text", "") for item in result["content"]), result.get("isError", False)


def proc_uids(pid):
    for line in Path("/proc/%d/status" % pid).read_text().splitlines():
        if line.startswith("Uid:"):
            return [int(field) for field in line.split()[1:]]
    raise AssertionError("no Uid line for pid %d" % pid)


@pytest.mark.parametrize("sub,index", [("ann", 0), ("ben", 1)])
def test_each_users_worker_runs_as_the_mapped_account(env, accounts, sub, index):
    daemon, idp = env
    account = accounts[0][index]
    client = session_for(daemon, idp, sub)
    text, failed = run(client, "import os; (os.getuid(), os.geteuid(), os.getgid(), os.getpid(), "
                               "os.environ['USER'])")
    assert not failed, text
    uid, euid, gid, pid, user = eval(text.strip().splitlines()[-1])   # the repr of a tuple of literals
    assert (uid, euid, gid, user) == (account.pw_uid, account.pw_uid, account.pw_gid, account.pw_name)
    assert proc_uids(pid) == [account.pw_uid] * 4          # real, effective, saved, fs: no way back
    # The log names the account a session runs as, not only its token's user.
    assert "session %s opened for %s as account %s (worker %d)" % (client.session[:8], sub, account.pw_name, pid) \
        in daemon.log_text()
    text, failed = run(client, "import os\ntry:\n    os.setuid(0)\nexcept PermissionError:\n"
                               "    print('refused')")
    assert "refused" in text


def test_a_users_worker_holds_none_of_the_daemons_descriptors(env):
    # Its stdio was the root daemon's log (a user could forge whole lines in it), and
    # the spawner's tree holds root's multiprocessing pipes: only its own socket (and the
    # watchdog's pidfd of the router) is left.
    daemon, idp = env
    client = session_for(daemon, idp, "ann")
    text, failed = run(client, "import os\nos.getpid()")
    assert not failed, text
    # Between calls (a call's fds 1 and 2 are its output's pipes), as a thread of its code sees them.
    fds = descriptors(int(text.strip().splitlines()[-1]))
    assert [fds[fd] for fd in (0, 1, 2)] == ["/dev/null"] * 3, fds
    # Its frame socket, and the watchdog's pidfd of the router (which signals nothing
    # the account could not signal anyway: pidfd_send_signal checks as kill does).
    others = sorted(target for fd, target in fds.items() if fd > 2 and not target.startswith("pipe:"))
    assert len(others) == 2 and others[0].startswith("pidfd of "), fds
    assert others[1].startswith("socket:"), fds
    assert_only_the_drains_pipes(fds)
    forged = "WARNING user 'eve' forged this line %s" % secrets.token_hex(4)
    text, failed = run(client, "import os, sys; os.write(2, %r); sys.stderr.write(%r)"
                       % ((forged + "\n").encode(), forged + "\n"))
    assert not failed, text
    assert forged not in daemon.log_text()   # written before the reply: nothing to wait for


READ_OWN_ENVIRONMENT = SEARCH_OWN_MEMORY + """
import ctypes, os
ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)   # PR_SET_DUMPABLE: /proc/self is then the account's to read
with open('/proc/self/environ', 'rb') as block:
    exec_block = block.read()
(dict(os.environ), exec_block.count(0) == len(exec_block), regions_holding(%r, %r))
"""


# A temp file, multiprocessing's pymp-* directory (a Manager's socket goes there: the
# test accounts cannot read this Python's multiprocessing.managers to start one), and a
# directory the code made unreadable.
USE_TMPDIR = """
import multiprocessing.util, os, tempfile
held = tempfile.NamedTemporaryFile()
locked = tempfile.mkdtemp()
open(os.path.join(locked, "inside"), "w").close()
os.chmod(locked, 0)
(os.environ["TMPDIR"], tempfile.gettempdir(), held.name, multiprocessing.util.get_temp_dir(), os.getpid())
"""


def test_a_users_worker_has_a_private_tmpdir_of_its_account_removed_with_it(env, accounts):
    daemon, idp = env
    account = accounts[0][0]
    client = session_for(daemon, idp, "ann")
    text, failed = run(client, USE_TMPDIR)
    assert not failed, text
    tmpdir, seen, held, pymp, pid = eval(text.strip().splitlines()[-1])   # a tuple of literals
    assert seen == tmpdir and held.startswith(tmpdir + "/") and pymp.startswith(tmpdir + "/pymp-")
    mine, daemons = os.lstat(tmpdir), os.lstat(os.path.dirname(tmpdir))
    assert (mine.st_uid, mine.st_gid, stat.S_IMODE(mine.st_mode)) == (account.pw_uid, account.pw_gid, 0o700)
    assert (daemons.st_uid, stat.S_IMODE(daemons.st_mode)) == (0, 0o1733)   # no account lists it
    os.kill(pid, signal.SIGKILL)
    assert wait_until(lambda: not os.path.lexists(tmpdir)), os.listdir(tmpdir)


def test_a_tmpdir_a_mapped_account_cannot_reach_is_warned_of_by_check_and_serve_and_fails_its_open_naming_it(
        tmp_path, accounts, image):
    # The open failed "worker could not be prepared: PermissionError: [Errno 13] Permission
    # denied: '<TMPDIR>/gsmcpd-tmp.x/w.y'", naming neither TMPDIR nor the fix; nothing warned before.
    (first, second), _ = accounts
    private = tempfile.mkdtemp(prefix="gt", dir="/tmp")    # root's, 0700: no account gets past it
    try:
        tmpdir = os.path.join(private, "t")
        os.mkdir(tmpdir, 0o755)
        user_map = tmp_path / "users.map"
        user_map.write_text("ann %s\nben %s\n" % (first.pw_name, second.pw_name))
        daemon, idp = peruser_daemon(tmp_path, image, user_map, TMPDIR=tmpdir)
        said = (f"TMPDIR {tmpdir}: accounts {first.pw_name}, {second.pw_name} cannot reach it ({private}, mode "
                f"0700, owner root, group root, is not searchable by them): their sessions will fail to open; "
                f"make {private} searchable by them (chmod o+x) or set TMPDIR to a directory they can reach, "
                f"such as /tmp")
        checked = check_of(daemon)
        assert checked.returncode == 0, checked.stdout
        assert "  warning      " + said in checked.stdout.splitlines(), checked.stdout
        with daemon:
            assert " WARNING " + said in daemon.log_text()
            resp = Client(daemon.port).post(INIT, headers=bearer(idp, "ann"))
            assert resp.header("mcp-session-id") is None, resp
            message = resp.json()["error"]["message"]
            assert message.startswith("session ended: worker could not be prepared: PermissionError: "), message
            assert (f"account {first.pw_name} cannot make its temporary directory in the daemon's TMPDIR "
                    f"{tmpdir}: per-user workers need every directory on its path searchable by the mapped "
                    f"accounts (chmod o+x, as /tmp is), or TMPDIR set to such a directory") in message, message
            # A reloaded map is checked too: it may name accounts the first did not.
            user_map.write_text("ann %s\n" % first.pw_name)
            daemon.proc.send_signal(signal.SIGHUP)
            said = (f"TMPDIR {tmpdir}: account {first.pw_name} cannot reach it ({private}, mode 0700, owner root, "
                    f"group root, is not searchable by it): its sessions will fail to open; make {private} "
                    f"searchable by it (chmod o+x) or set TMPDIR to a directory it can reach, such as /tmp")
            assert wait_until(lambda: " WARNING " + said in daemon.log_text()), daemon.log_text()
    finally:
        shutil.rmtree(private)


def check_of(daemon, python=sys.executable):
    """`gsmcpd check` of `daemon`'s settings (started or not), run by `python`."""
    return subprocess.run([python, "-m", "gsmcpd", "check", "--port", str(daemon.port)], env=daemon.env,
                          cwd=str(daemon.tmp), capture_output=True, text=True, timeout=60)


@contextlib.contextmanager
def private_and_open():
    """Two directories in /tmp, removed after: root's own (0700, no account gets past it)
    and one every account may search (0755)."""
    private = tempfile.mkdtemp(prefix="gt", dir="/tmp")
    opened = tempfile.mkdtemp(prefix="gu", dir="/tmp")
    try:
        os.chmod(opened, 0o755)
        yield private, opened
    finally:
        shutil.rmtree(private)
        shutil.rmtree(opened)


def check_mapping_ann(tmp_path, image, account, python=sys.executable, **env):
    """What `gsmcpd check`, run by `python`, says of a per-user daemon's settings mapping
    user ann to `account` (`env` added to its environment); it must pass."""
    user_map = tmp_path / "users.map"
    user_map.write_text("ann %s\n" % account.pw_name)
    daemon, _ = peruser_daemon(tmp_path, image, user_map, **env)
    checked = check_of(daemon, python)
    assert checked.returncode == 0, checked.stdout
    return checked.stdout


def test_a_tmpdir_through_a_link_to_a_link_in_a_private_directory_is_warned_of_by_check(tmp_path, accounts, image):
    # TMPDIR=<open>/link/t, link -> PRIVATE/link2 -> <open>/real: the kernel reads link2 as the
    # account, which may not enter PRIVATE; check walked the path as written and resolved only.
    (first, _), _ = accounts
    with private_and_open() as (private, opened):
        os.makedirs(os.path.join(opened, "real", "t"), 0o755)
        os.symlink(os.path.join(opened, "real"), os.path.join(private, "link2"))
        os.symlink(os.path.join(private, "link2"), os.path.join(opened, "link"))
        tmpdir = os.path.join(opened, "link", "t")
        checked = check_mapping_ann(tmp_path, image, first, TMPDIR=tmpdir)
        assert (f"  warning      TMPDIR {tmpdir}: account {first.pw_name} cannot reach it ({private}, mode 0700, "
                f"owner root, group root, is not searchable by it)") in checked, checked



def test_a_tmpdir_through_a_link_going_up_out_of_a_private_directory_is_warned_of_by_check(tmp_path, accounts, image):
    # TMPDIR=<open>/link/t, link -> real/PRIVATE/.. (relative): the kernel looks `..` up in
    # PRIVATE, as the account; check joined the target to the link's place as written,
    # <open>/real, PRIVATE never looked at, and said nothing.
    (first, _), _ = accounts
    opened = tempfile.mkdtemp(prefix="gu", dir="/tmp")
    try:
        os.chmod(opened, 0o755)
        os.makedirs(os.path.join(opened, "real", "t"), 0o755)
        private = os.path.join(opened, "real", "private")
        os.mkdir(private, 0o700)
        os.symlink(os.path.join("real", "private", ".."), os.path.join(opened, "link"))
        tmpdir = os.path.join(opened, "link", "t")
        checked = check_mapping_ann(tmp_path, image, first, TMPDIR=tmpdir)
        assert (f"  warning      TMPDIR {tmpdir}: account {first.pw_name} cannot reach it ({private}, mode 0700, "
                f"owner root, group root, is not searchable by it)") in checked, checked
    finally:
        shutil.rmtree(opened)


def venv_in(directory):
    """A venv made in `directory` by this python, reading this one's packages: its python."""
    venv = Path(directory) / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    site = subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          check=True, capture_output=True, text=True, timeout=60).stdout.strip()
    Path(site, "outer.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return str(venv / "bin" / "python")


def test_mapped_accounts_that_cannot_run_the_daemons_python_are_warned_of_by_check_and_serve(tmp_path, accounts,
                                                                                                image):
    # A deletion's trial import runs the daemon's python as the session's account: one
    # under a directory of mode 0700 (/root's pyenv) only noted importNotTried, unwarned.
    (first, second), _ = accounts
    private = tempfile.mkdtemp(prefix="gp", dir="/tmp")    # root's, 0700: no account gets past it
    try:
        python = venv_in(private)
        user_map = tmp_path / "users.map"
        user_map.write_text("ann %s\nben %s\nrooted root\n" % (first.pw_name, second.pw_name))
        daemon, idp = peruser_daemon(tmp_path, image, user_map)
        daemon.python = python
        said = (f"the daemon's python {python}: accounts {first.pw_name}, {second.pw_name} cannot run it ({private}, "
                f"mode 0700, owner root, group root, is not searchable by them): a deletion's trial import, which "
                f"runs that python as the session's account, is not tried in their sessions (importNotTried); "
                f"make {private} searchable by them (chmod o+x) or run the daemon from a venv made from a python "
                f"they can run (rm -r VENV && PYTHON=/usr/bin/python3.11 ./install.sh)")
        checked = check_of(daemon, python)
        assert checked.returncode == 0, checked.stdout
        assert "  warning      " + said in checked.stdout.splitlines(), checked.stdout
        with daemon:
            assert " WARNING " + said in daemon.log_text()
        os.chmod(private, 0o755)
        checked = check_of(daemon, python)
        assert checked.returncode == 0 and private + "," not in checked.stdout, checked.stdout
    finally:
        shutil.rmtree(private)


def test_a_link_to_the_daemons_python_in_a_private_directory_is_warned_of_by_check(tmp_path, accounts, image):
    # venv/bin/python -> PRIVATE/python3 -> the python: the kernel follows the middle link as
    # the account, which may not enter PRIVATE; check looked at the venv's and the python's
    # directories only, and said nothing.
    (first, _), _ = accounts
    with private_and_open() as (private, opened):
        python = venv_in(opened)
        Path(private, "python3").symlink_to(os.path.realpath(python))
        os.unlink(python)
        os.symlink(Path(private, "python3"), python)
        checked = check_mapping_ann(tmp_path, image, first, python)
        assert (f"  warning      the daemon's python {python}: account {first.pw_name} cannot run it ({private}, "
                f"mode 0700, owner root, group root, is not searchable by it)") in checked, checked


def test_a_users_worker_keeps_only_the_allow_listed_environment_and_the_names_listed(env, accounts):
    # It kept the daemon's whole environment: a site's credential and the daemon's own
    # GS_MCP_*/MCP_* settings were every user's code's to read, in os.environ, in
    # /proc/self/environ and in its memory (unsetenv leaves the strings where they were).
    daemon, idp = env
    account = accounts[0][0]
    text, failed = run(session_for(daemon, idp, "ann"), READ_OWN_ENVIRONMENT % tuple(
        half.encode() for half in SITE_SECRET))
    assert not failed, text
    environ, exec_block_wiped, holding = eval(text.strip().splitlines()[-1])   # a repr of literals
    assert "GSMCPD_TEST_SECRET" not in environ
    assert holding == [] and exec_block_wiped
    assert environ[LISTED_NAME] == LISTED_VALUE
    assert not [name for name in environ if name.startswith(("GS_MCP_", "MCP_"))], environ
    assert (environ["HOME"], environ["USER"], environ["LOGNAME"]) == (account.pw_dir, account.pw_name,
                                                                       account.pw_name)
    assert environ["PATH"] == daemon.env["PATH"] and environ["PYTHONPATH"] == daemon.env["PYTHONPATH"]
    # ...and TMPDIR, the session's own directory (tmpdirs), whatever the daemon's was.
    assert set(environ) <= set(worker_environ(daemon.env, [LISTED_NAME])) | {"HOME", "USER", "LOGNAME",
                                                                              "TMPDIR"}


def test_the_kernel_enforces_the_accounts_file_permissions(env, image):
    daemon, idp = env
    ann, ben = session_for(daemon, idp, "ann"), session_for(daemon, idp, "ben")
    code = "print(open(%r).read(), end='')" % str(image / "secret.txt")
    text, failed = run(ann, code)
    assert not failed and text == SECRET.rstrip("\n")
    text, failed = run(ben, code)
    assert failed and "PermissionError" in text
    assert SECRET.rstrip("\n") not in text


def test_both_accounts_browse_the_shared_image(env):
    daemon, idp = env
    for sub in ("ann", "ben"):
        client = session_for(daemon, idp, sub)
        status = client.tool("status")
        assert not status.get("isError"), status
        classes = client.tool("list_classes", dictionaryName="shop.models")
        assert "Product" in str(classes)


MISSING_ACCOUNT = "gsmcpd-no-such-account"


@pytest.mark.parametrize("sub, logged, answered", [
    ("nobody-we-know", "user 'nobody-we-know' has no local account mapping", "is not mapped to a local account"),
    ("rooted", "user 'rooted' names root account 'root' (uid 0), which never runs a worker",
     "maps to the root account, which never runs a worker"),
    ("ghost", "user 'ghost' is mapped to account %r, which does not exist" % MISSING_ACCOUNT,
     "maps to a local account that does not exist"),
])
def test_an_unmapped_user_or_a_root_mapping_is_403_and_gets_no_worker(env, sub, logged, answered):
    # The log tells the administrator which map line to fix (a missing account and root
    # read "no mapping" there once); the client hears the same reason, without the
    # account's name ("not mapped" for a root mapping the log called one).
    daemon, idp = env
    client = Client(daemon.port)
    resp = client.post(INIT, headers={"Authorization": "Bearer " + idp.mint(sub=sub)})
    assert resp.status == 403, resp
    assert resp.header("mcp-session-id") is None
    assert resp.json()["error"]["message"] == "Forbidden: this user " + answered
    assert logged + ": refused" in daemon.log_text()


def test_a_client_looping_on_an_unmapped_users_token_is_logged_once_not_per_request(env):
    # Each 403 wrote a WARNING line: a client looping on such a token flooded the log.
    daemon, idp = env
    client = Client(daemon.port)
    for token in [bearer(idp, "looping-stranger")] * 20 + [bearer(idp, "stranger-done")]:
        assert client.post(INIT, headers=token).status == 403
    assert wait_until(lambda: "user 'stranger-done' has no local account mapping" in daemon.log_text())
    assert daemon.log_text().count("user 'looping-stranger' has no local account mapping") == 1


def test_one_accounts_commit_is_seen_by_the_other(env, accounts, image):
    daemon, idp = env
    ann = session_for(daemon, idp, "ann")
    result = ann.tool("set_class_comment", className="shop.models.Product", comment="Edited by ann.")
    assert not result.get("isError"), result
    ben = session_for(daemon, idp, "ben")
    text, failed = run(ben, "import shop.models; shop.models.Product.__doc__")
    assert not failed and "Edited by ann." in text
    result = ben.tool("set_class_comment", className="shop.models.Product", comment="Then ben.")
    assert not result.get("isError"), result
    journal = [json.loads(line) for line in (image / ".gsmcpd" / "journal.jsonl").read_text().splitlines()]
    assert [entry["user"] for entry in journal[-2:]] == ["ann", "ben"]
    owner = pwd.getpwuid((image / "shop" / "models.py").stat().st_uid).pw_name
    assert owner == accounts[0][1].pw_name            # written by ben's worker, as ben


def test_identity_mapping_runs_the_claim_as_the_account_of_that_name(tmp_path, accounts, image):
    first = accounts[0][0]
    daemon, idp = peruser_daemon(tmp_path, image, "identity")
    port = daemon.port
    with daemon:
        client = session_for(daemon, idp, first.pw_name)
        text, failed = run(client, "import os; os.getuid()")
        assert not failed and text.strip().splitlines()[-1] == str(first.pw_uid)
        for sub, answered, logged in [
                ("root", "maps to the root account, which never runs a worker",
                 "user 'root' names root account 'root' (uid 0), which never runs a worker: refused"),
                ("no-such-account-here", "is not mapped to a local account",
                 "user 'no-such-account-here' has no local account mapping: refused")]:
            resp = Client(port).post(INIT, headers={"Authorization": "Bearer " + idp.mint(sub=sub)})
            assert resp.status == 403, (sub, resp)
            # The same reason in the answer as in the log ("not mapped" for root, as the log said root)
            assert resp.json()["error"]["message"] == "Forbidden: this user " + answered
            assert logged in daemon.log_text()
        # A system account (uid below UID_MIN: daemon is uid 1) is no login account.
        resp = Client(port).post(INIT, headers={"Authorization": "Bearer " + idp.mint(sub="daemon")})
        assert resp.status == 403 and resp.header("mcp-session-id") is None, resp
        assert "maps to a system account" in resp.json()["error"]["message"]
        assert "user 'daemon' names system account 'daemon' (uid 1" in daemon.log_text()
        # Nor is nobody, above UID_MAX (65534, the overflow uid: services drop to it).
        resp = Client(port).post(INIT, headers=bearer(idp, "nobody"))
        assert resp.status == 403 and resp.header("mcp-session-id") is None, resp
        assert "maps to a system account" in resp.json()["error"]["message"]
        assert ("user 'nobody' names system account 'nobody' (uid %d, above UID_MAX %d)"
                % (pwd.getpwnam("nobody").pw_uid, login_uid_range()[1])) in daemon.log_text()


@pytest.mark.parametrize("contents, said", [
    (None, "user_map: cannot read the MCP_USER_MAP file {path}: No such file or directory"),
    ("ann\n", "user_map: MCP_USER_MAP {path}:1: expected 'claim-value account', got 1 field"),
])
def test_a_user_map_that_cannot_be_used_is_refused_naming_it_by_serve_and_check(tmp_path, image, contents, said):
    # A missing map made serve exit "cannot serve on 127.0.0.1:PORT: No such file or
    # directory", a malformed one with a traceback's "gsmcpd failed: UserMapError"; check said OK.
    path = tmp_path / "users.map"
    if contents is not None:
        path.write_text(contents)
    said = said.format(path=path)
    daemon, _ = peruser_daemon(tmp_path, image, path)
    assert daemon.refusal() == 2
    assert f"ERROR gsmcpd: {said}" in daemon.log_text() and "Traceback" not in daemon.log_text()
    assert "cannot serve on" not in daemon.log_text()
    checked = check_of(daemon)
    assert checked.returncode == 2 and checked.stdout.splitlines()[-1] == f"PROBLEM: user map: {said}", checked.stdout


def test_check_warns_of_map_lines_naming_root_or_a_missing_account_by_file_and_line(tmp_path, image, accounts):
    # serve takes such a map, and said so only in a log line when the user came.
    path = tmp_path / "users.map"
    path.write_text("# claim  account\nann %s\nrooted root\n\nghost no-such-account-here\n" % accounts[0][0].pw_name)
    daemon, _ = peruser_daemon(tmp_path, image, path)
    checked = check_of(daemon)
    lines = checked.stdout.splitlines()
    assert checked.returncode == 0, checked.stdout
    warnings = [line.split(None, 1)[1] for line in lines if line.startswith("  warning ")]
    # A python under a home of mode 0700 (pyenv's under /root) is warned of too: not these lines'.
    python_unrunnable = [text for text in warnings if text.startswith("the daemon's python ")]
    assert lines[-1] == "OK: ready to serve http://127.0.0.1:%d/mcp (%d warnings above)" % (
        daemon.port, 2 + len(python_unrunnable))
    assert [text for text in warnings if text not in python_unrunnable] == [
        f"{path}:3: user 'rooted' names root account 'root' (uid 0), which never runs a worker: that user gets 403",
        f"{path}:5: user 'ghost' is mapped to account 'no-such-account-here', which does not exist: that user gets 403"]


def test_serve_warns_at_start_of_map_lines_naming_root_or_a_missing_account(tmp_path, image, accounts):
    # It took such a map silently: the administrator heard of a typo only when its user
    # came and was refused (403, a log line), unless they had run check.
    path = tmp_path / "users.map"
    path.write_text("# claim  account\nann %s\nrooted root\n\nghost no-such-account-here\n" % accounts[0][0].pw_name)
    daemon, _ = peruser_daemon(tmp_path, image, path)
    with daemon:
        warned = [line.split(" WARNING ", 1)[1] for line in daemon.log_text().splitlines()
                  if " WARNING MCP_USER_MAP " in line]
    assert warned == [
        f"MCP_USER_MAP {path}:3: user 'rooted' names root account 'root' (uid 0), which never runs a worker: "
        "that user gets 403",
        f"MCP_USER_MAP {path}:5: user 'ghost' is mapped to account 'no-such-account-here', which does not exist: "
        "that user gets 403"]


def test_an_image_the_account_may_not_use_fails_its_open_naming_the_fix(tmp_path, accounts):
    first = accounts[0][0]
    private = default.ensure_default_image(tmp_path / "root-only")   # root's, 0755: as a state dir's
    daemon, idp = peruser_daemon(tmp_path, private, "identity")
    with daemon:
        resp = Client(daemon.port).post(INIT, headers={"Authorization": "Bearer " + idp.mint(sub=first.pw_name)})
        message = resp.json()["error"]["message"]
        assert "PermissionError" in message and str(private) in message, message
        assert ("account %s may not use the image: per-user workers need GS_MCP_IMAGE outside the daemon's "
                "state directory and group-writable by the users' accounts" % first.pw_name) in message
        assert "account %s may not use the image" % first.pw_name in daemon.log_text()


@pytest.mark.parametrize("end", ["DELETE", "worker killed"])
def test_what_a_users_code_moved_out_of_its_group_ends_with_its_session(env, accounts, end):
    # The worker runs as the account and kills its own descendants at its end; one killed
    # from outside leaves them to the spawner (root), which kills only what it adopted.
    from test_e2e_user_code import START_ESCAPERS
    from helpers import parent_of, pid_alive, wait_until

    daemon, idp = env
    client = session_for(daemon, idp, "ann")
    text, failed = run(client, START_ESCAPERS)
    assert not failed, text
    pids = eval(text.strip().splitlines()[-1])
    text, failed = run(client, "import os; os.getpid()")
    worker = int(text.strip().splitlines()[-1])
    assert all(pid_alive(pid) and proc_uids(pid)[0] == accounts[0][0].pw_uid for pid in pids)
    assert parent_of(pids[1]) == worker             # the double-forked daemon: adopted by the worker
    if end == "DELETE":
        assert client.delete().status == 200
    else:
        os.kill(worker, 9)
    for pid in pids:
        assert wait_until(lambda: not pid_alive(pid)), "%d outlived its session" % pid
    # Other sessions' workers are untouched.
    assert run(session_for(daemon, idp, "ben"), "6 * 7") == ("42", False)


def test_a_users_workers_own_log_records_reach_the_daemons_log_marked_as_its(env):
    # Its stdio is /dev/null; its records come over its frame socket, through the router.
    daemon, idp = env
    client = session_for(daemon, idp, "ann")
    tag = secrets.token_hex(4)
    text, failed = run(client, "import logging, os; logging.getLogger('gsmcpd.worker').warning("
                               "'internal trouble %s\\nWARNING forged'); os.getpid()" % tag)
    assert not failed, text
    pid = int(text.strip().splitlines()[-1])
    said = " WARNING worker %d session %s user ann logged: internal trouble %s\\nWARNING forged" % (
        pid, client.session[:8], tag)
    assert wait_until(lambda: said in daemon.log_text())


def test_under_the_units_capabilities_a_users_runaway_call_is_broken(tmp_path, accounts, image):
    # The break is a signal from the root router to a worker running as another user:
    # without CAP_KILL it would be refused (EPERM) and the call would run on.
    first = accounts[0][0]
    daemon, idp = peruser_daemon(tmp_path, image, "identity", GS_MCP_REQUEST_TIMEOUT="0.5",
                                 preexec=as_the_unit_runs_it(unit_capabilities()))
    with daemon:
        client = session_for(daemon, idp, first.pw_name)
        # Its view read first (a worker reads it after the initialize reply): a break landing
        # while the worker still reads it is lost, and this call would meet the hard one.
        assert run(client, "6 * 7") == ("42", False)
        reply = client.call("tools/call", {"name": "execute_code", "arguments": {"code": "while True: pass"}})
        assert reply.status == 200
        assert reply.json()["error"] == {"code": -32001, "message":
                                       "request timed out after 0.5s (GS_MCP_REQUEST_TIMEOUT) and was interrupted: soft break"}
        assert run(client, "6 * 7") == ("42", False)   # the same worker, still serving


def test_links_one_account_plants_in_the_shared_image_do_not_make_anothers_commit_write_its_files(
        env, accounts, image):
    # ann may create entries in the shared image (it is group-writable); ben's worker, running
    # as ben, must not follow one to write into ben's own files when ben commits.
    daemon, idp = env
    ben_account = accounts[0][1]
    bens = Path(tempfile.mkdtemp(prefix="gsmcpd-bens-", dir="/tmp"))
    try:
        os.chown(bens, ben_account.pw_uid, ben_account.pw_gid)
        os.chmod(bens, 0o700)                                # ann cannot look in, ben's worker can
        notes = bens / "notes"
        notes.write_text("ben's own\n")
        os.chown(notes, ben_account.pw_uid, ben_account.pw_gid)
        ann, ben = session_for(daemon, idp, "ann"), session_for(daemon, idp, "ben")
        text, failed = run(ben, "import os; os.getpid()")
        ben_pid = int(text.strip().splitlines()[-1])
        plant = ("import os\n"
                 "def plant(at, to):\n"
                 "    try:\n        os.unlink(at)\n    except FileNotFoundError:\n        pass\n"
                 "    os.symlink(to, at)\n"
                 "plant(%r, %r)\nplant(%r, %r)\nprint('planted')" % (
                     str(image / "shop" / (".models.py.tmp-%d" % ben_pid)), str(bens / "planted"),
                     str(image / ".gsmcpd" / "journal.count"), str(notes)))
        text, failed = run(ann, plant)
        assert not failed and "planted" in text, text
        result = ben.tool("set_class_comment", className="shop.models.Product", comment="Ben, safely.")
        assert not result.get("isError"), result
        assert not (bens / "planted").exists() and not (bens / "planted").is_symlink()
        assert notes.read_text() == "ben's own\n"
        assert not (image / "shop" / "models.py").is_symlink()
        assert "Ben, safely." in (image / "shop" / "models.py").read_text()
    finally:
        for link in (image / ".gsmcpd" / "journal.count", *image.glob("shop/.models.py.tmp-*")):
            if link.is_symlink():
                link.unlink()
        shutil.rmtree(bens, ignore_errors=True)


def test_a_package_one_account_adds_stays_usable_by_the_others_under_the_units_umask(tmp_path, accounts, image):
    # The unit sets UMask=0077, which every worker inherits: a directory a commit creates
    # takes its parent's mode, or the other accounts could not read the image (every
    # session open scans it) nor commit to the new package.
    (first, second), _ = accounts
    user_map = tmp_path / "users.map"
    user_map.write_text("ann %s\nben %s\n" % (first.pw_name, second.pw_name))
    daemon, idp = peruser_daemon(tmp_path, image, user_map, preexec=lambda: os.umask(0o077))
    name = "pkg%s" % secrets.token_hex(3)
    try:
        with daemon:
            ann = session_for(daemon, idp, "ann")
            result = ann.tool("add_dictionary", dictionaryName=name + ".tools")
            assert not result.get("isError"), result
            made = image / name
            ben = session_for(daemon, idp, "ben")
            result = ben.tool("compile_class_definition", dictionaryName=name + ".tools",
                              source="class Wrench:\n    \"\"\"Ben's.\"\"\"\n")
            assert not result.get("isError"), result
            assert "Ben's." in (made / "tools.py").read_text()
            assert stat.S_IMODE(made.stat().st_mode) == stat.S_IMODE(made.parent.stat().st_mode)
    finally:
        shutil.rmtree(image / name, ignore_errors=True)


@pytest.fixture
def accounts_in_their_own_groups():
    """Two fresh accounts, each with its own primary group, sharing a third as a
    supplementary one (as a site adds its users to the image's group), and its gid."""
    with local_group() as group, local_account(groups=[group.gr_name]) as first, \
            local_account(groups=[group.gr_name]) as second:
        yield [first, second], group.gr_gid


def test_accounts_sharing_a_setgid_image_through_its_group_both_commit_with_no_state_prepared(
        tmp_path, accounts_in_their_own_groups):
    # The state directory the first session made lost the image's setgid bit: the journal
    # took its first writer's own group, and the other account's every commit was left
    # pending (Permission denied: 'journal.jsonl').
    (first, second), group = accounts_in_their_own_groups
    top = Path(tempfile.mkdtemp(prefix="gsmcpd-peruser-", dir="/tmp"))   # tmp_path is 0700
    try:
        image = default.ensure_default_image(top)
        os.chmod(top, 0o755)
        for path in [image, *image.rglob("*")]:
            os.chown(path, 0, group)
            os.chmod(path, 0o2775 if path.is_dir() else 0o664)
        assert not (image / ".gsmcpd").exists()
        user_map = tmp_path / "users.map"
        user_map.write_text("ann %s\nben %s\n" % (first.pw_name, second.pw_name))
        daemon, idp = peruser_daemon(tmp_path, image, user_map)
        with daemon:
            for sub in ("ann", "ben"):
                result = session_for(daemon, idp, sub).tool(
                    "set_class_comment", className="shop.models.Product", comment="Edited by %s." % sub)
                assert not result.get("isError"), result
                assert "committed" in result["content"][0]["text"], result
        assert "Edited by ben." in (image / "shop" / "models.py").read_text()
        journal = (image / ".gsmcpd" / "journal.jsonl").read_text().splitlines()
        assert [json.loads(line)["user"] for line in journal] == ["ann", "ben"]
        assert (image / ".gsmcpd" / "journal.jsonl").stat().st_gid == group
    finally:
        shutil.rmtree(top, ignore_errors=True)


def test_a_package_one_account_makes_unlistable_neither_stops_the_others_sessions_nor_takes_their_commits(
        tmp_path, accounts, image):
    # ann's package at mode 0311 (ben may enter it, not list it) made every new session of
    # ben's fail: "worker could not be prepared: PermissionError ... image/<it>".
    (first, second), _ = accounts
    user_map = tmp_path / "users.map"
    user_map.write_text("ann %s\nben %s\n" % (first.pw_name, second.pw_name))
    daemon, idp = peruser_daemon(tmp_path, image, user_map)
    name = "hid%s" % secrets.token_hex(3)
    try:
        with daemon:
            ann = session_for(daemon, idp, "ann")
            assert not ann.tool("add_dictionary", dictionaryName=name + ".inner").get("isError")
            text, failed = run(ann, "import os; os.chmod(%r, 0o311)" % str(image / name))
            assert not failed, text
            ben = session_for(daemon, idp, "ben")
            dictionaries = ben.tool("list_dictionaries")["structuredContent"]["dictionaries"]
            assert "shop.models" in dictionaries and name not in dictionaries
            assert ben.tool("status")["structuredContent"]["unlisted"] == [name + "/"]
            refused = ben.tool("add_dictionary", dictionaryName=name + ".mine")
            assert refused["structuredContent"]["error"]["kind"] == "refused"
            assert "".join(item["text"] for item in refused["content"]).startswith(
                "commit refused: %s/ is a directory of the image this account may not list or enter" % name)
            assert not (image / name / "mine.py").exists()
            assert not ben.tool("abort").get("isError")
            result = ben.tool("set_class_comment", className="shop.models.Product", comment="Ben's still.")
            assert not result.get("isError"), result
            assert "unlisted" not in ann.tool("status")["structuredContent"]   # ann lists it
    finally:
        shutil.rmtree(image / name, ignore_errors=True)


def bens_commit_refused(daemon, idp, ann, package, ann_code):
    """ann's new module package/kept.py, on which ann runs `ann_code` (`kept` its path);
    ben's commit of a class to it is refused: (its path, ben's session, the refusal's text)."""
    assert not ann.tool("add_dictionary", dictionaryName=package.name + ".kept").get("isError")
    kept = package / "kept.py"
    assert stat.S_IMODE(kept.stat().st_mode) == 0o664      # a new module, as shared as its directory
    text, failed = run(ann, "import os\nkept = %r\n%s" % (str(kept), ann_code))
    assert not failed, text
    ben = session_for(daemon, idp, "ben")
    refused = ben.tool("compile_class_definition", dictionaryName=package.name + ".kept", source="class Bens:\n    pass\n")
    assert refused["structuredContent"]["error"]["kind"] == "refused", refused
    return kept, ben, "".join(item["text"] for item in refused["content"])


def test_a_module_its_owner_keeps_unwritable_to_others_is_refused_to_their_commit_and_a_new_one_is_shared(
        env, accounts, image):
    # The commit's rename needs only the group-writable directory: ben replaced ann's
    # 0644 module (and became its owner), whatever its permissions said.
    daemon, idp = env
    (first, _), _ = accounts
    name = "own%s" % secrets.token_hex(3)
    try:
        ann = session_for(daemon, idp, "ann")
        assert not ann.tool("add_dictionary", dictionaryName=name + ".shared").get("isError")
        kept, ben, said = bens_commit_refused(daemon, idp, ann, image / name, "os.chmod(kept, 0o644)")
        assert said == (
            "commit refused: %s/kept.py may not be changed by this account (its file is not writable by it: "
            "owner %s, mode 0644), so nothing was written; its owner must make it writable to you "
            "(group-writable in a shared image); your changes are kept uncommitted (%s.kept)"
            % (name, first.pw_name, name))
        assert "Bens" not in kept.read_text() and kept.stat().st_uid == first.pw_uid
        assert not ben.tool("abort").get("isError")
        result = ben.tool("compile_class_definition", dictionaryName=name + ".shared", source="class Bens:\n    pass\n")
        assert not result.get("isError"), result
        assert "class Bens" in (image / name / "shared.py").read_text()
    finally:
        shutil.rmtree(image / name, ignore_errors=True)


def test_a_module_refused_in_a_directory_its_owner_keeps_unwritable_too_says_both_must_be_made_writable(
        env, accounts, image):
    # The answer sent ann to make the file writable only: ben's rename in her 0755
    # directory would have been refused all the same.
    daemon, idp = env
    (first, _), _ = accounts
    name = "ownd%s" % secrets.token_hex(3)
    try:
        ann = session_for(daemon, idp, "ann")
        kept, _, said = bens_commit_refused(daemon, idp, ann, image / name,
                                            "os.chmod(kept, 0o644); os.chmod(os.path.dirname(kept), 0o755)")
        assert said == (
            "commit refused: %s/kept.py may not be changed by this account (its file is not writable by it: "
            "owner %s, mode 0644), so nothing was written; its owner must make it writable to you, and its "
            "directory %s/ (owner %s) must be made writable to you too (group-writable in a shared image); "
            "your changes are kept uncommitted (%s.kept)" % (name, first.pw_name, name, first.pw_name, name))
        assert "Bens" not in kept.read_text()
    finally:
        shutil.rmtree(image / name, ignore_errors=True)


def test_a_commit_by_a_mapped_account_outside_the_images_group_names_the_group_to_join(
        tmp_path, accounts, image):
    # Told "its owner must make it writable to you" of a 0664 module, the user went to its
    # owner, who could do nothing: the account lacks the image's group, the administrator's to grant.
    (first, _), group = accounts
    with local_account() as outsider_account:
        outsider = outsider_account.pw_name
        user_map = tmp_path / "users.map"
        user_map.write_text("ann %s\ncas %s\n" % (first.pw_name, outsider))
        daemon, idp = peruser_daemon(tmp_path, image, user_map)
        with daemon:
            ann = session_for(daemon, idp, "ann")
            name = "grp%s" % secrets.token_hex(3)
            try:
                assert not ann.tool("add_dictionary", dictionaryName=name).get("isError")
                cas = session_for(daemon, idp, "cas")
                refused = cas.tool("compile_class_definition", dictionaryName=name,
                                   source="class Cas:\n    pass\n")
                said = "".join(item["text"] for item in refused["content"])
                assert said == (
                    "commit refused: %s.py may not be changed by this account (its file is writable by its "
                    "group %s, and this account is not in it: owner %s, mode 0664), so nothing was written; "
                    "an administrator must add %s to %s (usermod -aG %s %s; the sessions it opens after "
                    "that are in it); your changes are kept uncommitted (%s)"
                    % (name, group, first.pw_name, outsider, group, group, outsider, name)), said
                assert "Cas" not in (image / (name + ".py")).read_text()
            finally:
                (image / (name + ".py")).unlink(missing_ok=True)


def test_a_commit_to_an_image_mounted_read_only_says_the_image_could_not_be_written(env, image):
    # As under ProtectSystem=strict with the image not in ReadWritePaths=: the account's
    # group-writable module was refused as "not writable by it ... its owner must make it
    # writable to you", sending the administrator to the files' modes.
    daemon, idp = env
    ann = session_for(daemon, idp, "ann")
    mounted = subprocess.run(["mount", "--bind", str(image), str(image)], capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip("root cannot bind-mount here: %s" % mounted.stderr.strip())
    try:
        _run("mount", "-o", "remount,ro,bind", str(image))
        failed = ann.tool("set_class_comment", className="shop.models.Product", comment="Read-only.")
    finally:
        _run("umount", "-l", str(image))
    assert failed["structuredContent"]["error"]["kind"] == "other", failed
    said = "".join(item["text"] for item in failed["content"])
    assert said.startswith("commit failed: the image could not be written ([Errno 30] Read-only file system"), said
    assert "Read-only." not in (image / "shop" / "models.py").read_text()
    assert not ann.tool("abort").get("isError")


def test_sighup_reloads_the_user_map_ending_only_the_sessions_whose_mapping_changed(tmp_path, accounts, image):
    # The map was read once at start: a user taken out of it kept opening sessions, as
    # their old account, until a restart ended every user's sessions.
    import threading

    (first, second), _ = accounts
    user_map = tmp_path / "users.map"
    user_map.write_text("ann %s\nben %s\n" % (first.pw_name, second.pw_name))
    daemon, idp = peruser_daemon(tmp_path, image, user_map)

    def reload(text, said):
        user_map.write_text(text)
        daemon.proc.send_signal(signal.SIGHUP)
        assert wait_until(lambda: said in daemon.log_text()), daemon.log_text()

    def uid_of(client):
        text, failed = run(client, "import os; os.getuid()")
        assert not failed, text
        return int(text.strip().splitlines()[-1])

    with daemon:
        ann, ben = session_for(daemon, idp, "ann"), session_for(daemon, idp, "ben")
        busy, answered = session_for(daemon, idp, "ben"), []
        calling = threading.Thread(target=lambda: answered.append(busy.call("tools/call", {
            "name": "execute_code", "arguments": {"code": "import time\nwhile True: time.sleep(0.05)"}})))
        calling.start()
        assert wait_until(lambda: any(row["in_flight"] for row in daemon.status().get("sessions", [])))
        reload("ann %s\ncat %s\n" % (first.pw_name, second.pw_name),
               "SIGHUP: MCP_USER_MAP %s reloaded: 2 user(s) mapped" % user_map)
        calling.join(30)
        assert answered[0].json()["error"] == {"code": -32003, "message": "session ended: SIGHUP: its user's "
                                               "account mapping changed (MCP_USER_MAP reloaded)"}
        ending = ("session %s, whose worker runs as account %r: user 'ben' has no local account mapping; ending it"
                  % (ben.session[:8], second.pw_name))
        assert wait_until(lambda: ending in daemon.log_text())   # logged right after the reload's line
        assert ben.call("ping").status == 403                  # its token's user is no one's now
        resp = Client(daemon.port).post(INIT, headers={"Authorization": "Bearer " + idp.mint(sub="ben")})
        assert resp.status == 403 and "not mapped to a local account" in resp.json()["error"]["message"]
        assert uid_of(session_for(daemon, idp, "cat")) == second.pw_uid
        assert uid_of(ann) == first.pw_uid                     # untouched by it
        # Moved to another account: the session's worker would go on as the old one.
        reload("ann %s\n" % second.pw_name, "SIGHUP: MCP_USER_MAP %s reloaded: 1 user(s) mapped" % user_map)
        assert ann.call("ping").status == 404
        assert uid_of(session_for(daemon, idp, "ann")) == second.pw_uid
        # A map that cannot be read then leaves the one in use.
        user_map.write_text("ann\n")
        daemon.proc.send_signal(signal.SIGHUP)
        said = ("SIGHUP: user_map: MCP_USER_MAP %s:1: expected 'claim-value account', got 1 field; "
                "still using the map loaded before" % user_map)
        assert wait_until(lambda: said in daemon.log_text()), daemon.log_text()
        assert uid_of(session_for(daemon, idp, "ann")) == second.pw_uid


def test_a_session_waiting_for_its_worker_through_a_sighup_starts_as_the_reloaded_map_says(
        tmp_path, accounts, image):
    # Not yet among the sessions the reload looks at, it started as the account its user
    # had before: an unmapped user got a session, a moved one ran as the old account.
    (first, second), _ = accounts
    user_map = tmp_path / "users.map"
    user_map.write_text("ann %s\nben %s\n" % (first.pw_name, second.pw_name))
    daemon, idp = peruser_daemon(tmp_path, image, user_map)          # no spare worker
    with daemon:
        session_for(daemon, idp, "ann")                               # the signing keys are loaded
        with stopped(spawner_of(daemon)):                             # no worker comes meanwhile
            moved = waiting_initialize(daemon, headers=bearer(idp, "ann"))
            unmapped = waiting_initialize(daemon, headers=bearer(idp, "ben"))
            user_map.write_text("ann %s\n" % second.pw_name)
            daemon.proc.send_signal(signal.SIGHUP)
            said = "SIGHUP: MCP_USER_MAP %s reloaded: 1 user(s) mapped" % user_map
            assert wait_until(lambda: said in daemon.log_text()), daemon.log_text()
            assert not moved.head_read.is_set() and not unmapped.head_read.is_set()
        assert unmapped.wait_head(timeout=20) == 403 and "mcp-session-id" not in unmapped.headers
        assert unmapped.json()["error"]["message"] == "Forbidden: this user is not mapped to a local account"
        assert ("user 'ben' has no local account mapping: refused as its new session was to start "
                "(its account mapping changed while it waited for a worker)") in daemon.log_text()
        assert moved.wait_head(timeout=20) == 200
        client = with_token(Client(daemon.port), idp, "ann")
        client.session = moved.headers["mcp-session-id"]
        text, failed = run(client, "import os; os.getuid()")
        assert not failed and text.strip().splitlines()[-1] == str(second.pw_uid)


def test_one_accounts_code_holding_the_image_lock_fails_the_others_opens_and_commits_naming_it(
        tmp_path, accounts, image):
    # Any account that may read the image may flock .gsmcpd/lock: ann's code holding it
    # left every new session of every user waiting in initialize, for ever.
    (first, second), _ = accounts
    user_map = tmp_path / "users.map"
    user_map.write_text("ann %s\nben %s\n" % (first.pw_name, second.pw_name))
    daemon, idp = peruser_daemon(tmp_path, image, user_map, GS_MCP_IMAGE_LOCK_WAIT="0.5")
    with daemon:
        ann, ben = session_for(daemon, idp, "ann"), session_for(daemon, idp, "ben")
        text, failed = run(ann, "import fcntl, os\nheld = open(%r)\nfcntl.flock(held, fcntl.LOCK_EX)\nos.getpid()"
                           % str(image / ".gsmcpd" / "lock"))
        assert not failed, text
        holder = "held by pid %s (account %s)" % (text.strip().splitlines()[-1], first.pw_name)
        resp = Client(daemon.port).post(INIT, headers={"Authorization": "Bearer " + idp.mint(sub="ben")})
        message = resp.json()["error"]["message"]
        assert "the image lock %s was not free after 0.5s (GS_MCP_IMAGE_LOCK_WAIT): %s" % (
            image / ".gsmcpd" / "lock", holder) in message, message
        refused = ben.tool("set_class_comment", className="shop.models.Product", comment="Waits no more.")
        assert refused["structuredContent"]["error"]["kind"] == "other", refused
        said = refused["content"][0]["text"]
        assert holder in said and "nothing was read or written" in said and "Make room" not in said, said
        text, failed = run(ann, "held.close()")
        assert not failed, text
        assert not session_for(daemon, idp, "ben").tool("status").get("isError")
        assert not ben.tool("commit").get("isError")


def test_a_tls_key_every_account_may_read_is_warned_of_by_serve_and_check(tmp_path, accounts, image):
    # Each mapped user's code runs as its account: a 0644 key was theirs to read, unsaid.
    from gsmcpd.auth.tls import write_self_signed

    keys = Path(tempfile.mkdtemp(prefix="gsmcpd-keys-", dir="/tmp"))
    try:
        os.chmod(keys, 0o755)
        cert, key = write_self_signed(keys)
        key.chmod(0o644)
        user_map = tmp_path / "users.map"
        user_map.write_text("ann %s\n" % accounts[0][0].pw_name)
        daemon, _ = peruser_daemon(tmp_path, image, user_map, GS_MCP_TLS_CERT=str(cert), GS_MCP_TLS_KEY=str(key))
        said = ("tls_key %s is readable by every account (mode 0644): any local account's code (each mapped "
                "user's, with MCP_USER_MAP) can read the server's private key; make it 0600" % key)
        checked = check_of(daemon)
        assert checked.returncode == 0 and "  warning      " + said in checked.stdout.splitlines(), checked.stdout
        with daemon:
            assert wait_until(lambda: " WARNING " + said in daemon.log_text())
        key.chmod(0o600)
        with daemon:                                   # the same log: the first start's line alone
            assert wait_until(lambda: daemon.log_text().count("listening on") == 2)
            assert daemon.log_text().count(said) == 1
    finally:
        shutil.rmtree(keys, ignore_errors=True)


@pytest.fixture
def image_with_no_state(accounts):
    """A shared image as `image` is, but with no state directory: its first session makes it."""
    _, group = accounts
    top = Path(tempfile.mkdtemp(prefix="gsmcpd-peruser-", dir="/tmp"))   # tmp_path is 0700
    try:
        image = default.ensure_default_image(top)
        os.chmod(top, 0o755)
        for path in [image, *image.rglob("*")]:
            os.chown(path, 0, grp.getgrnam(group).gr_gid)
            os.chmod(path, 0o2775 if path.is_dir() else 0o664)
        yield image
    finally:
        shutil.rmtree(top, ignore_errors=True)


def sticky_said(state, owner):
    return (f"the image's state directory {state} is sticky (mode 3775, owner {owner}): there only a file's "
            "owner may replace or remove it, and every account's commit replaces and removes the commit "
            "intent there, so a commit another account left pending would fail every other's; remove the "
            f"bit: chmod -t {state} (as {owner}{'' if owner == 'root' else ' or root'})")


def test_a_sticky_state_directory_is_refused_by_serve_and_check_naming_the_fix(tmp_path, accounts, image_with_no_state):
    # serve took it: a commit one account left pending there then failed every other
    # account's ("Operation not permitted: 'commit.intent'") until its own committed again.
    state = image_with_no_state / ".gsmcpd"
    state.mkdir()
    os.chmod(state, 0o3775)
    user_map = tmp_path / "users.map"
    user_map.write_text("ann %s\n" % accounts[0][0].pw_name)
    daemon, _ = peruser_daemon(tmp_path, image_with_no_state, user_map)
    said = "cannot be served: " + sticky_said(state, "root")
    assert daemon.refusal() == 2
    assert f"image {image_with_no_state} {said}" in daemon.log_text() and "Traceback" not in daemon.log_text()
    checked = check_of(daemon)
    assert checked.returncode == 2 and checked.stdout.splitlines()[-1] == f"PROBLEM: image: {said}", checked.stdout


def test_a_state_directory_one_account_makes_sticky_refuses_the_others_opens_and_commits_naming_the_fix(
        tmp_path, accounts, image_with_no_state):
    # ann's first session made .gsmcpd (hers), her code made it sticky: ben's commits then
    # failed on every commit of ann's left pending, "Operation not permitted: 'commit.intent'".
    (first, second), _ = accounts
    image, state = image_with_no_state, image_with_no_state / ".gsmcpd"
    user_map = tmp_path / "users.map"
    user_map.write_text("ann %s\nben %s\n" % (first.pw_name, second.pw_name))
    daemon, idp = peruser_daemon(tmp_path, image, user_map)
    with daemon:
        ann, ben = session_for(daemon, idp, "ann"), session_for(daemon, idp, "ben")
        text, failed = run(ann, "import os; os.chmod(%r, 0o3775)" % str(state))
        assert not failed, text
        said = sticky_said(state, first.pw_name)
        resp = Client(daemon.port).post(INIT, headers=bearer(idp, "ben"))
        message = resp.json()["error"]["message"]
        assert "StickyStateDirectory: " + said in message and "Traceback" not in daemon.log_text(), message
        refused = ben.tool("set_class_comment", className="shop.models.Product", comment="Not here.")
        assert refused["structuredContent"]["error"]["kind"] == "refused", refused
        assert refused["content"][0]["text"].startswith("commit refused: " + said), refused
        assert "Not here." not in (image / "shop" / "models.py").read_text()
        refused = ben.tool("refresh")
        assert refused["content"][0]["text"] == ("refresh failed: " + said + "; the session's view, and its "
                                                 "uncommitted changes, are as they were"), refused
        # The directory's owner may replace and remove any file in it: ann is not refused.
        assert not ann.tool("add_dictionary", dictionaryName="shop.anns").get("isError")
        text, failed = run(ann, "os.chmod(%r, 0o2775)" % str(state))   # the fix
        assert not failed, text
        assert not ben.tool("commit").get("isError")
        assert not session_for(daemon, idp, "ben").tool("status").get("isError")
    assert "Not here." in (image / "shop" / "models.py").read_text() and (image / "shop" / "anns.py").exists()


@contextlib.contextmanager
def shared_image_daemon(tmp_path, accounts_in_their_own_groups, mode):
    """A per-user daemon (not started) on an empty image owned by the two accounts' shared
    group with `mode`, users ann and ben mapped to them: (image, daemon, idp)."""
    (first, second), group = accounts_in_their_own_groups
    top = Path(tempfile.mkdtemp(prefix="gsmcpd-peruser-", dir="/tmp"))   # tmp_path is 0700
    try:
        os.chmod(top, 0o755)
        image = top / "image"
        image.mkdir()
        os.chown(image, 0, group)
        os.chmod(image, mode)
        user_map = tmp_path / "users.map"
        user_map.write_text("ann %s\nben %s\n" % (first.pw_name, second.pw_name))
        daemon, idp = peruser_daemon(tmp_path, image, user_map)
        yield image, daemon, idp
    finally:
        shutil.rmtree(top, ignore_errors=True)


@pytest.mark.parametrize("mode", [0o775, 0o2775])
def test_a_shared_image_writable_by_its_group_but_not_setgid_is_warned_of_by_serve_and_check(
        tmp_path, accounts_in_their_own_groups, mode):
    # An image made "group-writable by the users' accounts" without the setgid bit was
    # taken silently: the first commit's state directory took its account's own group,
    # and every other account's commit then failed (Permission denied: '.commit.intent.tmp-N').
    group = accounts_in_their_own_groups[1]
    with shared_image_daemon(tmp_path, accounts_in_their_own_groups, mode) as (image, daemon, idp):
        warning = (f"image {image} is writable by its group {grp.getgrgid(group).gr_name} but not setgid "
                   f"(mode {mode:04o}): what a commit creates there")
        checked = check_of(daemon)
        assert checked.returncode == 0, checked.stdout
        with daemon:
            assert session_for(daemon, idp, "ann").tool("status")["content"][0]["text"]
            logged = daemon.log_text()
        if mode & stat.S_ISGID:
            assert "setgid" not in checked.stdout and "setgid" not in logged
        else:
            assert f"  warning      {warning}" in checked.stdout, checked.stdout
            assert f" WARNING {warning}" in logged, logged
            assert f"chmod g+s {image}" in checked.stdout


def test_a_commit_the_images_state_directory_refuses_names_the_file_whole(tmp_path, accounts_in_their_own_groups):
    # In an image its group may write but not setgid, the first commit's state directory
    # takes its account's own group; the other's commit then failed naming only
    # '.commit.intent.tmp-N', a name relative to a descriptor: not where.
    with shared_image_daemon(tmp_path, accounts_in_their_own_groups, 0o775) as (image, daemon, idp):
        with daemon:
            made = session_for(daemon, idp, "ann").tool("add_dictionary", dictionaryName="anns")
            assert not made.get("isError"), made
            refused = session_for(daemon, idp, "ben").tool("add_dictionary", dictionaryName="bens")
        said = refused["content"][0]["text"]
        assert refused.get("isError") and "Permission denied" in said, refused
        assert "Permission denied: '.gsmcpd/.commit.intent.tmp-" in said, said
        assert not (image / "bens.py").exists()


def test_under_the_units_capabilities_a_commit_left_in_the_shared_image_is_tidied_at_start(
        tmp_path, accounts_in_their_own_groups):
    # The router, root without CAP_DAC_OVERRIDE under the drop-in, may not write the state
    # directory a user's commit made: what a killed commit left there stayed until the
    # next commit (the log said so at start). Its owner's account tidies it, in a child.
    (first, second), group = accounts_in_their_own_groups
    top = Path(tempfile.mkdtemp(prefix="gsmcpd-peruser-", dir="/tmp"))   # tmp_path is 0700
    try:
        os.chmod(top, 0o755)
        image = default.ensure_default_image(top)
        for path in [image, *image.rglob("*")]:
            os.chown(path, 0, group)
            os.chmod(path, 0o2775 if path.is_dir() else 0o664)
        user_map = tmp_path / "users.map"
        user_map.write_text("ann %s\nben %s\n" % (first.pw_name, second.pw_name))
        daemon, idp = peruser_daemon(tmp_path, image, user_map, preexec=as_the_unit_runs_it(unit_capabilities()))
        with daemon:
            made = session_for(daemon, idp, "ann").tool("add_dictionary", dictionaryName="anns")
            assert not made.get("isError"), made
        assert (image / ".gsmcpd").stat().st_uid == first.pw_uid
        left = image / ".gsmcpd" / ".commit.intent.tmp-4242"   # a commit of ann's killed before its point
        left.write_text("{")
        os.chown(left, first.pw_uid, group)
        with daemon:
            assert not left.exists()
            assert "cannot finish or tidy" not in daemon.log_text()
            made = session_for(daemon, idp, "ben").tool("add_dictionary", dictionaryName="bens")
            assert not made.get("isError"), made
    finally:
        shutil.rmtree(top, ignore_errors=True)
