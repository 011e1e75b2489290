"""Message-trace lines: shape, escaping, the cap, session prefixes, no headers."""

import json

from gsmcpd.router import trace

INIT = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}'


def test_inbound_line_shape():
    line = trace.format_inbound("POST", "/mcp", None, INIT, 4096)
    assert line == f"--> POST /mcp session - {len(INIT)} chars: {INIT.decode()}"


def test_session_id_is_shown_as_a_prefix():
    session = "71ff1f5c9a0b4c2d8e7f6a5b4c3d2e1f"
    line = trace.format_inbound("POST", "/mcp", session, b"{}", 4096)
    assert line.startswith("--> POST /mcp session 71ff1f5c... 2 chars: {}")
    assert session not in line
    assert trace.short_id("abc") == "abc"


def test_real_newlines_and_tabs_are_escaped_so_one_message_is_one_line():
    body = json.dumps({"code": "x"}).encode()[:-1] + b', "src": "def f():\n\treturn 1\r\n"}'
    line = trace.format_inbound("POST", "/mcp", "s1", body, None)
    assert "\n" not in line and "\t" not in line and "\r" not in line
    assert 'def f():\\n\\treturn 1\\r\\n' in line
    assert trace.escape("bell\x07 nul\x00") == "bell\\x07 nul\\x00"


def test_every_line_break_splitlines_knows_is_escaped():
    breaks = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
    line = trace.format_inbound("POST", "/mcp", None, ("a" + breaks + "z").encode("utf-8"), None)
    assert len(line.splitlines()) == 1
    assert "a\\n\\r\\x0b\\x0c\\x1c\\x1d\\x1e\\x85\\u2028\\u2029z" in line
    assert trace.escape("\x9f\xa0é") == "\\x9f\xa0é"   # C1 escaped; printable Latin-1 kept


def test_bidirectional_controls_are_escaped_so_a_line_shows_as_written():
    # "\u202eecila" would show as "alice", and the rest of its log line reversed.
    controls = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
    assert trace.escape("a" + controls + "z") == (
        "a\\u061c\\u200e\\u200f\\u202a\\u202b\\u202c\\u202d\\u202e\\u2066\\u2067\\u2068\\u2069z")
    assert trace.shown_user("\u202eecila") == "\\u202eecila"
    assert trace.escape("\u200d\u05d0") == "\u200d\u05d0"   # a joiner, Hebrew text: kept


def test_json_escapes_in_the_body_stay_as_written():
    line = trace.format_inbound("POST", "/mcp", None, b'{"a":"x\\ny"}', None)
    assert line.endswith('{"a":"x\\ny"}')


def test_cap_counts_characters_and_says_how_many_more():
    body = ("é" * 10).encode()
    line = trace.format_inbound("POST", "/mcp", None, body, 4)
    assert line == "--> POST /mcp session - 10 chars: éééé...(+6 more)"
    exact = trace.format_inbound("POST", "/mcp", None, b"abcd", 4)
    assert exact.endswith("4 chars: abcd")
    whole = trace.format_inbound("POST", "/mcp", None, b"x" * 10000, None)
    assert whole.endswith("x" * 10000) and "more)" not in whole


def test_escaping_does_not_count_against_the_cap():
    line = trace.format_inbound("POST", "/mcp", None, b"\n\n\nabc", 3)
    assert line.endswith("6 chars: \\n\\n\\n...(+3 more)")


def test_empty_body_and_invalid_utf8():
    assert trace.format_inbound("GET", "/mcp", "abc", b"", 4096) == \
        "--> GET /mcp session abc 0 chars"
    line = trace.format_inbound("POST", "/mcp", None, b"\xff\xfe{}", 4096)
    assert line.endswith("4 chars: \ufffd\ufffd{}")


def test_no_headers_can_reach_a_line():
    # The formatter takes no headers at all: a bearer token is never an argument.
    names = trace.format_inbound.__code__.co_varnames[:trace.format_inbound.__code__.co_argcount]
    assert names == ("method", "path", "session_id", "body", "limit")


def test_hostile_method_path_and_session_cannot_forge_lines():
    line = trace.format_inbound("PO\nST", "/mcp\r\nX: y", "ab\ncd", b"{}", 10)
    assert "\n" not in line and "\r" not in line
    assert "PO\\nST /mcp\\r\\nX: y session ab\\ncd" in line


