"""The router's one event loop: an epoll selector, a timer heap and a wakeup pipe.

Everything the router does is a callback fired from here; nothing in a callback may
block. Other threads (the JWKS fetcher) and signal handlers only ever reach the loop
through `call_soon_threadsafe`, which writes one byte to wake the selector.
"""

import collections
import heapq
import itertools
import logging
import math
import select
import selectors
import signal
import socket
import time

from gsmcpd.router.cpus import usable_cpus

log = logging.getLogger("gsmcpd.loop")

POLL_BACKOFF = 6  # after polls that missed, poll again on one event due in at most 64
# The longest sleep asked of the selector: epoll takes at most 2**31 - 1 ms, and a timer
# set far off (a maintenance interval of months) must not overflow it; waking once an
# hour to find nothing due costs nothing.
MAX_SLEEP = 3600.0
ACCEPT_PAUSE = 0.1  # seconds a listener goes unwatched after accept() fails (Loop.pause_reader)
COMPACT_MIN = 1024  # timers in the heap before cancelled ones are swept out (Loop._compact)


def send_some(sock, data):
    """Send what a non-blocking socket takes now: the count, 0 when it would block.
    An OSError (the peer is gone) is the caller's to handle."""
    try:
        return sock.send(data)
    except (BlockingIOError, InterruptedError):
        return 0


def recv_some(sock, size):
    """Read what a non-blocking socket has: bytes; b"" when the peer is gone (EOF or
    an error); None when nothing is there yet."""
    try:
        return sock.recv(size)
    except (BlockingIOError, InterruptedError):
        return None
    except OSError:
        return b""


class Timer:
    __slots__ = ("when", "callback", "cancelled")

    def __init__(self, when, callback):
        self.when = when
        self.callback = callback
        self.cancelled = False

    def cancel(self):
        # It stays in the heap until its time (a connection's idle timer: minutes);
        # meanwhile it must not keep what its callback holds (a closed connection's
        # unsent output) alive.
        self.cancelled = True
        self.callback = None


# What an epoll event says beyond readable (EPOLLOUT, or EPOLLERR/EPOLLHUP: a write fails
# at once), or beyond writable (EPOLLIN, or the same): as selectors.EpollSelector reads it.
_MORE_THAN_IN = ~select.EPOLLIN
_MORE_THAN_OUT = ~select.EPOLLOUT


class EpollSelector(selectors.EpollSelector):
    """The stdlib's epoll selector, its select() with the same results for less work: it
    runs twice a relayed call, and the stdlib's (a max() call and a method call per event)
    cost ~1.8k instructions more each time than this one, ~2 % of a call."""

    def select(self, timeout=None):
        if timeout is None:
            timeout = -1
        elif timeout <= 0:
            timeout = 0
        else:   # epoll_wait() counts milliseconds: rounded up, a wait is never shorter
            timeout = math.ceil(timeout * 1e3) * 1e-3
        keys = self._fd_to_key
        try:   # maxevents must be positive, even with nothing registered
            polled = self._selector.poll(timeout, len(keys) or 1)
        except InterruptedError:
            return []
        ready = []
        for fd, event in polled:
            key = keys.get(fd)
            if key is not None:
                events = ((selectors.EVENT_WRITE if event & _MORE_THAN_IN else 0)
                          | (selectors.EVENT_READ if event & _MORE_THAN_OUT else 0))
                ready.append((key, events & key.events))
        return ready


def epoll_selector() -> selectors.EpollSelector:
    """EpollSelector, or the stdlib's own where a later Python keeps its registrations under
    other names than the two EpollSelector.select() reads (there since 3.4)."""
    made = EpollSelector()
    if isinstance(getattr(made, "_fd_to_key", None), dict) and hasattr(made, "_selector"):
        return made
    return selectors.EpollSelector()   # made's epoll fd is closed as it is freed (its close() may read those names)


