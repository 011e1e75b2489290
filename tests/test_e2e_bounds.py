"""End-to-end: the bounds one session's client meets on a shared router. Requests
waiting behind a session's call in flight are bounded (GS_MCP_MAX_QUEUED): one over is
answered at once with its own id, never queued. A call's notifications are paced
(router/pacing.py): a tool reporting progress in a tight loop reaches its client as a
bounded number of events, its last value still before its result."""

import json
import time

import pytest

from gsmcpd.router.pacing import NOTIFY_BURST, NOTIFY_RATE
from helpers import Client, Daemon, open_session, rss_kib, runs_until, tool_text, wait_until
from test_e2e_breaks import cancel, execute
from test_e2e_lifetime import Exchange

MAX_QUEUED = 2
SESSION_BUSY = -32004


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    d = Daemon(tmp_path_factory.mktemp("bounds"), env={"GS_MCP_MAX_QUEUED": str(MAX_QUEUED),
                                                       "GS_MCP_SPARE_WORKERS": "2"})
    d.start()
    yield d
    d.stop()


def post(daemon, session, message):
    return Exchange(daemon.port, "POST", session, message, accept="application/json, text/event-stream")


def fill_queue(daemon, c, first_id):
    """One more request than may wait, sent at once behind a call in flight: whichever
    the router reads last is refused, which shows the others wait in the queue then.
    (the refused id, its reply, {id: Exchange} of the requests waiting)"""
    racing = {n: post(daemon, c.session, execute(n, repr(n))) for n in range(first_id, first_id + MAX_QUEUED + 1)}
    assert wait_until(lambda: any(e.head_read.is_set() for e in racing.values()))
    [refused_id] = [n for n, e in racing.items() if e.head_read.is_set()]
    refused = racing.pop(refused_id)
    assert refused.wait_head() == 200
    return refused_id, refused.json(), racing


def test_a_request_over_the_queue_bound_is_refused_at_once_and_the_queued_ones_still_run(daemon, c, tmp_path):
    started, release = tmp_path / "started", tmp_path / "release"
    running = post(daemon, c.session, execute(1, runs_until(started, release, "first")))
    assert wait_until(started.exists)
    refused_id, error, waiting = fill_queue(daemon, c, 2)
    assert error["id"] == refused_id and error["error"]["code"] == SESSION_BUSY
    assert "%d requests already wait" % MAX_QUEUED in error["error"]["message"]
    assert "GS_MCP_MAX_QUEUED" in error["error"]["message"]
    # while the queue is full, the next request is refused at once too, and the router
    # goes on answering this session's ping and another session's call
    late = c.post(execute("late", "'never run'")).json()
    assert late["id"] == "late" and late["error"]["code"] == SESSION_BUSY
    # (its own id: the client's next, 2, is one of the calls waiting, and would be refused)
    assert c.post({"jsonrpc": "2.0", "id": "ping", "method": "ping"}).json()["result"] == {}
    other = open_session(daemon)
    assert tool_text(other.tool("execute_code", code="6 * 7")) == "42"
    other.close()
    assert not any(e.head_read.is_set() for e in waiting.values())
    [row] = [row for row in daemon.status()["sessions"] if row["id"] == c.session]
    assert row["queued"] == MAX_QUEUED and row["in_flight"] == "tools/call execute_code"
    release.touch()
    assert running.json()["result"]["structuredContent"]["result"] == "'first'"
    for n, queued in waiting.items():
        reply = queued.json()
        assert reply["id"] == n and reply["result"]["structuredContent"]["result"] == repr(n)
    assert tool_text(c.tool("execute_code", code="6 * 7")) == "42"   # drained: room again


