"""Resource-server auth for the network-facing router (see docs/internals.md, "Auth")."""
from .settings import ALLOWED_ALGORITHMS, AuthSettings, settings_from_config
from .tokens import Accepted, NeedRefresh, Principal, Rejected, authenticate, unauthorized
from .jwks import JwksError, KeySource, RefreshResult

__all__ = ["ALLOWED_ALGORITHMS", "AuthSettings", "settings_from_config", "Accepted", "NeedRefresh", "Principal", "Rejected",
           "authenticate", "unauthorized", "JwksError", "KeySource", "RefreshResult"]
