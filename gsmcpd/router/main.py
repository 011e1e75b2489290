"""The router process: listen, accept, and tie connections, sessions and workers together.

`serve(config)` runs it in the foreground until SIGTERM/SIGINT. It never runs a tool
and never blocks: every socket is non-blocking on one selector (router.loop), and
everything time-based is a timer on that loop.
"""

import errno
import functools
import getpass
import logging
import os
import resource
import signal
import socket
import sys
import tempfile
from pathlib import Path

from gsmcpd.exitcodes import FAILED, StartRefused, of_os_error
from gsmcpd.router import trace
from gsmcpd.router.app import App, local_principal
from gsmcpd.router.control_endpoint import ControlEndpoint
from gsmcpd.router.connection import Connection, drop_arrived
from gsmcpd.router.loop import ACCEPT_PAUSE, Loop, send_some
from gsmcpd.router.repeats import RepeatedLog
from gsmcpd.router.sessions import SessionManager
from gsmcpd.router.shutdown import Shutdown
from gsmcpd.router.supervision import Supervisor
from gsmcpd.router.workers import SpawnerNotStarted, WorkerPool, free_descriptors
from gsmcpd.wire import hosts, http, jsonrpc
from gsmcpd.worker.environment import unused_list_warning
from gsmcpd.worker.tmpdirs import DaemonTmp, check_temp_dir, passed_over_warning, unreachable_warnings

log = logging.getLogger("gsmcpd.router")
trace_log = logging.getLogger("gsmcpd.trace")


def _unavailable(message):
    """A 503 that ends its connection, `message` as a JSON-RPC error an MCP client shows."""
    body = jsonrpc.dumps(jsonrpc.error(None, jsonrpc.INTERNAL_ERROR, "Service Unavailable: " + message))
    return http.response(503, [("Content-Type", "application/json"), ("Retry-After", "1")], body,
                         keep_alive=False)


def connections_full_response(limit):
    """What a connection beyond GS_MCP_MAX_CONNECTIONS is sent before it is closed."""
    return _unavailable("%d client connections open, the configured maximum (GS_MCP_MAX_CONNECTIONS)" % limit)


def closed_unfinished_response(why, seconds):
    """What a connection closed for room mid-request (Router._evict_idlest) is sent."""
    return _unavailable("connection closed to make room (%s) while this request was still unfinished "
                        "after %.0fs, the longest of any" % (why, seconds))


