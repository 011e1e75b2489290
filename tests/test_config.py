"""Config: precedence of the four layers, value parsing, and every refusal (key named)."""

import dataclasses
import os
import re
from pathlib import Path

import pytest

from gsmcpd import config as config_module
from gsmcpd.config import (CORE_TOOLSETS, DEFAULT_STATE_DIR, KNOBS, KNOBS_BY_ENV, Config, ConfigError,
                           load_config)

REPO = Path(__file__).resolve().parent.parent
AUTH_ENV = {"GS_MCP_AUTH": "1", "MCP_ISSUER": "https://idp.example", "MCP_AUDIENCE": "gsmcpd"}


@pytest.fixture(autouse=True)
def accept_known_toolsets(monkeypatch):
    """Toolset resolution imports the worker's toolsets; config tests need only the names."""
    def fake_validate(names, imported=False):
        unknown = [name for name in names if name not in CORE_TOOLSETS + ("bench",)]
        if unknown:
            raise ConfigError("toolsets", f"unknown toolset {unknown[0]!r}")
    monkeypatch.setattr(config_module, "_validate_toolsets", fake_validate)


def refused(key, flags=None, environ=None, conf_path=None):
    with pytest.raises(ConfigError) as info:
        load_config(flags or {}, environ or {}, conf_path)
    assert info.value.key == key
    assert str(info.value).startswith(f"{key}: ")
    return info.value.message


def test_defaults_match_the_issue():
    config = load_config({}, {})
    assert config.host == "127.0.0.1" and config.port == 8000
    assert config.state_dir == DEFAULT_STATE_DIR == REPO / "var"
    assert config.image == DEFAULT_STATE_DIR / "image"
    assert config.toolsets == CORE_TOOLSETS
    assert (config.trace, config.trace_limit) == ("off", 4096)
    assert config.max_body == 16 * 1024 * 1024
    assert (config.idle_timeout, config.probe_after, config.streamless_idle_timeout) == \
        (1800.0, 1500.0, 60.0)
    assert config.max_session_lifetime is None and config.request_timeout is None
    assert (config.spare_workers, config.max_sessions, config.jwt_leeway) == (2, 2000, 30.0)
    assert config.max_sessions_per_user is None
    assert load_config({}, {"GS_MCP_MAX_SESSIONS_PER_USER": "25"}).max_sessions_per_user == 25
    assert load_config({}, {"GS_MCP_MAX_SESSIONS_PER_USER": "none"}).max_sessions_per_user is None
    assert config.worker_nice == 10 and config.poll_us == 200
    assert config.worker_memory is None
    assert load_config({}, {"GS_MCP_WORKER_MEMORY": "512MiB"}).worker_memory == 512 * 1024 * 1024
    assert load_config({}, {"GS_MCP_WORKER_MEMORY": "none"}).worker_memory is None
    assert config.worker_env == ()
    assert load_config({}, {"GS_MCP_WORKER_ENV": "AWS_REGION, HTTPS_PROXY"}).worker_env == \
        ("AWS_REGION", "HTTPS_PROXY")
    assert config.log_file is None and config.log_level == "info"
    assert config.local_clients == "own"
    assert load_config({}, {"GS_MCP_LOCAL_CLIENTS": "any"}).local_clients == "any"
    assert config.url == "http://127.0.0.1:8000/mcp"
    assert config.pidfile == REPO / "var" / "gsmcpd-8000.pid"
    assert config.control_socket == REPO / "var" / "gsmcpd-8000.ctl"


def test_knobs_and_config_fields_are_the_same_set():
    # A knob's default is its Config field's; a field without a knob could not be set.
    assert [field.name for field in dataclasses.fields(Config)] == [knob.key for knob in KNOBS]


def test_loaded_defaults_are_configs_own_with_paths_resolved():
    loaded = load_config({}, {})
    for field in dataclasses.fields(Config):
        if field.name not in ("state_dir", "image"):
            assert getattr(loaded, field.name) == field.default, field.name
    assert loaded.state_dir == DEFAULT_STATE_DIR.absolute()
    moved = load_config({}, {"GS_MCP_STATE_DIR": "/srv/gsmcpd"})
    assert moved.image == Path("/srv/gsmcpd/image")   # the image follows the state directory


def test_precedence_defaults_conf_env_flags(tmp_path):
    conf = tmp_path / "site.conf"
    conf.write_text("port = 9001\nhost = localhost\ntrace_limit = 100\nreadonly = yes\n")
    layered = load_config({}, {}, conf)
    assert (layered.port, layered.host, layered.trace_limit, layered.readonly) == \
        (9001, "localhost", 100, True)
    env = {"GS_MCP_PORT": "9002", "GS_MCP_TRACE_LIMIT": "none"}
    layered = load_config({}, env, conf)
    assert (layered.port, layered.trace_limit, layered.host) == (9002, None, "localhost")
    layered = load_config({"port": "9003", "readonly": False}, env, conf)
    assert (layered.port, layered.readonly) == (9003, False)


def test_conf_file_named_by_flag_or_environment(tmp_path):
    conf = tmp_path / "a.conf"
    conf.write_text("port = 9100\n")
    assert load_config({"config": str(conf)}, {}).port == 9100
    assert load_config({}, {"GS_MCP_CONFIG": str(conf)}).port == 9100
    for blank in ("", "  "):   # no conf file, as an empty path knob is unset
        assert load_config({}, {"GS_MCP_CONFIG": blank}).port == 8000
        # A blank flag, "" or spaces alike, leaves it to the environment: start hands a
        # blank flag on to its serve as none, which reads the environment's.
        assert load_config({"config": blank}, {"GS_MCP_CONFIG": str(conf)}).port == 9100


def test_a_comment_after_a_value_is_no_part_of_it(tmp_path):
    conf = tmp_path / "a.conf"
    conf.write_text("state_dir = /srv/gsmcpd/state   # where pidfiles go\nport = 9101 # comment\n"
                    "server_title = Issue#7 helper\n")   # no whitespace before it: part of the value
    config = load_config({"config": str(conf)}, {})
    assert (str(config.state_dir), config.port) == ("/srv/gsmcpd/state", 9101)
    assert config.server_title == "Issue#7 helper"


def test_a_config_file_that_is_not_text_is_refused_naming_it(tmp_path):
    conf = tmp_path / "c.conf"
    conf.write_bytes(b"\xff\xfe\x00port = 1\n")
    with pytest.raises(ConfigError, match=r"config: .*c\.conf is not UTF-8 text \(byte 0\)"):
        load_config({"config": str(conf)}, {})


def test_more_spare_workers_than_sessions_could_claim_are_refused():
    with pytest.raises(ConfigError, match="spare_workers: 100000 spare workers is more than max_sessions"):
        load_config({}, {"GS_MCP_SPARE_WORKERS": "100000"})
    assert load_config({}, {"GS_MCP_SPARE_WORKERS": "8", "GS_MCP_MAX_SESSIONS": "8"}).spare_workers == 8


def test_only_the_knobs_asked_for_are_read_so_another_bad_one_cannot_block_stop(tmp_path):
    environ = {"GS_MCP_PORT": "9105", "GS_MCP_STATE_DIR": str(tmp_path), "GS_MCP_IDLE_TIMEOUT": "abc",
               "GS_MCP_TIMEOUT": "5"}   # a bad value, and a name that is no knob
    config = load_config({}, environ, validate=False, only=("state_dir", "port"))
    assert (config.port, config.state_dir) == (9105, tmp_path)
    with pytest.raises(ConfigError):
        load_config({}, environ, validate=False)


