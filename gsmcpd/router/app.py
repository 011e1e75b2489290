"""Routing and gates for one HTTP request: the Streamable HTTP transport on /mcp.

Order matters and is the seed's: trace first (so refused requests are traced too),
then Host and Origin (DNS rebinding), then credentials, then the method, a POST's
Content-Type, the protocol-version header and the session. Only then does a message
reach a session.

The gates that need no body run on a head whose body is still to come too
(handle_head), the same code in the same order: a request they refuse is answered
before its body is read, so an unauthenticated client cannot make the router buffer one.
"""

import functools
import logging

from gsmcpd import protocol
from gsmcpd.router.cors import Cors
from gsmcpd.router.peers import LocalClients
from gsmcpd.router.sessions import asks_all_tools
from gsmcpd.wire import hosts, jsonrpc

log = logging.getLogger("gsmcpd.app")

JSON = ("Content-Type", "application/json")
MCP_PATH = "/mcp"
MCP_METHODS = "GET, POST, DELETE"
METADATA_PATH = "/.well-known/oauth-protected-resource"


class Principal:
    """Who is asking. Without auth, the daemon's own user, read-only as configured."""

    __slots__ = ("user", "read_only", "exp", "account", "map_generation")

    # exp: epoch seconds after which the credential is no longer accepted (None: never);
    # map_generation: AuthGate.map_generation when `account` was resolved (None: unknown)
    def __init__(self, user, read_only, exp=None, account=None, map_generation=None):
        self.user = user
        self.read_only = read_only
        self.exp = exp
        self.account = account
        self.map_generation = map_generation


@functools.lru_cache(maxsize=64)   # the host's accounts, a few; nothing changes a Principal once made
def local_principal(account, read_only):
    """Without auth, the Principal of a client of local `account`: one per account, not per request."""
    return Principal(account, read_only)


def error_body(code, message, id=None):
    return jsonrpc.dumps(jsonrpc.error(id, code, message))


# The spec's 404 for an ended session: the client is to start anew, so say so, as the
# router no longer knows why it ended (and an SDK shows this message to its caller).
SESSION_NOT_FOUND_MESSAGE = (
    "Session not found: it has ended (DELETE, reaped, its worker gone, or the server restarted) or "
    "never existed; initialize a new session, without MCP-Session-Id")
# A client that skipped initialize (a curl session's second command, say) learns how to get one.
MISSING_SESSION_ID_MESSAGE = (
    "Bad Request: missing MCP-Session-Id header; a session begins with initialize (sent without "
    "it), whose response's MCP-Session-Id header every later request echoes")
SESSION_NOT_FOUND = error_body(jsonrpc.INVALID_REQUEST, SESSION_NOT_FOUND_MESSAGE)   # no request id to bear


def sessions_count(n):
    return "1 session" if n == 1 else "%d sessions" % n


def accepts(request, media_type):
    accept = request.fields.get("accept")
    return bool(accept) and _accept_lists(accept, media_type)


@functools.lru_cache(maxsize=256)  # clients repeat their Accept header on every request
def _accept_lists(accept, media_type):
    # The most specific matching range decides, and q=0 there means "not acceptable"
    # (RFC 9110 12.4.2, 12.5.1): "text/event-stream;q=0, */*" refuses SSE.
    ranges = (media_type, media_type.split("/")[0] + "/*", "*/*")
    verdicts = {}
    for part in accept.split(","):
        kind, *params = part.split(";")
        kind = kind.strip().lower()
        if kind in ranges:
            verdicts.setdefault(ranges.index(kind), not any(_is_q_zero(p) for p in params))
    return bool(verdicts) and verdicts[min(verdicts)]


