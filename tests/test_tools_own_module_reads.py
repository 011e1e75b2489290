"""Deleting what the class's own module reads as it runs below its statement: refused
before anything changes, as the module would import in no new session (NameError)."""

import pytest

from test_tools_support import client, image, text, views  # noqa: F401  (fixtures)

HOOK = "class Hook:\n    pass\n\n\n"


def late(image, below: str, init: str = "from ._core import Hook\n"):
    (image / "late").mkdir()
    (image / "late" / "__init__.py").write_text(init)
    (image / "late" / "_core.py").write_text(HOOK + below)


def refused_failing(client, path, tool, name: str, **arguments):
    """The deletion refused, nothing changed: tried apart, the module's import failed (NameError)."""
    before = path.read_text()
    said = client.error(tool, "refused", **arguments)
    assert "would no longer import in a new session" in said
    assert f"it failed with NameError: name '{name}' is not defined" in said
    assert path.read_text() == before and not client.view.has_changes


@pytest.mark.parametrize("below, quoted, line", [
    ('Hook.__module__ = "late"\n', 'Hook.__module__ = "late"', 5),
    ("Hook.x = 1\n", "Hook.x = 1", 5),
    ("def register(cls):\n    return cls\n\n\nregister(Hook)\n", "register(Hook)", 9),
    ("ALIAS = Hook\n", "ALIAS = Hook", 5),
    ("class Other:\n    kind = Hook\n", "kind = Hook", 6),
    ("def deco(arg):\n    return lambda f: f\n\n\n@deco(Hook)\ndef f():\n    pass\n", "@deco(Hook)", 9),
], ids=["__module__", "attribute", "call", "alias", "class-level-value", "decorator-call"])
def test_delete_class_refuses_a_class_its_own_module_uses_below_it(client, image, below, quoted, line):
    # Deleted, `late._core` and `late` failed to import here and in every new session,
    # committed all the same (NameError), the answer only naming them.
    late(image, below)
    client.ok("refresh")
    before = (image / "late" / "_core.py").read_text()
    said = client.error("delete_class", "refused", className="late._core.Hook")
    assert said.startswith(f"late._core.Hook is used by late._core's own top-level code as it "
                           f"runs (line {line}: {quoted!r})")
    assert (image / "late" / "_core.py").read_text() == before
    assert client.view.module("late._core").Hook is client.view.module("late").Hook
    assert not client.view.import_errors and not client.view.has_changes


def test_delete_class_refusal_names_every_statement_using_it(client, image):
    late(image, "ALIAS = Hook\nHook.x = 1\n")
    client.ok("refresh")
    said = client.error("delete_class", "refused", className="late._core.Hook")
    assert "(line 5: 'ALIAS = Hook'; line 6: 'Hook.x = 1')" in said


@pytest.mark.parametrize("below, fails", [
    ("if len('x') > 1:\n    ALIAS = Hook\n", False),
    ("if len('x') == 1:\n    ALIAS = Hook\n", True),
    ("try:\n    Hook.x = 1\nexcept NameError:\n    pass\n", False),
])
def test_delete_class_deletes_a_class_its_module_may_not_read_and_refuses_it_where_it_does(
        client, image, below, fails):
    # A read that may not run, or whose NameError is caught, is not refused by the static
    # rules: the module is tried apart, as a new session imports it, and refused if it fails.
    late(image, below, init="")
    client.ok("refresh")
    client.view.load_all()
    if fails:
        refused_failing(client, image / "late" / "_core.py", "delete_class", "Hook", className="late._core.Hook")
        return
    result = client.ok("delete_class", className="late._core.Hook")["structuredContent"]
    assert result["reimported"] == ["late._core"]
    assert result.get("importErrors", {}) == {}


SHADOW = ("class property(property):\n    pass\n\n\n"
          "class Uses:\n    @property\n    def size(self):\n        return 1\n")


def test_delete_class_deletes_a_class_shadowing_a_builtin_its_module_reads(client, image):
    # enum.py's own `class property(DynamicClassAttribute)` read by `@property` below it:
    # refused, though once deleted `@property` reads the builtin and the module imports.
    (image / "late").mkdir()
    (image / "late" / "__init__.py").write_text("")
    (image / "late" / "_core.py").write_text(SHADOW)
    client.ok("refresh")
    client.view.load_all()
    result = client.ok("delete_class", className="late._core.property")["structuredContent"]
    assert result.get("importErrors", {}) == {}
    assert client.view.module("late._core").Uses.size.__get__(client.view.module("late._core").Uses()) == 1


def test_delete_class_refuses_failing_its_module_on_a_read_a_star_import_may_serve(client, image):
    # As dis.py's `from opcode import *` above `UNKNOWN = _Unknown()`: deleted silently,
    # the module not re-imported, as the `*` import might bind the name; it binds no
    # `Hook`, so no new session could import it.
    late(image, "X = Hook()\n", init="")
    core = image / "late" / "_core.py"
    core.write_text("from os.path import *\n\n\n" + core.read_text())
    client.ok("refresh")
    client.view.load_all()
    refused_failing(client, image / "late" / "_core.py", "delete_class", "Hook", className="late._core.Hook")


