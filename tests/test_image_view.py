"""Views: snapshot isolation, the import hook, commit/conflict/refresh/abort, reloading."""

import importlib
import importlib.util
import importlib.resources
import inspect
import os
import pkgutil
import sys
import traceback

import pytest

from gsmcpd.image import store as store_module
from gsmcpd.image.store import CommitConflict, ImageStore, ReadOnlySession
from helpers import exclusive_lock_free
from test_tools_support import image, views, write_image  # noqa: F401  (fixtures)

NOISE_V2 = '    def noise(self):  # dogs bark\n        return "WOOF"\n'


def edited(view, module, old, new):
    text = view.source(module)
    assert old in text
    view.set_source(module, text.replace(old, new), live=False)


def test_another_sessions_commit_is_invisible_until_refresh(image, views):
    a = views(image, "a")
    b = views(image, "b", install=False)
    edited(a, "zoo.animals", 'return "woof"', 'return "WOOF"')
    a.commit()
    assert 'return "woof"' in b.source("zoo.animals") and not b.has_changes
    report = b.refresh()
    assert report.brought_in == ["zoo.animals"]
    assert 'return "WOOF"' in b.source("zoo.animals")
    assert b.version == a.version == 1


def test_a_read_only_sessions_process_writes_nothing_through_any_view_or_store(image, views, monkeypatch):
    # The image's own code (a test run by a read-only session) reached its view's commit,
    # or made its own store, and wrote the image.
    monkeypatch.setattr(store_module, "_writes_refused", False)   # put back after the test
    view = views(image)
    store_module.refuse_writes()
    edited(view, "zoo.animals", 'return "woof"', 'return "WOOF"')
    with pytest.raises(ReadOnlySession, match="this session is read-only: a commit is refused, nothing was written"):
        view.commit()
    assert view.changed_modules() == ["zoo.animals"]   # kept, as a conflict keeps them
    view.abort()
    with pytest.raises(ReadOnlySession):
        view.commit()                                  # nothing to write: refused all the same
    own = ImageStore(image)
    with pytest.raises(ReadOnlySession):
        own.commit({"zoo/animals.py": b"X = 1\n"}, view.base_hashes, user="u", session_id="s")
    for write in (own.finish_pending, own.recover, lambda: own.keep_record("ab12"),
                  lambda: own.release_record("ab12")):
        with pytest.raises(ReadOnlySession):
            write()
    assert 'return "woof"' in (image / "zoo/animals.py").read_text()
    assert own.journal() == []


def test_import_hook_serves_the_snapshot_not_the_disk(image, views):
    view = views(image)
    (image / "zoo/animals.py").write_text("raise RuntimeError('disk read')\n")
    (image / "zoo/sneaky.py").write_text("x = 1\n")
    module = view.module("zoo.animals")
    assert module.Dog("rex").speak() == "rex says woof"
    assert "dogs bark" in inspect.getsource(module.Dog)
    assert view.module("zoo.sneaky") is None
    with pytest.raises(ModuleNotFoundError):
        __import__("zoo.sneaky")


def test_tracebacks_show_the_views_source(image, views):
    view = views(image)
    text = view.source("zoo.animals").replace('return "..."', 'raise ValueError("boom")  # view line')
    view.set_source("zoo.animals", text, live=False)
    animal = view.module("zoo.animals").Animal("x")
    with pytest.raises(ValueError) as raised:
        animal.noise()
    assert "# view line" in "".join(traceback.format_tb(raised.value.__traceback__))


def test_an_image_module_failing_to_import_shows_its_frames_not_the_loaders(image, views):
    # As Python's own file loader is, the view's is left out of the traceback: the import
    # statement's frame, then the module's.
    view = views(image)
    view.add_module("zoo.boom", 'X = 1\nraise ValueError("boom")\n')
    with pytest.raises(ValueError) as raised:
        exec(compile("import zoo.boom", "<the importer>", "exec"), {})
    frames = traceback.extract_tb(raised.value.__traceback__)
    assert [frame.filename for frame in frames][-2:] == ["<the importer>", view.filename("zoo/boom.py")]


def test_an_image_module_that_does_not_compile_shows_no_frame_of_the_loaders(image, views):
    # Its compile showed importlib's frames, then the view loader's _code_of, as Python's own
    # loader, compiling through _call_with_frames_removed, does not: the importer's frame only.
    view = views(image)
    view.add_module("zoo.broken", "X = 1\ndef f(:\n    pass\n")
    with pytest.raises(SyntaxError) as raised:
        exec(compile("import zoo.broken", "<the importer>", "exec"), {})
    frames = traceback.extract_tb(raised.value.__traceback__)
    assert [frame.filename for frame in frames][-1:] == ["<the importer>"], frames
    assert raised.value.filename == view.filename("zoo/broken.py") and raised.value.lineno == 2


def test_close_uninstalls_the_hook_and_forgets_the_modules(image, views):
    view = views(image)
    view.module("zoo.keeper")
    assert "zoo.animals" in sys.modules
    view.close()
    assert "zoo.animals" not in sys.modules and "zoo" not in sys.modules
    assert all(finder is not view._loader for finder in sys.meta_path)


def test_second_commit_from_the_same_base_conflicts_and_keeps_its_change(image, views):
    a = views(image, "a")
    b = views(image, "b", install=False)
    edited(a, "zoo.animals", 'return "woof"', 'return "A"')
    edited(b, "zoo.animals", 'return "woof"', 'return "B"')
    a.commit()
    with pytest.raises(CommitConflict) as raised:
        b.commit()
    assert raised.value.files == ["zoo/animals.py"]
    assert 'return "A"' in (image / "zoo/animals.py").read_text()
    assert b.changed_modules() == ["zoo.animals"] and 'return "B"' in b.source("zoo.animals")
    report = b.refresh()
    assert report.kept_ours == ["zoo.animals"]
    assert 'return "B"' in b.source("zoo.animals")
    with pytest.raises(CommitConflict):
        b.commit()
    b.abort()
    assert 'return "A"' in b.source("zoo.animals") and not b.has_changes


def test_refresh_brings_in_theirs_and_keeps_ours_elsewhere(image, views):
    a = views(image, "a")
    b = views(image, "b", install=False)
    edited(a, "zoo.animals", 'return "woof"', 'return "A"')
    edited(b, "zoo.keeper", "self.dogs = [", "self.dogs = ['extra'] + [")
    a.commit()
    report = b.refresh()
    assert report.brought_in == ["zoo.animals"] and report.kept_ours == []
    assert b.changed_modules() == ["zoo.keeper"]
    b.commit()
    assert "extra" in (image / "zoo/keeper.py").read_text()
    assert 'return "A"' in (image / "zoo/animals.py").read_text()
    assert [r["session"] for r in b.store.journal()] == ["a", "b"]


def test_refresh_reimports_changed_modules_and_their_importers(image, views):
    a = views(image, "a")
    keeper = a.module("zoo.keeper")
    assert keeper.Keeper().feed() == ["a says woof"]
    b = views(image, "b", install=False)
    edited(b, "zoo.animals", 'return "woof"', 'return "WOOF"')
    b.commit()
    report = a.refresh()
    assert "zoo.animals" in report.reloaded and "zoo.keeper" in report.reloaded
    assert a.module("zoo.keeper").Keeper().feed() == ["a says WOOF"]


def test_the_importers_failing_with_a_module_are_those_surely_importing_it_as_they_run(image, views):
    view = views(image, install=False)
    for name, text in [("zoo.shelf", "X = 1\n"),
                       ("zoo.direct", "from zoo.shelf import X\n"),
                       ("zoo.through", "import zoo.direct\n"),        # fails with zoo.direct
                       ("zoo.classy", "class C:\n    from zoo.shelf import X\n"),
                       ("zoo.finally_", "try:\n    import zoo.shelf\nfinally:\n    pass\n"),
                       ("zoo.relative", "from .shelf import X\n"),
                       # An import that may not run, or whose failure may be caught.
                       ("zoo.lazy", "def load():\n    from zoo.shelf import X\n    return X\n"),
                       ("zoo.typed", "import typing\n\nif typing.TYPE_CHECKING:\n    from zoo.shelf import X\n"),
                       ("zoo.guarded", "try:\n    import zoo.shelf\nexcept Exception:\n    pass\n"),
                       ("zoo.lazier", "def load():\n    import zoo.through\n")]:
        view.add_module(name, text)
    assert view.importers_failing_with("zoo.shelf") == {
        "zoo.direct", "zoo.through", "zoo.classy", "zoo.finally_", "zoo.relative"}
    assert {"zoo.lazy", "zoo.typed", "zoo.guarded", "zoo.lazier"} <= view.image_importers_of("zoo.shelf")


