"""The 31-tool surface end to end: every seed tool called through the real daemon on a
throwaway image with a real answer checked, one error path per toolset with its
structured kind, read-only gating, toolset selection, a worker class named by
GS_MCP_WORKER_CLASS, and a third-party toolset composed with a core one.

The worker classes below are imported by the daemon's workers from this module
(tests/ goes on their PYTHONPATH).
"""

import sys

import pytest

from gsmcpd.image.default import EXAMPLE_FILES
from gsmcpd.worker.registry import Tool
from gsmcpd.worker.server import McpServer
from gsmcpd.worker.toolset import ToolError, Toolset, integer_prop, object_schema
from helpers import REPO, Client, Daemon, open_session, tool_text
from test_tools_support import write_image as write_files


class NamedServer(McpServer):
    """A product's own worker class: it names itself through the class defaults."""
    default_server_name = "acme-image"
    default_server_version = "9.9.9"
    default_server_title = "Acme Image Server"


class SpacedNameToolset(Toolset):
    """A third-party toolset naming a tool as MCP says no tool should be named."""
    name = "spaced"
    tool_names = ("print label",)

    def register(self, registry):
        registry.add(Tool("print label", "Print a label.", object_schema(), lambda arguments: "printed"))


class RangedCopiesToolset(Toolset):
    """A third-party toolset bounding an argument with a keyword the validator does not check
    (exclusiveMaximum; minimum and maximum it checks)."""
    name = "ranged"
    tool_names = ("print_copies",)

    def register(self, registry):
        copies = {**integer_prop("how many"), "minimum": 1, "exclusiveMaximum": 11}
        registry.add(Tool("print_copies", "Print copies.", object_schema({"copies": copies}, ["copies"]),
                          lambda arguments: "printed %d" % arguments["copies"]))


class NonStringErrorToolset(Toolset):
    """A third-party toolset raising ToolErrors whose message is no string: a number, an exception."""
    name = "nonstring"
    tool_names = ("fail_with_number", "fail_with_exception", "fail_unprintably")

    def register(self, registry):
        def raising(message):
            def handler(arguments):
                raise ToolError("refused", message)
            return handler
        registry.add(Tool("fail_with_number", "Fail.", object_schema(), raising(42)))
        registry.add(Tool("fail_with_exception", "Fail.", object_schema(), raising(ValueError("bad label"))))
        registry.add(Tool("fail_unprintably", "Fail.", object_schema(), raising(UnprintableLabel())))


class UnprintableLabel(Exception):
    """An exception whose own __str__ raises."""

    def __str__(self):
        raise RuntimeError("no text")


class HugeMinimumToolset(Toolset):
    """A third-party toolset whose minimum is an integer too long for Python to write as
    text (over sys.get_int_max_str_digits, 4300 by default): tools/list could not send it."""
    name = "huge"
    tool_names = ("print_many",)

    def register(self, registry):
        many = {**integer_prop("how many"), "minimum": 10 ** 5000}
        registry.add(Tool("print_many", "Print many.", object_schema({"many": many}, ["many"]),
                          lambda arguments: "printed"))


class NumberedModeToolset(Toolset):
    """A third-party toolset whose argument is one of some numbers."""
    name = "numbered"
    tool_names = ("set_mode",)
    read_only_safe = frozenset({"set_mode"})

    def register(self, registry):
        mode = {"description": "mode 0 or 1", "enum": [0, 1]}
        registry.add(Tool("set_mode", "Set a mode.", object_schema({"mode": mode}, ["mode"]),
                          lambda arguments: "mode %r" % (arguments["mode"],)))


class UndeclaredRequiredToolset(Toolset):
    """A third-party toolset whose hand-written schema requires an argument it declares no
    property for (registration takes it; object_schema would not)."""
    name = "undeclared"
    tool_names = ("print_mode",)
    read_only_safe = frozenset({"print_mode"})

    def register(self, registry):
        schema = {"type": "object", "properties": {"path": {"type": "string"}},
                  "required": ["path", "mode"], "additionalProperties": False}
        registry.add(Tool("print_mode", "Print in a mode.", schema, lambda arguments: "printed"))


SEED_TOOLS = {
    "execution": {"execute_code"},
    "session": {"abort", "commit", "refresh", "status"},
    "listing": {"list_all_classes", "list_classes", "list_dictionaries", "list_dictionary_entries"},
    "browsing": {"describe_class", "export_class_source", "get_class_definition",
                 "get_class_hierarchy", "get_method_source", "list_methods"},
    "search": {"find_implementors", "find_references_to", "find_senders", "search_method_source"},
    "mutation": {"add_dictionary", "compile_class_definition", "compile_method", "delete_class",
                 "delete_method", "remove_dictionary", "set_class_comment"},
    "testing": {"describe_test_failure", "list_failing_tests", "list_test_classes",
                "run_test_class", "run_test_method"},
}
ALL_TOOLS = set().union(*SEED_TOOLS.values())
GATED = {"execute_code", "commit"} | SEED_TOOLS["mutation"]

EXTRA_FILES = {
    "extra/__init__.py": "",
    "extra/a.py": "class Thing:\n    pass\n",
    "extra/b.py": "class Thing:\n    pass\n",
    "extra/test_broken.py": '''\
import unittest


class BrokenTest(unittest.TestCase):
    def test_right(self):
        self.assertEqual(1 + 1, 2)

    def test_wrong(self):
        self.assertEqual(1 + 1, 3)


class TestPlainBroken:
    def test_bare(self):
        total = 1 + 1
        assert total == 3
''',
}


def write_image(root):
    return write_files(root, {**EXAMPLE_FILES, **EXTRA_FILES})


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    return write_image(tmp_path_factory.mktemp("tools") / "image")


@pytest.fixture(scope="module")
def daemon(image, tmp_path_factory):
    with Daemon(tmp_path_factory.mktemp("daemon"), env={"GS_MCP_IMAGE": str(image)}) as running:
        yield running


def fresh_dir(path):
    path.mkdir(parents=True)
    return path


def call_tool(client, tool, arguments):
    """tools/call's result (Client.tool cannot pass an argument called `name`)."""
    response = client.call("tools/call", {"name": tool, "arguments": arguments})
    assert response.status == 200, response
    reply = response.json()
    assert "result" in reply, reply
    return reply["result"]


def ok(client, tool, **arguments):
    result = call_tool(client, tool, arguments)
    assert not result.get("isError"), result
    return result


def structured(client, tool, **arguments):
    return ok(client, tool, **arguments)["structuredContent"]


def run_code(client, code):
    """What execute_code of `code` answered as its result (the last expression's repr)."""
    return structured(client, "execute_code", code=code)["result"]


def error(client, tool, kind, **arguments):
    result = call_tool(client, tool, arguments)
    assert result.get("isError"), result
    assert result["structuredContent"]["error"]["kind"] == kind, result
    return tool_text(result)


def tool_names(client):
    reply = client.call("tools/list").json()
    return {tool["name"]: tool for tool in reply["result"]["tools"]}


def through_view(client, code):
    """Workspace code with `view` bound to this session's image view."""
    prelude = "import shop\nview = shop.__spec__.loader.view\n"
    return ok(client, "execute_code", code=prelude + code)


