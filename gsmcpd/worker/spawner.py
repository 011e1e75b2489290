"""The spawner: the one preloaded process that forks every worker.

The router starts it once, through multiprocessing's forkserver (so it holds no
client socket and has every worker module imported, rehearsed and frozen), and
asks it for spare workers. Each worker is a `multiprocessing` fork of the
spawner: that skips the forkserver's per-start work (pickling the Process object,
unpickling it in the child, re-preparing `sys.path` and `__main__`), which was
half of a new worker's CPU and page faults. Forking here, not on a thread of the
router, also keeps the router single-threaded: it only receives finished spares.

Protocol on the control socket (SOCK_SEQPACKET: one message per send):
  spawner -> router: first, b"hello" with one fd: a pidfd for the spawner itself
                     (opened by the router from the pid, it could name a stranger
                     if the spawner died and its pid was reused in between)
  router -> spawner: b"more <n> <router pid>"
  spawner -> router: per worker, b"spare <pid>" with two fds: a pidfd for the
                     worker and the router's end of its frame socket;
                     or b"error <reason>" with none, when a fork failed.
The router signals and watches each worker through its pidfd, which can never
name a recycled pid, so the spawner lets the kernel reap exited workers.
"""

from __future__ import annotations

import logging
import multiprocessing
import multiprocessing.resource_tracker
import os
import resource
import signal
import socket

from gsmcpd.worker import main as worker_main

REQUEST_SIZE = 64
MAX_BATCH = 64  # spares asked for at once; more is a confused router


def serve(control: socket.socket, worker_nice: int = 0) -> None:
    """Fork the spares asked for, until the router closes its end. Each runs
    `worker_nice` nicer than the router."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)    # a terminal's ^C is the router's to handle
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)   # exited workers are reaped by the kernel
    control.setblocking(True)
    own = os.pidfd_open(os.getpid())
    try:
        if not _send(control, b"hello", [own]):
            return
    finally:
        os.close(own)
    # What every worker would otherwise set up for itself, done once to be inherited.
    worker_main.configure_process()
    _yield_to_router(worker_nice)
    forking = multiprocessing.get_context("fork")
    while True:
        try:
            request = control.recv(REQUEST_SIZE)
        except OSError:
            return
        if not request:
            return                                   # the router is gone
        try:
            count, router_pid = _parse(request)
        except ValueError as error:
            count, router_pid = 0, None
            _send(control, b"error %s" % str(error).encode(), [])
        for _ in range(count):
            try:
                pid, pidfd, router_end = _fork(forking, router_pid)
            except Exception as error:  # the router reports it; the spawner goes on
                if not _send(control, b"error %s: %s" % (type(error).__name__.encode(),
                                                         str(error).encode()), []):
                    return
                continue
            try:
                if not _send(control, b"spare %d" % pid, [pidfd, router_end.fileno()]):
                    return
            finally:
                os.close(pidfd)
                router_end.close()


def _yield_to_router(increment: int) -> None:
    """Lower this process's priority, and so every worker's, below the router's.

    The one router thread carries every session's traffic; a worker runs one
    session's tools. At equal priority busy workers took the CPU from the router and
    every session waited (docs/PERFORMANCE.md). With the usual RLIMIT_NICE of 0 the
    step cannot be undone, so it is taken here, once, for all workers (and for the
    forks, background work too)."""
    if increment > 0:
        log = logging.getLogger("gsmcpd.worker")
        try:
            before = os.nice(0)
            after = os.nice(increment)
        except OSError as error:
            log.warning("workers run at the router's priority: cannot lower it (%s)", error)
            return
        if after - before < increment:    # the kernel stops at 19 without a word
            log.warning("workers run %d nicer than the router, not %d: nice 19 is the lowest "
                        "priority", after - before, increment)


def _parse(request):
    verb, count, router_pid = (request.split() + [b"", b""])[:3]
    if verb != b"more" or not count.isdigit() or not router_pid.isdigit() or not 0 < int(count) <= MAX_BATCH:
        raise ValueError("bad request %r" % request[:40])
    return int(count), int(router_pid)


def _send(control, message, fds):
    try:
        socket.send_fds(control, [message], fds)
        return True
    except OSError:
        return False


def _fork(forking, router_pid):
    """One worker: (pid, pidfd, the router's end of its frame socket)."""
    router_end, worker_end = socket.socketpair()
    try:
        process = forking.Process(target=_worker, name="gsmcpd-worker", args=(worker_end, router_pid))
        process.start()
    except BaseException:
        router_end.close()
        raise
    finally:
        worker_end.close()
    # The spawner never joins its workers; multiprocessing would poll each one at
    # every later start (O(workers)) and keep it in memory.
    multiprocessing.process._children.discard(process)
    return process.pid, os.pidfd_open(process.pid), router_end


def _worker(sock: socket.socket, router_pid: int) -> None:
    # A fork inherits the spawner's descriptors and dispositions: keep only stdio and
    # our own socket, and give tools back a normal SIGCHLD and SIGINT (subprocess needs
    # the first).
    _close_inherited(sock.fileno())
    # A process group of its own: what the user's code starts is in it, and ends with it
    # (worker_main.end_process; the router's kill takes the group too).
    os.setpgid(0, 0)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    worker_main.run(sock, router_pid)


def _close_inherited(keep: int) -> None:
    """Close every descriptor but 0-2 and `keep`, before any user code runs (or the
    switch to a user's account): the spawner's control socket, the router's end of our
    socket (else we would never see EOF), multiprocessing's pipes (the forkserver's alive
    pipe, whose write crashes it; root's resource tracker, told what to unlink at exit).
    One close_range call, cheap on the session-open path."""
    os.closerange(3, keep)
    os.closerange(keep + 1, max(keep + 1, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    # Its pipe is closed: a tool using shared memory must start a tracker of its own,
    # not write to whatever file reuses that number.
    tracker = multiprocessing.resource_tracker._resource_tracker
    tracker._fd = tracker._pid = None