def raise_descriptor_limit():
    """Each session holds two descriptors here (its frame socket and the worker's
    sentinel) besides its clients' connections: take the whole hard limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = hard if hard != resource.RLIM_INFINITY else 1 << 20
    if soft != resource.RLIM_INFINITY and soft < want:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
        except (ValueError, OSError) as exc:
            log.warning("could not raise the descriptor limit from %d: %s", soft, exc)
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def _session_id_sent(request):
    """The MCP-Session-Id header as the client wrote it, for the trace (None: none)."""
    sid = request.header("mcp-session-id")
    return None if sid is None else jsonrpc.echoed(sid, header=True)


_EVICTED_AS = ("lingering", "idle", "mid-request")   # by Connection.eviction_order's rank


class Router:
    def __init__(self, config, tmp=None):
        self.config = config
        self.loop = Loop(poll=config.poll_us / 1e6)
        # The log lines a client's request alone causes: a client looping on one cannot flood the log.
        self.repeated = RepeatedLog(self.loop)
        self.auth = None
        if config.auth:
            from gsmcpd.router.authgate import AuthGate

            self.auth = AuthGate(self)
        # Workers switched to users' accounts keep only an allow-listed environment
        # (gsmcpd.worker.environment); the daemon's own account's keep all of it.
        self.per_user = per_user = self.auth is not None and self.auth.accounts is not None
        unused = unused_list_warning(config.worker_env, per_user)
        if unused:
            log.warning("%s", unused)
        # The daemon's TMPDIR, which per-user workers' accounts must reach; None: not so.
        self.shared_tmp_parent = None
        if per_user and tmp is not None:
            tmp.share()
            self.shared_tmp_parent = tmp.parent
        if per_user:
            self.warn_of_what_accounts_cannot_reach()
        self.pool = WorkerPool(self.loop, config.spare_workers, worker_nice=config.worker_nice,
                               worker_memory=config.worker_memory,
                               worker_env=config.worker_env if per_user else None,
                               tmp_dir=None if tmp is None else tmp.path)
        self.pool.make_room = self._make_room_for_workers
        self.sessions = SessionManager(self)
        self.loop.may_poll = self.sessions.may_poll
        self.supervisor = Supervisor(self)
        self.bound_to_loopback = hosts.is_loopback(config.host)
        self.app = App(self)
        self.connections = set()
        self._connections_full = connections_full_response(config.max_connections)
        self._refusing_connections = False   # logged once per spell at the cap
        self._evicting_connections = False   # likewise
        self.listener = None
        self.port = None
        self.stopping = False
        self._shutdown = None
        self.exit_code = 0
        self.user = getpass.getuser()
        self.image = None
        self.on_stopping = None
        self.control = None
        self._trace_in = config.trace in ("inbound", "both")
        self._trace_out = config.trace == "both"
        self.ssl_context = None
        if config.tls_cert:
            from gsmcpd.auth.tls import TlsError, pair_warnings, server_context

            try:
                self.ssl_context = server_context(config.tls_cert, config.tls_key)
            except TlsError as exc:   # a refusal of the configuration: one line, no traceback
                raise StartRefused(f"tls_cert/tls_key: {exc}") from None
            for warning in pair_warnings(config.tls_cert, config.tls_key):
                log.warning("%s", warning)

    def warn_of_what_accounts_cannot_reach(self):
        """At start, and as a reload may map new accounts: each directory on the way to
        the daemon's TMPDIR, or to its python, that stops mapped accounts. Else the
        administrator hears of it only as each such user's session open fails, or as
        their deletions note that the trial import was not tried."""
        from gsmcpd.auth.usermap import accounts_served
        from gsmcpd.worker.python_reach import unrunnable_python_warnings

        accounts = accounts_served(self.auth.accounts.user_map)
        if self.shared_tmp_parent is not None:
            for warning in unreachable_warnings(self.shared_tmp_parent, accounts):
                log.warning("%s", warning)
        for warning in unrunnable_python_warnings(sys.executable, accounts):
            log.warning("%s", warning)

    def close(self):
        """Release the loop and the account gate's netlink socket."""
        self.app.close()
        self.loop.close()

    # -- startup -----------------------------------------------------------
    def bind(self):
        family = socket.AF_INET6 if ":" in self.config.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.config.host, self.config.port))
        sock.listen(1024)
        sock.setblocking(False)
        self.listener = sock
        self.port = sock.getsockname()[1]
        self.loop.add_reader(sock, self._accept)

    def prepare_image(self):
        from gsmcpd.image import default

        state_dir = Path(self.config.state_dir)
        image = Path(self.config.image) if self.config.image else state_dir / "image"
        if image == state_dir / "image":
            image = default.ensure_default_image(state_dir)
        problem = default.image_dir_problem(image, per_user=self.per_user)
        if problem:
            raise StartRefused("image %s %s" % (image, problem))
        shut_out = default.not_setgid_warning(image) if self.per_user else None
        if shut_out:
            log.warning("%s", shut_out)
        self.image = str(image.absolute())
        self.recover_image(image)

    def recover_image(self, image, wait=True):
        """Snapshots read a commit killed past its commit point as finished; on disk
        it is finished by the next commit, or here (at start and at stop), so other
        tools see it too. Temp files of commits killed before that point go here too.
        `wait=False` (at stop): a lock another process holds leaves it to them."""
        from gsmcpd.image.store import ImageStore

        store = ImageStore(image, self.config.image_lock_wait, self.config.journal_limit)
        if not store.state_dir.is_dir():
            return  # never committed to: nothing to finish or tidy
        try:
            try:
                finished = store.recover(wait)
            except PermissionError:
                if not self.per_user or store.state_dir.stat().st_uid == os.geteuid():
                    raise   # no other account to ask
                # Root without CAP_DAC_OVERRIDE (the per-user drop-in) and a state directory
                # a user's commit made: its owner's account may write it, as its commits do.
                from gsmcpd.image.recover_as import recover_as_owner
                finished = recover_as_owner(image, lambda: ImageStore(
                    image, self.config.image_lock_wait, self.config.journal_limit).recover(wait))
            if finished:
                log.warning("finished a commit to %s that was interrupted", image)
        except (OSError, ValueError) as exc:
            log.warning("cannot finish or tidy commits to %s now (the next commit will): %s", image, exc)

    # -- connections -------------------------------------------------------
    def _accept(self):
        made_room = False   # descriptors ran out and a connection was closed for this accept
        for attempt in range(64):  # bounded, so a connection storm cannot starve timers
            try:
                sock, peer = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                if exc.errno == errno.EMFILE:
                    # Linux fails accept() for want of a descriptor before it looks at
                    # the backlog, so only the first attempt, made because the listener
                    # polled readable, surely has a client waiting. For it a lingering
                    # or idle connection makes room, as at GS_MCP_MAX_CONNECTIONS (the
                    # descriptor limit may be below it). Later, a client still waiting
                    # keeps the listener readable, and the loop calls again. (Not for
                    # ENFILE: a descriptor freed then may go to any process.)
                    if attempt > 0 and not made_room:
                        return
                    if not made_room and self._evict_idlest("a connection waiting", "out of file descriptors"):
                        made_room = True
                        continue
                # Else the listener stays readable: stop watching it for a moment
                # rather than spin on it.
                log.warning("accept failed: %s; pausing accepts for %gs", exc, ACCEPT_PAUSE)
                self.loop.pause_reader(self.listener, self._accept, ACCEPT_PAUSE)
                return
            if len(self.connections) >= self.config.max_connections:
                if not self._evict_idlest(peer, "GS_MCP_MAX_CONNECTIONS"):
                    self._refuse_connection(sock, peer)
                    continue
            elif (self._refusing_connections or self._evicting_connections) and not made_room:
                self._refusing_connections = self._evicting_connections = False
                log.info("accepting connections again: %d open", len(self.connections))
            made_room = False
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn = Connection(self, sock, peer, tls=self.new_tls())
            conn.client_account, conn.account_refusal = self.app.admit(sock)
            self.connections.add(conn)
            conn.read_arrived()

    def _evict_idlest(self, peer, why, log_spell=True):
        """At the cap, or out of descriptors (`why`, for the log), make room for a new
        connection by closing one that is lingering (its last reply written), else the
        one idle longest (waiting between requests: not answering, streaming, or reading
        one), else the one whose request no gate has passed has been arriving longest
        (Connection.eviction_order). Connections held open, silent or trickling a request
        begun, cannot then lock everyone else out: each costs its sender no credential,
        and reconnecting renewed its read timeout. False when none is any of these. The
        scan is linear, and runs only at the cap or out of descriptors."""
        passed_over = set()
        while True:
            chosen, order = None, None
            for conn in self.connections:
                rank = conn.eviction_order()
                if rank is not None and (order is None or rank < order) and conn not in passed_over:
                    chosen, order = conn, rank
            if chosen is None:
                return False
            if order[0] == 1 and chosen.has_unread_input():
                # Its next request came since the loop last polled it: closed unread,
                # its client would get a reset. The loop reads it this pass; it is not
                # read here, where its request could ask for room again.
                passed_over.add(chosen)
                continue
            waited = self.loop.now - order[1]
            if log_spell and not self._evicting_connections:
                self._evicting_connections = True
                log.warning("%d client connections open, %s: closing a lingering one, else the one idle "
                            "longest, else the one whose unfinished request has been arriving longest, to "
                            "admit each new one (first: %s %s %.0fs, for %s)",
                            len(self.connections), why, chosen.peer, _EVICTED_AS[order[0]], waited, peer)
            if order[0] == 2:
                chosen.close_unfinished(closed_unfinished_response(why, waited))
            else:
                chosen.close()
            return True

    def _make_room_for_workers(self, needed):
        """Close client connections as _evict_idlest chooses them (lingering, idle, then
        mid-request unauthenticated), as many as descriptors are short (each frees one),
        until `needed` descriptors are free for the workers a waiting session open needs:
        connections held open between requests, or trickling one, must not lock new
        sessions out (their clients reconnect, their sessions untouched). True once they
        are free; False with none left to close."""
        closed = 0
        while (short := needed - free_descriptors(needed)) > 0:
            evicted = 0
            while evicted < short and self._evict_idlest("a new session's worker", "out of file descriptors",
                                                         log_spell=False):
                evicted += 1
            if not evicted:
                break
            closed += evicted
        if closed:
            log.warning("out of file descriptors for the worker of a new session: closed %d lingering, idle or "
                        "mid-request client connection(s)", closed)
        return short <= 0

    def _refuse_connection(self, sock, peer):
        """At the cap with none to close (every one answering, streaming or reading a
        body its gates let in), a new connection is told so and closed at once: the
        connections open (the sessions they serve) are untouched, and the client learns
        why, where a listener left unwatched would leave it hanging in the backlog."""
        if not self._refusing_connections:
            self._refusing_connections = True
            log.warning("%d client connections open, none to close, GS_MCP_MAX_CONNECTIONS: answering new ones 503 "
                        "(first: %s)", len(self.connections), peer)
        try:
            sock.setblocking(False)
            if self.ssl_context is None:   # a TLS client could not read it before a handshake
                send_some(sock, self._connections_full)
            # What the client sent before it was accepted (its request, often) is dropped, so
            # the close does not reset the 503 away; it cannot linger (Connection._linger):
            # at the cap nothing more is held, and what comes later still meets a reset.
            sock.shutdown(socket.SHUT_WR)
            drop_arrived(sock)
        except OSError:
            pass
        sock.close()

    def reload(self, signame):
        """SIGHUP/SIGUSR1 (the log file is the caller's): the TLS pair, the signing keys
        and the user map, read again. Not the map during a stop: ending a remapped user's session then would
        kill its worker mid-call, unseen by the stop, which tidies the image only after
        the calls it cut itself. And the spawner takes the router's stdout and stderr
        again: the log's reopen may have pointed them at a new file."""
        self.pool.stdio_changed()
        self.reload_tls(signame)
        if self.auth is not None:
            self.auth.reload_keys(signame)
        if self.auth is not None and not self.stopping:
            self.auth.reload_user_map(signame)

    def reload_tls(self, signame):
        """SIGHUP/SIGUSR1: load the certificate and key again, renewed in place, for the
        connections accepted from now on (the open ones, their sessions, are untouched):
        a restart would end every session. A pair that does not load leaves the one in use."""
        if self.ssl_context is None:
            return
        from gsmcpd.auth.tls import TlsError, pair_warnings, server_context

        try:
            self.ssl_context = server_context(self.config.tls_cert, self.config.tls_key)
        except TlsError as exc:
            log.error("%s: tls_cert/tls_key: %s; still serving the pair loaded before", signame, exc)
            return
        log.info("%s: TLS certificate and key reloaded (%s)", signame, self.config.tls_cert)
        for warning in pair_warnings(self.config.tls_cert, self.config.tls_key):
            log.warning("%s: %s", signame, warning)

    def new_tls(self):
        if self.ssl_context is None:
            return None
        from gsmcpd.auth.tls import TlsConnection

        return TlsConnection(self.ssl_context)

    def connection_closed(self, conn):
        self.connections.discard(conn)

    # -- credentials (the auth gate's, when GS_MCP_AUTH is on) ---------------
    def authenticate(self, conn, request, then):
        if self.auth is None:   # the client's local account, as the kernel named it at accept
            then(conn, request, local_principal(conn.client_account or self.user, self.config.readonly))
        else:
            self.auth.check(conn, request, then)

    def readmit(self, conn, message, principal):
        """`principal` as its new session starts, its worker come (AuthGate.readmit), or
        None once its client is refused."""
        return principal if self.auth is None else self.auth.readmit(conn, message, principal)

    def owns_session(self, session, principal):
        return self.auth is None or self.auth.owns_session(session, principal)

    def serve_metadata(self, conn, request):
        if self.auth is None:
            conn.respond(404, [("Content-Type", "text/plain")], b"not found: this server does not use OAuth\n")
        else:
            self.auth.serve_metadata(conn, request)

    def session_config(self, session, principal):
        cfg = self.config
        return {
            "session_id": session.id,
            "user": session.user,
            "read_only": session.read_only,
            "toolsets": list(cfg.toolsets),
            "worker_class": cfg.worker_class,
            "server_name": cfg.server_name,
            "server_version": cfg.server_version,
            "server_title": cfg.server_title,
            "image": self.image,
            "account": principal.account,
            "image_lock_wait": cfg.image_lock_wait,
            "journal_limit": cfg.journal_limit,
        }

    # -- lifetime, deadlines, streams: the supervisor's -----------------------
    # (A call's start, end and cancel go to the supervisor straight from SessionManager:
    # twice a call, with no hop through here.)
    def attach_stream(self, session, conn):
        self.supervisor.attach_stream(session, conn)

    def push_to_stream(self, session, message):
        return self.supervisor.push(session, message)

    def client_response(self, session, message):
        self.supervisor.client_response(session, message)

    def session_opened(self, session):
        self.supervisor.session_opened(session)

    def session_ended(self, session):
        self.supervisor.session_ended(session)
        if self._shutdown is not None:
            self._shutdown.session_ended()

    def deaths_told(self):
        """Every call of a dead worker's session is answered (SessionManager.telling)."""
        if self._shutdown is not None:
            self._shutdown.session_ended()

    # -- trace -------------------------------------------------------------
    def trace_inbound(self, request):
        if self._trace_in:
            trace_log.info(trace.format_inbound(request.method, request.path, _session_id_sent(request),
                                                request.body, self.config.trace_limit))

    def trace_response(self, request, status, headers, body):
        if self._trace_out:
            sid = dict(headers).get("MCP-Session-Id") or (_session_id_sent(request) if request else None)
            trace_log.info(trace.format_outbound(status, sid, body, self.config.trace_limit))

    def trace_outbound(self, label, session_id, body):
        if self._trace_out:
            trace_log.info(trace.format_outbound(label, session_id, body, self.config.trace_limit))

    def trace_head(self, head):
        """A request answered from its head alone, its body never read (Connection.respond)."""
        if self._trace_in:
            length = head.header("content-length")   # else the parser took it as chunked
            framing = "Content-Length %s" % length if length is not None else "chunked"
            trace_log.info(trace.format_head(head.method, head.path, _session_id_sent(head), framing))

    def trace_unreadable(self, reason):
        if self._trace_in:
            trace_log.info(trace.format_unreadable(reason))

    # -- shutdown: router.shutdown's ----------------------------------------
    def shutdown(self):
        """SIGTERM/SIGINT: the graceful stop; a second one stops at once."""
        if self._shutdown is not None:
            self._shutdown.again()
            return
        self.stopping = True
        self._shutdown = Shutdown(self)
        self._shutdown.begin()


