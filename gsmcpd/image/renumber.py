"""Keeping live code's line numbers true to its module's text as an edit moves them.

A mutation tool splices its change into the module's text and updates only the objects
it changed; the code of every def the edit moved (those below an added method) kept its
old line numbers, so a traceback quoted another line and inspect.getsource gave another
def's source. Such code is renumbered to where its def now is.
"""

from __future__ import annotations

import ast
import difflib
import gc
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import CodeType, FunctionType

from gsmcpd.image import own
from gsmcpd.image.splice import first_line, lines_of

Span = tuple[int, int, int]   # a def's first line, and its statement's first and last (see def_spans)
Defs = dict[str, list[Span]]   # qualname -> spans


def renumber_moved_code(filename: str, old_code: Mapping[int, CodeType], old_text: str, old_defs: Defs,
                        new_text: str, new_defs: Defs) -> dict[int, CodeType]:
    """Point every function whose code is `old_code`'s (compiled from `old_text`; by id)
    at the lines its def stands on in `new_text` (`old_defs` and `new_defs` are the
    texts' def_spans). Any other code is left: the tool compiled it from `new_text`,
    numbered already. Told apart by identity, not by a def of its name standing at its
    line: a property's setter moved onto its getter's old line stood there too. Returns
    the code the functions compiled from `filename` now have, the `old_code` of the next
    edit. A class's first line (Python 3.13's `__firstlineno__`) is moved as its body's
    code would be: one the tool made from `new_text` is there already, and its def changed."""
    objects = gc.get_objects()   # one pass for both
    functions, classes = functions_compiled_from(filename, objects), classes_compiled_from(filename, objects)
    stale = [function for function in functions if id(function.__code__) in old_code]
    moves = def_moves(old_text, old_defs, new_text, new_defs,
                      {function.__code__.co_qualname for function in stale}
                      | {own.QUALNAME(cls) for cls in classes})
    for cls in classes:
        line = own.DICT(cls)["__firstlineno__"]
        to = moves.get((own.QUALNAME(cls), line), line)
        if to != line:
            type.__setattr__(cls, "__firstlineno__", to)
    moved: dict[int, CodeType] = {}
    for function in stale:
        code = function.__code__
        to = moves.get((code.co_qualname, code.co_firstlineno), code.co_firstlineno)
        if to != code.co_firstlineno:
            if id(code) not in moved:
                moved[id(code)] = shifted(code, to - code.co_firstlineno)
            function.__code__ = moved[id(code)]
    return code_within(function.__code__ for function in functions)


def functions_compiled_from(filename: str, objects: list | None = None) -> list[FunctionType]:
    """Every function in the process whose code was compiled from `filename`, wherever it
    is held: the module's namespace and classes, a registry dict, a default, a partial,
    a bound method, the workspace; it runs that code, and its traceback quotes its lines.
    `type() is`: an object's own `__class__` runs no code here. `objects`: gc.get_objects()'s."""
    return [value for value in (gc.get_objects() if objects is None else objects)
            if type(value) is FunctionType and value.__code__.co_filename == filename]


def classes_compiled_from(filename: str, objects: list) -> list[type]:
    """Every class in the process made from `filename` (its module's file) that knows its
    first line: from Python 3.13, `__firstlineno__`, which inspect.getsource reads (3.11 and
    3.12 search the text for the class's name instead). `objects`: gc.get_objects()'s."""
    if sys.version_info < (3, 13):
        return []
    found = []
    for value in objects:
        if issubclass(type(value), type):   # not isinstance: it asks __class__, which may be anything's
            module = own.module_of(value)
            if (type(own.DICT(value).get("__firstlineno__")) is int and module is not None
                    and _file_of(module) == filename):
                found.append(value)
    return found


def _file_of(module: str) -> object:
    try:
        return getattr(sys.modules.get(module), "__file__", None)
    except Exception:   # whatever a user's object in sys.modules does: no file of ours
        return None


def code_of_live_functions(filename: str) -> dict[int, CodeType]:
    """The code the functions compiled from `filename` now have, by id."""
    return code_within(function.__code__ for function in functions_compiled_from(filename))


