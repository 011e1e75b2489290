"""search: implementors, references, senders and source text, over the view's source."""

from __future__ import annotations

import ast
import builtins
import symtable

from gsmcpd.image import catalog, splice, walking
from gsmcpd.image.view import KERNEL
from gsmcpd.worker.registry import Tool
from gsmcpd.worker.toolset import ToolError, Toolset, object_schema, string_prop

CAP = 200
_DECORATED = splice.FunctionNode + (ast.ClassDef,)   # what has a decorator_list


def code_units(view, module_filter: str | None = None):
    """(module, label, node, class) for every module-level function (class None) and
    every method of a module-level class, or of a class nested in one (`module.Outer.Inner.m`,
    class `Inner`: the name its privates are mangled with), in the view's current source.
    Module-level: at the top level, or in a top-level `if`/`try`/`with` block."""
    for module in view.module_names():
        if module_filter is None or module == module_filter:
            yield from _units(view, module)


def _units(view, module: str) -> list[tuple]:
    """code_units of one module, found once per text of it (View.derived)."""
    return view.derived(module, "search.units", lambda _: list(_units_in(module, view.tree(module))))


def _units_in(module: str, tree: ast.Module | None):
    if tree is None:
        return
    # A name written twice at the top level (`class T` ... `class T`) is bound to its
    # last definition; the earlier one is dead code no other tool shows, so search skips
    # it too. One in a block (`if ...: class T` / `else: class T`) may be what runs,
    # unless a top-level one below rebinds the name whatever the block did. A function's
    # `@overload` signatures are not dead: they are read with it, as a method's are.
    last = {node.name: node for node in tree.body
            if isinstance(node, splice.FunctionNode + (ast.ClassDef,))}
    for block, node in splice.defs_in_blocks(tree.body):
        final = last.get(node.name)
        if final is not None and (final.lineno > node.lineno if block else final is not node) \
                and not (block is None and splice.is_overload(node)
                         and isinstance(final, splice.FunctionNode)):
            continue
        if isinstance(node, splice.FunctionNode):
            yield module, f"{module}.{node.name}", node, None
        elif isinstance(node, ast.ClassDef):
            yield from _methods(module, f"{module}.{node.name}", node)


def _methods(module: str, qualified: str, classdef: ast.ClassDef):
    guarded = [method for _, method in splice.guarded_methods(classdef)]
    for method in sorted(splice.methods_of(classdef) + guarded, key=lambda m: m.lineno):
        yield module, f"{qualified}.{method.name}", method, classdef.name
    for inner in classdef.body:   # their calls are sends too: "no senders" must mean none
        if isinstance(inner, ast.ClassDef):
            yield from _methods(module, f"{qualified}.{inner.name}", inner)


def capped(hits: list[str], what: str, unsearched: list[str] = ()) -> dict:
    """`what` names the hits for the empty answer: "no {what}"; `unsearched` says
    why modules were left out (they do not compile), so "no ..." is not taken as all.
    A method written as several defs (a property's getter and setter, overloads, defs
    under a class-level if/else) is one hit, however many of its defs match."""
    hits = list(dict.fromkeys(hits))
    first = hits[:CAP]
    note = f"showing {CAP} of {len(hits)}" if len(hits) > CAP else None
    text = "\n".join(first) if first else f"no {what}"
    if note:
        text += f"\n(note: {note}; the true total is {len(hits)})"
    text += "".join(f"\n(not searched: {reason})" for reason in unsearched)
    structured = {"results": first, "total": len(hits)}
    if note:
        structured["note"] = note
    if unsearched:
        structured["notSearched"] = list(unsearched)
    return {"text": text, "structured": structured}


