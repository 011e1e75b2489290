"""gsmcpd.procstat: /proc/<pid>/stat's fields after comm, and the named ones of them."""

import ctypes
import os
import subprocess
import sys

import pytest

from gsmcpd import procstat

# A child that names itself like a trap for a split on spaces or on the first ")", says
# it has, and waits for its stdin to close.
ODD_NAME = "a) b (c )"
NAMED_CHILD = ("import sys\nopen('/proc/self/comm', 'w').write(%r)\nprint('named', flush=True)\n"
               "sys.stdin.read()\n" % ODD_NAME)


@pytest.fixture
def named_child():
    child = subprocess.Popen([sys.executable, "-c", NAMED_CHILD], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline() == "named\n"
    yield child
    child.stdin.close()
    child.wait(timeout=30)


def test_the_fields_start_after_the_last_parenthesis_of_comm_whatever_it_holds(named_child):
    with open(f"/proc/{named_child.pid}/comm", "rb") as comm:
        assert comm.read() == ODD_NAME.encode() + b"\n"
    stat = procstat.fields(named_child.pid)
    assert procstat.field(stat, 3) in (b"R", b"S")          # running, or asleep in its read
    assert procstat.ppid(stat) == os.getpid()
    assert not procstat.gone(stat)


def test_a_zombie_is_gone_and_a_reaped_process_or_no_process_has_no_fields():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # exited, not reaped: a zombie
    stat = procstat.fields(child.pid)
    assert procstat.field(stat, 3) == b"Z" and procstat.gone(stat)
    assert procstat.ppid(stat) == os.getpid()                # a zombie still names its parent
    child.wait()
    assert procstat.fields(child.pid) is None
    assert procstat.fields(0) is None and procstat.fields("not-a-pid") is None


def test_start_time_tells_a_process_from_a_later_one(named_child):
    mine = procstat.start_time(procstat.fields(os.getpid()))
    assert procstat.start_time(procstat.fields("self")) == mine      # "self" is this process
    assert procstat.start_time(procstat.fields(named_child.pid)) >= mine   # started after it
    # Field 22 is the one: clock ticks after boot, so no more than the uptime read after it.
    with open("/proc/uptime", "rb") as uptime:
        assert 0 < mine / os.sysconf("SC_CLK_TCK") <= float(uptime.read().split()[0])


def test_env_block_is_where_the_environment_placed_at_exec_lies():
    # /proc/self/environ is the kernel's read of that very range of our memory.
    start, end = procstat.env_block(procstat.fields("self"))
    with open("/proc/self/environ", "rb") as environ:
        assert ctypes.string_at(start, end - start) == environ.read()
