"""The real worker process over a real socketpair: frames, breaks, progress, exit paths."""

import functools
import json
import multiprocessing
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from gsmcpd.router.workers import PRELOAD
from gsmcpd.wire import frames
from gsmcpd.wire.break_signals import HARD_BREAK_SIGNAL, SOFT_BREAK_SIGNAL
from gsmcpd.worker import main as worker_main
from helpers import REPO, wait_until
from worker_targets import (run_as_spawned, run_under_a_data_limit, run_with_its_view_read_held,
                            run_with_sigint_ignored, run_without_pidfds)

CONTEXT = multiprocessing.get_context("forkserver")
# The forkserver is one per test process: whichever module starts it first, it must be
# the router's (a subreaper, preloaded), or a later module's tests of orphans fail.
CONTEXT.set_forkserver_preload(PRELOAD)
WAIT = 20   # seconds before a test gives up on an expected frame (never asserted on)

SESSION = {"session_id": "sid-1", "user": "tester", "read_only": False,
           "toolsets": ["execution", "bench"], "worker_class": None, "server_name": None,
           "server_version": None, "server_title": None, "image": None, "account": None}


class Channel:
    """The router's end: one worker process and its frame socket."""

    def __init__(self, router_pid=None, target=run_as_spawned):
        self.sock, theirs = socket.socketpair()
        self.process = CONTEXT.Process(target=target,
                                       args=(theirs, router_pid or os.getpid()), daemon=True)
        self.process.start()
        theirs.close()
        self.sock.settimeout(WAIT)
        self.decoder = frames.FrameDecoder()
        self.frames = []
        self.seq = 0

    def send(self, frame):
        self.sock.sendall(frames.encode(frame))

    def receive(self):
        while not self.frames:
            data = self.sock.recv(65536)
            if not data:
                raise EOFError("worker closed its socket")
            self.frames += self.decoder.feed(data)
        return self.frames.pop(0)

    def prepare(self, **overrides):
        self.send({"op": "prepare", "session": {**SESSION, **overrides}})
        return self.receive()

    def start_call(self, method, params=None, request_id=None):
        self.seq += 1
        message = {"jsonrpc": "2.0", "id": request_id or f"r{self.seq}", "method": method}
        if params is not None:
            message["params"] = params
        self.send({"op": "call", "seq": self.seq, "message": message})
        return self.seq

    def execute(self, code, token=None):
        params = {"name": "execute_code", "arguments": {"code": code}}
        if token is not None:
            params["_meta"] = {"progressToken": token}
        return self.start_call("tools/call", params)

    def running(self, code):
        """The call's seq once `code` has called progress(1), where the test wants a
        break to land."""
        seq = self.execute(code, token="t")
        assert self.notified(seq)["progress"] == 1
        return seq

    def reply(self, seq):
        frame = self.receive()
        assert frame["op"] == "reply" and frame["seq"] == seq, frame
        return frame["message"]

    def notified(self, seq):
        frame = self.receive()
        assert frame["op"] == "notify" and frame["seq"] == seq, frame
        return frame["message"]["params"]

    def signal(self, signum):
        os.kill(self.process.pid, signum)

    def close(self):
        self.sock.close()
        if self.process.is_alive():
            self.process.kill()
        self.process.join(WAIT)


@pytest.fixture
def worker():
    channel = Channel()
    assert channel.prepare() == {"op": "prepared", "ok": True, "pid": channel.process.pid}
    yield channel
    channel.close()


def text_of(response):
    return response["result"]["content"][0]["text"]


def test_initialize_tools_list_and_execute_code(worker):
    init = worker.reply(worker.start_call("initialize", {"protocolVersion": "2025-06-18"}, "init"))
    assert init["id"] == "init"
    assert init["result"]["serverInfo"]["name"] == "gsmcpd"
    tools = worker.reply(worker.start_call("tools/list"))["result"]["tools"]
    assert [t["name"] for t in tools] == ["echo", "execute_code"]
    assert text_of(worker.reply(worker.execute("import os\nmine = os.getpid()\nprint('hi')\nmine"))) \
        == f"hi\n{worker.process.pid}"
    assert text_of(worker.reply(worker.execute("mine + 1"))) == str(worker.process.pid + 1)


def test_notification_call_gets_a_null_reply(worker):
    worker.seq += 1
    worker.send({"op": "call", "seq": worker.seq,
                 "message": {"jsonrpc": "2.0", "method": "notifications/initialized"}})
    assert worker.reply(worker.seq) is None


def test_progress_notifies_arrive_before_the_reply(worker):
    seq = worker.execute("for step in range(1, 4):\n    progress(step, 3, f'step {step}')\n'done'",
                         token="tok-7")
    for step in (1, 2, 3):
        assert worker.notified(seq) == {"progressToken": "tok-7", "progress": step, "total": 3,
                                        "message": f"step {step}"}
    assert text_of(worker.reply(seq)) == "'done'"


def test_progress_without_token_sends_nothing(worker):
    seq = worker.execute("progress(1, 2)")
    assert text_of(worker.reply(seq)) == "False"


# Both threads count on one counter: every value is new, but a thread that draws one and
# is overtaken before it sends finds it no longer above the last sent, and it is dropped;
# `sent` keeps what progress() says of each (True: sent).
SPAM = ("import itertools\ntick = itertools.count(1)\nsent = []\n"
        "def spam(mark):\n    for i in range(50):\n"
        "        sent.append(progress(next(tick), message=mark * 100000))\n")


def frames_until_reply(worker, seq):
    """The notify frames before call `seq`'s reply (every frame must decode), and the reply."""
    notified = []
    while True:
        frame = worker.receive()
        if frame["op"] == "reply":
            assert frame["seq"] == seq, frame
            return notified, frame["message"]
        notified.append(frame)


