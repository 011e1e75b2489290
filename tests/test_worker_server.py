"""McpServer dispatcher, read-only gating, annotations and identity (pure, no sockets)."""

import _thread
import os
import sys
import threading

import pytest

import gsmcpd
from gsmcpd.protocol import LATEST_VERSION
from gsmcpd.worker.registry import Tool
from gsmcpd.worker.server import McpServer, build_server, resolve_worker_class
from gsmcpd.worker.toolsets import resolve_toolsets
from gsmcpd.worker.toolset import (
    RECURSION_LIMIT_NOTE, STARTING_RECURSION_LIMIT, recursion_limit_note,
    ERROR_KINDS, REPEAT_CAP, HardBreak, SoftBreak, ToolError, Toolset, bool_prop, mark_soft_break,
    object_schema, repeated, string_prop,
)


class ReaderToolset(Toolset):
    name = "reader"
    tool_names = ("peek", "fail_kind", "crash", "progress_twice", "answer_badly")
    read_only_safe = frozenset(tool_names)
    idempotent = frozenset({"peek"})

    def register(self, registry):
        registry.add(Tool("peek", "peek", object_schema({"what": string_prop("w")}, ["what"]),
                          lambda a: {"text": f"saw {a['what']}", "structured": {"what": a["what"]}}))
        registry.add(Tool("fail_kind", "fail", object_schema({"kind": string_prop("k")}, ["kind"]),
                          self.fail_kind))
        registry.add(Tool("crash", "crash", object_schema(), lambda a: {}["missing"]))
        registry.add(Tool("progress_twice", "progress", object_schema(), self.progress_twice))
        registry.add(Tool("answer_badly", "bad", object_schema(), lambda a: 42))

    def fail_kind(self, arguments):
        raise ToolError(arguments["kind"], f"failed as {arguments['kind']}")

    def progress_twice(self, arguments):
        self.progress(1, 2, "half")
        self.progress(2)
        return "done"


class WriterToolset(Toolset):
    name = "writer"
    tool_names = ("write", "erase")
    destructive = frozenset({"erase"})

    def register(self, registry):
        registry.add(Tool("write", "write", object_schema(), lambda a: "written"))
        registry.add(Tool("erase", "erase", object_schema(), lambda a: "erased"))


class MixedToolset(Toolset):
    name = "mixed"
    tool_names = ("look", "save")
    read_only_safe = frozenset({"look"})

    def register(self, registry):
        registry.add(Tool("look", "look", object_schema(), lambda a: "looked"))
        registry.add(Tool("save", "save", object_schema(), lambda a: "saved"))


def request(method, params=None, id=1):
    message = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def call(server, name, arguments=None, **extra):
    params = {"name": name, **extra}
    if arguments is not None:
        params["arguments"] = arguments
    return server.handle(request("tools/call", params, id=7))


def tool_names(server):
    return [t["name"] for t in server.handle(request("tools/list"))["result"]["tools"]]


# -- dispatcher -------------------------------------------------------------

def test_initialize_echoes_a_supported_version_and_declares_only_tools():
    response = McpServer([ReaderToolset]).handle(request("initialize", {"protocolVersion": "2025-06-18"}))
    assert response == {"jsonrpc": "2.0", "id": 1, "result": {
        "protocolVersion": "2025-06-18",
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "gsmcpd", "version": gsmcpd.__version__},
    }}


def test_initialize_answers_latest_for_unsupported_or_missing_version():
    server = McpServer()
    for params in ({"protocolVersion": "2025-03-26"}, {}, None):
        assert server.handle(request("initialize", params))["result"]["protocolVersion"] == LATEST_VERSION


def test_ping_answers_empty_result():
    assert McpServer().handle(request("ping", id="p")) == {"jsonrpc": "2.0", "id": "p", "result": {}}


@pytest.mark.parametrize("method", ["resources/list", "resources/read", "prompts/list", "prompts/get",
                                    "logging/setLevel", "completion/complete", "tasks/list", "bogus"])
def test_undeclared_methods_are_method_not_found(method):
    response = McpServer().handle(request(method, {}))
    assert response["id"] == 1
    assert response["error"]["code"] == -32601


def test_a_huge_method_or_tool_name_is_echoed_cut():
    # A name is the client's: echoed whole, a 1 MB name made a 1 MB error.
    server = McpServer([ReaderToolset])
    name = "x" * 1_000_000
    for response in (server.handle(request(name, {})),
                     server.handle(request("tools/call", {"name": name}))):
        message = response["error"]["message"]
        assert len(message) < 300 and "x" * 200 in message and "(1000000 characters)" in message
    assert server.handle(request("bogus", {}))["error"]["message"] == "method not found: 'bogus'"


