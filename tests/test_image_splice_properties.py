"""Seeded, randomized edits through splice.py: whatever the module looks like, an
edit changes what it targets and nothing else.

Modules are generated from a fixed set of seeds (deterministic, a few hundred
cases): classes with and without bases, decorators and docstrings, class
attributes, nested classes, comments and blank runs, decorated and async
methods, multi-line strings whose lines look like defs or comments, CRLF, tabs,
a shebang and a coding line, no newline at EOF, `if`-guarded code at the end. A
client's method or class text has its own indentation (tabs into a module indented
with spaces, or the reverse): what is written in must be that code in the module's.
Run this file as a script with a number of seeds to try many more locally.
"""

from __future__ import annotations

import ast
import difflib
import io
import random
import sys
import tokenize
from collections import Counter

import pytest

from gsmcpd.image import splice
from helpers import sweep_seeds

SEEDS = range(60)
STEPS = 8


# -- generating a module -------------------------------------------------------------

class Gen:
    def __init__(self, rng: random.Random):
        self.rng = rng
        self.names = 0
        self.unit = rng.choice(["    ", "    ", "  ", "\t"])

    def name(self, prefix: str) -> str:
        self.names += 1
        return f"{prefix}{self.names}"

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def blanks(self) -> list[str]:
        """A run of 0-3 blank lines, some holding spaces."""
        return [self.rng.choice(["", "", "", "  "])
                for _ in range(self.rng.choice([0, 1, 1, 1, 2, 3]))]

    def comment(self, indent: str) -> str:
        return indent + self.rng.choice(["# note", "#: attr doc", "# def fake(self):",
                                         "# class Fake:", "#", "# \"\"\" quote"])

    def string_body(self, indent: str) -> list[str]:
        """A multi-line string whose inner lines look like code or comments."""
        quote = self.rng.choice(['"""', "'''"])
        prefix = self.rng.choice(["", "f", "r"])
        inner = self.rng.sample(["def inner(self):", "class Inner:", "# not a comment",
                                 "    # indented not a comment", "", "@decorator",
                                 indent + "def looks_like_a_method(self):", "pass"],
                                self.rng.randint(1, 4))
        return [indent + f"text = {prefix}{quote}"] + inner + [f"{quote}", indent + "return text"]

    def method(self, indent: str, name: str | None = None, in_module: bool = True) -> list[str]:
        """A method's lines; `in_module`, it may end with a comment line and come as a
        property's getter and setter (a client's text is a single def, ending with code)."""
        name = name or self.name("m")
        body = indent + self.unit
        lines = []
        decorator = self.rng.choice([None, None, "@staticmethod", "@classmethod", "@property",
                                     "@functools.lru_cache(\n" + indent + "    maxsize=None)"])
        args = "()" if decorator == "@staticmethod" else "(cls)" if decorator == "@classmethod" \
            else "(self)"
        if decorator:
            lines.append(indent + decorator)
        keyword = "async def" if self.chance(0.15) else "def"
        lines.append(f"{indent}{keyword} {name}{args}:" + (" # trailing" if self.chance(0.2) else ""))
        if self.chance(0.3):
            lines.append(body + '"""Method doc."""')
        kind = self.rng.randrange(7)
        if kind == 0:
            lines += self.string_body(body)
        elif kind == 1:
            lines += [body + "x = (1,", body + "     2)  # inside", body + "return x"]
        elif kind == 2:
            lines += [body + "if x:", body + self.unit + "pass", "", body + "# body comment",
                      body + "return 1"]
        elif kind == 3:
            lines += [body + "def inner():", body + self.unit + "return 'é𝄞'", body + "return inner"]
        elif kind == 4:
            lines += [body + "..."]
        elif kind == 5:
            lines += [body + "a = 1; b = 2", "# at column 0, inside the body", body + "return a"]
        else:
            lines += [body + "return 1"]
        if in_module and self.chance(0.15):
            lines.append(body + "# trailing body comment")
        if in_module and decorator == "@property" and self.chance(0.5):
            lines += [""] + [indent + f"@{name}.setter",
                             f"{indent}def {name}(self, value):", body + "pass"]
        return lines

    def klass(self, name: str, above: bool = True) -> list[str]:
        lines = []
        if above and self.chance(0.3):
            lines.append(self.comment(""))
        if self.chance(0.3):
            lines.append(self.rng.choice(["@dataclass", "@register(\n    'x')"]))
        header = self.rng.choice([f"class {name}:", f"class {name}(Base):",
                                  f"class {name}(\n    Base,\n):", f"class {name}(object):  # c"])
        lines.append(header)
        indent = self.unit
        items = []
        if self.chance(0.5):
            items.append([indent + self.rng.choice([
                '"""Class doc."""', '"""Class doc.\n\n' + indent + 'More.\n' + indent + '"""',
                "'single'", f'"""Doc."""; {self.name("a")} = 1', '"""Doc é𝄞."""  # about',
                '(\n' + indent + '"Paren doc."\n' + indent + ')', '"""Doc."""  ;  pass'])])
        for _ in range(self.rng.randint(0, 5)):
            kind = self.rng.randrange(11)
            if kind < 6:
                items.append(self.method(indent))
            elif kind == 6:
                items.append([indent + self.rng.choice(
                    [f"{self.name('a')} = 1", f"{self.name('a')}: int = 2  # c",
                     f"{self.name('a')} = 1; {self.name('a')} = 2",
                     f"{self.name('a')} = [\n{indent}    1,\n{indent}]"])])
            elif kind == 7:
                items.append([f"{indent}class {self.name('N')}:", f"{indent}{self.unit}pass"])
            elif kind == 8:
                items.append([self.comment(self.rng.choice([indent, indent, "", indent + self.unit]))])
            elif kind == 9:
                items.append([indent + "if TYPE_CHECKING:"] + self.method(indent + self.unit))
            else:
                items.append([indent + "pass"])
        if all(line.strip().startswith("#") for item in items for line in item):
            items.append([indent + "pass"])
        for number, item in enumerate(items):
            if number and self.chance(0.2):
                item = [self.comment(indent)] + item
            lines += (self.blanks() if number else []) + item
        return lines

    def module(self) -> str:
        lines = []
        if self.chance(0.2):
            lines.append("#!/usr/bin/env python3")
        if self.chance(0.3):
            lines.append("# -*- coding: utf-8 -*-")
        if self.chance(0.4):
            lines.append('"""Module doc."""')
        if self.chance(0.6):
            lines += self.blanks() + ["import functools", "from x import Base, dataclass"]
        for _ in range(self.rng.randint(1, 4)):
            name = self.name("C")
            block = self.klass(name) if self.chance(0.93) else [self.rng.choice(
                [f"class {name}: pass", f"class {name}(\n    Base): x = 1"])]
            lines += (self.rng.choice([[], [""], ["", ""], ["", "", ""]]) if lines else []) + block
            if self.chance(0.2):
                lines += [""] + [self.comment("")]
        if self.chance(0.3):
            lines += ["", "", "def helper():", self.unit + "return 1"]
        if self.chance(0.3):
            lines += ["", "", 'if __name__ == "__main__":', self.unit + "helper()"]
        if self.chance(0.15):
            lines += ["# end of module"]
        nl = self.rng.choice(["\n", "\n", "\n", "\n", "\n", "\r\n", "\r\n", "\r"])
        text = nl.join("\n".join(lines).split("\n"))
        if not self.chance(0.15):
            text += nl
        return text


