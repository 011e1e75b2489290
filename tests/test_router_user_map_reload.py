"""SIGHUP's user-map reload (AuthGate.reload_user_map) against the router's own session
manager, its workers fakes: a session still waiting for its worker at the reload is held
to the map read then, as an open one is. End to end in test_e2e_peruser.py."""

import json
import os

import pytest

from gsmcpd.config import Config
from gsmcpd.router.app import Principal
from gsmcpd.router.main import Router
from test_router_shutdown import RecordingWorker
from test_router_sessions_poll import FakeConn

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the router reads MCP_USER_MAP only as root")

INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize"}
ENDED = {"code": -32003, "message": "session ended: SIGHUP: its user's account mapping changed (MCP_USER_MAP reloaded)"}


@pytest.fixture
def gated(tmp_path):
    """(router, its map file, the starts of the claims waiting for a worker): no spare, so
    each session open waits until the test hands it one."""
    user_map = tmp_path / "users.map"
    user_map.write_text("ann nobody\n")
    jwks = tmp_path / "jwks.json"
    jwks.write_text('{"keys": []}')
    router = Router(Config(port=0, auth=True, issuer="https://idp.test", audience="gsmcpd",
                           jwks_file=jwks, user_map=str(user_map)))
    claims = []
    router.pool.claim = lambda start, fail: claims.append(start)
    yield router, user_map, claims
    router.loop.close()


@pytest.mark.parametrize("new_map", ["ben nobody\n", "ann daemon\n"], ids=["unmapped", "moved"])
def test_a_session_waiting_for_its_worker_at_a_reload_that_remaps_its_user_ends_once_it_has_one(gated, new_map):
    # It was mapped by the map read before: opened after the reload had ended the open
    # sessions, its worker ran as the old account, unmapped users' included.
    router, user_map, claims = gated
    conn = FakeConn()
    router.sessions.open(conn, INIT, b"{}", False, Principal("ann", False, account="nobody"))
    user_map.write_text(new_map)
    router.auth.reload_user_map("SIGHUP")
    [start] = claims
    worker = RecordingWorker(100)
    start(worker)
    assert router.sessions.by_id == {} and worker.ended_by == "kill"
    [(status, body)] = conn.answers
    assert status == 200 and json.loads(body)["error"] == ENDED


def test_a_session_waiting_for_its_worker_at_a_reload_that_keeps_its_mapping_opens(gated):
    router, user_map, claims = gated
    router.sessions.open(FakeConn(), INIT, b"{}", False, Principal("ann", False, account="nobody"))
    user_map.write_text("ann nobody\nben daemon\n")
    router.auth.reload_user_map("SIGHUP")
    worker = RecordingWorker(100)
    claims[0](worker)
    [session] = router.sessions.by_id.values()
    assert session.account == "nobody" and session.inflight is not None and worker.ended_by is None
