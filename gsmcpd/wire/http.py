"""Sans-IO HTTP/1.1: an incremental request parser and response writers.

The parser takes bytes with ``feed()`` and hands out complete ``Request``
objects from ``next_request()``. A request that arrives in one read is parsed
with a handful of ``find``/regex/``split`` calls; feeding one byte at a time
gives the same result. Framing is strict, because a lenient parser behind or in
front of another HTTP hop is how request smuggling happens.
"""

import functools
import re
from http import HTTPStatus

__all__ = [
    "HttpError", "Request", "RequestParser",
    "response", "stream_head", "chunk", "LAST_CHUNK", "CONTINUE",
]

LAST_CHUNK = b"0\r\n\r\n"
CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"

_TCHAR = r"[!#$%&'*+\-.^_`|~0-9A-Za-z]"
_TOKEN = re.compile(_TCHAR + "+")
_TOKEN_BYTES = re.compile(_TCHAR.encode() + b"+")
_REQUEST_LINE = re.compile(r"(" + _TCHAR + r"+) ([\x21-\x7e]+) ([\x21-\x7e]+)")
# RFC 9112 2.3: HTTP-version is HTTP/DIGIT.DIGIT. Only one of that shape names a major
# version refused with 505 (RFC 9110 15.6.6); HTTP/1, HTTP/3, HTTP/1.10 are malformed: 400.
_VERSION_SHAPE = re.compile(r"HTTP/[0-9]\.[0-9]")
_LATER_HTTP_1 = re.compile(r"HTTP/1\.[2-9]")
# Heads with bare LFs are validated as a block by one regex (see _split_head).
# A value may hold obs-text (bytes 0x80-0xff, read as latin-1 and kept opaque, RFC 9110
# 5.5): a UTF-8 User-Agent is no reason to refuse a request. Names stay tokens.
_FIELD_VALUE = r"[\t\x20-\x7e\x80-\xff]*"
_HEADER_BLOCK_OK = re.compile(r"(?:" + _TCHAR + r"+:" + _FIELD_VALUE + r"\r?\n)*")
_HEADER_LINE = re.compile(r"(" + _TCHAR + r"+):(" + _FIELD_VALUE + ")")
_CONTROL = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")
_DIGITS = re.compile(r"[0-9]{1,18}")      # 19+ digits is no real body, just an attack
_HEX_SIZE = re.compile(rb"[0-9A-Fa-f]{1,16}")
# chunk-size [chunk-ext], RFC 9112 7.1.1: ext = *( BWS ";" BWS name [ BWS "=" BWS value ] ),
# name a token, value a token or quoted-string (ASCII only, as in the head). Whitespace
# before the line end is tolerated, as h11 does: it cannot change the size read.
_QUOTED = rb'"(?:[\t \x21\x23-\x5b\x5d-\x7e]|\\[\t \x21-\x7e])*"'
_CHUNK_EXT = (rb"(?:[ \t]*;[ \t]*%s(?:[ \t]*=[ \t]*(?:%s|%s))?)*"
              % (_TOKEN_BYTES.pattern, _TOKEN_BYTES.pattern, _QUOTED))
_CHUNK_SIZE_LINE = re.compile(rb"(" + _HEX_SIZE.pattern + rb")" + _CHUNK_EXT + rb"[ \t]*\r\n")
SMALL_BODY = 64 * 1024                   # bytes of body read before the head's gates run (pop_waiting_head)
_MAX_BLANK = 1024                        # empty lines tolerated before a request line
_TLS_HANDSHAKE = 0x16                    # a TLS record's first byte: a ClientHello
_MAX_CHUNK_LINE = 4096                   # size + extensions; anything longer is abuse
# Each chunk costs the one router loop the same Python steps whatever its size (1-byte
# chunks held it ~25 ms a 64 KiB read), so chunk framing (size lines, extensions, CRLFs) is
# paid for by data: each byte of data earns 1/_DATA_PER_FRAMING_BYTE byte of framing, banked
# up to _FRAMING_ALLOWANCE, which a body starts with. Chunks of 24 bytes or more never run
# short. (RFC 9112 7.1.1 has a server limit chunk extensions the same way, with a 4xx.)
_FRAMING_ALLOWANCE = 8192
_DATA_PER_FRAMING_BYTE = 4
_FRAMING_CREDIT = _FRAMING_ALLOWANCE * _DATA_PER_FRAMING_BYTE   # in bytes of data

