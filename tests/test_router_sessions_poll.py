"""When the session manager lets the loop poll for a due event (SessionManager.may_poll):
only with fewer calls in flight than CPUs, and not just after a session opened or ended;
and that its count of calls in flight stays exact. The loop's poll itself, and a
connection asking for it, are tested in test_router_loop.py, end to end in test_e2e_poll.py."""

import types

from gsmcpd.config import Config
from gsmcpd.router.app import Principal
from gsmcpd.router.exit_status import ExitStatus
from gsmcpd.router.sessions import CHURN_QUIET, SessionManager
from gsmcpd.wire import frames


class FakeLoop:
    def __init__(self, cpus):
        self.cpus = cpus
        self.now = 1000.0
        self.event_due = False
        self.timers = []   # (when, callback), for a test to fire

    def call_later(self, delay, callback):
        timer = (self.now + delay, callback)
        self.timers.append(timer)
        return types.SimpleNamespace(cancel=lambda: timer in self.timers and self.timers.remove(timer))

    def fire_due(self):
        due = [callback for when, callback in self.timers if when <= self.now]
        self.timers = [(when, callback) for when, callback in self.timers if when > self.now]
        for callback in due:
            callback()


class FakeWorker:
    def __init__(self, pid):
        self.pid = pid
        self.alive = True
        self.listener = None
        self.sent = []
        self.rejected = []
        self.exit = ExitStatus()

    def reject(self, why):
        self.rejected.append(why)
        self.alive = False

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
    streaming = False

    def __init__(self):
        self.answers = []

    def respond(self, status, headers=(), body=b""):
        self.answers.append((status, body))

    def go_on(self, request, step):   # Connection's guard, tested in test_router_connection.py
        step()
        return True


class Unwatched:
    def __getattr__(self, name):   # call_started, session_opened, ...: bookkeeping not under test
        return lambda *args: None


class FakeRouter(Unwatched):
    def __init__(self, cpus=2):
        self.loop = FakeLoop(cpus)
        self.supervisor = Unwatched()
        self.config = types.SimpleNamespace(break_grace=1.0, max_queued=Config.max_queued)
        self.pool = types.SimpleNamespace(claim=lambda start, fail: start(FakeWorker(len(self.workers) + 1)))
        self.workers = []
        self.stopping = False

    def session_config(self, session, principal):
        self.workers.append(session.worker)
        return {}

    def readmit(self, conn, message, principal):   # as without auth: no account to resolve again
        return principal


PRINCIPAL = Principal("alice", False)


def manager_for(cpus=2):
    router = FakeRouter(cpus)
    return SessionManager(router), router


def open_session(manager, router):
    conn = FakeConn()
    manager.open(conn, None, {"jsonrpc": "2.0", "id": 0, "method": "initialize"}, b"{}", False, PRINCIPAL)
    session = manager.by_id[next(reversed(manager.by_id))]
    reply(manager, session, session.inflight.seq, 0)
    return session


def call(manager, session, n):
    conn = FakeConn()
    body = b'{"jsonrpc":"2.0","id":%d,"method":"ping"}' % n
    manager.submit(session, conn, {"jsonrpc": "2.0", "id": n, "method": "ping"}, body, False)
    return conn


def reply(manager, session, seq, n):
    raw = b'{"jsonrpc":"2.0","id":%d,"result":{}}' % n
    frame = frames.FrameDecoder(raw_messages=True).feed(frames.message_frame("reply", seq, raw))[0]
    manager.on_worker_frame(session.worker, frame)


def exact(manager):
    """The count agrees with the sessions' own calls in flight."""
    return manager.calls_at_workers == sum(s.inflight is not None for s in manager.by_id.values())


def settled(router):
    router.loop.now += CHURN_QUIET + 0.001


def test_the_router_gives_the_loop_this_rule():
    from gsmcpd.router.main import Router

    router = Router(Config())
    try:
        assert router.loop.may_poll == router.sessions.may_poll
    finally:
        router.close()


