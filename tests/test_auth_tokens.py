"""Bearer validation outcomes, with the exact status and WWW-Authenticate text."""
import json
import time

import jwt
import pytest

from gsmcpd.auth import Accepted, AuthSettings, KeySource, NeedRefresh, Rejected, authenticate
import idp as idp_module
from idp import Clock, Idp

RESOURCE = "https://127.0.0.1:8443/mcp"
ISSUER = "https://idp.test"
META = 'resource_metadata="https://127.0.0.1:8443/.well-known/oauth-protected-resource/mcp"'
SCOPES = 'scope="mcp:use mcp:write profile"'
NO_TOKEN = f"Bearer {META}, {SCOPES}"


def invalid(description, error="invalid_token"):
    return f'Bearer {META}, {SCOPES}, error="{error}", error_description="{description}"'


@pytest.fixture(scope="module")
def idp():
    return Idp(issuer=ISSUER, audience=RESOURCE)


@pytest.fixture
def settings():
    return AuthSettings(resource=RESOURCE, issuer=ISSUER, required_scopes=("mcp:use",),
                        write_scope="mcp:write", extra_scopes=("profile",), leeway=30)


class ManualLoop:
    """Stands in for the router loop: posted callbacks run when `run()` says so."""

    def __init__(self):
        self.posted = []

    def post(self, fn):
        self.posted.append(fn)

    def run(self):
        while self.posted:
            self.posted.pop(0)()


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def keys(idp, tmp_path, clock):
    source = KeySource(post=ManualLoop().post, jwks_file=str(idp.write_jwks(tmp_path / "jwks.json")),
                       spawn=lambda fn: fn(), clock=clock, min_refresh_interval=10)
    source.load_now()
    return source


def check(header, settings, keys, **kw):
    return authenticate(header, settings, keys, **kw)


def rejected(outcome, status=401):
    assert isinstance(outcome, Rejected), outcome
    assert outcome.status == status
    return outcome.www_authenticate


@pytest.mark.parametrize("kid", ["rsa-1", "ps-1", "ec-1", "ed-1"])
def test_each_allowed_algorithm_is_accepted(idp, settings, keys, kid):
    outcome = check(f"Bearer {idp.mint(kid)}", settings, keys)
    assert isinstance(outcome, Accepted)
    assert outcome.principal.user == "alice"
    assert outcome.principal.read_only is False
    assert outcome.principal.scopes == {"mcp:use", "mcp:write"}


def test_principal_carries_exp_and_claims(idp, settings, keys):
    exp = int(time.time()) + 123
    principal = check(f"Bearer {idp.mint(exp=exp)}", settings, keys).principal
    assert principal.exp == exp
    assert principal.claims["iss"] == ISSUER


def test_scheme_is_case_insensitive(idp, settings, keys):
    assert isinstance(check(f"bearer {idp.mint()}", settings, keys), Accepted)


def test_missing_header_has_no_error(settings, keys):
    outcome = check(None, settings, keys)
    assert rejected(outcome) == NO_TOKEN
    assert outcome.error is None
    assert outcome.body == b'{"error":"unauthorized"}'


def test_non_bearer_scheme_counts_as_no_token(settings, keys):
    assert rejected(check("Basic YWxpY2U6cGFzcw==", settings, keys)) == NO_TOKEN


MALFORMED = ("malformed Bearer credentials: expected one token of b64token characters "
             "(A-Z a-z 0-9 - . _ ~ + / then = padding, RFC 6750 2.1)")


@pytest.mark.parametrize("header", ["Bearer", "Bearer ", "Bearer \t "])
def test_an_empty_bearer_credential_counts_as_no_token(settings, keys, header):
    # RFC 6750 3.1: no token is no authentication information; the bare 401 sends the client for one.
    outcome = check(header, settings, keys)
    assert rejected(outcome) == NO_TOKEN
    assert outcome.body == b'{"error":"unauthorized"}'


@pytest.mark.parametrize("header", ["Bearer a b", "Bearer ä", "Bearer {json}", "Bearer a==b",
                                    "Bearer abc, Bearer def"])
