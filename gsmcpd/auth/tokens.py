"""Bearer-token validation: header in, one of three outcomes out.

Pure apart from reading the key cache: no I/O, no blocking. The router calls
`authenticate()` per /mcp request and acts on the outcome:

* `Accepted(principal)` — go on; `principal.read_only` / `.user` / `.exp`.
* `Rejected` — answer `status` with `headers` and `body`, do nothing else.
* `NeedRefresh` — the signing key is unknown (or did not verify the signature: a kid
  reused for a new key); park the request, call
  `keys.refresh(on_done)`, and in `on_done` call `authenticate(...,
  may_refresh=False)` once more (still unknown → Rejected 401).
"""
from __future__ import annotations

import json
import math
import re
import time
from dataclasses import dataclass, field
from typing import Any

import jwt

from gsmcpd.wire.frames import carries

from .challenge import INSUFFICIENT_SCOPE, INVALID_REQUEST, INVALID_TOKEN, bearer_challenge
from .jwks import KeySource
from .settings import AuthSettings

# RFC 6750 §2.1 b64token
_B64TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
MALFORMED_CREDENTIALS = ("malformed Bearer credentials: expected one token of b64token characters "
                         "(A-Z a-z 0-9 - . _ ~ + / then = padding, RFC 6750 2.1)")
_SECONDS = "a finite number of seconds since the epoch"   # what a time claim must be
# typ values of an access token (RFC 9068 §2.1; plain JWTs predate it), compared without case
# and without "application/" (RFC 7515 §4.1.9). Any other type is another token (an ID
# token, a DPoP proof, a logout token) the same issuer signed: RFC 8725 §3.11.
_ACCESS_TOKEN_TYPES = ("jwt", "at+jwt")
_SHOWN_TYP = 40   # characters of a refused typ quoted back


@dataclass(frozen=True)
class Principal:
    user: str                       # value of the userid claim
    scopes: frozenset[str]
    read_only: bool                 # a write scope is configured and the token lacks it
    exp: float                      # token expiry, seconds since the epoch (wall clock)
    claims: dict = field(repr=False, compare=False)


@dataclass(frozen=True)
class Accepted:
    principal: Principal


@dataclass(frozen=True)
class Rejected:
    status: int                     # 400, 401 or 403
    error: str | None               # RFC 6750 error code; None when no token was sent
    description: str | None
    www_authenticate: str

    @property
    def headers(self) -> list[tuple[str, str]]:
        return [("WWW-Authenticate", self.www_authenticate), ("Content-Type", "application/json")]

    @property
    def body(self) -> bytes:
        doc: dict[str, str] = {"error": self.error or "unauthorized"}
        if self.description:
            doc["error_description"] = self.description
        return json.dumps(doc, separators=(",", ":")).encode()


@dataclass(frozen=True)
class NeedRefresh:
    kid: str | None


Outcome = Accepted | Rejected | NeedRefresh


def token_scopes(claims: dict) -> frozenset[str]:
    """Scopes from `scope` (RFC 9068 space-separated) or, absent or null, `scp` (string or list).
    A scope claim of another kind (a number, an object) is no scopes: it fails closed."""
    raw = claims.get("scope")
    if raw is None:   # JSON null is no claim (as for nbf/iat): it must not hide scp
        raw = claims.get("scp")
    if isinstance(raw, str):
        # Only %x20 separates (RFC 6749 §3.3): str.split() would also split on NBSP, tabs...,
        # reading a granted scope "x<NBSP>mcp:write" as the write scope.
        return frozenset(s for s in raw.split(" ") if s)
    if isinstance(raw, list):
        return frozenset(s for s in raw if isinstance(s, str) and s)
    return frozenset()


def unauthorized(settings: AuthSettings, error: str | None = None,
                 description: str | None = None) -> Rejected:
    """A 401 with the challenge; `error=None` for a request that carried no token."""
    header = bearer_challenge(settings.metadata_url, settings.supported_scopes, error, description)
    return Rejected(401, error, description if error else None, header)


