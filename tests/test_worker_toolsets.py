"""Toolset resolution, the read-only audit list, execution, bench and the worked example."""

import gc
import linecache
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gsmcpd.worker.server import McpServer
from gsmcpd.worker.toolset import REPEAT_CAP, HardBreak, SoftBreak, Toolset, mark_soft_break
from gsmcpd.worker.toolsets import (
    CORE_READ_ONLY_SAFE, CORE_TOOLSETS, DEFAULT_TOOLSETS, check_toolset_names, read_only_surface,
    resolve_toolsets,
)
from gsmcpd.worker.toolsets.bench import BenchToolset
from gsmcpd.worker.toolsets import execution
from gsmcpd.worker.toolsets.execution import ExecutionToolset
from helpers import cut_notes, wait_until

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def call(server, name, arguments):
    return server.handle({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                          "params": {"name": name, "arguments": arguments}})


def listed(server):
    return [t["name"] for t in server.handle({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
            ["result"]["tools"]]


# -- resolution ----------------------------------------------------------------

def test_core_names_map_to_their_modules():
    assert resolve_toolsets(["execution", "bench"]) == [ExecutionToolset, BenchToolset]
    assert resolve_toolsets("execution, bench execution") == [ExecutionToolset, BenchToolset]


def test_bench_is_never_in_the_default_surface():
    assert "bench" not in DEFAULT_TOOLSETS
    assert DEFAULT_TOOLSETS == ("execution", "session", "listing", "browsing", "search", "mutation",
                                "testing")


def test_third_party_toolset_by_module_and_class(monkeypatch):
    monkeypatch.syspath_prepend(str(EXAMPLES))
    [acme] = resolve_toolsets(["acme_toolset:AcmeLabelsToolset"])
    assert issubclass(acme, Toolset) and acme.__name__ == "AcmeLabelsToolset"


@pytest.mark.parametrize("names, fragment", [
    (["browsingg"], "unknown toolset 'browsingg'"),
    (["bench", "McpBrowsingToolset"], "unknown toolset 'McpBrowsingToolset'"),
    (["no_such_module_xyz:Toolset"], "cannot import module 'no_such_module_xyz'"),
    (["gsmcpd.worker.server:McpServer"], "not a Toolset subclass"),
    (["gsmcpd.worker.toolsets.bench:Nope"], "has no 'Nope'"),
])
def test_unknown_names_raise_naming_them(names, fragment):
    for check in (resolve_toolsets, check_toolset_names):   # the latter: a serve `start` ran
        with pytest.raises(ValueError, match=fragment):
            check(names)


@pytest.mark.parametrize("name, hint", [
    ("browse", " (did you mean browsing?)"),
    ("Search", " (did you mean search?)"),     # a case-only slip
    ("mutations", " (did you mean mutation?)"),
    ("nonsense", ""),                          # nothing near: no guess
])
def test_an_unknown_name_near_a_known_one_is_suggested_before_the_known_list(name, hint):
    for check in (resolve_toolsets, check_toolset_names):
        with pytest.raises(ValueError) as refused:
            check([name])
        assert str(refused.value).startswith(f"unknown toolset {name!r}{hint} (known: execution, ")


@pytest.mark.parametrize("names", [[*CORE_TOOLSETS, "bench"], ["mutation", "browsing"],
                                   ["acme_toolset:AcmeLabelsToolset", "execution"]])
def test_the_read_only_surface_check_lists_is_what_a_read_only_server_builds(names, monkeypatch):
    monkeypatch.syspath_prepend(str(EXAMPLES))
    kept, served, hidden = read_only_surface(names)
    server = McpServer(resolve_toolsets(names), read_only=True)
    assert served == sorted(server.registry.names()) and hidden == sorted(server.gated_tools)
    assert kept == [name for name, toolset in zip(names, resolve_toolsets(names))
                    if any(isinstance(kept_one, toolset) for kept_one in server.toolsets)]


def test_checking_the_names_imports_no_built_in_toolset_module():
    # The router a `start` ran imported every one (~70M instructions) for nothing: start
    # had imported them as it validated the same settings, and the forkserver uses them.
    code = ("import sys; from gsmcpd.worker.toolsets import CORE_TOOLSETS, check_toolset_names; "
            "check_toolset_names([*CORE_TOOLSETS, 'bench']); "
            "print(sorted(name for name in sys.modules if name.startswith('gsmcpd.worker.toolsets.')))")
    imported = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert imported.stdout == "[]\n"


def test_a_toolset_module_standing_in_as_an_object_without_a_dict_is_named():
    # It is read through own.namespace, as any sys.modules entry is: vars() raised TypeError.
    from gsmcpd.worker import toolsets

    class StandIn:
        __slots__ = ()
    name = "gsmcpd.worker.toolsets.bench"
    held = sys.modules.get(name)
    toolsets._builtin.cache_clear()
    sys.modules[name] = StandIn()
    try:
        with pytest.raises(ValueError, match=f"toolset 'bench': {name} defines no Toolset named 'bench'"):
            toolsets._builtin("bench")
    finally:
        sys.modules.pop(name)
        if held is not None:
            sys.modules[name] = held
        toolsets._builtin.cache_clear()


def test_an_explicit_empty_list_is_an_empty_surface():
    assert resolve_toolsets([]) == []


# -- the audit list, pinned against the core declarations ----------------------
# These two need every core toolset module (session, listing, browsing, search,
# mutation, testing) to be importable.

def test_default_resolves_the_seven_core_toolsets():
    resolved = resolve_toolsets()
    assert [cls.name for cls in resolved] == list(CORE_TOOLSETS)


def test_audit_list_equals_the_union_of_core_read_only_declarations():
    resolved = resolve_toolsets(CORE_TOOLSETS)
    union = frozenset().union(*(cls.read_only_safe for cls in resolved))
    assert union == CORE_READ_ONLY_SAFE
    provided = frozenset().union(*(cls.tool_names for cls in resolved))
    assert provided - union == {"execute_code", "commit", "add_dictionary", "compile_class_definition",
                                "compile_method", "delete_class", "delete_method", "remove_dictionary",
                                "set_class_comment"}
    read_only = McpServer(resolved, read_only=True)
    assert set(listed(read_only)) == CORE_READ_ONLY_SAFE


def test_mutation_tools_are_idempotent_alike_add_dictionary_too():
    # add_dictionary was the one not: called again with the same name it changes nothing
    # ("already exists"), as delete_class or remove_dictionary called again do ("no class").
    from gsmcpd.worker.toolsets.mutation import MutationToolset
    assert MutationToolset.idempotent == frozenset(MutationToolset.tool_names)


# -- execution -------------------------------------------------------------------

@pytest.fixture
def executing():
    return McpServer([ExecutionToolset])


def run(server, code):
    return call(server, "execute_code", {"code": code})["result"]


def test_execute_answers_output_and_repr_of_final_expression(executing):
    result = run(executing, "print('hello')\nimport sys\nprint('warn', file=sys.stderr)\n'a' * 2")
    assert result["content"] == [{"type": "text", "text": "hello\nwarn\n'aa'"}]
    assert result["structuredContent"] == {"result": "'aa'", "stdout": "hello\n", "stderr": "warn\n"}
    assert "isError" not in result


def test_workspace_persists_across_calls_like_a_repl(executing):
    run(executing, "def double(x):\n    return 2 * x\ncounter = 20")
    assert run(executing, "counter += 1\ndouble(counter)")["content"][0]["text"] == "42"
    assert run(executing, "_ + 1")["content"][0]["text"] == "43"


def test_a_none_value_is_shown_only_when_nothing_was_printed(executing):
    printed = run(executing, "print('x')")
    assert printed["content"][0]["text"] == "x" and printed["structuredContent"]["result"] == "None"
    assert run(executing, "None")["content"][0]["text"] == "None"
    assert run(executing, "print('x')\n0")["content"][0]["text"] == "x\n0"


def test_statements_only_answer_no_output(executing):
    result = run(executing, "x = 1")
    assert result["content"][0]["text"] == "(no output)"
    assert result["structuredContent"]["result"] is None


def test_what_the_workspace_defines_is_found_through_its_module_like_a_repls(executing):
    # pickle, dataclasses (string annotations) and typing look the class's module up in
    # sys.modules, as they find a REPL's __main__.
    code = ("from __future__ import annotations\nimport dataclasses, pickle, typing\n"
            "@dataclasses.dataclass\nclass Point:\n    x: int\n    tag: typing.ClassVar[str] = 't'\n"
            "(pickle.loads(pickle.dumps(Point(3))), typing.get_type_hints(Point)['x'], __name__)")
    result = run(executing, code)
    assert result["content"][0]["text"] == "(Point(x=3), <class 'int'>, '__workspace__')", result


def test_what_any_thread_prints_while_a_call_runs_is_that_calls_output(executing):
    # A thread an earlier call started (a pool, a consumer) works for the call running
    # now, as a notebook's running cell takes what any thread prints.
    run(executing, "import threading\ngo, done = threading.Event(), threading.Event()\n"
                   "def chatter():\n    go.wait(30)\n    print('from the earlier thread')\n    done.set()\n"
                   "threading.Thread(target=chatter).start()")
    later = run(executing, "go.set()\ndone.wait(30)\nprint('mine')")
    assert later["structuredContent"]["stdout"] == "from the earlier thread\nmine\n", later
    joined = run(executing, "t = threading.Thread(target=print, args=('joined',))\nt.start()\nt.join()")
    assert joined["structuredContent"]["stdout"] == "joined\n"


def test_the_code_is_compiled_as_its_own_not_with_the_workers_future_imports(executing):
    # It inherited execution.py's `from __future__ import annotations`: strings.
    result = run(executing, "def f(x: int) -> str:\n    pass\nf.__annotations__")
    assert result["structuredContent"]["result"] == "{'x': <class 'int'>, 'return': <class 'str'>}"
    own = run(executing, "from __future__ import annotations\ndef g(x: int):\n    pass\ng.__annotations__")
    assert own["structuredContent"]["result"] == "{'x': 'int'}"      # the code's own choice stands


def test_code_closing_its_stdout_or_rewrapping_its_buffer_keeps_its_answer(executing):
    closed = run(executing, "import sys\nprint('before')\nsys.stdout.close()\n6 * 7")
    assert closed["structuredContent"]["stdout"] == "before\n", closed
    assert closed["structuredContent"]["result"] == "42"
    wrapped = run(executing, "import io, sys\n"
                             "out = io.TextIOWrapper(sys.stdout.buffer, encoding='utf-8', write_through=True)\n"
                             "out.write('é wrapped\\n')\nout.close()\nprint('after')")
    assert wrapped["structuredContent"]["stdout"] == "é wrapped\nafter\n", wrapped


def test_bytes_written_to_stdouts_buffer_are_shown_in_order_undecodable_ones_escaped(executing):
    code = ("import sys\nprint('text', end=' ')\nsys.stdout.buffer.write(b'caf\\xc3\\xa9 \\xff\\n')\n"
            "sys.stdout.buffer.flush()\nsys.stderr.buffer.write(b'\\xe2\\x82')\n"
            "(sys.stdout.encoding, sys.stderr.encoding)")
    result = run(executing, code)
    assert result["structuredContent"] == {"result": "('utf-8', 'utf-8')", "stdout": "text caf\u00e9 \\xff\n",
                                           "stderr": "\\xe2\\x82"}, result


def test_code_asking_for_its_streams_descriptor_is_told_why_there_is_none_and_what_to_pass(executing, tmp_path):
    # faulthandler.enable() failed with a bare "UnsupportedOperation: fileno".
    from gsmcpd.worker.capture import NO_FILENO
    for code in ("import faulthandler\nfaulthandler.enable()", "import sys\nsys.stdout.fileno()",
                 "import sys\nsys.stderr.buffer.fileno()"):
        failed = run(executing, code)
        assert failed["isError"] is True
        assert failed["content"][0]["text"].endswith("io.UnsupportedOperation: " + NO_FILENO), failed
    assert "faulthandler.enable(file=open(path, 'a'))" in NO_FILENO
    # A file of one's own works (dumped, not enabled: this process's faulthandler is
    # pytest's), and code catching the old error still catches it.
    log = tmp_path / "fault.log"
    told = run(executing, f"import faulthandler, io, sys\nwith open({str(log)!r}, 'a') as fault_log:\n"
                          "    faulthandler.dump_traceback(fault_log)\n"
                          "try:\n    sys.stdout.fileno()\nexcept io.UnsupportedOperation:\n    caught = True\ncaught")
    assert told["structuredContent"]["result"] == "True", told
    assert "most recent call first" in log.read_text()


def test_workspaces_are_per_server(executing):
    run(executing, "secret = 1")
    result = run(McpServer([ExecutionToolset]), "secret")
    assert result["isError"] is True and "NameError" in result["content"][0]["text"]


def test_exception_is_kind_other_with_traceback_and_output(executing):
    result = run(executing, "print('before')\ndef f():\n    return 1 / 0\nf()")
    assert result["isError"] is True
    assert result["structuredContent"]["error"]["kind"] == "other"
    text = result["content"][0]["text"]
    assert text.startswith("before\nTraceback (most recent call last):")
    assert "in f" in text and "return 1 / 0" in text and text.endswith("ZeroDivisionError: division by zero")
    assert "execution.py" not in text


def test_syntax_error_is_kind_compile_error(executing):
    result = run(executing, "def broken(:\n    pass")
    assert result["isError"] is True
    assert result["structuredContent"]["error"]["kind"] == "compileError"
    assert "SyntaxError" in result["content"][0]["text"]


@pytest.mark.parametrize("code, line", [("x = 1\nreturn x", "return x"),
                                        ("async def g():\n    return 1\nawait g()", "await g()")])
def test_a_compilers_syntax_error_shows_its_line_as_python_shows_a_files(executing, code, line):
    # Compiled from a string, the compiler's own errors carry no line: only "line 2" was told.
    text = run(executing, code)["content"][0]["text"]
    assert text.splitlines()[1:3] == [f"    {line}", "    " + "^" * len(line)], text


@pytest.fixture
def data_limited():
    """This process under a generous RLIMIT_DATA (64 GiB), as GS_MCP_WORKER_MEMORY sets a worker's."""
    import resource
    before = resource.getrlimit(resource.RLIMIT_DATA)
    resource.setrlimit(resource.RLIMIT_DATA, (64 << 30, before[1]))
    yield
    resource.setrlimit(resource.RLIMIT_DATA, before)


def test_a_memory_error_under_a_data_limit_names_the_limit(executing, data_limited):
    text = run(executing, "raise MemoryError('out')")["content"][0]["text"]
    assert text.endswith("MemoryError: out\n(this worker may hold 65536 MiB of data, its RLIMIT_DATA: "
                         "GS_MCP_WORKER_MEMORY sets it; what the workspace holds counts, `del` what it "
                         "no longer needs)"), text


def test_a_memory_error_without_a_data_limit_names_none(executing):
    import resource
    assert resource.getrlimit(resource.RLIMIT_DATA)[0] == resource.RLIM_INFINITY
    assert run(executing, "raise MemoryError('out')")["content"][0]["text"].endswith("MemoryError: out")


NESTED_TOO_DEEPLY = {
    # the parser's stack overflows: a MemoryError, with no message on Python 3.11
    "unary minus": "-" * 100_000 + "1",
    "not": "not " * 100_000 + "True",
    "conditional": "1 if x else " * 100_000 + "1",
    # building the AST meets the recursion limit: a RecursionError
    "a chain of +": "x = 1" + " + 1" * 1_000_000,
    "a chain of subscripts": "x" + "[0]" * 100_000,
}


@pytest.mark.parametrize("code", NESTED_TOO_DEEPLY.values(), ids=NESTED_TOO_DEEPLY)
def test_code_nested_too_deeply_is_a_compile_error_saying_so(executing, code):
    # It was a MemoryError with no message, or a RecursionError, of kind other.
    run(executing, "kept = 'still here'")
    result = run(executing, code)
    assert result["isError"] is True
    assert result["structuredContent"]["error"]["kind"] == "compileError"
    assert result["content"][0]["text"] in (
        "code is nested too deeply to compile (MemoryError: the parser's stack overflowed); "
        "split the deepest expression into named parts",
        "code is nested too deeply to compile (MemoryError: Parser stack overflowed - Python source "
        "too complex to parse); split the deepest expression into named parts",
        "code is nested too deeply to compile (RecursionError: maximum recursion depth exceeded "
        "during ast construction); split the deepest expression into named parts")
    assert run(executing, "kept")["structuredContent"]["result"] == "'still here'"


DEEP_BUT_VALID = {
    "unary minus": ("-" * 2001 + "1", "-1"),
    "a chain of +": ("x = 1" + " + 1" * 2000 + "\nx", "2001"),
    "attributes": ("class A:\n    pass\na = A()\na.a = a\n" + "a" + ".a" * 2000 + " is a", "True"),
}


@pytest.mark.parametrize("code, value", DEEP_BUT_VALID.values(), ids=DEEP_BUT_VALID)
def test_code_nested_as_deeply_as_python_compiles_text_runs(executing, code, value):
    # Compiled from its AST, it met the recursion limit (1000) at about 990 levels.
    compile(code, "<text>", "exec")      # Python's own compile takes it
    result = run(executing, code)
    assert "isError" not in result, result
    assert result["structuredContent"]["result"] == value


@pytest.mark.parametrize("code, value", [
    ("a = 1; a + 1", "2"),
    ("x = 2\n\n  # a comment\nx * 3  # trailing\n", "6"),
    ("x = [1]\n*x, 2", "(1, 2)"),
    ("*[1], 2", "(1, 2)"),
    ("a = 1\r\nb = 2\r\n(a,\r\n b)", "(1, 2)"),
    ("a = 1\rb = 2\ra + b", "3"),
    ("é = 'é'; é + 'ü'", "'éü'"),
    ("x = 5\nx;", "5"),
    ("\\\n1", "1"),
])
def test_the_final_expression_is_answered_however_it_is_written(executing, code, value):
    assert run(executing, code)["structuredContent"]["result"] == value


def test_a_traceback_points_into_the_final_expression_as_written(executing):
    text = run(executing, "é = 0; 'ü'\n(é\n +\n 1/é)")["content"][0]["text"]
    assert 'line 4, in <module>\n    1/é)\n' in text and text.endswith("ZeroDivisionError: division by zero")


def workspace_sources():
    return {name for name in linecache.cache if name.startswith(execution._FILENAME_PREFIX)}


def test_a_calls_source_is_kept_while_code_it_compiled_lives_and_no_longer(executing):
    # Every call's source stayed in linecache for good: a worker running many calls grew
    # without end (one entry, its whole text, a call).
    before = workspace_sources()
    for n in range(50):
        run(executing, f"x = {n}\nx + 1")
    run(executing, "def f():\n    return 1 / 0\nkept = [lambda: 2]")
    assert len(workspace_sources() - before) == 1
    text = run(executing, "f()")["content"][0]["text"]
    assert "    return 1 / 0\n" in text, text   # a function of an earlier call: its line quoted
    run(executing, "import inspect\nsource = inspect.getsource(kept[0])\ndel f")
    assert run(executing, "source")["content"][0]["text"] == repr("kept = [lambda: 2]")
    assert len(workspace_sources() - before) == 1   # the lambda lives on
    run(executing, "del kept")
    gc.collect()
    assert workspace_sources() - before == set()


def test_a_traceback_below_a_page_break_quotes_the_line_python_numbers(executing):
    # The lines kept for tracebacks were split as str.splitlines splits, which also ends
    # one at a form feed: every line below one was quoted from the line above it.
    text = run(executing, "x = 0\n\x0c\ny = 1\n1/x")["content"][0]["text"]
    assert 'line 4, in <module>\n    1/x\n' in text, text


def test_brackets_nested_too_deeply_stay_the_parsers_syntax_error(executing):
    for code in ("(" * 5000 + ")" * 5000, "[" * 100_000 + "]" * 100_000):
        result = run(executing, code)
        assert result["structuredContent"]["error"]["kind"] == "compileError"
        assert result["content"][0]["text"].endswith("SyntaxError: too many nested parentheses")


def test_eval_of_code_nested_too_deeply_is_said_to_be_too_deep_to_parse(executing):
    result = run(executing, "eval('-' * 100_000 + '1')")
    text = result["content"][0]["text"]
    assert result["structuredContent"]["error"]["kind"] == "other"
    if sys.version_info >= (3, 12):   # the parser's MemoryError says it: no note to add
        assert text.endswith("\nMemoryError: Parser stack overflowed - Python source too complex "
                             "to parse"), text
    else:                             # 3.11's is bare, so the answer says what it may be
        assert text.endswith("\nMemoryError\n(a MemoryError with no message is also how Python "
                             "3.11's parser says code given to eval, exec, compile or ast.parse is "
                             "nested too deeply to parse)"), text
    assert run(executing, "1 + 1")["structuredContent"]["result"] == "2"


PARSER_NOTE = ("(a MemoryError with no message is also how Python 3.11's parser says code given to "
               "eval, exec, compile or ast.parse is nested too deeply to parse)")


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="3.12's parser names its overflow: no note")
@pytest.mark.parametrize("code", ["exec('-' * 100_000 + '1')", "compile('~' * 100_000 + '1', 'x', 'exec')",
                                  "import ast\nast.parse('-' * 100_000 + '1')",
                                  "list(map(eval, ['-' * 100_000 + '1']))",
                                  "def parse(text):\n    return eval(text)\nparse('-' * 100_000 + '1')"])
def test_a_bare_memory_error_from_a_call_that_parsed_is_said_to_be_maybe_the_parsers(executing, code):
    text = run(executing, code)["content"][0]["text"]
    assert text.endswith("\nMemoryError\n" + PARSER_NOTE), text


@pytest.mark.parametrize("code", ["raise MemoryError", "compile('1', 'x', 'eval'); raise MemoryError",
                                  "exec('raise MemoryError')", "exec('x = 1\\nraise MemoryError()')",
                                  "def f():\n    eval('1')\n    raise MemoryError\nf()"])
def test_a_bare_memory_error_no_parser_raised_gets_no_parser_note(executing, code):
    # Every MemoryError with no message got the note: bytearray past GS_MCP_WORKER_MEMORY too.
    result = run(executing, code)
    text = result["content"][0]["text"]
    assert result["structuredContent"]["error"]["kind"] == "other"
    assert text.endswith("\nMemoryError"), text


def test_recursion_without_end_is_a_recursion_error_and_the_workspace_goes_on(executing):
    run(executing, "def f(n):\n    return f(n + 1)")
    result = run(executing, "f(0)")
    text = result["content"][0]["text"]
    assert result["structuredContent"]["error"]["kind"] == "other"
    assert "[Previous line repeated" in text and text.endswith("\nRecursionError: maximum recursion depth exceeded")
    assert run(executing, "f.__name__")["structuredContent"]["result"] == "'f'"


def test_a_value_nested_too_deeply_to_show_is_an_error_without_the_workers_frames(executing):
    # Its traceback was the worker's own frame, repr(value) in execution.py.
    result = run(executing, "x = []\nfor _ in range(100_000):\n    x = [x]\nx")
    assert result["content"][0]["text"] == (
        "RecursionError: maximum recursion depth exceeded while getting the repr of an object")
    assert run(executing, "len(x)")["structuredContent"]["result"] == "1"


def test_a_final_value_whose_repr_raises_outside_the_workspace_shows_where(executing):
    # An image module's __repr__ raising: its frames were dropped with the worker's, the
    # answer a bare "ValueError: in repr" with no word of where.
    run(executing, "ns = {}\nexec(compile('class Bad:\\n    def __repr__(self):\\n        "
                   "raise ValueError(\"in repr\")\\n', 'helper.py', 'exec'), ns)\nBad = ns['Bad']")
    text = run(executing, "Bad()")["content"][0]["text"]
    assert text.startswith("Traceback") and 'File "helper.py", line 3, in __repr__' in text, text
    assert "execution.py" not in text and text.endswith("ValueError: in repr"), text


@pytest.mark.parametrize("raising", ["raise Unprintable()", "class Shown:\n    def __repr__(self):\n"
                                     "        raise Unprintable()\nShown()"])
def test_an_exception_whose_str_raises_is_shown_as_pythons_traceback_shows_it(executing, raising):
    # The answer was the error its __str__ raised, "RuntimeError: str fails", with no traceback.
    run(executing, "class Unprintable(Exception):\n    def __str__(self):\n        raise RuntimeError('str fails')")
    result = run(executing, raising)
    assert result["isError"] is True
    text = result["content"][0]["text"]
    assert text.startswith("Traceback") and text.endswith("Unprintable: <exception str() failed>"), text
    assert "str fails" not in text

def test_system_exit_answers_instead_of_ending_the_worker(executing):
    result = run(executing, "raise SystemExit(3)")
    assert result["isError"] is True and "SystemExit: 3" in result["content"][0]["text"]


@pytest.mark.parametrize("code, shown", [
    ("raise GeneratorExit", "GeneratorExit"),
    ("class Custom(BaseException):\n    pass\nraise Custom('mine')", "Custom: mine"),
])
def test_any_base_exception_of_the_code_is_an_error_result(executing, code, shown):
    result = run(executing, "print('before')\n" + code)
    assert result["isError"] is True and result["structuredContent"]["error"]["kind"] == "other"
    text = result["content"][0]["text"]
    assert text.startswith("before\nTraceback") and text.endswith(shown)


def test_what_utf8_cannot_carry_is_shown_escaped(executing):
    result = run(executing, "import sys\nprint('a\\ud800')\nprint('b\\udfff', file=sys.stderr)\n'c\\ud801'")
    assert result["content"][0]["text"] == "a\\ud800\nb\\udfff\n'c\\ud801'"
    assert result["structuredContent"] == {"result": "'c\\ud801'", "stdout": "a\\ud800\n",
                                           "stderr": "b\\udfff\n"}
    failed = run(executing, "raise ValueError('\\ud800')")
    assert failed["isError"] is True and failed["content"][0]["text"].endswith("ValueError: \\ud800")


def test_output_past_the_cap_is_cut_with_a_note(executing, monkeypatch):
    monkeypatch.setattr(execution, "OUTPUT_CAP", 10)
    result = run(executing, "print('x' * 25)\n'y' * 20")
    note = "[... 16 more characters of stdout cut: execute_code keeps the first 10]\n"
    assert result["structuredContent"]["stdout"] == "x" * 10 + "\n" + note
    assert result["structuredContent"]["result"].startswith("'yyyyyyyyy\n[... 12 more characters of")
    failed = run(executing, "raise ValueError('z' * 30)")["content"][0]["text"]
    assert failed.startswith("Traceback") and "more characters of the traceback cut" in failed


def test_the_repeat_of_an_error_cut_counts_what_the_message_had_past_it(executing):
    # structuredContent's repeat cut the text's cuts again: its count was of what they kept
    # and their notes past 10,000 (1,990,2xx), not of what the code printed and raised.
    failed = run(executing, "import sys\nsys.stdout.write('p' * 1_500_000)\nraise ValueError('x' * 2_000_000)")
    message = failed["content"][0]["text"]
    printed, raised = cut_notes(message)
    assert printed == (500_000, 1_000_000)
    assert sum(raised) == message.index("ValueError: xxx") - message.index("Traceback") + len("ValueError: ") + 2_000_000
    [repeat] = cut_notes(failed["structuredContent"]["error"]["message"])
    assert repeat[1] == REPEAT_CAP and sum(repeat) == sum(printed) + len("\n") + sum(raised)


def test_output_printed_in_a_loop_is_cut_as_it_comes_not_kept_whole(executing, monkeypatch):
    made = []

    class Recorded(execution.Capture):   # the streams the call prints to, to see what they held
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(execution, "Capture", Recorded)
    line = "x" * 999 + "\n"
    result = run(executing, "for i in range(5000):\n    print('x' * 999)")
    assert result["structuredContent"]["stdout"] == line * 1000 + (
        "\n[... 4,000,000 more characters of stdout cut: execute_code keeps the first 1,000,000]\n")
    assert [len(stream.getvalue()) for stream in made] == [1_000_000, 0]
    made.clear()
    failed = run(executing, "import sys\nfor i in range(5000):\n    print('y' * 999, file=sys.stderr)\n"
                            "raise ValueError('after')")
    assert failed["isError"] is True
    assert failed["content"][0]["text"].startswith(("y" * 999 + "\n") * 1000 + (
        "\n[... 4,000,000 more characters of stderr cut: execute_code keeps the first 1,000,000]\n"
        "Traceback"))
    assert failed["content"][0]["text"].endswith("ValueError: after")
    assert [len(stream.getvalue()) for stream in made] == [0, 1_000_000]


def test_hard_break_passes_through_execute_code(executing):
    executing.toolsets[0].namespace["HardBreak"] = HardBreak
    with pytest.raises(HardBreak):
        run(executing, "try:\n    raise HardBreak\nexcept Exception:\n    pass")


def test_the_codes_own_keyboard_interrupt_is_a_tool_error_not_a_break(executing):
    result = run(executing, "raise KeyboardInterrupt('mine')")
    assert result["isError"] is True and result["structuredContent"]["error"]["kind"] == "other"
    assert result["content"][0]["text"].endswith("KeyboardInterrupt: mine")


def test_a_soft_break_is_a_break_not_a_tool_error(executing):
    executing.toolsets[0].namespace["SoftBreak"] = SoftBreak
    with pytest.raises(SoftBreak):
        run(executing, "raise SoftBreak('soft break')")
    assert run(executing, "'still usable'")["content"][0]["text"] == "'still usable'"


@pytest.mark.parametrize("code", [
    "raise SoftBreak('soft break')",
    # code that caught the break and carried on is still ended by it (mark_soft_break)
    "mark_soft_break()\ntry:\n    raise SoftBreak('soft break')\nexcept KeyboardInterrupt:\n    pass"],
    ids=["raised", "caught_and_carried_on"])
def test_a_break_carries_what_the_code_printed_before_it(executing, code):
    # The break's error answers the call: without `partial` a deadline threw away all
    # that a long loop had printed.
    executing.toolsets[0].namespace.update(SoftBreak=SoftBreak, mark_soft_break=mark_soft_break)
    try:
        with pytest.raises(SoftBreak) as broken:
            run(executing, "import sys\nprint('step 1')\nprint('warned', file=sys.stderr)\n" + code)
    finally:
        mark_soft_break(False)
    assert broken.value.partial == {"stdout": "step 1\n", "stderr": "warned\n"}
    assert broken.value.partial_said == "what the code printed before it is"


def test_a_break_before_anything_was_printed_carries_nothing(executing):
    executing.toolsets[0].namespace["HardBreak"] = HardBreak
    with pytest.raises(HardBreak) as broken:
        run(executing, "raise HardBreak")
    assert not hasattr(broken.value, "partial")


def test_execute_code_is_gated_in_read_only():
    server = McpServer([ExecutionToolset, BenchToolset], read_only=True)
    assert listed(server) == ["echo"]
    assert call(server, "execute_code", {"code": "1"})["error"]["data"] == {"kind": "readOnly"}


# -- bench ---------------------------------------------------------------------------

def test_echo_answers_the_text():
    result = call(McpServer([BenchToolset], read_only=True), "echo", {"text": "héllo"})["result"]
    assert result == {"content": [{"type": "text", "text": "héllo"}]}


# -- the worked third-party toolset -----------------------------------------------------

@pytest.fixture
def acme(monkeypatch):
    monkeypatch.syspath_prepend(str(EXAMPLES))
    return resolve_toolsets(["acme_toolset:AcmeLabelsToolset"])[0]


def test_vendor_server_exposes_only_its_own_tools(acme):
    server = McpServer([acme], server_name="acme-labels-mcp", server_version="2.5.0")
    assert listed(server) == ["list_labels", "print_label"]
    assert call(server, "print_label", {"text": "fragile", "copies": 2})["result"]["content"][0]["text"] \
        == "printed 2 x 'fragile'"
    result = call(server, "list_labels", {})["result"]
    assert result["structuredContent"] == {"labels": ["fragile", "fragile"]}
    bad = call(server, "print_label", {"text": "x", "copies": 11})["result"]
    assert bad["structuredContent"]["error"]["kind"] == "invalidParams"


def test_third_party_toolset_composes_with_a_core_toolset(acme):
    server = McpServer(resolve_toolsets(["acme_toolset:AcmeLabelsToolset", "execution"]))
    assert listed(server) == ["execute_code", "list_labels", "print_label"]
    call(server, "print_label", {"text": "a"})
    assert call(server, "execute_code", {"code": "6 * 7"})["result"]["content"][0]["text"] == "42"


def test_third_party_safe_tool_survives_a_read_only_build(acme):
    server = McpServer([acme, ExecutionToolset], read_only=True)
    assert listed(server) == ["list_labels"]
    assert call(server, "print_label", {"text": "x"})["error"]["data"] == {"kind": "readOnly"}
    tools = server.handle({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})["result"]["tools"]
    assert tools[0]["annotations"]["readOnlyHint"] is True


def test_the_readme_examples_name_toolsets_that_resolve():
    # What a reader pastes from README.md must start, not be refused at startup.
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    specs = re.findall(r'GS_MCP_TOOLSETS="([^"]*examples\.[^"]*)"', readme)
    assert specs
    for spec in specs:
        assert resolve_toolsets(spec), spec


@pytest.fixture
def plugin_package(tmp_path, monkeypatch):
    """A toolset package on sys.path whose __init__ imports its plugins by name, in a loop,
    one of them failing; its modules forgotten afterwards."""
    package = tmp_path / "failing_plugins_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("import importlib\n\nfor _name in ('good', 'bad'):\n"
                                         "    importlib.import_module(f'{__name__}.{_name}')\n")
    (package / "good.py").write_text("X = 1\n")
    (package / "bad.py").write_text("import extlib_not_installed\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "failing_plugins_pkg"
    for name in [name for name in sys.modules if name.partition(".")[0] == "failing_plugins_pkg"]:
        del sys.modules[name]


def test_a_toolset_package_failing_in_a_plugin_it_imports_names_both(plugin_package):
    # The error named the package alone, with an error of the submodule's that says not which.
    with pytest.raises(ValueError) as info:
        resolve_toolsets([f"{plugin_package}:Acme"])
    assert str(info.value) == (
        f"toolset '{plugin_package}:Acme': cannot import module '{plugin_package}' (raised importing its "
        f"submodule {plugin_package}.bad: ModuleNotFoundError: No module named 'extlib_not_installed')")


def test_what_code_writes_to_descriptors_1_and_2_is_its_output_in_order_and_cut_at_the_cap(executing):
    # os.write(1, ...), a subprocess's output and C code's printf went past sys.stdout to the
    # worker's own fds: the daemon's log, unbounded, and never into the answer.
    code = ("import os, subprocess, sys\nprint('before')\nos.write(1, b'x\\n')\nprint('between')\n"
            "subprocess.run(['echo', 'hi'])\nos.write(2, b'err caf\\xc3\\xa9 \\xff\\n')\n"
            "subprocess.run([sys.executable, '-c', 'import sys; sys.stderr.write(\"child\\\\n\")'])\n'done'")
    result = run(executing, code)
    assert result["structuredContent"] == {"result": "'done'", "stdout": "before\nx\nbetween\nhi\n",
                                           "stderr": "err caf\u00e9 \\xff\nchild\n"}, result
    flood = run(executing, "import os\nos.write(1, b'y' * 3_000_000)\nos.write(2, b'e')\nprint('last')")
    stdout = flood["structuredContent"]["stdout"]
    assert stdout.startswith("y" * 1_000_000) and cut_notes(stdout) == [(2_000_005, 1_000_000)], stdout[-300:]
    assert flood["structuredContent"]["stderr"] == "e"


def test_descriptors_1_and_2_are_given_back_after_the_call(executing, tmp_path):
    import os
    before = [os.readlink(f"/proc/self/fd/{fd}") for fd in (1, 2)]
    run(executing, "import os\nos.write(1, b'x')")
    failed = run(executing, "import os\nos.write(2, b'said')\nraise ValueError('no')")
    assert failed["isError"] is True and failed["content"][0]["text"].startswith("said\nTraceback"), failed
    assert [os.readlink(f"/proc/self/fd/{fd}") for fd in (1, 2)] == before


def test_a_subprocess_left_running_writes_on_past_its_call_into_no_answer(executing, tmp_path):
    go, done = tmp_path / "go", tmp_path / "done"
    started = run(executing, "import subprocess\nlate = subprocess.Popen(['sh', '-c', "
                             f"'while [ ! -e {go} ]; do sleep 0.01; done; echo late; echo late >&2; touch {done}'])\n"
                             "'started'")
    assert started["structuredContent"] == {"result": "'started'", "stdout": "", "stderr": ""}, started
    go.touch()
    assert wait_until(done.exists)
    # Its pipe outlives the call that started it: no SIGPIPE, and what it wrote between calls is nobody's.
    ended = run(executing, "late.wait()")
    assert ended["structuredContent"] == {"result": "0", "stdout": "", "stderr": ""}, ended
