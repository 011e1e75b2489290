"""The testing tools on pytest-style classes (plain Test* classes) beside unittest
ones: listing, running, fixtures, bare-assert messages; a test that raises
KeyboardInterrupt (an error of its own) and a break during a run (the end of it)."""

import gc
import unittest
import json
import warnings

import pytest

from gsmcpd.worker.toolset import REPEAT_CAP, HardBreak, SoftBreak, mark_soft_break, repeated
from gsmcpd.worker.toolsets.testing import _Result

from helpers import cut_notes
from test_tools_support import FILES, Client, text, views, write_image  # noqa: F401  (fixtures)

PLAIN = '''\
import unittest

from zoo.animals import Dog


class TestPlain:
    calls = []

    @classmethod
    def setup_class(cls):
        cls.calls.append("setup_class")

    @classmethod
    def teardown_class(cls):
        cls.calls.append("teardown_class")

    def setup_method(self, method):
        self.dog = Dog("rex")

    def teardown_method(self, method):
        self.calls.append(method.__name__)

    def test_noise(self):
        assert self.dog.noise() == "woof"

    def test_bare_assert(self):
        assert self.dog.noise() == "meow"

    def test_with_message(self):
        assert False, "dogs do not meow"

    def test_error(self):
        return {}["missing"]


class TestHasInit:
    def __init__(self):
        self.x = 1

    def test_x(self):
        pass


class Helper:
    def test_x(self):
        pass


class TestNoTests:
    def check(self):
        pass


class CountedTest(unittest.TestCase):
    setups = 0

    @classmethod
    def setUpClass(cls):
        cls.setups += 1

    def test_one(self):
        self.assertEqual(self.setups, 1)

    def test_two(self):
        assert self.setups == 2
'''


@pytest.fixture
def client(tmp_path, views):
    image = write_image(tmp_path / "image", {**FILES, "zoo/test_plain.py": PLAIN})
    return Client(views(image))


def test_list_test_classes_has_both_styles_and_only_real_test_classes(client):
    names = client.ok("list_test_classes")["structuredContent"]["testClasses"]
    assert sorted(names) == ["zoo.test_plain.CountedTest", "zoo.test_plain.TestPlain",
                             "zoo.test_zoo.ZooTest"]
    for not_a_test in ("TestHasInit", "Helper", "TestNoTests"):
        message = client.error("run_test_class", "notFound", className=not_a_test)
        # It said what a test class is, not where to find one.
        assert "not a test class" in message and message.endswith("; list_test_classes shows them")


def test_a_module_given_as_a_test_class_is_pointed_to_the_test_classes(client):
    # It pointed to list_dictionary_entries, as the browsing tools do: no help to run a test.
    pointed = "zoo.test_plain is a dictionary (image module), not a class: list_test_classes shows " \
              "the image's test classes"
    assert client.error("run_test_class", "notFound", className="zoo.test_plain") == (
        f"zoo defines no class test_plain; {pointed}")
    assert client.error("run_test_method", "notFound", className="zoo.test_plain", selector="test_two") == (
        f"zoo defines no class test_plain; {pointed}")
    assert client.error("describe_test_failure", "notFound", className="zoo.test_plain",
                        selector="test_two").endswith(pointed)
    assert client.error("list_failing_tests", "notFound", classNames=["zoo.test_plain"]).endswith(pointed)
    # A bare module name was pointed to two tools in one sentence: "list_test_classes shows the
    # image's test classes; list_all_classes shows them".
    assert client.error("run_test_class", "notFound", className="zoo") == (
        "no class named zoo in the image or builtins; zoo is a dictionary (image module), not a class: "
        "list_test_classes shows the image's test classes")
    assert client.error("describe_test_failure", "notFound", className="zoo", selector="test_two") == (
        "no class named zoo in the image or builtins; zoo is a dictionary (image module), not a class: "
        "list_test_classes shows the image's test classes")
    assert client.error("run_test_class", "notFound", className="NoSuchTest") == (
        "no class named NoSuchTest in the image or builtins; list_test_classes shows them")
    assert client.error("describe_class", "notFound", className="zoo.test_plain").endswith(
        "not a class: list_dictionary_entries shows its functions and classes")


def test_run_a_pytest_style_class_like_pytest(client):
    result = client.ok("run_test_class", className="TestPlain")["structuredContent"]
    assert (result["run"], result["passed"], result["failures"], result["errors"]) == (4, 1, 2, 1)
    failed = {f["test"]: f for f in result["failed"]}
    bare = failed["zoo.test_plain.TestPlain.test_bare_assert"]
    assert (bare["outcome"], bare["exception"]) == ("failure", "AssertionError")
    assert bare["message"] == 'assert self.dog.noise() == "meow" failed'
    assert failed["zoo.test_plain.TestPlain.test_with_message"]["message"] == "dogs do not meow"
    assert failed["zoo.test_plain.TestPlain.test_error"]["exception"] == "KeyError"
    # Definition order, one progress step per test.
    assert [n["params"]["message"].rpartition(".")[2] for n in client.progress] == [
        "test_noise", "test_bare_assert", "test_with_message", "test_error"]
    calls = client.view.module("zoo.test_plain").TestPlain.calls
    assert calls == ["setup_class", "test_noise", "test_bare_assert", "test_with_message",
                     "test_error", "teardown_class"]


def test_run_method_describe_failure_and_list_failing_on_pytest_style(client):
    passed = client.ok("run_test_method", className="TestPlain", selector="test_noise")
    assert (passed["structuredContent"]["run"], passed["structuredContent"]["passed"]) == (1, 1)
    detail = client.ok("describe_test_failure", className="zoo.test_plain.TestPlain",
                       selector="test_bare_assert")
    assert detail["structuredContent"]["message"] == 'assert self.dog.noise() == "meow" failed'
    assert "test_plain.py" in detail["structuredContent"]["traceback"]
    assert "message: assert self.dog.noise()" in text(detail)
    client.error("run_test_method", "notFound", className="TestPlain", selector="test_nope")
    failing = client.ok("list_failing_tests")["structuredContent"]["failing"]
    assert sorted(f["test"] for f in failing) == [
        "zoo.test_plain.CountedTest.test_two",
        "zoo.test_plain.TestPlain.test_bare_assert", "zoo.test_plain.TestPlain.test_error",
        "zoo.test_plain.TestPlain.test_with_message",
        "zoo.test_zoo.ZooTest.test_error", "zoo.test_zoo.ZooTest.test_fail"]


PYTEST_OUTCOMES = {"zoo/test_outcomes.py": """\
import asyncio
import unittest

import pytest


class TestOutcomes:
    def test_skips(self):
        pytest.skip("not on this host")

    def test_fails(self):
        pytest.fail("explicitly")

    def test_xfails(self):
        pytest.xfail("known bug")

    def test_passes(self):
        pass


class TestSkippedClass:
    @classmethod
    def setup_class(cls):
        pytest.skip("no database")

    def test_a(self):
        pass


class TestMarks:
    ran = []

    @pytest.mark.skip(reason="breaks the database")
    def test_skip(self):
        TestMarks.ran.append("skip")

    @pytest.mark.skipif("sys.platform != 'nowhere'", reason="not here")
    def test_skipif_string(self):
        TestMarks.ran.append("skipif")

    @pytest.mark.skipif(False, reason="never")
    def test_skipif_false_runs(self):
        TestMarks.ran.append("ran")

    @pytest.mark.xfail(reason="known bug")
    def test_xfail(self):
        assert False

    @pytest.mark.xfail(raises=KeyError)
    def test_xfail_other_error(self):
        raise ValueError("not the expected one")

    @pytest.mark.xfail(strict=True)
    def test_xpass_strict(self):
        pass

    @pytest.mark.xfail
    def test_xpass(self):
        pass


@pytest.mark.skip(reason="whole class")
class TestSkippedByMark:
    def test_a(self):
        TestMarks.ran.append("class")


class TestHooksWithoutArgument:
    calls = []

    def setup_method(self):
        self.calls.append("setup")

    def teardown_method(self):
        self.calls.append("teardown")

    def test_a(self):
        assert self.calls == ["setup"]


class TestPlainDefSetupClass:
    def setup_class(cls):
        cls.ready = True

    def teardown_class(cls):
        cls.ready = "torn down"

    def test_ready(self):
        assert self.ready is True


class TestAsync:
    ran = []

    async def test_async(self):
        TestAsync.ran.append("body")


class TestFailedClass:
    calls = []

    @classmethod
    def setup_class(cls):
        pytest.fail("no database")

    @classmethod
    def teardown_class(cls):
        cls.calls.append("teardown_class")

    def test_a(self):
        self.calls.append("test_a")

    def test_b(self):
        self.calls.append("test_b")


class TestXfailedClass:
    @classmethod
    def setup_class(cls):
        pytest.xfail("known bug")

    def test_a(self):
        pass


class TestFailedTeardown:
    def teardown_class(cls):
        pytest.fail("could not clean up")

    def test_a(self):
        pass


class FailedCase(unittest.TestCase):
    calls = []

    @classmethod
    def setUpClass(cls):
        cls.addClassCleanup(cls.calls.append, "class cleanup")
        pytest.fail("no printer")

    def test_a(self):
        self.calls.append("test_a")


class SkippedCase(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        pytest.skip("no scanner")

    def test_a(self):
        pass


class AsyncInPlainCase(unittest.TestCase):
    ran = []

    async def test_never_run(self):
        AsyncInPlainCase.ran.append("body")

    def test_sync(self):
        pass


class AsyncSetUpInPlainCase(unittest.TestCase):
    ran = []

    async def setUp(self):
        AsyncSetUpInPlainCase.ran.append("setUp")

    def test_needs_set_up(self):
        AsyncSetUpInPlainCase.ran.append("test")


class AsyncTearDownInPlainCase(unittest.TestCase):
    async def tearDown(self):
        pass

    def test_passes(self):
        pass


class YieldingCase(unittest.TestCase):
    ran = []

    def test_yields(self):
        YieldingCase.ran.append("body")
        yield 1


class TestYielding:
    ran = []

    def test_yields(self):
        TestYielding.ran.append("body")
        yield 1


class AsyncCase(unittest.IsolatedAsyncioTestCase):
    ran = []

    async def asyncSetUp(self):
        await asyncio.sleep(0)
        AsyncCase.ran.append("asyncSetUp")

    async def test_passes(self):
        await asyncio.sleep(0)
        AsyncCase.ran.append("test_passes")

    async def test_fails(self):
        await asyncio.sleep(0)
        self.assertEqual(1, 2)


class OutcomesInUnittest(unittest.TestCase):
    def test_skips(self):
        pytest.skip("in a TestCase too")

    def test_subtest_fails(self):
        with self.subTest(i=1):
            pytest.fail("in a subtest")
"""}


@pytest.fixture
def outcomes(tmp_path, views):
    return Client(views(write_image(tmp_path / "image", {**FILES, **PYTEST_OUTCOMES})))