def test_an_import_under_with_suppress_is_not_surely_run_any_other_with_is(image, views):
    # Under `with contextlib.suppress(Exception):` the import's failure is caught: the
    # module imports in a new session, and was named failing with zoo.shelf.
    view = views(image, install=False)
    for name, text in [("zoo.shelf", "X = 1\n"),
                       ("zoo.quiet", "import contextlib\n\nwith contextlib.suppress(Exception):\n"
                                     "    import zoo.shelf\n"),
                       ("zoo.quieter", "from contextlib import suppress\n\nwith suppress(TypeError):\n"
                                       "    from zoo.shelf import X\n"),
                       ("zoo.among", "import contextlib\n\nwith open(__file__) as f, contextlib.suppress("
                                     "Exception):\n    import zoo.shelf\n"),
                       ("zoo.through_quiet", "import zoo.quiet\n"),
                       # Any other context manager is taken to let the failure through.
                       ("zoo.warned", "import warnings\n\nwith warnings.catch_warnings():\n"
                                      "    import zoo.shelf\n"),
                       ("zoo.nested", "import threading\n\nwith threading.Lock():\n"
                                      "    class C:\n        from zoo.shelf import X\n")]:
        view.add_module(name, text)
    assert view.importers_failing_with("zoo.shelf") == {"zoo.warned", "zoo.nested"}
    assert {"zoo.quiet", "zoo.quieter", "zoo.among", "zoo.through_quiet"} <= view.image_importers_of("zoo.shelf")


def test_a_handler_or_suppress_is_judged_by_the_exceptions_it_names(image, views):
    # A module fails here by the dataclass decorator's TypeError, which `except
    # ImportError:` or `suppress(ImportError)` lets through: zoo.optional and zoo.muted were
    # taken to catch it, by their handler alone, and not named failing with zoo.shelf.
    view = views(image, install=False)
    for name, text in [("zoo.shelf", "X = 1\n"),
                       ("zoo.optional", "try:\n    from zoo.shelf import X\nexcept ImportError:\n    X = None\n"),
                       ("zoo.muted", "from contextlib import suppress\n\nwith suppress(ImportError, OSError):\n"
                                     "    import zoo.shelf\n"),
                       ("zoo.starred", "import builtins\n\ntry:\n    import zoo.shelf\nexcept* (ModuleNotFoundError, "
                                       "builtins.AttributeError):\n    pass\n"),
                       ("zoo.through_optional", "import zoo.optional\n"),
                       ("zoo.empty", "import contextlib\n\nwith contextlib.suppress():\n    import zoo.shelf\n"),
                       # What catches a TypeError, or may: the module imports in a new session.
                       ("zoo.typed", "try:\n    import zoo.shelf\nexcept (ImportError, TypeError):\n    pass\n"),
                       ("zoo.broad", "try:\n    import zoo.shelf\nexcept BaseException:\n    pass\n"),
                       ("zoo.bare", "try:\n    import zoo.shelf\nexcept ImportError:\n    pass\n"
                                    "except:\n    pass\n"),
                       ("zoo.named", "ERRORS = (TypeError,)\n\ntry:\n    import zoo.shelf\nexcept ERRORS:\n    pass\n"),
                       ("zoo.spread", "import contextlib\n\nERRORS = (TypeError,)\n\n"
                                      "with contextlib.suppress(*ERRORS):\n    import zoo.shelf\n"),
                       # After a statement that may raise what is caught (an optional
                       # dependency missing), the import may not run.
                       ("zoo.second", "try:\n    import numpy\n    import zoo.shelf\nexcept ImportError:\n"
                                      "    pass\n"),
                       ("zoo.classed", "try:\n    class C:\n        import numpy\n        import zoo.shelf\n"
                                       "except ImportError:\n    pass\n"),
                       # An `else:` runs only when nothing was caught, a handler only when something was.
                       ("zoo.elsewise", "try:\n    import numpy\nexcept ImportError:\n    pass\nelse:\n"
                                        "    import zoo.shelf\n"),
                       ("zoo.fallback", "try:\n    import numpy\nexcept ImportError:\n    import zoo.shelf\n")]:
        view.add_module(name, text)
    assert view.importers_failing_with("zoo.shelf") == {
        "zoo.optional", "zoo.muted", "zoo.starred", "zoo.through_optional", "zoo.empty"}


def test_an_import_written_alike_in_every_branch_of_an_if_surely_runs(image, views):
    # Whichever branch runs imports zoo.shelf: zoo.either and zoo.chain fail with it in a
    # new session, and were not named, an `if` taken as one that may not run.
    view = views(image, install=False)
    for name, text in [("zoo.shelf", "X = 1\n"),
                       ("zoo.either", "import sys\n\nif sys.version_info >= (3, 11):\n    from zoo.shelf import X\n"
                                      "else:\n    from zoo.shelf import X as Y\n"),
                       ("zoo.chain", "import sys\n\nif sys.platform == 'linux':\n    import zoo.shelf\n"
                                     "elif sys.platform == 'darwin':\n    with open(__file__):\n"
                                     "        import zoo.shelf\nelse:\n    import zoo.shelf, zoo.other\n"
                                     "    import zoo.shelf\n"),
                       # A branch without it, or none taken, imports nothing.
                       ("zoo.oneway", "import sys\n\nif sys.version_info >= (3, 11):\n    import zoo.shelf\n"),
                       ("zoo.otherwise", "import sys\n\nif sys.version_info >= (3, 11):\n    import zoo.shelf\n"
                                         "elif sys.version_info >= (3, 9):\n    pass\nelse:\n    import zoo.shelf\n"),
                       ("zoo.caught", "import sys\n\nif sys.version_info >= (3, 11):\n    import zoo.shelf\n"
                                      "else:\n    try:\n        import zoo.shelf\n    except Exception:\n"
                                      "        pass\n")]:
        view.add_module(name, text)
    assert view.importers_failing_with("zoo.shelf") == {"zoo.either", "zoo.chain"}


def test_the_submodules_of_a_package_failing_fail_with_it(image, views):
    # Importing zoo.pack.extra runs zoo/pack/__init__.py first: it fails with zoo.pack
    # though it imports nothing, and was not named; so do the submodules of a package
    # that fails by importing it (zoo.user, zoo.user.sub).
    view = views(image, install=False)
    for name, text, package in [("zoo.pack", "X = 1\n", True),
                                ("zoo.pack.extra", "Y = 2\n", False),
                                ("zoo.pack.deep", "", True),
                                ("zoo.pack.deep.leaf", "Z = 3\n", False),
                                ("zoo.user", "import zoo.pack\n", True),
                                ("zoo.user.sub", "", False),
                                ("zoo.apart", "def load():\n    import zoo.pack.extra\n", False)]:
        view.add_module(name, text, package=package)
    assert view.importers_failing_with("zoo.pack") == {
        "zoo.pack.extra", "zoo.pack.deep", "zoo.pack.deep.leaf", "zoo.user", "zoo.user.sub"}
    assert view.importers_failing_with("zoo.pack.extra") == set()


def test_a_package_failing_on_its_re_import_re_imports_its_loaded_submodules_failing_too(image, views):
    # zoo.pack.extra, loaded and importing nothing, kept its live copy while a new session's
    # import of it fails with zoo.pack; a package that still imports leaves its own alone.
    view = views(image)
    for name, text, package in [("zoo.pack", "X = 1\n", True), ("zoo.pack.extra", "Y = 2\n", False),
                                ("zoo.fine", "X = 1\n", True), ("zoo.fine.extra", "Y = 2\n", False)]:
        view.add_module(name, text, package=package)
    kept = view.module("zoo.fine.extra")
    assert view.module("zoo.pack.extra") is not None
    view.set_source("zoo.pack", "raise RuntimeError('pack broken')\n", live=False)
    view.set_source("zoo.fine", "X = 2\n", live=False)
    assert view.reload_with_importers(["zoo.pack", "zoo.fine"]) == ["zoo.fine", "zoo.pack", "zoo.pack.extra"]
    assert view.import_errors["zoo.pack.extra"] == "RuntimeError: pack broken"
    assert view.module("zoo.fine.extra") is kept


