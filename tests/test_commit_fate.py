"""What the router tells a client whose call's worker died of the commits the call made:
whether a `commit` call's stands, what another call committed."""

import contextlib
import fcntl
import os

import pytest

from gsmcpd.image import store as store_module
from gsmcpd.image.store import READING_ON, ImageStore, sha256
from gsmcpd.router import commit_fate
from gsmcpd.router.loop import Loop
from gsmcpd.router.commit_fate import (COMMIT, MAY_COMMIT, NEVER_COMMITS, PATIENCE, committer, tell_when_known,
                                       told)

RECORD = {"id": "call7-0a1b", "session": "s", "files": [{"file": "bulk/m%03d.py" % n, "new": "h"} for n in range(5)]}


@contextlib.contextmanager
def image_lock_held(store):
    """The image's lock held exclusively, as another session's commit holds it."""
    holder = os.open(store.lock_file, os.O_RDONLY)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)
        yield
    finally:
        os.close(holder)


def tool_call(name):
    return {"method": "tools/call", "params": {"name": name, "arguments": {}}}


def test_a_tool_may_commit_unless_a_read_only_session_may_run_it():
    assert committer(tool_call("commit")) == COMMIT
    # execute_code reaches the view's commit; every mutation tool commits; a tool of
    # another toolset is not known never to.
    for name in ("execute_code", "compile_method", "define_class", "my_toolset_tool"):
        assert committer(tool_call(name)) == MAY_COMMIT
    for name in ("list_classes", "status", "refresh", "abort", "run_test_class"):
        assert committer(tool_call(name)) == NEVER_COMMITS
    assert committer(tool_call("execute_code"), read_only=True) == NEVER_COMMITS   # gated there
    assert committer({"method": "tools/list"}) is None
    assert committer({"method": "tools/call", "params": ["commit"]}) is None   # names no tool
    assert committer(["commit"]) is None


def test_a_commit_that_stands_names_its_journal_record_and_files():
    text, data = told([RECORD])
    assert text == ("; the commit it was making had passed its commit point, so it stands (journal record "
                    "call7-0a1b: bulk/m000.py, bulk/m001.py, bulk/m002.py and 2 more): every session reads it")
    assert data == {"commitStands": True, "journalRecord": "call7-0a1b",
                    "files": ["bulk/m%03d.py" % n for n in range(5)]}


def test_a_commit_short_of_its_commit_point_is_said_to_leave_nothing():
    text, data = told([])
    assert text == ("; the commit it was making had not reached its commit point, so nothing of it stands, "
                    "and the session's uncommitted changes went with it")
    assert data == {"commitStands": False}


def test_a_commit_whose_fate_could_not_be_told_says_why():
    text, data = told(None, "the image lock is held")
    assert text == ("; whether the commit it was making stands could not be told (the image lock is held): "
                    "a new session sees the image as it is")
    assert data == {"commitStands": None}


def test_a_record_of_a_foreign_shape_names_what_files_it_can():
    text, data = told([{"id": "call1-x", "files": ["junk", {"file": 3}, {"file": "a.py"}]}])
    assert "(journal record call1-x: a.py)" in text and data["files"] == ["a.py"]


def test_a_record_whose_files_are_no_list_is_told_standing_naming_none():
    # The journal is shared by the accounts sharing the image: a record found there may be
    # of any shape, and an error raised telling it left the call unanswered and the
    # session's end half done (SessionManager.end runs this before the rest of its cleanup).
    for files in (None, 5, {"file": "a.py"}):
        text, data = told([{"id": "call1-x", "files": files}])
        assert text.startswith("; the commit it was making had passed its commit point, so it stands "
                               "(journal record call1-x): ") and data["files"] == []
    text, _ = told([{"id": "call1-x"}])
    assert "(journal record call1-x)" in text


TWO = [{"id": "call7-0b", "files": [{"file": "b.py"}]}, {"id": "call7-0a", "files": [{"file": "a.py"}]}]


def test_another_call_that_committed_names_its_records_oldest_first_and_their_files():
    for kind in (MAY_COMMIT, NEVER_COMMITS):
        assert told(TWO, kind=kind) == (
            "; it had committed, and that stands (every session reads it): journal records call7-0a, "
            "call7-0b: a.py, b.py", {"committed": True, "journalRecords": ["call7-0a", "call7-0b"],
                                     "files": ["a.py", "b.py"]})
    text, data = told([RECORD], kind=MAY_COMMIT)
    assert text.endswith("journal record call7-0a1b: bulk/m000.py, bulk/m001.py, bulk/m002.py and 2 more")


