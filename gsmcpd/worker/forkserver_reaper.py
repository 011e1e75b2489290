"""The forkserver's first preload: it becomes a child subreaper.

A spawner that dies (killed from outside, or by a worker's user code: the spawner is
every worker's parent) leaves its workers and spares to its nearest subreaper ancestor.
Without one that is init, which may never reap them (a container's pid 1 often does
not); with this, it is the forkserver, whose own SIGCHLD loop reaps every child it has
(multiprocessing.forkserver.main). The router ends the dead spawner's spares at once
(WorkerPool); its sessions' workers run on and are reaped here when they end.
Imported only in the forkserver (workers.PRELOAD): any other process importing it would
become a subreaper too (and log as the forkserver does).
"""

import logging
import sys
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
