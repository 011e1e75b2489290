"""Deletions the static rules let through, tried by importing the module apart as a new
session would (gsmcpd.image.trial): one that leaves the module failing to import is
refused, the module, the exception and the line named, nothing changed."""

import contextlib
import errno
import json
import os
import signal
import sys
import time

import pytest

from gsmcpd import procstat
from gsmcpd.image import trial
from gsmcpd.worker.toolset import REPEAT_CAP, repeated
from helpers import cut_notes
from test_tools_support import client, image, utf8_carries, views  # noqa: F401  (fixtures)

# random.py: `_inst = Random(); randint = _inst.randint`, read through an instance.
DRAWN = ("class Random:\n    def randint(self, a, b):\n        return a\n\n"
         "    def choice(self, seq):\n        return seq[0]\n\n\n"
         "_inst = Random()\nrandint = _inst.randint\nchoice = _inst.choice\n")
# functools.total_ordering needs one ordering method of the class's own.
ORDERED = ("import functools\n\n\n@functools.total_ordering\nclass Version:\n"
           "    def __init__(self, n):\n        self.n = n\n\n"
           "    def __eq__(self, other):\n        return self.n == other.n\n\n"
           "    def __lt__(self, other):\n        return self.n < other.n\n")
# datetime.timedelta: made by its __new__, and made at import below the class.
SPANNED = ("class Span:\n    def __new__(cls, days):\n        self = object.__new__(cls)\n"
           "        self.days = days\n        return self\n\n    def total(self):\n        return self.days\n\n\n"
           "Span.zero = Span(0)\n")
# A class and a function read at import two calls deep (enum's, typing's internals).
DEEP = ("class Helper:\n    pass\n\n\ndef helper():\n    return 1\n\n\n"
        "def _two():\n    return Helper(), helper()\n\n\ndef _one():\n    return _two()\n\n\nMADE = _one()\n")


def write(image, text, name="trial"):
    (image / f"{name}.py").write_text(text)


def refused(client, image, tool, name="trial", **arguments):
    before = (image / f"{name}.py").read_text()
    said = client.error(tool, "refused", **arguments)
    assert (image / f"{name}.py").read_text() == before
    assert client.view.source(name) == before and not client.view.has_changes
    return said


@pytest.mark.parametrize("text, selector, quoted, line, error", [
    (DRAWN, "randint", "randint = _inst.randint", 10, "AttributeError: 'Random' object has no attribute 'randint'"),
    (ORDERED, "__lt__", "@functools.total_ordering", 4,
     "ValueError: must define at least one ordering operation: < > <= >="),
    (SPANNED, "__new__", "Span.zero = Span(0)", 11, "TypeError: Span() takes no arguments"),
], ids=["through-an-instance", "total_ordering", "__new__"])
def test_delete_method_refuses_what_leaves_its_module_failing_to_import(client, image, text, selector,
                                                                         quoted, line, error):
    # Accepted and committed before: the module then imported in no new session.
    write(image, text)
    client.ok("refresh")
    cls = "Random" if text is DRAWN else "Version" if text is ORDERED else "Span"
    live = client.view.module("trial")
    said = refused(client, image, "delete_method", className=f"trial.{cls}", selector=selector)
    assert said.startswith(f"trial.{cls}.{selector} deleted, trial would no longer import in a new session: "
                           f"imported apart as this session would commit it, it failed with {error}, "
                           f"on line {line} ({quoted!r}).")
    assert selector in vars(getattr(live, cls)) and client.view.module("trial") is live


def test_delete_class_refuses_a_class_its_module_makes_calls_deep(client, image):
    write(image, DEEP)
    client.ok("refresh")
    said = refused(client, image, "delete_class", className="trial.Helper")
    assert ("it failed with NameError: name 'Helper' is not defined, on line 10 ('return Helper(), helper()'), "
            "run by line 17 ('MADE = _one()').") in said
    assert client.view.module("trial").Helper


def test_delete_method_refuses_a_module_function_its_module_calls_deep(client, image):
    write(image, DEEP)
    client.ok("refresh")
    said = refused(client, image, "delete_method", className="trial", selector="helper")
    assert said.startswith("trial.helper deleted, trial would no longer import in a new session")
    assert "with NameError: name 'helper' is not defined, on line 10" in said


