"""A worker's exit status as the router learns it: reported by the spawner (its parent,
which reaps it) on the control socket, usually just after the router saw the worker's
socket close or its pidfd turn readable, so a session ending because its worker died
waits for it, on a timer, at most PATIENCE, during a graceful stop too (the pool reads the
spawner until it stops it, WorkerPool.stop_spawner) (gsmcpd.wire.worker_exit words it).
"""

# Seconds a dead worker's session waits for its status before it is told without one:
# the spawner reaps within milliseconds of the death, but on a swamped host it took over
# 0.2 s, and past the 0.4 s once waited at a load of 11 on two cores. Only a session whose
# worker died waits, on a timer, and only while its spawner may still report (one gone is
# said at once: report(None)): a slow spawner's status is waited for, a stuck one's no more
# than this. A status later than commit_fate.PATIENCE, which counts from the death too,
# leaves a call's commits one look; the most a stop waits for a death to be told
# (shutdown.DEATH_TOLD) is the longer of the two.
PATIENCE = 1.5


class ExitStatus:
    """One worker's: `code` (os.waitstatus_to_exitcode's, None until reported or if none
    will be), `stopped_for` (why the router killed it, if it did)."""

    def __init__(self):
        self.known = False
        self.code = None
        self.stopped_for = None
        self._waiting = []   # (then, timer)

    def report(self, code):
        """Its status (None: none will come, its spawner is gone); the waiting are told."""
        if self.known:
            return
        self.known, self.code = True, code
        waiting, self._waiting = self._waiting, []
        for then, timer in waiting:
            timer.cancel()
            then()

    def when_known(self, loop, then, patience=PATIENCE):
        """then() once the status is known, or after `patience` seconds without it: at once
        if it is known, or needs none (the router killed it), or patience is 0."""
        if self.known or self.stopped_for or patience <= 0:
            then()
            return

        def gave_up():   # report() cancels this timer: then() runs once
            self._waiting = [(waiting, timer) for waiting, timer in self._waiting if waiting is not then]
            then()

        self._waiting.append((then, loop.call_later(patience, gave_up)))

