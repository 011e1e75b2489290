"""Message-trace line formatting (pure).

One message is one line: the router logs what these functions return.  Headers are
never passed in, so they can never be traced (one of them is the bearer token).
"""

from __future__ import annotations

import re

SESSION_PREFIX_CHARS = 8
ID_CAP = 80   # characters of a request id a log line shows (a UUID, quoted, fits)
# Characters of a method, path or framing a trace line shows: a head may be 64 KiB, and
# GS_MCP_TRACE_LIMIT caps only the body.
HEAD_FIELD_CAP = 256

# Characters of a user name a log line shows: the name is a token's claim, as long as the
# token, and may be logged at every request.
USER_CAP = 64

# Newline and tab as the seed promises; CR, the other C0 and the C1 controls and the
# Unicode line and paragraph separators too (everything str.splitlines splits on), so a
# body can never break the one-message-one-line rule or forge a log line; and a lone
# surrogate (a JSON escape in a claim or a worker's text), which UTF-8 cannot write; and
# the bidirectional controls (marks, embeddings, overrides, isolates), with which a claim
# or a worker's text would show the rest of its line in another order than it was written.
# Backslashes are kept as they are: JSON text stays greppable as written.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
                      "\u2028\u2029\ud800-\udfff]")
_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _escaped(match) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    return f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}"


def escape(text: str) -> str:
    return _CONTROL.sub(_escaped, text)


def shown(text, cap: int) -> str:
    """A value a client or a worker chose (a user claim, a tool name, an error), as a log
    line or a terminal may show it: cut at `cap` characters, then escaped."""
    text = str(text)
    return escape(text if len(text) <= cap else text[:cap] + "...")


def shown_user(user: str) -> str:
    """A user name as every log line and `gsmcpd status`/`end` show it (a quoting message
    puts it in quotes: usermap.named)."""
    return shown(user, USER_CAP)


def shown_id(request_id) -> str:
    """A JSON-RPC id a client chose, as a log line shows it: repr (1 and "1" apart),
    cut at ID_CAP. An id may be as long as the body, 16 MiB, logged at every retry: a
    string is cut before repr, which then never reads more than the line shows."""
    if isinstance(request_id, str):
        return shown(repr(request_id[:ID_CAP + 1]), ID_CAP)
    try:
        return shown(repr(request_id), ID_CAP)
    except ValueError:   # an int past sys.get_int_max_str_digits: the parser refuses it
        return "<an integer of %d bits>" % request_id.bit_length()


def short_id(session_id: str | None) -> str:
    """The session id as logs show it: `-` for none, else its first 8 chars + `...`."""
    if not session_id:
        return "-"
    shown = escape(session_id[:SESSION_PREFIX_CHARS])
    return shown + "..." if len(session_id) > SESSION_PREFIX_CHARS else shown


def _as_text(body: bytes | str | None) -> str:
    if body is None:
        return ""
    if isinstance(body, bytes):
        return body.decode("utf-8", errors="replace")
    return body


def format_body(body: bytes | str | None, limit: int | None) -> str:
    """`N chars: <escaped body>[...(+M more)]`; the cap counts characters, not bytes."""
    text = _as_text(body)
    size = len(text)
    if size == 0:
        return "0 chars"
    if limit is not None and size > limit:
        return f"{size} chars: {escape(text[:limit])}...(+{size - limit} more)"
    return f"{size} chars: {escape(text)}"


def format_inbound(method: str, path: str, session_id: str | None,
                   body: bytes | str | None, limit: int | None) -> str:
    """`--> POST /mcp session 71FF1F5C... 107 chars: {...}` for one received message."""
    return f"--> {_request(method, path)} session {short_id(session_id)} {format_body(body, limit)}"


def format_head(method: str, path: str, session_id: str | None, framing: str) -> str:
    """`--> POST /mcp session - (body not read: answered from its head; Content-Length 9000000)`
    for a request answered from its head alone (a refusal, a preflight): its body was
    never read, so only its framing can be shown."""
    return f"--> {_request(method, path)} session {short_id(session_id)} " \
           f"(body not read: answered from its head; {shown(framing, HEAD_FIELD_CAP)})"


def _request(method: str, path: str) -> str:
    return f"{shown(method, HEAD_FIELD_CAP)} {shown(path, HEAD_FIELD_CAP)}"


def format_unreadable(reason: str) -> str:
    """`--> (unreadable request: <reason>)` for a request that never parsed."""
    return f"--> (unreadable request: {escape(reason)})"


def format_outbound(status: int | str, session_id: str | None,
                    body: bytes | str | None, limit: int | None) -> str:
    """`<-- 200 session 71FF1F5C... 57 chars: {...}`.

    `status` is the HTTP status of a response (including the error body behind a
    refusal), or a label for a frame that is not a response: "SSE" for a message
    written on an open stream.
    """
    return f"<-- {escape(str(status))} session {short_id(session_id)} " \
           f"{format_body(body, limit)}"


def startup_line(mode: str, limit: int | None) -> str:
    """What the startup log says about the trace, so silence is never ambiguous."""
    if mode == "off":
        return "message trace: off"
    what = "inbound and outbound" if mode == "both" else "inbound"
    cap = f"bodies capped at {limit} chars" if limit is not None else "whole bodies, no cap"
    return f"message trace: ON ({what}) -- {cap}"