def test_pytest_skip_fail_and_xfail_are_the_outcomes_pytest_gives_them(outcomes):
    # They raise BaseExceptions of pytest's own, which unittest counts as errors: a
    # skipped test was reported as an error, and a class skipped in setup_class ended
    # the whole run.
    result = outcomes.ok("run_test_class", className="TestOutcomes")["structuredContent"]
    counts = ("run", "passed", "failures", "errors", "skipped", "expectedFailures")
    assert {k: result[k] for k in counts} == dict(zip(counts, (4, 1, 1, 0, 1, 1)))
    assert [(f["test"].rpartition(".")[2], f["outcome"], f["message"]) for f in result["failed"]] == [
        ("test_fails", "failure", "explicitly")]
    skipped = outcomes.ok("describe_test_failure", className="TestOutcomes", selector="test_skips")
    assert skipped["structuredContent"]["outcome"] == "skipped"
    in_class = outcomes.ok("run_test_class", className="TestSkippedClass")["structuredContent"]
    assert (in_class["run"], in_class["notRun"], in_class["skipped"], in_class["fixtureErrors"]) == (0, 1, 0, 0)
    assert "no database" in text(outcomes.ok("run_test_class", className="TestSkippedClass"))
    in_unittest = outcomes.ok("run_test_class", className="OutcomesInUnittest")["structuredContent"]
    assert (in_unittest["skipped"], in_unittest["failures"], in_unittest["errors"]) == (1, 1, 0)


@pytest.mark.parametrize("class_name, tests, hook, message", [
    ("TestFailedClass", 2, "setup_class (zoo.test_outcomes.TestFailedClass)", "no database"),
    ("FailedCase", 1, "setUpClass (zoo.test_outcomes.FailedCase)", "no printer")])
def test_pytest_fail_in_a_class_setup_is_its_error_and_the_run_goes_on(
        outcomes, class_name, tests, hook, message):
    # It is a BaseException of pytest's: it ended the whole run, the call answering it.
    ran = outcomes.ok("run_test_class", className=class_name)
    result = ran["structuredContent"]
    assert {k: result[k] for k in ("run", "notRun", "fixtureErrors")} == {
        "run": 0, "notRun": tests, "fixtureErrors": 1}
    assert result["failed"] == [{"test": hook, "outcome": "error", "exception": "Failed",
                                 "message": message}]
    assert f"ERROR: {hook}: Failed: {message}" in text(ran).splitlines()
    listed = outcomes.ok("list_failing_tests", classNames=[class_name, "TestOutcomes"])["structuredContent"]
    assert (listed["run"], [f["test"] for f in listed["failing"]]) == (
        4, [hook, "zoo.test_outcomes.TestOutcomes.test_fails"])
    detail = outcomes.ok("describe_test_failure", className=class_name, selector="test_a")
    assert detail["structuredContent"]["traceback"].splitlines()[-1] == f"Failed: {message}"


def test_a_failed_class_setup_runs_no_test_nor_teardown_but_its_class_cleanups(outcomes):
    module = outcomes.view.module("zoo.test_outcomes")
    assert outcomes.ok("run_test_class", className="TestFailedClass")["structuredContent"]["notRun"] == 2
    assert module.TestFailedClass.calls == []   # as after any error in setup_class
    outcomes.ok("run_test_class", className="FailedCase")
    assert module.FailedCase.calls == ["class cleanup"]
    # the class's own fixtures are back in place after the run
    assert isinstance(vars(module.FailedCase)["setUpClass"], classmethod)
    assert "tearDownClass" not in vars(module.FailedCase)


LOCKED = '''\
import unittest


class Locked(type):
    """Lets no one change a class's methods once it is made (unittest sets none)."""

    def __setattr__(cls, name, value):
        if callable(getattr(cls, name, None)):
            raise TypeError(f"{cls.__name__}.{name} is locked")
        super().__setattr__(name, value)


class LockedCase(unittest.TestCase, metaclass=Locked):
    @classmethod
    def setUpClass(cls):
        cls._ready = True

    def test_ready(self):
        self.assertTrue(self._ready)
'''


def test_a_class_that_refuses_its_fixture_being_wrapped_runs_as_unittest_runs_it(tmp_path, views):
    # Its setUpClass, set in place for the run to call it through pytest's outcomes, raised
    # out of the whole run (kind other: "TypeError: LockedCase.setUpClass is locked"); unittest runs it.
    client = Client(views(write_image(tmp_path / "image", {"test_locked.py": LOCKED})))
    result = client.ok("run_test_class", className="LockedCase")["structuredContent"]
    assert (result["run"], result["passed"], result["fixtureErrors"]) == (1, 1, 0)


def test_pytest_fail_in_a_class_teardown_is_its_error_after_the_tests_passed(outcomes):
    result = outcomes.ok("run_test_class", className="TestFailedTeardown")["structuredContent"]
    assert {k: result[k] for k in ("run", "passed", "fixtureErrors")} == {"run": 1, "passed": 1, "fixtureErrors": 1}
    assert result["failed"] == [{"test": "teardown_class (zoo.test_outcomes.TestFailedTeardown)",
                                 "outcome": "error", "exception": "Failed", "message": "could not clean up"}]


@pytest.mark.parametrize("class_name, hook, reason", [
    ("SkippedCase", "setUpClass", "no scanner"),          # a TestCase's own setUpClass: it ended the run
    ("TestXfailedClass", "setup_class", "xfail: known bug")])   # pytest reports the tests xfailed, not failed
def test_pytest_skip_or_xfail_in_a_class_setup_skips_its_tests(outcomes, class_name, hook, reason):
    result = outcomes.ok("run_test_class", className=class_name)["structuredContent"]
    assert {k: result[k] for k in ("run", "notRun", "fixtureErrors")} == {"run": 0, "notRun": 1, "fixtureErrors": 0}
    assert result["failed"] == [{"test": f"{hook} (zoo.test_outcomes.{class_name})",
                                 "outcome": "skipped", "message": reason}]


def test_pytest_skip_skipif_and_xfail_marks_are_kept_as_pytest_keeps_them(outcomes):
    # Marks were ignored: a test marked to skip ran (side effects and all) and an xfail
    # one counted as a failure.
    result = outcomes.ok("run_test_class", className="TestMarks")["structuredContent"]
    counts = ("run", "passed", "failures", "errors", "skipped", "expectedFailures", "unexpectedSuccesses")
    assert {k: result[k] for k in counts} == dict(zip(counts, (7, 2, 0, 1, 2, 1, 1)))
    assert sorted((f["test"].rpartition(".")[2], f["outcome"]) for f in result["failed"]) == [
        ("test_xfail_other_error", "error"), ("test_xpass_strict", "unexpectedSuccess")]
    skipped = outcomes.ok("describe_test_failure", className="TestMarks", selector="test_skip")
    assert skipped["structuredContent"]["message"] == "breaks the database"
    whole = outcomes.ok("run_test_class", className="TestSkippedByMark")["structuredContent"]
    assert (whole["run"], whole["skipped"]) == (1, 1)
    assert outcomes.view.module("zoo.test_outcomes").TestMarks.ran == ["ran"]


@pytest.mark.parametrize("class_name, selector, reason", [
    ("TestMarks", "test_skip", "breaks the database"),       # a skip mark
    ("TestOutcomes", "test_skips", "not on this host"),      # pytest.skip in the body
    ("SkippedCase", "test_a", "no scanner")])                # its class's setUpClass skipped it
def test_describe_test_failure_of_a_skipped_test_says_why_in_its_text(outcomes, class_name, selector, reason):
    # The reason was in structuredContent only: the text a model reads said "skipped (no
    # failure)" and not why, though run_test_class's text names a skipping fixture's reason.
    skipped = outcomes.ok("describe_test_failure", className=class_name, selector=selector)
    assert skipped["structuredContent"]["message"] == reason
    assert text(skipped).splitlines()[1:] == [f"message: {reason}"]


def test_setup_and_teardown_hooks_are_called_as_pytest_calls_them(outcomes):
    # pytest passes the test method only to a hook that takes it; it was passed always,
    # so every test of a class writing `def setup_method(self):` was a TypeError.
    result = outcomes.ok("run_test_class", className="TestHooksWithoutArgument")["structuredContent"]
    assert (result["passed"], result["failed"]) == (1, [])
    assert outcomes.view.module("zoo.test_outcomes").TestHooksWithoutArgument.calls == ["setup", "teardown"]
    # setup_class/teardown_class written as plain defs get the class, as pytest gives it
    plain = outcomes.ok("run_test_class", className="TestPlainDefSetupClass")["structuredContent"]
    assert (plain["passed"], plain["fixtureErrors"], plain["failed"]) == (1, 0, [])
    assert outcomes.view.module("zoo.test_outcomes").TestPlainDefSetupClass.ready == "torn down"


def test_an_async_pytest_style_test_is_an_error_not_a_pass_that_ran_nothing(outcomes):
    # Its coroutine was never awaited: the test passed with its body never run.
    result = outcomes.ok("run_test_class", className="TestAsync")["structuredContent"]
    assert (result["passed"], result["errors"]) == (0, 1)
    assert result["failed"][0]["message"] == (
        "TestAsync.test_async is an async def, which is not run: a pytest-style class runs "
        "no event loop, so its coroutine was never run; make the class a "
        "unittest.IsolatedAsyncioTestCase, or call asyncio.run() in a plain def test (pytest "
        "needs a plugin to run it)")
    assert outcomes.view.module("zoo.test_outcomes").TestAsync.ran == []


def test_an_async_test_of_a_plain_test_case_is_an_error_not_a_pass_that_ran_nothing(outcomes):
    # unittest calls it, gets its coroutine and only warns: it passed, its body never run.
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        result = outcomes.ok("run_test_class", className="AsyncInPlainCase")["structuredContent"]
        gc.collect()
    assert (result["run"], result["passed"], result["errors"], result["failures"]) == (2, 1, 1, 0)
    assert result["failed"] == [{
        "test": "zoo.test_outcomes.AsyncInPlainCase.test_never_run", "outcome": "error",
        "exception": "TypeError",
        "message": "AsyncInPlainCase.test_never_run is an async def, which is not run: a "
                   "unittest.TestCase runs no event loop, so its coroutine was never run; make the "
                   "class a unittest.IsolatedAsyncioTestCase, which runs async def tests (and "
                   "asyncSetUp/asyncTearDown) in an event loop"}]
    assert outcomes.view.module("zoo.test_outcomes").AsyncInPlainCase.ran == []
    # no "coroutine ... was never awaited" on top, nor unittest's DeprecationWarning
    assert [str(w.message) for w in warned] == []
    detail = outcomes.ok("describe_test_failure", className="AsyncInPlainCase",
                         selector="test_never_run")["structuredContent"]
    assert detail["outcome"] == "error" and "output" not in detail   # nor a warning printed