def test_unreadable_request():
    assert trace.format_unreadable("client closed, timed out, or over-long head") == \
        "--> (unreadable request: client closed, timed out, or over-long head)"
    assert trace.format_unreadable("bad\nreason") == "--> (unreadable request: bad\\nreason)"


def test_a_request_answered_from_its_head_shows_its_framing_not_a_body():
    assert trace.format_head("POST", "/mcp", "71FF1F5C-aaaa", "Content-Length 9000000") == \
        "--> POST /mcp session 71FF1F5C... (body not read: answered from its head; Content-Length 9000000)"
    assert trace.format_head("POST\n", "/mcp\r", None, "chunked") == \
        "--> POST\\n /mcp\\r session - (body not read: answered from its head; chunked)"


def test_outbound_lines():
    body = b'{"jsonrpc":"2.0","id":1,"result":{}}'
    assert trace.format_outbound(200, "0123456789", body, 4096) == \
        f"<-- 200 session 01234567... {len(body)} chars: {body.decode()}"
    assert trace.format_outbound("SSE", None, b"x" * 9, 4) == \
        "<-- SSE session - 9 chars: xxxx...(+5 more)"
    assert trace.format_outbound(202, "s", b"", 4096) == "<-- 202 session s 0 chars"


def test_startup_line_says_whether_and_how():
    assert trace.startup_line("inbound", 4096) == \
        "message trace: ON (inbound) -- bodies capped at 4096 chars"
    assert trace.startup_line("both", None) == \
        "message trace: ON (inbound and outbound) -- whole bodies, no cap"
    assert trace.startup_line("off", 4096) == "message trace: off"


def test_a_request_id_is_shown_quoted_as_repr_and_cut_at_the_cap():
    assert trace.shown_id("srv-1") == "'srv-1'"
    assert trace.shown_id(1) == "1"   # an integer id unquoted: 1 and "1" read apart
    assert trace.shown_id("a\nb") == "'a\\nb'"
    huge = trace.shown_id("A" * 1_000_000)
    assert huge == "'" + "A" * (trace.ID_CAP - 1) + "..."


def test_a_request_id_shows_as_its_whole_repr_would_cut():
    for request_id in ("it's", 'say "hi"', "x" * (trace.ID_CAP - 2), "x" * (trace.ID_CAP - 1),
                       "y" * trace.ID_CAP, "z" * (trace.ID_CAP + 5), "\u2028" * 50, -7,
                       int("9" * 4000)):   # the longest int the parser takes reprs too
        assert trace.shown_id(request_id) == trace.shown(repr(request_id), trace.ID_CAP)


def test_a_long_string_id_is_cut_before_repr_reads_it():
    reprs = []

    class Watched(str):
        def __repr__(self):
            reprs.append(len(self))
            return super().__repr__()

    assert trace.shown_id(Watched("B" * 100_000)) == "'" + "B" * (trace.ID_CAP - 1) + "..."
    assert reprs == []   # the cut prefix is a plain str: the whole was never repr'd


def test_an_int_id_too_long_to_repr_is_shown_by_its_size():
    assert trace.shown_id(10 ** 5000) == "<an integer of 16610 bits>"


def test_a_long_method_path_or_framing_is_cut_whatever_the_body_limit():
    # The limit caps the body only: a 60 KB path made a 60 KB line under GS_MCP_TRACE_LIMIT=512.
    cut = "/" + "a" * (trace.HEAD_FIELD_CAP - 1) + "..."
    assert trace.format_inbound("GET", "/" + "a" * 60_000, None, b"", 512) == "--> GET %s session - 0 chars" % cut
    assert trace.format_inbound("M" * 60_000, "/mcp", None, b"", 512).startswith(
        "--> %s... /mcp session -" % ("M" * trace.HEAD_FIELD_CAP))
    assert trace.format_head("POST", "/" + "a" * 60_000, None, "Content-Length " + "5, " * 20_000) == (
        "--> POST %s session - (body not read: answered from its head; Content-Length %s...)"
        % (cut, ("5, " * 100)[:trace.HEAD_FIELD_CAP - len("Content-Length ")]))


def test_a_lone_surrogate_is_escaped_so_the_line_can_be_written():
    # A claim or a worker's text may hold one (a JSON \ud800 escape): kept raw, the log
    # file's strict UTF-8 could not write the line, and it was lost.
    text = trace.shown("eve\ud800x\udfff", 64)
    assert text == "eve\\ud800x\\udfff"
    assert text.encode("utf-8")
