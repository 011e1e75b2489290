"""browsing: one class at a time — its shape, source, definition, hierarchy, methods."""

from __future__ import annotations

import ast
import functools
import inspect
import types

from gsmcpd.image import catalog, own, splice
from gsmcpd.worker import module_functions
from gsmcpd.worker.paging import PAGED, offset_prop, page_of
from gsmcpd.worker.registry import Tool
from gsmcpd.worker.toolset import (ToolError, Toolset, bool_prop, did_you_mean, object_schema, repeated,
                                   string_prop)
from gsmcpd.worker.toolsets.search import spellings_of

CLASS_NAME = {"className": string_prop("a class: bare name if unique, or module.Class",
                                          min_length=1)}
SELECTOR = {"selector": string_prop("the method name", min_length=1)}
META = {"meta": bool_prop("true selects the class side (classmethod/staticmethod)")}


def qualname(view, cls: type) -> str:
    """A class's dotted name as the tools give it: under the module whose class statement
    made it (View.qualified, whatever its body or metaclass bind to `__module__`); a builtin's bare."""
    return own.QUALNAME(cls) if view.home(cls) == "builtins" else view.qualified(cls)


# Descriptors every plain class gets for its instances' attributes; not methods.
NOT_METHODS = frozenset({"__dict__", "__weakref__"})


def member_kind(value) -> str | None:
    """'instance', 'class', 'static', 'property', or None for a plain attribute."""
    # Not callable themselves, these bind a method made of what they wrap.
    if isinstance(value, (functools.singledispatchmethod, functools.partialmethod)):
        return member_kind(value.func)
    if isinstance(value, staticmethod):
        return "static"
    # A C type's classmethod (int.from_bytes) and computed attribute (int.real, type.__name__)
    # are what classmethod and property are in Python. Told by type, not by its name: a
    # class of the code's may bear that name, or a metaclass whose `__name__` raises.
    if isinstance(value, classmethod) or type(value) is types.ClassMethodDescriptorType:
        return "class"
    if isinstance(value, (property, functools.cached_property)) or type(value) is types.GetSetDescriptorType:
        return "property"
    if callable(value) and not isinstance(value, type):
        return "instance"
    if type(value) in (types.MethodDescriptorType, types.WrapperDescriptorType):
        return "instance"
    return None


def instance_variables(cls: type | None, node: ast.ClassDef | None) -> list[str]:
    names: list[str] = []
    class_name = own.NAME(cls) if cls is not None else node.name

    def add(name):
        # A private `self.__token` is stored as `_Class__token`, as list_methods names
        # a private method; a dunder is Python's, not the class's.
        name = splice.mangled(class_name, name)
        if name not in names and not (name.startswith("__") and name.endswith("__")):
            names.append(name)

    if cls is not None:
        slots = cls.__dict__.get("__slots__", ())
        for name in ([slots] if isinstance(slots, str) else slots):
            add(name)
        # As its dictionary holds them (not inspect.get_annotations: it asks the class's
        # `__module__`, which its metaclass may make raise); a getset is type's own, for its
        # instances', and no dict a `def __annotations__` the class body or an edit wrote.
        annotations = own.DICT(cls).get("__annotations__")
        for name in dict.keys(annotations) if isinstance(annotations, dict) else ():
            add(name)
    if node is not None:
        for item in node.body:
            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                add(item.target.id)
        for method in splice.methods_of(node):
            self_name = method.args.args[0].arg if method.args.args else None
            for sub in ast.walk(method):
                targets = []
                if isinstance(sub, ast.Assign):
                    targets = sub.targets
                elif isinstance(sub, (ast.AugAssign, ast.AnnAssign)):
                    targets = [sub.target]
                for target in targets:
                    for element in ast.walk(target):
                        if (isinstance(element, ast.Attribute) and isinstance(element.value, ast.Name)
                                and element.value.id == self_name):
                            add(element.attr)
    return names


def slots_only(cls: type) -> frozenset[str] | None:
    """The attributes an instance of `cls` can hold when its slots are all it has: those
    of the class and its bases, as stored (`_Class__b`); None when it can hold any name
    (a __dict__: a base without __slots__, or "__dict__" among them; a __setattr__ of
    the class's own, whatever that does with it)."""
    if cls.__dictoffset__ or any("__setattr__" in vars(c) for c in cls.__mro__ if c is not object):
        return None
    return frozenset(name for c in cls.__mro__ for name, value in vars(c).items()
                     if isinstance(value, types.MemberDescriptorType))


