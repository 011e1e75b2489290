"""End-to-end: request deadlines and notifications/cancelled through the real daemon.

A runaway call is broken in steps (soft break, hard break, stop); each shape of
runaway below meets the step that stops it, and the session survives unless the
last step (SIGKILL) was needed.
"""

import json
import os
import time

import pytest

from gsmcpd.wire.break_signals import BREAK_SIGNALS
from helpers import (Client, Daemon, parent_of, pid_alive, runs_until, signals_of, tool_text,
                     wait_for_port, wait_until, worker_pids)
from test_e2e_lifetime import Exchange, open_stream, worker_pid

REQUEST_TIMEOUT = -32001
# Each runaway here waits out the deadline, and nothing asserted depends on its length:
# half a second is ample for a call to reach its loop in a worker already running.
DEADLINE = "0.5"


@pytest.fixture(scope="module")
def deadlines(tmp_path_factory):
    d = Daemon(tmp_path_factory.mktemp("deadlines"), env={
        "GS_MCP_REQUEST_TIMEOUT": DEADLINE, "GS_MCP_BREAK_GRACE": "1", "GS_MCP_SPARE_WORKERS": "2"})
    d.start()
    yield d
    d.stop()


@pytest.fixture(scope="module")
def stopping(tmp_path_factory):
    """The deadline of `deadlines`, with its break steps 0.3 s apart: for calls no break
    reaches, where the steps' spacing decides nothing but how long the test waits."""
    d = Daemon(tmp_path_factory.mktemp("stopping"), env={
        "GS_MCP_REQUEST_TIMEOUT": DEADLINE, "GS_MCP_BREAK_GRACE": "0.3", "GS_MCP_SPARE_WORKERS": "2"})
    d.start()
    yield d
    d.stop()


@pytest.fixture(scope="module")
def cancels(tmp_path_factory):
    d = Daemon(tmp_path_factory.mktemp("cancels"), env={"GS_MCP_SPARE_WORKERS": "2",
                                                         "GS_MCP_KEEPALIVE_INTERVAL": "0.3"})
    d.start()
    yield d
    d.stop()


def execute(request_id, code, **params):
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
            "params": {"name": "execute_code", "arguments": {"code": code}, **params}}


def cancel(request_id):
    return {"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": request_id, "reason": "test"}}


SPIN_CATCHING = "while True:\n    try:\n        while True:\n            pass\n    except %s:\n        pass\n"

BROKEN = {  # shape: (code, the break that ends it)
    "python_loop": ("while True:\n    pass", "soft break"),
    "sleep": ("import time\ntime.sleep(60)", "soft break"),
    "socket_read": ("import socket\na, b = socket.socketpair()\na.recv(1)", "soft break"),
    # the regex engine checks for signals as it backtracks
    "regex_backtracking": ("import re\nre.match(r'(a+)+$', 'a' * 40 + 'b')", "soft break"),
    "swallows_exception": (SPIN_CATCHING % "Exception", "soft break"),
    "swallows_keyboard_interrupt": (SPIN_CATCHING % "KeyboardInterrupt", "hard break"),
    # the breaks are the router's own signals, not SIGINT or SIGUSR1: code that ignores those
    # (a tool shielding its clean-up from Ctrl-C) is broken all the same
    "ignores_sigint_and_sigusr1": ("import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                                   "signal.signal(signal.SIGUSR1, signal.SIG_IGN)\nwhile True:\n    pass",
                                   "soft break"),
}

TIMED_OUT = "request timed out after %ss (GS_MCP_REQUEST_TIMEOUT) and was interrupted: " % DEADLINE

STOPPED = {
    "swallows_base_exception": SPIN_CATCHING % "BaseException",
    # one C call that never returns to the eval loop, so no signal handler runs
    "c_code_holding_the_gil": "sum(range(10 ** 12))",
}


@pytest.mark.parametrize("shape", sorted(BROKEN))
def test_a_runaway_call_is_broken_and_the_session_survives(deadlines, shape):
    code, step = BROKEN[shape]
    c = Client(deadlines.port, timeout=15)
    c.initialize()
    pid = worker_pid(c)
    reply = c.post(execute("runaway-" + shape, code))
    assert reply.status == 200
    body = reply.json()
    assert body["id"] == "runaway-" + shape
    assert body["error"]["code"] == REQUEST_TIMEOUT
    assert body["error"]["message"] == TIMED_OUT + step
    assert tool_text(c.tool("execute_code", code="6 * 7")) == "42"
    assert worker_pid(c) == pid


