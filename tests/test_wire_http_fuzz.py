"""Property tests for the sans-IO HTTP/1.1 parser: generated requests parse to what
RFC 9112 says they mean, and random mutations of them either parse or raise HttpError,
never another exception, with the same result however the bytes are split.

Fixed seeds, so a failure names its input and is reproducible; fast (well under 5 s).
"""

import random

import pytest

from gsmcpd.wire.http import HttpError, RequestParser

TCHARS = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
VALUE_BYTES = [b"a", b"Z", b"0", b" ", b"\t", b"/", b";", b",", b"=", b'"', b"\x80", b"\xc3\xa9", b"\xff"]


def parse(pieces, pop_heads=False, parser_class=RequestParser, max_head=4096):
    """("ok", requests) or ("error", status, message, requests before it); each request
    as a comparable tuple. Any exception but HttpError propagates and fails the test."""
    parser = parser_class(max_head=max_head, max_body=4096)
    got = []
    try:
        for piece in pieces:
            parser.feed(piece)
            while True:
                if pop_heads:
                    parser.pop_waiting_head()
                request = parser.next_request()
                if request is None:
                    break
                got.append((request.method, request.path, request.query, request.version,
                            request.headers, request.body, request.keep_alive))
    except HttpError as err:
        assert isinstance(err.status, int) and 400 <= err.status < 600 and err.message, err
        return ("error", err.status, err.message, got)
    return ("ok", got)


def splittings(data, rng):
    """The ways one input is fed: whole, a byte at a time, and two random cuts."""
    yield [data]
    yield [data[i:i + 1] for i in range(len(data))]
    for _ in range(2):
        cuts = sorted(rng.sample(range(1, len(data)), min(len(data) - 1, rng.randint(1, 6)))) if len(data) > 1 else []
        bounds = [0] + cuts + [len(data)]
        yield [data[a:b] for a, b in zip(bounds, bounds[1:])]


def same_however_split(data, rng):
    results = [parse(pieces, pop_heads=i % 2 == 1) for i, pieces in enumerate(splittings(data, rng))]
    assert all(r == results[0] for r in results), (data, results)
    return results[0]


# ---- generated well-formed requests ---------------------------------------------

def token(rng, n=6):
    return "".join(rng.choice(TCHARS) for _ in range(rng.randint(1, n)))


def value(rng):
    raw = b"".join(rng.choice(VALUE_BYTES) for _ in range(rng.randint(0, 8)))
    return raw


def chunked_body(body, rng):
    """body in random chunks, with extensions and trailers in the RFC 9112 7.1 grammar."""
    out, at = [], 0
    while at < len(body):
        size = rng.randint(1, len(body) - at)
        ext = rng.choice([b"", b";a", b";a=b", b' ; n = "q \\" s"', b";x;y=1", b"\t"])
        out.append(rng.choice([b"%x", b"%X", b"00%x"]) % size + ext + b"\r\n" + body[at:at + size] + b"\r\n")
        at += size
    out.append(b"0" + rng.choice([b"", b";end"]) + b"\r\n")
    for _ in range(rng.randint(0, 2)):
        out.append(token(rng).encode() + b": " + value(rng).strip(b" \t") + b"\r\n")
    out.append(b"\r\n")
    return b"".join(out)


