"""The router's rate bounds, on a fake clock: TokenBucket, and Pacer, which thins one
call's notifications to a rate while keeping the latest (router/pacing.py)."""

import pytest

from gsmcpd.router.pacing import NOTIFY_BURST, NOTIFY_RATE, Pacer, TokenBucket


def test_a_bucket_says_how_long_until_its_next_token():
    bucket = TokenBucket(rate=4.0, burst=2, now=10.0)
    assert bucket.delay(10.0) == 0.0
    assert bucket.take(10.0) and bucket.take(10.0) and not bucket.take(10.0)
    assert bucket.delay(10.0) == pytest.approx(0.25)
    assert bucket.delay(10.125) == pytest.approx(0.125)
    assert not bucket.take(10.2) and bucket.take(10.25)


def test_the_burst_passes_then_one_waits_as_the_latest_with_one_wake_up():
    pacer = Pacer(now=0.0, rate=2.0, burst=3)
    assert [pacer.offer(n, 0.0) for n in (1, 2, 3)] == [(1, None), (2, None), (3, None)]
    send, wake = pacer.offer(4, 0.0)
    assert send is None and wake == pytest.approx(0.5)
    assert [pacer.offer(n, 0.1) for n in (5, 6)] == [(None, None), (None, None)]   # replace, no new wake-up
    assert pacer.due(0.5) == (6, None)          # the newest, when the budget allows
    assert pacer.due(0.6) == (None, None)       # nothing pending: nothing to do
    assert pacer.flush() is None


def test_an_early_wake_up_waits_again_and_the_message_still_comes():
    pacer = Pacer(now=0.0, rate=1.0, burst=1)
    pacer.offer("a", 0.0)
    assert pacer.offer("b", 0.0) == (None, 1.0)
    send, wake = pacer.due(0.75)
    assert send is None and wake == pytest.approx(0.25)
    assert pacer.due(1.0) == ("b", None)


def test_the_calls_end_takes_the_pending_one_whatever_the_budget():
    pacer = Pacer(now=0.0, rate=1.0, burst=1)
    pacer.offer(1, 0.0)
    for n in range(2, 1000):
        pacer.offer(n, 0.0)
    assert pacer.flush() == 999
    assert pacer.flush() is None
    assert pacer.due(5.0) == (None, None)     # a wake-up after it finds nothing


def test_a_tight_loop_gets_at_most_the_burst_plus_the_rate_and_its_last_value():
    pacer = Pacer(now=0.0)
    sent, wake_at, now = [], None, 0.0
    for n in range(1, 100001):                  # 100,000 notifications over 10 s
        now = n / 10000
        if wake_at is not None and now >= wake_at:
            message, again = pacer.due(now)
            if message is not None:
                sent.append(message)
            wake_at = now + again if again is not None else None
        message, wake = pacer.offer(n, now)
        if message is not None:
            sent.append(message)
        if wake is not None:
            wake_at = now + wake
    sent.append(pacer.flush())
    assert len(sent) <= NOTIFY_BURST + NOTIFY_RATE * now + 1
    assert len(sent) >= NOTIFY_RATE * now        # the rate is used, not starved
    assert sent == sorted(sent) and sent[-1] == 100000


def test_a_clock_stepping_back_refills_nothing():
    pacer = Pacer(now=100.0, rate=1.0, burst=1)
    assert pacer.offer(1, 100.0) == (1, None)
    assert pacer.offer(2, 50.0)[0] is None
    assert pacer.due(50.5)[0] is None and pacer.due(101.0) == (2, None)
