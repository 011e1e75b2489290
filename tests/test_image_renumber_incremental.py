"""def_spans from the spans of the module's text before an edit (renumber.spans_of with
`earlier`): the top-level statements the edit left are not walked again, and the answer
is always the one a walk of the whole new tree gives."""

import ast
import random

from gsmcpd.image.renumber import def_spans, spans_of

PIECES = [
    "class K{n}:\n    def m(self):\n        return [lambda: i for i in range(2)]\n",
    "@deco\ndef f{n}(a=lambda: 0):\n    def inner():\n        return 1\n    return inner\n",
    "a{n} = 1; g{n} = lambda: {n}\n",
    "if True:\n    def in_if{n}():\n        pass\n",
    "class P{n}:\n    @property\n    def v(self):\n        return 1\n\n    @v.setter\n    def v(self, x):\n        pass\n",
    "x{n} = [k for k in range({n})]\n",
    "\n",
    "# a comment\n",
]


def module(rng):
    return "".join(rng.choice(PIECES).format(n=n) for n in range(rng.randint(1, 12)))


def edited(rng, text):
    """`text` with a few lines inserted, removed or replaced somewhere; None if it no
    longer parses."""
    lines = text.splitlines(True)
    at = rng.randint(0, len(lines))
    removed = rng.randint(0, min(3, len(lines) - at))
    added = [rng.choice(["    def extra(self):\n        pass\n", "    y = 2\n", "z = 3\n", "\n",
                         rng.choice(PIECES).format(n=99)]) for _ in range(rng.randint(0, 2))]
    new = "".join(lines[:at] + added + lines[at + removed:])
    try:
        ast.parse(new)
    except SyntaxError:
        return None
    return new


def test_spans_from_an_earlier_text_are_those_of_a_whole_walk():
    rng = random.Random(20261201)
    checked = 0
    for _ in range(150):
        text = module(rng)
        earlier = (text, spans_of(ast.parse(text), text))
        for _ in range(6):   # a chain of edits, each from the last one's spans
            new = edited(rng, earlier[0])
            if new is None:
                continue
            tree = ast.parse(new)
            spans = spans_of(tree, new, earlier)
            assert spans.defs == def_spans(tree), (earlier[0], new)
            earlier, checked = (new, spans), checked + 1
    assert checked > 300


def test_the_statements_an_edit_left_are_not_walked_again():
    old = "class A:\n    def a(self):\n        pass\n\n\nclass B:\n    def b(self):\n        pass\n\n\nclass C:\n    def c(self):\n        pass\n"
    new = old.replace("    def b(self):\n", "    def b0(self):\n        pass\n\n    def b(self):\n")
    before = spans_of(ast.parse(old), old)
    after = spans_of(ast.parse(new), new, (old, before))
    assert after.by_statement[(1, 0, 3, 12)] is before.by_statement[(1, 0, 3, 12)]   # A, above the edit
    assert after.by_statement[(14, 0, 16, 12)] == [("C", (14, 14, 16)), ("C.c", (15, 15, 16))]   # C, moved
    assert after.defs == def_spans(ast.parse(new))


def test_a_statement_that_ends_elsewhere_after_the_edit_is_walked_again():
    # Line 4 is new, so A now ends on line 3: all its lines are the old text's, its span is not.
    old = "class A:\n    def a(self):\n        pass\n    def b(self):\n        pass\n"
    new = "class A:\n    def a(self):\n        pass\nb = lambda: 0\n"
    after = spans_of(ast.parse(new), new, (old, spans_of(ast.parse(old), old)))
    assert after.defs == def_spans(ast.parse(new)) == {"A": [(1, 1, 3)], "A.a": [(2, 2, 3)], "<lambda>": [(4, 4, 4)]}
