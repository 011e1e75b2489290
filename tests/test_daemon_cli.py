"""`python -m gsmcpd` as a user meets it: settings refused or warned of by serve, start and
check, the image they are given, cert. The paths of its state, log and TMPDIR:
test_daemon_cli_paths.py; start, stop, status and end of a running gsmcpd:
test_daemon_cli_running.py (both use `gsmcpd` here)."""

import ast
import contextlib
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from gsmcpd.__main__ import build_parser, serve_ports
from gsmcpd.exitcodes import FAILED
from gsmcpd.knob_words import CORE_TOOLSETS
from helpers import (REPO, Daemon, free_port, open_session, pid_alive, searchable_dir, unwritable_dir,
                     wait_until)

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


def test_an_authorization_server_that_is_not_an_https_url_is_refused_before_start(tmp_path):
    # The daemon started and published idp.example in its RFC 9728 metadata as is.
    result = gsmcpd("start", "--port", str(free_port()), "--state-dir", str(tmp_path),
                    env={"GS_MCP_AUTH": "1", "MCP_ISSUER": "https://idp.example", "MCP_AUDIENCE": "gsmcpd",
                         "MCP_AUTHORIZATION_SERVERS": "idp.example"})
    assert result.returncode == 2
    assert result.stderr.strip() == ("gsmcpd: configuration refused: authorization_servers: must be an https "
                                     "URL (a client fetches its RFC 8414 metadata from it; leave the knob "
                                     "empty to advertise the issuer), got 'idp.example'")
    assert not list(tmp_path.iterdir())  # nothing was started or written
    # A port that is none was published as is too.
    result = gsmcpd("start", "--port", str(free_port()), "--state-dir", str(tmp_path),
                    env={"GS_MCP_AUTH": "1", "MCP_ISSUER": "https://idp.example", "MCP_AUDIENCE": "gsmcpd",
                         "MCP_AUTHORIZATION_SERVERS": "https://idp.example:99999"})
    assert result.returncode == 2
    assert result.stderr.strip() == ("gsmcpd: configuration refused: authorization_servers: not a URL: "
                                     "Port out of range 0-65535")
    assert not list(tmp_path.iterdir())
    # The issuer's too: it only had its credentials looked at.
    result = gsmcpd("start", "--port", str(free_port()), "--state-dir", str(tmp_path),
                    env={"GS_MCP_AUTH": "1", "MCP_ISSUER": "https://idp.example:443x", "MCP_AUDIENCE": "gsmcpd"})
    assert result.returncode == 2
    assert result.stderr.strip() == ("gsmcpd: configuration refused: issuer: not a URL: "
                                     "Port could not be cast to integer value as '443x'")
    assert not list(tmp_path.iterdir())
    result = gsmcpd("start", "--port", str(free_port()), "--state-dir", str(tmp_path),
                    env={"GS_MCP_AUTH": "1", "MCP_ISSUER": "https://[2001:db8::1/r", "MCP_AUDIENCE": "gsmcpd"})
    assert (result.returncode, result.stderr.strip()) == (2, "gsmcpd: configuration refused: issuer: not a URL: "
                                                             "Invalid IPv6 URL")
    assert not list(tmp_path.iterdir())



def test_a_key_url_whose_password_holds_a_hash_is_refused_before_start_without_echoing_it(tmp_path):
    # urllib took the password's start, cut at its '#', for the port, and the refusal quoted it.
    result = gsmcpd("start", "--port", str(free_port()), "--state-dir", str(tmp_path),
                    env={"GS_MCP_AUTH": "1", "MCP_ISSUER": "https://idp.example", "MCP_AUDIENCE": "gsmcpd",
                         "MCP_JWKS_URI": "https://kid:s3c#ret@idp.example/jwks"})
    assert result.returncode == 2
    assert result.stderr.startswith("gsmcpd: configuration refused: jwks_uri: not a URL: ")
    assert "s3c" not in result.stdout + result.stderr
    assert not list(tmp_path.iterdir())

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


def test_an_idle_timeout_below_the_default_probe_is_refused_saying_which_default_to_set_too(tmp_path):
    started = gsmcpd("start", "--port", str(free_port()), "--state-dir", str(tmp_path),
                     env={"GS_MCP_IDLE_TIMEOUT": "600"})
    assert started.returncode == 2
    assert started.stderr.strip() == "gsmcpd: configuration refused: probe_after: must be less than " \
        "GS_MCP_IDLE_TIMEOUT (idle_timeout), or the probe never runs: 1500 >= 600 " \
        "(1500 is GS_MCP_PROBE_AFTER's default: set it too)"
    assert not list(tmp_path.iterdir())


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