def test_a_call_alone_in_flight_may_be_polled_for_and_so_may_the_next_request():
    manager, router = manager_for()
    session = open_session(manager, router)
    assert router.loop.event_due         # asked for at each call sent: initialize,
    router.loop.event_due = False
    settled(router)
    conn = call(manager, session, 1)
    assert manager.calls_at_workers == 1 and manager.may_poll()
    assert router.loop.event_due         # and this one
    reply(manager, session, session.inflight.seq, 1)
    assert manager.calls_at_workers == 0 and conn.answers[0][0] == 200
    assert manager.may_poll()


def test_with_as_many_calls_in_flight_as_cpus_the_loop_may_not_poll():
    manager, router = manager_for(cpus=2)
    first, second = open_session(manager, router), open_session(manager, router)
    settled(router)
    call(manager, first, 1)
    assert manager.may_poll()
    call(manager, second, 2)
    assert manager.calls_at_workers == 2 and not manager.may_poll()
    reply(manager, first, first.inflight.seq, 1)
    assert manager.calls_at_workers == 1 and manager.may_poll()


def test_more_cpus_leave_room_for_more_calls_in_flight():
    manager, router = manager_for(cpus=4)
    sessions = [open_session(manager, router) for _ in range(4)]
    settled(router)
    for n, session in enumerate(sessions[:3]):
        call(manager, session, n)
    assert manager.may_poll()
    call(manager, sessions[3], 3)
    assert manager.calls_at_workers == 4 and not manager.may_poll()


def test_a_session_opening_or_ending_holds_the_poll_back_for_a_while():
    manager, router = manager_for()
    session = open_session(manager, router)
    assert not manager.may_poll()        # just opened
    router.loop.now += CHURN_QUIET / 2
    assert not manager.may_poll()
    router.loop.now += CHURN_QUIET / 2 + 0.001
    assert manager.may_poll()
    call(manager, session, 1)
    manager.end(session, "test")         # with its call in flight
    assert manager.calls_at_workers == 0
    assert not manager.may_poll()        # just ended
    settled(router)
    assert manager.may_poll()


def test_the_count_of_calls_in_flight_stays_exact_on_every_path():
    manager, router = manager_for(cpus=64)
    a, b, c, d, e = (open_session(manager, router) for _ in range(5))
    assert manager.calls_at_workers == 0
    for n, session in enumerate((a, b, c, d, e)):
        call(manager, session, n)
    assert manager.calls_at_workers == 5 and exact(manager)
    call(manager, a, 10)                 # queued behind a's call: not at the worker yet
    assert manager.calls_at_workers == 5 and len(a.queue) == 1
    reply(manager, a, a.inflight.seq, 0)   # a's reply sends the queued call
    assert manager.calls_at_workers == 5 and exact(manager) and not a.queue
    reply(manager, b, b.inflight.seq + 99, 1)   # a reply for no call in flight changes nothing
    assert manager.calls_at_workers == 5 and exact(manager)
    manager.cancel(b, 1)                 # broken: counted until its worker answers
    assert manager.calls_at_workers == 5
    reply(manager, b, b.inflight.seq, 1)
    assert manager.calls_at_workers == 4 and exact(manager)
    manager.fail_inflight(c, -32001, "deadline")   # answered now: counted until the late reply
    assert manager.calls_at_workers == 4
    reply(manager, c, c.inflight.seq, 2)
    assert manager.calls_at_workers == 3 and exact(manager)
    call(manager, b, 20)
    call(manager, b, 21)
    manager.cancel(b, 21)                # a cancelled queued call is skipped, never counted
    reply(manager, b, b.inflight.seq, 20)
    assert b.inflight is None and manager.calls_at_workers == 3 and exact(manager)
    manager.on_worker_exit(d.worker)     # a worker dying mid-call
    manager.end(e, "deleted")
    manager.end(e, "deleted twice")
    assert manager.calls_at_workers == 1 and exact(manager)   # a's second call
    reply(manager, a, a.inflight.seq, 10)
    assert manager.calls_at_workers == 0 and exact(manager)
