"""RFC 9728 metadata, the derived scope union and the challenge header text."""
import json

import pytest

from gsmcpd.auth import AuthSettings, unauthorized
from gsmcpd.auth.challenge import bearer_challenge, clean_description
from gsmcpd.auth.metadata import metadata_paths, metadata_url, supported_scopes


def test_scope_union_is_ordered_and_deduplicated():
    assert supported_scopes(["mcp:use", "mcp:read"], "mcp:write", ["profile", "mcp:use", "offline_access"]) == (
        "mcp:use", "mcp:read", "mcp:write", "profile", "offline_access")


def test_scope_union_with_write_scope_also_required():
    assert supported_scopes(["mcp:write"], "mcp:write", []) == ("mcp:write",)
    assert supported_scopes([], None, []) == ()


def test_metadata_document():
    settings = AuthSettings(resource="https://mcp.example.com:8443/mcp", issuer="https://auth.example.com",
                            required_scopes=("mcp:use",), write_scope="mcp:write",
                            extra_scopes=("profile", "offline_access"))
    assert json.loads(settings.metadata_body) == {
        "resource": "https://mcp.example.com:8443/mcp",
        "authorization_servers": ["https://auth.example.com"],
        "scopes_supported": ["mcp:use", "mcp:write", "profile", "offline_access"],
        "bearer_methods_supported": ["header"],
    }


def test_explicit_authorization_servers():
    settings = AuthSettings(resource="https://h/mcp", issuer="https://a/realms/x",
                            authorization_servers=("https://a/realms/x", "https://b"))
    assert json.loads(settings.metadata_body)["authorization_servers"] == ["https://a/realms/x", "https://b"]


def test_metadata_paths_and_url():
    assert metadata_paths("https://h:8443/mcp") == (
        "/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp")
    assert metadata_url("https://h:8443/mcp") == "https://h:8443/.well-known/oauth-protected-resource/mcp"
    assert metadata_paths("https://h") == ("/.well-known/oauth-protected-resource",)
    assert metadata_url("https://h/") == "https://h/.well-known/oauth-protected-resource"


def test_the_metadata_path_is_matched_as_a_requests_path_is_and_the_url_keeps_the_resources_spelling():
    # wire.http decodes a request path's %7E to ~ (RFC 3986 6.2.2.2): the path had to be so too
    assert metadata_paths("https://h/%7Euser/m%63p") == (
        "/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/~user/mcp")
    assert metadata_url("https://h/%7Euser/m%63p") == "https://h/.well-known/oauth-protected-resource/%7Euser/m%63p"
    assert metadata_paths("https://h/a%2Fb")[-1] == "/.well-known/oauth-protected-resource/a%2Fb"


@pytest.mark.parametrize("resource", ["mcp", "https://h/mcp#frag", "https://h/mcp?x=1", "ftp://h/mcp",
                                      # a challenge quotes it: Latin-1 at most, no quote inside
                                      "https://h/\u20ac/mcp", "https://b\u00fccher.example/mcp",
                                      'https://h/m"cp', "https://h/a b", "https://h/a\\b"])
def test_bad_resource_is_refused(resource):
    with pytest.raises(ValueError):
        AuthSettings(resource=resource, issuer="https://a")


@pytest.mark.parametrize("resource, metadata", [
    ("https://h/%E2%82%AC/mcp", "https://h/.well-known/oauth-protected-resource/%E2%82%AC/mcp"),
    ("https://xn--bcher-kva.example/mcp", "https://xn--bcher-kva.example/.well-known/oauth-protected-resource/mcp"),
    ("https://[::1]:8443/mcp", "https://[::1]:8443/.well-known/oauth-protected-resource/mcp")])
def test_a_percent_encoded_or_punycode_resource_is_taken(resource, metadata):
    assert AuthSettings(resource=resource, issuer="https://a").metadata_url == metadata


def test_scope_lists_must_not_be_plain_strings():
    with pytest.raises(TypeError, match="required_scopes"):
        AuthSettings(resource="https://h/mcp", issuer="https://a", required_scopes="mcp:use")


def test_challenge_without_scopes():
    assert bearer_challenge("https://h/m") == 'Bearer resource_metadata="https://h/m"'


def test_unauthorized_without_scopes_configured():
    settings = AuthSettings(resource="https://h/mcp", issuer="https://a")
    assert unauthorized(settings).www_authenticate == (
        'Bearer resource_metadata="https://h/.well-known/oauth-protected-resource/mcp"')


def test_description_is_made_legal():
    assert clean_description('bad "quote" and \\ back\nslash') == "bad 'quote' and ' back'slash"


def test_invalid_scope_token_is_refused():
    with pytest.raises(ValueError, match="not a valid scope token"):
        bearer_challenge("https://h/m", ['a"b'])


