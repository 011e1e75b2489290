"""Time the router's look-up of a dead worker's call in the journal (ImageStore.commits_of_call).

    python -m bench.call_lookup [--repeats 50]

The router asks it on its single-threaded loop (router/commit_fate.py): a look reads the
journal back commit_fate.SCAN_STEP bytes a pass of the loop, every session waiting while a
pass runs, and is made again every commit_fate.RETRY for up to commit_fate.PATIENCE while
the answer cannot be told, reading the journal again only if it changed. Timed here: a look
all at once (a store without a step), the longest pass of a stepped look, and a look again.
The worst case is a journal the look reads back to its bound (store.CALL_SCAN_LIMIT) of
other sessions' commits: the session's record absent (none found: cannot be told, looked
again), or a record of the session's just within the bound, found or ending the scan. The
journal is read once first, so it is in the page cache, as one commits just appended to
is. Times are the thread's CPU time: what the loop itself spends, another process taking
the CPU meanwhile (a shared machine) left out. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import secrets
import statistics
import tempfile
import time
from pathlib import Path

from gsmcpd.image import store as store_module
from gsmcpd.image.store import ImageStore, call_tag
from gsmcpd.router import commit_fate

SID = secrets.token_hex(16)


def _record(session, seq, files):
    """A journal line as a commit writes it (store.ImageStore.commit's record)."""
    return (json.dumps({"id": call_tag(seq) + secrets.token_hex(8), "time": "2026-12-01T17:20:00Z",
                        "user": "someone", "session": session,
                        "files": [{"file": f"pkg/module_{n}.py", "old": secrets.token_hex(32),
                                   "new": secrets.token_hex(32)} for n in range(files)]},
                       sort_keys=True) + "\n").encode()


def _journal(root: Path, ours: bytes | None) -> int:
    """Write root's journal: others' records past CALL_SCAN_LIMIT, and `ours` (a line of
    SID's, or none) among them, about 4 KiB short of the bound from the end: how many records."""
    state = root / store_module.STATE_DIR
    state.mkdir(parents=True, exist_ok=True)
    lines, size = [], 0
    while size < store_module.CALL_SCAN_LIMIT + 65536:
        lines.append(_record(secrets.token_hex(16), len(lines) % 50 + 1, 1 + len(lines) % 3))
        size += len(lines[-1])
    if ours is not None:
        at, behind = len(lines), 0
        while behind + len(lines[at - 1]) < store_module.CALL_SCAN_LIMIT - 4096:
            at -= 1
            behind += len(lines[at])
        lines.insert(at, ours)
    (state / store_module.JOURNAL_NAME).write_bytes(b"".join(lines))
    return len(lines)


def _median_and_max(times):
    return f"{statistics.median(times) * 1000:.2f} ms (max {max(times) * 1000:.2f})"


def _passes(store):
    """(answer, seconds of each pass) of one look as commit_fate makes it: commits_of_call
    asked again at the loop's next pass while it answers READING_ON."""
    passes = []
    while True:
        start = time.thread_time()
        answer = store.commits_of_call(SID, 2)
        passes.append(time.thread_time() - start)
        if answer is not store_module.READING_ON:
            return answer, passes


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bench.call_lookup", description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=50)
    args = parser.parse_args(argv)
    cases = [("its record absent", None),
             ("its earlier call's record near the far end", _record(SID, 1, 1)),
             ("this call's record near the far end", _record(SID, 2, 1))]
    print(f"journal: others' records past CALL_SCAN_LIMIT ({store_module.CALL_SCAN_LIMIT} bytes); "
          f"a look read back {commit_fate.SCAN_STEP} bytes a pass; looked again every "
          f"{commit_fate.RETRY * 1000:.0f} ms for {commit_fate.PATIENCE * 1000:.0f} ms while it cannot be told")
    for name, ours in cases:
        with tempfile.TemporaryDirectory() as tmp:
            count = _journal(Path(tmp), ours)
            ImageStore(tmp).commits_of_call(SID, 2)   # warm: page cache, imports
            whole, longest, looks_again = [], [], []
            for _ in range(args.repeats):
                start = time.thread_time()
                ImageStore(tmp).commits_of_call(SID, 2)   # all at once
                whole.append(time.thread_time() - start)
                store = ImageStore(tmp, call_scan_step=commit_fate.SCAN_STEP)
                answer, passes = _passes(store)
                longest.append(max(passes))
                looks_again.append(max(_passes(store)[1]))
        told = "None" if answer is None else f"{len(answer)} record(s)"
        line = (f"{name} ({count} records): answer {told}; all at once {_median_and_max(whole)}; "
                f"in {len(passes)} passes, the longest {_median_and_max(longest)}")
        if answer is None:   # looked again, of the same store (commit_fate.tell_when_known)
            again = statistics.median(looks_again)
            looks = 1 + int(commit_fate.PATIENCE / (commit_fate.RETRY + again))
            line += (f"; a look again {_median_and_max(looks_again)}; {looks} looks in all, "
                     f"{(sum(passes) + (looks - 1) * again) * 1000:.1f} ms of the loop")
        print(line)


if __name__ == "__main__":
    main()
