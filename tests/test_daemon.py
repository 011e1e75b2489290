"""Daemon plumbing without the router: sd_notify over a fake NOTIFY_SOCKET, pidfiles and
stale pidfiles, stop's refusals, serve_main's callbacks, log reopen, check."""

import io
import logging
import os
import signal
import stat
import socket
import subprocess
import sys
import tempfile
import threading
import types
import uuid
from pathlib import Path

import pytest

from gsmcpd import config as config_module
from gsmcpd import daemon
from gsmcpd.config import load_config

from helpers import REPO, free_port, local_account, local_group, steady_descriptors


@pytest.fixture(autouse=True)
def _no_toolset_imports(monkeypatch):
    monkeypatch.setattr(config_module, "_validate_toolsets", lambda names, imported=False: None)


def notify_listener(address):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(address)
    sock.settimeout(5)
    return sock


# --- sd_notify ---------------------------------------------------------------------

def test_sd_notify_to_a_path_socket(tmp_path):
    path = str(tmp_path / "notify")
    with notify_listener(path) as listener:
        assert daemon.sd_notify("READY=1\nSTATUS=up", {"NOTIFY_SOCKET": path}) is True
        assert listener.recv(4096) == b"READY=1\nSTATUS=up"


def test_sd_notify_to_an_abstract_socket():
    name = f"gsmcpd-test-{uuid.uuid4().hex}"
    with notify_listener("\0" + name) as listener:
        assert daemon.sd_notify("STOPPING=1", {"NOTIFY_SOCKET": "@" + name}) is True
        assert listener.recv(4096) == b"STOPPING=1"


def test_sd_notify_without_systemd_or_with_nobody_listening(tmp_path, caplog):
    assert daemon.sd_notify("READY=1", {}) is False
    assert daemon.sd_notify("READY=1", {"NOTIFY_SOCKET": str(tmp_path / "absent")}) is False
    assert "systemd notify failed (READY=1)" in caplog.text


# --- pidfiles --------------------------------------------------------------------------

def test_claim_and_release_pidfile(tmp_path):
    path = tmp_path / "gsmcpd-8000.pid"
    assert daemon.claim_pidfile(path, 8000) is None
    assert daemon.read_pidfile(path) == os.getpid()
    assert not list(tmp_path.glob(".*"))  # the temp file is gone
    daemon.release_pidfile(path, pid=os.getpid() + 1)  # not ours: left alone
    assert path.exists()
    daemon.release_pidfile(path)
    assert not path.exists()


def test_unreadable_pidfile_reads_as_none(tmp_path):
    path = tmp_path / "p.pid"
    for text in ("", "abc", "-5", "0"):
        path.write_text(text)
        assert daemon.read_pidfile(path) is None
    assert daemon.read_pidfile(tmp_path / "missing.pid") is None


@pytest.fixture
def sleeper():
    """An unrelated live process whose pid a stale pidfile can name."""
    proc = subprocess.Popen(["sleep", "30"])
    yield proc
    proc.kill()
    proc.wait()


def test_stale_pidfile_naming_an_unrelated_process_is_replaced(tmp_path, sleeper):
    path = tmp_path / "gsmcpd-8000.pid"
    path.write_text(f"{sleeper.pid}\n")
    assert daemon.is_gsmcpd(sleeper.pid, 8000) is False
    note = daemon.claim_pidfile(path, 8000)
    assert note == f"removed stale pidfile {path} (pid {sleeper.pid} is not a gsmcpd serving port 8000)"
    assert daemon.read_pidfile(path) == os.getpid()
    assert sleeper.poll() is None


def gone_pid():
    """The pid of a process that has exited and been reaped."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_a_stale_pidfile_says_its_pid_is_not_running_when_none_runs(tmp_path):
    # After a kill -9 (the common case) it said "not a gsmcpd on port 8000", as if the
    # pid had been reused by another program.
    path = tmp_path / "gsmcpd-8000.pid"
    pid = gone_pid()
    path.write_text(f"{pid}\n")
    assert daemon.claim_pidfile(path, 8000) == f"removed stale pidfile {path} (pid {pid} is not running)"
    path.write_text("garbage\n")
    assert daemon.claim_pidfile(path, 8000) == f"removed stale pidfile {path} (it named no pid)"
    path.write_text(f"{pid}\n")
    out = io.StringIO()
    assert daemon.stop(tmp_path, 8000, timeout=1, out=out) == 1
    assert out.getvalue().startswith(f"stale pidfile {path}: pid {pid} is not running; removed it "
                                     "without signalling anything.")


def test_stop_never_signals_the_process_a_stale_pidfile_names(tmp_path, sleeper):
    path = tmp_path / "gsmcpd-8000.pid"
    path.write_text(f"{sleeper.pid}\n")
    out = io.StringIO()
    assert daemon.stop(tmp_path, 8000, timeout=1, out=out) == 1
    assert f"stale pidfile {path}: pid {sleeper.pid} is not a gsmcpd serving port 8000" \
        in out.getvalue()
    assert "without signalling anything" in out.getvalue()
    assert not path.exists()
    assert sleeper.poll() is None  # still alive: never signalled


def test_stop_with_nothing_running(tmp_path):
    out = io.StringIO()
    assert daemon.stop(tmp_path, 8000, out=out) == 1
    assert out.getvalue() == \
        f"no gsmcpd running on port 8000 (no pidfile at {tmp_path / 'gsmcpd-8000.pid'})\n"
    (tmp_path / "gsmcpd-8000.pid").write_text("garbage")
    assert daemon.stop(tmp_path, 8000, out=out) == 1
    assert "removed unreadable pidfile" in out.getvalue()


@pytest.fixture
def fake_gsmcpd(tmp_path):
    """A live process whose command line looks like a gsmcpd on port 8765.

    It ignores SIGTERM when asked to, so stop's SIGKILL fallback can be seen; it listens
    on `listens_on` (host, port) when given, as a serve does, and on a unix socket at
    `control_socket` when given, as a serve's control socket."""
    def spawn(ignore_term=False, port_arg=True, port_args=("--port", "8765"), listens_on=None, args=(),
              control_socket=None):
        code = ("import signal, socket, time, sys\n"
                + ("signal.signal(signal.SIGTERM, signal.SIG_IGN)\n" if ignore_term else "")
                + (f"s = socket.create_server({listens_on!r}, family=socket.AF_INET6 if ':' in "
                   f"{listens_on[0]!r} else socket.AF_INET)\n" if listens_on else "")
                + (f"c = socket.socket(socket.AF_UNIX)\nc.bind({str(control_socket)!r})\nc.listen()\n"
                   if control_socket else "")
                + "sys.stdout.write('up\\n'); sys.stdout.flush()\ntime.sleep(30)\n")
        script = tmp_path / "gsmcpd"
        script.write_text(code)
        proc = subprocess.Popen([sys.executable, str(script), "serve"] + (list(port_args) if port_arg else [])
                                + list(args), stdout=subprocess.PIPE)
        assert proc.stdout.readline() == b"up\n"
        procs.append(proc)
        return proc
    procs = []
    yield spawn
    for proc in procs:
        proc.kill()
        proc.wait()


