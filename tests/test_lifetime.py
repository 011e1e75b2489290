import pytest

from gsmcpd.router.lifetime import (IDLE, MAX_LIFETIME, PROBE_UNANSWERED, STREAM_LOST,
                                    STREAMLESS, Lifetime, LifetimeSettings, validate)


def run(lt, until):
    """Drive ``lt`` as the router does: tick at every wake-up up to ``until``.
    Returns [(time, action)]."""
    out = []
    for _ in range(100000):
        t = lt.next_wakeup()
        if t > until:
            return out
        out.extend((t, action) for action in lt.tick(t))
    raise AssertionError("lifetime never stopped asking to be woken")


def kinds(timeline, kind):
    return [(t, a) for t, a in timeline if a[0] == kind]


def new(now=0.0, **knobs):
    return Lifetime(LifetimeSettings(**knobs), now)


# ---- streamless sessions ----------------------------------------------------

def test_streamless_session_reaped_from_its_last_request_never_probed():
    lt = new()
    lt.session_opened("s", 0.0)
    run(lt, 30.0)
    lt.request_arrived("s", 30.0)
    timeline = run(lt, 10000.0)
    assert timeline == [(90.0, ("reap", "s", STREAMLESS))]
    assert "s" not in lt


def test_streamless_count_pays_for_the_pass_it_starts_on():
    lt = new()
    run(lt, 59.0)
    lt.session_opened("s", 59.0)       # one second before a pass
    timeline = run(lt, 1000.0)
    assert timeline == [(119.0, ("reap", "s", STREAMLESS))]


def test_streamless_counts_from_the_end_of_a_long_call():
    lt = new()
    lt.session_opened("s", 0.0)
    lt.call_started("s", 10.0)
    assert run(lt, 300.0) == []
    lt.call_finished("s", 300.0)
    assert run(lt, 1000.0) == [(360.0, ("reap", "s", STREAMLESS))]


# ---- probes on streamed sessions ------------------------------------------

def open_streamed(lt, sid="s", now=0.0, generation=1):
    lt.session_opened(sid, now)
    assert lt.stream_attached(sid, generation, now)


def test_probe_answered_keeps_the_session_but_not_its_clock():
    lt = new()
    open_streamed(lt)
    timeline = run(lt, 1500.0)
    assert timeline == [(1500.0, ("ping", "s", "srv-1", 1))]
    entry = lt.response_received("s", "srv-1", 1510.0)
    assert (entry.kind, entry.session_id, entry.generation) == ("probe", "s", 1)
    timeline = run(lt, 5000.0)
    assert timeline == [(1800.0, ("reap", "s", IDLE))]   # the answer did not reset idle


def test_answered_probe_not_repeated_until_the_next_probe_is_due():
    lt = new(idle_timeout=None)
    open_streamed(lt)
    run(lt, 1500.0)
    lt.response_received("s", "srv-1", 1500.0)
    timeline = run(lt, 2999.0)
    assert timeline == []
    assert run(lt, 3000.0) == [(3000.0, ("ping", "s", "srv-2", 1))]


def test_unanswered_probe_on_current_stream_releases_early():
    lt = new()
    open_streamed(lt)
    timeline = run(lt, 5000.0)
    assert timeline == [(1500.0, ("ping", "s", "srv-1", 1)),
                        (1530.0, ("reap", "s", PROBE_UNANSWERED))]
    assert lt.response_received("s", "srv-1", 1531.0) is None   # too late: ignored


def test_activity_arrives_while_probe_outstanding_no_verdict():
    lt = new()
    open_streamed(lt)
    run(lt, 1500.0)
    lt.request_arrived("s", 1520.0)               # probe due again at 3020: pass at 3060
    timeline = run(lt, 1560.0)
    assert kinds(timeline, "reap") == []
    assert kinds(timeline, "ping") == []              # not idle past probe_after anymore
    assert kinds(run(lt, 4000.0), "reap") == [(3090.0, ("reap", "s", PROBE_UNANSWERED))]


def test_busy_session_is_not_probed():
    lt = new()
    open_streamed(lt)
    lt.call_started("s", 0.0)
    assert run(lt, 5000.0) == []


