"""compile_class_definition redefining a class in place whose body writes members in
class-level `if`/`try`/`with`/`for` blocks: the live class ends with what a new session's
import of the new source makes of it."""

import json

import pytest

from test_tools_support import client, image, text, views  # noqa: F401  (fixtures)

BLOCKS = '''\
import contextlib
import sys


class Outer:
    kept = 0
    pair, count = 1, 2

    if True:
        x = 1

        def m(self):
            return 1
    try:
        import json as codec
    except ImportError:
        codec = None
    with contextlib.nullcontext(5) as handle:
        pass
    for i in range(2):
        pass
    if sys.version_info < (3, 0):
        old = 1
    else:
        new = 2
'''


def _members(cls) -> set[str]:
    """The names the class binds itself, but for those every class statement binds."""
    return {name for name in vars(cls) if not (name.startswith("__") and name.endswith("__"))}


def _imported(source: str, class_name: str) -> type:
    namespace = {}
    exec(source, namespace)   # as a new session's import runs it
    return namespace[class_name]


@pytest.mark.parametrize("new_source, wanted", [
    # Every name written in a block dropped with it (and those of a tuple target).
    ("class Outer:\n    kept = 0\n", {"kept"}),
    # Kept where its branch runs, gone where it is now written in one that does not run.
    ("class Outer:\n    kept = 0\n\n    if True:\n        x = 1\n"
     "    if sys.version_info < (3, 0):\n        new = 2\n        y = 3\n    else:\n        z = 4\n",
     {"kept", "x", "z"}),
], ids=["dropped", "moved-to-a-branch-not-run"])
def test_names_written_in_class_level_blocks_follow_the_new_statement(client, image, new_source, wanted):
    # Only the body's own plain statements were looked at: `x`, `m`, `pair`... stayed on the
    # live class, which a new session's import of the committed source does not have.
    client.view.add_module("zoo.blocks", BLOCKS)
    outer = client.view.module("zoo.blocks").Outer
    assert {"pair", "count", "x", "m", "codec", "handle", "i", "new"} <= _members(outer)
    assert "old" not in _members(outer)
    result = client.ok("compile_class_definition", source=new_source,
                       dictionaryName="zoo.blocks", recompileMethods=False)
    assert result["structuredContent"]["outcome"] == "updated"
    source = (image / "zoo" / "blocks.py").read_text()
    assert _members(outer) == _members(_imported(source, "Outer")) == wanted
    assert client.view.module("zoo.blocks").Outer is outer


def test_a_private_name_written_in_a_block_is_dropped_as_bound(client, image):
    # `__secret` in a block binds `_Vault__secret`, as at the body's top level.
    client.view.add_module("zoo.vault", "class Vault:\n    if True:\n        __secret = 1\n")
    vault = client.view.module("zoo.vault").Vault
    client.ok("compile_class_definition", source="class Vault:\n    pass\n", recompileMethods=False)
    assert "_Vault__secret" not in vars(vault)


def test_names_a_walrus_or_a_match_capture_bound_are_dropped_with_them(client, image):
    # Not counted among the old statement's names: the live class kept `width` and `mode`,
    # which a new session's import of the committed source does not have.
    client.view.add_module("zoo.caps", "class Caps:\n    size = (width := 3) * 2\n"
                           "    match {'mode': 'fast'}:\n        case {'mode': mode}:\n            pass\n")
    caps = client.view.module("zoo.caps").Caps
    assert {"size", "width", "mode"} <= _members(caps)
    client.ok("compile_class_definition", source="class Caps:\n    size = 6\n", recompileMethods=False)
    assert _members(caps) == _members(_imported((image / "zoo" / "caps.py").read_text(), "Caps")) == {"size"}


