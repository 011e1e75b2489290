"""Drives the pure lifetime, break and outbox policies from the router's loop.

The policies (lifetime.py, breaks.py, outbox.py) decide; this module tells them
what happened, keeps one timer armed for their next wakeup, and carries out the
actions they return: probe pings, reaps, soft/hard breaks and stops, and writing
server-initiated messages onto each session's current GET stream.
"""

import logging
import time

from gsmcpd.router import breaks as breaks_mod
from gsmcpd.router.app import JSON, SESSION_NOT_FOUND
from gsmcpd.router.breaks import Breaks
from gsmcpd.router.lifetime import Lifetime
from gsmcpd.router.memtrim import TrimPolicy, malloc_trim
from gsmcpd.router.outbox import Outbox, OutboxClosed
from gsmcpd.router.sessions import SSE_HEADERS
from gsmcpd.router.trace import shown_id
from gsmcpd.wire import jsonrpc, sse
from gsmcpd.wire.break_signals import HARD_BREAK_SIGNAL, SOFT_BREAK_SIGNAL

log = logging.getLogger("gsmcpd.lifetime")

BREAK_SIGNALS = {breaks_mod.SOFT_BREAK: SOFT_BREAK_SIGNAL, breaks_mod.HARD_BREAK: HARD_BREAK_SIGNAL}


