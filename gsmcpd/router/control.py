"""Local control socket: `<state_dir>/gsmcpd-<port>.ctl`, a unix stream socket, mode 0600.

One JSON request line -> one JSON reply line, then the server closes.  Requests:
  {"op": "status"} -> {"ok": true, "pid": N, "sessions": [session dict, ...],
                       "log_refusal": null, or while the log file refuses writes
                       {"file", "since" (epoch seconds), "reason", "lines_lost"},
                       "log_removed": null, or the log file's path while the file it
                       writes has been removed}
  {"op": "ping"}   -> {"ok": true, "pid": N}
  {"op": "end", "session": "<id or its first 8+ hex digits>"}
                   -> {"ok": true, "ended": session dict}: the session is ended as a DELETE
                      would, its call in flight answered "session ended: ..."
Anything else    -> {"ok": false, "error": "..."}.
A session dict: id_prefix, user, worker_pid, age, idle (seconds), in_flight (method or
tool name, or null; cut and escaped: Call.describe), queued (requests waiting behind it, at most GS_MCP_MAX_QUEUED),
stream_attached, read_only, id (whole: the socket is its owner's alone); `end`'s adds answered (whether a call in flight was answered "session ended").

The encode/decode/handle functions are pure; `open_listener` (non-blocking, for the
router's selector) and `query` (blocking, for `python -m gsmcpd status`) do the I/O.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
from pathlib import Path
from typing import Callable, Iterable

from gsmcpd.logfile import local_time
from gsmcpd.router.trace import escape, shown

MAX_LINE = 64 * 1024
SUN_PATH_MAX = 107   # sockaddr_un's sun_path holds 108 bytes, the last one a NUL
_HEX = re.compile(r"[0-9a-fA-F]+")
SESSION_FIELDS = ("id_prefix", "user", "worker_pid", "age", "idle", "in_flight", "queued",
                  "stream_attached", "read_only", "id")


class ControlError(Exception):
    """A control request or reply that cannot be used; the message says why."""


class ServerRefused(ControlError):
    """The daemon answered, refusing the request (no such session, a malformed one)."""


class NotPermitted(ControlError):
    """This account may not reach or talk to the daemon's socket: the daemon is there,
    another account's."""


def encode(obj: dict) -> bytes:
    return json.dumps(obj, separators=(",", ":"), default=str).encode("utf-8") + b"\n"


def decode(line: bytes) -> dict:
    try:
        obj = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ControlError(f"not a JSON line: {exc}") from None
    except RecursionError:   # a line within MAX_LINE nests far past the interpreter's limit
        raise ControlError("not a JSON line: nested too deeply") from None
    if not isinstance(obj, dict):
        raise ControlError("not a JSON object")
    return obj


def session_prefix(text) -> str:
    """A session id or its first 8 or more hex digits, lower-case; ControlError if not."""
    if not isinstance(text, str) or not 8 <= len(text) <= 32 or not _HEX.fullmatch(text):
        raise ControlError(f"expected a session id or its first 8 or more hex digits "
                           f"(as status shows them), got {text!r}")
    return text.lower()


def handle_request(request: dict, snapshot_fn: Callable[[], list[dict]],
                   end_fn: Callable[[str], dict] | None = None,
                   log_refusal_fn: Callable[[], dict | None] = lambda: None,
                   log_removed_fn: Callable[[], str | None] = lambda: None) -> dict:
    """`end_fn(prefix)`: end the one session whose id starts with `prefix`, returning its
    session dict; ControlError (no such session, or more than one) otherwise.
    `log_refusal_fn()`: the log file's refusal of writes, if it refuses them now
    (gsmcpd.logfile.log_file_refusal); `log_removed_fn()`: its path if the file was removed
    (gsmcpd.logfile.log_file_removed)."""
    op = request.get("op")
    if op == "ping":
        return {"ok": True, "pid": os.getpid()}
    if op == "status":
        return {"ok": True, "pid": os.getpid(), "sessions": list(snapshot_fn()),
                "log_refusal": log_refusal_fn(), "log_removed": log_removed_fn()}
    if op == "end" and end_fn is not None:
        return {"ok": True, "ended": end_fn(session_prefix(request.get("session")))}
    return {"ok": False, "error": f"unknown op {op!r} (known: status, ping, end)"}


def handle_line(line: bytes, snapshot_fn: Callable[[], list[dict]],
                end_fn: Callable[[str], dict] | None = None,
                log_refusal_fn: Callable[[], dict | None] = lambda: None,
                log_removed_fn: Callable[[], str | None] = lambda: None) -> bytes:
    """The whole server side: one request line in, one encoded reply line out (a line of
    MAX_LINE bytes or more is all the endpoint reads of one with no newline in reach)."""
    try:
        if len(line.rstrip(b"\r\n")) >= MAX_LINE:
            raise ControlError(f"request line longer than {MAX_LINE // 1024} KiB")
        reply = handle_request(decode(line.strip()), snapshot_fn, end_fn, log_refusal_fn, log_removed_fn)
    except ControlError as exc:
        reply = {"ok": False, "error": str(exc)}
    return encode(reply)


# --- table ---------------------------------------------------------------------------

def format_duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    total = int(seconds)
    if total < 60:
        return f"{total}s"
    if total < 3600:
        return f"{total // 60}m{total % 60:02d}s"
    return f"{total // 3600}h{total % 3600 // 60:02d}m"


def cell(session: dict, field: str) -> str:
    """One field of a session dict as the table (and `gsmcpd end`) shows it."""
    value = session.get(field)
    if field in ("age", "idle"):
        return format_duration(value)
    if field in ("stream_attached", "read_only"):
        return "yes" if value else "no"
    if field == "queued":
        return str(value) if isinstance(value, int) else "-"
    # A user claim or a client's method or tool name: never raw to the admin's terminal.
    return "-" if value is None else shown(value, CELL_CAP)


