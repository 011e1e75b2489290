"""The router's event loop: registration bookkeeping, timers and callbacks, on real sockets."""

import os
import socket

import pytest

from gsmcpd.router.loop import Loop


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
