"""The router's end of the local control socket (`python -m gsmcpd status|end`).

Each control client sends one JSON line and gets one back; the protocol itself is
pure and lives in control.py. Here we only accept, read a bounded line without
blocking, answer and close.
"""

import logging
import socket

from gsmcpd.config import control_socket_path
from gsmcpd.logfile import log_file_refusal, log_file_removed
from gsmcpd.router import control
from gsmcpd.router.loop import ACCEPT_PAUSE, recv_some
from gsmcpd.router.trace import shown_user

log = logging.getLogger("gsmcpd.control")

READ_TIMEOUT = 5.0


class ControlEndpoint:
    def __init__(self, router):
        self.router = router
        self.loop = router.loop
        self.path = control_socket_path(router.config.state_dir, router.port)
        self.sock = control.open_listener(self.path)
        self.loop.add_reader(self.sock, self._accept)

    def _accept(self):
        try:
            client, _ = self.sock.accept()
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            # Out of descriptors: raised out of the callback each turn, it was a traceback
            # logged in a spin for as long as it lasted.
            log.warning("control socket: accept failed: %s; pausing for %gs", exc, ACCEPT_PAUSE)
            self.loop.pause_reader(self.sock, self._accept, ACCEPT_PAUSE)
            return
        client.setblocking(False)
        buf = bytearray()
        out = bytearray()
        timer = self.loop.call_later(READ_TIMEOUT, lambda: self._drop(client))

        def writable():
            try:
                del out[:client.send(out)]
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                out.clear()
            if not out:
                # The reply is out: say so (EOF), and read what the peer still sends until
                # it closes (the timer bounds it). Closed with input unread, the socket
                # would reset, and a peer that sent a line too long lose its reply.
                try:
                    client.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                self.loop.set_interest(client, discard, None)

        def discard():
            if recv_some(client, 65536) == b"":
                timer.cancel()
                self._drop(client)

        def readable():
            data = recv_some(client, 4096)
            if data is None:
                return
            buf.extend(data)
            if data and b"\n" not in buf and len(buf) < control.MAX_LINE:
                return
            out.extend(control.handle_line(bytes(buf).split(b"\n", 1)[0], self.snapshot, self.end_session,
                                           log_file_refusal, log_file_removed))
            # the reply goes out as the peer reads it; the timer still bounds the exchange
            self.loop.set_interest(client, None, writable)
        self.loop.add_reader(client, readable)

    def _drop(self, client):
        self.loop.remove(client)
        client.close()

    def snapshot(self):
        return [self._row(session) for session in self.router.sessions.by_id.values()]

    def _row(self, session):
        now = self.loop.now
        call = session.inflight
        return {
            "id_prefix": session.short,
            "user": session.user,
            "worker_pid": session.worker.pid,
            "age": now - session.created,
            "idle": now - session.last_activity,
            "in_flight": call.describe() if call is not None else None,
            "queued": len(session.queue),
            "stream_attached": session.stream is not None,
            "read_only": session.read_only,
            "id": session.id,   # whole, for `gsmcpd end` when two ids share a prefix (0600 socket)
        }

    def end_session(self, prefix):
        """`gsmcpd end`: the one session whose id starts with `prefix`, ended as a DELETE
        would end it; its row as it was."""
        found = [s for s in self.router.sessions.by_id.values() if s.id.startswith(prefix)]
        if len(found) != 1:
            raise control.ControlError(f"no open session {prefix}" if not found else
                                       f"{len(found)} sessions start with {prefix}: give more of the id "
                                       f"(status --json shows each whole)")
        session = found[0]
        row = self._row(session)
        row["answered"] = session.inflight is not None and session.inflight.awaited   # as SessionManager._fail
        log.warning("session %s of %s: ending it, as asked on the control socket", row["id_prefix"], shown_user(row["user"]))
        self.router.sessions.end(session, "ended by the server's administrator (gsmcpd end)")
        return row

    def close(self):
        self.loop.remove(self.sock)
        self.sock.close()
        try:
            self.path.unlink()
        except OSError:
            pass