def generated_request(rng):
    """(bytes, the request they mean: method, path, query, version, headers, body, keep_alive)."""
    version = rng.choice(["HTTP/1.1", "HTTP/1.1", "HTTP/1.0"])
    method = rng.choice(["GET", "POST", "DELETE", "PUT", "PATCH", token(rng)])
    path = rng.choice(["/mcp", "/", "/a/b.c", "/%7Euser"])
    query = rng.choice(["", "", "a=1&b", "x=%20"])
    target = path + ("?" + query if query else "") + rng.choice(["", "", "", "#frag", "#a?b/c"])   # a fragment is dropped
    form = rng.random()
    if form < 0.15:
        target = rng.choice(["http://", "HTTPS://"]) + "h.example:8080" + target
    elif form < 0.2 and method == "GET":
        method, target, path, query = "OPTIONS", "*", "*", ""   # asterisk-form stays as sent
    headers = []
    if version == "HTTP/1.1" or rng.random() < 0.5:   # 1.0 needs no Host
        headers.append(("Host", b"localhost:8080"))
    for _ in range(rng.randint(0, 4)):
        headers.append(("X-" + token(rng), value(rng)))
    connection = rng.choice([None, b"close", b"keep-alive", b"Keep-Alive, x", b"x, CLOSE"])
    if connection is not None:
        headers.append(("Connection", connection))
    tokens = [t.strip().lower() for t in connection.split(b",")] if connection else []
    body = bytes(rng.choice(b"{}[]ab\r\n\x00\xff") for _ in range(rng.randint(0, 40)))
    framing = rng.choice(["none", "length", "chunked"]) if body or rng.random() < 0.3 else "none"
    if framing == "none":
        body = b""
    elif framing == "length":
        headers.append(("Content-Length", b"%d" % len(body)))
    else:
        headers.append(("Transfer-Encoding", rng.choice([b"chunked", b"Chunked", b", chunked"])))
    rng.shuffle(headers)
    if version == "HTTP/1.1":
        keep_alive = b"close" not in tokens
    else:
        keep_alive = b"keep-alive" in tokens and b"close" not in tokens and framing != "chunked"
    eol = rng.choice([b"\r\n", b"\r\n", b"\n"])   # RFC 9112 2.2: a recipient may take a bare LF
    head = [f"{method} {target} {version}".encode()] + [n.encode() + b":" + rng.choice([b"", b" ", b"\t "]) + v
                                                         for n, v in headers]
    data = rng.choice([b"", b"\r\n", b"\n"]) + eol.join(head) + eol + eol
    data += chunked_body(body, rng) if framing == "chunked" else body
    meant = (method, path.replace("%7E", "~"), query, version,   # an encoded unreserved character is itself
             [(n.lower(), v.strip(b" \t").decode("latin-1")) for n, v in headers], body, keep_alive)
    return data, meant


SEEDS = range(12)


@pytest.mark.parametrize("seed", SEEDS)
def test_generated_pipelines_parse_to_what_they_mean_however_split(seed):
    rng = random.Random(seed)
    for _ in range(25):
        data, meant = b"", []
        for _ in range(rng.randint(1, 3)):
            one, request = generated_request(rng)
            data += one
            meant.append(request)
            if not request[-1]:
                data += b"GET /ignored HTTP/1.1\r\n\r\n"   # after a closing request: never read
                break
        assert same_however_split(data, rng) == ("ok", meant), data


# ---- mutations: refused by HttpError or parsed, the same way however split -------

MUTATION_BYTES = [b"\x00", b"\r", b"\n", b"\r\n", b"\t", b" ", b":", b";", b",", b"\x7f", b"\x80", b"\xff",
                  b"\x01", b"\x1b", b"0", b"f", b"-", b'"', b"\\", b"\x0b", b"\x0c"]
MUTATION_LINES = [b"Content-Length: 3", b"Content-Length: 3, 4", b"Content-Length: 0", b"Transfer-Encoding: chunked",
                  b"Transfer-Encoding: gzip", b" folded", b"\tfolded", b"Host: other", b"Expect: 100-continue",
                  b"Connection: close", b"Connection: keep-alive", b"X: \x00", b"X\x00: 1", b"Authorization: Bearer s",
                  b"GET / HTTP/1.1", b"0", b"5;ext", b"ffffffffffffffffff", b""]


def mutated(data, rng):
    data = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        at = rng.randint(0, len(data))
        kind = rng.random()
        if kind < 0.35:
            data[at:at] = rng.choice(MUTATION_BYTES)
        elif kind < 0.55 and len(data) > 1:
            del data[min(at, len(data) - 1)]
        elif kind < 0.7:
            line_end = data.find(b"\n", at)
            if line_end >= 0:
                data[line_end + 1:line_end + 1] = rng.choice(MUTATION_LINES) + rng.choice([b"\r\n", b"\n"])
        elif kind < 0.85:
            data = bytearray(bytes(data).replace(b"\r\n", b"\n", rng.randint(1, 3)))
        else:
            cut = rng.randint(0, len(data))
            data[cut:cut] = bytes(data[rng.randint(0, cut):cut])   # a stretch repeated
    return bytes(data)