def content_type_refusal(content_type):
    """None if a POSTed body is declared JSON, else why not: the answer's message (asked
    of a browser's POST only: App._is_json).

    A browser page may POST without a preflight only as text/plain, a form type or no
    type at all (a Blob or ArrayBuffer body), so refusing those keeps an unlisted page from
    opening sessions it cannot read; a JSON type needs the preflight the CORS gate refuses."""
    if content_type is None:
        return ("Unsupported Media Type: POST needs Content-Type: application/json "
                "(the request sent no Content-Type)")
    media_type, *params = content_type.split(";")
    if media_type.strip().lower() != "application/json":
        return ("Unsupported Media Type: Content-Type '%s' is not application/json; "
                "send Content-Type: application/json" % jsonrpc.echoed(content_type, header=True))
    for param in params:
        name, _, value = param.partition("=")
        charset = value.strip().strip('"').lower()
        if name.strip().lower() == "charset" and charset != "utf-8":
            return ("Unsupported Media Type: charset '%s' in Content-Type; a JSON-RPC message is "
                    "UTF-8: send Content-Type: application/json (charset=utf-8, or no charset)"
                    % jsonrpc.echoed(value.strip(), header=True))
    return None


def _is_q_zero(param):
    name, _, value = param.partition("=")
    if name.strip().lower() != "q":
        return False
    try:
        return float(value.strip()) == 0
    except ValueError:   # a malformed weight is ignored, as before
        return False


