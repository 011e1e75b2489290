"""What test_worker_process's forkserver children run: worker_main.run as the spawner
starts it, or started as a test needs. Kept apart from the test module because a child
imports the module its target is in, and the test module brings pytest (about 0.1 s a
worker); this one brings only what the forkserver has preloaded."""

import os
import signal

from gsmcpd.worker import main as worker_main


def run_as_spawned(sock, router_pid):
    """worker_main.run with SIGINT Python's default, as the spawner starts it
    (spawner._worker): the forkserver otherwise passes on the disposition this test run
    inherited, ignored when it is a background job of a script."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    worker_main.run(sock, router_pid)


def run_with_sigint_ignored(sock, router_pid):
    """worker_main.run in a process that inherited SIGINT ignored (the forkserver passes on
    the disposition of whoever started it: a script's background job, a test run so)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    worker_main.run(sock, router_pid)


def run_without_pidfds(sock, router_pid):
    """worker_main.run as on a kernel without pidfds, the router's pid checked every 0.3 s."""
    del os.pidfd_open
    worker_main.WATCHDOG_INTERVAL = 0.3
    worker_main.run(sock, router_pid)


def run_under_a_data_limit(sock, router_pid):
    """worker_main.run as the spawner starts it under GS_MCP_WORKER_MEMORY=128MiB."""
    import resource
    resource.setrlimit(resource.RLIMIT_DATA, (128 << 20, 128 << 20))
    worker_main.run(sock, router_pid)


def _held(reached, release):
    """Touch `reached`, then wait until the test touches `release` (at most 20 s)."""
    import time
    open(reached, "w").close()
    end = time.monotonic() + 20
    while not os.path.exists(release) and time.monotonic() < end:
        time.sleep(0.01)


def run_with_its_view_read_held(reading, release, sock, router_pid, read=None, resume=None):
    """worker_main.run whose view read, once begun, touches `reading` and waits until the
    test touches `release` (at most 20 s): a read as slow as a big image's, which the test
    ends when it has sent what it wants to land meanwhile. Each break's handler, once run,
    touches `reading` + ".broken". With `read` and `resume`: held again as the read is
    over (the loop's own part done, the call not yet started), touching `read`, until
    `resume`."""
    from gsmcpd.image.view import View
    real_load, real_handler = View.load, worker_main.WorkerLoop.break_handler
    real_read_view = worker_main.WorkerLoop._read_view

    def noted_handler(loop, exception_class, label):
        handle = real_handler(loop, exception_class, label)

        def on_signal(signum, frame):
            try:
                return handle(signum, frame)
            finally:
                open(reading + ".broken", "w").close()
        return on_signal

    def held_load(view, *args, **kwargs):
        _held(reading, release)
        return real_load(view, *args, **kwargs)

    def held_after_read(loop, *args, **kwargs):
        unread = loop._unread_view is not None
        real_read_view(loop, *args, **kwargs)
        if unread:
            _held(read, resume)

    View.load, worker_main.WorkerLoop.break_handler = held_load, noted_handler
    if read is not None:
        worker_main.WorkerLoop._read_view = held_after_read
    run_as_spawned(sock, router_pid)
