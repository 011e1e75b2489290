"""End-to-end: a log file that starts refusing writes while the daemon serves (it hit
the file size limit here; a full filesystem alike) costs its lines, never the server; one
rotated away is left by every process of the daemon, not only by the router."""

import os
import re
import resource
import signal
import subprocess
import sys

from helpers import Client, Daemon, free_port, open_session, tool_text, wait_until
from test_daemon_cli import STARTED, _no_daemon_outlives_its_test, gsmcpd  # noqa: F401 (a fixture)

LIMIT = 64 * 1024


def _files_limited_to_64k():
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, resource.RLIM_INFINITY))


def test_a_log_file_that_stops_taking_lines_is_reported_once_and_the_server_serves_on(tmp_path):
    log_file = tmp_path / "gsmcpd.log"
    env = {"GS_MCP_LOG_FILE": str(log_file), "GS_MCP_TRACE": "1", "GS_MCP_TRACE_LIMIT": "none"}
    with Daemon(tmp_path, env=env, preexec=_files_limited_to_64k) as daemon:
        client = open_session(daemon)
        pad = "x" * 8000
        for n in range(16):   # traced whole: 128 KB of lines for a file that takes 64 KiB
            reply = client.call("ping", {"_meta": {"pad": pad}})
            assert (reply.status, reply.json()["result"]) == (200, {})
        assert log_file.stat().st_size == LIMIT
        stderr = daemon.log_text()
        assert stderr.count("cannot write to the log file") == 1, stderr
        assert f"gsmcpd: cannot write to the log file {log_file}: File too large; serving on" in stderr
        os.truncate(log_file, 0)   # the operator makes room
        assert client.call("ping", {"_meta": {"tag": "after-room"}}).status == 200
        lines = [line for line in log_file.read_text().splitlines() if line]
        assert re.fullmatch(r"\S+ \S+ WARNING the log file refused writes from \S+ \S+ until now "
                            r"\(File too large\): \d+ line\(s\) lost", lines[0]), lines[:2]
        assert "after-room" in lines[1]
        assert daemon.stop() == 0


def test_a_tmpdir_byte_that_is_not_utf8_is_warned_of_in_the_log_file_escaped(tmp_path):
    # The passed-over TMPDIR's warning carried os.environ's \udcff: the log file, strict
    # UTF-8, took a "--- Logging error ---" traceback in its place.
    log_file = tmp_path / "gsmcpd.log"
    missing = os.fsdecode(os.fsencode(tmp_path) + b"/missing-\xff")
    with Daemon(tmp_path, env={"GS_MCP_LOG_FILE": str(log_file), "TMPDIR": missing}) as daemon:
        assert daemon.stop() == 0
    text = log_file.read_text()
    assert f"WARNING TMPDIR {tmp_path}/missing-\\xff is not a directory " in text
    assert "Logging error" not in text and "Traceback" not in text


def test_a_log_file_refusing_writes_shows_in_status_while_it_lasts(tmp_path):
    # A detached daemon's stderr is its log file: the once-said refusal went nowhere.
    log_file = tmp_path / "gsmcpd.log"
    env = {"GS_MCP_LOG_FILE": str(log_file), "GS_MCP_TRACE": "1", "GS_MCP_TRACE_LIMIT": "none"}
    with Daemon(tmp_path, env=env, preexec=_files_limited_to_64k) as daemon:
        client = open_session(daemon)
        assert daemon.status()["log_refusal"] is None
        for n in range(16):   # traced whole: 128 KB of lines for a file that takes 64 KiB
            assert client.call("ping", {"_meta": {"pad": "x" * 8000}}).status == 200
        refusal = daemon.status()["log_refusal"]
        assert refusal["file"] == str(log_file) and refusal["reason"] == "File too large"
        assert refusal["lines_lost"] >= 1 and isinstance(refusal["since"], float)
        assert client.call("ping").status == 200
        assert daemon.status()["log_refusal"]["lines_lost"] > refusal["lines_lost"]   # it counts on
        table = subprocess.run([sys.executable, "-m", "gsmcpd", "status", str(daemon.port), "--state-dir",
                                str(daemon.state)], capture_output=True, text=True, env=daemon.env, cwd=str(tmp_path))
        assert table.returncode == 0, table.stderr
        assert re.search(rf"^WARNING: the log file {re.escape(str(log_file))} refuses writes since \S+ \S+ "
                         r"\(File too large\): \d+ line\(s\) lost so far$", table.stdout, re.M), table.stdout
        os.truncate(log_file, 0)   # the operator makes room: the next line is taken, and it is over
        assert client.call("ping").status == 200
        assert daemon.status()["log_refusal"] is None
        assert "WARNING the log file refused writes from" in log_file.read_text()
        assert daemon.stop() == 0