def test_a_name_dropped_from_a_block_that_the_module_reads_is_refused(client, image):
    # `OWN = Job.limit` below the class fails in a new session's import: unsaid, as the
    # block's names were not counted among those the old statement bound.
    client.view.add_module("zoo.jobs", "class Job:\n    if True:\n        limit = 3\n\n\nOWN = Job.limit\n")
    result = client.call("compile_class_definition", source="class Job:\n    pass\n", recompileMethods=False)
    assert result["structuredContent"]["error"]["usedBy"] == [
        {"attribute": "limit", "statement": "OWN = Job.limit", "line": 6}]
    assert client.view.module("zoo.jobs").Job.limit == 3


def test_a_name_moved_to_a_branch_that_does_not_run_is_refused_as_dropped(client, image):
    # Still written in the new statement, but where it is not bound: the class lost it.
    client.view.add_module("zoo.jobs", "import sys\n\n\nclass Job:\n    limit = 3\n\n\nOWN = Job.limit\n")
    result = client.call("compile_class_definition", source="class Job:\n    if sys.version_info < (3, 0):\n"
                         "        limit = 3\n", recompileMethods=False)
    assert [use["statement"] for use in result["structuredContent"]["error"]["usedBy"]] == ["OWN = Job.limit"]


def test_a_name_written_in_a_block_that_never_ran_is_not_noted_as_dropped(client, image):
    # The old statement never bound it: nothing was lost, so no read of it is noted.
    client.view.add_module("zoo.jobs", "import sys\n\n\nclass Job:\n    if sys.version_info < (3, 0):\n"
                           "        limit = 3\n\n\nOWN = getattr(Job, 'limit', None)\n"
                           "try:\n    LIMIT = Job.limit\nexcept AttributeError:\n    LIMIT = None\n")
    result = client.ok("compile_class_definition", source="class Job:\n    pass\n", recompileMethods=False)
    assert "readAsItRuns" not in result["structuredContent"] and "note" not in text(result)


@pytest.mark.parametrize("body, wanted", [
    ("    if True:\n        run = 5\n\n    def run(self):\n        return 1\n", 5),
    ("    def run(self):\n        return 1\n\n    if True:\n        def run(self):\n            return 2\n", 2),
    ("    if sys.version_info < (3, 0):\n        run = 5\n\n    def run(self):\n        return 1\n", None),
    ("    limit = (run := 5)\n\n    def run(self):\n        return 1\n", 5),
    ("    match {'run': 5}:\n        case {'run': run}:\n            pass\n\n"
     "    def run(self):\n        return 1\n", 5),
], ids=["assigned-in-a-block", "a-def-in-a-block", "in-a-branch-not-run", "walrus", "match-capture"])
def test_delete_method_leaves_what_a_class_level_block_still_binds(client, image, body, wanted):
    # Only the body's own statements were asked what still binds the name: the live class
    # lost `run`, which a new session's import has from the block.
    client.view.add_module("zoo.runs", "import sys\n\n\nclass Runs:\n" + body)
    runs = client.view.module("zoo.runs").Runs
    client.ok("delete_method", className="Runs", selector="run")
    fresh = _imported((image / "zoo" / "runs.py").read_text(), "Runs")
    assert "def run(self):\n        return 1" not in (image / "zoo" / "runs.py").read_text()
    for cls in (runs, fresh):
        run = vars(cls).get("run")
        assert (run(None) if callable(run) else run) == wanted


def test_delete_method_refuses_a_read_of_a_name_left_only_in_a_branch_not_run(client, image):
    # `run = 5` is still written in the class, but where it is not bound: the module's
    # `OWN = Runs.run` fails in a new session's import, as the trial apart tells.
    client.view.add_module("zoo.runs", "import sys\n\n\nclass Runs:\n    if sys.version_info < (3, 0):\n"
                           "        run = 5\n\n    def run(self):\n        return 1\n\n\nOWN = Runs.run\n")
    said = client.error("delete_method", "refused", className="Runs", selector="run")
    assert "with AttributeError: type object 'Runs' has no attribute 'run', on line 12 ('OWN = Runs.run')" in said


def test_delete_method_notes_no_read_of_a_name_a_block_still_binds(client, image):
    client.view.add_module("zoo.runs", "class Runs:\n    if True:\n        run = 5\n\n"
                           "    def run(self):\n        return 1\n\n\nOWN = Runs.run\n")
    result = client.ok("delete_method", className="Runs", selector="run")
    assert "readAsItRuns" not in result["structuredContent"] and "note" not in text(result)