@pytest.mark.parametrize("name, part, fix", [
    ("AsyncSetUpInPlainCase", "setUp", "name it asyncSetUp, which it runs before each test in an event loop"),
    ("AsyncTearDownInPlainCase", "tearDown", "name it asyncTearDown, which it runs after each test in an event loop"),
])
def test_an_async_set_up_or_tear_down_of_a_plain_test_case_is_the_tests_error(outcomes, name, part, fix):
    # unittest calls it and drops its coroutine without a word: the test ran unset-up.
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        result = outcomes.ok("run_test_class", className=name)["structuredContent"]
        gc.collect()
    assert (result["run"], result["passed"], result["errors"]) == (1, 0, 1)
    assert result["failed"][0]["message"] == (
        f"{name}.{part} is an async def, which is not run: a unittest.TestCase runs no event loop, "
        f"so its coroutine was never run; make the class a unittest.IsolatedAsyncioTestCase and {fix}")
    assert [str(w.message) for w in warned] == []
    assert outcomes.view.module("zoo.test_outcomes").AsyncSetUpInPlainCase.ran == []


HOOKS_PUT_IN_PLACE = '''\
import unittest


class HooksPutInPlaceBySetUpClass(unittest.TestCase):
    calls = []

    def setUp(self):
        self.calls.append("setUp as written")

    def tearDown(self):
        self.calls.append("tearDown as written")

    @classmethod
    def setUpClass(cls):
        cls.setUp = lambda self: self.calls.append("setUp put in place")
        cls.tearDown = lambda self: self.calls.append("tearDown put in place")

    def test_a(self):
        self.calls.append("test_a")


class AsyncSetUpPutInPlace(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        async def set_up(self):
            pass
        cls.setUp = set_up

    def test_a(self):
        pass
'''


def test_the_set_up_and_tear_down_called_are_the_ones_in_place_when_the_test_runs(tmp_path, views):
    # They were taken when the tests were prepared, before setUpClass ran: the setUp and
    # tearDown it put in place were never called, and the ones it replaced were.
    client = Client(views(write_image(tmp_path / "image", {"test_hooks.py": HOOKS_PUT_IN_PLACE})))
    result = client.ok("run_test_class", className="HooksPutInPlaceBySetUpClass")["structuredContent"]
    assert (result["run"], result["passed"]) == (1, 1), result
    assert client.view.module("test_hooks").HooksPutInPlaceBySetUpClass.calls == [
        "setUp put in place", "test_a", "tearDown put in place"]
    # and one put in place is checked as one written is: an async def setUp is never run
    refused = client.ok("run_test_class", className="AsyncSetUpPutInPlace")["structuredContent"]
    assert (refused["run"], refused["errors"]) == (1, 1), refused
    assert "set_up is an async def, which is not run" in refused["failed"][0]["message"]


NEVER_RUN_BUT_EXPECTED_TO_FAIL = '''\
import unittest

import pytest


class AsyncExpectedToFail(unittest.TestCase):
    @unittest.expectedFailure
    async def test_never_run(self):
        raise AssertionError("never reached")


class TestAsyncMarkedXfail:
    @pytest.mark.xfail
    async def test_never_run(self):
        raise AssertionError("never reached")
'''


@pytest.mark.parametrize("name", ["AsyncExpectedToFail", "TestAsyncMarkedXfail"])
def test_a_test_that_never_ran_is_an_error_even_where_a_failure_is_expected(tmp_path, views, name):
    # "Its coroutine was never run" was taken for the failure expected: an expected failure,
    # a test that ran nothing counted as fine (unittest itself called it an unexpected success).
    client = Client(views(write_image(tmp_path / "image", {"test_never.py": NEVER_RUN_BUT_EXPECTED_TO_FAIL})))
    result = client.ok("run_test_class", className=name)["structuredContent"]
    assert (result["run"], result["errors"], result["expectedFailures"]) == (1, 1, 0), result
    assert "is an async def, which is not run" in result["failed"][0]["message"]


@pytest.mark.parametrize("name", ["YieldingCase", "TestYielding"])
def test_a_test_that_yields_is_an_error_not_a_pass_whose_body_never_ran(outcomes, name):
    result = outcomes.ok("run_test_class", className=name)["structuredContent"]
    assert (result["run"], result["passed"], result["errors"]) == (1, 0, 1)
    assert result["failed"][0]["message"] == (
        f"{name}.test_yields yields, so calling it ran none of its body: a test, setUp or tearDown "
        "is not a generator (pytest dropped yield tests in 4.0); take the yield out")
    assert outcomes.view.module("zoo.test_outcomes").__dict__[name].ran == []


def test_an_isolated_asyncio_test_case_still_runs_its_async_tests(outcomes):
    result = outcomes.ok("run_test_class", className="AsyncCase")["structuredContent"]
    assert (result["run"], result["passed"], result["failures"], result["errors"]) == (2, 1, 1, 0)
    assert [(f["test"].rpartition(".")[2], f["message"]) for f in result["failed"]] == [
        ("test_fails", "1 != 2")]
    assert outcomes.view.module("zoo.test_outcomes").AsyncCase.ran == [
        "asyncSetUp", "asyncSetUp", "test_passes"]


def test_a_pytest_style_tests_traceback_starts_at_the_test_not_the_runner(client):
    detail = client.ok("describe_test_failure", className="TestPlain",
                       selector="test_error")["structuredContent"]
    assert detail["traceback"].splitlines()[1].endswith("in test_error")
    assert "testing.py" not in detail["traceback"]


def test_unittest_class_fixtures_run_once_per_class(client):
    result = client.ok("run_test_class", className="CountedTest")["structuredContent"]
    assert (result["run"], result["passed"], result["failures"]) == (2, 1, 1)
    assert result["failed"][0]["message"] == "assert self.setups == 2 failed"


def test_pytest_style_tests_see_a_method_compiled_in_the_session(client):
    client.ok("compile_method", className="Dog", source="def noise(self):\n    return 'meow'\n")
    result = client.ok("run_test_method", className="TestPlain", selector="test_bare_assert")
    assert result["structuredContent"]["passed"] == 1


ODD = '''\
import unittest


class OddTest(unittest.TestCase):
    def test_pass(self):
        pass

    def test_huge(self):
        raise ValueError("y" * 70_000_000)

    def test_surrogate(self):
        raise ValueError("\\ud800")
'''


def test_an_outlandish_failure_does_not_cost_the_run_its_answer(tmp_path, views):
    client = Client(views(write_image(tmp_path / "image", {**FILES, "zoo/test_odd.py": ODD})))
    for tool, arguments in [("run_test_class", {"className": "OddTest"}),
                            ("list_failing_tests", {"classNames": ["OddTest"]})]:
        response = client.server.handle({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                         "params": {"name": tool, "arguments": arguments}})
        sent = json.dumps(response, ensure_ascii=False).encode("utf-8")   # what the frame carries
        assert len(sent) < 100_000, len(sent)
        assert "more characters of the message cut: a test's report keeps" in sent.decode()
    ran = client.ok("run_test_class", className="OddTest")["structuredContent"]
    assert (ran["run"], ran["passed"], ran["errors"], ran["failures"]) == (3, 1, 2, 0)
    messages = {entry["test"]: entry["message"] for entry in ran["failed"]}
    assert messages["zoo.test_odd.OddTest.test_surrogate"] == "\\ud800"
    detail = client.ok("describe_test_failure", className="OddTest", selector="test_surrogate")
    assert "ValueError: \\ud800" in text(detail)


UNPRINTABLE = '''\
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
    def test_pass(self):
        pass

    def test_in_a_subtest(self):
        with self.subTest(obj=Shown()):
            self.fail("inside")


class UnsayableSkipTest(unittest.TestCase):
    def test_pass(self):
        pass

    def test_skipped_so(self):
        self.skipTest(Shown())


class OtherReasonsTest(unittest.TestCase):
    @unittest.skip(42)
    def test_an_int_reason(self):
        pass

    def test_a_shown_reason(self):
        self.skipTest(Shown)

    def test_pass(self):
        pass


@unittest.skip(["a", "list"])
class ListReasonTest(unittest.TestCase):
    def test_a(self):
        pass


class UnsayableClassSkipTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        raise unittest.SkipTest(Shown())

    def test_never(self):
        pass
'''


def test_an_exception_whose_str_raises_is_that_tests_error_not_the_runs(tmp_path, views):
    # str() of the test's exception raised out of the run: every tool answered only
    # "RuntimeError: its __str__ fails", the other tests' results lost.
    client = Client(views(write_image(tmp_path / "image", {**FILES, "zoo/test_odd.py": UNPRINTABLE})))
    ran = client.ok("run_test_class", className="UnprintableTest")["structuredContent"]
    assert (ran["run"], ran["passed"], ran["errors"]) == (2, 1, 1)
    assert ran["failed"][0]["exception"] == "Unprintable"
    assert ran["failed"][0]["message"] == "<exception str() failed>"
    failing = client.ok("list_failing_tests", classNames=["UnprintableTest"])["structuredContent"]
    assert [entry["test"] for entry in failing["failing"]] == ["zoo.test_odd.UnprintableTest.test_raises_it"]
    detail = text(client.ok("describe_test_failure", className="UnprintableTest", selector="test_raises_it"))
    assert "Unprintable: <exception str() failed>" in detail and "raise Unprintable()" in detail


def test_a_subtest_whose_parameters_repr_raises_is_that_tests_failure_not_the_runs(tmp_path, views):
    # unittest's subtest id() raised in the result's record of it: the test was an error,
    # "RuntimeError: its __repr__ fails", its failure lost and its traceback running through
    # the runner's own frames (testing.py).
    client = Client(views(write_image(tmp_path / "image", {**FILES, "zoo/test_odd.py": UNPRINTABLE})))
    ran = client.ok("run_test_class", className="UnprintableSubTest")["structuredContent"]
    assert (ran["run"], ran["passed"], ran["failures"]) == (2, 1, 1)
    shown = "zoo.test_odd.UnprintableSubTest.test_in_a_subtest (<subtest parameters' repr() failed>)"
    assert [(entry["test"], entry["message"]) for entry in ran["failed"]] == [(shown, "inside")]
    detail = text(client.ok("describe_test_failure", className="UnprintableSubTest", selector="test_in_a_subtest"))
    assert detail.startswith(shown + ": failure") and "testing.py" not in detail, detail


def test_a_skip_whose_reasons_str_raises_is_a_skip_not_the_end_of_the_run(tmp_path, views):
    # unittest's own str() of the SkipTest raised out of the whole run: the answer was only
    # "RuntimeError: its __repr__ fails", naming no test, the other tests' results lost.
    client = Client(views(write_image(tmp_path / "image", {**FILES, "zoo/test_odd.py": UNPRINTABLE})))
    ran = client.ok("run_test_class", className="UnsayableSkipTest")
    assert (ran["structuredContent"]["passed"], ran["structuredContent"]["skipped"]) == (1, 1)
    detail = text(client.ok("describe_test_failure", className="UnsayableSkipTest", selector="test_skipped_so"))
    assert "<exception str() failed>" in detail, detail
    ran = client.ok("run_test_class", className="UnsayableClassSkipTest")["structuredContent"]
    assert (ran["fixtureErrors"], ran["notRun"], ran["failed"]) == (0, 1, [{
        "test": "setUpClass (zoo.test_odd.UnsayableClassSkipTest)", "outcome": "skipped",
        "message": "<exception str() failed>"}]), ran