def test_a_malformed_bearer_credential_is_400_invalid_request(settings, keys, header):
    outcome = check(header, settings, keys)
    assert rejected(outcome, status=400) == invalid(MALFORMED, "invalid_request")
    assert json.loads(outcome.body) == {"error": "invalid_request", "error_description": MALFORMED}


def test_only_spaces_and_tabs_surround_the_credentials(idp, settings, keys):
    # A header value may carry latin-1 bytes; NBSP and NEL are not whitespace in HTTP.
    token = idp.mint()
    assert isinstance(check(f" \t Bearer {token} \t", settings, keys), Accepted)
    for header in (f"Bearer \x85{token}", f"Bearer {token}\xa0"):
        assert rejected(check(header, settings, keys), status=400) == invalid(MALFORMED, "invalid_request")
    assert rejected(check(f"\xa0Bearer {token}", settings, keys)) == NO_TOKEN   # no Bearer scheme


@pytest.mark.parametrize("token", ["garbage", "a.b.c", "eyJhbGciOiJSUzI1NiJ9.e30"])
def test_unparseable_token(settings, keys, token):
    assert rejected(check(f"Bearer {token}", settings, keys)) == invalid("token is not a well-formed JWT")


def test_bad_signature(idp, settings, keys):
    head, body, sig = idp.mint().split(".")
    forged_body = jwt.utils.base64url_encode(b'{"sub":"mallory"}').decode()
    outcome = check(f"Bearer {head}.{forged_body}.{sig}", settings, keys)
    assert rejected(outcome) == invalid("token signature is invalid")
    assert outcome.body == b'{"error":"invalid_token","error_description":"token signature is invalid"}'


def test_token_signed_by_another_key_under_a_known_kid(idp, settings, keys):
    impostor = Idp(issuer=ISSUER, audience=RESOURCE, kinds=())
    impostor.add_key("rsa", "impostor-rsa")
    token = impostor.mint("impostor-rsa", headers={"kid": "rsa-1"})
    assert rejected(check(f"Bearer {token}", settings, keys)) == invalid("token signature is invalid")


def test_a_signature_its_kids_key_does_not_verify_asks_for_a_refresh_when_one_may_run(settings, tmp_path, clock):
    # An identity provider may rotate a key under the same kid: that was "signature is
    # invalid" until the periodic refresh, up to an hour.
    idp = Idp(issuer=ISSUER, audience=RESOURCE, kinds=("rsa",))
    keys = KeySource(post=ManualLoop().post, jwks_file=str(idp.write_jwks(tmp_path / "jwks.json")),
                     spawn=lambda fn: fn(), clock=clock, min_refresh_interval=10)
    keys.load_now()
    idp.keys["rsa-1"] = ("RS256", idp_module._generate("rsa"))   # a new key, the same kid
    token = f"Bearer {idp.mint('rsa-1')}"
    assert rejected(check(token, settings, keys)) == invalid("token signature is invalid")   # rate-limited
    clock.now += 10
    assert check(token, settings, keys) == NeedRefresh("rsa-1")
    assert rejected(check(token, settings, keys, may_refresh=False)) == invalid("token signature is invalid")
    idp.write_jwks(tmp_path / "jwks.json")
    keys.load_now()
    assert isinstance(check(token, settings, keys, may_refresh=False), Accepted)


def test_expired(idp, settings, keys):
    assert rejected(check(f"Bearer {idp.expired()}", settings, keys)) == invalid("token expired")


@pytest.mark.parametrize("leeway", [-1, 300.5, 86400])
def test_settings_refuse_a_leeway_outside_0_to_300_seconds(leeway):
    with pytest.raises(ValueError, match=r"leeway must be between 0 and 300 seconds, got "):
        AuthSettings(resource=RESOURCE, issuer=ISSUER, leeway=leeway)
    assert AuthSettings(resource=RESOURCE, issuer=ISSUER, leeway=300).leeway == 300


def test_expiry_leeway(idp, settings, keys):
    exp = int(time.time()) + 60
    token = f"Bearer {idp.mint(exp=exp)}"
    assert isinstance(check(token, settings, keys, now=exp + 29), Accepted)
    assert rejected(check(token, settings, keys, now=exp + 31)) == invalid("token expired")


