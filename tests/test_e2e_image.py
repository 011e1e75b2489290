"""Issue 3 end to end: the Python image's views and transactions through the real
daemon, each test on its own throwaway image in tmp_path.

Two sessions are two worker processes with two views: a commit is invisible to
the other until it refreshes; two changes to one file conflict without losing
either; a session's tests run against its uncommitted change; and SIGKILL of a
worker in the middle of a commit leaves the image all old or all new.
"""

import ast
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time

import pytest

from gsmcpd.image.default import EXAMPLE_FILES
from helpers import (QUICK_STOP, Client, Daemon, call_in_thread, commit_left_half_applied, killed, nested_packages,
                     pid_alive, too_long_tree, tool_text, wait_until)
from helpers import open_session as session
from test_tools_browse import FORWARD
from test_tools_support import daemon_on_image, write_image


# Commits' flushes to disk are no test's subject here (conftest).
pytestmark = pytest.mark.usefixtures("daemons_fsync_skipped")


@pytest.fixture
def shop(tmp_path):
    """A daemon serving a throwaway copy of the example shop image."""
    with daemon_on_image(tmp_path, EXAMPLE_FILES) as daemon:
        yield daemon


def error_kind(result):
    assert result.get("isError"), result
    return result["structuredContent"]["error"]["kind"]


def journal(image):
    path = image / ".gsmcpd" / "journal.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


SHOUT = "def shout(self):\n    return self.name.upper()\n"


def test_a_commit_is_invisible_to_another_session_until_it_refreshes(shop):
    a, b = session(shop), session(shop)
    assert a.tool("status")["structuredContent"]["pid"] != b.tool("status")["structuredContent"]["pid"]
    done = a.tool("compile_method", className="shop.models.Product", source=SHOUT)
    assert done["structuredContent"]["committed"] == ["shop.models"]
    assert "def shout(self):" in (shop.image / "shop/models.py").read_text()

    assert error_kind(b.tool("get_method_source", className="Product", selector="shout")) == "notFound"
    call = "from shop.models import Product\nProduct('pen', 150).shout()"
    missing = b.tool("execute_code", code=call)
    assert "AttributeError" in tool_text(missing) and "shout" in tool_text(missing)
    assert b.tool("status")["structuredContent"]["viewVersion"] == 0
    assert a.tool("status")["structuredContent"]["viewVersion"] == 1

    refreshed = b.tool("refresh")["structuredContent"]
    assert refreshed["broughtIn"] == ["shop.models"] and refreshed["version"] == 1
    assert "self.name.upper()" in tool_text(b.tool("get_method_source", className="Product",
                                                   selector="shout"))
    assert b.tool("execute_code", code=call)["structuredContent"]["result"] == "'PEN'"


def test_two_sessions_changing_one_module_conflict_and_nothing_is_lost(shop):
    a, b = session(shop), session(shop)
    a.tool("compile_method", className="Product", source=SHOUT)
    second = b.tool("compile_method", className="Cart",
                    source="def size(self):\n    return len(self.lines)\n")
    assert error_kind(second) == "conflict"
    assert "shop/models.py" in tool_text(second) and "kept uncommitted" in tool_text(second)
    assert tool_text(second).endswith(FORWARD)   # abort, then redo: a refresh keeps the conflict

    on_disk = (shop.image / "shop/models.py").read_text()
    assert "def shout(self):" in on_disk and "def size(self):" not in on_disk
    assert [entry["files"][0]["file"] for entry in journal(shop.image)] == ["shop/models.py"]
    status = b.tool("status")["structuredContent"]
    assert status["uncommittedChanges"] is True and status["changedModules"] == ["shop.models"]
    assert "len(self.lines)" in tool_text(b.tool("get_method_source", className="Cart", selector="size"))
    assert error_kind(b.tool("commit")) == "conflict"          # still conflicts: no lost update

    aborted = b.tool("abort")["structuredContent"]
    assert aborted["discarded"] == ["shop.models"]
    assert "upper()" in tool_text(b.tool("get_method_source", className="Product", selector="shout"))
    assert error_kind(b.tool("get_method_source", className="Cart", selector="size")) == "notFound"
    assert b.tool("status")["structuredContent"]["uncommittedChanges"] is False


def test_a_conflict_says_whether_the_file_was_changed_created_or_removed_since_the_session_read_it(shop):
    # Each was "changed on disk since this session read it", one it never read.
    a, b = session(shop), session(shop)
    a.tool("add_dictionary", dictionaryName="birds")
    a.tool("compile_class_definition", source="class Owl:\n    pass\n", dictionaryName="birds")
    created = b.tool("add_dictionary", dictionaryName="birds")   # not the same text: a conflict
    assert error_kind(created) == "conflict"
    assert tool_text(created).startswith("commit failed: birds.py was created on disk since this session "
                                         "read the image (by ")
    b.tool("abort")
    a.tool("remove_dictionary", dictionaryName="birds")
    b.tool("compile_class_definition", source="class Bird:\n    pass\n", dictionaryName="birds")
    removed = tool_text(b.tool("commit"))
    assert removed.startswith("commit failed: birds.py was removed on disk since this session read the image")
    a.tool("compile_method", className="Product", source=SHOUT)
    b.tool("compile_method", className="Cart", source="def size(self):\n    return len(self.lines)\n")
    both = tool_text(b.tool("commit"))
    assert both.startswith("commit failed: birds.py was removed, shop/models.py was changed on disk"), both


def test_a_conflict_names_who_made_each_file_so_a_session_or_an_edit_outside_gsmcpd(shop):
    a, b = session(shop), session(shop)
    a.tool("compile_method", className="Product", source=SHOUT)
    made = journal(shop.image)[-1]
    who = f"by {made['user']}'s session {a.session[:8]} at {made['time'][:10]} {made['time'][11:19]} UTC"
    (shop.image / "shop/__init__.py").write_text('"""Edited in an editor."""\n')
    b.tool("compile_method", className="Cart", source="def size(self):\n    return len(self.lines)\n")
    b.tool("execute_code", code='import shop\nview = shop.__spec__.loader.view\n'
                                'view.set_source("shop", "# ours\\n", live=False)')
    conflict = b.tool("commit")
    assert error_kind(conflict) == "conflict"
    assert tool_text(conflict).startswith(
        "commit failed: shop/__init__.py was changed, shop/models.py was changed on disk since this session "
        f"read the image (shop/__init__.py by an edit outside gsmcpd; shop/models.py {who}); "), tool_text(conflict)
    files = conflict["structuredContent"]["error"]["files"]
    assert files == [{"file": "shop/__init__.py", "module": "shop", "how": "changed", "by": None},
                     {"file": "shop/models.py", "module": "shop.models", "how": "changed",
                      "by": {"user": made["user"], "session": a.session, "time": made["time"]}}]


