"""One client connection, in process: a real loop and real sockets, a scripted app.

These drive `Connection` without a daemon: the app is a function of (conn, request),
and the loop is run pass by pass until what a test waits for has happened.
"""

import json
import logging
import select
import socket
import ssl
import time
from types import SimpleNamespace

import pytest

from gsmcpd.auth.tls import PLAINTEXT_HTTP_RESPONSE, TlsConnection, TlsError, server_context, write_self_signed
from gsmcpd.router import connection
from gsmcpd.router.connection import PIPELINE_BUFFER, RECV_SIZE, Connection
from gsmcpd.router.cors import Cors
from gsmcpd.router.loop import Loop
from gsmcpd.router.trace import HEAD_FIELD_CAP, shown
from helpers import bodies_of


class Harness:
    def __init__(self, handle, max_body=1 << 20, tcp=False, allowed_origins=(), handle_head=None, tls=None):
        self.loop = Loop()
        self.unreadable = []
        self.closed = []
        self.heads = []   # heads gated before their bodies were read
        self.traced_heads = []   # heads answered before their bodies were read
        if handle_head is None:
            handle_head = lambda harness, conn, head: conn.read_body()   # every head passes
        self.app = SimpleNamespace(handle=lambda conn, request: handle(self, conn, request),
                                   handle_head=lambda conn, head: (self.heads.append(head),
                                                                   handle_head(self, conn, head)),
                                   cors=Cors(allowed_origins))
        self.router = SimpleNamespace(
            loop=self.loop, app=self.app, config=SimpleNamespace(max_body=max_body, read_timeout=30),
            trace_response=lambda *a: None, trace_unreadable=self.unreadable.append,
            trace_head=lambda head: self.traced_heads.append(head),
            connection_closed=self.closed.append)
        if tcp:
            listener = socket.create_server(("127.0.0.1", 0))
            self.client = socket.create_connection(listener.getsockname())
            ours, _ = listener.accept()
            listener.close()
        else:
            ours, self.client = socket.socketpair()
        self.client.settimeout(5)
        self.conn = Connection(self.router, ours, "test", tls=tls)

    def step(self):
        """One loop pass, never blocking in select for long."""
        self.loop.call_later(0.01, lambda: None)
        self.loop._run_once()

    def run_until(self, predicate, timeout=5.0):
        end = time.monotonic() + timeout
        while not predicate():
            assert time.monotonic() < end, "timed out"
            self.step()

    def read_until_closed(self):
        """What the connection wrote, until it closed (running the loop meanwhile). One
        that lingers (its write side shut, the client's input unread) is closed as a
        client closes it: at the end of what it reads, it closes its own side."""
        self.run_until(lambda: self.conn.closed or self.conn.lingering_since is not None)
        data = self.read_to_eof()
        if not self.conn.closed:
            self.client.shutdown(socket.SHUT_WR)
            self.run_until(lambda: self.conn.closed)
        return data

    def read_to_eof(self):
        self.client.settimeout(2)
        data = b""
        while True:
            chunk = self.client.recv(65536)
            if not chunk:
                return data
            data += chunk

    def close(self):
        self.conn.close()
        self.client.close()
        self.loop.close()


@pytest.fixture
def harness():
    made = []

    def make(handle, **kwargs):
        made.append(Harness(handle, **kwargs))
        return made[-1]
    yield make
    for h in made:
        h.close()