def not_held(cls: type | None, names: list[str]) -> list[str]:
    """Those of `names` (instance_variables) that no instance of a class with only slots
    can hold: assigning one raises AttributeError. A name assigned through a descriptor
    of the class's (a property's setter) is held by that, not refused."""
    held = slots_only(cls) if cls is not None else None
    if held is None:
        return []
    return [name for name in names if name not in held and not _set_through_descriptor(cls, name)]


def _set_through_descriptor(cls: type, name: str) -> bool:
    """Whether assigning `name` on an instance goes to a data descriptor of the class's."""
    for c in cls.__mro__:
        if name in vars(c):
            return hasattr(type(vars(c)[name]), "__set__")
    return False


def no_such_method_hint(classdef: ast.ClassDef, selector: str) -> str:
    """Where to go from a method name the class does not define: a near name it does, or
    the tool that lists them."""
    return (did_you_mean(selector, [method.name for method in splice.methods_of(classdef)])
            or "; list_methods shows its methods")


class _Plain:
    pass


# What Python sets on a class as it makes it (__module__, __doc__; __dict__, __weakref__
# unless __slots__ leaves them out), whatever its body says.
EVERY_CLASS_SETS = frozenset(vars(_Plain))


def no_def_hint(view, ref, cls: type | None, classdef: ast.ClassDef, selector: str) -> str:
    """Why the class body has no def of `selector`, for get_method_source's and
    delete_method's notFound: the body declares it global, a class-level statement binds
    it, the class has it otherwise (an attribute, those every class has included; a method
    it inherits), or else a near name; a class whose module cannot be loaded is told from
    its source alone."""
    shown = catalog.echoed(selector)   # the client's, though a name of the class's too
    declared = splice.global_declarations(classdef, selector)
    if declared:
        return (f" (its class body declares {shown} global, line {declared[0].lineno}: a def "
                "of that name there binds the module's name, not a method of the class)")
    where = class_level_binding(view, ref, classdef, selector)
    if where is not None:
        return f" (it binds {shown} by a class-level statement, {where}; get_class_definition shows it)"
    if cls is not None:
        return _had_hint(view, cls, ref.qualified, selector) or no_such_method_hint(classdef, selector)
    found = _where_found(_Plain, selector)   # what any class has
    if found is not None and not _a_method(*found):
        return f" ({shown} is an attribute Python gives classes, not a method)"
    return no_such_method_hint(classdef, selector)


def _where_found(cls: type, selector: str) -> tuple[type, str, bool] | None:
    """Where the live class finds `selector`: the first class of its MRO binding it (the
    name as bound there, a private one mangled), else of its metaclass's MRO; with whether
    it is the metaclass's. None when neither has it."""
    for owner in cls.__mro__:
        name = splice.mangled(own.NAME(owner), selector)
        if name in vars(owner):
            return owner, name, False
    owner = next((owner for owner in type(cls).__mro__ if selector in vars(owner)), None)
    return None if owner is None else (owner, selector, True)


def _a_method(owner: type, name: str, on_metaclass: bool) -> bool:
    """Whether what `owner` binds to `name` is a method, as list_methods lists one; a
    metaclass's computed attribute (type's __name__) is read on the class as an attribute."""
    kinds = ("instance", "class", "static") + (() if on_metaclass else ("property",))
    return member_kind(vars(owner)[name]) in kinds and name not in NOT_METHODS


def _had_hint(view, cls: type, qualified: str, selector: str) -> str:
    """What the live class has of `selector` though its body writes no def of it, and
    where from, in words; "" when it has none."""
    found = _where_found(cls, selector)
    if found is None:
        return ""
    owner, name, on_metaclass = found
    method, selector = _a_method(*found), catalog.echoed(selector)   # the client's, any length
    if on_metaclass:
        source = qualname(view, owner) + (", its metaclass" if owner is type(cls)
                                          else f", a base of its metaclass {qualname(view, type(cls))}")
        return (f" ({selector} is a method of {source}: it runs on the class itself, not on its instances)"
                if method else f" ({selector} is an attribute, not a method: the class has it from {source})")
    if owner is not cls:
        return (f" (it inherits it from {qualname(view, owner)})" if method else
                f" ({selector} is an attribute, not a method: it inherits it from {qualname(view, owner)})")
    if method:
        return (" (the live class has one, but no def in its class body: a decorator or code run "
                "on the class set it)")
    return (f" ({selector} is an attribute, not a method: Python set it as it made the class)"
            if name in EVERY_CLASS_SETS else f" ({selector} is an attribute of {qualified}, not a method)")