def assert_same(got: str, want: str):
    if got != want:
        diff = difflib.unified_diff(splice.lines_of(want), splice.lines_of(got), "want", "got")
        raise AssertionError("".join(repr(line)[1:-1] + "\n" for line in diff))


# -- what must hold --------------------------------------------------------------------

def parse(source: str) -> ast.Module:
    return ast.parse(source)


def whole_lines(source: str, node: ast.AST) -> str:
    lines = splice.lines_of(source)
    return "".join(lines[splice.first_line(node) - 1:node.end_lineno])


def own_end(source: str, node: ast.stmt) -> int:
    """The node's last line, and the comment lines below it indented deeper than it
    (blank lines between them too): a def's body may end in comments that are its own."""
    lines = splice.lines_of(source)
    depth, end = len(splice.indent_of(lines[node.lineno - 1])), node.end_lineno
    for number in range(node.end_lineno + 1, len(lines) + 1):
        line = lines[number - 1]
        if line.strip() and not (line.lstrip().startswith("#")
                                 and len(splice.indent_of(line)) > depth):
            break
        end = number if line.strip() else end
    return end


def node_text(source: str, node: ast.stmt) -> str:
    """A statement's own text: whole lines for a def or class (decorators included),
    the exact segment for a simple statement (it may share its line)."""
    if isinstance(node, splice.FunctionNode + (ast.ClassDef,)):
        return whole_lines(source, node)
    return ast.get_source_segment(source, node)