def test_handover_discards_old_probe_and_reprobes_next_pass():
    lt = new()
    open_streamed(lt)
    assert run(lt, 1500.0) == [(1500.0, ("ping", "s", "srv-1", 1))]
    assert lt.stream_detached("s", 1, 1505.0)
    assert lt.stream_attached("s", 2, 1510.0)          # reattached as generation 2
    timeline = run(lt, 1559.0)
    assert timeline == []                              # old probe timed out at 1530: discarded
    timeline = run(lt, 5000.0)
    assert timeline == [(1560.0, ("ping", "s", "srv-2", 2)),
                        (1590.0, ("reap", "s", PROBE_UNANSWERED))]


def test_superseded_stream_generation_probe_answer_still_counts():
    lt = new(idle_timeout=None)
    open_streamed(lt)
    run(lt, 1500.0)
    lt.stream_attached("s", 2, 1501.0)                 # newest GET supersedes generation 1
    assert lt.response_received("s", "srv-1", 1502.0).generation == 1
    assert run(lt, 3000.0) == []
    assert run(lt, 3060.0) == [(3060.0, ("ping", "s", "srv-2", 2))]


def test_response_from_another_session_or_unknown_id():
    lt = new()
    open_streamed(lt, "a")
    open_streamed(lt, "b")
    run(lt, 1500.0)
    assert lt.response_received("b", "srv-1", 1501.0) is None   # srv-1 went to "a"
    assert lt.response_received("a", 7, 1501.0) is None
    assert lt.response_received("a", "srv-1", 1501.0).session_id == "a"


# ---- stream loss -----------------------------------------------------------

def test_stream_loss_released_when_grace_ends_not_at_next_pass():
    lt = new()
    open_streamed(lt)
    run(lt, 100.0)
    assert lt.stream_detached("s", 1, 100.0)
    assert lt.next_wakeup() == 110.0
    assert run(lt, 1000.0) == [(110.0, ("reap", "s", STREAM_LOST))]


def test_zero_grace_releases_at_once():
    lt = new(stream_loss_grace=0)
    open_streamed(lt)
    run(lt, 100.0)
    lt.stream_detached("s", 1, 100.5)
    assert lt.next_wakeup() == 100.5
    assert lt.tick(100.5) == [("reap", "s", STREAM_LOST)]


def test_grace_retracted_by_a_request_then_streamless_rule():
    lt = new()
    open_streamed(lt)
    run(lt, 100.0)
    lt.stream_detached("s", 1, 100.0)
    run(lt, 105.0)
    lt.request_arrived("s", 105.0)
    assert run(lt, 1000.0) == [(165.0, ("reap", "s", STREAMLESS))]


def test_grace_retracted_by_a_new_stream():
    lt = new()
    open_streamed(lt)
    run(lt, 100.0)
    lt.stream_detached("s", 1, 100.0)
    run(lt, 105.0)
    assert lt.stream_attached("s", 2, 105.0)
    timeline = run(lt, 1000.0)
    assert timeline == []
    assert lt.stream_detached("s", 2, 1000.0)          # generation 2 was the current stream


def test_grace_retracted_by_a_call_in_flight():
    lt = new()
    open_streamed(lt)
    run(lt, 100.0)
    lt.stream_detached("s", 1, 100.0)
    lt.call_started("s", 105.0)
    assert run(lt, 3000.0) == []
    lt.call_finished("s", 3000.0)
    assert run(lt, 4000.0) == [(3060.0, ("reap", "s", STREAMLESS))]


def test_stream_closing_during_a_call_gets_no_grace_verdict():
    lt = new()
    open_streamed(lt)
    lt.call_started("s", 50.0)
    lt.stream_detached("s", 1, 100.0)
    assert run(lt, 500.0) == []
    lt.call_finished("s", 500.0)
    assert run(lt, 1000.0) == [(560.0, ("reap", "s", STREAMLESS))]


def test_superseded_stream_detach_is_no_news_and_old_attach_loses():
    lt = new()
    open_streamed(lt)
    assert lt.stream_attached("s", 2, 10.0)
    assert lt.stream_detached("s", 1, 20.0) is False   # the superseded one ended
    assert lt.stream_attached("s", 1, 21.0) is False   # an older generation never wins
    assert run(lt, 1000.0) == []
    assert lt.stream_detached("s", 2, 1000.0)          # generation 2 is still the current stream


