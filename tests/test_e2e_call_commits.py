"""A call of any tool whose worker is killed (kill -9, the OOM killer) is told of the commits
it made, through the running daemon: a mutation tool's, execute_code's (the view's commit),
nothing for one that made none; and a stop right after the death still delivers the
answer. A `commit` call's own answers: test_e2e_image_commit_faults.py."""

import fcntl
import json
import os
import signal
from pathlib import Path

import pytest

from gsmcpd.router.sessions import CALLED_CAP
from helpers import Daemon, call_in_thread, killed, tool_text, wait_until
from helpers import open_session as session
from test_e2e_image import journal
from test_e2e_image_commit_faults import KILLED, SLOW_COMMIT_STEP, call_held_in_commit
from test_tools_support import write_image


@pytest.mark.parametrize("step", ["_write_intent", "_apply"])
def test_a_mutation_tool_whose_worker_is_killed_is_told_what_it_committed(tmp_path, step):
    # Every mutation tool commits: killed past its commit point, its client was told only
    # how the worker ended, not that its change stands for every session.
    image = write_image(tmp_path / "image", {"pets.py": "SOUND = 'woof'\n"})
    with Daemon(tmp_path, env={"GS_MCP_IMAGE": str(image)}) as daemon:
        a = session(daemon)
        a.tool("execute_code", code=SLOW_COMMIT_STEP % {"step": step})
        pid, caller, answers, _, intent = call_held_in_commit(a, image, step, "add_dictionary",
                                                              {"dictionaryName": "zoo"})
        record = json.loads(intent.read_text())["record"] if step == "_apply" else None
        os.kill(pid, signal.SIGKILL)
        caller.join(30)
        error = answers[0]["error"]
        assert error["code"] == -32003
        if step == "_write_intent":   # nothing of it stands: nothing more is said
            assert error["message"] == killed(pid) and error["data"] == KILLED
        else:
            files = sorted(entry["file"] for entry in record["files"])
            assert files == ["pets.py", "zoo.py"]
            assert error["message"] == (
                "%s; it had committed, and that stands (every session reads it): journal record %s: %s"
                % (killed(pid), record["id"], ", ".join(files)))
            assert error["data"] == {**KILLED, "committed": True, "journalRecords": [record["id"]], "files": files}


