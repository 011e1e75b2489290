"""Workers' private temporary directories: naming, the sweep of a crashed daemon's,
and removal that follows no link and walks another account's tree only as it."""

import fcntl
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from gsmcpd.worker import tmpdirs

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="makes files of another account")


@pytest.fixture
def reachable():
    """A directory of root's another account can reach (0711, as the daemon's) but not
    write to: the account's child empties its directory there, root removes it."""
    path = Path(tempfile.mkdtemp(prefix="gsmcpd-tmpdirs-", dir="/tmp"))
    os.chmod(path, 0o711)
    yield path
    shutil.rmtree(path)


def crashed_daemon_dir(parent, name="crashed"):
    """What a daemon killed outright leaves: its directory, a lock nobody holds, work."""
    path = parent / (tmpdirs.PREFIX + name)
    (path / "w.1" / "pymp-x").mkdir(parents=True)
    (path / tmpdirs.LOCK).touch()
    (path / "w.1" / "left.tmp").write_text("x")
    return path


def test_a_start_removes_what_a_crashed_daemon_left_and_nothing_else(tmp_path):
    crashed = crashed_daemon_dir(tmp_path)
    live = crashed_daemon_dir(tmp_path, "live")
    held = os.open(live / tmpdirs.LOCK, os.O_RDWR)
    fcntl.flock(held, fcntl.LOCK_EX)              # a daemon running now
    being_made = tmp_path / (tmpdirs.PREFIX + "new")
    being_made.mkdir()                            # no lock yet: another daemon's, just made
    (tmp_path / (tmpdirs.PREFIX + "link")).symlink_to(crashed_daemon_dir(tmp_path / "elsewhere"))
    (tmp_path / "pymp-not-ours").mkdir()
    try:
        assert tmpdirs.sweep_earlier(str(tmp_path)) == [str(crashed)]
    finally:
        os.close(held)
    assert sorted(os.listdir(tmp_path)) == sorted([
        "elsewhere", tmpdirs.PREFIX + "link", tmpdirs.PREFIX + "live", tmpdirs.PREFIX + "new", "pymp-not-ours"])
    assert (tmp_path / "elsewhere" / (tmpdirs.PREFIX + "crashed") / "w.1" / "left.tmp").exists()


def test_the_daemons_directory_is_locked_while_it_runs_and_gone_at_its_close(tmp_path):
    made = tmpdirs.DaemonTmp(str(tmp_path))
    try:
        assert os.path.dirname(made.path) == str(tmp_path)
        assert os.stat(made.path).st_mode & 0o7777 == 0o700
        assert tmpdirs.sweep_earlier(str(tmp_path)) == []      # ours: locked
        worker = tmpdirs.worker_dir(made.path)
        assert os.path.dirname(worker) == made.path and os.path.basename(worker).startswith("w.")
        assert worker != tmpdirs.worker_dir(made.path)
        tmpdirs.make(worker)
        assert os.stat(worker).st_mode & 0o777 == 0o700
        made.share()
        assert os.stat(made.path).st_mode & 0o7777 == 0o1733
    finally:
        made.close()
    assert os.listdir(tmp_path) == []


def test_a_sweep_while_another_daemon_makes_its_lock_leaves_that_daemons_directory(tmp_path, monkeypatch):
    # Two daemons starting at once in one TMPDIR: the lock file was made, then locked, and
    # a sweep between the two took it for a crashed daemon's and removed the directory.
    real_flock = fcntl.flock
    sweeps = []

    def flock_after_a_sweep(fd, operation):
        if not sweeps:
            sweeps.append(None)
            sweeps.append(tmpdirs.sweep_earlier(str(tmp_path)))
        return real_flock(fd, operation)

    monkeypatch.setattr(tmpdirs.fcntl, "flock", flock_after_a_sweep)
    made = tmpdirs.DaemonTmp(str(tmp_path))
    monkeypatch.undo()
    try:
        assert sweeps == [None, []]
        assert os.path.isdir(made.path) and os.listdir(made.path) == [tmpdirs.LOCK]
        assert tmpdirs.sweep_earlier(str(tmp_path)) == []      # locked
    finally:
        made.close()


KILLED = 9


