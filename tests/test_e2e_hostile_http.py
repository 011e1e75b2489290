"""End-to-end: a hostile or sloppy HTTP client against the real router, over real sockets.

Each class of malformed input gets its specific 4xx and the connection closed; the
router keeps serving a good request on a new connection; and neither the bearer token
nor the Authorization header reaches the daemon's log, even with tracing on. A head
trickled byte by byte is dropped at the read timeout, a body one byte over 16 MiB is a
413, a body in chunks too small for their framing is a 400, and bytes that bring no request do not keep a connection from being closed for room.
Requests begun and held, unauthenticated, cannot lock an authenticated client out at
the connection cap.
"""

import json
import select
import socket

import pytest

from helpers import Daemon, body_of, closed_by_peer, raw_exchange, recv_all, status_of, wait_until
from test_e2e_auth import INIT, AuthClient, start_auth_daemon


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    server, daemon = start_auth_daemon(tmp_path_factory.mktemp("hostile"), GS_MCP_TRACE="both",
                                       GS_MCP_LOG_LEVEL="debug", GS_MCP_READ_TIMEOUT="0.5")
    yield server, daemon
    daemon.stop()
    server.close()


@pytest.fixture(scope="module")
def token(env):
    return env[0].idp.mint()


def head(*lines, version=b"HTTP/1.1", eol=b"\r\n"):
    return eol.join((b"POST /mcp " + version,) + lines) + eol + eol


def chunked(token, body, *lines):
    return head(b"Host: localhost", b"Authorization: Bearer " + token.encode(),
                b"Transfer-Encoding: chunked", *lines) + body


def malformed(token):
    """(class, request bytes, status, message): each carries the token, as a client's would."""
    auth = b"Authorization: Bearer " + token.encode()
    return [
        ("bare LF in chunk size", chunked(token, b"2\n{}\r\n0\r\n\r\n"), 400, "chunk size line not ended by CRLF"),
        ("bare LF after chunk data", chunked(token, b"2\r\n{}\n0\r\n\r\n"), 400, "chunk data not followed by CRLF"),
        ("bare LF ending trailers", chunked(token, b"2\r\n{}\r\n0\r\n\n"), 400, "trailer line not ended by CRLF"),
        ("bad chunk size", chunked(token, b"-2\r\n{}\r\n0\r\n\r\n"), 400, "invalid chunk size"),
        ("bad chunk extension", chunked(token, b"2;a=b c\r\n{}\r\n0\r\n\r\n"), 400, "malformed chunk extension"),
        ("trailer without colon", chunked(token, b"2\r\n{}\r\n0\r\nbogus\r\n\r\n"), 400, "header line without a colon"),
        ("obs-fold", head(b"Host: localhost", auth, b"X-Long: one", b"\ttwo", b"Content-Length: 2") + b"{}",
         400, "obsolete line folding in header"),
        ("obs-fold of the token", head(b"Host: localhost", b"Authorization: Bearer", b" " + token.encode(),
                                       b"Content-Length: 2") + b"{}", 400, "obsolete line folding in header"),
        ("two Content-Lengths", head(b"Host: localhost", auth, b"Content-Length: 2", b"Content-Length: 3") + b"{}",
         400, "conflicting Content-Length values"),
        ("Content-Length and chunked", chunked(token, b"0\r\n\r\n", b"Content-Length: 5"),
         400, "both Content-Length and Transfer-Encoding"),
        ("NUL in a header name", head(b"Host: localhost", auth, b"X\x00Y: 1"), 400, "invalid header name"),
        ("NUL in a header value", head(b"Host: localhost", auth, b"X: a\x00b"), 400, "control character in header value"),
        ("NUL in the token", head(b"Host: localhost", auth + b"\x00", b"Content-Length: 2") + b"{}",
         400, "control character in header value"),
        ("bare CR in a value", head(b"Host: localhost", auth, b"X: a\rb"), 400, "control character in header value"),
        ("non-ASCII header name", head(b"Host: localhost", auth, b"X-\xc3\xa9: 1"), 400, "invalid header name"),
        ("missing Host", head(auth, b"Content-Length: 2") + b"{}", 400, "missing Host header"),
        ("two Authorization headers", head(b"Host: localhost", auth, auth, b"Content-Length: 2") + b"{}",
         400, "more than one Authorization header"),
        ("gzip coding", chunked(token, b"0\r\n\r\n", b"Transfer-Encoding: gzip"), 400,
         "Transfer-Encoding chunked must be the last coding"),
        ("HTTP/2 request line", head(b"Host: localhost", auth, version=b"HTTP/2.0"), 505, "HTTP version HTTP/2.0 not supported"),
        ("HTTP/1 request line", head(b"Host: localhost", auth, version=b"HTTP/1"), 400, "malformed HTTP version"),
        ("many headers past the head limit", head(b"Host: localhost", auth, *[b"X-%d: v" % i for i in range(9000)]),
         431, "request head too large"),
    ]


