"""End-to-end: whatever the user's code does in a tool, the session's worker answers and
keeps the session's work (its workspace and uncommitted changes), through the real daemon.
"""

import ast
import json
import os
import re
import signal
import sys

import pytest

from helpers import Client, Daemon, open_session, parent_of, pid_alive, tool_text, wait_until
from test_e2e_lifetime import worker_pid


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    with Daemon(tmp_path_factory.mktemp("user-code"), env={"GS_MCP_SPARE_WORKERS": "2"}) as running:
        yield running


def failed(result, kind):
    assert result.get("isError") is True, result
    assert result["structuredContent"]["error"]["kind"] == kind, result
    return tool_text(result)


@pytest.fixture
def keeps_its_work(c):
    """The session's workspace variable and worker, checked after the test's calls."""
    c.tool("execute_code", code="kept = 'still here'")
    pid = worker_pid(c)
    yield c
    assert tool_text(c.tool("execute_code", code="kept")) == "'still here'"
    assert worker_pid(c) == pid


@pytest.mark.parametrize("code, shown", [
    ("raise GeneratorExit", "GeneratorExit"),
    ("raise KeyboardInterrupt", "KeyboardInterrupt"),   # no break was sent: the code's own
    ("raise SystemExit(3)", "SystemExit: 3"),
    ("import sys\nsys.exit('bye')", "SystemExit: bye"),
    ("class Custom(BaseException):\n    pass\nraise Custom('mine')", "Custom: mine"),
])
def test_execute_code_raising_a_base_exception_is_an_error_result(keeps_its_work, code, shown):
    assert failed(keeps_its_work.tool("execute_code", code=code), "other").endswith(shown)


@pytest.mark.parametrize("code", ["-" * 100_000 + "1", "x = 1" + " + 1" * 100_000],
                         ids=["parser stack", "recursion limit"])
def test_code_nested_too_deeply_is_a_compile_error_saying_so(keeps_its_work, code):
    # It was a MemoryError with no message, or a RecursionError, of kind other.
    text = failed(keeps_its_work.tool("execute_code", code=code), "compileError")
    assert text.startswith("code is nested too deeply to compile (") and text.endswith(
        "); split the deepest expression into named parts"), text


def test_code_the_compiler_refuses_is_shown_with_its_line(keeps_its_work):
    # "'return' outside function" came with "line 2" alone, no line nor caret.
    text = failed(keeps_its_work.tool("execute_code", code="total = 1\nreturn total"), "compileError")
    assert text.splitlines()[1:] == ["    return total", "    ^^^^^^^^^^^^",
                                     "SyntaxError: 'return' outside function"], text


def test_code_nested_as_deeply_as_python_compiles_text_runs(keeps_its_work):
    # Compiled from its AST, it met the recursion limit (1000) at about 990 levels.
    code = "x = 1" + " + 1" * 2000 + "\n" + "-" * 2000 + "x"
    assert tool_text(keeps_its_work.tool("execute_code", code=code)) == "2001"


def test_a_class_and_a_method_nested_as_deeply_as_python_compiles_text_are_compiled(daemon, keeps_its_work):
    # Compiled from their AST, both met the recursion limit at about 1000 levels: "evaluating
    # the definition raised RecursionError", though the module imports in a new session.
    c, deep = keeps_its_work, "-" * 2000 + "1"
    for tool, arguments in [
            ("compile_class_definition", {"source": f"class Nested:\n    depth = {deep}\n",
                                          "dictionaryName": "shop.models"}),
            ("compile_method", {"className": "Nested", "source": f"def depth_of(self):\n    return {deep}\n"})]:
        result = c.tool(tool, **arguments)
        assert not result.get("isError"), result
    check = "from shop.models import Nested\n(Nested.depth, Nested().depth_of())"
    assert tool_text(c.tool("execute_code", code=check)) == "(1, 1)"
    fresh = open_session(daemon)
    try:
        assert tool_text(fresh.tool("execute_code", code=check)) == "(1, 1)"
    finally:
        fresh.close()
    assert not c.tool("delete_class", className="Nested").get("isError")


def test_recursion_without_end_is_a_recursion_error_and_the_worker_goes_on(keeps_its_work):
    text = failed(keeps_its_work.tool("execute_code", code="def f(n):\n    return f(n + 1)\nf(0)"), "other")
    assert "[Previous line repeated" in text
    assert text.endswith("\nRecursionError: maximum recursion depth exceeded"), text


def test_compile_method_whose_decorator_exits_is_a_compile_error(keeps_its_work):
    text = failed(keeps_its_work.tool("compile_method", className="Cart",
                            source="@exit\ndef g(self): pass"), "compileError")
    assert "SystemExit" in text


def test_a_class_body_raising_system_exit_is_a_compile_error(keeps_its_work):
    text = failed(keeps_its_work.tool("compile_class_definition", dictionaryName="shop.models",
                            source="class Boom:\n    raise SystemExit(1)"), "compileError")
    assert "SystemExit: 1" in text


# -- signals the code sends itself ------------------------------------------------------
# The router breaks a call with real-time signals of its own (gsmcpd.wire.break_signals): a
# SIGINT the code sends itself is Python's KeyboardInterrupt, and the call ends with what
# the code made of it, never -32001 "soft break".

SEND_SIGINT = {
    "os.kill": "import os, signal\nos.kill(os.getpid(), signal.SIGINT)",
    "raise_signal": "import signal\nsignal.raise_signal(signal.SIGINT)",
    "interrupt_main": "import _thread\n_thread.interrupt_main()",
}
LANDS = "\nfor _ in range(10 ** 7):\n    pass\n"   # where it lands, if not in the call that sent it


def catching(code):
    body = "".join("    " + line + "\n" for line in code.splitlines())
    return ("try:\n" + body + "    outcome = 'not interrupted'\n"
            "except KeyboardInterrupt:\n    outcome = 'interrupted'\noutcome")


