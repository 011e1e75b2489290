"""JWKS key source: parse, cache, refresh off the loop thread.

Threading contract: `KeySource` is owned by the router's loop thread. Network
and file reads run on a short-lived worker thread (`spawn`); their result is
handed back through `post` (the router's `call_soon_threadsafe`), and the key
set is replaced on the loop thread inside that posted function, so no lock is
needed. Every `refresh(on_done)` call gets exactly one `on_done(result)`, always
via `post`, never synchronously.

The fetch thread cuts short what it can (a slow server: `_Deadline`), but not a name
lookup, which blocks in the resolver for as long as it likes. So the loop keeps its own
deadline (`call_later`): when it passes, the requests waiting are answered as for a
failed fetch, whatever the thread is doing. That thread is not started again while it
runs (no pile of threads stuck in a resolver), and its late result still counts: keys
it brings are installed, a failure is logged.
"""
from __future__ import annotations

import functools
import http.client
import json
import logging
import os
import socket
import ssl
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any, Callable

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, rsa

from gsmcpd.raised import raised

log = logging.getLogger("gsmcpd.auth")

MAX_DOCUMENT = 1024 * 1024
MIN_RSA_BITS = 2048
# Seconds the loop's deadline on waiting requests comes after the fetch's own, so that a
# fetch the thread can cut short is answered with the thread's reason for failing.
WAITERS_GRACE = 1.0


class JwksError(Exception):
    """A key document could not be fetched or holds no usable key."""


@dataclass(frozen=True)
class VerificationKey:
    kid: str | None
    alg: str | None          # the JWK's own `alg`, if it names one
    key: Any                 # a cryptography public key object

    def can_verify(self, alg: str) -> bool:
        if self.alg is not None and self.alg != alg:
            return False
        if alg in ("RS256", "PS256"):
            return isinstance(self.key, rsa.RSAPublicKey) and self.key.key_size >= MIN_RSA_BITS
        if alg == "ES256":
            return isinstance(self.key, ec.EllipticCurvePublicKey) and isinstance(self.key.curve, ec.SECP256R1)
        if alg == "EdDSA":
            return isinstance(self.key, (ed25519.Ed25519PublicKey, ed448.Ed448PublicKey))
        return False


def parse_jwks(document: bytes | str | dict) -> list[VerificationKey]:
    """Usable signature keys of a JWKS document; raises JwksError if none.

    Skipped (not fatal): encryption keys, symmetric `oct` keys (HMAC is never
    accepted), unknown key types/curves, malformed entries (logged, by kid).
    """
    if isinstance(document, (bytes, str)):
        try:
            document = json.loads(document)
        except (ValueError, RecursionError) as exc:    # RecursionError: nested too deep
            raise JwksError(f"JWKS is not JSON: {exc}") from None
    entries = document.get("keys") if isinstance(document, dict) else None
    if not isinstance(entries, list):
        raise JwksError("JWKS has no 'keys' list")
    keys = []
    for entry in entries:
        if not isinstance(entry, dict) or entry.get("kty") not in ("RSA", "EC", "OKP"):
            continue
        if entry.get("use", "sig") != "sig":
            continue
        public = {k: v for k, v in entry.items() if k not in ("d", "p", "q", "dp", "dq", "qi")}
        kid = entry.get("kid") if isinstance(entry.get("kid"), str) else None
        try:
            key = jwt.PyJWK(public).key
        except Exception as exc:   # PyJWK raises many kinds (NotImplementedError for alg "none")
            log.warning("JWKS entry kid=%r skipped: %s", kid, raised(exc))
            continue
        alg = entry.get("alg") if isinstance(entry.get("alg"), str) else None
        keys.append(VerificationKey(kid, alg, key))
    if not keys:
        raise JwksError("JWKS holds no usable signature key")
    return keys


class _HttpsOnlyRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        if not newurl.lower().startswith("https://"):
            raise JwksError(f"refusing redirect to non-https URL {newurl}")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


