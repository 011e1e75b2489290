"""Session lifetime policy: idle deadline, liveness probes, stream-loss grace,
the streamless floor, the absolute cap, and forgiving a stalled loop.

Pure and sans-IO: the router reports what happened (``session_opened``,
``request_arrived``, ``call_started``/``call_finished``, ``stream_attached``/
``stream_detached``, ``response_received``, ``session_ended``) and calls
``tick(now)`` whenever ``next_wakeup()`` is due; ``tick`` answers with plain-data
actions::

    ("ping", session_id, request_id, generation)  # send request_id "ping" on the stream
    ("reap", session_id, reason)                  # unmap silently, release the worker, log reason
    ("forgiven", gap_seconds)                     # the loop stalled; clocks were shifted

A session here is a worker holding a transaction view: reaping throws away
uncommitted work, so every rule errs toward keeping a client that may be live.
"""

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace

from gsmcpd.router.pending import PendingRequests

# reap reasons (logged by the router)
IDLE = "idle"                          # no request for idle_timeout
STREAMLESS = "streamless"              # no stream, no request for streamless_idle_timeout
STREAM_LOST = "stream_lost"            # stream closed, not reattached within the grace
PROBE_UNANSWERED = "probe_unanswered"  # a ping on the current stream timed out
MAX_LIFETIME = "max_lifetime"          # the absolute cap

PROBE = "probe"                        # PendingRequests kind of our pings
LATE_FACTOR = 3                        # a tick this many intervals late is a stall, forgiven


@dataclass(frozen=True)
class LifetimeSettings:
    idle_timeout: float | None = 1800.0
    probe_after: float = 1500.0
    streamless_idle_timeout: float = 60.0
    stream_loss_grace: float = 10.0
    max_session_lifetime: float | None = None
    request_timeout: float | None = None
    break_grace: float = 2.0
    maintenance_interval: float = 60.0
    ping_timeout: float = 30.0


# knob -> environment name (the config engineer maps the rest: conf key, flags)
ENV_NAMES = {
    "idle_timeout": "GS_MCP_IDLE_TIMEOUT",
    "probe_after": "GS_MCP_PROBE_AFTER",
    "streamless_idle_timeout": "GS_MCP_STREAMLESS_IDLE_TIMEOUT",
    "stream_loss_grace": "GS_MCP_STREAM_LOSS_GRACE",
    "max_session_lifetime": "GS_MCP_MAX_SESSION_LIFETIME",
    "request_timeout": "GS_MCP_REQUEST_TIMEOUT",
    "break_grace": "GS_MCP_BREAK_GRACE",
    "maintenance_interval": "GS_MCP_MAINTENANCE_INTERVAL",
    "ping_timeout": "GS_MCP_PING_TIMEOUT",
}
OPTIONAL = frozenset({"idle_timeout", "max_session_lifetime", "request_timeout"})
ZERO_ALLOWED = frozenset({"stream_loss_grace"})


def _label(name):
    return f"{ENV_NAMES[name]} ({name})"


def validate(settings=None):
    """Check every knob and refuse unworkable combinations at startup.

    ``settings`` may be a LifetimeSettings, a mapping, or any object with the
    knob names as attributes (e.g. the daemon's Config); missing knobs take
    their defaults. Values are numbers or None: text (a conf file, the
    environment) is gsmcpd.config's to parse. Returns a normalised
    LifetimeSettings; raises ValueError naming the knob at fault.
    """
    defaults = LifetimeSettings()
    values = {}
    for f in fields(LifetimeSettings):
        if isinstance(settings, Mapping):
            raw = settings.get(f.name, getattr(defaults, f.name))
        else:
            raw = getattr(settings, f.name, getattr(defaults, f.name))
        values[f.name] = _check_one(f.name, raw)
    s = replace(defaults, **values)

    idle = s.idle_timeout
    if idle is not None:
        if s.probe_after >= idle:
            raise ValueError(f"{_label('probe_after')} must be less than {_label('idle_timeout')},"
                             f" or the probe never runs: {s.probe_after:g} >= {idle:g}"
                             + _left_at_default(s, defaults, "probe_after"))
        if s.probe_after + s.ping_timeout > idle:
            raise ValueError(f"{_label('ping_timeout')} leaves no time for a probe to be answered"
                             f" before {_label('idle_timeout')}: probe_after {s.probe_after:g}"
                             f" + ping_timeout {s.ping_timeout:g} > {idle:g}"
                             + _left_at_default(s, defaults, "ping_timeout"))
        if s.maintenance_interval > idle - s.probe_after:
            raise ValueError(f"{_label('maintenance_interval')} must fit between probe_after and"
                             f" idle_timeout so a pass can send the probe:"
                             f" {s.maintenance_interval:g} > {idle - s.probe_after:g}"
                             + _left_at_default(s, defaults, "maintenance_interval"))
        if s.stream_loss_grace > idle:
            raise ValueError(f"{_label('stream_loss_grace')} must not exceed {_label('idle_timeout')}:"
                             f" {s.stream_loss_grace:g} > {idle:g}"
                             + _left_at_default(s, defaults, "stream_loss_grace"))
        if s.streamless_idle_timeout > idle:
            raise ValueError(f"{_label('streamless_idle_timeout')} must not exceed"
                             f" {_label('idle_timeout')}: {s.streamless_idle_timeout:g} > {idle:g}"
                             + _left_at_default(s, defaults, "streamless_idle_timeout"))
    return s


