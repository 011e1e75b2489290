"""The official MCP TypeScript SDK's Streamable HTTP client (what Claude Code and the MCP
Inspector speak through) against the real daemon on loopback.

tests/conformance/ts_client.mjs drives `Client` + `StreamableHTTPClientTransport` through
one conversation per protocol revision and prints what each step got; this module judges
it. The SDK is the one the pinned conformance suite installs into .cache/conformance
(tests/conformance/install.sh), run on the node it pins: a missing install is a failure
with the fix, as in test_conformance.py, never a skip.
"""

import json
import os
import subprocess

import pytest

from conformance import CACHE, HERE, NODE, installed_version, suite_problem
from helpers import Daemon

SDK_PACKAGE = "@modelcontextprotocol/sdk"
SDK_DIR = CACHE / "node_modules" / SDK_PACKAGE
SCRIPT = HERE / "ts_client.mjs"
PROBE_AFTER = 0.5        # the daemon pings an idle session with a stream after this,
PASS_EVERY = 0.25        # ...at its next maintenance pass,
IDLE_MS = 1750           # ...and the conversation idles this long to be pinged (1 s to spare)


def sdk_problem():
    problem = suite_problem()
    if problem:
        return problem
    if installed_version(SDK_PACKAGE) is None:
        return ("%s not installed in %s (the conformance suite brings it); "
                "run ./install.sh --test" % (SDK_PACKAGE, CACHE))
    return None


@pytest.fixture(scope="module")
def conversation(tmp_path_factory):
    problem = sdk_problem()
    if problem:
        pytest.fail(problem, pytrace=False)
    daemon = Daemon(tmp_path_factory.mktemp("ts-client"),
                    env={"GS_MCP_PROBE_AFTER": str(PROBE_AFTER),
                         "GS_MCP_MAINTENANCE_INTERVAL": str(PASS_EVERY)}).start()
    try:
        proc = subprocess.run([str(NODE), str(SCRIPT), str(SDK_DIR), daemon.url],
                              capture_output=True, text=True, timeout=60,
                              env=dict(os.environ, TS_CLIENT_IDLE_MS=str(IDLE_MS)))
    finally:
        daemon.stop()
    context = "node exit %s\nstderr:\n%s\n--- daemon log tail ---\n%s" % (
        proc.returncode, proc.stderr[-3000:], daemon.log_text()[-3000:])
    assert proc.returncode == 0, context
    out = json.loads(proc.stdout)
    for name, result in out.items():
        assert "unexpected" not in result, "%s: %s\n%s" % (name, result, context)
    return out


def test_connects_lists_every_tool_and_calls_them(conversation):
    r = conversation["main"]
    assert r["protocolVersion"] == "2025-11-25"
    assert r["server"]["name"] == "gsmcpd"
    assert r["capabilities"] == {"tools": {}}
    assert len(r["tools"]) == 31 and {"execute_code", "run_test_class", "commit",
                                      "compile_method", "find_senders"} <= set(r["tools"])
    assert r["answer"] == {"isError": False, "text": "42",
                           "structured": {"result": "42", "stdout": "", "stderr": ""}}
    assert r["remembered"]["text"] == "7"
    assert r["raised"]["isError"] and "ZeroDivisionError" in r["raised"]["text"]
    assert r["raised"]["structured"]["error"]["kind"] == "other"
    for bad in (r["badArguments"], r["emptySelector"]):
        assert bad["isError"] and bad["structured"]["error"]["kind"] == "invalidParams", bad
    assert r["notFound"]["isError"] and r["notFound"]["structured"]["error"]["kind"] == "notFound"
    assert r["listClasses"]["structured"]["classes"] == ["Product", "DiscountedProduct", "Cart"]
    assert r["unknownTool"]["threw"] == "McpError" and r["unknownTool"]["code"] == -32602
    assert r["listResources"]["code"] == -32601
    assert r["ping"] == {}


def test_every_request_after_initialize_carries_session_and_version(conversation):
    r = conversation["main"]
    session = r["sessionIdBefore"]
    before_delete = r["exchanges"][1:r["exchanges"].index(
        next(e for e in r["exchanges"] if e["method"] == "DELETE")) + 1]
    assert r["exchanges"][0]["rpc"] == "initialize" and r["exchanges"][0]["status"] == 200
    for exchange in before_delete:
        assert exchange["sessionId"] == session, exchange
        assert exchange["protocolVersion"] == "2025-11-25", exchange
        assert exchange["status"] in (200, 202), exchange
    get = [e for e in before_delete if e["method"] == "GET"]
    assert len(get) == 1 and get[0]["contentType"] == "text/event-stream", get


def test_progress_reaches_onprogress_then_the_result(conversation):
    r = conversation["main"]
    assert [p["progress"] for p in r["codeProgress"]] == [1, 2, 3, 4, 5]
    assert r["codeProgress"][0] == {"progress": 1, "total": 5, "message": "step 1"}
    assert r["progressResult"]["text"] == "'done'"
    assert [p["progress"] for p in r["testProgress"]] == [1, 2, 3, 4]
    assert all(p["total"] == 4 for p in r["testProgress"])
    assert r["testRun"]["structured"]["passed"] == 4


def test_abort_and_sdk_timeout_cancel_the_call_and_keep_the_session(conversation):
    r = conversation["main"]
    assert r["cancelled"]["code"] == -32001 and "user cancelled" in r["cancelled"]["message"]
    assert r["timedOut"]["code"] == -32001 and "timed out" in r["timedOut"]["message"]
    cancels = [e for e in r["exchanges"] if e["rpc"] == "notifications/cancelled"]
    assert len(cancels) == 2 and all(e["status"] == 202 for e in cancels), cancels
    # Neither cancelled call ran on to its end, and the session answers the next call.
    assert r["afterCancel"] == {"isError": False, "text": "None",
                                "structured": {"result": "None", "stdout": "", "stderr": ""}}


def test_the_sdk_answers_the_liveness_probe_on_its_get_stream(conversation):
    r = conversation["main"]
    answers = [e for e in r["exchanges"] if e["rpc"] == "response"]
    assert answers and all(e["status"] == 202 for e in answers), r["exchanges"]
    assert r["afterIdle"]["text"] == "'still here'"


def test_delete_then_calls_on_the_ended_session_are_refused(conversation):
    r = conversation["main"]
    delete = next(e for e in r["exchanges"] if e["method"] == "DELETE")
    assert delete["status"] == 200
    assert r["sessionIdAfterDelete"] is None
    # The SDK forgets the id on DELETE, so its next POST has none: 400.
    assert r["afterDelete"]["threw"] == "StreamableHTTPError" and r["afterDelete"]["code"] == 400
    # A transport resuming the ended session's id: 404, which the SDK surfaces as is.
    assert r["staleSession"]["code"] == 404, r["staleSession"]
    assert "Session not found" in r["staleSession"]["message"]
    assert [e["status"] for e in r["staleExchanges"]] == [404]
    # All the SDK reported through onerror in the conversation is that refused POST.
    assert r["errors"] and all("missing MCP-Session-Id" in e for e in r["errors"]), r["errors"]


def test_older_revision_is_negotiated_and_sent_as_the_header(conversation):
    r = conversation["older"]
    assert r["protocolVersion"] == "2025-06-18"
    assert r["answer"]["text"] == "5"
    assert r["errors"] == []
    for exchange in r["exchanges"][1:]:
        assert exchange["protocolVersion"] == "2025-06-18", exchange
        assert exchange["status"] in (200, 202), exchange
