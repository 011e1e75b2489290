"""When the session manager lets the loop poll for a due event (SessionManager.expect_soon):
only with fewer calls in flight than CPUs, and not just after a session opened or ended.
The loop's poll itself is tested in test_router_loop.py, end to end in test_e2e_poll.py."""

import types

from gsmcpd.router.sessions import CHURN_QUIET, SessionManager
from gsmcpd.wire import frames


class FakeLoop:
    def __init__(self):
        self.now = 1000.0
        self.due = 0

    def time(self):
        return self.now

    def event_due(self):
        self.due += 1

    def call_later(self, delay, callback):
        return None


class FakeWorker:
    def __init__(self, pid):
        self.pid = pid
        self.alive = True
        self.listener = None
        self.sent = []

    def send(self, message):
        self.sent.append(message)

    def send_bytes(self, data):
        self.sent.append(data)

    def stop(self):
        self.alive = False

    def kill(self):
        self.alive = False


class FakeConn:
    closed = False

    def __init__(self):
        self.answers = []

    def respond(self, status, headers=(), body=b""):
        self.answers.append((status, body))


class FakeRouter:
    def __init__(self):
        self.loop = FakeLoop()
        self.config = types.SimpleNamespace(break_grace=1.0)
        self.pool = types.SimpleNamespace(claim=lambda start, fail: start(FakeWorker(len(self.workers) + 1)))
        self.workers = []

    def session_config(self, session, principal):
        self.workers.append(session.worker)
        return {}

    def __getattr__(self, name):   # call_started, session_opened, ...: bookkeeping not under test
        return lambda *args: None


PRINCIPAL = types.SimpleNamespace(user="alice", read_only=False)


def manager_for(router, cpus=2):
    manager = SessionManager(router)
    manager.cpus = cpus
    return manager


def open_session(manager, router):
    conn = FakeConn()
    manager.open(conn, {"jsonrpc": "2.0", "id": 0, "method": "initialize"}, b"{}", False, PRINCIPAL)
    session = manager.by_id[next(reversed(manager.by_id))]
    reply(manager, session, session.inflight.seq, b'{"jsonrpc":"2.0","id":0,"result":{}}')
    return session


def call(manager, session, n):
    conn = FakeConn()
    body = b'{"jsonrpc":"2.0","id":%d,"method":"ping"}' % n
    manager.submit(session, conn, {"jsonrpc": "2.0", "id": n, "method": "ping"}, body, False)
    return conn


def reply(manager, session, seq, raw):
    frame = frames.FrameDecoder(raw_messages=True).feed(frames.message_frame("reply", seq, raw))[0]
    manager.on_worker_frame(session.worker, frame)


def test_a_call_sent_as_the_only_one_in_flight_lets_the_loop_poll():
    router = FakeRouter()
    manager = manager_for(router)
    session = open_session(manager, router)
    router.loop.now += CHURN_QUIET + 0.001
    conn = call(manager, session, 1)
    assert (manager.in_flight, router.loop.due) == (1, 1)
    reply(manager, session, session.inflight.seq, b'{"jsonrpc":"2.0","id":1,"result":{}}')
    assert manager.in_flight == 0 and conn.answers[0][0] == 200
    manager.expect_soon()          # the client's next request, once its reply is written
    assert router.loop.due == 2


def test_with_other_calls_in_flight_the_loop_sleeps():
    router = FakeRouter()
    manager = manager_for(router)
    first, second = open_session(manager, router), open_session(manager, router)
    router.loop.now += CHURN_QUIET + 0.001
    call(manager, first, 1)
    call(manager, second, 2)
    assert (manager.in_flight, router.loop.due) == (2, 1)   # only the first was alone
    manager.expect_soon()
    assert router.loop.due == 1
    reply(manager, first, first.inflight.seq, b'{"jsonrpc":"2.0","id":1,"result":{}}')
    assert manager.in_flight == 1
    call(manager, second, 3)       # queued behind the call in flight: nothing sent
    assert (manager.in_flight, len(second.queue)) == (1, 1)


def test_more_cpus_leave_room_for_more_calls_in_flight():
    router = FakeRouter()
    manager = manager_for(router, cpus=4)
    sessions = [open_session(manager, router) for _ in range(4)]
    router.loop.now += CHURN_QUIET + 0.001
    for n, session in enumerate(sessions):
        call(manager, session, n)
    assert (manager.in_flight, router.loop.due) == (4, 3)   # the fourth would leave no CPU free


def test_a_session_opening_or_ending_holds_the_poll_back_for_a_while():
    router = FakeRouter()
    manager = manager_for(router)
    session = open_session(manager, router)
    assert router.loop.due == 0    # initialize went out right after the open
    call(manager, session, 1)
    assert router.loop.due == 0
    manager.end(session, "test")   # with its call in flight
    assert manager.in_flight == 0
    router.loop.now += CHURN_QUIET / 2
    manager.expect_soon()
    assert router.loop.due == 0
    router.loop.now += CHURN_QUIET / 2 + 0.001
    manager.expect_soon()
    assert router.loop.due == 1


def test_the_count_of_calls_in_flight_survives_a_worker_dying_mid_call():
    router = FakeRouter()
    manager = manager_for(router)
    sessions = [open_session(manager, router) for _ in range(3)]
    for n, session in enumerate(sessions):
        call(manager, session, n)
    assert manager.in_flight == 3
    manager.on_worker_exit(sessions[0].worker)
    reply(manager, sessions[1], sessions[1].inflight.seq, b'{"jsonrpc":"2.0","id":1,"result":{}}')
    manager.end(sessions[2], "deleted")
    manager.end(sessions[2], "deleted twice")
    assert manager.in_flight == 0
