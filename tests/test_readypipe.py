"""The pipe between `start` and its detached `serve`: warnings and errors as they are
logged, those the forkserver and spawner wrote to the log file, then one last line; read
back by start."""

import fcntl
import logging
import os
import subprocess
import sys
import threading

import pytest

from gsmcpd import readypipe
from gsmcpd.exitcodes import FAILED, REFUSED
from gsmcpd.worker import stderr_log
from helpers import REPO

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


def test_each_warning_or_error_logged_while_starting_goes_before_the_last_line_and_none_after(pipe):
    read_end, write_end = pipe
    reporter = readypipe.Reporter(write_end)
    log.warning("before forwarding: the log only")
    reporter.forward_warnings()
    log.info("an info line")
    log.warning("tls_key %s is readable by every account", "/k.pem")
    log.warning("two\nlines")
    log.error("an error that does not end the start")
    log.critical("a critical one")
    reporter.ready("http://127.0.0.1:8000/mcp")
    log.warning("after ready: the log only")
    reporter.error("too late", REFUSED)   # one last line only
    assert _lines(read_end) == ["LOG WARNING tls_key /k.pem is readable by every account",
                                "LOG WARNING two lines", "LOG ERROR an error that does not end the start",
                                "LOG CRITICAL a critical one", f"READY {os.getpid()} http://127.0.0.1:8000/mcp"]
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
    assert _lines(read_end)[0] == "LOG WARNING " + "w" * (readypipe.LONGEST_WARNING - len("LOG WARNING "))


def test_start_hands_on_each_warning_and_returns_the_last_line(pipe):
    read_end, write_end = pipe
    os.write(write_end, b"LOG WARNING one\nLOG ERR")
    os.write(write_end, b"OR two\nREFUSED image /x is not a directory\nLOG WARNING never read\n")
    logged = []
    assert readypipe.read_outcome(read_end, 30, lambda *line: logged.append(line)) == \
        "REFUSED image /x is not a directory"
    assert logged == [("WARNING", "one"), ("ERROR", "two")]
    os.close(write_end)


def test_start_reads_eof_when_serve_ends_without_a_last_line(pipe):
    read_end, write_end = pipe
    os.write(write_end, b"LOG WARNING one\n")
    os.close(write_end)
    logged = []
    assert readypipe.read_outcome(read_end, 30, lambda *line: logged.append(line)) == "EOF"
    assert logged == [("WARNING", "one")]


def _spawner_line(level, message, daemon=None):
    """A line of a process below `daemon` (None: this process, as the forkserver and the
    spawner run below serve)."""
    return "2026-12-01 17:21:28,123 gsmcpd-worker[4242] of gsmcpd[%d] %s %s\n" % (
        os.getpid() if daemon is None else daemon, level, message)


def test_the_forkserver_and_spawner_lines_written_to_the_log_while_starting_go_before_the_last_line(
        pipe, tmp_path):
    # Other processes, writing to the log file (their stderr) alone: start never said them.
    read_end, write_end = pipe
    log_file = tmp_path / "gsmcpd.log"
    log_file.write_text(_spawner_line("WARNING", "from an earlier run: not this start's"))
    reporter = readypipe.Reporter(write_end)
    reporter.forward_warnings(log_file)
    with log_file.open("a") as other:
        other.write(_spawner_line("WARNING", "workers run 4 nicer than the router, not 10")
                    + "2026-12-01 17:21:28,124 WARNING the router's own: sent as it was logged\n"
                    + _spawner_line("ERROR", "worker rehearsal failed; workers start cold")
                    + "Traceback (most recent call last):\n"
                    + _spawner_line("WARNING", "another daemon's, sharing the file", os.getppid())
                    + _spawner_line("INFO", "not a warning"))
    reporter.ready("http://127.0.0.1:8000/mcp")
    with log_file.open("a") as other:
        other.write(_spawner_line("WARNING", "after ready: the log only"))
    assert _lines(read_end) == ["LOG WARNING workers run 4 nicer than the router, not 10",
                                "LOG ERROR worker rehearsal failed; workers start cold",
                                f"READY {os.getpid()} http://127.0.0.1:8000/mcp"]
    assert reporter._log_file is None   # read once, closed