def refusal_of(raw):
    reply = json.loads(body_of(raw))
    assert reply["id"] is None and reply["error"]["code"] == -32600, reply
    return reply["error"]["message"]


def test_each_class_of_malformed_input_gets_its_4xx_and_the_router_serves_on(env, token):
    daemon = env[1]
    for name, data, status, message in malformed(token):
        raw = raw_exchange(daemon.port, data)
        assert (status_of(raw), refusal_of(raw)) == (status, "%d %s" % (status, message)), (name, raw[:300])
        assert b"\r\nconnection: close\r\n" in raw.lower(), name
        good = AuthClient(daemon.port, token)
        try:
            assert good.post(INIT).status == 200, name   # a new connection is served
        finally:
            good.close()


def test_neither_the_token_nor_the_authorization_header_reaches_the_log(env, token):
    daemon = env[1]
    for _, data, _, _ in malformed(token):
        raw_exchange(daemon.port, data)
    client = AuthClient(daemon.port, token)
    client.initialize()
    assert client.call("ping").status == 200
    client.close()
    # refused tokens are no more logged than accepted ones
    forged = token.rsplit(".", 1)[0] + ".c2lnbmF0dXJlLXNlY3JldA"
    for refused in ("not-a-jwt-s3cr3t", forged, "s3cr3t " * 3):
        assert AuthClient(daemon.port, refused).post(INIT).status in (400, 401)   # malformed: 400, RFC 6750
    log = daemon.log_text()
    assert "s3cr3t" not in log and "c2lnbmF0dXJlLXNlY3JldA" not in log
    assert "--> POST" in log   # tracing was on: the requests were logged, their heads read
    assert token not in log and token.split(".")[1] not in log and token.split(".")[2] not in log
    assert "authorization:" not in log.lower() and "bearer " + token[:8].lower() not in log.lower()


def test_a_long_path_is_traced_cut_however_long_the_head(env):
    # The trace limit caps bodies only: a 60 KB path made a 60 KB trace line, per request.
    daemon = env[1]
    raw = raw_exchange(daemon.port, b"GET /" + b"q" * 60_000 + b" HTTP/1.1\r\nHost: localhost\r\n"
                                    b"Connection: close\r\n\r\n")
    assert status_of(raw) == 404
    assert wait_until(lambda: "--> GET /%s... session -" % ("q" * 255) in daemon.log_text())
    assert "q" * 1000 not in daemon.log_text()


def test_a_head_trickled_a_byte_at_a_time_is_dropped_at_the_read_timeout(env, token):
    # slowloris: bytes keep coming, but the read deadline runs from the request's first
    # byte, not the last one (here 0.5 s); this client would take 30 s for its head
    daemon = env[1]
    data = head(b"Host: localhost", b"Authorization: Bearer " + token.encode(), b"X-Pad: " + b"a" * 600)
    with socket.create_connection(("127.0.0.1", daemon.port), timeout=10) as slow:
        good = AuthClient(daemon.port, token)
        sent = 0
        try:
            for sent in range(len(data)):
                slow.sendall(data[sent:sent + 1])
                if sent == 5:
                    assert good.post(INIT).status == 200   # served while the slow one trickles
                readable, _, _ = select.select([slow], [], [], 0.05)
                if readable:
                    break
            closed = slow.recv(100)
        except (ConnectionResetError, BrokenPipeError):
            closed = b""
        finally:
            good.close()
    assert closed == b"" and sent < len(data) - 1, (closed, sent)


def test_a_body_one_byte_over_16_mib_is_413_whether_announced_or_chunked(env, token):
    daemon = env[1]
    auth = b"Authorization: Bearer " + token.encode()
    over = 16 * 1024 * 1024 + 1
    announced = head(b"Host: localhost", auth, b"Content-Type: application/json", b"Content-Length: %d" % over)
    piece = b"x" * (1024 * 1024)
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(piece), piece) for _ in range(16)) + b"1\r\nx\r\n0\r\n\r\n"
    for data in (announced + b"x" * over, chunked(token, chunks, b"Content-Type: application/json")):
        with socket.create_connection(("127.0.0.1", daemon.port), timeout=30) as sock:
            try:
                sock.sendall(data)
            except (ConnectionResetError, BrokenPipeError):
                pass   # refused from its head, or at the cap: the reply is read below
            raw = recv_all(sock)
        assert status_of(raw) == 413, raw[:300]
        assert refusal_of(raw).startswith("413 request body too large: over 16777216 bytes"), raw[:300]
        good = AuthClient(daemon.port, token)
        try:
            assert good.post(INIT).status == 200
        finally:
            good.close()


