"""One parse of a module text for all the checks of one edit.

A mutation tool's checks (splice, live, overlay, the view's own tree) each start from a
module's text, and parsed it anew: a compile_method in a 20,000-line module parsed it a
dozen times, some 0.2 s each. The trees are only read, never changed, so the same text
can share one.

The cyclic collector is paused over each parse: a tree holds no cycle, but the collections
its nodes' allocations set off walk every tree parsed before, so a session's first
image-wide call (every module parsed) spent two thirds of its time in them.
"""

from __future__ import annotations

import ast
from collections import OrderedDict

from gsmcpd.wire.jsonrpc import collector_paused

# An edit parses the module's old text and its new one; a few more texts are kept so
# that the next call finds them, few enough that a big module's trees are not held long.
KEPT = 4
# Smaller texts (a def, a class statement) parse in microseconds: not worth holding.
SMALLEST_KEPT = 10_000

_trees: OrderedDict[str, ast.Module] = OrderedDict()


def parse(source: str) -> ast.Module:
    """ast.parse(source), the same tree for the same text while it is kept; raises as
    ast.parse does (a failure is not kept). The tree must not be changed by the caller."""
    if len(source) < SMALLEST_KEPT:
        return _parsed(source)
    tree = _trees.get(source)
    if tree is not None:
        _trees.move_to_end(source)
        return tree
    tree = _parsed(source)
    _trees[source] = tree
    while len(_trees) > KEPT:
        _trees.popitem(last=False)
    return tree


def _parsed(source: str) -> ast.Module:
    with collector_paused():
        return ast.parse(source)


def forget() -> None:
    """Hold no tree (for a test, or a caller done with big texts)."""
    _trees.clear()