def test_a_module_made_a_package_is_answered_committed_though_another_removed_its_file_alike(shop):
    # The old file's removal, which the disk held, is taken as committed; the package's
    # __init__.py was written all the same, yet the answer said "Nothing to write".
    a, b = session(shop), session(shop)
    made_package = b.tool("execute_code", code=(
        "import shop\nview = shop.__spec__.loader.view\nview.remove_module('shop.test_models')\n"
        "view.add_module('shop.test_models', 'PACKAGE = True\\n', package=True)"))
    assert not made_package.get("isError"), made_package
    assert not a.tool("remove_dictionary", dictionaryName="shop.test_models").get("isError")
    done = b.tool("commit")
    assert (done["structuredContent"]["committed"], done["structuredContent"]["alreadyCommitted"]) == (
        ["shop.test_models"], []), done
    assert tool_text(done).startswith("Committed shop.test_models (view version"), tool_text(done)
    assert (shop.image / "shop" / "test_models" / "__init__.py").read_text() == "PACKAGE = True\n"


def test_refresh_names_a_module_made_a_package_by_both_kept_ours_only(shop):
    # The old file's removal is committed alike, the two __init__.py differ: refresh named
    # the module both kept ours and already committed.
    a, b = session(shop), session(shop)
    for client, value in ((a, 1), (b, 2)):
        made_package = client.tool("execute_code", code=(
            "import shop\nview = shop.__spec__.loader.view\nview.remove_module('shop.test_models')\n"
            f"view.add_module('shop.test_models', 'PACKAGE = {value}\\n', package=True)"))
        assert not made_package.get("isError"), made_package
    assert a.tool("commit")["structuredContent"]["committed"] == ["shop.test_models"]
    refreshed = b.tool("refresh")
    assert (refreshed["structuredContent"]["keptOurs"], refreshed["structuredContent"]["alreadyCommitted"],
            refreshed["structuredContent"]["broughtIn"]) == (["shop.test_models"], [], []), refreshed
    assert "already committed" not in tool_text(refreshed)


@pytest.mark.parametrize("tool", ["refresh", "commit"])
def test_a_module_another_made_a_package_where_ours_removed_it_is_named_brought_in_only(shop, tool):
    # Its old file's removal is alike, its package theirs: refresh named it under both
    # broughtIn and alreadyCommitted, commit under alreadyCommitted only (the package unsaid).
    a, b = session(shop), session(shop)
    removed = b.tool("execute_code", code="import shop\nshop.__spec__.loader.view.remove_module('shop.test_models')")
    assert not removed.get("isError"), removed
    made_package = a.tool("execute_code", code=(
        "import shop\nview = shop.__spec__.loader.view\nview.remove_module('shop.test_models')\n"
        "view.add_module('shop.test_models', 'PACKAGE = True\\n', package=True)"))
    assert not made_package.get("isError"), made_package
    assert a.tool("commit")["structuredContent"]["committed"] == ["shop.test_models"]
    answer = b.tool(tool)
    assert (answer["structuredContent"]["broughtIn"], answer["structuredContent"]["alreadyCommitted"]) == (
        ["shop.test_models"], []), answer
    assert "already committed" not in tool_text(answer) and "shop.test_models" in tool_text(answer)
    assert b.tool("status")["structuredContent"]["uncommittedChanges"] is False


def test_a_journal_past_its_limit_is_compacted_and_a_conflict_still_names_a_long_past_commit(tmp_path):
    # The journal grew a line a commit, forever, and each conflict read it back under the
    # exclusive lock. Bounded (GS_MCP_JOURNAL_LIMIT), it keeps each file's last commit.
    image = write_image(tmp_path / "image", {"old.py": "OLD = 0\n", "hot.py": "N = 0\n"})
    with Daemon(tmp_path, env={"GS_MCP_IMAGE": str(image), "GS_MCP_JOURNAL_LIMIT": "4096"}) as daemon:
        a, b = session(daemon), session(daemon)
        many = a.tool("execute_code", code=(
            "import old, hot\nview = old.__spec__.loader.view\n"
            "view.set_source('old', 'OLD = 1\\n', live=False)\nview.commit()\n"
            "for n in range(150):\n    view.set_source('hot', f'N = {n + 1}\\n', live=False)\n    view.commit()\n"))
        assert not many.get("isError"), many
        assert a.tool("status")["structuredContent"]["viewVersion"] == 151
        lines = (image / ".gsmcpd" / "journal.jsonl").read_bytes().splitlines()
        assert json.loads(lines[0])["dropped"] == 151 - (len(lines) - 1) > 0
        mine = b.tool("execute_code", code=(
            "import old\nold.__spec__.loader.view.set_source('old', 'OLD = 2\\n', live=False)"))
        assert not mine.get("isError"), mine
        conflict = b.tool("commit")
        assert error_kind(conflict) == "conflict"
        assert conflict["structuredContent"]["error"]["files"][0]["by"]["session"] == a.session
        assert f"session {a.session[:8]}" in tool_text(conflict)
        assert b.tool("abort")["structuredContent"]["version"] == 151


def test_a_module_an_editor_saved_with_a_bom_but_the_sessions_text_is_already_committed_bom_kept(tmp_path):
    # The commit conflicted ("changed on disk ... by an edit outside gsmcpd") over a file
    # holding the session's very text, and a refresh kept ours on the old base.
    with daemon_on_image(tmp_path, {"sign.py": "SIGN = 'cafe'\n"}) as daemon:
        client = session(daemon)
        changed = client.tool("execute_code", code=(
            "import sign\nsign.__spec__.loader.view.set_source('sign', \"SIGN = 'th\u00e9'\\n\", live=False)"))
        assert not changed.get("isError"), changed
        saved = b"\xef\xbb\xbf" + "SIGN = 'thé'\n".encode()
        (daemon.image / "sign.py").write_bytes(saved)     # an editor's save, with a BOM
        done = client.tool("commit")
        assert (done["structuredContent"]["committed"], done["structuredContent"]["alreadyCommitted"]) == (
            [], ["sign"]), done
        assert (daemon.image / "sign.py").read_bytes() == saved
        again = client.tool("execute_code", code=(
            "import sign\nview = sign.__spec__.loader.view\nview.set_source('sign', \"SIGN = 'tea'\\n\", "
            "live=False)\nview.commit()"))
        assert not again.get("isError"), again
        assert (daemon.image / "sign.py").read_bytes() == b"\xef\xbb\xbfSIGN = 'tea'\n"   # the BOM kept


def test_a_bom_an_editor_put_on_is_brought_in_by_no_abort_or_commit_as_by_no_refresh(tmp_path):
    # Abort and commit named the module under broughtIn ("brought in others' commits to
    # sign"), its text unchanged, where refresh, told them by text, named nothing.
    with daemon_on_image(tmp_path, {"sign.py": "SIGN = 'cafe'\n"}) as daemon:
        refreshing, aborting, committing = session(daemon), session(daemon), session(daemon)
        for client in (refreshing, aborting, committing):   # each view read before the save
            assert not client.tool("status").get("isError")
        (daemon.image / "sign.py").write_bytes(b"\xef\xbb\xbfSIGN = 'cafe'\n")
        assert refreshing.tool("refresh")["structuredContent"]["broughtIn"] == []
        aborted = aborting.tool("abort")
        assert aborted["structuredContent"]["broughtIn"] == [] and "brought in" not in tool_text(aborted)
        committed = committing.tool("commit")
        assert committed["structuredContent"]["broughtIn"] == [] and "brought in" not in tool_text(committed)


