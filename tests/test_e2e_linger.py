"""End-to-end: the lingering close, through the real daemon over loopback.

A reply sent with the client's input unread (a refusal from the head, a 413) is
followed by a shut write side and the client's further input dropped, within bounds,
so a client still writing its body reads the reply instead of a reset. (The 401 case
is in test_e2e_auth, the TLS one in test_e2e_tls.)
"""

import json
import re
import select
import socket

import anyio
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from gsmcpd.router.connection import LINGER_BYTES
from helpers import Client, Daemon, body_of, recv_all, status_of
from test_e2e_auth import WRITTEN_ON, head_fields, write_whole_then_read

FOREIGN = b"Origin: http://evil.example\r\n"   # refused 403 from the head (DNS rebinding gate)
CHUNKED = b"Transfer-Encoding: chunked\r\n"   # a body of no length: never over GS_MCP_MAX_BODY up front


def chunks(total, size=4096):
    """A chunked body of about `total` bytes, in chunks each under GS_MCP_MAX_BODY (one whose
    size line came with the head would be refused 413 before the head's gates)."""
    return (b"%x\r\n" % size + b" " * size + b"\r\n") * (total // size)


def post_head(length, extra=b""):
    framing = CHUNKED if length is None else b"Content-Length: %d\r\n" % length
    return b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" + extra + framing + b"\r\n"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    with Daemon(tmp_path_factory.mktemp("linger"), env={"GS_MCP_MAX_BODY": "1MiB", "GS_MCP_TRACE": "both",
                                                        "GS_MCP_SPARE_WORKERS": "1"}) as d:
        yield d


def test_a_client_writing_a_body_over_the_limit_reads_its_413_not_a_reset(daemon):
    raw = write_whole_then_read(daemon.port, post_head(WRITTEN_ON) + b" " * WRITTEN_ON)
    assert status_of(raw) == 413 and json.loads(body_of(raw))["error"] == {
        "code": -32600, "message": "413 request body too large: over 1048576 bytes, the most GS_MCP_MAX_BODY allows"}
    assert head_fields(raw)["connection"] == "close"


def test_a_client_writing_a_body_far_over_the_lingering_bound_reads_its_413_not_a_reset(daemon):
    # Past LINGER_BYTES of it, the client was cut off mid-write (the MCP SDK's transport
    # died of the reset at 40 MB) and never read why.
    length = 3 * LINGER_BYTES
    raw = write_whole_then_read(daemon.port, post_head(length) + b" " * length)
    assert status_of(raw) == 413 and "GS_MCP_MAX_BODY" in json.loads(body_of(raw))["error"]["message"]


def test_the_mcp_sdk_sending_a_body_over_the_limit_is_told_why_and_its_session_goes_on(daemon):
    async def conversation():
        async with streamable_http_client(daemon.url) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                with pytest.raises(MCPError) as refused:
                    await session.call_tool("execute_code", {"code": "'x'  # " + "y" * (2 << 20)})
                after = await session.call_tool("execute_code", {"code": "'after'"})
                return refused.value, after

    async def bounded():
        with anyio.fail_after(30):
            return await conversation()
    refused, after = anyio.run(bounded)
    assert refused.code == -32600, refused
    assert refused.message == "413 request body too large: over 1048576 bytes, the most GS_MCP_MAX_BODY allows"
    assert after.content[0].text == "'after'"


def test_a_client_refused_from_its_head_reads_the_refusal_not_a_reset(daemon):
    raw = write_whole_then_read(daemon.port, post_head(None, FOREIGN) + chunks(WRITTEN_ON))
    assert status_of(raw) == 403
    assert "Origin 'http://evil.example' is not allowed" in json.loads(body_of(raw))["error"]["message"]


def test_a_client_that_sends_forever_is_cut_off_at_the_bound_and_others_are_served(daemon):
    block = chunks(65536)
    sent, served = 0, None
    with socket.create_connection(("127.0.0.1", daemon.port), timeout=30) as s:
        s.sendall(post_head(None, FOREIGN))   # a body without end follows, refused from its head
        with pytest.raises((ConnectionResetError, BrokenPipeError)):
            while sent < 16 * LINGER_BYTES:     # bounded, should the router never cut it off
                sent += s.send(block)
                if served is None and sent > LINGER_BYTES // 2:   # meanwhile, another client
                    served = Client(daemon.port).request(
                        "POST", {"jsonrpc": "2.0", "id": 1, "method": "ping"}).status
    # It had LINGER_BYTES, then the reset; the rest of what it sent sat in the kernel's
    # buffers (loopback's receive buffer may grow to 32 MiB while the router reads).
    assert LINGER_BYTES <= sent < LINGER_BYTES + (64 << 20)
    assert served == 400   # a ping outside any session, answered while the flood was dropped
    assert Client(daemon.port).request("POST", {"jsonrpc": "2.0", "id": 2, "method": "ping"}).status == 400


def test_a_request_refused_from_its_head_is_traced_inbound(daemon):
    length = 512 * 1024   # over SMALL_BODY: its head is gated before the body is read
    raw = write_whole_then_read(daemon.port, post_head(length, b"MCP-Session-Id: 0123456789abcdef\r\n"
                                                       + FOREIGN) + b" " * length)
    assert status_of(raw) == 403
    log = daemon.log_text()
    inbound = ("--> POST /mcp session 01234567... (body not read: answered from its head; "
               "Content-Length %d)" % length)
    assert inbound in log
    after = log[log.index(inbound):]
    assert re.search(r"\n.*<-- 403 session 01234567\.\.\. \d+ chars: .*evil\.example", after)


def test_a_lingering_connection_is_closed_first_to_make_room_at_the_cap(tmp_path):
    with Daemon(tmp_path, env={"GS_MCP_MAX_CONNECTIONS": "2", "GS_MCP_SPARE_WORKERS": "1"}) as d:
        # Served and closed by the router: by then the start's probe connection is gone too.
        assert status_of(write_whole_then_read(d.port, b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                                       b"Connection: close\r\n\r\n")) == 404
        with socket.create_connection(("127.0.0.1", d.port), timeout=10) as idle, \
                socket.create_connection(("127.0.0.1", d.port), timeout=10) as lingering:
            lingering.sendall(post_head(WRITTEN_ON, FOREIGN) + b" " * 65536)
            assert status_of(recv_all(lingering)) == 403   # its reply and EOF: it lingers, unclosed
            # A third client: the lingering one makes room, not the one idle longer.
            assert Client(d.port).request("POST", {"jsonrpc": "2.0", "id": 1, "method": "ping"}).status == 400
            assert select.select([idle], [], [], 0.5)[0] == []   # still open, unanswered
            assert re.search(r"GS_MCP_MAX_CONNECTIONS: closing a lingering one.*\(first: \(.*?\) lingering",
                             d.log_text())
