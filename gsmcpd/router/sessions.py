"""Sessions: the MCP-Session-Id map, each session's request queue and its call in flight.

A worker runs one call at a time, like a gem; further requests on the session wait
here, in order. Replies, progress and worker death all arrive as frames or exits on
the worker and are turned into HTTP answers on the connection each call came in on.
"""

import collections
import itertools
import json
import logging
import secrets

from gsmcpd.router import breaks
from gsmcpd.router.commit_fate import committer, tell_when_known
from gsmcpd.router.exit_status import PATIENCE
from gsmcpd.router.pacing import Pacer
from gsmcpd.router.trace import shown, shown_user
from gsmcpd.wire import frames, jsonrpc, sse, worker_exit

log = logging.getLogger("gsmcpd.sessions")

JSON = ("Content-Type", "application/json")
SSE_HEADERS = [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache")]
# What a log line shows of a worker's own reason (the user's code can send any text).
REASON_CAP = 1024
OP_CAP = 64   # and of a frame's unknown op
# and of a call's method and tool name, as the log and the control socket's in_flight
# describe the call (MCP's tool names are at most 128 characters)
CALLED_CAP = 128
# How long after a session opens or ends the loop does not poll: the replacement spare
# forks and boots, the ended worker exits (~2 ms of CPU each, longer on a busy
# machine), and a polling router would hold a CPU they need.
CHURN_QUIET = 0.02


def relayed(frame):
    """The JSON-RPC message bytes a reply/notify frame carries; None for "nothing"."""
    raw = frame.get("raw")
    if raw is None:  # a frame the worker built whole (not the relay form)
        message = frame.get("message")
        return None if message is None else jsonrpc.dumps(message)
    return None if raw.strip() == b"null" else raw


def asks_all_tools(method, params):
    """A tools/list with no cursor: what the router answers once a session's worker has
    (the list never changes in a session: its toolsets and read-only mode are fixed at
    its open, and no list_changed is announced)."""
    return method == "tools/list" and (params is None or isinstance(params, dict) and params.get("cursor") is None)


def listed_tools(body):
    """The result of a worker's answer to such a tools/list; None for an error."""
    try:
        reply = json.loads(body)
    except ValueError:
        return None
    listed = reply.get("result") if isinstance(reply, dict) else None
    return listed if isinstance(listed, dict) and isinstance(listed.get("tools"), list) else None


def what_the_router_reads(message):
    """Of a request relayed to a worker, what the router reads: its id and method, and of
    its params the tool's name, a cursor and the progress token (a container among them
    emptied, as only its type matters here). A call of a big message (jsonrpc.BIG_MESSAGE)
    waits holding this, not the parsed message: the worker gets the body as received, and
    parsed arguments take up to 25 times their bytes (each queued call of 16 MiB of `[],`
    held 400 MB of the router)."""
    view = {"id": message.get("id"), "method": message.get("method")}
    params = message.get("params")
    if isinstance(params, dict):
        view["params"] = kept = {key: _scalar(params[key]) for key in ("name", "cursor") if key in params}
        meta = params.get("_meta")
        if isinstance(meta, dict) and "progressToken" in meta:
            kept["_meta"] = {"progressToken": _scalar(meta["progressToken"])}
    return view


def kept_while_waiting(message, body):
    """What a request waiting in the router keeps of its parsed message: all of a small
    one, only what the router reads of a big one (jsonrpc.BIG_MESSAGE)."""
    return message if len(body) <= jsonrpc.BIG_MESSAGE else what_the_router_reads(message)


def _scalar(value):
    return type(value)() if isinstance(value, (dict, list)) else value


def new_session_id():
    """128 random bits, as 32 hex characters (visible ASCII, as the spec asks)."""
    return secrets.token_hex(16)


class Call:
    """One client request on its way to, through, or back from the worker."""

    __slots__ = ("seq", "message", "id", "method", "body", "conn", "accepts_sse", "streaming", "started",
                 "cancelled", "breaker", "pacer")

    def __init__(self, seq, message, body, conn, accepts_sse):
        self.seq = seq
        # parsed: what the router reads (id, method, _meta); of a big one, only that
        self.message = kept_while_waiting(message, body)
        # read once: the bookkeeping asks for them several times a call
        self.id = message.get("id")
        self.method = message.get("method")
        self.body = body  # as received: what the worker gets, never re-serialised
        self.conn = conn
        self.accepts_sse = accepts_sse
        self.streaming = False  # the reply switched to an SSE stream (progress came)
        self.started = None
        self.cancelled = False
        self.breaker = None  # deadline/cancel escalation while in flight
        self.pacer = None  # its notifications' rate bound, from the first one it sends

    @property
    def awaited(self):
        """Whether its client still waits for an answer: not cancelled, not gone."""
        return not self.cancelled and not self.conn.closed

    @property
    def progress_token(self):
        params = self.message.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        return meta.get("progressToken") if isinstance(meta, dict) else None

    def describe(self):
        """The call as a log line and the control socket's in_flight name it: its method, and
        a tools/call's tool name, each cut and escaped (trace.shown), as the client chose them:
        a 1 MB tool name went whole into both, a newline in it forging a log line."""
        params = self.message.get("params") or {}
        method = shown(self.method, CALLED_CAP)
        if self.method == "tools/call" and isinstance(params, dict):
            return "%s %s" % (method, shown(params.get("name"), CALLED_CAP))
        return method


class Session:
    def __init__(self, sid, worker, user, read_only, now, account=None):
        self.id = sid
        self.worker = worker
        self.user = user
        self.account = account  # the local account its worker runs as (MCP_USER_MAP), else None
        self.read_only = read_only
        self.created = now
        self.last_activity = now
        self.queue = collections.deque()
        self.inflight = None
        # id -> Call, of the calls in flight or waiting whose answer is still to come: a
        # request reusing one is refused (App). Bounded by the queue, unlike every id ever used.
        self.ids_in_use = {}
        self.ended = False
        self.stream = None  # the Connection carrying the standalone GET stream
        self.stream_generation = None  # its outbox generation
        self.stream_expiry = None  # the timer ending that stream when its token expires
        self.outbox = None  # server-initiated messages waiting for the stream
        self.refusing = False  # its queue was full; logged once until a call starts
        self.tools_listed = None  # the worker's tools/list result: the router answers from it
        self.draining = None  # why it ends once its call in flight is answered (shutdown)

    @property
    def short(self):
        return self.id[:8]

    def release_id(self, call):
        """`call` is answered, or will never run: its id is free for a new request. Not a
        newer call's: one answered early (cancelled, past its deadline) runs on, and a new
        request may have taken its id before it ends."""
        key = call.id
        if self.ids_in_use.get(key) is call:
            del self.ids_in_use[key]


class SessionManager:
    """Owns every session; the router and app call in, workers call back."""

    def __init__(self, router):
        self.router = router
        self.loop = router.loop
        self.config = router.config
        self.by_id = {}
        self.opening = 0   # initialize requests waiting for a worker
        self._per_user = collections.Counter()   # sessions open or opening, by user
        self._by_worker = {}
        self._seq = itertools.count(1)
        self.calls_at_workers = 0   # sessions with a call in flight
        # A session ended with a call in flight (its worker killed, or gone by itself: kill -9,
        # the OOM killer): that call may have been committing, so the stop tidies the image.
        self.calls_cut = False
        # Calls of dead workers' sessions still to be told how (exit_status, commit_fate):
        # the stop waits for them before it closes connections.
        self.telling = set()
        self._churned_at = float("-inf")   # when a session last opened or ended

    # -- opening and ending ------------------------------------------------
    def open(self, conn, request, message, body, accepts_sse, principal):
        """Start a session for an initialize request once it has a worker (at once
        from a spare, else when the next is forked); its reply carries the id. A client
        that closes its side meanwhile still gets the reply, as for every request (a
        half-closed one may read it; one that is gone leaves a session to idle out)."""
        self.opening += 1
        self._per_user[principal.user] += 1
        message = kept_while_waiting(message, body)   # it may wait for a worker

        def start(worker):
            self.opening -= 1
            handed = []   # admit gave the worker back (its user forgotten): the pool's now
            made = []     # the session _start registered: ended by now, maybe (its worker died)
            # Maybe later, from the pool as a worker arrives: guarded as the connection
            # guards the request it took, so a bug here answers this client 500 and the
            # opens waiting behind it are still served.
            if not conn.go_on(request, lambda: admit(worker, handed, made)) and not handed:
                self._start_failed(worker, principal.user, made[0] if made else None)

        def admit(worker, handed, made):
            admitted = self.router.readmit(conn, message, principal)
            if admitted is None:   # refused (answered): its worker is another open's
                self._forget_user(principal.user)
                handed.append(worker)
                self.router.pool.give_back(worker)
                return
            self._start(worker, conn, message, body, accepts_sse, admitted, made)

        def fail(reason):
            self.opening -= 1
            self._forget_user(principal.user)
            log.error("cannot start a worker for a new session: %s", reason)
            conn.go_on(request, lambda: refuse(reason))   # later too, as start: one of several refused in turn

        def refuse(reason):
            conn.respond(503, [JSON, ("Retry-After", "5")], jsonrpc.dumps(jsonrpc.error(
                message.get("id"), jsonrpc.INTERNAL_ERROR,
                "Service Unavailable: cannot start a worker process (%s)" % reason)))

        self.router.pool.claim(start, fail)

    def _start(self, worker, conn, message, body, accepts_sse, principal, made):
        sid = new_session_id()
        session = Session(sid, worker, principal.user, principal.read_only, self.loop.now, principal.account)
        made.append(session)
        worker.listener = self
        worker.log_owner = (session.short, session.user)
        self.by_id[sid] = session
        self._by_worker[worker] = session
        self._churned_at = self.loop.now
        prepare = frames.encode({"op": "prepare", "session": self.router.session_config(session, principal)})
        self.router.session_opened(session)
        # One write for the prepare and the initialize: the worker wakes once and finds
        # both, and answers initialize before it reads its view (worker.main).
        self.submit(session, conn, message, body, accepts_sse, ahead=prepare)
        # Per-user, the account it runs as: which account's files it reads and writes.
        log.info("session %s opened for %s%s (worker %d%s)", session.short, shown_user(session.user),
                 "" if session.account is None else " as account %s" % session.account, worker.pid,
                 ", read-only" if session.read_only else "")

    def _start_failed(self, worker, user, session):
        """A start that raised (its client answered 500): the session it made, if any,
        ends now, its id unknown at once, not left to idle out holding the worker; the
        worker, in whatever state the start left it, is killed. A session its worker's
        death ended already (during the start's send) is not ended, nor its user
        forgotten, twice."""
        if session is None:
            self._forget_user(user)   # no session took it: none will end to count it
        else:
            self.end(session, "its start failed")   # once: end() returns for an ended one
        worker.kill()

    def sessions_of(self, user):
        """How many sessions `user` has open or opening."""
        return self._per_user[user]

    def _forget_user(self, user):
        self._per_user[user] -= 1
        if self._per_user[user] <= 0:
            del self._per_user[user]

    def end(self, session, reason, died=False):
        """`died`: its worker is gone by itself (kill -9, the OOM killer): its calls are told
        how it ended (reason None), once the spawner reports its status or PATIENCE has
        passed; the tool call it was running also of the commits it made (commit_fate)."""
        if session.ended:
            return
        session.ended = True
        self._forget_user(session.user)
        self.by_id.pop(session.id, None)
        self._by_worker.pop(session.worker, None)
        busy = session.inflight is not None
        kind = (committer(session.inflight.message, session.read_only)
                if died and busy and self.router.image is not None else None)
        self.calls_cut = self.calls_cut or busy
        gone = [session.inflight] if busy else []
        gone += list(session.queue)
        if busy:
            self.calls_at_workers -= 1
        session.inflight = None
        self._churned_at = self.loop.now
        session.queue.clear()
        session.ids_in_use.clear()
        if died:
            self.telling.update(gone)
            died_at = self.loop.now
            session.worker.exit.when_known(self.loop, lambda: self._tell_death(session, gone, kind, died_at),
                                           PATIENCE)
        else:
            for call in gone:
                self._fail_gone(session, call, "session ended: %s" % reason)
        self.router.session_ended(session)  # last flush of its outbox
        self._end_get_stream(session)
        worker = session.worker
        if worker.alive and busy:
            # Its call was just answered "session ended": it must not go on running
            # (and committing) for a client told it is over.
            worker.kill()
        elif worker.alive:
            worker.stop()
            # A worker that does not go when asked is made to.
            self.loop.call_later(self.config.break_grace, worker.kill)
        if not died:
            log.info("session %s ended: %s", session.short, reason)

    def _tell_death(self, session, gone, kind, died_at):
        """Answer the calls of a session whose worker died (at loop time `died_at`), saying
        how, and log it; the tool call it was running (`kind`: commit_fate.committer's) once
        its commits are known."""
        worker = session.worker
        why, data = worker_exit.described(worker.pid, worker.exit.code, worker.exit.stopped_for)
        text = "session ended: %s" % why
        for call in gone[1:] if kind else gone:
            self._told(session, call, text, data)
        log.info("session %s ended: %s", session.short, why)
        if kind:
            self._tell_commits(session, gone[0], kind, text, data, died_at)

    def _told(self, session, call, text, data):
        """Answer a call of a dead worker's session; the stop may go on once none is left."""
        self.telling.discard(call)
        self._fail_gone(session, call, text, data)
        if not self.telling:
            self.router.deaths_told()

    def drain(self, session, reason):
        """At shutdown, a session with a call in flight: the calls queued behind it are
        answered now (they never ran), the call is left to finish, and the session ends
        with `reason` once it is answered (Shutdown bounds the wait)."""
        session.draining = reason
        waiting = list(session.queue)
        session.queue.clear()
        for call in waiting:
            session.release_id(call)
            self._fail_gone(session, call, (
                "%s: this request waited behind the session's call in flight and was not run; "
                "send it again in a new session once the server is back" % reason))
        self._end_get_stream(session)

    def _fail_gone(self, session, call, text, data=None):
        """Answer a call its session will not run -32003 (WORKER_GONE), its last progress first."""
        try:
            if call.pacer is not None:
                self._flush_notify(session, call)
            self._fail(call, jsonrpc.WORKER_GONE, text, data)
        except Exception:
            # The session's worker must still be stopped: one call that cannot be
            # answered loses its connection, not the session's cleanup.
            log.exception("session %s: could not answer a call while ending", session.short)
            call.conn.close()

    def _end_get_stream(self, session):
        if session.stream is not None:
            stream, session.stream = session.stream, None
            stream.on_stream_lost = None
            stream.end_stream()

    # -- requests ----------------------------------------------------------
    def submit(self, session, conn, message, body, accepts_sse, ahead=b""):
        """Queue a call, sent at once if the worker is free; `ahead`: frames written
        before it in the same write (a new session's prepare, which is free). None,
        answered at once, when GS_MCP_MAX_QUEUED requests already wait behind a call.
        Its id is not in use in the session (App asks ids_in_use first). The session's
        activity is its caller's to note (App, as the request arrives; a new one is made now)."""
        if session.inflight is not None and len(session.queue) >= self.config.max_queued:
            self._refuse_busy(session, conn, message)
            return None
        call = Call(next(self._seq), message, body, conn, accepts_sse)
        session.queue.append(call)
        # Ids are strings or integers (jsonrpc.parse): as dict keys they match as
        # breaks.id_key does, 1 and "1" apart, and a bool never gets here.
        session.ids_in_use[call.id] = call
        self._pump(session, ahead)
        return call

    def _refuse_busy(self, session, conn, message):
        # 200 and a JSON-RPC error, as for every other call that fails in a live session
        # (deadline, session ended): a non-2xx to a POSTed request ends the whole
        # transport of the Python SDK's 1.x clients, the call in flight with it.
        limit = self.config.max_queued
        if limit == 0:
            busy = ("Session busy: no request may wait behind this session's call in flight "
                    "(GS_MCP_MAX_QUEUED is 0); send it once that call is answered")
        else:
            busy = ("Session busy: %s already wait%s behind this session's call in flight, the most "
                    "GS_MCP_MAX_QUEUED allows; send more once earlier ones are answered"
                    % ("1 request" if limit == 1 else "%d requests" % limit, "s" if limit == 1 else ""))
        conn.respond(200, [JSON], jsonrpc.dumps(jsonrpc.error(message.get("id"), jsonrpc.SESSION_BUSY, busy)))
        if not session.refusing:   # once a spell: a client looping on it cannot flood the log
            session.refusing = True
            log.warning("session %s: %d requests wait behind its call in flight (GS_MCP_MAX_QUEUED); "
                        "refusing more", session.short, limit)

    def refuse_reused_id(self, session, conn, request_id):
        """Answer at once a request whose id a call of the session still holds (MCP: an id
        is not reused within a session): the two answers could not be told apart, nor a
        cancel naming the id aimed. The call holding it goes on undisturbed."""
        holder = session.ids_in_use[request_id]
        state = "still running" if holder is session.inflight else "still waiting to run"
        text = ("Invalid Request: the id %s is in use by a request %s in this session (a request id "
                "must not be reused within a session); this one was not run: send it with a new id"
                % (jsonrpc.echoed(json.dumps(request_id)), state))   # ASCII JSON: a BEL, a U+202E escaped
        # 200, not 400: why in _refuse_busy.
        conn.respond(200, [JSON], jsonrpc.dumps(jsonrpc.error(request_id, jsonrpc.INVALID_REQUEST, text)))

    def _pump(self, session, ahead=b""):
        # No wait for the worker's "prepared": it reads frames in order, so a call
        # sent right behind "prepare" (initialize) saves a round trip per session
        # open, and a worker that fails to prepare answers it with an error.
        if session.inflight is not None or session.ended:
            return
        if session.queue:   # cancelled calls left the queue at their cancel
            call = session.queue.popleft()
            session.refusing = False
            session.inflight = call
            self.calls_at_workers += 1
            call.started = self.loop.now
            session.worker.send_bytes(ahead + frames.message_frame("call", call.seq, call.body))
            self.loop.event_due = True
            self.router.supervisor.call_started(session, call)

    def may_poll(self):
        """Whether the loop may poll for an event due now (Loop.may_poll), or would
        hold a CPU others need: with as many calls in flight as CPUs, the router
        polling and their workers would not all fit (and their events come anyway);
        the processes a session opening or ending starts need them too."""
        return self.calls_at_workers < self.loop.cpus and self.loop.now - self._churned_at >= CHURN_QUIET

    def cancel(self, session, request_id):
        """notifications/cancelled: drop a queued call, break an in-flight one.

        Ids are matched as breaks.id_key does (exactly: `true` is not the id 1)."""
        inflight = session.inflight
        running = (inflight.id, inflight.method) if inflight is not None and not inflight.cancelled else None
        waiting = session.queue
        decision = breaks.cancel_decision(request_id, running, [(c.id, c.method) for c in waiting])
        if decision == breaks.BREAK:
            inflight.cancelled = True
            session.release_id(inflight)
            self._answer_cancelled(inflight)
            self.router.supervisor.call_cancelled(session, inflight)
            return "breaking"
        if decision == breaks.DROP:
            key = breaks.id_key(request_id)
            call = next(c for c in waiting if breaks.id_key(c.id) == key)
            call.cancelled = True
            waiting.remove(call)   # so it no longer counts against GS_MCP_MAX_QUEUED
            session.release_id(call)
            self._answer_cancelled(call)
            return "dropped"
        return None

    def _answer_cancelled(self, call):
        # MCP asks a receiver not to answer a cancelled request, yet its POST must still
        # be answered as a request's is (text/event-stream or application/json, never
        # 202): an SSE stream ended with no event says both. 202 only for a client that
        # accepts no SSE, to which no JSON body could say "nothing".
        if call.streaming:
            call.conn.end_stream()
        elif call.conn.closed:
            return
        elif call.accepts_sse:
            call.conn.start_stream(200, SSE_HEADERS)
            call.conn.end_stream()
        else:
            call.conn.respond(202)

    # -- worker callbacks --------------------------------------------------
    def on_worker_frame(self, worker, frame):
        session = self._by_worker.get(worker)
        if session is None:
            if frame.get("op") == "log":   # its last words, as its session ends
                worker.relay_log(frame)
            return
        op = frame.get("op")
        if op == "prepared":
            if not frame.get("ok"):
                error = shown(frame.get("error") or "worker could not be prepared", REASON_CAP)
                log.error("session %s: worker refused to prepare: %s", session.short, error)
                self.end(session, "worker could not be prepared: %s" % error)
        elif op == "reply":
            call = session.inflight
            if call is None or call.seq != frame.get("seq"):
                # Ours never sends one (a call stays in flight until its reply, however it
                # was broken): the user's code wrote it, perhaps in a loop, so it is ended
                # as any worker speaking garbage, not logged once a frame.
                worker.reject("a reply for no call in flight")
                return
            session.inflight = None
            session.release_id(call)
            self.calls_at_workers -= 1
            outran = self.router.supervisor.call_finished(session, call)
            session.last_activity = self.loop.now
            if not call.cancelled:
                body = relayed(frame)
                if outran is not None and body is not None:
                    body = breaks.deadline_reply(body, outran)
                elif body is not None and asks_all_tools(call.method, call.message.get("params")):
                    session.tools_listed = listed_tools(body)
                if call.pacer is not None:
                    self._flush_notify(session, call)
                self._deliver(session, call, body)
            if session.draining:
                self.end(session, session.draining)
            elif session.queue:
                self._pump(session)
        elif op == "notify":
            call = session.inflight
            message = relayed(frame)
            if call is not None and call.seq == frame.get("seq") and message is not None:
                self._paced_notify(session, call, message)
        elif op == "log":
            worker.relay_log(frame)
        else:
            worker.reject("unknown op %s" % shown(repr(op), OP_CAP))

    def on_worker_exit(self, worker):
        session = self._by_worker.get(worker)
        if session is not None:
            self.end(session, None, died=True)

    def _tell_commits(self, session, call, kind, text, exit_data, died_at):
        """Answer a tool call its worker died in once the commits it made are known."""
        def answer(more, data):
            if more:
                log.warning("session %s: its worker died in %s%s", session.short, call.describe(),
                            more.replace(";", ",", 1))
            self._told(session, call, text + more, {**(exit_data or {}), **data} or None)

        tell_when_known(self.loop, self.router.image, session.id, call.seq, kind, answer, since=died_at)

    # -- answering ---------------------------------------------------------
    def _deliver(self, session, call, body):
        conn = call.conn
        if conn.closed:
            return
        if body is None:  # the worker had nothing to say (a notification)
            conn.respond(202)
            return
        if call.streaming:
            self.router.trace_outbound("SSE", session.id, body)
            conn.stream_write(sse.event(body.decode("utf-8"), event="message"))
            conn.end_stream()
            return
        if call.method == "initialize":
            conn.respond(200, (JSON, ("MCP-Session-Id", session.id)), body)
        else:
            conn.respond(200, (JSON,), body)

    def _paced_notify(self, session, call, body):
        """A tool's notification, within its call's rate (pacing.Pacer): user code can
        send them in a tight loop, and each costs the shared router and the client's
        bandwidth. One over the rate waits, replaced by newer ones, for the timer."""
        if call.cancelled:
            return
        now = self.loop.now
        if call.pacer is None:
            call.pacer = Pacer(now)
        self._paced(session, call, *call.pacer.offer(body, now))

    def _notify_due(self, session, call):
        if call is not session.inflight:   # answered (its pending one went first), or ended
            return
        self._paced(session, call, *call.pacer.due(self.loop.now))

    def _paced(self, session, call, send, wake):
        """What the pacer said: send one now, or come back in `wake` seconds (or neither)."""
        if send is not None:
            self._notify(session, call, send)
        elif wake is not None:
            self.loop.call_later(wake, lambda: self._notify_due(session, call))

    def _flush_notify(self, session, call):
        """Before the call's answer: the last notification held back, so the client's
        last progress is not lost."""
        pending = call.pacer.flush()
        if pending is not None:
            self._notify(session, call, pending)

    def _notify(self, session, call, body):
        """Progress from inside a tool: on the call's own SSE reply if it may have one,
        else on the session's GET stream if one is open now.

        Dropped for a call already answered or cancelled (the client stopped
        listening for it), and when no stream is open: queued for a later stream
        it would arrive after the call's end, when progress must have stopped."""
        if call.cancelled:
            return
        if call.accepts_sse and not call.conn.closed:
            self.router.trace_outbound("SSE", session.id, body)
            if not call.streaming:
                call.streaming = True
                call.conn.start_stream(200, SSE_HEADERS)
            call.conn.stream_write(sse.event(body.decode("utf-8"), event="message"))
        elif session.stream is not None:
            self.router.push_to_stream(session, body)  # traced as it is written

    def _fail(self, call, code, text, data=None):
        if not call.awaited:
            return
        body = jsonrpc.dumps(jsonrpc.error(call.id, code, text, data))
        if call.streaming:
            call.conn.stream_write(sse.event(body.decode("utf-8"), event="message"))
            call.conn.end_stream()
        else:
            call.conn.respond(200, [JSON], body)

    def fail_inflight(self, session, code, text):
        """Answer the call in flight with an error now (deadline): the worker's late reply is dropped."""
        call = session.inflight
        if call is not None and not call.cancelled:
            if call.pacer is not None:
                self._flush_notify(session, call)
            self._fail(call, code, text)
            call.cancelled = True
            session.release_id(call)
