"""JSON-RPC 2.0 as MCP uses it: parse and classify one message, build envelopes."""

import contextlib
import gc
import json
import math
import re
import sys
from array import array
from itertools import accumulate

__all__ = [
    "PARSE_ERROR", "INVALID_REQUEST", "METHOD_NOT_FOUND", "INVALID_PARAMS", "INTERNAL_ERROR",
    "REQUEST_TIMEOUT", "WORKER_GONE",
    "JsonRpcError", "Message", "parse", "result", "error", "notification", "request", "dumps",
    "echoed", "quoted",
]

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
REQUEST_TIMEOUT = -32001   # deadline passed or the call was broken
WORKER_GONE = -32003       # the session's worker process died
SESSION_BUSY = -32004      # the session's request queue is full (GS_MCP_MAX_QUEUED)

# Deeper than any MCP message needs (serde_json's default), and far from the depth at
# which json, or a worker walking the arguments on a deeper stack, would recurse out.
MAX_DEPTH = 128


class JsonRpcError(Exception):
    """An error to answer with a JSON-RPC error object.

    ``id`` is the offending message's id when it could be read (else None), so the
    error response can still be matched by the client.
    """

    def __init__(self, code, message, data=None, id=None):
        super().__init__(f"{code} {message}")
        self.code = code
        self.message = message
        self.data = data
        self.id = id

    def response(self):
        return error(self.id, self.code, self.message, self.data)


class Message:
    """One valid message. ``kind`` is "request", "notification" or "response".

    ``params`` is None when absent; ``result``/``error`` are set on responses only.
    """

    __slots__ = ("kind", "id", "method", "params", "result", "error", "raw")

    # Given the fields parse read: it reads id, method and params to classify the message,
    # and knows a request's result and error absent (each asked again: ~300 instructions).
    def __init__(self, kind, raw, id, method, params, result=None, error=None):
        self.kind = kind
        self.raw = raw
        self.id = id
        self.method = method
        self.params = params
        self.result = result
        self.error = error

    def __repr__(self):
        return f"<Message {self.kind} id={self.id!r} method={self.method!r}>"


def _refuse_constant(name):
    raise ValueError(f"{name} is not JSON")


def _finite_float(text):
    value = float(text)
    if math.isinf(value):   # 1e400: valid JSON text, but no double holds it
        raise ValueError(f"the number {text[:40]} is out of range")
    return value


# Made once: json.loads/json.dumps with keyword arguments build a new codec per call,
# which was a measurable share of every request. Strict: NaN and Infinity are not JSON,
# nor are numbers that would read as them.
_DECODER = json.JSONDecoder(parse_constant=_refuse_constant, parse_float=_finite_float)
_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)


_WHITESPACE = json.decoder.WHITESPACE   # what JSON allows around a value


def loads(text):
    """Strict JSON text → object; ValueError (or RecursionError) when it is not JSON.

    JSONDecoder.decode, with the whitespace scans skipped when there is no whitespace
    to skip (the usual body): they were a third of the parse of a small message."""
    start = _WHITESPACE.match(text).end() if text[:1].isspace() else 0
    try:
        obj, end = _DECODER.scan_once(text, start)
    except StopIteration as err:
        raise json.JSONDecodeError("Expecting value", text, err.value) from None
    if end != len(text):
        end = _WHITESPACE.match(text, end).end()
        if end != len(text):
            raise json.JSONDecodeError("Extra data", text, end)
    return obj


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


# What an id may be, as exact types (parse): loads makes no subclass of either, and a
# bool, a subclass of int, is no id.
_ID_TYPES = (str, int)


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF]")


# A body's structure, read from its bytes: brackets and string quotes are ASCII, never
# part of a multi-byte UTF-8 character, and outside strings JSON holds no backslash.
_NOT_STRUCTURE = bytes(sorted(set(range(256)) - set(b'[]{}"')))
_STEPS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")   # as signed bytes: +1 and -1


def _nesting(body):
    """How deeply arrays and objects nest in `body`, JSON already parsed (a scalar is 0).

    Read from the bytes in C-level passes: walking the parsed object ran Python code and
    made a tuple per array (16 MiB of `[],` held the router's one thread over 5 s, and
    400 MB). An escaped backslash or quote ends no string; then what lies between quote
    pairs is string text, its brackets none of the structure's."""
    if b"\\" in body:
        body = body.replace(b"\\\\", b"").replace(b'\\"', b"")
    kept = body.translate(None, _NOT_STRUCTURE).replace(b'""', b"")   # strings without brackets
    if b'"' in kept:
        kept = _outside_strings(kept)
    return max(accumulate(array("b", kept.translate(_STEPS))), default=0)