def test_is_gsmcpd_needs_the_name_and_the_port(fake_gsmcpd):
    proc = fake_gsmcpd()
    assert daemon.is_gsmcpd(proc.pid, 8765) is True
    assert daemon.is_gsmcpd(proc.pid, 8766) is False
    assert daemon.is_gsmcpd(os.getpid(), 8765) is False
    assert daemon.process_cmdline(2 ** 22 + 12345) is None


@pytest.mark.parametrize("port_args", [("--port", "08765"), ("--port=+8765",), ("--port", " 8765"),
                                       ("--port", "8766", "--port", "8765"),
                                       # a lone PORT, as serve takes it: no port was read from these
                                       ("8765",), ("--state-dir", "st", "8765", "--readonly"),
                                       ("--trace", "8765"), ("--trace", "both", "08765")])
def test_the_port_a_command_line_serves_is_read_as_serve_reads_it(tmp_path, fake_gsmcpd, port_args):
    # `serve --port 08765` serves 8765, and of two --port flags the last one counts: stop
    # must neither take that live server's pidfile for a stale one nor leave it running.
    proc = fake_gsmcpd(port_args=port_args)
    _reap_when_signalled(proc)
    assert daemon.is_gsmcpd(proc.pid, 8765) is True
    assert daemon.is_gsmcpd(proc.pid, 8766) is False
    (tmp_path / "gsmcpd-8765.pid").write_text(f"{proc.pid}\n")
    out = io.StringIO()
    assert daemon.stop(tmp_path, 8765, timeout=5, out=out) == 0, out.getvalue()
    assert f"stopped gsmcpd on port 8765 (pid {proc.pid})" in out.getvalue()
    assert proc.wait(5) == -signal.SIGTERM


def test_a_command_line_whose_port_cannot_be_read_serves_no_port(fake_gsmcpd):
    proc = fake_gsmcpd(port_args=("--port", "87x65"))
    assert daemon.is_gsmcpd(proc.pid, 8765) is False


def test_a_gsmcpd_naming_no_port_is_never_judged_stale_without_its_control_socket(tmp_path, fake_gsmcpd):
    # A serve that took its port from GS_MCP_PORT or a config file names no port; with no
    # control socket to confirm it, stop leaves it and its pidfile alone.
    proc = fake_gsmcpd(port_arg=False)
    assert daemon.is_gsmcpd(proc.pid, 8765) is False
    assert daemon.is_gsmcpd(proc.pid, 8765, tmp_path) is False
    (tmp_path / "gsmcpd-8765.pid").write_text(f"{proc.pid}\n")
    out = io.StringIO()
    assert daemon.stop(tmp_path, 8765, timeout=1, out=out) == 1
    assert "whose port could not be confirmed" in out.getvalue()
    assert (tmp_path / "gsmcpd-8765.pid").exists() and proc.poll() is None


def test_the_listening_sockets_of_a_port_are_named_as_a_descriptor_link_names_them():
    with socket.create_server(("127.0.0.1", 0)) as four, \
            socket.create_server(("::1", 0), family=socket.AF_INET6) as six, socket.socket() as bound:
        # Among this process's own sockets: another process of this busy machine may listen
        # on the same port number in the other address family.
        for listener in (four, six):
            port = listener.getsockname()[1]
            assert daemon._listening_sockets(port) & _own_sockets() == {
                f"socket:[{os.fstat(listener.fileno()).st_ino}]"}
        bound.bind(("127.0.0.1", 0))   # bound, not listening: serves nothing
        assert daemon._listening_sockets(bound.getsockname()[1]) & _own_sockets() == set()


