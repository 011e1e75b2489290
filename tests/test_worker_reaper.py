"""The spawner's Sweeper: what a worker's code started ends with the worker; and a new
spawner's Orphans, the same for a dead spawner's workers, which the forkserver adopted."""

import contextlib
import errno
import os
import select
import signal
import subprocess
import sys

import pytest

from gsmcpd.worker import reaper
from helpers import REPO, pid_alive, wait_until

# Run in a process of its own: a Sweeper reaps and kills every child of its process.
# A "worker" leads its own group (as the spawner's do), with a chain of two sleepers in
# it; it then dies, or lives on for `end`. Prints how many of the chain one sweep (or an
# end given no time to wait) leaves alive.
SCENARIO = r"""
import os, select, signal, sys, time
from gsmcpd.worker import reaper
assert reaper.become_subreaper() is None
r, w = os.pipe()
worker = os.fork()
if worker == 0:
    os.setpgid(0, 0)
    if os.fork() == 0:
        if os.fork() == 0:
            os.write(w, b"%d\n" % os.getpid())
            time.sleep(60)
            os._exit(0)
        os.write(w, b"%d\n" % os.getpid())
        time.sleep(60)
        os._exit(0)
    time.sleep(60 if sys.argv[1] == "end" else 0.2)
    os._exit(0)
os.close(w)
chain = []
with os.fdopen(r) as lines:
    for _ in range(2):
        chain.append(int(lines.readline()))
pidfds = [os.pidfd_open(pid) for pid in chain]
sweeper = reaper.Sweeper()
sweeper.forked(worker)
if sys.argv[1] == "sweep":
    os.waitid(os.P_PID, worker, os.WEXITED | os.WNOWAIT)   # it has died: a zombie now
    sweeper.sweep()
else:
    wakeup, _ = os.pipe2(os.O_NONBLOCK)
    sweeper.end(wakeup, 0.0)
alive = [pidfd for pidfd in pidfds if not select.select([pidfd], [], [], 5)[0]]
for pid in chain:
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
print(len(alive))
"""


@pytest.mark.parametrize("how", ["sweep", "end"])
def test_a_workers_whole_group_ends_with_it_not_a_generation_at_a_time(how):
    # Killed a generation per sweep as each was adopted, a chain of hundreds (or a fork
    # bomb) took seconds to end, or outran the spawner's end and outlived the daemon.
    out = subprocess.run([sys.executable, "-c", SCENARIO, how], capture_output=True, text=True,
                         timeout=60, cwd=str(REPO))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "0"


# Lowers the soft descriptor limit to 64 and opens files until none is left (`held`).
FILL_TO_64 = """
resource.setrlimit(resource.RLIMIT_NOFILE, (64, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
held = []
try:
    while True:
        held.append(os.open(os.devnull, os.O_RDONLY))
except OSError:
    pass
"""


# A worker's end (gsmcpd.worker.main.end_process) in a process of its own, leading its
# group as a worker does: the code started a child out of the group, then lowered its soft
# descriptor limit and opened files up to it. Prints the child's pid, then ends.
FULL_SCENARIO = r"""
import os, resource, subprocess, sys
from gsmcpd.worker import main, reaper
assert reaper.become_subreaper() is None
lone = subprocess.Popen(["sleep", "300"], start_new_session=True, stdin=subprocess.DEVNULL,
                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(lone.pid, flush=True)
""" + FILL_TO_64 + """
main.end_process(0)
"""


def test_a_workers_end_at_its_descriptor_limit_still_kills_what_its_code_started():
    # Listing /proc raised EMFILE out of end_process: a traceback, exit status 1 in place of
    # the group kill, and the child left for the spawner's sweep (init's, here).
    ending = subprocess.Popen([sys.executable, "-c", FULL_SCENARIO], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, cwd=str(REPO), start_new_session=True)
    try:
        child = int(ending.stdout.readline())
        _, stderr = ending.communicate(timeout=60)
        assert ending.returncode == -signal.SIGKILL, stderr   # its own group kill, as every worker's end
        assert "Traceback" not in stderr
        assert wait_until(lambda: not pid_alive(child))
    finally:
        with contextlib.suppress(NameError, ProcessLookupError):
            os.kill(child, signal.SIGKILL)
        ending.kill()
        ending.communicate()


