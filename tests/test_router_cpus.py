"""The CPUs the router counts on for its poll: the affinity mask, capped by a cgroup
CPU quota (v1 or v2, the tightest of the process's cgroup and its ancestors)."""

import os
import time
import uuid

import pytest

from gsmcpd.router import cpus
from gsmcpd.router.loop import Loop
from helpers import Client, Daemon

V2_ONLY = "0::/system.slice/gsmcpd@8000.service\n"
V2_MOUNT = "30 23 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n"
HYBRID = "4:memory:/x\n1:cpu,cpuacct:/work/job\n0::/\n"
HYBRID_MOUNTS = ("31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
                 "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:9 - cgroup cgroup rw,cpu,cpuacct\n"
                 "33 31 0:30 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset\n"
                 "40 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n")


def reader(files):
    return lambda path: files.get(path)


def test_v2_the_tightest_quota_of_the_cgroup_and_its_ancestors_wins():
    files = {"/sys/fs/cgroup/system.slice/gsmcpd@8000.service/cpu.max": "max 100000\n",
             "/sys/fs/cgroup/system.slice/cpu.max": "150000 100000\n",
             "/sys/fs/cgroup/cpu.max": "400000 100000\n"}
    assert cpus.cpu_quota(V2_ONLY, V2_MOUNT, reader(files)) == 1.5
    files["/sys/fs/cgroup/system.slice/gsmcpd@8000.service/cpu.max"] = "50000 100000\n"
    assert cpus.cpu_quota(V2_ONLY, V2_MOUNT, reader(files)) == 0.5


def test_v1_reads_the_cpu_hierarchy_where_it_is_mounted():
    files = {"/sys/fs/cgroup/cpu,cpuacct/work/job/cpu.cfs_quota_us": "-1\n",
             "/sys/fs/cgroup/cpu,cpuacct/work/job/cpu.cfs_period_us": "100000\n",
             "/sys/fs/cgroup/cpu,cpuacct/work/cpu.cfs_quota_us": "300000\n",
             "/sys/fs/cgroup/cpu,cpuacct/work/cpu.cfs_period_us": "100000\n",
             # the memory hierarchy's path is not the cpu one's: never read
             "/sys/fs/cgroup/unified/cpu.max": "max 100000\n"}
    assert cpus.cpu_quota(HYBRID, HYBRID_MOUNTS, reader(files)) == 3.0


def test_no_quota_anywhere_or_nothing_readable_is_none():
    unlimited = {"/sys/fs/cgroup/system.slice/gsmcpd@8000.service/cpu.max": "max 100000\n"}
    assert cpus.cpu_quota(V2_ONLY, V2_MOUNT, reader(unlimited)) is None
    assert cpus.cpu_quota(V2_ONLY, V2_MOUNT, reader({})) is None
    assert cpus.cpu_quota("", V2_MOUNT, reader(unlimited)) is None    # /proc unreadable
    assert cpus.cpu_quota(V2_ONLY, "", reader(unlimited)) is None
    no_cpu = "4:memory:/x\n3:cpuset:/\n"   # v1 without a cpu hierarchy, no v2 line
    assert cpus.cpu_quota(no_cpu, HYBRID_MOUNTS, reader({"/sys/fs/cgroup/cpuset/cpu.cfs_quota_us": "1"})) is None


@pytest.mark.parametrize("content", ["", "garbage\n", "100000\n", "abc 100000\n", "0 100000\n",
                                     "100000 0\n", "100000 100000 7\n", "-5 100000\n"])
def test_unexpected_contents_mean_no_quota(content):
    files = {"/sys/fs/cgroup/system.slice/gsmcpd@8000.service/cpu.max": content}
    assert cpus.cpu_quota(V2_ONLY, V2_MOUNT, reader(files)) is None


def test_malformed_proc_lines_are_skipped():
    cgroup = "nonsense\n" + V2_ONLY
    mounts = "short line\n1 2 3 - cgroup2\n" + V2_MOUNT
    files = {"/sys/fs/cgroup/cpu.max": "200000 100000"}
    assert cpus.cpu_quota(cgroup, mounts, reader(files)) == 2.0


def test_a_namespaced_mount_root_is_taken_off_the_path():
    # A container sees its cgroup mounted from /kubepods/pod1 down, while the process
    # path may still be given from the hierarchy's top.
    cgroup = "0::/kubepods/pod1/c1\n"
    mounts = "30 23 0:26 /kubepods/pod1 /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"
    files = {"/sys/fs/cgroup/c1/cpu.max": "max 100000", "/sys/fs/cgroup/cpu.max": "100000 100000"}
    assert cpus.cpu_quota(cgroup, mounts, reader(files)) == 1.0
    outside = "0::/elsewhere\n"
    assert cpus.cpu_quota(outside, mounts, reader(files)) is None


