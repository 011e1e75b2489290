"""JWKS parsing, the key cache, refresh over real HTTPS and the refresh rate limit."""
import json
import logging
import os
import queue
import socket
import threading
import time

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from gsmcpd.auth import Accepted, AuthSettings, KeySource, NeedRefresh, Rejected, authenticate
from gsmcpd.auth import jwks as jwks_module
from gsmcpd.auth.jwks import MAX_DOCUMENT, JwksError, parse_jwks
from idp import Clock, Idp, JwksServer

RESOURCE = "https://127.0.0.1:8443/mcp"


class QueueLoop:
    """The router's call_soon_threadsafe, reduced to a queue the test drains."""

    def __init__(self):
        self.queue = queue.Queue()

    def post(self, fn):
        self.queue.put(fn)

    def run_one(self):
        self.queue.get(timeout=10)()


@pytest.fixture
def loop():
    return QueueLoop()


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def server(tmp_path):
    with JwksServer(tmp_path) as server:
        server.idp = Idp(issuer=server.url, audience=RESOURCE, kinds=("rsa", "ec"))
        yield server


def refresh_and_wait(keys, loop):
    results = []
    keys.refresh(results.append)
    while not results:   # a source with a deadline also posts the arming of its timer
        loop.run_one()
    assert len(results) == 1
    return results[0]


NESTED = '{"keys":' + "[" * 100000 + "]" * 100000 + "}"


# -- parse_jwks -------------------------------------------------------------------------
def test_parse_skips_unusable_entries(caplog):
    idp = Idp(kinds=("ec", "rsa"))
    good, rsa_key = idp.jwks()["keys"]
    document = {"keys": [
        {"kty": "oct", "k": "c2VjcmV0", "kid": "hmac"},
        {**good, "kid": "enc", "use": "enc"},
        {"kty": "XYZ", "kid": "odd"},
        {"kty": "EC", "kid": "broken", "crv": "P-256", "x": "AA", "y": "AA"},
        {**rsa_key, "kid": "alg-none", "alg": "none"},      # PyJWK: NotImplementedError
        {**rsa_key, "kid": "deep", "n": json.loads("[" * 500 + "]" * 500)},
        "not an object",
        good,
    ]}
    keys = parse_jwks(json.dumps(document))
    assert [k.kid for k in keys] == ["ec-1"]
    assert "JWKS entry kid='alg-none' skipped: NotImplementedError" in caplog.text
    assert "JWKS entry kid='deep' skipped" in caplog.text


def test_parse_ignores_private_members():
    idp = Idp(kinds=("rsa",))
    private_jwk = jwt.get_algorithm_by_name("RS256").to_jwk(idp.keys["rsa-1"][1], as_dict=True)
    (key,) = parse_jwks({"keys": [{**private_jwk, "kid": "leaked"}]})
    assert isinstance(key.key, rsa.RSAPublicKey)


@pytest.mark.parametrize("document, message", [
    (b"{not json", "JWKS is not JSON"),
    (NESTED, "JWKS is not JSON"),
    ({"nokeys": []}, "JWKS has no 'keys' list"),
    ({"keys": [{"kty": "oct", "k": "c2VjcmV0"}]}, "JWKS holds no usable signature key"),
])
def test_parse_errors(document, message):
    with pytest.raises(JwksError, match=message):
        parse_jwks(document)


# -- KeySource over a file -----------------------------------------------------------
def test_lookup_by_kid_and_without_kid(tmp_path, loop):
    idp = Idp(kinds=("rsa", "ec"))
    keys = KeySource(post=loop.post, jwks_file=str(idp.write_jwks(tmp_path / "k.json")))
    keys.load_now()
    assert keys.lookup("rsa-1", "RS256").kid == "rsa-1"
    assert keys.lookup("rsa-1", "ES256") is False
    assert keys.lookup("nope", "RS256") is None
    assert keys.lookup(None, "ES256").kid == "ec-1"       # the only EC key
    idp.add_key("ec", "ec-2")
    idp.write_jwks(tmp_path / "k.json")
    keys.load_now()
    assert keys.lookup(None, "ES256") is None             # ambiguous without a kid


def test_load_now_reports_missing_file(tmp_path, loop):
    keys = KeySource(post=loop.post, jwks_file=str(tmp_path / "absent.json"))
    with pytest.raises(JwksError, match="cannot read JWKS file"):
        keys.load_now()


def test_exactly_one_source_required(loop):
    with pytest.raises(ValueError, match="exactly one"):
        KeySource(post=loop.post)
    with pytest.raises(ValueError, match="must be https"):
        KeySource(post=loop.post, jwks_url="http://idp.test/jwks")
    with pytest.raises(ValueError, match="https issuer"):
        KeySource(post=loop.post, issuer="http://idp.test")


