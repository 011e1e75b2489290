"""Unit tests for the per-request gates (gsmcpd/router/app.py): their pure parts, and
the answer a head gets before its body is read (a recording connection, no daemon)."""

import gc
import json
from types import SimpleNamespace

import pytest

from gsmcpd.config import Config
from gsmcpd.router.app import SESSION_NOT_FOUND_MESSAGE, App, _accept_lists, content_type_refusal
from gsmcpd.router.main import Router
from gsmcpd.wire.http import RequestParser

SSE = "text/event-stream"


@pytest.mark.parametrize("accept", [
    "text/event-stream", "application/json, text/event-stream", "Text/Event-Stream; q=0.5", "*/*", "text/*",
    "text/event-stream;q=1", "text/event-stream;q=0.001", "text/event-stream;q=zero",  # a bad weight is ignored
    "text/*;q=0, text/event-stream", "*/*;q=0, text/*",                                  # more specific wins
])
def test_acceptable(accept):
    assert _accept_lists(accept, SSE) is True


@pytest.mark.parametrize("accept", [
    "application/json", "text/event-streams", "", "text/event-stream;q=0", "text/event-stream; Q=0.000",
    "application/json, text/event-stream;q=0", "*/*;q=0", "text/*;q=0",
    "text/event-stream;q=0, */*", "text/event-stream;q=0, text/*", "text/*;q=0, */*",  # more specific wins
])
def test_not_acceptable(accept):
    assert _accept_lists(accept, SSE) is False


# -- the gates a head meets before its body is read ----------------------------


class RecordingConn:
    """What the app answered (status) or that it asked for the body ("read body")."""

    def __init__(self):
        self.answers = []
        self.reply_headers = ()
        self.account_refusal = None   # a client of the daemon's own account
        self.client_account = None

    def respond(self, status, headers=(), body=b"", keep_alive=True):
        self.answers.append(status)

    def read_body(self):
        self.answers.append("read body")


def unauthenticated_router():
    router = SimpleNamespace(config=Config(local_clients="any"), sessions=SimpleNamespace(by_id={"known": SimpleNamespace(user="u")}),
                             bound_to_loopback=True, stopping=False, auth=None, user="u",
                             trace_inbound=lambda request: None)
    router.authenticate = lambda conn, request, then: Router.authenticate(router, conn, request, then)
    router.owns_session = lambda session, principal: Router.owns_session(router, session, principal)
    router.serve_metadata = lambda conn, request: Router.serve_metadata(router, conn, request)
    return router


def head_and_whole(head_bytes):
    """The head the parser offers while a 16 MB body is to come, and the request it
    would be with a body (an empty one: these gates never read it)."""
    parser = RequestParser()
    parser.feed(head_bytes + b"Content-Length: 16000000\r\n\r\n")
    assert parser.next_request() is None
    head = parser.pop_waiting_head()
    whole = RequestParser()
    whole.feed(head_bytes + b"Content-Length: 0\r\n\r\n")
    return head, whole.next_request()