def test_not_yet_valid(idp, settings, keys):
    assert rejected(check(f"Bearer {idp.not_yet_valid()}", settings, keys)) == invalid("token is not valid yet")


def test_nbf_within_leeway_is_accepted(idp, settings, keys):
    now = time.time()
    assert isinstance(check(f"Bearer {idp.mint(nbf=int(now) + 10)}", settings, keys, now=now), Accepted)


def test_a_token_issued_beyond_the_leeway_in_the_future_is_refused_naming_its_iat(idp, settings, keys):
    now = 1_767_225_600.0
    token = f"Bearer {idp.mint(iat=int(now) + 3600, exp=int(now) + 7200)}"
    assert rejected(check(token, settings, keys, now=now)) == invalid(
        "token issued in the future (iat 1767229200, 3600 s ahead of this server's clock, beyond the 30 s leeway)")


def test_a_token_issued_within_the_leeway_in_the_future_or_without_iat_is_accepted(idp, settings, keys):
    now = time.time()
    assert isinstance(check(f"Bearer {idp.mint(iat=int(now) + 29)}", settings, keys, now=now), Accepted)
    assert isinstance(check(f"Bearer {idp.mint(iat=None)}", settings, keys, now=now), Accepted)


@pytest.mark.parametrize("iat", ["soon", True, 10**400, [1]], ids=["string", "true", "10**400", "list"])
def test_an_iat_that_is_not_a_time_is_refused(idp, settings, keys, iat):
    assert rejected(check(f"Bearer {idp.mint(iat=iat)}", settings, keys)) == invalid(
        "token iat claim is not a finite number of seconds since the epoch")


def test_missing_exp(idp, settings, keys):
    assert rejected(check(f"Bearer {idp.mint(exp=None)}", settings, keys)) == invalid("token has no exp claim")


def test_wrong_issuer(idp, settings, keys):
    assert rejected(check(f"Bearer {idp.wrong_issuer()}", settings, keys)) == invalid("token issuer is not accepted")


def test_wrong_audience(idp, settings, keys):
    assert rejected(check(f"Bearer {idp.wrong_audience()}", settings, keys)) == invalid("token audience is not this resource")


def test_audience_list_containing_resource(idp, settings, keys):
    token = idp.mint(aud=["https://other.test", RESOURCE])
    assert isinstance(check(f"Bearer {token}", settings, keys), Accepted)


def test_configured_audience_overrides_resource(idp, keys):
    settings = AuthSettings(resource=RESOURCE, issuer=ISSUER, audience="gsmcpd")
    assert isinstance(check(f"Bearer {idp.mint(aud='gsmcpd')}", settings, keys), Accepted)
    assert isinstance(check(f"Bearer {idp.mint()}", settings, keys), Rejected)


def test_missing_user_claim(idp, settings, keys):
    assert rejected(check(f"Bearer {idp.mint(sub=None)}", settings, keys)) == invalid("token has no sub claim")


@pytest.mark.parametrize("sub, description", [
    (42, "token sub claim is not a string"), (["alice"], "token sub claim is not a string"),
    (True, "token sub claim is not a string"), ("", "token sub claim is not a non-empty string"),
])
def test_a_user_claim_of_the_wrong_kind_is_named_as_such_not_as_missing(idp, settings, keys, sub, description):
    # (PyJWT 2.10 and later refuse a non-string sub themselves, as a malformed token)
    assert rejected(check(f"Bearer {idp.mint(sub=sub)}", settings, keys)) == invalid(description)


