"""A class's `__module__` and `__qualname__` as `type` keeps them (gsmcpd.image.own), and
a traceback naming an exception so (gsmcpd.raised.traceback_text), a TestCase's tests
listed and named so (testing.case_method_names, id_of), whatever its metaclass
binds to those names: each tool read them through the metaclass, and failed with its error."""

import functools
import traceback
import unittest

from gsmcpd.image import own
from gsmcpd.raised import traceback_text
from gsmcpd.worker.toolsets import testing


class Placeless(type):
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


class Odd(Exception, metaclass=Placeless):
    pass


class Numbered:
    __module__ = 42


class Worded:
    __module__ = type("Word", (str,), {"__str__": lambda self: "shown"})("pkg")


def test_a_class_s_module_and_qualname_are_its_own_whatever_its_metaclass_says():
    assert (own.module_of(Spot), own.qualname_of(Spot)) == (__name__, "Spot")
    assert (own.module_of(int), own.qualname_of(int)) == ("builtins", "int")
    assert (own.module_of(Spot.where), own.qualname_of(Spot.where)) == (__name__, "Spot.where")


def test_a_module_that_is_no_str_is_none_and_a_str_subclass_s_is_its_plain_text():
    assert own.module_of(Numbered) is None
    assert own.module_of(Placeless) is None   # its body bound `__module__` to the property
    assert type(own.module_of(Worded)) is str and own.module_of(Worded) == "pkg"


def test_a_class_with_no_module_has_none():
    bare = eval("type('Bare', (), {})", {"__builtins__": __builtins__})   # no __name__ in its globals
    assert own.module_of(bare) is None and own.qualname_of(bare) == "Bare"


def test_another_object_s_are_as_it_answers_and_none_when_reading_them_raises():
    cached = functools.lru_cache(Spot.where)   # a wrapper the module binds by a def statement
    assert (own.module_of(cached), own.qualname_of(cached)) == (__name__, "Spot.where")

    class Raising:
        @property
        def __module__(self):
            raise RuntimeError("no module")
    assert own.module_of(Raising()) is None and own.qualname_of(Raising()) is None   # none of its own


def test_a_traceback_names_an_exception_and_its_chain_as_type_keeps_them():
    try:
        try:
            raise Odd("inner")
        except Odd as inner:
            raise Odd("outer") from inner
    except Odd as error:
        caught = error
    shown = traceback_text(caught, caught.__traceback__)
    assert f"{__name__}.Odd: inner" in shown and shown.rstrip().endswith(f"{__name__}.Odd: outer"), shown
    assert "direct cause" in shown


def test_a_traceback_names_such_an_exception_in_a_group_and_tells_a_syntax_error_s_place():
    class OddSyntax(SyntaxError, metaclass=Placeless):
        pass
    try:
        raise ExceptionGroup("several", [Odd("one"), ValueError("two")])
    except ExceptionGroup as error:
        grouped = traceback_text(error, error.__traceback__)
    assert "ExceptionGroup: several (2 sub-exceptions)" in grouped, grouped
    assert f"| {__name__}.Odd: one" in grouped and "| ValueError: two" in grouped, grouped
    shown = traceback_text(OddSyntax("bad", ("f.py", 3, 5, "x = = 1\n")), None)
    assert 'File "f.py", line 3' in shown and "x = = 1" in shown, shown
    assert shown.rstrip().endswith(".OddSyntax: bad"), shown


def test_a_traceback_of_plain_classes_is_the_traceback_module_s():
    try:
        try:
            raise KeyError("k")
        except KeyError:
            raise ValueError("v")
    except ValueError as error:
        caught = error
    assert traceback_text(caught, caught.__traceback__) == "".join(traceback.format_exception(caught))


def test_a_traceback_names_a_class_whose_module_is_no_str_as_python_s_does():
    class Unplaced(Exception, metaclass=Placeless):
        __module__ = 42
    try:
        raise Unplaced("x")
    except Unplaced as error:
        caught = error
    assert traceback_text(caught, None).rstrip().endswith("<locals>.Unplaced: x")
    assert traceback_text(caught, None).startswith("<unknown>.")   # as traceback names it


def test_a_test_case_of_such_a_class_is_listed_and_named_as_type_keeps_its_names():
    class Cased(unittest.TestCase, metaclass=Placeless):   # local: pytest would collect it, and fail
        def test_sub(self):
            pass

        def test_other(self):
            pass
    assert testing.case_method_names(Cased) == ["test_other", "test_sub"]
    case = Cased("test_sub")
    named = f"{__name__}.test_a_test_case_of_such_a_class_is_listed_and_named_as_type_keeps_its_names.<locals>.Cased"
    assert testing.id_of(case) == f"{named}.test_sub"
    sub = unittest.case._SubTest(case, unittest.case._subtest_msg_sentinel, {"i": 1})
    assert testing.id_of(sub) == f"{named}.test_sub (i=1)"


def test_a_failed_class_fixture_of_such_a_test_case_is_reported_naming_the_class_as_type_keeps_it():
    class SetUp(unittest.TestCase, metaclass=Placeless):   # local: pytest would collect it
        @classmethod
        def setUpClass(cls):
            raise ValueError("no setup")

        def test_passes(self):
            pass

    class TearDown(unittest.TestCase, metaclass=Placeless):
        @classmethod
        def tearDownClass(cls):
            raise ValueError("no teardown")

        def test_passes(self):
            pass
    result, theirs = unittest.TestResult(), unittest.util.strclass
    # unittest's suite named the class by util.strclass: RuntimeError('no module') out of the run.
    testing.ModuleFixtureSuite([SetUp("test_passes"), TearDown("test_passes")]).run(result)
    local = f"{__name__}.test_a_failed_class_fixture_of_such_a_test_case_is_reported_naming_the_class_as_type_keeps_it.<locals>"
    assert [(str(holder), text.splitlines()[-1]) for holder, text in result.errors] == [
        (f"setUpClass ({local}.SetUp)", "ValueError: no setup"),
        (f"tearDownClass ({local}.TearDown)", "ValueError: no teardown")]
    assert result.testsRun == 1
    assert unittest.util.strclass is theirs   # unittest's own again after
