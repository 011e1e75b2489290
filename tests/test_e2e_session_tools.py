"""The testing, execution and session tools as a demanding user drives them, end to end
through the real daemon: class and module fixtures that fail, a test module that cannot
be imported, a run with more failures than an answer can carry, code reading stdin, and
what the workspace defines found through its module.

One daemon per module on a throwaway image; each test works on classes of its own.
"""

import pytest

from helpers import open_session, tool_text
from test_e2e_image_tools import daemon, run  # noqa: F401  (the daemon fixture: on this module's image)
from test_e2e_tools import error, structured
from test_tools_support import write_image
from test_tools_testing import FIXTURES as UNIT_FIXTURES

# The unit tests' fixture classes (test_tools_testing), and a test named in Unicode.
FIXTURES = UNIT_FIXTURES + '''

class UnicodeTest(unittest.TestCase):
    def test_\u00fcber(self):
        pass
'''

MANY = "import unittest\n\n\nclass ManyTest(unittest.TestCase):\n" + "".join(
    f"    def test_{i:03d}(self):\n        self.fail('number {i}')\n\n" for i in range(300))

IMAGE = {
    "t_fixtures.py": FIXTURES,
    "t_many.py": MANY,
    "t_missing.py": "import unittest\nimport no_such_module_xyz\n\n\nclass MissingTest(unittest.TestCase):\n"
                    "    def test_a(self):\n        pass\n",
    "other.py": "VALUE = 1\n",
}


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    return write_image(tmp_path_factory.mktemp("image"), IMAGE)


# -- execute_code ---------------------------------------------------------------------

def test_code_reading_stdin_reads_dev_null_whatever_files_it_opened(c):
    # The descriptor multiprocessing left behind for sys.stdin is reused by the next
    # files the code opens: stdin must not read them.
    run(c, "import tempfile\nwritten = tempfile.NamedTemporaryFile('w+')\n"
           "written.write('not stdin')\nwritten.flush()\n"
           "kept = [open(written.name) for _ in range(20)]")
    assert run(c, "import sys\n(sys.stdin.fileno(), sys.stdin.read())") == "(0, '')"
    assert "EOFError" in error(c, "execute_code", "other", code="input('name? ')")


def test_what_the_workspace_defines_pickles_and_makes_dataclasses(c):
    code = ("from __future__ import annotations\nimport dataclasses, pickle\n"
            "@dataclasses.dataclass\nclass Point:\n    x: int\n"
            "pickle.loads(pickle.dumps(Point(2)))")
    assert run(c, code) == "Point(x=2)"


def test_binary_written_to_stdout_is_shown_with_undecodable_bytes_escaped(c):
    answer = structured(c, "execute_code", code="import sys\nsys.stdout.buffer.write(b'\\x89PNG\\xff ok')\n"
                                                 "sys.stdout.encoding")
    assert (answer["stdout"], answer["result"]) == ("\\x89PNG\\xff ok", "'utf-8'")


def test_a_thread_pool_an_earlier_call_made_does_this_calls_work_and_prints_into_its_answer(c):
    # As a notebook's running cell takes what any thread prints: a pool kept across
    # calls, REPL-style, prints into the call it works for (its output was lost).
    run(c, "from concurrent.futures import ThreadPoolExecutor\npool = ThreadPoolExecutor(1)\n"
           "pool.submit(print, 'warm').result()")
    later = structured(c, "execute_code", code="pool.submit(print, 'from the pool').result()\nprint('mine')")
    assert later["stdout"] == "from the pool\nmine\n"


def test_code_printing_in_a_loop_is_cut_with_an_exact_note_and_not_held_whole(c):
    # sys.stdout is the call's stream while the code runs: what it holds after
    # 20,000,000 characters printed is what the worker keeps in memory of them.
    answer = structured(c, "execute_code", code=(
        "import sys\nfor i in range(20_000):\n    print('x' * 999)\nsys.stdout.tell()"))
    assert answer["stdout"] == ("x" * 999 + "\n") * 1000 + (
        "\n[... 19,000,000 more characters of stdout cut: execute_code keeps the first 1,000,000]\n")
    assert answer["result"] == "1000000"


# -- testing --------------------------------------------------------------------------

PER_TEST = ("passed", "failures", "errors", "skipped", "expectedFailures", "unexpectedSuccesses")


def test_a_failing_set_up_class_is_counted_apart_and_the_counts_add_up(c):
    ran = structured(c, "run_test_class", className="SetUpClassFails")
    assert (ran["run"], ran["notRun"], ran["fixtureErrors"]) == (0, 2, 1)
    assert sum(ran[key] for key in PER_TEST) == ran["run"]
    assert ran["failed"] == [{"test": "setUpClass (t_fixtures.SetUpClassFails)", "outcome": "error",
                              "exception": "RuntimeError", "message": "setUpClass boom"}]
    after = structured(c, "run_test_class", className="TearDownClassFails")
    assert (after["run"], after["passed"], after["errors"], after["fixtureErrors"]) == (1, 1, 0, 1)


