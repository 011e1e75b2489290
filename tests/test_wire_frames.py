"""Unit tests for the router <-> worker frame codec (gsmcpd/wire/frames.py)."""

import json
import socket

import pytest

from gsmcpd.wire import frames
from gsmcpd.wire.frames import MAX_FRAME, FrameDecoder, FrameError, encode


def raw_frame(payload: bytes) -> bytes:
    return len(payload).to_bytes(4, "big") + payload


def test_encode_is_length_prefixed_compact_utf8():
    frame = encode({"op": "call", "seq": 1, "text": "caf\u00e9 \u2603"})
    payload = '{"op":"call","seq":1,"text":"caf\u00e9 \u2603"}'.encode("utf-8")
    assert frame == len(payload).to_bytes(4, "big") + payload
    assert MAX_FRAME == 64 * 1024 * 1024


def test_encode_refuses_what_is_not_one_json_object():
    for bad in ([1, 2], "text", 3, None):
        with pytest.raises(FrameError):
            encode(bad)
    with pytest.raises(FrameError):
        encode({"x": object()})
    with pytest.raises(FrameError):
        encode({"x": float("nan")})


def test_encode_refuses_over_the_cap():
    with pytest.raises(FrameError):
        encode({"blob": "x" * 100}, max_frame=50)
    assert len(encode({"blob": "x" * 30}, max_frame=50)) == 4 + len('{"blob":""}') + 30


def test_round_trip_several_frames_in_one_feed():
    messages = [{"op": "prepare", "session": {"user": "u"}}, {"op": "reply", "seq": 2, "message": None},
                {"op": "stop"}]
    decoder = FrameDecoder()
    assert decoder.feed(b"".join(encode(m) for m in messages)) == messages
    assert decoder.buffered == 0


def test_frames_split_at_every_position():
    messages = [{"op": "notify", "seq": 7, "message": {"text": "\u00fcber"}}, {"op": "stop"}]
    data = b"".join(encode(m) for m in messages)
    for cut in range(len(data) + 1):
        decoder = FrameDecoder()
        got = decoder.feed(data[:cut]) + decoder.feed(data[cut:])
        assert got == messages, cut
        assert decoder.buffered == 0


def test_frames_fed_one_byte_at_a_time():
    messages = [{"n": i, "s": "\u20ac" * i} for i in range(5)]
    data = b"".join(encode(m) for m in messages)
    decoder = FrameDecoder()
    got = []
    for i in range(len(data)):
        got += decoder.feed(data[i:i + 1])
    assert got == messages


def test_partial_frame_is_held_until_complete():
    frame = encode({"op": "call", "seq": 3})
    decoder = FrameDecoder()
    assert decoder.feed(frame[:2]) == []
    assert decoder.feed(frame[2:-1]) == []
    assert decoder.buffered == len(frame) - 1
    assert decoder.feed(frame[-1:] + frame[:5]) == [{"op": "call", "seq": 3}]
    assert decoder.buffered == 5


def test_oversize_length_is_refused_from_the_header_alone():
    decoder = FrameDecoder(max_frame=100)
    with pytest.raises(FrameError):
        decoder.feed((101).to_bytes(4, "big"))     # no body bytes at all
    decoder = FrameDecoder()
    with pytest.raises(FrameError):
        decoder.feed(b"\xff\xff\xff\xff")


def test_frame_exactly_at_the_cap_is_accepted():
    payload = b'{"a":"' + b"x" * 42 + b'"}'
    assert len(payload) == 50
    assert FrameDecoder(max_frame=50).feed(raw_frame(payload)) == [{"a": "x" * 42}]


@pytest.mark.parametrize("payload", [
    b"\xff\xfe{}",                 # invalid UTF-8
    b'{"a":"\xc3"}',               # truncated UTF-8 sequence
    b"{not json}",
    b"",                            # zero-length frame
    b'{"a":NaN}',                  # not JSON, though Python would accept it
    b"[1,2]",                      # not an object
    b'"text"',
    b"null",
])
def test_bad_payloads_kill_the_decoder(payload):
    decoder = FrameDecoder()
    good = encode({"ok": True})
    with pytest.raises(FrameError):
        decoder.feed(good + raw_frame(payload) + good)
    with pytest.raises(FrameError):   # dead: even a good frame is refused now
        decoder.feed(good)


