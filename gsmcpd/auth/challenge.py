"""`WWW-Authenticate: Bearer` challenges (RFC 6750 §3, RFC 9728 §5.1).

Pure string building. Parameter order is fixed so headers are predictable:
``Bearer resource_metadata="…", scope="…", error="…", error_description="…"``.
"""
from __future__ import annotations

import re
from typing import Iterable

INVALID_REQUEST = "invalid_request"   # malformed Authorization header
INVALID_TOKEN = "invalid_token"       # token present but not acceptable
INSUFFICIENT_SCOPE = "insufficient_scope"

# RFC 6750 §3: error_description is %x20-21 / %x23-5B / %x5D-7E (no `"`, no `\`).
_NOT_DESCRIPTION_CHAR = re.compile(r'[^\x20\x21\x23-\x5b\x5d-\x7e]')
# scope-token (RFC 6749 §3.3): %x21 / %x23-5B / %x5D-7E
_SCOPE_TOKEN = re.compile(r'[\x21\x23-\x5b\x5d-\x7e]+')


def clean_description(text: str) -> str:
    """Make free text legal inside an error_description quoted-string."""
    return _NOT_DESCRIPTION_CHAR.sub("'", text.replace('"', "'"))


def is_scope_token(scope: str) -> bool:
    """Whether `scope` may be listed in a challenge's scope parameter (RFC 6749 §3.3)."""
    return bool(_SCOPE_TOKEN.fullmatch(scope))


def bearer_challenge(resource_metadata: str, scopes: Iterable[str] = (),
                     error: str | None = None, description: str | None = None) -> str:
    """One `WWW-Authenticate` value. No `error` when the request had no token."""
    scope_list = [s for s in scopes if s]
    for scope in scope_list:
        if not is_scope_token(scope):
            raise ValueError(f"not a valid scope token: {scope!r}")
    params = [f'resource_metadata="{resource_metadata}"']
    if scope_list:
        params.append(f'scope="{" ".join(scope_list)}"')
    if error:
        params.append(f'error="{error}"')
        if description:
            params.append(f'error_description="{clean_description(description)}"')
    return "Bearer " + ", ".join(params)