def test_abort_discards_and_reloads(image, views):
    view = views(image)
    assert view.module("zoo.animals").Dog("r").noise() == "woof"
    edited(view, "zoo.animals", 'return "woof"', 'return "meow"')
    view.abort()   # the live module was never changed; only the text was
    assert not view.has_changes
    edited(view, "zoo.animals", 'return "woof"', 'return "meow"')
    view.commit()
    assert view.module("zoo.animals").Dog("r").noise() == "meow"


def test_a_module_turned_into_a_package_is_one_changed_module(tmp_path, views):
    # q.py removed and q/__init__.py made: two files, one module, named twice by abort's
    # `discarded`, status and the conflict's "kept uncommitted (q, q, q.w)".
    view = views(write_image(tmp_path / "image", {"q.py": "class Q:\n    pass\n"}))
    view.remove_module("q")
    view.add_module("q", "", package=True)
    view.add_module("q.w", "")
    assert view.changed_files() == ["q.py", "q/__init__.py", "q/w.py"]
    assert view.changed_modules() == ["q", "q.w"]


def test_add_and_remove_modules_commit_as_files(image, views):
    view = views(image)
    view.add_module("zoo.birds", "class Bird:\n    pass\n")
    assert view.changed_modules() == ["zoo.birds"]
    view.commit()
    assert (image / "zoo/birds.py").exists() and view.module("zoo.birds").Bird
    assert view.remove_module("zoo") == ["zoo", "zoo.animals", "zoo.birds", "zoo.keeper", "zoo.test_zoo"]
    view.commit()
    assert not (image / "zoo").exists()
    assert view.module_names() == ["json", "kern"]


def test_shadowed_kernel_module_is_not_the_views(image, views):
    view = views(image)
    assert view.shadowed("json")
    assert view.module("json") is None
    import json
    assert not view.defines(json.JSONDecoder)


NESTING = """\
import json


class Outer:
    class Mid:
        class Inner:
            pass

    class __Hidden:
        pass

    if True:
        class Guarded:
            pass

    Alias = json.JSONDecoder


class Gone:
    class Old:
        pass


OLD = Gone.Old
Gone.Old = Gone.Made = type("Made", (), {"__qualname__": "Gone.Made"})   # no class statement made it


def make():
    class Local:
        pass
    return Local


LOCAL = make()
"""


def test_makes_takes_the_classes_nested_in_the_image_s_own_classes(tmp_path, views):
    # A dataclass nested in a class is made as its module runs, so a base change leaving it
    # unmakeable fails that module's import: `defines` (top level only) is not enough.
    view = views(write_image(tmp_path / "image", {"nest.py": NESTING}))
    nest = view.module("nest")
    outer = nest.Outer
    for made in (outer, outer.Mid, outer.Mid.Inner, outer._Outer__Hidden, outer.Guarded):
        assert view.makes(made), made.__qualname__
    assert not view.defines(outer.Mid)
    for other in (outer.Alias, nest.OLD, nest.Gone.Made, nest.LOCAL, 3):
        assert not view.makes(other), other


def test_a_package_the_kernel_holds_gets_none_of_the_images_modules(tmp_path, views, monkeypatch):
    # `import json.tool` loaded the image's json/tool.py under the standard library's json.
    import json
    import json.tool as stdlib_tool
    image = write_image(tmp_path / "image", {"json/__init__.py": "", "json/tool.py": "MARK = 'image'\n",
                                             "json/extra.py": "MARK = 'image'\n"})
    monkeypatch.delitem(sys.modules, "json.tool")   # restored after the test
    view = views(image)
    assert view.shadowing("json.tool") == view.shadowing("json.extra") == "json"
    assert view.module("json.tool") is None and view.module("json.extra") is None
    tool = importlib.import_module("json.tool")
    assert tool.__file__ == stdlib_tool.__file__ and not hasattr(tool, "MARK")
    with pytest.raises(ModuleNotFoundError):   # the kernel's json has no extra
        importlib.import_module("json.extra")
    assert sys.modules["json"] is json


def test_a_package_the_image_holds_is_the_images_whole(tmp_path, views):
    # A standard-library name no module has imported yet: the image's package is that name,
    # and the standard library's modules of it are not mixed in.
    if any(name == "wsgiref" or name.startswith("wsgiref.") for name in sys.modules):
        pytest.skip("wsgiref is loaded in this process already")
    image = write_image(tmp_path / "image", {"wsgiref/__init__.py": "class Mine:\n    pass\n",
                                             "wsgiref/extra.py": "MARK = 'image'\n"})
    view = views(image)
    assert view.module("wsgiref").Mine and view.module("wsgiref.extra").MARK == "image"
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("wsgiref.util")   # the standard library's, not the image's
    assert not view.shadowed("wsgiref.extra")


def test_tracebacks_and_getsource_number_lines_as_python_does_past_a_page_break(tmp_path, views):
    # The view's lines were split as str.splitlines splits, which also ends one at a form
    # feed (and \x1c-\x1e, \x85, \u2028, \u2029): below one, a traceback quoted the line
    # above the one that raised, and inspect.getsource answered the page break.
    image = write_image(tmp_path / "image", {"paged.py": "\x0c\ndef boom():\n    raise ValueError('here')  # \u2028\n"
                                                         "def after():\n    return 1\n"})
    paged = views(image).module("paged")
    with pytest.raises(ValueError) as raised:
        paged.boom()
    assert traceback.extract_tb(raised.tb)[-1].line == "raise ValueError('here')  #"   # stripped
    assert inspect.getsource(paged.after) == "def after():\n    return 1\n"


@pytest.mark.parametrize("where", ["before", "past"])
def test_a_break_during_commit_leaves_the_view_on_what_the_disk_decided(image, views, monkeypatch, where):
    # A soft break (KeyboardInterrupt) lands just before the commit point, or just
    # past it (before anything is moved into place).
    from gsmcpd.image import store as store_module
    a = views(image, "a")
    edited(a, "zoo.animals", 'return "woof"', 'return "A"')

    def interrupted(self, intent):
        raise KeyboardInterrupt("soft break")

    monkeypatch.setattr(store_module.ImageStore, "_write_intent" if where == "before" else "_apply",
                        interrupted)
    with pytest.raises(KeyboardInterrupt):
        a.commit()
    monkeypatch.undo()
    stood = (0, []) if where == "before" else (1, ["zoo.animals"])   # what the worker reports
    assert (a.commit_count, a.last_commit) == stood
    other = views(image, "b", install=False)
    if where == "before":   # nothing committed: the change is still the view's own
        assert a.changed_modules() == ["zoo.animals"] and 'return "woof"' in other.source("zoo.animals")
    else:                   # committed: the view stands on it, nothing left to commit
        assert a.changed_modules() == [] and 'return "A"' in other.source("zoo.animals")
    assert 'return "A"' in a.source("zoo.animals")
    edited(a, "zoo.animals", 'return "A"', 'return "C"')
    assert a.commit() == ["zoo.animals"]         # no conflict with itself either way
    assert 'return "C"' in (image / "zoo/animals.py").read_text()
    assert (a.commit_count, a.last_commit) == (stood[0] + 1, ["zoo.animals"])
    assert a.commit() == [] and a.commit_count == stood[0] + 1   # nothing to commit counts nothing


def test_a_break_while_a_pending_commit_is_logged_still_counts_it(image, views, monkeypatch):
    # The disk fails past the commit point (CommitPending: decided), and a break lands
    # while that is being logged: the commit is counted all the same, for the worker's
    # answer to say it stands.
    from gsmcpd.image import store as store_module
    from gsmcpd.image import view as view_module
    a = views(image, "a")
    edited(a, "zoo.animals", 'return "woof"', 'return "A"')

    def disk_full(self, intent):
        raise OSError(28, "No space left on device")

    def warning(*args, **kwargs):
        raise KeyboardInterrupt("soft break")

    monkeypatch.setattr(store_module.ImageStore, "_apply", disk_full)
    monkeypatch.setattr(view_module.log, "warning", warning)
    with pytest.raises(KeyboardInterrupt):
        a.commit()
    monkeypatch.undo()
    assert os.path.exists(a.store.intent_file)            # decided, not yet finished on disk
    assert (a.commit_count, a.last_commit) == (1, ["zoo.animals"])


