"""End-to-end: every kind of bad input gets its exact answer, and the router keeps serving."""

import json
import socket

import pytest

from helpers import PROTOCOL, Client, Daemon, body_of, raw_exchange, recv_all, status_of


def refusal_of(raw):
    """The message of an HTTP-layer refusal: a JSON-RPC error with no id, as MCP allows."""
    assert b"\r\ncontent-type: application/json\r\n" in raw.lower(), raw
    reply = json.loads(body_of(raw))
    assert reply["id"] is None and reply["error"]["code"] == -32600, reply
    return reply["error"]["message"]


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    d = Daemon(tmp_path_factory.mktemp("badinput"),
               env={"GS_MCP_MAX_BODY": "65536", "GS_MCP_READ_TIMEOUT": "0.5", "GS_MCP_SPARE_WORKERS": "1"})
    d.start()
    yield d
    d.stop()


def post(body, extra=b"", length=None):
    if isinstance(body, str):
        body = body.encode()
    length = str(len(body)).encode() if length is None else length
    return (b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n" + extra +
            b"Content-Length: " + length + b"\r\n\r\n" + body)


JSONRPC_CASES = [
    ("malformed json", b'{"jsonrpc": "2.0", "id": 1, "method": ', -32700),
    ("invalid utf-8", b'{"jsonrpc":"2.0","id":1,"method":"\xff\xfe"}', -32700),
    ("empty body", b"", -32700),
    ("batch", b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]', -32600),
    ("no jsonrpc member", b'{"id":1,"method":"ping"}', -32600),
    ("wrong jsonrpc version", b'{"jsonrpc":"1.0","id":1,"method":"ping"}', -32600),
    ("null id", b'{"jsonrpc":"2.0","id":null,"method":"ping"}', -32600),
    ("object id", b'{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}', -32600),
    ("non-string method", b'{"jsonrpc":"2.0","id":1,"method":7}', -32600),
    ("array params", b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":[1]}', -32600),
    ("a json string", b'"hello"', -32600),
]


@pytest.mark.parametrize("name,body,code", JSONRPC_CASES, ids=[c[0] for c in JSONRPC_CASES])
def test_bad_json_rpc_bodies(daemon, name, body, code):
    raw = raw_exchange(daemon.port, post(body))
    assert status_of(raw) == 400, raw
    reply = json.loads(body_of(raw))
    assert reply["jsonrpc"] == "2.0"
    assert reply["error"]["code"] == code


HTTP_CASES = [
    ("negative content-length", post(b"{}", length=b"-5"), 400),
    ("non-numeric content-length", post(b"{}", length=b"12abc"), 400),
    ("huge content-length", post(b"{}", length=b"10000000000"), 413),
    ("absurd content-length", post(b"{}", length=b"9" * 40), 400),
    ("body over the cap", post(b"x" * 70000), 413),
    ("two different content-lengths", post(b"{}", extra=b"Content-Length: 3\r\n"), 400),
    ("content-length with chunked", post(b"0\r\n\r\n", extra=b"Transfer-Encoding: chunked\r\n"), 400),
    ("garbage chunk size", b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n", 400),
    ("header line without colon", b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nNoColonHere\r\nContent-Length: 2\r\n\r\n{}", 400),
    ("malformed request line", b"POST\r\nHost: localhost\r\n\r\n", 400),
    ("asterisk target of a GET", b"GET * HTTP/1.1\r\nHost: localhost\r\n\r\n", 400),
    ("target with no slash", b"POST mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\n\r\n{}", 400),
    ("unsupported http version", b"POST /mcp HTTP/2.0\r\nHost: localhost\r\nContent-Length: 2\r\n\r\n{}", 505),
    ("head too large", b"GET /mcp HTTP/1.1\r\nHost: localhost\r\nX-Big: " + b"a" * 70000 + b"\r\n\r\n", 431),
    ("request line too long", b"GET /mcp?" + b"a" * 70000 + b" HTTP/1.1\r\nHost: localhost\r\n\r\n", 414),
    ("unknown transfer-encoding", b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: gzip\r\n\r\n", 501),
    ("space before colon", b"POST /mcp HTTP/1.1\r\nHost : localhost\r\nContent-Length: 2\r\n\r\n{}", 400),
    ("latin-1 digit in content-length", post(b"{}", length=b"\xb2"), 400),
    ("non-ascii request target", b"POST /caf\xc3\xa9 HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\n\r\n{}", 400),
    ("non-ascii header name", post(b"{}", extra=b"X-Caf\xc3\xa9: 1\r\n"), 400),
]


@pytest.mark.parametrize("name,data,status", HTTP_CASES, ids=[c[0] for c in HTTP_CASES])
def test_bad_http_requests(daemon, name, data, status):
    raw = raw_exchange(daemon.port, data)
    assert status_of(raw) == status, raw[:300]


def test_a_long_method_not_allowed_gets_a_405_that_does_not_echo_it_whole(daemon):
    raw = raw_exchange(daemon.port, b"Y" * 50000 + b" /mcp HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
    assert status_of(raw) == 405 and len(raw) < 2000, len(raw)
    assert b"(50000 characters)" in raw
    assert b"connection: close" in raw.lower()


def chunked(body):
    return b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n" + body


FRAMING_400_CASES = [
    ("chunked twice", chunked(b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
     b"Transfer-Encoding chunked given more than once"),
    ("chunked not last", chunked(b"Transfer-Encoding: gzip\r\n\r\n0\r\n\r\n"),
     b"Transfer-Encoding chunked must be the last coding"),
    ("transfer-encoding naming no coding",
     b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: , \r\n\r\n0\r\n\r\n",
     b"Transfer-Encoding names no coding"),
    ("chunk extension with control bytes", chunked(b"\r\n5;a=\x00\x01\xff\rz\r\nhello\r\n0\r\n\r\n"),
     b"malformed chunk extension"),
    # a bare LF ends head lines only (RFC 9112 2.2): in chunked framing it is a smuggling shape
    ("bare LF after a chunk size", chunked(b"\r\n2\n{}\r\n0\r\n\r\n"), b"chunk size line not ended by CRLF"),
    ("bare LF after chunk data", chunked(b"\r\n2\r\n{}\n0\r\n\r\n"), b"chunk data not followed by CRLF"),
    ("bare LF ending the trailers", chunked(b"\r\n2\r\n{}\r\n0\r\n\n"), b"trailer line not ended by CRLF"),
    ("obs-fold header line", chunked(b"X-Long: one\r\n two\r\n\r\n0\r\n\r\n"), b"obsolete line folding in header"),
]


@pytest.mark.parametrize("name,data,message", FRAMING_400_CASES, ids=[c[0] for c in FRAMING_400_CASES])
def test_bad_framing_gets_400_saying_what_is_wrong(daemon, name, data, message):
    raw = raw_exchange(daemon.port, data)
    assert (status_of(raw), refusal_of(raw)) == (400, "400 " + message.decode()), raw
    assert b"\r\nconnection: close\r\n" in raw.lower()


def test_a_body_over_the_cap_reads_the_rfc_9110_status_line_whatever_python_serves(daemon):
    # Python 3.11 and 3.12 name 413 "Request Entity Too Large", 3.13 "Content Too Large".
    raw = raw_exchange(daemon.port, post(b"x" * 70000))
    assert raw.startswith(b"HTTP/1.1 413 Content Too Large\r\n"), raw[:200]


def test_a_size_written_with_a_leading_plus_is_the_cap_the_daemon_enforces(tmp_path):
    # README "Configuration": a leading + is taken in every number; a size's had refused startup.
    with Daemon(tmp_path, env={"GS_MCP_MAX_BODY": "+64KiB", "GS_MCP_SPARE_WORKERS": "1"}) as d:
        raw = raw_exchange(d.port, post(b"x" * 70000))
    assert (status_of(raw), refusal_of(raw)) == \
        (413, "413 request body too large: over 65536 bytes, the most GS_MCP_MAX_BODY allows"), raw[:300]


def test_a_transfer_encoding_with_an_empty_element_is_chunked(daemon):
    # RFC 9110 5.6.1: ",chunked" had been refused with 501 as an unsupported coding
    init = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                       "params": {"protocolVersion": PROTOCOL, "capabilities": {},
                                  "clientInfo": {"name": "t", "version": "0"}}}).encode()
    body = b"%x\r\n%s\r\n0\r\n\r\n" % (len(init), init)
    raw = raw_exchange(daemon.port, b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: ,chunked\r\n"
                                    b"Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
                                    b"Connection: close\r\n\r\n" + body)
    assert status_of(raw) == 200, raw[:400]
    assert json.loads(body_of(raw))["result"]["protocolVersion"] == PROTOCOL


def test_host_missing_or_repeated_and_headers_sent_twice_get_400_naming_them(daemon):
    c = Client(daemon.port)
    c.initialize()
    ping = b'{"jsonrpc":"2.0","id":4,"method":"ping"}'
    sid = b"MCP-Session-Id: " + c.session.encode() + b"\r\n"
    cases = [
        (b"POST /mcp HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}", b"missing Host header"),
        (post(b"{}", extra=b"Host: localhost\r\n"), b"more than one Host header"),
        (post(ping, extra=sid + sid), b"more than one MCP-Session-Id header"),
        (post(ping, extra=sid + b"Content-Type: application/json\r\n"), b"more than one Content-Type header"),
    ]
    for data, message in cases:
        raw = raw_exchange(daemon.port, data)
        assert (status_of(raw), refusal_of(raw)) == (400, "400 " + message.decode()), raw
        assert b"\r\nconnection: close\r\n" in raw.lower()
    assert c.call("ping").status == 200   # the session itself is fine


def test_header_values_beyond_ascii_are_opaque_data_and_http_1_2_is_served_as_1_1(daemon):
    # RFC 9110 5.5 and 2.5. Python's http.client sends a str value as latin-1 bytes, so
    # headers={"X-User": "José"} reached gsmcpd as obs-text and was refused with a 400.
    c = Client(daemon.port)
    c.conn._http_vsn_str = "HTTP/1.2"
    c.initialize()
    for value in ("Jos\u00e9", "caf\u00e9 \u2713".encode("utf-8")):
        reply = c.post({"jsonrpc": "2.0", "id": 7, "method": "ping"}, headers={"User-Agent": value, "X-User": value})
        assert (reply.status, reply.json()["result"]) == (200, {}), reply
    # opaque, not trusted: a Host beyond ASCII is no host name
    raw = raw_exchange(daemon.port, b"POST /mcp HTTP/1.1\r\nHost: caf\xc3\xa9\r\nContent-Length: 2\r\n\r\n{}")
    assert status_of(raw) == 400, raw
    assert "malformed Host header" in json.loads(body_of(raw))["error"]["message"]


def test_a_body_behind_a_utf8_byte_order_mark_is_read_as_json(daemon):
    # RFC 8259 8.1 lets a parser ignore the mark, and Windows editors write it (curl -d
    # @request.json). The body is relayed to the worker, so the mark must not reach it.
    bom = b"\xef\xbb\xbf"
    raw = raw_exchange(daemon.port, post(bom + b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}',
                                          extra=b"Connection: close\r\n"))
    assert status_of(raw) == 200 and json.loads(body_of(raw))["result"]["serverInfo"]["name"] == "gsmcpd", raw
    c = Client(daemon.port)
    c.initialize()
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "list_all_classes", "arguments": {}}}
    reply = c.post(bom + json.dumps(call).encode())
    assert reply.status == 200 and not reply.json()["result"].get("isError"), reply
    assert "shop.models.Cart" in reply.json()["result"]["content"][0]["text"]
    assert c.post(bom + b'{"jsonrpc":"2.0","id":3,"method":"ping"}').json()["result"] == {}
    refused = c.post(bom + bom + b'{"jsonrpc":"2.0","id":4,"method":"ping"}')
    assert refused.status == 400 and refused.json()["error"]["code"] == -32700, refused


def test_chunked_request_body_is_accepted(daemon):
    body = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}'
    data = (b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
            b"Connection: close\r\n\r\n" +
            b"%x;name\r\n" % 10 + body[:10] + b"\r\n" + b'%x ; a = "q s"\r\n' % (len(body) - 10) + body[10:]
            + b"\r\n0\r\n\r\n")
    with socket.create_connection(("127.0.0.1", daemon.port), timeout=10) as s:
        s.sendall(data)
        raw = recv_all(s)
    assert status_of(raw) == 200
    assert json.loads(body_of(raw))["result"]["serverInfo"]["name"] == "gsmcpd"


