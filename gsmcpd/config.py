"""One validated Config: defaults <- conf file <- GS_MCP_*/MCP_* environment <- flags.

Pure: reads a conf file if asked, never touches sockets or processes.  Every knob is
declared once in KNOBS (key, environment name, parser) and has its default once, as
its Config field's; etc/gsmcpd.conf documents the same list and a test keeps the
two in step.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping
from urllib.parse import urlsplit

# Every command imports this module, stop and status too (run before a script's every
# step): a knob's parser imports what only it uses (the wire's framing, the workers'
# environment with ctypes) when it runs, and the image knobs' defaults are not the store's.
from gsmcpd.image.layout import JOURNAL_LIMIT, LOCK_WAIT
from gsmcpd.knob_words import CORE_TOOLSETS, IDENTITY_MAP
from gsmcpd.router.lifetime import LifetimeSettings

CHECKOUT = Path(__file__).resolve().parent.parent
DEFAULT_STATE_DIR = CHECKOUT / "var"
# The GemStone server's class names for the same toolsets: its README launches with
# GS_MCP_TOOLSETS="McpBrowsingToolset McpSearchToolset", which is read as "browsing search".
SEED_TOOLSET_NAMES = {f"Mcp{name.capitalize()}Toolset": name for name in CORE_TOOLSETS}
TRACE_MODES = ("off", "inbound", "both")
LOG_LEVELS = ("debug", "info", "warning", "error")
# What a GET stream does when the token that opened it expires (MCP_TOKEN_EXPIRY).
TOKEN_EXPIRY_POLICIES = ("end-stream", "keep-stream")
LOCAL_CLIENTS = ("own", "any")   # without auth: the daemon's own account (and root), or every account


class ConfigError(Exception):
    """A refused setting; .key names the knob (conf-file key) at fault."""

    def __init__(self, key: str, message: str):
        super().__init__(f"{key}: {message}")
        self.key = key
        self.message = message


# --- value parsers: str -> value, raising ValueError with a human reason ---------

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}
_NONE = {"none", "never", "off", "null"}


def parse_bool(text: str) -> bool:
    word = text.strip().lower()
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    raise ValueError(f"expected a boolean (1/0, true/false, yes/no, on/off), got {text!r}")


def _refuse_off(text: str, expected: str) -> None:
    """A none word where no none is taken: say so, not just that it is no number."""
    word = text.strip().lower()
    if word in _NONE:
        raise ValueError(f"cannot be {word}: it must be {expected}")


# Numbers as the docs write them: ASCII digits, a sign, and for seconds a fraction (and
# an exponent, as a float flag's str() has one). int() and float() also take 1_800 and
# other scripts' digits, which no knob documents: every numeric knob refuses them alike.
_INTEGER = re.compile(r"[+-]?[0-9]+")
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def _grouping_hint(text: str, form: re.Pattern) -> str:
    """For 1_800 (Python's digit grouping): the number meant, without the _."""
    plain = text.replace("_", "")
    grouped = re.search(r"[0-9]_+[0-9]", text) and form.fullmatch(plain)
    return f" (digits are not grouped with _: write {plain.strip()})" if grouped else ""


def _number_text(text: str, form: re.Pattern, expected: str) -> str:
    written = text.strip()
    if not form.fullmatch(written):
        raise ValueError(f"expected {expected}, got {text!r}{_grouping_hint(written, form)}")
    return written


def parse_int(text: str, lo: int | None = None, hi: int | None = None) -> int:
    _refuse_off(text, "an integer")
    value = int(_number_text(text, _INTEGER, "an integer"))
    if lo is not None and value < lo or hi is not None and value > hi:
        bounds = f"between {lo} and {hi}" if hi is not None else f"at least {lo}"
        raise ValueError(f"must be {bounds}, got {value}")
    return value


def parse_seconds(text: str, positive: bool = False) -> float:
    """Seconds, 0 or more; `positive` for a knob that cannot be 0 (the one message for a
    negative number then: it is not greater than 0 either)."""
    _refuse_off(text, "a number of seconds")
    value = float(_number_text(text, _DECIMAL, "a number of seconds"))
    if value == float("inf"):
        raise ValueError(f"must be a finite number of seconds, got {text!r}")
    if positive and value <= 0:
        raise ValueError(f"must be greater than 0, got {text!r}")
    if value < 0:
        raise ValueError(f"must be a finite number of seconds >= 0, got {text!r}")
    return value


def parse_optional_seconds(text: str) -> float | None:
    if text.strip().lower() in _NONE:
        return None
    return parse_seconds(text)


_SIZE_UNITS = {"": 1, "b": 1, "k": 1024, "kb": 1024, "kib": 1024,
               "m": 1024 ** 2, "mb": 1024 ** 2, "mib": 1024 ** 2,
               "g": 1024 ** 3, "gb": 1024 ** 3, "gib": 1024 ** 3}
# The units in the pattern: a grouping hint then names only a size the parser takes. A
# leading + as every other number takes it (README "Configuration").
_SIZE = re.compile(r"\s*\+?([0-9]+)\s*(%s)\s*" % "|".join(sorted(_SIZE_UNITS, key=len, reverse=True)),
                   re.IGNORECASE)


def parse_size(text: str) -> int:
    match = _SIZE.fullmatch(text)
    if not match:
        raise ValueError(f"expected a size in bytes (e.g. 16777216 or 16MiB), got {text!r}"
                         f"{_grouping_hint(text, _SIZE)}")
    value = int(match.group(1)) * _SIZE_UNITS[match.group(2).lower()]
    if value < 1:
        raise ValueError("must be at least 1 byte")
    return value


WORKER_MEMORY_LEAST = 64 * 1024 * 1024
# The largest limit setrlimit takes from Python (a C long long): beyond it the worker
# spawner died at start with an OverflowError, after the config was taken.
WORKER_MEMORY_MOST = 2 ** 63 - 1


def parse_worker_memory(text: str) -> int | None:
    """A worker's data limit, or none. Below the least a worker could not even start."""
    if text.strip().lower() in _NONE:
        return None
    value = parse_size(text)
    if value < WORKER_MEMORY_LEAST:
        raise ValueError(f"must be at least 64MiB (a worker holds about 30 MiB before any code "
                         f"runs), got {text.strip()!r}")
    if value > WORKER_MEMORY_MOST:
        raise ValueError(f"must be at most {WORKER_MEMORY_MOST} bytes (8 EiB, the largest data limit "
                         f"the kernel takes; none for no limit), got {text.strip()!r}")
    return value


def _none_as_empty(entries: list[str], literal: frozenset[str] = frozenset()) -> list[str]:
    """A none word alone is the empty list, as `none` leaves the one-value knobs unset
    (MCP_REQUIRED_SCOPES=none required a scope named none: every token 403). Among other
    entries it is refused rather than guessed at. `literal`: words the caller refuses itself."""
    words = [entry for entry in entries if entry.lower() in _NONE - literal]
    if not words:
        return entries
    if len(entries) == 1:
        return []
    raise ValueError(f"{words[0]!r} among other entries: none, alone (or an empty value), "
                     f"is the empty list; list the entries without it")


def parse_list(text: str) -> tuple[str, ...]:
    return tuple(_none_as_empty([word for word in re.split(r"[\s,]+", text.strip()) if word]))


def parse_toolsets(text: str) -> tuple[str, ...]:
    """Toolset names, the GemStone server's (McpBrowsingToolset) read as ours (browsing)."""
    _refuse_off(text, "a list of toolsets (at least one)")
    names = parse_list(text)
    if "McpGrailToolset" in names:
        raise ValueError("McpGrailToolset (the GemStone server's Python toolset) has no "
                         "counterpart here: the image is Python already; name a toolset "
                         "of your own as module:Class")
    return tuple(SEED_TOOLSET_NAMES.get(name, name) for name in names)


def parse_env_names(text: str) -> tuple[str, ...]:
    """Environment variable names, as GS_MCP_WORKER_ENV lists them."""
    from gsmcpd.worker.environment import ACCOUNT_NAMES, NAME as ENV_NAME
    names = parse_list(text)
    for name in names:
        if "=" in name:
            raise ValueError(f"{name!r} gives a value: list names only (the daemon's own value "
                             f"is passed), e.g. {name.split('=', 1)[0]!r}")
        if not ENV_NAME.fullmatch(name):
            raise ValueError(f"not an environment variable name: {name!r} (letters, digits and _, "
                             f"not starting with a digit)")
        if name in ACCOUNT_NAMES:
            raise ValueError(f"{name} cannot be passed: a per-user worker's {name} is its account's own")
    return names


def parse_allowed_origins(text: str) -> tuple[str, ...]:
    """Browser origins (https://app.example:8443) as a browser writes them (lower-case,
    without the scheme's default port), and bare hosts (app.example) lower-case. The
    Origin gate matches their hosts; CORS (router/cors.py) matches an origin exactly and
    a bare host on any scheme and port."""
    from gsmcpd.wire import hosts
    text = text.strip()
    found = []
    # null is the origin of sandboxed pages and file:// (refused below), not a none word.
    for entry in _none_as_empty(re.split(r"\s*,\s*|\s+", text) if text else [], frozenset({"null"})):
        if not entry:
            raise ValueError(f"empty entry in {text!r}")
        if entry.lower() in ("*", "null"):   # a host's case is no part of it: NULL is null
            raise ValueError(f"{entry!r} would let pages of any site in; list each origin")
        if "://" in entry:
            key = hosts.origin_key(entry)
            normal = key and hosts.serialise_origin(*key)
        else:
            host, port = hosts.authority(entry) or ("", None)
            if host and port:
                # A bare host matches every scheme and port; the port written would
                # silently widen to all of them.
                raise ValueError(f"{entry!r} has a port but no scheme: write the origin "
                                 f"(http://{entry} or https://{entry}) for that port alone, or "
                                 f"the bare host ({host}) for any")
            normal = host if port is None else None
        if not normal:
            raise ValueError(f"expected a host (app.example) or an origin (https://app.example:8443), "
                             f"got {entry!r}")
        found.append(normal)
    return tuple(dict.fromkeys(found))


def parse_trace(text: str) -> str:
    word = text.strip().lower()
    if word in _FALSE:
        return "off"
    if word in _TRUE or word == "inbound":
        return "inbound"
    if word == "both":
        return "both"
    raise ValueError(f"expected 0, 1 or both, got {text!r}")


def parse_optional_count(text: str) -> int | None:
    """A count of at least 1, or none (no limit)."""
    if text.strip().lower() in _NONE:
        return None
    return parse_int(text, lo=1)


def one_of(choices: tuple[str, ...]) -> Callable[[str], str]:
    """A parser of one word from `choices`, in any case."""
    def parse(text: str) -> str:
        word = text.strip().lower()
        if word not in choices:
            raise ValueError(f"expected one of {', '.join(choices)}, got {text!r}")
        return word
    return parse


def parse_worker_class(text: str) -> str | None:
    text = text.strip()
    if not text:
        return None
    if not re.fullmatch(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*", text):
        raise ValueError(f"expected 'module:Class', got {text!r}")
    return text


def _utf8(text: str) -> str:
    """`text`, refused unless it is UTF-8: the environment and argv may carry any bytes
    (decoded with surrogateescape), but a name, claim, scope or URL is compared with a
    token's text or sent to a worker in a frame, which carries none of those (a server
    name that was not UTF-8 failed every session's start, 500)."""
    from gsmcpd.wire.frames import carries
    if not carries(text):
        raise ValueError(f"not UTF-8 text: {text!r}")
    return text


def parse_optional_str(text: str) -> str | None:
    """Empty or a none word: unset, as the README's "none" default for these knobs
    reads (write_scope = none was a gate on a scope named none: every session read-only)."""
    text = _utf8(text.strip())
    return None if text.lower() in _NONE else text or None


def parse_optional_path(text: str) -> Path | None:
    """Empty or a none word: unset, as for the other optional knobs (README's "none"
    default for tls_cert/tls_key); a file of that name is ./none."""
    text = text.strip()
    if not text or text.lower() in _NONE:
        return None
    return Path(text).expanduser()


def parse_user_map(text: str) -> str | None:
    """A map file or `identity`; empty or a none word unset, as for the path knobs
    (a file of that name is ./none)."""
    return None if parse_optional_path(text) is None else text.strip()


def parse_claim(text: str) -> str:
    """The token claim naming the user: an empty one names no claim, and every token
    would be refused (the router's auth settings refused it only after the fork). A none
    word is refused as for every knob that cannot be off: taken as a claim's name, every
    token lacked it."""
    _refuse_off(text, "the name of the token claim that names the user (sub when unset)")
    name = text.strip()
    if not name:
        raise ValueError("empty: name the token claim that names the user (sub when unset)")
    return _utf8(name)


def parse_port(text: str) -> int:
    return parse_int(text, lo=1, hi=65535)


def parse_positive_seconds(text: str) -> float:
    return parse_seconds(text, positive=True)


def parse_leeway(text: str) -> float:
    """Clock skew allowed on a token's exp/nbf/iat: a larger one accepts long-expired tokens."""
    from gsmcpd.auth.settings import MAX_LEEWAY
    value = parse_seconds(text)
    if value > MAX_LEEWAY:
        raise ValueError(f"must be between 0 and {MAX_LEEWAY:g} seconds (the clock skew between this "
                         f"host and the issuer's; more accepts tokens that long expired), got {text.strip()!r}")
    return value


@dataclass(frozen=True)
class Knob:
    key: str     # the Config field, which holds the default
    env: str
    parse: Callable[[str], Any]


MIB = 1024 * 1024

KNOBS: tuple[Knob, ...] = (
    Knob("host", "GS_MCP_HOST", lambda t: t.strip()),
    Knob("port", "GS_MCP_PORT", parse_port),
    Knob("state_dir", "GS_MCP_STATE_DIR", parse_optional_path),
    Knob("image", "GS_MCP_IMAGE", parse_optional_path),
    Knob("readonly", "GS_MCP_READONLY", parse_bool),
    Knob("toolsets", "GS_MCP_TOOLSETS", parse_toolsets),
    Knob("worker_class", "GS_MCP_WORKER_CLASS", parse_worker_class),
    Knob("server_name", "GS_MCP_SERVER_NAME", parse_optional_str),
    Knob("server_version", "GS_MCP_SERVER_VERSION", parse_optional_str),
    Knob("server_title", "GS_MCP_SERVER_TITLE", parse_optional_str),
    Knob("allowed_origins", "GS_MCP_ALLOWED_ORIGINS", parse_allowed_origins),
    Knob("local_clients", "GS_MCP_LOCAL_CLIENTS", one_of(LOCAL_CLIENTS)),
    Knob("trace", "GS_MCP_TRACE", parse_trace),
    Knob("trace_limit", "GS_MCP_TRACE_LIMIT", parse_optional_count),
    Knob("max_body", "GS_MCP_MAX_BODY", parse_size),
    Knob("read_timeout", "GS_MCP_READ_TIMEOUT", parse_positive_seconds),
    Knob("keepalive_interval", "GS_MCP_KEEPALIVE_INTERVAL", parse_positive_seconds),
    Knob("idle_timeout", "GS_MCP_IDLE_TIMEOUT", parse_optional_seconds),
    Knob("probe_after", "GS_MCP_PROBE_AFTER", parse_positive_seconds),
    Knob("streamless_idle_timeout", "GS_MCP_STREAMLESS_IDLE_TIMEOUT", parse_seconds),
    Knob("stream_loss_grace", "GS_MCP_STREAM_LOSS_GRACE", parse_seconds),
    Knob("max_session_lifetime", "GS_MCP_MAX_SESSION_LIFETIME", parse_optional_seconds),
    Knob("request_timeout", "GS_MCP_REQUEST_TIMEOUT", parse_optional_seconds),
    Knob("break_grace", "GS_MCP_BREAK_GRACE", parse_positive_seconds),
    Knob("image_lock_wait", "GS_MCP_IMAGE_LOCK_WAIT", parse_positive_seconds),
    Knob("journal_limit", "GS_MCP_JOURNAL_LIMIT", parse_size),
    Knob("maintenance_interval", "GS_MCP_MAINTENANCE_INTERVAL", parse_positive_seconds),
    Knob("ping_timeout", "GS_MCP_PING_TIMEOUT", parse_positive_seconds),
    Knob("spare_workers", "GS_MCP_SPARE_WORKERS", lambda t: parse_int(t, lo=0)),
    Knob("worker_nice", "GS_MCP_WORKER_NICE", lambda t: parse_int(t, lo=0, hi=19)),
    Knob("worker_memory", "GS_MCP_WORKER_MEMORY", parse_worker_memory),
    Knob("worker_env", "GS_MCP_WORKER_ENV", parse_env_names),
    Knob("poll_us", "GS_MCP_POLL_US", lambda t: parse_int(t, lo=0, hi=10000)),
    Knob("max_sessions", "GS_MCP_MAX_SESSIONS", lambda t: parse_int(t, lo=1)),
    Knob("max_sessions_per_user", "GS_MCP_MAX_SESSIONS_PER_USER", parse_optional_count),
    Knob("max_connections", "GS_MCP_MAX_CONNECTIONS", lambda t: parse_int(t, lo=1)),
    Knob("max_queued", "GS_MCP_MAX_QUEUED", lambda t: parse_int(t, lo=0)),
    Knob("log_file", "GS_MCP_LOG_FILE", parse_optional_path),
    Knob("log_level", "GS_MCP_LOG_LEVEL", one_of(LOG_LEVELS)),
    Knob("auth", "GS_MCP_AUTH", parse_bool),
    Knob("issuer", "MCP_ISSUER", parse_optional_str),
    Knob("audience", "MCP_AUDIENCE", parse_optional_str),
    Knob("resource_url", "MCP_RESOURCE_URL", parse_optional_str),
    Knob("jwks_file", "MCP_JWKS_FILE", parse_optional_path),
    Knob("jwks_uri", "MCP_JWKS_URI", parse_optional_str),
    Knob("authorization_servers", "MCP_AUTHORIZATION_SERVERS", parse_list),
    Knob("required_scopes", "MCP_REQUIRED_SCOPES", parse_list),
    Knob("write_scope", "MCP_WRITE_SCOPE", parse_optional_str),
    Knob("extra_scopes", "MCP_EXTRA_SCOPES", parse_list),
    Knob("userid_claim", "MCP_USERID_CLAIM", parse_claim),
    Knob("user_map", "MCP_USER_MAP", parse_user_map),
    Knob("jwt_leeway", "MCP_JWT_LEEWAY", parse_leeway),
    Knob("jwks_min_refresh", "MCP_JWKS_MIN_REFRESH", parse_positive_seconds),
    Knob("jwks_timeout", "MCP_JWKS_TIMEOUT", parse_positive_seconds),
    Knob("token_expiry", "MCP_TOKEN_EXPIRY", one_of(TOKEN_EXPIRY_POLICIES)),
    Knob("tls_cert", "GS_MCP_TLS_CERT", parse_optional_path),
    Knob("tls_key", "GS_MCP_TLS_KEY", parse_optional_path),
    Knob("behind_tls_proxy", "GS_MCP_BEHIND_TLS_PROXY", parse_bool),
)
KNOBS_BY_KEY = {knob.key: knob for knob in KNOBS}
KNOBS_BY_ENV = {knob.env: knob for knob in KNOBS}
# Environment names that are not knobs but are read by the loader or the scripts.
NON_KNOB_ENV = frozenset({"GS_MCP_CONFIG"})
# Flags accepted on `serve`/`start` (argparse dests); each is a knob key.
FLAG_KEYS = ("port", "host", "image", "state_dir", "readonly", "toolsets", "trace",
             "behind_tls_proxy")


# The session-lifetime knobs' defaults live with the policy that uses them.
LIFETIME_DEFAULTS = LifetimeSettings()


@dataclass(frozen=True)
class Config:
    """Every knob, with its default (the only place a default is written)."""

    host: str = "127.0.0.1"
    port: int = 8000
    state_dir: Path = DEFAULT_STATE_DIR
    image: Path = DEFAULT_STATE_DIR / "image"
    readonly: bool = False
    toolsets: tuple[str, ...] = CORE_TOOLSETS
    worker_class: str | None = None
    server_name: str | None = None  # None: the worker class's own default
    server_version: str | None = None
    server_title: str | None = None
    allowed_origins: tuple[str, ...] = ()   # origins and bare hosts, normalised (parse_allowed_origins)
    # Without auth a client runs code as the daemon's account: only that account's, by default.
    local_clients: str = "own"
    trace: str = "off"
    trace_limit: int | None = 4096
    max_body: int = 16 * MIB
    read_timeout: float = 8.0
    keepalive_interval: float = 15.0
    idle_timeout: float | None = LIFETIME_DEFAULTS.idle_timeout
    probe_after: float = LIFETIME_DEFAULTS.probe_after
    streamless_idle_timeout: float = LIFETIME_DEFAULTS.streamless_idle_timeout
    stream_loss_grace: float = LIFETIME_DEFAULTS.stream_loss_grace
    max_session_lifetime: float | None = LIFETIME_DEFAULTS.max_session_lifetime
    request_timeout: float | None = LIFETIME_DEFAULTS.request_timeout
    break_grace: float = LIFETIME_DEFAULTS.break_grace
    image_lock_wait: float = LOCK_WAIT   # seconds a worker waits for the image lock
    journal_limit: int = JOURNAL_LIMIT   # bytes past which a commit compacts the image's journal
    maintenance_interval: float = LIFETIME_DEFAULTS.maintenance_interval
    ping_timeout: float = LIFETIME_DEFAULTS.ping_timeout
    spare_workers: int = 2
    worker_nice: int = 10
    worker_memory: int | None = None   # bytes of data (RLIMIT_DATA) per worker; None: no limit
    worker_env: tuple[str, ...] = ()   # names a per-user worker keeps beyond the allow-list
    poll_us: int = 200
    max_sessions: int = 2000
    max_sessions_per_user: int | None = None   # None: only max_sessions bounds a user
    # Two per session (a stream and a POST connection) at the default max_sessions, with
    # room to spare; each costs a descriptor and, unauthenticated, up to ~0.3 MiB buffered.
    max_connections: int = 4096
    # Requests that may wait behind a session's call in flight. Each holds its connection
    # and its whole body (up to max_body); a client sends a few at once (parallel tool
    # calls), so 32 is far above any real one and bounds what one session makes the
    # router hold at 32 bodies.
    max_queued: int = 32
    log_file: Path | None = None
    log_level: str = "info"
    auth: bool = False
    issuer: str | None = None
    audience: str | None = None
    resource_url: str | None = None   # the /mcp URL as clients reach it (RFC 9728 resource)
    jwks_file: Path | None = None
    jwks_uri: str | None = None
    authorization_servers: tuple[str, ...] = ()
    required_scopes: tuple[str, ...] = ()
    write_scope: str | None = None
    extra_scopes: tuple[str, ...] = ()
    userid_claim: str = "sub"
    user_map: str | None = None
    jwt_leeway: float = 30.0
    jwks_min_refresh: float = 10.0
    jwks_timeout: float = 10.0
    token_expiry: str = "end-stream"
    tls_cert: Path | None = None
    tls_key: Path | None = None
    behind_tls_proxy: bool = False

    @property
    def trace_inbound(self) -> bool:
        return self.trace in ("inbound", "both")

    @property
    def trace_outbound(self) -> bool:
        return self.trace == "both"

    @property
    def tls(self) -> bool:
        return self.tls_cert is not None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}/mcp"

    @property
    def pidfile(self) -> Path:
        return pidfile_path(self.state_dir, self.port)

    @property
    def control_socket(self) -> Path:
        return control_socket_path(self.state_dir, self.port)

    @property
    def default_log_file(self) -> Path:
        """Where `start` logs when log_file is not set (`serve` logs to stderr)."""
        return self.state_dir / f"gsmcpd-{self.port}.log"


def pidfile_path(state_dir: Path, port: int) -> Path:
    return Path(state_dir) / f"gsmcpd-{port}.pid"


def control_socket_path(state_dir: Path, port: int) -> Path:
    return Path(state_dir) / f"gsmcpd-{port}.ctl"


# --- sources -----------------------------------------------------------------------

_TRAILING_COMMENT = re.compile(r"\s+#.*$")   # "#" after whitespace; not inside a value


def parse_conf_text(text: str, source: str = "conf", only: tuple[str, ...] | None = None,
                    lines: dict[str, int] | None = None) -> dict[str, str]:
    """`key = value` lines, `#` comments (whole lines, or after a value and whitespace),
    blank lines; unknown keys are refused, and so is a key set twice (which line was
    meant is the admin's to say).  `only`: keep just these keys and pass over every
    other, unknown ones too (a line that is not `key = value` is still refused).
    `lines`, when given, gets each key's line number, for refusing its value later."""
    values: dict[str, str] = {}
    lines = {} if lines is None else lines
    for number, raw in enumerate(text.splitlines(), 1):
        line = _TRAILING_COMMENT.sub("", raw).strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        key = key.strip()
        if not sep:
            raise ConfigError(key or "?", f"{source} line {number}: expected 'key = value'")
        if only is not None and key not in only:
            continue
        if key not in KNOBS_BY_KEY:
            raise ConfigError(key, f"{source} line {number}: unknown key{_conf_key_hint(key)}")
        if key in lines:
            raise ConfigError(key, f"set twice in {source} (lines {lines[key]} and {number}): "
                              "keep one of them")
        values[key] = _strip_quotes(value.strip())
        lines[key] = number
    return values


def _conf_key_hint(key: str) -> str:
    """An environment name (GS_MCP_PORT) or a capitalised key (Port) is a knob the conf
    file spells as its key: name that key."""
    if key in KNOBS_BY_ENV:
        knob = KNOBS_BY_ENV[key]
        return f"; did you mean {knob.key}? ({key} is its environment name; a conf file names its key)"
    if key.lower() in KNOBS_BY_KEY:
        return f"; did you mean {key.lower()}? (keys are lower case)"
    # Looser than for names: a short key with two letters swapped (prot, hots) is 0.75.
    return _did_you_mean(key, KNOBS_BY_KEY, cutoff=0.7)


def _strip_quotes(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def _did_you_mean(name: str, known, cutoff: float = 0.8) -> str:
    near = difflib.get_close_matches(name, list(known), n=1, cutoff=cutoff)
    return f"; did you mean {near[0]}?" if near else ""


# MCP_* is no prefix of ours alone (other MCP software reads MCP_TIMEOUT and the like), so
# only a near miss of one of our MCP_* names is refused: a mistyped MCP_WRITE_SCOPE would
# otherwise leave every session read-write without a word.
_MCP_NAMES = tuple(name for name in KNOBS_BY_ENV if name.startswith("MCP_"))
NEAR_MISS_RATIO = 0.85   # difflib ratio: MCP_WRTIE_SCOPE 0.93, MCP_AUDIENCES 0.96; MCP_TIMEOUT < 0.6


def env_values(environ: Mapping[str, str]) -> dict[str, str]:
    """Knob values from the environment; an unknown GS_MCP_* name is refused, and so is an
    MCP_* name that is a near miss of one of ours (typos)."""
    values: dict[str, str] = {}
    for name, value in environ.items():
        knob = KNOBS_BY_ENV.get(name)
        if knob is not None:
            values[knob.key] = value
        elif name.startswith("GS_MCP_") and name not in NON_KNOB_ENV:
            raise ConfigError(name, "unknown GS_MCP_* environment variable" + _did_you_mean(name, KNOBS_BY_ENV))
        elif name.startswith("MCP_"):
            near = _did_you_mean(name, _MCP_NAMES, NEAR_MISS_RATIO)
            if near:
                raise ConfigError(name, "unknown MCP_* environment variable" + near)
    return values


# Knobs naming a file or directory; user_map's other value is the word `identity`.
PATH_KEYS = frozenset({knob.key for knob in KNOBS if knob.parse is parse_optional_path} | {"user_map"})


def anchor_conf_paths(values: dict[str, str], conf_dir: Path) -> dict[str, str]:
    """A relative path in a conf file is relative to the file's own directory, as a
    daemon's include is: so `start`, `stop` and a systemd unit, each run from its own
    directory, all read the same state directory from the same file. (A relative path
    in the environment or a flag stays the caller's.)"""
    anchored = dict(values)
    for key, text in values.items():
        if key not in PATH_KEYS or key == "user_map" and text.strip() == IDENTITY_MAP:
            continue
        path = parse_optional_path(text)
        if path is not None and not path.is_absolute():
            anchored[key] = str(conf_dir / path)
    return anchored


def conf_file_path(argv_flags: Mapping[str, Any], environ: Mapping[str, str],
                   conf_path: str | Path | None = None) -> Path | None:
    for chosen in (conf_path, argv_flags.get("config"), environ.get("GS_MCP_CONFIG")):
        if isinstance(chosen, str):
            # Blank is unset, as for every path knob (it was "cannot read  : No such file").
            chosen = chosen.strip()
        if chosen:
            return Path(chosen).expanduser()
    return None


def load_config(argv_flags: Mapping[str, Any] | None = None,
                environ: Mapping[str, str] | None = None,
                conf_path: str | Path | None = None, *, validate: bool = True,
                only: tuple[str, ...] | None = None, toolsets_imported: bool = False) -> Config:
    """Layer defaults <- conf file <- environment <- flags, parse, then validate.

    `argv_flags` maps knob keys to values (strings are parsed like any other source;
    None means "not given"); its "config" entry, `conf_path` or GS_MCP_CONFIG names the
    conf file.  validate=False skips cross-field checks and toolset resolution.
    `only`: read just these knobs, the rest defaults, so a bad or unknown setting of
    another (in the environment or the conf file) cannot stop `stop`/`status`, which
    need only the state directory and port.
    `toolsets_imported`: the serve a `start` runs, which imported the built-in toolsets'
    modules as it validated the same settings, refusing a broken one before anything
    started: their names are checked, not imported again (the router has no use for them;
    ~70M instructions of its start, ~20 ms).
    """
    argv_flags = dict(argv_flags or {})
    environ = {} if environ is None else environ
    if only is not None:
        wanted = {KNOBS_BY_KEY[key].env for key in only} | NON_KNOB_ENV
        environ = {name: value for name, value in environ.items() if name in wanted}
    raw: dict[str, Any] = {}
    where: dict[str, str] = {}   # the conf file line a value was read from, to name it if refused
    path = conf_file_path(argv_flags, environ, conf_path)
    if path is not None:
        conf_dir = _absolute(path, "config").parent.resolve()
        try:
            text = path.read_text(encoding="utf-8-sig")   # a BOM (Windows editors) is no key's
        except OSError as exc:
            raise ConfigError("config", f"cannot read {path}: {exc.strerror or exc}") from None
        except UnicodeDecodeError as exc:
            raise ConfigError("config", f"{path} is not UTF-8 text (byte {exc.start}): "
                              "not a config file?") from None
        lines: dict[str, int] = {}
        raw.update(anchor_conf_paths(parse_conf_text(text, source=str(path), only=only,
                                                     lines=lines), conf_dir))
        where = {key: f"{path} line {number}" for key, number in lines.items()}
    env = env_values(environ)
    raw.update(env)
    for key, value in argv_flags.items():
        if key == "config" or value is None:
            continue
        if key not in KNOBS_BY_KEY:
            raise ConfigError(key, "unknown flag")
        raw[key] = value
    for key in (*env, *(key for key, value in argv_flags.items() if value is not None)):
        where.pop(key, None)   # set again: the conf file's value is not the one read
    values = {key: _parse(KNOBS_BY_KEY[key], value, where.get(key))
              for key, value in raw.items()}  # the rest: Config's
    _absolute_paths(values)   # state_dir and image among them; their defaults are whole already
    state_dir = values["state_dir"] = values.get("state_dir") or Config.state_dir   # `none`: the default
    values["image"] = values.get("image") or state_dir / "image"
    if "toolsets" in values and not values["toolsets"]:
        raise ConfigError("toolsets", "empty list; name at least one toolset")
    config = Config(**values)
    if validate:
        validate_config(config, toolsets_imported)
    return config


def _absolute_paths(values: dict[str, Any]) -> None:
    """Every path knob given, made whole from the caller's directory now: the log file,
    TLS pair and JWKS file are opened again later (SIGHUP, refreshes), by when the router
    may work in / (router/workers.py), and one read in a deleted directory is refused here."""
    for key in (knob.key for knob in KNOBS if knob.key in PATH_KEYS):   # the first named first
        value = values.get(key)
        if value is None or key == "user_map" and value == IDENTITY_MAP:
            continue
        path = _absolute(Path(value).expanduser(), key)   # user_map's is a str
        values[key] = str(path) if key == "user_map" else path


def _absolute(path: Path, key: str) -> Path:
    try:
        return path.absolute()
    except FileNotFoundError:   # os.getcwd() in a directory deleted since
        raise ConfigError(key, f"{path} is relative to the current directory, which no longer "
                          "exists (deleted?): give the path whole, or run this from a "
                          "directory that exists") from None


def _parse(knob: Knob, value: Any, where: str | None = None) -> Any:
    if not isinstance(value, str):
        value = _typed_flag(knob, value)
        if not isinstance(value, str):
            return value
    try:
        return knob.parse(value)
    except ValueError as exc:
        raise ConfigError(knob.key, f"{where}: {exc}" if where else str(exc)) from None


def _typed_flag(knob: Knob, value: Any) -> Any:
    """Flags may arrive already typed (argparse store_true, a Path, a list)."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, (list, tuple)):
        return " ".join(str(item) for item in value)
    raise ConfigError(knob.key, f"unsupported value {value!r}")


# --- validation ----------------------------------------------------------------------

# A request body travels to its worker inside one frame (gsmcpd.wire.frames.MAX_FRAME,
# 64 MiB), with room to spare for the frame's own few bytes.
MAX_BODY_LIMIT = 60 * MIB
# Below this every real request would be refused 413: an SDK's initialize alone is some
# hundreds of bytes, a tools/call carries its arguments (source code, a search).
MIN_BODY_LIMIT = 4096


def _validate_scopes(config: Config) -> None:
    """Each scope is listed in every challenge (WWW-Authenticate) as RFC 6749 3.3 writes
    one: a scope it cannot carry failed each 401 and 403, answered 500."""
    from gsmcpd.auth.challenge import is_scope_token
    for key in ("required_scopes", "write_scope", "extra_scopes"):
        value = getattr(config, key)
        for scope in [value] if isinstance(value, str) else value or ():
            if not is_scope_token(scope):
                raise ConfigError(key, f"{scope!r} is not an OAuth scope, which is printable ASCII "
                                  "without a quote or backslash (RFC 6749 3.3)")


def validate_config(config: Config, toolsets_imported: bool = False) -> None:
    """Refuse unworkable combinations, naming the key to change (toolsets_imported: see load_config)."""
    if not config.host:
        raise ConfigError("host", "empty host")
    _validate_lifetime(config)
    if config.spare_workers > config.max_sessions:
        raise ConfigError("spare_workers", f"{config.spare_workers} spare workers is more than "
                          f"max_sessions ({config.max_sessions}) could ever claim")
    if config.max_body > MAX_BODY_LIMIT:
        raise ConfigError("max_body", f"{config.max_body} bytes is more than a worker frame can carry "
                          f"(at most {MAX_BODY_LIMIT} bytes, {MAX_BODY_LIMIT // MIB} MiB)")
    if config.max_body < MIN_BODY_LIMIT:
        raise ConfigError("max_body", f"{config.max_body} bytes is less than an MCP client's requests need "
                          f"(at least {MIN_BODY_LIMIT} bytes, 4 KiB)")
    try:
        _utf8(str(config.image))
    except ValueError:
        # The worker is told its image's path in a frame, which carries only UTF-8: no
        # session could start (500). The router's own files (log, TLS pair) may be any bytes.
        key = "state_dir" if config.image == config.state_dir / "image" else "image"
        raise ConfigError(key, f"{str(config.image)!r} is not UTF-8, as the image's path must be "
                          "(a worker is told it in UTF-8 JSON); move it, or name another image") from None
    if config.tls_cert is not None and config.tls_key is None:
        raise ConfigError("tls_key", "tls_cert is set but tls_key is not")
    if config.tls_key is not None and config.tls_cert is None:
        raise ConfigError("tls_cert", "tls_key is set but tls_cert is not")
    if config.auth:
        if not config.issuer:
            raise ConfigError("issuer", "auth is on but no issuer (MCP_ISSUER) is set")
        if not config.audience:
            raise ConfigError("audience", "auth is on but no audience (MCP_AUDIENCE) is set")
        from gsmcpd.auth.metadata import metadata_paths
        if config.resource_url:
            try:
                metadata_paths(config.resource_url)
            except ValueError as exc:
                raise ConfigError("resource_url", str(exc)) from None
        elif config.audience.startswith(("https://", "http://")):
            # Unset resource_url: an http(s) audience is the resource published (as
            # gsmcpd.auth.settings derives it), refused otherwise only after the fork.
            try:
                metadata_paths(config.audience)
            except ValueError as exc:
                raise ConfigError("audience", f"{exc} (an http(s) audience is the resource "
                                  "published when resource_url is unset)") from None
        _validate_scopes(config)
        if _has_userinfo(config.issuer):
            # Not echoed: it holds a password, and this line goes to the log.
            raise ConfigError("issuer", "must not carry a user name or password: it is published in "
                              "the RFC 9728 metadata and compared with each token's iss")
        try:
            _require_port("issuer", urlsplit(config.issuer))   # published, and fetched from for discovery
        except ValueError as exc:   # no URL at all (an issuer may be any string, compared as one)...
            if config.issuer.lower().startswith(("https://", "http://")):   # ...but one written as a URL
                raise ConfigError("issuer", f"not a URL: {exc}") from None
        if config.jwks_uri:
            _require_https_url("jwks_uri", config.jwks_uri, "a JWKS is public, fetched without credentials",
                               "keys fetched over http could be swapped in transit")
        for server in config.authorization_servers:
            # Published in the RFC 9728 metadata as is; a client fetches each one's RFC 8414
            # metadata, which takes an https issuer URL without query or fragment.
            _require_https_url("authorization_servers", server, "it is published in the RFC 9728 metadata",
                               "a client fetches its RFC 8414 metadata from it; leave the knob "
                               "empty to advertise the issuer")
            if "?" in server or "#" in server:
                raise ConfigError("authorization_servers", f"an issuer URL has no query or fragment "
                                  f"(RFC 8414 2), got {server!r}")
        # Keys are fetched over https only (gsmcpd.auth.jwks): over http they could be
        # swapped in transit, and every token signed with the swapped ones accepted.
        discoverable = config.issuer.lower().startswith("https://")
        if config.jwks_file is None and not config.jwks_uri and not discoverable:
            raise ConfigError("jwks_file", "auth is on but there is no key source: set jwks_file "
                              "or jwks_uri, or use an https issuer for discovery")
    from gsmcpd.wire.hosts import is_loopback
    if not is_loopback(config.host):
        if not config.auth:
            raise ConfigError("host", f"{config.host} is not a loopback address; a network-facing "
                              "server needs auth (GS_MCP_AUTH=1)")
        if not config.tls and not config.behind_tls_proxy:
            raise ConfigError("host", f"{config.host} is not a loopback address; a network-facing "
                              "server needs TLS (tls_cert/tls_key) or behind_tls_proxy")
    _validate_toolsets(config.toolsets, toolsets_imported)
    _validate_worker_class(config.worker_class)


def _has_userinfo(url: str) -> bool:
    try:
        parts = urlsplit(url)
    except ValueError:   # no URL at all (an issuer may be any string)
        return False
    return parts.username is not None or parts.password is not None


def _require_https_url(key: str, uri: str, why_no_password: str, why_https: str) -> None:
    """An absolute https URL with a host and no user name or password (the URL knobs the
    daemon fetches from or publishes: jwks_uri, authorization_servers)."""
    try:
        parts = urlsplit(uri)
    except ValueError as exc:   # e.g. an unclosed IPv6 bracket
        raise ConfigError(key, f"not a URL: {exc}") from None
    _require_port(key, parts)
    if _has_userinfo(uri):
        # Not echoed: it holds a password, and this line goes to the log.
        raise ConfigError(key, f"must not carry a user name or password ({why_no_password})")
    if parts.scheme.lower() != "https" or not parts.hostname:
        raise ConfigError(key, f"must be an https URL ({why_https}), got {uri!r}")


def _require_port(key: str, parts) -> None:
    """A URL's port, if it has one, is a number to 65535: "idp:443x" or "idp:99999" was
    published, or fetched (urllib: "nonnumeric port"), as is."""
    try:
        parts.port   # read only for its ValueError
    except ValueError as exc:
        if "@" in parts.geturl():   # `user:pa#ss@idp`: what urllib calls the port is the password's start
            raise ConfigError(key, "not a URL: what follows its host's ':' is no port (not echoed: with "
                              "an '@' in the URL, it may be a password's start, cut off by a '/', '?' "
                              "or '#' in it, which must be percent-encoded)") from None
        raise ConfigError(key, f"not a URL: {exc}") from None


def _validate_lifetime(config: Config) -> None:
    """The lifetime policy's own refusals (one place for them: lifetime.validate)."""
    from gsmcpd.router.lifetime import ENV_NAMES, validate

    try:
        validate(config)
    except ValueError as exc:
        message = str(exc)
        named = [key for key, env in ENV_NAMES.items() if message.startswith(f"{env} ({key}) ")]
        if not named:
            raise ConfigError("session lifetime", message) from None
        # "probe_after: must be less than ...": the key leads every refusal, named once.
        key = named[0]
        raise ConfigError(key, message[len(f"{ENV_NAMES[key]} ({key}) "):]) from None


def _validate_toolsets(names: tuple[str, ...], imported: bool = False) -> None:
    try:
        from gsmcpd.worker.toolsets import check_toolset_names, resolve_toolsets
    except ImportError:
        return  # the worker package is optional at config time (tests of config alone)
    try:
        (check_toolset_names if imported else resolve_toolsets)(list(names))
    except Exception as exc:  # its own error type is not part of the contract
        raise ConfigError("toolsets", str(exc)) from None


def _validate_worker_class(spec: str | None) -> None:
    # Resolved here as the toolsets are, so a typo refuses startup instead of failing
    # every initialize; a worker that still cannot (another account's) says so there.
    if spec is None:
        return
    try:
        from gsmcpd.worker.server import resolve_worker_class
    except ImportError:
        return  # as for the toolsets
    try:
        resolve_worker_class(spec)
    except ValueError as exc:
        raise ConfigError("worker_class", str(exc)) from None


def describe(config: Config) -> dict[str, Any]:
    """Every knob and its effective value, for `check` and debugging."""
    return {field.name: getattr(config, field.name) for field in dataclasses.fields(config)}
