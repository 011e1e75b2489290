"""listing: dictionaries (image modules, then builtins) and the classes in them."""

from __future__ import annotations

import ast
import builtins
import sys
import types

from gsmcpd.image import catalog, own, splice
from gsmcpd.image.view import KERNEL
from gsmcpd.worker.paging import PAGED, offset_prop, page_of
from gsmcpd.worker.registry import Tool
from gsmcpd.worker.toolset import Toolset, object_schema, repeated, string_prop

_DICTIONARY = {"dictionaryName": string_prop("an image module (dotted name) or builtins",
                                             min_length=1)}


class ListingToolset(Toolset):
    name = "listing"
    tool_names = ("list_all_classes", "list_classes", "list_dictionaries", "list_dictionary_entries")
    read_only_safe = frozenset(tool_names)
    idempotent = frozenset(tool_names)

    def register(self, registry):
        registry.add(Tool("list_all_classes", "Every class across all dictionaries: image modules "
                          f"first, then builtins ({PAGED}).",
                          object_schema(offset_prop("classes")), self.list_all_classes))
        registry.add(Tool("list_classes", "The classes of one dictionary (image module or builtins; "
                          f"{PAGED}).", object_schema({**_DICTIONARY, **offset_prop("classes")},
                                                      ["dictionaryName"]), self.list_classes))
        registry.add(Tool("list_dictionaries", "The dictionaries in lookup order: image modules, "
                          f"then builtins (the kernel; {PAGED}).",
                          object_schema(offset_prop("dictionaries")), self.list_dictionaries))
        registry.add(Tool("list_dictionary_entries", "Every top-level name of a dictionary but those "
                          "starting with __ (__all__, __version__, what Python sets), tagged "
                          f"class/function/module/global ({PAGED}).",
                          object_schema({**_DICTIONARY, **offset_prop("entries")}, ["dictionaryName"]),
                          self.list_dictionary_entries))

    def list_all_classes(self, arguments):
        image = [ref.qualified for ref in catalog.image_classes(self.view)]
        every = image + [f"{KERNEL}.{name}" for name in catalog.kernel_classes()]
        page = page_of(every, arguments, "classes", "list_classes for one dictionary")
        unlisted = catalog.uncompiled(self.view)
        lines = page.items + [f"(not listed: {reason})" for reason in unlisted] + page.note
        structured = {"classes": page.items, "imageCount": len(image), **page.fields}
        if unlisted:
            structured["notListed"] = unlisted
        return {"text": "\n".join(lines), "structured": structured}

    def list_classes(self, arguments):
        module = catalog.dictionary_name(arguments["dictionaryName"])
        names = [ref.name for ref in catalog.classes_in(self.view, module)]
        page = page_of(names, arguments, "classes")
        unlisted = catalog.uncompiled(self.view, module)   # said with its error, as list_all_classes says it
        text = "\n".join(page.items + [f"(not listed: {reason})" for reason in unlisted] + page.note)
        structured = {"dictionary": module, "classes": page.items, **page.fields}
        if unlisted:
            structured["notListed"] = unlisted
        return {"text": text or f"{module} defines no classes", "structured": structured}

    def list_dictionaries(self, arguments):
        page = page_of(catalog.dictionaries(self.view), arguments, "dictionaries")
        structured = {"dictionaries": page.items, **page.fields}
        left_out = catalog.too_long(self.view)
        if left_out:
            structured["notListed"] = left_out
        return {"text": "\n".join(page.items + [f"(not listed: {reason})" for reason in left_out]
                                  + page.note),
                "structured": structured}

    def list_dictionary_entries(self, arguments):
        module = catalog.dictionary_name(arguments["dictionaryName"])
        catalog.require_module(self.view, module)
        if module == KERNEL:
            namespace = vars(builtins)
        else:
            live = self.view.module(module)
            if live is None or not own.has_namespace(live):   # a stand-in of __slots__ (catalog.no_namespace)
                return self._entries_from_source(module, arguments)
            namespace = own.namespace(live)
        # Each entry's kind is worked out for its page only: a big module has thousands.
        names = sorted(name for name in namespace if not name.startswith("__")
                       and not self._bound_by_an_import(module, name, namespace[name]))
        page = page_of(names, arguments, "entries")
        entries = [{"name": name, "kind": catalog.entry_kind(namespace[name])} for name in page.items]
        text = "\n".join([f"{e['name']} ({e['kind']})" for e in entries] + page.note)
        return {"text": text or f"{module} has no entries",
                "structured": {"dictionary": module, "entries": entries, **page.fields}}

    def _bound_by_an_import(self, package: str, name: str, value) -> bool:
        """Whether `name` is a submodule of the image package that the import system bound
        on it as some code imported the submodule, the package's own code binding no such
        name: whether it is there depends on what the session ran before (a tool loading the
        image imports them all), and it is a dictionary of its own, list_dictionaries'. The
        import system binds whatever holds the submodule's place in sys.modules, a stand-in
        of no module too (note_stand_in)."""
        submodule = f"{package}.{name}"
        if not self.view.has_module(submodule):
            return False
        held = sys.modules.get(submodule)
        if not (value is held is not None or isinstance(value, types.ModuleType)
                and own.namespace(value).get("__name__") == submodule):   # its dict: no __getattr__ runs
            return False
        tree = self.view.tree(package)
        return tree is None or not splice.binds(tree.body, name, star=False, annotated=False)

    def _entries_from_source(self, module, arguments):
        """A module that will not import is still listed, from its source."""
        tree = self.view.tree(module)
        reason = catalog._unloadable(self.view, module)   # whole in the text, its start in the note
        if tree is None:
            none = page_of([], arguments, "entries")   # the fields every listing has
            return {"text": "\n".join([reason, *none.note]), "structured": {"dictionary": module, "entries": [],
                                                   "note": repeated(reason, "the reason"),
                                                   **none.fields}}
        # A def or class in a top-level `if`/`try` block binds a module global too.
        entries = {node.name: "class" if isinstance(node, ast.ClassDef) else "function"
                   for block, node in splice.defs_in_blocks(tree.body) if block is not None}
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                entries[node.name] = "class"
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                entries[node.name] = "function"
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    entries[(alias.asname or alias.name).split(".")[0]] = (
                        "module" if isinstance(node, ast.Import) else "global")
            # Not a bare `Cart: int`: it binds nothing, only records the annotation.
            elif isinstance(node, ast.Assign) or isinstance(node, ast.AnnAssign) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Name):
                        entries[target.id] = "global"
        page = page_of([{"name": n, "kind": k} for n, k in sorted(entries.items()) if not n.startswith("__")],
                       arguments, "entries")
        text = "\n".join([f"{e['name']} ({e['kind']})" for e in page.items] + [f"(from source: {reason})"]
                         + page.note)
        return {"text": text,
                "structured": {"dictionary": module, "entries": page.items,
                               "note": repeated(reason, "the reason"), **page.fields}}

