"""The router's event loop: registration bookkeeping, timers and callbacks, on real sockets."""

import os
import socket

import pytest

from gsmcpd.router.loop import COMPACT_MIN, MAX_SLEEP, Loop


class NoisySocket(socket.socket):
    """A socket that counts how often something formats its repr (two syscalls each)."""

    reprs = 0

    def __repr__(self):
        NoisySocket.reprs += 1
        return super().__repr__()


def test_interest_changes_follow_the_socket_and_never_format_it():
    loop = Loop()
    a, b = socket.socketpair()
    ours = NoisySocket(fileno=a.detach())
    seen = []
    try:
        loop.set_interest(ours, lambda: seen.append(ours.recv(10)), None)   # new
        loop.set_interest(ours, lambda: seen.append(b"again:" + ours.recv(10)), None)  # changed
        b.send(b"x")
        loop._run_once()
        assert seen == [b"again:x"]
        loop.set_interest(ours, None, None)        # nothing wanted: unregistered
        b.send(b"y")
        loop.call_soon(lambda: seen.append(b"soon"))
        loop._run_once()
        assert seen == [b"again:x", b"soon"]
        loop.add_reader(ours, lambda: seen.append(ours.recv(10)))  # registered afresh
        loop._run_once()
        assert seen[-1] == b"y"
        loop.remove(ours)
        loop.remove(ours)                           # twice is harmless
        assert NoisySocket.reprs == 0
    finally:
        loop.close()
        ours.close()
        b.close()


def test_a_failing_callback_is_logged_and_the_loop_goes_on(caplog):
    loop = Loop()
    ran = []
    loop.call_soon(lambda: 1 / 0)
    loop.call_soon(lambda: ran.append("next"))
    loop.call_later(0, lambda: ran.append("timer"))
    loop._run_once()          # one pass: due timers, then the callbacks queued before it
    loop.close()
    assert ran == ["timer", "next"]
    assert "router callback failed" in caplog.text



@pytest.mark.parametrize("closed", [False, True], ids=["open", "closed-meanwhile"])
def test_a_paused_reader_is_watched_again_after_the_pause_unless_closed(closed):
    loop = Loop()
    ours, theirs = socket.socketpair()
    theirs.send(b"x")                     # readable throughout, as a listener out of descriptors
    calls = []
    loop.add_reader(ours, lambda: calls.append("read"))
    loop.pause_reader(ours, lambda: calls.append("again"), 0.05)
    if closed:
        ours.close()
    loop.call_later(0.1, lambda: calls.append("later"))   # bounds the passes below
    while "later" not in calls:
        loop._run_once()
    assert "read" not in calls            # unwatched from the pause on
    if closed:
        assert calls == ["later"] and ours not in loop._registered
    else:
        assert calls[0] == "again" and ours in loop._registered
        ours.close()
    loop.close()
    theirs.close()


def test_a_failed_interest_change_leaves_the_object_unregistered():
    loop = Loop()
    a, b = socket.socketpair()
    try:
        loop.set_interest(a, lambda: None, None)
        os.close(a.fileno())                # closed behind the loop's back: epoll refuses a change
        with pytest.raises(OSError):
            loop.set_interest(a, lambda: None, lambda: None)
        assert a not in loop._registered     # the selector dropped it; so did the loop
        assert [key.fileobj for key in loop.selector.get_map().values()] == [loop._wake_r]
    finally:
        a.detach()
        b.close()
        loop.close()


class ScriptedSelector:
    """Answers select() from a script of event lists and records each timeout asked."""

    def __init__(self, script):
        self.script = list(script)
        self.asked = []

    def select(self, timeout=None):
        self.asked.append(timeout)
        return self.script.pop(0) if self.script else []

    def close(self):
        pass


