"""README.md's Troubleshooting section quotes gsmcpd word for word: every message it
quotes is produced here by the real CLI and real daemons (a second start on a port, one
held by another program, stop-server.sh finding nothing, the Origin, Host and session
refusals, a worker killed, a reaped session, refused tokens, per-user accounts refused),
its example port, pids, paths and session id standing for the ones these runs have."""

import os
import re
import socket
import subprocess
import sys

import pytest

from helpers import REPO, Client, Daemon, free_port, wait_until
from idp import Idp

SECTION = (REPO / "README.md").read_text().split("\n## Troubleshooting\n", 1)[1].split("\n## ", 1)[0]

# What the section quotes that gsmcpd does not say: commands, settings, names, a client's words.
NOT_MESSAGES = {
    "var/gsmcpd-PORT.log", "./run-server.sh", "gsmcpd start", "<state_dir>/gsmcpd-PORT.log",
    "GS_MCP_LOG_FILE", "gsmcpd serve", "journalctl -u gsmcpd@PORT", "GS_MCP_TRACE=1",
    "GS_MCP_TRACE=both", "gsmcpd status PORT", "./run-server.sh 8001", "ss -ltnp 'sport = :8000'",
    "GS_MCP_ALLOWED_ORIGINS", "GS_MCP_ALLOWED_ORIGINS=http://localhost:6274",
    "! Needs authentication",   # Claude Code's
    "Authorization: Bearer <token>", "MCP_ISSUER", "MCP_AUDIENCE", "MCP_USER_MAP",
    "systemctl reload gsmcpd@8000", "initialize", "MCP-Session-Id", "GS_MCP_STREAMLESS_IDLE_TIMEOUT",
    "GS_MCP_IDLE_TIMEOUT", "journalctl -k", "GS_MCP_WORKER_MEMORY", "./stop-server.sh", "stop-server.sh",
    "--state-dir",
    "--config", "GS_MCP_PORT", "systemctl stop gsmcpd@8000",
}
# Needs root: a daemon not root reads no MCP_USER_MAP (its workers all run as itself).
PER_USER = ("local account", "MCP_USER_MAP /")