def senders(view, selector: str, bare: bool = True) -> list[str]:
    """find_senders's hits: the functions and methods calling `selector` by name, as an
    attribute (`x.run()`) or, with `bare`, a bare name (`run()`, which no method is)."""
    private = selector.startswith("__") and not selector.endswith("__")
    hits = []
    for module in view.module_names():
        by_attribute, by_name, owners = _callers_by_name(view, module)
        # Only the units the index names are looked at: every def of the image was 0.2 s
        # a call on a 60,000-method image, paid by each delete_method too (its note).
        keys = {selector, *(splice.mangled(owner, selector) for owner in owners)} if private else {selector}
        found = {position for key in keys for position in by_attribute.get(key, ())}
        if bare:
            found.update(by_name.get(selector, ()))
        if not found:
            continue
        units, calls = _units(view, module), _calls_in(view, module)
        for position in sorted(found):
            (_, label, _, owner), (attributes, names) = units[position], calls[position]
            if (bare and selector in names) or any(splice.spelled(selector, attribute, owner)
                                                   for attribute in attributes):
                hits.append(label)
    return list(dict.fromkeys(hits))


def _callers_by_name(view, module: str) -> tuple[dict, dict, set]:
    """The module's code units (their positions in _units) by what they call (_calls_in):
    by attribute, under the name as written and, in a class, as the class binds it (a
    private `__x` in C under `_C__x` too); by bare name; and the classes they are in. A
    unit `spelled` matches is under the selector or the selector as one of those classes
    binds it. Found once per text of it."""
    def index(_):
        by_attribute, by_name, owners = {}, {}, set()
        for position, ((_, _, _, owner), (attributes, names)) in enumerate(
                zip(_units(view, module), _calls_in(view, module))):
            for attribute in attributes:
                keys = {attribute} if owner is None else {attribute, splice.mangled(owner, attribute)}
                for key in keys:
                    by_attribute.setdefault(key, []).append(position)
            for name in names:
                by_name.setdefault(name, []).append(position)
            if owner is not None:
                owners.add(owner)
        return by_attribute, by_name, owners
    return view.derived(module, "search.callers", index)


def required_text(arguments: dict, key: str) -> str:
    if not arguments[key]:
        raise ToolError("invalidParams", f"{key} must not be empty")
    return arguments[key]