def kernel_method_text(view, ref, cls: type, selector: str) -> str:
    """get_method_source's notFound for a kernel class, which has no source: a method it
    has is said to be a kernel method; a name it lacks, or has as an attribute or through its
    metaclass, is said to be that, as for an image class, never called a kernel method."""
    found = _where_found(cls, selector)
    if found is not None and not found[2] and _a_method(*found):
        return f"{ref.name}.{selector} is a kernel method: no Python source"
    return (f"{ref.qualified} defines no method {catalog.echoed(selector)}"
            + (_had_hint(view, cls, ref.qualified, selector) or did_you_mean(selector, _kernel_methods(cls))
               or "; list_methods shows its methods"))


def _kernel_methods(cls: type) -> list[str]:
    return [name for name in dir(cls) if (found := _where_found(cls, name)) and _a_method(*found)]


class BrowsingToolset(Toolset):
    name = "browsing"
    tool_names = ("describe_class", "export_class_source", "get_class_definition",
                  "get_class_hierarchy", "get_method_source", "list_methods")
    read_only_safe = frozenset(tool_names)
    idempotent = frozenset(tool_names)

    def register(self, registry):
        one_class = object_schema(CLASS_NAME, ["className"])
        registry.add(Tool("describe_class", "A class's bases, MRO, instance variables and methods.",
                          one_class, self.describe_class))
        registry.add(Tool("export_class_source", "The class's full source as it stands in its module.",
                          one_class, self.export_class_source))
        registry.add(Tool("get_class_definition", "The class header and class-level assignments, "
                          "without method bodies.", one_class, self.get_class_definition))
        registry.add(Tool("get_class_hierarchy", "The superclass chain and the direct subclasses "
                          f"in the image (the subclasses {PAGED}).",
                          object_schema({**CLASS_NAME, **offset_prop("subclasses")}, ["className"]),
                          self.get_class_hierarchy))
        registry.add(Tool("get_method_source", "One method's source (decorators included); "
                          "className a dictionary for one of its module-level functions.",
                          object_schema({**CLASS_NAME, **SELECTOR, **META}, ["className", "selector"]),
                          self.get_method_source))
        registry.add(Tool("list_methods", "Methods grouped as instance, class, static and property; "
                          "inherited ones are marked with their defining class; the methods of an image "
                          "metaclass the class reaches are class-side, marked metaclass. For an image "
                          "class, those it inherits from kernel classes (unittest.TestCase, dict...) "
                          "are only counted per class (kernelInherited) unless includeKernelInherited.",
                          object_schema({**CLASS_NAME, "includeKernelInherited": bool_prop(
                              "also list an image class's methods inherited from kernel classes "
                              "(standard library, builtins, installed packages); default false")},
                              ["className"]), self.list_methods))

    # -- helpers ---------------------------------------------------------

    def _resolve(self, arguments):
        """(ref, live class or None, class node or None, why the class is not live)."""
        ref = catalog.resolve_class(self.view, arguments["className"])
        not_live = None
        try:
            cls = catalog.live_class(self.view, ref)
        except ToolError as error:
            if ref.is_kernel:
                raise
            cls = None      # a module that will not import is browsed from source
            not_live = error.message     # ...and why: that, or the name bound to no class
        node = None if ref.is_kernel else catalog.class_node(self.view, ref)
        return ref, cls, node, not_live

    def _source(self, ref) -> str:
        if ref.is_kernel:
            raise ToolError("notFound", f"{ref.name} is a kernel class (builtins): it has no "
                            "Python source")
        return self.view.source(ref.module)

    # -- tools -----------------------------------------------------------

    def describe_class(self, arguments):
        ref, cls, node, not_live = self._resolve(arguments)
        if cls is not None:
            bases = [qualname(self.view, b) for b in cls.__bases__]
            mro = [qualname(self.view, c) for c in cls.__mro__]
            methods = sorted(name for name, value in vars(cls).items()
                             if member_kind(value) and name not in NOT_METHODS)
            # A `def __doc__` makes it a function, which no JSON answer can carry; read from
            # its namespace, as a metaclass's __doc__ property (which may raise) is no class's doc.
            doc = vars(cls).get("__doc__")
            doc = doc if isinstance(doc, str) else None
            metaclass = None if type(cls) is type else qualname(self.view, type(cls))
        else:
            bases = [ast.unparse(b) for b in node.bases]
            mro = []
            methods = sorted(splice.mangled(node.name, m.name) for m in splice.methods_of(node))
            doc = ast.get_docstring(node)
            metaclass = next((ast.unparse(k.value) for k in node.keywords if k.arg == "metaclass"), None)
        variables = instance_variables(cls, node)
        refused = not_held(cls, variables)
        variables = [name for name in variables if name not in refused]
        structured = {"class": ref.qualified, "dictionary": ref.module, "bases": bases, "mro": mro,
                      "instanceVariables": variables, "methods": methods, "doc": doc,
                      "metaclass": metaclass}
        lines = [f"class {ref.qualified}", f"bases: {', '.join(bases) or '-'}"]
        if mro:
            lines.append(f"mro: {' -> '.join(mro)}")
        if metaclass:   # its methods are the class side (list_methods shows them)
            lines.append(f"metaclass: {metaclass}")
        lines.append(f"instance variables: {', '.join(variables) or '-'}")
        if refused:   # written in its source, but a bug there: the class has no room for them
            lines.append(f"not in its __slots__ (no instance can hold them: assigning one raises "
                         f"AttributeError): {', '.join(refused)}")
            structured["notInSlots"] = refused
        lines.append(f"methods: {', '.join(methods) or '-'}")
        if doc:
            lines.append(f"doc: {doc}")
        if cls is None:
            lines.append(f"(from source: {not_live})")
            structured["fromSource"] = repeated(not_live, "the reason")   # whole in the text
        return with_class_note(self.view, ref, {"text": "\n".join(lines), "structured": structured})

    def export_class_source(self, arguments):
        ref = catalog.resolve_class(self.view, arguments["className"])
        source = self._source(ref)
        text = splice.segment(source, catalog.class_node(self.view, ref))
        return with_class_note(self.view, ref, {"text": text, "structured": {
            "class": ref.qualified, "source": text}})

    def get_class_definition(self, arguments):
        ref = catalog.resolve_class(self.view, arguments["className"])
        text = splice.class_definition(self._source(ref), ref.name, catalog.class_node(self.view, ref))
        return with_class_note(self.view, ref, {"text": text, "structured": {
            "class": ref.qualified, "definition": text}})

    def get_class_hierarchy(self, arguments):
        ref, cls, node, not_live = self._resolve(arguments)
        if cls is None:
            return self._hierarchy_from_source(ref, node, not_live, arguments)
        self.view.load_all()
        chain = [qualname(self.view, c) for c in reversed(cls.__mro__)]
        # A base of the whole image (object) has thousands.
        page = page_of(catalog.image_subclasses(self.view, cls), arguments, "subclasses")
        text = "\n".join(["superclasses: " + " > ".join(chain),
                          "subclasses: " + (", ".join(page.items) or "-")] + page.note)
        return {"text": text, "structured": {"class": ref.qualified, "superclasses": chain,
                                             "subclasses": page.items, **page.fields}}

    def _hierarchy_from_source(self, ref, node, not_live, arguments):
        """A class whose module cannot be loaded (shadowed, fails to import): its bases as
        written, and the image's class statements that name it as a base, as their module's
        code spells it, subscripted or not (`Base[int]`, see named_class; no chain: that
        needs the live classes)."""
        bases = [ast.unparse(base) for base in node.bases]
        subclasses = []
        for module in self.view.module_names():
            tree = self.view.tree(module)
            if tree is None:
                continue
            names, chains = spellings_of(self.view, module, ref.qualified)
            subclasses += [f"{module}.{qualified}"
                           for qualified, sub, enclosing in _class_statements_run(tree)
                           if any(_names_global(base, names | chains, enclosing) for base in sub.bases)]
        page = page_of(sorted(set(subclasses)), arguments, "subclasses")
        text = "\n".join([f"bases (as written): {', '.join(bases) or '-'}",
                          "subclasses: " + (", ".join(page.items) or "-"), f"(from source: {not_live})"]
                         + page.note)
        return {"text": text, "structured": {"class": ref.qualified, "superclasses": [], "bases": bases,
                                             "subclasses": page.items, "fromSource": repeated(not_live, "the reason"),
                                             **page.fields}}

    def get_method_source(self, arguments):
        dictionary = catalog.function_dictionary(self.view, arguments["className"])
        if dictionary is not None:
            return module_functions.function_source(self.view, dictionary, arguments)
        ref, cls, node, not_live = self._resolve(arguments)
        selector, meta = catalog.require_selector(arguments["selector"]), arguments.get("meta")
        if ref.is_kernel:
            raise ToolError("notFound", kernel_method_text(self.view, ref, cls, selector))
        found, note = splice.method_nodes(node, selector), None
        if not found:
            guarded = splice.guarded_method_nodes(node, selector)
            found = [item for _, item in guarded]
            if guarded:
                note = splice.branch_note(guarded[0][0], "class")
        if not found and meta is not False:
            answer = self._metaclass_method_source(ref, cls, selector)
            if answer:
                return answer
        if not found:
            owner = metaclass_owner(self.view, cls, selector)
            if owner is not None:   # meta false (or no def to show): say where it is
                raise ToolError("notFound", f"{ref.qualified} defines no method "
                                f"{catalog.echoed(selector)}: {metaclass_method_text(self.view, ref.qualified, owner, selector)}"
                                + ("; get_method_source with meta true shows it" if meta is False else ""))
            raise ToolError("notFound", f"{ref.qualified} defines no method {catalog.echoed(selector)}"
                            + no_def_hint(self.view, ref, cls, node, selector))
        kind = live_kind(cls, ref.name, selector)
        found = filter_by_meta(found, meta, ref.qualified, selector, kind)
        text = splice.segments(self.view.source(ref.module), found)
        structured = {"class": ref.qualified, "selector": selector,
                      "kind": kind or splice.method_kind(found[0]), "source": text}
        if note:
            structured["note"] = note
        return {"text": text + (f"\n({note})" if note else ""), "structured": structured}

    def _metaclass_method_source(self, ref, cls, selector) -> dict | None:
        """The answer for a method of the class's metaclass (written in the image) that the
        class reaches as its own (`WithMeta.meta_method()`): its class side, as GemStone has
        it; None when there is none."""
        owner = metaclass_owner(self.view, cls, selector)
        if owner is None:
            return None
        owner_ref = catalog.resolve_class(self.view, qualname(self.view, owner))
        nodes = splice.method_nodes(catalog.class_node(self.view, owner_ref), selector)
        if not nodes:
            return None
        text = splice.segments(self.view.source(owner_ref.module), nodes)
        kind = metaclass_member_kind(owner, selector)
        note = (f"defined in {owner_ref.qualified}, the metaclass of {ref.qualified}: a "
                + (f"property of {ref.qualified}'s class side, read on the class "
                   f"({ref.name}.{selector})" if kind == "property" else
                   f"method of {ref.qualified}'s class side, called with the class"))
        return {"text": f"{text}\n({note})",
                "structured": {"class": ref.qualified, "selector": selector, "kind": kind,
                               "source": text, "definedIn": owner_ref.qualified,
                               "metaclass": True, "note": note}}

    def list_methods(self, arguments):
        ref, cls, node, not_live = self._resolve(arguments)
        groups: dict[str, list[dict]] = {"instance": [], "class": [], "static": [], "property": []}
        counted: dict[str, int] = {}   # kernel class: how many of its methods were left out
        if cls is None:
            for method in splice.methods_of(node):
                groups[splice.method_kind(method)].append(
                    {"name": splice.mangled(node.name, method.name), "definedIn": ref.qualified})
        else:
            seen = set()
            # An image class's kernel bases (a TestCase's ~90 methods) would bury its own.
            counting = not arguments.get("includeKernelInherited") and self.view.owns_module(self.view.home(cls))
            for owner in cls.__mro__:
                if owner is object and cls is not object:
                    break
                kernel = counting and owner is not cls and not self.view.owns_module(self.view.home(owner))
                for name, value in sorted(vars(owner).items()):
                    if name in seen:
                        continue
                    # A plain attribute hides what the bases bind to its name, as a method does.
                    seen.add(name)
                    kind = member_kind(value)
                    if kind is None or name in NOT_METHODS:
                        continue
                    if kernel:
                        counted[qualname(self.view, owner)] = counted.get(qualname(self.view, owner), 0) + 1
                        continue
                    entry = {"name": name, "definedIn": qualname(self.view, owner)}
                    if owner is not cls:
                        entry["inherited"] = True
                    groups[kind].append(entry)
            for owner, name in metaclass_members(self.view, cls):
                entry = {"name": name, "definedIn": qualname(self.view, owner), "metaclass": True}
                if member_kind(vars(owner)[name]) == "property":   # read on the class, not called
                    entry["property"] = True
                groups["class"].append(entry)
        lines = []
        for kind, entries in groups.items():
            if entries:
                lines.append(f"{kind}:")
                lines += [f"  {e['name']}" + _origin(e) for e in entries]
        text, structured = "\n".join(lines) or f"{ref.qualified} has no methods", {
            "class": ref.qualified, "methods": groups}
        if counted:
            if not lines:
                text = f"{ref.qualified} has no methods of its own or from image classes"
            structured["kernelInherited"] = {"count": sum(counted.values()), "classes": counted}
            text += (f"\n(not listed: {sum(counted.values())} methods inherited from kernel classes, "
                     + ", ".join(f"{count} from {name}" for name, count in counted.items())
                     + "; includeKernelInherited true lists them)")
        if cls is None:   # its own defs only: what it inherits needs the live class
            text, structured["fromSource"] = f"{text}\n(from source: {not_live})", repeated(not_live, "the reason")
        return {"text": text, "structured": structured}