PRINTS = "import sys\nfor i in range(3):\n    print('step', i)\nprint('warned', file=sys.stderr)\n"


@pytest.mark.parametrize("step, runaway", [
    ("soft break", "try:\n    while True:\n        pass\nexcept KeyboardInterrupt:\n    pass\n"),
    ("hard break", SPIN_CATCHING % "KeyboardInterrupt")], ids=["carried_on", "swallowed_the_soft"])
def test_a_broken_execute_code_carries_what_it_printed_before_the_break(deadlines, step, runaway):
    # A loop printing as it goes, then past the deadline: what it printed is the error's
    # data, not lost with the answer (the code carried on after the soft break, or
    # swallowed it and met the hard one).
    c = Client(deadlines.port, timeout=15)
    c.initialize()
    pid = worker_pid(c)
    body = c.post(execute("printing", PRINTS + runaway)).json()
    assert body["error"]["message"] == TIMED_OUT + step + (
        "; what the code printed before it is in the error's data (partial)")
    assert body["error"]["data"]["partial"] == {"stdout": "step 0\nstep 1\nstep 2\n", "stderr": "warned\n"}
    assert tool_text(c.tool("execute_code", code="6 * 7")) == "42"
    assert worker_pid(c) == pid


@pytest.mark.parametrize("shape", sorted(STOPPED))
def test_a_call_no_break_reaches_is_stopped_and_its_session_finished(stopping, shape):
    c = Client(stopping.port, timeout=15)
    c.initialize()
    pid = worker_pid(c)
    stream = open_stream(stopping.port, c.session)
    reply = c.post(execute(7, STOPPED[shape]))
    assert reply.status == 200
    body = reply.json()
    assert body["id"] == 7
    assert body["error"]["code"] == REQUEST_TIMEOUT
    assert body["error"]["message"] == ("request 7 timed out after %ss (GS_MCP_REQUEST_TIMEOUT) and its worker "
                                        "had to be stopped; the session is finished" % DEADLINE)
    assert wait_until(lambda: not pid_alive(pid))
    assert c.call("ping").status == 404
    assert stream.next() == ("end",)  # the finished session's stream closes too


SILENCE_BREAKS = ("import signal\nfrom gsmcpd.wire.break_signals import BREAK_SIGNALS\n"
                  "for signum in BREAK_SIGNALS:\n    signal.signal(signum, signal.SIG_IGN)\n"
                  "signal.pthread_sigmask(signal.SIG_BLOCK, BREAK_SIGNALS)")


def test_code_that_silenced_the_break_signals_leaves_later_calls_breakable(deadlines):
    # Ignored or blocked by one call's code (its own or a library's), the break signals
    # are the worker's again when the next call starts: its runaway is broken, not
    # stopped with the session.
    c = Client(deadlines.port, timeout=15)
    c.initialize()
    pid = worker_pid(c)
    c.tool("execute_code", code=SILENCE_BREAKS)
    body = c.post(execute("after", "while True:\n    pass")).json()
    assert body["error"] == {"code": REQUEST_TIMEOUT, "message": TIMED_OUT + "soft break"}
    assert worker_pid(c) == pid


def test_a_deadline_on_a_streaming_call_ends_its_stream_with_the_error(deadlines):
    c = Client(deadlines.port, timeout=15)
    c.initialize()
    # Its view read first (a worker reads it after the initialize reply): a break landing
    # while the worker still reads it is lost, and this call would meet the hard one.
    worker_pid(c)
    call = Exchange(deadlines.port, "POST", c.session,
                    execute("spin", "progress(1)\nwhile True:\n    pass", _meta={"progressToken": 3}),
                    accept="application/json, text/event-stream")
    assert call.message()["method"] == "notifications/progress"
    error = call.message()
    assert error["id"] == "spin" and error["error"] == {"code": REQUEST_TIMEOUT, "message": TIMED_OUT + "soft break"}
    assert call.next() == ("end",)
    assert tool_text(c.tool("execute_code", code="6 * 7")) == "42"


