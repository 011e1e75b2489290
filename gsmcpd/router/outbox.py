"""One session's queue of server→client messages waiting for its SSE stream.

Pure state, no I/O: the router pushes messages in and the stream writer of the
current generation drains them out. Three rules live here:

* bounded FIFO: at most ``max_size`` messages; a push into a full queue drops the
  oldest and counts the gap, which the router logs (``take_gap``);
* latest GET wins: ``attach`` hands out a new generation and supersedes the
  previous stream, which gets nothing more and is told to end on its next tick;
  generations only ever grow, so two writers never share the queue;
* closing handshake: ``close`` refuses new messages but lets the current stream
  drain what is left before it is told to end.
"""

from collections import deque

MAX_QUEUE = 256     # mechanism, not policy: not configurable


class OutboxClosed(Exception):
    """An attach on an outbox whose session is finishing."""


class Outbox:
    def __init__(self, max_size=MAX_QUEUE):
        if max_size < 1:
            raise ValueError("max_size must be at least 1")
        self.max_size = max_size
        self._queue = deque()
        self.generation = 0          # last generation handed out; never rolls back
        self.current = None          # generation of the live stream, or None
        self.dropped = 0             # total messages dropped to the bound
        self._gap = 0                # dropped since the last take_gap()
        self.closing = False
        self.closed = False

    def __len__(self):
        return len(self._queue)

    def push(self, message):
        """Queue a message; return how many old ones were dropped (0 or 1), or
        None if the outbox is closing and the message was refused."""
        if self.closing:
            return None
        dropped = 0
        if len(self._queue) >= self.max_size:
            self._queue.popleft()
            dropped = 1
            self.dropped += 1
            self._gap += 1
        self._queue.append(message)
        return dropped

    def take_gap(self):
        """Messages dropped since the last call (for the router's log line)."""
        gap, self._gap = self._gap, 0
        return gap

    def attach(self):
        """A new GET stream: return its generation, which becomes the current one."""
        if self.closing:
            raise OutboxClosed("session is finishing")
        self.generation += 1
        self.current = self.generation
        return self.current

    def is_current(self, generation):
        return generation is not None and generation == self.current

    def detach(self, generation):
        """The stream of ``generation`` ended. Return True if it was the current
        one; a superseded stream's detach changes nothing."""
        if not self.is_current(generation):
            return False
        self.current = None
        if self.closing:
            self.closed = True
        return True

    def drain(self, generation):
        """One writer tick: return ``(messages, keep_open)``.

        A superseded (or unknown) generation gets ``([], False)``: end that stream.
        While closing, the current stream gets the rest of the queue and
        ``keep_open=False``: its last flush.
        """
        if self.closed or not self.is_current(generation):
            return [], False
        messages = list(self._queue)
        self._queue.clear()
        if self.closing:
            self.closed = True
            self.current = None
            return messages, False
        return messages, True

    def close(self):
        """Start the closing handshake. Return True if a current stream still has
        to take its last flush (tick it); False if the outbox is closed already
        (nothing was listening: queued messages are discarded)."""
        self.closing = True
        if self.closed:
            return False
        if self.current is None:
            self._queue.clear()
            self.closed = True
            return False
        return True
