"""The Python image end to end, a commit meeting a fault: its worker killed (kill -9) or
broken (the request deadline) mid-commit, the server stopped under it, the disk failing
once it is decided (undecided), an intent left or planted, the image lock held by
another, a link or a directory in its way. Each test on its own throwaway image in
tmp_path; sessions' views and conflicts: test_e2e_image.py.
"""

import ast
import json
import os
import random
import signal
import threading
import time

import pytest

from gsmcpd.image.default import EXAMPLE_FILES
from helpers import (QUICK_STOP, Client, Daemon, call_in_thread, chattr_flagged, commit_left_half_applied, killed,
                     pid_alive)
from helpers import open_session as session
from helpers import tool_text, wait_until
from test_e2e_image import SHOUT, error_kind, journal, shop  # noqa: F401 (a fixture)
from test_tools_support import write_image


# Commits' flushes to disk are no test's subject here (conftest).
pytestmark = pytest.mark.usefixtures("daemons_fsync_skipped")


# -- SIGKILL during a commit ----------------------------------------------------

MODULES = ["bulk.m%02d" % i for i in range(16)]

TEXT_OF = '''
def text_of(name, turn):
    body = "".join("def f%d():\\n    return %r\\n\\n\\n" % (i, (name, turn)) for i in range(120))
    return '"""%s, turn %d."""\\n\\n\\n' % (name, turn) + body + "TURN = %d\\n" % turn
'''
namespace = {}
exec(TEXT_OF, namespace)
text_of = namespace["text_of"]

# Slows each commit (a sleep after every directory fsync, so the kill has a wide
# window), announces the commit through a marker file, commits every module.
COMMIT_ALL = '''
import time
from pathlib import Path
import bulk
import gsmcpd.image.store as store
if not getattr(store, "slowed", False):
    real_fsync_dir = store._fsync_dir
    def slow_fsync_dir(directory):
        real_fsync_dir(directory)
        time.sleep(0.003)
    store._fsync_dir, store.slowed = slow_fsync_dir, True
view = bulk.__spec__.loader.view
for name in %(modules)r:
    view.set_source(name, text_of(name, %(turn)d), live=False)
Path(%(marker)r).write_text("committing")
started = time.monotonic()
view.commit()
time.monotonic() - started
'''


def commit_all(client, turn, marker):
    code = TEXT_OF + COMMIT_ALL % {"modules": MODULES, "turn": turn, "marker": str(marker)}
    return client.call("tools/call", {"name": "execute_code", "arguments": {"code": code}})


def disk_texts(image):
    return {name: (image / (name.replace(".", "/") + ".py")).read_text() for name in MODULES}


SEEN = """
import importlib
[importlib.import_module(name).TURN for name in %r]
"""


def turns_seen(daemon):
    """The TURN of every module, as a new session's view sees them."""
    client = session(daemon)
    reply = client.tool("execute_code", code=SEEN % MODULES)
    client.close()
    return ast.literal_eval(reply["structuredContent"]["result"])


def test_kill_9_during_commits_leaves_all_files_old_or_all_new(tmp_path):
    files = {"bulk/__init__.py": ""}
    files.update({name.replace(".", "/") + ".py": text_of(name, 0) for name in MODULES})
    image = write_image(tmp_path / "image", files)
    with Daemon(tmp_path, env={"GS_MCP_IMAGE": str(image)}) as daemon:
        calibrate = session(daemon)
        reply = commit_all(calibrate, 1, tmp_path / "marker-1").json()
        window = float(reply["result"]["structuredContent"]["result"])   # how long a commit takes
        assert disk_texts(image) == {name: text_of(name, 1) for name in MODULES}
        calibrate.close()

        current, inside, pending = 1, 0, 0
        # At least 12 kills, and more (up to 40) until one lands inside a commit: on a
        # loaded machine this thread's sleep can overshoot the window many times running.
        for turn in range(2, 42):
            if turn >= 14 and inside:
                break
            before = disk_texts(image)
            client = session(daemon)
            pid = client.tool("status")["structuredContent"]["pid"]
            marker = tmp_path / ("marker-%d" % turn)
            caller = threading.Thread(target=lambda: _ignore_outcome(commit_all, client, turn, marker))
            caller.start()
            assert wait_until(marker.exists, timeout=15), "the commit never started"
            time.sleep(random.uniform(0, window))
            os.kill(pid, signal.SIGKILL)
            assert wait_until(lambda: not pid_alive(pid), timeout=10)
            caller.join(15)
            client.close()

            for name, text in disk_texts(image).items():   # on disk: never torn
                ast.parse(text)
                assert text in (before[name], text_of(name, current), text_of(name, turn)), name
            intent = image / ".gsmcpd" / "commit.intent"
            killed_past_commit_point = (intent.exists() and
                                        json.loads(intent.read_text())["record"]["session"] == client.session)
            seen = set(turns_seen(daemon))
            assert len(seen) == 1, "a session sees a half-made commit: %r" % seen
            (now,) = seen
            assert now in (current, turn)
            if killed_past_commit_point:
                assert now == turn   # decided, so every view reads it as done
            inside += now == current or killed_past_commit_point
            pending += killed_past_commit_point
            current = now
        assert inside, "no kill landed inside a commit: the test proved nothing"

        # A later session commits over the debris, finishing a pending commit first.
        last = session(daemon)
        final = commit_all(last, 99, tmp_path / "marker-99").json()
        assert "result" in final and not final["result"].get("isError"), final
        assert disk_texts(image) == {name: text_of(name, 99) for name in MODULES}
        assert not [p.name for p in (image / "bulk").iterdir() if ".tmp-" in p.name]
        assert not (image / ".gsmcpd" / "commit.intent").exists()
        assert journal(image)[-1]["session"] == last.session
        print("kill rounds: %d inside a commit, %d past its commit point" % (inside, pending))


