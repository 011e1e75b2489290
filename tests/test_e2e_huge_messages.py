"""End-to-end: an exception of the user's code with a huge message (900 KB) is sent whole once
in a tool's answer, its text, and structuredContent repeats only its start (REPEAT_CAP):
execute_code's traceback, a test's traceback (describe_test_failure) and a deletion's
trial import each sent it whole two or three times, a module's import error twice. Many
modules' import errors are told within one budget per answer, all told (toolset.budgeted):
80 modules failing with such a message made an answer past the frame's cap, which could not
be sent."""

import json

import pytest

from gsmcpd.worker.toolset import ERRORS_BUDGET, PAST_BUDGET_CAP, REPEAT_CAP
from helpers import Daemon, cut_notes, open_session
from test_e2e_trial_import import DRAWN
from test_tools_support import write_image

# within the 1,000,000 characters execute_code and a test's report keep of a traceback
HUGE = "raise ValueError('first line\\n' + 'x' * 900_000)"
MESSAGE = "first line\n" + "x" * 900_000
CUT = "more characters of %s cut: a repeat of the answer's text keeps the first 10,000]\n"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    files = {"huge_test.py": "import unittest\n\n\nclass HugeTest(unittest.TestCase):\n"
                             "    def test_raises(self):\n        " + HUGE + "\n",
             "drawn.py": DRAWN + "if not hasattr(Random, 'choice'):\n    " + HUGE + "\n",
             "loud.py": "class Loud:\n    pass\n\n\n" + HUGE + "\n"}
    tmp = tmp_path_factory.mktemp("huge-messages")
    with Daemon(tmp, env={"GS_MCP_IMAGE": str(write_image(tmp / "image", files))}) as running:
        yield running


def answer(daemon, tool, arguments):
    """(the answer's size in bytes, its result)"""
    c = open_session(daemon)
    try:
        response = c.call("tools/call", {"name": tool, "arguments": arguments})
        assert response.status == 200, response
        return len(response.body), json.loads(response.body)["result"]
    finally:
        c.close()


def test_execute_code_sends_the_traceback_whole_once(daemon):
    size, result = answer(daemon, "execute_code", {"code": HUGE})
    assert size < len(MESSAGE) + 1000 + 2 * REPEAT_CAP   # it was 2 MB
    text = result["content"][0]["text"]
    assert text.startswith('Traceback (most recent call last):\n  File "<workspace-1>", line 1, in <module>\n')
    assert text.endswith("ValueError: " + MESSAGE)
    error = result["structuredContent"]["error"]
    assert error["kind"] == "other" and error["message"].startswith(text[:REPEAT_CAP])
    assert error["message"].endswith(CUT % "the message") and len(error["message"]) < REPEAT_CAP + 200


def test_execute_code_s_cut_error_is_repeated_counting_what_the_message_had(daemon):
    # The repeat counted what the text's cuts (of the output and the traceback, each kept to
    # 1,000,000) had past 10,000: 1,990,2xx more characters, of a message of 4,500,0xx.
    code = "import sys\nsys.stdout.write('p' * 1_500_000)\nraise ValueError('x' * 3_000_000)"
    _, result = answer(daemon, "execute_code", {"code": code})
    text = result["content"][0]["text"]
    printed, raised = cut_notes(text)
    assert printed == (500_000, 1_000_000)
    assert sum(raised) == text.index("ValueError: xxx") - text.index("Traceback") + len("ValueError: ") + 3_000_000
    [repeat] = cut_notes(result["structuredContent"]["error"]["message"])
    assert repeat[1] == REPEAT_CAP and sum(repeat) == sum(printed) + len("\n") + sum(raised)


def test_describe_test_failure_sends_the_traceback_whole_once(daemon):
    size, result = answer(daemon, "describe_test_failure", {"className": "huge_test.HugeTest", "selector": "test_raises"})
    assert size < len(MESSAGE) + 1000 + 4 * REPEAT_CAP   # it was 2 MB
    text = result["content"][0]["text"]
    assert text.endswith("ValueError: " + MESSAGE)
    said = result["structuredContent"]
    assert said["exception"] == "ValueError" and said["traceback"].endswith(CUT % "the traceback")
    assert 'huge_test.py", line 6, in test_raises\n    ' + HUGE + "\nValueError: first line\nxxx" in said["traceback"]
    assert len(said["traceback"]) < REPEAT_CAP + 200


def test_a_deletions_trial_refusal_sends_the_message_whole_once(daemon):
    size, result = answer(daemon, "delete_method", {"className": "drawn.Random", "selector": "choice"})
    assert size < len(MESSAGE) + 1000 + 3 * REPEAT_CAP   # it was 3 MB
    assert ("it failed with ValueError: %s, on line 12 (%r). Nothing changed." % (MESSAGE, HUGE)
            in result["content"][0]["text"])
    error = result["structuredContent"]["error"]
    assert error["kind"] == "refused" and error["message"].endswith(CUT % "the message")
    failed = error["importFailure"]
    assert (failed["error"], failed["at"]) == ("ValueError", {"line": 12, "statement": HUGE})
    assert failed["message"] == MESSAGE[:REPEAT_CAP] + f"\n[... {len(MESSAGE) - REPEAT_CAP:,} " + CUT % "the message"