def test_a_mistyped_tool_name_is_answered_with_the_tools_it_is_close_to(c):
    reply = c.call("tools/call", {"name": "list_class", "arguments": {}}).json()
    assert reply["error"] == {
        "code": -32602, "data": {"kind": "notFound"},
        "message": "unknown tool 'list_class' (did you mean list_classes, list_all_classes or "
                   "list_test_classes?); tools/list shows the tools this server offers"}


def test_an_unknown_tool_name_is_quoted_and_escaped(c):
    # Echoed raw: "unknown tool: status  (did you mean status?)", its trailing space unseen.
    reply = c.call("tools/call", {"name": "status ", "arguments": {}}).json()
    assert reply["error"]["message"] == (
        "unknown tool 'status ' (did you mean status?); tools/list shows the tools this server offers")
    reply = c.call("tools/call", {"name": "x\n\u202e", "arguments": {}}).json()
    assert reply["error"]["message"].startswith("unknown tool 'x\\n\\u202e';")


def test_tools_list_is_exactly_the_31_seed_tools_annotated(c):
    tools = tool_names(c)
    assert set(tools) == ALL_TOOLS and len(tools) == 31
    for name, tool in tools.items():
        assert tool["inputSchema"]["additionalProperties"] is False
        assert tool["annotations"]["readOnlyHint"] is (name not in GATED and name != "abort"), name
    assert tools["delete_class"]["annotations"]["destructiveHint"] is True
    # called again alike, each changes nothing more (add_dictionary: "already exists")
    assert all(tools[name]["annotations"]["idempotentHint"] for name in SEED_TOOLS["mutation"])
    # abort is allowed in read-only sessions, but it discards work: destructive, not read-only
    assert (tools["abort"]["annotations"]["readOnlyHint"], tools["abort"]["annotations"]["destructiveHint"]) \
        == (False, True)


# -- execution and session -------------------------------------------------------

# -- every inputSchema is JSON Schema 2020-12 and says exactly what the tool accepts ----

# The 2020-12 vocabularies' keywords (core, applicator, validation, meta-data, format,
# content, unevaluated), each with the JSON type its value must have.
SCHEMA = "schema"
KEYWORD_VALUES = {
    "$schema": str, "$id": str, "$ref": str, "$anchor": str, "$dynamicRef": str,
    "$dynamicAnchor": str, "$comment": str, "$defs": {SCHEMA}, "$vocabulary": dict,
    "allOf": [SCHEMA], "anyOf": [SCHEMA], "oneOf": [SCHEMA], "not": SCHEMA, "if": SCHEMA,
    "then": SCHEMA, "else": SCHEMA, "dependentSchemas": {SCHEMA}, "prefixItems": [SCHEMA],
    "items": SCHEMA, "contains": SCHEMA, "properties": {SCHEMA}, "patternProperties": {SCHEMA},
    "additionalProperties": SCHEMA, "propertyNames": SCHEMA, "unevaluatedItems": SCHEMA,
    "unevaluatedProperties": SCHEMA, "type": (str, list), "enum": list, "const": object,
    "multipleOf": "number", "maximum": "number", "exclusiveMaximum": "number",
    "minimum": "number", "exclusiveMinimum": "number", "maxLength": "count", "minLength": "count",
    "pattern": str, "maxItems": "count", "minItems": "count", "uniqueItems": bool,
    "maxContains": "count", "minContains": "count", "maxProperties": "count",
    "minProperties": "count", "required": "names", "dependentRequired": dict, "title": str,
    "description": str, "default": object, "deprecated": bool, "readOnly": bool,
    "writeOnly": bool, "examples": list, "format": str, "contentEncoding": str,
    "contentMediaType": str, "contentSchema": SCHEMA,
}
JSON_TYPES = {"null", "boolean", "object", "array", "number", "string", "integer"}


def schema_problems(schema, where="#"):
    """Why `schema` is not a 2020-12 schema of the shape MCP allows (standard library only)."""
    if isinstance(schema, bool):
        return []
    if not isinstance(schema, dict):
        return ["%s: a schema must be an object or a boolean" % where]
    problems = []
    for key, value in schema.items():
        at = "%s/%s" % (where, key)
        kind = KEYWORD_VALUES.get(key)
        if kind is None:
            problems.append("%s: not a JSON Schema 2020-12 keyword" % at)
        elif kind == SCHEMA:
            problems += schema_problems(value, at)
        elif kind == [SCHEMA]:
            problems += (["%s: must be a non-empty array" % at] if not (isinstance(value, list) and value)
                         else [p for i, s in enumerate(value) for p in schema_problems(s, "%s/%d" % (at, i))])
        elif kind == {SCHEMA}:
            problems += (["%s: must be an object" % at] if not isinstance(value, dict)
                         else [p for k, s in value.items() for p in schema_problems(s, "%s/%s" % (at, k))])
        elif kind == "count":
            if not (type(value) is int and value >= 0):
                problems.append("%s: must be a non-negative integer" % at)
        elif kind == "number":
            if type(value) not in (int, float):
                problems.append("%s: must be a number" % at)
        elif kind == "names":
            if not (isinstance(value, list) and all(isinstance(n, str) for n in value)
                    and len(set(value)) == len(value)):
                problems.append("%s: must be an array of unique strings" % at)
            else:
                problems += ["%s: %r names no property" % (at, n) for n in value
                             if n not in schema.get("properties", {})]
        elif not isinstance(value, kind):
            problems.append("%s: must be %s, got %r" % (at, kind, value))
    types = schema.get("type")
    types = [types] if isinstance(types, str) else types or []
    problems += ["%s/type: %r is not a JSON type" % (where, t) for t in types if t not in JSON_TYPES]
    return problems


def test_commit_s_description_says_the_same_change_committed_by_another_is_no_conflict(c):
    # It said only "fails with kind conflict if another session changed the same file".
    assert "unless it committed the same change (no conflict: listed alreadyCommitted)" in \
        tool_names(c)["commit"]["description"]


def test_run_test_method_s_description_names_every_method_it_runs(c):
    # It said "test*" only, though a TestCase's runTest runs too (unittest's loader collects it).
    assert "collect: test*, or runTest for a TestCase with no test*" in \
        tool_names(c)["run_test_method"]["description"]


def test_list_dictionary_entries_s_description_says_which_names_it_leaves_out(c):
    # It said "every top-level name", and __version__, __all__ were left out unsaid.
    assert "but those starting with __ (__all__, __version__, what Python sets)" in \
        tool_names(c)["list_dictionary_entries"]["description"]


def test_the_checker_finds_what_is_not_2020_12():
    assert sorted(schema_problems({"type": "object", "properties": {"a": {"type": "text"}},
                                   "required": ["a", "b"], "additionalProperties": False,
                                   "optional": ["a"], "minLength": -1})) == sorted([
        "#/optional: not a JSON Schema 2020-12 keyword",
        "#/minLength: must be a non-negative integer",
        "#/required: 'b' names no property",
        "#/properties/a/type: 'text' is not a JSON type"])


def test_every_input_schema_is_json_schema_2020_12_with_an_object_root(c):
    for name, tool in tool_names(c).items():
        schema = tool["inputSchema"]
        assert schema.get("type") == "object", name
        assert schema_problems(schema) == [], name