def _ignore_outcome(function, *args):
    """The killed worker's call ends however the router answers it (or the
    connection closing); only the disk is under test."""
    try:
        function(*args)
    except OSError:
        return


def test_a_worker_that_cannot_open_the_image_fails_its_initialize_and_the_server_goes_on(tmp_path):
    # initialize is sent to the worker right behind its prepare frame; a failed
    # prepare must still answer it with the reason, not with a session.
    image = write_image(tmp_path / "image", EXAMPLE_FILES)
    with Daemon(tmp_path, env={"GS_MCP_IMAGE": str(image), "GS_MCP_SPARE_WORKERS": "1"}) as daemon:
        moved = tmp_path / "moved-away"
        os.rename(image, moved)
        client = Client(daemon.port)
        reply = client.call("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                           "clientInfo": {"name": "t", "version": "0"}})
        assert reply.status == 200 and reply.header("mcp-session-id") is None
        error = reply.json()["error"]
        assert error["code"] == -32003
        assert "worker could not be prepared" in error["message"] and str(image) in error["message"]
        os.rename(moved, image)
        again = session(daemon)
        assert "shop" in tool_text(again.tool("list_dictionaries"))


def test_an_image_unreadable_after_the_open_fails_each_call_with_why_and_the_server_goes_on(tmp_path):
    # The lock is taken before the initialize reply, the files are read after it: a
    # failure there cannot fail the open any more, so every later call says why.
    image = write_image(tmp_path / "image", EXAMPLE_FILES)
    with Daemon(tmp_path, env={"GS_MCP_IMAGE": str(image)}) as daemon:
        intent = image / ".gsmcpd" / "commit.intent"
        intent.parent.mkdir(exist_ok=True)
        intent.write_text("not an intent")
        client = Client(daemon.port)
        client.initialize()
        for _ in range(2):
            reply = client.call("tools/call", {"name": "list_dictionaries", "arguments": {}})
            error = reply.json()["error"]
            assert reply.status == 200 and error["code"] == -32603
            assert error["message"].startswith("worker could not be prepared: ValueError: ")
            assert str(intent) in error["message"] and "move it away" in error["message"]
        assert client.call("ping").status == 200
        intent.unlink()
        again = session(daemon)
        assert "shop" in tool_text(again.tool("list_dictionaries"))
        assert client.delete().status == 200


def test_a_json_intent_of_the_wrong_shape_at_start_is_named_and_the_daemon_serves(tmp_path):
    # '{}' once ended startup in a KeyError traceback; like any garbled intent it is
    # now named, and the server starts and answers.
    image = write_image(tmp_path / "image", EXAMPLE_FILES)
    intent = image / ".gsmcpd" / "commit.intent"
    intent.parent.mkdir(exist_ok=True)
    intent.write_text("{}")
    with Daemon(tmp_path, env={"GS_MCP_IMAGE": str(image)}) as daemon:
        client = Client(daemon.port)
        client.initialize()
        error = client.call("tools/call", {"name": "list_dictionaries", "arguments": {}}).json()["error"]
        assert '"writes" is not an object' in error["message"] and "move it away" in error["message"]
        assert client.call("ping").status == 200
        assert "is not a commit intent" in daemon.log_text() and "KeyError" not in daemon.log_text()


def test_the_daemon_finishes_a_commit_killed_past_its_commit_point_when_it_starts(tmp_path, monkeypatch):
    image = write_image(tmp_path / "image", {"a.py": "A = 1\n", "b.py": "B = 1\n"})
    commit_left_half_applied(image, monkeypatch)
    assert (image / "b.py").read_text() == "B = 1\n"

    with Daemon(tmp_path, env={"GS_MCP_IMAGE": str(image)}) as daemon:
        assert (image / "a.py").read_text() == "A = 2\n" and (image / "b.py").read_text() == "B = 2\n"
        assert not (image / ".gsmcpd" / "commit.intent").exists()
        assert [entry["user"] for entry in journal(image)] == ["u"]
        assert "finished a commit to %s that was interrupted" % image in daemon.log_text()
        seen = session(daemon).tool("execute_code", code="import a, b\n[a.A, b.B]")
        assert ast.literal_eval(seen["structuredContent"]["result"]) == [2, 2]


# -- a break during a commit -----------------------------------------------------

# Runs in the session's worker: edits pets (not yet committed) and makes one step
# of the next commit sleep, so the request deadline's soft break lands there:
# `_write_intent` is before the commit point, `_apply` just past it.
SLOW_COMMIT_STEP = '''
import time
import gsmcpd.image.store as store
import pets
pets.__spec__.loader.view.set_source("pets", "SOUND = 'meow'\\n", live=False)
store.real_step = store.ImageStore.%(step)s
def slowed(self, intent):
    time.sleep(30)
    return store.real_step(self, intent)
store.ImageStore.%(step)s = slowed
'''
RESTORE_STEP = "import gsmcpd.image.store as store\nstore.ImageStore.%(step)s = store.real_step"
SOUND = "import pets\npets.SOUND"


def call_held_in_commit(client, image, step, name="commit", arguments=None):
    """Start `name` on a thread of its own (SLOW_COMMIT_STEP run first) and wait until its
    commit is held at `step`: the temp written (`_write_intent`) or the intent (`_apply`).
    (the worker's pid, the thread, the list its answer goes to, the temp, the intent)."""
    pid = client.tool("status")["structuredContent"]["pid"]
    caller, answers = call_in_thread(client, name, arguments or {})
    temp, intent = image / (".pets.py.tmp-%d" % pid), image / ".gsmcpd" / "commit.intent"
    assert wait_until((intent if step == "_apply" else temp).exists, timeout=30)
    return pid, caller, answers, temp, intent
PURR = "import pets\npets.__spec__.loader.view.set_source('pets', \"SOUND = 'purr'\\n\", live=False)"


def test_a_break_during_a_commit_says_whether_the_commit_stands(tmp_path):
    image = write_image(tmp_path / "image", {"pets.py": "SOUND = 'woof'\n"})
    # The deadline must fall once the commit is held at `step`, past its fsyncs, which a busy
    # disk stretches (one commit took 0.22 s beside the suite): at 0.5 s a slow `_apply` commit
    # could be broken before its commit point. The call waits out the deadline, whatever it is.
    env = {"GS_MCP_IMAGE": str(image), "GS_MCP_REQUEST_TIMEOUT": "1.5", "GS_MCP_BREAK_GRACE": "5"}
    with Daemon(tmp_path, env=env) as daemon:
        # One daemon for both steps, a session each, in this order: the first leaves "purr"
        # committed, and the second's assertions hold whatever pets said before it.
        for step in ("_write_intent", "_apply"):
            a = session(daemon)
            a.tool("execute_code", code=SLOW_COMMIT_STEP % {"step": step})
            error = a.call("tools/call", {"name": "commit", "arguments": {}}).json()["error"]
            assert error["code"] == -32001
            status = a.tool("status")["structuredContent"]
            seen_by_others = tool_text(session(daemon).tool("execute_code", code=SOUND))
            a.tool("execute_code", code=RESTORE_STEP % {"step": step})
            if step == "_write_intent":   # nothing was written: the change is still the session's own
                assert error["message"] == "request timed out after 1.5s (GS_MCP_REQUEST_TIMEOUT) and was interrupted: soft break"
                assert status["changedModules"] == ["pets"] and seen_by_others == "'woof'"
                assert a.tool("commit")["structuredContent"]["committed"] == ["pets"]
            else:                         # decided: every view reads it as done, the answer says so
                assert error["message"] == (
                    "request timed out after 1.5s (GS_MCP_REQUEST_TIMEOUT) and was interrupted: soft break; "
                    "it came too late to stop the commit this call "
                    "made, which stands (committed pets; view version %d)" % status["viewVersion"])
                assert status["changedModules"] == [] and seen_by_others == "'meow'"
                assert a.tool("commit")["structuredContent"]["committed"] == []
            # Another session commits on top of it, which also finishes a pending commit on disk.
            b = session(daemon)
            b.tool("execute_code", code=PURR)
            assert b.tool("commit")["structuredContent"]["committed"] == ["pets"]
            assert (image / "pets.py").read_text() == "SOUND = 'purr'\n"
            assert not (image / ".gsmcpd" / "commit.intent").exists()
            a.close()
            b.close()


# Runs in the session's worker: its next commit of pets fails once decided (the disk
# failing once its intent is written), and asking whether it stands then waits out the
# image lock, held by another holder; UNDECIDED_RESTORED puts all back.
UNDECIDED_NEXT = """
import fcntl
import gsmcpd.image.store as store
import pets
view = pets.__spec__.loader.view
store.saved = (store.ImageStore._write_intent, view.store.has_commit, view.store.lock_wait)
store.holder = open(view.store.lock_file)
def failing_once_written(self, intent):
    store.saved[0](self, intent)
    raise OSError(5, "Input/output error")
def held_elsewhere(commit_id):
    fcntl.flock(store.holder, fcntl.LOCK_EX)
    return store.saved[1](commit_id)
store.ImageStore._write_intent, view.store.has_commit, view.store.lock_wait = (
    failing_once_written, held_elsewhere, 0.2)
view.set_source("pets", "SOUND = 'meow'\\n", live=False)
"""
UNDECIDED_RESTORED = """
import gsmcpd.image.store as store
import pets
view = pets.__spec__.loader.view
store.holder.close()
store.ImageStore._write_intent, view.store.lock_wait = store.saved[0], store.saved[2]
del view.store.has_commit
"""


def undecided_commit_of_pets(client):
    """`client`'s session commits pets ("meow"), not knowing whether it stands: it does,
    left pending on disk."""
    assert not client.tool("execute_code", code=UNDECIDED_NEXT).get("isError")
    failed = client.tool("commit")
    assert failed["structuredContent"]["error"]["undecided"] == ["pets"], failed
    assert not client.tool("execute_code", code=UNDECIDED_RESTORED).get("isError")


def test_a_refresh_settling_an_undecided_commit_finishes_it_on_disk(tmp_path):
    # The refresh named it settled, but left it pending (pets.py still 'woof', the intent
    # there) until whichever commit came next.
    image = write_image(tmp_path / "image", {"pets.py": "SOUND = 'woof'\n"})
    with Daemon(tmp_path, env={"GS_MCP_IMAGE": str(image)}) as daemon:
        a = session(daemon)
        undecided_commit_of_pets(a)
        assert (image / ".gsmcpd" / "commit.intent").exists()
        refreshed = a.tool("refresh")["structuredContent"]
        assert (refreshed["settled"], refreshed["keptOurs"]) == (["pets"], []), refreshed
        assert not (image / ".gsmcpd" / "commit.intent").exists()
        assert (image / "pets.py").read_text() == "SOUND = 'meow'\n"
        assert [entry["session"] for entry in journal(image)] == [a.session]


def test_an_undecided_commit_is_settled_though_a_compaction_came_between(tmp_path):
    # Others' commits named pets after it, past JOURNAL_KEEP of them: compaction left its
    # record out, and the refresh took the session's standing commit for one that never
    # stood, kept as its uncommitted change ("kept ours"), whose commit conflicted.
    image = write_image(tmp_path / "image", {"pets.py": "SOUND = 'woof'\n"})
    with Daemon(tmp_path, env={"GS_MCP_IMAGE": str(image), "GS_MCP_JOURNAL_LIMIT": "4096"}) as daemon:
        a, b = session(daemon), session(daemon)
        undecided_commit_of_pets(a)
        many = b.tool("execute_code", code=(
            "import pets\nview = pets.__spec__.loader.view\nview.refresh()\n"
            "for n in range(150):\n    view.set_source('pets', f'SOUND = {n}\\n', live=False)\n"
            "    view.commit()\n"))
        assert not many.get("isError"), many
        assert json.loads((image / ".gsmcpd" / "journal.jsonl").read_bytes().split(b"\n")[0])["dropped"] > 0
        refreshed = a.tool("refresh")
        structured = refreshed["structuredContent"]
        assert (structured["settled"], structured["broughtIn"], structured["keptOurs"]) == (
            ["pets"], ["pets"], []), refreshed
        assert "this session's own earlier commit, which could not tell whether it stood, stands: pets" in (
            tool_text(refreshed))
        assert a.tool("status")["structuredContent"]["uncommittedChanges"] is False
        assert not list((image / ".gsmcpd").glob("unsettled.*"))


def test_a_session_ended_with_its_commit_undecided_leaves_compaction_free_to_leave_its_record_out(tmp_path):
    image = write_image(tmp_path / "image", {"pets.py": "SOUND = 'woof'\n"})
    with Daemon(tmp_path, env={"GS_MCP_IMAGE": str(image)}) as daemon:
        a = session(daemon)
        undecided_commit_of_pets(a)
        assert len(list((image / ".gsmcpd").glob("unsettled.*"))) == 1
        assert a.delete().status == 200
        assert wait_until(lambda: not list((image / ".gsmcpd").glob("unsettled.*")), timeout=15)


def test_a_worker_killed_with_its_commit_undecided_leaves_no_mark_but_another_daemon_s_session_keeps_its(tmp_path):
    # The killed worker never released its mark (keep_record): it stayed for good, and
    # compaction kept that commit's record for good. A live session of another daemon
    # sharing the image keeps its own.
    image = write_image(tmp_path / "image", {"pets.py": "SOUND = 'woof'\n", "cats.py": "SOUND = 'purr'\n"})
    marks = lambda: sorted(path.name for path in (image / ".gsmcpd").glob("unsettled.*"))
    (tmp_path / "other").mkdir()
    with Daemon(tmp_path / "other", env={"GS_MCP_IMAGE": str(image)}) as other:
        kept = session(other)
        assert not kept.tool("execute_code", code=UNDECIDED_NEXT.replace("pets", "cats")).get("isError")
        assert kept.tool("commit")["structuredContent"]["error"]["undecided"] == ["cats"]
        assert not kept.tool("execute_code", code=UNDECIDED_RESTORED.replace("pets", "cats")).get("isError")
        its_mark = marks()
        assert len(its_mark) == 1
        daemon = Daemon(tmp_path, env={"GS_MCP_IMAGE": str(image)})
        with daemon:
            a = session(daemon)
            undecided_commit_of_pets(a)
            assert len(marks()) == 2
            pid = a.tool("status")["structuredContent"]["pid"]
            os.kill(pid, signal.SIGKILL)
            assert wait_until(lambda: not pid_alive(pid))
        with daemon:                                   # its start tidies the image
            pass
        assert marks() == its_mark
        refreshed = kept.tool("refresh")["structuredContent"]
        assert refreshed["settled"] == ["cats"], refreshed
    assert marks() == []


def assert_stopped_whole(daemon, image, step, committer, temp, intent):
    """The stopped `daemon`'s image after a commit cut at `step`: no temp, no intent, and
    pets.py as before it (not decided) or as it made it, journalled (decided)."""
    assert not intent.exists() and not temp.exists()
    if step == "_write_intent":   # not decided: nothing of it
        assert (image / "pets.py").read_text() == "SOUND = 'woof'\n" and journal(image) == []
    else:                         # decided: finished on disk before the server exited
        assert (image / "pets.py").read_text() == "SOUND = 'meow'\n"
        assert [entry["session"] for entry in journal(image)] == [committer]
        assert "finished a commit to %s that was interrupted" % image in daemon.log_text()


@pytest.mark.parametrize("step", ["_write_intent", "_apply"])
def test_a_stop_during_a_commit_leaves_the_image_files_whole(tmp_path, step):
    # A call still in flight when the stop's grace ends (GS_MCP_BREAK_GRACE, 0.2 s here) is
    # ended by killing its worker, here mid-commit: before its commit point (temps
    # written) or past it (renames pending). The files were left so (half the commit
    # renamed, temps about) until the next start; a stopped server's image is what git,
    # editors and backups read. A commit that finishes within the grace: test_e2e_shutdown.py.
    image = write_image(tmp_path / "image", {"pets.py": "SOUND = 'woof'\n"})
    with Daemon(tmp_path, env={"GS_MCP_IMAGE": str(image), **QUICK_STOP}) as daemon:
        a = session(daemon)
        a.tool("execute_code", code=SLOW_COMMIT_STEP % {"step": step})
        pid, caller, answers, temp, intent = call_held_in_commit(a, image, step)
        assert daemon.stop() == 0
        caller.join(15)
    assert answers[0]["error"]["message"] == (
        "session ended: server shutting down (its call in flight still ran after the 0.2s grace, GS_MCP_BREAK_GRACE)")
    assert_stopped_whole(daemon, image, step, a.session, temp, intent)


@pytest.mark.parametrize("step", ["_write_intent", "_apply"])
def test_a_worker_killed_mid_commit_before_the_stop_leaves_the_stopped_image_files_whole(tmp_path, step):
    # A developer's session killed (kill -9, the OOM killer) mid-commit, the server stopped
    # later: the stop, which tidied only after calls it cut itself, left the temps (and,
    # past the commit point, the intent with every file still old) for git and editors.
    image = write_image(tmp_path / "image", {"pets.py": "SOUND = 'woof'\n"})
    with Daemon(tmp_path, env={"GS_MCP_IMAGE": str(image), **QUICK_STOP}) as daemon:
        a = session(daemon)
        a.tool("execute_code", code=SLOW_COMMIT_STEP % {"step": step})
        pid, caller, answers, temp, intent = call_held_in_commit(a, image, step)
        os.kill(pid, signal.SIGKILL)
        caller.join(15)
        assert answers[0]["error"]["message"].startswith("session ended: worker %d was killed by signal 9 " % pid)
        seen = tool_text(session(daemon).tool("execute_code", code=SOUND))
        assert seen == ("'meow'" if step == "_apply" else "'woof'")   # sessions read it whole
        assert daemon.stop() == 0
    assert_stopped_whole(daemon, image, step, a.session, temp, intent)


MANY = ["bulk.m%03d" % n for n in range(400)]
EDIT_MANY = """
import bulk
view = bulk.__spec__.loader.view
for name in %r:
    view.set_source(name, "TURN = 1\\n", live=False)
""" % MANY


KILLED = {"exit": {"signal": 9, "name": "SIGKILL"}}


def test_a_commit_whose_worker_is_killed_is_answered_whether_it_stands(tmp_path):
    # The tester's case: a session commits 400 modules and its worker is killed (kill -9,
    # the OOM killer) in the commit. The client was told only "session ended: worker N
    # exited", though past the commit point the commit stands: every session reads it.
    files = {"bulk/__init__.py": "", "pets.py": "SOUND = 'woof'\n"}
    files.update({name.replace(".", "/") + ".py": "TURN = 0\n" for name in MANY})
    image = write_image(tmp_path / "image", files)
    with Daemon(tmp_path, env={"GS_MCP_IMAGE": str(image)}) as daemon:
        # One daemon and image for both steps, in this order: the first leaves nothing of
        # its commit, so the second starts from the image as written.
        for step in ("_write_intent", "_apply"):
            a = session(daemon)
            a.tool("execute_code", code=EDIT_MANY)
            a.tool("execute_code", code=SLOW_COMMIT_STEP % {"step": step})
            pid, caller, answers, _, intent = call_held_in_commit(a, image, step)
            os.kill(pid, signal.SIGKILL)
            caller.join(30)
            error = answers[0]["error"]
            assert error["code"] == -32003
            # How the worker ended, then whether its commit stands.
            seen = tool_text(session(daemon).tool("execute_code", code="import bulk.m399\nbulk.m399.TURN"))
            if step == "_write_intent":   # short of the commit point: nothing of it
                assert error["message"] == (
                    "%s; the commit it was making had not reached its commit "
                    "point, so nothing of it stands, and the session's uncommitted changes went with it" % killed(pid))
                assert error["data"] == {"commitStands": False, **KILLED} and seen == "0"
            else:                         # past it: it stands, every session reads it
                record = json.loads(intent.read_text())["record"]
                assert record["session"] == a.session
                assert error["message"] == (
                    "%s; the commit it was making had passed its commit point, "
                    "so it stands (journal record %s: bulk/m000.py, bulk/m001.py, bulk/m002.py and 398 more): "
                    "every session reads it" % (killed(pid), record["id"]))
                assert error["data"] == {"commitStands": True, "journalRecord": record["id"], **KILLED,
                                         "files": sorted(["pets.py"] + [n.replace(".", "/") + ".py" for n in MANY])}
                assert seen == "1"


def test_a_session_s_first_commit_killed_past_its_commit_point_is_told_standing_in_a_long_journal(tmp_path):
    # A session's first commit has no earlier record of the session to end the router's
    # scan, which reads on back to its bound (4 MiB) through a journal longer than that:
    # the record it found on the way was dropped, and the client told "could not be told".
    image = write_image(tmp_path / "image", {"pets.py": "SOUND = 'woof'\n"})
    (image / ".gsmcpd").mkdir()
    other = {"time": "2026-01-01T00:00:00Z", "user": "v", "session": "0" * 32,
             "files": [{"file": "gone.py", "old": None, "new": "0" * 64}]}
    with open(image / ".gsmcpd" / "journal.jsonl", "w") as out:
        out.writelines(json.dumps({"id": "%016x" % n, **other}) + "\n" for n in range(30_000))
    assert (image / ".gsmcpd" / "journal.jsonl").stat().st_size > 4 * 1024 * 1024
    with Daemon(tmp_path, env={"GS_MCP_IMAGE": str(image)}) as daemon:
        a = session(daemon)
        pid = a.tool("status")["structuredContent"]["pid"]
        a.tool("execute_code", code=SLOW_COMMIT_STEP % {"step": "_apply"})
        caller, answers = call_in_thread(a, "commit", {})
        intent = image / ".gsmcpd" / "commit.intent"
        assert wait_until(intent.exists, timeout=30)
        record = json.loads(intent.read_text())["record"]
        os.kill(pid, signal.SIGKILL)
        caller.join(30)
        error = answers[0]["error"]
        assert error["message"] == (
            "%s; the commit it was making had passed its commit point, "
            "so it stands (journal record %s: pets.py): every session reads it" % (killed(pid), record["id"]))
        assert error["data"] == {"commitStands": True, "journalRecord": record["id"], "files": ["pets.py"], **KILLED}


def test_a_commit_call_is_answered_and_its_session_ended_though_its_record_has_files_of_no_list(tmp_path):
    # With per-user workers another account can write the journal. A record found for the
    # dead worker's call whose files are no list (null) raised TypeError as the router told
    # the call: no answer ever came, and the rest of the session's end was skipped.
    image = write_image(tmp_path / "image", {"pets.py": "SOUND = 'woof'\n"})
    with Daemon(tmp_path, env={"GS_MCP_IMAGE": str(image)}) as daemon:
        a = session(daemon)
        pid = a.tool("status")["structuredContent"]["pid"]
        tag = tool_text(a.tool("execute_code", code=SLOW_COMMIT_STEP % {"step": "_write_intent"}
                               + "pets.__spec__.loader.view.call_tag"))
        planted = "call%d-ff" % (int(tag.strip("'")[len("call"):-1]) + 1)   # the commit call's, next
        with open(image / ".gsmcpd" / "journal.jsonl", "a") as out:
            out.write(json.dumps({"id": planted, "session": a.session, "files": None}) + "\n")
        caller, answers = call_in_thread(a, "commit", {})
        assert wait_until((image / (".pets.py.tmp-%d" % pid)).exists, timeout=30)
        os.kill(pid, signal.SIGKILL)
        caller.join(30)
        assert answers, "the commit call was never answered"
        assert answers[0]["error"]["message"] == (
            "%s; the commit it was making had passed its commit point, "
            "so it stands (journal record %s): every session reads it" % (killed(pid), planted))
        # Its end went on to the last step (logged just after the answer is sent).
        assert wait_until(lambda: "ended: worker %d was killed by signal 9 " % pid in daemon.log_text(), timeout=10)
        assert "router callback failed" not in daemon.log_text()


def test_an_intent_planted_to_write_outside_the_image_is_refused_and_nothing_moves(shop, tmp_path):
    # With per-user workers another account can write the intent; the next commit would
    # apply it with the committer's rights: it may name only the image's module files.
    victim = tmp_path / "victim.py"
    victim.write_text("mine\n")
    client = session(shop)
    # Planted by rename, whole: the session's worker may be preparing (and reading the
    # intent) right now, and a half-written file is refused for a different reason.
    planting = shop.image / ".gsmcpd" / "planting"
    planting.write_text(json.dumps({"writes": {str(victim): "shop/__init__.py"}, "removes": [],
                                    "record": {"id": "planted"}}))
    os.replace(planting, shop.image / ".gsmcpd" / "commit.intent")
    reply = client.call("tools/call", {"name": "compile_method", "arguments": {
        "className": "shop.models.Product", "source": SHOUT}}).json()
    said = json.dumps(reply)
    assert "is not a commit intent" in said and "not a module file of the image" in said, reply
    assert victim.read_text() == "mine\n" and (shop.image / "shop" / "__init__.py").exists()


def test_a_commit_waiting_out_the_lock_another_sessions_code_holds_names_its_holder(tmp_path):
    # Not "the image could not be written ... Make room or fix the permissions": the
    # lock's holder is what to see to.
    image = write_image(tmp_path / "image", EXAMPLE_FILES)
    with Daemon(tmp_path, env={"GS_MCP_IMAGE": str(image), "GS_MCP_IMAGE_LOCK_WAIT": "0.2"}) as daemon:
        holder, committer = session(daemon), session(daemon)
        assert not committer.tool("status").get("isError")
        lock = image / ".gsmcpd" / "lock"
        held = holder.tool("execute_code", code="import fcntl, os\nheld = open(%r)\n"
                                                "fcntl.flock(held, fcntl.LOCK_EX)\nos.getpid()" % str(lock))
        pid = tool_text(held).strip().splitlines()[-1]
        refused = committer.tool("compile_method", className="shop.models.Product", source=SHOUT)
        assert error_kind(refused) == "other"
        said = tool_text(refused)
        assert said.startswith("commit failed: the image lock %s was not free after 0.2s (GS_MCP_IMAGE_LOCK_WAIT): "
                               "held by pid %s " % (lock, pid)), said
        assert said.endswith("; your changes are kept uncommitted (shop.models)"), said
        for tool in ("refresh", "abort"):   # each said "ImageLockTimeout: [Errno 110] ..."
            refused = committer.tool(tool)
            assert error_kind(refused) == "other"
            assert tool_text(refused).startswith(f"{tool} failed: the image lock {lock} was not free"), refused
            assert tool_text(refused).endswith("its uncommitted changes, are as they were"), refused
        assert not holder.tool("execute_code", code="held.close()").get("isError")
        assert committer.tool("commit")["structuredContent"]["committed"] == ["shop.models"]


def test_a_session_open_waiting_out_the_lock_another_sessions_code_holds_says_so_without_a_traceback(tmp_path):
    # The worker logged a full traceback and answered "ImageLockTimeout: [Errno 110] ...".
    image = write_image(tmp_path / "image", EXAMPLE_FILES)
    with Daemon(tmp_path, env={"GS_MCP_IMAGE": str(image), "GS_MCP_IMAGE_LOCK_WAIT": "0.2"}) as daemon:
        lock = image / ".gsmcpd" / "lock"
        held = session(daemon).tool("execute_code", code="import fcntl, os\nheld = open(%r)\n"
                                                          "fcntl.flock(held, fcntl.LOCK_EX)\nos.getpid()" % str(lock))
        pid = tool_text(held).strip().splitlines()[-1]
        resp = Client(daemon.port).post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})
        message = resp.json()["error"]["message"]
        assert (f"ImageLockTimeout: the image lock {lock} was not free after 0.2s (GS_MCP_IMAGE_LOCK_WAIT): "
                f"held by pid {pid} ") in message, message
        assert "Traceback" not in daemon.log_text() and "prepare failed" not in daemon.log_text()


