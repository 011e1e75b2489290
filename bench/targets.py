"""The issue's targets, computed from a result (measured, never asserted in tests)."""


def _get(result, *path):
    node = result
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node


def _ratio(a, b):
    if a is None or b in (None, 0):
        return None
    return round(a / b, 2)


def _row(target, measured, goal, met, note=""):
    return {"target": target, "measured": measured, "goal": goal, "met": met, "note": note}


def evaluate(result):
    rows = []
    rps16 = lambda name: _get(result, "throughput", "c16", name, "median", "rps")
    rps1 = lambda name: _get(result, "throughput", "c1", name, "median", "rps")
    for label, ours, theirs, goal in (
        ("C=16 throughput vs SDK JSON", rps16("gsmcpd"), rps16("sdk-json"), 5.0),
        ("C=16 throughput vs SDK fastest", rps16("gsmcpd"), rps16("sdk-fast"), 3.0),
        ("C=1 throughput vs SDK JSON", rps1("gsmcpd"), rps1("sdk-json"), 3.0),
    ):
        ratio = _ratio(ours, theirs)
        rows.append(_row(label, ratio, ">= %gx" % goal, None if ratio is None else ratio >= goal,
                         "%s vs %s req/s" % (ours, theirs)))
    cpu16 = lambda name: _get(result, "throughput", "c16", name, "median", "cpu_us_per_call")
    ours, floor, hop, least = cpu16("gsmcpd"), cpu16("floor"), cpu16("floor-hop"), cpu16("floor-min")
    ratio = _ratio(ours, floor)
    note = "%s vs %s us" % (ours, floor)
    if hop is not None:  # what the design's hop alone costs, for reading the ratio
        note += "; the floor with one hop: %s us (%sx the floor)" % (hop, _ratio(hop, floor))
    if least is not None:  # and the hop with the least protocol work: the design's lower bound
        note += "; with the least protocol work: %s us (%sx)" % (least, _ratio(least, floor))
    rows.append(_row("router CPU per call vs floor (C=16)", ratio, "<= 3x",
                     None if ratio is None else ratio <= 3.0, note))
    ours = _get(result, "throughput", "c16", "gsmcpd", "median", "p99_ms")
    theirs = _get(result, "throughput", "c16", "sdk-json", "median", "p99_ms")
    ratio = _ratio(ours, theirs)
    rows.append(_row("C=16 p99 vs SDK JSON", ratio, "<= 0.2x", None if ratio is None else ratio <= 0.2,
                     "%s vs %s ms" % (ours, theirs)))
    p50 = _get(result, "session_open", "gsmcpd", "median", "p50_ms")
    p99 = _get(result, "session_open", "gsmcpd", "median", "p99_ms")
    rows.append(_row("session open p50", p50, "<= 5 ms", None if p50 is None else p50 <= 5.0))
    rows.append(_row("session open p99", p99, "<= 20 ms", None if p99 is None else p99 <= 20.0))
    mem = _get(result, "memory", "gsmcpd")
    if isinstance(mem, dict):
        held = sorted((k for k in mem if k.isdigit()), key=int)
        if held:
            first = mem[held[0]]
            worker = _get(first, "by_kind", "worker", "pss_median_kb")
            rows.append(_row("idle session worker PSS", None if worker is None else round(worker / 1024, 1),
                             "<= 8 MB", None if worker is None else worker <= 8 * 1024,
                             "median worker at %s sessions; %s kB PSS per session overall"
                             % (held[0], first.get("pss_per_session_kb"))))
            last = mem[held[-1]]
            ping = last.get("ping", {})
            p99 = ping.get("p99_ms")
            ok = None if p99 is None else (p99 < 10.0 and ping.get("errors") == 0
                                           and last.get("sessions") == int(held[-1]))
            rows.append(_row("%s open sessions: ping p99, errors" % held[-1], p99, "< 10 ms, 0 errors", ok,
                             "%s errors" % ping.get("errors")))
    p99 = _get(result, "isolation", "gsmcpd", "median", "p99_ms")
    rows.append(_row("calls p99 while another session's tool runs", p99, "< 20 ms",
                     None if p99 is None else p99 < 20.0))
    return rows