@pytest.mark.parametrize("how", ["timed out", "broken"])
def test_a_commit_that_never_got_the_image_lock_is_not_asked_after_under_it_again(image, views, monkeypatch, how):
    # It wrote nothing. Asking whether it stands (has_commit) waited for the lock once more:
    # a commit timed out only after twice GS_MCP_IMAGE_LOCK_WAIT, and one broken while it
    # waited (a cancel) waited on, past the break's grace, until the lock's wait was out.
    import fcntl
    from gsmcpd.image.store import ImageLockTimeout
    a = views(image, "a")
    edited(a, "zoo.animals", 'return "woof"', 'return "A"')
    a.store.lock_wait = 0.05
    asked = []
    monkeypatch.setattr(a.store, "has_commit", lambda commit_id: asked.append(commit_id) or False)
    if how == "broken":
        def broken(fd, mode):
            raise KeyboardInterrupt("soft break")
        monkeypatch.setattr(a.store, "_wait_for", broken)
    with open(a.store.lock_file) as holding:
        fcntl.flock(holding, fcntl.LOCK_EX)
        with pytest.raises(ImageLockTimeout if how == "timed out" else KeyboardInterrupt):
            a.commit()
    assert asked == []
    assert a.changed_modules() == ["zoo.animals"] and a.commit_count == 0
    assert 'return "woof"' in (image / "zoo/animals.py").read_text()


@pytest.mark.parametrize("where", ["before", "after"])
def test_a_commit_that_cannot_tell_whether_it_stands_raises_what_failed_it_and_says_undecided(
        image, views, monkeypatch, where):
    # Asking whether it stands (has_commit) waited out the lock again: its ImageLockTimeout
    # replaced the break, and the worker answered "commit failed ... kept uncommitted"
    # of a commit that may stand.
    from gsmcpd.image import store as store_module
    a = views(image, "a")
    edited(a, "zoo.animals", 'return "woof"', 'return "A"')

    def interrupted(self, *args):
        raise KeyboardInterrupt("soft break")

    def timed_out(commit_id):
        raise store_module.ImageLockTimeout(a.store.lock_file, 0.05, [])

    monkeypatch.setattr(store_module.ImageStore, "_write_intent" if where == "before" else "_apply",
                        interrupted)
    monkeypatch.setattr(a.store, "has_commit", timed_out)
    with pytest.raises(KeyboardInterrupt):
        a.commit()
    monkeypatch.undo()
    assert a.undecided == ["zoo.animals"]
    assert (a.commit_count, a.changed_modules()) == (0, ["zoo.animals"])   # not stepped onto
    stands = where == "after"
    assert a.commit() == ([] if stands else ["zoo.animals"])   # commit again settles it
    # Its own commit, not "already committed by another".
    assert (a.settled, a.already_committed, a.undecided) == ((["zoo.animals"] if stands else []), [], [])
    assert 'return "A"' in (image / "zoo/animals.py").read_text() and not a.has_changes
    assert not os.path.exists(a.store.intent_file)   # finished on disk


def _undecided_past_the_commit_point(a, monkeypatch):
    """Commit `a`'s changes, broken past the commit point, and asking whether it stands
    waited out the lock: the commit stands, undecided."""
    from gsmcpd.image import store as store_module

    def interrupted(self, *args):
        raise KeyboardInterrupt("soft break")

    def timed_out(commit_id):
        raise store_module.ImageLockTimeout(a.store.lock_file, 0.05, [])

    with monkeypatch.context() as patched:
        patched.setattr(store_module.ImageStore, "_apply", interrupted)
        patched.setattr(a.store, "has_commit", timed_out)
        with pytest.raises(KeyboardInterrupt):
            a.commit()
    assert a.undecided == ["zoo.animals"]


def test_a_change_made_after_an_undecided_commit_that_stands_commits_over_it_not_against_it(
        image, views, monkeypatch):
    # The next commit's base was still the one before the undecided commit: the module it
    # changed again conflicted, "changed on disk ... (by tester's session a ...)", its own.
    a = views(image, "a")
    edited(a, "zoo.animals", 'return "woof"', 'return "A"')
    _undecided_past_the_commit_point(a, monkeypatch)
    edited(a, "zoo.animals", 'return "A"', 'return "AA"')
    assert a.commit() == ["zoo.animals"]
    assert (a.settled, a.already_committed) == (["zoo.animals"], [])
    assert 'return "AA"' in (image / "zoo/animals.py").read_text() and not a.has_changes
    assert [record["session"] for record in a.store.journal()] == ["a", "a"]


def _others_commits_appended(store, size):
    """Journal records of other sessions' commits to another module, `size` bytes of them,
    as a busy image appends them between a session's commits."""
    import json
    record = {"files": [{"file": "zoo/keeper.py", "new": "0" * 64, "old": "1" * 64}],
              "session": "b", "time": "2026-12-01T09:00:00Z", "user": "bob"}
    lines = []
    while sum(map(len, lines)) < size:
        lines.append(json.dumps({**record, "id": "%016x" % len(lines)}, sort_keys=True) + "\n")
    with open(store.journal_file, "a") as journal:
        journal.write("".join(lines))


def test_an_undecided_commit_is_settled_however_many_commits_others_made_since(image, views, monkeypatch):
    # Only the journal's last 256 KiB were searched for it: past them, the session's own
    # commit was taken for one that does not stand, and then for another's
    # ("already committed by another, with the same text").
    a = views(image, "a")
    edited(a, "zoo.animals", 'return "woof"', 'return "A"')
    _undecided_past_the_commit_point(a, monkeypatch)
    assert a.store.recover()   # as another's next commit would: the journal has its record
    _others_commits_appended(a.store, 400 * 1024)
    report = a.refresh()
    assert (report.settled, report.already_committed, report.kept_ours) == (["zoo.animals"], [], [])
    assert not a.has_changes


def test_a_refresh_after_an_undecided_commit_that_stands_says_it_is_the_sessions_own(image, views, monkeypatch):
    # It was "already committed by another, with the same text".
    a = views(image, "a")
    edited(a, "zoo.animals", 'return "woof"', 'return "A"')
    _undecided_past_the_commit_point(a, monkeypatch)
    report = a.refresh()
    assert (report.settled, report.already_committed, report.brought_in, report.kept_ours) == (
        ["zoo.animals"], [], [], [])
    assert not a.has_changes
    assert a.commit() == [] and a.settled == []   # settled once


@pytest.mark.parametrize("settling", ["refresh", "abort"])
def test_settling_an_undecided_commit_found_pending_finishes_it_on_disk(image, views, monkeypatch, settling):
    # A commit's settle had the store finish it (the commit finishes what is pending first);
    # a refresh's or abort's left it pending, its files not yet renamed into place, until
    # whichever commit came next.
    a = views(image, "a")
    edited(a, "zoo.animals", 'return "woof"', 'return "A"')
    _undecided_past_the_commit_point(a, monkeypatch)
    assert os.path.exists(a.store.intent_file) and 'return "woof"' in (image / "zoo/animals.py").read_text()
    settled = a.refresh().settled if settling == "refresh" else a.settle()
    assert settled == ["zoo.animals"]
    assert not os.path.exists(a.store.intent_file) and 'return "A"' in (image / "zoo/animals.py").read_text()
    assert [record["session"] for record in a.store.journal()] == ["a"]


def test_an_undecided_commit_is_settled_though_its_files_were_committed_past_a_compaction(
        image, views, monkeypatch):
    # Compaction left out its record (each of its files had a later commit, and it was not
    # among the last JOURNAL_KEEP): the settle took it for one that never stood, and the
    # session's own standing commit was kept as its uncommitted change, conflicting with
    # the later writer's.
    from gsmcpd.image import store as store_module
    monkeypatch.setattr(store_module, "JOURNAL_KEEP", 3)
    a, b = views(image, "a"), views(image, "b", install=False)
    edited(a, "zoo.animals", 'return "woof"', 'return "A"')
    _undecided_past_the_commit_point(a, monkeypatch)
    b.store.journal_limit = 512
    for n in range(8):   # the first finishes a's pending commit, journalling it
        b.refresh()
        edited(b, "zoo.animals", 'return "A"' if n == 0 else f'return "B{n - 1}"', f'return "B{n}"')
        assert b.commit() == ["zoo.animals"]
    first = (image / ".gsmcpd" / "journal.jsonl").read_bytes().split(b"\n")[0]
    assert first.startswith(b'{"dropped": ')                      # compacted
    report = a.refresh()
    assert (report.settled, report.brought_in, report.kept_ours) == (["zoo.animals"], ["zoo.animals"], [])
    assert not a.has_changes and 'return "B7"' in a.source("zoo.animals")
    assert not list((image / ".gsmcpd").glob("unsettled.*"))      # settled: compaction may leave it out again


