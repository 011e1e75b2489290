"""The router's accept path, in process: a real listener and loop, no daemon and no
workers (nothing here opens a session)."""

import json
import socket

import pytest

from gsmcpd.config import Config
from gsmcpd.router.main import Router


@pytest.fixture
def router():
    made = Router(Config(port=0, max_connections=2))
    made.bind()
    clients = []

    def connect():
        client = socket.create_connection(("127.0.0.1", made.port), timeout=5)
        clients.append(client)
        return client
    made.connect = connect
    yield made
    for conn in list(made.connections):
        conn.close()
    for client in clients:
        client.close()
    made.listener.close()
    made.loop.close()


def accept(router, client, until):
    """Connect `client`'s connection through the router's accept, until `until()`."""
    for _ in range(1000):
        router._accept()
        if until():
            return
    raise AssertionError("the connection was never taken")


def answered(client):
    client.setblocking(False)
    try:
        return bool(client.recv(1, socket.MSG_PEEK))
    except BlockingIOError:
        return False
    finally:
        client.setblocking(True)


def read_all(client):
    data = b""
    while chunk := client.recv(65536):
        data += chunk
    return data


def test_connections_beyond_the_cap_get_503_and_close_while_those_open_stay(router):
    for count in (1, 2):
        accept(router, router.connect(), lambda: len(router.connections) == count)
    third = router.connect()
    accept(router, third, lambda: answered(third))
    raw = read_all(third)   # closed by the router: EOF after the answer
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 503 ") and b"Retry-After: 1" in head and b"Connection: close" in head
    assert "GS_MCP_MAX_CONNECTIONS" in json.loads(body)["error"]["message"]
    assert len(router.connections) == 2 and not any(conn.closed for conn in router.connections)


def test_a_connection_closed_makes_room_for_the_next(router):
    for count in (1, 2):
        accept(router, router.connect(), lambda: len(router.connections) == count)
    next(iter(router.connections)).close()
    assert len(router.connections) == 1
    third = router.connect()
    accept(router, third, lambda: len(router.connections) == 2)
    assert not answered(third)