CATCHES_THE_BREAK = {  # what code made of the deadline's break it caught
    "exits": "try:\n    while True:\n        pass\nexcept KeyboardInterrupt:\n    raise SystemExit(1)\n",
    "carries_on": "try:\n    while True:\n        pass\nexcept KeyboardInterrupt:\n    pass\n'finished'",
}


@pytest.mark.parametrize("shape", sorted(CATCHES_THE_BREAK))
def test_code_that_catches_the_deadlines_break_still_answers_the_break(deadlines, shape):
    # Past its deadline the call answers -32001, not an exit's error result or the
    # value computed after the break; the session goes on in the same worker.
    c = Client(deadlines.port, timeout=15)
    c.initialize()
    pid = worker_pid(c)
    body = c.post(execute("caught", CATCHES_THE_BREAK[shape])).json()
    assert body["id"] == "caught"
    assert body["error"] == {"code": REQUEST_TIMEOUT, "message": TIMED_OUT + "soft break"}
    assert tool_text(c.tool("execute_code", code="6 * 7")) == "42"
    assert worker_pid(c) == pid


# -- test runs -------------------------------------------------------------------

TEST_CLASSES = {
    "TestInterrupts": "class TestInterrupts:\n"
                      "    def test_a(self):\n        pass\n"
                      "    def test_b(self):\n        raise KeyboardInterrupt('pressed')\n"
                      "    def test_c(self):\n        pass\n",
    "TestRunaway": "class TestRunaway:\n"
                   "    def test_a_passes(self):\n        pass\n"
                   "    def test_b_fails(self):\n        assert False, 'no'\n"
                   "    def test_c_spin(self):\n        while True:\n            pass\n"
                   "    def test_d_never(self):\n        pass\n",
}


def test_a_test_raising_keyboard_interrupt_is_its_error_but_a_break_ends_a_run(deadlines):
    c = Client(deadlines.port, timeout=15)
    c.initialize()
    pid = worker_pid(c)
    assert not c.tool("add_dictionary", dictionaryName="interrupts").get("isError")
    for source in TEST_CLASSES.values():
        compiled = c.tool("compile_class_definition", source=source, dictionaryName="interrupts")
        assert not compiled.get("isError"), compiled
    ran = c.tool("run_test_class", className="TestInterrupts")["structuredContent"]
    assert (ran["run"], ran["passed"], ran["errors"]) == (3, 2, 1)
    assert ran["failed"] == [{"test": "interrupts.TestInterrupts.test_b", "outcome": "error",
                              "exception": "KeyboardInterrupt", "message": "pressed"}]
    body = c.post({"jsonrpc": "2.0", "id": "runaway", "method": "tools/call", "params": {
        "name": "run_test_class", "arguments": {"className": "TestRunaway"}}}).json()
    assert body["error"]["message"] == TIMED_OUT + (
        "soft break; the results of the tests that finished before it are in the error's data (partial)")
    partial = body["error"]["data"]["partial"]    # what the deadline did not throw away
    assert (partial["run"], partial["passed"], partial["failures"], partial["notRun"]) == (2, 1, 1, 1)
    assert partial["interrupted"] == "interrupts.TestRunaway.test_c_spin"
    assert partial["failed"] == [{"test": "interrupts.TestRunaway.test_b_fails", "outcome": "failure",
                                  "exception": "AssertionError", "message": "no"}]
    assert c.tool("run_test_class", className="TestInterrupts")["structuredContent"]["passed"] == 2
    assert worker_pid(c) == pid


def test_describing_a_test_the_deadline_breaks_carries_what_it_printed(deadlines):
    # describe_test_failure of a hanging test: what it printed shows how far it got,
    # and the deadline threw it away.
    c = Client(deadlines.port, timeout=15)
    c.initialize()
    worker_pid(c)   # its view read, which the first call waits for, outside the deadline's calls
    assert not c.tool("add_dictionary", dictionaryName="hangs").get("isError")
    compiled = c.tool("compile_class_definition", dictionaryName="hangs", source=(
        "class TestHangs:\n    def test_waits(self):\n        print('connected')\n"
        "        while True:\n            pass\n"))
    assert not compiled.get("isError"), compiled
    body = call_tool(c, "describe_test_failure", className="hangs.TestHangs", selector="test_waits")
    assert body["error"]["message"] == TIMED_OUT + (
        "soft break; what the test printed before it is in the error's data (partial)")
    assert body["error"]["data"]["partial"] == {
        "test": "hangs.TestHangs.test_waits", "interrupted": "hangs.TestHangs.test_waits", "output": "connected\n"}


