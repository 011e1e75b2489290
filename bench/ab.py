"""python -m bench.ab NAME=CHECKOUT NAME=CHECKOUT [...]: an interleaved A/B of gsmcpd
checkouts under tools/call echo load, the same minutes for every arm.

Each round runs every arm once (in turn, the order reversed every other round, so
drift hits all alike) and measures requests/s, p99 and the router's (main process's)
CPU per call. The report gives each arm's medians and, for every arm after the first,
its per-round ratios to the first arm: a change of a few percent is only real when the
rounds agree, since this machine's speed drifts by more than that between minutes.
For a change of a few microseconds, `python -m bench.replay` in each checkout says more.

With --opens N, each arm's turn in a round is N session opens back to back instead (each
deleted before the next, as the full bench does): the open's p50 and p99, the router's
CPU per open, and the workers' CPU and minor page faults per open, read from what the
spawner's ended children cost it (/proc's cutime, cstime and cminflt: a worker's whole
life, its boot as a spare included) after the last worker of the turn has been reaped.

The daemons run the bench's one-tool toolset unless --toolsets names others: `--toolsets
default` runs the daemon's default (the seven core toolsets, what a user's session builds),
for an open's cost as a user sees it; the echo load needs `bench` among them.

Each arm runs its own checkout's gsmcpd: the daemon is started with that checkout
first on sys.path and checks it imported gsmcpd from there. (`python -m gsmcpd` run
from the harness's checkout, as bench.servers does, imports the harness's gsmcpd
whatever PYTHONPATH says: an A/B of one code against itself.) It runs with -P, which
multiprocessing passes on to the forkserver: the forkserver ignores the sys.path it is
handed (CPython 3.11-3.13) and, run with `-c` in the harness's directory, put that
directory first, so every arm's spawner and workers ran the harness's gsmcpd.
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

from bench import load, procs, servers

ECHO = {"name": "echo", "arguments": {"text": "hello"}}
DEFAULT = "default"   # --toolsets: no GS_MCP_TOOLSETS, the daemon's default toolsets

# Each figure of a round of --opens, in order: (label, format, unit, name in the ratios).
OPEN_FIGURES = (("open p50", "%6.2f", "ms", "open p50"),
                ("p99", "%6.2f", "ms", "open p99"),
                ("router", "%6.1f", "us/open", "router CPU"),
                ("workers", "%7.1f", "us/open", "workers' CPU"),
                ("faults", "%6.1f", "per open", "workers' faults"))

# Run as `python -c BOOT CHECKOUT serve ...`: gsmcpd from CHECKOUT or not at all.
BOOT = """\
import runpy, sys
checkout = sys.argv.pop(1)
sys.path.insert(0, checkout)
import gsmcpd
if not gsmcpd.__file__.startswith(checkout + "/"):
    sys.exit("bench.ab: gsmcpd imported from %s, not from %s" % (gsmcpd.__file__, checkout))
