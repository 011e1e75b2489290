"""A new session that waits for its worker (no spare) while SIGHUP reads MCP_USER_MAP again
starts on the account the map gives its user then, or not at all (AuthGate.readmit);
end to end in test_e2e_peruser.py."""

import json
import types

from gsmcpd.auth import tokens, usermap
from gsmcpd.auth.usermap import AccountResolver, load_user_map
from gsmcpd.config import Config
from gsmcpd.router.app import Principal
from gsmcpd.router.main import Router
from gsmcpd.router.trace import USER_CAP
from gsmcpd.wire import frames
from test_router_sessions_poll import FakeConn, FakeWorker

INIT = {"jsonrpc": "2.0", "id": 7, "method": "initialize"}


def router_with_map(tmp_path, text):
    """A router with per-user workers by a map holding `text`, whose pool has no spare:
    (router, the map's path, the opens waiting for a worker, the workers given back)."""
    user_map = tmp_path / "users.map"
    user_map.write_text(text)
    router = Router(Config(auth=True, issuer="https://idp.test", audience="https://mcp.example/mcp",
                           jwks_file=tmp_path / "jwks.json", user_map=str(user_map)))
    # What a root router loads at start (not root, it would switch no worker).
    router.auth.accounts = AccountResolver(load_user_map(user_map))
    waiting, given_back = [], []
    router.pool = types.SimpleNamespace(claim=lambda start, fail: waiting.append(start),
                                        give_back=given_back.append, stdio_changed=lambda: None)
    return router, user_map, waiting, given_back


def prepared_account(worker):
    prepare = frames.FrameDecoder().feed(worker.sent[0])[0]
    assert prepare["op"] == "prepare"
    return prepare["session"]["account"]


def test_a_session_waiting_for_its_worker_through_a_reload_starts_as_the_map_says_then(tmp_path):
    # It was not among the sessions a reload looks at, so it started as the account its
    # user had before: an unmapped user got a session, a moved one ran as the old account.
    router, user_map, waiting, given_back = router_with_map(tmp_path, "ann nobody\nben daemon\n")
    try:
        ann, ben = FakeConn(), FakeConn()
        router.sessions.open(ann, None, INIT, b"{}", False, Principal("ann", False, account="nobody"))
        router.sessions.open(ben, None, INIT, b"{}", False, Principal("ben", False, account="daemon"))
        user_map.write_text("ann daemon\n")
        router.auth.reload_user_map("SIGHUP")
        start_ann, start_ben = waiting
        worker = FakeWorker(1)

        start_ben(worker)
        [(status, body)] = ben.answers
        assert status == 403 and json.loads(body) == {"jsonrpc": "2.0", "id": 7, "error": {
            "code": -32600, "message": "Forbidden: this user is not mapped to a local account"}}
        assert given_back == [worker] and worker.sent == []      # the next open's, untouched
        assert not router.sessions.by_id and router.sessions.sessions_of("ben") == 0
        assert router.sessions.opening == 1

        start_ann(worker)
        [session] = router.sessions.by_id.values()
        assert (session.user, session.account) == ("ann", "daemon")
        assert prepared_account(worker) == "daemon"
        assert router.sessions.opening == 0
    finally:
        router.close()


def test_a_session_whose_users_account_is_unchanged_starts_as_it_was_let_in(tmp_path):
    router, _, waiting, given_back = router_with_map(tmp_path, "ann nobody\n")
    try:
        principal = Principal("ann", True, exp=123.0, account="nobody")
        router.sessions.open(FakeConn(), None, INIT, b"{}", False, principal)
        worker = FakeWorker(1)
        waiting[0](worker)
        [session] = router.sessions.by_id.values()
        assert (session.account, session.read_only, given_back) == ("nobody", True, [])
        assert prepared_account(worker) == "nobody"
    finally:
        router.close()


