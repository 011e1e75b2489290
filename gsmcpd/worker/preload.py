"""What the forkserver imports once, before it forks any worker.

Every worker is a fork of the forkserver, so whatever is imported here is shared
copy-on-write by all of them and costs a session open nothing (the imports were ~100 ms
of it). The objects are then frozen out of the garbage collector: a worker's full
collections never walk the shared heap, so they never copy it page by page into each
worker's private memory.
"""

import gc

import gsmcpd.auth.usermap  # noqa: F401  (per-user workers switch account at prepare)
import gsmcpd.image.view  # noqa: F401
import gsmcpd.worker.main  # noqa: F401
import gsmcpd.worker.server  # noqa: F401
from gsmcpd.worker.toolsets import CORE_TOOLSETS, resolve_toolsets

resolve_toolsets(list(CORE_TOOLSETS) + ["bench"])  # imports every core toolset module

gc.collect()
gc.freeze()