def start_killed_at_step(parent, step):
    """In a child: a daemon's start of its directory (DaemonTmp, then what serve does
    next), killed (os._exit) right after its `step`th change to the file system or lock;
    whether it got through every step instead."""
    pid = os.fork()
    if pid == 0:
        done = [0]

        def counted(real):
            def step_then_maybe_die(*args, **kwargs):
                result = real(*args, **kwargs)
                done[0] += 1
                if done[0] == step:
                    os._exit(KILLED)
                return result
            return step_then_maybe_die

        try:
            for module, name in ((tempfile, "mkdtemp"), (os, "open"), (fcntl, "flock"), (os, "rename"),
                                 (os, "chmod")):
                setattr(module, name, counted(getattr(module, name)))
            made = tmpdirs.DaemonTmp(str(parent))
            made.hold_multiprocessing()
            made.share()
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) in (0, KILLED)
    return os.waitstatus_to_exitcode(status) == 0


def test_a_daemon_killed_at_any_step_of_making_its_directory_leaves_what_a_later_start_removes(tmp_path):
    # Killed between its mkdtemp and its lock's rename, it left a directory no sweep took
    # (no lock: "another daemon's being made") for good.
    step, finished = 0, False
    while not finished:
        step += 1
        finished = start_killed_at_step(tmp_path, step)
        left = os.listdir(tmp_path)
        assert len(left) == 1 and left[0].startswith(tmpdirs.PREFIX), (step, left)
        young = tmpdirs.sweep_earlier(str(tmp_path))
        if young:      # its lock was in place: removed at once
            assert young == [str(tmp_path / left[0])]
        else:          # a daemon's being made, as far as a sweep can tell, until it is old
            assert set(os.listdir(tmp_path / left[0])) <= {tmpdirs.LOCK_MAKING}, step
            old = time.time() - tmpdirs.MAKING_GRACE - 1
            os.utime(tmp_path / left[0], (old, old))
            assert tmpdirs.sweep_earlier(str(tmp_path)) == [str(tmp_path / left[0])], step
        assert os.listdir(tmp_path) == [], step
    assert step > 5


def test_a_daemons_directory_without_its_lock_is_left_while_young_or_holding_more(tmp_path):
    old = time.time() - tmpdirs.MAKING_GRACE - 1
    being_made = tmp_path / (tmpdirs.PREFIX + "making")
    being_made.mkdir()
    (being_made / tmpdirs.LOCK_MAKING).touch()             # made a moment ago
    stuck = tmp_path / (tmpdirs.PREFIX + "stuck")
    stuck.mkdir()
    held = os.open(stuck / tmpdirs.LOCK_MAKING, os.O_RDWR | os.O_CREAT)
    fcntl.flock(held, fcntl.LOCK_EX)                       # its maker lives, stopped before the rename
    other = tmp_path / (tmpdirs.PREFIX + "other")
    (other / "w.1").mkdir(parents=True)                    # no daemon's making leaves this
    for path in (stuck, other):
        os.utime(path, (old, old))
    try:
        assert tmpdirs.sweep_earlier(str(tmp_path)) == []
    finally:
        os.close(held)
    assert sorted(os.listdir(tmp_path)) == sorted(path.name for path in (being_made, stuck, other))


@pytest.mark.parametrize("tmpdir_set", [False, True])
def test_the_routers_multiprocessing_directory_and_childrens_tmpdir_are_held_in_it_and_let_go_at_close(
        tmp_path, tmpdir_set):
    # A process of its own: this changes multiprocessing's state for the whole process.
    # The children's TMPDIR: the forkserver's rehearsal left its image in the system's.
    code = ("import multiprocessing.util, os, sys\n"
            "from gsmcpd.worker import tmpdirs\n"
            "made = tmpdirs.DaemonTmp(sys.argv[1]); made.hold_multiprocessing()\n"
            "inside = multiprocessing.util.get_temp_dir().startswith(made.path + os.sep)\n"
            "children = os.environ['TMPDIR'] == made.path\n"
            "made.close()\n"
            "after = multiprocessing.util.get_temp_dir()\n"
            "print(inside, children, os.path.isdir(after), after.startswith(made.path), os.environ.get('TMPDIR'))\n")
    env = {name: value for name, value in os.environ.items() if name != "TMPDIR"}
    asked = None
    if tmpdir_set:
        asked = env["TMPDIR"] = str(tmp_path)
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "True", "True", "False", str(asked)]


