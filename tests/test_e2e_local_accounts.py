"""End to end: without auth, a client of another local account is refused.

Such a server tells its clients apart by nothing else, and every tool runs as the
daemon's account (`execute_code` whatever it is given): another account's client on the
loopback port would run code as this one. Clients connect here as `nobody`, over real
sockets that account made (helpers.connect_as), and as the test's own account.
"""

import json
import os
import pwd
import signal
import socket
import struct

import pytest
from helpers import Client, Daemon, body_of, raw_exchange, status_of, tool_text

as_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root, to connect as another account")

NOBODY = 65534
INIT_BODY = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                   "clientInfo": {"name": "local-accounts", "version": "0"}}}).encode()


def initialize(port, account=None):
    """A whole initialize over one connection, as `account` (a uid; None: this process's)."""
    head = (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
            b"Accept: application/json, text/event-stream\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
            % (port, len(INIT_BODY)))
    return raw_exchange(port, head + INIT_BODY, account=account)


@as_root
def test_another_accounts_client_is_refused_and_opens_no_session(tmp_path):
    with Daemon(tmp_path, env={"GS_MCP_SPARE_WORKERS": "1"}) as daemon:
        raw = initialize(daemon.port, NOBODY)
        assert status_of(raw) == 403, raw
        assert b"mcp-session-id" not in raw.lower()
        message = json.loads(body_of(raw))["error"]["message"]
        assert ("this connection is from %s (uid %d)" % (pwd.getpwuid(NOBODY).pw_name, NOBODY)) in message
        assert "GS_MCP_AUTH=1" in message and "GS_MCP_LOCAL_CLIENTS=any" in message
        assert daemon.status()["sessions"] == []
        assert "refusing connections from %s (uid %d)" % (pwd.getpwuid(NOBODY).pw_name, NOBODY) \
            in daemon.log_text()
        own = Client(daemon.port)   # this account's client is served as ever
        own.initialize()
        assert "user: " in tool_text(own.tool("status"))
        own.close()


@as_root
def test_local_clients_any_serves_every_account_each_session_shown_as_its_clients(tmp_path):
    # They were all shown as the daemon's account (root here): its log, status, and the
    # user the session's commits record, whoever's client opened them.
    with Daemon(tmp_path, env={"GS_MCP_SPARE_WORKERS": "1", "GS_MCP_LOCAL_CLIENTS": "any"}) as daemon:
        raw = initialize(daemon.port, NOBODY)
        assert status_of(raw) == 200, raw
        sid = next(line.split(b":", 1)[1].strip().decode() for line in raw.split(b"\r\n")
                   if line.lower().startswith(b"mcp-session-id:"))
        nobody = pwd.getpwuid(NOBODY).pw_name
        own = Client(daemon.port)
        own.initialize()
        users = {s["id_prefix"]: s["user"] for s in daemon.status()["sessions"]}
        assert sorted(users.values()) == sorted([nobody, pwd.getpwuid(os.getuid()).pw_name]), users
        assert users[next(p for p in users if sid.startswith(p))] == nobody
        assert "opened for %s " % nobody in daemon.log_text()
        own.session = sid   # without auth no account owns a session: its status tool says whose it is
        assert "user: %s\n" % nobody in tool_text(own.tool("status"))
        own.close()


def test_a_connection_reset_before_its_accept_is_dropped_and_the_next_client_served(tmp_path):
    # Asking the kernel whose it was raised (getpeername: ENOTCONN) out of the router's
    # accept: a traceback in the log for each such reset, which any account may send.
    with Daemon(tmp_path, env={"GS_MCP_SPARE_WORKERS": "1"}) as daemon:
        os.kill(daemon.proc.pid, signal.SIGSTOP)   # so the reset surely comes before the accept
        try:
            sock = socket.create_connection(("127.0.0.1", daemon.port))
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.close()
        finally:
            os.kill(daemon.proc.pid, signal.SIGCONT)
        own = Client(daemon.port)   # accepted after it, on the same listener
        own.initialize()
        assert "user: " in tool_text(own.tool("status"))
        own.close()
        assert "Traceback" not in daemon.log_text()


def test_a_client_that_closes_before_its_accept_is_not_logged_as_a_refused_account(tmp_path):
    # `start` connects and closes at once to prove the port listens, as port probes do:
    # every start logged "WARNING refusing connections from an account the kernel does
    # not name: without auth only the clients of root (uid 0) are served".
    with Daemon(tmp_path, env={"GS_MCP_SPARE_WORKERS": "1"}) as daemon:
        os.kill(daemon.proc.pid, signal.SIGSTOP)   # so the close surely comes before the accept
        try:
            socket.create_connection(("127.0.0.1", daemon.port)).close()
        finally:
            os.kill(daemon.proc.pid, signal.SIGCONT)
        own = Client(daemon.port)   # accepted after it, on the same listener
        own.initialize()
        own.close()
        assert "refusing connections" not in daemon.log_text()