class SearchToolset(Toolset):
    name = "search"
    tool_names = ("find_implementors", "find_references_to", "find_senders", "search_method_source")
    read_only_safe = frozenset(tool_names)
    idempotent = frozenset(tool_names)

    def register(self, registry):
        selector = {"selector": string_prop("a method name", min_length=1)}
        registry.add(Tool("find_implementors", "Image and builtins classes that define the method.",
                          object_schema(selector, ["selector"]), self.find_implementors))
        registry.add(Tool("find_references_to", "Functions and methods whose code references the "
                          "global name (a class, function or other global).",
                          object_schema({"name": string_prop("a global name", min_length=1)}, ["name"]),
                          self.find_references_to))
        registry.add(Tool("find_senders", "Functions and methods that call .selector(...) or "
                          "selector(...), or are decorated @selector or @obj.selector (Python calls "
                          f"it with the def) (capped at {CAP}; a note gives the true total).",
                          object_schema(selector, ["selector"]), self.find_senders))
        registry.add(Tool("search_method_source", "Functions and methods whose source contains "
                          f"the substring (capped at {CAP}).",
                          object_schema({"pattern": string_prop("substring to find", min_length=1),
                                         "dictionaryName": string_prop("limit to one image module",
                                                                       min_length=1)},
                                        ["pattern"]), self.search_method_source))

    def find_implementors(self, arguments):
        selector = catalog.require_selector(required_text(arguments, "selector"))
        hits = []
        for module, label, node, owner in code_units(self.view):
            if owner is not None and splice.spelled(selector, node.name, owner):
                hits.append(label.rpartition(".")[0])
        for name in catalog.kernel_classes():
            if selector in vars(getattr(builtins, name)):
                hits.append(f"{KERNEL}.{name}")
        return capped(hits, f"implementors of {catalog.echoed(selector)}", catalog.uncompiled(self.view))

    def find_references_to(self, arguments):
        name = catalog.dotted_name(required_text(arguments, "name"), "a global name "
                                   "(a Python identifier, or a dotted one: module.Class)")
        hits = []
        for module in self.view.module_names():
            units = _units(self.view, module)
            if not units:
                continue
            names, chains = spellings_of(self.view, module, name)   # what means `name` there
            scopes = _globals_of_defs(self.view, module) if names else {}
            for (_, label, node, _), mentions in zip(units, _mentions_in(self.view, module)):
                used = scopes.get((node.name, node.lineno))
                if used is None:    # not known: every mention counts
                    found = mentions.has("all", names, chains)
                else:
                    # A def's decorators, defaults and annotations run where it is written; its
                    # body is a scope of its own, where a parameter or local of the name is no global.
                    found = (bool(names & used) or mentions.has("body", set(), chains)
                             or mentions.has("outer", names, chains)
                             or mentions.has("annotations", names, set()))
                if found or _imports(self.view, module, mentions.imports_from, name):
                    hits.append(label)
        return capped(hits, f"references to {catalog.echoed(name)}", catalog.uncompiled(self.view))

    def find_senders(self, arguments):
        selector = catalog.require_selector(required_text(arguments, "selector"))
        return capped(senders(self.view, selector), f"senders of {catalog.echoed(selector)}",
                      catalog.uncompiled(self.view))

    def search_method_source(self, arguments):
        pattern = required_text(arguments, "pattern")
        module_filter = arguments.get("dictionaryName")
        if module_filter is not None:
            module_filter = catalog.dictionary_name(module_filter)
            catalog.require_module(self.view, module_filter)
        # Lines end in \n here whatever the module's own endings (CRLF, CR), as they do
        # in the pattern a client writes.
        pattern = splice.with_newlines(pattern, "\n")
        pieces = pattern.split("\n")
        modules = {}   # module -> its _SourceLines, or None when it cannot hold the pattern
        hits = []
        for module, label, node, _ in code_units(self.view, module_filter):
            if module not in modules:
                source = self.view.derived(module, "search.lines", _SourceLines)
                modules[module] = source if source.may_hold(pieces) else None
            source = modules[module]
            if source is None or not source.may_hold(pieces, node):
                continue
            if pattern in source.segment(node):
                hits.append(label)
        return capped(hits, f"methods containing {catalog.quoted(pattern)}",
                      catalog.uncompiled(self.view, module_filter))


class _SourceLines:
    """A module's source split once (not once per def: quadratic in a big module), and
    with \\n line endings, to rule out cheaply the defs that cannot hold a pattern; and
    the defs' segments, each cut once. Kept per text of the module (View.derived)."""

    def __init__(self, text: str):
        self.text = text
        self.lines = splice.lines_of(text)
        self._plain = splice.lines_with_newline(self.lines, "\n")
        self._segments = {}   # a def's position -> its segment, with \n line endings

    def segment(self, node) -> str:
        """The def's source as splice.segment cuts it (tokenizing it), with \\n line endings."""
        where = (node.lineno, node.col_offset, node.end_lineno, node.end_col_offset)
        if where not in self._segments:
            self._segments[where] = splice.with_newlines(splice.segment(self.text, node, self.lines), "\n")
        return self._segments[where]

    def may_hold(self, pieces: list[str], node=None) -> bool:
        """False when the def's text (the whole module's, for no `node`) cannot hold the
        pattern split at its newlines into `pieces`: each piece lies in one line of the
        def's segment, which is a line of its source with some leading whitespace cut, so
        a def whose source lacks a piece is ruled out without tokenizing it (what
        splice.segment does to keep its string literals' lines whole). The same lines as
        the segment's: down to the comments that end the def (splice.last_line)."""
        lines = self._plain if node is None else self._plain[
            splice.first_line(node) - 1:splice.last_line(self.lines, node)]
        text = "".join(lines)
        return all(piece in text for piece in pieces)