def test_a_cancelled_queued_request_frees_its_place(daemon, c, tmp_path):
    started, release = tmp_path / "started", tmp_path / "release"
    running = post(daemon, c.session, execute(1, runs_until(started, release)))
    assert wait_until(started.exists)
    refused_id, error, waiting = fill_queue(daemon, c, 2)
    assert error["error"]["code"] == SESSION_BUSY
    dropped, kept = sorted(waiting)
    assert c.post(cancel(dropped)).status == 202
    assert waiting[dropped].wait_head() == 200 and waiting[dropped].next() == ("end",)
    admitted = post(daemon, c.session, execute(9, "9"))   # in the place the cancel freed
    release.touch()
    assert running.json()["result"]["structuredContent"]["result"] == "'finished'"
    assert waiting[kept].json()["result"]["structuredContent"]["result"] == repr(kept)
    assert admitted.json()["result"]["structuredContent"]["result"] == "9"


def test_requests_waiting_behind_a_call_hold_their_bodies_not_their_parsed_arguments(daemon, c, tmp_path):
    # Parsed, 4 MiB of "[]," take 100 MB: each waiting call held that much of the router,
    # 32 per session by default, where its body, what the worker gets, is all it needs.
    started, release = tmp_path / "started", tmp_path / "release"
    running = post(daemon, c.session, execute(1, runs_until(started, release)))
    assert wait_until(started.exists)
    before = rss_kib(daemon.proc.pid)
    arrays = (4 << 20) // 3
    bodies = [json.dumps(execute(n, repr(n), x=[])).encode().replace(b'"x": []', b'"x": [' + b"[]," * arrays + b"0]")
              for n in range(2, 2 + MAX_QUEUED)]
    waiting = {n: post(daemon, c.session, body) for n, body in zip(range(2, 2 + MAX_QUEUED), bodies)}
    assert wait_until(lambda: [row["queued"] for row in daemon.status()["sessions"]
                               if row["id"] == c.session] == [MAX_QUEUED], timeout=30)
    grown = (rss_kib(daemon.proc.pid) - before) * 1024
    # Parsed, the two took ~200 MB; held as bodies, 4.3 times their size came up in a clean
    # clone's run (the heap as the interpreter left it), over a 4x bound: 8x tells them apart.
    assert grown < 8 * sum(map(len, bodies)), grown
    release.touch()
    assert running.json()["result"]["structuredContent"]["result"] == "'finished'"
    for n, queued in waiting.items():   # the worker got each whole
        assert queued.json()["result"]["structuredContent"]["result"] == repr(n)


def progress_flood(started, release, least=3000):
    """execute_code source reporting progress 1, 2, 3, ... as fast as it can, until the
    test touches `release` (and `least` are sent; at most 20 s); its value is the last."""
    return ("import os, time\nn, end = 0, time.monotonic() + 20\n"
            "while (n < %d or not os.path.exists(%r)) and time.monotonic() < end:\n"
            "    n += 1\n    progress(n)\n    if n == 1:\n        open(%r, 'w').close()\nn"
            % (least, str(release), str(started)))


def test_progress_in_a_tight_loop_reaches_the_client_thinned_with_its_last_value_before_the_result(
        daemon, c, tmp_path):
    started, release = tmp_path / "started", tmp_path / "release"
    began = time.monotonic()
    call = post(daemon, c.session, execute("flood", progress_flood(started, release), _meta={"progressToken": "f"}))
    assert wait_until(started.exists)
    other = open_session(daemon)   # served while the flood runs
    assert tool_text(other.tool("execute_code", code="6 * 7")) == "42"
    other.close()
    assert call.wait_head() == 200 and call.headers["content-type"] == "text/event-stream"
    events = []
    while (item := call.next(timeout=30)) != ("end",):
        assert item[0] == "message", item
        events.append(item[1])
        if len(events) == NOTIFY_BURST + 1:   # one paced after the burst, while the flood runs
            release.touch()
    elapsed = time.monotonic() - began
    *notes, final = events
    sent = int(final["result"]["structuredContent"]["result"])
    values = [note["params"]["progress"] for note in notes]
    assert final["id"] == "flood" and sent >= 3000
    assert values[-1] == sent and values == sorted(set(values))   # the last one, in order
    # the burst, the rate over the call's whole time, the last one held back
    assert len(values) <= NOTIFY_BURST + NOTIFY_RATE * elapsed + 1, (len(values), elapsed)
    assert tool_text(c.tool("execute_code", code="6 * 7")) == "42"
