"""End-to-end: whatever the user's code does in a tool, the session's worker answers and
keeps the session's work (its workspace and uncommitted changes), through the real daemon.
"""

import pytest

from helpers import Client, Daemon, tool_text
from test_e2e_lifetime import worker_pid


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    with Daemon(tmp_path_factory.mktemp("user-code"), env={"GS_MCP_SPARE_WORKERS": "2"}) as running:
        yield running


@pytest.fixture
def c(daemon):
    client = Client(daemon.port)
    client.initialize()
    yield client
    client.close()


def call_tool(client, tool, **arguments):
    """tools/call's result (Client.tool cannot pass an argument called `name`)."""
    response = client.call("tools/call", {"name": tool, "arguments": arguments})
    assert response.status == 200, response
    reply = response.json()
    assert "result" in reply, reply
    return reply["result"]


def failed(result, kind):
    assert result.get("isError") is True, result
    assert result["structuredContent"]["error"]["kind"] == kind, result
    return tool_text(result)


@pytest.fixture
def keeps_its_work(c):
    """The session's workspace variable and worker, checked after the test's calls."""
    call_tool(c, "execute_code", code="kept = 'still here'")
    pid = worker_pid(c)
    yield c
    assert tool_text(call_tool(c, "execute_code", code="kept")) == "'still here'"
    assert worker_pid(c) == pid


@pytest.mark.parametrize("code, shown", [
    ("raise GeneratorExit", "GeneratorExit"),
    ("raise KeyboardInterrupt", "KeyboardInterrupt"),   # no break was sent: the code's own
    ("raise SystemExit(3)", "SystemExit: 3"),
    ("import sys\nsys.exit('bye')", "SystemExit: bye"),
    ("class Custom(BaseException):\n    pass\nraise Custom('mine')", "Custom: mine"),
])
def test_execute_code_raising_a_base_exception_is_an_error_result(keeps_its_work, code, shown):
    assert failed(call_tool(keeps_its_work, "execute_code", code=code), "other").endswith(shown)


def test_compile_method_whose_decorator_exits_is_a_compile_error(keeps_its_work):
    text = failed(call_tool(keeps_its_work, "compile_method", className="Cart",
                            source="@exit\ndef g(self): pass"), "compileError")
    assert "SystemExit" in text


def test_a_class_body_raising_system_exit_is_a_compile_error(keeps_its_work):
    text = failed(call_tool(keeps_its_work, "compile_class_definition", dictionaryName="shop.models",
                            source="class Boom:\n    raise SystemExit(1)"), "compileError")
    assert "SystemExit: 1" in text
