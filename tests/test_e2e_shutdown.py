"""The graceful stop through the running daemon: a call in flight at SIGTERM gets its
grace (GS_MCP_BREAK_GRACE) and its real answer, one queued behind it an error at once, one
outrunning the grace is ended, and a second SIGTERM stops at once. The sequence itself is
tested in process in test_router_shutdown.py."""

import contextlib
import os
import signal
import subprocess
import sys
import threading

import pytest

from helpers import QUICK_STOP, REPO, Client, Daemon, killed, pid_alive, wait_until
from helpers import open_session as session
from test_e2e_image import journal
from test_e2e_lifetime import Exchange
from test_e2e_spawner import spawner_of
from test_tools_support import write_image

# A commit held just before its commit point (its temps written) until the test lets it go.
HELD_COMMIT = '''
import os, time
import gsmcpd.image.store as store
import pets
pets.__spec__.loader.view.set_source("pets", "SOUND = 'meow'\\n", live=False)
real_write_intent = store.ImageStore._write_intent
def held(self, intent):
    open(%(held)r, "w").close()
    end = time.monotonic() + 20
    while not os.path.exists(%(release)r) and time.monotonic() < end:
        time.sleep(0.02)
    return real_write_intent(self, intent)
store.ImageStore._write_intent = held
'''


# A call streaming its progress on its own SSE reply, held between two steps.
HELD_STEPS = '''
import os, time
progress(1, 2, "half")
end = time.monotonic() + 20
while not os.path.exists(%(release)r) and time.monotonic() < end:
    time.sleep(0.02)
progress(2, 2, "all")
"done"
'''


def long_run(started):
    return "import time\nopen(%r, 'w').close()\ntime.sleep(60)" % str(started)


def in_thread(answers, key, send):
    thread = threading.Thread(target=lambda: answers.__setitem__(key, send().json()), daemon=True)
    thread.start()
    return thread


def opened_during_the_stop(daemon):
    return Client(daemon.port).post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "late", "version": "0"}}})


def sigterm_seen(daemon):
    daemon.proc.send_signal(signal.SIGTERM)
    assert wait_until(lambda: "shutting down:" in daemon.log_text(), timeout=10)


def call_running_into_a_stop(daemon, started, answers):
    """A new session's execute_code, running (it makes `started`) when SIGTERM comes; its
    answer goes in answers["run"]: (the session's worker pid, the caller's thread)."""
    a = session(daemon)
    pid = a.tool("status")["structuredContent"]["pid"]
    running = in_thread(answers, "run", lambda: a.call(
        "tools/call", {"name": "execute_code", "arguments": {"code": long_run(started)}}))
    assert wait_until(started.exists, timeout=15)
    sigterm_seen(daemon)
    return pid, running


def test_a_commit_in_flight_at_a_stop_is_answered_with_its_success_and_stands(tmp_path):
    image = write_image(tmp_path / "image", {"pets.py": "SOUND = 'woof'\n"})
    held, release = tmp_path / "held", tmp_path / "release"
    answers = {}
    with Daemon(tmp_path, env={"GS_MCP_IMAGE": str(image), "GS_MCP_BREAK_GRACE": "5"}) as daemon:
        a = session(daemon)
        a.tool("execute_code", code=HELD_COMMIT % {"held": str(held), "release": str(release)})
        committing = in_thread(answers, "commit", lambda: a.call("tools/call", {"name": "commit", "arguments": {}}))
        assert wait_until(held.exists, timeout=15)
        behind = Client(daemon.port)
        behind.session = a.session
        queued = in_thread(answers, "queued", lambda: behind.call("tools/call", {"name": "status", "arguments": {}}))
        assert wait_until(lambda: [s["queued"] for s in daemon.status().get("sessions", [])] == [1], timeout=10)
        sigterm_seen(daemon)
        queued.join(15)   # answered while the commit is still held
        assert opened_during_the_stop(daemon).status == 503   # no new session
        release.touch()
        committing.join(15)
        assert daemon.proc.wait(10) == 0
    assert answers["queued"]["error"] == {"code": -32003, "message": (
        "server shutting down: this request waited behind the session's call in flight and was not run; "
        "send it again in a new session once the server is back")}
    assert answers["commit"]["result"]["structuredContent"]["committed"] == ["pets"]
    assert (image / "pets.py").read_text() == "SOUND = 'meow'\n"
    assert [entry["session"] for entry in journal(image)] == [a.session]