@pytest.mark.parametrize("how", sorted(SEND_SIGINT))
def test_a_sigint_the_code_sends_itself_is_its_own_keyboard_interrupt(keeps_its_work, how):
    sent = SEND_SIGINT[how] + LANDS
    assert tool_text(keeps_its_work.tool("execute_code", code=catching(sent))) == "'interrupted'"
    text = failed(keeps_its_work.tool("execute_code", code=sent), "other")
    assert text.startswith("Traceback") and text.endswith("\nKeyboardInterrupt"), text


OWN_SIGINT_TESTS = """import _thread, os, signal, unittest


def cli_main():
    # a command line tool's Ctrl-C handling: exit status 130
    try:
        signal.raise_signal(signal.SIGINT)
        for _ in range(10 ** 7):
            pass
    except KeyboardInterrupt:
        return 130
    return 0


class TestCtrlC(unittest.TestCase):
    def test_the_handlers_are_pythons_defaults(self):
        self.assertIs(signal.getsignal(signal.SIGINT), signal.default_int_handler)
        self.assertEqual(signal.getsignal(signal.SIGUSR1), signal.SIG_DFL)

    def test_sigint_of_itself_raises_keyboard_interrupt(self):
        with self.assertRaises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(10 ** 7):
                pass

    def test_interrupt_main_raises_keyboard_interrupt(self):
        with self.assertRaises(KeyboardInterrupt):
            _thread.interrupt_main()
            for _ in range(10 ** 7):
                pass

    def test_the_cli_exits_130_on_ctrl_c(self):
        self.assertEqual(cli_main(), 130)
"""


def test_a_unittest_of_ctrl_c_handling_passes_under_the_test_runner(daemon):
    # Written into the image for the session opened after it; gone again at the end.
    path = daemon.state / "image" / "own_sigint.py"
    path.write_text(OWN_SIGINT_TESTS)
    try:
        c = open_session(daemon)
        pid = worker_pid(c)
        ran = c.tool("run_test_class", className="own_sigint.TestCtrlC")["structuredContent"]
        assert (ran["run"], ran["passed"], ran["failed"]) == (4, 4, []), ran
        one = c.tool("run_test_method", className="own_sigint.TestCtrlC",
                     selector="test_sigint_of_itself_raises_keyboard_interrupt")
        assert one["structuredContent"]["passed"] == 1, one
        assert worker_pid(c) == pid
        c.close()
    finally:
        path.unlink()


PYTEST_OUTCOMES = """\
import pytest


class TestOutcomes:
    def test_skips(self):
        pytest.skip("not on this host")

    def test_fails(self):
        pytest.fail("explicitly")

    def test_passes(self):
        pass


class TestSkippedClass:
    @classmethod
    def setup_class(cls):
        pytest.skip("no database")

    def test_a(self):
        pass


class TestAsync:
    async def test_async(self):
        assert False, "never run"


class TestHooksWithoutArgument:
    def setup_method(self):
        self.ready = True

    def teardown_method(self):
        pass

    def test_ready(self):
        assert self.ready


class TestPlainDefSetupClass:
    def setup_class(cls):
        cls.ready = True

    def test_ready(self):
        assert self.ready


class TestMarks:
    @pytest.mark.skip(reason="wipes the disk")
    def test_skip(self):
        raise SystemExit("ran")

    @pytest.mark.xfail(reason="known bug")
    def test_xfail(self):
        assert False
"""


def test_pytest_style_outcomes_are_the_ones_pytest_gives(daemon):
    # pytest.skip and pytest.fail are a skip and a failure, not errors; a class skipped in
    # setup_class is skipped, not the end of the whole run; skip and xfail marks are kept;
    # setup_method may take no argument, setup_class may be a plain def.
    path = daemon.state / "image" / "pytest_outcomes.py"
    path.write_text(PYTEST_OUTCOMES)
    try:
        c = open_session(daemon)
        ran = c.tool("run_test_class", className="pytest_outcomes.TestOutcomes")["structuredContent"]
        assert (ran["run"], ran["passed"], ran["failures"], ran["errors"], ran["skipped"]) == (3, 1, 1, 0, 1)
        failing = c.tool("list_failing_tests")["structuredContent"]
        assert [(f["test"], f["outcome"]) for f in failing["failing"]
                if f["test"].startswith("pytest_outcomes")] == [
            ("pytest_outcomes.TestOutcomes.test_fails", "failure"),
            ("pytest_outcomes.TestAsync.test_async", "error")]
        skipped = c.tool("run_test_class", className="pytest_outcomes.TestSkippedClass")
        assert (skipped["structuredContent"]["notRun"], skipped["structuredContent"]["fixtureErrors"]) == (1, 0)
        assert "no database" in tool_text(skipped)
        # an async def test is never awaited: no pass that ran nothing
        unawaited = c.tool("run_test_class", className="pytest_outcomes.TestAsync")["structuredContent"]
        assert (unawaited["passed"], unawaited["errors"]) == (0, 1)
        assert "is an async def, which is not run" in unawaited["failed"][0]["message"]
        # marked to skip: not run; marked xfail: an expected failure
        marked = c.tool("run_test_class", className="pytest_outcomes.TestMarks")["structuredContent"]
        assert (marked["run"], marked["skipped"], marked["expectedFailures"], marked["failed"]) == (2, 1, 1, [])
        # setup_method/teardown_method may leave out the method argument, as pytest allows
        hooks = c.tool("run_test_class", className="pytest_outcomes.TestHooksWithoutArgument")
        assert (hooks["structuredContent"]["passed"], hooks["structuredContent"]["failed"]) == (1, []), hooks
        # and setup_class may be a plain def, given the class
        plain = c.tool("run_test_class", className="pytest_outcomes.TestPlainDefSetupClass")
        assert (plain["structuredContent"]["passed"], plain["structuredContent"]["fixtureErrors"]) == (1, 0), plain
        c.close()
    finally:
        path.unlink()