runpy.run_module("gsmcpd", run_name="__main__", alter_sys=True)
"""


class Arm(servers.Gsmcpd):
    """gsmcpd of one checkout."""

    def __init__(self, name, checkout, workdir, toolsets="bench"):
        super().__init__(name, workdir, toolsets=toolsets)
        self.checkout = str(Path(checkout).resolve())

    def env(self):
        env = super().env()
        env["PYTHONPATH"] = self.checkout
        if self.toolsets == DEFAULT:   # the daemon's own default, as a user's deployment has it
            del env["GS_MCP_TOOLSETS"]
        return env

    def command(self):
        return [sys.executable, "-P", "-c", BOOT, self.checkout, "serve", "--port", str(self.port)]


def parse_arms(texts):
    arms = []
    for text in texts:
        name, sep, checkout = text.partition("=")
        if not sep or not name or not checkout:
            raise SystemExit("bench.ab: an arm is NAME=CHECKOUT, not %r" % text)
        if not (Path(checkout) / "gsmcpd" / "__init__.py").is_file():
            raise SystemExit("bench.ab: %s has no gsmcpd package" % checkout)
        arms.append((name, checkout))
    if len(arms) < 2 or len({name for name, _ in arms}) != len(arms):
        raise SystemExit("bench.ab: give two or more arms with different names")
    return arms


def interleave(arms, rounds, workdir, turn, toolsets="bench"):
    """{name: [turn(arm, round number), ...] one per round}: the arms started side by side,
    then every round gives each arm its turn, the order reversed every other round."""
    started = [Arm(name, checkout, workdir, toolsets) for name, checkout in arms]
    results = {arm.name: [] for arm in started}
    try:
        for arm in started:     # side by side
            arm.launch()
        for arm in started:
            arm.wait_listening()
        for number in range(rounds):
            for arm in started if number % 2 == 0 else started[::-1]:
                results[arm.name].append(turn(arm, number))
    finally:
        for arm in started:
            if arm.proc is not None:
                arm.stop()
    return results


def measure(arms, rounds, duration, concurrency, workdir, log=print, warmup=0.5, toolsets="bench"):
    """{name: [(req/s, p99 ms, router µs per call), ...] one per round}."""
    def turn(arm, number):
        edges = {}

        def sample(edge, pid=arm.pid):
            edges[edge] = procs.cpu_seconds(pid)
        run = load.run_load(arm.url, concurrency, duration, params=ECHO, warmup=warmup,
                            on_window=sample)
        if run["errors"] or not run["requests"]:
            raise RuntimeError("%s: %d errors in %d calls; see %s"
                               % (arm.name, run["errors"], run["requests"], arm.log_path))
        cpu = (edges["end"] - edges["start"]) / run["requests"] * 1e6
        log("round %d %-8s %8.0f req/s  p99 %6.2f ms  router %6.1f us/call"
            % (number + 1, arm.name, run["rps"], run["p99_ms"], cpu))
        return run["rps"], run["p99_ms"], cpu
    return interleave(arms, rounds, workdir, turn, toolsets)


def _costs(arm, spawner):
    """The router's CPU and the spawner's reaped children's (CPU, faults), once the spawner
    has reaped the workers of the sessions deleted (its counters unchanged over 50 ms, or
    after 5 s: a worker still exiting then is counted in the arm's next round)."""
    before, deadline = procs.reaped_children(spawner), time.monotonic() + 5
    while True:
        time.sleep(0.05)
        now = procs.reaped_children(spawner)
        if now is None or procs.gsmcpd_spawner(arm.pid) != spawner:
            raise RuntimeError("%s: its spawner %d ended; see %s" % (arm.name, spawner, arm.log_path))
        if now == before or time.monotonic() > deadline:
            return procs.cpu_seconds(arm.pid), now
        before = now


def measure_opens(arms, rounds, opens, workdir, log=print, toolsets="bench"):
    """{name: [(open p50 ms, p99 ms, router µs, workers' µs, workers' faults per open), ...]
    one per round}."""
    def turn(arm, number):
        spawner = procs.gsmcpd_spawner(arm.pid)
        router, (workers, faults) = _costs(arm, spawner)
        run = load.measure_session_open(arm.url, opens)
        if run["errors"] or not run["opened"]:
            raise RuntimeError("%s: %d of %d opens failed (%s); see %s" % (
                arm.name, run["errors"], opens, "; ".join(run["first_errors"]), arm.log_path))
        router_after, (workers_after, faults_after) = _costs(arm, spawner)
        figures = (run["p50_ms"], run["p99_ms"], (router_after - router) / opens * 1e6,
                   (workers_after - workers) / opens * 1e6, (faults_after - faults) / opens)
        log("round %d %-8s %s" % (number + 1, arm.name, _said(figures)))
        return figures
    return interleave(arms, rounds, workdir, turn, toolsets)


def _said(figures):
    return "  ".join(("%s " + fmt + " %s") % (label, value, unit)
                     for (label, fmt, unit, _), value in zip(OPEN_FIGURES, figures))


def _ratio_line(name, first, what, ratios, lower=True, higher=False):
    """One arm's per-round ratios to the first arm's, sorted, their median, and how many
    rounds it was lower in (and higher in)."""
    ahead = "; lower in %d of %d" % (sum(r < 1 for r in ratios), len(ratios)) if lower else ""
    if higher:
        ahead += ", higher in %d" % sum(r > 1 for r in ratios)
    return "%s / %s %s per round: %s (median %.3f%s)" % (
        name, first, what, " ".join("%.3f" % r for r in ratios), statistics.median(ratios), ahead)


def _ratios(pairs, index):
    return sorted(b[index] / a[index] for a, b in pairs)


def report(results):
    names = list(results)
    lines = []
    for name in names:
        runs = results[name]
        lines.append("%-8s median %8.0f req/s  p99 %6.2f ms  router %6.1f us/call" % (
            name, statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs),
            statistics.median(r[2] for r in runs)))
    first = results[names[0]]
    for name in names[1:]:
        # A round too short for one clock tick of router CPU (10 ms) measured 0: no ratio.
        pairs = [(a, b) for a, b in zip(first, results[name]) if a[0] and a[2]]
        if not pairs:
            lines.append("%s / %s: no round measured %s's router CPU (rounds shorter than a clock "
                         "tick?)" % (name, names[0], names[0]))
            continue
        lines.append(_ratio_line(name, names[0], "router CPU", _ratios(pairs, 2)))
        lines.append(_ratio_line(name, names[0], "req/s", _ratios(pairs, 0), lower=False))
    return "\n".join(lines)