def test_rotation_through_refresh(tmp_path, loop, clock):
    idp = Idp(audience=RESOURCE, kinds=("rsa",))
    path = idp.write_jwks(tmp_path / "k.json")
    settings = AuthSettings(resource=RESOURCE, issuer=idp.issuer)
    keys = KeySource(post=loop.post, jwks_file=str(path), clock=clock)
    keys.load_now()
    old_token = f"Bearer {idp.mint('rsa-1')}"

    idp.add_key("rsa", "rsa-2")
    idp.write_jwks(path)
    new_token = f"Bearer {idp.mint('rsa-2')}"
    clock.now += 10
    assert authenticate(new_token, settings, keys) == NeedRefresh("rsa-2")
    assert refresh_and_wait(keys, loop).ok
    assert isinstance(authenticate(new_token, settings, keys, may_refresh=False), Accepted)
    assert isinstance(authenticate(old_token, settings, keys), Accepted)   # still published

    idp.remove_key("rsa-1")
    idp.write_jwks(path)
    clock.now += 10
    assert refresh_and_wait(keys, loop).ok
    outcome = authenticate(old_token, settings, keys, may_refresh=False)
    assert isinstance(outcome, Rejected) and outcome.description == "token signing key is not known"


def test_failed_refresh_keeps_the_old_keys(tmp_path, loop, clock):
    idp = Idp(kinds=("rsa",))
    path = idp.write_jwks(tmp_path / "k.json")
    keys = KeySource(post=loop.post, jwks_file=str(path), clock=clock, refresh_interval=3600)
    keys.load_now()
    assert keys.next_refresh_at == clock.now + 3600
    path.write_text("{}")
    clock.now += 10
    result = refresh_and_wait(keys, loop)
    assert (result.ok, result.attempted, result.error) == (False, True, "JWKS has no 'keys' list")
    assert keys.last_error == "JWKS has no 'keys' list"
    assert keys.lookup("rsa-1", "RS256") is not None
    assert keys.next_refresh_at == clock.now + 60      # retried sooner than the full period


def test_a_failed_fetch_whose_starter_reports_it_is_not_logged_twice(tmp_path, loop, clock, caplog):
    # The router's first load logs "could not load signing keys yet: ..." itself: the
    # source's own "JWKS refresh failed" line for that fetch said the same thing again.
    keys = KeySource(post=loop.post, jwks_file=str(tmp_path / "missing.json"), clock=clock)
    results = []
    keys.refresh(results.append, reported=True)
    keys.refresh(results.append)                    # joins that fetch: its starter reports it
    loop.run_one()
    assert [result.ok for result in results] == [False, False]
    assert "JWKS refresh failed" not in caplog.text
    clock.now += 10
    assert not refresh_and_wait(keys, loop).ok      # a fetch nobody else reports is logged
    assert caplog.text.count("JWKS refresh failed: cannot read JWKS file") == 1


def test_an_unexpected_failure_is_a_failed_fetch_and_the_next_refresh_works(tmp_path, loop, clock,
                                                                             monkeypatch, caplog):
    idp = Idp(kinds=("rsa",))
    path = idp.write_jwks(tmp_path / "k.json")
    keys = KeySource(post=loop.post, jwks_file=str(path), clock=clock)

    def surprise(document):
        raise RuntimeError("a library's surprise")
    monkeypatch.setattr(jwks_module, "parse_jwks", surprise)
    with pytest.raises(JwksError, match="loading the JWKS failed: RuntimeError: a library's surprise"):
        keys.load_now()
    clock.now += 10
    result = refresh_and_wait(keys, loop)
    assert (result.ok, result.attempted) == (False, True)
    assert result.error == "loading the JWKS failed: RuntimeError: a library's surprise"
    assert "JWKS refresh failed: loading the JWKS failed" in caplog.text
    monkeypatch.undo()
    clock.now += 10
    assert refresh_and_wait(keys, loop).ok                 # not wedged: the next fetch runs
    assert keys.lookup("rsa-1", "RS256") is not None


def test_a_deeply_nested_file_is_a_failed_fetch(tmp_path, loop):
    path = tmp_path / "k.json"
    path.write_text(NESTED)
    keys = KeySource(post=loop.post, jwks_file=str(path))
    result = refresh_and_wait(keys, loop)
    assert result.ok is False and result.error.startswith("JWKS is not JSON")


