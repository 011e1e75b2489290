"""The auth gate's JWKS refreshes, on a loop the test runs: the periodic one
(AuthGate._schedule_refresh), with a JWKS file that is a FIFO no one writes (a read that
never ends, as on a hung mount), and the one SIGHUP asks for (AuthGate.reload_keys)."""

import heapq
import itertools
import json
import logging
import os
import queue
from types import SimpleNamespace

import pytest

from gsmcpd.auth.jwks import KeySource
from gsmcpd.auth.tokens import Principal
from gsmcpd.config import Config
from gsmcpd.router.authgate import AuthGate
from helpers import wait_until
from idp import Idp, JwksServer


class ManualLoop:
    """The loop surface the gate uses: posts counted and run by the test, timers fired as
    the test moves the time."""

    def __init__(self):
        self.now = 1000.0
        self.posted = queue.Queue()
        self.posts = 0
        self.timers = []
        self._order = itertools.count()

    def call_soon_threadsafe(self, fn):
        self.posts += 1
        self.posted.put(fn)

    def run_posted(self, timeout=10):
        self.posted.get(timeout=timeout)()

    def call_later(self, delay, fn):
        heapq.heappush(self.timers, (self.now + delay, next(self._order), fn))

    def advance(self, seconds):
        """Move the time on, firing each timer as its time comes."""
        end = self.now + seconds
        while self.timers and self.timers[0][0] <= end:
            when, _, fn = heapq.heappop(self.timers)
            self.now = max(self.now, when)
            fn()
        self.now = end


@pytest.fixture
def hung_file(tmp_path):
    """A FIFO with no writer: opening it to read blocks, as a read on a hung mount does.
    Opened for writing at the end, so the reader stuck in it is let go."""
    path = tmp_path / "jwks.json"
    os.mkfifo(path)
    yield path
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))   # EOF to a reader held in open
    except OSError:
        pass   # no reader held there


def gate_on(loop, jwks_file):
    config = Config(auth=True, issuer="https://idp.test", audience="https://mcp.example/mcp",
                    jwks_file=jwks_file)
    gate = AuthGate(SimpleNamespace(loop=loop, config=config))
    gate.keys = KeySource(post=loop.call_soon_threadsafe, jwks_file=str(jwks_file), timeout=2,
                          clock=lambda: loop.now, call_later=loop.call_later)
    return gate


def started_gate_on(loop, jwks_file):
    """gate_on's gate, started, its first load of the keys done."""
    gate = gate_on(loop, jwks_file)
    gate.start()
    while not gate.keys.loaded:
        loop.run_posted()
    return gate


def test_while_a_fetch_is_stuck_past_its_deadline_the_periodic_refresh_posts_nothing(hung_file):
    # It called refresh() each second, which, refused while the stuck fetch runs, posted
    # a no-op callback to the loop every time (a wake-up of the loop for nothing).
    loop = ManualLoop()
    gate = gate_on(loop, hung_file)
    gate.start()
    loop.run_posted()                     # the fetch thread has started: its deadline armed
    loop.advance(3)                       # the deadline passes: the first load failed
    assert gate.keys.last_error.startswith("no JWKS within 3 s")
    posts = loop.posts
    loop.advance(600)                     # the periodic refresh comes due, again and again
    assert loop.posts == posts
    assert gate.keys.can_refresh() is False   # the stuck read still holds the source


def test_sighup_reloads_the_keys_at_once_dropping_a_withdrawn_one(tmp_path, caplog):
    # Before, a key the IdP withdrew went on verifying tokens until the hourly refresh
    # (or a restart, ending every session): SIGHUP reloaded the TLS pair and user map only.
    idp = Idp(kinds=("rsa", "ec"))
    path = idp.write_jwks(tmp_path / "jwks.json")
    loop = ManualLoop()
    gate = started_gate_on(loop, path)
    idp.remove_key("rsa-1")
    idp.write_jwks(path)
    loop.advance(1)                       # within MCP_JWKS_MIN_REFRESH of the first load
    with caplog.at_level(logging.INFO, logger="gsmcpd"):
        gate.reload_keys("SIGHUP")
        while gate.keys.lookup("rsa-1", "RS256") is not None:
            loop.run_posted()
        while not any("SIGHUP: signing keys reloaded" in r.getMessage() for r in caplog.records):
            loop.run_posted()
    assert [k.kid for k in gate.keys.keys] == ["ec-1"]
    assert "SIGHUP: signing keys reloaded from %s: 1 key(s)" % path in caplog.text


