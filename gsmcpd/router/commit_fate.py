"""What a client is told of the commit its `commit` call was making when the session's
worker died in it (kill -9, the OOM killer): whether the commit stands.

The worker cannot say it, as it does for a deadline's or a cancel's break, so the router
asks the image: a commit stands once its record is in the commit intent or the journal
(its commit point), found by the session's id and the call's tag (store.call_tag). Asked
on the loop, without waiting for the image lock and with the journal read back a bounded
length (ImageStore.commits_of_call), again every RETRY while that cannot tell, for at most
PATIENCE: the router can see the dead worker's socket close before its image lock goes.
What cannot be told then is said so.
"""

from gsmcpd.image.store import ImageStore, record_entries

RETRY = 0.01      # seconds between looks while it cannot be told
# How long after the death: the dead worker's lock goes within microseconds; another
# session's commit may hold it longer, and finishes this one first if it is pending.
PATIENCE = 0.5

FILES_SHOWN = 3   # named in the message; the error's data has them all


def is_commit_call(message) -> bool:
    """Whether a request is a call of the `commit` tool."""
    if not isinstance(message, dict) or message.get("method") != "tools/call":
        return False
    params = message.get("params")
    return isinstance(params, dict) and params.get("name") == "commit"


def commits_of_call(image, session_id, seq):
    """(records, why): the records of the commits that stand of the session's call `seq`
    (store.ImageStore.commits_of_call); records None if that could not be told, and `why`."""
    try:
        records = ImageStore(image).commits_of_call(session_id, seq)
    except (OSError, ValueError) as error:   # ValueError: an intent not of a commit's shape
        return None, str(error)
    return records, None if records is not None else (
        "the image lock stayed held by another commit, or the journal is too long to read back here")


def tell_when_known(loop, image, session_id, seq, answer):
    """Call answer(text, data) (see told) once whether the commit of session `session_id`'s
    call `seq` stands is known, or PATIENCE has passed: looked for now, then every RETRY."""
    deadline = loop.time() + PATIENCE

    def look():
        records, why = commits_of_call(image, session_id, seq)
        if records is None and loop.time() < deadline:
            loop.call_later(RETRY, look)
        else:
            answer(*told(records, why))

    look()


def told(records, why=None):
    """(text, data) for the error of a commit call whose worker died: what follows "session
    ended: worker N ..." (how it ended: gsmcpd.wire.worker_exit), and the error's data.
    `records`: the call's commit records that stand (last first), [] for none, None if that
    could not be told (`why`)."""
    if records is None:
        return ("; whether the commit it was making stands could not be told (%s): a new session "
                "sees the image as it is" % why, {"commitStands": None})
    if not records:
        return ("; the commit it was making had not reached its commit point, so nothing of it "
                "stands, and the session's uncommitted changes went with it", {"commitStands": False})
    files = sorted({entry["file"] for record in records for entry in record_entries(record)})
    shown = ", ".join(files[:FILES_SHOWN])
    if len(files) > FILES_SHOWN:
        shown += " and %d more" % (len(files) - FILES_SHOWN)
    record_id = records[0].get("id")
    return ("; the commit it was making had passed its commit point, so it stands (journal record %s%s): "
            "every session reads it" % (record_id, ": " + shown if shown else ""),
            {"commitStands": True, "journalRecord": record_id, "files": files})