def test_settings_from_config():
    from gsmcpd.auth import settings_from_config
    from gsmcpd.config import Config
    config = Config(auth=True, issuer="https://kc.example/realms/mcp", audience="https://mcp.example/mcp",
                    required_scopes=("mcp:use",), write_scope="mcp:write",
                    extra_scopes=("profile", "offline_access"), userid_claim="preferred_username",
                    jwt_leeway=5.0, jwks_uri="https://kc.example/certs", jwks_timeout=2.5)
    settings = settings_from_config(config)
    assert settings.fetch_timeout == 2.5
    assert settings.resource == "https://mcp.example/mcp"
    assert settings.expected_audience == "https://mcp.example/mcp"
    assert settings.supported_scopes == ("mcp:use", "mcp:write", "profile", "offline_access")
    assert (settings.userid_claim, settings.leeway, settings.jwks_url) == ("preferred_username", 5.0,
                                                                         "https://kc.example/certs")
    client_id = settings_from_config(Config(auth=True, issuer="https://kc", audience="gsmcpd", port=8443))
    assert client_id.resource == "http://127.0.0.1:8443/mcp" and client_id.fetch_timeout == 10.0
    assert client_id.expected_audience == "gsmcpd"


def test_a_configured_resource_url_is_the_resource_and_an_accepted_audience():
    from gsmcpd.auth import settings_from_config
    from gsmcpd.config import Config
    settings = settings_from_config(Config(auth=True, issuer="https://kc", audience="api://gsmcpd",
                                           host="0.0.0.0", resource_url="https://mcp.example/mcp"))
    assert settings.resource == "https://mcp.example/mcp"
    assert settings.accepted_audiences == ("api://gsmcpd", "https://mcp.example/mcp")
    # Derived from the bind address, the resource is published but names no one server.
    derived = settings_from_config(Config(auth=True, issuer="https://kc", audience="api://gsmcpd"))
    assert derived.resource == "http://127.0.0.1:8000/mcp"
    assert derived.accepted_audiences == ("api://gsmcpd",)


@pytest.mark.parametrize("where,why", [
    ({"host": "0.0.0.0"}, "0.0.0.0 is a wildcard bind, no address to connect to"),
    ({"host": "::"}, ":: is a wildcard bind, no address to connect to"),
    ({"host": "10.1.2.3", "behind_tls_proxy": True}, "behind a TLS proxy clients use the proxy's https URL"),
    ({"behind_tls_proxy": True}, "behind a TLS proxy clients use the proxy's https URL"),
])
def test_a_resource_derived_from_a_bind_address_clients_cannot_use_is_warned_of(where, why):
    from gsmcpd.auth.settings import settings_from_config, unreachable_resource_warning
    from gsmcpd.config import Config
    config = Config(auth=True, issuer="https://kc", audience="api://gsmcpd", port=8000, **where)
    warning = unreachable_resource_warning(config, settings_from_config(config).resource)
    assert warning == ("the resource published in the RFC 9728 metadata and the WWW-Authenticate challenge "
                       "is %s, derived from the bind address, which names no URL clients reach: %s; set "
                       "MCP_RESOURCE_URL to the /mcp URL clients use, or make MCP_AUDIENCE that URL"
                       % (config.url, why))


@pytest.mark.parametrize("config", [
    {"host": "0.0.0.0", "resource_url": "https://mcp.example/mcp"},   # configured
    {"host": "0.0.0.0", "behind_tls_proxy": True, "audience": "https://mcp.example/mcp"},   # a URL audience
    {"host": "10.1.2.3", "tls_cert": "c.pem", "tls_key": "k.pem"},    # its own https address
    {},                                                                # loopback, no proxy
])
def test_a_resource_configured_or_reachable_is_not_warned_of(config):
    from gsmcpd.auth.settings import settings_from_config, unreachable_resource_warning
    from gsmcpd.config import Config
    config = Config(**{"auth": True, "issuer": "https://kc", "audience": "api://gsmcpd", **config})
    assert unreachable_resource_warning(config, settings_from_config(config).resource) is None


def test_the_advertised_resource_is_the_audience_verbatim(tmp_path):
    from gsmcpd.auth import Accepted, KeySource, authenticate, settings_from_config
    from gsmcpd.config import Config
    from idp import Idp
    config = Config(auth=True, issuer="https://idp.test", audience="https://mcp.example/mcp/",
                    jwks_file=tmp_path / "jwks.json")
    settings = settings_from_config(config)
    advertised = json.loads(settings.metadata_body)["resource"]
    assert advertised == "https://mcp.example/mcp/" == settings.expected_audience
    assert settings.metadata_url == "https://mcp.example/.well-known/oauth-protected-resource/mcp"
    idp = Idp(issuer="https://idp.test", audience=advertised, kinds=("rsa",))
    keys = KeySource(post=lambda fn: None, jwks_file=str(idp.write_jwks(tmp_path / "jwks.json")))
    keys.load_now()
    assert isinstance(authenticate(f"Bearer {idp.mint()}", settings, keys), Accepted)