def comments(source: str, first: int = 1, last: int | None = None) -> Counter:
    """The comments (tokens, not look-alike lines in strings) starting on lines first..last."""
    found = Counter()
    for token in tokenize.generate_tokens(io.StringIO(source, newline="").readline):
        if token.type == tokenize.COMMENT and first <= token.start[0] <= (last or token.start[0]):
            found[token.string] += 1
    return found


def endings(source: str) -> set[str]:
    return {line[len(line.rstrip("\r\n")):] for line in splice.lines_of(source)} - {""}


def header_lines(source: str) -> list[str]:
    """The shebang and coding lines, in place."""
    lines = splice.lines_of(source)[:2]
    return [line.rstrip("\r\n") for n, line in enumerate(lines, 1)
            if (n == 1 and line.startswith("#!")) or splice.CODING_DECLARATION.match(line)]


def class_items(source: str, name: str) -> list[tuple[str, str]]:
    node = splice.top_level_class(parse(source), name)
    return [(getattr(item, "name", ""), node_text(source, item).rstrip("\r\n"))
            for item in node.body]


def top_items(source: str, skip: str | None = None) -> str:
    """The module's statements but the class `skip`, each without its last line ending
    (the last one gains one when something is appended after it)."""
    return "\n".join(node_text(source, node).rstrip("\r\n") for node in parse(source).body
                     if not (isinstance(node, ast.ClassDef) and node.name == skip))


def without_trailing_comments(text: str) -> str:
    """`text` up to its last code line: the AST ends a block at its last statement."""
    lines = text.rstrip("\r\n").splitlines()
    while lines and (not lines[-1].strip() or lines[-1].strip().startswith("#")):
        lines.pop()
    return "\n".join(lines)


def check_common(before: str, after: str):
    parse(after)
    compile(after, "m.py", "exec")
    assert endings(after) <= endings(before) or not endings(before), "a new line ending"
    assert header_lines(after) == header_lines(before)


def check_comments(before: str, after: str, may_go: Counter, added: str = ""):
    """No comment lost but those that `may_go`, none made up but those `added` brings."""
    lost = comments(before) - may_go - comments(after)
    assert not lost, f"lost comments {lost}"
    made = comments(after) - comments(before) - comments(added)
    assert not made, f"new comments {made}"


def comment_lines(source: str) -> set[int]:
    """Lines holding nothing but a comment (tokens: no look-alike line in a string)."""
    return {token.start[0]
            for token in tokenize.generate_tokens(io.StringIO(source, newline="").readline)
            if token.type == tokenize.COMMENT and not token.line[:token.start[1]].strip()}


