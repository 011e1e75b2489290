"""What the forkserver does once, before it forks any worker.

Every worker is a fork of the forkserver, so whatever is imported here is shared
copy-on-write by all of them and costs a session open nothing (the imports were ~100 ms
of it). The built-in toolsets' tools are made here too (tool_plans), for every worker's
server to bind instead of registering them anew. Then a rehearsal: a few sessions run
start to finish on a throwaway image, so the interpreter has specialised the hot code and
filled its caches here, once, instead of in every new worker, where each first write
copies a shared page. Last, the objects are frozen out of the garbage collector: a
worker's full collections never walk the shared heap, so they never copy it page by page
into each worker's private memory.
"""

import gc
import logging
import socket
import sys
import tempfile
from pathlib import Path

import gsmcpd.auth.usermap  # noqa: F401  (per-user workers switch account at prepare)
import gsmcpd.image.view  # noqa: F401
import gsmcpd.worker.main  # noqa: F401
import gsmcpd.worker.server  # noqa: F401
from gsmcpd.image.default import ensure_default_image
from gsmcpd.wire import frames, jsonrpc
from gsmcpd.worker.tool_plans import plan_of
from gsmcpd.worker.toolsets import CORE_TOOLSETS, resolve_toolsets

REHEARSALS = 40  # enough calls for CPython to specialise the code they run
_TOOLSETS = list(CORE_TOOLSETS) + ["bench"]

resolve_toolsets(_TOOLSETS)  # imports every core toolset module


def plan_tools():
    """Make each built-in toolset's tools once, for every worker (see tool_plans); a
    rehearsal makes them too, but one that fails before its first build would not."""
    for toolset_class in resolve_toolsets(_TOOLSETS):
        plan_of(toolset_class)


def rehearse(rounds=REHEARSALS):
    """Prepare a worker loop, initialize, list tools, ping and echo, `rounds` times.

    Everything a session touches is undone after each round (the view's import hook
    and modules, the temporary image), so no worker inherits any of it: each view's close()
    takes its hooks and modules, and the import hooks are put back as they were even when a
    round fails before its view is closed."""
    meta_path, path_hooks = list(sys.meta_path), list(sys.path_hooks)
    try:
        # In the daemon's directory, the TMPDIR the router gives its children: one this
        # forkserver, killed mid-rehearsal, leaves is swept with it (tmpdirs.DaemonTmp).
        with tempfile.TemporaryDirectory(prefix="gsmcpd-rehearsal-") as state:
            image = ensure_default_image(Path(state))
            session = {"session_id": "rehearsal", "user": "rehearsal", "read_only": False,
                       "toolsets": _TOOLSETS, "image": str(image)}
            script = [frames.encode({"op": "prepare", "session": session})]
            for seq, (method, params) in enumerate(_CALLS, 1):
                body = jsonrpc.dumps({"jsonrpc": "2.0", "id": seq, "method": method, "params": params})
                script.append(frames.message_frame("call", seq, body))
            script.append(frames.encode({"op": "stop"}))
            script = b"".join(script)
            for _ in range(rounds):
                _play(script)
    finally:
        sys.meta_path[:] = meta_path
        sys.path_hooks[:] = path_hooks
    return rounds


_CALLS = [
    ("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": {"name": "rehearsal", "version": "0"}}),
    ("tools/list", {}),
    ("ping", {}),
    ("tools/call", {"name": "echo", "arguments": {"text": "hello"}}),
]


def _play(script):
    ours, theirs = socket.socketpair()
    try:
        ours.sendall(script)
        loop = gsmcpd.worker.main.WorkerLoop(theirs)
        loop.serve()
        if loop.server is not None and loop.server.view is not None:
            loop.server.view.close()
        theirs.shutdown(socket.SHUT_WR)
        decoder = frames.FrameDecoder()
        replies = []
        while chunk := ours.recv(1 << 16):
            replies += decoder.feed(chunk)
        answered = [r for r in replies if r.get("ok") or "result" in r.get("message", {})]
        if len(answered) != 1 + len(_CALLS):
            raise RuntimeError("the worker rehearsal went wrong: %r" % replies)
    finally:
        ours.close()
        theirs.close()


try:
    plan_tools()
except Exception:  # each worker makes them at its session's open, and says what is wrong
    logging.getLogger("gsmcpd.worker").exception("making the built-in tools failed")
try:
    rehearse()
except Exception:  # a slower first call in each worker, nothing worse
    logging.getLogger("gsmcpd.worker").exception("worker rehearsal failed; workers start cold")
gc.collect()
gc.freeze()
