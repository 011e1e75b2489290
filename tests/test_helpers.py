"""The suite's own machinery: a test that fails before stopping its daemon leaves no
gsmcpd behind (helpers.Daemon, conftest's checks); a process run in a terminal has it;
the ports daemons are handed are no outgoing connection's and no other test process's."""

import os
import select
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

import helpers
from helpers import Daemon, free_port, pid_alive, spawn_in_a_terminal

TESTS = Path(__file__).resolve().parent

# A test module run by a pytest of its own: one test, and one module fixture's set-up,
# fail with their daemon running, each writing that daemon's pid where told.
LEAVING = '''
import os
import pytest
from helpers import Daemon

def started(tmp, name):
    d = Daemon(tmp).start()
    with open(os.path.join(os.environ["PIDS"], name), "w") as f:
        f.write(str(d.proc.pid))
    return d

@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    started(tmp_path_factory.mktemp("shared"), "fixture")
    assert False, "set-up failed after the start"
    yield

def test_fails_before_its_stop(tmp_path):
    started(tmp_path, "test")
    assert False, "failed before the stop"

def test_on_a_fixture_whose_set_up_fails(shared):
    pass
'''


def test_a_daemon_left_running_by_a_test_or_a_fixture_is_killed_and_named(tmp_path):
    run_dir, pids = tmp_path / "run", tmp_path / "pids"
    run_dir.mkdir()
    pids.mkdir()
    (run_dir / "conftest.py").write_text((TESTS / "conftest.py").read_text())
    (run_dir / "test_leaving.py").write_text(LEAVING)
    env = dict(os.environ, PIDS=str(pids), PYTHONPATH=os.pathsep.join([str(TESTS), str(helpers.REPO)]))
    try:
        run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                              "--rootdir", str(run_dir), str(run_dir)], cwd=run_dir, env=env,
                             capture_output=True, text=True, timeout=120)
        out = run.stdout + run.stderr
        left = {name: int((pids / name).read_text()) for name in ("test", "fixture")}
        assert not any(pid_alive(pid) for pid in left.values()), out
        assert "left running after the test, now killed:\ngsmcpd pid %d," % left["test"] in out
        assert "left running at the end of the run, now killed:\ngsmcpd pid %d," % left["fixture"] in out
    finally:
        for name in os.listdir(pids):   # without the checks they live on: end them here
            pid = int((pids / name).read_text())
            if pid_alive(pid):
                os.killpg(pid, signal.SIGKILL)


def test_a_daemon_whose_start_fails_waiting_is_ended_there(tmp_path, monkeypatch):
    # `with Daemon() as d` and fixtures stop only what start returned: a wait that fails
    # (a daemon slow to listen, an interrupt) left the process to outlive the run.
    def interrupted(port, proc=None, **_):
        raise TimeoutError("nothing listening on port %d" % port)

    monkeypatch.setattr(helpers, "wait_for_port", interrupted)
    daemon = Daemon(tmp_path)
    with pytest.raises(TimeoutError):
        daemon.start()
    try:
        assert daemon.proc.poll() is not None
    finally:
        if daemon.proc.poll() is None:
            os.killpg(daemon.proc.pid, signal.SIGKILL)
            daemon.proc.wait()


def test_a_process_spawned_in_a_terminal_has_it_as_its_controlling_terminal(tmp_path):
    # What the terminal tests rely on: /dev/tty (where OpenSSL asks for a passphrase) is
    # the pty, and its hang-up reaches the process, the leader of a session of its own.
    code = ("import os, sys\nwith open('/dev/tty', 'w') as tty:\n"
            "    tty.write('tty %s leader %s\\n' % (os.ttyname(0), os.getsid(0) == os.getpid()))")
    proc, master = spawn_in_a_terminal([sys.executable, "-c", code], dict(os.environ))
    output = b""
    try:
        assert proc.wait(30) == 0
        while select.select([master], [], [], 0)[0]:
            try:
                output += os.read(master, 4096)
            except OSError:   # EIO: all written was read, and the child is gone
                break
    finally:
        os.close(master)
    assert output.decode().strip().endswith("leader True"), output
    assert output.startswith(b"tty /dev/pts/"), output


def test_free_port_hands_out_distinct_ports_outside_the_ephemeral_range():
    # A port the kernel may give any outgoing connection could be taken between the
    # pick and the daemon's bind: none such is handed out, and no port twice in a row.
    first, last = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    ports = [free_port() for _ in range(40)]
    assert len(set(ports)) == len(ports)
    assert all(1024 <= port and not first <= port <= last for port in ports), ports


def test_the_ephemeral_range_is_read_from_the_kernel_or_else_its_default(tmp_path):
    narrowed = tmp_path / "range"
    narrowed.write_text("40000\t50000\n")
    assert helpers.ephemeral_range(narrowed) == (40000, 50000)
    narrowed.write_text("not a range\n")
    assert helpers.ephemeral_range(narrowed) == helpers.LINUX_EPHEMERAL
    assert helpers.ephemeral_range(tmp_path / "missing") == helpers.LINUX_EPHEMERAL


def test_a_port_another_test_process_was_handed_is_not_handed_out_until_it_lets_go(tmp_path, monkeypatch):
    # Another process (another xdist worker, another run of the suite) handed it out and its
    # daemon has not bound it yet: the bind check alone would hand it out again.
    monkeypatch.setattr(helpers, "_claims", helpers._PortClaims(tmp_path / "claims"))
    first = helpers.handed_ports(helpers.ephemeral_range())[0]
    ready, release = os.pipe(), os.pipe()
    child = os.fork()
    if child == 0:   # the other process: claims the first port and holds it
        try:
            helpers._claims.own()
            helpers._claims.next = 0
            os.write(ready[1], b"%d" % free_port())
            os.read(release[0], 1)
        finally:
            os._exit(0)
    try:
        assert int(os.read(ready[0], 16)) == first
        helpers._claims.own()
        helpers._claims.next = 0
        mine = [free_port() for _ in range(3)]
        assert first not in mine
    finally:
        os.write(release[1], b"x")
        os.waitpid(child, 0)
    helpers._claims.next = 0   # let go (it ended): the port is free to claim again
    assert free_port() == first


def test_a_process_holds_only_its_last_claims(tmp_path, monkeypatch):
    monkeypatch.setattr(helpers, "_claims", helpers._PortClaims(tmp_path / "claims", held=3))
    ports = [free_port() for _ in range(5)]
    assert helpers._claims.ports == ports[-3:]


def test_free_port_passes_over_a_port_someone_holds(tmp_path, monkeypatch):
    monkeypatch.setattr(helpers, "_claims", helpers._PortClaims(tmp_path / "claims"))
    ports = helpers.handed_ports(helpers.ephemeral_range())
    with socket.socket() as held:
        for at, taken in enumerate(ports):   # the first the helper would hand out: the first free one
            try:
                held.bind(("127.0.0.1", taken))
                break
            except OSError:
                continue
        held.listen()
        helpers._claims.own()
        helpers._claims.next = at
        port = free_port()
    assert port in ports and ports.index(port) > at
