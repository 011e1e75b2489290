"""The spawner: the one preloaded process that forks every worker.

The router starts it once, through multiprocessing's forkserver (so it holds no
client socket and has every worker module imported, rehearsed and frozen), and
asks it for workers over a socketpair. Each worker is a `multiprocessing` fork of
the spawner: that skips the forkserver's per-start work (pickling the process
object, unpickling it in the child, re-preparing `sys.path` and `__main__`), which
was half of a new worker's CPU and page faults.

Protocol, one request at a time on the control socket:
  router -> spawner: b"start <router pid>" with one fd, the worker's end of its frame socket
  spawner -> router: b"ok <pid>" with one fd, a pidfd for the worker, or b"error <reason>"
The router signals and watches the worker through the pidfd, which can never name
another process, so the spawner lets the kernel reap exited workers (SIGCHLD ignored).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import socket

from gsmcpd.worker import main as worker_main

REQUEST_SIZE = 256


def serve(control: socket.socket) -> None:
    """Answer start requests until the router closes its end."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)    # a terminal's ^C is the router's to handle
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)   # exited workers are reaped by the kernel
    # What every worker would otherwise set up for itself, done once to be inherited.
    worker_main.configure_process()
    control.setblocking(True)
    forking = multiprocessing.get_context("fork")
    while True:
        try:
            request, fds, _flags, _addr = socket.recv_fds(control, REQUEST_SIZE, 1)
        except OSError:
            return
        if not request:
            return                                   # the router is gone
        try:
            reply, pidfd = _start(forking, control, request, fds)
        except Exception as error:  # anything wrong is the router's to report, not ours to die of
            reply, pidfd = b"error %s: %s" % (type(error).__name__.encode(), str(error).encode()), None
        finally:
            for fd in fds:
                os.close(fd)
        try:
            socket.send_fds(control, [reply], [pidfd] if pidfd is not None else [])
        except OSError:
            return
        finally:
            if pidfd is not None:
                os.close(pidfd)


def _start(forking, control, request, fds):
    verb, _, router_pid = request.partition(b" ")
    if verb != b"start" or len(fds) != 1 or not router_pid.isdigit():
        raise ValueError("bad start request %r with %d fds" % (request[:40], len(fds)))
    sock = socket.socket(fileno=fds.pop())  # ours now: the worker must hold no second copy
    try:
        process = forking.Process(target=_worker, args=(control.fileno(), sock, int(router_pid)),
                                  name="gsmcpd-worker")
        process.start()
    finally:
        sock.close()
    # The spawner never joins its workers; multiprocessing would poll each one at
    # every later start (O(workers)) and keep it in memory.
    multiprocessing.process._children.discard(process)
    return b"ok %d" % process.pid, os.pidfd_open(process.pid)


def _worker(control_fd: int, sock: socket.socket, router_pid: int) -> None:
    # A fork inherits the spawner's descriptors and dispositions: drop its control
    # socket, and give tools back a normal SIGCHLD (subprocess needs it).
    os.close(control_fd)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    worker_main.run(sock, router_pid)