COMMIT_THEN_DIE = """
import os, signal
import pets
view = pets.__spec__.loader.view
view.set_source("pets", "SOUND = 'meow'\\n", live=False)
view.commit()
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_execute_code_that_committed_before_its_worker_died_is_told_so(tmp_path):
    image = write_image(tmp_path / "image", {"pets.py": "SOUND = 'woof'\n"})
    with Daemon(tmp_path, env={"GS_MCP_IMAGE": str(image)}) as daemon:
        a = session(daemon)
        pid = a.tool("status")["structuredContent"]["pid"]
        error = a.call("tools/call", {"name": "execute_code", "arguments": {"code": COMMIT_THEN_DIE}}).json()["error"]
        [record] = journal(image)
        assert error["message"] == (
            "%s; it had committed, and that stands (every session reads it): journal record %s: pets.py"
            % (killed(pid), record["id"]))
        assert error["data"] == {**KILLED, "committed": True, "journalRecords": [record["id"]], "files": ["pets.py"]}
        assert tool_text(session(daemon).tool("execute_code", code="import pets\npets.SOUND")) == "'meow'"


def test_a_call_is_told_its_commit_from_a_journal_read_back_over_passes_of_the_router_s_loop(tmp_path):
    # Others' commits fill the journal past commit_fate.SCAN_STEP (short of the limit that
    # compacts it): the session's first commit has no earlier record to stop the scan, so the
    # router reads it all back, a step a pass of its loop, and tells the same.
    image = write_image(tmp_path / "image", {"pets.py": "SOUND = 'woof'\n"})
    with Daemon(tmp_path, env={"GS_MCP_IMAGE": str(image)}) as daemon:
        a = session(daemon)
        pid = a.tool("status")["structuredContent"]["pid"]
        with open(image / ".gsmcpd" / "journal.jsonl", "ab") as written:   # about 900 KB
            written.write(b"".join(b'{"id": "call1-%d", "session": "other%d", "files": [{"file": "pets.py", '
                                   b'"new": "%s"}]}\n' % (n, n, b"0" * 160) for n in range(3500)))
        error = a.call("tools/call", {"name": "execute_code", "arguments": {"code": COMMIT_THEN_DIE}}).json()["error"]
        record = journal(image)[-1]
        assert record["session"] == a.session
        assert error["data"] == {**KILLED, "committed": True, "journalRecords": [record["id"]], "files": ["pets.py"]}


def test_execute_code_that_never_committed_is_told_only_how_its_worker_died(tmp_path):
    # Not a word of commits: its user made none.
    image = write_image(tmp_path / "image", {"pets.py": "SOUND = 'woof'\n"})
    with Daemon(tmp_path, env={"GS_MCP_IMAGE": str(image)}) as daemon:
        a = session(daemon)
        pid = a.tool("status")["structuredContent"]["pid"]
        code = "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)"
        error = a.call("tools/call", {"name": "execute_code", "arguments": {"code": code}}).json()["error"]
        assert error == {"code": -32003, "message": killed(pid), "data": KILLED}


def opened(pid, path):
    """Whether process `pid` has `path` open (a commit waiting for the image lock polls it open)."""
    fds = Path("/proc/%d/fd" % pid)
    return any(os.readlink(fds / fd) == str(path) for fd in os.listdir(fds))


def test_a_stop_right_after_a_worker_died_in_a_commit_still_tells_its_call(tmp_path):
    # The answer waits for the exit status and the image (up to 0.5 s): the stop, with no
    # session left, closed every connection meanwhile and the client got no answer at all.
    image = write_image(tmp_path / "image", {"pets.py": "SOUND = 'woof'\n"})
    with Daemon(tmp_path, env={"GS_MCP_IMAGE": str(image)}) as daemon:
        a = session(daemon)
        pid = a.tool("status")["structuredContent"]["pid"]
        a.tool("execute_code", code="import pets\npets.__spec__.loader.view.set_source('pets', 'SOUND = 1\\n')")
        lock = image / ".gsmcpd" / "lock"
        holder = os.open(lock, os.O_RDONLY)
        try:
            # Held here, so whether the commit stands cannot be told until PATIENCE is out.
            fcntl.flock(holder, fcntl.LOCK_EX)
            caller, answers = call_in_thread(a, "commit", {})
            assert wait_until(lambda: opened(pid, lock), timeout=30)   # the commit waits for it
            os.kill(pid, signal.SIGKILL)
            assert daemon.stop() == 0
            caller.join(30)
        finally:
            os.close(holder)
    assert answers, "the call got no answer"
    error = answers[0]["error"]
    # How it ended too: the stop still reads the statuses.
    assert error["message"] == killed(pid) + (
        "; whether the commit it was making stands could not be told (the image lock stayed held by another "
        "commit, or the journal is too long to read back here): a new session sees the image as it is")
    assert error["data"] == {"exit": {"signal": 9, "name": "SIGKILL"}, "commitStands": None}


def test_a_call_of_a_huge_tool_name_is_named_cut_and_escaped_in_the_status_and_the_log(tmp_path):
    # Call.describe(): the control socket's in_flight and the log's "worker died in" line
    # carried a 1 MB tool name whole, and the log line a newline in it raw (a forged line).
    image = write_image(tmp_path / "image", {"pets.py": "SOUND = 'woof'\n"})
    forged = "forged\n2026-01-01 00:00:00,000 WARNING gsmcpd forged "
    name = forged + "x" * 1_000_000
    shown = "tools/call " + forged.replace("\n", "\\n") + "x" * (CALLED_CAP - len(forged)) + "..."
    with Daemon(tmp_path, env={"GS_MCP_IMAGE": str(image)}) as daemon:
        a = session(daemon)
        pid = a.tool("status")["structuredContent"]["pid"]
        holder = os.open(image / ".gsmcpd" / "lock", os.O_RDONLY)
        try:
            # Held here, so whether the call committed cannot be told: the log names the call.
            fcntl.flock(holder, fcntl.LOCK_EX)
            os.kill(pid, signal.SIGSTOP)   # the call stays in flight, its worker never reading it
            caller, answers = call_in_thread(a, name, {})
            rows = lambda: [row for row in daemon.status().get("sessions", ()) if row["in_flight"]]
            assert wait_until(rows, timeout=30)
            assert [row["in_flight"] for row in rows()] == [shown]
            os.kill(pid, signal.SIGKILL)
            caller.join(30)
        finally:
            os.close(holder)
    assert answers[0]["error"]["message"].startswith(killed(pid) + "; whether it had committed could not be told")
    [died] = [line for line in daemon.log_text().splitlines() if "its worker died in" in line]
    assert died.endswith("its worker died in %s, whether it had committed could not be told (the image lock "
                         "stayed held by another commit, or the journal is too long to read back here): a new "
                         "session sees the image as it is" % shown)
    assert "forged" not in daemon.log_text().replace(died, "")