@pytest.mark.parametrize("body, said", [
    ("    def run(self):\n        return 1\n\n    if True:\n        def run(self):\n            return 2\n",
     "zoo.runs.Runs.run is written again inside the class-level if statement at zoo.runs line 8, below "
     "its def, and the class has that one where its branch runs: edit that statement with "
     "compile_class_definition (get_class_definition shows it)"),
    ("    def run(self):\n        return 1\n\n    try:\n        pass\n    finally:\n        run = 5\n",
     "zoo.runs.Runs.run is a class attribute, not a method (zoo.runs line 11); a def of that name "
     "would replace it"),
    # Neither a `:=` nor a `match` capture counted: the def compiled, the class body rebinding it.
    ("    def run(self):\n        return 1\n\n    if (run := 5):\n        pass\n",
     "zoo.runs.Runs.run is a class attribute, not a method (zoo.runs line 8); a def of that name "
     "would replace it"),
    ("    def run(self):\n        return 1\n\n    match [5]:\n        case [*run]:\n            pass\n",
     "zoo.runs.Runs.run is a class attribute, not a method (zoo.runs line 8); a def of that name "
     "would replace it"),
], ids=["a-def-below-in-a-block", "assigned-in-a-block", "walrus", "match-capture"])
def test_compile_method_refuses_a_def_a_class_level_block_binds_again(client, image, body, said):
    # The def compiled was set on the live class, while a new session's import has what the
    # block binds below it.
    source = "import sys\n\n\nclass Runs:\n" + body
    client.view.add_module("zoo.runs", source)
    runs = client.view.module("zoo.runs").Runs
    before = vars(runs)["run"]
    message = client.error("compile_method", "refused", className="Runs", source="def run(self):\n    return 3\n")
    assert said in message
    assert vars(runs)["run"] is before and client.view.source("zoo.runs") == source


def test_compile_method_replaces_a_def_a_block_above_it_also_writes(client, image):
    # The def below wins in a new session's import too: nothing to refuse.
    client.view.add_module("zoo.runs", "class Runs:\n    if True:\n        def run(self):\n            return 2\n\n"
                           "    def run(self):\n        return 1\n")
    runs = client.view.module("zoo.runs").Runs
    client.ok("compile_method", className="Runs", source="def run(self):\n    return 3\n")
    assert runs().run() == _imported((image / "zoo" / "runs.py").read_text(), "Runs")().run() == 3


@pytest.mark.parametrize("statement", [
    "for run in range(2):\n        pass\n",
    "with contextlib.nullcontext(5) as run:\n        pass\n",
    "import json as run\n",
    "from json import dumps as run\n",
], ids=["loop-target", "with-target", "import", "from-import"])
def test_compile_method_refuses_a_def_a_class_level_loop_with_or_import_binds(client, image, statement):
    # Only assignments, nested classes, `:=` and captures were attribute bindings: the def was
    # set on the live class, while a new session's import has what the statement binds below it.
    source = ("import contextlib\n\n\nclass Runs:\n    def run(self):\n        return 1\n\n    "
              + statement)
    client.view.add_module("zoo.runs", source)
    runs = client.view.module("zoo.runs").Runs
    before = vars(runs)["run"]
    message = client.error("compile_method", "refused", className="Runs", source="def run(self):\n    return 3\n")
    assert ("zoo.runs.Runs.run is a class attribute, not a method (zoo.runs line 8); a def of that "
            "name would replace it") in message
    assert vars(runs)["run"] is before and client.view.source("zoo.runs") == source