_SLICE = 64 * 1024


def _outside_strings(kept):
    """`kept` without what lies between its quote pairs, split a slice at a time: split
    whole, short strings between brackets (`["["],` over and over) made a bytes object
    each, 140 bytes a string, more than the parse's own tree of them."""
    parts, inside = [], 0
    for start in range(0, len(kept), _SLICE):
        pieces = kept[start:start + _SLICE].split(b'"')
        parts.append(b"".join(pieces[inside::2]))   # a string open at the slice's start goes on
        inside ^= (len(pieces) - 1) & 1
    return b"".join(parts)


# A body past this many bytes parses into a tree worth minding: the collector is paused
# over it (collector_paused), and a call waiting keeps only what the router reads of it.
# Below, both would cost more than they save (the pause, ~5 µs a call on the echo path).
BIG_MESSAGE = 64 * 1024


@contextlib.contextmanager
def collector_paused():
    """For a parse and the handling of the message it gives, when nothing keeps the parsed
    tree beyond it: the cyclic collector, run while the tree's arrays and objects pile up
    (the tree holds no cycle), walks them again and again for nothing (16 MiB of `[],`
    held the router's one thread 2 s longer). Freed by the end, they leave no work behind;
    kept (an image module's tree, gsmcpd.image.parsing), the next collection walks them once."""
    if not gc.isenabled():
        yield
        return
    try:
        gc.disable()   # in the try: a break raised as it returns must not leave it paused
        yield
    finally:
        gc.enable()


def _text_problem(body, text, obj):
    """Why a parsed body cannot be relayed as the text it claims to be, or None. Each
    check runs only when a cheap scan of the text says it might apply."""
    # Parsed JSON nested d deep holds d opening and d closing brackets: a body of at most
    # 2 * MAX_DEPTH bytes (a ping, a small call) is never too deep, and skips the counts.
    if (len(body) > 2 * MAX_DEPTH and body.count(b"[") + body.count(b"{") > MAX_DEPTH
            and _nesting(body) > MAX_DEPTH):
        return f"nested deeper than {MAX_DEPTH} levels"
    if "\\u" in text and _SURROGATE_ESCAPE.search(text):
        try:   # a pair escapes one character; a lone half is not Unicode
            _ENCODER.encode(obj).encode("utf-8")
        except UnicodeEncodeError:
            return "a string holds an unpaired UTF-16 surrogate escape (\\uD800-\\uDFFF)"
    return None


_BOM = b"\xef\xbb\xbf"


def without_bom(body):
    """The body without a leading UTF-8 byte order mark, which RFC 8259 8.1 lets a
    parser ignore (Windows editors write one: `curl -d @request.json`). The body is
    relayed to the worker inside a frame, so the mark goes before it is parsed."""
    return body[3:] if body[:3] == _BOM else body


def _invalid(reason, readable_id):
    return JsonRpcError(INVALID_REQUEST, f"Invalid Request: {reason}", id=readable_id)


