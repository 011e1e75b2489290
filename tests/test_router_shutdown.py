"""The graceful stop's sequence (router.shutdown), in process: a real Router and loop, its
sessions' workers the fakes of the poll tests. End to end, with real workers and a
commit, in test_e2e_shutdown.py."""

import fcntl
import json
import os
import re
import socket

import pytest

from gsmcpd.__main__ import build_parser
from gsmcpd.config import Config
from gsmcpd.daemon import STOP_TIMEOUT
from gsmcpd.router import commit_fate, exit_status
from gsmcpd.router.app import Principal
from gsmcpd.router.main import Router
from gsmcpd.router.shutdown import CALL_GRACE_CAP, DEATH_TOLD, REAP_GRACE, SHUTDOWN_GRACE, call_grace, longest_stop
from gsmcpd.router.workers import SPAWNER_END_GRACE, SPAWNER_KILL_WAIT, SPAWNER_STOP_WAIT
from gsmcpd.wire import jsonrpc
from gsmcpd.wire.http import RequestParser
from helpers import REPO
from test_router_sessions_poll import FakeConn, FakeWorker, call, reply


class RecordingWorker(FakeWorker):
    def __init__(self, pid):
        super().__init__(pid)
        self.ended_by = None

    def stop(self):
        self.ended_by = self.ended_by or "stop"
        self.alive = False

    def kill(self):
        self.ended_by = self.ended_by or "kill"
        self.alive = False


def router_with_grace(grace):
    made = Router(Config(port=0, break_grace=grace))
    made.pool.claim = lambda start, fail: start(RecordingWorker(100 + len(made.sessions.by_id)))
    return made


@pytest.fixture
def router():
    made = router_with_grace(0.05)
    yield made
    made.close()


@pytest.fixture
def patient_router():
    made = router_with_grace(CALL_GRACE_CAP)   # a grace the test never waits out
    yield made
    made.close()


def open_session(router):
    router.sessions.open(FakeConn(), None, {"jsonrpc": "2.0", "id": 0, "method": "initialize"}, b"{}", False,
                         Principal("alice", False))
    session = router.sessions.by_id[next(reversed(router.sessions.by_id))]
    reply(router.sessions, session, session.inflight.seq, 0)
    return session


def run_until_stopped(router):
    """Run the loop until the shutdown stops it (a watchdog fails a stop that never comes)."""
    def watchdog():
        router.loop.stop()
        raise AssertionError("the shutdown never stopped the loop")
    router.loop.call_later(30, watchdog)
    router.loop.run()


def answer(conn):
    [(status, body)] = conn.answers
    assert status == 200
    return json.loads(body)


def test_a_call_in_flight_is_answered_with_its_result_and_the_calls_queued_behind_it_at_once(router):
    idle, busy = open_session(router), open_session(router)
    running, queued = call(router.sessions, busy, 1), call(router.sessions, busy, 2)
    router.shutdown()
    assert idle.ended and idle.worker.ended_by == "stop"
    error = answer(queued)["error"]
    assert error["code"] == jsonrpc.WORKER_GONE and error["message"] == (
        "server shutting down: this request waited behind the session's call in flight and was not run; "
        "send it again in a new session once the server is back")
    assert not running.answers and busy.worker.alive and not busy.ended   # left to finish
    reply(router.sessions, busy, busy.inflight.seq, 1)
    assert answer(running) == {"jsonrpc": "2.0", "id": 1, "result": {}}   # its own answer
    assert busy.ended and busy.worker.ended_by == "stop"
    run_until_stopped(router)
    assert not router.sessions.by_id and not router.sessions.calls_cut


def test_a_call_still_running_when_the_grace_ends_is_answered_so_and_its_worker_killed(router):
    busy = open_session(router)
    running = call(router.sessions, busy, 1)
    router.shutdown()
    run_until_stopped(router)
    assert answer(running)["error"] == {"code": jsonrpc.WORKER_GONE, "message": (
        "session ended: server shutting down (its call in flight still ran after the 0.05s grace, "
        "GS_MCP_BREAK_GRACE)")}
    assert busy.ended and busy.worker.ended_by == "kill" and router.sessions.calls_cut