class Loop:
    def __init__(self, poll=0.0, cpus=None):
        self.selector = epoll_selector()
        # The CPUs this process can count on (its affinity mask, capped by a cgroup CPU
        # quota), and what set that. With one, the process a poll waits for could not
        # run meanwhile.
        self.cpus, self.cpus_set_by = (cpus, "given") if cpus is not None else usable_cpus()
        # Seconds to poll before sleeping while an event is due (see _wait); 0 = never.
        self.poll = poll if self.cpus > 1 else 0.0
        # Asked at each poll, not when the event was due: whether the CPUs are free
        # for it now (the session manager's rule; see SessionManager.may_poll).
        self.may_poll = lambda: True
        # Set True by whoever expects something at once: a worker's reply to a call just
        # sent, a client's next request on a connection just answered (see _wait). An
        # attribute, not a method: set twice a call.
        self.event_due = False
        self._poll_misses = 0     # polls in a row that ended with nothing
        self._poll_skips = 0      # events due to sleep for at once, after those misses
        self._clock = time.perf_counter
        self._timers = []
        self._compact_at = COMPACT_MIN
        self._seq = itertools.count()
        self._soon = collections.deque()
        self._stopping = False
        # Monotonic time as of this loop pass: read once per pass, not per call (a
        # request asks for the time several times; none needs it finer). An attribute,
        # not a method: read ~11 times a call, the calls cost ~2.4k instructions a call.
        self.now = time.monotonic()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._registered = set()  # file objects set_interest/add_reader registered
        self.selector.register(self._wake_r, selectors.EVENT_READ, self._drain_wakeups)

    def describe_poll(self):
        """For the startup log: whether the loop polls, and why not."""
        cpus = "%d CPU%s to count on (%s)" % (self.cpus, "" if self.cpus == 1 else "s", self.cpus_set_by)
        if self.poll:
            return "router poll: up to %d us before sleeping while few calls are in flight; %s" % (
                round(self.poll * 1e6), cpus)
        return "router poll: off; %s" % (cpus if self.cpus == 1 else "GS_MCP_POLL_US is 0")

    def call_at(self, when, callback):
        timer = Timer(when, callback)
        heapq.heappush(self._timers, (when, next(self._seq), timer))
        if len(self._timers) > self._compact_at:
            self._compact()
        return timer

    def _compact(self):
        # A cancelled timer waits in the heap until its time: a closed connection's idle
        # timer, minutes. Under connection churn those would fill it (a one-shot client
        # at 4000/s: a million); sweep them out whenever it has doubled since the last
        # sweep, which costs O(1) per timer over time.
        self._timers = [entry for entry in self._timers if not entry[2].cancelled]
        heapq.heapify(self._timers)
        self._compact_at = max(COMPACT_MIN, 2 * len(self._timers))

    def call_later(self, delay, callback):
        return self.call_at(self.now + delay, callback)

    def call_soon(self, callback):
        self._soon.append(callback)

    def call_soon_threadsafe(self, callback):
        self._soon.append(callback)  # deque.append is atomic
        try:
            self._wake_w.send(b"\0")
        except (BlockingIOError, OSError):
            pass  # a full pipe already guarantees a wakeup

    # -- file objects ------------------------------------------------------
    def add_reader(self, fileobj, callback):
        """callback() when readable. Replaces any writer registration's mask."""
        self._set(fileobj, selectors.EVENT_READ, callback, None)

    def set_interest(self, fileobj, on_read, on_write):
        """Register fileobj for read and/or write; None drops that direction."""
        events = (selectors.EVENT_READ if on_read else 0) | (selectors.EVENT_WRITE if on_write else 0)
        self._set(fileobj, events, on_read, on_write)

    def _set(self, fileobj, events, on_read, on_write):
        # Registration is tracked here, not asked of the selector: its "not
        # registered" KeyError formats the object's repr, and a socket's repr costs
        # two system calls (~25 us) on every new connection and worker.
        known = fileobj in self._registered
        if not events:
            if known:
                self.remove(fileobj)
            return
        data = (on_read, on_write)
        if known:
            try:
                self.selector.modify(fileobj, events, data)
            except BaseException:
                self._registered.discard(fileobj)   # a failed modify unregisters it
                raise
        else:
            self.selector.register(fileobj, events, data)
            self._registered.add(fileobj)

    def pause_reader(self, sock, callback, seconds):
        """Stop watching `sock` for `seconds`, then watch it again unless it was closed
        meanwhile: a listener accept() fails on (out of descriptors) stays readable, and
        the loop would spin on it, logging each turn."""
        self.remove(sock)

        def resume():
            if sock.fileno() >= 0:
                self.add_reader(sock, callback)
        self.call_later(seconds, resume)

    def remove(self, fileobj):
        if fileobj in self._registered:
            self._registered.discard(fileobj)
            try:
                self.selector.unregister(fileobj)
            except (KeyError, ValueError):
                pass

    # -- signals -----------------------------------------------------------
    def add_signal_handler(self, signum, callback):
        signal.set_wakeup_fd(self._wake_w.fileno(), warn_on_full_buffer=False)
        signal.signal(signum, lambda *_: self._soon.append(callback))

    # -- running -----------------------------------------------------------
    def stop(self):
        self._stopping = True

    def run(self):
        while not self._stopping:
            self._run_once()

    def _run_once(self):
        timeout = None
        if self._soon:
            timeout = 0
        elif self._timers:
            # Clamped to [0, MAX_SLEEP] by comparisons: min() and max() calls cost ~1k
            # instructions each, and this runs every pass.
            timeout = self._timers[0][0] - time.monotonic()
            if timeout < 0.0:
                timeout = 0.0
            elif timeout > MAX_SLEEP:
                timeout = MAX_SLEEP
        events = self._wait(timeout)
        now = self.now = time.monotonic()
        for key, mask in events:
            data = key.data
            if callable(data):
                data()
                continue
            on_read, on_write = data
            if mask & selectors.EVENT_WRITE and on_write:
                self._guard(on_write)
            if mask & selectors.EVENT_READ and on_read:
                # the write callback may have unregistered the object
                self._guard(on_read)
        # Due as of the wait's end, the clock read once a pass: a timer falling due
        # during the callbacks above fires in the next pass, whose wait is then 0.
        while self._timers and self._timers[0][0] <= now:
            _, _, timer = heapq.heappop(self._timers)
            if not timer.cancelled:
                self._guard(timer.callback)
        if self._soon:   # mostly empty: no range() and len() calls then
            for _ in range(len(self._soon)):
                self._guard(self._soon.popleft())

    def _wait(self, timeout):
        """This pass's events. With an event due and nothing else to do, poll for up
        to `poll` before sleeping: a quick reply or request then finds the router awake.
        A sleep costs a wake-up, which on an idle CPU can cost more than the poll (on a
        VM that halts idle vCPUs at once, ~100-200 µs). Any event ends the poll, it
        never runs past the next timer, it is spent once per event due at most, and
        only when `may_poll()` says so at that moment.
        Polls that miss (long tools, a client pausing, a busy machine) back off: after n
        misses in a row, the next 2**n - 1 events due are slept for at once (n at most
        POLL_BACKOFF)."""
        if not self.event_due or not self.poll or timeout == 0:
            events = self.selector.select(timeout)
            if events:
                self.event_due = False
            return events
        self.event_due = False
        try:   # asked outside any callback's guard: a failing rule means sleep, never a dead loop
            may_poll = self.may_poll()
        except Exception:
            log.exception("the poll's rule failed: sleeping instead")
            may_poll = False
        if not may_poll:
            return self.selector.select(timeout)
        if self._poll_skips:
            self._poll_skips -= 1
            return self.selector.select(timeout)
        events = self.selector.select(0)   # often already there: no clock read then
        if not events:
            limit = self.poll if timeout is None else min(self.poll, timeout)
            started = self._clock()
            while True:
                events = self.selector.select(0)
                waited = self._clock() - started
                if events or waited >= limit:
                    break
        if events:
            self._poll_misses = 0
            return events
        self._poll_misses = min(self._poll_misses + 1, POLL_BACKOFF)
        self._poll_skips = 2 ** self._poll_misses - 1
        return self.selector.select(None if timeout is None else max(0.0, timeout - waited))

    def _guard(self, callback):
        # One failing callback must never take the router down with it.
        try:
            callback()
        except Exception:
            log.exception("router callback failed: %r", callback)

    def _drain_wakeups(self):
        try:
            while self._wake_r.recv(4096):
                pass
        except (BlockingIOError, InterruptedError):
            pass

    def close(self):
        self.selector.close()
        self._wake_r.close()
        self._wake_w.close()
