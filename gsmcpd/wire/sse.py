"""Server-Sent Events encoding (the text/event-stream body of an MCP stream)."""

import re

__all__ = ["event", "comment"]

# SSE treats CRLF, LF and a lone CR all as line ends
_LINE_ENDS = re.compile(r"\r\n|\r|\n")


def _single_line(field, value):
    if _LINE_ENDS.search(value) or "\0" in value:
        raise ValueError(f"SSE {field} must be one line without NUL: {value!r}")
    return value


def event(data, event=None, id=None):
    """One event: optional ``event:``/``id:`` fields, one ``data:`` line per line of data."""
    lines = []
    if event is not None:
        lines.append(f"event: {_single_line('event', event)}\n")
    if id is not None:
        lines.append(f"id: {_single_line('id', id)}\n")
    lines.extend(f"data: {line}\n" for line in _LINE_ENDS.split(data))
    lines.append("\n")
    return "".join(lines).encode("utf-8")


def comment(text=""):
    """A comment (ignored by clients); used as a keepalive so proxies keep the stream open."""
    return ("".join(f": {line}\n" for line in _LINE_ENDS.split(text)) + "\n").encode("utf-8")
