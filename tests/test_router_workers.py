"""The router's worker starts: real workers forked by the real spawner."""

import multiprocessing
import os
import select
import signal
import socket

from gsmcpd.router import workers
from gsmcpd.wire import frames
from helpers import pid_alive, wait_until


def test_a_started_worker_answers_and_exits_on_eof_and_the_pidfd_says_so():
    pid, pidfd, sock = workers.start_process()
    try:
        assert pid_alive(pid) and os.getppid() != pid
        assert multiprocessing.active_children() == [] or all(
            p.name == "gsmcpd-spawner" for p in multiprocessing.active_children())
        sock.settimeout(20)
        sock.sendall(frames.encode({"op": "prepare", "session": {"toolsets": ["bench"]}}) +
                     frames.encode({"op": "call", "seq": 1,
                                    "message": {"jsonrpc": "2.0", "id": 1, "method": "ping"}}))
        decoder, got = frames.FrameDecoder(), []
        while len(got) < 2:
            got += decoder.feed(sock.recv(65536))
        assert got[0]["op"] == "prepared" and got[0]["ok"] is True
        assert got[1] == {"op": "reply", "seq": 1, "message": {"jsonrpc": "2.0", "id": 1, "result": {}}}
    finally:
        sock.shutdown(socket.SHUT_RDWR)
        sock.close()
    # the router learns of the exit from the pidfd; the spawner lets the kernel reap it
    assert select.select([pidfd], [], [], 20)[0]
    assert wait_until(lambda: not os.path.exists("/proc/%d" % pid), 20)
    os.close(pidfd)


def test_signals_go_through_the_pidfd_and_a_dead_spawner_is_replaced():
    pid, pidfd, sock = workers.start_process()
    spawner = workers._spawner._process
    signal.pidfd_send_signal(pidfd, signal.SIGKILL)
    assert select.select([pidfd], [], [], 20)[0]
    os.close(pidfd)
    sock.close()
    spawner.kill()
    spawner.join(20)
    pid2, pidfd2, sock2 = workers.start_process()   # a new spawner, started on demand
    try:
        assert workers._spawner._process is not spawner and pid_alive(pid2)
    finally:
        sock2.close()
        assert select.select([pidfd2], [], [], 20)[0]
        os.close(pidfd2)


def test_a_worker_gets_a_clean_start_from_the_spawner():
    # Only its frame socket (plus the std streams and what multiprocessing's own
    # forkserver holds), default SIGCHLD for its tools' subprocesses, and the
    # scheduling the spawner set up once for all its workers.
    pid, pidfd, sock = workers.start_process()
    try:
        sock.settimeout(20)
        sock.sendall(frames.encode({"op": "prepare", "session": {"toolsets": ["bench"]}}))
        assert frames.FrameDecoder().feed(sock.recv(65536))[0]["ok"] is True  # it is running
        fds = os.listdir("/proc/%d/fd" % pid)
        targets = [os.readlink("/proc/%d/fd/%s" % (pid, fd)) for fd in fds]
        assert sum(t.startswith("socket:") for t in targets) <= 2, targets
        status = open("/proc/%d/status" % pid).read()
        ignored = int(status.split("SigIgn:")[1].split()[0], 16)
        assert not ignored & (1 << (signal.SIGCHLD - 1))
        assert os.sched_getscheduler(pid) == os.SCHED_BATCH   # set once, in the spawner
    finally:
        sock.close()
        select.select([pidfd], [], [], 20)
        os.close(pidfd)
