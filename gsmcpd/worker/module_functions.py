"""A dictionary's module-level functions, which the method tools take as its methods:
className the dictionary (an image module), selector the function, as a GemStone
dictionary holds globals. What browsing and mutation share of them: finding their defs,
the guard, and what makes a name no function a tool can change."""

from __future__ import annotations

import ast
import builtins
import types

from gsmcpd.image import catalog, own, splice
from gsmcpd.image.view import KERNEL
from gsmcpd.worker.toolset import ToolError, did_you_mean


def refuse_meta(module: str, arguments: dict) -> None:
    if arguments.get("meta") is not None:
        raise ToolError("invalidParams", f"meta selects a class's side, and {module} is a dictionary "
                        "(image module): its functions have no class side; omit meta")


def function_source(view, module: str, arguments: dict) -> dict:
    """get_method_source's answer for a module-level function: every top-level def of the
    name (`@overload` signatures and implementation), or the one written in a block."""
    refuse_meta(module, arguments)
    name = catalog.require_selector(arguments["selector"])
    if module == KERNEL:
        raise ToolError("notFound", _kernel_no_source(name))
    tree = _tree(view, module)
    nodes, note = splice.function_nodes(tree, name), None
    if not nodes:
        guarded = _guarded(tree, name)
        nodes = [node for _, node in guarded]
        if guarded:
            note = splice.branch_note(guarded[0][0], "module")
    if not nodes:
        raise ToolError("notFound", _no_function(view, module, tree, name))
    text = splice.segments(view.source(module), nodes)
    structured = {"dictionary": module, "selector": name, "kind": "function", "source": text}
    if note:
        structured["note"] = note
    return {"text": text + (f"\n({note})" if note else ""), "structured": structured}


def _kernel_no_source(name: str) -> str:
    """Why builtins' `name` has no source to show: said of what builtins binds to it, as a
    mistyped name (`lenn`) or a class (`object`) is no kernel function."""
    if name not in vars(builtins):   # not hasattr: that finds the module type's `__class__` too
        return (f"builtins has no {catalog.echoed(name)}"
                + (did_you_mean(name, vars(builtins)) or "; list_dictionary_entries shows its entries"))
    value = vars(builtins)[name]
    if catalog.is_kernel_class(name):
        return (f"builtins.{name} is a kernel class, not a function: to name one of its methods, "
                f"pass className builtins.{name}")
    if not callable(value) or isinstance(value, type):   # a class not listed: `__loader__`
        return f"builtins.{name} is no function ({own.NAME(type(value))}): no source to show"
    return f"builtins.{name} is a kernel function: no Python source"


def mutable_dictionary(view, module: str) -> types.ModuleType | None:
    """The guard for an edit of the dictionary's functions: an image module the view owns
    and can parse. Its live module (catalog.live_module), or None when it does not import (a
    source-only edit)."""
    catalog.require_editable(view, module, "builtins is the kernel dictionary: its functions cannot "
                             "be changed; define your own in an image module",
                             f"{module}'s functions cannot be changed")
    return catalog.live_module(view, module)


def refuse_unsure(view, module: str, name: str, live_module: types.ModuleType | None) -> None:
    """Refuse an edit of function `name` where its top-level defs are not all that binds
    the name: a class of it, a def written in a module-level block, another statement
    binding it (`f = cache(f)`, an import); the module binds what runs last. Not when the
    live module (`live_module`, None when it does not import) binds the function its last
    def made, that statement having not run (`try: from _speedups import encode` / `except
    ImportError: pass`, with no _speedups) or handed the function back."""
    tree, shown = view.tree(module), catalog.echoed(name)   # the client's (or its source's), any length
    if any(node.name == name for node in splice.module_level_classes(tree)):
        raise ToolError("refused", f"{module}.{shown} is a class, not a function: "
                        "compile_class_definition and delete_class change it")
    guarded = _guarded(tree, name)
    if guarded:
        block = guarded[0][0]
        raise ToolError("refused", f"{module}.{shown} is written inside the module-level "
                        f"{splice.statement_kind(block)} statement at line {block.lineno}: the "
                        "module has it when that branch runs, and no tool edits a module-level "
                        "statement; edit the module's file in an editor, then refresh")
    binding = _other_binding(tree, name)
    if binding is not None and not _bound_to_its_def(view, module, live_module, name):
        written = splice.statement_line(view.source(module), binding)
        why = ("so a def of it would not be what the module binds" if not _above_its_def(tree, name)
               # The move of a function into a module importing it (`from m import f`): the
               # def would win, but over a binding no tool can take out.
               else "above its def: the def would override that binding, and no tool edits that statement")
        raise ToolError("refused", f"{module}.{shown} is bound by a top-level statement that is no "
                        f"def (line {binding.lineno}: {catalog.quoted(written)}), {why}; name the "
                        "function otherwise, or edit that statement in the module's file, then refresh")