def test_a_mutation_commits_over_a_bom_an_editor_put_on_keeping_it(tmp_path):
    # It conflicted ("sign.py was changed on disk ... by an edit outside gsmcpd"), the
    # file holding the text the session stood on, its advice to abort discarding the change.
    with daemon_on_image(tmp_path, {"sign.py": "class Sign:\n    def f(self):\n        return 1\n"}) as daemon:
        client = session(daemon)
        assert not client.tool("status").get("isError")   # the view read before the save
        (daemon.image / "sign.py").write_bytes(b"\xef\xbb\xbf" + (daemon.image / "sign.py").read_bytes())
        answer = client.tool("compile_method", className="sign.Sign", source="def f(self):\n    return 2\n")
        assert not answer.get("isError"), answer
        assert answer["structuredContent"]["committed"] == ["sign"] and "broughtIn" not in answer["structuredContent"]
        assert (daemon.image / "sign.py").read_bytes() == b"\xef\xbb\xbfclass Sign:\n    def f(self):\n        return 2\n"


def test_a_package_removes_over_a_bom_an_editor_put_on_one_of_its_modules(tmp_path):
    # It conflicted ("pkg/sub.py was changed on disk ... by an edit outside gsmcpd") over
    # a file holding the text the session stood on, as a file written no longer did.
    with daemon_on_image(tmp_path, {"pkg/__init__.py": "", "pkg/sub.py": "SUB = 1\n"}) as daemon:
        client = session(daemon)
        assert not client.tool("status").get("isError")   # the view read before the save
        (daemon.image / "pkg/sub.py").write_bytes(b"\xef\xbb\xbfSUB = 1\n")
        answer = client.tool("remove_dictionary", dictionaryName="pkg")
        assert not answer.get("isError"), answer
        assert answer["structuredContent"]["committed"] == ["pkg", "pkg.sub"]
        assert not (daemon.image / "pkg/sub.py").exists() and not (daemon.image / "pkg/__init__.py").exists()


def test_a_conflict_is_answered_as_one_whatever_else_another_account_wrote_in_the_journal(shop):
    # Such records made the conflict's "who" a TypeError or RecursionError, answered instead.
    a, b = session(shop), session(shop)
    a.tool("compile_method", className="Product", source=SHOUT)
    made = journal(shop.image)[-1]
    with open(shop.image / ".gsmcpd" / "journal.jsonl", "a") as written:
        written.write('{"id": "odd", "files": 7}\n{"id": "odder", "files": [{"file": ["shop/models.py"]}]}\n')
        written.write("[" * 100000 + "]" * 100000 + "\n")
    conflict = b.tool("compile_method", className="Cart", source="def size(self):\n    return len(self.lines)\n")
    assert error_kind(conflict) == "conflict", conflict
    assert conflict["structuredContent"]["error"]["files"] == [
        {"file": "shop/models.py", "module": "shop.models", "how": "changed",
         "by": {"user": made["user"], "session": a.session, "time": made["time"]}}]


def test_a_commit_finishes_one_left_pending_past_a_line_another_account_wrote_after_its_journal_line(
        tmp_path, monkeypatch):
    # Whether the pending commit's line was written was asked of the journal's last line
    # only: a JSON list there failed every commit (AttributeError), as each finishes
    # what is pending first.
    from gsmcpd.image import store as store_module
    from gsmcpd.image.store import CommitPending, ImageStore, sha256
    image = write_image(tmp_path / "image", {"a.py": "A = 1\n", "b.py": "B = 1\n"})
    with Daemon(tmp_path, env={"GS_MCP_IMAGE": str(image)}) as daemon:
        client = session(daemon)
        other = ImageStore(image)   # another gsmcpd on the image, killed before its intent went
        real_unlink = os.unlink

        def killed_at_the_intent(path, *args, **kwargs):
            if path == "commit.intent":
                raise OSError("killed")
            real_unlink(path, *args, **kwargs)

        monkeypatch.setattr(store_module.os, "unlink", killed_at_the_intent)
        with pytest.raises(CommitPending):
            other.commit({"a.py": b"A = 2\n"}, {"a.py": sha256(b"A = 1\n")}, user="u", session_id="s")
        monkeypatch.undo()
        with open(image / ".gsmcpd" / "journal.jsonl", "a") as written:
            written.write("[1]\n")
        changed = client.tool("execute_code", code=(
            "import b\nb.__spec__.loader.view.set_source('b', 'B = 2\\n', live=False)"))
        assert not changed.get("isError"), changed
        done = client.tool("commit")
        assert done["structuredContent"]["committed"] == ["b"], done
        lines = (image / ".gsmcpd" / "journal.jsonl").read_text().splitlines()
        assert [json.loads(line)["session"] for line in lines if line.startswith("{")] == ["s", client.session]
        assert not (image / ".gsmcpd" / "commit.intent").exists()


# Workspace code that changes the view's shop.models without committing.
APPEND_UNCOMMITTED = """
import shop.models
view = shop.models.__spec__.loader.view
view.set_source("shop.models", view.source("shop.models") + "EXTRA = 1\\n", live=False)
"""


def test_the_same_change_made_in_two_sessions_is_committed_once_and_conflicts_with_nothing(shop):
    a, b = session(shop), session(shop)
    a.tool("compile_method", className="shop.models.Product", source=SHOUT)
    second = b.tool("compile_method", className="shop.models.Product", source=SHOUT)
    assert not second.get("isError"), second
    assert (second["structuredContent"]["committed"], second["structuredContent"]["alreadyCommitted"]) == (
        [], ["shop.models"])
    # Said once, in place of "committed (view version N)": nothing was written.
    assert ("; already committed by another, with the same text: shop.models, so nothing was written (view "
            f"version {second['structuredContent']['version']})") in tool_text(second)
    assert "committed (view version" not in tool_text(second)
    assert tool_text(second).count("already committed") == 1
    assert [entry["session"] for entry in journal(shop.image)] == [a.session]
    assert b.tool("status")["structuredContent"]["uncommittedChanges"] is False
    # Made alike, uncommitted, in both; one commits: the other's refresh takes it as committed.
    for client in (a, b):
        assert not client.tool("execute_code", code=APPEND_UNCOMMITTED).get("isError")
    assert a.tool("commit")["structuredContent"]["committed"] == ["shop.models"]
    refreshed = b.tool("refresh")["structuredContent"]
    assert (refreshed["alreadyCommitted"], refreshed["keptOurs"], refreshed["broughtIn"]) == (
        ["shop.models"], [], [])
    assert b.tool("status")["structuredContent"]["uncommittedChanges"] is False
    assert tool_text(b.tool("commit")).startswith("Nothing to commit")
    assert len(journal(shop.image)) == 2


