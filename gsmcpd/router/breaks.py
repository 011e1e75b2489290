"""Request deadlines and cancellation: the break escalation per in-flight call.

A call that outruns ``request_timeout``, or that the client cancels with
``notifications/cancelled``, is broken in steps, each ``break_grace`` after the
previous one and only while the call is still running::

    soft_break  (SIGRTMIN+6: SoftBreak, a KeyboardInterrupt, in the tool; worker answers, stays usable)
    hard_break  (SIGRTMIN+7: HardBreak; worker answers -32001, stays usable)
    stop        (SIGKILL: the session is finished)

The break signals are real-time ones (gsmcpd.wire.break_signals), sent to the worker
alone: a SIGINT or SIGUSR1 the user's code sends itself is its own, never a break.

Pure: every method takes ``now``. The router asks ``next_wakeup()``, calls
``poll(now)`` then, and drops the breaker when the call's reply arrives.
"""

import json

from gsmcpd.wire import jsonrpc

SOFT_BREAK = "soft_break"
HARD_BREAK = "hard_break"
STOP = "stop"
STEPS = (SOFT_BREAK, HARD_BREAK, STOP)

DEADLINE = "deadline"      # why the escalation started
CANCELLED = "cancelled"

UNCANCELLABLE = frozenset({"initialize"})

BREAK = "break"            # cancel_decision outcomes
DROP = "drop"
IGNORE = "ignore"


INTERRUPTED = "request interrupted: "   # how a worker's -32001 after a break begins


def timed_out(request_timeout):
    """How every deadline message names the deadline: its length and the knob that set it."""
    return "timed out after %gs (GS_MCP_REQUEST_TIMEOUT)" % request_timeout


def deadline_reply(body, request_timeout):
    """The reply to a call broken for its deadline, saying so: the worker saw only a
    break, and cannot tell a deadline from a cancel. Any other reply is left as it is
    (code that caught the break may have answered, or failed, in its own words)."""
    try:
        message = json.loads(body)
    except ValueError:
        return body
    error = message.get("error") if isinstance(message, dict) else None
    if not isinstance(error, dict) or error.get("code") != jsonrpc.REQUEST_TIMEOUT \
            or not isinstance(error.get("message"), str):
        return body
    text = error["message"]
    said = "request " + timed_out(request_timeout)
    error["message"] = said + " and was interrupted: " + text[len(INTERRUPTED):] \
        if text.startswith(INTERRUPTED) else said + ": " + text
    return jsonrpc.dumps(message)


def id_key(request_id):
    """A JSON-RPC id as a comparable key, or None if it is not a valid id.
    Keeps 1 and "1" apart, and True out (``True == 1`` in Python)."""
    if isinstance(request_id, bool):
        return None
    if isinstance(request_id, str):
        return ("s", request_id)
    if isinstance(request_id, (int, float)):
        return ("n", request_id)
    return None


def cancelled_request_id(params):
    """The ``requestId`` a ``notifications/cancelled`` names, or None."""
    if not isinstance(params, dict):
        return None
    request_id = params.get("requestId")
    return request_id if id_key(request_id) is not None else None


def cancel_decision(request_id, in_flight=None, queued=()):
    """What a cancel for ``request_id`` does to a session.

    ``in_flight`` is ``(id, method)`` of the running call or None; ``queued`` the
    ``(id, method)`` of requests waiting behind it. Returns BREAK (escalate the
    running call), DROP (remove the queued request: it never runs and gets no
    response) or IGNORE (unknown or finished id, or ``initialize``).
    """
    key = id_key(request_id)
    if key is None:
        return IGNORE
    if in_flight is not None and id_key(in_flight[0]) == key:
        return IGNORE if in_flight[1] in UNCANCELLABLE else BREAK
    for queued_id, method in queued:
        if id_key(queued_id) == key:
            return IGNORE if method in UNCANCELLABLE else DROP
    return IGNORE


class CallBreaker:
    """The escalation state machine of one in-flight call."""

    def __init__(self, request_id, method, started_at, request_timeout=None, break_grace=2.0):
        self.request_id = request_id
        self.method = method
        self.break_grace = break_grace
        self.cause = None          # DEADLINE or CANCELLED once escalation starts
        self.cancelled = False     # the client cancelled: its call gets no response body
        self.done = []             # steps taken so far
        self._next_at = None if request_timeout is None else started_at + request_timeout

    @property
    def next_step(self):
        return STEPS[len(self.done)] if len(self.done) < len(STEPS) else None

    def next_wakeup(self):
        """When ``poll`` has something to do, or None."""
        return None if self.next_step is None else self._next_at

    def cancel(self, now):
        """The client cancelled this call. Returns False for an uncancellable
        call (``initialize``); otherwise the escalation starts now unless it has
        started already."""
        if self.method in UNCANCELLABLE:
            return False
        self.cancelled = True
        if self.cause is None:
            self.cause = CANCELLED
            self._next_at = now
        return True

    def poll(self, now):
        """Return the step due at ``now`` (SOFT_BREAK, HARD_BREAK or STOP) or None.
        At most one step per poll; the next comes ``break_grace`` after this one
        is taken, so a late poll never skips a worker's grace."""
        step = self.next_step
        if step is None or self._next_at is None or now < self._next_at:
            return None
        if self.cause is None:
            self.cause = DEADLINE
        self.done.append(step)
        self._next_at = now + self.break_grace if self.next_step else None
        return step


class Breaks:
    """The breakers of every session's in-flight call (one call per session)."""

    def __init__(self, request_timeout=None, break_grace=2.0):
        self.request_timeout = request_timeout
        self.break_grace = break_grace
        self._calls = {}

    @classmethod
    def from_settings(cls, settings):
        return cls(settings.request_timeout, settings.break_grace)

    def get(self, session_id):
        return self._calls.get(session_id)

    def call_started(self, session_id, request_id, method, now):
        breaker = CallBreaker(request_id, method, now, self.request_timeout, self.break_grace)
        self._calls[session_id] = breaker
        return breaker

    def call_finished(self, session_id):
        """The reply arrived (or the session ended): return the breaker, whose
        ``cancelled`` says whether the client still wants an answer."""
        return self._calls.pop(session_id, None)

    def cancel(self, session_id, request_id, now):
        """A cancel naming ``request_id``: True if it started (or joined) the
        escalation of the session's running call; False is a no-op."""
        breaker = self._calls.get(session_id)
        if breaker is None or id_key(breaker.request_id) != id_key(request_id) \
                or id_key(request_id) is None:
            return False
        return breaker.cancel(now)

    def tick(self, now):
        """Due steps as ``(step, session_id, request_id, cause)``. After STOP the
        router replies -32001 (or nothing, if cancelled) and ends the session."""
        actions = []
        for session_id, breaker in list(self._calls.items()):
            step = breaker.poll(now)
            if step is not None:
                actions.append((step, session_id, breaker.request_id, breaker.cause))
            if step == STOP:
                del self._calls[session_id]
        return actions

    def next_wakeup(self):
        times = [t for t in (b.next_wakeup() for b in self._calls.values()) if t is not None]
        return min(times, default=None)
