"""End-to-end: what a session's code writes to file descriptors 1 and 2 (os.write, a
subprocess, C code) is its call's output, cut at the cap, through the real daemon; it went
unbounded, unprefixed and unescaped into the daemon's log and never into the answer. Between
calls those fds go nowhere, while a worker's crash still reaches the log."""

import os

import pytest

from helpers import Daemon, cut_notes, open_session, tool_text, wait_until


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    with Daemon(tmp_path_factory.mktemp("descriptor-output"), env={"GS_MCP_SPARE_WORKERS": "1"}) as running:
        yield running


def test_writes_to_descriptors_1_and_2_are_the_answers_output_and_never_the_logs(daemon):
    client = open_session(daemon)
    said = client.tool("execute_code", code="import os, subprocess\nos.write(1, b'x')\nprint()\n"
                                            "subprocess.run(['echo', 'hi'])\n_ = os.write(2, b'to fd 2\\n')")
    assert said["structuredContent"] == {"result": None, "stdout": "x\nhi\n", "stderr": "to fd 2\n"}, said
    assert tool_text(said) == "x\nhi\nto fd 2"
    grown_from = daemon.log_path.stat().st_size
    flood = client.tool("execute_code", code="import os\nos.write(1, b'z' * 100_000_000)\n"
                                             "with os.popen('head -c 100000000 /dev/zero | tr \"\\\\0\" e >&2') as child:\n"
                                             "    child.read()\n'done'")
    structured = flood["structuredContent"]
    assert structured["result"] == "'done'"
    assert structured["stdout"].startswith("z" * 1_000_000)
    assert cut_notes(structured["stdout"]) == [(99_000_000, 1_000_000)], structured["stdout"][-300:]
    assert cut_notes(structured["stderr"]) == [(99_000_000, 1_000_000)], structured["stderr"][-300:]
    assert daemon.log_path.stat().st_size - grown_from < 100_000
    assert "zzzz" not in daemon.log_text() and "eeee" not in daemon.log_text()


def test_a_thread_writing_to_descriptors_between_calls_writes_nowhere(daemon, tmp_path):
    client = open_session(daemon)
    go, done = tmp_path / "go", tmp_path / "done"
    tag = "between-calls-%d" % os.getpid()
    client.tool("execute_code", code=(
        "import os, threading, time\n"
        "def later():\n"
        f"    while not os.path.exists({str(go)!r}):\n        time.sleep(0.01)\n"
        f"    os.write(1, b'{tag} 1\\n'); os.write(2, b'{tag} 2\\n')\n"
        f"    open({str(done)!r}, 'w').close()\n"
        "threading.Thread(target=later).start()"))
    go.touch()
    assert wait_until(done.exists)
    assert tool_text(client.tool("execute_code", code="6 * 7")) == "42"   # the worker serves on
    assert tag not in daemon.log_text()


def test_a_crash_in_native_code_is_still_dumped_to_the_log(daemon):
    client = open_session(daemon)
    reply = client.call("tools/call", {"name": "execute_code", "arguments": {
        "code": "import ctypes\ndef crashing_here():\n    ctypes.string_at(0)\ncrashing_here()"}}).json()
    assert reply["error"]["code"] == -32003, reply
    assert wait_until(lambda: "Fatal Python error: Segmentation fault" in daemon.log_text())
    assert "in crashing_here" in daemon.log_text()
