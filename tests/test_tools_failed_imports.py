"""A module that fails to import is imported once, not again on every image-wide call
(get_class_hierarchy and list_all_classes load the whole image): it is tried again only
once something that may change the outcome happened (an edit, refresh, abort, commit,
the session's code run), and it is still named with its error."""

import json
import sys

import pytest

from gsmcpd.worker.toolset import REPEAT_CAP, repeated
from test_tools_support import Client, views, write_image  # noqa: F401  (fixtures)

# Each run of failing.py adds a line to the file TRIES names: how often it was imported.
FAILING = 'open({tries!r}, "a").write("tried\\n")\nimport extlib_not_installed\n\n\nclass Sub(Base):\n    pass\n'


def files(tries):
    return {"base.py": "class Base:\n    pass\n",
            "failing.py": "from base import Base\n" + FAILING.format(tries=str(tries)),
            "other.py": "class Other:\n    pass\n"}


@pytest.fixture
def tries(tmp_path):
    return tmp_path / "tries.txt"


@pytest.fixture
def client(tmp_path, views, tries):
    return Client(views(write_image(tmp_path / "image", files(tries))))


def imports_of(tries) -> int:
    return len(tries.read_text().splitlines()) if tries.exists() else 0


def test_a_failing_module_is_imported_once_across_image_wide_calls_and_still_named(client, tries):
    for _ in range(2):
        hierarchy = client.ok("get_class_hierarchy", className="base.Base")["structuredContent"]
        assert hierarchy["subclasses"] == []
    client.ok("list_all_classes")
    not_loaded = client.ok("list_test_classes")["structuredContent"]["notLoaded"]
    assert imports_of(tries) == 1
    assert not_loaded == ["image module failing failed to import: ModuleNotFoundError: "
                          "No module named 'extlib_not_installed'"]


@pytest.mark.parametrize("change", [
    lambda client: client.view.set_source("other", "class Other:\n    x = 1\n"),
    lambda client: client.ok("refresh"),
    lambda client: client.ok("abort"),
    lambda client: client.ok("execute_code", code="1"),
    lambda client: client.ok("compile_method", className="other.Other", source="def m(self):\n    return 1\n"),
], ids=["edit", "refresh", "abort", "execute_code", "commit"])
def test_a_failing_module_is_tried_again_after_what_may_change_its_outcome(client, tries, change):
    client.ok("get_class_hierarchy", className="base.Base")
    change(client)
    client.ok("get_class_hierarchy", className="base.Base")
    assert imports_of(tries) == 2


def test_code_that_makes_the_missing_module_importable_lets_the_failing_module_load(client, tries):
    client.ok("get_class_hierarchy", className="base.Base")
    client.ok("execute_code", code="import sys, types\nsys.modules['extlib_not_installed'] = types.ModuleType('x')")
    try:
        assert client.ok("get_class_hierarchy", className="base.Base")["structuredContent"]["subclasses"] == [
            "failing.Sub"]
        assert "failing" not in client.view.import_errors
    finally:
        sys.modules.pop("extlib_not_installed", None)


def test_a_test_run_has_a_failing_module_tried_again(tmp_path, views, tries):
    image = files(tries)
    image["test_it.py"] = "import unittest\n\n\nclass TestIt(unittest.TestCase):\n    def test_ok(self):\n        pass\n"
    client = Client(views(write_image(tmp_path / "image", image)))
    client.ok("get_class_hierarchy", className="base.Base")
    client.ok("run_test_class", className="test_it.TestIt")
    client.ok("get_class_hierarchy", className="base.Base")
    assert imports_of(tries) == 2


def test_a_module_failing_with_a_recursion_error_is_tried_again(tmp_path, views):
    # Its outcome depends on how deep the stack was when it was imported.
    text = ("import sys\nimport types\ntries = sys.modules.setdefault('deep_tries', types.SimpleNamespace(n=0))\n"
            "tries.n += 1\nraise RecursionError('too deep')\n")
    view = views(write_image(tmp_path / "image", {"deep.py": text}))
    try:
        assert view.module("deep") is None and view.module("deep") is None
        assert sys.modules["deep_tries"].n == 2
        assert view.import_errors["deep"].startswith("RecursionError: too deep")
    finally:
        sys.modules.pop("deep_tries", None)