# A worker's end (gsmcpd.worker.main.end_process) in a process of its own: the code left
# shared memory behind, and a child that holds the resource tracker's pipe open. Prints
# whether the tracker outlived the other children, and whether the memory is still there.
TRACKER_SCENARIO = r"""
import os, select, time
from multiprocessing import shared_memory
from gsmcpd.worker import reaper
assert reaper.become_subreaper() is None
block = shared_memory.SharedMemory(create=True, size=4096)   # starts the tracker
holder = os.fork()                                           # inherits its pipe
if holder == 0:
    time.sleep(60)
    os._exit(0)
tracker = reaper.resource_tracker()
assert tracker is not None and tracker[0] != holder
reaper.kill_descendants(spare=tracker[0])
print(reaper.children(os.getpid()) == [tracker[0]])
reaper.let_tracker_clean(tracker, wait=10)
print(os.path.exists("/dev/shm/" + block.name))
"""


def test_a_workers_end_spares_the_resource_tracker_until_it_has_unlinked_what_the_code_left():
    # Killed with the rest, the tracker left the code's shared memory and semaphores in
    # /dev/shm (memory) for good.
    out = subprocess.run([sys.executable, "-c", TRACKER_SCENARIO], capture_output=True, text=True,
                         timeout=60, cwd=str(REPO))
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "False"], out


# A "worker" makes its temporary directory and a file in it, then dies (sweep) or lives
# on (end). Prints whether the directory is still there.
TMP_SCENARIO = r"""
import os, sys, time
from gsmcpd.worker import reaper
how, tmp = sys.argv[1:3]
r, w = os.pipe()
worker = os.fork()
if worker == 0:
    os.setpgid(0, 0)
    os.mkdir(tmp, 0o700)
    open(os.path.join(tmp, "left.tmp"), "w").close()
    os.write(w, b"made\n")
    time.sleep(60 if how == "end" else 0)
    os._exit(0)
os.close(w)
assert os.read(r, 5) == b"made\n"
sweeper = reaper.Sweeper()
sweeper.forked(worker, tmp)
if how == "sweep":
    os.waitid(os.P_PID, worker, os.WEXITED | os.WNOWAIT)
    sweeper.sweep()
    sweeper.remove_dirs()
else:
    wakeup, _ = os.pipe2(os.O_NONBLOCK)
    sweeper.end(wakeup, 1.0)
print(os.path.lexists(tmp))
"""


@pytest.mark.parametrize("how", ["sweep", "end"])
def test_a_workers_temporary_directory_goes_when_it_is_reaped_or_the_spawner_ends(tmp_path, how):
    # A worker ends with os._exit: its exit handlers, which would remove its temporary
    # files, never run, and a kill -9 runs nothing at all.
    tmp = tmp_path / "w.1"
    out = subprocess.run([sys.executable, "-c", TMP_SCENARIO, how, str(tmp)], capture_output=True,
                         text=True, cwd=str(REPO), timeout=30)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False"]


# A "worker" makes its temporary directory, then exits with status 7. Prints whether its
# status was taken after the sweep that reaped it, whether its directory was still there
# then, and whether it is after remove_dirs.
STATUS_FIRST_SCENARIO = r"""
import os, sys
from gsmcpd.worker import reaper
tmp = sys.argv[1]
r, w = os.pipe()
worker = os.fork()
if worker == 0:
    os.setpgid(0, 0)
    os.mkdir(tmp, 0o700)
    os.write(w, b"made\n")
    os._exit(7)
os.close(w)
assert os.read(r, 5) == b"made\n"
sweeper = reaper.Sweeper()
sweeper.forked(worker, tmp)
os.waitid(os.P_PID, worker, os.WEXITED | os.WNOWAIT)
sweeper.sweep()
print(sweeper.take_exits() == [(worker, 7)], os.path.lexists(tmp))
sweeper.remove_dirs()
print(os.path.lexists(tmp))
"""


def test_a_sweep_leaves_the_directories_of_the_workers_it_reaped_until_their_statuses_are_sent(tmp_path):
    # The spawner sent a dead worker's status only after the sweep had removed its
    # directory: one the code had filled with many files took longer than the router
    # waits for a status, and the client was told "worker N exited", not how it died.
    tmp = tmp_path / "w.1"
    out = subprocess.run([sys.executable, "-c", STATUS_FIRST_SCENARIO, str(tmp)], capture_output=True,
                         text=True, cwd=str(REPO), timeout=30)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "True", "False"]


