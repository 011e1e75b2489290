"""RFC 9728 Protected Resource Metadata and the derived scope list.

Pure: no I/O. The router serves `metadata_document()` on every path in
`metadata_paths()`; the challenge header points at `metadata_url()`.
"""
from __future__ import annotations

import json
import re
from typing import Iterable
from urllib.parse import urlsplit, urlunsplit

from gsmcpd.wire.http import unreserved_decoded

WELL_KNOWN = "/.well-known/oauth-protected-resource"
# The characters a URI is written in (RFC 3986 2): the resource is quoted in every
# challenge (WWW-Authenticate, Latin-1 at most, a quote ending it early) as written.
_URI = re.compile(r"[A-Za-z0-9._~:/?#\[\]@!$&'()*+,;=%-]+")


def supported_scopes(required: Iterable[str] = (), write_scope: str | None = None,
                     extra: Iterable[str] = ()) -> tuple[str, ...]:
    """The scopes clients are told to request: required, then write, then extra.

    Derived, never configured, so a required scope is always advertised and the
    write scope is always requestable. Ordered, first occurrence wins.
    """
    seen: dict[str, None] = {}
    for scope in (*required, *((write_scope,) if write_scope else ()), *extra):
        if scope:
            seen.setdefault(scope, None)
    return tuple(seen)


def _split_resource(resource: str):
    parts = urlsplit(resource)
    if parts.scheme not in ("https", "http") or not parts.netloc:
        raise ValueError(f"resource must be an absolute http(s) URL, got {resource!r}")
    if parts.fragment or parts.query:
        raise ValueError(f"resource must have no query or fragment, got {resource!r}")
    if not _URI.fullmatch(resource):
        raise ValueError(f"resource must be a URI, in ASCII without spaces, quotes or backslashes "
                         f"(percent-encode the others, punycode a host), got {resource!r}")
    return parts


def metadata_paths(resource: str) -> tuple[str, ...]:
    """Request paths that answer with the metadata document.

    The root well-known path and the path-suffixed one (RFC 9728 §3.1: the
    well-known segment inserted before the resource's path), e.g. for
    ``https://h/mcp``: ``/.well-known/oauth-protected-resource`` and
    ``/.well-known/oauth-protected-resource/mcp``.
    """
    # As a request's path is matched (/%7Euser is /~user): wire.http decodes it so.
    path = unreserved_decoded(_split_resource(resource).path.rstrip("/"))
    return (WELL_KNOWN,) if not path else (WELL_KNOWN, WELL_KNOWN + path)


def _suffixed_path(resource: str) -> str:
    """The path-suffixed well-known path, the resource's path as written."""
    return WELL_KNOWN + _split_resource(resource).path.rstrip("/")


def metadata_url(resource: str) -> str:
    """Absolute URL of the path-suffixed metadata document (used in challenges)."""
    parts = _split_resource(resource)
    return urlunsplit((parts.scheme, parts.netloc, _suffixed_path(resource), "", ""))


def metadata_document(resource: str, authorization_servers: Iterable[str],
                      scopes: Iterable[str]) -> dict:
    """The RFC 9728 document as a dict (serialise with `metadata_json`)."""
    servers = list(authorization_servers)
    if not servers:
        raise ValueError("RFC 9728 metadata needs at least one authorization server")
    return {
        "resource": resource,
        "authorization_servers": servers,
        "scopes_supported": list(scopes),
        "bearer_methods_supported": ["header"],
    }


def metadata_json(document: dict) -> bytes:
    return json.dumps(document, separators=(",", ":")).encode()
