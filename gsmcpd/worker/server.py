"""McpServer: the single-client MCP server inside each worker (sans-IO).

It owns the tool registry built from its toolsets, the dispatcher
(initialize, ping, tools/list, tools/call), read-only gating and the
advertised identity. It takes JSON-RPC messages as dicts and answers dicts;
moving them is main.py's job.
"""

from __future__ import annotations

import importlib
import math
import os
import threading

import gsmcpd
from gsmcpd.image import own
from gsmcpd.protocol import negotiate_version
from gsmcpd.raised import raised, raised_importing
from gsmcpd.wire import jsonrpc
from gsmcpd.wire.jsonrpc import INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND
from gsmcpd.worker import descriptors
from gsmcpd.worker.registry import Tool, ToolRegistry, json_type
from gsmcpd.worker.tool_plans import plan_of
from gsmcpd.worker.toolset import (BREAKS, ToolError, Toolset, did_you_mean, raise_if_break,
                                   recursion_limit_note, repeated)


class CallContext:
    """The call in flight, as a handler sees it through `server.context`."""

    def __init__(self, request_id=None, progress_token=None, notify=None):
        self.request_id = request_id
        self.progress_token = progress_token
        self._notify = notify
        self._last = None              # the last progress value sent for this call
        self._order = threading.Lock()  # checked and sent together, so sent values increase
        # The threads already running as the call starts, this one aside: one left by an
        # earlier call reads `server.context` too, and its progress is not this call's.
        self._earlier = other_threads() if progress_token is not None else frozenset()

    def progress(self, progress, total=None, message=None) -> bool:
        """Send notifications/progress now, if the request carried a progressToken; whether
        it was sent. MCP requires each progress value to be above the last: one that is not
        (a repeat, a step back, a thread that lost a race) is not sent. Only the calling
        thread and threads started during the call report: one already running when the
        call started (left by an earlier call, or a pool made before it) is not sent, nor
        anything once the call is answered (a thread that kept this context)."""
        for value in (progress,) if total is None else (progress, total):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"progress values must be numbers, not {own.NAME(type(value))}")
            if isinstance(value, float) and not math.isfinite(value):   # JSON has no NaN or infinity
                raise ValueError(f"progress values must be finite numbers, not {value!r}")
        if self.progress_token is None:
            return False
        if threading.get_native_id() in self._earlier:
            return False
        params = {"progressToken": self.progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = str(message)
        with self._order:
            notify = self._notify
            if notify is None or self._last is not None and progress <= self._last:
                return False
            self._last = progress
            # A notify that says nothing (None) sent it; False: dropped (a fork's)
            return notify(jsonrpc.notification("notifications/progress", params)) is not False

    def end(self):
        """The call is answered: progress from a thread that kept this context is not
        sent (nor counted as sent), since the client has stopped listening for it. Under
        the lock, so nothing is sent once this returns and the reply can go."""
        with self._order:
            self._notify = None


IDLE_CONTEXT = CallContext()


def other_threads() -> frozenset:
    """The kernel ids of this process's other threads, those `_thread` started
    included. Not Python's idents: a new thread takes the ident of one just ended, so a
    thread started during the call could pass for one that was running before it."""
    try:
        alive = {int(tid) for tid in os.listdir("/proc/self/task")}
    except OSError:   # no /proc: the threads Python knows of
        alive = {thread.native_id for thread in threading.enumerate()}
    alive.discard(threading.get_native_id())
    alive.discard(descriptors.drain_thread())   # the worker's own, made at the first call
    return frozenset(alive)


class McpServer:
    default_server_name = "gsmcpd"
    default_server_version = gsmcpd.__version__
    default_server_title = None

    def __init__(self, toolsets=(), *, read_only: bool = False, session_info: dict | None = None,
                 view=None, server_name: str | None = None, server_version: str | None = None,
                 server_title: str | None = None):
        self.read_only = bool(read_only)     # set before the tools are built: gated ones never register
        self.session_info = dict(session_info or {})
        self.view = view
        self.context = IDLE_CONTEXT
        self._configured_name = server_name
        self._configured_version = server_version
        self._configured_title = server_title
        self.registry = ToolRegistry()
        self.toolsets: list[Toolset] = []
        self.read_only_safe_tools: set[str] = set()
        self.gated_tools: set[str] = set()   # provided but never registered (read-only build)
        for toolset_class in toolsets:
            self._install(toolset_class)

    # -- building --------------------------------------------------------

    def _install(self, toolset_class) -> None:
        toolset = toolset_class(self)
        plan = plan_of(toolset_class)
        kept = False
        if plan is not None:   # a built-in toolset: its tools were made once per process
            for name, description, input_schema, annotations, method, read_only_safe in plan:
                if self._admits(name, read_only_safe):
                    self.registry.add_checked(Tool(name, description, input_schema,
                                                   getattr(toolset, method), dict(annotations)))
                    kept = True
        else:   # registered anew for each server: it may depend on the session
            scratch = ToolRegistry()
            toolset.register(scratch)
            check_declarations(toolset, scratch)
            for tool in scratch.tools():
                if self._admits(tool.name, tool.name in toolset.read_only_safe):
                    tool.annotations = tool_annotations(toolset, tool.name)
                    self.registry.add(tool)
                    kept = True
        if kept:   # a toolset with nothing safe is dropped whole from a read-only server
            self.toolsets.append(toolset)

    def _admits(self, name: str, read_only_safe: bool) -> bool:
        """Whether this server registers the tool: a read-only one only a safe tool
        (fail-closed), naming the others gated. A name two toolsets provide is refused."""
        if name in self.registry or name in self.gated_tools:
            raise ValueError(f"tool {name!r} is provided by two toolsets")
        if read_only_safe:
            self.read_only_safe_tools.add(name)
        elif self.read_only:
            self.gated_tools.add(name)
            return False
        return True

    # -- identity --------------------------------------------------------
    # Config relabels the class-side defaults; a subclass overriding these
    # instance methods instead wins over config (a deliberate lock).

    def server_name(self) -> str:
        return self._configured_name or self.default_server_name

    def server_version(self) -> str:
        return self._configured_version or self.default_server_version

    def server_title(self) -> str | None:
        return self._configured_title or self.default_server_title

    def server_info(self) -> dict:
        info = {"name": self.server_name(), "version": self.server_version()}
        title = self.server_title()
        if title:   # omitted, never null or ""
            info["title"] = title
        return info

    # -- policy hooks ----------------------------------------------------

    def assert_mutable(self, obj, name: str) -> None:
        """The kernel guard, one answer per deployment; subclasses may tighten it.

        Forwards to the view's guard; with no view (or a view without one) it
        refuses: fail-closed.
        """
        guard = getattr(self.view, "assert_mutable", None)
        if guard is None:
            raise ToolError("refused", f"{name}: no image view to check it against, so it is not mutable")
        guard(obj, name)

    def is_visible(self, tool_name: str) -> bool:
        return not self.read_only or tool_name in self.read_only_safe_tools

    # -- dispatch --------------------------------------------------------

    def handle(self, message: dict, notify=None) -> dict | None:
        """Answer one JSON-RPC message; None for notifications and responses.

        `notify(notification_dict)` carries progress for the call in flight.
        Breaks (SoftBreak, HardBreak) are not caught here: the caller answers
        a broken call.
        """
        if not isinstance(message, dict) or "method" not in message:
            if isinstance(message, dict) and ("result" in message or "error" in message):
                return None
            return jsonrpc.error(None, INVALID_REQUEST, "invalid request")
        method = message["method"]
        if "id" not in message:
            return None   # notifications get no response
        request_id = message["id"]
        params = message.get("params")
        if params is None:
            params = {}
        if not isinstance(params, dict):
            return jsonrpc.error(request_id, INVALID_PARAMS, "params must be an object")
        if method == "initialize":
            return jsonrpc.result(request_id, self.initialize_result(params))
        if method == "ping":
            return jsonrpc.result(request_id, {})
        if method == "tools/list":
            if params.get("cursor") is not None:   # one page, no nextCursor: no cursor is ours
                return jsonrpc.error(request_id, INVALID_PARAMS, "invalid cursor: tools/list is "
                                     "never paginated here, so no cursor is valid; omit it")
            return jsonrpc.result(request_id, {"tools": self.list_tools()})
        if method == "tools/call":
            return self._tools_call(request_id, params, notify)
        return jsonrpc.error(request_id, METHOD_NOT_FOUND, f"method not found: {jsonrpc.quoted(method)}")

    def initialize_result(self, params: dict) -> dict:
        return {
            "protocolVersion": negotiate_version(params.get("protocolVersion")),
            "capabilities": {"tools": {}},
            "serverInfo": self.server_info(),
        }

    def list_tools(self) -> list[dict]:
        return [tool.descriptor() for tool in self.registry.tools() if self.is_visible(tool.name)]

    def _tools_call(self, request_id, params: dict, notify) -> dict:
        name = params.get("name")
        if not isinstance(name, str) or not name:
            return jsonrpc.error(request_id, INVALID_PARAMS, "tools/call needs a tool name: params.name "
                                 + _what_name_is(params), {"kind": "invalidParams"})
        arguments = params.get("arguments")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            return jsonrpc.error(request_id, INVALID_PARAMS, "tools/call arguments must be an object, got "
                                 + json_type(arguments), {"kind": "invalidParams"})
        tool = self.registry.get(name)
        if name in self.gated_tools or (tool is not None and not self.is_visible(name)):
            return jsonrpc.error(request_id, METHOD_NOT_FOUND,
                          f"tool {jsonrpc.quoted(name)} is not available in a read-only session", {"kind": "readOnly"})
        if tool is None:
            return jsonrpc.error(request_id, INVALID_PARAMS, self._unknown_tool(name), {"kind": "notFound"})
        meta = params.get("_meta")
        if meta is None:
            meta = {}
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        if not isinstance(meta, dict) or not _valid_progress_token(token):
            # echoed into every notifications/progress: one of the wrong type would make
            # those notifications malformed too
            return jsonrpc.error(request_id, INVALID_PARAMS, "tools/call _meta must be an object and its "
                                 "progressToken a string or a number", {"kind": "invalidParams"})
        return jsonrpc.result(request_id, self.call_tool(tool, arguments,
                                                  CallContext(request_id, token, notify)))

    def _unknown_tool(self, name: str) -> str:
        """Why no tool of that name runs here, and where to look: a core tool this server's
        toolsets leave out is not a typo, and a typo usually has a tool it was meant for."""
        from gsmcpd.worker.toolsets import core_toolset_of   # the toolsets import this module
        # Quoted, as every name a client gave is: `status ` shows its space, a newline or a
        # right-to-left mark is escaped, not echoed into the client's text.
        message = f"unknown tool {jsonrpc.quoted(name)}"
        toolset = core_toolset_of(name)
        if toolset is not None:
            return (f"{message}: it is in the {toolset} toolset, which this server does not "
                    "load (GS_MCP_TOOLSETS); tools/list shows the tools it offers")
        offered = [tool.name for tool in self.registry.tools() if self.is_visible(tool.name)]
        return message + did_you_mean(name, offered) + "; tools/list shows the tools this server offers"

    def call_tool(self, tool, arguments: dict, context: CallContext | None = None) -> dict:
        """Validate and run one tool; answer a CallToolResult (errors as isError)."""
        try:
            tool.validate(arguments)
        except ToolError as error:
            return error_result(error.kind, error.message, error.details, error.uncut_length)
        except RecursionError as error:   # a limit the session's code lowered: an answer, not a dead worker
            return _unexpected_error_result(error)
        self.context = context or CallContext()
        # A soft break that landed ends the call as a break, whatever the user's code made
        # of it (caught it and exited, or returned): the deadline or cancel still holds.
        try:
            for toolset in self.toolsets:
                toolset.call_starting()
            outcome = tool.handler(arguments)
            raise_if_break()
            result = success_result(outcome)
        except ToolError as error:
            raise_if_break(error)
            result = error_result(error.kind, error.message, error.details, error.uncut_length)
        except BREAKS:
            raise   # its answer is the break's, which tells the ties its re-imports dropped (main)
        except BaseException as error:   # a handler bug or the user's SystemExit, GeneratorExit,
            # own KeyboardInterrupt...: an answer, not a dead worker
            raise_if_break(error)
            result = _unexpected_error_result(error)
        finally:
            self.context = IDLE_CONTEXT
            if context is not None:
                context.end()
        # Told by an error's answer too: a call failing after its re-import (a mutation whose
        # commit conflicts) leaves the session with the new classes all the same.
        if getattr(self.view, "kernel_ties", None) is None:
            return result
        return with_kernel_ties(result, self.view.lost_kernel_ties())


def _unexpected_error_result(error: BaseException) -> dict:
    """The "other" error a tool call that raised something no tool means to answers: its
    type and message, and why a RecursionError may have come (see recursion_limit_note)."""
    note = recursion_limit_note(error)
    line = raised(error)
    return error_result("other", line if note is None else f"{line}\n{note}")


def _what_name_is(params: dict) -> str:
    """What is wrong with a tools/call's params.name, which is not a non-empty string."""
    if "name" not in params:
        return "is missing"
    name = params["name"]
    return "is empty" if name == "" else "must be a string, got " + json_type(name)


def _valid_progress_token(token) -> bool:
    """MCP: a string or a number; None (absent) means the client wants no progress."""
    return token is None or (isinstance(token, (str, int, float)) and not isinstance(token, bool))


def tool_annotations(toolset: Toolset, tool_name: str) -> dict:
    """MCP annotations, derived from the toolset's declarations (never set by hand).
    A destructive tool is not read-only whatever gating allows it (abort discards the
    session's own changes, and stays available to read-only sessions): the spec reads
    destructiveHint only when readOnlyHint is false."""
    return {
        "readOnlyHint": tool_name in toolset.read_only_safe and tool_name not in toolset.destructive,
        "destructiveHint": tool_name in toolset.destructive,
        "idempotentHint": tool_name in toolset.idempotent,
        "openWorldHint": False,
    }


def check_declarations(toolset: Toolset, registered: ToolRegistry) -> None:
    label = own.NAME(type(toolset))
    declared = set(toolset.tool_names)
    if declared != set(registered.names()):
        raise ValueError(f"{label}: tool_names {sorted(declared)} != registered {registered.names()}")
    for attribute in ("read_only_safe", "destructive", "idempotent"):
        strays = set(getattr(toolset, attribute)) - declared
        if strays:
            raise ValueError(f"{label}.{attribute} names tools it does not provide: {sorted(strays)}")


def with_kernel_ties(result: dict, ties: dict[str, list[str]]) -> dict:
    """The CallToolResult (a success's or an error's), with a note on the kernel's classes
    tied to an image module's old classes that the call's re-import of it dropped
    (gsmcpd.image.kernel_ties), and `kernelTies` beside what its structuredContent holds."""
    if not ties:
        return result
    note = kernel_ties_note(ties)
    told = {**result, "content": [{**result["content"][0], "text": f"{result['content'][0]['text']}\n{note}"},
                                  *result["content"][1:]]}
    if isinstance(result.get("structuredContent"), dict):
        told["structuredContent"] = {**result["structuredContent"], "kernelTies": dict(sorted(ties.items()))}
    return told


def kernel_ties_note(ties: dict[str, list[str]]) -> str:
    """The lines telling `ties` (View.lost_kernel_ties), one a module."""
    return "\n".join(
        f"note: re-importing {module} made its classes anew, but the kernel's modules are not "
        f"re-imported and stay tied to the old ones: {', '.join(tied)}; here isinstance and "
        f"issubclass with the new {module} say False for them, where a new session, importing "
        f"both anew, says True" for module, tied in sorted(ties.items()))


def success_result(outcome) -> dict:
    if isinstance(outcome, str):
        return {"content": [{"type": "text", "text": outcome}]}
    if isinstance(outcome, dict) and isinstance(outcome.get("text"), str):
        result = {"content": [{"type": "text", "text": outcome["text"]}]}
        if outcome.get("structured") is not None:
            result["structuredContent"] = outcome["structured"]
        return result
    raise ToolError("other", f"tool answered {own.NAME(type(outcome))}, not str or {{'text': ...}}")


def error_result(kind: str, message: str, details: dict | None = None, uncut_length: int | None = None) -> dict:
    """The error result: `message` whole in its text, its start in structuredContent (a
    traceback of 1 MB went in both), counting what is past it from `uncut_length`
    (ToolError.uncut_length) when parts of the message were cut before."""
    # A plugin's ToolError(kind, 42), or one given an exception: its text (len() of it raised, -32603).
    if not isinstance(message, str):
        try:
            message = str(message)
        except Exception:   # its own __str__ raising (-32603 too): its type, as raised() says one
            message = f"the tool's error message could not be shown: {raised(message)}"
    return {
        "content": [{"type": "text", "text": message}],
        "structuredContent": {"error": {"kind": kind, "message": repeated(message, "the message", uncut_length),
                                        **(details or {})}},
        "isError": True,
    }


# -- building a server from the prepare frame ---------------------------

def import_spec(spec: str, what: str):
    """Import `module:Attribute`; ValueError with what to fix if it cannot."""
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise ValueError(f"{what} {spec!r}: expected 'module:Class'")
    try:
        module = importlib.import_module(module_name)
    except Exception as error:
        raise ValueError(f"{what} {spec!r}: cannot import module {module_name!r} "
                         f"({raised_importing(error, module_name)})") from error
    try:
        return getattr(module, attribute)
    except AttributeError:
        raise ValueError(f"{what} {spec!r}: module {module_name!r} has no {attribute!r}") from None


def resolve_worker_class(spec: str | None) -> type[McpServer]:
    if not spec:
        return McpServer
    candidate = import_spec(spec, "worker class")
    if not (isinstance(candidate, type) and issubclass(candidate, McpServer)):
        raise ValueError(f"worker class {spec!r} is not an McpServer subclass")
    return candidate


def build_server(session: dict, view=None) -> McpServer:
    """The worker's server for one prepare frame; ValueError says what to fix."""
    from gsmcpd.worker.toolsets import resolve_toolsets   # toolsets import this module

    server_class = resolve_worker_class(session.get("worker_class"))
    toolsets = resolve_toolsets(session.get("toolsets"))
    return server_class(
        toolsets,
        read_only=bool(session.get("read_only")),
        session_info=session,
        view=view,
        server_name=session.get("server_name"),
        server_version=session.get("server_version"),
        server_title=session.get("server_title"),
    )