@pytest.mark.parametrize("userid_claim", ["sub", "preferred_username"])
def test_a_user_claim_holding_a_lone_surrogate_is_refused_as_not_text(idp, keys, userid_claim):
    # A JSON \ud800 escape passed, and every initialize then failed 500: UTF-8 cannot carry it to the worker.
    settings = AuthSettings(resource=RESOURCE, issuer=ISSUER, userid_claim=userid_claim)
    surrogate, text = idp.mint(**{userid_claim: "eve\ud800"}), idp.mint(**{userid_claim: "ève 🙂"})
    refused = check(f"Bearer {surrogate}", settings, keys)
    assert isinstance(refused, Rejected) and refused.status == 401
    assert refused.www_authenticate.endswith(f'error="invalid_token", error_description="token {userid_claim} '
                                             'claim holds a lone surrogate (U+D800 to U+DFFF), which is not text"')
    assert isinstance(check(f"Bearer {text}", settings, keys), Accepted)


def test_a_jti_claim_must_be_a_string(idp, settings, keys):
    # (PyJWT 2.10 and later refuse it themselves, as a malformed token; 2.8 does not)
    assert isinstance(check(f"Bearer {idp.mint(jti='a1')}", settings, keys), Accepted)
    assert rejected(check(f"Bearer {idp.mint(jti=7)}", settings, keys)) == invalid("token jti claim is not a string")


def test_sub_must_be_a_string_even_when_another_claim_names_the_user(idp, keys):
    settings = AuthSettings(resource=RESOURCE, issuer=ISSUER, userid_claim="preferred_username")
    outcome = check(f"Bearer {idp.mint(preferred_username='bob', sub=7)}", settings, keys)
    assert outcome.www_authenticate.endswith('error_description="token sub claim is not a string"')
    outcome = check(f"Bearer {idp.mint(preferred_username=7)}", settings, keys)
    assert outcome.www_authenticate.endswith(
        'error_description="token preferred_username claim is not a non-empty string"')


def test_userid_claim_is_configurable(idp, keys):
    settings = AuthSettings(resource=RESOURCE, issuer=ISSUER, userid_claim="preferred_username")
    outcome = check(f"Bearer {idp.mint(preferred_username='bob')}", settings, keys)
    assert outcome.principal.user == "bob"
    outcome = check(f"Bearer {idp.mint()}", settings, keys)
    assert outcome.www_authenticate.endswith('error_description="token has no preferred_username claim"')


def test_hs256_keyed_with_public_key_is_refused(idp, settings, keys):
    outcome = check(f"Bearer {idp.hs256_with_public_key()}", settings, keys)
    assert rejected(outcome) == invalid("token algorithm is not accepted")


def test_alg_none_is_refused(idp, settings, keys):
    assert rejected(check(f"Bearer {idp.alg_none()}", settings, keys)) == invalid("token algorithm is not accepted")


@pytest.mark.parametrize("typ", [None, "JWT", "jwt", "at+jwt", "AT+JWT", "application/at+jwt",
                                 "Application/JWT"])
def test_an_access_token_typ_or_none_is_accepted(idp, settings, keys, typ):
    # PyJWT writes typ JWT unless told otherwise; None leaves it out.
    assert isinstance(check(f"Bearer {idp.mint(headers={'typ': typ})}", settings, keys), Accepted)


@pytest.mark.parametrize("typ", ["id_token+jwt", "dpop+jwt", "logout+jwt", "application/secevent+jwt", "JOSE"])
def test_a_token_of_another_type_is_refused_naming_its_typ(idp, settings, keys, typ):
    # An ID token the same issuer signed, for this audience, with every claim right but its type.
    outcome = check(f"Bearer {idp.mint(headers={'typ': typ})}", settings, keys)
    assert rejected(outcome) == invalid(
        f"token typ '{typ}' is not an access token's: only at+jwt or JWT (or no typ) is accepted, "
        "not an ID token or another kind of JWT (RFC 8725 3.11, RFC 9068 2.1)")


def test_a_typ_that_is_not_a_string_is_refused(idp, settings, keys):
    outcome = check(f"Bearer {idp.mint(headers={'typ': ['at+jwt']})}", settings, keys)
    assert rejected(outcome) == invalid("token typ header is not a string")


def test_a_long_typ_is_quoted_back_cut_short(idp, settings, keys):
    outcome = check(f"Bearer {idp.mint(headers={'typ': 'x' * 500})}", settings, keys)
    assert f"token typ '{'x' * 40}...' is not" in rejected(outcome)


