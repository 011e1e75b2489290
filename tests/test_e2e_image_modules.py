"""The Python image end to end, its modules as sessions find and import them: packages
linked in or nested past the recursion limit and PATH_MAX, a commit, refresh or abort
naming the modules failing to import, programs (__main__) never run by whole-image calls,
packages listing their submodules. Each test on its own throwaway image in tmp_path;
sessions' views and conflicts: test_e2e_image.py.
"""

import os
import subprocess
import sys

import pytest

from gsmcpd.image.default import EXAMPLE_FILES
from helpers import Daemon, nested_packages
from helpers import open_session as session
from helpers import too_long_tree, tool_text
from test_e2e_image import SHOUT, dictionaries, journal, shop  # noqa: F401 (a fixture)
from test_tools_support import daemon_on_image, write_image


# Commits' flushes to disk are no test's subject here (conftest).
pytestmark = pytest.mark.usefixtures("daemons_fsync_skipped")


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
