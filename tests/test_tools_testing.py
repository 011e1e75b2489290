"""The testing tools on pytest-style classes (plain Test* classes) beside unittest
ones: listing, running, fixtures, bare-assert messages."""

import json

import pytest

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
        assert "not a test class" in client.error("run_test_class", "notFound", className=not_a_test)


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