def test_a_skip_reason_that_is_no_text_is_said_as_unittest_says_it(tmp_path, views):
    # unittest takes any object as a reason (`@unittest.skip(42)`) and says it with str():
    # the run's answer failed on it, "TypeError: object of type 'int' has no len()".
    client = Client(views(write_image(tmp_path / "image", {**FILES, "zoo/test_odd.py": UNPRINTABLE})))
    ran = client.ok("run_test_class", className="OtherReasonsTest")["structuredContent"]
    assert (ran["passed"], ran["skipped"]) == (1, 2)
    for selector, reason in [("test_an_int_reason", "42"), ("test_a_shown_reason", "<class 'zoo.test_odd.Shown'>")]:
        said = text(client.ok("describe_test_failure", className="OtherReasonsTest", selector=selector))
        assert reason in said, said
    ran = client.ok("run_test_class", className="ListReasonTest")["structuredContent"]
    assert (ran["run"], ran["skipped"]) == (1, 1)
    assert "['a', 'list']" in text(client.ok("describe_test_failure", className="ListReasonTest", selector="test_a"))


UNMAKEABLE = '''\
import unittest


class NeedsMoreTest(unittest.TestCase):
    def __init__(self, methodName, extra):
        super().__init__(methodName)

    def test_a(self):
        pass


class FailsTest(unittest.TestCase):
    def test_b(self):
        self.fail("b")
'''


def test_a_test_class_that_cannot_be_made_into_tests_is_named_and_the_others_still_run(tmp_path, views):
    # Its TypeError ("__init__() missing 1 required positional argument") ended the whole
    # list_failing_tests run: no other class's failure was told.
    client = Client(views(write_image(tmp_path / "image", {**FILES, "zoo/test_unmade.py": UNMAKEABLE})))
    failing = client.ok("list_failing_tests")["structuredContent"]
    assert "zoo.test_unmade.FailsTest.test_b" in [entry["test"] for entry in failing["failing"]]
    assert failing["notLoaded"][-1:] == [   # after the image's failing modules (FILES shadows json)
        "test class zoo.test_unmade.NeedsMoreTest could not be made into tests (unittest makes one per "
        "test method, given its name alone): TypeError: NeedsMoreTest.__init__() missing 1 required "
        "positional argument: 'extra'"]
    named = client.ok("list_failing_tests", classNames=["NeedsMoreTest", "FailsTest"])["structuredContent"]
    assert (named["run"], len(named["notLoaded"])) == (1, 1)


def test_describe_test_failure_sends_a_huge_traceback_whole_once(tmp_path, views):
    # The text and structuredContent each carried the 1,000,000 characters kept of it.
    client = Client(views(write_image(tmp_path / "image", {**FILES, "zoo/test_odd.py": ODD})))
    detail = client.ok("describe_test_failure", className="OddTest", selector="test_huge")
    # the text's traceback, and 10,000 characters each of the message twice and of the repeat
    assert len(json.dumps(detail)) < 1_000_000 + 4 * REPEAT_CAP
    whole = text(detail)[text(detail).index("Traceback (most recent call last):\n"):]
    assert whole.endswith(" more characters of the traceback cut: a test's report keeps the first 1,000,000]")
    assert len(whole) > 1_000_000
    said = detail["structuredContent"]
    # Its repeat counts what the traceback has past its start, as the text's note does: it
    # counted what the text's cut of it had (990,098 more, of 70 MB).
    uncut = whole.index("ValueError: yyy") + len("ValueError: ") + 70_000_000 + len("\n")
    assert [sum(note) for note in cut_notes(whole) + cut_notes(said["traceback"])] == [uncut, uncut]
    assert said["exception"] == "ValueError" and said["traceback"] == repeated(whole + "\n", "the traceback", uncut)
    assert len(said["traceback"]) < REPEAT_CAP + 200 and 'test_odd.py", line 9, in test_huge\n    raise ' \
        'ValueError("y" * 70_000_000)\nValueError: yyy' in said["traceback"]

INTERRUPTS = '''\
import unittest

from gsmcpd.worker.toolset import HardBreak, SoftBreak, mark_soft_break


def interrupt(where):
    raise KeyboardInterrupt(f"pressed in {where}")


class InterruptedTest(unittest.TestCase):
    def test_a_passes(self):
        pass

    def test_b_interrupted(self):
        interrupt("the test")

    def test_c_exits(self):
        raise SystemExit(3)

    def test_d_generator_exit(self):
        raise GeneratorExit("closed")

    def test_e_passes(self):
        pass


class AsyncInterruptedTest(unittest.IsolatedAsyncioTestCase):
    async def test_a_interrupted(self):
        interrupt("a coroutine")

    async def test_b_passes(self):
        pass


class PartsTest(unittest.TestCase):
    ran = []

    def setUp(self):
        if self._testMethodName == "test_setup":
            interrupt("setUp")

    def tearDown(self):
        self.ran.append("tearDown " + self._testMethodName)
        if self._testMethodName == "test_teardown":
            interrupt("tearDown")

    def test_cleanup(self):
        self.addCleanup(self.ran.append, "the other cleanup")   # cleanups run last first
        self.addCleanup(interrupt, "a cleanup")

    def test_setup(self):
        self.ran.append("test_setup")

    def test_subtests(self):
        with self.subTest(i=1):
            self.fail("one")
        with self.subTest(i=2):
            interrupt("a subtest")

    def test_teardown(self):
        pass


class TestPlainInterrupted:
    def setup_method(self, method):
        if method.__name__ == "test_setup_method":
            interrupt("setup_method")

    def test_interrupted(self):
        interrupt("a plain test")

    def test_passes(self):
        pass

    def test_setup_method(self):
        pass


class FixtureInterruptedTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        interrupt("setUpClass")

    def test_one(self):
        pass


class TestPlainFixtureExits:
    @classmethod
    def setup_class(cls):
        raise SystemExit("from setup_class")

    def test_one(self):
        pass


class BreakTest(unittest.TestCase):
    def setUp(self):
        if self._testMethodName == "test_b_soft_in_setup":
            raise SoftBreak("soft break")

    def tearDown(self):
        if self._testMethodName == "test_b_soft_in_teardown":
            raise SoftBreak("soft break")

    def test_b_hard(self):
        raise HardBreak("hard break")

    def test_b_hard_in_cleanup(self):
        self.addCleanup(self.hard)

    def test_b_soft(self):
        raise SoftBreak("soft break")

    def test_b_soft_in_cleanup(self):
        self.addCleanup(self.soft)

    def test_b_soft_in_setup(self):
        pass

    def test_b_soft_in_teardown(self):
        pass

    def hard(self):
        raise HardBreak("hard break")

    def soft(self):
        raise SoftBreak("soft break")


def land_soft_break():
    """What the worker's soft-break handler does in a call."""
    mark_soft_break()
    raise SoftBreak("soft break")


class CaughtBreakTest(unittest.TestCase):
    ran = []

    def test_a_exits(self):
        try:
            land_soft_break()
        except KeyboardInterrupt:
            raise SystemExit(130)

    def test_a_raises_its_own(self):
        try:
            land_soft_break()
        except KeyboardInterrupt:
            raise KeyboardInterrupt("stopped") from None

    def test_a_swallows(self):
        try:
            land_soft_break()
        except KeyboardInterrupt:
            pass

    def test_z_after(self):
        self.ran.append("test_z_after")


class CaughtInSetUpClassTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        try:
            land_soft_break()
        except KeyboardInterrupt:
            raise SystemExit(130)

    def test_one(self):
        pass


class SoftBreakTest(unittest.TestCase):
    ran = []

    def test_a_runs(self):
        self.ran.append("test_a_runs")

    def test_b_soft(self):
        raise SoftBreak("soft break")

    def test_c_after(self):
        self.ran.append("test_c_after")


class HangsTest(unittest.TestCase):
    def test_hangs(self):
        print("connected")
        raise SoftBreak("soft break")   # as a deadline's would, in a wait that never ends
'''


@pytest.fixture
def interrupts(tmp_path, views):
    image = write_image(tmp_path / "image", {**FILES, "zoo/test_interrupts.py": INTERRUPTS})
    yield Client(views(image))
    mark_soft_break(False)     # as the worker does at the next call's start


def failed_by_name(result):
    return {f["test"].rpartition(".")[2]: f for f in result["failed"]}


def test_a_test_raising_keyboard_interrupt_is_its_error_and_the_run_goes_on(interrupts):
    result = interrupts.ok("run_test_class", className="InterruptedTest")["structuredContent"]
    assert (result["run"], result["passed"], result["errors"]) == (5, 2, 3)
    failed = failed_by_name(result)
    assert {name: (f["outcome"], f["exception"], f["message"]) for name, f in failed.items()} == {
        "test_b_interrupted": ("error", "KeyboardInterrupt", "pressed in the test"),
        "test_c_exits": ("error", "SystemExit", "3"),
        "test_d_generator_exit": ("error", "GeneratorExit", "closed")}
    assert len(interrupts.progress) == 5   # a step for every test, the ones after it included


def test_an_async_test_raising_keyboard_interrupt_is_its_error(interrupts):
    result = interrupts.ok("run_test_class", className="AsyncInterruptedTest")["structuredContent"]
    assert (result["run"], result["passed"], result["errors"]) == (2, 1, 1)
    assert result["failed"] == [{"test": "zoo.test_interrupts.AsyncInterruptedTest.test_a_interrupted",
                                 "outcome": "error", "exception": "KeyboardInterrupt",
                                 "message": "pressed in a coroutine"}]


def test_describe_test_failure_shows_the_interrupt_from_the_tests_own_code(interrupts):
    detail = interrupts.ok("describe_test_failure", className="InterruptedTest",
                           selector="test_b_interrupted")["structuredContent"]
    assert (detail["outcome"], detail["exception"], detail["message"]) == (
        "error", "KeyboardInterrupt", "pressed in the test")
    trace = detail["traceback"].splitlines()
    assert trace[0] == "Traceback (most recent call last):"
    assert trace[1].endswith("in test_b_interrupted")   # unittest's frames and the guard's trimmed
    assert trace[-1] == "KeyboardInterrupt: pressed in the test"
    assert "testing.py" not in detail["traceback"]


def test_an_interrupt_in_setup_teardown_a_cleanup_or_a_subtest_is_that_tests_error(interrupts):
    result = interrupts.ok("run_test_class", className="PartsTest")["structuredContent"]
    assert (result["run"], result["errors"], result["failures"]) == (4, 4, 0)
    assert sorted((f["test"].partition("PartsTest.")[2], f["outcome"], f["message"])
                  for f in result["failed"]) == [
        ("test_cleanup", "error", "pressed in a cleanup"),
        ("test_setup", "error", "pressed in setUp"),
        ("test_subtests", "error", "pressed in a subtest"),
        ("test_subtests (i=1)", "failure", "one"),
        ("test_teardown", "error", "pressed in tearDown")]
    # The test's other parts still ran: tearDown after an interrupted test, the next cleanup.
    assert interrupts.view.module("zoo.test_interrupts").PartsTest.ran == [
        "tearDown test_cleanup", "the other cleanup", "tearDown test_subtests",
        "tearDown test_teardown"]


