"""The real scripts against the real daemon: run-server.sh, stop-server.sh, `status`,
SIGHUP log rotation, the message trace, systemd readiness, install.sh."""

import contextlib
import http.client
import importlib.util
import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from helpers import free_port, pid_alive, spawn_in_a_terminal, wait_until

REPO = Path(__file__).resolve().parent.parent
PROTOCOL = "2025-06-18"
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": PROTOCOL, "capabilities": {},
                         "clientInfo": {"name": "test_scripts", "version": "1"}}}


def clean_env(**settings):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GS_MCP_", "MCP_")) and k != "NOTIFY_SOCKET"}
    env.update({"GS_MCP_SPARE_WORKERS": "1", **settings})
    return env


def run(script, *args, env, timeout=60, cwd=None):
    return subprocess.run([str(REPO / script), *args], env=env, capture_output=True,
                          text=True, timeout=timeout, cwd=cwd)


def wait_for(predicate, what, timeout=15.0):
    if not wait_until(predicate, timeout):
        raise AssertionError(f"timed out waiting for {what}")


def post(port, body, session=None, headers=()):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    head = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if session:
        head.update({"MCP-Session-Id": session, "MCP-Protocol-Version": PROTOCOL})
    head.update(dict(headers))
    conn.request("POST", "/mcp", body=body if isinstance(body, bytes) else json.dumps(body),
                 headers=head)
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, response.getheader("MCP-Session-Id"), data


def open_session(port):
    status, session, data = post(port, INITIALIZE)
    assert status == 200, data
    assert post(port, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)[0] == 202
    return session


def delete(port, session):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("DELETE", "/mcp", headers={"MCP-Session-Id": session,
                                             "MCP-Protocol-Version": PROTOCOL})
    status = conn.getresponse().status
    conn.close()
    return status


def port_free(port):
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) != 0


def _stop_for_sure(port, state, pid=None):
    """Stop the gsmcpd still serving `port` from the state directory `state` (or, its
    pidfile lost, the pid `pid` names) without the scripts, which may be what failed:
    `gsmcpd stop`, then SIGKILL to its process group (its own session: its workers too).
    A line naming it; None when nothing serves the port."""
    if port_free(port):
        return None
    with contextlib.suppress(OSError, ValueError):
        pid = int((Path(state) / f"gsmcpd-{port}.pid").read_text())
    subprocess.run([sys.executable, "-m", "gsmcpd", "stop", str(port), "--state-dir", str(state),
                    "--timeout", "10"], env=clean_env(), cwd=str(REPO), capture_output=True, timeout=60)
    if not port_free(port) and pid is not None and pid_alive(pid) and \
            b"gsmcpd" in Path(f"/proc/{pid}/cmdline").read_bytes():
        with contextlib.suppress(ProcessLookupError):
            if os.getpgid(pid) == pid:
                os.killpg(pid, signal.SIGKILL)
            else:
                os.kill(pid, signal.SIGKILL)
        wait_until(lambda: port_free(port), 15)
    return f"gsmcpd on port {port}, pid {pid}, state {state}" + ("" if port_free(port) else ": still serving")


@pytest.fixture
def stop_at_the_end():
    """stop_at_the_end(port, state, pid=None): the gsmcpd a test starts through the scripts
    is stopped once the test ends (_stop_for_sure), and the test errors naming it if it was
    left serving: a stop script failing (a fix of it tested before it exists) left it running
    past the test run. Called before the start, so a test failing at once leaves none."""
    serving = []
    yield lambda port, state, pid=None: serving.append((port, state, pid))
    left = [line for args in serving if (line := _stop_for_sure(*args))]
    if left:
        pytest.fail("left running after the test, now stopped:\n" + "\n".join(left), pytrace=False)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """One detached daemon for the module, traced both ways, started by run-server.sh."""
    state = tmp_path_factory.mktemp("state")
    port = free_port()
    env = clean_env(GS_MCP_PORT=str(port), GS_MCP_STATE_DIR=str(state), GS_MCP_TRACE="both",
                    GS_MCP_TRACE_LIMIT="200")
    started = run("run-server.sh", env=env)
    info = {"port": port, "state": state, "env": env, "started": started,
            "log": state / f"gsmcpd-{port}.log", "pidfile": state / f"gsmcpd-{port}.pid"}
    yield info
    if info["pidfile"].exists():
        run("stop-server.sh", str(port), env=env)
    _stop_for_sure(port, state)   # the stop script may be what failed