UNPRINTABLE = """\
import unittest


class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("its __str__ fails")


class UnprintableTest(unittest.TestCase):
    def test_pass(self):
        pass

    def test_raises_it(self):
        raise Unprintable()


class Shown:
    def __repr__(self):
        raise RuntimeError("its __repr__ fails")


class UnprintableSubTest(unittest.TestCase):
    def test_in_a_subtest(self):
        with self.subTest(obj=Shown()):
            self.fail("inside")


class UnsayableSkipTest(unittest.TestCase):
    def test_pass(self):
        pass

    def test_skipped_so(self):
        self.skipTest(Shown())


class NumberedSkipTest(unittest.TestCase):
    @unittest.skip(42)
    def test_skipped_by_number(self):
        pass

    def test_pass(self):
        pass
"""


def test_an_exception_whose_str_raises_is_told_as_itself_not_as_what_its_str_raised(daemon):
    # Each answer was "RuntimeError: its __str__ fails", the test run's results all lost (so
    # was a skip's whose reason's str() raised, and a skip's reason that is no text, "TypeError:
    # object of type 'int' has no len()"); a subtest whose parameters' repr raises was an error
    # of that, told through gsmcpd's frames.
    path = daemon.state / "image" / "unprintable.py"
    path.write_text(UNPRINTABLE)
    try:
        c = open_session(daemon)
        said = failed(c.tool("execute_code", code="from unprintable import Unprintable\nraise Unprintable()"),
                      "other")
        assert said.startswith("Traceback") and said.endswith("Unprintable: <exception str() failed>"), said
        ran = c.tool("run_test_class", className="unprintable.UnprintableTest")
        assert not ran.get("isError"), ran
        assert (ran["structuredContent"]["passed"], ran["structuredContent"]["errors"]) == (1, 1)
        assert "ERROR: unprintable.UnprintableTest.test_raises_it: Unprintable: <exception str() failed>" in (
            tool_text(ran))
        detail = c.tool("describe_test_failure", className="unprintable.UnprintableTest", selector="test_raises_it")
        assert "Unprintable: <exception str() failed>" in tool_text(detail), detail
        # a subtest whose parameters' repr raises: its failure, no runner frames of gsmcpd's
        ran = c.tool("run_test_class", className="unprintable.UnprintableSubTest")
        assert not ran.get("isError") and ran["structuredContent"]["failures"] == 1, ran
        detail = tool_text(c.tool("describe_test_failure", className="unprintable.UnprintableSubTest",
                                  selector="test_in_a_subtest"))
        assert detail.startswith("unprintable.UnprintableSubTest.test_in_a_subtest (<subtest parameters' "
                                 "repr() failed>): failure") and "gsmcpd" not in detail, detail
        # a skip whose reason's str() raises: a skip, the run going on
        ran = c.tool("run_test_class", className="unprintable.UnsayableSkipTest")
        assert not ran.get("isError"), ran
        assert (ran["structuredContent"]["passed"], ran["structuredContent"]["skipped"]) == (1, 1)
        # a skip reason that is no text (`@unittest.skip(42)`): said as unittest says it
        ran = c.tool("run_test_class", className="unprintable.NumberedSkipTest")
        assert not ran.get("isError"), ran
        assert (ran["structuredContent"]["passed"], ran["structuredContent"]["skipped"]) == (1, 1)
        c.close()
    finally:
        path.unlink()


def test_a_test_class_that_cannot_be_made_into_tests_costs_the_run_only_its_own_tests(daemon):
    # Its TypeError (an __init__ taking more than the method name) was the whole answer.
    path = daemon.state / "image" / "unmade_tests.py"
    path.write_text("import unittest\n\n\nclass NeedsMoreTest(unittest.TestCase):\n"
                    "    def __init__(self, methodName, extra):\n        super().__init__(methodName)\n\n"
                    "    def test_a(self):\n        pass\n\n\nclass FailsTest(unittest.TestCase):\n"
                    "    def test_b(self):\n        self.fail('b')\n")
    try:
        c = open_session(daemon)
        failing = c.tool("list_failing_tests", classNames=["unmade_tests.NeedsMoreTest", "unmade_tests.FailsTest"])
        assert not failing.get("isError"), failing
        assert [entry["test"] for entry in failing["structuredContent"]["failing"]] == [
            "unmade_tests.FailsTest.test_b"]
        assert "test class unmade_tests.NeedsMoreTest could not be made into tests" in tool_text(failing)
        c.close()
    finally:
        path.unlink()


PYTEST_FIXTURE_FAILS = """\
import unittest

import pytest


class TestNeedsDatabase:
    @classmethod
    def setup_class(cls):
        pytest.fail("no database")

    def test_a(self):
        pass


class NeedsPrinter(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        pytest.fail("no printer")

    def test_a(self):
        pass


class TestRuns:
    def test_a(self):
        pass
"""


def test_a_class_fixture_ending_the_run_is_answered_with_where_it_raised(daemon):
    # unittest's run ends on a setUpClass's SystemExit; the answer said only "SystemExit: 4",
    # naming no fixture, class or line.
    path = daemon.state / "image" / "fixture_exits.py"
    path.write_text("import sys\nimport unittest\n\n\nclass ExitsInSetUpClass(unittest.TestCase):\n"
                    "    @classmethod\n    def setUpClass(cls):\n        sys.exit(4)\n\n"
                    "    def test_a(self):\n        pass\n")
    try:
        c = open_session(daemon)
        said = failed(c.tool("run_test_class", className="fixture_exits.ExitsInSetUpClass"), "other")
        assert said.splitlines()[0] == "SystemExit: 4"
        assert f'File "{path}", line 8, in setUpClass\n    sys.exit(4)' in said, said
        c.close()
    finally:
        path.unlink()