def def_moves(old_text: str, old_defs: Defs, new_text: str, new_defs: Defs,
              names: set[str]) -> dict[tuple[str, int], int]:
    """(qualname, first line) of a def of `names` in the old text → its first line in the
    new one. The defs of a qualname are paired in order by the text of their statement
    (a def's own, decorators to last line; a lambda's, with its place in it), so a def the
    edit changed pairs with none, a line like one the edit removed (`@deco` over a deleted
    method) is not taken for a moved def's, nor one `lambda: None` for another."""
    old_lines, new_lines = lines_of(old_text), lines_of(new_text)
    moves: dict[tuple[str, int], int] = {}
    for name in names:
        old_spans, new_spans = old_defs.get(name, []), new_defs.get(name, [])
        old_texts = [_text(old_lines, span) for span in old_spans]
        new_texts = [_text(new_lines, span) for span in new_spans]
        if old_texts == new_texts:   # most names: one def, unchanged
            pairs = [(a, a) for a in range(len(old_texts))]
        else:
            matcher = difflib.SequenceMatcher(None, old_texts, new_texts, autojunk=False)
            pairs = [(a + i, b + i) for a, b, size in matcher.get_matching_blocks() for i in range(size)]
        for a, b in pairs:
            moves.setdefault((name, old_spans[a][0]), new_spans[b][0])
    return moves


def _text(lines: list[str], span: Span) -> tuple[int, str]:
    first, statement_first, statement_last = span
    return first - statement_first, "".join(lines[statement_first - 1:statement_last])


# The scope a comprehension's code has: lambdas in it are named `f.<locals>.<listcomp>.<lambda>`.
_COMPREHENSIONS = {ast.ListComp: "<listcomp>", ast.SetComp: "<setcomp>",
                   ast.DictComp: "<dictcomp>", ast.GeneratorExp: "<genexpr>"}
# Python 3.12 compiles these into the enclosing scope's code (PEP 709): a lambda in one
# is named `f.<locals>.<lambda>`, as one beside it.
_INLINED = (ast.ListComp, ast.SetComp, ast.DictComp) if sys.version_info >= (3, 12) else ()


def def_spans(tree: ast.Module) -> Defs:
    """Qualname → (first line, and the first and last line of the statement it is written
    in) of the functions and classes of that qualname in source order; a def is
    its own statement, and starts at its first decorator, as co_firstlineno counts it.
    Named as Python names their code (a lambda in a method's decorator is the class's,
    `K.<lambda>`; a def its scope declares `global` is named bare; a `type X = ...` value's
    is X's, on Python 3.12+)."""
    return spans_of(tree).defs


StatementKey = tuple[int, int, int, int]   # a top-level statement's first line and column, last line and column


@dataclass(frozen=True)
class DefSpans:
    defs: Defs
    by_statement: dict[StatementKey, list[tuple[str, Span]]]   # what each top-level statement gave


def spans_of(tree: ast.Module, text: str = "", earlier: tuple[str, DefSpans] | None = None) -> DefSpans:
    """def_spans of `tree` (parsed from `text`), by top-level statement. Given the spans of
    an `earlier` text of the module, a statement standing in the lines the two texts share
    at their start or end, where a statement of the earlier text stood with the same
    bounds, gives what that one gave, moved: an edit changes a few statements, and walking
    all of a 20,000-line module's tree took half a second."""
    same = _unchanged_statements(text, earlier[0]) if earlier is not None else None
    by_statement: dict[StatementKey, list[tuple[str, Span]]] = {}
    for node in tree.body:
        key = (first_line(node), node.col_offset, node.end_lineno, node.end_col_offset)
        reused = None
        if same is not None:
            delta = same(key)
            if delta is not None:
                old_key = (key[0] - delta, key[1], key[2] - delta, key[3])
                reused = earlier[1].by_statement.get(old_key)
                if reused is not None and delta:
                    reused = [(name, (a + delta, b + delta, c + delta)) for name, (a, b, c) in reused]
        by_statement[key] = reused if reused is not None else _statement_spans(node)
    found: Defs = {}
    for spans in by_statement.values():
        for name, span in spans:
            found.setdefault(name, []).append(span)
    for spans in found.values():
        spans.sort()
    return DefSpans(found, by_statement)


def _unchanged_statements(text: str, old_text: str):
    """A function of a statement's key in `text`: how many lines further down it is than
    the same lines of `old_text` (0 in the lines both texts start with, the change in
    length in those they end with), or None when some of its lines are the edit's."""
    lines, old_lines = lines_of(text), lines_of(old_text)
    shortest = min(len(lines), len(old_lines))
    start = 0
    while start < shortest and lines[start] == old_lines[start]:
        start += 1
    end = 0   # lines shared at the end, not counting those shared at the start
    while end < shortest - start and lines[-1 - end] == old_lines[-1 - end]:
        end += 1
    delta, first_of_end = len(lines) - len(old_lines), len(lines) - end + 1

    def moved_by(key: StatementKey) -> int | None:
        if key[2] <= start:
            return 0
        if key[0] >= first_of_end:
            return delta
        return None
    return moved_by


