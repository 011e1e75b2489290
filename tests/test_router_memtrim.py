"""The router's heap trim: when it is due (TrimPolicy, pure), and the supervisor's timer
running it only then."""

from types import SimpleNamespace

from gsmcpd.router import memtrim, supervision
from gsmcpd.router.lifetime import LifetimeSettings
from gsmcpd.router.memtrim import TrimPolicy
from gsmcpd.router.supervision import Supervisor

from test_router_supervision import ClockLoop


def test_nothing_to_give_back_before_a_session_ends():
    policy = TrimPolicy(60.0, now=0.0)
    assert not policy.due(60.0)
    assert not policy.due(100000.0)


def test_a_session_s_end_makes_a_trim_due_once_an_interval_has_passed_since_the_last():
    policy = TrimPolicy(60.0, now=0.0)
    policy.session_ended()
    assert not policy.due(59.0)
    assert policy.due(60.0)


def test_after_a_trim_the_next_waits_for_a_new_end_and_a_whole_interval():
    policy = TrimPolicy(60.0, now=0.0)
    policy.session_ended()
    policy.trimmed(70.0)
    assert not policy.due(200.0)          # nothing ended since
    policy.session_ended()
    assert not policy.due(129.0)          # at most once an interval, however many end
    assert policy.due(130.0)
    assert policy.trims == 1


def test_many_ends_still_make_one_trim():
    policy = TrimPolicy(60.0, now=0.0)
    for _ in range(1000):
        policy.session_ended()
    policy.trimmed(60.0)
    assert not policy.due(1000.0) and policy.trims == 1


def test_malloc_trim_is_a_no_op_where_libc_has_none(monkeypatch):
    monkeypatch.setattr(memtrim, "_TRIM", None)
    assert memtrim.malloc_trim() is False


def supervisor_counting_trims(monkeypatch):
    trims = []
    monkeypatch.setattr(supervision, "malloc_trim", lambda: trims.append(1) or True)
    loop = ClockLoop()
    supervisor = Supervisor(SimpleNamespace(loop=loop, config=LifetimeSettings()))
    return supervisor, loop, trims


def ended_session(supervisor):
    session = SimpleNamespace(id="sid-1", short="sid-1", stream_expiry=None, outbox=None)
    supervisor.lifetime.session_opened(session.id, supervisor.loop.now)
    supervisor.session_ended(session)


def test_the_maintenance_pass_trims_after_a_session_ended_and_not_again_without_one(monkeypatch):
    supervisor, loop, trims = supervisor_counting_trims(monkeypatch)
    ended_session(supervisor)
    assert trims == []                    # never as the session ends: on the timer
    loop.fire(loop.armed[0])              # the first maintenance pass, 60 s on
    assert trims == [1]
    loop.fire(loop.armed[0])
    loop.fire(loop.armed[0])
    assert trims == [1]


def test_an_idle_router_never_trims(monkeypatch):
    supervisor, loop, trims = supervisor_counting_trims(monkeypatch)
    for _ in range(5):
        loop.fire(loop.armed[0])
    assert trims == []
