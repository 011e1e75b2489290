"""Unit tests for the sans-IO HTTP/1.1 parser and response writers (gsmcpd/wire/http.py)."""

import io
import http.client

import pytest

from gsmcpd.wire.http import (
    CONTINUE, LAST_CHUNK, SMALL_BODY, HttpError, RequestParser, chunk, response, stream_head,
)


def whole(data):
    return [data]


def bytewise(data):
    return [data[i:i + 1] for i in range(len(data))]


FEEDINGS = [whole, bytewise]


def run(data, feeding, **limits):
    """Feed ``data`` in the pieces ``feeding`` makes, draining requests after every piece."""
    parser = RequestParser(**limits)
    requests = []
    for piece in feeding(data):
        parser.feed(piece)
        while (request := parser.next_request()) is not None:
            requests.append(request)
    return parser, requests


def refused(data, feeding, **limits):
    with pytest.raises(HttpError) as caught:
        run(data, feeding, **limits)
    return caught.value


@pytest.fixture(params=FEEDINGS, ids=["whole", "bytewise"])
def feeding(request):
    return request.param


POST_CL = (b"POST /mcp HTTP/1.1\r\nHost: localhost:8080\r\nContent-Type: application/json\r\n"
           b"Content-Length: 17\r\n\r\n{\"jsonrpc\":\"2.0\"}")
