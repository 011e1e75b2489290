"""execution: execute_code, the escape hatch (gated in read-only mode).

Runs Python in a per-session workspace namespace that persists across calls,
like a REPL, in the worker process, so image modules import through the view's
import hook.
"""

from __future__ import annotations

import ast
import itertools
import linecache
import re
import sys
import traceback
import types
import weakref
from contextlib import redirect_stderr, redirect_stdout

from gsmcpd.image import own, splice
from gsmcpd.image.splice import NESTED_TOO_DEEPLY, nested_too_deeply
from gsmcpd.raised import exception_text, traceback_text
from gsmcpd.worker.capture import Capture
from gsmcpd.worker.descriptors import DescriptorCapture
from gsmcpd.worker import compile_site
from gsmcpd.worker.memory_limit import data_limit_note
from gsmcpd.worker.registry import Tool
from gsmcpd.worker.server import other_threads
from gsmcpd.worker.toolset import (BREAKS, ToolError, Toolset, carry_partial, object_schema, raise_if_break,
                                   sendable, string_prop)

_FILENAME_PREFIX = "<workspace-"
WORKSPACE = "__workspace__"   # the workspace's module name, as a REPL's is __main__
OUTPUT_CAP = 1_000_000   # characters kept of each of stdout, stderr, the value, a traceback


