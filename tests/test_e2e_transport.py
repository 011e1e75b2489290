"""End-to-end: the Streamable HTTP transport through the real daemon and real workers."""

import contextlib
import http.client
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from gsmcpd.config import control_socket_path
from gsmcpd.router import control

from helpers import (PROTOCOL, QUICK_STOP, REPO, Client, Daemon, bodies_of, body_of, closed_by_peer, free_port,
                     pid_alive, raw_exchange, recv_all, rss_kib, rss_settles_under, runs_until, status_of, tool_text,
                     wait_for_port, wait_until, worker_pids)
from test_e2e_lifetime import Exchange, worker_pid


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    d = Daemon(tmp_path_factory.mktemp("transport"), env={"GS_MCP_SPARE_WORKERS": "2"})
    d.start()
    yield d
    d.stop()


@pytest.fixture
def client(c):
    return c   # this module's tests call their session `client`


def test_initialize_opens_a_session_with_a_128_bit_id(daemon):
    c = Client(daemon.port)
    result = c.initialize()["result"]
    assert result["protocolVersion"] == "2025-11-25"
    assert result["capabilities"] == {"tools": {}}
    assert result["serverInfo"]["name"] == "gsmcpd"
    assert "title" not in result["serverInfo"]
    assert len(c.session) == 32 and int(c.session, 16) >= 0
    other = Client(daemon.port)
    other.initialize()
    assert other.session != c.session


@pytest.mark.parametrize("asked,answered", [("2025-06-18", "2025-06-18"), ("2025-11-25", "2025-11-25"),
                                            ("2024-11-05", "2025-11-25"), ("1999-01-01", "2025-11-25")])
def test_version_negotiation_echoes_supported_else_latest(daemon, asked, answered):
    c = Client(daemon.port)
    assert c.initialize(version=asked)["result"]["protocolVersion"] == answered


def test_the_readme_curl_sequence(daemon):
    # curl -si localhost:8000/mcp -H 'Content-Type: application/json' -d '{..."method":"initialize"...}'
    init = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}'
    raw = raw_exchange(daemon.port, _post_bytes(init))
    assert status_of(raw) == 200, raw
    head = raw.partition(b"\r\n\r\n")[0].decode().lower()
    sid = [line.split(":", 1)[1].strip() for line in head.split("\r\n") if line.startswith("mcp-session-id")][0]
    raw = raw_exchange(daemon.port, _post_bytes(b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}',
                                                extra=b"MCP-Session-Id: " + sid.encode() + b"\r\n"))
    assert status_of(raw) == 200
    names = [t["name"] for t in json.loads(body_of(raw))["result"]["tools"]]
    assert "status" in names and "execute_code" in names


def test_the_seed_curl_sequence_with_curls_form_type(daemon):
    # curl -si localhost:8000/mcp -d '{...}': curl -d sends a form type, and no Origin
    raw = raw_exchange(daemon.port, _post_bytes(b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}',
                                                content_type=b"application/x-www-form-urlencoded"))
    assert status_of(raw) == 200, raw
    assert json.loads(body_of(raw))["result"]["protocolVersion"]


def test_a_browsers_post_without_a_json_content_type_is_told_what_to_send(daemon):
    # A browser page may send a form type unpreflighted; a browser sends an Origin with every POST.
    raw = raw_exchange(daemon.port, _post_bytes(b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}',
                                                content_type=b"application/x-www-form-urlencoded",
                                                extra=b"Origin: http://localhost:8123\r\n"))
    assert status_of(raw) == 415, raw
    assert json.loads(body_of(raw))["error"]["message"] == (
        "Unsupported Media Type: Content-Type 'application/x-www-form-urlencoded' is not application/json; "
        "send Content-Type: application/json")


def _post_bytes(body, content_type=b"application/json", extra=b""):
    return (b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: " + content_type +
            b"\r\nAccept: */*\r\nContent-Length: " + str(len(body)).encode() + b"\r\n" + extra +
            b"Connection: close\r\n\r\n" + body)


def test_tools_list_and_call(client):
    tools = client.call("tools/list").json()["result"]["tools"]
    names = [t["name"] for t in tools]
    assert names == sorted(names)
    for tool in tools:
        assert tool["inputSchema"]["additionalProperties"] is False
    result = client.tool("execute_code", code="6 * 7")
    assert "42" in tool_text(result)
    assert not result.get("isError")


def test_ping_is_answered_by_the_router(client):
    reply = client.call("ping").json()
    assert reply["result"] == {}


def test_notifications_and_responses_get_202(client):
    assert client.post({"jsonrpc": "2.0", "method": "notifications/initialized"}).status == 202
    resp = client.post({"jsonrpc": "2.0", "id": "srv-999", "result": {}})
    assert resp.status == 202 and resp.body == b""


def test_missing_unknown_and_ended_sessions(daemon):
    c = Client(daemon.port)
    resp = c.call("tools/list")
    assert resp.status == 400
    c.session = "0" * 32
    assert c.call("tools/list").status == 404
    assert c.request("DELETE").status == 404
    assert c.request("GET").status == 404
    c.session = None
    assert c.request("DELETE").status == 400
    assert c.request("GET").status == 400
    c.initialize()
    assert c.delete().status == 200
    assert c.call("tools/list").status == 404
    assert c.delete().status == 404
    # initialize too: every request naming an ended session gets 404 (MCP), none opens one
    ended = c.session
    reply = c.call("initialize", {"protocolVersion": PROTOCOL, "capabilities": {},
                                  "clientInfo": {"name": "t", "version": "0"}})
    assert reply.status == 404 and reply.header("mcp-session-id") is None
    assert "initialize a new session, without MCP-Session-Id" in reply.json()["error"]["message"]
    c.session = None
    c.initialize()
    assert c.session != ended and c.call("ping").status == 200


