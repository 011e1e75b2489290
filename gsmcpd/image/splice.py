"""Edits to a module's source text at AST positions.

Every edit replaces, inserts or removes whole lines found from the AST
(decorators and docstrings included), so comments and formatting anywhere else
in the module stay byte-identical. Functions here are pure: text in, text out.
"""

from __future__ import annotations

import ast
import builtins
import difflib
import io
import os
import re
import tokenize

from gsmcpd.image import parsing
from gsmcpd.raised import raised

FunctionNode = (ast.FunctionDef, ast.AsyncFunctionDef)
# PEP 263's pattern for the line that declares a source file's encoding.
CODING_DECLARATION = re.compile(r"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")


class SpliceError(Exception):
    """The edit cannot be made at line granularity (e.g. a one-line class)."""


class IndentationMismatch(SpliceError):
    """The text, indented to fit, would still leave the module unreadable to Python."""


def lines_of(source: str) -> list[str]:
    """Split like the tokenizer does (\\n, \\r\\n, \\r), keeping the endings."""
    return io.StringIO(source, newline="").readlines()


def newline_of(source: str) -> str:
    lines = lines_of(source)
    for ending in ("\r\n", "\r"):
        if lines and lines[0].endswith(ending):
            return ending
    return "\n"


def first_line(node: ast.AST) -> int:
    decorators = getattr(node, "decorator_list", None) or []
    return min([node.lineno] + [d.lineno for d in decorators])


def statement_line(source: str, statement: ast.stmt) -> str:
    """The line a statement starts on (its first decorator's), stripped, as answers quote it."""
    return lines_of(source)[first_line(statement) - 1].strip()


def statement_at(source: str, tree: ast.Module, line: int) -> tuple[int, str]:
    """The statement a line of `source` belongs to, as a refusal quotes it: its first line
    and its text, a multi-line one whole (a traceback's line is the part that failed,
    `b=_inst.randint,`). For a block's statement the header (`if` test, decorator) holding
    the line; the line alone where that cannot be told (an `else:`, a body on the header's line)."""
    lines = lines_of(source)
    body, found = tree.body, None
    while True:
        holding = [node for node in body if first_line(node) <= line <= node.end_lineno]
        if not holding:
            break
        found = holding[0]
        body = child_statements(found)
    if found is None:
        return line, lines[line - 1].strip()
    spans = [(node.lineno, node.end_lineno) for node in getattr(found, "decorator_list", [])]
    children = [first_line(child) for child in child_statements(found)]
    if children:   # a block: its header, up to the first statement it holds (not the comments above it)
        end = min(children) - 1
        while end > found.lineno and lines[end - 1].strip()[:1] in ("", "#"):
            end -= 1
        spans.append((found.lineno, end))
    else:
        spans.append((found.lineno, found.end_lineno))
    for start, end in spans:
        if start <= line <= end:
            chunk = lines[start - 1:end]
            shown = lines_of(strip_indent(chunk, indent_of(chunk[0])))
            return start, "\n".join(line.rstrip("\r\n") for line in shown).rstrip()   # a CRLF file's too
    return line, lines[line - 1].strip()


def line_before_edit(old_source: str, new_source: str, line: int) -> int:
    """The number `new_source`'s `line`, one an edit of `old_source` left as it was, had
    in `old_source`: the line the user's file has it on, quoted by a refusal made from
    the edited text."""
    old, new = lines_of(old_source), lines_of(new_source)
    # The lines above and below the edit are matched as they stand: the matcher, given the
    # whole texts, took seconds a refusal on a module of 16,000 lines (quadratic in them).
    same = min(len(old), len(new))
    above = next((i for i in range(same) if old[i] != new[i]), same)
    below = next((i for i in range(same - above) if old[-1 - i] != new[-1 - i]), same - above)
    if line <= above:
        return line
    if line > len(new) - below:
        return line + len(old) - len(new)
    matcher = difflib.SequenceMatcher(None, old[above:len(old) - below], new[above:len(new) - below],
                                      autojunk=False)
    for old_start, new_start, size in matcher.get_matching_blocks():
        if new_start < line - above <= new_start + size:
            return above + old_start + line - above - new_start
    return line


def last_line(lines: list[str], node: ast.AST) -> int:
    """The node's last line, counting the comment lines right below it indented deeper
    than its first (blank lines between them too): a def's body may end in comments
    (a commented-out `else:`), its own though the AST ends at its last statement."""
    indent = len(indent_of(lines[node.lineno - 1]))
    last = node.end_lineno
    for number in range(node.end_lineno + 1, len(lines) + 1):
        line = lines[number - 1]
        if not line.strip():
            continue
        if not line.lstrip().startswith("#") or len(indent_of(line)) <= indent:
            break
        last = number
    return last


def segment(source: str, node: ast.AST, lines: list[str] | None = None) -> str:
    """The node's whole lines (decorators and trailing comments included), its own
    indentation removed. `lines`, the source's lines_of, spares splitting it again for
    each of many nodes."""
    lines = lines_of(source) if lines is None else lines
    chunk = lines[first_line(node) - 1:last_line(lines, node)]
    return strip_indent(chunk, indent_of(lines[node.lineno - 1]))


def segments(source: str, nodes: list) -> str:
    """The segments of several defs of one name (a property's getter and setter,
    overloads), with the blank and comment lines between two of them as written when
    nothing else is (`# setter` above a setter: the defs' own, as _replace_defs takes
    them), else set apart by a blank line only where the source sets them apart."""
    lines = lines_of(source)
    text = ""
    for previous, node in zip([None] + nodes, nodes):
        gap = None if previous is None else _gap_between(lines, previous, node)
        if gap is not None:
            text += strip_indent(gap, indent_of(lines[node.lineno - 1]))
        elif previous is not None and any(
                not line.strip() for line in lines[last_line(lines, previous):first_line(node) - 1]):
            text += newline_of(source)     # the source's own: a CRLF module's defs stay CRLF
        text += segment(source, node, lines)
    return text


def _gap_between(lines: list[str], previous: ast.stmt, node: ast.stmt) -> list[str] | None:
    """The lines between two defs of one name when they are only blank lines and comments
    at least as deep as `node`; None when anything else is between them."""
    indent = indent_of(lines[node.lineno - 1])
    gap = lines[last_line(lines, previous):first_line(node) - 1]
    if all(not line.strip() or line.lstrip().startswith("#") and indent_of(line).startswith(indent)
           for line in gap):
        return gap
    return None


# Python 3.12+ tokenizes f-strings in parts (before it, None: no token is of either type).
# Looked up once: per token, the lookups were a quarter of a source search's time.
_FSTRING_START = getattr(tokenize, "FSTRING_START", None)
_FSTRING_END = getattr(tokenize, "FSTRING_END", None)


def string_lines(text: str) -> set[int]:
    """Numbers (1-based) of the lines that begin inside a string literal, the
    second to last lines of a multi-line string or f-string: their leading
    whitespace is the string's, so re-indenting must leave them alone.
    Empty if `text` does not tokenize."""
    inside: set[int] = set()
    fstring_starts: list[int] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(text, newline="").readline):
            if token.type == _FSTRING_START:
                fstring_starts.append(token.start[0])
            elif token.type == _FSTRING_END:
                inside.update(range(fstring_starts.pop() + 1, token.end[0] + 1))
            elif token.type == tokenize.STRING:
                inside.update(range(token.start[0] + 1, token.end[0] + 1))
    except (tokenize.TokenError, SyntaxError):
        return set()
    return inside


def dedent_code(text: str) -> str:
    """textwrap.dedent, except that lines inside a string literal neither
    count towards the common margin nor lose any of their whitespace."""
    lines, inside = lines_of(text), string_lines(text)
    code = [n for n, line in enumerate(lines, 1) if n not in inside and line.strip()]
    margin = os.path.commonprefix([indent_of(lines[n - 1]) for n in code])
    out = []
    for n, line in enumerate(lines, 1):
        if n in inside:
            out.append(line)
        elif line.strip():
            out.append(line[len(margin):])
        else:
            out.append(line.lstrip(" \t"))
    return "".join(out)


def fit_indentation(text: str, unit: str) -> str:
    """`text` (code at margin 0) with each block level indented by `unit`, when its own
    indentation uses a character `unit` does not (tabs into a class indented with spaces,
    or the reverse): prefixed as it was, it would mix both in the module. What a
    continuation or comment line has beyond its block's level stays (alignment), and
    lines inside a string literal are left alone (their whitespace is the string's)."""
    lines, inside = lines_of(text), string_lines(text)
    used = {char for n, line in enumerate(lines, 1) if n not in inside and line.strip()
            for char in _leading_whitespace(line)}
    if not unit or used <= set(unit):
        return text
    levels = _block_levels(text)
    out = []
    for n, line in enumerate(lines, 1):
        if n in inside or n not in levels:
            out.append(line)
            continue
        line = _indentation(line) + line.lstrip(" \t\x0c")
        depth, level = max(((depth, level) for depth, level in levels[n] if line.startswith(level)),
                           key=lambda pair: len(pair[1]))
        out.append(unit * depth + line[len(level):])
    return "".join(out)