def _imports(view, module: str, imports_from: list[ast.ImportFrom], name: str) -> bool:
    """Whether the def's own code (its `imports_from`) imports the dotted `name` (`from
    email.message import Message` in a body, as code breaking an import cycle does): a
    reference, though the name it binds there is a local, no global."""
    target, _, short = name.rpartition(".")
    return bool(target) and any(
        view.imported_from(module, node) == target and any(alias.name == short for alias in node.names)
        for node in imports_from)


def _calls_in(view, module: str) -> list[tuple[set[str], set[str]]]:
    """For each of the module's code units (in code_units' order), the names its code calls:
    as an attribute (`x.name(...)`) and bare (`name(...)`), a decorator written without
    arguments (`@name`, `@x.name`) too, which Python calls with the def. Found once per
    text of it."""
    def find(_):
        found = []
        for _, _, node, _ in _units(view, module):
            attributes, names = set(), set()
            for sub in walking.walk(node):
                if isinstance(sub, ast.Call):
                    called = [sub.func]
                elif isinstance(sub, _DECORATED):
                    called = [decorator for decorator in sub.decorator_list
                              if not isinstance(decorator, ast.Call)]
                else:
                    continue
                for func in called:
                    if isinstance(func, ast.Attribute):
                        attributes.add(func.attr)
                    elif isinstance(func, ast.Name):
                        names.add(func.id)
            found.append((attributes, names))
        return found
    return view.derived(module, "search.calls", find)


_BODY_AND_OUTER = frozenset({"body", "decorator_list", "args", "returns"})   # a def's fields


class _Mentions:
    """The names (Name nodes) and dotted chains (`a.b.c`: Attributes down to a Name) a def's
    code spells, in its whole code ("all"), its body ("body") and its decorators, arguments
    and return annotation ("outer"), and the annotations in its body ("annotations": `node:
    Context = self`, a nested def's, which the symbol table leaves out in a module of
    `from __future__ import annotations`); and the `from ... import`s in it."""

    def __init__(self, node):
        outer_nodes = node.decorator_list + [node.args, node.returns]
        # Each part walked once; "all" is their union with the def's other parts (type_params).
        # Picked by field: iterating the body's statements to leave them out cost a third.
        rest_nodes = []
        for field in node._fields:
            if field not in _BODY_AND_OUTER:
                value = getattr(node, field, None)
                rest_nodes += [part for part in (value if isinstance(value, list) else [value])
                               if isinstance(part, ast.AST)]
        body, outer, rest = _spelled(node.body), _spelled(outer_nodes), _spelled(rest_nodes)
        self._regions = {"body": body[:2], "outer": outer[:2],
                         "annotations": _spelled(_annotations_in(node.body))[:2],
                         "all": (body[0] | outer[0] | rest[0], body[1] | outer[1] | rest[1])}
        self.imports_from = body[2] + outer[2] + rest[2]

    def has(self, region: str, names: set[str], chains: set[str]) -> bool:
        """Whether the region's code has a Name in `names` or spells a chain in `chains`."""
        spelled_names, spelled_chains = self._regions[region]
        return not (names.isdisjoint(spelled_names) and chains.isdisjoint(spelled_chains))


def _annotations_in(body: list[ast.stmt]) -> list[ast.expr]:
    """The annotations written in `body`: of its variables and of the defs and lambdas in it."""
    found = []
    for statement in body:
        for sub in walking.walk(statement):
            if isinstance(sub, ast.AnnAssign):
                found.append(sub.annotation)
            elif isinstance(sub, ast.arg) and sub.annotation is not None:
                found.append(sub.annotation)
            elif isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)) and sub.returns is not None:
                found.append(sub.returns)
    return found