def test_an_initialize_naming_the_clients_live_session_is_refused_and_opens_nothing(daemon):
    # A session begins with initialize, and MCP has a new one asked for without an id:
    # this opened a second session beside the first.
    c = Client(daemon.port)
    c.initialize()
    assert c.tool("execute_code", code="kept = 41")
    sessions = {row["id"] for row in daemon.status()["sessions"]}
    reply = c.post({"jsonrpc": "2.0", "id": 99, "method": "initialize", "params": {
        "protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})
    assert reply.status == 400 and reply.header("mcp-session-id") is None, reply
    assert reply.json() == {"jsonrpc": "2.0", "id": 99, "error": {"code": -32600, "message": (
        "Invalid Request: the session MCP-Session-Id names is already initialized; "
        "to open another, send initialize without MCP-Session-Id")}}
    assert tool_text(c.tool("execute_code", code="kept + 1")).strip() == "42"   # the session goes on
    assert {row["id"] for row in daemon.status()["sessions"]} <= sessions   # none opened
    c.close()


def test_other_methods_and_paths(daemon):
    c = Client(daemon.port)
    assert c.request("PUT", "{}").status == 405
    assert c.request("PATCH", "{}").status == 405
    assert c.request("POST", "{}", path="/other").status == 404


def test_a_path_with_percent_encoded_unreserved_characters_is_the_endpoint(daemon):
    # RFC 3986 6.2.2.2: /%6Dcp is /mcp (it was 404); an encoded "/" is not one
    c = Client(daemon.port)
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "gsmcpd-tests", "version": "0"}}}
    opened = c.request("POST", init, path="/%6D%63%70")
    assert opened.status == 200, opened
    c.session = opened.header("mcp-session-id")
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    assert c.request("POST", ping, path="/%6dcp?x=1").json() == {"jsonrpc": "2.0", "id": 2, "result": {}}
    assert c.request("POST", ping, path="/mcp%2F").status == 404
    assert c.request("POST", ping).status == 200   # served on
    c.close()


def test_a_requests_refusal_for_its_session_or_version_header_bears_its_id(daemon):
    # JSON-RPC: an error's id is the request's, null only when it could not be read.
    c = Client(daemon.port)
    c.initialize()
    ended = Client(daemon.port)
    ended.initialize()
    assert ended.delete().status == 200
    init = {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
    for method, params, headers, status in [
            ("tools/list", None, {"MCP-Session-Id": None}, 400),
            ("tools/list", None, {"MCP-Session-Id": ended.session}, 404),
            ("initialize", init, {"MCP-Session-Id": ended.session}, 404),
            ("ping", None, {"MCP-Protocol-Version": "2099-01-01"}, 400)]:
        message = {"jsonrpc": "2.0", "id": "mine-7", "method": method}
        if params:
            message["params"] = params
        reply = c.post(message, headers)
        assert (reply.status, reply.json()["id"]) == (status, "mine-7"), (method, headers, reply)
    note = c.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, {"MCP-Session-Id": ended.session})
    assert (note.status, note.json()["id"]) == (404, None)
    c.close()
    ended.close()


def test_unsupported_protocol_version_header_is_400(client):
    resp = client.call("tools/list", headers={"MCP-Protocol-Version": "2099-01-01"})
    assert resp.status == 400
    assert client.call("tools/list", headers={"MCP-Protocol-Version": "2025-06-18"}).status == 200


@pytest.mark.parametrize("origin,status", [("http://evil.example", 403), ("http://localhost:3000", 200),
                                           ("http://127.0.0.1", 200), ("http://[::1]:8080", 200),
                                           ("http://[::ffff:7f00:1]:8080", 200), ("http://[::ffff:7f00:2]", 200),
                                           ("http://[::7f00:1]", 403), ("http://127.1", 403),
                                           ("null", 403)])
def test_origin_validation(client, origin, status):
    assert client.call("ping", headers={"Origin": origin}).status == status


def test_host_validation_against_dns_rebinding(client):
    assert client.call("ping", headers={"Host": "evil.example:8000"}).status == 403
    assert client.call("ping", headers={"Host": "localhost:8000"}).status == 200
    # curl http://[::ffff:127.0.0.1]:PORT/mcp reaches 127.0.0.1, naming it so: it was refused 403
    assert client.call("ping", headers={"Host": "[::ffff:127.0.0.1]:8000"}).status == 200


def test_undeclared_capabilities_are_method_not_found(client):
    for method in ("resources/list", "prompts/list", "logging/setLevel", "completion/complete"):
        reply = client.call(method, {}).json()
        assert reply["error"]["code"] == -32601, (method, reply)
    # A client's huge method name comes back cut, not whole.
    reply = client.call("m" * 100_000, {}).json()
    assert reply["error"]["code"] == -32601
    assert reply["error"]["message"].endswith("... (100000 characters)'"), reply   # quoted as a tool name is
    assert len(reply["error"]["message"]) < 300


def test_get_opens_an_sse_stream_with_keepalives(daemon):
    c = Client(daemon.port)
    c.initialize()
    conn = http.client.HTTPConnection("127.0.0.1", daemon.port, timeout=10)
    conn.request("GET", "/mcp", headers={"Accept": "text/event-stream", "MCP-Session-Id": c.session,
                                         "MCP-Protocol-Version": "2025-11-25"})
    resp = conn.getresponse()
    assert resp.status == 200
    assert resp.getheader("Content-Type") == "text/event-stream"
    conn.close()