def test_a_view_closed_with_its_commit_undecided_leaves_compaction_free_to_leave_its_record_out(
        image, views, monkeypatch):
    a = views(image, "a")
    edited(a, "zoo.animals", 'return "woof"', 'return "A"')
    _undecided_past_the_commit_point(a, monkeypatch)
    assert [path.name for path in (image / ".gsmcpd").glob("unsettled.*")] == [f"unsettled.{a._unsettled[0]}"]
    a.close()   # the session ended: nothing will settle it
    assert not list((image / ".gsmcpd").glob("unsettled.*"))


def test_a_break_while_the_view_reloads_after_its_commit_leaves_it_on_the_commit(image, views, monkeypatch):
    # The commit stands; a break lands as the view re-reads the image afterwards.
    # The view stands on its commit all the same: nothing left to commit, and its
    # next commit does not conflict with its own.
    a = views(image, "a")
    edited(a, "zoo.animals", 'return "woof"', 'return "A"')

    def interrupted(self, *args, **kwargs):
        raise KeyboardInterrupt("soft break")

    monkeypatch.setattr(type(a), "_load_snapshot", interrupted)
    with pytest.raises(KeyboardInterrupt):
        a.commit()
    monkeypatch.undo()
    assert 'return "A"' in (image / "zoo/animals.py").read_text()
    assert a.changed_modules() == [] and (a.commit_count, a.last_commit) == (1, ["zoo.animals"])
    edited(a, "zoo.animals", 'return "A"', 'return "B"')
    assert a.commit() == ["zoo.animals"]
    assert 'return "B"' in (image / "zoo/animals.py").read_text()


def _commit_then(view, monkeypatch, meanwhile):
    """Make `view`'s next commit run `meanwhile` as soon as its store's commit returns (the
    image lock released, the view not yet done): another session's step landing there."""
    commit = view.store.commit

    def then(*args, **kwargs):
        version = commit(*args, **kwargs)
        meanwhile()
        return version
    monkeypatch.setattr(view.store, "commit", then)


def _b_commits_over(b, old, new):
    """Session b sees the image as it is now, edits zoo.animals and zoo.keeper, and commits."""
    def step():
        b.refresh()
        edited(b, "zoo.animals", old, new)
        b.set_source("zoo.keeper", b.source("zoo.keeper") + "KEPT_BY_B = True\n", live=False)
        assert b.commit() == ["zoo.animals", "zoo.keeper"]
    return step


def test_a_commit_leaves_the_view_on_the_image_as_its_own_commit_made_it(image, views, monkeypatch):
    # Another session's commit of the same method landed between this commit releasing the
    # image lock and the view re-reading the image: the view read it, so the session that
    # had just committed its edit held the other's text, and its answer did not say so
    # (a suite run under load: "the winner's own view lacks its edit").
    a = views(image, "a")
    b = views(image, "b", install=False)
    keeper = a.source("zoo.keeper")
    edited(a, "zoo.animals", 'return "woof"', 'return "A"')
    _commit_then(a, monkeypatch, _b_commits_over(b, 'return "A"', 'return "B"'))
    assert a.commit() == ["zoo.animals"]
    assert 'return "A"' in (a.source("zoo.animals")) and a.module("zoo.animals").Dog("x").noise() == "A"
    assert a.source("zoo.keeper") == keeper             # nor half of the commit after it
    assert (a.version, a.brought_in, a.changed_modules()) == (1, [], [])
    assert b.version == 2 and 'return "B"' in (image / "zoo/animals.py").read_text()
    edited(a, "zoo.animals", 'return "A"', 'return "A2"')   # its base is its own commit: b's is news
    with pytest.raises(CommitConflict):
        a.commit()
    report = a.refresh()                                # b's commit comes in whole, and is said so
    assert (report.brought_in, report.kept_ours) == (["zoo.keeper"], ["zoo.animals"])
    assert "KEPT_BY_B" in a.source("zoo.keeper") and a.version == 2


def test_a_commit_after_another_s_it_had_not_seen_brings_that_one_in_and_no_later_one(
        image, views, monkeypatch):
    # A commit starts the view afresh on the image as it stands at its commit point: what
    # others committed before it is brought in (and named), what lands after it is not.
    a = views(image, "a")
    b = views(image, "b", install=False)
    c = views(image, "c", install=False)
    edited(b, "zoo.animals", 'return "woof"', 'return "B"')
    assert b.commit() == ["zoo.animals"]
    a.set_source("zoo.keeper", a.source("zoo.keeper") + "BY_A = True\n", live=False)
    _commit_then(a, monkeypatch, _b_commits_over(c, 'return "B"', 'return "C"'))
    assert a.commit() == ["zoo.keeper"]
    assert (a.version, a.brought_in) == (2, ["zoo.animals"])
    assert 'return "B"' in a.source("zoo.animals") and "BY_A" in a.source("zoo.keeper")
    assert "KEPT_BY_B" not in a.source("zoo.keeper")


def test_a_commit_that_could_not_read_the_image_back_under_its_lock_says_what_overtook_it(
        image, views, monkeypatch):
    # The read under the commit's lock failed (the commit stands all the same: the store
    # leaves read_back empty): the view reads the image afterwards, as it is then. A module
    # of its own commit that another's changed since is named as brought in, not left to
    # look like its own.
    a = views(image, "a")
    b = views(image, "b", install=False)
    edited(a, "zoo.animals", 'return "woof"', 'return "A"')
    commit = a.store.commit

    def not_read_back(*args, read_back=None, **kwargs):
        return commit(*args, **kwargs)
    monkeypatch.setattr(a.store, "commit", not_read_back)
    _commit_then(a, monkeypatch, _b_commits_over(b, 'return "A"', 'return "B"'))
    assert a.commit() == ["zoo.animals"]
    assert (a.version, a.brought_in, a.changed_modules()) == (2, ["zoo.animals", "zoo.keeper"], [])
    assert 'return "B"' in a.source("zoo.animals") and (a.commit_count, a.last_commit) == (1, ["zoo.animals"])

def test_a_break_can_never_leave_a_snapshot_half_loaded(image, views, monkeypatch):
    # _load_snapshot replaces the texts, their base and its hashes in one statement:
    # a break raised by any call inside it leaves all of them as they were.
    from gsmcpd.image import view as view_module
    a = views(image, "a")
    edited(a, "zoo.animals", 'return "woof"', 'return "A"')
    before = (a.texts, a.base_texts, a.base_hashes, a.version)

    def interrupted(data):
        raise KeyboardInterrupt("soft break")

    monkeypatch.setattr(view_module, "sha256", interrupted)   # the last call before the stores
    with pytest.raises(KeyboardInterrupt):
        a._load_snapshot()
    assert (a.texts, a.base_texts, a.base_hashes, a.version) == before
    assert a.changed_modules() == ["zoo.animals"]


def test_a_reserved_view_is_the_image_as_it_was_when_reserved_though_read_later(image, views):
    import threading
    from gsmcpd.image.view import View
    a = views(image, "a")
    edited(a, "zoo.animals", 'return "woof"', 'return "LATE"')
    b = View.reserve(image, user="tester", session_id="b")
    try:
        assert b.reserved and not exclusive_lock_free(image)
        committing = threading.Thread(target=a.commit)
        committing.start()
        committing.join(0.2)    # it waits for b's lock (were it not held, it would be done)
        b.load(install=False)
        committing.join()
        assert not b.reserved and b.version == 0
        assert 'return "woof"' in b.source("zoo.animals")
        assert a.version == 1 and 'return "LATE"' in (image / "zoo/animals.py").read_text()
        assert b.refresh().brought_in == ["zoo.animals"]
    finally:
        b.close()


def test_closing_a_view_never_read_releases_its_lock(image):
    from gsmcpd.image.view import View
    view = View.reserve(image, user="tester", session_id="b")
    assert not exclusive_lock_free(image)
    view.close()
    assert exclusive_lock_free(image)