def test_a_sighup_reload_that_fails_keeps_the_keys_and_says_so(tmp_path, caplog):
    idp = Idp(kinds=("rsa",))
    path = idp.write_jwks(tmp_path / "jwks.json")
    loop = ManualLoop()
    gate = started_gate_on(loop, path)
    path.write_text("not json")
    with caplog.at_level(logging.INFO, logger="gsmcpd"):
        gate.reload_keys("SIGHUP")
        while not any("SIGHUP:" in r.getMessage() for r in caplog.records):
            loop.run_posted()
    assert [k.kid for k in gate.keys.keys] == ["rsa-1"]
    lines = [r.getMessage() for r in caplog.records if "SIGHUP" in r.getMessage() or "JWKS" in r.getMessage()]
    assert len(lines) == 1, lines
    assert lines[0].startswith("SIGHUP: signing keys not reloaded: JWKS is not JSON")
    assert lines[0].endswith("; still using the 1 key(s) loaded before")


def test_a_sighup_during_a_fetch_fetches_again_once_it_ends(tmp_path, caplog):
    # Joining the fetch in flight answered the reload with keys read before the
    # administrator's edit, logged as reloaded.
    with JwksServer(tmp_path) as server:
        server.idp = Idp(issuer=server.url, kinds=("rsa",))
        loop = ManualLoop()
        config = Config(auth=True, issuer=server.url, audience="https://mcp.example/mcp",
                        jwks_uri=server.jwks_url)
        gate = AuthGate(SimpleNamespace(loop=loop, config=config))
        gate.keys = KeySource(post=loop.call_soon_threadsafe, jwks_url=server.jwks_url,
                              ca_file=server.ca_file, timeout=5, clock=lambda: loop.now,
                              call_later=loop.call_later)
        server.jwks_gate.clear()                  # the IdP holds its answer
        gate.start()
        assert wait_until(lambda: server.fetches[server.JWKS_PATH] == 1)
        with caplog.at_level(logging.INFO, logger="gsmcpd"):
            gate.reload_keys("SIGHUP")
            server.jwks_gate.set()
            while "SIGHUP: signing keys reloaded" not in caplog.text:
                loop.run_posted()
        assert server.fetches[server.JWKS_PATH] == 2


def a_gate_on_a_read_write_session(tmp_path, sid):
    jwks = tmp_path / "jwks.json"
    jwks.write_text('{"keys": []}')
    config = Config(auth=True, issuer="https://idp.test", audience="https://mcp.example/mcp",
                    jwks_file=jwks, required_scopes=("mcp:use",), write_scope="mcp:write")
    gate = AuthGate(SimpleNamespace(loop=ManualLoop(), config=config))
    session = SimpleNamespace(read_only=False, user="hank", short=sid[:8])
    gate.router = SimpleNamespace(sessions=SimpleNamespace(by_id={sid: session}),
                                  repeated=SimpleNamespace(log=lambda *args: None))
    return gate


def request_to(sid, method, message=None, head_only=False):
    body = None if head_only else json.dumps(message).encode() if message is not None else b""
    return SimpleNamespace(method=method, body=body,
                           header=lambda name: sid if name == "mcp-session-id" else None)


@pytest.mark.parametrize("method, message, head_only, refused", [
    ("DELETE", None, False, False),
    ("POST", {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}}, False, False),
    ("POST", None, True, False),     # its head: read, then judged whole
    ("POST", {"jsonrpc": "2.0", "id": 4, "method": "notifications/cancelled"}, False, True),   # a request
    ("POST", {"jsonrpc": "2.0", "id": 5, "method": "ping"}, False, True),
    ("POST", {"jsonrpc": "2.0", "method": "notifications/initialized"}, False, True),
    ("POST", "not json-rpc", False, True),
    ("GET", None, False, True),
])
def test_a_token_without_the_write_scope_may_end_its_read_write_session_or_cancel_its_call_only(
        tmp_path, method, message, head_only, refused):
    # DELETE and notifications/cancelled were 403 insufficient_scope: the session could not be ended.
    sid = "a" * 32
    gate = a_gate_on_a_read_write_session(tmp_path, sid)
    without_write = Principal("hank", frozenset({"mcp:use"}), True, 0.0, {})
    answer = gate._scope_below_session(request_to(sid, method, message, head_only), without_write)
    assert (answer is not None and answer.status == 403 and answer.error == "insufficient_scope") == refused