# A value for each argument that lets every tool run without changing the image (an
# unknown class, or a new one for a dictionary that does not exist), so only the argument
# tried matters: a source that does not compile would be refused before a dictionaryName.
HARMLESS = {"className": "NoSuchClassZz", "selector": "zz_none", "source": "class NewZz:\n    pass\n",
            "dictionaryName": "no_such_dictionary_zz", "name": "zz_none", "pattern": "zz_none",
            "comment": "c", "category": "c", "code": "None", "meta": False,
            "recompileMethods": False, "classNames": ["NoSuchClassZz"]}


def _allows_empty(schema):
    return schema.get("minLength", 0) == 0


def test_an_empty_string_is_refused_as_invalid_exactly_when_the_schema_refuses_it(c):
    """Cross-check each string argument (and string array item) with "": a tool that refuses
    it as invalidParams must say so in its schema (minLength), and the other way round."""
    mismatches = []
    for name, tool in sorted(tool_names(c).items()):
        schema = tool["inputSchema"]
        for key, prop in schema["properties"].items():
            if prop["type"] == "string":
                allowed, empty = _allows_empty(prop), ""
            elif prop["type"] == "array" and prop["items"]["type"] == "string":
                allowed, empty = _allows_empty(prop["items"]), [""]
            else:
                continue
            arguments = {k: HARMLESS[k] for k in schema["required"]}
            arguments[key] = empty
            result = call_tool(c, name, arguments)
            kind = result.get("isError") and result["structuredContent"]["error"]["kind"]
            if allowed == (kind == "invalidParams"):
                mismatches.append((name, key, allowed, tool_text(result)))
    assert mismatches == []


def test_a_number_below_its_schema_s_minimum_is_refused_as_every_argument_error_is(c):
    """Each integer argument (paging's offset) sent -1: refused by the arguments' validation,
    worded as any other argument error, and advertised in the schema as a minimum."""
    checked = []
    for name, tool in sorted(tool_names(c).items()):
        schema = tool["inputSchema"]
        for key, prop in schema["properties"].items():
            if prop["type"] != "integer":
                continue
            arguments = {**{k: HARMLESS[k] for k in schema["required"]}, key: -1}
            # It said "offset must be 0 or more, got -1", named no tool, and no minimum was advertised.
            assert (prop.get("minimum"), error(c, name, "invalidParams", **arguments)) == (
                0, "%s: argument '%s' must be 0 or more, got -1" % (name, key)), name
            checked.append(name)
    assert {"list_all_classes", "get_class_hierarchy", "list_test_classes"} <= set(checked)


def test_execution_and_session_tools(daemon, image, c):
    assert structured(c, "execute_code", code="x = 40\nprint('hi')\nx + 2") == {
        "result": "42", "stdout": "hi\n", "stderr": ""}
    assert structured(c, "execute_code", code="x")["result"] == "40"     # the workspace persists
    assert "SyntaxError" in error(c, "execute_code", "compileError", code="def (:")

    status = structured(c, "status")
    assert (status["sessionId"], status["image"]) == (c.session, str(image))
    assert status["user"] and isinstance(status["pid"], int) and status["uncommittedChanges"] is False

    other = open_session(daemon)
    through_view(c, "view.set_source('extra.a', view.source('extra.a') + '# touched\\n', live=False)")
    assert structured(c, "status")["changedModules"] == ["extra.a"]
    assert structured(c, "abort")["discarded"] == ["extra.a"]
    assert structured(c, "status")["uncommittedChanges"] is False

    through_view(c, "view.add_module('extra.scratch', 'VALUE = 1\\n')")
    assert structured(c, "commit")["committed"] == ["extra.scratch"]
    assert (image / "extra/scratch.py").read_text() == "VALUE = 1\n"
    assert structured(other, "refresh")["broughtIn"] == ["extra.scratch"]

    # session's error path: both change extra.scratch; the second commit conflicts.
    for client, value in ((c, 2), (other, 3)):
        through_view(client, "view.set_source('extra.scratch', 'VALUE = %d\\n', live=False)" % value)
    ok(c, "commit")
    assert "extra/scratch.py" in error(other, "commit", "conflict")
    assert (image / "extra/scratch.py").read_text() == "VALUE = 2\n"
    assert structured(other, "abort")["discarded"] == ["extra.scratch"]
    other.close()


# -- listing -------------------------------------------------------------------

def test_listing_tools(c):
    dictionaries = structured(c, "list_dictionaries")["dictionaries"]
    assert dictionaries[-1] == "builtins"
    assert dictionaries.index("shop") < dictionaries.index("shop.models")
    assert structured(c, "list_classes", dictionaryName="shop.models")["classes"] == [
        "Product", "DiscountedProduct", "Cart"]
    every = structured(c, "list_all_classes")["classes"]
    assert "shop.models.Cart" in every and "builtins.int" in every
    assert every.index("shop.models.Cart") < every.index("builtins.int")
    entries = structured(c, "list_dictionary_entries", dictionaryName="shop.test_models")["entries"]
    assert {"name": "CartTest", "kind": "class"} in entries
    assert {"name": "unittest", "kind": "module"} in entries
    assert "no.such" in error(c, "list_classes", "notFound", dictionaryName="no.such")


def test_a_packages_entries_are_the_same_whatever_the_session_imported_before(daemon):
    # A fresh session's shop had "no entries", and after a browse of shop.models "models (module)",
    # the import system binding each submodule imported on its package.
    fresh = open_session(daemon)
    try:
        before = tool_text(ok(fresh, "list_dictionary_entries", dictionaryName="shop"))
        ok(fresh, "describe_class", className="Cart")
        after = tool_text(ok(fresh, "list_dictionary_entries", dictionaryName="shop"))
    finally:
        fresh.delete()
        fresh.close()
    assert before == after == "shop has no entries"


# -- browsing ------------------------------------------------------------------

def test_browsing_tools(c):
    described = structured(c, "describe_class", className="DiscountedProduct")
    assert described["bases"] == ["shop.models.Product"]
    assert "percent_off" in described["instanceVariables"] and "price" in described["methods"]
    exported = structured(c, "export_class_source", className="shop.models.Cart")["source"]
    assert exported.startswith('class Cart:\n    """Products and quantities."""')
    assert "    @classmethod\n    def of(cls, *products):" in exported
    assert structured(c, "get_class_definition", className="Product")["definition"] == (
        'class Product:\n    """Something for sale, priced in cents."""\n\n    currency = "EUR"\n')
    hierarchy = structured(c, "get_class_hierarchy", className="Product")
    assert hierarchy["superclasses"] == ["object", "shop.models.Product"]
    assert hierarchy["subclasses"] == ["shop.models.DiscountedProduct"]
    assert structured(c, "get_class_hierarchy", className="type")["superclasses"] == ["object", "type"]
    method = structured(c, "get_method_source", className="Cart", selector="of", meta=True)
    assert method["kind"] == "class" and method["source"].startswith("@classmethod\ndef of(")
    methods = structured(c, "list_methods", className="DiscountedProduct")["methods"]
    assert {"name": "price", "definedIn": "shop.models.DiscountedProduct"} in methods["instance"]
    assert {"name": "describe", "definedIn": "shop.models.Product", "inherited": True} in methods["instance"]
    assert "extra.a.Thing, extra.b.Thing" in error(c, "describe_class", "ambiguous", className="Thing")