def test_a_logrotate_signal_during_start_up_is_held_and_its_reopen_done_once_serving(tmp_path):
    # Sent as soon as the pidfile names the server (a logrotate run at that moment), before
    # the spawner's preload is done and the loop has its handlers: it ended the server.
    port, state = free_port(), tmp_path / "state"
    log = tmp_path / "serve.log"
    env = clean_env(GS_MCP_STATE_DIR=str(state), GS_MCP_LOG_FILE=str(log))
    proc = subprocess.Popen([sys.executable, "-m", "gsmcpd", "serve", "--port", str(port)], env=env,
                            cwd=str(REPO), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        pidfile = state / f"gsmcpd-{port}.pid"
        wait_for(lambda: pidfile.exists() and pidfile.read_text().strip(), "the pidfile")
        os.kill(proc.pid, signal.SIGUSR1)
        wait_for(lambda: not port_free(port) or proc.poll() is not None, "the daemon to listen")
        assert proc.poll() is None
        wait_for(lambda: "SIGUSR1: log file reopened" in log.read_text(), "the held reopen")
        proc.terminate()
        assert proc.wait(15) == 0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_run_server_returns_once_listening_and_says_how_to_stop(server):
    started, port = server["started"], server["port"]
    assert started.returncode == 0, started.stdout + started.stderr
    pid = int(server["pidfile"].read_text())
    assert f"gsmcpd listening on http://127.0.0.1:{port}/mcp (pid {pid})" in started.stdout
    assert f"./stop-server.sh {port}" in started.stdout and f"kill {pid}" in started.stdout
    assert not port_free(port)
    # Detached: its own session, stdin from /dev/null, not our child.
    assert os.getsid(pid) != os.getsid(0)
    ppid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    assert ppid != os.getpid()
    assert os.readlink(f"/proc/{pid}/fd/0") == "/dev/null"
    assert os.readlink(f"/proc/{pid}/fd/2") == str(server["log"])


def test_talks_mcp(server):
    session = open_session(server["port"])
    status, _, data = post(server["port"], {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                           session)
    assert status == 200 and "tools" in json.loads(data)["result"]
    assert delete(server["port"], session) == 200


def test_second_start_on_the_same_port_is_refused(server):
    again = run("run-server.sh", env=server["env"])
    assert again.returncode == 1
    pid = int(server["pidfile"].read_text())
    assert f"gsmcpd is already running on port {server['port']} (pid {pid}" in again.stdout


def test_start_on_a_port_taken_by_something_else(server, tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        env = clean_env(GS_MCP_PORT=str(port), GS_MCP_STATE_DIR=str(tmp_path))
        refused = run("run-server.sh", env=env)
    assert refused.returncode == 1
    assert f"port {port} on 127.0.0.1 is already in use by another process" in refused.stdout


@pytest.mark.parametrize("how", ["environment", "leading-zero flag"])
def test_stop_stops_a_serve_however_it_was_given_its_port(tmp_path, how):
    # From the environment its command line names no port: stop confirms it by its control
    # socket. `--port 0N` serves port N: stop once took its live pidfile for a stale one,
    # removed it and said nothing was running, and the server ran on unreachable by stop.
    # Neither takes a live pidfile for a stale one, nor lets a second start think the port free.
    port, state = free_port(), tmp_path / "state"
    if how == "environment":
        env, flags = clean_env(GS_MCP_PORT=str(port), GS_MCP_STATE_DIR=str(state)), []
    else:
        env, flags = clean_env(GS_MCP_STATE_DIR=str(state)), ["--port", "0%d" % port]
    log = open(tmp_path / "serve.log", "wb")
    proc = subprocess.Popen([sys.executable, "-m", "gsmcpd", "serve", *flags], env=env, cwd=str(REPO),
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_for(lambda: not port_free(port), "the daemon to listen")
        again = run("run-server.sh", "--port", str(port), env=env)
        assert again.returncode == 1 and f"already running on port {port} (pid {proc.pid}" in again.stdout
        stopped = run("stop-server.sh", str(port), env=env)
        assert stopped.returncode == 0, stopped.stdout
        assert f"stopped gsmcpd on port {port} (pid {proc.pid})" in stopped.stdout
        assert proc.wait(15) == 0
        assert not (state / f"gsmcpd-{port}.pid").exists()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()


def test_run_server_takes_a_lone_port_as_stop_server_does_over_the_environment(tmp_path, stop_at_the_end):
    # `./run-server.sh 8000` failed with "unrecognized arguments" while `./stop-server.sh 8000` worked.
    port, state = free_port(), tmp_path / "state"
    stop_at_the_end(port, state)
    env = clean_env(GS_MCP_PORT=str(free_port()), GS_MCP_STATE_DIR=str(state))
    started = run("run-server.sh", str(port), env=env)
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        assert f"listening on http://127.0.0.1:{port}/mcp" in started.stdout
        assert open_session(port)
    finally:
        stopped = run("stop-server.sh", str(port), env=env)
    assert stopped.returncode == 0 and f"stopped gsmcpd on port {port}" in stopped.stdout, stopped.stdout
    assert port_free(port)


def test_a_serve_given_its_port_by_the_environment_is_named_from_another_state_dir(tmp_path):
    # Its command line names no port (GS_MCP_PORT here; a conf file's port the same): the
    # listening socket it holds says it serves the port, to stop, status and start alike.
    port, ours, other = free_port(), tmp_path / "ours", tmp_path / "other"
    proc = subprocess.Popen([sys.executable, "-m", "gsmcpd", "serve"], cwd=str(REPO),
                            env=clean_env(GS_MCP_PORT=str(port), GS_MCP_STATE_DIR=str(ours)),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_for(lambda: not port_free(port) or proc.poll() is not None, "the daemon to listen")
        assert proc.poll() is None
        hint = (f"pid {proc.pid}, a gsmcpd serving port {port}, is running: give the --state-dir "
                f"or --config it was started with, or kill {proc.pid}")
        asked = clean_env(GS_MCP_STATE_DIR=str(other))
        stopped = run("stop-server.sh", str(port), env=asked)
        assert stopped.returncode == 1 and stopped.stdout.strip().endswith(f"but {hint}"), stopped.stdout
        listed = subprocess.run([sys.executable, "-m", "gsmcpd", "status", str(port)], cwd=str(REPO),
                                env=asked, capture_output=True, text=True, timeout=60)
        assert listed.returncode == 1 and listed.stderr.strip().endswith(f"but {hint}"), listed.stderr
        started = run("run-server.sh", "--port", str(port), env=asked)
        assert started.returncode == 1, started.stdout + started.stderr
        assert started.stdout.strip() == f"port {port} on 127.0.0.1 is already in use: {hint}"
        assert proc.poll() is None   # named, never signalled
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def test_stop_of_a_stale_pidfile_names_the_gsmcpd_serving_the_port_from_another_state_dir(
        tmp_path, stop_at_the_end):
    # The pidfile asked about names a process that is no gsmcpd (its server gone, the pid
    # reused): removed, nothing signalled, and the gsmcpd on the port named, not left unsaid.
    port, ours, other = free_port(), tmp_path / "ours", tmp_path / "other"
    stop_at_the_end(port, ours)
    unrelated = subprocess.Popen(["sleep", "60"])
    started = run("run-server.sh", "--port", str(port), "--state-dir", str(ours), env=clean_env())
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        pid = int((ours / f"gsmcpd-{port}.pid").read_text())
        other.mkdir()
        stale = other / f"gsmcpd-{port}.pid"
        stale.write_text(f"{unrelated.pid}\n")
        stopped = run("stop-server.sh", str(port), "--state-dir", str(other), env=clean_env(), cwd=REPO)
        assert stopped.returncode == 1, stopped.stdout + stopped.stderr
        assert stopped.stdout.strip() == (
            f"stale pidfile {stale}: pid {unrelated.pid} is not a gsmcpd serving port {port}; "
            f"removed it without signalling anything. But pid {pid}, a gsmcpd serving port {port} "
            f"from the state directory {ours}, is running: stop it with ./stop-server.sh {port} "
            f"--state-dir {ours}")
        assert not stale.exists() and unrelated.poll() is None and not port_free(port)
    finally:
        unrelated.kill()
        unrelated.wait()
        run("stop-server.sh", str(port), "--state-dir", str(ours), env=clean_env())
    assert port_free(port)


def test_a_deep_state_dir_serves_and_the_cli_reaches_it(tmp_path, stop_at_the_end):
    # Its control socket's path is past the 108 bytes a unix socket address holds: start
    # once failed with "cannot serve on 127.0.0.1:PORT: AF_UNIX path too long".
    port, state = free_port(), tmp_path / ("d" * 60) / ("e" * 60)
    stop_at_the_end(port, state)
    env = clean_env(GS_MCP_PORT=str(port), GS_MCP_STATE_DIR=str(state))
    started = run("run-server.sh", env=env)
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        session = open_session(port)
        status = subprocess.run([sys.executable, "-m", "gsmcpd", "status", "--json"], env=env,
                                capture_output=True, text=True, cwd=str(REPO), timeout=30)
        assert status.returncode == 0, status.stderr
        assert [s["id"] for s in json.loads(status.stdout)["sessions"]] == [session]
        ended = subprocess.run([sys.executable, "-m", "gsmcpd", "end", session], env=env,
                               capture_output=True, text=True, cwd=str(REPO), timeout=30)
        assert ended.returncode == 0 and f"ended session {session[:8]}" in ended.stdout, ended.stderr
    finally:
        stopped = run("stop-server.sh", env=env)
    assert stopped.returncode == 0 and "stopped gsmcpd on port" in stopped.stdout, stopped.stdout
    assert port_free(port) and not (state / f"gsmcpd-{port}.ctl").exists()


SERVED = "served by this deployment's gsmcpd"   # install.sh --check of a port this checkout serves


def _start_check_stop(script, port, names=("run-server.sh", "install.sh", "stop-server.sh")):
    """Start, check and stop this checkout's server through `script(name, *args)`, the
    scripts as a caller reaches them (`names`: the start, install and stop scripts so
    reached): each does its part, and no decoy gsmcpd runs. The check's output, for the
    caller's own assertions. The caller stops the server for sure (stop_at_the_end)."""
    start, install, stop = names
    started = script(start)
    try:
        assert started.returncode == 0 and "decoy" not in started.stdout, started.stdout + started.stderr
        assert f"listening on http://127.0.0.1:{port}/mcp" in started.stdout
        assert open_session(port)
        checked = script(install, "--check")
        assert "decoy" not in checked.stdout, checked.stdout + checked.stderr
    finally:
        stopped = script(stop)
    assert stopped.returncode == 0 and "decoy" not in stopped.stdout, stopped.stdout + stopped.stderr
    assert f"stopped gsmcpd on port {port}" in stopped.stdout and port_free(port)
    return checked.stdout


def test_scripts_run_their_own_gsmcpd_whatever_the_callers_directory_holds(tmp_path, stop_at_the_end):
    # `python -m` puts the caller's directory first on the path: run from another checkout
    # (or any directory holding a gsmcpd package), the scripts ran that gsmcpd instead,
    # with its state dir, and reported on a server that was not this checkout's.
    decoy = tmp_path / "elsewhere"
    (decoy / "gsmcpd").mkdir(parents=True)
    (decoy / "gsmcpd" / "__init__.py").write_text("")
    (decoy / "gsmcpd" / "__main__.py").write_text("print('the decoy gsmcpd ran')\n")
    port, state = free_port(), tmp_path / "state"
    stop_at_the_end(port, state)
    env = clean_env(GS_MCP_PORT=str(port), GS_MCP_STATE_DIR=str(state))

    def script(name, *args):
        return subprocess.run([str(REPO / name), *args], env=env, cwd=str(decoy),
                              capture_output=True, text=True, timeout=60)
    assert SERVED in _start_check_stop(script, port)


def test_scripts_run_by_a_relative_path_with_cdpath_set_find_their_checkout(tmp_path, stop_at_the_end):
    # With CDPATH exported, `cd dir` prints the directory it found: ROOT=$(cd ... && pwd)
    # held it twice ("/x/gsmcpd\n/x/gsmcpd"), and no script found its .venv or install.sh.
    port, state = free_port(), tmp_path / "state"
    stop_at_the_end(port, state)
    env = clean_env(GS_MCP_PORT=str(port), GS_MCP_STATE_DIR=str(state), CDPATH=str(REPO.parent))

    def script(name, *args):
        return subprocess.run(["bash", f"{REPO.name}/{name}", *args], env=env, cwd=str(REPO.parent),
                              capture_output=True, text=True, timeout=60)
    checked = _start_check_stop(script, port)
    assert checked.startswith("python "), checked   # not the directory cd found


def test_scripts_run_through_a_link_to_them_find_their_checkout(tmp_path, stop_at_the_end):
    # A link in a directory on PATH (gsmcpd-start -> /opt/gsmcpd/run-server.sh): the
    # checkout was taken to be the link's directory, holding no .venv nor install.sh.
    port, state, links = free_port(), tmp_path / "state", tmp_path / "bin"
    stop_at_the_end(port, state)
    links.mkdir()
    for name, link in (("run-server.sh", "gsmcpd-start"), ("stop-server.sh", "gsmcpd-stop"),
                       ("install.sh", "gsmcpd-install")):
        (links / link).symlink_to(os.path.relpath(REPO / name, links))
    env = clean_env(GS_MCP_PORT=str(port), GS_MCP_STATE_DIR=str(state))

    def script(name, *args):
        return subprocess.run([str(links / name), *args], env=env, cwd=str(tmp_path),
                              capture_output=True, text=True, timeout=60)
    assert SERVED in _start_check_stop(script, port, ("gsmcpd-start", "gsmcpd-install", "gsmcpd-stop"))


@pytest.mark.parametrize("where", ["on PATH only", "in the caller's directory, another on PATH"])
def test_scripts_given_to_bash_by_a_links_bare_name_follow_the_link_bash_read(tmp_path, where, stop_at_the_end):
    # `bash gsmcpd-start` reads ./gsmcpd-start, or when there is none the one on PATH, and
    # leaves $0 the bare name: one found on PATH was not followed (no such link in the
    # caller's directory), and the checkout was taken to be the caller's directory.
    # Where the caller's directory holds one, that one is read and followed, not PATH's
    # (here leading to a decoy checkout that would say so).
    links, decoy, decoy_links = tmp_path / "bin", tmp_path / "decoy", tmp_path / "decoy-bin"
    for directory in (links, decoy / ".venv" / "bin", decoy_links):
        directory.mkdir(parents=True)
    (decoy / ".venv" / ".gsmcpd-install-stamp").write_text("")
    for name, link in (("run-server.sh", "gsmcpd-start"), ("stop-server.sh", "gsmcpd-stop"),
                       ("install.sh", "gsmcpd-install"), (".venv/bin/python", None)):
        (decoy / name).write_text("#!/bin/sh\necho the decoy ran\n")
        (decoy / name).chmod(0o755)
        if link:
            (links / link).symlink_to(os.path.relpath(REPO / name, links))
            (decoy_links / link).symlink_to(decoy / name)
    on_path, cwd = (links, tmp_path) if where == "on PATH only" else (decoy_links, links)
    port, state = free_port(), tmp_path / "state"
    stop_at_the_end(port, state)
    env = clean_env(GS_MCP_PORT=str(port), GS_MCP_STATE_DIR=str(state),
                    PATH=f"{on_path}{os.pathsep}{os.environ['PATH']}")

    def script(name, *args):
        return subprocess.run(["bash", name, *args], env=env, cwd=str(cwd),
                              capture_output=True, text=True, timeout=60)
    assert SERVED in _start_check_stop(script, port, ("gsmcpd-start", "gsmcpd-install", "gsmcpd-stop"))


@pytest.mark.parametrize("name, args", [("run-server.sh", ()), ("stop-server.sh", ()),
                                        ("install.sh", ("--check",))])
def test_scripts_given_to_bash_by_a_bare_name_find_the_checkout_of_the_file_bash_read(tmp_path, name, args):
    # bash reads the first readable file of the name on PATH, executable or not; `type -P`
    # found the first executable one: here a link into another checkout, later on PATH, whose
    # checkout was then run. Each checkout's stub python says which ran.
    read, other, later = tmp_path / "read", tmp_path / "other", tmp_path / "later"
    for checkout in (read, other):
        (checkout / ".venv" / "bin").mkdir(parents=True)
        (checkout / ".venv" / ".gsmcpd-install-stamp").write_text("")
        for stub, text in ((".venv/bin/python", f"echo the {checkout.name} checkout ran"),
                           ("install.sh", "exit 0")):   # run-server.sh's --stamp-ok
            (checkout / stub).write_text(f"#!/bin/sh\n{text}\n")
            (checkout / stub).chmod(0o755)
    later.mkdir()
    shutil.copy(REPO / name, other / "gsmcpd-script")   # executable, as copied
    (later / "gsmcpd-script").symlink_to(other / "gsmcpd-script")
    (read / "gsmcpd-script").write_text((REPO / name).read_text())
    (read / "gsmcpd-script").chmod(0o644)
    env = clean_env(GS_MCP_PORT=str(free_port()), GS_MCP_STATE_DIR=str(tmp_path / "state"),
                    PATH=os.pathsep.join([str(read), str(later), os.environ["PATH"]]))
    done = subprocess.run(["bash", "gsmcpd-script", *args], env=env, cwd=str(tmp_path),
                          capture_output=True, text=True, timeout=60)
    assert done.stdout == "the read checkout ran\n", done.stdout + done.stderr


def test_install_check_checks_the_port_and_flags_it_is_given(tmp_path):
    # `./install.sh --check 8001` ran `gsmcpd check` bare: the default port was checked.
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        env = clean_env(GS_MCP_STATE_DIR=str(tmp_path / "state"))
        for args in ((str(port),), ("--port", str(port))):
            checked = run("install.sh", "--check", *args, env=env)
            assert checked.returncode == 1, checked.stdout + checked.stderr
            assert f"port           127.0.0.1:{port}   <-- already in use" in checked.stdout.splitlines()
            assert checked.stdout.splitlines()[-1] == "PROBLEM: port: already in use"
    refused = run("install.sh", "--check", "99999", env=env)
    assert refused.returncode == 2 and "got 99999 (the one argument without a flag is the port)" in refused.stderr


@pytest.mark.parametrize("name, args, says", [("run-server.sh", ("--help",), "usage: gsmcpd start"),
                                              ("stop-server.sh", ("PORT",), "no gsmcpd running on port"),
                                              ("install.sh", ("--check",), "OK: ready to serve")])
def test_scripts_read_by_bash_from_stdin_in_their_checkout_run_it(tmp_path, name, args, says):
    # `bash -s < run-server.sh` names no file: $0 is the shell's own name, and the checkout
    # is the caller's directory, not that of the `bash` PATH finds (/usr/bin: "no .venv").
    port = str(free_port())
    env = clean_env(GS_MCP_STATE_DIR=str(tmp_path / "state"))
    with open(REPO / name, "rb") as script:
        done = subprocess.run(["bash", "-s", "--", *(port if arg == "PORT" else arg for arg in args)], stdin=script,
                              env=env, cwd=str(REPO), capture_output=True, text=True, timeout=60)
    assert says in done.stdout + done.stderr, done.stdout + done.stderr


def test_scripts_follow_a_relative_link_in_a_linked_directory_as_the_system_does(tmp_path, stop_at_the_end):
    # on/bin -> real/deep/bin, whose gsmcpd-start -> ../../checkout/run-server.sh: the system
    # reads its '..' from real/deep/bin (real/checkout, the checkout), where cd read them off
    # the words on/bin/../../checkout: a directory beside on/, with no .venv nor install.sh.
    (tmp_path / "real" / "deep" / "bin").mkdir(parents=True)
    (tmp_path / "real" / "checkout").symlink_to(REPO)
    (tmp_path / "on").mkdir()
    (tmp_path / "on" / "bin").symlink_to(Path("..", "real", "deep", "bin"))
    (tmp_path / "checkout").mkdir()
    for name, link in (("run-server.sh", "gsmcpd-start"), ("stop-server.sh", "gsmcpd-stop"),
                       ("install.sh", "gsmcpd-install")):
        (tmp_path / "real" / "deep" / "bin" / link).symlink_to(Path("..", "..", "checkout", name))
    port, state = free_port(), tmp_path / "state"
    stop_at_the_end(port, state)
    env = clean_env(GS_MCP_PORT=str(port), GS_MCP_STATE_DIR=str(state))

    def script(name, *args):
        return subprocess.run([str(tmp_path / "on" / "bin" / name), *args], env=env, cwd=str(tmp_path),
                              capture_output=True, text=True, timeout=60)
    assert SERVED in _start_check_stop(script, port, ("gsmcpd-start", "gsmcpd-install", "gsmcpd-stop"))


def test_scripts_refuse_a_checkout_whose_path_holds_a_colon(tmp_path):
    # PYTHONPATH=$ROOT split /x/a:b into /x/a and b, relative to the caller's directory:
    # run from one holding b/gsmcpd, the scripts ran that gsmcpd. Python has no escape for
    # ':' there, so the scripts refuse such a checkout, saying why, before running python.
    checkout = tmp_path / "a:b"
    checkout.mkdir()
    for name in ("run-server.sh", "stop-server.sh", "install.sh", "setup.cfg", "pyproject.toml"):
        shutil.copy(REPO / name, checkout / name)
    (checkout / ".venv" / "bin").mkdir(parents=True)
    (checkout / ".venv" / "bin" / "python").symlink_to(sys.executable)
    stamp = subprocess.run("cat setup.cfg pyproject.toml | sha256sum", shell=True, cwd=checkout,
                           capture_output=True, text=True, check=True).stdout.split()[0]
    (checkout / ".venv" / ".gsmcpd-install-stamp").write_text(f"{stamp} base\n")   # no pip run
    (checkout / "gsmcpd").symlink_to(REPO / "gsmcpd")
    decoy = tmp_path / "b" / "gsmcpd"
    decoy.mkdir(parents=True)
    (decoy / "__init__.py").write_text("")
    (decoy / "__main__.py").write_text("print('the decoy gsmcpd ran')\n")
    why = f"cannot run gsmcpd from '{checkout}': its path holds a ':', which PYTHONPATH cannot carry"
    env = clean_env(GS_MCP_STATE_DIR=str(tmp_path / "state"))
    for script, args in (("run-server.sh", [str(free_port())]), ("stop-server.sh", [])):
        done = subprocess.run([str(checkout / script), *args], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 2 and "decoy" not in done.stdout, done.stdout + done.stderr
        assert done.stderr.startswith(f"{script}: {why}"), done.stderr
    checked = subprocess.run([str(checkout / "install.sh"), "--check"], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=60)
    assert checked.returncode == 2 and "decoy" not in checked.stdout, checked.stdout + checked.stderr
    assert "PROBLEM: checkout: its path holds a ':', which PYTHONPATH cannot carry" in checked.stdout
    assert not (tmp_path / "state").exists()


def test_scripts_run_a_checkout_through_a_link_whose_name_holds_a_colon(tmp_path, stop_at_the_end):
    # The scripts checked the path they were called by (`pwd`): a link named a:b to a
    # checkout whose own path has none was refused, though that path carries on PYTHONPATH.
    # What goes there is what is checked: the link's target's own path, the decoy in b/
    # (what /x/a:b split into /x/a and b would have run) not run.
    link = tmp_path / "a:b"
    link.symlink_to(REPO)
    decoy = tmp_path / "b" / "gsmcpd"
    decoy.mkdir(parents=True)
    (decoy / "__init__.py").write_text("")
    (decoy / "__main__.py").write_text("print('the decoy gsmcpd ran')\n")
    port, state = free_port(), tmp_path / "state"
    stop_at_the_end(port, state)
    env = clean_env(GS_MCP_PORT=str(port), GS_MCP_STATE_DIR=str(state))

    def script(name, *args):
        return subprocess.run([str(link / name), *args], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=60)
    checked = _start_check_stop(script, port)
    assert "PROBLEM" not in checked and SERVED in checked, checked


@pytest.mark.parametrize("umask", ["000", "0277"])
def test_run_server_makes_its_files_and_directories_with_their_modes_whatever_the_umask(
        tmp_path, umask, stop_at_the_end):
    # Under umask 000 the pidfile came out 0666 and the missing directories above the state
    # directory 0777 (another account could change them); under 0277 the state directory and
    # log came out 0500 and 0400, not README's 0700 and 0600 "whatever the umask".
    port, state = free_port(), tmp_path / "new" / "state"
    stop_at_the_end(port, state)
    env = clean_env(GS_MCP_PORT=str(port), GS_MCP_STATE_DIR=str(state))
    started = subprocess.run(["bash", "-c", f"umask {umask}; exec {REPO / 'run-server.sh'}"], env=env,
                             capture_output=True, text=True, timeout=60)
    assert started.returncode == 0, started.stdout + started.stderr
    try:
        assert stat.S_IMODE((state / f"gsmcpd-{port}.pid").stat().st_mode) == 0o644
        assert stat.S_IMODE(state.parent.stat().st_mode) == 0o755
        assert stat.S_IMODE(state.stat().st_mode) == 0o700
        assert stat.S_IMODE((state / f"gsmcpd-{port}.log").stat().st_mode) == 0o600
    finally:
        stopped = run("stop-server.sh", env=env)
    assert stopped.returncode == 0, stopped.stdout


@pytest.mark.parametrize("pidfile", ["deleted", "emptied"])
def test_a_server_whose_pidfile_was_lost_is_still_found_by_start_and_stopped_by_stop(
        tmp_path, pidfile, stop_at_the_end):
    # Deleted by hand or a tmp cleaner while the server runs: stop said nothing was running
    # (and removed an emptied one), start blamed "another process"; the control socket knows.
    port, state = free_port(), tmp_path / "state"
    stop_at_the_end(port, state)
    env = clean_env(GS_MCP_PORT=str(port), GS_MCP_STATE_DIR=str(state))
    started = run("run-server.sh", env=env)
    assert started.returncode == 0, started.stdout + started.stderr
    pid = int(started.stdout.split("(pid ")[1].split(")")[0])
    try:
        if pidfile == "deleted":
            (state / f"gsmcpd-{port}.pid").unlink()
        else:
            (state / f"gsmcpd-{port}.pid").write_text("")
        again = run("run-server.sh", env=env)
        assert again.returncode == 1 and f"already running on port {port} (pid {pid}" in again.stdout, again.stdout
        assert f"its pidfile {state / f'gsmcpd-{port}.pid'} is lost" in again.stdout, again.stdout
        stopped = run("stop-server.sh", env=env)
        assert stopped.returncode == 0, stopped.stdout
        assert f"control socket names pid {pid}" in stopped.stdout
        assert f"stopped gsmcpd on port {port} (pid {pid})" in stopped.stdout
        assert port_free(port)
    finally:
        _stop_for_sure(port, state, pid)   # by its pid: its pidfile is lost


def test_a_serve_in_a_terminal_stops_when_its_terminal_hangs_up(tmp_path):
    # It logs to that terminal: closed (a window, an ssh session), the server served on
    # as a ghost, every log line lost, holding its port until someone found and killed it.
    import select
    port, state = free_port(), tmp_path / "state"
    env = clean_env(GS_MCP_STATE_DIR=str(state), PYTHONPATH=str(REPO))
    proc, master = spawn_in_a_terminal([sys.executable, "-P", "-m", "gsmcpd", "serve", "--port", str(port)], env)
    try:
        output = b""
        deadline = time.monotonic() + 30
        while b"listening on" not in output and time.monotonic() < deadline:
            if select.select([master], [], [], 0.2)[0]:
                output += os.read(master, 65536)
        assert b"listening on" in output, output
        assert open_session(port)
        proc.send_signal(signal.SIGHUP)      # a kill -HUP (logrotate) with the terminal there
        assert open_session(port)            # ... is no hang-up: it serves on
        os.close(master)                     # the terminal goes away
        master = None
        wait_for(lambda: proc.poll() is not None, "the server to stop", timeout=30)
        assert port_free(port) and not (state / f"gsmcpd-{port}.pid").exists()
    finally:
        if master is not None:
            os.close(master)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_scripts_run_from_elsewhere_read_relative_paths_from_the_callers_directory(tmp_path, stop_at_the_end):
    # Flags and settings name paths as the caller sees them, not as the checkout does; the
    # stop command start prints works as printed, from there, with the state dir it used.
    port, state = free_port(), tmp_path / "state"
    stop_at_the_end(port, state)
    env = clean_env()
    started = subprocess.run([str(REPO / "run-server.sh"), "--port", str(port),
                              "--state-dir", "state"], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=60)
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        assert (state / f"gsmcpd-{port}.pid").exists()
        assert f"log: {state / f'gsmcpd-{port}.log'}" in started.stdout
        hint = started.stdout.split("stop it with: ", 1)[1].split("   or: ", 1)[0]
        stopped = subprocess.run(hint, shell=True, cwd=tmp_path, env=env, capture_output=True,
                                 text=True, timeout=60)
        assert stopped.returncode == 0, hint + ": " + stopped.stdout + stopped.stderr
        assert f"stopped gsmcpd on port {port}" in stopped.stdout
    finally:
        for where in (state, REPO / "state"):   # REPO/state: where it went before the fix
            if (where / f"gsmcpd-{port}.pid").exists():
                run("stop-server.sh", str(port), "--state-dir", str(where), env=env)
        _stop_for_sure(port, REPO / "state")   # before its files go; the stop script may have failed
        shutil.rmtree(REPO / "state", ignore_errors=True)


def test_a_relative_state_dir_in_a_conf_file_is_the_conf_files_from_any_directory(tmp_path, stop_at_the_end):
    # Started from one directory and stopped from another with the same conf file: both
    # read its state_dir relative to the file, so stop finds the pidfile start wrote.
    port, site, here, there = free_port(), tmp_path / "site", tmp_path / "here", tmp_path / "there"
    for directory in (site, here, there):
        directory.mkdir()
    conf = site / "gsmcpd.conf"
    conf.write_text(f"port = {port}\nstate_dir = relative/dir\n")
    pidfile = site / "relative" / "dir" / f"gsmcpd-{port}.pid"
    for state in (site, here, there):   # here/relative/dir: where start put it before the fix
        stop_at_the_end(port, state / "relative" / "dir")
    env = clean_env()

    def script(name, cwd, *args):
        return subprocess.run([str(REPO / name), *args], cwd=cwd, env=env, capture_output=True,
                              text=True, timeout=60)

    started = script("run-server.sh", here, "--config", "../site/gsmcpd.conf")
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        assert pidfile.exists() and not (here / "relative").exists()
        assert f"log: {pidfile.with_suffix('.log')}" in started.stdout
        status = subprocess.run([str(REPO / ".venv/bin/python"), "-P", "-m", "gsmcpd", "status",
                                 "--config", str(conf), "--json"], cwd=there,
                                env={**env, "PYTHONPATH": str(REPO)}, capture_output=True,
                                text=True, timeout=60)
        assert status.returncode == 0, status.stdout + status.stderr
        stopped = script("stop-server.sh", there, "--config", "../site/gsmcpd.conf")
        assert stopped.returncode == 0, stopped.stdout + stopped.stderr
        assert f"stopped gsmcpd on port {port}" in stopped.stdout and not pidfile.exists()
    finally:
        for cwd in (here, there):   # here/relative/dir: where start put it before the fix
            if (cwd / "relative" / "dir" / f"gsmcpd-{port}.pid").exists():
                script("stop-server.sh", cwd, "--config", str(conf))


def test_run_server_takes_none_for_an_unset_path_knob(tmp_path, stop_at_the_end):
    # "none" for a path knob is unset, as for the other optional knobs: the default image
    # and log, not an image or log file named "none" in the caller's directory.
    port, state = free_port(), tmp_path / "state"
    stop_at_the_end(port, state)
    env = clean_env(GS_MCP_STATE_DIR=str(state), GS_MCP_LOG_FILE="none", MCP_JWKS_FILE="off")
    started = subprocess.run([str(REPO / "run-server.sh"), "--port", str(port), "--image", "none"],
                             cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        log = state / f"gsmcpd-{port}.log"
        assert f"log: {log}" in started.stdout
        assert f"(host 127.0.0.1, port {port}, pid " in log.read_text()
        assert (state / "image").is_dir()
        assert not (tmp_path / "none").exists() and not (tmp_path / "off").exists()
    finally:
        run("stop-server.sh", str(port), env=env)


def test_run_server_refuses_a_config_that_is_not_text_and_reads_one_saved_with_a_bom_and_trailing_comments(
        tmp_path, stop_at_the_end):
    binary = tmp_path / "binary.conf"
    binary.write_bytes(b"\xff\xfe\x00port = 1\n")
    refused = run("run-server.sh", env=clean_env(GS_MCP_CONFIG=str(binary), GS_MCP_STATE_DIR=str(tmp_path)))
    assert refused.returncode == 2 and "Traceback" not in refused.stdout + refused.stderr
    assert f"{binary} is not UTF-8 text" in refused.stdout + refused.stderr
    # Notepad's UTF-8: start refused "unknown key; did you mean port?", and stop, which
    # passes over unknown keys, looked on the default port. (Comments after a value too,
    # in the same file: one start for both.)
    port = free_port()
    stop_at_the_end(port, tmp_path / "state")
    conf = tmp_path / "bom.conf"
    conf.write_bytes(f"\ufeffport = {port}   # the team's port\r\nspare_workers = 1 # one is enough\r\n".encode())
    env = clean_env(GS_MCP_CONFIG=str(conf), GS_MCP_STATE_DIR=str(tmp_path / "state"))
    started = run("run-server.sh", env=env)
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        assert f"listening on http://127.0.0.1:{port}/mcp" in started.stdout
    finally:
        stopped = run("stop-server.sh", env=env)
    assert stopped.returncode == 0 and f"stopped gsmcpd on port {port}" in stopped.stdout, stopped.stdout


def test_stop_and_start_say_what_is_wrong_with_a_pidfile_they_cannot_read(tmp_path):
    port = free_port()
    env = clean_env(GS_MCP_PORT=str(port), GS_MCP_STATE_DIR=str(tmp_path))
    (tmp_path / f"gsmcpd-{port}.pid").mkdir()
    for script, words, code in (("stop-server.sh", "nothing was signalled", 1), ("run-server.sh", "not started", 2)):
        result = run(script, *([str(port)] if script == "stop-server.sh" else []), env=env)
        output = result.stdout + result.stderr
        assert result.returncode == code and "Traceback" not in output, output
        assert f"cannot read the pidfile {tmp_path}/gsmcpd-{port}.pid: Is a directory; {words}" in output


def test_an_unusable_state_dir_or_log_file_is_named_without_a_traceback(tmp_path):
    (tmp_path / "afile").write_text("")
    (tmp_path / "logdir").mkdir()
    port = free_port()
    cases = [(clean_env(GS_MCP_STATE_DIR=str(tmp_path / "afile" / "x")),
              f"cannot use the state directory {tmp_path}/afile/x: Not a directory"),
             (clean_env(GS_MCP_STATE_DIR=str(tmp_path / "s"), GS_MCP_LOG_FILE=str(tmp_path / "logdir")),
              f"cannot open the log file {tmp_path}/logdir: Is a directory")]
    for env, says in cases:
        started = run("run-server.sh", "--port", str(port), env=env)
        assert started.returncode == 2 and says in started.stdout, started.stdout + started.stderr
        assert "Traceback" not in started.stdout + started.stderr
    served = subprocess.run([sys.executable, "-m", "gsmcpd", "serve", "--port", str(port)],
                            env=cases[0][0], cwd=str(REPO), capture_output=True, text=True, timeout=60)
    assert served.returncode == 2 and "Traceback" not in served.stdout + served.stderr
    assert (f"cannot write the pidfile {tmp_path}/afile/x/gsmcpd-{port}.pid: its directory {tmp_path}/afile/x: "
            "Not a directory") in served.stderr


def test_stop_is_not_blocked_by_a_bad_setting_it_does_not_need(tmp_path, stop_at_the_end):
    port = free_port()
    stop_at_the_end(port, tmp_path)
    env = clean_env(GS_MCP_PORT=str(port), GS_MCP_STATE_DIR=str(tmp_path))
    assert run("run-server.sh", env=env).returncode == 0
    conf = tmp_path / "typo.conf"
    conf.write_text("spare_worker = 1\nidle_timeout = abc\n")   # an unknown key, a bad value
    typo = dict(env, GS_MCP_IDLE_TIMEOUT="abc", GS_MCP_TIMEOUT="5", GS_MCP_CONFIG=str(conf))
    try:
        status = subprocess.run([sys.executable, "-m", "gsmcpd", "status", "--config", str(conf)],
                                env=typo, cwd=str(REPO), capture_output=True, text=True, timeout=60)
        stopped = run("stop-server.sh", str(port), env=typo)
    finally:
        run("stop-server.sh", str(port), env=env)   # whatever happened above
    assert status.returncode == 0 and f"port {port}" in status.stdout, status.stdout + status.stderr
    assert stopped.returncode == 0 and f"stopped gsmcpd on port {port}" in stopped.stdout, \
        stopped.stdout + stopped.stderr
    for command, code in (("serve", 2), ("check", 2)):   # these still refuse the typo
        refused = subprocess.run([sys.executable, "-m", "gsmcpd", command, "--config", str(conf)],
                                 env=env, cwd=str(REPO), capture_output=True, text=True, timeout=60)
        assert refused.returncode == code, refused.stdout + refused.stderr
        assert f"spare_worker: {conf} line 1: unknown key" in refused.stdout + refused.stderr
    negative = subprocess.run([sys.executable, "-m", "gsmcpd", "stop", str(port), "--timeout", "-1"],
                              env=env, cwd=str(REPO), capture_output=True, text=True)
    assert negative.returncode == 2 and "must be a finite number of seconds >= 0, got '-1'" in negative.stderr


def test_log_has_the_startup_line_with_trace_state(server):
    text = server["log"].read_text()
    assert f"(host 127.0.0.1, port {server['port']}, pid " in text  # daemon.startup_line
    assert "read-only no; toolsets execution session" in text
    assert "message trace: ON (inbound and outbound) -- bodies capped at 200 chars" in text


def test_status_lists_open_sessions(server):
    port, state = server["port"], server["state"]
    first, second = open_session(port), open_session(port)

    def status():
        out = subprocess.run([sys.executable, "-m", "gsmcpd", "status", str(port), "--json",
                              "--state-dir", str(state)], capture_output=True, text=True,
                             env=server["env"], timeout=30, cwd=REPO)
        assert out.returncode == 0, out.stdout + out.stderr
        return {s["id_prefix"] for s in json.loads(out.stdout)["sessions"]}

    assert {first[:8], second[:8]} <= status()
    assert delete(port, first) == 200
    listed = status()
    assert second[:8] in listed and first[:8] not in listed
    table = subprocess.run([sys.executable, "-m", "gsmcpd", "status", str(port), "--state-dir",
                            str(state)], capture_output=True, text=True, env=server["env"],
                           timeout=30, cwd=REPO)
    assert table.stdout.splitlines()[1].split()[:3] == ["Session", "User", "Pid"]
    assert delete(port, second) == 200


def test_status_into_a_pipe_its_reader_closed_ends_without_a_traceback(server):
    # `gsmcpd status | head -1`: a reader gone before status writes raised BrokenPipeError.
    proc = subprocess.Popen([sys.executable, "-m", "gsmcpd", "status", str(server["port"]),
                             "--state-dir", str(server["state"])], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=server["env"], cwd=REPO)
    proc.stdout.close()   # before it has the reply to write
    err = proc.stderr.read().decode()
    assert proc.wait(30) == 1 and err == "", err


def test_a_traced_body_with_unicode_line_breaks_is_still_one_line(server):
    marker = uuid.uuid4().hex
    body = ('{"jsonrpc":"2.0","id":9,"method":"tools/list","x":"%s a\u0085b\u2028c\u2029d\x1ce"}'
            % marker).encode("utf-8")   # raw in the body, not JSON escapes
    assert post(server["port"], body)[0] == 400
    wait_for(lambda: marker in server["log"].read_text(), "the trace line")
    text = server["log"].read_text()
    (line,) = [line for line in text.splitlines() if marker in line and "--> " in line]
    assert marker + " a\\x85b\\u2028c\\u2029d\\x1ce" in line


def test_trace_lines_for_accepted_forbidden_and_bad_requests(server):
    port = server["port"]
    marker = uuid.uuid4().hex
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {**INITIALIZE["params"], "clientInfo": {"name": marker, "version": "1"}}}
    status, session, _ = post(port, body, headers={"Authorization": "Bearer sekrit-" + marker})
    assert status == 200
    assert post(port, {"jsonrpc": "2.0", "id": 7, "method": "ping", "x": "403" + marker},
                headers={"Origin": "http://evil.example"})[0] == 403
    assert post(port, {"jsonrpc": "2.0", "id": 8, "method": "tools/list",
                       "x": "400" + marker})[0] == 400
    assert post(port, b"{\n\t\"long\": \"" + b"y" * 500 + marker.encode() + b"\"}")[0] == 400
    delete(port, session)

    def lines():
        return [line for line in server["log"].read_text().splitlines() if "--> " in line]

    wait_for(lambda: any("400" + marker in line for line in lines()), "the 400 trace line")
    text = server["log"].read_text()
    assert f"--> POST /mcp session - {len(json.dumps(body))} chars: " \
           f"{json.dumps(body)}"[:200] in text
    assert any('"x": "403' + marker in line and "--> POST /mcp session -" in line
               for line in lines())
    assert any('"x": "400' + marker in line for line in lines())
    assert any('{\\n\\t"long": "yyy' in line and "...(+" in line and " more)" in line
               for line in lines())
    assert "sekrit-" not in text and "Authorization" not in text
    assert any(line.split(" ", 3)[3].startswith("<-- 403 ") for line in text.splitlines()
               if "<-- 403" in line)
    assert f"<-- 200 session {session[:8]}..." in text


@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGUSR1], ids=["HUP", "USR1"])
def test_sighup_or_sigusr1_reopens_a_rotated_log(server, signum):
    # SIGUSR1 as nginx takes it: its default action ended the server, pidfile left behind.
    log, port = server["log"], server["port"]
    pid = int(server["pidfile"].read_text())
    rotated = log.with_name(log.name + "." + signum.name)
    log.rename(rotated)
    os.kill(pid, signum)
    wait_for(log.exists, "the reopened log file")
    session = open_session(port)
    wait_for(lambda: session[:8] in log.read_text(), "a session line in the new log")
    assert f"{signum.name}: log file reopened" in log.read_text()
    assert session[:8] not in rotated.read_text()
    delete(port, session)


def test_a_log_that_cannot_be_reopened_leaves_no_descriptor_open_in_the_daemon(server):
    # A log path that opens for writing and then refuses the seek to its end (here a link to
    # the daemon's own /proc/PID/comm) had left one descriptor open per failed SIGHUP reopen.
    log = server["log"]
    pid = int(server["pidfile"].read_text())
    rotated = log.with_name(log.name + ".unreopenable")
    log.rename(rotated)
    log.symlink_to("/proc/self/comm")
    try:
        for count in range(1, 4):
            os.kill(pid, signal.SIGHUP)
            wait_for(lambda: rotated.read_text().count("SIGHUP: cannot reopen the log file") == count,
                     f"reopen failure {count} in the old log")
        held = [fd for fd in os.listdir(f"/proc/{pid}/fd")
                if os.readlink(f"/proc/{pid}/fd/{fd}") == f"/proc/{pid}/comm"]
        assert held == []
    finally:
        log.unlink()
        os.kill(pid, signal.SIGHUP)   # the log back where the module's other tests read it
        wait_for(log.exists, "the reopened log file")


def test_stop_server_stops_it_and_cleans_up(server):
    port, env = server["port"], server["env"]
    pid = int(server["pidfile"].read_text())
    stopped = run("stop-server.sh", str(port), env=env)
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    assert f"stopped gsmcpd on port {port} (pid {pid})" in stopped.stdout
    assert not server["pidfile"].exists()
    assert port_free(port)
    assert not Path(f"/proc/{pid}").exists() or not Path(f"/proc/{pid}/cmdline").read_bytes()
    again = run("stop-server.sh", str(port), env=env)
    assert again.returncode == 1
    assert f"no gsmcpd running on port {port}" in again.stdout


def test_systemd_ready_only_once_listening_then_stopping(tmp_path):
    name = f"gsmcpd-notify-{uuid.uuid4().hex}"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    listener.bind("\0" + name)
    listener.settimeout(60)
    port = free_port()
    env = clean_env(NOTIFY_SOCKET="@" + name, GS_MCP_STATE_DIR=str(tmp_path))
    proc = subprocess.Popen([sys.executable, "-m", "gsmcpd", "serve", "--port", str(port)],
                            env=env, cwd=REPO, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        ready = listener.recv(4096).decode()
        assert ready.startswith("READY=1\n")
        assert f"MAINPID={proc.pid}" in ready
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass  # accepted: READY came after the listen, not before
        proc.send_signal(signal.SIGTERM)
        assert listener.recv(4096) == b"STOPPING=1"
        assert proc.wait(30) == 0
    finally:
        listener.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "listening on" in proc.stderr.read()
    assert not (tmp_path / f"gsmcpd-{port}.pid").exists()


def test_systemd_unit_verifies(tmp_path):
    from gsmcpd.exitcodes import REFUSED
    unit = (REPO / "systemd" / "gsmcpd@.service").read_text()
    # Not restarted: the status serve exits with when a retry cannot pass (gsmcpd.exitcodes).
    for line in ("Type=notify", "Restart=on-failure", f"RestartPreventExitStatus={REFUSED}",
                 "ExecReload=/bin/kill -HUP $MAINPID",
                 "User=gsmcpd", "EnvironmentFile=-/etc/gsmcpd/gsmcpd.env",
                 "ExecStart=/opt/gsmcpd/.venv/bin/python -m gsmcpd serve --port %i"):
        assert line in unit.splitlines()
    # A daemon that keeps failing with exit 1 is restarted a bounded number of times: the
    # limit is in [Unit], and a start failing within 10 s cannot outlast its window.
    unit_section = unit.split("[Unit]", 1)[1].split("\n[", 1)[0].splitlines()
    assert "StartLimitIntervalSec=300" in unit_section and "StartLimitBurst=25" in unit_section
    restart_sec = int(next(line for line in unit.splitlines() if line.startswith("RestartSec="))[11:])
    assert 25 * (10 + restart_sec) <= 300
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed; the unit's text was checked above")
    instance = tmp_path / "gsmcpd@8000.service"
    instance.write_text(unit.replace("/opt/gsmcpd", str(REPO)))
    result = subprocess.run(["systemd-analyze", "verify", "--man=no", str(instance)],
                            capture_output=True, text=True, timeout=60)
    # An unknown key or one in the wrong section is only a warning naming the file.
    assert result.returncode == 0 and str(instance) not in result.stderr, result.stderr
    # The per-user drop-in, read beside the unit as from gsmcpd@.service.d/: no complaint
    # about it (an unknown key is only a warning naming the file, so one is looked for).
    drop_in = tmp_path / "gsmcpd@.service.d" / "per-user-workers.conf"
    drop_in.parent.mkdir()
    text = (REPO / "systemd" / "per-user-workers.conf").read_text()
    assert "CapabilityBoundingSet=CAP_SETUID CAP_SETGID CAP_KILL" in text.splitlines()
    for extra, complaint in (("", False), ("NoSuchKey=1\n", True)):
        drop_in.write_text(text + extra)
        result = subprocess.run(["systemd-analyze", "verify", "--man=no", str(instance)],
                                capture_output=True, text=True, timeout=60)
        assert result.returncode == 0 and (str(drop_in) in result.stderr) == complaint, result.stderr


# --- install.sh ------------------------------------------------------------------------

def _verified_by_systemd(tmp_path, unit_text):
    """`systemd-analyze verify` of the unit install.sh printed, as instance 8000: nothing
    to say about it (skipped where systemd-analyze is missing: the text was checked)."""
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed; the unit's text was checked above")
    instance = tmp_path / "gsmcpd@8000.service"
    instance.write_text(unit_text)
    verified = subprocess.run(["systemd-analyze", "verify", "--man=no", str(instance)],
                              capture_output=True, text=True, timeout=60)
    assert verified.returncode == 0 and verified.stderr.strip() == "", verified.stderr


@pytest.fixture
def fake_checkout(tmp_path):
    """install.sh and packaging files in a scratch dir, with a .venv whose python only
    records how it was called: the stamp logic without a real pip."""
    for name in ("install.sh", "setup.cfg", "pyproject.toml"):
        shutil.copy(REPO / name, tmp_path / name)
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    fake = bin_dir / "python"
    fake.write_text(f'#!/bin/sh\necho "$*" >> {tmp_path}/calls\n'
                    'case "$*" in *"gsmcpd check"*) echo "OK: fake"; exit 0;; esac\nexit 0\n')
    fake.chmod(0o755)
    return tmp_path


def calls(checkout):
    path = checkout / "calls"
    return path.read_text().splitlines() if path.exists() else []


def test_install_skips_pip_while_the_stamp_matches(fake_checkout):
    first = subprocess.run(["./install.sh"], cwd=fake_checkout, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    assert any("pip install" in call and "-e ." in call for call in calls(fake_checkout))
    count = len(calls(fake_checkout))
    second = subprocess.run(["./install.sh"], cwd=fake_checkout, capture_output=True, text=True)
    assert second.returncode == 0 and "up to date" in second.stdout
    assert not any("-m pip" in call for call in calls(fake_checkout)[count:])   # not the path's "pip"
    with open(fake_checkout / "setup.cfg", "a") as cfg:
        cfg.write("\n# changed\n")
    third = subprocess.run(["./install.sh"], cwd=fake_checkout, capture_output=True, text=True)
    assert third.returncode == 0
    assert any("pip install" in call for call in calls(fake_checkout)[count:])


def test_install_byte_compiles_the_package_installed_or_up_to_date(fake_checkout):
    # Processes that may not write __pycache__ (PYTHONDONTWRITEBYTECODE, a worker's -B and
    # so each deletion's trial import, a service account) compiled every module anew.
    for run in range(2):   # installing, then with the stamp matching
        result = subprocess.run(["./install.sh"], cwd=fake_checkout, capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        assert calls(fake_checkout)[-1] == f"-m compileall -q {fake_checkout}/gsmcpd"
        assert ("up to date" in result.stdout) == (run == 1)


def _bytecode_current(source):
    """Whether imports read `source` from its __pycache__ file as it stands (else they
    compile it, and write nothing under PYTHONDONTWRITEBYTECODE or -B)."""
    try:
        head = Path(importlib.util.cache_from_source(str(source))).read_bytes()[:16]
    except FileNotFoundError:
        return False
    if head[:4] != importlib.util.MAGIC_NUMBER:
        return False
    if int.from_bytes(head[4:8], "little") & 1:   # hash-based (SOURCE_DATE_EPOCH)
        return head[8:16] == importlib.util.source_hash(source.read_bytes())
    status = source.stat()
    return head[8:16] == ((int(status.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little")
                          + (status.st_size & 0xFFFFFFFF).to_bytes(4, "little"))


def test_the_suite_runs_the_package_byte_compiled():
    # conftest compiles it as install.sh does: a checkout that never ran install.sh (a
    # worktree), or whose sources changed since, made every daemon the suite starts
    # compile its modules anew in its router, forkserver and trial imports.
    assert [str(path) for path in sorted((REPO / "gsmcpd").rglob("*.py")) if not _bytecode_current(path)] == []


def test_run_server_finishes_an_install_that_never_completed(fake_checkout):
    # A .venv whose pip install failed or was interrupted has no stamp: run-server.sh
    # installs before it starts, instead of starting without gsmcpd's dependencies.
    shutil.copy(REPO / "run-server.sh", fake_checkout / "run-server.sh")
    result = subprocess.run(["./run-server.sh"], cwd=fake_checkout, capture_output=True,
                            text=True, env=clean_env())
    assert result.returncode == 0, result.stderr
    made = calls(fake_checkout)
    assert any("pip install" in call for call in made) and made[-1] == "-P -m gsmcpd start"
    assert (fake_checkout / ".venv" / ".gsmcpd-install-stamp").exists()
    again = subprocess.run(["./run-server.sh"], cwd=fake_checkout, capture_output=True,
                           text=True, env=clean_env())
    assert again.returncode == 0 and calls(fake_checkout)[len(made):] == ["-P -m gsmcpd start"]


def test_install_check_runs_gsmcpd_check_and_changes_nothing(fake_checkout):
    result = subprocess.run(["./install.sh", "--check"], cwd=fake_checkout,
                            capture_output=True, text=True)
    assert result.returncode == 0 and "OK: fake" in result.stdout
    assert calls(fake_checkout) == ["-P -m gsmcpd check"]
    shutil.rmtree(fake_checkout / ".venv")
    missing = subprocess.run(["./install.sh", "--check"], cwd=fake_checkout,
                             capture_output=True, text=True)
    assert missing.returncode == 1 and "PROBLEM: no .venv" in missing.stdout
    assert not (fake_checkout / ".venv").exists()


def test_install_check_reads_relative_paths_from_the_callers_directory(fake_checkout, tmp_path):
    # As run-server.sh does: GS_MCP_STATE_DIR=state or GS_MCP_CONFIG=my.conf given from
    # elsewhere must name the caller's files, so --check checks what run-server.sh would run.
    fake = fake_checkout / ".venv" / "bin" / "python"
    fake.write_text(f'#!/bin/sh\necho "$PWD $PYTHONPATH $*" >> {fake_checkout}/calls\n'
                    'echo "OK: fake"; exit 0\n')
    caller = tmp_path / "elsewhere"
    caller.mkdir()
    result = subprocess.run([str(fake_checkout / "install.sh"), "--check"], cwd=caller,
                            capture_output=True, text=True)
    assert result.returncode == 0 and "OK: fake" in result.stdout, result.stderr
    cwd, pythonpath, *argv = calls(fake_checkout)[-1].split(" ")
    assert (cwd, argv) == (str(caller), ["-P", "-m", "gsmcpd", "check"])
    assert pythonpath.split(":")[0] == str(fake_checkout)   # its examples/, as run-server.sh


# the whole suite, three test files at a time (pytest-xdist)
SUITE_RUN = "-m pytest -q -n 3 --dist loadfile"


def test_install_test_installs_the_extra_then_runs_pytest(fake_checkout):
    result = subprocess.run(["./install.sh", "--test"], cwd=fake_checkout,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    made = calls(fake_checkout)
    assert any("pip install" in call and "-e .[test]" in call for call in made)
    assert made[-1] == SUITE_RUN
    # the fake checkout has no tests/conformance: the suite's install is attempted and its
    # failure said, and the test run still goes ahead (the conformance tests then fail)
    assert "MCP conformance suite not installed" in result.stderr


def test_install_test_installs_the_conformance_suite_while_pip_runs(fake_checkout):
    # The suite (npm) needs nothing from the venv; installed after pip, it added its whole
    # time to every clean CI run. This pip waits (10 s at most) to see it start.
    suite = fake_checkout / "tests" / "conformance"
    suite.mkdir(parents=True)
    (suite / "install.sh").write_text(f'touch {fake_checkout}/suite-started\n'
                                      'echo "conformance suite: installed in $1"\n')
    (fake_checkout / ".venv" / "bin" / "python").write_text(
        f'#!/bin/sh\ncase "$*" in *"pip install"*)\n'
        f'    i=0; while [ ! -e {fake_checkout}/suite-started ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done\n'
        f'    [ -e {fake_checkout}/suite-started ] && echo "pip saw the suite installing" >> {fake_checkout}/calls;;\n'
        f'esac\necho "$*" >> {fake_checkout}/calls\nexit 0\n')
    result = subprocess.run(["./install.sh", "--test"], cwd=fake_checkout, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "pip saw the suite installing" in calls(fake_checkout)
    assert calls(fake_checkout)[-1] == SUITE_RUN
    # what the suite's install said comes after pip's, before the run, as when they ran in turn
    assert result.stdout.endswith("conformance suite: installed in %s/.cache/conformance\n"
                                  "running the test suite\n" % fake_checkout), result.stdout


def test_install_test_whose_pip_fails_leaves_no_part_of_the_suites_install_running(fake_checkout):
    # Only the job's own shell was killed: the suite's install.sh (npm, in truth) it ran
    # went on behind the failed install, writing into .cache/conformance.
    suite = fake_checkout / "tests" / "conformance"
    suite.mkdir(parents=True)
    (suite / "install.sh").write_text(f'echo $$ > {fake_checkout}/suite-pid\nexec sleep 60\n')
    (fake_checkout / ".venv" / "bin" / "python").write_text(
        f'#!/bin/sh\ncase "$*" in *"pip install"*)\n'
        f'    i=0; while [ ! -s {fake_checkout}/suite-pid ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done\n'
        f'    echo "pip failed" >&2; exit 1;;\nesac\nexit 0\n')
    result = subprocess.run(["./install.sh", "--test"], cwd=fake_checkout, capture_output=True, text=True)
    suite_pid = int((fake_checkout / "suite-pid").read_text())
    try:
        assert result.returncode == 1 and "pip failed" in result.stderr
        assert wait_until(lambda: not pid_alive(suite_pid)), "the suite's install was left running"
    finally:
        if pid_alive(suite_pid):
            os.kill(suite_pid, signal.SIGKILL)


def _odd_checkout(tmp_path, name):
    checkout = tmp_path / name / "gsmcpd"
    (checkout / "systemd").mkdir(parents=True)
    shutil.copy(REPO / "install.sh", checkout / "install.sh")
    shutil.copy(REPO / "systemd" / "gsmcpd@.service", checkout / "systemd" / "gsmcpd@.service")
    (checkout / ".venv" / "bin").mkdir(parents=True)
    (checkout / ".venv" / "bin" / "python").symlink_to(sys.executable)
    return checkout


def test_install_points_the_systemd_unit_at_a_checkout_whose_path_sed_would_misread(tmp_path):
    # `sed "s#/opt/gsmcpd#$ROOT#g"` failed on a `#` (unknown option to s) and put the
    # matched /opt/gsmcpd in place of an `&`; systemd then read a `%` as a specifier
    # (`%i`: the port) and split ExecStart's program at a space.
    checkout = _odd_checkout(tmp_path, "odd#dir&name %i $HOME")
    result = subprocess.run(["./install.sh", "--systemd-unit"], cwd=checkout, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    written = str(checkout).replace("%", "%%")
    argv0 = written.replace("$", "$$")   # systemd expands variables in argv[0] (see below)
    assert f'ExecStart=@"{written}/.venv/bin/python" "{argv0}/.venv/bin/python" -m gsmcpd serve --port %i' in lines
    assert f"WorkingDirectory={written}" in lines
    assert f"Documentation=file://{str(tmp_path).replace('%', '%%')}/odd%%23dir%%26name%%20%%25i%%20%%24HOME" \
           f"/gsmcpd/README.md" in lines
    # systemd finds the program (it says "is not executable" for a path it misread) and
    # has nothing to say about a line (an invalid URL, an unknown specifier).
    _verified_by_systemd(tmp_path, result.stdout)


def test_install_gives_the_program_an_argv0_with_its_dollars_doubled(tmp_path):
    # systemd takes the program's path as written but expands `${NAME}` and `$$` in every
    # word of the command, argv[0] too (execute.c, replace_env_argv): under
    # /srv/a${HOME}b python would run with argv[0] /srv/a/rootb/.venv/bin/python and,
    # finding no venv there (it reads argv[0]), without the venv's packages (pyjwt).
    checkout = _odd_checkout(tmp_path, "a${HOME}b$$c")
    result = subprocess.run(["./install.sh", "--systemd-unit"], cwd=checkout, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    program = f"{checkout}/.venv/bin/python"
    assert (f"ExecStart=@{program} {program.replace('$', '$$')} -m gsmcpd serve --port %i"
            in result.stdout.splitlines())
    _verified_by_systemd(tmp_path, result.stdout)   # it finds the program


@pytest.mark.parametrize("name", ["back\\slash", 'double"quote', "single'quote", "new\nline"])
def test_install_refuses_a_checkout_systemd_cannot_run_from(tmp_path, name):
    # systemd says "Executable name contains special characters" and runs nothing, and a
    # unit line cannot hold a newline. (--systemd asks for the unit before it changes
    # anything; it is not run here, as root it would install one.)
    checkout = _odd_checkout(tmp_path, name)
    result = subprocess.run(["./install.sh", "--systemd-unit"], cwd=checkout, capture_output=True, text=True)
    assert result.returncode == 1 and result.stdout == ""
    assert "its path holds a quote, a backslash or a control character; move the checkout" in result.stderr


# Bytes systemd's utf8_is_valid refuses in a unit line: glibc's iconv took all but the
# Latin-1 byte and the surrogate (systemd-analyze verify: "String is not UTF-8 clean").
@pytest.mark.parametrize("name", [b"latin1-caf\xe9", b"surrogate-\xed\xa0\x80", b"overlong-\xc0\xaf",
                                  b"past-U+10FFFF-\xf4\x90\x80\x80", b"five-bytes-\xf8\x88\x80\x80\x80",
                                  "nonchar-\ufffe".encode(), "nonchar-\ufdd0".encode(),
                                  "nonchar-\U0001ffff".encode(), "nonchar-\U0010ffff".encode()])
def test_install_refuses_a_checkout_whose_path_is_not_utf8_as_systemd_reads_it(tmp_path, name):
    # systemd ignores each unit line that is not UTF-8 ("String is not UTF-8 clean"): the
    # unit installed had no ExecStart= nor WorkingDirectory=, and failed to load.
    checkout = _odd_checkout(tmp_path, os.fsdecode(name))
    result = subprocess.run(["./install.sh", "--systemd-unit"], cwd=checkout, capture_output=True, text=True)
    assert result.returncode == 1 and result.stdout == ""
    assert ("its path is not UTF-8 as systemd reads it (a malformed byte sequence, a code point past "
            "U+10FFFF, a UTF-16 surrogate or a noncharacter such as U+FFFE), and systemd ignores a unit "
            "line that is not; move the checkout") in result.stderr


@pytest.mark.parametrize("name", ["caf\u00e9", "\ufdcf\ufdf0\ufffd", "\U0001fffd\U0010fffd-\U0001f600"])
def test_install_points_the_unit_at_a_checkout_whose_path_is_utf8_next_to_noncharacters(tmp_path, name):
    checkout = _odd_checkout(tmp_path, name)
    result = subprocess.run(["./install.sh", "--systemd-unit"], cwd=checkout, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert f"WorkingDirectory={checkout}" in result.stdout.splitlines()
    _verified_by_systemd(tmp_path, result.stdout)   # no line "not UTF-8 clean"


def _systemd_reads_as_utf8(code_point):
    """systemd's unichar_is_valid (src/basic/utf8.c): what utf8_is_valid takes in a unit line."""
    return not (code_point >= 0x110000 or 0xD800 <= code_point <= 0xDFFF or 0xFDD0 <= code_point <= 0xFDEF
                or code_point & 0xFFFE == 0xFFFE)


def _raw_utf8(code_point):
    """UTF-8's bit layout for any code point below 2**21, surrogates and past U+10FFFF too."""
    if code_point < 0x80:
        return bytes([code_point])
    if code_point < 0x800:
        return bytes([0xC0 | code_point >> 6, 0x80 | code_point & 63])
    if code_point < 0x10000:
        return bytes([0xE0 | code_point >> 12, 0x80 | code_point >> 6 & 63, 0x80 | code_point & 63])
    return bytes([0xF0 | code_point >> 18, 0x80 | code_point >> 12 & 63, 0x80 | code_point >> 6 & 63,
                  0x80 | code_point & 63])


def test_install_reads_utf8_as_systemd_does_at_each_boundary(tmp_path):
    # install.sh's systemd_utf8 against systemd's rule, at every edge of it: each plane's
    # first and last code points, the surrogates', U+FDD0..U+FDEF's, and past U+10FFFF.
    edges = {0x80, 0x7FF, 0x800, 0xD7FF, 0xD800, 0xDFFF, 0xE000, 0xFDCF, 0xFDD0, 0xFDEF, 0xFDF0,
             0x10FFFF, 0x110000, 0x1FFFFF}
    for plane in range(0x20):
        edges |= {plane << 16 | low for low in (0, 1, 0xFFFD, 0xFFFE, 0xFFFF)}
    cases = [(_systemd_reads_as_utf8(point), b"a" + _raw_utf8(point) + b"z") for point in sorted(edges - {0})]
    cases += [(False, bad) for bad in (b"\xc0\xaf", b"\xe0\x9f\xbf", b"\xf0\x8f\xbf\xbf", b"\x80",
                                       b"\xc2", b"\xe2\x82", b"\xf8\x88\x80\x80\x80", b"\xfe", b"\xff")]
    (tmp_path / "cases").write_bytes(b"".join(b"%d\t%s\n" % (wanted, case) for wanted, case in cases))
    function = re.search(r"^systemd_utf8\(\) \{.*?^\}$", (REPO / "install.sh").read_text(), re.S | re.M)[0]
    script = function + '\nwhile IFS=$\'\\t\' read -r want case; do\n' \
        '    systemd_utf8 "$case" && got=1 || got=0\n' \
        '    [[ $got == "$want" ]] || printf "%s wanted %s\\n" "$(printf %s "$case" | od -An -tx1)" "$want"\n' \
        'done < cases\n'
    result = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout == "" and result.stderr == "", result.stdout + result.stderr


def test_install_refuses_a_checkout_whose_path_ends_in_a_space(tmp_path):
    # systemd strips the spaces that end a unit line: WorkingDirectory=/srv/gsmcpd<space>
    # named /srv/gsmcpd, and the service failed to change into it at each start.
    checkout = _odd_checkout(tmp_path, "")
    ends_in_a_space = checkout.with_name("gsmcpd ")
    checkout.rename(ends_in_a_space)
    result = subprocess.run(["./install.sh", "--systemd-unit"], cwd=ends_in_a_space, capture_output=True, text=True)
    assert result.returncode == 1 and result.stdout == ""
    assert "its path ends in a space, which systemd strips from the unit's WorkingDirectory= line" in result.stderr


def test_install_systemd_refuses_without_root(fake_checkout):
    if os.geteuid() == 0:
        command = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                   "bash", "./install.sh", "--systemd"]
        fake_checkout.chmod(0o755)
        fake_checkout.parent.chmod(fake_checkout.parent.stat().st_mode | 0o005)
    else:
        command = ["./install.sh", "--systemd"]
    result = subprocess.run(command, cwd=fake_checkout, capture_output=True, text=True)
    assert result.returncode == 1
    assert "--systemd needs root" in result.stderr
    assert calls(fake_checkout) == []


@pytest.fixture
def reachable_dir():
    """A scratch directory another user can reach (pytest's own are root's alone)."""
    with tempfile.TemporaryDirectory(prefix="gsmcpd-service-user-") as name:
        os.chmod(name, 0o755)
        yield Path(name)


def test_install_names_what_keeps_the_service_user_from_running_the_venvs_python(reachable_dir):
    # The venv's python links to the python that made it; one in a home directory only
    # its owner may enter makes the unit fail with 203/EXEC, so install.sh names it.
    if os.geteuid() != 0:
        pytest.skip("runs checks as another user: needs root")
    checkout, home = reachable_dir / "checkout", reachable_dir / "home"
    (checkout / "gsmcpd").mkdir(parents=True)
    (checkout / "gsmcpd" / "__init__.py").write_text("")
    for name in ("install.sh", "setup.cfg", "pyproject.toml"):
        shutil.copy(REPO / name, checkout / name)
    python = home / "pyenv" / "bin" / "python3.11"
    python.parent.mkdir(parents=True)
    python.write_text("#!/bin/sh\n")
    python.chmod(0o755)
    (checkout / ".venv" / "bin").mkdir(parents=True)
    (checkout / ".venv" / "bin" / "python3").symlink_to(python)
    (checkout / ".venv" / "bin" / "python").symlink_to("python3")   # as venv makes them

    def check():
        return subprocess.run([str(checkout / "install.sh"), "--check-service-user", "nobody"],
                              capture_output=True, text=True)

    # The unit's own account: this copy's service user is nobody.
    script = checkout / "install.sh"
    script.write_text(script.read_text().replace("\nSERVICE_USER=gsmcpd\n", "\nSERVICE_USER=nobody\n"))
    home.chmod(0o700)
    blocked = check()
    assert blocked.returncode == 1
    assert f"nobody cannot run {checkout}/.venv/bin/python, so the unit would fail at start " \
           f"(status 203/EXEC): {home}: a directory nobody cannot search." in blocked.stderr
    assert "cannot read" not in blocked.stderr   # the checkout itself is readable
    home.chmod(0o755)
    python.chmod(0o744)
    unexecutable = check()
    assert unexecutable.returncode == 1
    assert f"(status 203/EXEC): {python}: not executable by nobody." in unexecutable.stderr
    # Another account than the unit's is one MCP_USER_MAP maps users to (the unit runs as root
    # then): what it cannot run is the trial import of a deletion in their sessions.
    shutil.copy(REPO / "install.sh", script)
    mapped = check()
    assert mapped.returncode == 1
    assert f"nobody cannot run {checkout}/.venv/bin/python, so a deletion's trial import in the sessions of " \
           f"users MCP_USER_MAP maps to nobody is not tried (importNotTried; a unit run as nobody would fail at " \
           f"start, status 203/EXEC): {python}: not executable by nobody." in mapped.stderr
    python.chmod(0o755)
    runs = check()
    assert runs.returncode == 0 and runs.stderr == "", runs.stderr
    assert runs.stdout == f"nobody can read {checkout} and run {checkout}/.venv/bin/python\n"
    checkout.chmod(0o700)
    private = check()
    assert f"nobody cannot read {checkout}; install the checkout somewhere it can" in private.stderr
    assert f"status 203/EXEC): {checkout}: a directory nobody cannot search." in private.stderr


def test_check_service_user_before_the_unit_is_installed_says_what_makes_its_user(fake_checkout):
    # A new checkout's `install.sh --check-service-user` said only "warning: no user gsmcpd".
    if os.geteuid() != 0:
        pytest.skip("--check-service-user needs root")
    absent = f"gsmcpd-t-{uuid.uuid4().hex[:8]}"
    script = fake_checkout / "install.sh"
    script.write_text(script.read_text().replace("\nSERVICE_USER=gsmcpd\n", f"\nSERVICE_USER={absent}\n"))
    unit_user = subprocess.run(["./install.sh", "--check-service-user"], cwd=fake_checkout,
                               capture_output=True, text=True)
    assert unit_user.returncode == 1
    assert unit_user.stderr == f"warning: no user {absent}: sudo ./install.sh --systemd creates it\n"
    mapped = subprocess.run(["./install.sh", "--check-service-user", absent + "x"], cwd=fake_checkout,
                            capture_output=True, text=True)
    assert mapped.returncode == 1 and mapped.stderr == f"warning: no user {absent}x\n"


def test_install_given_a_python_while_the_venv_exists_says_it_keeps_the_venv(fake_checkout):
    # `PYTHON=python3.12 ./install.sh` over a 3.11 .venv said only "gsmcpd package up to
    # date": PYTHON makes a missing .venv alone, and nothing said it went unused.
    fake = fake_checkout / ".venv" / "bin" / "python"
    fake.write_text(fake.read_text().replace("exit 0\n", '[ "$1" = -c ] && echo 3.10\nexit 0\n', 1))
    want = "%d.%d" % sys.version_info[:2]
    env = {**os.environ, "PYTHON": sys.executable}
    other = subprocess.run(["./install.sh"], cwd=fake_checkout, env=env, capture_output=True, text=True)
    assert other.returncode == 0, other.stderr
    assert other.stderr == (f"install.sh: keeping the existing {fake_checkout}/.venv (Python 3.10): "
                            f"PYTHON={sys.executable} (Python {want}) only makes a missing one; remove "
                            f"{fake_checkout}/.venv first to make it with that python\n")
    env.pop("PYTHON")
    assert subprocess.run(["./install.sh"], cwd=fake_checkout, env=env, capture_output=True,
                          text=True).stderr == ""   # none asked for
    fake.write_text(fake.read_text().replace("echo 3.10", f"echo {want}"))
    same = subprocess.run(["./install.sh"], cwd=fake_checkout, env={**env, "PYTHON": sys.executable},
                          capture_output=True, text=True)
    assert same.returncode == 0 and same.stderr == ""


def test_unknown_install_option(fake_checkout):
    result = subprocess.run(["./install.sh", "--frobnicate"], cwd=fake_checkout,
                            capture_output=True, text=True)
    assert result.returncode == 1 and "unknown option: --frobnicate" in result.stderr


def test_install_help_works_when_called_by_a_relative_path_from_elsewhere(fake_checkout):
    # install.sh cds into the checkout; its usage must still find its own text there.
    relative = os.path.join(fake_checkout.name, "install.sh")
    helped = subprocess.run([relative, "--help"], cwd=fake_checkout.parent,
                            capture_output=True, text=True)
    assert helped.returncode == 0 and "./install.sh --check" in helped.stdout, helped.stderr
    unknown = subprocess.run([relative, "--frobnicate"], cwd=fake_checkout.parent,
                             capture_output=True, text=True)
    assert unknown.returncode == 1 and "unknown option: --frobnicate" in unknown.stderr


def test_run_server_reinstalls_when_the_packaging_files_changed(fake_checkout):
    # A pull that changes setup.cfg or pyproject.toml (new dependencies) leaves a stamp
    # that no longer matches: run-server.sh installs again, and says why, before starting.
    shutil.copy(REPO / "run-server.sh", fake_checkout / "run-server.sh")
    installed = subprocess.run(["./install.sh"], cwd=fake_checkout, capture_output=True, text=True)
    assert installed.returncode == 0, installed.stderr

    def start():
        before = len(calls(fake_checkout))
        result = subprocess.run(["./run-server.sh"], cwd=fake_checkout, capture_output=True,
                                text=True, env=clean_env())
        assert result.returncode == 0, result.stderr
        return result, calls(fake_checkout)[before:]

    current, made = start()   # the stamp matches: no pip, nothing said
    assert made == ["-P -m gsmcpd start"] and current.stdout == current.stderr == ""
    for name in ("setup.cfg", "pyproject.toml"):
        with open(fake_checkout / name, "a") as packaging:
            packaging.write("\n# a dependency changed\n")
        changed, made = start()
        assert changed.stderr == ("setup.cfg or pyproject.toml changed since the last install: "
                                  "running ./install.sh first\n")
        assert [call for call in made if "pip" in call] == [
            "-m pip install --quiet --disable-pip-version-check --no-build-isolation -e ."]
        assert made[-1] == "-P -m gsmcpd start" and "installing gsmcpd (base)" in changed.stdout
        again, made = start()
        assert made == ["-P -m gsmcpd start"] and again.stdout == again.stderr == ""


def _checkout_with_sources(fake_checkout):
    """fake_checkout with run-server.sh and a small gsmcpd/ whose python really byte-compiles
    (only `-m compileall` runs the real one), installed: its stamp current, its .pyc fresh."""
    shutil.copy(REPO / "run-server.sh", fake_checkout / "run-server.sh")
    fake = fake_checkout / ".venv" / "bin" / "python"
    fake.write_text(fake.read_text().replace(
        "exit 0\n", f'case "$*" in *"-m compileall "*) exec {sys.executable} "$@";; esac\nexit 0\n', 1))
    (fake_checkout / "gsmcpd" / "sub").mkdir(parents=True)
    for name in ("__init__.py", "sub/__init__.py", "sub/tools.py"):
        (fake_checkout / "gsmcpd" / name).write_text("VALUE = 1\n")
    installed = subprocess.run(["./install.sh"], cwd=fake_checkout, capture_output=True, text=True)
    assert installed.returncode == 0, installed.stderr
    return sorted((fake_checkout / "gsmcpd").rglob("*.py"))


def _as_a_pull_changes(source):
    """`source` rewritten, its size and mtime (whole seconds, as .pyc headers hold it) new."""
    source.write_text(source.read_text() + "VALUE += 1\n")
    later = source.stat().st_mtime + 10
    os.utime(source, (later, later))
    return source


def test_run_server_byte_compiles_what_a_pull_changed_quietly(fake_checkout):
    # The stamp current (setup.cfg untouched), run-server.sh compiled nothing: each start's
    # router, forkserver and trial imports compiled the changed modules anew.
    sources = _checkout_with_sources(fake_checkout)
    assert all(map(_bytecode_current, sources))
    changed = _as_a_pull_changes(fake_checkout / "gsmcpd" / "sub" / "tools.py")
    before = len(calls(fake_checkout))
    started = subprocess.run(["./run-server.sh"], cwd=fake_checkout, capture_output=True,
                             text=True, env=clean_env())
    assert started.returncode == 0 and started.stdout == started.stderr == ""
    assert calls(fake_checkout)[before:] == [f"-P -m compileall -q {fake_checkout}/gsmcpd", "-P -m gsmcpd start"]
    assert [path for path in sources if not _bytecode_current(path)] == []


def test_run_server_byte_compiles_with_the_standard_compileall_from_any_directory(fake_checkout, tmp_path):
    # Run from a directory holding a compileall.py (or a package of that name), `python -m
    # compileall` ran that one, the caller's directory first on its path: the start runs
    # `-P -m gsmcpd` for the same reason.
    sources = _checkout_with_sources(fake_checkout)
    changed = _as_a_pull_changes(fake_checkout / "gsmcpd" / "sub" / "tools.py")
    caller = tmp_path / "caller"
    caller.mkdir()
    (caller / "compileall.py").write_text(f"open({str(caller / 'ran')!r}, 'w').close()\n")
    started = subprocess.run([str(fake_checkout / "run-server.sh")], cwd=caller, capture_output=True,
                             text=True, env=clean_env())
    assert started.returncode == 0 and started.stdout == started.stderr == "", started.stderr
    assert not (caller / "ran").exists()
    assert _bytecode_current(changed) and all(map(_bytecode_current, sources))


def test_run_server_starts_quietly_from_a_checkout_it_cannot_write(fake_checkout, reachable_dir):
    # The systemd unit's account, or any other: nothing compiled (nor tried), nothing said.
    checkout = reachable_dir / "checkout"
    shutil.copytree(fake_checkout, checkout)
    checkout.chmod(0o755)
    fake = checkout / ".venv" / "bin" / "python"
    fake.write_text(fake.read_text().replace(str(fake_checkout), str(checkout)))
    sources = _checkout_with_sources(checkout)
    changed = _as_a_pull_changes(checkout / "gsmcpd" / "sub" / "tools.py")
    (checkout / "calls").write_text("")
    (checkout / "calls").chmod(0o666)   # the fake python's record, by the account below
    if os.geteuid() == 0:   # root writes whatever the modes say: run as nobody
        as_other = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    else:
        as_other = []
        for directory in (checkout / "gsmcpd", checkout / "gsmcpd" / "sub"):
            directory.chmod(0o555)
    try:
        started = subprocess.run([*as_other, "bash", "./run-server.sh"], cwd=checkout,
                                 capture_output=True, text=True, env=clean_env())
    finally:
        for directory in (checkout / "gsmcpd", checkout / "gsmcpd" / "sub"):
            directory.chmod(0o755)
    assert started.returncode == 0 and started.stdout == started.stderr == "", started.stderr
    assert calls(checkout) == ["-P -m gsmcpd start"]
    assert [path for path in sources if not _bytecode_current(path)] == [changed]


def test_install_stamp_ok_says_whether_the_install_is_current(fake_checkout):
    def stamp_ok():
        result = subprocess.run(["./install.sh", "--stamp-ok"], cwd=fake_checkout,
                                capture_output=True, text=True)
        assert result.stdout == result.stderr == ""
        return result.returncode

    stamp = fake_checkout / ".venv" / ".gsmcpd-install-stamp"
    assert stamp_ok() == 1 and not stamp.exists()   # never installed
    subprocess.run(["./install.sh", "--test"], cwd=fake_checkout, capture_output=True)
    assert stamp.read_text().endswith(" test\n") and stamp_ok() == 0   # test covers base
    subprocess.run(["./install.sh"], cwd=fake_checkout, capture_output=True)
    assert stamp_ok() == 0
    with open(fake_checkout / "pyproject.toml", "a") as packaging:
        packaging.write("\n# changed\n")
    assert stamp_ok() == 1
    subprocess.run(["./install.sh"], cwd=fake_checkout, capture_output=True)
    assert stamp.read_text().endswith(" base\n") and stamp_ok() == 0
    stamp.write_text("garbage\n")
    assert stamp_ok() == 1
    shutil.rmtree(fake_checkout / ".venv")
    assert stamp_ok() == 1 and not (fake_checkout / ".venv").exists()


def test_a_venv_link_to_nothing_is_no_venv_not_another_accounts(fake_checkout):
    # A .venv link whose target was removed (a worktree's link to a deleted venv) is
    # reachable by every account and there is nothing behind it: it was called "another
    # account's, and root cannot run it: run this as that account (or root)".
    for script in ("run-server.sh", "stop-server.sh"):
        shutil.copy(REPO / script, fake_checkout / script)
    shutil.rmtree(fake_checkout / ".venv")
    (fake_checkout / ".venv").symlink_to(fake_checkout / "removed-venv")
    for argv, said in ((["stop-server.sh"], f"stop-server.sh: no {fake_checkout}/.venv; nothing was started"),
                       (["install.sh", "--check"], "PROBLEM: no .venv; run ./install.sh")):
        result = subprocess.run(["bash", f"./{argv[0]}", *argv[1:]], cwd=fake_checkout,
                                capture_output=True, text=True, env={**clean_env(), "PYTHON": "false"})
        assert result.returncode == 1 and said in result.stdout + result.stderr, result
        assert "another account's" not in result.stdout + result.stderr


@pytest.mark.parametrize("private", ["its python", "the .venv a link into a home"])
def test_the_scripts_run_by_an_account_that_cannot_run_the_venvs_python_say_so(fake_checkout, private):
    # Another account's checkout, whose .venv python links into a home only its owner may
    # enter (or whose .venv is such a link): not "no .venv yet" (and an attempt to make one
    # over it), but what is wrong.
    if os.geteuid() != 0:
        pytest.skip("needs root, to run the scripts as another account")
    checkout = Path(tempfile.mkdtemp(prefix="checkout-"))   # in /tmp, which every account may search
    home = Path(tempfile.mkdtemp(prefix="home-"))   # 0700: root's alone
    try:
        shutil.copytree(fake_checkout, checkout, dirs_exist_ok=True)
        for script in ("run-server.sh", "stop-server.sh"):
            shutil.copy(REPO / script, checkout / script)
        venv_python = checkout / ".venv" / "bin" / "python"
        if private == "its python":
            venv_python.chmod(0o700)   # root's alone
        else:
            (checkout / ".venv").rename(home / "venv")
            (checkout / ".venv").symlink_to(home / "venv")
        checkout.chmod(0o755)
        for argv in (["run-server.sh"], ["stop-server.sh"], ["install.sh", "--check"]):
            result = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                                     "bash", f"./{argv[0]}", *argv[1:]], cwd=checkout,
                                    capture_output=True, text=True, env={**clean_env(), "PYTHON": "false"})
            said = result.stdout + result.stderr
            assert result.returncode == 1, said
            assert f"{venv_python} is another account's, and nobody cannot run it: run this as " \
                "that account (or root), or from a checkout of your own" in said, said
        assert calls(checkout) == []
    finally:
        shutil.rmtree(checkout)
        shutil.rmtree(home)


def test_install_systemd_where_systemd_is_not_running_installs_and_says_so(fake_checkout, tmp_path_factory):
    # A container or chroot has systemctl but no systemd running: the install did its
    # work, then failed at `systemctl daemon-reload` ("System has not been booted with
    # systemd", exit 1) without saying how to start the unit.
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("creates the service user and writes /etc: needs root, in a mount namespace of its own")
    etc = tmp_path_factory.mktemp("root") / "etc"
    try:
        subprocess.run(["cp", "-a", "/etc", str(etc)], check=True)
        (fake_checkout / "systemd").mkdir()
        shutil.copy(REPO / "systemd" / "gsmcpd@.service", fake_checkout / "systemd" / "gsmcpd@.service")
        # /etc is the copy, and /run/systemd (where a running systemd says so) hidden: nothing
        # of the host's is written, on a host running systemd too.
        script = (f"mount --bind {etc} /etc && if [ -d /run/systemd ]; then mount -t tmpfs none /run/systemd; fi "
                  "&& ./install.sh --systemd && ./install.sh --systemd")
        result = subprocess.run(["unshare", "--mount", "sh", "-c", script], cwd=fake_checkout,
                                capture_output=True, text=True, timeout=120)
        if "unshare failed" in result.stderr or "mount: " in result.stderr:
            pytest.skip(f"no mount namespace here: {result.stderr.strip()}")
        assert result.returncode == 0, result.stdout + result.stderr
        assert "Failed to connect to bus" not in result.stderr
        said = result.stdout.splitlines()
        assert said.count("created system user gsmcpd") == 1 and said.count(
            "installed /etc/systemd/system/gsmcpd@.service") == 1, said
        started = [line for line in said if "systemctl enable --now gsmcpd@8000" in line]
        assert len(started) == 2 and all("systemd is not running here" in line for line in started), said
        assert "ExecStart=" in (etc / "systemd" / "system" / "gsmcpd@.service").read_text()
        assert "gsmcpd:" not in Path("/etc/passwd").read_text()
    finally:
        shutil.rmtree(etc, ignore_errors=True)   # a copy of /etc/shadow among it