def test_check_names_the_submodule_a_required_packages_import_failed_in(tmp_path):
    # jwt shadowed by a package whose submodule raises: check named only the error.
    shadow = tmp_path / "shadow" / "jwt"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("from . import bad\n")
    (shadow / "bad.py").write_text("raise RuntimeError('bad plugin')\n")
    checked = gsmcpd("check", "--port", str(free_port()), "--state-dir", str(tmp_path / "state"),
                     env={"PYTHONPATH": str(shadow.parent)})
    assert checked.returncode == 2, checked.stdout + checked.stderr
    assert checked.stdout.splitlines()[-1] == \
        "PROBLEM: import: cannot import: raised importing its submodule jwt.bad: RuntimeError: bad plugin"


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


def test_a_built_in_toolset_that_does_not_import_is_refused_by_serve_start_and_check_before_anything(tmp_path):
    # The serve a `start` runs imports none of their modules (start has, validating the
    # same settings): a broken install is still refused by start itself, exit 2.
    checkout = tmp_path / "checkout"
    shutil.copytree(REPO / "gsmcpd", checkout / "gsmcpd", ignore=shutil.ignore_patterns("__pycache__"))
    with open(checkout / "gsmcpd" / "worker" / "toolsets" / "mutation.py", "a") as broken:
        broken.write("\nraise ImportError('a broken install')\n")
    state = tmp_path / "state"
    said = ("toolsets: toolset 'mutation': cannot import gsmcpd.worker.toolsets.mutation "
            "(ImportError: a broken install)")
    where = ("--port", str(free_port()), "--state-dir", str(state))
    for command in ("serve", "start"):
        refused = gsmcpd(command, *where, cwd=checkout)
        assert (refused.returncode, refused.stdout, refused.stderr) == (
            2, "", f"gsmcpd: configuration refused: {said}\n")
        assert not state.exists()   # nothing was started or written
    checked = gsmcpd("check", *where, cwd=checkout)
    assert (checked.returncode, checked.stdout.splitlines()[-1]) == (2, f"PROBLEM: config: {said}")


def test_only_the_serve_a_start_runs_leaves_the_built_in_toolsets_unimported(tmp_path):
    # Its router has no use for them (the forkserver imports them): ~70M instructions of
    # its start. Run alone (systemd), serve imports them, refusing a broken one as above.
    shown = ("import sys; from gsmcpd import daemon, __main__ as cli; "
             "daemon.serve_main = lambda config, **given: print(sorted(name for name in sys.modules "
             "if name.startswith('gsmcpd.worker.toolsets.'))) or 0; sys.exit(cli.main(sys.argv[1:]))")
    imported = {}
    for ready in ((), ("--ready-fd", "1")):
        served = subprocess.run([sys.executable, "-c", shown, "serve", "--port", str(free_port()),
                                 "--state-dir", str(tmp_path), *ready], cwd=REPO, timeout=60,
                                env={k: v for k, v in os.environ.items() if not k.startswith(("GS_MCP_", "MCP_"))},
                                capture_output=True, text=True)
        assert served.returncode == 0, served.stderr
        imported[ready] = ast.literal_eval(served.stdout)
    assert {f"gsmcpd.worker.toolsets.{name}" for name in CORE_TOOLSETS} <= set(imported[()])
    assert imported[("--ready-fd", "1")] == []


def test_check_reports_a_refused_configuration_as_the_problem(tmp_path):
    result = gsmcpd("check", "--host", "0.0.0.0", "--state-dir", str(tmp_path))
    assert result.returncode == 2
    assert result.stdout.splitlines()[-1] == (
        "PROBLEM: config: host: 0.0.0.0 is not a loopback address; a network-facing server "
        "needs auth (GS_MCP_AUTH=1)")


def test_check_and_start_take_127_0_0_1_ipv4_mapped_as_loopback_needing_no_auth(tmp_path):
    # Refused as network-facing (Python 3.11's is_loopback), though the gates take it as loopback.
    flags = ("--host", "::ffff:127.0.0.1", "--port", str(free_port()), "--state-dir", str(tmp_path))
    checked = gsmcpd("check", *flags)
    assert checked.returncode == 0 and "PROBLEM" not in checked.stdout, checked.stdout
    started = gsmcpd("start", *flags)
    try:
        assert started.returncode == 0, started.stdout
        assert "listening on http://[::ffff:127.0.0.1]:" in started.stdout, started.stdout
    finally:
        gsmcpd("stop", *flags)


def test_check_suggests_the_toolset_an_unknown_name_is_near(tmp_path):
    result = gsmcpd("check", "--port", str(free_port()), "--state-dir", str(tmp_path),
                    env={"GS_MCP_TOOLSETS": "browse search"})
    assert result.returncode == 2
    assert result.stdout.splitlines()[-1] == (
        "PROBLEM: config: toolsets: unknown toolset 'browse' (did you mean browsing?) (known: "
        "execution, session, listing, browsing, search, mutation, testing, bench; or module:Class)")


