"""A worker's log records as the router writes them (gsmcpd/router/worker_log.py, pure)."""

import pytest

from gsmcpd.router import worker_log
from gsmcpd.router.trace import USER_CAP
from gsmcpd.router.worker_log import BadLogFrame, LogGate, TokenBucket


def test_a_line_names_the_worker_session_and_user_and_stays_one_line():
    who = worker_log.label(4242, "71ff1f5c", "alice")
    assert who == "worker 4242 session 71ff1f5c user alice"
    forged = "boom\n2026-01-01 00:00:00,000 WARNING router: forged\r\x1b[31mred\u2028end"
    text = worker_log.line(who, forged)
    assert text == ("worker 4242 session 71ff1f5c user alice logged: boom\\n2026-01-01 00:00:00,000 "
                    "WARNING router: forged\\r\\x1b[31mred\\u2028end")
    assert text.splitlines() == [text]
    assert worker_log.label(7) == "worker 7"        # a spare: no session yet


def test_a_user_name_is_escaped_and_cut():
    assert worker_log.label(1, "s", "eve\nWARNING x") == "worker 1 session s user eve\\nWARNING x"
    assert worker_log.label(1, "s", "u" * 100).endswith("u" * USER_CAP + "...")


def test_a_long_message_is_cut_at_the_cap_before_escaping():
    text = worker_log.line("worker 1", "\n" * 10, cap=4)
    assert text == "worker 1 logged: \\n\\n\\n\\n...(+6 more chars)"


@pytest.mark.parametrize("frame, why", [
    ({"op": "log", "message": "m"}, "without a level name"),
    ({"op": "log", "level": 30, "message": "m"}, "without a level name"),
    ({"op": "log", "level": "LOUD", "message": "m"}, "level 'LOUD'"),
    ({"op": "log", "level": "ERROR"}, "without a message string"),
    ({"op": "log", "level": "ERROR", "message": ["m"]}, "without a message string"),
])
def test_a_malformed_log_frame_is_refused(frame, why):
    with pytest.raises(BadLogFrame, match=why):
        worker_log.parse(frame)


def test_a_log_frame_parses_to_its_level_number():
    assert worker_log.parse({"op": "log", "level": "WARNING", "message": "m"}) == (30, "m")


def test_the_bucket_allows_a_burst_then_its_rate():
    bucket = TokenBucket(rate=2.0, burst=3, now=100.0)
    assert [bucket.take(100.0) for _ in range(4)] == [True, True, True, False]
    assert bucket.take(100.25) is False          # half a token
    assert bucket.take(100.5) is True            # one token: 0.5 s at 2/s
    assert bucket.take(100.5) is False
    assert [bucket.take(1000.0) for _ in range(4)] == [True, True, True, False]   # refills to the burst only


def test_a_clock_stepping_back_refills_nothing():
    bucket = TokenBucket(rate=1.0, burst=1, now=10.0)
    assert bucket.take(10.0) and not bucket.take(5.0) and not bucket.take(10.5)
    assert bucket.take(11.0)


def test_the_gate_counts_drops_and_reports_them_with_the_next_record_admitted():
    gate = LogGate(now=0.0, rate=1.0, burst=2)
    assert [gate.admit(0.0) for _ in range(5)] == [(True, 0), (True, 0), (False, 0), (False, 0), (False, 0)]
    assert gate.admit(1.0) == (True, 3)           # written, after a line saying 3 were dropped
    assert gate.admit(1.0) == (False, 0)
    assert gate.take_dropped() == 1 and gate.take_dropped() == 0


def test_the_dropped_line_says_how_many_and_the_limit():
    assert worker_log.dropped_line("worker 9", 1, burst=20, rate=2.0) == \
        "worker 9: 1 log record dropped (more than 20 at once, then 2 a second)"
    assert "983 log records dropped" in worker_log.dropped_line("worker 9", 983)
