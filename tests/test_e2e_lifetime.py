"""End-to-end: session lifetime through the real daemon (probes, streamless reaping,
stream loss and handover), with small intervals so each rule fires in seconds.

`Exchange` (one request over its own raw socket, its reply read as it arrives) is
also used by test_e2e_breaks.py and test_e2e_progress.py.
"""

import json
import os
import queue
import signal
import socket
import threading
import time

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from helpers import PROTOCOL, Client, Daemon, pid_alive, wait_until


class Exchange:
    """One HTTP request on its own socket; a thread reads the reply as it arrives:
    the head, then each SSE event of a chunked stream (or the whole body)."""

    def __init__(self, port, method, session=None, body=None, accept="text/event-stream", headers=None):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.items = queue.Queue()
        self.head_read = threading.Event()
        self.status = None
        self.headers = {}
        self.comments = 0
        data = json.dumps(body).encode() if isinstance(body, (dict, list)) else (body or b"")
        lines = ["%s /mcp HTTP/1.1" % method, "Host: 127.0.0.1:%d" % port, "Accept: %s" % accept]
        if session:
            lines += ["MCP-Session-Id: %s" % session, "MCP-Protocol-Version: %s" % PROTOCOL]
        if method == "POST":
            lines += ["Content-Type: application/json", "Content-Length: %d" % len(data)]
        lines += ["%s: %s" % item for item in (headers or {}).items()]
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + data)
        self._buf = bytearray()
        threading.Thread(target=self._read, daemon=True).start()

    # -- reading (the thread) ------------------------------------------------
    def _more(self):
        data = self.sock.recv(65536)
        if not data:
            raise EOFError
        self._buf += data

    def _line(self):
        while b"\r\n" not in self._buf:
            self._more()
        line, _, rest = bytes(self._buf).partition(b"\r\n")
        self._buf = bytearray(rest)
        return line

    def _exactly(self, n):
        while len(self._buf) < n:
            self._more()
        data = bytes(self._buf[:n])
        del self._buf[:n]
        return data

    def _read(self):
        try:
            self.status = int(self._line().split()[1])
            while True:
                line = self._line()
                if not line:
                    break
                name, _, value = line.decode().partition(":")
                self.headers[name.strip().lower()] = value.strip()
            self.head_read.set()
            if self.headers.get("transfer-encoding") == "chunked":
                self._read_chunks()
            else:
                body = self._exactly(int(self.headers.get("content-length", "0")))
                self.items.put(("body", body))
        except (OSError, EOFError, ValueError, IndexError):
            pass
        finally:
            self.head_read.set()
            self.items.put(("eof",))

    def _read_chunks(self):
        text = ""
        while True:
            size = int(self._line().split(b";")[0], 16)
            if size == 0:
                self.items.put(("end",))
                return
            text += self._exactly(size).decode()
            self._exactly(2)
            while "\n\n" in text:
                block, text = text.split("\n\n", 1)
                self._event(block)

    def _event(self, block):
        data = [line[5:].lstrip() for line in block.split("\n") if line.startswith("data:")]
        if data:
            self.items.put(("message", json.loads("\n".join(data))))
        else:
            self.comments += 1

    # -- the test's side -------------------------------------------------------
    def wait_head(self, timeout=10):
        assert self.head_read.wait(timeout), "no response head"
        return self.status

    def next(self, timeout=10):
        try:
            return self.items.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError("nothing arrived within %ss" % timeout) from None

    def message(self, timeout=10):
        item = self.next(timeout)
        assert item[0] == "message", item
        return item[1]

    def json(self, timeout=10):
        item = self.next(timeout)
        assert item[0] == "body", item
        return json.loads(item[1])

    def close(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


def open_stream(port, session):
    stream = Exchange(port, "GET", session)
    assert stream.wait_head() == 200
    assert stream.headers["content-type"] == "text/event-stream"
    return stream


def worker_pid(client):
    result = client.tool("execute_code", code="import os\nos.getpid()")
    return int(result["structuredContent"]["result"])


def is_released(client, pid):
    return not pid_alive(pid) and client.call("ping").status == 404


# -- probes ------------------------------------------------------------------

# How long a probe waits for its answer. The answering clients are threads of the test
# process, which a loaded host can keep off the CPU for a second: the tests measure which
# probes are answered, not the timeout, so it is roomy.
PING_TIMEOUT = 3


@pytest.fixture(scope="module")
def probing(tmp_path_factory):
    d = Daemon(tmp_path_factory.mktemp("probing"), env={
        "GS_MCP_IDLE_TIMEOUT": "none", "GS_MCP_PROBE_AFTER": "0.5", "GS_MCP_PING_TIMEOUT": str(PING_TIMEOUT),
        "GS_MCP_MAINTENANCE_INTERVAL": "0.25", "GS_MCP_SPARE_WORKERS": "2"})
    d.start()
    yield d
    d.stop()


class PingAnswerer(threading.Thread):
    """Answers every probe a session's stream brings, on a connection of its own."""

    def __init__(self, port, session, stream):
        super().__init__(daemon=True)
        self.client = Client(port)
        self.client.session = session
        self.stream = stream
        self.pings, self.replies = [], []
        self.stopping = threading.Event()

    def run(self):
        while not self.stopping.is_set():
            try:
                item = self.stream.items.get(timeout=0.1)
            except queue.Empty:
                continue
            self.pings.append(item)
            if item[0] != "message":
                return
            reply = self.client.post({"jsonrpc": "2.0", "id": item[1].get("id"), "result": {}})
            self.replies.append((reply.status, reply.body))

    def stop(self):
        self.stopping.set()
        self.join(5)
        self.client.close()


def test_a_probe_answered_keeps_the_session_an_unanswered_one_releases_it(probing):
    live, silent = Client(probing.port), Client(probing.port)
    live.initialize()
    silent.initialize()
    live_pid, silent_pid = worker_pid(live), worker_pid(silent)
    live_stream, silent_stream = open_stream(probing.port, live.session), open_stream(probing.port, silent.session)
    answerer = PingAnswerer(probing.port, live.session, live_stream)
    answerer.start()

    unanswered = silent_stream.message(timeout=5)
    assert unanswered == {"jsonrpc": "2.0", "id": unanswered["id"], "method": "ping"}
    assert unanswered["id"].startswith("srv-")
    # The silent client is let go once its probe times out: stream ended, worker gone, 404.
    assert silent_stream.next(timeout=10) == ("end",)
    assert wait_until(lambda: is_released(silent, silent_pid), timeout=10)
    # The live one, answering each probe, outlives that point by two more rounds.
    seen = len(answerer.replies)
    assert wait_until(lambda: len(answerer.replies) >= seen + 2, timeout=10), answerer.pings
    answerer.stop()
    assert len(answerer.pings) >= 2
    for kind, ping in answerer.pings:
        assert kind == "message" and ping["method"] == "ping" and ping["id"].startswith("srv-")
    assert unanswered["id"] not in [ping["id"] for _, ping in answerer.pings]
    assert set(answerer.replies) == {(202, b"")}
    assert pid_alive(live_pid)
    assert live.call("ping").status == 200
    assert worker_pid(live) == live_pid
    log = probing.log_text()
    assert "reaped (probe_unanswered)" in log
    for _, ping in answerer.pings:  # every answer was matched to its probe
        assert "response to an unknown request %r" % ping["id"] not in log
    live_stream.close()


def test_an_answer_to_no_probe_is_accepted_and_ignored(probing):
    c = Client(probing.port)
    c.initialize()
    reply = c.post({"jsonrpc": "2.0", "id": "srv-999999", "result": {}})
    assert (reply.status, reply.body) == (202, b"")
    assert wait_until(lambda: "response to an unknown request 'srv-999999' ignored" in probing.log_text())
    assert c.call("ping").status == 200


def test_an_answer_to_no_probe_logs_its_id_cut_however_long(probing):
    # A 1 MB id made a 1 MB log line, at every POST of it.
    c = Client(probing.port)
    c.initialize()
    reply = c.post({"jsonrpc": "2.0", "id": "srv-" + "9" * 1_000_000, "result": {}})
    assert (reply.status, reply.body) == (202, b"")
    cut = "response to an unknown request 'srv-%s... ignored" % ("9" * 75)
    assert wait_until(lambda: cut in probing.log_text())
    assert "9" * 1000 not in probing.log_text()


def test_a_client_looping_on_answers_to_no_probe_is_logged_once_whatever_their_ids(probing):
    # A line per answer: a client looping on them, a new id each time, flooded the log.
    looping, closing = Client(probing.port), Client(probing.port)
    looping.initialize()
    closing.initialize()
    for n in range(20):
        assert looping.post({"jsonrpc": "2.0", "id": "loop-%d" % n, "result": {}}).status == 202
    assert closing.post({"jsonrpc": "2.0", "id": "loop-done", "result": {}}).status == 202
    assert wait_until(lambda: "response to an unknown request 'loop-done' ignored" in probing.log_text())
    log = probing.log_text()
    assert "response to an unknown request 'loop-0' ignored" in log
    assert "response to an unknown request 'loop-1' ignored" not in log


def test_the_mcp_sdk_client_answers_probes_and_keeps_its_session(probing):
    async def run():
        async with streamable_http_client(probing.url) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                before = await session.call_tool("execute_code", {"code": "import os\nos.getpid()"})
                # past the first probe's timeout (0.5-0.75 s + PING_TIMEOUT), had it gone unanswered
                await anyio.sleep(PING_TIMEOUT + 1.5)
                after = await session.call_tool("execute_code", {"code": "import os\nos.getpid()"})
                return before.structured_content["result"], after.structured_content["result"]

    before, after = anyio.run(run)
    assert before == after


def test_a_request_after_a_probe_is_not_forgotten_when_a_stall_is_forgiven(tmp_path):
    # The client shows itself right after a probe, then the router stalls (a host
    # suspend, here SIGSTOP) past three maintenance intervals: the stall is forgiven,
    # and the probe, though never answered, must not release a client that spoke since.
    env = {"GS_MCP_IDLE_TIMEOUT": "none", "GS_MCP_PROBE_AFTER": "0.5", "GS_MCP_PING_TIMEOUT": str(PING_TIMEOUT),
           "GS_MCP_MAINTENANCE_INTERVAL": "0.3", "GS_MCP_SPARE_WORKERS": "1"}
    with Daemon(tmp_path, env=env) as d:
        c = Client(d.port)
        c.initialize()
        pid = worker_pid(c)
        stream = open_stream(d.port, c.session)
        assert stream.message(timeout=5)["method"] == "ping"  # left unanswered
        assert c.call("ping").status == 200                  # but the client speaks
        os.kill(d.proc.pid, signal.SIGSTOP)
        try:
            time.sleep(PING_TIMEOUT + 0.2)   # past the probe's timeout and three 0.3 s intervals
        finally:
            os.kill(d.proc.pid, signal.SIGCONT)
        assert wait_until(lambda: "idle clocks forgiven" in d.log_text())
        answerer = PingAnswerer(d.port, c.session, stream)   # answers the later probes
        answerer.start()
        assert wait_until(lambda: len(answerer.replies) >= 1, timeout=10), answerer.pings
        answerer.stop()
        assert pid_alive(pid) and "probe_unanswered" not in d.log_text()
        assert worker_pid(c) == pid
        stream.close()


# -- streams and streamless sessions ---------------------------------------------

GRACE = 1.0
STREAMLESS = 1.5   # past GRACE, so that a dropped stream's session is reaped for the loss


@pytest.fixture(scope="module")
def streams(tmp_path_factory):
    d = Daemon(tmp_path_factory.mktemp("streams"), env={
        "GS_MCP_IDLE_TIMEOUT": "none", "GS_MCP_STREAM_LOSS_GRACE": str(GRACE),
        "GS_MCP_STREAMLESS_IDLE_TIMEOUT": str(STREAMLESS), "GS_MCP_KEEPALIVE_INTERVAL": "0.5",
        "GS_MCP_SPARE_WORKERS": "2"})
    d.start()
    yield d
    d.stop()


def test_a_streamless_session_is_reaped_counting_from_its_last_request(streams):
    # Its checks are tied to wall time, which a loaded host can overshoot: a round whose
    # ping came past the initialize's deadline, or whose check past the ping's, proves
    # nothing either way and is run again; a reap earlier than either fails at once.
    for _ in range(10):
        c = Client(streams.port)
        started = time.monotonic()
        c.initialize()
        initialized = time.monotonic()
        pid = worker_pid(c)
        time.sleep(STREAMLESS - 0.5)
        pinged = time.monotonic()
        status = c.call("ping").status  # a request: the count starts again
        if status != 200:
            assert time.monotonic() >= started + STREAMLESS, "reaped before its deadline"
            c.close()
            continue
        # 0.5 s past a reap counted from the initialize, 0.5 s before the one counted from the ping
        time.sleep(max(0, initialized + STREAMLESS + 0.5 - time.monotonic()))
        alive = pid_alive(pid)
        if not alive and time.monotonic() >= pinged + STREAMLESS:
            c.close()
            continue
        assert alive, "reaped counting from an earlier request"
        assert wait_until(lambda: is_released(c, pid), timeout=STREAMLESS + 6)
        assert "reaped (streamless)" in streams.log_text()
        return
    pytest.fail("no round kept to its timing: the host is too loaded to tell")


def test_a_dropped_stream_releases_the_worker_after_the_grace(streams):
    c = Client(streams.port)
    c.initialize()
    pid = worker_pid(c)
    stream = open_stream(streams.port, c.session)
    closed = time.monotonic()
    stream.close()
    time.sleep(GRACE / 4)
    # a check a loaded host delays past the grace proves nothing: only an earlier one counts
    assert pid_alive(pid) or time.monotonic() >= closed + GRACE, "released before the grace ended"
    assert wait_until(lambda: not pid_alive(pid), timeout=GRACE + 6)
    assert c.call("ping").status == 404
    assert "reaped (stream_lost)" in streams.log_text()


def test_a_stream_reattached_within_the_grace_keeps_the_session_and_the_newest_get_wins(streams):
    c = Client(streams.port)
    c.initialize()
    pid = worker_pid(c)
    open_stream(streams.port, c.session).close()
    again = open_stream(streams.port, c.session)  # reattached within the grace
    newest = open_stream(streams.port, c.session)
    assert again.next(timeout=5) == ("end",)  # superseded: it ends
    again.close()  # and its end is no loss: no grace starts
    time.sleep(GRACE + 0.5)
    assert pid_alive(pid)
    # still open, keepalives flowing (waited for: a loaded host can delay the first)
    assert wait_until(lambda: newest.comments >= 1) and newest.items.empty()
    assert worker_pid(c) == pid
    newest.close()


def test_delete_ends_the_sessions_stream(streams):
    c = Client(streams.port)
    c.initialize()
    pid = worker_pid(c)
    stream = open_stream(streams.port, c.session)
    assert c.delete().status == 200
    assert stream.next(timeout=5) == ("end",)
    assert wait_until(lambda: not pid_alive(pid))


def test_a_maintenance_interval_of_weeks_does_not_stop_the_router(tmp_path):
    # Its timer is past what one epoll wait can take (2**31 - 1 ms): the loop sleeps
    # in shorter waits instead of failing at its first one.
    env = {"GS_MCP_IDLE_TIMEOUT": "none", "GS_MCP_MAINTENANCE_INTERVAL": "3000000",
           "GS_MCP_SPARE_WORKERS": "1"}
    with Daemon(tmp_path, env=env) as d:
        client = Client(d.port)
        client.initialize()
        assert client.call("ping").status == 200
        assert d.proc.poll() is None and "OverflowError" not in d.log_text()
