"""The toolset base class, JSON Schema builders and the structured tool error.

A toolset is a pack of tools (one tool family). It registers its tools on a
registry and declares, per tool, what the server may say about it: which are
safe in a read-only session (fail-closed: none by default), which are
destructive, which are idempotent. The server derives read-only gating and the
MCP tool annotations from these declarations, so they are the single source.
"""

from __future__ import annotations

import difflib
import sys

ERROR_KINDS = frozenset({
    "compileError", "refused", "readOnly", "notFound", "invalidParams",
    "conflict", "ambiguous", "other",
})


class ToolError(Exception):
    """A tool failure a client can branch on: `kind` is one of ERROR_KINDS."""

    def __init__(self, kind: str, message: str, details: dict | None = None, uncut_length: int | None = None):
        if kind not in ERROR_KINDS:
            raise ValueError(f"unknown tool error kind {kind!r}")
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.details = details or {}   # more facts for a program, beside kind and message
        # Of a message holding cut texts (a traceback, output), the length it had uncut:
        # structuredContent's repeat of it counts from that (repeated).
        self.uncut_length = uncut_length


# The worker's own (Python's default): the tools' own calls need about that many frames.
STARTING_RECURSION_LIMIT = sys.getrecursionlimit()
RECURSION_LIMIT_NOTE = ("(this session's recursion limit is %d, below the %d it started with: its code, a "
                        "test or execute_code, lowered it with sys.setrecursionlimit, and the tools need "
                        "more; `import sys; sys.setrecursionlimit(%d)` in execute_code sets it back)")


def recursion_limit_note(error: BaseException) -> str | None:
    """Why a RecursionError the session's code did not raise itself may have come: the
    limit it lowered stays so for the session (and unittest's and the tools' own frames
    meet it); None for any other error, or under a limit not lowered."""
    limit = sys.getrecursionlimit()
    if not isinstance(error, RecursionError) or limit >= STARTING_RECURSION_LIMIT:
        return None
    return RECURSION_LIMIT_NOTE % (limit, STARTING_RECURSION_LIMIT, STARTING_RECURSION_LIMIT)


class SoftBreak(KeyboardInterrupt):
    """Raised in the worker's main thread by the router's soft-break signal (a real-time
    one: gsmcpd.wire.break_signals).

    A KeyboardInterrupt, so code written to stop on Ctrl-C stops on it; its own
    class tells it from a KeyboardInterrupt the user's code raises itself (or gets from
    a SIGINT it sent itself), which is an ordinary tool error.
    """


class HardBreak(BaseException):
    """Raised in the worker's main thread by the router's hard-break signal.

    A BaseException outside KeyboardInterrupt, so code that swallows the soft
    break still gets stopped. Code that catches BaseException generically (a
    test runner, say) must re-raise it.
    """


BREAKS = (SoftBreak, HardBreak)   # what a handler catching BaseException must re-raise

# Set by the worker's soft-break handler when the signal lands in a call, cleared as each
# call starts: code can catch the SoftBreak and raise something else (sys.exit(130) in an
# `except KeyboardInterrupt:`) or nothing at all, and it was still the break that ended it.
_soft_break_landed = False


def mark_soft_break(landed: bool = True) -> None:
    global _soft_break_landed
    _soft_break_landed = landed


def raise_if_break(error: BaseException | None = None) -> None:
    """Re-raise `error` if it is a break, and raise SoftBreak if one landed in this
    call whatever the code made of it. A handler catching BaseException calls this
    first; code that returned is checked with no `error`."""
    if isinstance(error, BREAKS):
        raise error
    if _soft_break_landed:
        raise SoftBreak("soft break") from error


def carry_partial(interruption: BaseException, partial: dict, said: str) -> None:
    """Have a break carry what the call did before it: the worker puts `partial` in the
    -32001 error's data and adds "; {said} in the error's data (partial)" to its message,
    so a deadline or cancel does not throw away a long call's work."""
    interruption.partial = partial
    interruption.partial_said = said


