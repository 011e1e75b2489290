"""End-to-end: each worker's temporary files are its own, in a private directory that
goes with the worker (DELETE, a kill -9 of it, the daemon's stop), and what a daemon
killed outright left is removed by the next start."""

import ast
import os
import shutil
import signal
import stat
import tempfile
from pathlib import Path

import pytest

from gsmcpd.exitcodes import FAILED
from helpers import Daemon, open_session, pid_alive, tool_text, wait_until
from test_e2e_lifetime import worker_pid
from test_e2e_spawner import spawner_after, spawner_of

# Its sitecustomize kills a daemon's forkserver in its preload's rehearsal.
REHEARSAL_KILLED = Path(__file__).parent / "rehearsal_killed"

# What the tester found left in /tmp: a temp file and directory held open, a Manager (its
# pymp-* directory and socket), a Listener's socket.
MAKE_TEMPORARY_FILES = """
import multiprocessing, multiprocessing.connection, multiprocessing.util, os, tempfile
held_file = tempfile.NamedTemporaryFile()
held_dir = tempfile.TemporaryDirectory()
manager = multiprocessing.Manager()
listener = multiprocessing.connection.Listener()
(os.environ["TMPDIR"], tempfile.gettempdir(),
 [held_file.name, held_dir.name, manager.address, listener.address, multiprocessing.util.get_temp_dir()])
"""


@pytest.fixture
def tmp():
    """The daemons' TMPDIR: short, as a socket's path must be (pytest's tmp_path is too
    long for the Manager's socket below it)."""
    path = tempfile.mkdtemp(prefix="gt", dir="/tmp")
    yield path
    shutil.rmtree(path)


def daemon_in(tmp_path, tmp):
    """A daemon (not started) whose TMPDIR is `tmp`."""
    return Daemon(tmp_path, env={"TMPDIR": tmp, "GS_MCP_SPARE_WORKERS": "1"})


# The same without a process of the code's: a killed spawner's worker that dies leaves its
# descendants to the forkserver, which never kills them (they would outlive the test).
MAKE_TEMPORARY_FILES_ONLY = """
import os, tempfile
held_file = tempfile.NamedTemporaryFile()
held_dir = tempfile.TemporaryDirectory()
(os.environ["TMPDIR"], tempfile.gettempdir(), [held_file.name, held_dir.name])
"""


def make_temporary_files(client, code=MAKE_TEMPORARY_FILES):
    """(the worker's TMPDIR, the paths its code made there)."""
    result = client.tool("execute_code", code=code)
    assert not result.get("isError"), result
    tmpdir, seen_by_tempfile, made = ast.literal_eval(result["structuredContent"]["result"])
    assert seen_by_tempfile == tmpdir
    assert all(path.startswith(tmpdir + os.sep) and os.path.exists(path) for path in made), (tmpdir, made)
    return tmpdir, made


def leftovers(tmp):
    """What is in the daemon's TMPDIR besides its own directory's lock and the spares'."""
    found = []
    for top, dirs, files in os.walk(tmp):
        for name in dirs + files:
            found.append(os.path.relpath(os.path.join(top, name), tmp))
    return found


def test_a_workers_tmpdir_is_private_and_every_temporary_file_goes_in_it(tmp_path, tmp):
    daemon = daemon_in(tmp_path, tmp)
    with daemon:
        client = open_session(daemon)
        tmpdir, _made = make_temporary_files(client)
        parent = os.path.dirname(tmpdir)
        assert os.path.dirname(parent) == tmp and os.path.basename(parent).startswith("gsmcpd-tmp.")
        mode = os.lstat(tmpdir)
        assert stat.S_ISDIR(mode.st_mode) and stat.S_IMODE(mode.st_mode) == 0o700
        assert mode.st_uid == os.geteuid()     # the daemon's account: no user map here
        assert os.listdir(tmp) == [os.path.basename(parent)]     # the router's pymp-* in it too


@pytest.mark.parametrize("how", ["DELETE", "kill -9"])
def test_a_sessions_temporary_files_go_with_its_worker(tmp_path, tmp, how):
    daemon = daemon_in(tmp_path, tmp)
    with daemon:
        client = open_session(daemon)
        pid = worker_pid(client)
        tmpdir, made = make_temporary_files(client)
        if how == "DELETE":
            assert client.delete().status in (200, 204)
        else:
            os.kill(pid, signal.SIGKILL)
        assert wait_until(lambda: not os.path.lexists(tmpdir)), os.listdir(tmpdir)
        assert not any(os.path.lexists(path) for path in made)
        assert os.listdir(tmp) == [os.path.basename(os.path.dirname(tmpdir))]


