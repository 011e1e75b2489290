"""Unit tests for JSON-RPC parsing, classification and builders (gsmcpd/wire/jsonrpc.py)."""

import gc
import json
import sys
import tracemalloc

import pytest

from gsmcpd.wire import jsonrpc
from gsmcpd.wire.jsonrpc import (
    INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR,
    REQUEST_TIMEOUT, WORKER_GONE, JsonRpcError, dumps, parse,
)


def body(obj) -> bytes:
    return json.dumps(obj).encode("utf-8")


def refused(raw: bytes) -> JsonRpcError:
    with pytest.raises(JsonRpcError) as caught:
        parse(raw)
    return caught.value


def test_error_code_constants():
    assert (PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR) == (
        -32700, -32600, -32601, -32602, -32603)
    assert (REQUEST_TIMEOUT, WORKER_GONE) == (-32001, -32003)


# ---- classification --------------------------------------------------------------

@pytest.mark.parametrize("msg_id", [1, 0, -5, 2 ** 63, "abc", ""])
def test_request(msg_id):
    raw = {"jsonrpc": "2.0", "id": msg_id, "method": "tools/list", "params": {"cursor": "x"}}
    msg = parse(body(raw))
    assert (msg.kind, msg.id, msg.method, msg.params) == ("request", msg_id, "tools/list", {"cursor": "x"})
    assert msg.raw == raw


def test_request_without_params():
    msg = parse(b'{"jsonrpc":"2.0","id":"p1","method":"ping"}')
    assert (msg.kind, msg.params) == ("request", None)


def test_notification():
    msg = parse(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    assert (msg.kind, msg.id, msg.method) == ("notification", None, "notifications/initialized")


def test_result_response():
    msg = parse(b'{"jsonrpc":"2.0","id":7,"result":{}}')
    assert (msg.kind, msg.id, msg.result, msg.error, msg.method) == ("response", 7, {}, None, None)


def test_error_response():
    msg = parse(b'{"jsonrpc":"2.0","id":"x","error":{"code":-32601,"message":"nope","data":1}}')
    assert (msg.kind, msg.id, msg.error["code"]) == ("response", "x", -32601)


@pytest.mark.parametrize("raw", [
    b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}',
    b'{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"}}',
])
def test_error_response_about_an_unreadable_request_may_lack_an_id(raw):
    # JSON-RPC 2.0 uses id null there; MCP 2025-11-25 allows omitting it
    msg = parse(raw)
    assert (msg.kind, msg.id) == ("response", None)


def test_unicode_and_surrounding_whitespace():
    msg = parse(' \n{"jsonrpc":"2.0","id":1,"method":"caf\u00e9"}\n '.encode("utf-8"))
    assert msg.method == "caf\u00e9"


# ---- -32700 -----------------------------------------------------------------------

@pytest.mark.parametrize("raw", [
    b"", b"   \r\n", b"\xff\xfe", b'{"jsonrpc":"2.0","method":"\xc3"}', b"{", b"{'a':1}",
    b'{"a":1} {"b":2}', b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"x":NaN}}',
    "\ufeff{}".encode("utf-8"), b"[" * 100000,
])
def test_parse_errors(raw):
    err = refused(raw)
    assert err.code == PARSE_ERROR
    assert err.id is None
    assert err.message


def test_a_leading_byte_order_mark_is_dropped_before_parsing_and_only_there():
    body = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
    assert jsonrpc.without_bom(b"\xef\xbb\xbf" + body) == body
    assert parse(jsonrpc.without_bom(b"\xef\xbb\xbf" + body)).method == "ping"
    assert jsonrpc.without_bom(body) is body
    assert jsonrpc.without_bom(b"\xef\xbb\xbf" * 2 + body) == b"\xef\xbb\xbf" + body   # one mark, not any
    assert jsonrpc.without_bom(b" \xef\xbb\xbf" + body) == b" \xef\xbb\xbf" + body
    assert refused(jsonrpc.without_bom(b"\xef\xbb\xbf")).message == "Parse error: empty body"


def nested(depth):
    """A request whose params hold arrays nested so the whole message is `depth` deep."""
    inner = b"[" * (depth - 2) + b"]" * (depth - 2)
    return b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":' + inner + b"}}"


