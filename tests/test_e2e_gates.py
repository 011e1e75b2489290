"""End-to-end: the Host and Origin gate (DNS rebinding) through the real daemon.

Raw sockets, since a client library would not send these headers or targets.
"""

import json
import subprocess
import sys

import pytest

from helpers import REPO, Client, Daemon, body_of, free_port, raw_exchange, status_of

ALLOWED = "http://App.Example, https://other.example:8443, v1.app.example"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    d = Daemon(tmp_path_factory.mktemp("gates"), env={"GS_MCP_SPARE_WORKERS": "1", "GS_MCP_TRACE": "1",
                                                                "GS_MCP_ALLOWED_ORIGINS": ALLOWED})
    d.start()
    yield d
    d.stop()


@pytest.fixture(scope="module")
def session(daemon):
    c = Client(daemon.port)
    c.initialize()
    yield c.session
    c.close()


def ping(daemon, session, head, target=b"/mcp"):
    """A raw POST of `ping` on the session, with the given header lines; (status, body)."""
    body = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
    raw = raw_exchange(daemon.port, b"POST " + target + b" HTTP/1.1\r\n" + head +
                       b"MCP-Session-Id: " + session.encode() + b"\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
                       b"Connection: close\r\n\r\n" % len(body) + body)
    return status_of(raw), json.loads(body_of(raw))


@pytest.mark.parametrize("host", [b"127.0.0.1", b"localhost:8000", b"[::1]", b"[::1]:8000",
                                  b"[0:0:0:0:0:0:0:1]:8000", b"[0::1]"])   # as curl sends what was typed
def test_a_loopback_host_is_served(daemon, session, host):
    assert ping(daemon, session, b"Host: " + host + b"\r\n") == (200, {"jsonrpc": "2.0", "id": 1, "result": {}})


def test_a_loopback_origin_is_served_however_its_address_is_written(daemon, session):
    assert ping(daemon, session, b"Host: [::1]\r\nOrigin: http://[0:0::1]:3000\r\n")[0] == 200


@pytest.mark.parametrize("host", [b"evil.example", b"evil.example:8000", b"127.0.0.1.evil.example"])
def test_a_foreign_host_is_forbidden(daemon, session, host):
    status, reply = ping(daemon, session, b"Host: " + host + b"\r\n")
    assert status == 403 and "is not this server" in reply["error"]["message"]
    assert "listed in GS_MCP_ALLOWED_ORIGINS" in reply["error"]["message"]   # what admits it


@pytest.mark.parametrize("host", [b"[::1]evil.example", b"http://127.0.0.1", b"127.0.0.1/mcp",
                                  b"evil.example@127.0.0.1", b"127.0.0.1:80x",
                                  b"[localhost]", b"[127.0.0.1]:8000"])   # brackets hold no name
def test_a_malformed_host_is_a_bad_request(daemon, session, host):
    status, reply = ping(daemon, session, b"Host: " + host + b"\r\n")
    assert status == 400 and reply["error"]["message"] == "Bad Request: malformed Host header %r" % host.decode()


@pytest.mark.parametrize("host", [b"localhost:99999", b"localhost:65536", b"127.0.0.1:0", b"[::1]:000",
                                  b"localhost:" + b"9" * 5000])
def test_a_host_whose_port_is_outside_1_to_65535_is_a_bad_request(daemon, session, host):
    status, reply = ping(daemon, session, b"Host: " + host + b"\r\n")
    # (a long value is echoed shortened)
    assert status == 400 and reply["error"]["message"].startswith("Bad Request: malformed Host header '%s"
                                                                  % host[:40].decode()), reply
    target_status, _ = ping(daemon, session, b"Host: 127.0.0.1\r\n", b"http://" + host + b"/mcp")
    assert target_status == 400


@pytest.mark.parametrize("origin", [b"http://localhost:99999", b"http://127.0.0.1:0",
                                    b"http://app.example:" + b"9" * 5000])   # listed host: CORS reads the port
