"""Classes written in a module-level `if`/`try` block, a class made at run time, and a class
writing members in class-level blocks, end to end through the real daemon: browsed,
searched and edited as a client sees it.

One daemon per module on a throwaway image.
"""

import pytest

from helpers import open_session
from test_e2e_image_tools import daemon  # noqa: F401  (the daemon fixture: on this module's image)
from test_e2e_tools import error, ok, run_code, structured
from test_tools_guarded_classes import DEMO, KEPT, LOCAL, NEWER, REBOUND, REMADE, SHAPES, UNRUN, WRAPPED, ABSTRACT
from test_tools_support import write_image


LEVELS = """\
import sys


class Levels:
    if True:
        x = 1

        def m(self):
            return 1
    if sys.version_info >= (3, 0):
        kept = 2
"""

RUNS = """\
class Runs:
    if True:
        run = 5

    def run(self):
        return 1
"""

AGAIN = """\
class Again:
    def run(self):
        return 1

    if True:
        def run(self):
            return 2
"""

# The names the class binds itself (but for those every class statement binds), as one list.
OWN_NAMES = ("from guard.levels import Levels\n"
             "sorted(n for n in vars(Levels) if not (n.startswith('__') and n.endswith('__')))")


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    return write_image(tmp_path_factory.mktemp("guarded") / "image",
                       {"guard/__init__.py": "", "guard/shapes.py": SHAPES, "guard/rebound.py": REBOUND,
                        "guard/remade.py": REMADE, "guard/kept.py": KEPT, "guard/local.py": LOCAL, "guard/demo.py": DEMO, "guard/levels.py": LEVELS, "guard/runs.py": RUNS, "guard/again.py": AGAIN,
                        "guard/unrun.py": UNRUN, "guard/newer.py": NEWER, "guard/wrapped.py": WRAPPED,
                        "guard/abstract.py": ABSTRACT,
                        "guard/toml/__init__.py": ("from ._parser import DecodeError\n\n"
                                                   "DecodeError.__module__ = __name__\n"),
                        "guard/toml/_parser.py": "class DecodeError(ValueError):\n    pass\n",
                        "guard/broken.py": "try:\n    import _no_such\nexcept ImportError:\n"
                                           "    class Fallback:\n        pass\n\nraise RuntimeError\n"})


def test_classes_in_blocks_are_listed_browsed_and_searched(c):
    assert structured(c, "list_classes", dictionaryName="guard.shapes")["classes"] == ["Fast", "Twice"]
    described = structured(c, "describe_class", className="Fast")
    assert described["methods"] == ["run"] and "module-level try statement at line 3" in described["note"]
    assert "shown: line 13, the one its live class was made from" in structured(
        c, "export_class_source", className="Twice")["note"]
    assert structured(c, "find_implementors", selector="which")["results"] == ["guard.shapes.Twice"]
    assert structured(c, "search_method_source", pattern='"old"')["results"] == ["guard.shapes.Twice.which"]


def test_which_statement_made_a_class_of_abstract_class_methods_is_told(c):
    # Said the last statement was shown, not the one its live class was made from.
    answer = structured(c, "export_class_source", className="guard.abstract.Maker")
    assert "shown: line 5, the one its live class was made from" in answer["note"]
    assert 'return "v3"' in answer["source"] and 'return "v2"' not in answer["source"]


def test_a_class_made_at_run_time_is_named_as_such(c):
    assert "guard.shapes.Made is a class made at run time (bound at line 22)" in error(
        c, "describe_class", "notFound", className="Made")
    # named at the assignment that binds it last, not a placeholder above it
    assert "guard.rebound.Point is a class made at run time (bound at line 5)" in error(
        c, "describe_class", "notFound", className="Point")


def test_a_class_its_package_imports_and_renames_is_pointed_at_not_called_made_at_run_time(c):
    # tomllib's `TOMLDecodeError.__module__ = __name__`: was "a class made at run time".
    assert error(c, "describe_class", "notFound", className="guard.toml.DecodeError") == (
        "guard.toml defines no class DecodeError (did you mean guard.toml._parser.DecodeError?)")


def test_a_class_its_module_remakes_at_run_time_below_its_statement_is_refused_as_such(c, image):
    # Changed live (the class type() made) and on disk, which a new session's import remakes.
    said = error(c, "compile_method", "refused", className="guard.remade.Remade",
                 source="def new(self):\n    return 2\n")
    assert said.startswith("guard.remade.Remade is bound to a class made at run time (at line 9) once "
                           "guard.remade is imported, not to the class its class statement makes")
    assert (image / "guard/remade.py").read_text() == REMADE
    assert structured(c, "execute_code", code="from guard.remade import Remade\nhasattr(Remade, 'new')")[
        "result"] == "False"