def test_a_file_larger_than_a_document_may_be_is_refused_saying_so(tmp_path, loop):
    path = tmp_path / "k.json"
    document = Idp(kinds=("rsa",)).jwks()
    document["padding"] = "x" * MAX_DOCUMENT          # valid JSON, keys first: only its size is wrong
    path.write_text(json.dumps(document))
    keys = KeySource(post=loop.post, jwks_file=str(path))
    result = refresh_and_wait(keys, loop)
    assert result.ok is False
    assert result.error == "JWKS file %s is larger than %d bytes" % (path, MAX_DOCUMENT)


# -- refresh rate limit ----------------------------------------------------------------
def test_refresh_is_rate_limited(server, loop, clock):
    keys = KeySource(post=loop.post, jwks_url=server.jwks_url, ca_file=server.ca_file,
                     clock=clock, min_refresh_interval=10)
    assert refresh_and_wait(keys, loop).ok
    clock.now += 9
    assert keys.can_refresh() is False
    result = refresh_and_wait(keys, loop)
    assert (result.ok, result.attempted) == (False, False)
    assert server.fetches[JwksServer.JWKS_PATH] == 1
    clock.now += 1
    assert refresh_and_wait(keys, loop).ok
    assert server.fetches[JwksServer.JWKS_PATH] == 2


def test_a_reload_the_administrator_asks_for_is_not_rate_limited(server, loop, clock):
    # SIGHUP's: a key withdrawn at the IdP (compromised) must stop verifying now, not at
    # the periodic refresh an hour away; only a token naming an unknown kid fetched sooner.
    keys = KeySource(post=loop.post, jwks_url=server.jwks_url, ca_file=server.ca_file,
                     clock=clock, min_refresh_interval=10)
    assert refresh_and_wait(keys, loop).ok
    server.idp.remove_key("rsa-1")
    clock.now += 1
    results = []
    keys.refresh(results.append, rate_limited=False)
    while not results:
        loop.run_one()
    assert results[0].ok
    assert server.fetches[JwksServer.JWKS_PATH] == 2
    assert keys.lookup("rsa-1", "RS256") is None


def test_concurrent_refreshes_share_one_fetch(server, loop):
    keys = KeySource(post=loop.post, jwks_url=server.jwks_url, ca_file=server.ca_file)
    results = []
    keys.refresh(results.append)
    keys.refresh(results.append)
    assert keys.can_refresh() is True          # one is in flight: joining it is allowed
    loop.run_one()
    assert [r.ok for r in results] == [True, True]
    assert server.fetches[JwksServer.JWKS_PATH] == 1


def test_callback_never_runs_synchronously(server, loop, clock):
    keys = KeySource(post=loop.post, jwks_url=server.jwks_url, ca_file=server.ca_file, clock=clock)
    refresh_and_wait(keys, loop)
    results = []
    keys.refresh(results.append)                # rate-limited: answered through post
    assert results == []
    loop.run_one()
    assert results[0].attempted is False


# -- HTTPS and discovery ----------------------------------------------------------------
def test_discovery_through_openid_configuration(server, loop):
    settings = AuthSettings(resource=RESOURCE, issuer=server.url, ca_file=server.ca_file)
    keys = KeySource.from_settings(settings, post=loop.post)
    token = f"Bearer {server.idp.mint('ec-1')}"
    assert authenticate(token, settings, keys) == NeedRefresh("ec-1")     # nothing loaded yet
    assert refresh_and_wait(keys, loop).ok
    assert server.fetches == {JwksServer.CONFIG_PATH: 1, JwksServer.JWKS_PATH: 1}
    outcome = authenticate(token, settings, keys, may_refresh=False)
    assert isinstance(outcome, Accepted) and outcome.principal.user == "alice"


def test_key_rotation_over_https(server, loop, clock):
    settings = AuthSettings(resource=RESOURCE, issuer=server.url, jwks_url=server.jwks_url,
                            ca_file=server.ca_file)
    keys = KeySource.from_settings(settings, post=loop.post, clock=clock)
    assert refresh_and_wait(keys, loop).ok
    server.idp.add_key("ed", "ed-rotated")
    token = f"Bearer {server.idp.mint('ed-rotated')}"
    clock.now += 10
    outcome = authenticate(token, settings, keys)
    assert isinstance(outcome, NeedRefresh)
    outcomes = []
    keys.refresh(lambda result: outcomes.append(authenticate(token, settings, keys, may_refresh=False)))
    loop.run_one()
    assert isinstance(outcomes[0], Accepted)


def test_untrusted_certificate_is_refused(server, loop):
    keys = KeySource(post=loop.post, jwks_url=server.jwks_url)     # system CAs only
    result = refresh_and_wait(keys, loop)
    assert result.ok is False and "CERTIFICATE_VERIFY_FAILED" in result.error