# parser states
_HEAD, _FIXED, _CHUNK_SIZE, _CHUNK_DATA, _CHUNK_CRLF, _TRAILERS, _CLOSED, _DEAD = range(8)


class HttpError(Exception):
    """A request the parser refuses; the connection must be closed after answering."""

    def __init__(self, status, message):
        super().__init__(f"{status} {message}")
        self.status = status
        self.message = message
        self.origin = None   # the request's Origin, when its head was parsed (for CORS)
        self.unread_body = 0   # bytes of the refused request's body its client declared


class Request:
    """One parsed request. Header names are lower-case, values latin-1 and stripped.
    body is None for a head whose body is still to come (RequestParser.pop_waiting_head).
    `fields`: lower-case name -> value, repeated headers joined; the router's gates read
    it directly (`fields.get("origin")`): a dict lookup costs ~750 instructions less than
    a call of header(), asked six times a request. header() takes a name in any case."""

    __slots__ = ("method", "target", "path", "query", "version", "headers", "body", "keep_alive",
                 "fields")

    def __init__(self, method, target, version, headers, by_name, body=b"", keep_alive=True):
        self.method = method
        self.target = target
        self.path, _, self.query = (target if target[:1] == "/" and "#" not in target else _origin_form(target)).partition("?")
        if "%" in self.path:
            self.path = unreserved_decoded(self.path)
        self.version = version
        self.headers = headers
        self.body = body
        self.keep_alive = keep_alive
        self.fields = by_name

    def expects_continue(self):
        """Whether the client waits for ``100 Continue`` before sending its body."""
        return _expects_continue(self.version, self.fields)

    def header(self, name):
        """The value of header ``name``; repeated headers are joined with ", "
        (those allowed once are refused by the parser)."""
        value = self.fields.get(name)
        if value is None and not name.islower():   # asked in lower case: no new string
            value = self.fields.get(name.lower())
        return value

    def __repr__(self):
        body = "to come" if self.body is None else "%dB" % len(self.body)
        return f"<Request {self.method} {self.path} {self.version} body={body}>"


# A percent-encoded unreserved character (ALPHA DIGIT - . _ ~) is that character: /%6Dcp
# is /mcp (RFC 3986 6.2.2.2). Any other %XX stays: decoding %2F would make a new path.
_PCT_UNRESERVED = re.compile(r"%(?:[46][1-9A-Fa-f]|[57][0-9Aa]|3[0-9]|2[DEde]|5[Ff]|7[Ee])")


def unreserved_decoded(path):
    """`path` as requests are routed by: its percent-encoded unreserved characters decoded."""
    return _PCT_UNRESERVED.sub(_decoded, path)


def _decoded(match):
    return chr(int(match.group()[1:], 16))


def _expects_continue(version, by_name):
    expect = by_name.get("expect")
    return version == "HTTP/1.1" and expect is not None and expect.lower() == "100-continue"


def _is_absolute_form(target):
    # absolute-form ("http://host/mcp?x") must be accepted by servers (RFC 9112 3.2.2)
    return target[:8].lower().startswith(("http://", "https://"))


def _other_target_form(method, target):
    """Absolute-form (http://host/mcp), or asterisk-form for OPTIONS (RFC 9112 3.2); the
    authority-form of CONNECT is no method this server allows, and is refused as malformed."""
    return _is_absolute_form(target) or (target == "*" and method == "OPTIONS")


def _origin_form(target):
    # no form of request-target has a fragment (RFC 9112 3.2): a sloppy client's is dropped
    target = target.split("#", 1)[0]
    if _is_absolute_form(target):
        rest = target.split("//", 1)[1]
        slash = rest.find("/")
        query = rest.find("?")
        if slash < 0 or 0 <= query < slash:
            return "/" + (rest[query:] if query >= 0 else "")
        return rest[slash:]
    return target