# Workspace code that changes the image through the view API without committing:
# Product.price doubles, and a new test module tests that (both styles).
UNCOMMITTED_CHANGE = '''
import shop.models
view = shop.models.__spec__.loader.view
before = view.source("shop.models")
after = before.replace("        return self.price_cents\\n", "        return self.price_cents * 2\\n")
assert after != before
view.set_source("shop.models", after, live=False)
view.add_module("shop.test_double", """\\
import unittest

from shop.models import Product


class DoubleTest(unittest.TestCase):
    def test_price_doubles(self):
        self.assertEqual(Product("pen", 150).price(), 300)


class TestDoublePlain:
    def test_price_doubles(self):
        assert Product("pen", 150).price() == 300
""")
view.refresh().reloaded
'''


def test_a_sessions_tests_run_against_its_uncommitted_change(shop):
    a, b = session(shop), session(shop)
    assert "shop.models" in tool_text(a.tool("execute_code", code=UNCOMMITTED_CHANGE))
    status = a.tool("status")["structuredContent"]
    assert status["changedModules"] == ["shop.models", "shop.test_double"]
    assert not (shop.image / "shop/test_double.py").exists()
    assert "price_cents * 2" not in (shop.image / "shop/models.py").read_text()

    assert set(a.tool("list_test_classes")["structuredContent"]["testClasses"]) == {
        "shop.test_models.CartTest", "shop.test_double.DoubleTest", "shop.test_double.TestDoublePlain"}
    for name in ("DoubleTest", "TestDoublePlain"):
        ran = a.tool("run_test_class", className=name)["structuredContent"]
        assert (ran["run"], ran["passed"]) == (1, 1), ran
    old_tests = a.tool("run_test_class", className="CartTest")["structuredContent"]
    assert [f["test"] for f in old_tests["failed"]] == [
        "shop.test_models.CartTest.test_total_counts_quantities"]
    assert old_tests["failed"][0]["message"] == "600 != 300"

    # B sees neither the change nor A's tests.
    assert b.tool("list_test_classes")["structuredContent"]["testClasses"] == ["shop.test_models.CartTest"]
    assert error_kind(b.tool("run_test_class", className="DoubleTest")) == "notFound"
    ran = b.tool("run_test_class", className="CartTest")["structuredContent"]
    assert (ran["run"], ran["passed"]) == (4, 4)

    assert a.tool("commit")["structuredContent"]["committed"] == ["shop.models", "shop.test_double"]
    assert error_kind(b.tool("run_test_class", className="DoubleTest")) == "notFound"
    b.tool("refresh")
    ran = b.tool("run_test_class", className="shop.test_double.DoubleTest")["structuredContent"]
    assert (ran["run"], ran["passed"]) == (1, 1)


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


def test_a_commit_right_behind_a_sessions_open_is_not_in_its_view(shop):
    # The worker reads its view after the initialize reply, but the view is fixed
    # before it: a commit landing in between waits for the read.
    b = session(shop)
    for turn in range(5):
        a = Client(shop.port)
        opened = a.post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})
        a.session = opened.header("mcp-session-id")
        method = "def turn%d(self):\n    return %d\n" % (turn, turn)
        done = b.tool("compile_method", className="shop.models.Product", source=method)
        assert done["structuredContent"]["committed"] == ["shop.models"]
        assert a.tool("status")["structuredContent"]["viewVersion"] == turn
        assert error_kind(a.tool("get_method_source", className="Product", selector="turn%d" % turn)) == "notFound"
        a.delete()


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
    assert not intent.exists() and not temp.exists()
    if step == "_write_intent":   # not decided: nothing of it
        assert (image / "pets.py").read_text() == "SOUND = 'woof'\n" and journal(image) == []
    else:                         # decided: finished on disk before the server exited
        assert (image / "pets.py").read_text() == "SOUND = 'meow'\n"
        assert [entry["session"] for entry in journal(image)] == [a.session]
        assert "finished a commit to %s that was interrupted" % image in daemon.log_text()


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
    assert not intent.exists() and not temp.exists()
    if step == "_write_intent":   # not decided: nothing of it
        assert (image / "pets.py").read_text() == "SOUND = 'woof'\n" and journal(image) == []
    else:                         # decided: finished on disk before the server exited
        assert (image / "pets.py").read_text() == "SOUND = 'meow'\n"
        assert [entry["session"] for entry in journal(image)] == [a.session]
        assert "finished a commit to %s that was interrupted" % image in daemon.log_text()


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
    intent = shop.image / ".gsmcpd" / "commit.intent"
    intent.write_text(json.dumps({"writes": {str(victim): "shop/__init__.py"}, "removes": [],
                                  "record": {"id": "planted"}}))
    reply = client.call("tools/call", {"name": "compile_method", "arguments": {
        "className": "shop.models.Product", "source": SHOUT}}).json()
    said = json.dumps(reply)
    assert "is not a commit intent" in said and "not a module file of the image" in said, reply
    assert victim.read_text() == "mine\n" and (shop.image / "shop" / "__init__.py").exists()


def test_a_package_linked_in_by_the_daemons_own_account_is_committed_through(tmp_path):
    # A single-user layout: image/shop -> ~/src/shop, a link the user made themselves.
    src = write_image(tmp_path / "src", EXAMPLE_FILES)
    image = tmp_path / "image"
    image.mkdir()
    (image / "shop").symlink_to(src / "shop", target_is_directory=True)
    assert os.lstat(image / "shop").st_uid == os.geteuid()
    with Daemon(tmp_path, env={"GS_MCP_IMAGE": str(image)}) as daemon:
        client = session(daemon)
        done = client.tool("compile_method", className="shop.models.Product", source=SHOUT)
        assert not done.get("isError"), done
        assert done["structuredContent"]["committed"] == ["shop.models"]
    assert "def shout(self):" in (src / "shop" / "models.py").read_text()
    assert (image / "shop").is_symlink()
    assert [f["file"] for record in journal(image) for f in record["files"]] == ["shop/models.py"]


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


def dictionaries(client):
    """Every dictionary, page after page (a deep package tree has more than a page)."""
    listed, offset = [], 0
    while offset is not None:
        page = client.tool("list_dictionaries", offset=offset)["structuredContent"]
        listed += page["dictionaries"]
        offset = page.get("nextOffset")
    return listed


