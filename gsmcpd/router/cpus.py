"""How many CPUs the router can count on: its affinity mask, capped by a CPU quota.

A systemd unit's `CPUQuota=`, a container's `--cpus` or a cgroup set up by hand limit
the daemon to a share of the machine's CPUs that the affinity mask does not show: on
a 2-CPU machine, `CPUQuota=100%` leaves both CPUs in the mask but one CPU's time. The
quota of the daemon's cgroup and of every ancestor counts (cgroup v2 `cpu.max`, or
v1 `cpu.cfs_quota_us` over `cpu.cfs_period_us`); the tightest wins, rounded down,
since a poll that assumes a CPU the quota does not give spends the time the worker
it waits for needs. Anything unreadable or unexpected means no quota: the affinity
mask alone, as before.
"""

import os

PROC_CGROUP = "/proc/self/cgroup"
PROC_MOUNTINFO = "/proc/self/mountinfo"


def usable_cpus(proc_cgroup=PROC_CGROUP, proc_mountinfo=PROC_MOUNTINFO):
    """(cpus, why): the CPUs to count on, at least 1, and what limited them."""
    affinity = len(os.sched_getaffinity(0))
    quota = cpu_quota(_read(proc_cgroup), _read(proc_mountinfo))
    if quota is None or quota >= affinity:
        return affinity, "the affinity mask"
    return max(1, int(quota)), "a cgroup CPU quota of %g" % quota


def cpu_quota(cgroup_text, mountinfo_text, read=None):
    """The tightest CPU quota (in CPUs) over the process's cgroup and its ancestors,
    or None: no quota, or none that could be read. `read(path)` -> text or None."""
    if not cgroup_text or not mountinfo_text:
        return None
    read = read or _read
    limits = []
    for mount_point, path, version in _cpu_cgroup_dirs(cgroup_text, mountinfo_text):
        for directory in _ancestors(mount_point, path):
            limit = _limit_at(directory, version, read)
            if limit is not None:
                limits.append(limit)
    return min(limits) if limits else None


def _cpu_cgroup_dirs(cgroup_text, mountinfo_text):
    """(mount point, the process's cgroup directory under it, version) for the cpu
    controller: v1's cpu hierarchy and/or the v2 unified one."""
    paths = {}
    for line in cgroup_text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if controllers == "":
            paths.setdefault(2, path)
        elif "cpu" in controllers.split(","):
            paths.setdefault(1, path)
    found = []
    for line in mountinfo_text.splitlines():
        fields = line.split()
        if "-" not in fields:
            continue
        dash = fields.index("-")   # the optional fields before it vary in number
        if dash < 5 or len(fields) < dash + 4:
            continue
        root, mount_point = fields[3], fields[4]
        fstype, options = fields[dash + 1], fields[dash + 3].split(",")
        if fstype == "cgroup2" and 2 in paths:
            version = 2
        elif fstype == "cgroup" and "cpu" in options and 1 in paths:
            version = 1
        else:
            continue
        path = paths[version]
        # Inside a cgroup namespace or a bind mount, the mount shows the hierarchy
        # from `root` down; the process's path is given from the hierarchy's top.
        if root != "/" and (path == root or path.startswith(root.rstrip("/") + "/")):
            path = path[len(root.rstrip("/")):] or "/"
        elif root != "/":
            continue
        found.append((mount_point, path, version))
    return found


def _ancestors(mount_point, path):
    """The cgroup directory for path and each parent up to the mount point."""
    parts = [p for p in path.split("/") if p and p not in (".", "..")]
    for depth in range(len(parts), -1, -1):
        yield os.path.join(mount_point, *parts[:depth])


def _limit_at(directory, version, read):
    if version == 2:
        text = read(os.path.join(directory, "cpu.max"))
        if text is None:
            return None
        fields = text.split()
        if len(fields) != 2 or fields[0] == "max":
            return None
        return _ratio(fields[0], fields[1])
    quota = read(os.path.join(directory, "cpu.cfs_quota_us"))
    period = read(os.path.join(directory, "cpu.cfs_period_us"))
    if quota is None or period is None:
        return None
    return _ratio(quota.strip(), period.strip())


def _ratio(quota, period):
    try:
        quota, period = int(quota), int(period)
    except ValueError:
        return None
    if quota <= 0 or period <= 0:  # -1: no limit (v1)
        return None
    return quota / period


def _read(path):
    try:
        with open(path) as fh:
            return fh.read()
    except (OSError, UnicodeDecodeError):
        return None
