"""End to end: a deletion's trial import apart (gsmcpd.image.trial) through a real daemon,
as its workers run: their interpreter options, and what the module starts as it imports."""

import pytest

from gsmcpd.image import trial
from helpers import Daemon, open_session
from test_e2e_tools import call_tool, structured
from test_e2e_tools import run_code as run
from test_tools_support import write_image

# random.py's way: a method read through an instance as the module runs.
DRAWN = ("class Random:\n    def randint(self, a, b):\n        return a\n\n"
         "    def choice(self, seq):\n        return seq[0]\n\n\n_inst = Random()\nrandint = _inst.randint\n")
# The worker's live children, with their state (Z: ended, not yet reaped).
CHILDREN = ("import os\nfound = []\nfor pid in filter(str.isdigit, os.listdir('/proc')):\n    try:\n"
            "        with open(f'/proc/{pid}/stat') as f:\n            stat = f.read().rsplit(')', 1)[1].split()\n"
            "    except OSError:\n        continue\n    if int(stat[1]) == os.getpid() and stat[0] != 'Z':\n"
            "        found.append(pid)\nfound")
# zombies(): the worker's children that have ended, not yet reaped.
ZOMBIES = ("def zombies():\n    import os\n    found = []\n"
           "    for pid in filter(str.isdigit, os.listdir('/proc')):\n        try:\n"
           "            with open(f'/proc/{pid}/stat') as f:\n"
           "                stat = f.read().rsplit(')', 1)[1].split()\n"
           "        except OSError:\n            continue\n"
           "        if int(stat[1]) == os.getpid() and stat[0] == 'Z':\n            found.append(pid)\n"
           "    return found\n")


FILES = {"checked.py": "class Checked:\n    def x(self):\n        return 1\n\n\nassert hasattr(Checked, 'x')\n",
         # In the trial alone (its python -I): a child forked to sleep, holding every descriptor.
         "forking.py": DRAWN + "import os, sys, time\nif sys.flags.isolated and os.fork() == 0:\n"
                               "    time.sleep(60)\n    os._exit(0)\n",
         # Each trial's child killed with its group: reparented to the worker, a subreaper.
         "forks.py": "class K:\n    def a(self):\n        pass\n\n    def b(self):\n        pass\n\n"
                     "    def c(self):\n        pass\n\n\nimport os, sys, time\n"
                     "if sys.flags.isolated and os.fork() == 0:\n    time.sleep(60)\n    os._exit(0)\n",
         "sleeping.py": DRAWN + "import sys, time\nif sys.flags.isolated:\n    time.sleep(60)\n",
         "drawing.py": DRAWN.replace("randint = _inst.randint\n", "DRAWS = dict(\n    a=_inst.choice,\n"
                                                                  "    b=_inst.randint,\n)\n"),
         "odd.py": DRAWN + "if not hasattr(Random, 'choice'):\n    raise ValueError('odd \\udcff')\n",
         "loud.py": DRAWN + "if not hasattr(Random, 'choice'):\n    raise ValueError('x' * 17_000_000)\n",
         "named.py": DRAWN + "if not hasattr(Random, 'choice'):\n"
                             "    raise type('E' * 1_000_000, (Exception,), {})('gone')\n",
         # Its exception's class: a metaclass whose __name__ raises.
         "nameless.py": DRAWN + "class Nameless(type):\n    @property\n    def __name__(cls):\n        raise TypeError\n\n\n"
                                "class Odd(Exception, metaclass=Nameless):\n    pass\n\n\n"
                                "if not hasattr(Random, 'choice'):\n    raise Odd('gone')\n",
         # In the trial alone: a daemon it starts, out of the trial's group (setsid) before
         # the import goes on.
         "escaping.py": DRAWN + "import os, sys, time\nif sys.flags.isolated:\n    ready, told = os.pipe()\n"
                                "    if os.fork() == 0:\n        os.setsid()\n        os.write(told, b'x')\n"
                                "        time.sleep(60)\n        os._exit(0)\n    os.read(ready, 1)\n"}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    """One daemon for the tests of the default settings: each works on a module of its own."""
    tmp = tmp_path_factory.mktemp("trial")
    with Daemon(tmp, env={"GS_MCP_IMAGE": str(write_image(tmp / "image", FILES))}) as running:
        yield running


@pytest.fixture
def own_daemon(tmp_path, request):
    """A daemon of the test's own, with the settings it is parametrized with."""
    image = write_image(tmp_path / "image", FILES)
    with Daemon(tmp_path, env={"GS_MCP_IMAGE": str(image), **request.param}) as running:
        yield running


@pytest.mark.parametrize("own_daemon", [{"PYTHONOPTIMIZE": "1"}], indirect=True)
def test_the_trial_imports_with_the_workers_interpreter_options(own_daemon):
    # Workers run -O (PYTHONOPTIMIZE): a new session's import skips the assert. The trial,
    # -I dropping that setting, ran it and refused the deletion (AssertionError).
    c = open_session(own_daemon)
    deleted = structured(c, "delete_method", className="checked.Checked", selector="x")
    assert deleted["committed"] == ["checked"] and "importNotTried" not in deleted
    fresh = open_session(own_daemon)
    assert run(fresh, "import checked\nhasattr(checked.Checked, 'x')") == "False"
    c.close()
    fresh.close()


