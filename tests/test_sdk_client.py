"""The official MCP Python SDK's Streamable HTTP client against the real daemon on loopback.

Nothing here is simulated: the SDK does its own initialize handshake, header handling,
SSE/JSON parsing and DELETE on close, exactly as an MCP host would.
"""

import gc
import logging
import warnings

import anyio
import pytest
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from helpers import Daemon, pid_alive, wait_until

LIMIT = 30  # seconds any one SDK conversation may take before it counts as hung
INVALID_PARAMS = -32602


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    d = Daemon(tmp_path_factory.mktemp("sdk")).start()
    yield d
    d.stop()


def run(conversation, *args):
    """Run an async conversation to completion, failing it (not hanging) after LIMIT."""
    async def bounded():
        with anyio.fail_after(LIMIT):
            return await conversation(*args)
    return anyio.run(bounded)


def text_of(result):
    return "".join(getattr(item, "text", "") for item in result.content)


async def execute(session, code, **kwargs):
    result = await session.call_tool("execute_code", {"code": code}, **kwargs)
    assert not result.is_error, text_of(result)
    return text_of(result)


def test_initialize_list_tools_and_call_execute_code(daemon):
    async def conversation():
        async with streamable_http_client(daemon.url) as (read, write):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                tools = await session.list_tools()
                answer = await execute(session, "x = 6\nx * 7")
                remembered = await execute(session, "x + 1")
                failure = await session.call_tool("execute_code", {"code": "1/0"})
                with pytest.raises(MCPError) as unknown:
                    await session.call_tool("no_such_tool", {})
                # Bad arguments are a tool execution error (isError), not a protocol error.
                bad_arguments = await session.call_tool("execute_code", {"source": "1"})
                return init, tools, answer, remembered, failure, unknown.value, bad_arguments

    init, tools, answer, remembered, failure, unknown, bad_arguments = run(conversation)
    assert init.server_info.name == "gsmcpd"
    assert init.protocol_version == "2025-11-25"   # gsmcpd's latest, which this SDK accepts
    assert init.capabilities.tools is not None
    by_name = {tool.name: tool for tool in tools.tools}
    assert "execute_code" in by_name, sorted(by_name)
    schema = by_name["execute_code"].input_schema
    assert schema["required"] == ["code"] and schema["additionalProperties"] is False
    assert answer == "42"
    assert remembered == "7"   # the workspace persists across calls in one session
    assert failure.is_error and "ZeroDivisionError" in text_of(failure)
    assert unknown.code == INVALID_PARAMS and "no_such_tool" in unknown.message
    assert bad_arguments.is_error, bad_arguments
    assert bad_arguments.structured_content["error"]["kind"] == "invalidParams", bad_arguments
    assert "'code'" in text_of(bad_arguments) and "'source'" in text_of(bad_arguments)


def test_progress_notifications_reach_the_sdk_callback(daemon):
    async def conversation():
        async with streamable_http_client(daemon.url) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                seen = []

                async def on_progress(progress, total, message):
                    seen.append((progress, total, message))

                answer = await execute(
                    session, "progress(1, 3, 'one')\nprogress(2, 3)\nprogress(3, 3, 'done')\n'ok'",
                    progress_callback=on_progress)
                # Without a callback the SDK sends no progressToken: progress() is then a no-op.
                quiet = await execute(session, "progress(1, 1, 'unheard')\n'quiet'")
                return answer, seen, quiet

    answer, seen, quiet = run(conversation)
    assert answer == "'ok'"
    assert seen == [(1, 3, "one"), (2, 3, None), (3, 3, "done")]
    assert quiet == "'quiet'"


def test_two_sdk_sessions_concurrently(daemon, tmp_path):
    """Two SDK sessions at once: separate workers and workspaces, neither waits on the
    other (A's call can only finish after B's call ran), and closing each ends its worker."""
    flag = tmp_path / "b-was-here"
    waiting_code = (
        "import pathlib, time\n"
        "deadline = time.monotonic() + 20\n"
        "while not pathlib.Path(%r).exists() and time.monotonic() < deadline:\n"
        "    time.sleep(0.02)\n"
        "pathlib.Path(%r).exists()" % (str(flag), str(flag)))

    async def one_session(name, results, b_may_go):
        async with streamable_http_client(daemon.url) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                pid = int(await execute(session, "import os\nos.getpid()"))
                await execute(session, "owner = %r" % name)
                if name == "A":
                    b_may_go.set()
                    saw_b = await execute(session, waiting_code)
                else:
                    await b_may_go.wait()
                    await execute(session, "import pathlib\npathlib.Path(%r).touch()" % str(flag))
                    saw_b = None
                owner = await execute(session, "owner")
                results[name] = {"pid": pid, "owner": owner, "saw_b": saw_b}

    async def conversation():
        results = {}
        b_may_go = anyio.Event()
        async with anyio.create_task_group() as group:
            group.start_soon(one_session, "A", results, b_may_go)
            group.start_soon(one_session, "B", results, b_may_go)
        return results

    results = run(conversation)
    assert results["A"]["saw_b"] == "True", results   # B ran while A's call was in flight
    assert results["A"]["owner"] == "'A'" and results["B"]["owner"] == "'B'", results
    assert results["A"]["pid"] != results["B"]["pid"], results
    # The SDK sent DELETE on close: each session's worker process goes away.
    for name in ("A", "B"):
        pid = results[name]["pid"]
        assert wait_until(lambda: not pid_alive(pid), timeout=10), \
            "worker %d of session %s still alive after the SDK closed it\n%s" % (
                pid, name, daemon.log_text()[-2000:])