def test_a_pytest_style_test_raising_keyboard_interrupt_is_its_error(interrupts):
    result = interrupts.ok("run_test_class", className="TestPlainInterrupted")["structuredContent"]
    assert (result["run"], result["passed"], result["errors"]) == (3, 1, 2)
    assert {name: f["message"] for name, f in failed_by_name(result).items()} == {
        "test_interrupted": "pressed in a plain test",
        "test_setup_method": "pressed in setup_method"}
    listed = text(interrupts.ok("list_failing_tests", classNames=["TestPlainInterrupted"]))
    assert ("zoo.test_interrupts.TestPlainInterrupted.test_interrupted (error): "
            "KeyboardInterrupt: pressed in a plain test") in listed.splitlines()


@pytest.mark.parametrize("class_name, shown, fixture", [
    ("FixtureInterruptedTest", "KeyboardInterrupt: pressed in setUpClass", "setUpClass"),
    ("TestPlainFixtureExits", "SystemExit: from setup_class", "setup_class")])
def test_a_class_fixture_raising_outside_exception_ends_the_run_as_unittest_does(
        interrupts, class_name, shown, fixture):
    # Not one test's error: the call answers it, with where the fixture raised it (the error
    # alone named no class), and the session goes on.
    said = interrupts.error("run_test_class", "other", className=class_name).splitlines()
    assert said[:3] == [shown, "(raised by a class or module fixture: outside Exception, it ends the "
                               "whole run, as in unittest, so no test's result is told)",
                        "Traceback (most recent call last):"]
    assert "zoo/test_interrupts.py" in said[3] and said[3].endswith(f", in {fixture}"), said
    assert said[-1] == shown
    assert interrupts.ok("run_test_method", className="InterruptedTest",
                         selector="test_a_passes")["structuredContent"]["passed"] == 1


def test_the_repeat_of_a_huge_error_ending_the_run_counts_what_the_error_has_past_it(tmp_path, views):
    # The error (its line twice, with the fixture's traceback) cut to 1,000,000 in the text,
    # its repeat counted what that cut had past 10,000 (990,2xx), not what the error had.
    fixture = ("import unittest\n\n\nclass ExitingTest(unittest.TestCase):\n    @classmethod\n"
               "    def setUpClass(cls):\n        raise SystemExit('z' * 2_000_000)\n\n"
               "    def test_a(self):\n        pass\n")
    client = Client(views(write_image(tmp_path / "image", {**FILES, "zoo/test_exiting.py": fixture})))
    result = client.call("run_test_class", className="ExitingTest")
    told, repeat = cut_notes(text(result)), cut_notes(result["structuredContent"]["error"]["message"])
    assert len(told) == len(repeat) == 1 and sum(told[0]) == sum(repeat[0]) > 4_000_000


@pytest.mark.parametrize("selector, raised", [
    ("test_b_soft", SoftBreak), ("test_b_soft_in_setup", SoftBreak),
    ("test_b_soft_in_teardown", SoftBreak), ("test_b_soft_in_cleanup", SoftBreak),
    ("test_b_hard", HardBreak), ("test_b_hard_in_cleanup", HardBreak)])
def test_a_break_during_a_test_ends_the_run_and_reaches_the_break_machinery(
        interrupts, selector, raised):
    with pytest.raises(raised):
        interrupts.call("run_test_method", className="BreakTest", selector=selector)


def test_a_soft_break_stops_the_tests_after_it_and_carries_what_finished_before_it(interrupts):
    module = interrupts.view.module("zoo.test_interrupts")
    with pytest.raises(SoftBreak) as broken:
        interrupts.call("run_test_class", className="SoftBreakTest")
    assert module.SoftBreakTest.ran == ["test_a_runs"]
    # A deadline no longer throws away what the run had done (the worker puts it in the
    # -32001 error's data): test_a passed, test_b was broken, test_c never ran.
    partial = broken.value.partial
    assert (partial["run"], partial["passed"], partial["notRun"]) == (1, 1, 1)
    assert partial["interrupted"] == "zoo.test_interrupts.SoftBreakTest.test_b_soft"
    with pytest.raises(SoftBreak) as listed:
        interrupts.call("list_failing_tests", classNames=["SoftBreakTest"])
    assert listed.value.partial == {"run": 1, "notRun": 1, "failing": [],
                                    "interrupted": "zoo.test_interrupts.SoftBreakTest.test_b_soft"}


def test_describing_a_test_a_break_ends_carries_what_it_printed_before_it(interrupts):
    # What a hanging test printed shows how far it got; the break threw it away.
    with pytest.raises(SoftBreak) as broken:
        interrupts.call("describe_test_failure", className="HangsTest", selector="test_hangs")
    assert broken.value.partial == {"test": "zoo.test_interrupts.HangsTest.test_hangs",
                                    "interrupted": "zoo.test_interrupts.HangsTest.test_hangs",
                                    "output": "connected\n"}
    assert broken.value.partial_said == "what the test printed before it is"


@pytest.mark.parametrize("selector, cause", [
    ("test_a_exits", SystemExit), ("test_a_raises_its_own", KeyboardInterrupt),
    ("test_a_swallows", type(None))])
def test_a_test_that_caught_the_soft_break_still_ends_the_run(interrupts, selector, cause):
    # Its SystemExit or own KeyboardInterrupt after the break is not the test's error:
    # the run ends as the break asked, and the tests after it do not run.
    module = interrupts.view.module("zoo.test_interrupts")
    with pytest.raises(SoftBreak) as raised:
        interrupts.call("run_test_method", className="CaughtBreakTest", selector=selector)
    assert type(raised.value.__cause__) is cause
    mark_soft_break(False)
    with pytest.raises(SoftBreak):
        interrupts.call("list_failing_tests", classNames=["CaughtBreakTest"])
    assert module.CaughtBreakTest.ran == []


def test_a_class_fixture_that_caught_the_soft_break_still_ends_the_run(interrupts):
    with pytest.raises(SoftBreak) as raised:
        interrupts.call("run_test_class", className="CaughtInSetUpClassTest")
    assert isinstance(raised.value.__cause__, SystemExit)


# -- class and module fixtures are no tests: the counts still add up --------------------

FIXTURES = '''\
import unittest


class SetUpClassFails(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        raise RuntimeError("setUpClass boom")

    def test_a(self):
        pass

    def test_b(self):
        pass


class TearDownClassFails(unittest.TestCase):
    @classmethod
    def tearDownClass(cls):
        raise RuntimeError("tearDownClass boom")

    def test_a(self):
        pass


class SetUpClassSkips(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        raise unittest.SkipTest("no database here")

    def test_a(self):
        pass


class TearDownFails(unittest.TestCase):
    def tearDown(self):
        raise RuntimeError("tearDown boom")

    def test_b(self):
        print("debugging test_b")
        self.fail("the body fails first")

    def test_subtests(self):
        for i in range(4):
            with self.subTest(i=i):
                self.assertLess(i, 2)
'''

MODULE_FIXTURE = '''\
import unittest


def setUpModule():
    raise RuntimeError("setUpModule boom")


class InBrokenModule(unittest.TestCase):
    def test_a(self):
        pass
'''

PER_TEST = ("passed", "failures", "errors", "skipped", "expectedFailures", "unexpectedSuccesses")


@pytest.fixture
def fixtures(tmp_path, views):
    image = write_image(tmp_path / "image", {**FILES, "zoo/test_fixtures.py": FIXTURES,
                                             "zoo/test_module_fixture.py": MODULE_FIXTURE})
    return Client(views(image))


@pytest.mark.parametrize("class_name, counts, first_line", [
    ("SetUpClassFails", {"run": 0, "notRun": 2, "fixtureErrors": 1},
     "zoo.test_fixtures.SetUpClassFails: 0 run, 0 passed, 0 failed, 0 errors, 0 skipped, "
     "2 not run, 1 class/module fixture errors"),
    ("TearDownClassFails", {"run": 1, "passed": 1, "notRun": 0, "fixtureErrors": 1},
     "zoo.test_fixtures.TearDownClassFails: 1 run, 1 passed, 0 failed, 0 errors, 0 skipped, "
     "1 class/module fixture errors"),
    ("SetUpClassSkips", {"run": 0, "notRun": 1, "fixtureErrors": 0},
     "zoo.test_fixtures.SetUpClassSkips: 0 run, 0 passed, 0 failed, 0 errors, 0 skipped, 1 not run"),
    ("InBrokenModule", {"run": 0, "notRun": 1, "fixtureErrors": 1},
     "zoo.test_module_fixture.InBrokenModule: 0 run, 0 passed, 0 failed, 0 errors, 0 skipped, "
     "1 not run, 1 class/module fixture errors"),
])
def test_a_failing_class_or_module_fixture_is_counted_apart_from_the_tests(
        fixtures, class_name, counts, first_line):
    result = fixtures.ok("run_test_class", className=class_name)
    ran = result["structuredContent"]
    assert sum(ran[key] for key in PER_TEST) == ran["run"], ran
    assert {key: ran[key] for key in counts} == {**counts}, ran
    assert text(result).splitlines()[0] == first_line
    # The fixture's failure (or skip) is listed: it says why tests did not run.
    [fixture] = ran["failed"]
    assert fixture["test"].split(" ")[0] in ("setUpClass", "tearDownClass", "setUpModule"), fixture


def test_list_failing_tests_says_how_many_tests_a_fixture_kept_from_running(fixtures):
    listed = fixtures.ok("list_failing_tests", classNames=["SetUpClassSkips"])
    assert listed["structuredContent"] == {"run": 0, "notRun": 1, "failing": []}
    assert text(listed) == "no failing tests (0 run, 1 not run)"


def test_list_failing_tests_text_says_how_many_ran_beside_the_failures(fixtures):
    # The failures listed do not say it: a failing setUpClass kept two tests from running.
    listed = fixtures.ok("list_failing_tests", classNames=["SetUpClassFails", "TearDownClassFails"])
    assert text(listed).splitlines() == [
        "setUpClass (zoo.test_fixtures.SetUpClassFails) (error): RuntimeError: setUpClass boom",
        "tearDownClass (zoo.test_fixtures.TearDownClassFails) (error): RuntimeError: tearDownClass boom",
        "(1 run, 2 not run)"]


def test_describe_test_failure_describes_the_first_failure_and_names_the_others(fixtures):
    detail = fixtures.ok("describe_test_failure", className="TearDownFails", selector="test_b")
    described = detail["structuredContent"]
    assert (described["exception"], described["message"]) == ("AssertionError", "the body fails first")
    assert described["also"] == [{"test": "zoo.test_fixtures.TearDownFails.test_b", "outcome": "error",
                                  "exception": "RuntimeError", "message": "tearDown boom"}]
    assert "also error: zoo.test_fixtures.TearDownFails.test_b: RuntimeError: tearDown boom" in \
        text(detail).splitlines()
    assert described["output"] == "debugging test_b\n"
    subtests = fixtures.ok("describe_test_failure", className="TearDownFails",
                           selector="test_subtests")["structuredContent"]
    assert subtests["test"] == "zoo.test_fixtures.TearDownFails.test_subtests (i=2)"
    assert [e["test"] for e in subtests["also"]] == [
        "zoo.test_fixtures.TearDownFails.test_subtests (i=3)", "zoo.test_fixtures.TearDownFails.test_subtests"]