def test_pytest_fail_in_a_class_setup_is_its_error_and_the_run_goes_on(daemon):
    # It is a BaseException of pytest's: it ended the whole run, the call answering it.
    # A pytest-style class's setup_class is listed by that name, not as unittest's setUpClass.
    path = daemon.state / "image" / "pytest_fixture_fails.py"
    path.write_text(PYTEST_FIXTURE_FAILS)
    try:
        c = open_session(daemon)
        listed = c.tool("list_failing_tests", classNames=[
            "pytest_fixture_fails.TestNeedsDatabase", "pytest_fixture_fails.NeedsPrinter",
            "pytest_fixture_fails.TestRuns"])
        assert (listed["structuredContent"]["run"], listed["structuredContent"]["notRun"]) == (1, 2), listed
        assert tool_text(listed).splitlines() == [
            "setup_class (pytest_fixture_fails.TestNeedsDatabase) (error): Failed: no database",
            "setUpClass (pytest_fixture_fails.NeedsPrinter) (error): Failed: no printer",
            "(1 run, 2 not run)"]
        ran = c.tool("run_test_class", className="pytest_fixture_fails.NeedsPrinter")["structuredContent"]
        assert (ran["run"], ran["notRun"], ran["fixtureErrors"]) == (0, 1, 1), ran
        c.close()
    finally:
        path.unlink()


PYTEST_IN_CLEANUPS = """\
import unittest

import pytest


def setUpModule():
    unittest.addModuleCleanup(pytest.skip, "nothing mounted")


class ClassCleanupFails(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.addClassCleanup(pytest.fail, "could not drop the table")

    def test_a(self):
        pass


class TestRuns:
    def test_a(self):
        pass
"""


def test_pytest_fail_or_skip_in_a_class_or_module_cleanup_is_reported_and_the_run_goes_on(daemon):
    # unittest runs cleanups catching Exceptions only: pytest's BaseException ended the
    # whole run, the call answering "Failed: could not drop the table".
    path = daemon.state / "image" / "pytest_in_cleanups.py"
    path.write_text(PYTEST_IN_CLEANUPS)
    try:
        c = open_session(daemon)
        ran = c.tool("run_test_class", className="pytest_in_cleanups.ClassCleanupFails")
        assert tool_text(ran).splitlines() == [
            "pytest_in_cleanups.ClassCleanupFails: 1 run, 1 passed, 0 failed, 0 errors, 0 skipped, "
            "1 class/module fixture errors",
            "ERROR: tearDownClass (pytest_in_cleanups.ClassCleanupFails): Failed: could not drop the table",
            "SKIPPED: tearDownModule (pytest_in_cleanups): nothing mounted"]
        listed = c.tool("list_failing_tests", classNames=[
            "pytest_in_cleanups.ClassCleanupFails", "pytest_in_cleanups.TestRuns"])["structuredContent"]
        assert (listed["run"], listed["notRun"]) == (2, 0), listed
        assert listed["failing"] == [{"test": "tearDownClass (pytest_in_cleanups.ClassCleanupFails)",
                                      "outcome": "error", "exception": "Failed",
                                      "message": "could not drop the table"}]
        c.close()
    finally:
        path.unlink()


SET_UP_PUT_IN_PLACE = """\
import unittest


class SetUpPutInPlace(unittest.TestCase):
    def setUp(self):
        self.ready = "as written"

    @classmethod
    def setUpClass(cls):
        def set_up(self):
            self.ready = "put in place"
        cls.setUp = set_up

    def test_ready(self):
        self.assertEqual(self.ready, "put in place")
"""


def test_the_set_up_a_set_up_class_puts_in_place_is_the_one_called(daemon):
    # The setUp was taken when the tests were prepared, before setUpClass ran: the
    # test failed with 'as written' != 'put in place', where unittest passes it.
    path = daemon.state / "image" / "set_up_put_in_place.py"
    path.write_text(SET_UP_PUT_IN_PLACE)
    try:
        c = open_session(daemon)
        ran = c.tool("run_test_class", className="set_up_put_in_place.SetUpPutInPlace")
        assert (ran["structuredContent"]["passed"], ran["structuredContent"]["failed"]) == (1, []), ran
        c.close()
    finally:
        path.unlink()


LOWERS_RECURSION_LIMIT = """\
import sys
import unittest


class LowersRecursionLimit(unittest.TestCase):
    def test_lowers_it(self):
        sys.setrecursionlimit(40)

    def test_after_it(self):
        pass
"""


def lowered(limit):
    """The note a RecursionError under `limit`, lowered by the session's code, comes with."""
    return ("(this session's recursion limit is %d, below the 1000 it started with: its code, a test "
            "or execute_code, lowered it with sys.setrecursionlimit, and the tools need more; "
            "`import sys; sys.setrecursionlimit(1000)` in execute_code sets it back)" % limit)


LOWERED = lowered(40)