def test_a_typed_token_with_an_unknown_kid_is_refused_without_a_refresh(idp, settings, keys):
    # No fetch of the issuer's keys can make an ID token an access token.
    outcome = check(f"Bearer {idp.mint('rsa-ghost', headers={'typ': 'id_token+jwt'})}", settings, keys)
    assert "token typ 'id_token+jwt'" in rejected(outcome)


def test_algorithm_outside_configured_subset(idp, keys):
    settings = AuthSettings(resource=RESOURCE, issuer=ISSUER, algorithms=("ES256",))
    assert isinstance(check(f"Bearer {idp.mint('ec-1')}", settings, keys), Accepted)
    assert rejected(check(f"Bearer {idp.mint('rsa-1')}", settings, keys)).endswith(
        'error_description="token algorithm is not accepted"')


def test_settings_refuse_hmac_and_none():
    for algorithms in (("HS256",), ("none",), ()):
        with pytest.raises(ValueError):
            AuthSettings(resource=RESOURCE, issuer=ISSUER, algorithms=algorithms)


def test_key_type_must_match_algorithm(idp, settings, keys):
    # ES256 claimed under an RSA key's kid: the RSA key must not be tried as an EC key.
    token = idp.mint("ec-1", headers={"kid": "rsa-1"})
    assert rejected(check(f"Bearer {token}", settings, keys)) == invalid("signing key does not match the token algorithm")


def test_ps256_claimed_for_an_rs256_key(idp, settings, keys):
    token = idp.mint("rsa-1", alg="PS256")
    assert rejected(check(f"Bearer {token}", settings, keys)) == invalid("signing key does not match the token algorithm")


def test_unknown_kid_asks_for_refresh_then_rejects(idp, settings, keys, clock):
    token = f"Bearer {idp.unknown_kid()}"
    clock.now += 10   # past the rate limit that the initial load started
    assert check(token, settings, keys) == NeedRefresh("rsa-ghost")
    assert rejected(check(token, settings, keys, may_refresh=False)) == invalid("token signing key is not known")


def _without_kid(idp, kid):
    alg, key = idp.keys[kid]
    return jwt.encode(idp.claims(), key, algorithm=alg)   # PyJWT writes no kid unless told


def test_a_token_without_a_kid_is_checked_with_the_one_key_for_its_algorithm(idp, settings, keys):
    assert "kid" not in jwt.get_unverified_header(_without_kid(idp, "rsa-1"))
    assert isinstance(check(f"Bearer {_without_kid(idp, 'rsa-1')}", settings, keys), Accepted)


def test_a_token_without_a_kid_among_several_keys_for_its_algorithm_is_named_as_such(settings, tmp_path, clock):
    # It was "token signing key is not known", after a refresh that could not help.
    two = Idp(issuer=ISSUER, audience=RESOURCE)
    two.add_key("rsa", "rsa-2")
    keys = KeySource(post=ManualLoop().post, jwks_file=str(two.write_jwks(tmp_path / "jwks.json")),
                     spawn=lambda fn: fn(), clock=clock, min_refresh_interval=10)
    keys.load_now()
    clock.now += 10   # a refresh would be allowed: none is asked for
    assert rejected(check(f"Bearer {_without_kid(two, 'rsa-2')}", settings, keys)) == invalid(
        "token names no signing key (no kid header) and several keys of the JWKS can verify RS256: "
        "the identity provider must name the one it signed with")


def test_unknown_kid_when_rate_limited_rejects_at_once(idp, settings, keys, clock):
    clock.now += 9.5   # load_now ran 9.5 s ago: a refresh is not allowed yet
    assert rejected(check(f"Bearer {idp.unknown_kid()}", settings, keys)) == invalid("token signing key is not known")


def test_missing_required_scope_is_403(idp, settings, keys):
    outcome = check(f"Bearer {idp.mint(scope='profile')}", settings, keys)
    assert rejected(outcome, 403) == (
        f'Bearer {META}, scope="mcp:use profile", error="insufficient_scope", '
        'error_description="token lacks required scope mcp:use"')
    assert outcome.error == "insufficient_scope"