def comments_going_with(source: str, node: ast.stmt) -> Counter:
    """The comments a removal may take: the node's own (those ending its body too), and
    the comment lines right above it at its indentation (but not a shebang or coding line)."""
    lines, own = splice.lines_of(source), comment_lines(source)
    indent = splice.indent_of(lines[node.lineno - 1])
    start = splice.first_line(node)
    header = {1} if lines[0].startswith("#!") else set()
    header |= {n for n in (1, 2)
               if n <= len(lines) and splice.CODING_DECLARATION.match(lines[n - 1])}
    while (start - 1 in own and splice.indent_of(lines[start - 2]) == indent
           and start - 1 not in header):
        start -= 1
    if set(range(1, start)) <= header:     # comments that open the file are the module's
        start = splice.first_line(node)
    return comments(source, start, own_end(source, node))


# -- the operations ---------------------------------------------------------------------

def assert_written_as(got: str, client_text: str, unit: str):
    """`got` (a def's or class's lines, as written into the module) is the client's text
    as sent, or, where that text indents with a character the class's or module's
    indentation `unit` lacks (tabs against spaces), the same code with every statement's
    line indented by `unit`'s characters alone (a blank line's whitespace aside)."""
    want = without_trailing_comments(lf(splice.dedent_code(client_text)))
    # A blank line where the module had one keeps the module's whitespace (as_written).
    got = "\n".join(splice.comparable(splice.lines_of(lf(got)))).rstrip("\n")
    inside = splice.string_lines(want)
    used = {char for number, line in enumerate(splice.lines_of(want), 1)
            if number not in inside and line.strip() for char in line[:len(line) - len(line.lstrip())]}
    if not unit or used <= set(unit):
        assert_same(got, want)
        return
    assert ast.dump(parse(got)) == ast.dump(parse(want)), (got, want)
    statements = {node.lineno for node in ast.walk(parse(got)) if isinstance(node, ast.stmt)}
    for number, line in enumerate(splice.lines_of(got), 1):
        if number in statements:
            assert set(line[:len(line) - len(line.lstrip())]) <= set(unit), (unit, got)


def class_unit(source: str, name: str) -> str:
    return splice._body_indent(splice.lines_of(source), splice.top_level_class(parse(source), name))


def new_method_text(gen: Gen, name: str) -> str:
    """A client's text: its own indentation unit and newlines, maybe indented as a whole."""
    unit, gen.unit = gen.unit, client_unit(gen)
    lines = gen.method("", name, in_module=False)
    gen.unit = unit
    indent = gen.rng.choice(["", "", "    "])
    text = "\n".join(indent + line if line else line for line in lines)
    return text.replace("\n", gen.rng.choice(["\n", "\n", "\r\n"])) + gen.rng.choice(["", "\n"])


def client_unit(gen: Gen) -> str:
    return gen.rng.choice(["    ", "  ", "\t"])


def client_class_text(gen: Gen, name: str) -> str:
    """A client's class statement, in its own indentation unit."""
    unit, gen.unit = gen.unit, client_unit(gen) if gen.chance(0.5) else gen.unit
    # (A client's text ends at its last statement: comments after it would outlive a removal.)
    text = without_trailing_comments("\n".join(gen.klass(name, above=False)))
    gen.unit = unit
    return text


def editable(source: str, name: str) -> bool:
    """Whether the class body has lines of its own (not `class C: x = 1`)."""
    node = splice.top_level_class(parse(source), name)
    line = splice.lines_of(source)[node.body[0].lineno - 1].encode()
    return not line[:node.body[0].col_offset].strip()


def without_blank_end(text: str) -> str:
    lines = splice.lines_of(text)
    while len(lines) > 1 and not lines[-1].strip():
        lines.pop()
    return "".join(lines)


def lf(text: str) -> str:
    return "".join(line.rstrip("\r\n") + "\n" if line.endswith(("\r", "\n")) else line
                   for line in splice.lines_of(text))


