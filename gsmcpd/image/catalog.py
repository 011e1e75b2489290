"""Names in a view: dictionaries, classes, methods; resolution and the kernel guard.

Image classes are found from source (`class` statements at a module's top level or
in its top-level `if`/`try`/`with` blocks), so a module that fails to import can still
be browsed; their live objects come from the view's import hook. `builtins` is the
kernel dictionary, last in lookup order.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import re
import sys
import types
import unicodedata
from dataclasses import dataclass

from gsmcpd.image import own, splice
from gsmcpd.image.view import KERNEL, View, code_started_in, is_program
from gsmcpd.wire.jsonrpc import echoed, quoted
from gsmcpd.worker.toolset import ToolError, did_you_mean, meant


@dataclass(frozen=True)
class ClassRef:
    module: str
    name: str

    @property
    def qualified(self) -> str:
        return f"{self.module}.{self.name}"

    @property
    def is_kernel(self) -> bool:
        return self.module == KERNEL


def dictionaries(view: View) -> list[str]:
    return view.module_names() + [KERNEL]


def kernel_classes() -> list[str]:
    return sorted(name for name in vars(builtins) if is_kernel_class(name))


def is_kernel_class(name: str) -> bool:
    """Whether builtins binds `name` to a class list_classes builtins lists. Its own
    namespace: getattr also finds the module type's attributes (`__class__` is
    `module`), and a private `__loader__` is the import system's, not builtins'."""
    return not name.startswith("_") and isinstance(vars(builtins).get(name), type)


def classes_in(view: View, module: str) -> list[ClassRef]:
    if module == KERNEL:
        return [ClassRef(KERNEL, name) for name in kernel_classes()]
    require_module(view, module)
    tree = view.tree(module)
    if tree is None:
        return []
    seen: dict[str, ClassRef] = {}
    for node in splice.module_level_classes(tree):
        seen[node.name] = ClassRef(module, node.name)
    return list(seen.values())


def image_classes(view: View) -> list[ClassRef]:
    return [ref for module in view.module_names() for ref in classes_in(view, module)]


def too_long(view: View) -> list[str]:
    """Why each image file or directory the view left out for the length of its path is
    not there: no file at such a path can be opened (nor a module in it imported)."""
    return [f"{rel}: left out of the view, its path being longer than the system can open "
            "(PATH_MAX, the image's own path counted)" for rel in view.too_long]


def uncompiled(view: View, module_filter: str | None = None) -> list[str]:
    """Why each image module that does not compile (its classes and methods cannot be
    read) is left out of an answer about the whole image (or the one module)."""
    return [_unloadable(view, module) for module in view.module_names()
            if module_filter in (None, module) and view.tree(module) is None]


def unloaded(view: View) -> list[str]:
    """Why each image module that is not loaded (it does not compile, fails to import, is
    shadowed, is a program's `__main__`, or put in its place an object with no namespace,
    no_namespace) is left out of an answer about the image's live objects, such as its
    test classes. Call it after view.load_all()."""
    return [_unloadable(view, module) for module in view.module_names()
            if not view.owns_module(module) or no_namespace(view, module) is not None]


def require_module(view: View, module: str) -> None:
    if module != KERNEL and not view.has_module(module):
        raise ToolError("notFound", f"no dictionary (image module) named {quoted(module)}"
                        + (_package_file_hint(view, module) or did_you_mean(module, dictionaries(view)))
                        + "; list_dictionaries shows them")


def _package_file_hint(view: View, module: str) -> str:
    """For `pkg.__init__`: the file of package pkg, whose dictionary is pkg itself."""
    package, _, last = module.rpartition(".")
    if last != "__init__" or not view.has_module(package):
        return ""
    return f" ({package}/__init__.py is the package {package}'s own module: pass {package})"


# Where a dictionary named as a class is pointed (_not_a_class): the tool listing what the
# caller's tools take from it ({its}: its or their). Not list_classes: asked for a class's
# methods, a module's functions are what is meant.
ENTRIES_LISTED = "list_dictionary_entries shows {its} functions and classes"
TEST_CLASSES_LISTED = "list_test_classes shows the image's test classes"


def resolve_class(view: View, name: str, listed: str = ENTRIES_LISTED) -> ClassRef:
    """A bare name resolves if unique across the image (then builtins);
    `module.Class` always resolves. `listed` tells where a dictionary named instead is
    pointed (ENTRIES_LISTED, TEST_CLASSES_LISTED), and, TEST_CLASSES_LISTED, a bare name no
    class has is pointed to list_test_classes, not list_all_classes; a bare dictionary or
    function name only to the tools that take it."""
    name = dotted_name(name, "a class name")
    if "." in name:
        module, _, short = name.rpartition(".")
        if module == KERNEL:
            if is_kernel_class(short):
                return ClassRef(KERNEL, short)
            # Here, not below: builtins has no source to read the hints from.
            raise ToolError("notFound", f"builtins has no class {echoed(short)}"
                            + (did_you_mean(short, kernel_classes()) or _defined_elsewhere(view, module, short))
                            + "; list_classes builtins shows them")
        elif view.has_module(module):
            if any(ref.name == short for ref in classes_in(view, module)):
                return ClassRef(module, short)
            if view.tree(module) is None:
                raise ToolError("notFound", f"no class {short} can be read: "
                                + _unloadable(view, module))
        else:
            raise ToolError("notFound", f"no dictionary named {echoed(module)} (for class "
                            f"{echoed(name)})" + (_package_file_hint(view, module)
                                                   or _nested_hint(view, name)
                                                   or _method_label_hint(view, module, short)
                                                   or _kernel_module_hint(view, module)
                                                   or did_you_mean(module, view.module_names())))
        raise ToolError("notFound", f"{module} defines no class {echoed(short)}"
                        + (_made_at_run_time(view, [module], short) or _not_a_class(view, [module], short, listed)
                           or did_you_mean(short, [ref.name for ref in classes_in(view, module)])
                           or _defined_elsewhere(view, module, short)))
    classes = image_classes(view)
    candidates = [ref for ref in classes if ref.name == name]
    if len(candidates) == 1:
        return candidates[0]
    if len(candidates) > 1:
        listed = ", ".join(ref.qualified for ref in candidates)
        raise ToolError("ambiguous", f"class name {name} is ambiguous: {listed}; "
                        "pass the qualified name (module.Class)")
    if is_kernel_class(name):
        return ClassRef(KERNEL, name)
    known = [ref.name for ref in classes] + kernel_classes()
    not_a_class = _not_a_class(view, view.module_names(), name, listed)
    # One pointer: a dictionary's hint points to `listed`'s tool (a test tool's names
    # list_test_classes), a function's to the tools taking it; a second, "; list_all_classes
    # shows them", read as the same list.
    lister = "list_test_classes" if listed == TEST_CLASSES_LISTED else "list_all_classes"
    raise ToolError("notFound", f"no class named {echoed(name)} in the image or builtins"
                    + (not_a_class or _kernel_function(name) or did_you_mean(name, known))
                    + ("" if not_a_class else f"; {lister} shows them")
                    + _uncompiled_hint(view, name)
                    + _made_at_run_time(view, view.module_names(), name))


def function_dictionary(view: View, name: str) -> str | None:
    """The dictionary className `name` names, for the method tools that take one: its
    module-level functions are its methods, as a GemStone dictionary holds globals. None
    when it names no dictionary; ambiguous when it names a class too: for `a.b` (a package
    and class b of module a) no other name tells them apart; for a bare name the class's
    qualified one does, which the answer gives. A kernel class of the name (`dict`) is not
    ambiguous with it: builtins is last in lookup order, and the dictionary's functions would
    be reached by no name; its notFound names builtins.dict."""
    name = dotted_name(name, "a class name")
    if name == KERNEL:
        return KERNEL
    if not view.has_module(name):
        return None
    module, _, short = name.rpartition(".")
    if module:
        classes = ([ref for ref in classes_in(view, module) if ref.name == short]
                   if view.has_module(module) else [])
    else:
        classes = [ref for ref in image_classes(view) if ref.name == name]
    if not classes:
        return name
    where = " and ".join(f"the class {ref.name} of {ref.module}" for ref in classes)
    apart = ("no name tells them apart: rename one" if module else
             f"pass {' or '.join(ref.qualified for ref in classes)} for the class; no other name tells "
             "the dictionary apart: rename one to reach its functions")
    raise ToolError("ambiguous", f"{name} names both the dictionary (image module) {name} and {where}; {apart}")


def require_selector(selector: str) -> str:
    """A method name is a Python identifier; anything else could never be found.
    Returned as Python reads it (NFKC: `ﬁnd` is `find`)."""
    if not selector.isidentifier():
        owner, _, method = selector.rpartition(".")   # Class.method, as the search tools name it
        alone = f"; pass the method name alone: {echoed(method)}" if owner and method.isidentifier() else ""
        raise ToolError("invalidParams", f"{quoted(selector)} is not a method name "
                        "(a Python identifier)" + alone)
    return python_name(selector)


def dotted_name(name: str, what: str) -> str:
    """A (dotted) name as Python reads it, refused (invalidParams: not `what`) unless each
    part is an identifier as written: NFKC makes `.` of `﹒` and `․`, so `zoo﹒x`, which no
    import statement spells, would otherwise name zoo.x."""
    if not name or not all(part.isidentifier() for part in name.split(".")):
        raise ToolError("invalidParams", f"{quoted(name)} is not {what}")
    return python_name(name)


def dictionary_name(name: str) -> str:
    return dotted_name(name, "a dotted module name")


def python_name(name: str) -> str:
    """A (dotted) identifier as Python reads it, and so binds it: NFKC (`ﬁnd` is `find`,
    `Ｋ` is `K`, a decomposed `ü` the composed one)."""
    return unicodedata.normalize("NFKC", name)


def _nested_hint(view: View, name: str) -> str:
    """For `module.Class.Inner` or `Class.Inner`: the tools show top-level classes; say
    where Inner is."""
    parts = name.split(".")
    # Only a prefix no longer than the image's deepest module can be one: each of a huge
    # name's prefixes joined was O(n^2), minutes of the worker for a megabyte.
    deepest = max((module.count(".") + 1 for module in view.module_names()), default=0)
    for cut in range(min(len(parts) - 1, deepest), 0, -1):
        module = ".".join(parts[:cut])
        if view.has_module(module):
            if _nests(view, module, parts[cut:]):
                return _nested_in(".".join(parts[cut:]), f"{module}.{parts[cut]}")
            return ""
    outers = [ref.qualified for ref in image_classes(view)
              if ref.name == parts[0] and _nests(view, ref.module, parts)]
    return _nested_in(name, " or ".join(outers)) if outers else ""


def _nests(view: View, module: str, path: list[str]) -> bool:
    """Whether `path` (Outer, Inner...) names a class written in the body of the module's
    module-level class Outer (of Inner, and so on), not a method or a name it lacks."""
    tree = view.tree(module)
    body = [] if tree is None or len(path) < 2 else splice.module_level_classes(tree)
    for part in path:
        found = [node for node in body if isinstance(node, ast.ClassDef) and node.name == part]
        if not found:
            return False
        body = found[-1].body
    return True


def _nested_in(nested: str, outer: str) -> str:
    return (f"; {nested} is nested in the class {outer}, and the tools work on an image "
            f"module's top-level classes: export_class_source {outer} shows it")


def _defined_elsewhere(view: View, module: str, name: str) -> str:
    """For `module.Name` where other dictionaries (or builtins) have the class Name, as one
    put in its package for its module (`shop.Cart` for `shop.till.Cart`): those meant."""
    where = [ref.qualified for ref in image_classes(view) if ref.name == name and ref.module != module]
    if is_kernel_class(name):
        where.append(f"{KERNEL}.{name}")
    return meant(where[:3])


def _kernel_module_hint(view: View, module: str) -> str:
    """For `decimal.Decimal`: a module loaded in the session that is not the image's is the
    kernel's (standard library, installed packages), which the class tools do not reach."""
    if not _kernel_module(view, module):
        return ""
    return (f"; {module} is a kernel module (loaded in this session, not an image module): the "
            "class tools read and change the image's classes and builtins' only (execute_code "
            "can inspect it)")