def test_usable_cpus_caps_the_affinity_mask_and_rounds_down(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    root = tmp_path / "cg"
    (root / "svc").mkdir(parents=True)
    proc_cgroup = tmp_path / "cgroup"
    proc_cgroup.write_text("0::/svc\n")
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text("30 23 0:26 / %s rw - cgroup2 cgroup2 rw\n" % root)
    args = (str(proc_cgroup), str(mountinfo))
    assert cpus.usable_cpus(*args) == (4, "the affinity mask")
    (root / "svc" / "cpu.max").write_text("250000 100000\n")
    assert cpus.usable_cpus(*args) == (2, "a cgroup CPU quota of 2.5")
    (root / "svc" / "cpu.max").write_text("50000 100000\n")
    assert cpus.usable_cpus(*args) == (1, "a cgroup CPU quota of 0.5")
    (root / "svc" / "cpu.max").write_text("800000 100000\n")   # more than the mask
    assert cpus.usable_cpus(*args) == (4, "the affinity mask")
    assert cpus.usable_cpus(str(tmp_path / "missing"), str(mountinfo)) == (4, "the affinity mask")


def test_one_cpu_to_count_on_turns_the_poll_off_and_the_log_says_why():
    loop = Loop(poll=0.0002, cpus=1)
    try:
        assert loop.poll == 0.0
        assert loop.describe_poll() == "router poll: off; 1 CPU to count on (given)"
    finally:
        loop.close()
    loop = Loop(poll=0.0002, cpus=2)
    try:
        assert loop.poll == 0.0002
        assert loop.describe_poll() == ("router poll: up to 200 us before sleeping while few calls are in "
                                        "flight; 2 CPUs to count on (given)")
    finally:
        loop.close()
    loop = Loop(poll=0.0, cpus=2)
    try:
        assert loop.describe_poll() == "router poll: off; GS_MCP_POLL_US is 0"
    finally:
        loop.close()


# -- end to end: the daemon in a cgroup with a quota -----------------------------------

def _writable_cpu_cgroup(name):
    """A new child cgroup limited to one CPU, as (directory, version), or None when no
    cpu hierarchy here can be written (not root, or a delegated tree without cpu)."""
    for mount_point, path, version in cpus._cpu_cgroup_dirs(cpus._read(cpus.PROC_CGROUP) or "",
                                                            cpus._read(cpus.PROC_MOUNTINFO) or ""):
        directory = os.path.join(mount_point, path.lstrip("/"), name)
        try:
            os.mkdir(directory)
        except OSError:
            continue
        try:
            if version == 2:
                with open(os.path.join(directory, "cpu.max"), "w") as fh:
                    fh.write("100000 100000")
            else:
                with open(os.path.join(directory, "cpu.cfs_period_us"), "w") as fh:
                    fh.write("100000")
                with open(os.path.join(directory, "cpu.cfs_quota_us"), "w") as fh:
                    fh.write("100000")
            return directory
        except OSError:
            os.rmdir(directory)
    return None


def _remove_cgroup(directory):
    parent_procs = os.path.join(os.path.dirname(directory), "cgroup.procs")
    deadline = time.monotonic() + 10
    while True:
        try:
            os.rmdir(directory)
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
        # stragglers (a worker still exiting) go back to the parent
        try:
            with open(os.path.join(directory, "cgroup.procs")) as fh:
                pids = fh.read().split()
            for pid in pids:
                with open(parent_procs, "w") as fh:
                    fh.write(pid)
        except OSError:
            pass
        time.sleep(0.1)


def test_a_daemon_under_a_one_cpu_quota_does_not_poll_and_serves(tmp_path):
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("the quota only shows against an affinity mask of 2 CPUs or more")
    cgroup = _writable_cpu_cgroup("gsmcpd-test-%s" % uuid.uuid4().hex[:8])
    if cgroup is None:
        pytest.skip("needs a writable cgroup cpu controller (root); CI runs as root")

    def join():
        with open(os.path.join(cgroup, "cgroup.procs"), "w") as fh:
            fh.write(str(os.getpid()))

    try:
        with Daemon(tmp_path, env={"GS_MCP_SPARE_WORKERS": "1"}, preexec=join) as daemon:
            client = Client(daemon.port)
            client.initialize()
            pong = client.call("ping")
            assert pong.status == 200 and pong.json()["result"] == {}
            assert client.tool("list_dictionaries")["content"]  # through its worker
            log = daemon.log_text()
        assert "router poll: off; 1 CPU to count on (a cgroup CPU quota of 1)" in log
    finally:
        _remove_cgroup(cgroup)


def test_a_daemon_without_a_quota_polls_with_its_affinity_mask(tmp_path):
    affinity = len(os.sched_getaffinity(0))
    if cpus.cpu_quota(cpus._read(cpus.PROC_CGROUP), cpus._read(cpus.PROC_MOUNTINFO)) is not None:
        pytest.skip("this test process runs under a CPU quota itself")
    with Daemon(tmp_path, env={"GS_MCP_SPARE_WORKERS": "1"}) as daemon:
        Client(daemon.port).initialize()
        log = daemon.log_text()
    if affinity > 1:
        assert ("router poll: up to 200 us before sleeping while few calls are in flight; "
                "%d CPUs to count on (the affinity mask)" % affinity) in log
    else:
        assert "router poll: off; 1 CPU to count on (the affinity mask)" in log
