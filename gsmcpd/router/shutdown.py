"""The graceful stop (SIGTERM/SIGINT), in timers on the router's loop, never a sleep.

1. The control socket closes; from now on every request is answered 503 with Retry-After
   (App.handle), but for a client's notifications/cancelled and DELETE while calls are
   still in flight: they shorten the stop. So the listener stays open until the calls are
   answered (step 4), and with no call in flight closes at once.
2. A session with no call in flight ends now. A call queued behind a running one is
   answered at once: it never ran. A running call gets the call grace (GS_MCP_BREAK_GRACE,
   at most CALL_GRACE_CAP) to finish, is answered with its real result, and its session
   then ends: a commit in flight lands and its client is told so. The calls of a session
   whose worker died (before the stop or in it) are waited for too, until how the worker
   ended and what its call committed can be told (at most DEATH_TOLD from the death: the
   worker pool reads the statuses on, and each is waited for at most exit_status.PATIENCE,
   the commits looked for up to commit_fate.PATIENCE).
3. At the grace's end a call still running is answered "session ended: server shutting
   down (...)" and its worker killed, as every call in flight was before the grace.
4. The listener closes. The workers get SHUTDOWN_GRACE to exit and are killed;
   connections are closed once their replies are written (within the same bound), and
   the worker spawner is stopped (watched from the loop: it ends once its children have,
   or is killed after SPAWNER_END_GRACE). Then the image is tidied after a call cut by a killed
   or dead worker (at this stop or earlier) once the killed are gone (at most REAP_GRACE
   more), and the loop stops.

A second signal skips the waits: what still runs is ended and every worker killed at once,
and the spawner, told to stop, is killed if it has not ended within SPAWNER_HURRIED_GRACE
(one still being started is not waited for); the router exits as soon as they are gone.
"""

import logging
from pathlib import Path

from gsmcpd.router import commit_fate, exit_status
from gsmcpd.router.workers import SPAWNER_END_GRACE, SPAWNER_KILL_WAIT, SPAWNER_STOP_WAIT

log = logging.getLogger("gsmcpd.router")

# The call grace is capped so the whole stop (longest_stop) stays within `gsmcpd stop`'s
# wait before its SIGKILL, and systemd's TimeoutStopSec.
CALL_GRACE_CAP = 5.0
SHUTDOWN_GRACE = 3.0   # seconds workers get to exit before SIGKILL
# Seconds workers killed at SHUTDOWN_GRACE's end get to be gone before the image is tidied:
# one killed mid-commit holds the image lock until then, and recovery does not wait for it.
REAP_GRACE = 0.5
POLL = 0.005           # how often the last phase looks at workers and connections: a stop waits
                       # for them, and 50 ms was most of an idle stop (about 114 ms, now 34-64)

STOPPING = "server shutting down"
# The longest a dead worker's call waits to be told after the death: for its exit status
# and its commits, both counted from the death.
DEATH_TOLD = max(exit_status.PATIENCE, commit_fate.PATIENCE)


def call_grace(config):
    return min(config.break_grace, CALL_GRACE_CAP)


def longest_stop():
    """Seconds from the stop signal to the loop's end when every grace runs out, one after
    the other: the calls' (a worker dying at its end, the telling of its call), the workers'
    and their reaping, then the spawner's (a start under way, its end, the wait after its
    kill). `gsmcpd stop` must wait longer before its SIGKILL, or the tidy-up after killed
    calls and workers (the image's) is what is lost."""
    return (CALL_GRACE_CAP + DEATH_TOLD + SHUTDOWN_GRACE + REAP_GRACE
            + SPAWNER_STOP_WAIT + SPAWNER_END_GRACE + SPAWNER_KILL_WAIT)