def test_the_trial_sees_the_sessions_other_uncommitted_changes(client, image):
    # On disk conf names `go`; this session's uncommitted text names `alt`: a commit holds that.
    write(image, 'NAME = "go"\n', "conf")
    write(image, "import conf\n\n\nclass Thing:\n    def go(self):\n        return 1\n\n"
                 "    def alt(self):\n        return 2\n\n\nPICKED = getattr(Thing(), conf.NAME)\n")
    client.ok("refresh")
    client.view.set_source("conf", 'NAME = "alt"\n', live=False)
    said = client.error("delete_method", "refused", className="trial.Thing", selector="alt")
    assert "on line 12 ('PICKED = getattr(Thing(), conf.NAME)')." in said
    assert client.view.source("conf") == 'NAME = "alt"\n'


def test_a_module_failing_before_the_deletion_is_not_refused(client, image):
    write(image, DRAWN + "raise RuntimeError('already broken')\n")
    client.ok("refresh")
    result = client.ok("delete_method", className="trial.Random", selector="randint")["structuredContent"]
    assert "importNotTried" not in result and result["committed"]


def test_a_trial_that_cannot_finish_refuses_nothing_and_says_so(client, image, monkeypatch):
    monkeypatch.setattr(trial, "TIMEOUT", 1e-6)
    write(image, DRAWN)
    client.ok("refresh")
    result = client.ok("delete_method", className="trial.Random", selector="choice")
    assert result["structuredContent"]["importNotTried"] == "timed out after 1e-06 s"
    assert ("; note: the trial import of trial apart timed out after 1e-06 s, so whether a new session "
            "still imports it was not checked;") in result["content"][0]["text"]
    assert "def choice" not in (image / "trial.py").read_text()


def test_a_trial_flooding_its_answer_refuses_nothing_and_says_so(client, image, monkeypatch):
    # (What came past the bound is _answer's test's; here, what the tool says of it.)
    def flooded(stdout, seconds):
        raise trial._AnswerTooLong
    monkeypatch.setattr(trial, "_answer", flooded)
    write(image, DRAWN)
    client.ok("refresh")
    result = client.ok("delete_method", className="trial.Random", selector="choice")
    assert result["structuredContent"]["importNotTried"] == (
        "wrote over %s bytes where its answer goes" % format(trial.ANSWER_MAX, ","))
    assert "def choice" not in (image / "trial.py").read_text()


def test_a_deletion_its_module_survives_is_made(client, image):
    # What the module prints as it runs, to its descriptors too, is no part of the answer.
    write(image, DRAWN.replace("choice = _inst.choice\n", "import os\nprint('hi')\nos.write(1, b'x')\n"))
    client.ok("refresh")
    result = client.ok("delete_method", className="trial.Random", selector="choice")
    assert "importNotTried" not in result["structuredContent"] and result["structuredContent"]["committed"]
    assert "def choice" not in (image / "trial.py").read_text()


def test_delete_method_refuses_what_a_dataclass_below_took_as_its_default(client, image):
    # Plain's `label` was Labelled's `label: str`'s default; gone, the field follows one
    # with a default and the decorator raises: named in a note, and committed, before.
    write(image, "import dataclasses\n\n\nclass Plain:\n    def label(self):\n        return 'plain'\n\n\n"
                 "@dataclasses.dataclass\nclass Labelled(Plain):\n    n: int = 0\n    label: str\n")
    client.ok("refresh")
    said = refused(client, image, "delete_method", className="trial.Plain", selector="label")
    # Python 3.13's dataclasses name the field with the default too.
    default = " 'n'" if sys.version_info >= (3, 13) else ""
    assert f"it failed with TypeError: non-default argument 'label' follows default argument{default}, on line 9" in said