def test_describe_test_failure_of_a_passing_test_says_it_passed_when_its_class_fixture_failed(fixtures):
    detail = fixtures.ok("describe_test_failure", className="TearDownClassFails", selector="test_a")
    assert text(detail).splitlines()[:2] == [
        "zoo.test_fixtures.TearDownClassFails.test_a: pass, but a class or module fixture failed:",
        "tearDownClass (zoo.test_fixtures.TearDownClassFails): error"]
    assert detail["structuredContent"]["message"] == "tearDownClass boom"
    skipped = fixtures.ok("describe_test_failure", className="SetUpClassSkips", selector="test_a")
    assert skipped["structuredContent"] == {"test": "zoo.test_fixtures.SetUpClassSkips.test_a",
                                            "outcome": "skipped", "message": "no database here"}


# -- a module's fixture is pytest's: setUpModule or setup_module, for all its classes ---

MODULE_HOOKS = {
    "zoo/test_module_hooks.py": '''\
import unittest

calls = []


def setup_module(module):
    calls.append(("setup_module", module.__name__))


def teardown_module():
    calls.append("teardown_module")


class TestFirst:
    def test_a(self):
        calls.append("TestFirst.test_a")


class TestSecond:
    def setup_class(cls):
        calls.append("setup_class")

    def test_b(self):
        calls.append("TestSecond.test_b")


class CaseInSameModule(unittest.TestCase):
    def test_c(self):
        calls.append("CaseInSameModule.test_c")
''',
    "zoo/test_both_setups.py": '''\
calls = []


def setUpModule():
    calls.append("setUpModule")


def setup_module():
    calls.append("setup_module")


def teardown_module(module):
    calls.append("teardown_module")


class TestBoth:
    def test_a(self):
        calls.append("test_a")
''',
    "zoo/test_setup_module_fails.py": '''\
calls = []


def setup_module():
    raise RuntimeError("no database")


def teardown_module():
    calls.append("teardown_module")


class TestNeedsDatabase:
    def test_a(self):
        calls.append("test_a")

    def test_b(self):
        calls.append("test_b")
''',
    "zoo/test_setup_module_skips.py": '''\
import pytest


def setup_module():
    pytest.skip("no network here")


class TestNeedsNetwork:
    def test_a(self):
        pass
''',
    "zoo/test_set_up_module_skips.py": '''\
import unittest

import pytest


def setUpModule():
    pytest.skip("no printer here")


class NeedsPrinter(unittest.TestCase):
    def test_a(self):
        pass
''',
    "zoo/test_setup_module_fails_pytest.py": '''\
import pytest

calls = []


def setup_module():
    pytest.fail("no network here")


def teardown_module():
    calls.append("teardown_module")


class TestNeedsNetworkOrFails:
    def test_a(self):
        calls.append("test_a")
''',
    "zoo/test_set_up_module_fails_pytest.py": '''\
import unittest

import pytest

calls = []


def setUpModule():
    pytest.fail("no printer here")


def tearDownModule():
    calls.append("tearDownModule")


class NeedsPrinterOrFails(unittest.TestCase):
    def test_a(self):
        calls.append("test_a")
''',
    "zoo/test_teardown_module_fails_pytest.py": '''\
import pytest


def teardown_module():
    pytest.fail("could not clean up")


class TestTornDownByPytest:
    def test_a(self):
        pass
''',
    "zoo/test_teardown_module_fails.py": '''\
def teardown_module():
    raise RuntimeError("could not clean up")


class TestTornDown:
    def test_a(self):
        pass
''',
    "zoo/test_counted_module.py": '''\
import unittest

setups = []


def setUpModule():
    setups.append("setUpModule")


class FirstCountedCase(unittest.TestCase):
    def test_a(self):
        pass


class SecondCountedCase(unittest.TestCase):
    def test_b(self):
        pass
''',
}


@pytest.fixture
def module_hooks(tmp_path, views):
    return Client(views(write_image(tmp_path / "image", {**FILES, **MODULE_HOOKS})))


def test_setup_module_and_teardown_module_wrap_a_pytest_style_class(module_hooks):
    # They were never called: only unittest's setUpModule/tearDownModule were.
    ran = module_hooks.ok("run_test_class", className="TestFirst")["structuredContent"]
    assert (ran["run"], ran["passed"], ran["fixtureErrors"]) == (1, 1, 0)
    assert module_hooks.view.module("zoo.test_module_hooks").calls == [
        ("setup_module", "zoo.test_module_hooks"), "TestFirst.test_a", "teardown_module"]


def test_a_modules_fixture_runs_once_around_all_its_classes_of_either_style(module_hooks):
    # Named apart, with another module's class between them: still one setup, one teardown.
    listed = module_hooks.ok("list_failing_tests", classNames=[
        "TestFirst", "zoo.test_zoo.ZooTest", "CaseInSameModule", "TestSecond"])["structuredContent"]
    assert (listed["run"], listed["notRun"]) == (6, 0)
    assert module_hooks.view.module("zoo.test_module_hooks").calls == [
        ("setup_module", "zoo.test_module_hooks"), "TestFirst.test_a", "CaseInSameModule.test_c",
        "setup_class", "TestSecond.test_b", "teardown_module"]


def test_unittests_set_up_module_runs_once_when_its_classes_are_named_apart(module_hooks):
    module_hooks.ok("list_failing_tests", classNames=["FirstCountedCase", "ZooTest", "SecondCountedCase"])
    assert module_hooks.view.module("zoo.test_counted_module").setups == ["setUpModule"]


def test_of_set_up_module_and_setup_module_only_the_first_is_called_as_pytest_calls_it(module_hooks):
    ran = module_hooks.ok("run_test_class", className="TestBoth")["structuredContent"]
    assert (ran["passed"], ran["fixtureErrors"]) == (1, 0)
    # teardown_module is called, given the module: there is no tearDownModule before it
    assert module_hooks.view.module("zoo.test_both_setups").calls == [
        "setUpModule", "test_a", "teardown_module"]


def test_what_setup_module_raises_keeps_its_tests_from_running_and_is_listed(module_hooks):
    result = module_hooks.ok("run_test_class", className="TestNeedsDatabase")
    ran = result["structuredContent"]
    assert {k: ran[k] for k in ("run", "notRun", "fixtureErrors")} == {"run": 0, "notRun": 2, "fixtureErrors": 1}
    assert ran["failed"] == [{"test": "setup_module (zoo.test_setup_module_fails)", "outcome": "error",
                              "exception": "RuntimeError", "message": "no database"}]
    assert text(result).splitlines()[1] == (
        "ERROR: setup_module (zoo.test_setup_module_fails): RuntimeError: no database")
    # as after a failed setUpModule (and as pytest does): no teardown of what was not set up
    assert module_hooks.view.module("zoo.test_setup_module_fails").calls == []


@pytest.mark.parametrize("class_name, hook, reason", [
    ("TestNeedsNetwork", "setup_module (zoo.test_setup_module_skips)", "no network here"),
    # pytest.skip in setUpModule ended the whole run: it is a BaseException
    ("NeedsPrinter", "setUpModule (zoo.test_set_up_module_skips)", "no printer here")])
def test_pytest_skip_in_a_module_setup_skips_its_tests_and_the_run_goes_on(
        module_hooks, class_name, hook, reason):
    listed = module_hooks.ok("list_failing_tests", classNames=[class_name, "TestFirst"])["structuredContent"]
    assert (listed["run"], listed["notRun"], listed["failing"]) == (1, 1, [])
    ran = module_hooks.ok("run_test_class", className=class_name)["structuredContent"]
    assert {k: ran[k] for k in ("run", "notRun", "fixtureErrors")} == {"run": 0, "notRun": 1, "fixtureErrors": 0}
    assert ran["failed"] == [{"test": hook, "outcome": "skipped", "message": reason}]


@pytest.mark.parametrize("class_name, module, hook_name, message", [
    ("TestNeedsNetworkOrFails", "zoo.test_setup_module_fails_pytest", "setup_module", "no network here"),
    ("NeedsPrinterOrFails", "zoo.test_set_up_module_fails_pytest", "setUpModule", "no printer here")])
def test_pytest_fail_in_a_module_setup_is_its_error_and_the_run_goes_on(
        module_hooks, class_name, module, hook_name, message):
    # It is a BaseException of pytest's: it ended the whole run, the call answering it.
    hook = f"{hook_name} ({module})"
    listed = module_hooks.ok("list_failing_tests", classNames=[class_name, "TestFirst"])["structuredContent"]
    assert (listed["run"], listed["notRun"]) == (1, 1)
    assert listed["failing"] == [{"test": hook, "outcome": "error", "exception": "Failed", "message": message}]
    ran = module_hooks.ok("run_test_class", className=class_name)["structuredContent"]
    assert {k: ran[k] for k in ("run", "notRun", "fixtureErrors")} == {"run": 0, "notRun": 1, "fixtureErrors": 1}
    # as after any failed module setup: no test and no teardown of what was not set up
    assert module_hooks.view.module(module).calls == []


def test_pytest_fail_in_teardown_module_is_its_error_after_the_tests_passed(module_hooks):
    ran = module_hooks.ok("run_test_class", className="TestTornDownByPytest")["structuredContent"]
    assert {k: ran[k] for k in ("run", "passed", "fixtureErrors")} == {"run": 1, "passed": 1, "fixtureErrors": 1}
    assert ran["failed"] == [{"test": "teardown_module (zoo.test_teardown_module_fails_pytest)",
                              "outcome": "error", "exception": "Failed", "message": "could not clean up"}]


def test_what_teardown_module_raises_is_a_fixture_error_after_the_tests_passed(module_hooks):
    ran = module_hooks.ok("run_test_class", className="TestTornDown")["structuredContent"]
    assert {k: ran[k] for k in ("run", "passed", "fixtureErrors")} == {"run": 1, "passed": 1, "fixtureErrors": 1}
    assert ran["failed"] == [{"test": "teardown_module (zoo.test_teardown_module_fails)", "outcome": "error",
                              "exception": "RuntimeError", "message": "could not clean up"}]


# -- a pytest-style class's fixture is listed under the name it is written with ----------

PLAIN_FIXTURES = {"zoo/test_plain_fixtures.py": '''\
class TestSetupClassFails:
    def setup_class(cls):
        raise RuntimeError("no database")

    def test_a(self):
        pass


class TestTeardownClassFails:
    @classmethod
    def teardown_class(cls):
        raise RuntimeError("could not drop the table")

    def test_a(self):
        pass


class TestSetupMethodFails:
    def setup_method(self):
        raise RuntimeError("no fixture")

    def test_a(self):
        pass
'''}