def test_list_methods_of_a_test_case_lists_its_own_and_counts_unittests(c):
    # CartTest's four tests were listed among some 90 methods inherited from unittest.
    result = ok(c, "list_methods", className="CartTest")
    listed = result["structuredContent"]
    assert [m["name"] for m in listed["methods"]["instance"]] == [
        "test_bad_quantity_is_refused", "test_discount_applies", "test_empty_cart_totals_zero",
        "test_total_counts_quantities"]
    counted = listed["kernelInherited"]
    assert list(counted["classes"]) == ["unittest.case.TestCase"] and counted["count"] > 50
    assert tool_text(result).endswith(f"(not listed: {counted['count']} methods inherited from kernel classes, "
                                      f"{counted['count']} from unittest.case.TestCase; "
                                      "includeKernelInherited true lists them)")
    everything = structured(c, "list_methods", className="CartTest", includeKernelInherited=True)
    assert sum(map(len, everything["methods"].values())) == 4 + counted["count"]
    assert {"name": "assertEqual", "definedIn": "unittest.case.TestCase", "inherited": True} in \
        everything["methods"]["instance"]


@pytest.mark.parametrize("tool", ["get_method_source", "delete_method"])
def test_a_name_every_class_has_is_said_to_be_an_attribute_and_where_it_comes_from(c, image, tool):
    before = (image / "shop/models.py").read_text()
    # They said "(it inherits it from shop.models.Product)" and "(did you mean __init__?)".
    assert error(c, tool, "notFound", className="DiscountedProduct", selector="__module__") == (
        "shop.models.DiscountedProduct defines no method __module__ (__module__ is an attribute, not a "
        "method: Python set it as it made the class)")
    assert error(c, tool, "notFound", className="Cart", selector="__dict__") == (
        "shop.models.Cart defines no method __dict__ (__dict__ is an attribute, not a method: Python "
        "set it as it made the class)")
    assert error(c, tool, "notFound", className="Cart", selector="__qualname__") == (
        "shop.models.Cart defines no method __qualname__ (__qualname__ is an attribute, not a method: "
        "the class has it from type, its metaclass)")
    assert error(c, tool, "notFound", className="DiscountedProduct", selector="currency") == (
        "shop.models.DiscountedProduct defines no method currency (currency is an attribute, not a "
        "method: it inherits it from shop.models.Product)")
    assert error(c, tool, "notFound", className="DiscountedProduct", selector="describe") == (
        "shop.models.DiscountedProduct defines no method describe (it inherits it from shop.models.Product)")
    assert error(c, tool, "notFound", className="Cart", selector="totl") == (
        "shop.models.Cart defines no method totl (did you mean total?)")
    assert (image / "shop/models.py").read_text() == before


def test_a_mistyped_class_method_or_dictionary_is_answered_with_the_name_meant(c):
    # An agent's slips were answered "not found" with no near name ("defines no method totl").
    assert error(c, "get_method_source", "notFound", className="cart", selector="total") == (
        "no class named cart in the image or builtins (did you mean Cart?); list_all_classes shows them")
    assert error(c, "get_method_source", "notFound", className="Cart", selector="totl") == (
        "shop.models.Cart defines no method totl (did you mean total?)")
    assert error(c, "delete_method", "notFound", className="Cart", selector="checkout") == (
        "shop.models.Cart defines no method checkout; list_methods shows its methods")
    assert "(did you mean shop.models" in error(c, "list_classes", "notFound", dictionaryName="shop.model")
    # A class named in another dictionary than its own: where it is, not only "defines no class".
    assert error(c, "get_method_source", "notFound", className="shop.Cart", selector="total") == (
        "shop defines no class Cart (did you mean shop.models.Cart?)")
    assert error(c, "describe_class", "notFound", className="extra.Thing") == (
        "extra defines no class Thing (did you mean extra.a.Thing or extra.b.Thing?)")


def test_a_name_builtins_binds_no_listed_class_to_is_no_kernel_class(c):
    # builtins.Cart was "KeyError: None" (kind other); __class__ was the module type,
    # described as "class builtins.__class__" and refused as a kernel class.
    assert error(c, "describe_class", "notFound", className="builtins.Cart") == (
        "builtins has no class Cart (did you mean shop.models.Cart?); list_classes builtins shows them")
    assert error(c, "compile_method", "notFound", className="builtins.len", source="def f(self):\n    pass\n") == (
        "builtins has no class len; list_classes builtins shows them")
    assert error(c, "describe_class", "notFound", className="__class__").startswith(
        "no class named __class__ in the image or builtins")
    assert "kernel class" not in error(c, "set_class_comment", "notFound", className="__class__", comment="x")


def test_a_class_of_a_kernel_module_the_worker_loaded_is_said_to_be_the_kernels(c):
    # A refactoring session on a copy of fractions asked compile_method for decimal.Decimal
    # and was told "no dictionary named decimal": notFound, where the kernel guard refuses.
    assert error(c, "compile_method", "refused", className="collections.OrderedDict",
                 source="def f(self):\n    pass\n").startswith(
        "collections.OrderedDict is a class of the kernel module collections, not the image's, "
        "and cannot be modified; ")
    assert "collections is a kernel module (loaded in this session, not an image module)" in error(
        c, "get_method_source", "notFound", className="collections.OrderedDict", selector="keys")


def test_a_search_hit_given_back_as_a_class_says_what_it_is_and_what_to_pass(c):
    # find_senders answers "shop.models.Cart.total"; given back as className it was "no
    # dictionary named shop.models.Cart", and a module or function "no class named ...".
    assert "shop.models.Cart.total" in structured(c, "find_senders", selector="price")["results"]
    assert error(c, "get_method_source", "notFound", className="shop.models.Cart.total",
                 selector="total").endswith("pass className shop.models.Cart and selector total")
    assert error(c, "find_senders", "invalidParams", selector="Cart.total").endswith(
        "; pass the method name alone: total")
    assert "shop.models is a dictionary (image module), not a class" in error(
        c, "describe_class", "notFound", className="shop.models")


def test_builtins_given_as_a_class_is_said_to_be_the_kernel_dictionary(c):
    # Other dictionaries' names got "is a dictionary"; builtins only "no class named builtins".
    # Pointed once: "...; list_all_classes shows them" followed, two tools in one sentence.
    assert error(c, "describe_class", "notFound", className="builtins") == (
        "no class named builtins in the image or builtins; builtins is the kernel dictionary, not a "
        "class: list_dictionary_entries shows its functions and classes")


def test_a_module_given_to_a_test_tool_is_pointed_to_the_test_classes(c):
    # It pointed to list_dictionary_entries, as the browsing tools do: no help to run a test.
    assert error(c, "run_test_class", "notFound", className="shop.test_models") == (
        "shop defines no class test_models; shop.test_models is a dictionary (image module), not a "
        "class: list_test_classes shows the image's test classes")
    # A bare one pointed to list_all_classes as well, in the same sentence.
    assert error(c, "run_test_class", "notFound", className="shop") == (
        "no class named shop in the image or builtins; shop is a dictionary (image module), not a "
        "class: list_test_classes shows the image's test classes")
    assert error(c, "describe_class", "notFound", className="shop") == (
        "no class named shop in the image or builtins; shop is a dictionary (image module), not a "
        "class: list_dictionary_entries shows its functions and classes")


