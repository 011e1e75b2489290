"""End-to-end: GS_MCP_WORKER_MEMORY bounds each worker's data, so code allocating without
bound gets a MemoryError in its own call while the router and other sessions serve on."""

import os
import resource
import signal
import sys

import pytest

from helpers import Daemon, tool_text, wait_until
from helpers import open_session as session
from test_e2e_lifetime import worker_pid
from test_e2e_spawner import spawner_after, spawner_of

LIMIT = 128 << 20          # small, so the allocations below fail at once, touching no page
DATA_LIMIT = "import resource; resource.getrlimit(resource.RLIMIT_DATA)"
NOTE = ("(this worker may hold 128 MiB of data, its RLIMIT_DATA: GS_MCP_WORKER_MEMORY sets it; "
        "what the workspace holds counts, `del` what it no longer needs)")


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    env = {"GS_MCP_WORKER_MEMORY": "128MiB", "GS_MCP_TOOLSETS": "execution", "GS_MCP_SPARE_WORKERS": "1"}
    with Daemon(tmp_path_factory.mktemp("worker-memory"), env=env) as running:
        yield running


def memory_error(result):
    assert result.get("isError") is True, result
    assert result["structuredContent"]["error"]["kind"] == "other", result
    text = tool_text(result)
    assert text.endswith("\nMemoryError\n" + NOTE), text   # no parser raised it: no note that it may have
    return text


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="3.12's parser names its overflow: no note")
def test_code_too_deep_for_evals_parser_is_said_to_be_maybe_that_under_a_limit_too(daemon):
    result = session(daemon).tool("execute_code", code="eval('-' * 100_000 + '1')")
    assert tool_text(result).endswith(
        "\nMemoryError\n" + NOTE + "\n(a MemoryError with no message is also how Python 3.11's parser says "
        "code given to eval, exec, compile or ast.parse is nested too deeply to parse)"), tool_text(result)


def test_one_allocation_past_the_limit_is_the_calls_memory_error(daemon):
    runaway, other = session(daemon), session(daemon)
    runaway.tool("execute_code", code="kept = 'still here'")
    pid = worker_pid(runaway)
    memory_error(runaway.tool("execute_code", code="x = bytearray(200 << 20)"))
    assert tool_text(runaway.tool("execute_code", code="kept")) == "'still here'"
    assert worker_pid(runaway) == pid
    assert tool_text(other.tool("execute_code", code="6 * 7")) == "42"


def test_a_workspace_that_holds_the_limit_is_answered_and_freed_by_del(daemon):
    c = session(daemon)
    memory_error(c.tool("execute_code", code="held = []\nwhile True:\n    held.append(bytearray(1 << 20))"))
    held = int(tool_text(c.tool("execute_code", code="len(held)")))
    assert 0 < held < 128
    assert tool_text(c.tool("execute_code", code="del held\nlen(bytearray(64 << 20))")) == str(64 << 20)


def test_the_limit_is_the_workers_hard_limit_and_what_its_code_starts_inherits_it(daemon):
    child = "import resource; print(resource.getrlimit(resource.RLIMIT_DATA))"
    code = ("import resource, subprocess, sys\n"
            "(resource.getrlimit(resource.RLIMIT_DATA),\n"
            " eval(subprocess.run([sys.executable, '-c', %r], capture_output=True, text=True).stdout))" % child)
    assert eval(tool_text(session(daemon).tool("execute_code", code=code))) == ((LIMIT, LIMIT), (LIMIT, LIMIT))
    with open("/proc/%d/limits" % daemon.proc.pid) as limits:   # the router's own is untouched
        assert [line for line in limits if line.startswith("Max data size")][0].split()[3] == "unlimited"


def test_a_replaced_spawners_workers_have_the_same_limit(daemon):
    first = spawner_of(daemon)
    os.kill(first, signal.SIGKILL)
    spawner_after(daemon, first)
    # The dead spawner's spare is ended, never handed out: every new session's worker is the new one's.
    assert wait_until(lambda: eval(tool_text(session(daemon).tool("execute_code", code=DATA_LIMIT)))
                      == (LIMIT, LIMIT))


def test_without_the_knob_workers_have_the_daemons_limit(tmp_path):
    with Daemon(tmp_path, env={"GS_MCP_TOOLSETS": "execution", "GS_MCP_SPARE_WORKERS": "1"}) as plain:
        assert eval(tool_text(session(plain).tool("execute_code", code=DATA_LIMIT))) == \
            resource.getrlimit(resource.RLIMIT_DATA)


def test_a_workspace_filled_to_the_last_page_leaves_the_session_its_next_call(daemon):
    # The worker's receive buffer for the next call was a MemoryError: the worker died,
    # and the session with it (-32003). Its code now meets the limit 8 MiB early.
    c = session(daemon)
    pid = worker_pid(c)
    fill = ("held = []\nfor size in (1 << 20, 1 << 12):\n    try:\n        while True:\n"
            "            held.append(bytearray(size))\n    except MemoryError:\n        pass\n'full'")
    assert tool_text(c.tool("execute_code", code=fill)) == "'full'"
    assert tool_text(c.tool("execute_code", code="del held\n'room again'")) == "'room again'"
    assert worker_pid(c) == pid