def _own_sockets() -> set[str]:
    """This process's descriptors' links that name sockets (`socket:[INODE]`)."""
    links = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            links.add(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:   # the listdir's own descriptor, closed since
            pass
    return {link for link in links if link.startswith("socket:[")}


@pytest.mark.parametrize("host", ["127.0.0.1", "::1"])
def test_the_gsmcpd_serving_a_port_is_found_by_its_socket_however_it_was_given_the_port(
        tmp_path, fake_gsmcpd, host):
    # A serve that took its port from GS_MCP_PORT or a conf file names none on its command line.
    port = free_port()
    proc = fake_gsmcpd(port_arg=False, listens_on=(host, port))
    assert daemon.serving_elsewhere(port, tmp_path / "other") == (
        f"pid {proc.pid}, a gsmcpd serving port {port}, is running: give the --state-dir or "
        f"--config it was started with, or kill {proc.pid}")


def test_a_gsmcpd_whose_pidfile_and_control_socket_were_removed_is_told_to_be_killed(tmp_path, fake_gsmcpd):
    # Its state directory not on its command line (GS_MCP_STATE_DIR, a conf file): the
    # socket it listens on, its file removed, names it. Asked in that directory, the hint
    # was "give the --state-dir or --config it was started with", the one given.
    port, state = free_port(), tmp_path / "state"
    state.mkdir()
    proc = fake_gsmcpd(port_arg=False, listens_on=("127.0.0.1", port), control_socket=state / f"gsmcpd-{port}.ctl")
    (state / f"gsmcpd-{port}.ctl").unlink()
    assert daemon.serving_elsewhere(port, state) == (
        f"pid {proc.pid}, a gsmcpd serving port {port}, is running without its pidfile and control "
        f"socket in {state} (removed?): stop it with kill {proc.pid}")
    assert daemon.serving_elsewhere(port, tmp_path / "other") == (   # asked elsewhere: which was it?
        f"pid {proc.pid}, a gsmcpd serving port {port}, is running: give the --state-dir or "
        f"--config it was started with, or kill {proc.pid}")


def test_a_gsmcpd_naming_a_port_it_does_not_listen_on_serves_none(tmp_path, fake_gsmcpd):
    # Its --port says what it meant to serve; the socket someone else holds says who serves it.
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        fake_gsmcpd(port_args=("--port", str(port)))
        assert daemon.serving_elsewhere(port, tmp_path) is None


def test_a_gsmcpd_whose_descriptors_cannot_be_read_is_judged_by_its_command_line(
        tmp_path, fake_gsmcpd, monkeypatch):
    # Another account's gsmcpd: its /proc/PID/fd links are not ours to read.
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        proc = fake_gsmcpd(port_args=("--port", str(port)))
        readlink = os.readlink

        def denied(path, *args, **kwargs):
            if str(path).startswith(f"/proc/{proc.pid}/fd/"):
                raise PermissionError(13, "Permission denied", str(path))
            return readlink(path, *args, **kwargs)
        monkeypatch.setattr(os, "readlink", denied)
        assert daemon.serving_elsewhere(port, tmp_path) == (
            f"pid {proc.pid}, a gsmcpd serving port {port}, is running: give the --state-dir or "
            f"--config it was started with, or kill {proc.pid}")


def test_stop_of_a_stale_pidfile_names_the_gsmcpd_serving_the_port_from_elsewhere(
        tmp_path, sleeper, fake_gsmcpd):
    port, theirs = free_port(), tmp_path / "theirs"
    proc = fake_gsmcpd(port_arg=False, listens_on=("127.0.0.1", port), args=("--state-dir", str(theirs)))
    path = tmp_path / f"gsmcpd-{port}.pid"
    path.write_text(f"{sleeper.pid}\n")
    out = io.StringIO()
    assert daemon.stop(tmp_path, port, timeout=1, out=out) == 1
    assert out.getvalue() == (
        f"stale pidfile {path}: pid {sleeper.pid} is not a gsmcpd serving port {port}; removed it "
        f"without signalling anything. But pid {proc.pid}, a gsmcpd serving port {port} from the "
        f"state directory {theirs}, is running: stop it with "
        f"{daemon._stop_command(port, theirs)}\n")
    assert not path.exists()
    assert sleeper.poll() is None and proc.poll() is None   # neither was signalled


def test_a_binary_pidfile_holds_no_pid_and_a_directory_is_never_guessed_at(tmp_path):
    path = tmp_path / "gsmcpd-8765.pid"
    path.write_bytes(b"\xff\xfe\x00")
    assert daemon.read_pidfile(path) is None
    out = io.StringIO()
    assert daemon.stop(tmp_path, 8765, timeout=1, out=out) == 1
    assert "removed unreadable pidfile" in out.getvalue() and not path.exists()
    path.mkdir()
    with pytest.raises(daemon.PidfileError, match="cannot read the pidfile .*gsmcpd-8765.pid: Is a directory"):
        daemon.read_pidfile(path)


def _reap_when_signalled(proc):
    """The fake is our child: reap it so it does not linger as a zombie."""
    import threading
    threading.Thread(target=proc.wait, daemon=True).start()


def test_stop_sends_sigterm_and_waits(tmp_path, fake_gsmcpd):
    proc = fake_gsmcpd()
    _reap_when_signalled(proc)
    (tmp_path / "gsmcpd-8765.pid").write_text(f"{proc.pid}\n")
    out = io.StringIO()
    assert daemon.stop(tmp_path, 8765, timeout=5, out=out) == 0
    assert proc.wait(5) == -signal.SIGTERM
    assert "SIGKILL if still running after 5s" in out.getvalue()
    assert f"stopped gsmcpd on port 8765 (pid {proc.pid})" in out.getvalue()
    assert not (tmp_path / "gsmcpd-8765.pid").exists()


def test_stop_escalates_to_sigkill_after_the_timeout(tmp_path, fake_gsmcpd):
    proc = fake_gsmcpd(ignore_term=True)
    _reap_when_signalled(proc)
    (tmp_path / "gsmcpd-8765.pid").write_text(f"{proc.pid}\n")
    out = io.StringIO()
    assert daemon.stop(tmp_path, 8765, timeout=0.3, out=out) == 0
    assert proc.wait(5) == -signal.SIGKILL
    assert f"pid {proc.pid} did not exit within 0.3s; sent SIGKILL" in out.getvalue()


def test_claim_refuses_a_live_gsmcpd(tmp_path, fake_gsmcpd):
    proc = fake_gsmcpd()
    path = tmp_path / "gsmcpd-8765.pid"
    path.write_text(f"{proc.pid}\n")
    with pytest.raises(daemon.AlreadyRunning, match=f"gsmcpd \\(pid {proc.pid}\\) is already"):
        daemon.claim_pidfile(path, 8765)
    assert daemon.running_pid(tmp_path, 8765) == proc.pid
    out = io.StringIO()
    config = load_config({"port": 8765, "state_dir": str(tmp_path)}, {})
    assert daemon.start(config, [], out=out) == 1
    assert f"already running on port 8765 (pid {proc.pid}" in out.getvalue()


def test_start_names_a_lost_pidfile_as_lost_not_as_where_it_found_the_server(tmp_path, fake_gsmcpd, monkeypatch):
    # Its pidfile deleted, the server was found by its control socket, yet start named the
    # missing pidfile as if it held the pid.
    proc = fake_gsmcpd()
    monkeypatch.setattr(daemon, "_control_pid", lambda state_dir, port: proc.pid)
    out = io.StringIO()
    config = load_config({"port": 8765, "state_dir": str(tmp_path)}, {})
    assert daemon.start(config, [], out=out) == 1
    assert (f"already running on port 8765 (pid {proc.pid}, named by the port's control socket; "
            f"its pidfile {tmp_path / 'gsmcpd-8765.pid'} is lost)") in out.getvalue()


def test_start_refuses_a_port_in_use(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        out = io.StringIO()
        config = load_config({"port": port, "state_dir": str(tmp_path)}, {})
        assert daemon.start(config, [], out=out) == 1
    assert f"port {port} on 127.0.0.1 is already in use by another process" in out.getvalue()


# --- serve_main with a stand-in router -------------------------------------------------

def test_serve_main_tells_systemd_and_the_starter(tmp_path, monkeypatch):
    notify_path = str(tmp_path / "notify")
    monkeypatch.setenv("NOTIFY_SOCKET", notify_path)
    config = load_config({"port": 8321, "state_dir": str(tmp_path),
                          "log_file": str(tmp_path / "d.log")}, {})
    seen = {}

    def fake_serve(cfg, *, on_ready, on_stopping, on_reload, stop_requested, reload_requested):
        seen["pid_during"] = daemon.read_pidfile(cfg.pidfile)
        assert not stop_requested() and reload_requested() is None
        os.kill(os.getpid(), signal.SIGUSR1)   # a logrotate's, before the loop took it over:
        assert reload_requested() == "SIGUSR1" and not stop_requested()   # held, not fatal
        os.kill(os.getpid(), signal.SIGTERM)   # before a loop took SIGTERM over: held, not fatal
        assert stop_requested()
        seen["before_ready"] = listener.recv(4096) if _ready(listener) else None
        on_ready()
        seen["after_ready"] = listener.recv(4096)
        on_stopping()
        seen["stopping"] = listener.recv(4096)
        return 0

    read_end, write_end = os.pipe()
    ours = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGUSR1)
    with notify_listener(notify_path) as listener:
        assert daemon.serve_main(config, ready_fd=write_end, serve=fake_serve) == 0
    # its early holds are given back
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGUSR1)) == ours
    assert seen["pid_during"] == os.getpid()
    assert seen["before_ready"] is None
    assert seen["after_ready"].startswith(b"READY=1\nSTATUS=listening on http://127.0.0.1:8321")
    assert seen["stopping"] == b"STOPPING=1"
    assert os.read(read_end, 4096) == f"READY {os.getpid()} {config.url}\n".encode()
    os.close(read_end)
    assert not config.pidfile.exists()