def test_deep_nesting_is_a_frame_error_not_a_crash():
    payload = b'{"a":' + b"[" * 100000 + b"]" * 100000 + b"}"
    with pytest.raises(FrameError):
        FrameDecoder().feed(raw_frame(payload))


def test_decoded_objects_match_json_loads():
    obj = {"nested": {"list": [1, 2.5, None, True], "unicode": "\u65e5\u672c"}, "big": 2 ** 70}
    assert FrameDecoder().feed(encode(obj)) == [json.loads(json.dumps(obj))]


def test_a_message_frame_splices_serialised_bytes_and_decodes_as_json():
    body = b'{"jsonrpc":"2.0","id":7,"method":"ping"}'
    data = frames.message_frame("call", 3, body)
    assert frames.FrameDecoder().feed(data) == [{"op": "call", "seq": 3,
                                                 "message": {"jsonrpc": "2.0", "id": 7, "method": "ping"}}]


def test_a_raw_decoder_hands_relayed_messages_back_unparsed():
    reply = b'{"jsonrpc":"2.0","id":7,"result":{"text":"a \\"quoted\\" }"}}'
    data = frames.message_frame("reply", 3, reply) + frames.message_frame("notify", 4, b"null")
    data += frames.encode({"op": "prepared", "ok": True})
    decoded = frames.FrameDecoder(raw_messages=True).feed(data)
    assert decoded == [{"op": "reply", "seq": 3, "raw": reply}, {"op": "notify", "seq": 4, "raw": b"null"},
                       {"op": "prepared", "ok": True}]


def test_a_message_frame_over_the_cap_is_refused():
    with pytest.raises(frames.FrameError):
        frames.message_frame("reply", 1, b'"' + b"x" * 100 + b'"', max_frame=50)


def test_a_log_frame_carries_level_and_message_cut_at_the_cap_and_sendable():
    [frame] = FrameDecoder().feed(frames.log_frame("WARNING", "x" * 30 + "\ud800", cap=20))
    assert frame == {"op": "log", "level": "WARNING", "message": "x" * 20 + "...(+11 more chars)"}
    [frame] = FrameDecoder().feed(frames.log_frame("ERROR", "lone \ud800 surrogate"))
    assert frame["message"] == "lone \\ud800 surrogate"     # its escape, not a failed record


def test_every_string_of_a_json_value_keys_too_is_carried_with_its_escapes():
    value = {"class": "m.Sur\udc80", "methods": {"m\udc82": ["a\ud800", 1, None, ("t\udcff",)]}}
    assert frames.all_carried(value) == {
        "class": "m.Sur\\udc80", "methods": {"m\\udc82": ["a\\ud800", 1, None, ["t\\udcff"]]}}


def test_a_worker_sends_an_answer_holding_a_lone_surrogate_with_its_escapes():
    from gsmcpd.worker.main import WorkerLoop
    ours, theirs = socket.socketpair()
    with ours, theirs:
        reply = {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "mro: m.Sur\udc80"}]}}
        assert WorkerLoop(theirs).send_message("reply", 7, reply)
        [frame] = FrameDecoder().feed(ours.recv(65536))
    assert frame["message"]["result"]["content"][0]["text"] == "mro: m.Sur\\udc80"   # not 'the result cannot be sent'


def test_a_raw_decoder_refuses_a_big_frame_that_relays_nothing_but_relays_big_messages():
    big = b'"' + b"x" * 300 + b'"'
    decoder = FrameDecoder(raw_messages=True, max_other=200)
    assert decoder.feed(frames.message_frame("reply", 1, big)) == [{"op": "reply", "seq": 1, "raw": big}]
    assert decoder.feed(frames.log_frame("INFO", "y" * 150)) != []     # small enough
    with pytest.raises(FrameError, match="relays no message"):
        decoder.feed(frames.log_frame("INFO", "y" * 300))
    # The worker's own decoder (not raw) keeps the plain cap.
    assert FrameDecoder(max_other=200).feed(frames.log_frame("INFO", "y" * 300))
