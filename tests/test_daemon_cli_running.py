"""`python -m gsmcpd` meeting a running gsmcpd: start, stop, status and end, and check
of a deployment that serves."""

import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from gsmcpd.__main__ import _passthrough, build_parser
from helpers import REPO, Client, Daemon, free_port, pid_alive, wait_for_port, wait_until
from test_daemon_cli import STARTED, _no_daemon_outlives_its_test, _started_pids, gsmcpd  # noqa: F401 (a fixture)


@pytest.fixture(scope="module")
def serving(tmp_path_factory):
    """One daemon (its state directory from GS_MCP_STATE_DIR, as the unit's) for the tests
    that ask it things, each about sessions of its own."""
    with Daemon(tmp_path_factory.mktemp("serving"), env={"GS_MCP_SPARE_WORKERS": "1"}) as d:
        yield d


def test_check_of_a_running_deployment_finds_its_own_server_on_the_port_no_problem(serving):
    running = serving
    done = subprocess.run([sys.executable, "-m", "gsmcpd", "check", "--port", str(running.port)],
                          env=running.env, cwd=str(REPO), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "(served by this deployment's gsmcpd, pid %d)" % running.proc.pid in done.stdout
    assert done.stdout.splitlines()[-1].startswith("OK")


def test_after_a_kill_9_stop_and_start_say_the_pid_is_not_running_and_start_sweeps_its_files(tmp_path):
    # Both said the killed pid was "not a gsmcpd" on the port, as if another program had it.
    # A TMPDIR of its own, the sweep looking at nothing else's; short, as tmp_path is too long.
    temp = Path(tempfile.mkdtemp(prefix="gsmcpd-t-", dir="/tmp"))
    try:
        env = {"GS_MCP_STATE_DIR": str(tmp_path / "state"), "TMPDIR": str(temp)}
        port = str(free_port())
        started = gsmcpd("start", "--port", port, env=env)
        assert started.returncode == 0, started.stdout + started.stderr
        pid = int(STARTED.search(started.stdout).group(1))
        left = [path.name for path in temp.iterdir()]
        os.kill(pid, signal.SIGKILL)
        wait_until(lambda: not pid_alive(pid))
        stopped = gsmcpd("stop", port, env=env)
        assert stopped.returncode == 1
        assert f": pid {pid} is not running; removed it without signalling anything." in stopped.stdout
        pidfile = tmp_path / "state" / f"gsmcpd-{port}.pid"
        pidfile.write_text(f"{pid}\n")   # as the kill left it
        assert gsmcpd("start", "--port", port, env=env).returncode == 0
        assert gsmcpd("stop", port, env=env).returncode == 0
        log = (tmp_path / "state" / f"gsmcpd-{port}.log").read_text()
        assert f"removed stale pidfile {pidfile} (pid {pid} is not running)" in log
        assert f"removed the temporary files an earlier run left in {temp / left[0]}" in log
        assert list(temp.iterdir()) == []
    finally:
        shutil.rmtree(temp)


def test_status_without_a_server(tmp_path):
    result = gsmcpd("status", "8999", "--state-dir", str(tmp_path))
    assert result.returncode == 1
    assert "is a server running on port 8999?" in result.stderr
    as_json = gsmcpd("status", "8999", "--state-dir", str(tmp_path), "--json")
    assert as_json.returncode == 1
    assert json.loads(as_json.stdout)["port"] == 8999


# The server's own modules. status, stop and end run before a script's every step (and
# the suite's hundreds of times): importing these was most of what each one cost.
SERVER_ONLY = ("gsmcpd.auth", "gsmcpd.image.store", "gsmcpd.raised", "gsmcpd.readypipe", "gsmcpd.wire",
               "gsmcpd.worker")


def _server_modules_imported(*args, env):
    """The server's modules `python -m gsmcpd *args` imported (as -X importtime lists them)."""
    result = gsmcpd(*args, env={**env, "PYTHONPROFILEIMPORTTIME": "1"})
    imported = {line.rsplit("|", 1)[1].strip() for line in result.stderr.splitlines()
                if line.startswith("import time:")}
    assert "gsmcpd.config" in imported, result.stderr   # the listing was read
    return result, sorted(name for name in imported
                          if any(name == module or name.startswith(module + ".") for module in SERVER_ONLY))


def test_status_stop_and_end_import_none_of_the_servers_modules(serving, tmp_path):
    port = str(serving.port)
    status, imported = _server_modules_imported("status", port, env=serving.env)
    assert status.returncode == 0 and f"port {port}" in status.stdout, status.stdout
    assert imported == []
    ended, imported = _server_modules_imported("end", "0a1b2c3d", port, env=serving.env)
    assert ended.returncode == 1 and "0a1b2c3d" in ended.stderr
    assert imported == []
    # No server: status asks the daemon module which gsmcpd serves the port elsewhere.
    elsewhere = {"GS_MCP_STATE_DIR": str(tmp_path)}
    status, imported = _server_modules_imported("status", port, env=elsewhere)
    assert status.returncode == 1 and f"but pid {serving.proc.pid}, a gsmcpd" in status.stderr, status.stderr
    assert imported == []
    stopped, imported = _server_modules_imported("stop", port, env=elsewhere)
    assert stopped.returncode == 1 and f"pid {serving.proc.pid}, a gsmcpd" in stopped.stdout, stopped.stdout
    assert imported == []


def test_a_router_serving_plain_http_never_loads_ssl(serving):
    # Its connections catch the TLS layer's errors (auth.tls_errors) without its ssl: the
    # module was ~5 ms of every start. Its extension module in the router's memory says so.
    maps = Path(f"/proc/{serving.proc.pid}/maps").read_text()
    assert serving.running() and "/_ssl." not in maps


def test_stop_uses_gs_mcp_port_when_no_port_is_given(tmp_path):
    result = gsmcpd("stop", "--state-dir", str(tmp_path), env={"GS_MCP_PORT": "8777"})
    assert result.returncode == 1
    assert result.stdout.strip() == \
        f"no gsmcpd running on port 8777 (no pidfile at {tmp_path / 'gsmcpd-8777.pid'})"


def test_one_started_gsmcpd_as_start_stop_status_and_end_meet_it(tmp_path):
    # One `start` for what each of these asks of a server started so (each was a start of
    # its own), every question asked while it serves:
    # - `run-server.sh --trace 8000`: --trace's optional value took the port, and the start
    #   was refused (trace: expected 0, 1 or both, got '8000').
    # - started under run-server.sh's umask (022, not the unit's 0077): its state directory
    #   and files are private all the same.
    # - `stop-server.sh --port 8000`, written as run-server.sh's start takes it, was refused.
    # - asked about with another --state-dir (or conf file): not "no gsmcpd running", while
    #   one is, but which one and how to reach it.
    port, state, other = free_port(), tmp_path / "state", tmp_path / "other"
    old_umask = os.umask(0o022)
    try:
        started = gsmcpd("start", "--trace", str(port), "--state-dir", str(state))
    finally:
        os.umask(old_umask)
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        assert f"listening on http://127.0.0.1:{port}/mcp" in started.stdout
        log = (state / f"gsmcpd-{port}.log").read_text()
        assert "message trace: ON (inbound)" in log, log
        assert stat.S_IMODE(state.stat().st_mode) == 0o700
        assert stat.S_IMODE((state / ("gsmcpd-%d.log" % port)).stat().st_mode) == 0o600
        assert stat.S_IMODE((state / ("gsmcpd-%d.ctl" % port)).stat().st_mode) == 0o600

        status = gsmcpd("status", "--port", str(port), "--state-dir", str(state), "--json")
        assert status.returncode == 0 and json.loads(status.stdout)["port"] == port, status.stderr
        ended = gsmcpd("end", "0a1b2c3d", "--port", str(port), "--state-dir", str(state))
        assert ended.returncode == 1 and "0a1b2c3d" in ended.stdout + ended.stderr
        both = gsmcpd("stop", str(port + 1), "--port", str(port), "--state-dir", str(state))
        assert both.returncode == 2
        assert both.stderr.strip() == f"gsmcpd stop: error: two ports given: {port + 1} and --port {port}"

        pid = int((state / f"gsmcpd-{port}.pid").read_text())
        hint = (f"pid {pid}, a gsmcpd serving port {port} from the state directory {state}, "
                f"is running: stop it with ./stop-server.sh {port} --state-dir {state}")   # run in REPO
        stopped = gsmcpd("stop", str(port), "--state-dir", str(other))
        assert stopped.returncode == 1 and hint in stopped.stdout, stopped.stdout
        assert pid_alive(pid)
        listed = gsmcpd("status", str(port), "--state-dir", str(other))
        assert listed.returncode == 1 and f"pid {pid}, a gsmcpd serving port {port} from the " \
            f"state directory {state}, is running" in listed.stderr, listed.stderr
        again = gsmcpd("start", "--port", str(port), "--state-dir", str(other))
        assert again.returncode == 1 and hint in again.stdout, again.stdout

        stopped = gsmcpd("stop", "--port", str(port), "--state-dir", str(state))
        assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    finally:   # stopped whatever failed above (positional, as every version takes it)
        gsmcpd("stop", str(port), "--state-dir", str(state))
    meant = gsmcpd("check", "--trace", str(port), "--port", str(free_port()), "--state-dir", str(state))
    assert meant.stdout.splitlines()[-1] == f"PROBLEM: config: trace: expected 0, 1 or both, got '{port}'"


def test_stop_ends_a_serve_given_a_lone_port_that_does_not_answer(tmp_path):
    # Its command line named no --port, so only its control socket could confirm its
    # port: a serve that did not answer there (stopped, wedged) was left running.
    port, state = free_port(), tmp_path / "state"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GS_MCP_", "MCP_"))}
    serve = subprocess.Popen([sys.executable, "-m", "gsmcpd", "serve", str(port), "--state-dir", str(state)],
                             cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, proc=serve)
        serve.send_signal(signal.SIGSTOP)
        stopped = gsmcpd("stop", str(port), "--state-dir", str(state), "--timeout", "1")
        assert stopped.returncode == 0, stopped.stdout + stopped.stderr
        assert serve.wait(10) == -signal.SIGKILL
    finally:
        serve.kill()
        serve.wait()


def test_start_hands_its_flags_to_the_detached_serve(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = build_parser().parse_args([
        "start", "--host", "::1", "--state-dir", "rel/state", "--readonly", "--trace",
        "--toolsets", "search browsing", "--config", "site.conf"])
    assert _passthrough(args) == [
        "--host", "::1", "--config", str(tmp_path / "site.conf"), "--state-dir",
        str(tmp_path / "rel" / "state"), "--toolsets", "search browsing", "--trace", "1",
        "--readonly"]


def test_start_hands_a_path_under_home_on_as_it_read_it(tmp_path, monkeypatch):
    # `--state-dir=~/st` (no shell expands a ~ after '='): start made and named ~/st
    # under $HOME, and its serve ran in ./~/st, where the stop command it printed missed it.
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    args = build_parser().parse_args(["start", "--state-dir=~/st", "--image=~/img", "--config=~/a.conf"])
    home = tmp_path / "home"
    assert _passthrough(args) == ["--config", str(home / "a.conf"), "--image", str(home / "img"),
                                  "--state-dir", str(home / "st")]


def test_start_serves_from_the_state_dir_under_home_it_names(tmp_path):
    port, home = free_port(), tmp_path / "home"
    # Run from tmp_path: the serve of a start that misread it made ./~/st in its directory
    started = gsmcpd("start", str(port), "--state-dir=~/st", env={"HOME": str(home), "PYTHONPATH": str(REPO)},
                     cwd=tmp_path)
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        assert (home / "st" / f"gsmcpd-{port}.pid").exists()
    finally:
        stopped = gsmcpd("stop", str(port), "--state-dir", str(home / "st"))
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr


def test_start_hands_a_blank_config_on_as_unset(tmp_path, monkeypatch):
    # It was made the caller's directory (absolute), and the detached serve refused it
    # ("cannot read /dir: Is a directory") after start and check had read it as unset.
    monkeypatch.chdir(tmp_path)
    for blank in ("", " "):
        args = build_parser().parse_args(["start", "--config", blank, "--readonly"])
        assert _passthrough(args) == ["--readonly"]


def test_start_with_a_blank_config_serves_as_check_says(tmp_path):
    port, state = free_port(), tmp_path / "state"
    checked = gsmcpd("check", str(port), "--config", "", "--state-dir", str(state))
    assert checked.stdout.splitlines()[-1].startswith("OK: ready to serve"), checked.stdout
    started = gsmcpd("start", str(port), "--config", " ", "--state-dir", str(state))
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        assert f"listening on http://127.0.0.1:{port}/mcp" in started.stdout
    finally:
        gsmcpd("stop", str(port), "--state-dir", str(state))


def session_members(sid):
    """Live processes in session `sid`: all that a serve started as session leader started
    (the forkserver, the spawner and workers change process group, never session)."""
    members = []
    for entry in Path("/proc").iterdir():
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z" and int(fields[3]) == sid:
            members.append(int(entry.name))
    return members


def test_sigterm_as_soon_as_the_pidfile_is_written_ends_serve_cleanly(tmp_path):
    port, state = free_port(), tmp_path / "state"
    pidfile = state / f"gsmcpd-{port}.pid"
    base = {k: v for k, v in os.environ.items() if not k.startswith(("GS_MCP_", "MCP_"))}
    env = {**base, "GS_MCP_SPARE_WORKERS": "1"}
    for delay in (0, 0, 0.1, 0.3):   # at once, and a little later, as start-up goes on
        with open(tmp_path / "serve.log", "ab") as log:
            proc = subprocess.Popen([sys.executable, "-m", "gsmcpd", "serve", "--port", str(port),
                                     "--state-dir", str(state)], cwd=REPO, env=env, stdout=log,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        try:
            assert wait_until(lambda: pidfile.exists() or proc.poll() is not None, 30, 0.002)
            time.sleep(delay)
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(30)
            left = wait_until(lambda: not session_members(proc.pid), 10) or session_members(proc.pid)
            assert code == 0, (tmp_path / "serve.log").read_text()
            assert not pidfile.exists()
            assert left is True, f"left behind: {left}"
        finally:
            for pid in session_members(proc.pid):
                os.kill(pid, signal.SIGKILL)
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def test_end_ends_one_session_as_its_delete_would_and_says_why(serving):
    d = serving
    state = ["--state-dir", str(d.state)]
    busy, idle = Client(d.port), Client(d.port)
    busy.initialize()
    idle.initialize()
    pid = int(busy.tool("execute_code", code="import os\nos.getpid()")["structuredContent"]["result"])
    answered = {}
    call = threading.Thread(target=lambda: answered.setdefault("reply", busy.call(
        "tools/call", {"name": "execute_code", "arguments": {"code": "import time\ntime.sleep(30)"}})))
    call.start()
    assert wait_until(lambda: "execute_code" in gsmcpd("status", str(d.port), *state).stdout)
    ended = gsmcpd("end", busy.session[:8], str(d.port), *state)
    assert ended.returncode == 0, ended.stderr
    assert ended.stdout.startswith("ended session %s of " % busy.session[:8])
    assert "its call tools/call execute_code answered 'session ended'" in ended.stdout
    call.join(10)
    error = answered["reply"].json()["error"]
    assert error["message"] == "session ended: ended by the server's administrator (gsmcpd end)"
    assert wait_until(lambda: not pid_alive(pid))
    assert busy.call("ping").status == 404              # its client starts afresh
    assert idle.call("ping").status == 200              # nobody else is touched
    again = gsmcpd("end", busy.session, str(d.port), *state)
    assert again.returncode == 1 and again.stderr.strip() == \
        "gsmcpd end: server refused: no open session %s" % busy.session
    short = gsmcpd("end", "abc", str(d.port), *state)
    assert short.returncode == 1 and "first 8 or more hex digits" in short.stderr
    assert busy.session[:8] not in gsmcpd("status", str(d.port), *state).stdout
    quiet = gsmcpd("end", idle.session, str(d.port), *state)   # the whole id works too
    assert quiet.returncode == 0 and "its call" not in quiet.stdout   # nothing was running
    assert idle.call("ping").status == 404
    assert "ending it, as asked on the control socket" in d.log_text()


def test_end_given_its_port_where_the_session_goes_says_the_session_comes_first(serving):
    # `gsmcpd end 8000` asked the default port's control socket (none there: "is a server
    # running on port 8000?"), and `end PORT SESSION` said "the one argument without a flag
    # is the port": end takes two.
    d = serving
    client = Client(d.port)
    client.initialize()
    state = ["--state-dir", str(d.state)]
    alone = gsmcpd("end", str(d.port), *state)
    assert alone.returncode == 1
    assert alone.stderr.strip() == (
        f"gsmcpd end: expected a session id or its first 8 or more hex digits (as status shows "
        f"them), got '{d.port}': the session comes first, then the port: gsmcpd end SESSION {d.port}")
    swapped = gsmcpd("end", str(d.port), client.session[:8], *state)
    assert swapped.returncode == 2
    assert swapped.stderr.strip() == (
        f"gsmcpd end: error: argument PORT: expected an integer, got '{client.session[:8]}' "
        "(end takes the session, then the port: gsmcpd end SESSION PORT)")
    assert client.call("ping").status == 200   # neither ended anything
    assert gsmcpd("end", client.session[:8], str(d.port), *state).returncode == 0


def test_end_without_a_server(tmp_path):
    result = gsmcpd("end", "0a1b2c3d", "8999", "--state-dir", str(tmp_path))
    assert result.returncode == 1 and "is a server running on port 8999?" in result.stderr


def test_end_asked_in_another_state_directory_names_the_gsmcpd_serving_the_port(serving, tmp_path):
    # The unit's daemon takes its state directory from GS_MCP_STATE_DIR, as Daemon does:
    # an `end` run without it must say, as `status` does, that one serves the port.
    d = serving
    client = Client(d.port)
    client.initialize()
    hint = (f"but pid {d.proc.pid}, a gsmcpd serving port {d.port}, is running: give the "
            f"--state-dir or --config it was started with, or kill {d.proc.pid}")
    for command in (["status"], ["end", client.session[:8]]):
        result = gsmcpd(*command, str(d.port), "--state-dir", str(tmp_path / "elsewhere"))
        assert result.returncode == 1 and result.stderr.strip().endswith(hint), result.stderr
    assert client.call("ping").status == 200


def test_status_and_stop_of_a_server_whose_pidfile_and_socket_were_removed_say_only_to_kill_it(tmp_path):
    # Its state directory from GS_MCP_STATE_DIR, as the unit's: asked in that very directory,
    # the hint was also "give the --state-dir or --config it was started with", the one it was.
    with Daemon(tmp_path) as d:
        (d.state / f"gsmcpd-{d.port}.pid").unlink()
        (d.state / f"gsmcpd-{d.port}.ctl").unlink()
        hint = (f"pid {d.proc.pid}, a gsmcpd serving port {d.port}, is running without its pidfile "
                f"and control socket in {d.state} (removed?): stop it with kill {d.proc.pid}")
        for command in ("status", "stop"):
            result = gsmcpd(command, str(d.port), "--state-dir", str(d.state))
            said = result.stdout + result.stderr   # stop's on stdout, as stop-server.sh shows it
            assert result.returncode == 1 and said.strip().endswith(hint), said
            assert "--state-dir or --config" not in said, said
        assert d.running()


def test_start_makes_a_log_named_by_a_link_to_nothing_yet_0600_under_a_narrowing_umask(tmp_path):
    # The link's target was made 0400 (umask 0277): a reopen at SIGHUP could not write it.
    port, state, target = free_port(), tmp_path / "state", tmp_path / "logs" / "gsmcpd.log"
    target.parent.mkdir()
    link = tmp_path / "gsmcpd.log"
    link.symlink_to(target)
    old_umask = os.umask(0o277)
    try:
        started = gsmcpd("start", "--port", str(port), "--state-dir", str(state),
                         env={"GS_MCP_LOG_FILE": str(link)})
    finally:
        os.umask(old_umask)
    try:
        assert started.returncode == 0, started.stdout
        assert stat.S_IMODE(target.stat().st_mode) == 0o600 and "listening on" in target.read_text()
    finally:
        stopped = gsmcpd("stop", str(port), "--state-dir", str(state))
        assert stopped.returncode == 0, stopped.stdout + stopped.stderr


# The commands as an account that is not the state directory's owner: everything they
# use is imported first, then (as root) the account becomes nobody, whom neither the
# checkout nor the venv's python need admit once running.
AS_ANOTHER_ACCOUNT = """\
import os, sys
import jwt, cryptography
import gsmcpd.__main__, gsmcpd.daemon, gsmcpd.router.control, gsmcpd.router.main
import gsmcpd.worker.server, gsmcpd.wire.http, gsmcpd.image, gsmcpd.image.default
gsmcpd.config.load_config({"state_dir": "/"}, {})   # imports the toolsets it validates
if os.geteuid() == 0:
    import pwd
    nobody = pwd.getpwnam("nobody")
    os.setgroups([])
    os.setgid(nobody.pw_gid)
    os.setuid(nobody.pw_uid)
sys.exit(gsmcpd.__main__.main(sys.argv[1:]))
"""


def test_status_end_and_check_of_a_state_directory_another_account_owns_say_so(tmp_path):
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    state.chmod(0o000)   # root's own 0700 already shuts nobody out; this shuts out its owner too
    base = {k: v for k, v in os.environ.items() if not k.startswith(("GS_MCP_", "MCP_"))}
    try:
        def run(*args):
            return subprocess.run([sys.executable, "-c", AS_ANOTHER_ACCOUNT, *args], cwd="/",
                                  env={**base, "PYTHONPATH": str(REPO)}, capture_output=True,
                                  text=True, timeout=60)
        ctl = state / "gsmcpd-8999.ctl"
        where = ("8999", "--state-dir", str(state))
        for argv in (("status", *where), ("status", *where, "--json"), ("end", "0a1b2c3d", *where)):
            result = run(*argv)
            assert result.returncode == 1, result
            assert "Traceback" not in result.stderr, result.stderr
            said = json.loads(result.stdout)["error"] if "--json" in argv else result.stderr
            assert f"no permission to reach {ctl}" in said, said
        with socket.create_server(("127.0.0.1", 0)) as held:   # whose, it cannot tell
            port = held.getsockname()[1]
            checked = run("check", "--port", str(port), "--state-dir", str(state))
        assert checked.returncode == 2 and "Traceback" not in checked.stderr, checked.stderr
        lines = checked.stdout.splitlines()
        assert lines[-1] == f"PROBLEM: image: {state / 'image'}: Permission denied", checked.stdout
        assert f"already in use; cannot read the pidfile {state}/gsmcpd-{port}.pid: " \
            "Permission denied" in next(line for line in lines if line.startswith("port")), lines
    finally:
        state.chmod(0o700)


def test_status_and_end_by_an_account_the_control_socket_shuts_out_say_so_and_look_nowhere_else():
    # A state directory others may search (made 0755 before the first start) holds the
    # server's 0600 socket: the connect's EACCES was followed by "but pid N, a gsmcpd
    # serving port P, is running: give the --state-dir or --config it was started with,
    # or kill N", though that was its state directory, and the server not theirs to kill.
    top = Path(tempfile.mkdtemp(prefix="gsmcpd-shut-out-", dir="/tmp"))   # tmp_path is 0700
    base = {k: v for k, v in os.environ.items() if not k.startswith(("GS_MCP_", "MCP_"))}
    try:
        top.chmod(0o755)
        (top / "state").mkdir(mode=0o755)
        with Daemon(top) as daemon:
            ctl = top / "state" / f"gsmcpd-{daemon.port}.ctl"
            where = (str(daemon.port), "--state-dir", str(top / "state"))
            for argv in (("status", *where), ("status", *where, "--json"), ("end", "0a1b2c3d", *where)):
                result = subprocess.run([sys.executable, "-c", AS_ANOTHER_ACCOUNT, *argv], cwd="/",
                                        env={**base, "PYTHONPATH": str(REPO)}, capture_output=True,
                                        text=True, timeout=60)
                assert result.returncode == 1, result
                said = json.loads(result.stdout)["error"] if "--json" in argv else result.stderr
                assert f"no permission to talk to {ctl}: run this as the account the server on port " \
                    f"{daemon.port} runs as, or as root" in said, said
                assert "--state-dir or --config" not in said and "kill" not in said, said
    finally:
        shutil.rmtree(top, ignore_errors=True)


def gsmcpd_in_a_deleted_directory(tmp_path, *args, env=None):
    """`python -m gsmcpd ARGS` run in a directory removed just before it starts (as after
    `rm -rf` of the directory a shell sits in)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("GS_MCP_", "MCP_"))}
    gone = tmp_path / f"gone-{args[0]}"
    gone.mkdir()

    def leave_it_deleted():
        os.chdir(gone)
        os.rmdir(gone)
    result = subprocess.run([sys.executable, "-m", "gsmcpd", *args], timeout=60,
                            env={**base, **(env or {}), "PYTHONPATH": str(REPO)},
                            preexec_fn=leave_it_deleted, capture_output=True, text=True)
    started = STARTED.search(result.stdout) if args[:1] == ("start",) else None
    if started:
        _started_pids.append(int(started.group(1)))
    return result


def test_start_status_and_stop_run_in_a_directory_deleted_since_and_sessions_still_open(tmp_path):
    # The daemon's workers need a directory that exists.
    state, port = tmp_path / "state", free_port()

    def in_a_deleted_directory(*args):
        return gsmcpd_in_a_deleted_directory(tmp_path, *args)

    started = in_a_deleted_directory("start", "--port", str(port), "--state-dir", str(state))
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        assert f"stop it with: {REPO / 'stop-server.sh'} {port} --state-dir {state}" in started.stdout
        client = Client(port)
        client.initialize()
        cwd = client.tool("execute_code", code="import os; os.getcwd()")["structuredContent"]
        assert cwd["result"] == "'/'", cwd
        listed = in_a_deleted_directory("status", str(port), "--state-dir", str(state))
        assert listed.returncode == 0 and "1 session(s)" in listed.stdout, listed.stdout + listed.stderr
    finally:
        stopped = in_a_deleted_directory("stop", str(port), "--state-dir", str(state))
        assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    assert "worker spawner" not in (state / f"gsmcpd-{port}.log").read_text()


def test_every_relative_path_read_in_a_directory_deleted_since_is_refused_naming_its_knob(tmp_path):
    # Not only state_dir and image: a log file was "cannot open ... No such file or
    # directory" (exit 1), and a JWKS file, TLS pair or user map was looked for later
    # from wherever the router then worked (/, once it left the deleted directory).
    state, port = tmp_path / "state", free_port()
    refusal = ("is relative to the current directory, which no longer exists (deleted?): "
               "give the path whole, or run this from a directory that exists")
    started = gsmcpd_in_a_deleted_directory(tmp_path, "start", "--port", str(port), "--state-dir",
                                            str(state), env={"GS_MCP_LOG_FILE": "g.log"})
    assert started.returncode == 2, started.stdout + started.stderr
    assert started.stderr.strip() == f"gsmcpd: configuration refused: log_file: g.log {refusal}"
    auth = {"GS_MCP_AUTH": "1", "MCP_ISSUER": "https://idp.example", "MCP_AUDIENCE": "gsmcpd",
            "MCP_JWKS_FILE": "keys.json"}
    checked = gsmcpd_in_a_deleted_directory(tmp_path, "check", "--port", str(port), "--state-dir",
                                            str(state), env=auth)
    assert checked.returncode == 2, checked.stdout + checked.stderr
    assert checked.stdout.splitlines()[-1] == f"PROBLEM: config: jwks_file: keys.json {refusal}"


def test_a_gsmcpd_serving_the_port_with_a_relative_state_dir_flag_is_named_with_its_directory(tmp_path):
    # Its --state-dir=rel (the = form was not read) is its own directory's rel, not the asker's.
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GS_MCP_", "MCP_"))}
    serving = subprocess.Popen([sys.executable, "-m", "gsmcpd", "serve", f"--port={port}", "--state-dir=rel"],
                               cwd=tmp_path, env=dict(env, PYTHONPATH=str(REPO)),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, proc=serving)
        stopped = gsmcpd("stop", str(port), "--state-dir", str(tmp_path / "other"))
        assert stopped.returncode == 1, stopped.stdout
        assert (f"pid {serving.pid}, a gsmcpd serving port {port} from the state directory "
                f"{tmp_path / 'rel'}, is running") in stopped.stdout, stopped.stdout
    finally:
        serving.terminate()
        serving.wait(10)


def test_stop_of_a_gsmcpd_whose_state_directory_was_removed_names_its_pid(tmp_path):
    port, state = free_port(), tmp_path / "state"
    started = gsmcpd("start", "--port", str(port), "--state-dir", str(state))
    assert started.returncode == 0, started.stdout + started.stderr
    pid = int((state / f"gsmcpd-{port}.pid").read_text())
    try:
        shutil.rmtree(state)
        stopped = gsmcpd("stop", str(port), "--state-dir", str(state))
        assert stopped.returncode == 1 and stopped.stdout.strip().endswith(
            f"but pid {pid}, a gsmcpd serving port {port}, is running without its pidfile and "
            f"control socket in {state} (removed?): stop it with kill {pid}"), stopped.stdout
    finally:
        os.kill(pid, signal.SIGTERM)
        assert wait_until(lambda: not pid_alive(pid))
