"""Unit tests for Host and Origin syntax (gsmcpd/wire/hosts.py), the DNS-rebinding gate's parsing."""

import pytest

from gsmcpd.wire import hosts


@pytest.mark.parametrize("value,parsed", [
    ("localhost", ("localhost", None)), ("LocalHost:8000", ("localhost", "8000")),
    ("127.0.0.1:8000", ("127.0.0.1", "8000")), ("[::1]", ("::1", None)), ("[::1]:8000", ("::1", "8000")),
    ("evil.example", ("evil.example", None)), ("localhost:", ("localhost", "")),   # port = *DIGIT
    ("", ("", None)),   # an empty Host is well-formed (and names no loopback host)
])
def test_authority_of_a_host_value(value, parsed):
    assert hosts.authority(value) == parsed


@pytest.mark.parametrize("value", [
    "[::1]evil.example", "[::1]:8000evil", "[::1].evil.example", "[::1",   # after "]" only ":port"
    "http://127.0.0.1", "//127.0.0.1", "127.0.0.1/mcp", "127.0.0.1?x",     # a URL is not a Host
    "evil.example@127.0.0.1", "user@localhost",                            # nor is userinfo
    "localhost:80a", "localhost:-1", "localhost:8000:1", "::1",            # a port is digits only
    "127.0.0.1, 127.0.0.1", "local host", "localhost\t",                   # two Host lines joined
])
def test_malformed_host_values_have_no_authority(value):
    assert hosts.authority(value) is None


@pytest.mark.parametrize("value,host", [
    ("http://localhost:3000", "localhost"), ("https://127.0.0.1", "127.0.0.1"),
    ("http://[::1]:8080", "::1"), ("HTTPS://App.Example:8443", "app.example"),
    ("vscode-webview://abc123", "abc123"),
])
def test_origin_host(value, host):
    assert hosts.origin(value)[0] == host


@pytest.mark.parametrize("value", [
    "null", "localhost", "127.0.0.1:8000", "http://", "://localhost",
    "http://localhost/", "http://localhost/app", "http://evil.example@127.0.0.1",
    "http://[::1]evil.example", "http://localhost:x",
])
def test_malformed_origins_have_no_host(value):
    parsed = hosts.origin(value)
    assert parsed is None or parsed[0] == ""


@pytest.mark.parametrize("target,authority", [
    ("http://evil.example/mcp", "evil.example"), ("HTTPS://127.0.0.1:8000/mcp?x=1", "127.0.0.1:8000"),
    ("http://evil.example?x", "evil.example"), ("http://u@127.0.0.1/mcp", "u@127.0.0.1"),
    ("/mcp", None), ("*", None), ("ftp://evil.example/mcp", None),
])
def test_absolute_authority(target, authority):
    assert hosts.absolute_authority(target) == authority
