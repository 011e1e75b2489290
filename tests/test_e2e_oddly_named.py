"""End to end: classes whose metaclass gives a `__name__` that raises, in every tool that
names a class of the code's. Each such tool failed with the metaclass's error
(`RuntimeError: no name`), or, in a deletion's trial import, gave no answer at all, so the
deletion was made though the module no longer imports. They are named as Python made them
(gsmcpd.image.own.NAME), as raised() names an exception.

So too classes whose metaclass gives a `__module__` and `__qualname__` that raise
(oddly.placed: every browse, test, mutation tool and execute_code's traceback failed with
`RuntimeError: no module`), named by own.module_of and own.QUALNAME; and one whose body
binds `__module__ = 42`, named by its qualified name alone, as Python's repr names it; a
setUpClass or tearDownClass of such a TestCase failing is reported naming the class so.

A class whose `__qualname__` holds a lone surrogate, and one holding a method of such a
name, are named with its escape: each browse answered 'the result cannot be sent'.

One daemon for the module, on a throwaway image.
"""

import pytest

from test_e2e_image_tools import daemon  # noqa: F401  (the daemon fixture: on this module's image)
from test_e2e_tools import call_tool, error, structured
from test_e2e_tools import run_code as run
from test_tools_support import write_image

NAMED = """class NamedOddly(type):
    @property
    def __name__(cls):
        raise RuntimeError("no name")


class Token(metaclass=NamedOddly):
    pass


class Oops(Exception, metaclass=NamedOddly):
    pass


class Holder:
    token = Token()

    def run(self):
        return 1


class MetaOddly(type, metaclass=NamedOddly):   # a metaclass named so itself
    def made(cls):
        return 1


class Widget(metaclass=MetaOddly):
    pass


class Gone:
    pass


Gone = Token()
"""
TESTS = """import unittest

from oddly.named import NamedOddly, Oops


class TestOdd(unittest.TestCase):
    def test_raises(self):
        raise Oops("odd")

    def test_passes(self):
        pass


class TestPlain(metaclass=NamedOddly):
    def test_plain(self):
        pass
"""
DRAWN = """from oddly.named import Oops


class Random:
    def randint(self, a, b):
        return a

    def choice(self, seq):
        return seq[0]


if not hasattr(Random, "choice"):
    raise Oops("gone")
"""
PLACED = """class Placeless(type):
    @property
    def __module__(cls):
        raise RuntimeError("no module")

    def __getattribute__(cls, name):
        if name == "__qualname__":
            raise RuntimeError("no qualname")
        return super().__getattribute__(name)


class Spot(metaclass=Placeless):
    def where(self):
        return 1


class Nook(Spot):
    label: str = "nook"

    def corner(self):
        return 2


class Odd(Exception, metaclass=Placeless):
    pass


class Numbered:
    __module__ = 42

    def count(self):
        return 3
"""
PLACED_TESTS = """import unittest

from oddly.placed import Odd, Placeless


class TestCased(unittest.TestCase, metaclass=Placeless):
    def test_sub(self):
        with self.subTest(i=1):
            raise Odd("sub")

    def test_passes(self):
        pass


class TestSetUpFails(unittest.TestCase, metaclass=Placeless):
    @classmethod
    def setUpClass(cls):
        raise ValueError("no setup")

    def test_passes(self):
        pass


class TestTearDownFails(unittest.TestCase, metaclass=Placeless):
    @classmethod
    def tearDownClass(cls):
        raise ValueError("no teardown")

    def test_passes(self):
        pass


class TestPlaced(metaclass=Placeless):
    def test_raises(self):
        raise Odd("odd")

    def test_passes(self):
        pass
"""
SURROGATE = """class Sur:
    __qualname__ = "Sur\\udc80"   # a lone surrogate: a str Python allows, UTF-8 cannot carry

    def where(self):
        return 1


class Named:
    locals()["meth\\udc82"] = lambda self: 1   # a name no def can write
"""
FILES = {"oddly/__init__.py": "", "oddly/named.py": NAMED, "oddly/test_named.py": TESTS, "oddly/drawn.py": DRAWN,
         "oddly/placed.py": PLACED, "oddly/test_placed.py": PLACED_TESTS,
         "oddly/surrogate.py": SURROGATE}


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    return write_image(tmp_path_factory.mktemp("oddly") / "image", FILES)