def test_a_misspelled_argument_is_answered_with_the_one_meant(c):
    # It was "missing required argument 'className'; unknown argument 'class_name'".
    assert error(c, "get_method_source", "invalidParams", class_name="Cart", selector="total") == (
        "get_method_source: missing required argument 'className'; unknown argument 'class_name' "
        "(did you mean className?)")
    assert error(c, "status", "invalidParams", verbose=True) == (
        "status: unknown argument 'verbose' (it takes none)")
    # It was "(did you mean meta?)", by the name's letters, for a string meta cannot take.
    assert error(c, "get_method_source", "invalidParams", className="Cart", method="total") == (
        "get_method_source: missing required argument 'selector'; unknown argument 'method' "
        "(did you mean selector?)")


def test_unknown_arguments_are_echoed_cut_and_counted_past_twenty(c):
    # A fuzzer's 100 KB argument name came back whole, twice (text and structuredContent),
    # and 200,000 unknown names (3 MB sent) as an 18 MB error.
    long_name = error(c, "status", "invalidParams", **{"k" * 100_000: 1})
    assert long_name == "status: unknown argument '" + "k" * 200 + "... (100000 characters)' (it takes none)"
    many = error(c, "status", "invalidParams", **{f"k{i}": 1 for i in range(200_000)})
    assert many.count("unknown argument") == 20 and many.endswith("; and 199980 more problems")


def test_a_dictionary_under_a_module_is_refused_with_its_name_cut(c):
    # A fuzzer's 5000-character name came back whole in the refusal.
    name = "shop.models." + "y" * 5000
    assert error(c, "add_dictionary", "refused", dictionaryName=name) == (
        f"shop.models is a module, not a package, so {name[:200]}... (5012 characters) cannot live under it: "
        "to make shop.models a package, move shop/models.py to shop/models/__init__.py in the image's "
        "directory, then refresh")


def test_a_dictionary_under_a_module_is_refused_saying_how_to_make_that_module_a_package(tmp_path):
    # Made first as a module, `inv` could hold no `inv.models`, and no answer said how it could.
    image = tmp_path / "image"
    image.mkdir()
    with Daemon(tmp_path, env={"GS_MCP_IMAGE": str(image)}) as running:
        c = open_session(running)
        c.tool("add_dictionary", dictionaryName="inv")
        told = error(c, "add_dictionary", "refused", dictionaryName="inv.models")
        assert told == ("inv is a module, not a package, so inv.models cannot live under it: to make inv a "
                        "package, move inv.py to inv/__init__.py in the image's directory, then refresh")
        (image / "inv").mkdir()
        (image / "inv.py").rename(image / "inv" / "__init__.py")
        c.tool("refresh")
        assert tool_text(c.tool("add_dictionary", dictionaryName="inv.models")).startswith(
            "added dictionary inv.models; committed")
        c.close()
    assert (image / "inv" / "models.py").exists()


def test_compile_method_given_two_methods_or_an_attribute_says_which_tool_takes_them(c):
    # Both were told "use execute_code to run other code".
    assert error(c, "compile_method", "refused", className="Cart",
                 source="def a(self):\n    return 1\n\n\ndef b(self):\n    return 2\n").endswith(
        "; send each method in a compile_method call of its own")
    assert "compile_class_definition" in error(c, "compile_method", "refused", className="Cart",
                                               source="limit = 3\n")
    # so were a class sent to compile_method and a def to compile_class_definition
    assert "compile_class_definition" in error(c, "compile_method", "refused", className="Cart",
                                               source="class Line:\n    pass\n")
    assert "compile_method with className its dictionary" in error(
        c, "compile_class_definition", "refused", dictionaryName="shop.models", source="def helper():\n    pass\n")


def test_a_compilers_error_in_a_definition_names_the_line_of_the_text_sent(c):
    # It named the module file's line the def would have gone to: "evaluating the definition
    # raised SyntaxError: duplicate argument 'a' in function definition (models.py, line 48)".
    assert error(c, "compile_method", "compileError", className="Cart",
                 source="def f(self, a, a):\n    return a\n") == (
        "line 1: duplicate argument 'a' in function definition")


# -- search ----------------------------------------------------------------------

def test_search_tools(c):
    assert structured(c, "find_implementors", selector="price")["results"] == [
        "shop.models.Product", "shop.models.DiscountedProduct"]
    references = structured(c, "find_references_to", name="DiscountedProduct")["results"]
    assert references == ["shop.test_models.CartTest.test_discount_applies"]
    senders = structured(c, "find_senders", selector="total")["results"]
    assert "shop.test_models.CartTest.test_total_counts_quantities" in senders
    assert all(label.startswith("shop.test_models.CartTest.") for label in senders)
    found = structured(c, "search_method_source", pattern="percent_off", dictionaryName="shop.models")
    assert found["results"] == ["shop.models.DiscountedProduct.__init__",
                                "shop.models.DiscountedProduct.price"]
    assert "empty" in error(c, "search_method_source", "invalidParams", pattern="")
    error(c, "find_senders", "invalidParams", selector="total", extra=1)   # closed schema


# -- mutation ------------------------------------------------------------------

def test_mutation_tools(image, c):
    assert structured(c, "add_dictionary", dictionaryName="acme.tools")["created"] == ["acme", "acme.tools"]
    assert (image / "acme/__init__.py").exists() and (image / "acme/tools.py").exists()
    defined = structured(c, "compile_class_definition", source="class Widget:\n    size = 1\n",
                         dictionaryName="acme.tools")
    assert (defined["outcome"], defined["committed"]) == ("defined", ["acme.tools"])
    assert structured(c, "compile_method", className="Widget",
                      source="def grow(self):\n    return self.size + 1\n")["replaced"] is False
    assert structured(c, "execute_code", code="from acme.tools import Widget\nWidget().grow()")["result"] == "2"
    ok(c, "set_class_comment", className="acme.tools.Widget", comment="A widget.")
    assert '    """A widget."""\n' in (image / "acme/tools.py").read_text()
    ok(c, "delete_method", className="Widget", selector="grow")
    assert "def grow" not in (image / "acme/tools.py").read_text()
    ok(c, "delete_class", className="Widget")
    assert "class Widget" not in (image / "acme/tools.py").read_text()
    assert structured(c, "remove_dictionary", dictionaryName="acme")["removed"] == ["acme", "acme.tools"]
    assert not (image / "acme").exists()

    assert "kernel" in error(c, "compile_method", "refused", className="builtins.int",
                             source="def double(self):\n    return self * 2\n")
    assert "line 1" in error(c, "compile_method", "compileError", className="Cart",
                             source="def broken(self:\n")


def test_a_propertys_setter_alone_is_refused_and_a_new_session_still_imports_the_module(daemon, image, c):
    ok(c, "add_dictionary", dictionaryName="props")
    ok(c, "compile_class_definition", dictionaryName="props",
       source="class Box:\n    w = 1\n\n    @property\n    def width(self):\n        return self.w\n")
    said = error(c, "compile_method", "refused", className="Box",
                 source="@width.setter\ndef width(self, value):\n    self.w = value\n")
    assert "Send all the defs of width together, the one binding it first" in said
    ok(c, "compile_method", className="Box",
       source="@property\ndef width(self):\n    return self.w\n\n"
              "@width.setter\ndef width(self, value):\n    self.w = value\n")
    other = open_session(daemon)   # imports the module as committed
    try:
        assert structured(other, "execute_code",
                          code="from props import Box\nb = Box()\nb.width = 5\nb.width")["result"] == "5"
    finally:
        other.delete()
        other.close()
        ok(c, "remove_dictionary", dictionaryName="props")


