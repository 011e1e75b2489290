"""Classes written in a module-level `if`/`try`/`with` block, and classes made at run time:
what the listing, browsing, search and mutation tools make of them."""

import ast

import pytest

from gsmcpd.image import own, splice
from test_tools_support import Client, text, views, write_image  # noqa: F401  (fixtures)

SHAPES = '''\
import sys

try:
    from _no_such_speedups import Fast
except ImportError:
    class Fast:
        """Pure Python."""

        def run(self):
            return "slow"

if sys.version_info >= (3, 0):
    class Twice:
        def which(self):
            return "new"
else:
    class Twice:
        def which(self):
            return "old"


Made = type("Made", (), {})


def use():
    return Fast().run()
'''


TYPING = """\
TYPE_CHECKING = False

if TYPE_CHECKING:
    class Proto:
        def speak(self):
            ...
"""


REBOUND = """\
from collections import namedtuple

Point = None    # a placeholder, then the class the module binds

Point = namedtuple("Point", "x y")
"""

REMADE = """\
import functools


class Remade:
    def old(self):
        return 1


Remade = type("Remade", (), {})


class Ordered:
    def __eq__(self, other):
        return True

    def __lt__(self, other):
        return True


Ordered = functools.total_ordering(Ordered)
"""

# Rebound below their statements to the very class each made: by nested calls handing it
# back (attrs's `Attribute = _add_hash(_add_eq(...))`), only when run as a program (rich's demos),
# or to another statement's class, of another name (urllib3's `HTTPSConnection = DummyConnection`);
# or left the statement's, an accelerated one's import failing (its methods' code is the statement's).
KEPT = """\
def _add_repr(cls, attrs=None):
    return cls


class Attribute:
    def old(self):
        return 1


Attribute = _add_repr(_add_repr(Attribute), attrs=())


class Table:
    def old(self):
        return 1


if __name__ == "__main__":
    from guard.kept import Table

ssl = True


class Secure:
    def old(self):
        return 1


class Dummy:
    pass


if not ssl:
    Secure = Dummy


class Parser:
    def old(self):
        return 1


try:
    from _no_such_fast_parser import Parser
except ImportError:
    pass
"""


# `Plodding = Quick` binds the class named Quick, told apart by its name; a local variable of that
# name in a function is not a binding of the module's (it was taken for one).
LOCAL = """\
import os


def helper():
    Quick = 1
    return Quick


class Quick:
    pass


class Plodding:
    def old(self):
        return 1


if os.environ.get("GUARD_NO_SUCH_VARIABLE"):
    Plodding = Quick
"""


# distutils' msvccompiler: a class statement, then `if get_build_version() >= 8.0:` importing
# another module's class of the name, a branch that did not run (refused as made at run time);
# and a class remade by type() with a function of the module's, not of its class statement.
UNRUN = """\
def build_version():
    return 6


class Compiler:
    def old(self):
        return 1

    @staticmethod
    def kind():
        return "first"


if build_version() >= 8:
    from guard.newer import Compiler


class Remix:
    def old(self):
        return 1


Remix = type("Remix", (), {"old": lambda self: 2})
"""

NEWER = "class Compiler:\n    def old(self):\n        return 8\n"


# A class in two branches whose methods are abc's abstractclassmethod and
# abstractstaticmethod (subclasses of classmethod and staticmethod): which statement made
# the live class is told by their functions' code.
ABSTRACT = """\
import abc
import sys

if sys.version_info >= (3, 0):
    class Maker(abc.ABC):
        @abc.abstractclassmethod
        def make(cls):
            return "v3"

        @abc.abstractstaticmethod
        def kind():
            return "v3"
else:
    class Maker(abc.ABC):
        @abc.abstractclassmethod
        def make(cls):
            return "v2"
"""


# The accelerated-replacement pattern again, with methods whose function a decorator of
# another module made (contextlib's `helper`) or that alias a function of the module:
# their code tells nothing of which statement made the class.
WRAPPED = """\
import contextlib


def _size(self):
    return 3


class Reader:
    size = _size

    def old(self):
        return 1

    @contextlib.contextmanager
    def opened(self):
        yield self


try:
    from _no_such_fast_reader import Reader
except ImportError:
    pass
"""


# Remade below its statement, and imported again in a demo block an import does not run.
DEMO = """\
class Demo:
    def old(self):
        return 1


Demo = type("Demo", (), {})

if __name__ == "__main__":
    from guard.demo import Demo
"""


@pytest.fixture
def image(tmp_path):
    return write_image(tmp_path / "image", {"guard/__init__.py": "", "guard/shapes.py": SHAPES,
                                            "guard/typing_only.py": TYPING, "guard/rebound.py": REBOUND,
                                            "guard/remade.py": REMADE, "guard/kept.py": KEPT,
                                            "guard/local.py": LOCAL, "guard/demo.py": DEMO,
                                            "guard/unrun.py": UNRUN, "guard/newer.py": NEWER,
                                            "guard/wrapped.py": WRAPPED, "guard/abstract.py": ABSTRACT})