def _spelled(nodes) -> tuple[set[str], set[str], list[ast.ImportFrom]]:
    """The names, dotted chains and `from ... import`s in the code of `nodes`."""
    names, chains, imports_from = set(), set(), []
    for node in nodes:
        for sub in walking.walk(node) if node is not None else ():
            if isinstance(sub, ast.Name):
                names.add(sub.id)
            elif isinstance(sub, ast.Attribute):
                chain = _chain(sub)
                if chain is not None:
                    chains.add(chain)
            elif isinstance(sub, ast.ImportFrom):
                imports_from.append(sub)
    return names, chains, imports_from


def _chain(node: ast.Attribute) -> str | None:
    """`a.b.c` for Attributes down to a Name, as ast.unparse writes it; None for any other."""
    names = splice.dotted_names(node)
    return None if names is None else ".".join(names)


def _mentions_in(view, module: str) -> list[_Mentions]:
    """_Mentions of each of the module's code units (in code_units' order), found once per text."""
    return view.derived(module, "search.mentions",
                        lambda _: [_Mentions(node) for _, _, node, _ in _units(view, module)])


def _globals_of_defs(view, module: str) -> dict[tuple[str, int], set[str]]:
    """For each top-level function and method (of nested classes too), by (name, line of
    its def): the names its body and the scopes nested in it use as globals, as Python's
    symbol table resolves them. Empty when the table cannot be made (`nonlocal` at top level parses but does
    not compile): then every mention counts. Made once per text of the module."""
    return view.derived(module, "search.globals", _symbol_globals)


def _symbol_globals(source: str) -> dict[tuple[str, int], set[str]]:
    try:
        top = symtable.symtable(source, "<image module>", "exec")
    except (SyntaxError, ValueError, RecursionError):
        return {}
    found = {}

    def collect(tables):
        for table in tables:
            if table.get_type() == "function":
                found[(table.get_name(), table.get_lineno())] = _globals_used(table)
            elif table.get_type() == "class":   # its methods, and those of classes in it
                collect(table.get_children())
    collect(top.get_children())
    return found


def _globals_used(table) -> set[str]:
    """The globals `table` and the scopes nested in it use. A loop, not recursion: a
    chain of lambdas nested as deeply as Python compiles met the recursion limit."""
    used, tables = set(), [table]
    while tables:
        table = tables.pop()
        used |= {symbol.get_name() for symbol in table.get_symbols()
                 if symbol.is_global() and (symbol.is_referenced() or symbol.is_assigned())}
        tables.extend(table.get_children())
    return used


def spellings_of(view, module: str, name: str) -> tuple[set[str], set[str]]:
    """The bare names and dotted chains by which `module`'s code refers to the global
    `name`. A bare name is any global of that name; `pkg.mod.Class` is `Class` only in
    pkg.mod itself or where it is imported from there (`from .mod import Class as C`: `C`),
    and `pkg.mod.Class` or `m.Class` where the module is (`import pkg.mod as m`), so
    another module's own `Class` is no reference to it. `builtins.len` is `len` in every
    module that does not bind `len` itself (a `*` import is not taken to)."""
    if "." not in name:
        return {name}, set()
    target, _, short = name.rpartition(".")
    if target == KERNEL:
        # A bare `len: int` binds nothing: `len(x)` there is the builtin still.
        names = set() if splice.binds(view.tree(module).body, short, star=False, annotated=False) else {short}
    else:
        names = {short} if module == target else set()
    chains = {name}
    for node in view.import_statements(module):
        if isinstance(node, ast.ImportFrom):
            base = view.imported_from(module, node)
            for alias in node.names:
                if base == target and alias.name in (short, "*"):
                    names.add(alias.asname or short)
                elif f"{base}.{alias.name}" == target:
                    chains.add(f"{alias.asname or alias.name}.{short}")
        elif isinstance(node, ast.Import):
            chains.update(f"{alias.asname}.{short}" for alias in node.names
                          if alias.asname and alias.name == target)
    return names, chains