def malformed(settings: AuthSettings) -> Rejected:
    """A 400 for a Bearer credential that is not one b64token (RFC 6750 §3.1 invalid_request):
    a new token would not repair it, so no 401 sends the client to fetch one."""
    header = bearer_challenge(settings.metadata_url, settings.supported_scopes, INVALID_REQUEST,
                              MALFORMED_CREDENTIALS)
    return Rejected(400, INVALID_REQUEST, MALFORMED_CREDENTIALS, header)


def insufficient_scope(settings: AuthSettings, granted: frozenset[str], missing: list[str]) -> Rejected:
    # Ask for what this request needs plus what the client already holds (step-up).
    wanted = list(settings.required_scopes) + list(missing) + sorted(
        s for s in granted if s in settings.supported_scopes)
    wanted = list(dict.fromkeys(wanted))
    description = "token lacks required scope " + " ".join(missing)
    header = bearer_challenge(settings.metadata_url, wanted, INSUFFICIENT_SCOPE, description)
    return Rejected(403, INSUFFICIENT_SCOPE, description, header)


def _invalid(settings, description):
    return unauthorized(settings, INVALID_TOKEN, description)


def authenticate(authorization: str | None, settings: AuthSettings, keys: KeySource, *,
                 may_refresh: bool = True, now: float | None = None) -> Outcome:
    """Validate one `Authorization` header value (None if the header is absent)."""
    # Only OWS is stripped: a header value may hold latin-1 (obs-text), whose NBSP and
    # NEL str.strip() would take for spaces.
    authorization = authorization.strip(" \t") if authorization is not None else ""
    if not authorization:
        return unauthorized(settings)
    scheme, _, credentials = authorization.partition(" ")
    if scheme.lower() != "bearer":
        # RFC 6750 §3.1: an unsupported scheme counts as "no authentication info".
        return unauthorized(settings)
    token = credentials.strip(" \t")
    if not token:
        # No token is no authentication information (RFC 6750 §3.1): the bare 401 sends a
        # client that holds none (the TypeScript SDK sends `Bearer ` then) to fetch one.
        return unauthorized(settings)
    if not _B64TOKEN.fullmatch(token):
        return malformed(settings)
    try:
        header = jwt.get_unverified_header(token)
    except jwt.InvalidTokenError:
        return _invalid(settings, "token is not a well-formed JWT")
    wrong_type = _typ_problem(header)
    if wrong_type:
        return _invalid(settings, wrong_type)
    alg = header.get("alg")
    if alg not in settings.algorithms:
        return _invalid(settings, "token algorithm is not accepted")
    kid = header.get("kid")
    if kid is not None and not isinstance(kid, str):
        return _invalid(settings, "token kid is not a string")
    key = keys.lookup(kid, alg)
    if key is False:
        return _invalid(settings, "signing key does not match the token algorithm")
    if key is None:
        if kid is None and len(keys.fitting(alg)) > 1:   # no refresh makes it less so
            return _invalid(settings, f"token names no signing key (no kid header) and several keys "
                            f"of the JWKS can verify {alg}: the identity provider must name the one "
                            "it signed with")
        if may_refresh and keys.can_refresh():
            return NeedRefresh(kid)
        return _invalid(settings, "token signing key is not known")
    try:
        claims = jwt.decode(token, key.key, algorithms=[alg], options={
            "verify_exp": False, "verify_nbf": False, "verify_iat": False,
            "verify_aud": False, "verify_iss": False, "verify_sub": False, "verify_jti": False})
    except jwt.InvalidSignatureError:
        if may_refresh and keys.can_refresh():
            # An identity provider may sign with a new key under an old kid: the keys
            # fetched again (rate-limited, as for an unknown kid) may hold it.
            return NeedRefresh(kid)
        return _invalid(settings, "token signature is invalid")
    except jwt.InvalidTokenError:
        return _invalid(settings, "token is not a well-formed JWT")
    return _check_claims(claims, settings, time.time() if now is None else now)