def test_describe_test_failure_gives_the_first_failure_and_what_the_test_printed(c):
    detail = structured(c, "describe_test_failure", className="TearDownFails", selector="test_b")
    assert (detail["exception"], detail["message"]) == ("AssertionError", "the body fails first")
    assert [(e["exception"], e["message"]) for e in detail["also"]] == [("RuntimeError", "tearDown boom")]
    assert detail["output"] == "debugging test_b\n"
    passed = tool_text(c.tool("describe_test_failure", className="TearDownClassFails", selector="test_a"))
    assert passed.startswith("t_fixtures.TearDownClassFails.test_a: pass, but a class or module fixture failed:")


def test_a_test_module_that_cannot_be_imported_is_named_not_left_out(c):
    reason = ("image module t_missing failed to import: ModuleNotFoundError: "
              "No module named 'no_such_module_xyz'")
    assert structured(c, "list_test_classes")["notLoaded"] == [reason]
    failing = c.tool("list_failing_tests")
    assert failing["structuredContent"]["notLoaded"] == [reason]
    assert tool_text(failing).endswith(f"(not loaded, so its tests are unknown and were not run: {reason})")


def test_a_run_with_hundreds_of_failures_lists_two_hundred_and_counts_them_all(c):
    ran = structured(c, "run_test_class", className="ManyTest")
    assert (ran["run"], ran["failures"], ran["failedTotal"], len(ran["failed"])) == (300, 300, 300, 200)
    assert "listing 200 of 300 failing entries" in ran["note"]


def test_a_decomposed_selector_finds_the_test(c):
    assert structured(c, "run_test_method", className="UnicodeTest", selector="test_u\u0308ber")["passed"] == 1


# -- session --------------------------------------------------------------------------

def test_commit_names_what_another_sessions_commit_brought_in(daemon, c):
    other = open_session(daemon)
    try:
        assert "committed" in tool_text(other.tool(
            "compile_class_definition", dictionaryName="other", source="class Marker:\n    pass\n"))
    finally:
        other.close()
    nothing = structured(c, "commit")
    assert (nothing["committed"], nothing["broughtIn"]) == ([], ["other"])
    assert run(c, "import other\nhasattr(other, 'Marker')") == "True"


def theirs_committed_by_another_session(daemon, module):
    """A new module holding class Theirs, committed by a session of its own."""
    other = open_session(daemon)
    try:
        structured(other, "add_dictionary", dictionaryName=module)
        structured(other, "compile_class_definition", dictionaryName=module, source="class Theirs:\n    pass\n")
    finally:
        other.close()


def test_an_abort_names_what_another_sessions_commit_brought_in(daemon, c):
    # Its view steps onto the image as it is now, others' commits and all: which modules
    # that changed under the session is said, as commit and refresh say it.
    theirs_committed_by_another_session(daemon, "aborted_into")
    aborted = c.tool("abort")
    assert aborted["structuredContent"]["broughtIn"] == ["aborted_into"], aborted
    assert "\nbrought in others' commits to aborted_into" in tool_text(aborted)
    assert run(c, "import aborted_into\naborted_into.Theirs.__name__") == "'Theirs'"


def test_a_mutation_tool_names_what_another_sessions_commit_brought_in(daemon, c):
    theirs_committed_by_another_session(daemon, "elsewhere")
    answer = c.tool("add_dictionary", dictionaryName="mine_here")
    assert not answer.get("isError"), answer
    assert (answer["structuredContent"]["committed"], answer["structuredContent"]["broughtIn"]) == (
        ["mine_here"], ["elsewhere"])
    assert tool_text(answer).endswith("\nbrought in others' commits to elsewhere")
    assert run(c, "import elsewhere\nelsewhere.Theirs.__name__") == "'Theirs'"
    quiet = structured(c, "compile_class_definition", dictionaryName="mine_here", source="class Ours:\n    pass\n")
    assert "broughtIn" not in quiet


def test_code_is_compiled_as_its_own_and_closing_its_stdout_keeps_the_answer(c):
    assert run(c, "def f(x: int):\n    pass\nf.__annotations__") == "{'x': <class 'int'>}"
    closed = structured(c, "execute_code", code="import sys\nprint('before')\nsys.stdout.close()\n6 * 7")
    assert (closed["stdout"], closed["result"]) == ("before\n", "42")
