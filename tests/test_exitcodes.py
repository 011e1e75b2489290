"""Which failures of serve, start and check a retry may outlast (exit 1) and which it
cannot (exit 2, the systemd unit's RestartPreventExitStatus)."""

import dataclasses
import errno
import io
import os

import pytest

from gsmcpd import config as config_module
from gsmcpd import daemon, exitcodes, readypipe
from gsmcpd.config import load_config
from gsmcpd.exitcodes import FAILED, REFUSED, StartRefused, of_os_error


@pytest.fixture(autouse=True)
def _no_toolset_imports(monkeypatch):
    monkeypatch.setattr(config_module, "_validate_toolsets", lambda names, imported=False: None)


@pytest.mark.parametrize("code", [errno.EADDRINUSE, errno.EADDRNOTAVAIL, errno.ENOSPC, errno.EDQUOT,
                                  errno.EIO, errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.EAGAIN])
def test_an_os_error_that_may_pass_is_failed(code):
    # The port's holder exits, the address comes up at boot, space is freed: systemd's retry may pass.
    assert of_os_error(OSError(code, os.strerror(code))) == FAILED == 1


@pytest.mark.parametrize("code", [errno.EACCES, errno.EPERM, errno.ENOENT, errno.ENOTDIR, errno.EISDIR,
                                  errno.ELOOP, errno.ENAMETOOLONG, errno.EROFS, errno.EINVAL, errno.ENXIO])
def test_an_os_error_naming_a_path_or_address_unusable_as_configured_is_refused(code):
    assert of_os_error(OSError(code, os.strerror(code))) == REFUSED == 2


def test_a_start_refusal_is_refused_unless_told_it_may_pass():
    assert StartRefused("image /x is not a directory").status == REFUSED
    assert StartRefused("TMPDIR: No space left on device", FAILED).status == FAILED


def _serve_main_with(tmp_path, serve):
    config = load_config({"port": 8325, "state_dir": str(tmp_path), "log_file": str(tmp_path / "d.log")}, {})
    read_end, write_end = os.pipe()
    try:
        status = daemon.serve_main(config, ready_fd=write_end, serve=serve)
        return status, os.read(read_end, 4096).decode()
    finally:
        os.close(read_end)


def raising(exc):
    def serve(cfg, **callbacks):
        raise exc
    return serve


@pytest.mark.parametrize("exc, status, line", [
    (StartRefused("tls_cert/tls_key: cannot load TLS certificate"), REFUSED,
     "REFUSED tls_cert/tls_key: cannot load TLS certificate\n"),
    (StartRefused("cannot make the workers' temporary directory in /t: No space left on device (TMPDIR)",
                  FAILED), FAILED,
     "ERROR cannot make the workers' temporary directory in /t: No space left on device (TMPDIR)\n"),
    (OSError(errno.EACCES, "Permission denied"), REFUSED,
     "REFUSED cannot serve on 127.0.0.1:8325: Permission denied\n"),   # a port below 1024, unprivileged
    (OSError(errno.EADDRNOTAVAIL, "Cannot assign requested address"), FAILED,
     "ERROR cannot serve on 127.0.0.1:8325: Cannot assign requested address\n"),   # at boot, not up yet
    (OSError(errno.EADDRINUSE, "Address already in use"), FAILED,
     "ERROR port 8325 on 127.0.0.1 is already in use\n"),
    (RuntimeError("unforeseen"), FAILED, "ERROR gsmcpd failed: RuntimeError: unforeseen\n"),
])
def test_serve_main_exits_and_tells_start_whether_a_retry_may_pass(tmp_path, exc, status, line):
    assert _serve_main_with(tmp_path, raising(exc)) == (status, line)
    assert f"ERROR {'gsmcpd: ' if isinstance(exc, StartRefused) else ''}" in (tmp_path / "d.log").read_text()


def test_serve_main_fails_retryably_while_another_gsmcpd_holds_the_port_and_refuses_an_unreadable_pidfile(
        tmp_path, monkeypatch):
    def already(path, port):
        raise daemon.AlreadyRunning("a gsmcpd (pid 7) is already running on port 8325")
    monkeypatch.setattr(daemon, "claim_pidfile", already)
    assert _serve_main_with(tmp_path, raising(AssertionError("served"))) == (
        FAILED, "ERROR a gsmcpd (pid 7) is already running on port 8325\n")

    def unreadable(path, port):
        raise daemon.PidfileError(f"cannot read the pidfile {path}: Is a directory")
    monkeypatch.setattr(daemon, "claim_pidfile", unreadable)
    status, line = _serve_main_with(tmp_path, raising(AssertionError("served")))
    assert (status, line.split(": ")[-1]) == (REFUSED, "Is a directory\n")
    assert line.startswith("REFUSED cannot read the pidfile ")


@pytest.mark.parametrize("line, status", [
    ("REFUSED image /x is not a directory", REFUSED),
    ("ERROR port 8325 on 127.0.0.1 is already in use", FAILED),
    ("EOF", FAILED),
])
def test_start_exits_with_the_status_its_serve_reported(tmp_path, line, status):
    config = load_config({"port": 8325, "state_dir": str(tmp_path)}, {})
    out = io.StringIO()
    assert daemon._report_start(config, line, tmp_path / "d.log", 60, out=out) == status
    assert out.getvalue().startswith("gsmcpd failed to start: " if line != "EOF" else "gsmcpd exited during startup")


def test_the_failure_line_names_refusals_apart():
    assert readypipe.failure_line("a\nb", REFUSED) == "REFUSED a b"
    assert readypipe.failure_line("a", FAILED) == "ERROR a"
    assert exitcodes.OK == 0


@pytest.mark.parametrize("host, port, status, said", [
    ("192.0.2.1", 8325, FAILED, "Cannot assign requested address"),   # not up (yet): may pass
])
def test_start_says_an_address_it_cannot_bind_and_exits_by_its_kind(tmp_path, host, port, status, said):
    # It raised out of start(): a traceback, exit 1 whatever the cause.
    config = dataclasses.replace(load_config({"port": port, "state_dir": str(tmp_path)}, {}), host=host)
    out = io.StringIO()
    assert daemon.start(config, [], out=out) == status
    assert out.getvalue() == f"cannot serve on {host}:{port}: {said}\n"