def test_progress_from_two_threads_arrives_in_whole_frames(worker):
    code = ("import threading\n" + SPAM +
            "ts = [threading.Thread(target=spam, args=(m,)) for m in 'ab']\n"
            "[t.start() for t in ts]; [t.join() for t in ts]\n(len(sent), sum(sent))")
    seq = worker.execute(code, token="t")
    notified, reply = frames_until_reply(worker, seq)
    params = [f["message"]["params"] for f in notified]
    messages = [p["message"] for p in params]
    assert text_of(reply) == "(100, %d)" % len(messages)   # each one said sent arrived
    assert {m[0] for m in messages} <= {"a", "b"}
    assert {m.count(m[0]) for m in messages} == {100000}
    values = [p["progress"] for p in params]
    assert values == sorted(set(values))               # each above the last, as MCP requires


def test_progress_that_does_not_increase_is_not_sent(worker):
    seq = worker.execute("[progress(1), progress(1, message='again'), progress(0.5), progress(2, 4)]",
                         token="t")
    notified, reply = frames_until_reply(worker, seq)
    assert text_of(reply) == "[True, False, False, True]"
    assert [f["message"]["params"]["progress"] for f in notified] == [1, 2]
    # A new call starts afresh.
    seq = worker.execute("progress(1)\n'y'", token="u")
    notified, _ = frames_until_reply(worker, seq)
    assert [f["message"]["params"]["progress"] for f in notified] == [1]


def test_a_thread_left_from_an_earlier_call_reports_nothing_into_a_later_one(worker):
    started = ("import threading\n" + SPAM + "go = threading.Event()\n"
               "def chatter():\n    go.wait()\n    spam('a')\n"
               "left = threading.Thread(target=chatter)\nleft.start()\n'started'")
    assert text_of(worker.reply(worker.execute(started))) == "'started'"
    # the left thread and the call spam together; only the call's progress is sent
    seq = worker.execute("go.set()\nspam('b')\nleft.join()\n(len(sent), sum(sent))", token="t")
    notified, reply = frames_until_reply(worker, seq)
    assert {f["seq"] for f in notified} == {seq}
    params = [f["message"]["params"] for f in notified]
    assert {p["message"] for p in params} == {"b" * 100000}
    assert text_of(reply) == "(100, %d)" % len(params)   # each one said sent arrived
    assert text_of(worker.reply(worker.execute("'after'"))) == "'after'"