def _statement_spans(statement: ast.stmt) -> list[tuple[str, Span]]:
    """The (qualname, span) of every def and class in one top-level statement. A loop,
    not recursion: a module nested as deeply as Python compiles (thousands of levels) is
    walked too."""
    found: list[tuple[str, Span]] = []
    # (node, the qualname prefix of its scope, the names that scope declares global, its statement)
    stack: list[tuple[ast.AST, str, frozenset[str], tuple[int, int]]] = [(statement, "", frozenset(), (1, 1))]
    while stack:
        node, prefix, declared, statement = stack.pop()
        if isinstance(node, ast.stmt):
            statement = (first_line(node), node.end_lineno)
        inner, inner_declared = prefix, declared
        if isinstance(node, _SCOPES):
            name = getattr(node, "name", "<lambda>")
            name = name if name in declared else prefix + name
            inner_declared = _declared_global(node)
        if isinstance(node, ast.ClassDef):
            found.append((name, (first_line(node), *statement)))   # its body's code
            stack.extend((outer, prefix, declared, statement)
                         for outer in node.decorator_list + node.bases + node.keywords)
            children, inner = node.body, name + "."
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            found.append((name, (first_line(node), *statement)))
            # Its decorators, defaults and annotations run in the enclosing scope.
            stack.extend((outer, prefix, declared, statement) for outer in getattr(node, "decorator_list", [])
                         + [node.args] + ([node.returns] if getattr(node, "returns", None) else []))
            children = node.body if isinstance(node.body, list) else [node.body]
            inner = name + ".<locals>."
        elif isinstance(node, _TYPE_ALIASES):   # its value is evaluated by a function of its name
            alias = node.name.id
            name = alias if alias in declared else prefix + alias
            found.append((name, (first_line(node), *statement)))
            children, inner, inner_declared = [node.value], name + ".<locals>.", frozenset()
        elif type(node) in _COMPREHENSIONS:
            first = node.generators[0]
            stack.append((first.iter, prefix, declared, statement))   # evaluated before its scope is entered
            children = [part for part in ast.iter_child_nodes(node) if part is not first]
            children += [first.target, *first.ifs]
            inner = prefix if isinstance(node, _INLINED) else prefix + _COMPREHENSIONS[type(node)] + "."
        else:
            children = list(ast.iter_child_nodes(node))
        stack.extend((child, inner, inner_declared, statement) for child in children)
    return found


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
# Python 3.12's `type X = ...` (PEP 695): the value is X's code, evaluated when first asked for.
_TYPE_ALIASES = (ast.TypeAlias,) if sys.version_info >= (3, 12) else ()


def _declared_global(scope: ast.AST) -> frozenset[str]:
    """The names `scope`'s own body (not a scope nested in it) declares `global`: Python
    names a def or class bound to one by its bare name, as a top-level one."""
    names: set[str] = set()
    stack = list(scope.body) if isinstance(scope.body, list) else []
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Global):
            names.update(node.names)
        elif not isinstance(node, _SCOPES):   # a block's statements: `if`, `try`'s handlers, `case`s
            stack.extend(child for child in ast.iter_child_nodes(node)
                         if isinstance(child, (ast.stmt, ast.excepthandler, ast.match_case)))
    return frozenset(names)


def code_within(codes: Iterable[CodeType]) -> dict[int, CodeType]:
    """`codes` and the code nested in them (inner defs, lambdas, comprehensions), by id."""
    found: dict[int, CodeType] = {}
    stack = list(codes)
    while stack:
        code = stack.pop()
        if id(code) not in found:
            found[id(code)] = code
            stack.extend(const for const in code.co_consts if isinstance(const, CodeType))
    return found


def shifted(code: CodeType, delta: int) -> CodeType:
    """`code` and the code nested in it (inner defs, lambdas, comprehensions) `delta`
    lines further down. A loop, not recursion: lambdas nested as deeply as Python
    compiles (about a thousand) met the recursion limit, and the edit answered an error."""
    done: dict[int, CodeType] = {}
    stack: list[tuple[CodeType, bool]] = [(code, False)]
    while stack:
        item, inner_done = stack.pop()
        inner = [const for const in item.co_consts if isinstance(const, CodeType)]
        if inner and not inner_done:
            stack.append((item, True))
            stack.extend((const, False) for const in inner if id(const) not in done)
            continue
        consts = tuple(done[id(const)] if isinstance(const, CodeType) else const
                       for const in item.co_consts)
        done[id(item)] = item.replace(co_firstlineno=item.co_firstlineno + delta, co_consts=consts)
    return done[id(code)]
