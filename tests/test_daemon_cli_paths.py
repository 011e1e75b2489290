"""`python -m gsmcpd` and the paths it is given: the state directory, the log file and
TMPDIR, as check names them and start and serve refuse or use them."""

import os
import pwd
import shutil
import tempfile
from pathlib import Path

import pytest

from helpers import Daemon, free_port, local_account, local_group
from test_daemon_cli import _no_daemon_outlives_its_test, gsmcpd  # noqa: F401 (a fixture)


def test_check_and_serve_agree_on_a_log_file_that_cannot_be_opened(tmp_path):
    env = {"GS_MCP_LOG_FILE": str(tmp_path), "GS_MCP_STATE_DIR": str(tmp_path / "state")}
    port = str(free_port())
    served = gsmcpd("serve", "--port", port, env=env)
    assert served.returncode == 2 and f"cannot open the log file {tmp_path}" in served.stderr
    checked = gsmcpd("check", "--port", port, env=env)
    assert checked.returncode == 2
    assert checked.stdout.splitlines()[-1] == f"PROBLEM: log file: log_file: {tmp_path} is a directory"


def test_start_and_check_name_why_a_log_file_under_proc_cannot_be_used(tmp_path):
    # /proc/self/status opens for writing (to root) and then refuses: start said only
    # "gsmcpd exited during startup; see /proc/self/status", and check said OK.
    env = {"GS_MCP_LOG_FILE": "/proc/self/status", "GS_MCP_STATE_DIR": str(tmp_path)}
    port = str(free_port())
    started = gsmcpd("start", "--port", port, env=env)
    assert started.returncode == 2
    assert started.stdout.startswith("gsmcpd failed to start: cannot open the log file /proc/self/status: "), \
        started.stdout
    assert started.stdout.rstrip().endswith("(log: /proc/self/status)")
    checked = gsmcpd("check", "--port", port, env=env)
    assert checked.returncode == 2
    assert checked.stdout.splitlines()[-1].startswith(
        "PROBLEM: log file: log_file: cannot open /proc/self/status for appending: ")
    fifo = tmp_path / "fifo.log"   # serve would wait for a reader; check said "No such device"
    os.mkfifo(fifo)
    checked = gsmcpd("check", "--port", port, env={**env, "GS_MCP_LOG_FILE": str(fifo)})
    assert checked.returncode == 2
    assert checked.stdout.splitlines()[-1] == (f"PROBLEM: log file: log_file: {fifo} is a FIFO with no reader: "
                                               "serve would wait for one to open it")


def test_start_and_check_name_a_log_file_that_opens_but_refuses_every_write(tmp_path):
    # /dev/full opens and seeks: start said "gsmcpd listening", check said OK, and the
    # daemon served on with every log line lost.
    env = {"GS_MCP_LOG_FILE": "/dev/full", "GS_MCP_STATE_DIR": str(tmp_path)}
    port = str(free_port())
    started = gsmcpd("start", "--port", port, env=env)
    assert (started.returncode, started.stdout) == (1, "gsmcpd failed to start: cannot write to the log "
                                                       "file /dev/full: No space left on device (log: /dev/full)\n")
    served = gsmcpd("serve", "--port", port, env=env)
    assert (served.returncode, served.stderr) == (1, "gsmcpd: cannot write to the log file /dev/full: "
                                                     "No space left on device\n")
    checked = gsmcpd("check", "--port", port, env=env)
    assert checked.returncode == 1
    assert checked.stdout.splitlines()[-1] == \
        "PROBLEM: log file: log_file: cannot write to /dev/full: No space left on device"


def test_a_file_serve_cannot_use_is_named_not_blamed_on_the_address(tmp_path):
    # A directory where the control socket goes: "cannot serve on 127.0.0.1:PORT: Is a directory".
    port = free_port()
    (tmp_path / f"gsmcpd-{port}.ctl" / "x").mkdir(parents=True)
    served = gsmcpd("serve", "--port", str(port), env={"GS_MCP_STATE_DIR": str(tmp_path)})
    assert served.returncode == 2
    assert f"cannot serve: {tmp_path / f'gsmcpd-{port}.ctl'}: " in served.stderr, served.stderr
    assert "cannot serve on" not in served.stderr