def _block_levels(text: str) -> dict[int, list[tuple[int, str]]]:
    """For each line (1-based) holding a token: the (depth, indentation) of the blocks
    its line may be indented to, as the tokenizer's INDENT tokens spell them. A
    comment-only line may be at the level of the block above it or of the statement
    below it (the tokenizer dedents only at that statement), so it gets both's."""
    levels: dict[int, list[tuple[int, str]]] = {}
    pending: dict[int, list[str]] = {}     # comment-only lines, until the next statement
    stack = [""]

    def settle(now: list[str]) -> None:
        for number, then in pending.items():
            levels[number] = list(dict.fromkeys(list(enumerate(then)) + list(enumerate(now))))
        pending.clear()

    for token in tokenize.generate_tokens(io.StringIO(text, newline="").readline):
        number = token.start[0]
        if token.type == tokenize.INDENT:
            stack.append(_indentation(token.string))
        elif token.type == tokenize.DEDENT:
            stack.pop()
        elif token.type == tokenize.ENDMARKER or number in levels or number in pending:
            continue
        elif token.type == tokenize.COMMENT and not token.line[:token.start[1]].strip():
            pending[number] = list(stack)
        elif token.type != tokenize.NL or token.line.strip():
            settle(stack)
            levels[number] = list(enumerate(stack))
    settle(stack)
    return levels


def _leading_whitespace(line: str) -> str:
    """A line's leading spaces, tabs and form feeds: fit_indentation re-makes the level of
    a line whose indentation holds a form feed, as a prefix written before it is void (a
    form feed resets the tokenizer's column). Not indent_of, which stops at one."""
    return line[:len(line) - len(line.lstrip(" \t\x0c"))]


def _indentation(line: str) -> str:
    """What Python reads as a line's indentation: its leading whitespace after the last
    form feed (a form feed resets the tokenizer's column)."""
    return _leading_whitespace(line).rpartition("\x0c")[2]


def indent_code(text: str, prefix: str) -> str:
    """Prefix every non-blank line that is not inside a string literal."""
    inside = string_lines(text)
    return "".join(prefix + line if line.strip() and n not in inside else line
                   for n, line in enumerate(lines_of(text), 1))


def top_level_classes(tree: ast.Module) -> list[ast.ClassDef]:
    return [node for node in tree.body if isinstance(node, ast.ClassDef)]


def top_level_class(tree: ast.Module, name: str) -> ast.ClassDef | None:
    found = [node for node in top_level_classes(tree) if node.name == name]
    return found[-1] if found else None     # the last binding is the live one


def defs_in_blocks(body: list[ast.stmt]) -> list[tuple[ast.stmt | None, ast.stmt]]:
    """(block, statement) for each def and class statement that running `body` runs: block
    None for one of `body` itself, else the statement of `body` whose `if`/`try`/`with`/loop
    /`match` block it is written in (`try: ... except ImportError: class X: ...`); in
    source order. A def's or class's own body is its own, not searched."""
    found = []

    def walk(block, statements):
        for statement in statements:
            if isinstance(statement, FunctionNode + (ast.ClassDef,)):
                found.append((block, statement))
            else:
                walk(block or statement, child_statements(statement))

    walk(None, body)
    return sorted(found, key=lambda pair: pair[1].lineno)


def module_level_classes(tree: ast.Module) -> list[ast.ClassDef]:
    """The class statements a module runs as it is imported: at its top level, and in its
    top-level `if`/`try`/`with`/loop blocks (those bind module globals too); in source order."""
    return [node for _, node in defs_in_blocks(tree.body) if isinstance(node, ast.ClassDef)]


def class_statements(tree: ast.Module, name: str) -> list[tuple[ast.stmt | None, ast.ClassDef]]:
    """(block, class statement) for each module-level class statement of `name`
    (defs_in_blocks: block None at the top level); in source order."""
    return [(block, node) for block, node in defs_in_blocks(tree.body)
            if isinstance(node, ast.ClassDef) and node.name == name]


def nested_class_statements(tree: ast.Module, qualname: str) -> list[ast.ClassDef]:
    """The class statements that may make the class `qualname` as the module runs
    (`Outer.Inner`, any depth): the module-level ones of its first name, then in their
    bodies (class-level blocks too) those of the next; in source order. A def's body is
    not searched: a class made there is made only when it is called."""
    path = qualname.split(".")
    nodes = [node for node in module_level_classes(tree) if node.name == path[0]]
    for name in path[1:]:
        nodes = [node for outer in nodes for _, node in defs_in_blocks(outer.body)
                 if isinstance(node, ast.ClassDef) and node.name == name]
    return nodes


def module_strings_set_below(tree: ast.Module) -> dict[str, set[str]]:
    """The strings the module's top level assigns to a class's `__module__` below its
    top-level class statement (`Hook.__module__ = "pkg"`, as anyio names its public
    package), by class name."""
    found: dict[str, set[str]] = {}
    lines = {node.name: node.lineno for node in top_level_classes(tree)}   # the last one binds
    for statement in tree.body:
        if not (isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Constant)
                and isinstance(statement.value.value, str)):
            continue
        for target in statement.targets:
            if (isinstance(target, ast.Attribute) and target.attr == "__module__"
                    and isinstance(target.value, ast.Name)
                    and lines.get(target.value.id, statement.lineno) < statement.lineno):
                found.setdefault(target.value.id, set()).add(statement.value.value)
    return found


def class_statement(tree: ast.Module, name: str) -> ast.ClassDef | None:
    """The class statement the module's `name` is bound to, as far as its source says: the
    last top-level one (the last binding is the live one) when no block writes one too, else
    the only one. None when there is none, or when a block writes one and there are others
    (`if ...: class A` / `else: class A`): which binds depends on how the module runs."""
    found = class_statements(tree, name)
    if all(block is None for block, _ in found):
        return top_level_class(tree, name)
    return found[0][1] if len(found) == 1 else None


def methods_of(classdef: ast.ClassDef) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """The defs of the class body that bind class attributes: not one of a name the body
    declares `global` (global_names), which binds the module's name."""
    declared = global_names(classdef)
    return [node for node in classdef.body
            if isinstance(node, FunctionNode) and mangled(classdef.name, node.name) not in declared]


def method_nodes(classdef: ast.ClassDef, name: str) -> list:
    """The defs of `name`, spelled as written (`__secret`) or as the class binds it
    (`_Kitchen__secret`, what list_methods shows)."""
    return [node for node in methods_of(classdef) if spelled(name, node.name, classdef.name)]


def guarded_methods(classdef: ast.ClassDef) -> list[tuple[ast.stmt, object]]:
    """(statement, def) for each def written inside a class-level `if`, `try`, `with`
    or loop (`if TYPE_CHECKING:`, `try: ... except ImportError:`): the class gets the
    def only when that branch runs, so it is no plain method of the class body."""
    declared = global_names(classdef)
    return [(block, node) for block, node in defs_in_blocks(classdef.body)
            if block is not None and isinstance(node, FunctionNode)
            and mangled(classdef.name, node.name) not in declared]


def child_statements(node: ast.AST) -> list[ast.stmt]:
    """The statements a statement holds in its blocks (its `except` handlers' and `case`s' too)."""
    children = []
    for field in ("body", "orelse", "finalbody"):
        value = getattr(node, field, None)
        if isinstance(value, list):
            children += [item for item in value if isinstance(item, ast.stmt)]
    for part in getattr(node, "handlers", []) + getattr(node, "cases", []):
        children += part.body
    return children


def guarded_method_nodes(classdef: ast.ClassDef, name: str) -> list[tuple[ast.stmt, object]]:
    """guarded_methods of `name` (either spelling, as method_nodes)."""
    return [(statement, node) for statement, node in guarded_methods(classdef)
            if spelled(name, node.name, classdef.name)]


def statement_kind(statement: ast.stmt) -> str:
    """`try`, `if`, `with`... as the statement is written."""
    return {"AsyncWith": "async with", "AsyncFor": "async for", "TryStar": "try"}.get(
        type(statement).__name__, type(statement).__name__.lower())


def branch_note(statement: ast.stmt, level: str) -> str:
    """The browsing tools' note on a def or class written inside `statement`, a block at
    `level` ("class" or "module"): it is there only when that branch runs."""
    return (f"written inside the {level}-level {statement_kind(statement)} statement at line "
            f"{statement.lineno}: the {level} has it when that branch runs")


def spelled(selector: str, name: str, class_name: str | None) -> bool:
    """Whether `selector` names `name`, written in class `class_name` (None: outside any
    class): as written, or as the class binds it (a private `__name` in C is `_C__name`),
    either of them written either way (`def _C__name` binds what `__name` names)."""
    return selector == name or (class_name is not None
                                and mangled(class_name, selector) == mangled(class_name, name))


def mangled(class_name: str, name: str) -> str:
    """The name a class body binds for `name`: a private `__name` is mangled
    to `_Class__name`, as Python does; any other name is itself."""
    owner = class_name.lstrip("_")
    if name.startswith("__") and not name.endswith("__") and owner:
        return f"_{owner}{name}"
    return name