def test_the_lines_of_a_process_below_that_ended_before_the_last_line_go_before_it_too(pipe, tmp_path):
    # A spawner that warned, then died in its set-up (the start failing for it), was not
    # below the server any more once the lines were read back: its warnings were the log's only.
    read_end, write_end = pipe
    log_file = tmp_path / "gsmcpd.log"
    log_file.write_text("")
    reporter = readypipe.Reporter(write_end)
    reporter.forward_warnings(log_file)
    subprocess.run([sys.executable, "-c", "import logging, sys\n"
                    "from gsmcpd.worker import stderr_log\n"
                    "stderr_log.log_to(open(sys.argv[1], 'a'))\n"
                    "logging.getLogger('gsmcpd.worker').warning('workers may hold 5 bytes')\n",
                    str(log_file)], check=True, cwd=str(REPO))   # and reaped: its pid may be anyone's
    reporter.error("the worker spawner did not start: it ended before saying hello", FAILED)
    assert _lines(read_end) == ["LOG WARNING workers may hold 5 bytes",
                                "ERROR the worker spawner did not start: it ended before saying hello"]


def test_the_spawner_lines_go_before_a_failure_too_and_never_take_its_room(pipe, tmp_path):
    read_end, write_end = pipe
    fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, 4096)    # one page: nothing but the last line fits
    log_file = tmp_path / "gsmcpd.log"
    log_file.write_text("")
    reporter = readypipe.Reporter(write_end)
    reporter.forward_warnings(log_file)
    with log_file.open("a") as other:
        other.write(_spawner_line("WARNING", "w" * 100))
    assert reporter._log_file is not None
    reporter.error("port 8000 on 127.0.0.1 is already in use", FAILED)
    assert _lines(read_end) == ["ERROR port 8000 on 127.0.0.1 is already in use"]


def test_the_lines_of_the_worker_processes_format_are_told_from_the_routers():
    text = (_spawner_line("WARNING", "spawner: cannot list /tmp/x: denied")
            + _spawner_line("CRITICAL", "a critical one", daemon=7)
            + _spawner_line("INFO", "an info line")
            + "2026-12-01 17:21:28,123 WARNING gsmcpd-worker[1] of gsmcpd[2] WARNING the router's, quoting one\n"
            + "  File \"x.py\", line 1\n"
            + _spawner_line("ERROR", "being written").rstrip("\n"))
    assert stderr_log.warnings_in(text) == [("WARNING", "spawner: cannot list /tmp/x: denied"),
                                            ("CRITICAL", "a critical one")]
    assert stderr_log.warnings_in(text, daemon=7) == [("CRITICAL", "a critical one")]


def test_the_worker_processes_format_is_what_warnings_in_reads(capsys):
    stderr_log.log_to(sys.stderr)
    logging.getLogger("gsmcpd.worker").warning("workers may hold %d bytes", 5)
    logging.getLogger("gsmcpd.worker").info("not shown")
    assert stderr_log.warnings_in(capsys.readouterr().err) == [("WARNING", "workers may hold 5 bytes")]


def test_a_log_file_that_is_no_regular_file_is_not_read_back(pipe, tmp_path):
    # A FIFO's bytes are its reader's, and a read of an empty one could wait.
    read_end, write_end = pipe
    fifo = tmp_path / "log.fifo"
    os.mkfifo(fifo)
    reporter = readypipe.Reporter(write_end)
    reporter.forward_warnings(fifo)
    assert reporter._log_file is None
    reporter.ready("u")
    assert _lines(read_end) == [f"READY {os.getpid()} u"]
