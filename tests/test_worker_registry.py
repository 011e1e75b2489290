"""Tool registry and argument validation against closed schemas (pure)."""

import sys

import pytest

from gsmcpd.worker.registry import Tool, ToolRegistry, schema_errors
from gsmcpd.worker.toolset import (
    ToolError, array_prop, bool_prop, integer_prop, number_prop, object_schema, string_prop,
)

SCHEMA = object_schema({
    "name": string_prop("a name"),
    "count": integer_prop("a count"),
    "ratio": number_prop("a ratio"),
    "flag": bool_prop("a flag"),
    "tags": array_prop(string_prop("a tag"), "tags"),
    "mode": string_prop("a mode", enum=["fast", "slow"]),
    "nested": object_schema({"inner": string_prop("inner")}, required=["inner"]),
}, required=["name"])


def make_tool(name="t", schema=SCHEMA):
    return Tool(name, "a tool", schema, lambda arguments: "ok")


def test_object_schema_is_closed_with_explicit_required():
    schema = object_schema({"a": string_prop("a")}, required=["a"])
    assert schema == {"type": "object", "properties": {"a": {"type": "string", "description": "a"}},
                      "required": ["a"], "additionalProperties": False}
    assert object_schema() == {"type": "object", "properties": {}, "required": [],
                               "additionalProperties": False}


def test_object_schema_refuses_required_name_without_property():
    with pytest.raises(ValueError, match="missing"):
        object_schema({"a": string_prop("a")}, required=["missing"])


def test_valid_arguments_pass():
    make_tool().validate({"name": "x", "count": 3, "ratio": 0.5, "flag": True, "tags": ["a"],
                          "mode": "fast", "nested": {"inner": "y"}})
    make_tool().validate({"name": "x", "ratio": 2})   # an integer is a number


@pytest.mark.parametrize("arguments, fragment", [
    ({}, "missing required argument 'name'"),
    ({"name": "x", "extra": 1}, "unknown argument 'extra'"),
    ({"name": 5}, "argument 'name' must be string, got integer"),
    ({"name": "x", "count": True}, "argument 'count' must be integer, got boolean"),
    ({"name": "x", "count": 1.5}, "argument 'count' must be integer, got number"),
    ({"name": "x", "count": 2.5}, "argument 'count' must be integer, got number"),
    ({"name": "x", "ratio": "1"}, "argument 'ratio' must be number, got string"),
    ({"name": "x", "flag": "yes"}, "argument 'flag' must be boolean, got string"),
    ({"name": "x", "tags": "a"}, "argument 'tags' must be array, got string"),
    ({"name": "x", "tags": ["a", 1]}, "argument 'tags'[1] must be string, got integer"),
    ({"name": "x", "mode": "medium"}, "must be one of ['fast', 'slow']"),
    ({"name": "x", "nested": {}}, "missing required argument 'nested'.inner"),
    ({"name": "x", "nested": {"inner": "y", "other": 1}}, "unknown argument 'nested'.other"),
    ({"name": None}, "got null"),
])
def test_invalid_arguments_raise_invalid_params(arguments, fragment):
    with pytest.raises(ToolError) as caught:
        make_tool().validate(arguments)
    assert caught.value.kind == "invalidParams"
    assert fragment in caught.value.message
    assert caught.value.message.startswith("t: ")


def test_an_unknown_argument_names_the_one_meant_or_the_ones_taken():
    # An agent's class_name for className was answered only "unknown argument 'class_name'".
    def message(arguments, schema=SCHEMA):
        with pytest.raises(ToolError) as caught:
            make_tool(schema=schema).validate(arguments)
        return caught.value.message
    assert message({"name": "x", "Count": 1}) == "t: unknown argument 'Count' (did you mean count?)"
    assert message({"name": "x", "nested": {"iner": "y"}}) == (
        "t: missing required argument 'nested'.inner; unknown argument 'nested'.iner (did you mean inner?)")
    assert message({"name": "x", "zzz": 1}) == (
        "t: unknown argument 'zzz' (it takes name, count, ratio, flag, tags, mode, nested)")
    assert message({"zzz": 1}, object_schema()) == "t: unknown argument 'zzz' (it takes none)"