class Shutdown:
    def __init__(self, router):
        self.router = router
        self.loop = router.loop
        self.sessions = router.sessions
        self.grace = call_grace(router.config)
        self.workers = []
        self.draining = False      # calls in flight are being waited for
        self.hurry = False         # a second signal: no more waiting
        self.killed_late = False   # workers still there at SHUTDOWN_GRACE's end were killed
        self._grace_timer = None
        self._deadline = None      # the last phase's

    def begin(self):
        router, sessions = self.router, self.sessions
        running = [s for s in sessions.by_id.values() if s.inflight is not None]
        calls = ("; %d call(s) in flight get up to %gs to finish (GS_MCP_BREAK_GRACE)" % (len(running), self.grace)
                 if running else "")
        log.info("shutting down: %d session(s)%s", len(sessions.by_id), calls)
        if router.on_stopping:
            router.on_stopping()
        if router.control is not None:
            router.control.close()
        self.workers = [s.worker for s in sessions.by_id.values()]
        replying = {call.conn for call in sessions.telling}   # a dead worker's, to be told how
        for session in list(sessions.by_id.values()):
            if session.inflight is None:
                sessions.end(session, STOPPING)
            else:
                replying.add(session.inflight.conn)
                sessions.drain(session, STOPPING)
        self.workers += router.pool.close()
        for conn in list(router.connections):
            if conn.streaming and conn not in replying:   # a call's own SSE reply is still to end
                conn.end_stream()
        if sessions.by_id or sessions.telling:
            self.draining = True
            self._grace_timer = self.loop.call_later(self.grace, self._grace_over)
        else:
            self._drained()

    def _stop_accepting(self):
        """No call left in flight: nothing more can be cancelled or ended by its client."""
        router = self.router
        if router.listener is not None:
            self.loop.remove(router.listener)
            router.listener.close()
        for conn in list(router.connections):
            if conn.streaming:   # not a call's reply: every call is answered
                conn.end_stream()
            conn.drain_and_close()

    def again(self):
        """A second SIGTERM/SIGINT: no more waiting for calls or for workers to exit."""
        if self.hurry:
            return
        self.hurry = True
        log.warning("a second stop signal: ending what still runs now")
        if self.draining:
            self._end_running("%s (a second stop signal: its call in flight was not waited for)" % STOPPING)
        for worker in self.workers:
            worker.kill()   # the last phase then ends as soon as they are reaped
        self.router.pool.hurry()   # and the spawner's stop, under way or to come, waits the least

    def session_ended(self):
        """A session ended, or the last call of a dead worker's was told (SessionManager.telling)."""
        # Not from inside SessionManager.end: it has its worker still to stop.
        if self.draining and not self.sessions.by_id and not self.sessions.telling:
            self.draining = False
            self.loop.call_soon(self._drained)

    def _grace_over(self):
        self._grace_timer = None
        if self.draining:
            self._end_running("%s (its call in flight still ran after the %gs grace, GS_MCP_BREAK_GRACE)"
                              % (STOPPING, self.grace))

    def _end_running(self, reason):
        for session in list(self.sessions.by_id.values()):
            self.sessions.end(session, reason)   # kills its worker: session_ended ends the drain

    def _drained(self):
        self.draining = False
        if self._grace_timer is not None:
            self._grace_timer.cancel()
            self._grace_timer = None
        self._stop_accepting()
        self._deadline = self.loop.now + SHUTDOWN_GRACE
        self._await_workers()

    def _await_workers(self):
        router = self.router
        self.workers = [w for w in self.workers if w.alive]
        # A reply written late in the drain may still be on its way out.
        writing = any(conn.out for conn in router.connections)
        if (self.workers or writing) and self.loop.now < self._deadline:
            self.loop.call_later(POLL, self._await_workers)
            return
        if self.workers and not self.killed_late:
            self.killed_late = True
            log.warning("%d worker(s) did not exit within %gs of being told to stop; killed them",
                        len(self.workers), SHUTDOWN_GRACE)
            for worker in self.workers:
                worker.kill()
            self._deadline = self.loop.now + REAP_GRACE
            self.loop.call_later(POLL, self._await_workers)
            return
        router.pool.stop_spawner(self._finish)   # the loop runs on while it ends

    def _finish(self):
        router = self.router
        for conn in list(router.connections):
            conn.close()
        if router.image is not None and (self.sessions.calls_cut or self.killed_late):
            # A worker killed mid-call, by this stop or earlier (or dead by itself), may
            # have been committing: its files would stay half-renamed until the next start.
            # Not waited for: a lock another process holds is a commit of theirs, which
            # finishes its own (a killed worker's lock went with it, reaped above).
            router.recover_image(Path(router.image), wait=False)
        router.repeated.flush()   # last: no request is handled any more to cause one
        self.loop.stop()