def test_two_requests_on_one_session_are_answered_in_order(daemon, client, tmp_path):
    # The worker's own record of what ran when: the second request, sent on another
    # connection while the first runs, must run after it, never beside it.
    client.tool("execute_code", code="ran = []")
    results = {}
    started, release = tmp_path / "started", tmp_path / "release"
    # The first runs until the test lets it go, once the second waits behind it.
    slow = "ran.append('slow-start')\n" + runs_until(started, release) + "\nran.append('slow-end')\n'slow'"
    second = Client(daemon.port)
    second.session = client.session
    calls = [threading.Thread(target=lambda: results.update(slow=client.tool("execute_code", code=slow))),
             threading.Thread(target=lambda: results.update(
                 fast=second.tool("execute_code", code="ran.append('fast')\nlist(ran)")))]
    calls[0].start()
    assert wait_until(started.exists, timeout=30)   # it runs: the second is sent behind it
    calls[1].start()
    assert wait_until(lambda: [row["queued"] for row in daemon.status().get("sessions", ())
                               if row["id"] == client.session] == [1], timeout=30)
    release.touch()
    for call in calls:
        call.join(30)
    assert "'slow'" in tool_text(results["slow"])
    assert "['slow-start', 'slow-end', 'fast']" in tool_text(results["fast"])


def answered_while_a_call_runs(a, tmp_path, request):
    """The order in which `a`'s call and `request()` were answered: the call runs until
    the test lets it go, which it does only once `request()` is answered (or after 20 s,
    if it waits behind the call: then the call ends first and the order says so)."""
    started, release = tmp_path / "started", tmp_path / "release"
    order = []

    def long_call():
        a.tool("execute_code", code=runs_until(started, release, "A"))
        order.append("call")

    t = threading.Thread(target=long_call)
    t.start()
    assert wait_until(started.exists)   # a's call is running in its worker
    request()
    order.append("request")
    release.touch()
    t.join()
    return order


def test_one_session_does_not_wait_for_another(daemon, tmp_path):
    a, b = Client(daemon.port), Client(daemon.port)
    a.initialize()
    b.initialize()
    assert answered_while_a_call_runs(a, tmp_path, lambda: b.tool("execute_code", code="'B'")) == [
        "request", "call"]


def test_tools_list_does_not_wait_behind_the_sessions_running_call_once_listed(daemon, tmp_path):
    # The MCP SDK lists the tools after a call's result, to check it against the tool's
    # outputSchema: that waited behind every call running or queued in the session.
    a = Client(daemon.port)
    a.initialize()
    first = a.call("tools/list").json()["result"]        # the worker's answer
    b = Client(daemon.port)
    b.session = a.session
    listed = []
    request = {"jsonrpc": "2.0", "id": "again", "method": "tools/list", "params": {"_meta": {}}}
    assert answered_while_a_call_runs(a, tmp_path, lambda: listed.append(b.post(request))) == [
        "request", "call"]
    assert listed[0].status == 200 and listed[0].json() == {"jsonrpc": "2.0", "id": "again", "result": first}
    paged = b.call("tools/list", {"cursor": "next"}).json()   # a page is the worker's to refuse
    assert paged["error"]["code"] == -32602 and "invalid cursor" in paged["error"]["message"]


def test_pipelined_requests_on_one_connection_are_answered_in_order(client, daemon):
    bodies = [json.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                          "params": {"name": "execute_code", "arguments": {"code": "%d" % i}}}).encode()
              for i in range(1, 4)]
    data = b"".join(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                    b"MCP-Session-Id: " + client.session.encode() + b"\r\nContent-Length: " +
                    str(len(b)).encode() + b"\r\n\r\n" + b for b in bodies)
    with socket.create_connection(("127.0.0.1", daemon.port), timeout=10) as s:
        s.sendall(data)
        buf = b""
        while buf.count(b"HTTP/1.1 200") < 3 or not buf.rstrip().endswith(b"}"):
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
    ids = [json.loads(part.split(b"\r\n\r\n", 1)[1].split(b"HTTP/1.1")[0])["id"]
           for part in buf.split(b"HTTP/1.1 200")[1:]]
    assert ids == [1, 2, 3]


def test_kill_9_of_a_worker_mid_call_answers_with_an_error_then_404(daemon, tmp_path):
    c = Client(daemon.port)
    c.initialize()
    pid = json.loads(tool_text(c.tool("execute_code", code="import os, json\njson.dumps(os.getpid())")).strip("'"))
    holder = {}
    started = tmp_path / "started"

    def victim():
        holder["resp"] = c.call("tools/call", {"name": "execute_code", "arguments": {
            "code": "open(%r, 'w').close()\nimport time\ntime.sleep(30)" % str(started)}})

    t = threading.Thread(target=victim)
    t.start()
    assert wait_until(started.exists)   # mid-call
    os.kill(pid, signal.SIGKILL)
    t.join(15)
    reply = holder["resp"].json()
    assert reply["id"] is not None and reply["error"]["code"] == -32003
    assert c.call("tools/list").status == 404
    # and everyone else is still served
    d = Client(daemon.port)
    d.initialize()
    assert d.call("ping").status == 200


def test_workers_hold_no_client_or_listening_socket(daemon, client):
    pid = int(tool_text(client.tool("execute_code", code="import os\nos.getpid()")).strip())
    sockets = []
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            target = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        if target.startswith("socket:"):
            sockets.append(target[len("socket:["):-1])
    tcp = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.readlines()[1:]:
                tcp.add(line.split()[9])
    assert sockets, "the worker must hold its frame socket"
    assert not (set(sockets) & tcp), "a worker holds a TCP socket"