def test_another_call_that_committed_nothing_is_told_nothing_more():
    # execute_code that never committed: not a word of commits, which would confuse its user.
    assert told([], kind=MAY_COMMIT) == told([], kind=NEVER_COMMITS) == ("", {})


def test_that_it_could_not_be_told_is_said_only_to_a_call_that_may_commit():
    assert told(None, "the image lock is held", MAY_COMMIT) == (
        "; whether it had committed could not be told (the image lock is held): a new session sees the "
        "image as it is", {"committed": None})
    assert told(None, "the image lock is held", NEVER_COMMITS) == ("", {})


class ManualLoop:
    """The loop's clock and timers, moved by hand."""

    def __init__(self):
        self.now, self.timers = 0.0, []

    def call_later(self, delay, callback):
        self.timers.append((self.now + delay, callback))

    def call_soon(self, callback):   # the next pass
        self.timers.append((self.now, callback))

    def run_next(self):
        (self.now, callback), *self.timers = self.timers
        callback()


def committed_pending(tmp_path, seq):
    """An image whose session "s" made a commit in call `seq` that was killed past its commit point."""
    store = ImageStore(tmp_path)
    (tmp_path / "a.py").write_text("a = 1\n")
    real_replace = store_module.os.replace

    def replace(src, dst, **kwargs):
        if not str(dst).endswith("commit.intent"):
            raise OSError("killed")
        return real_replace(src, dst, **kwargs)

    store_module.os.replace = replace
    try:
        with pytest.raises(store_module.CommitPending):
            store.commit({"a.py": b"a = 2\n"}, {"a.py": sha256(b"a = 1\n")}, user="u", session_id="s",
                         commit_id=store_module.call_tag(seq) + "0a")
    finally:
        store_module.os.replace = real_replace
    return store


def test_while_the_lock_is_held_the_answer_waits_until_it_can_be_told(tmp_path):
    # The router can see the dead worker's socket close before its lock goes: it looks again.
    store = committed_pending(tmp_path, 1)
    loop, answers = ManualLoop(), []
    with image_lock_held(store):
        tell_when_known(loop, str(tmp_path), "s", 2, COMMIT, lambda *told: answers.append(told))
        assert answers == [] and loop.timers
        loop.run_next()
        assert answers == []
    loop.run_next()
    assert answers == [told([])] and not loop.timers


def test_looked_at_again_while_the_lock_is_held_an_unchanged_journal_is_read_back_once(tmp_path, monkeypatch):
    # Each look runs on the router's loop, every other session waiting, and reads the
    # journal back up to CALL_SCAN_LIMIT (4 MiB): looked at again, it is read only if it changed.
    (tmp_path / "a.py").write_text("")
    ImageStore(tmp_path).commit({"a.py": b"a = 1\n"}, {"a.py": sha256(b"")}, user="u", session_id="other")
    reads, read_back = [], ImageStore._records_from_end
    monkeypatch.setattr(ImageStore, "_records_from_end",
                        lambda self, **scan: reads.append(scan) or read_back(self, **scan))
    loop, answers = ManualLoop(), []
    with image_lock_held(ImageStore(tmp_path)):
        tell_when_known(loop, str(tmp_path), "s", 1, COMMIT, lambda *told: answers.append(told))
        for _ in range(3):
            loop.run_next()
        assert answers == [] and len(reads) == 1
    loop.run_next()
    assert answers == [told([])] and len(reads) == 1


def test_a_look_reads_the_journal_back_over_passes_of_the_loop_and_answers_as_at_once(tmp_path, monkeypatch):
    # No pass reads more than SCAN_STEP: the loop goes on with other sessions between them.
    # A call that never commits is looked for once, though over passes: a record found is told.
    monkeypatch.setattr(commit_fate, "SCAN_STEP", 65536)
    (tmp_path / "a.py").write_text("")
    store = ImageStore(tmp_path)
    store.commit({"a.py": b"a = 1\n"}, {"a.py": sha256(b"")}, user="u", session_id="s",
                 commit_id=store_module.call_tag(3) + "0a")
    with open(store.journal_file, "ab") as journal:   # others' commits since: about 300 KB
        journal.write(b"".join(b'{"id": "call1-%d", "session": "other", "pad": "%s"}\n' % (n, b"x" * 300)
                               for n in range(1000)))
    for kind in (COMMIT, MAY_COMMIT, NEVER_COMMITS):
        loop, answers = ManualLoop(), []
        tell_when_known(loop, str(tmp_path), "s", 3, kind, lambda *told: answers.append(told))
        passes = 1
        while loop.timers:
            assert loop.timers[0][0] == loop.now and answers == []   # the next pass, at once
            loop.run_next()
            passes += 1
        assert answers == [told(store.commits_of_call("s", 3), kind=kind)] and passes >= 5
        assert answers[0][1]["commitStands" if kind == COMMIT else "committed"] is True