def test_refresh_names_no_module_a_commit_brought_in_fixed_or_removed(tmp_path, views, tries):
    # Named with the error it failed with before: a failure kept, never tried again.
    image = write_image(tmp_path / "image", {**files(tries), "gone.py": "import extlib_not_installed\n"})
    ours, theirs = Client(views(image, "a")), Client(views(image, "b", install=False))
    ours.ok("get_class_hierarchy", className="base.Base")
    assert sorted(ours.view.import_errors) == ["failing", "gone"]
    theirs.view.set_source("failing", "from base import Base\n\n\nclass Sub(Base):\n    pass\n", live=False)
    theirs.view.remove_module("gone")
    theirs.view.commit()
    assert ours.ok("refresh")["structuredContent"]["importErrors"] == {}
    assert ours.view.import_errors == {}


def test_abort_names_no_module_that_failed_only_through_the_edit_it_discarded(client):
    client.ok("execute_code", code="import sys, types\nsys.modules['extlib_not_installed'] = types.ModuleType('x')")
    try:
        client.view.set_source("base", "class Gone:\n    pass\n")   # uncommitted, as a tool's before its commit
        client.ok("get_class_hierarchy", className="other.Other")
        assert "failing" in client.view.import_errors   # `from base import Base`: no Base now
        assert client.ok("abort")["structuredContent"]["importErrors"] == {}
    finally:
        sys.modules.pop("extlib_not_installed", None)


def test_abort_and_refresh_re_import_a_module_whose_getattr_raises(tmp_path, views):
    # Asked hasattr(module, "__path__") of each re-imported module: its __getattr__'s KeyError
    # failed the abort, its report lost, after the texts had gone back.
    lazy = "_LAZY = {}\n\n\ndef __getattr__(name):\n    return _LAZY[name]\n\n\nX = 1\n"
    client = Client(views(write_image(tmp_path / "image", {"lazy.py": lazy})))
    client.ok("execute_code", code="import lazy")
    assert client.ok("abort")["structuredContent"]["reloaded"] == ["lazy"]
    client.view.set_source("lazy", lazy.replace("X = 1", "X = 2"), live=False)
    client.ok("execute_code", code="import lazy")
    assert client.ok("refresh")["structuredContent"]["importErrors"] == {}


def _removed_here(ours, theirs):
    ours.view.remove_module("gone")


def _removed_by_a_commit_refreshed(ours, theirs):
    theirs.view.remove_module("gone")
    theirs.view.commit()
    ours.ok("refresh")


def _removed_by_a_commit_ours_brought_in(ours, theirs):
    theirs.view.remove_module("gone")
    theirs.view.commit()
    ours.ok("compile_method", className="other.Other", source="def m(self):\n    return 1\n")


def _added_here_and_aborted(ours, theirs):
    ours.ok("abort")


@pytest.mark.parametrize("removal", [_removed_here, _removed_by_a_commit_refreshed,
                                     _removed_by_a_commit_ours_brought_in, _added_here_and_aborted])
def test_a_failing_module_removed_from_the_view_is_forgotten_error_and_epoch(tmp_path, views, tries, removal):
    # Its epoch was kept for the session's whole life (its error too, after a commit brought the removal in).
    image = write_image(tmp_path / "image", files(tries) if removal is _added_here_and_aborted
                        else {**files(tries), "gone.py": "import extlib_not_installed\n"})
    ours, theirs = Client(views(image, "a")), Client(views(image, "b", install=False))
    if removal is _added_here_and_aborted:
        ours.view.add_module("gone", "import extlib_not_installed\n")
    ours.ok("get_class_hierarchy", className="base.Base")
    assert "gone" in ours.view.import_errors and "gone" in ours.view._failed_in_epoch
    removal(ours, theirs)
    assert "gone" not in ours.view.import_errors and "gone" not in ours.view._failed_in_epoch
    assert "failing" in ours.view.import_errors


