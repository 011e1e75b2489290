"""The router's OAuth 2.1 resource-server gate (GS_MCP_AUTH=1).

Every /mcp request is authenticated before it reaches a session. Token checks are
pure (gsmcpd.auth.tokens); a token signed by a key we have not seen parks its
request while the JWKS is refetched on a worker thread, and the loop carries on.
"""

import getpass
import logging
import os

from gsmcpd.auth import tokens
from gsmcpd.auth.jwks import KeySource
from gsmcpd.auth.settings import settings_from_config, unreachable_resource_warning
from gsmcpd.auth.usermap import (IDENTITY_MAP, AccountRefused, AccountResolver, mapping_changed, named,
                                 never_served_warnings, read_user_map_setting)
from gsmcpd.exitcodes import StartRefused
from gsmcpd.router.app import Principal
from gsmcpd.wire import jsonrpc

log = logging.getLogger("gsmcpd.auth")

JSON = ("Content-Type", "application/json")

def one_account_warning(euid: int, account: str) -> str:
    """What a daemon without MCP_USER_MAP says at start: every user's code shares its account."""
    who = "root" if euid == 0 else account
    return (f"running as {who} without MCP_USER_MAP: every authenticated user's worker runs as "
            f"{who}, so a user allowed to write can run code as that account (read this log, the "
            f"state directory and the TLS key; signal its processes); on a shared host map each "
            f"user to their own account (MCP_USER_MAP)")


def forbid(conn, refusal, request_id=None):
    """Answer a user who gets no local account (AccountRefused) 403, saying only its reason."""
    conn.respond(403, [JSON], jsonrpc.dumps(jsonrpc.error(
        request_id, jsonrpc.INVALID_REQUEST, "Forbidden: " + refusal.reason)))


def ends_or_cancels(request):
    """Whether `request` is a DELETE, or a POST of notifications/cancelled; a POST's head,
    its body still to come (None), passes to be read and judged whole."""
    if request.method == "DELETE":
        return True
    if request.method != "POST":
        return False
    if request.body is None:
        return True
    try:
        message = jsonrpc.parse(jsonrpc.without_bom(request.body))
    except jsonrpc.JsonRpcError:
        return False
    return message.kind == "notification" and message.method == "notifications/cancelled"


