"""Router <-> worker frames: 4-byte unsigned big-endian length, then UTF-8 JSON of one object.

Message frames — `{"op":"call"|"reply"|"notify","seq":N,"message":<JSON-RPC>}` — carry a
client's or a tool's JSON-RPC message, which the router only relays: `message_frame`
splices already-serialised message bytes in, and a decoder made with
`raw_messages=True` hands them back out as `frame["raw"]` bytes without parsing them.
The router thus never re-serialises what it relays (it was a fifth of its work per call).

Log frames — `{"op":"log","level":"WARNING","message":"..."}` — carry a worker's own
log records to the router, which writes them to its log (gsmcpd.router.worker_log).
"""

import re
import struct

from gsmcpd.wire import jsonrpc

__all__ = ["MAX_FRAME", "MAX_OTHER_FRAME", "LOG_MESSAGE_CAP", "FrameError", "encode",
           "message_frame", "cut_log_message", "carries", "carried", "all_carried", "log_frame", "FrameDecoder"]

MAX_FRAME = 64 * 1024 * 1024
# What a raw decoder parses of a frame that is not relayed (prepared, log): all of
# them are small, and a worker's code must not make the router parse megabytes.
MAX_OTHER_FRAME = 256 * 1024
LOG_MESSAGE_CAP = 8192   # characters of one log record's message kept
_HEADER = 4
_SIZE = struct.Struct(">I")   # the header: read in place, not from a copy of its bytes


class FrameError(Exception):
    """A frame that cannot be sent or was received broken; the channel is finished."""


def encode(obj, max_frame=MAX_FRAME):
    """The frame for one JSON object."""
    if not isinstance(obj, dict):
        raise FrameError(f"a frame carries one JSON object, not {type(obj).__name__}")
    try:
        payload = jsonrpc.dumps(obj)
    except (TypeError, ValueError) as err:
        raise FrameError(f"cannot encode frame: {err}") from err
    if len(payload) > max_frame:
        raise FrameError(f"frame of {len(payload)} bytes exceeds the {max_frame}-byte cap")
    return len(payload).to_bytes(_HEADER, "big") + payload


_MESSAGE_HEAD = re.compile(rb'\{"op":"(call|reply|notify)","seq":(\d+),"message":')
_OPS = {b"call": "call", b"reply": "reply", b"notify": "notify"}
_CLOSING_BRACE = ord("}")


def message_frame(op, seq, message, max_frame=MAX_FRAME):
    """The frame relaying one JSON-RPC message given as serialised bytes (a valid JSON value)."""
    payload = b'{"op":"%s","seq":%d,"message":%s}' % (op.encode("ascii"), seq, message)
    if len(payload) > max_frame:
        raise FrameError(f"frame of {len(payload)} bytes exceeds the {max_frame}-byte cap")
    return len(payload).to_bytes(_HEADER, "big") + payload


def cut_log_message(message, cap=LOG_MESSAGE_CAP):
    """`message`, or its first `cap` characters saying how many more there were: the
    worker cuts a record before sending it, the router again (it trusts no worker)."""
    if len(message) <= cap:
        return message
    return "%s...(+%d more chars)" % (message[:cap], len(message) - cap)


def carries(text):
    """Whether a frame (UTF-8) carries `text`: not one holding a lone surrogate (a JSON
    `\\ud800` escape, or bytes the environment or argv decoded with surrogateescape)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def carried(text):
    """`text` with what UTF-8 cannot carry (a lone surrogate, `ValueError('\\udcff')`) as
    its escape: a log record or a message the user's code made, not a failed frame."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def all_carried(obj):
    """A JSON value with every string in it (keys too) `carried`: an answer holding text
    the user's code made that no tool escaped (a class's `__qualname__`, a method's name
    in its class's dictionary, a docstring) sent with the escapes, not refused whole."""
    if isinstance(obj, str):
        return carried(obj)
    if isinstance(obj, dict):
        return {all_carried(key): all_carried(value) for key, value in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [all_carried(value) for value in obj]
    return obj


def log_frame(level, message, cap=LOG_MESSAGE_CAP):
    """The frame for one log record (`level` a logging level name); a message past
    `cap` characters is cut, saying how much was."""
    message = cut_log_message(message, cap)
    message = carried(message)
    return encode({"op": "log", "level": level, "message": message})


class FrameDecoder:
    """Incremental decoder: ``feed(bytes)`` returns the objects completed so far.

    After a FrameError the decoder is dead and every later feed raises again.
    With `raw_messages`, a frame that is not a relayed message may hold at most
    `max_other` bytes (MAX_OTHER_FRAME): one past that is a FrameError, never parsed.
    """

    def __init__(self, max_frame=MAX_FRAME, raw_messages=False, max_other=MAX_OTHER_FRAME):
        self.max_frame = max_frame
        self.raw_messages = raw_messages
        self.max_other = max_other
        self._buf = bytearray()
        self._error = None

    @property
    def buffered(self):
        """Bytes of an incomplete frame held (non-zero at EOF means a truncated frame)."""
        return len(self._buf)

    def feed(self, data):
        if self._error is not None:
            raise self._error
        self._buf += data
        try:
            return self._drain()
        except FrameError as err:
            self._error = err
            self._buf = bytearray()
            raise

    def _drain(self):
        buf = self._buf
        messages = []
        start = 0
        while len(buf) - start >= _HEADER:
            size = _SIZE.unpack_from(buf, start)[0]
            # decided from the header alone, so an oversize frame is never buffered
            if size > self.max_frame:
                raise FrameError(f"frame of {size} bytes exceeds the {self.max_frame}-byte cap")
            end = start + _HEADER + size
            if len(buf) < end:
                break
            # Matched in place: a relayed message is copied out once, as its raw bytes.
            head = _MESSAGE_HEAD.match(buf, start + _HEADER, end) if self.raw_messages else None
            if head is not None and buf[end - 1] == _CLOSING_BRACE:
                messages.append({"op": _OPS[head[1]], "seq": int(head[2]), "raw": bytes(buf[head.end():end - 1])})
            elif self.raw_messages and size > self.max_other:
                raise FrameError(f"a frame of {size} bytes that relays no message "
                                 f"(over {self.max_other})")
            else:
                messages.append(_decode_payload(bytes(buf[start + _HEADER:end])))
            start = end
        if start:
            del buf[:start]
        return messages


def _decode_payload(payload):
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError as err:
        raise FrameError(f"frame is not UTF-8: {err}") from err
    try:
        obj = jsonrpc.loads(text)
    except (ValueError, RecursionError) as err:
        raise FrameError(f"frame is not JSON: {err}") from err
    if not isinstance(obj, dict):
        raise FrameError(f"frame holds {type(obj).__name__}, not a JSON object")
    return obj