class ExecutionToolset(Toolset):
    name = "execution"
    tool_names = ("execute_code",)
    # read_only_safe stays empty: arbitrary code can change anything.

    def __init__(self, server=None):
        super().__init__(server)
        compile_site.watch()   # for the note on a bare MemoryError (_traceback)
        # A module, importable while its code runs as a REPL's __main__ is: pickle, a
        # dataclass with string annotations, typing.get_type_hints, a Pool's function
        # find what the workspace defines through sys.modules[cls.__module__].
        self.module = types.ModuleType(WORKSPACE)
        self.namespace: dict = self.module.__dict__
        # `progress` lets long-running workspace code report to a client that asked.
        self.namespace["progress"] = self.progress
        self._call_numbers = itertools.count(1)
        # By id: the classes and functions the workspace held as an image module bound them,
        # the only ones a re-import may leave behind (one of the same names the workspace's own
        # code made never is: a class with `__module__ = "shop"`, a functools.wraps wrapper).
        # Identity, not hash: a metaclass may lack one.
        self._image_objects = weakref.WeakValueDictionary()
        # Whether a thread the code started was running as the last call ended: one it left
        # may bind an image class or function to a workspace name after its call, and then end.
        # The worker's own threads (its router watchdog, always there) are not the code's:
        # those running before its first call.
        self._threads_ran = False
        self._threads_before_code: frozenset | None = None
        # By name, the class or function the workspace bound as it was last noted (weakly):
        # what a call notes again is only what was bound since, not every name each call.
        self._noted_bindings: dict = {}
        # By filename: weak references to the code objects each call compiled still alive,
        # whose source linecache keeps for them (_keep_source).
        self._sources_in_use: dict[str, set] = {}

    def register(self, registry):
        registry.add(Tool(
            "execute_code",
            "Run Python source in this session's workspace (names persist across calls, like a "
            "REPL). Answers what the code printed plus the repr of a final expression (a None "
            "value only when nothing was printed). "
            "progress(done, total=None, message=None) reports progress while it runs (it "
            "returns False when nothing was sent: no progressToken, a value not above the last, "
            "from a thread already running when this call started, or from a process the code "
            "forked).",
            object_schema({"code": string_prop("Python source to run")}, required=["code"]),
            self.execute_code,
        ))

    def execute_code(self, arguments):
        code = arguments["code"]
        filename = f"{_FILENAME_PREFIX}{next(self._call_numbers)}>"
        body, final_expression = self._compile(code, filename)
        self._keep_source(filename, code, body, final_expression)
        sys.modules[WORKSPACE] = self.module   # this server's (a test process may hold several)
        self._rebind_reimported()
        if self._threads_before_code is None:
            self._threads_before_code = other_threads()
        try:
            return self._run(body, final_expression)
        finally:
            self._note_image_objects()   # what the code imported, before anything re-imports it
            self._threads_ran = bool(self._code_threads())

    def _keep_source(self, filename, code, *compiled) -> None:
        """Keep `code` where tracebacks and inspect look for it, in the lines Python numbers,
        while a code object compiled from it lives (a function it defined, a frame a kept
        traceback holds): every call's kept for good grew the worker without end."""
        entry = (len(code), None, splice.lines_of(code), filename)
        linecache.cache[filename] = entry

        def gone(ref):
            alive.discard(ref)
            if not alive:
                del self._sources_in_use[filename]
                if linecache.cache.get(filename) is entry:
                    del linecache.cache[filename]
        alive = {weakref.ref(each, gone) for each in _code_objects(compiled)}
        self._sources_in_use[filename] = alive   # the weak references live while they wait

    def call_starting(self) -> None:
        """What a thread the code left running bound since the last call is noted before
        this call (abort, refresh, a commit, a mutation tool) may re-import its module."""
        if self._threads_ran or self._code_threads():
            self._note_image_objects(rebound_only=True)
        self._threads_ran = bool(self._code_threads())

    def _code_threads(self) -> frozenset:
        """The threads running now that the code started, or that those started."""
        if self._threads_before_code is None:
            return frozenset()
        return other_threads() - self._threads_before_code

    def _run(self, body, final_expression):
        # Past OUTPUT_CAP a stream only counts what it is given: code printing in a loop
        # until the deadline must not fill the worker's memory with what is cut anyway.
        stdout, stderr = Capture(OUTPUT_CAP), Capture(OUTPUT_CAP)
        has_value, value = False, None
        try:
            with redirect_stdout(stdout), redirect_stderr(stderr), DescriptorCapture(stdout, stderr):
                exec(body, self.namespace)
                if final_expression is not None:
                    value = eval(final_expression, self.namespace)
                    has_value = True
                    shown = repr(value)
        except BaseException as error:   # SystemExit, GeneratorExit, a KeyboardInterrupt of its own...
            _raise_if_break(error, stdout, stderr)
            raise _failed(error, stdout, stderr) from None
        finally:
            if self.view is not None:   # the code may have made a failing import pass
                self.view.forget_import_failures()
        _raise_if_break(None, stdout, stderr)   # code that caught the break and carried on
        if has_value and value is not None:
            self.namespace["_"] = value
        out, err = _printed(stdout, "stdout"), _printed(stderr, "stderr")
        shown = _sendable(shown, "the value's repr") if has_value else None
        # A None value says nothing after output (a print() is often the last line).
        told = shown if value is not None or not (out or err) else None
        return {
            "text": _join(out, err, told or "") or "(no output)",
            "structured": {"result": shown, "stdout": out, "stderr": err},
        }

    def _rebind_reimported(self) -> None:
        """Names the workspace binds to an image module, or to a class or function at
        its top level, are bound to the module's live copy: abort, refresh and a
        commit re-import modules as new objects, and `shop.Cart` read through an
        earlier `import shop` would still be what the abort undid."""
        view = self.view
        if view is None:
            return
        for name, value in list(self.namespace.items()):
            fresh = _live_counterpart(view, value)
            if fresh is None or fresh is value:
                continue
            held = self._image_objects.get(id(value))
            if held is not value and not issubclass(type(value), types.ModuleType):
                continue   # the workspace's own class or function, however it is named
            self.namespace[name] = fresh

    def _note_image_objects(self, rebound_only: bool = False) -> None:
        """Remember the classes and functions the workspace binds that an image module binds
        now (`rebound_only`: of the names bound to another one since the last note)."""
        view = self.view
        if view is None:
            return
        # Made anew by each full look: names deleted since leave it.
        noted = self._noted_bindings if rebound_only else {}
        for name, value in list(self.namespace.items()):
            earlier = noted.get(name)
            if rebound_only and earlier is not None and earlier() is value:
                continue
            kind = type(value)
            if not (issubclass(kind, type) or kind is types.FunctionType):
                continue   # only these (and modules, told by their loader) are an image module's
            if _live_counterpart(view, value) is value:
                self._image_objects[id(value)] = value
            noted[name] = weakref.ref(value)
        self._noted_bindings = noted

    @staticmethod
    def _compile(code: str, filename: str):
        """(the code, its final expression or None), compiled from text: compiling the AST
        meets the recursion limit at about a third of the nesting Python's compile of the
        text takes."""
        try:
            tree = ast.parse(code, filename, "exec")
            body, final_expression = code, None
            if tree.body and isinstance(tree.body[-1], ast.Expr):
                body, expression = _split_final_expression(code, tree.body[-1])
                final_expression = compile(expression, filename, "eval", dont_inherit=True)
            # dont_inherit: the code is compiled as its own, never with this module's
            # `from __future__ import annotations` (its annotations would turn to strings).
            return compile(body, filename, "exec", dont_inherit=True), final_expression
        except SyntaxError as error:
            if error.text is None and error.filename == filename and isinstance(error.lineno, int):
                # The compiler's own errors ('return' outside function) carry no line text
                # when compiled from a string, as a file's do: the line is shown as Python shows it.
                lines = splice.lines_of(code)
                if 1 <= error.lineno <= len(lines):
                    error.text = lines[error.lineno - 1]
            detail = "".join(traceback.format_exception_only(type(error), error)).rstrip()
            raise ToolError("compileError", detail) from None
        except NESTED_TOO_DEEPLY as error:
            raise ToolError("compileError", nested_too_deeply(error)) from None