CAUGHT_BREAK = ("class TestCaughtBreak:\n"
                "    def test_exits(self):\n        try:\n            while True:\n                pass\n"
                "        except KeyboardInterrupt:\n            raise SystemExit(130)\n"
                "    def test_swallows(self):\n        try:\n            while True:\n                pass\n"
                "        except KeyboardInterrupt:\n            pass\n"
                "    def test_passes(self):\n        pass\n")


def call_tool(client, name, **arguments):
    return client.post({"jsonrpc": "2.0", "id": name, "method": "tools/call", "params": {
        "name": name, "arguments": arguments}}).json()


def test_a_test_that_catches_the_deadlines_break_still_has_its_run_ended(deadlines):
    # Its exit (or nothing) after catching the break is not the test's outcome: the
    # call ends with the break, as one the test did not catch.
    c = Client(deadlines.port, timeout=15)
    c.initialize()
    pid = worker_pid(c)
    assert not c.tool("add_dictionary", dictionaryName="caught").get("isError")
    compiled = c.tool("compile_class_definition", source=CAUGHT_BREAK, dictionaryName="caught")
    assert not compiled.get("isError"), compiled
    for selector in ("test_exits", "test_swallows"):
        body = call_tool(c, "run_test_method", className="caught.TestCaughtBreak", selector=selector)
        assert (body["error"]["code"], body["error"]["message"]) == (REQUEST_TIMEOUT, TIMED_OUT + (
            "soft break; the results of the tests that finished before it are in the error's data (partial)"))
        assert body["error"]["data"]["partial"]["class"] == "caught.TestCaughtBreak"
    ran = c.tool("run_test_method", className="caught.TestCaughtBreak", selector="test_passes")
    assert ran["structuredContent"]["passed"] == 1
    assert worker_pid(c) == pid


def test_a_module_that_turns_the_deadlines_break_into_an_exit_is_broken_not_failing(deadlines):
    # Written into the image for the sessions opened after it; gone again at the end, so
    # no other test's import meets it.
    path = deadlines.state / "image" / "exits_on_break.py"
    path.write_text("try:\n    while True:\n        pass\nexcept KeyboardInterrupt:\n"
                    "    raise SystemExit(1)\n\n\nclass TestExits:\n    def test_a(self):\n"
                    "        pass\n")
    try:
        c = Client(deadlines.port, timeout=15)
        c.initialize()
        # Its view read first (a worker reads it after the initialize reply): a break landing
        # while the worker still reads it is lost, and this call would meet the hard one.
        worker_pid(c)
        body = call_tool(c, "run_test_class", className="exits_on_break.TestExits")
        assert body["error"] == {"code": REQUEST_TIMEOUT, "message": TIMED_OUT + "soft break"}
        assert tool_text(c.tool("execute_code", code="6 * 7")) == "42"
    finally:
        path.unlink()


# Loaded into the daemon (PYTHONPATH), so into the forkserver its workers are forked from:
# a session's view read, once begun, touches HELD_VIEW_READ/reading and waits for
# HELD_VIEW_READ/release (a big image's read takes seconds); a break's handler, once run,
# touches .../broken.
HELD_VIEW_READ = """
import os
if os.environ.get("HELD_VIEW_READ"):
    import time
    from gsmcpd.image.view import View
    from gsmcpd.worker import main as worker_main
    _where, _load, _handler = os.environ["HELD_VIEW_READ"], View.load, worker_main.WorkerLoop.break_handler

    def _held(view, *args, **kwargs):
        if view.session_id != "rehearsal":   # not the forkserver's warm-up (worker.preload)
            open(os.path.join(_where, "reading"), "w").close()
            end = time.monotonic() + 20
            while not os.path.exists(os.path.join(_where, "release")) and time.monotonic() < end:
                time.sleep(0.01)
        return _load(view, *args, **kwargs)

    def _noted(loop, exception_class, label):
        handle = _handler(loop, exception_class, label)

        def on_signal(signum, frame):
            try:
                return handle(signum, frame)
            finally:
                open(os.path.join(_where, "broken"), "w").close()
        return on_signal

    View.load, worker_main.WorkerLoop.break_handler = _held, _noted
"""