def test_an_unknown_argument_given_for_the_one_missing_is_answered_with_it():
    # get_method_source {"className": "Cart", "method": "total"} was answered "(did you mean
    # meta?)", a boolean that cannot take "total", not the missing selector the value fits.
    schema = object_schema({"className": string_prop("a class"), "selector": string_prop("a method"),
                            "meta": bool_prop("class side")}, required=["className", "selector"])
    def message(arguments):
        with pytest.raises(ToolError) as caught:
            make_tool(schema=schema).validate(arguments)
        return caught.value.message
    assert message({"className": "Cart", "method": "total"}) == (
        "t: missing required argument 'selector'; unknown argument 'method' (did you mean selector?)")
    assert message({"className": "Cart", "name": "total"}) == (
        "t: missing required argument 'selector'; unknown argument 'name' (did you mean selector?)")
    # a close name that takes the value is still the one meant
    assert message({"className": "Cart", "metta": True}) == (
        "t: missing required argument 'selector'; unknown argument 'metta' (did you mean meta?)")
    # a value the missing one does not take, or two unknown arguments, name no missing one
    assert message({"className": "Cart", "method": 3}) == (
        "t: missing required argument 'selector'; unknown argument 'method' (did you mean meta?)")
    assert message({"className": "Cart", "method": "total", "zzz": "x"}) == (
        "t: missing required argument 'selector'; unknown argument 'method' (did you mean meta?); "
        "unknown argument 'zzz' (it takes className, selector, meta)")


def test_an_unknown_argument_s_name_and_an_enum_value_are_echoed_cut():
    # A 100 KB unknown name was echoed whole (a 200 KB answer: text and structuredContent).
    with pytest.raises(ToolError) as caught:
        make_tool().validate({"name": "x", "k" * 100_000: 1, "mode": "m" * 100_000})
    message = caught.value.message
    assert "unknown argument '" + "k" * 200 + "... (100000 characters)' (it takes " in message
    assert "got '" + "m" * 199 + "... (100002 characters)" in message
    assert len(message) < 1000, len(message)


def test_an_unknown_nested_argument_s_name_is_escaped_as_a_top_level_one_is():
    # A nested one was echoed raw (`'nested'.\u202e`): a right-to-left mark in the reader's text.
    with pytest.raises(ToolError) as caught:
        make_tool().validate({"name": "x", "nested": {"inner": "y", "\u202e\x07": 1}, "\u202e": 1})
    assert "unknown argument 'nested'['\\u202e\\x07']" in caught.value.message
    assert "unknown argument '\\u202e'" in caught.value.message


def test_many_problems_are_listed_up_to_twenty_then_counted():
    # 200,000 unknown arguments (a 3 MB body) were answered with an 18 MB error naming each.
    with pytest.raises(ToolError) as caught:
        make_tool().validate({"name": "x", **{f"k{i}": 1 for i in range(200_000)}})
    message = caught.value.message
    assert message.count("unknown argument") == 20 and "'k19'" in message and "'k20'" not in message
    assert message.endswith("; and 199980 more problems"), message[-100:]
    with pytest.raises(ToolError) as caught:
        make_tool().validate({"name": "x", **{f"k{i}": 1 for i in range(20)}})
    assert caught.value.message.count("unknown argument") == 20 and "more problems" not in caught.value.message


def test_one_problem_more_is_counted_in_the_singular():
    # 21 problems ended with "and 1 more problems".
    with pytest.raises(ToolError) as caught:
        make_tool().validate({"name": "x", **{f"k{i}": 1 for i in range(21)}})
    assert caught.value.message.endswith("; and 1 more problem"), caught.value.message[-100:]


def test_min_length_is_in_the_schema_and_checked_in_characters():
    short = object_schema({"id": string_prop("an id", min_length=1), "code": string_prop("a code", min_length=3)})
    assert short["properties"]["id"]["minLength"] == 1
    assert schema_errors(short, {"id": "", "code": "éé"}, "arguments") == [
        "argument 'id' must not be empty", "argument 'code' must be at least 3 characters long"]
    assert schema_errors(short, {"id": "x", "code": "ééé"}, "arguments") == []
    assert "minLength" not in string_prop("plain")