def test_a_change_to_a_module_whose_file_is_a_link_is_refused_at_its_commit_and_kept(tmp_path):
    # The commit's rename replaced the link with a file: what it pointed to never got the
    # change, and later edits to it no longer reached the image.
    image = write_image(tmp_path / "image", EXAMPLE_FILES)
    outside = tmp_path / "src" / "models.py"
    outside.parent.mkdir()
    (image / "shop" / "models.py").rename(outside)
    (image / "shop" / "models.py").symlink_to(outside)
    before = outside.read_text()
    with Daemon(tmp_path, env={"GS_MCP_IMAGE": str(image)}) as daemon:
        client = session(daemon)
        refused = client.tool("compile_method", className="shop.models.Product", source=SHOUT)
        assert error_kind(refused) == "refused", refused
        assert tool_text(refused).startswith(
            f"commit refused: shop/models.py is a symbolic link (to {outside}): a commit would replace "
            "the link with a file")
        assert "your changes are kept uncommitted (shop.models)" in tool_text(refused)
        assert (image / "shop" / "models.py").is_symlink() and outside.read_text() == before
        assert journal(image) == []
        assert "shop.models" in tool_text(client.tool("status"))
        assert "def shout" in tool_text(client.tool("get_method_source", className="shop.models.Product",
                                                    selector="shout"))