@pytest.mark.parametrize("tried_first", [True, False], ids=["failed-before", "never-tried"])
def test_a_change_committed_to_a_failing_module_names_it_failing(client, tried_first):
    # Its error was named only when it changed: a module failing before the edit, or first
    # tried by it, was committed still failing, unsaid, though no new session imports it.
    if tried_first:
        client.ok("get_class_hierarchy", className="base.Base")
    changed = client.ok("compile_method", className="failing.Sub", source="def m(self):\n    return 1\n")
    assert changed["structuredContent"]["committed"] == ["failing"]
    assert changed["structuredContent"]["importErrors"] == {
        "failing": "ModuleNotFoundError: No module named 'extlib_not_installed'"}


def test_a_module_added_to_a_package_failing_to_import_is_named_failing(tmp_path, views):
    # Never imported by the session, it was committed unsaid, importable by no new session.
    image = write_image(tmp_path / "image", {"pkg/__init__.py": "import extlib_not_installed\n"})
    added = Client(views(image)).ok("add_dictionary", dictionaryName="pkg.mod")
    assert added["structuredContent"]["committed"] == ["pkg.mod"]
    assert added["structuredContent"]["importErrors"] == {
        "pkg.mod": "ModuleNotFoundError: No module named 'extlib_not_installed'"}


@pytest.mark.parametrize("bring_in", ["refresh", "commit"])
def test_a_loaded_submodule_of_a_package_a_commit_brought_in_broke_fails_with_it(tmp_path, views, bring_in):
    # Refresh (and commit) re-imported the package, which failed, and left its loaded
    # submodule live, unnamed: a later change to it was committed unsaid, though no new
    # session imports it. Abort, re-importing everything, named it.
    image = write_image(tmp_path / "image", {"p/__init__.py": "", "p/s/__init__.py": "",
                                             "p/s/k.py": "class K:\n    pass\n"})
    client = Client(views(image))
    client.ok("execute_code", code="import p.s.k")
    (image / "p/s/__init__.py").write_text("class Broken(:\n")
    errors = client.ok(bring_in)["structuredContent"]["importErrors"]
    assert sorted(errors) == ["p.s", "p.s.k"], errors
    assert "p.s.k" not in sys.modules


# A module whose import raises a huge message: each answer naming it has the message whole
# in its text and its start in structuredContent (it went whole into both).
LOUD = "class K:\n    pass\n\n\nraise ValueError('first line\\n' + 'x' * 1_000_000)\n"
LOUD_ERROR = "ValueError: first line\n" + "x" * 1_000_000
LOUD_REASON = "image module loud failed to import: " + LOUD_ERROR


@pytest.fixture
def loud(tmp_path, views):
    return Client(views(write_image(tmp_path / "image", {"loud.py": LOUD})))


def said_once(result, found, whole, what):
    """`found` (the structured copy) is the start of `whole`, which the text holds whole."""
    assert whole in result["content"][0]["text"]
    assert found == repeated(whole, what) and len(found) < REPEAT_CAP + 200, found[-200:]
    assert len(json.dumps(result)) < len(whole) + 2 * REPEAT_CAP


@pytest.mark.parametrize("tool, arguments, where", [
    ("list_test_classes", {}, lambda said: said["notLoaded"][0]),
    ("list_failing_tests", {}, lambda said: said["notLoaded"][0]),
    ("describe_class", {"className": "loud.K"}, lambda said: said["fromSource"]),
    ("get_class_hierarchy", {"className": "loud.K"}, lambda said: said["fromSource"]),
    ("list_methods", {"className": "loud.K"}, lambda said: said["fromSource"]),
    ("list_dictionary_entries", {"dictionaryName": "loud"}, lambda said: said["note"]),
])
def test_a_huge_import_error_is_whole_in_the_text_and_its_start_in_structured_content(loud, tool, arguments,
                                                                                       where):
    result = loud.ok(tool, **arguments)
    said_once(result, where(result["structuredContent"]), LOUD_REASON, "the reason")