@contextlib.contextmanager
def an_adopter():
    """A process playing the forkserver, with two `sleep` children: ((its pid, a pidfd of
    it), (their pids)). Everything is killed after."""
    adopter = subprocess.Popen([sys.executable, "-c", "import subprocess, time\n"
                                "children = [subprocess.Popen(['sleep', '60']) for _ in range(2)]\n"
                                "print(*(child.pid for child in children), flush=True)\n"
                                "time.sleep(60)\n"], stdout=subprocess.PIPE, text=True)
    pidfd = os.pidfd_open(adopter.pid)
    children = tuple(map(int, adopter.stdout.readline().split()))
    held = [os.pidfd_open(pid) for pid in children]   # its children till it ends: their pids are theirs
    try:
        yield (adopter.pid, pidfd), children
    finally:
        for child in held:
            signal.pidfd_send_signal(child, signal.SIGKILL)
            os.close(child)
        adopter.kill()
        adopter.wait()
        adopter.stdout.close()
        os.close(pidfd)


def close_all(pidfds):
    for pidfd in pidfds:
        os.close(pidfd)


def test_the_strays_of_an_adopter_are_killed_all_but_those_spared():
    with an_adopter() as (adopter, (spared, stray)):
        killed = reaper.kill_strays(adopter, {spared})
        close_all(killed)
        assert list(killed.values()) == [stray]
        assert wait_until(lambda: not pid_alive(stray))
        assert pid_alive(spared)


def test_no_stray_is_signalled_unless_it_is_the_adopters_child_while_the_adopter_lives(monkeypatch):
    # A pid listed as the adopter's child may be reaped and reused before its pidfd is
    # opened: the process it names then is signalled only if it is the adopter's child.
    with an_adopter() as (adopter, children):
        with monkeypatch.context() as patched:
            patched.setattr(reaper, "parent_of", lambda pid: None)
            assert reaper.kill_strays(adopter, set()) == {}
        # The adopter ended during the checks: its pid may have named another process then.
        with monkeypatch.context() as patched:
            patched.setattr(reaper, "has_ended", lambda pidfd: True)
            assert reaper.kill_strays(adopter, set()) == {}
        assert all(map(pid_alive, children))


def test_a_new_spawner_kills_what_a_dead_spawners_workers_leave_and_spares_the_live_ones():
    # The forkserver, adopter of a dead spawner's workers and of what each leaves as it
    # dies, reaps them but kills nothing: what a worker's code started outlived the worker.
    from gsmcpd.worker.spawner import Orphans

    with an_adopter() as ((pid, pidfd), (live, stray)):
        waiting = select.poll()
        orphans = Orphans(waiting, reaper.Sweeper(), None, (pid, os.dup(pidfd)))
        orphans.told(b"orphans -", [os.pidfd_open(live)], 0)    # a worker with no directory
        orphans.hunt()
        assert pid_alive(stray)          # not until the router has told every live worker
        orphans.told(b"sweep", [], 0)
        orphans.hunt()
        assert wait_until(lambda: not pid_alive(stray)) and pid_alive(live)
        orphans.ended({pidfd for pidfd, _ in waiting.poll(5000)})
        assert orphans.strays == {} and orphans.hunting   # what it left, adopted as it died, is next
        orphans.hunt()
        assert orphans.strays == {} and pid_alive(live)
        os.kill(live, signal.SIGKILL)                     # it ends: what it left is the next hunt's
        orphans.ended({pidfd for pidfd, _ in waiting.poll(5000)})
        assert orphans.live == {} and orphans.hunting
        orphans.close()