def test_a_tool_that_a_recursion_limit_the_code_lowered_breaks_says_so(daemon):
    # A bare "RecursionError: maximum recursion depth exceeded" answered the tools the
    # lowered limit broke, or called an image module that imports well broken, for the
    # rest of the session, naming nothing that could explain it.
    path = daemon.state / "image" / "lowers_recursion_limit.py"
    path.write_text(LOWERS_RECURSION_LIMIT)
    try:
        c = open_session(daemon)
        ran = c.tool("run_test_class", className="LowersRecursionLimit")
        assert ran["structuredContent"]["passed"] == 2, ran
        definition = c.tool("get_class_definition", className="Cart")
        if sys.version_info < (3, 12):   # C calls (the ast module's...) count against the limit too
            text = failed(definition, "other")
            assert text.startswith("RecursionError: ") and text.endswith("\n" + LOWERED), text
        else:   # Python frames only: the tool fits in 40 (the next test breaks it with less)
            assert definition["structuredContent"]["class"] == "shop.models.Cart", definition
        text = failed(c.tool("run_test_class", className="CartTest"), "other")
        assert text.startswith("image module shop.test_models failed to import: RecursionError: "), text
        assert text.endswith(" " + LOWERED), text
        c.tool("execute_code", code="import sys; sys.setrecursionlimit(1000)")
        assert c.tool("run_test_class", className="CartTest")["structuredContent"]["failed"] == []
        c.close()
    finally:
        path.unlink()


LOWEST_RECURSION_LIMIT = """\
import sys
for limit in range(1, 1000):   # the lowest this code, itself some frames deep, can set
    try:
        sys.setrecursionlimit(limit)
        break
    except RecursionError:
        pass
"""


def test_a_tools_argument_check_a_lowered_recursion_limit_breaks_says_so_and_the_session_lives(daemon):
    # Under the lowest limit execute_code can set, the check of a tool's arguments met it,
    # and the worker's last resort, logging that, met it again: the worker died, its
    # client told "worker N exited with status 1 (the session's code ended its process...)".
    c = open_session(daemon)
    c.tool("execute_code", code=LOWEST_RECURSION_LIMIT)
    for _ in range(2):   # answered, and the session's worker still there to answer again
        text = failed(c.tool("get_class_definition", className="Cart"), "other")
        limit = re.search(r"\(this session's recursion limit is (\d+),", text)
        assert text.startswith("RecursionError: ") and limit, text
        assert text.endswith("\n" + lowered(int(limit.group(1)))), text
    c.close()


ASYNC_CASES = """\
import asyncio
import unittest


class AsyncInPlainCase(unittest.TestCase):
    async def test_never_run(self):
        self.fail("its body ran")


class AsyncSetUpInPlainCase(unittest.TestCase):
    async def setUp(self):
        self.ready = True

    def test_yields(self):
        yield self.ready


class AsyncCase(unittest.IsolatedAsyncioTestCase):
    async def test_passes(self):
        await asyncio.sleep(0)

    async def test_fails(self):
        await asyncio.sleep(0)
        self.assertEqual(1, 2)
"""


def test_an_async_test_of_a_plain_test_case_is_an_error_and_isolated_asyncio_ones_still_run(daemon):
    # unittest calls it, gets its coroutine and only warns: it passed, its body never run.
    path = daemon.state / "image" / "async_cases.py"
    path.write_text(ASYNC_CASES)
    try:
        c = open_session(daemon)
        # first in this worker: a warning unittest or the collector gave would be printed here
        detail = c.tool("describe_test_failure", className="async_cases.AsyncInPlainCase",
                        selector="test_never_run")["structuredContent"]
        assert (detail["outcome"], detail.get("output")) == ("error", None), detail
        ran = c.tool("run_test_class", className="async_cases.AsyncInPlainCase")
        assert (ran["structuredContent"]["passed"], ran["structuredContent"]["errors"]) == (0, 1), ran
        assert ("ERROR: async_cases.AsyncInPlainCase.test_never_run: TypeError: AsyncInPlainCase."
                "test_never_run is an async def, which is not run: a unittest.TestCase runs no "
                "event loop, so its coroutine was never run; make the class a "
                "unittest.IsolatedAsyncioTestCase") in tool_text(ran)
        set_up = c.tool("run_test_class", className="async_cases.AsyncSetUpInPlainCase")
        assert ("AsyncSetUpInPlainCase.setUp is an async def, which is not run: a unittest.TestCase "
                "runs no event loop") in tool_text(set_up)
        c.tool("compile_method", className="async_cases.AsyncSetUpInPlainCase",
               source="def setUp(self):\n    self.ready = True\n")
        yielded = c.tool("run_test_class", className="async_cases.AsyncSetUpInPlainCase")
        assert ("AsyncSetUpInPlainCase.test_yields yields, so calling it ran none of its body"
                in tool_text(yielded)), tool_text(yielded)
        run_async = c.tool("run_test_class", className="async_cases.AsyncCase")["structuredContent"]
        assert (run_async["run"], run_async["passed"], run_async["failures"]) == (2, 1, 1), run_async
        assert run_async["failed"][0]["message"] == "1 != 2"
        c.tool("execute_code", code="import gc\ngc.collect()")
        c.close()
        # the coroutine is closed, never left for the collector to warn of
        assert "was never awaited" not in daemon.log_text()
    finally:
        path.unlink()


MODULE_HOOKS = """\
import unittest

calls = []


def setup_module(module):
    calls.append("setup_module " + module.__name__)


def teardown_module():
    calls.append("teardown_module")


class TestFirst:
    def test_a(self):
        calls.append("TestFirst.test_a")


class CaseInSameModule(unittest.TestCase):
    def test_b(self):
        calls.append("CaseInSameModule.test_b")
"""

MODULE_SETUP_FAILS = """\
def setup_module():
    raise RuntimeError("no database")


class TestNeedsDatabase:
    def test_a(self):
        pass
"""