POST_CHUNKED = (b"POST /mcp HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                b"5;name=value\r\nhello\r\nA\r\n, world!!!\r\n0\r\nX-Checksum: 1\r\nX-Other: 2\r\n\r\n")


# ---- well-formed requests ----------------------------------------------------

def test_get_request_fields(feeding):
    data = (b"GET /mcp?session=1&x=2 HTTP/1.1\r\nHost: localhost\r\n"
            b"Accept:   text/event-stream  \r\nX-Multi: a\r\nx-multi: b\r\n\r\n")
    parser, [req] = run(data, feeding)
    assert (req.method, req.target, req.path, req.query, req.version) == (
        "GET", "/mcp?session=1&x=2", "/mcp", "session=1&x=2", "HTTP/1.1")
    assert req.headers == [("host", "localhost"), ("accept", "text/event-stream"),
                           ("x-multi", "a"), ("x-multi", "b")]
    assert req.header("ACCEPT") == "text/event-stream"
    assert req.header("x-multi") == "a, b"
    assert req.header("missing") is None
    assert req.body == b""
    assert req.keep_alive is True
    assert parser.in_progress is False


def test_content_length_body(feeding):
    _, [req] = run(POST_CL, feeding)
    assert req.method == "POST" and req.path == "/mcp"
    assert req.body == b'{"jsonrpc":"2.0"}'
    assert req.header("content-type") == "application/json"


def test_chunked_body_with_extensions_and_trailers(feeding):
    _, [req] = run(POST_CHUNKED, feeding)
    assert req.body == b"hello, world!!!"
    assert req.header("x-checksum") is None   # trailers are dropped


def test_chunked_edge_forms(feeding):
    # Whitespace after the size is tolerated even without an extension (RFC 9112 has
    # BWS only before ";", h11 accepts it too): it cannot change the size read.
    data = (b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding:  Chunked \r\n\r\n"
            b"0003 \r\nabc\r\nb;ext;other=\"q\"\r\n0123456789a\r\n0\r\n\r\n")
    _, [req] = run(data, feeding)
    assert req.body == b"abc0123456789a"


@pytest.mark.parametrize("ext", [b";name", b";a=b", b';a="q s"', b' ; a = b ;c\t', b';a="x\\"y";b=""',
                                 b";!#$%&'*+-.^_`|~=1"])
def test_well_formed_chunk_extensions_are_accepted(feeding, ext):
    data = post(b"Transfer-Encoding: chunked", body=b"2" + ext + b"\r\nhi\r\n0" + ext + b"\r\n\r\n")
    assert run(data, feeding)[1][0].body == b"hi"


@pytest.mark.parametrize("line", [
    b"2;a=\x00\x01\xff\rz", b"2;a=\x01", b"2;a\rb", b"2;\xc3\xa9", b'2;a="\xe9"', b"2;a=b\x7f",
    b"2;", b"2;a=", b"2;=b", b"2;a b", b"2;a=b c", b'2;a="open', b'2;a="x"y', b"2;a=(b)", b"2;;a",
])
def test_malformed_chunk_extensions_are_refused(feeding, line):
    # RFC 9112 7.1.1: an extension is a token name, optionally = a token or quoted-string
    err = refused(post(b"Transfer-Encoding: chunked", body=line + b"\r\nhi\r\n0\r\n\r\n"), feeding)
    assert (err.status, err.message) == (400, "malformed chunk extension")
    err = refused(post(b"Transfer-Encoding: chunked", body=b"2\r\nhi\r\n0" + line[1:] + b"\r\n\r\n"), feeding)
    assert (err.status, err.message) == (400, "malformed chunk extension")   # the last chunk's too


@pytest.mark.parametrize("body,message", [
    (b"2\nhi\r\n0\r\n\r\n", "chunk size line not ended by CRLF"),
    (b"2;a=b\nhi\r\n0\r\n\r\n", "chunk size line not ended by CRLF"),
    (b"2\r\nhi\r\n0\n\r\n", "chunk size line not ended by CRLF"),
    (b"2\r\nhi\n0\r\n\r\n", "chunk data not followed by CRLF"),
    (b"2\r\nhi\r\n0\r\nX: 1\n\r\n", "trailer line not ended by CRLF"),
    (b"2\r\nhi\r\n0\r\n\n", "trailer line not ended by CRLF"),
])
def test_a_bare_lf_in_chunked_framing_is_refused(feeding, body, message):
    # RFC 9112 2.2 lets a recipient take a bare LF as the end of the request line and
    # header lines only; a chunked body's lines end in CRLF (7.1). A hop that reads
    # "2\nhi" differently (h11 before 0.16 took any two bytes after chunk data) would
    # frame the body apart from us: request smuggling.
    err = refused(post(b"Transfer-Encoding: chunked", body=body), feeding)
    assert (err.status, err.message) == (400, message)


def test_chunk_writer_output_parses_back(feeding):
    body = chunk(b"first") + chunk(b"") + chunk(b"x" * 300) + LAST_CHUNK
    data = b"POST /up HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + body
    _, [req] = run(data, feeding)
    assert req.body == b"first" + b"x" * 300


def test_same_content_length_repeated_is_accepted(feeding):
    data = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 3, 3\r\n\r\nabc"
    _, [req] = run(data, feeding)
    assert req.body == b"abc"


def test_lf_only_line_endings_and_leading_empty_lines(feeding):
    data = b"\r\n\nGET /a HTTP/1.1\nHost: h\n\nPOST /b HTTP/1.1\nHost: h\nContent-Length: 2\n\nok\r\n"
    parser, reqs = run(data, feeding)
    assert [(r.path, r.body) for r in reqs] == [("/a", b""), ("/b", b"ok")]
    assert parser.in_progress is False   # the stray CRLF after a body is not a request


def test_a_head_with_tabs_or_mixed_line_ends_parses_like_a_plain_one():
    # Tabs in values and bare LFs leave the common path; the result must not differ.
    plain = b"GET /a HTTP/1.1\r\nHost: h\r\nX-Tab: one two\r\nAccept: */*\r\n\r\n"
    variants = [plain,
                b"GET /a HTTP/1.1\r\nHost: h\nX-Tab:\tone two\t\r\nAccept: */*\n\r\n",
                b"GET /a HTTP/1.1\nHost:  h \nX-Tab: \tone two\nAccept: */*\n\n"]
    parsed = [run(data, whole)[1][0] for data in variants]
    assert [r.headers for r in parsed] == [parsed[0].headers] * 3
    assert parsed[0].headers == [("host", "h"), ("x-tab", "one two"), ("accept", "*/*")]


@pytest.mark.parametrize("value", [b"caf\xc3\xa9 \xe2\x9c\x93", b"caf\xe9", b"\x80\x85\xa0\xad\xff"])
@pytest.mark.parametrize("line_end", [b"\r\n", b"\n"])
def test_header_values_may_hold_obs_text_kept_as_latin_1(feeding, value, line_end):
    # RFC 9110 5.5: bytes 0x80-0xff in a value are opaque data, not a refusal (a UTF-8
    # User-Agent); they read back as latin-1, so the value's bytes are recoverable.
    data = line_end.join([b"GET / HTTP/1.1", b"Host: x", b"User-Agent: " + value + b"\t", b"Accept: */*", b"", b""])
    _, [req] = run(data, feeding)
    assert req.header("user-agent").encode("latin-1") == value
    assert req.headers == [("host", "x"), ("user-agent", value.decode("latin-1")), ("accept", "*/*")]


def test_trailer_values_may_hold_obs_text_and_names_may_not(feeding):
    body = b"0\r\nX-Sum: caf\xc3\xa9\r\n\r\n"
    assert run(post(b"Transfer-Encoding: chunked", body=body), feeding)[1][0].body == b""
    err = refused(post(b"Transfer-Encoding: chunked", body=b"0\r\nX-\xe9: 1\r\n\r\n"), feeding)
    assert (err.status, err.message) == (400, "invalid header name")


def test_a_non_ascii_request_line_is_refused_by_its_name(feeding):
    err = refused("GET /caf\u00e9 HTTP/1.1\r\nHost: x\r\nX: \u00e9\r\n\r\n".encode("utf-8"), feeding)
    assert (err.status, err.message) == (400, "non-ASCII byte in request line")


@pytest.mark.parametrize("minor", b"23456789")
def test_a_later_http_1_minor_version_is_served_as_http_1_1(feeding, minor):
    # RFC 9110 2.5: the highest minor version of the major one implemented
    data = b"POST /mcp HTTP/1.%c\r\nHost: x\r\nContent-Length: 2\r\n\r\nok" % minor
    _, [req] = run(data, feeding)
    assert (req.version, req.keep_alive, req.body) == ("HTTP/1.1", True, b"ok")
    assert refused(b"GET / HTTP/1.%c\r\n\r\n" % minor, feeding).message == "missing Host header"


def test_host_is_required_once_in_http_1_1_and_at_most_once_in_1_0(feeding):
    # RFC 9112 3.2; an empty value is allowed (a target without authority)
    for data in (b"GET / HTTP/1.1\r\nHost:\r\n\r\n", b"GET / HTTP/1.0\r\n\r\n"):
        assert run(data, feeding)[1][0].header("host") == ("" if b"Host" in data else None)
    for data, message in [
        (b"GET / HTTP/1.1\r\n\r\n", "missing Host header"),
        (b"GET / HTTP/1.1\r\nAccept: */*\r\n\r\n", "missing Host header"),
        (b"GET / HTTP/1.1\nAccept:\t*/*\n\n", "missing Host header"),   # the bare-LF path
        (b"GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", "more than one Host header"),
        (b"GET / HTTP/1.0\r\nHost: a\r\nhost: b\r\n\r\n", "more than one Host header"),
        (b"GET / HTTP/1.1\nHost: a\nHost:\ta\n\n", "more than one Host header"),
    ]:
        err = refused(data, feeding)
        assert (err.status, err.message) == (400, message), data


@pytest.mark.parametrize("name, said", [
    (b"Content-Type", "Content-Type"), (b"Authorization", "Authorization"),
    (b"Mcp-Session-Id", "MCP-Session-Id"), (b"MCP-Protocol-Version", "MCP-Protocol-Version"),
])
def test_headers_allowed_once_are_refused_when_repeated(feeding, name, said):
    # Joined, "sid, sid" would be looked up as a session id; even equal repeats are refused.
    err = refused(post(name + b": v", name.lower() + b": v", b"Content-Length: 0"), feeding)
    assert (err.status, err.message) == (400, f"more than one {said} header")
    [req] = run(post(name + b": v, w", b"X-Other: 1", b"X-Other: 2", b"Content-Length: 0"), feeding)[1]
    assert (req.header(name.decode()), req.header("x-other")) == ("v, w", "1, 2")   # one line: its value as sent


def test_a_known_header_name_without_its_colon_is_still_refused():
    # Names already seen are remembered; the colon is checked on every line regardless.
    run(b"GET / HTTP/1.1\r\nHost: h\r\n\r\n", whole)
    err = refused(b"GET / HTTP/1.1\r\nHost\r\n\r\n", whole)
    assert (err.status, err.message) == (400, "header line without a colon")


def test_header_names_past_the_remembered_ones_are_checked_and_parsed():
    many = b"".join(b"X-Name-%d: %d\r\n" % (i, i) for i in range(1200))
    _, [req] = run(b"GET / HTTP/1.1\r\nHost: x\r\n" + many + b"\r\n", whole, max_head=1 << 20)
    assert req.header("x-name-1199") == "1199" and len(req.headers) == 1201
    err = refused(b"GET / HTTP/1.1\r\nHost: x\r\nX-New(Name): 1\r\n\r\n", whole)
    assert (err.status, err.message) == (400, "invalid header name")


@pytest.mark.parametrize("header", [b"X(Y): 1", b"X: a\tb\x01", b"X: 1\nBad(Name): 2"])
def test_the_request_line_is_judged_before_the_headers(header):
    # An unsupported version is the answer whatever is wrong further down the head.
    assert refused(b"GET / HTTP/2.0\r\n" + header + b"\r\n\r\n", whole).status == 505


def test_absolute_form_target(feeding):
    data = b"POST http://example.com:8080/mcp?q=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"
    _, [req] = run(data, feeding)
    assert (req.path, req.query) == ("/mcp", "q=1")


@pytest.mark.parametrize("target", [b"/mcp?q=1#top", b"http://h/mcp?q=1#top", b"HTTPS://h:1/mcp?q=1#a?b/c"])
def test_a_fragment_a_sloppy_client_sends_is_dropped_whatever_the_target_form(feeding, target):
    # RFC 9112 3.2: no request-target form has a fragment. The origin-form's was dropped,
    # the absolute-form's was kept in the path, so the same request was a 404 there.
    _, [req] = run(b"GET " + target + b" HTTP/1.1\r\nHost: h\r\n\r\n", feeding)
    assert (req.path, req.query) == ("/mcp", "q=1")


@pytest.mark.parametrize("target, path", [
    (b"/%6dcp", "/mcp"), (b"/%6Dcp?x=%41", "/mcp"), (b"http://h/%6D%63%70", "/mcp"),   # RFC 3986 6.2.2.2
    (b"/.well-known/oauth-protected-resource%2Fmcp", "/.well-known/oauth-protected-resource%2Fmcp"),
    (b"/%2e%2E/%7e%5F%2d%30", "/../~_-0"), (b"/a%20b%25%zz%4", "/a%20b%25%zz%4"),   # reserved, others, broken: kept
])
def test_a_percent_encoded_unreserved_character_in_the_path_is_that_character(feeding, target, path):
    # /%6dcp is /mcp, and was answered 404; %2F decoded would be another path
    _, [req] = run(b"GET " + target + b" HTTP/1.1\r\nHost: h\r\n\r\n", feeding)
    assert req.path == path


@pytest.mark.parametrize("line", [b"GET * HTTP/1.1", b"POST mcp HTTP/1.1", b"GET example.com:443 HTTP/1.1",
                                  b"GET ftp://example.com/mcp HTTP/1.1", b"GET ?x=1 HTTP/1.1"])
def test_a_target_in_no_form_a_server_takes_is_a_bad_request_not_a_path(line):
    # It was taken for a path, and answered 404 (RFC 9112 3.2: SHOULD be 400).
    error = refused(line + b"\r\nHost: x\r\n\r\n", whole)
    assert (error.status, error.message) == (400, "malformed request target: neither a path (/mcp) nor "
                                                  "an absolute http(s) URL, nor * for OPTIONS")


def test_options_takes_the_asterisk_form(feeding):
    _, [req] = run(b"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n", feeding)
    assert (req.method, req.target) == ("OPTIONS", "*")


@pytest.mark.parametrize("version, connection, keep_alive", [
    ("HTTP/1.1", None, True),
    ("HTTP/1.1", "close", False),
    ("HTTP/1.1", "Keep-Alive, Close", False),
    ("HTTP/1.1", "keep-alive", True),
    ("HTTP/1.0", None, False),
    ("HTTP/1.0", "keep-alive", True),
    ("HTTP/1.0", "Keep-Alive", True),
    ("HTTP/1.0", "close", False),
    ("HTTP/1.1", "close\xa0", True),        # not the token close: only OWS is stripped
    ("HTTP/1.0", "keep-alive\x85", False),
])
def test_keep_alive_rules(feeding, version, connection, keep_alive):
    head = f"GET / {version}\r\nHost: x\r\n" + (f"Connection: {connection}\r\n" if connection else "")
    _, [req] = run((head + "\r\n").encode("latin-1"), feeding)
    assert req.version == version
    assert req.keep_alive is keep_alive


def test_pipelined_requests_come_out_in_order(feeding):
    data = (b"GET /first HTTP/1.1\r\nHost: x\r\n\r\n" + POST_CL + POST_CHUNKED
            + b"DELETE /last HTTP/1.1\r\nHost: x\r\nMcp-Session-Id: abc\r\n\r\n")
    parser, reqs = run(data, feeding)
    assert [(r.method, r.path) for r in reqs] == [
        ("GET", "/first"), ("POST", "/mcp"), ("POST", "/mcp"), ("DELETE", "/last")]
    assert [r.body for r in reqs] == [b"", b'{"jsonrpc":"2.0"}', b"hello, world!!!", b""]
    assert parser.in_progress is False


@pytest.mark.parametrize("data", [POST_CL, POST_CHUNKED + b"GET /next HTTP/1.1\r\nHost: x\r\n\r\n"])
def test_split_at_every_position(data):
    expected = [(r.path, r.body, r.headers) for r in run(data, whole)[1]]
    for cut in range(len(data) + 1):
        _, reqs = run(data, lambda d: [d[:cut], d[cut:]])
        assert [(r.path, r.body, r.headers) for r in reqs] == expected, cut


def test_bytes_after_a_closing_request_are_ignored():
    parser = RequestParser()
    parser.feed(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n")
    assert parser.next_request().keep_alive is False
    assert parser.next_request() is None
    parser.feed(b"GET /more HTTP/1.1\r\nHost: x\r\n\r\n")
    assert parser.next_request() is None
    assert parser.in_progress is False


def test_in_progress_tracks_incomplete_requests():
    parser = RequestParser()
    assert parser.in_progress is False
    parser.feed(b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Len")
    assert parser.next_request() is None and parser.in_progress is True
    parser.feed(b"gth: 4\r\n\r\nab")
    assert parser.next_request() is None and parser.in_progress is True
    parser.feed(b"cd")
    assert parser.next_request().body == b"abcd"
    assert parser.in_progress is False


CLIENT_HELLO_START = b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"   # no CRLF for many bytes


@pytest.mark.parametrize("before", [b"", b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"])
def test_a_tls_client_hello_on_the_plain_port_is_refused_at_its_first_byte(before):
    # https:// to a plain port: no head end ever comes, so it waited for the read timeout.
    parser = RequestParser()
    parser.feed(before + CLIENT_HELLO_START[:1])
    if before:
        assert parser.next_request().path == "/"
    with pytest.raises(HttpError) as caught:
        parser.next_request()
    assert caught.value.status == 400
    assert caught.value.message == "this port speaks plain HTTP, not TLS: use http:// to connect"


def test_eof_between_requests_is_clean():
    parser = RequestParser()
    parser.feed(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    parser.feed_eof()
    assert parser.next_request().path == "/"
    assert parser.next_request() is None


def test_eof_in_the_middle_of_a_request_is_an_error():
    parser = RequestParser()
    parser.feed(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc")
    assert parser.next_request() is None
    parser.feed_eof()
    with pytest.raises(HttpError) as caught:
        parser.next_request()
    assert caught.value.status == 400
    with pytest.raises(RuntimeError):
        parser.feed(b"more")


def test_a_waiting_head_is_offered_once_and_tells_expect_continue():
    parser = RequestParser()
    parser.feed(b"POST /mcp HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n")
    assert parser.next_request() is None
    head = parser.pop_waiting_head()
    assert (head.method, head.path, head.header("host"), head.body, head.keep_alive) == ("POST", "/mcp", "x", None, False)
    assert head.expects_continue()
    assert parser.pop_waiting_head() is None
    parser.feed(b"abc")
    assert parser.next_request().body == b"abc"
    assert CONTINUE == b"HTTP/1.1 100 Continue\r\n\r\n"


@pytest.mark.parametrize("feeding", FEEDINGS)
def test_a_repeated_head_parses_as_it_did_the_first_time(feeding):
    # Each parser keeps its last head's parse for the next identical one (keep-alive
    # clients repeat theirs); every request must still come out as if parsed afresh.
    same = b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\n"
    chunked = b"POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    closing = b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\n"
    data = (same + b"abc" + same + b"def" + chunked + b"2\r\nhi\r\n0\r\nT: 1\r\n\r\n" + chunked
            + b"1\r\n!\r\n0\r\n\r\n" + same + b"ghi" + closing + b"xy")
    _, requests = run(data, feeding)
    assert [(r.path, r.body, r.keep_alive) for r in requests] == [
        ("/mcp", b"abc", True), ("/mcp", b"def", True), ("/c", b"hi", True), ("/c", b"!", True),
        ("/mcp", b"ghi", True), ("/mcp", b"xy", False)]
    assert requests[4].header("content-length") == "3" and requests[5].header("connection") == "close"


@pytest.mark.parametrize("feeding", FEEDINGS)
def test_a_head_that_begins_as_the_last_one_did_is_read_to_its_own_end(feeding):
    # A head equal to the last one is known to end where that one did, unscanned; one that
    # only begins with its bytes (more header lines), or ends it otherwise, is read whole.
    same = b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 1"
    bare = b"POST /b HTTP/1.1\nHost: x\nContent-Length: 1"
    data = (same + b"\r\n\r\na" + same + b"\r\nX-More: 1\r\n\r\nb" + same + b"\r\n\r\nc"
            + same + b"0\r\n\r\n" + b"g" * 10   # Content-Length: 10
            + bare + b"\n\nd" + bare + b"\r\n\r\ne" + bare + b"\n\nf")
    _, requests = run(data, feeding)
    assert [(r.path, r.body, r.header("x-more")) for r in requests] == [
        ("/mcp", b"a", None), ("/mcp", b"b", "1"), ("/mcp", b"c", None), ("/mcp", b"g" * 10, None),
        ("/b", b"d", None), ("/b", b"e", None), ("/b", b"f", None)]


def test_a_repeated_chunked_head_counts_each_requests_trailers_afresh():
    parser = RequestParser(max_head=200)
    head = b"POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    trailer = b"X-T: " + b"t" * 110 + b"\r\n"   # under max_head once, over it twice
    first = second = None
    for _ in range(2):
        parser.feed(head + b"1\r\n!\r\n0\r\n" + trailer + b"\r\n")
        request = parser.next_request()
        assert request is not None and request.body == b"!"
        first, second = second, request
    assert first.headers is second.headers   # the head's parse was reused


def test_a_repeated_http_1_0_keep_alive_head_stays_keep_alive():
    head = b"POST /mcp HTTP/1.0\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\n"
    _, requests = run(head + b"a" + head + b"b", whole)
    assert [(r.body, r.keep_alive) for r in requests] == [(b"a", True), (b"b", True)]


def test_http_1_0_with_transfer_encoding_is_served_then_the_connection_closes(feeding):
    # RFC 9112 6.1: a 1.0 message with Transfer-Encoding has faulty framing; what
    # follows it on the connection (here a pipelined GET) must not be read as a request.
    head = b"POST /mcp HTTP/1.0\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n"
    parser, requests = run(head + b"2\r\nhi\r\n0\r\n\r\nGET /second HTTP/1.1\r\nHost: x\r\n\r\n", feeding)
    assert [(r.path, r.body, r.keep_alive) for r in requests] == [("/mcp", b"hi", False)]
    assert parser.in_progress is False


def test_a_repeated_expect_continue_head_is_reported_for_each_request():
    parser = RequestParser()
    head = b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n"
    for body in (b"ab", b"cd"):
        parser.feed(head)
        assert parser.next_request() is None and parser.pop_waiting_head().expects_continue()
        parser.feed(body)
        assert parser.next_request().body == body


def test_no_waiting_head_without_a_body():
    parser = RequestParser()
    parser.feed(b"GET / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n\r\n")
    assert parser.next_request() is not None
    assert parser.pop_waiting_head() is None


def test_no_waiting_head_when_the_body_came_with_it():
    # The hot path: a request read whole is handed out whole, never gated by its head.
    parser = RequestParser()
    parser.feed(b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc")
    assert parser.next_request().body == b"abc"
    assert parser.pop_waiting_head() is None


def test_a_small_body_written_apart_from_its_head_is_read_before_the_heads_gates():
    # httpx writes head and body apart: a body no longer than SMALL_BODY costs no more to
    # buffer than a head, so its request is gated once, whole, not head first then again.
    for length in (3, SMALL_BODY):
        parser = RequestParser()
        parser.feed(b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % length)
        assert parser.next_request() is None and parser.pop_waiting_head() is None
        parser.feed(b"a" * length)
        assert len(parser.next_request().body) == length
    parser = RequestParser()
    parser.feed(b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % (SMALL_BODY + 1))
    assert parser.next_request() is None and parser.pop_waiting_head().body is None


def test_a_waiting_head_is_offered_for_a_length_or_chunked_body_not_yet_read():
    for head, rest in ((b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 16000000\r\n\r\n", b"ab"),
                       (b"POST /mcp HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", b"2\r\nab\r\n")):
        parser = RequestParser()
        parser.feed(head)
        assert parser.next_request() is None
        waiting = parser.pop_waiting_head()
        assert waiting.body is None and not waiting.keep_alive and not waiting.expects_continue()
        parser.feed(rest)   # more body: the same head is not offered again
        assert parser.next_request() is None and parser.pop_waiting_head() is None
        assert parser.in_progress


def test_head_exactly_at_the_limit_is_accepted(feeding):
    head = b"GET / HTTP/1.1\r\nHost: x\r\nX: "
    data = head + b"a" * (200 - len(head) - 4) + b"\r\n\r\n"
    assert len(data) == 200
    _, [req] = run(data, feeding, max_head=200)
    assert req.header("x") == "a" * (200 - len(head) - 4)
    assert refused(data, feeding, max_head=199).status == 431


def test_a_head_repeated_with_crlf_after_bare_lfs_is_held_to_the_limit_too():
    # Its bytes are the last head's, its blank line two bytes longer than that one's.
    head = b"GET / HTTP/1.1\nHost: x\nX: "
    head += b"a" * (200 - len(head) - 2)
    parser = RequestParser(max_head=200)
    parser.feed(head + b"\n\n")
    assert parser.next_request() is not None
    parser.feed(head + b"\r\n\r\n")
    with pytest.raises(HttpError) as refusal:
        parser.next_request()
    assert refusal.value.status == 431


def test_body_exactly_at_the_limit_is_accepted(feeding):
    data = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n0123456789"
    assert run(data, feeding, max_body=10)[1][0].body == b"0123456789"
    chunked = b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n01234\r\n5\r\n56789\r\n0\r\n\r\n"
    assert run(chunked, feeding, max_body=10)[1][0].body == b"0123456789"


# ---- chunk framing is paid for by data ----------------------------------------

TOO_SMALL = ("chunks too small: their framing (size lines, extensions, CRLFs) may be at most "
             "1/4 of the data, beyond 8192 bytes; send larger chunks")


def chunked_in(pieces, ext=b""):
    return (b"POST /mcp HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
            + b"".join(b"%x%s\r\n%s\r\n" % (len(piece), ext, piece) for piece in pieces) + b"0\r\n\r\n")


def test_a_body_in_one_byte_chunks_is_refused_once_its_framing_passes_the_allowance(feeding):
    # 5 framing bytes a chunk ("1\r\n", "\r\n"): 1,000 chunks fit the 8 KiB allowance, 2,000 do not
    _, [req] = run(chunked_in([b"a"] * 1000), feeding)
    assert req.body == b"a" * 1000
    err = refused(chunked_in([b"a"] * 2000), feeding)
    assert (err.status, err.message) == (400, TOO_SMALL)


def test_chunks_whose_data_pays_for_their_framing_are_read_whatever_the_body_length(feeding):
    # "18\r\n" and "\r\n" are 6 bytes, a quarter of 24 bytes of data: never short of credit,
    # over 30 KiB of framing; 8-byte chunks, 5 framing bytes each, run short
    pieces = [b"%024d" % i for i in range(5000)]
    _, [req] = run(chunked_in(pieces), feeding)
    assert req.body == b"".join(pieces)
    assert refused(chunked_in([b"12345678"] * 5000), feeding).message == TOO_SMALL


def test_the_credit_a_large_chunk_earns_is_capped_at_the_allowance(feeding):
    # one 64 KiB chunk earns no more than a fresh body starts with: tiny chunks still run out
    _, [req] = run(chunked_in([b"x" * 65536] + [b"a"] * 1000), feeding)
    assert len(req.body) == 65536 + 1000
    assert refused(chunked_in([b"x" * 65536] + [b"a"] * 2000), feeding).message == TOO_SMALL


def test_chunk_extensions_count_as_framing(feeding):
    ext = b";x=" + b"e" * 97   # 100 bytes more framing a chunk: some 80 chunks use the allowance
    _, [req] = run(chunked_in([b"a"] * 60, ext), feeding)
    assert req.body == b"a" * 60
    assert refused(chunked_in([b"a"] * 100, ext), feeding).message == TOO_SMALL


def test_each_request_on_a_connection_starts_with_the_whole_allowance(feeding):
    one = chunked_in([b"a"] * 1500)
    _, requests = run(one + one + one, feeding)
    assert [r.body for r in requests] == [b"a" * 1500] * 3


# ---- refusals ------------------------------------------------------------------

def post(*header_lines, body=b""):
    return b"POST /mcp HTTP/1.1\r\nHost: x\r\n" + b"".join(h + b"\r\n" for h in header_lines) + b"\r\n" + body


REFUSALS = {
    # smuggling vectors
    "cl-and-te": (post(b"Content-Length: 5", b"Transfer-Encoding: chunked", body=b"0\r\n\r\n"), 400),
    "te-and-cl": (post(b"Transfer-Encoding: chunked", b"Content-Length: 5", body=b"0\r\n\r\n"), 400),
    "two-cl-headers": (post(b"Content-Length: 3", b"Content-Length: 4", body=b"abcd"), 400),
    "cl-list-differs": (post(b"Content-Length: 3, 4", body=b"abcd"), 400),
    "cl-negative": (post(b"Content-Length: -1"), 400),
    "cl-plus-sign": (post(b"Content-Length: +3", body=b"abc"), 400),
    "cl-letters": (post(b"Content-Length: abc"), 400),
    "cl-hex": (post(b"Content-Length: 0x10"), 400),
    "cl-underscore": (post(b"Content-Length: 1_0"), 400),
    "cl-empty": (post(b"Content-Length: "), 400),
    "cl-empty-list-item": (post(b"Content-Length: 3,", body=b"abc"), 400),
    "cl-absurd": (post(b"Content-Length: " + b"9" * 30), 400),
    "cl-over-cap": (post(b"Content-Length: %d" % (16 * 1024 * 1024 + 1)), 413),
    "te-gzip": (post(b"Transfer-Encoding: gzip"), 501),
    "te-gzip-chunked": (post(b"Transfer-Encoding: gzip, chunked", body=b"0\r\n\r\n"), 501),
    "te-identity": (post(b"Transfer-Encoding: identity"), 501),
    "chunk-size-garbage": (post(b"Transfer-Encoding: chunked", body=b"zz\r\nab\r\n0\r\n\r\n"), 400),
    "chunk-size-0x": (post(b"Transfer-Encoding: chunked", body=b"0x2\r\nab\r\n0\r\n\r\n"), 400),
    "chunk-size-negative": (post(b"Transfer-Encoding: chunked", body=b"-2\r\nab\r\n0\r\n\r\n"), 400),
    "chunk-size-empty": (post(b"Transfer-Encoding: chunked", body=b"\r\nab\r\n0\r\n\r\n"), 400),
    "chunk-size-huge": (post(b"Transfer-Encoding: chunked", body=b"1" * 17 + b"\r\n"), 400),
    "chunk-size-then-garbage": (post(b"Transfer-Encoding: chunked", body=b"2 x\r\nab\r\n0\r\n\r\n"), 400),
    "chunk-without-crlf": (post(b"Transfer-Encoding: chunked", body=b"2\r\nabcd\r\n0\r\n\r\n"), 400),
    "chunk-line-endless": (post(b"Transfer-Encoding: chunked", body=b"2;" + b"e" * 5000), 400),
    "trailer-without-colon": (post(b"Transfer-Encoding: chunked", body=b"0\r\nbogus\r\n\r\n"), 400),
    # malformed heads
    "request-line-two-parts": (b"GET /\r\n\r\n", 400),
    "request-line-double-space": (b"GET  / HTTP/1.1\r\nHost: x\r\n\r\n", 400),
    "request-line-extra-part": (b"GET / HTTP/1.1 x\r\n\r\n", 400),
    "request-line-no-method": (b" / HTTP/1.1\r\nHost: x\r\n\r\n", 400),
    "request-line-tab": (b"GET\t/ HTTP/1.1\r\nHost: x\r\n\r\n", 400),
    "method-bad-char": (b"G(T / HTTP/1.1\r\nHost: x\r\n\r\n", 400),
    "version-lowercase": (b"GET / http/1.1\r\n\r\n", 400),
    "version-garbage": (b"GET / HTTP/x\r\n\r\n", 400),
    "header-no-colon": (post(b"Host localhost"), 400),
    "header-space-before-colon": (post(b"Host : localhost"), 400),
    "header-tab-before-colon": (post(b"Host\t: localhost"), 400),
    "header-obs-fold": (post(b"X-Long: one", b"  two"), 400),
    "header-obs-fold-tab": (post(b"X-Long: one", b"\ttwo"), 400),
    "header-name-control": (post(b"X\x01Y: 1"), 400),
    "header-name-bad-token": (post(b"X(Y): 1"), 400),
    "header-name-empty": (post(b": value"), 400),
    "header-value-nul": (post(b"X: a\x00b"), 400),
    "header-value-bare-cr": (post(b"X: a\rb"), 400),
    "header-value-trailing-bare-cr": (b"GET / HTTP/1.1\r\nHost: x\r\nX: a\r\r\n\r\n", 400),
    "request-line-trailing-bare-cr": (b"GET / HTTP/1.1\r\r\n\r\n", 400),
    "header-name-non-ascii": (post("X-Caf\u00e9: 1".encode("utf-8")), 400),
    "header-name-non-ascii-bare-lf": (b"GET / HTTP/1.1\nHost: x\nX-\xe9: 1\n\n", 400),
    "target-non-ascii": ("GET /caf\u00e9 HTTP/1.1\r\nHost: x\r\n\r\n".encode("utf-8"), 400),
    "method-non-ascii": (b"G\xc9T / HTTP/1.1\r\nHost: x\r\n\r\n", 400),
    "header-value-non-ascii-and-nul": (post(b"X: caf\xc3\xa9\x00"), 400),
    # obs-text is opaque: no latin-1 digit or space makes a framing header valid
    "cl-superscript-digit": (post(b"Content-Length: 1\xb2", body=b"a" * 12), 400),
    "cl-list-superscript-digit": (post(b"Content-Length: \xb9, \xb9", body=b"a"), 400),
    "cl-nbsp": (post(b"Content-Length: 1\xa0", body=b"a"), 400),
    "te-chunked-nbsp": (post(b"Transfer-Encoding: chunked\xa0", body=b"0\r\n\r\n"), 501),
    "te-chunked-nel": (post(b"Transfer-Encoding: \x85chunked", body=b"0\r\n\r\n"), 501),
    # unsupported versions
    "http-2": (b"GET / HTTP/2.0\r\n\r\n", 505),
    "http-0.9": (b"GET / HTTP/0.9\r\n\r\n", 505),
    # not HTTP/DIGIT.DIGIT (RFC 9112 2.3): malformed, no version to refuse
    "http-1.10": (b"GET / HTTP/1.10\r\n\r\n", 400),
    "http-3": (b"GET / HTTP/3\r\n\r\n", 400),
    "http-1-no-minor": (b"GET / HTTP/1\r\n\r\n", 400),
    "http-11-no-dot": (b"GET / HTTP/11\r\n\r\n", 400),
    # limits
    "endless-empty-lines": (b"\r\n" * 600, 400),
    "head-too-large": (b"GET / HTTP/1.1\r\nHost: x\r\nX: " + b"a" * 70000 + b"\r\n\r\n", 431),
    "head-too-large-unterminated": (b"GET / HTTP/1.1\r\nHost: x\r\nX: " + b"a" * 70000, 431),
    "request-line-too-long": (b"GET /mcp?" + b"a" * 70000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414),
    "request-line-too-long-unterminated": (b"GET /mcp?" + b"a" * 70000, 414),
}


@pytest.mark.parametrize("name", list(REFUSALS))
def test_refusals(feeding, name):
    data, status = REFUSALS[name]
    if feeding is bytewise and len(data) > 6000:
        # the same code path as whole, with 70k tiny feeds; a few KiB pieces keep it fast
        err = refused(data, lambda d: [d[i:i + 4093] for i in range(0, len(d), 4093)])
    else:
        err = refused(data, feeding)
    assert err.status == status, err.message
    assert err.message


@pytest.mark.parametrize("lines", [(b"Transfer-Encoding: chunked", b"Transfer-Encoding: chunked"),
                                   (b"Transfer-Encoding: chunked, Chunked",),
                                   (b"Transfer-Encoding: gzip, chunked", b"Transfer-Encoding: chunked")])
def test_chunked_twice_is_a_framing_error_not_an_unknown_coding(feeding, lines):
    err = refused(post(*lines, body=b"0\r\n\r\n"), feeding)
    assert (err.status, err.message) == (400, "Transfer-Encoding chunked given more than once")


@pytest.mark.parametrize("lines", [(b"Transfer-Encoding: chunked, gzip",),
                                   (b"Transfer-Encoding: chunked", b"Transfer-Encoding: gzip")])
def test_chunked_before_another_coding_is_a_framing_error(feeding, lines):
    err = refused(post(*lines, body=b"0\r\n\r\n"), feeding)
    assert (err.status, err.message) == (400, "Transfer-Encoding chunked must be the last coding")
    # a coding we lack with chunked last is still ours to refuse as unsupported
    assert refused(post(b"Transfer-Encoding: gzip, chunked", body=b"0\r\n\r\n"), feeding).status == 501


@pytest.mark.parametrize("value", [b",chunked", b"chunked,", b" , chunked , ,"])
def test_empty_transfer_coding_elements_are_ignored(feeding, value):
    # RFC 9110 5.6.1: ",chunked" had been refused as an unsupported coding (501)
    _, requests = run(post(b"Transfer-Encoding: " + value, body=b"2\r\n{}\r\n0\r\n\r\n"), feeding)
    assert [r.body for r in requests] == [b"{}"]


@pytest.mark.parametrize("value", [b"", b",", b" , ,"])
def test_a_transfer_encoding_naming_no_coding_is_a_framing_error(feeding, value):
    err = refused(post(b"Transfer-Encoding: " + value, body=b"0\r\n\r\n"), feeding)
    assert (err.status, err.message) == (400, "Transfer-Encoding names no coding")


def test_a_refusal_once_the_head_is_read_carries_its_origin(feeding):
    origin = b"Origin: https://app.example"
    assert refused(post(origin, b"Content-Length: 11", body=b"x" * 11), feeding,
                   max_body=10).origin == "https://app.example"
    bad_chunk = post(origin, b"Transfer-Encoding: chunked", body=b"zz\r\n")
    assert refused(bad_chunk, feeding).origin == "https://app.example"
    assert refused(post(origin, b"Transfer-Encoding: gzip"), feeding).origin == "https://app.example"
    # a head it could not read names nothing, and neither does a request without one
    assert refused(post(origin, b"Bad Header: 1"), feeding).origin is None
    assert refused(post(b"Content-Length: 11", body=b"x" * 11), feeding, max_body=10).origin is None
    # nor a refusal of a later head, after a request whose head named one
    pipelined = post(origin, b"Content-Length: 0") + b"NOT HTTP\r\n\r\n"
    assert refused(pipelined, feeding).origin is None


def test_small_limits_give_431_and_413(feeding):
    assert refused(b"GET / HTTP/1.1\r\nHost: x\r\nX: " + b"a" * 100 + b"\r\n\r\n", feeding,
                   max_head=64).status == 431
    assert refused(post(b"Content-Length: 11", body=b"x" * 11), feeding, max_body=10).status == 413
    # chunked bodies count cumulatively: each chunk fits, the sum does not
    chunked = post(b"Transfer-Encoding: chunked", body=b"6\r\n012345\r\n6\r\n678901\r\n0\r\n\r\n")
    assert refused(chunked, feeding, max_body=10).status == 413
    trailers = post(b"Transfer-Encoding: chunked", body=b"0\r\nX-T: " + b"t" * 100 + b"\r\n\r\n")
    assert refused(trailers, feeding, max_head=64).status == 431


def test_a_request_line_past_the_head_limit_is_414_not_431(feeding):
    # RFC 9112 3: a target longer than the server reads MUST get 414; a long header is 431
    err = refused(b"GET /mcp?" + b"a" * 100 + b" HTTP/1.1\r\nHost: x\r\n\r\n", feeding, max_head=64)
    assert (err.status, err.message) == (414, "request line too long: over 64 bytes, the most a request head may take")
    line = b"GET /mcp?" + b"a" * 40 + b" HTTP/1.1\r\n"
    assert refused(line + b"Host: x\r\nX: " + b"b" * 30 + b"\r\n\r\n", feeding, max_head=64).status == 431


def test_a_body_over_the_limit_is_refused_naming_the_limit_and_its_knob(feeding):
    message = "request body too large: over 10 bytes, the most GS_MCP_MAX_BODY allows"
    assert refused(post(b"Content-Length: 11", body=b"x" * 11), feeding, max_body=10).message == message
    chunked = post(b"Transfer-Encoding: chunked", body=b"6\r\n012345\r\n6\r\n678901\r\n0\r\n\r\n")
    assert refused(chunked, feeding, max_body=10).message == message


def test_oversize_content_length_is_refused_before_the_body_arrives():
    parser = RequestParser(max_body=1000)
    parser.feed(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1001\r\n\r\n")
    with pytest.raises(HttpError) as caught:
        parser.next_request()
    assert caught.value.status == 413


def test_oversize_chunk_is_refused_from_its_size_line():
    parser = RequestParser(max_body=1000)
    parser.feed(b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3e9\r\n")
    with pytest.raises(HttpError) as caught:
        parser.next_request()
    assert caught.value.status == 413


def test_feed_refuses_unbounded_buffering():
    parser = RequestParser(max_head=1024, max_body=1024)
    request = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n" + b"x" * 1000
    parser.feed(request * 60)   # under the bound: nothing taken yet, nothing refused
    with pytest.raises(HttpError) as caught:
        parser.feed(request * 10)
    assert caught.value.status == 413
    with pytest.raises(HttpError):
        parser.next_request()


def test_parser_stays_dead_after_an_error():
    parser = RequestParser()
    parser.feed(b"GET / HTTP/9.9\r\n\r\n")
    with pytest.raises(HttpError) as first:
        parser.next_request()
    parser.feed(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    with pytest.raises(HttpError) as second:
        parser.next_request()
    assert first.value.status == second.value.status == 505
    assert parser.in_progress is False


def test_discard_drops_what_is_buffered_and_ignores_what_comes():
    parser = RequestParser()
    parser.feed(b"GET / HTTP/1.1\r\nHost: x\r\n\r\nPOST / HTTP/1.1\r\nHost: x\r\nContent-Length: 9\r\n\r\nxx")
    assert parser.next_request().path == "/"
    assert parser.next_request() is None and parser.in_progress   # mid-body
    parser.discard()
    assert parser.buffered == 0 and not parser.in_progress
    parser.feed(b"x" * 7 + b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert parser.next_request() is None and parser.buffered == 0
    assert parser.pop_waiting_head() is None


def test_discard_keeps_a_dead_parser_dead():
    parser = RequestParser()
    parser.feed(b"GET / HTTP/9.9\r\n\r\n")
    with pytest.raises(HttpError):
        parser.next_request()
    parser.discard()
    with pytest.raises(HttpError) as again:
        parser.next_request()
    assert again.value.status == 505 and parser.buffered == 0


def test_error_in_a_later_pipelined_request_keeps_earlier_ones():
    parser = RequestParser()
    parser.feed(b"GET /ok HTTP/1.1\r\nHost: x\r\n\r\nGET /bad HTTP/1.1\r\nHost: x\r\nBad Header: x\r\n\r\n")
    assert parser.next_request().path == "/ok"
    with pytest.raises(HttpError) as caught:
        parser.next_request()
    assert caught.value.status == 400


# ---- writers -------------------------------------------------------------------

class _FakeSocket:
    def __init__(self, data):
        self._data = data

    def makefile(self, mode):
        return io.BytesIO(self._data)


def read_with_stdlib(raw, method="GET"):
    """Parse our output with http.client, an independent HTTP implementation."""
    resp = http.client.HTTPResponse(_FakeSocket(raw), method=method)
    resp.begin()
    return resp, resp.read()


def test_response_head_and_body():
    raw = response(200, [("Content-Type", "application/json"), ("Mcp-Session-Id", "s1")], b'{"a":1}')
    assert raw == (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: s1\r\n"
                   b"Content-Length: 7\r\nConnection: keep-alive\r\n\r\n{\"a\":1}")
    resp, body = read_with_stdlib(raw)
    assert (resp.status, resp.reason, body) == (200, "OK", b'{"a":1}')
    assert resp.getheader("mcp-session-id") == "s1"


def test_response_to_head_has_the_content_length_but_no_body():
    raw = response(405, [("Allow", "GET")], b"eighteen bytes!!\r\n", head=True)
    assert raw == (b"HTTP/1.1 405 Method Not Allowed\r\nAllow: GET\r\n"
                   b"Content-Length: 18\r\nConnection: keep-alive\r\n\r\n")
    resp, body = read_with_stdlib(raw, method="HEAD")
    assert (resp.status, resp.getheader("content-length"), body) == (405, "18", b"")


@pytest.mark.parametrize("status, reason", [
    (202, "Accepted"), (400, "Bad Request"), (404, "Not Found"), (405, "Method Not Allowed"),
    (413, "Content Too Large"), (414, "URI Too Long"), (416, "Range Not Satisfiable"),
    (422, "Unprocessable Content"), (431, "Request Header Fields Too Large"),
    (501, "Not Implemented"), (505, "HTTP Version Not Supported"), (599, "Unknown"),
])
def test_response_reason_phrases(status, reason):
    # RFC 9110's phrases on every Python: 3.11 and 3.12's http.HTTPStatus gives RFC 7231's
    # "Request Entity Too Large" where 3.13's says "Content Too Large".
    raw = response(status, keep_alive=False)
    assert raw.startswith(b"HTTP/1.1 %d %s\r\n" % (status, reason.encode()))
    assert b"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n" in raw


def test_response_204_has_no_content_length():
    raw = response(204)
    assert raw == b"HTTP/1.1 204 No Content\r\nConnection: keep-alive\r\n\r\n"
    with pytest.raises(ValueError):
        response(204, body=b"x")


@pytest.mark.parametrize("headers", [
    [("X-Evil", "a\r\nSet-Cookie: b")],
    [("X-Evil", "a\nb")],
    [("Bad Name", "v")],
    [("Content-Length", "5")],
    [("connection", "close")],
    [("Transfer-Encoding", "chunked")],
])
def test_response_refuses_injection_and_writer_owned_headers(headers):
    for _ in range(2):   # checked header lists are remembered; a refused one never is
        with pytest.raises(ValueError):
            response(200, headers, b"hello")


def test_response_headers_the_same_whether_remembered_or_not():
    expected = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-N: 7\r\n"
                b"Content-Length: 2\r\nConnection: keep-alive\r\n\r\n{}")
    for headers in ([("Content-Type", "application/json"), ("X-N", 7)],
                    (("Content-Type", "application/json"), ("X-N", 7)),
                    [("Content-Type", b"application/json"), (b"X-N", "7")],
                    [("Content-Type", bytearray(b"application/json")), ("X-N", 7)]):   # unhashable
        assert response(200, headers, b"{}") == expected
        assert response(200, headers, b"{}") == expected


def test_stream_head_and_chunks_read_back():
    raw = (stream_head(200, [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache")])
           + chunk(b"data: 1\n\n") + chunk(b"") + chunk(b"data: 2\n\n") + LAST_CHUNK)
    assert raw.startswith(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                          b"Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n")
    resp, body = read_with_stdlib(raw)
    assert resp.getheader("transfer-encoding") == "chunked"
    assert body == b"data: 1\n\ndata: 2\n\n"


def test_chunk_encoding():
    assert chunk(b"abc") == b"3\r\nabc\r\n"
    assert chunk(b"x" * 255) == b"ff\r\n" + b"x" * 255 + b"\r\n"
    assert chunk(b"") == b""
    assert LAST_CHUNK == b"0\r\n\r\n"
    with pytest.raises(ValueError):
        stream_head(200, [("Content-Length", "1")])


def test_the_head_end_search_agrees_with_the_grammar_on_random_bytes():
    # The blank line ending a head is \r?\n\r?\n; the parser finds it with two
    # bytes.find calls instead of a regex, and must find the same span.
    import random
    import re

    from gsmcpd.wire.http import _head_end

    grammar = re.compile(rb"\r?\n\r?\n")
    rng = random.Random(7)
    for _ in range(20000):
        buf = bytearray(b"".join(rng.choice([b"\r", b"\n", b"a", b" "]) for _ in range(rng.randint(0, 12))))
        start, stop = rng.randint(0, len(buf)), rng.randint(0, len(buf) + 3)
        match = grammar.search(buf, start, stop)
        assert _head_end(buf, start, stop) == (None if match is None else match.span()), (bytes(buf), start, stop)


def test_a_stream_head_for_an_http_1_0_client_is_close_delimited():
    # RFC 9112 6.1: no Transfer-Encoding in a response to an HTTP/1.0 request.
    raw = stream_head(200, [("Content-Type", "text/event-stream")], chunked=False)
    assert raw == b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