@pytest.fixture
def polling_loop():
    """Makes loops whose clock moves `step` seconds per reading and whose selector is
    scripted; closes them after the test."""
    made = []

    def make(script, poll=0.001, step=0.0001):
        loop = Loop(poll=poll, cpus=2)   # the poll is under test, not the machine's CPUs
        loop.selector.close()
        loop.selector = ScriptedSelector(script)
        readings = iter(range(10**6))
        loop._clock = lambda: next(readings) * step
        made.append(loop)
        return loop

    yield make
    for loop in made:
        loop.close()


EVENT = [("key", 1)]


def test_with_no_event_due_the_loop_sleeps_at_once(polling_loop):
    loop = polling_loop([EVENT])
    assert loop._wait(5.0) == EVENT
    assert loop.selector.asked == [5.0]


def test_an_event_due_is_polled_for_until_it_comes(polling_loop):
    loop = polling_loop([[], [], EVENT])
    loop.event_due = True
    assert loop._wait(None) == EVENT
    assert loop.selector.asked == [0, 0, 0]          # never slept
    loop.selector.script = [EVENT]
    loop._wait(None)
    assert loop.selector.asked[-1] is None           # spent: the next pass sleeps at once


def test_an_event_not_come_within_the_poll_is_slept_for_with_the_timeout_left(polling_loop):
    loop = polling_loop([], poll=0.001, step=0.0001)
    loop.event_due = True
    assert loop._wait(5.0) == []
    polls, sleep = loop.selector.asked[:-1], loop.selector.asked[-1]
    assert polls == [0] * len(polls) and 5 <= len(polls) <= 11
    assert 5.0 - 0.0012 <= sleep <= 5.0 - 0.001      # the timer's deadline still holds
    loop = polling_loop([], poll=0.001)
    loop.event_due = True
    loop._wait(None)
    assert loop.selector.asked[-1] is None           # no timer: the sleep is unbounded


def test_the_poll_never_runs_past_a_timer_due_sooner(polling_loop):
    loop = polling_loop([], poll=1.0, step=0.0001)
    loop.event_due = True
    loop._wait(0.0005)
    polls = loop.selector.asked[:-1]
    assert len(polls) <= 6 and loop.selector.asked[-1] == 0.0


def test_a_pass_with_work_waiting_keeps_the_event_due_for_the_next(polling_loop):
    loop = polling_loop([[], [], EVENT])
    loop.event_due = True
    loop._wait(0)                                     # callbacks pending: no poll now
    assert loop.selector.asked == [0]
    assert loop._wait(None) == EVENT                  # the next pass polls
    assert loop.selector.asked == [0, 0, 0]


def test_any_event_while_sleeping_uses_up_the_event_due(polling_loop):
    loop = polling_loop([EVENT, EVENT])
    loop.event_due = True
    assert loop._wait(0) == EVENT                     # something came: that pass handles it
    assert loop._wait(3.0) == EVENT
    assert loop.selector.asked == [0, 3.0]            # and the next does not poll


def test_polls_that_miss_back_off_and_one_that_hits_resets_them(polling_loop):
    loop = polling_loop([], poll=0.001, step=0.0005)   # each poll: 3 selects, then a sleep

    def one_event_due(script=()):
        loop.selector.asked.clear()
        loop.selector.script = list(script)
        loop.event_due = True
        loop._wait(1.0)
        return "polled" if loop.selector.asked[0] == 0 else "slept"

    assert one_event_due() == "polled"                  # miss 1: skip 1
    assert one_event_due() == "slept"
    assert one_event_due() == "polled"                  # miss 2: skip 3
    assert [one_event_due() for _ in range(3)] == ["slept"] * 3
    assert one_event_due([[], EVENT]) == "polled"       # a hit: no more skipping
    assert one_event_due() == "polled"
    outcomes = []                                       # all misses: 63 sleeps at most between polls
    for _ in range(300):
        outcomes.append(one_event_due())
    longest = max(len(run) for run in "".join("p" if o == "polled" else "s" for o in outcomes).split("p"))
    assert longest == 2 ** 6 - 1


