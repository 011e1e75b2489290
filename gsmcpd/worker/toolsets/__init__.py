"""The core toolsets, the GS_MCP_TOOLSETS names, and the read-only audit list."""

from __future__ import annotations

import functools
import importlib

from gsmcpd.knob_words import CORE_TOOLSETS   # named once: the config's default and the check of names
from gsmcpd.image import own
from gsmcpd.raised import raised_importing
from gsmcpd.worker.server import import_spec
from gsmcpd.worker.toolset import Toolset, did_you_mean

OPTIONAL_TOOLSETS = ("bench",)   # named explicitly, never in the default surface
DEFAULT_TOOLSETS = CORE_TOOLSETS

# The audit list: the whole core answer to "what stays in a read-only session",
# in one place. A test pins it against the union of the core toolsets' own
# read_only_safe declarations, so no tool quietly becomes safe.
# Gated: execute_code, commit and every mutation tool.
CORE_READ_ONLY_SAFE = frozenset({
    # session
    "abort", "refresh", "status",
    # listing
    "list_all_classes", "list_classes", "list_dictionaries", "list_dictionary_entries",
    # browsing
    "describe_class", "export_class_source", "get_class_definition", "get_class_hierarchy",
    "get_method_source", "list_methods",
    # search
    "find_implementors", "find_references_to", "find_senders", "search_method_source",
    # testing
    "describe_test_failure", "list_failing_tests", "list_test_classes", "run_test_class",
    "run_test_method",
})


def resolve_toolsets(names=None) -> list[type[Toolset]]:
    """Toolset classes for GS_MCP_TOOLSETS names (None → the core seven).

    A name is a core or optional toolset name, or `module:Class` for a
    third-party toolset. An unknown name raises ValueError naming it.
    """
    if names is None:
        names = DEFAULT_TOOLSETS
    if isinstance(names, str):
        names = names.replace(",", " ").split()
    resolved: list[type[Toolset]] = []
    for name in names:
        toolset_class = _resolve_one(name)
        if toolset_class not in resolved:
            resolved.append(toolset_class)
    return resolved


def check_toolset_names(names) -> None:
    """What resolve_toolsets refuses of `names` (a list) but a built-in toolset's module that
    does not import: an unknown name, a third party's that does not resolve. For a process
    with no use for the modules (see config.load_config's toolsets_imported)."""
    for name in names:
        if name not in CORE_TOOLSETS and name not in OPTIONAL_TOOLSETS:
            _resolve_one(name)


def read_only_surface(names) -> tuple[list[str], list[str], list[str]]:
    """What a read-only server serves of GS_MCP_TOOLSETS `names`, as McpServer._admits
    builds it from the toolsets' declarations: the names of the toolsets it keeps (one
    with no read-only safe tool is dropped whole), the tools it serves and those it hides
    (both sorted)."""
    kept: list[str] = []
    served: set[str] = set()
    hidden: set[str] = set()
    for name in names:
        toolset_class = _resolve_one(name)
        safe = [tool for tool in toolset_class.tool_names if tool in toolset_class.read_only_safe]
        served.update(safe)
        hidden.update(tool for tool in toolset_class.tool_names if tool not in toolset_class.read_only_safe)
        if safe and name not in kept:
            kept.append(name)
    return kept, sorted(served), sorted(hidden)


def core_toolset_of(tool_name: str) -> str | None:
    """The core toolset providing that tool, if one does."""
    for name in CORE_TOOLSETS:
        if tool_name in _builtin(name).tool_names:
            return name
    return None


def is_builtin(toolset_class) -> bool:
    """Whether the class is one of ours (core or optional), not a third party's, nor a
    subclass of ours (which inherits a built-in name)."""
    name = getattr(toolset_class, "name", None)
    return ((name in CORE_TOOLSETS or name in OPTIONAL_TOOLSETS)
            and _builtin(name) is toolset_class)


def _resolve_one(name: str) -> type[Toolset]:
    if not isinstance(name, str) or not name:
        raise ValueError(f"unknown toolset {name!r}")
    if ":" in name:
        candidate = import_spec(name, "toolset")
    elif name in CORE_TOOLSETS or name in OPTIONAL_TOOLSETS:
        candidate = _builtin(name)
    else:
        known = CORE_TOOLSETS + OPTIONAL_TOOLSETS
        raise ValueError(f"unknown toolset {name!r}{did_you_mean(name, known)} "
                         f"(known: {', '.join(known)}; or module:Class)")
    if not (isinstance(candidate, type) and issubclass(candidate, Toolset)):
        raise ValueError(f"toolset {name!r} is not a Toolset subclass")
    return candidate


# Once per process (the forkserver's preload resolves them all): each session's server
# resolved its toolsets anew, and the scan of a module's names touched each of its
# objects, a copy-on-write fault of many a page shared with the spawner.
@functools.lru_cache(maxsize=None)
def _builtin(name: str) -> type[Toolset]:
    module_name = f"{__name__}.{name}"
    try:
        module = importlib.import_module(module_name)
    except Exception as error:
        raise ValueError(f"toolset {name!r}: cannot import {module_name} "
                         f"({raised_importing(error, module_name)})") from error
    for value in own.namespace(module).values():   # whatever sys.modules held under its name
        if (isinstance(value, type) and issubclass(value, Toolset) and value is not Toolset
                and value.__module__ == module_name and value.name == name):
            return value
    raise ValueError(f"toolset {name!r}: {module_name} defines no Toolset named {name!r}")