def step(gen: Gen, source: str) -> str:
    """One random edit of `source`, checked; returns the edited source."""
    rng = gen.rng
    tree = parse(source)
    present = [c.name for c in splice.top_level_classes(tree)]
    op = rng.choice(["put_method", "put_method", "remove_method", "remove_method",
                     "put_class", "remove_class", "set_class_docstring", "redefine_class"])
    if not present:
        op = "put_class"
    name = rng.choice(present) if present else gen.name("C")
    refusals = {"put_method": (splice.put_method, "def m(self):\n    pass\n"),
                "remove_method": (splice.remove_method, "m"),
                "set_class_docstring": (splice.set_class_docstring, "Doc.")}
    if op in refusals and not editable(source, name):
        function, argument = refusals[op]
        with pytest.raises(splice.SpliceError, match="on one line with its header"):
            function(source, name, argument)
        return source
    if op == "put_method":
        return do_put_method(gen, source, name)
    if op == "remove_method":
        return do_remove_method(gen, source, name)
    if op == "put_class":
        return do_put_class(gen, source, rng.choice([name, gen.name("C")]))
    if op == "redefine_class":
        return do_redefine_class(gen, source, name)
    if op == "remove_class":
        return do_remove_class(source, name)
    return do_set_docstring(gen, source, name)


def do_put_method(gen: Gen, source: str, class_name: str) -> str:
    methods = [m.name for m in splice.methods_of(splice.top_level_class(parse(source), class_name))]
    method = gen.rng.choice(methods) if methods and gen.chance(0.5) else gen.name("m")
    text = new_method_text(gen, method)
    after, replaced = splice.put_method(source, class_name, text)
    check_common(before=source, after=after)
    assert replaced == (method in methods)
    before_items = [item for item in class_items(source, class_name) if item[0] != method]
    after_items = [item for item in class_items(after, class_name) if item[0] != method]
    placeholders = [item for item in before_items if item[1].strip() in ("pass", "...")]
    # Only a placeholder that was the whole body is filled; beside anything it stays.
    filled = [item for item in placeholders if item not in after_items]
    assert not filled or before_items == filled, (before_items, after_items)
    assert after_items == [item for item in before_items if item not in filled], (before_items, after_items)
    assert top_items(after, class_name) == top_items(source, class_name)
    classdef = splice.top_level_class(parse(after), class_name)
    (node,) = splice.method_nodes(classdef, method)
    assert_written_as(splice.segment(after, node), text, class_unit(after, class_name))
    replaced_nodes = splice.method_nodes(
        splice.top_level_class(parse(source), class_name), method) or [
        node for node in splice.top_level_class(parse(source), class_name).body
        if splice._is_placeholder(node)][:1]
    check_comments(source, after, sum((comments(source, splice.first_line(node), own_end(source, node))
                                       for node in replaced_nodes), Counter()), text)
    if not replaced and not filled:   # a filled placeholder is replaced for good
        assert_same(splice.remove_method(after, class_name, method), source)
    return after


def do_remove_method(gen: Gen, source: str, class_name: str) -> str:
    classdef = splice.top_level_class(parse(source), class_name)
    methods = [m.name for m in splice.methods_of(classdef)]
    if not methods:
        with pytest.raises(splice.SpliceError):
            splice.remove_method(source, class_name, "absent")
        return source
    method = gen.rng.choice(methods)
    after = splice.remove_method(source, class_name, method)
    check_common(before=source, after=after)
    before_items = [item for item in class_items(source, class_name) if item[0] != method]
    after_items = class_items(after, class_name)
    assert after_items == before_items or (
        not before_items and after_items[0][1].strip() == "pass"), (before_items, after_items)
    assert top_items(after, class_name) == top_items(source, class_name)
    # Only the removed method's own lines and the comments right above it may go.
    check_comments(source, after, sum((comments_going_with(source, node)
                                       for node in splice.method_nodes(classdef, method)),
                                      Counter()))
    return after