def test_a_hunt_or_a_sweep_out_of_descriptors_is_tried_again_and_the_spawner_goes_on(monkeypatch, caplog):
    # Reading /proc needs a descriptor: at RLIMIT_NOFILE, os.listdir("/proc") raised EMFILE
    # out of the spawner's loop, and the spawner died (a full run caught it: the first hunt,
    # told at adoption, met a test's lowered descriptor limit).
    from gsmcpd.worker.spawner import Orphans

    def out_of_descriptors(*_):
        raise OSError(errno.EMFILE, "Too many open files")

    monkeypatch.setattr(reaper, "SWEEP_RETRY", 0.3)
    sweeper = reaper.Sweeper()
    with an_adopter() as ((pid, pidfd), (first, second)):
        orphans = Orphans(select.poll(), sweeper, None, (pid, os.dup(pidfd)))
        with monkeypatch.context() as patched:
            patched.setattr(reaper, "children", out_of_descriptors)
            assert sweeper.sweep() == 0
            assert sweeper.pending and 0 < sweeper.due() <= reaper.SWEEP_RETRY
            orphans.told(b"sweep", [], 0)
            orphans.hunt()
            # Hunted again SWEEP_RETRY later (the spawner's poll waits for the sooner of the two).
            assert orphans.hunting and pid_alive(first)
            assert 0 < orphans.due() <= reaper.SWEEP_RETRY
        assert caplog.text.count("Too many open files") == 2
        reads = []
        with monkeypatch.context() as patched:
            patched.setattr(reaper, "children", lambda parent, read=reaper.children: reads.append(parent) or read(parent))
            orphans.hunt()       # a wake-up before then reads no /proc (it was one read a wake-up)
            assert reads == [] and orphans.hunting and pid_alive(first)
        assert wait_until(lambda: orphans.due() == 0)
        orphans.hunt()                                     # descriptors back: the strays go
        assert not orphans.hunting and orphans.due() is None
        assert wait_until(lambda: not pid_alive(first) and not pid_alive(second))
        assert "can look for what a dead spawner's workers left again" in caplog.text
        orphans.close()


def test_a_failed_hunt_no_longer_allowed_leaves_no_retry_due(monkeypatch):
    # A failed hunt sets a retry time; if hunts then stop (a garbled orphans message, then an
    # orphan's end), a retry still due at 0 would make the spawner's poll spin, hunting nothing.
    from gsmcpd.worker.spawner import Orphans

    def out_of_descriptors(*_):
        raise OSError(errno.EMFILE, "Too many open files")

    with an_adopter() as ((pid, pidfd), (live, stray)):
        waiting = select.poll()
        orphans = Orphans(waiting, reaper.Sweeper(), None, (pid, os.dup(pidfd)))
        orphans.told(b"orphans -", [os.pidfd_open(live)], 0)
        orphans.told(b"sweep", [], 0)
        with monkeypatch.context() as patched:
            patched.setattr(reaper, "children", out_of_descriptors)
            orphans.hunt()
        assert orphans.hunting and orphans.due() is not None
        orphans.told(b"orphans - -", [], 0)               # garbled: no hunt from now on
        os.kill(live, signal.SIGKILL)
        orphans.ended({fd for fd, _ in waiting.poll(5000)})
        assert not orphans.hunting and orphans.due() is None
        assert pid_alive(stray)
        orphans.close()


def test_a_shortage_of_descriptors_is_said_once_as_it_begins_and_once_as_it_ends(monkeypatch, caplog):
    # A sweep retried every second warned every second for as long as EMFILE lasted.
    def out_of_descriptors(*_):
        raise OSError(errno.EMFILE, "Too many open files")

    sweeper = reaper.Sweeper()
    with monkeypatch.context() as patched:
        patched.setattr(reaper, "children", out_of_descriptors)
        for _ in range(3):
            sweeper.sweep()
    assert caplog.text.count("cannot look for what ended workers left") == 1
    with monkeypatch.context() as patched:
        patched.setattr(reaper, "children", lambda parent: [])   # no child of this test's to kill
        for _ in range(2):
            sweeper.sweep()
    assert caplog.text.count("can look for what ended workers left again") == 1
    with monkeypatch.context() as patched:
        patched.setattr(reaper, "children", out_of_descriptors)
        sweeper.sweep()
    assert caplog.text.count("cannot look for what ended workers left") == 2   # a new shortage


# A spawner's end (Sweeper.end) in a process of its own, with a child not a worker, whose
# first look at /proc fails for want of descriptors. Prints whether the child has ended.
END_SHORT_SCENARIO = r"""
import errno, os, time
from gsmcpd.worker import reaper
child = os.fork()
if child == 0:
    os.dup2(os.open(os.devnull, os.O_RDWR), 1)   # not holding the test's pipes
    os.dup2(1, 2)
    time.sleep(60)
    os._exit(0)
pidfd = os.pidfd_open(child)
real, calls = reaper.children, []
def short_once(parent):
    calls.append(parent)
    if len(calls) == 1:
        raise OSError(errno.EMFILE, "Too many open files")
    return real(parent)
reaper.children = short_once
wakeup, _ = os.pipe2(os.O_NONBLOCK)
reaper.Sweeper().end(wakeup, 10.0)
print(reaper.has_ended(pidfd, 5))
"""