def _code_objects(codes):
    """`codes` (None among them skipped) and the code objects nested in them, at any depth."""
    found, todo = [], [code for code in codes if code is not None]
    while todo:
        code = todo.pop()
        found.append(code)
        todo += [const for const in code.co_consts if isinstance(const, types.CodeType)]
    return found


def _split_final_expression(code: str, last: ast.Expr) -> tuple[str, str]:
    """(`code` with its final expression statement `last` blanked out, that expression as
    eval source): each keeps the lines and columns the code gives it, so a traceback
    points into the code as written. eval takes no indentation before the expression,
    nor a bare `*a, b`: the blanked text before it opens a parenthesis at its very start
    (where there is none, only a `*a, b` is wrapped, moving its columns by one)."""
    lines = [line.encode() for line in splice.lines_of(code)]
    starts = list(itertools.accumulate([len(line) for line in lines], initial=0))
    data = b"".join(lines)
    start = starts[last.lineno - 1] + last.col_offset
    end = starts[last.end_lineno - 1] + last.end_col_offset
    before, after = _blanked(data[:start]), b")"
    if before:      # its first byte, a blank, becomes the "(" (a line ending gets it before it)
        before = b"(" + (before[1:] if before.startswith(b" ") else before)
    elif _bare_starred(last.value):
        before = b"("
    else:
        after = b""
    body = data[:start] + _blanked(data[start:])
    return body.decode(), (before + data[start:end] + after).decode()


def _bare_starred(expression: ast.expr) -> bool:
    """`*a, b`: a statement, but no eval source unless in parentheses."""
    return isinstance(expression, ast.Tuple) and any(
        isinstance(item, ast.Starred) for item in expression.elts)


def _blanked(data: bytes) -> bytes:
    """`data` with every byte but a line ending's a space: its lines stay where they were."""
    return re.sub(rb"[^\r\n]", b" ", data)


def _raise_if_break(error: BaseException | None, stdout: Capture, stderr: Capture) -> None:
    """A break ending the call (a deadline, a cancel) carries what the code printed
    before it, which would otherwise be lost with the call's answer."""
    try:
        raise_if_break(error)
    except BREAKS as interruption:
        out, err = _printed(stdout, "stdout"), _printed(stderr, "stderr")
        if out or err:
            carry_partial(interruption, {"stdout": out, "stderr": err}, "what the code printed before it is")
        raise


def _live_counterpart(view, value):
    """For an image module, or a class or function at its top level, what the module as the
    view has it now binds there (`value` itself, unless a re-import left `value` behind);
    None for anything else."""
    # By type(value), and a class's names as type keeps them: a workspace object may claim
    # another __class__ (a Mock's spec), or its metaclass other names; raising here would
    # fail every later execute_code, the one that could drop it too.
    kind = type(value)
    if issubclass(kind, types.ModuleType):
        module_name, attribute, kind = own.namespace(value).get("__name__"), None, types.ModuleType
    elif issubclass(kind, type) and own.QUALNAME(value) == own.NAME(value):
        module_name, attribute, kind = own.module_of(value), own.NAME(value), type
    elif kind is types.FunctionType and value.__qualname__ == value.__name__:
        module_name, attribute = value.__module__, value.__name__
    else:
        return None
    fresh = _live_copy(view, value, module_name, attribute)
    if fresh is None and kind is type:
        # A class whose body rewrote `__module__` ("elsewhere"): where its class statement is.
        written = view.rewriting_modules(value)
        fresh = _live_copy(view, value, written[0], attribute) if len(written) == 1 else None
    return fresh if isinstance(fresh, kind) else None