def _kernel_module(view: View, module: str) -> bool:
    # The name whole, not View.shadowing's every prefix: a huge dotted name costs O(n^2) there.
    return module in sys.modules and not view.owns_module(module)


def kernel_class_of(view: View, name: str) -> str | None:
    """The kernel module holding class `name` given as `module.Class` (`decimal.Decimal`),
    loaded in the session and not the image's; None for any other name."""
    module, _, short = dotted_name(name, "a class name").rpartition(".")
    if module == KERNEL or view.has_module(module) or not _kernel_module(view, module):
        return None   # builtins' classes are resolve_class's
    held = own.namespace(sys.modules[module]).get(short)   # a module's __getattr__ (a lazy loader's) is not run
    return module if isinstance(held, type) else None


def _uncompiled_hint(view: View, name: str) -> str:
    """Name the image modules that write `class Name` but do not compile: their
    classes are invisible until they are fixed, and the answer should say why."""
    header = re.compile(rf"^class[ \t]+{re.escape(name)}\b", re.MULTILINE)
    broken = [module for module in view.module_names()
              if view.tree(module) is None and header.search(view.source(module))]
    return "".join(f"; {_unloadable(view, module)}, and it writes a class {name}" for module in broken)


def _method_label_hint(view: View, owner: str, selector: str) -> str:
    """For `module.Class.method`, a method as the search tools name it: say how to pass it."""
    module, _, short = owner.rpartition(".")
    # Membership, not has_module: a huge dotted name is looked up no further (see _nested_hint).
    if module in view.module_names() and any(ref.name == short for ref in classes_in(view, module)):
        selector = echoed(selector)
        return f"; to name the method {selector} of {owner}, pass className {owner} and selector {selector}"
    return ""