@pytest.mark.parametrize("class_name, listed, message", [
    ("TestSetupClassFails", "setup_class (zoo.test_plain_fixtures.TestSetupClassFails)", "no database"),
    ("TestTeardownClassFails", "teardown_class (zoo.test_plain_fixtures.TestTeardownClassFails)",
     "could not drop the table"),
    # a failing setup_method is the test's own error, as a failing setUp is in unittest
    ("TestSetupMethodFails", "zoo.test_plain_fixtures.TestSetupMethodFails.test_a", "no fixture")])
def test_a_pytest_style_classs_fixture_is_listed_by_the_name_the_class_writes(
        tmp_path, views, class_name, listed, message):
    # It was listed under unittest's name for it: "setUpClass (...)", a method the class has not.
    client = Client(views(write_image(tmp_path / "image", {**FILES, **PLAIN_FIXTURES})))
    ran = client.ok("run_test_class", className=class_name)
    assert [(f["test"], f["message"]) for f in ran["structuredContent"]["failed"]] == [(listed, message)]
    assert f"ERROR: {listed}: RuntimeError: {message}" in text(ran).splitlines()
    failing = client.ok("list_failing_tests", classNames=[class_name])["structuredContent"]["failing"]
    assert [f["test"] for f in failing] == [listed]


# -- pytest's outcomes in a class or module cleanup: that cleanup's error or skip ---------

CLEANUPS = {
    "zoo/test_class_cleanups.py": '''\
import unittest

import pytest


class ClassCleanupFails(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.addClassCleanup(pytest.fail, "could not drop the table")

    def test_a(self):
        pass


class ClassCleanupSkips(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.addClassCleanup(pytest.skip, "nothing to drop")

    def test_a(self):
        pass


class ClassCleanupAfterFailedSetUp(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.addClassCleanup(pytest.fail, "could not close the socket")
        raise RuntimeError("no network")

    def test_a(self):
        pass
''',
    "zoo/test_module_cleanup_fails.py": '''\
import unittest

import pytest


def setUpModule():
    unittest.addModuleCleanup(pytest.fail, "could not unmount")


class ModuleCleanupFails(unittest.TestCase):
    def test_a(self):
        pass
''',
    "zoo/test_module_cleanup_skips.py": '''\
import unittest

import pytest


def setup_module():
    unittest.addModuleCleanup(pytest.skip, "nothing mounted")


def teardown_module():
    pass


class TestModuleCleanupSkips:
    def test_a(self):
        pass
''',
}


@pytest.fixture
def cleanups(tmp_path, views):
    return Client(views(write_image(tmp_path / "image", {**FILES, **CLEANUPS})))


@pytest.mark.parametrize("class_name, fixture, outcome, said", [
    ("ClassCleanupFails", "tearDownClass (zoo.test_class_cleanups.ClassCleanupFails)",
     {"outcome": "error", "exception": "Failed"}, "could not drop the table"),
    ("ClassCleanupSkips", "tearDownClass (zoo.test_class_cleanups.ClassCleanupSkips)",
     {"outcome": "skipped"}, "nothing to drop"),
    ("ModuleCleanupFails", "tearDownModule (zoo.test_module_cleanup_fails)",
     {"outcome": "error", "exception": "Failed"}, "could not unmount"),
    ("TestModuleCleanupSkips", "teardown_module (zoo.test_module_cleanup_skips)",
     {"outcome": "skipped"}, "nothing mounted")])
def test_pytest_fail_or_skip_in_a_class_or_module_cleanup_is_that_cleanups_error_or_skip(
        cleanups, class_name, fixture, outcome, said):
    # unittest runs cleanups catching Exceptions only: pytest's BaseException ended the
    # whole run, the call answering it ("Failed: could not drop the table").
    ran = cleanups.ok("run_test_class", className=class_name)["structuredContent"]
    errors = 1 if outcome["outcome"] == "error" else 0
    assert {k: ran[k] for k in ("run", "passed", "fixtureErrors")} == {"run": 1, "passed": 1, "fixtureErrors": errors}
    assert ran["failed"] == [{"test": fixture, **outcome, "message": said}]
    # and the run goes on to the tests after it
    listed = cleanups.ok("list_failing_tests", classNames=[class_name, "ZooTest"])["structuredContent"]
    assert (listed["run"], listed["notRun"]) == (4, 0)
    assert [f["test"] for f in listed["failing"]] == [fixture] * errors + [
        "zoo.test_zoo.ZooTest.test_error", "zoo.test_zoo.ZooTest.test_fail"]


def test_pytest_fail_in_the_class_cleanup_of_a_failed_class_setup_is_listed_after_it(cleanups):
    ran = cleanups.ok("run_test_class", className="ClassCleanupAfterFailedSetUp")["structuredContent"]
    assert {k: ran[k] for k in ("run", "notRun", "fixtureErrors")} == {"run": 0, "notRun": 1, "fixtureErrors": 2}
    assert [(f["test"], f["exception"], f["message"]) for f in ran["failed"]] == [
        ("setUpClass (zoo.test_class_cleanups.ClassCleanupAfterFailedSetUp)", "RuntimeError", "no network"),
        ("setUpClass (zoo.test_class_cleanups.ClassCleanupAfterFailedSetUp)", "Failed",
         "could not close the socket")]


def test_the_class_cleanups_runner_is_the_classs_own_again_after_the_run(cleanups):
    cleanups.ok("run_test_class", className="ClassCleanupFails")
    module = cleanups.view.module("zoo.test_class_cleanups")
    assert "doClassCleanups" not in vars(module.ClassCleanupFails)
    assert module.ClassCleanupFails._class_cleanups == []


# -- a test module that cannot be loaded is named, never silently green -----------------

def test_a_test_module_that_cannot_be_loaded_is_named_by_the_listing_and_the_failing_tests(
        tmp_path, views):
    zoo = {rel: source for rel, source in FILES.items() if rel.startswith("zoo/")}
    image = write_image(tmp_path / "image", {
        **zoo, "zoo/test_missing.py": "import unittest\nimport no_such_module_xyz\n\n\n"
        "class MissingTest(unittest.TestCase):\n    def test_a(self):\n        pass\n",
        "zoo/test_typo.py": "import unittest\n\n\nclass TypoTest(unittest.TestCase)\n    pass\n"})
    client = Client(views(image))
    listed = client.ok("list_test_classes")
    assert listed["structuredContent"] == {"testClasses": ["zoo.test_zoo.ZooTest"], "total": 1, "notLoaded": [
        "image module zoo.test_missing failed to import: ModuleNotFoundError: "
        "No module named 'no_such_module_xyz'",
        "image module zoo.test_typo does not compile: line 4: expected ':'"]}
    assert text(listed).splitlines()[1] == (
        "(not loaded, so its tests are unknown and were not run: image module zoo.test_missing "
        "failed to import: ModuleNotFoundError: No module named 'no_such_module_xyz')")
    failing = client.ok("list_failing_tests")
    assert failing["structuredContent"]["notLoaded"] == listed["structuredContent"]["notLoaded"]
    assert text(failing).startswith("zoo.test_zoo.ZooTest.test_error (error)")
    assert [line.split(": image module ")[1].split()[0] for line in text(failing).splitlines()[-2:]] == [
        "zoo.test_missing", "zoo.test_typo"]
    # Naming the classes runs only those: nothing about the rest of the image.
    assert "notLoaded" not in client.ok("list_failing_tests", classNames=["ZooTest"])["structuredContent"]


def test_list_failing_tests_with_nothing_failing_still_names_what_could_not_be_loaded(tmp_path, views):
    image = write_image(tmp_path / "image", {
        "ok_test.py": "import unittest\n\n\nclass GreenTest(unittest.TestCase):\n"
        "    def test_a(self):\n        pass\n",
        "broken_test.py": "raise RuntimeError('no')\n"})
    answer = text(Client(views(image)).ok("list_failing_tests"))
    assert answer.splitlines() == [
        "no failing tests among those run (1 run), but 1 image modules could not be loaded:",
        "(not loaded, so its tests are unknown and were not run: image module broken_test "
        "failed to import: RuntimeError: no)"]


def test_a_run_with_thousands_of_long_failures_is_answered_with_whole_counts(tmp_path, views):
    # Listed whole, 3,000 failures of 10,000 characters were more than a frame can carry:
    # the run's answer, counts and all, was lost.
    body = "".join(f"    def test_{i:04d}(self):\n        self.fail('x' * 20000)\n\n" for i in range(3000))
    image = write_image(tmp_path / "image", {
        "many_test.py": f"import unittest\n\n\nclass ManyTest(unittest.TestCase):\n{body}"})
    client = Client(views(image))
    result = client.ok("run_test_class", className="ManyTest")
    ran = result["structuredContent"]
    assert (ran["run"], ran["failures"], ran["failedTotal"], len(ran["failed"])) == (3000, 3000, 3000, 200)
    assert ran["failed"][0]["test"] == "many_test.ManyTest.test_0000"
    assert text(result).splitlines()[-1] == ("(note: listing 200 of 3000 failing entries; "
                                             "run_test_method or describe_test_failure shows any one)")
    assert len(json.dumps(result)) < 10_000_000
    failing = client.ok("list_failing_tests")["structuredContent"]
    assert (failing["run"], failing["failingTotal"], len(failing["failing"])) == (3000, 3000, 200)


def test_a_test_with_thousands_of_failing_subtests_is_described_with_its_others_capped(tmp_path, views):
    # describe_test_failure listed every other failure under `also`: 4,000 failing
    # subtests made an answer too big to send.
    image = write_image(tmp_path / "image", {"sub_test.py": (
        "import unittest\n\n\nclass SubTest(unittest.TestCase):\n    def test_many(self):\n"
        "        for i in range(4000):\n            with self.subTest(i=i):\n"
        "                self.fail('x' * 20000)\n")})
    detail = Client(views(image)).ok("describe_test_failure", className="SubTest", selector="test_many")
    described = detail["structuredContent"]
    assert (described["alsoTotal"], len(described["also"])) == (3999, 200)
    assert "Traceback" in described["traceback"]                 # the first failure's, whole
    assert "(note: listing 200 of 3999 failing entries;" in text(detail)
    assert len(json.dumps(detail)) < 10_000_000


# -- selectors and class names as a client may send them --------------------------------

UNICODE_TEST = '''\
import unittest


class UnicodeTest(unittest.TestCase):
    def test_\u00fcber(self):
        pass

    def test_find(self):
        self.fail("found")
'''


@pytest.fixture
def named(tmp_path, views):
    return Client(views(write_image(tmp_path / "image", {**FILES, "uni_test.py": UNICODE_TEST})))


@pytest.mark.parametrize("selector, test_id", [
    ("test_u\u0308ber", "uni_test.UnicodeTest.test_\u00fcber"),   # decomposed, as some clients send it
    ("test_\ufb01nd", "uni_test.UnicodeTest.test_find"),           # the ligature Python reads as fi
])
def test_a_selector_is_read_as_python_reads_identifiers(named, selector, test_id):
    ran = named.ok("run_test_method", className="UnicodeTest", selector=selector)["structuredContent"]
    assert ran["run"] == 1, ran
    detail = named.ok("describe_test_failure", className="UnicodeTest", selector=selector)
    assert detail["structuredContent"]["test"] == test_id