def test_during_the_grace_a_client_may_cancel_its_call_or_delete_its_session_but_start_nothing(tmp_path):
    # Both were answered 503, as every request then (or met a closed listener): a client
    # stopping its work politely made the stop wait out the whole grace.
    started_a, started_b = tmp_path / "a", tmp_path / "b"
    answers = {}

    def slow(client, key, started):
        message = {"jsonrpc": "2.0", "id": key, "method": "tools/call",
                   "params": {"name": "execute_code", "arguments": {"code": long_run(started)}}}
        thread = threading.Thread(target=lambda: answers.__setitem__(key, client.post(message)), daemon=True)
        thread.start()
        return thread

    def on_a_new_connection(session):
        client = Client(daemon.port)
        client.session = session.session
        return client

    with Daemon(tmp_path, env={"GS_MCP_BREAK_GRACE": "5"}) as daemon:
        a, b = session(daemon), session(daemon)
        running_a, running_b = slow(a, "slow-a", started_a), slow(b, "slow-b", started_b)
        assert wait_until(lambda: started_a.exists() and started_b.exists(), timeout=15)
        sigterm_seen(daemon)
        assert opened_during_the_stop(daemon).status == 503
        refused = on_a_new_connection(b).call("tools/call", {"name": "status", "arguments": {}})
        assert refused.status == 503 and refused.json()["error"]["message"] == (
            "Service Unavailable: the server is shutting down")
        cancelled = on_a_new_connection(a).post({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                                 "params": {"requestId": "slow-a"}})
        assert cancelled.status == 202, cancelled
        deleted = on_a_new_connection(b).delete()
        assert deleted.status == 200, deleted
        running_a.join(15)
        running_b.join(15)
        assert daemon.proc.wait(10) == 0
    assert answers["slow-a"].status == 200 and b"data:" not in answers["slow-a"].body   # cancelled: no answer
    assert answers["slow-b"].json()["error"]["message"] == "session ended: client sent DELETE"
    log = daemon.log_text()
    assert "session %s ended: client sent DELETE" % b.session[:8] in log
    assert "still ran after the 5s grace" not in log    # neither call was waited out


def test_a_call_outrunning_the_grace_is_ended_and_the_daemon_exits_within_the_stop_timeout(tmp_path):
    started = tmp_path / "started"
    answers = {}
    with Daemon(tmp_path, env=QUICK_STOP) as daemon:
        pid, running = call_running_into_a_stop(daemon, started, answers)
        running.join(15)
        # Well within the longest stop (longest_stop): only the call's grace ran out.
        assert daemon.proc.wait(10) == 0
    assert answers["run"]["error"] == {"code": -32003, "message": (
        "session ended: server shutting down (its call in flight still ran after the 0.2s grace, GS_MCP_BREAK_GRACE)")}
    assert not pid_alive(pid)
    assert "1 call(s) in flight get up to 0.2s to finish" in daemon.log_text()


def test_a_call_whose_worker_is_killed_in_the_grace_hears_the_signal(tmp_path):
    # The stop read the spawner's statuses no more: "session ended: worker N exited", no signal.
    started = tmp_path / "started"
    answers = {}
    with Daemon(tmp_path, env={"GS_MCP_BREAK_GRACE": "5"}) as daemon:
        pid, running = call_running_into_a_stop(daemon, started, answers)
        os.kill(pid, signal.SIGKILL)
        running.join(15)
        assert daemon.proc.wait(10) == 0
    assert answers["run"]["error"] == {"code": -32003, "message": killed(pid),
                                       "data": {"exit": {"signal": 9, "name": "SIGKILL"}}}


def test_a_second_sigterm_during_the_grace_stops_at_once(tmp_path):
    started = tmp_path / "started"
    answers = {}
    with Daemon(tmp_path, env={"GS_MCP_BREAK_GRACE": "5"}) as daemon:
        _, running = call_running_into_a_stop(daemon, started, answers)
        daemon.proc.send_signal(signal.SIGTERM)
        running.join(15)
        assert daemon.proc.wait(10) == 0
    # Not the grace's end: the second signal's.
    assert answers["run"]["error"]["message"] == (
        "session ended: server shutting down (a second stop signal: its call in flight was not waited for)")
    assert "a second stop signal: ending what still runs now" in daemon.log_text()


@pytest.mark.parametrize("second", [signal.SIGTERM, signal.SIGINT])
def test_a_second_stop_signal_cuts_a_stuck_spawners_grace_too(tmp_path, second):
    # It cut the calls' and the workers' waits, not the spawner's: a stuck spawner still held
    # the exit for its whole 5 s grace after "press Ctrl-C twice".
    with Daemon(tmp_path) as daemon:
        worker = session(daemon).tool("status")["structuredContent"]["pid"]
        spawner = spawner_of(daemon)
        try:
            os.kill(spawner, signal.SIGSTOP)   # deaf to its end, as a hung one would be
            sigterm_seen(daemon)
            assert wait_until(lambda: not pid_alive(worker))   # the stop is at the spawner now
            daemon.proc.send_signal(second)
            assert daemon.proc.wait(10) == 0
            assert wait_until(lambda: not pid_alive(spawner))   # killed, not left behind
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.kill(spawner, signal.SIGKILL)
    log = daemon.log_text()
    assert "a second stop signal: ending what still runs now" in log
    assert "the worker spawner did not end within 0.5s of a second stop signal; killed it" in log
    assert "within 5s of being told to stop" not in log