def _ready(sock):
    import select
    return bool(select.select([sock], [], [], 0)[0])


def test_serve_main_reports_a_bind_failure(tmp_path):
    config = load_config({"port": 8322, "state_dir": str(tmp_path),
                          "log_file": str(tmp_path / "d.log")}, {})

    def failing_serve(cfg, **callbacks):
        raise OSError(98, "Address already in use")

    read_end, write_end = os.pipe()
    assert daemon.serve_main(config, ready_fd=write_end, serve=failing_serve) == 1
    assert os.read(read_end, 4096) == b"ERROR port 8322 on 127.0.0.1 is already in use\n"
    os.close(read_end)
    assert "ERROR port 8322 on 127.0.0.1 is already in use" in (tmp_path / "d.log").read_text()
    assert not config.pidfile.exists()


def test_serve_main_reports_an_exit_before_ready(tmp_path):
    config = load_config({"port": 8323, "state_dir": str(tmp_path),
                          "log_file": str(tmp_path / "d.log")}, {})
    read_end, write_end = os.pipe()
    assert daemon.serve_main(config, ready_fd=write_end, serve=lambda cfg, **kw: 3) == 3
    assert os.read(read_end, 4096) == b"ERROR gsmcpd exited with status 3 before it was ready\n"
    os.close(read_end)


def test_serve_main_reports_a_log_file_it_cannot_open_though_its_stderr_is_that_file_too(tmp_path, monkeypatch):
    # Detached, fds 1 and 2 already point at the log file: /proc/self/status opened there,
    # then refused writes, so the print of the reason raised before the starter was told,
    # and `start` said only "exited during startup".
    config = load_config({"port": 8324, "state_dir": str(tmp_path), "log_file": "/proc/self/status"}, {})
    with io.TextIOWrapper(open("/dev/full", "wb", buffering=0), write_through=True) as refusing:   # refuses writes
        monkeypatch.setattr(sys, "stderr", refusing)

        def must_not_run(cfg, **callbacks):
            raise AssertionError("served without its log file")

        read_end, write_end = os.pipe()
        assert daemon.serve_main(config, ready_fd=write_end, serve=must_not_run) == 2   # EINVAL: never passes
    line = os.read(read_end, 4096).decode()
    os.close(read_end)
    assert line.startswith("REFUSED cannot open the log file /proc/self/status: ") and line.endswith("\n")
    assert not config.pidfile.exists()


# --- logging ---------------------------------------------------------------------------

def test_only_a_terminal_that_hung_up_reads_as_hung_up(tmp_path):
    import pty
    master, slave = pty.openpty()
    try:
        assert daemon.hung_up_terminal(slave) is False       # a kill -HUP: the terminal lives
        os.close(master)
        master = None
        assert daemon.hung_up_terminal(slave) is True        # its terminal window closed
    finally:
        os.close(slave)
        if master is not None:
            os.close(master)
    reader, writer = os.pipe()
    os.close(reader)
    a, b = socket.socketpair()
    b.close()
    try:   # a pipe or a journal's socket whose reader left is no terminal hang-up
        assert daemon.hung_up_terminal(writer) is False and daemon.hung_up_terminal(a.fileno()) is False
    finally:
        os.close(writer)
        a.close()
    with open(tmp_path / "log", "w") as log_file:
        assert daemon.hung_up_terminal(log_file.fileno()) is False
    assert daemon.hung_up_terminal(9999) is False


def test_reopen_log_follows_a_rotated_file(tmp_path):
    path = tmp_path / "gsmcpd.log"
    daemon.configure_logging("info", path)
    logging.getLogger("gsmcpd.test").info("before rotation")
    path.rename(tmp_path / "gsmcpd.log.1")
    daemon.reopen_log()
    logging.getLogger("gsmcpd.test").info("after rotation")
    old = (tmp_path / "gsmcpd.log.1").read_text()
    new = path.read_text()
    assert "before rotation" in old and "after rotation" not in old
    assert f"INFO SIGHUP: log file reopened ({path})" in new and "after rotation" in new