def test_a_module_is_never_committed_into_a_package_another_session_removed_or_left_behind_by_one(shop):
    # Per-file checks let both through: a module "committed" into no package (in no
    # session, its own neither), and a package removed around a module added meanwhile.
    a, b = session(shop), session(shop)
    assert a.tool("remove_dictionary", dictionaryName="shop")["structuredContent"]["committed"][0] == "shop"
    added = b.tool("add_dictionary", dictionaryName="shop.orders")
    assert error_kind(added) == "conflict"
    assert "shop/__init__.py was removed on disk" in tool_text(added) and "kept uncommitted" in tool_text(added)
    assert not (shop.image / "shop").exists()
    assert b.tool("status")["structuredContent"]["changedModules"] == ["shop.orders"]
    refreshed = b.tool("refresh")["structuredContent"]
    assert refreshed["keptOurs"] == ["shop"] and "shop.models" in refreshed["broughtIn"]
    assert "shop.orders" in dictionaries(b)
    assert error_kind(b.tool("commit")) == "conflict"           # until it aborts
    assert b.tool("abort")["structuredContent"]["discarded"] == ["shop.orders"]
    assert not any(name.startswith("shop") for name in dictionaries(b))
    assert len(journal(shop.image)) == 1

    assert b.tool("add_dictionary", dictionaryName="mall.shops")["structuredContent"]["committed"] == [
        "mall", "mall.shops"]
    c, d = session(shop), session(shop)
    added = c.tool("add_dictionary", dictionaryName="mall.food")
    assert added["structuredContent"]["committed"] == ["mall.food"]
    removed = d.tool("remove_dictionary", dictionaryName="mall")
    assert error_kind(removed) == "conflict" and "mall/food.py was created on disk" in tool_text(removed)
    assert (shop.image / "mall/__init__.py").exists() and (shop.image / "mall/food.py").exists()
    assert {"mall", "mall.food", "mall.shops"} <= set(dictionaries(session(shop)))
    assert [len(entry["files"]) for entry in journal(shop.image)][1:] == [2, 1]



def test_a_package_tree_nested_past_the_recursion_limit_is_served_and_committed_into(tmp_path, deep_dir):
    # Made outside gsmcpd: reading the image walked it, and a commit opened its directories,
    # one recursion per level; every session's read failed, and the daemon's start.
    image = write_image(deep_dir, EXAMPLE_FILES)
    depth = sys.getrecursionlimit() + 100
    deepest = nested_packages(image, depth)
    (image / deepest / "leaf.py").write_text("class Leaf:\n    pass\n")
    (image / ".gsmcpd").mkdir()   # committed to before: the daemon's start tidies the image
    with Daemon(tmp_path, env={"GS_MCP_IMAGE": str(image)}) as daemon:
        client = session(daemon)
        leaf = ".".join(["p"] * depth) + ".leaf"
        assert leaf in dictionaries(client)
        done = client.tool("compile_method", className=f"{leaf}.Leaf",
                           source="def size(self):\n    return 1\n")
        assert done["structuredContent"]["committed"] == [leaf], done
        assert "def size(self):" in (image / deepest / "leaf.py").read_text()
        assert f"{leaf}.Leaf" in tool_text(session(daemon).tool("find_implementors", selector="size")).split()


def test_image_paths_past_path_max_are_named_to_the_client_and_the_rest_served(tmp_path, deep_dir):
    # A package past PATH_MAX was left out without a word; a module file past it failed
    # every session's read of the image (File name too long).
    image = write_image(deep_dir, EXAMPLE_FILES)
    deepest, long_module, package_past = too_long_tree(image)
    with Daemon(tmp_path, env={"GS_MCP_IMAGE": str(image)}) as daemon:
        client = session(daemon)
        listed = client.tool("list_dictionaries")
        assert ".".join(["p"] * deepest.count("/")) + ".p.leaf" in dictionaries(client)
        reason = "left out of the view, its path being longer than the system can open (PATH_MAX, the image's own path counted)"
        assert listed["structuredContent"]["notListed"] == [f"{long_module}: {reason}", f"{package_past}: {reason}"]
        # On every page, above the paging note: the tree is more than a page of packages.
        assert f"(not listed: {package_past}: {reason})\n(showing 1-" in tool_text(listed)
        status = client.tool("status")
        assert status["structuredContent"]["tooLong"] == [long_module, package_past]
        assert tool_text(status).endswith("\nnot seen (paths longer than the system can open, PATH_MAX, the "
                                          f"image's own path counted): {long_module}, {package_past}")


def test_searches_see_a_sessions_edits_refresh_and_abort_however_often_repeated(shop):
    # What search derives from a module is kept per view and text: a search repeated after
    # the module's text changed must answer from the new text, never the old.
    def senders(client):
        return client.tool("find_senders", selector="shout")["structuredContent"]["results"]

    a, b = session(shop), session(shop)
    assert senders(a) == [] == senders(a)
    b.tool("compile_method", className="Cart", source="def loud(self):\n    return self.shout()\n")
    assert senders(a) == []                           # not refreshed: b's commit is not in a's view
    a.tool("refresh")
    assert senders(a) == ["shop.models.Cart.loud"] == senders(b)

    b.tool("compile_method", className="Product", source=SHOUT)
    kept = a.tool("compile_method", className="Cart", source="def quiet(self):\n    return self.shout()\n")
    assert error_kind(kept) == "conflict"             # a's change stays, uncommitted
    assert senders(a) == ["shop.models.Cart.loud", "shop.models.Cart.quiet"]
    assert a.tool("search_method_source", pattern="self.shout()")["structuredContent"]["results"] == [
        "shop.models.Cart.loud", "shop.models.Cart.quiet"]
    a.tool("abort")
    assert senders(a) == ["shop.models.Cart.loud"] == senders(session(shop))
    assert a.tool("find_implementors", selector="shout")["structuredContent"]["results"] == ["shop.models.Product"]


def test_a_commit_that_brings_in_a_change_breaking_a_loaded_module_names_its_import_error(shop):
    # b deletes Cart, which shop.test_models imports. a's and c's commits bring that in and
    # re-import the test module they had loaded, which now fails to import in their
    # sessions, as in a new one: the answers say so, as refresh's does.
    a, b, c = session(shop), session(shop), session(shop)
    for client in (a, c):
        assert client.tool("run_test_class", className="CartTest")["structuredContent"]["passed"] == 4
    assert b.tool("delete_class", className="Cart")["structuredContent"]["committed"] == ["shop.models"]

    added = a.tool("compile_method", className="CartTest", source="def test_more(self):\n    pass\n")
    assert added["structuredContent"]["committed"] == ["shop.test_models"], added
    failure = "ImportError: cannot import name 'Cart' from 'shop.models'"
    assert added["structuredContent"]["importErrors"]["shop.test_models"].startswith(failure)
    assert "\nimport error in shop.test_models: " + failure in tool_text(added)

    nothing = c.tool("commit")["structuredContent"]
    assert (nothing["committed"], nothing["broughtIn"]) == ([], ["shop.models", "shop.test_models"])
    assert list(nothing["importErrors"]) == ["shop.test_models"]
    assert nothing["importErrors"]["shop.test_models"].startswith(failure)
    fresh = session(shop).tool("list_test_classes")["structuredContent"]["notLoaded"]
    assert fresh == [f"image module shop.test_models failed to import: {nothing['importErrors']['shop.test_models']}"]