def serve(config, *, on_ready=None, on_stopping=None, on_reload=None, stop_requested=None,
          reload_requested=None):
    """Run the router in the foreground; returns the exit code.  stop_requested: whether
    a SIGTERM/SIGINT came before the loop's own handlers were set (then it stops at once);
    reload_requested: the name of a SIGHUP/SIGUSR1 that came then, or None (its reload
    is done once the loop runs)."""
    limit = raise_descriptor_limit()
    if limit < config.max_sessions * 3 + config.max_connections:
        log.warning("descriptor limit %d is low for GS_MCP_MAX_SESSIONS=%d and GS_MCP_MAX_CONNECTIONS=%d "
                    "(about 3 per session and 1 per connection)",
                    limit, config.max_sessions, config.max_connections)
    # Each worker's private TMPDIR is made in it, and removed with the worker (tmpdirs).
    try:
        check_temp_dir(tempfile.gettempdir())
        tmp = DaemonTmp()
    except OSError as exc:
        raise StartRefused(f"cannot make the workers' temporary directory in "
                           f"{exc.filename or 'the temp dir'}: {exc.strerror or exc} (TMPDIR)",
                           of_os_error(exc)) from None
    try:   # from here on, the daemon's directory goes with the daemon, however it ends
        passed_over = passed_over_warning(tmp.parent)   # the TMPDIR asked for, before hold_multiprocessing's
        tmp.hold_multiprocessing()
        for path in tmp.swept:
            log.info("removed the temporary files an earlier run left in %s", path)
        if passed_over:
            log.warning("%s", passed_over)
        return _serve(config, tmp, on_ready, on_stopping, on_reload, stop_requested,
                      reload_requested)
    finally:
        tmp.close()   # the loop is over, its workers gone: nobody waits for this