def test_abort_undoes_what_code_did_to_live_modules(image, views):
    view = views(image)
    animals = view.module("zoo.animals")
    animals.Dog.noise = lambda self: "patched"       # as execute_code could
    animals.EXTRA = 1
    report = view.abort()
    assert not view.has_changes and "zoo.animals" in report.reloaded
    fresh = view.module("zoo.animals")
    assert fresh.Dog("r").noise() == "woof" and not hasattr(fresh, "EXTRA")
    # Importers see the fresh module too, not the one the patch was made on.
    assert view.module("zoo.keeper").Keeper().feed() == ["a says woof"]


def _import_from_disk(image, name, rel):
    """As execute_code could: the image module's file imported around the view's hook."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(name, image / rel)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_abort_imports_again_through_the_view_an_image_module_code_imported_from_its_file(image, views):
    import json as stdlib_json
    view = views(image)
    view.module("zoo.keeper")
    around = _import_from_disk(image, "zoo.keeper", "zoo/keeper.py")
    try:
        assert view.module("zoo.keeper") is None   # taken for a kernel module of that name
        report = view.abort()
        keeper = view.module("zoo.keeper")
        assert keeper is not None and keeper is not around and view.owns_module("zoo.keeper")
        assert "zoo.keeper" in report.reloaded
        assert keeper.Keeper().feed() == ["a says woof"]
        # A kernel module an image module shadows is no image file: it stays.
        assert sys.modules["json"] is stdlib_json and view.shadowed("json")
    finally:
        if sys.modules.get("zoo.keeper") is around:
            del sys.modules["zoo.keeper"]


def test_abort_puts_back_the_views_import_hook_code_took_out_or_went_before(image, views):
    view = views(image)
    view.module("zoo.keeper")
    sys.meta_path.remove(view._loader)
    before = type("Before", (), {"find_spec": staticmethod(lambda *args: None)})()
    sys.meta_path.insert(0, before)
    try:
        view.abort()
        assert sys.meta_path.index(view._loader) == 0
        assert view.module("zoo.keeper").Keeper().feed() == ["a says woof"]
    finally:
        sys.meta_path.remove(before)


@pytest.mark.parametrize("raised, recorded", [
    ("ValueError('bad')", "ValueError: bad"),
    ("SystemExit(3)", "SystemExit: 3"),
    ("KeyboardInterrupt('at import')", "KeyboardInterrupt: at import"),
    ("GeneratorExit('closed')", "GeneratorExit: closed"),
])
def test_whatever_a_modules_import_raises_is_its_import_error(image, views, raised, recorded):
    (image / "zoo/broken.py").write_text("raise %s\n" % raised)
    view = views(image)
    try:
        module = view.module("zoo.broken")
    except BaseException as escaped:   # fail this test, not end the pytest run (KeyboardInterrupt)
        pytest.fail("the import's %s escaped View.module" % type(escaped).__name__)
    assert module is None
    assert view.import_errors["zoo.broken"] == recorded
    assert "zoo.broken" not in sys.modules
    assert view.module("zoo.animals") is not None   # the others still load


@pytest.mark.parametrize("kind", ["SoftBreak", "HardBreak"])
def test_a_break_during_an_import_is_not_taken_for_the_modules_error(image, views, kind):
    (image / "zoo/broken.py").write_text("from gsmcpd.worker.toolset import %s\nraise %s('break')\n" % (kind, kind))
    view = views(image)
    with pytest.raises(BaseException) as raised:
        view.module("zoo.broken")
    assert type(raised.value).__name__ == kind
    assert "zoo.broken" not in view.import_errors


@pytest.mark.parametrize("made_of_it", ["raise SystemExit(130)", "raise KeyboardInterrupt('own')",
                                        "raise GeneratorExit"])
def test_what_an_import_made_of_a_soft_break_is_the_break_not_the_modules_error(image, views, made_of_it):
    # The module caught the break (the worker's handler marked the call) and raised its own.
    from gsmcpd.worker.toolset import SoftBreak, mark_soft_break
    (image / "zoo/broken.py").write_text(
        "from gsmcpd.worker.toolset import SoftBreak, mark_soft_break\ntry:\n"
        "    mark_soft_break()\n    raise SoftBreak('soft break')\n"
        "except KeyboardInterrupt:\n    %s\n" % made_of_it)
    view = views(image)
    try:
        with pytest.raises(SoftBreak):
            view.module("zoo.broken")
    finally:
        mark_soft_break(False)
    assert "zoo.broken" not in view.import_errors and "zoo.broken" not in sys.modules
    assert view.module("zoo.animals") is not None


# -- packages: a commit or refresh must never leave a module in no package, or one
#    module in two files (found by test_image_transactions_properties.py) -------------

def test_a_module_added_to_a_package_removed_meanwhile_conflicts_naming_the_package(image, views):
    a = views(image, "a", install=False)
    b = views(image, "b", install=False)
    a.remove_module("zoo")
    b.add_module("zoo.birds", "class Bird:\n    pass\n")
    a.commit()
    with pytest.raises(CommitConflict) as raised:
        b.commit()     # written, zoo/birds.py would be in no package: in no view, b's own neither
    assert raised.value.files == ["zoo/__init__.py"]
    assert not (image / "zoo").exists()
    assert b.changed_modules() == ["zoo.birds"] and b.has_module("zoo")


def test_removing_a_package_a_module_was_added_to_meanwhile_conflicts_naming_that_module(image, views):
    a = views(image, "a", install=False)
    b = views(image, "b", install=False)
    a.remove_module("zoo")
    b.add_module("zoo.birds", "class Bird:\n    pass\n")
    b.commit()
    with pytest.raises(CommitConflict) as raised:
        a.commit()     # the package's other files gone, zoo/birds.py would be left in none
    assert raised.value.files == ["zoo/birds.py"]
    assert "zoo.birds" in views(image, "c", install=False).module_names()
    assert (image / "zoo/__init__.py").exists() and (image / "zoo/animals.py").exists()


@pytest.mark.parametrize("first", ["module", "package"])
def test_one_module_made_meanwhile_in_the_other_form_conflicts(image, views, first):
    as_module = views(image, "a", install=False)
    as_package = views(image, "b", install=False)
    as_module.add_module("birds", "KIND = 'module'\n")
    as_package.add_module("birds", "", package=True)
    as_package.add_module("birds.owl", "class Owl:\n    pass\n")
    winner, loser, theirs = ((as_module, as_package, "birds.py") if first == "module"
                             else (as_package, as_module, "birds/__init__.py"))
    winner.commit()
    with pytest.raises(CommitConflict) as raised:
        loser.commit()     # birds.py beside birds/__init__.py: one module, two files
    assert raised.value.files == [theirs]
    assert (image / "birds.py").exists() != (image / "birds" / "__init__.py").exists()


def test_a_package_whose_init_changed_meanwhile_still_takes_a_new_module(image, views):
    a = views(image, "a", install=False)
    b = views(image, "b", install=False)
    a.set_source("zoo", '"""The zoo."""\n', live=False)
    a.commit()
    b.add_module("zoo.birds", "class Bird:\n    pass\n")
    assert b.commit() == ["zoo.birds"]     # the package is there: no conflict
    assert "zoo.birds" in views(image, "c", install=False).module_names()


def test_refresh_keeps_ours_where_their_module_lies_in_a_package_ours_removed(image, views):
    a = views(image, "a", install=False)
    b = views(image, "b", install=False)
    a.remove_module("zoo")
    b.add_module("zoo.birds", "class Bird:\n    pass\n")
    b.commit()
    report = a.refresh()
    assert report.kept_ours == ["zoo.birds"] and not a.has_module("zoo.birds")
    with pytest.raises(CommitConflict) as raised:
        a.commit()
    assert raised.value.files == ["zoo/birds.py"] and (image / "zoo/__init__.py").exists()
    a.abort()
    assert a.has_module("zoo.birds") and not a.has_changes


def test_refresh_keeps_the_package_ours_write_into_where_they_removed_it(image, views):
    a = views(image, "a", install=False)
    b = views(image, "b", install=False)
    a.add_module("zoo.birds", "class Bird:\n    pass\n")
    b.remove_module("zoo")
    b.commit()
    report = a.refresh()
    assert report.kept_ours == ["zoo"]
    assert report.brought_in == ["zoo.animals", "zoo.keeper", "zoo.test_zoo"]
    assert a.has_module("zoo") and a.changed_modules() == ["zoo.birds"]
    with pytest.raises(CommitConflict) as raised:
        a.commit()
    assert raised.value.files == ["zoo/__init__.py"] and not (image / "zoo").exists()


@pytest.mark.parametrize("refreshed_first", [False, True])
def test_a_removal_left_in_no_package_by_an_editor_is_committed_refreshed_first_or_not(
        image, views, refreshed_first):
    # Refreshed first, the file the walk no longer saw was taken for removed by another
    # (alreadyCommitted), the commit wrote nothing, and restoring zoo/__init__.py brought
    # the removed module back; a commit straight away removed it.
    a = views(image, "a", install=False)
    a.remove_module("zoo.keeper")
    (image / "zoo/__init__.py").unlink()
    if refreshed_first:
        report = a.refresh()
        assert (report.already_committed, report.kept_ours) == ([], [])
        assert a.changed_modules() == ["zoo.keeper"]
    assert a.commit() == ["zoo.keeper"]
    assert not (image / "zoo/keeper.py").exists()


def test_a_removal_of_a_module_an_editor_changed_and_left_in_no_package_conflicts_refreshed_or_not(
        image, views):
    a = views(image, "a", install=False)
    a.remove_module("zoo.keeper")
    (image / "zoo/keeper.py").write_text("EDITED = True\n")
    (image / "zoo/__init__.py").unlink()
    report = a.refresh()
    assert (report.already_committed, report.kept_ours) == ([], ["zoo.keeper"])
    with pytest.raises(CommitConflict) as raised:
        a.commit()
    assert raised.value.files == ["zoo/keeper.py"]
    assert (image / "zoo/keeper.py").read_text() == "EDITED = True\n"


def test_refresh_keeps_ours_where_they_made_our_new_module_in_the_other_form(image, views):
    a = views(image, "a", install=False)
    b = views(image, "b", install=False)
    a.add_module("birds", "", package=True)
    a.add_module("birds.owl", "class Owl:\n    pass\n")
    b.add_module("birds", "KIND = 'module'\n")
    b.commit()
    report = a.refresh()
    assert report.kept_ours == ["birds"] and "birds.py" not in a.texts
    assert a.relpath("birds") == "birds/__init__.py"
    with pytest.raises(CommitConflict) as raised:
        a.commit()
    assert raised.value.files == ["birds.py"] and not (image / "birds").exists()


@pytest.mark.parametrize("text", [
    "x = " + "-" * 100000 + "1\n",           # the parser's stack overflows: a bare MemoryError
    # building the AST meets the recursion limit (Python 3.13 builds and compiles 5000 deep)
    "x = 1" + " + 1" * 20000 + "\n",
], ids=["unary", "chain"])
def test_a_module_nested_too_deeply_to_parse_is_one_that_does_not_compile(image, views, text):
    # What Python cannot compile either: it raised out of View.tree into every image-wide tool.
    (image / "zoo/deep.py").write_text(text)
    view = views(image)
    assert view.tree("zoo.deep") is None
    error = view.syntax_error("zoo.deep")
    assert error.msg.startswith("code is nested too deeply to compile (") and error.lineno is None
    assert error.msg.endswith("); split the deepest expression into named parts")
    assert ": )" not in error.msg    # a MemoryError that says nothing is named
    assert view.tree("zoo.animals") is not None


def test_the_same_change_committed_by_another_is_no_conflict_and_not_written_again(image, views):
    a = views(image, "a")
    b = views(image, "b", install=False)
    edited(a, "zoo.animals", 'return "woof"', 'return "WOOF"')
    edited(b, "zoo.animals", 'return "woof"', 'return "WOOF"')
    edited(b, "zoo.keeper", "self.dogs = [", "self.dogs = ['extra'] + [")
    a.commit()
    assert b.commit() == ["zoo.keeper"] and b.already_committed == ["zoo.animals"]
    assert [[f["file"] for f in r["files"]] for r in b.store.journal()] == [["zoo/animals.py"], ["zoo/keeper.py"]]
    assert not b.has_changes and b.commit_count == 1 and b.last_commit == ["zoo.keeper"]
    # Nothing but what is there already: no commit, none counted.
    a.refresh()
    edited(a, "zoo.keeper", "self.dogs = ['extra'] + [", "self.dogs = [")
    edited(b, "zoo.keeper", "self.dogs = ['extra'] + [", "self.dogs = [")
    a.commit()
    assert b.commit() == [] and b.already_committed == ["zoo.keeper"]
    assert not b.has_changes and b.commit_count == 1 and len(b.store.journal()) == 3


def test_refresh_takes_the_same_change_committed_by_another_as_committed(image, views):
    a = views(image, "a")
    b = views(image, "b", install=False)
    edited(a, "zoo.animals", 'return "woof"', 'return "WOOF"')
    edited(b, "zoo.animals", 'return "woof"', 'return "WOOF"')
    a.commit()
    report = b.refresh()
    assert (report.already_committed, report.kept_ours, report.brought_in) == (["zoo.animals"], [], [])
    assert not b.has_changes and 'return "WOOF"' in b.source("zoo.animals")
    assert b.commit() == [] and b.already_committed == [] and len(b.store.journal()) == 1


def _their_module_made_a_package_where_ours_removed_it(image, views):
    """b removed zoo.keeper; a, as b, removed zoo/keeper.py, but made zoo.keeper a package
    (zoo/keeper/__init__.py), and committed: the removal is alike, the package theirs."""
    a = views(image, "a", install=False)
    b = views(image, "b", install=False)
    a.remove_module("zoo.keeper")
    a.add_module("zoo.keeper", "PACKAGE = True\n", package=True)
    a.commit()
    b.remove_module("zoo.keeper")
    return b


def test_a_refresh_names_a_module_brought_in_once_though_a_file_of_it_was_changed_alike(image, views):
    # It was named under both: alreadyCommitted (its old file's removal, made alike) and
    # broughtIn (its new package): two meanings for one module, whose text is now theirs.
    b = _their_module_made_a_package_where_ours_removed_it(image, views)
    report = b.refresh()
    assert (report.brought_in, report.already_committed, report.kept_ours) == (["zoo.keeper"], [], [])
    assert b.source("zoo.keeper") == "PACKAGE = True\n" and not b.has_changes


def test_a_commit_names_a_module_brought_in_once_though_a_file_of_it_was_changed_alike(image, views):
    # It was named "already committed by another", and the package it brought in was not named.
    b = _their_module_made_a_package_where_ours_removed_it(image, views)
    assert b.commit() == []
    assert (b.brought_in, b.already_committed) == (["zoo.keeper"], [])
    assert b.source("zoo.keeper") == "PACKAGE = True\n" and not b.has_changes


def test_a_break_landing_as_has_commit_waits_for_the_lock_ends_the_call_with_the_commit_undecided(
        image, views, monkeypatch):
    # The break passed through the view's wait for the lock (has_commit), leaving the view
    # neither on the commit nor knowing it undecided: the worker's answer said nothing of
    # it, and the next commit took the session's own write for another's.
    import fcntl
    import signal
    from gsmcpd.image import store as store_module
    from gsmcpd.worker.toolset import HardBreak
    a = views(image, "a")
    edited(a, "zoo.animals", 'return "woof"', 'return "A"')
    a.store.lock_wait = 600.0   # only the break ends the wait
    has_commit, holder = a.store.has_commit, open(a.store.lock_file)

    def interrupted(self, *args):
        raise KeyboardInterrupt("soft break")

    def asked_while_another_holds_the_lock(commit_id):
        fcntl.flock(holder, fcntl.LOCK_EX)
        signal.setitimer(signal.ITIMER_REAL, 0.2)   # the router's hard break, as the worker gets it
        return has_commit(commit_id)

    def hard_break(signum, frame):
        raise HardBreak("hard break")

    previous = signal.signal(signal.SIGALRM, hard_break)
    try:
        with monkeypatch.context() as patched:
            patched.setattr(store_module.ImageStore, "_apply", interrupted)
            patched.setattr(a.store, "has_commit", asked_while_another_holds_the_lock)
            with pytest.raises(HardBreak):
                a.commit()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        holder.close()
    assert (a.undecided, a.commit_count) == (["zoo.animals"], 0)
    edited(a, "zoo.animals", 'return "A"', 'return "AA"')
    assert a.commit() == ["zoo.animals"] and a.settled == ["zoo.animals"]   # its own: no conflict


def test_a_packages_init_file_is_no_module_of_its_own(image, views):
    # Its file is the package's: served as zoo.__init__ too, it was a second live zoo.
    view = views(image)
    assert view.has_module("zoo") and view.relpath("zoo") == "zoo/__init__.py"
    assert not view.has_module("zoo.__init__") and "zoo.__init__" not in view.module_names()
    assert view.module("zoo.__init__") is None and "zoo.__init__" not in sys.modules


def test_the_kernel_guard_refuses_an_object_without_a_qualified_name(image, views):
    # View.writes read `__qualname__` of what defines() had turned down: AttributeError.
    from gsmcpd.worker.toolset import ToolError
    view = views(image)
    for obj in (os, 3):
        with pytest.raises(ToolError) as caught:
            view.assert_mutable(obj, "thing")
        assert caught.value.kind == "refused"


# certifi's way, which pip's requests runs as it is imported: a path to its data file.
WHERE_ITS_DATA_IS = ("from importlib.resources import as_file, files\n"
                     "PATH = str(as_file(files(__name__).joinpath('cacert.pem')).__enter__())\n")


def test_a_packages_data_files_are_read_through_the_view_as_from_the_disk(tmp_path, views):
    image = write_image(tmp_path / "image", {"kitdata/__init__.py": WHERE_ITS_DATA_IS,
                                             "kitdata/cacert.pem": "CERTS\n"})
    view = views(image)
    module = view.module("kitdata")
    assert module is not None, view.import_errors
    assert module.PATH == str(image / "kitdata" / "cacert.pem")
    assert importlib.resources.files("kitdata").joinpath("cacert.pem").read_text() == "CERTS\n"
    assert pkgutil.get_data("kitdata", "cacert.pem") == b"CERTS\n"
    # One that is not there is the disk's own error, naming the file.
    with pytest.raises(FileNotFoundError, match="missing.pem"):
        importlib.resources.files("kitdata").joinpath("missing.pem").read_bytes()
    with pytest.raises(FileNotFoundError, match="missing.pem"):
        pkgutil.get_data("kitdata", "missing.pem")


def test_an_object_in_sys_modules_whose_getattr_raises_fails_no_tool(image, views):
    # loaded_modules asks every sys.modules entry for __spec__: its KeyError failed abort,
    # refresh, commit and every tool listing the loaded modules, for the session's life.
    from test_tools_support import Client
    client = Client(views(image))
    client.ok("execute_code", code="import sys, zoo.animals\n\n\nclass Weird:\n    def __getattr__(self, name):\n"
                                   "        raise KeyError(name)\n\n\nsys.modules['weird_object'] = Weird()\n")
    try:
        assert "zoo.animals" in client.ok("abort")["structuredContent"]["reloaded"]
        assert client.ok("refresh")["structuredContent"]["importErrors"] == {}
    finally:
        sys.modules.pop("weird_object", None)


# A plugin package's way to find its plugins: what pkgutil lists under its own __path__.
FINDS_ITS_PLUGINS = ("import importlib, pkgutil\n"
                     "FOUND = sorted(info.name for info in pkgutil.iter_modules(__path__))\n"
                     "LOADED = {name: getattr(importlib.import_module(f'{__name__}.{name}'), 'KIND', None)\n"
                     "          for name in FOUND if name != 'sub'}\n")


def test_pkgutil_lists_a_packages_submodules_as_the_view_has_them(tmp_path, views):
    image = write_image(tmp_path / "image", {"plugins/__init__.py": FINDS_ITS_PLUGINS,
                                             "plugins/csv.py": "KIND = 'csv'\n",
                                             "plugins/json.py": "KIND = 'json'\n",
                                             "plugins/sub/__init__.py": "",
                                             "plugins/sub/deep.py": ""})
    view = views(image)
    view.remove_module("plugins.json")
    view.add_module("plugins.xml", "KIND = 'xml'\n")
    (image / "plugins/sneaky.py").write_text("KIND = 'disk'\n")   # on disk, not in the view
    module = view.module("plugins")
    assert module is not None, view.import_errors
    assert module.FOUND == ["csv", "sub", "xml"]
    assert module.LOADED == {"csv": "csv", "xml": "xml"}
    listed = {(info.name, info.ispkg) for info in pkgutil.walk_packages(module.__path__, "plugins.")}
    assert listed == {("plugins.csv", False), ("plugins.xml", False), ("plugins.sub", True),
                      ("plugins.sub.deep", False)}
    # Imports still come from the view alone: the disk's module is found by no finder.
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("plugins.sneaky")
    assert importlib.util.find_spec("plugins.sneaky") is None
    assert importlib.util.find_spec("plugins.csv").loader is view._loader


def test_close_takes_the_views_path_hook_and_its_entries(tmp_path, views):
    image = write_image(tmp_path / "image", {"plugins/__init__.py": FINDS_ITS_PLUGINS,
                                             "plugins/csv.py": "KIND = 'csv'\n"})
    view = views(image)
    entry = view.module("plugins").__path__[0]
    assert list(pkgutil.iter_modules([entry])) and entry in sys.path_importer_cache
    view.close()
    assert view._path_hook not in sys.path_hooks and entry not in sys.path_importer_cache
    assert list(pkgutil.iter_modules([entry])) == []


def test_abort_puts_the_views_path_hook_back_first(tmp_path, views):
    image = write_image(tmp_path / "image", {"plugins/__init__.py": "", "plugins/csv.py": ""})
    view = views(image)
    sys.path_hooks.remove(view._path_hook)   # as code run in the session may
    sys.path_importer_cache.clear()
    view.abort()
    assert sys.path_hooks[0] == view._path_hook
    assert [info.name for info in pkgutil.iter_modules(view.module("plugins").__path__)] == ["csv"]


def test_abort_forgets_what_the_import_system_cached_for_its_entries_with_the_hook_away(tmp_path, views):
    # With the hook out, an import under the package cached None for its entry (PathFinder
    # does), and another hook first cached its own finder: both outlived the hook's return.
    image = write_image(tmp_path / "image", {"plugins/__init__.py": "", "plugins/csv.py": ""})
    view = views(image)
    entry = view.module("plugins").__path__[0]
    sys.path_hooks.remove(view._path_hook)   # as code run in the session may
    assert importlib.util.find_spec("plugins.missing") is None
    assert sys.path_importer_cache[entry] is None
    view.abort()
    assert [info.name for info in pkgutil.iter_modules(view.module("plugins").__path__)] == ["csv"]

    class TakesAnything:
        def __init__(self, path):
            self.path = path

        def find_spec(self, fullname, target=None):
            return None

    sys.path_hooks.insert(0, TakesAnything)
    try:
        importlib.invalidate_caches()   # drops the entry (not an absolute path): asked anew
        assert importlib.util.find_spec("plugins.missing") is None
        assert isinstance(sys.path_importer_cache[entry], TakesAnything)
        view.abort()
        assert [info.name for info in pkgutil.iter_modules(view.module("plugins").__path__)] == ["csv"]
        assert isinstance(sys.path_importer_cache[entry], type(view._path_hook(entry)))
    finally:
        sys.path_hooks.remove(TakesAnything)


def test_set_source_of_a_module_the_image_lacks_is_refused_and_the_view_stays_usable(image, views):
    view = views(image)
    with pytest.raises(ValueError, match="zoo.nonexistent"):
        view.set_source("zoo.nonexistent", "X = 1\n")
    assert None not in view.texts
    assert not view.has_changes and view.changed_modules() == []
    edited(view, "zoo.animals", 'return "woof"', 'return "WOOF"')
    assert view.commit() == ["zoo.animals"]


def test_a_commit_with_nothing_to_write_finishes_one_left_pending_on_disk(image, views, monkeypatch):
    # The journal append failed past the commit point (ENOSPC): answered committed, left
    # pending. A commit with nothing to write left it so until the next real commit.
    from gsmcpd.image import store as store_module
    a = views(image, "a")
    edited(a, "zoo.animals", 'return "woof"', 'return "A"')
    real_append = store_module.ImageStore._append_journal

    def disk_full_once(self, *args):
        monkeypatch.setattr(store_module.ImageStore, "_append_journal", real_append)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(store_module.ImageStore, "_append_journal", disk_full_once)
    assert a.commit() == ["zoo.animals"]
    assert os.path.exists(a.store.intent_file)             # decided, not yet finished on disk
    assert a.commit() == []
    assert not os.path.exists(a.store.intent_file)
    assert [record["session"] for record in a.store.journal()] == ["a"]
