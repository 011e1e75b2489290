"""Unit tests for Host and Origin syntax (gsmcpd/wire/hosts.py), the DNS-rebinding gate's parsing."""

import pytest

from gsmcpd.wire import hosts


@pytest.mark.parametrize("value,parsed", [
    ("localhost", ("localhost", None)), ("LocalHost:8000", ("localhost", "8000")),
    ("127.0.0.1:8000", ("127.0.0.1", "8000")), ("[::1]", ("::1", None)), ("[::1]:8000", ("::1", "8000")),
    ("evil.example", ("evil.example", None)), ("localhost:", ("localhost", "")),   # port = *DIGIT
    ("", ("", None)),   # an empty Host is well-formed (and names no loopback host)
    ("localhost:65535", ("localhost", "65535")), ("localhost:1", ("localhost", "1")),
    ("localhost:0080", ("localhost", "80")), ("localhost:" + "0" * 5000 + "80", ("localhost", "80")),
    ("[fe80::1%25eth0]:80", ("fe80::1%25eth0", "80")), ("[v1.fe80::a+en1]", ("[v1.fe80::a+en1]", None)),
    # a zone (RFC 6874), IPvFuture; IPv4 in IPv6 below (its compressed form varies by Python version)
])
def test_authority_of_a_host_value(value, parsed):
    assert hosts.authority(value) == parsed


@pytest.mark.parametrize("value,same", [
    ("[0:0:0:0:0:0:0:1]:8000", "[::1]:8000"), ("[0::1]", "[::1]"), ("[::FFFF:127.0.0.1]", "[::ffff:7f00:1]"),
    ("[2001:DB8:0:0:1:0:0:1]", "[2001:db8::1:0:0:1]"), ("[FE80:0::1%25Eth0]", "[fe80::1%25eth0]"),
])
def test_an_ipv6_address_is_one_host_however_written(value, same):
    # curl sends the address as typed, a browser compressed: the loopback check and the
    # allow list compare strings ("::1").
    assert hosts.authority(value) == hosts.authority(same)


@pytest.mark.parametrize("host,loopback", [
    ("localhost", True), ("LOCALHOST", True), ("127.0.0.1", True), ("127.0.0.2", True), ("::1", True),
    ("[::1]", True), ("::ffff:127.0.0.1", True), ("::ffff:7f00:2", True), ("[::ffff:127.0.0.1]", True),
    ("0.0.0.0", False), ("::", False), ("192.0.2.7", False), ("::ffff:192.0.2.7", False),
    ("::127.0.0.1", False),   # IPv4-compatible, not mapped: nothing routes it to 127.0.0.1
    ("127.1", False), ("evil.example", False), ("", False), ("[v1.127.0.0.1]", False),
])
def test_loopback_is_127_8_and_1_in_ipv6_and_mapped(host, loopback):
    # Python 3.11's is_loopback said no to ::ffff:127.0.0.1, which the router's gates took
    # as loopback: bound there without auth, the configuration refused it as network-facing.
    assert hosts.is_loopback(host) is loopback


@pytest.mark.parametrize("literal,name", [("[v1.app.example]", "v1.app.example"), ("[VFACE.example]", "vface.example")])
def test_an_ipvfuture_literal_is_never_the_name_it_spells(literal, name):
    # Stripped of its brackets it was that name: listed, it passed the Host and Origin gates.
    assert hosts.authority(literal)[0] != hosts.authority(name)[0]
    assert hosts.origin_key("http://" + literal) != hosts.origin_key("http://" + name)
    for form in (literal, literal.replace(".", ".a:b.", 1)):   # serialised as written, once bracketed
        key = hosts.origin_key("http://%s:8080" % form)
        assert hosts.origin_key(hosts.serialise_origin(*key)) == key
        assert hosts.serialise_origin(*key) == "http://%s:8080" % form.lower()


@pytest.mark.parametrize("value", [
    "[::1]evil.example", "[::1]:8000evil", "[::1].evil.example", "[::1",   # after "]" only ":port"
    "http://127.0.0.1", "//127.0.0.1", "127.0.0.1/mcp", "127.0.0.1?x",     # a URL is not a Host
    "evil.example@127.0.0.1", "user@localhost",                            # nor is userinfo
    "localhost:80a", "localhost:-1", "localhost:8000:1", "::1",            # a port is digits only
    "127.0.0.1, 127.0.0.1", "local host", "localhost\t",                   # two Host lines joined
    "localhost:99999", "localhost:65536", "localhost:0", "[::1]:000",        # a port is 1..65535
    "localhost:" + "9" * 5000,                                             # beyond int()'s 4300 digits
    "[localhost]", "[127.0.0.1]", "[:]", "[::1::2]", "[v1]", "[fe80::1%eth0]",   # brackets hold IPv6 or
    "[fe80::1%25]",                                                              # IPvFuture, not names
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
    "http://[::1]evil.example", "http://localhost:x", "http://localhost:99999", "http://localhost:0",
    "http://[localhost]:3000", "http://[127.0.0.1]",   # a name in brackets passed as a loopback host
])
def test_malformed_origins_have_no_host(value):
    assert hosts.origin(value) is None


@pytest.mark.parametrize("value", ["http://", "http://:8080", "https://:"])
def test_an_origin_with_an_empty_host_is_malformed(value):
    # An origin names a host (RFC 6454 7.1), and the allow list refuses an empty one: its
    # refusal must not send the client to list it.
    assert hosts.origin(value) is None and hosts.origin_key(value) is None


@pytest.mark.parametrize("target,authority", [
    ("http://evil.example/mcp", "evil.example"), ("HTTPS://127.0.0.1:8000/mcp?x=1", "127.0.0.1:8000"),
    ("http://evil.example?x", "evil.example"), ("http://u@127.0.0.1/mcp", "u@127.0.0.1"),
    ("/mcp", None), ("*", None), ("ftp://evil.example/mcp", None),
])
def test_absolute_authority(target, authority):
    assert hosts.absolute_authority(target) == authority


@pytest.mark.parametrize("value,key", [
    ("http://localhost:6274", ("http", "localhost", 6274)),
    ("HTTPS://App.Example:443", ("https", "app.example", None)),    # the scheme's default port
    ("http://app.example:80", ("http", "app.example", None)), ("http://app.example:0080", ("http", "app.example", None)),
    ("https://app.example:80", ("https", "app.example", 80)), ("http://[::1]:3000", ("http", "::1", 3000)),
    ("vscode-webview://abc", ("vscode-webview", "abc", None)), ("http://app.example:", ("http", "app.example", None)),
    ("http://app.example:" + "0" * 5000 + "8080", ("http", "app.example", 8080)),
])
def test_origin_key_is_the_origin_as_a_browser_serialises_it(value, key):
    assert hosts.origin_key(value) == key
    assert hosts.origin_key(hosts.serialise_origin(*key)) == key


@pytest.mark.parametrize("value", ["null", "http://", "http://:80", "http://app.example:0", "http://app.example:65536",
                                   "http://app.example/", "http://user@app.example", "app.example", "1http://a.example",
                                   "http://app.example:" + "9" * 5000])
def test_what_is_no_origin_has_no_origin_key(value):
    assert hosts.origin_key(value) is None


def test_serialise_origin_brackets_an_ipv6_host_and_omits_no_port():
    assert hosts.serialise_origin("http", "::1", 3000) == "http://[::1]:3000"
    assert hosts.serialise_origin("https", "app.example", None) == "https://app.example"
