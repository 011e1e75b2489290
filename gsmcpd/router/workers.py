"""Worker processes as the router sees them: start, frame channel, signals, spares.

Workers are forked by the spawner (gsmcpd.worker.spawner), itself started once
through multiprocessing's forkserver, so no worker ever inherits the listening
socket or any client socket: each receives exactly one fd, its end of the
session's socketpair. The router holds a pidfd per worker: it signals through it
(a pidfd never names a recycled pid) and learns of the worker's death from it
becoming readable, or from EOF on the frame socket, whichever comes first, and
never waits for either.
"""

import atexit
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

PRELOAD = ["gsmcpd.worker.preload"]
SPAWNER_TIMEOUT = 30.0  # seconds a start may take before the spawner is deemed stuck


class Spawner:
    """The router's handle on the spawner process; `start()` is thread-safe."""

    def __init__(self):
        self._lock = threading.Lock()
        self._process = None
        self._control = None

    def start(self):
        """A new worker: (pid, pidfd, the router's end of its frame socket).

        Blocking: a round trip to the spawner, which forks. The pool calls it on its
        own thread; the loop calls it only when no spare is ready. A spawner that
        died is started again, once per call."""
        # Running out of descriptors halfway through a start would leave the
        # spawner's reply unread, so refuse before starting one.
        free = _free_descriptors()
        if free < DESCRIPTOR_HEADROOM:
            raise OSError(errno.EMFILE, "only %d file descriptors left" % free)
        with self._lock:
            try:
                return self._request()
            except (OSError, EOFError) as error:
                log.warning("the worker spawner failed (%s); starting a new one", error)
                self._stop()
                return self._request()

    def _request(self):
        if self._control is None:
            self._launch()
        ours, theirs = socket.socketpair()
        try:
            socket.send_fds(self._control, [b"start %d" % os.getpid()], [theirs.fileno()])
            reply, fds, _flags, _addr = socket.recv_fds(self._control, 512, 1)
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        if not reply:
            ours.close()
            raise EOFError("the spawner closed its socket")
        verb, _, rest = reply.partition(b" ")
        if verb != b"ok" or len(fds) != 1:
            ours.close()
            for fd in fds:
                os.close(fd)
            raise OSError(errno.EAGAIN, "the spawner could not start a worker: %s"
                          % rest.decode("utf-8", "replace"))
        return int(rest), fds[0], ours

    def _launch(self):
        context = multiprocessing.get_context("forkserver")
        # Imported once in the forkserver, inherited by the spawner and shared
        # copy-on-write by every worker, so preparing a session costs no imports.
        context.set_forkserver_preload(PRELOAD)
        from gsmcpd.worker import spawner

        ours, theirs = socket.socketpair()
        try:
            process = context.Process(target=spawner.serve, args=(theirs,), name="gsmcpd-spawner")
            process.start()
            # Ours to end (EOF on its socket, see close()), not multiprocessing's to
            # join at exit: a join before that EOF would wait forever.
            multiprocessing.process._children.discard(process)
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        ours.settimeout(SPAWNER_TIMEOUT)
        self._process, self._control = process, ours

    def close(self):
        """EOF on its socket ends the spawner; its workers are the router's to stop."""
        with self._lock:
            self._stop(grace=5.0)

    def _stop(self, grace=0.0):
        if self._control is not None:
            self._control.close()
        if self._process is not None:
            self._process.join(grace)
            if self._process.exitcode is None:
                self._process.kill()
                self._process.join(5)
        self._process = self._control = None


_spawner = Spawner()
atexit.register(_spawner.close)


def start_process():
    """Start a worker: (pid, pidfd, the router's end of its frame socket)."""
    return _spawner.start()


def close_spawner():
    _spawner.close()


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
        self.pid, self.pidfd, self.sock = started or start_process()
        self.sock.setblocking(False)
        self.decoder = frames.FrameDecoder(raw_messages=True)  # replies are relayed, not parsed
        self.out = bytearray()
        self.alive = True
        self.listener = None  # object with on_worker_frame(worker, msg), on_worker_exit(worker)
        loop.add_reader(self.pidfd, self._on_exit)  # readable once the process has exited
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
                signal.pidfd_send_signal(self.pidfd, signum)
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
        try:
            signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)  # EOF first: make sure it is gone
        except ProcessLookupError:
            pass
        self.alive = False
        self.loop.remove(self.sock)
        self.loop.remove(self.pidfd)
        for closing in (self.sock.close, lambda: os.close(self.pidfd)):
            try:
                closing()
            except OSError:
                pass
        # Nothing to reap: the spawner is the parent, and lets the kernel do it.
        if self.listener is not None:
            self.listener.on_worker_exit(self)


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