def test_http_1_0_chunked_is_answered_then_the_connection_closed(daemon):
    body = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}'
    data = (b"POST /mcp HTTP/1.0\r\nHost: localhost\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n"
            b"Content-Type: application/json\r\n\r\n"
            + b"%x\r\n" % len(body) + body + b"\r\n0\r\n\r\nGET /second HTTP/1.1\r\nHost: localhost\r\n\r\n")
    with socket.create_connection(("127.0.0.1", daemon.port), timeout=10) as s:
        s.sendall(data)
        raw = recv_all(s)   # returns only because the server closes
    assert status_of(raw) == 200
    assert b"\r\nconnection: close\r\n" in raw.lower()
    assert raw.count(b"HTTP/1.1 ") == 1   # the pipelined GET was not served


def test_a_slow_client_is_dropped_and_wedges_nothing(daemon):
    slow = socket.create_connection(("127.0.0.1", daemon.port), timeout=10)
    slow.sendall(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100\r\n\r\n{")
    c = Client(daemon.port)
    c.initialize()  # served while the slow one dawdles
    slow.settimeout(10)
    # the server hangs up on it (its read timeout is 0.5 s here; ours, 10 s, would raise)
    assert slow.recv(100) == b""
    slow.close()


def test_https_to_the_plain_port_gets_a_plain_400_at_once_not_silence_until_the_timeout(daemon):
    # A ClientHello never ends a head: the client waited out the read timeout, then read
    # EOF (curl: "SSL_ERROR_SYSCALL"). Now it reads why, and TLS says "wrong version number".
    import ssl
    hello = b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(32)
    raw = raw_exchange(daemon.port, hello)
    assert status_of(raw) == 400, raw
    assert refusal_of(raw) == "400 this port speaks plain HTTP, not TLS: use http:// to connect"
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", daemon.port), timeout=10) as sock:
        with pytest.raises(ssl.SSLError) as caught:
            context.wrap_socket(sock, server_hostname="localhost")
    assert caught.value.reason == "WRONG_VERSION_NUMBER", caught.value
    c = Client(daemon.port)
    c.initialize()
    assert c.call("ping").json()["result"] == {}


def test_the_router_still_serves_after_all_of_that(daemon):
    for _, data, _ in HTTP_CASES:
        raw_exchange(daemon.port, data)
    c = Client(daemon.port)
    c.initialize()
    assert c.call("tools/list").status == 200
    assert c.call("ping").json()["result"] == {}


def test_bad_tool_arguments_are_tool_errors_and_unknown_tools_are_protocol_errors(daemon):
    c = Client(daemon.port)
    c.initialize()
    reply = c.call("tools/call", {"name": "execute_code", "arguments": {"code": 1}}).json()
    assert reply["result"]["isError"] is True
    assert reply["result"]["structuredContent"]["error"]["kind"] == "invalidParams"
    reply = c.call("tools/call", {"name": "execute_code", "arguments": {"code": "1", "extra": 2}}).json()
    assert reply["result"]["structuredContent"]["error"]["kind"] == "invalidParams"
    reply = c.call("tools/call", {"name": "execute_code", "arguments": {}}).json()
    assert reply["result"]["structuredContent"]["error"]["kind"] == "invalidParams"
    assert c.call("tools/call", {"name": "no_such_tool", "arguments": {}}).json()["error"]["code"] == -32602
    assert c.call("tools/call", {"arguments": {}}).json()["error"]["code"] == -32602


def test_a_request_before_initialize_is_told_how_a_session_begins(daemon):
    # README's second curl without the id initialize gave: the answer says where it comes from.
    raw = raw_exchange(daemon.port, post(b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}',
                                         b"Connection: close\r\n"))
    assert status_of(raw) == 400, raw
    assert json.loads(body_of(raw))["error"] == {"code": -32600, "message": (
        "Bad Request: missing MCP-Session-Id header; a session begins with initialize (sent without "
        "it), whose response's MCP-Session-Id header every later request echoes")}


def test_a_progress_token_of_the_wrong_type_is_refused_before_the_tool_runs(daemon):
    """A token that is neither a string nor a number would come back in every
    notifications/progress, malformed: it is -32602, and the call never starts."""
    c = Client(daemon.port)
    c.initialize()
    code = "progress(1, 2)\nran = True\n'ran'"
    for meta in ({"progressToken": True}, {"progressToken": {"t": 1}}, "tok"):
        resp = c.call("tools/call", {"name": "execute_code", "arguments": {"code": code}, "_meta": meta})
        assert resp.status == 200 and resp.header("content-type") == "application/json", resp
        assert resp.json()["error"]["code"] == -32602 and "progressToken" in resp.json()["error"]["message"]
    never_ran = c.tool("execute_code", code="'ran' in globals()")
    assert never_ran["content"][0]["text"] == "False"
    streamed = c.call("tools/call", {"name": "execute_code", "arguments": {"code": code},
                                     "_meta": {"progressToken": 2.5}})
    assert streamed.header("content-type") == "text/event-stream", streamed
    assert b'"progressToken":2.5,"progress":1' in streamed.body and b'"text":"\'ran\'"' in streamed.body
