import json

import pytest

from gsmcpd.router.breaks import (BREAK, CANCELLED, DEADLINE, DROP, HARD_BREAK, IGNORE,
                                  SOFT_BREAK, STOP, Breaks, CallBreaker, cancel_decision,
                                  cancelled_request_id, deadline_reply, id_key)
from gsmcpd.router.lifetime import LifetimeSettings


def drive(breaks, until):
    out = []
    for _ in range(1000):
        t = breaks.next_wakeup()
        if t is None or t > until:
            return out
        out.extend((t, a) for a in breaks.tick(t))
    raise AssertionError("breaks never stopped asking to be woken")


def test_no_deadline_by_default():
    breaks = Breaks.from_settings(LifetimeSettings())
    breaks.call_started("s", 5, "tools/call", 0.0)
    assert breaks.next_wakeup() is None
    assert breaks.tick(1e9) == []


def test_deadline_escalation_timeline():
    breaks = Breaks(request_timeout=30, break_grace=2)
    breaks.call_started("s", 5, "tools/call", 100.0)
    assert breaks.next_wakeup() == 130.0
    assert breaks.tick(129.9) == []
    assert drive(breaks, 1000.0) == [
        (130.0, (SOFT_BREAK, "s", 5, DEADLINE)),
        (132.0, (HARD_BREAK, "s", 5, DEADLINE)),
        (134.0, (STOP, "s", 5, DEADLINE)),
    ]
    assert breaks.get("s") is None and breaks.next_wakeup() is None


def test_escalation_ends_when_the_call_answers():
    breaks = Breaks(request_timeout=30, break_grace=2)
    breaks.call_started("s", "a", "tools/call", 0.0)
    assert drive(breaks, 30.0) == [(30.0, (SOFT_BREAK, "s", "a", DEADLINE))]
    finished = breaks.call_finished("s")     # the worker answered -32001 and stays usable
    assert finished.done == [SOFT_BREAK] and finished.cancelled is False
    assert drive(breaks, 1000.0) == []


def test_late_poll_never_skips_the_grace():
    breaker = CallBreaker(1, "tools/call", 0.0, request_timeout=10, break_grace=2)
    assert breaker.poll(50.0) == SOFT_BREAK      # the loop was late
    assert breaker.poll(50.0) is None
    assert breaker.next_wakeup() == 52.0
    assert breaker.poll(52.0) == HARD_BREAK
    assert breaker.poll(54.0) == STOP
    assert breaker.poll(100.0) is None and breaker.next_wakeup() is None


def test_cancel_uses_the_same_escalation():
    breaks = Breaks(break_grace=0.5)
    breaks.call_started("s", 9, "tools/call", 0.0)
    assert breaks.cancel("s", 9, 40.0) is True
    assert drive(breaks, 1000.0) == [
        (40.0, (SOFT_BREAK, "s", 9, CANCELLED)),
        (40.5, (HARD_BREAK, "s", 9, CANCELLED)),
        (41.0, (STOP, "s", 9, CANCELLED)),
    ]


def test_cancel_during_a_deadline_escalation_keeps_its_timeline():
    breaks = Breaks(request_timeout=10, break_grace=2)
    breaks.call_started("s", 1, "tools/call", 0.0)
    assert breaks.tick(10.0) == [(SOFT_BREAK, "s", 1, DEADLINE)]
    assert breaks.cancel("s", 1, 11.0) is True
    assert breaks.get("s").cancelled is True       # no response body for it any more
    assert breaks.next_wakeup() == 12.0


def test_cancel_noops():
    breaks = Breaks(break_grace=2)
    assert breaks.cancel("s", 1, 0.0) is False     # no call in flight
    breaks.call_started("s", 1, "tools/call", 0.0)
    assert breaks.cancel("s", 2, 0.0) is False     # another id
    assert breaks.cancel("s", "1", 0.0) is False   # "1" is not 1
    assert breaks.cancel("s", True, 0.0) is False  # True is not 1
    assert breaks.next_wakeup() is None
    breaks.call_finished("s")
    assert breaks.cancel("s", 1, 1.0) is False     # finished
    breaks.call_started("s", 0, "initialize", 2.0)
    assert breaks.cancel("s", 0, 3.0) is False     # initialize cannot be cancelled
    assert breaks.get("s").cancelled is False and breaks.next_wakeup() is None


