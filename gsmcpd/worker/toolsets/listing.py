"""listing: dictionaries (image modules, then builtins) and the classes in them."""

from __future__ import annotations

import ast
import builtins

from gsmcpd.image import catalog, splice
from gsmcpd.image.view import KERNEL
from gsmcpd.worker.registry import Tool
from gsmcpd.worker.toolset import ToolError, Toolset, integer_prop, object_schema, string_prop

_DICTIONARY = {"dictionaryName": string_prop("an image module (dotted name) or builtins",
                                             min_length=1)}
# An image of thousands of classes would answer hundreds of kilobytes, more than a
# client takes into a model's context: list_all_classes answers a page at a time.
PAGE = 1000
_OFFSET = {"offset": integer_prop(f"how many classes of the whole list to skip (default 0); "
                                  f"an answer lists at most {PAGE}")}


class ListingToolset(Toolset):
    name = "listing"
    tool_names = ("list_all_classes", "list_classes", "list_dictionaries", "list_dictionary_entries")
    read_only_safe = frozenset(tool_names)
    idempotent = frozenset(tool_names)

    def register(self, registry):
        registry.add(Tool("list_all_classes", "Every class across all dictionaries: image modules "
                          f"first, then builtins ({PAGE} at a time: a note gives the offset of "
                          "the rest).", object_schema(_OFFSET), self.list_all_classes))
        registry.add(Tool("list_classes", "The classes of one dictionary (image module or builtins).",
                          object_schema(_DICTIONARY, ["dictionaryName"]), self.list_classes))
        registry.add(Tool("list_dictionaries", "The dictionaries in lookup order: image modules, "
                          "then builtins (the kernel).", object_schema(), self.list_dictionaries))
        registry.add(Tool("list_dictionary_entries", "Every top-level name of a dictionary, tagged "
                          "class/function/module/global.",
                          object_schema(_DICTIONARY, ["dictionaryName"]), self.list_dictionary_entries))

    def list_all_classes(self, arguments):
        offset = arguments.get("offset", 0)
        if offset < 0:
            raise ToolError("invalidParams", f"offset must be 0 or more, got {offset}")
        image = [ref.qualified for ref in catalog.image_classes(self.view)]
        every = image + [f"{KERNEL}.{name}" for name in catalog.kernel_classes()]
        page = every[offset:offset + PAGE]
        unlisted = catalog.uncompiled(self.view)
        lines = page + [f"(not listed: {reason})" for reason in unlisted]
        structured = {"classes": page, "imageCount": len(image), "total": len(every)}
        if len(page) < len(every):
            structured["offset"] = offset
            lines.append(f"(showing {_page_span(offset, page)} of {len(every)} classes"
                         + _rest_note(offset + len(page), len(every)) + ")")
            if offset + len(page) < len(every):
                structured["nextOffset"] = offset + len(page)
        if unlisted:
            structured["notListed"] = unlisted
        return {"text": "\n".join(lines), "structured": structured}

    def list_classes(self, arguments):
        module = catalog.dictionary_name(arguments["dictionaryName"])
        names = [ref.name for ref in catalog.classes_in(self.view, module)]
        note = ""
        if module != KERNEL and self.view.tree(module) is None:
            note = f"{module} does not compile, so its classes cannot be listed"
        text = "\n".join(names) or note or f"{module} defines no classes"
        return {"text": text, "structured": {"dictionary": module, "classes": names}}

    def list_dictionaries(self, arguments):
        names = catalog.dictionaries(self.view)
        structured = {"dictionaries": names}
        left_out = catalog.too_long(self.view)
        if left_out:
            structured["notListed"] = left_out
        return {"text": "\n".join(names + [f"(not listed: {reason})" for reason in left_out]),
                "structured": structured}

    def list_dictionary_entries(self, arguments):
        module = catalog.dictionary_name(arguments["dictionaryName"])
        catalog.require_module(self.view, module)
        if module == KERNEL:
            namespace = vars(builtins)
        else:
            live = self.view.module(module)
            if live is None:
                return self._entries_from_source(module)
            namespace = vars(live)
        entries = [{"name": name, "kind": catalog.entry_kind(value)}
                   for name, value in sorted(namespace.items()) if not name.startswith("__")]
        text = "\n".join(f"{e['name']} ({e['kind']})" for e in entries)
        return {"text": text or f"{module} has no entries",
                "structured": {"dictionary": module, "entries": entries}}

    def _entries_from_source(self, module):
        """A module that will not import is still listed, from its source."""
        tree = self.view.tree(module)
        reason = catalog._unloadable(self.view, module)
        if tree is None:
            return {"text": reason, "structured": {"dictionary": module, "entries": [], "note": reason}}
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
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Name):
                        entries[target.id] = "global"
        listed = [{"name": n, "kind": k} for n, k in sorted(entries.items()) if not n.startswith("__")]
        text = "\n".join(f"{e['name']} ({e['kind']})" for e in listed)
        return {"text": f"{text}\n(from source: {reason})",
                "structured": {"dictionary": module, "entries": listed, "note": reason}}


def _page_span(offset: int, page: list) -> str:
    return f"{offset + 1}-{offset + len(page)}" if page else f"none from offset {offset}"


def _rest_note(end: int, total: int) -> str:
    if end >= total:
        return ""
    return (f"; {total - end} more: call again with offset {end}, "
            "or list_classes for one dictionary")