def test_a_first_call_whose_deadline_passes_as_its_worker_reads_the_view_is_broken_softly(tmp_path):
    # The soft break landed in the read (the worker's, after the initialize reply) and was
    # dropped as landing between calls: the call ran on, answered as if in time, or met the
    # hard break; with the read longer than the grace too, it was killed with its session.
    site, held = tmp_path / "held-view-read", tmp_path / "held"
    site.mkdir()
    held.mkdir()
    (site / "sitecustomize.py").write_text(HELD_VIEW_READ)
    d = Daemon(tmp_path, env={"GS_MCP_REQUEST_TIMEOUT": DEADLINE, "GS_MCP_BREAK_GRACE": "10",
                              "GS_MCP_SPARE_WORKERS": "1", "HELD_VIEW_READ": str(held)})
    d.env["PYTHONPATH"] = "%s:%s" % (site, d.env["PYTHONPATH"])
    with d:
        c = Client(d.port, timeout=30)
        c.initialize()
        assert wait_until((held / "reading").exists)
        call = Exchange(d.port, "POST", c.session, execute("first", "6 * 7"))
        assert wait_until((held / "broken").exists)   # its deadline passed in the read
        (held / "release").touch()
        assert call.json()["error"] == {"code": REQUEST_TIMEOUT, "message": TIMED_OUT + "soft break"}
        assert tool_text(c.tool("execute_code", code="6 * 7")) == "42"   # the session goes on


def test_breaks_reaching_spares_as_they_start_do_not_kill_them(tmp_path):
    # A spare still starting has no handlers yet: it lives through a break only if it was
    # born ignoring the break signals (a real-time signal's default action ends a
    # process), that is if the spawner that forks it ignores them. From the daemon's launch
    # on, each worker is also sent both the moment it is seen (a spare is seldom seen that
    # soon: the spawner's mask is what pins the order).
    d = Daemon(tmp_path, env={"GS_MCP_SPARE_WORKERS": "2"})
    d.start(wait=False)
    try:
        hit, deadline = set(), time.monotonic() + 30
        while len(hit) < 2 and time.monotonic() < deadline:
            for pid in set(worker_pids(d.proc.pid)) - hit:
                for signum in BREAK_SIGNALS:
                    os.kill(pid, signum)
                hit.add(pid)
        wait_for_port(d.port, proc=d.proc)
        assert len(hit) == 2 and all(pid_alive(pid) for pid in hit), hit
        spawners = {parent_of(pid) for pid in hit}
        assert len(spawners) == 1 and set(BREAK_SIGNALS) <= signals_of(spawners.pop(), "SigIgn")
        for _ in hit:            # each spare serves a session
            c = Client(d.port, timeout=15)
            c.initialize()
            assert worker_pid(c) in hit
            assert tool_text(c.tool("execute_code", code="6 * 7")) == "42"
    finally:
        d.stop()


# -- cancellation ----------------------------------------------------------------

def test_cancelling_a_running_call_ends_its_sse_reply_empty_and_frees_the_session(cancels, tmp_path):
    c = Client(cancels.port, timeout=10)  # bounds "promptly": the call itself sleeps 30 s
    c.initialize()
    pid = worker_pid(c)
    started, finished = tmp_path / "started", tmp_path / "finished"
    code = "open(%r, 'w').close()\nimport time\ntime.sleep(30)\nopen(%r, 'w').close()" % (str(started), str(finished))
    call = Exchange(cancels.port, "POST", c.session, execute("long", code),
                    accept="application/json, text/event-stream")
    assert wait_until(started.exists)
    note = c.post(cancel("long"))
    assert (note.status, note.body) == (202, b"")
    # a request is answered as one (text/event-stream), never 202; with no message, as cancelled
    assert call.wait_head() == 200 and call.headers["content-type"] == "text/event-stream"
    assert call.next() == ("end",)
    assert tool_text(c.tool("execute_code", code="6 * 7")) == "42"
    assert worker_pid(c) == pid
    assert not finished.exists()