def test_a_change_committed_to_a_module_failing_to_import_names_its_import_error(tmp_path):
    # An editor removed the module u imports. Another change to u was committed with no word
    # that u fails to import, here as in every new session: named before or not at all.
    files = {"a.py": "class A:\n    pass\n", "q.py": "class Q:\n    pass\n",
             "u.py": "from a import A\n\n\nclass U:\n    pass\n"}
    with daemon_on_image(tmp_path, files) as daemon:
        loaded, unloaded = session(daemon), session(daemon)
        assert not loaded.tool("execute_code", code="import u").get("isError")
        (daemon.image / "a.py").unlink()
        failure = "ModuleNotFoundError: No module named 'a'"
        first = loaded.tool("compile_method", className="q.Q", source="def m(self):\n    return 1\n")
        assert first["structuredContent"]["importErrors"] == {"u": failure}, first
        for client, method in ((loaded, "m1"), (unloaded, "m2")):
            client.tool("refresh")   # onto the other's commit of u, not conflicting with it
            changed = client.tool("compile_method", className="u.U",
                                  source=f"def {method}(self):\n    return 2\n")
            assert changed["structuredContent"]["committed"] == ["u"], changed
            assert changed["structuredContent"]["importErrors"] == {"u": failure}, changed
            assert "\nimport error in u: " + failure in tool_text(changed)
        fresh = session(daemon).tool("execute_code", code="import u")
        assert failure in tool_text(fresh)
        (daemon.image / "a.py").write_text("class A(:\n")   # so too a module added beside it
        (daemon.image / "a.py").rename(daemon.image / "broken.py")
        (daemon.image / "broken").mkdir()
        (daemon.image / "broken.py").rename(daemon.image / "broken" / "__init__.py")
        unloaded.tool("refresh")
        added = unloaded.tool("add_dictionary", dictionaryName="broken.mod")["structuredContent"]
        assert added["committed"] == ["broken.mod"], added
        assert added["importErrors"]["broken.mod"].startswith("SyntaxError: "), added


def test_a_loaded_submodule_of_a_package_a_refresh_broke_is_named_failing_and_so_committed(tmp_path):
    # The refresh left p.s.k live under its failing package: a change to it was then
    # committed with no word that no new session can import it.
    files = {"p/__init__.py": "", "p/s/__init__.py": "", "p/s/k.py": "class K:\n    pass\n"}
    with daemon_on_image(tmp_path, files) as daemon:
        client = session(daemon)
        assert not client.tool("execute_code", code="import p.s.k").get("isError")
        (daemon.image / "p/s/__init__.py").write_text("class Broken(:\n")
        refreshed = client.tool("refresh")["structuredContent"]
        assert sorted(refreshed["importErrors"]) == ["p.s", "p.s.k"], refreshed
        changed = client.tool("compile_method", className="p.s.k.K", source="def m(self):\n    return 1\n")
        assert list(changed["structuredContent"]["importErrors"]) == ["p.s.k"], changed


def test_abort_names_a_module_turned_into_a_package_once(tmp_path):
    # remove_dictionary q then add_dictionary q.w, both kept by a conflict, changed q.py and
    # made q/__init__.py: the conflict's "kept uncommitted" and abort's discarded named q twice.
    with daemon_on_image(tmp_path, {"q.py": "class Q:\n    pass\n", "r.py": ""}) as daemon:
        ours, theirs = session(daemon), session(daemon)
        for client, value in ((theirs, 1), (ours, 2)):   # ours conflicts, and so does each change after it
            kept = client.tool("compile_class_definition", source=f"class R:\n    x = {value}\n", dictionaryName="r")
        assert kept["structuredContent"]["error"]["kind"] == "conflict", kept
        for tool, name in (("remove_dictionary", "q"), ("add_dictionary", "q.w")):
            kept = ours.tool(tool, dictionaryName=name)
            assert kept["structuredContent"]["error"]["kind"] == "conflict", kept
        assert "kept uncommitted (q, q.w, r)" in tool_text(kept)
        assert ours.tool("abort")["structuredContent"]["discarded"] == ["q", "q.w", "r"]


def test_a_removal_an_editor_left_in_no_package_is_committed_after_a_refresh(tmp_path):
    # The refresh took n/m/j.py, on disk but in no package once n/__init__.py was deleted,
    # for removed by another (alreadyCommitted): the commit then left it, to come back with
    # n/__init__.py, where a commit straight away removed it.
    files = {"n/__init__.py": "", "n/m/__init__.py": "", "n/m/j.py": "class J:\n    pass\n", "r.py": ""}
    with daemon_on_image(tmp_path, files) as daemon:
        ours = session(daemon)
        assert ours.tool("status")["structuredContent"]["changedModules"] == []   # its view read
        (daemon.image / "r.py").write_text("EDITED = 1\n")   # our changes conflict, kept uncommitted
        for tool, arguments in (("compile_class_definition", {"source": "class R:\n    pass\n",
                                                              "dictionaryName": "r"}),
                                ("remove_dictionary", {"dictionaryName": "n.m.j"})):
            kept = ours.tool(tool, **arguments)
            assert kept["structuredContent"]["error"]["kind"] == "conflict", kept
        (daemon.image / "r.py").write_text("")                # the conflict gone
        (daemon.image / "n/__init__.py").unlink()
        refreshed = ours.tool("refresh")["structuredContent"]
        assert (refreshed["alreadyCommitted"], refreshed["keptOurs"]) == ([], []), refreshed
        committed = ours.tool("commit")["structuredContent"]
        assert committed["committed"] == ["n.m.j", "r"], committed
        assert not (daemon.image / "n/m/j.py").exists()


def test_a_failing_module_is_imported_once_across_image_wide_calls_until_code_runs(tmp_path):
    # Every get_class_hierarchy re-imported each failing module: seconds a call on pip's copy.
    from test_tools_failed_imports import files, imports_of
    tries = tmp_path / "tries.txt"
    with daemon_on_image(tmp_path, files(tries)) as daemon:
        client = session(daemon)
        for _ in range(2):
            hierarchy = client.tool("get_class_hierarchy", className="base.Base")
            assert hierarchy["structuredContent"]["subclasses"] == [], hierarchy
        not_loaded = client.tool("list_test_classes")["structuredContent"]["notLoaded"]
        assert not_loaded == ["image module failing failed to import: ModuleNotFoundError: "
                              "No module named 'extlib_not_installed'"]
        assert imports_of(tries) == 1
        made = client.tool("execute_code", code="import sys, types\n"
                           "sys.modules['extlib_not_installed'] = types.ModuleType('x')")
        assert not made.get("isError"), made
        assert client.tool("get_class_hierarchy", className="base.Base")["structuredContent"][
            "subclasses"] == ["failing.Sub"]
        assert imports_of(tries) == 2


