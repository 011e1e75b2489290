"""Supervisor: what it logs of the lifetime policy's actions, on a clock the test moves."""

import logging
import time
from types import SimpleNamespace

from gsmcpd.router.breaks import SOFT_BREAK, STOP
from gsmcpd.router.lifetime import LifetimeSettings
from gsmcpd.router.loop import Timer
from gsmcpd.router.repeats import RepeatedLog
from gsmcpd.router.supervision import Supervisor
from gsmcpd.wire.break_signals import SOFT_BREAK_SIGNAL


class ClockLoop:
    """The loop's timer surface on a clock the test sets; `fire` runs the armed timer."""

    def __init__(self):
        self.now = 0.0
        self.armed = None

    def call_at(self, when, callback):
        self.armed = (when, callback)
        return SimpleNamespace(cancel=lambda: None)

    def fire(self, at):
        self.now = at
        _, callback = self.armed
        callback()


class TimerLoop(ClockLoop):
    """ClockLoop whose call_later hands out real Timers, every one kept for the test to see."""

    def __init__(self):
        super().__init__()
        self.timers = []

    def call_later(self, delay, callback):
        timer = Timer(self.now + delay, callback)
        self.timers.append(timer)
        return timer


def streaming_session(supervisor, token_lifetime=3600):
    """A session whose GET stream (generation 1) ends when its token, good for
    `token_lifetime` more seconds, expires: (session, its stream's connection, the expiry timer)."""
    conn = SimpleNamespace(closed=False, streaming=True, on_stream_lost=None)
    session = SimpleNamespace(id="sid-1", short="sid-1", stream=conn, stream_generation=1, stream_expiry=None,
                              outbox=SimpleNamespace(detach=lambda generation: None))
    supervisor.lifetime.session_opened(session.id, 0.0)
    supervisor.lifetime.stream_attached(session.id, 1, 0.0)
    supervisor.end_stream_at(session, conn, time.time() + token_lifetime)
    return session, conn, supervisor.loop.timers[-1]


def test_a_stream_s_expiry_timer_lets_go_of_its_session_when_the_session_ends():
    # It stayed armed until the token's expiry (an hour, a day, with some IdPs), holding the
    # ended session, its stream's connection and its worker: ~40 KiB a session over TLS.
    supervisor = Supervisor(SimpleNamespace(loop=TimerLoop(), config=LifetimeSettings()))
    session, _, expiry = streaming_session(supervisor)
    session.outbox = None
    supervisor.session_ended(session)
    assert expiry.cancelled and expiry.callback is None
    assert session.stream_expiry is None


def test_a_stream_s_expiry_timer_lets_go_of_it_when_its_client_goes_away():
    supervisor = Supervisor(SimpleNamespace(loop=TimerLoop(), config=LifetimeSettings()))
    session, conn, expiry = streaming_session(supervisor)
    supervisor._stream_lost(session, conn, 1)   # what on_stream_lost calls as the connection closes
    assert expiry.cancelled and expiry.callback is None


def test_a_newer_stream_replaces_the_older_one_s_expiry_timer():
    supervisor = Supervisor(SimpleNamespace(loop=TimerLoop(), config=LifetimeSettings()))
    session, conn, first = streaming_session(supervisor)
    supervisor.end_stream_at(session, conn, time.time() + 60)   # as a reattached GET's token arms its own
    assert first.cancelled and first.callback is None
    assert session.stream_expiry is supervisor.loop.timers[-1] and not session.stream_expiry.cancelled


def test_a_stream_still_ends_when_its_token_expires():
    supervisor = Supervisor(SimpleNamespace(loop=TimerLoop(), config=LifetimeSettings()))
    ended = []
    session, conn, expiry = streaming_session(supervisor, token_lifetime=0)
    conn.end_stream = lambda: ended.append(conn)
    expiry.callback()
    assert ended == [conn] and session.stream is None and session.stream_expiry is None


def test_a_stall_is_logged_as_the_time_since_the_timers_last_ran_which_is_what_is_forgiven(caplog):
    # It said "maintenance ran 4000s late" of a pass due at 120 and run at 4060: 3940 s late.
    loop = ClockLoop()
    Supervisor(SimpleNamespace(loop=loop, config=LifetimeSettings()))
    loop.fire(60.0)                       # the first maintenance pass, on time
    assert loop.armed[0] == 120.0         # the next one is due at 120
    caplog.set_level(logging.WARNING, logger="gsmcpd.lifetime")
    loop.fire(4060.0)                     # the host slept through it
    assert [record.getMessage() for record in caplog.records] == [
        "lifetime timers last ran 4000s ago (host suspended, or the loop stalled?); "
        "idle clocks forgiven that long"]


