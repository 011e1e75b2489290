"""The table of requests the server sent a client and is waiting on.

Server-sent requests use ids in their own namespace (``srv-1``, ``srv-2``, ...),
so a response the client POSTs back can never be mistaken for anything else.
Every entry has a deadline: an unanswered request must decide something, never
hang a session. Pure: ``now`` is passed in.
"""

from dataclasses import dataclass, field

PREFIX = "srv-"


@dataclass
class Pending:
    request_id: str
    kind: str                 # what it was for, e.g. "probe"
    session_id: str
    generation: object        # the stream generation it was written to (or None)
    sent_at: float
    deadline: float
    data: dict = field(default_factory=dict)


class PendingRequests:
    def __init__(self, timeout=30.0):
        self.timeout = timeout
        self._next = 0
        self._entries = {}

    def __len__(self):
        return len(self._entries)

    def __contains__(self, request_id):
        return request_id in self._entries

    def add(self, kind, session_id, now, generation=None, timeout=None, **data):
        """Register a request about to be sent; return its entry (``.request_id``)."""
        self._next += 1
        request_id = f"{PREFIX}{self._next}"
        wait = self.timeout if timeout is None else timeout
        entry = Pending(request_id, kind, session_id, generation, now, now + wait, dict(data))
        self._entries[request_id] = entry
        return entry

    def resolve(self, request_id, session_id=None):
        """The client answered ``request_id``: remove and return its entry.

        None for an id that is not ours, already answered or expired, or (when
        ``session_id`` is given) that belongs to another session — which is then
        left pending.
        """
        if not isinstance(request_id, str):
            return None
        entry = self._entries.get(request_id)
        if entry is None or (session_id is not None and entry.session_id != session_id):
            return None
        del self._entries[request_id]
        return entry

    def expire(self, now):
        """Remove and return every entry whose deadline has passed, oldest first."""
        due = [e for e in self._entries.values() if e.deadline <= now]
        due.sort(key=lambda e: (e.deadline, e.sent_at))
        for entry in due:
            del self._entries[entry.request_id]
        return due

    def next_deadline(self):
        return min((e.deadline for e in self._entries.values()), default=None)

    def for_session(self, session_id, kind=None):
        return [e for e in self._entries.values()
                if e.session_id == session_id and (kind is None or e.kind == kind)]

    def drop_session(self, session_id):
        """The session ended: forget its requests and return them."""
        gone = self.for_session(session_id)
        for entry in gone:
            del self._entries[entry.request_id]
        return gone

    def shift(self, delta):
        """Move every clock forward by ``delta`` (a forgiven stall of the loop)."""
        for entry in self._entries.values():
            entry.sent_at += delta
            entry.deadline += delta