def sendable(text: str, what: str, cap: int, keeper: str, cut: int = 0) -> str:
    """`text` cut to `cap` characters, saying so (a frame to the router has a cap), with
    what UTF-8 cannot carry (lone surrogates) shown as escapes: text a user's code
    made can go to the client whatever it holds. `cut`: characters already cut before
    `text` came here (a Capture's count), told in the same note."""
    more = max(0, len(text) - cap) + cut
    if more:
        text = (f"{text[:cap]}\n[... {more:,} more characters of {what} "
                f"cut: {keeper} keeps the first {cap:,}]\n")
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


# Characters of a text the user's code made (an exception's message, a traceback) that an
# answer's structuredContent keeps where it repeats what the answer's text holds whole (up
# to that text's own cap): a 1 MB message was sent whole two or three times in one answer.
REPEAT_CAP = 10_000


def repeated(text: str, what: str, uncut_length: int | None = None) -> str:
    """`text` where an answer repeats what its text holds whole: its first REPEAT_CAP
    characters, saying so (sendable's note) when it is longer. `uncut_length`: of a text
    cut before, its start kept past REPEAT_CAP, the length of the one it was cut from,
    which the note counts from: counted from the cut, a traceback of 3,000,000 characters
    cut to 1,000,000 was said to have 990,0xx more."""
    if len(text) <= REPEAT_CAP:
        return text
    more = (len(text) if uncut_length is None else uncut_length) - REPEAT_CAP
    return sendable(text[:REPEAT_CAP], what, REPEAT_CAP, "a repeat of the answer's text", more)


# Characters of the errors of the user's modules (one import error per failing module) that
# one answer's text holds whole, all told (one error as big as execute_code shows, OUTPUT_CAP,
# fits twice); past it each further error keeps its first PAST_BUDGET_CAP: N modules failing
# with a 1 MB message each made an N MB answer, and past the frame's cap the answer of a
# commit that happened was lost whole.
ERRORS_BUDGET = 2_000_000
PAST_BUDGET_CAP = 1_000


def budgeted(texts: list[str], what: str) -> list[str]:
    """`texts` (in the order an answer gives them) each whole while their sum stays within
    ERRORS_BUDGET, the one that crosses it cut to what is left (PAST_BUDGET_CAP at least),
    each after it to PAST_BUDGET_CAP, saying so (sendable's note)."""
    budget = ErrorsBudget()
    return [budget.tell(text, what)[0] for text in texts]


def repeats_of_budgeted(texts: list[str], what: str) -> list[str]:
    """What structuredContent repeats of `texts` an answer's text tells as budgeted does
    (repeat_of_told of each)."""
    budget = ErrorsBudget()
    return [repeat_of_told(text, *budget.tell(text, what), what) for text in texts]


class ErrorsBudget:
    """ERRORS_BUDGET over the errors one answer tells, in the order it tells them, however
    many parts of it tell some (a mutation's note, then its commit's lines): a budget of
    each part's own let one answer hold several times it."""

    KEEPER = (f"an answer holding over {ERRORS_BUDGET:,} characters of errors (the module's own "
              "import, execute_code `import ...`, shows it whole)")

    def __init__(self):
        self.spent = 0

    def tell(self, text: str, what: str) -> tuple[str, int | None]:
        """(`text` as the answer tells it next, the characters it was cut to or None)."""
        cap = max(PAST_BUDGET_CAP, ERRORS_BUDGET - self.spent)
        told = (text, None) if len(text) <= cap else (sendable(text, what, cap, self.KEEPER), cap)
        self.spent += len(told[0])
        return told


def repeat_of_told(text: str, told: str, cap: int | None, what: str) -> str:
    """What structuredContent repeats of `text`, told (ErrorsBudget.tell) as `told`, cut to
    `cap`: its start (repeated) counting what the whole has past it, not what the budget
    left of it (its cut and note, cut again); one the budget cut to fewer than REPEAT_CAP
    characters as told, its note whole."""
    return told if cap is not None and cap < REPEAT_CAP else repeated(text, what)


