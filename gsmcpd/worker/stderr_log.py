"""What the forkserver, the spawner and the workers log to their stderr: the daemon's log
file once `start` detached it (they share its fd 2), a terminal in the foreground. One
format, naming the process and the daemon it runs below, so that their warnings can be
told from the router's own lines in that file, and from another daemon's sharing it (a
detached serve hands its own processes' to its `start`: gsmcpd.readypipe)."""

import logging
import os
import re

# The pid of the daemon (its router) these processes run below: this module is imported
# first in the forkserver (its preload), the router's child; the spawner and the workers,
# its forks, inherit the value. Named in each line, it stays true of a process that has ended.
DAEMON = os.getppid()
FORMAT = "%(asctime)s gsmcpd-worker[%(process)d] of gsmcpd[" + str(DAEMON) + "] %(levelname)s %(message)s"
# A line of that format at WARNING or worse (the router's lines have the level third).
_WARNING_OR_WORSE = re.compile(r"\S+ \S+ gsmcpd-worker\[\d+\] of gsmcpd\[(\d+)\] (WARNING|ERROR|CRITICAL) (.*)")


def log_to(stream) -> None:
    """This process's records of WARNING and worse to `stream`, in FORMAT."""
    logging.basicConfig(level=logging.WARNING, stream=stream, force=True, format=FORMAT)


def warnings_in(text: str, daemon: int | None = None) -> list[tuple[str, str]]:
    """(level name, message) of each whole line of `text` (one ended by a newline) in
    FORMAT at WARNING or worse, written by a process running below `daemon` (None: any);
    a traceback's lines after its first are left to the log."""
    return [found.group(2, 3) for line in text.split("\n")[:-1]
            if (found := _WARNING_OR_WORSE.fullmatch(line)) and daemon in (None, int(found.group(1)))]