ADD_Q = "import shop\nshop.__spec__.loader.view.add_module('q', 'Q = 1\\n')"


def test_a_new_module_whose_path_a_directory_took_is_refused_and_the_image_stays_committable(shop):
    # The rename onto the directory once failed past the commit point: the session was
    # told "Committed q", every other session saw a module q no file held, and every
    # later commit failed on it, whoever made it, until the directory went.
    (shop.image / "q.py").mkdir()   # made behind gsmcpd's back
    a, b = session(shop), session(shop)
    a.tool("execute_code", code=ADD_Q)
    refused = a.tool("commit")
    assert error_kind(refused) == "refused", refused
    assert tool_text(refused) == (
        "commit refused: q.py is a directory in the image, not a module's file: a commit cannot put "
        "the module's file in its place, so nothing was written; move the directory away and commit "
        "again; your changes are kept uncommitted (q)")
    assert (shop.image / "q.py").is_dir() and journal(shop.image) == []
    assert not (shop.image / ".gsmcpd" / "commit.intent").exists()
    assert not [p.name for p in shop.image.iterdir() if ".tmp-" in p.name]
    assert "q" not in session(shop).tool("list_dictionaries")["structuredContent"]["dictionaries"]
    done = b.tool("compile_method", className="shop.models.Product", source=SHOUT)   # others commit on
    assert done["structuredContent"]["committed"] == ["shop.models"], done
    (shop.image / "q.py").rmdir()
    assert a.tool("commit")["structuredContent"]["committed"] == ["q"]
    assert (shop.image / "q.py").read_text() == "Q = 1\n"


