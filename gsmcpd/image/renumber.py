"""Keeping live code's line numbers true to its module's text as an edit moves them.

A mutation tool splices its change into the module's text and updates only the objects
it changed; the code of every def the edit moved (those below an added method) kept its
old line numbers, so a traceback quoted another line and inspect.getsource gave another
def's source. Such code is renumbered to where its def now is.
"""

from __future__ import annotations

import ast
import difflib
from types import CodeType, FunctionType, ModuleType

from gsmcpd.image.live import functions_in


def renumber_moved_code(module: ModuleType, filename: str, old_text: str, new_text: str,
                        new_tree: ast.Module) -> None:
    """Point the live code of `module` that `old_text` gave its numbers at the lines its
    def moved to in `new_text` (whose tree is `new_tree`); code compiled from `new_text`
    already is. Code is moved only onto a def of its own qualname."""
    new_defs = def_lines(new_tree)
    moved = moved_lines(old_text, new_text)
    for function in live_functions(module, filename):
        code = function.__code__
        first, name = code.co_firstlineno, code.co_qualname
        if name in new_defs.get(first, ()):
            continue
        to = moved.get(first)
        if to is not None and name in new_defs.get(to, ()):
            function.__code__ = shifted(code, to - first)


def def_lines(tree: ast.Module) -> dict[int, set[str]]:
    """Line → qualnames of the functions whose code starts there (a decorated def at its
    first decorator, as co_firstlineno counts it). A loop, not recursion: a module nested
    as deeply as Python compiles (thousands of levels) is walked too."""
    found: dict[int, set[str]] = {}
    stack: list[tuple[ast.AST, str]] = [(tree, "")]
    while stack:
        node, prefix = stack.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                stack.append((child, prefix + child.name + "."))
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                qualname = prefix + child.name
                first = min([decorator.lineno for decorator in child.decorator_list] + [child.lineno])
                found.setdefault(first, set()).add(qualname)
                stack.append((child, qualname + ".<locals>."))
            elif isinstance(child, ast.Lambda):
                found.setdefault(child.lineno, set()).add(prefix + "<lambda>")
                stack.append((child, prefix + "<lambda>.<locals>."))
            else:
                stack.append((child, prefix))
    return found


def moved_lines(old_text: str, new_text: str) -> dict[int, int]:
    """Old line number → new line number, for the lines the edit left as they were."""
    old, new = old_text.splitlines(), new_text.splitlines()
    # The lines around the edit are matched as they stand, so only what it changed is diffed.
    head = 0
    while head < min(len(old), len(new)) and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < min(len(old), len(new)) - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    moved = {line: line for line in range(1, head + 1)}
    moved.update({len(old) - k: len(new) - k for k in range(tail)})
    matcher = difflib.SequenceMatcher(None, old[head:len(old) - tail], new[head:len(new) - tail],
                                      autojunk=False)
    for a, b, size in matcher.get_matching_blocks():
        moved.update({head + a + 1 + i: head + b + 1 + i for i in range(size)})
    return moved


def live_functions(module: ModuleType, filename: str) -> list[FunctionType]:
    """The functions the module's namespace and its own classes (nested ones too) hold,
    whose code was compiled from `filename`."""
    found: dict[int, FunctionType] = {}
    seen: set[int] = set()

    def visit(value) -> None:
        try:
            is_class = isinstance(value, type)
            functions = () if is_class else list(functions_in(value))
        except Exception:   # a __class__ property of the object's own ran and raised
            return
        if is_class:
            if id(value) not in seen and vars(value).get("__module__") == module.__name__:
                seen.add(id(value))
                for member in list(vars(value).values()):
                    visit(member)
            return
        for function in functions:
            if function.__code__.co_filename == filename:
                found[id(function)] = function

    for value in list(vars(module).values()):
        visit(value)
    return list(found.values())


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