def test_a_modules_import_error_is_sent_whole_once(daemon):
    for tool, arguments, what, where in [
            ("describe_class", {"className": "loud.Loud"}, "the reason", lambda said: said["fromSource"]),
            ("compile_method", {"className": "loud", "source": "def f():\n    return 1\n"}, "the import error",
             lambda said: said["importErrors"]["loud"])]:
        size, result = answer(daemon, tool, arguments)
        assert size < len(MESSAGE) + 1000 + REPEAT_CAP, tool   # it was 2 MB
        assert "ValueError: " + MESSAGE in result["content"][0]["text"]
        said = where(result["structuredContent"])
        assert said.endswith(CUT % what) and len(said) < REPEAT_CAP + 200, said[-300:]
        assert "ValueError: first line\nxxx" in said


IMPORTERS = [f"importer{i:02}" for i in range(80)]
BASE = "class Base:\n    def ok(self):\n        return True\n"
IMPORTER = "import base\n\nif not base.Base().ok():\n    " + HUGE + "\n"
BOUND = ERRORS_BUDGET + len(IMPORTERS) * (PAST_BUDGET_CAP + REPEAT_CAP + 1000)


def test_a_change_breaking_80_modules_is_answered_within_the_budget(tmp_path):
    files = {"base.py": BASE, **{f"{name}.py": IMPORTER for name in IMPORTERS}}
    with Daemon(tmp_path, env={"GS_MCP_IMAGE": str(write_image(tmp_path / "image", files))}) as running:
        c = open_session(running)
        try:
            def call(tool, arguments):
                response = c.call("tools/call", {"name": tool, "arguments": arguments})
                assert response.status == 200, response
                return len(response.body), json.loads(response.body)["result"]
            call("list_test_classes", {})   # loads them: bringing in the change re-imports them
            answer(running, "compile_method", {"className": "base.Base",   # another session's
                                               "source": "def ok(self):\n    return False\n"})
            size, result = call("refresh", {})
            assert size < BOUND   # it was 72 MB, past the frame's cap: "the result cannot be sent"
            text = result["content"][0]["text"]
            assert not result.get("isError") and "brought in: base" in text
            assert sorted(result["structuredContent"]["importErrors"]) == IMPORTERS
            assert "ValueError: " + MESSAGE in text
            assert text.count("more characters of the import error cut: an answer holding over") == len(IMPORTERS) - 2
            size, result = call("list_test_classes", {})
            assert size < BOUND
            assert len(result["structuredContent"]["notLoaded"]) == len(IMPORTERS)
            assert result["content"][0]["text"].count("more characters of the reason cut") == len(IMPORTERS) - 2
            size, result = call("execute_code", {"code": "import importer79"})   # as the cut note says
            assert "ValueError: " + MESSAGE in result["content"][0]["text"]
        finally:
            c.close()


def test_a_deletion_and_the_commit_it_brings_in_breaking_80_modules_each_share_one_budget(tmp_path):
    # The deletion's note and the lines of what its commit brought in had a budget each
    # (4 MB of errors), and structuredContent, budgeted once in module order, said cut to
    # 1,000 characters errors the text held whole.
    deleting = [f"user{i:02}" for i in range(80)]
    user = "import gone\n\nif not hasattr(gone, 'Gone'):\n    " + HUGE + "\n"
    files = {"base.py": BASE, "gone.py": "class Gone:\n    pass\n",
             **{f"{name}.py": IMPORTER for name in IMPORTERS}, **{f"{name}.py": user for name in deleting}}
    with Daemon(tmp_path, env={"GS_MCP_IMAGE": str(write_image(tmp_path / "image", files))}) as running:
        c = open_session(running)
        try:
            assert c.call("tools/call", {"name": "list_test_classes", "arguments": {}}).status == 200
            answer(running, "compile_method", {"className": "base.Base",   # another session's
                                               "source": "def ok(self):\n    return False\n"})
            response = c.call("tools/call", {"name": "delete_class", "arguments": {"className": "gone.Gone"}})
            assert response.status == 200, response
            result = json.loads(response.body)["result"]
        finally:
            c.close()
    text, said = result["content"][0]["text"], result["structuredContent"]["importErrors"]
    assert not result.get("isError") and "brought in others' commits to base" in text
    assert sorted(said) == IMPORTERS + deleting
    assert len(text) < ERRORS_BUDGET + len(said) * (PAST_BUDGET_CAP + 400)   # it was 4 MB
    cut = "more characters of the import error cut: an answer holding over"
    assert text.count(cut) == len(said) - 2
    # but the one crossing the budget, its cut past REPEAT_CAP: structuredContent repeats its start
    assert sum(cut in error for error in said.values()) == len(said) - 3
    whole = "ValueError: " + MESSAGE
    assert text.count(whole) == 2   # the first two told, the note's: the crossing one cut shorter
    for module in deleting[:2]:
        assert f"{module} now fails to import: {whole};" in text
        assert said[module].startswith(whole[:REPEAT_CAP]) and said[module].endswith(CUT % "the import error")
    for module in IMPORTERS:   # the commit's lines, past the budget: as structuredContent says
        assert f"import error in {module}: {said[module]}" in text
