"""Fixtures shared by the test modules."""

import compileall
import logging
import os
from pathlib import Path

import pytest

from gsmcpd import daemon as daemon_module
from helpers import REPO, Daemon, open_session, remove_tree
from no_fsync.sitecustomize import fsync_checked

NO_FSYNC = Path(__file__).parent / "no_fsync"


def pytest_configure(config):
    """The package byte-compiled for the run, as install.sh does: under PYTHONDONTWRITEBYTECODE
    (or in a checkout that never ran it, or whose sources changed since), each daemon's router
    and forkserver, each `python -m gsmcpd` and each trial import compiled every stale module
    anew (~0.3 s of CPU more per daemon start with none compiled). Up-to-date files are
    skipped (each xdist worker runs this too); a checkout it may not write is left as it is."""
    compileall.compile_dir(str(REPO / "gsmcpd"), quiet=2)


def _end_left_running(daemons):
    """Kill those of `daemons` still running; a line naming each, for the failure."""
    left = {d for d in daemons if d.running()}
    for d in left:
        d.kill()
    return ["gsmcpd pid %d, port %d, state %s (log %s)" % (d.proc.pid, d.port, d.state, d.log_path)
            for d in left]


@pytest.fixture(autouse=True)
def no_daemon_left_by_the_test():
    """A daemon the test started and left running (it failed before its stop) is killed,
    and the test errors naming it. Only this run's own Daemons are looked at, never other
    gsmcpd processes on the machine. Module fixtures' daemons are started before this
    (wider scopes are set up first), so they are not the test's."""
    first = len(Daemon.started)
    yield
    left = _end_left_running(Daemon.started[first:])
    if left:
        pytest.fail("left running after the test, now killed:\n" + "\n".join(left), pytrace=False)


@pytest.fixture(autouse=True, scope="session")
def no_daemon_left_by_the_run():
    """What a module fixture started and never stopped (its set-up failed after the start,
    so its teardown never ran) is killed at the end of the run, and named."""
    yield
    left = _end_left_running(Daemon.started)
    if left:
        pytest.fail("left running at the end of the run, now killed:\n" + "\n".join(left), pytrace=False)


@pytest.fixture(autouse=True)
def logging_as_it_was():
    """The root logger's handlers and level as before the test: a test of serve_main
    configures logging (level INFO), and later tests in the same process (the suite runs
    in several, a file's tests in one) would capture records they do not expect."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    if daemon_module._log_state.handler is not None:
        root.removeHandler(daemon_module._log_state.handler)
        daemon_module._log_state.handler.close()
        daemon_module._log_state.handler = None
    root.handlers[:] = handlers
    root.setLevel(level)


@pytest.fixture
def c(daemon):
    """A session on the module's own `daemon` fixture, closed after the test."""
    client = open_session(daemon)
    yield client
    client.close()


@pytest.fixture
def deep_dir(tmp_path):
    """A directory for a tree nested past the recursion limit, removed after the test by
    helpers.remove_tree: left in tmp_path, pytest's own cleanup of old runs (shutil.rmtree)
    would fail on it with a RecursionError at the end of every later session."""
    path = tmp_path / "deep"
    path.mkdir()
    yield path
    remove_tree(path)


@pytest.fixture
def fsync_skipped(monkeypatch):
    """os.fsync made a check of its descriptor alone in this process (no_fsync/sitecustomize.py
    says why), for tests of what a commit leaves. A test of the flushes themselves still sees
    each call: it wraps _fsync_dir or os.fsync in turn."""
    monkeypatch.setattr(os, "fsync", fsync_checked)


@pytest.fixture(scope="module")
def daemons_fsync_skipped():
    """The same in the daemons the module's tests start, and the processes they start."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Daemon, "pythonpath", os.pathsep.join([Daemon.pythonpath, str(NO_FSYNC)]))
        yield
