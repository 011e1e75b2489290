"""testing: the image's test classes, run in this worker against its view
(so a session tests its own uncommitted changes).

Test classes are unittest.TestCase subclasses and pytest-style classes: a plain
class named Test* with no __init__ of its own and test* methods, run the way
pytest runs them (a fresh instance per test; setup_method/teardown_method and
setup_class/teardown_class when defined). A bare `assert` that fails is
reported with its message, or with the assert statement when it has none.
Module-level test functions are not run, so setup_function/teardown_function never are.

An `async def` test runs in a class that runs coroutines (unittest.IsolatedAsyncioTestCase);
in a plain TestCase or a pytest-style class it is an error saying its coroutine was never
run and how to run it, not the pass that ran nothing unittest makes of it (see _never_ran).

A module's fixture is pytest's, for all its test classes of either style: setUpModule,
else setup_module, once before its first test, and tearDownModule, else teardown_module,
once after its last (not after a setup that failed); a module with both names of a pair
has only the unittest one called, as pytest calls only the first it finds. A run's tests
are grouped by module, so this holds however its classes are named (see ModuleFixtureSuite).

Whatever a test's setUp, test method, tearDown or cleanups raise is that test's
error, KeyboardInterrupt included (unittest would end the run on it), and the run
goes on; only the worker's own break (SoftBreak, HardBreak) ends a run, and so does
whatever a test raised, or did not, after a soft break landed in it (code that
catches the break and exits, say: see raise_if_break). A class or
module fixture (setUpClass, setup_class, setUpModule, setup_module...) is unittest's:
what it raises is an entry of its own, named after the fixture as written (a pytest-style
class's "setup_class (module.Class)", not unittest's setUpClass), the tests it would have
set up not run, pytest.fail included; pytest.skip raised in it skips them as SkipTest
does, and so does pytest.xfail (pytest reports them xfailed, not failed); a class or module cleanup
(addClassCleanup, addModuleCleanup) raising pytest.fail or pytest.skip is that cleanup's
error or skip, as unittest reports its other errors; what else they raise outside
Exception (KeyboardInterrupt, SystemExit) ends the run, and the call answers that error,
with the traceback from the fixture's own frame.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import linecache
import os
import platform
import sys
import types
import unittest
from contextlib import redirect_stderr, redirect_stdout

from gsmcpd.image import catalog, own
from gsmcpd.raised import STR_FAILED, exception_text, raised, traceback_text
from gsmcpd.worker.capture import Capture
from gsmcpd.worker.descriptors import DescriptorCapture
from gsmcpd.worker.paging import PAGED, offset_prop, page_of
from gsmcpd.worker.registry import Tool
from gsmcpd.worker.toolset import (BREAKS, HardBreak, ToolError, Toolset, array_prop, carry_partial,
                                   budgeted, object_schema, raise_if_break, repeated, repeats_of_budgeted, sendable,
                                   string_prop)
from gsmcpd.worker.toolsets.browsing import CLASS_NAME, SELECTOR

# This module's frames are the runner's (the test-part guard's, _run_plain's): unittest
# leaves them out of a test's traceback as it does its own.
__unittest = True


class _Result(unittest.TestResult):
    """Collects one outcome per test; a hard break is re-raised, never recorded."""

    def __init__(self, on_test_done=None, tracebacks=False):
        super().__init__()
        self.outcomes: list[dict] = []
        self._on_test_done = on_test_done
        # Only describe_test_failure shows one; a run's thousands of failures must not
        # each hold a traceback of up to TRACEBACK_CAP characters for nothing.
        self._tracebacks = tracebacks
        self.output = None   # what the tests printed (a Capture), set by the run

    def _exc_info_to_string(self, err, test):
        """unittest's text of a test's exception, named as traceback_text names it."""
        kind, value, tb = err
        return traceback_text(value, self._clean_tracebacks(kind, value, tb, test), compact=True)

    started = None       # the last test started
    interrupted = None   # the test a break landed in (_run): it has no outcome

    def startTest(self, test):
        super().startTest(test)
        self.started = test

    def break_landed(self) -> None:
        if self.started is not None and not any(e["of"] == id_of(self.started) for e in self.outcomes):
            self.interrupted = self.started

    def tally(self, collected: int) -> dict:
        """run, notRun of the `collected` tests (kept from running by a class or module
        fixture, or by a break), and the one a break landed in: neither, but named."""
        interrupted = {} if self.interrupted is None else {"interrupted": id_of(self.interrupted)}
        return {"run": self.testsRun - len(interrupted), "notRun": collected - self.testsRun, **interrupted}

    def stopTest(self, test):
        super().stopTest(test)
        if self._on_test_done is not None:
            self._on_test_done(test)

    def _record(self, test, outcome, err=None, reason=None):
        # Every text the test made is capped and escaped: one test's 100 MB message or
        # lone surrogate must not make the whole run's answer unsendable.
        entry = {"test": _shown(id_of(test), "the test id"), "outcome": outcome,
                 "of": id_of(getattr(test, "test_case", test))}   # a subtest's own test
        if not isinstance(test, unittest.TestCase):   # unittest's stand-in for a class or module fixture
            entry["fixture"] = True
        if err is not None:
            entry["exception"] = _shown(own.NAME(err[0]), "the exception name")
            entry["message"] = _shown(failure_message(err), "the message")
            if self._tracebacks:
                whole = self._exc_info_to_string(err, test)
                entry["traceback"] = _shown(whole, "the traceback", TRACEBACK_CAP)
                entry["tracebackLength"] = len(whole)   # what describe_test_failure's repeat counts from
        if reason:
            entry["message"] = _shown(reason, "the reason")
        self.outcomes.append(entry)

    def addError(self, test, err):
        if issubclass(err[0], HardBreak):
            raise err[1]
        err = _as_raised(err)
        if issubclass(err[0], _MarkedXPass):
            return self.addUnexpectedSuccess(test)
        outcome = "expectedFailure" if issubclass(err[0], _MarkedXFail) else pytest_outcome(err[0])
        if not isinstance(test, unittest.TestCase):   # a class or module fixture (see _fixture_outcomes)
            outcome = None   # its pytest.fail is its error, as pytest reports it ("ERROR at setup")
        if outcome == "skipped":
            return self.addSkip(test, str(err[1]))
        if outcome == "failure":
            return self.addFailure(test, err)
        if outcome == "expectedFailure":
            return self.addExpectedFailure(test, err)
        super().addError(test, err)
        self._record(test, "error", err)

    def addFailure(self, test, err):   # an interrupt comes here if failureException is Exception
        err = _as_raised(err)
        super().addFailure(test, err)
        self._record(test, "failure", err)

    def addSuccess(self, test):
        super().addSuccess(test)
        self._record(test, "pass")

    def addSkip(self, test, reason):
        # Python 3.12.0 and 3.12.1 skip a test marked @skip without starting it, though they
        # stop it (CPython gh-113267, fixed in 3.12.2): unstarted, it would count as not run.
        # Not a fixture's stand-in, nor a subtest of the test running: neither is started.
        if isinstance(test, unittest.TestCase) and getattr(test, "test_case", test) is not self.started:
            self.startTest(test)
        super().addSkip(test, reason)
        self._record(test, "skipped", reason=_reason_text(reason))

    def addExpectedFailure(self, test, err):
        if getattr(err[1], NEVER_RAN, False):   # no failure: the test's body never ran (_never_ran)
            return self.addError(test, err)
        super().addExpectedFailure(test, err)
        self._record(test, "expectedFailure")

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._record(test, "unexpectedSuccess", reason="the test passed, but it is marked "
                     "@expectedFailure")

    def addSubTest(self, test, subtest, err):
        if err is not None and issubclass(err[0], HardBreak):
            raise err[1]
        super().addSubTest(test, subtest, err)
        if err is not None:
            failed = issubclass(err[0], test.failureException) or pytest_outcome(err[0]) == "failure"
            self._record(subtest, "failure" if failed else "error", err)


def pytest_outcome(exc_type: type) -> str | None:
    """The outcome pytest gives a test that raised this (pytest.skip, pytest.fail,
    pytest.xfail and importorskip raise BaseExceptions of pytest's own, which unittest
    would count as errors); None for any other exception. Told by name, so the worker
    needs no pytest: only tests that use it raise them (Skipped and Failed say their
    module is builtins; their base is _pytest.outcomes.OutcomeException)."""
    names = {own.NAME(c) for c in exc_type.__mro__}
    if not any(own.module_of(c) == "_pytest.outcomes" and own.NAME(c) == "OutcomeException"
               for c in exc_type.__mro__):
        return None
    for name, outcome in (("XFailed", "expectedFailure"), ("Failed", "failure"), ("Skipped", "skipped")):
        if name in names:
            return outcome
    return None


class _Carried(Exception):
    """Carries past unittest, which records only Exceptions and lets the others end the run,
    a BaseException that is no end of it: a KeyboardInterrupt a test part raised, pytest.fail
    in a class or module fixture. The result reports the carried exception itself."""

    def __init__(self, carried: BaseException):
        super().__init__(carried)
        self.carried = carried


def _as_raised(err):
    if not issubclass(err[0], _Carried):
        return err
    carried = err[1].carried
    return type(carried), carried, carried.__traceback__


# The TestCase methods unittest runs each test part through (setUp, the test method,
# tearDown, each cleanup); IsolatedAsyncioTestCase runs its coroutines inside them too.
TEST_PARTS = ("_callSetUp", "_callTestMethod", "_callTearDown", "_callCleanup")


def _guard_parts(test: unittest.TestCase) -> None:
    _refuse_unrun_bodies(test)
    for name in TEST_PARTS:
        part = getattr(test, name, None)
        if part is not None:   # private to unittest: a Python without one runs unguarded, as before
            setattr(test, name, _guarded(part))


def _guarded(part):
    def run_part(*args, **kwargs):
        try:
            done = part(*args, **kwargs)
        except BaseException as error:
            raise_if_break(error)
            if isinstance(error, KeyboardInterrupt):
                raise _Carried(error) from None
            _raise_if_unsayable_skip(error)
            raise
        raise_if_break()              # a part that caught the break still ends the run
        return done
    return run_part


def _reason_text(reason):
    """A skip's reason as text: unittest takes any object (`@unittest.skip(42)`, a list) and
    says it with str(), where the run's answer failed on it, costing every test's result."""
    if reason is None or isinstance(reason, str):
        return reason
    try:
        return str(reason)
    except Exception:
        return STR_FAILED


def _raise_if_unsayable_skip(error: BaseException) -> None:
    """A SkipTest whose reason's str() raises (`self.skipTest(obj)`), raised again as one
    unittest can say: its own str() of it, the reason it reports, raised out of the whole
    run, which answered only that error."""
    if isinstance(error, unittest.SkipTest) and exception_text(error) == STR_FAILED:
        raise unittest.SkipTest(STR_FAILED) from None


# How unittest.TestCase calls a test's setUp, test method and tearDown: it runs no
# coroutine (IsolatedAsyncioTestCase has its own), and what they return it ignores, or
# only warns of (see _refuse_unrun_bodies).
_UNITTEST_CALLS = {name: getattr(unittest.TestCase, name, None)
                   for name in ("_callSetUp", "_callTestMethod", "_callTearDown")}
_ASYNC_FIX = "make the class a unittest.IsolatedAsyncioTestCase"


def _refuse_unrun_bodies(test: unittest.TestCase) -> None:
    """A TestCase calling its setUp, test method or tearDown as unittest.TestCase does gets
    an `async def`'s coroutine, or a generator function's generator, back and ignores it,
    or only warns (a DeprecationWarning for a test, 3.11 to 3.14 alike): a pass whose body,
    or whose set-up, never ran. Here it is the test's error (see _never_ran)."""
    def unittests(name):
        return getattr(test, name, None) is not None and getattr(type(test), name, None) is _UNITTEST_CALLS[name]

    if unittests("_callTestMethod"):
        call = test._callTestMethod

        def call_test_method(method):
            def checked():
                returned = method()
                _never_ran(returned, "a unittest.TestCase", _ASYNC_FIX + ", which runs async def "
                           "tests (and asyncSetUp/asyncTearDown) in an event loop")
                return returned   # another value than None unittest still warns of
            return call(checked)
        test._callTestMethod = call_test_method
    for name, hook, async_name, when in (("_callSetUp", "setUp", "asyncSetUp", "before"),
                                         ("_callTearDown", "tearDown", "asyncTearDown", "after")):
        if unittests(name):
            setattr(test, name, _checked_hook(test, hook, _ASYNC_FIX + f" and name it "
                                              f"{async_name}, which it runs {when} each test in an event loop"))