class _Deadline:
    """An overall time limit for one fetch. urllib's timeout bounds each socket operation
    only, so a server sending a byte every few seconds would hold a fetch forever; at the
    deadline every connection the fetch opened is shut down, which ends any blocked read."""

    def __init__(self, seconds: float):
        self.expired = False
        self._seconds, self._ends = seconds, None
        self._lock = threading.Lock()
        self._watched: list[socket.socket] = []
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def __enter__(self) -> "_Deadline":
        self._ends = time.monotonic() + self._seconds
        self._timer.start()
        return self

    @property
    def passed(self) -> bool:
        """Expired, or its time is up though the timer's thread has not run yet: after a
        stall (a loaded machine) a socket's own timeout, equal to it, may be seen first."""
        return self.expired or time.monotonic() >= self._ends

    def __exit__(self, *exc) -> None:
        self._timer.cancel()
        with self._lock:
            for sock in self._watched:
                sock.close()
            self._watched.clear()

    def create_connection(self, *args, **kwargs) -> socket.socket:
        """socket.create_connection, the connection watched."""
        sock = socket.create_connection(*args, **kwargs)
        with self._lock:
            # A descriptor of our own: TLS wrapping detaches `sock`, and ours cannot be reused under us.
            watched = socket.socket(fileno=os.dup(sock.fileno()))
            self._watched.append(watched)
            if self.expired:
                _shut_down(watched)
        return sock

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for sock in self._watched:
                _shut_down(sock)


def _shut_down(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass   # already closed by the peer


class _WatchedHTTPSConnection(http.client.HTTPSConnection):
    def __init__(self, host, *, deadline: _Deadline, **kwargs):
        super().__init__(host, **kwargs)
        self._create_connection = deadline.create_connection   # http.client's hook for the TCP connect


class _DeadlineHTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, context: ssl.SSLContext, deadline: _Deadline):
        super().__init__(context=context)
        self._connection = functools.partial(_WatchedHTTPSConnection, deadline=deadline)
        self._tls_context = context

    def https_open(self, req):
        return self.do_open(self._connection, req, context=self._tls_context)


def fetch_https_json(url: str, *, ca_file: str | None = None, timeout: float = 10.0) -> dict:
    """GET a JSON object over verified HTTPS (blocking: worker threads only).

    `timeout` bounds each socket operation and, separately, the fetch as a whole.
    """
    if not url.lower().startswith("https://"):
        raise JwksError(f"key URLs must be https: {url}")
    with _Deadline(timeout) as deadline:
        body = None
        try:
            body = _get(url, ca_file, timeout, deadline)
        except JwksError:
            if not deadline.passed:   # a failure of its own, told as it is
                raise
        if body is None or deadline.expired:   # a cut-off answer may look complete: refuse it whatever it held
            raise JwksError(f"GET {url}: no complete answer within {timeout:g} s")
    try:
        document = json.loads(body)
    except (ValueError, RecursionError):
        raise JwksError(f"GET {url}: response is not JSON") from None
    if not isinstance(document, dict):
        raise JwksError(f"GET {url}: response is not a JSON object")
    return document


