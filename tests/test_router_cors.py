"""Unit tests for CORS (gsmcpd/router/cors.py): which origins are granted, and what they get."""

import pytest

from gsmcpd.config import parse_allowed_origins
from gsmcpd.router.cors import ALLOWED_HEADERS, EXPOSED, Cors

LISTED = parse_allowed_origins("http://LOCALHOST:6274, https://app.example:443 bare.example")


@pytest.mark.parametrize("origin,granted", [
    ("http://localhost:6274", True), ("HTTP://localhost:6274", True),     # as listed
    ("https://app.example", True), ("https://app.example:443", True),    # the default port, written or not
    ("http://bare.example", True), ("https://bare.example:8443", True),   # a bare host: any scheme, any port
    ("http://localhost:6275", False), ("https://localhost:6274", False),  # an origin: scheme and port too
    ("http://localhost", False), ("http://127.0.0.1:6274", False),       # loopback, but not listed
    ("http://app.example", False), ("https://app.example:8443", False),
    ("http://sub.bare.example", False), ("null", False), ("http://bare.example/", False),
])
def test_listed_origins_are_granted(origin, granted):
    assert Cors(LISTED).allows(origin) is granted


def test_a_granted_origin_is_named_back_as_sent_and_may_read_the_session_id():
    headers = dict(Cors(LISTED).reply_headers("http://localhost:6274"))
    assert headers == {"Access-Control-Allow-Origin": "http://localhost:6274", "Access-Control-Expose-Headers": EXPOSED,
                       "Vary": "Origin"}
    assert "Mcp-Session-Id" in EXPOSED and "WWW-Authenticate" in EXPOSED


def test_no_origin_or_an_unlisted_one_gets_no_cors_but_every_reply_varies_by_origin():
    cors = Cors(LISTED)
    assert cors.reply_headers(None) == cors.reply_headers("http://localhost:5173") == (("Vary", "Origin"),)


def test_the_hosts_listed_are_every_origins_host_and_every_bare_host():
    assert Cors(LISTED).listed_hosts == {"localhost", "app.example", "bare.example"}
    assert Cors(()).listed_hosts == frozenset()


def test_nothing_listed_grants_nothing():
    cors = Cors(())
    assert not cors and not cors.allows("http://localhost:6274")
    assert Cors(LISTED)


@pytest.mark.parametrize("requested,allowed", [
    ("content-type, mcp-protocol-version", "content-type, mcp-protocol-version"),   # granted as asked
    ("  authorization ", "authorization"), ("x-request-id,mcp-session-id", "x-request-id,mcp-session-id"),
    (None, ALLOWED_HEADERS), ("", ALLOWED_HEADERS),                                 # not asked: the MCP set
    ("bad header", ALLOWED_HEADERS), ("a,,b", ALLOWED_HEADERS), ("a\r\nX-Evil: 1", ALLOWED_HEADERS),
])
def test_a_preflight_grants_the_requested_headers_when_they_are_header_names(requested, allowed):
    assert Cors.preflight_headers("GET, POST, DELETE", requested) == [
        ("Access-Control-Allow-Methods", "GET, POST, DELETE"), ("Access-Control-Allow-Headers", allowed),
        ("Access-Control-Max-Age", "600")]


def test_a_preflight_that_asks_for_private_network_access_is_granted_it():
    granted = dict(Cors.preflight_headers("GET", None, private_network=True))
    assert granted["Access-Control-Allow-Private-Network"] == "true"
    assert "Access-Control-Allow-Private-Network" not in dict(Cors.preflight_headers("GET", None))
