"""Control socket: request handling, the status table, and the client against a real
unix socket served by a small test server."""

import json
import os
import socket
import stat
import threading

import pytest

from gsmcpd.config import control_socket_path
from gsmcpd.router import control

SESSIONS = [
    {"id_prefix": "71ff1f5c", "user": "alice", "worker_pid": 4242, "age": 3725.5, "idle": 12.9,
     "in_flight": "tools/call execute_code", "queued": 3, "stream_attached": True, "read_only": False},
    {"id_prefix": "0a1b2c3d", "user": "bob", "worker_pid": 4343, "age": 75, "idle": 75,
     "in_flight": None, "queued": 0, "stream_attached": False, "read_only": True},
]


def test_status_and_ping_requests():
    reply = control.handle_request({"op": "status"}, lambda: SESSIONS)
    assert reply == {"ok": True, "pid": os.getpid(), "sessions": SESSIONS, "log_refusal": None, "log_removed": None}
    assert control.handle_request({"op": "ping"}, lambda: []) == {"ok": True, "pid": os.getpid()}


def test_bad_requests_get_an_error_reply():
    reply = control.handle_request({"op": "shutdown"}, lambda: [])
    assert reply["ok"] is False and "unknown op 'shutdown'" in reply["error"]
    for line in (b"not json\n", b"[1,2]\n", b"\xff\n"):
        answer = json.loads(control.handle_line(line, lambda: []))
        assert answer["ok"] is False and answer["error"]


def test_a_line_nested_past_the_interpreters_limit_gets_an_error_reply():
    # It raised RecursionError out of the router's callback: a traceback, and no reply.
    line = b"[" * (control.MAX_LINE - 1) + b"\n"
    assert json.loads(control.handle_line(line, lambda: [])) == {
        "ok": False, "error": "not a JSON line: nested too deeply"}


def test_handle_line_round_trip():
    out = control.handle_line(b'{"op":"status"}\n', lambda: SESSIONS[:1])
    assert out.endswith(b"\n") and out.count(b"\n") == 1
    assert control.decode(out)["sessions"][0]["user"] == "alice"


def test_durations():
    assert [control.format_duration(s) for s in (None, 0, 59.9, 60, 3599, 3600, 7380)] == \
        ["-", "0s", "59s", "1m00s", "59m59s", "1h00m", "2h03m"]


def test_table_is_aligned_like_gslist():
    lines = control.format_table(SESSIONS).splitlines()
    assert lines[0].split() == ["Session", "User", "Pid", "Age", "Idle", "Stream", "RO", "Queued",
                                "In", "flight"]
    assert lines[1].split()[:8] == ["71ff1f5c", "alice", "4242", "1h02m", "12s", "yes", "no", "3"]
    assert lines[1].endswith("tools/call execute_code")
    assert lines[2].split() == ["0a1b2c3d", "bob", "4343", "1m15s", "1m15s", "no", "yes", "0", "-"]
    column = lines[0].index("User")
    assert lines[1][column:].startswith("alice") and lines[2][column:].startswith("bob")
    assert control.format_table([]) == "no open sessions"


def test_a_user_claim_or_tool_name_with_control_characters_reaches_the_table_escaped_and_cut():
    # Both are chosen by a client (a token's claim, a tools/call name): the table goes to
    # the administrator's terminal, where an escape sequence would act and a newline forge a row.
    forged = dict(SESSIONS[0], user="eve\x1b]52;c;cm0gLXJmIH4K\x07\nfffffff mallory",
                  in_flight="tools/call \x1b[2J" + "x" * 500)
    table = control.format_table([forged])
    assert "\x1b" not in table and "\x07" not in table and len(table.splitlines()) == 2
    row = table.splitlines()[1]
    assert "eve\\x1b]52;c;cm0gLXJmIH4K\\x07\\nfffffff mallory" in row
    assert row.endswith("tools/call \\x1b[2J" + "x" * (control.CELL_CAP - 15) + "...")
    data = json.loads(control.render_status({"ok": True, "pid": 99, "sessions": [forged]}, 8000, as_json=True))
    assert data["sessions"][0]["user"] == forged["user"]       # JSON escapes it, whole