def _get(url: str, ca_file: str | None, timeout: float, deadline: _Deadline) -> bytes:
    context = ssl.create_default_context(cafile=ca_file)
    opener = urllib.request.build_opener(_DeadlineHTTPSHandler(context, deadline), _HttpsOnlyRedirects())
    request = urllib.request.Request(url, headers={"Accept": "application/json", "User-Agent": "gsmcpd"})
    try:
        with opener.open(request, timeout=timeout) as response:
            body = response.read(MAX_DOCUMENT + 1)
    except urllib.error.HTTPError as exc:
        raise JwksError(f"GET {url}: HTTP {exc.code}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise JwksError(f"GET {url}: {getattr(exc, 'reason', exc)}") from None
    except http.client.HTTPException as exc:     # e.g. BadStatusLine: the peer does not speak HTTP
        raise JwksError(f"GET {url}: not an HTTP answer ({raised(exc)})") from None
    if len(body) > MAX_DOCUMENT:
        raise JwksError(f"GET {url}: document larger than {MAX_DOCUMENT} bytes")
    return body


def discover_jwks_uri(issuer: str, *, ca_file: str | None = None, timeout: float = 10.0) -> str:
    """issuer/.well-known/openid-configuration → jwks_uri (blocking)."""
    config = fetch_https_json(issuer.rstrip("/") + "/.well-known/openid-configuration",
                              ca_file=ca_file, timeout=timeout)
    if str(config.get("issuer", "")).rstrip("/") != issuer.rstrip("/"):
        raise JwksError(f"openid-configuration names issuer {config.get('issuer')!r}, expected {issuer!r}")
    uri = config.get("jwks_uri")
    if not isinstance(uri, str) or not uri.lower().startswith("https://"):
        raise JwksError("openid-configuration has no https jwks_uri")
    return uri


@dataclass(frozen=True)
class RefreshResult:
    ok: bool                 # keys were (re)loaded
    attempted: bool          # False: skipped by the rate limit
    error: str | None = None


def _start_thread(fn: Callable[[], None]) -> None:
    threading.Thread(target=fn, name="gsmcpd-jwks", daemon=True).start()


class KeySource:
    """Cached verification keys from a file, an https URL, or OIDC discovery."""

    def __init__(self, *, post: Callable[[Callable[[], None]], None],
                 jwks_file: str | None = None, jwks_url: str | None = None,
                 issuer: str | None = None, ca_file: str | None = None,
                 timeout: float = 10.0, min_refresh_interval: float = 10.0,
                 refresh_interval: float = 3600.0,
                 clock: Callable[[], float] = time.monotonic,
                 spawn: Callable[[Callable[[], None]], None] = _start_thread,
                 call_later: Callable[[float, Callable[[], None]], Any] | None = None):
        """`call_later`: the loop's, for the deadline on waiting requests (the router
        passes it; without it, only `load_now` or a test, the fetch's own bounds hold)."""
        if sum(x is not None for x in (jwks_file, jwks_url, issuer)) != 1:
            raise ValueError("configure exactly one of jwks_file, jwks_url, issuer (discovery)")
        if jwks_url is not None and not jwks_url.lower().startswith("https://"):
            raise ValueError(f"jwks_url must be https: {jwks_url}")
        if issuer is not None and not issuer.lower().startswith("https://"):
            raise ValueError(f"discovery needs an https issuer: {issuer}")
        self._post, self._spawn, self._clock, self._call_later = post, spawn, clock, call_later
        self._file, self._url, self._issuer = jwks_file, jwks_url, issuer
        self._ca_file, self._timeout = ca_file, timeout
        self.min_refresh_interval = min_refresh_interval
        self.refresh_interval = refresh_interval
        self._keys: list[VerificationKey] = []
        self._waiters: list[Callable[[RefreshResult], None]] | None = None  # None: idle
        self._failure_reported = False   # the fetch in flight's failure is logged by its starter
        self._fetching = False           # a fetch thread has not reported back (it may outlive its waiters)
        self._fetches = 0                # numbers each fetch, so a deadline knows its own
        self._last_attempt: float | None = None
        self.next_refresh_at: float = clock()      # monotonic time the periodic refresh is due
        self.last_error: str | None = None
        self.loaded = False

    @classmethod
    def from_settings(cls, settings, *, post, **kwargs) -> "KeySource":
        issuer = settings.issuer if not (settings.jwks_file or settings.jwks_url) else None
        if issuer is not None and not settings.discover:
            raise ValueError("no key source: set jwks_file or jwks_url, or enable discovery")
        return cls(post=post, jwks_file=settings.jwks_file, jwks_url=settings.jwks_url,
                   issuer=issuer, ca_file=settings.ca_file, timeout=settings.fetch_timeout,
                   min_refresh_interval=settings.min_refresh_interval,
                   refresh_interval=settings.refresh_interval, **kwargs)

    # -- lookups (loop thread, pure) ------------------------------------------------
    @property
    def keys(self) -> tuple[VerificationKey, ...]:
        return tuple(self._keys)

    def lookup(self, kid: str | None, alg: str) -> VerificationKey | None | bool:
        """The key for a token header: a key, None (unknown), or False (known kid, wrong type/alg).

        Without a kid, a key is used only when exactly one loaded key fits `alg`.
        """
        if kid is None:
            fitting = self.fitting(alg)
            return fitting[0] if len(fitting) == 1 else None
        for key in self._keys:
            if key.kid == kid:
                return key if key.can_verify(alg) else False
        return None

    def fitting(self, alg: str) -> list[VerificationKey]:
        """The loaded keys that can verify `alg`."""
        return [k for k in self._keys if k.can_verify(alg)]

    @property
    def in_flight(self) -> bool:
        """A fetch has started and its waiters are not answered yet."""
        return self._waiters is not None

    def can_refresh(self, rate_limited: bool = True) -> bool:
        """True if a refresh is running or one may start now (not rate-limited, and no fetch
        whose waiters were answered at its deadline still running)."""
        if self._waiters is not None:
            return True
        if self._fetching:   # past its deadline, stuck (a resolver): another would be stuck too
            return False
        return (not rate_limited or self._last_attempt is None
                or self._clock() - self._last_attempt >= self.min_refresh_interval)

    # -- refresh -----------------------------------------------------------------------
    def refresh_if_due(self) -> None:
        """The periodic refresh: start a fetch if the period is up and one may start now;
        else nothing at all. Not `refresh()`, which answers every call: while a fetch is
        stuck past its deadline it would post a no-op at each try, and join a fetch in
        flight with one."""
        if self._waiters is None and self._clock() >= self.next_refresh_at and self.can_refresh():
            self.refresh()

    def refresh(self, on_done: Callable[[RefreshResult], None] | None = None, *,
                reported: bool = False, rate_limited: bool = True) -> None:
        """Start (or join) a background reload; `on_done` runs later on the loop thread.
        `reported`: `on_done` logs a failure itself, so a failed fetch it starts is not
        logged here too (one line per failure). `rate_limited=False`: an administrator's
        reload (SIGHUP), which tokens cannot trigger, so it cannot be flooded."""
        callback = on_done or (lambda result: None)
        if self._waiters is not None:
            self._waiters.append(callback)
            return
        if not self.can_refresh(rate_limited):
            why = "the last JWKS fetch has not finished" if self._fetching else "rate limited"
            self._post(lambda: callback(RefreshResult(ok=False, attempted=False, error=why)))
            return
        self._waiters = [callback]
        self._failure_reported = reported
        self._last_attempt = self._clock()
        self._fetching = True
        self._fetches += 1
        try:
            self._spawn(functools.partial(self._fetch_in_thread, self._fetches))
        except Exception as exc:   # no thread (a pids limit reached): a failed fetch, not a wedged source
            self._fetching = False
            error = f"cannot start the JWKS fetch: {raised(exc)}"
            self._post(lambda: self._failed(error))

    def waiting_limit(self) -> float:
        """Seconds the requests waiting on a fetch wait at most: the fetch's own limit per
        GET it makes (discovery makes two), and a grace for the thread to say why it failed."""
        gets = 2 if self._url is None and self._file is None else 1
        return gets * self._timeout + WAITERS_GRACE

    def _arm_deadline(self, fetch: int) -> None:
        """Counted from the thread's start, as the fetch's own limit is: on a daemon busy
        starting, a thread may start a second late, and would lose the race to say why."""
        self._call_later(self.waiting_limit(), lambda: self._deadline_passed(fetch))

    def _deadline_passed(self, fetch: int) -> None:
        if fetch != self._fetches or self._waiters is None:
            return   # that fetch has reported back
        self._failed(f"no JWKS within {self.waiting_limit():g} s: {self._what_has_not_finished()}; "
                     f"its keys are used if it brings any")

    def _what_has_not_finished(self) -> str:
        """What holds a fetch past its deadline: a file's read has no name lookup nor
        connection (a FIFO no one writes to, a hung mount holds it)."""
        if self._file is not None:
            return f"the read of JWKS file {self._file} has not finished (a FIFO no one writes to, a hung mount)"
        return "the fetch has not finished (a name lookup or connection that does not end)"

    def load_now(self) -> None:
        """Blocking load for startup and `gsmcpd check`; never call from the running loop."""
        self._last_attempt = self._clock()
        keys, error = self._fetch()
        if error is not None:
            raise JwksError(error)
        self._install(keys)

    def _fetch(self) -> tuple[list[VerificationKey] | None, str | None]:
        """(keys, None) or (None, why): any failure, expected or not, is a failed fetch."""
        try:
            return self._fetch_keys(), None
        except JwksError as exc:
            return None, str(exc)
        except Exception as exc:   # a library's surprise must not wedge the source or stop startup
            return None, f"loading the JWKS failed: {raised(exc)}"

    def _fetch_keys(self) -> list[VerificationKey]:
        if self._file is not None:
            try:
                with open(self._file, "rb") as fh:
                    document = fh.read(MAX_DOCUMENT + 1)
            except OSError as exc:
                raise JwksError(f"cannot read JWKS file {self._file}: {exc.strerror}") from None
            if len(document) > MAX_DOCUMENT:   # cut short, it would read as broken JSON
                raise JwksError(f"JWKS file {self._file} is larger than {MAX_DOCUMENT} bytes")
            return parse_jwks(document)
        url = self._url or discover_jwks_uri(self._issuer, ca_file=self._ca_file, timeout=self._timeout)
        return parse_jwks(fetch_https_json(url, ca_file=self._ca_file, timeout=self._timeout))

    def _fetch_in_thread(self, fetch: int) -> None:
        if self._call_later is not None:
            self._post(lambda: self._arm_deadline(fetch))
        keys, error = None, "the JWKS fetch ended without a result"
        try:
            keys, error = self._fetch()
        finally:   # unconditional: without the finish, _fetching stays set and the source is wedged
            self._post(lambda: self._finish(keys, error))

    def _install(self, keys: list[VerificationKey]) -> None:
        self._keys = list(keys)
        self.loaded = True
        self.last_error = None
        self.next_refresh_at = self._clock() + self.refresh_interval

    def _finish(self, keys: list[VerificationKey] | None, error: str | None) -> None:
        self._fetching = False
        if self._waiters is None:   # past its deadline: its waiters were answered already
            self._finish_late(keys, error)
        elif keys is not None:
            self._install(keys)
            self._answer(RefreshResult(ok=True, attempted=True))
        else:
            self._failed(error)

    def _failed(self, error: str) -> None:
        if not self._failure_reported:
            log.warning("JWKS refresh failed: %s", error)
        self.last_error = error
        # Retry a failed source sooner than the full period, but not in a tight loop.
        self.next_refresh_at = self._clock() + min(self.refresh_interval, 6 * self.min_refresh_interval)
        self._answer(RefreshResult(ok=False, attempted=True, error=error))

    def _answer(self, result: RefreshResult) -> None:
        waiters, self._waiters = self._waiters or [], None
        for waiter in waiters:
            waiter(result)

    def _finish_late(self, keys: list[VerificationKey] | None, error: str | None) -> None:
        if keys is not None:
            self._install(keys)
            log.info("JWKS fetch finished after its deadline: its keys are loaded")
        else:
            self.last_error = error
            log.info("JWKS fetch that passed its deadline failed: %s", error)