def test_router_death_takes_its_workers_with_it(tmp_path):
    with Daemon(tmp_path, env={"GS_MCP_SPARE_WORKERS": "1"}) as d:
        c = Client(d.port)
        c.initialize()
        assert wait_until(lambda: len(worker_pids(d.proc.pid)) >= 2)
        pids = worker_pids(d.proc.pid)
        os.kill(d.proc.pid, signal.SIGKILL)
        d.proc.wait(30)
    assert wait_until(lambda: not any(pid_alive(p) for p in pids), timeout=30), pids


def test_sigterm_stops_everything_and_exits_0(tmp_path):
    with Daemon(tmp_path) as d:
        c = Client(d.port)
        c.initialize()
        assert wait_until(lambda: worker_pids(d.proc.pid))
        pids = worker_pids(d.proc.pid)
        d.proc.send_signal(signal.SIGTERM)
        assert d.proc.wait(30) == 0      # bounds for a busy machine: each wait ends on success
    assert wait_until(lambda: not any(pid_alive(p) for p in pids), timeout=30)


def test_sessions_beyond_the_maximum_are_refused_with_503(tmp_path):
    with Daemon(tmp_path, env={"GS_MCP_MAX_SESSIONS": "2", "GS_MCP_TOOLSETS": "bench"}) as d:
        a, b, c = Client(d.port), Client(d.port), Client(d.port)
        a.initialize()
        b.initialize()
        refused = c.call("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                        "clientInfo": {"name": "t", "version": "0"}})
        assert refused.status == 503
        assert refused.json()["error"]["message"] == \
            "Service Unavailable: 2 sessions open or opening, the configured maximum (GS_MCP_MAX_SESSIONS)"
        assert a.delete().status == 200
        c.initialize()  # room again


def test_a_half_closed_client_still_gets_its_reply(client, daemon):
    body = json.dumps({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                       "params": {"name": "execute_code", "arguments": {"code": "import time\ntime.sleep(0.3)\n9"}}})
    with socket.create_connection(("127.0.0.1", daemon.port), timeout=10) as s:
        s.sendall(("POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                   "MCP-Session-Id: %s\r\nContent-Length: %d\r\n\r\n%s" % (client.session, len(body), body)).encode())
        s.shutdown(socket.SHUT_WR)
        raw = recv_all(s)
    assert status_of(raw) == 200
    assert json.loads(body_of(raw))["id"] == 9


def _pipelined(session, messages):
    out = b""
    for message in messages:
        body = json.dumps(message).encode()
        out += (b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                b"MCP-Session-Id: " + session.encode() + b"\r\nContent-Length: " +
                str(len(body)).encode() + b"\r\n\r\n" + body)
    return out


def _execute(i, code):
    return {"jsonrpc": "2.0", "id": i, "method": "tools/call",
            "params": {"name": "execute_code", "arguments": {"code": code}}}


def test_pipelined_requests_then_a_half_close_are_all_run_and_answered(client, daemon):
    data = _pipelined(client.session, [_execute(1, "log = [1]"), _execute(2, "log.append(2)"),
                                       _execute(3, "log.append(3)")])
    with socket.create_connection(("127.0.0.1", daemon.port), timeout=10) as s:
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        raw = recv_all(s)
    assert [r["id"] for r in [json.loads(body) for body in bodies_of(raw)]] == [1, 2, 3]
    assert tool_text(client.tool("execute_code", code="log")).strip() == "[1, 2, 3]"


def test_pings_then_a_call_then_a_half_close_are_all_answered(client, daemon):
    ping = {"jsonrpc": "2.0", "method": "ping"}
    data = _pipelined(client.session, [dict(ping, id=1), dict(ping, id=2), _execute(3, "'ran'")])
    with socket.create_connection(("127.0.0.1", daemon.port), timeout=10) as s:
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        raw = recv_all(s)
    replies = [json.loads(body) for body in bodies_of(raw)]
    assert [r["id"] for r in replies] == [1, 2, 3]
    assert "'ran'" in tool_text(replies[2]["result"])


def test_head_requests_get_a_head_alone_on_a_connection_that_goes_on(daemon):
    with socket.create_connection(("127.0.0.1", daemon.port), timeout=10) as s:
        s.sendall(b"HEAD /mcp HTTP/1.1\r\nHost: localhost\r\n\r\n"
                  b"HEAD /x HTTP/1.1\r\nHost: localhost\r\n\r\n"
                  b"POST /x HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        raw = recv_all(s)
    first, second, third = raw.split(b"HTTP/1.1 ")[1:]
    assert first.startswith(b"405 ") and first.endswith(b"\r\n\r\n") and b"Content-Length: " in first
    assert second.startswith(b"404 ") and second.endswith(b"\r\n\r\n") and b"Content-Length: " in second
    assert third.startswith(b"404 ") and third.endswith(b"not found: the MCP endpoint is /mcp\n")


def test_a_client_writing_on_its_open_stream_is_not_read_without_limit(tmp_path):
    with Daemon(tmp_path, env={"GS_MCP_KEEPALIVE_INTERVAL": "0.2"}) as d:
        clients, streams = [], []
        for _ in range(4):
            c = Client(d.port)
            c.initialize()
            clients.append(c)
        before = rss_kib(d.proc.pid)
        for c in clients:
            s = socket.create_connection(("127.0.0.1", d.port), timeout=10)
            s.sendall(("GET /mcp HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\n"
                       "MCP-Session-Id: %s\r\n\r\n" % c.session).encode())
            streams.append(s)
        block = b"x" * 65536

        def write_on(s):
            sent = 0
            try:
                while sent < 17 << 20:
                    sent += s.send(block)
            except socket.timeout:
                pass
            return sent

        for s in streams:
            s.settimeout(0.5)
        sent = {}                        # each writes on until the router stops reading,
        writers = [threading.Thread(target=lambda s=s: sent.__setitem__(s, write_on(s))) for s in streams]
        for writer in writers:           # all four at once
            writer.start()
        for writer in writers:
            writer.join(60)
        assert len(sent) == len(streams) and all(n < 17 << 20 for n in sent.values()), sent
        assert rss_kib(d.proc.pid) - before < 16 * 1024
        for s in streams:                # and each stream goes on, with nothing inside it
            s.settimeout(5)
            got = b""
            while got.count(b": keepalive") < 2:
                chunk = s.recv(65536)
                assert chunk, got
                got += chunk
            # one response head, the stream's; no 413 inside it (not a bare b"413": the
            # stream's random session id may hold those digits)
            assert got.count(b"HTTP/1.1 ") == 1 and b"Too Large" not in got
        for s in streams:
            s.close()
        assert clients[0].call("ping").status == 200


# Progress floods a reply stream its client never reads: past STREAM_BACKLOG (16 MiB)
# or the write budget, the router drops the connection. The steps are big, since the
# router passes a call's progress on at most NOTIFY_BURST at once (then paced): those
# alone must run past the backlog.
FLOOD = "for step in range(15):\n    progress(step + 1, None, 'p' * 2_000_000)\n"
# A fixed mmap threshold: glibc's moving one keeps freed 2 MB buffers on the heap once
# one has been freed, so RSS would say nothing of what the router still holds.
FLOOD_ENV = {"GS_MCP_TOOLSETS": "execution", "MALLOC_MMAP_THRESHOLD_": "131072"}


def _flood_unread_streams(d, clients, code):
    """Each client's session runs `code` with its reply on an SSE stream the client
    never reads, until the router drops each; returns the unread sockets."""
    socks = []
    for c in clients:
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "execute_code", "arguments": {"code": code}, "_meta": {"progressToken": 1}}}).encode()
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect(("127.0.0.1", d.port))
        s.sendall(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nAccept: application/json, text/event-stream\r\n"
                  b"Content-Type: application/json\r\nMCP-Session-Id: %s\r\nContent-Length: %d\r\n\r\n%s"
                  % (c.session.encode(), len(body), body))
        socks.append(s)
    assert wait_until(lambda: d.log_text().count("dropping connection from") == len(clients), timeout=60)
    return socks


def _flooded_sessions(d, code):
    """Two sessions whose calls run `code` into streams nobody reads, until each is
    dropped: (their clients, the router's RSS before, the unread sockets)."""
    clients = [Client(d.port) for _ in range(2)]
    for c in clients:
        c.initialize()
    before = rss_kib(d.proc.pid)
    return clients, before, _flood_unread_streams(d, clients, code)


def test_a_reply_stream_dropped_for_not_reading_frees_its_backlog(tmp_path):
    # Its connection's idle timer, cancelled at the close, waits minutes in the
    # timer heap: it must not keep the connection and its unsent megabytes alive.
    with Daemon(tmp_path, env=FLOOD_ENV) as d:
        clients, before, socks = _flooded_sessions(d, FLOOD + "'done'")
        for c in clients:
            assert c.delete().status == 200
        rss_settles_under(d, before, 16 * 1024)
        for s in socks:
            s.close()


def test_a_client_gone_mid_body_leaves_none_of_it_behind(tmp_path):
    # What the parser held of the body goes with the connection, not minutes later. (A
    # fixed mmap threshold: glibc's moving one would keep a freed body on the heap.)
    with Daemon(tmp_path, env={"GS_MCP_TOOLSETS": "execution", "GS_MCP_TRACE": "1",
                               "MALLOC_MMAP_THRESHOLD_": "131072"}) as d:
        assert Client(d.port).call("ping").status == 400    # warmed up: one request served
        before = rss_kib(d.proc.pid)
        for _ in range(2):
            with socket.create_connection(("127.0.0.1", d.port), timeout=10) as s:
                s.sendall(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                          b"Content-Length: 15000000\r\n\r\n" + b" " * 12_000_000)
        assert wait_until(lambda: d.log_text().count("client closed mid-request") == 2, timeout=30)
        rss_settles_under(d, before, 4 * 1024)


def test_a_reply_stream_dropped_while_its_call_runs_on_frees_its_backlog(tmp_path):
    # The call still in flight holds its connection, to answer on; not what it never sent.
    with Daemon(tmp_path, env={**FLOOD_ENV, **QUICK_STOP}) as d:
        clients, before, socks = _flooded_sessions(d, FLOOD + "import time\ntime.sleep(600)")
        rss_settles_under(d, before, 16 * 1024)
        assert clients[0].call("ping").status == 200     # the sessions, calls and all, go on
        for s in socks:
            s.close()


def test_a_stream_closed_while_its_call_runs_on_lets_go_of_what_was_pipelined_behind_it(tmp_path):
    # The call holds its connection to answer on; not the requests read behind it, which
    # a closed connection will never answer. (Fixed mmap threshold: see above.)
    pipelined = 240_000           # under PIPELINE_BUFFER: read in full while the call runs
    with Daemon(tmp_path, env={"GS_MCP_TOOLSETS": "execution", "GS_MCP_TRACE": "1",
                               "MALLOC_MMAP_THRESHOLD_": "131072", **QUICK_STOP}) as d:
        clients = [Client(d.port) for _ in range(2)]
        for c in clients:
            c.initialize()
        before = rss_kib(d.proc.pid)
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "execute_code", "_meta": {"progressToken": 1},
            "arguments": {"code": "progress(1, None, 'started')\nimport time\ntime.sleep(600)"}}}).encode()
        for c in clients:
            with socket.create_connection(("127.0.0.1", d.port), timeout=10) as s:
                s.sendall(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nAccept: application/json, text/event-stream\r\n"
                          b"Content-Type: application/json\r\nMCP-Session-Id: %s\r\nContent-Length: %d\r\n\r\n%s"
                          % (c.session.encode(), len(body), body) + _post_bytes(b" " * pipelined))
                got = b""
                while b"started" not in got:     # the reply is a stream: closing it loses it
                    chunk = s.recv(65536)
                    assert chunk, got
                    got += chunk
        assert wait_until(lambda: d.log_text().count("client closed mid-request") == 2, timeout=30)
        # One kept is ~235 KiB (measured: 476 for both); what the two calls still running
        # hold came to 128 KiB in a clean clone's run (the bound was 128): 192 tells them apart.
        rss_settles_under(d, before, 192)
        assert clients[0].call("ping").status == 200


