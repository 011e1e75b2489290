"""Tools, the name → tool registry, and argument validation against closed schemas.

The validator covers the JSON Schema 2020-12 subset the tool schemas use:
type (string, integer, number, boolean, array, object, null), enum, minLength,
minimum, maximum, properties, required, additionalProperties: false and items. A tool whose schema
says anything else that constrains (exclusiveMaximum, pattern, oneOf...) is refused at registration, and
so is one holding an integer too long for Python to write as text (check_writable).
"""

from __future__ import annotations

import math
import re
import sys
from dataclasses import dataclass, field
from typing import Callable

from gsmcpd.wire.jsonrpc import echoed, quoted
from gsmcpd.worker.toolset import ToolError, close_names, meant

# A call's problems listed at most, then counted: arguments are client-made, and a body of
# many thousands of unknown names would otherwise be answered several times its size.
PROBLEMS_SHOWN = 20


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
            raise ToolError("invalidParams", f"{self.name}: " + listed(problems))
        _integers_as_int(self.input_schema, arguments)


# Tool name: the repr of the input schema last found sound under it. Every session's server
# registers a third-party toolset's tools anew (the built-in ones' are planned once per
# process: tool_plans), each with a schema made anew: the checks' walk is paid once per
# schema, the same one told by its repr.
_checked: dict[str, str] = {}


class ToolRegistry:
    def __init__(self):
        self._tools: dict[str, Tool] = {}

    def add(self, tool: Tool) -> None:
        if not isinstance(tool, Tool):
            raise TypeError(f"not a Tool: {tool!r}")
        check_name(tool.name)
        if tool.name in self._tools:
            raise ValueError(f"tool {tool.name!r} registered twice")
        try:
            written = repr(tool.input_schema)   # unlike ==, tells True from 1 and 1.0 from 1
        except ValueError:
            check_writable(tool.name, tool.input_schema)   # walked only then: it costs each session
            raise
        if _checked.get(tool.name) != written:
            check_closed(tool.name, tool.input_schema)
            check_enforced(tool.name, tool.input_schema)
            _checked[tool.name] = written
        self._tools[tool.name] = tool

    def add_checked(self, tool: Tool) -> None:
        """Add a tool whose name and schema were checked when its plan was made (see
        tool_plans): each session's server adds the built-in tools with no walk or repr
        of their schemas."""
        if tool.name in self._tools:
            raise ValueError(f"tool {tool.name!r} registered twice")
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


def check_writable(tool_name: str, schema) -> None:
    """Refuse an input schema holding an integer too long for Python to write as text
    (over sys.get_int_max_str_digits digits): tools/list could not send it as JSON, and
    its repr, add's cache key, raised a ValueError naming neither tool nor place."""
    where = _unwritable_integer(schema, "inputSchema")
    if where is not None:
        raise ValueError(f"tool {tool_name!r}: {where} is an integer of more than "
                         f"{sys.get_int_max_str_digits()} digits, more than Python writes as text "
                         "(sys.set_int_max_str_digits), so tools/list could not send the schema")


def _unwritable_integer(value, where: str) -> str | None:
    """Where in `value` (a schema's dicts and lists) an integer is too long to write."""
    todo = [(value, where)]
    while todo:   # a loop, not recursion: the nesting is the toolset's to choose
        value, where = todo.pop()
        if isinstance(value, int):
            try:
                repr(value)
            except ValueError:
                return where
        elif isinstance(value, dict):
            for key in value:
                if isinstance(key, int) and _unwritable_integer(key, "") is not None:
                    return f"a key of {where}"
            todo.extend(reversed([(item, f"{where}.{key}") for key, item in value.items()]))
        elif isinstance(value, (list, tuple)):
            todo.extend(reversed([(item, f"{where}[{index}]") for index, item in enumerate(value)]))
    return None


def check_closed(tool_name: str, schema: dict) -> None:
    """Every tool's input schema is a closed object with an explicit required list."""
    if not (isinstance(schema, dict) and schema.get("type") == "object"
            and schema.get("additionalProperties") is False
            and isinstance(schema.get("required"), list)):
        raise ValueError(f"tool {tool_name!r}: input schema must be a closed object "
                         "(type object, additionalProperties false, required list)")


# What a schema may say: each keyword schema_errors enforces, and those that constrain
# nothing. Any other (exclusiveMaximum, pattern, oneOf...) would be advertised in tools/list yet
# never checked, and MCP has the server validate the inputs its schema describes.
ENFORCED_KEYWORDS = frozenset({"type", "enum", "minLength", "minimum", "maximum", "properties",
                               "required", "additionalProperties", "items"})
# format and content* too: JSON Schema 2020-12 makes them annotations unless a dialect opts in.
ANNOTATION_KEYWORDS = frozenset({"description", "title", "default", "examples", "$comment",
                                 "deprecated", "readOnly", "writeOnly", "format",
                                 "contentEncoding", "contentMediaType"})
DIALECT = "https://json-schema.org/draft/2020-12/schema"   # MCP 2025-11-25's default


def check_enforced(tool_name: str, schema: dict) -> None:
    """Refuse an input schema saying what schema_errors would not check, naming it."""
    problem = _unenforced(schema, "inputSchema", root=True)
    if problem:
        raise ValueError(f"tool {tool_name!r}: {problem}; the argument validator checks only "
                         f"{', '.join(sorted(ENFORCED_KEYWORDS))}, so the tool would be "
                         "advertised a rule it is never held to")


