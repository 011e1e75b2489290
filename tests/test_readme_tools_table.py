"""README.md's tools table says each tool's arguments as its inputSchema has them (a `?`
for an optional one), so a schema change (paging's `offset`, today) cannot leave the
table behind, nor a row name an argument no tool takes."""

import re

from gsmcpd.worker.server import McpServer
from gsmcpd.worker.toolsets import resolve_toolsets
from helpers import REPO


def _names(arguments):
    """'className, selector, meta?' -> ['className', 'selector', 'meta?']; '–' -> []."""
    arguments = re.sub(r"\s*\((?!,).*\)$", "", arguments.strip())   # a trailing comment
    return [] if arguments in ("–", "") else [name.strip() for name in arguments.split(",")]


def documented():
    """{tool: [argument, ...]} from the table's rows: `a` / `b` | 'x / y' gives each its
    own; 'x (, y)' gives the first tool x and the second x, y; else all the same."""
    section = (REPO / "README.md").read_text().split("### Tools (", 1)[1]
    table = section.split("| toolset | tool | arguments | result |", 1)[1].split("\n\n", 1)[0]
    rows = {}
    for line in table.splitlines():
        cells = [cell.strip() for cell in line.split("|")[1:-1]]
        tools = re.findall(r"`(\w+)`", cells[1]) if len(cells) >= 4 else []
        if not tools:
            continue   # the header, or a row about all a category's tools
        arguments = cells[2]
        extended = re.fullmatch(r"(.*?) \(, (.*)\)", arguments)
        if " / " in arguments:
            per_tool = [_names(part) for part in arguments.split(" / ")]
        elif extended:
            first = _names(extended.group(1))
            per_tool = [first, first + _names(extended.group(2))]
        else:
            per_tool = [_names(arguments)] * len(tools)
        assert len(per_tool) == len(tools), line
        rows.update(zip(tools, per_tool))
    return rows


def advertised():
    server = McpServer(resolve_toolsets())
    tools = {}
    for descriptor in server.list_tools():
        schema = descriptor["inputSchema"]
        required = set(schema.get("required", []))
        tools[descriptor["name"]] = [name + ("" if name in required else "?")
                                     for name in schema.get("properties", {})]
    return tools


def test_the_tools_table_names_every_core_tool_with_its_schema_arguments():
    assert documented() == advertised()


def test_the_tools_heading_counts_them():
    heading = re.search(r"### Tools \((\d+), in (\d+) toolsets\)", (REPO / "README.md").read_text())
    assert heading and int(heading.group(1)) == len(advertised())
    assert int(heading.group(2)) == len(resolve_toolsets())