def test_cancelling_a_streaming_call_ends_its_stream_without_a_response(cancels, tmp_path):
    c = Client(cancels.port, timeout=10)
    c.initialize()
    code = "progress(1, 2)\nimport time\ntime.sleep(30)"
    call = Exchange(cancels.port, "POST", c.session, execute("streaming", code, _meta={"progressToken": "p"}),
                    accept="application/json, text/event-stream")
    assert call.wait_head() == 200
    assert call.message()["method"] == "notifications/progress"
    assert c.post(cancel("streaming")).status == 202
    assert call.next() == ("end",)
    assert tool_text(c.tool("execute_code", code="6 * 7")) == "42"


def test_cancelling_a_queued_call_drops_it_unrun(cancels, tmp_path):
    c = Client(cancels.port, timeout=10)
    c.initialize()
    started, ran, release = tmp_path / "started", tmp_path / "ran", tmp_path / "release"
    running = Exchange(cancels.port, "POST", c.session, execute(1, runs_until(started, release)))
    assert wait_until(started.exists)
    queued = Exchange(cancels.port, "POST", c.session, execute(2, "open(%r, 'w').close()" % str(ran)))
    # It waits in the session's queue (a cancel that came first would name no call yet).
    assert wait_until(lambda: [row["queued"] for row in cancels.status().get("sessions", ())
                               if row["id"] == c.session] == [1], timeout=30)
    assert c.post(cancel(2)).status == 202
    assert queued.wait_head() == 200 and queued.headers["content-type"] == "text/event-stream"
    assert queued.next() == ("end",)
    release.touch()
    assert running.wait_head() == 200
    assert "result" in running.json()
    assert tool_text(c.tool("execute_code", code="6 * 7")) == "42"  # the queue has drained
    assert not ran.exists()


def test_a_cancelled_call_of_a_client_taking_no_sse_gets_202(cancels, tmp_path):
    # No JSON body can say "no answer", and this client refuses a stream (it breaks
    # MCP's rule to accept both): 202, the one empty answer left.
    c = Client(cancels.port, timeout=10)
    c.initialize()
    started = tmp_path / "started"
    code = "open(%r, 'w').close()\nimport time\ntime.sleep(30)" % str(started)
    call = Exchange(cancels.port, "POST", c.session, execute("json-only", code), accept="application/json")
    assert wait_until(started.exists)
    assert c.post(cancel("json-only")).status == 202
    assert call.wait_head() == 202
    assert call.next() == ("body", b"")
    assert tool_text(c.tool("execute_code", code="6 * 7")) == "42"


def test_a_cancel_naming_no_call_is_a_harmless_no_op(cancels):
    c = Client(cancels.port, timeout=10)
    c.initialize()
    pid = worker_pid(c)
    for request_id in ("never-sent", 1, None):  # unknown, finished (initialize), invalid
        note = c.post(cancel(request_id))
        assert (note.status, note.body) == (202, b"")
    assert tool_text(c.tool("execute_code", code="6 * 7")) == "42"
    assert worker_pid(c) == pid


def test_a_cancelled_calls_late_progress_goes_nowhere(cancels):
    c = Client(cancels.port, timeout=10)
    c.initialize()
    stream = open_stream(cancels.port, c.session)
    code = "import time\nprogress(1)\ntry:\n    time.sleep(30)\nexcept KeyboardInterrupt:\n    progress(2)\n    raise"
    call = Exchange(cancels.port, "POST", c.session, execute("late", code, _meta={"progressToken": "t"}),
                    accept="application/json, text/event-stream")
    assert call.message()["params"]["progress"] == 1
    assert c.post(cancel("late")).status == 202
    assert call.next() == ("end",)
    assert tool_text(c.tool("execute_code", code="6 * 7")) == "42"  # the break is over
    # a keepalive written after it shows nothing of the cancelled call came before
    seen = stream.comments
    assert wait_until(lambda: stream.comments > seen)
    assert stream.items.empty(), stream.items.get()
    stream.close()


def test_a_cancel_must_name_the_id_exactly(cancels, tmp_path):
    c = Client(cancels.port, timeout=10)
    c.initialize()
    started, release = tmp_path / "started", tmp_path / "release"
    call = Exchange(cancels.port, "POST", c.session, execute(1, runs_until(started, release)))
    assert wait_until(started.exists)
    for near_miss in (True, "1", [1]):  # true == 1 in Python, but it is not the id 1
        assert c.post(cancel(near_miss)).status == 202
    release.touch()   # the call runs on to its end only now, after every near miss
    assert call.wait_head() == 200
    assert call.json()["result"]["structuredContent"]["result"] == "'finished'"


