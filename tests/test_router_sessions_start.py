"""A session start that raises (a bug; its client is answered 500 by Connection.go_on):
the session it registered ends at once and its worker is killed, not left to be reaped
as idle holding the worker. (A user claim holding a lone surrogate made one fail end to
end; the claim check refuses it now, and no other real request is known to.)"""

import types

import pytest

from gsmcpd.router.app import Principal
from gsmcpd.router.sessions import SessionManager
from test_router_sessions_poll import FakeConn, FakeRouter, FakeWorker

INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize"}


class GuardedConn(FakeConn):
    """Connection.go_on's contract: a step that raises is answered 500, and the
    connection answers nothing more."""

    failed = False

    def respond(self, status, headers=(), body=b""):
        if not self.failed:
            super().respond(status, headers, body)

    def go_on(self, request, step):
        try:
            step()
        except RuntimeError:
            self.answers.append((500, b""))
            self.failed = True
            return False
        return True


def broken(*args):
    raise RuntimeError("a bug")


@pytest.mark.parametrize("where", ["session_config", "session_opened", "send_bytes"])
def test_a_start_that_raises_ends_its_session_at_once_and_kills_its_worker(where):
    router = FakeRouter()
    worker = FakeWorker(1)
    router.pool = types.SimpleNamespace(claim=lambda start, fail: start(worker))
    setattr(worker if where == "send_bytes" else router, where, broken)
    manager = SessionManager(router)
    conn = GuardedConn()

    manager.open(conn, None, INIT, b"{}", False, Principal("alice", False))

    assert conn.answers == [(500, b"")]
    assert manager.by_id == {} and manager._by_worker == {}      # its id is unknown: 404 on reuse
    assert manager.sessions_of("alice") == 0 and manager.opening == 0
    assert manager.calls_at_workers == 0
    assert not worker.alive


def test_a_start_whose_worker_dies_in_the_send_and_then_raises_forgets_its_user_once():
    # Two faults: the worker dies as the start sends to it (its session ends, its user
    # forgotten), then the start raises. _start_failed found no session by the worker and
    # forgot the user again: alice's other session no longer counted.
    router = FakeRouter()
    manager = SessionManager(router)
    other = FakeWorker(1)
    router.pool = types.SimpleNamespace(claim=lambda start, fail: start(other))
    manager.open(GuardedConn(), None, INIT, b"{}", False, Principal("alice", False))
    assert manager.sessions_of("alice") == 1

    dying = FakeWorker(2)

    def dies_then_raises(data):
        manager.on_worker_exit(dying)
        raise RuntimeError("a bug")
    dying.send_bytes = dies_then_raises
    router.pool = types.SimpleNamespace(claim=lambda start, fail: start(dying))
    conn = GuardedConn()
    manager.open(conn, None, INIT, b"{}", False, Principal("alice", False))

    assert conn.answers == [(500, b"")]
    assert manager.sessions_of("alice") == 1 and manager.opening == 0
    assert len(manager.by_id) == 1 and not dying.alive
