"""End-to-end: CORS for the browser origins listed in GS_MCP_ALLOWED_ORIGINS, through the
real daemon, as a browser client (the MCP Inspector's direct mode) would meet it: the
preflight, then a whole session whose every reply names the page's origin.

No browser runs here; these check the headers a browser's CORS check reads.
"""

import json
import signal
import socket
import subprocess
import sys

import pytest

from helpers import QUICK_STOP, Client, Daemon, body_of, raw_exchange, recv_all, status_of, wait_until
from test_e2e_auth import AuthClient, start_auth_daemon
from test_e2e_lifetime import Exchange

INSPECTOR = "http://localhost:6274"        # listed as an origin: this scheme, host and port only
LISTED = "http://LOCALHOST:6274, app.example"   # app.example: a bare host, any scheme and port
ASKED = "content-type, mcp-protocol-version, mcp-session-id"
STEPS_CODE = "for step in range(1, 3):\n    progress(step, 2)\n'done'"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    d = Daemon(tmp_path_factory.mktemp("cors"), env={"GS_MCP_SPARE_WORKERS": "1", "GS_MCP_ALLOWED_ORIGINS": LISTED})
    d.start()
    yield d
    d.stop()


@pytest.fixture(scope="module")
def unlisted(tmp_path_factory):
    """A daemon with no origin listed."""
    with Daemon(tmp_path_factory.mktemp("unlisted"), env={"GS_MCP_SPARE_WORKERS": "1"}) as d:
        yield d


def preflight(port, origin, method="POST", path="/mcp", **extra):
    return Client(port).request("OPTIONS", path=path, headers={
        "Origin": origin, "Access-Control-Request-Method": method, "Access-Control-Request-Headers": ASKED,
        "Accept": None, **extra})


def assert_granted(resp, origin):
    assert resp.header("access-control-allow-origin") == origin, resp.headers
    assert resp.header("vary") == "Origin"
    exposed = [name.strip().lower() for name in resp.header("access-control-expose-headers").split(",")]
    assert "mcp-session-id" in exposed and "www-authenticate" in exposed


def assert_not_granted(resp, varies=True):
    assert not any(name.startswith("access-control-") for name in resp.headers), resp.headers
    # With origins listed, every reply the app makes varies by Origin (a cache must not
    # mix them up); with none listed, nothing does.
    assert resp.header("vary") == ("Origin" if varies else None)


@pytest.mark.parametrize("origin", [INSPECTOR, "http://app.example", "https://app.example:8443"])
def test_a_listed_origins_preflight_is_granted(daemon, origin):
    resp = preflight(daemon.port, origin)
    assert (resp.status, resp.body) == (204, b"")
    assert_granted(resp, origin)
    assert resp.header("access-control-allow-methods") == "GET, POST, DELETE"
    assert resp.header("access-control-allow-headers") == ASKED
    assert resp.header("access-control-max-age") == "600"
    assert resp.header("access-control-allow-private-network") is None   # not asked


# What the Inspector's direct mode (0.16-1.x, read from its source) sends beyond the
# safelisted, as a browser asks for it: lower case, sorted, no spaces; last-event-id
# when it resumes a stream, authorization when it holds a token.
INSPECTOR_ASKS = "authorization,content-type,last-event-id,mcp-protocol-version,mcp-session-id"


@pytest.mark.parametrize("method", ["POST", "GET", "DELETE"])
def test_the_inspectors_direct_mode_preflight_is_granted_every_header_it_sends(daemon, method):
    resp = preflight(daemon.port, INSPECTOR, method, **{"Access-Control-Request-Headers": INSPECTOR_ASKS})
    assert resp.status == 204
    assert_granted(resp, INSPECTOR)
    assert resp.header("access-control-allow-headers") == INSPECTOR_ASKS


def test_a_listed_origin_asking_for_private_network_access_is_granted_it(daemon):
    # Chrome's Private Network Access: a public page (https://app.example) calling a
    # server on this machine asks for it in its preflight.
    resp = preflight(daemon.port, "https://app.example", **{"Access-Control-Request-Private-Network": "true"})
    assert resp.status == 204 and resp.header("access-control-allow-private-network") == "true"
    refused = preflight(daemon.port, "http://localhost:5173", **{"Access-Control-Request-Private-Network": "true"})
    assert refused.status == 403 and refused.header("access-control-allow-private-network") is None


