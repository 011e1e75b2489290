"""Unit tests for SSE encoding (gsmcpd/wire/sse.py)."""

import pytest

from gsmcpd.wire.sse import comment, event


def parse_sse(stream: bytes):
    """A minimal client-side parser per the WHATWG event-stream rules."""
    events, fields, data = [], {}, []
    for line in stream.decode("utf-8").split("\n"):
        if line == "":
            if data or fields:
                events.append({**fields, "data": "\n".join(data)})
            fields, data = {}, []
        elif line.startswith(":"):
            continue
        else:
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "data":
                data.append(value)
            else:
                fields[name] = value
    return events


def test_single_line_event():
    assert event('{"jsonrpc":"2.0"}') == b'data: {"jsonrpc":"2.0"}\n\n'


def test_event_with_name_and_id():
    raw = event("payload", event="message", id="s1-42")
    assert raw == b"event: message\nid: s1-42\ndata: payload\n\n"
    assert parse_sse(raw) == [{"event": "message", "id": "s1-42", "data": "payload"}]


def test_multi_line_data_is_split_into_data_lines():
    raw = event("one\ntwo\r\nthree\rfour")
    assert raw == b"data: one\ndata: two\ndata: three\ndata: four\n\n"
    assert parse_sse(raw) == [{"data": "one\ntwo\nthree\nfour"}]


def test_empty_and_trailing_newline_data_round_trip():
    assert event("", id="prime") == b"id: prime\ndata: \n\n"     # the MCP priming event
    assert parse_sse(event("end\n")) == [{"data": "end\n"}]


def test_unicode_is_utf8():
    assert event("caf\u00e9") == "data: caf\u00e9\n\n".encode("utf-8")


def test_several_events_concatenate():
    stream = event("a", id="1") + comment("keepalive") + event("b\nc", id="2")
    assert parse_sse(stream) == [{"id": "1", "data": "a"}, {"id": "2", "data": "b\nc"}]


def test_comment():
    assert comment("keepalive") == b": keepalive\n\n"
    assert comment("") == b": \n\n"
    assert comment("a\nb") == b": a\n: b\n\n"
    assert parse_sse(comment("x")) == []


@pytest.mark.parametrize("kwargs", [{"event": "a\nb"}, {"id": "1\r2"}, {"id": "x\0"}, {"event": "a\r"}])
def test_fields_must_be_single_lines(kwargs):
    with pytest.raises(ValueError):
        event("data", **kwargs)
