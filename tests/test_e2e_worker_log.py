"""End-to-end: a worker's own log records reach the daemon's log through the router,
marked as that worker's, escaped, and rate-limited (gsmcpd/router/worker_log.py)."""

import re
import secrets
import threading

import pytest

from helpers import Daemon, tool_text, wait_until
from helpers import open_session as session

LOGGER = "import logging, os\nlog = logging.getLogger('gsmcpd.worker')\n"
DROPPED = re.compile(r" WARNING (worker \d+ session \w+ user \S+): (\d+) log records? dropped \(")


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    with Daemon(tmp_path_factory.mktemp("worker-log"), env={"GS_MCP_SPARE_WORKERS": "2"}) as running:
        yield running


def who(client):
    pid = int(tool_text(client.tool("execute_code", code="import os; os.getpid()")))
    return "worker %d session %s user " % (pid, client.session[:8])


def lines_of(daemon, prefix):
    return [line for line in daemon.log_text().splitlines() if prefix in line]


def test_a_record_from_the_workers_stderr_reaches_the_log_with_the_workers_prefix(daemon):
    # A real path: what a thread of the code writes to stderr after its call is the
    # worker's own output, which it logs (during a call, execute_code captures it).
    client, tag = session(daemon), secrets.token_hex(4)
    prefix = who(client)
    code = ("import io, sys, threading, time\ndef late():\n"
            "    while isinstance(sys.stderr, io.StringIO):   # the call's capture, until it returns\n"
            "        time.sleep(0.01)\n    print('stray %s', file=sys.stderr)\n"
            "threading.Thread(target=late).start()" % tag)
    assert not client.tool("execute_code", code=code).get("isError")
    assert wait_until(lambda: any(line.endswith(" logged: output: stray " + tag)
                                  for line in lines_of(daemon, " WARNING " + prefix)))


def test_a_traceback_and_a_forged_line_stay_one_escaped_line(daemon):
    client, tag = session(daemon), secrets.token_hex(4)
    prefix = who(client)
    forged = "2026-01-01 00:00:00,000 ERROR forged %s" % tag
    code = LOGGER + ("log.warning('x\\n%s\\x1b[2J\\r\\u2028')\ntry:\n    1 / 0\n"
                     "except ZeroDivisionError:\n    log.exception('failed %s')\n" % (forged, tag))
    assert not client.tool("execute_code", code=code).get("isError")
    assert wait_until(lambda: len(lines_of(daemon, tag)) == 2)
    warned, failed = lines_of(daemon, tag)
    assert prefix + "root logged: x\\n" + forged + "\\x1b[2J\\r\\u2028" in warned
    assert " ERROR " + prefix in failed and "failed %s\\nTraceback (most recent call last):\\n" % tag in failed
    assert failed.endswith("ZeroDivisionError: division by zero")
    text = daemon.log_text()
    assert "\n" + forged not in text and "\x1b" not in text and "\u2028" not in text


def test_a_bidirectional_override_is_escaped_so_the_line_shows_as_written(daemon):
    # Raw, U+202E would show the rest of the line reversed (text a reader takes for another).
    client, tag = session(daemon), secrets.token_hex(4)
    prefix = who(client)
    code = LOGGER + "log.warning('%s \\u202e\\u2066gnp.eman')\n" % tag
    assert not client.tool("execute_code", code=code).get("isError")
    assert wait_until(lambda: len(lines_of(daemon, tag)) == 1)
    assert lines_of(daemon, tag)[0].endswith(prefix + "root logged: %s \\u202e\\u2066gnp.eman" % tag)
    assert "\u202e" not in daemon.log_text()


def test_a_flood_is_rate_limited_counted_and_the_router_serves_others_meanwhile(daemon, tmp_path):
    flooder, other = session(daemon), session(daemon)
    prefix = who(flooder)
    flag = tmp_path / "enough"
    code = LOGGER + ("n = 0\nwhile n < 10000 or not os.path.exists(%r):\n"
                     "    log.error('flood %%d', n)\n    n += 1\nn" % str(flag))
    answer = {}
    flooding = threading.Thread(target=lambda: answer.update(n=flooder.tool("execute_code", code=code)))
    flooding.start()
    try:
        assert wait_until(lambda: lines_of(daemon, prefix))        # the flood has begun
        for i in range(5):                                          # another session is answered meanwhile
            assert tool_text(other.tool("execute_code", code="%d * 7" % i)) == str(i * 7)
    finally:
        flag.touch()
        flooding.join(60)
    sent = int(tool_text(answer["n"]))
    assert flooder.delete().status == 200                           # its end reports the rest dropped
    label = prefix[:-len(" user ")]

    def dropped():
        return sum(int(m[2]) for m in map(DROPPED.search, daemon.log_text().splitlines())
                   if m and m[1].startswith(label))
    written = [line for line in lines_of(daemon, prefix) if " logged: flood " in line]
    assert sent >= 10000 and len(written) < 1000                   # a burst of 20, then 2 a second
    assert wait_until(lambda: len(written) + dropped() == sent), (len(written), dropped(), sent)


