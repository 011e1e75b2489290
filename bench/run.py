"""The benchmark run: every measurement, interleaved over the servers, repeated.

Order: session open, throughput at each concurrency, isolation (the long tool), then
memory (fresh instances, one at a time, since holding 1000 sessions is not free).
Within a point the servers take turns (A B C A B C …) so machine drift hits all alike;
each point's figure is the median over its repeats.
"""

import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from bench import load, peers, profile, servers, targets

ECHO = {"name": "echo", "arguments": {"text": "hello"}}


class Settings:
    def __init__(self, smoke=False, servers=None, repeats=None, duration=None, concurrency=None,
                 open_sessions=None, memory_sessions=None, long_call=None, profile=False,
                 workdir=None):
        self.smoke = smoke
        default_servers = (["gsmcpd", "floor", "floor-hop", "floor-min"]
                           + ([] if smoke else ["sdk-json", "sdk-sse", "sdk-fast"]))
        self.servers = list(servers or default_servers)
        self.repeats = repeats or (1 if smoke else 3)
        self.duration = duration or (0.5 if smoke else 5.0)
        self.warmup = 0.1 if smoke else 0.5
        self.concurrency = list(concurrency or [1, 16])
        self.open_sessions = open_sessions or (5 if smoke else 200)
        self.memory_sessions = list(memory_sessions or ([3, 10] if smoke else [100, 1000]))
        self.long_call = long_call or (1.5 if smoke else 8.0)
        self.isolation_concurrency = 2 if smoke else 4
        self.profile = profile
        self.workdir = Path(workdir or Path(__file__).resolve().parent / "results" / "work")

    def as_dict(self):
        return {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(self).items()}


def _median(values):
    values = [v for v in values if v is not None]
    return round(statistics.median(values), 3) if values else None


def _medians(runs, keys):
    return {k: _median([r.get(k) for r in runs]) for k in keys}


def machine_info():
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_kb = 0
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_kb = int(line.split()[1])
    except OSError:
        pass
    return {"cpus": os.cpu_count(), "cpu_model": model, "memory_gb": round(mem_kb / 1048576, 1),
            "kernel": platform.release(), "loadavg_start": list(os.getloadavg())}


def versions(peer_python):
    import gsmcpd
    out = {"python": platform.python_version(), "gsmcpd": gsmcpd.__version__}
    try:
        out["gsmcpd_commit"] = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                              text=True, cwd=str(servers.REPO)).stdout.strip()
    except OSError:
        out["gsmcpd_commit"] = None
    if peer_python is not None:
        out.update(peers.versions(peer_python))
    return out