@pytest.mark.parametrize("toolsets", [None, "browsing mutation bench", "mutation"])
def test_check_readonly_lists_what_a_read_only_daemons_tools_list_serves(tmp_path, toolsets):
    # It listed all seven toolsets, execution and mutation too, which a read-only server
    # drops whole, and said nothing of commit, hidden from session.
    from gsmcpd.worker.toolsets import core_toolset_of, resolve_toolsets
    env = {"GS_MCP_TOOLSETS": toolsets} if toolsets else {}
    port = free_port()
    checked = gsmcpd("check", "--readonly", "--port", str(port), "--state-dir", str(tmp_path / "state"), env=env)
    assert checked.returncode == 0, checked.stdout
    lines = {line[:14].strip(): line[15:] for line in checked.stdout.splitlines() if line[:1] != " "}
    hidden_tools, counted = re.fullmatch(r"(.+) \(read-only; tools/list serves (\d+)\)", lines["hidden tools"]).groups()
    hidden = set() if hidden_tools == "none" else set(hidden_tools.split())
    kept_toolsets = lines["toolsets"].split(" (read-only hides ")[0]
    kept = [] if kept_toolsets == "none" else kept_toolsets.split()
    with Daemon(tmp_path, env=env, args=["--readonly"], port=port) as daemon:
        client = open_session(daemon)
        served = {tool["name"] for tool in client.call("tools/list").json()["result"]["tools"]}
        client.close()
    every = {name for toolset in resolve_toolsets(toolsets) for name in toolset.tool_names}
    assert len(served) == int(counted) and not served & hidden and served | hidden == every
    assert kept == [name for name in (toolsets.split() if toolsets else CORE_TOOLSETS)
                    if any((core_toolset_of(tool) or "bench") == name for tool in served)]


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


def test_a_port_given_both_ways_is_compared_as_a_number(tmp_path):
    # `stop 8000 --port 08000` was refused as two ports: the texts were compared.
    port = free_port()
    stopped = gsmcpd("stop", str(port), "--port", f"0{port}", "--state-dir", str(tmp_path))
    assert stopped.returncode == 1 and stopped.stderr == "", stopped.stderr
    assert stopped.stdout.startswith(f"no gsmcpd running on port {port} "), stopped.stdout
    checked = gsmcpd("check", f"0{port}", "--port", str(port), "--state-dir", str(tmp_path / "state"))
    assert f"port           127.0.0.1:{port}\n" in checked.stdout, checked.stdout + checked.stderr


@pytest.mark.parametrize("args, ports", [
    (["--trace", "8000"], ["8000"]),             # --trace's optional value took the port: it is the port
    (["--trace=8000"], []), (["--tr=8000"], []),   # written to --trace: the trace setting, refused
    (["--trace=1", "--trace", "8000"], ["8000"]), (["--trace", "8000", "--trace=8001"], []),
    (["--trace=both", "8000"], ["8000"]),
])
def test_a_value_written_to_trace_with_equals_is_never_the_port(args, ports):
    assert serve_ports(args) == ports


def test_trace_equals_a_port_is_refused_not_served_on_that_port(tmp_path):
    # `--trace=8000` was read as the port, as `--trace 8000` is, and served there traced
    port = free_port()
    for command in ("start", "check"):
        result = gsmcpd(command, f"--trace={port}", "--state-dir", str(tmp_path / "state"))
        said = f"trace: expected 0, 1 or both, got '{port}'"
        assert result.returncode == 2 and said in result.stdout + result.stderr, (command, result)
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    assert not (tmp_path / "state" / f"gsmcpd-{port}.pid").exists()


def test_a_lone_argument_that_is_no_port_is_said_to_have_been_read_as_the_port(tmp_path):
    # `--toolsets core extra` (a value in two words) said "port: expected an integer".
    for command in ("start", "check", "stop"):
        result = gsmcpd(command, "--state-dir", str(tmp_path), "--toolsets", "core", "extra") \
            if command != "stop" else gsmcpd(command, "--state-dir", str(tmp_path), "extra")
        assert (result.returncode, result.stderr.strip()) == (2, f"gsmcpd {command}: error: argument PORT: "
                                                                 "expected an integer, got 'extra' (the one "
                                                                 "argument without a flag is the port)")
    assert not any(tmp_path.iterdir())