def test_a_body_in_tiny_chunks_is_refused_past_its_framing_allowance_and_fine_chunks_are_served(env, token):
    # Every chunk costs the one router loop the same work whatever its size: 1 MiB as 1-byte
    # chunks (6 MiB on the wire) is refused once its framing outweighs its data, and the
    # router serves on; a body whose chunks pay for their framing is served whole.
    daemon = env[1]
    other = AuthClient(daemon.port, token)
    other.initialize()
    tiny = chunked(token, b"1\r\nx\r\n" * (1 << 20) + b"0\r\n\r\n", b"Content-Type: application/json")
    with socket.create_connection(("127.0.0.1", daemon.port), timeout=30) as sock:
        try:
            sock.sendall(tiny)
            sock.shutdown(socket.SHUT_WR)
        except (ConnectionResetError, BrokenPipeError):
            pass   # cut off while lingering: the reply is read below
        raw = recv_all(sock)
    assert status_of(raw) == 400, raw[:300]
    assert refusal_of(raw) == ("400 chunks too small: their framing (size lines, extensions, CRLFs) may be "
                               "at most 1/4 of the data, beyond 8192 bytes; send larger chunks"), raw[:300]
    assert other.call("ping").status == 200
    other.close()
    # initialize padded to 48 KiB in 24-byte chunks: 12 KiB of framing, paid for by the data
    message = json.dumps(INIT).encode().ljust(48 * 1024)
    fine = b"".join(b"%x\r\n%s\r\n" % (len(message[i:i + 24]), message[i:i + 24]) for i in range(0, len(message), 24))
    raw = raw_exchange(daemon.port, chunked(token, fine + b"0\r\n\r\n", b"Content-Type: application/json",
                                            b"Accept: application/json, text/event-stream"))
    assert status_of(raw) == 200, raw[:300]
    assert b"\r\nmcp-session-id: " in raw.lower() and json.loads(body_of(raw))["id"] == INIT["id"], raw[:300]


@pytest.mark.parametrize("pieces", [[b"\r\n"], [b"\r", b"\n"]])
def test_empty_lines_do_not_make_an_idle_connection_look_fresh_at_the_connection_cap(tmp_path, pieces):
    # At GS_MCP_MAX_CONNECTIONS the connection idle longest is closed for a new one. Empty
    # lines before a request are ignored (RFC 9112 2.2), and must not reset that clock:
    # a client sending "\r\n" now and then kept its connection and cost another its own.
    # Nor when the CR and LF come apart (the CR read as a request begun, for a while).
    with Daemon(tmp_path, env={"GS_MCP_MAX_CONNECTIONS": "2", "GS_MCP_SPARE_WORKERS": "1"}) as d:
        assert status_of(raw_exchange(d.port, b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")) == 404
        with socket.create_connection(("127.0.0.1", d.port), timeout=10) as stale, \
                socket.create_connection(("127.0.0.1", d.port), timeout=10) as fresh:
            for sock in (stale, fresh):   # each served, then idle: stale the longer
                sock.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                assert status_of(sock.recv(4096)) == 404
                select.select([], [], [], 0.1)   # the loop sleeps, so its clock (read once a pass) moves on
            for piece in pieces:
                stale.sendall(piece)
                # the router reads it long before this (it would pass over a connection with unread input)
                select.select([], [], [], 0.3)
            third = raw_exchange(d.port, b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            assert status_of(third) == 404
            assert (closed_by_peer(stale), closed_by_peer(fresh)) == (True, False)


def test_requests_begun_and_held_unauthenticated_cannot_lock_a_client_out_at_the_connection_cap(tmp_path):
    # A byte of a request on each connection the cap allows (its head unfinished: no gate,
    # no token) got every new client a 503, and reconnecting renewed each read timeout.
    server, daemon = start_auth_daemon(tmp_path, GS_MCP_MAX_CONNECTIONS="8", GS_MCP_SPARE_WORKERS="1",
                                       GS_MCP_READ_TIMEOUT="120")
    first, second = [], []
    try:
        for wave in (first, second):
            for _ in range(8):
                wave.append(socket.create_connection(("127.0.0.1", daemon.port), timeout=30))
                wave[-1].sendall(b"P")
                select.select([], [], [], 0.05)   # read by the loop, whose clock moves on: each begun later
        # Each of the second wave made room by cutting short the request begun longest ago.
        for sock in first:
            raw = recv_all(sock)   # told why, then EOF
            assert status_of(raw) == 503, raw
            assert "still unfinished" in json.loads(body_of(raw))["error"]["message"]
        assert not any(closed_by_peer(sock) for sock in second)
        client = AuthClient(daemon.port, server.idp.mint())
        client.initialize()   # 200: room made by closing the second wave's oldest
        second[0].setblocking(True)
        assert status_of(recv_all(second[0])) == 503
        assert not any(closed_by_peer(sock) for sock in second[1:])
        assert client.call("tools/list").status == 200   # the daemon serves on
        assert "mid-request" in daemon.log_text()
        client.close()
    finally:
        for sock in first + second:
            sock.close()
        daemon.stop()
        server.close()