def test_a_huge_import_error_a_tool_names_after_an_import_is_whole_once_too(loud):
    for tool, arguments in [("compile_method", {"className": "loud", "source": "def f():\n    return 1\n"}),
                            ("refresh", {}), ("abort", {})]:
        result = loud.ok(tool, **arguments)
        said_once(result, result["structuredContent"]["importErrors"]["loud"], LOUD_ERROR, "the import error")


# A package importing its plugins by name, in a loop: no import statement names them.
PLUGINS = {"plugs/__init__.py": "import importlib\n\nfor _name in ('good', 'bad'):\n"
                                "    importlib.import_module(f'{__name__}.{_name}')\n",
           "plugs/good.py": "X = 1\n",
           "plugs/bad.py": "X = 2\n"}


def test_refresh_names_a_package_whose_plugin_it_imports_by_name_now_fails(tmp_path, views):
    # Its importers found by import statements alone, the package was left live and
    # unnamed: importErrors said plugs.bad, though a new session's `import plugs` fails.
    image = write_image(tmp_path / "image", PLUGINS)
    client = Client(views(image))
    client.ok("execute_code", code="import plugs")
    (image / "plugs" / "bad.py").write_text("import extlib_not_installed\n")
    refreshed = client.ok("refresh")
    missing = "ModuleNotFoundError: No module named 'extlib_not_installed'"
    assert refreshed["structuredContent"]["importErrors"] == {
        "plugs": f"raised importing its submodule plugs.bad: {missing}", "plugs.bad": missing}
    assert f"import error in plugs: raised importing its submodule plugs.bad: {missing}" in \
        refreshed["content"][0]["text"]


def test_a_package_failing_in_a_submodule_with_a_long_message_is_named_with_it_once_cut(tmp_path, views):
    # The submodule came after the message: the answer's cuts (structuredContent's repeat at
    # REPEAT_CAP, the text's past ERRORS_BUDGET) dropped it with the message's end.
    image = write_image(tmp_path / "image", PLUGINS)
    client = Client(views(image))
    client.ok("execute_code", code="import plugs")
    (image / "plugs" / "bad.py").write_text("raise RuntimeError('x' * 2_100_000)\n")
    refreshed = client.ok("refresh")
    named = "raised importing its submodule plugs.bad: RuntimeError: xxx"
    repeat = refreshed["structuredContent"]["importErrors"]["plugs"]
    assert repeat.startswith(named) and len(repeat) < REPEAT_CAP + 1_000
    text = refreshed["content"][0]["text"]
    assert f"import error in plugs: {named}" in text and "x" * 2_100_000 not in text


def test_a_package_that_no_longer_imports_a_plugin_is_not_its_importer_once_it_ran_without_it(tmp_path, views):
    # Its import of the plugin in an earlier run was kept for good: each change of the
    # plugin re-imported the package, though its code imports it no more.
    image = write_image(tmp_path / "image", PLUGINS)
    client = Client(views(image))
    client.ok("execute_code", code="import plugs")
    (image / "plugs" / "__init__.py").write_text("import importlib\n\nimportlib.import_module(f'{__name__}.good')\n")
    (image / "plugs" / "bad.py").write_text("X = 3\n")
    assert client.ok("refresh")["structuredContent"]["reloaded"] == ["plugs", "plugs.bad"]
    (image / "plugs" / "bad.py").write_text("X = 4\n")
    assert client.ok("refresh")["structuredContent"]["reloaded"] == ["plugs.bad"]
    (image / "plugs" / "good.py").write_text("X = 5\n")   # still imported, found cached: still its importer
    assert client.ok("refresh")["structuredContent"]["reloaded"] == ["plugs", "plugs.good"]


def test_a_package_failing_in_a_submodule_is_named_with_that_submodule(tmp_path, views):
    image = write_image(tmp_path / "image", {**PLUGINS, "plugs/bad.py": "raise RuntimeError('bad plugin')\n"})
    client = Client(views(image))
    assert client.ok("abort")["structuredContent"]["importErrors"] == {}   # none loaded
    assert "image module plugs failed to import: raised importing its submodule plugs.bad: RuntimeError: " \
           "bad plugin" in client.ok("list_test_classes")["content"][0]["text"]