def test_no_poll_configured_means_no_polling(polling_loop):
    loop = polling_loop([EVENT], poll=0.0)
    loop.event_due = True
    assert loop._wait(2.0) == EVENT
    assert loop.selector.asked == [2.0]


def test_with_one_cpu_the_router_never_polls(monkeypatch):
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0})
    loop = Loop(poll=0.0002)
    try:
        assert loop.poll == 0.0
    finally:
        loop.close()
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0, 1})
    loop = Loop(poll=0.0002)
    try:
        assert loop.poll == 0.0002
    finally:
        loop.close()


def test_whether_it_may_poll_is_asked_when_it_would_poll_and_a_no_spends_no_back_off(polling_loop):
    loop = polling_loop([], poll=0.001, step=0.0005)
    answers = []
    loop.may_poll = lambda: answers.append("asked") or allowed[0]
    allowed = [True]
    loop.event_due = True
    allowed[0] = False                   # things changed between the call sent and the wait
    loop._poll_skips = 1                 # and a back-off was running
    loop._wait(1.0)
    assert loop.selector.asked == [1.0] and answers == ["asked"]
    assert loop._poll_skips == 1         # a refusal is not a skip
    loop._poll_skips = 0
    loop.event_due = True
    loop._wait(0)                        # work waiting: not asked, the event stays due
    assert answers == ["asked"]
    allowed[0] = True
    loop.selector.script = [[], EVENT]
    assert loop._wait(1.0) == EVENT      # the refusal left no back-off behind: it polls
    assert loop.selector.asked[-2:] == [0, 0]


def test_a_failing_poll_rule_means_sleeping_not_a_dead_loop(polling_loop, caplog):
    loop = polling_loop([EVENT], poll=0.001, step=0.0005)

    def broken():
        raise RuntimeError("rule bug")

    loop.may_poll = broken
    loop.event_due = True
    assert loop._wait(1.0) == EVENT
    assert loop.selector.asked == [1.0]    # slept for it at once, no select(0) poll
    assert "the poll's rule failed" in caplog.text and "rule bug" in caplog.text


