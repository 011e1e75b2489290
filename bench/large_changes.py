"""`python -m bench.large_image --changes [--against CHECKOUT ...]`: the calls a change
makes costly on a large image (delete_method of a method and of a module function,
describe_class, find_senders, and a commit of 1 and of 50 changed modules), timed for
this checkout and each other one given, interleaved repeat by repeat so that the host's
load falls alike on each; one image copy per checkout, as each commits to its own.

The deletions are timed over HTTP, each after an untimed compile_method of the def it
deletes. The commits are timed in-process (View.commit, as the worker's commit tool
calls it), in a child running that checkout's code: no tool leaves a session with 50
changed modules uncommitted, each mutation commits its own.
"""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench import large_image

# Run with a checkout first on the path: reads "N TAG" lines, changes modules 0..N-1 (a
# comment appended), commits them, and answers each with the commit's milliseconds.
COMMITTER = """
import sys, time, uuid
from gsmcpd.image.view import View
view = View.open(sys.argv[1], user="bench", session_id=uuid.uuid4().hex, install=False)
print("ready", flush=True)
for line in sys.stdin:
    count, tag = line.split()
    for m in range(int(count)):
        name = f"big.m{m:04d}"
        view.set_source(name, view.source(name) + f"# {tag}\\n", live=False)
    start = time.perf_counter()
    view.commit()
    print((time.perf_counter() - start) * 1000, flush=True)
"""


class Checkout:
    """One checkout's daemon (its own image copy) and committer child."""

    def __init__(self, label: str, checkout: Path, root: Path, args):
        self.label, self.checkout = label, checkout
        image, state = root / "image", root / "state"
        large_image.write_image(image, args.modules, args.classes, args.methods, args.big_lines)
        commits = root / "commits"   # the committer's own copy: its commits are not the daemon's
        large_image.write_image(commits, args.modules, args.classes, args.methods, args.big_lines)
        state.mkdir(parents=True)
        port = large_image.free_port()
        self.daemon = large_image.start_daemon(image, state, port, checkout)
        self.client = large_image.Client(port)
        self.client.open()
        self.committer = subprocess.Popen(
            [sys.executable, "-c", COMMITTER, str(commits)], cwd=str(checkout), text=True,
            env=dict(os.environ, PYTHONPATH=str(checkout)), stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        if self.committer.stdout.readline().strip() != "ready":
            raise RuntimeError(f"the committer of {checkout} did not start")

    def commit(self, count: int, tag: str) -> float:
        self.committer.stdin.write(f"{count} {tag}\n")
        self.committer.stdin.flush()
        return float(self.committer.stdout.readline())

    def close(self) -> None:
        self.client.close()
        self.committer.stdin.close()
        self.committer.wait(30)
        os.killpg(self.daemon.pid, signal.SIGTERM)
        self.daemon.wait(30)


def operations(args) -> list[tuple[str, object]]:
    """(label, step): step(checkout, i) -> milliseconds of the one timed call."""
    middle = f"C{args.classes // 2:02d}"

    def http(name, **arguments):
        def step(co, i):
            start = time.perf_counter()
            co.client.tool(name, **arguments)
            return (time.perf_counter() - start) * 1000
        return step

    def delete(class_name, source, selector):
        def step(co, i):
            co.client.tool("compile_method", className=class_name, source=source(i))
            return http("delete_method", className=class_name, selector=selector)(co, i)
        return step

    return [
        (f"describe_class (big.m0000.{middle})", http("describe_class", className=f"big.m0000.{middle}")),
        ("find_senders (meth1)", http("find_senders", selector="meth1")),
        ("delete_method (a method of big.m0001.C00)",
         delete("big.m0001.C00", lambda i: f"def gone(self, x):\n    return x + {i}\n", "gone")),
        ("delete_method (a function of big.m0000)",
         delete("big.m0000", lambda i: f"def gone_fn(x):\n    return x + {i}\n", "gone_fn")),
        ("commit of 1 changed module (View.commit)", lambda co, i: co.commit(1, f"r{i}")),
        (f"commit of {min(50, args.modules)} changed modules (View.commit)",
         lambda co, i: co.commit(min(50, args.modules), f"r{i}")),
    ]


def run(args, root: Path) -> list:
    checkouts = [("this", large_image.REPO)] + [(str(path), path.resolve()) for path in args.against]
    opened: list[Checkout] = []
    rows: list = []
    try:
        for n, (label, path) in enumerate(checkouts):
            opened.append(Checkout(label, path, root / f"checkout{n}", args))
        print(f"{'operation':<44} {'checkout':<24} {'p50 ms':>10} {'max ms':>10}")
        for label, step in operations(args):
            times = {co.label: [] for co in opened}
            step(opened[0], -1)   # warm: the first call loads what the later ones find loaded
            for co in opened[1:]:
                step(co, -1)
            for i in range(args.repeats):
                for co in (opened if i % 2 == 0 else opened[::-1]):   # alternate who goes first
                    times[co.label].append(step(co, i))
            for co in opened:
                median, worst = statistics.median(times[co.label]), max(times[co.label])
                rows.append((label, co.label, median, worst))
                print(f"{label:<44} {co.label[-24:]:<24} {median:10.1f} {worst:10.1f}", flush=True)
    finally:
        for co in opened:
            co.close()
    return rows
