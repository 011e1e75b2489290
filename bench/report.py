"""The Markdown report of one run (appended to docs/PERFORMANCE.md)."""

from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "PERFORMANCE.md"


def _fmt(value, digits=1):
    if value is None:
        return "–"
    if isinstance(value, float):
        return ("%." + str(digits) + "f") % value
    return str(value)


def _ratio(a, b):
    if a is None or not b:
        return "–"
    return "%.2f" % (a / b)


def markdown(result):
    m, v = result["machine"], result["versions"]
    s = result["settings"]
    lines = ["", "### Run %s%s" % (result["date"], " (smoke)" if s.get("smoke") else ""), "",
             "Machine: %s CPUs (%s), %s GB, Linux %s; load average %s at start, %s at end." % (
                 m["cpus"], m["cpu_model"], m["memory_gb"], m["kernel"],
                 "/".join("%.2f" % x for x in m["loadavg_start"]),
                 "/".join("%.2f" % x for x in m.get("loadavg_end", []))),
             "Versions: " + ", ".join("%s %s" % (k, v[k]) for k in sorted(v)) + ".",
             "Settings: %d repeats, %.1f s per throughput point, %d session opens, memory at %s sessions, "
             "long call %.1f s. Figures are medians over the repeats; ratio = server / sdk-json." % (
                 s["repeats"], s["duration"], s["open_sessions"],
                 "/".join(str(x) for x in s["memory_sessions"]), s["long_call"]),
             ""]
    servers = result["servers"]
    base = "sdk-json"
    lines += ["| point | " + " | ".join(servers) + " |", "|---" * (len(servers) + 1) + "|"]

    def row(label, getter, digits=1, ratio=True):
        cells = []
        ref = getter(base) if base in servers else None
        for name in servers:
            value = getter(name)
            cell = _fmt(value, digits)
            if ratio and ref and value is not None and name != base:
                cell += " (%s×)" % _ratio(value, ref)
            cells.append(cell)
        lines.append("| %s | %s |" % (label, " | ".join(cells)))

    def med(section, name, key, sub=None):
        entry = result.get(section, {})
        if sub is not None:
            entry = entry.get(sub, {})
        return entry.get(name, {}).get("median", {}).get(key)

    row("session open p50 ms", lambda n: med("session_open", n, "p50_ms"), 2)
    row("session open p99 ms", lambda n: med("session_open", n, "p99_ms"), 2)
    for key in sorted(result.get("throughput", {}), key=lambda k: int(k[1:])):
        c = key[1:]
        row("C=%s tools/call req/s" % c, lambda n: med("throughput", n, "rps", key), 0)
        row("C=%s p50 ms" % c, lambda n: med("throughput", n, "p50_ms", key), 2)
        row("C=%s p99 ms" % c, lambda n: med("throughput", n, "p99_ms", key), 2)
        row("C=%s main-process CPU µs/call" % c, lambda n: med("throughput", n, "cpu_us_per_call", key), 1)
        row("C=%s all-process CPU µs/call" % c, lambda n: med("throughput", n, "tree_cpu_us_per_call", key), 1)
    for label, key in (("isolation p50 ms", "p50_ms"), ("isolation p99 ms", "p99_ms")):
        row(label, lambda n, k=key: result.get("isolation", {}).get(n, {}).get("median", {}).get(k), 2)
    memory = result.get("memory", {})

    def mem(name, point, key):
        return memory.get(name, {}).get(point, {}).get(key)
    row("idle PSS MB", lambda n: None if mem(n, "idle", "pss_kb") is None else mem(n, "idle", "pss_kb") / 1024, 1)
    for held in s["memory_sessions"]:
        point = str(held)
        row("%d sessions PSS MB" % held,
            lambda n, p=point: None if mem(n, p, "pss_kb") is None else mem(n, p, "pss_kb") / 1024, 1)
        row("%d sessions RSS MB" % held,
            lambda n, p=point: None if mem(n, p, "rss_kb") is None else mem(n, p, "rss_kb") / 1024, 1)
        row("%d sessions ping p99 ms" % held,
            lambda n, p=point: (memory.get(n, {}).get(p, {}).get("ping") or {}).get("p99_ms"), 2, False)
    lines += ["", "| target | measured | goal | met | note |", "|---|---|---|---|---|"]
    for t in result.get("targets", []):
        met = {True: "yes", False: "**no**", None: "n/a"}[t["met"]]
        lines.append("| %s | %s | %s | %s | %s |" % (t["target"], _fmt(t["measured"], 2), t["goal"], met,
                                                     t.get("note", "")))
    return "\n".join(lines) + "\n"


def append_to_doc(result, doc=DOC):
    text = markdown(result)
    with open(doc, "a") as fh:
        fh.write(text)
    return text