def _checked_hook(test: unittest.TestCase, name: str, fix: str):
    # Looked up when called, as unittest does, not when the test is prepared: a setUpClass,
    # a setUpModule or an earlier test of the run may have put another setUp in place since.
    def call():
        _never_ran(getattr(test, name)(), "a unittest.TestCase", fix)
    return call


MESSAGE_CAP = 10_000       # characters of a failure message each test's entry keeps
OUTPUT_CAP = 1_000_000     # of what the tests printed (only describe_test_failure shows it)
LISTED_CAP = 200           # failing entries a run's answer lists: 200 capped messages always fit a frame
TRACEBACK_CAP = 1_000_000  # of its traceback (only describe_test_failure shows one)


def _shown(text: str, what: str, cap: int = MESSAGE_CAP) -> str:
    return sendable(text, what, cap, "a test's report")


FAILED = ("failure", "error", "unexpectedSuccess")
# One outcome per test, so the counts add up to the tests run: a test with failing
# subtests counts once, as its worst (the failing subtests are each listed). A class or
# module fixture (setUpClass, tearDownModule...) is no test: what it raises is counted
# apart, and the tests it kept from running are counted as not run.
WORST_FIRST = ("error", "failure", "unexpectedSuccess", "expectedFailure", "skipped", "pass")
COUNTS = {"pass": "passed", "failure": "failures", "error": "errors", "skipped": "skipped",
          "expectedFailure": "expectedFailures", "unexpectedSuccess": "unexpectedSuccesses"}