def _unenforced(schema, where: str, root: bool = False) -> str | None:
    if not isinstance(schema, dict):
        return f"{where} must be a schema object"
    for keyword, value in schema.items():
        if keyword == "$schema" and root:
            if value != DIALECT:
                return f"{where}.$schema declares {value!r}, not JSON Schema 2020-12 ({DIALECT})"
        elif keyword not in ENFORCED_KEYWORDS | ANNOTATION_KEYWORDS:
            return f"{where} uses {keyword!r}"
    types = schema.get("type", [])
    for name in types if isinstance(types, list) else [types]:
        if not isinstance(name, str) or name not in _TYPE_CHECKS:
            return f"{where}.type {name!r} is no JSON Schema type"
    if not isinstance(schema.get("additionalProperties", False), bool):
        return f"{where}.additionalProperties is a schema (only true or false is checked)"
    # Values schema_errors would trip over at a call, not at registration.
    least = schema.get("minLength", 0)
    if not (isinstance(least, int) and not isinstance(least, bool) and least >= 0):
        return f"{where}.minLength must be a non-negative integer"
    for bound in ("minimum", "maximum"):
        limit = schema.get(bound, 0)   # an int is finite, however long (isfinite would overflow)
        if not (_is_number(limit) and (isinstance(limit, int) or math.isfinite(limit))):
            return f"{where}.{bound} must be a finite number"
    if not isinstance(schema.get("enum", []), list):
        return f"{where}.enum must be an array"
    required = schema.get("required", [])
    if not (isinstance(required, list) and all(isinstance(name, str) for name in required)):
        return f"{where}.required must be an array of property names"
    properties = schema.get("properties", {})
    if not isinstance(properties, dict):
        return f"{where}.properties must be an object"
    children = [(f"{where}.properties.{name}", child) for name, child in properties.items()]
    if "items" in schema:
        children.append((f"{where}.items", schema["items"]))
    for child_where, child in children:
        problem = _unenforced(child, child_where)
        if problem:
            return problem
    return None


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


_TYPE_CHECKS = {
    "string": lambda v: isinstance(v, str),
    # JSON Schema 2020-12: 1.0 is an integer (a zero fractional part); validate turns it
    # into 1, so handlers never see a float there
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool)
                          or isinstance(v, float) and v.is_integer()),
    "number": _is_number,
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
    if "enum" in schema and not any(json_equal(value, member) for member in schema["enum"]):
        return [f"{where} must be one of {schema['enum']}, got {echoed(repr(value))}"]
    if isinstance(value, str) and len(value) < schema.get("minLength", 0):
        least = schema["minLength"]
        return [f"{where} must not be empty" if least == 1
                else f"{where} must be at least {least} characters long"]
    # The value echoed cut: an integer argument may be of thousands of digits.
    if _is_number(value) and value < schema.get("minimum", value):
        return [f"{where} must be {schema['minimum']} or more, got {echoed(str(value))}"]
    if _is_number(value) and value > schema.get("maximum", value):
        return [f"{where} must be {schema['maximum']} or less, got {echoed(str(value))}"]
    problems = []
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        missing = [name for name in schema.get("required", []) if name not in value]
        problems += [f"missing required {_child(where, name)}" for name in missing]
        # The only unknown argument may be meant for the only required one missing (a
        # hand-written schema may require one no property declares: no hint then).
        alone = missing[0] if (len(missing) == 1 and missing[0] in properties
                               and len(value.keys() - properties.keys()) == 1) else None
        for name, item in value.items():
            if name in properties:
                problems += schema_errors(properties[name], item, _child(where, name))
            elif schema.get("additionalProperties") is False:
                problems.append(f"unknown {_child(where, name)}" + (_meant_argument(properties, alone, name, item) or (
                    f" (it takes {', '.join(properties)})" if properties else " (it takes none)")))
    elif isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            problems += schema_errors(schema["items"], item, f"{where}[{index}]")
    return problems


def _meant_argument(properties: dict, missing: str | None, name: str, item) -> str:
    """The hint naming the argument the unknown `name` (given `item`) was meant to be: those
    close to it by name, unless none of them takes `item` and `missing`, the one required
    argument missing when `name` is the only unknown one, does (`method` for a missing
    `selector`: by its letters alone it was `meta`, a boolean)."""
    close = close_names(name, properties)
    if (missing is not None and not schema_errors(properties[missing], item, "")
            and all(schema_errors(properties[known], item, "") for known in close)):
        return meant([missing])
    return meant(close)


def listed(problems: list[str]) -> str:
    """The problems joined, the first PROBLEMS_SHOWN of more than that, with how many more."""
    more = len(problems) - PROBLEMS_SHOWN
    counted = f"; and {more} more problem{'s' if more > 1 else ''}" if more > 0 else ""
    return "; ".join(problems[:PROBLEMS_SHOWN]) + counted


def json_equal(a, b) -> bool:
    """JSON Schema's equality (enum): Python's ==, except that a boolean equals only a
    boolean (True == 1 in Python, so enum [1] took true), inside arrays and objects too."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(map(json_equal, a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[key], b[key]) for key in a)
    return a == b


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
    # An unknown one is the client's, any length, any character: quoted but a plain name's
    if where == "arguments":
        return f"argument {quoted(name)}"
    return f"{where}.{name}" if name.isidentifier() and len(name) <= 200 else f"{where}[{quoted(name)}]"


def json_type(value) -> str:
    """The JSON Schema type name of a decoded JSON value, for messages."""
    for name in ("boolean", "null", "string", "integer", "number", "array", "object"):
        if _TYPE_CHECKS[name](value):
            return name
    return type(value).__name__
