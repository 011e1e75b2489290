"""Work done in a forked child switched to another account.

A root router under the per-user drop-in holds no CAP_DAC_OVERRIDE: what a user's
worker or commit made it may not remove or rewrite. A child switched to the owning
account may, as that account could anyway (tmpdirs removes a worker's directory so, the
image store's recovery runs so).
"""
from __future__ import annotations

import os
import signal
from typing import Callable

SAID_MAX = 4000   # bytes of what the child says: a reason, not a report


def said_as(uid: int, gid: int, groups: list[int], work: Callable[[], bytes],
            failed: Callable[[BaseException], bytes]) -> bytes:
    """What `work()` says (bytes) run in a child switched to `uid`, `gid` and `groups`;
    `failed(error)` when the switch or the work raised. The child is waited for."""
    read, write = os.pipe2(os.O_CLOEXEC)
    # Every signal held from before the fork until the child has dropped the parent's
    # handling: one that came to the child in between ran the router's handler in it.
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
    try:
        pid = os.fork()
    except BaseException:   # EAGAIN at the process limit: the pipe must not outlive the call
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        os.close(read)
        os.close(write)
        raise
    if pid == 0:
        said = b""
        try:
            os.close(read)
            _drop_parents_signal_handling()
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)   # a signal held meanwhile acts now, by default
            os.setgroups(groups)
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)
            said = work()
        except BaseException as error:
            said = failed(error)
        finally:
            try:
                os.write(write, said[:SAID_MAX])
            finally:
                os._exit(0)
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    os.close(write)
    try:
        with open(read, "rb", closefd=False) as told:
            return told.read()
    finally:
        os.close(read)
        os.waitpid(pid, 0)


def _drop_parents_signal_handling() -> None:
    """In the child: the router's handlers (SIGTERM, SIGINT: stop; SIGHUP, SIGUSR1: reload)
    only queue work for a loop the child never runs, so a hung child ignored a SIGTERM; and
    its signals wrote into the router's wakeup pipe, waking the router for nothing."""
    signal.set_wakeup_fd(-1)
    for signum in signal.valid_signals():
        if callable(signal.getsignal(signum)):
            signal.signal(signum, signal.SIG_DFL)
