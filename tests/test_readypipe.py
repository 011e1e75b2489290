"""The pipe between `start` and its detached `serve`: warnings as they are logged, then
one last line; read back by start."""

import fcntl
import logging
import os
import threading

import pytest

from gsmcpd import readypipe
from gsmcpd.exitcodes import FAILED, REFUSED

log = logging.getLogger("gsmcpd.test.readypipe")


@pytest.fixture
def pipe():
    read_end, write_end = os.pipe()
    yield read_end, write_end
    os.close(read_end)


def _lines(fd):
    data = b""
    while chunk := os.read(fd, 65536):
        data += chunk
    return data.decode().splitlines()


@pytest.fixture(autouse=True)
def _no_forwarder_outlives_its_test():
    yield
    root = logging.getLogger()
    for handler in [h for h in root.handlers if isinstance(h, readypipe._WarningsToStarter)]:
        root.removeHandler(handler)


def test_each_warning_logged_while_starting_goes_before_the_last_line_and_none_after(pipe):
    read_end, write_end = pipe
    reporter = readypipe.Reporter(write_end)
    log.warning("before forwarding: the log only")
    reporter.forward_warnings()
    log.info("an info line")
    log.warning("tls_key %s is readable by every account", "/k.pem")
    log.warning("two\nlines")
    log.error("an error: the last line says a failure")
    reporter.ready("http://127.0.0.1:8000/mcp")
    log.warning("after ready: the log only")
    reporter.error("too late", REFUSED)   # one last line only
    assert _lines(read_end) == ["WARNING tls_key /k.pem is readable by every account", "WARNING two lines",
                                f"READY {os.getpid()} http://127.0.0.1:8000/mcp"]
    assert readypipe._WarningsToStarter not in {type(h) for h in logging.getLogger().handlers}


def test_a_warning_of_a_process_forked_from_the_server_is_not_sent(pipe):
    read_end, write_end = pipe
    reporter = readypipe.Reporter(write_end)
    reporter.forward_warnings()
    reporter._forwarder.pid = os.getpid() + 1   # as in a child forked meanwhile, which holds the fd too
    log.warning("from the child")
    reporter.error("port 8000 on 127.0.0.1 is already in use", FAILED)
    assert _lines(read_end) == ["ERROR port 8000 on 127.0.0.1 is already in use"]


def test_a_warning_the_pipe_has_no_room_for_is_dropped_not_waited_for(pipe):
    # A start stopped with ^Z reads nothing: serve must not wait on it to go on starting.
    read_end, write_end = pipe
    reporter = readypipe.Reporter(write_end)
    reporter.forward_warnings()
    try:
        while True:
            os.write(write_end, b"x" * 4096)
    except BlockingIOError:
        pass
    warned = threading.Thread(target=log.warning, args=("no room",), daemon=True)
    warned.start()
    warned.join(30)
    assert not warned.is_alive()
    reporter.ready("http://127.0.0.1:8000/mcp")   # no room either: logged, never raised


def test_warnings_never_take_the_room_of_the_last_line(pipe):
    # Warnings filling the pipe before start read them made the READY write fail: start
    # read EOF and said "exited during startup" of a server that was serving.
    read_end, write_end = pipe
    fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, 4096)    # one page: two warnings fill it
    reporter = readypipe.Reporter(write_end)
    reporter.forward_warnings()
    for _ in range(2):
        log.warning("w" * 2030)
    reporter.ready("http://127.0.0.1:8000/mcp")
    assert _lines(read_end)[-1] == "READY %d http://127.0.0.1:8000/mcp" % os.getpid()


def test_a_warning_longer_than_a_pipe_writes_whole_is_cut(pipe):
    read_end, write_end = pipe
    reporter = readypipe.Reporter(write_end)
    reporter.forward_warnings()
    log.warning("w" * 10000)
    reporter.ready("u")
    assert _lines(read_end)[0] == "WARNING " + "w" * (readypipe.LONGEST_WARNING - len("WARNING "))


def test_start_hands_on_each_warning_and_returns_the_last_line(pipe):
    read_end, write_end = pipe
    os.write(write_end, b"WARNING one\nWARN")
    os.write(write_end, b"ING two\nREFUSED image /x is not a directory\nWARNING never read\n")
    warned = []
    assert readypipe.read_outcome(read_end, 30, warned.append) == "REFUSED image /x is not a directory"
    assert warned == ["one", "two"]
    os.close(write_end)


def test_start_reads_eof_when_serve_ends_without_a_last_line(pipe):
    read_end, write_end = pipe
    os.write(write_end, b"WARNING one\n")
    os.close(write_end)
    warned = []
    assert readypipe.read_outcome(read_end, 30, warned.append) == "EOF"
    assert warned == ["one"]
