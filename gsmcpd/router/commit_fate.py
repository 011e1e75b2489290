"""What a client is told of the commits its call made when the session's worker died in it
(kill -9, the OOM killer): whether they stand.

The worker cannot say it, as it does for a deadline's or a cancel's break, so the router
asks the image: a commit stands once its record is in the commit intent or the journal
(its commit point), found by the session's id and the call's tag (store.call_tag). Asked
on the loop, without waiting for the image lock and with the journal read back a bounded
length (ImageStore.commits_of_call), SCAN_STEP bytes a pass of the loop; again every RETRY
while that cannot tell, for at most PATIENCE (the journal read again only if it changed):
the router can see the dead worker's socket close before its image lock goes.

Any tool's call is looked up, but told by what it does: a `commit` call always hears
whether its commit stands; a call that may commit (execute_code, a mutation tool, another
toolset's tool) hears what it committed, or that this could not be told; a call that never
commits is looked up once and hears only of a commit found, which it cannot have made.
"""

import functools

from gsmcpd.image.store import READING_ON, ImageStore, record_entries
from gsmcpd.raised import raised
from gsmcpd.worker.toolsets import CORE_READ_ONLY_SAFE

RETRY = 0.01      # seconds between looks while it cannot be told
# How long after the death: the dead worker's lock goes within microseconds; another
# session's commit may hold it longer, and finishes this one first if it is pending.
PATIENCE = 0.5
# How much of the journal a look reads back in one pass of the loop (ImageStore's
# call_scan_step), the rest in the next passes: every other session waits while a pass
# runs, and the whole, CALL_SCAN_LIMIT, takes milliseconds (figures: docs/internals.md).
SCAN_STEP = 512 * 1024

FILES_SHOWN = 3   # named in the message; the error's data has them all

# How a call may commit (committer).
COMMIT = "commit"               # the `commit` tool
MAY_COMMIT = "may commit"       # execute_code (the view's commit), a mutation tool, an unknown tool
NEVER_COMMITS = "never commits"  # a core tool safe in read-only mode, any tool of a read-only session


def committer(message, read_only=False):
    """How the tools/call request `message` may commit (COMMIT, MAY_COMMIT, NEVER_COMMITS),
    None for another request (it runs no tool). What a read-only session may run is, by that
    mode's audit (toolsets.CORE_READ_ONLY_SAFE), what writes nothing; any other tool may commit."""
    if not isinstance(message, dict) or message.get("method") != "tools/call":
        return None
    params = message.get("params")
    name = params.get("name") if isinstance(params, dict) else None
    if not isinstance(name, str):
        return None
    if read_only or name in CORE_READ_ONLY_SAFE:
        return NEVER_COMMITS
    return COMMIT if name == "commit" else MAY_COMMIT


def commits_of_call(store, session_id, seq):
    """(records, why): the records of the commits that stand of the session's call `seq`
    (store.ImageStore.commits_of_call of `store()`, the image's store); records None if that
    could not be told, and `why`; READING_ON while the journal is still being read back."""
    try:
        records = store().commits_of_call(session_id, seq)
    except (OSError, ValueError) as error:   # ValueError: an intent not of a commit's shape
        return None, str(error)
    except Exception as error:   # the call must be answered, and a stop waits for it
        return None, raised(error)
    return records, None if records is not None else (
        "the image lock stayed held by another commit, or the journal is too long to read back here")


def tell_when_known(loop, image, session_id, seq, kind, answer, since=None):
    """Call answer(text, data) (see told) once the commits of session `session_id`'s call
    `seq`, a call of `kind` (committer), are known, or PATIENCE has passed since the death
    (`since`, loop time; None: now): looked for now, then every RETRY, a look going on over
    the loop's next passes while it reads the journal back (SCAN_STEP); a call that never
    commits is looked for once. From the death, not from when its exit status came (up to
    exit_status.PATIENCE later; one that came after PATIENCE leaves one look): a stop waits
    for the telling at most DEATH_TOLD."""
    deadline = (loop.now if since is None else since) + (0 if kind == NEVER_COMMITS else PATIENCE)
    # One store for every look: it reads the journal a step at a time, and looked at again,
    # only if it changed.
    store = functools.cache(lambda: ImageStore(image, call_scan_step=SCAN_STEP))

    def look():
        records, why = commits_of_call(store, session_id, seq)
        if records is READING_ON:   # the rest at the loop's next pass, the deadline passed or not
            # Not a timer: one due now, armed as timers fire, fires in the same pass (the
            # loop's clock is read once a pass), and the pass read the whole journal back.
            loop.call_soon(look)
        elif records is None and loop.now < deadline:
            loop.call_later(RETRY, look)
        else:
            answer(*told(records, why, kind))

    look()


def told(records, why=None, kind=COMMIT):
    """(text, data) for the error of a call of `kind` (committer) whose worker died: what
    follows "session ended: worker N ..." (how it ended: gsmcpd.wire.worker_exit), and what
    the error's data adds; ("", {}) when there is nothing to say. `records`: the call's
    commit records that stand (last first), [] for none, None if that could not be told (`why`)."""
    if kind != COMMIT:
        if records:
            ids = [record.get("id") for record in reversed(records)]
            return ("; it had committed, and that stands (every session reads it): journal record%s %s%s"
                    % ("s" if len(ids) > 1 else "", ", ".join(map(str, ids)), _shown(records)),
                    {"committed": True, "journalRecords": ids, "files": _files(records)})
        if records is None and kind == MAY_COMMIT:
            return ("; whether it had committed could not be told (%s): a new session sees the image "
                    "as it is" % why, {"committed": None})
        return "", {}
    if records is None:
        return ("; whether the commit it was making stands could not be told (%s): a new session "
                "sees the image as it is" % why, {"commitStands": None})
    if not records:
        return ("; the commit it was making had not reached its commit point, so nothing of it "
                "stands, and the session's uncommitted changes went with it", {"commitStands": False})
    record_id = records[0].get("id")
    return ("; the commit it was making had passed its commit point, so it stands (journal record %s%s): "
            "every session reads it" % (record_id, _shown(records)),
            {"commitStands": True, "journalRecord": record_id, "files": _files(records)})


def _files(records):
    return sorted({entry["file"] for record in records for entry in record_entries(record)})


def _shown(records):
    """': a.py, b.py, c.py and 2 more' of the records' files, '' for none."""
    files = _files(records)
    shown = ", ".join(files[:FILES_SHOWN])
    if len(files) > FILES_SHOWN:
        shown += " and %d more" % (len(files) - FILES_SHOWN)
    return ": " + shown if shown else ""
