"""`python -m gsmcpd` as a user meets it: refusals, check, status without a server, cert."""

import contextlib
import json
import os
import pwd
import re
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
from helpers import (REPO, Client, Daemon, free_port, local_account, local_group, open_session, pid_alive,
                     searchable_dir, unwritable_dir, wait_for_port, wait_until)

REPO = Path(__file__).resolve().parent.parent


STARTED = re.compile(r"gsmcpd listening on \S+ \(pid (\d+)\)")
_started_pids = []   # every daemon a `start` here left running, stopped after its test


def gsmcpd(*args, env=None, run_by=(), cwd=REPO):
    """`python -m gsmcpd *args`; `run_by`: a command it is run by (nice -n 15)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("GS_MCP_", "MCP_"))}
    result = subprocess.run([*run_by, sys.executable, "-m", "gsmcpd", *args], cwd=cwd, timeout=60,
                            env={**base, **(env or {})}, capture_output=True, text=True)
    started = STARTED.search(result.stdout) if args[:1] == ("start",) else None
    if started:
        _started_pids.append(int(started.group(1)))
    return result


@pytest.fixture(autouse=True)
def _no_daemon_outlives_its_test():
    """A test expecting `start` to refuse leaked a detached daemon when it started after all
    (as on the code before a fix); one that stops its own is not signalled again."""
    yield
    while _started_pids:
        pid = _started_pids.pop()
        try:
            ours = b"gsmcpd" in Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:   # stopped already
            continue
        if ours:
            os.kill(pid, signal.SIGTERM)
            wait_until(lambda: not pid_alive(pid))


def test_a_refused_configuration_exits_2_naming_the_key(tmp_path):
    result = gsmcpd("serve", "--state-dir", str(tmp_path), env={"GS_MCP_READ_ONLY": "1"})
    assert result.returncode == 2
    assert result.stderr.strip() == \
        "gsmcpd: configuration refused: GS_MCP_READ_ONLY: unknown GS_MCP_* environment variable; " \
        "did you mean GS_MCP_READONLY?"
    result = gsmcpd("serve", "--state-dir", str(tmp_path), env={"GS_MCP_AUTH": "1", "MCP_WRTIE_SCOPE": "mcp:write"})
    assert result.returncode == 2
    assert result.stderr.strip() == "gsmcpd: configuration refused: MCP_WRTIE_SCOPE: unknown MCP_* environment " \
        "variable; did you mean MCP_WRITE_SCOPE?"
    result = gsmcpd("serve", "--state-dir", str(tmp_path), env={
        "GS_MCP_AUTH": "1", "MCP_ISSUER": "https://admin:s3cret@idp.example", "MCP_AUDIENCE": "x"})
    assert result.returncode == 2 and "refused: issuer: must not carry a user name or password" in result.stderr
    assert "s3cret" not in result.stderr + result.stdout
    result = gsmcpd("start", "--port", "80800", "--state-dir", str(tmp_path))
    assert result.returncode == 2 and "refused: port: must be between 1 and 65535" in result.stderr
    result = gsmcpd("start", "--state-dir", str(tmp_path), env={"GS_MCP_MAX_BODY": "1"})   # every request 413
    assert result.returncode == 2 and "refused: max_body: 1 bytes is less than" in result.stderr, result.stderr
    assert not list(tmp_path.iterdir())  # nothing was started or written
    conf = tmp_path.parent / "bad.conf"
    conf.write_text("# site\nreadonly = maybe\n")   # a knob with a flag of its own, not given
    result = gsmcpd("serve", "--config", str(conf), "--state-dir", str(tmp_path))
    assert result.returncode == 2 and f"refused: readonly: {conf} line 2: expected a boolean" in result.stderr
    conf = tmp_path.parent / "typo.conf"
    conf.write_text("prot = 8931\n")
    result = gsmcpd("start", "--config", str(conf), "--state-dir", str(tmp_path))
    assert result.returncode == 2
    assert result.stderr.strip() == f"gsmcpd: configuration refused: prot: {conf} line 1: unknown key; did you mean port?"
    assert not list(tmp_path.iterdir())


def test_a_key_set_twice_in_the_conf_file_is_refused_by_start_and_check_naming_both_lines(tmp_path):
    conf = tmp_path.parent / "twice.conf"
    conf.write_text(f"port = {free_port()}\nstate_dir = {tmp_path}\nreadonly = yes\nport = {free_port()}\n")
    said = f"port: set twice in {conf} (lines 1 and 4): keep one of them"
    started = gsmcpd("start", "--config", str(conf))
    assert started.returncode == 2
    assert started.stderr.strip() == f"gsmcpd: configuration refused: {said}"
    assert not list(tmp_path.iterdir())   # nothing was started or written
    checked = gsmcpd("check", "--config", str(conf))
    assert checked.returncode == 2
    assert checked.stdout.splitlines()[-1] == f"PROBLEM: config: {said}"


def test_a_zero_idle_timeout_is_refused_naming_it_and_the_word_for_never(tmp_path):
    result = gsmcpd("start", "--port", str(free_port()), "--state-dir", str(tmp_path),
                    env={"GS_MCP_IDLE_TIMEOUT": "0"})
    assert result.returncode == 2
    assert result.stderr.strip() == "gsmcpd: configuration refused: idle_timeout: " \
        "must be greater than 0 (use none for no limit)"
    assert not list(tmp_path.iterdir())  # nothing was started or written


def test_a_worker_memory_past_what_setrlimit_takes_is_refused_before_start(tmp_path):
    # It was taken, and start failed with the spawner's OverflowError in the log.
    result = gsmcpd("start", "--port", str(free_port()), "--state-dir", str(tmp_path),
                    env={"GS_MCP_WORKER_MEMORY": "99999999999999999999999"})
    assert result.returncode == 2
    assert result.stderr.strip() == "gsmcpd: configuration refused: worker_memory: must be at most " \
        "9223372036854775807 bytes (8 EiB, the largest data limit the kernel takes; none for no limit), " \
        "got '99999999999999999999999'"
    assert not list(tmp_path.iterdir())  # nothing was started or written


def test_auth_settings_the_router_would_refuse_are_refused_before_start(tmp_path):
    # Both were taken, and start failed after the fork: exit 1, a ValueError in the log.
    jwks = tmp_path.parent / "jwks.json"
    jwks.write_text('{"keys": []}')
    auth = {"GS_MCP_AUTH": "1", "MCP_ISSUER": "https://idp.example", "MCP_AUDIENCE": "https://mcp.example/mcp",
            "MCP_JWKS_FILE": str(jwks)}
    for env, said in (({"MCP_USERID_CLAIM": ""}, "userid_claim: empty: name the token claim that names "
                       "the user (sub when unset)"),
                      ({"MCP_AUDIENCE": "https://mcp.example/mcp?t=1"}, "audience: resource must have no query "
                       "or fragment, got 'https://mcp.example/mcp?t=1' (an http(s) audience is the resource "
                       "published when resource_url is unset)")):
        result = gsmcpd("start", "--port", str(free_port()), "--state-dir", str(tmp_path), env={**auth, **env})
        assert result.returncode == 2
        assert result.stderr.strip() == f"gsmcpd: configuration refused: {said}"
        assert not list(tmp_path.iterdir())  # nothing was started or written


def test_a_server_name_or_image_path_that_is_not_utf8_is_refused_before_start(tmp_path):
    # Neither can be sent to a worker in a frame: the daemon started, and every session's
    # start failed (500, a worker claimed and killed, two tracebacks).
    name = gsmcpd("start", "--port", str(free_port()), "--state-dir", str(tmp_path),
                  env={"GS_MCP_SERVER_NAME": os.fsdecode(b"caf\xe9")})
    assert name.returncode == 2
    assert name.stderr.strip() == "gsmcpd: configuration refused: server_name: not UTF-8 text: 'caf\\udce9'"
    odd = str(tmp_path / os.fsdecode(b"caf\xe9"))
    state = gsmcpd("start", "--port", str(free_port()), "--state-dir", odd)
    assert state.returncode == 2
    assert state.stderr.strip().startswith(
        f"gsmcpd: configuration refused: state_dir: {odd + '/image'!r} is not UTF-8, as the image's path must be")
    assert not list(tmp_path.iterdir())  # nothing was started or written


def test_a_scope_no_challenge_can_list_is_refused_before_start(tmp_path):
    # The daemon started, and every 401 and 403 (which list the scopes) was a 500.
    result = gsmcpd("start", "--port", str(free_port()), "--state-dir", str(tmp_path),
                    env={"GS_MCP_AUTH": "1", "MCP_ISSUER": "https://idp.example", "MCP_AUDIENCE": "gsmcpd",
                         "MCP_REQUIRED_SCOPES": "mcp:use café"})
    assert result.returncode == 2
    assert result.stderr.strip() == ("gsmcpd: configuration refused: required_scopes: 'café' is not an "
                                     "OAuth scope, which is printable ASCII without a quote or backslash "
                                     "(RFC 6749 3.3)")
    assert not list(tmp_path.iterdir())  # nothing was started or written


def test_a_lifetime_knob_that_cannot_be_off_and_a_probe_after_the_deadline_are_refused_once_each(tmp_path):
    started = gsmcpd("start", "--port", str(free_port()), "--state-dir", str(tmp_path),
                     env={"GS_MCP_PROBE_AFTER": "none"})
    assert started.returncode == 2
    assert started.stderr.strip() == "gsmcpd: configuration refused: probe_after: cannot be none: " \
        "it must be a number of seconds"
    assert not list(tmp_path.iterdir())
    checked = gsmcpd("check", "--port", str(free_port()), "--state-dir", str(tmp_path),
                     env={"GS_MCP_IDLE_TIMEOUT": "1800", "GS_MCP_PROBE_AFTER": "1800"})
    assert checked.returncode == 2
    assert checked.stdout.splitlines()[-1] == "PROBLEM: config: probe_after: " \
        "must be less than GS_MCP_IDLE_TIMEOUT (idle_timeout), or the probe never runs: 1800 >= 1800"


def test_digits_grouped_with_an_underscore_are_refused_by_start_and_check(tmp_path):
    conf = tmp_path.parent / "grouped.conf"
    conf.write_text(f"state_dir = {tmp_path}\nidle_timeout = 1_800\n")
    said = f"idle_timeout: {conf} line 2: expected a number of seconds, got '1_800' " \
        "(digits are not grouped with _: write 1800)"
    started = gsmcpd("start", "--config", str(conf), "--port", str(free_port()))
    assert started.returncode == 2
    assert started.stderr.strip() == f"gsmcpd: configuration refused: {said}"
    assert not list(tmp_path.iterdir())
    checked = gsmcpd("check", "--config", str(conf), "--port", str(free_port()))
    assert checked.returncode == 2
    assert checked.stdout.splitlines()[-1] == f"PROBLEM: config: {said}"
    checked = gsmcpd("check", "--port", "8_001", "--state-dir", str(tmp_path))   # a flag alike
    assert checked.returncode == 2
    assert checked.stdout.splitlines()[-1] == "PROBLEM: config: port: expected an integer, got '8_001' " \
        "(digits are not grouped with _: write 8001)"


def test_check_refuses_a_jwt_leeway_of_a_day_naming_the_knob_the_value_and_the_range(tmp_path):
    checked = gsmcpd("check", "--port", str(free_port()), "--state-dir", str(tmp_path),
                     env={"MCP_JWT_LEEWAY": "86400"})
    said = ("jwt_leeway: must be between 0 and 300 seconds (the clock skew between this host and the "
            "issuer's; more accepts tokens that long expired), got '86400'")
    assert checked.returncode == 2
    assert checked.stdout.splitlines() == [f"config         refused: {said}", f"PROBLEM: config: {said}"]


def test_a_port_in_use_exits_1_for_a_retry_and_a_refused_setting_2_by_serve_start_and_check(tmp_path):
    # Every refusal exited 1 once serve had begun (a state directory, a certificate, the
    # TMPDIR), so the unit's Restart=on-failure retried them every 2 s, forever.
    with socket.create_server(("127.0.0.1", 0)) as held:
        port = str(held.getsockname()[1])
        where = ("--port", port, "--state-dir", str(tmp_path / "state"))
        served = gsmcpd("serve", *where)
        assert served.returncode == 1 and f"ERROR port {port} on 127.0.0.1 is already in use" in served.stderr
        started = gsmcpd("start", *where)
        assert (started.returncode, started.stdout) == (
            1, f"port {port} on 127.0.0.1 is already in use by another process (not a gsmcpd with a "
               f"pidfile in {tmp_path / 'state'})\n")
        checked = gsmcpd("check", *where)
        assert (checked.returncode, checked.stdout.splitlines()[-1]) == (1, "PROBLEM: port: already in use")
        # a refused setting besides: the retry cannot pass, whatever else may
        cert = tmp_path / "cert.pem"
        cert.write_text("not a certificate\n")
        tls = {"GS_MCP_TLS_CERT": str(cert), "GS_MCP_TLS_KEY": str(cert)}
        checked = gsmcpd("check", *where, env=tls)
        assert checked.returncode == 2, checked.stdout
        assert checked.stdout.splitlines()[-1] == "PROBLEM: port: already in use"   # the first named
        assert "   <-- tls_cert/tls_key: cannot load TLS certificate" in checked.stdout
    port = str(free_port())
    where = ("--port", port, "--state-dir", str(tmp_path / "state"))
    for command in ("serve", "start"):
        refused = gsmcpd(command, *where, env=tls)
        assert refused.returncode == 2, refused.stdout + refused.stderr
        assert "tls_cert/tls_key: cannot load TLS certificate" in refused.stdout + refused.stderr


def test_every_option_of_every_command_says_what_it_is_and_its_environment_name():
    import argparse
    from gsmcpd.config import KNOBS_BY_KEY
    subcommands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    for name, sub in subcommands.choices.items():
        for action in sub._actions:
            if not action.option_strings or action.help in ("==SUPPRESS==", argparse.SUPPRESS) \
                    or action.dest == "help":
                continue
            assert action.help, f"{name} {action.option_strings[0]} has no help"
            env = "GS_MCP_CONFIG" if action.dest == "config" else \
                KNOBS_BY_KEY[action.dest].env if action.dest in KNOBS_BY_KEY else None
            if env:
                assert env in action.help, f"{name} {action.option_strings[0]}: {action.help!r}"


def test_stop_help_names_the_state_directory_setting_and_its_default():
    result = gsmcpd("stop", "--help")
    assert result.returncode == 0
    assert "GS_MCP_STATE_DIR, default var/ in the checkout" in " ".join(result.stdout.split())


def test_the_command_list_says_status_shows_a_log_file_refusing_writes():
    # status shows it (ae93cb1): a detached daemon has no stderr to say it on.
    assert "say if its log file refuses writes" in " ".join(build_parser().format_help().split())


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


def test_check_reports_a_refused_configuration_as_the_problem(tmp_path):
    result = gsmcpd("check", "--host", "0.0.0.0", "--state-dir", str(tmp_path))
    assert result.returncode == 2
    assert result.stdout.splitlines()[-1] == (
        "PROBLEM: config: host: 0.0.0.0 is not a loopback address; a network-facing server "
        "needs auth (GS_MCP_AUTH=1)")


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


def test_start_prints_the_warnings_its_server_and_its_worker_spawner_log_as_they_start_once_each(tmp_path):
    # They reached the log file alone: ./run-server.sh never showed a key every account
    # may read, nor a TMPDIR Python passed over, though check and serve say them. The
    # spawner is another process, logging to the file alone (its stderr): a start run
    # niced past what GS_MCP_WORKER_NICE can add said nothing of workers running at the
    # router's priority, or nearly. (One start for both.)
    from idp import CertAuthority
    not_a_dir = tmp_path / "tmpfile"
    not_a_dir.write_text("")
    port = str(free_port())
    env = {"TMPDIR": str(not_a_dir), "GS_MCP_STATE_DIR": str(tmp_path / "state"), "GS_MCP_SPARE_WORKERS": "1"}
    passed_over = (f"TMPDIR {not_a_dir} is not a directory {pwd.getpwuid(os.geteuid()).pw_name} can write "
                   "in, so temporary files go in /tmp")
    ours = min(19, os.getpriority(os.PRIO_PROCESS, 0) + 15)
    said = f"workers run {19 - ours} nicer than the router, not 10: nice 19 is the lowest priority"
    with searchable_dir("gsmcpd-key-") as keys:
        cert, key = CertAuthority(keys).issue("server")
        key.chmod(0o644)
        readable = (f"tls_key {key} is readable by every account (mode 0644): any local account's code "
                    "(each mapped user's, with MCP_USER_MAP) can read the server's private key; make it 0600")
        started = gsmcpd("start", "--port", port, run_by=("nice", "-n", "15"),
                         env={**env, "GS_MCP_TLS_CERT": str(cert), "GS_MCP_TLS_KEY": str(key),
                              "GS_MCP_WORKER_NICE": "10"})
        try:
            assert started.returncode == 0, started.stdout + started.stderr
            # each once: the spawner's not also as one of serve's own lines
            assert sorted(started.stderr.splitlines()) == sorted(
                [f"gsmcpd: warning: {passed_over}", f"gsmcpd: warning: {readable}",
                 f"gsmcpd: warning: {said}"]), started.stderr
            assert started.stdout.startswith(f"gsmcpd listening on https://127.0.0.1:{port}/mcp (pid ")
            logged = (tmp_path / "state" / f"gsmcpd-{port}.log").read_text()
            assert f"WARNING {passed_over}\n" in logged and f"WARNING {readable}\n" in logged   # the log keeps them
            # and the spawner's as the spawner wrote it: each line names its daemon
            serving = STARTED.search(started.stdout).group(1)
            assert re.search(r"gsmcpd-worker\[\d+\] of gsmcpd\[%s\] WARNING " % serving + re.escape(said), logged)
        finally:
            assert gsmcpd("stop", port, env=env).returncode == 0
    # a start that fails: the warnings before its refusal, which is said once, on stdout
    image = tmp_path / "image.py"
    image.write_text("")
    refused = gsmcpd("start", "--port", port, "--image", str(image), env=env)
    assert refused.returncode == 2
    assert refused.stderr == f"gsmcpd: warning: {passed_over}\n"
    assert refused.stdout.startswith(f"gsmcpd failed to start: image {image} is not a directory (log: ")


def test_a_start_prints_only_its_own_spawners_warnings_from_a_log_file_another_daemon_shares(tmp_path):
    # Two daemons, two ports, one GS_MCP_LOG_FILE: a start printed what the other daemon's
    # spawner wrote to the file while it started, as if its own. Here the second starts
    # whole while the first is held (SIGSTOP) between reading the file's end and its READY.
    log_file, state = tmp_path / "shared.log", tmp_path / "state"
    first_port, second_port = str(free_port()), str(free_port())
    base = {k: v for k, v in os.environ.items() if not k.startswith(("GS_MCP_", "MCP_"))}
    env = {**base, "GS_MCP_LOG_FILE": str(log_file), "GS_MCP_STATE_DIR": str(state),
           "GS_MCP_SPARE_WORKERS": "1"}
    ours = min(19, os.getpriority(os.PRIO_PROCESS, 0) + 15)
    said = "workers run %d nicer than the router, not %%d: nice 19 is the lowest priority" % (19 - ours)
    first = subprocess.Popen(["nice", "-n", "15", sys.executable, "-m", "gsmcpd", "start", "--port", first_port],
                             cwd=REPO, env={**env, "GS_MCP_WORKER_NICE": "11"}, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    pidfile = state / f"gsmcpd-{first_port}.pid"
    serving = None
    try:
        # Its pidfile is claimed after it began forwarding, long before its spawner is up.
        assert wait_until(pidfile.exists, timeout=30)
        serving = int(pidfile.read_text())
        os.kill(serving, signal.SIGSTOP)
        with socket.socket() as probe:                    # not yet listening: not READY yet
            assert probe.connect_ex(("127.0.0.1", int(first_port))) != 0
        second = gsmcpd("start", "--port", second_port, run_by=("nice", "-n", "15"),
                        env={**env, "GS_MCP_WORKER_NICE": "10"})
        assert second.returncode == 0, second.stdout + second.stderr
        assert f"gsmcpd: warning: {said % 10}" in second.stderr.splitlines(), second.stderr
        assert re.search(r"gsmcpd-worker\[\d+\] of gsmcpd\[%s\] WARNING " % STARTED.search(second.stdout).group(1)
                         + re.escape(said % 10), log_file.read_text())
        os.kill(serving, signal.SIGCONT)
        out, err = first.communicate(timeout=60)
        assert first.returncode == 0, out + err
        assert f"gsmcpd: warning: {said % 11}" in err.splitlines(), err
        assert said % 10 not in err, err                  # the second daemon's spawner's line
    finally:
        if serving is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(serving, signal.SIGCONT)
        if first.returncode is None:
            first.communicate(timeout=60)
        for port in (first_port, second_port):
            gsmcpd("stop", port, env={"GS_MCP_STATE_DIR": str(state)})


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


def test_serve_start_and_check_take_a_lone_port_as_stop_does_over_the_environment(tmp_path):
    # `run-server.sh 8000` was refused (unrecognized arguments) while stop-server.sh took it.
    port, other = free_port(), free_port()
    checked = gsmcpd("check", str(port), "--state-dir", str(tmp_path), env={"GS_MCP_PORT": str(other)})
    assert f"port           127.0.0.1:{port}\n" in checked.stdout, checked.stdout + checked.stderr
    for command in ("serve", "start", "check"):
        both = gsmcpd(command, str(port), "--port", str(other), "--state-dir", str(tmp_path))
        assert both.returncode == 2
        assert both.stderr.strip() == f"gsmcpd {command}: error: two ports given: {port} and --port {other}"
    assert not any(tmp_path.iterdir())   # refused before a state directory was made


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


def test_a_port_given_both_ways_is_compared_as_a_number(tmp_path):
    # `stop 8000 --port 08000` was refused as two ports: the texts were compared.
    port = free_port()
    stopped = gsmcpd("stop", str(port), "--port", f"0{port}", "--state-dir", str(tmp_path))
    assert stopped.returncode == 1 and stopped.stderr == "", stopped.stderr
    assert stopped.stdout.startswith(f"no gsmcpd running on port {port} "), stopped.stdout
    checked = gsmcpd("check", f"0{port}", "--port", str(port), "--state-dir", str(tmp_path / "state"))
    assert f"port           127.0.0.1:{port}\n" in checked.stdout, checked.stdout + checked.stderr


def test_a_lone_argument_that_is_no_port_is_said_to_have_been_read_as_the_port(tmp_path):
    # `--toolsets core extra` (a value in two words) said "port: expected an integer".
    for command in ("start", "check", "stop"):
        result = gsmcpd(command, "--state-dir", str(tmp_path), "--toolsets", "core", "extra") \
            if command != "stop" else gsmcpd(command, "--state-dir", str(tmp_path), "extra")
        assert (result.returncode, result.stderr.strip()) == (2, f"gsmcpd {command}: error: argument PORT: "
                                                                 "expected an integer, got 'extra' (the one "
                                                                 "argument without a flag is the port)")
    assert not any(tmp_path.iterdir())


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


def test_cert_writes_a_self_signed_pair(tmp_path):
    result = gsmcpd("cert", "--self-signed", str(tmp_path / "certs"))
    assert result.returncode == 0, result.stderr
    cert, key = tmp_path / "certs" / "cert.pem", tmp_path / "certs" / "key.pem"
    assert f"certificate: {cert}" in result.stdout
    assert cert.read_text().startswith("-----BEGIN CERTIFICATE-----")
    assert key.stat().st_mode & 0o077 == 0


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


def test_a_tls_key_that_does_not_match_its_certificate_is_refused_in_one_line(tmp_path):
    from idp import CertAuthority
    ca = CertAuthority(tmp_path / "ca")
    cert, _ = ca.issue("one")
    _, other_key = ca.issue("two")
    env = {"GS_MCP_TLS_CERT": str(cert), "GS_MCP_TLS_KEY": str(other_key)}
    flags = ("--port", str(free_port()), "--state-dir", str(tmp_path / "state"))
    checked = gsmcpd("check", *flags, env=env)
    assert checked.returncode == 2
    assert checked.stdout.splitlines()[-1].startswith(
        "PROBLEM: tls cert: tls_cert/tls_key: cannot load TLS certificate %s / key %s" % (cert, other_key))
    served = gsmcpd("serve", *flags, env=env)
    assert served.returncode == 2
    assert "Traceback" not in served.stderr
    refusal = [line for line in served.stderr.splitlines() if " ERROR " in line]
    assert len(refusal) == 1 and "gsmcpd: tls_cert/tls_key: cannot load TLS certificate" in refusal[0]
    assert "KEY_VALUES_MISMATCH" in refusal[0]


def test_an_image_that_is_a_regular_file_is_refused_as_not_a_directory(tmp_path):
    image = tmp_path / "image.py"
    image.write_text("x = 1\n")
    flags = ("--port", str(free_port()), "--state-dir", str(tmp_path / "state"))
    for how in ({"args": ("--image", str(image))}, {"env": {"GS_MCP_IMAGE": str(image)}}):
        served = gsmcpd("serve", *flags, *how.get("args", ()), env=how.get("env"))
        assert served.returncode == 2 and "Traceback" not in served.stderr, served.stderr
        refusal = [line for line in served.stderr.splitlines() if " ERROR " in line]
        assert len(refusal) == 1 and refusal[0].endswith(f"gsmcpd: image {image} is not a directory")
        checked = gsmcpd("check", *flags, *how.get("args", ()), env=how.get("env"))
        assert checked.returncode == 2
        assert checked.stdout.splitlines()[-1] == "PROBLEM: image: is not a directory"
    started = gsmcpd("start", *flags, "--image", str(image))
    assert started.returncode == 2
    assert started.stdout.startswith(f"gsmcpd failed to start: image {image} is not a directory (log: ")
    assert not (tmp_path / "state" / f"gsmcpd-{flags[1]}.pid").exists()


def test_an_image_it_cannot_write_its_lock_into_is_refused_and_one_with_its_lock_serves(tmp_path):
    flags = ("--port", str(free_port()), "--state-dir", str(tmp_path / "state"))
    why = "is not writable and has no .gsmcpd/lock yet: every session reads the image under that lock"

    def shop(image, lock=False):
        (image / "shop").mkdir()
        (image / "shop" / "__init__.py").write_text("")
        (image / "shop" / "models.py").write_text("class Cart:\n    pass\n")
        if lock:
            (image / ".gsmcpd").mkdir()
            (image / ".gsmcpd" / "lock").touch()

    with unwritable_dir(tmp_path / "bare", shop) as image:
        checked = gsmcpd("check", *flags, "--image", str(image))
        assert checked.returncode == 2
        assert checked.stdout.splitlines()[-1].startswith(f"PROBLEM: image: {why}")
        started = gsmcpd("start", *flags, "--image", str(image), "--readonly")
        assert started.returncode == 2, started.stdout
        assert started.stdout.startswith(f"gsmcpd failed to start: image {image} {why}")
        assert not (tmp_path / "state" / f"gsmcpd-{flags[1]}.pid").exists()
    with unwritable_dir(tmp_path / "locked", lambda image: shop(image, lock=True)) as image:
        with Daemon(tmp_path, args=["--image", str(image), "--readonly"]) as daemon:
            client = open_session(daemon)
            listed = client.tool("list_classes", dictionaryName="shop.models")
            assert listed["structuredContent"]["classes"] == ["Cart"]
            client.close()


def test_an_image_root_may_write_by_its_mode_but_cannot_make_its_lock_in_is_refused(tmp_path):
    # os.access says yes to root for /proc: check said OK, serve started, and every session
    # failed ("worker could not be prepared: ... No such file or directory: '/proc/.gsmcpd'").
    # (Not root, os.access says no already: the same refusal.)
    flags = ("--port", str(free_port()), "--state-dir", str(tmp_path / "state"))
    checked = gsmcpd("check", *flags, "--image", "/proc")
    assert checked.returncode == 2, checked.stdout
    said = checked.stdout.splitlines()[-1]
    assert said.startswith("PROBLEM: image: is not writable") and "has no .gsmcpd/lock yet" in said, said
    started = gsmcpd("start", *flags, "--image", "/proc")
    assert started.returncode == 2, started.stdout
    assert started.stdout.startswith("gsmcpd failed to start: image /proc is not writable"), started.stdout
    assert not (tmp_path / "state" / f"gsmcpd-{flags[1]}.pid").exists()


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


def test_check_answers_within_the_jwks_timeout_when_the_jwks_file_is_a_fifo_no_one_writes_to(tmp_path):
    # It waited in the read for ever (the subprocess here timed out).
    fifo = tmp_path / "keys"
    os.mkfifo(fifo)
    checked = gsmcpd("check", "--port", str(free_port()), "--state-dir", str(tmp_path / "state"),
                     env={"GS_MCP_AUTH": "1", "MCP_ISSUER": "https://idp.test", "MCP_AUDIENCE": "gsmcpd",
                          "MCP_JWKS_FILE": str(fifo), "MCP_JWKS_TIMEOUT": "1"})
    assert checked.returncode == 2, checked.stdout + checked.stderr
    assert checked.stdout.splitlines()[-1] == (
        f"PROBLEM: jwks file: jwks_file: reading {fifo} did not finish within 1 s "
        f"(MCP_JWKS_TIMEOUT; a FIFO no one writes to, a hung mount)")


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


def test_worker_env_without_per_user_workers_is_a_warning_of_check_and_serve(tmp_path):
    # Workers on the daemon's own account keep its whole environment: the list did nothing,
    # silently.
    said = ("GS_MCP_WORKER_ENV is set, but workers run as the daemon's own account and keep its "
            "whole environment, so it has no effect")
    checked = gsmcpd("check", "--port", str(free_port()), "--state-dir", str(tmp_path),
                     env={"GS_MCP_WORKER_ENV": "DJANGO_SETTINGS_MODULE"})
    lines = checked.stdout.splitlines()
    assert checked.returncode == 0 and lines[-1].endswith("(1 warning above)"), checked.stdout
    assert [line for line in lines if line.startswith("  warning ")][0].split(None, 1)[1].startswith(said)
    (tmp_path / "served").mkdir()
    (tmp_path / "unset").mkdir()
    with Daemon(tmp_path / "served", env={"GS_MCP_WORKER_ENV": "DJANGO_SETTINGS_MODULE"}) as running:
        assert said in running.log_text()
    with Daemon(tmp_path / "unset") as running:
        assert "GS_MCP_WORKER_ENV" not in running.log_text()


def test_check_and_start_warn_of_a_key_others_may_read_and_a_certificate_not_yet_valid(tmp_path):
    # Both loaded without a word: the key's exposure was said only with MCP_USER_MAP, and a
    # certificate valid only from later was served to clients that refuse it until then.
    import datetime

    from idp import CertAuthority
    with searchable_dir("gsmcpd-key-") as keys:
        cert, key = CertAuthority(keys).issue("later", valid_from=datetime.timedelta(hours=2))
        key.chmod(0o644)
        env = {"GS_MCP_TLS_CERT": str(cert), "GS_MCP_TLS_KEY": str(key)}
        flags = ("--port", str(free_port()), "--state-dir", str(tmp_path / "state"))
        exposed = f"tls_key {key} is readable by every account (mode 0644): "
        later = f"tls_cert {cert} is not valid until "
        checked = gsmcpd("check", *flags, env=env)
        lines = checked.stdout.splitlines()
        assert checked.returncode == 0 and lines[-1].endswith("(2 warnings above)"), checked.stdout
        warned = [line.split(None, 1)[1] for line in lines if line.startswith("  warning ")]
        assert [w[:len(exposed)] for w in warned if w.startswith(exposed)] == [exposed], warned
        assert [w for w in warned if w.startswith(later)], warned
        log = tmp_path / "gsmcpd.log"
        started = gsmcpd("start", *flags, "--log-file", str(log), env=env)
        assert started.returncode == 0, started.stdout
        gsmcpd("stop", *flags)
        text = log.read_text()
        assert " WARNING " + exposed in text and " WARNING " + later in text, text


def test_start_names_a_link_loop_at_the_image_or_its_state_dir(tmp_path):
    # "does not exist" asked for a directory to be made where a link wants mending.
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    loop, port, state = tmp_path / "a", str(free_port()), tmp_path / "state"
    started = gsmcpd("start", port, "--state-dir", str(state), env={"GS_MCP_IMAGE": str(loop)})
    assert started.returncode != 0
    assert started.stdout.startswith(f"gsmcpd failed to start: image {loop} cannot be reached: "
                                     "Too many levels of symbolic links"), started.stdout
    # One at its state directory: serve started, and every session failed preparing.
    image = tmp_path / "image"
    image.mkdir()
    (image / ".gsmcpd").symlink_to(image / ".gsmcpd")
    started = gsmcpd("start", port, "--state-dir", str(state), env={"GS_MCP_IMAGE": str(image)})
    assert started.returncode != 0
    assert started.stdout.startswith(f"gsmcpd failed to start: image {image} cannot be served: {image}/.gsmcpd, "
                                     "where every session takes the image's lock, cannot be reached: "
                                     "Too many levels of symbolic links"), started.stdout
    # One to nothing: a session's mkdir met the link, and following it found nothing.
    (image / ".gsmcpd").unlink()
    (image / ".gsmcpd").symlink_to(tmp_path / "moved")
    started = gsmcpd("start", port, "--state-dir", str(state), env={"GS_MCP_IMAGE": str(image)})
    assert started.returncode != 0
    assert started.stdout.startswith(f"gsmcpd failed to start: image {image} cannot be served: {image}/.gsmcpd, "
                                     f"where every session takes the image's lock, is a link to {tmp_path}/moved, "
                                     "which does not exist"), started.stdout