def test_a_huge_selector_is_echoed_cut(named):
    message = named.error("run_test_method", "notFound", className="UnicodeTest", selector="test" * 50_000)
    assert len(message) < 1000 and "(200000 characters)" in message, message[:300]


def test_list_failing_tests_refuses_an_empty_class_list_saying_to_omit_it(client):
    # [] ran no test and answered "no failing tests (0 run)": a green for nothing run.
    message = client.error("list_failing_tests", "invalidParams", classNames=[])
    assert message == ("classNames is an empty list, which names no test class to run; omit "
                       "classNames to run every test class, or name the classes")
    assert client.progress == []   # nothing ran
    assert client.ok("list_failing_tests")["structuredContent"]["run"] > 0


def test_list_failing_tests_runs_a_class_named_twice_once(named):
    failing = named.ok("list_failing_tests", classNames=["UnicodeTest", "uni_test.UnicodeTest"])
    assert (failing["structuredContent"]["run"], len(failing["structuredContent"]["failing"])) == (2, 1)


# -- what tests print ----------------------------------------------------------------

PRINTING = '''\
import sys
import unittest


class PrintingTest(unittest.TestCase):
    def test_debugged(self):
        print("value is", 41)
        print("warned", file=sys.stderr)
        self.assertEqual(41, 42)

    def test_floods(self):
        for _ in range(300):
            sys.stdout.write("y" * 10_000)
'''


@pytest.fixture
def printing(tmp_path, views):
    return Client(views(write_image(tmp_path / "image", {**FILES, "printing_test.py": PRINTING})))


def test_describe_test_failure_shows_what_the_test_printed(printing):
    detail = printing.ok("describe_test_failure", className="PrintingTest", selector="test_debugged")
    assert detail["structuredContent"]["output"] == "value is 41\nwarned\n"
    assert text(detail).splitlines()[-3:] == ["printed (stdout and stderr):", "value is 41", "warned"]


def test_what_a_test_prints_is_kept_up_to_a_cap_and_the_rest_counted(printing):
    detail = printing.ok("describe_test_failure", className="PrintingTest", selector="test_floods")
    output = detail["structuredContent"]["output"]
    assert output == "y" * 1_000_000 + ("\n[... 2,000,000 more characters of the output cut: a test's "
                                        "report keeps the first 1,000,000]\n")
    assert printing.ok("run_test_class", className="PrintingTest")["structuredContent"]["failures"] == 1


def test_a_test_case_with_only_run_test_runs_it_as_unittest_does(tmp_path, views):
    image = write_image(tmp_path / "image", {
        "single_test.py": "import unittest\n\n\nclass SingleTest(unittest.TestCase):\n"
        "    def runTest(self):\n        self.fail('the one test')\n"})
    client = Client(views(image))
    ran = client.ok("run_test_class", className="SingleTest")["structuredContent"]
    assert (ran["run"], ran["failures"]) == (1, 1), ran
    assert client.ok("describe_test_failure", className="SingleTest",
                     selector="runTest")["structuredContent"]["message"] == "the one test"
    assert client.ok("run_test_method", className="SingleTest",
                     selector="runTest")["structuredContent"]["failures"] == 1
    # and the tool says so to a client choosing the selector (it said test* only)
    tools = client.server.handle({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})["result"]["tools"]
    assert "or runTest for a TestCase with no test*" in {t["name"]: t for t in tools}["run_test_method"]["description"]


@pytest.mark.parametrize("marked", ["False", "0", "None"])   # pytest leaves out any false value
def test_a_pytest_style_class_marked_not_a_test_is_not_one(tmp_path, views, marked):
    image = write_image(tmp_path / "image", {
        "helpers_test.py": f"class TestData:\n    __test__ = {marked}\n\n    def test_shape(self):\n"
        "        return 'a helper, not a test'\n\n\nclass TestReal:\n    def test_a(self):\n        pass\n"})
    client = Client(views(image))
    assert client.ok("list_test_classes")["structuredContent"]["testClasses"] == ["helpers_test.TestReal"]
    assert "not a test class" in client.error("run_test_class", "notFound", className="TestData")


def test_a_test_writing_bytes_to_stdout_passes_and_its_output_is_shown(tmp_path, views):
    image = write_image(tmp_path / "image", {
        "binary_test.py": "import sys\nimport unittest\n\n\nclass BinaryTest(unittest.TestCase):\n"
        "    def test_writes_bytes(self):\n        sys.stdout.buffer.write(b'\\x89PNG\\xff')\n"
        "        self.assertEqual(sys.stdout.encoding.lower(), 'utf-8')\n"})
    client = Client(views(image))
    detail = client.ok("describe_test_failure", className="BinaryTest", selector="test_writes_bytes")
    assert detail["structuredContent"] == {"test": "binary_test.BinaryTest.test_writes_bytes",
                                           "outcome": "pass", "output": "\\x89PNG\\xff"}


def test_what_a_test_writes_to_descriptors_1_and_2_is_its_output(tmp_path, views):
    # os.write(1, ...) and a subprocess's output went past sys.stdout to the worker's own fds.
    image = write_image(tmp_path / "image", {
        "fd_test.py": "import os\nimport subprocess\nimport unittest\n\n\nclass FdTest(unittest.TestCase):\n"
        "    def test_writes(self):\n        print('printed')\n        os.write(1, b'to fd 1\\n')\n"
        "        subprocess.run(['echo', 'from echo'])\n        os.write(2, b'to fd 2\\n')\n"
        "        self.fail('shown')\n"})
    client = Client(views(image))
    detail = client.ok("describe_test_failure", className="FdTest", selector="test_writes")
    assert detail["structuredContent"]["output"] == "printed\nto fd 1\nfrom echo\nto fd 2\n", detail
    assert client.ok("run_test_class", className="FdTest")["structuredContent"]["failures"] == 1


def test_a_failure_line_says_what_the_entry_has_and_keeps_the_message_whole(tmp_path, views):
    image = write_image(tmp_path / "image", {
        "said_test.py": "import unittest\n\n\nclass SaidTest(unittest.TestCase):\n"
        "    @unittest.expectedFailure\n    def test_passes(self):\n        pass\n\n"
        "    def test_colon(self):\n        self.fail('expected one of: ')\n"})
    client = Client(views(image))
    assert text(client.ok("run_test_class", className="SaidTest")).splitlines()[1:] == [
        "FAILURE: said_test.SaidTest.test_colon: AssertionError: expected one of: ",
        "UNEXPECTEDSUCCESS: said_test.SaidTest.test_passes: the test passed, but it is marked "
        "@expectedFailure"]
    assert text(client.ok("list_failing_tests")).splitlines() == [
        "said_test.SaidTest.test_colon (failure): AssertionError: expected one of: ",
        "said_test.SaidTest.test_passes (unexpectedSuccess): the test passed, but it is marked "
        "@expectedFailure", "(2 run)"]


GUARDED_TESTS = '''\
import sys
import unittest

if sys.version_info >= (3,):
    class ModernTest(unittest.TestCase):
        def test_ok(self):
            pass

        def test_bad(self):
            self.assertEqual(1, 2)

try:
    import json
except ImportError:
    pass
else:
    class TestWithJson:
        def test_dumps(self):
            assert json.dumps(1) == "2"
'''


def test_test_classes_under_a_top_level_if_or_try_are_listed_and_run(tmp_path, views):
    # A class under `if sys.version_info...:` was never collected: list_failing_tests
    # answered "no failing tests" while one of its tests failed.
    client = Client(views(write_image(tmp_path / "image", {**FILES, "zoo/test_guarded.py": GUARDED_TESTS})))
    assert set(client.ok("list_test_classes")["structuredContent"]["testClasses"]) >= {
        "zoo.test_guarded.ModernTest", "zoo.test_guarded.TestWithJson"}
    failing = {f["test"] for f in client.ok("list_failing_tests")["structuredContent"]["failing"]}
    assert {"zoo.test_guarded.ModernTest.test_bad", "zoo.test_guarded.TestWithJson.test_dumps"} <= failing
    for name in ("ModernTest", "zoo.test_guarded.ModernTest"):
        result = client.ok("run_test_class", className=name)["structuredContent"]
        assert (result["class"], result["run"], result["failures"]) == ("zoo.test_guarded.ModernTest", 2, 1)
    assert client.ok("run_test_method", className="TestWithJson",
                     selector="test_dumps")["structuredContent"]["failures"] == 1
    assert client.ok("describe_test_failure", className="ModernTest",
                     selector="test_bad")["structuredContent"]["exception"] == "AssertionError"
    assert client.ok("list_failing_tests", classNames=["ModernTest"])["structuredContent"]["run"] == 2


def test_each_distinct_class_name_given_to_list_failing_tests_is_resolved_once(tmp_path, views, monkeypatch):
    # A class named twice runs once, but every name was resolved: 10,000 copies of one
    # bare name held the worker for seconds, each scanning the whole image.
    from gsmcpd.image import catalog
    client = Client(views(write_image(tmp_path / "image", FILES)))
    once = client.ok("run_test_class", className="ZooTest")["structuredContent"]["run"]
    resolved = []
    resolve = catalog.resolve_class
    monkeypatch.setattr(catalog, "resolve_class", lambda *a, **k: resolved.append(a[1]) or resolve(*a, **k))
    listed = client.ok("list_failing_tests", classNames=["ZooTest"] * 1000 + ["zoo.test_zoo.ZooTest"])
    assert listed["structuredContent"]["run"] == once     # the bare and the qualified name: one class
    assert sorted(resolved) == ["ZooTest", "zoo.test_zoo.ZooTest"]


class _Skipping(unittest.TestCase):
    __test__ = False   # run by the test below, not collected

    def test_runs(self):
        pass

    def test_marked(self):
        pass

    def test_skips_a_subtest(self):
        with self.subTest(i=1):
            self.skipTest("not this one")


def test_a_test_skipped_without_being_started_is_run_once_and_reported_done_once():
    # Python 3.12.0 and 3.12.1's unittest skips a test marked @skip with addSkip and
    # stopTest, no startTest (CPython gh-113267): it was tallied as not run.
    done = []
    result = _Result(on_test_done=lambda test: done.append(test.id().rpartition(".")[2]))
    _Skipping("test_runs").run(result)
    marked = _Skipping("test_marked")
    result.addSkip(marked, "marked")
    result.stopTest(marked)
    _Skipping("test_skips_a_subtest").run(result)   # its subtest's skip is not a test of its own
    assert result.tally(collected=3) == {"run": 3, "notRun": 0}
    assert done == ["test_runs", "test_marked", "test_skips_a_subtest"]
    assert [(entry["test"].rpartition(".")[2], entry["outcome"]) for entry in result.outcomes] == [
        ("test_runs", "pass"), ("test_marked", "skipped"), ("test_skips_a_subtest (i=1)", "skipped")]