def test_a_log_file_that_cannot_be_reopened_leaves_logging_where_it_was(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    path = logs / "gsmcpd.log"
    daemon.configure_logging("info", path)
    path.rename(tmp_path / "gsmcpd.log.1")
    path.mkdir()                       # a directory where the file should be opened
    daemon.reopen_log()
    logging.getLogger("gsmcpd.test").info("still logged")
    old = (tmp_path / "gsmcpd.log.1").read_text()
    assert f"ERROR SIGHUP: cannot reopen the log file {path}" in old and "still logged" in old
    path.rmdir()
    daemon.reopen_log()                # and once it can be, it is
    logging.getLogger("gsmcpd.test").info("back in place")
    assert "back in place" in path.read_text()


def test_a_reopen_onto_a_file_that_would_refuse_writes_keeps_the_old_one(tmp_path):
    # logrotate's new file a link to /dev/full: it opened, and every line after was lost.
    path = tmp_path / "gsmcpd.log"
    daemon.configure_logging("info", path)
    path.rename(tmp_path / "gsmcpd.log.1")
    path.symlink_to("/dev/full")
    daemon.reopen_log()
    logging.getLogger("gsmcpd.test").info("still logged")
    old = (tmp_path / "gsmcpd.log.1").read_text()
    assert (f"ERROR SIGHUP: cannot reopen the log file {path} (No space left on device); "
            "still writing to the old one") in old and "still logged" in old


def test_log_lines_have_time_and_level(tmp_path):
    path = tmp_path / "gsmcpd.log"
    daemon.configure_logging("warning", path)
    logging.getLogger("gsmcpd.test").info("too quiet")
    logging.getLogger("gsmcpd.test").warning("session 71ff1f5c reaped")
    lines = path.read_text().splitlines()
    assert len(lines) == 1
    date, clock, level, rest = lines[0].split(" ", 3)
    assert len(date) == 10 and clock.count(":") == 2
    assert (level, rest) == ("WARNING", "session 71ff1f5c reaped")


def test_startup_line_states_the_essentials(tmp_path):
    config = load_config({"port": 8400, "state_dir": str(tmp_path), "readonly": True,
                          "toolsets": "browsing search", "trace": "1"}, {})
    line = daemon.startup_line(config)
    for part in ("listening on http://127.0.0.1:8400/mcp", "host 127.0.0.1", "port 8400",
                 f"image {tmp_path / 'image'}", "read-only yes", "toolsets browsing search",
                 "browser origins loopback only, no CORS",
                 "message trace: ON (inbound) -- bodies capped at 4096 chars"):
        assert part in line
    # read-only: the toolsets served, as `check` names them; it listed all seven
    every = load_config({"state_dir": str(tmp_path), "readonly": True}, {})
    assert ("; toolsets session listing browsing search testing (read-only hides execution, mutation); "
            in daemon.startup_line(every))
    assert "; toolsets execution session listing browsing search mutation testing; " in daemon.startup_line(
        load_config({"state_dir": str(tmp_path)}, {}))
    listed = load_config({"state_dir": str(tmp_path)}, {"GS_MCP_ALLOWED_ORIGINS": "http://localhost:6274 app.example"})
    assert "; browser origins http://localhost:6274 app.example (CORS); " in daemon.startup_line(listed)


# --- check -----------------------------------------------------------------------------

def test_check_reports_ok_then_the_first_problem(tmp_path):
    config = load_config({"port": free_port(), "state_dir": str(tmp_path)}, {})
    out = io.StringIO()
    assert daemon.check(config, out=out) == 0
    assert out.getvalue().rstrip().endswith(f"OK: ready to serve {config.url}")
    assert "import         gsmcpd.router.main" in out.getvalue()
    assert "origins        loopback only, no CORS" in out.getvalue()

    bad = load_config({"port": free_port(), "state_dir": str(tmp_path),
                       "image": str(tmp_path / "no-such-image")},
                      {"GS_MCP_TLS_CERT": str(tmp_path / "c.pem"),
                       "GS_MCP_TLS_KEY": str(tmp_path / "k.pem")})
    out = io.StringIO()
    assert daemon.check(bad, out=out) == 2
    text = out.getvalue()
    assert "tls cert" in text and "not readable" in text
    assert text.rstrip().splitlines()[-1] == "PROBLEM: image: does not exist"


def test_check_names_a_link_loop_at_the_image(tmp_path):
    # Path.exists() calls a loop missing: "does not exist" sent the administrator to make
    # a directory where a link wants mending.
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    for image in (tmp_path / "a", tmp_path / "a" / "inner"):
        config = load_config({"port": free_port(), "state_dir": str(tmp_path / "state"), "image": str(image)}, {})
        out = io.StringIO()
        assert daemon.check(config, out=out) == 2
        assert out.getvalue().rstrip().splitlines()[-1] == ("PROBLEM: image: cannot be reached: "
                                                                "Too many levels of symbolic links")


@pytest.mark.parametrize("made", ["loop", "file", "dangling"])
def test_check_names_an_image_state_dir_no_session_can_lock_in(tmp_path, made):
    # check said OK, serve started, and every session failed preparing: "Too many levels of
    # symbolic links" or "Not a directory" at .gsmcpd/lock.
    image = tmp_path / "image"
    image.mkdir()
    (image / "m.py").write_text("X = 1\n")
    state = image / ".gsmcpd"
    if made == "loop":
        state.symlink_to(state)
    elif made == "dangling":   # a session's mkdir met the link, and following it found nothing
        state.symlink_to(tmp_path / "moved")
    else:
        state.write_text("")
    config = load_config({"port": free_port(), "state_dir": str(tmp_path / "state"), "image": str(image)}, {})
    out = io.StringIO()
    assert daemon.check(config, out=out) == 2
    why = {"loop": "cannot be reached: Too many levels of symbolic links", "file": "is not a directory",
           "dangling": f"is a link to {tmp_path / 'moved'}, which does not exist"}[made]
    assert out.getvalue().rstrip().splitlines()[-1] == (
        f"PROBLEM: image: cannot be served: {state}, where every session takes the image's lock, {why}")


def test_check_takes_an_image_state_dir_linked_to_a_directory(tmp_path):
    # A link the image's owner made is followed by the sessions (dirfd.open_dir): no problem.
    image = tmp_path / "image"
    image.mkdir()
    (image / "m.py").write_text("X = 1\n")
    (tmp_path / "elsewhere").mkdir()
    (image / ".gsmcpd").symlink_to(tmp_path / "elsewhere")
    config = load_config({"port": free_port(), "state_dir": str(tmp_path / "state"), "image": str(image)}, {})
    out = io.StringIO()
    assert daemon.check(config, out=out) == 0, out.getvalue()


def test_check_loads_the_tls_pair_and_the_jwks_file_as_serve_would(tmp_path):
    from idp import CertAuthority, Idp
    ca = CertAuthority(tmp_path / "ca")
    cert, key = ca.issue("one")
    _, other_key = ca.issue("two")
    idp = Idp(issuer="https://idp.test", kinds=("rsa",))
    jwks = idp.write_jwks(tmp_path / "jwks.json")

    def check(**env):
        env = {"GS_MCP_AUTH": "1", "MCP_ISSUER": idp.issuer, "MCP_AUDIENCE": "https://mcp.test/mcp",
               "MCP_JWKS_FILE": str(jwks), "GS_MCP_TLS_CERT": str(cert), "GS_MCP_TLS_KEY": str(key), **env}
        config = load_config({"port": free_port(), "state_dir": str(tmp_path)}, env)
        out = io.StringIO()
        return daemon.check(config, out=out), out.getvalue().rstrip().splitlines()[-1]

    assert check()[0] == 0
    code, last = check(GS_MCP_TLS_KEY=str(other_key))
    assert code == 2
    assert last.startswith("PROBLEM: tls cert: tls_cert/tls_key: cannot load TLS certificate")
    assert "KEY_VALUES_MISMATCH" in last
    jwks.write_text('{"keys": [{"kty": "oct", "k": "c2VjcmV0"}]}')
    assert check() == (2, "PROBLEM: jwks file: jwks_file: JWKS holds no usable signature key")


def test_check_gives_up_on_a_jwks_file_that_does_not_answer_within_the_jwks_timeout(tmp_path):
    # A FIFO no one writes to (or a file on a hung mount) held check for ever in its read.
    fifo = tmp_path / "keys"
    os.mkfifo(fifo)
    config = load_config({"port": free_port(), "state_dir": str(tmp_path / "state")},
                         {"GS_MCP_AUTH": "1", "MCP_ISSUER": "https://idp.test", "MCP_AUDIENCE": "gsmcpd",
                          "MCP_JWKS_FILE": str(fifo), "MCP_JWKS_TIMEOUT": "0.5"})
    out, answer = io.StringIO(), []
    checking = threading.Thread(target=lambda: answer.append(daemon.check(config, out=out)), daemon=True)
    checking.start()
    checking.join(60)
    os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))   # the end of file its reader waits for
    assert answer == [2], out.getvalue()
    assert out.getvalue().rstrip().splitlines()[-1] == (
        f"PROBLEM: jwks file: jwks_file: reading {fifo} did not finish within 0.5 s "
        f"(MCP_JWKS_TIMEOUT; a FIFO no one writes to, a hung mount)")


