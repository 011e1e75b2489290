"""The router's heap trim: when it is due (TrimPolicy, pure), and the supervisor's timer
running it only then."""

import logging
from types import SimpleNamespace

import pytest

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
    assert memtrim.malloc_trim() is None


def test_malloc_trim_says_whether_libc_returned_memory(monkeypatch):
    # glibc's answer was dropped: a trim with no free pages to give back was told as one that gave.
    monkeypatch.setattr(memtrim, "_TRIM", lambda pad: 0)
    assert memtrim.malloc_trim() is False
    monkeypatch.setattr(memtrim, "_TRIM", lambda pad: 1)
    assert memtrim.malloc_trim() is True


def supervisor_counting_trims(monkeypatch, released=True):
    trims = []
    monkeypatch.setattr(supervision, "malloc_trim", lambda: trims.append(1) or released)
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


@pytest.mark.parametrize("released, said", [(True, "freed memory returned to the system"),
                                            (False, "no free memory to return")])
def test_a_trim_s_log_line_says_whether_it_returned_memory(monkeypatch, caplog, released, said):
    supervisor, loop, trims = supervisor_counting_trims(monkeypatch, released)
    ended_session(supervisor)
    with caplog.at_level(logging.DEBUG, logger="gsmcpd.lifetime"):
        loop.fire(loop.armed[0])
    assert trims == [1]
    assert [r.getMessage() for r in caplog.records if "malloc_trim" in r.getMessage()] == [
        f"heap trimmed (malloc_trim), trim 1: {said}"]


def test_no_trim_is_logged_where_libc_has_none(monkeypatch, caplog):
    supervisor, loop, trims = supervisor_counting_trims(monkeypatch, None)
    ended_session(supervisor)
    with caplog.at_level(logging.DEBUG, logger="gsmcpd.lifetime"):
        loop.fire(loop.armed[0])
    assert trims == [1] and not [r for r in caplog.records if "malloc_trim" in r.getMessage()]
    assert supervisor.heap.trims == 1 and not supervisor.heap.due(loop.now + 3600)