def test_on_the_routers_loop_a_look_reading_on_goes_on_at_its_next_pass(tmp_path, monkeypatch):
    # Armed at a delay of 0, the next step fell due in the pass it was armed in (the loop's
    # clock is read once a pass): the whole journal was read back in one pass, every
    # other session waiting.
    looks = []

    def step(store, session_id, seq):
        looks.append(passes)
        return (READING_ON, None) if len(looks) < 5 else ([], None)

    monkeypatch.setattr(commit_fate, "commits_of_call", step)
    loop, answers, passes = Loop(), [], 0
    try:   # as the router tells a death: from a callback of the loop's
        loop.call_soon(lambda: tell_when_known(loop, str(tmp_path), "s", 1, COMMIT,
                                               lambda *told: answers.append(told)))
        while not answers and passes < 20:
            loop._run_once()
            passes += 1
    finally:
        loop.close()
    assert looks == [0, 1, 2, 3, 4] and answers == [told([])]


def test_a_commit_found_standing_is_told_at_once_though_the_lock_is_held(tmp_path):
    store = committed_pending(tmp_path, 1)
    loop, answers = ManualLoop(), []
    with image_lock_held(store):
        tell_when_known(loop, str(tmp_path), "s", 1, COMMIT, lambda *told: answers.append(told))
    assert answers[0][1]["commitStands"] is True and not loop.timers


def test_a_lock_held_past_the_patience_is_told_as_not_known(tmp_path):
    store = committed_pending(tmp_path, 1)
    loop, answers = ManualLoop(), []
    with image_lock_held(store):
        tell_when_known(loop, str(tmp_path), "s", 2, COMMIT, lambda *told: answers.append(told))
        while loop.timers:
            loop.run_next()
    assert loop.now >= PATIENCE
    assert answers == [told(None, "the image lock stayed held by another commit, or the journal is too "
                                  "long to read back here")]


def test_the_patience_counts_from_the_death_not_from_when_the_exit_status_came(tmp_path):
    # Counted from the status's arrival, up to exit_status.PATIENCE after the death, a stop
    # would wait longer for a worker dying in its grace than DEATH_TOLD.
    store = committed_pending(tmp_path, 1)
    loop, answers = ManualLoop(), []
    loop.now = 10.0
    with image_lock_held(store):
        tell_when_known(loop, str(tmp_path), "s", 2, COMMIT, lambda *told: answers.append(told), since=9.8)
        while loop.timers:
            loop.run_next()
    assert 9.8 + PATIENCE <= loop.now < 10.0 + PATIENCE
    assert answers[0][1] == {"commitStands": None}


def test_a_call_that_never_commits_is_looked_up_once_and_told_nothing_while_the_lock_is_held(tmp_path):
    store = committed_pending(tmp_path, 1)
    loop, answers = ManualLoop(), []
    with image_lock_held(store):
        tell_when_known(loop, str(tmp_path), "s", 2, NEVER_COMMITS, lambda *told: answers.append(told))
    assert answers == [("", {})] and not loop.timers


def test_a_call_that_may_commit_is_told_what_it_committed(tmp_path):
    committed_pending(tmp_path, 3)
    loop, answers = ManualLoop(), []
    tell_when_known(loop, str(tmp_path), "s", 3, MAY_COMMIT, lambda *told: answers.append(told))
    [(text, data)] = answers
    assert text.startswith("; it had committed, and that stands") and text.endswith(": a.py")
    assert data["committed"] is True and data["files"] == ["a.py"]


def test_a_lookup_that_fails_unforeseen_is_told_as_not_known(tmp_path, monkeypatch):
    # The call must still be answered: a graceful stop waits for it (router.shutdown).
    def broken(self, session_id, seq):
        raise TypeError("a record of no known shape")
    monkeypatch.setattr(ImageStore, "commits_of_call", broken)
    loop, answers = ManualLoop(), []
    tell_when_known(loop, str(tmp_path), "s", 1, COMMIT, lambda *told: answers.append(told))
    while loop.timers:
        loop.run_next()
    assert answers == [told(None, "TypeError: a record of no known shape")]
