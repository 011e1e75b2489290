"""python -m bench.server_build NAME=CHECKOUT [...]: a worker's server build for one session,
as a claimed worker does it, in fresh forks of a preloaded process; an interleaved A/B of
checkouts.

Each arm's probe is a process of its own running that checkout's gsmcpd (checked, as
bench.ab's daemons are): it imports gsmcpd.worker.preload, as the forkserver does (the
imports, the rehearsals, the frozen heap), then forks --forks times; each fork builds the
server for a prepare frame (`build_server`, no view) and reports its thread's CPU time and
minor page faults, the first touches of pages shared with its parent included, as in a
new worker. A round runs every arm's probe, read-write then read-only, the order of the
arms reversed every other round; the report gives each arm's medians of the rounds' p50s
and each later arm's per-round ratios to the first's.
"""

import argparse
import json
import statistics
import subprocess
import sys

from bench.ab import DEFAULT, parse_arms

MODES = (("read-write", False), ("read-only", True))

PROBE = """
import json, os, resource, statistics, sys, time
checkout, forks, read_only, toolsets = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1", json.loads(sys.argv[4])
sys.path.insert(0, checkout)
import gsmcpd
if not gsmcpd.__file__.startswith(checkout + "/"):
    sys.exit("bench.server_build: gsmcpd imported from %s, not from %s" % (gsmcpd.__file__, checkout))
import gsmcpd.worker.preload  # the forkserver's: imports, rehearsals, gc.freeze()
from gsmcpd.worker.server import build_server

def build():
    session = {"session_id": "probe", "user": "probe", "read_only": read_only, "toolsets": toolsets}
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    started = time.thread_time_ns()
    server = build_server(session)
    cpu = time.thread_time_ns() - started
    return [cpu / 1e3, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults, len(server.registry)]

rows = []
for _ in range(forks):
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.write(writer, json.dumps(build()).encode())
        finally:
            os._exit(0)
    os.close(writer)
    with os.fdopen(reader, "rb") as said:
        rows.append(json.loads(said.read()))
    os.waitpid(pid, 0)
print(json.dumps({"us": statistics.median(r[0] for r in rows),
                  "faults": statistics.median(r[1] for r in rows), "tools": rows[0][2]}))
"""


def probe(checkout, forks, read_only, toolsets):
    """{"us", "faults": p50s of the build over `forks` fresh forks, "tools": how many}."""
    from pathlib import Path
    checkout = str(Path(checkout).resolve())
    run = subprocess.run([sys.executable, "-P", "-c", PROBE, checkout, str(forks),
                          "1" if read_only else "0", json.dumps(toolsets)],
                         capture_output=True, text=True, timeout=300)
    if run.returncode != 0:
        raise RuntimeError("bench.server_build: the probe of %s failed:\n%s" % (checkout, run.stderr))
    return json.loads(run.stdout.splitlines()[-1])


def measure(arms, rounds, forks, toolsets, log=print):
    """{name: {mode: [(µs, faults), ...] one per round}}."""
    results = {name: {mode: [] for mode, _ in MODES} for name, _ in arms}
    for number in range(rounds):
        for name, checkout in arms if number % 2 == 0 else arms[::-1]:
            for mode, read_only in MODES:
                said = probe(checkout, forks, read_only, toolsets)
                results[name][mode].append((said["us"], said["faults"]))
                log("round %d %-8s %-10s build p50 %7.1f us  faults %5.1f  (%d tools)"
                    % (number + 1, name, mode, said["us"], said["faults"], said["tools"]))
    return results


def report(results):
    names = list(results)
    lines = []
    for mode, _ in MODES:
        for name in names:
            runs = results[name][mode]
            lines.append("%-8s %-10s median build p50 %7.1f us  faults %5.1f" % (
                name, mode, statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)))
        first = results[names[0]][mode]
        for name in names[1:]:
            for index, what in ((0, "CPU"), (1, "faults")):
                ratios = sorted(b[index] / a[index] for a, b in zip(first, results[name][mode]) if a[index])
                if ratios:
                    lines.append("%s / %s %s %s per round: %s (median %.3f; lower in %d of %d)" % (
                        name, names[0], mode, what, " ".join("%.3f" % r for r in ratios),
                        statistics.median(ratios), sum(r < 1 for r in ratios), len(ratios)))
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bench.server_build", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("arms", nargs="+", metavar="NAME=CHECKOUT")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--forks", type=int, default=25, help="fresh forks per probe (the p50's sample)")
    parser.add_argument("--toolsets", default=DEFAULT, metavar="NAMES",
                        help="the session's toolsets (default: the daemon's default, the seven core ones)")
    args = parser.parse_args(argv)
    if args.forks < 1 or args.rounds < 1:
        parser.error("--forks and --rounds take a count of 1 or more")
    toolsets = None if args.toolsets == DEFAULT else args.toolsets.replace(",", " ").split()
    print(report(measure(parse_arms(args.arms), args.rounds, args.forks, toolsets)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