def quoted(text):
    """The code spans of `text`: `a` and ``a `b` c`` (one padding space stripped)."""
    spans = []
    for ticks, body in re.findall(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", text):
        spans.append(body[1:-1] if len(ticks) > 1 and body.startswith(" ") and body.endswith(" ") else body)
    return spans


def pattern(message):
    """`message` as a regex: its example paths, session id and numbers stand for any."""
    parts, at = [], 0
    for token in re.finditer(r"(?P<path>(?<=\s)/[^\s;,)'\"]+)|(?P<id>\b[0-9a-f]{8}\b)|(?P<number>\d+)", message):
        parts.append(re.escape(message[at:token.start()]))
        parts.append({"path": r"/[^\s;,)'\"]+", "id": "[0-9a-f]{8}", "number": r"\d+"}[token.lastgroup])
        at = token.end()
    return "".join(parts) + re.escape(message[at:])


def test_pattern_stands_for_ports_pids_paths_and_session_ids_only():
    made = pattern("session 71ff1f5c ended: worker 4242 (pidfile /srv/var/gsmcpd-8000.pid); stop it")
    assert re.fullmatch(made, "session 0a1b2c3d ended: worker 17 (pidfile /tmp/x/gsmcpd-9123.pid); stop it")
    assert not re.fullmatch(made, "session 0a1b2c3d ended: worker 17 (pidfile /tmp/x/gsmcpd-9123.pid); stop that")
    assert quoted("a `b` c ``d `e` f`` g") == ["b", "d `e` f"]


def gsmcpd(*args, env=None):
    base = {k: v for k, v in os.environ.items() if not k.startswith(("GS_MCP_", "MCP_"))}
    done = subprocess.run([sys.executable, "-m", "gsmcpd", *args], cwd=REPO, timeout=60, capture_output=True,
                          text=True, env={**base, "PYTHONPATH": str(REPO), **(env or {})})
    return done.stdout + done.stderr


def stop_server(*args):
    done = subprocess.run([str(REPO / "stop-server.sh"), *args], cwd=REPO, timeout=60, capture_output=True,
                          text=True)
    return done.stdout + done.stderr


def error_message(response):
    return response.json()["error"]["message"]


def plain_daemon_says(tmp_path):
    """What a second start, stop-server.sh, the gates, a killed worker, a reap and a stop
    of a daemon whose pidfile and control socket were removed say."""
    said = []
    (tmp_path / "plain").mkdir()
    # --state-dir on its command line, as another start's is: what names it to the others.
    with Daemon(tmp_path / "plain", env={"GS_MCP_STREAMLESS_IDLE_TIMEOUT": "5"},
                args=["--state-dir", str(tmp_path / "plain" / "state")]) as daemon:
        port, state = str(daemon.port), str(daemon.state)
        # The section's examples run in the default state directory, which gives no --state-dir.
        said.append(gsmcpd("start", "--port", port, "--state-dir", state).replace(f" --state-dir {state}", ""))
        said.append(gsmcpd("start", "--port", port, "--state-dir", str(tmp_path / "other")))
        said.append(stop_server(port, "--state-dir", str(tmp_path / "other")))
        said.append(stop_server(str(free_port()), "--state-dir", str(tmp_path / "other")))
        client = Client(daemon.port)
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
        said.append(error_message(client.post(init, headers={"Origin": "http://app.example"})))
        said.append(error_message(client.post(init, headers={"Host": "mcp.example.com"})))
        said.append(error_message(client.request("OPTIONS", headers={
            "Origin": "http://localhost:6274", "Access-Control-Request-Method": "POST"})))
        client.initialize()
        killed = client.call("tools/call", {"name": "execute_code", "arguments": {
            "code": "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"}})
        said.append(error_message(killed))
        said.append(error_message(client.call("tools/list")))
        client.close()
        Client(daemon.port).initialize()   # and left: no stream, no request, so reaped
        wait_until(lambda: "reaped (streamless)" in daemon.log_path.read_text(), timeout=60)
        said.append(daemon.log_path.read_text())
        (daemon.state / f"gsmcpd-{port}.pid").unlink()
        (daemon.state / f"gsmcpd-{port}.ctl").unlink()
        said.append(stop_server(port, "--state-dir", state))   # nothing but a signal reaches it now
    return said


def port_held_says(tmp_path):
    """What start and serve say of a port another program holds."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = str(held.getsockname()[1])
        return [gsmcpd("start", "--port", port, "--state-dir", str(tmp_path / "held")),
                gsmcpd("serve", "--port", port, "--state-dir", str(tmp_path / "held"))]


def auth_daemon_says(tmp_path):
    """What refused tokens get, traced, and (as root) what per-user accounts refused do."""
    tmp = tmp_path / "auth"
    tmp.mkdir()
    port = free_port()
    audience = "http://127.0.0.1:%d/mcp" % port
    idp = Idp(issuer="https://idp.test", audience=audience, kinds=("rsa",))
    users = tmp / "users"
    users.write_text("alice alcie\n")   # no such account: the typo the section shows
    env = {"GS_MCP_AUTH": "1", "MCP_ISSUER": idp.issuer, "MCP_AUDIENCE": audience, "GS_MCP_TRACE": "both",
           "MCP_JWKS_FILE": str(idp.write_jwks(tmp / "jwks.json")), "MCP_USER_MAP": str(users),
           "GS_MCP_SPARE_WORKERS": "0"}
    said = []
    with Daemon(tmp, env=env, port=port) as daemon:
        tokens = [None, idp.expired(), idp.wrong_issuer(), idp.wrong_audience(), idp.unknown_kid(),
                  idp.mint(sub="eve"), idp.mint(sub="alice")]
        for token in tokens:
            client = Client(port)
            response = client.post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
                                   headers={"Authorization": f"Bearer {token}"} if token else {})
            assert response.status in (401, 403), response
            said.append(f"WWW-Authenticate: {response.header('www-authenticate')}")
            said.append(response.body.decode())
            client.close()
        wait_until(lambda: "user 'alice'" in daemon.log_path.read_text() or os.geteuid() != 0)
        said.append(daemon.log_path.read_text())
    return said


def test_every_message_the_troubleshooting_section_quotes_is_what_gsmcpd_says(tmp_path):
    messages = [span for span in quoted(SECTION) if span not in NOT_MESSAGES]
    assert len(messages) >= 20, messages
    said = plain_daemon_says(tmp_path) + port_held_says(tmp_path) + auth_daemon_says(tmp_path)
    unsaid = [message for message in messages if not any(re.search(pattern(message), text) for text in said)]
    if os.geteuid() != 0:
        assert all(any(mark in message for mark in PER_USER) for message in unsaid), unsaid
        pytest.skip(f"the per-user messages need root to be said: {unsaid}")
    assert not unsaid, "\n\n".join(unsaid + ["said:"] + said)