def test_a_session_from_a_listed_origin_has_its_origin_on_every_reply(daemon):
    c = Client(daemon.port)
    origin = {"Origin": INSPECTOR}
    init = c.post({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                   "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                              "clientInfo": {"name": "browser", "version": "0"}}}, origin)
    assert init.status == 200 and init.header("mcp-session-id")
    assert_granted(init, INSPECTOR)
    c.session = init.header("mcp-session-id")
    assert_granted(c.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, origin), INSPECTOR)
    listed = c.call("tools/list", headers=origin)
    assert listed.status == 200 and listed.json()["result"]["tools"]
    assert_granted(listed, INSPECTOR)
    assert_granted(c.call("ping", headers=origin), INSPECTOR)
    # A reply streamed as SSE (progress first) and the session's GET stream: their heads.
    call = Exchange(daemon.port, "POST", c.session, headers=origin, accept="application/json, text/event-stream",
                    body={"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                          "params": {"name": "execute_code", "arguments": {"code": STEPS_CODE},
                                     "_meta": {"progressToken": "p"}}})
    try:
        assert call.wait_head() == 200 and call.headers["content-type"] == "text/event-stream"
        assert call.headers["access-control-allow-origin"] == INSPECTOR and call.headers["vary"] == "Origin"
        assert [call.message()["method"] for _ in range(2)] == ["notifications/progress"] * 2
        assert call.message()["result"]["structuredContent"]["result"] == "'done'"
    finally:
        call.close()
    stream = Exchange(daemon.port, "GET", c.session, headers=origin)
    try:
        assert stream.wait_head() == 200
        assert stream.headers["access-control-allow-origin"] == INSPECTOR
    finally:
        stream.close()
    assert_granted(c.request("DELETE", headers=origin), INSPECTOR)
    gone = c.call("ping", headers=origin)   # the 404 a browser client must read to start afresh
    assert gone.status == 404
    assert_granted(gone, INSPECTOR)
    c.close()


def test_a_body_too_large_is_refused_readably_for_a_listed_page_only(daemon):
    head = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: %s\r\nContent-Type: application/json\r\n" \
           "Content-Length: %d\r\n\r\n"
    too_large = 16 * 1024 * 1024 + 1   # GS_MCP_MAX_BODY's default, and one more
    listed = raw_exchange(daemon.port, (head % (INSPECTOR, too_large)).encode())
    assert listed.startswith(b"HTTP/1.1 413 ")
    assert b"\r\naccess-control-allow-origin: http://localhost:6274\r\n" in listed.lower()
    unlisted = raw_exchange(daemon.port, (head % ("http://localhost:5173", too_large)).encode())
    assert unlisted.startswith(b"HTTP/1.1 413 ") and b"access-control-allow-origin" not in unlisted.lower()
    c = Client(daemon.port)
    c.initialize()   # and the daemon serves on
    c.close()


@pytest.mark.parametrize("origin", ["http://localhost:5173", "http://127.0.0.1:6274",   # loopback, not listed
                                    "http://localhost:6275", "https://localhost:6274"])  # not the listed origin
def test_an_unlisted_origin_passes_the_gate_but_gets_no_cors(daemon, origin):
    refused = preflight(daemon.port, origin)
    assert refused.status == 403
    assert json.loads(refused.body)["error"]["message"] == (
        "Forbidden: cross-origin requests from %r are not enabled; list the origin in GS_MCP_ALLOWED_ORIGINS" % origin)
    assert_not_granted(refused)
    c = Client(daemon.port)
    c.initialize()
    pinged = c.call("ping", headers={"Origin": origin})
    assert pinged.status == 200
    assert_not_granted(pinged)
    c.close()


def test_a_foreign_origins_preflight_meets_the_origin_gate(daemon):
    resp = preflight(daemon.port, "https://evil.example")
    assert resp.status == 403 and "Origin 'https://evil.example' is not allowed" in resp.json()["error"]["message"]
    assert "listing it in GS_MCP_ALLOWED_ORIGINS" in resp.json()["error"]["message"]   # what admits it
    assert_not_granted(resp)