def test_an_origin_whose_port_is_outside_1_to_65535_is_forbidden(daemon, session, origin):
    status, reply = ping(daemon, session, b"Host: 127.0.0.1\r\nOrigin: " + origin + b"\r\n")
    assert status == 403, reply
    assert reply["error"]["message"].startswith("Forbidden: malformed Origin '%s" % origin[:40].decode())


@pytest.mark.parametrize("origin", [b"http://", b"http://:8080"])
def test_an_origin_naming_no_host_is_forbidden_as_malformed(daemon, session, origin):
    # it was told to be listed in GS_MCP_ALLOWED_ORIGINS, which refuses an empty host at startup
    status, reply = ping(daemon, session, b"Host: 127.0.0.1\r\nOrigin: " + origin + b"\r\n")
    assert status == 403 and reply["error"]["message"].startswith(
        "Forbidden: malformed Origin '%s' (an origin is scheme://host[:port]" % origin.decode()), reply


@pytest.mark.parametrize("origin", [b"http://[localhost]:3000", b"http://[127.0.0.1]"])
def test_an_origin_with_a_name_in_brackets_is_forbidden_as_malformed(daemon, session, origin):
    # read as the loopback host it names, it passed the gate: brackets hold an IPv6 address
    status, reply = ping(daemon, session, b"Host: 127.0.0.1\r\nOrigin: " + origin + b"\r\n")
    assert status == 403 and reply["error"]["message"].startswith(
        "Forbidden: malformed Origin '%s' (an origin is scheme://host[:port]" % origin.decode()), reply


@pytest.mark.parametrize("head", [b"Host: [v1.app.example]\r\n",
                                  b"Host: 127.0.0.1\r\nOrigin: http://[v1.app.example]\r\n"])
def test_an_ipvfuture_literal_is_not_the_listed_name_it_spells(daemon, session, head):
    # "[v1.app.example]" lost its brackets and was served as the listed v1.app.example.
    assert ping(daemon, session, head.replace(b"[v1.app.example]", b"v1.app.example"))[0] == 200
    status, reply = ping(daemon, session, head)
    assert status == 403 and "is not" in reply["error"]["message"], reply


def test_a_port_with_leading_zeros_is_the_port_it_names(daemon, session):
    assert ping(daemon, session, b"Host: localhost:" + b"0" * 5000 + b"8000\r\nOrigin: http://app.example:"
                + b"0" * 5000 + b"80\r\n")[0] == 200


@pytest.mark.parametrize("origin,status", [(b"http://127.0.0.1:3000", 200), (b"http://evil.example", 403),
                                           (b"http://evil.example@127.0.0.1", 403), (b"null", 403),
                                           # configured as origins; matched by host
                                           (b"http://app.example", 200), (b"https://other.example:8443", 200),
                                           (b"http://other.example", 200), (b"http://app.example.evil", 403)])
def test_origin(daemon, session, origin, status):
    assert ping(daemon, session, b"Host: 127.0.0.1\r\nOrigin: " + origin + b"\r\n")[0] == status


@pytest.mark.parametrize("head, said", [
    (b"Host: 127.0.0.1\r\nOrigin: https://caf\xc3\xa9.example\r\n",   # UTF-8: as sent, not 'cafÃ©'
     (403, "Forbidden: malformed Origin 'https://café.example' (an origin is scheme://host[:port], "
           "the host ASCII")),
    (b"Host: caf\xc3\xa9.example\r\n", (400, "Bad Request: malformed Host header 'café.example'")),
    (b"Host: 127.0.0.1\r\nOrigin: http://caf\xe9\xff.example\r\n",       # no UTF-8: its bytes escaped
     (403, "Forbidden: malformed Origin 'http://caf\\xe9\\xff.example'")),
])
def test_a_refused_header_value_is_named_as_the_client_sent_it(daemon, session, head, said):
    status, reply = ping(daemon, session, head)
    assert (status, reply["error"]["message"][:len(said[1])]) == said