def test_setup_module_and_teardown_module_run_once_around_the_modules_tests(daemon):
    # They were never called: only unittest's setUpModule/tearDownModule were.
    image = daemon.state / "image"
    (image / "module_hooks.py").write_text(MODULE_HOOKS)
    (image / "module_setup_fails.py").write_text(MODULE_SETUP_FAILS)
    try:
        c = open_session(daemon)
        listed = c.tool("list_failing_tests", classNames=[
            "module_hooks.TestFirst", "module_setup_fails.TestNeedsDatabase",
            "module_hooks.CaseInSameModule"])["structuredContent"]
        assert (listed["run"], listed["notRun"]) == (2, 1), listed
        calls = c.tool("execute_code", code="import module_hooks\nmodule_hooks.calls")
        assert ast.literal_eval(tool_text(calls)) == [
            "setup_module module_hooks", "TestFirst.test_a", "CaseInSameModule.test_b", "teardown_module"]
        failed_setup = c.tool("run_test_class", className="module_setup_fails.TestNeedsDatabase")
        ran = failed_setup["structuredContent"]
        assert (ran["run"], ran["notRun"], ran["fixtureErrors"]) == (0, 1, 1), ran
        assert "ERROR: setup_module (module_setup_fails): RuntimeError: no database" in tool_text(failed_setup)
        c.close()
    finally:
        (image / "module_hooks.py").unlink()
        (image / "module_setup_fails.py").unlink()


def sse_messages(response):
    assert response.status == 200, response
    assert response.header("content-type") == "text/event-stream", response
    return [json.loads(line[len(b"data: "):]) for line in response.body.split(b"\n")
            if line.startswith(b"data: ")]


def test_progress_from_threads_and_from_a_thread_left_behind_keeps_the_session(keeps_its_work):
    c = keeps_its_work
    # `sent`: each value progress() said it sent (None: one it did not, having lost a race)
    spam = ("import itertools\ntick = itertools.count(1)\nsent = []\n"
            "def spam(mark):\n    for i in range(50):\n        value = next(tick)\n"
            "        sent.append(value if progress(value, message=mark * 100000) else None)\n")
    c.tool("execute_code", code="import threading\n" + spam + "stop = threading.Event()\n"
              "def chatter():\n    while not stop.is_set():\n        progress(0, message='z' * 100000)\n"
              "left = threading.Thread(target=chatter)\nleft.start()")
    code = ("ts = [threading.Thread(target=spam, args=(m,)) for m in 'ab']\n"
            "[t.start() for t in ts]; [t.join() for t in ts]\nstop.set(); left.join()\n"
            "(len(sent), sorted(v for v in sent if v))")
    messages = sse_messages(c.call("tools/call", {"name": "execute_code", "arguments": {"code": code},
                                                  "_meta": {"progressToken": "pt"}}))
    progress = [m["params"] for m in messages[:-1]]
    count, sent = ast.literal_eval(tool_text(messages[-1]["result"]))
    values = [p["progress"] for p in progress]
    assert count == 100 and {p["progressToken"] for p in progress} == {"pt"}
    # only what the call's threads said they sent arrived (the router paces it: not all
    # of it), never the left thread's; the last one sent among it, before the result
    assert all(p["message"][0] in "ab" for p in progress) and set(values) <= set(sent)
    assert values[-1] == sent[-1]
    assert values == sorted(set(values))               # each above the last, as MCP requires


def test_progress_that_does_not_increase_is_not_sent_to_the_client(keeps_its_work):
    code = "progress(1)\nprogress(1)\nprogress(0.5)\nprogress(3)\n'x'"
    messages = sse_messages(keeps_its_work.call("tools/call", {
        "name": "execute_code", "arguments": {"code": code}, "_meta": {"progressToken": "t"}}))
    assert tool_text(messages[-1]["result"]) == "'x'"
    assert [m["params"]["progress"] for m in messages[:-1]] == [1, 3]


def test_a_child_forked_by_the_code_never_serves_the_session(keeps_its_work):
    c = keeps_its_work
    pid = worker_pid(c)
    child = c.tool("execute_code", code="import os\ncount = 0\nchild = os.fork()\nchild")
    assert int(tool_text(child)) > 0                   # the parent's answer
    for n in range(1, 7):
        answer = c.tool("execute_code", code="count += 1\n(os.getpid(), count)")
        assert tool_text(answer) == f"({pid}, {n})"


def test_multiprocessing_with_fork_still_works_in_the_code(keeps_its_work):
    code = ("import multiprocessing\nctx = multiprocessing.get_context('fork')\n"
            "with ctx.Pool(2) as pool:\n    mapped = pool.map(abs, [-1, -2, -3])\n"
            "queue = ctx.Queue()\nchild = ctx.Process(target=queue.put, args=(42,))\nchild.start()\n"
            "got = queue.get(timeout=20)\nchild.join()\n(mapped, got, child.exitcode)")
    assert tool_text(keeps_its_work.tool("execute_code", code=code)) == "([1, 2, 3], 42, 0)"


def test_output_too_large_for_a_frame_is_cut_with_a_note(keeps_its_work):
    result = keeps_its_work.tool("execute_code", code="print('x' * 40_000_000)")
    assert not result.get("isError"), result
    stdout = result["structuredContent"]["stdout"]
    assert stdout == "x" * 1_000_000 + ("\n[... 39,000,001 more characters of stdout cut: "
                                         "execute_code keeps the first 1,000,000]\n")


def test_output_utf8_cannot_carry_is_shown_escaped(keeps_its_work):
    result = keeps_its_work.tool("execute_code", code="print('\\ud800')")
    assert not result.get("isError") and result["structuredContent"]["stdout"] == "\\ud800\n"


def test_any_tool_answer_utf8_cannot_carry_is_sent_with_its_escape(keeps_its_work):
    # The router refuses such a string in a request (-32700), but the user's code can
    # still make one: a live docstring that describe_class then shows. It was answered
    # "the result cannot be sent: not JSON: 'utf-8' codec can't encode ...", kind other.
    keeps_its_work.tool("execute_code",
              code="from shop.models import Cart\nCart.__doc__ = 'odd ' + chr(0xD800)")
    described = keeps_its_work.tool("describe_class", className="Cart")
    assert not described.get("isError") and described["structuredContent"]["doc"] == "odd \\ud800", described
    keeps_its_work.tool("execute_code", code="Cart.__doc__ = None")