def _left_at_default(s, defaults, name):
    """A shorter idle_timeout alone is refused naming a knob its user never set: say
    that its value is the default, and which variable moves it."""
    value = getattr(s, name)
    if value != getattr(defaults, name):
        return ""
    return f" ({value:g} is {ENV_NAMES[name]}'s default: set it too)"


def _check_one(name, raw):
    if raw is None and name in OPTIONAL:
        return None
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        raise ValueError(f"{_label(name)} must be a number of seconds, got {raw!r}")
    value = float(raw)
    if not math.isfinite(value):
        raise ValueError(f"{_label(name)} must be finite, got {raw!r}")
    if value < 0:
        raise ValueError(f"{_label(name)} must not be negative, got {raw!r}")
    if value == 0 and name not in ZERO_ALLOWED:
        hint = " (use none for no limit)" if name in OPTIONAL else ""
        raise ValueError(f"{_label(name)} must be greater than 0{hint}")
    return value


class _Session:
    __slots__ = ("created", "last_activity", "activity", "busy", "stream", "highest", "lost_at",
                 "last_answer", "probe")

    def __init__(self, now):
        self.created = now
        self.last_activity = now
        # counts activity: "since the probe" is decided by order, not by clocks a
        # forgiven stall shifts (and may clamp to the same instant)
        self.activity = 0
        self.busy = False
        self.stream = None        # current stream generation, None when no stream
        self.highest = 0          # newest generation seen: an older one never wins
        self.lost_at = None       # stream-loss verdict pending since (grace running)
        self.last_answer = None   # last answered probe
        self.probe = None         # request id of the outstanding probe


def _active(s, now):
    if now > s.last_activity:   # never back in time (a comparison, not a max() call: per call)
        s.last_activity = now
    s.activity += 1