def _run_ended_by(error: BaseException) -> ToolError:
    """The answer of a run a class or module fixture ended by raising something outside
    Exception (SystemExit, its own KeyboardInterrupt), as unittest's run ends: the error,
    and where the fixture raised it, which the error alone does not say."""
    tb = error.__traceback__
    while tb is not None and _is_runner_frame(tb.tb_frame):
        tb = tb.tb_next
    where = traceback_text(error, tb).rstrip()
    whole = (f"{raised(error)}\n(raised by a class or module fixture: outside Exception, it ends the "
             f"whole run, as in unittest, so no test's result is told)\n{where}")
    return ToolError("other", _shown(whole, "the traceback", TRACEBACK_CAP), uncut_length=len(whole))


def _is_runner_frame(frame) -> bool:
    """A frame of unittest's (marked `__unittest`, as unittest hides its own) or of this module."""
    return "__unittest" in frame.f_globals or frame.f_code.co_filename == __file__


def failure_message(err) -> str:
    """str(exception); for an AssertionError with no message, the failing
    assert statement itself (a bare `assert` says nothing on its own)."""
    exc_type, exc, tb = err
    message = exception_text(exc)
    if message or not issubclass(exc_type, AssertionError):
        return message
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None:
        return message
    line = linecache.getline(tb.tb_frame.f_code.co_filename, tb.tb_lineno).strip()
    return f"{line} failed" if line.startswith("assert") else message


def test_method_names(cls: type) -> list[str]:
    """A pytest-style class's test* methods, in definition order (bases first)."""
    names: list[str] = []
    for owner in reversed(cls.__mro__):
        for name, value in vars(owner).items():
            if name.startswith("test") and callable(value) and name not in names:
                names.append(name)
    return [name for name in names if callable(getattr(cls, name, None))]


def case_method_names(cls: type) -> list[str]:
    """A TestCase's test* methods, as unittest's loader lists them (getTestCaseNames, which
    also names the class by its `__module__` and `__qualname__`, read through its
    metaclass: one making them raise failed every test tool on the class)."""
    loader = unittest.defaultTestLoader
    names = [name for name in dir(cls) if name.startswith(loader.testMethodPrefix) and callable(getattr(cls, name))]
    if loader.sortTestMethodsUsing:
        names.sort(key=functools.cmp_to_key(loader.sortTestMethodsUsing))
    return names


def id_of(test) -> str:
    """test.id(); unittest's own, of a TestCase (`module.Class.method`) and of a subtest of
    it, with its class named as `type` keeps it (_dotted): unittest asks the class, whose
    metaclass may make its `__module__` or `__qualname__` raise."""
    case = test.test_case if isinstance(test, unittest.case._SubTest) else test
    if isinstance(case, unittest.TestCase) and inspect.getattr_static(type(case), "id") is unittest.TestCase.id:
        named = f"{_dotted(type(case))}.{case._testMethodName}"
    else:
        named = case.id()   # a class's own id (PlainTestCase's), or unittest's stand-in for a fixture
    if case is test:
        return named
    try:
        return f"{named} {test._subDescription()}"
    except Exception:   # a subtest's parameters whose repr raises (subTest(obj=Unprintable())):
        # unittest's own id() raised out of the whole run
        return f"{named} (<subtest parameters' repr() failed>)"


def is_plain_test_class(cls) -> bool:
    """pytest's rule: a class named Test*, not a TestCase, with no __init__ of its own,
    and not marked `__test__ = False` (or any false value: a helper named like a test class)."""
    return (isinstance(cls, type) and own.NAME(cls).startswith("Test")
            and not issubclass(cls, unittest.TestCase) and cls.__init__ is object.__init__
            and bool(getattr(cls, "__test__", True))
            and bool(test_method_names(cls)))


def is_test_class(cls) -> bool:
    return isinstance(cls, type) and (issubclass(cls, unittest.TestCase) or is_plain_test_class(cls))


