"""Whether a MemoryError was raised where source was being compiled.

Python 3.11's parser overflowing its stack raises a MemoryError that says nothing, as
memory running out does (bytearray past GS_MCP_WORKER_MEMORY). Only the parser's is raised
at a call that compiled source: compile, exec and eval of a string, ast.parse (whose own
frame calls compile), map(eval, ...). Each raises the "compile" audit event from the frame
that called it, at the instruction the MemoryError's traceback then ends at.
"""

from __future__ import annotations

import sys

# The latest call that compiled: its frame's id and code, and the instruction. No frame is
# held (its locals would outlive it); the code guards against a frame's id reused.
_latest: tuple | None = None


def _note_compile(event: str, args: tuple) -> None:
    global _latest
    if event == "compile":
        frame = sys._getframe(1)   # the caller of compile: C functions have no frame
        _latest = (id(frame), frame.f_code, frame.f_lasti)


_watching = False


def watch() -> None:
    """Note each call that compiles from now on, in this process (a worker: audit hooks
    stay for good, and the router, which imports the toolsets to check their names, needs
    none). 3.12's parser names its overflow, and nothing needs this."""
    global _watching
    if not _watching and sys.version_info < (3, 12):
        sys.addaudithook(_note_compile)
        _watching = True


def raised_compiling(error: BaseException) -> bool:
    """Whether `error`'s traceback ends at the call that compiled source last."""
    tb = error.__traceback__
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    frame = tb.tb_frame
    latest = _latest
    return latest is not None and latest[0] == id(frame) and latest[1] is frame.f_code and latest[2] == tb.tb_lasti