def test_delete_method_refuses_what_leaves_its_module_recursing_without_end(client, image):
    # enum.py's EnumType.__new__ deleted: its import then recursed until RecursionError, taken
    # for want of stack, so deleted and committed. Every new session has Python's default
    # limit, and the trial's stack is shallower than a worker's: the text's doing.
    write(image, "class Sized:\n    def size(self):\n        return 0\n\n"
                 "    def __getattr__(self, name):\n        return getattr(self, name)\n\n\n"
                 "SIZE = Sized().size()\n")
    client.ok("refresh")
    said = refused(client, image, "delete_method", className="trial.Sized", selector="size")
    assert ("it failed with RecursionError: maximum recursion depth exceeded, on line 6 "
            "('return getattr(self, name)'), run by line 9 ('SIZE = Sized().size()').") in said


@pytest.mark.parametrize("text", [
    # MemoryError tells the trial's limits, not the module's text.
    "class Spare:\n    def x(self):\n        return 1\n\n\nif not hasattr(Spare, 'x'):\n    raise MemoryError\n",
    # The text as it stands fails for want of memory there: whether the deletion made the
    # new text's failure is not known, so it is said, not passed over in silence.
    "class Spare:\n    def x(self):\n        return 1\n\n\n"
    "if hasattr(Spare, 'x'):\n    raise MemoryError\nraise TypeError('gone')\n",
], ids=["the-new-text", "the-old-text"])
def test_a_trial_failing_for_want_of_memory_decides_nothing_and_says_so(client, image, text):
    write(image, text)
    client.ok("refresh")
    result = client.ok("delete_method", className="trial.Spare", selector="x")
    assert result["structuredContent"]["importNotTried"] == "ran out of memory (MemoryError)"
    # Said as what the trial did, read on from its subject: was "..., MemoryError in the trial, so ...".
    assert ("; note: the trial import of trial apart ran out of memory (MemoryError), so whether a new "
            "session still imports it was not checked;") in result["content"][0]["text"]


def test_a_refusal_quotes_the_whole_statement_the_failing_line_belongs_to(client, image):
    # The traceback's line is the statement's part that failed: 'b=_inst.randint,' was quoted.
    write(image, DRAWN.replace("randint = _inst.randint\nchoice = _inst.choice\n",
                               "DRAWS = dict(\n    a=_inst.choice,\n    b=_inst.randint,\n)\n"))
    client.ok("refresh")
    said = refused(client, image, "delete_method", className="trial.Random", selector="randint")
    statement = "DRAWS = dict(\n    a=_inst.choice,\n    b=_inst.randint,\n)"
    assert said.startswith("trial.Random.randint deleted, trial would no longer import in a new session: "
                           "imported apart as this session would commit it, it failed with AttributeError: "
                           f"'Random' object has no attribute 'randint', on line 10 ({statement!r}).")


def test_a_failure_in_a_lambda_of_the_statement_is_not_said_run_by_that_statement(client, image):
    # 'on line 10 (...), run by line 10 (...)': the same statement quoted twice.
    write(image, DRAWN.replace("choice = _inst.choice\n", "X = (lambda:\n    _inst.choice)()\n"))
    client.ok("refresh")
    said = client.call("delete_method", className="trial.Random", selector="choice")["structuredContent"]["error"]
    assert said["importFailure"]["at"] == {"line": 11, "statement": "X = (lambda:\n    _inst.choice)()"}
    assert "runBy" not in said["importFailure"] and "run by" not in said["message"]


def test_a_refusal_escapes_what_utf8_cannot_carry_in_the_modules_message(client, image):
    # A lone surrogate in the exception's message: the answer could not be sent at all
    # ("the result cannot be sent: not JSON ..."), the refusal unsaid.
    write(image, DRAWN.replace("choice = _inst.choice\n", "if not hasattr(Random, 'choice'):\n"
                                                           "    raise ValueError('odd \\udcff')\n"))
    client.ok("refresh")
    said = client.call("delete_method", className="trial.Random", selector="choice")
    assert utf8_carries(said)   # first: a report showing a lone surrogate breaks pytest-xdist
    assert said["structuredContent"]["error"]["importFailure"]["message"] == "odd \\udcff"
    assert "it failed with ValueError: odd \\udcff, on line 12" in said["content"][0]["text"]