class Supervisor:
    def __init__(self, router):
        self.router = router
        self.loop = router.loop
        self.config = router.config
        # Config carries every lifetime knob under the policy's own names.
        self.lifetime = Lifetime(router.config, self.loop.now)
        self.breaks = Breaks.from_settings(self.lifetime.settings)
        # on the lifetime's maintenance interval: its passes wake the timer that often
        self.heap = TrimPolicy(self.lifetime.settings.maintenance_interval, self.loop.now)
        self._timer = None
        self._timer_at = None
        self._arm()

    # -- the one timer -------------------------------------------------------
    def _arm(self, at=None):
        if at is None:
            candidates = [self.lifetime.next_wakeup(), self.breaks.next_wakeup()]
            at = min(t for t in candidates if t is not None)
        elif self._timer_at is not None and self._timer_at <= at:
            return  # already armed early enough
        if self._timer is not None:
            self._timer.cancel()
        self._timer_at = at
        self._timer = self.loop.call_at(at, self._tick)

    def _soon(self, at):
        if at is not None:
            self._arm(at)

    def _tick(self):
        self._timer = self._timer_at = None
        now = self.loop.now
        for action in self.lifetime.tick(now):
            self._lifetime_action(action)
        for step, sid, request_id, cause in self.breaks.tick(now):
            self._break_action(step, sid, request_id, cause)
        if self.heap.due(now):
            self._trim_heap(now)
        self._arm()

    def _trim_heap(self, now):
        released = malloc_trim()
        if released is not None:   # None: this libc has no malloc_trim, nothing was tried
            log.debug("heap trimmed (malloc_trim), trim %d: %s", self.heap.trims + 1,
                      "freed memory returned to the system" if released else "no free memory to return")
        self.heap.trimmed(now)

    def _lifetime_action(self, action):
        kind = action[0]
        if kind == "ping":
            _, sid, request_id, _generation = action
            session = self.router.sessions.by_id.get(sid)
            if session is not None:
                self.push(session, jsonrpc.request(request_id, "ping"))
        elif kind == "reap":
            _, sid, reason = action
            session = self.router.sessions.by_id.get(sid)
            if session is not None:
                self.router.sessions.end(session, "reaped (%s)" % reason)
        elif kind == "forgiven":
            # The gap is both what was measured and what the clocks were shifted by.
            log.warning("lifetime timers last ran %.0fs ago (host suspended, or the loop stalled?); "
                        "idle clocks forgiven that long", action[1])

    def _break_action(self, step, sid, request_id, cause):
        session = self.router.sessions.by_id.get(sid)
        if session is None:
            return
        call = session.inflight
        log.warning("session %s: %s of request %s (%s)", session.short, step.replace("_", " "),
                    shown_id(request_id), cause)
        if step in BREAK_SIGNALS:
            session.worker.signal(BREAK_SIGNALS[step])
            return
        # stop: the worker took neither break; answer the client, then end the session.
        # A call still answerable here was not cancelled: its deadline started the steps.
        if call is not None and not call.cancelled:
            self.router.sessions.fail_inflight(
                session, jsonrpc.REQUEST_TIMEOUT,
                "request %s %s and its worker had to be stopped; the session is finished"
                % (shown_id(request_id),   # cut: the response's own id carries it whole
                   breaks_mod.timed_out(self.breaks.request_timeout)))
        session.worker.kill()
        self.router.sessions.end(session, "worker stopped after %s" % cause)

    # -- events from the router ------------------------------------------------
    def session_opened(self, session):
        session.outbox = Outbox()
        self.lifetime.session_opened(session.id, self.loop.now)
        self._soon(self.lifetime.deadline(session.id))

    def request_arrived(self, session):
        self.lifetime.request_arrived(session.id, self.loop.now)

    def call_started(self, session, call):
        now = self.loop.now
        self.lifetime.call_started(session.id, now)
        if self.breaks.request_timeout is not None:  # else a breaker is made only on cancel
            self._soon(self.breaks.call_started(session.id, call.id, call.method, now).next_wakeup())

    def call_finished(self, session, call):
        """The call's reply arrived: the deadline it outran (seconds), or None."""
        deadline = self.lifetime.call_finished(session.id, self.loop.now)
        breaker = self.breaks.call_finished(session.id)
        if deadline is not None and (self._timer_at is None or deadline < self._timer_at):
            self._arm(deadline)   # as _soon, without its call: this runs after every call
        if breaker is not None and breaker.cause == breaks_mod.DEADLINE:
            return self.breaks.request_timeout
        return None

    def call_cancelled(self, session, call):
        now = self.loop.now
        if self.breaks.get(session.id) is None:
            self.breaks.call_started(session.id, call.id, call.method, call.started or now)
        if self.breaks.cancel(session.id, call.id, now):
            self._arm(now)

    def client_response(self, session, message):
        entry = self.lifetime.response_received(session.id, message.get("id"), self.loop.now,
                                                error="error" in message)
        if entry is None:
            # Keyed by session: the client picks the id afresh each time.
            self.router.repeated.log(log, logging.INFO, "session %s: response to an unknown request %s ignored"
                                     % (session.short, shown_id(message.get("id"))),
                                     key=("unknown response", session.id))

    def session_ended(self, session):
        self._cancel_stream_expiry(session)
        self.lifetime.session_ended(session.id)
        self.breaks.call_finished(session.id)
        self.heap.session_ended()
        outbox = session.outbox
        if outbox is not None:
            outbox.close()
            self._flush(session)

    # -- the standalone GET stream ---------------------------------------------
    def attach_stream(self, session, conn):
        try:
            generation = session.outbox.attach()
        except OutboxClosed:
            conn.respond(404, [JSON], SESSION_NOT_FOUND)
            return
        old = session.stream
        session.stream = conn
        session.stream_generation = generation
        self._cancel_stream_expiry(session)
        if old is not None and not old.closed:
            old.on_stream_lost = None
            old.end_stream()  # the newest GET wins
        self.lifetime.stream_attached(session.id, generation, self.loop.now)
        conn.start_stream(200, list(SSE_HEADERS) + [("MCP-Session-Id", session.id)])
        conn.on_stream_lost = lambda: self._stream_lost(session, conn, generation)
        self._keepalive(session, conn, generation)
        self._flush(session)

    def _keepalive(self, session, conn, generation):
        def tick():
            if session.outbox.is_current(generation) and not conn.closed and conn.streaming:
                conn.stream_write(sse.comment("keepalive"))
                self._keepalive(session, conn, generation)
        self.loop.call_later(self.config.keepalive_interval, tick)

    def end_stream_at(self, session, conn, when_epoch):
        """End this GET stream when the token that opened it expires: a stream is
        authenticated once, so it must not outlive its credentials. The client may
        reattach with a fresh token within the stream-loss grace."""
        generation = session.stream_generation

        def expire():
            session.stream_expiry = None
            if session.stream is conn and not conn.closed and conn.streaming:
                log.info("session %s: stream ended, the token behind it expired", session.short)
                conn.on_stream_lost = None
                conn.end_stream()
                self._stream_lost(session, conn, generation)
        self._cancel_stream_expiry(session)
        session.stream_expiry = self.loop.call_later(max(0.0, when_epoch - time.time()), expire)

    @staticmethod
    def _cancel_stream_expiry(session):
        """Drop the expiry timer of the session's stream once that stream is over: it is
        due at the token's expiry (hours away, for some IdPs), and until then it would keep
        the stream's connection, the session and its worker's objects alive."""
        if session.stream_expiry is not None:
            session.stream_expiry.cancel()
            session.stream_expiry = None

    def _stream_lost(self, session, conn, generation):
        if session.stream is conn:
            session.stream = None
            self._cancel_stream_expiry(session)
        session.outbox.detach(generation)
        now = self.loop.now
        if self.lifetime.stream_detached(session.id, generation, now):
            self._soon(self.lifetime.deadline(session.id))

    def push(self, session, message):
        """Queue a server-initiated message for the session's GET stream and flush."""
        outbox = session.outbox
        if outbox is None:
            return False
        if outbox.push(message) is None:
            return False
        gap = outbox.take_gap()
        if gap:
            log.warning("session %s: outbox full, %d message(s) dropped", session.short, gap)
        self._flush(session)
        return True

    def _flush(self, session):
        conn = session.stream
        generation = session.stream_generation
        if conn is None or conn.closed:
            return
        messages, keep_open = session.outbox.drain(generation)
        for message in messages:
            body = message if isinstance(message, bytes) else jsonrpc.dumps(message)
            self.router.trace_outbound("SSE", session.id, body)
            conn.stream_write(sse.event(body.decode("utf-8"), event="message"))
        if not keep_open:
            session.stream = None
            conn.on_stream_lost = None
            conn.end_stream()
