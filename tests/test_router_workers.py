"""The router's side of worker starts: real spares forked by the real spawner."""

import multiprocessing
import os
import select
import signal
import socket

import pytest

from gsmcpd.router.workers import Spawner, has_descriptors
from gsmcpd.wire import frames
from helpers import pid_alive, wait_until


@pytest.fixture
def spawner():
    spawner = Spawner()
    spawner.launch()
    yield spawner
    spawner.stop()


def received(spawner, timeout=20):
    """The spawner's next message, waited for as the router's loop would."""
    assert select.select([spawner.control], [], [], timeout)[0], "nothing from the spawner"
    return spawner.receive()


def spares(spawner, count):
    spawner.ask(count)
    got = [received(spawner) for _ in range(count)]
    assert [kind for kind, _ in got] == ["spare"] * count, got
    return [detail for _, detail in got]


def prepare_and_ping(sock):
    sock.settimeout(20)
    sock.sendall(frames.encode({"op": "prepare", "session": {"toolsets": ["bench"]}}) +
                 frames.encode({"op": "call", "seq": 1,
                                "message": {"jsonrpc": "2.0", "id": 1, "method": "ping"}}))
    decoder, got = frames.FrameDecoder(), []
    while len(got) < 2:
        got += decoder.feed(sock.recv(65536))
    return got


def test_spares_answer_exit_on_eof_and_their_pidfds_say_so(spawner):
    (pid, pidfd, sock), (pid2, pidfd2, sock2) = spares(spawner, 2)
    assert pid != pid2 and pid_alive(pid) and pid_alive(pid2)
    assert spawner.process not in multiprocessing.active_children()  # ours to end, not atexit's
    got = prepare_and_ping(sock)
    assert got[0]["op"] == "prepared" and got[0]["ok"] is True
    assert got[1] == {"op": "reply", "seq": 1, "message": {"jsonrpc": "2.0", "id": 1, "result": {}}}
    for s, fd, p in ((sock, pidfd, pid), (sock2, pidfd2, pid2)):
        s.close()   # EOF: the worker exits, the pidfd turns readable, the kernel reaps it
        assert select.select([fd], [], [], 20)[0]
        assert wait_until(lambda p=p: not os.path.exists("/proc/%d" % p), 20)
        os.close(fd)
    assert spawner.receive() is None          # nothing more was asked for


def test_signals_go_through_the_pidfd(spawner):
    [(pid, pidfd, sock)] = spares(spawner, 1)
    signal.pidfd_send_signal(pidfd, signal.SIGKILL)
    assert select.select([pidfd], [], [], 20)[0]
    sock.close()
    os.close(pidfd)


def test_a_spare_gets_a_clean_start(spawner):
    # Only its frame socket (plus the std streams and what multiprocessing's own
    # forkserver holds), default SIGCHLD for its tools' subprocesses, and the
    # scheduling the spawner set up once for all its workers.
    [(pid, pidfd, sock)] = spares(spawner, 1)
    try:
        assert prepare_and_ping(sock)[0]["ok"] is True     # it is running
        targets = []
        for fd in os.listdir("/proc/%d/fd" % pid):
            try:   # a file the worker has open for a moment (its watchdog reads /proc) may go
                targets.append(os.readlink("/proc/%d/fd/%s" % (pid, fd)))
            except FileNotFoundError:
                pass
        assert sum(t.startswith("socket:") for t in targets) <= 2, targets
        status = open("/proc/%d/status" % pid).read()
        ignored = int(status.split("SigIgn:")[1].split()[0], 16)
        assert not ignored & (1 << (signal.SIGCHLD - 1))
        assert os.sched_getscheduler(pid) == os.SCHED_BATCH
    finally:
        sock.close()
        select.select([pidfd], [], [], 20)
        os.close(pidfd)


def test_bad_requests_get_errors_and_eof_ends_the_spawner(spawner):
    for request in (b"more 0 1", b"more many 1", b"fork 1 1", b"more 1000 1"):
        spawner.control.send(request)
        kind, detail = received(spawner)
        assert kind == "error" and "bad request" in detail
    process = spawner.process
    spawner.control.close()
    process.join(20)
    assert process.exitcode == 0


def test_the_descriptor_probe_gives_back_what_it_takes():
    before = len(os.listdir("/proc/self/fd"))
    assert has_descriptors(8)
    assert not has_descriptors(10 ** 7)
    assert len(os.listdir("/proc/self/fd")) == before


def test_a_garbled_message_from_the_spawner_is_an_error_and_its_descriptors_are_closed():
    spawner = Spawner()
    spawner.control, other = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        before = len(os.listdir("/proc/self/fd"))
        for message, count in ((b"spare notapid", 2), (b"spare 12", 1), (b"hello", 0)):
            passed = [os.dup(0) for _ in range(count)]
            socket.send_fds(other, [message], passed)
            for fd in passed:
                os.close(fd)
            kind, detail = received(spawner, 5)
            assert kind == "error" and detail, (message, detail)
        assert len(os.listdir("/proc/self/fd")) == before   # nothing received was kept
        other.close()
        assert received(spawner, 5)[0] == "eof"
    finally:
        spawner.control.close()