CELL_CAP = 64   # characters of a client-chosen value a row shows
_COLUMNS = (("Session", "id_prefix"), ("User", "user"), ("Pid", "worker_pid"),
            ("Age", "age"), ("Idle", "idle"), ("Stream", "stream_attached"),
            ("RO", "read_only"), ("Queued", "queued"), ("In flight", "in_flight"))


def format_table(sessions: Iterable[dict]) -> str:
    """A gslist-style table, one row per session, columns aligned."""
    rows = [[title for title, _ in _COLUMNS]]
    rows += [[cell(session, field) for _, field in _COLUMNS] for session in sessions]
    if len(rows) == 1:
        return "no open sessions"
    widths = [max(len(row[i]) for row in rows) for i in range(len(_COLUMNS))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip()
             for row in rows]
    return "\n".join(lines)


# --- I/O -----------------------------------------------------------------------------

@contextlib.contextmanager
def _address(path: Path):
    """`path` as an AF_UNIX address. A state directory deep enough to push the socket's
    path past sun_path's 108 bytes (a checkout's var/ deep in a home directory) is
    reached through a descriptor of the directory instead (Linux /proc/self/fd), so
    such a server still starts and `status`, `end` and `stop` still reach it."""
    if len(os.fsencode(path)) <= SUN_PATH_MAX:
        yield str(path)
        return
    fd = os.open(path.parent, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        yield f"/proc/self/fd/{fd}/{path.name}"
    finally:
        os.close(fd)


def open_listener(path: Path) -> socket.socket:
    """A non-blocking listening unix socket at `path`, mode 0600 from birth.

    A leftover socket file is replaced: the pidfile, not this file, says whether a
    server is running, and the caller holds it.
    """
    path = Path(path)
    if path.exists() or path.is_symlink():
        path.unlink()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_umask = os.umask(0o177)  # no window in which another user could connect
    try:
        with _address(path) as address:
            sock.bind(address)
    finally:
        os.umask(old_umask)
    os.chmod(path, 0o600)
    sock.listen(8)
    sock.setblocking(False)
    return sock


def query(state_dir: Path, port: int, request: dict | None = None,
          timeout: float = 5.0) -> dict:
    """Ask the daemon on `port`; raises ControlError with a sentence a user can act on."""
    # Here, not at the top: the workers' tmpdirs read SUN_PATH_MAX from this module, and
    # the forkserver would import the config for it.
    from gsmcpd.config import control_socket_path
    path = control_socket_path(state_dir, port)
    try:
        path.stat()
    except PermissionError:   # another account's state directory, which only it may enter
        raise NotPermitted(f"no permission to reach {path}: run this as the account the "
                           f"server on port {port} runs as, or as root") from None
    except OSError:
        raise ControlError(f"no gsmcpd control socket at {path} "
                           f"(is a server running on port {port}?)") from None
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        try:
            with _address(path) as address:
                sock.connect(address)
            sock.sendall(encode(request or {"op": "status"}))
            data = _read_line(sock)
        except ConnectionRefusedError:
            raise ControlError(f"nothing answers on {path} (stale socket: the server on "
                               f"port {port} is not running)") from None
        except PermissionError:   # its socket (0600) in a directory others may search
            raise NotPermitted(f"no permission to talk to {path}: run this as the account the "
                               f"server on port {port} runs as, or as root") from None
        except socket.timeout:
            raise ControlError(f"no reply from {path} within {timeout:g}s") from None
        except OSError as exc:
            raise ControlError(f"cannot talk to {path}: {exc.strerror or exc}") from None
    reply = decode(data)
    if not reply.get("ok"):
        raise ServerRefused(f"server refused: {reply.get('error', 'no reason given')}")
    return reply


def _read_line(sock: socket.socket) -> bytes:
    data = b""
    while b"\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
        if len(data) > 64 * MAX_LINE:
            raise ControlError("reply too long")
    if not data:
        raise ControlError("the server closed the control connection without replying")
    return data.split(b"\n", 1)[0]


def render_status(reply: dict, port: int, as_json: bool = False) -> str:
    sessions = reply.get("sessions", [])
    refusal, removed = reply.get("log_refusal"), reply.get("log_removed")
    if as_json:
        return json.dumps({"port": port, "pid": reply.get("pid"), "sessions": sessions,
                           "log_refusal": refusal, "log_removed": removed}, indent=2)
    head = f"gsmcpd on port {port} (pid {reply.get('pid')}): {len(sessions)} session(s)"
    if isinstance(refusal, dict):
        head += "\n" + format_log_refusal(refusal)
    if isinstance(removed, str):
        head += "\n" + format_log_removed(removed, reply.get("pid"))
    return head + "\n" + format_table(sessions)


def format_log_removed(path: str, pid) -> str:
    """The status line of a log file removed while the daemon writes it."""
    return (f"WARNING: the log file {escape(path)}, or its directory, was removed while open: its "
            "lines go to a file no path reaches, whose space is not freed; make its directory "
            f"if it is gone, then kill -HUP {pid if isinstance(pid, int) else 'its pid'} to open it anew")


def format_log_refusal(refusal: dict) -> str:
    """The status line of a log file refusing writes (a detached daemon's only word of it)."""
    since = refusal.get("since")
    when = local_time(since) if isinstance(since, (int, float)) else "?"
    return (f"WARNING: the log file {escape(str(refusal.get('file')))} refuses writes since {when} "
            f"({shown(refusal.get('reason'), CELL_CAP)}): {refusal.get('lines_lost')} line(s) lost so far")