def _origin(entry: dict) -> str:
    if entry.get("metaclass"):
        return f"  ({'property ' if entry.get('property') else ''}from metaclass {entry['definedIn']})"
    return f"  (inherited from {entry['definedIn']})" if entry.get("inherited") else ""


def metaclass_members(view, cls: type) -> list[tuple[type, str]]:
    """(metaclass, name) for the methods of the class's image-written metaclasses that
    the class reaches as its own (`WithMeta.meta_method`: no class of its MRO binds the
    name): in GemStone terms its class side."""
    found, seen = [], set()
    for owner in type(cls).__mro__:
        if not view.writes(owner):
            continue
        for name, value in sorted(vars(owner).items()):
            if (member_kind(value) is None or name in seen or name in NOT_METHODS
                    or any(name in vars(klass) for klass in cls.__mro__)):
                continue
            seen.add(name)
            found.append((owner, name))
    return found


def metaclass_owner(view, cls: type | None, selector: str) -> type | None:
    """The image-written metaclass whose method `selector` the class reaches as its class
    side (metaclass_members), or None."""
    if cls is None:
        return None
    return next((owner for owner, name in metaclass_members(view, cls)
                 if name == splice.mangled(own.NAME(owner), selector)), None)


def metaclass_member_kind(owner: type, selector: str) -> str:
    """'property' for a metaclass's property (`Made.label`, read on the class), else
    'class': a method of the class side, called with the class."""
    value = vars(owner)[splice.mangled(own.NAME(owner), selector)]
    return "property" if member_kind(value) == "property" else "class"