def test_one_shot_connections_leave_nothing_behind_in_the_router(tmp_path):
    # Each closed connection leaves its idle timer, cancelled, in the heap for minutes:
    # a client that opens a connection per request (curl in a loop) must not grow the
    # router by it (about 175 bytes each, a million at 4000 a second).
    request = (b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
               b"Connection: close\r\nContent-Length: 40\r\n\r\n" + b'{"jsonrpc":"2.0","id":1,"method":"ping"}')

    def one_shots(count):
        for _ in range(count):
            with socket.create_connection(("127.0.0.1", d.port), timeout=10) as s:
                s.sendall(request)
                assert status_of(recv_all(s)) == 400    # no session: answered all the same

    with Daemon(tmp_path, env={"GS_MCP_TOOLSETS": "execution"}) as d:
        one_shots(2000)     # warmed up
        before = rss_kib(d.proc.pid)
        threads = [threading.Thread(target=one_shots, args=(5000,)) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert rss_kib(d.proc.pid) - before < 1536


def test_a_client_that_expects_100_continue_gets_it_before_sending_its_body(client, daemon):
    body = json.dumps({"jsonrpc": "2.0", "id": 11, "method": "ping"}).encode()
    head = ("POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            "MCP-Session-Id: %s\r\nExpect: 100-continue\r\nContent-Length: %d\r\n\r\n"
            % (client.session, len(body))).encode()
    with socket.create_connection(("127.0.0.1", daemon.port), timeout=10) as s:
        for _ in range(2):     # and again on the same connection: the same head, parsed once
            s.sendall(head)
            assert s.recv(25) == b"HTTP/1.1 100 Continue\r\n\r\n"   # the body waits for it
            s.sendall(body)
            raw = b""
            while not body_of(raw).endswith(b"}"):
                raw += s.recv(65536)
            assert status_of(raw) == 200 and json.loads(body_of(raw))["id"] == 11


def test_during_shutdown_a_waiting_request_gets_503_not_a_session(tmp_path):
    with Daemon(tmp_path, env={"GS_MCP_TOOLSETS": "execution", **QUICK_STOP}) as d:
        c = Client(d.port)
        c.initialize()
        slow = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                           "params": {"name": "execute_code", "arguments": {"code": "import time\ntime.sleep(30)"}}})
        init = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {}})
        json_post = "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        head = json_post + "MCP-Session-Id: %s\r\nContent-Length: %d\r\n\r\n%s"
        with socket.create_connection(("127.0.0.1", d.port), timeout=15) as s:
            s.sendall((head % (c.session, len(slow), slow)).encode() +
                      (json_post + "Content-Length: %d\r\n\r\n%s" % (len(init), init)).encode())
            assert wait_until(lambda: "tools/call" in json.dumps(d.status()), timeout=10)
            d.proc.send_signal(signal.SIGTERM)
            raw = recv_all(s)
        first, _, rest = raw.partition(b"HTTP/1.1 503")
        assert json.loads(body_of(first))["error"]["code"] == -32003   # its session ended under it
        assert b"shutting down" in rest
        assert d.proc.wait(10) == 0