def class_level_statements(classdef: ast.ClassDef) -> list[ast.stmt]:
    """The statements running the class body may run: its own, and those in its class-level
    `if`/`try`/`with`/loop/`match` blocks (not a def's or nested class's body); in source order."""
    return statements_within(classdef.body)


def statements_within(statements: list[ast.stmt]) -> list[ast.stmt]:
    """`statements` and those in their blocks, at any depth (not a def's or nested class's
    body, which do not run with them); in source order."""
    found, pending = [], list(statements)
    while pending:
        statement = pending.pop()
        found.append(statement)
        if not isinstance(statement, FunctionNode + (ast.ClassDef,)):
            pending += child_statements(statement)
    return sorted(found, key=lambda statement: (statement.lineno, statement.col_offset))


def attribute_nodes(classdef: ast.ClassDef, name: str, blocks: bool = False) -> list[ast.stmt]:
    """The class-body statements that bind `name` other than by def: whatever binds it in
    may_bind_names but a def's own name (assignments, not an annotation alone; nested
    classes; loop and `with` targets, imports, `:=`, `match` captures); with `blocks`, in
    its class-level blocks too (class_level_statements). None for a name the body declares
    `global` (global_declarations): there it binds no class attribute."""
    if global_declarations(classdef, name):
        return []
    return [node for node in (class_level_statements(classdef) if blocks else classdef.body)
            if name in may_bind_names(node) - ({node.name} if isinstance(node, FunctionNode) else set())]


def global_declarations(classdef: ast.ClassDef, name: str) -> list[ast.Global]:
    """The class body's `global` statements of `name` (in class-level blocks too): one holds
    for the whole body, so each binding of `name` there, a def's too, binds the module's
    `name`, not the class's. A private name is mangled there too, as Python does: `global
    __x` in class C declares the module's `_C__x`, which `def __x` then binds (spelled).
    (`nonlocal` in a class the module's code makes, at its top level or nested in classes,
    is a SyntaxError: no function encloses it.)"""
    return [node for node in class_level_statements(classdef) if isinstance(node, ast.Global)
            and any(spelled(name, declared, classdef.name) for declared in node.names)]


def global_names(classdef: ast.ClassDef) -> set[str]:
    """The names the class body declares `global` (global_declarations), as the class
    mangles them."""
    return {mangled(classdef.name, name) for node in class_level_statements(classdef)
            if isinstance(node, ast.Global) for name in node.names}


def may_bind_names(statement: ast.stmt) -> set[str]:
    """The names a class-level statement may bind as it runs: those it surely binds
    (bound_names: a def's or class's own name, an assignment's targets, not an annotation's
    alone, an import, a `with`'s `as` target), a loop's target, a `:=` or a `match`
    pattern's capture (expression_bound_names). Not those of the statements in its
    blocks: each is a class-level statement of its own (class_level_statements). (An
    `except ... as` name is unbound again as its handler ends.)"""
    names = bound_names(statement) | expression_bound_names(statement)
    if isinstance(statement, (ast.For, ast.AsyncFor)):
        names |= target_names(statement.target)
    return names


def expression_bound_names(statement: ast.stmt) -> set[str]:
    """The names a statement's own expressions bind where it runs: by `:=` (`if (n := 3):`,
    a def's default `=(n := 0)`, not in a lambda's body, its own scope) and, for a `match`,
    by its patterns' captures (`case {"mode": mode}`, `*rest`, `**rest`, `as whole`), which
    a case that fails may bind too. Not those of the statements in its blocks: each is a
    statement of its own (class_level_statements)."""
    names = set()
    for node in evaluated_now(statement, class_bodies=False, blocks=False):
        if isinstance(node, ast.NamedExpr):
            names |= target_names(node.target)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name is not None:
            names.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest is not None:
            names.add(node.rest)
    return names


def annotation_nodes(classdef: ast.ClassDef, name: str) -> list[ast.AnnAssign]:
    """The class-body annotations of `name` that bind nothing (`x: int`): a field of a
    dataclass, NamedTuple or TypedDict, which a def of that name would give a default."""
    return [node for node in classdef.body if isinstance(node, ast.AnnAssign) and node.value is None
            and isinstance(node.target, ast.Name) and node.target.id == name]


def docstring_node(classdef: ast.ClassDef) -> ast.Expr | None:
    first = classdef.body[0]
    if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)):
        return first
    return None


# What the class statement makes of these defs whatever their decorators (type.__new__).
_IMPLICIT_KINDS = {"__new__": "static", "__init_subclass__": "class", "__class_getitem__": "class"}


def method_kind(node) -> str:
    """'instance', 'class', 'static' or 'property', from the decorators (or, for
    `__new__`, `__init_subclass__` and `__class_getitem__`, as Python makes them)."""
    for decorator in node.decorator_list:
        name = _decorator_name(decorator)
        if name == "classmethod":
            return "class"
        if name == "staticmethod":
            return "static"
        if name in ("property", "cached_property", "setter", "getter", "deleter"):
            return "property"
    return _IMPLICIT_KINDS.get(node.name, "instance")


_KIND_DECORATORS = {"classmethod", "staticmethod", "property", "cached_property", "setter",
                    "getter", "deleter"}


def only_kind_decorators(node) -> bool:
    """Whether the def's decorators are only those that make its kind (`@classmethod`,
    a property's): made again, it runs none of the image's code."""
    return all(_decorator_name(decorator) in _KIND_DECORATORS for decorator in node.decorator_list)


def dotted_names(node: ast.expr) -> list[str] | None:
    """`["a", "b", "c"]` for `a.b.c` (Attributes down to a Name); None for any other
    (`f().b`, `x[0].b`): no dotted global name is spelled so."""
    names = []
    while isinstance(node, ast.Attribute):
        names.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    names.append(node.id)
    return names[::-1]


def _decorator_name(decorator: ast.expr) -> str | None:
    """`name` for `@name` and `@module.name`."""
    return decorator.id if isinstance(decorator, ast.Name) else (
        decorator.attr if isinstance(decorator, ast.Attribute) else None)


# -- edits ---------------------------------------------------------------

def put_class(source: str, name: str, class_text: str) -> str:
    """Replace the class statement `name` (class_statement: one in a module-level block
    keeps its place and indentation there) with `class_text`, or add it (_add_definition)."""
    tree = parsing.parse(source)
    node = class_statement(tree, name)
    if node is None and class_statements(tree, name):
        raise SpliceError(unsure_statement(name, class_statements(tree, name)))
    nl = newline_of(source)
    text = dedent_code(class_text).strip("\r\n") + "\n"
    text = with_newlines(fit_indentation(text, class_indent_unit(source, name)), nl)
    if node is None:
        return _importable(_add_definition(source, text), f"class {name}")
    lines = lines_of(source)
    start, end = _replaced_from(lines, node, text), _replaced_to(lines, node, text)
    text = indent_code(text, indent_of(lines[node.lineno - 1]))
    text = "".join(as_written(lines[start - 1:end], lines_of(text)))
    return _importable(_replace(source, start, end, text), f"class {name}")


def unsure_statement(name: str, found: list[tuple[ast.stmt | None, ast.ClassDef]]) -> str:
    """Why an edit of class `name`, written as the class_statements `found`, is refused:
    which statement binds the name depends on how the module runs."""
    return (f"class {name} is written {len(found)} times in its module ({where_written(found)}): "
            "which one binds the name depends on how the module runs, so no tool can tell which "
            "to change")


def where_written(found: list[tuple[ast.stmt | None, ast.ClassDef]]) -> str:
    """Where class_statements `found` are, as an answer says it."""
    return "; ".join(f"line {node.lineno}" + (
        f", in the {statement_kind(block)} statement at line {block.lineno}" if block else "")
        for block, node in found)


def class_indent_unit(source: str, name: str) -> str:
    """The indentation a class statement `name` written into `source` gets per block level:
    the class's own, if the module has it (with a body below its header), else the module's
    first indented block's ('' when it has none: any is consistent with it)."""
    node = class_statement(parsing.parse(source), name)
    lines = lines_of(source)
    if node is not None and not body_on_header_line(lines, node):
        # What the body has beyond the class's own indentation (in a module-level block).
        own, body = indent_of(lines[node.lineno - 1]), _body_indent(lines, node)
        return body[len(own):] if body.startswith(own) else body
    return module_indent_unit(source)


def module_indent_unit(source: str) -> str:
    """The indentation per block level of the module's first indented block ('' when it
    has none: any is consistent with it)."""
    try:
        for token in tokenize.generate_tokens(io.StringIO(source, newline="").readline):
            if token.type == tokenize.INDENT:
                return _indentation(token.string)
    except (tokenize.TokenError, SyntaxError):
        pass
    return ""


def _importable(source: str, what: str) -> str:
    """`source`, unless Python would refuse its indentation: refused, with why."""
    try:
        parsing.parse(source)
    except IndentationError as error:   # TabError too
        raise IndentationMismatch(
            f"{what} cannot be indented to fit the module: written in, Python would read "
            f"line {error.lineno} as misindented ({error.msg}); nothing was changed. Send it "
            "indented in one style (tabs or spaces, not both), or edit the module's file in an "
            "editor, then refresh") from None
    return source