class RequestParser:
    """Incremental HTTP/1.1 request parser: ``feed()``, then ``next_request()`` until None.

    After a request that does not keep the connection alive, later bytes are
    ignored (the connection is going to close). After an ``HttpError`` the
    parser is dead and raises the same error again.
    """

    def __init__(self, max_head=65536, max_body=16 * 1024 * 1024):
        self.max_head = max_head
        self.max_body = max_body
        self._buf = bytearray()
        self._state = _HEAD
        self._scanned = 0          # bytes of _buf already searched for the head end
        self._eof = False
        self._error = None
        self._pending = None       # (method, target, version, headers, keep_alive) of the body read
        self._body = bytearray()
        self._remaining = 0        # bytes still due for a fixed body or the current chunk
        self._trailer_bytes = 0
        self._framing_credit = _FRAMING_CREDIT
        self._blank_bytes = 0
        self._head_waiting = False  # a head is parsed and its body still to come (pop_waiting_head)
        self._last_head = None     # the last head parsed, and what it parsed to
        self._last_parsed = None

    @property
    def buffered(self):
        """Bytes received and not yet returned as a request."""
        return len(self._buf)

    @property
    def in_progress(self):
        """True while bytes of an incomplete request are buffered."""
        if self._state in (_CLOSED, _DEAD):
            return False
        return self._state != _HEAD or bool(self._buf)

    def feed(self, data):
        """Buffer bytes. Raises HttpError(413) when more is buffered than one
        maximal request (+64 KiB): a client pipelining while its previous
        request is being answered must not grow memory without bound."""
        if self._eof:
            raise RuntimeError("feed() after feed_eof()")
        if self._state in (_CLOSED, _DEAD):
            return
        self._buf += data
        if len(self._buf) > self.max_head + self.max_body + 65536:
            err = HttpError(413, "too much data buffered on this connection")
            self._fail(err)
            raise err

    def feed_eof(self):
        self._eof = True

    def _body_too_large(self, declared=0):
        error = HttpError(413, f"request body too large: over {self.max_body} bytes, the most GS_MCP_MAX_BODY allows")
        error.unread_body = declared
        return error

    def discard(self):
        """Drop what is buffered and ignore what comes: its connection is closed, and
        whatever still holds the parser (a call answering on it) must not hold that too."""
        if self._state != _DEAD:   # a dead parser keeps raising its error
            self._state = _CLOSED
        self._buf = bytearray()
        self._body = bytearray()
        self._pending = None
        self._head_waiting = False
        self._last_head = self._last_parsed = None

    def pop_waiting_head(self):
        """Once per request whose head is parsed and whose body is still to come
        (next_request() gave None): its head, as a Request with body None and
        keep_alive False (an answer before the body closes the connection); else None.

        The caller may answer from the head alone, refusing a body it would only
        discard, or write ``CONTINUE`` to a head that ``expects_continue()``
        (clients like curl otherwise stall for a second before sending a body).
        A request whose body came with its head is never offered here.
        """
        if not self._head_waiting:
            return None
        self._head_waiting = False
        method, target, version, headers, _keep_alive, by_name = self._pending
        return Request(method, target, version, headers, by_name, None, False)

    def next_request(self):
        """The next complete request, or None when more bytes are needed."""
        if self._error is not None:
            raise self._error
        try:
            request = self._advance()
        except HttpError as err:
            if self._pending is not None:   # refused in its body: the head is known
                err.origin = self._pending[5].get("origin")
            self._fail(err)
            raise
        if request is None and self._eof and self.in_progress:
            err = HttpError(400, "connection closed in the middle of a request")
            self._fail(err)
            raise err
        return request

    def _fail(self, err):
        self._error = err
        self._state = _DEAD
        self._buf = bytearray()
        self._body = bytearray()

    def _advance(self):
        if self._state == _HEAD:
            if not self._read_head():
                return None
        if self._state == _FIXED:
            remaining = self._remaining
            if len(self._buf) < remaining:
                return None
            body = bytes(self._buf[:remaining])
            del self._buf[:remaining]
            return self._finish(body)
        if self._state in (_CHUNK_SIZE, _CHUNK_DATA, _CHUNK_CRLF, _TRAILERS):
            if not self._read_chunked():
                return None
            body, self._body = bytes(self._body), bytearray()
            return self._finish(body)
        return None   # _CLOSED

    def _finish(self, body):
        method, target, version, headers, keep_alive, by_name = self._pending
        request = Request(method, target, version, headers, by_name, body, keep_alive)
        self._pending = None
        self._head_waiting = False
        self._blank_bytes = 0
        self._state = _HEAD if keep_alive else _CLOSED
        if not keep_alive:
            self._buf = bytearray()
        return request

    # ---- head ---------------------------------------------------------

    def _read_head(self):
        buf = self._buf
        # RFC 9112 2.2: ignore empty lines before a request line (common after a body)
        skip = 0
        while buf.startswith((b"\r\n", b"\n"), skip):
            skip += 2 if buf[skip] == 13 else 1
        if skip:
            del buf[:skip]
            self._scanned = 0
            self._blank_bytes += skip
            # endless CRLFs would otherwise keep a connection busy for free
            if self._blank_bytes > _MAX_BLANK:
                raise HttpError(400, "too many empty lines before a request")
        # https:// to this plain port: a ClientHello holds no CRLF to wait for, so say so
        # at once (the client reads "wrong version number") instead of at the read timeout
        if buf and buf[0] == _TLS_HANDSHAKE:
            raise HttpError(400, "this port speaks plain HTTP, not TLS: use http:// to connect")
        last = self._last_head
        if (last is not None and buf.startswith(last) and buf.startswith(b"\r\n\r\n", len(last))
                and len(last) + 4 <= self.max_head):
            # A keep-alive client's head, byte for byte its last one: it ends where that
            # one did, found with no scan (a head parsed holds no blank line, nor ends in
            # a LF, so none comes before this one). Within max_head as the scan's is: the
            # last one may have ended in a bare LF, two bytes shorter than CRLF.
            del buf[:len(last) + 4]
            self._scanned = 0
            self._parse_head(last)
            return True
        # never look past max_head: the rest may be a large pipelined body
        found = _head_end(buf, max(0, self._scanned - 3), self.max_head + 4)
        if found is None:
            self._scanned = min(len(buf), self.max_head + 4)
            if len(buf) > self.max_head:
                raise self._head_too_large()
            return False
        start, end = found
        if end > self.max_head:
            raise self._head_too_large()
        head = bytes(buf[:start])
        del buf[:end]
        self._scanned = 0
        self._parse_head(head)
        return True

    def _head_too_large(self):
        # RFC 9112 3: a request-target longer than the server reads MUST get 414, and
        # only the request line can tell (a long header is 431's business)
        if self._buf.find(b"\n", 0, self.max_head) < 0:
            return HttpError(414, f"request line too long: over {self.max_head} bytes, "
                                  "the most a request head may take")
        return HttpError(431, "request head too large")

    def _parse_head(self, head):
        # A keep-alive client sends the same head again and again (the SDKs change
        # at most Content-Length), so the last one's parse is kept: reused when the
        # bytes are equal, it is the same parse. Its header list and index are then
        # shared by the requests, which only ever read them.
        if head != self._last_head:
            self._last_parsed = self._parsed(head)
            self._last_head = head
        self._pending, self._state, self._remaining, self._head_waiting = self._last_parsed
        self._trailer_bytes = 0
        self._framing_credit = _FRAMING_CREDIT

    def _parsed(self, head):
        """What a head sets up: (the request's fields, the body state, its length,
        whether a body is to come); HttpError for a head refused."""
        if not head.isascii() and not head.partition(b"\n")[0].isascii():
            raise HttpError(400, "non-ASCII byte in request line")
        text = head.decode("latin-1")
        if text.endswith("\r") and "\n" in text:   # a bare CR right before the terminating CRLF
            raise HttpError(400, "bare CR in request head")
        # The usual head: CRLF line ends and printable lines (no tab, no control).
        # Its lines then need no more checking than their names; any other head
        # takes the general path, which knows bare LFs and explains refusals.
        # (The request line is checked before the headers, whichever the path.)
        request_line, crlf, rest = text.partition("\r\n")
        block = None
        if not request_line.isprintable():
            request_line, block = _split_head(text)
        parts = _REQUEST_LINE.fullmatch(request_line)
        if parts is None:
            raise HttpError(400, "malformed request line")
        method, target, version = parts.groups()
        if version not in ("HTTP/1.1", "HTTP/1.0"):
            if _LATER_HTTP_1.fullmatch(version):   # RFC 9110 2.5: read as the latest 1.x known
                version = "HTTP/1.1"
            elif _VERSION_SHAPE.fullmatch(version):
                raise HttpError(505, f"HTTP version {version} not supported")
            else:
                raise HttpError(400, "malformed HTTP version")
        if target[0] != "/" and not _other_target_form(method, target):
            # RFC 9112 3.2: a target in no form a server takes is a bad request, not a path
            raise HttpError(400, "malformed request target: neither a path (/mcp) nor an "
                                 "absolute http(s) URL, nor * for OPTIONS")
        fields = None
        if block is None:
            fields = _header_fields(rest.split("\r\n")) if crlf else ([], {})
            if fields is None:   # a tab, bare LF or control character in a header line
                block = _split_head(text)[1]
        if fields is None:
            fields = _header_fields(_block_lines(block), checked=True)
        headers, by_name = fields
        try:
            return self._framing(method, target, version, headers, by_name)
        except HttpError as err:
            err.origin = by_name.get("origin")
            raise

    def _framing(self, method, target, version, headers, by_name):
        """_parsed's result for a head whose lines are read: how its body is framed."""
        if version == "HTTP/1.1" and "host" not in by_name:
            raise HttpError(400, "missing Host header")   # RFC 9112 3.2

        connection = by_name.get("connection")
        # List items here and below lose only OWS (RFC 9110 5.6.1): str.strip() would take a
        # latin-1 NBSP or NEL too, reading "chunked\xa0" as chunked where a proxy may not.
        tokens = [t.strip(" \t").lower() for t in connection.split(",")] if connection is not None else ()
        transfer_encoding = by_name.get("transfer-encoding")
        if version == "HTTP/1.1":
            keep_alive = "close" not in tokens
        else:
            # RFC 9112 6.1: Transfer-Encoding from a 1.0 client is faulty framing (a
            # smuggling shape): the request is served, then the connection closed.
            keep_alive = "keep-alive" in tokens and "close" not in tokens and transfer_encoding is None
        pending = (method, target, version, headers, keep_alive, by_name)

        if transfer_encoding is not None:
            if "content-length" in by_name:
                raise HttpError(400, "both Content-Length and Transfer-Encoding")
            # RFC 9110 5.6.1: empty list elements are ignored, so ",chunked" is chunked.
            codings = [c for c in (c.strip(" \t").lower() for c in transfer_encoding.split(",")) if c]
            if not codings:
                raise HttpError(400, "Transfer-Encoding names no coding")
            if codings.count("chunked") > 1:   # a framing error, not an unknown coding
                raise HttpError(400, "Transfer-Encoding chunked given more than once")
            if "chunked" in codings and codings[-1] != "chunked":   # RFC 9112 6.3: no length known
                raise HttpError(400, "Transfer-Encoding chunked must be the last coding")
            if codings != ["chunked"]:
                raise HttpError(501, "only Transfer-Encoding: chunked is supported")
            state, remaining = _CHUNK_SIZE, 0
        else:
            length = _content_length(by_name.get("content-length"))
            if length > self.max_body:
                raise self._body_too_large(length)
            state, remaining = _FIXED, length
        # A body up to SMALL_BODY costs no more to buffer than a head: only a longer one
        # (or one of unknown length) waits for its head's gates, so a client writing
        # head and body apart (httpx) is not gated twice per request.
        head_waits = state != _FIXED or remaining > SMALL_BODY or (remaining > 0 and _expects_continue(version, by_name))
        return pending, state, remaining, head_waits

    # ---- chunked body ---------------------------------------------------

    def _read_chunked(self):
        """Read on in the chunked body; True once it is whole. The buffer is walked by
        position and cut once at the end: a body of small chunks costs one regex match
        and a slice per chunk, not a cut of the buffer per line."""
        buf = self._buf
        at = 0
        try:
            while True:
                if self._state == _CHUNK_SIZE:
                    line = _CHUNK_SIZE_LINE.match(buf, at, at + _MAX_CHUNK_LINE + 1)
                    if line is None:
                        _refuse_chunk_line(buf, at)   # or more bytes are needed
                        return False
                    size = int(line.group(1), 16)
                    if size == 0:
                        at = line.end()
                        self._state = _TRAILERS
                        continue
                    if len(self._body) + size > self.max_body:
                        raise self._body_too_large()
                    data = line.end()
                    self._pay_for_framing(data - at + 2, size)   # the size line and the data's CRLF
                    at = data + size
                    if buf.startswith(b"\r\n", at):   # the whole chunk is here
                        self._body += buf[data:at]
                        at += 2
                        continue
                    at = min(at, len(buf))
                    self._body += buf[data:at]
                    self._remaining = data + size - at
                    self._state = _CHUNK_DATA if self._remaining else _CHUNK_CRLF
                elif self._state == _CHUNK_DATA:
                    take = min(self._remaining, len(buf) - at)
                    self._body += buf[at:at + take]
                    at += take
                    self._remaining -= take
                    if self._remaining:
                        return False
                    self._state = _CHUNK_CRLF
                elif self._state == _CHUNK_CRLF:
                    if buf.startswith(b"\r\n", at):
                        at += 2
                    elif len(buf) - at < 2 and buf[at:] in (b"", b"\r"):
                        return False
                    else:
                        raise HttpError(400, "chunk data not followed by CRLF")
                    self._state = _CHUNK_SIZE
                else:  # _TRAILERS: zero or more header lines, then an empty line
                    newline = buf.find(b"\n", at)
                    if newline < 0:
                        if self._trailer_bytes + len(buf) - at > self.max_head:
                            raise HttpError(431, "chunked trailers too large")
                        return False
                    line = _crlf_line(buf, at, newline, "trailer line not ended by CRLF")
                    self._trailer_bytes += newline + 1 - at
                    at = newline + 1
                    if self._trailer_bytes > self.max_head:
                        raise HttpError(431, "chunked trailers too large")
                    if not line:
                        return True
                    # validated, then dropped: trailers carry nothing we use
                    _parse_header_line(line.decode("latin-1"))
        finally:
            del buf[:at]

    def _pay_for_framing(self, framing, size):
        credit = min(self._framing_credit + size, _FRAMING_CREDIT) - framing * _DATA_PER_FRAMING_BYTE
        if credit < 0:
            raise HttpError(400, "chunks too small: their framing (size lines, extensions, CRLFs) "
                                 f"may be at most 1/{_DATA_PER_FRAMING_BYTE} of the data, "
                                 f"beyond {_FRAMING_ALLOWANCE} bytes; send larger chunks")
        self._framing_credit = credit


