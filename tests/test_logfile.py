"""The log file: a file that opens but refuses writes is found before serving, and one
that starts refusing later costs its lines, never the server (gsmcpd/logfile.py)."""

import errno
import fcntl
import logging
import os
import re
import time
import types

import pytest

from gsmcpd import logfile
from gsmcpd.logfile import LineStream, PrivateFileHandler, RefusesWrites, open_for_appending


def test_a_file_that_opens_but_refuses_every_write_is_refused_at_open(tmp_path):
    # /dev/full opened, seeked and then took no line: the daemon served on, logging nothing.
    with pytest.raises(RefusesWrites) as refused:
        open_for_appending("/dev/full")
    assert refused.value.errno == errno.ENOSPC and refused.value.filename == "/dev/full"
    kept = tmp_path / "kept.log"
    kept.write_text("as it was\n")
    os.close(open_for_appending(kept))
    assert kept.read_text() == "as it was\n"     # the probe writes nothing


def test_a_file_on_a_full_filesystem_is_refused_at_open(tmp_path, monkeypatch):
    full = types.SimpleNamespace(f_blocks=1000, f_bfree=0, f_bavail=0)
    monkeypatch.setattr(logfile.os, "statvfs", lambda target: full)
    with pytest.raises(RefusesWrites) as refused:
        open_for_appending(tmp_path / "g.log")
    assert refused.value.errno == errno.ENOSPC
    no_blocks = types.SimpleNamespace(f_blocks=0, f_bfree=0, f_bavail=0)   # /proc, sysfs: counts none
    monkeypatch.setattr(logfile.os, "statvfs", lambda target: no_blocks)
    os.close(open_for_appending(tmp_path / "g.log"))


def test_a_log_file_that_starts_refusing_costs_its_lines_and_says_so_once(tmp_path, capfd):
    path = tmp_path / "g.log"
    handler = PrivateFileHandler(path)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    logger = logging.getLogger("gsmcpd.test.logfile")
    logger.propagate, logger.level = False, logging.INFO
    logger.addHandler(handler)
    try:
        logger.info("before")
        assert handler.refusal() is None
        first_refused = time.time()
        working, handler.stream = handler.stream, LineStream(os.open("/dev/full", os.O_WRONLY))
        for n in range(3):   # no exception, no traceback per line
            logger.info("refused %d", n)
        refusal = handler.refusal()   # what `gsmcpd status` shows, while it lasts
        assert refusal == {"file": str(path), "since": refusal["since"], "reason": "No space left on device",
                           "lines_lost": 3}
        assert first_refused <= refusal["since"] <= time.time()
        handler.stream.close()
        handler.stream = working   # the filesystem has room again
        assert handler.refusal()["lines_lost"] == 3   # until a line is taken again
        logger.info("after")
        assert handler.refusal() is None
    finally:
        logger.removeHandler(handler)
        handler.close()
    stderr = capfd.readouterr().err
    assert stderr == (f"gsmcpd: cannot write to the log file {path}: No space left on device; serving "
                      "on, its lines lost until it takes writes again (its first line then says how many)\n")
    lines = path.read_text().splitlines()
    assert lines[0] == "INFO before" and lines[2] == "INFO after" and len(lines) == 3
    assert re.fullmatch(r"WARNING the log file refused writes from \S+ \S+ until now "
                        r"\(No space left on device\): 3 line\(s\) lost", lines[1]), lines[1]


def test_the_process_log_file_refusal_is_found_on_the_root_logger(tmp_path):
    # The control socket's status asks it, knowing no handler.
    assert logfile.log_file_refusal() is None
    handler = PrivateFileHandler(tmp_path / "g.log")
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        assert logfile.log_file_refusal() is None
        working, handler.stream = handler.stream, LineStream(os.open("/dev/full", os.O_WRONLY))
        logging.getLogger("gsmcpd.test.root_refusal").warning("refused")
        refusal = logfile.log_file_refusal()
        assert refusal is not None and refusal == handler.refusal() and refusal["lines_lost"] == 1
        handler.stream.close()
        handler.stream = working
    finally:
        root.removeHandler(handler)
        handler.close()


def test_a_line_the_file_took_only_part_of_does_not_run_into_the_next():
    reader, writer = os.pipe()
    fcntl.fcntl(writer, fcntl.F_SETFL, os.O_NONBLOCK)   # a full pipe takes part of a long line
    capacity = fcntl.fcntl(writer, fcntl.F_GETPIPE_SZ)
    stream = LineStream(writer)
    try:
        with pytest.raises(BlockingIOError):
            stream.write("x" * (capacity + 10) + "\n")
        assert len(os.read(reader, capacity + 100)) == capacity
        stream.write("next\n")
        assert os.read(reader, 100) == b"\nnext\n"
        stream.write("then\n")
        assert os.read(reader, 100) == b"then\n"
    finally:
        stream.close()
        os.close(reader)


def test_a_lone_surrogate_is_written_escaped_not_a_logging_traceback(tmp_path, capfd):
    # A TMPDIR byte that is not UTF-8 (os.environ's \udcff) made the warning naming it a
    # "--- Logging error ---" traceback in the log file, the line itself lost.
    path = tmp_path / "g.log"
    handler = PrivateFileHandler(path)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    logger = logging.getLogger("gsmcpd.test.surrogate")
    logger.propagate, logger.level = False, logging.INFO
    logger.addHandler(handler)
    try:
        logger.warning("TMPDIR %s is not a directory", "/tmp/\udcff")
    finally:
        logger.removeHandler(handler)
        handler.close()
    assert path.read_text() == "WARNING TMPDIR /tmp/\\udcff is not a directory\n"
    assert "Logging error" not in capfd.readouterr().err


def test_a_log_file_removed_while_open_is_found_on_the_root_logger_until_reopened(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    assert logfile.log_file_removed() is None
    handler = PrivateFileHandler(logs / "g.log")
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        logging.getLogger("gsmcpd.test.removed").warning("taken")
        assert logfile.log_file_removed() is None
        (logs / "g.log").unlink()
        logs.rmdir()
        logging.getLogger("gsmcpd.test.removed").warning("to no one")   # taken: no refusal
        assert handler.refusal() is None and logfile.log_file_removed() == str(logs / "g.log")
        logs.mkdir()
        handler.stream.close()
        handler.stream = handler._open()   # as a SIGHUP's reopen does
        assert logfile.log_file_removed() is None
    finally:
        root.removeHandler(handler)
        handler.close()