def test_a_response_to_no_request_logs_its_id_cut_however_long_the_client_made_it(caplog):
    # It logged the id whole: a POSTed response with a 16 MiB id wrote 16 MiB to the log.
    supervisor = supervisor_logging_repeats()
    session = SimpleNamespace(id="sid-1", short="sid-1")
    caplog.set_level(logging.INFO, logger="gsmcpd.lifetime")
    supervisor.client_response(session, {"jsonrpc": "2.0", "id": "A" * 1_000_000, "result": {}})
    assert [record.getMessage() for record in caplog.records] == [
        "session sid-1: response to an unknown request '%s... ignored" % ("A" * 79)]


def supervisor_logging_repeats():
    """A Supervisor whose router has its RepeatedLog, on a loop of its own."""
    return Supervisor(SimpleNamespace(loop=ClockLoop(), config=LifetimeSettings(),
                                      repeated=RepeatedLog(ClockLoop())))


def test_a_client_looping_on_responses_to_no_request_is_logged_once_per_session_whatever_the_ids(caplog):
    # A line per response: a client looping on them, a new id each time, flooded the log.
    supervisor = supervisor_logging_repeats()
    caplog.set_level(logging.INFO, logger="gsmcpd.lifetime")
    for short in ("sid-1", "sid-2"):
        session = SimpleNamespace(id=short + "-whole", short=short)
        for n in range(50):
            supervisor.client_response(session, {"jsonrpc": "2.0", "id": n, "result": {}})
    assert [record.getMessage() for record in caplog.records] == [
        "session sid-1: response to an unknown request 0 ignored",
        "session sid-2: response to an unknown request 0 ignored"]


def test_a_break_logs_the_request_id_cut_however_long_the_client_made_it(caplog):
    # A call past its deadline logged its id whole: a 16 MiB id at each break step.
    signals = []
    session = SimpleNamespace(short="sid-1", inflight=None, worker=SimpleNamespace(signal=signals.append))
    router = SimpleNamespace(loop=ClockLoop(), config=LifetimeSettings(),
                             sessions=SimpleNamespace(by_id={"sid-1": session}))
    caplog.set_level(logging.WARNING, logger="gsmcpd.lifetime")
    Supervisor(router)._break_action(SOFT_BREAK, "sid-1", "B" * 1_000_000, "deadline")
    assert [record.getMessage() for record in caplog.records] == [
        "session sid-1: soft break of request '%s... (deadline)" % ("B" * 79)]
    assert signals == [SOFT_BREAK_SIGNAL]


def stopped_call_messages(request_id, request_timeout=2.5):
    """The -32001 messages the stop step answers an uncancelled call with; the worker killed once."""
    failed, killed = [], []
    call = SimpleNamespace(cancelled=False)
    session = SimpleNamespace(short="sid-1", inflight=call, worker=SimpleNamespace(kill=lambda: killed.append(1)))
    sessions = SimpleNamespace(by_id={"sid-1": session},
                               fail_inflight=lambda s, code, message: failed.append((code, message)),
                               end=lambda s, why: None)
    router = SimpleNamespace(loop=ClockLoop(), config=LifetimeSettings(request_timeout=request_timeout),
                             sessions=sessions)
    Supervisor(router)._break_action(STOP, "sid-1", request_id, "deadline")
    assert killed == [1]
    return [message for _, message in failed]


def test_a_stop_answers_the_client_with_the_request_id_cut_however_long_the_client_made_it():
    # The -32001 message quoted the id whole (the response's own id carries it in full).
    assert stopped_call_messages("C" * 1_000_000) == [
        "request '%s... timed out after 2.5s (GS_MCP_REQUEST_TIMEOUT) and its worker had to be stopped; "
        "the session is finished" % ("C" * 79)]


def test_a_stop_names_the_deadline_and_its_knob_as_the_breaks_replies_do():
    # It said only "outran its deadline": the soft and hard breaks' replies name the
    # length and GS_MCP_REQUEST_TIMEOUT, the stop (the one that costs the session) did not.
    assert stopped_call_messages(7, request_timeout=0.5) == [
        "request 7 timed out after 0.5s (GS_MCP_REQUEST_TIMEOUT) and its worker had to be stopped; "
        "the session is finished"]