def _not_a_class(view: View, modules: list[str], name: str, listed: str) -> str:
    """Name what `name` is when it is a dictionary (an image module, builtins) or a
    module-level function of one of `modules` (a search answers functions too): the class
    tools take neither. A dictionary is pointed to `listed` (see resolve_class)."""
    functions = [f"{module}.{name}" for module in modules if (tree := view.tree(module)) is not None
                 and any(isinstance(node, splice.FunctionNode) and node.name == name
                         for _, node in splice.defs_in_blocks(tree.body))]
    if functions:
        are = "is a function" if len(functions) == 1 else "are functions"
        module, _, function = functions[0].rpartition(".")
        return (f"; {' and '.join(functions)} {are}, not a class: get_method_source, compile_method "
                f"and delete_method take a function as className its dictionary, selector its "
                f"name (className {module}, selector {function})")
    paths = {name} | {f"{module}.{name}" for module in modules}
    named = [module for module in dictionaries(view) if module in paths]
    image = [module for module in named if module != KERNEL]
    what = [f"{' and '.join(image)} " + ("is a dictionary" if len(image) == 1 else "are dictionaries")
            + " (image module)"] if image else []
    if KERNEL in named:
        what.append(f"{KERNEL} is the kernel dictionary")
    if not what:
        return ""
    return f"; {' and '.join(what)}, not a class: " + listed.format(its="its" if len(named) == 1 else "their")


