"""python -m bench.ab NAME=CHECKOUT NAME=CHECKOUT [...]: an interleaved A/B of gsmcpd
checkouts under tools/call echo load, the same minutes for every arm.

Each round runs every arm once (in turn, the order reversed every other round, so
drift hits all alike) and measures requests/s, p99 and the router's (main process's)
CPU per call. The report gives each arm's medians and, for every arm after the first,
its per-round ratios to the first arm: a change of a few percent is only real when the
rounds agree, since this machine's speed drifts by more than that between minutes.
For a change of a few microseconds, `python -m bench.replay` in each checkout says more.

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
from pathlib import Path

from bench import load, procs, servers

ECHO = {"name": "echo", "arguments": {"text": "hello"}}

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

    def __init__(self, name, checkout, workdir):
        super().__init__(name, workdir)
        self.checkout = str(Path(checkout).resolve())

    def env(self):
        env = super().env()
        env["PYTHONPATH"] = self.checkout
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


def measure(arms, rounds, duration, concurrency, workdir, log=print, warmup=0.5):
    """{name: [(req/s, p99 ms, router µs per call), ...] one per round}."""
    started = [Arm(name, checkout, workdir) for name, checkout in arms]
    results = {arm.name: [] for arm in started}
    try:
        for arm in started:     # side by side
            arm.launch()
        for arm in started:
            arm.wait_listening()
        for number in range(rounds):
            for arm in started if number % 2 == 0 else started[::-1]:
                edges = {}

                def sample(edge, pid=arm.pid):
                    edges[edge] = procs.cpu_seconds(pid)
                run = load.run_load(arm.url, concurrency, duration, params=ECHO, warmup=warmup,
                                    on_window=sample)
                if run["errors"] or not run["requests"]:
                    raise RuntimeError("%s: %d errors in %d calls; see %s"
                                       % (arm.name, run["errors"], run["requests"], arm.log_path))
                cpu = (edges["end"] - edges["start"]) / run["requests"] * 1e6
                results[arm.name].append((run["rps"], run["p99_ms"], cpu))
                log("round %d %-8s %8.0f req/s  p99 %6.2f ms  router %6.1f us/call"
                    % (number + 1, arm.name, run["rps"], run["p99_ms"], cpu))
    finally:
        for arm in started:
            if arm.proc is not None:
                arm.stop()
    return results


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
        cpu = sorted(b[2] / a[2] for a, b in pairs)
        rps = sorted(b[0] / a[0] for a, b in pairs)
        lines.append("%s / %s router CPU per round: %s (median %.3f; lower in %d of %d)" % (
            name, names[0], " ".join("%.3f" % r for r in cpu), statistics.median(cpu),
            sum(r < 1 for r in cpu), len(cpu)))
        lines.append("%s / %s req/s per round: %s (median %.3f)" % (
            name, names[0], " ".join("%.3f" % r for r in rps), statistics.median(rps)))
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bench.ab", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("arms", nargs="+", metavar="NAME=CHECKOUT")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--duration", type=float, default=3.0, help="seconds per arm per round")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--warmup", type=float, default=0.5, help="seconds per run before the measured window")
    parser.add_argument("--workdir", type=Path, default=Path(__file__).resolve().parent / "results" / "ab")
    args = parser.parse_args(argv)
    arms = parse_arms(args.arms)
    os.makedirs(args.workdir, exist_ok=True)
    results = measure(arms, args.rounds, args.duration, args.concurrency, args.workdir, warmup=args.warmup)
    print(report(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