def parse(body):
    """Parse one message from a request body; raises JsonRpcError (-32700 or -32600)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as err:
        raise JsonRpcError(PARSE_ERROR, f"Parse error: body is not UTF-8 ({err.reason})") from err
    if not text or text.isspace():   # (strip() would copy the whole body)
        raise JsonRpcError(PARSE_ERROR, "Parse error: empty body")
    try:
        obj = loads(text)
    except RecursionError as err:
        raise JsonRpcError(PARSE_ERROR, f"Parse error: nested deeper than {MAX_DEPTH} levels") from err
    except ValueError as err:
        reason = str(err)
        if "integer string conversion" in reason:   # Python's own advice is not the client's
            reason = "a number has more than %d digits" % sys.get_int_max_str_digits()
        raise JsonRpcError(PARSE_ERROR, f"Parse error: {reason}") from err
    problem = _text_problem(body, text, obj)
    if problem is not None:
        raise JsonRpcError(PARSE_ERROR, f"Parse error: {problem}")

    if not isinstance(obj, dict):   # asked first: the one test a message passes
        if isinstance(obj, list):
            raise JsonRpcError(INVALID_REQUEST,
                               "Invalid Request: JSON-RPC batching is not supported at these "
                               "protocol revisions; send one message per request")
        raise JsonRpcError(INVALID_REQUEST, "Invalid Request: a message must be a JSON object")

    has_id = "id" in obj
    msg_id = obj.get("id")
    id_valid = has_id and type(msg_id) in _ID_TYPES   # inline: a call cost ~1.5k instructions
    readable_id = msg_id if id_valid else None

    if obj.get("jsonrpc") != "2.0":
        raise _invalid('"jsonrpc" must be "2.0"', readable_id)

    has_result, has_error = "result" in obj, "error" in obj
    params = obj.get("params")
    if "method" in obj:
        method = obj["method"]
        if has_result or has_error:
            raise _invalid("a message cannot carry both a method and a result or error", readable_id)
        if not isinstance(method, str):
            raise _invalid('"method" must be a string', readable_id)
        if "params" in obj and not isinstance(params, dict):
            raise _invalid('"params" must be an object', readable_id)
        if not has_id:
            if not method.startswith("notifications/"):
                # MCP names every notification notifications/...: any other method is a
                # request that lost its id. Taken as a notification, it was dropped with a
                # bare 202, and the client never learnt its call had not run.
                raise _invalid(f'{_method_named(method)} is a request: send it with an "id" '
                               f'(only notifications/... methods go without one); it was not run',
                               readable_id)
            return Message("notification", obj, None, method, params)
        if not id_valid:
            raise _invalid('"id" must be a string or an integer', readable_id)
        if method.startswith("notifications/"):
            # MCP reserves the prefix for notifications, which carry no id. As a request
            # it was queued behind the session's call, to be told "method not found" at its
            # end: a cancel so sent waited for the very call it named, and cancelled nothing.
            raise _invalid(f'{quoted(method)} is a notification: send it without an "id"',
                           readable_id)
        return Message("request", obj, msg_id, method, params)

    if has_result and has_error:
        raise _invalid("a response cannot carry both a result and an error", readable_id)
    if not (has_result or has_error):
        raise _invalid('a message needs a "method", a "result" or an "error"', readable_id)
    if has_error:
        err = obj["error"]
        if not (isinstance(err, dict) and _is_int(err.get("code"))
                and isinstance(err.get("message"), str)):
            raise _invalid('"error" must be an object with an integer "code" and a string "message"',
                           readable_id)
        # JSON-RPC: an error about an unreadable request has id null (or none, MCP 2025-11-25)
        if msg_id is None:
            return Message("response", obj, None, None, params, None, err)
    if not has_id:
        raise _invalid('a response needs an "id"', readable_id)
    if not id_valid:
        raise _invalid('"id" must be a string or an integer', readable_id)
    return Message("response", obj, msg_id, None, params, obj.get("result"), obj.get("error"))


def _method_named(method):
    """A method as a refusal names it, quoted; one with nothing visible in it said to be so."""
    if method.strip():
        return quoted(method)
    return "the %s method %s" % ("blank" if method else "empty", quoted(method))


def result(id, result):
    return {"jsonrpc": "2.0", "id": id, "result": result}


def echoed(text: str, limit: int = 200, *, header: bool = False) -> str:
    """`text` as an answer echoes it: cut, so a huge argument never makes a huge error.

    header: `text` is a header value as the HTTP parser carries it, one latin-1 character
    per byte (wire/http.py). It is echoed as the client wrote it: bytes that are UTF-8
    decoded (café, not cafÃ©), any other byte as \\xNN; a backslash, a quote and what
    is not printable escaped as repr escapes them, so the result reads unambiguously
    between the quotes its caller puts around it ('%s', never %r: the escapes are made)."""
    if header:
        text = text.encode("latin-1").decode("utf-8", "surrogateescape")
    text = text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"
    if header and not (text.isascii() and text.isprintable() and "\\" not in text and "'" not in text):
        text = "".join(map(_header_char_shown, text))
    return text


def quoted(text: str, limit: int = 200) -> str:
    """`text`, a name or text the client (or a module's source) gave, as a message names it:
    cut as echoed() cuts it, in quotes, escaped as repr escapes it (a newline, BEL, a
    right-to-left mark U+202E): never echoed raw into the reader's text."""
    return repr(echoed(text, limit))


def _header_char_shown(char):
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:   # a byte that is no UTF-8 (surrogateescape's stand-in)
        return f"\\x{code - 0xDC00:02x}"
    if char in "\\'":
        return "\\" + char
    return char if char.isprintable() else repr(char)[1:-1]


def error(id, code, message, data=None):
    body = {"code": code, "message": message}
    if data is not None:
        body["data"] = data
    return {"jsonrpc": "2.0", "id": id, "error": body}


def notification(method, params=None):
    message = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message


def request(id, method, params=None):
    message = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def dumps(obj):
    """Compact UTF-8 JSON; NaN/Infinity raise ValueError (clients cannot parse them)."""
    return _ENCODER.encode(obj).encode("utf-8")
