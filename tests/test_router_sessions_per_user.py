"""The session manager's count of each user's sessions, open or still opening, which
GS_MCP_MAX_SESSIONS_PER_USER is checked against (router/app.py; end to end in
test_e2e_per_user_limit.py)."""

import types

from gsmcpd.router.app import Principal
from gsmcpd.router.sessions import SessionManager
from test_router_sessions_poll import FakeConn, FakeRouter, FakeWorker

INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize"}


def user(name):
    return Principal(name, False)


def test_a_users_sessions_are_counted_from_initialize_to_their_end():
    router = FakeRouter()
    waiting = []   # the pool has no spare: each open waits for a worker
    router.pool = types.SimpleNamespace(claim=lambda start, fail: waiting.append((start, fail)))
    manager = SessionManager(router)
    for _ in range(3):
        manager.open(FakeConn(), None, INIT, b"{}", False, user("alice"))
    manager.open(FakeConn(), None, INIT, b"{}", False, user("bob"))
    assert (manager.sessions_of("alice"), manager.sessions_of("bob"), manager.sessions_of("carol")) == (3, 1, 0)

    (start, _), (_, fail), (start_too, _), (bobs, _) = waiting
    fail("no worker")                          # a failed open frees its place at once
    assert manager.sessions_of("alice") == 2
    start(FakeWorker(1))                       # an opened one keeps it
    start_too(FakeWorker(2))
    bobs(FakeWorker(3))
    assert (manager.sessions_of("alice"), manager.sessions_of("bob")) == (2, 1)

    first, second = [s for s in manager.by_id.values() if s.user == "alice"]
    manager.end(first, "client sent DELETE")
    manager.end(first, "ended twice")          # counted off once
    assert manager.sessions_of("alice") == 1
    manager.end(second, "reaped")
    assert manager.sessions_of("alice") == 0 and manager.sessions_of("bob") == 1
    assert "alice" not in manager._per_user    # no entry left behind per user ever seen
