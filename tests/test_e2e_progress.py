"""End-to-end: progress notifications from a running tool reach the client, in
order and before the result — on the POST's own SSE reply when the client accepts
one, else on the session's GET stream — and the official MCP SDK sees them."""

import json
import socket

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from helpers import Client, Daemon, recv_all, wait_until
from test_e2e_lifetime import Exchange, open_stream

STEPS_CODE = "for step in range(1, 4):\n    progress(step, 3, 'step %d' % step)\n'done'"
CART_TEST = "shop.test_models.CartTest"
CART_TESTS = sorted(CART_TEST + "." + name for name in (
    "test_bad_quantity_is_refused", "test_discount_applies", "test_empty_cart_totals_zero",
    "test_total_counts_quantities"))


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    d = Daemon(tmp_path_factory.mktemp("progress"), env={"GS_MCP_SPARE_WORKERS": "2",
                                                          "GS_MCP_KEEPALIVE_INTERVAL": "0.3"})
    d.start()
    yield d
    d.stop()


@pytest.fixture
def client(daemon):
    c = Client(daemon.port, timeout=15)
    c.initialize()
    yield c
    c.close()


def tool_call(request_id, name, arguments, token=None):
    params = {"name": name, "arguments": arguments}
    if token is not None:
        params["_meta"] = {"progressToken": token}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def progress_of(notification):
    assert notification["method"] == "notifications/progress", notification
    params = notification["params"]
    return params["progressToken"], params["progress"], params.get("total"), params.get("message")


def test_progress_streams_on_the_posts_own_sse_reply(daemon, client):
    call = Exchange(daemon.port, "POST", client.session, tool_call("a", "execute_code", {"code": STEPS_CODE}, "tok-a"),
                    accept="application/json, text/event-stream")
    assert call.wait_head() == 200
    assert call.headers["content-type"] == "text/event-stream"
    steps = [progress_of(call.message()) for _ in range(3)]
    assert steps == [("tok-a", n, 3, "step %d" % n) for n in (1, 2, 3)]
    final = call.message()
    assert final["id"] == "a" and final["result"]["structuredContent"]["result"] == "'done'"
    assert call.next() == ("end",)


def test_an_http_1_0_client_gets_its_sse_reply_unchunked_ended_by_the_close(daemon, client):
    # RFC 9112 6.1: no Transfer-Encoding for an HTTP/1.0 request (a proxy's default to
    # its upstream, nginx's for one); the stream is the body, ended by the close.
    body = json.dumps(tool_call("old", "execute_code", {"code": STEPS_CODE}, "tok-old")).encode()
    with socket.create_connection(("127.0.0.1", daemon.port), timeout=15) as s:
        s.sendall(b"POST /mcp HTTP/1.0\r\nAccept: application/json, text/event-stream\r\n"
                  b"Content-Type: application/json\r\nMCP-Session-Id: %s\r\nContent-Length: %d\r\n\r\n%s"
                  % (client.session.encode(), len(body), body))
        raw = recv_all(s)
    head, _, stream = raw.partition(b"\r\n\r\n")
    assert b"200 OK" in head and b"transfer-encoding" not in head.lower()
    events = [json.loads(block.split(b"data: ", 1)[1]) for block in stream.split(b"\n\n") if block]
    assert [progress_of(e)[1] for e in events[:3]] == [1, 2, 3]
    assert events[3]["id"] == "old" and events[3]["result"]["structuredContent"]["result"] == "'done'"
    assert len(events) == 4