def test_render_status_text_and_json():
    text = control.render_status({"ok": True, "pid": 99, "sessions": SESSIONS}, 8000)
    assert text.splitlines()[0] == "gsmcpd on port 8000 (pid 99): 2 session(s)"
    data = json.loads(control.render_status({"ok": True, "pid": 99, "sessions": []}, 8000,
                                            as_json=True))
    assert data == {"port": 8000, "pid": 99, "sessions": [], "log_refusal": None, "log_removed": None}


REFUSAL = {"file": "/var/log/gsmcpd/gsmcpd-8000.log", "since": 1796115600.0, "reason": "File too large",
           "lines_lost": 12}


def test_a_log_file_refusing_writes_is_in_the_status_while_it_lasts():
    # Said once on stderr, which a detached daemon does not have: status is where it shows.
    reply = json.loads(control.handle_line(b'{"op":"status"}', lambda: [], None, lambda: REFUSAL))
    assert reply["log_refusal"] == REFUSAL
    assert control.handle_request({"op": "ping"}, lambda: [], None, lambda: REFUSAL) == {"ok": True, "pid": os.getpid()}
    lines = control.render_status(reply, 8000).splitlines()
    assert lines[0] == "gsmcpd on port 8000 (pid %d): 0 session(s)" % os.getpid()
    assert lines[1] == ("WARNING: the log file /var/log/gsmcpd/gsmcpd-8000.log refuses writes since "
                        f"{control.local_time(REFUSAL['since'])} (File too large): 12 line(s) lost so far")
    assert lines[2] == "no open sessions"
    assert json.loads(control.render_status(reply, 8000, as_json=True))["log_refusal"] == REFUSAL
    assert "WARNING" not in control.render_status(dict(reply, log_refusal=None), 8000)
    assert "WARNING" not in control.render_status({"ok": True, "pid": 9, "sessions": []}, 8000)   # an older server


def test_a_log_refusal_reaches_the_terminal_escaped():
    forged = dict(REFUSAL, file="/tmp/x\x1b[2J.log", reason="\x1b]0;owned\x07" + "y" * 200, since="soon")
    line = control.render_status({"ok": True, "pid": 9, "sessions": [], "log_refusal": forged}, 8000).splitlines()[1]
    assert "\x1b" not in line and "\x07" not in line
    assert "/tmp/x\\x1b[2J.log" in line and "since ? (" in line and line.endswith("...): 12 line(s) lost so far")


@pytest.fixture
def served(tmp_path):
    yield from _serving(tmp_path)


def _serving(state_dir):
    """A tiny blocking server over control.open_listener, answering with handle_line."""
    path = control_socket_path(state_dir, 8123)
    listener = control.open_listener(path)
    listener.setblocking(True)
    stop = threading.Event()

    def serve():
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                data = b""
                while not data.endswith(b"\n"):
                    chunk = conn.recv(4096)
                    if not chunk:
                        break
                    data += chunk
                conn.sendall(control.handle_line(data, lambda: SESSIONS))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield path
    stop.set()
    listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
    listener.close()
    thread.join(timeout=5)


def test_listener_socket_is_private(served):
    mode = os.stat(served).st_mode
    assert stat.S_ISSOCK(mode) and stat.S_IMODE(mode) == 0o600


def test_client_queries_a_live_server(served, tmp_path):
    reply = control.query(tmp_path, 8123)
    assert reply["sessions"] == SESSIONS and reply["pid"] == os.getpid()
    assert control.query(tmp_path, 8123, {"op": "ping"}) == {"ok": True, "pid": os.getpid()}
    with pytest.raises(control.ControlError, match="server refused: unknown op"):
        control.query(tmp_path, 8123, {"op": "nope"})


def test_a_refusal_is_told_from_no_answer(served, tmp_path):
    # `status`/`end` look for a gsmcpd serving the port elsewhere only when none answered.
    with pytest.raises(control.ServerRefused):
        control.query(tmp_path, 8123, {"op": "nope"})
    with pytest.raises(control.ControlError) as missing:
        control.query(tmp_path, 8124)
    assert not isinstance(missing.value, control.ServerRefused)