# ---- late passes, indefinite sessions, the cap, busy sessions ---------------

def test_wildly_late_pass_is_forgiven():
    lt = new()
    open_streamed(lt, "streamed")
    lt.session_opened("post-only", 0.0)
    lt.request_arrived("post-only", 50.0)
    run(lt, 60.0)                                  # nothing due yet at the 60 s pass
    actions = lt.tick(60.0 + 4000.0)               # host suspend: > 3 x interval late
    assert actions == [("forgiven", 4000.0)]
    assert "streamed" in lt and "post-only" in lt
    timeline = run(lt, 10000.0)
    assert (4110.0, ("reap", "post-only", STREAMLESS)) in timeline   # 10 s of its 60 left
    assert kinds(timeline, "ping")[0] == (5500.0, ("ping", "streamed", "srv-1", 1))


def test_moderately_late_pass_is_not_forgiven():
    lt = new()
    lt.session_opened("s", 0.0)
    actions = lt.tick(170.0)                       # the first pass, 110 s late: under 3 x 60
    assert actions == [("reap", "s", STREAMLESS)]


def test_indefinite_session_lives_while_it_answers_probes():
    lt = new(idle_timeout=None)
    open_streamed(lt)
    answered = 0
    now = 0.0
    while now < 20000.0:
        now = lt.next_wakeup()
        for action in lt.tick(now):
            assert action[0] == "ping"
            lt.response_received("s", action[2], now + 1.0)
            answered += 1
    assert answered >= 12 and "s" in lt
    timeline = run(lt, 40000.0)                     # it stops answering
    assert [a for _, a in timeline][-1] == ("reap", "s", PROBE_UNANSWERED)
    assert len(kinds(timeline, "ping")) == 1


def test_indefinite_session_without_stream_keeps_the_streamless_floor():
    lt = new(idle_timeout=None)
    lt.session_opened("s", 0.0)
    assert run(lt, 1000.0) == [(60.0, ("reap", "s", STREAMLESS))]


def test_absolute_cap_ends_an_active_session():
    lt = new(max_session_lifetime=600)
    open_streamed(lt)
    reaped = []
    for now in range(50, 1000, 50):
        reaped += run(lt, float(now))
        if "s" in lt:
            lt.request_arrived("s", float(now))
    assert reaped == [(600.0, ("reap", "s", MAX_LIFETIME))]


def test_cap_waits_for_a_call_in_flight():
    lt = new(max_session_lifetime=600)
    open_streamed(lt)
    lt.call_started("s", 500.0)
    assert run(lt, 900.0) == []
    lt.call_finished("s", 900.0)
    assert lt.tick(900.0) == [("reap", "s", MAX_LIFETIME)]


def test_busy_session_never_reaped():
    lt = new()
    lt.session_opened("quiet", 0.0)
    open_streamed(lt, "busy")
    lt.call_started("busy", 1.0)
    timeline = run(lt, 10000.0)
    assert timeline == [(60.0, ("reap", "quiet", STREAMLESS))]
    assert lt.deadline("busy") is None                 # still busy: no rule applies
    lt.call_finished("busy", 10000.0)           # probe due 11500, pass 11520, timeout 11550
    assert kinds(run(lt, 20000.0), "reap") == [(11550.0, ("reap", "busy", PROBE_UNANSWERED))]


def test_idle_deadline_with_stream_and_activity():
    lt = new()
    open_streamed(lt)
    run(lt, 1000.0)
    lt.request_arrived("s", 1000.0)
    timeline = run(lt, 5000.0)
    # passes keep their 60 s grid: due at 2500, sent by the pass at 2520
    assert timeline[0] == (2520.0, ("ping", "s", "srv-1", 1))
    lt2 = new()
    open_streamed(lt2)
    run(lt2, 1500.0)
    lt2.response_received("s", "srv-1", 1500.0)
    assert run(lt2, 1799.0) == []
    assert lt2.tick(1800.0) == [("reap", "s", IDLE)]


