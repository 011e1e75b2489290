"""Worker processes as the router sees them: start, frame channel, signals, spares.

Workers are started from a forkserver, so they never inherit the listening socket
or any client socket: the forkserver itself was started with only the fds it needs,
and each worker receives exactly one fd, its end of the session's socketpair.
The router learns of a worker's death from its process sentinel or from EOF on the
frame socket, whichever comes first, and never waits for either.
"""

import errno
import logging
import multiprocessing
import os
import queue
import resource
import signal
import socket
import threading

from gsmcpd.router.connection import RECV_SIZE
from gsmcpd.router.loop import recv_some, send_some
from gsmcpd.wire import frames

log = logging.getLogger("gsmcpd.workers")

_context = None
PRELOAD = ["gsmcpd.worker.preload"]


def context():
    global _context
    if _context is None:
        _context = multiprocessing.get_context("forkserver")
        # Imported once in the forkserver, shared copy-on-write by every worker, so
        # preparing a session costs no imports (they were ~100 ms of session open).
        _context.set_forkserver_preload(PRELOAD)
    return _context


def start_process():
    """Fork a worker from the forkserver: (process, the router's end of its socket).

    Blocking: a round trip to the forkserver. The pool calls it on its own thread;
    the loop calls it only when no spare is ready.
    """
    from gsmcpd.worker import main as worker_main

    # Running out of descriptors halfway through a start kills the forkserver
    # (multiprocessing's own handshake then breaks), so refuse before starting one.
    free = _free_descriptors()
    if free < DESCRIPTOR_HEADROOM:
        raise OSError(errno.EMFILE, "only %d file descriptors left" % free)
    ours, theirs = socket.socketpair()
    try:
        process = context().Process(target=worker_main.run, args=(theirs, os.getpid()),
                                    name="gsmcpd-worker")
        process.start()
        # multiprocessing polls every child it still knows at each start: O(sessions)
        # per fork, ~14 ms of the router's CPU at 1000 sessions. The router watches
        # its workers' sentinels and reaps them itself, so it keeps them off that list.
        multiprocessing.process._children.discard(process)
    except BaseException:
        ours.close()
        raise
    finally:
        theirs.close()
    return process, ours


DESCRIPTOR_HEADROOM = 16  # what one start needs, with room to spare


def _free_descriptors():
    limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if limit == resource.RLIM_INFINITY:
        return DESCRIPTOR_HEADROOM
    return limit - len(os.listdir("/proc/self/fd"))


class Worker:
    """One worker process and the router's end of its frame socket."""

    def __init__(self, loop, started=None):
        self.loop = loop
        self.process, self.sock = started or start_process()
        self.pid = self.process.pid
        self.sock.setblocking(False)
        self.decoder = frames.FrameDecoder(raw_messages=True)  # replies are relayed, not parsed
        self.out = bytearray()
        self.alive = True
        self.listener = None  # object with on_worker_frame(worker, msg), on_worker_exit(worker)
        self._sentinel = self.process.sentinel
        loop.add_reader(self._sentinel, self._on_exit)
        self._update_interest()

    # -- frames ------------------------------------------------------------
    def send(self, message):
        return self.send_bytes(frames.encode(message))

    def send_bytes(self, data):
        if not self.alive:
            return False
        if not self.out:
            try:
                sent = send_some(self.sock, data)
            except OSError:
                self._on_exit()
                return False
            data = data[sent:]
        if data:
            self.out += data
            self._update_interest()
        return True

    def _on_writable(self):
        try:
            sent = send_some(self.sock, self.out)
        except OSError:
            self._on_exit()
            return
        del self.out[:sent]
        if not self.out:
            self._update_interest()

    def _on_readable(self):
        data = recv_some(self.sock, RECV_SIZE)
        if data is None:
            return
        if not data:
            self._on_exit()
            return
        try:
            messages = self.decoder.feed(data)
        except frames.FrameError as exc:
            # A worker that speaks garbage is ended; the router never is.
            log.error("worker %d sent a bad frame (%s); stopping it", self.pid, exc)
            self.kill()
            self._on_exit()
            return
        for message in messages:
            if self.listener is not None:
                self.listener.on_worker_frame(self, message)
            if not self.alive:
                return

    def _update_interest(self):
        if self.alive:
            self.loop.set_interest(self.sock, self._on_readable, self._on_writable if self.out else None)

    # -- signals and death ---------------------------------------------------
    def signal(self, signum):
        if self.alive:
            try:
                os.kill(self.pid, signum)
            except ProcessLookupError:
                pass

    def kill(self):
        self.signal(signal.SIGKILL)

    def stop(self):
        """Ask politely; the sentinel tells us when it has gone."""
        self.send({"op": "stop"})

    def _on_exit(self):
        if not self.alive:
            return
        self.alive = False
        self.loop.remove(self.sock)
        self.loop.remove(self._sentinel)
        try:
            self.sock.close()
        except OSError:
            pass
        self.kill()  # EOF first: make sure the process is really gone
        self._reap()
        if self.listener is not None:
            self.listener.on_worker_exit(self)

    def _reap(self):
        # exitcode polls the forkserver's report without waiting; after SIGKILL
        # it arrives within moments, so check back until it has.
        if self.process.exitcode is None:
            self.loop.call_later(0.05, self._reap)
            return
        self.process.close()


class WorkerPool:
    """Pre-started spare workers, so opening a session does not wait for a fork.

    Spares are forked on the pool's own thread (a fork round trip is milliseconds
    the loop must not spend) and handed to the loop, which alone touches them.
    """

    def __init__(self, loop, spares):
        self.loop = loop
        self.target = spares
        self.spares = []
        self.closed = False
        self._starting = 0  # forks asked of the thread and not yet adopted
        self._jobs = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._fork_spares, name="gsmcpd-spares", daemon=True)

    def start(self):
        self._thread.start()
        self.replenish()

    def claim(self):
        while self.spares:
            worker = self.spares.pop()
            if worker.alive:
                self.replenish()
                return worker
        worker = Worker(self.loop)  # none ready: this session waits for a fork
        self.replenish()
        return worker

    def replenish(self):
        if self.closed:
            return
        self.spares = [w for w in self.spares if w.alive]
        for _ in range(self.target - len(self.spares) - self._starting):
            self._starting += 1
            self._jobs.put(True)

    def _fork_spares(self):
        while self._jobs.get():
            try:
                started = start_process()
            except Exception:
                log.exception("could not start a spare worker")
                started = None
            self.loop.call_soon_threadsafe(lambda started=started: self._adopt(started))

    def _adopt(self, started):
        self._starting -= 1
        if started is None:
            return
        worker = Worker(self.loop, started)
        if self.closed:
            worker.kill()
            return
        worker.listener = _SpareListener(self)
        self.spares.append(worker)

    def close(self):
        self.closed = True
        self._jobs.put(False)
        for worker in self.spares:
            worker.stop()
        return list(self.spares)


class _SpareListener:
    def __init__(self, pool):
        self.pool = pool

    def on_worker_frame(self, worker, message):
        log.warning("spare worker %d sent an unexpected frame: %r", worker.pid, message)

    def on_worker_exit(self, worker):
        if worker in self.pool.spares:
            self.pool.spares.remove(worker)
