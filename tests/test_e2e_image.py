"""Issue 3 end to end: the Python image's views and transactions through the real
daemon, each test on its own throwaway image in tmp_path.

Two sessions are two worker processes with two views: a commit is invisible to
the other until it refreshes; two changes to one file conflict without losing
either; a session's tests run against its uncommitted change. A commit meeting a fault
(SIGKILL of its worker, a break, a stop, a link in its way):
test_e2e_image_commit_faults.py; the image's modules as sessions find and import them:
test_e2e_image_modules.py (both use `shop` and the helpers here).
"""

import json
import os

import pytest

from gsmcpd.image.default import EXAMPLE_FILES
from helpers import Client, Daemon, tool_text
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
        assert tool_text(answer) == "removed dictionary pkg and its submodule pkg.sub; committed (view version 1)"
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