def test_discovery_issuer_mismatch_is_refused(server, loop):
    server.config_issuer = "https://evil.test"
    keys = KeySource(post=loop.post, issuer=server.url, ca_file=server.ca_file)
    result = refresh_and_wait(keys, loop)
    assert result.error == f"openid-configuration names issuer 'https://evil.test', expected '{server.url}'"


def test_a_peer_that_does_not_speak_http_is_a_failed_fetch(server, loop):
    server.raw_answer = b"SSH-2.0-OpenSSH\r\n\r\n"
    keys = KeySource(post=loop.post, jwks_url=server.jwks_url, ca_file=server.ca_file)
    result = refresh_and_wait(keys, loop)
    assert result.error.startswith(f"GET {server.jwks_url}: not an HTTP answer (BadStatusLine")
    with pytest.raises(JwksError, match="not an HTTP answer"):
        keys.load_now()


def test_a_server_that_drips_its_answer_is_cut_off_at_the_deadline(server, loop, clock):
    server.drip = True               # a byte well within each read's timeout, never an end
    keys = KeySource(post=loop.post, jwks_url=server.jwks_url, ca_file=server.ca_file, timeout=1,
                     clock=clock)
    result = refresh_and_wait(keys, loop)
    assert result.error == f"GET {server.jwks_url}: no complete answer within 1 s"
    with pytest.raises(JwksError, match="no complete answer within 1 s"):
        keys.load_now()
    server.drip = False
    clock.now += 10
    assert refresh_and_wait(keys, loop).ok


def test_a_socket_timeout_seen_before_the_deadline_s_timer_ran_is_told_as_the_deadline(monkeypatch):
    # After a stall (a loaded machine), a socket's own timeout, equal to the fetch's, may
    # be seen before the deadline's timer thread has run: the reason was the socket's
    # ("The handshake operation timed out"), the wording hanging on which thread ran first.
    url = "https://idp.test/jwks.json"

    def timed_out_late(url, ca_file, timeout, deadline):
        time.sleep(timeout + 0.05)   # the fetch's time is up
        raise JwksError(f"GET {url}: _ssl.c:989: The handshake operation timed out")

    monkeypatch.setattr(jwks_module._Deadline, "_expire", lambda self: None)   # its thread not run yet
    monkeypatch.setattr(jwks_module, "_get", timed_out_late)
    with pytest.raises(JwksError) as raised:
        jwks_module.fetch_https_json(url, timeout=0.1)
    assert str(raised.value) == f"GET {url}: no complete answer within 0.1 s"


def test_http_error_status_is_reported(server, loop):
    server.fail_with = 500
    keys = KeySource(post=loop.post, jwks_url=server.jwks_url, ca_file=server.ca_file)
    assert refresh_and_wait(keys, loop).error == f"GET {server.jwks_url}: HTTP 500"


def test_a_fetch_whose_thread_cannot_start_is_a_failed_fetch_not_a_wedged_source(server, loop, clock, caplog):
    # Thread.start() raising (RuntimeError: can't start new thread, at a pids limit)
    # left the fetch "in flight" with no thread: its requests and every later one joined
    # it and were never answered, nor the keys refreshed again; and refresh() raised on
    # the loop.
    threads = []                               # empty: no thread starts

    def spawn(fn):
        if not threads:
            raise RuntimeError("can't start new thread")
        jwks_module._start_thread(fn)
    keys = KeySource(post=loop.post, jwks_url=server.jwks_url, ca_file=server.ca_file, clock=clock,
                     spawn=spawn, call_later=Timers().call_later)
    results = []
    keys.refresh(results.append)
    keys.refresh(results.append)               # joins it, as a second request would
    loop.run_one()
    assert [(r.ok, r.attempted, r.error) for r in results] == \
        [(False, True, "cannot start the JWKS fetch: RuntimeError: can't start new thread")] * 2
    assert "JWKS refresh failed: cannot start the JWKS fetch" in caplog.text
    assert loop.queue.empty()                  # answered once each
    clock.now += 10
    threads.append("a pid is free again")     # so the next fetch starts
    assert keys.can_refresh() and refresh_and_wait(keys, loop).ok


# -- the loop's deadline on waiting requests ----------------------------------------------
class HeldResolver:
    """socket.getaddrinfo held for `localhost` until released: a resolver taking 10-30 s,
    which no socket timeout or shutdown cuts short."""

    def __init__(self, monkeypatch):
        self.asked, self.released = threading.Event(), threading.Event()
        resolve = socket.getaddrinfo

        def getaddrinfo(host, *args, **kwargs):
            if host == "localhost":
                self.asked.set()
                self.released.wait(30)
            return resolve(host, *args, **kwargs)
        monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