class PlainTestCase(unittest.TestCase):
    """One test method of a pytest-style class, as a TestCase, so both styles
    share the runner and its result. A subclass per test class carries it, so
    the suite runs setup_class/teardown_class once per class."""

    plain_class: type = object
    # What unittest lists as the class's setUpClass (tearDownClass) is the setup_class
    # (teardown_class) the class has: named as it is written (see ModuleFixtureSuite).
    FIXTURE_NAMES = {"setUpClass": "setup_class", "tearDownClass": "teardown_class"}

    def __init__(self, method_name: str):
        super().__init__("_run_plain")
        self.plain_method = method_name

    @classmethod
    def for_class(cls, plain_class: type) -> type:
        return type(own.NAME(plain_class), (cls,), {"plain_class": plain_class,
                                                   "__module__": own.module_of(plain_class),
                                                   "__qualname__": own.QUALNAME(plain_class)})

    @classmethod
    def setUpClass(cls):
        cls._class_hook("setup_class")

    @classmethod
    def tearDownClass(cls):
        cls._class_hook("teardown_class")

    @classmethod
    def _class_hook(cls, name: str) -> None:
        """As pytest calls setup_class/teardown_class: its function given the class
        if it takes an argument, so a plain `def setup_class(cls):` works as a
        classmethod does."""
        hook = getattr(cls.plain_class, name, None)
        if hook is not None:   # pytest.skip or .fail in it: see ModuleFixtureSuite._handleClassSetUp
            _call_with_optional_argument(getattr(hook, "__func__", hook), cls.plain_class)

    def id(self):
        return f"{_dotted(self.plain_class)}.{self.plain_method}"

    def __str__(self):
        return f"{self.plain_method} ({_dotted(self.plain_class)})"

    def _run_plain(self):
        marks = PytestMarks(self.plain_class, self.plain_method)
        marks.skip_if_marked()
        with marks.xfail():
            self._run_plain_unmarked()

    def _run_plain_unmarked(self):
        instance = self.plain_class()
        method = getattr(instance, self.plain_method)
        setup = getattr(instance, "setup_method", None)
        if setup is not None:
            _call_with_optional_argument(setup, method)
        try:
            _never_ran(method(), "a pytest-style class", "make the class a "
                       "unittest.IsolatedAsyncioTestCase, or call asyncio.run() in a plain def "
                       "test (pytest needs a plugin to run it)")
        finally:
            teardown = getattr(instance, "teardown_method", None)
            if teardown is not None:
                _call_with_optional_argument(teardown, method)


def _call_fixture(hook, argument) -> None:
    """A module fixture, called as pytest calls it (given `argument` if it takes one)."""
    with _fixture_outcomes():
        _call_with_optional_argument(hook, argument)


@contextlib.contextmanager
def _fixture_outcomes():
    """pytest's outcomes raised in a class or module fixture, as pytest reports them
    (BaseExceptions, they would end unittest's whole run): pytest.skip skips what the fixture
    sets up, as SkipTest does, and so does pytest.xfail (pytest reports those tests xfailed,
    not failed); pytest.fail is the fixture's error, as any Exception is, its tests not run.
    Other BaseExceptions (KeyboardInterrupt, SystemExit) still end the run."""
    try:
        yield
    except BaseException as error:
        _raise_if_unsayable_skip(error)
        outcome = pytest_outcome(type(error))
        if outcome == "skipped":
            raise unittest.SkipTest(str(error)) from error
        if outcome == "expectedFailure":
            raise unittest.SkipTest(f"xfail: {error}") from error
        if outcome == "failure":
            raise _Carried(error) from None
        raise


_INHERITED = object()
_REFUSED = object()


def _with_fixture_outcomes(function):
    def called(*args, **kwargs):
        with _fixture_outcomes():
            return function(*args, **kwargs)
    return called


def _cleanups_with_fixture_outcomes(cleanups: list) -> None:
    """unittest's class or module cleanups, (function, args, kwargs) each, called through
    _fixture_outcomes: unittest runs them catching Exceptions only, so pytest.fail or
    pytest.skip in one ended the whole run, not reported as that cleanup's error or skip."""
    cleanups[:] = [(_with_fixture_outcomes(function), args, kwargs) for function, args, kwargs in cleanups]


@contextlib.contextmanager
def _class_fixture_with_outcomes(cls, name: str):
    """unittest calls a class's setUpClass or tearDownClass, and then its class cleanups,
    itself, catching Exceptions only: while it does, each is called through _fixture_outcomes."""
    if cls is None:   # no class to set up or tear down
        yield
        return
    hook = getattr(cls, name, None)
    run_cleanups = getattr(cls, "doClassCleanups", None)

    def do_class_cleanups():
        _cleanups_with_fixture_outcomes(getattr(cls, "_class_cleanups", []))
        run_cleanups()
    with _put_in_place(cls, name, hook and _with_fixture_outcomes(hook)), \
            _put_in_place(cls, "doClassCleanups", run_cleanups and do_class_cleanups):
        yield


@contextlib.contextmanager
def _classes_named_by_type():
    """unittest's suite names the class whose setUpClass or tearDownClass (or a cleanup)
    failed by util.strclass, which asks the class its `__module__`: a metaclass making
    that raise made its error the whole run's answer, the fixture's own lost. While the
    suite handles a class fixture, it names the class as _dotted does."""
    util = unittest.suite.util
    theirs, util.strclass = util.strclass, _dotted
    try:
        yield
    finally:
        util.strclass = theirs


@contextlib.contextmanager
def _put_in_place(cls, name: str, function):
    """cls.name is `function` while unittest calls it, and the class's own again after
    (the class is the image's); nothing is put in place for a None `function`."""
    if function is None:
        yield
        return
    own = vars(cls).get(name, _INHERITED)
    try:
        setattr(cls, name, staticmethod(function))
    except (TypeError, AttributeError):   # its metaclass refuses it: unittest calls the class's own
        own = _REFUSED
    try:
        yield
    finally:
        if own is _INHERITED:
            delattr(cls, name)
        elif own is not _REFUSED:
            setattr(cls, name, own)


# pytest's module fixture: the first of each pair the module has, for all its tests.
MODULE_SETUPS = ("setUpModule", "setup_module")
MODULE_TEARDOWNS = ("tearDownModule", "teardown_module")