# Runs in the session's worker: the first temp file its next commit writes finds the
# package swapped for a link to a victim's directory (another account's link, as root),
# as an account sharing the image could do between the commit's check and its writes.
SWAP_AT_FIRST_WRITE = '''
import os
import gsmcpd.image.store as store
real_create_own = store._create_own
def swap_then_create(*args, **kwargs):
    store._create_own = real_create_own
    os.rename(%(pkg)r, %(pkg)r + ".moved")
    os.symlink(%(victim)r, %(pkg)r)
    if os.geteuid() == 0:
        os.lchown(%(pkg)r, 1234, 1234)
    return real_create_own(*args, **kwargs)
store._create_own = swap_then_create
'''


def test_a_package_swapped_for_a_link_while_a_session_commits_gets_nothing_written_through_it(shop, tmp_path):
    victim = tmp_path / "victims"
    victim.mkdir()
    (victim / "models.py").write_text("the victim's\n")
    client = session(shop)
    client.tool("execute_code", code=SWAP_AT_FIRST_WRITE % {"pkg": str(shop.image / "shop"),
                                                            "victim": str(victim)})
    refused = client.tool("compile_method", className="shop.models.Product", source=SHOUT)
    assert error_kind(refused) == "other"
    said = tool_text(refused)
    assert said.startswith("commit failed: the image could not be written ([Errno ")
    assert "shop/models.py: its directory in the image " in said
    assert "nothing was written and your changes are kept uncommitted (shop.models)" in said
    assert {path.name: path.read_text() for path in victim.iterdir()} == {"models.py": "the victim's\n"}
    assert "def shout" not in (shop.image / "shop.moved" / "models.py").read_text()
    assert journal(shop.image) == []
    # Put back, the image takes the session's change, which it kept.
    (shop.image / "shop").unlink()
    (shop.image / "shop.moved").rename(shop.image / "shop")
    assert client.tool("commit")["structuredContent"]["committed"] == ["shop.models"]
    assert "def shout(self):" in (shop.image / "shop" / "models.py").read_text()