def _kernel_function(name: str) -> str:
    """For a bare name builtins binds to a function (`len`, `print`): a close class name
    (`print`: did you mean int?) would read as a typo."""
    if name not in vars(builtins) or entry_kind(vars(builtins)[name]) != "function":
        return ""
    return f"; {KERNEL}.{name} is a kernel function, not a class"


def _made_at_run_time(view: View, modules: list[str], name: str) -> str:
    """Name the image modules (of `modules`) that bind `name`, once imported, to a class
    they made as they ran (`X = type("X", ...)`, `namedtuple`, a factory's): no class
    statement writes it, so the tools cannot show or change its source. Only the modules
    whose source binds the name are imported to find out."""
    hints = []
    for module in modules:
        tree = view.tree(module)
        if tree is None or not splice.binds(tree.body, name, star=False, annotated=False):
            continue
        line = _last_binding_line(tree, name)
        # Imported, its __module__ set to this module's name after (tomllib's
        # `TOMLDecodeError.__module__ = __name__`): another module's class statement made it.
        if any(isinstance(statement, (ast.Import, ast.ImportFrom))
               for statement in tree.body if statement.lineno == line):
            continue
        loaded = view.module(module)
        obj = own.namespace(loaded).get(name)
        if isinstance(obj, type) and own.module_of(obj) == module and view.rewritten_home(obj) is None:
            hints.append(f"; {module}.{name} is a class made at run time (bound at line {line}) "
                         "by no class statement, so its source cannot be browsed or edited")
    return "".join(hints)


def live_class(view: View, ref: ClassRef) -> type:
    """The class object, or ToolError(other) if its module cannot be loaded."""
    if ref.is_kernel:
        return getattr(builtins, ref.name)
    module = view.module(ref.module)
    if module is None or not own.has_namespace(module):
        raise ToolError("other", _unloadable(view, ref.module))
    if not_run(view, ref, module):
        raise ToolError("other", f"{ref.qualified} is not bound once {ref.module} is imported: "
                        "its class statement is in a block that did not run")
    obj = own.namespace(module).get(ref.name)
    if not isinstance(obj, type):
        if rebound_since_import(view, ref):
            raise ToolError("other", f"{ref.qualified} is not bound to a class in this session "
                            f"(found {own.NAME(type(obj))}): {REBOUND_SINCE}")
        raise ToolError("other", f"{ref.qualified} is not bound to a class once "
                        f"{ref.module} is imported (found {own.NAME(type(obj))})")
    if not _made_by_its_statement(view, ref, obj):
        raise ToolError("other", not_its_class(view, ref, obj))
    return obj