def test_a_value_split_in_two_words_before_the_port_says_how_to_give_it(tmp_path):
    # `run-server.sh --toolsets browsing search 8000` read 'search' as the port and was told
    # by the top-level parser "gsmcpd: error: unrecognized arguments: 8000", under its usage.
    port = str(free_port())
    for command in ("start", "check", "serve"):
        result = gsmcpd(command, "--state-dir", str(tmp_path), "--toolsets", "browsing", "search", port)
        assert (result.returncode, result.stderr.strip()) == (
            2, f"gsmcpd {command}: error: unrecognized arguments: {port} (one PORT at most, and a flag "
               "takes one word: quote a value of several, --toolsets 'browsing search')")
    stopped = gsmcpd("stop", "--state-dir", str(tmp_path), port, "1")
    assert (stopped.returncode, stopped.stderr.strip()) == (
        2, "gsmcpd stop: error: unrecognized arguments: 1 (one PORT at most)")
    flagged = gsmcpd("start", "--state-dir", str(tmp_path), "--bogus", port)
    assert (flagged.returncode, flagged.stderr.strip()) == (
        2, "gsmcpd start: error: unrecognized arguments: --bogus (gsmcpd start --help lists its flags)")
    assert not any(tmp_path.iterdir())


def test_cert_writes_a_self_signed_pair(tmp_path):
    result = gsmcpd("cert", "--self-signed", str(tmp_path / "certs"))
    assert result.returncode == 0, result.stderr
    cert, key = tmp_path / "certs" / "cert.pem", tmp_path / "certs" / "key.pem"
    assert f"certificate: {cert}" in result.stdout
    assert cert.read_text().startswith("-----BEGIN CERTIFICATE-----")
    assert key.stat().st_mode & 0o077 == 0


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


def test_start_and_serve_say_the_forkserver_died_starting_the_worker_spawner(tmp_path):
    # It went out as "gsmcpd failed: EOFError: unexpected EOF" (multiprocessing's read of
    # the spawner's pid), with a traceback. Its sitecustomize kills the forkserver once.
    killer = str(Path(__file__).parent / "rehearsal_killed")
    env = {"PYTHONPATH": os.pathsep.join([str(REPO), killer])}
    flags = ("--port", str(free_port()), "--state-dir", str(tmp_path / "state"))
    said = re.escape("the worker spawner did not start: multiprocessing's forkserver (pid N), which it and "
                     "every worker are forked from, was killed by SIGKILL before it forked it (a kill -9, "
                     "or the kernel's OOM killer: see `journalctl -k` / dmesg)").replace("N", r"\d+")
    started = gsmcpd("start", *flags, env={**env, "REHEARSAL_KILLED": str(tmp_path / "killed-started")})
    assert started.returncode == FAILED, started.stdout
    assert re.fullmatch(r"gsmcpd failed to start: %s \(log: .*\)\n" % said, started.stdout), started.stdout
    served = gsmcpd("serve", *flags, env={**env, "REHEARSAL_KILLED": str(tmp_path / "killed-served")})
    assert served.returncode == FAILED, served.stderr
    assert "Traceback" not in served.stderr and re.search(r"ERROR gsmcpd: %s\n" % said, served.stderr), served.stderr


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


def _older_pythons():
    """The Pythons before 3.11 this host has (PATH, then pyenv's), each that runs."""
    found = {}
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"), "versions")
    for name in ("python2.7", "python3.6", "python3.7", "python3.8", "python3.9", "python3.10"):
        candidates = [shutil.which(name), *sorted(pyenv.glob(f"*/bin/{name}"))]
        for path in filter(None, candidates):
            # A pyenv shim of a version not selected exits 127 saying so: not that Python.
            if subprocess.run([str(path), "-c", "pass"], capture_output=True).returncode == 0:
                found[name] = str(path)
                break
    return found


OLDER_PYTHONS = _older_pythons()


@pytest.mark.skipif(not OLDER_PYTHONS, reason="no Python before 3.11 on this host")
@pytest.mark.parametrize("name", sorted(OLDER_PYTHONS))
def test_an_older_python_is_told_gsmcpd_needs_3_11_and_exits_1(name, tmp_path):
    # python3.9 -m gsmcpd failed with a TypeError (an `X | None` annotation), older ones
    # with a SyntaxError.
    python = OLDER_PYTHONS[name]
    for args in (("check",), ("--help",)):
        result = subprocess.run([python, "-m", "gsmcpd", *args], cwd=tmp_path, capture_output=True, text=True,
                                env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=60)
        assert result.returncode == 1, result.stderr
        version = name[len("python"):]
        assert result.stderr.startswith(f"gsmcpd needs Python 3.11 or newer, not {version} ("), result.stderr
        assert result.stderr.endswith("): run it with python3.11 or newer, or through ./run-server.sh and the "
                                      "checkout's .venv\n"), result.stderr