def test_an_options_request_that_is_no_preflight_is_told_the_methods(daemon):
    c = Client(daemon.port)
    plain = c.request("OPTIONS", headers={"Accept": None})
    assert (plain.status, plain.header("allow"), plain.body) == (204, "GET, POST, DELETE, OPTIONS", b"")
    assert_not_granted(plain)   # no Origin: no CORS, and the answer varies by Origin
    # An Origin alone (no Access-Control-Request-Method) is no preflight either.
    with_origin = c.request("OPTIONS", headers={"Origin": INSPECTOR, "Accept": None})
    assert (with_origin.status, with_origin.header("allow")) == (204, "GET, POST, DELETE, OPTIONS")
    # Without auth there is no metadata document: OPTIONS finds nothing there either.
    assert c.request("OPTIONS", path="/.well-known/oauth-protected-resource", headers={"Accept": None}).status == 404
    assert c.request("PUT", "{}").header("allow") == "GET, POST, DELETE, OPTIONS"
    assert c.request("OPTIONS", path="/other", headers={"Accept": None}).status == 404
    # "OPTIONS *" asks about the server as a whole (RFC 9110 9.3.7): it was a 404
    server = c.request("OPTIONS", path="*", headers={"Accept": None})
    assert (server.status, server.header("allow"), server.body) == (204, "GET, POST, DELETE, OPTIONS", b"")
    c.close()


def test_with_nothing_listed_no_origin_is_granted_cors(unlisted):
    refused = preflight(unlisted.port, INSPECTOR)
    assert refused.status == 403 and "GS_MCP_ALLOWED_ORIGINS" in refused.json()["error"]["message"]
    c = Client(unlisted.port)
    init = c.post({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                   "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                              "clientInfo": {"name": "browser", "version": "0"}}}, {"Origin": INSPECTOR})
    assert init.status == 200
    assert_not_granted(init, varies=False)
    c.close()


def test_under_auth_a_preflight_needs_no_token_and_the_challenge_is_readable(tmp_path):
    server, daemon = start_auth_daemon(tmp_path, GS_MCP_ALLOWED_ORIGINS=INSPECTOR)
    try:
        granted = preflight(daemon.port, INSPECTOR)
        assert granted.status == 204
        assert_granted(granted, INSPECTOR)
        assert preflight(daemon.port, INSPECTOR, "GET", "/.well-known/oauth-protected-resource").header(
            "access-control-allow-methods") == "GET"
        plain = Client(daemon.port).request("OPTIONS", path="/.well-known/oauth-protected-resource",
                                            headers={"Accept": None})
        assert (plain.status, plain.header("allow")) == (204, "GET, OPTIONS")
        challenged = Client(daemon.port).call("ping", headers={"Origin": INSPECTOR})
        assert challenged.status == 401 and "resource_metadata=" in challenged.header("www-authenticate")
        assert_granted(challenged, INSPECTOR)
        metadata = Client(daemon.port).request("GET", path="/.well-known/oauth-protected-resource",
                                               headers={"Origin": INSPECTOR})
        assert metadata.status == 200 and metadata.json()["authorization_servers"] == [server.url]
        assert_granted(metadata, INSPECTOR)
        client = AuthClient(daemon.port, server.idp.mint())
        init = client.post({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                       "clientInfo": {"name": "browser", "version": "0"}}}, {"Origin": INSPECTOR})
        assert init.status == 200
        assert_granted(init, INSPECTOR)
        client.close()
    finally:
        daemon.stop()
        server.close()


def test_the_shutdown_503_names_a_listed_origin_so_its_page_can_read_retry_after(tmp_path):
    # A request waiting behind a running call when SIGTERM comes is answered 503 by the
    # app before any gate: a listed page must still be able to read it.
    d = Daemon(tmp_path, env={"GS_MCP_ALLOWED_ORIGINS": INSPECTOR, "GS_MCP_SPARE_WORKERS": "1", **QUICK_STOP}).start()
    try:
        c = Client(d.port)
        c.initialize()
        slow = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "execute_code", "arguments": {"code": "import time\ntime.sleep(30)"}}})
        init = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {}})
        head = ("POST /mcp HTTP/1.1\r\nHost: localhost\r\nOrigin: %s\r\nContent-Type: application/json\r\n"
                "%sContent-Length: %d\r\n\r\n%s")
        with socket.create_connection(("127.0.0.1", d.port), timeout=15) as s:
            s.sendall((head % (INSPECTOR, "MCP-Session-Id: %s\r\n" % c.session, len(slow), slow)
                       + head % (INSPECTOR, "", len(init), init)).encode())
            assert wait_until(lambda: b"execute_code" in _status(d), timeout=10)   # the call runs
            d.proc.send_signal(signal.SIGTERM)
            raw = recv_all(s)
        _, _, refused = raw.partition(b"HTTP/1.1 503")
        head_lines = refused.split(b"\r\n\r\n", 1)[0].lower()
        assert b"access-control-allow-origin: " + INSPECTOR.encode() in head_lines
        assert b"retry-after: 5" in head_lines and b"shutting down" in body_of(b"HTTP/1.1 503" + refused)
        assert d.proc.wait(10) == 0
    finally:
        if d.proc.poll() is None:
            d.stop()