def test_a_child_forked_by_the_code_never_serves_the_session(worker):
    forked = worker.reply(worker.execute("import os\nkept = 1\npid = os.fork()\npid"))
    child = int(text_of(forked))
    assert child > 0                                   # the parent's answer, the only one
    for n in range(2, 8):
        reply = worker.reply(worker.execute(f"kept += 1\n(os.getpid(), kept)"))
        assert text_of(reply) == f"({worker.process.pid}, {n})"
    os.kill(child, 0)                                  # a zombie until the worker reaps it

    def state():
        with open(f"/proc/{child}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0]
    assert wait_until(lambda: state() == "Z"), state()   # it exits at the end of its call


def test_progress_from_a_forked_child_goes_nowhere_and_says_so(worker):
    code = ("import os\nr, w = os.pipe()\npid = os.fork()\n"
            "if pid == 0:\n    os.write(w, repr(progress(1, message='child')).encode())\n    os._exit(0)\n"
            "os.waitpid(pid, 0)\nos.close(w)\n(os.read(r, 16).decode(), progress(2, message='parent'))")
    seq = worker.execute(code, token="t")
    notified, reply = frames_until_reply(worker, seq)
    assert text_of(reply) == "('False', True)"
    assert [f["message"]["params"]["message"] for f in notified] == ["parent"]


def test_multiprocessing_and_subprocess_still_work_in_the_code(worker):
    code = ("import multiprocessing, subprocess\nctx = multiprocessing.get_context('fork')\n"
            "multiprocessing.current_process().daemon = False\n"   # as the daemon's workers are
            "with ctx.Pool(2) as pool:\n    mapped = pool.map(abs, [-1, -2, -3])\n"
            "queue = ctx.Queue()\nchild = ctx.Process(target=queue.put, args=(42,))\nchild.start()\n"
            "got = queue.get(timeout=20)\nchild.join()\n"
            "echoed = subprocess.run(['echo', 'hi'], capture_output=True).stdout\n"
            "(mapped, got, child.exitcode, echoed)")
    assert text_of(worker.reply(worker.execute(code))) == "([1, 2, 3], 42, 0, b'hi\\n')"
    assert text_of(worker.reply(worker.execute("import os\nos.getpid()"))) == str(worker.process.pid)


def test_a_tool_result_utf8_cannot_carry_is_sent_with_its_escape(worker):
    worker.seq += 1     # a lone surrogate, which the echo answers and UTF-8 cannot carry
    worker.sock.sendall(frames.message_frame("call", worker.seq, b'{"jsonrpc":"2.0","id":"s",'
                                             b'"method":"tools/call","params":{"name":"echo",'
                                             b'"arguments":{"text":"\\ud800"}}}'))
    result = worker.reply(worker.seq)["result"]   # it was "the result cannot be sent: not JSON: 'utf-8' codec..."
    assert not result.get("isError") and text_of({"result": result}) == "\\ud800", result
    assert text_of(worker.reply(worker.execute("'after'"))) == "'after'"


def test_soft_break_interrupts_a_busy_loop_and_worker_stays_usable(worker):
    seq = worker.running("progress(1)\nwhile True:\n    pass")
    worker.signal(SOFT_BREAK_SIGNAL)
    response = worker.reply(seq)
    assert response["id"] == f"r{seq}"
    assert response["error"]["code"] == -32001
    assert response["error"]["message"] == "request interrupted: soft break"
    assert text_of(worker.reply(worker.execute("'after'"))) == "'after'"


def test_break_signals_a_previous_call_ignored_and_blocked_work_again_in_the_next(worker):
    silence = ("import signal\nfrom gsmcpd.wire.break_signals import BREAK_SIGNALS\n"
               "for signum in BREAK_SIGNALS:\n    signal.signal(signum, signal.SIG_IGN)\n"
               "signal.pthread_sigmask(signal.SIG_BLOCK, BREAK_SIGNALS)")
    worker.reply(worker.execute(silence))
    seq = worker.running("progress(1)\nwhile True:\n    pass")
    worker.signal(SOFT_BREAK_SIGNAL)
    assert worker.reply(seq)["error"]["message"] == "request interrupted: soft break"


def test_hard_break_stops_code_that_swallows_keyboard_interrupt(worker):
    # progress() runs inside the try: a break landing just after its frame is written is
    # raised as it returns, and must meet the same handler as one landing in the loop.
    code = ("n = 0\nwhile True:\n    try:\n        n += 1\n        progress(n)\n"
            "        while True:\n            pass\n    except KeyboardInterrupt:\n        pass\n")
    seq = worker.running(code)
    worker.signal(SOFT_BREAK_SIGNAL)
    assert worker.notified(seq)["progress"] == 2       # the soft break was swallowed
    worker.signal(HARD_BREAK_SIGNAL)
    response = worker.reply(seq)
    assert response["error"] == {"code": -32001, "message": "request interrupted: hard break"}
    assert text_of(worker.reply(worker.execute("n"))) == "2"


def test_code_catching_base_exception_survives_both_breaks_until_killed(worker):
    code = ("n = 0\nwhile True:\n    try:\n        n += 1\n        progress(n)\n"
            "        while True:\n            pass\n    except BaseException:\n        pass\n")
    seq = worker.running(code)
    worker.signal(SOFT_BREAK_SIGNAL)
    assert worker.notified(seq)["progress"] == 2
    worker.signal(HARD_BREAK_SIGNAL)
    assert worker.notified(seq)["progress"] == 3       # still running after the hard break
    worker.signal(signal.SIGKILL)
    worker.process.join(WAIT)
    assert worker.process.exitcode == -signal.SIGKILL


def test_a_soft_break_stops_code_that_catches_exception(worker):
    code = "while True:\n    try:\n        progress(1)\n        while True:\n            pass\n" \
           "    except Exception:\n        pass\n"
    seq = worker.running(code)
    worker.signal(SOFT_BREAK_SIGNAL)
    assert worker.reply(seq)["error"] == {"code": -32001, "message": "request interrupted: soft break"}


def test_the_codes_own_keyboard_interrupt_is_an_error_result_not_a_break(worker):
    result = worker.reply(worker.execute("raise KeyboardInterrupt"))["result"]
    assert result["isError"] is True and result["structuredContent"]["error"]["kind"] == "other"
    assert result["content"][0]["text"].endswith("KeyboardInterrupt")


def test_code_raising_generator_exit_is_answered_and_the_worker_lives_on(worker):
    assert text_of(worker.reply(worker.execute("kept = 7"))) == "(no output)"
    result = worker.reply(worker.execute("raise GeneratorExit"))["result"]
    assert result["isError"] is True and result["content"][0]["text"].endswith("GeneratorExit")
    assert text_of(worker.reply(worker.execute("kept"))) == "7"


def test_a_soft_break_is_known_to_have_landed_whatever_the_code_made_of_it(worker):
    # The handler marks the call, so code that caught the break and carried on is
    # answered as broken (raise_if_break), not with what it computed after.
    code = ("progress(1)\n"
            "try:\n    while True:\n        pass\nexcept KeyboardInterrupt:\n    pass\n'carried on'")
    seq = worker.running(code)
    worker.signal(SOFT_BREAK_SIGNAL)
    assert worker.reply(seq)["error"]["message"] == "request interrupted: soft break"
    # The next call starts unmarked: the code's own exit is its own again.
    code = ("from gsmcpd.worker.toolset import raise_if_break\n"
            "raise_if_break(SystemExit(3))\n'unmarked'")
    assert text_of(worker.reply(worker.execute(code))) == "'unmarked'"


def test_breaks_and_sigint_while_idle_are_ignored(worker):
    # SIGINT too (the user's code's, from a thread or a child), sent the moment each reply
    # arrives, while the worker is still in its own code after the write, or waiting.
    for _ in range(5):
        assert text_of(worker.reply(worker.execute("'warm'"))) == "'warm'"
        for _ in range(3):
            worker.signal(signal.SIGINT)
    worker.signal(SOFT_BREAK_SIGNAL)
    worker.signal(HARD_BREAK_SIGNAL)
    # Frames are handled in order, so this answer comes after both signals were handled.
    assert text_of(worker.reply(worker.start_call("tools/call",
                                                  {"name": "echo", "arguments": {"text": "alive"}}))) \
        == "alive"
    assert worker.process.is_alive()


def test_a_sigint_in_a_call_is_the_codes_own_keyboard_interrupt_not_a_break(worker):
    # The router breaks with signals of its own: a SIGINT (a child's, a thread's, another
    # process's) is Python's KeyboardInterrupt in the code, and the call its own outcome.
    assert text_of(worker.reply(worker.execute(
        "import signal\n(signal.getsignal(signal.SIGINT) is signal.default_int_handler, "
        "signal.getsignal(signal.SIGUSR1) == signal.SIG_DFL)"))) == "(True, True)"
    seq = worker.running("progress(1)\nwhile True:\n    pass")
    worker.signal(signal.SIGINT)
    result = worker.reply(seq)["result"]
    assert result["isError"] is True and result["content"][0]["text"].endswith("KeyboardInterrupt")
    code = ("try:\n    progress(1)\n    while True:\n        pass\nexcept KeyboardInterrupt:\n"
            "    pass\n'carried on'")
    seq = worker.running(code)
    worker.signal(signal.SIGINT)
    assert text_of(worker.reply(seq)) == "'carried on'"
    assert text_of(worker.reply(worker.execute("'after'"))) == "'after'"


def test_a_sigint_handler_the_code_set_is_its_handler_in_later_calls(worker):
    # Held between calls, SIGINT is handed back to whatever handler the code left.
    worker.reply(worker.execute("import os, signal\nhits = []\n"
                                "signal.signal(signal.SIGINT, lambda signum, frame: hits.append(signum))"))
    assert text_of(worker.reply(worker.execute(
        "os.kill(os.getpid(), signal.SIGINT)\nfor _ in range(10 ** 6):\n    pass\nhits"))) == "[2]"
    assert text_of(worker.reply(worker.execute(
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n'restored'"))) == "'restored'"


def test_a_worker_started_with_sigint_ignored_serves_calls_and_its_code_finds_it_ignored():
    # The disposition found was kept as signal.signal returns it, an enum, which
    # _signal.signal (what each call gives it back with) refuses: every call was a TypeError.
    channel = Channel(target=run_with_sigint_ignored)
    try:
        assert channel.prepare()["ok"] is True
        assert text_of(channel.reply(channel.execute(
            "import signal\nsignal.getsignal(signal.SIGINT) is signal.SIG_IGN"))) == "True"
        assert text_of(channel.reply(channel.execute("'again'"))) == "'again'"
    finally:
        channel.close()


def test_eof_on_the_frame_socket_ends_the_worker():
    channel = Channel()
    assert channel.prepare()["ok"] is True
    channel.sock.close()
    channel.process.join(WAIT)
    assert channel.process.exitcode == 0


def test_stop_frame_ends_the_worker():
    channel = Channel()
    channel.send({"op": "stop"})
    channel.process.join(WAIT)
    assert channel.process.exitcode == 0
    channel.close()


@pytest.mark.parametrize("target", [worker_main.run, run_without_pidfds], ids=["pidfd", "pid-check"])
@pytest.mark.parametrize("reaped", [True, False], ids=["reaped", "zombie"])
def test_watchdog_ends_the_worker_when_the_router_is_gone(target, reaped):
    router = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    channel = Channel(router_pid=router.pid, target=target)
    try:
        assert channel.prepare()["ok"] is True
        router.kill()
        if reaped:
            router.wait()
        # Our socket end is still open: the watchdog did it, also while the router
        # is dead but not yet reaped (kill(pid, 0) still finds it then).
        channel.process.join(WAIT)
        assert channel.process.exitcode == 0
    finally:
        router.kill()
        router.wait()
        channel.close()


def test_the_watchdog_does_not_end_a_worker_whose_router_lives():
    router = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    channel = Channel(router_pid=router.pid, target=run_without_pidfds)
    try:
        assert channel.prepare()["ok"] is True
        time.sleep(1)                             # a few of the 0.3 s pid checks
        assert channel.process.is_alive()
        assert text_of(channel.reply(channel.execute("6 * 7"))) == "42"
    finally:
        router.kill()
        router.wait()
        channel.close()


def test_prepare_failures_say_what_to_fix_and_a_later_prepare_succeeds():
    channel = Channel()
    try:
        call_seq = channel.start_call("ping")
        assert channel.reply(call_seq)["error"] == {"code": -32603, "message": "worker not prepared"}
        for overrides, fragment in [
            ({"worker_class": "no_such_module_xyz:Server"}, "cannot import module 'no_such_module_xyz'"),
            ({"worker_class": "gsmcpd.worker.toolsets.bench:BenchToolset"}, "not an McpServer subclass"),
            ({"toolsets": ["bench", "nonsense"]}, "unknown toolset 'nonsense'"),
        ]:
            answer = channel.prepare(**overrides)
            assert answer["op"] == "prepared" and answer["ok"] is False
            assert fragment in answer["error"]
        assert channel.prepare(read_only=True, server_title="box")["ok"] is True
        tools = channel.reply(channel.start_call("tools/list"))["result"]["tools"]
        assert [t["name"] for t in tools] == ["echo"]
        gated = channel.reply(channel.execute("1"))
        assert gated["error"]["code"] == -32601 and gated["error"]["data"] == {"kind": "readOnly"}
        again = channel.prepare()
        assert again["ok"] is False and "already prepared" in again["error"]
    finally:
        channel.close()


def test_a_prepare_that_fails_after_reserving_the_view_lets_go_of_the_images_lock(tmp_path):
    from helpers import exclusive_lock_free
    from test_tools_support import write_image
    image = write_image(tmp_path / "image")
    channel = Channel()
    try:
        answer = channel.prepare(image=str(image), toolsets=["bench", "nonsense"])
        assert answer["ok"] is False and "unknown toolset 'nonsense'" in answer["error"]
        assert exclusive_lock_free(image)    # a commit could go ahead
        assert channel.prepare(image=str(image))["ok"] is True
    finally:
        channel.close()


def test_a_prepare_waiting_out_the_image_lock_says_so_without_a_traceback(tmp_path):
    # It went through the generic path: a traceback logged (a log frame before the answer)
    # and "ImageLockTimeout: [Errno 110] ...", as a StickyStateDirectory no longer was.
    import fcntl
    from test_tools_support import write_image
    image = write_image(tmp_path / "image")
    first = Channel()     # its view makes the image's state directory and lock file
    try:
        assert first.prepare(image=str(image))["ok"] is True
    finally:
        first.close()
    channel = Channel()
    lock = os.open(image / ".gsmcpd" / "lock", os.O_RDONLY)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        answer = channel.prepare(image=str(image), image_lock_wait=0.2)
        assert answer["op"] == "prepared" and answer["ok"] is False, answer
        assert answer["error"].startswith(f"ImageLockTimeout: the image lock {image / '.gsmcpd' / 'lock'} "
                                          "was not free after 0.2s (GS_MCP_IMAGE_LOCK_WAIT): held by "
                                          f"pid {os.getpid()} "), answer
        fcntl.flock(lock, fcntl.LOCK_UN)
        assert channel.prepare(image=str(image))["ok"] is True
    finally:
        os.close(lock)
        channel.close()


def test_prepare_opens_the_image_view_and_the_workspace_imports_from_it(tmp_path):
    from gsmcpd.image.default import ensure_default_image

    image = ensure_default_image(tmp_path)
    channel = Channel()
    try:
        assert channel.prepare(image=str(image), toolsets=["execution", "session"])["ok"] is True
        code = "import shop.models\nshop.models.__file__.startswith(" + repr(str(image)) + ")"
        assert text_of(channel.reply(channel.execute(code))) == "True"
        status = channel.reply(channel.start_call("tools/call", {"name": "status", "arguments": {}}))
        assert "sid-1" in text_of(status)
    finally:
        channel.close()


def test_what_a_thread_writes_between_calls_is_logged_bytes_and_unended_lines_too():
    # A thread left running writes to the worker's own streams: bytes through .buffer
    # (an AttributeError before), and a line it never ends (a progress bar redrawn with
    # \r) logged in pieces, not held whole and rebuilt on every write.
    script = ("import sys\nfrom gsmcpd.worker.main import PARTIAL_CAP, _configure_output\n_configure_output()\n"
              "sys.stderr.buffer.write(b'bytes \\xff\\n')\n"
              "for i in range(3 * PARTIAL_CAP // 10):\n    sys.stderr.write('\\r progress')\n"
              "print(len(sys.stderr._partial) <= PARTIAL_CAP, file=sys.__stdout__)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=WAIT,
                          env=dict(os.environ, PYTHONPATH=str(REPO)))   # bytes: \r kept
    assert done.returncode == 0, done.stderr
    assert done.stdout == b"True\n"
    lines = done.stderr.decode().rstrip("\n").split("\n")
    assert "WARNING output: bytes \\xff" in lines[0]
    assert len(lines) >= 3 and all("WARNING output: \r progress" in line for line in lines[1:])


def test_worker_output_goes_only_through_logging():
    script = ("import sys\nfrom gsmcpd.worker.main import _configure_output\n_configure_output()\n"
              "print('stray stdout')\nprint('stray stderr', file=sys.stderr)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=WAIT)
    assert done.returncode == 0
    assert done.stdout == ""                            # stdout is never written
    assert "stray stdout" not in done.stderr           # INFO: below the WARNING threshold
    [line] = done.stderr.splitlines()
    assert "gsmcpd-worker[" in line and "WARNING output: stray stderr" in line


def test_the_workers_log_records_go_to_the_router_as_log_frames(worker):
    code = ("import logging\nlog = logging.getLogger('gsmcpd.worker')\nlog.info('below the threshold')\n"
            "log.warning('careful: %s', 'x')\ntry:\n    1 / 0\nexcept ZeroDivisionError:\n"
            "    log.exception('it failed')\nlog.error('%d', 'not a number')\n'done'")
    seq = worker.execute(code)
    logged, reply = frames_until_reply(worker, seq)
    assert text_of(reply) == "'done'"
    assert [(f["op"], f["level"]) for f in logged] == [("log", "WARNING"), ("log", "ERROR"), ("log", "ERROR")]
    assert logged[0]["message"] == "careful: x"
    assert logged[1]["message"].startswith("it failed\nTraceback (most recent call last):")
    assert logged[1]["message"].endswith("ZeroDivisionError: division by zero")
    assert "cannot format a log record from <workspace-" in logged[2]["message"]   # one record, no cascade


def test_log_records_from_threads_arrive_in_whole_frames(worker):
    code = ("import logging, threading\nlog = logging.getLogger('gsmcpd.worker')\n"
            "def chat(mark):\n    for i in range(200):\n        log.warning(mark * 5000)\n"
            "ts = [threading.Thread(target=chat, args=(m,)) for m in 'ab']\n"
            "[t.start() for t in ts]; chat('c'); [t.join() for t in ts]\n'done'")
    seq = worker.execute(code)
    logged, reply = frames_until_reply(worker, seq)
    assert text_of(reply) == "'done'"
    assert len(logged) == 600 and {f["message"] for f in logged} == {m * 5000 for m in "abc"}


def test_a_busy_worker_exits_at_once_when_its_router_closes_the_socket():
    channel = Channel()
    try:
        assert channel.prepare()["ok"] is True
        channel.start_call("tools/call", {"name": "execute_code",
                                          "arguments": {"code": "import time\ntime.sleep(60)"}})
        time.sleep(0.3)  # let the call start: the main thread is busy, not reading
        channel.sock.close()
        channel.process.join(WAIT)
        assert channel.process.exitcode == 0  # the watchdog saw the hang-up mid-call
    finally:
        channel.close()


def test_prepared_and_the_first_reply_leave_in_one_write_when_the_call_came_with_the_prepare():
    # The router sends a session's initialize right behind its prepare; answering
    # both with one write wakes the router once, not twice.
    channel = Channel()
    try:
        channel.sock.sendall(frames.encode({"op": "prepare", "session": SESSION}) + frames.encode(
            {"op": "call", "seq": 1, "message": {"jsonrpc": "2.0", "id": 1, "method": "ping"}}))
        first_read = channel.decoder.feed(channel.sock.recv(65536))
        assert [f["op"] for f in first_read] == ["prepared", "reply"]
        assert first_read[0]["ok"] is True and first_read[1]["message"]["result"] == {}
    finally:
        channel.close()


def _held_in_its_view_read(tmp_path):
    """A worker prepared on an image whose view read is held (run_with_its_view_read_held):
    (the channel, the file its read touches once begun, the file that lets it go on)."""
    from test_tools_support import write_image
    image = write_image(tmp_path / "image", {"pets.py": "SOUND = 'woof'\n"})
    reading, release = tmp_path / "reading", tmp_path / "release"
    return Channel(target=functools.partial(run_with_its_view_read_held, str(reading), str(release))), \
        image, reading, release


@pytest.mark.parametrize("sent", ["behind_the_prepare", "during_the_read"])
def test_a_break_landing_as_the_worker_reads_its_view_breaks_the_call_waiting_for_it(tmp_path, sent):
    # A call's deadline runs from when the router sends it, the view read (after the
    # initialize reply, or before the call) included: a break landing in the read found
    # no call running and was dropped, so the call ran on to the hard break, or the kill.
    channel, image, reading, release = _held_in_its_view_read(tmp_path)
    call = {"op": "call", "seq": 1, "message": {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "execute_code", "arguments": {"code": "6 * 7"}}}}
    try:
        prepare = frames.encode({"op": "prepare", "session": {**SESSION, "image": str(image)}})
        if sent == "behind_the_prepare":   # read before the call, the call in hand
            channel.sock.sendall(prepare + frames.encode(call))
        else:                              # read after the prepare, the call waiting behind it
            channel.sock.sendall(prepare)
            assert wait_until(reading.exists, timeout=WAIT)
            channel.send(call)
        assert wait_until(reading.exists, timeout=WAIT)
        channel.signal(SOFT_BREAK_SIGNAL)
        assert wait_until((tmp_path / "reading.broken").exists, timeout=WAIT)
        release.touch()
        assert channel.receive()["ok"] is True
        assert channel.reply(1)["error"] == {"code": -32001, "message": "request interrupted: soft break"}
        assert text_of(channel.reply(channel.execute("6 * 7"))) == "42"   # the next call runs
    finally:
        channel.close()


@pytest.mark.parametrize("sent", ["behind_the_prepare", "during_the_read"])
def test_a_break_landing_as_the_view_read_ends_breaks_the_call_waiting_for_it(tmp_path, sent):
    # Held where the read is over and the call not yet started (after the call's own read,
    # or after one ahead of the call, its frame waiting in the socket): a break landing
    # there found neither a read nor a call running and was dropped.
    from test_tools_support import write_image
    image = write_image(tmp_path / "image", {"pets.py": "SOUND = 'woof'\n"})
    reading, release, read, resume = (tmp_path / name for name in ("reading", "release", "read", "resume"))
    channel = Channel(target=functools.partial(run_with_its_view_read_held, str(reading), str(release),
                                               read=str(read), resume=str(resume)))
    call = {"op": "call", "seq": 1, "message": {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "execute_code", "arguments": {"code": "6 * 7"}}}}
    try:
        prepare = frames.encode({"op": "prepare", "session": {**SESSION, "image": str(image)}})
        if sent == "behind_the_prepare":   # read for the call in hand
            release.touch()
            channel.sock.sendall(prepare + frames.encode(call))
        else:                              # read ahead, the call sent as it is under way
            channel.sock.sendall(prepare)
            assert wait_until(reading.exists, timeout=WAIT)
            channel.send(call)
            release.touch()
        assert wait_until(read.exists, timeout=WAIT)
        channel.signal(SOFT_BREAK_SIGNAL)
        assert wait_until((tmp_path / "reading.broken").exists, timeout=WAIT)
        resume.touch()
        assert channel.receive()["ok"] is True
        assert channel.reply(1)["error"] == {"code": -32001, "message": "request interrupted: soft break"}
        assert text_of(channel.reply(channel.execute("6 * 7"))) == "42"   # the next call runs
    finally:
        channel.close()


def test_a_break_landing_as_the_worker_reads_its_view_with_no_call_sent_breaks_no_later_call(tmp_path):
    # One that came before any call was sent is a call's that is over (the initialize's,
    # answered as its deadline passed): the next call is not broken by it.
    channel, image, reading, release = _held_in_its_view_read(tmp_path)
    try:
        assert channel.prepare(image=str(image))["ok"] is True
        assert wait_until(reading.exists, timeout=WAIT)
        channel.signal(SOFT_BREAK_SIGNAL)
        assert wait_until((tmp_path / "reading.broken").exists, timeout=WAIT)   # before the call is sent
        release.touch()
        assert text_of(channel.reply(channel.execute("6 * 7"))) == "42"
    finally:
        channel.close()


def test_a_break_after_commits_in_the_call_says_they_stand(tmp_path):
    from test_tools_support import write_image
    image = write_image(tmp_path / "image", {"pets.py": "SOUND = 'woof'\n", "toys.py": "BALL = 1\n"})
    channel = Channel()
    try:
        assert channel.prepare(image=str(image))["ok"] is True
        code = ("import pets\nview = pets.__spec__.loader.view\n"
                "view.set_source('pets', \"SOUND = 'meow'\\n\", live=False)\nview.commit()\n"
                "view.set_source('toys', 'BALL = 2\\n', live=False)\nview.commit()\n"
                "progress(1)\nwhile True:\n    pass")
        seq = channel.running(code)                   # both commits are made
        channel.signal(SOFT_BREAK_SIGNAL)
        assert channel.reply(seq)["error"] == {"code": -32001, "message": (
            "request interrupted: soft break; it came too late to stop the 2 commits this call "
            "made, which stand (the last committed toys; view version 2)")}
        # a later break in a call that commits nothing says nothing of them
        seq = channel.running("progress(1)\nwhile True:\n    pass")
        channel.signal(SOFT_BREAK_SIGNAL)
        assert channel.reply(seq)["error"]["message"] == "request interrupted: soft break"
    finally:
        channel.close()


def test_a_break_in_a_commit_that_cannot_tell_whether_it_stands_says_so(tmp_path):
    # Asking whether it stands waited out the lock: that ImageLockTimeout replaced the break
    # and was answered as the code's error, saying nothing of the commit.
    from test_tools_support import write_image
    image = write_image(tmp_path / "image", {"pets.py": "SOUND = 'woof'\n"})
    channel = Channel()
    try:
        assert channel.prepare(image=str(image))["ok"] is True
        code = ("import pets\nfrom gsmcpd.image import store\nview = pets.__spec__.loader.view\n"
                "def spin(self, intent):\n    progress(1)\n    while True:\n        pass\n"
                "def timed_out(commit_id):\n    raise store.ImageLockTimeout('lock', 0.05, [])\n"
                "store.ImageStore._apply = spin\nview.store.has_commit = timed_out\n"
                "view.set_source('pets', \"SOUND = 'meow'\\n\", live=False)\nview.commit()\n")
        seq = channel.running(code)                   # past the commit point
        channel.signal(SOFT_BREAK_SIGNAL)
        logged = channel.receive()                    # the view's warning, ahead of the reply
        assert logged["op"] == "log" and "whether the commit of pets stands could not be told" in logged["message"]
        assert channel.reply(seq)["error"] == {"code": -32001, "message": (
            "request interrupted: soft break; it broke the commit of pets, and whether it stands could "
            "not be told (the journal that records it could not be read under the image lock); commit "
            "again or refresh to settle it: the answer then says whether it stands (settled), and a "
            "commit writes anything else")}
    finally:
        channel.close()


def test_a_break_after_a_re_import_tells_the_kernel_ties_it_dropped(tmp_path):
    # A broken call's answer said nothing of them; the next call's answer did, which a
    # deadline's answer, read as the call's outcome, does not lead a client to.
    from test_tools_kernel_ties import KERNEL_SIDE, UNITS
    from test_tools_support import write_image
    image = write_image(tmp_path / "image", {"tied_units.py": UNITS})
    (tmp_path / "kernel").mkdir()
    (tmp_path / "kernel" / "kernel_side_ties.py").write_text(KERNEL_SIDE)
    channel = Channel()
    try:
        assert channel.prepare(image=str(image))["ok"] is True
        assert "error" not in channel.reply(channel.execute(
            f"import sys\nsys.path.insert(0, {str(tmp_path / 'kernel')!r})\nimport kernel_side_ties"))
        (image / "tied_units.py").write_text(UNITS + "# changed\n")
        seq = channel.running("import tied_units\ntied_units.__spec__.loader.view.abort()\n"
                              "progress(1)\nwhile True:\n    pass")   # re-imported it: the ties dropped
        channel.signal(SOFT_BREAK_SIGNAL)
        error = channel.reply(seq)["error"]
        tied = ["kernel_side_ties.Foot (a subclass of tied_units.Quantity)",
                "kernel_side_ties.Meter (registered with tied_units.Quantity)"]
        assert error["data"] == {"kernelTies": {"tied_units": tied}}
        assert error["message"].startswith("request interrupted: soft break\nnote: re-importing tied_units "
                                           "made its classes anew, but the kernel's modules are not re-imported")
        told_again = channel.reply(channel.execute("1"))   # told once
        assert "kernelTies" not in told_again["result"].get("structuredContent", {})
    finally:
        channel.close()


def test_a_hard_break_as_the_broken_commit_waits_to_ask_whether_it_stands_says_it_is_undecided(tmp_path):
    # The lock held elsewhere, has_commit waited (up to GS_MCP_IMAGE_LOCK_WAIT) after the soft
    # break; the hard break that ended the wait passed through the view, and the answer,
    # "request interrupted: hard break", said nothing of the commit, which may stand.
    from test_tools_support import write_image
    image = write_image(tmp_path / "image", {"pets.py": "SOUND = 'woof'\n"})
    channel = Channel()
    try:
        assert channel.prepare(image=str(image))["ok"] is True
        code = ("import fcntl\nimport pets\nfrom gsmcpd.image import store\nview = pets.__spec__.loader.view\n"
                "def spin(self, intent):\n    progress(1)\n    while True:\n        pass\n"
                "asking, holder = view.store.has_commit, open(view.store.lock_file)\n"
                "def held_elsewhere(commit_id):\n    fcntl.flock(holder, fcntl.LOCK_EX)\n"
                "    progress(2)\n    return asking(commit_id)\n"
                "store.ImageStore._apply = spin\nview.store.has_commit = held_elsewhere\n"
                "view.store.lock_wait = 600.0\n"
                "view.set_source('pets', \"SOUND = 'meow'\\n\", live=False)\nview.commit()\n")
        seq = channel.running(code)                   # past the commit point
        channel.signal(SOFT_BREAK_SIGNAL)
        assert channel.notified(seq)["progress"] == 2   # waiting for the lock, to ask
        channel.signal(HARD_BREAK_SIGNAL)
        frame = channel.receive()
        while frame["op"] == "log":                   # the view's warning, ahead of the reply
            frame = channel.receive()
        assert frame["op"] == "reply" and frame["seq"] == seq, frame
        assert frame["message"]["error"] == {"code": -32001, "message": (
            "request interrupted: hard break; it broke the commit of pets, and whether it stands could "
            "not be told (the journal that records it could not be read under the image lock); commit "
            "again or refresh to settle it: the answer then says whether it stands (settled), and a "
            "commit writes anything else")}
    finally:
        channel.close()


class InProcessLoop:
    """A WorkerLoop served by a thread of this process, so a test can hold its steps."""

    def __init__(self):
        import threading
        self.sock, theirs = socket.socketpair()
        self.sock.settimeout(WAIT)
        self.loop = worker_main.WorkerLoop(theirs)
        self.thread = threading.Thread(target=self.loop.serve, daemon=True)
        self.thread.start()
        self.decoder = frames.FrameDecoder()
        self.frames = []

    def send(self, *frames_to_send):
        self.sock.sendall(b"".join(frames.encode(f) for f in frames_to_send))

    def receive(self):
        while not self.frames:
            self.frames += self.decoder.feed(self.sock.recv(65536))
        return self.frames.pop(0)

    def close(self):
        self.send({"op": "stop"})
        self.thread.join(WAIT)
        server = self.loop.server
        if server is not None and server.view is not None:
            server.view.close()
        self.sock.close()
        self.loop.sock.close()


def _call(seq, method, params=None):
    return {"op": "call", "seq": seq, "message": {"jsonrpc": "2.0", "id": seq, "method": method,
                                                  "params": params or {}}}


INITIALIZE = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}


def test_initialize_is_answered_before_the_view_is_read_and_no_other_call_before(tmp_path, monkeypatch):
    # The view is reserved at prepare (the image as it is then) and read once the
    # initialize reply is written: a session open does not wait for the read.
    import threading
    from gsmcpd.image.view import View
    from test_tools_support import write_image
    image = write_image(tmp_path / "image")
    reading, may_read = threading.Event(), threading.Event()
    real_load = View.load

    def held_load(self, install=True):
        reading.set()
        assert may_read.wait(WAIT)
        real_load(self, install=install)

    monkeypatch.setattr(View, "load", held_load)
    worker = InProcessLoop()
    try:
        worker.send({"op": "prepare", "session": {**SESSION, "image": str(image), "toolsets": None}},
                    _call(1, "initialize", INITIALIZE))
        assert [worker.receive()["op"], worker.receive()["op"]] == ["prepared", "reply"]
        assert reading.wait(WAIT) and worker.loop.server.view.reserved
        worker.send(_call(2, "tools/call", {"name": "list_dictionaries", "arguments": {}}))
        may_read.set()
        listed = worker.receive()
        assert listed["seq"] == 2 and "zoo" in json.dumps(listed["message"]["result"])
        assert not worker.loop.server.view.reserved
    finally:
        may_read.set()
        worker.close()


def test_a_view_that_cannot_be_read_after_initialize_fails_every_later_call_with_why(tmp_path, monkeypatch):
    from gsmcpd.image.view import View
    from test_tools_support import write_image
    image = write_image(tmp_path / "image")

    def broken_load(self, install=True):
        self._reserved.close()
        self._reserved = None
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(View, "load", broken_load)
    worker = InProcessLoop()
    try:
        worker.send({"op": "prepare", "session": {**SESSION, "image": str(image), "toolsets": None}},
                    _call(1, "initialize", INITIALIZE))
        assert worker.receive()["ok"] is True
        assert "result" in worker.receive()["message"]
        for seq in (2, 3):
            worker.send(_call(seq, "tools/list"))
            error = worker.receive()["message"]["error"]
            assert error["code"] == -32603
            assert error["message"] == "worker could not be prepared: OSError: [Errno 5] Input/output error"
    finally:
        worker.close()


# A signal caught in the instant a call ends: CPython's signal.signal runs the handlers
# of signals already caught before it swaps, so the loop's swap back to the do-nothing
# SIGINT handler meets them. Made deterministic by sending the signal (caught in C,
# handled at the next check) right before the loop's own swap.
SWAP_RACE = """
import json, os, signal, _signal, socket, sys
from gsmcpd.worker import main
from gsmcpd.wire.break_signals import SOFT_BREAK_SIGNAL

signal.signal(signal.SIGINT, signal.default_int_handler)   # as a worker has it, however this was started

class Server:
    view = None
    def handle(self, message, notify):
        return {"jsonrpc": "2.0", "id": 1, "result": {"done": True}}

pending = {"at": None, "signal": None, "times": 0}

class Shim:
    def __getattr__(self, name):
        return getattr(_signal, name)
    def signal(self, signum, handler):
        if pending["times"] and pending["at"] == ("out" if handler is main._between_calls else "in"):
            pending["times"] -= 1
            os.kill(os.getpid(), pending["signal"])   # caught now, handled by the swap's check
        return _signal.signal(signum, handler)

main._signal = Shim()
loop = main.WorkerLoop(socket.socketpair()[0])
loop.server = Server()
loop.install_breaks()
code_handler = loop._code_sigint
out = {}
for case, at, signum, times in (("break as the call ends", "out", SOFT_BREAK_SIGNAL, 1),
                                ("own SIGINT as the call ends", "out", signal.SIGINT, 1),
                                ("own SIGINTs at every try", "out", signal.SIGINT, 2000),
                                ("break as the call begins", "in", SOFT_BREAK_SIGNAL, 1)):
    pending.update(at=at, signal=signum, times=times)
    reply = loop._run(1, {"jsonrpc": "2.0", "id": 1, "method": "tools/call"})
    out[case] = {"reply": reply.get("result") or reply["error"]["message"], "in_call": loop.in_call,
                 "between_calls": _signal.getsignal(signal.SIGINT) is main._between_calls,
                 "code_handler_kept": loop._code_sigint is code_handler}
    pending["times"] = 0
    _signal.signal(signal.SIGINT, main._between_calls)   # as the flood left it: the code's
print(json.dumps(out))
"""


def test_a_signal_caught_as_a_call_ends_or_begins_leaves_the_loop_idle_and_the_codes_handler_kept():
    done = subprocess.run([sys.executable, "-c", SWAP_RACE], capture_output=True, text=True, timeout=WAIT,
                          env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    idle = {"in_call": False, "between_calls": True, "code_handler_kept": True}
    assert out["break as the call ends"] == {"reply": {"done": True}, **idle}
    assert out["own SIGINT as the call ends"] == {"reply": {"done": True}, **idle}
    assert out["break as the call begins"] == {"reply": "request interrupted: soft break", **idle}
    # A flood outlasting every try: the answer still stands; SIGINT keeps the code's handler.
    assert out["own SIGINTs at every try"] == {"reply": {"done": True}, **idle, "between_calls": False}
    assert "a SIGINT handler raised KeyboardInterrupt as its call ended; dropped" in done.stderr
    assert "SIGINT kept coming as a call ended (1000 tries)" in done.stderr


# The code's own SIGINT handler, caught as the call ends, raising an exception whose
# class's metaclass gives a `__name__` that raises: the loop's log line asked it.
ODD_HANDLER = SWAP_RACE.partition("out = {}")[0] + """
class NamedOddly(type):
    @property
    def __name__(cls):
        raise RuntimeError("no name")

class Oops(Exception, metaclass=NamedOddly):
    pass

def raising(*_):
    raise Oops("mine")

loop._code_sigint = raising
pending.update(at="out", signal=signal.SIGINT, times=1)
reply = loop._run(1, {"jsonrpc": "2.0", "id": 1, "method": "tools/call"})
print(json.dumps(reply.get("result") or reply["error"]["message"]))
"""


def test_a_sigint_handler_raising_as_its_call_ends_is_logged_by_its_exceptions_own_class_name():
    done = subprocess.run([sys.executable, "-c", ODD_HANDLER], capture_output=True, text=True, timeout=WAIT,
                          env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"done": True}
    assert "a SIGINT handler raised Oops as its call ended; dropped" in done.stderr


# Appends until MemoryError and keeps it all: the workspace then holds the limit.
FILL_AND_KEEP = ("held = []\ntry:\n    while True:\n        held.append(bytearray(1 << 20))\n"
                 "except MemoryError:\n    pass\ntry:\n    while True:\n        held.append(bytearray(1 << 12))\n"
                 "except MemoryError:\n    pass\n'full'")


@pytest.fixture
def limited_worker():
    channel = Channel(target=run_under_a_data_limit)
    assert channel.prepare()["ok"] is True
    yield channel
    channel.close()


def test_a_workspace_holding_the_data_limit_leaves_the_worker_room_for_the_next_call(limited_worker):
    # Its receive buffer for the next call was a MemoryError: the worker died, and the session.
    assert text_of(limited_worker.reply(limited_worker.execute(FILL_AND_KEEP))) == "'full'"
    assert text_of(limited_worker.reply(limited_worker.execute("del held\n'room again'"))) == "'room again'"

