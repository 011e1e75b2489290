"""End-to-end: JSON the router parses but could not echo or relay (an unpaired
surrogate escape, nesting past the worker's reach, out-of-range numbers) is refused
with -32700 on a live session, which goes on working, and nothing fails in the router."""

import threading

import pytest

from helpers import (Client, Daemon, body_of, peak_rss_kib, raw_exchange, runs_until, status_of, tool_text,
                     wait_until)

DEPTH_OVER = 129   # jsonrpc.MAX_DEPTH + 1


def nested(depth):
    inner = "[" * (depth - 2) + "]" * (depth - 2)
    return '{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{"x":%s}}' % inner


CASES = [
    ("unpaired surrogate id on ping", r'{"jsonrpc":"2.0","id":"\ud800","method":"ping"}',
     "Parse error: a string holds an unpaired UTF-16 surrogate escape (\\uD800-\\uDFFF)"),
    ("unpaired surrogate id on a worker call", r'{"jsonrpc":"2.0","id":"\udc80","method":"tools/list"}',
     "Parse error: a string holds an unpaired UTF-16 surrogate escape (\\uD800-\\uDFFF)"),
    ("unpaired surrogate in a committing tool's arguments",   # once wrote an unreadable image file
     r'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"set_class_comment",'
     r'"arguments":{"className":"Cart","comment":"note \udc80"}}}',
     "Parse error: a string holds an unpaired UTF-16 surrogate escape (\\uD800-\\uDFFF)"),
    ("nesting past the limit", nested(DEPTH_OVER), "Parse error: nested deeper than 128 levels"),
    ("nesting at the json recursion limit", nested(975), "Parse error: nested deeper than 128 levels"),
    ("a number no double holds",
     '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"list_dictionaries","arguments":{},'
     '"_meta":{"progressToken":1e400}}}', "Parse error: the number 1e400 is out of range"),
    ("a 5000-digit number", '{"jsonrpc":"2.0","id":6,"method":"ping","params":{"n":%s}}' % ("7" * 5000),
     "Parse error: a number has more than 4300 digits"),
]


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    with Daemon(tmp_path_factory.mktemp("badmessages"), env={"GS_MCP_SPARE_WORKERS": "1"}) as daemon:
        client = Client(daemon.port)
        client.initialize()
        assert not client.tool("execute_code", code="kept = 41").get("isError")   # work to keep
        yield daemon, client
        client.close()


@pytest.mark.parametrize("name,body,message", CASES, ids=[c[0] for c in CASES])
def test_refused_with_parse_error_and_the_session_keeps_its_work(session, name, body, message):
    daemon, client = session
    resp = client.post(body.encode("utf-8"))
    assert resp.status == 400, resp
    reply = resp.json()
    assert reply["error"] == {"code": -32700, "message": message}
    assert reply["id"] is None
    # the same session, the same worker, its state intact
    kept = client.tool("execute_code", code="kept + 1")
    assert not kept.get("isError") and "42" in tool_text(kept)


@pytest.mark.parametrize("params, message", [
    ({"name": 7}, "tools/call needs a tool name: params.name must be a string, got integer"),
    ({"arguments": {"code": "1"}}, "tools/call needs a tool name: params.name is missing"),
    ({"name": "execute_code", "arguments": "1 + 1"}, "tools/call arguments must be an object, got string"),
])
def test_a_tool_call_without_a_usable_name_or_arguments_says_what_it_got(session, params, message):
    daemon, client = session
    reply = client.call("tools/call", params).json()
    assert reply["error"] == {"code": -32602, "message": message, "data": {"kind": "invalidParams"}}


def test_an_escaped_surrogate_pair_is_one_character_and_echoed(session):
    daemon, client = session
    resp = client.post(r'{"jsonrpc":"2.0","id":"\ud83d\ude00","method":"tools/list"}'.encode())
    assert resp.status == 200 and resp.json()["id"] == "\U0001F600"


def test_a_notification_sent_with_an_id_is_refused_at_once_not_queued_behind_the_call(session, tmp_path):
    # It was relayed as a request: queued behind the session's call in flight, and told
    # "method not found" only once that call ended, so a cancel sent with an id waited for
    # the very call it named and cancelled nothing.
    daemon, client = session
    started, release = tmp_path / "started", tmp_path / "release"
    running = {}
    call = threading.Thread(target=lambda: running.update(
        result=client.tool("execute_code", code=runs_until(started, release))))
    call.start()
    try:
        assert wait_until(started.exists)
        other = Client(daemon.port)
        other.session = client.session
        resp = other.post({"jsonrpc": "2.0", "id": 77, "method": "notifications/cancelled",
                           "params": {"requestId": 1}})
        other.close()
    finally:
        release.touch()
        call.join(30)
    assert resp.status == 400, resp
    assert resp.json() == {"jsonrpc": "2.0", "id": 77, "error": {
        "code": -32600, "message": 'Invalid Request: \'notifications/cancelled\' is a notification: send it without an "id"'}}
    assert "finished" in tool_text(running["result"])   # the call ran to its end, uncancelled