def _typ_problem(header: dict) -> str | None:
    """Why the `typ` header says the token is no access token, or None (absent, JWT, at+jwt)."""
    typ = header.get("typ")
    if typ is None:
        return None
    if not isinstance(typ, str):
        return "token typ header is not a string"
    kind = typ.lower().removeprefix("application/")
    if kind in _ACCESS_TOKEN_TYPES:
        return None
    shown = typ if len(typ) <= _SHOWN_TYP else typ[:_SHOWN_TYP] + "..."
    return (f"token typ {shown!r} is not an access token's: only at+jwt or JWT (or no typ) is "
            "accepted, not an ID token or another kind of JWT (RFC 8725 3.11, RFC 9068 2.1)")


def _timestamp(value: Any) -> float | None:
    """A NumericDate claim as a finite float, or None if it is not one."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return None
    try:
        value = float(value)       # an int beyond a double's range (10**400) raises OverflowError
    except OverflowError:
        return None
    # json.loads accepts NaN/Infinity, which would make every time comparison False.
    return value if math.isfinite(value) else None


def _iat_problem(iat: Any, leeway: float, now: float) -> str | None:
    """Why an `iat` refuses its token: not a time, or later than the clock and leeway allow
    (a token minted ahead of our clock is a forged or mis-clocked issuer's; PyJWT refuses it too)."""
    issued = _timestamp(iat)
    if issued is None:
        return f"token iat claim is not {_SECONDS}"
    if issued > now + leeway:
        return (f"token issued in the future (iat {iat}, {issued - now:.0f} s ahead of this server's "
                f"clock, beyond the {leeway:g} s leeway)")
    return None


def _claim_problem(claims: dict, name: str, should_be: str) -> str:
    """Why a claim cannot be used: absent, or present with a value of the wrong kind
    (an issuer sending "sub": 42 needs to hear that, not that sub is missing)."""
    return f"token has no {name} claim" if name not in claims else f"token {name} claim is not {should_be}"


def _check_claims(claims: dict, settings: AuthSettings, now: float) -> Outcome:
    exp = _timestamp(claims.get("exp"))
    if exp is None:
        return _invalid(settings, _claim_problem(claims, "exp", _SECONDS))
    if now > exp + settings.leeway:
        return _invalid(settings, "token expired")
    nbf = claims.get("nbf")
    if nbf is not None:
        nbf = _timestamp(nbf)
        if nbf is None or now + settings.leeway < nbf:
            return _invalid(settings, "token is not valid yet")
    if claims.get("iat") is not None:
        problem = _iat_problem(claims["iat"], settings.leeway, now)
        if problem:
            return _invalid(settings, problem)
    if claims.get("iss") != settings.issuer:
        return _invalid(settings, "token issuer is not accepted")
    aud = claims.get("aud")
    audiences = [aud] if isinstance(aud, str) else aud if isinstance(aud, list) else []
    if not any(accepted in audiences for accepted in settings.accepted_audiences):
        return _invalid(settings, "token audience is not this resource")
    for name in ("sub", "jti"):   # RFC 7519 4.1.2 and 4.1.7, whichever claim names the user
        if name in claims and not isinstance(claims[name], str):
            return _invalid(settings, f"token {name} claim is not a string")
    user = claims.get(settings.userid_claim)
    if not isinstance(user, str) or not user:
        return _invalid(settings, _claim_problem(claims, settings.userid_claim, "a non-empty string"))
    if not carries(user):   # its session's start could not send it to the worker: 500
        return _invalid(settings, f"token {settings.userid_claim} claim holds a lone surrogate "
                                  "(U+D800 to U+DFFF), which is not text")
    scopes = token_scopes(claims)
    missing = [s for s in settings.required_scopes if s not in scopes]
    if missing:
        return insufficient_scope(settings, scopes, missing)
    read_only = settings.write_scope is not None and settings.write_scope not in scopes
    return Accepted(Principal(user, scopes, read_only, exp, claims))