def test_a_change_to_an_immutable_module_is_refused_whole_kept_and_commits_once_it_is_cleared(shop):
    # Root may write any mode, so nothing looked further: the rename past the commit point
    # failed, the call was told "committed", the disk kept the old text and every later
    # commit of any session failed finishing it.
    client, other = session(shop), session(shop)
    models = shop.image / "shop" / "models.py"
    with chattr_flagged(models, "i"):
        refused = client.tool("compile_method", className="shop.models.Product", source=SHOUT)
        assert error_kind(refused) == "refused"
        assert tool_text(refused) == (
            "commit refused: shop/models.py in the image is immutable (chattr +i, shown by lsattr), so it "
            "cannot be replaced or removed, even by root; nothing was written; an administrator must clear it "
            "(chattr -i) for the commit to be made; your changes are kept uncommitted (shop.models)")
        assert "def shout" not in models.read_text() and journal(shop.image) == []
        assert [path.name for path in models.parent.iterdir() if path.name.startswith(".")] == []
        # Another session's commit of another module is not held up by it.
        added = other.tool("add_dictionary", dictionaryName="birds")
        assert added["structuredContent"]["committed"] == ["birds"], added
    assert client.tool("status")["structuredContent"]["changedModules"] == ["shop.models"]
    assert client.tool("commit")["structuredContent"]["committed"] == ["shop.models"]
    assert "def shout(self):" in models.read_text()