def class_level_binding(view, ref, node: ast.ClassDef, selector: str) -> str | None:
    """The class-level statement binding `selector` with no def of it (`alias = greet`, in a
    class-level block too, then naming that block), quoted with its line, or None."""
    bound = splice.attribute_nodes(node, selector, blocks=True)
    if not bound:
        return None
    statement = bound[-1]
    written = splice.segment(view.source(ref.module), statement).strip()
    if isinstance(statement, ast.ClassDef):
        written = f"class {statement.name}"
    elif "\n" in written:
        written = written.splitlines()[0] + " ..."
    written = catalog.echoed(written)   # `x...x = 1`: a name the client sends as a selector too
    block = next((top for top in node.body if top is not statement
                  and statement in splice.statements_within([top])), None)
    branch = "" if block is None else ", " + splice.branch_note(block, "class")
    return f"{written!r} at line {statement.lineno}{branch}"


def metaclass_method_text(view, qualified: str, owner: type, selector: str) -> str:
    """Where a metaclass method (or property) a class reaches as its class side is, and
    how to edit it: said by every tool that meets it on the class."""
    meta = qualname(view, owner)
    what = "property" if metaclass_member_kind(owner, selector) == "property" else "method"
    reached = (f"{catalog.echoed(selector)} is {meta}'s {what}, reached as {qualified}'s class side ({meta} is its "
               "metaclass)")
    owner_ref = catalog.resolve_class(view, meta)
    node = catalog.class_node(view, owner_ref)
    where = None if splice.method_nodes(node, selector) else class_level_binding(view, owner_ref, node, selector)
    if where is not None:   # `build = make`: no def of that name to compile or delete
        return (f"{reached}, bound by {meta}'s class-level statement {where} (get_class_definition "
                f"on {meta} shows it); compile_class_definition on {meta} changes it, for every "
                f"class {meta} makes")
    return f"{reached}; compile_method or delete_method on {meta} changes it, for every class {meta} makes"