def _assert_tmpdir_refused(state, env, port, shown, why, cell):
    """start refuses TMPDIR (`shown` as its messages show it) saying `why`, and check names
    it, its line in the table saying `cell`."""
    started = gsmcpd("start", "--port", port, env=env)
    assert (started.returncode, started.stdout) == (
        2, f"gsmcpd failed to start: cannot make the workers' temporary directory in {shown}: {why} "
           f"(TMPDIR) (log: {state / f'gsmcpd-{port}.log'})\n")
    checked = gsmcpd("check", "--port", port, env=env)
    assert checked.returncode == 2
    assert checked.stdout.splitlines()[-1] == f"PROBLEM: temp dir: TMPDIR: {why}"
    assert f"temp dir       {shown}   <-- TMPDIR: {cell}" in checked.stdout


def test_a_tmpdir_too_long_for_the_spawners_socket_is_named_by_start_and_check(tmp_path):
    # start said "gsmcpd failed to start: cannot serve on 127.0.0.1:PORT: AF_UNIX path too
    # long", blaming the address; check said OK.
    short = Path(tempfile.mkdtemp(prefix="gsmcpd-t-", dir="/tmp"))
    try:
        too_long = short / ("d" * (56 - len(str(short)) - 1))
        too_long.mkdir()
        env = {"TMPDIR": str(too_long), "GS_MCP_STATE_DIR": str(tmp_path)}
        port = str(free_port())
        _assert_tmpdir_refused(tmp_path, env, port, str(too_long), (
            "too long a path: the worker spawner's unix socket in it would take 108 bytes, "
            "over the 107 one may have; set TMPDIR to a directory of at most 55 bytes"), "too long a path")
        fits = short / ("d" * (55 - len(str(short)) - 1))
        fits.mkdir()
        started = gsmcpd("start", "--port", port, env={**env, "TMPDIR": str(fits)})
        assert started.returncode == 0, started.stdout + started.stderr
        assert gsmcpd("stop", port, env=env).returncode == 0
    finally:
        shutil.rmtree(short)


def test_a_tmpdir_that_is_not_utf8_is_named_by_start_and_check(tmp_path):
    # start started, and the spawner's warm-up failed at each start (its image's path, made
    # in TMPDIR, cannot go in a UTF-8 frame), a traceback in the log; check said OK.
    latin1 = tmp_path / os.fsdecode(b"t\xff")
    latin1.mkdir()
    env = {"TMPDIR": str(latin1), "GS_MCP_STATE_DIR": str(tmp_path)}
    _assert_tmpdir_refused(tmp_path, env, str(free_port()), f"{tmp_path}/t\\xff", (
        "not UTF-8, as a path the workers are told in UTF-8 frames must be; set TMPDIR to a UTF-8 path"),
        "not UTF-8")


def test_a_tmpdir_that_is_no_directory_is_warned_of_by_check_and_in_the_log(tmp_path):
    # Python passed it over for /tmp in silence: the administrator never learnt that the
    # TMPDIR given (a typo, a file) was not used.
    not_a_dir = tmp_path / "tmpfile"
    not_a_dir.write_text("")
    env = {"TMPDIR": str(not_a_dir)}
    port = str(free_port())
    warning = f"TMPDIR {not_a_dir} is not a directory {pwd.getpwuid(os.geteuid()).pw_name} can write in, so " \
              "temporary files go in /tmp"   # Python's first fallback
    checked = gsmcpd("check", "--port", port, "--state-dir", str(tmp_path / "state"), env=env)
    assert checked.returncode == 0, checked.stdout
    assert f"  warning      {warning}\n" in checked.stdout
    with Daemon(tmp_path, env=env) as daemon:
        assert f"WARNING {warning}\n" in daemon.log_text()


def test_check_shows_a_path_through_dot_dot_or_a_link_with_the_file_it_names_now(tmp_path):
    # `state dir  /x/clone/../state` was all it said; the given path stays (a link is
    # followed again at each open), the resolved one is added when it differs.
    real = Path(os.path.realpath(tmp_path))
    (real / "clone").mkdir()
    (real / "state").mkdir(mode=0o700)
    (real / "linked").symlink_to(real / "state")
    for given in (real / "clone" / ".." / "state", real / "linked"):
        checked = gsmcpd("check", str(free_port()), "--state-dir", str(given))
        assert f"\nstate dir      {given} (resolved {real / 'state'})\n" in checked.stdout, checked.stdout
    plain = gsmcpd("check", str(free_port()), "--state-dir", str(real / "state"))
    assert f"\nstate dir      {real / 'state'}\n" in plain.stdout, plain.stdout


