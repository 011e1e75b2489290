"""python -m bench: run the gsmcpd benchmarks (see docs/PERFORMANCE.md)."""

import argparse
import datetime
import sys
from pathlib import Path

from bench import report, run

RESULTS = Path(__file__).resolve().parent / "results"


def _ints(text):
    return [int(x) for x in text.split(",") if x]


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    p.add_argument("--smoke", action="store_true", help="tiny counts, gsmcpd and the floors only")
    p.add_argument("--servers", type=lambda t: [x for x in t.split(",") if x],
                   help="comma list of gsmcpd, floor, floor-hop, floor-min, sdk-json, sdk-sse, sdk-fast")
    p.add_argument("--repeats", type=int)
    p.add_argument("--duration", type=float, help="seconds per throughput point")
    p.add_argument("--concurrency", type=_ints, help="comma list, default 1,16")
    p.add_argument("--open-sessions", type=int, help="sessions opened for the session-open point")
    p.add_argument("--memory-sessions", type=_ints, help="comma list, default 100,1000")
    p.add_argument("--long-call", type=float, help="seconds the isolation tool blocks")
    p.add_argument("--profile", action="store_true", help="also profile gsmcpd (py-spy and cProfile)")
    p.add_argument("--json", type=Path, help="where to write the result JSON")
    p.add_argument("--no-doc", action="store_true", help="do not append to docs/PERFORMANCE.md")
    p.add_argument("--workdir", type=Path, help="logs and server state (default bench/results/work)")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    settings = run.main_settings_from_args(args)
    result = run.Bench(settings, log=lambda m: print(m, file=sys.stderr, flush=True)).run()
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    path = run.write_json(result, args.json or RESULTS / ("bench-%s%s.json" % (stamp, "-smoke" if args.smoke else "")))
    print("bench: results in %s" % path, file=sys.stderr)
    text = report.markdown(result)
    if not args.no_doc:
        report.append_to_doc(result)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