class App:
    def __init__(self, router):
        self.router = router
        self.config = router.config
        self.sessions = router.sessions
        cors = Cors(self.config.allowed_origins)
        self.listed_hosts = cors.listed_hosts   # besides loopback's (hosts.is_loopback)
        self.cors = cors or None   # None when nothing is listed: one test per request, no call
        self.check_host = self.router.bound_to_loopback
        # Without auth nothing but the account tells clients apart (router/peers.py).
        self.local_clients = (LocalClients(own_only=self.config.local_clients == "own")
                              if self.router.auth is None else None)

    def close(self):
        if self.local_clients is not None:
            self.local_clients.close()

    def admit(self, sock):
        """At accept: (the local account the client's sessions are shown as, None with auth;
        None or why every request of this connection is refused: LocalClients.admit)."""
        return self.local_clients.admit(sock) if self.local_clients is not None else (None, None)

    # -- entry -------------------------------------------------------------
    def handle_head(self, conn, head):
        """A head whose body is still to come (head.body is None): answered now when the
        body would change nothing (a refusal, a preflight, the metadata), which closes the
        connection; else conn.read_body(), and the whole request comes to handle()."""
        self.handle(conn, head, self._mcp_head)

    def handle(self, conn, request, mcp=None):
        """One request: the gates and answers that need no body, then
        `mcp(conn, request, principal)` takes an authenticated /mcp request on."""
        if mcp is None:   # a whole request (a head is traced with its body, once it is read)
            self.router.trace_inbound(request)
            mcp = self._handle_mcp
        if self.cors:   # on every reply the app makes, refusals included (a listed page reads them)
            conn.reply_headers = self.cors.reply_headers(request.fields.get("origin"))
        if self.router.stopping and not self._may_shorten_the_stop(request):
            self._refuse_stopping(conn)
            return
        refusal = self._gate_host_origin(request)
        if refusal:
            status, message = refusal
            conn.respond(status, [JSON], error_body(jsonrpc.INVALID_REQUEST, message))
            return
        if conn.account_refusal is not None:
            conn.respond(403, [JSON], error_body(jsonrpc.INVALID_REQUEST, conn.account_refusal))
            return
        if request.path == MCP_PATH:
            if request.method == "OPTIONS":   # a preflight carries no credentials
                self._options(conn, request, MCP_METHODS)
            else:
                self.router.authenticate(conn, request, mcp)
        elif request.path == "*":   # OPTIONS * (the parser takes * for no other method): the server as a whole
            self._options(conn, request, MCP_METHODS)
        elif request.path == METADATA_PATH or request.path.startswith(METADATA_PATH + "/"):
            if request.method == "OPTIONS" and self.router.auth is not None:   # else 404, as for GET
                self._options(conn, request, "GET")
            else:
                self.router.serve_metadata(conn, request)
        else:
            conn.respond(404, [("Content-Type", "text/plain")], b"not found: the MCP endpoint is /mcp\n")

    def _may_shorten_the_stop(self, request):
        """During a stop's grace, calls still in flight: a DELETE, or a POST that may be a
        notifications/cancelled (_post_message refuses any other), goes on to the gates.
        Each ends a session or a call sooner, and so the stop."""
        return (bool(self.sessions.by_id) and request.path == MCP_PATH
                and request.method in ("DELETE", "POST"))

    @staticmethod
    def _refuse_stopping(conn, id=None):
        conn.respond(503, [JSON, ("Retry-After", "5")],
                     error_body(jsonrpc.INTERNAL_ERROR, "Service Unavailable: the server is shutting down", id),
                     keep_alive=False)

    def _gate_host_origin(self, request):
        """None, or (status, message): a malformed Host, or a foreign Origin or Host (DNS rebinding)."""
        origin = request.fields.get("origin")
        if origin is not None:
            parsed = hosts.origin(origin)
            if parsed is None and origin != "null":   # listing it would not help: say what is wrong
                return 403, ("Forbidden: malformed Origin '%s' (an origin is scheme://host[:port], "
                             "the host ASCII, the port 1-65535)" % jsonrpc.echoed(origin, header=True))
            if parsed is None or not self._allowed_host(parsed[0]):
                return 403, ("Forbidden: Origin '%s' is not allowed (a browser app's origin is "
                             "let in by listing it in GS_MCP_ALLOWED_ORIGINS)" % jsonrpc.echoed(origin, header=True))
        what, host = "Host header", request.fields.get("host")
        if request.target[:1] != "/":   # absolute-form: its authority replaces Host (RFC 9112 3.2.2)
            authority = hosts.absolute_authority(request.target)
            if authority is not None:
                what, host = "request target host", authority
        if host is not None:
            parsed = hosts.authority(host)
            if parsed is None:   # RFC 9112 3.2: an invalid Host is a bad request
                return 400, "Bad Request: malformed %s '%s'" % (what, jsonrpc.echoed(host, header=True))
            if not parsed[0] and what == "request target host":   # RFC 9110 4.2.1: MUST be rejected
                return 400, ("Bad Request: malformed request target host '%s': an http(s) URL names a host"
                             % jsonrpc.echoed(host, header=True))
            if self.check_host and not self._allowed_host(parsed[0]):
                return 403, ("Forbidden: %s '%s' is not this server (a name a proxy in front "
                             "passes is accepted once listed in GS_MCP_ALLOWED_ORIGINS)"
                             % (what, jsonrpc.echoed(host, header=True)))
        return None

    def _allowed_host(self, host):
        """Whether an Origin's or a Host's host (as hosts.authority() gives it) passes the
        gates: loopback, as the configuration's check reads it, or listed."""
        return host in self.listed_hosts or hosts.is_loopback(host)

    def _options(self, conn, request, methods):
        """A CORS preflight (Origin and Access-Control-Request-Method), granted to the
        listed origins only; any other OPTIONS gets the methods this path has."""
        origin = request.fields.get("origin")
        if origin is None or request.fields.get("access-control-request-method") is None:
            conn.respond(204, [("Allow", methods + ", OPTIONS")])
        elif self.cors is not None and self.cors.allows(origin):
            private = (request.fields.get("access-control-request-private-network") or "").lower() == "true"
            conn.respond(204, self.cors.preflight_headers(
                methods, request.fields.get("access-control-request-headers"), private))
        else:
            conn.respond(403, [JSON], error_body(
                jsonrpc.INVALID_REQUEST, "Forbidden: cross-origin requests from '%s' are not enabled; "
                "list the origin in GS_MCP_ALLOWED_ORIGINS" % jsonrpc.echoed(origin, header=True)))

    def _handle_mcp(self, conn, request, principal):
        method = request.method
        if method == "POST":
            if self._is_json(conn, request):
                self._post(conn, request, principal)
        elif method == "GET":
            session = self._stream_session(conn, request, principal)
            if session is not None:
                self._get(conn, session, principal)
        elif method == "DELETE":
            session = self._session(conn, request, principal)
            if session is not None:
                self._delete(conn, session)
        else:
            self._method_not_allowed(conn, method)

    def _mcp_head(self, conn, head, principal):
        """_handle_mcp's gates for a head, its body still to come: what passes them is
        read whole. A POST's other gates need its body (initialize or not, which session)."""
        method = head.method
        if method == "POST":
            if self._is_json(conn, head):
                conn.read_body()
        elif method == "GET":
            if self._stream_session(conn, head, principal) is not None:
                conn.read_body()
        elif method == "DELETE":
            if self._session(conn, head, principal) is not None:
                conn.read_body()
        else:
            self._method_not_allowed(conn, method)

    @staticmethod
    def _is_json(conn, request):
        """A browser's POST's Content-Type gate: True, or False after answering 415. Only a
        request with an Origin is a browser's (a browser sends one with every POST), and
        only a browser's unpreflighted POST is the risk; curl and the SDKs send none, and
        the seed's own `curl -d` sends a form type."""
        if request.fields.get("origin") is None:
            return True
        refusal = content_type_refusal(request.fields.get("content-type"))
        if refusal:
            conn.respond(415, [JSON], error_body(jsonrpc.INVALID_REQUEST, refusal))
            return False
        return True

    def _method_not_allowed(self, conn, method):
        conn.respond(405, [("Allow", MCP_METHODS + ", OPTIONS"), JSON],
                     error_body(jsonrpc.INVALID_REQUEST, "Method not allowed: %s" % jsonrpc.echoed(method)))

    # -- gates shared by every verb ----------------------------------------
    def _version_refusal(self, request):
        version = request.fields.get("mcp-protocol-version")
        if version is not None and version not in protocol.SUPPORTED_VERSIONS:
            return "Bad Request: unsupported MCP-Protocol-Version '%s' (supported: %s)" % (
                jsonrpc.echoed(version, header=True), ", ".join(protocol.SUPPORTED_VERSIONS))
        return None

    def _owned_session(self, sid, principal):
        """The live session `sid` names if it is this principal's, else None (ended, never
        was, or another user's: all alike to this client)."""
        session = self.sessions.by_id.get(sid)
        return session if session is not None and self.router.owns_session(session, principal) else None

    def _session(self, conn, request, principal, id=None):
        """The session named by the header, or None after answering 400/404, the error
        bearing `id`: a POSTed request's (JSON-RPC: null only when it could not be read)."""
        sid = request.fields.get("mcp-session-id")
        if not sid:
            conn.respond(400, [JSON], error_body(
                jsonrpc.INVALID_REQUEST, MISSING_SESSION_ID_MESSAGE, id))
            return None
        session = self._owned_session(sid, principal)
        if session is None:
            conn.respond(404, [JSON], error_body(jsonrpc.INVALID_REQUEST, SESSION_NOT_FOUND_MESSAGE, id))
            return None
        refusal = self._version_refusal(request)
        if refusal:
            conn.respond(400, [JSON], error_body(jsonrpc.INVALID_REQUEST, refusal, id))
            return None
        return session

    # -- verbs -------------------------------------------------------------
    def _post(self, conn, request, principal):
        if len(request.body) <= jsonrpc.BIG_MESSAGE:
            self._post_message(conn, request, principal)
            return
        # What is kept of the message parsed here is what the router reads of it (sessions.
        # what_the_router_reads), so the tree is freed by the end.
        with jsonrpc.collector_paused():
            self._post_message(conn, request, principal)

    def _post_message(self, conn, request, principal):
        body = jsonrpc.without_bom(request.body)
        try:
            message = jsonrpc.parse(body)
        except jsonrpc.JsonRpcError as exc:
            log.debug("POST refused, 400: %s", exc.message)   # the client is told; the log only if asked
            conn.respond(400, [JSON], jsonrpc.dumps(exc.response()))
            return
        if self.router.stopping and not (message.kind == "notification"
                                         and message.method == "notifications/cancelled"):
            self._refuse_stopping(conn, message.id if message.kind == "request" else None)
            return
        accepts_sse = accepts(request, "text/event-stream")
        if message.kind == "request" and message.method == "initialize":
            sid = request.fields.get("mcp-session-id")
            if sid:
                # MCP: an ended session's id gets 404 on every request, initialize too, and the
                # client re-initializes without it (the answer says so). A live one began with
                # its own initialize: this one would open a second session beside it.
                if self._owned_session(sid, principal) is None:
                    conn.respond(404, [JSON], error_body(
                        jsonrpc.INVALID_REQUEST, SESSION_NOT_FOUND_MESSAGE, message.id))
                else:
                    conn.respond(400, [JSON], error_body(jsonrpc.INVALID_REQUEST, (
                        "Invalid Request: the session MCP-Session-Id names is already initialized; "
                        "to open another, send initialize without MCP-Session-Id"), message.id))
                return
            refusal = self._version_refusal(request)
            if refusal:
                conn.respond(400, [JSON], error_body(jsonrpc.INVALID_REQUEST, refusal, message.id))
                return
            if len(self.sessions.by_id) + self.sessions.opening >= self.config.max_sessions:
                conn.respond(503, [JSON, ("Retry-After", "5")], error_body(
                    jsonrpc.INTERNAL_ERROR, "Service Unavailable: %s open or opening, the configured "
                    "maximum (GS_MCP_MAX_SESSIONS)" % sessions_count(self.config.max_sessions), message.id))
                return
            per_user = self.config.max_sessions_per_user
            if per_user is not None and self.sessions.sessions_of(principal.user) >= per_user:
                # No Retry-After: waiting frees nothing unless the user's own sessions end.
                conn.respond(429, [JSON], error_body(
                    jsonrpc.INVALID_REQUEST, "Too Many Requests: %s has %s open or opening, the "
                    "configured maximum per user (GS_MCP_MAX_SESSIONS_PER_USER); end one with DELETE, or "
                    "let an idle one be reaped" % (principal.user, sessions_count(per_user)), message.id))
                return
            self.sessions.open(conn, request, message.raw, body, accepts_sse, principal)
            return
        session = self._session(conn, request, principal, message.id if message.kind == "request" else None)
        if session is None:
            return
        session.last_activity = self.router.loop.now
        if message.kind != "response":
            self.router.supervisor.request_arrived(session)
        if message.kind == "response":
            self.router.client_response(session, message.raw)
            conn.respond(202)
        elif message.kind == "notification":
            if message.method == "notifications/cancelled":
                params = message.params or {}
                self.sessions.cancel(session, params.get("requestId"))
            conn.respond(202)
        elif message.id in session.ids_in_use:
            # Before ping and tools/list, which the router answers at once bearing the id too.
            self.sessions.refuse_reused_id(session, conn, message.id)
        elif message.method == "ping":
            conn.respond(200, [JSON], jsonrpc.dumps(jsonrpc.result(message.id, {})))
        elif session.tools_listed is not None and asks_all_tools(message.method, message.params):
            # Never behind a running call: the MCP SDK lists tools after a call's result
            # to check it against the tool's outputSchema.
            conn.respond(200, [JSON], jsonrpc.dumps(jsonrpc.result(message.id, session.tools_listed)))
        else:
            self.sessions.submit(session, conn, message.raw, body, accepts_sse)

    def _stream_session(self, conn, request, principal):
        """A GET's gates: the session its stream is for, or None after answering 406/400/404."""
        if not accepts(request, "text/event-stream"):
            conn.respond(406, [JSON], error_body(jsonrpc.INVALID_REQUEST,
                                                 "Not Acceptable: GET needs Accept: text/event-stream"))
            return None
        return self._session(conn, request, principal)

    def _get(self, conn, session, principal):
        self.router.attach_stream(session, conn)
        if (principal.exp is not None and session.stream is conn
                and self.config.token_expiry == "end-stream"):
            self.router.supervisor.end_stream_at(session, conn, principal.exp)

    def _delete(self, conn, session):
        self.sessions.end(session, "client sent DELETE")
        conn.respond(200, [JSON], b"{}")