@pytest.fixture
def short_dir():
    """A directory with a path short enough to make one of any length under it."""
    path = tempfile.mkdtemp(prefix="gsmcpd-t-", dir="/tmp")
    yield path
    shutil.rmtree(path)


def dir_of_length(parent, length):
    path = os.path.join(parent, "d" * (length - len(parent) - 1))
    os.mkdir(path)
    return path


def test_a_parent_too_long_for_the_spawners_socket_is_refused_saying_how_long_it_may_be(short_dir):
    # The forkserver's bind failed later: "cannot serve on 127.0.0.1:PORT: AF_UNIX path
    # too long", naming neither TMPDIR nor the limit.
    fits = dir_of_length(short_dir, 55)
    tmpdirs.check_room_for_sockets(fits)
    too_long = dir_of_length(short_dir, 56)
    with pytest.raises(OSError) as raised:
        tmpdirs.check_room_for_sockets(too_long)
    assert (raised.value.filename, raised.value.strerror) == (
        too_long, "too long a path: the worker spawner's unix socket in it would take 108 bytes, over the "
                  "107 one may have; set TMPDIR to a directory of at most 55 bytes")


def test_a_parent_that_is_not_utf8_is_refused_naming_it_as_written(short_dir):
    # Serve started, and the spawner's warm-up failed at every start (its image's path, made
    # there, cannot go in a frame), logging a traceback; check said OK.
    latin1 = os.fsdecode(os.fsencode(short_dir) + b"/t\xff")
    os.mkdir(latin1)
    with pytest.raises(OSError) as raised:
        tmpdirs.check_temp_dir(latin1)
    assert (raised.value.filename, raised.value.strerror) == (
        f"{short_dir}/t\\xff", "not UTF-8, as a path the workers are told in UTF-8 frames must be; "
                               "set TMPDIR to a UTF-8 path")
    tmpdirs.check_temp_dir(short_dir)


def test_the_spawners_socket_fits_in_a_parent_of_the_length_it_is_told(short_dir):
    # The room check's arithmetic against multiprocessing's own names: a forkserver
    # started in the daemon's directory made in a parent of exactly that length.
    fits = dir_of_length(short_dir, 55)
    code = ("import multiprocessing.forkserver, sys\n"
            "from gsmcpd.worker import tmpdirs\n"
            "made = tmpdirs.DaemonTmp(sys.argv[1]); made.hold_multiprocessing()\n"
            "multiprocessing.forkserver.ensure_running()\n"
            "print('running')\n")
    out = subprocess.run([sys.executable, "-c", code, fits], capture_output=True, text=True, timeout=60)
    assert (out.returncode, out.stdout) == (0, "running\n"), out.stderr


def test_a_tmpdir_python_passed_over_is_warned_of_naming_where_files_go(tmp_path, monkeypatch):
    # Python takes the first directory it can write in, silently: the administrator's
    # TMPDIR (a typo, a read-only mount) was ignored and nothing said so.
    monkeypatch.setenv("TMPDIR", str(tmp_path / "missing"))
    assert tmpdirs.passed_over_warning("/tmp") == (
        f"TMPDIR {tmp_path / 'missing'} is not a directory {pwd.getpwuid(os.geteuid()).pw_name} can "
        f"write in, so temporary files go in /tmp")
    monkeypatch.setenv("TMPDIR", os.fsdecode(os.fsencode(tmp_path) + b"/missing-\xff"))
    assert tmpdirs.passed_over_warning("/tmp").startswith(f"TMPDIR {tmp_path}/missing-\\xff is not")  # as typed
    monkeypatch.setenv("TMPDIR", str(tmp_path) + "/")
    assert tmpdirs.passed_over_warning(str(tmp_path)) is None
    monkeypatch.delenv("TMPDIR")
    assert tmpdirs.passed_over_warning("/tmp") is None