@pytest.mark.parametrize("seed", SEEDS)
def test_mutated_requests_parse_or_raise_http_error_the_same_however_split(seed):
    rng = random.Random(1000 + seed)
    for _ in range(40):
        data = b"".join(generated_request(rng)[0] for _ in range(rng.randint(1, 2)))
        same_however_split(mutated(data, rng), rng)


@pytest.mark.parametrize("seed", SEEDS)
def test_random_bytes_parse_or_raise_http_error(seed):
    rng = random.Random(2000 + seed)
    alphabet = [b"GET / HTTP/1.1", b"\r\n", b"\n", b"\r", b"Host: x", b":", b" ", b"0", b"\x00", b"\xff",
                b"Transfer-Encoding: chunked", b"Content-Length: 2", b"ab"]
    for _ in range(40):
        same_however_split(b"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 30))), rng)


# ---- a head byte for byte the last one: found with no scan, its parse reused ------------

class Forgetful(RequestParser):
    """A parser that keeps no last head: each head is scanned for and parsed afresh."""

    def _read_head(self):
        self._last_head = self._last_parsed = None
        return super()._read_head()


def head_lines(rng, max_head):
    """A head's lines, joined by one line end; sometimes padded to end at max_head, give or take."""
    eol = rng.choice([b"\r\n", b"\r\n", b"\n"])
    lines = [rng.choice([b"POST /mcp HTTP/1.1", b"GET /mcp HTTP/1.1", b"POST /mcp HTTP/1.0"]), b"Host: h"]
    lines += rng.sample([b"Content-Length: 2", b"Content-Length: 0", b"Transfer-Encoding: chunked",
                         b"Connection: close", b"Connection: keep-alive", b"Expect: 100-continue",
                         b"X-A: \xc3\xa9", b"X-B:\t v "], rng.randint(0, 2))
    head = eol.join(lines)
    if rng.random() < 0.3:
        pad = max_head - len(head) - 4 + rng.randint(-2, 2) - len(eol) - 5
        head += eol + b"X-P: " + b"p" * max(pad, 0)
    return head


def repeating_stream(rng, max_head):
    """Requests whose heads mostly repeat the one before, byte for byte or nearly (cut by a
    byte, one more, one changed), ended by CRLFs or bare LFs, with empty lines before."""
    heads = [head_lines(rng, max_head) for _ in range(rng.randint(1, 2))]
    data = b""
    for _ in range(rng.randint(2, 6)):
        head = rng.choice(heads)
        change = rng.random()
        if change < 0.1:
            head = head[:-1]
        elif change < 0.2:
            head += b"x"
        elif change < 0.3:
            at = rng.randrange(len(head))
            head = head[:at] + rng.choice([b"\r", b"\n", b" ", b":"]) + head[at + 1:]
        framing = head.lower()
        body = (b"ab" if b"content-length: 2" in framing else
                b"2\r\nab\r\n0\r\n\r\n" if b"chunked" in framing else b"")
        data += (rng.choice([b"", b"", b"\r\n", b"\n"]) + head
                 + rng.choice([b"\r\n\r\n", b"\r\n\r\n", b"\n\n", b"\r\n\n"]) + body)
    return data


@pytest.mark.parametrize("seed", SEEDS)
def test_a_head_repeating_the_last_parses_as_one_scanned_afresh_however_split(seed):
    # Within max_head as a scanned one is (a head ended by bare LFs, then by CRLFs, is two
    # longer), across reads, after a close, in a body's place: whatever a scan would find.
    rng = random.Random(5000 + seed)
    for _ in range(60):
        max_head = rng.choice([48, 64, 100, 256])
        data = repeating_stream(rng, max_head)
        for i, pieces in enumerate(splittings(data, rng)):
            remembered = parse(pieces, i % 2 == 1, RequestParser, max_head)
            assert remembered == parse(pieces, i % 2 == 1, Forgetful, max_head), (data, pieces)


# ---- targeted properties ------------------------------------------------------------

CONTROLS = [bytes([b]) for b in list(range(0x00, 0x09)) + list(range(0x0b, 0x20)) + [0x7f]]   # all but HTAB, LF


@pytest.mark.parametrize("where", [b"X-Na|me: value", b"X-Name: va|lue", b"X-Name: value|", b"X-Name:| value"])
def test_a_control_byte_in_a_header_line_is_a_400_however_split(where):
    rng = random.Random(where)
    for control in CONTROLS:
        line = where.replace(b"|", control)
        for eol in (b"\r\n", b"\n"):
            if line.endswith(b"\r") and eol == b"\n":
                continue   # just a CRLF line end among bare LFs (RFC 9112 2.2)
            data = b"GET / HTTP/1.1" + eol + b"Host: h" + eol + line + eol + eol
            result = same_however_split(data, rng)
            assert result[:2] == ("error", 400), (data, result)


def test_a_head_of_many_headers_parses_up_to_the_head_limit_and_is_431_past_it():
    rng = random.Random(5)
    lines = b"".join(b"X-%d: v\r\n" % i for i in range(600))   # ~6 KiB of headers
    data = b"GET / HTTP/1.1\r\nHost: h\r\n" + lines + b"\r\n"
    parser = RequestParser(max_head=len(data))
    parser.feed(data)
    assert len(parser.next_request().headers) == 601
    assert same_however_split(data, rng)[:2] == ("error", 431)   # parse()'s head limit is 4 KiB


@pytest.mark.parametrize("version,expected", [("HTTP/1.1", True), ("HTTP/1.0", False)])
def test_expect_100_continue_is_offered_as_a_waiting_head_in_http_1_1_only(version, expected):
    data = (f"POST http://h/mcp?q {version}\r\nHost: h\r\nExpect: 100-Continue\r\nContent-Length: 2\r\n\r\n"
            .encode())
    parser = RequestParser()
    parser.feed(data)
    assert parser.next_request() is None
    head = parser.pop_waiting_head()
    assert (head is not None) == expected
    if head is not None:
        assert (head.path, head.query, head.body, head.expects_continue()) == ("/mcp", "q", None, True)
    parser.feed(b"{}")
    assert parser.next_request().body == b"{}"


@pytest.mark.parametrize("seed", SEEDS)
def test_any_one_crlf_of_a_chunked_body_made_a_bare_lf_is_a_400(seed):
    rng = random.Random(3000 + seed)
    framing = {"chunk size line not ended by CRLF", "chunk data not followed by CRLF", "trailer line not ended by CRLF"}
    head = b"POST /mcp HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
    body = chunked_body(bytes(rng.choice(b"ab\r\n") for _ in range(rng.randint(1, 30))), rng)
    at = -1
    while (at := body.find(b"\r\n", at + 1)) >= 0:
        result = parse([head + body[:at] + body[at + 1:]])
        # a CR taken from chunk data shifts the framing after it: refused all the same
        assert result[:2] == ("error", 400) and result[2] in framing | {"invalid chunk size"}, result


@pytest.mark.parametrize("seed", SEEDS)
def test_a_body_of_tiny_chunks_is_read_or_refused_the_same_however_split(seed):
    # Past its allowance a chunk's framing must be paid for by data: whether a body runs
    # short depends on its chunks alone, never on where the reads fell.
    rng = random.Random(4000 + seed)
    head = b"POST /mcp HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
    pieces = [b"x" * rng.randint(1, 3) for _ in range(rng.randint(1200, 2400))]
    ext = rng.choice([b"", b"", b";a=b"])
    body = b"".join(b"%x%s\r\n%s\r\n" % (len(p), ext, p) for p in pieces) + b"0\r\n\r\n"
    result = same_however_split(head + body, rng)
    if result[0] == "ok":
        assert result[1][0][5] == b"".join(pieces)
    else:
        assert result[1] == 400 and result[2].startswith("chunks too small"), result
