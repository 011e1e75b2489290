"""Time the image tools on a large generated image, as a client calls them over HTTP.

    python -m bench.large_image                     # 300 modules x 20 classes x 10 methods
    python -m bench.large_image --modules 1000 --methods 20 --big-lines 20000
    python -m bench.large_image --keep /tmp/big     # leave the image (and state) there
    python -m bench.large_image --changes --against /tmp/old-checkout   # see large_changes.py

It writes an image (`big/m0000.py` ... plus one `big/huge.py` of some --big-lines lines
and a `big/test_big.py` TestCase), starts `python -m gsmcpd serve` on it with this
checkout first on the path, and times each operation --repeats times (median and max,
milliseconds), the answer's size in bytes, and the worker's PSS. Nothing is asserted:
tests/test_bench_smoke.py runs it once on a tiny image.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PROTOCOL = "2025-11-25"


def write_image(root: Path, modules: int, classes: int, methods: int, big_lines: int) -> None:
    package = root / "big"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    for m in range(modules):
        (package / f"m{m:04d}.py").write_text(_module_text(m, classes, methods))
    (package / "huge.py").write_text(_huge_text(big_lines))
    (package / "test_big.py").write_text(
        "import unittest\nfrom big.m0000 import C00\n\n\n"
        "class TestBig(unittest.TestCase):\n"
        + "".join(f"    def test_{i}(self):\n        self.assertEqual(C00().meth0(1), 2)\n\n"
                  for i in range(20)))


def _module_text(m: int, classes: int, methods: int) -> str:
    out = [f'"""Generated module {m}."""\n\nLIMIT = {m}\n\n']
    for c in range(classes):
        base = f"C{c - 1:02d}" if c else "object"
        out.append(f"class C{c:02d}({base}):\n    kind = {c}\n\n")
        for k in range(methods):
            call = f"self.meth{k - 1}(x)" if k else "x + 1"
            out.append(f"    def meth{k}(self, x):\n        return {call}\n\n")
        out.append("\n")
    return "".join(out)


def _huge_text(lines: int) -> str:
    # 20 classes sharing the lines: methods of 3 lines (def, body, blank).
    per_class = max(1, lines // 20 // 3)
    return "".join(f"class Huge{c}:\n" + "".join(
        f"    def op{k}(self, x):\n        return self.op{max(k - 1, 0)}(x) + {k}\n\n"
        for k in range(per_class)) + "\n" for c in range(20))


class Client:
    def __init__(self, port: int):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        self.session = None
        self.ids = iter(range(1, 1 << 30))

    def post(self, message: dict) -> tuple[int, dict, bytes]:
        headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        if self.session:
            headers.update({"MCP-Session-Id": self.session, "MCP-Protocol-Version": PROTOCOL})
        self.conn.request("POST", "/mcp", body=json.dumps(message), headers=headers)
        resp = self.conn.getresponse()
        return resp.status, dict(resp.getheaders()), resp.read()

    def open(self) -> None:
        status, headers, body = self.post({
            "jsonrpc": "2.0", "id": next(self.ids), "method": "initialize",
            "params": {"protocolVersion": PROTOCOL, "capabilities": {},
                       "clientInfo": {"name": "bench.large_image", "version": "0"}}})
        if status != 200:
            raise RuntimeError(f"initialize answered {status}: {body[:300]!r}")
        self.session = {k.lower(): v for k, v in headers.items()}["mcp-session-id"]
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def tool(self, name: str, /, **arguments) -> tuple[dict, int]:
        status, _, body = self.post({"jsonrpc": "2.0", "id": next(self.ids), "method": "tools/call",
                                     "params": {"name": name, "arguments": arguments}})
        reply = json.loads(body) if body[:1] == b"{" else json.loads(body.split(b"data:", 1)[1])
        if status != 200 or "result" not in reply or reply["result"].get("isError"):
            raise RuntimeError(f"{name} answered {status}: {body[:300]!r}")
        return reply["result"], len(body)

    def close(self) -> None:
        self.conn.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_daemon(image: Path, state: Path, port: int, checkout: Path = REPO) -> subprocess.Popen:
    env = dict(os.environ, GS_MCP_IMAGE=str(image), GS_MCP_STATE_DIR=str(state),
               PYTHONPATH=str(checkout), GS_MCP_REQUEST_TIMEOUT="600")
    log = open(state.parent / "daemon.log", "ab")
    proc = subprocess.Popen([sys.executable, "-m", "gsmcpd", "serve", "--port", str(port)],
                            env=env, cwd=str(checkout), stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return proc
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGKILL)
    raise RuntimeError("the daemon did not listen within 30 s; see " + str(state.parent / "daemon.log"))


def worker_pss_kib(pid: str) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def timed(rows: list, label: str, repeats: int, call) -> None:
    """`call()` -> the answer's size in bytes, or None; a tool answering isError raises."""
    times, size = [], 0
    for _ in range(repeats):
        start = time.perf_counter()
        size = call() or 0
        times.append((time.perf_counter() - start) * 1000)
    report(rows, label, times, size)


def report(rows: list, label: str, times: list[float], size: int) -> None:
    rows.append((label, statistics.median(times), max(times), size))
    print(f"{label:<44} {statistics.median(times):10.1f} {max(times):10.1f} {size:>12,}", flush=True)


