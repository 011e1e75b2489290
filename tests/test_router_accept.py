"""The router's accept path, in process: a real listener and loop, no daemon and no
workers (nothing here opens a session)."""

import dataclasses
import fcntl
import json
import os
import select
import socket

import pytest

from gsmcpd.config import Config
from gsmcpd.router import main
from gsmcpd.router.main import Router
from helpers import commit_left_half_applied


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
    made.close()


def test_a_host_named_localhost_in_capitals_is_loopback_and_its_host_gate_on():
    # As the configuration's check takes it (hosts.is_loopback): it needs no auth there.
    made = Router(Config(port=0, host="LOCALHOST"))
    try:
        assert made.bound_to_loopback and made.app.check_host
    finally:
        made.close()


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


def connection_of(router, client):
    return next(conn for conn in router.connections if conn.peer == client.getsockname())


def hold(router, monkeypatch, stream=False):
    """The app takes each request and keeps it unanswered (busy), or starts a stream on it."""
    def handle(conn, request):
        if stream:
            conn.start_stream(200, [("Content-Type", "text/event-stream")])
    monkeypatch.setattr(router.app, "handle", handle)


def send(router, client, data, until):
    """Send `data` on `client` and let its connection read it, until `until(conn)`."""
    client.sendall(data)
    conn = connection_of(router, client)
    for _ in range(10000):
        conn._on_readable()
        if until(conn):
            return conn
    raise AssertionError("the connection never read it")


REQUEST = b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


def working(router, monkeypatch, client, how):
    """Make `client`'s connection busy with a request, streaming, mid-request (its head
    unfinished), or reading a body its head's gates let in."""
    if how == "reading":
        return send(router, client, b"POST /mcp HTTP/1.1\r\nHost: 1", lambda conn: conn.parser.in_progress)
    if how == "gated body":
        monkeypatch.setattr(router.app, "handle_head", lambda conn, head: conn.read_body())
        return send(router, client, b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n",
                    lambda conn: conn._body_admitted)
    hold(router, monkeypatch, stream=how == "streaming")
    return send(router, client, REQUEST, lambda conn: conn.busy)


def arrived(router, client):
    """Wait until what `client` sent is in its connection's socket (loopback delivery
    may be deferred to a softirq on a loaded machine)."""
    assert select.select([connection_of(router, client).sock], [], [], 5)[0]


def closed_by_router(client):
    client.settimeout(5)
    try:
        return read_all(client) == b""   # EOF, unanswered
    except ConnectionResetError:
        return True


@pytest.mark.parametrize("how", ["busy", "streaming", "reading", "gated body"])
def test_at_the_cap_an_idle_connection_is_closed_to_admit_a_new_one_and_a_working_one_kept(
        router, monkeypatch, how):
    idle = router.connect()
    accept(router, idle, lambda: len(router.connections) == 1)
    other = router.connect()
    accept(router, other, lambda: len(router.connections) == 2)
    kept = working(router, monkeypatch, other, how)
    third = router.connect()
    accept(router, third, lambda: any(conn.peer == third.getsockname() for conn in router.connections))
    assert len(router.connections) == 2 and kept in router.connections and not kept.closed
    assert closed_by_router(idle) and not answered(third)
    # The new one, idle in its turn, makes room for the next: the working one never does.
    fourth = router.connect()
    accept(router, fourth, lambda: any(conn.peer == fourth.getsockname() for conn in router.connections))
    assert len(router.connections) == 2 and kept in router.connections and not kept.closed
    assert closed_by_router(third) and not answered(fourth)


@pytest.mark.parametrize("other", ["gated body", "streaming"])
def test_connections_beyond_the_cap_get_503_and_close_while_those_open_stay(router, monkeypatch, other):
    # None of those open is idle or mid-request unauthenticated (one answering a request,
    # one reading a body its gates let in or streaming): none is closed.
    opened = []
    for count in (1, 2):
        opened.append(router.connect())
        accept(router, opened[-1], lambda: len(router.connections) == count)
    working(router, monkeypatch, opened[0], other)
    working(router, monkeypatch, opened[1], "busy")
    third = router.connect()
    accept(router, third, lambda: answered(third))
    raw = read_all(third)   # closed by the router: EOF after the answer
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 503 ") and b"Retry-After: 1" in head and b"Connection: close" in head
    assert "GS_MCP_MAX_CONNECTIONS" in json.loads(body)["error"]["message"]
    assert len(router.connections) == 2 and not any(conn.closed for conn in router.connections)


def trickle(router, client, data):
    """`client` begins a request with `data`, and its connection reads it."""
    return send(router, client, data, lambda conn: conn.ungated_since() is not None and not conn.has_unread_input())