def test_a_cursor_the_server_never_gave_is_invalid_params_to_the_sdk(daemon):
    async def conversation():
        async with streamable_http_client(daemon.url) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                with pytest.raises(MCPError) as bogus:
                    await session.list_tools(params=types.PaginatedRequestParams(cursor="bogus"))
                return bogus.value, await session.list_tools()

    bogus, listed = run(conversation)
    assert bogus.code == INVALID_PARAMS and "cursor" in bogus.message
    assert listed.tools and listed.next_cursor is None


def test_a_progress_call_answer_over_the_sdks_sse_event_limit_needs_the_limit_raised(daemon):
    """README, 'Every answer can be sent': an answer on an SSE reply is one event, which the
    SDK refuses over its max_sse_event_size (1 MiB by default); raised, the answer comes whole."""
    printed = "progress(1, 2)\nprint('x' * 600_000)"

    async def heard(progress, total, message):
        pass

    async def call(limit):
        async with streamable_http_client(daemon.url, **limit) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                try:
                    return await execute(session, printed, progress_callback=heard)
                except MCPError as refused:
                    return refused

    refused = run(call, {})
    assert isinstance(refused, MCPError) and "exceeded the 1048576 byte limit" in refused.message, refused
    assert run(call, {"max_sse_event_size": None}) == "x" * 600_000


def test_after_a_server_restart_the_sdk_is_told_its_session_is_gone_and_a_new_one_works(tmp_path):
    """A connected SDK client whose server restarted (every session gone): its next call
    gets the spec's 404, whose message says to initialize anew; a new session works."""
    server = Daemon(tmp_path).start()

    async def conversation():
        async with streamable_http_client(server.url, terminate_on_close=False) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                await execute(session, "'before'")
                server.stop()
                server.start()
                with pytest.raises(MCPError) as gone:
                    await execute(session, "'after'")
        async with streamable_http_client(server.url) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return gone.value, await execute(session, "'anew'")

    try:
        gone, anew = run(conversation)
    finally:
        server.stop()
    assert gone.code == -32600, gone
    assert gone.message == ("Session not found: it has ended (DELETE, reaped, its worker gone, or the server "
                            "restarted) or never existed; initialize a new session, without MCP-Session-Id")
    assert anew == "'anew'"


# Arguments that let each tool run without changing the image (no such class, a source
# that does not compile); progress() makes execute_code's reply an SSE stream.
HARMLESS = {"className": "NoSuchClassZz", "selector": "zz_none", "source": "class (",
            "dictionaryName": "no_such_dictionary_zz", "name": "zz_none", "pattern": "zz_none",
            "comment": "c", "code": "progress(1, 2, 'half')\n'done'", "classNames": ["CartTest"]}


def test_every_tool_through_the_sdk_with_and_without_progress_raises_and_warns_nothing(daemon, caplog):
    """Each tool of the default surface, called by the SDK with valid and with invalid
    arguments, once plainly (JSON replies) and once with a progress callback (a tool that
    reports progress answers on an SSE stream): the SDK must parse every answer without
    an exception, a warning or a logged complaint."""
    async def conversation():
        answers = []
        async with streamable_http_client(daemon.url) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                tools = (await session.list_tools()).tools
                heard = []

                async def on_progress(progress, total, message):
                    heard.append(message)

                for callback in (None, on_progress):
                    for tool in tools:
                        schema = tool.input_schema
                        valid = {key: HARMLESS[key] for key in schema["required"]}
                        good = await session.call_tool(tool.name, valid, progress_callback=callback)
                        bad = await session.call_tool(tool.name, {**valid, "noSuchArgument": 1},
                                                      progress_callback=callback)
                        answers.append((tool.name, callback is not None, good, bad))
                return answers, heard

    gc.collect()   # what earlier tests left unclosed warns when collected, not here
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        with caplog.at_level(logging.WARNING):
            answers, heard = run(conversation)
    # An AF_UNIX socket (family=1) is never the SDK's, which speaks TCP: one of those
    # collected meanwhile is an earlier test's garbage.
    assert [str(w.message) for w in warned if "family=1," not in str(w.message)] == []
    assert [r.getMessage() for r in caplog.records if r.name.startswith(("mcp", "httpx"))] == []
    assert len(answers) == 2 * 31
    assert "half" in heard and any("CartTest" in str(m) for m in heard), heard   # SSE replies came
    for name, with_progress, good, bad in answers:
        assert all(block.type == "text" for block in good.content + bad.content), name
        kind = good.structured_content["error"]["kind"] if good.is_error else None
        assert kind in (None, "notFound", "compileError", "refused"), (name, text_of(good))
        assert bad.is_error and bad.structured_content["error"]["kind"] == "invalidParams", name
        assert "'noSuchArgument'" in text_of(bad), name