def test_a_state_dir_too_deep_for_a_socket_address_still_serves_and_is_queried(tmp_path):
    # sun_path holds 108 bytes: a socket path longer than that cannot be bound or
    # connected to by name (the server refused to start, blaming its TCP address).
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    assert len(os.fsencode(control_socket_path(deep, 8123))) > 108
    server = _serving(deep)
    path = next(server)
    try:
        mode = os.stat(path).st_mode
        assert stat.S_ISSOCK(mode) and stat.S_IMODE(mode) == 0o600
        assert control.query(deep, 8123, {"op": "ping"}) == {"ok": True, "pid": os.getpid()}
    finally:
        next(server, None)
    with pytest.raises(control.ControlError, match="stale socket"):
        control.query(deep, 8123)


def test_client_without_a_server(tmp_path):
    with pytest.raises(control.ControlError, match="is a server running on port 8124"):
        control.query(tmp_path, 8124)
    stale = tmp_path / "gsmcpd-8124.ctl"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(stale))
    sock.close()  # the file stays, nobody listens
    with pytest.raises(control.ControlError, match="stale socket"):
        control.query(tmp_path, 8124)


def test_open_listener_replaces_a_leftover_file(tmp_path):
    path = tmp_path / "gsmcpd-1.ctl"
    path.write_text("leftover")
    listener = control.open_listener(path)
    try:
        assert stat.S_ISSOCK(os.stat(path).st_mode)
    finally:
        listener.close()


# -- ending a session ----------------------------------------------------------------

def test_end_names_a_session_by_its_id_or_a_prefix_of_eight_or_more_hex_digits():
    asked = []

    def end(prefix):
        asked.append(prefix)
        return SESSIONS[0]
    reply = control.handle_request({"op": "end", "session": "71FF1F5C"}, lambda: [], end)
    assert reply == {"ok": True, "ended": SESSIONS[0]} and asked == ["71ff1f5c"]
    for bad in ("71ff1f5", "71ff1f5cz", "", None, 7, "a" * 33):
        refused = json.loads(control.handle_line(json.dumps({"op": "end", "session": bad}).encode(), lambda: [], end))
        assert refused["ok"] is False and "first 8 or more hex digits" in refused["error"], bad
    assert asked == ["71ff1f5c"]   # nothing malformed reached the router


def test_a_session_end_cannot_make_is_refused_in_its_words():
    def end(prefix):
        raise control.ControlError("no open session %s" % prefix)
    reply = json.loads(control.handle_line(b'{"op":"end","session":"0a1b2c3d"}', lambda: [], end))
    assert reply == {"ok": False, "error": "no open session 0a1b2c3d"}
    # A server with nothing to end with does not know the op.
    assert "unknown op 'end'" in control.handle_request({"op": "end", "session": "0a1b2c3d"}, lambda: [])["error"]


def test_a_line_of_the_limit_or_more_is_refused_as_too_long_not_as_bad_json():
    # It was "not a JSON line: Expecting value ..." for a line the endpoint cut at 64 KiB.
    reply = json.loads(control.handle_line(b"x" * control.MAX_LINE, lambda: []))
    assert reply == {"ok": False, "error": "request line longer than 64 KiB"}
    assert json.loads(control.handle_line(b'{"op":"ping"}' + b" " * (control.MAX_LINE - 20), lambda: []))["ok"]


def test_a_log_file_removed_while_open_is_in_the_status_escaped():
    # Its lines went to a file no path reaches, and no word of it anywhere.
    path = "/var/log/gsmcpd/gsmcpd-8000.log"
    reply = json.loads(control.handle_line(b'{"op":"status"}', lambda: [], None, lambda: None, lambda: path))
    assert reply["log_removed"] == path
    lines = control.render_status(reply, 8000).splitlines()
    assert lines[1] == ("WARNING: the log file /var/log/gsmcpd/gsmcpd-8000.log, or its directory, was removed "
                        "while open: its lines go to a file no path reaches, whose space is not freed; make its "
                        "directory if it is gone, then kill -HUP %d to open it anew" % os.getpid())
    assert json.loads(control.render_status(reply, 8000, as_json=True))["log_removed"] == path
    assert "WARNING" not in control.render_status(dict(reply, log_removed=None), 8000)
    forged = control.render_status(dict(reply, log_removed="/tmp/x\x1b[2J.log", pid="1\x1b"), 8000).splitlines()[1]
    assert "\x1b" not in forged and "/tmp/x\\x1b[2J.log" in forged and "kill -HUP its pid" in forged