def test_a_second_stop_signal_ends_the_call_in_flight_and_every_worker_at_once(patient_router):
    router = patient_router
    idle, busy = open_session(router), open_session(router)
    idle.worker.stop = lambda: None    # it does not go when asked
    running = call(router.sessions, busy, 1)
    router.shutdown()
    assert not running.answers and idle.worker.alive
    router.shutdown()
    assert answer(running)["error"]["message"] == (
        "session ended: server shutting down (a second stop signal: its call in flight was not waited for)")
    assert busy.worker.ended_by == idle.worker.ended_by == "kill"
    assert router.pool.hurried     # the spawner's stop, to come, waits the least too
    run_until_stopped(router)


def test_a_stop_with_no_call_in_flight_waits_for_nothing(router):
    session = open_session(router)
    router.shutdown()
    assert session.ended and router._shutdown._grace_timer is None
    run_until_stopped(router)


def test_the_call_grace_is_the_break_grace_capped_so_the_stop_fits_in_stops_timeout():
    assert call_grace(Config(break_grace=2.0)) == 2.0
    assert call_grace(Config(break_grace=60.0)) == CALL_GRACE_CAP == 5.0


def test_the_longest_stop_fits_in_the_wait_of_stop_and_of_systemd_before_their_sigkill():
    # Every grace running out in turn: the calls' (with the telling of a worker dying at its
    # end), the workers' and their reaping, then the spawner's three. It was 10 s in `gsmcpd
    # stop`, so a SIGKILL cut off the image's tidy-up.
    assert DEATH_TOLD == 1.5
    assert longest_stop() == (CALL_GRACE_CAP + DEATH_TOLD + SHUTDOWN_GRACE + REAP_GRACE + SPAWNER_STOP_WAIT
                              + SPAWNER_END_GRACE + SPAWNER_KILL_WAIT) == 25
    exiting = 5.0   # after the loop: the image's recovery, the interpreter's end
    assert STOP_TIMEOUT >= longest_stop() + exiting
    service = (REPO / "systemd" / "gsmcpd@.service").read_text()
    [timeout_stop_sec] = re.findall(r"^TimeoutStopSec=(\d+)$", service, re.M)
    assert int(timeout_stop_sec) >= STOP_TIMEOUT + exiting   # stop's SIGKILL comes first
    # What the documentation and the help say is what the code does.
    readme = (REPO / "README.md").read_text()
    assert f"SIGKILL after {STOP_TIMEOUT:g} seconds" in readme and f"{longest_stop():g} s" in readme
    assert f"systemd's unit gives {timeout_stop_sec} s" in readme
    assert f"default {STOP_TIMEOUT:g}," in _stop_help()
    internals = (REPO / "docs" / "internals.md").read_text()
    assert f"= {longest_stop():g} s" in internals   # the sum written out there, the DEATH_TOLD term too
    for commented in (service, (REPO / "stop-server.sh").read_text()):
        assert f"the longest graceful stop ({longest_stop():g} s" in commented


class SlowToDieWorker(RecordingWorker):
    """Ignores the polite stop; killed, it is gone only once the loop reaps it, as a real
    worker's SIGKILL lands and its sentinel is read on a later turn."""

    def __init__(self, pid, loop):
        super().__init__(pid)
        self.loop = loop

    def stop(self):
        pass

    def kill(self):
        self.ended_by = self.ended_by or "kill"
        self.loop.call_soon(lambda: setattr(self, "alive", False))


def test_the_image_is_tidied_only_once_the_workers_killed_at_the_last_deadline_are_gone(patient_router, tmp_path,
                                                                                       monkeypatch, caplog):
    # A worker killed mid-commit holds the image lock until it is gone: recovery (which no
    # longer waits for the lock) ran right after the SIGKILL and found the lock still held,
    # so the half-applied commit stayed as it was until the next start.
    from gsmcpd.router import shutdown as shutdown_module

    # The session's own kill of a worker deaf to its stop comes at the break grace: far past
    # the workers' grace here, so the shutdown's kill is the one under test. (At 0.05 s each,
    # which came first was the last phase's poll's to decide.)
    router = patient_router
    monkeypatch.setattr(shutdown_module, "SHUTDOWN_GRACE", 0.05)
    router.pool.claim = lambda start, fail: start(SlowToDieWorker(100 + len(router.sessions.by_id), router.loop))
    session = open_session(router)
    router.image = str(tmp_path)
    alive_at_recovery = []
    router.recover_image = lambda image, wait=True: alive_at_recovery.append(session.worker.alive)
    router.shutdown()
    run_until_stopped(router)
    assert session.worker.ended_by == "kill" and alive_at_recovery == [False]
    assert "1 worker(s) did not exit within 0.05s of being told to stop; killed them" in caplog.text


