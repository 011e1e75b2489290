"""Log lines a client can cause at will, one per request, kept from flooding the log
(gsmcpd/router/repeats.py); end to end in test_e2e_auth.py, test_e2e_peruser.py and
test_e2e_lifetime.py."""

import logging

from gsmcpd.router.repeats import RepeatLimit, RepeatedLog, held_line, others_line

W = logging.WARNING
LOG = logging.getLogger("gsmcpd.test.repeats")
REFUSED = "user 'eve' has no local account mapping: refused"


def admit(limit, text, now, key=None, level=W):
    return limit.admit(LOG, level, text, text if key is None else key, now)


def test_a_line_is_written_once_then_held_back_and_counted_until_its_interval_ends():
    limit = RepeatLimit(interval=60, keys=10)
    assert admit(limit, REFUSED, 0.0)
    assert [admit(limit, REFUSED, t) for t in (1.0, 2.0, 59.0)] == [False] * 3
    assert limit.next_due() == 60.0
    assert limit.sweep(59.5) == []                       # not ended yet
    assert limit.sweep(60.0) == [(LOG, W, held_line(REFUSED, 3, 60))]
    assert held_line(REFUSED, 3, 60) == REFUSED + " (and 3 more like it within 60 s, not logged one by one)"


def test_a_client_looping_on_it_gets_one_line_per_interval_and_once_it_stops_the_line_is_written_again():
    limit = RepeatLimit(interval=60, keys=10)
    admit(limit, REFUSED, 0.0)
    admit(limit, REFUSED, 30.0)
    assert limit.sweep(60.0) == [(LOG, W, held_line(REFUSED, 1, 60))]
    assert not admit(limit, REFUSED, 61.0)               # the next interval counts on
    assert limit.sweep(120.0) == [(LOG, W, held_line(REFUSED, 1, 60))]
    assert limit.sweep(180.0) == []                      # none came: forgotten
    assert limit.next_due() is None
    assert admit(limit, REFUSED, 200.0)


def test_different_lines_are_counted_apart():
    limit = RepeatLimit(interval=60, keys=10)
    other = "user 'mallory' presented session 71ff1f5c of another user: answered 404"
    assert admit(limit, REFUSED, 0.0) and admit(limit, other, 1.0)
    assert not admit(limit, other, 2.0)
    assert limit.sweep(60.0) == []                       # eve's interval ended with none held
    assert limit.sweep(61.0) == [(LOG, W, held_line(other, 1, 60))]


def test_lines_of_one_key_are_counted_together_and_the_first_is_the_one_repeated():
    limit = RepeatLimit(interval=60, keys=10)
    lines = ["session 71ff1f5c: response to an unknown request %d ignored" % n for n in range(5)]
    assert [admit(limit, text, 1.0, key="71ff1f5c") for text in lines] == [True] + [False] * 4
    assert limit.sweep(61.0) == [(LOG, W, held_line(lines[0], 4, 60))]


def test_beyond_the_keys_remembered_others_are_counted_together_and_memory_stays_bounded():
    limit = RepeatLimit(interval=60, keys=2)
    users = ["user 'u%d' has no local account mapping: refused" % n for n in range(50)]
    written = [admit(limit, text, 1.0) for text in users]
    assert written == [True, True] + [False] * 48
    assert len(limit._windows) == 2
    [(_, level, line)] = limit.sweep(61.0)
    assert (level, line) == (W, others_line(48, 60, 2))
    assert limit.next_due() is None                      # all forgotten
    assert admit(limit, users[10], 62.0)                 # room again


def test_the_level_of_a_line_is_kept_for_its_count():
    limit = RepeatLimit(interval=60, keys=10)
    admit(limit, "info line", 0.0, level=logging.INFO)
    admit(limit, "info line", 1.0, level=logging.INFO)
    assert limit.sweep(60.0) == [(LOG, logging.INFO, held_line("info line", 1, 60))]


class FakeLoop:
    def __init__(self):
        self.now, self.timers = 0.0, []

    def call_at(self, when, callback):
        self.timers.append((when, callback))
        return (when, callback)   # a handle, as the loop's

    def run_due(self):
        due = [t for t in self.timers if t[0] <= self.now]
        self.timers = [t for t in self.timers if t[0] > self.now]
        for _, callback in due:
            callback()


def test_the_loop_writes_the_first_line_and_the_count_as_the_interval_ends(caplog):
    loop = FakeLoop()
    repeated = RepeatedLog(loop, RepeatLimit(interval=60, keys=10))
    with caplog.at_level(logging.INFO, logger="gsmcpd.test.repeats"):
        for n in range(100):
            loop.now = n * 0.1
            repeated.log(LOG, W, REFUSED)
        assert [r.getMessage() for r in caplog.records] == [REFUSED]
        assert [when for when, _ in loop.timers] == [60.0]   # one timer, however many came
        loop.now = 60.0
        loop.run_due()
        assert [r.getMessage() for r in caplog.records] == [REFUSED, held_line(REFUSED, 99, 60)]
        assert [r.levelno for r in caplog.records] == [W, W]
        assert [when for when, _ in loop.timers] == [120.0]  # to forget it, or count on
        loop.now = 120.0
        loop.run_due()
        assert loop.timers == [] and len(caplog.records) == 2


def test_at_a_stop_the_counts_still_held_back_are_said_and_all_is_forgotten():
    # They were lost: a client looping on a refusal until the stop left no count of it.
    limit = RepeatLimit(interval=60, keys=1)
    other = "user 'mallory' presented session 71ff1f5c of another user: answered 404"
    admit(limit, REFUSED, 0.0)
    admit(limit, REFUSED, 1.0)
    admit(limit, other, 2.0)                             # beyond the keys remembered
    assert limit.flush() == [(LOG, W, held_line(REFUSED, 1, 60)), (logging.getLogger("gsmcpd.http"), W,
                                                                    others_line(1, 60, 1))]
    assert limit.next_due() is None and limit.flush() == []


def test_a_key_with_nothing_held_back_says_nothing_at_a_stop():
    limit = RepeatLimit(interval=60, keys=10)
    admit(limit, REFUSED, 0.0)
    assert limit.flush() == []


def test_the_routers_flush_writes_the_counts_and_its_timer_then_finds_nothing(caplog):
    loop = FakeLoop()
    repeated = RepeatedLog(loop, RepeatLimit(interval=60, keys=10))
    with caplog.at_level(logging.INFO, logger="gsmcpd.test.repeats"):
        for n in range(3):
            loop.now = n
            repeated.log(LOG, W, REFUSED)
        repeated.flush()
        assert [r.getMessage() for r in caplog.records] == [REFUSED, held_line(REFUSED, 2, 60)]
        loop.now = 60.0
        loop.run_due()
        assert len(caplog.records) == 2 and loop.timers == []