def test_session_ended_forgets_everything_and_events_for_unknown_are_ignored():
    lt = new()
    open_streamed(lt)
    run(lt, 1500.0)
    assert len(lt.pending) == 1
    lt.session_ended("s")
    lt.session_ended("s")
    assert len(lt.pending) == 0 and len(lt) == 0
    lt.request_arrived("s", 1600.0)
    lt.call_started("s", 1600.0)
    assert lt.stream_attached("s", 3, 1600.0) is False
    assert lt.stream_detached("s", 3, 1600.0) is False
    assert "s" not in lt and lt.deadline("s") is None
    assert run(lt, 3000.0) == []


# ---- settings ---------------------------------------------------------------

def test_defaults_and_forms_accepted():
    s = validate()
    assert (s.idle_timeout, s.probe_after, s.streamless_idle_timeout, s.stream_loss_grace,
            s.max_session_lifetime, s.request_timeout, s.break_grace,
            s.maintenance_interval, s.ping_timeout) == (1800, 1500, 60, 10, None, None, 2, 60, 30)
    assert validate({"idle_timeout": None, "break_grace": 0.5}).break_grace == 0.5

    class Config:
        idle_timeout = 3600
        probe_after = 3000.5
        other_setting = "ignored"
    assert validate(Config()).probe_after == 3000.5


def test_text_is_refused_not_parsed():
    # Text (a conf file, the environment) is gsmcpd.config's to parse, with one syntax
    # and one message per mistake for every knob.
    with pytest.raises(ValueError, match=r"GS_MCP_BREAK_GRACE \(break_grace\) must be a number of seconds, got '0.5'"):
        validate({"break_grace": "0.5"})
    with pytest.raises(ValueError, match="must be a number of seconds, got 'none'"):
        validate({"idle_timeout": "none"})


@pytest.mark.parametrize("knobs, named", [
    ({"idle_timeout": -1}, "GS_MCP_IDLE_TIMEOUT"),
    ({"idle_timeout": 0}, "idle_timeout"),
    ({"probe_after": -5}, "probe_after"),
    ({"probe_after": None}, "probe_after"),
    ({"streamless_idle_timeout": 0}, "streamless_idle_timeout"),
    ({"stream_loss_grace": -0.1}, "GS_MCP_STREAM_LOSS_GRACE"),
    ({"max_session_lifetime": -1}, "max_session_lifetime"),
    ({"request_timeout": 0}, "request_timeout"),
    ({"break_grace": 0}, "break_grace"),
    ({"maintenance_interval": 0}, "maintenance_interval"),
    ({"ping_timeout": -30}, "ping_timeout"),
    ({"ping_timeout": float("inf")}, "ping_timeout"),
    ({"ping_timeout": float("nan")}, "ping_timeout"),
    ({"break_grace": True}, "break_grace"),
    ({"break_grace": "soon"}, "GS_MCP_BREAK_GRACE"),
    ({"ping_timeout": "none"}, "ping_timeout"),
    ({"probe_after": 1800}, "GS_MCP_PROBE_AFTER"),
    ({"probe_after": 2000}, "probe_after"),
    ({"probe_after": 1790}, "ping_timeout"),
    ({"maintenance_interval": 400}, "maintenance_interval"),
    ({"stream_loss_grace": 1801}, "stream_loss_grace"),
    ({"streamless_idle_timeout": 2000}, "streamless_idle_timeout"),
])
def test_unworkable_settings_refused_naming_the_knob(knobs, named):
    with pytest.raises(ValueError, match=named):
        validate(knobs)
    with pytest.raises(ValueError, match=named):
        Lifetime(knobs, 0.0)


def test_indefinite_idle_lifts_the_idle_relations():
    s = validate({"idle_timeout": None, "probe_after": 5000, "stream_loss_grace": 4000,
                  "streamless_idle_timeout": 3000, "maintenance_interval": 600})
    assert s.idle_timeout is None and s.probe_after == 5000


def test_outstanding_probe_survives_a_forgiven_stall():
    lt = new()
    open_streamed(lt)
    run(lt, 1500.0)                                  # ping srv-1 sent at 1500, due back by 1530
    assert lt.tick(1510.0 + 4000.0) == [("forgiven", 4010.0)]
    assert "s" in lt
    assert lt.response_received("s", "srv-1", 5520.0).kind == "probe"
    assert kinds(run(lt, 6000.0), "reap") == [(5810.0, ("reap", "s", IDLE))]