def test_whole_image_calls_do_not_run_a_packages_main_module_and_the_session_goes_on(tmp_path):
    # Each ran pip's vendored certifi/__main__.py: it parsed the worker's argv, wrote its usage
    # to the daemon's log and exited 2 (a project's could start a server or delete files).
    from test_tools_program_modules import NOT_IMPORTED, files, runs_of
    ran = tmp_path / "ran.txt"
    with daemon_on_image(tmp_path, files(ran)) as daemon:
        client = session(daemon)
        hierarchy = client.tool("get_class_hierarchy", className="app.Base")
        assert hierarchy["structuredContent"]["subclasses"] == [], hierarchy
        assert "app.__main__.Cli" in str(client.tool("list_all_classes")["structuredContent"])
        assert client.tool("list_test_classes")["structuredContent"]["notLoaded"] == [NOT_IMPORTED]
        assert runs_of(ran) == 0
        assert tool_text(client.tool("execute_code", code="print(6 * 7)")) == "42"
        client.close()


def test_a_class_defined_in_a_program_is_said_to_be_changed_in_source_only_as_a_program(tmp_path):
    from test_tools_program_modules import files, runs_of
    ran = tmp_path / "ran.txt"
    with daemon_on_image(tmp_path, files(ran)) as daemon:
        client = session(daemon)
        said = tool_text(client.tool("compile_class_definition", dictionaryName="app.__main__",
                                     source="class Fresh:\n    pass\n"))
        assert said.startswith("changed app.__main__.Fresh in source only (app.__main__ is a program, "
                               "which the tools do not import, as that runs it)"), said
        assert runs_of(ran) == 0
        client.close()


def test_a_class_definition_fixing_its_module_is_said_to_have_made_it_import(tmp_path):
    # Said "changed broken.Cli in source only (broken does not import)", as before the
    # commit, which re-imported it: the class live.
    with daemon_on_image(tmp_path, {"broken.py": "class Cli:\n    X = undefined_name\n"}) as daemon:
        client = session(daemon)
        assert "NameError" in tool_text(client.tool("execute_code", code="import broken"))
        said = tool_text(client.tool("compile_class_definition", dictionaryName="broken",
                                     source="class Cli:\n    X = 2\n"))
        assert said.startswith("changed broken.Cli in source, and broken, which did not import, imports "
                               "now (re-imported as committed): broken.Cli is live; committed"), said
        assert tool_text(client.tool("execute_code", code="import broken\nbroken.Cli.X")) == "2"
        client.close()


def test_delete_class_says_the_modules_all_still_names_it(tmp_path):
    # Deleted with nothing said, and `from listed import *` failed in every session after.
    with daemon_on_image(tmp_path, {"listed.py": "__all__ = ['Hook']\n\n\nclass Hook:\n    pass\n"}) as daemon:
        client = session(daemon)
        deleted = client.tool("delete_class", className="listed.Hook")
        assert deleted["structuredContent"]["stillInAll"] == {"line": 1, "statement": "__all__ = ['Hook']"}
        assert "so `from listed import *` now fails (AttributeError)" in tool_text(deleted)
        other = session(daemon)
        assert "AttributeError" in tool_text(other.tool("execute_code", code="from listed import *"))
        other.close()
        client.close()


def test_a_program_fixed_after_its_re_import_failed_is_no_longer_named_failing_by_refresh(tmp_path):
    image = write_image(tmp_path / "image", {"app/__init__.py": "", "app/__main__.py": "X = 1\n"})
    with Daemon(tmp_path, env={"GS_MCP_IMAGE": str(image)}) as daemon:
        client = session(daemon)
        client.tool("execute_code", code="import app.__main__")
        (image / "app/__main__.py").write_text("raise ValueError('broken')\n")
        assert client.tool("refresh")["structuredContent"]["importErrors"] == {"app.__main__": "ValueError: broken"}
        (image / "app/__main__.py").write_text("X = 2\n")
        assert client.tool("refresh")["structuredContent"]["importErrors"] == {}
        client.close()


def test_a_program_a_commit_fixes_is_not_named_failing_by_the_commit(tmp_path):
    broken = "from app import Base\n\n\nclass Cli(Base):\n    X = undefined_name\n"
    files = {"app/__init__.py": "class Base:\n    pass\n", "app/__main__.py": broken.replace("undefined_name", "1")}
    with daemon_on_image(tmp_path, files) as daemon:
        client = session(daemon)
        client.tool("execute_code", code="import app.__main__")
        (daemon.image / "app/__main__.py").write_text(broken)
        assert "app.__main__" in client.tool("refresh")["structuredContent"]["importErrors"]
        fixed = client.tool("compile_class_definition", source="class Cli(Base):\n    X = 2\n",
                            dictionaryName="app.__main__")
        assert fixed["structuredContent"]["committed"] == ["app.__main__"], fixed
        assert "importErrors" not in fixed["structuredContent"], fixed
        assert "import error" not in tool_text(fixed)
        client.close()


def test_a_class_bound_over_a_statement_is_browsed_though_an_attribute_raises_on_reads(tmp_path):
    from test_tools_browse import PROXY_HELD
    files = {"proxied.py": PROXY_HELD, "over.py": "class Shown:\n    def mine(self):\n        return 1\n\n\n"
                                                "from proxied import Shown\n"}
    with daemon_on_image(tmp_path, files) as daemon:
        client = session(daemon)
        described = client.tool("describe_class", className="over.Shown")
        assert described["structuredContent"]["fromSource"].startswith("over.Shown is bound to proxied.Shown"), described
        refused = client.tool("compile_method", className="over.Shown", source="def g(self):\n    pass\n")
        assert refused["structuredContent"]["error"]["kind"] == "refused", refused
        client.close()


def test_an_image_packages_data_file_is_read_as_it_is_imported_as_pip_s_vendored_certifi_does(tmp_path):
    # pip's requests takes certifi.where() as it is imported; through the view's loader it was
    # an "orphan path", and 138 of pip's modules failed to import, FileNotFoundError.
    from test_image_view import WHERE_ITS_DATA_IS
    files = {"certs/__init__.py": WHERE_ITS_DATA_IS, "certs/cacert.pem": "CERTS\n",
             "net.py": "import unittest\nfrom certs import PATH\n\n\n"
                       "class NetTest(unittest.TestCase):\n    def test_path(self):\n        pass\n"}
    with daemon_on_image(tmp_path, files) as daemon:
        client = session(daemon)
        classes = client.tool("list_test_classes")["structuredContent"]
        assert "notLoaded" not in classes and "net.NetTest" in str(classes), classes
        ran = client.tool("execute_code", code="import certs, pkgutil\n"
                          "print(open(certs.PATH).read(), pkgutil.get_data('certs', 'cacert.pem'))")
        assert not ran.get("isError"), ran
        assert tool_text(ran) == "CERTS\n b'CERTS\\n'"