def test_a_child_the_module_forks_neither_holds_up_the_trial_nor_outlives_it(daemon):
    # It held the answer's pipe: 10 s, then "timed out", and it slept on below the worker.
    c = open_session(daemon)
    deleted = call_tool(c, "delete_method", {"className": "forking.Random", "selector": "choice"})
    assert "importNotTried" not in deleted["structuredContent"], deleted
    assert run(c, CHILDREN) == "[]"
    c.close()


def test_a_daemon_the_module_starts_out_of_the_trials_group_does_not_outlive_the_trial(daemon):
    # Left the group the trial's kill ends: it slept on, reparented to the worker, and once
    # ended stayed a zombie below it, one more for each deletion tried on its module.
    c = open_session(daemon)
    deleted = structured(c, "delete_method", className="escaping.Random", selector="choice")
    assert "importNotTried" not in deleted, deleted
    assert run(c, CHILDREN) == "[]"
    c.close()


def test_what_the_trials_killed_is_reaped_and_a_child_of_the_sessions_own_is_left_to_its_code(daemon):
    # Each deletion's trial left its forked child a zombie below the worker till it ended.
    c = open_session(daemon)
    run(c, ZOMBIES + "import subprocess, time\nmine = subprocess.Popen(['true'])\n"
           "while str(mine.pid) not in zombies():\n    time.sleep(0.01)\n")
    for selector in "abc":
        deleted = structured(c, "delete_method", className="forks.K", selector=selector)
        assert "importNotTried" not in deleted, deleted
    assert run(c, "zombies() == [str(mine.pid)]") == "True"
    assert run(c, "mine.wait()") == "0"
    c.close()


@pytest.mark.parametrize("own_daemon", [{"GS_MCP_REQUEST_TIMEOUT": "1", "GS_MCP_BREAK_GRACE": "1"}], indirect=True)
def test_a_break_ends_the_trial_with_the_call(own_daemon):
    # The deadline's break landing in the trial waited for its import (Popen's exit), up to
    # the hard break, and left it running below the worker.
    c = open_session(own_daemon)
    # Its view read first (a worker reads it after the initialize reply): a break landing
    # while the worker still reads it is lost, and this call would meet the hard one.
    assert run(c, "6 * 7") == "42"
    broken = c.call("tools/call", {"name": "delete_method",
                                   "arguments": {"className": "sleeping.Random", "selector": "choice"}}).json()
    assert broken["error"]["message"].endswith("interrupted: soft break"), broken   # was: hard break
    assert run(c, CHILDREN) == "[]"
    c.close()


def test_a_refusal_quotes_the_statement_its_failing_line_belongs_to(daemon):
    # The trial's line is the statement's part that failed: '...on line 12 ('b=_inst.randint,')'.
    c = open_session(daemon)
    refused = call_tool(c, "delete_method", {"className": "drawing.Random", "selector": "randint"})
    statement = "DRAWS = dict(\n    a=_inst.choice,\n    b=_inst.randint,\n)"
    assert refused["structuredContent"]["error"]["importFailure"]["at"] == {"line": 10, "statement": statement}
    assert f"on line 10 ({statement!r}). Nothing changed." in refused["content"][0]["text"]
    c.close()


def test_a_refusal_whose_message_utf8_cannot_carry_is_sent_escaped(daemon):
    # It was "the result cannot be sent: not JSON: 'utf-8' codec can't encode...", kind other.
    c = open_session(daemon)
    refused = call_tool(c, "delete_method", {"className": "odd.Random", "selector": "choice"})
    assert refused["structuredContent"]["error"]["kind"] == "refused", refused
    assert "it failed with ValueError: odd \\udcff, on line 12" in refused["content"][0]["text"]
    c.close()


def test_a_refusal_cuts_the_type_name_of_an_exception_class_named_at_length(daemon):
    # The trial sent the class's 1 MB __name__ whole: in the text and in importFailure.
    c = open_session(daemon)
    refused = call_tool(c, "delete_method", {"className": "named.Random", "selector": "choice"})
    error = refused["structuredContent"]["error"]
    kind = "E" * trial.KIND_MAX + "...(+%d more chars)" % (1_000_000 - trial.KIND_MAX)
    assert (error["kind"], error["importFailure"]["error"]) == ("refused", kind)
    assert f"it failed with {kind}: gone, on line 12" in refused["content"][0]["text"]
    c.close()



def test_a_refusal_names_an_exception_class_whose_metaclass_name_raises(daemon):
    # The trial died asking the class's __name__: the deletion was made (importNotTried),
    # and the module imported in no new session.
    c = open_session(daemon)
    refused = call_tool(c, "delete_method", {"className": "nameless.Random", "selector": "choice"})
    error = refused["structuredContent"]["error"]
    assert (error["kind"], error["importFailure"]["error"]) == ("refused", "Odd")
    assert "it failed with Odd: gone, on line 22" in refused["content"][0]["text"]
    c.close()

def test_a_failure_whose_message_is_past_the_answers_bound_is_refused_its_message_cut(daemon):
    # Its answer past ANSWER_MAX, the trial decided nothing: the deletion was made, and
    # the module imported in no new session.
    c = open_session(daemon)
    refused = call_tool(c, "delete_method", {"className": "loud.Random", "selector": "choice"})
    assert refused["structuredContent"]["error"]["kind"] == "refused", refused
    cut = "x" * trial.MESSAGE_MAX + "...(+%d more chars)" % (17_000_000 - trial.MESSAGE_MAX)
    assert f"it failed with ValueError: {cut}, on line 12" in refused["content"][0]["text"]
    c.close()