def test_print_as_the_last_line_shows_no_none(keeps_its_work):
    assert tool_text(keeps_its_work.tool("execute_code", code="print('x')")) == "x"


def test_progress_of_nan_is_a_clear_error_in_the_users_code(keeps_its_work):
    response = keeps_its_work.call("tools/call", {"name": "execute_code",
                                                  "arguments": {"code": "progress(float('nan'))"},
                                                  "_meta": {"progressToken": "p"}})
    text = failed(response.json()["result"], "other")
    assert text.endswith("ValueError: progress values must be finite numbers, not nan")
    assert "main.py" not in text and "FrameError" not in text


START_SLEEP = "import subprocess\nsleeper = subprocess.Popen(['sleep', '300'])\nsleeper.pid"

# Two processes that leave the worker's process group: a child in a session of its own,
# and a double-forked daemon (its first fork exits, so it is an orphan from the start).
# The value is [pid, ...] of every process started, left running.
START_ESCAPERS = """
import os, subprocess
SLEEP = ['sleep', '600']   # not sys.executable: a per-user worker's account may not run it
lone = subprocess.Popen(SLEEP, start_new_session=True)
r, w = os.pipe()
first = os.fork()
if first == 0:
    os.setsid()
    if os.fork() == 0:
        os.write(w, b'%d' % os.getpid())
        os.execvp(SLEEP[0], SLEEP)
    os._exit(0)
os.close(w)
os.waitpid(first, 0)
daemon = int(os.read(r, 32))
os.close(r)
[lone.pid, daemon]
"""


def start(client, code):
    pids = json.loads(tool_text(client.tool("execute_code", code=code)).replace("(", "[").replace(")", "]"))
    pids = pids if isinstance(pids, list) else [pids]
    assert all(pid_alive(pid) for pid in pids), pids
    return pids


def group_of(pid):
    with open("/proc/%d/stat" % pid) as stat:
        return int(stat.read().rsplit(")", 1)[1].split()[2])


def test_what_the_code_started_ends_with_its_session(c):
    # The worker leads a process group of its own, which the code's children inherit.
    [pid] = start(c, START_SLEEP)
    assert c.delete().status == 200
    assert wait_until(lambda: not pid_alive(pid)), "sleep %d outlived its session" % pid


def test_what_left_the_group_lives_with_its_session_and_ends_with_it(c):
    lone, daemon = start(c, START_ESCAPERS)
    worker = worker_pid(c)
    assert group_of(worker) == worker
    assert group_of(lone) != worker and group_of(daemon) != worker   # out of the worker's group
    # The worker is a subreaper: the orphaned daemon is its child, not init's, and lives
    # on with the session.
    assert parent_of(daemon) == worker
    assert tool_text(c.tool("execute_code", code="6 * 7")) == "42"
    assert pid_alive(lone) and pid_alive(daemon)
    assert c.delete().status == 200
    for pid in (lone, daemon):
        assert wait_until(lambda: not pid_alive(pid)), "%d outlived its session" % pid


# Then the code lowers its descriptor limit (LIMITS: the soft one; both, for good) and opens
# files up to it (they stay open).
FILL_DESCRIPTORS = """
import os, resource
resource.setrlimit(resource.RLIMIT_NOFILE, %s)
held = []
try:
    while True:
        held.append(os.open(os.devnull, os.O_RDONLY))
except OSError as error:
    print(error)
"""


LIMITS = {"soft": "(64, resource.getrlimit(resource.RLIMIT_NOFILE)[1])", "soft and hard": "(64, 64)"}


@pytest.mark.parametrize("lowered", sorted(LIMITS))
def test_what_the_code_started_ends_with_its_session_when_the_code_took_every_descriptor(daemon, lowered):
    # The worker's end listed /proc to find them: EMFILE, a traceback in the log, exit status
    # 1 in place of its own group kill, and its children left to the spawner's sweep. Now the
    # soft limit is raised back first; a hard one lowered too leaves them to the spawner still.
    logged = len(daemon.log_text())
    client = open_session(daemon)
    worker = worker_pid(client)
    pids = start(client, START_SLEEP) + start(client, START_ESCAPERS)
    assert "Too many open files" in tool_text(client.tool("execute_code", code=FILL_DESCRIPTORS % LIMITS[lowered]))
    assert client.delete().status == 200
    assert wait_until(lambda: not pid_alive(worker))
    for pid in pids:
        assert wait_until(lambda: not pid_alive(pid)), "%d outlived its session" % pid
    assert "Traceback" not in daemon.log_text()[logged:]
    client.close()


CRASHES = {  # a worker that dies on its own, mid-call, by the user's code
    "os._exit": "import os\nos._exit(3)",
    "kill -9 of itself": "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)",
    # Python's default for SIGUSR1 ends the process: the code's own, not the router's hard break
    "SIGUSR1 of itself": "import os, signal\nos.kill(os.getpid(), signal.SIGUSR1)",
    "segfault": "import ctypes\nctypes.string_at(0)",
}
TOLD = {
    "os._exit": "exited with status 3 (the session's code ended its process",
    "kill -9 of itself": "was killed by signal 9 (SIGKILL: kill -9, the kernel's OOM killer",
    "SIGUSR1 of itself": "ended by signal 10 (SIGUSR1: sent by another process (kill), or by the session's code",
    "segfault": "ended by signal 11 (SIGSEGV: a crash in native code",
}