@pytest.fixture
def client(image, views):
    return Client(views(image))


def disk(image) -> str:
    return (image / "guard/shapes.py").read_text()


# -- splice ------------------------------------------------------------------------

def test_class_statement_is_the_one_binding_the_name_or_none_when_unsure():
    tree = ast.parse(SHAPES)
    assert splice.class_statement(tree, "Fast").lineno == 6
    assert splice.class_statement(tree, "Twice") is None
    assert [(block.lineno, node.lineno) for block, node in splice.class_statements(tree, "Twice")] == [
        (12, 13), (12, 17)]
    top = ast.parse("class A:\n    x = 1\n\n\nclass A:\n    x = 2\n")
    assert splice.class_statement(top, "A").lineno == 5     # the last top-level one, as before
    assert [node.name for node in splice.module_level_classes(tree)] == ["Fast", "Twice", "Twice"]


def test_a_class_in_a_block_is_replaced_and_removed_in_place():
    replaced = splice.put_class(SHAPES, "Fast", "class Fast:\n    kind = 1\n")
    assert "except ImportError:\n    class Fast:\n        kind = 1\n\nif sys" in replaced
    removed = splice.remove_class(SHAPES, "Fast")
    assert "except ImportError:\n    pass\n\nif sys" in removed
    ast.parse(removed)


def test_an_edit_of_a_class_written_in_two_branches_is_refused_naming_the_lines():
    for edit in (lambda: splice.put_class(SHAPES, "Twice", "class Twice:\n    pass\n"),
                 lambda: splice.remove_class(SHAPES, "Twice"),
                 lambda: splice.put_method(SHAPES, "Twice", "def f(self):\n    pass\n")):
        with pytest.raises(splice.SpliceError, match="written 2 times in its module .line 13, "
                           "in the if statement at line 12; line 17, in the if statement at line 12"):
            edit()


# -- listing, browsing, search --------------------------------------------------------

def test_classes_in_blocks_are_listed_once_each(client):
    assert client.ok("list_classes", dictionaryName="guard.shapes")["structuredContent"]["classes"] == [
        "Fast", "Twice"]
    assert "guard.shapes.Fast" in client.ok("list_all_classes")["structuredContent"]["classes"]


def test_defs_in_blocks_are_entries_of_a_module_listed_from_source(client):
    client.view.set_source("guard.shapes", SHAPES + "raise RuntimeError('no import')\n", live=False)
    entries = client.ok("list_dictionary_entries", dictionaryName="guard.shapes")["structuredContent"]
    assert {e["name"]: e["kind"] for e in entries["entries"]} == {
        "Fast": "class", "Made": "global", "Twice": "class", "sys": "module", "use": "function"}
    assert "RuntimeError: no import" in entries["note"]


def test_a_class_in_a_block_is_browsed_with_a_note_saying_where(client):
    where = ("written inside the module-level try statement at line 3: the module has it when "
             "that branch runs")
    described = client.ok("describe_class", className="Fast")["structuredContent"]
    assert (described["methods"], described["doc"], described["note"]) == (["run"], "Pure Python.", where)
    exported = client.ok("export_class_source", className="guard.shapes.Fast")
    assert exported["structuredContent"]["source"] == (
        'class Fast:\n    """Pure Python."""\n\n    def run(self):\n        return "slow"\n')
    assert text(exported).endswith(f"\n({where})")
    assert client.ok("get_method_source", className="Fast", selector="run")["structuredContent"][
        "source"] == 'def run(self):\n    return "slow"\n'
    assert [m["name"] for m in client.ok("list_methods", className="Fast")["structuredContent"][
        "methods"]["instance"]] == ["run"]


def test_a_class_written_in_two_branches_is_browsed_in_the_one_the_module_bound(client):
    definition = client.ok("get_class_definition", className="Twice")["structuredContent"]
    assert definition["note"] == (
        "Twice is written 2 times in guard.shapes (line 13, in the if statement at line 12; "
        "line 17, in the if statement at line 12); shown: line 13, the one its live class was "
        "made from")
    assert client.ok("get_method_source", className="Twice", selector="which")["structuredContent"][
        "source"] == 'def which(self):\n    return "new"\n'


def test_search_reads_the_methods_of_classes_in_blocks(client):
    def results(tool, **arguments):
        return client.ok(tool, **arguments)["structuredContent"]["results"]
    assert results("find_implementors", selector="which") == ["guard.shapes.Twice"]
    assert results("find_implementors", selector="run") == ["guard.shapes.Fast"]
    assert results("search_method_source", pattern='"old"') == ["guard.shapes.Twice.which"]
    assert results("find_senders", selector="run") == ["guard.shapes.use"]


