"""Host, Origin and request-target authority syntax.

One reading for the DNS-rebinding gate (router/app.py) and the allowed_origins knob
(config.py), so a configured origin and a received one are parsed alike. The gate runs
on every request and clients repeat their Host and Origin: parsing is cached per value.
"""

import functools
import ipaddress
import re

_HOST_CHARS = r"A-Za-z0-9\-._~!$&'()*+,;=%"   # RFC 3986 unreserved, sub-delims, pct-encoded
# uri-host [":" port] (RFC 9110 7.2): an IP literal in brackets, or a reg-name / IPv4
# address; nothing else (no userinfo, path, scheme) and only digits after the colon.
_AUTHORITY = re.compile(r"(\[[%s:]+\]|[%s]*)(?::([0-9]*))?" % (_HOST_CHARS, _HOST_CHARS))
# What brackets may hold (RFC 3986 3.2.2): an IPv6 address, with a zone after "%25"
# (RFC 6874), or IPvFuture; never a name ("[localhost]" passed the gates as localhost).
_ZONE = re.compile(r"(?:[A-Za-z0-9\-._~]|%[0-9A-Fa-f]{2})+")
_IPV_FUTURE = re.compile(r"[vV][0-9A-Fa-f]+\.[A-Za-z0-9\-._~!$&'()*+,;=:]+")
_ORIGIN = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*)://(.*)")   # RFC 6454 7.1: scheme "://" host [":" port]
DEFAULT_PORTS = {"http": 80, "https": 443}
_ABSOLUTE_FORM = re.compile(r"https?://([^/?#]*)", re.IGNORECASE)   # the forms wire/http.py takes a path from


@functools.lru_cache(maxsize=256)
def authority(value):
    """(host, port) of a Host value: host lower-cased without brackets (an IPv6 address
    compressed, _ip_literal), port a digit
    string without leading zeros, "" for an empty one (RFC 3986 port = *DIGIT), or None.
    None when the value is not `uri-host [":" port]` or the port is not 1..65535."""
    match = _AUTHORITY.fullmatch(value)
    if not match:
        return None
    host = match.group(1).lower()
    if host[:1] == "[":
        host = _ip_literal(host[1:-1])
        if host is None:
            return None
    port = match.group(2)
    if port:
        port = port.lstrip("0")
        # Length first: int() of over 4300 digits raises, and no port has more than 5.
        if not 0 < len(port) <= 5 or int(port) > 65535:
            return None
    return host, port


def _ip_literal(inside):
    """What the brackets of a lower-case host hold, an IPv6 address (with a zone) or
    IPvFuture, the address in its one compressed form ("0:0::1" is "::1": as a browser
    writes it, while curl sends it as typed); None for anything else. IPvFuture keeps its
    brackets: without them "[v1.app.example]" read as the name v1.app.example."""
    if inside[:1] == "v":
        return "[%s]" % inside if _IPV_FUTURE.fullmatch(inside) else None
    address, percent, zone = inside.partition("%25")
    if "%" in address or (percent and not _ZONE.fullmatch(zone)):   # ipaddress takes "%eth0" too
        return None
    try:
        return ipaddress.IPv6Address(address).compressed + percent + zone
    except ValueError:
        return None


@functools.lru_cache(maxsize=256)
def is_loopback(host):
    """Whether `host`, a bind address (brackets allowed) or a host as authority() gives it,
    is this machine's loopback: localhost (any case), 127.0.0.0/8, ::1, or 127.0.0.0/8
    IPv4-mapped ([::ffff:127.0.0.1] reaches a server bound to 127.0.0.1; Python 3.11's
    is_loopback says no to it). The one reading for the configuration's check (no auth
    off loopback) and the router's Host and Origin gates."""
    if host.lower() == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:   # a name, or 127.1: a browser and curl send that as 127.0.0.1
        return False
    return address.is_loopback or bool(getattr(address, "ipv4_mapped", None) and address.ipv4_mapped.is_loopback)


@functools.lru_cache(maxsize=256)
def origin(value):
    """(host, port) of an Origin value, as authority(); None for "null" and anything
    that is not `scheme://host[:port]`, an empty host too (no allow list can name it)."""
    match = _ORIGIN.fullmatch(value)
    parsed = match and authority(match.group(2))
    return parsed if parsed and parsed[0] else None


@functools.lru_cache(maxsize=256)
def origin_key(value):
    """The origin an Origin value names, as a browser serialises it (RFC 6454 6.2):
    (scheme, host, port), lower-case, the port an int or None when it is the scheme's
    default. None for "null" and anything that is not `scheme://host[:port]`, or whose
    host is empty or port out of range."""
    parsed = origin(value)
    if parsed is None:
        return None
    scheme, (host, port) = _ORIGIN.fullmatch(value).group(1).lower(), parsed
    port = int(port) if port else None
    return scheme, host, None if port == DEFAULT_PORTS.get(scheme) else port


def serialise_origin(scheme, host, port):
    """An origin_key() as a browser writes it in an Origin header."""
    host = "[%s]" % host if ":" in host and host[:1] != "[" else host   # IPvFuture has its own
    return "%s://%s" % (scheme, host) if port is None else "%s://%s:%d" % (scheme, host, port)


def absolute_authority(target):
    """The authority of an absolute-form request target (http://host/mcp), else None."""
    match = _ABSOLUTE_FORM.match(target)
    return match.group(1) if match else None