def test_a_reply_written_on_a_keep_alive_connection_makes_the_clients_next_request_due():
    from types import SimpleNamespace

    from gsmcpd.router.connection import Connection

    loop = Loop(poll=0.001, cpus=2)   # polling whatever CPUs this machine has
    answered = []
    app = SimpleNamespace(handle=lambda conn, request: (answered.append(request.path),
                                                        conn.respond(200, [], b"ok")))
    router = SimpleNamespace(loop=loop, app=app, config=SimpleNamespace(max_body=1 << 20, read_timeout=30),
                             trace_response=lambda *a: None, trace_unreadable=lambda *a: None,
                             connection_closed=lambda conn: None)
    ours, client = socket.socketpair()
    try:
        conn = Connection(router, ours, "test")
        assert not loop.event_due
        client.sendall(b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
        loop._run_once()
        assert answered == ["/mcp"] and client.recv(4096).startswith(b"HTTP/1.1 200")
        assert loop.event_due              # the next request, back to back
        loop.event_due = False
        client.sendall(b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        loop._run_once()
        assert answered == ["/mcp", "/mcp"] and not loop.event_due   # no next request on a closing one
        conn.close()
    finally:
        client.close()
        ours.close()
        loop.close()


@pytest.mark.parametrize("delay", [3_000_000.0, 1e300])
def test_a_timer_months_away_is_slept_for_an_hour_at_a_time(delay):
    # epoll takes at most 2**31 - 1 ms: a maintenance interval of weeks once overflowed it
    loop = Loop()
    try:
        loop.call_later(delay, lambda: None)
        loop.selector.close()
        loop.selector = ScriptedSelector([])
        loop._run_once()
        assert loop.selector.asked == [MAX_SLEEP]
    finally:
        loop.close()


def test_a_cancelled_timer_keeps_nothing_alive_while_it_waits_in_the_heap():
    # A connection's idle timer waits minutes in the heap after the connection closes:
    # it must not keep the connection, and the output it never sent, alive meanwhile.
    import gc
    import weakref

    class Held:
        def fire(self):
            raise AssertionError("a cancelled timer ran")

    loop = Loop()
    try:
        held = Held()
        gone = weakref.ref(held)
        timer = loop.call_later(300, held.fire)
        del held
        timer.cancel()
        gc.collect()
        assert gone() is None
        assert len(loop._timers) == 1      # still in the heap until its time; harmless
    finally:
        loop.close()


def test_cancelled_timers_do_not_fill_the_heap_and_live_ones_still_fire_in_order():
    # Every closed connection leaves its idle timer cancelled in the heap for minutes:
    # under churn they are swept out, and what is still due runs as it would have.
    loop = Loop()
    try:
        fired = []
        for n in range(3):
            loop.call_later(n * 0.001, lambda n=n: fired.append(n))
        for _ in range(100_000):
            loop.call_later(300, lambda: fired.append("cancelled")).cancel()
        assert len(loop._timers) <= 2 * COMPACT_MIN
        loop.call_later(0.003, lambda: fired.append("last"))
        while len(fired) < 4:
            loop._run_once()
        assert fired == [0, 1, 2, "last"]
    finally:
        loop.close()


def test_the_loops_selector_reports_what_the_stdlibs_does():
    # Loop's EpollSelector re-implements select() for less work: same keys, same masks.
    import selectors

    from gsmcpd.router.loop import EpollSelector

    ours, stdlib = EpollSelector(), selectors.EpollSelector()
    pairs = [socket.socketpair() for _ in range(3)]
    try:
        both = selectors.EVENT_READ | selectors.EVENT_WRITE
        for n, (a, _) in enumerate(pairs):
            for selector in (ours, stdlib):
                selector.register(a, (selectors.EVENT_READ, selectors.EVENT_WRITE, both)[n], n)

        def seen(selector, timeout):
            return sorted((key.data, mask) for key, mask in selector.select(timeout))

        for timeout in (0, 0.0004, None):
            assert seen(ours, timeout) == seen(stdlib, timeout) == [(1, 2), (2, 2)]   # writable
        pairs[0][1].send(b"x")
        pairs[2][1].send(b"x")
        assert seen(ours, 0) == seen(stdlib, 0) == [(0, 1), (1, 2), (2, 3)]
        pairs[1][1].close()   # a hang-up: readable and writable to whoever watches either
        assert seen(ours, 0) == seen(stdlib, 0) == [(0, 1), (1, 2), (2, 3)]
        for selector in (ours, stdlib):
            for a, _ in pairs:
                selector.unregister(a)
        assert ours.select(0) == stdlib.select(0) == []
    finally:
        ours.close()
        stdlib.close()
        for a, b in pairs:
            a.close()
            b.close()


def test_the_loop_takes_the_stdlibs_selector_where_its_registrations_are_named_otherwise(monkeypatch):
    # EpollSelector.select() reads two private attributes of the stdlib's: a Python that
    # renamed them must get a loop that works (the stdlib's select()), not one that fails.
    import selectors

    from gsmcpd.router import loop as loop_module

    assert type(loop_module.epoll_selector()) is loop_module.EpollSelector
    original_init = loop_module.EpollSelector.__init__

    def renamed(self):
        original_init(self)
        self._registered = self.__dict__.pop("_fd_to_key")

    monkeypatch.setattr(loop_module.EpollSelector, "__init__", renamed)
    made = loop_module.epoll_selector()
    try:
        assert type(made) is selectors.EpollSelector
        a, b = socket.socketpair()
        with a, b:
            made.register(a, selectors.EVENT_READ, "a")
            b.send(b"x")
            assert [(key.data, mask) for key, mask in made.select(1)] == [("a", selectors.EVENT_READ)]
    finally:
        made.close()
