"""Run at the start of each Python process with this directory on its PYTHONPATH, as the
daemons a module's tests start under conftest's daemons_fsync_skipped (and the forkserver
and workers they start): os.fsync is made a check of its descriptor alone. What a commit
leaves is the same but after a power cut, which no test makes, and a busy disk made every
test wait on each of a commit's flushes. conftest's fsync_skipped does it in the test's
own process."""

import os


def fsync_checked(fd):
    os.fstat(fd if isinstance(fd, int) else fd.fileno())   # EBADF, as fsync would say


if __name__ == "sitecustomize":   # imported by conftest for fsync_checked alone
    os.fsync = fsync_checked