def remove_class(source: str, name: str) -> str:
    """Remove every top-level `class name`: with only the last gone, an earlier
    definition would be what the module binds on its next import. One written in a
    module-level block (class_statement) goes alone; a block it leaves empty gets `pass`."""
    tree = parsing.parse(source)
    _class_or_error(source, tree, name, one_line_body=True)
    while (node := class_statement(tree, name)) is not None:
        body = _enclosing_body(tree, node)
        if len(body) == 1 and body is not tree.body:
            lines = lines_of(source)
            pass_line = indent_of(lines[node.lineno - 1]) + "pass" + newline_of(source)
            source = _replace(source, _block_start(lines, node), node.end_lineno, pass_line)
        else:
            source = _remove_statement(source, node, body)     # the last first, reparsing
        tree = parsing.parse(source)
    return source


def _enclosing_body(tree: ast.Module, node: ast.stmt) -> list[ast.stmt]:
    """The statement list module-level `node` is written in: the module's body or a block's."""
    return _blocks_to(tree.body, node)[-1][2]


def statements_below(tree: ast.Module, node: ast.stmt) -> list[ast.stmt]:
    """The statements the module may run after statement `node`, in the order it runs
    them: those after it in its block, then the clauses that run after that block (a
    try's `else` and `finally` after its body, its `finally` after a handler or its
    `else`, a loop's `else` after its body) and those after the block's statement, and
    so on out to the top level. Not a clause that runs only when `node`'s did not run or
    failed: an `if`'s `else`, a try's handlers."""
    below, inner = [], node
    for owner, field, block in reversed(_blocks_to(tree.body, node)):
        index = next(number for number, item in enumerate(block) if item is inner)
        below += block[index + 1:] + _run_after(owner, field)
        inner = owner
    return below


def _blocks_to(body: list[ast.stmt], node: ast.stmt, owner: ast.stmt | None = None,
               field: str = "body") -> list[tuple[ast.stmt | None, str, list[ast.stmt]]]:
    """(the statement whose clause it is, None for the module's body; the clause's field;
    the block) for each block from `body` in to the one `node` is written in; [] if it is
    in none. A def's or class's own body is not looked in."""
    if any(item is node for item in body):
        return [(owner, field, body)]
    for statement in body:
        if isinstance(statement, FunctionNode + (ast.ClassDef,)):
            continue
        clauses = [(name, getattr(statement, name, None)) for name in ("body", "orelse", "finalbody")]
        clauses += [(name, part.body) for name in ("handlers", "cases") for part in getattr(statement, name, [])]
        for name, block in clauses:
            found = _blocks_to(block, node, statement, name) if isinstance(block, list) else []
            if found:
                return [(owner, field, body)] + found
    return []


def _run_after(owner: ast.stmt | None, field: str) -> list[ast.stmt]:
    """The clauses of `owner` that run after its clause `field` has run."""
    if isinstance(owner, (ast.Try, ast.TryStar)):
        return {"body": owner.orelse + owner.finalbody, "handlers": owner.finalbody,
                "orelse": owner.finalbody}.get(field, [])
    if isinstance(owner, (ast.For, ast.AsyncFor, ast.While)) and field == "body":
        return owner.orelse   # unless a break ends the loop
    return []


def _top_statement(tree: ast.Module, node: ast.stmt) -> ast.stmt:
    """The statement of the module's body that `node` is, or is written in."""
    return next(statement for statement in tree.body
                if first_line(statement) <= node.lineno <= statement.end_lineno)


def put_method(source: str, class_name: str, method_text: str) -> tuple[str, bool]:
    """Replace the same-named method(s) of the class, or append the method.
    Returns (new source, replaced?)."""
    tree = parsing.parse(source)
    classdef = _class_or_error(source, tree, class_name)
    method_text = dedent_code(method_text).strip("\r\n") + "\n"
    defs = ast.parse(method_text).body
    method = defs[0]
    text = with_newlines(_as_body_text(method_text, lines_of(source), classdef), newline_of(source))
    what = f"method {method.name}"
    existing = replaced_by(classdef, method.name, defs)
    if existing:
        return _importable(_replace_defs(source, existing, text), what), True
    lines = lines_of(source)
    stubs = method_nodes(classdef, method.name)
    if stubs:       # only @overload signatures: the implementation goes right after them
        return _importable(_insert_after(source, last_line(lines, stubs[-1]), text), what), False
    body = classdef.body
    # A placeholder that is the whole body, no comment line right above it, gives its
    # lines to the method (remove_method writes `pass` back). Beside a docstring or below
    # comments it stays, the method going after it: filled, the comments became the
    # method's and the docstring the class's only statement, so deleting the method did
    # not give back the text it was added to.
    if len(body) == 1 and _is_placeholder(body[0]) and _block_start(lines, body[0]) == body[0].lineno:
        return _importable(_replace(source, body[0].lineno, body[0].end_lineno, text), what), False
    # Below the comment lines that end the body too (at its indentation: written below the
    # last method, they are its): above them, the method took them from the def they follow.
    end = last_line(lines, classdef)
    return _importable(_insert_after(source, end, newline_of(source) + text), what), False


def _replace_defs(source: str, existing: list, text: str) -> str:
    """`source` with `text` in the place of the `existing` defs (of one name, in order)."""
    lines = lines_of(source)
    if all(_gap_between(lines, previous, node) is not None for previous, node in zip(existing, existing[1:])):
        # Nothing but blank and comment lines between them (as segments shows them): one block.
        start, end = _replaced_from(lines, existing[0], text), _replaced_to(lines, existing[-1], text)
        return _replace(source, start, end, "".join(as_written(lines[start - 1:end], lines_of(text))))
    chunks = _def_chunks(text)
    if [_decorators(node) for node in existing] == [_decorators(node) for node, _ in chunks]:
        # Other statements between them (a method between a getter and its setter): each
        # def stays in its place, the last first so earlier line numbers stay valid. Only
        # for defs sent as they are decorated there, in order: a setter sent above its
        # getter must not go where the getter was.
        for node, (_, chunk) in reversed(list(zip(existing, chunks))):
            lines = lines_of(source)
            start, end = _replaced_from(lines, node, "".join(chunk)), last_line(lines, node)
            source = _replace(source, start, end, "".join(as_written(lines[start - 1:end], chunk)))
        return source
    # Later duplicates go first so earlier line numbers stay valid; the blank lines
    # that set one off go with it (a property's getter and setter become the text).
    for node in reversed(existing[1:]):
        start = first_line(node)
        source = _tidy_blanks(_replace(source, start, last_line(lines_of(source), node), ""), start)
    first, lines = existing[0], lines_of(source)
    start, end = _replaced_from(lines, first, text), _replaced_to(lines, first, text)
    return _replace(source, start, end, "".join(as_written(lines[start - 1:end], lines_of(text))))


def _replaced_from(lines: list[str], node: ast.stmt, text: str) -> int:
    """The first line a def's or class statement's replacement by `text` takes: its comment
    lines right above too when `text` brings comment lines of its own above it, which take
    their place rather than pile up above them; else its first decorator or header line, so
    a text sent as get_method_source or get_class_definition shows it keeps them."""
    sent = []   # the text's lines above its first statement line, stripped
    for line in lines_of(text):
        if line.strip() and not line.strip().startswith("#"):
            break
        sent.append(line.strip())
    if not any(sent):
        return first_line(node)
    start = _block_start(lines, node)
    if start < first_line(node):
        return start
    # None right above it at its indentation, or those opening the file (a licence header,
    # the module's): only the very lines sent, written right above it already, are taken.
    above, indent = first_line(node) - len(sent), indent_of(lines[node.lineno - 1])
    written = lines[above - 1:first_line(node) - 1] if above >= 1 else []
    if [line.strip() for line in written] == sent and all(
            indent_of(line) == indent for line in written if line.strip()):
        return above
    return first_line(node)


def _replaced_to(lines: list[str], node: ast.stmt, text: str) -> int:
    """The last line a def's replacement by `text` takes: last_line, and the comment lines
    `text` ends with below its def, at its indentation, when those very lines are written
    right below it (sent again, they are written once, not piled up below it; none else is
    taken, as they may be the next statement's)."""
    text_lines = lines_of(text)
    margin = next(len(indent_of(line)) for line in text_lines
                  if line.strip() and not line.lstrip().startswith("#"))
    sent = []   # the text's lines below its def, not its body's comments (deeper), stripped
    for line in reversed(text_lines):
        if line.strip() and (not line.lstrip().startswith("#") or len(indent_of(line)) > margin):
            break
        sent.insert(0, line.strip())
    end = last_line(lines, node)
    if not any(sent):
        return end
    written, indent = lines[end:end + len(sent)], indent_of(lines[node.lineno - 1])
    if [line.strip() for line in written] == sent and all(
            indent_of(line) == indent for line in written if line.strip()):
        return end + len(sent)
    return end


