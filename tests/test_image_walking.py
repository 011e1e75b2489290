"""gsmcpd.image.walking: the walks search makes over every def of the image find what
ast.walk finds (but the expression contexts and operators, which hold nothing), and
every statement, however deep in blocks."""

import ast
import sys
from pathlib import Path

import pytest

import gsmcpd
from gsmcpd.image import walking
from test_tools_support import views, write_image  # noqa: F401  (fixtures)

LEAVES = (ast.expr_context, ast.operator, ast.boolop, ast.unaryop, ast.cmpop)

# What the project's own sources may lack: every kind of block, and fields holding
# lists of str (Global.names, MatchClass.kwd_attrs) or None (Dict.keys for `**`).
SAMPLE = '''\
import os, sys as system
from . import sibling


@decorate
async def run(a, /, b=lambda: call(), *args, c: int = 1, **kwargs) -> "T":
    global G
    async with lock() as held, other():
        async for x in source():
            y = {**mapping, "k": not x, 1: -x}
            z = [i async for i in gen() if i < x <= 2 or i is not None]
    try:
        from deep.inside import thing
    except* ValueError as group:
        import handled
    finally:
        f"{value!r:>{width}}"
    match subject:
        case Point(x=0, y=yy) | {"key": [1, *rest]} if (w := guard()):
            import in_case
        case _:
            pass
    while True:
        def inner():
            nonlocal y
            class Local(Base, metaclass=Meta):
                import in_class
        break
    else:
        del a[1:2, ...]
    return (yield from other) @ matrix
'''


def sources():
    """The sample and every module of the project: Python as it is written."""
    yield SAMPLE
    for path in sorted(Path(gsmcpd.__file__).parent.rglob("*.py")):
        yield path.read_text()


def test_walk_finds_every_node_ast_walk_does_but_contexts_and_operators():
    for source in sources():
        tree = ast.parse(source)
        expected = [node for node in ast.walk(tree) if not isinstance(node, LEAVES)]
        found = list(walking.walk(tree))
        assert len(found) == len(expected) and {id(node) for node in found} == {id(node) for node in expected}


def test_walk_of_a_def_stays_in_it():
    tree = ast.parse(SAMPLE)
    run = tree.body[2]
    assert {id(node) for node in walking.walk(run)} == {
        id(node) for node in ast.walk(run) if not isinstance(node, LEAVES)}


def test_walk_goes_deeper_than_the_recursion_limit():
    source = "x = " + "-" * (sys.getrecursionlimit() + 10) + "1"
    tree = ast.parse(source)
    assert sum(isinstance(node, ast.UnaryOp) for node in walking.walk(tree)) == sys.getrecursionlimit() + 10


def test_statements_in_finds_every_statement_at_any_depth():
    tree = ast.parse(SAMPLE)
    expected = {id(node) for node in ast.walk(tree) if isinstance(node, ast.stmt)}
    found = list(walking.statements_in(tree.body))
    assert len(found) == len(expected) and {id(node) for node in found} == expected
    imports = {alias.name for node in found if isinstance(node, (ast.Import, ast.ImportFrom))
               for alias in node.names}
    assert imports == {"os", "sys", "sibling", "thing", "handled", "in_case", "in_class"}


def test_the_views_import_statements_are_found_once_per_text_wherever_written(tmp_path, views, monkeypatch):
    image = write_image(tmp_path / "image", {"pkg/__init__.py": "", "pkg/mod.py": SAMPLE,
                                             "pkg/broken.py": "def broken(:\n"})
    view = views(image, "a", install=False)
    walked = []
    real = walking.statements_in
    monkeypatch.setattr(walking, "statements_in", lambda body: walked.append(1) or real(body))
    statements = view.import_statements("pkg.mod")
    assert sorted(alias.name for node in statements for alias in node.names) == [
        "handled", "in_case", "in_class", "os", "sibling", "sys", "thing"]
    assert view.import_statements("pkg.mod") is statements
    # The module's imports, as a refresh and a commit ask them, read the same statements: one walk.
    assert {"os", "sys", "pkg.sibling", "deep.inside", "handled", "in_case"} <= view._imports("pkg.mod")
    assert len(walked) == 1
    assert view.import_statements("pkg.broken") == [] and view._imports("pkg.broken") == frozenset()

    view.set_source("pkg.mod", "import json\n", live=False)
    assert [alias.name for node in view.import_statements("pkg.mod") for alias in node.names] == ["json"]