class Timers:
    """The loop's call_later, fired by the test."""

    def __init__(self):
        self.due = []

    def call_later(self, delay, fn):
        self.due.append((delay, fn))


def held_in_the_resolver(server, loop, clock, monkeypatch, timers):
    """A key source on `server` by its name, whose first refresh is in the held resolver."""
    resolver = HeldResolver(monkeypatch)
    keys = KeySource(post=loop.post, jwks_url=server.jwks_url.replace("127.0.0.1", "localhost"),
                     ca_file=server.ca_file, timeout=2, clock=clock, call_later=timers.call_later)
    results = []
    keys.refresh(results.append)
    loop.run_one()                             # the thread has started: the deadline is armed
    assert resolver.asked.wait(10)
    return keys, resolver, results


def test_requests_waiting_on_a_fetch_held_in_the_name_lookup_are_answered_at_the_deadline(
        server, loop, clock, monkeypatch):
    timers = Timers()
    keys, resolver, results = held_in_the_resolver(server, loop, clock, monkeypatch, timers)
    [(delay, deadline)] = timers.due
    assert delay == 3                          # the fetch's 2 s, then a grace for its own reason
    deadline()                                 # on the loop, the thread still in the resolver
    assert [(r.ok, r.attempted) for r in results] == [(False, True)]
    assert results[0].error == ("no JWKS within 3 s: the fetch has not finished (a name lookup or "
                                "connection that does not end); its keys are used if it brings any")
    assert keys.last_error == results[0].error
    # No second thread joins the first in the resolver, past the rate limit or not.
    clock.now += 60
    assert keys.can_refresh() is False
    keys.refresh(results.append)
    loop.run_one()
    assert (results[1].attempted, results[1].error) == (False, "the last JWKS fetch has not finished")
    resolver.released.set()                    # the late fetch's keys are used
    loop.run_one()
    assert keys.loaded and {k.kid for k in keys.keys} == {"rsa-1", "ec-1"}
    assert len(results) == 2 and server.fetches[JwksServer.JWKS_PATH] == 1
    assert keys.can_refresh() is True


def test_a_file_whose_read_has_not_finished_at_the_deadline_is_said_so(tmp_path, loop, clock):
    # It said "the fetch has not finished (a name lookup or connection that does not end)",
    # which a file's read has neither of.
    path = tmp_path / "jwks.json"
    os.mkfifo(path)                            # no one writes to it: the read is held opening it
    timers = Timers()
    keys = KeySource(post=loop.post, jwks_file=str(path), timeout=1, clock=clock, call_later=timers.call_later)
    results = []
    keys.refresh(results.append)
    loop.run_one()                             # the thread has started: the deadline is armed
    try:
        timers.due[0][1]()
        assert [r.error for r in results] == [
            f"no JWKS within 2 s: the read of JWKS file {path} has not finished (a FIFO no one "
            "writes to, a hung mount); its keys are used if it brings any"]
    finally:
        with open(path, "w") as fifo:          # the held read ends, its thread with it
            fifo.write("{}")
    loop.run_one()


def test_a_fetch_that_fails_after_its_deadline_is_logged_once_more_and_answers_no_one(
        server, loop, clock, monkeypatch, caplog):
    caplog.set_level(logging.INFO, "gsmcpd.auth")
    timers = Timers()
    keys, resolver, results = held_in_the_resolver(server, loop, clock, monkeypatch, timers)
    timers.due[0][1]()
    server.fail_with = 500
    resolver.released.set()
    loop.run_one()
    assert len(results) == 1 and not keys.loaded
    assert keys.last_error.endswith(": HTTP 500")
    assert "JWKS fetch that passed its deadline failed: GET https://localhost" in caplog.text


def test_the_deadline_of_a_fetch_that_reported_back_answers_no_later_one(server, loop, clock):
    timers = Timers()
    keys = KeySource(post=loop.post, jwks_url=server.jwks_url, ca_file=server.ca_file, clock=clock,
                     call_later=timers.call_later)
    assert refresh_and_wait(keys, loop).ok
    clock.now += 10
    server.jwks_gate.clear()                   # the second fetch is held by the IdP
    results = []
    keys.refresh(results.append)
    loop.run_one()                             # the second thread has started
    timers.due[0][1]()                         # the first fetch's deadline passes
    assert results == []
    server.jwks_gate.set()
    loop.run_one()
    assert [r.ok for r in results] == [True]