def _refuse_chunk_line(buf, at):
    """Why the chunk size line at buf[at:] is refused (HttpError), or None while it may
    still be completed by more bytes."""
    newline = buf.find(b"\n", at, at + _MAX_CHUNK_LINE + 1)
    if newline < 0:
        if len(buf) - at > _MAX_CHUNK_LINE:
            raise HttpError(400, "chunk size line too long")
        return
    line = _crlf_line(buf, at, newline, "chunk size line not ended by CRLF")
    if _HEX_SIZE.fullmatch(line.split(b";", 1)[0].rstrip(b" \t")):
        raise HttpError(400, "malformed chunk extension")
    raise HttpError(400, "invalid chunk size")


def _crlf_line(buf, at, newline, refusal):
    """The line of a chunked body from buf[at] to the LF at buf[newline]. Only the head
    may end lines with a bare LF (RFC 9112 2.2): in chunked framing a hop that ends them
    elsewhere would frame the body apart from us (request smuggling)."""
    if newline == at or buf[newline - 1] != 13:
        raise HttpError(400, refusal)
    return bytes(buf[at:newline - 1])


def _head_end(buf, start, stop):
    """(start, end) of the first blank line (CRLF CRLF, or with bare LFs) in
    buf[start:stop], or None. Two C-level finds: every such blank line holds
    "\n\r\n" or "\n\n", and the earlier of the two is the first one (a regex
    search for it walks the head a byte at a time, ~5x slower)."""
    at = buf.find(b"\n\r\n", start, stop)
    bare = buf.find(b"\n\n", start, stop if at < 0 else at + 2)
    if bare >= 0:
        at, end = bare, bare + 2
    elif at >= 0:
        end = at + 3
    else:
        return None
    return (at - 1 if at > start and buf[at - 1] == 13 else at), end