def test_a_class_rebound_below_to_no_other_class_of_its_name_is_browsed_and_edited(c, image):
    # `Attribute = _add_repr(_add_repr(Attribute))`; `if __name__ == "__main__": from guard.kept import Table`;
    # `if not ssl: Secure = Dummy`; `try: from _no_such_fast_parser import Parser` / `except ImportError:`
    for name in ("Attribute", "Table", "Secure", "Parser"):
        assert structured(c, "describe_class", className=f"guard.kept.{name}")["methods"] == ["old"]
        ok(c, "compile_method", className=f"guard.kept.{name}", source="def new(self):\n    return 2\n")
        assert run_code(c, f"from guard.kept import {name}\n{name}().new()") == "2"
    assert (image / "guard/kept.py").read_text().count("def new(self):") == 4


def test_a_class_rebound_below_to_a_class_named_otherwise_is_edited_whatever_functions_bind(c):
    # `if ...: Plodding = Quick`, while a function has a local `Quick`: refused as made at run time
    ok(c, "compile_method", className="guard.local.Plodding", source="def new(self):\n    return 2\n")
    assert run_code(c, "from guard.local import Plodding\nPlodding().new()") == "2"


def test_a_class_whose_rebinding_below_did_not_run_is_browsed_and_edited(c, image):
    # distutils' MSVCCompiler: refused as made at run time, the `if` rebinding it not run.
    assert structured(c, "describe_class", className="guard.unrun.Compiler")["methods"] == ["kind", "old"]
    ok(c, "compile_method", className="guard.unrun.Compiler", source="def new(self):\n    return 2\n")
    assert run_code(c, "from guard.unrun import Compiler\nCompiler().new()") == "2"
    assert "def new(self):" in (image / "guard/unrun.py").read_text()
    assert error(c, "compile_method", "refused", className="guard.unrun.Remix",
                 source="def new(self):\n    return 2\n").startswith("guard.unrun.Remix is bound to a class made at run time")


def test_a_class_whose_rebinding_below_did_not_run_is_edited_whatever_other_code_its_methods_hold(c, image):
    # A @contextlib.contextmanager method and an alias of a module function: refused as made
    # at run time, their code not compiled within the class statement.
    ok(c, "compile_method", className="guard.wrapped.Reader", source="def new(self):\n    return 2\n")
    assert run_code(c, "from guard.wrapped import Reader\nwith Reader().opened() as r:\n    x = r.new()\nx") == "2"
    assert "def new(self):" in (image / "guard/wrapped.py").read_text()


def test_a_class_remade_at_run_time_is_named_at_the_line_an_import_runs_not_a_demo_block(c):
    said = error(c, "compile_method", "refused", className="guard.demo.Demo", source="def new(self):\n    pass\n")
    assert said.startswith("guard.demo.Demo is bound to a class made at run time (at line 6) once guard.demo")


def test_a_class_in_one_block_is_edited_in_place_and_one_in_two_branches_refused(c, image):
    ok(c, "compile_method", className="Fast", source="def fast(self):\n    return False\n")
    assert "\n        def fast(self):\n            return False\n\nif sys" in (
        image / "guard/shapes.py").read_text()
    assert structured(c, "execute_code", code="from guard.shapes import Fast\nFast().fast()")[
        "result"] == "False"
    message = error(c, "compile_method", "refused", className="Twice", source="def f(self):\n    pass\n")
    assert "class Twice is written 2 times in its module (line 16" in message   # 3 lines added above


def test_a_module_that_does_not_import_lists_the_classes_in_its_blocks(c):
    entries = structured(c, "list_dictionary_entries", dictionaryName="guard.broken")["entries"]
    assert {e["name"]: e["kind"] for e in entries} == {"Fallback": "class"}


def test_members_dropped_from_class_level_blocks_leave_the_live_class(daemon, c):
    # `x` and `m` stayed on this session's live class, while a new session's import of the
    # committed source made it without them.
    assert run_code(c, OWN_NAMES) == repr(["kept", "m", "x"])
    assert structured(c, "compile_class_definition", recompileMethods=False,
                      source="class Levels:\n    if sys.version_info >= (3, 0):\n        kept = 2\n"
                             "    if sys.version_info < (3, 0):\n        x = 1\n")["outcome"] == "updated"
    assert run_code(c, OWN_NAMES) == repr(["kept"])
    fresh = open_session(daemon)
    try:
        assert run_code(fresh, OWN_NAMES) == repr(["kept"])
    finally:
        fresh.close()


def test_delete_method_leaves_what_a_class_level_block_binds_on_the_live_class(daemon, c):
    # The live class lost `run`, which a new session's import has from the block above the def.
    ok(c, "delete_method", className="Runs", selector="run")
    reading = "from guard.runs import Runs\nvars(Runs).get('run')"
    assert run_code(c, reading) == "5"
    fresh = open_session(daemon)
    try:
        assert run_code(fresh, reading) == "5"
    finally:
        fresh.close()


def test_compile_method_refuses_a_def_a_class_level_block_writes_again_below(c):
    # The def compiled was set on the live class, while a new session's has the block's.
    message = error(c, "compile_method", "refused", className="Again", source="def run(self):\n    return 3\n")
    assert "is written again inside the class-level if statement at guard.again line 5, below its def" in message
    assert run_code(c, "from guard.again import Again\nAgain().run()") == "2"
