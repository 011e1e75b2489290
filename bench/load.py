"""Load generation in client processes (multiprocessing, so the client is not GIL-bound).

Each client process drives its share of the keep-alive connections from one selectors
loop, one request in flight per connection (a closed-loop client: concurrency C means
C requests outstanding). All processes start at one shared monotonic instant, skip a
warm-up, and count only requests sent and answered inside the measured window.
"""

import array
import json
import math
import multiprocessing
import os
import selectors
import time

from bench.client import BlockingConnection, Endpoint

_CTX = multiprocessing.get_context("fork")


def percentile(values, q):
    """Nearest-rank percentile of an unsorted sequence; None if empty."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, math.ceil(q / 100.0 * len(ordered)) - 1))
    return ordered[rank]


def latency_summary(latencies):
    """p50/p99/max in milliseconds."""
    return {
        "p50_ms": _ms(percentile(latencies, 50)),
        "p99_ms": _ms(percentile(latencies, 99)),
        "max_ms": _ms(max(latencies) if latencies else None),
    }


def _ms(seconds):
    return None if seconds is None else round(seconds * 1000.0, 3)


class _ClientConn:
    __slots__ = ("conn", "sock", "sids", "next_sid", "sent_at", "next_id", "buf", "done")

    def __init__(self, conn, sids):
        self.conn = conn
        self.sock = conn.sock
        self.sids = sids
        self.next_sid = 0
        self.sent_at = 0.0
        self.next_id = 1
        self.buf = bytearray()
        self.done = False


def _client_process(url, n_conns, given_sids, method, params, warmup, duration, ready, go, t0, out):
    try:
        result = _drive(url, n_conns, given_sids, method, params, warmup, duration, ready, go, t0)
    except BaseException as exc:  # reported to the parent, which marks the run failed
        ready.abort()
        result = {"count": 0, "errors": 1, "first_errors": ["client crashed: %r" % (exc,)],
                  "latencies": b""}
    out.send(result)
    out.close()


def _drive(url, n_conns, given_sids, method, params, warmup, duration, ready, go, t0):
    from bench.client import parse_response

    ep = Endpoint(url)
    own_sessions = given_sids is None
    clients = []
    for i in range(n_conns):
        conn = BlockingConnection(ep)
        sids = [conn.open_session()] if own_sessions else given_sids[i]
        clients.append(_ClientConn(conn, sids))
    ready.wait(120)
    go.wait(120)
    start = t0.value
    window_start = start + warmup
    window_end = window_start + duration
    params_json = json.dumps(params, separators=(",", ":")) if params is not None else None

    def send(client):
        rid = client.next_id
        client.next_id = rid + 1
        sid = client.sids[client.next_sid]
        client.next_sid = (client.next_sid + 1) % len(client.sids)
        if params_json is None:
            body = b'{"jsonrpc":"2.0","id":%d,"method":"%s"}' % (rid, method.encode())
        else:
            body = b'{"jsonrpc":"2.0","id":%d,"method":"%s","params":%s}' % (rid, method.encode(),
                                                                              params_json.encode())
        client.sent_at = time.monotonic()
        client.sock.sendall(ep.render("POST", body, session=sid))

    latencies = array.array("d")
    count = errors = 0
    first_errors = []
    sel = selectors.DefaultSelector()
    delay = start - time.monotonic()
    if delay > 0:
        time.sleep(delay)
    for client in clients:
        sel.register(client.sock, selectors.EVENT_READ, client)
        send(client)
    active = len(clients)
    while active:
        for key, _ in sel.select(30.0) or [(None, None)]:
            if key is None:
                raise TimeoutError("no reply within 30 s")
            client = key.data
            data = client.sock.recv(65536)
            if not data:
                raise ConnectionError("server closed a connection mid-run")
            client.buf += data
            while True:
                parsed = parse_response(client.buf)
                if parsed is None:
                    break
                response, used = parsed
                del client.buf[:used]
                now = time.monotonic()
                if client.sent_at >= window_start and now <= window_end:
                    latencies.append(now - client.sent_at)
                    count += 1
                    if not response.is_result():
                        errors += 1
                        if len(first_errors) < 3:
                            first_errors.append(repr(response))
                if now < window_end:
                    send(client)
                else:
                    client.done = True
                    sel.unregister(client.sock)
                    active -= 1
                    break
    sel.close()
    if own_sessions:
        for client in clients:
            for sid in client.sids:
                client.conn.delete(sid)
    for client in clients:
        client.conn.close()
    return {"count": count, "errors": errors, "first_errors": first_errors,
            "latencies": latencies.tobytes()}


def _split(total, parts):
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def run_load(url, concurrency, duration, *, method="tools/call", params=None, warmup=0.5,
             sessions=None, processes=None, on_window=None):
    """C closed-loop clients for `duration` seconds after `warmup`.

    sessions: None (each connection opens its own session and deletes it afterwards)
    or a list of session ids shared round-robin over the connections.
    on_window(edge) is called in this process with "start" and "end" at the window's
    edges (for CPU samples). Returns requests/s, latency percentiles and error counts.
    """
    nproc = max(1, min(concurrency, processes or os.cpu_count() or 1))
    conns_per_proc = _split(concurrency, nproc)
    sid_lists = None
    if sessions is not None:
        per_conn = [[] for _ in range(concurrency)]
        for i, sid in enumerate(sessions):
            per_conn[i % concurrency].append(sid)
        if any(not s for s in per_conn):
            raise ValueError("fewer sessions than connections")
        sid_lists = []
        pos = 0
        for n in conns_per_proc:
            sid_lists.append(per_conn[pos:pos + n])
            pos += n
    ready = _CTX.Barrier(nproc + 1)
    go = _CTX.Barrier(nproc + 1)
    t0 = _CTX.Value("d", 0.0, lock=False)
    procs, pipes = [], []
    for i, n in enumerate(conns_per_proc):
        recv_end, send_end = _CTX.Pipe(duplex=False)
        proc = _CTX.Process(target=_client_process, daemon=True, args=(
            url, n, None if sid_lists is None else sid_lists[i], method, params, warmup, duration,
            ready, go, t0, send_end))
        proc.start()
        send_end.close()
        procs.append(proc)
        pipes.append(recv_end)
    try:
        ready.wait(180)
        t0.value = time.monotonic() + 0.05
        go.wait(30)
        window_start = t0.value + warmup
        _sleep_until(window_start)
        if on_window:
            on_window("start")
        _sleep_until(window_start + duration)
        if on_window:
            on_window("end")
    except Exception:
        pass  # a crashed client broke the barrier; its pipe says why
    results = []
    for pipe in pipes:
        if pipe.poll(180):
            results.append(pipe.recv())
        else:
            results.append({"count": 0, "errors": 1, "first_errors": ["client gave no result"],
                             "latencies": b""})
    for proc in procs:
        proc.join(10)
        if proc.is_alive():
            proc.kill()
    latencies = array.array("d")
    count = errors = 0
    first_errors = []
    for r in results:
        latencies.frombytes(r["latencies"])
        count += r["count"]
        errors += r["errors"]
        first_errors += r["first_errors"]
    summary = {"concurrency": concurrency, "duration_s": duration, "requests": count,
               "rps": round(count / duration, 1), "errors": errors, "first_errors": first_errors[:3]}
    summary.update(latency_summary(latencies))
    return summary


def _sleep_until(when):
    delay = when - time.monotonic()
    if delay > 0:
        time.sleep(delay)


def measure_session_open(url, count):
    """Open `count` sessions back to back on one keep-alive connection, timing each
    initialize + notifications/initialized; each is deleted (untimed) before the next."""
    ep = Endpoint(url)
    conn = BlockingConnection(ep)
    times = []
    errors = 0
    first_errors = []
    try:
        for _ in range(count):
            started = time.monotonic()
            try:
                sid = conn.open_session()
            except (RuntimeError, OSError) as exc:
                errors += 1
                if len(first_errors) < 3:
                    first_errors.append(str(exc))
                conn.close()
                conn = BlockingConnection(ep)
                continue
            times.append(time.monotonic() - started)
            conn.delete(sid)
    finally:
        conn.close()
    summary = {"sessions": count, "opened": len(times), "errors": errors, "first_errors": first_errors}
    summary.update(latency_summary(times))
    return summary


def open_sessions(url, count, connections=4):
    """Open and keep `count` sessions (several connections in parallel); returns their ids."""
    nproc = max(1, min(connections, count))
    with _CTX.Pool(nproc) as pool:
        parts = pool.starmap(_open_many, [(url, n) for n in _split(count, nproc)])
    return [sid for part in parts for sid in part]


def _open_many(url, n):
    conn = BlockingConnection(Endpoint(url))
    try:
        return [conn.open_session() for _ in range(n)]
    finally:
        conn.close()


def delete_sessions(url, sids):
    conn = BlockingConnection(Endpoint(url))
    try:
        for sid in sids:
            conn.delete(sid)
    finally:
        conn.close()


def call_once(url, method, params, timeout=120.0):
    """One session, one call; returns (seconds, HttpResponse). For the long isolation call."""
    conn = BlockingConnection(Endpoint(url), timeout=timeout)
    try:
        sid = conn.open_session()
        started = time.monotonic()
        reply = conn.call(sid, 1, method, params)
        elapsed = time.monotonic() - started
        conn.delete(sid)
        return elapsed, reply
    finally:
        conn.close()
