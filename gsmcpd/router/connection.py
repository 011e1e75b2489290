"""One client connection: non-blocking socket, incremental HTTP parser, ordered replies.

Requests on a connection are answered strictly in order: the next pipelined request
is taken from the parser only once the previous reply is complete (or its stream has
ended). A client that half-closes gets the replies to every request it completed, in
order, before the connection closes. The connection only moves bytes; what a request
means is `app`'s business.
"""

import logging
import socket

from gsmcpd.auth.tls_errors import PlaintextHttpError, TlsError
from gsmcpd.router.loop import recv_some, send_some
from gsmcpd.router.trace import HEAD_FIELD_CAP, shown
from gsmcpd.wire import http, jsonrpc

log = logging.getLogger("gsmcpd.http")

RECV_SIZE = 64 * 1024  # a 256 KiB recv buffer cost an mmap/munmap per call (~25 us)
IDLE_KEEPALIVE_SECONDS = 300  # an idle keep-alive connection costs a socket; free it
STREAM_WRITE_BUDGET = 5.0  # seconds a client may read nothing of what waits for it
STREAM_BACKLOG = 16 << 20  # bytes a stream may run ahead of its reader (a reply may exceed it)
PIPELINE_BUFFER = 256 * 1024  # a reader that stops reading loses its stream, never the loop
# A connection closed with its client's input unread (a refusal from the head, a 413)
# lingers: its reply flushed and its write side shut, what the client still sends is read
# and dropped, so a client still writing its body gets to read the refusal, not a reset
# (closing with unread input sends RST). Bounded, so lingering holds nothing for long:
# a client that will read its reply finishes writing within seconds on any link fit to
# send a big body (16 MiB is 3 s at 50 Mbit/s), and 16 MiB, the default GS_MCP_MAX_BODY,
# lets a body the router would have taken be written whole. Dropping costs one recv per
# RECV_SIZE into one shared buffer, no memory; past a bound the client gets the reset.
# A body refused for its declared Content-Length is dropped to its declared end, up to
# LINGER_DECLARED_MAX: an HTTP client writes the whole body before it reads the reply
# (the MCP SDKs do), so cut off at LINGER_BYTES it read a reset, never the 413.
LINGER_SECONDS = 5.0
LINGER_BYTES = 16 << 20
LINGER_DECLARED_MAX = 256 << 20
# On TLS what lingering drops is the body's records, undecrypted: each adds its header,
# tag and padding (22 to ~85 bytes to a full 16 KiB record), so the declared length is
# given this share more, or the client is cut off before its body's end (at 200 MiB).
TLS_RECORDS_SHARE = 32
_DROPPED = bytearray(RECV_SIZE)   # where lingering input goes (the loop is single-threaded)
INTERNAL_ERROR_BODY = jsonrpc.dumps(jsonrpc.error(None, jsonrpc.INTERNAL_ERROR,
                                                  "Internal error: the server failed to handle this request"))