def test_the_trace_shows_a_session_id_header_as_the_client_sent_it(daemon):
    raw = raw_exchange(daemon.port, b"DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                       b"MCP-Session-Id: \xc3\xa9t\xc3\xa9-0123456789\r\nConnection: close\r\n\r\n")
    assert status_of(raw) == 404
    assert "--> DELETE /mcp session été-0123... " in daemon.log_text()


@pytest.mark.parametrize("target,host,status", [
    (b"http://evil.example/mcp", b"127.0.0.1", 403),          # the target's host is the host, not Host
    (b"HTTP://evil.example:8000/mcp", b"127.0.0.1", 403),
    (b"http://127.0.0.1/mcp", b"evil.example", 200),          # Host is ignored (RFC 9112 3.2.2)
    (b"http://[::1]:8000/mcp", b"127.0.0.1", 200),
    (b"http://evil.example@127.0.0.1/mcp", b"127.0.0.1", 400),
    (b"http:///mcp", b"127.0.0.1", 400),                     # no host: invalid (RFC 9110 4.2.1), not foreign
    (b"http://127.0.0.1/mcp#top", b"127.0.0.1", 200),         # a fragment is dropped, as after /mcp
    (b"/mcp#top", b"127.0.0.1", 200),
])
def test_an_absolute_form_target_names_the_host(daemon, session, target, host, status):
    assert ping(daemon, session, b"Host: " + host + b"\r\n", target)[0] == status


@pytest.mark.parametrize("value", ["*", "http://app.example/path", "http://app.example:port"])
def test_an_unusable_allowed_origin_stops_the_daemon_at_startup(tmp_path, value):
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), "GS_MCP_STATE_DIR": str(tmp_path / "state"),
           "GS_MCP_ALLOWED_ORIGINS": value}
    done = subprocess.run([sys.executable, "-m", "gsmcpd", "serve", "--port", str(free_port())], cwd=str(REPO),
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert "configuration refused: allowed_origins: " in done.stderr and repr(value) in done.stderr


def test_a_get_stream_refused_with_q_0_is_406(daemon, session):
    for accept in (b"text/event-stream;q=0", b"text/event-stream;q=0, */*"):
        raw = raw_exchange(daemon.port, b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: " + accept +
                           b"\r\nMCP-Session-Id: " + session.encode() + b"\r\nConnection: close\r\n\r\n")
        assert status_of(raw) == 406, raw


def test_a_post_whose_client_refuses_sse_with_q_0_gets_json(daemon):
    c = Client(daemon.port)
    c.initialize()
    progress = "for step in range(1, 3):\n    progress(step, 2)\n'done'"
    resp = c.post({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                   "params": {"name": "execute_code", "arguments": {"code": progress}, "_meta": {"progressToken": 1}}},
                  headers={"Accept": "application/json, text/event-stream;q=0"})
    c.close()
    assert resp.status == 200 and resp.header("content-type") == "application/json"
    assert resp.json()["result"]["structuredContent"]["result"] == "'done'"


def test_bound_to_localhost_in_capitals_the_host_gate_still_forbids_a_foreign_host(tmp_path):
    # The router took only "localhost" in lower case for loopback, as the configuration's check
    # did not: served without auth, and without the Host gate against DNS rebinding.
    d = Daemon(tmp_path, env={"GS_MCP_HOST": "LOCALHOST", "GS_MCP_SPARE_WORKERS": "0"})
    d.start()
    try:
        c = Client(d.port)
        c.initialize()
        assert ping(d, c.session, b"Host: localhost\r\n")[0] == 200
        status, reply = ping(d, c.session, b"Host: evil.example\r\n")
        c.close()
        assert status == 403 and "is not this server" in reply["error"]["message"], reply
    finally:
        d.stop()