@pytest.mark.parametrize("statement, wanted", [
    ("for run in range(2):\n        pass\n", 1),
    ("with contextlib.nullcontext(5) as run:\n        pass\n", 5),
    ("from json import dumps as run\n", json.dumps),
], ids=["loop-target", "with-target", "from-import"])
def test_delete_method_notes_no_read_of_a_name_a_loop_with_or_import_still_binds(client, image, statement,
                                                                                   wanted):
    # With no live class (its module fails to import), its source alone told what still binds
    # the name, and neither a loop's nor a with's target nor an import counted: the read
    # was noted as failing.
    (image / "zoo" / "runs.py").write_text("import contextlib\n\n\nclass Runs:\n    def run(self):\n"
                                           "        return 1\n\n    " + statement + "\n\nOWN = Runs.run\n"
                                           "FAILS = 1 / 0\n")
    client.ok("refresh")
    assert client.view.module("zoo.runs") is None
    result = client.ok("delete_method", className="zoo.runs.Runs", selector="run")
    assert "readAsItRuns" not in result["structuredContent"] and "note" not in text(result)
    assert "def run" not in (image / "zoo" / "runs.py").read_text()
    source = (image / "zoo" / "runs.py").read_text()
    assert _imported(source[:source.index("FAILS")], "Runs").run == wanted


def test_get_class_definitions_text_sent_back_keeps_a_def_beside_an_assignment_of_its_name(client, image):
    # `run = 5` above the def counted as the text binding run itself: the def was dropped
    # from the file and the live class's run became 5.
    source = "class Runs:\n    run = 5\n\n    def run(self):\n        return 1\n"
    client.view.add_module("zoo.runs", source)
    runs = client.view.module("zoo.runs").Runs
    definition = client.ok("get_class_definition", className="Runs")["structuredContent"]["definition"]
    assert definition == "class Runs:\n    run = 5\n"
    result = client.ok("compile_class_definition", source=definition, dictionaryName="zoo.runs")
    assert "carried over run" in text(result)
    assert client.view.source("zoo.runs") == source == (image / "zoo" / "runs.py").read_text()
    assert runs().run() == _imported(source, "Runs")().run() == 1


@pytest.mark.parametrize("statement, wanted", [
    ("for run in range(2):\n        pass\n", 1),
    ("with contextlib.nullcontext(5) as run:\n        pass\n", 5),
    ("from json import dumps as run\n", json.dumps),
    ("size = (run := 3)\n", 3),
    ("match {'run': 4}:\n        case {'run': run}:\n            pass\n", 4),
], ids=["loop-target", "with-target", "from-import", "walrus", "match-capture"])
def test_compile_class_definition_carries_no_def_of_a_name_the_new_statement_binds(client, image, statement,
                                                                                 wanted):
    # Only defs, nested classes and assignments counted: the old def was carried over, below
    # the statement, and the class had it instead of what the statement binds.
    client.view.add_module("zoo.runs", "import contextlib\n\n\nclass Runs:\n    def run(self):\n"
                                       "        return 9\n\n    def other(self):\n        return 2\n")
    runs = client.view.module("zoo.runs").Runs
    result = client.ok("compile_class_definition", source="class Runs:\n    " + statement,
                       dictionaryName="zoo.runs")
    assert result["structuredContent"]["carried"] == ["other"]
    source = (image / "zoo" / "runs.py").read_text()
    assert "return 9" not in source and client.view.source("zoo.runs") == source
    assert vars(runs)["run"] == vars(_imported(source, "Runs"))["run"] == wanted
    assert runs().other() == 2


@pytest.mark.parametrize("statement, wanted", [
    ("from json import dumps as run\n", json.dumps),
    ("with contextlib.nullcontext(5) as run:\n        pass\n", 5),
], ids=["import", "with-target"])
def test_delete_method_deletes_a_method_the_class_body_reads_where_an_import_or_with_binds_it(
        client, image, statement, wanted):
    # Neither counted as binding the name above its reader: refused, "the class could not be made".
    client.view.add_module("zoo.runs", "import contextlib\n\n\nclass Runs:\n    " + statement
                           + "\n    def run(self):\n        return 1\n\n    alias = run\n")
    runs = client.view.module("zoo.runs").Runs
    client.ok("delete_method", className="Runs", selector="run")
    source = (image / "zoo" / "runs.py").read_text()
    assert "def run" not in source
    fresh = _imported(source, "Runs")
    assert runs.run == fresh.run == fresh.alias == wanted