def test_a_class_made_at_run_time_is_named_as_such_not_just_missing(client):
    message = client.error("describe_class", "notFound", className="Made")
    assert message.endswith("; guard.shapes.Made is a class made at run time (bound at line 22) by "
                            "no class statement, so its source cannot be browsed or edited")
    message = client.error("export_class_source", "notFound", className="guard.shapes.Made")
    assert message == ("guard.shapes defines no class Made; guard.shapes.Made is a class made at "
                       "run time (bound at line 22) by no class statement, so its source cannot "
                       "be browsed or edited")
    assert "made at run time" not in client.error("describe_class", "notFound", className="use")


def test_a_class_made_at_run_time_is_named_at_the_line_that_binds_it_last(client):
    # the module's name is bound by its last assignment, not by the placeholder above it
    assert client.error("describe_class", "notFound", className="guard.rebound.Point").endswith(
        "; guard.rebound.Point is a class made at run time (bound at line 5) by no class "
        "statement, so its source cannot be browsed or edited")


def test_a_class_its_module_remakes_at_run_time_below_its_statement_is_not_the_statement_s(client, image):
    # View.defines took the class `type(...)` made for the statement's (same module, same
    # name): compile_method added the method to that class live, which a new session lacks.
    remade, ordered = client.view.module("guard.remade").Remade, client.view.module("guard.remade").Ordered
    assert not client.view.defines(remade) and client.view.defines(ordered)   # total_ordering hands it back
    why = ("guard.remade.Remade is bound to a class made at run time (at line 9) once guard.remade "
           "is imported, not to the class its class statement makes")
    assert client.ok("describe_class", className="guard.remade.Remade")["structuredContent"]["fromSource"] == why
    said = client.error("compile_method", "refused", className="guard.remade.Remade",
                        source="def new(self):\n    return 2\n")
    assert said == why + "; edit the module's file in an editor, then refresh"
    assert not hasattr(remade, "new") and (image / "guard/remade.py").read_text() == REMADE
    client.ok("compile_method", className="guard.remade.Ordered", source="def new(self):\n    return 2\n")
    assert ordered().new() == 2


def test_a_class_rebound_below_to_no_other_class_of_its_name_is_the_statement_s(client, image):
    module = client.view.module("guard.kept")
    assert client.view.defines(module.Attribute) and client.view.defines(module.Table)
    assert client.view.defines(module.Secure) and client.view.defines(module.Parser)
    for name in ("guard.kept.Attribute", "guard.kept.Table", "guard.kept.Secure", "guard.kept.Parser"):
        assert client.ok("describe_class", className=name)["structuredContent"]["methods"] == ["old"]
        client.ok("compile_method", className=name, source="def new(self):\n    return 2\n")
    assert module.Attribute().new() == 2 and module.Table().new() == 2 and module.Secure().new() == 2
    assert module.Parser().new() == 2
    assert (image / "guard/kept.py").read_text().count("def new(self):") == 4


def test_a_class_whose_rebinding_below_did_not_run_is_told_the_statement_s_by_its_methods_code(client, image):
    # Refused as "made at run time (at line 15)": the `if` importing another Compiler did not
    # run. Its methods' code, compiled from the module's file within its class statement,
    # tell it apart from Remix, which type() made with a lambda of the module's.
    module = client.view.module("guard.unrun")
    assert client.view.defines(module.Compiler) and not client.view.defines(module.Remix)
    assert client.ok("describe_class", className="guard.unrun.Compiler")["structuredContent"]["methods"] == [
        "kind", "old"]
    client.ok("compile_method", className="guard.unrun.Compiler", source="def new(self):\n    return 2\n")
    assert module.Compiler().new() == 2 and "def new(self):" in (image / "guard/unrun.py").read_text()
    assert client.error("compile_method", "refused", className="guard.unrun.Remix",
                        source="def new(self):\n    return 2\n").startswith(
        "guard.unrun.Remix is bound to a class made at run time (at line 26) once guard.unrun is imported")


def test_a_class_whose_rebinding_below_did_not_run_is_the_statement_s_whatever_other_code_its_methods_hold(
        client, image):
    # Refused as "made at run time (at line 20)": contextlib's code (the wrapper its
    # decorator made) and _size's were not compiled within the class statement.
    module = client.view.module("guard.wrapped")
    assert client.view.defines(module.Reader)
    assert client.ok("describe_class", className="guard.wrapped.Reader")["structuredContent"]["methods"] == [
        "old", "opened", "size"]
    client.ok("compile_method", className="guard.wrapped.Reader", source="def new(self):\n    return 2\n")
    assert module.Reader().new() == 2 and "def new(self):" in (image / "guard/wrapped.py").read_text()