def test_removal_follows_no_link_the_code_planted_and_undoes_its_chmods(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("x")
    worker = tmp_path / "w.1"
    (worker / "deep").mkdir(parents=True)
    (worker / "link").symlink_to(outside)
    (worker / "deep" / "link").symlink_to(outside / "keep")
    (worker / "deep" / "file").write_text("x")
    os.chmod(worker / "deep", 0)                 # the code's own: unreadable, unwritable
    assert tmpdirs.remove(str(worker)) is None
    assert not worker.exists()
    assert (outside / "keep").read_text() == "x"


@pytest.mark.filterwarnings("error::DeprecationWarning")
def test_removal_passes_shutil_no_argument_deprecated_on_the_python_running_it(tmp_path):
    # rmtree's onerror is deprecated from 3.12 on (3.12.0 warns of it at each call), onexc
    # its replacement; 3.11 has only onerror. The handler is called too, unless as root.
    worker = tmp_path / "w.1"
    (worker / "deep").mkdir(parents=True)
    (worker / "deep" / "file").write_text("x")
    os.chmod(worker / "deep", 0)
    assert tmpdirs.remove(str(worker)) is None
    assert not worker.exists()


def test_a_link_the_code_put_in_its_directorys_place_is_removed_not_followed(tmp_path):
    # It stayed, the spawner warning "Cannot call rmtree on a symbolic link", until the stop.
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("x")
    worker = tmp_path / "w.1"
    worker.symlink_to(outside)
    assert tmpdirs.remove(str(worker)) is None
    assert not os.path.lexists(worker)
    assert (outside / "keep").read_text() == "x"


@needs_root
@pytest.mark.parametrize("mode, owner, in_group, stopped_as", [
    (0o700, True, False, None), (0o600, True, True, "u"),      # the owner's bits apply, not the group's
    (0o750, False, True, None), (0o705, False, True, "g"),     # the group's, not other's
    (0o701, False, False, None), (0o770, False, False, "o"),
])
def test_a_directory_on_the_way_stops_an_account_by_the_mode_bits_of_its_class(reachable, mode, owner, in_group,
                                                                              stopped_as):
    nobody = pwd.getpwnam("nobody")
    inner = reachable / "inner"
    (inner / "tmp").mkdir(parents=True)
    os.chown(inner, nobody.pw_uid if owner else 0, 4242 if in_group else 0)
    os.chmod(inner, mode)
    found = tmpdirs._first_unsearchable(str(inner / "tmp"), nobody.pw_uid, {nobody.pw_gid, 4242})
    assert (found and (found[0], found[2])) == (stopped_as and (str(inner), stopped_as))


def test_a_tmpdir_every_account_may_reach_looks_no_account_up(reachable, monkeypatch):
    # Each account was looked up (getpwnam, getgrouplist) at start and at every SIGHUP, on
    # the router's loop, where names may come from LDAP; /tmp's case needs none.
    open_dir = reachable / "open"
    open_dir.mkdir(mode=0o755)
    os.chmod(open_dir, 0o755)
    looked_up, getpwnam = [], pwd.getpwnam
    monkeypatch.setattr(tmpdirs.pwd, "getpwnam", lambda name: looked_up.append(name) or getpwnam("nobody"))
    assert tmpdirs.unreachable_warnings(str(open_dir), ["nobody", "daemon"]) == []
    assert looked_up == []
    os.chmod(open_dir, 0o700)                         # now some account may be stopped: looked up
    assert len(tmpdirs.unreachable_warnings(str(open_dir), ["nobody"])) == 1
    assert looked_up == ["nobody"]


@needs_root
def test_a_private_directory_holding_a_link_on_the_way_stops_an_account_too(reachable):
    # Only the resolved path was walked: TMPDIR=<0700 dir>/link, the link to a searchable
    # directory, was taken as reachable, though a worker goes through the 0700 one.
    nobody = pwd.getpwnam("nobody")
    (reachable / "open").mkdir()
    private = reachable / "private"
    private.mkdir(mode=0o700)
    os.chmod(private, 0o700)
    (private / "link").symlink_to(reachable / "open")
    found = tmpdirs._first_unsearchable(str(private / "link"), nobody.pw_uid, {nobody.pw_gid})
    assert (found and (found[0], found[2])) == (str(private), "o")


@needs_root
def test_accounts_that_cannot_reach_the_tmpdir_are_warned_of_naming_the_directory_and_the_fix(reachable):
    private = reachable / "private"
    (private / "tmp").mkdir(parents=True)
    os.chmod(private, 0o700)
    parent = str(private / "tmp")
    assert tmpdirs.unreachable_warnings(parent, ["nobody", "root", "no-such-account-xyz", "nobody"]) == [
        f"TMPDIR {parent}: account nobody cannot reach it ({private}, mode 0700, owner root, group root, is not "
        f"searchable by it): its sessions will fail to open; make {private} searchable by it (chmod o+x) or set "
        f"TMPDIR to a directory it can reach, such as /tmp"]
    assert tmpdirs.unreachable_warnings(parent, None) == [      # identity: any account
        f"TMPDIR {parent}: {private}, mode 0700, owner root, group root, is not searchable by other accounts: "
        f"with MCP_USER_MAP=identity the sessions of accounts neither its owner nor in its group will fail to "
        f"open; make {private} searchable (chmod o+x) or set TMPDIR to a directory every account can reach, "
        f"such as /tmp"]
    os.chmod(private, 0o711)
    assert tmpdirs.unreachable_warnings(parent, ["nobody"]) == tmpdirs.unreachable_warnings(parent, None) == []


def test_removing_what_is_gone_already_is_no_problem(tmp_path):
    assert tmpdirs.remove(str(tmp_path / "w.never-made")) is None


@needs_root
def test_another_accounts_directory_is_removed_as_that_account(reachable):
    nobody = pwd.getpwnam("nobody")
    tmp_path = reachable
    theirs = tmp_path / "w.theirs"
    theirs.mkdir(mode=0o700)
    root_file = tmp_path / "roots"
    root_file.write_text("x")
    (theirs / "link").symlink_to(root_file)
    (theirs / "hard").mkdir()
    for path in (theirs, theirs / "hard"):
        os.chown(path, nobody.pw_uid, nobody.pw_gid)
    os.lchown(theirs / "link", nobody.pw_uid, nobody.pw_gid)
    assert tmpdirs.remove(str(theirs)) is None
    assert not theirs.exists() and root_file.read_text() == "x"


@needs_root
def test_another_accounts_link_in_its_directorys_place_is_removed_as_that_account(reachable):
    nobody = pwd.getpwnam("nobody")
    os.chmod(reachable, tmpdirs.SHARED_MODE)   # a per-user daemon's: each account removes its own entries
    outside = reachable / "outside"
    outside.mkdir()
    (outside / "keep").write_text("x")
    theirs = reachable / "w.theirs"
    theirs.symlink_to(outside)
    os.lchown(theirs, nobody.pw_uid, nobody.pw_gid)
    assert tmpdirs.remove(str(theirs)) is None
    assert not os.path.lexists(theirs) and (outside / "keep").read_text() == "x"


@needs_root
@pytest.mark.filterwarnings("error::DeprecationWarning")   # the account's child removes it: no warning there either
def test_what_the_account_cannot_remove_is_said_not_done_as_root(reachable):
    # Said by the path that failed, as rmtree hands it to onexc (3.12 on) or onerror (3.11).
    tmp_path = reachable
    nobody = pwd.getpwnam("nobody")
    theirs = tmp_path / "w.theirs"
    (theirs / "roots").mkdir(parents=True)
    (theirs / "roots" / "file").write_text("x")   # root's, in root's directory: not nobody's to remove
    os.chmod(theirs / "roots", 0o755)
    os.chown(theirs, nobody.pw_uid, nobody.pw_gid)
    problem = tmpdirs.remove(str(theirs))
    assert problem is not None and problem.startswith(f"{theirs / 'roots' / 'file'}: Permission denied; "), problem
    assert (theirs / "roots" / "file").exists()


def test_a_worker_using_its_directory_puts_every_temporary_file_there(tmp_path):
    # A process of its own: use() changes the environment and tempfile's module state.
    code = ("import multiprocessing.util, os, sys, tempfile\n"
            "multiprocessing.util.get_temp_dir()\n"      # cached before, as a spawner's copy is
            "import gsmcpd.worker.tmpdirs as t\n"
            "t.use(sys.argv[1]); t.make(sys.argv[1])\n"
            "print(os.environ['TMPDIR'], tempfile.gettempdir(), tempfile.mkstemp()[1],\n"
            "      multiprocessing.util.get_temp_dir())\n")
    worker = str(tmp_path / "w.1")
    out = subprocess.run([sys.executable, "-c", code, worker], capture_output=True, text=True,
                         check=True, env=dict(os.environ, TMPDIR=str(tmp_path))).stdout.split()
    assert out[:2] == [worker, worker]
    assert all(path.startswith(worker + "/") for path in out[2:]), out


@needs_root
@pytest.mark.parametrize("below", ["", "tmp"])
def test_a_link_on_the_way_leading_to_a_link_in_a_private_directory_stops_an_account_too(reachable, below):
    # TMPDIR=<open>/link[/tmp], link -> <0700 dir>/link2 -> <open>/real: the kernel reads
    # link2 as the account, which may not enter its directory; only the path as written and
    # resolved were walked, neither of which goes through it.
    nobody = pwd.getpwnam("nobody")
    (reachable / "real" / "tmp").mkdir(parents=True)
    private = reachable / "private"
    private.mkdir(mode=0o700)
    os.chmod(private, 0o700)
    (private / "link2").symlink_to(reachable / "real")
    (reachable / "link").symlink_to(private / "link2")
    tmpdir = str(reachable / "link" / below) if below else str(reachable / "link")
    found = tmpdirs._first_unsearchable(tmpdir, nobody.pw_uid, {nobody.pw_gid})
    assert (found and (found[0], found[2])) == (str(private), "o")
    [warning] = tmpdirs.unreachable_warnings(tmpdir, ["nobody"])
    assert warning.startswith(f"TMPDIR {tmpdir}: account nobody cannot reach it ({private}, mode 0700"), warning
    os.chmod(private, 0o711)
    assert tmpdirs.unreachable_warnings(tmpdir, ["nobody"]) == []


def test_the_way_through_links_ends_at_a_loop(tmp_path):
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    assert str(tmp_path) in tmpdirs.way_to(str(tmp_path / "a" / "c"))


def test_the_way_up_after_a_link_goes_up_from_where_it_led(tmp_path):
    assert tmpdirs.way_to("/") == ["/"]
    (tmp_path / "x" / "y").mkdir(parents=True)
    (tmp_path / "link").symlink_to("x/y")
    assert tmpdirs.way_to(str(tmp_path / "link" / ".." / "t"))[-3:] == [
        str(tmp_path / "x"), str(tmp_path / "x" / "y"), str(tmp_path / "x" / "t")]


@needs_root
@pytest.mark.parametrize("way", ["link", "dotdot"])
def test_a_tmpdir_going_up_out_of_a_private_directory_stops_an_account(reachable, way):
    # TMPDIR=<open>/link/tmp, link -> real/private/.. (relative), or <open>/real-link/../tmp,
    # real-link -> <open>/real/private (tempfile folds a `..` of TMPDIR itself; the python's
    # path may hold one): the kernel looks `..` up in private (0700), as the account; the
    # target was joined to the path as written, private never looked at, or the path cut
    # short as written (<open>/tmp, not there), whose stat failing dropped the warning.
    nobody = pwd.getpwnam("nobody")
    private = reachable / "real" / "private"
    private.mkdir(parents=True, mode=0o700)
    os.chmod(private, 0o700)
    (reachable / "real" / "tmp").mkdir()
    if way == "link":
        (reachable / "link").symlink_to(os.path.join("real", "private", ".."))
        tmpdir = str(reachable / "link" / "tmp")
    else:
        (reachable / "real-link").symlink_to(private)
        tmpdir = str(reachable / "real-link" / ".." / "tmp")
    [warning] = tmpdirs.unreachable_warnings(tmpdir, ["nobody"])
    assert warning.startswith(f"TMPDIR {tmpdir}: account nobody cannot reach it ({private}, mode 0700"), warning
    os.chmod(private, 0o711)
    assert tmpdirs.unreachable_warnings(tmpdir, ["nobody"]) == []