# The journal append fails once, past the commit point (the disk full): answered committed,
# left pending on disk.
JOURNAL_FULL_ONCE = """
import errno
import gsmcpd.image.store as store
import pets
real_append = store.ImageStore._append_journal
def full_once(self, *args):
    store.ImageStore._append_journal = real_append
    raise OSError(errno.ENOSPC, "No space left on device")
store.ImageStore._append_journal = full_once
pets.__spec__.loader.view.set_source("pets", "SOUND = 'meow'\\n", live=False)
"""


def test_a_commit_with_nothing_to_write_finishes_one_left_pending_on_disk(tmp_path):
    # It said "Nothing to commit" and left the intent until another real commit or a restart.
    image = write_image(tmp_path / "image", {"pets.py": "SOUND = 'woof'\n"})
    with Daemon(tmp_path, env={"GS_MCP_IMAGE": str(image)}) as daemon:
        a = session(daemon)
        assert not a.tool("execute_code", code=JOURNAL_FULL_ONCE).get("isError")
        committed = a.tool("commit")
        assert not committed.get("isError") and (image / ".gsmcpd" / "commit.intent").exists(), committed
        nothing = a.tool("commit")
        assert "Nothing to commit" in tool_text(nothing), nothing
        assert not (image / ".gsmcpd" / "commit.intent").exists()
        assert [entry["session"] for entry in journal(image)] == [a.session]
        assert (image / "pets.py").read_text() == "SOUND = 'meow'\n"