def stop_recording_recoveries(router, image):
    """Stop `router` (serving `image`): the image recoveries the stop ran, as (image, wait)."""
    router.image = str(image)
    recoveries = []
    router.recover_image = lambda image, wait=True: recoveries.append((image, wait))
    router.shutdown()
    run_until_stopped(router)
    return recoveries


def test_a_call_cut_before_the_stop_by_its_worker_dying_has_the_image_tidied_at_the_stop(router, tmp_path):
    # A worker kill -9'd (or OOM-killed) mid-commit leaves the commit half-applied on disk
    # (sessions read it whole); the stop finished it only when the stop itself killed a
    # call, so a stopped server's image (what git, editors and backups read) kept the debris.
    busy = open_session(router)
    call(router.sessions, busy, 1)
    busy.worker.alive = False
    router.sessions.on_worker_exit(busy.worker)
    assert busy.ended
    assert stop_recording_recoveries(router, tmp_path) == [(tmp_path, False)]


def test_a_call_cut_by_ending_its_session_has_the_image_tidied_at_the_stop(router, tmp_path):
    busy = open_session(router)
    call(router.sessions, busy, 1)
    router.sessions.end(busy, "ended by its client (DELETE)")
    assert busy.worker.ended_by == "kill"
    assert stop_recording_recoveries(router, tmp_path) == [(tmp_path, False)]


