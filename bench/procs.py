"""Process facts from /proc: the server's process tree, CPU ticks, RSS and PSS."""

import os
from pathlib import Path

from gsmcpd import procstat

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def children_map():
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            stat = procstat.fields(int(entry.name))
            if stat is not None and procstat.field(stat, 3) != b"Z":
                parents.setdefault(procstat.ppid(stat), []).append(int(entry.name))
    return parents


def descendants(pid):
    """Every live process below pid (not pid itself)."""
    tree = children_map()
    found, todo = [], list(tree.get(pid, ()))
    while todo:
        child = todo.pop()
        found.append(child)
        todo.extend(tree.get(child, ()))
    return found


def cpu_seconds(pid):
    """utime + stime of one process (all its threads), in seconds; None if gone."""
    stat = procstat.fields(pid)
    if stat is None:
        return None
    return (int(procstat.field(stat, 14)) + int(procstat.field(stat, 15))) / CLOCK_TICKS   # utime + stime


def reaped_children(pid):
    """(CPU seconds, minor page faults) of the children pid has waited for (cutime + cstime,
    cminflt): what its ended children cost over their lives; None if pid is gone."""
    stat = procstat.fields(pid)
    if stat is None:
        return None
    return ((int(procstat.field(stat, 16)) + int(procstat.field(stat, 17))) / CLOCK_TICKS,
            int(procstat.field(stat, 11)))


def cmdline(pid):
    try:
        return Path("/proc/%d/cmdline" % pid).read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def memory_kb(pid):
    """{"rss_kb", "pss_kb"} from /proc/PID/smaps_rollup; None if gone."""
    try:
        text = Path("/proc/%d/smaps_rollup" % pid).read_text()
    except OSError:
        return None
    values = {}
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        if name in ("Rss", "Pss"):
            values[name.lower() + "_kb"] = int(rest.split()[0])
    return values if len(values) == 2 else None


def tree_memory(root_pid, classify=None):
    """Memory of a process tree: totals and per class (classify(pid) -> name)."""
    pids = [root_pid] + descendants(root_pid)
    totals = {"rss_kb": 0, "pss_kb": 0, "processes": 0}
    classes = {}
    for pid in pids:
        mem = memory_kb(pid)
        if mem is None:
            continue
        totals["rss_kb"] += mem["rss_kb"]
        totals["pss_kb"] += mem["pss_kb"]
        totals["processes"] += 1
        name = classify(pid) if classify else ("root" if pid == root_pid else "other")
        entry = classes.setdefault(name, {"rss_kb": 0, "pss_kb": 0, "processes": 0, "pss_each_kb": []})
        entry["rss_kb"] += mem["rss_kb"]
        entry["pss_kb"] += mem["pss_kb"]
        entry["processes"] += 1
        entry["pss_each_kb"].append(mem["pss_kb"])
    for entry in classes.values():
        each = sorted(entry.pop("pss_each_kb"))
        entry["pss_median_kb"] = each[len(each) // 2] if each else None
    totals["by_kind"] = classes
    return totals


def _forkservers_and_spawners(router_pid, tree):
    forkservers = [c for c in tree.get(router_pid, ()) if b"forkserver" in cmdline(c).encode()]
    return forkservers, {s for fs in forkservers for s in tree.get(fs, ())}


def gsmcpd_spawner(router_pid):
    """The pid of a gsmcpd's spawner (the forkserver's child, every worker's parent)."""
    _, spawners = _forkservers_and_spawners(router_pid, children_map())
    if len(spawners) != 1:
        raise RuntimeError("gsmcpd %d: %d spawners, not one" % (router_pid, len(spawners)))
    return spawners.pop()


def gsmcpd_kind(router_pid):
    """Classifier for a gsmcpd tree: router, forkserver, spawner, worker, other."""
    tree = children_map()
    forkservers, spawners = _forkservers_and_spawners(router_pid, tree)
    workers = {w for sp in spawners for w in tree.get(sp, ())}

    def kind(pid):
        if pid == router_pid:
            return "router"
        if pid in forkservers:
            return "forkserver"
        if pid in spawners:
            return "spawner"
        if pid in workers:
            return "worker"
        return "other"
    return kind