def _live_copy(view, value, module_name, attribute):
    """The image module `module_name` as the view has it now (its `attribute`, if one is
    named; `value` the module it stands for, if not), or None."""
    if not isinstance(module_name, str) or not view.owns_module(module_name):
        return None
    live = sys.modules[module_name]
    if attribute is not None:
        # What it binds, never its __getattr__ (PEP 562): image code run for every name of the
        # workspace, each call, may raise anything (`_LAZY[name]`, a KeyError).
        return own.namespace(live).get(attribute)
    # Each one's own __spec__: what stands in the module's place (note_stand_in) may have
    # none, or None there (a bare ModuleType), and reading it raised at every call's end.
    loader = getattr(own.namespace(value).get("__spec__"), "loader", None)
    if loader is None or loader is not getattr(own.namespace(live).get("__spec__"), "loader", None):
        return None   # a module of that name the view never made
    return live


# Python 3.11's parser overflowing its stack raises a MemoryError that says nothing; one
# raised by a call that compiled source (compile_site) may be it, and the answer says so.
PARSER_OVERFLOW_NOTE = ("(a MemoryError with no message is also how Python 3.11's parser says code "
                        "given to eval, exec, compile or ast.parse is nested too deeply to parse)")


def _traceback(error: BaseException) -> str:
    """The traceback from the workspace code down, without this module's frames (when the
    workspace has no frame in it, repr of the final value raised: the frames below this
    module's, an image module's __repr__, say, or none but the exception for a list nested
    too deeply to show)."""
    # Asked first: formatting the traceback compiles too (3.11 places its carets by ast.parse).
    parser_may_have = not exception_text(error) and sys.version_info < (3, 12) and compile_site.raised_compiling(error)
    tb = error.__traceback__
    while tb is not None and not tb.tb_frame.f_code.co_filename.startswith(_FILENAME_PREFIX):
        tb = tb.tb_next
    if tb is None:   # what ran below this module's frames (an image module's __repr__), if any
        tb = error.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename == _traceback.__code__.co_filename:
            tb = tb.tb_next
    shown = traceback_text(error, tb).rstrip()
    if isinstance(error, MemoryError):
        note = data_limit_note()
        if note is not None:          # said first: with a limit in force, the likelier cause
            shown += "\n" + note
        if parser_may_have:
            shown += "\n" + PARSER_OVERFLOW_NOTE
    return shown


def _sendable(text: str, what: str) -> str:
    return sendable(text, what, OUTPUT_CAP, "execute_code")


def _printed(capture: Capture, what: str) -> str:
    """What the code printed to one stream, with a note counting what the Capture cut."""
    return sendable(capture.text(), what, capture.cap, "execute_code", capture.cut)


def _failed(error: BaseException, stdout: Capture, stderr: Capture) -> ToolError:
    """execute_code's error: what the code printed, then its traceback, each cut to OUTPUT_CAP,
    and the length the message had uncut, which structuredContent's repeat counts from."""
    parts = [(_printed(stdout, "stdout"), _written(stdout)), (_printed(stderr, "stderr"), _written(stderr))]
    shown = _traceback(error)
    parts.append((_sendable(shown, "the traceback"), len(shown)))
    message = _join(*(part for part, _ in parts))
    # A part cut stands for all it had, as its note counts it (a printed part's last newline too,
    # which _join strips from one whole); in the message, its start and note as _join leaves them.
    uncut = len(message) + sum(whole - len(part.rstrip("\n")) for part, whole in parts if whole > OUTPUT_CAP)
    return ToolError("other", message, uncut_length=uncut)


def _written(capture: Capture) -> int:
    """Characters written to `capture`: those it kept and those it only counted."""
    return len(capture.text()) + capture.cut


def _join(*parts: str) -> str:
    kept = [part.rstrip("\n") for part in parts if part]
    return "\n".join(kept)