@pytest.mark.parametrize("head_bytes, answer", [
    (b"POST /elsewhere HTTP/1.1\r\nHost: localhost\r\n", 404),
    (b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nOrigin: https://evil.example\r\n", 403),
    (b"POST /mcp HTTP/1.1\r\nHost: evil.example\r\n", 403),
    (b"PUT /mcp HTTP/1.1\r\nHost: localhost\r\n", 405),
    (b"GET /mcp HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\nMcp-Session-Id: gone\r\n", 404),
    (b"GET /mcp HTTP/1.1\r\nHost: localhost\r\nAccept: application/json\r\nMcp-Session-Id: known\r\n", 406),
    (b"DELETE /mcp HTTP/1.1\r\nHost: localhost\r\n", 400),
    (b"POST /.well-known/oauth-protected-resource HTTP/1.1\r\nHost: localhost\r\n", 404),
    (b"OPTIONS /mcp HTTP/1.1\r\nHost: localhost\r\n", 204),
    (b"OPTIONS * HTTP/1.1\r\nHost: localhost\r\n", 204),
    (b"OPTIONS * HTTP/1.1\r\nHost: evil.example\r\n", 403),
    (b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nOrigin: http://localhost:9\r\nContent-Type: text/plain\r\n", 415),
    (b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nOrigin: http://localhost:9\r\n", 415),   # no Content-Type
])
def test_a_head_the_gates_refuse_is_answered_as_the_whole_request_would_be(head_bytes, answer):
    app = App(unauthenticated_router())
    head, whole = head_and_whole(head_bytes)
    early, late = RecordingConn(), RecordingConn()
    app.handle_head(early, head)
    app.handle(late, whole)
    assert early.answers == late.answers == [answer]


class HeadersConn(RecordingConn):
    def respond(self, status, headers=(), body=b"", keep_alive=True):
        self.answers.append((status, dict(headers), body))


def test_options_asterisk_asks_about_the_server_and_is_told_its_methods():
    # RFC 9110 9.3.7: "OPTIONS *" is about the server as a whole (HTTP's ping); it was 404
    parser = RequestParser()
    parser.feed(b"OPTIONS * HTTP/1.1\r\nHost: localhost\r\n\r\n")
    conn = HeadersConn()
    App(unauthenticated_router()).handle(conn, parser.next_request())
    assert conn.answers == [(204, {"Allow": "GET, POST, DELETE, OPTIONS"}, b"")]


class BodyConn(RecordingConn):
    def respond(self, status, headers=(), body=b"", keep_alive=True):
        self.answers.append((status, json.loads(body)))


@pytest.mark.parametrize("head_bytes", [
    b"POST /mcp HTTP/1.1\r\nHost: localhost\r\n",
    b"GET /mcp HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\nMcp-Session-Id: known\r\n",
    b"DELETE /mcp HTTP/1.1\r\nHost: localhost\r\nMcp-Session-Id: known\r\n",
    b"OPTIONS /mcp HTTP/1.1\r\nHost: localhost\r\n",
    b"GET /elsewhere HTTP/1.1\r\nHost: localhost\r\n",
])
def test_another_accounts_connection_is_refused_every_request_from_its_head(head_bytes):
    app = App(unauthenticated_router())
    head, whole = head_and_whole(head_bytes)
    early, late = BodyConn(), BodyConn()
    for conn in (early, late):
        conn.account_refusal = "Forbidden: this connection is from nobody (uid 65534)."
    app.handle_head(early, head)
    app.handle(late, whole)
    assert early.answers == late.answers == [(403, {"jsonrpc": "2.0", "id": None, "error": {
        "code": -32600, "message": "Forbidden: this connection is from nobody (uid 65534)."}})]


def test_a_long_method_not_allowed_is_echoed_cut():
    # A method is a token of any length up to the head limit: it was echoed whole.
    parser = RequestParser()
    parser.feed(b"X" * 60000 + b" /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\n\r\n")
    conn = BodyConn()
    App(unauthenticated_router()).handle(conn, parser.next_request())
    [(status, body)] = conn.answers
    assert status == 405 and body["error"]["message"] == "Method not allowed: %s... (60000 characters)" % ("X" * 200)


@pytest.mark.parametrize("verb", [b"POST", b"GET", b"DELETE"])
def test_an_unknown_session_is_404_telling_the_client_to_initialize_a_new_one(verb):
    # What an SDK shows its caller after a restart or a reap: the spec's 404, and what to do.
    parser = RequestParser()
    body = b'{"jsonrpc":"2.0","id":7,"method":"ping"}' if verb == b"POST" else b""
    parser.feed(verb + b" /mcp HTTP/1.1\r\nHost: localhost\r\nAccept: application/json, text/event-stream\r\n"
                b"Content-Type: application/json\r\nMcp-Session-Id: gone\r\n"
                b"Content-Length: %d\r\n\r\n" % len(body) + body)
    conn = BodyConn()
    App(unauthenticated_router()).handle(conn, parser.next_request())
    assert conn.answers == [(404, {"jsonrpc": "2.0", "id": 7 if verb == b"POST" else None, "error": {
        "code": -32600, "message": (
            "Session not found: it has ended (DELETE, reaped, its worker gone, or the server restarted) or "
            "never existed; initialize a new session, without MCP-Session-Id")}})]


def post(body, headers=b""):
    parser = RequestParser()
    parser.feed(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nAccept: application/json, text/event-stream\r\n"
                b"Content-Type: application/json\r\n"
                + headers + b"Content-Length: %d\r\n\r\n" % len(body) + body)
    conn = BodyConn()
    App(unauthenticated_router()).handle(conn, parser.next_request())
    [(status, reply)] = conn.answers
    return status, reply["id"], reply["error"]["message"]


@pytest.mark.parametrize("headers, status, said", [
    (b"", 400, "Bad Request: missing MCP-Session-Id header; a session begins with initialize "
               "(sent without it), whose response's MCP-Session-Id header every later request echoes"),
    (b"Mcp-Session-Id: gone\r\n", 404, SESSION_NOT_FOUND_MESSAGE),
    (b"Mcp-Session-Id: known\r\nMCP-Protocol-Version: 1999-01-01\r\n", 400,
     "Bad Request: unsupported MCP-Protocol-Version '1999-01-01' (supported: 2025-11-25, 2025-06-18)"),
])
def test_a_posted_requests_refusal_at_the_session_gates_bears_its_id(headers, status, said):
    # JSON-RPC: an error's id is the request's, null only when it could not be read; the
    # client matches the answer by it. Every one of these had id null.
    assert post(b'{"jsonrpc":"2.0","id":"r-8","method":"tools/list"}', headers) == (status, "r-8", said)
    # a notification has no id to bear, nor has a client's response an id of its own
    assert post(b'{"jsonrpc":"2.0","method":"notifications/initialized"}', headers) == (status, None, said)
    assert post(b'{"jsonrpc":"2.0","id":"s1","result":{}}', headers) == (status, None, said)


ALREADY_INITIALIZED = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32600, "message": (
    "Invalid Request: the session MCP-Session-Id names is already initialized; "
    "to open another, send initialize without MCP-Session-Id")}}


@pytest.mark.parametrize("sid, answer", [("gone", 404), ("known", 400), (None, "opened")])
def test_an_initialize_naming_an_ended_session_is_404_a_live_one_400(sid, answer):
    # MCP: once a session ends, requests containing its id get 404; the client
    # re-initializes without it. A session begins with initialize: a live one's id on
    # another opened a second session beside it (the TypeScript SDK refuses it too).
    router = unauthenticated_router()
    opened = []
    router.sessions.opening = 0
    router.sessions.open = lambda *args: opened.append("opened")
    body = (b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
            b'"capabilities":{},"clientInfo":{"name":"t","version":"0"}}}')
    header = b"Mcp-Session-Id: %s\r\n" % sid.encode() if sid else b""
    parser = RequestParser()
    parser.feed(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nAccept: application/json, text/event-stream\r\n"
                b"Content-Type: application/json\r\n"
                + header + b"Content-Length: %d\r\n\r\n" % len(body) + body)
    conn = BodyConn()
    App(router).handle(conn, parser.next_request())
    if answer == 404:
        assert conn.answers == [(404, {"jsonrpc": "2.0", "id": 1, "error": {
            "code": -32600, "message": SESSION_NOT_FOUND_MESSAGE}})] and not opened
    elif answer == 400:
        assert conn.answers == [(400, ALREADY_INITIALIZED)] and not opened
    else:
        assert opened == ["opened"] and not conn.answers


def test_a_request_method_without_an_id_is_refused_400_and_logged_once_at_debug(caplog):
    body = b'{"jsonrpc":"2.0","method":"tools/call","params":{"name":"execute_code","arguments":{"code":"1"}}}'
    parser = RequestParser()
    parser.feed(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nAccept: application/json, text/event-stream\r\n"
                b"Content-Type: application/json\r\n"
                b"Mcp-Session-Id: known\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    conn = BodyConn()
    with caplog.at_level("DEBUG", logger="gsmcpd.app"):
        App(unauthenticated_router()).handle(conn, parser.next_request())
    said = 'Invalid Request: \'tools/call\' is a request: send it with an "id" (only notifications/... methods go without one); it was not run'
    assert conn.answers == [(400, {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": said}})]
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [("DEBUG", "POST refused, 400: " + said)]


def test_a_post_is_handled_with_no_cyclic_collection_walking_its_parsed_message():
    # The collector, run while a parse piles up arrays (which hold no cycle), walked them
    # again and again: 16 MiB of "[]," held the router's one thread 2 s longer.
    body = b'{"jsonrpc":"2.0","id":7,"method":"ping","params":{"x":[' + b"[]," * 100000 + b"0]}}"
    parser = RequestParser()
    parser.feed(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                b"Mcp-Session-Id: gone\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    request, conn, collections = parser.next_request(), RecordingConn(), []
    app = App(unauthenticated_router())   # made before counting: making it may collect

    def count(phase, info):
        collections.append(phase)
    gc.collect()   # nothing left for a threshold to set off in the first allocations
    gc.callbacks.append(count)
    try:
        app.handle(conn, request)
    finally:
        gc.callbacks.remove(count)
    assert (conn.answers, collections, gc.isenabled()) == ([404], [], True)


@pytest.mark.parametrize("head_bytes, said", [
    (b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nOrigin: https://app.example\r\n",
     "Forbidden: Origin 'https://app.example' is not allowed (a browser app's origin is let in by "
     "listing it in GS_MCP_ALLOWED_ORIGINS)"),
    (b"POST /mcp HTTP/1.1\r\nHost: proxy.example:8443\r\n",
     "Forbidden: Host header 'proxy.example:8443' is not this server (a name a proxy in front passes "
     "is accepted once listed in GS_MCP_ALLOWED_ORIGINS)"),
])
def test_a_foreign_origin_or_host_is_refused_naming_the_knob_that_admits_it(head_bytes, said):
    parser = RequestParser()
    parser.feed(head_bytes + b"Content-Length: 0\r\n\r\n")
    assert App(unauthenticated_router())._gate_host_origin(parser.next_request()) == (403, said)


@pytest.mark.parametrize("origin, host", [
    (b"http://[::ffff:7f00:1]:8080", b"localhost:8000"),    # a browser writes 127.0.0.1 IPv4-mapped in hex
    (b"http://[::ffff:127.0.0.1]", b"[::ffff:127.0.0.1]:8000"),   # curl sends the Host as typed
    (b"http://[0:0:0:0:0:ffff:7f00:1]:3000", b"[::ffff:7f00:1]:8000"),
    (b"http://[::1]:3000", b"[::1]:8000"),
    (b"http://127.0.0.1:3000", b"127.0.0.1:8000"),
    (b"http://[::ffff:7f00:2]", b"127.0.0.2:8000"),   # 127.0.0.0/8, as the configuration's check reads it
])
def test_the_ipv4_mapped_loopback_address_is_loopback_as_origin_and_host(origin, host):
    # [::ffff:127.0.0.1] reaches a server bound to 127.0.0.1: its page was refused 403
    parser = RequestParser()
    parser.feed(b"POST /mcp HTTP/1.1\r\nHost: " + host + b"\r\nOrigin: " + origin + b"\r\nContent-Length: 0\r\n\r\n")
    assert App(unauthenticated_router())._gate_host_origin(parser.next_request()) is None


@pytest.mark.parametrize("origin", [b"http://[::ffff:127.0.0.1.5]", b"http://[::127.0.0.1]", b"http://[::ffff:a00:1]"])
def test_other_ipv4_mapped_or_compatible_addresses_are_not_loopback(origin):
    parser = RequestParser()
    parser.feed(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nOrigin: " + origin + b"\r\nContent-Length: 0\r\n\r\n")
    assert App(unauthenticated_router())._gate_host_origin(parser.next_request())[0] == 403


@pytest.mark.parametrize("origin, said", [
    (b"null", "Forbidden: Origin 'null' is not allowed"),   # well-formed (RFC 6454 7.3), only not listed
    (b"http://[::1", "Forbidden: malformed Origin 'http://[::1' (an origin is scheme://host[:port]"),
    (b"app.example", "Forbidden: malformed Origin 'app.example' (an origin"),
    (b"http://app.example:99999", "Forbidden: malformed Origin 'http://app.example:99999' (an origin"),
    (b"http://", "Forbidden: malformed Origin 'http://' (an origin"),   # no host: none to list
    (b"http://:8080", "Forbidden: malformed Origin 'http://:8080' (an origin"),
])
def test_a_malformed_origin_is_named_as_such_not_sent_to_the_allow_list(origin, said):
    # it had been told to list the origin in GS_MCP_ALLOWED_ORIGINS, which refuses such a value
    parser = RequestParser()
    parser.feed(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nOrigin: " + origin + b"\r\nContent-Length: 0\r\n\r\n")
    status, message = App(unauthenticated_router())._gate_host_origin(parser.next_request())
    assert (status, message[:len(said)]) == (403, said)


@pytest.mark.parametrize("head_bytes, said", [
    (b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nOrigin: https://caf\xc3\xa9.example\r\n",
     (403, "Forbidden: malformed Origin 'https://café.example' (an origin is scheme://host[:port], "
           "the host ASCII")),
    (b"POST /mcp HTTP/1.1\r\nHost: caf\xc3\xa9.example\r\n",   # a Host is ASCII (punycode)
     (400, "Bad Request: malformed Host header 'café.example'")),
    (b"POST /mcp HTTP/1.1\r\nHost: caf\xff/x\r\n", (400, "Bad Request: malformed Host header 'caf\\xff/x'")),
])
def test_a_refused_header_value_is_named_as_the_client_wrote_it_not_as_latin_1(head_bytes, said):
    parser = RequestParser()
    parser.feed(head_bytes + b"Content-Length: 0\r\n\r\n")
    status, message = App(unauthenticated_router())._gate_host_origin(parser.next_request())
    assert (status, message[:len(said[1])]) == said


@pytest.mark.parametrize("check_host", [True, False])
@pytest.mark.parametrize("target", [b"http:///mcp", b"https://:8000/mcp", b"http://?x"])
def test_an_absolute_form_target_with_no_host_is_a_bad_request_whoever_is_let_in(target, check_host):
    # RFC 9110 4.2.1: an http(s) URI with an empty host is invalid and MUST be rejected. It
    # was read as a host '' that is "not this server" (403, list it in the knob), or let in
    # where no host is checked (found by fuzzing the router).
    parser = RequestParser()
    parser.feed(b"POST " + target + b" HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\n\r\n")
    app = App(unauthenticated_router())
    app.check_host = check_host
    assert app._gate_host_origin(parser.next_request()) == (
        400, "Bad Request: malformed request target host '%s': an http(s) URL names a host"
        % target.decode().split("//")[1].split("/")[0].split("?")[0])


def test_an_unsupported_protocol_version_is_named_as_the_client_wrote_it():
    parser = RequestParser()
    parser.feed(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nMCP-Protocol-Version: 2025-\xc3\xa9t\xc3\xa9\r\n"
                b"Content-Length: 0\r\n\r\n")
    assert App(unauthenticated_router())._version_refusal(parser.next_request()).startswith(
        "Bad Request: unsupported MCP-Protocol-Version '2025-été' (supported: ")


@pytest.mark.parametrize("head_bytes", [
    b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
    b"Mcp-Session-Id: gone\r\n",   # initialize ignores it
    b"GET /mcp HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\nMcp-Session-Id: known\r\n",
    b"DELETE /mcp HTTP/1.1\r\nHost: localhost\r\nMcp-Session-Id: known\r\n",
])
def test_a_head_that_passes_the_gates_has_its_body_read(head_bytes):
    conn = RecordingConn()
    App(unauthenticated_router()).handle_head(conn, head_and_whole(head_bytes)[0])
    assert conn.answers == ["read body"]


# -- a POST's Content-Type -------------------------------------------------------


@pytest.mark.parametrize("content_type", [
    "application/json", "Application/JSON", "application/json; charset=utf-8", 'application/json;charset="UTF-8"',
    "application/json ; profile=x",
])
def test_a_json_content_type_passes(content_type):
    assert content_type_refusal(content_type) is None


@pytest.mark.parametrize("content_type, said", [
    (None, "Unsupported Media Type: POST needs Content-Type: application/json (the request sent no Content-Type)"),
    ("text/plain;charset=UTF-8", "Unsupported Media Type: Content-Type 'text/plain;charset=UTF-8' is not "
                                 "application/json; send Content-Type: application/json"),
    ("application/x-www-form-urlencoded", "Unsupported Media Type: Content-Type "
                                          "'application/x-www-form-urlencoded' is not application/json; "
                                          "send Content-Type: application/json"),
    ("", "Unsupported Media Type: Content-Type '' is not application/json; send Content-Type: application/json"),
    ("application/jsonx", "Unsupported Media Type: Content-Type 'application/jsonx' is not application/json; "
                          "send Content-Type: application/json"),
    ("application/json; charset=iso-8859-1", "Unsupported Media Type: charset 'iso-8859-1' in Content-Type; a "
                                             "JSON-RPC message is UTF-8: send Content-Type: application/json "
                                             "(charset=utf-8, or no charset)"),
])
def test_any_other_content_type_is_refused_saying_what_to_send(content_type, said):
    assert content_type_refusal(content_type) == said


def test_a_text_plain_initialize_is_refused_415_and_opens_no_session():
    # A page on any loopback origin passes the Origin gate and may POST text/plain with no
    # preflight: its initialize, unreadable to it, still cost a worker each.
    router = unauthenticated_router()
    opened = []
    router.sessions.opening = 0
    router.sessions.open = lambda *args: opened.append("opened")
    body = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}'
    head_bytes = (b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nOrigin: http://localhost:9999\r\n"
                  b"Content-Type: text/plain;charset=UTF-8\r\n")
    parser = RequestParser()
    parser.feed(head_bytes + b"Content-Length: %d\r\n\r\n" % len(body) + body)
    conn = BodyConn()
    App(router).handle(conn, parser.next_request())
    assert conn.answers == [(415, {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": (
        "Unsupported Media Type: Content-Type 'text/plain;charset=UTF-8' is not application/json; "
        "send Content-Type: application/json")}})] and not opened


@pytest.mark.parametrize("content_type", [b"Content-Type: application/x-www-form-urlencoded\r\n", b""])
def test_a_post_without_an_origin_is_not_asked_its_content_type(content_type):
    # No browser sends a POST without an Origin: curl, and the seed's own `curl -d` (a form type), do.
    router = unauthenticated_router()
    opened = []
    router.sessions.opening = 0
    router.sessions.open = lambda *args: opened.append("opened")
    body = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}'
    parser = RequestParser()
    parser.feed(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\n" + content_type
                + b"Content-Length: %d\r\n\r\n" % len(body) + body)
    conn = BodyConn()
    App(router).handle(conn, parser.next_request())
    assert opened == ["opened"] and conn.answers == []