def _split_head(text):
    """(request line, header block) of a head that may use bare LFs; the block is
    "" or its lines each ending in a newline."""
    line_end = text.find("\n")
    if line_end < 0:
        return text, ""
    return text[:line_end].removesuffix("\r"), text[line_end + 1:] + "\n"


def _block_lines(block):
    """The lines of a header block, checked by one regex as a whole; a refusal is
    explained line by line."""
    if not _HEADER_BLOCK_OK.fullmatch(block):
        for line in block[:-1].split("\n"):
            _parse_header_line(line.removesuffix("\r"))   # raises with the precise reason
        raise HttpError(400, "malformed header line")
    return [line.removesuffix("\r") for line in block[:-1].split("\n")] if block else []


# Header name as sent -> lower-case name, for names already checked to be tokens.
# Clients repeat the same few names on every request; a bounded memo spares the
# token check and lower() per header. Bounded, so a client inventing names cannot
# grow it (past the bound, names are checked every time).
_CHECKED_NAMES = {}
_CHECKED_NAMES_MAX = 512

# Headers a request may carry once: joined, two of them would read as one odd value
# (two Host lines as "a, a", a session id as "sid, sid"). Content-Length is not here:
# equal repeats are allowed (RFC 9110 8.6), _content_length refuses differing ones.
_ONCE = {"host": "Host", "content-type": "Content-Type", "authorization": "Authorization",
         "mcp-session-id": "MCP-Session-Id", "mcp-protocol-version": "MCP-Protocol-Version"}