def test_a_new_class_named_as_its_module_imports_a_name_is_refused_and_the_tests_still_pass(image, c):
    # `class Cart` sent to shop.test_models, which imports Cart, went last in the module and
    # committed: every CartTest test then built the new, empty Cart and errored.
    before = (image / "shop/test_models.py").read_text()
    assert error(c, "compile_class_definition", "refused", dictionaryName="shop.test_models",
                 source="class Cart:\n    pass\n") == (
        "shop.test_models.Cart is bound already by a top-level statement (line 5: "
        "'from shop.models import Cart, DiscountedProduct, Product'): a new class of that name, written "
        "last in the module, would take that binding's place for the code reading it; name the class "
        "otherwise, or edit that statement in the module's file, then refresh")
    assert (image / "shop/test_models.py").read_text() == before
    assert structured(c, "run_test_class", className="CartTest")["errors"] == 0
    # so is one a `*` import brought in
    (image / "starry.py").write_text("from shop.models import *\n")
    ok(c, "refresh")
    try:
        assert error(c, "compile_class_definition", "refused", dictionaryName="starry",
                     source="class Cart:\n    pass\n").startswith(
            "starry.Cart is bound already by a top-level statement (line 1: 'from shop.models import *')")
    finally:
        ok(c, "remove_dictionary", dictionaryName="starry")


def test_a_new_class_named_as_a_bare_annotation_is_compiled(image, c):
    # `Cart: int` (no value) binds nothing: refused as "bound already by a top-level statement".
    (image / "annotated.py").write_text("Cart: int\n")
    ok(c, "refresh")
    try:
        ok(c, "compile_class_definition", dictionaryName="annotated", source="class Cart:\n    pass\n")
        assert structured(c, "execute_code", code="import annotated\nisinstance(annotated.Cart, type)")[
            "result"] == "True"
    finally:
        ok(c, "remove_dictionary", dictionaryName="annotated")


def test_a_definition_failing_in_a_stand_in_with_no_name_is_a_compile_error(image, c):
    # Its __name__ was read to name the module in the answer: AttributeError, kind other.
    from test_tools_stand_in_module import NAMELESS, UNDEFINED_SAID
    (image / "nameless.py").write_text("import sys\n\n\n" + NAMELESS)
    ok(c, "refresh")
    try:
        ok(c, "execute_code", code="import nameless")
        assert error(c, "compile_method", "compileError", className="nameless.Widget",
                     source="def spin(self, x=Undefined):\n    pass\n").startswith(UNDEFINED_SAID)
    finally:
        ok(c, "remove_dictionary", dictionaryName="nameless")


def test_a_bare_annotation_is_neither_an_entry_nor_a_rebinding_of_a_class(image, c):
    # `Tag: type` below `class Tag` binds nothing: the class was taken for one "made at run
    # time" and compile_method refused; a module that does not import listed `Note (global)`.
    (image / "noted.py").write_text("class Tag:\n    label = 'x'\n\n\nTag: type\n")
    (image / "unnoted.py").write_text("Note: int\nraise RuntimeError('broken')\n")
    ok(c, "refresh")
    try:
        ok(c, "compile_method", className="noted.Tag", source="def shown(self):\n    return self.label\n")
        assert structured(c, "execute_code", code="import noted\nnoted.Tag().shown()")["result"] == "'x'"
        assert structured(c, "list_dictionary_entries", dictionaryName="unnoted")["entries"] == []
    finally:
        ok(c, "remove_dictionary", dictionaryName="noted")
        ok(c, "remove_dictionary", dictionaryName="unnoted")


def test_a_new_class_named_by_a_walrus_in_a_bare_annotation_is_refused(image, c):
    # `x: (Cart := int)` has no value, yet its annotation is evaluated and binds Cart: the
    # class was compiled over that binding, taken for a bare annotation's nothing.
    (image / "walrused.py").write_text("x: (Cart := int)\n")
    ok(c, "refresh")
    try:
        assert error(c, "compile_class_definition", "refused", dictionaryName="walrused",
                     source="class Cart:\n    pass\n").startswith(
            "walrused.Cart is bound already by a top-level statement (line 1: 'x: (Cart := int)')")
    finally:
        ok(c, "remove_dictionary", dictionaryName="walrused")


def test_a_new_class_named_as_a_handlers_exception_is_compiled(image, c):
    # Python deletes `except E as Error`'s name as the handler ends: no binding the class
    # would replace, yet it was refused as "bound already by a top-level statement".
    (image / "guarded.py").write_text("try:\n    import no_such_module\nexcept ImportError as Error:\n"
                                      "    REASON = str(Error)\n")
    ok(c, "refresh")
    try:
        ok(c, "compile_class_definition", dictionaryName="guarded", source="class Error(Exception):\n    pass\n")
        assert structured(c, "execute_code", code="import guarded\nissubclass(guarded.Error, Exception)")[
            "result"] == "True"
    finally:
        ok(c, "remove_dictionary", dictionaryName="guarded")


def test_a_long_name_from_a_definition_s_source_is_echoed_cut(c):
    # A fuzzer's 5000-character base name came back whole (Python's own message cuts it).
    said = error(c, "compile_class_definition", "compileError", dictionaryName="shop.models",
                 source="class Spot(" + "Y" * 5000 + "):\n    pass\n")
    assert said.startswith("evaluating the definition raised NameError: name '" + "Y" * 200 + "' "
                           "is not defined (shop.models binds no " + "Y" * 200 + "... (5000 characters) at its top level")
    assert len(said) < 1000


def test_an_error_with_no_message_is_named_without_a_dangling_colon(c):
    # A fuzzer's `raise SystemExit` read "evaluating the definition raised SystemExit: ".
    assert error(c, "compile_class_definition", "compileError", dictionaryName="shop.models",
                 source="class Spot:\n    raise SystemExit\n") == "evaluating the definition raised SystemExit"
    # One whose __str__ raised was answered as that error: "ZeroDivisionError: division by zero".
    odd = "type('Odd', (Exception,), {'__str__': lambda self: 1 / 0})"
    assert error(c, "compile_class_definition", "compileError", dictionaryName="shop.models",
                 source=f"class Spot:\n    raise {odd}()\n") == (
        "evaluating the definition raised Odd: <exception str() failed>")


def test_a_decorator_s_error_names_where_in_the_image_it_was_raised(image, c):
    # "evaluating the definition raised TypeError: g needs a docstring" said which error,
    # not which decorator of the definition's raised it, nor where.
    (image / "decorating.py").write_text(
        "def needs_doc(f):\n    if not f.__doc__:\n        raise TypeError(f'{f.__name__} needs a docstring')\n"
        "    return f\n\n\nclass Shelf:\n    pass\n")
    ok(c, "refresh")
    try:
        assert error(c, "compile_method", "compileError", className="decorating.Shelf",
                     source="@needs_doc\ndef g(self):\n    pass\n") == (
            "evaluating the definition raised TypeError: g needs a docstring (raised in decorating line 3, "
            "in needs_doc)")
    finally:
        ok(c, "remove_dictionary", dictionaryName="decorating")