def test_delete_method_refuses_a_method_the_class_body_reads_where_only_an_annotation_names_it(client, image):
    # `run: int` was taken for a binding: the def was deleted and every new session's import
    # of the module failed (NameError: name 'run' is not defined).
    source = "class Runs:\n    run: int\n\n    def run(self):\n        return 1\n\n    alias = run\n"
    client.view.add_module("zoo.runs", source)
    message = client.error("delete_method", "refused", className="Runs", selector="run")
    assert ("zoo.runs.Runs.run is used by the class body as it runs ('alias = run'); deleted, the class "
            "could not be made") in message
    assert client.view.source("zoo.runs") == source
    assert client.view.module("zoo.runs").Runs.run(None) == 1


@pytest.mark.parametrize("statement, quoted", [
    ("for run in range(2):\n        pass\n", "'for run in range(2): ...' at line 3"),
    ("with contextlib.nullcontext(5) as run:\n        pass\n", "'with contextlib.nullcontext(5) as run: ...' at line 3"),
    ("from json import dumps as run\n", "'from json import dumps as run' at line 3"),
], ids=["loop-target", "with-target", "from-import"])
def test_a_name_a_loop_with_or_import_binds_is_said_to_be_bound_by_that_statement(client, image, statement,
                                                                                   quoted):
    # Not counted as a class-level binding: "an attribute, not a method", or for the
    # import "a decorator or code run on the class set it".
    client.view.add_module("zoo.runs", "import contextlib\nclass Runs:\n    " + statement)
    said = f"zoo.runs.Runs defines no method run (it binds run by a class-level statement, {quoted}; "
    for tool in ("get_method_source", "delete_method"):
        assert said in client.error(tool, "notFound", className="Runs", selector="run")


@pytest.mark.parametrize("body, line", [
    ("    global run\n\n    def go(self):\n        return 1\n", 5),
    ("    if True:\n        global run\n    run = 5\n", 6),
], ids=["declared-only", "declared-in-a-block-and-assigned"])
def test_compile_method_refuses_a_def_of_a_name_the_class_body_declares_global(client, image, body, line):
    # The def went into the class and onto the live class, while a new session's import
    # bound it as the module's run (the class had no run); or, with `run = 5`, refused
    # as "a class attribute", which the class does not have.
    source = "run = 1\n\n\nclass Runs:\n" + body
    client.view.add_module("zoo.runs", source)
    runs = client.view.module("zoo.runs").Runs
    message = client.error("compile_method", "refused", className="Runs", source="def run(self):\n    return 3\n")
    assert message == (f"the class body of zoo.runs.Runs declares run global (zoo.runs line {line}), so a "
                       "def of that name there binds the module's run, not a method of the class. Name "
                       "the method otherwise, or change that statement with compile_class_definition.")
    assert "run" not in vars(runs) and client.view.source("zoo.runs") == source
    assert "run" not in vars(_imported(source, "Runs"))


def test_a_def_of_a_name_the_class_body_declares_global_is_not_shown_as_its_method(client, image):
    # `def run` below `global run` binds the module's run; get_method_source showed it as the
    # class's, and delete_method took it out of the module.
    source = "def run():\n    return 0\n\n\nclass Runs:\n    global run\n\n    def run():\n        return 1\n\n" \
             "    def go(self):\n        return 2\n"
    client.view.add_module("zoo.runs", source)
    assert not hasattr(client.view.module("zoo.runs").Runs, "run")
    said = ("zoo.runs.Runs defines no method run (its class body declares run global, line 6: a def of "
            "that name there binds the module's name, not a method of the class)")
    for tool in ("get_method_source", "delete_method"):
        assert client.error(tool, "notFound", className="Runs", selector="run") == said
    assert client.view.source("zoo.runs") == source
    listed = client.ok("list_methods", className="Runs")["structuredContent"]
    assert [method["name"] for group in listed["methods"].values() for method in group] == ["go"]