def run(image: Path, state: Path, repeats: int, big_lines: int, classes: int) -> list:
    port = free_port()
    proc = start_daemon(image, state, port)
    rows: list = []
    try:
        print(f"{'operation':<44} {'p50 ms':>10} {'max ms':>10} {'bytes':>12}")
        opened: list[Client] = []

        def open_session():
            client = Client(port)
            client.open()
            client.tool("status")   # the view is read after the open is answered
            opened.append(client)

        timed(rows, "session open + first call (status)", repeats, open_session)
        for extra in opened[1:]:
            extra.close()
        client = opened[0]
        pid = client.tool("status")[0]["structuredContent"]["pid"]
        middle, above = f"C{classes // 2:02d}", f"C{classes // 2 - 1:02d}"
        calls = [
            ("list_dictionaries", {}),
            ("list_all_classes", {}),
            ("list_classes", {"dictionaryName": "big.m0000"}),
            ("list_dictionary_entries", {"dictionaryName": "big.huge"}),
            ("describe_class", {"className": f"big.m0000.{middle}"}),
            ("list_methods", {"className": f"big.m0000.{middle}"}),
            ("get_class_definition", {"className": f"big.m0000.{middle}"}),
            ("get_class_hierarchy", {"className": "big.m0000.C00"}),
            ("get_method_source", {"className": "big.huge.Huge10", "selector": "op1"}),
            ("find_implementors", {"selector": "meth1"}),
            ("find_senders", {"selector": "meth1"}),
            ("find_references_to", {"name": "big.m0000.C00"}),
            ("search_method_source", {"pattern": "x + 1"}),
            ("list_test_classes", {}),
            ("run_test_class", {"className": "big.test_big.TestBig"}),
        ]
        for name, arguments in calls:
            timed(rows, name, repeats, lambda: client.tool(name, **arguments)[1])
        counter = iter(range(1 << 30))
        timed(rows, f"compile_method in huge.py ({big_lines} lines)", repeats, lambda: client.tool(
            "compile_method", className="big.huge.Huge10",
            source=f"def op1(self, x):\n    return x + {next(counter)}\n")[1])
        timed(rows, f"compile_class_definition ({middle})", repeats, lambda: client.tool(
            "compile_class_definition",
            source=f"class {middle}({above}):\n    kind = {next(counter)}\n", dictionaryName="big.m0000")[1])
        timed(rows, "commit (nothing left to write)", repeats, lambda: client.tool("commit")[1])
        other = Client(port)
        other.open()

        def refresh_after_other_commit():
            other.tool("compile_method", className="big.m0001.C00",
                       source=f"def meth0(self, x):\n    return x + {next(counter)}\n")
            start = time.perf_counter()
            size = client.tool("refresh")[1]
            return size, (time.perf_counter() - start)

        times = []
        for _ in range(repeats):
            size, seconds = refresh_after_other_commit()
            times.append(seconds * 1000)
        report(rows, "refresh after another session's commit", times, size)
        pss = worker_pss_kib(str(pid))
        print(f"worker PSS: {pss} KiB" if pss is not None else "worker PSS: (not readable)")
        rows.append(("worker PSS KiB", pss, pss, 0))
        other.close()
        client.close()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(30)
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.large_image", description=__doc__.split("\n\n")[0])
    parser.add_argument("--modules", type=int, default=300)
    parser.add_argument("--classes", type=int, default=20, help="per module")
    parser.add_argument("--methods", type=int, default=10, help="per class")
    parser.add_argument("--big-lines", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="write the image and state here and leave them")
    parser.add_argument("--changes", action="store_true",
                        help="time only delete_method, describe_class, find_senders and commits of 1 and "
                             "50 modules, for this checkout and each --against one, interleaved")
    parser.add_argument("--against", type=Path, action="append", default=[], metavar="CHECKOUT",
                        help="with --changes: another checkout of gsmcpd to time beside this one")
    args = parser.parse_args(argv)
    if args.modules < 2 or args.classes < 2 or args.methods < 2 or args.big_lines < 120:
        parser.error("the operations need --modules, --classes and --methods of 2 or more, "
                     "--big-lines of 120 or more")
    if args.against and not args.changes:
        parser.error("--against is for --changes")
    root = args.keep or Path(tempfile.mkdtemp(prefix="gsmcpd-large-"))
    try:
        if args.changes:
            from bench import large_changes   # it imports this module
            large_changes.run(args, root)
            return 0
        image, state = root / "image", root / "state"
        if not image.exists():
            write_image(image, args.modules, args.classes, args.methods, args.big_lines)
        state.mkdir(parents=True, exist_ok=True)
        files = list(image.rglob("*.py"))   # classes: the modules', huge.py's 20 and TestBig
        lines = sum(p.read_bytes().count(b"\n") for p in files)
        print(f"image: {len(files)} files, {lines:,} lines, "
              f"{args.modules * args.classes + 21:,} classes; python {sys.version.split()[0]}, "
              f"{os.cpu_count()} cpus")
        run(image, state, args.repeats, args.big_lines, args.classes)
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
