"""How a worker's end is told: the words for each exit status (gsmcpd.wire.worker_exit),
and the router's brief wait for the status (gsmcpd.router.exit_status)."""

import os
import signal
import socket
import subprocess
import sys
import types

from gsmcpd.router.exit_status import PATIENCE, ExitStatus
from gsmcpd.wire.worker_exit import CHANNEL_LOST, described
from gsmcpd.worker.main import WorkerLoop
from helpers import REPO


def test_a_kill_9_names_its_likely_senders_and_where_to_look():
    assert described(1234, -9) == (
        "worker 1234 was killed by signal 9 (SIGKILL: kill -9, the kernel's OOM killer (see "
        "`journalctl -k` / dmesg), or a hard CPU-time limit (RLIMIT_CPU) the session's code set)",
        {"exit": {"signal": 9, "name": "SIGKILL"}})


def test_an_alarm_and_a_cpu_limit_are_named_as_the_sessions_code_set_them():
    assert described(7, -signal.SIGALRM) == (
        "worker 7 ended by signal 14 (SIGALRM: an alarm the session's code set (signal.alarm, "
        "setitimer) with no handler)", {"exit": {"signal": 14, "name": "SIGALRM"}})
    text, data = described(7, -signal.SIGXCPU)
    assert text == ("worker 7 ended by signal %d (SIGXCPU: the CPU-time limit (RLIMIT_CPU) the "
                    "session's code set ran out)" % signal.SIGXCPU)
    assert data == {"exit": {"signal": signal.SIGXCPU, "name": "SIGXCPU"}}


def test_a_signal_of_no_known_cause_says_who_could_send_it_and_an_unnamed_one_its_number():
    assert described(7, -signal.SIGTERM)[0] == (
        "worker 7 ended by signal 15 (SIGTERM: sent by another process (kill), or by the "
        "session's code (os.kill))")
    text, data = described(7, -200)
    assert text.startswith("worker 7 ended by signal 200 (signal 200: sent by")
    assert data == {"exit": {"signal": 200, "name": "signal 200"}}


def test_an_exit_status_is_the_sessions_code_ending_its_process():
    assert described(7, 3) == (
        "worker 7 exited with status 3 (the session's code ended its process, e.g. with os._exit(3))",
        {"exit": {"status": 3}})


def test_the_status_of_a_worker_whose_channel_failed_says_its_code_closed_it():
    assert described(7, CHANNEL_LOST) == (
        "worker 7 exited: it could not answer the router (the session's code closed its channel, "
        "a descriptor of the worker's own, e.g. with os.closerange or os.close)",
        {"exit": {"channelClosed": True}})


def test_a_worker_the_router_stopped_says_why_not_how_its_kill_looked():
    assert described(7, -9, stopped_for="it sent a bad frame (junk)") == (
        "worker 7 was stopped by the server: it sent a bad frame (junk)",
        {"exit": {"stopped": "it sent a bad frame (junk)"}})


def test_no_status_is_todays_words_and_no_data():
    assert described(7) == ("worker 7 exited", None)


class Loop:
    def __init__(self):
        self.timers = []

    def call_later(self, delay, callback):
        timer = types.SimpleNamespace(delay=delay, callback=callback, cancelled=False)
        timer.cancel = lambda: setattr(timer, "cancelled", True)
        self.timers.append(timer)
        return timer


def test_a_status_reported_in_time_is_told_and_its_timer_cancelled():
    loop, told, status = Loop(), [], ExitStatus()
    status.when_known(loop, lambda: told.append(status.code))
    assert told == [] and [t.delay for t in loop.timers] == [PATIENCE]
    status.report(-9)
    assert told == [-9] and loop.timers[0].cancelled
    status.report(3)                     # a second report changes nothing
    assert told == [-9] and status.code == -9


def test_without_a_status_the_wait_ends_after_its_patience_once():
    loop, told, status = Loop(), [], ExitStatus()
    status.when_known(loop, lambda: told.append(status.code))
    loop.timers[0].callback()
    assert told == [None]
    status.report(-9)                    # too late for that answer
    assert told == [None]


def test_no_wait_when_known_already_when_none_is_needed_or_with_no_patience():
    for prepare, patience in ((lambda s: s.report(0), PATIENCE),
                              (lambda s: setattr(s, "stopped_for", "a bad frame"), PATIENCE),
                              (lambda s: None, 0)):
        loop, told, status = Loop(), [], ExitStatus()
        prepare(status)
        status.when_known(loop, lambda: told.append(True), patience)
        assert told == [True] and loop.timers == []


def test_a_worker_whose_channel_fails_exits_saying_so_and_one_told_to_end_does_not():
    ours, theirs = socket.socketpair()
    ours.close()                                    # the router's EOF: an ordinary end
    assert WorkerLoop(theirs).serve() == 0
    theirs.close()
    ours, theirs = socket.socketpair()
    loop = WorkerLoop(theirs)
    os.close(theirs.fileno())                       # the session's code closed it (os.closerange)
    try:
        assert loop.serve() == CHANNEL_LOST
    finally:
        theirs.detach()
        ours.close()


# A worker's end with the status it chose, as the leader of its own group (as the spawner
# makes it): a group kill would end it by SIGKILL, and the router would never see the status.
END_WITH = r"""
import os, sys
from gsmcpd.worker.main import end_process
os.setpgid(0, 0)
end_process(int(sys.argv[1]))
"""


def test_a_workers_end_keeps_the_status_it_chose_for_the_router():
    for status, code in ((CHANNEL_LOST, CHANNEL_LOST), (0, -signal.SIGKILL)):
        ended = subprocess.run([sys.executable, "-c", END_WITH, str(status)], capture_output=True,
                               text=True, timeout=60, cwd=str(REPO))
        assert ended.returncode == code, ended.stderr
