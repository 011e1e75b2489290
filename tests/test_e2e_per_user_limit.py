"""End-to-end: GS_MCP_MAX_SESSIONS_PER_USER through the real daemon. Under auth each
token's user has its own share; without auth every session is the daemon's own user's."""

import getpass

from helpers import Client, Daemon
from test_e2e_auth import AuthClient, start_auth_daemon

INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}


def refused_message(user, limit):
    return ("Too Many Requests: %s has %d session%s open or opening, the configured maximum per user "
            "(GS_MCP_MAX_SESSIONS_PER_USER); end one with DELETE, or let an idle one be reaped"
            % (user, limit, "" if limit == 1 else "s"))


def test_each_user_may_hold_only_their_share_of_sessions(tmp_path):
    server, daemon = start_auth_daemon(tmp_path, GS_MCP_MAX_SESSIONS_PER_USER="2")
    try:
        alice = [AuthClient(daemon.port, server.idp.mint(sub="alice")) for _ in range(3)]
        for client in alice[:2]:
            client.initialize()
        refused = alice[2].call("initialize", INIT)
        assert refused.status == 429 and refused.header("retry-after") is None
        assert refused.json()["error"] == {"code": -32600, "message": refused_message("alice", 2)}
        bob = AuthClient(daemon.port, server.idp.mint(sub="bob"))
        bob.initialize()                                  # another user's share is untouched
        assert alice[0].tool("status")                    # and alice's sessions still serve
        assert alice[0].delete().status == 200
        alice[2].initialize()                             # room again once one ended
        assert alice[1].call("ping").status == 200
    finally:
        daemon.stop()
        server.close()


def test_without_auth_the_limit_bounds_every_session_together(tmp_path):
    with Daemon(tmp_path, env={"GS_MCP_MAX_SESSIONS_PER_USER": "1", "GS_MCP_TOOLSETS": "bench",
                               "GS_MCP_SPARE_WORKERS": "1"}) as d:
        first, second = Client(d.port), Client(d.port)
        first.initialize()
        refused = second.call("initialize", INIT)
        assert refused.status == 429
        assert refused.json()["error"]["message"] == refused_message(getpass.getuser(), 1)
        assert first.delete().status == 200
        second.initialize()


def test_a_bad_limit_is_refused_at_start(tmp_path):
    daemon = Daemon(tmp_path, env={"GS_MCP_MAX_SESSIONS_PER_USER": "0"})
    assert daemon.refusal() == 2
    assert "configuration refused: max_sessions_per_user: must be at least 1, got 0" in daemon.log_text()