def test_refresh_names_no_failing_module_another_session_removed(tmp_path):
    # Still named with the error it failed with: import_errors never tried again.
    from test_tools_failed_imports import files
    image = {**files(tmp_path / "tries.txt"), "gone.py": "import extlib_not_installed\n"}
    with daemon_on_image(tmp_path, image) as daemon:
        ours, theirs = session(daemon), session(daemon)
        assert not ours.tool("get_class_hierarchy", className="base.Base").get("isError")
        removed = theirs.tool("remove_dictionary", dictionaryName="gone")
        assert not removed.get("isError"), removed
        refreshed = ours.tool("refresh")["structuredContent"]
        assert refreshed["broughtIn"] == ["gone"]
        assert list(refreshed["importErrors"]) == ["failing"]
        ours.close()
        theirs.close()


def test_abort_re_imports_a_module_whose_getattr_raises(tmp_path):
    # Its __getattr__'s KeyError ("__path__", asked by hasattr) failed the abort.
    lazy = "_LAZY = {}\n\n\ndef __getattr__(name):\n    return _LAZY[name]\n"
    with daemon_on_image(tmp_path, {"lazy.py": lazy}) as daemon:
        client = session(daemon)
        assert not client.tool("execute_code", code="import lazy").get("isError")
        aborted = client.tool("abort")
        assert not aborted.get("isError"), aborted
        assert aborted["structuredContent"]["reloaded"] == ["lazy"]
        client.close()


def test_an_object_in_sys_modules_whose_getattr_raises_fails_no_abort(shop):
    # Asked for __spec__ with the loaded modules: its KeyError failed every abort.
    client = session(shop)
    code = ("import sys, shop.models\n\n\nclass Weird:\n    def __getattr__(self, name):\n"
            "        raise KeyError(name)\n\n\nsys.modules['weird_object'] = Weird()\n")
    assert not client.tool("execute_code", code=code).get("isError")
    aborted = client.tool("abort")
    assert not aborted.get("isError"), aborted
    assert "shop.models" in aborted["structuredContent"]["reloaded"]
    client.close()


def test_an_image_package_finds_its_submodules_with_pkgutil_as_the_session_has_them(tmp_path):
    # A plugin package lists its plugins with pkgutil.iter_modules(__path__): with `__path__`
    # empty it found none in a session, though a plain Python run finds them.
    from test_image_view import FINDS_ITS_PLUGINS
    files = {"plugins/__init__.py": FINDS_ITS_PLUGINS, "plugins/csv.py": "KIND = 'csv'\n",
             "plugins/json.py": "KIND = 'json'\n"}
    listing = ("import pkgutil, plugins\n"
               "print(plugins.LOADED, [m.name for m in pkgutil.iter_modules(plugins.__path__, 'plugins.')])")
    with daemon_on_image(tmp_path, files) as daemon:
        a, b = session(daemon), session(daemon)
        ran = b.tool("execute_code", code=listing)
        assert not ran.get("isError"), ran
        assert tool_text(ran) == "{'csv': 'csv', 'json': 'json'} ['plugins.csv', 'plugins.json']"
        assert not a.tool("add_dictionary", dictionaryName="plugins.xml").get("isError")
        assert (daemon.image / "plugins/xml.py").exists()
        ran = a.tool("execute_code", code=listing)
        assert tool_text(ran) == ("{'csv': 'csv', 'json': 'json', 'xml': None} "
                                  "['plugins.csv', 'plugins.json', 'plugins.xml']"), ran
        # The other session lists its own view: the commit is invisible to it until a refresh.
        ran = b.tool("execute_code", code=listing)
        assert tool_text(ran) == "{'csv': 'csv', 'json': 'json'} ['plugins.csv', 'plugins.json']", ran
        b.tool("refresh")
        ran = b.tool("execute_code", code=listing)
        assert "'plugins.xml'" in tool_text(ran), ran


def test_abort_lists_an_image_packages_submodules_again_after_code_took_the_path_hook_out(tmp_path):
    # Code took the view's path hook out and imported under the package (the import system
    # cached "no finder" for its __path__ entry): abort puts the hook back, and pkgutil
    # listed nothing still, the cache answering first, until the session ended.
    files = {"plugins/__init__.py": "", "plugins/csv.py": "KIND = 'csv'\n"}
    takes_the_hook_out = ("import sys, importlib.util, plugins\n"
                          "sys.path_hooks[:] = [hook for hook in sys.path_hooks\n"
                          "                     if 'gsmcpd' not in repr(hook)]\n"
                          "print(importlib.util.find_spec('plugins.missing'))")
    listing = "import pkgutil, plugins\nprint([m.name for m in pkgutil.iter_modules(plugins.__path__)])"
    with daemon_on_image(tmp_path, files) as daemon:
        client = session(daemon)
        ran = client.tool("execute_code", code=takes_the_hook_out)
        assert tool_text(ran) == "None", ran
        assert tool_text(client.tool("execute_code", code=listing)) == "[]"
        aborted = client.tool("abort")
        assert not aborted.get("isError"), aborted
        ran = client.tool("execute_code", code=listing)
        assert tool_text(ran) == "['csv']", ran
        client.close()


def test_a_test_class_added_to_a_module_run_as_a_program_is_defined_before_its_main_block(shop):
    # Appended below `unittest.main()`, which exits, the new class's tests never ran when
    # the module ran as a program (`python -m shop.test_models`), only through the tools.
    models = shop.image / "shop/test_models.py"
    models.write_text(models.read_text() + '\n\nif __name__ == "__main__":\n    unittest.main()\n')
    a = session(shop)
    new_test = "class ExtraTest(unittest.TestCase):\n    def test_extra(self):\n        pass\n"
    assert a.tool("compile_class_definition", source=new_test,
                  dictionaryName="shop.test_models")["structuredContent"]["committed"] == ["shop.test_models"]
    assert models.read_text().endswith(new_test + '\n\nif __name__ == "__main__":\n    unittest.main()\n')
    run = subprocess.run([sys.executable, "-m", "shop.test_models"], cwd=shop.image,
                         capture_output=True, text=True, timeout=60)
    assert "Ran 5 tests" in run.stderr, run.stderr


def test_a_function_added_above_a_main_block_right_under_an_import_is_spaced_as_appended(shop):
    # Put right above the block, it stood with no blank line under `import sys`.
    tool = shop.image / "shop/tool.py"
    tool.write_text('import sys\nif __name__ == "__main__":\n    sys.exit(main())\n')
    a = session(shop)
    a.tool("refresh")
    added = a.tool("compile_method", className="shop.tool", source="def main():\n    return 0\n")
    assert added["structuredContent"]["committed"] == ["shop.tool"], added
    assert tool.read_text() == ('import sys\n\n\ndef main():\n    return 0\n\n\n'
                                'if __name__ == "__main__":\n    sys.exit(main())\n')
    a.close()