def _writes_to_its_stderr(client, tag):
    """What a worker writes to the log it inherited from the spawner as its fd 2 (a fallback
    log record, a crash's dump; gsmcpd.worker.main._log_off_stdio): a line saying `tag` and
    the worker's pid."""
    return int(tool_text(client.tool("execute_code", code=(
        "import logging, os\nlog = next(handler.fallback.stream for handler in logging.getLogger().handlers\n"
        "           if hasattr(handler, 'fallback'))\n"
        f"log.write('{tag} %d\\n' % os.getpid())\nlog.flush()\nos.getpid()"))))


def test_after_a_rotation_the_spawner_and_the_workers_it_forks_write_to_the_new_file(tmp_path):
    # A detached daemon's spawner (and its workers) kept the fd 2 it inherited at start:
    # after logrotate's rename and SIGHUP, only the router wrote to the new file; the rest
    # went to the rotated one, compressed and deleted at the next rotation. Run niced, a
    # spawner warns as it starts (workers cannot be as nice as asked): a new one's warning
    # shows where a spawner started after the rotation writes.
    port, state = str(free_port()), tmp_path / "state"
    ours = min(19, os.getpriority(os.PRIO_PROCESS, 0) + 15)
    warned = re.compile(r"gsmcpd-worker\[\d+\] of gsmcpd\[\d+\] WARNING " + re.escape(
        f"workers run {19 - ours} nicer than the router, not 10: nice 19 is the lowest priority"))
    env = {"GS_MCP_WORKER_NICE": "10", "GS_MCP_SPARE_WORKERS": "1", "GS_MCP_TOOLSETS": "execution"}
    started = gsmcpd("start", "--port", port, "--state-dir", str(state), run_by=("nice", "-n", "15"), env=env)
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        log_file, rotated = state / f"gsmcpd-{port}.log", state / f"gsmcpd-{port}.log.1"
        log_file.rename(rotated)                    # as logrotate does, then its postrotate:
        os.kill(int(STARTED.search(started.stdout).group(1)), signal.SIGHUP)
        assert wait_until(lambda: log_file.exists() and "SIGHUP: log file reopened" in log_file.read_text(), 20)
        first = Client(int(port))
        first.initialize()                          # the spare forked before the rotation
        second = Client(int(port))
        second.initialize()                         # one forked after it
        _writes_to_its_stderr(first, "first-worker")
        pid = _writes_to_its_stderr(second, "second-worker")
        assert wait_until(lambda: f"second-worker {pid}" in log_file.read_text()), rotated.read_text()[-2000:]
        # A spawner started after the rotation: its set-up's warning goes to the new file too.
        assert tool_text(second.tool("execute_code", code="import os; os.kill(os.getppid(), 9); 'killed'")) \
            == "'killed'"
        assert wait_until(lambda: warned.search(log_file.read_text()), 20), log_file.read_text()[-2000:]
        third = Client(int(port))
        third.initialize()
        pid = _writes_to_its_stderr(third, "third-worker")
        assert wait_until(lambda: f"third-worker {pid}" in log_file.read_text())
        old = rotated.read_text()
        assert len(warned.findall(old)) == 1 and "second-worker" not in old and "third-worker" not in old, old
    finally:
        assert gsmcpd("stop", port, "--state-dir", str(state)).returncode == 0


def test_a_log_file_removed_with_its_directory_shows_in_status_until_a_sighup_reopens_it(tmp_path):
    # Its lines went on into a file no path reached, its space never freed, and not a word
    # anywhere: a failed SIGHUP reopen said so only in that file.
    logs = tmp_path / "logs"
    logs.mkdir()
    log_file = logs / "gsmcpd.log"
    with Daemon(tmp_path, env={"GS_MCP_LOG_FILE": str(log_file)}) as daemon:
        client = open_session(daemon)
        assert daemon.status()["log_removed"] is None
        log_file.unlink()
        logs.rmdir()
        assert tool_text(client.tool("execute_code", code="6 * 7")) == "42"   # it serves on
        assert open_session(daemon).call("ping").status == 200
        assert daemon.status()["log_removed"] == str(log_file)
        table = subprocess.run([sys.executable, "-m", "gsmcpd", "status", str(daemon.port), "--state-dir",
                                str(daemon.state)], capture_output=True, text=True, env=daemon.env, cwd=str(tmp_path))
        assert table.returncode == 0, table.stderr
        assert (f"WARNING: the log file {log_file}, or its directory, was removed while open: its lines go to "
                "a file no path reaches, whose space is not freed; make its directory if it is gone, then "
                f"kill -HUP {daemon.proc.pid} to open it anew") in table.stdout.splitlines(), table.stdout
        os.kill(daemon.proc.pid, signal.SIGHUP)   # its directory still gone: the old file is kept
        assert client.call("ping").status == 200
        assert daemon.status()["log_removed"] == str(log_file)
        logs.mkdir()
        os.kill(daemon.proc.pid, signal.SIGHUP)
        assert wait_until(lambda: daemon.status()["log_removed"] is None)
        assert "SIGHUP: log file reopened" in log_file.read_text()
        assert daemon.stop() == 0