@pytest.mark.parametrize("death", sorted(CRASHES) + ["SIGKILL from outside"])
def test_what_the_code_started_ends_with_a_worker_that_died_on_its_own(daemon, death):
    # No end_process ran: the spawner, a subreaper too, adopts what the worker left and
    # kills it.
    client = Client(daemon.port)
    client.initialize()
    worker = worker_pid(client)
    pids = start(client, START_SLEEP) + start(client, START_ESCAPERS)
    if death in CRASHES:
        reply = client.call("tools/call", {"name": "execute_code", "arguments": {"code": CRASHES[death]}}).json()
        assert reply["error"]["code"] == -32003, reply
        # The client is told how it died (the spawner reports its status), not only that it did.
        assert reply["error"]["message"].startswith("session ended: worker %d %s" % (worker, TOLD[death])), reply
        assert client.call("ping").status == 404
    else:
        os.kill(worker, signal.SIGKILL)
    assert wait_until(lambda: not pid_alive(worker))
    for pid in pids:
        assert wait_until(lambda: not pid_alive(pid)), "%d outlived its worker" % pid
    client.close()


# A chain of sleepers in the worker's group, each the parent of the next: as deep as a
# fork bomb's tree, in processes this host can spare. Its pgid once it stands.
START_CHAIN = r"""
import os, subprocess, time
link = 'n=$1; if [ "$n" -gt 0 ]; then sh -c "$0" "$0" $((n - 1)) & fi; exec sleep 300'
subprocess.Popen(['sh', '-c', link, link, '150'])
os.getpgrp()
"""


def test_a_deep_tree_the_code_started_ends_with_a_worker_killed_from_outside(daemon):
    # As the kernel's OOM killer would kill it. The spawner killed what it adopted one
    # generation per sweep (spaced to spare the CPU): 150 deep took seconds, a fork bomb
    # could outrun it. Now the worker's group goes at once.
    client = Client(daemon.port)
    client.initialize()
    group = int(tool_text(client.tool("execute_code", code=START_CHAIN)))
    assert wait_until(lambda: len(members_of(group)) > 150)
    os.kill(group, signal.SIGKILL)
    assert wait_until(lambda: not members_of(group), timeout=5), "%d outlived their worker" % len(
        members_of(group))
    client.close()


def members_of(group):
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open("/proc/%s/stat" % name) as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == group and fields[0] != "Z":
                found.append(int(name))
    return found


def test_what_the_code_started_ends_with_the_daemon(tmp_path):
    with Daemon(tmp_path, env={"GS_MCP_SPARE_WORKERS": "1"}) as daemon:
        client = Client(daemon.port)
        client.initialize()
        pids = start(client, START_SLEEP) + start(client, START_ESCAPERS)
    for pid in pids:
        assert wait_until(lambda: not pid_alive(pid)), "%d outlived the daemon" % pid


# Shared memory and a forkserver-context semaphore: multiprocessing's resource tracker,
# a process the code starts, unlinks them if their owner exits without doing so. They are
# files in /dev/shm (tmpfs: memory) and outlived the session, tracker killed with the rest.
LEAVE_IN_DEV_SHM = """
import multiprocessing, multiprocessing.shared_memory
block = multiprocessing.shared_memory.SharedMemory(create=True, size=1 << 20)
lock = multiprocessing.get_context("forkserver").Lock()
["/dev/shm/" + block.name, "/dev/shm/sem." + lock._semlock.name.lstrip("/")]
"""


def test_shared_memory_and_semaphores_the_code_left_are_released_with_its_session(c):
    worker = worker_pid(c)
    left = json.loads(tool_text(c.tool("execute_code", code=LEAVE_IN_DEV_SHM)).replace("'", '"'))
    assert all(os.path.exists(path) for path in left), left
    assert c.delete().status == 200
    assert wait_until(lambda: not pid_alive(worker))
    assert wait_until(lambda: not any(os.path.exists(path) for path in left)), [
        path for path in left if os.path.exists(path)]


def test_abort_undoes_a_patch_seen_through_the_workspaces_own_import(daemon):
    # The abort re-imports the module as a new object; the workspace's `models` and
    # `Cart` named the old one, the patch the abort had undone still showing through them.
    c = open_session(daemon)
    c.tool("execute_code", code="import sys\nimport shop.models as models\nfrom shop.models import Cart\n"
                                "models.Cart.patched = True")
    c.tool("abort")
    after = c.tool("execute_code", code="(hasattr(models.Cart, 'patched'), hasattr(Cart, 'patched'), "
                                        "models is sys.modules['shop.models'])")
    assert tool_text(after) == "(False, False, True)"
    c.close()


def test_an_image_module_failing_to_import_or_to_compile_shows_its_frames_not_the_servers(tmp_path):
    # Run, then compiled, in the view loader's own frame, its error showed importlib's frames
    # and gsmcpd/image/view.py's before the module's line.
    image = tmp_path / "image"
    image.mkdir()
    (image / "boom.py").write_text('X = 1\nraise ValueError("boom")\n')
    (image / "broken.py").write_text("X = 1\ndef f(:\n    pass\n")
    with Daemon(tmp_path, env={"GS_MCP_IMAGE": str(image)}) as running:
        c = open_session(running)
        raised = failed(c.tool("execute_code", code="import boom"), "other")
        uncompiled = failed(c.tool("execute_code", code="import broken"), "other")
        c.close()
    assert raised == ('Traceback (most recent call last):\n'
                      '  File "<workspace-1>", line 1, in <module>\n'
                      '    import boom\n'
                      '  File "%s", line 2, in <module>\n'
                      '    raise ValueError("boom")\n'
                      'ValueError: boom' % (image / "boom.py")), raised
    assert uncompiled.startswith('Traceback (most recent call last):\n'
                                 '  File "<workspace-2>", line 1, in <module>\n'
                                 '    import broken\n'
                                 '  File "%s", line 2\n' % (image / "broken.py")), uncompiled
    assert "importlib" not in uncompiled and "gsmcpd" not in uncompiled, uncompiled
    assert uncompiled.endswith("SyntaxError: invalid syntax"), uncompiled