def comments_below(class_text: str) -> tuple[str, str]:
    """A class statement's text (at its margin) parted in two: the statement, and the
    comment lines it ends with at that margin, with the blank lines above and among them.
    Those follow the class: its carried members go above them, inside the class, not below."""
    lines = lines_of(class_text)
    end = len(lines)
    while end and (not lines[end - 1].strip()
                   or lines[end - 1].startswith("#")):   # at the margin: no indentation
        end -= 1
    if not any(line.strip() for line in lines[end:]):
        return class_text, ""
    return "".join(lines[:end]), "".join(lines[end:])


def _def_chunks(text: str) -> list[tuple[ast.stmt, list[str]]]:
    """Each def of `text` (defs of one name, at any margin) with its lines, the comment
    lines above it included; the blank lines between them belong to none."""
    lines = lines_of(text)
    try:
        nodes = parsing.parse(dedent_code(text)).body
    except (SyntaxError, ValueError):
        return []
    chunks, previous_end = [], 0
    for node in nodes:
        start = previous_end + 1
        while start < first_line(node) and not lines[start - 1].strip():
            start += 1
        previous_end = last_line(lines, node)
        chunks.append((node, lines[start - 1:previous_end]))
    return chunks


def _decorators(node: ast.stmt) -> list[str]:
    return [ast.dump(decorator) for decorator in getattr(node, "decorator_list", [])]


def function_nodes(tree: ast.Module, name: str) -> list:
    """The module's top-level defs of `name` (a module-level function's), in source order."""
    return [node for node in tree.body if isinstance(node, FunctionNode) and node.name == name]


def put_function(source: str, function_text: str) -> tuple[str, bool]:
    """Replace the module's top-level def(s) of the function's name (replaced_of), or add
    it: right after its @overload signatures, else where a new class goes
    (_add_definition). Returns (new source, replaced?)."""
    function_text = dedent_code(function_text).strip("\r\n") + "\n"
    defs = ast.parse(function_text).body
    existing = function_nodes(parsing.parse(source), defs[0].name)
    text = with_newlines(fit_indentation(function_text, module_indent_unit(source)), newline_of(source))
    what = f"function {defs[0].name}"
    replaced = replaced_of(existing, defs)
    if replaced:
        return _importable(_replace_defs(source, replaced, text), what), True
    if existing:    # only @overload signatures: the implementation goes right after them
        at = last_line(lines_of(source), existing[-1])
        return _importable(_insert_after(source, at, newline_of(source) * 2 + text), what), False
    return _importable(_add_definition(source, text), what), False


def remove_function(source: str, name: str) -> str:
    """Remove every top-level def of `name` (an earlier one would otherwise be what the
    next import binds), with the comments written right above each."""
    tree = parsing.parse(source)
    while nodes := function_nodes(tree, name):
        source = _remove_statement(source, nodes[-1], tree.body)   # the last first, reparsing
        tree = parsing.parse(source)
    return source


def _as_body_text(text: str, lines: list[str], classdef: ast.ClassDef) -> str:
    """Code `text` (at any margin) as the class body holds it: indented by the class's
    body indentation, its own block levels in the class's style (fit_indentation)."""
    indent = _body_indent(lines, classdef)
    return indent_code(fit_indentation(dedent_code(text).strip("\r\n") + "\n", indent), indent)


def is_overload(node) -> bool:
    """A `typing.overload` signature: it documents a call, the implementation is another def."""
    return any(_decorator_name(decorator) == "overload" for decorator in node.decorator_list)


def replaced_by(classdef: ast.ClassDef, name: str, defs: list) -> list:
    """The defs of `name` that new `defs` replace: all of them, except that defs with
    no @overload among them are an implementation, which leaves the signatures be."""
    return replaced_of(method_nodes(classdef, name), defs)


def replaced_of(existing: list, defs: list) -> list:
    """Of the `existing` defs of a name, those new `defs` replace (replaced_by)."""
    if not any(is_overload(node) for node in defs):
        existing = [node for node in existing if not is_overload(node)]
    return existing


def carried_members(old: ast.ClassDef, new: ast.ClassDef) -> list[ast.stmt]:
    """The methods and nested classes of `old` that a redefinition `new` leaves out:
    get_class_definition shows neither, so a class text made from it must keep them.
    A name `new` binds itself is not carried: by a def or nested class, or by another
    statement of its body, in a class-level block too (an assignment, a loop's or `with`'s
    target, an import, `:=`, a `match` capture: may_bind_names; a def in a block) unless
    `old`'s own statements bound it too (then the member stood beside that binding, as the
    definition still shows it: sent back, the member stays). Names are compared as the
    class binds them (mangled: `global _C__x` declares what `def __x` binds)."""
    bound = {node.name for node in new.body if isinstance(node, FunctionNode + (ast.ClassDef,))}
    bound = {mangled(new.name, name) for name in bound} | (
        _bound_mangled(new) - _bound_mangled(old) - _rebinding_what_they_read(new))
    return [node for node in old.body if isinstance(node, FunctionNode + (ast.ClassDef,))
            and mangled(old.name, node.name) not in bound]


def _rebinding_what_they_read(classdef: ast.ClassDef) -> set[str]:
    """The names, as the class binds them, that the first of its statements other than its
    own members to bind each reads as it runs (`run = classmethod(run)`): that statement
    rebinds a member of that name, which must be there above it, so it is carried."""
    seen, names = set(), set()
    for node in class_level_statements(classdef):
        if isinstance(node, FunctionNode + (ast.ClassDef,)) and node in classdef.body:
            continue
        binding = may_bind_names(node) | _assigned_names(node)
        names |= (binding - seen) & names_read_now(node, blocks=False)
        seen |= binding
    return {mangled(classdef.name, name) for name in names}


def _bound_mangled(classdef: ast.ClassDef) -> set[str]:
    """_statements_bind's names as the class binds them."""
    return {mangled(classdef.name, name) for name in _statements_bind(classdef)}


def _statements_bind(classdef: ast.ClassDef) -> set[str]:
    """The names the class body's statements other than its own members may bind, in its
    class-level blocks too (a carried member, put below them, would override what a block
    binds as it would a plain statement's); an annotation alone too: a member of that name
    would be the field's default; a `global` name too: a member of it would bind the
    module's (global_declarations)."""
    return {name for node in class_level_statements(classdef)
            if not (isinstance(node, FunctionNode + (ast.ClassDef,)) and node in classdef.body)
            for name in may_bind_names(node) | _assigned_names(node) | _declared_names(node)}


def _declared_names(node: ast.stmt) -> set[str]:
    return set(node.names) if isinstance(node, ast.Global) else set()


def with_methods(class_text: str, class_name: str, source: str, methods: list) -> str:
    """`class_text` with `methods` (defs or nested classes of `source`, of names it does
    not define) added as written there. Methods of one name (a property's getter and
    setter) go in together: one by one, each would replace the one before. One that a
    class-level statement of `class_text` uses as it runs (`alias = greet`,
    `p = property(get_p)`, `@wrap` above a def, a def's default value, a nested class's
    base) goes right above that statement, which would otherwise run before it exists,
    and so above the user of another carried member that uses it (`@_wrap` on one)."""
    before = statements_before(source, class_name)
    source_lines, inside = lines_of(source), string_lines(source)
    # In the class's own style first, so the carried members go in as written.
    class_text = fit_indentation(dedent_code(class_text), class_indent_unit(source, class_name))
    for name in dict.fromkeys(method.name for method in methods):
        text = "\n".join(_carried_text(source_lines, inside, method)
                         for method in methods if method.name == name)
        # A name the module or builtins bind (`json`, `property`) resolves there without
        # the member, as it did wherever the class read it before the member's def: moved
        # up, the member would shadow it for those readers.
        # `del name` needs the member above it whatever the module binds: it deletes from
        # the class's namespace alone.
        needing = set() if bound_before(before, name) else _needing(name, methods)
        user = _first_user_of(class_text, class_name, needing, deleted={name})
        if user is None:
            class_text = put_method(class_text, class_name, text)[0]
        else:
            lines = lines_of(class_text)
            classdef = class_statement(ast.parse(class_text), class_name)
            nl = newline_of(class_text)
            indented = _as_body_text(text, lines, classdef)
            class_text = _insert_before(class_text, _block_start(lines, user),
                                        with_newlines(indented, nl) + nl)
    return class_text


def _carried_text(lines: list[str], inside: set[int], node: ast.stmt) -> str:
    """A carried member's segment, with the comment lines above it at its indentation
    (blank lines between them too) that class_definition leaves out with it: without
    them, `# Public interface` above a def was lost by a redefinition. Deeper ones end
    the member above (last_line). `inside`: the source's string_lines."""
    indent = indent_of(lines[node.lineno - 1])
    start = first_line(node)
    for number in range(first_line(node) - 1, 0, -1):
        line = lines[number - 1]
        if number in inside or line.strip() and not (
                line.lstrip().startswith("#") and indent_of(line) == indent):
            break
        start = number if line.strip() else start
    return strip_indent(lines[start - 1:last_line(lines, node)], indent)