class ModuleFixtureSuite(unittest.TestSuite):
    """unittest's suite, with the module fixture pytest calls: setUpModule or else
    setup_module before the module's first test, tearDownModule or else teardown_module
    after its last (and not when the setup failed), each given the module if it takes an
    argument; for every test class of the module, TestCase and pytest-style alike, as
    pytest's one autouse module fixture is. unittest itself knows only setUpModule and
    tearDownModule; these two methods are the ones its run calls as the module changes,
    kept otherwise as unittest has them (a failure is an entry of its own, the module's
    cleanups run, the module's tests are not run after a failed setup). A class or module
    fixture, or cleanup, raising pytest's skip, xfail or fail is handled as pytest does
    (_fixture_outcomes)."""

    _fixture_names: dict = {}   # the FIXTURE_NAMES of the class whose fixture unittest calls

    def _handleClassSetUp(self, test, result):
        starts = test.__class__ is not getattr(result, "_previousTestClass", None)
        with self._class_fixture(test.__class__ if starts else None, "setUpClass"):
            super()._handleClassSetUp(test, result)

    def _tearDownPreviousClass(self, test, result):
        previous = getattr(result, "_previousTestClass", None)
        ends = previous is not None and previous is not test.__class__
        with self._class_fixture(previous if ends else None, "tearDownClass"):
            super()._tearDownPreviousClass(test, result)

    @contextlib.contextmanager
    def _class_fixture(self, cls, name: str):
        plain = cls is not None and issubclass(cls, PlainTestCase)   # not a name a TestCase may have
        self._fixture_names = PlainTestCase.FIXTURE_NAMES if plain else {}
        try:
            with _class_fixture_with_outcomes(cls, name), _classes_named_by_type():
                yield
        finally:
            self._fixture_names = {}

    def _createClassOrModuleLevelException(self, result, exc, method_name, parent, info=None):
        # unittest names the entry after the method it called: a pytest-style class's is its setup_class
        super()._createClassOrModuleLevelException(
            result, exc, self._fixture_names.get(method_name, method_name), parent, info)

    def _handleModuleFixture(self, test, result):
        name = own.module_of(type(test))
        if name == self._get_previous_module(result):
            return
        self._handleModuleTearDown(result)
        result._moduleSetUpFailed = False
        hook_name, hook = _module_hook(name, MODULE_SETUPS)
        if hook is None:
            return
        try:
            _call_fixture(hook, sys.modules[name])
        except Exception as error:
            result._moduleSetUpFailed = True
            self._createClassOrModuleLevelException(result, error, hook_name, name)
            self._run_module_cleanups(result, hook_name, name)

    def _get_previous_module(self, result):
        # unittest's, the module read as `type` keeps it: the class's metaclass may make `__module__` raise.
        previous = getattr(result, "_previousTestClass", None)
        return None if previous is None else own.module_of(previous)

    def _handleModuleTearDown(self, result):
        name = self._get_previous_module(result)
        if name is None or result._moduleSetUpFailed or name not in sys.modules:
            return
        hook_name, hook = _module_hook(name, MODULE_TEARDOWNS)
        if hook is not None:
            try:
                _call_fixture(hook, sys.modules[name])
            except Exception as error:
                self._createClassOrModuleLevelException(result, error, hook_name, name)
        self._run_module_cleanups(result, hook_name or "tearDownModule", name)

    def _run_module_cleanups(self, result, hook_name: str, module_name: str) -> None:
        _cleanups_with_fixture_outcomes(getattr(unittest.case, "_module_cleanups", []))
        try:
            unittest.doModuleCleanups()
        except Exception as error:
            self._createClassOrModuleLevelException(result, error, hook_name, module_name)


def _module_hook(module_name: str, names: tuple[str, ...]):
    """(name, function) of the first of `names` the module has, else (None, None)."""
    module = sys.modules.get(module_name)
    for name in names:
        hook = getattr(module, name, None)
        if hook is not None:
            return name, hook
    return None, None


def _dotted(cls: type) -> str:
    """A test class's name as unittest gives it (`module.Class`, util.strclass), read as
    `type` keeps it (View.qualified): its metaclass may make `__module__` raise."""
    module = own.module_of(cls)
    return own.QUALNAME(cls) if module is None else f"{module}.{own.QUALNAME(cls)}"


def grouped_by_module(tests: list[unittest.TestCase]) -> list[unittest.TestCase]:
    """The tests with each module's together (in the order the modules first come,
    each module's in their own order), so its module fixture runs once per run, as
    pytest runs a module's tests together: unittest sets a module up again each time
    its tests come back after another module's."""
    first = {}
    for test in tests:
        first.setdefault(own.module_of(type(test)), len(first))
    return sorted(tests, key=lambda test: first[own.module_of(type(test))])


def _call_with_optional_argument(hook, argument) -> None:
    """pytest's rule for setup_method/teardown_method: the test method is passed only
    to a hook that takes an argument (`def setup_method(self):` is as common)."""
    code = getattr(hook, "__code__", None)
    takes = code is None or code.co_argcount - inspect.ismethod(hook) > 0
    if takes:
        hook(argument)
    else:
        hook()


class PytestMarks:
    """pytest's skip, skipif and xfail marks on a pytest-style test (its method, its
    class, its module's `pytestmark`), kept as pytest keeps them: a test marked to skip
    is not run. Read by name, so the worker needs no pytest; other marks do nothing."""

    def __init__(self, plain_class: type, method_name: str):
        self.module = sys.modules.get(own.module_of(plain_class))
        found = [*_marks_of(getattr(plain_class, method_name)), *_marks_of(plain_class),
                 *_marks_of(self.module)]
        self.marks = [(mark.name, mark.args, mark.kwargs) for mark in found]

    def _held(self, args, kwargs):
        """The condition of a skipif or xfail that holds (True for one with none), or None."""
        conditions = args or ((kwargs["condition"],) if "condition" in kwargs else ())
        if not conditions:
            return True
        # a string is evaluated as pytest does: with the module's globals, os, sys, platform
        namespace = {"os": os, "sys": sys, "platform": platform, **own.namespace(self.module or _NO_MODULE)}
        for condition in conditions:
            if eval(condition, namespace) if isinstance(condition, str) else condition:
                return condition
        return None

    def skip_if_marked(self) -> None:
        for name, args, kwargs in self.marks:
            if name == "skip":
                raise unittest.SkipTest(kwargs.get("reason", args[0] if args else "unconditional skip"))
            if name == "skipif":
                held = self._held(args, kwargs)
                if held is not None:
                    raise unittest.SkipTest(kwargs.get("reason") or f"condition: {held}")

    @contextlib.contextmanager
    def xfail(self):
        """A failure is an expected failure (of the exceptions `raises` names, if it
        does); a pass is an unexpected success if `strict`, else a pass, as pytest's XPASS."""
        marked = [(args, kwargs) for name, args, kwargs in self.marks
                  if name == "xfail" and self._held(args, kwargs) is not None]
        if not marked:
            yield
            return
        args, kwargs = marked[0]
        if not kwargs.get("run", True):
            raise _MarkedXFail(kwargs.get("reason", "") or "not run")
        try:
            yield
        except BaseException as error:   # a break, or pytest.skip, is no failure
            failed = (isinstance(error, Exception) and not getattr(error, NEVER_RAN, False)
                      or pytest_outcome(type(error)) in ("failure", "expectedFailure"))
            raises = kwargs.get("raises")
            if failed and (raises is None or isinstance(error, raises)):
                raise _MarkedXFail(kwargs.get("reason", "")) from error
            raise
        if kwargs.get("strict", False):
            raise _MarkedXPass()


