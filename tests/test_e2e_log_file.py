"""End-to-end: a log file that starts refusing writes while the daemon serves (it hit
the file size limit here; a full filesystem alike) costs its lines, never the server."""

import os
import re
import resource
import subprocess
import sys

from helpers import Daemon, open_session

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
