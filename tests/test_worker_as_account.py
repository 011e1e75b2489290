"""Work done in a child switched to another account (as_account.said_as)."""

import os
import pwd
import signal
import threading
import time

import pytest

from gsmcpd.worker.as_account import SAID_MAX, said_as

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="switches to another account: needs root")


def test_the_work_runs_as_the_account_with_its_groups_and_its_words_come_back():
    nobody = pwd.getpwnam("nobody")
    said = said_as(nobody.pw_uid, nobody.pw_gid, [nobody.pw_gid],
                   lambda: repr((os.getresuid(), os.getresgid(), os.getgroups())).encode(),
                   lambda error: b"failed: " + repr(error).encode())
    assert said == repr(((nobody.pw_uid,) * 3, (nobody.pw_gid,) * 3, [nobody.pw_gid])).encode()
    assert os.geteuid() == 0   # the parent stays as it was


def test_what_the_work_raises_is_said_by_failed_and_a_long_word_is_cut():
    nobody = pwd.getpwnam("nobody")

    def work():
        raise ValueError("no")

    assert said_as(nobody.pw_uid, nobody.pw_gid, [], work, lambda error: b"failed: " + str(error).encode()) \
        == b"failed: no"
    assert said_as(nobody.pw_uid, nobody.pw_gid, [], lambda: b"x" * (SAID_MAX + 10), repr) == b"x" * SAID_MAX


def test_a_switch_refused_is_said_by_failed():
    # Back to root from nobody is refused: the child's setresuid raises, its parent hears why.
    nobody = pwd.getpwnam("nobody")

    def work():
        os.setresuid(0, 0, 0)
        return b"root again"

    said = said_as(nobody.pw_uid, nobody.pw_gid, [], work, lambda error: type(error).__name__.encode())
    assert said == b"PermissionError"


def test_a_fork_refused_leaves_no_pipe_open(monkeypatch):
    # EAGAIN at the process limit: the pipe made for the child's words stayed open, two
    # descriptors a router lost at each recovery or directory removal tried.
    def refused():
        raise BlockingIOError(11, "Resource temporarily unavailable")

    before = set(os.listdir("/proc/self/fd"))
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    monkeypatch.setattr(os, "fork", refused)
    with pytest.raises(BlockingIOError):
        said_as(0, 0, [], lambda: b"", repr)
    assert set(os.listdir("/proc/self/fd")) == before
    assert signal.pthread_sigmask(signal.SIG_BLOCK, []) == mask   # nor any signal held


def test_a_child_killed_by_a_signal_says_nothing_and_is_reaped():
    nobody = pwd.getpwnam("nobody")

    def work():
        os.kill(os.getpid(), 9)

    before = _children()
    assert said_as(nobody.pw_uid, nobody.pw_gid, [], work, repr) == b""
    assert _children() == before   # waited for: no zombie left


def test_a_hung_child_is_stopped_by_sigterm_and_its_signal_never_wakes_the_parent():
    # The child kept the router's handlers: a SIGTERM only queued work for a loop it never
    # runs, so a hung recovery or removal could not be stopped but by SIGKILL; and the
    # signal was written into the router's wakeup pipe.
    nobody = pwd.getpwnam("nobody")
    told_r, told_w = os.pipe()
    wake_r, wake_w = os.pipe2(os.O_NONBLOCK)
    handled = []
    previous = signal.signal(signal.SIGTERM, lambda *_: handled.append(1))
    previous_fd = signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)

    def work():
        os.write(told_w, b"%d\n" % os.getpid())
        time.sleep(30)
        return b"not stopped"

    def stop_it():
        os.kill(int(os.read(told_r, 32)), signal.SIGTERM)

    stopper = threading.Thread(target=stop_it)
    stopper.start()
    try:
        said = said_as(nobody.pw_uid, nobody.pw_gid, [], work, repr)
    finally:
        stopper.join()
        signal.set_wakeup_fd(previous_fd)
        signal.signal(signal.SIGTERM, previous)
    try:
        woken = os.read(wake_r, 64)
    except BlockingIOError:
        woken = b""
    for fd in (told_r, told_w, wake_r, wake_w):
        os.close(fd)
    assert said == b""   # killed: nothing said, reaped
    assert woken == b"" and handled == []


def test_a_sigterm_before_the_child_drops_the_parents_handling_never_runs_the_parents_handler(monkeypatch):
    # Between the fork and the child's reset, a SIGTERM ran the router's handler in the
    # child (a stop queued for a loop it never runs, the signal in the router's wakeup
    # pipe) and the child ran on. Sent here at the last moment before the reset.
    from gsmcpd.worker import as_account

    nobody = pwd.getpwnam("nobody")
    handled_r, handled_w = os.pipe2(os.O_NONBLOCK)
    wake_r, wake_w = os.pipe2(os.O_NONBLOCK)
    previous = signal.signal(signal.SIGTERM, lambda *_: os.write(handled_w, b"handled"))
    previous_fd = signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    drop = as_account._drop_parents_signal_handling
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, [])

    def terminated_then_dropped():
        os.kill(os.getpid(), signal.SIGTERM)
        drop()

    monkeypatch.setattr(as_account, "_drop_parents_signal_handling", terminated_then_dropped)
    try:
        said = said_as(nobody.pw_uid, nobody.pw_gid, [], lambda: b"ran on", repr)
    finally:
        signal.set_wakeup_fd(previous_fd)
        signal.signal(signal.SIGTERM, previous)
    heard = []
    for fd in (handled_r, wake_r):
        try:
            heard.append(os.read(fd, 64))
        except BlockingIOError:
            heard.append(b"")
    for fd in (handled_r, handled_w, wake_r, wake_w):
        os.close(fd)
    assert said == b""   # ended by the SIGTERM, as one sent after the reset ends it
    assert heard == [b"", b""]
    assert signal.pthread_sigmask(signal.SIG_BLOCK, []) == mask   # the parent's as it was


def _children() -> set[str]:
    """This process's children, zombies included (not yet waited for)."""
    return {pid for task in os.listdir("/proc/self/task")
            for pid in open(f"/proc/self/task/{task}/children").read().split()}