def test_a_call_streaming_progress_at_a_stop_ends_its_stream_with_its_result(tmp_path):
    # Streams were ended at the stop: this one is the call's own reply, still to come.
    release = tmp_path / "release"
    with Daemon(tmp_path, env={"GS_MCP_BREAK_GRACE": "5"}) as daemon:
        a = session(daemon)
        call = Exchange(daemon.port, "POST", a.session, {
            "jsonrpc": "2.0", "id": "s", "method": "tools/call", "params": {
                "name": "execute_code", "arguments": {"code": HELD_STEPS % {"release": str(release)}},
                "_meta": {"progressToken": "t"}}}, accept="application/json, text/event-stream")
        assert call.wait_head() == 200 and call.message()["params"]["progress"] == 1
        sigterm_seen(daemon)
        release.touch()
        rest = [call.message(timeout=15) for _ in range(2)]
        assert call.next() == ("end",)
        assert daemon.proc.wait(10) == 0
    assert rest[0]["params"]["progress"] == 2
    assert rest[1]["id"] == "s" and rest[1]["result"]["structuredContent"]["result"] == "'done'", rest[1]


# The router's stop graces (the call grace's cap, the workers' and the spawner's, 5 s, 3 s
# and 5 s) cut to SHORT_GRACE in the serving process alone, by a sitecustomize it imports
# first: every grace still runs out, in ~4 s instead of ~14. That their real sum fits in
# `gsmcpd stop`'s wait is test_router_shutdown's test_the_longest_stop_fits_in_the_wait_....
SHORT_GRACE = 1.0
SHORT_GRACES = """
import sys
if sys.argv[1:2] == ["serve"]:
    import gsmcpd.router.shutdown as shutdown, gsmcpd.router.workers as workers
    shutdown.CALL_GRACE_CAP = shutdown.SHUTDOWN_GRACE = workers.SPAWNER_END_GRACE = %r
""" % SHORT_GRACE


def test_a_stop_whose_every_grace_runs_out_ends_by_itself_before_stop_would_kill_it(tmp_path):
    # A call outrunning its grace, a worker deaf to its stop (its grace more, then killed,
    # then reaped) and a spawner deaf to its end (its grace more, then killed): 13.5 s with
    # the real graces, and `gsmcpd stop` sent SIGKILL at 10 s, cutting off the image's
    # tidy-up after the kills. (The deaf spawner's part: the router waited for it inside
    # one call of its loop, then killed it without a word.)
    started = tmp_path / "started"
    answers = {}
    site = tmp_path / "short-graces"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SHORT_GRACES)
    # A break grace past the call grace's cap: the deaf worker's session, ended at once, would
    # otherwise have its worker killed at the break grace, before the workers' grace runs out.
    daemon = Daemon(tmp_path, env={"GS_MCP_BREAK_GRACE": "10"})
    daemon.env["PYTHONPATH"] = "%s:%s" % (site, daemon.env["PYTHONPATH"])
    with daemon:
        deaf_worker = session(daemon).tool("status")["structuredContent"]["pid"]
        a = session(daemon)
        running = in_thread(answers, "run", lambda: a.call(
            "tools/call", {"name": "execute_code", "arguments": {"code": long_run(started)}}))
        assert wait_until(started.exists, timeout=15)
        spawner = spawner_of(daemon)
        try:
            os.kill(deaf_worker, signal.SIGSTOP)
            os.kill(spawner, signal.SIGSTOP)
            stopped = subprocess.run([sys.executable, "-m", "gsmcpd", "stop", str(daemon.port),
                                      "--state-dir", str(daemon.state)],
                                     env=daemon.env, cwd=str(REPO), capture_output=True, text=True, timeout=60)
            running.join(15)
            assert stopped.returncode == 0, stopped.stdout + stopped.stderr
            assert "SIGKILL if still running after 30s" in stopped.stdout
            assert "did not exit" not in stopped.stdout and "sent SIGKILL" not in stopped.stdout
            assert daemon.proc.wait(5) == 0           # its own exit, not a SIGKILL's
            assert wait_until(lambda: not pid_alive(spawner))   # killed, not left behind
        finally:
            for pid in (deaf_worker, spawner):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
    log = daemon.log_text()
    assert answers["run"]["error"]["message"] == (
        "session ended: server shutting down (its call in flight still ran after the %gs grace, "
        "GS_MCP_BREAK_GRACE)" % SHORT_GRACE)
    assert "1 worker(s) did not exit within %gs of being told to stop; killed them" % SHORT_GRACE in log
    assert "the worker spawner did not end within %gs of being told to stop; killed it" % SHORT_GRACE in log
    assert "exited with status 0" in log


def test_a_stop_writes_the_counts_of_client_caused_lines_still_held_back(tmp_path):
    # A client looping on a line-causing request until the stop: its count was never written.
    with Daemon(tmp_path) as daemon:
        a = session(daemon)
        for _ in range(3):
            assert a.post({"jsonrpc": "2.0", "id": "stray", "result": {}}).status == 202
        assert daemon.stop() == 0
    line = "session %s: response to an unknown request 'stray' ignored" % a.session[:8]
    assert daemon.log_text().count(line) == 2   # the first, then its count at the stop
    assert line + " (and 2 more like it within 60 s, not logged one by one)" in daemon.log_text()