def report_opens(results):
    names = list(results)
    lines = ["%-8s median %s" % (name, _said(statistics.median(r[i] for r in results[name])
                                            for i in range(len(OPEN_FIGURES))))
             for name in names]
    first = results[names[0]]
    for name in names[1:]:
        for index, (_, _, _, what) in enumerate(OPEN_FIGURES):
            # Too few opens for one clock tick of CPU (10 ms) measured 0: no ratio to it.
            pairs = [(a, b) for a, b in zip(first, results[name]) if a[index]]
            if pairs:
                lines.append(_ratio_line(name, names[0], what, _ratios(pairs, index), higher=True))
            else:
                lines.append("%s / %s %s: no round measured %s's (too few opens for a clock tick?)"
                             % (name, names[0], what, names[0]))
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bench.ab", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("arms", nargs="+", metavar="NAME=CHECKOUT")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--duration", type=float, default=3.0, help="seconds per arm per round")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--warmup", type=float, default=0.5, help="seconds per run before the measured window")
    parser.add_argument("--opens", type=int, metavar="N",
                        help="N session opens per arm per round instead of the tools/call load "
                             "(--duration, --concurrency and --warmup then unused)")
    parser.add_argument("--toolsets", default="bench", metavar="NAMES",
                        help="GS_MCP_TOOLSETS for every arm (default: bench); 'default' for the "
                             "daemon's own default, the seven core toolsets a user's session has")
    parser.add_argument("--workdir", type=Path, default=Path(__file__).resolve().parent / "results" / "ab")
    args = parser.parse_args(argv)
    if args.opens is not None and args.opens < 1:
        parser.error("--opens takes a count of 1 or more")
    if args.opens is None and "bench" not in args.toolsets.replace(",", " ").split():
        parser.error("the echo load calls the bench toolset's echo: --toolsets must name bench")
    arms = parse_arms(args.arms)
    os.makedirs(args.workdir, exist_ok=True)
    if args.opens is not None:
        print(report_opens(measure_opens(arms, args.rounds, args.opens, args.workdir,
                                         toolsets=args.toolsets)))
    else:
        results = measure(arms, args.rounds, args.duration, args.concurrency, args.workdir,
                          warmup=args.warmup, toolsets=args.toolsets)
        print(report(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