def test_only_the_knobs_asked_for_are_read_from_the_conf_file_too(tmp_path):
    conf = tmp_path / "site.conf"
    conf.write_text(f"port = 9106\nstate_dir = {tmp_path}\nspare_worker = 1\nidle_timeout = abc\n")
    config = load_config({"config": str(conf)}, {}, validate=False, only=("state_dir", "port"))
    assert (config.port, config.state_dir) == (9106, tmp_path)
    assert "line 3: unknown key" in refused("spare_worker", conf_path=conf)   # serve/check
    conf.write_text("port = 9106\njust words\n")   # not key = value: still refused, naming the file
    with pytest.raises(ConfigError, match=f"{conf} line 2: expected 'key = value'"):
        load_config({"config": str(conf)}, {}, validate=False, only=("state_dir", "port"))
    conf.write_text("port = 99999\n")   # a knob stop needs, badly set: still refused
    with pytest.raises(ConfigError, match=re.escape(f"port: {conf} line 1: must be between 1 and 65535")):
        load_config({"config": str(conf)}, {}, validate=False, only=("state_dir", "port"))


def test_none_flags_mean_not_given():
    assert load_config({"port": None, "readonly": None}, {"GS_MCP_PORT": "9200"}).port == 9200


def test_value_forms():
    config = load_config({"trace": "both"}, {
        "GS_MCP_TOOLSETS": "browsing, search  listing",
        "GS_MCP_IDLE_TIMEOUT": "none", "GS_MCP_PROBE_AFTER": "2.5",
        "GS_MCP_REQUEST_TIMEOUT": "0.25", "GS_MCP_MAX_BODY": "2MiB",
        "GS_MCP_ALLOWED_ORIGINS": "app.example.com other.example",
        "GS_MCP_WORKER_CLASS": "gsmcpd.worker.server:McpServer", "GS_MCP_LOG_LEVEL": "DEBUG",
        "MCP_EXTRA_SCOPES": "a b", "MCP_USERID_CLAIM": "email", "MCP_TOKEN_EXPIRY": "Keep-Stream"})
    assert config.toolsets == ("browsing", "search", "listing")
    assert config.idle_timeout is None and config.probe_after == 2.5
    assert config.request_timeout == 0.25 and config.max_body == 2 * 1024 * 1024
    assert config.allowed_origins == ("app.example.com", "other.example")   # bare hosts
    assert config.worker_class == "gsmcpd.worker.server:McpServer" and config.log_level == "debug"
    assert config.extra_scopes == ("a", "b") and config.userid_claim == "email"
    assert config.token_expiry == "keep-stream" and load_config({}, {}).token_expiry == "end-stream"
    assert config.trace == "both" and config.trace_inbound and config.trace_outbound
    assert load_config({}, {"GS_MCP_TRACE": "1"}).trace == "inbound"
    assert load_config({}, {"GS_MCP_TRACE": "0"}).trace_inbound is False


def test_allowed_origins_are_origins_as_a_browser_writes_them_or_bare_hosts(tmp_path):
    env = {"GS_MCP_ALLOWED_ORIGINS": "http://App.Example, https://app.example:8443 other.example "
                                     "[FE80::1] http://[::1]:3000 vscode-webview://abc HTTPS://b.example:443 "
                                     "http://c.example:0080 http://c.example"}
    assert load_config({}, env).allowed_origins == (
        "http://app.example", "https://app.example:8443", "other.example", "fe80::1", "http://[::1]:3000",
        "vscode-webview://abc", "https://b.example", "http://c.example")
    conf = tmp_path / "o.conf"
    conf.write_text("allowed_origins = https://app.example\n")
    assert load_config({}, {}, conf).allowed_origins == ("https://app.example",)
    assert load_config({}, {"GS_MCP_ALLOWED_ORIGINS": " "}).allowed_origins == ()


@pytest.mark.parametrize("value, words", [
    ("*", "any site"), ("null", "any site"), ("NULL", "any site"), ("a.example,,b.example", "empty entry"), ("a.example,", "empty entry"),
    ("http://app.example/", "got 'http://app.example/'"), ("app.example/mcp", "an origin (https://"),
    ("http://app.example:https", "got"), ("http://app.example:99999", "got"), ("app.example:", "got"),
    ("http://", "got"), ("http://user@app.example", "got"), ("::1", "a host (app.example)"),
    ("other.example:99", "'other.example:99' has a port but no scheme: write the origin "
                         "(http://other.example:99 or https://other.example:99) for that port alone, "
                         "or the bare host (other.example) for any"),
    ("[::1]:3000", "has a port but no scheme"),
])
def test_bad_allowed_origins_are_refused(value, words):
    assert words in refused("allowed_origins", environ={"GS_MCP_ALLOWED_ORIGINS": value})


def test_image_follows_state_dir_unless_set(tmp_path):
    config = load_config({"state_dir": str(tmp_path)}, {})
    assert config.image == tmp_path / "image"
    assert load_config({"state_dir": str(tmp_path), "image": "/srv/img"}, {}).image == \
        Path("/srv/img")


PATH_KNOBS = [knob for knob in KNOBS if knob.parse is config_module.parse_optional_path]


def test_a_none_word_leaves_a_path_knob_unset_as_it_does_the_other_optional_knobs():
    assert {knob.key for knob in PATH_KNOBS} == {"state_dir", "image", "log_file", "jwks_file",
                                                 "tls_cert", "tls_key"}
    for word in ("none", "None", " NULL ", "never", "off", ""):
        assert config_module.parse_optional_path(word) is None, word
        assert config_module.parse_optional_seconds(word or "none") is None
    assert config_module.parse_optional_path("./none") == Path("none")   # a file so named
    assert config_module.parse_optional_path("nonesuch") == Path("nonesuch")


def test_a_none_word_unsets_a_path_knob_from_every_source(tmp_path):
    conf = tmp_path / "none.conf"
    conf.write_text("tls_cert = none   # as README's default column says\ntls_key = null\n"
                    "jwks_file = off\nlog_file = none\n")
    default = load_config({"state_dir": str(tmp_path)}, {})
    config = load_config({"state_dir": str(tmp_path), "image": "none"},
                         {"GS_MCP_LOG_FILE": "never"}, conf)
    assert (config.tls_cert, config.tls_key, config.jwks_file, config.log_file) == (None,) * 4
    assert config.image == default.image == tmp_path / "image"
    assert load_config({}, {"GS_MCP_STATE_DIR": "none"}).state_dir == DEFAULT_STATE_DIR
    # A lower layer's path is unset again by a higher one's none.
    conf.write_text("log_file = /var/log/x.log\n")
    assert load_config({}, {"GS_MCP_LOG_FILE": "none"}, conf).log_file is None
    assert load_config({}, {}, conf).log_file == Path("/var/log/x.log")