def statements_before(source: str, class_name: str) -> list[ast.stmt]:
    """The module's top-level statements above the class statement (above the block it is
    written in, if any): they have run when its body runs (all of them for a class it does
    not have yet)."""
    tree = parsing.parse(source)
    classdef = class_statement(tree, class_name)
    if classdef is None:
        return tree.body
    return tree.body[:tree.body.index(_top_statement(tree, classdef))]


def bound_before(statements: list[ast.stmt], name: str) -> bool:
    """Whether a class body below `statements` can read `name` without binding it
    itself: they surely bind it, or the builtins do."""
    return name in vars(builtins) or surely_binds(statements, name)


def surely_binds(statements: list[ast.stmt], name: str) -> bool:
    """Whether running `statements` at a module's top level surely binds `name`: a def,
    class, import or assignment of it, an `if` each of whose branches does (a constant
    test takes its one branch: `if True:`), a `with` body, a `try` whose body and every
    handler do, or its `finally`. So `if TYPE_CHECKING: from m import f` binds no `f`
    (a class body reading it then fails), nor does a `*` import (its names are unknown
    here). Where unsure, no: a refusal or a carried member's move is then the safe side."""
    return any(_surely_binds(node, name) for node in statements)


def _surely_binds(node: ast.stmt, name: str) -> bool:
    if isinstance(node, FunctionNode + (ast.ClassDef,)):
        return node.name == name
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return any((alias.asname or alias.name.split(".")[0]) == name for alias in node.names)
    if isinstance(node, ast.If):
        if isinstance(node.test, ast.Constant):
            return surely_binds(node.body if node.test.value else node.orelse, name)
        return surely_binds(node.body, name) and surely_binds(node.orelse, name)
    if isinstance(node, (ast.With, ast.AsyncWith)):
        return any(item.optional_vars is not None and name in target_names(item.optional_vars)
                   for item in node.items) or surely_binds(node.body, name)
    if isinstance(node, (ast.Try, ast.TryStar)):
        # A handler's `as` name is deleted as it ends, rebound in it or not.
        return surely_binds(node.finalbody, name) or (surely_binds(node.body, name) and all(
            handler.name != name and surely_binds(handler.body, name) for handler in node.handlers))
    if isinstance(node, ast.AnnAssign) and node.value is None:
        return False                     # `x: int` annotates, binds nothing
    return name in _assigned_names(node)


def runs_as_program_only(statement: ast.stmt) -> bool:
    """`if __name__ == "__main__":` (or `"__main__" == __name__`)."""
    if not (isinstance(statement, ast.If) and isinstance(statement.test, ast.Compare)
            and len(statement.test.ops) == 1 and isinstance(statement.test.ops[0], ast.Eq)):
        return False
    sides = [statement.test.left, *statement.test.comparators]
    return (any(isinstance(side, ast.Name) and side.id == "__name__" for side in sides)
            and any(isinstance(side, ast.Constant) and side.value == "__main__" for side in sides))


def binds(statements: list[ast.stmt], name: str, star: bool = True, augmented: bool = True,
          handled: bool = True, annotated: bool = True) -> bool:
    """Whether `statements`, run at a module's top level, may bind `name` (a `*` import
    may, unless `star` is false). Unless `augmented`, `name += x` is not counted: it reads
    `name` first, so it binds it only where something else bound it before. Unless
    `handled`, `except E as name` is not counted: Python deletes that name as the handler
    ends (rebound in it or not), so it serves no read below. Unless `annotated`, a bare
    annotation `name: T` is not counted: it binds nothing, only records in __annotations__."""
    return any(_binds(node, name, star, augmented, handled, annotated) for node in statements)


def _binds(node: ast.AST, name: str, star: bool, augmented: bool = True, handled: bool = True,
           annotated: bool = True) -> bool:
    """Whether a top-level statement may bind `name` in the module (under an `if` or `try`
    too). A def, class or lambda binds only its own name here; the names in its body, and a
    comprehension's, are its own scope's. (A `:=` in a comprehension does bind here: not
    counted, which at worst re-imports a module that still imports.)"""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name == name
    if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
        return False
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return any((alias.asname or alias.name.split(".")[0]) in (name, "*" if star else name)
                   for alias in node.names)
    if isinstance(node, ast.Name):
        return node.id == name and isinstance(node.ctx, ast.Store)
    # `except E as name`, and a match statement's captures (`case [x, *rest]`, `case {**rest}`, `as x`)
    if isinstance(node, ast.ExceptHandler) and node.name == name:
        return handled
    if isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name == name:
        return True
    if isinstance(node, ast.MatchMapping) and node.rest == name:
        return True
    if isinstance(node, ast.AugAssign) and not augmented:
        return _binds(node.value, name, star, augmented, handled, annotated)   # a `:=` in it binds
    if isinstance(node, ast.AnnAssign) and node.value is None and not annotated:
        # `name: T` annotates, binds nothing; but T is evaluated: `x: (Cart := int)` binds Cart
        return _binds(node.annotation, name, star, augmented, handled, annotated)
    return any(_binds(sub, name, star, augmented, handled, annotated) for sub in ast.iter_child_nodes(node))


def binds_by_call(statements: list[ast.stmt], name: str) -> bool:
    """Whether running `statements` at a module's top level may bind `name` through a
    call, below its def, of a function they define whose own body declares `name`
    global and binds it (`def setup(): global LIMIT; LIMIT = 3` ... `setup()`). A function
    reached only through another call, or under another name, is not followed."""
    setters = []
    calls = []
    for statement in statements:
        for node in evaluated_now(statement, class_bodies=False):
            if isinstance(node, ast.FunctionDef) and _sets_global(node, name):
                setters.append(node)   # an async def's body does not run when it is called
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                calls.append(node)
    return any(call.func.id == setter.name and call.lineno > setter.end_lineno
               for setter in setters for call in calls)


def _sets_global(function: ast.FunctionDef, name: str) -> bool:
    """Whether the function's own scope (not a nested def's or class's) declares `name`
    global and binds it."""
    declared, pending = False, list(function.body)
    while pending and not declared:
        node = pending.pop()
        declared = isinstance(node, ast.Global) and name in node.names
        if not isinstance(node, FunctionNode + (ast.ClassDef, ast.Lambda)):
            pending += ast.iter_child_nodes(node)
    return declared and binds(function.body, name, star=False)


def unbound_reader(source: str, class_name: str, name: str) -> ast.stmt | None:
    """The first class-level statement of the class that reads `name` as it runs
    (`x = property(name)`, `@name` above a def) while nothing binds it there: neither the
    class body above it, nor the module above the class, nor the builtins. Running it is a
    NameError. So is `del name` while the class body above binds it not: it deletes from
    the class's namespace alone, whatever the module binds."""
    classdef = _class_or_error(source, parsing.parse(source), class_name)
    read_elsewhere = bound_before(statements_before(source, class_name), name)
    for statement in classdef.body:
        if name in names_deleted_now(statement) or (
                not read_elsewhere and name in names_read_now(statement)):
            return statement
        if name in bound_names(statement):
            return None
    return None


def class_level_readers(classdef: ast.ClassDef, name: str) -> list[ast.stmt]:
    """The class-level statements below a def of `name` that read it as the class body
    runs (`x = property(get_x)`, `alias = get_x`, `@get_x.register` above another def):
    what they bound holds that def as it was when the class was made."""
    defs = method_nodes(classdef, name)
    if not defs:
        return []
    below = classdef.body[classdef.body.index(defs[0]) + 1:]
    return [statement for statement in below
            if statement not in defs and defs[0].name in names_read_now(statement)]


def bound_names(statement: ast.stmt) -> set[str]:
    """The names a class-level statement surely binds as it runs (else it raises): a def's
    or class's own, an assignment's targets (not an annotation's alone, `x: int`), an
    import's, a `with`'s `as` targets. Not a loop's target (it may run no time), nor a
    `:=` or a `match` capture (in a branch, a case): may_bind_names has those too."""
    if isinstance(statement, FunctionNode + (ast.ClassDef,)):
        return {statement.name}
    if isinstance(statement, (ast.With, ast.AsyncWith)):
        return {name for item in statement.items if item.optional_vars is not None
                for name in target_names(item.optional_vars)}
    if isinstance(statement, (ast.Import, ast.ImportFrom)):
        return {alias.asname or alias.name.split(".")[0] for alias in statement.names}
    if isinstance(statement, ast.AnnAssign) and statement.value is None:
        return set()
    return _assigned_names(statement)


def _needing(name: str, members: list) -> set[str]:
    """`name` and the names of the `members` that read it as they run, directly or through
    one another: a statement using any of them runs after it, once they are in place."""
    needing = {name}
    while more := {member.name for member in members
                   if member.name not in needing and needing & names_read_now(member)}:
        needing |= more
    return needing