@pytest.mark.parametrize("declared, written", [("__run", "_Runs__run"), ("_Runs__run", "__run")])
def test_compile_method_refuses_a_private_def_the_class_body_declares_global_as_python_mangles_it(
        client, image, declared, written):
    # `global __run` in class Runs declares the module's `_Runs__run`: compared as written,
    # a def spelled the other way was compiled into the class, and a new session's import
    # bound it as the module's `_Runs__run` instead.
    source = f"class Runs:\n    global {declared}\n\n    def go(self):\n        return 1\n"
    client.view.add_module("zoo.runs", source)
    message = client.error("compile_method", "refused", className="Runs",
                           source=f"def {written}(self):\n    return 3\n")
    assert message.startswith(f"the class body of zoo.runs.Runs declares {written} global (zoo.runs line 2)")
    assert client.view.source("zoo.runs") == source
    assert "_Runs__run" not in vars(client.view.module("zoo.runs").Runs)


def _redefined_declaring_global(client, image, module_text: str, declared: str):
    """Define zoo.runs as `module_text`, send `class Runs:` declaring `declared` global, and
    check `other` alone was carried and `return 9` (the def of that name) is gone; returns
    the class the module had before and the namespace a new session's import makes."""
    client.view.add_module("zoo.runs", module_text)
    old = client.view.module("zoo.runs").Runs
    result = client.ok("compile_class_definition", source=f"class Runs:\n    global {declared}\n",
                       dictionaryName="zoo.runs")
    assert result["structuredContent"]["carried"] == ["other"]
    source = (image / "zoo" / "runs.py").read_text()
    assert "return 9" not in source
    namespace = {}
    exec(source, namespace)
    return old, namespace


def test_compile_class_definition_carries_no_def_of_a_name_the_new_statement_declares_global(client, image):
    # Carried below `global run`, the def bound the module's run in a new session's import.
    runs, namespace = _redefined_declaring_global(
        client, image, "run = 1\n\n\nclass Runs:\n    def run(self):\n        return 9\n\n"
                       "    def other(self):\n        return 2\n", "run")
    assert namespace["run"] == 1 and "run" not in vars(namespace["Runs"]) and "run" not in vars(runs)


def test_compile_class_definition_carries_no_private_def_the_new_statement_declares_global_mangled(client, image):
    # `global _Runs__run` declares what `def __run` binds: compared as written, the def was
    # carried below it and bound the module's `_Runs__run` in a new session's import.
    _, namespace = _redefined_declaring_global(
        client, image, "class Runs:\n    def __run(self):\n        return 9\n\n"
                       "    def other(self):\n        return 2\n", "_Runs__run")
    assert "_Runs__run" not in namespace and namespace["Runs"]().other() == 2


def test_delete_method_notes_no_read_of_a_name_a_class_level_block_binds_with_no_live_class(client, image):
    # With no live class (its module fails to import), its source alone told what still binds
    # the name, and only the body's own statements were asked: the read was noted as failing.
    (image / "zoo" / "runs.py").write_text("class Runs:\n    if True:\n        run = 5\n\n    def run(self):\n"
                                           "        return 1\n\n\nOWN = Runs.run\nFAILS = 1 / 0\n")
    client.ok("refresh")
    assert client.view.module("zoo.runs") is None
    result = client.ok("delete_method", className="zoo.runs.Runs", selector="run")
    assert "readAsItRuns" not in result["structuredContent"] and "note" not in text(result)
    source = (image / "zoo" / "runs.py").read_text()
    assert "def run" not in source and _imported(source[:source.index("FAILS")], "Runs").run == 5