def test_a_link_the_code_put_in_its_tmpdirs_place_goes_with_its_worker(tmp_path, tmp):
    # It stayed until the daemon's stop ("Cannot call rmtree on a symbolic link").
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("x")
    daemon = daemon_in(tmp_path, tmp)
    with daemon:
        client = open_session(daemon)
        code = "import os\nt = os.environ['TMPDIR']\nos.rmdir(t)\nos.symlink(%r, t)\nt" % str(outside)
        result = client.tool("execute_code", code=code)
        tmpdir = ast.literal_eval(result["structuredContent"]["result"])
        assert os.path.islink(tmpdir)
        assert client.delete().status in (200, 204)
        assert wait_until(lambda: not os.path.lexists(tmpdir))
        assert (outside / "keep").read_text() == "x"
        assert "temporary files stay" not in daemon.log_text()


def test_the_daemons_stop_leaves_no_temporary_file(tmp_path, tmp):
    daemon = daemon_in(tmp_path, tmp)
    with daemon:
        make_temporary_files(open_session(daemon))
        assert daemon.stop() == 0
    assert leftovers(tmp) == []


def test_what_a_daemon_killed_outright_left_is_removed_by_the_next_start(tmp_path, tmp):
    daemon = daemon_in(tmp_path, tmp)
    with daemon:
        tmpdir, _made = make_temporary_files(open_session(daemon))
        daemon.kill()                          # router, forkserver and spawner: SIGKILL at once
    assert os.path.lexists(tmpdir)
    crashed = os.path.dirname(tmpdir)
    again = daemon_in(tmp_path, tmp)
    with again:
        assert not os.path.lexists(crashed)
        live = os.listdir(tmp)
        assert len(live) == 1 and live[0].startswith("gsmcpd-tmp.")


def test_a_killed_spawners_workers_directories_go_once_those_workers_are_gone(tmp_path, tmp):
    # They stayed until the daemon's stop: the forkserver, which reaps a dead spawner's
    # workers, removes nothing.
    daemon = daemon_in(tmp_path, tmp)
    with daemon:
        deleted, killed, staying = open_session(daemon), open_session(daemon), open_session(daemon)
        killed_pid = worker_pid(killed)
        deleted_dir, deleted_made = make_temporary_files(deleted)
        killed_dir, killed_made = make_temporary_files(killed, MAKE_TEMPORARY_FILES_ONLY)
        staying_dir, kept = make_temporary_files(staying)
        daemon_dir = os.path.dirname(staying_dir)
        # What a worker the spawner reaped just before its death left, not removed yet.
        reaped_dir = os.path.join(daemon_dir, "w." + 16 * "0")
        os.mkdir(reaped_dir, 0o700)
        spawner = spawner_of(daemon)
        os.kill(spawner, signal.SIGKILL)
        assert wait_until(lambda: not pid_alive(spawner))
        spawner_after(daemon, spawner)
        assert wait_until(lambda: not os.path.lexists(reaped_dir))
        assert all(os.path.lexists(path) for path in deleted_made + killed_made + kept)   # theirs live on
        assert deleted.delete().status in (200, 204)
        os.kill(killed_pid, signal.SIGKILL)
        for gone in (deleted_dir, killed_dir):
            assert wait_until(lambda: not os.path.lexists(gone)), os.listdir(gone)
        assert os.path.isdir(staying_dir) and all(os.path.lexists(path) for path in kept)
        assert tool_text(staying.tool("execute_code", code="6 * 7")) == "42"
        assert "temporary files stay" not in daemon.log_text()


def test_a_forkserver_killed_in_its_rehearsal_leaves_nothing(tmp_path, tmp):
    # Its throwaway image's directory was made in TMPDIR itself (gsmcpd-rehearsal-*), which
    # no start or stop sweeps: it stayed for good.
    mark = tmp_path / "rehearsal-killed"
    killed = Daemon(tmp_path, env={"TMPDIR": tmp, "REHEARSAL_KILLED": str(mark),
                                   "PYTHONPATH": os.pathsep.join([Daemon.pythonpath, str(REHEARSAL_KILLED)])})
    assert killed.refusal() == FAILED     # no spawner without its forkserver: this start ends
    assert "before it forked it (a kill -9, or the kernel's OOM killer" in killed.log_text()
    rehearsed_in = os.path.dirname(mark.read_text())
    assert os.path.dirname(rehearsed_in) == tmp and os.path.basename(rehearsed_in).startswith("gsmcpd-tmp.")
    assert leftovers(tmp) == []
    again = daemon_in(tmp_path, tmp)
    with again:
        assert tool_text(open_session(again).tool("execute_code", code="6 * 7")) == "42"
        assert again.stop() == 0
    assert leftovers(tmp) == []