def test_a_failure_with_a_message_past_the_answers_bound_is_still_refused_its_message_cut(client, image):
    # The trial's answer holds the message: past ANSWER_MAX whole, the failure decided
    # nothing and the deletion that made it was made (importNotTried).
    write(image, DRAWN.replace("choice = _inst.choice\n", "if not hasattr(Random, 'choice'):\n"
                                                           "    raise ValueError('\\U0001f600' * 1_500_000)\n"))
    client.ok("refresh")
    said = refused(client, image, "delete_method", className="trial.Random", selector="choice")
    cut = "\U0001f600" * trial.MESSAGE_MAX + "...(+%d more chars)" % (1_500_000 - trial.MESSAGE_MAX)
    assert f"it failed with ValueError: {cut}, on line 12" in said


def test_a_refusal_cuts_the_type_name_of_an_exception_class_named_at_length(client, image):
    # The class's 1 MB __name__ went whole into the answer, in its text and importFailure.
    write(image, DRAWN.replace("choice = _inst.choice\n", "if not hasattr(Random, 'choice'):\n"
                                                           "    raise type('E' * 1_000_000, (Exception,), {})('gone')\n"))
    client.ok("refresh")
    said = client.call("delete_method", className="trial.Random", selector="choice")
    kind = "E" * trial.KIND_MAX + "...(+%d more chars)" % (1_000_000 - trial.KIND_MAX)
    assert said["structuredContent"]["error"]["importFailure"]["error"] == kind
    assert f"it failed with {kind}: gone, on line 12" in said["content"][0]["text"]
    assert len(json.dumps(said)) < 4 * trial.KIND_MAX + 10_000



def test_a_refusal_names_an_exception_class_whose_metaclass_name_raises(client, image):
    # The trial asked the class's __name__, which its metaclass's property answered by
    # raising: the trial died unanswered, and the deletion was made (importNotTried).
    write(image, DRAWN.replace("choice = _inst.choice\n", "")
                 + "class Nameless(type):\n    @property\n    def __name__(cls):\n        raise TypeError\n\n\n"
                   "class Odd(Exception, metaclass=Nameless):\n    pass\n\n\n"
                   "if not hasattr(Random, 'choice'):\n    raise Odd('gone')\n")
    client.ok("refresh")
    said = refused(client, image, "delete_method", className="trial.Random", selector="choice")
    assert "it failed with Odd: gone, on line 22" in said

def test_a_refusal_sends_a_huge_message_whole_once(client, image):
    # It went whole three times: the text, the error's message and importFailure's message.
    write(image, DRAWN.replace("choice = _inst.choice\n", "if not hasattr(Random, 'choice'):\n"
                                                           "    raise ValueError('first line\\n' + 'x' * 1_000_000)\n"))
    client.ok("refresh")
    said = client.call("delete_method", className="trial.Random", selector="choice")
    assert len(json.dumps(said)) < 1_000_000 + 3 * REPEAT_CAP
    message = "first line\n" + "x" * 1_000_000
    assert f"it failed with ValueError: {message}, on line 12 (" in said["content"][0]["text"]
    error = said["structuredContent"]["error"]
    assert error["message"] == repeated(said["content"][0]["text"], "the message")
    failed = error["importFailure"]
    assert failed["message"] == repeated(message, "the message") and failed["message"].startswith("first line\nxxx")
    assert (failed["error"], failed["at"]) == ("ValueError", {"line": 12, "statement": "raise ValueError("
                                                              "'first line\\n' + 'x' * 1_000_000)"})


def test_the_repeat_of_a_message_the_trial_cut_counts_what_the_message_had_past_it(client, image):
    # The repeats counted what the trial's cut of it (MESSAGE_MAX) had past 10,000, not the message.
    write(image, DRAWN.replace("choice = _inst.choice\n", "if not hasattr(Random, 'choice'):\n"
                                                           "    raise ValueError('x' * 3_000_000)\n"))
    client.ok("refresh")
    said = client.call("delete_method", className="trial.Random", selector="choice")
    told = "x" * trial.MESSAGE_MAX + "...(+%d more chars)" % (3_000_000 - trial.MESSAGE_MAX)
    answer = said["content"][0]["text"]
    assert f"it failed with ValueError: {told}, on line 12 (" in answer
    error = said["structuredContent"]["error"]
    assert [sum(note) for note in cut_notes(error["importFailure"]["message"])] == [3_000_000]
    assert [sum(note) for note in cut_notes(error["message"])] == [len(answer) - len(told) + 3_000_000]