def test_a_request_reusing_the_id_of_a_call_running_or_waiting_is_refused_and_neither_is_disturbed(cancels, tmp_path):
    # MCP: an id is not reused within a session. A second call with the id of one running
    # was queued behind it: both answers bore the id, and a cancel naming it broke the
    # first and let the second run.
    c = Client(cancels.port, timeout=10)
    c.initialize()
    started, release, reran = tmp_path / "started", tmp_path / "release", tmp_path / "reran"
    running = Exchange(cancels.port, "POST", c.session, execute("same", runs_until(started, release)))
    assert wait_until(started.exists)
    waiting = Exchange(cancels.port, "POST", c.session, execute(2, "'second'"))
    assert wait_until(lambda: [row["queued"] for row in cancels.status().get("sessions", ())
                               if row["id"] == c.session] == [1], timeout=30)
    rerun = "open(%r, 'w').close()" % str(reran)
    for request_id, state, message in (("same", "still running", execute("same", rerun)),
                                       (2, "still waiting to run", execute(2, rerun)),
                                       (2, "still waiting to run", {"jsonrpc": "2.0", "id": 2, "method": "ping"})):
        resp = c.post(message)
        assert resp.status == 200, resp   # not 400: a 1.x Python SDK client would drop its call in flight
        assert resp.json() == {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32600, "message": (
            "Invalid Request: the id %s is in use by a request %s in this session (a request id must not "
            "be reused within a session); this one was not run: send it with a new id"
            % (json.dumps(request_id), state))}}
    assert not running.head_read.is_set() and not waiting.head_read.is_set()
    release.touch()
    first, second = running.json(), waiting.json()
    assert first["id"] == "same" and first["result"]["structuredContent"]["result"] == "'finished'"
    assert second["id"] == 2 and second["result"]["structuredContent"]["result"] == "'second'"
    assert not reran.exists()
    # answered, an id may be used again: only ids in flight or waiting are held
    assert c.call("ping").json()["result"] == {}
    again = c.post(execute("same", "6 * 7")).json()
    assert again["id"] == "same" and again["result"]["structuredContent"]["result"] == "42"


def test_a_commit_broken_as_it_waits_for_the_image_lock_ends_at_the_soft_break(tmp_path):
    # It wrote nothing, yet asking whether it stood waited for the lock again (for up to
    # GS_MCP_IMAGE_LOCK_WAIT): only the hard break ended the call.
    from gsmcpd.image.default import EXAMPLE_FILES
    from test_tools_support import write_image

    # A grace a loaded host's worker answers the soft break within (at 0.3 s, an answer late
    # by that much met the hard break and failed the test); ended at the soft break, the
    # call waits none of it.
    image = write_image(tmp_path / "image", EXAMPLE_FILES)
    with Daemon(tmp_path, env={"GS_MCP_IMAGE": str(image), "GS_MCP_REQUEST_TIMEOUT": DEADLINE,
                               "GS_MCP_BREAK_GRACE": "3", "GS_MCP_IMAGE_LOCK_WAIT": "60"}) as d:
        holder, committer = Client(d.port, timeout=15), Client(d.port, timeout=15)
        holder.initialize()
        committer.initialize()
        pid = worker_pid(committer)
        held = holder.tool("execute_code", code="import fcntl\nheld = open(%r)\nfcntl.flock(held, fcntl.LOCK_EX)"
                                                % str(image / ".gsmcpd" / "lock"))
        assert not held.get("isError"), held
        body = committer.post({"jsonrpc": "2.0", "id": "waits", "method": "tools/call", "params": {
            "name": "set_class_comment",
            "arguments": {"className": "shop.models.Product", "comment": "Waited."}}}).json()
        assert body["error"]["message"] == TIMED_OUT + "soft break", body
        assert not holder.tool("execute_code", code="held.close()").get("isError")
        assert committer.tool("commit")["structuredContent"]["committed"] == ["shop.models"]   # kept
        assert worker_pid(committer) == pid