def test_a_request_after_a_probe_still_counts_when_a_stall_is_forgiven():
    # Probe sent at the pass of 1500, the client's request just after it, then the loop
    # stalls. Shifting both clocks by the gap (clamped to now) must not make the request
    # look no later than the probe: the client showed itself since.
    lt = new(idle_timeout=None)
    open_streamed(lt)
    assert [a[0] for _, a in run(lt, 1500.0)] == ["ping"]
    lt.request_arrived("s", 1500.5)
    assert lt.tick(5500.0) == [("forgiven", 4000.0)]
    assert kinds(run(lt, 5600.0), "reap") == []
    assert "s" in lt


def test_wired_with_an_outbox_the_newest_get_decides():
    from gsmcpd.router.outbox import Outbox
    box = Outbox()
    lt = new()
    lt.session_opened("s", 0.0)
    first = box.attach()
    lt.stream_attached("s", first, 0.0)
    ((_, ping),) = run(lt, 1500.0)
    box.push({"jsonrpc": "2.0", "id": ping[2], "method": "ping"})
    second = box.attach()                            # the client reopens its GET
    lt.stream_attached("s", second, 1501.0)
    assert box.drain(first) == ([], False)           # the old writer ends without the ping
    assert box.drain(second)[0][0]["id"] == "srv-1"  # the ping goes down the new stream
    assert box.detach(first) is False and lt.stream_detached("s", first, 1502.0) is False
    assert run(lt, 1559.0) == []                     # generation-1 probe discarded, not a verdict
    assert run(lt, 1560.0) == [(1560.0, ("ping", "s", "srv-2", second))]


def test_deadline_is_the_earliest_rule_and_none_while_busy_or_unknown():
    life = Lifetime(LifetimeSettings(streamless_idle_timeout=60, idle_timeout=1800), 0)
    life.session_opened("s", 0)
    assert life.deadline("s") == 60
    life.call_started("s", 10)
    assert life.deadline("s") is None
    assert life.call_finished("s", 20) == 80          # the deadline from then on, as deadline() says
    assert life.deadline("s") == 80
    assert life.deadline("unknown") is None
    assert life.call_finished("unknown", 30) is None


@pytest.mark.parametrize("settings, stream, lost_at, expected", [
    # each rule wins when it is earliest
    (dict(max_session_lifetime=50, streamless_idle_timeout=60, idle_timeout=70), None, None, (50, MAX_LIFETIME)),
    (dict(max_session_lifetime=90, streamless_idle_timeout=60, idle_timeout=70), None, None, (60, STREAMLESS)),
    (dict(max_session_lifetime=90, streamless_idle_timeout=60, idle_timeout=70), 1, None, (70, IDLE)),
    (dict(streamless_idle_timeout=60, idle_timeout=70, stream_loss_grace=5), None, 10, (15, STREAM_LOST)),
    # on a tie, the rule listed first: the cap, then the stream rules, then idle
    (dict(max_session_lifetime=60, streamless_idle_timeout=60, idle_timeout=70), None, None, (60, MAX_LIFETIME)),
    (dict(streamless_idle_timeout=60, idle_timeout=60), None, None, (60, STREAMLESS)),
    (dict(max_session_lifetime=70, idle_timeout=70), 1, None, (70, MAX_LIFETIME)),
    # no rule at all: never
    (dict(max_session_lifetime=None, idle_timeout=None), 1, None, (None, None)),
])
def test_deadline_names_the_earliest_rule_and_the_first_listed_on_a_tie(settings, stream, lost_at, expected):
    # No pass before the deadline (and no stall forgiven at it): the tick there reaps alone.
    life = Lifetime(LifetimeSettings(**dict(dict(probe_after=10, maintenance_interval=50), **settings)), 0)
    life.session_opened("s", 0)
    if stream is not None:
        assert life.stream_attached("s", stream, 0)
    if lost_at is not None:
        life.stream_attached("s", 1, 0)
        life.stream_detached("s", 1, lost_at)
    when, reason = expected
    assert life.deadline("s") == when
    if when is not None:
        assert life.tick(when) == [("reap", "s", reason)]