def decorators_run(tree: ast.Module, name: str) -> list[str]:
    """What the decorators of the module's top-level defs of `name` call (`app.route` for
    `@app.route("/x")`), as compiling the function runs them all again. Not an `@overload`
    signature's: typing keeps one entry per signature line, which running it again replaces."""
    return list(dict.fromkeys(
        ast.unparse(decorator.func if isinstance(decorator, ast.Call) else decorator)
        for node in splice.function_nodes(tree, name) if not splice.is_overload(node)
        for decorator in node.decorator_list))


def no_function(view, module: str, name: str) -> ToolError:
    return ToolError("notFound", _no_function(view, module, view.tree(module), name))


def _no_function(view, module: str, tree: ast.Module, name: str) -> str:
    return _not_defined(view, module, tree, name) + _kernel_class_too(module)


def _not_defined(view, module: str, tree: ast.Module, name: str) -> str:
    shown = catalog.echoed(name)   # the client's, any length
    if any(node.name == name for node in splice.module_level_classes(tree)):
        return (f"{module}.{shown} is a class, not a function: to name one of its methods, pass "
                f"className {module}.{shown}")
    binding = _other_binding(tree, name)
    if binding is not None:
        return (f"{module} binds {shown} by a top-level statement that is no def (line "
                f"{binding.lineno}: {catalog.quoted(splice.statement_line(view.source(module), binding))})")
    functions = [node.name for _, node in splice.defs_in_blocks(tree.body)
                 if isinstance(node, splice.FunctionNode)]
    return (f"{module} defines no function {shown}"
            + (did_you_mean(name, functions) or "; list_dictionary_entries shows its functions"))


def _kernel_class_too(module: str) -> str:
    """For a dictionary `dict`: the bare name names the kernel class too, which it hides
    (builtins is last in lookup order), so a kernel method asked for by it is not found."""
    if not catalog.is_kernel_class(module):
        return ""
    return (f"; {module} names both the dictionary (image module) {module} and the kernel class "
            f"{module}, and the dictionary comes first: pass {KERNEL}.{module} for the class")


def _tree(view, module: str) -> ast.Module:
    catalog.require_module(view, module)
    catalog.require_compiles(view, module)
    return view.tree(module)


def _guarded(tree: ast.Module, name: str) -> list[tuple[ast.stmt, ast.stmt]]:
    """(block, def) for each def of `name` written in a module-level `if`/`try`/`with`."""
    return [(block, node) for block, node in splice.defs_in_blocks(tree.body)
            if block is not None and isinstance(node, splice.FunctionNode) and node.name == name]


def _bound_to_its_def(view, module: str, live_module: types.ModuleType | None, name: str) -> bool:
    """Whether the live module binds `name` to the function its last top-level def made:
    compiled from the module's file as that very def (its first line, its qualified name),
    not a function made in its body (`f = f()` handing back an inner one), a wrapper
    (`f = cache(f)`), one imported or another def's (`f = other`)."""
    nodes = splice.function_nodes(view.tree(module), name)
    value = own.namespace(live_module).get(name)
    if not nodes or type(value) is not types.FunctionType:
        return False
    code = value.__code__
    return (code.co_filename == view.filename(view.relpath(module)) and code.co_qualname == name
            and code.co_firstlineno == splice.first_line(nodes[-1]))


def _above_its_def(tree: ast.Module, name: str) -> bool:
    """Whether every top-level statement binding `name` other than a def of it is above its
    first def, or, with none, above where a new one goes (last, or above a closing
    `if __name__ == "__main__":` block)."""
    others = _other_bindings(tree, name)
    defs = splice.function_nodes(tree, name)
    if defs:
        return all(node.end_lineno < defs[0].lineno for node in others)
    return not any(splice.runs_as_program_only(node) for node in others) and bool(others)


def _other_bindings(tree: ast.Module, name: str) -> list[ast.stmt]:
    """The top-level statements that may bind `name` other than a def or class of it."""
    return [node for node in tree.body if not isinstance(node, splice.FunctionNode + (ast.ClassDef,))
            and splice.binds([node], name, star=False, annotated=False)]


def _other_binding(tree: ast.Module, name: str) -> ast.stmt | None:
    """The first top-level statement that may bind `name` other than a def or class of it."""
    return next(iter(_other_bindings(tree, name)), None)
