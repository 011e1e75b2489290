"""The built-in toolsets' tools, made once per process (the forkserver's preload makes them,
so every worker inherits them) instead of at each session's open.

A plan holds what no session changes: each tool's name, description, checked input schema,
annotations, read-only safety and the name of its handler method. A session's server takes
the handlers from its own toolset instances, by name as register() did (so a method replaced
on the class since is the one called), and gates by its own read-only mode
(McpServer._install). In a new worker, registering the seven core toolsets anew took ~1 ms
and ~290 page faults (each object made or touched on pages shared with the spawner copies a
page); binding their plans, ~0.4 ms and ~150.

A plan is shared by every server the process builds, the preload's rehearsals' included:
nothing may change it. The schemas' dicts go into each session's Tools as they are (tools/list
and validation only read them); the annotations are copied for each Tool. A `module:Class`
toolset, or a subclass of a built-in one, gets no plan: its register() runs for every
session, as before. (So to change a built-in toolset's tools, subclass it: a built-in
one's register() runs once per process.)
"""

from __future__ import annotations

import types
from typing import NamedTuple

from gsmcpd.image import own
from gsmcpd.worker.registry import ToolRegistry


class PlannedTool(NamedTuple):
    name: str
    description: str
    input_schema: dict
    annotations: dict       # the Tools' are copies: a session may not change the next one's
    method: str             # the handler: this method of each session's toolset
    read_only_safe: bool


_plans: dict[type, tuple[PlannedTool, ...]] = {}


def plan_of(toolset_class) -> tuple[PlannedTool, ...] | None:
    """The built-in toolset's tools, sorted by name; None for another (a third-party
    toolset, a subclass of a built-in one), whose register() each server runs itself."""
    plan = _plans.get(toolset_class)
    if plan is None:
        from gsmcpd.worker.toolsets import is_builtin   # the toolsets import server, which imports this
        if not is_builtin(toolset_class):
            return None
        plan = _plans[toolset_class] = make_plan(toolset_class)
    return plan


def make_plan(toolset_class) -> tuple[PlannedTool, ...]:
    """Register the toolset once on a scratch instance with no server and keep what its
    tools are, checked as a server's build checks them. Every handler must be a method of
    the toolset found by its name (bound to the scratch instance), so each session's
    toolset can be asked for its own."""
    from gsmcpd.worker.server import check_declarations, tool_annotations
    scratch = toolset_class(None)
    registered = ToolRegistry()
    scratch.register(registered)
    check_declarations(scratch, registered)
    plan = []
    for tool in registered.tools():
        handler = tool.handler
        method = getattr(handler, "__name__", None) if isinstance(handler, types.MethodType) else None
        if not (isinstance(method, str) and handler.__self__ is scratch
                and getattr(scratch, method, None) == handler):
            raise ValueError(f"{own.NAME(toolset_class)}: tool {tool.name!r}'s handler is not one "
                             "of its methods, so no session's toolset can be asked for it")
        plan.append(PlannedTool(_packed(tool.name), _packed(tool.description), tool.input_schema,
                                tool_annotations(scratch, tool.name), method,
                                tool.name in scratch.read_only_safe))
    return tuple(plan)


def _packed(text: str) -> str:
    """A copy of the string, made now: the plans' strings then lie together, where the
    source's constants are strewn over its modules' pages (in a new worker, taking them
    copied ~15 pages more: ~25 µs of the build)."""
    return text.encode("utf-8", "surrogatepass").decode("utf-8", "surrogatepass")