def test_minimum_is_in_the_schema_and_checked_on_numbers():
    # paging's offset checked it by hand, its error unlike any other argument's:
    # "offset must be 0 or more, got -1", no tool named, not "argument 'offset'".
    bounded = object_schema({"offset": integer_prop("skip", minimum=0), "ratio": {**number_prop("r"), "minimum": 0.5},
                             "any": {"minimum": 1}})
    assert bounded["properties"]["offset"]["minimum"] == 0 and "minimum" not in integer_prop("plain")
    assert schema_errors(bounded, {"offset": -1, "ratio": 0.25}, "arguments") == [
        "argument 'offset' must be 0 or more, got -1", "argument 'ratio' must be 0.5 or more, got 0.25"]
    assert schema_errors(bounded, {"offset": 0, "ratio": 0.5, "any": "0"}, "arguments") == []   # a string is no number
    assert schema_errors(bounded, {"any": False}, "arguments") == []   # nor a boolean, as JSON Schema says
    with pytest.raises(ToolError) as caught:
        Tool("pages", "a tool", bounded, lambda arguments: "ok").validate({"offset": -2.0, "zzz": 1})
    assert (caught.value.kind, caught.value.message) == ("invalidParams", "pages: argument 'offset' must be 0 or "
                                                         "more, got -2.0; unknown argument 'zzz' (it takes offset, ratio, any)")


def test_maximum_is_in_the_schema_and_checked_on_numbers():
    # Paging's offset took 1e308 (an integer to JSON Schema) and echoed it back as a
    # 309-digit integer: its schema now says a maximum, which the validator checks.
    bounded = object_schema({"offset": integer_prop("skip", minimum=0, maximum=9), "ratio": {**number_prop("r"), "maximum": 0.5}})
    assert bounded["properties"]["offset"]["maximum"] == 9 and "maximum" not in integer_prop("plain")
    assert schema_errors(bounded, {"offset": 1e308, "ratio": 0.75}, "arguments") == [
        "argument 'offset' must be 9 or less, got 1e+308", "argument 'ratio' must be 0.5 or less, got 0.75"]
    assert schema_errors(bounded, {"offset": 9, "ratio": 0.5}, "arguments") == []
    assert schema_errors(bounded, {"offset": 10 ** 400}, "arguments") == [
        f"argument 'offset' must be 9 or less, got {'1' + '0' * 199}... (401 characters)"]   # echoed cut
    ToolRegistry().add(Tool("bounded", "a tool", bounded, lambda arguments: "ok"))   # taken at registration


def test_a_minimum_of_any_size_of_integer_is_accepted_at_registration_and_checked():
    # math.isfinite of an int past a float's range raised OverflowError at registration.
    registry = ToolRegistry()
    huge = 10 ** 400
    registry.add(Tool("big", "a tool", closed({"n": {"type": "integer", "minimum": huge}}), lambda arguments: "ok"))
    assert registry.names() == ["big"]
    assert schema_errors(closed({"n": {"type": "integer", "minimum": huge}}), {"n": 1}, "arguments") == [
        "argument 'n' must be %d or more, got 1" % huge]


def test_an_integral_float_is_an_integer_as_json_schema_says_and_reaches_the_tool_as_int():
    seen = []
    schema = object_schema({"count": integer_prop("n"), "sizes": array_prop(integer_prop("s"), "s"),
                            "nested": object_schema({"n": integer_prop("n")}), "ratio": number_prop("r")})
    tool = Tool("t", "a tool", schema, seen.append)
    arguments = {"count": 2.0, "sizes": [1.0, 3], "nested": {"n": -0.0}, "ratio": 1.0}
    tool.validate(arguments)
    assert arguments == {"count": 2, "sizes": [1, 3], "nested": {"n": 0}, "ratio": 1.0}
    assert [type(v) for v in (arguments["count"], *arguments["sizes"], arguments["nested"]["n"])] == [int] * 4
    assert type(arguments["ratio"]) is float   # a number stays as sent


def test_every_problem_is_reported_at_once():
    problems = schema_errors(SCHEMA, {"extra": 1, "count": "x"}, "arguments")
    assert len(problems) == 3


def test_registry_lists_sorted_and_rejects_duplicates():
    registry = ToolRegistry()
    for name in ("zeta", "alpha", "mid"):
        registry.add(make_tool(name))
    assert registry.names() == ["alpha", "mid", "zeta"]
    assert [d["name"] for d in registry.descriptors()] == ["alpha", "mid", "zeta"]
    assert "mid" in registry and len(registry) == 3
    assert registry.get("nope") is None
    with pytest.raises(ValueError, match="twice"):
        registry.add(make_tool("mid"))