@pytest.mark.parametrize("frame, why", [
    ({"op": "log", "level": 30, "message": "m"}, "log frame without a level name"),
    # Frames only the user's code sends, perhaps in a loop: never a log line each.
    ({"op": "reply", "seq": 999999, "message": {}}, "a reply for no call in flight"),
    ({"op": "bogus"}, "unknown op 'bogus'"),
])
def test_a_malformed_frame_ends_that_worker_as_any_bad_frame_and_others_go_on(daemon, frame, why):
    client, other = session(daemon), session(daemon)
    code = ("import os, socket, json, time\nfor fd in range(3, 64):\n    try:\n"
            "        s = socket.socket(fileno=os.dup(fd))\n    except OSError:\n        continue\n"
            "    if s.family == socket.AF_UNIX:\n"
            "        body = json.dumps(%r).encode()\n"
            "        s.sendall(len(body).to_bytes(4, 'big') + body)\n"
            "    s.close()\ntime.sleep(5)\n" % (frame,))
    reply = client.call("tools/call", {"name": "execute_code", "arguments": {"code": code}}).json()
    assert reply["error"]["code"] == -32003
    assert wait_until(lambda: "sent a bad frame (%s); stopping it" % why in daemon.log_text())
    assert tool_text(other.tool("execute_code", code="'still here'")) == "'still here'"


def test_a_huge_bad_frames_reason_is_cut_short_in_the_error_and_the_log(daemon):
    # The frame's log level, 200 KiB of the code's choosing, went whole into both.
    client = session(daemon)
    pid = int(tool_text(client.tool("execute_code", code="import os; os.getpid()")))
    code = ("import os, socket, json, time\nfor fd in range(3, 64):\n    try:\n"
            "        s = socket.socket(fileno=os.dup(fd))\n    except OSError:\n        continue\n"
            "    if s.family == socket.AF_UNIX:\n"
            "        body = json.dumps({'op': 'log', 'level': 'A' * 200000, 'message': 'm'}).encode()\n"
            "        s.sendall(len(body).to_bytes(4, 'big') + body)\n"
            "    s.close()\ntime.sleep(5)\n")
    error = client.call("tools/call", {"name": "execute_code", "arguments": {"code": code}}).json()["error"]
    cut = "log frame with level '" + "A" * (200 - len("log frame with level '")) + "..."
    said = "it sent a bad frame (%s)" % cut
    assert error == {"code": -32003, "message": "session ended: worker %d was stopped by the server: %s" % (pid, said),
                     "data": {"exit": {"stopped": said}}}
    assert wait_until(lambda: "worker %d sent a bad frame (%s); stopping it" % (pid, cut) in daemon.log_text())
    assert "A" * 201 not in daemon.log_text()


def test_a_forged_prepare_refusal_from_the_users_code_cannot_forge_a_log_line(daemon):
    # The frame socket is the user's code's to write on: a "prepared" refusal it sends ends
    # its own session, and its text reaches the log escaped and cut, one line.
    client, other, tag = session(daemon), session(daemon), secrets.token_hex(4)
    forged = "2026-01-01 00:00:00,000 WARNING gsmcpd.auth forged %s" % tag
    code = ("import os, socket, json\nfor fd in range(3, 64):\n    try:\n"
            "        s = socket.socket(fileno=os.dup(fd))\n    except OSError:\n        continue\n"
            "    if s.family == socket.AF_UNIX:\n"
            "        body = json.dumps({'op': 'prepared', 'ok': False, 'error': %r}).encode()\n"
            "        s.sendall(len(body).to_bytes(4, 'big') + body)\n"
            "    s.close()\n" % ("x\n" + forged + "\x1b[2J" + "y" * 5000))
    client.call("tools/call", {"name": "execute_code", "arguments": {"code": code}})
    assert wait_until(lambda: "worker refused to prepare: x\\n" + forged + "\\x1b[2J" in daemon.log_text())
    text = daemon.log_text()
    assert "\n" + forged not in text and "\x1b" not in text and "y" * 1100 not in text
    assert tool_text(other.tool("execute_code", code="'still here'")) == "'still here'"
