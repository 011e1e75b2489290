"""A lean MCP-over-HTTP client for load generation: raw sockets, pre-rendered heads.

http.client costs more CPU per request than the fastest server under test spends,
and client and server share two cores here, so the load generator renders request
bytes itself and parses only what it needs (status, a few headers, the body).
"""

import json
import socket
from urllib.parse import urlsplit

PROTOCOL = "2025-11-25"
INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'


class HttpResponse:
    __slots__ = ("status", "headers", "body")

    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    def header(self, name):
        return self.headers.get(name.lower())

    def message(self):
        """The JSON-RPC message in the body: plain JSON, or the data of the first SSE event."""
        body = self.body
        if body[:1] in (b"{", b"["):
            return json.loads(body)
        for line in body.split(b"\n"):
            if line.startswith(b"data:"):
                return json.loads(line[5:].strip())
        raise ValueError("no JSON-RPC message in %r" % body[:200])

    def is_result(self):
        # Cheap success check for the hot loop: a JSON-RPC result, no error.
        return self.status == 200 and b'"result"' in self.body and b'"error"' not in self.body

    def __repr__(self):
        return "<HttpResponse %d %r>" % (self.status, self.body[:200])


def parse_response(buf):
    """One complete response from the front of buf: (HttpResponse, consumed) or None."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        return None
    head = bytes(buf[:end]).decode("latin-1").split("\r\n")
    status = int(head[0].split(" ", 2)[1])
    headers = {}
    for line in head[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    start = end + 4
    length = headers.get("content-length")
    if length is not None:
        stop = start + int(length)
        if len(buf) < stop:
            return None
        return HttpResponse(status, headers, bytes(buf[start:stop])), stop
    if "chunked" in headers.get("transfer-encoding", "").lower():
        body = bytearray()
        pos = start
        while True:
            line_end = buf.find(b"\r\n", pos)
            if line_end < 0:
                return None
            size = int(bytes(buf[pos:line_end]).split(b";")[0], 16)
            data_start = line_end + 2
            if len(buf) < data_start + size + 2:
                return None
            if size == 0:
                return HttpResponse(status, headers, bytes(body)), data_start + 2
            body += buf[data_start:data_start + size]
            pos = data_start + size + 2
    return HttpResponse(status, headers, b""), start


class Endpoint:
    """Where a server listens: renders request bytes for it."""

    def __init__(self, url):
        parts = urlsplit(url)
        self.url = url
        self.host = parts.hostname
        self.port = parts.port
        self.path = parts.path or "/"
        self._host_header = "%s:%d" % (self.host, self.port)

    def render(self, method, body=b"", session=None, accept="application/json, text/event-stream"):
        lines = ["%s %s HTTP/1.1" % (method, self.path), "Host: " + self._host_header,
                 "Accept: " + accept]
        if body:
            lines.append("Content-Type: application/json")
        if session:
            lines.append("Mcp-Session-Id: " + session)
            lines.append("Mcp-Protocol-Version: " + PROTOCOL)
        lines.append("Content-Length: %d" % len(body))
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def initialize_body(request_id=0):
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "initialize",
                       "params": {"protocolVersion": PROTOCOL, "capabilities": {},
                                  "clientInfo": {"name": "gsmcpd-bench", "version": "0"}}},
                      separators=(",", ":")).encode()


def call_body(request_id, method, params=None):
    message = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message, separators=(",", ":")).encode()


class BlockingConnection:
    """One keep-alive connection, blocking, for setup and sequential measurements."""

    def __init__(self, endpoint, timeout=60.0):
        self.endpoint = endpoint
        self.sock = socket.create_connection((endpoint.host, endpoint.port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()

    def exchange(self, data):
        self.sock.sendall(data)
        while True:
            parsed = parse_response(self.buf)
            if parsed is not None:
                response, used = parsed
                del self.buf[:used]
                return response
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("server closed the connection")
            self.buf += chunk

    def open_session(self):
        """initialize + notifications/initialized; returns the session id."""
        ep = self.endpoint
        reply = self.exchange(ep.render("POST", initialize_body()))
        if reply.status != 200:
            raise RuntimeError("initialize answered %r" % reply)
        sid = reply.header("mcp-session-id")
        if not sid:
            raise RuntimeError("initialize gave no session id: %r" % reply)
        note = self.exchange(ep.render("POST", INITIALIZED, session=sid))
        if note.status not in (200, 202):
            raise RuntimeError("notifications/initialized answered %r" % note)
        return sid

    def call(self, sid, request_id, method, params=None):
        return self.exchange(self.endpoint.render("POST", call_body(request_id, method, params), session=sid))

    def delete(self, sid):
        return self.exchange(self.endpoint.render("DELETE", session=sid))

    def close(self):
        self.sock.close()