class Bench:
    def __init__(self, settings, log=print):
        self.s = settings
        self.log = log
        self.peer_python = None
        self.running = {}

    def needs_peers(self):
        return any(name in servers.SDK_CONFIGS for name in self.s.servers)

    def run(self):
        s = self.s
        s.workdir.mkdir(parents=True, exist_ok=True)
        if self.needs_peers():
            self.peer_python = peers.ensure(self.log)
        result = {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
                  "machine": machine_info(), "versions": versions(self.peer_python),
                  "settings": s.as_dict(), "servers": list(s.servers)}
        try:
            self._start_all()
            result["session_open"] = self.session_open()
            result["throughput"] = {"c%d" % c: self.throughput(c) for c in s.concurrency}
        finally:
            self._stop_all()
        result["isolation"] = self.isolation()
        result["memory"] = self.memory()
        if s.profile:
            result["profile"] = profile.run_profiles(self, ECHO)
        result["machine"]["loadavg_end"] = list(os.getloadavg())
        result["targets"] = targets.evaluate(result)
        return result

    # -- servers -----------------------------------------------------------------
    def _start(self, name, **kw):
        server = servers.make(name, self.s.workdir, self.peer_python, **kw)
        server.start()
        time.sleep(0.5 if not self.s.smoke else 0.2)  # spares forked, imports done
        return server

    def _start_all(self):
        # Side by side: each is launched, then each waited for, then one pause for all.
        for name in self.s.servers:
            self.log("bench: starting %s" % name)
            self.running[name] = servers.make(name, self.s.workdir, self.peer_python).launch()
        for server in self.running.values():
            server.wait_listening()
        time.sleep(0.5 if not self.s.smoke else 0.2)  # spares forked, imports done

    def _stop_all(self):
        for server in self.running.values():
            server.stop()
        self.running.clear()

    # -- (i) session open ----------------------------------------------------------
    def session_open(self):
        out = {name: {"runs": []} for name in self.s.servers}
        for rep in range(self.s.repeats):
            for name in self.s.servers:
                summary = load.measure_session_open(self.running[name].url, self.s.open_sessions)
                out[name]["runs"].append(summary)
                self.log("bench: session open %-9s rep %d: p50 %s ms p99 %s ms" % (
                    name, rep + 1, summary["p50_ms"], summary["p99_ms"]))
        for entry in out.values():
            entry["median"] = _medians(entry["runs"], ["p50_ms", "p99_ms"])
            entry["errors"] = sum(r["errors"] for r in entry["runs"])
        return out

    # -- (ii) throughput -------------------------------------------------------------
    def throughput(self, concurrency):
        out = {name: {"runs": []} for name in self.s.servers}
        for rep in range(self.s.repeats):
            for name in self.s.servers:
                server = self.running[name]
                out[name]["runs"].append(self._one_load(server, concurrency))
                r = out[name]["runs"][-1]
                self.log("bench: C=%-2d %-9s rep %d: %8.1f req/s p50 %s ms p99 %s ms cpu/call %s us" % (
                    concurrency, name, rep + 1, r["rps"], r["p50_ms"], r["p99_ms"], r["cpu_us_per_call"]))
        for entry in out.values():
            entry["median"] = _medians(entry["runs"], ["rps", "p50_ms", "p99_ms", "cpu_us_per_call",
                                                       "tree_cpu_us_per_call"])
            entry["errors"] = sum(r["errors"] for r in entry["runs"])
        return out

    def _one_load(self, server, concurrency, params=ECHO, method="tools/call", sessions=None,
                  duration=None):
        samples = {}

        def on_window(edge):
            samples[edge] = (server.cpu_seconds(), server.tree_cpu_seconds())

        summary = load.run_load(server.url, concurrency, duration or self.s.duration, method=method,
                                params=params, warmup=self.s.warmup, sessions=sessions,
                                on_window=on_window)
        n = max(1, summary["requests"])
        if "start" in samples and "end" in samples:
            summary["cpu_us_per_call"] = round((samples["end"][0] - samples["start"][0]) / n * 1e6, 1)
            summary["tree_cpu_us_per_call"] = round((samples["end"][1] - samples["start"][1]) / n * 1e6, 1)
        else:
            summary["cpu_us_per_call"] = summary["tree_cpu_us_per_call"] = None
        return summary

    # -- (iv) isolation -----------------------------------------------------------------
    def isolation(self):
        """While one session's tool blocks for long_call seconds, others call echo."""
        names = []
        if "gsmcpd" in self.s.servers:
            names.append(("gsmcpd", "gsmcpd-exec", "tools/call",
                          {"name": "execute_code",
                           "arguments": {"code": "import time\ntime.sleep(%s)" % self.s.long_call}}))
        for sdk in ("sdk-json",):
            if sdk in self.s.servers:
                names.append((sdk, sdk, "tools/call",
                              {"name": "sleep", "arguments": {"seconds": self.s.long_call}}))
        out = {label: {"runs": []} for label, *_ in names}
        if not names:
            return out
        started = {label: self._start(server_name) for label, server_name, *_ in names}
        try:
            for rep in range(self.s.repeats):
                for label, _, method, params in names:
                    run = self._isolation_once(started[label], method, params)
                    out[label]["runs"].append(run)
                    self.log("bench: isolation %-9s rep %d: p50 %s ms p99 %s ms (long call %.2f s, %s)" % (
                        label, rep + 1, run["p50_ms"], run["p99_ms"], run["long_call_s"] or -1,
                        run["long_call_ok"]))
        finally:
            for server in started.values():
                server.stop()
        for entry in out.values():
            entry["median"] = _medians(entry["runs"], ["rps", "p50_ms", "p99_ms", "long_call_s"])
            entry["errors"] = sum(r["errors"] for r in entry["runs"])
        return out

    def _isolation_once(self, server, method, params):
        box = {}

        def long_call():
            try:
                box["elapsed"], box["reply"] = load.call_once(server.url, method, params,
                                                              timeout=self.s.long_call + 60)
            except OSError as exc:
                box["error"] = repr(exc)

        thread = threading.Thread(target=long_call)
        thread.start()
        time.sleep(0.2)  # the long call is in its tool now
        window = max(0.3, self.s.long_call - 0.2 - self.s.warmup - 0.5)
        summary = self._one_load(server, self.s.isolation_concurrency, duration=window)
        thread.join(self.s.long_call + 90)
        reply = box.get("reply")
        summary["long_call_s"] = round(box["elapsed"], 3) if "elapsed" in box else None
        summary["long_call_ok"] = bool(reply is not None and reply.is_result())
        if not summary["long_call_ok"]:
            summary["long_call_error"] = box.get("error") or repr(reply)
        return summary

    # -- (iii) memory ----------------------------------------------------------------------
    def memory(self):
        names = [n for n in self.s.servers if n in ("gsmcpd", "floor", "sdk-json")]
        return {name: self._memory_of(name) for name in names}

    def _memory_of(self, name):
        server = self._start(name)
        out = {}
        settle = 0.1 if self.s.smoke else 0.5
        try:
            time.sleep(settle)
            out["idle"] = server.memory()
            self.log("bench: memory %-9s idle: PSS %d kB" % (name, out["idle"]["pss_kb"]))
            if name == "floor":
                return out  # no sessions to hold
            held = []
            for target in self.s.memory_sessions:
                started = time.monotonic()
                held += load.open_sessions(server.url, target - len(held))
                opened_in = time.monotonic() - started
                time.sleep(settle)
                snap = server.memory()
                snap["sessions"] = len(held)
                snap["open_seconds"] = round(opened_in, 2)
                idle = out["idle"]["pss_kb"]
                snap["pss_per_session_kb"] = round((snap["pss_kb"] - idle) / max(1, len(held)), 1)
                concurrency = min(16, len(held))
                ping = self._one_load(server, concurrency, params=None, method="ping", sessions=held)
                snap["ping"] = {k: ping[k] for k in ("concurrency", "rps", "p50_ms", "p99_ms", "max_ms",
                                                     "errors", "first_errors")}
                out[str(target)] = snap
                self.log("bench: memory %-9s %d sessions: PSS %d kB (%.1f kB/session), ping p99 %s ms, %d errors"
                         % (name, len(held), snap["pss_kb"], snap["pss_per_session_kb"],
                            ping["p99_ms"], ping["errors"]))
            load.delete_sessions(server.url, held)
        finally:
            server.stop()
        return out


def write_json(result, path):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    return path


def main_settings_from_args(args):
    return Settings(smoke=args.smoke, servers=args.servers, repeats=args.repeats, duration=args.duration,
                    concurrency=args.concurrency, open_sessions=args.open_sessions,
                    memory_sessions=args.memory_sessions, long_call=args.long_call,
                    profile=args.profile, workdir=args.workdir)


def python_executable():
    return sys.executable
