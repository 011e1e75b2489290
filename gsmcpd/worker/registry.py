"""Tools, the name → tool registry, and argument validation against closed schemas.

The validator covers the JSON Schema 2020-12 subset the tool schemas use:
type (string, integer, number, boolean, array, object, null), enum, minLength,
properties, required, additionalProperties: false and items.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

from gsmcpd.worker.toolset import ToolError


@dataclass
class Tool:
    name: str
    description: str
    input_schema: dict
    handler: Callable[[dict], object]
    annotations: dict = field(default_factory=dict)   # stamped by the server from toolset declarations

    def descriptor(self) -> dict:
        """The tools/list entry."""
        entry = {"name": self.name, "description": self.description, "inputSchema": self.input_schema}
        if self.annotations:
            entry["annotations"] = dict(self.annotations)
        return entry

    def validate(self, arguments: dict) -> None:
        """Raise ToolError(invalidParams) naming every problem, before the tool runs."""
        problems = schema_errors(self.input_schema, arguments, "arguments")
        if problems:
            raise ToolError("invalidParams", f"{self.name}: " + "; ".join(problems))
        _integers_as_int(self.input_schema, arguments)


class ToolRegistry:
    def __init__(self):
        self._tools: dict[str, Tool] = {}

    def add(self, tool: Tool) -> None:
        if not isinstance(tool, Tool):
            raise TypeError(f"not a Tool: {tool!r}")
        check_name(tool.name)
        if tool.name in self._tools:
            raise ValueError(f"tool {tool.name!r} registered twice")
        check_closed(tool.name, tool.input_schema)
        self._tools[tool.name] = tool

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return sorted(self._tools)

    def tools(self) -> list[Tool]:
        return [self._tools[name] for name in self.names()]

    def descriptors(self) -> list[dict]:
        return [tool.descriptor() for tool in self.tools()]

    def __contains__(self, name) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)


# MCP 2025-11-25: what a tool name should be, so any client can call it and show it
TOOL_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")


def check_name(tool_name) -> None:
    if not (isinstance(tool_name, str) and TOOL_NAME.fullmatch(tool_name)):
        raise ValueError(f"tool {tool_name!r}: a tool name must be 1 to 128 characters, each a letter "
                         "A-Z or a-z, a digit, '_', '-' or '.' (MCP 2025-11-25)")


def check_closed(tool_name: str, schema: dict) -> None:
    """Every tool's input schema is a closed object with an explicit required list."""
    if not (isinstance(schema, dict) and schema.get("type") == "object"
            and schema.get("additionalProperties") is False
            and isinstance(schema.get("required"), list)):
        raise ValueError(f"tool {tool_name!r}: input schema must be a closed object "
                         "(type object, additionalProperties false, required list)")


_TYPE_CHECKS = {
    "string": lambda v: isinstance(v, str),
    # JSON Schema 2020-12: 1.0 is an integer (a zero fractional part); validate turns it
    # into 1, so handlers never see a float there
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool)
                          or isinstance(v, float) and v.is_integer()),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}


def schema_errors(schema: dict, value, where: str) -> list[str]:
    """Problems with `value` against `schema`, as human-readable strings (empty = valid)."""
    expected = schema.get("type")
    if expected is not None:
        types = expected if isinstance(expected, list) else [expected]
        if not any(_TYPE_CHECKS[t](value) for t in types):
            return [f"{where} must be {' or '.join(types)}, got {json_type(value)}"]
    if "enum" in schema and value not in schema["enum"]:
        return [f"{where} must be one of {schema['enum']}, got {value!r}"]
    if isinstance(value, str) and len(value) < schema.get("minLength", 0):
        least = schema["minLength"]
        return [f"{where} must not be empty" if least == 1
                else f"{where} must be at least {least} characters long"]
    problems = []
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        for name in schema.get("required", []):
            if name not in value:
                problems.append(f"missing required {_child(where, name)}")
        for name, item in value.items():
            if name in properties:
                problems += schema_errors(properties[name], item, _child(where, name))
            elif schema.get("additionalProperties") is False:
                problems.append(f"unknown {_child(where, name)}")
    elif isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            problems += schema_errors(schema["items"], item, f"{where}[{index}]")
    return problems


def _integers_as_int(schema: dict, value):
    """Replace, in place, each integral float where a valid `value` has an integer-only type."""
    children = ()
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        children = [(value, name, properties[name]) for name in value if name in properties]
    elif isinstance(value, list) and "items" in schema:
        children = [(value, index, schema["items"]) for index in range(len(value))]
    for holder, key, child_schema in children:
        item = holder[key]
        if isinstance(item, float) and child_schema.get("type") in ("integer", ["integer"]):
            holder[key] = int(item)
        else:
            _integers_as_int(child_schema, item)


def _child(where: str, name: str) -> str:
    return f"argument {name!r}" if where == "arguments" else f"{where}.{name}"


def json_type(value) -> str:
    """The JSON Schema type name of a decoded JSON value, for messages."""
    for name in ("boolean", "null", "string", "integer", "number", "array", "object"):
        if _TYPE_CHECKS[name](value):
            return name
    return type(value).__name__