_NO_MODULE = types.ModuleType("_")


def _marks_of(obj) -> list:
    marks = getattr(obj, "pytestmark", [])
    marks = marks if isinstance(marks, list) else [marks]
    # a MarkDecorator (pytestmark = pytest.mark.skip) carries its Mark
    return [getattr(mark, "mark", mark) for mark in marks if hasattr(getattr(mark, "mark", mark), "name")]


class _MarkedXFail(Exception):
    """A test marked xfail failed: an expected failure (see _Result.addError)."""


class _MarkedXPass(Exception):
    """A test marked xfail(strict=True) passed: an unexpected success."""


def _never_ran(returned, runner: str, fix: str) -> None:
    """An `async def` test (or setUp) called returns its coroutine, a generator function
    its generator, the body never run: a pass that tested nothing. pytest fails an async
    test unless a plugin runs it, and dropped yield tests (4.0); here, in either style, it
    is an error (the test did not fail: it never ran), saying why and how to run it."""
    if inspect.iscoroutine(returned):
        returned.close()   # never started: no "coroutine was never awaited" RuntimeWarning on top
        raise _not_run_error(f"{returned.__qualname__} is an async def, which is not run: "
                             f"{runner} runs no event loop, so its coroutine was never run; {fix}")
    if inspect.isgenerator(returned) or inspect.isasyncgen(returned):
        raise _not_run_error(f"{returned.__qualname__} yields, so calling it ran none of its body: "
                             "a test, setUp or tearDown is not a generator (pytest dropped yield "
                             "tests in 4.0); take the yield out")


# Set on _never_ran's TypeError: the test is an error even where a failure is expected
# (@expectedFailure, an xfail mark), as the failure expected is of a body that ran.
NEVER_RAN = "_gsmcpd_never_ran"


def _not_run_error(message: str) -> TypeError:
    error = TypeError(message)
    setattr(error, NEVER_RAN, True)
    return error