def test_a_worker_that_sends_a_garbage_frame_is_ended_and_the_router_serves_on(daemon):
    c = Client(daemon.port)
    c.initialize()
    code = ("import os, socket, time\n"
            "for fd in range(3, 64):\n"
            "    try:\n"
            "        s = socket.socket(fileno=os.dup(fd))\n"
            "    except OSError:\n"
            "        continue\n"
            "    if s.family == socket.AF_UNIX:\n"
            "        s.send(b'\\xff\\xff\\xff\\xff not a frame')\n"
            "    s.detach()\n"
            "time.sleep(5)\n")
    reply = c.call("tools/call", {"name": "execute_code", "arguments": {"code": code}}).json()
    assert reply["error"]["code"] == -32003 and reply["id"] is not None
    assert c.call("ping").status == 404
    assert wait_until(lambda: "sent a bad frame" in daemon.log_text())
    other = Client(daemon.port)
    other.initialize()
    assert "ok" in tool_text(other.tool("execute_code", code="'ok'"))


@contextlib.contextmanager
def _serving_with_few_descriptors(tmp_path, limit=96, spares=1):
    """(port, process) of a daemon whose descriptor limit is `limit`, soft and hard;
    its log is tmp_path / "log"."""
    port = free_port()
    env = dict(os.environ, GS_MCP_STATE_DIR=str(tmp_path / "state"), PYTHONPATH=str(REPO),
               GS_MCP_TOOLSETS="bench", GS_MCP_SPARE_WORKERS=str(spares), GS_MCP_MAX_SESSIONS="10")

    def low_limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

    log = open(tmp_path / "log", "wb")
    proc = subprocess.Popen([sys.executable, "-m", "gsmcpd", "serve", "--port", str(port)], env=env,
                            cwd=str(REPO), stdout=log, stderr=subprocess.STDOUT, preexec_fn=low_limit)
    try:
        wait_for_port(port, proc=proc)
        yield port, proc
        assert proc.poll() is None
        assert b"router callback failed" not in (tmp_path / "log").read_bytes()
    finally:
        proc.terminate()
        proc.wait(10)
        log.close()