def _first_user_of(class_text: str, class_name: str, names: set[str],
                   deleted: set[str] = frozenset()) -> ast.stmt | None:
    """The first class-level statement of the class that reads one of `names` as it
    runs (a def or nested class statement included, for what it evaluates), or deletes
    one of `deleted` (`del run`), or None."""
    classdef = _class_or_error(class_text, ast.parse(class_text), class_name)
    for statement in classdef.body:
        if names & names_read_now(statement) or deleted & names_deleted_now(statement):
            return statement
    return None


def names_read_now(node: ast.AST, blocks: bool = True) -> set[str]:
    """The names a class-level statement reads in the class body's namespace as it runs
    (without `blocks`, its own parts only: see evaluated_now). Annotations count even under
    `from __future__ import annotations` (the live compile applies it, live.future_flags),
    which at worst places a carried member higher than it needs to be; a nested class's
    body reads the module's names, not these. `run += x` reads `run` before it binds it."""
    names = set()
    for item in evaluated_now(node, class_bodies=False, blocks=blocks):
        if isinstance(item, ast.Name) and isinstance(item.ctx, ast.Load):
            names.add(item.id)
        elif isinstance(item, ast.AugAssign) and isinstance(item.target, ast.Name):
            names.add(item.target.id)
    return names


def names_deleted_now(node: ast.AST) -> set[str]:
    """The plain names a statement's `del` deletes as it runs (in its blocks too)."""
    return {item.id for item in evaluated_now(node, class_bodies=False)
            if isinstance(item, ast.Name) and isinstance(item.ctx, ast.Del)}


def evaluated_now(node: ast.AST, lazy_annotations: bool = False, class_bodies: bool = True,
                  blocks: bool = True):
    """The nodes running `node` evaluates as it runs, itself first. A def or lambda
    evaluates its decorators, defaults and (unless `lazy_annotations`: `from __future__
    import annotations`) its annotations now, its body when called; with lazy ones, an
    annotated assignment evaluates its target and value only. A class statement runs
    its body too, unless `class_bodies` is false (its decorators, bases and keywords
    then: a nested class's body does not read the enclosing class's namespace). The
    statements in a statement's blocks are among them unless `blocks` is false (then its
    own parts only: an `if`'s test, a loop's target and iterable, `except` types, `case`
    patterns and guards)."""
    pending = [node]
    while pending:
        item = pending.pop()
        yield item
        if isinstance(item, FunctionNode + (ast.Lambda,)):
            arguments = item.args
            pending += getattr(item, "decorator_list", []) + arguments.defaults
            pending += [d for d in arguments.kw_defaults if d is not None]
            if not lazy_annotations:
                pending += [a.annotation for a in arguments.posonlyargs + arguments.args
                            + arguments.kwonlyargs + [arguments.vararg, arguments.kwarg]
                            if a is not None and a.annotation is not None]
                pending += [item.returns] if getattr(item, "returns", None) is not None else []
        elif isinstance(item, ast.ClassDef) and not class_bodies:
            pending += item.decorator_list + item.bases + [k.value for k in item.keywords]
        elif isinstance(item, ast.AnnAssign) and lazy_annotations:
            pending += [sub for sub in (item.target, item.value) if sub is not None]
        else:
            pending += [child for child in ast.iter_child_nodes(item)
                        if blocks or not isinstance(child, ast.stmt)]


def _assigned_names(node: ast.stmt) -> set[str]:
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        targets = [node.target]
    else:
        return set()
    return {name for target in targets for name in target_names(target)}


def target_names(target: ast.expr) -> set[str]:
    """The names an assignment target binds: not those it reads, as `submit` in
    `submit.__doc__ = ...` or `d` in `d[k] = ...`."""
    return {sub.id for sub in ast.walk(target)
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store)}


def remove_method(source: str, class_name: str, selector: str) -> str:
    """Remove the method(s) with the comments written right above them, so the
    source reads as if they had never been there; a class left with no
    statement gets `pass`."""
    classdef = _class_or_error(source, parsing.parse(source), class_name)
    if not method_nodes(classdef, selector):
        raise SpliceError(f"{class_name} defines no method {selector}")
    while nodes := method_nodes(classdef, selector):
        node = nodes[-1]        # from the last, reparsing, as each removal moves lines
        if len(classdef.body) == 1:
            lines = lines_of(source)
            pass_line = _body_indent(lines, classdef) + "pass" + newline_of(source)
            return _replace(source, _block_start(lines, node), last_line(lines, node), pass_line)
        source = _remove_statement(source, node, classdef.body)
        classdef = _class_or_error(source, parsing.parse(source), class_name)
    return source


def set_class_docstring(source: str, class_name: str, comment: str) -> str:
    tree = parsing.parse(source)
    classdef = _class_or_error(source, tree, class_name)
    lines = lines_of(source)
    indent = _body_indent(lines, classdef)
    nl = newline_of(source)
    current = docstring_node(classdef)
    literal = with_newlines(docstring_literal(comment), nl)
    if current is not None:
        # What shares the docstring's first and last lines stays: `"""d"""; x = 1`.
        before = _before_column(lines[current.lineno - 1], current.col_offset)
        last = lines[current.end_lineno - 1]
        after = last[len(_before_column(last, current.end_col_offset)):]
        body = classdef.body
        if comment:
            text = before + literal + after
        elif len(body) > 1 and body[1].lineno == current.end_lineno:
            text = before + last[len(_before_column(last, body[1].col_offset)):]
        else:
            # A comment after the closing quotes (`"""d"""  # noqa: D400`) stays, on a line
            # of its own in their place: it is the module's text, not the docstring.
            note = after.strip().lstrip(";").strip()
            text = indent + note + nl if note.startswith("#") else ""
            text += indent + "pass" + nl if len(body) == 1 else ""
        return _replace(source, current.lineno, current.end_lineno, text)
    if not comment:
        return source
    # Above the first statement's decorators and the comments that go with it.
    return _insert_before(source, _block_start(lines, classdef.body[0]), indent + literal + nl)


def docstring_literal(comment: str) -> str:
    """A string literal whose value is exactly `comment`, triple-quoted when safe."""
    if ('"""' not in comment and "\\" not in comment and not comment.endswith('"')
            and "\r" not in comment and _writable_raw(comment)):
        return '"""' + comment + '"""'
    return repr(comment)


def _writable_raw(text: str) -> bool:
    """Whether `text` can stand raw in a module's source: not a NUL (Python refuses a
    source holding one), nor a lone surrogate (no file encoding carries it; repr
    escapes both)."""
    return "\0" not in text and not any("\ud800" <= ch <= "\udfff" for ch in text)


def class_definition(source: str, name: str, classdef: ast.ClassDef | None = None) -> str:
    """The class header and class-level statements, without methods or nested
    classes, in the source's own layout: the blank lines and comments before
    each kept statement stay; those before a dropped method go with it. `classdef`,
    one of the class's statements in `source`, is the one shown, else class_statement."""
    if classdef is None:
        classdef = _class_or_error(source, parsing.parse(source), name, one_line_body=True)
    lines = lines_of(source)
    if body_on_header_line(lines, classdef):
        return segment(source, classdef)
    shown = [lines[number - 1] if number else _body_indent(lines, classdef) + "pass" + newline_of(source)
             for number in definition_line_numbers(lines, classdef)]
    return strip_indent(shown, indent_of(lines[classdef.lineno - 1]))


def definition_line_numbers(lines: list[str], classdef: ast.ClassDef) -> list[int | None]:
    """The numbers (1-based) of the source lines class_definition shows, in order; None
    for the `pass` it shows for a body of methods only. `classdef`'s body has lines of
    its own (not body_on_header_line)."""
    def numbers(first: int, last: int) -> list[int]:
        return list(range(first, last + 1))

    header_end = first_line(classdef.body[0]) - 1
    gap_start = header_last_line(lines, classdef)
    shown = numbers(first_line(classdef), gap_start)
    gap = numbers(gap_start + 1, header_end)
    body: list[int | None] = []
    previous_end = None
    for node in classdef.body:
        start = first_line(node)
        if previous_end is not None:
            gap = numbers(previous_end + 1, start - 1)
            # `x = 1; y = 2`: y's line is x's, already shown.
            start = max(start, previous_end + 1)
        previous_end = max(previous_end or 0, last_line(lines, node))
        if isinstance(node, FunctionNode + (ast.ClassDef,)):
            continue
        if not body:
            gap = gap[len(gap) - len(_drop_leading_blanks([lines[n - 1] for n in gap])):]
        body += gap + numbers(start, previous_end)
    # The comments that end the body are the class's, whatever statement is last.
    return shown + (body or [None]) + numbers(previous_end + 1, last_line(lines, classdef))


def header_last_line(lines: list[str], classdef: ast.ClassDef) -> int:
    """The number of the class header's last line: the blank or comment-only lines
    between it and the first statement are that statement's gap, not the header's."""
    number = first_line(classdef.body[0]) - 1
    while number >= first_line(classdef) and _is_gap_line(lines[number - 1]):
        number -= 1
    return number


# -- line helpers --------------------------------------------------------

