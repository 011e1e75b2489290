"""Resource-server auth for the network-facing router (see docs/internals.md, "Auth").

The names below load their submodule on first use (PEP 562): workers import
`gsmcpd.auth.usermap` alone, and must not pay for PyJWT and cryptography, which
only the router's token checks need (they were most of a worker's mapped memory).
"""

import importlib

_WHERE = {
    "ALLOWED_ALGORITHMS": "settings", "AuthSettings": "settings", "settings_from_config": "settings",
    "Accepted": "tokens", "NeedRefresh": "tokens", "Principal": "tokens", "Rejected": "tokens",
    "authenticate": "tokens", "unauthorized": "tokens",
    "JwksError": "jwks", "KeySource": "jwks", "RefreshResult": "jwks",
}

__all__ = sorted(_WHERE)


def __getattr__(name):
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
    globals()[name] = value
    return value