def post(body, extra=b""):
    return (b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n" % len(body)) + extra + b"\r\n" + body


def statuses(raw):
    return [int(line.split()[1]) for line in raw.split(b"\r\n") if line.startswith(b"HTTP/1.1 ")]


def answer_later(delay=0.05):
    """An app that answers each request with its body, after `delay` (as a worker would)."""
    def handle(h, conn, request):
        h.loop.call_later(delay, lambda: conn.respond(200, [], request.body))
    return handle


def answer_at_once(h, conn, request):
    conn.respond(200, [], request.body)


# -- half-close ---------------------------------------------------------------

def test_pipelined_requests_then_a_half_close_are_all_answered_in_order(harness):
    h = harness(answer_later())
    h.client.sendall(post(b"one") + post(b"two") + post(b"three"))
    h.client.shutdown(socket.SHUT_WR)
    raw = h.read_until_closed()
    assert bodies_of(raw) == [b"one", b"two", b"three"]
    assert h.unreadable == [] and h.closed == [h.conn]


def test_answers_at_once_then_one_later_then_a_half_close(harness):
    def handle(h, conn, request):
        if request.body == b"ping":
            conn.respond(200, [], b"pong")
        else:
            answer_later()(h, conn, request)
    h = harness(handle)
    h.client.sendall(post(b"ping") + post(b"ping") + post(b"call"))
    h.client.shutdown(socket.SHUT_WR)
    assert bodies_of(h.read_until_closed()) == [b"pong", b"pong", b"call"]


def test_a_half_close_seen_between_two_replies_still_answers_the_rest(harness):
    # The EOF is read in the pass after a reply is written, before the next request
    # is taken from the parser (call_soon): nothing is dropped then either.
    h = harness(answer_at_once)
    h.client.sendall(post(b"a") + post(b"b"))
    h.client.shutdown(socket.SHUT_WR)
    assert bodies_of(h.read_until_closed()) == [b"a", b"b"]


def test_an_incomplete_request_left_at_eof_is_dropped_after_the_complete_ones(harness):
    h = harness(answer_later())
    h.client.sendall(post(b"one") + post(b"two") + b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc")
    h.client.shutdown(socket.SHUT_WR)
    raw = h.read_until_closed()
    assert bodies_of(raw) == [b"one", b"two"]          # and no 400 for the fragment
    assert h.unreadable == ["client closed mid-request"]


def test_a_half_close_with_nothing_pending_closes(harness):
    h = harness(answer_at_once)
    h.client.shutdown(socket.SHUT_WR)
    assert h.read_until_closed() == b""
    assert h.unreadable == []


def test_a_half_close_mid_request_on_an_idle_connection_is_traced_and_closed(harness):
    h = harness(answer_at_once)
    h.client.sendall(b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc")
    h.client.shutdown(socket.SHUT_WR)
    assert h.read_until_closed() == b""
    assert h.unreadable == ["client closed mid-request"]


# -- streams ------------------------------------------------------------------

def stream_app(h, conn, request):
    conn.start_stream(200, [("Content-Type", "text/event-stream")])
    h.lost = []
    conn.on_stream_lost = lambda: h.lost.append(conn)


def flood(sock, limit):
    """Send up to `limit` bytes without blocking; the count sent."""
    sock.setblocking(False)
    sent = 0
    block = b"x" * 65536
    try:
        while sent < limit:
            sent += sock.send(block[:limit - sent])
    except BlockingIOError:
        pass
    return sent


def test_a_client_writing_on_while_its_stream_runs_is_read_only_so_far(harness):
    h = harness(stream_app, tcp=True)
    h.client.sendall(b"GET /mcp HTTP/1.1\r\nHost: x\r\n\r\n")
    h.run_until(lambda: h.conn.streaming)
    total = 0
    for _ in range(50):            # the client writes on while the router runs
        total += flood(h.client, 17 << 20)
        h.step()
    assert total > PIPELINE_BUFFER + RECV_SIZE   # it did try to send more than is read
    assert h.conn.parser.buffered < PIPELINE_BUFFER + RECV_SIZE
    assert not h.conn.closed and h.conn.streaming
    h.conn.stream_write(b": keepalive\n\n")
    h.client.settimeout(5)
    got = h.client.recv(65536)
    assert got.startswith(b"HTTP/1.1 200") and b"d\r\n: keepalive\n\n\r\n" in got
    assert got.count(b"HTTP/1.1") == 1


def test_a_stream_whose_client_hangs_up_unread_is_lost_at_the_next_writes(harness):
    h = harness(stream_app, tcp=True)
    h.client.sendall(b"GET /mcp HTTP/1.1\r\nHost: x\r\n\r\n")
    h.run_until(lambda: h.conn.streaming)
    for _ in range(20):
        flood(h.client, 17 << 20)
        h.step()
    assert h.conn.parser.buffered >= PIPELINE_BUFFER   # no longer reading: the EOF goes unseen
    h.client.close()
    for _ in range(3):               # the keep-alive comments a GET stream writes
        if h.conn.closed:
            break
        h.conn.stream_write(b": keepalive\n\n")
        h.step()
        time.sleep(0.05)
    assert h.conn.closed and h.lost == [h.conn] and h.closed == [h.conn]


def test_a_stream_whose_client_hangs_up_is_lost_at_once(harness):
    h = harness(stream_app)
    h.client.sendall(b"GET /mcp HTTP/1.1\r\nHost: x\r\n\r\n")
    h.run_until(lambda: h.conn.streaming)
    h.client.shutdown(socket.SHUT_WR)
    h.run_until(lambda: h.conn.closed)
    assert h.lost == [h.conn]


def test_a_closed_connection_lets_go_of_its_pipelined_input_while_its_call_runs_on(harness):
    # The call answering on it still holds the connection: not what was pipelined behind.
    h = harness(stream_app)
    h.client.sendall(b"GET /mcp HTTP/1.1\r\nHost: x\r\n\r\n" + post(b"x" * 200_000))
    h.run_until(lambda: h.conn.streaming and h.conn.parser.buffered > 100_000)
    h.client.shutdown(socket.SHUT_WR)
    h.run_until(lambda: h.conn.closed)
    assert h.lost == [h.conn] and h.closed == [h.conn]
    assert h.conn.parser.buffered == 0 and not h.conn.parser.in_progress
    h.conn.stream_write(b"late")      # what the call still sends goes nowhere, harmlessly
    h.conn.end_stream()
    h.conn.respond(200, [], b"late")
    h.conn.drain_and_close()
    h.step()
    assert h.closed == [h.conn] and h.conn.parser.buffered == 0


def test_a_connection_closed_awaiting_a_reply_lets_go_of_its_pipelined_input(harness):
    h = harness(lambda h, conn, request: None)    # the reply comes after the close
    h.client.sendall(post(b"call") + post(b"y" * 100_000) + post(b"z"))
    h.run_until(lambda: h.conn.busy and h.conn.parser.buffered > 100_000)
    h.conn.close()                     # as a write failure or stall closes it
    assert h.conn.parser.buffered == 0
    h.conn.respond(200, [], b"call")   # the call ends: nothing is written, nothing taken
    h.step()
    assert h.closed == [h.conn] and h.conn.parser.buffered == 0 and h.unreadable == []


def test_an_http_error_while_streaming_closes_without_a_second_response(harness):
    # A small body limit makes the parser's own cap (one request + 64 KiB) lower than
    # PIPELINE_BUFFER: the 413 comes while the stream runs.
    h = harness(stream_app, max_body=1024)
    h.client.sendall(b"GET /mcp HTTP/1.1\r\nHost: x\r\n\r\n")
    h.run_until(lambda: h.conn.streaming)
    h.client.setblocking(False)
    try:
        while not h.conn.closed:
            flood(h.client, 1 << 20)
            h.step()
    except (BrokenPipeError, ConnectionResetError):
        pass
    assert h.conn.closed and h.lost == [h.conn]
    assert any("413" in reason for reason in h.unreadable)
    h.client.settimeout(5)
    data = b""
    try:
        while chunk := h.client.recv(65536):
            data += chunk
    except ConnectionResetError:
        pass
    assert data.count(b"HTTP/1.1") == 1 and b"413" not in data


def test_an_http_error_while_a_reply_is_awaited_closes_without_answering_out_of_order(harness):
    h = harness(lambda h, conn, request: None, max_body=1024)   # the reply never comes
    h.client.sendall(post(b"x"))
    h.run_until(lambda: h.conn.busy)
    h.client.setblocking(False)
    for _ in range(20):   # small max_body: the parser's cap is under PIPELINE_BUFFER
        if h.conn.closed:
            break
        try:
            flood(h.client, 1 << 20)
        except (BrokenPipeError, ConnectionResetError):
            break
        h.step()
    h.run_until(lambda: h.conn.closed)
    h.client.settimeout(5)
    try:
        assert h.client.recv(65536) == b""     # no 413 read as the reply to the POST
    except ConnectionResetError:
        pass


# -- what the HTTP layer refuses, for a browser page granted CORS -----------------

LISTED = "https://app.example"


@pytest.mark.parametrize("request_bytes, status", [
    (b"POST /mcp HTTP/1.1\r\nHost: x\r\nOrigin: %s\r\nContent-Length: 2000\r\n\r\n", b"413"),
    (b"POST /mcp HTTP/1.1\r\nHost: x\r\nOrigin: %s\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", b"400"),
    (b"POST /mcp HTTP/1.1\r\nHost: x\r\nOrigin: %s\r\nTransfer-Encoding: gzip\r\n\r\n", b"501"),
], ids=["body too large", "bad chunk", "unknown coding"])
def test_a_refusal_after_the_head_names_a_listed_origin(harness, request_bytes, status):
    h = harness(lambda h, conn, request: None, max_body=1024, allowed_origins=(LISTED,))
    h.client.sendall(request_bytes % LISTED.encode())
    data = h.read_until_closed()
    assert data.startswith(b"HTTP/1.1 " + status)
    head = data.split(b"\r\n\r\n")[0].lower()
    assert b"access-control-allow-origin: https://app.example\r\n" in head
    assert b"access-control-expose-headers:" in head and b"vary: origin" in head


def test_a_refusal_of_the_http_layer_is_a_json_rpc_error_an_mcp_client_can_show(harness):
    # SDKs surface the JSON-RPC error of a non-2xx reply; any other body they replace
    # with a stand-in ("Server returned an error response"), and the client never learns why.
    h = harness(lambda h, conn, request: None, max_body=1024)
    h.client.sendall(b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 2000\r\n\r\n")
    head, _, body = h.read_until_closed().partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413 ") and b"\r\nContent-Type: application/json\r\n" in head
    assert json.loads(body) == {"jsonrpc": "2.0", "id": None, "error": {
        "code": -32600, "message": "413 request body too large: over 1024 bytes, the most GS_MCP_MAX_BODY allows"}}


def test_a_refusal_names_no_unlisted_origin_nor_one_from_a_head_it_could_not_read(harness):
    unlisted = harness(lambda h, conn, request: None, max_body=1024, allowed_origins=(LISTED,))
    unlisted.client.sendall(b"POST /mcp HTTP/1.1\r\nHost: x\r\nOrigin: https://other.example\r\n"
                            b"Content-Length: 2000\r\n\r\n")
    data = unlisted.read_until_closed()
    assert data.startswith(b"HTTP/1.1 413") and b"access-control-allow-origin" not in data.lower()
    assert b"vary: origin" in data.lower()
    broken = harness(lambda h, conn, request: None, allowed_origins=(LISTED,))
    broken.client.sendall(b"POST /mcp HTTP/1.1\r\nHost: x\r\nOrigin: %s\r\nBad Header: 1\r\n\r\n"
                          % LISTED.encode())
    data = broken.read_until_closed()
    assert data.startswith(b"HTTP/1.1 400") and b"access-control-allow-origin" not in data.lower()


def test_with_no_origin_listed_a_refusal_carries_no_cors_headers(harness):
    h = harness(lambda h, conn, request: None, max_body=1024)
    h.client.sendall(b"POST /mcp HTTP/1.1\r\nHost: x\r\nOrigin: %s\r\nContent-Length: 2000\r\n\r\n"
                     % LISTED.encode())
    data = h.read_until_closed()
    assert data.startswith(b"HTTP/1.1 413")
    assert b"access-control" not in data.lower() and b"vary" not in data.lower()


# -- HEAD -----------------------------------------------------------------------

def test_a_head_request_gets_the_head_alone_and_the_connection_stays_usable(harness):
    def handle(h, conn, request):
        conn.respond(405 if request.method == "HEAD" else 200, [("Content-Type", "text/plain")], b"eighteen bytes!!\r\n")
    h = harness(handle)
    h.client.sendall(b"HEAD /mcp HTTP/1.1\r\nHost: x\r\n\r\n" + b"GET /mcp HTTP/1.1\r\nHost: x\r\n\r\n")
    h.client.shutdown(socket.SHUT_WR)
    raw = h.read_until_closed()
    first, _, rest = raw.partition(b"\r\n\r\n")
    assert first.startswith(b"HTTP/1.1 405") and b"Content-Length: 18" in first
    assert rest.startswith(b"HTTP/1.1 200")
    assert rest.endswith(b"\r\n\r\neighteen bytes!!\r\n")


# -- a failing handler ----------------------------------------------------------

def test_a_handler_that_raises_gets_500_and_the_connection_closes(harness, caplog):
    def handle(h, conn, request):
        raise RuntimeError("handler bug")
    h = harness(handle)
    with caplog.at_level(logging.ERROR, logger="gsmcpd.http"):
        h.client.sendall(post(b"x") + post(b"y"))
        raw = h.read_until_closed()
    assert statuses(raw) == [500]
    head, _, body = raw.partition(b"\r\n\r\n")
    assert b"Connection: close" in head
    assert json.loads(body)["error"]["code"] == -32603
    assert h.closed == [h.conn]
    assert "handler bug" in caplog.text and "Traceback" in caplog.text


def test_a_handler_that_raises_logs_its_request_s_path_cut_and_no_header(harness, caplog):
    # Its line showed the whole path, up to 64 KiB a client chose.
    def handle(h, conn, request):
        raise RuntimeError("handler bug")
    h = harness(handle)
    path = "/mcp/" + "p" * 40000
    with caplog.at_level(logging.ERROR, logger="gsmcpd.http"):
        h.client.sendall(("POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer s3cr3t-token\r\n"
                          "Content-Length: 1\r\n\r\nx" % path).encode())
        assert statuses(h.read_until_closed()) == [500]
    [record] = [r for r in caplog.records if r.name == "gsmcpd.http" and "handler bug" in r.exc_text]
    line = record.getMessage()
    assert line == "handling POST %s from test failed" % shown(path, HEAD_FIELD_CAP)
    assert line.endswith("p... from test failed") and "s3cr3t" not in caplog.text


def test_a_handler_that_raises_after_answering_closes_once_flushed(harness, caplog):
    held = []

    def handle(h, conn, request):
        conn.respond(200, [], b"fine")
        held.append(conn)
        raise RuntimeError("bug after the reply")
    h = harness(handle)
    h.client.sendall(post(b"x") + post(b"y"))
    raw = h.read_until_closed()
    assert statuses(raw) == [200] and bodies_of(raw) == [b"fine"]   # the second one is not taken
    held[0].respond(200, [], b"stray")                           # nor a stray reply written


def test_a_handler_that_raises_mid_stream_cuts_the_stream_and_closes(harness):
    def handle(h, conn, request):
        stream_app(h, conn, request)
        conn.stream_write(b"data: 1\n\n")
        raise RuntimeError("bug mid-stream")
    h = harness(handle)
    h.client.sendall(b"GET /mcp HTTP/1.1\r\nHost: x\r\n\r\n")
    raw = h.read_until_closed()
    assert statuses(raw) == [200] and b"500" not in raw
    assert not raw.endswith(b"0\r\n\r\n")      # unterminated: the reader sees it cut short
    assert h.lost == [h.conn]


def test_a_handler_that_raises_leaves_a_reply_already_pending_to_be_dropped(harness):
    # The app holds the connection (as a session holds a call's): its late reply is not
    # written behind the 500.
    held = []

    def handle(h, conn, request):
        held.append(conn)
        raise RuntimeError("bug before the reply")
    h = harness(handle)
    h.client.sendall(post(b"x"))
    raw = h.read_until_closed()
    held[0].respond(200, [], b"late")
    assert statuses(raw) == [500]


# -- clients that read slowly ---------------------------------------------------

def read_paced(h, enough, chunk=32 * 1024, pause=0.01, timeout=20.0):
    """Read as a slow client does, `chunk` bytes per `pause`, until `enough(got)` or EOF."""
    h.client.setblocking(False)
    got = bytearray()
    end = time.monotonic() + timeout
    while not enough(got):
        assert time.monotonic() < end, "timed out"
        h.step()
        try:
            data = h.client.recv(chunk)
        except BlockingIOError:
            continue
        if not data:
            break
        got += data
        time.sleep(pause)
    return bytes(got)


def test_a_slow_reader_that_keeps_reading_gets_its_whole_reply(harness, monkeypatch):
    # The budget is time without progress, not time to deliver: 4 MiB at 32 KiB per
    # 10 ms takes over a second, five budgets.
    monkeypatch.setattr(connection, "STREAM_WRITE_BUDGET", 0.2)
    body = b"x" * (4 << 20)
    h = harness(lambda h, conn, request: conn.respond(200, [], body))
    h.client.sendall(post(b"{}"))
    got = read_paced(h, lambda got: len(got) > len(body) and got.endswith(b"xxx"))
    assert got.endswith(b"\r\n\r\n" + body)
    assert not h.conn.closed


def test_a_stall_is_still_a_stall_after_some_progress(harness, monkeypatch):
    monkeypatch.setattr(connection, "STREAM_WRITE_BUDGET", 0.2)
    body = b"x" * (4 << 20)
    h = harness(lambda h, conn, request: conn.respond(200, [], body))
    h.client.sendall(post(b"{}"))
    read_paced(h, lambda got: len(got) >= 512 * 1024)   # reads a little, then stops
    h.run_until(lambda: h.conn.closed)


def test_a_stream_whose_reader_falls_too_far_behind_is_dropped(harness, monkeypatch):
    # Reading keeps a connection, but not a backlog without bound: what a tool's
    # progress floods into a slow reader's stream stops at STREAM_BACKLOG.
    monkeypatch.setattr(connection, "STREAM_BACKLOG", 1 << 20)
    h = harness(stream_app)
    h.client.sendall(b"GET /mcp HTTP/1.1\r\nHost: x\r\n\r\n")
    h.run_until(lambda: h.conn.streaming)
    held_at_close = []   # close() lets the backlog go: it is measured on the way out
    close = h.conn.close
    h.conn.close = lambda: (held_at_close.append(len(h.conn.out)), close())
    event = b"data: " + b"p" * 1000 + b"\n\n"
    for _ in range(4000):   # 4 MB, nothing read
        h.conn.stream_write(event)
        if h.conn.closed:
            break
    assert h.conn.closed and h.lost == [h.conn]
    assert (1 << 20) - 2 * len(event) <= held_at_close[0] <= (1 << 20) + 2 * len(event)


def test_a_connection_dropped_with_output_unsent_lets_it_go(harness, monkeypatch):
    # A call still running holds its connection after the drop: not the backlog too.
    monkeypatch.setattr(connection, "STREAM_BACKLOG", 1 << 20)
    h = harness(stream_app)
    h.client.sendall(b"GET /mcp HTTP/1.1\r\nHost: x\r\n\r\n")
    h.run_until(lambda: h.conn.streaming)
    while not h.conn.closed:
        h.conn.stream_write(b"data: " + b"p" * 1000 + b"\n\n")
    assert len(h.conn.out) == 0


def test_a_stream_to_an_http_1_0_client_is_not_chunked_and_ends_with_the_connection(harness):
    # RFC 9112 6.1: an HTTP/1.0 client cannot read chunks; its stream's end is the close.
    h = harness(stream_app)
    h.client.sendall(b"GET /mcp HTTP/1.0\r\n\r\n")
    h.run_until(lambda: h.conn.streaming)
    h.conn.stream_write(b"data: 1\n\n")
    h.conn.end_stream()
    raw = h.read_until_closed()
    head, _, body = raw.partition(b"\r\n\r\n")
    assert b"transfer-encoding" not in head.lower() and b"Connection: close" in head
    assert body == b"data: 1\n\n"


# -- headers the app adds to every reply to one request (CORS) -------------------

def test_reply_headers_go_on_every_reply_to_their_request_and_no_further(harness):
    # Three pipelined requests: the first's headers reach its plain reply, the second's
    # its stream's head; the third, which set none, gets none of theirs.
    def handle(h, conn, request):
        if request.target == "/a":
            conn.reply_headers = (("Vary", "Origin"),)
            conn.respond(200, [("Content-Type", "text/plain")], b"a")
        elif request.target == "/b":
            conn.reply_headers = (("X-B", "1"),)
            conn.start_stream(200, [("Content-Type", "text/event-stream")])
            conn.stream_write(b"data: b\n\n")
            conn.end_stream()
        else:
            conn.respond(200, (), b"c")
    h = harness(handle)
    h.client.sendall(b"".join(b"GET /%s HTTP/1.1\r\nHost: x\r\n\r\n" % t for t in (b"a", b"b", b"c")))
    h.client.shutdown(socket.SHUT_WR)
    a, b, c = h.read_until_closed().split(b"HTTP/1.1 ")[1:]
    assert b"\r\nContent-Type: text/plain\r\nVary: Origin\r\n" in a and b"X-B" not in a
    assert b"\r\nContent-Type: text/event-stream\r\nX-B: 1\r\n" in b and b"Vary" not in b
    assert b"Vary" not in c and b"X-B" not in c and c.endswith(b"\r\n\r\nc")


# -- a head gated before its body ----------------------------------------------

def refuse_head(h, conn, head):
    conn.respond(401, [("WWW-Authenticate", "Bearer")], b"no token")


def test_a_head_refused_is_answered_before_its_body_and_the_connection_closes(harness):
    h = harness(answer_at_once, handle_head=refuse_head, max_body=16_000_000)
    h.client.sendall(b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 16000000\r\n\r\n")
    raw = h.read_until_closed()   # no byte of the body was sent
    assert statuses(raw) == [401] and b"Connection: close\r\n" in raw and raw.endswith(b"no token")
    assert [head.path for head in h.heads] == ["/mcp"] and h.conn.parser.buffered == 0
    assert h.traced_heads == h.heads   # traced inbound, though its body never was read


# -- lingering close -----------------------------------------------------------

BIG_HEAD = b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 16000000\r\n\r\n"


def flood_while_running(h, limit, passes=400):
    """The client writes up to `limit` bytes of body as the router takes them; the count
    written, or None once the router reset the connection."""
    sent = 0
    for _ in range(passes):
        try:
            sent += flood(h.client, limit - sent)
        except (BrokenPipeError, ConnectionResetError):
            return None
        if sent >= limit or h.conn.closed:
            break
        h.step()
    return sent


def test_a_refused_head_lingers_dropping_the_body_until_the_clients_eof(harness):
    handled = []
    h = harness(lambda h, conn, request: handled.append(request), handle_head=refuse_head,
                max_body=16_000_000, tcp=True)
    h.client.sendall(BIG_HEAD)
    h.run_until(lambda: h.conn.lingering_since is not None)
    assert h.read_to_eof().endswith(b"no token")     # the reply, then the write side's FIN
    assert flood_while_running(h, 3 << 20) == 3 << 20   # the body goes on, dropped unread
    rest = memoryview(b"x" * (16_000_000 - (3 << 20)) + post(b"behind"))   # nor is a request behind it taken
    while rest:
        try:
            rest = rest[h.client.send(rest):]
        except BlockingIOError:
            h.step()
    for _ in range(20):
        h.step()
    assert not h.conn.closed and h.conn.parser.buffered == 0 and h.conn.eviction_order()[0] == 0
    assert handled == [] and len(h.heads) == 1
    h.client.shutdown(socket.SHUT_WR)
    h.run_until(lambda: h.conn.closed)
    assert h.closed == [h.conn] and h.unreadable == [] and h.heads == h.traced_heads


def test_a_lingering_client_that_sends_on_is_cut_off_at_the_byte_bound(harness, monkeypatch):
    monkeypatch.setattr(connection, "LINGER_BYTES", 1 << 20)
    monkeypatch.setattr(connection, "LINGER_SECONDS", 600)   # only the byte bound can end it
    h = harness(answer_at_once, handle_head=refuse_head, max_body=16_000_000, tcp=True)
    h.client.sendall(BIG_HEAD)
    h.run_until(lambda: h.conn.lingering_since is not None)
    flood_while_running(h, 64 << 20)
    h.run_until(lambda: h.conn.closed)
    assert h.closed == [h.conn]


def test_a_lingering_client_that_sends_nothing_more_is_closed_at_the_time_bound(harness, monkeypatch):
    monkeypatch.setattr(connection, "LINGER_SECONDS", 0.2)
    h = harness(answer_at_once, handle_head=refuse_head, max_body=16_000_000)
    h.client.sendall(BIG_HEAD)
    h.run_until(lambda: h.conn.lingering_since is not None)
    h.run_until(lambda: h.conn.closed)
    assert h.read_to_eof().endswith(b"no token") and h.closed == [h.conn]


@pytest.mark.parametrize("declared, dropped", [(4 << 20, 4 << 20), (64 << 20, 2 << 20)],
                         ids=["to-its-end", "to-the-declared-bound"])
def test_a_body_refused_for_its_declared_length_is_dropped_to_its_end(harness, monkeypatch, declared, dropped):
    # Cut off at LINGER_BYTES, a client writing its whole body before reading (as the MCP
    # SDKs do) read a reset, never the 413.
    monkeypatch.setattr(connection, "LINGER_BYTES", 1 << 20)
    monkeypatch.setattr(connection, "LINGER_DECLARED_MAX", 2 << 20)
    monkeypatch.setattr(connection, "LINGER_SECONDS", 600)   # only the byte bounds can end it
    h = harness(answer_at_once, max_body=1024, tcp=True)
    h.client.sendall(b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % declared)
    h.run_until(lambda: h.conn.lingering_since is not None)
    sent = flood_while_running(h, declared, passes=4000)
    if declared == dropped:
        assert sent == declared and not h.conn.closed   # all of it taken, still lingering
        h.client.shutdown(socket.SHUT_WR)
        h.run_until(lambda: h.conn.closed)
        assert statuses(h.read_to_eof()) == [413]
    else:
        assert h.conn.closed   # cut off past the bound, as a client sending forever is


def tls_client_of(h, cert):
    """A TLS client (memory buffers) over h.client, its handshake with h.conn done."""
    context = ssl.create_default_context(cafile=str(cert))
    client = TlsConnection(context, server_side=False, server_hostname="localhost")
    end = time.monotonic() + 5
    while not client.handshake_done:
        assert time.monotonic() < end, "timed out"
        h.client.sendall(client.pending_output())
        h.step()
        if select.select([h.client], [], [], 0)[0]:
            client.receive(h.client.recv(65536))
    h.client.sendall(client.pending_output())   # its Finished
    return client


def test_a_body_refused_for_its_declared_length_over_tls_is_dropped_to_its_records_end(harness, monkeypatch,
                                                                                        tmp_path):
    # Lingering drops TLS records undecrypted: each adds its header and tag to the body it
    # carries, so a budget of the declared length cut a client off before its body's end,
    # and it read a reset, not the 413 (over HTTPS at 200 MiB, against 256 MiB allowed).
    monkeypatch.setattr(connection, "LINGER_BYTES", 256 << 10)
    monkeypatch.setattr(connection, "LINGER_SECONDS", 600)   # only the byte bounds can end it
    # Dropped a KiB a read, as the records' own bytes (~1.4 KiB for 1 MiB) outrun one read:
    # a 64 KiB read took them in with its last one, up to ~48 MiB of body.
    monkeypatch.setattr(connection, "_DROPPED", bytearray(1024))
    cert, key = write_self_signed(tmp_path)
    h = harness(answer_at_once, max_body=1024, tcp=True, tls=TlsConnection(server_context(cert, key)))
    client = tls_client_of(h, cert)
    declared = 1 << 20
    client.send(b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % declared)
    h.client.sendall(client.pending_output())
    h.run_until(lambda: h.conn.lingering_since is not None)
    client.send(b" " * declared)
    records = client.pending_output()
    assert len(records) > declared
    h.client.setblocking(False)
    rest = memoryview(records)[:-100]    # all but the end of the last record
    for _ in range(20000):
        try:
            rest = rest[h.client.send(rest):]
        except BlockingIOError:
            pass
        h.step()
        if h.conn.closed or not rest and not select.select([h.conn.sock], [], [], 0)[0]:
            break   # cut off, or all of it written and dropped
    assert not rest and not h.conn.closed     # still lingering: the client is mid-body
    h.client.setblocking(True)
    h.client.sendall(records[-100:])     # the rest is written, no reset
    h.client.shutdown(socket.SHUT_WR)
    h.run_until(lambda: h.conn.closed)
    assert statuses(client.receive(h.read_to_eof())) == [413]


def test_a_413_lingers_too(harness):
    h = harness(answer_at_once, max_body=1024, tcp=True)
    h.client.sendall(post(b"x" * 2048))
    h.run_until(lambda: h.conn.lingering_since is not None)
    assert statuses(h.read_to_eof()) == [413]
    assert h.unreadable == ["HTTP 413 request body too large: over 1024 bytes, the most GS_MCP_MAX_BODY allows"]
    h.client.close()
    h.run_until(lambda: h.conn.closed)


def test_a_close_with_nothing_unread_does_not_linger(harness):
    h = harness(answer_at_once)
    h.client.sendall(post(b"last", b"Connection: close\r\n"))
    h.run_until(lambda: h.conn.closed)
    assert bodies_of(h.read_to_eof()) == [b"last"] and h.conn.lingering_since is None


def test_a_refusal_to_a_client_that_already_half_closed_does_not_linger(harness):
    def refuse_later(h, conn, head):
        h.loop.call_later(0.1, lambda: refuse_head(h, conn, head))
    h = harness(answer_at_once, handle_head=refuse_later, max_body=16_000_000)
    h.client.sendall(BIG_HEAD)
    h.client.shutdown(socket.SHUT_WR)   # it sends no more: a close resets nothing
    h.run_until(lambda: h.conn.closed)
    assert statuses(h.read_to_eof()) == [401] and h.conn.lingering_since is None


def test_an_idle_connection_drained_for_shutdown_closes_at_once(harness):
    h = harness(answer_at_once)
    h.client.sendall(post(b"a"))
    h.run_until(lambda: select.select([h.client], [], [], 0)[0])
    assert bodies_of(h.client.recv(65536)) == [b"a"]
    assert h.conn.eviction_order()[0] == 1   # idle: evictable after any lingering one
    h.conn.drain_and_close()
    assert h.conn.closed and h.conn.lingering_since is None


@pytest.mark.parametrize("pieces", [[b"\r\n"], [b"\r", b"\n"], [b"\r\n\r", b"\n"]])
def test_empty_lines_between_requests_do_not_extend_the_idle_wait(harness, pieces):
    # RFC 9112 2.2 has a server ignore empty lines before a request, and it did, but each
    # one re-armed the keep-alive wait: a client sending "\r\n" now and then held its
    # connection for 300 s more each time, and looked freshest when one is closed for room.
    # Split between reads too: a lone CR is the start of a request (read timeout), and the
    # LF after it armed the wait afresh (found by fuzzing the router).
    h = harness(answer_at_once)
    h.client.sendall(post(b"a"))
    h.run_until(lambda: select.select([h.client], [], [], 0)[0])
    assert bodies_of(h.client.recv(65536)) == [b"a"]
    since = h.conn.idle_since()
    assert since is not None
    time.sleep(0.02)
    for piece in pieces:
        h.client.sendall(piece)
        h.run_until(lambda: not h.conn.has_unread_input())
        h.step()
    assert h.conn.idle_since() == since
    h.client.sendall(post(b"b"))   # and the next request is served as ever
    h.run_until(lambda: select.select([h.client], [], [], 0)[0])
    assert bodies_of(h.client.recv(65536)) == [b"b"]
    assert h.conn.idle_since() > since   # a reply starts a new wait


def test_a_silent_tls_connection_is_idle_and_one_that_began_its_handshake_is_reading(harness, tmp_path):
    # A TLS connection that sent nothing must be closable for room like a plain one, or
    # silent connections lock everyone out at GS_MCP_MAX_CONNECTIONS for the read timeout.
    h = harness(answer_at_once, tls=TlsConnection(server_context(*write_self_signed(tmp_path))))
    assert h.conn.eviction_order()[0] == 1
    h.client.sendall(b"\x16\x03\x01")   # the start of a ClientHello record
    # Unauthenticated and unfinished, as a plain head half read: closable, after idle ones.
    h.run_until(lambda: h.conn.eviction_order()[0] == 2)
    assert not h.conn.closed


@pytest.mark.parametrize("first, rest", [
    (b"P", b"OST /mcp HTTP/1.1\r\nHost: x\r\n"),                                # head unfinished
    (b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 9\r\n\r\n", b"{}"),   # a short body due
])
def test_a_request_no_gate_has_passed_ranks_after_idle_from_when_it_began_however_it_trickles(
        harness, first, rest):
    # Trickled by a client holding a connection it paid no credential for, it must be
    # closable for room at GS_MCP_MAX_CONNECTIONS, and look no fresher for each byte.
    h = harness(answer_at_once)
    h.client.sendall(first)
    h.run_until(lambda: h.conn.eviction_order() is not None and h.conn.eviction_order()[0] == 2)
    rank, since = h.conn.eviction_order()
    assert since == h.conn.ungated_since() and h.conn.idle_since() is None
    h.loop.now += 1
    h.client.sendall(rest)
    h.run_until(lambda: not h.conn.has_unread_input())   # a socketpair: sent is arrived
    assert h.conn.eviction_order() == (2, since)


@pytest.mark.parametrize("state", ["gated body", "answering", "streaming"])
def test_a_request_its_gates_let_in_or_being_answered_is_never_closed_for_room(harness, state):
    def handle(h, conn, request):
        if state == "streaming":
            conn.start_stream(200, [("Content-Type", "text/event-stream")])
    h = harness(handle)
    if state == "gated body":   # chunked: its head is gated before the body is read
        h.client.sendall(b"POST /mcp HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab")
        h.run_until(lambda: h.heads and not h.conn.has_unread_input())
        assert h.conn.parser.in_progress and not h.conn.busy
    else:
        h.client.sendall(post(b"{}"))
        h.run_until(lambda: h.conn.busy)
        h.client.sendall(b"POST /mcp HTTP/1.1\r\nHo")   # the next one pipelined, unfinished
        h.run_until(lambda: h.conn.parser.in_progress)
    assert h.conn.eviction_order() is None and h.conn.ungated_since() is None


def test_a_tls_record_that_brings_no_request_bytes_leaves_a_request_half_read_under_its_read_timeout(
        harness, tmp_path):
    # Part of a record (or one with no application data) decrypted to nothing, and the
    # connection was armed idle (300 s) though a request's head was half read: a client
    # trickling records held it past the read timeout, as plain slowloris cannot.
    cert, key = write_self_signed(tmp_path)
    h = harness(answer_at_once, tls=TlsConnection(server_context(cert, key)))
    client = tls_client_of(h, cert)
    client.send(b"POST /mcp HTTP/1.1\r\nHo")
    h.client.sendall(client.pending_output())
    h.run_until(lambda: h.conn.parser.in_progress)
    assert h.conn._deadline_kind == "read"
    client.send(b"st: x\r\n")
    h.client.sendall(client.pending_output()[:5])   # a record's header, its payload still to come
    for _ in range(20):
        h.step()
    assert h.conn._deadline_kind == "read" and not h.conn.closed


@pytest.mark.parametrize("cut_at", [1, 5, 20])
def test_a_request_s_first_tls_record_cut_is_a_request_begun_not_idleness(harness, tmp_path, cut_at):
    # A record's start decrypts to nothing, and with nothing of a request parsed yet the
    # connection was armed idle: a cut first record held it the 300 s keep-alive wait, not
    # the read timeout a plain head's first byte starts (found by fuzzing the router).
    cert, key = write_self_signed(tmp_path)
    h = harness(answer_at_once, tls=TlsConnection(server_context(cert, key)))
    client = tls_client_of(h, cert)
    h.run_until(lambda: not h.conn.has_unread_input())   # its Finished: idle
    h.step()
    assert h.conn.eviction_order()[0] == 1
    client.send(post(b"a"))
    record = client.pending_output()
    h.client.sendall(record[:cut_at])
    h.run_until(lambda: h.conn._deadline_kind == "read")
    assert h.conn.eviction_order()[0] == 2 and h.conn.ungated_since() is not None
    h.client.sendall(record[cut_at:])   # the rest comes: the request is served as ever
    reply = b""
    while not bodies_of(reply):   # after the session tickets
        h.run_until(lambda: select.select([h.client], [], [], 0)[0])
        reply += client.receive(h.client.recv(65536))
    assert bodies_of(reply) == [b"a"] and h.conn.eviction_order()[0] == 1


@pytest.mark.parametrize("answer", ["at once", "later"])
def test_the_next_requests_tls_record_cut_behind_a_reply_is_a_request_begun_not_idleness(
        harness, tmp_path, answer):
    # Cut behind a request (pipelined, or sent while it was answered), the next request's
    # first record decrypts to nothing and the reply's end armed the 300 s keep-alive
    # wait: the read timeout a plain head's first byte starts there never ran.
    cert, key = write_self_signed(tmp_path)
    h = harness(answer_at_once if answer == "at once" else answer_later(),
                tls=TlsConnection(server_context(cert, key)))
    client = tls_client_of(h, cert)
    client.send(post(b"a"))
    first = client.pending_output()
    client.send(post(b"b"))
    second = client.pending_output()
    h.client.sendall(first + second[:20])
    reply = b""
    while not bodies_of(reply):   # after the session tickets
        h.run_until(lambda: select.select([h.client], [], [], 0)[0])
        reply += client.receive(h.client.recv(65536))
    h.run_until(lambda: not h.conn.busy)
    assert bodies_of(reply) == [b"a"]
    assert h.conn._deadline_kind == "read" and h.conn.idle_since() is None
    assert h.conn.eviction_order()[0] == 2
    h.client.sendall(second[20:])   # the rest comes: the request is served as ever
    reply = b""
    while not bodies_of(reply):
        h.run_until(lambda: select.select([h.client], [], [], 0)[0])
        reply += client.receive(h.client.recv(65536))
    assert bodies_of(reply) == [b"b"] and h.conn.eviction_order()[0] == 1


def test_a_head_that_passes_is_traced_whole_not_as_a_head(harness):
    h = harness(answer_at_once, max_body=16_000_000)
    h.client.sendall(post(b"x" * 100_000))
    h.client.shutdown(socket.SHUT_WR)
    assert bodies_of(h.read_until_closed()) == [b"x" * 100_000]
    assert len(h.heads) == 1 and h.traced_heads == []


def test_a_body_sent_while_a_refusal_waits_to_be_read_is_not_buffered(harness):
    # The client reads nothing: the 401 waits in the output, and what it sends meanwhile
    # is dropped, not kept in the parser (up to GS_MCP_MAX_BODY) until the stall check.
    h = harness(answer_at_once, handle_head=lambda h, conn, head: conn.respond(401, [], b"x" * 4_000_000),
                max_body=16_000_000, tcp=True)
    h.client.sendall(b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 16000000\r\n\r\n")
    h.run_until(lambda: h.heads and h.conn.out)
    h.client.setblocking(False)
    sent = 0
    for _ in range(200):
        try:
            sent += h.client.send(b"b" * 65536)
        except BlockingIOError:
            pass
        h.step()
    assert sent > 0 and not h.conn.closed and h.conn.parser.buffered == 0


def test_a_head_that_passes_has_its_body_read_and_the_whole_request_handled(harness):
    def pass_later(h, conn, head):   # as the auth gate does after refetching keys
        h.loop.call_later(0.02, conn.read_body)
    h = harness(answer_at_once, handle_head=pass_later)
    h.client.sendall(post(b"", b"Expect: 100-continue\r\n").replace(b"Length: 0", b"Length: 5"))
    h.run_until(lambda: h.heads and not h.conn.busy)
    assert h.client.recv(100) == b"HTTP/1.1 100 Continue\r\n\r\n"
    h.client.sendall(b"hello" + post(b"next"))
    h.client.shutdown(socket.SHUT_WR)
    assert bodies_of(h.read_until_closed()) == [b"hello", b"next"]
    assert len(h.heads) == 1   # the second came whole: never gated by its head


def test_a_request_read_with_its_body_is_never_gated_by_its_head(harness):
    h = harness(answer_at_once, handle_head=refuse_head)
    h.client.sendall(post(b"small"))
    h.client.shutdown(socket.SHUT_WR)
    assert bodies_of(h.read_until_closed()) == [b"small"] and h.heads == []


def test_a_small_body_written_after_its_head_is_read_before_any_gate(harness):
    # httpx writes head and body apart; a body of at most SMALL_BODY is read first, so the
    # request is gated once, whole.
    h = harness(answer_at_once, handle_head=refuse_head)
    request = post(b"x" * 100)
    split = request.index(b"\r\n\r\n") + 4
    h.client.sendall(request[:split])
    h.run_until(lambda: h.conn.parser.in_progress)
    h.client.sendall(request[split:])
    h.client.shutdown(socket.SHUT_WR)
    assert bodies_of(h.read_until_closed()) == [b"x" * 100] and h.heads == []


def test_a_head_passed_late_gives_its_body_a_whole_read_window(harness):
    # Time spent in the gates (a key refetch) is not the client's: the body's read
    # deadline starts when the head passes, even when one was armed before.
    def pass_after_a_while(h, conn, head):
        conn._set_deadline("read", -100)     # as if armed long ago, while the head arrived
        h.passed_at = h.loop.now
        conn.read_body()
    h = harness(answer_at_once, handle_head=pass_after_a_while)
    h.client.sendall(post(b"", b"Expect: 100-continue\r\n").replace(b"Length: 0", b"Length: 5"))
    h.run_until(lambda: h.heads and not h.conn.busy)
    assert h.conn._deadline_kind == "read"
    assert h.conn._deadline == h.passed_at + h.conn.read_timeout


@pytest.mark.filterwarnings("ignore:ssl.TLSVersion.TLSv1_1 is deprecated:DeprecationWarning")
def test_a_refused_tls_handshake_sends_its_alert_before_the_close(harness, tmp_path):
    # The alert OpenSSL queued was dropped with the connection: a TLS 1.1 client read a bare
    # EOF ("unexpected eof") instead of why it was refused.
    cert, key = write_self_signed(tmp_path)
    h = harness(answer_at_once, tls=TlsConnection(server_context(cert, key)))
    old = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    old.load_verify_locations(str(cert))
    old.minimum_version, old.maximum_version = ssl.TLSVersion.MINIMUM_SUPPORTED, ssl.TLSVersion.TLSv1_1
    old.set_ciphers("ALL:@SECLEVEL=0")
    client = TlsConnection(old, server_side=False, server_hostname="localhost")
    h.client.sendall(client.pending_output())
    with pytest.raises(TlsError, match="ALERT_PROTOCOL_VERSION"):
        client.receive(h.read_until_closed())
    assert h.conn.closed


def test_plain_http_to_a_tls_port_with_its_body_still_coming_lingers_so_its_400_is_read(harness, tmp_path):
    # Closed at once with the body unread, the client's write met a reset, not the 400.
    h = harness(answer_at_once, tcp=True, tls=TlsConnection(server_context(*write_self_signed(tmp_path))))
    h.client.sendall(b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n{")
    h.run_until(lambda: h.conn.lingering_since is not None)
    h.client.sendall(b" " * 99_999)   # the rest of its body, dropped, not reset
    assert h.read_until_closed() == PLAINTEXT_HTTP_RESPONSE


def test_a_tls_reply_that_ends_its_connection_ends_with_a_close_notify(harness, tmp_path):
    # Closed with no close_notify, a reply ended by the close (HTTP/1.0, Connection: close)
    # could not be told from one cut short: strict clients read "unexpected eof".
    cert, key = write_self_signed(tmp_path)
    h = harness(answer_at_once, tls=TlsConnection(server_context(cert, key)))
    client = tls_client_of(h, cert)
    client.send(post(b"{}", b"Connection: close\r\n"))
    h.client.sendall(client.pending_output())
    assert bodies_of(client.receive(h.read_until_closed())) == [b"{}"]
    assert client.peer_closed


def test_a_tls_client_s_close_notify_is_its_eof_its_request_answered_then_closed(harness, tmp_path):
    # Its close_notify was taken for nothing: the connection sat idle (300 s) while a
    # client ending its side cleanly waited for ours.
    cert, key = write_self_signed(tmp_path)
    h = harness(answer_at_once, tls=TlsConnection(server_context(cert, key)))
    client = tls_client_of(h, cert)
    client.send(post(b"{}"))
    client.close()   # its close_notify, right behind its request
    h.client.sendall(client.pending_output())
    assert bodies_of(client.receive(h.read_until_closed())) == [b"{}"]
    assert client.peer_closed


def test_a_step_taken_later_that_raises_gets_500_and_the_connection_closes(harness):
    # A request goes on from a callback when it waited (a JWKS fetch): out of the
    # handler's guard, a bug there left its client unanswered.
    def handle(h, conn, request):
        def step():
            raise RuntimeError("bug after the wait")
        h.loop.call_later(0.01, lambda: conn.go_on(request, step))
    h = harness(handle)
    h.client.sendall(post(b"x"))
    raw = h.read_until_closed()
    assert statuses(raw) == [500] and h.closed == [h.conn]


def test_requests_that_waited_on_a_jwks_fetch_are_answered_though_one_s_handling_raises(
        harness, tmp_path, monkeypatch, caplog):
    # The key source answers its waiters in turn, from one loop callback: the first
    # request's bug ended that callback, its client got nothing and the next waiter was
    # never called (its client waited on for ever too).
    from gsmcpd.auth import tokens
    from gsmcpd.config import Config
    from gsmcpd.router.main import Router
    router = Router(Config(auth=True, issuer="https://idp.test", audience="https://mcp.example/mcp",
                           jwks_file=tmp_path / "jwks.json"))
    gate, waiters = router.auth, []
    monkeypatch.setattr(gate.keys, "refresh", lambda on_done, **_: waiters.append(on_done))
    outcomes = iter([tokens.NeedRefresh("k2"), tokens.NeedRefresh("k2")])
    accepted = tokens.Accepted(tokens.Principal("ann", frozenset(), False, time.time() + 600, {}))
    monkeypatch.setattr(tokens, "authenticate", lambda *a, **kw: next(outcomes, accepted))

    def buggy(conn, request, principal):
        raise RuntimeError("handling bug")
    first = harness(lambda h, conn, request: gate.check(conn, request, buggy))
    second = harness(lambda h, conn, request: gate.check(
        conn, request, lambda conn, request, principal: conn.respond(200, [], principal.user.encode())))
    for h in (first, second):
        h.client.sendall(post(b"x"))
        h.run_until(lambda: len(waiters) == (1 if h is first else 2))
    with caplog.at_level(logging.ERROR, logger="gsmcpd.http"):
        # As KeySource._answer calls them, in one callback of the loop (which logs what it raises).
        first.loop._guard(lambda: [on_done(None) for on_done in waiters])
    assert statuses(first.read_until_closed()) == [500]
    assert "handling bug" in caplog.text
    second.client.shutdown(socket.SHUT_WR)
    raw = second.read_until_closed()
    assert statuses(raw) == [200] and raw.endswith(b"ann")


def test_opens_that_waited_for_a_worker_are_answered_though_one_s_start_raises(harness, monkeypatch, caplog):
    # A new session that waited for a worker goes on from the pool's callback as one
    # arrives (WorkerPool._serve_claims): out of the handler's guard, a bug in its start
    # left its client unanswered, its user counted, and the opens waiting behind it unserved.
    from collections import deque
    from gsmcpd.config import Config
    from gsmcpd.router.app import Principal
    from gsmcpd.router.main import Router
    from gsmcpd.router.workers import Claim, WorkerPool
    from test_router_sessions_poll import FakeWorker
    router = Router(Config())
    try:
        pool = SimpleNamespace(claims=deque(), spares=[], loop=router.loop, replenish=lambda: None)
        router.pool = SimpleNamespace(claim=lambda start, fail: pool.claims.append(Claim(start, fail)))

        def readmit(conn, message, principal):
            if principal.user == "ann":
                raise RuntimeError("bug in readmit")
            return principal
        monkeypatch.setattr(router, "readmit", readmit)
        init = b'{"jsonrpc":"2.0","id":0,"method":"initialize"}'

        def opens_for(user):
            return lambda h, conn, request: router.sessions.open(
                conn, request, json.loads(init), init, False, Principal(user, False))
        first, second = harness(opens_for("ann")), harness(opens_for("ben"))
        for h in (first, second):
            h.client.sendall(post(init))
            h.run_until(lambda: len(pool.claims) == (1 if h is first else 2))
        anns, bens = FakeWorker(1), FakeWorker(2)
        pool.spares += [anns, bens]
        with caplog.at_level(logging.ERROR, logger="gsmcpd.http"):
            # As the spawner's callback serves them, in one callback of the loop (which logs what it raises).
            first.loop._guard(lambda: WorkerPool._serve_claims(pool))
        assert statuses(first.read_until_closed()) == [500]
        assert "bug in readmit" in caplog.text
        [session] = router.sessions.by_id.values()
        assert session.user == "ben" and session.worker is bens
        assert router.sessions.opening == 0 and router.sessions.sessions_of("ann") == 0
        assert not anns.alive   # claimed, and no session took it
    finally:
        router.close()


def test_an_open_refused_after_its_wait_forgets_its_user_once_though_giving_back_its_worker_raises(
        harness, monkeypatch, caplog):
    # readmit refused the open (answered), its user forgotten, its worker given back to the
    # pool; were give_back to raise (a pool bug), start forgot the user a second time (the
    # per-user limit then let one session too many in) and killed a worker the pool may hold.
    from collections import deque
    from gsmcpd.config import Config
    from gsmcpd.router.app import Principal
    from gsmcpd.router.main import Router
    from gsmcpd.router.workers import Claim, WorkerPool
    from test_router_sessions_poll import FakeWorker
    router = Router(Config())
    try:
        pool = SimpleNamespace(claims=deque(), spares=[], loop=router.loop, replenish=lambda: None)

        def give_back(worker):
            raise RuntimeError("bug in give_back")
        router.pool = SimpleNamespace(claim=lambda start, fail: pool.claims.append(Claim(start, fail)),
                                      give_back=give_back)

        def readmit(conn, message, principal):
            conn.respond(403, [], b"refused")
            return None
        monkeypatch.setattr(router, "readmit", readmit)
        router.sessions._per_user["ann"] += 1   # a session ann has open already
        init = b'{"jsonrpc":"2.0","id":0,"method":"initialize"}'
        h = harness(lambda h, conn, request: router.sessions.open(
            conn, request, json.loads(init), init, False, Principal("ann", False)))
        h.client.sendall(post(init))
        h.run_until(lambda: len(pool.claims) == 1)
        assert router.sessions.sessions_of("ann") == 2
        worker = FakeWorker(1)
        pool.spares.append(worker)
        with caplog.at_level(logging.ERROR, logger="gsmcpd.http"):
            h.loop._guard(lambda: WorkerPool._serve_claims(pool))
        assert statuses(h.read_until_closed()) == [403]
        assert "bug in give_back" in caplog.text
        assert router.sessions.opening == 0 and router.sessions.sessions_of("ann") == 1
        assert worker.alive   # handed to the pool: not this open's to kill
    finally:
        router.close()


def test_opens_whose_worker_cannot_be_had_are_answered_though_one_s_refusal_raises(harness, monkeypatch, caplog):
    # The pool refuses the claims waiting in turn, from one callback (as the server stops; a
    # spawner error or a timer, later): a bug in one refusal left its client unanswered, and the next too.
    from gsmcpd.config import Config
    from gsmcpd.router import sessions
    from gsmcpd.router.app import Principal
    from gsmcpd.router.main import Router
    router = Router(Config())
    try:
        fails = []
        router.pool = SimpleNamespace(claim=lambda start, fail: fails.append(fail))
        error = sessions.jsonrpc.error

        def buggy_error(request_id, *args):
            if request_id == 1:
                raise RuntimeError("bug in the refusal")
            return error(request_id, *args)
        monkeypatch.setattr(sessions.jsonrpc, "error", buggy_error)

        def opens(request_id):
            init = b'{"jsonrpc":"2.0","id":%d,"method":"initialize"}' % request_id
            return lambda h, conn, request: router.sessions.open(
                conn, request, json.loads(init), init, False, Principal("ann", False))
        first, second = harness(opens(1)), harness(opens(2))
        for h in (first, second):
            h.client.sendall(post(b"x"))
            h.run_until(lambda: len(fails) == (1 if h is first else 2))
        with caplog.at_level(logging.ERROR, logger="gsmcpd.http"):
            first.loop._guard(lambda: [fail("no worker") for fail in fails])
        assert statuses(first.read_until_closed()) == [500]
        assert "bug in the refusal" in caplog.text
        second.client.shutdown(socket.SHUT_WR)
        raw = second.read_until_closed()
        assert statuses(raw) == [503] and b"cannot start a worker process (no worker)" in raw
        assert router.sessions.opening == 0 and router.sessions.sessions_of("ann") == 0
    finally:
        router.close()