def _class_statements_run(tree: ast.Module) -> list[tuple[str, ast.ClassDef, ast.ClassDef | None]]:
    """(dotted name, statement, the class statement whose body holds it or None) for each
    class statement the module runs as it is imported: the module-level ones and those
    nested in them (`Outer.Inner`, any depth, class-level blocks too); not one in a def."""
    found = []

    def walk(prefix, enclosing, statements):
        for node in statements:
            found.append((prefix + node.name, node, enclosing))
            walk(f"{prefix}{node.name}.", node, [inner for _, inner in splice.defs_in_blocks(node.body)
                                                  if isinstance(inner, ast.ClassDef)])
    walk("", None, splice.module_level_classes(tree))
    return found


def _names_global(base: ast.expr, spellings: set[str], enclosing: ast.ClassDef | None) -> bool:
    """Whether the base expression spells one of `spellings`, the module's names of a global
    class: in a nested class statement, a name the enclosing class body binds (`class Sub(Base)`
    beside its own `class Base`) is that body's, not the global (only that body's: class
    scopes do not nest)."""
    base = named_class(base)
    dotted = splice.dotted_names(base)
    # A bare `Base: type` there binds nothing: the base reads the global still.
    return ast.unparse(base) in spellings and not (enclosing is not None and dotted is not None and splice.binds(
        enclosing.body, dotted[0], star=False, annotated=False))