@pytest.mark.parametrize("begun", [b"P", b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 90\r\n\r\n{"])
def test_at_the_cap_with_none_idle_the_request_unfinished_longest_is_cut_short_for_a_new_one(
        router, monkeypatch, begun):
    # Connections each sent a byte of a request (no gate ran, no credential) and held,
    # locked every new client out with 503s, a reconnect renewing each one's read timeout.
    opened = []
    for count in (1, 2):
        opened.append(router.connect())
        accept(router, opened[-1], lambda: len(router.connections) == count)
    oldest = trickle(router, opened[0], begun)
    router.loop.now += 1
    newer = trickle(router, opened[1], b"POST /mcp HTTP/1.1\r\nHo")
    third = router.connect()
    accept(router, third, lambda: oldest.closed)
    assert not newer.closed and len(router.connections) == 2 and not answered(third)
    raw = read_all(opened[0])   # told why, then EOF: no reset
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 503 ") and b"Retry-After: 1" in head and b"Connection: close" in head
    message = json.loads(body)["error"]["message"]
    assert "unfinished after 1s" in message and "GS_MCP_MAX_CONNECTIONS" in message
    # The new one, mid-request in its turn, is newer than the one left: that one goes next.
    router.loop.now += 1
    trickle(router, third, b"G")
    fourth = router.connect()
    accept(router, fourth, lambda: newer.closed)
    assert read_all(opened[1]).startswith(b"HTTP/1.1 503 ") and not answered(third) and not answered(fourth)


def test_at_the_cap_an_idle_connection_is_closed_before_one_mid_request(router):
    # An idle client's connection costs it a reconnect; a request cut short costs a resend.
    opened = []
    for count in (1, 2):
        opened.append(router.connect())
        accept(router, opened[-1], lambda: len(router.connections) == count)
    mid_request = trickle(router, opened[0], b"P")
    router.loop.now += 1   # it began before the other fell idle: still the idle one goes
    third = router.connect()
    accept(router, third, lambda: any(conn.peer == third.getsockname() for conn in router.connections))
    assert closed_by_router(opened[1]) and not mid_request.closed


def test_beyond_the_cap_a_client_that_sent_its_request_before_being_accepted_reads_the_503(
        router, monkeypatch):
    # Its request waits unread when the router refuses it: a plain close would be a reset,
    # which discards the 503 the client has not read yet.
    opened = []
    for count in (1, 2):
        opened.append(router.connect())
        accept(router, opened[-1], lambda: len(router.connections) == count)
        working(router, monkeypatch, opened[-1], "busy")
    third = router.connect()
    third.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 30000\r\n\r\n" + b" " * 30000)
    accept(router, third, lambda: answered(third))
    assert read_all(third).startswith(b"HTTP/1.1 503 ")   # then EOF, no ECONNRESET
    assert len(router.connections) == 2


def test_a_request_sent_with_the_connect_is_read_at_accept_so_its_connection_is_not_taken_for_idle(
        router, monkeypatch):
    # Unread, it passed for idle, and the next client to arrive had it closed for room.
    first = router.connect()
    accept(router, first, lambda: len(router.connections) == 1)
    working(router, monkeypatch, first, "busy")
    second = router.connect()
    second.sendall(REQUEST)
    accept(router, second, lambda: len(router.connections) == 2)
    assert all(conn.busy for conn in router.connections)
    third = router.connect()
    accept(router, third, lambda: answered(third))
    assert read_all(third).startswith(b"HTTP/1.1 503 ")
    assert len(router.connections) == 2 and not answered(second)


def test_an_idle_connection_whose_next_request_came_unpolled_is_kept_for_the_loop_and_another_closed(router):
    # The loop had not polled it since the request came: closed as idle, its client read a reset.
    first = router.connect()
    accept(router, first, lambda: len(router.connections) == 1)
    router.loop.now += 1   # `second` is idle for less time: `first` would be the one to go
    second = router.connect()
    accept(router, second, lambda: len(router.connections) == 2)
    first.sendall(REQUEST)
    arrived(router, first)
    third = router.connect()
    accept(router, third, lambda: any(conn.peer == third.getsockname() for conn in router.connections))
    assert closed_by_router(second) and not answered(third) and len(router.connections) == 2
    assert not answered(first)   # left unread for the loop: nothing ran inside the eviction
    connection_of(router, first)._on_readable()   # the loop's read
    assert first.recv(65536).startswith(b"HTTP/1.1 ")   # answered, not reset


def test_a_lingering_connection_is_closed_before_an_idle_one_to_admit_a_new_one(router, monkeypatch):
    idle = router.connect()
    accept(router, idle, lambda: len(router.connections) == 1)
    refused = router.connect()
    accept(router, refused, lambda: len(router.connections) == 2)
    monkeypatch.setattr(router.app, "handle_head", lambda conn, head: conn.respond(401, [], b"no"))
    lingering = send(router, refused, b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n\r\n",
                     lambda conn: conn.lingering_since is not None)
    third = router.connect()
    accept(router, third, lambda: lingering.closed)
    assert not answered(idle) and not any(conn.closed for conn in router.connections)
    assert read_all(refused).startswith(b"HTTP/1.1 401 ")


def test_shutdown_does_not_wait_for_a_lingering_connection(router, monkeypatch):
    client = router.connect()
    accept(router, client, lambda: len(router.connections) == 1)
    monkeypatch.setattr(router.app, "handle_head", lambda conn, head: conn.respond(401, [], b"no"))
    lingering = send(router, client, b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100000\r\n\r\n",
                     lambda conn: conn.lingering_since is not None)
    router.shutdown()   # no worker to wait for: every connection is closed at once
    assert lingering.closed and not router.connections and router.loop._stopping


def test_recovery_at_stop_finishes_a_commit_left_half_applied_sweeps_temps_and_never_waits(router, tmp_path, monkeypatch):
    # A call in flight is ended at stop by killing its worker, maybe mid-commit; its files
    # were left half-renamed (and temps lying about) until the next start. The stop itself
    # (with such a call) is tested end to end in test_e2e_image_commit_faults.py.
    image = tmp_path / "image"
    (image / "pkg").mkdir(parents=True)
    for rel, text in {"a.py": "A = 1\n", "b.py": "B = 1\n", "pkg/__init__.py": ""}.items():
        (image / rel).write_text(text)
    store = commit_left_half_applied(image, monkeypatch)
    (image / "pkg" / ".m.py.tmp-4242").write_text("M = 1\n")   # one killed before its commit point
    # At stop the lock is not waited for: another process holding it leaves the work to them.
    held = os.open(store.lock_file, os.O_RDONLY)
    try:
        fcntl.flock(held, fcntl.LOCK_EX)
        router.recover_image(image, wait=False)    # returns at once, not blocked
    finally:
        os.close(held)
    assert (image / ".gsmcpd" / "commit.intent").exists() and (image / "b.py").read_text() == "B = 1\n"
    router.recover_image(image, wait=False)
    assert (image / "a.py").read_text() == "A = 2\n" and (image / "b.py").read_text() == "B = 2\n"
    assert not (image / ".gsmcpd" / "commit.intent").exists()
    assert sorted(p.name for p in image.rglob("*") if ".tmp-" in p.name) == []
    assert [record["user"] for record in store.journal()] == ["u"]


def test_a_connection_closed_makes_room_for_the_next(router):
    for count in (1, 2):
        accept(router, router.connect(), lambda: len(router.connections) == count)
    next(iter(router.connections)).close()
    assert len(router.connections) == 1
    third = router.connect()
    accept(router, third, lambda: len(router.connections) == 2)
    assert not answered(third)


def test_a_connection_whose_client_has_closed_is_the_one_closed_for_room(router):
    # Its close waits unread: it was passed over as if a request waited, and a live
    # idle connection closed in its place.
    first = router.connect()
    accept(router, first, lambda: len(router.connections) == 1)
    router.loop.now += 1
    second = router.connect()
    accept(router, second, lambda: len(router.connections) == 2)
    gone = connection_of(router, first)
    first.close()
    assert select.select([gone.sock], [], [], 5)[0]   # its FIN is there, unread
    third = router.connect()
    accept(router, third, lambda: any(conn.peer == third.getsockname() for conn in router.connections))
    assert gone.closed and len(router.connections) == 2 and not answered(second) and not answered(third)


def test_room_for_workers_is_made_by_closing_idle_connections_never_one_with_a_request_unread(
        router, monkeypatch):
    first = router.connect()
    accept(router, first, lambda: len(router.connections) == 1)
    router.loop.now += 1
    second = router.connect()
    accept(router, second, lambda: len(router.connections) == 2)
    # `first`, idle longest, has a request unread: it is passed over, and the request is
    # not run here (a session open in it would ask for room from inside this)
    handled = []
    monkeypatch.setattr(router.app, "handle", lambda conn, request: handled.append(request))
    # one descriptor short while two connections are open
    monkeypatch.setattr(main, "free_descriptors", lambda count: count - (len(router.connections) >= 2))
    first.sendall(REQUEST)
    arrived(router, first)
    assert router._make_room_for_workers(1) is True
    assert closed_by_router(second) and [conn.peer for conn in router.connections] == [first.getsockname()]
    assert handled == []
    monkeypatch.setattr(main, "free_descriptors", lambda count: count - 1)   # short again
    assert router._make_room_for_workers(1) is False   # the one left has a request waiting: kept
    assert handled == [] and len(router.connections) == 1


def test_room_for_workers_closes_as_many_connections_as_descriptors_are_short_counted_once(
        router, monkeypatch):
    router.config = dataclasses.replace(router.config, max_connections=5)
    clients = []
    for count in range(1, 6):
        clients.append(router.connect())
        accept(router, clients[-1], lambda count=count: len(router.connections) == count)
        router.loop.now += 1
    probes = []

    def free_descriptors(count):   # three short while all five are open
        probes.append(count)
        return count - max(0, len(router.connections) - 2)

    monkeypatch.setattr(main, "free_descriptors", free_descriptors)
    assert router._make_room_for_workers(18) is True
    # the three idle longest, found with one probe before and one after (a probe takes
    # up to all it asks for: one after each close cost a probe a connection)
    assert all(closed_by_router(client) for client in clients[:3])
    assert {conn.peer for conn in router.connections} == {client.getsockname() for client in clients[3:]}
    assert probes == [18, 18]
