"""The built-in toolsets' tools made once per process (tool_plans): each session's server
gets the same tools, gating and errors as by registering them anew, its own handlers, and
nothing a session does changes what the next server is built from."""

import pytest

from gsmcpd.worker import tool_plans
from gsmcpd.worker.server import McpServer
from gsmcpd.worker.tool_plans import plan_of
from gsmcpd.worker.toolsets import CORE_TOOLSETS, OPTIONAL_TOOLSETS, is_builtin, resolve_toolsets
from gsmcpd.worker.toolsets.bench import BenchToolset

BUILTIN = resolve_toolsets(list(CORE_TOOLSETS + OPTIONAL_TOOLSETS))


def anew(toolset_class):
    """A subclass adding nothing: no built-in, so a server registers it itself, as every
    server registered every toolset before plans."""
    return type("Anew" + toolset_class.__name__, (toolset_class,), {})


def listed(server):
    return server.handle({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})["result"]["tools"]


def call(server, name, arguments):
    return server.handle({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                          "params": {"name": name, "arguments": arguments}})


@pytest.mark.parametrize("read_only", [False, True])
def test_a_planned_build_lists_and_gates_as_registering_anew_does(read_only):
    planned = McpServer(BUILTIN, read_only=read_only)
    fresh = McpServer([anew(toolset) for toolset in BUILTIN], read_only=read_only)
    assert listed(planned) == listed(fresh)
    assert planned.gated_tools == fresh.gated_tools
    assert planned.read_only_safe_tools == fresh.read_only_safe_tools
    assert [toolset.name for toolset in planned.toolsets] == [toolset.name for toolset in fresh.toolsets]
    if read_only:   # fail-closed: no unsafe tool is there to call
        assert planned.gated_tools and not planned.gated_tools & set(planned.registry.names())
        assert call(planned, "execute_code", {"code": "1"})["error"]["data"] == {"kind": "readOnly"}


@pytest.mark.parametrize("name, arguments", [
    ("list_classes", {"dictionaryName": 3, "offset": -1, "stray": 1}),
    ("get_method_source", {}),
    ("list_failing_tests", {"classNames": ["", 4]}),
    ("find_senders", {"selector": ""}),
])
def test_a_planned_tool_refuses_bad_arguments_as_one_registered_anew(name, arguments):
    planned = call(McpServer(BUILTIN), name, dict(arguments))["result"]
    fresh = call(McpServer([anew(toolset) for toolset in BUILTIN]), name, dict(arguments))["result"]
    assert planned["isError"] and planned["structuredContent"]["error"]["kind"] == "invalidParams"
    assert planned == fresh


def test_each_server_gets_handlers_bound_to_its_own_toolsets():
    first, second = McpServer(BUILTIN), McpServer(BUILTIN)
    for server in (first, second):
        for toolset in server.toolsets:
            assert toolset.server is server
            for name in toolset.tool_names:
                assert server.registry.get(name).handler.__self__ is toolset
    assert call(first, "execute_code", {"code": "mine = 1"})["result"].get("isError") is None
    said = call(second, "execute_code", {"code": "mine"})["result"]
    assert said["isError"] and "NameError" in said["content"][0]["text"]


def test_plans_are_made_once_and_a_build_registers_no_builtin_toolset_anew(monkeypatch):
    plans = [plan_of(toolset) for toolset in BUILTIN]
    assert [plan_of(toolset) for toolset in BUILTIN] == plans
    assert all(plan_of(toolset) is plan for toolset, plan in zip(BUILTIN, plans))

    def refused(self, registry):
        raise AssertionError(f"{type(self).__name__}.register ran again")
    for toolset in BUILTIN:
        monkeypatch.setattr(toolset, "register", refused)
    assert len(listed(McpServer(BUILTIN))) == sum(len(toolset.tool_names) for toolset in BUILTIN)


def test_a_session_changes_nothing_the_next_build_is_made_of():
    before = {toolset: repr(plan_of(toolset)) for toolset in BUILTIN}
    for read_only in (False, True):
        server = McpServer(BUILTIN, read_only=read_only)
        for tool in listed(server):   # the annotations a client got are copies (the schemas
            tool["annotations"]["readOnlyHint"] = "changed"   # are the tools' own, to read)
        for tool in server.registry.tools():   # a session's own Tools are its own
            tool.annotations["readOnlyHint"] = "changed"
            tool.description = "changed"
        call(server, "list_classes", {"dictionaryName": "builtins", "offset": 1.0})   # 1.0 made 1
        call(server, "list_classes", {"dictionaryName": 3, "stray": []})
        call(server, "commit", {})
    assert {toolset: repr(plan_of(toolset)) for toolset in BUILTIN} == before
    assert listed(McpServer(BUILTIN)) == listed(McpServer([anew(toolset) for toolset in BUILTIN]))


def test_only_our_own_toolset_classes_have_plans():
    assert all(is_builtin(toolset) for toolset in BUILTIN)

    class Echoing(BenchToolset):   # a built-in's subclass: its register() may differ, and does
        def register(self, registry):
            super().register(registry)
            registry.get("echo").description = "Echo, relabelled."
    assert not is_builtin(Echoing) and plan_of(Echoing) is None
    assert listed(McpServer([Echoing]))[0]["description"] == "Echo, relabelled."
    assert listed(McpServer([BenchToolset]))[0]["description"].startswith("Answer the given text")
    assert Echoing not in tool_plans._plans


def test_a_builtin_handler_that_is_no_method_of_its_toolset_cannot_be_planned():
    class Closure(BenchToolset):
        def register(self, registry):
            super().register(registry)
            registry.get("echo").handler = lambda arguments: "not bound to a session's toolset"
    with pytest.raises(ValueError, match="Closure: tool .echo..s handler is not one of its methods"):
        tool_plans.make_plan(Closure)
    # registered anew for each server, as any toolset without a plan, it works
    assert call(McpServer([Closure]), "echo", {"text": "x"})["result"]["content"][0]["text"] \
        == "not bound to a session's toolset"


def test_a_method_replaced_on_a_builtin_toolset_since_its_plan_is_the_one_called(monkeypatch):
    # As when each server registered anew: the handler is the toolset's method of that
    # name as the server is built (a worker_class's module may replace one as it is imported).
    plan_of(BenchToolset)
    monkeypatch.setattr(BenchToolset, "echo", lambda self, arguments: arguments["text"].upper())
    assert call(McpServer([BenchToolset]), "echo", {"text": "hi"})["result"]["content"][0]["text"] == "HI"


def test_a_builtin_handler_that_is_no_method_at_all_cannot_be_planned():
    class Callable(BenchToolset):
        def register(self, registry):
            super().register(registry)
            registry.get("echo").handler = len   # a builtin function: no __self__ of ours
    with pytest.raises(ValueError, match="Callable: tool 'echo'.s handler is not one of its methods"):
        tool_plans.make_plan(Callable)


def test_a_toolset_of_an_oddly_named_class_that_cannot_be_planned_is_named_as_python_made_it():
    # Its name, asked of the metaclass, raised instead of the refusal saying what is wrong.
    class NamedOddly(type):
        @property
        def __name__(cls):
            raise RuntimeError("no name")

    class Callable(BenchToolset, metaclass=NamedOddly):
        def register(self, registry):
            super().register(registry)
            registry.get("echo").handler = len
    with pytest.raises(ValueError, match="Callable: tool 'echo'.s handler is not one of its methods"):
        tool_plans.make_plan(Callable)