def named_class(base: ast.expr) -> ast.expr:
    """The class a base expression names: `Base[int]` (a generic's alias) makes a subclass
    of Base, as its __mro_entries__ tells the class statement, and the live class's
    __bases__ holds Base; so does `Base[T][int]`."""
    while isinstance(base, ast.Subscript):
        base = base.value
    return base


def with_class_note(view, ref, answer: dict) -> dict:
    """`answer` with catalog.class_note, if the class has one, as its `note` and a last line."""
    note = catalog.class_note(view, ref)
    if note is None:
        return answer
    return {"text": f"{answer['text']}\n({note})", "structured": {**answer["structured"], "note": note}}


def live_kind(cls: type | None, class_name: str, selector: str) -> str | None:
    """The kind of what the live class binds to the method's name, if it binds it:
    what decorators stacked over a classmethod (`@deco @classmethod`) made of it is
    only known there."""
    if cls is None:
        return None
    value = vars(cls).get(splice.mangled(class_name, selector))
    return None if value is None else member_kind(value)


def filter_by_meta(nodes, meta, owner: str, selector: str, kind: str | None = None):
    """meta true keeps class-side methods, false instance-side; None keeps all.
    `kind` is the live class's (live_kind), which decides for every def of the name."""
    if meta is None:
        return nodes
    kept = [n for n in nodes if ((kind or splice.method_kind(n)) in ("class", "static")) == bool(meta)]
    if not kept:
        side = "an instance-side" if meta else "a class-side"
        raise ToolError("notFound", f"{catalog.echoed(owner)}.{catalog.echoed(selector)} is {side} method; "
                        f"call with meta {'false' if meta else 'true'} (or omit meta)")
    return kept