@pytest.mark.parametrize("live", [True, False], ids=["live-class", "no-live-class"])
def test_a_name_a_class_level_block_binds_is_said_to_be_bound_by_that_statement(client, image, live):
    # Only the body's own statements were asked: with no live class the hint was
    # "list_methods shows its methods", with one "an attribute" without saying where.
    source = "import sys\n\n\nclass Runs:\n    if sys.version_info > (3, 0):\n        run = 5\n"
    (image / "zoo" / "runs.py").write_text(source + ("" if live else "\n\nFAILS = 1 / 0\n"))
    client.ok("refresh")
    assert (client.view.module("zoo.runs") is None) is not live
    said = ("zoo.runs.Runs defines no method run (it binds run by a class-level statement, 'run = 5' at "
            "line 6, written inside the class-level if statement at line 5: the class has it when that "
            "branch runs; get_class_definition shows it)")
    for tool in ("get_method_source", "delete_method"):
        assert client.error(tool, "notFound", className="zoo.runs.Runs", selector="run") == said
    assert (image / "zoo" / "runs.py").read_text().startswith(source)


@pytest.mark.parametrize("live", [True, False], ids=["live-class", "no-live-class"])
def test_delete_method_refuses_a_method_an_augmented_assignment_reads(client, image, live):
    # `run += Keep()` reads run before it binds it, and was taken for binding it only: with
    # no live class the def was deleted, and every new session's import of the module
    # failed (NameError); with one, the error said to bind run at the module's top.
    source = ("class Keep:\n    def __radd__(self, other):\n        return other\n\n\n"
              "class Runs:\n    def run(self):\n        return 1\n\n    run += Keep()\n")
    assert _imported(source, "Runs").run(None) == 1
    _deleting_run_is_refused_as_used_by(client, image, live, source, "run += Keep()")


@pytest.mark.parametrize("live", [True, False], ids=["live-class", "no-live-class"])
def test_delete_method_refuses_a_method_the_class_body_deletes(client, image, live):
    # `del run` deletes from the class's namespace alone: with the def gone it is a
    # NameError, whatever the module binds, and the deletion went on (no live class: every
    # new session's import of the module failed).
    source = ("run = 1\n\n\nclass Runs:\n    def run(self):\n        return 1\n\n"
              "    del run\n\n    def go(self):\n        return 2\n")
    assert _imported(source, "Runs")().go() == 2
    _deleting_run_is_refused_as_used_by(client, image, live, source, "del run")


def _deleting_run_is_refused_as_used_by(client, image, live, source, statement):
    """delete_method of zoo.runs.Runs.run (`source`, made failing to import unless `live`)
    is refused naming `statement`, the file unchanged."""
    written = source + ("" if live else "\n\nFAILS = 1 / 0\n")
    (image / "zoo" / "runs.py").write_text(written)
    client.ok("refresh")
    assert (client.view.module("zoo.runs") is None) is not live
    message = client.error("delete_method", "refused", className="zoo.runs.Runs", selector="run")
    assert message == (f"zoo.runs.Runs.run is used by the class body as it runs ({statement!r}); deleted, "
                       "the class could not be made and zoo.runs would no longer import. Change that "
                       "statement first (compile_class_definition).")
    assert (image / "zoo" / "runs.py").read_text() == written


@pytest.mark.parametrize("live", [True, False], ids=["live-class", "no-live-class"])
def test_a_carried_method_goes_above_the_statement_deleting_it(client, image, live):
    # `del run` in the new class text, `def run` carried over: it went last, below the
    # `del`, a NameError (with a live class a compileError telling to bind run at the
    # module's top, which `del` ignores; with none the file was written so).
    source = "class Dels:\n    def run(self):\n        return 1\n\n    def go(self):\n        return 2\n"
    written = source + ("" if live else "\n\nFAILS = 1 / 0\n")
    (image / "zoo" / "dels.py").write_text(written)
    client.ok("refresh")
    assert (client.view.module("zoo.dels") is None) is not live
    result = client.ok("compile_class_definition", source="class Dels:\n    del run\n    x = 1\n",
                       dictionaryName="zoo.dels")
    assert result["structuredContent"]["carried"] == ["run", "go"]
    committed = (image / "zoo" / "dels.py").read_text()
    assert committed.index("def run") < committed.index("del run") < committed.index("def go")
    made = _imported(committed.replace("FAILS = 1 / 0", ""), "Dels")
    assert made().go() == 2 and made.x == 1 and not hasattr(made, "run")
