"""Profiles of gsmcpd under the C=16 echo load: where the time goes per request.

Two views of the router: py-spy sampling (no distortion; needs py-spy from the peers
venv) and cProfile (the router run under `python -m cProfile`; exact call counts but
slowed). py-spy also samples one session worker. Summaries go into the result JSON;
the raw files stay in bench/results/.
"""

import collections
import io
import pstats
import subprocess
import time
from pathlib import Path

from bench import load, peers, servers

TOP = 30


def _collapsed_summary(path, top=TOP):
    """Self and inclusive sample shares per function from py-spy's raw (collapsed) output."""
    self_counts = collections.Counter()
    incl_counts = collections.Counter()
    total = 0
    for line in Path(path).read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack:
            continue
        n = int(count)
        total += n
        frames = stack.split(";")
        self_counts[frames[-1]] += n
        for frame in set(frames):
            incl_counts[frame] += n
    pct = lambda c: round(100.0 * c / total, 1) if total else 0.0
    return {"samples": total,
            "self": [[f, pct(c)] for f, c in self_counts.most_common(top)],
            "inclusive": [[f, pct(c)] for f, c in incl_counts.most_common(top)]}


def _pstats_text(path, sort, top=TOP):
    out = io.StringIO()
    stats = pstats.Stats(str(path), stream=out)
    stats.strip_dirs().sort_stats(sort).print_stats(top)
    return out.getvalue()


def run_profiles(bench, params):
    s = bench.s
    results_dir = s.workdir.parent
    duration = max(s.duration, 2.0)
    out = {}
    spy = peers.py_spy()
    # 1. py-spy on an unmodified router and one worker
    server = bench._start("gsmcpd")
    try:
        held = load.open_sessions(server.url, 16)
        if spy is not None:
            workers = sorted(server.worker_pids())
            files = {"router": results_dir / "pyspy-router.txt", "worker": results_dir / "pyspy-worker.txt"}
            targets = {"router": server.pid, "worker": workers[0] if workers else None}
            procs = []
            for role, pid in targets.items():
                if pid is None:
                    continue
                procs.append((role, subprocess.Popen(
                    [str(spy), "record", "--pid", str(pid), "--duration", str(int(duration + 1)),
                     "--rate", "500", "--format", "raw", "--nonblocking", "--output", str(files[role])],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)))
            time.sleep(1.0)  # py-spy attaches
            out["pyspy_load"] = bench._one_load(server, 16, params=params, sessions=held, duration=duration)
            for role, proc in procs:
                proc.wait(duration + 30)
                if files[role].exists():
                    out["pyspy_" + role] = _collapsed_summary(files[role])
        else:
            out["pyspy"] = "py-spy not installed in the peers venv"
        load.delete_sessions(server.url, held)
    finally:
        server.stop()
    # 2. cProfile of the router (slowed by the profiler; read the proportions)
    prof = results_dir / "router.prof"
    if prof.exists():
        prof.unlink()
    server = servers.Gsmcpd("gsmcpd-cprofile", s.workdir, profile=prof)
    server.start()
    time.sleep(0.5)
    try:
        out["cprofile_load"] = bench._one_load(server, 16, params=params, duration=duration)
    finally:
        server.stop(timeout=30)
    if prof.exists():
        out["cprofile_router_tottime"] = _pstats_text(prof, "tottime")
        out["cprofile_router_cumulative"] = _pstats_text(prof, "cumulative")
    return out