@pytest.mark.parametrize("schema", [
    {"type": "object", "properties": {}, "required": []},                       # open
    {"type": "object", "properties": {}, "additionalProperties": False},        # no required list
    {"type": "string"},
])
def test_registry_refuses_open_schemas(schema):
    with pytest.raises(ValueError, match="closed object"):
        ToolRegistry().add(make_tool("open", schema))


@pytest.mark.parametrize("name", ["", "my tool", "a,b", "café", "x" * 129, "ns/tool", "tool\n", 7, None])
def test_registry_refuses_a_tool_name_mcp_says_clients_may_not_take(name):
    with pytest.raises(ValueError, match="1 to 128 characters"):
        ToolRegistry().add(make_tool(name))


@pytest.mark.parametrize("name", ["a", "x" * 128, "admin.tools.list", "DATA_EXPORT_v2", "get-user"])
def test_registry_takes_every_tool_name_mcp_allows(name):
    registry = ToolRegistry()
    registry.add(make_tool(name))
    assert registry.names() == [name]


def closed(properties, root_extra=None):
    return {**object_schema(properties), **(root_extra or {})}


@pytest.mark.parametrize("schema,named", [
    (closed({"copies": {"type": "integer", "exclusiveMaximum": 10}}),
     "inputSchema.properties.copies uses 'exclusiveMaximum'"),
    (closed({"copies": {"type": "integer", "maximum": float("inf")}}),
     "inputSchema.properties.copies.maximum must be a finite number"),
    (closed({"copies": {"type": "integer", "minimum": "1"}}),
     "inputSchema.properties.copies.minimum must be a finite number"),
    (closed({"copies": {"type": "integer", "minimum": float("nan")}}),
     "inputSchema.properties.copies.minimum must be a finite number"),
    (closed({"code": {"type": "string", "pattern": "^[a-z]+$"}}), "inputSchema.properties.code uses 'pattern'"),
    (closed({"code": {"type": "string", "maxLength": 5}}), "inputSchema.properties.code uses 'maxLength'"),
    (closed({"x": {"oneOf": [{"type": "string"}, {"type": "integer"}]}}), "inputSchema.properties.x uses 'oneOf'"),
    (closed({"x": {"$ref": "#/$defs/y"}}, {"$defs": {"y": {}}}), "inputSchema uses '$defs'"),
    (closed({"tags": {"type": "array", "items": {"type": "string", "maxLength": 9}}}),
     "inputSchema.properties.tags.items uses 'maxLength'"),
    (closed({"tags": {"type": "array", "minItems": 1, "items": {"type": "string"}}}),
     "inputSchema.properties.tags uses 'minItems'"),
    (closed({"tags": {"type": "array", "items": [{"type": "string"}]}}),
     "inputSchema.properties.tags.items must be a schema object"),
    (closed({"opts": {"type": "object", "additionalProperties": {"type": "string"}}}),
     "inputSchema.properties.opts.additionalProperties is a schema"),
    (closed({"x": {"type": "float"}}), "inputSchema.properties.x.type 'float' is no JSON Schema type"),
    (closed({"x": {"type": ["string", 5]}}), "inputSchema.properties.x.type 5 is no JSON Schema type"),
    (closed({"x": {"type": "string", "minLength": "3"}}),
     "inputSchema.properties.x.minLength must be a non-negative integer"),
    (closed({"x": {"type": "string", "minLength": True}}),
     "inputSchema.properties.x.minLength must be a non-negative integer"),
    (closed({"x": {"enum": "ab"}}), "inputSchema.properties.x.enum must be an array"),
    (closed({"o": {"type": "object", "required": "a"}}),
     "inputSchema.properties.o.required must be an array of property names"),
    (closed({}, {"$schema": "http://json-schema.org/draft-07/schema#"}),
     "inputSchema.$schema declares 'http://json-schema.org/draft-07/schema#', not JSON Schema 2020-12"),
])
def test_registry_refuses_a_schema_saying_what_the_validator_would_not_check(schema, named):
    """MCP has the server validate a call's arguments: a rule in the advertised schema that
    schema_errors ignores (copies: exclusiveMaximum 10, say) would let a call breaking it run."""
    with pytest.raises(ValueError) as refused:
        ToolRegistry().add(make_tool("strict", schema))
    assert str(refused.value).startswith("tool 'strict': " + named), refused.value
    assert ("the argument validator checks only additionalProperties, enum, items, maximum, minLength"
            in str(refused.value))