def test_check_and_start_name_a_link_loop_at_the_state_dir_or_log_file(tmp_path):
    # Path.exists() calls a loop missing: check said OK (a state dir to be made, a log file
    # to be created) and start said "Not a directory", or serve failed opening its log.
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    loop, port = tmp_path / "a", str(free_port())
    checked = gsmcpd("check", port, "--state-dir", str(loop))
    assert checked.returncode != 0
    assert checked.stdout.splitlines()[-1] == f"PROBLEM: state dir: {loop}: Too many levels of symbolic links"
    started = gsmcpd("start", port, "--state-dir", str(loop))
    assert started.returncode != 0
    assert started.stdout.strip() == f"cannot use the state directory {loop}: Too many levels of symbolic links"
    logged = gsmcpd("check", port, "--state-dir", str(tmp_path / "state"), env={"GS_MCP_LOG_FILE": str(loop)})
    assert logged.stdout.splitlines()[-1] == f"PROBLEM: log file: log_file: cannot open {loop} for appending: " \
        "Too many levels of symbolic links"


def test_a_file_where_the_state_or_log_directory_goes_is_called_not_a_directory(tmp_path):
    in_the_way = tmp_path / "in-the-way"
    in_the_way.write_text("")
    port = str(free_port())
    started = gsmcpd("start", "--port", port, "--state-dir", str(in_the_way))
    assert started.returncode == 2
    assert started.stdout.strip() == f"cannot use the state directory {in_the_way}: Not a directory"
    served = gsmcpd("serve", "--port", port, "--state-dir", str(in_the_way))
    assert served.returncode == 2
    assert (f"cannot write the pidfile {in_the_way}/gsmcpd-{port}.pid: its directory {in_the_way}: "
            "Not a directory") in served.stderr
    logged = gsmcpd("start", "--port", port, "--state-dir", str(tmp_path / "state"),
                    env={"GS_MCP_LOG_FILE": str(in_the_way / "g.log")})
    assert logged.returncode == 2
    assert f"cannot open the log file {in_the_way / 'g.log'}: its directory {in_the_way}: Not a directory" \
        in logged.stdout


def test_a_state_directory_other_accounts_may_write_in_is_refused_and_nothing_is_written_through_it(tmp_path):
    # Another account that may write there plants a link at the log's (or pidfile's) name:
    # the daemon appended its log to whatever file the link named, as its own account.
    state = tmp_path / "shared"
    state.mkdir()
    state.chmod(0o777)
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    port = str(free_port())
    (state / f"gsmcpd-{port}.log").symlink_to(victim)
    said = (f"{state}: other accounts may write in it (mode 0777), and so plant a link where gsmcpd "
            "writes its log or pidfile: make it private (chmod go-w)")
    started = gsmcpd("start", "--port", port, "--state-dir", str(state))
    assert started.returncode == 2 and started.stdout.strip() == f"cannot use the state directory {said}"
    served = gsmcpd("serve", "--port", port, "--state-dir", str(state))
    assert served.returncode == 2 and f"cannot write the pidfile {state}/gsmcpd-{port}.pid: " in served.stderr
    logged = gsmcpd("serve", "--port", port, "--state-dir", str(tmp_path / "own"),
                    env={"GS_MCP_LOG_FILE": str(state / f"gsmcpd-{port}.log")})
    assert logged.returncode == 2 and f"cannot open the log file {state}/gsmcpd-{port}.log: " in logged.stderr
    assert victim.read_text() == "precious\n"
    assert sorted(p.name for p in state.iterdir()) == [f"gsmcpd-{port}.log"]   # the link alone


