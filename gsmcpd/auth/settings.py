"""Resource-server settings: one frozen value the router builds from Config."""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

from .metadata import metadata_document, metadata_json, metadata_paths, metadata_url, supported_scopes

# Asymmetric only: never `none`, never HMAC (a public key must not become a shared secret).
ALLOWED_ALGORITHMS = ("RS256", "PS256", "ES256", "EdDSA")
# The most clock skew a leeway may allow (MCP_JWT_LEEWAY): 5 minutes, Kerberos's default
# skew. Clocks kept by NTP differ by well under a second; a leeway of hours would accept
# tokens that long expired, and keep their streams open as long (MCP_TOKEN_EXPIRY).
MAX_LEEWAY = 300.0


@dataclass(frozen=True)
class AuthSettings:
    resource: str                              # canonical URL of /mcp, e.g. https://host:8443/mcp
    issuer: str                                # expected `iss`
    audience: str | None = None                # expected `aud`; None → `resource`
    resource_is_audience: bool = False         # a token for `resource` passes too (configured URL)
    authorization_servers: tuple[str, ...] = ()  # RFC 9728 list; empty → (issuer,)
    required_scopes: tuple[str, ...] = ()      # every token must carry all of these
    write_scope: str | None = None             # present → read-write session, absent → read-only
    extra_scopes: tuple[str, ...] = ()         # advertised only (e.g. "profile offline_access")
    userid_claim: str = "sub"
    leeway: float = 30.0                       # seconds of clock skew allowed on exp/nbf/iat
    algorithms: tuple[str, ...] = ALLOWED_ALGORITHMS
    jwks_file: str | None = None               # key source: a file, …
    jwks_url: str | None = None                # … or an https URL, …
    discover: bool = True                      # … or issuer/.well-known/openid-configuration → jwks_uri
    ca_file: str | None = None                 # CA bundle for https fetches; None → system store
    fetch_timeout: float = 10.0
    min_refresh_interval: float = 10.0         # unknown-kid refreshes at most this often
    refresh_interval: float = 3600.0           # periodic refresh
    _derived: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self):
        bad = [a for a in self.algorithms if a not in ALLOWED_ALGORITHMS]
        if bad or not self.algorithms:
            raise ValueError(f"algorithms must be a non-empty subset of {ALLOWED_ALGORITHMS}, got {self.algorithms}")
        if not self.issuer:
            raise ValueError("issuer is required")
        if not self.userid_claim:
            raise ValueError("userid_claim must not be empty")
        if not 0 <= self.leeway <= MAX_LEEWAY:
            raise ValueError(f"leeway must be between 0 and {MAX_LEEWAY:g} seconds, got {self.leeway:g}")
        for name in ("required_scopes", "extra_scopes", "authorization_servers", "algorithms"):
            if isinstance(getattr(self, name), str):
                raise TypeError(f"{name} must be a sequence of strings, not one string")
        metadata_paths(self.resource)          # validates the resource URL

    @property
    def expected_audience(self) -> str:
        return self.audience or self.resource

    @property
    def accepted_audiences(self) -> tuple[str, ...]:
        """What a token's `aud` may name: the audience, and the resource when the
        operator named it (MCP_RESOURCE_URL; RFC 8707 clients ask for a token for it).
        Never the derived bind URL: http://127.0.0.1:PORT/mcp names no one server."""
        if self.resource_is_audience and self.resource != self.expected_audience:
            return (self.expected_audience, self.resource)
        return (self.expected_audience,)

    @property
    def supported_scopes(self) -> tuple[str, ...]:
        return supported_scopes(self.required_scopes, self.write_scope, self.extra_scopes)

    @property
    def metadata_url(self) -> str:
        return metadata_url(self.resource)

    @property
    def metadata_paths(self) -> tuple[str, ...]:
        return metadata_paths(self.resource)

    @property
    def metadata_body(self) -> bytes:
        if "body" not in self._derived:
            servers = self.authorization_servers or (self.issuer,)
            doc = metadata_document(self.resource, servers, self.supported_scopes)
            self._derived["body"] = metadata_json(doc)
        return self._derived["body"]


def unreachable_resource_warning(config, resource: str) -> str | None:
    """What to warn at start when the published resource is the bind address's own URL and
    clients cannot reach the server by it: behind a TLS proxy (they use the proxy's https
    URL) or on a wildcard bind (0.0.0.0, ::). Clients check the metadata's `resource`
    against the URL they used (RFC 9728 3.3), so OAuth discovery fails; tokens already
    held for the audience still pass. None when the resource is configured or fits."""
    if resource != config.url:
        return None
    if config.behind_tls_proxy:
        why = "behind a TLS proxy clients use the proxy's https URL"
    elif _is_wildcard(config.host):
        why = f"{config.host} is a wildcard bind, no address to connect to"
    else:
        return None
    return (f"the resource published in the RFC 9728 metadata and the WWW-Authenticate challenge is "
            f"{resource}, derived from the bind address, which names no URL clients reach: {why}; "
            f"set MCP_RESOURCE_URL to the /mcp URL clients use, or make MCP_AUDIENCE that URL")


def _is_wildcard(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_unspecified
    except ValueError:
        return False


def settings_from_config(config) -> AuthSettings:
    """Build AuthSettings from a `gsmcpd.config.Config` with `auth` on.

    `resource` (what the metadata publishes and challenges point at) is
    MCP_RESOURCE_URL when set (the public name behind a proxy or a wildcard bind,
    where the audience is not a URL), else the audience when that is an http(s)
    URL, else the router's own /mcp URL. Each is taken verbatim (a trailing slash
    kept): a token for the advertised resource must pass the audience check, which
    compares exactly.
    """
    audience = config.audience
    if config.resource_url:
        resource = config.resource_url
    elif audience and audience.startswith(("https://", "http://")):
        resource = audience
    else:
        resource = config.url
    return AuthSettings(
        resource=resource, issuer=config.issuer, audience=audience,
        resource_is_audience=bool(config.resource_url),
        authorization_servers=tuple(config.authorization_servers),
        required_scopes=tuple(config.required_scopes), write_scope=config.write_scope,
        extra_scopes=tuple(config.extra_scopes), userid_claim=config.userid_claim,
        leeway=config.jwt_leeway,
        jwks_file=str(config.jwks_file) if config.jwks_file else None,
        jwks_url=config.jwks_uri or None,
        min_refresh_interval=config.jwks_min_refresh, fetch_timeout=config.jwks_timeout)