class Lifetime:
    def __init__(self, settings, now):
        self.settings = validate(settings)
        self.pending = PendingRequests(self.settings.ping_timeout)
        self._sessions = {}
        self._last_tick = now
        self._next_pass = now + self.settings.maintenance_interval

    def __contains__(self, session_id):
        return session_id in self._sessions

    def __len__(self):
        return len(self._sessions)

    # ---- what happened -------------------------------------------------------

    def session_opened(self, session_id, now):
        """initialize succeeded: the session exists and this was its first request."""
        self._sessions[session_id] = _Session(now)

    def request_arrived(self, session_id, now):
        """A POSTed JSON-RPC request or notification (not a response, GET or DELETE)."""
        s = self._sessions.get(session_id)
        if s is not None:
            _active(s, now)
            s.lost_at = None

    def call_started(self, session_id, now):
        s = self._sessions.get(session_id)
        if s is not None:
            s.busy = True
            _active(s, now)
            s.lost_at = None

    def call_finished(self, session_id, now):
        """Returns the session's deadline from now on (as ``deadline``): the router re-arms
        for it after every call, and one lookup does for both."""
        # a long call is activity until it ends: idle counts from its reply
        s = self._sessions.get(session_id)
        if s is None:
            return None
        s.busy = False
        _active(s, now)
        return self._deadline(s)[0]

    def stream_attached(self, session_id, generation, now):
        """A GET stream of ``generation`` (from Outbox.attach) is now the session's.
        Returns False (and changes nothing) for a generation older than one seen."""
        s = self._sessions.get(session_id)
        if s is None or generation <= s.highest:
            return False
        s.highest = generation
        s.stream = generation
        s.lost_at = None
        return True

    def stream_detached(self, session_id, generation, now):
        """The stream of ``generation`` ended. Only the current stream's end counts
        (a superseded stream's end is no news); with no call in flight it starts the
        stream-loss grace. Returns True if it was the current stream."""
        s = self._sessions.get(session_id)
        if s is None or generation is None or generation != s.stream:
            return False
        s.stream = None
        if not s.busy:
            s.lost_at = now
        return True

    def response_received(self, session_id, request_id, now, error=False):
        """The client POSTed a response. Returns the Pending entry it answers
        (``.kind``, ``.generation``, ...) or None if it answers nothing of ours.
        An answered probe (result or error alike) proves the client live but is
        not activity."""
        entry = self.pending.resolve(request_id, session_id)
        if entry is None:
            return None
        s = self._sessions.get(session_id)
        if entry.kind == PROBE and s is not None:
            if s.probe == request_id:
                s.probe = None
            s.last_answer = now if s.last_answer is None else max(s.last_answer, now)
        return entry

    def session_ended(self, session_id):
        """DELETE, worker death, stop: forget the session and what it had pending."""
        self._sessions.pop(session_id, None)
        self.pending.drop_session(session_id)

    # ---- what to do ----------------------------------------------------------

    def tick(self, now):
        actions = []
        gap = now - self._last_tick
        if gap > LATE_FACTOR * self.settings.maintenance_interval:
            self._forgive(gap, now)
            actions.append(("forgiven", gap))
        self._last_tick = max(self._last_tick, now)

        for entry in self.pending.expire(now):
            if entry.kind == PROBE:
                actions.extend(self._probe_expired(entry))

        for session_id in list(self._sessions):
            deadline, reason = self._deadline(self._sessions[session_id])
            if deadline is not None and deadline <= now:
                self.session_ended(session_id)
                actions.append(("reap", session_id, reason))

        if now >= self._next_pass:
            self._next_pass = now + self.settings.maintenance_interval
            for session_id, s in self._sessions.items():
                if self._probe_due(s, now):
                    entry = self.pending.add(PROBE, session_id, now, generation=s.stream,
                                             activity=s.activity)
                    s.probe = entry.request_id
                    actions.append(("ping", session_id, entry.request_id, s.stream))
        return actions

    def next_wakeup(self):
        """When ``tick`` must run next (never later than the next maintenance pass)."""
        times = [self._next_pass]
        pending = self.pending.next_deadline()
        if pending is not None:
            times.append(pending)
        for s in self._sessions.values():
            deadline, _ = self._deadline(s)
            if deadline is not None:
                times.append(deadline)
        return min(times)

    def deadline(self, session_id):
        """When the session would next be reaped (None: not while busy, or unknown)."""
        s = self._sessions.get(session_id)
        return None if s is None else self._deadline(s)[0]

    # ---- rules ---------------------------------------------------------------

    def _deadline(self, s):
        """(time, reason) of the earliest rule that would reap ``s``; (None, None)
        while a call is in flight — a busy session is never reaped."""
        if s.busy:
            return None, None
        # The earliest rule wins; on a tie, the one listed first. (Compared one by one:
        # this runs after every call, and a list and min() cost twice as much.)
        cfg = self.settings
        when = reason = None
        if cfg.max_session_lifetime is not None:
            when, reason = s.created + cfg.max_session_lifetime, MAX_LIFETIME
        if s.stream is None:
            if s.lost_at is not None:
                at, why = s.lost_at + cfg.stream_loss_grace, STREAM_LOST
            else:
                # the count runs from the last request (or reply): never sooner
                at, why = s.last_activity + cfg.streamless_idle_timeout, STREAMLESS
            if when is None or at < when:
                when, reason = at, why
        if cfg.idle_timeout is not None:
            at = s.last_activity + cfg.idle_timeout
            if when is None or at < when:
                when, reason = at, IDLE
        return when, reason

    def _probe_due(self, s, now):
        if s.busy or s.stream is None or s.probe is not None:
            return False
        # an answered probe does not reset the activity clock, but it keeps the
        # session until the next probe is due
        since = s.last_activity if s.last_answer is None else max(s.last_activity, s.last_answer)
        return now - since >= self.settings.probe_after

    def _probe_expired(self, entry):
        s = self._sessions.get(entry.session_id)
        if s is None:
            return []
        if s.probe == entry.request_id:
            s.probe = None
        if entry.generation is None or entry.generation != s.stream:
            return []        # went down a superseded stream: no verdict, re-probe next pass
        if s.busy or s.activity != entry.data["activity"]:
            return []        # the client showed itself since: live whatever the ping says
        self.session_ended(entry.session_id)
        return [("reap", entry.session_id, PROBE_UNANSWERED)]

    def _forgive(self, gap, now):
        # a host suspend or a stalled loop is our silence, not the clients':
        # shift the activity clocks instead of reaping everyone (the cap stays)
        for s in self._sessions.values():
            s.last_activity = min(s.last_activity + gap, now)
            if s.lost_at is not None:
                s.lost_at = min(s.lost_at + gap, now)
            if s.last_answer is not None:
                s.last_answer = min(s.last_answer + gap, now)
        self.pending.shift(gap)
        self._next_pass = now