def _class_or_error(source: str, tree: ast.Module, name: str,
                    one_line_body: bool = False) -> ast.ClassDef:
    """The class_statement `name`, or SpliceError: there is none, which one binds it is
    unsure, or (unless `one_line_body` is allowed) its body shares its header's line."""
    classdef = class_statement(tree, name)
    if classdef is None:
        found = class_statements(tree, name)
        raise SpliceError(unsure_statement(name, found) if found else f"no class {name} in the module")
    if not one_line_body and body_on_header_line(lines_of(source), classdef):
        raise SpliceError(f"the body of class {name} is written on one line with its "
                          "header; redefine it with compile_class_definition first")
    return classdef


def body_on_header_line(lines: list[str], classdef: ast.ClassDef) -> bool:
    """`class C: x = 1`, or the same after a header on several lines
    (`class C(\\n  Base): x = 1`): the body has no lines of its own."""
    first = classdef.body[0]
    return bool(_before_column(lines[first.lineno - 1], first.col_offset).strip())


def _before_column(line: str, col_offset: int) -> str:
    """The text of `line` before an AST column, which counts UTF-8 bytes."""
    return line.encode("utf-8", "surrogatepass")[:col_offset].decode("utf-8", "surrogatepass")


def _is_gap_line(line: str) -> bool:
    stripped = line.strip()
    return not stripped or stripped.startswith("#")


def _drop_leading_blanks(lines: list[str]) -> list[str]:
    start = 0
    while start < len(lines) and not lines[start].strip():
        start += 1
    return lines[start:]


def _is_placeholder(node: ast.AST) -> bool:
    return isinstance(node, ast.Pass) or (
        isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        and node.value.value is Ellipsis)


def indent_of(line: str) -> str:
    """A line's leading spaces and tabs, up to a form feed: the prefix an edit strips or
    adds, and a comment's depth. Counting the form feed (_leading_whitespace), a section's
    comment written after one at column 0 would be taken for the class above's."""
    return line[:len(line) - len(line.lstrip(" \t"))]


def _body_indent(lines: list[str], classdef: ast.ClassDef) -> str:
    return _indentation(lines[classdef.body[0].lineno - 1]) or "    "


def strip_indent(lines: list[str], indent: str) -> str:
    inside = string_lines("".join(lines))
    return "".join(line[len(indent):] if line.startswith(indent) and n not in inside else line
                   for n, line in enumerate(lines, 1))


def as_written(old: list[str], new: list[str]) -> list[str]:
    """`new`, lines replacing `old`, with each that is `old`'s line but for its ending or, on
    a blank line, its whitespace (what re-indenting sent text normalizes) as `old` has it:
    a text sent back as it was shown leaves its lines byte for byte."""
    matcher = difflib.SequenceMatcher(None, comparable(old), comparable(new), autojunk=False)
    kept = list(new)
    for i, j, size in matcher.get_matching_blocks():
        for offset in range(size):
            line, sent = old[i + offset], new[j + offset]
            if not line.endswith(("\n", "\r")):   # a module's last line, now going on above others
                line += sent[len(sent.rstrip("\r\n")):]
            kept[j + offset] = line
    return kept


def comparable(lines: list[str]) -> list[str]:
    """The lines as as_written compares them: without their endings, a blank one empty,
    unless it is inside a string literal (there its whitespace is the string's)."""
    inside = string_lines("".join(lines))
    return [line.rstrip("\r\n") if line.strip() or number in inside else ""
            for number, line in enumerate(lines, 1)]


def with_newlines(text: str, nl: str) -> str:
    """`text` with every line ending (\\n, \\r\\n or \\r, as a client may send any)
    made the module's own; Python reads all three alike, so no value changes."""
    return "".join(lines_with_newline(lines_of(text), nl))


def lines_with_newline(lines: list[str], nl: str) -> list[str]:
    """with_newlines of text already split (lines_of), line for line."""
    return [line.rstrip("\r\n") + nl if line.endswith(("\n", "\r")) else line for line in lines]


def _replace(source: str, first: int, last: int, text: str) -> str:
    lines = lines_of(source)
    if text and last == len(lines) and not lines[-1].endswith(("\n", "\r")):
        text = text.rstrip("\r\n")
    return "".join(lines[:first - 1]) + text + "".join(lines[last:])


def _insert_after(source: str, line: int, text: str) -> str:
    lines = lines_of(source)
    before = lines[:line]
    if before and not before[-1].endswith(("\n", "\r")):
        before[-1] += newline_of(source)
        text = text.rstrip("\r\n")     # the module still ends without one
    return "".join(before) + text + "".join(lines[line:])


def _insert_before(source: str, line: int, text: str) -> str:
    lines = lines_of(source)
    return "".join(lines[:line - 1]) + text + "".join(lines[line - 1:])


def _add_definition(source: str, text: str) -> str:
    """A new top-level class or def, last in the module, or right above the
    `if __name__ == "__main__":` block (and the comments above it) that ends the module:
    run as a program (`python test_x.py`, whose `unittest.main()` exits), the module would
    never reach a definition below that block. At least two blank lines above it, as
    appended (the block may stand right under the line above it)."""
    body = parsing.parse(source).body
    if not body or not runs_as_program_only(body[-1]):
        return _append_block(source, text, blank_lines=2)
    lines, nl = lines_of(source), newline_of(source)
    start = _block_start(lines, body[-1])
    blank = 0
    while blank < start - 1 and not lines[start - 2 - blank].strip():
        blank += 1
    spacing = nl * max(0, 2 - blank) if blank < start - 1 else ""   # none at the top of the file
    return _insert_before(source, start, spacing + text + nl * 2)


def _append_block(source: str, text: str, blank_lines: int) -> str:
    nl = newline_of(source)
    if not source.strip():
        return text
    stripped = source.rstrip("\r\n")
    if not source.endswith(("\n", "\r")):
        text = text.rstrip("\r\n")     # the module still ends without a newline
    return stripped + nl * (blank_lines + 1) + text


def _remove_statement(source: str, node: ast.stmt, body: list[ast.stmt]) -> str:
    """Remove `node` (one of `body`, with its decorators and the comments right
    above it) and join the blank lines around it as PEP 8 spacing had them."""
    lines = lines_of(source)
    start, end = _block_start(lines, node), last_line(lines, node)
    keep = "above" if node is body[0] else "below" if node is body[-1] else "larger"
    removed = _tidy_blanks(_replace(source, start, end, ""), start, keep)
    if end == len(lines) and not source.endswith(("\n", "\r")):
        return _without_last_newline(removed)   # the module still ends without one
    return removed


def _without_last_newline(text: str) -> str:
    for ending in ("\r\n", "\n", "\r"):
        if text.endswith(ending):
            return text[:-len(ending)]
    return text


def _block_start(lines: list[str], node: ast.stmt) -> int:
    """The first line of `node` counting the comment lines written right above
    it at its indentation, but not a shebang or encoding declaration, nor the
    comment lines that open the file (a licence or copyright header): those are
    the module's."""
    indent = indent_of(lines[node.lineno - 1])
    inside = string_lines("".join(lines))
    start = first_line(node)
    while start > 1 and start - 1 not in inside and not _is_file_header(lines, start - 1):
        above = lines[start - 2]
        if not above.strip().startswith("#") or indent_of(above) != indent:
            break
        start -= 1
    if all(_is_file_header(lines, number) for number in range(1, start)):
        return first_line(node)
    return start


def _is_file_header(lines: list[str], number: int) -> bool:
    """Line `number` (1-based) is the shebang or encoding declaration Python reads."""
    line = lines[number - 1]
    return (number == 1 and line.startswith("#!")) or (
        number <= 2 and CODING_DECLARATION.match(line) is not None)


def _tidy_blanks(source: str, at: int, keep: str = "larger") -> str:
    """After removing lines at `at`, the blank runs that met there become one:
    the run `above` (a first statement went: the gap after the header stays),
    `below` (a last one went: the gap before what follows the block stays) or
    the `larger` (between siblings). At the start or end of the file, the run that
    was there before stays, as written (a blank line may hold spaces)."""
    lines = lines_of(source)
    index = at - 1
    start = index
    while start > 0 and not lines[start - 1].strip():
        start -= 1
    end = index
    while end < len(lines) and not lines[end].strip():
        end += 1
    above, below = lines[start:index], lines[index:end]
    if start == 0:
        kept = above
    elif end == len(lines):
        kept = below
    else:
        kept = {"above": above, "below": below}.get(keep, max(above, below, key=len))
    lines[start:end] = kept
    return "".join(lines)


# What parsing or compiling code nested too deeply raises instead of a SyntaxError
# (`-` * 100000 + `1`, a chain of thousands of `+`): the parser's stack overflows, or
# building or compiling the AST meets the recursion limit.
NESTED_TOO_DEEPLY = (MemoryError, RecursionError)


def nested_too_deeply(error: BaseException) -> str:
    """What one of NESTED_TOO_DEEPLY from a parse or compile means, as a tool says it."""
    said = raised(error)
    if isinstance(error, MemoryError) and not str(error):
        said = "MemoryError: the parser's stack overflowed"   # Python 3.11 says nothing
    return f"code is nested too deeply to compile ({said}); split the deepest expression into named parts"