def test_out_of_descriptors_an_idle_connection_makes_room_for_a_new_one(tmp_path):
    # The descriptor limit can be below GS_MCP_MAX_CONNECTIONS (4096): keep-alive
    # connections between requests then held every descriptor, and new clients waited
    # in the backlog for the 300 s keep-alive, as they did at the cap before eviction.
    with _serving_with_few_descriptors(tmp_path, limit=64) as (port, _):
        opened = Client(port, timeout=10)
        opened.initialize()
        served = []
        for _ in range(100):   # more connections than the daemon has descriptors for
            sock = socket.create_connection(("127.0.0.1", port), timeout=5)
            sock.sendall(b"GET /nope HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            assert status_of(sock.recv(4096)) == 404   # not left waiting (timeout: OSError)
            served.append(sock)
        # The ones idle longest went first, one for each new one: those left open are
        # the newest, as many as there are descriptors for (a needless second eviction
        # per accept left a handful).
        still_open = [not closed_by_peer(sock) for sock in served]
        assert still_open == sorted(still_open) and not still_open[0], still_open
        assert still_open.count(True) >= 20, still_open
        log = (tmp_path / "log").read_bytes()
        # said once per spell, not once for each of the ~60 connections closed (up to 3:
        # a descriptor freed meanwhile, a spare's, lets one accept through and ends a spell)
        assert 1 <= log.count(b"out of file descriptors: closing a lingering one, else the one idle longest") <= 3
        assert b"pausing accepts" not in log
        # The session whose connection went first is untouched: its client reconnects.
        again = Client(port, timeout=10)
        again.session = opened.session
        assert again.call("ping").json()["result"] == {}
        # New sessions' workers need descriptors too: idle connections make room. (The
        # first may find a spare taken before the flood; the second needs a new one.)
        for _ in range(2):
            assert _serves(Client(port, timeout=10))
        assert b"out of file descriptors for the worker of a new session: closed" in (tmp_path / "log").read_bytes()
        for sock in served:
            sock.close()


def test_out_of_descriptors_clients_connecting_cannot_take_those_freed_for_a_new_sessions_worker(tmp_path):
    # Idle connections closed to make room for a session's worker freed descriptors that
    # clients connecting before the worker arrived took: the open got a 503.
    with _serving_with_few_descriptors(tmp_path, limit=64, spares=0) as (port, _):
        flooding, held = threading.Event(), []

        def flood():   # clients connecting all along, each holding its connection open
            while not flooding.is_set():
                try:
                    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
                    sock.sendall(b"GET /nope HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                    sock.recv(4096)
                except OSError:
                    continue
                held.append(sock)

        flooder = threading.Thread(target=flood)
        flooder.start()
        try:
            assert wait_until(lambda: len(held) > 100)   # more than the daemon has descriptors for
            opened = []
            for _ in range(5):
                client = Client(port, timeout=10)
                opened.append(_serves(client))
                client.close()
        finally:
            flooding.set()
            flooder.join()
            for sock in held:
                sock.close()
        assert opened == [True] * 5
        assert b"out of file descriptors for the worker of a new session: closed" in (tmp_path / "log").read_bytes()


def test_out_of_descriptors_with_no_connection_idle_pauses_accepting_and_recovers(tmp_path):
    # Each hog is reading a body its head's gates let in, so none is idle, none is an
    # unchecked request (those are closed for room), and none makes room.
    with _serving_with_few_descriptors(tmp_path) as (port, _):
        hogs = []
        for _ in range(120):  # more than the daemon has descriptors for
            hogs.append(socket.create_connection(("127.0.0.1", port), timeout=5))
            hogs[-1].sendall(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                             b"Content-Length: 100000\r\n\r\n")   # its body never sent
        assert wait_until(lambda: b"pausing accepts" in (tmp_path / "log").read_bytes())
        # `gsmcpd status` meanwhile: its accept fails too, paused alike (it was a traceback
        # logged on every turn of the loop, spinning, for as long as it lasted), or, once
        # the hogs' read timeouts have freed descriptors, it is answered.
        status = socket.socket(socket.AF_UNIX)
        status.connect(str(control_socket_path(tmp_path / "state", port)))
        status.sendall(control.encode({"op": "status"}))
        status.settimeout(0.2)

        def refused_or_answered():
            if b"control socket: accept failed" in (tmp_path / "log").read_bytes():
                return True
            try:
                return bool(status.recv(1))
            except socket.timeout:
                return False
        assert wait_until(refused_or_answered, timeout=30)
        status.close()
        for hog in hogs:
            hog.close()
        c = Client(port, timeout=10)
        assert wait_until(lambda: _serves(c), timeout=15)
        assert wait_until(lambda: _status_answers(tmp_path / "state", port), timeout=15)


def test_a_control_line_nested_too_deeply_is_answered_and_the_router_serves_on(daemon):
    # It was a RecursionError out of the router's callback: a traceback in the log, and the
    # control client got no reply until the read timeout closed its connection.
    with socket.socket(socket.AF_UNIX) as status:
        status.settimeout(30)
        status.connect(str(control_socket_path(daemon.state, daemon.port)))
        status.sendall(b"[" * (control.MAX_LINE - 1) + b"\n")
        reply = recv_all(status)
    assert json.loads(reply) == {"ok": False, "error": "not a JSON line: nested too deeply"}
    assert _status_answers(daemon.state, daemon.port)
    c = Client(daemon.port, timeout=10)
    c.initialize()
    assert c.call("ping").json()["result"] == {}
    assert c.delete().status == 200
    c.close()
    assert "Traceback" not in daemon.log_text()


def test_a_control_line_over_the_limit_gets_its_error_reply_not_a_reset(daemon):
    # The router answered after 64 KiB and closed with the rest unread: the client's
    # connection was reset and its reply lost.
    with socket.socket(socket.AF_UNIX) as status:
        status.settimeout(30)
        status.connect(str(control_socket_path(daemon.state, daemon.port)))
        status.sendall(b"x" * (3 * control.MAX_LINE))
        status.shutdown(socket.SHUT_WR)
        reply = recv_all(status)
    assert json.loads(reply) == {"ok": False, "error": "request line longer than 64 KiB"}
    assert _status_answers(daemon.state, daemon.port)


def _status_answers(state_dir, port):
    try:
        return isinstance(control.query(state_dir, port), dict)
    except (OSError, control.ControlError):
        return False


def _serves(client):
    """True once an initialize opens a session. Until the router has its descriptors
    back, the connection may fail, or the open be refused 503 (a spare that arrived
    while it had none to take it with)."""
    try:
        client.session = None
        reply = client.call("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                           "clientInfo": {"name": "t", "version": "0"}})
        if reply.status == 503:
            assert "file descriptors" in reply.json()["error"]["message"], reply
            return False
        assert reply.status == 200 and reply.header("mcp-session-id"), reply
        return True
    except OSError:
        client.close()
        client.conn = http.client.HTTPConnection("127.0.0.1", client.port, timeout=10)
        return False


def test_when_no_worker_can_be_started_initialize_gets_503_and_the_router_lives(tmp_path):

    port = free_port()
    env = dict(os.environ, GS_MCP_STATE_DIR=str(tmp_path / "state"), PYTHONPATH=str(REPO),
               GS_MCP_TOOLSETS="bench", GS_MCP_SPARE_WORKERS="0", GS_MCP_MAX_SESSIONS="500")
    log = open(tmp_path / "log", "wb")
    proc = subprocess.Popen([sys.executable, "-m", "gsmcpd", "serve", "--port", str(port)], env=env,
                            cwd=str(REPO), stdout=log, stderr=subprocess.STDOUT,
                            preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64)))
    try:
        wait_for_port(port, proc=proc)
        c = Client(port, timeout=20)
        opened, refused = [], None
        for _ in range(60):  # each session holds descriptors in the router: they run out
            resp = c.call("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                         "clientInfo": {"name": "t", "version": "0"}})
            if resp.status != 200:
                refused = resp
                break
            opened.append(resp.header("mcp-session-id"))
        assert refused is not None and refused.status == 503, refused
        assert "cannot start a worker process" in refused.json()["error"]["message"]
        for sid in opened[:10]:  # free descriptors (once those workers are gone): sessions open again
            c.session = sid
            assert c.delete().status == 200
        c.session = None
        init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
        assert wait_until(lambda: c.call("initialize", init).status == 200, timeout=15)
        assert proc.poll() is None
    finally:
        proc.terminate()
        proc.wait(10)
        log.close()


def test_a_slow_client_that_keeps_reading_gets_its_whole_reply(client, daemon):
    # The router drops a client that reads nothing for 5 s, not one that is slow: this
    # one reads ~100 KB/s for 6 s, then the rest. Its small receive buffer keeps most
    # of the 6 MB reply in the router all the while.
    code = "import sys\nprint('o' * 999000)\nsys.stderr.write('e' * 999000)\n'r' * 999000"
    body = json.dumps({"jsonrpc": "2.0", "id": "big", "method": "tools/call",
                       "params": {"name": "execute_code", "arguments": {"code": code}}}).encode()
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    s.settimeout(30)
    s.connect(("127.0.0.1", daemon.port))
    s.sendall(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nAccept: application/json\r\nContent-Type: application/json\r\n"
              b"MCP-Session-Id: %s\r\nContent-Length: %d\r\n\r\n%s" % (client.session.encode(), len(body), body))
    got = b""
    slow_until = time.monotonic() + 6
    while not bodies_complete(got):
        chunk = s.recv(10 * 1024 if time.monotonic() < slow_until else 1 << 20)
        assert chunk, "connection dropped after %d bytes" % len(got)
        got += chunk
        if time.monotonic() < slow_until:
            time.sleep(0.1)
    s.close()
    reply = json.loads(body_of(got))
    assert reply["id"] == "big" and len(reply["result"]["structuredContent"]["stdout"]) > 999000


def bodies_complete(raw):
    head, sep, rest = raw.partition(b"\r\n\r\n")
    if not sep:
        return False
    length = int([line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")][0])
    return len(rest) >= length


def test_delete_stops_a_running_call_at_once(daemon, tmp_path):
    # The call is answered "session ended": it must not act on after that, say commit.
    c = Client(daemon.port)
    c.initialize()
    pid = worker_pid(c)
    started, finished = tmp_path / "started", tmp_path / "finished"
    # 5 s: time enough for the DELETE to arrive on a busy machine, and a call left to run on
    # would still finish (and be seen) within the wait for its worker's end below.
    code = "open(%r, 'w').close()\nimport time\ntime.sleep(5)\nopen(%r, 'w').close()" % (str(started), str(finished))
    call = Exchange(daemon.port, "POST", c.session, {"jsonrpc": "2.0", "id": "doomed", "method": "tools/call",
                    "params": {"name": "execute_code", "arguments": {"code": code}}}, accept="application/json")
    assert wait_until(started.exists)
    assert c.delete().status == 200
    reply = call.json()
    assert reply["id"] == "doomed" and reply["error"]["message"] == "session ended: client sent DELETE"
    assert wait_until(lambda: not pid_alive(pid))
    assert not finished.exists(), "the call ran on after DELETE"