def test_nesting_is_limited_where_the_router_can_still_answer():
    assert parse(nested(jsonrpc.MAX_DEPTH)).params["x"] is not None
    err = refused(nested(jsonrpc.MAX_DEPTH + 1))
    assert (err.code, err.message) == (PARSE_ERROR, "Parse error: nested deeper than 128 levels")
    # as deep as json's own recursion limit: the same answer, not Python's words
    assert refused(nested(5000)).message == "Parse error: nested deeper than 128 levels"
    # many brackets side by side are not depth
    wide = b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"x":[' + b"[]," * 500 + b"{}]}}"
    assert len(parse(wide).params["x"]) == 501


def test_the_shortest_body_too_deep_is_refused_and_one_level_less_is_not():
    # 129 levels take 258 bytes at least: shorter bodies skip the bracket counts
    deepest = b"[" * (jsonrpc.MAX_DEPTH + 1) + b"]" * (jsonrpc.MAX_DEPTH + 1)
    assert len(deepest) == 2 * jsonrpc.MAX_DEPTH + 2
    assert refused(deepest).message == "Parse error: nested deeper than 128 levels"
    assert refused(b"[" * jsonrpc.MAX_DEPTH + b"]" * jsonrpc.MAX_DEPTH).code == jsonrpc.INVALID_REQUEST   # a batch
    assert refused(b"{" + b'"a":{' * jsonrpc.MAX_DEPTH + b"}" * jsonrpc.MAX_DEPTH + b"}").message == \
        "Parse error: nested deeper than 128 levels"



def python_calls_while_parsing(raw):
    calls = 0

    def count(frame, event, arg):
        nonlocal calls
        calls += event == "call"
    # The collector paused, as the router parses a big body: run meanwhile, it resumes or
    # finalizes whatever else is garbage (a generator of pytest's), one more call.
    with jsonrpc.collector_paused():
        sys.setprofile(count)
        try:
            parse(raw)
        finally:
            sys.setprofile(None)
    return calls


def test_the_nesting_check_runs_no_python_code_per_array():
    # Walking the parsed arrays one by one held the router's one thread over 5 s for a
    # 16 MiB body of "[],", every other client waiting.
    few, many = (b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"x":[' + b"[]," * n + b"{}]}}"
                 for n in (200, 20000))
    assert python_calls_while_parsing(many) == python_calls_while_parsing(few)


def depth_of(value):
    if isinstance(value, dict):
        value = list(value.values())
    elif not isinstance(value, list):
        return 0
    return 1 + max(map(depth_of, value), default=0)


@pytest.mark.parametrize("value", [
    {"s": "[[[[", "t": "]]]]"}, {"s": "\\", "t": [[]]}, {"s": '\\"[', "t": ['"', [']']]},
    ["\\\\", "\\[", {"\\": "{"}], {"caf\u00e9 [": ["\u2603]", "\\\""]}, [[], {}, [[{}]], ""], "[", 7, [],
])
@pytest.mark.parametrize("ensure_ascii", [True, False])
def test_nesting_is_read_from_the_bytes_as_the_parsed_value_nests(value, ensure_ascii):
    raw = json.dumps(value, ensure_ascii=ensure_ascii).encode("utf-8")
    assert jsonrpc._nesting(raw) == depth_of(value)


def test_the_nesting_check_of_short_strings_between_brackets_makes_no_object_per_string():
    # Split whole at its quotes, `["["],` over and over made a bytes object a string:
    # 140 bytes of peak memory each, more than the parse's own tree of them.
    body = b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"x":[' + b'["["],' * 100_000 + b"0]}}"
    tracemalloc.start()
    try:
        depth = jsonrpc._nesting(body)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert depth == 4 and peak < 6 * len(body)


@pytest.mark.parametrize("slice_size", [1, 2, 3, 5])
def test_strings_are_told_from_structure_across_the_slices_the_check_reads(monkeypatch, slice_size):
    monkeypatch.setattr(jsonrpc, "_SLICE", slice_size)
    for value in ({"s": '[[[', "t": [["]]", {"u": "{"}]]}, ['"', [']'], "\\[", [[{}]]], [["[", "]"], "]]"]):
        raw = json.dumps(value).encode("utf-8")
        assert jsonrpc._nesting(raw) == depth_of(value), raw


def test_brackets_in_strings_are_no_nesting():
    deep_text = '"%s"' % ("[" * 300)
    msg = parse(b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"x":%s,"y":"\\\\","z":"\\"%s"}}'
                % (deep_text.encode(), b"{" * 200))
    assert msg.params["x"] == "[" * 300 and msg.params["z"] == '"' + "{" * 200


@pytest.mark.parametrize("raw", [
    rb'{"jsonrpc":"2.0","id":"\ud800","method":"ping"}',
    rb'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"ab\uDC80"}}',
    rb'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"\ud83d":1}}',
    rb'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"\ude00\ud83d"}}',  # pair reversed
])
def test_an_unpaired_surrogate_escape_is_refused_before_anything_must_echo_it(raw):
    err = refused(raw)
    assert err.code == PARSE_ERROR
    assert err.message == "Parse error: a string holds an unpaired UTF-16 surrogate escape (\\uD800-\\uDFFF)"


def test_a_surrogate_pair_escape_is_one_character_and_welcome():
    msg = parse(rb'{"jsonrpc":"2.0","id":"\ud83d\ude00","method":"ping"}')
    assert msg.id == "\U0001F600"
    assert dumps(jsonrpc.result(msg.id, {})).decode("utf-8") == '{"jsonrpc":"2.0","id":"\U0001F600","result":{}}'


def test_numbers_no_double_or_int_conversion_holds_are_refused_in_the_clients_words():
    err = refused(b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":1e400}}')
    assert (err.code, err.message) == (PARSE_ERROR, "Parse error: the number 1e400 is out of range")
    assert refused(b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"x":-2E+999}}').message == \
        "Parse error: the number -2E+999 is out of range"
    err = refused(b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":' + b"9" * 5000 + b"}}")
    assert err.message == "Parse error: a number has more than 4300 digits"
    assert "set_int_max_str_digits" not in err.message
    assert parse(b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"x":1.5e300,"y":-0.0}}').params["x"] == 1.5e300


# ---- -32600 -----------------------------------------------------------------------

def test_batch_is_refused_as_unsupported():
    err = refused(b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]')
    assert err.code == INVALID_REQUEST
    assert "batch" in err.message.lower() and "not supported" in err.message
    assert refused(b"[]").code == INVALID_REQUEST


INVALID = {
    "number": 5,
    "string": "hello",
    "null": None,
    "no-jsonrpc": {"id": 1, "method": "ping"},
    "jsonrpc-1.0": {"jsonrpc": "1.0", "id": 1, "method": "ping"},
    "jsonrpc-number": {"jsonrpc": 2.0, "id": 1, "method": "ping"},
    "id-null": {"jsonrpc": "2.0", "id": None, "method": "ping"},
    "id-true": {"jsonrpc": "2.0", "id": True, "method": "ping"},
    "id-float": {"jsonrpc": "2.0", "id": 1.5, "method": "ping"},
    "id-integral-float": {"jsonrpc": "2.0", "id": 1.0, "method": "ping"},
    "id-object": {"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"},
    "id-array": {"jsonrpc": "2.0", "id": [1], "method": "ping"},
    "method-number": {"jsonrpc": "2.0", "id": 1, "method": 5},
    "method-null": {"jsonrpc": "2.0", "method": None},
    "params-array": {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": [1, 2]},
    "params-string": {"jsonrpc": "2.0", "method": "n", "params": "x"},
    "params-null": {"jsonrpc": "2.0", "id": 1, "method": "m", "params": None},
    "result-and-error": {"jsonrpc": "2.0", "id": 1, "result": {}, "error": {"code": 1, "message": "m"}},
    "method-and-result": {"jsonrpc": "2.0", "id": 1, "method": "m", "result": {}},
    "nothing": {"jsonrpc": "2.0", "id": 1},
    "empty-object": {},
    "result-without-id": {"jsonrpc": "2.0", "result": {}},
    "result-id-null": {"jsonrpc": "2.0", "id": None, "result": {}},
    "response-id-float": {"jsonrpc": "2.0", "id": 2.5, "result": {}},
    "error-not-object": {"jsonrpc": "2.0", "id": 1, "error": "bad"},
    "error-code-string": {"jsonrpc": "2.0", "id": 1, "error": {"code": "x", "message": "m"}},
    "error-code-bool": {"jsonrpc": "2.0", "id": 1, "error": {"code": True, "message": "m"}},
    "error-no-message": {"jsonrpc": "2.0", "id": 1, "error": {"code": -1}},
}


@pytest.mark.parametrize("name", list(INVALID))
def test_invalid_requests(name):
    err = refused(body(INVALID[name]))
    assert err.code == INVALID_REQUEST, err.message
    assert err.message.startswith("Invalid Request")


def test_invalid_request_keeps_a_readable_id_for_the_answer():
    err = refused(body({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": [1]}))
    assert err.id == 9
    assert err.response() == {"jsonrpc": "2.0", "id": 9,
                              "error": {"code": INVALID_REQUEST, "message": err.message}}
    assert refused(body({"jsonrpc": "2.0", "id": 1.5, "method": "m"})).id is None


@pytest.mark.parametrize("method", ["notifications/cancelled", "notifications/initialized", "notifications/x"])
def test_a_notification_sent_with_an_id_is_refused_bearing_it(method):
    err = refused(body({"jsonrpc": "2.0", "id": 4, "method": method, "params": {"requestId": 3}}))
    assert (err.code, err.id) == (INVALID_REQUEST, 4)
    assert err.message == f'Invalid Request: {method!r} is a notification: send it without an "id"'
    assert parse(body({"jsonrpc": "2.0", "method": method})).kind == "notification"
    assert parse(body({"jsonrpc": "2.0", "id": 4, "method": "notify/x"})).kind == "request"


@pytest.mark.parametrize("method", ["tools/call", "ping", "initialize", "no/such/method", "notification"])
def test_a_request_method_sent_without_an_id_is_refused_not_taken_for_a_notification(method):
    # MCP names every notification notifications/...: without an id, a tools/call was a
    # notification, answered a bare 202 that never said the tool had not run.
    err = refused(body({"jsonrpc": "2.0", "method": method, "params": {"name": "execute_code"}}))
    assert (err.code, err.id) == (INVALID_REQUEST, None)
    assert err.message == (f'Invalid Request: {method!r} is a request: send it with an "id" '
                           '(only notifications/... methods go without one); it was not run')


@pytest.mark.parametrize("method, named", [("", "the empty method ''"), (" \t", "the blank method ' \\t'")])
def test_a_request_without_an_id_whose_method_shows_nothing_is_named_clearly(method, named):
    # echoed as is, "" made 'Invalid Request:  is a request'
    err = refused(body({"jsonrpc": "2.0", "method": method}))
    assert err.message == (f'Invalid Request: {named} is a request: send it with an "id" '
                           '(only notifications/... methods go without one); it was not run')


def test_a_method_refused_for_its_id_is_named_escaped():
    # Echoed raw: a right-to-left mark or a BEL of the client's went into the reader's text.
    err = refused(body({"jsonrpc": "2.0", "method": "tools/\u202ecall\x07"}))
    assert err.message.startswith("Invalid Request: 'tools/\\u202ecall\\x07' is a request")
    err = refused(body({"jsonrpc": "2.0", "id": 1, "method": "notifications/\u202e"}))
    assert err.message.startswith("Invalid Request: 'notifications/\\u202e' is a notification")


@pytest.mark.parametrize("method", ["notifications/initialized", "notifications/cancelled",
                                    "notifications/roots/list_changed", "notifications/progress",
                                    "notifications/no_such_one"])
def test_every_notifications_method_without_an_id_is_a_notification(method):
    assert parse(body({"jsonrpc": "2.0", "method": method, "params": {}})).kind == "notification"


# ---- builders ----------------------------------------------------------------------

def test_builders():
    assert jsonrpc.result(1, {"tools": []}) == {"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}
    assert jsonrpc.error("a", METHOD_NOT_FOUND, "Method not found") == {
        "jsonrpc": "2.0", "id": "a", "error": {"code": -32601, "message": "Method not found"}}
    assert jsonrpc.error(None, PARSE_ERROR, "bad", data={"at": 3}) == {
        "jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "bad", "data": {"at": 3}}}
    assert jsonrpc.notification("notifications/progress", {"progress": 1}) == {
        "jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}}
    assert jsonrpc.notification("notifications/tools/list_changed") == {
        "jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
    assert jsonrpc.request(3, "ping") == {"jsonrpc": "2.0", "id": 3, "method": "ping"}
    assert jsonrpc.request("r", "sampling/createMessage", {}) == {
        "jsonrpc": "2.0", "id": "r", "method": "sampling/createMessage", "params": {}}


def test_built_messages_parse_back_with_their_kind():
    assert parse(dumps(jsonrpc.request(1, "ping"))).kind == "request"
    assert parse(dumps(jsonrpc.notification("notifications/n"))).kind == "notification"
    assert parse(dumps(jsonrpc.result(1, {}))).kind == "response"
    assert parse(dumps(jsonrpc.error(1, INTERNAL_ERROR, "boom"))).kind == "response"


def test_dumps_is_compact_utf8():
    assert dumps({"a": [1, 2], "b": "caf\u00e9"}) == '{"a":[1,2],"b":"caf\u00e9"}'.encode("utf-8")
    with pytest.raises(ValueError):
        dumps({"x": float("inf")})


@pytest.mark.parametrize("text", [
    "", " ", "  \n", "1", " 1 ", "\t{\"a\": [1, 2.5, \"x\\u00e9\"]}\n", "{\"a\":1}  ", "[[[[[]]]]]",
    "{\"a\":1} x", "{\"a\":1}{}", "{\"a\":", "[1,2", "\"abc", "tru", "\u00a01", "1\u00a0",
    "NaN", "-Infinity", "1e400", "{\"a\": NaN}",
])
def test_loads_is_json_decode_with_its_messages(text):
    # loads skips JSONDecoder.decode's whitespace scans; what it answers, and how it
    # refuses, must be exactly decode's
    def outcome(decode):
        try:
            return "ok", decode(text)
        except ValueError as exc:
            return type(exc).__name__, str(exc)
    assert outcome(jsonrpc.loads) == outcome(jsonrpc._DECODER.decode)


# ---- echoes -------------------------------------------------------------------------

@pytest.mark.parametrize("sent, shown", [
    (b"caf\xc3\xa9.example", "café.example"),   # UTF-8: decoded, not 'cafÃ©.example'
    (b"caf\xff", "caf\\xff"),                    # no UTF-8: the byte, escaped
    (b"\xc3", "\\xc3"),                          # a sequence cut short
    (b"a\\xff", "a\\\\xff"),                     # a backslash sent is told from an escape
    (b"it's", "it\\'s"),                         # and a quote from the echo's own
    (b"\xc2\x85x\xe2\x80\xa8\t", "\\x85x\\u2028\\t"),   # NEL, LINE SEPARATOR, tab: escaped as repr does
    (b"plain.example:8000", "plain.example:8000"),
])
def test_a_header_value_is_echoed_as_the_client_wrote_it(sent, shown):
    # The HTTP parser carries a value's bytes as latin-1 characters, one per byte.
    assert jsonrpc.echoed(sent.decode("latin-1"), header=True) == shown


def test_a_header_value_is_cut_by_characters_as_any_echo_is():
    long = ("é" * 300).encode("utf-8").decode("latin-1")   # 600 bytes, 300 characters
    assert jsonrpc.echoed(long, header=True) == "é" * 200 + "... (300 characters)"
    assert jsonrpc.echoed("x" * 300) == "x" * 200 + "... (300 characters)"   # text as before
    assert jsonrpc.echoed("it's \\") == "it's \\"   # text is echoed unescaped: its callers quote with !r


def test_the_collector_pause_nests_and_ends_even_when_its_block_raises():
    assert gc.isenabled()
    with pytest.raises(JsonRpcError):
        with jsonrpc.collector_paused():
            with jsonrpc.collector_paused():
                assert not gc.isenabled()
            assert not gc.isenabled()   # the inner pause leaves the outer one's to it
            parse(b"[")
    assert gc.isenabled()


def test_a_break_landing_as_the_collector_pauses_leaves_it_running(monkeypatch):
    # A break (SIGINT's KeyboardInterrupt, a cancelled image-wide call parsing modules) is
    # raised at the first bytecode after gc.disable() returns: before the pause's `try`,
    # nothing enabled the collector again, and the worker ran without it from then on.
    disable = gc.disable

    def disable_then_break():
        disable()
        raise KeyboardInterrupt

    monkeypatch.setattr(gc, "disable", disable_then_break)
    assert gc.isenabled()
    with pytest.raises(KeyboardInterrupt):
        with jsonrpc.collector_paused():
            pass
    enabled = gc.isenabled()
    gc.enable()
    assert enabled