class Toolset:
    """Subclass this to add tools. See docs/internals.md, "Worker side"."""

    name: str = ""                                  # the GS_MCP_TOOLSETS name
    tool_names: tuple[str, ...] = ()                # must equal what register() adds
    read_only_safe: frozenset[str] = frozenset()    # fail-closed default
    destructive: frozenset[str] = frozenset()
    idempotent: frozenset[str] = frozenset()

    def __init__(self, server=None):
        self.server = server

    def register(self, registry) -> None:
        """Add one `registry.add(Tool(...))` per tool."""
        raise NotImplementedError

    def call_starting(self) -> None:
        """Run as every tool call starts, whichever toolset's tool it is (after its
        arguments are checked): to look at the session before that call may change it."""

    # -- conveniences for handlers -------------------------------------

    @property
    def view(self):
        return None if self.server is None else self.server.view

    @property
    def context(self):
        return None if self.server is None else self.server.context

    def progress(self, progress, total=None, message=None) -> bool:
        """Report progress for the call in flight; whether it was sent (only if the client
        asked, only a value above the last one sent, and not from a thread already running
        when the call started: see CallContext.progress)."""
        return self.server is not None and self.server.context.progress(progress, total, message)

    def assert_mutable(self, obj, name: str) -> None:
        """The kernel guard: forwards to the server's one policy; no server → refused."""
        if self.server is None:
            raise ToolError("refused", f"{name}: this toolset has no server, so it refuses to mutate")
        self.server.assert_mutable(obj, name)


# -- JSON Schema (2020-12 subset) builders -----------------------------

def did_you_mean(name: str, known) -> str:
    """The hint ` (did you mean A or B?)` naming up to three of `known` close to a mistyped
    `name` (a case-only slip first), or "" when none is."""
    return meant(close_names(name, known))


def close_names(name: str, known) -> list[str]:
    """Up to three of `known` close to a mistyped `name`, a case-only slip first."""
    if len(name) > 100:   # difflib's cost grows with the name: one so long is no typo
        return []
    known = list(dict.fromkeys(known))
    lowered = name.lower()
    close = [item for item in known if item.lower() == lowered and item != name]
    close += [item for item in difflib.get_close_matches(name, known, n=3) if item not in close]
    return close[:3]


def meant(names: list[str]) -> str:
    """` (did you mean A, B or C?)` naming `names`, or "" for none."""
    if not names:
        return ""
    listed = ", ".join(names[:-1]) + " or " + names[-1] if len(names) > 1 else names[0]
    return f" (did you mean {listed}?)"


def object_schema(properties: dict | None = None, required=()) -> dict:
    """A closed object schema: unknown arguments are rejected, `required` is explicit."""
    properties = dict(properties or {})
    missing = [name for name in required if name not in properties]
    if missing:
        raise ValueError(f"required names no property: {missing}")
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


def string_prop(description: str, enum=None, min_length=None) -> dict:
    schema = {"type": "string", "description": description}
    if enum is not None:
        schema["enum"] = list(enum)
    if min_length is not None:   # say in the schema what the tool refuses, so clients can know
        schema["minLength"] = min_length
    return schema


def integer_prop(description: str, minimum=None, maximum=None) -> dict:
    schema = {"type": "integer", "description": description}
    if minimum is not None:   # in the schema, so the arguments' validation refuses less
        schema["minimum"] = minimum
    if maximum is not None:   # and more
        schema["maximum"] = maximum
    return schema


def number_prop(description: str) -> dict:
    return {"type": "number", "description": description}


def bool_prop(description: str) -> dict:
    return {"type": "boolean", "description": description}


def array_prop(items: dict, description: str) -> dict:
    return {"type": "array", "items": items, "description": description}