def test_the_repeat_of_a_refusal_counts_what_the_trial_cut_of_the_type_name_and_the_message(client, image):
    # Both cut in the trial: the repeat counted what the message lost, not what the type name did.
    write(image, DRAWN.replace("choice = _inst.choice\n", "if not hasattr(Random, 'choice'):\n"
                                                           "    raise type('E' * 1_000_000, (Exception,), {})('x' * 3_000_000)\n"))
    client.ok("refresh")
    said = client.call("delete_method", className="trial.Random", selector="choice")
    kind = "E" * trial.KIND_MAX + "...(+%d more chars)" % (1_000_000 - trial.KIND_MAX)
    told = "x" * trial.MESSAGE_MAX + "...(+%d more chars)" % (3_000_000 - trial.MESSAGE_MAX)
    answer = said["content"][0]["text"]
    assert f"it failed with {kind}: {told}, on line 12 (" in answer
    error = said["structuredContent"]["error"]
    assert [sum(note) for note in cut_notes(error["message"])] == [len(answer) - len(kind) - len(told) + 4_000_000]


def test_a_message_whose_str_raises_is_named_as_raised_names_it(client, image):
    write(image, DRAWN.replace("choice = _inst.choice\n", "")
                 + "class Odd(Exception):\n    def __str__(self):\n        raise TypeError\n\n\n"
                         "if not hasattr(Random, 'choice'):\n    raise Odd\n")
    client.ok("refresh")
    said = refused(client, image, "delete_method", className="trial.Random", selector="choice")
    assert "it failed with Odd: <exception str() failed>, on line 17" in said


def test_a_failure_outside_the_modules_own_code_is_named_not_refused(client, image):
    # `import pulley.parts` runs pulley's __init__ first, whose users.py imports Wheel: an
    # importer, named by the re-import as any is, not the module's own code failing.
    (image / "pulley").mkdir()
    (image / "pulley" / "__init__.py").write_text("from .users import hook\n")
    (image / "pulley" / "parts.py").write_text("class Wheel:\n    pass\n\n\nclass Spare:\n    pass\n")
    (image / "pulley" / "users.py").write_text("from .parts import Wheel\n\n\ndef hook():\n    return Wheel\n")
    client.ok("refresh")
    client.view.module("pulley.parts")
    result = client.ok("delete_class", className="pulley.parts.Wheel")["structuredContent"]
    assert result["committed"] and "importNotTried" not in result
    assert sorted(result["importErrors"]) == ["pulley", "pulley.parts", "pulley.users"]
    assert "class Wheel" not in (image / "pulley" / "parts.py").read_text()


def _ended(pid):
    deadline = time.monotonic() + 30   # SIGKILL is sent; its delivery is the host's
    while time.monotonic() < deadline:
        stat = procstat.fields(pid)
        if stat is None or procstat.gone(stat):
            return True
        time.sleep(0.05)
    return False