def test_a_spawners_end_short_of_descriptors_tries_again_until_its_wait_is_over():
    # EMFILE raised out of Sweeper.end: the spawner died with a traceback, its children left
    # to the forkserver's exit.
    out = subprocess.run([sys.executable, "-c", END_SHORT_SCENARIO], capture_output=True, text=True,
                         timeout=60, cwd=str(REPO))
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True"], out.stdout + out.stderr


# One process's stray (a child, the process its own adopter), looked for with one descriptor
# left: /proc is listed and the stray's pidfd opened, but its stat cannot be read. Prints
# what that hunt did, then what one with descriptors back does.
ONE_LEFT_SCENARIO = r"""
import os, resource, signal, time
from gsmcpd.worker import reaper
stray = os.fork()
if stray == 0:
    time.sleep(60)
    os._exit(0)
adopter = (os.getpid(), os.pidfd_open(os.getpid()))
""" + FILL_TO_64 + """
os.close(held.pop())
try:
    print("found", sorted(reaper.kill_strays(adopter, set()).values()))
except OSError as error:
    print("failed", error.errno)
for fd in held:
    os.close(fd)
print("found", list(reaper.kill_strays(adopter, set()).values()) == [stray])
os.kill(stray, signal.SIGKILL)
"""


def test_a_stray_whose_stat_cannot_be_read_for_want_of_descriptors_fails_the_hunt():
    # Taken for gone (procstat.fields said None), the stray was left and the hunt had
    # "succeeded": not tried again until some other process of the forkserver's ended.
    out = subprocess.run([sys.executable, "-c", ONE_LEFT_SCENARIO], capture_output=True, text=True,
                         timeout=60, cwd=str(REPO))
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == ["failed %d" % errno.EMFILE, "found True"], out.stdout


def test_a_stat_unread_for_want_of_descriptors_raises_only_when_strict(monkeypatch):
    from gsmcpd import procstat

    def out_of_descriptors(*_):
        raise OSError(errno.EMFILE, "Too many open files")

    monkeypatch.setattr(procstat, "open", out_of_descriptors, raising=False)
    assert procstat.fields(os.getpid()) is None
    with pytest.raises(OSError):
        procstat.fields(os.getpid(), strict=True)
    with pytest.raises(OSError):
        reaper.children(os.getpid())


# The spawner's hunt (Orphans) in a process of its own, playing the forkserver too: it has
# STRAYS children, more than the descriptors left to it (FILL_TO_64, then FREE given back).
# Hunts as the spawner's loop does until a hunt kills none; prints how many hunts killed
# some, then how many strays still live.
MANY_STRAYS_SCENARIO = r"""
import os, resource, select, signal, time
from gsmcpd.worker import reaper
from gsmcpd.worker.spawner import Orphans
STRAYS, FREE = 20, 4
strays = []
for _ in range(STRAYS):
    pid = os.fork()
    if pid == 0:
        os.dup2(os.open(os.devnull, os.O_RDWR), 1)   # not holding the test's pipes
        os.dup2(1, 2)
        time.sleep(60)
        os._exit(0)
    strays.append(pid)
adopter = (os.getpid(), os.pidfd_open(os.getpid()))
""" + FILL_TO_64 + """
for fd in held[-FREE:]:
    os.close(fd)
waiting = select.poll()
orphans = Orphans(waiting, reaper.Sweeper(), None, adopter)
orphans.told(b"sweep", [], 0)
killing = 0
while True:
    orphans.hunt()
    if not orphans.strays:
        break
    killing += 1
    while orphans.strays:   # every one of them ended: their descriptors are free again
        orphans.ended({fd for fd, _ in waiting.poll(5000)})
print(killing, sum(reaper.parent_of(pid) == os.getpid() for pid in strays))
for pid in strays:   # our children, unreaped: their pids are theirs
    os.kill(pid, signal.SIGKILL)
"""


def test_a_hunt_for_more_strays_than_descriptors_kills_them_a_batch_at_a_time():
    # A hunt opened a pidfd of every stray before it killed any: with more strays than
    # descriptors it failed (EMFILE) holding none killed, and so every second after, forever.
    out = subprocess.run([sys.executable, "-c", MANY_STRAYS_SCENARIO], capture_output=True, text=True,
                         timeout=60, cwd=str(REPO))
    assert out.returncode == 0, out.stderr
    batches, left = map(int, out.stdout.split())
    assert left == 0 and batches > 1, out.stdout
    assert "cannot look for" not in out.stderr