def _made_by_its_statement(view: View, ref: ClassRef, cls: type) -> bool:
    """Whether `cls` can be the class `ref`'s class statement makes, not another class the
    module binds to its name below it (`from fastpath import Fast`, `from _collections import
    OrderedDict`). Told by the module and name Python gives the class it makes, unless the
    class body sets them itself (pluggy's `__module__ = "pluggy"`), or the module's top
    level sets `__module__` below it (anyio's `Hook.__module__ = "anyio"`)."""
    tree = view.tree(ref.module)
    nodes = [] if tree is None else [node for _, node in splice.class_statements(tree, ref.name)]
    written = {target.id for node in nodes for statement in node.body for target in ast.walk(statement)
               if isinstance(target, ast.Name) and isinstance(target.ctx, ast.Store)} | {
        statement.name for node in nodes for statement in node.body   # a metaclass's `def __module__`
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    return (("__module__" in written or own.module_of(cls) == ref.module or view.rewritten_home(cls) == ref.module)
            and ("__qualname__" in written or own.QUALNAME(cls) == ref.name)
            and not view.rebound_from(cls, ref.module, ref.name))


def not_its_class(view: View, ref: ClassRef, obj: object) -> str:
    """Why the object `ref`'s module binds to its name is not taken for the class its class
    statement makes, for a refusal or a browse from source."""
    tree = view.tree(ref.module)
    # Of its module and name: no other module's class (`from _collections import OrderedDict`).
    if (isinstance(obj, type) and own.module_of(obj) == ref.module and own.QUALNAME(obj) == ref.name
            and tree is not None and view.rebound_from(obj, ref.module, ref.name)):
        return (f"{ref.qualified} is bound to a class made at run time (at line "
                f"{_last_binding_line(tree, ref.name)}) once {ref.module} is imported, not to the "
                "class its class statement makes")
    if _module_set_outside(view, ref, obj):
        return (f"{ref.qualified} is bound to a class whose __module__ ({own.module_of(obj)!r}) is set "
                "outside its class statement (by a decorator, its metaclass, or code below it or in "
                "another module), so the tools cannot tell it is the class the statement in "
                f"{ref.module} makes: they "
                "name a class by its __module__, or by the module whose class statement assigns "
                "that in its body (`__module__ = \"pkg\"`) or whose top level does below it "
                f"(`{ref.name}.__module__ = \"pkg\"`)")
    if rebound_since_import(view, ref):
        return (f"{ref.qualified} is bound to {bound_object(view, obj)} in this session, not to the "
                f"class its class statement makes: {REBOUND_SINCE}")
    return (f"{ref.qualified} is bound to {bound_object(view, obj)} once {ref.module} is imported, "
            "not to the class its class statement makes")


# What rebound a name no statement of its module's file rebinds, and what undoes it: the
# file is as it should be, so "edit the module's file" would send the user to the wrong place.
def _done_since(verb: str) -> str:
    return (f"no statement of its module below its class statement {verb} the name, so code run "
            "since did (execute_code or a test in this session, a function the module calls, "
            "another module's code); abort re-imports the session's modules, undoing what this "
            "session's code did")


REBOUND_SINCE = _done_since("binds")


def _deleted_by_its_file(view: View, ref: ClassRef) -> bool:
    """Whether a statement below `ref`'s class statements may delete its name (`del Hidden`,
    `except E as Hidden`: Python deletes that name as the handler ends), or a function of
    the module's (`global Hidden; del Hidden`) a call below them may run."""
    below, defs = _run_after_its_class(view, ref) or ([], [])
    return any(isinstance(node, ast.Name) and node.id == ref.name and isinstance(node.ctx, ast.Del)
               or isinstance(node, ast.ExceptHandler) and node.name == ref.name
               for statement in below + defs for node in ast.walk(statement))


def rebound_since_import(view: View, ref: ClassRef) -> bool:
    """Whether no statement below `ref`'s class statements in its module's file may bind its
    name (`Gone = None`, `from m import *`, a def of it, a call of the module's function that
    binds it global), so that another binding in the live module was made by code run after
    them, not by the file's own statements."""
    ran = _run_after_its_class(view, ref)
    if ran is None:
        return False
    below, defs = ran
    return not (splice.binds(below, ref.name, annotated=False) or splice.binds_by_call(defs + below, ref.name))


def _run_after_its_class(view: View, ref: ClassRef) -> tuple[list[ast.stmt], list[ast.stmt]] | None:
    """The statements the module may run below `ref`'s class statements (not those), and
    its top-level defs, whose bodies a call among them may run; None for no class statement."""
    tree = view.tree(ref.module)
    nodes = [] if tree is None else [node for _, node in splice.class_statements(tree, ref.name)]
    if not nodes:
        return None
    below = [statement for node in nodes for statement in splice.statements_below(tree, node)
             if not any(statement is other for other in nodes)]
    return below, [node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _last_binding_line(tree: ast.Module, name: str) -> int:
    """The line of the last top-level statement binding `name`: the one its module's name
    holds. Not an `if __name__ == "__main__":` block's, unless only one binds it: an import
    does not run that. Nor a bare `name: T`'s: it binds nothing."""
    def binds(statements):
        return splice.binds(statements, name, star=False, annotated=False)
    lines = [statement.lineno for statement in tree.body if binds([statement])]
    run = [statement.lineno for statement in tree.body if binds([statement])
           and (not splice.runs_as_program_only(statement) or binds(statement.orelse))]
    return (run or lines)[-1]


def _module_set_outside(view: View, ref: ClassRef, obj: object) -> bool:
    """Whether `obj`, bound to `ref`'s name, is a class of that name whose `__module__` no
    class body assigned and which `ref`'s module made all the same: a function of its own
    was compiled from that module's file, or (a class of no such function) the image module
    its `__module__` names has no class statement of its name."""
    if not (isinstance(obj, type) and own.is_heap_type(obj) and own.QUALNAME(obj) == ref.name
            and own.module_of(obj) not in (None, ref.module)):
        return False
    module = view.module(ref.module)
    filename = getattr(module, "__file__", None)
    # Only a function compiled from an image file tells where the class was written: a
    # dataclass's generated ones come from `<string>` and dataclasses.py.
    codes = [code for code in own.function_codes(obj) if code.co_filename.startswith(view.filename(""))]
    if codes:
        return any(code.co_filename == filename for code in codes)
    home = own.module_of(obj)
    tree = view.tree(home) if view.has_module(home) else None
    return tree is not None and not splice.class_statements(tree, ref.name)


def not_run(view: View, ref: ClassRef, module: types.ModuleType) -> bool:
    """Whether the loaded `module` binds no `ref.name` because the block its class statement
    is written in did not run (`if TYPE_CHECKING:`): the class exists in source only."""
    tree = view.tree(ref.module)
    return ref.name not in own.namespace(module) and tree is not None and any(
        block is not None for block, _ in splice.class_statements(tree, ref.name))


def require_compiles(view: View, module: str) -> None:
    """An image module's text must parse before anything is spliced into it."""
    if view.syntax_error(module) is not None:
        raise ToolError("other", _unloadable(view, module))


def live_module(view: View, module: str) -> types.ModuleType | None:
    """The image module's live module, which an edit changes with its source: None when it
    does not import (the edit is to source only); refused when it has no namespace to
    change (no_namespace)."""
    loaded = view.module(module)
    missing = no_namespace(view, module)
    if missing is not None:
        raise ToolError("refused", f"{missing}; edit its file in an editor, then refresh")
    return loaded


def require_editable(view: View, module: str, kernel_refusal: str, what: str) -> None:
    """An image module the view owns and can parse, for an edit of what it defines:
    refused for the kernel dictionary (`kernel_refusal`), when it is not the view's to
    change (refuse_unless_views, saying `what` cannot be done) or does not parse."""
    if module == KERNEL:
        raise ToolError("refused", kernel_refusal)
    require_module(view, module)
    refuse_unless_views(view, module, what)
    require_compiles(view, module)


def refuse_if_imported_around(view: View, module: str) -> None:
    """An image module code imported around the view is neither the view's to change
    nor a kernel module (View.shadowed takes it for one): say what it is, and the way back."""
    if view.imported_around(module):
        raise ToolError("refused", _imported_around(module))


def refuse_unless_views(view: View, module: str, what: str) -> None:
    """An edit of the image module must find it the view's: neither imported around the
    view (refuse_if_imported_around) nor shadowed by a kernel module (shadowed_why, the
    refusal beginning with `what`: "no class can be defined in m")."""
    refuse_if_imported_around(view, module)
    shadowed = shadowed_why(view, module)
    if shadowed:
        raise ToolError("refused", f"{what}: {shadowed}")


def _imported_around(module: str) -> str:
    return (f"image module {module} was imported from its file by code run in this session, "
            "around the session's view, so the view cannot change or load it; abort imports "
            "it from the view again")


def shadowed_why(view: View, module: str) -> str | None:
    """Why the image module is not the view's, naming the kernel module holding its name or
    its package's (View.shadowing); None if the name is the view's."""
    holder = view.shadowing(module)
    if holder is None:
        return None
    put_by = view.put_by(holder)
    if put_by is not None:
        place = "its" if holder == module else f"its package {holder}'s"
        held = _what_holds(sys.modules[holder])
        done = (f"its import put {held} in {place} place" if put_by == "import" and holder == module
                else f"the import of {holder} put {held} in {place} place" if put_by == "import"
                else f"code run in this session put {held} in {place} place")
        return (f"image module {module} is not the view's: {done} in sys.modules, so the tools "
                f"do not read or change it; abort imports {holder} anew"
                + (" (which does that again while its file does)" if put_by == "import" else ""))
    if holder == module:
        return (f"image module {module} is shadowed by the already-loaded kernel module of "
                "that name; rename the image module")
    return (f"image module {module} is shadowed: its package's name {holder} belongs to the "
            "already-loaded kernel module of that name, whose own modules are imported by "
            f"that name; rename the image package {holder}")


def _what_holds(held) -> str:
    # What holds a module's name in sys.modules, not the view's module (put_by, no_namespace):
    # a module is the kernel's (one with no namespace is none).
    name = getattr(getattr(held, "__spec__", None), "name", None) if isinstance(held, types.ModuleType) else None
    if isinstance(name, str):
        return f"the kernel module {name}"
    return f"a {quoted(own.NAME(type(held)))} object"


def no_namespace(view: View, module: str) -> str | None:
    """Why the image module `module`, imported, has no live objects the tools can read: what
    its code put in its place in sys.modules (the view's still, by its __spec__) has no
    namespace of its own (an object of __slots__); None for any other."""
    held = sys.modules.get(module)
    if not view.owns_module(module) or own.has_namespace(held):
        return None
    return (f"image module {module} is held in sys.modules as {_what_holds(held)} "
            "with no namespace (__dict__), which code put in the module's place, so the tools "
            "cannot read or change its live objects")


def _unloadable(view: View, module: str) -> str:
    missing = no_namespace(view, module)
    if missing is not None:
        return missing
    holder = view.shadowing(module)
    if holder is not None and view.imported_around(holder):
        return _imported_around(holder)
    if holder is not None:
        return shadowed_why(view, module)
    error = view.syntax_error(module)
    if error is not None:
        where = f"line {error.lineno}: " if error.lineno else ""   # none for the whole text
        return f"image module {module} does not compile: {where}{error.msg}"
    if module not in view.import_errors and is_program(module):
        return (f"image module {module} is a program (python -m {module.rpartition('.')[0]}), which the "
                f"tools do not import, as that runs it: its classes are read from source "
                f"(execute_code `import {module}` runs it)")
    reason = view.import_errors.get(module, "unknown error")
    return f"image module {module} failed to import: {reason}"


def class_node(view: View, ref: ClassRef) -> ast.ClassDef:
    """The class statement of an image class (splice.class_statement); where which one binds
    it is unsure (`if ...: class A` / `else: class A`), the one its live class was made from,
    else the last."""
    tree = view.tree(ref.module) if not ref.is_kernel else None
    node = None if tree is None else splice.class_statement(tree, ref.name)
    if node is None and tree is not None:
        found = [statement for _, statement in splice.class_statements(tree, ref.name)]
        node = _made_from(view, ref, found) or (found[-1] if found else None)
    if node is None:
        raise ToolError("notFound", f"no source for {ref.qualified}"
                        + (" (a kernel class)" if ref.is_kernel else ""))
    return node


def _made_from(view: View, ref: ClassRef, nodes: list[ast.ClassDef]) -> ast.ClassDef | None:
    """Which of the class statements `nodes` the live class was made from, told by where
    its methods' code starts; None if it cannot be loaded or has no method to tell by."""
    try:
        cls = live_class(view, ref)
    except ToolError:
        return None
    return code_started_in(cls, view.filename(view.relpath(ref.module)), nodes)


def class_note(view: View, ref: ClassRef) -> str | None:
    """Where a class written in a module-level block is, as the browsing tools note it
    (None for one written only at the top level): the module has it when that branch
    runs; written more than once, which statement the answer shows."""
    tree = None if ref.is_kernel else view.tree(ref.module)
    found = [] if tree is None else splice.class_statements(tree, ref.name)
    if all(block is None for block, _ in found):
        return None
    if len(found) == 1:
        return splice.branch_note(found[0][0], "module")
    node = class_node(view, ref)
    which = ("the one its live class was made from" if _made_from(view, ref, [n for _, n in found])
             is node else "the last; which one the module binds depends on how it runs")
    return (f"{ref.name} is written {len(found)} times in {ref.module} "
            f"({splice.where_written(found)}); shown: line {node.lineno}, {which}")


def _refuse_if_unsure(view: View, ref: ClassRef) -> None:
    """An edit needs the one class statement that binds the name (splice.class_statement)."""
    tree = view.tree(ref.module)
    found = [] if tree is None else splice.class_statements(tree, ref.name)
    if found and splice.class_statement(tree, ref.name) is None:
        raise ToolError("refused", f"{ref.qualified}: {splice.unsure_statement(ref.name, found)}; "
                        "leave one class statement of it in the module's file (a class-level "
                        "`if` for what differs) by other means, then refresh")


def mutable_class(view: View, name: str) -> tuple[ClassRef, type | None]:
    """The kernel guard: resolve `name` to a class the image itself defines.

    Refused (by name and identity) unless the object bound in the image module
    is the very class its own `class` statement made. Returns (ref, live class),
    the class None only when the module fails to import or its class statement did
    not run (not_run): a source-only edit."""
    remedy = ("define your own class in an image module (compile_class_definition) "
              "or use execute_code deliberately")
    kernel = kernel_class_of(view, name)
    if kernel is not None:
        raise ToolError("refused", f"{echoed(dotted_name(name, 'a class name'))} is a class of the "
                        f"kernel module {kernel}, not the image's, and cannot be modified; {remedy}")
    ref = resolve_class(view, name)
    if ref.is_kernel:
        raise ToolError("refused", f"{ref.name} is a kernel class (builtins) and cannot be "
                        f"modified; {remedy}")
    _refuse_if_unsure(view, ref)
    refuse_unless_views(view, ref.module, f"{ref.qualified} cannot be modified")
    module = live_module(view, ref.module)
    if module is None:
        require_compiles(view, ref.module)
        return ref, None
    if not_run(view, ref, module):
        return ref, None
    if ref.name not in own.namespace(module):
        if not _deleted_by_its_file(view, ref):   # `del tricky.Kitchen` in execute_code
            raise ToolError("refused", f"{ref.qualified} is not bound in this session, so there is no "
                            f"live class to change: {_done_since('deletes')}")
        raise ToolError("refused", f"{ref.qualified} is not bound once {ref.module} is imported "
                        "(the module deletes the name after its class statement), so there is no "
                        "live class to change; edit the module's file in an editor, then refresh")
    obj = own.namespace(module)[ref.name]
    # By name too: `from fast import A` below `class A` binds another image module's
    # class, which an edit of this module's source must not change live. Or by the class
    # statement here that set its `__module__` to another name (`__module__ = "pkg"`).
    if isinstance(obj, type) and (view.defines(obj, ref.qualified) or view.rewritten_home(obj) == ref.module):
        return ref, obj
    written = splice.class_statements(view.tree(ref.module), ref.name)
    if isinstance(obj, type) and not view.defines(obj) and not written:
        raise ToolError("refused", f"{ref.qualified} is bound to {bound_object(view, obj)}, "
                        f"which the image does not define; {remedy}")
    if isinstance(obj, type) and own.QUALNAME(obj) == ref.name and splice.binds(
            class_node(view, ref).body, "__module__", star=False):
        raise ToolError("refused", _unsure_module(ref, obj))
    # `_auto_null = _auto_null()`, `Gone = None`, `from _datetime import *` below the class
    why = not_its_class(view, ref, obj)
    if why.endswith(REBOUND_SINCE):   # the file is as it should be: no editor
        raise ToolError("refused", why)
    raise ToolError("refused", f"{why}; edit the module's file in an editor, then refresh")


def _unsure_module(ref: ClassRef, cls: type) -> str:
    """Why a class whose class statement sets `__module__` to no string it has, or whose
    string another module's statement writes too (View.rewritten_home), is refused."""
    module = own.module_of(cls)
    said = repr(module) if module is not None else f"of type {own.NAME(type(own.DICT(cls).get('__module__')))}, no str"
    return (f"{ref.qualified} cannot be modified: {ref.module} binds it to a class whose "
            f"__module__ is {said}, and the tools cannot tell that class is the one its "
            "class statement makes: they can when the statement assigns that very string to "
            "__module__ (`__module__ = \"pkg\"`) and no other image module binds the class by "
            "such a statement of its own; edit the module's file in an editor, then refresh")


def bound_object(view: View, obj: object) -> str:
    """What a name holds, for a refusal: a class as `module.Name`, `None`, or `an instance
    of enum._auto_null` (its repr may be its class's name)."""
    if obj is None:
        return "None"
    if isinstance(obj, type):
        return view.qualified(obj)
    return f"an instance of {view.qualified(type(obj))}"


def image_subclasses(view: View, cls: type) -> list[str]:
    """The image's subclasses of `cls`, by qualified name: those its modules make as they
    run, nested in another class too (`m2.Outer.Inner`: a change to `cls` leaves that class
    statement failing as it does a top-level one's)."""
    return sorted(view.qualified(sub) for sub in image_subclass_classes(view, cls))


def image_subclass_classes(view: View, cls: type) -> list[type]:
    # type.__subclasses__(cls), not cls.__subclasses__(): on a metaclass (type included)
    # the lookup finds type's own method unbound.
    return [sub for sub in type.__subclasses__(cls) if view.makes(sub)]


def with_nested(view: View, cls: type) -> list[type]:
    """`cls` and the classes its module makes nested in it (`Outer.Inner`, any depth,
    View.makes), outer ones first: what goes with its class statement."""
    found, seen = [], set()
    pending = [cls]
    while pending:
        outer = pending.pop(0)
        if id(outer) in seen:
            continue
        seen.add(id(outer))
        found.append(outer)
        pending += [inner for inner in vars(outer).values() if isinstance(inner, type)
                    and own.QUALNAME(inner).rpartition(".")[0] == own.QUALNAME(outer)
                    and view.makes(inner)]
    return found


def image_classes_made_by(view: View, meta: type) -> list[str]:
    """The image's classes that have `meta` (or a metaclass derived from it) as their
    metaclass, nested in another class too; none unless `meta` is a metaclass."""
    return sorted(view.qualified(made) for made in image_class_objects_made_by(view, meta))


def image_class_objects_made_by(view: View, meta: type) -> list[type]:
    if not issubclass(meta, type):
        return []
    made = {}
    for name in view.module_names():
        module = view.module(name)
        for obj in own.namespace(module).values():
            if isinstance(obj, type) and view.written_in(obj, name):
                made.update((id(cls), cls) for cls in with_nested(view, obj)
                            if isinstance(cls, meta) and cls is not meta)
    return list(made.values())


def entry_kind(obj) -> str:
    if isinstance(obj, type):
        return "class"
    # Looked up statically: a proxy's __getattr__ (a web framework's `request` outside a
    # request) raises. A def under @functools.cache is a wrapper of a function.
    if inspect.isroutine(obj) or inspect.isroutine(inspect.getattr_static(obj, "__wrapped__", None)):
        return "function"
    if isinstance(obj, types.ModuleType):
        return "module"
    return "global"