def test_which_statement_made_a_class_of_abstract_class_and_static_methods_is_told(client):
    # Said "shown: line 15, the last; which one the module binds depends on how it runs":
    # their functions were read only from a classmethod or staticmethod, not a subclass.
    assert sorted(code.co_name for code in own.function_codes(client.view.module("guard.abstract").Maker)) == [
        "kind", "make"]
    answer = client.ok("export_class_source", className="guard.abstract.Maker")["structuredContent"]
    assert "shown: line 5, the one its live class was made from" in answer["note"]
    assert 'return "v3"' in answer["source"] and 'return "v2"' not in answer["source"]


def test_a_class_rebound_below_to_a_class_named_otherwise_is_the_statement_s_whatever_functions_bind(client):
    plodding = client.view.module("guard.local").Plodding
    assert client.view.defines(plodding)
    client.ok("compile_method", className="guard.local.Plodding", source="def new(self):\n    return 2\n")
    assert plodding().new() == 2


def test_a_class_remade_at_run_time_is_named_at_the_line_an_import_runs_not_a_demo_block(client):
    # Said "(at line 8)", the `if __name__ == "__main__":` block.
    said = client.error("compile_method", "refused", className="guard.demo.Demo", source="def new(self):\n    pass\n")
    assert said.startswith("guard.demo.Demo is bound to a class made at run time (at line 6) once guard.demo")


# -- mutation ---------------------------------------------------------------------------

def test_a_class_in_a_block_is_edited_in_place_re_indented(client, image):
    client.ok("compile_method", className="Fast", source="def fast(self):\n    return False\n")
    client.ok("set_class_comment", className="Fast", comment="Slow path.")
    assert disk(image).startswith(
        'import sys\n\ntry:\n    from _no_such_speedups import Fast\nexcept ImportError:\n'
        '    class Fast:\n        """Slow path."""\n\n        def run(self):\n            return "slow"\n\n'
        '        def fast(self):\n            return False\n\nif sys')
    client.ok("compile_class_definition", source="class Fast:\n    kind = 'k'\n")
    client.ok("delete_method", className="Fast", selector="run")
    assert disk(image).startswith(
        "import sys\n\ntry:\n    from _no_such_speedups import Fast\nexcept ImportError:\n"
        "    class Fast:\n        kind = 'k'\n\n        def fast(self):\n            return False\n\nif sys")
    live = client.view.module("guard.shapes").Fast
    assert (live.kind, live().fast(), hasattr(live, "run")) == ("k", False, False)
    client.ok("delete_class", className="Fast")
    assert "except ImportError:\n    pass\n\nif sys" in disk(image)


@pytest.mark.parametrize("tool, arguments", [
    ("compile_method", {"source": "def f(self):\n    pass\n"}),
    ("set_class_comment", {"comment": "x"}),
    ("delete_method", {"selector": "which"}),
    ("delete_class", {}),
])
def test_an_edit_of_a_class_written_in_two_branches_is_refused_naming_the_lines(
        client, image, tool, arguments):
    message = client.error(tool, "refused", className="Twice", **arguments)
    assert message.startswith(
        "guard.shapes.Twice: class Twice is written 2 times in its module (line 13, in the if "
        "statement at line 12; line 17, in the if statement at line 12): which one binds the name "
        "depends on how the module runs, so no tool can tell which to change; leave one class")
    message = client.error("compile_class_definition", "refused", source="class Twice:\n    pass\n")
    assert "written 2 times" in message
    assert disk(image) == SHAPES


def test_a_class_whose_block_did_not_run_is_browsed_and_edited_in_source_only(client, image):
    described = client.ok("describe_class", className="Proto")
    assert described["structuredContent"]["methods"] == ["speak"]
    assert text(described).endswith(
        "(from source: guard.typing_only.Proto is not bound once guard.typing_only is imported: "
        "its class statement is in a block that did not run)\n(written inside the module-level "
        "if statement at line 3: the module has it when that branch runs)")
    client.ok("compile_method", className="Proto", source="def name(self):\n    ...\n")
    answer = client.ok("compile_class_definition", source="class Proto:\n    kind: str\n")
    assert text(answer).startswith(
        "changed guard.typing_only.Proto in source only (guard.typing_only ran no class statement "
        "of it as it was imported: it is in a block that did not run); carried over speak, name")
    assert (image / "guard/typing_only.py").read_text() == (
        "TYPE_CHECKING = False\n\nif TYPE_CHECKING:\n    class Proto:\n        kind: str\n\n"
        "        def speak(self):\n            ...\n\n        def name(self):\n            ...\n")
    assert "Proto" not in vars(client.view.module("guard.typing_only"))