def test_such_a_class_and_one_holding_an_instance_of_it_are_described_and_listed(c):
    assert structured(c, "describe_class", className="oddly.named.Token")["methods"] == []
    assert structured(c, "describe_class", className="oddly.named.Holder")["methods"] == ["run"]
    methods = structured(c, "list_methods", className="oddly.named.Holder")["methods"]
    assert [m["name"] for m in methods["instance"]] == ["run"]
    assert error(c, "get_method_source", "notFound", className="oddly.named.Token", selector="missing") == (
        "oddly.named.Token defines no method missing; list_methods shows its methods")
    assert structured(c, "get_method_source", className="oddly.named.Widget", selector="made",
                      meta=True)["kind"] == "class"


def test_a_class_name_rebound_to_an_instance_of_it_is_browsed_from_source_saying_what_it_found(c):
    text = call_tool(c, "describe_class", {"className": "oddly.named.Gone"})["content"][0]["text"]
    assert "oddly.named.Gone is not bound to a class once oddly.named is imported (found Token)" in text, text


def test_a_test_raising_such_an_exception_is_reported_naming_it(c):
    ran = structured(c, "run_test_class", className="oddly.test_named.TestOdd")
    assert (ran["run"], ran["passed"], ran["errors"]) == (2, 1, 1), ran
    assert [(f["test"], f["exception"], f["message"]) for f in ran["failed"]] == [
        ("oddly.test_named.TestOdd.test_raises", "Oops", "odd")]
    plain = structured(c, "run_test_class", className="oddly.test_named.TestPlain")   # pytest's style
    assert (plain["run"], plain["passed"]) == (1, 1), plain


def test_progress_of_such_a_value_is_refused_naming_its_class(c):
    result = call_tool(c, "execute_code", {"code": "from oddly.named import Token\nprogress(Token())"})
    assert result["isError"], result
    assert result["content"][0]["text"].endswith("TypeError: progress values must be numbers, not Token")


def test_a_builtins_name_bound_to_such_a_value_is_told_what_it_is(c):
    run(c, "import builtins\nfrom oddly.named import Token\nbuiltins.oddity = Token()")
    assert error(c, "get_method_source", "notFound", className="builtins", selector="oddity") == (
        "builtins.oddity is no function (Token): no source to show")


def test_a_class_holding_such_a_value_is_redefined_in_place(c):
    assert run(c, "from oddly.named import Holder\nkept = Holder\nHolder().run()") == "1"
    source = "class Holder:\n    token = Token()\n\n    def run(self):\n        return 2\n"
    assert structured(c, "compile_class_definition", dictionaryName="oddly.named", source=source)
    assert run(c, "from oddly.named import Holder\n(Holder is kept, Holder().run())") == "(True, 2)"


def test_a_deletion_whose_trial_import_raises_such_an_exception_is_refused_naming_it(c):
    refused = call_tool(c, "delete_method", {"className": "oddly.drawn.Random", "selector": "choice"})
    failure = refused["structuredContent"]["error"]
    assert (failure["kind"], failure["importFailure"]["error"]) == ("refused", "Oops"), refused
    assert "it failed with Oops: gone, on line 13" in refused["content"][0]["text"]


def test_a_class_whose_metaclass_module_and_qualname_raise_is_browsed(c):
    described = call_tool(c, "describe_class", {"className": "oddly.placed.Nook"})["content"][0]["text"]
    assert "mro: oddly.placed.Nook -> oddly.placed.Spot -> object" in described, described
    assert "metaclass: Placeless" in described   # its own __module__ is the property: no str
    assert "instance variables: label" in described
    methods = structured(c, "list_methods", className="oddly.placed.Nook")["methods"]["instance"]
    assert [(m["name"], m["definedIn"]) for m in methods] == [("corner", "oddly.placed.Nook"),
                                                               ("where", "oddly.placed.Spot")]
    hierarchy = call_tool(c, "get_class_hierarchy", {"className": "oddly.placed.Spot"})["content"][0]["text"]
    assert "subclasses: oddly.placed.Nook" in hierarchy, hierarchy
    assert structured(c, "get_method_source", className="oddly.placed.Spot", selector="where")


def test_a_class_whose_body_binds_module_to_no_str_is_named_by_its_qualified_name_alone(c):
    described = call_tool(c, "describe_class", {"className": "oddly.placed.Numbered"})["content"][0]["text"]
    assert "mro: Numbered -> object" in described, described
    assert error(c, "compile_method", "refused", className="oddly.placed.Numbered",
                 source="def count(self):\n    return 4\n").startswith(
        "oddly.placed.Numbered cannot be modified: oddly.placed binds it to a class whose "
        "__module__ is of type int, no str, and the tools cannot tell")