def test_a_refused_log_or_pidfile_directory_is_named_not_the_file(tmp_path):
    # "cannot open the log file D/g.log: other accounts may write in it (mode 0777)" sent
    # the administrator to chmod a file that does not exist: the mode is its directory's.
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    (tmp_path / "own").mkdir(mode=0o700)
    why = (f"its directory {shared}: other accounts may write in it (mode 0777), and so plant a "
           "link where gsmcpd writes its log or pidfile: make it private (chmod go-w)")
    port = str(free_port())
    log_file = {"GS_MCP_LOG_FILE": str(shared / "g.log")}
    for command in ("serve", "start"):
        refused = gsmcpd(command, "--port", port, "--state-dir", str(tmp_path / "own"), env=log_file)
        assert refused.returncode == 2, refused.stdout + refused.stderr
        assert f"cannot open the log file {shared / 'g.log'}: {why}" in refused.stdout + refused.stderr
    served = gsmcpd("serve", "--port", port, "--state-dir", str(shared))
    assert served.returncode == 2 and f"cannot write the pidfile {shared}/gsmcpd-{port}.pid: {why}" \
        in served.stderr, served.stderr
    assert not list(shared.iterdir())


def test_check_reports_a_state_or_log_directory_other_accounts_may_write_in_as_start_refuses_it(tmp_path):
    # check said "OK: ready to serve" of a state or log directory that start and serve
    # then refused: the one run meant to find such a problem first did not.
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    said = (f"{shared}: other accounts may write in it (mode 1777), and so plant a link where gsmcpd "
            "writes its log or pidfile: make it private (chmod go-w)")
    port = str(free_port())
    checked = gsmcpd("check", "--port", port, "--state-dir", str(shared))
    assert checked.returncode == 2 and checked.stdout.splitlines()[-1] == f"PROBLEM: state dir: {said}"
    (tmp_path / "own").mkdir(mode=0o700)
    logged = gsmcpd("check", "--port", port, "--state-dir", str(tmp_path / "own"),
                    env={"GS_MCP_LOG_FILE": str(shared / "g.log")})
    assert logged.returncode == 2 and logged.stdout.splitlines()[-1] == f"PROBLEM: log file: log_file: {said}"
    assert not list(shared.iterdir())


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root, to give the directory to another account")
def test_check_as_root_takes_a_private_state_directory_of_another_account_as_the_service_accounts(tmp_path):
    # The README's `sudo ... gsmcpd check --state-dir /var/lib/gsmcpd` checks, as root, the
    # unit's state directory, private to its account (gsmcpd): not a problem of the
    # deployment, though a root serve would refuse it as another account's.
    state = tmp_path / "service"
    state.mkdir(mode=0o700)
    os.chown(state, 65534, 65534)
    checked = gsmcpd("check", "--port", str(free_port()), "--state-dir", str(state))
    assert checked.returncode == 0 and checked.stdout.splitlines()[-1].startswith("OK: "), checked.stdout
    with local_group() as group:   # its group may write, and not its owner's private one:
        os.chown(state, 65534, group.gr_gid)   # a problem whoever runs it
        state.chmod(0o770)
        checked = gsmcpd("check", "--port", str(free_port()), "--state-dir", str(state))
    assert checked.returncode == 2 and "other accounts may write in it (mode 0770)" in checked.stdout


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root, to make accounts")
def test_check_takes_a_state_directory_writable_by_its_owners_private_group_alone(tmp_path):
    # A umask-002 user's own directory (useradd --user-group) was refused as others'.
    with local_account() as owner:
        state = tmp_path / "upg"
        state.mkdir()
        os.chown(state, owner.pw_uid, owner.pw_gid)
        state.chmod(0o2775)
        checked = gsmcpd("check", "--port", str(free_port()), "--state-dir", str(state))
        assert checked.returncode == 0 and checked.stdout.splitlines()[-1].startswith("OK: "), checked.stdout
        with local_account(group=owner.pw_gid) as sharer:
            checked = gsmcpd("check", "--port", str(free_port()), "--state-dir", str(state))
    assert checked.returncode == 2, checked.stdout
    assert checked.stdout.splitlines()[-1] == (
        f"PROBLEM: state dir: {state}: other accounts may write in it (mode 2775), and so plant a link "
        "where gsmcpd writes its log or pidfile: make it private (chmod go-w); its group may write only "
        f"if it is its owner's private group, and group {owner.pw_name} has other accounts in it: "
        f"{sharer.pw_name}")