def _header_fields(lines, checked=False):
    """The header list and the by-name index (repeated headers joined, as RFC 9110
    allows, except those in _ONCE: 400); None if a line is not printable ASCII,
    unless the lines were `checked` already (tabs are allowed in values)."""
    headers, by_name = [], {}
    for line in lines:
        if not (checked or line.isprintable()):
            return None
        name, colon, value = line.partition(":")
        key = _CHECKED_NAMES.get(name) if colon else None
        if key is None:
            key = _checked_name(line, name, colon)
        value = value.strip(" \t")
        headers.append((key, value))
        if key in by_name:
            if key in _ONCE:
                raise HttpError(400, f"more than one {_ONCE[key]} header")
            by_name[key] += ", " + value
        else:
            by_name[key] = value
    return headers, by_name


def _checked_name(line, name, colon):
    if not colon or not _TOKEN.fullmatch(name):
        _parse_header_line(line)   # raises with the precise reason
        raise HttpError(400, "malformed header line")
    key = name.lower()
    if len(_CHECKED_NAMES) < _CHECKED_NAMES_MAX:
        _CHECKED_NAMES[name] = key
    return key


def _parse_header_line(line):
    match = _HEADER_LINE.fullmatch(line)
    if match is None:
        if line[:1] in (" ", "\t"):
            raise HttpError(400, "obsolete line folding in header")
        colon = line.find(":")
        if colon < 0:
            raise HttpError(400, "header line without a colon")
        if not _TOKEN.fullmatch(line[:colon]):
            raise HttpError(400, "invalid header name")
        raise HttpError(400, "control character in header value")
    return match.group(1).lower(), match.group(2).strip(" \t")


