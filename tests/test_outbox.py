import pytest

from gsmcpd.router.outbox import MAX_QUEUE, Outbox, OutboxClosed


def test_fifo_order_to_the_current_stream():
    box = Outbox()
    gen = box.attach()
    for n in range(3):
        assert box.push({"n": n}) == 0
    assert box.drain(gen) == ([{"n": 0}, {"n": 1}, {"n": 2}], True)
    assert box.drain(gen) == ([], True)


def test_messages_wait_for_a_stream():
    box = Outbox()
    box.push("a")
    gen = box.attach()
    assert box.drain(gen) == (["a"], True)


def test_bound_drops_oldest_and_counts_the_gap():
    assert MAX_QUEUE == 256
    box = Outbox()
    for n in range(MAX_QUEUE):
        assert box.push(n) == 0
    assert box.push(MAX_QUEUE) == 1
    assert box.push(MAX_QUEUE + 1) == 1
    assert len(box) == MAX_QUEUE
    assert box.dropped == 2
    assert box.take_gap() == 2
    assert box.take_gap() == 0           # a gap is reported once
    box.push("more")
    assert box.take_gap() == 1 and box.dropped == 3
    messages, _ = box.drain(box.attach())
    assert messages[0] == 3 and messages[-1] == "more"


def test_small_bound():
    box = Outbox(max_size=2)
    box.push(1), box.push(2), box.push(3)
    assert box.drain(box.attach())[0] == [2, 3]
    with pytest.raises(ValueError):
        Outbox(max_size=0)


def test_latest_get_wins_and_superseded_stream_ends():
    box = Outbox()
    first = box.attach()
    second = box.attach()
    assert second > first
    assert box.is_current(second) and not box.is_current(first)
    box.push("x")
    assert box.drain(first) == ([], False)     # the old writer ends, takes nothing
    assert box.drain(second) == (["x"], True)


def test_detaching_a_superseded_stream_does_not_roll_back():
    box = Outbox()
    first = box.attach()
    second = box.attach()
    assert box.detach(first) is False
    assert box.current == second and box.is_current(second)
    assert box.detach(second) is True
    assert box.current is None and not box.is_current(second)
    third = box.attach()
    assert third == second + 1                 # generations only grow
    assert box.drain(second) == ([], False)


def test_unknown_generation_is_never_a_writer():
    box = Outbox()
    box.push("x")
    assert not box.is_current(None)
    assert box.drain(None) == ([], False)
    assert box.drain(7) == ([], False)
    assert len(box) == 1


def test_closing_handshake_gives_the_last_flush():
    box = Outbox()
    gen = box.attach()
    box.push("bye-1")
    box.push("bye-2")
    assert box.close() is True                 # a stream must take its last flush
    assert box.push("late") is None            # refused while closing
    assert box.drain(gen) == (["bye-1", "bye-2"], False)
    assert box.closed
    assert box.drain(gen) == ([], False)
    with pytest.raises(OutboxClosed):
        box.attach()


def test_close_without_a_stream_is_closed_at_once():
    box = Outbox()
    box.push("unheard")
    assert box.close() is False
    assert box.closed and len(box) == 0
    assert box.close() is False


def test_closing_stream_that_detaches_before_its_flush():
    box = Outbox()
    gen = box.attach()
    box.push("x")
    assert box.close() is True
    assert box.detach(gen) is True
    assert box.closed