def spawner_played_by_the_test(router):
    """The pool's spawner control socket, its other end the test's (for exit reports)."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    ours.setblocking(False)
    router.pool.spawner.control = ours
    router.pool._adopt_spawner()
    return theirs


def test_a_worker_dying_in_the_stops_grace_is_told_with_the_status_the_spawner_reports(patient_router):
    # The stop read the spawner no more: the call heard "worker N exited", its signal lost.
    router = patient_router
    spawner = spawner_played_by_the_test(router)
    busy = open_session(router)
    running = call(router.sessions, busy, 1)
    router.pool.by_pid[busy.worker.pid] = busy.worker   # its status still to be reported
    router.shutdown()
    busy.worker.alive = False
    router.sessions.on_worker_exit(busy.worker)          # dies in the grace
    spawner.send(b"exit %d -9" % busy.worker.pid)
    run_until_stopped(router)
    spawner.close()
    error = answer(running)["error"]
    assert error["message"].startswith("session ended: worker %d was killed by signal 9 (SIGKILL" % busy.worker.pid)
    assert error["data"] == {"exit": {"signal": 9, "name": "SIGKILL"}}


def test_a_stop_right_after_a_worker_died_waits_for_its_status_at_most_its_patience(router):
    # It once stopped the loop meanwhile, the call unanswered. The status never comes here:
    # the call is told without it, and the stop then ends.
    spawner = spawner_played_by_the_test(router)
    busy = open_session(router)
    running = call(router.sessions, busy, 1)
    router.pool.by_pid[busy.worker.pid] = busy.worker
    busy.worker.alive = False
    router.sessions.on_worker_exit(busy.worker)
    router.shutdown()
    assert running.answers == []   # not told at once: its status may still come
    run_until_stopped(router)
    spawner.close()
    assert answer(running)["error"]["message"] == "session ended: worker %d exited" % busy.worker.pid


def test_the_wait_for_a_dead_workers_status_and_commits_fits_in_the_stops_wait_for_its_telling():
    assert exit_status.PATIENCE <= DEATH_TOLD and commit_fate.PATIENCE <= DEATH_TOLD


def test_a_stop_right_after_a_worker_died_in_a_commit_waits_to_tell_whether_it_stands(router, tmp_path):
    # Held by another: whether it stands is looked for up to commit_fate.PATIENCE.
    (tmp_path / ".gsmcpd").mkdir()
    holder = os.open(tmp_path / ".gsmcpd" / "lock", os.O_RDONLY | os.O_CREAT)
    fcntl.flock(holder, fcntl.LOCK_EX)
    try:
        router.image = str(tmp_path)
        router.recover_image = lambda image, wait=True: None
        busy = open_session(router)
        running = FakeConn()
        message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "commit"}}
        router.sessions.submit(busy, running, message, json.dumps(message).encode(), False)
        busy.worker.alive = False
        busy.worker.exit.report(-9)
        router.sessions.on_worker_exit(busy.worker)
        router.shutdown()
        run_until_stopped(router)
    finally:
        os.close(holder)
    error = answer(running)["error"]
    assert "; whether the commit it was making stands could not be told" in error["message"]
    assert error["data"] == {"exit": {"signal": 9, "name": "SIGKILL"}, "commitStands": None}


def test_a_worker_gone_with_no_call_in_flight_leaves_the_stop_without_a_walk_of_the_image(router, tmp_path):
    idle = open_session(router)
    idle.worker.alive = False
    router.sessions.on_worker_exit(idle.worker)
    assert stop_recording_recoveries(router, tmp_path) == []


def _stop_help():
    """`gsmcpd stop --help`."""
    [commands] = [action for action in build_parser()._actions if action.choices and "stop" in action.choices]
    return commands.choices["stop"].format_help()


# -- what a client may still send during the grace --------------------------------------

class AnsweredConn(FakeConn):
    reply_headers = ()
    account_refusal = None   # a client of the daemon's own account
    client_account = None

    def respond(self, status, headers=(), body=b"", keep_alive=True):
        self.answers.append((status, body))


def ask(router, method, session=None, message=None):
    """`method` /mcp for `session`, handled as the app handles a request: (status, body)."""
    body = json.dumps(message).encode() if message is not None else b""
    head = "%s /mcp HTTP/1.1\r\nHost: localhost\r\nAccept: application/json, text/event-stream\r\n" % method
    if session is not None:
        head += "Mcp-Session-Id: %s\r\n" % session.id
    parser = RequestParser()
    if method == "POST":
        head += "Content-Type: application/json\r\n"
    parser.feed(head.encode() + b"Content-Length: %d\r\n\r\n" % len(body) + body)
    conn = AnsweredConn()
    router.app.handle(conn, parser.next_request())
    [answer] = conn.answers
    return answer


def test_during_the_grace_a_client_may_delete_its_session_and_so_end_the_stop_sooner(patient_router):
    # It was answered 503, as every request then: the stop waited out the call's grace.
    router = patient_router
    busy = open_session(router)
    running = call(router.sessions, busy, 1)
    router.shutdown()
    assert ask(router, "DELETE", busy) == (200, b"{}")
    assert busy.ended and busy.worker.ended_by == "kill"
    assert answer(running)["error"]["message"] == "session ended: client sent DELETE"
    run_until_stopped(router)     # long before the 5 s grace: its timer was cancelled
    assert router._shutdown._grace_timer is None


def test_during_the_grace_a_client_may_cancel_its_call(patient_router):
    router = patient_router
    busy = open_session(router)
    running = call(router.sessions, busy, 1)
    router.shutdown()
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
    assert ask(router, "POST", busy, cancel)[0] == 202
    assert running.answers == [(202, b"")] and busy.inflight.cancelled   # answered as cancelled
    reply(router.sessions, busy, busy.inflight.seq, 1)    # the break's: the worker stops the call
    assert busy.ended
    run_until_stopped(router)


@pytest.mark.parametrize("method, message, id", [
    ("POST", {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "status"}}, 2),
    ("POST", {"jsonrpc": "2.0", "id": 3, "method": "initialize", "params": {}}, 3),
    ("POST", {"jsonrpc": "2.0", "method": "notifications/initialized"}, None),
    ("GET", None, None),
])
def test_during_the_grace_new_sessions_calls_and_streams_are_still_refused(patient_router, method, message, id):
    router = patient_router
    busy = open_session(router)
    call(router.sessions, busy, 1)
    router.shutdown()
    status, body = ask(router, method, None if message and message.get("method") == "initialize" else busy, message)
    assert status == 503 and json.loads(body) == {"jsonrpc": "2.0", "id": id, "error": {
        "code": jsonrpc.INTERNAL_ERROR, "message": "Service Unavailable: the server is shutting down"}}
    assert not busy.ended and not busy.queue


def test_once_no_call_is_in_flight_a_delete_is_refused_as_every_request(router):
    session = open_session(router)
    router.shutdown()
    assert session.ended
    assert ask(router, "DELETE", session)[0] == 503