def _content_length(value):
    """The one Content-Length in the (joined) header value, 0 if none; 400 if the
    listed values are not all the same number."""
    if value is None:
        return 0
    if value.isascii() and value.isdigit() and len(value) < 19:   # the usual single value ("²" is a digit too)
        return int(value)
    lengths = set()
    for item in value.split(","):
        item = item.strip(" \t")
        if not _DIGITS.fullmatch(item):
            raise HttpError(400, "invalid Content-Length")
        lengths.add(int(item))
    if len(lengths) > 1:
        raise HttpError(400, "conflicting Content-Length values")
    return lengths.pop()


# ---- response writers ---------------------------------------------------

# RFC 9110's names where Python before 3.13 still gives RFC 7231's, so a status line
# reads the same whichever Python serves it.
RFC9110_REASONS = {413: "Content Too Large", 414: "URI Too Long", 416: "Range Not Satisfiable",
                   422: "Unprocessable Content"}


@functools.lru_cache(maxsize=None)  # a handful of statuses, asked for on every reply
def _status_line(status):
    if not isinstance(status, int) or not 100 <= status <= 999:
        raise ValueError(f"bad HTTP status {status!r}")
    try:
        reason = RFC9110_REASONS.get(status) or HTTPStatus(status).phrase
    except ValueError:
        reason = "Unknown"
    return b"HTTP/1.1 %d %s\r\n" % (status, reason.encode("ascii"))