def drop_arrived(sock, limit=PIPELINE_BUFFER):
    """Read and drop what a non-blocking socket holds now, up to `limit` bytes, waiting
    for nothing: a close after it is a FIN, not a reset, if that was all the client sent."""
    dropped = 0
    while dropped < limit:
        try:
            count = sock.recv_into(_DROPPED)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            return
        if not count:
            return
        dropped += count


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
        self.streaming = False  # the reply in progress is a stream
        self._chunked = True  # ...in chunks; else (an HTTP/1.0 client) ended by the close
        self.on_stream_lost = None  # called once if a stream's client goes away
        self.closed = False
        self._close_when_flushed = False
        self._timer = None
        self._deadline = None
        self._deadline_kind = None
        self._wait_began = self.loop.now  # when the keep-alive wait began: the connect, or the last reply
        self._interest = None
        self._peer_eof = False
        self._closing = False
        self._write_stalled_since = None
        self._input_unread = False  # the last reply leaves input unread: linger before closing
        self.lingering_since = None  # when lingering began (_linger)
        self._linger_left = 0  # bytes still to drop before the client is cut off
        self._linger_bytes = LINGER_BYTES   # what lingering drops at most
        self.current = None  # the request being answered
        self.reply_headers = ()  # headers the app adds to every reply to it (CORS)
        self.account_refusal = None  # why the app refuses this client's account (App.admit)
        self.client_account = None  # without auth, the local account its sessions are shown as
        self._body_admitted = False  # the request being read passed its gates from its head (read_body)
        sock.setblocking(False)
        self._update_interest()
        # Silent, a TLS connection is as idle as a plain one (closed for room at the cap);
        # its first handshake byte starts the read timeout (_on_readable).
        self._arm_idle()

    # -- reading -----------------------------------------------------------
    def read_arrived(self):
        """Read, at accept, what the client sent with its connect: unread, a request
        already here would pass for idleness (Router._evict_idlest)."""
        self._on_readable()

    def has_unread_input(self):
        """Whether bytes wait unread in the socket: a peek, which leaves them to the
        loop, and runs no request (Router._evict_idlest asks). Not the client's close
        or a reset: closing such a connection loses nothing."""
        try:
            return bool(self.sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT))
        except OSError:   # nothing there yet (BlockingIOError), or reset
            return False

    def _on_readable(self):
        data = recv_some(self.sock, RECV_SIZE)
        if data is None:
            return
        if not data:
            self._peer_closed()
            return
        if self.tls is not None:
            data = self._tls_receive(data)
            if self.tls.peer_closed and not self.closed:
                # Its close_notify ends its side as a FIN does: what it completed is
                # answered, then the connection closes (with ours), not left idle.
                if not data or self._feed(data):
                    self._peer_closed()
                return
            if not data:  # handshake bytes, part of a record, or the connection was refused
                if self.closed or self.busy:
                    return
                self._arm_wait()   # a stalled handshake or record; or a whole record without data
                return
        self._feed(data)

    def _feed(self, data):
        """Parse what arrived, and take the next request unless one is being answered.
        False if it was refused (the connection fails)."""
        try:
            self.parser.feed(data)
        except http.HttpError as exc:
            self._fail(exc)
            return False
        if not self.busy:
            self._next_request()
        else:
            self._update_interest()
        return True

    def _tls_receive(self, data):
        try:
            plain = self.tls.receive(data)
        except TlsError as exc:  # handshake failure, or plain HTTP on the TLS port
            self.router.trace_unreadable("TLS handshake failed: %s" % exc)
            self._refuse_tls(exc)
            return None
        self._flush_tls()
        return plain

    def _refuse_tls(self, exc):
        """Tell the client why its TLS failed, then close as after any refusal (lingering):
        plain HTTP reads a plaintext 400, a TLS client the alert OpenSSL queued (protocol
        version, no shared cipher). Closed at once, the alert was never sent and unread
        input reset the 400 away: the client read a bare EOF, or a broken pipe."""
        self.busy = True   # no request is taken from this connection again
        self._send_raw(exc.response if isinstance(exc, PlaintextHttpError) else self.tls.pending_output())
        self._input_unread = True
        self._close_when_flushed = True
        self._update_interest()
        self._maybe_close()

    def _peer_closed(self):
        if self.streaming:
            # A FIN is the one prompt sign that a stream's reader has gone (a half-close
            # cannot be told from a close): the stream is lost (on_stream_lost, at close).
            if self.parser.in_progress:
                self.router.trace_unreadable("client closed mid-request")
            self.close()
            return
        # A half-closed client may still read the replies it is waiting for: every
        # complete request already received is answered, in order, then the connection
        # closes (_next_request, once the parser has no complete request left).
        self._peer_eof = True
        self._update_interest()
        if not self.busy:
            self._next_request()

    def _next_request(self):
        if self.busy or self.closed or self._close_when_flushed:
            return
        try:
            request = self.parser.next_request()
        except http.HttpError as exc:
            self._fail(exc)
            return
        if request is None:
            if self._peer_eof or self._closing:
                # Every complete request is answered: close once the replies are written.
                # An incomplete one left at EOF is dropped, as on an idle connection (no
                # 400: the client ended its side without sending a request to answer).
                if self._peer_eof and self.parser.in_progress:
                    self.router.trace_unreadable("client closed mid-request")
                self._close_when_flushed = True
                self._maybe_close()
                return
            # A head parsed and its body still to come (only then: a body that came with
            # its head costs nothing here) is gated before the body is read.
            head = self.parser.pop_waiting_head()
            if head is not None:
                self._gate_head(head)
                return
            self._arm_wait()
            return
        self._cancel_timer()
        self._hand_over(request, self.router.app.handle)

    def _gate_head(self, head):
        """Run the app's head-only gates while the body waits: a refused request is
        answered now and the connection closed (head.keep_alive is False), its body never
        read (an unauthenticated client must not make the router buffer up to
        GS_MCP_MAX_BODY); one that passes reads on (read_body)."""
        self._hand_over(head, self.router.app.handle_head)

    def _hand_over(self, request, handle):
        """The app takes `request` (whole, or a head whose body waits): reading stops
        PIPELINE_BUFFER ahead until it answers, and a bug in it never leaks the connection."""
        self.busy = True
        self.current = request
        self._body_admitted = False
        if self.parser.buffered >= PIPELINE_BUFFER:   # else busy leaves the interest as it was
            self._update_interest()
        self.go_on(request, handle, self, request)

    def go_on(self, request, step, *args):
        """Run `step(*args)` of handling `request`, now or later (a request that waited on
        a JWKS fetch goes on from its callback): a bug in it never leaks the connection,
        and answers 500 if nothing was answered yet. False if it raised."""
        try:
            step(*args)
        except Exception:
            # Method and path only, cut as the trace cuts them: the path is the client's,
            # up to 64 KiB; headers (a bearer token) never reach a log line.
            log.exception("handling %s %s from %s failed", shown(request.method, HEAD_FIELD_CAP),
                          shown(request.path, HEAD_FIELD_CAP), self.peer)
            self._handling_failed(request)
            return False
        return True

    def read_body(self):
        """The app's answer to a head that passed its gates: read the body, then the
        whole request is handled (and gated again, the same way)."""
        head = self.current
        if self.closed or head is None or head.body is not None:
            return
        self.busy = False
        self.current = None
        self.reply_headers = ()
        self._body_admitted = True
        # A client that asked waits for this before sending its body (curl: a second,
        # then sends it anyway).
        if head.expects_continue():
            self.write(http.CONTINUE)
        # The body's own window: the gates' time (a key refetch) is not the client's.
        self._set_deadline("read", self.read_timeout)
        self._update_interest()
        if self.parser.buffered or self._closing or self._peer_eof:
            self.loop.call_soon(self._next_request)

    def _handling_failed(self, request):
        """A bug in request handling must never leak the connection: answer 500 if
        nothing of this request's reply was written yet, then close the connection once
        what was written is flushed, whatever the app still holds of it."""
        if self.closed:
            return
        try:
            if self.current is request and not self.streaming:
                self.respond(500, [("Content-Type", "application/json")], INTERNAL_ERROR_BODY, keep_alive=False)
        except Exception:
            log.exception("cannot answer 500 to %s: closing", self.peer)
            self.close()
            return
        if self.closed:
            return
        self.busy = True  # no further request is taken, and reading stays bounded
        self.streaming = False  # a stream begun is cut short: its reader sees it unterminated
        self._note_unread_input()
        self._close_when_flushed = True
        self._update_interest()
        self._maybe_close()

    def _fail(self, exc):
        self.router.trace_unreadable("HTTP %d %s" % (exc.status, exc.message))
        if self.busy:
            # A reply is in progress, maybe a chunked stream: a response written now
            # would land inside its body, or be read as its reply. The client went past
            # a limit while waiting for it: it is closed, with no second response.
            self.close()
            return
        self.busy = True
        # A JSON-RPC error with no id, as MCP allows: SDKs show its message, and put a
        # stand-in ("Server returned an error response") in place of any other body.
        body = jsonrpc.dumps(jsonrpc.error(None, jsonrpc.INVALID_REQUEST, "%d %s" % (exc.status, exc.message)))
        headers = [("Content-Type", "application/json")]
        cors = self.router.app.cors
        if cors:   # a listed page can read why (its head was parsed: its Origin is known)
            headers.extend(cors.reply_headers(exc.origin))
        self.write(http.response(exc.status, headers, body, keep_alive=False))
        self._input_unread = True  # a request refused as read: the client may be mid-body
        declared = min(exc.unread_body, LINGER_DECLARED_MAX)
        if self.tls is not None:
            declared += declared // TLS_RECORDS_SHARE
        self._linger_bytes = max(LINGER_BYTES, declared)
        self._close_when_flushed = True
        self._maybe_close()

    # -- replying ----------------------------------------------------------
    def respond(self, status, headers=(), body=b"", keep_alive=True):
        # Nothing more once the connection's last reply is written (_close_when_flushed).
        if self.closed or self._close_when_flushed:
            return
        current = self.current
        keep = keep_alive and current is not None and current.keep_alive
        if self.reply_headers:
            headers = (*headers, *self.reply_headers)
        if current is not None and current.body is None:
            self.router.trace_head(current)   # answered from its head: traced, as its body never is
        self.router.trace_response(current, status, headers, body)
        self.write(http.response(status, headers, body, keep_alive=keep,
                                 head=current is not None and current.method == "HEAD"))
        self._finish(keep)

    def start_stream(self, status, headers=()):
        if self.closed or self._close_when_flushed:
            return
        self.streaming = True
        self._chunked = self.current is None or self.current.version != "HTTP/1.0"
        if self.reply_headers:
            headers = (*headers, *self.reply_headers)
        self.write(http.stream_head(status, headers, chunked=self._chunked))
        self._update_interest()

    def stream_write(self, data):
        if self.closed or not self.streaming:
            return
        if len(self.out) >= STREAM_BACKLOG:
            # A reader that keeps reading keeps its connection (_check_stall), but what
            # it has not read yet must not grow without bound.
            log.info("dropping connection from %s: client %d bytes behind its stream", self.peer, len(self.out))
            self.close()
            return
        self.write(http.chunk(data) if self._chunked else data)

    def end_stream(self):
        if self.closed or not self.streaming:
            return
        self.streaming = False
        self.on_stream_lost = None
        if not self._chunked:
            self._finish(False)
            return
        self.write(http.LAST_CHUNK)
        self._finish(self.current is not None and self.current.keep_alive)

    def _finish(self, keep_alive):
        self.busy = False
        self.current = None
        self.reply_headers = ()
        if not keep_alive:
            # Nothing more is read into the parser while the reply flushes (an unread
            # body after an early refusal, requests pipelined behind this one).
            self._note_unread_input()
            self.parser.discard()
            self._close_when_flushed = True
            self._maybe_close()
            return
        self._wait_began = self.loop.now
        self._update_interest()
        if self.parser.buffered or self._closing or self._peer_eof:
            # Not recursively: a long pipeline must not grow the stack.
            self.loop.call_soon(self._next_request)
        else:
            self._arm_wait()  # what _next_request would find: no request whole yet
            if not self.closed and not self.out:
                self.loop.event_due = True   # a keep-alive client's next request, back to back

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
                sent = send_some(self.sock, data)
            except OSError:
                self.close()
                return
            if sent == len(data):
                return
            data = data[sent:]
        self.out += data
        if self._write_stalled_since is None:
            self._write_stalled_since = self.loop.now
            self.loop.call_later(STREAM_WRITE_BUDGET, self._check_stall)
        self._update_interest()

    def _on_writable(self):
        try:
            sent = send_some(self.sock, self.out)
        except OSError:
            self.close()
            return
        del self.out[:sent]
        if not self.out:
            self._write_stalled_since = None
            self._update_interest()
            self._maybe_close()
        elif sent:
            # Progress: a slow client reading a big reply is not one that stopped reading.
            self._write_stalled_since = self.loop.now

    def _check_stall(self):
        since = self._write_stalled_since
        if self.closed or since is None:
            return
        if self.loop.now - since >= STREAM_WRITE_BUDGET:
            # Poll says writable only once much of the send buffer is free, which a slow
            # reader may take longer than the budget to free: a send tells if it read any.
            self._on_writable()
            since = self._write_stalled_since
            if self.closed or since is None:
                return
            if self.loop.now - since >= STREAM_WRITE_BUDGET:
                log.info("dropping connection from %s: client stopped reading", self.peer)
                self.close()
                return
        self.loop.call_at(since + STREAM_WRITE_BUDGET, self._check_stall)

    def _maybe_close(self):
        if not self._close_when_flushed or self.out or self.lingering_since is not None:
            return
        if self.tls is not None and not self.closed:
            # A write side is shut after a close_notify (RFC 8446 6.1): the client reads
            # the reply's end as a clean one, not as a cut (a reply ended by the close).
            try:
                self.tls.close()
            except TlsError:
                pass
            self._flush_tls()
            if self.out or self.closed:
                return   # _on_writable comes back once it is written
        if not self._input_unread or self._peer_eof:
            self.close()   # the client sent all it will: a close now resets nothing
            return
        self._linger()

    # -- lingering close ---------------------------------------------------
    def _note_unread_input(self):
        """Before the last reply's parser discard: whether the client may still be sending."""
        self._input_unread = self._input_unread or self.parser.in_progress or self.parser.buffered > 0

    def _linger(self):
        """The last reply is flushed and the client's input unread: shut the write side
        (the client reads the reply, then EOF), then drop what it still sends, unparsed
        (on TLS, undecrypted), until its EOF, LINGER_BYTES or LINGER_SECONDS, and close."""
        try:
            self.sock.shutdown(socket.SHUT_WR)
        except OSError:   # the client is gone already
            self.close()
            return
        self.parser.discard()
        self.lingering_since = self.loop.now
        self._linger_left = self._linger_bytes
        self._set_deadline("linger", LINGER_SECONDS)
        self._update_interest()

    def _drop_input(self):
        try:
            count = self.sock.recv_into(_DROPPED)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            count = 0
        self._linger_left -= count
        if not count or self._linger_left <= 0:
            self.close()   # the client's EOF, or it is cut off: it had its _linger_bytes

    # -- lifecycle ---------------------------------------------------------
    def _update_interest(self):
        if self.closed:
            return
        if self.lingering_since is not None:   # its input is dropped, nothing more written
            if self._interest != "lingering":
                self._interest = "lingering"
                self.loop.set_interest(self.sock, self._drop_input, None)
            return
        # Keep reading while a request is answered (a hang-up is seen at once), but a
        # client gets no more than PIPELINE_BUFFER ahead of its replies, whether it
        # pipelines or writes on while its stream runs. Past that, its hang-up is seen
        # when a write fails or stalls (a GET stream writes keep-alive comments).
        reading = not self._peer_eof and (not self.busy or self.parser.buffered < PIPELINE_BUFFER)
        interest = (reading, bool(self.out))
        if interest != self._interest:
            self._interest = interest
            self.loop.set_interest(self.sock, self._on_readable if reading else None,
                                   self._on_writable if self.out else None)

    # One deadline per connection, kept as a value: re-arming it on every request
    # is an assignment, and the single loop timer only moves when it fires early.
    # (A fresh timer per request would pile cancelled timers into the heap.)
    def _arm_read_timeout(self):
        if self._deadline_kind != "read":
            self._set_deadline("read", self.read_timeout)

    def _arm_wait(self):
        """The read timeout once part of a request has come (a head, or over TLS only a
        record's start: cut behind a reply, it decrypts to nothing), else the keep-alive wait."""
        if self._reading_a_request():
            self._arm_read_timeout()
        else:
            self._arm_idle()

    def _arm_idle(self):
        # The wait runs from the last reply: input that brings no request (empty lines,
        # RFC 9112 2.2; a TLS record without data) must not extend it, nor make the
        # connection look freshly idle to Router._evict_idlest. Not even when it was read
        # as the start of one for a while (a CR, its LF in the next read): the wait goes
        # back to where it was, or a client could renew it for ever.
        if self._deadline_kind != "idle":
            self._set_deadline("idle", self._wait_began + IDLE_KEEPALIVE_SECONDS - self.loop.now)

    def idle_since(self):
        """When this connection began waiting, between requests, for its next one (its
        keep-alive wait), or None while it does anything at all: answers a request,
        streams, holds input or output not yet dealt with, reads a request or its TLS
        handshake, or is closing. Only an idle connection may be closed to make room for
        a new one at GS_MCP_MAX_CONNECTIONS or out of descriptors (Router._evict_idlest),
        after any lingering one."""
        if (self._deadline_kind != "idle" or self.closed or self.busy or self.streaming
                or self.current is not None or self.parser.buffered or self.parser.in_progress
                or self.out or self._close_when_flushed or self._closing or self._peer_eof):
            return None
        return self._deadline - IDLE_KEEPALIVE_SECONDS

    def ungated_since(self):
        """When the request this connection is reading began arriving, while no gate has
        passed any of it (its TLS handshake, a record or head unfinished, or a short body still due
        after its head: nothing authenticated), or None. Such a connection costs its
        sender nothing to open and hold, so it may be closed for room (Router._evict_idlest)
        after any lingering or idle one. Not one reading a body its head's gates let in,
        nor one with a reply still to write."""
        if (self._deadline_kind != "read" or self.closed or self.busy or self.streaming
                or self.current is not None or self._body_admitted or self.out
                or self._close_when_flushed or self._closing or self._peer_eof):
            return None
        if not self._reading_a_request():
            return None
        return self._deadline - self.read_timeout

    def _reading_a_request(self):
        """Whether part of a request has come, and not all of it: of its head or body, or
        of its TLS handshake or of a record (a request's first one, cut)."""
        tls = self.tls
        return self.parser.in_progress or (tls is not None and (not tls.handshake_done or tls.mid_record))

    def eviction_order(self):
        """What Router._evict_idlest closes first for room, least first:
        (0, since) for a lingering connection (its reply is written; closing it costs its
        client at most the reset lingering spares it), (1, since) for an idle one, (2,
        since) for one reading a request no gate has passed (ungated_since), the one
        arriving longest first; None for any other (answering, streaming, reading a body
        its gates let in), which is never closed for room."""
        if self.closed:
            return None
        if self.lingering_since is not None:
            return 0, self.lingering_since
        since = self.idle_since()
        if since is not None:
            return 1, since
        since = self.ungated_since()
        return None if since is None else (2, since)

    def close_unfinished(self, response):
        """Closed for room with its request unfinished (Router._evict_idlest): a plain
        HTTP client is sent `response` (over TLS there may be no session to send it in),
        and what it sent is dropped so that it reads that and EOF, not a reset."""
        self.router.trace_unreadable("closed unfinished to admit a new connection")
        if self.tls is None:
            try:
                send_some(self.sock, response)
                self.sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass
        drop_arrived(self.sock)
        self.close()

    def _set_deadline(self, kind, delay):
        self._deadline_kind = kind
        self._deadline = self.loop.now + delay
        if self._timer is None or self._timer.when > self._deadline:
            if self._timer is not None:
                self._timer.cancel()
            self._timer = self.loop.call_at(self._deadline, self._on_deadline)

    def _cancel_timer(self):
        self._deadline = self._deadline_kind = None

    def _on_deadline(self):
        self._timer = None
        if self._deadline is None or self.closed:
            return
        if self.loop.now < self._deadline:
            self._timer = self.loop.call_at(self._deadline, self._on_deadline)
            return
        kind = self._deadline_kind
        self._deadline = self._deadline_kind = None
        if kind == "linger":
            self.close()   # the client had LINGER_SECONDS to finish writing
            return
        if self.busy:
            return
        if kind == "read":
            if self._reading_a_request():
                self.router.trace_unreadable("timed out after %gs" % self.read_timeout)
                self.close()
        else:
            self.close()

    def drain_and_close(self):
        """Shutdown: answer the requests already received (the app refuses them),
        then close once the replies are written."""
        self._closing = True
        if not self.busy:
            self._next_request()

    def close(self):
        if self.closed:
            return
        self.closed = True
        self._cancel_timer()
        if self._timer is not None:
            self._timer.cancel()
        lost, self.on_stream_lost = self.on_stream_lost, None
        self.loop.remove(self.sock)
        try:
            self.sock.close()
        except OSError:
            pass
        # What was never sent never will be, nor what was never read answered: a call
        # still running holds this connection (its reply's destination), and must not
        # hold a dropped reader's backlog or pipelined input too.
        self.out = bytearray()
        self.parser.discard()
        self.router.connection_closed(self)
        if lost is not None:
            lost()