def test_check_opens_the_log_file_as_serve_would(tmp_path):
    # serve refused "cannot open the log file ..." where check had said OK.
    def check(log_file):
        config = load_config({"port": free_port(), "state_dir": str(tmp_path / "state")},
                             {"GS_MCP_LOG_FILE": str(log_file)})
        out = io.StringIO()
        return daemon.check(config, out=out), out.getvalue().rstrip().splitlines()[-1]

    (tmp_path / "a-file").write_text("")
    assert check(tmp_path / "logs" / "new.log")[0] == 0          # its directory is made
    assert check(tmp_path) == (2, f"PROBLEM: log file: log_file: {tmp_path} is a directory")
    assert check(tmp_path / "a-file" / "x.log") == \
        (2, f"PROBLEM: log file: log_file: {tmp_path / 'a-file'} is not a directory")
    assert not (tmp_path / "logs").exists()                     # check changes nothing
    # Writable by its mode (to root), yet no log file: it refuses the seek to its end.
    code, last = check(Path("/proc/self/status"))
    assert code == 2 and last.startswith("PROBLEM: log file: log_file: cannot open /proc/self/status for appending: ")
    (tmp_path / "kept.log").write_text("as it was\n")
    assert check(tmp_path / "kept.log")[0] == 0 and (tmp_path / "kept.log").read_text() == "as it was\n"
    os.mkfifo(tmp_path / "fifo.log")   # it said "No such device or address"
    assert check(tmp_path / "fifo.log") == (2, f"PROBLEM: log file: log_file: {tmp_path / 'fifo.log'} is a FIFO "
                                               "with no reader: serve would wait for one to open it")


def test_check_names_a_log_file_on_a_full_filesystem_new_or_not(tmp_path, monkeypatch):
    # It opens (or would be created) and then refuses every line: serve refuses it at start.
    (tmp_path / "old.log").write_text("")
    for path in (tmp_path / "logs" / "new.log", tmp_path / "old.log"):
        config = load_config({"port": free_port(), "state_dir": str(tmp_path / "state")},
                             {"GS_MCP_LOG_FILE": str(path)})
        out = io.StringIO()
        with monkeypatch.context() as full:
            full.setattr(os, "statvfs", lambda target: types.SimpleNamespace(f_blocks=9, f_bfree=0, f_bavail=0))
            assert daemon.check(config, out=out) == 1   # space may be freed: as serve's status
        assert out.getvalue().rstrip().splitlines()[-1] == \
            f"PROBLEM: log file: log_file: cannot write to {path}: No space left on device"