def _serve(config, tmp, on_ready, on_stopping, on_reload, stop_requested, reload_requested):
    router = Router(config, tmp)
    router.prepare_image()
    # The spawner first (its preload and rehearsal take a moment): once the port
    # listens, sessions can open.
    try:
        router.pool.start()
    except SpawnerNotStarted as exc:   # no session could open: a start that failed, said so
        raise StartRefused(str(exc), FAILED) from None
    router.bind()
    router.on_stopping = on_stopping
    router.loop.add_signal_handler(signal.SIGTERM, router.shutdown)
    router.loop.add_signal_handler(signal.SIGINT, router.shutdown)
    if on_reload is not None:
        def reload(signame):
            if on_reload(signame):   # its log, a terminal, hung up: stop, as a foreground program does
                router.shutdown()
                return
            router.reload(signame)
        # SIGUSR1 too, as nginx takes it: a logrotate rule written for nginx's habit
        # must not end the server (USR1's default action).
        for signum in (signal.SIGHUP, signal.SIGUSR1):
            router.loop.add_signal_handler(signum, functools.partial(reload, signal.Signals(signum).name))
        held = reload_requested() if reload_requested is not None else None
        if held:
            router.loop.call_soon(functools.partial(reload, held))
    router.control = ControlEndpoint(router)
    if router.auth is not None:
        router.auth.start()
    from gsmcpd.daemon import startup_line

    log.info("%s", startup_line(config))
    log.info("%s", router.loop.describe_poll())
    if stop_requested is not None and stop_requested():   # checked once the loop has the signals
        router.loop.call_soon(router.shutdown)
    elif on_ready is not None:
        router.loop.call_soon(on_ready)
    try:
        router.loop.run()
    finally:
        router.close()
    return router.exit_code