def _status(daemon):
    return subprocess.run([sys.executable, "-m", "gsmcpd", "status", str(daemon.port), "--json",
                           "--state-dir", str(daemon.state)], capture_output=True).stdout


def test_null_in_any_case_refuses_startup(tmp_path):
    # etc/gsmcpd.conf: "null" is refused; "NULL" had started, listed as a bare host null.
    d = Daemon(tmp_path, env={"GS_MCP_ALLOWED_ORIGINS": "app.example NULL"})
    assert d.refusal() == 2
    assert ("configuration refused: allowed_origins: 'NULL' would let pages of any site in; "
            "list each origin") in d.log_text()


def test_a_host_with_a_port_but_no_scheme_refuses_startup(tmp_path):
    # Matched as a bare host it would grant every scheme and port, not the one written.
    d = Daemon(tmp_path, env={"GS_MCP_ALLOWED_ORIGINS": "app.example:8080"})
    assert d.refusal() == 2
    assert ("configuration refused: allowed_origins: 'app.example:8080' has a port but no scheme: "
            "write the origin (http://app.example:8080 or https://app.example:8080) for that port "
            "alone, or the bare host (app.example) for any") in d.log_text()


SIMPLE_INIT = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}'


def test_an_unlisted_loopback_pages_text_plain_initialize_is_refused_415_and_opens_no_session(unlisted):
    # The Origin gate lets any loopback page in, and a text/plain POST needs no preflight:
    # each such initialize, unreadable to the page, had cost a worker process.
    d = unlisted
    opened = {session["id"] for session in d.status()["sessions"]}   # by the module's other tests
    raw = raw_exchange(d.port, b"POST /mcp HTTP/1.1\r\nHost: localhost:%d\r\nOrigin: http://localhost:9999\r\n"
                       b"Content-Type: text/plain;charset=UTF-8\r\nAccept: */*\r\nContent-Length: %d\r\n\r\n"
                       % (d.port, len(SIMPLE_INIT)) + SIMPLE_INIT)
    assert status_of(raw) == 415, raw
    assert b"mcp-session-id" not in raw.lower()
    assert json.loads(body_of(raw)) == {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": (
        "Unsupported Media Type: Content-Type 'text/plain;charset=UTF-8' is not application/json; "
        "send Content-Type: application/json")}}
    # a form's type, its body not yet sent: refused from the head, nothing buffered
    with socket.create_connection(("127.0.0.1", d.port), timeout=10) as s:
        s.sendall(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nOrigin: http://localhost:9999\r\n"
                  b"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 100000\r\n\r\n")
        raw = recv_all(s)
    assert status_of(raw) == 415 and b"application/x-www-form-urlencoded" in body_of(raw), raw
    # no Content-Type at all (a page's Blob body goes without a preflight too)
    raw = raw_exchange(d.port, b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nOrigin: http://localhost:9999\r\n"
                       b"Content-Length: %d\r\n\r\n" % len(SIMPLE_INIT) + SIMPLE_INIT)
    assert status_of(raw) == 415 and b"sent no Content-Type" in body_of(raw), raw
    assert {session["id"] for session in d.status()["sessions"]} == opened
    Client(d.port).initialize()   # a JSON POST opens one as ever
    assert len(d.status()["sessions"]) == len(opened) + 1
    # without an Origin, no browser's: curl's form type (the seed's `curl -d`) opens one too
    raw = raw_exchange(d.port, b"POST /mcp HTTP/1.1\r\nHost: localhost\r\n"
                       b"Content-Type: application/x-www-form-urlencoded\r\nAccept: */*\r\n"
                       b"Content-Length: %d\r\n\r\n" % len(SIMPLE_INIT) + SIMPLE_INIT)
    assert status_of(raw) == 200 and b"mcp-session-id" in raw.lower(), raw
    assert len(d.status()["sessions"]) == len(opened) + 2
