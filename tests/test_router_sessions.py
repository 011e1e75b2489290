"""The session manager's frames to a new session's worker (with the fakes of the poll tests)."""

import json

from gsmcpd.router.app import Principal
from gsmcpd.router.exit_status import PATIENCE
from gsmcpd.router.pacing import NOTIFY_BURST
from gsmcpd.router.sessions import CALLED_CAP, REASON_CAP, Call, asks_all_tools
from gsmcpd.router.trace import escape
from gsmcpd.wire import frames, jsonrpc
from test_router_sessions_poll import FakeConn, PRINCIPAL, call, manager_for, open_session, reply


def test_a_new_sessions_prepare_and_initialize_leave_in_one_write_and_later_calls_alone():
    manager, router = manager_for()
    initialize = b'{"jsonrpc":"2.0","id":0,"method":"initialize"}'
    manager.open(FakeConn(), None, {"jsonrpc": "2.0", "id": 0, "method": "initialize"}, initialize, False, PRINCIPAL)
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

    go_on = FakeConn.go_on

    def close(self):
        self.closed = True


def test_a_call_that_cannot_be_answered_does_not_stop_its_session_ending():
    manager, router = manager_for()
    initialize = b'{"jsonrpc":"2.0","id":0,"method":"initialize"}'
    manager.open(UnanswerableConn(), None, {"jsonrpc": "2.0", "id": 0, "method": "initialize"}, initialize,
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
    manager.open(FakeConn(), None, {"jsonrpc": "2.0", "id": 0, "method": "initialize"}, b"{}", False, PRINCIPAL)
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
    manager.open(FakeConn(), None, {"jsonrpc": "2.0", "id": 0, "method": "initialize"}, b"{}", False,
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


def busy_session(max_queued):
    """A session whose call 1 is in flight, on a manager allowing `max_queued` to wait."""
    manager, router = manager_for()
    router.config.max_queued = max_queued
    session = open_session(manager, router)
    running = call(manager, session, 1)
    return manager, session, running


def refusal(conn, request_id):
    """The error a call's connection was answered with at once; its id must be the call's own."""
    [(status, body)] = conn.answers
    reply = json.loads(body)
    assert status == 200 and reply["id"] == request_id, reply
    return reply["error"]


def test_a_request_over_the_queue_bound_is_refused_at_once_and_the_queued_ones_run():
    manager, session, running = busy_session(2)
    waiting = [call(manager, session, n) for n in (2, 3)]
    sent = len(session.worker.sent)
    over = call(manager, session, 4)
    error = refusal(over, 4)
    assert error["code"] == jsonrpc.SESSION_BUSY == -32004
    assert "2 requests already wait" in error["message"] and "GS_MCP_MAX_QUEUED" in error["message"]
    assert len(session.worker.sent) == sent and len(session.queue) == 2   # never queued, never sent
    for n, conn in zip((1, 2, 3), [running] + waiting):
        reply(manager, session, session.inflight.seq, n)
        assert conn.answers == [(200, b'{"jsonrpc":"2.0","id":%d,"result":{}}' % n)]
    assert session.inflight is None and not session.queue
    assert not call(manager, session, 5).answers and session.inflight is not None   # room again


def test_a_cancelled_queued_request_no_longer_counts_against_the_bound():
    manager, session, running = busy_session(2)
    call(manager, session, 2)
    dropped = call(manager, session, 3)
    assert manager.cancel(session, 3) == "dropped"
    assert dropped.answers == [(202, b"")]
    admitted = call(manager, session, 4)
    assert not admitted.answers and [c.id for c in session.queue] == [2, 4]
    assert refusal(call(manager, session, 5), 5)["code"] == jsonrpc.SESSION_BUSY


class RecordingConn(FakeConn):
    """A call's connection recording how it was answered: respond, or a stream's head and end."""

    def start_stream(self, status, headers):
        self.streaming = True
        self.answers.append(("stream", status, dict(headers)["Content-Type"]))

    def end_stream(self):
        self.streaming = False
        self.answers.append("end")


def test_a_cancelled_request_is_answered_as_a_request_with_no_message_not_202():
    # MCP's transport answers a POSTed request text/event-stream or application/json,
    # 202 being for notifications and responses: an SSE stream ended with no event.
    manager, router = manager_for()
    session = open_session(manager, router)
    running, queued = RecordingConn(), RecordingConn()
    for n, conn in ((1, running), (2, queued)):
        body = b'{"jsonrpc":"2.0","id":%d,"method":"ping"}' % n
        manager.submit(session, conn, {"jsonrpc": "2.0", "id": n, "method": "ping"}, body, True)
    assert manager.cancel(session, 2) == "dropped"
    assert manager.cancel(session, 1) == "breaking"
    for conn in (queued, running):
        assert conn.answers == [("stream", 200, "text/event-stream"), "end"]


def test_with_no_room_to_queue_only_an_idle_session_takes_a_request():
    manager, session, running = busy_session(0)
    assert "no request may wait behind this session's call in flight (GS_MCP_MAX_QUEUED is 0)" in \
        refusal(call(manager, session, 2), 2)["message"]
    reply(manager, session, session.inflight.seq, 1)
    assert not call(manager, session, 3).answers and session.inflight.id == 3


def test_a_full_queue_is_logged_once_a_spell(caplog):
    caplog.set_level("WARNING", logger="gsmcpd.sessions")
    manager, session, running = busy_session(1)
    call(manager, session, 2)
    for n in range(3, 13):
        refusal(call(manager, session, n), n)
    assert len(caplog.records) == 1 and "GS_MCP_MAX_QUEUED" in caplog.records[0].getMessage()
    reply(manager, session, session.inflight.seq, 1)   # call 2 starts: the spell is over
    call(manager, session, 13)
    refusal(call(manager, session, 14), 14)
    assert len(caplog.records) == 2


def reused(manager, session, request_id):
    """A request with `request_id` as App takes it: refused if a call holds the id, else submitted."""
    conn = FakeConn()
    message = {"jsonrpc": "2.0", "id": request_id, "method": "ping"}
    if request_id in session.ids_in_use:
        manager.refuse_reused_id(session, conn, request_id)
    else:
        manager.submit(session, conn, message, json.dumps(message).encode(), False)
    return conn


def test_a_request_reusing_the_id_of_a_call_running_or_waiting_is_refused_and_neither_is_disturbed():
    # MCP: an id is not reused within a session. Queued, the second answer bore the same
    # id as the first, and a cancel naming it broke the first and let the second run.
    manager, session, running = busy_session(2)
    waiting = call(manager, session, 2)
    sent = len(session.worker.sent)
    for request_id, state in ((1, "still running"), (2, "still waiting to run")):
        error = refusal(reused(manager, session, request_id), request_id)
        assert error == {"code": jsonrpc.INVALID_REQUEST, "message": (
            "Invalid Request: the id %d is in use by a request %s in this session (a request id must not "
            "be reused within a session); this one was not run: send it with a new id" % (request_id, state))}
    assert len(session.worker.sent) == sent and [c.id for c in session.queue] == [2]
    assert not running.answers and not waiting.answers
    assert not reused(manager, session, "1").answers   # another id: "1" is not 1
    for n, conn in ((1, running), (2, waiting)):
        reply(manager, session, session.inflight.seq, n)
        assert conn.answers == [(200, b'{"jsonrpc":"2.0","id":%d,"result":{}}' % n)]


def test_a_reused_string_id_is_named_escaped():
    # Named raw: a right-to-left mark or a BEL of the client's id went into the reader's text.
    manager, session, running = busy_session(2)
    reused(manager, session, "a\u202eb\x07")   # waits behind call 1, holding the id
    error = refusal(reused(manager, session, "a\u202eb\x07"), "a\u202eb\x07")
    assert error["message"].startswith('Invalid Request: the id "a\\u202eb\\u0007" is in use')


def test_an_id_is_free_again_once_its_call_is_answered_however_it_ends():
    manager, session, running = busy_session(4)
    for n in (2, 3, 4):
        call(manager, session, n)
    assert manager.cancel(session, 3) == "dropped"
    assert sorted(session.ids_in_use) == [1, 2, 4]
    reply(manager, session, session.inflight.seq, 1)                     # answered
    manager.fail_inflight(session, jsonrpc.REQUEST_TIMEOUT, "timed out")   # 2: its deadline
    assert sorted(session.ids_in_use) == [4]
    for n in (1, 2, 3):
        assert not reused(manager, session, n).answers
    assert sorted(session.ids_in_use) == [1, 2, 3, 4]
    manager.drain(session, "server shutting down")   # the waiting ones are answered
    assert list(session.ids_in_use) == []
    reply(manager, session, session.inflight.seq, 2)   # the broken call 2's late reply
    assert session.ended


def test_a_cancelled_calls_late_reply_leaves_the_id_to_the_request_that_took_it():
    manager, session, running = busy_session(2)
    assert manager.cancel(session, 1) == "breaking"   # still running, its client answered
    again = reused(manager, session, 1)
    assert not again.answers and session.ids_in_use[1] is session.queue[0]
    reply(manager, session, session.inflight.seq, 1)    # the broken call ends
    assert session.ids_in_use[1] is session.inflight    # the new call 1 holds it, running
    assert refusal(reused(manager, session, 1), 1)["code"] == jsonrpc.INVALID_REQUEST
    manager.end(session, "client sent DELETE")
    assert session.ids_in_use == {}


class StreamConn(FakeConn):
    """A call's connection that takes an SSE reply: what was written, in order."""

    def __init__(self):
        super().__init__()
        self.events = []

    def start_stream(self, status, headers):
        self.streaming = True

    def stream_write(self, data):
        self.events.append(json.loads(data.decode().split("data: ", 1)[1]))

    def end_stream(self):
        self.events.append("end")


def progress(manager, session, seq, value):
    raw = b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":%d}}' % value
    frame = frames.FrameDecoder(raw_messages=True).feed(frames.message_frame("notify", seq, raw))[0]
    manager.on_worker_frame(session.worker, frame)


def streaming_call(manager, router, n):
    session = open_session(manager, router)
    conn = StreamConn()
    body = b'{"jsonrpc":"2.0","id":%d,"method":"tools/call"}' % n
    manager.submit(session, conn, {"jsonrpc": "2.0", "id": n, "method": "tools/call"}, body, True)
    return session, conn


def progress_values(conn):
    return [e["params"]["progress"] for e in conn.events if isinstance(e, dict) and "method" in e]


def test_a_tight_loop_of_progress_is_thinned_and_its_last_value_comes_before_the_reply():
    manager, router = manager_for()
    session, conn = streaming_call(manager, router, 7)
    seq = session.inflight.seq
    for value in range(1, 1001):
        progress(manager, session, seq, value)
    assert progress_values(conn) == list(range(1, NOTIFY_BURST + 1))   # the burst, then held
    assert len(router.loop.timers) == 1                               # one wake-up for all held
    router.loop.now = router.loop.timers[0][0]
    router.loop.fire_due()
    assert progress_values(conn)[-1] == 1000                          # the latest, not the next
    for value in range(1001, 1101):
        progress(manager, session, seq, value)
    reply(manager, session, seq, 7)
    assert progress_values(conn)[-1] == 1100 and conn.events[-2]["id"] == 7 and conn.events[-1] == "end"
    assert len(conn.events) == NOTIFY_BURST + 4
    router.loop.now += 1
    router.loop.fire_due()                      # the wake-up after the reply finds nothing
    assert len(conn.events) == NOTIFY_BURST + 4


def test_a_call_without_notifications_gets_no_pacer_and_no_timer():
    manager, router = manager_for()
    session, conn = streaming_call(manager, router, 8)
    call = session.inflight
    reply(manager, session, call.seq, 8)
    assert call.pacer is None and not router.loop.timers
    assert conn.answers == [(200, b'{"jsonrpc":"2.0","id":8,"result":{}}')]


def test_a_deadlines_error_comes_after_the_last_progress_held_back():
    manager, router = manager_for()
    session, conn = streaming_call(manager, router, 9)
    for value in range(1, 50):
        progress(manager, session, session.inflight.seq, value)
    manager.fail_inflight(session, jsonrpc.REQUEST_TIMEOUT, "request timed out")
    assert progress_values(conn)[-1] == 49
    assert conn.events[-2]["error"]["code"] == jsonrpc.REQUEST_TIMEOUT and conn.events[-1] == "end"
    router.loop.now += 1
    router.loop.fire_due()
    assert conn.events[-1] == "end"


def test_a_session_ending_under_a_call_sends_its_last_progress_held_back_first():
    manager, router = manager_for()
    session, conn = streaming_call(manager, router, 11)
    for value in range(1, 50):
        progress(manager, session, session.inflight.seq, value)
    manager.end(session, "worker 1 exited")
    assert progress_values(conn)[-1] == 49
    assert conn.events[-2]["error"]["code"] == jsonrpc.WORKER_GONE and conn.events[-1] == "end"


def test_a_cancelled_calls_held_progress_is_dropped():
    manager, router = manager_for()
    session, conn = streaming_call(manager, router, 10)
    for value in range(1, 50):
        progress(manager, session, session.inflight.seq, value)
    assert manager.cancel(session, 10) == "breaking"
    router.loop.now += 1
    router.loop.fire_due()
    assert progress_values(conn) == list(range(1, NOTIFY_BURST + 1)) and conn.events[-1] == "end"


def test_a_reply_for_no_call_in_flight_or_an_unknown_op_ends_the_worker_not_a_log_line_each(caplog):
    # Only the user's code writing on the frame socket sends these, and it can send them
    # in a loop: a line logged per frame would flood the router's log.
    manager, router = manager_for()
    session = open_session(manager, router)
    stray = frames.FrameDecoder(raw_messages=True).feed(frames.message_frame("reply", 99, b'{}'))[0]
    manager.on_worker_frame(session.worker, stray)
    assert session.worker.rejected == ["a reply for no call in flight"] and not caplog.records
    other = open_session(manager, router)
    manager.on_worker_frame(other.worker, {"op": "x\n" * 100})
    assert other.worker.rejected == ["unknown op " + escape(repr("x\n" * 100)[:64]) + "..."]
    assert not caplog.records


def list_tools(manager, session, n, params=None, answer=b'"result":{"tools":[{"name":"echo"}]}'):
    """A tools/list the worker answers with `answer`; the client's connection."""
    conn = FakeConn()
    message = {"jsonrpc": "2.0", "id": n, "method": "tools/list"}
    if params is not None:
        message["params"] = params
    manager.submit(session, conn, message, json.dumps(message).encode(), False)
    raw = b'{"jsonrpc":"2.0","id":%d,%s}' % (n, answer)
    frame = frames.FrameDecoder(raw_messages=True).feed(frames.message_frame("reply", session.inflight.seq, raw))[0]
    manager.on_worker_frame(session.worker, frame)
    return conn


def test_the_workers_list_of_all_its_tools_is_kept_for_the_router_to_answer_from():
    manager, router = manager_for()
    session = open_session(manager, router)
    list_tools(manager, session, 1, answer=b'"error":{"code":-32603,"message":"no"}')
    list_tools(manager, session, 2, params={"cursor": "x"})
    assert session.tools_listed is None     # an error, or one page asked for, is not the list
    list_tools(manager, session, 3, params={"_meta": {"progressToken": 1}})
    assert session.tools_listed == {"tools": [{"name": "echo"}]}


def test_only_a_tools_list_with_no_cursor_asks_for_all_tools():
    assert asks_all_tools("tools/list", None) and asks_all_tools("tools/list", {"_meta": {}})
    assert asks_all_tools("tools/list", {"cursor": None})
    assert not asks_all_tools("tools/list", {"cursor": "x"}) and not asks_all_tools("tools/list", [])
    assert not asks_all_tools("tools/call", None)


def test_a_waiting_call_holds_what_the_router_reads_of_its_message_not_its_arguments():
    # Parsed arguments take up to 25 times their bytes: each queued call of 16 MiB of
    # "[]," held 400 MB of the router (32 may wait per session), though the worker gets
    # the body as received.
    manager, session, running = busy_session(2)
    message = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
               "params": {"name": "execute_code", "arguments": {"code": "1", "x": [[]] * 30000},
                          "_meta": {"progressToken": "p", "other": [1]}}}
    manager.submit(session, FakeConn(), message, json.dumps(message).encode(), True)
    listing = {"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"cursor": ["odd"] * 30000}}
    manager.submit(session, FakeConn(), listing, json.dumps(listing).encode(), False)
    waiting, listed = session.queue
    assert waiting.message == {"id": 2, "method": "tools/call",
                               "params": {"name": "execute_code", "_meta": {"progressToken": "p"}}}
    assert (waiting.id, waiting.progress_token, waiting.describe()) == (2, "p", "tools/call execute_code")
    assert listed.message == {"id": 3, "method": "tools/list", "params": {"cursor": []}}
    assert not asks_all_tools(listed.method, listed.message["params"])   # a cursor, if an odd one
    assert json.loads(waiting.body) == message   # the worker's copy is whole


def test_a_call_is_described_with_its_method_and_tool_name_cut_and_escaped():
    # The log's "worker died in" line and the control socket's in_flight: a 1 MB tool name
    # went whole into both, a newline in it raw into the log.
    def described(message):
        return Call(1, message, json.dumps(message).encode(), FakeConn(), False).describe()

    name = "run\nforged" + "x" * 1_000_000
    assert described({"id": 1, "method": "tools/call", "params": {"name": name}}) == (
        "tools/call " + escape(name[:CALLED_CAP]) + "...")
    assert described({"id": 1, "method": "tools/call", "params": {"name": "execute_code"}}) == "tools/call execute_code"
    assert described({"id": 1, "method": "m\u202e" * 100_000}) == escape(("m\u202e" * 64)) + "..."
    assert described({"id": 1, "method": "tools/list"}) == "tools/list"


def test_a_dead_workers_calls_are_told_how_it_ended_once_the_spawner_reports_it(caplog):
    caplog.set_level("INFO", logger="gsmcpd.sessions")
    manager, router = manager_for()
    session = open_session(manager, router)
    running, queued = call(manager, session, 1), call(manager, session, 2)
    worker = session.worker
    manager.on_worker_exit(worker)
    assert session.id not in manager.by_id            # ended at once
    assert running.answers == queued.answers == []    # answered once its status is known
    worker.exit.report(-14)
    why = "worker %d ended by signal 14 (SIGALRM: an alarm the session's code set" % worker.pid
    for conn in (running, queued):
        error = json.loads(conn.answers[0][1])["error"]
        assert error["code"] == jsonrpc.WORKER_GONE and error["message"].startswith("session ended: " + why)
        assert error["data"] == {"exit": {"signal": 14, "name": "SIGALRM"}}
    assert any(("session %s ended: %s" % (session.short, why)) in r.getMessage() for r in caplog.records)


def test_a_dead_workers_calls_are_told_without_its_status_if_it_does_not_come_in_time():
    manager, router = manager_for()
    session = open_session(manager, router)
    running = call(manager, session, 1)
    manager.on_worker_exit(session.worker)
    router.loop.now += PATIENCE
    router.loop.fire_due()
    assert json.loads(running.answers[0][1])["error"] == {
        "code": jsonrpc.WORKER_GONE, "message": "session ended: worker %d exited" % session.worker.pid}
    session.worker.exit.report(-9)                   # too late: answered once only
    assert len(running.answers) == 1


def test_a_dead_workers_status_the_spawner_reports_late_is_still_told():
    # A swamped host's spawner (load 11 on two cores) reported after the 0.4 s waited then:
    # the client was told "worker N exited" with no status. The wait is on a timer, so it
    # holds only the dead worker's calls; a spawner that is gone says so at once (report(None)).
    manager, router = manager_for()
    session = open_session(manager, router)
    running = call(manager, session, 1)
    manager.on_worker_exit(session.worker)
    router.loop.now += 1.0
    router.loop.fire_due()
    assert running.answers == []
    session.worker.exit.report(-9)
    error = json.loads(running.answers[0][1])["error"]
    assert error["message"].startswith("session ended: worker %d was killed by signal 9" % session.worker.pid)
    assert error["data"] == {"exit": {"signal": 9, "name": "SIGKILL"}}


def test_a_dead_workers_calls_are_counted_until_told_so_a_stop_can_wait_for_them():
    # While stopping too: the stop waits for them (router.shutdown), as it did not, closing
    # every connection once no session was left, so the answers were lost.
    manager, router = manager_for()
    told = []
    router.deaths_told = lambda: told.append(set(manager.telling))
    session = open_session(manager, router)
    running, queued = call(manager, session, 1), call(manager, session, 2)
    router.stopping = True
    manager.on_worker_exit(session.worker)
    assert len(manager.telling) == 2 and running.answers == queued.answers == []
    session.worker.exit.report(-9)
    assert json.loads(running.answers[0][1])["error"]["data"] == {"exit": {"signal": 9, "name": "SIGKILL"}}
    assert manager.telling == set() and told == [set()]


def test_a_dead_workers_tool_call_that_committed_nothing_is_told_only_how_it_ended(tmp_path):
    manager, router = manager_for()
    router.image = str(tmp_path)   # an image with no journal: nothing committed
    session = open_session(manager, router)
    conn = FakeConn()
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "execute_code"}}
    manager.submit(session, conn, message, json.dumps(message).encode(), False)
    manager.on_worker_exit(session.worker)
    session.worker.exit.report(-9)
    error = json.loads(conn.answers[0][1])["error"]
    assert error["message"] == ("session ended: worker %d was killed by signal 9 (SIGKILL: kill -9, the kernel's "
                                "OOM killer (see `journalctl -k` / dmesg), or a hard CPU-time limit (RLIMIT_CPU) "
                                "the session's code set)" % session.worker.pid)
    assert error["data"] == {"exit": {"signal": 9, "name": "SIGKILL"}} and manager.telling == set()