def test_a_tool_call_sent_without_an_id_is_refused_and_not_run(session):
    # Without an id it is a notification in JSON-RPC's terms, and got a bare 202: the
    # client was never told that its call, a commit perhaps, had not run.
    daemon, client = session
    resp = client.post({"jsonrpc": "2.0", "method": "tools/call",
                        "params": {"name": "execute_code", "arguments": {"code": "sent_without_id = 1"}}})
    assert resp.status == 400, resp
    assert resp.json() == {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": (
        'Invalid Request: \'tools/call\' is a request: send it with an "id" '
        '(only notifications/... methods go without one); it was not run')}}
    ran = client.tool("execute_code", code="'sent_without_id' in globals()")
    assert tool_text(ran).strip() == "False", ran


def test_a_request_without_an_id_or_a_method_name_is_refused_naming_the_empty_method(session):
    daemon, client = session
    resp = client.post({"jsonrpc": "2.0", "method": ""})
    assert resp.status == 400, resp
    assert resp.json()["error"] == {"code": -32600, "message": (
        'Invalid Request: the empty method \'\' is a request: send it with an "id" '
        '(only notifications/... methods go without one); it was not run')}


def test_a_method_not_found_is_named_escaped_as_an_unknown_tool_is(session):
    # "method not found" echoed the client's method raw (a right-to-left mark, a BEL).
    daemon, client = session
    resp = client.post({"jsonrpc": "2.0", "id": 8, "method": "no\u202eb\x07"})
    assert resp.json()["error"] == {"code": -32601, "message": "method not found: 'no\\u202eb\\x07'"}
    resp = client.post({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "no\u202eb\x07"}})
    assert resp.json()["error"]["message"].startswith("unknown tool 'no\\u202eb\\x07'")


@pytest.mark.parametrize("method", ["notifications/initialized", "notifications/roots/list_changed",
                                    "notifications/cancelled", "notifications/no_such_one"])
def test_notifications_without_an_id_are_still_accepted(session, method):
    daemon, client = session
    resp = client.post({"jsonrpc": "2.0", "method": method, "params": {"requestId": 12345}})
    assert (resp.status, resp.body) == (202, b"")
    assert client.call("ping").json()["result"] == {}


def test_the_image_stays_readable_for_a_new_session(session):
    daemon, _ = session
    other = Client(daemon.port)
    other.initialize()
    described = other.tool("describe_class", className="Cart")
    assert not described.get("isError") and "udc80" not in tool_text(described)
    other.close()


def test_the_nesting_check_of_a_body_of_a_million_arrays_costs_no_memory_per_array(tmp_path):
    # Walking the parsed arrays made a tuple for each (and held the router's one thread
    # over 5 s for 16 MiB of them): about 150 bytes of peak memory per array, where the
    # parse itself takes about 80.
    arrays = 1 << 20
    wide = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":[' + b"[]," * arrays + b"0]}}"
    deep = wide.replace(b"0]}}", b"[" * 127 + b"]" * 127 + b"]}}")
    with Daemon(tmp_path, env={"GS_MCP_SPARE_WORKERS": "1"}) as daemon:
        before = peak_rss_kib(daemon.proc.pid)
        head = b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
        raw = raw_exchange(daemon.port, head % len(wide) + wide)
        assert (status_of(raw), b"MCP-Session-Id" in body_of(raw)) == (400, True), raw[-300:]
        # (malloc varies: the bound sits between the ~80 the parse takes and the ~150 before)
        assert (peak_rss_kib(daemon.proc.pid) - before) * 1024 / arrays < 120
        raw = raw_exchange(daemon.port, head % len(deep) + deep)
        assert b'"message":"Parse error: nested deeper than 128 levels"' in body_of(raw), raw[-300:]


def test_nothing_failed_inside_the_router(session):
    daemon, client = session
    assert client.call("ping").status == 200
    log = daemon.log_text()
    assert "router callback failed" not in log and "Traceback" not in log, log[-3000:]
