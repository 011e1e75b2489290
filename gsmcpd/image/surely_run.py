"""surely_run: the statements of a module that surely run as it is imported, a TypeError
one of them raises going through, uncaught: what tells the modules whose import fails
with an import of theirs that raises it (View.imports_as_it_runs). A TypeError is what
the dataclass decorator raises (frozen or field order), what alone leaves a module failing
there; an exception handler or `suppress(...)` is judged by the classes it names."""

from __future__ import annotations

import ast
import builtins

from gsmcpd.image import splice

FAILURE = TypeError


def surely_run(body: list[ast.stmt], guarded: bool = False, failure: type[BaseException] = FAILURE):
    """The statements of `body` that surely run, those holding others included: at its
    top level, in a class body, a `with` block, a `try: ... finally:`, or a `try` or
    `with suppress(...)` whose handlers cannot catch `failure`; not in a def, an `if`
    (`if TYPE_CHECKING:`) but for an import written alike in each of its branches
    (_in_every_branch), an `else:` or handler of a `try`, or a block that catches it.
    `guarded`: `body` is under a handler catching something else (`except ImportError:`),
    where a statement raising that skips the rest: its first statement alone is sure."""
    for node in body[:1] if guarded else body:
        yield node
        if isinstance(node, ast.ClassDef):
            yield from surely_run(node.body, guarded, failure)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            caught = _suppressed(node)
            if not any(catches(each, failure) for each in caught):
                yield from surely_run(node.body, guarded or bool(caught), failure)
        elif isinstance(node, (ast.Try, ast.TryStar)):
            yield from surely_run(node.finalbody, guarded, failure)
            if not any(catches(handler.type, failure) for handler in node.handlers):
                yield from surely_run(node.body, guarded or bool(node.handlers), failure)
        elif isinstance(node, ast.If):
            yield from _in_every_branch(node, guarded, failure)


def _in_every_branch(node: ast.If, guarded: bool, failure: type[BaseException]):
    """The import statements that surely run in the `if`'s body and in its `else:` (an
    `elif` is an `if` there), each written alike in both (`from m import A`, aliases
    aside): whichever branch runs, it runs one of them. None without an `else:`."""
    if not node.orelse:
        return
    def imports(branch):
        return {_import_key(statement): statement for statement in surely_run(branch, guarded, failure)
                if isinstance(statement, (ast.Import, ast.ImportFrom))}
    body, orelse = imports(node.body), imports(node.orelse)
    yield from (statement for key, statement in body.items() if key in orelse)


def _import_key(node: ast.Import | ast.ImportFrom) -> tuple:
    """What an import statement imports, its aliases aside."""
    names = tuple(sorted(alias.name for alias in node.names))
    return (names,) if isinstance(node, ast.Import) else (node.module, node.level, names)


def catches(caught: ast.expr | None, failure: type[BaseException] = FAILURE) -> bool:
    """Whether an `except` naming `caught` (None: a bare `except:`; a tuple) may catch
    `failure`: a builtin exception class (or `builtins.X`) is judged as Python does
    (TypeError, Exception and BaseException catch it, ImportError does not); any other
    name or expression may be bound to one that does (`errors = (TypeError,)`), and is
    taken to."""
    if caught is None:
        return True
    if isinstance(caught, ast.Tuple):
        return any(catches(each, failure) for each in caught.elts)
    names = splice.dotted_names(caught)
    if names is not None and names[:-1] in ([], ["builtins"]):
        known = getattr(builtins, names[-1], None)
        if isinstance(known, type) and issubclass(known, BaseException):
            return issubclass(failure, known)
    return True


def _suppressed(node: ast.With | ast.AsyncWith) -> list[ast.expr | None]:
    """What the `with`'s context managers written `suppress(...)` or
    `contextlib.suppress(...)` catch, each as an `except` would name it (None, caught as
    by a bare `except:`, for a starred or keyword argument: unknown); none when none is
    so written. Told by the name as written; any other `with` (a lock, an open file,
    `warnings.catch_warnings()`) is taken to let an exception through, as nothing short
    of running its `__exit__` tells one that swallows it."""
    caught = []
    for item in node.items:
        manager = item.context_expr
        names = splice.dotted_names(manager.func if isinstance(manager, ast.Call) else manager)
        if names not in (["suppress"], ["contextlib", "suppress"]):
            continue
        if not isinstance(manager, ast.Call) or manager.keywords:
            caught.append(None)
        else:
            caught += [None if isinstance(argument, ast.Starred) else argument for argument in manager.args]
    return caught