class TestingToolset(Toolset):
    name = "testing"
    tool_names = ("describe_test_failure", "list_failing_tests", "list_test_classes",
                  "run_test_class", "run_test_method")
    read_only_safe = frozenset(tool_names)
    idempotent = frozenset({"list_test_classes"})

    def register(self, registry):
        one_test = object_schema({**CLASS_NAME, **SELECTOR}, ["className", "selector"])
        registry.add(Tool("describe_test_failure", "Re-run one test in isolation and report the "
                          "exception class, message and traceback.", one_test,
                          self.describe_test_failure))
        registry.add(Tool("list_failing_tests", "Failing and erroring tests of the given classes "
                          "(or all test classes), with progress per test.",
                          object_schema({"classNames": array_prop(string_prop("a test class", min_length=1),
                                                                  "test classes to run; omit it to run all "
                                                                  "(an empty list is refused)")}),
                          self.list_failing_tests))
        registry.add(Tool("list_test_classes", "All test classes in the image: unittest.TestCase "
                          f"subclasses and pytest-style Test* classes ({PAGED}).",
                          object_schema(offset_prop("test classes")), self.list_test_classes))
        registry.add(Tool("run_test_class", "Run a test class: summary and failures, with "
                          "progress per test. Whatever a test raises is its error, "
                          "KeyboardInterrupt and SystemExit included, and the run goes on.",
                          object_schema(CLASS_NAME, ["className"]),
                          self.run_test_class))
        registry.add(Tool("run_test_method", "Run one test method (one the class's runner would "
                          "collect: test*, or runTest for a TestCase with no test*).", one_test,
                          self.run_test_method))

    # -- helpers ---------------------------------------------------------

    def _test_classes(self) -> tuple[list[tuple[str, type]], list[str]]:
        """The image's test classes, and why each module that could not be loaded (whose
        test classes are unknown) is left out: a broken test module is never silently green."""
        self.view.load_all()
        found = []
        for ref in catalog.image_classes(self.view):
            module = sys.modules.get(ref.module) if self.view.owns_module(ref.module) else None
            cls = own.namespace(module).get(ref.name)
            # Written there, its `__module__` rewritten or not (unittest names its tests by it).
            if is_test_class(cls) and self.view.written_in(cls, ref.module):
                found.append((ref.qualified, cls))
        return found, catalog.unloaded(self.view)

    def _test_class(self, name: str) -> tuple[str, type]:
        ref = catalog.resolve_class(self.view, name, catalog.TEST_CLASSES_LISTED)
        cls = catalog.live_class(self.view, ref)
        if ref.is_kernel or not is_test_class(cls):
            raise ToolError("notFound", f"{ref.qualified} is not a test class in the image (a "
                            "unittest.TestCase subclass, or a pytest-style Test* class with "
                            "test* methods, no __init__ and no __test__ = False); list_test_classes "
                            "shows them")
        return ref.qualified, cls

    def _tests_of(self, cls: type, selector: str | None = None) -> list[unittest.TestCase]:
        plain = not issubclass(cls, unittest.TestCase)
        # Only what the class's runner would collect: setUp, run or a helper is no test.
        names = test_method_names(cls) if plain else case_method_names(cls)
        if not plain and not names and hasattr(cls, "runTest"):
            names = ["runTest"]   # unittest's loader runs a TestCase's runTest when it has no test*
        if selector is not None:
            names = [_test_named(cls, names, selector)]
        case_class = PlainTestCase.for_class(cls) if plain else cls
        return [case_class(name) for name in names]

    def _run(self, tests: list[unittest.TestCase], *, report_progress: bool,
             tracebacks: bool = False) -> _Result:
        """Run as one suite, so class-level fixtures (setUpClass, setup_class) run once."""
        done = []

        def test_done(test):
            done.append(test)
            if report_progress:
                self.progress(len(done), len(tests), message=id_of(test))

        tests = grouped_by_module(tests)
        for test in tests:
            _guard_parts(test)
        result = _Result(test_done, tracebacks)
        result.output = output = Capture(OUTPUT_CAP)
        try:
            with redirect_stdout(output), redirect_stderr(output), DescriptorCapture(output, output):
                try:
                    ModuleFixtureSuite(tests).run(result)
                except BaseException as error:   # a class or module fixture's, or the break
                    raise_if_break(error)
                    if isinstance(error, Exception):
                        raise
                    raise _run_ended_by(error) from None
            raise_if_break()    # a fixture that caught the break
        except BREAKS as interruption:
            result.break_landed()
            interruption.result = result   # what finished before it (see _partial_on_break)
            raise
        finally:
            self.view.forget_import_failures()   # the tests' code may have made a failing import pass
        return result

    @staticmethod
    def _summary(result: _Result, collected: int) -> dict:
        worst: dict[str, str] = {}
        fixture_errors = 0
        for entry in result.outcomes:
            if entry.get("fixture"):
                fixture_errors += entry["outcome"] in FAILED
                continue
            now = worst.get(entry["of"], "pass")
            worst[entry["of"]] = min(now, entry["outcome"], key=WORST_FIRST.index)
        counts = {key: 0 for key in COUNTS.values()}
        for outcome in worst.values():
            counts[COUNTS[outcome]] += 1
        tally = result.tally(collected)
        return {"run": tally.pop("run"), **counts, **tally, "fixtureErrors": fixture_errors}

    # -- tools -----------------------------------------------------------

    def list_test_classes(self, arguments):
        classes, unloaded = self._test_classes()
        page = page_of([name for name, _ in classes], arguments, "test classes")
        structured = {"testClasses": page.items, **page.fields}
        if unloaded:
            structured["notLoaded"] = _not_loaded_data(unloaded)
        text = "\n".join(page.items + _not_loaded_lines(unloaded) + page.note)
        return {"text": text or "no test classes in the image", "structured": structured}

    def run_test_class(self, arguments):
        qualified, cls = self._test_class(arguments["className"])
        tests = self._tests_of(cls)
        with _partial_on_break(lambda result: self._report(qualified, result, len(tests))):
            result = self._run(tests, report_progress=True)
        return self._report(qualified, result, len(tests))

    def run_test_method(self, arguments):
        qualified, cls = self._test_class(arguments["className"])
        tests = self._tests_of(cls, arguments["selector"])
        with _partial_on_break(lambda result: self._report(qualified, result, len(tests))):
            result = self._run(tests, report_progress=False)
        return self._report(qualified, result, len(tests))

    def _report(self, qualified: str, result: _Result, collected: int) -> dict:
        summary = self._summary(result, collected)
        # A fixture that skipped its class or module is listed too: it says why tests did not run.
        failed = [e for e in result.outcomes
                  if e["outcome"] in FAILED or (e.get("fixture") and e["outcome"] == "skipped")]
        extra = "".join(f", {summary[key]} {label}" for key, label in (
            ("expectedFailures", "expected failures"), ("unexpectedSuccesses", "unexpected successes"),
            ("notRun", "not run"), ("fixtureErrors", "class/module fixture errors")) if summary[key])
        lines = [f"{qualified}: {summary['run']} run, {summary['passed']} passed, "
                 f"{summary['failures']} failed, {summary['errors']} errors, "
                 f"{summary['skipped']} skipped{extra}"]
        for entry in failed[:LISTED_CAP]:
            lines.append(_with_said(f"{entry['outcome'].upper()}: {entry['test']}", entry))
        structured = {"class": qualified, **summary, "failed": _listed(failed)}
        lines += _cap_note(failed, structured, "failedTotal")
        return {"text": "\n".join(lines), "structured": structured}

    def list_failing_tests(self, arguments):
        names = arguments.get("classNames")
        if names == []:
            # Meant as "all" or built from nothing, it would run no test and answer green.
            raise ToolError("invalidParams", "classNames is an empty list, which names no test class "
                            "to run; omit classNames to run every test class, or name the classes")
        # A class named twice (or by its bare and qualified names) runs once; each name
        # is resolved once, as resolving scans the image.
        if names is not None:
            classes, unloaded = list(dict(self._test_class(name) for name in dict.fromkeys(names)).items()), []
        else:
            classes, unloaded = self._test_classes()
        tests, unloaded = [], list(unloaded)
        for qualified, cls in classes:
            try:
                tests += self._tests_of(cls)
            except Exception as error:   # the user's own __init__ (a TestCase taking more arguments)
                # One such class ended the whole run, every other class's results unsaid.
                unloaded.append(f"test class {qualified} could not be made into tests (unittest makes "
                                f"one per test method, given its name alone): {raised(error)}")
        with _partial_on_break(lambda result: self._failing_report(result, len(tests), unloaded)):
            result = self._run(tests, report_progress=True)
        return self._failing_report(result, len(tests), unloaded)

    @staticmethod
    def _failing_report(result: _Result, collected: int, unloaded: list[str]) -> dict:
        tally = result.tally(collected)
        failed = [e for e in result.outcomes if e["outcome"] in FAILED]
        lines = [_with_said(f"{e['test']} ({e['outcome']})", e) for e in failed[:LISTED_CAP]]
        ran = f"{tally['run']} run" + (f", {tally['notRun']} not run" if tally["notRun"] else "")
        structured = {**tally, "failing": _listed(failed)}
        lines += _cap_note(failed, structured, "failingTotal")
        if lines:   # the counts too: failures alone do not say how many tests ran or were kept from it
            lines.append(f"({ran})")
        if unloaded:
            structured["notLoaded"] = _not_loaded_data(unloaded)
        text = "\n".join(lines) or (f"no failing tests ({ran})" if not unloaded else
                                    f"no failing tests among those run ({ran}), but "
                                    f"{len(unloaded)} image modules could not be loaded:")
        return {"text": "\n".join([text] + _not_loaded_lines(unloaded)), "structured": structured}

    def describe_test_failure(self, arguments):
        qualified, cls = self._test_class(arguments["className"])
        tests = self._tests_of(cls, arguments["selector"])
        name = id_of(tests[0])
        with _partial_on_break(lambda result: _interrupted_report(name, result),
                               "what the test printed before it is"):
            result = self._run(tests, report_progress=False, tracebacks=True)
        own = [e for e in result.outcomes if not e.get("fixture")]
        fixtures = [e for e in result.outcomes if e.get("fixture")]
        # The first failure is the one to read (the body's before its tearDown's, the first
        # failing subtest); a class or module fixture's when the test's own run had none.
        failures = ([e for e in own if e["outcome"] in FAILED]
                    + [e for e in fixtures if e["outcome"] in FAILED])
        printed = _shown_output(result.output)
        if not failures:
            entry = (own or fixtures or [{"outcome": "notRun"}])[-1]
            # a skip's reason, which the text would otherwise leave to structuredContent
            said = [f"message: {entry['message']}"] if "message" in entry else []
            lines = [f"{name}: {entry['outcome']} (no failure)"] + said + _printed_lines(printed)
            return {"text": "\n".join(lines),
                    "structured": {**_public(entry), "test": name, **({"output": printed} if printed else {})}}
        entry, others = failures[0], failures[1:]
        lines = []
        if entry.get("fixture"):
            mine = own[-1]["outcome"] if own else "not run"
            lines.append(f"{name}: {mine}, but a class or module fixture failed:")
        lines.append(f"{entry['test']}: {entry['outcome']}")
        if "exception" in entry:
            lines.append(f"exception: {entry['exception']}")
        lines += [f"message: {entry.get('message', '')}", "", entry.get("traceback", "").rstrip()]
        lines += [_with_said(f"also {e['outcome']}: {e['test']}", e) for e in others[:LISTED_CAP]]
        structured = _public(entry)
        if "traceback" in entry:   # whole in the text
            structured["traceback"] = repeated(entry["traceback"], "the traceback", entry["tracebackLength"])
        if others:   # capped as a run's list is: thousands of failing subtests must still send
            structured["also"] = _listed(others)
            lines += _cap_note(others, structured, "alsoTotal")
        lines += _printed_lines(printed)
        if printed:
            structured["output"] = printed
        return {"text": "\n".join(lines).rstrip(), "structured": structured}


