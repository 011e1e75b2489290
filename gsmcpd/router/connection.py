"""One client connection: non-blocking socket, incremental HTTP parser, ordered replies.

Requests on a connection are answered strictly in order: the next pipelined request
is taken from the parser only once the previous reply is complete (or its stream has
ended). The connection only moves bytes; what a request means is `app`'s business.
"""

import logging

from gsmcpd.auth.tls import PlaintextHttpError, TlsError
from gsmcpd.wire import http

log = logging.getLogger("gsmcpd.http")

RECV_SIZE = 256 * 1024
IDLE_KEEPALIVE_SECONDS = 300  # an idle keep-alive connection costs a socket; free it
STREAM_WRITE_BUDGET = 5.0  # a reader that stops reading loses its stream, never the loop


class Connection:
    def __init__(self, router, sock, peer, tls=None):
        self.router = router
        self.loop = router.loop
        self.sock = sock
        self.peer = peer
        self.tls = tls
        cfg = router.config
        self.parser = http.RequestParser(max_body=cfg.max_body)
        self.read_timeout = cfg.read_timeout
        self.out = bytearray()
        self.busy = False  # a request is being answered
        self.streaming = False  # the reply in progress is a chunked stream
        self.on_stream_lost = None  # called once if a stream's client goes away
        self.closed = False
        self._close_when_flushed = False
        self._timer = None
        self._write_stalled_since = None
        self.current = None  # the request being answered
        sock.setblocking(False)
        self._update_interest()
        if tls is None:
            self._arm_idle()
        else:
            self._arm_read_timeout()  # a stalled handshake is an unfinished request

    # -- reading -----------------------------------------------------------
    def _on_readable(self):
        try:
            data = self.sock.recv(RECV_SIZE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self._peer_closed()
            return
        if self.tls is not None:
            data = self._tls_receive(data)
            if not data:  # handshake bytes only, or the connection was refused
                if not self.closed and self.tls.handshake_done and not self.busy:
                    self._arm_idle()
                return
        try:
            self.parser.feed(data)
        except http.HttpError as exc:
            self._fail(exc)
            return
        if self.parser.pop_expect_continue():
            self.write(http.CONTINUE)  # else curl waits a second before a large body
        if not self.busy:
            self._next_request()
        elif self.streaming and self.parser.in_progress and len(data) > 65536:
            self.close()  # a stream is not a place to upload to

    def _tls_receive(self, data):
        try:
            plain = self.tls.receive(data)
        except TlsError as exc:  # handshake failure, or plain HTTP on the TLS port
            if isinstance(exc, PlaintextHttpError):
                self._send_raw(exc.response)
            self.router.trace_unreadable("TLS handshake failed: %s" % exc)
            self.close()
            return None
        self._flush_tls()
        return plain

    def _peer_closed(self):
        if self.parser.in_progress:
            self.router.trace_unreadable("client closed mid-request")
        self.close()

    def _next_request(self):
        if self.busy or self.closed:
            return
        try:
            request = self.parser.next_request()
        except http.HttpError as exc:
            self._fail(exc)
            return
        if request is None:
            if self.parser.in_progress:
                self._arm_read_timeout()
            else:
                self._arm_idle()
            return
        self._cancel_timer()
        self.busy = True
        self.current = request
        self._update_interest()
        self.router.app.handle(self, request)

    def _fail(self, exc):
        self.router.trace_unreadable("HTTP %d %s" % (exc.status, exc.message))
        self.busy = True
        body = ("%d %s\n" % (exc.status, exc.message)).encode()
        self.write(http.response(exc.status, [("Content-Type", "text/plain")], body, keep_alive=False))
        self._close_when_flushed = True
        self._maybe_close()

    # -- replying ----------------------------------------------------------
    def respond(self, status, headers=(), body=b"", keep_alive=True):
        if self.closed:
            return
        keep = keep_alive and self.current is not None and self.current.keep_alive
        self.router.trace_response(self.current, status, headers, body)
        self.write(http.response(status, headers, body, keep_alive=keep))
        self._finish(keep)

    def start_stream(self, status, headers=()):
        if self.closed:
            return
        self.streaming = True
        self.write(http.stream_head(status, headers))
        self._update_interest()

    def stream_write(self, data):
        if not self.closed and self.streaming:
            self.write(http.chunk(data))

    def end_stream(self):
        if self.closed or not self.streaming:
            return
        self.streaming = False
        self.on_stream_lost = None
        self.write(http.LAST_CHUNK)
        self._finish(self.current is not None and self.current.keep_alive)

    def _finish(self, keep_alive):
        self.busy = False
        self.current = None
        if not keep_alive:
            self._close_when_flushed = True
            self._maybe_close()
            return
        self._update_interest()
        # Not recursively: a long pipeline must not grow the stack.
        self.loop.call_soon(self._next_request)

    # -- writing -----------------------------------------------------------
    def write(self, data):
        if self.closed:
            return
        if self.tls is not None:
            self.tls.send(data)
            self._flush_tls()
        else:
            self._send_raw(data)

    def _flush_tls(self):
        pending = self.tls.pending_output()
        if pending:
            self._send_raw(pending)

    def _send_raw(self, data):
        if not self.out:
            try:
                sent = self.sock.send(data)
            except (BlockingIOError, InterruptedError):
                sent = 0
            except OSError:
                self.close()
                return
            if sent == len(data):
                return
            data = data[sent:]
        self.out += data
        if self._write_stalled_since is None:
            self._write_stalled_since = self.loop.time()
            self.loop.call_later(STREAM_WRITE_BUDGET, self._check_stall)
        self._update_interest()

    def _on_writable(self):
        try:
            sent = self.sock.send(self.out)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self.close()
            return
        del self.out[:sent]
        if not self.out:
            self._write_stalled_since = None
            self._update_interest()
            self._maybe_close()

    def _check_stall(self):
        since = self._write_stalled_since
        if self.closed or since is None:
            return
        if self.loop.time() - since >= STREAM_WRITE_BUDGET:
            log.info("dropping connection from %s: client stopped reading", self.peer)
            self.close()
        else:
            self.loop.call_at(since + STREAM_WRITE_BUDGET, self._check_stall)

    def _maybe_close(self):
        if self._close_when_flushed and not self.out:
            self.close()

    # -- lifecycle ---------------------------------------------------------
    def _update_interest(self):
        if self.closed:
            return
        # While a plain request is being answered we do not read: the reply
        # comes first, and a pipelining client cannot pile up unbounded input.
        reading = (not self.busy) or self.streaming
        self.loop.set_interest(
            self.sock,
            self._on_readable if reading else None,
            self._on_writable if self.out else None,
        )

    def _arm_read_timeout(self):
        if self._timer is None or getattr(self._timer, "kind", "") != "read":
            self._cancel_timer()
            self._timer = self.loop.call_later(self.read_timeout, self._read_timed_out)
            self._timer.kind = "read"

    def _arm_idle(self):
        self._cancel_timer()
        self._timer = self.loop.call_later(IDLE_KEEPALIVE_SECONDS, self._idle_timed_out)
        self._timer.kind = "idle"

    def _cancel_timer(self):
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _read_timed_out(self):
        self._timer = None
        handshaking = self.tls is not None and not self.tls.handshake_done
        if not self.busy and (self.parser.in_progress or handshaking):
            self.router.trace_unreadable("timed out after %gs" % self.read_timeout)
            self.close()

    def _idle_timed_out(self):
        self._timer = None
        if not self.busy:
            self.close()

    def close(self):
        if self.closed:
            return
        self.closed = True
        self._cancel_timer()
        lost, self.on_stream_lost = self.on_stream_lost, None
        self.loop.remove(self.sock)
        try:
            self.sock.close()
        except OSError:
            pass
        self.router.connection_closed(self)
        if lost is not None:
            lost()