def do_put_class(gen: Gen, source: str, class_name: str) -> str:
    text = client_class_text(gen, class_name)
    existing = splice.top_level_class(parse(source), class_name)
    after = splice.put_class(source, class_name, text)
    check_common(before=source, after=after)
    assert_same(top_items(after, class_name), top_items(source, class_name))
    node = splice.top_level_class(parse(after), class_name)
    assert_written_as(whole_lines(after, node), text, splice.class_indent_unit(source, class_name))
    check_comments(source, after, Counter() if existing is None else comments(
        source, splice.first_line(existing), own_end(source, existing)), text)
    if existing is None:    # (blank lines that ended the module stay gone: PEP 8's W391)
        assert_same(splice.remove_class(after, class_name), without_blank_end(source))
    return after


def do_redefine_class(gen: Gen, source: str, class_name: str) -> str:
    """compile_class_definition's splice: a client's class text (any newlines, any
    indentation), the old methods it does not define carried over by segment."""
    old = splice.top_level_class(parse(source), class_name)
    text = client_class_text(gen, class_name).replace("\n", gen.rng.choice(["\n", "\r\n"]))
    defined = {m.name for m in splice.methods_of(ast.parse(text).body[0])}
    carried = [m for m in splice.methods_of(old) if m.name not in defined]
    after = splice.put_class(source, class_name, splice.with_methods(text, class_name, source, carried))
    check_common(before=source, after=after)
    assert_same(top_items(after, class_name), top_items(source, class_name))
    new = splice.top_level_class(parse(after), class_name)
    assert_same("".join(lf(splice.segment(after, m)).rstrip("\n") + "\n"
                        for m in splice.methods_of(new) if m.name not in defined),
                "".join(lf(splice.segment(source, m)).rstrip("\n") + "\n" for m in carried))
    return after


def do_remove_class(source: str, class_name: str) -> str:
    tree = parse(source)
    node = splice.top_level_class(tree, class_name)
    after = splice.remove_class(source, class_name)
    check_common(before=source, after=after)
    others = [node_text(source, n).rstrip("\r\n") for n in tree.body if n is not node]
    assert [node_text(after, n).rstrip("\r\n") for n in parse(after).body] == others
    check_comments(source, after, comments_going_with(source, node))
    return after


def do_set_docstring(gen: Gen, source: str, class_name: str) -> str:
    comment = gen.rng.choice(["", "", "Doc.", "Two\nlines.", 'say "hi"', "back\\slash",
                              "tab\there", "é𝄞", "cr\rin it"])
    classdef = splice.top_level_class(parse(source), class_name)
    current = splice.docstring_node(classdef)
    after = splice.set_class_docstring(source, class_name, comment)
    check_common(before=source, after=after)
    new = splice.top_level_class(parse(after), class_name)
    assert (ast.get_docstring(new, clean=False) or "") == comment
    before_items = [item for item in class_items(source, class_name)
                    if current is None or item[1] != node_text(source, current)]
    after_items = class_items(after, class_name)
    if comment:
        after_items = after_items[1:]
    assert after_items == before_items or (not before_items and after_items[0][1].strip() == "pass")
    assert top_items(after, class_name) == top_items(source, class_name)
    # A comment on the docstring's own line goes with it when it is removed.
    check_comments(source, after, comments(source, current.lineno, current.end_lineno)
                   if current is not None and not comment else Counter())
    if current is None and comment:
        assert_same(splice.set_class_docstring(after, class_name, ""), source)
    return after


def run_case(seed: int):
    gen = Gen(random.Random(seed))
    source = gen.module()
    for _ in range(STEPS):
        source = step(gen, source)


@pytest.mark.parametrize("seed", SEEDS)
def test_random_edits_change_only_what_they_target(seed):
    run_case(seed)


if __name__ == "__main__":     # many more seeds locally: python this_file.py FIRST COUNT
    sweep_seeds(run_case, sys.argv, __file__, detail=200)
