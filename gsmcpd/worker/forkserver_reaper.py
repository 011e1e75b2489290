"""The forkserver's first preload: it becomes a child subreaper, and kills what it has
left when it exits.

A spawner that dies (killed from outside, or by a worker's user code: the spawner is
every worker's parent) leaves its workers and spares to its nearest subreaper ancestor.
Without one that is init, which may never reap them (a container's pid 1 often does
not); with this, it is the forkserver, whose own SIGCHLD loop reaps every child it has
(multiprocessing.forkserver.main). The router ends the dead spawner's spares at once
(WorkerPool); its sessions' workers run on and are reaped here when they end, and what
such a worker leaves as it dies (its process group, what had left it) comes here too.
The next spawner kills that (gsmcpd.worker.spawner.Orphans); what none could (it died
while no spawner ran, or the daemon stopped first) is killed here at the forkserver's
exit, which follows the router's: every process still below it, round by round.
Imported only in the forkserver (workers.PRELOAD): any other process importing it would
become a subreaper too (and log as the forkserver does).
"""

import atexit
import logging
import os
import sys
import time
import warnings

from gsmcpd.worker import reaper, stderr_log

# Its records (here, the preload's) in the workers' format, not bare messages: a detached
# serve tells them from its own lines in the log file they share (gsmcpd.readypipe).
stderr_log.log_to(sys.stderr)

# The forkserver reaps an adopted child with a warning meant for a bug of its own.
warnings.filterwarnings("ignore", message="forkserver: waitpid returned unexpected pid",
                        module="multiprocessing.forkserver")

_why_not = reaper.become_subreaper()
if _why_not:
    logging.getLogger("gsmcpd.worker").warning(
        "what a killed worker spawner leaves goes to init, which may not reap it: %s", _why_not)

_FORKSERVER, _ROUTER = os.getpid(), os.getppid()
ROUTER_END_WAIT = 2.0   # seconds the exiting forkserver waits for the router to have ended


def _end_what_is_left():
    """At the forkserver's exit, once the router has ended (the router's end, closing the
    alive pipe, is why it exits; an error of its own ends it too, the router and its
    sessions running on: their workers are then left be): every process still below it,
    its own children now that its loop is over (unreaped: their pids are theirs). Not in
    a fork of it that exits through Python (a spawner or a worker ends with os._exit)."""
    if os.getpid() != _FORKSERVER:
        return
    deadline = time.monotonic() + ROUTER_END_WAIT
    while os.getppid() == _ROUTER:        # it closes its descriptors, then ends: we are reparented
        if time.monotonic() > deadline:
            return
        time.sleep(0.01)
    reaper.kill_descendants()


atexit.register(_end_what_is_left)