class AuthGate:
    def __init__(self, router):
        self.router = router
        self.loop = router.loop
        config = router.config
        self.readonly = config.readonly
        self.settings = settings_from_config(config)
        unreachable = unreachable_resource_warning(config, self.settings.resource)
        if unreachable:
            log.warning("%s", unreachable)
        self.keys = KeySource.from_settings(self.settings, post=self.loop.call_soon_threadsafe,
                                            call_later=self.loop.call_later)
        self.accounts = None
        # Counts the reloads of MCP_USER_MAP: an account resolved under the current count
        # needs no second lookup as its session starts (readmit).
        self.map_generation = 0
        if not config.user_map:
            log.warning("%s", one_account_warning(os.geteuid(), getpass.getuser()))
        if config.user_map:
            if os.geteuid() != 0:
                log.warning("MCP_USER_MAP is set but the daemon is not root: workers run as this user")
            else:
                user_map, problem = read_user_map_setting(config.user_map)   # read once
                if problem:   # a refusal of the configuration: one line naming the knob
                    raise StartRefused(f"user_map: {problem}")
                self.accounts = AccountResolver(user_map)
                # Else the administrator hears of such a line only when its user comes.
                for warning in never_served_warnings(user_map):
                    log.warning("MCP_USER_MAP %s", warning)

    def reload_user_map(self, signame):
        """SIGHUP/SIGUSR1: read the MCP_USER_MAP file again, so a user is mapped, unmapped
        or moved to another account without a restart (which would end every session).
        A session whose user no longer maps to the account its worker runs as is ended:
        its worker would go on running as the old one. A map that cannot be read leaves
        the one in use."""
        setting = self.router.config.user_map
        if self.accounts is None or setting == IDENTITY_MAP:
            return   # no map in use, or none to read: identity asks the system each time
        user_map, problem = read_user_map_setting(setting)
        if problem:
            log.error("%s: user_map: %s; still using the map loaded before", signame, problem)
            return
        self.accounts = AccountResolver(user_map)
        self.map_generation += 1
        log.info("%s: MCP_USER_MAP %s reloaded: %d user(s) mapped", signame, setting, len(user_map))
        for warning in never_served_warnings(user_map):
            log.warning("MCP_USER_MAP %s", warning)
        self.router.warn_of_what_accounts_cannot_reach()
        for session in list(self.router.sessions.by_id.values()):
            changed = mapping_changed(self.accounts, session.user, session.account)
            if changed:
                log.warning("session %s, whose worker runs as account %r: %s; ending it",
                            session.short, session.account, changed)
                self.router.sessions.end(session, f"{signame}: its user's account mapping changed "
                                                  f"(MCP_USER_MAP reloaded)")

    def reload_keys(self, signame):
        """SIGHUP/SIGUSR1: fetch the signing keys again now, rate limit or not, so a key the
        IdP withdrew (a compromised one) stops verifying tokens at once, not at the periodic
        refresh up to an hour away, nor at a restart, which would end every session. A
        fetch that fails leaves the keys in use. A fetch in flight may have read the keys
        before the edit the signal announces: another follows once it ends."""
        source = self.router.config.jwks_file or self.router.config.jwks_uri or self.router.config.issuer

        def done(result):
            if result.ok:
                log.info("%s: signing keys reloaded from %s: %d key(s)", signame, source, len(self.keys.keys))
            else:
                log.error("%s: signing keys not reloaded: %s; still using the %d key(s) loaded before",
                          signame, result.error, len(self.keys.keys))

        def fetch(_earlier=None):
            self.keys.refresh(done, reported=True, rate_limited=False)
        if self.keys.in_flight:
            self.keys.refresh(fetch)
        else:
            fetch()

    def start(self):
        """Load the signing keys in the background: the loop runs meanwhile (a slow or
        dead IdP holds neither the port nor a SIGTERM), and a request with a token joins
        the load in flight, as it would join any refresh (see check)."""
        def loaded(result):
            if not result.ok:
                # Not fatal: the IdP may come up after us; requests get 401 until it does.
                log.error("could not load signing keys yet: %s", result.error)
            self._schedule_refresh()
        self.keys.refresh(loaded, reported=True)

    def _schedule_refresh(self):
        delay = max(1.0, self.keys.next_refresh_at - self.loop.now)

        def refresh():
            self.keys.refresh_if_due()
            self._schedule_refresh()
        self.loop.call_later(delay, refresh)

    # -- per request ---------------------------------------------------------
    def check(self, conn, request, then):
        result = tokens.authenticate(request.header("authorization"), self.settings, self.keys)
        if isinstance(result, tokens.NeedRefresh):
            self.keys.refresh(lambda _done: self._recheck(conn, request, then))
            return
        self._finish(conn, request, then, result)

    def _recheck(self, conn, request, then):
        if conn.closed:
            return
        # Guarded as the connection guards a request it hands over: raising here, out of
        # the key source's answer, left this client unanswered and the waiters after it too.
        conn.go_on(request, lambda: self._finish(conn, request, then, tokens.authenticate(
            request.header("authorization"), self.settings, self.keys, may_refresh=False)))

    def _finish(self, conn, request, then, result):
        if isinstance(result, tokens.Rejected):
            conn.respond(result.status, result.headers, result.body)  # carries its Content-Type
            return
        principal = result.principal
        downgrade = self._scope_below_session(request, principal)
        if downgrade is not None:
            conn.respond(downgrade.status, downgrade.headers, downgrade.body)
            return
        account = None
        if self.accounts is not None:
            try:
                account = self.accounts.resolve(principal.user)
            except AccountRefused as refusal:
                self.router.repeated.log(log, logging.WARNING, "%s: refused" % refusal)
                forbid(conn, refusal)
                return
        # exp as the router uses it: when this credential stops being accepted
        then(conn, request, Principal(principal.user, principal.read_only or self.readonly,
                                      exp=principal.exp + self.settings.leeway, account=account,
                                      map_generation=self.map_generation))

    def readmit(self, conn, message, principal):
        """`principal` of an initialize whose worker has just come, its account resolved
        again if a SIGHUP read the map while it waited for a worker (none spare): that may
        have unmapped its user, or moved them. Its session starts on the account the map
        gives now; None once its client is answered 403. Without a reload meanwhile, the
        account resolved as it was let in stands: no second lookup (NSS) on the loop."""
        if self.accounts is None or principal.map_generation == self.map_generation:
            return principal
        try:
            account = self.accounts.resolve(principal.user)
        except AccountRefused as refusal:
            log.warning("%s: refused as its new session was to start (its account mapping changed "
                        "while it waited for a worker)", refusal)
            forbid(conn, refusal, message.get("id"))
            return None
        if account == principal.account:
            return principal
        log.info("user %s now maps to account %r: its new session, which waited for a worker, runs as it",
                 named(principal.user), account)
        return Principal(principal.user, principal.read_only, exp=principal.exp, account=account,
                         map_generation=self.map_generation)

    def _scope_below_session(self, request, principal):
        """A read-write session was opened with the write scope; a token without it
        may not drive that session (it would act with rights it was not granted). Ending
        it, or cancelling its call, grants nothing: its user may, with any valid token."""
        write_scope = self.settings.write_scope
        if write_scope is None or not principal.read_only:
            return None
        session = self.router.sessions.by_id.get(request.header("mcp-session-id") or "")
        if session is None or session.read_only or session.user != principal.user or ends_or_cancels(request):
            return None
        self.router.repeated.log(log, logging.INFO, "user %s sent a token without %s to read-write session %s: "
                                 "answered 403" % (named(principal.user), write_scope, session.short))
        return tokens.insufficient_scope(self.settings, principal.scopes, [write_scope])

    def owns_session(self, session, principal):
        if session.user == principal.user:
            return True
        self.router.repeated.log(log, logging.WARNING, "user %s presented session %s of another user: "
                                 "answered 404" % (named(principal.user), session.short))
        return False

    def serve_metadata(self, conn, request):
        if request.path not in self.settings.metadata_paths:
            conn.respond(404, [("Content-Type", "text/plain")], b"not found\n")
        elif request.method not in ("GET", "HEAD"):   # HEAD: the head alone (Connection.respond)
            conn.respond(405, [("Allow", "GET, HEAD, OPTIONS"), ("Content-Type", "text/plain")],
                         b"method not allowed: the metadata is read with GET\n")
        else:
            conn.respond(200, [JSON, ("Cache-Control", "max-age=3600")], self.settings.metadata_body)