def _header_block(headers, reserved):
    try:
        return _checked_block(tuple(headers), reserved)
    except TypeError:   # an unhashable value: checked afresh
        return _checked_block.__wrapped__(headers, reserved)


@functools.lru_cache(maxsize=256)  # a reply's headers are mostly the same few lists
def _checked_block(headers, reserved):
    out = []
    for name, value in headers:
        if isinstance(value, str):
            value = value.encode("latin-1")
        elif isinstance(value, int):
            value = str(value).encode("ascii")
        name_bytes = name.encode("latin-1") if isinstance(name, str) else name
        if not _TOKEN_BYTES.fullmatch(name_bytes):
            raise ValueError(f"invalid header name {name!r}")
        if _CONTROL.search(value):   # CR/LF here would let a value inject headers
            raise ValueError(f"control character in value of header {name!r}")
        if name_bytes.lower() in reserved:
            raise ValueError(f"header {name!r} is set by the writer")
        out.append(b"%s: %s\r\n" % (name_bytes, value))
    return b"".join(out)


def response(status, headers=(), body=b"", keep_alive=True, head=False):
    """A complete response; Content-Length and Connection are set here, not by the caller.
    `head`: the answer to a HEAD request, the head alone (with the Content-Length the
    body would have) and no body (RFC 9110 9.3.2)."""
    block = _header_block(headers, (b"content-length", b"connection", b"transfer-encoding"))
    if status in (204, 304) or status < 200:
        if body:
            raise ValueError(f"status {status} must not carry a body")
        length = b""
    else:
        length = b"Content-Length: %d\r\n" % len(body)
    connection = b"Connection: keep-alive\r\n" if keep_alive else b"Connection: close\r\n"
    return b"".join((_status_line(status), block, length, connection, b"\r\n", b"" if head else body))


def stream_head(status, headers=(), chunked=True):
    """The head of a streaming response, e.g. an SSE stream: chunked, or for an HTTP/1.0
    client (which must get no Transfer-Encoding, RFC 9112 6.1) ended by the close."""
    block = _header_block(headers, (b"content-length", b"transfer-encoding", b"connection"))
    framing = b"Transfer-Encoding: chunked\r\n" if chunked else b"Connection: close\r\n"
    return _status_line(status) + block + framing + b"\r\n"


def chunk(data):
    """One chunk of a chunked body. Empty data gives b"" (a 0-size chunk would end the body)."""
    if not data:
        return b""
    return b"%x\r\n%s\r\n" % (len(data), data)