def test_check_names_the_submodule_a_packages_import_error_came_from(tmp_path, monkeypatch):
    # A package importing its plugins fails with the failing one's error, which its text
    # alone does not name; the worker's import errors said which, check did not.
    package = tmp_path / "checkplugs"
    package.mkdir()
    (package / "__init__.py").write_text("from . import bad\n")
    (package / "bad.py").write_text("raise RuntimeError('bad plugin')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert daemon._import_problem("checkplugs") == \
        "cannot import: raised importing its submodule checkplugs.bad: RuntimeError: bad plugin"
    assert daemon._import_problem("json") is None


def test_check_notices_a_busy_port(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        config = load_config({"port": busy.getsockname()[1], "state_dir": str(tmp_path)}, {})
        out = io.StringIO()
        assert daemon.check(config, out=out) == 1
    assert out.getvalue().rstrip().endswith("PROBLEM: port: already in use")


def test_the_log_and_the_state_directory_are_created_private_whatever_the_umask(tmp_path):
    # The log holds user names and, traced, every argument every client sent.
    old_umask = os.umask(0o022)
    try:
        path = tmp_path / "new-state" / "gsmcpd.log"
        daemon.configure_logging("info", path)
        logging.getLogger("gsmcpd.test").info("private")
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        path.rename(tmp_path / "gsmcpd.log.1")
        daemon.reopen_log()                       # logrotate moved it: the new one is private too
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        kept = tmp_path / "kept.log"
        kept.touch(mode=0o640)                    # an operator's own choice stands
        daemon.configure_logging("info", kept)
        assert stat.S_IMODE(kept.stat().st_mode) == 0o640
        pidfile = tmp_path / "other-state" / "gsmcpd-8000.pid"
        daemon.claim_pidfile(pidfile, 8000)
        assert stat.S_IMODE(pidfile.parent.stat().st_mode) == 0o700
    finally:
        os.umask(old_umask)
        daemon.configure_logging("info", None)


def test_the_pidfile_is_written_0644_whatever_the_umask(tmp_path):
    # Under umask 000 it was 0666: any account could make root's logrotate postrotate
    # (kill -HUP "$(cat pidfile)") signal a process of its choosing.
    old_umask = os.umask(0)
    try:
        pidfile = tmp_path / "state" / "gsmcpd-8000.pid"
        daemon.claim_pidfile(pidfile, 8000)
        assert stat.S_IMODE(pidfile.stat().st_mode) == 0o644
        assert daemon.read_pidfile(pidfile) == os.getpid()
    finally:
        os.umask(old_umask)


def test_the_missing_parents_of_a_state_or_log_directory_are_made_0755_whatever_the_umask(tmp_path):
    # They were 0777 under umask 000: any account could rename the private directory away
    # and put its own, links and all, in its place.
    old_umask = os.umask(0)
    try:
        daemon.make_private_dir(tmp_path / "a" / "b" / "state")
        log = tmp_path / "c" / "d" / "gsmcpd.log"
        daemon.configure_logging("info", log)
        for made in ("a", "a/b", "c"):
            assert stat.S_IMODE((tmp_path / made).stat().st_mode) == 0o755, made
        assert stat.S_IMODE((tmp_path / "a/b/state").stat().st_mode) == 0o700
        assert stat.S_IMODE((tmp_path / "c/d").stat().st_mode) == 0o700
    finally:
        os.umask(old_umask)
        daemon.configure_logging("info", None)


def test_the_private_directories_and_the_log_are_made_exact_under_a_narrowing_umask(tmp_path):
    # Under umask 0277 they came out 0500 and 0400: the account could not then make the
    # state directory below a new parent, nor reopen its own log for writing.
    old_umask = os.umask(0o277)
    try:
        daemon.make_private_dir(tmp_path / "a" / "b" / "state")
        log = tmp_path / "c" / "gsmcpd.log"
        daemon.configure_logging("info", log)
        for made, mode in (("a", 0o755), ("a/b", 0o755), ("a/b/state", 0o700), ("c", 0o700),
                           ("c/gsmcpd.log", 0o600)):
            assert stat.S_IMODE((tmp_path / made).stat().st_mode) == mode, made
        log.rename(tmp_path / "gsmcpd.log.1")
        daemon.reopen_log()                       # logrotate moved it: the new one is exact too
        assert stat.S_IMODE(log.stat().st_mode) == 0o600
    finally:
        os.umask(old_umask)
        daemon.configure_logging("info", None)


def test_a_log_named_by_a_link_to_nothing_yet_is_made_0600_whatever_the_umask(tmp_path):
    # O_CREAT followed the link and made the target with the umask's mode: 0400 under
    # umask 0277, which the account's own reopen (SIGHUP, logrotate) could not write.
    old_umask = os.umask(0o277)
    try:
        target = tmp_path / "logs" / "gsmcpd.log"
        target.parent.mkdir()
        link = tmp_path / "gsmcpd.log"
        link.symlink_to(target)
        daemon.configure_logging("info", link)
        logging.getLogger("gsmcpd.test").info("through the link")
        assert stat.S_IMODE(target.stat().st_mode) == 0o600 and link.is_symlink()
        assert "through the link" in target.read_text()
        daemon.reopen_log()                       # a second open writes to it as the first did
        logging.getLogger("gsmcpd.test").info("reopened")
        assert "reopened" in target.read_text()
    finally:
        os.umask(old_umask)
        daemon.configure_logging("info", None)


def test_an_existing_log_or_state_directory_keeps_its_mode(tmp_path):
    state = tmp_path / "state"
    state.mkdir(mode=0o750)
    state.chmod(0o750)
    kept = state / "kept.log"
    kept.touch(mode=0o640)
    kept.chmod(0o640)
    try:
        daemon.make_private_dir(state)
        daemon.configure_logging("info", kept)
        assert stat.S_IMODE(state.stat().st_mode) == 0o750
        assert stat.S_IMODE(kept.stat().st_mode) == 0o640
    finally:
        daemon.configure_logging("info", None)
    (tmp_path / "file").write_text("")
    with pytest.raises(NotADirectoryError):
        daemon.make_private_dir(tmp_path / "file")


@pytest.mark.parametrize("flags", [["-P"], []], ids=["safe-path", "plain"])
def test_the_detached_serve_gets_this_gsmcpd_first_on_its_path_once(tmp_path, flags):
    # Run as run-server.sh does (-P, the checkout on PYTHONPATH): nothing to add. Run
    # from another directory with the checkout only on PYTHONPATH: nothing to add either.
    code = "from gsmcpd import daemon; print(daemon._serve_environ().get('PYTHONPATH'))"
    shown = subprocess.run([sys.executable, *flags, "-c", code], cwd=tmp_path, capture_output=True,
                           text=True, env=dict(os.environ, PYTHONPATH=str(REPO)), check=True).stdout
    assert shown.strip() == str(REPO)


def test_start_from_a_checkout_whose_path_holds_a_colon_is_refused_before_anything(tmp_path):
    # `python -m gsmcpd start` run in /x/a:b: the detached serve got PYTHONPATH=/x/a:b,
    # read as /x/a and b, and imported another gsmcpd (the .venv's installed one).
    import shutil
    checkout = tmp_path / "a:b"
    shutil.copytree(REPO / "gsmcpd", checkout / "gsmcpd", ignore=shutil.ignore_patterns("__pycache__"))
    port, state = free_port(), tmp_path / "state"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    checked = subprocess.run([sys.executable, "-m", "gsmcpd", "check", str(port), "--state-dir", str(state)],
                             cwd=checkout, env=env, capture_output=True, text=True, timeout=60)
    # check said OK with no word of it: what start refuses, serve runs.
    assert (f"  warning      start: cannot run gsmcpd from {checkout}: its path holds a ':'"
            in checked.stdout), checked.stdout
    started = subprocess.run([sys.executable, "-m", "gsmcpd", "start", str(port), "--state-dir", str(state)],
                             cwd=checkout, env=env, capture_output=True, text=True, timeout=60)
    try:
        assert (started.returncode, started.stdout.strip()) == (2, f"cannot run gsmcpd from {checkout}: its "
                                                                   "path holds a ':', which PYTHONPATH cannot carry "
                                                                   "(Python splits it there); move the checkout, or "
                                                                   "clone it, to a path without one"), started.stderr
        assert not state.exists()
    finally:
        subprocess.run([sys.executable, "-m", "gsmcpd", "stop", str(port), "--state-dir", str(state)],
                       cwd=REPO, capture_output=True)


def test_a_log_file_that_opens_but_refuses_appending_leaves_no_descriptor_open():
    # /proc/self/comm opens for writing (its owner's) and then refuses the seek to its end;
    # the descriptor had stayed open, one more on every SIGHUP reopen that failed so.
    from gsmcpd.logfile import PrivateFileHandler
    with steady_descriptors():
        before = len(os.listdir("/proc/self/fd"))
        for _ in range(3):
            with pytest.raises(OSError):
                PrivateFileHandler("/proc/self/comm")
        assert len(os.listdir("/proc/self/fd")) == before


# -- a state or log directory another account may write in ------------------------------


@pytest.mark.parametrize("mode", [0o700, 0o755, 0o750])
def test_a_private_directory_of_this_account_is_used(tmp_path, mode):
    directory = tmp_path / "state"
    directory.mkdir(mode=mode)
    directory.chmod(mode)
    daemon.make_private_dir(directory)
    assert stat.S_IMODE(directory.stat().st_mode) == mode   # kept as its owner made it


REFUSED = ("other accounts may write in it (mode %04o), and so plant a link where gsmcpd writes its "
           "log or pidfile: make it private (chmod go-w)")
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root, to make accounts and groups")


@pytest.fixture
def others_group():
    """A group that is not this account's private one: its group write lets others in."""
    if os.geteuid() != 0:
        pytest.skip("needs root, to make a group")
    with local_group() as group:
        yield group


@pytest.mark.parametrize("mode", [0o777, 0o1777, 0o702])
def test_a_directory_every_account_may_write_in_is_refused_naming_its_mode(tmp_path, mode):
    directory = tmp_path / "state"
    directory.mkdir()
    directory.chmod(mode)
    with pytest.raises(PermissionError) as refused:
        daemon.make_private_dir(directory)
    assert refused.value.filename == str(directory)
    assert refused.value.strerror == REFUSED % mode


@pytest.mark.parametrize("mode", [0o770, 0o720, 0o2775])
def test_a_directory_another_group_may_write_in_is_refused_naming_its_mode_and_group(
        tmp_path, others_group, mode):
    directory = tmp_path / "state"
    directory.mkdir()
    os.chown(directory, -1, others_group.gr_gid)
    directory.chmod(mode)
    with pytest.raises(PermissionError) as refused:
        daemon.make_private_dir(directory)
    assert refused.value.strerror == REFUSED % mode + (
        f"; its group may write only if it is its owner's private group, and group "
        f"{others_group.gr_name} is not root's primary group named as it")


@needs_root
def test_a_group_writable_directory_in_its_owners_private_group_is_accepted():
    # A umask-002 user's own directory (useradd --user-group): no one else is in its group.
    with local_account() as owner:
        directory = Path(tempfile.mkdtemp(prefix="gsmcpd-upg-"))
        try:
            os.chown(directory, owner.pw_uid, owner.pw_gid)
            directory.chmod(0o775)
            assert daemon._shared_dir_problem(directory.stat(), any_owner=True) is None
            directory.chmod(0o777)   # every account, whatever the group
            assert daemon._shared_dir_problem(directory.stat(), any_owner=True) == REFUSED % 0o777
        finally:
            directory.rmdir()


@needs_root
def test_a_private_group_is_private_only_while_no_other_account_is_in_it():
    with local_account() as owner:
        directory = Path(tempfile.mkdtemp(prefix="gsmcpd-upg-"))
        try:
            os.chown(directory, owner.pw_uid, owner.pw_gid)
            directory.chmod(0o770)
            refused = REFUSED % 0o770 + "; its group may write only if it is its owner's private group, and "
            # Another account whose primary group it is.
            with local_account(group=owner.pw_gid) as sharer:
                assert daemon._shared_dir_problem(directory.stat(), any_owner=True) == refused + (
                    f"group {owner.pw_name} has other accounts in it: {sharer.pw_name}")
            assert daemon._shared_dir_problem(directory.stat(), any_owner=True) is None
            # Another account listed as a member in /etc/group.
            with local_account(groups=[owner.pw_name]) as member:
                assert daemon._shared_dir_problem(directory.stat(), any_owner=True) == refused + (
                    f"group {owner.pw_name} has other accounts in it: {member.pw_name}")
            # Another account's private group.
            with local_account() as other:
                os.chown(directory, owner.pw_uid, other.pw_gid)
                assert daemon._shared_dir_problem(directory.stat(), any_owner=True) == refused + (
                    f"group {other.pw_name} is not {owner.pw_name}'s primary group named as it")
        finally:
            directory.rmdir()


@needs_root
def test_a_group_named_as_the_owner_is_not_its_private_group_unless_it_is_its_primary_one(tmp_path):
    with local_group() as primary, local_account(group=primary.gr_gid) as owner, \
            local_group(owner.pw_name) as named:
        directory = tmp_path / "state"
        directory.mkdir()
        os.chown(directory, owner.pw_uid, named.gr_gid)
        directory.chmod(0o770)
        assert daemon._shared_dir_problem(directory.stat(), any_owner=True).endswith(
            f"group {owner.pw_name} is not {owner.pw_name}'s primary group named as it")


def test_a_file_s_directory_others_may_write_in_is_refused_naming_the_directory(tmp_path):
    # Its callers name the file (the log, the pidfile): the refusal must say whose mode it is.
    directory = tmp_path / "logs"
    directory.mkdir()
    directory.chmod(0o777)
    with pytest.raises(PermissionError) as refused:
        daemon.make_file_dir(directory / "gsmcpd.log")
    assert refused.value.filename == str(directory)
    assert refused.value.strerror.startswith(
        f"its directory {directory}: other accounts may write in it (mode 0777)")
    with pytest.raises(NotADirectoryError, match=f"its directory {tmp_path / 'file'}: "):
        (tmp_path / "file").write_text("")
        daemon.make_file_dir(tmp_path / "file" / "gsmcpd.log")


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root, to give the directory to another account")
def test_a_directory_another_account_owns_is_refused_naming_it(tmp_path):
    directory = tmp_path / "state"
    directory.mkdir(mode=0o700)
    os.chown(directory, 65534, 65534)
    with pytest.raises(PermissionError) as refused:
        daemon.make_private_dir(directory)
    assert refused.value.strerror.startswith("it is owned by another account, nobody (uid 65534), ")