def test_initialize_still_has_a_deadline():
    breaks = Breaks(request_timeout=5, break_grace=1)
    breaks.call_started("s", 0, "initialize", 0.0)
    assert breaks.tick(5.0) == [(SOFT_BREAK, "s", 0, DEADLINE)]


def test_sessions_escalate_independently():
    breaks = Breaks(request_timeout=10, break_grace=2)
    breaks.call_started("a", 1, "tools/call", 0.0)
    breaks.call_started("b", 1, "tools/call", 5.0)
    timeline = drive(breaks, 11.0)
    assert timeline == [(10.0, (SOFT_BREAK, "a", 1, DEADLINE))]
    assert breaks.next_wakeup() == 12.0


def test_cancel_decision_rule():
    running = (7, "tools/call")
    queued = [(8, "tools/call"), ("x", "tools/list"), (0, "initialize")]
    assert cancel_decision(7, running, queued) == BREAK
    assert cancel_decision(8, running, queued) == DROP
    assert cancel_decision("x", running, queued) == DROP
    assert cancel_decision("7", running, queued) == IGNORE
    assert cancel_decision(99, running, queued) == IGNORE
    assert cancel_decision(0, running, queued) == IGNORE
    assert cancel_decision(0, (0, "initialize")) == IGNORE
    assert cancel_decision(None, running, queued) == IGNORE
    assert cancel_decision(7, None, ()) == IGNORE


def test_cancelled_request_id_and_id_key():
    assert cancelled_request_id({"requestId": 3, "reason": "Esc"}) == 3
    assert cancelled_request_id({"requestId": "r-1"}) == "r-1"
    assert cancelled_request_id({"requestId": False}) is None
    assert cancelled_request_id({"requestId": [1]}) is None
    assert cancelled_request_id({}) is None
    assert cancelled_request_id(None) is None
    assert id_key(1) == id_key(1.0) != id_key("1")
    assert id_key(None) is None


# -- the words of a reply to a call broken for its deadline ------------------------

def _error(message, code=-32001):
    return json.dumps({"jsonrpc": "2.0", "id": 7, "error": {"code": code, "message": message}}).encode()


@pytest.mark.parametrize("worker_said,client_reads", [
    ("request interrupted: soft break", "request timed out after 0.25s (GS_MCP_REQUEST_TIMEOUT) and was interrupted: "
                                        "soft break"),
    ("request interrupted: hard break; it came too late to stop the commit this call made, which stands",
     "request timed out after 0.25s (GS_MCP_REQUEST_TIMEOUT) and was interrupted: hard break; it came too late to "
     "stop the commit this call made, which stands"),
    ("something else", "request timed out after 0.25s (GS_MCP_REQUEST_TIMEOUT): something else"),
])
def test_a_deadline_breaks_reply_says_it_timed_out(worker_said, client_reads):
    reply = json.loads(deadline_reply(_error(worker_said), 0.25))
    assert reply == {"jsonrpc": "2.0", "id": 7, "error": {"code": -32001, "message": client_reads}}


@pytest.mark.parametrize("body", [
    b'{"jsonrpc":"2.0","id":7,"result":{"content":[]}}',      # code that caught the break answered
    _error("request interrupted: soft break", code=-32603),    # or failed in its own words
    b'{"jsonrpc":"2.0","id":7,"error":{"code":-32001,"message":3}}', b'{"jsonrpc":"2.0","id":7,"error":"x"}',
    b"[1]", b"not json",
])
def test_any_other_reply_to_a_deadline_break_is_relayed_as_it_came(body):
    assert deadline_reply(body, 1) is body