def test_an_error_message_utf8_cannot_carry_is_sent_escaped(c):
    # A lone surrogate in it made the answer "the result cannot be sent: not JSON ...", kind other.
    assert error(c, "compile_class_definition", "compileError", dictionaryName="shop.models",
                 source="class Spot:\n    raise ValueError('odd \\udcff')\n") == (
        "evaluating the definition raised ValueError: odd \\udcff")


def test_a_long_selector_a_class_level_statement_binds_is_echoed_cut(c):
    # The hint named it whole, twice (the name, the statement binding it), past the cut.
    long_name = "Y" * 5000
    ok(c, "add_dictionary", dictionaryName="longnames")
    try:
        ok(c, "compile_class_definition", dictionaryName="longnames", source=f"class Bound:\n    {long_name} = 1\n")
        said = error(c, "get_method_source", "notFound", className="longnames.Bound", selector=long_name)
        assert said.startswith(f"longnames.Bound defines no method {'Y' * 200}... (5000 characters) (it binds "
                               f"{'Y' * 200}... (5000 characters) by a class-level statement,")
        assert len(said) < 1000
    finally:
        ok(c, "remove_dictionary", dictionaryName="longnames")


def test_a_long_def_name_a_class_attribute_has_is_echoed_cut_in_compile_method_s_refusal(c):
    # Named whole in "... is a class attribute, not a method".
    long_name = "Y" * 5000
    ok(c, "add_dictionary", dictionaryName="longattr")
    try:
        ok(c, "compile_class_definition", dictionaryName="longattr", source=f"class Bound:\n    {long_name} = 1\n")
        said = error(c, "compile_method", "refused", className="longattr.Bound",
                     source=f"def {long_name}(self):\n    return 1\n")
        assert said.startswith(f"longattr.Bound.{'Y' * 200}... (5000 characters) is a class attribute, not a method")
        assert len(said) < 1000
    finally:
        ok(c, "remove_dictionary", dictionaryName="longattr")


def test_a_definition_needing_an_import_says_how_the_module_gets_it(image, c):
    # A developer's first dataclass: the import sent along, then the decorator alone.
    said = error(c, "compile_class_definition", "refused", dictionaryName="shop.models",
                 source="from dataclasses import dataclass\n@dataclass\nclass Point:\n    x: int = 0\n")
    assert "no tool writes a module's imports" in said and "use execute_code" not in said
    said = error(c, "compile_class_definition", "compileError", dictionaryName="shop.models",
                 source="@dataclass\nclass Point:\n    x: int = 0\n")
    assert "shop.models binds no dataclass at its top level; if it is to be imported, add it at " \
           "the top of the module's file in an editor, then refresh" in said
    models = image / "shop/models.py"
    before = models.read_text()
    try:   # what the answer says to do, done: the class then compiles
        models.write_text("from dataclasses import dataclass\n" + before)
        ok(c, "refresh")
        ok(c, "compile_class_definition", dictionaryName="shop.models",
           source="@dataclass\nclass Point:\n    x: int = 0\n")
        assert structured(c, "execute_code", code="from shop.models import Point\nPoint(2)")["result"] == "Point(x=2)"
    finally:
        models.write_text(before)
        ok(c, "refresh")


# -- testing -------------------------------------------------------------------

def test_testing_tools(c):
    classes = structured(c, "list_test_classes")["testClasses"]
    assert set(classes) == {"shop.test_models.CartTest", "extra.test_broken.BrokenTest",
                            "extra.test_broken.TestPlainBroken"}
    ran = structured(c, "run_test_class", className="CartTest")
    assert (ran["run"], ran["passed"], ran["failures"]) == (4, 4, 0)
    one = structured(c, "run_test_method", className="BrokenTest", selector="test_right")
    assert (one["run"], one["passed"]) == (1, 1)
    failing = structured(c, "list_failing_tests")["failing"]
    assert sorted((f["test"], f["message"]) for f in failing) == [
        ("extra.test_broken.BrokenTest.test_wrong", "2 != 3"),
        ("extra.test_broken.TestPlainBroken.test_bare", "assert total == 3 failed")]
    detail = structured(c, "describe_test_failure", className="BrokenTest", selector="test_wrong")
    assert (detail["exception"], detail["message"]) == ("AssertionError", "2 != 3")
    assert "self.assertEqual(1 + 1, 3)" in detail["traceback"]
    assert "test_nope" in error(c, "run_test_method", "notFound", className="CartTest", selector="test_nope")
    # A class that is no test class was answered with what one is, not where to find them.
    assert error(c, "run_test_class", "notFound", className="Cart").endswith("; list_test_classes shows them")



def test_list_failing_tests_with_an_empty_class_list_is_refused_not_green(c):
    # [] ran nothing and answered "no failing tests (0 run)", though BrokenTest fails.
    assert "omit classNames to run every test class" in error(c, "list_failing_tests", "invalidParams",
                                                              classNames=[])
    assert structured(c, "list_failing_tests")["failing"]

# -- configuration: read-only, toolset selection, worker class, third-party -----

def test_read_only_daemon_hides_and_refuses_exactly_the_gated_tools(image, tmp_path):
    env = {"GS_MCP_IMAGE": str(image), "GS_MCP_READONLY": "1"}
    with Daemon(tmp_path, env=env) as daemon:
        client = open_session(daemon)
        assert set(tool_names(client)) == ALL_TOOLS - GATED
        for name, arguments in (("execute_code", {"code": "1"}), ("commit", {}),
                                ("compile_method", {"className": "Cart", "source": "def f(self): pass"})):
            reply = client.call("tools/call", {"name": name, "arguments": arguments}).json()
            assert reply["error"]["code"] == -32601 and reply["error"]["data"]["kind"] == "readOnly"
        assert structured(client, "status")["readOnly"] is True
        assert structured(client, "run_test_class", className="CartTest")["passed"] == 4


def test_toolsets_select_a_subset_and_an_unknown_name_stops_startup(image, tmp_path):
    env = {"GS_MCP_IMAGE": str(image), "GS_MCP_TOOLSETS": "browsing search"}
    with Daemon(fresh_dir(tmp_path / "subset"), env=env) as daemon:
        client = open_session(daemon)
        assert set(tool_names(client)) == SEED_TOOLS["browsing"] | SEED_TOOLS["search"]
        reply = client.call("tools/call", {"name": "status", "arguments": {}}).json()
        assert reply["error"]["data"]["kind"] == "notFound"
        assert reply["error"]["message"] == (
            "unknown tool 'status': it is in the session toolset, which this server does not "
            "load (GS_MCP_TOOLSETS); tools/list shows the tools it offers")

    refused = Daemon(fresh_dir(tmp_path / "unknown"), env={"GS_MCP_IMAGE": str(image),
                                                "GS_MCP_TOOLSETS": "browsing nosuchset"})
    assert refused.refusal() != 0
    assert "nosuchset" in refused.log_text()