@contextlib.contextmanager
def _partial_on_break(report, said="the results of the tests that finished before it are"):
    """A break ending a run carries the answer for the tests that finished before it
    (`report(result)`'s structured content, as its `partial`): the worker puts it in the
    -32001 error's data, so a deadline does not throw away a long run's results."""
    try:
        yield
    except BREAKS as interruption:
        result = getattr(interruption, "result", None)
        if result is not None:
            carry_partial(interruption, report(result)["structured"], said)
        raise


def _interrupted_report(name: str, result: _Result) -> dict:
    """describe_test_failure's answer when a break ended the test: what it printed
    before it, where a test that hangs shows how far it got."""
    printed = _shown_output(result.output)
    return {"structured": {"test": name, "interrupted": name, **({"output": printed} if printed else {})}}


def _test_named(cls: type, names: list[str], selector: str) -> str:
    """The test method `selector` names, read as Python reads identifiers (NFKC: a
    decomposed `ü` or `ﬁ` names the method the source spells composed), else notFound."""
    for name in (selector, catalog.python_name(selector)):
        if name in names:
            return name
    raise ToolError("notFound", f"{own.QUALNAME(cls)} has no test method {catalog.echoed(selector)} "
                    f"(its test methods: {catalog.echoed(', '.join(names) or 'none', 2000)})")


def _with_said(head: str, entry: dict) -> str:
    """`head: Exception: message`, leaving out what the entry lacks (an unexpected success
    has no exception), and the message whole, a trailing colon or space included."""
    said = ": ".join(part for part in (entry.get("exception"), entry.get("message")) if part)
    return f"{head}: {said}" if said else head


def _shown_output(output: Capture) -> str:
    return sendable(output.text(), "the output", output.cap, "a test's report", output.cut)


def _printed_lines(printed: str) -> list[str]:
    return ["", "printed (stdout and stderr):", printed.rstrip("\n")] if printed else []


def _listed(failed: list[dict]) -> list[dict]:
    return [{k: e[k] for k in ("test", "outcome", "exception", "message") if k in e}
            for e in failed[:LISTED_CAP]]


def _cap_note(failed: list[dict], structured: dict, total_key: str) -> list[str]:
    """Past LISTED_CAP, say how many there are: the counts stay whole, and one run's
    thousands of failures never make its answer too big to send."""
    if len(failed) <= LISTED_CAP:
        return []
    structured[total_key] = len(failed)
    structured["note"] = (f"listing {LISTED_CAP} of {len(failed)} failing entries; "
                          "run_test_method or describe_test_failure shows any one")
    return [f"(note: {structured['note']})"]


def _not_loaded_lines(unloaded: list[str]) -> list[str]:
    return [f"(not loaded, so its tests are unknown and were not run: {reason})"
            for reason in budgeted(unloaded, "the reason")]


def _not_loaded_data(unloaded: list[str]) -> list[str]:
    """`notLoaded` of an answer whose text has _not_loaded_lines: each reason as told there
    (within toolset.budgeted's budget), and of one told whole, its start (a module's import
    may raise a message of any size)."""
    return repeats_of_budgeted(unloaded, "the reason")


def _public(entry: dict) -> dict:
    return {key: value for key, value in entry.items() if key not in ("of", "fixture", "tracebackLength")}