def test_a_class_whose_qualname_or_method_name_holds_a_lone_surrogate_is_browsed_with_its_escape(c):
    # Each answer was 'the result cannot be sent: not JSON: 'utf-8' codec can't encode character'.
    described = call_tool(c, "describe_class", {"className": "oddly.surrogate.Sur"})["content"][0]["text"]
    assert "mro: oddly.surrogate.Sur\\udc80 -> object" in described, described
    methods = structured(c, "list_methods", className="oddly.surrogate.Sur")["methods"]["instance"]
    assert methods == [{"name": "where", "definedIn": "oddly.surrogate.Sur\\udc80"}]
    hierarchy = structured(c, "get_class_hierarchy", className="oddly.surrogate.Sur")
    assert hierarchy["superclasses"] == ["object", "oddly.surrogate.Sur\\udc80"], hierarchy
    assert structured(c, "describe_class", className="oddly.surrogate.Named")["methods"] == ["meth\\udc82"]


def test_a_test_of_such_a_class_raising_such_an_exception_is_reported(c):
    ran = structured(c, "run_test_class", className="oddly.test_placed.TestPlaced")
    assert (ran["run"], ran["passed"]) == (2, 1), ran
    assert [(f["test"], f["exception"]) for f in ran["failed"]] == [("oddly.test_placed.TestPlaced.test_raises", "Odd")]
    cased = structured(c, "run_test_class", className="oddly.test_placed.TestCased")   # unittest's style
    assert (cased["run"], cased["passed"]) == (2, 1), cased
    assert [(f["test"], f["exception"]) for f in cased["failed"]] == [
        ("oddly.test_placed.TestCased.test_sub (i=1)", "Odd")]
    one = structured(c, "run_test_method", className="oddly.test_placed.TestCased", selector="test_passes")
    assert (one["run"], one["passed"]) == (1, 1), one
    told = call_tool(c, "describe_test_failure", {"className": "oddly.test_placed.TestPlaced",
                                                  "selector": "test_raises"})
    assert "oddly.placed.Odd: odd" in told["content"][0]["text"], told


def test_a_class_fixture_of_such_a_class_failing_is_reported_naming_the_class(c):
    # unittest names the fixture's entry by util.strclass, which asked the class its
    # __module__: the answer was 'RuntimeError: no module', the fixture's error lost.
    ran = structured(c, "run_test_class", className="oddly.test_placed.TestSetUpFails")
    assert (ran["run"], ran["notRun"], ran["fixtureErrors"]) == (0, 1, 1), ran
    assert [(f["test"], f["exception"], f["message"]) for f in ran["failed"]] == [
        ("setUpClass (oddly.test_placed.TestSetUpFails)", "ValueError", "no setup")]
    ran = structured(c, "run_test_class", className="oddly.test_placed.TestTearDownFails")
    assert (ran["run"], ran["passed"], ran["fixtureErrors"]) == (1, 1, 1), ran
    assert [(f["test"], f["exception"], f["message"]) for f in ran["failed"]] == [
        ("tearDownClass (oddly.test_placed.TestTearDownFails)", "ValueError", "no teardown")]


def test_execute_code_raising_such_an_exception_shows_its_traceback(c):
    result = call_tool(c, "execute_code", {"code": "from oddly.placed import Odd\nraise Odd('x')"})
    assert result["isError"], result
    assert result["content"][0]["text"].endswith("oddly.placed.Odd: x"), result


def test_such_classes_are_compiled_deleted_and_aborted(c):
    assert structured(c, "compile_method", className="oddly.placed.Spot", source="def where(self):\n    return 5\n")
    assert run(c, "from oddly.placed import Nook\nNook().where()") == "5"
    refused = error(c, "delete_class", "refused", className="oddly.placed.Spot")
    assert refused.startswith(
        "oddly.placed.Spot has subclasses in the image: oddly.placed.Nook (oddly.placed line "), refused
    assert structured(c, "delete_method", className="oddly.placed.Nook", selector="corner")
    source = "class Nook(Spot):\n    def corner(self):\n        return 6\n"
    assert structured(c, "compile_class_definition", dictionaryName="oddly.placed", source=source)
    assert run(c, "from oddly.placed import Nook\nNook().corner()") == "6"
    assert "oddly.placed," in call_tool(c, "abort", {})["content"][0]["text"]   # re-imported
    assert run(c, "from oddly.placed import Nook\nNook().corner()") == "6"