def test_a_reload_during_a_stop_leaves_the_user_map_and_the_sessions_being_drained(tmp_path):
    # It ended a remapped user's session mid-drain, killing its worker in a call the stop
    # did not know it had cut, so the stop did not tidy the image after it.
    router, user_map, waiting, _ = router_with_map(tmp_path, "ann nobody\n")
    try:
        router.sessions.open(FakeConn(), None, INIT, b"{}", False, Principal("ann", False, account="nobody"))
        waiting[0](FakeWorker(1))
        [session] = router.sessions.by_id.values()
        user_map.write_text("ann daemon\n")
        router.stopping = True
        router.reload("SIGHUP")
        assert list(router.sessions.by_id.values()) == [session] and not session.ended
        router.stopping = False
        router.reload("SIGHUP")
        assert session.ended and not router.sessions.by_id
    finally:
        router.close()


def let_in(router, user):
    """What AuthGate gives App for `user`'s accepted token: the Principal its session opens with."""
    admitted = []
    request = types.SimpleNamespace(header=lambda name: None)
    token = tokens.Accepted(tokens.Principal(user, frozenset(), False, 2e9, {}))
    router.auth._finish(FakeConn(), request, lambda conn, request, principal: admitted.append(principal), token)
    [principal] = admitted
    return principal


def test_a_session_start_looks_its_account_up_again_only_after_a_reload_during_its_open(tmp_path, monkeypatch):
    # Every start made a second NSS lookup on the router's loop (getpwnam: a slow LDAP or sssd
    # holds every session), though only a SIGHUP between the open and its worker changes a thing.
    router, user_map, waiting, _ = router_with_map(tmp_path, "ann nobody\n")
    lookups = []
    real_getpwnam = usermap.pwd.getpwnam
    monkeypatch.setattr(usermap.pwd, "getpwnam", lambda name: lookups.append(name) or real_getpwnam(name))
    try:
        router.sessions.open(FakeConn(), None, INIT, b"{}", False, let_in(router, "ann"))
        assert lookups == ["nobody"]              # as its token was checked
        waiting.pop()(FakeWorker(1))
        assert lookups == ["nobody"] and len(router.sessions.by_id) == 1

        router.sessions.open(FakeConn(), None, INIT, b"{}", False, let_in(router, "ann"))
        router.auth.reload_user_map("SIGHUP")     # the map, read again, keeps ann as nobody
        del lookups[:]
        waiting.pop()(FakeWorker(2))
        assert lookups == ["nobody"] and len(router.sessions.by_id) == 2

        router.sessions.open(FakeConn(), None, INIT, b"{}", False, let_in(router, "ann"))
        del lookups[:]
        waiting.pop()(FakeWorker(3))              # let in after that reload: none since
        assert lookups == [] and len(router.sessions.by_id) == 3
    finally:
        router.close()


def test_a_user_a_reload_during_the_open_unmaps_is_still_refused_as_the_session_starts(tmp_path):
    router, user_map, waiting, given_back = router_with_map(tmp_path, "ann nobody\n")
    try:
        ann = FakeConn()
        router.sessions.open(ann, None, INIT, b"{}", False, let_in(router, "ann"))
        user_map.write_text("ben nobody\n")
        router.auth.reload_user_map("SIGHUP")
        worker = FakeWorker(1)
        waiting.pop()(worker)
        assert [status for status, _ in ann.answers] == [403]
        assert given_back == [worker] and not router.sessions.by_id
    finally:
        router.close()


def test_the_gate_logs_a_user_cut_however_long_the_claim(tmp_path, caplog):
    # The gate's own lines quoted the user whole: a claim as long as the token, at every request.
    long_user = "u" * 60_000
    router, _, waiting, _ = router_with_map(tmp_path, "ann nobody\n%s daemon\n" % long_user)
    try:
        router.sessions.open(FakeConn(), None, INIT, b"{}", False, Principal("ann", False, account="nobody"))
        waiting[0](FakeWorker(1))
        [session] = router.sessions.by_id.values()
        caplog.set_level("INFO", logger="gsmcpd.auth")
        assert not router.auth.owns_session(session, Principal(long_user, False))
        assert router.auth.readmit(FakeConn(), INIT, Principal(long_user, False, account="nobody")).account == "daemon"
        shown = "'%s...'" % ("u" * USER_CAP)
        assert [record.getMessage() for record in caplog.records if record.name == "gsmcpd.auth"] == [
            "user %s presented session %s of another user: answered 404" % (shown, session.short),
            "user %s now maps to account 'daemon': its new session, which waited for a worker, runs as it" % shown]
    finally:
        router.close()