def test_a_thread_left_by_an_earlier_call_reports_nothing_into_a_later_one(daemon, client):
    leave = ("import threading\ngo, said = threading.Event(), []\n"
             "def left():\n    go.wait()\n    said.append(progress(1, message='left'))\n"
             "leftover = threading.Thread(target=left)\nleftover.start()\n'left'")
    assert client.tool("execute_code", code=leave)["structuredContent"]["result"] == "'left'"
    report = ("go.set()\nleftover.join()\nmine = progress(2, message='call')\n"
              "started = threading.Thread(target=lambda: said.append(progress(3, message='started')))\n"
              "started.start()\nstarted.join()\n(said, mine)")
    call = Exchange(daemon.port, "POST", client.session, tool_call("late", "execute_code", {"code": report}, "tok-late"),
                    accept="application/json, text/event-stream")
    assert call.wait_head() == 200
    steps = [progress_of(call.message()) for _ in range(2)]
    assert steps == [("tok-late", 2, None, "call"), ("tok-late", 3, None, "started")]
    final = call.message()
    assert final["id"] == "late" and final["result"]["structuredContent"]["result"] == "([False, True], True)"
    assert call.next() == ("end",)


def test_run_test_class_reports_a_step_per_test(daemon, client):
    call = Exchange(daemon.port, "POST", client.session,
                    tool_call(5, "run_test_class", {"className": CART_TEST}, 99),
                    accept="application/json, text/event-stream")
    steps = [progress_of(call.message()) for _ in range(4)]
    assert [(token, done, total) for token, done, total, _ in steps] == [(99, n, 4) for n in (1, 2, 3, 4)]
    assert [message for *_, message in steps] == CART_TESTS
    final = call.message()
    assert final["id"] == 5 and final["result"]["structuredContent"]["passed"] == 4


def test_without_a_progress_token_the_reply_is_plain_json(daemon, client):
    call = Exchange(daemon.port, "POST", client.session, tool_call("b", "execute_code", {"code": STEPS_CODE}),
                    accept="application/json, text/event-stream")
    assert call.wait_head() == 200
    assert call.headers["content-type"] == "application/json"
    assert call.json()["result"]["structuredContent"]["result"] == "'done'"


def test_a_json_only_client_gets_progress_on_its_get_stream(daemon, client):
    stream = open_stream(daemon.port, client.session)
    call = Exchange(daemon.port, "POST", client.session, tool_call("c", "execute_code", {"code": STEPS_CODE}, 17),
                    accept="application/json")
    assert call.wait_head() == 200
    assert call.headers["content-type"] == "application/json"
    assert call.json()["result"]["structuredContent"]["result"] == "'done'"
    # written to the stream before the reply was written to the POST
    steps = [progress_of(stream.message(timeout=5)) for _ in range(3)]
    assert steps == [(17, n, 3, "step %d" % n) for n in (1, 2, 3)]
    stream.close()


def test_progress_with_no_stream_to_carry_it_is_not_kept_for_a_later_one(daemon, client):
    call = Exchange(daemon.port, "POST", client.session, tool_call("d", "execute_code", {"code": STEPS_CODE}, 18),
                    accept="application/json")
    assert call.json()["result"]["structuredContent"]["result"] == "'done'"
    stream = open_stream(daemon.port, client.session)
    # anything queued would be flushed on attach, ahead of the first keepalive
    assert wait_until(lambda: stream.comments >= 1)
    assert stream.items.empty(), stream.items.get()
    stream.close()


def test_the_mcp_sdk_client_gets_progress_in_its_callback(daemon):
    seen = []

    async def on_progress(progress, total, message):
        seen.append((progress, total, message))

    async def run():
        async with streamable_http_client(daemon.url) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                tests = await session.call_tool("run_test_class", {"className": CART_TEST},
                                                progress_callback=on_progress)
                steps = await session.call_tool("execute_code", {"code": STEPS_CODE},
                                                progress_callback=on_progress)
                return tests, steps

    tests, steps = anyio.run(run)
    assert not tests.is_error and tests.structured_content["passed"] == 4
    assert not steps.is_error
    assert seen == [(float(n), 4.0, name) for n, name in enumerate(CART_TESTS, 1)] + \
        [(float(n), 3.0, "step %d" % n) for n in (1, 2, 3)]