def test_a_method_name_is_escaped_as_a_tool_name_is():
    # "method not found" echoed the client's method raw: a right-to-left mark turned the
    # reader's text around, a BEL rang; "unknown tool" escaped the same name.
    server = McpServer([ReaderToolset])
    name = "no\u202eb\x07"
    assert server.handle(request(name, {}))["error"]["message"] == "method not found: 'no\\u202eb\\x07'"
    assert server.handle(request("tools/call", {"name": name}))["error"]["message"].startswith(
        "unknown tool 'no\\u202eb\\x07'")


def test_notifications_and_responses_get_no_answer():
    server = McpServer([ReaderToolset])
    assert server.handle({"jsonrpc": "2.0", "method": "notifications/initialized"}) is None
    assert server.handle({"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "peek"}}) is None
    assert server.handle({"jsonrpc": "2.0", "id": 3, "result": {}}) is None


def test_non_object_params_is_invalid_params():
    assert McpServer().handle(request("tools/list", [1]))["error"]["code"] == -32602


def test_tools_list_is_every_tool_sorted_without_cursor():
    result = McpServer([WriterToolset, ReaderToolset]).handle(request("tools/list"))["result"]
    assert list(result) == ["tools"]
    names = [t["name"] for t in result["tools"]]
    assert names == sorted(ReaderToolset.tool_names + WriterToolset.tool_names)
    for tool in result["tools"]:
        assert tool["inputSchema"]["additionalProperties"] is False
        assert isinstance(tool["inputSchema"]["required"], list)


@pytest.mark.parametrize("cursor", ["", "next", 3, {"page": 2}])
def test_tools_list_refuses_a_cursor_it_never_gave_as_invalid_params(cursor):
    """No page ever has a nextCursor, so any cursor is invalid (MCP: SHOULD answer -32602)."""
    response = McpServer([ReaderToolset]).handle(request("tools/list", {"cursor": cursor}, id=4))
    assert response["id"] == 4 and response["error"]["code"] == -32602, response
    assert "cursor" in response["error"]["message"]


def test_tools_list_takes_a_null_cursor_and_meta_as_no_cursor():
    server = McpServer([ReaderToolset])
    for params in ({"cursor": None}, {"_meta": {"progressToken": 1}}):
        assert server.handle(request("tools/list", params))["result"]["tools"], params


def test_tool_call_success_with_text_and_structured_content():
    response = call(McpServer([ReaderToolset]), "peek", {"what": "x"})
    assert response == {"jsonrpc": "2.0", "id": 7, "result": {
        "content": [{"type": "text", "text": "saw x"}], "structuredContent": {"what": "x"}}}


@pytest.mark.parametrize("arguments, fragment", [
    ({}, "missing required argument 'what'"),
    ({"what": "x", "more": 1}, "unknown argument 'more'"),
    ({"what": 3}, "must be string"),
])
def test_bad_arguments_are_a_tool_execution_error(arguments, fragment):
    result = call(McpServer([ReaderToolset]), "peek", arguments)["result"]
    assert result["isError"] is True
    assert result["structuredContent"]["error"]["kind"] == "invalidParams"
    assert fragment in result["content"][0]["text"]


def test_missing_arguments_count_as_empty():
    result = call(McpServer([ReaderToolset]), "peek")["result"]
    assert result["structuredContent"]["error"]["kind"] == "invalidParams"


MALFORMED_CALLS = [
    ({}, "tools/call needs a tool name: params.name is missing"),
    ({"name": ""}, "tools/call needs a tool name: params.name is empty"),
    ({"name": 5}, "tools/call needs a tool name: params.name must be a string, got integer"),
    ({"name": None}, "tools/call needs a tool name: params.name must be a string, got null"),
    ({"name": "peek", "arguments": [1]}, "tools/call arguments must be an object, got array"),
    ({"name": "peek", "arguments": "what=x"}, "tools/call arguments must be an object, got string"),
]


@pytest.mark.parametrize("params, message", MALFORMED_CALLS)
def test_malformed_tool_call_is_jsonrpc_invalid_params_saying_what_was_sent(params, message):
    response = McpServer([ReaderToolset]).handle(request("tools/call", params))
    assert response["error"] == {"code": -32602, "message": message, "data": {"kind": "invalidParams"}}


def test_unknown_tool_is_invalid_params_kind_not_found():
    response = call(McpServer([ReaderToolset]), "nope", {})
    assert response["error"]["code"] == -32602
    assert response["error"]["data"] == {"kind": "notFound"}


def test_an_unknown_tool_names_the_offered_tools_it_is_close_to():
    # A typo answered only "unknown tool: list_class" left the client guessing.
    server = McpServer(resolve_toolsets(["listing"]))
    assert call(server, "list_class", {})["error"] == {
        "code": -32602, "data": {"kind": "notFound"},
        "message": "unknown tool 'list_class' (did you mean list_classes or list_all_classes?); "
                   "tools/list shows the tools this server offers"}
    assert call(server, "nope", {})["error"]["message"] == (
        "unknown tool 'nope'; tools/list shows the tools this server offers")


def test_an_unknown_tool_name_is_quoted_and_escaped_as_other_client_names_are():
    # "status " read "unknown tool: status  (did you mean status?)"; a newline or a
    # right-to-left override went into the message as the client sent it.
    server = McpServer(resolve_toolsets(["session"]))
    assert call(server, "status ", {})["error"]["message"] == (
        "unknown tool 'status ' (did you mean status?); tools/list shows the tools this server offers")
    assert call(server, "a\nb\u202ec", {})["error"]["message"] == (
        "unknown tool 'a\\nb\\u202ec'; tools/list shows the tools this server offers")


def test_a_core_tool_the_servers_toolsets_leave_out_is_named_as_such_not_as_unknown():
    response = call(McpServer(resolve_toolsets(["browsing", "search"])), "status", {})
    assert response["error"] == {
        "code": -32602, "data": {"kind": "notFound"},
        "message": "unknown tool 'status': it is in the session toolset, which this server does "
                   "not load (GS_MCP_TOOLSETS); tools/list shows the tools it offers"}


@pytest.mark.parametrize("kind", sorted(ERROR_KINDS))
def test_tool_error_kinds_are_carried(kind):
    result = call(McpServer([ReaderToolset]), "fail_kind", {"kind": kind})["result"]
    assert result["isError"] is True
    assert result["structuredContent"]["error"] == {"kind": kind, "message": f"failed as {kind}"}
    assert result["content"] == [{"type": "text", "text": f"failed as {kind}"}]


def test_handler_exception_is_kind_other_with_class_and_message():
    result = call(McpServer([ReaderToolset]), "crash", {})["result"]
    assert result["isError"] is True
    assert result["structuredContent"]["error"]["kind"] == "other"
    assert result["content"][0]["text"] == "KeyError: 'missing'"


class LoudToolset(Toolset):
    name = "loud"
    tool_names = ("shout",)
    read_only_safe = frozenset(tool_names)

    def register(self, registry):
        registry.add(Tool("shout", "shout", object_schema(), self.shout))

    def shout(self, arguments):
        raise ValueError("first line\n" + "x" * 1_000_000)


def test_an_error_message_is_whole_in_the_text_and_only_its_start_repeated_in_structured_content():
    # A 1 MB message (a traceback of the user's code) went whole into both.
    result = call(McpServer([LoudToolset]), "shout", {})["result"]
    message = "ValueError: first line\n" + "x" * 1_000_000
    assert result["content"] == [{"type": "text", "text": message}]
    said = result["structuredContent"]["error"]
    assert said["kind"] == "other" and said["message"] == repeated(message, "the message")
    assert said["message"] == (message[:REPEAT_CAP] + "\n[... %s more characters of the message cut: a repeat "
                               "of the answer's text keeps the first 10,000]\n" % f"{len(message) - REPEAT_CAP:,}")


def test_a_repeat_of_a_text_cut_before_counts_what_the_text_it_was_cut_from_has_past_it():
    cut = "x" * 1_000_000 + "\n[... 2,000,000 more characters of the traceback cut: execute_code keeps the first 1,000,000]\n"
    assert repeated(cut, "the traceback", 3_000_000) == "x" * REPEAT_CAP + (
        "\n[... 2,990,000 more characters of the traceback cut: a repeat of the answer's text keeps the first 10,000]\n")


class CutToolset(Toolset):
    name = "cut"
    tool_names = ("cut",)
    read_only_safe = frozenset(tool_names)

    def register(self, registry):
        registry.add(Tool("cut", "cut", object_schema(), self.cut))

    def cut(self, arguments):
        raise ToolError("other", "y" * 20_000 + "\n[... 80,000 more characters of it cut: it keeps the first 20,000]\n",
                        uncut_length=100_000)


def test_an_error_message_holding_a_cut_text_is_repeated_counting_its_uncut_length():
    said = call(McpServer([CutToolset]), "cut", {})["result"]["structuredContent"]["error"]["message"]
    assert said == "y" * REPEAT_CAP + ("\n[... 90,000 more characters of the message cut: a repeat of the answer's "
                                       "text keeps the first 10,000]\n")


def test_a_repeat_of_a_text_within_its_cap_is_the_text_itself():
    assert repeated("x" * REPEAT_CAP, "the message") == "x" * REPEAT_CAP


def test_handler_answer_of_wrong_type_is_kind_other():
    result = call(McpServer([ReaderToolset]), "answer_badly", {})["result"]
    assert result["structuredContent"]["error"]["kind"] == "other"
    assert "int" in result["content"][0]["text"]


def test_progress_is_sent_only_with_a_token():
    server = McpServer([ReaderToolset])
    sent = []
    message = request("tools/call", {"name": "progress_twice", "arguments": {},
                                     "_meta": {"progressToken": "tok"}})
    response = server.handle(message, sent.append)
    assert response["result"]["content"][0]["text"] == "done"
    assert sent == [
        {"jsonrpc": "2.0", "method": "notifications/progress",
         "params": {"progressToken": "tok", "progress": 1, "total": 2, "message": "half"}},
        {"jsonrpc": "2.0", "method": "notifications/progress",
         "params": {"progressToken": "tok", "progress": 2}},
    ]
    sent.clear()
    server.handle(request("tools/call", {"name": "progress_twice", "arguments": {}}), sent.append)
    assert sent == []
    assert server.context.progress_token is None   # idle again after the call


class ThreadsToolset(Toolset):
    """`leave` starts a thread that outlives its call; `report`, a later call, lets it
    report, then reports itself and from a thread it starts."""
    name = "threads"
    tool_names = ("leave", "report")

    def __init__(self, server=None):
        super().__init__(server)
        self.go, self.gone = threading.Event(), threading.Event()
        self.said = {}   # who called progress() -> what it answered

    def register(self, registry):
        registry.add(Tool("leave", "leave", object_schema({"raw": bool_prop("raw")}), self.leave))
        registry.add(Tool("report", "report", object_schema(), self.report))

    def say(self, who, value):
        self.said[who] = self.progress(value, message=who)

    def leave(self, arguments):
        def left():
            self.go.wait()
            self.say("left", 1)
            self.gone.set()
        if arguments.get("raw"):   # a thread threading does not know of
            _thread.start_new_thread(left, ())
        else:
            threading.Thread(target=left, daemon=True).start()
        return "left"

    def report(self, arguments):
        self.go.set()
        assert self.gone.wait(20)
        self.say("call", 2)
        # likely to take the ident of the left thread, which has ended (or is ending)
        started = threading.Thread(target=self.say, args=("started", 3))
        started.start()
        started.join()
        return "reported"


def leave_then_report(leave_arguments=None):
    server = McpServer([ThreadsToolset])
    toolset, sent = server.toolsets[0], []
    assert call(server, "leave", leave_arguments or {})["result"]["content"][0]["text"] == "left"
    response = server.handle(request("tools/call", {"name": "report", "arguments": {},
                                                    "_meta": {"progressToken": "later"}}), sent.append)
    assert response["result"]["content"][0]["text"] == "reported"
    return toolset.said, [(n["params"]["progressToken"], n["params"]["message"]) for n in sent]


@pytest.mark.parametrize("proc", [True, False], ids=["proc", "no-proc"])
def test_progress_from_a_thread_left_by_an_earlier_call_is_not_sent(proc, monkeypatch):
    if not proc:   # where /proc cannot be read, the threads Python knows of
        listdir = os.listdir

        def no_proc(path="."):
            if str(path).startswith("/proc"):
                raise FileNotFoundError(path)
            return listdir(path)
        monkeypatch.setattr(os, "listdir", no_proc)
    said, sent = leave_then_report()
    assert said == {"left": False, "call": True, "started": True}
    assert sent == [("later", "call"), ("later", "started")]


def test_progress_from_a_raw_thread_left_by_an_earlier_call_is_not_sent():
    said, sent = leave_then_report({"raw": True})
    assert said == {"left": False, "call": True, "started": True}
    assert sent == [("later", "call"), ("later", "started")]


def test_a_call_without_a_token_does_not_look_for_threads(monkeypatch):
    listdir, looked = os.listdir, []

    def watched(path="."):
        looked.append(path)
        return listdir(path)
    monkeypatch.setattr(os, "listdir", watched)
    server = McpServer([ReaderToolset])
    assert call(server, "progress_twice", {})["result"]["content"][0]["text"] == "done"
    assert "/proc/self/task" not in looked
    server.handle(request("tools/call", {"name": "progress_twice", "arguments": {},
                                         "_meta": {"progressToken": 1}}), [].append)
    assert "/proc/self/task" in looked


@pytest.mark.parametrize("meta", [{"progressToken": True}, {"progressToken": {"t": 1}},
                                  {"progressToken": [1]}, "tok", ["tok"]])
def test_a_malformed_meta_or_progress_token_is_invalid_params_and_nothing_runs(meta):
    """The token is echoed in every notifications/progress: a wrong type is refused up
    front (the request fails CallToolRequest's schema), not sent back malformed."""
    sent = []
    response = McpServer([ReaderToolset]).handle(
        request("tools/call", {"name": "progress_twice", "arguments": {}, "_meta": meta}, id=9), sent.append)
    assert response["id"] == 9 and response["error"]["code"] == -32602, response
    assert "progressToken" in response["error"]["message"] and sent == []


@pytest.mark.parametrize("token", ["", 0, -3, 1.5])
def test_any_string_or_number_is_a_progress_token(token):
    sent = []
    McpServer([ReaderToolset]).handle(request("tools/call", {
        "name": "progress_twice", "arguments": {}, "_meta": {"progressToken": token}}), sent.append)
    assert [n["params"]["progressToken"] for n in sent] == [token, token]


def test_progress_refuses_non_numbers_even_without_a_token():
    context = McpServer().context
    for bad in ("1", True, None):
        with pytest.raises(TypeError, match="numbers"):
            context.progress(bad)
    with pytest.raises(TypeError):
        context.progress(1, total="2")


@pytest.mark.parametrize("raised", [SystemExit(3), GeneratorExit(), KeyboardInterrupt(),
                                    type("Custom", (BaseException,), {})()])
def test_a_handler_raising_a_base_exception_answers_kind_other(raised):
    class Exiting(Toolset):
        name = "exiting"
        tool_names = ("leave",)

        def register(self, registry):
            registry.add(Tool("leave", "leave", object_schema({"raw": bool_prop("raw")}), self.leave))

        def leave(self, arguments):
            raise raised

    result = call(McpServer([Exiting]), "leave", {})["result"]
    assert result["isError"] is True and result["structuredContent"]["error"]["kind"] == "other"
    assert result["content"][0]["text"].startswith(type(raised).__name__)


def test_progress_refuses_values_json_cannot_carry():
    context = McpServer().context
    for bad in (float("nan"), float("inf"), -float("inf")):
        with pytest.raises(ValueError, match="finite"):
            context.progress(bad)
        with pytest.raises(ValueError, match="finite"):
            context.progress(1, total=bad)
    context.progress(10 ** 400)   # a big int is JSON all the same


def test_break_exceptions_pass_through_the_dispatcher():
    class Breaking(Toolset):
        name = "breaking"
        tool_names = ("stop",)

        def register(self, registry):
            registry.add(Tool("stop", "stop", object_schema(), self.stop))

        def stop(self, arguments):
            raise arguments_break.pop()

    arguments_break = [HardBreak("hard break"), SoftBreak("soft break")]
    server = McpServer([Breaking])
    with pytest.raises(SoftBreak):
        call(server, "stop", {})
    with pytest.raises(HardBreak):
        call(server, "stop", {})


@pytest.mark.parametrize("after_break, answer", [
    ("returns", {"isError": False, "text": "carried on"}),
    ("exits", {"isError": True, "text": "SystemExit: 130"}),
    ("tool_error", {"isError": True, "text": "wrapped what it caught"}),
])
def test_a_call_a_soft_break_landed_in_ends_with_the_break_whatever_the_code_made_of_it(
        after_break, answer):
    # The worker's soft-break handler marks the call; code that caught the KeyboardInterrupt
    # and went on must not turn the deadline's break into an answer. Unmarked, the same
    # code answers as it would.
    def handler(arguments):
        if arguments["landed"]:
            mark_soft_break()
        if after_break == "exits":
            raise SystemExit(130)
        if after_break == "tool_error":
            raise ToolError("other", "wrapped what it caught")
        return "carried on"

    class Catching(Toolset):
        name = "catching"
        tool_names = ("catch",)

        def register(self, registry):
            registry.add(Tool("catch", "catch", object_schema({"landed": bool_prop("l")}, ["landed"]),
                              handler))

    server = McpServer([Catching])
    try:
        with pytest.raises(SoftBreak):
            call(server, "catch", {"landed": True})
    finally:
        mark_soft_break(False)
    result = call(server, "catch", {"landed": False})["result"]
    assert {"isError": result.get("isError", False), "text": result["content"][0]["text"]} == answer


def refused_with(message):
    """The result of a plugin tool raising ToolError("refused", message)."""
    def handler(arguments):
        raise ToolError("refused", message)

    class Plugin(Toolset):
        name = "plugin"
        tool_names = ("fail",)

        def register(self, registry):
            registry.add(Tool("fail", "fail", object_schema(), handler))

    return call(McpServer([Plugin]), "fail", {})["result"]


@pytest.mark.parametrize("message, text", [(42, "42"), (ValueError("bad label"), "bad label")])
def test_a_tool_error_whose_message_is_no_string_answers_its_text(message, text):
    # A plugin's ToolError(kind, 42): error_result took len() of it, and the call failed -32603.
    result = refused_with(message)
    assert result["isError"] and result["content"][0]["text"] == text
    assert result["structuredContent"]["error"] == {"kind": "refused", "message": text}


class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("no text")


def test_a_tool_error_whose_message_cannot_be_shown_answers_a_tool_error_naming_its_type():
    # Its __str__ raised in error_result: the call failed -32603, the tool's error lost.
    result = refused_with(Unprintable())
    text = "the tool's error message could not be shown: Unprintable: <exception str() failed>"
    assert result["isError"] and result["content"][0]["text"] == text
    assert result["structuredContent"]["error"] == {"kind": "refused", "message": text}


class NamedOddly(type):
    @property
    def __name__(cls):
        raise RuntimeError("no name")


class Nameless(Unprintable, metaclass=NamedOddly):
    """An exception whose class's name, as its metaclass gives it, raises; its text too."""


class Surrogate(type):
    @property
    def __name__(cls):
        return "bad\udcff"


class SurrogateNamed(Unprintable, metaclass=Surrogate):
    """One whose metaclass names it with what UTF-8 cannot carry."""


def test_a_plugin_tool_answering_a_value_of_an_oddly_named_class_is_told_naming_it_as_python_made_it():
    # Its name, asked of the metaclass, raised instead: an internal error, the answer lost.
    class Odd(metaclass=NamedOddly):
        pass

    class Plugin(Toolset):
        name = "plugin"
        tool_names = ("answer_oddly",)

        def register(self, registry):
            registry.add(Tool("answer_oddly", "odd", object_schema(), lambda a: Odd()))

    result = call(McpServer([Plugin]), "answer_oddly", {})["result"]
    assert result["structuredContent"]["error"] == {
        "kind": "other", "message": "tool answered Odd, not str or {'text': ...}"}


# Classes, named by ids: pytest's repr of one made, and its id of one, ask its name.
@pytest.mark.parametrize("odd, name", [(Nameless, "Nameless"), (SurrogateNamed, "SurrogateNamed")],
                         ids=["raising", "surrogate"])
def test_a_tool_error_whose_messages_class_is_named_oddly_names_the_class_as_python_made_it(odd, name):
    # raised() asked the metaclass for the class's name: one raising failed the call -32603,
    # the tool's error lost; a lone surrogate went into the answer.
    result = refused_with(odd())
    text = f"the tool's error message could not be shown: {name}: <exception str() failed>"
    assert result["isError"] and result["content"][0]["text"] == text

# -- toolset declarations are checked at build -------------------------------

def test_tool_names_must_match_what_register_adds():
    class Liar(ReaderToolset):
        tool_names = ("peek",)
        read_only_safe = frozenset({"peek"})

    with pytest.raises(ValueError, match="tool_names"):
        McpServer([Liar])


def test_a_plugin_toolset_of_an_oddly_named_class_misdeclared_is_refused_naming_it_as_python_made_it():
    # Its name, asked of the metaclass, raised instead of the refusal saying what is wrong.
    class Liar(ReaderToolset, metaclass=NamedOddly):
        tool_names = ("peek",)
        read_only_safe = frozenset({"peek"})

    with pytest.raises(ValueError, match=r"^Liar: tool_names \['peek'\] != registered"):
        McpServer([Liar])


def test_a_toolset_cannot_vouch_for_a_tool_it_does_not_provide():
    class Voucher(WriterToolset):
        read_only_safe = frozenset({"write", "someone_elses"})

    with pytest.raises(ValueError, match="someone_elses"):
        McpServer([Voucher])


def test_two_toolsets_cannot_provide_one_tool():
    class Copy(WriterToolset):
        name = "copy"

    with pytest.raises(ValueError, match="two toolsets"):
        McpServer([WriterToolset, Copy])


# -- annotations --------------------------------------------------------------

def test_annotations_come_from_the_declarations():
    tools = {t["name"]: t["annotations"] for t in
             McpServer([ReaderToolset, WriterToolset]).handle(request("tools/list"))["result"]["tools"]}
    assert tools["peek"] == {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True,
                             "openWorldHint": False}
    assert tools["erase"] == {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": False,
                              "openWorldHint": False}
    assert tools["write"]["destructiveHint"] is False and tools["write"]["readOnlyHint"] is False


# -- read-only ----------------------------------------------------------------

def test_read_only_build_drops_an_all_unsafe_toolset_whole_and_filters_a_mixed_one():
    server = McpServer([ReaderToolset, WriterToolset, MixedToolset], read_only=True)
    assert tool_names(server) == sorted(ReaderToolset.tool_names + ("look",))
    assert [type(t) for t in server.toolsets] == [ReaderToolset, MixedToolset]
    assert "save" not in server.registry and "write" not in server.registry


@pytest.mark.parametrize("name", ["write", "erase", "save"])
def test_calling_a_gated_tool_is_method_not_found_kind_read_only(name):
    response = call(McpServer([ReaderToolset, WriterToolset, MixedToolset], read_only=True), name, {})
    assert response["error"]["code"] == -32601
    assert response["error"]["data"] == {"kind": "readOnly"}


def test_a_tool_never_loaded_is_still_not_found_in_read_only():
    response = call(McpServer([MixedToolset], read_only=True), "erase", {})
    assert response["error"]["code"] == -32602
    assert response["error"]["data"] == {"kind": "notFound"}


def test_read_only_set_after_build_still_hides_and_refuses():
    server = McpServer([MixedToolset])
    assert call(server, "save", {})["result"]["content"][0]["text"] == "saved"
    server.read_only = True
    assert tool_names(server) == ["look"]
    assert call(server, "save", {})["error"]["data"] == {"kind": "readOnly"}
    assert call(server, "look", {})["result"]["content"][0]["text"] == "looked"


# -- identity -----------------------------------------------------------------

def server_info(server):
    return server.handle(request("initialize", {}))["result"]["serverInfo"]


class NamedServer(McpServer):
    default_server_name = "acme-db-mcp"
    default_server_version = "2.5.0"
    default_server_title = "Acme DB"


class LockedServer(McpServer):
    def server_name(self):
        return "locked-name"


def test_identity_defaults_omit_the_title():
    assert server_info(McpServer()) == {"name": "gsmcpd", "version": gsmcpd.__version__}


def test_empty_configured_title_is_omitted_not_sent_empty():
    assert "title" not in server_info(McpServer(server_title=""))


def test_config_sets_name_version_and_title():
    info = server_info(McpServer(server_name="acme", server_version="9.1", server_title="Acme - sandbox"))
    assert info == {"name": "acme", "version": "9.1", "title": "Acme - sandbox"}


def test_class_side_defaults_name_a_product_and_config_relabels_it():
    assert server_info(NamedServer()) == {"name": "acme-db-mcp", "version": "2.5.0", "title": "Acme DB"}
    assert server_info(NamedServer(server_name="relabelled", server_title="box 2")) == {
        "name": "relabelled", "version": "2.5.0", "title": "box 2"}


def test_instance_side_override_wins_over_config():
    assert server_info(LockedServer(server_name="from-config"))["name"] == "locked-name"


# -- building from a prepare frame ---------------------------------------------

def test_worker_class_resolution():
    assert resolve_worker_class(None) is McpServer
    assert resolve_worker_class(f"{__name__}:NamedServer") is NamedServer
    for spec, fragment in [("no_such_module_xyz:Server", "cannot import"),
                           (f"{__name__}:Missing", "has no 'Missing'"),
                           (f"{__name__}:ReaderToolset", "not an McpServer subclass"),
                           ("NoColon", "expected 'module:Class'")]:
        with pytest.raises(ValueError, match=fragment):
            resolve_worker_class(spec)


def test_build_server_applies_class_toolsets_read_only_and_identity():
    session = {"session_id": "s1", "user": "u", "read_only": True,
               "toolsets": ["bench", f"{__name__}:MixedToolset", f"{__name__}:WriterToolset"],
               "worker_class": f"{__name__}:NamedServer", "server_name": None,
               "server_version": None, "server_title": "lab box", "image": None, "account": None}
    server = build_server(session)
    assert type(server) is NamedServer
    assert server.session_info["session_id"] == "s1"
    assert tool_names(server) == ["echo", "look"]
    assert server_info(server) == {"name": "acme-db-mcp", "version": "2.5.0", "title": "lab box"}


def test_kernel_guard_is_fail_closed_without_a_view():
    server = McpServer([WriterToolset])
    with pytest.raises(ToolError) as caught:
        server.toolsets[0].assert_mutable(object, "object")
    assert caught.value.kind == "refused"
    with pytest.raises(ToolError):
        WriterToolset().assert_mutable(object, "object")


class KeeperToolset(Toolset):
    """`keep` starts a thread that keeps the call's context and reports through it
    once the call is answered."""
    name = "keeper"
    tool_names = ("keep",)

    def __init__(self, server=None):
        super().__init__(server)
        self.go, self.done = threading.Event(), threading.Event()
        self.said = []

    def register(self, registry):
        registry.add(Tool("keep", "keep", object_schema(), self.keep))

    def keep(self, arguments):
        context = self.server.context

        def later():
            self.go.wait()
            self.said.append(context.progress(5, message="after"))
            self.done.set()
        threading.Thread(target=later, daemon=True).start()
        self.said.append(context.progress(1, message="during"))
        return "kept"


def test_a_context_kept_past_its_call_sends_nothing():
    server = McpServer([KeeperToolset])
    toolset, sent = server.toolsets[0], []
    response = server.handle(request("tools/call", {"name": "keep", "arguments": {},
                                                    "_meta": {"progressToken": "t"}}), sent.append)
    assert response["result"]["content"][0]["text"] == "kept"
    toolset.go.set()
    assert toolset.done.wait(20)
    assert toolset.said == [True, False]
    assert [n["params"]["message"] for n in sent] == ["during"]


LOWERED = STARTING_RECURSION_LIMIT - 1   # any lower one: pytest runs some 40 frames deep


@pytest.mark.parametrize("limit, error, noted", [
    (LOWERED, RecursionError("maximum recursion depth exceeded"), True),
    (STARTING_RECURSION_LIMIT, RecursionError("maximum recursion depth exceeded"), False),  # the code's own
    (STARTING_RECURSION_LIMIT * 10, RecursionError("maximum recursion depth exceeded"), False),
    (LOWERED, ValueError("x"), False),
])
def test_a_recursion_error_under_a_limit_the_code_lowered_says_so(limit, error, noted):
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(limit)
    try:
        note = recursion_limit_note(error)
    finally:
        sys.setrecursionlimit(before)
    expected = RECURSION_LIMIT_NOTE % (LOWERED, STARTING_RECURSION_LIMIT, STARTING_RECURSION_LIMIT)
    assert note == (expected if noted else None)


class TooDeepToValidate(Tool):
    """A tool whose argument check meets the recursion limit, as under one the session's
    code lowered below the frames the server's own dispatch needs."""

    def validate(self, arguments):
        raise RecursionError("maximum recursion depth exceeded")


def test_a_recursion_error_checking_a_tools_arguments_is_answered_with_the_note():
    # It escaped call_tool, and the worker's last-resort handler, logging it under the
    # same limit, raised again: the worker died and the client was told its code exited.
    tool = TooDeepToValidate("deep", "deep", object_schema(), lambda a: "ran")
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(LOWERED)
    try:
        result = McpServer([ReaderToolset]).call_tool(tool, {})
    finally:
        sys.setrecursionlimit(before)
    assert result["isError"] is True and result["structuredContent"]["error"]["kind"] == "other"
    assert result["content"][0]["text"] == "RecursionError: maximum recursion depth exceeded\n" + (
        RECURSION_LIMIT_NOTE % (LOWERED, STARTING_RECURSION_LIMIT, STARTING_RECURSION_LIMIT))