def test_delete_class_refuses_failing_its_module_on_a_read_above_what_binds_the_name_again(client, image):
    # `DEFAULT = Parser()` above `Parser = functools.total_ordering(Parser)`: the name bound
    # surely, if below the read, the module was neither refused nor re-imported, and was
    # committed importing in no new session (NameError) without a word.
    (image / "zoo" / "readfirst.py").write_text(
        "import functools\n\n\nclass Parser:\n    def __lt__(self, other):\n        return False\n\n\n"
        "DEFAULT = Parser()\nParser = functools.total_ordering(Parser)\n")
    client.ok("refresh")
    client.view.load_all()
    refused_failing(client, image / "zoo" / "readfirst.py", "delete_class", "Parser", className="zoo.readfirst.Parser")


def test_delete_class_refuses_failing_its_module_on_a_read_an_import_that_may_fail_would_serve(client, image):
    # `from _no_such_fast import Parser` in a try whose handler held the class: the import
    # was taken to bind the name, so the module was not re-imported, and it was committed
    # importing in no new session (NameError) without a word.
    (image / "zoo" / "parser.py").write_text(
        "try:\n    from _no_such_fast import Parser\nexcept ImportError:\n    class Parser:\n        pass\n\n\n"
        "DEFAULT = Parser()\n")
    client.ok("refresh")
    client.view.load_all()
    refused_failing(client, image / "zoo" / "parser.py", "delete_class", "Parser", className="zoo.parser.Parser")


def test_delete_function_refuses_failing_its_module_on_a_read_a_star_import_may_serve(client, image):
    # As delete_class: the function deleted and committed without a word, the module not
    # re-imported, as the `*` import might bind the name; it binds no `helper`, so no new
    # session could import it.
    (image / "zoo" / "helpers.py").write_text("from os.path import *\n\n\ndef helper():\n    return 1\n\n\n"
                                              "X = helper()\n")
    client.ok("refresh")
    client.view.load_all()
    refused_failing(client, image / "zoo" / "helpers.py", "delete_method", "helper",
                    className="zoo.helpers", selector="helper")


def test_delete_class_refuses_failing_its_module_in_a_function_it_calls_as_it_runs(client, image):
    # `X = make()` with `def make(): return Hook()`: committed with no word, the module not
    # re-imported, importing in no new session (NameError).
    late(image, "def make():\n    return Hook()\n\n\nX = make()\n", init="")
    client.ok("refresh")
    client.view.load_all()
    refused_failing(client, image / "late" / "_core.py", "delete_class", "Hook", className="late._core.Hook")


def test_delete_class_refuses_failing_its_module_in_the_init_of_a_class_it_makes_as_it_runs(client, image):
    # _strptime's `_TimeRE_cache = TimeRE()`, whose __init__ makes a LocaleTime: deleting
    # LocaleTime was committed with no word, the module importing in no new session.
    late(image, "class Cache:\n    def __init__(self):\n        self.hook = Hook()\n\n\nCACHE = Cache()\n",
         init="")
    client.ok("refresh")
    client.view.load_all()
    refused_failing(client, image / "late" / "_core.py", "delete_class", "Hook", className="late._core.Hook")


def test_delete_class_refuses_failing_its_module_in_the_post_init_of_a_dataclass_it_makes(client, image):
    # A dataclass's generated __init__ calls its __post_init__, which makes a Hook: deleting
    # Hook was committed with no word, the module importing in no new session.
    late(image, "from dataclasses import dataclass\n\n\n@dataclass\nclass Cache:\n    size: int = 0\n\n"
         "    def __post_init__(self):\n        self.hook = Hook()\n\n\nCACHE = Cache()\n", init="")
    client.ok("refresh")
    client.view.load_all()
    refused_failing(client, image / "late" / "_core.py", "delete_class", "Hook", className="late._core.Hook")


def test_delete_class_refuses_failing_its_module_in_the_inherited_init_of_a_class_it_makes(client, image):
    # `CACHE = Cache()`, Cache having its __init__ (which makes a Hook) from a base of the
    # module: deleting Hook was committed with no word, the module importing in no new session.
    late(image, "class Base:\n    def __init__(self):\n        self.hook = Hook()\n\n\nclass Cache(Base):\n"
         "    pass\n\n\nCACHE = Cache()\n", init="")
    client.ok("refresh")
    client.view.load_all()
    refused_failing(client, image / "late" / "_core.py", "delete_class", "Hook", className="late._core.Hook")


def test_delete_class_refuses_by_source_a_class_whose_module_does_not_import(client, image):
    late(image, "Hook.x = 1\nraise RuntimeError('broken')\n")
    client.ok("refresh")
    client.view.load_all()
    assert "late._core" in client.view.import_errors
    client.error("delete_class", "refused", className="late._core.Hook")


def test_delete_class_deletes_a_class_its_module_uses_only_in_function_bodies(client, image):
    late(image, "def make():\n    return Hook()\n", init="")
    client.ok("refresh")
    client.ok("delete_class", className="late._core.Hook")
    assert "Hook" not in (image / "late" / "_core.py").read_text().split("def make")[0]
    assert not client.view.import_errors


def test_delete_class_deletes_a_class_whose_name_only_a_comprehension_binds_again(client, image):
    # `[Hook for Hook in ...]` reads the comprehension's own Hook, not the module's.
    late(image, "xs = [Hook for Hook in range(3)]\n", init="")
    client.ok("refresh")
    client.ok("delete_class", className="late._core.Hook")
    assert client.view.module("late._core").xs == [0, 1, 2]
    assert not client.view.import_errors