def test_what_the_module_forks_neither_holds_up_the_trial_nor_outlives_it(client, image, tmp_path):
    # In the trial alone (python -I): two forked children holding the answer's pipe, one
    # in the trial's group, one in a session of its own, each sleeping a minute.
    pids = tmp_path / "pids"
    write(image, DRAWN.replace("choice = _inst.choice\n", "") +
          "import os, sys, time\nif sys.flags.isolated:\n    kept = os.fork()\n"
          "    if kept == 0:\n        time.sleep(60)\n        os._exit(0)\n"
          "    left = os.fork()\n"
          "    if left == 0:\n        os.setsid()\n        time.sleep(60)\n        os._exit(0)\n"
          f"    open({str(pids)!r}, 'w').write(f'{{kept}} {{left}}')\n")
    client.ok("refresh")
    try:
        result = client.ok("delete_method", className="trial.Random", selector="choice")
        assert "importNotTried" not in result["structuredContent"]   # was: timed out after 10 s
        kept, _ = map(int, pids.read_text().split())
        assert _ended(kept)
    finally:
        for pid in map(int, pids.read_text().split()) if pids.exists() else ():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_what_the_module_forks_ends_when_the_trial_ends_without_answering(client, image, tmp_path):
    # The module ends the trial's interpreter as it imports: its group was killed only by an
    # answer or a timeout, and the child it forked slept on.
    pid = tmp_path / "pid"
    write(image, DRAWN.replace("choice = _inst.choice\n", "") +
          "import os, sys, time\nif sys.flags.isolated:\n    kept = os.fork()\n"
          "    if kept == 0:\n        time.sleep(60)\n        os._exit(0)\n"
          f"    open({str(pid)!r}, 'w').write(str(kept))\n    os._exit(0)\n")
    client.ok("refresh")
    try:
        result = client.ok("delete_method", className="trial.Random", selector="choice")
        assert result["structuredContent"]["importNotTried"] == "gave no answer (exit status 0)"
        assert _ended(int(pid.read_text()))
    finally:
        if pid.exists():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid.read_text()), signal.SIGKILL)


@pytest.mark.parametrize("refusal", ["raises", "absent"])
def test_a_system_without_memfd_create_still_tries_the_import(client, image, monkeypatch, refusal):
    # The payload went in a memfd alone: with none (a seccomp filter's ENOSYS, a libc before
    # it), every trial was "could not start", or the tool answered an AttributeError.
    def no_memfd(*args):
        raise OSError(errno.ENOSYS, os.strerror(errno.ENOSYS))

    if refusal == "raises":
        monkeypatch.setattr(os, "memfd_create", no_memfd)
    else:
        monkeypatch.delattr(os, "memfd_create")
    write(image, DRAWN)
    client.ok("refresh")
    said = refused(client, image, "delete_method", className="trial.Random", selector="randint")
    assert "it failed with AttributeError: 'Random' object has no attribute 'randint'" in said


def test_an_answer_come_whole_by_the_deadline_is_read_though_the_pipe_stays_open():
    # The trial writes its answer, then kills what the module started (up to REAP_WAIT):
    # its pipe closes after the deadline, its answer came before.
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, b'{"kind": "NameError"}\n')
        with os.fdopen(os.dup(read_end), "rb", buffering=0) as stdout:
            assert trial._answer(stdout, 0.01) == b'{"kind": "NameError"}\n'
        os.write(write_end, b"{")   # an answer cut short at the deadline: none
        with os.fdopen(os.dup(read_end), "rb", buffering=0) as stdout:
            assert trial._answer(stdout, 0.01) is None
    finally:
        os.close(read_end)
        os.close(write_end)


def test_an_answer_past_its_bound_is_refused_however_soon_it_ends(tmp_path):
    # A thread the module started writing into the answer's pipe until the deadline: all it
    # wrote was held in the worker's memory, gigabytes in 10 s. Past ANSWER_MAX, nothing is
    # decided (a file stands in for the pipe: read whole at once, to its end).
    flood = tmp_path / "flood"
    flood.write_bytes(b"x" * trial.ANSWER_MAX + b"\n")
    with open(flood, "rb", buffering=0) as stdout, pytest.raises(trial._AnswerTooLong):
        trial._answer(stdout, 10)
    flood.write_bytes(b"x" * (trial.ANSWER_MAX - 1) + b"\n")   # at the bound: still an answer
    with open(flood, "rb", buffering=0) as stdout:
        assert trial._answer(stdout, 10) == b"x" * (trial.ANSWER_MAX - 1) + b"\n"


def test_what_goes_on_coming_past_the_deadline_is_no_answer(tmp_path):
    # A thread the module started writing on into the answer's pipe: past the deadline
    # only what a pipe holds is read, not all it writes (a file: always more to read).
    endless = tmp_path / "endless"
    endless.write_bytes(b"x" * (3 * trial.LATE_READ) + b"\n")
    with open(endless, "rb", buffering=0) as stdout:
        assert trial._answer(stdout, 0) is None