# A worker's end (kill_descendants) with more children than the descriptors left to it, as
# with a hard limit the code lowered and filled (end_process cannot lift it): the limit
# lowered and filled as FILL_TO_64 does, FREE given back. Prints how many children outlive it.
MANY_CHILDREN_SCENARIO = r"""
import os, resource, time
from gsmcpd.worker import reaper
assert reaper.become_subreaper() is None
CHILDREN, FREE = 20, 4
for _ in range(CHILDREN):
    if os.fork() == 0:
        os.setsid()    # out of the group: only kill_descendants can reach it
        time.sleep(60)
        os._exit(0)
""" + FILL_TO_64 + """
for fd in held[-FREE:]:
    os.close(fd)
reaper.kill_descendants(wait=30)
for fd in held[:-FREE]:
    os.close(fd)
left = reaper.children(os.getpid())
reaper.kill_descendants()
print(len(left))
"""


def test_a_workers_end_with_more_descendants_than_descriptors_kills_them_a_batch_at_a_time():
    # The end's round opened a pidfd of every child before it waited for any: at the limit
    # it gave up (a warning), the rest left to the spawner; the forkserver's exit, which
    # ends what is still below it the same way, left them to init.
    out = subprocess.run([sys.executable, "-c", MANY_CHILDREN_SCENARIO], capture_output=True, text=True,
                         timeout=90, cwd=str(REPO))
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["0"], out.stdout + out.stderr
    assert "cannot look for the processes below it" not in out.stderr


def test_a_killed_groups_processes_are_reaped_and_no_other_child():
    # The trial's way (gsmcpd.image.trial): its group killed, found while its leader is
    # not reaped, then reaped; a child outside the group, ended too, is left to its waiter.
    leader = subprocess.Popen(["sleep", "60"], process_group=0)
    member = subprocess.Popen(["sleep", "60"], process_group=leader.pid)
    mine = subprocess.Popen(["true"])
    assert wait_until(lambda: not pid_alive(mine.pid))
    os.killpg(leader.pid, signal.SIGKILL)
    found = reaper.open_group(leader.pid)
    assert len(found) == 1
    leader.wait()
    reaper.reap_those(found, 10)
    with pytest.raises(ChildProcessError):   # reaped: no longer a child of ours
        os.waitpid(member.pid, os.WNOHANG)
    member.returncode = -signal.SIGKILL
    assert mine.wait() == 0



def _closed(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError as error:
        return error.errno == errno.EBADF
    return False


def _killed_group(members: int):
    leader = subprocess.Popen(["sleep", "60"], process_group=0)
    group = [subprocess.Popen(["sleep", "60"], process_group=leader.pid) for _ in range(members)]
    os.killpg(leader.pid, signal.SIGKILL)
    return leader, group


def _reaped(leader, group):
    assert leader.wait() == -signal.SIGKILL
    for member in group:
        member.returncode = -signal.SIGKILL   # reaped by reap_those, or now
        with contextlib.suppress(ChildProcessError):
            os.waitpid(member.pid, 0)


def test_a_break_while_a_killed_group_is_found_leaves_no_pidfd_open(monkeypatch):
    # A soft break landing in open_group's scan left the pidfds it had opened open.
    leader, group = _killed_group(2)
    opened, real_open = [], reaper._open_pidfd

    def open_then_break(pid):
        if opened:
            raise KeyboardInterrupt
        opened.append(real_open(pid))
        return opened[-1]

    monkeypatch.setattr(reaper, "_open_pidfd", open_then_break)
    with pytest.raises(KeyboardInterrupt):
        reaper.open_group(leader.pid)
    assert len(opened) == 1 and _closed(opened[0])
    _reaped(leader, group)


def test_a_break_while_the_trial_is_reaped_leaves_no_pidfd_open(monkeypatch):
    # One landing in the trial's wait, between open_group and reap_those, left them all open.
    from gsmcpd.image import trial
    leader, group = _killed_group(2)
    found, real_group = [], reaper.open_group
    monkeypatch.setattr(reaper, "open_group", lambda pgid: found.extend(real_group(pgid)) or found)
    real_wait = leader.wait

    def break_once(*args, **kwargs):
        leader.wait = real_wait
        raise KeyboardInterrupt

    leader.wait = break_once
    with pytest.raises(KeyboardInterrupt):
        trial._end(leader)
    assert len(found) == 2 and all(map(_closed, found))
    _reaped(leader, group)