def test_write_scope_decides_read_only(idp, settings, keys):
    assert check(f"Bearer {idp.mint(scope='mcp:use')}", settings, keys).principal.read_only is True
    assert check(f"Bearer {idp.mint(scope='mcp:use mcp:write')}", settings, keys).principal.read_only is False


@pytest.mark.parametrize("separator", ["\u00a0", "\u2003", "\u3000", "\x1f", "\t", "\n"])
def test_only_a_space_separates_scopes(idp, settings, keys, separator):
    # RFC 6749 §3.3: scope tokens are separated by %x20 and hold no whitespace or non-ASCII,
    # so "mcp:use<NBSP>mcp:write" is one (odd) scope an IdP may grant, never the write scope.
    outcome = check(f"Bearer {idp.mint(scope='mcp:use mcp:use' + separator + 'mcp:write')}", settings, keys)
    assert outcome.principal.scopes == {"mcp:use", "mcp:use" + separator + "mcp:write"}
    assert outcome.principal.read_only is True


def test_scopes_may_be_separated_by_several_spaces(idp, settings, keys):
    outcome = check(f"Bearer {idp.mint(scope=' mcp:use  mcp:write ')}", settings, keys)
    assert outcome.principal.scopes == {"mcp:use", "mcp:write"}


def test_no_write_scope_configured_means_read_write(idp, keys):
    settings = AuthSettings(resource=RESOURCE, issuer=ISSUER)
    assert check(f"Bearer {idp.mint(scope=None)}", settings, keys).principal.read_only is False


def test_scp_claim_list_is_read(idp, settings, keys):
    outcome = check(f"Bearer {idp.mint(scope=None, scp=['mcp:use'])}", settings, keys)
    assert outcome.principal.scopes == {"mcp:use"}


def test_a_null_scope_claim_is_an_absent_one_and_scp_is_read(idp, settings, keys):
    outcome = check(f"Bearer {idp.mint_null('scope', scp=['mcp:use', 'mcp:write'])}", settings, keys)
    assert outcome.principal.scopes == {"mcp:use", "mcp:write"}
    assert outcome.principal.read_only is False


@pytest.mark.parametrize("scope", [42, True, {"mcp:use": 1}, ""])
def test_a_scope_claim_of_another_kind_still_hides_scp(idp, settings, keys, scope):
    # Fail closed: a present scope claim is the token's scopes, however malformed.
    outcome = check(f"Bearer {idp.mint(scope=scope, scp=['mcp:use'])}", settings, keys)
    assert rejected(outcome, 403)
    assert outcome.error == "insufficient_scope"


@pytest.mark.parametrize("exp", ["NaN", "Infinity", "true", '"soon"'])
def test_non_numeric_exp_is_refused(idp, settings, keys, exp):
    token = idp.mint()
    head, body, _ = token.split(".")
    claims = json.loads(jwt.utils.base64url_decode(body))
    raw = json.dumps({**claims, "exp": 0}).replace('"exp": 0', f'"exp": {exp}')
    key = idp.keys["rsa-1"][1]
    signing_input = f"{head}.{jwt.utils.base64url_encode(raw.encode()).decode()}"
    signature = jwt.get_algorithm_by_name("RS256").sign(signing_input.encode(), key)
    forged = f"{signing_input}.{jwt.utils.base64url_encode(signature).decode()}"
    assert rejected(check(f"Bearer {forged}", settings, keys)) == invalid(NOT_A_TIME)


NOT_A_TIME = "token exp claim is not a finite number of seconds since the epoch"


@pytest.mark.parametrize("claim, value, description", [
    ("exp", 10**400, NOT_A_TIME),      # beyond a double: OverflowError in float()
    ("exp", -10**400, NOT_A_TIME),
    ("nbf", 10**400, "token is not valid yet"),
], ids=["exp 10**400", "exp -10**400", "nbf 10**400"])
def test_a_time_claim_beyond_a_double_is_refused(idp, settings, keys, claim, value, description):
    assert rejected(check(f"Bearer {idp.mint(**{claim: value})}", settings, keys)) == invalid(description)