def test_a_relative_path_in_a_conf_file_is_relative_to_the_conf_files_directory(tmp_path, monkeypatch):
    site = tmp_path / "site"
    site.mkdir()
    site = site.resolve()
    conf = site / "gsmcpd.conf"
    conf.write_text("state_dir = state\nimage = ../img\nlog_file = logs/g.log\njwks_file = ./keys.json\n"
                    "tls_cert = tls/cert.pem\ntls_key = /etc/ssl/key.pem\nuser_map = users.map\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)   # the caller's directory plays no part
    for named in (str(conf), "../site/gsmcpd.conf"):   # the conf file itself is named from the cwd
        config = load_config({"config": named}, {}, validate=False)
        assert config.state_dir == site / "state"
        assert config.image == site / "../img"   # as written: the kernel reads the ..
        assert (config.log_file, config.jwks_file) == (site / "logs/g.log", site / "keys.json")
        assert (config.tls_cert, config.tls_key) == (site / "tls/cert.pem", Path("/etc/ssl/key.pem"))
        assert config.user_map == str(site / "users.map")
    # stop/status read only state_dir and port, and find the same directory
    assert load_config({"config": str(conf)}, {}, validate=False, only=("state_dir", "port")) \
        .state_dir == site / "state"


def test_a_relative_path_from_the_environment_or_a_flag_stays_the_callers(tmp_path, monkeypatch):
    conf = tmp_path / "site.conf"
    conf.write_text("state_dir = state\nlog_file = g.log\n")
    monkeypatch.chdir(tmp_path.parent)
    cwd = Path.cwd()
    config = load_config({"state_dir": "flagged"}, {"GS_MCP_LOG_FILE": "env.log", "MCP_JWKS_FILE": "k.json",
                                                    "GS_MCP_TLS_CERT": "c.pem", "GS_MCP_TLS_KEY": "~/k.pem",
                                                    "MCP_USER_MAP": "users.map"}, conf, validate=False)
    assert config.state_dir == cwd / "flagged"
    # whole from the start: a SIGHUP reopens the log (and reloads TLS) by name, and the
    # router may have moved to / by then (its directory deleted)
    assert (config.log_file, config.jwks_file) == (cwd / "env.log", cwd / "k.json")
    assert (config.tls_cert, config.tls_key) == (cwd / "c.pem", Path("~/k.pem").expanduser())
    assert config.user_map == str(cwd / "users.map")
    assert load_config({}, {"MCP_USER_MAP": "identity"}, validate=False).user_map == "identity"


def test_a_relative_path_read_in_a_directory_deleted_since_is_refused_naming_it(tmp_path, monkeypatch):
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    for key, flags in (("state_dir", {"state_dir": "state"}), ("image", {"image": "img"}),
                       ("config", {"config": "site.conf"}), ("log_file", {"log_file": "g.log"})):
        assert refused(key, flags) == (
            f"{flags[key]} is relative to the current directory, which no longer exists "
            "(deleted?): give the path whole, or run this from a directory that exists")
    for key, env_name in (("log_file", "GS_MCP_LOG_FILE"), ("jwks_file", "MCP_JWKS_FILE"),
                          ("tls_cert", "GS_MCP_TLS_CERT"), ("tls_key", "GS_MCP_TLS_KEY"),
                          ("user_map", "MCP_USER_MAP")):
        assert refused(key, environ={env_name: "rel"}).startswith(
            "rel is relative to the current directory, which no longer exists (deleted?)")
    assert load_config({}, {"MCP_USER_MAP": "identity"}, validate=False).user_map == "identity"
    assert load_config({"state_dir": str(tmp_path)}, {}).state_dir == tmp_path   # whole paths need none


def test_a_conf_files_none_word_user_map_identity_and_home_paths_are_not_anchored(tmp_path, monkeypatch):
    conf = tmp_path / "site.conf"
    conf.write_text("tls_cert = none\nlog_file = ~/g.log\nuser_map = identity\nimage = ./none\n")
    monkeypatch.setenv("HOME", "/home/someone")
    config = load_config({}, {}, conf, validate=False)
    assert config.tls_cert is None and config.user_map == "identity"
    assert config.log_file == Path("/home/someone/g.log")
    assert config.image == tmp_path.resolve() / "none"   # a file so named, beside the conf file


LIST_KNOBS = ["MCP_REQUIRED_SCOPES", "MCP_EXTRA_SCOPES", "MCP_AUTHORIZATION_SERVERS",
              "GS_MCP_ALLOWED_ORIGINS", "GS_MCP_WORKER_ENV"]


@pytest.mark.parametrize("env_name", LIST_KNOBS)
def test_a_none_word_alone_is_a_list_knobs_empty_list(env_name, tmp_path):
    # MCP_REQUIRED_SCOPES=none required a scope named none: every token got 403.
    key = KNOBS_BY_ENV[env_name].key
    for word in ("none", "None", " never ", "off"):
        assert getattr(load_config({}, {**AUTH_ENV, env_name: word}), key) == (), word
    conf = tmp_path / "g.conf"
    conf.write_text(f"{key} = none\n")
    assert getattr(load_config({}, AUTH_ENV, conf), key) == ()


@pytest.mark.parametrize("env_name", LIST_KNOBS)
def test_a_none_word_among_a_list_knobs_entries_is_refused(env_name):
    key = KNOBS_BY_ENV[env_name].key
    message = refused(key, environ={**AUTH_ENV, env_name: "HTTPS_PROXY, none"})
    assert message.endswith("'none' among other entries: none, alone (or an empty value), is the "
                            "empty list; list the entries without it")


def test_null_alone_is_still_refused_as_an_origin_not_read_as_none():
    assert "any site" in refused("allowed_origins", environ={"GS_MCP_ALLOWED_ORIGINS": "null"})


def test_toolsets_none_is_refused_as_for_every_knob_that_cannot_be_off():
    assert refused("toolsets", environ={"GS_MCP_TOOLSETS": "none"}).endswith(
        "cannot be none: it must be a list of toolsets (at least one)")


@pytest.mark.parametrize("env_name", ["GS_MCP_SERVER_NAME", "GS_MCP_SERVER_VERSION", "GS_MCP_SERVER_TITLE",
                                      "MCP_RESOURCE_URL", "MCP_JWKS_URI", "MCP_WRITE_SCOPE"])
def test_a_none_word_unsets_a_named_setting_as_its_none_default_reads(env_name):
    # MCP_WRITE_SCOPE=none gated every session on a scope named none (all read-only).
    key = KNOBS_BY_ENV[env_name].key
    for word in ("none", "None", " none "):
        assert getattr(load_config({}, {**AUTH_ENV, env_name: word}), key) is None
    assert load_config({}, {**AUTH_ENV, "MCP_WRITE_SCOPE": "mcp:none"}).write_scope == "mcp:none"


def test_a_none_word_user_map_is_unset_as_for_the_path_knobs(tmp_path):
    # It was read as a map file named none in the caller's directory.
    conf = tmp_path / "site.conf"
    conf.write_text("user_map = none\n")
    assert load_config({}, {}, conf, validate=False).user_map is None
    for word in ("none", "NONE", " ", ""):
        assert load_config({}, {"MCP_USER_MAP": word}, validate=False).user_map is None
    assert load_config({}, {"MCP_USER_MAP": "./none"}, validate=False).user_map == str(Path.cwd() / "none")



@pytest.mark.parametrize("env_name, text", [
    ("GS_MCP_SERVER_NAME", "café"), ("GS_MCP_SERVER_VERSION", "café"), ("GS_MCP_SERVER_TITLE", "café"),
    ("MCP_AUDIENCE", "café"), ("MCP_WRITE_SCOPE", "mcp:write"), ("MCP_USERID_CLAIM", "café"),
])
def test_a_name_that_is_not_utf8_is_refused_naming_the_knob(env_name, text):
    # The environment carries any bytes (decoded with surrogateescape): a server name of
    # them could not be sent to a worker, and every session's start failed (500).
    key = KNOBS_BY_ENV[env_name].key
    assert refused(key, environ={**AUTH_ENV, env_name: os.fsdecode(b"caf\xe9")}) == "not UTF-8 text: 'caf\\udce9'"
    assert getattr(load_config({}, {**AUTH_ENV, env_name: text}), key) == text


def test_an_image_path_that_is_not_utf8_is_refused_naming_the_knob_that_gave_it(tmp_path):
    # A worker is told its image's path in a frame: every session's start failed (500).
    odd = str(tmp_path / os.fsdecode(b"caf\xe9"))
    assert refused("state_dir", environ={"GS_MCP_STATE_DIR": odd}).startswith(
        f"{odd + '/image'!r} is not UTF-8, as the image's path must be")
    assert refused("image", environ={"GS_MCP_IMAGE": odd}).startswith(f"{odd!r} is not UTF-8")
    # the router's own files may have any name: only the image's path reaches a worker
    config = load_config({}, {"GS_MCP_STATE_DIR": odd, "GS_MCP_IMAGE": str(tmp_path / "image")})
    assert str(config.state_dir) == odd
    # stop and status read only the state directory and port: they still find the daemon
    control = load_config({}, {"GS_MCP_STATE_DIR": odd}, validate=False, only=("state_dir", "port"))
    assert str(control.state_dir) == odd


@pytest.mark.parametrize("env_name, value, scope", [
    ("MCP_REQUIRED_SCOPES", "mcp:use café", "'café'"), ("MCP_WRITE_SCOPE", 'mcp:"write"', "'mcp:\"write\"'"),
    ("MCP_EXTRA_SCOPES", "profile a\\b", "'a\\\\b'"),
])
def test_a_scope_no_challenge_can_list_is_refused_naming_the_knob(env_name, value, scope):
    # Every challenge lists the scopes: each 401 and 403 failed, answered 500.
    key = KNOBS_BY_ENV[env_name].key
    assert refused(key, environ={**AUTH_ENV, env_name: value}) == (
        f"{scope} is not an OAuth scope, which is printable ASCII without a quote or backslash (RFC 6749 3.3)")
    entra = "api://1f0e5c3a-0000-4000-8000-000000000000/mcp.write"
    assert load_config({}, {**AUTH_ENV, env_name: entra}) is not None


def test_flags_may_arrive_typed():
    config = load_config({"port": 8123, "readonly": True, "toolsets": ["search"]}, {})
    assert (config.port, config.readonly, config.toolsets) == (8123, True, ("search",))


@pytest.mark.parametrize("env_name, value, key, words", [
    ("GS_MCP_PORT", "eighty", "port", "integer"),
    ("GS_MCP_PORT", "70000", "port", "between 1 and 65535"),
    ("GS_MCP_READONLY", "maybe", "readonly", "boolean"),
    ("GS_MCP_TRACE", "loud", "trace", "0, 1 or both"),
    ("GS_MCP_TRACE_LIMIT", "0", "trace_limit", "at least 1"),
    ("GS_MCP_IDLE_TIMEOUT", "-5", "idle_timeout", ">= 0"),
    ("GS_MCP_READ_TIMEOUT", "0", "read_timeout", "greater than 0"),
    # one message for a knob that cannot be 0, negative or not ("finite ... >= 0" said otherwise)
    ("GS_MCP_READ_TIMEOUT", "-1", "read_timeout", "must be greater than 0, got '-1'"),
    ("GS_MCP_READ_TIMEOUT", "1e999", "read_timeout", "must be a finite number of seconds, got '1e999'"),
    ("GS_MCP_MAX_BODY", "16 parsecs", "max_body", "size in bytes"),
    ("GS_MCP_LOG_LEVEL", "chatty", "log_level", "one of"),
    ("GS_MCP_WORKER_CLASS", "not a class", "worker_class", "module:Class"),
    ("GS_MCP_SPARE_WORKERS", "-1", "spare_workers", "at least 0"),
    ("GS_MCP_WORKER_NICE", "-1", "worker_nice", "between 0 and 19"),
    ("GS_MCP_WORKER_NICE", "20", "worker_nice", "between 0 and 19"),
    ("GS_MCP_WORKER_NICE", "low", "worker_nice", "an integer"),
    ("GS_MCP_WORKER_MEMORY", "lots", "worker_memory", "size in bytes"),
    ("GS_MCP_WORKER_MEMORY", "32MiB", "worker_memory",
     "must be at least 64MiB (a worker holds about 30 MiB before any code runs), got '32MiB'"),
    # past a C long long: the spawner died at start with an OverflowError
    ("GS_MCP_WORKER_MEMORY", "99999999999999999999999", "worker_memory",
     "must be at most 9223372036854775807 bytes (8 EiB, the largest data limit the kernel takes; "
     "none for no limit), got '99999999999999999999999'"),
    ("GS_MCP_WORKER_ENV", "HTTPS_PROXY=http://proxy:3128", "worker_env",
     "'HTTPS_PROXY=http://proxy:3128' gives a value: list names only (the daemon's own value is "
     "passed), e.g. 'HTTPS_PROXY'"),
    ("GS_MCP_WORKER_ENV", "AWS_REGION, 2FA_SEED", "worker_env",
     "not an environment variable name: '2FA_SEED' (letters, digits and _, not starting with a digit)"),
    ("GS_MCP_WORKER_ENV", "AWS-REGION", "worker_env", "not an environment variable name: 'AWS-REGION'"),
    ("GS_MCP_WORKER_ENV", "HOME", "worker_env",
     "HOME cannot be passed: a per-user worker's HOME is its account's own"),
    ("GS_MCP_POLL_US", "-1", "poll_us", "between 0 and 10000"),
    ("GS_MCP_POLL_US", "0.5ms", "poll_us", "an integer"),
    ("GS_MCP_MAX_SESSIONS", "0", "max_sessions", "at least 1"),
    ("GS_MCP_MAX_SESSIONS_PER_USER", "0", "max_sessions_per_user", "at least 1"),
    ("GS_MCP_MAX_SESSIONS_PER_USER", "many", "max_sessions_per_user", "expected an integer"),
    ("MCP_JWT_LEEWAY", "soon", "jwt_leeway", "seconds"),
    ("MCP_TOKEN_EXPIRY", "end-session", "token_expiry", "one of end-stream, keep-stream"),
])
def test_bad_values_are_refused_naming_the_key(env_name, value, key, words):
    assert words in refused(key, environ={env_name: value})


@pytest.mark.parametrize("value", ["300.5", "3600", "86400", "1e9"])
def test_a_jwt_leeway_beyond_five_minutes_is_refused_naming_the_range_and_the_value(value):
    # It had no upper bound: MCP_JWT_LEEWAY=86400 accepted tokens expired a day ago, in silence.
    assert refused("jwt_leeway", environ={"MCP_JWT_LEEWAY": value}) == (
        "must be between 0 and 300 seconds (the clock skew between this host and the issuer's; "
        f"more accepts tokens that long expired), got '{value}'")


def test_a_jwt_leeway_of_0_to_300_seconds_is_taken(tmp_path):
    for value, seconds in (("0", 0.0), ("300", 300.0), ("2.5", 2.5)):
        assert load_config({}, {"MCP_JWT_LEEWAY": value}).jwt_leeway == seconds
    conf = tmp_path / "site.conf"
    conf.write_text("jwt_leeway = 301\n")
    assert refused("jwt_leeway", conf_path=conf).startswith(f"{conf} line 1: must be between 0 and 300 seconds")


def test_a_bad_value_in_a_conf_file_is_refused_naming_its_file_and_line(tmp_path):
    conf = tmp_path / "site.conf"
    conf.write_text("# site\nport = 8001\n\nidle_timeout = 1O   # minutes?\nreadonly = maybe\n")
    assert refused("idle_timeout", conf_path=conf) == \
        f"{conf} line 4: expected a number of seconds, got '1O'"
    conf.write_text("readonly = maybe\n")
    assert refused("readonly", conf_path=conf).startswith(f"{conf} line 1: expected a boolean")
    # set again in the environment or a flag, the conf file's value is not the one read
    assert refused("readonly", environ={"GS_MCP_READONLY": "perhaps"}, conf_path=conf) == \
        "expected a boolean (1/0, true/false, yes/no, on/off), got 'perhaps'"
    assert load_config({"readonly": True}, {}, conf).readonly is True
    # a flag not given (None, as the command line passes every one) leaves the file named
    assert refused("readonly", flags={"readonly": None}, conf_path=conf).startswith(f"{conf} line 1: ")


def test_a_key_set_twice_in_a_conf_file_is_refused_naming_the_file_and_both_lines(tmp_path):
    # The last value used to win silently: which one the admin meant is theirs to say.
    conf = tmp_path / "site.conf"
    conf.write_text("# site\nport = 8001\nreadonly = yes\n\nport = 8002   # moved\n")
    message = f"set twice in {conf} (lines 2 and 5): keep one of them"
    assert refused("port", conf_path=conf) == message
    # stop and status, which read just the port and the state directory, too: which
    # port to stop is just as unclear
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_config({}, {}, conf, validate=False, only=("state_dir", "port"))
    conf.write_text("readonly = yes\nreadonly = yes\n")   # the same value twice: still a slip
    assert refused("readonly", conf_path=conf) == f"set twice in {conf} (lines 1 and 2): keep one of them"
    conf.write_text("port = 8001\nreadonly = yes\nreadonly = no\n")   # a key stop does not read
    assert load_config({}, {}, conf, validate=False, only=("state_dir", "port")).port == 8001


def test_unknown_keys_are_refused(tmp_path):
    conf = tmp_path / "bad.conf"
    conf.write_text("# fine\nport = 8001\nread_only = 1\n")
    assert "line 3: unknown key" in refused("read_only", conf_path=conf)
    conf.write_text("just words\n")
    assert "expected 'key = value'" in refused("just words", conf_path=conf)
    assert "unknown GS_MCP_" in refused("GS_MCP_READ_ONLY", environ={"GS_MCP_READ_ONLY": "1"})
    assert "unknown flag" in refused("colour", flags={"colour": "blue"})
    assert "cannot read" in refused("config", conf_path=tmp_path / "missing.conf")


def test_unrelated_environment_is_ignored():
    # MCP_* is not ours alone: other MCP software's names pass, near none of ours.
    env = {"PATH": "/bin", "MCP_SOMETHING_ELSE": "x", "MCP_TIMEOUT": "5", "MCP_TOOL_TIMEOUT": "9",
           "MAX_MCP_OUTPUT_TOKENS": "1", "MCP_SERVER_URL": "u", "MCP_ISSUER_URL": "u"}
    assert load_config({}, env).port == 8000


@pytest.mark.parametrize("name, meant", [
    ("MCP_WRTIE_SCOPE", "MCP_WRITE_SCOPE"), ("MCP_AUDIENCES", "MCP_AUDIENCE"), ("MCP_JWKS_URL", "MCP_JWKS_URI"),
    ("MCP_REQUIRED_SCOPE", "MCP_REQUIRED_SCOPES"), ("MCP_RESOURCE", "MCP_RESOURCE_URL"),
])
def test_a_near_miss_of_an_mcp_name_is_refused_naming_the_one_meant(name, meant):
    # A mistyped MCP_WRITE_SCOPE would otherwise leave every session read-write, silently.
    assert refused(name, environ={name: "x"}) == f"unknown MCP_* environment variable; did you mean {meant}?"


def test_an_unknown_name_or_key_says_which_was_meant_when_one_is_near(tmp_path):
    assert refused("GS_MCP_READ_ONLY", environ={"GS_MCP_READ_ONLY": "1"}) == \
        "unknown GS_MCP_* environment variable; did you mean GS_MCP_READONLY?"
    assert refused("GS_MCP_ZZZ", environ={"GS_MCP_ZZZ": "1"}) == "unknown GS_MCP_* environment variable"
    conf = tmp_path / "typo.conf"
    conf.write_text("idle_timout = 60\n")
    assert refused("idle_timout", conf_path=conf).endswith("line 1: unknown key; did you mean idle_timeout?")
    conf.write_text("prot = 8931\n")   # two letters of a short key swapped
    assert refused("prot", conf_path=conf).endswith("line 1: unknown key; did you mean port?")


def test_a_conf_file_saved_with_a_bom_reads_its_first_key(tmp_path):
    # Windows editors start UTF-8 with a BOM: it was read into the first key, refused as
    # "unknown key; did you mean port?" for a line that says port.
    conf = tmp_path / "bom.conf"
    conf.write_bytes(b"\xef\xbb\xbfport = 8931\nreadonly = yes\n")
    config = load_config({}, {}, conf)
    assert (config.port, config.readonly) == (8931, True)
    assert load_config({}, {}, conf, validate=False, only=("state_dir", "port")).port == 8931


@pytest.mark.parametrize("line, key, hint", [
    ("GS_MCP_PORT = 8931", "GS_MCP_PORT",
     "; did you mean port? (GS_MCP_PORT is its environment name; a conf file names its key)"),
    ("MCP_ISSUER = https://idp.test", "MCP_ISSUER",
     "; did you mean issuer? (MCP_ISSUER is its environment name; a conf file names its key)"),
    ("Idle_Timeout = 60", "Idle_Timeout", "; did you mean idle_timeout? (keys are lower case)"),
])
def test_a_conf_key_written_as_its_environment_name_or_capitalised_names_the_key(tmp_path, line, key, hint):
    conf = tmp_path / "names.conf"
    conf.write_text(line + "\n")
    assert refused(key, conf_path=conf).endswith("line 1: unknown key" + hint)


@pytest.mark.parametrize("spec, said", [
    ("no_such_module_xyz:Server", "worker class 'no_such_module_xyz:Server': cannot import module "
                                  "'no_such_module_xyz' (ModuleNotFoundError: No module named 'no_such_module_xyz')"),
    ("gsmcpd.worker.server:NoSuchServer", "worker class 'gsmcpd.worker.server:NoSuchServer': module "
                                          "'gsmcpd.worker.server' has no 'NoSuchServer'"),
    ("gsmcpd.worker.toolsets.bench:BenchToolset", "worker class 'gsmcpd.worker.toolsets.bench:BenchToolset' "
                                                  "is not an McpServer subclass"),
])
def test_a_worker_class_that_cannot_be_resolved_is_refused(spec, said):
    assert refused("worker_class", environ={"GS_MCP_WORKER_CLASS": spec}) == said


def test_unknown_toolset_is_refused():
    assert "unknown toolset 'nonsense'" in refused("toolsets", environ={
        "GS_MCP_TOOLSETS": "search nonsense"})
    assert "empty" in refused("toolsets", environ={"GS_MCP_TOOLSETS": " , "})


def test_the_gemstone_servers_toolset_names_are_read_as_ours(tmp_path):
    # The seed's own launch line, GS_MCP_TOOLSETS="McpBrowsingToolset McpSearchToolset".
    config = load_config({}, {"GS_MCP_TOOLSETS": "McpBrowsingToolset McpSearchToolset"})
    assert config.toolsets == ("browsing", "search")
    seed_names = ("McpExecutionToolset McpSessionToolset McpListingToolset McpBrowsingToolset "
                  "McpSearchToolset McpMutationToolset McpTestingToolset")
    assert load_config({"toolsets": seed_names}, {}).toolsets == CORE_TOOLSETS
    conf = tmp_path / "seed.conf"
    conf.write_text("toolsets = McpTestingToolset, listing\n")
    assert load_config({}, {}, conf).toolsets == ("testing", "listing")


def test_the_gemstone_servers_python_toolset_is_refused_saying_it_has_no_counterpart():
    message = refused("toolsets", environ={"GS_MCP_TOOLSETS": "McpBrowsingToolset McpGrailToolset"})
    assert message == ("McpGrailToolset (the GemStone server's Python toolset) has no counterpart "
                       "here: the image is Python already; name a toolset of your own as module:Class")


def test_toolset_validation_uses_the_worker_resolver(monkeypatch):
    monkeypatch.undo()  # the real _validate_toolsets, which asks gsmcpd.worker.toolsets
    with pytest.raises(ConfigError) as info:
        load_config({}, {"GS_MCP_TOOLSETS": "nonsense"})
    assert info.value.key == "toolsets" and "nonsense" in info.value.message


def test_probe_must_come_before_idle_deadline():
    # One check, the lifetime policy's (it was made here too, worded otherwise).
    message = refused("probe_after", environ={"GS_MCP_IDLE_TIMEOUT": "100",
                                              "GS_MCP_PROBE_AFTER": "100"})
    # the key is named once, as every refusal names it, not "probe_after: GS_MCP_PROBE_AFTER (probe_after)"
    assert message == ("must be less than GS_MCP_IDLE_TIMEOUT (idle_timeout), or the probe never runs: "
                       "100 >= 100")
    assert refused("probe_after", environ={"GS_MCP_IDLE_TIMEOUT": "100", "GS_MCP_PROBE_AFTER": "150"}) \
        == message.replace("100 >= 100", "150 >= 100")
    assert load_config({}, {"GS_MCP_IDLE_TIMEOUT": "none", "GS_MCP_PROBE_AFTER": "5000"})


def test_a_refusal_of_a_lifetime_knob_left_at_its_default_says_to_set_it_too():
    # GS_MCP_IDLE_TIMEOUT=600 alone was refused naming probe_after, which the user never set,
    # with nothing to say its 1500 was the default nor which variable moves it.
    assert refused("probe_after", environ={"GS_MCP_IDLE_TIMEOUT": "600"}) == (
        "must be less than GS_MCP_IDLE_TIMEOUT (idle_timeout), or the probe never runs: 1500 >= 600 "
        "(1500 is GS_MCP_PROBE_AFTER's default: set it too)")
    assert refused("ping_timeout", environ={"GS_MCP_IDLE_TIMEOUT": "100", "GS_MCP_PROBE_AFTER": "90"}) \
        .endswith("probe_after 90 + ping_timeout 30 > 100 (30 is GS_MCP_PING_TIMEOUT's default: set it too)")
    assert load_config({}, {"GS_MCP_IDLE_TIMEOUT": "600", "GS_MCP_PROBE_AFTER": "500"})


@pytest.mark.parametrize("key", ["probe_after", "ping_timeout", "streamless_idle_timeout", "stream_loss_grace",
                                 "break_grace", "maintenance_interval", "read_timeout", "jwt_leeway"])
@pytest.mark.parametrize("word", ["none", "off", "Never"])
def test_none_for_a_seconds_knob_that_cannot_be_off_says_so(key, word):
    # Not "expected a number of seconds, got 'none'": the admin wrote a word we know.
    env = config_module.KNOBS_BY_KEY[key].env
    assert refused(key, environ={env: word}) == f"cannot be {word.lower()}: it must be a number of seconds"


def test_none_for_a_count_that_cannot_be_off_says_so(tmp_path):
    assert refused("max_sessions", environ={"GS_MCP_MAX_SESSIONS": "none"}) == \
        "cannot be none: it must be an integer"
    conf = tmp_path / "site.conf"
    conf.write_text("port = 8001\nprobe_after = none\n")
    assert refused("probe_after", conf_path=conf) == f"{conf} line 2: cannot be none: it must be a number of seconds"


@pytest.mark.parametrize("key, written, expected, meant", [
    ("port", "8_001", "an integer", "8001"),
    ("max_sessions", "2_000", "an integer", "2000"),
    ("trace_limit", "4_096", "an integer", "4096"),
    ("idle_timeout", "1_800", "a number of seconds", "1800"),
    ("read_timeout", "1_000.5", "a number of seconds", "1000.5"),
    ("max_body", "16_777_216", "a size in bytes (e.g. 16777216 or 16MiB)", "16777216"),
    ("max_body", "1_6MiB", "a size in bytes (e.g. 16777216 or 16MiB)", "16MiB"),
])
def test_digits_grouped_with_underscores_are_refused_for_every_numeric_knob(key, written, expected, meant):
    # Python's int() and float() read 1_800 as 1800; no knob documents it.
    env = config_module.KNOBS_BY_KEY[key].env
    assert refused(key, environ={env: written}) == \
        f"expected {expected}, got {written!r} (digits are not grouped with _: write {meant})"
    assert getattr(load_config({}, {env: meant}), key) is not None


@pytest.mark.parametrize("key, written", [("port", "\u0668\u0660\u0660\u0661"), ("idle_timeout", "\uff11\uff18\uff10\uff10"),
                                          ("max_body", "\u0661\u0666MiB"), ("port", "_8001"), ("idle_timeout", "inf"),
                                          ("max_body", "16_000 XB")])   # no hint to write 16000 XB, refused too
def test_only_ascii_decimal_digits_make_a_number(key, written):
    assert f"got {written!r}" in refused(key, environ={config_module.KNOBS_BY_KEY[key].env: written})
    assert "grouped" not in refused(key, environ={config_module.KNOBS_BY_KEY[key].env: written})


def test_numbers_as_the_docs_write_them_are_read(tmp_path):
    conf = tmp_path / "site.conf"
    conf.write_text("port = +8001\nidle_timeout = 1800.\nread_timeout = .5\njwt_leeway = 1e1\nmax_body = 16 MiB\n"
                    "worker_memory = +128MiB\njournal_limit = +65536\n")
    config = load_config({}, {}, conf)
    assert (config.port, config.idle_timeout, config.read_timeout, config.jwt_leeway, config.max_body) == \
        (8001, 1800.0, 0.5, 10.0, 16 * 1024 * 1024)
    # a leading + for a size too, as for every other number (it had been refused for sizes alone)
    assert (config.worker_memory, config.journal_limit) == (128 * 1024 * 1024, 65536)
    assert refused("max_body", environ={"GS_MCP_MAX_BODY": "-64KiB"}) == \
        "expected a size in bytes (e.g. 16777216 or 16MiB), got '-64KiB'"
    assert load_config({"read_timeout": 1e-05}, {}).read_timeout == 1e-05   # a typed flag: str() is 1e-05
    conf.write_text("port = 8001\nidle_timeout = 1_800\n")
    assert refused("idle_timeout", conf_path=conf) == \
        f"{conf} line 2: expected a number of seconds, got '1_800' (digits are not grouped with _: write 1800)"


def test_a_zero_idle_timeout_is_refused_as_zero_pointing_to_none():
    # Not as "probe_after must be less than idle_timeout (0s)": no probe_after could be.
    message = refused("idle_timeout", environ={"GS_MCP_IDLE_TIMEOUT": "0"})
    assert "must be greater than 0 (use none for no limit)" in message
    assert "probe_after" not in message


def test_tls_needs_both_halves():
    assert "tls_cert is set" in refused("tls_key", environ={"GS_MCP_TLS_CERT": "/c.pem"})
    assert "tls_key is set" in refused("tls_cert", environ={"GS_MCP_TLS_KEY": "/k.pem"})


def test_auth_needs_issuer_audience_and_a_key_source():
    assert "issuer" in refused("issuer", environ={"GS_MCP_AUTH": "1", "MCP_AUDIENCE": "x"})
    assert "audience" in refused("audience", environ={"GS_MCP_AUTH": "1", "MCP_ISSUER": "x"})
    assert "no key source" in refused("jwks_file", environ={
        "GS_MCP_AUTH": "1", "MCP_ISSUER": "local-idp", "MCP_AUDIENCE": "x"})
    assert load_config({}, {**AUTH_ENV}).auth  # an https issuer allows discovery
    assert load_config({}, {"GS_MCP_AUTH": "1", "MCP_ISSUER": "local", "MCP_AUDIENCE": "x",
                            "MCP_JWKS_FILE": "/etc/jwks.json"}).jwks_file == Path("/etc/jwks.json")


def test_an_empty_userid_claim_is_refused_naming_it():
    # It was taken, and start failed after the fork (ValueError from the auth settings).
    assert refused("userid_claim", environ={**AUTH_ENV, "MCP_USERID_CLAIM": " "}) == (
        "empty: name the token claim that names the user (sub when unset)")
    # README: none is refused for a knob that cannot be off; it had been a claim named "none".
    assert refused("userid_claim", environ={**AUTH_ENV, "MCP_USERID_CLAIM": "None"}) == (
        "cannot be none: it must be the name of the token claim that names the user (sub when unset)")


@pytest.mark.parametrize("audience", ["https://mcp.example/mcp?tenant=1", "https://mcp.example/mcp#top", "http://",
                                      "https://mcp.example/\u20ac", 'https://mcp.example/m"cp'])
def test_an_audience_that_cannot_be_the_published_resource_is_refused_naming_it(audience):
    # Without resource_url an http(s) audience is the resource; one with a query was taken
    # here and refused by the auth settings after the fork.
    message = refused("audience", environ={**AUTH_ENV, "MCP_AUDIENCE": audience})
    assert message.endswith("(an http(s) audience is the resource published when resource_url is unset)")
    assert load_config({}, {**AUTH_ENV, "MCP_AUDIENCE": audience,
                            "MCP_RESOURCE_URL": "https://mcp.example/mcp"}).audience == audience


@pytest.mark.parametrize("uri", ["http://idp.example/jwks", "ftp://idp.example/jwks", "idp.example/jwks",
                                 "https:///jwks"])
def test_a_jwks_uri_that_is_not_https_is_refused_naming_it(uri):
    message = refused("jwks_uri", environ={**AUTH_ENV, "MCP_JWKS_URI": uri})
    assert message == ("must be an https URL (keys fetched over http could be swapped in transit), got %r" % uri)


def test_a_url_whose_port_is_no_port_is_refused():
    # Published in the metadata, or fetched: urllib failed at each fetch ("nonnumeric port").
    message = refused("jwks_uri", environ={**AUTH_ENV, "MCP_JWKS_URI": "https://idp.example:443x/jwks"})
    assert message == "not a URL: Port could not be cast to integer value as '443x'"
    message = refused("authorization_servers", environ={**AUTH_ENV, "MCP_AUTHORIZATION_SERVERS": "https://[::1]:70000"})
    assert message == "not a URL: Port out of range 0-65535"
    assert load_config({}, {**AUTH_ENV, "MCP_AUTHORIZATION_SERVERS": "https://[::1]:8443/"}).authorization_servers


def test_a_jwks_uri_with_credentials_is_refused_without_echoing_them():
    message = refused("jwks_uri", environ={**AUTH_ENV, "MCP_JWKS_URI": "https://kid:s3cret@idp.example/jwks"})
    assert message == "must not carry a user name or password (a JWKS is public, fetched without credentials)"
    assert load_config({}, {**AUTH_ENV, "MCP_JWKS_URI": "https://idp.example/keys?p=B2C_1_signin"}).jwks_uri



@pytest.mark.parametrize("key, variable, url", [
    ("jwks_uri", "MCP_JWKS_URI", "https://kid:s3c#ret@idp.example/jwks"),
    ("authorization_servers", "MCP_AUTHORIZATION_SERVERS", "https://u:s3c?ret@idp.example"),
    ("issuer", "MCP_ISSUER", "https://admin:s3c/ret@idp.example")])
def test_a_url_whose_password_holds_a_delimiter_is_refused_without_echoing_it(key, variable, url):
    # A '#', '?' or '/' in the password ends the host part there: urllib takes the password's
    # start for the port, and its "Port could not be cast ... as 's3c'" went to stderr and the log.
    message = refused(key, environ={**AUTH_ENV, "MCP_JWKS_URI": "https://idp.example/jwks", variable: url})
    assert "s3c" not in message and message.startswith("not a URL: ")
    # One with no '@' still names the port it could not read.
    message = refused(key, environ={**AUTH_ENV, "MCP_JWKS_URI": "https://idp.example/jwks",
                                    variable: "https://idp.example:443x"})
    assert message == "not a URL: Port could not be cast to integer value as '443x'"

@pytest.mark.parametrize("servers", ["idp.example", "http://idp.example", "https:///realms/x",
                                     "https://a.example ftp://b.example", "https://[::1",
                                     "https://idp.example:99999", "https://idp.example:443x"])
def test_an_authorization_server_that_is_not_an_https_url_is_refused(servers):
    # idp.example was published in the RFC 9728 metadata as is; no client could use it.
    message = refused("authorization_servers", environ={**AUTH_ENV, "MCP_AUTHORIZATION_SERVERS": servers})
    assert message.startswith(("must be an https URL (a client fetches its RFC 8414 metadata from it; "
                               "leave the knob empty to advertise the issuer), got ", "not a URL: "))


@pytest.mark.parametrize("server", ["https://idp.example/?x=1", "https://idp.example#top", "https://idp.example?"])
def test_an_authorization_server_with_a_query_or_fragment_is_refused(server):
    message = refused("authorization_servers", environ={**AUTH_ENV, "MCP_AUTHORIZATION_SERVERS": server})
    assert message == f"an issuer URL has no query or fragment (RFC 8414 2), got {server!r}"


def test_an_authorization_server_with_credentials_is_refused_and_https_ones_pass():
    message = refused("authorization_servers",
                      environ={**AUTH_ENV, "MCP_AUTHORIZATION_SERVERS": "https://u:s3cret@idp.example"})
    assert "s3cret" not in message and message.startswith("must not carry a user name or password")
    servers = "https://a.example/realms/x, HTTPS://b.example:8443"
    assert load_config({}, {**AUTH_ENV, "MCP_AUTHORIZATION_SERVERS": servers}).authorization_servers == (
        "https://a.example/realms/x", "HTTPS://b.example:8443")


def test_an_issuer_with_credentials_is_refused_without_echoing_them():
    # It is published in the metadata (authorization_servers), and logged.
    message = refused("issuer", environ={**AUTH_ENV, "MCP_ISSUER": "https://admin:s3cret@idp.example"})
    assert message == ("must not carry a user name or password: it is published in the RFC 9728 "
                       "metadata and compared with each token's iss")
    assert load_config({}, {**AUTH_ENV, "MCP_ISSUER": "urn:example:issuer",
                            "MCP_JWKS_URI": "https://idp.example/jwks"}).issuer == "urn:example:issuer"


@pytest.mark.parametrize("issuer, said", [("https://idp.example:443x", "Port could not be cast to integer value as '443x'"),
                                           ("https://idp.example:99999/realms/x", "Port out of range 0-65535"),
                                           # an IPv6 host's bracket unclosed: it loaded, as any string, then
                                           # its discovery failed each fetch (ValueError: Invalid IPv6 URL)
                                           ("https://[2001:db8::1/realms/x", "Invalid IPv6 URL"),
                                           ("HTTP://[2001:db8::1", "Invalid IPv6 URL")])
def test_an_issuer_written_as_a_url_that_is_none_is_refused(issuer, said):
    # It loaded (only its credentials were looked at), then was published in the metadata and
    # fetched from for discovery as is (urllib: "nonnumeric port").
    assert refused("issuer", environ={**AUTH_ENV, "MCP_ISSUER": issuer}) == f"not a URL: {said}"


@pytest.mark.parametrize("issuer", ["urn:example:issuer", "idp.example:443x", "https://idp.example:8443/realms/x",
                                    "https://idp.example:/r", "https://[2001:db8::1]:8443/r", "tenant://[x"])
def test_an_issuer_is_otherwise_any_string_compared_as_one(issuer):
    environ = {**AUTH_ENV, "MCP_ISSUER": issuer, "MCP_JWKS_URI": "https://idp.example/jwks"}
    assert load_config({}, environ).issuer == issuer


def test_discovery_needs_an_https_issuer():
    message = refused("jwks_file", environ={"GS_MCP_AUTH": "1", "MCP_ISSUER": "http://idp.example",
                                            "MCP_AUDIENCE": "x"})
    assert message == ("auth is on but there is no key source: set jwks_file or jwks_uri, or use an https "
                       "issuer for discovery")
    assert load_config({}, {"GS_MCP_AUTH": "1", "MCP_ISSUER": "http://idp.example", "MCP_AUDIENCE": "x",
                            "MCP_JWKS_URI": "https://idp.example/jwks"}).auth


def test_network_facing_host_needs_auth_and_tls():
    assert "needs auth" in refused("host", flags={"host": "0.0.0.0"})
    assert "needs TLS" in refused("host", flags={"host": "0.0.0.0"}, environ=AUTH_ENV)
    assert load_config({"host": "0.0.0.0", "behind_tls_proxy": True}, AUTH_ENV).behind_tls_proxy
    tls = {**AUTH_ENV, "GS_MCP_TLS_CERT": "/c.pem", "GS_MCP_TLS_KEY": "/k.pem"}
    config = load_config({"host": "192.0.2.7"}, tls)
    assert config.url == "https://192.0.2.7:8000/mcp"
    assert load_config({"host": "::1"}, {}).url == "http://[::1]:8000/mcp"
    assert load_config({"host": "localhost"}, {}).host == "localhost"
    # 127.0.0.1 IPv4-mapped: the router's gates take it as loopback, so does the check.
    assert load_config({"host": "::ffff:127.0.0.1"}, {}).url == "http://[::ffff:127.0.0.1]:8000/mcp"


def test_validate_false_skips_combinations_only():
    config = load_config({"host": "0.0.0.0"}, {}, validate=False)
    assert config.host == "0.0.0.0"
    with pytest.raises(ConfigError):
        load_config({"port": "x"}, {}, validate=False)


def test_shipped_conf_documents_every_knob_with_its_default(tmp_path):
    text = (REPO / "etc" / "gsmcpd.conf").read_text()
    documented = dict(re.findall(r"^#[ \t]*(\w+)[ \t]*=[ \t]*(.*?)[ \t]*$", text, re.M))
    assert set(documented) >= {knob.key for knob in KNOBS}
    assert load_config({}, {}, REPO / "etc" / "gsmcpd.conf") == load_config({}, {})
    # Uncommenting any line, as written, changes nothing: `state_dir = <checkout>/var` was
    # read as a directory named `<checkout>` beside the copied file, `image =
    # <state_dir>/image` as one that does not exist (a computed default is left empty).
    conf = tmp_path / "uncommented.conf"
    conf.write_text("".join(f"{key} = {value}\n" for key, value in documented.items()))
    assert load_config({}, {}, conf) == load_config({}, {})


def test_the_lifetime_policy_refusals_are_config_refusals():
    with pytest.raises(ConfigError) as refused:
        load_config({}, {"GS_MCP_IDLE_TIMEOUT": "100", "GS_MCP_PROBE_AFTER": "90",
                         "GS_MCP_PING_TIMEOUT": "30", "GS_MCP_MAINTENANCE_INTERVAL": "5"})
    assert refused.value.key == "ping_timeout"
    assert "probe_after 90 + ping_timeout 30 > 100" in str(refused.value)


def test_a_body_cap_beyond_what_a_frame_carries_is_refused():
    with pytest.raises(ConfigError) as refused:
        load_config({}, {"GS_MCP_MAX_BODY": "100MiB"})
    assert refused.value.key == "max_body"
    assert "more than a worker frame can carry" in str(refused.value)
    assert load_config({}, {"GS_MCP_MAX_BODY": "60MiB"}).max_body == 60 * 1024 * 1024


@pytest.mark.parametrize("size", ["1", "4095"])
def test_a_body_cap_no_mcp_request_fits_in_is_refused(size):
    # GS_MCP_MAX_BODY=1 was taken, and every request then answered 413.
    with pytest.raises(ConfigError) as refused:
        load_config({}, {"GS_MCP_MAX_BODY": size})
    assert refused.value.key == "max_body"
    assert f"{size} bytes is less than an MCP client's requests need (at least 4096 bytes, 4 KiB)" \
        in str(refused.value)
    assert load_config({}, {"GS_MCP_MAX_BODY": "4KiB"}).max_body == 4096


# The README's knob table: descriptive defaults that are no literal value.
README_DESCRIBED_DEFAULTS = {"state_dir": "`var/` in the checkout", "image": "`<state_dir>/image`",
                             "worker_class": "the built-in server", "log_file": "see above"}


def readme_knob_rows():
    text = (REPO / "README.md").read_text()
    table = text.split("| knob | environment | default |", 1)[1].split("\n\n", 1)[0]
    for line in table.splitlines()[2:]:
        knobs, envs, default = (cell.strip() for cell in line.strip("|").split("|"))
        yield knobs.split(", "), re.findall(r"`((?:GS_MCP|MCP)_\w+)`", envs), default


def test_readme_knob_table_names_knobs_their_environment_and_defaults():
    by_key, default = {knob.key: knob for knob in KNOBS}, Config()
    rows = list(readme_knob_rows())
    assert len(rows) >= 15
    for keys, envs, defaults in rows:
        values = [re.sub(r"\s*\(.*\)$", "", defaults).strip()]
        if len(keys) > 1 and ", " in defaults:   # one default each, else one for all
            values = [word.strip() for word in defaults.split(", ")]
            assert len(values) == len(keys), defaults
        for key, env, value in zip(keys, envs, values * len(keys) if len(values) == 1 else values):
            assert key in by_key, f"README names an unknown knob {key!r}"
            assert by_key[key].env == env, f"README: {key} is {by_key[key].env}, not {env}"
            if key in README_DESCRIBED_DEFAULTS:
                assert README_DESCRIBED_DEFAULTS[key] == value, key
                continue
            if value == "none":   # "unset" in the README's words, for paths too
                assert getattr(default, key) is None, f"README default of {key}"
                # and written so it is that default (MCP_USER_MAP=none was a file named none)
                assert by_key[key].parse("none") is None, f"README's none for {key}"
                continue
            if value == "empty":   # a list knob listing nothing
                assert getattr(default, key) == (), f"README default of {key}"
                continue
            assert by_key[key].parse(value) == getattr(default, key), f"README default of {key}"


def test_readme_knob_table_lists_every_knob_once():
    # The table was the most used knobs: a reader of the README met GS_MCP_MAX_BODY, the
    # session-lifetime and the JWKS knobs nowhere, or only in passing.
    listed = [key for keys, _envs, _default in readme_knob_rows() for key in keys]
    assert sorted(listed) == sorted(knob.key for knob in KNOBS)


def test_every_environment_name_the_docs_mention_is_a_setting():
    known = {knob.env for knob in KNOBS} | config_module.NON_KNOB_ENV
    for path in [REPO / "README.md", REPO / "etc" / "gsmcpd.conf", *(REPO / "docs").glob("*.md")]:
        named = set(re.findall(r"\b(?:GS_MCP|MCP)_[A-Z_]*[A-Z]\b", path.read_text()))
        if path.name == "PERFORMANCE.md":   # a history: it names settings since renamed
            named.discard("GS_MCP_REPLY_SPIN_US")
        assert named <= known, f"{path.name} names {sorted(named - known)}"


def test_shipped_conf_names_each_knobs_exact_environment_name():
    # Each paragraph of etc/gsmcpd.conf documents the knobs it shows as `# key = value` and
    # names their environment variables in full: exactly those, none abbreviated
    # ("GS_MCP_SERVER_NAME / _VERSION" named one of three).
    text = (REPO / "etc" / "gsmcpd.conf").read_text()
    by_key = {knob.key: knob for knob in KNOBS}
    shown = set()
    for paragraph in re.split(r"\n[ \t]*\n", text):
        keys = re.findall(r"^#[ \t]*(\w+)[ \t]*=", paragraph, re.M)
        if not keys:
            continue
        assert all(key in by_key for key in keys), f"unknown key in: {paragraph}"
        named = set(re.findall(r"\b(?:GS_MCP|MCP)_[A-Z_]*[A-Z]\b", paragraph))
        assert named == {by_key[key].env for key in keys}, f"{keys}: names {sorted(named)}"
        assert not re.search(r"(?<![\w])_[A-Z]{2,}", paragraph), f"an abbreviated name in: {paragraph}"
        shown.update(keys)
    assert shown == set(by_key)
