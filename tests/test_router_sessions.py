"""The session manager's frames to a new session's worker (with the fakes of the poll tests)."""

from gsmcpd.router.app import Principal
from gsmcpd.router.sessions import REASON_CAP
from gsmcpd.router.trace import escape
from gsmcpd.wire import frames
from test_router_sessions_poll import FakeConn, PRINCIPAL, call, manager_for, reply


def test_a_new_sessions_prepare_and_initialize_leave_in_one_write_and_later_calls_alone():
    manager, router = manager_for()
    initialize = b'{"jsonrpc":"2.0","id":0,"method":"initialize"}'
    manager.open(FakeConn(), {"jsonrpc": "2.0", "id": 0, "method": "initialize"}, initialize, False, PRINCIPAL)
    session = next(iter(manager.by_id.values()))
    assert len(session.worker.sent) == 1      # the worker wakes once, to both frames
    sent = frames.FrameDecoder(raw_messages=True).feed(session.worker.sent[0])
    assert [f["op"] for f in sent] == ["prepare", "call"]
    assert sent[1]["seq"] == session.inflight.seq and sent[1]["raw"] == initialize
    reply(manager, session, session.inflight.seq, 0)
    call(manager, session, 1)
    assert [f["op"] for f in frames.FrameDecoder(raw_messages=True).feed(session.worker.sent[1])] == ["call"]


class UnanswerableConn:
    """A call's connection whose answer cannot be written (as a reply that could not
    be encoded once could not)."""
    closed = False
    streaming = False

    def respond(self, status, headers=(), body=b""):
        raise ValueError("cannot encode this answer")

    def close(self):
        self.closed = True


def test_a_call_that_cannot_be_answered_does_not_stop_its_session_ending():
    manager, router = manager_for()
    initialize = b'{"jsonrpc":"2.0","id":0,"method":"initialize"}'
    manager.open(UnanswerableConn(), {"jsonrpc": "2.0", "id": 0, "method": "initialize"}, initialize,
                 False, PRINCIPAL)
    session = next(iter(manager.by_id.values()))
    queued = call(manager, session, 1)
    stuck = session.inflight.conn
    manager.end(session, "client sent DELETE")
    assert stuck.closed                        # its connection is let go, not left busy
    assert queued.answers and queued.answers[0][0] == 200   # the other call still answered
    assert not session.worker.alive            # and the worker was stopped
    assert manager.by_id == {} and manager.calls_at_workers == 0


def notify(manager, session, seq):
    raw = b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}'
    frame = frames.FrameDecoder(raw_messages=True).feed(frames.message_frame("notify", seq, raw))[0]
    manager.on_worker_frame(session.worker, frame)


def test_progress_for_a_call_no_longer_in_flight_is_dropped_quietly(caplog):
    # A tool's thread may report just after its call was answered.
    manager, router = manager_for()
    manager.open(FakeConn(), {"jsonrpc": "2.0", "id": 0, "method": "initialize"}, b"{}", False, PRINCIPAL)
    session = next(iter(manager.by_id.values()))
    answered = session.inflight.seq
    reply(manager, session, answered, 0)
    notify(manager, session, answered)                 # idle
    conn = FakeConn()   # has no stream: relaying the progress would fail
    manager.submit(session, conn, {"jsonrpc": "2.0", "id": 1, "method": "ping"},
                   b'{"jsonrpc":"2.0","id":1,"method":"ping"}', True)
    notify(manager, session, answered)                 # another call in flight, streamable
    reply(manager, session, session.inflight.seq, 1)
    assert conn.answers == [(200, b'{"jsonrpc":"2.0","id":1,"result":{}}')]
    assert session.id in manager.by_id and not caplog.records


def test_a_workers_prepare_refusal_and_a_user_claim_reach_the_log_escaped_and_cut(caplog):
    # The worker runs the user's code, which can send any frame: its text must not forge lines.
    caplog.set_level("INFO", logger="gsmcpd.sessions")
    manager, router = manager_for()
    user = "eve\n2026-01-01 00:00:00,000 INFO gsmcpd.auth forged"
    manager.open(FakeConn(), {"jsonrpc": "2.0", "id": 0, "method": "initialize"}, b"{}", False,
                 Principal(user, False))
    session = next(iter(manager.by_id.values()))
    forged = "no\n2026-01-01 00:00:00,000 WARNING gsmcpd.auth forged \x1b[2J" + "y" * 5000
    manager.on_worker_frame(session.worker, {"op": "prepared", "ok": False, "error": forged})
    assert session.id not in manager.by_id                      # the refusal still ends it
    messages = [record.getMessage() for record in caplog.records]
    assert messages and not any(c in m for m in messages for c in "\n\x1b")
    assert any("opened for eve\\n2026-01-01 00:00:00,000 INFO gsmcpd.auth forged" in m for m in messages)
    refused = [m for m in messages if "worker refused to prepare" in m]
    assert refused and refused[0].endswith(": " + escape(forged[:REASON_CAP]) + "...")