def test_the_gemstone_servers_toolset_names_select_the_same_subset(image, tmp_path):
    # The seed's launch line, verbatim: GS_MCP_TOOLSETS="McpBrowsingToolset McpSearchToolset".
    env = {"GS_MCP_IMAGE": str(image), "GS_MCP_TOOLSETS": "McpBrowsingToolset McpSearchToolset"}
    with Daemon(tmp_path, env=env) as daemon:
        client = open_session(daemon)
        assert set(tool_names(client)) == SEED_TOOLS["browsing"] | SEED_TOOLS["search"]
        assert structured(client, "find_senders", selector="price")["total"] == 2
    assert "toolsets browsing search;" in daemon.log_text()


def test_none_for_the_server_identity_knobs_leaves_the_servers_own(tmp_path):
    # The README's default for them is none; written so, it named the server "none".
    env = {"GS_MCP_SERVER_NAME": "none", "GS_MCP_SERVER_VERSION": "None", "GS_MCP_SERVER_TITLE": "none"}
    with Daemon(tmp_path, env=env) as daemon:
        info = Client(daemon.port).initialize()["result"]["serverInfo"]
    assert info == {"name": McpServer.default_server_name, "version": McpServer.default_server_version}


def test_worker_class_and_a_third_party_toolset_composed_with_browsing(image, tmp_path):
    env = {"GS_MCP_IMAGE": str(image), "PYTHONPATH": "%s:%s/tests" % (REPO, REPO),
           "GS_MCP_WORKER_CLASS": "test_e2e_tools:NamedServer",
           "GS_MCP_TOOLSETS": "examples.acme_toolset:AcmeLabelsToolset browsing"}
    with Daemon(tmp_path, env=env) as daemon:
        client = Client(daemon.port)
        info = client.initialize()["result"]["serverInfo"]
        assert info == {"name": "acme-image", "version": "9.9.9", "title": "Acme Image Server"}
        tools = tool_names(client)
        assert set(tools) == {"list_labels", "print_label"} | SEED_TOOLS["browsing"]
        assert tools["list_labels"]["annotations"] == {
            "readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}
        assert tools["print_label"]["annotations"]["readOnlyHint"] is False
        assert tools["describe_class"]["annotations"]["readOnlyHint"] is True
        ok(client, "print_label", text="fragile", copies=2)
        # JSON Schema: 1.0 is an integer; the tool gets it as the int 1
        assert tool_text(ok(client, "print_label", text="x", copies=1.0)) == "printed 1 x 'x'"
        assert structured(client, "list_labels")["labels"] == ["fragile", "fragile", "x"]
        assert structured(client, "describe_class", className="Cart")["class"] == "shop.models.Cart"


@pytest.fixture(scope="module")
def third_party(image, tmp_path_factory):
    """A daemon serving browsing and the third-party toolsets whose tools answer calls (those
    failing initialize need one each): the tests only call them, each in a session of its own."""
    env = {"GS_MCP_IMAGE": str(image), "PYTHONPATH": "%s:%s/tests" % (REPO, REPO),
           "GS_MCP_TOOLSETS": " ".join("test_e2e_tools:" + name for name in (
               "NonStringErrorToolset", "NumberedModeToolset", "UndeclaredRequiredToolset")) + " browsing"}
    with Daemon(tmp_path_factory.mktemp("third-party"), env=env) as running:
        yield running


def test_a_third_party_tool_error_whose_message_is_no_string_answers_its_text(third_party):
    # error_result took len() of it: the client got -32603, not the tool's error.
    client = Client(third_party.port)
    client.initialize()
    assert error(client, "fail_with_number", "refused") == "42"
    assert error(client, "fail_with_exception", "refused") == "bad label"
    # One whose __str__ raises: -32603 too; now the tool error, naming the message's type.
    assert error(client, "fail_unprintably", "refused") == ("the tool's error message could not be shown: "
                                                            "UnprintableLabel: <exception str() failed>")


def initialize_refused(image, tmp_path, toolset):
    """The error of an initialize with this tests module's `toolset` beside browsing, which
    opened no session."""
    env = {"GS_MCP_IMAGE": str(image), "PYTHONPATH": "%s:%s/tests" % (REPO, REPO),
           "GS_MCP_TOOLSETS": "test_e2e_tools:%s browsing" % toolset}
    with Daemon(tmp_path, env=env) as daemon:
        client = Client(daemon.port)
        reply = client.post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})
        assert reply.status == 200 and reply.header("mcp-session-id") is None
        return reply.json()["error"]


def test_a_toolset_naming_a_tool_as_mcp_allows_no_client_to_call_it_fails_initialize_naming_it(image, tmp_path):
    error = initialize_refused(image, tmp_path, "SpacedNameToolset")
    assert error["code"] == -32003 and (
        "worker could not be prepared: tool 'print label': a tool name must be 1 to 128 characters"
        in error["message"])


def test_a_toolset_whose_schema_says_what_the_validator_would_not_check_fails_initialize_naming_it(
        image, tmp_path):
    """tools/list would advertise copies 1 to 10, and a call with 11 would run: refused instead."""
    error = initialize_refused(image, tmp_path, "RangedCopiesToolset")
    assert error["code"] == -32003 and (
        "worker could not be prepared: tool 'print_copies': inputSchema.properties.copies uses 'exclusiveMaximum'; "
        "the argument validator checks only " in error["message"]), error


def test_a_toolset_whose_schema_holds_an_integer_too_long_to_write_fails_initialize_naming_it(
        image, tmp_path):
    # repr of the schema (the registry's cache key) raised Python's own ValueError, naming
    # neither the tool nor where the integer is.
    error = initialize_refused(image, tmp_path, "HugeMinimumToolset")
    assert error["code"] == -32003 and (
        "worker could not be prepared: tool 'print_many': inputSchema.properties.many.minimum is an "
        f"integer of more than {sys.get_int_max_str_digits()} digits" in error["message"]), error


def test_an_enum_of_numbers_takes_no_boolean_as_json_schema_says(third_party):
    client = open_session(third_party)
    assert tool_text(ok(client, "set_mode", mode=1)) == "mode 1"
    refused = client.tool("set_mode", mode=True)
    assert refused["isError"] is True
    assert refused["structuredContent"]["error"] == {
        "kind": "invalidParams", "message": "set_mode: argument 'mode' must be one of [0, 1], got True"}
    client.close()


def test_a_required_argument_no_property_declares_is_said_missing_beside_an_unknown_one(third_party):
    # The hint for the only unknown argument looked the only missing one up among the
    # properties: KeyError out of the argument check, no answer of what to fix.
    client = open_session(third_party)
    refused = client.tool("print_mode", path="x", mod=1)
    assert refused["isError"] is True
    assert refused["structuredContent"]["error"] == {
        "kind": "invalidParams", "message": "print_mode: missing required argument 'mode'; "
                                            "unknown argument 'mod' (it takes path)"}
    client.close()


def test_a_bad_worker_class_refuses_startup_saying_what_to_fix(image, tmp_path):
    env = {"GS_MCP_IMAGE": str(image), "PYTHONPATH": "%s:%s/tests" % (REPO, REPO),
           "GS_MCP_WORKER_CLASS": "test_e2e_tools:NoSuchServer"}
    daemon = Daemon(tmp_path, env=env)
    assert daemon.refusal() == 2
    assert ("configuration refused: worker_class: worker class 'test_e2e_tools:NoSuchServer': "
            "module 'test_e2e_tools' has no 'NoSuchServer'") in daemon.log_text()