@pytest.mark.parametrize("schema, where", [
    (closed({"n": {"type": "integer", "minimum": 10 ** 5000}}), "inputSchema.properties.n.minimum"),
    (closed({"n": {"type": "integer", "maximum": -10 ** 5000}}), "inputSchema.properties.n.maximum"),
    (closed({"n": {"enum": [1, 10 ** 5000]}}), "inputSchema.properties.n.enum[1]"),
    (closed({"n": {"type": "integer", "default": 10 ** 5000}}), "inputSchema.properties.n.default"),
])
def test_a_schema_holding_an_integer_too_long_to_write_is_refused_naming_the_tool_and_where(schema, where):
    # Its repr (the cache key) raised Python's "Exceeds the limit (4300 digits) for integer
    # string conversion", naming neither; tools/list could not have sent it either.
    with pytest.raises(ValueError) as refused:
        ToolRegistry().add(make_tool("huge", schema))
    assert str(refused.value).startswith(
        f"tool 'huge': {where} is an integer of more than {sys.get_int_max_str_digits()} digits"), refused.value


@pytest.mark.parametrize("sound,unsound", [
    (closed({"copies": {"type": "integer"}}), closed({"copies": {"type": "integer", "exclusiveMaximum": 1}})),
    (closed({"x": {"type": "string", "minLength": 1}}), closed({"x": {"type": "string", "minLength": True}})),
])
def test_a_schema_found_sound_once_spares_only_the_same_schema_its_checks(sound, unsound):
    # Each session registers its tools anew: a sound schema is checked once, but another
    # under the same name, even one Python's == takes for it (True == 1), is checked again.
    ToolRegistry().add(make_tool("again", sound))
    ToolRegistry().add(make_tool("again", sound))
    with pytest.raises(ValueError, match="^tool 'again': inputSchema.properties"):
        ToolRegistry().add(make_tool("again", unsound))


def test_registry_takes_annotations_and_the_2020_12_dialect_alongside_what_is_checked():
    schema = closed({"mode": {"type": ["string", "null"], "enum": ["a", None], "title": "Mode",
                              "default": "a", "examples": ["a"], "deprecated": False, "$comment": "c"},
                     "when": {"type": "string", "format": "date-time"},   # an annotation in 2020-12
                     "opts": {"type": "object", "additionalProperties": True}},
                    {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "args"})
    registry = ToolRegistry()
    registry.add(make_tool("annotated", schema))
    assert registry.get("annotated").input_schema == schema


@pytest.mark.parametrize("value,members,valid", [
    (True, [1], False), (1, [True], False), (False, [0], False), (0, [False], False),
    ([True], [[1]], False), ({"a": 1}, [{"a": True}], False),
    (1, [1.0], True), (True, [True], True), (None, [None], True), ([1, "a"], [[1.0, "a"]], True),
])
def test_enum_compares_as_json_schema_does_a_boolean_equal_only_to_a_boolean(value, members, valid):
    errors = schema_errors({"enum": members}, value, "arguments")
    assert (errors == []) is valid, errors


def test_descriptor_carries_schema_and_annotations():
    tool = make_tool("t", object_schema())
    assert tool.descriptor() == {"name": "t", "description": "a tool", "inputSchema": object_schema()}
    tool.annotations = {"readOnlyHint": True}
    assert tool.descriptor()["annotations"] == {"readOnlyHint": True}


def test_tool_error_refuses_unknown_kind():
    with pytest.raises(ValueError, match="unknown tool error kind"):
        ToolError("weird", "x")


def test_an_unknown_argument_beside_a_required_one_no_property_declares_is_answered():
    # The hint looked the missing one up among the properties: KeyError, not the problems.
    schema = {"type": "object", "properties": {"path": {"type": "string"}},
              "required": ["path", "mode"], "additionalProperties": False}
    with pytest.raises(ToolError, match=r"missing required argument 'mode'; unknown argument 'mod' "
                                        r"\(it takes path\)"):
        make_tool(schema=schema).validate({"path": "x", "mod": 1})
