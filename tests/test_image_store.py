"""The committed image: atomic commits, conflicts, the journal, crash safety, the default image."""

import ast
import contextlib
import errno
import json
import os
import posixpath
import re
import signal
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gsmcpd.accounts import account_name, group_name

from gsmcpd.image import store as store_module
from gsmcpd.image.default import EXAMPLE_FILES, ensure_default_image
from gsmcpd.image.dirfd import ImageDirs
from gsmcpd.image.store import CommitConflict, ImageStore, _intent_shape_problem, module_name_of, sha256
from helpers import (as_account, exclusive_lock_free, nested_packages, remove_tree, steady_descriptors,
                     too_long_tree, unwritable_dir, wait_until)

REPO = Path(__file__).resolve().parent.parent

# What a commit leaves, not its flushes to disk (but where a test wraps them): conftest.
pytestmark = pytest.mark.usefixtures("fsync_skipped")


def make_image(root, files):
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return ImageStore(root)


def test_snapshot_lists_modules_only(tmp_path):
    store = make_image(tmp_path, {"a.py": "x = 1\n", "pkg/__init__.py": "", "pkg/b.py": "y = 2\n",
                                  "nopkg/c.py": "", ".hidden/d.py": "", "bad-name.py": "",
                                  "notes.txt": "", "__init__.py": ""})   # the root's: names no module
    os.mkfifo(tmp_path / "pkg" / "pipe.py")       # read, it would block the session for good
    snapshot = store.read_snapshot()
    assert sorted(snapshot.files) == ["a.py", "pkg/__init__.py", "pkg/b.py"]
    assert snapshot.version == 0
    assert [module_name_of(rel) for rel in sorted(snapshot.files)] == ["a", "pkg", "pkg.b"]


def test_a_snapshot_hashes_the_files_asked_for_that_the_walk_left_out(tmp_path):
    # A refresh took such a file, still on disk, for removed, where the commit checks its hash.
    store = make_image(tmp_path, {"pkg/__init__.py": "", "pkg/b.py": "y = 2\n", "nopkg/c.py": "z = 3\n"})
    snapshot = store.read_snapshot(unwalked=["nopkg/c.py", "pkg/b.py", "nopkg/gone.py"])
    assert "nopkg/c.py" not in snapshot.files
    assert snapshot.unwalked == {"nopkg/c.py": sha256(b"z = 3\n")}   # walked or absent: not there
    assert store.read_snapshot().unwalked == {}


def test_commit_writes_files_and_journals_who_when_what(tmp_path):
    store = make_image(tmp_path, {"a.py": "x = 1\n", "gone.py": "z = 0\n"})
    base = {rel: sha256(data) for rel, data in store.read_snapshot().files.items()}
    version = store.commit({"a.py": b"x = 2\n", "new/b.py": b"y = 1\n", "gone.py": None},
                           base, user="alice", session_id="s-1")
    assert version == 1
    assert (tmp_path / "a.py").read_text() == "x = 2\n"
    assert (tmp_path / "new/b.py").read_text() == "y = 1\n"
    assert not (tmp_path / "gone.py").exists()
    [record] = store.journal()
    assert record["user"] == "alice" and record["session"] == "s-1" and record["time"].endswith("Z")
    files = {entry["file"]: entry for entry in record["files"]}
    assert files["a.py"] == {"file": "a.py", "old": sha256(b"x = 1\n"), "new": sha256(b"x = 2\n")}
    assert files["new/b.py"]["old"] is None
    assert files["gone.py"]["new"] is None
    assert store.read_snapshot().version == 1


def test_a_commit_reads_the_image_back_as_it_left_it_before_letting_the_lock_go(tmp_path, monkeypatch):
    # What a committing view steps onto: no commit landing after this one can be in it.
    store = make_image(tmp_path, {"a.py": "x = 1\n", "b.py": "y = 1\n", "gone.py": "z = 0\n"})
    base = {rel: sha256(data) for rel, data in store.read_snapshot().files.items()}
    read, real_read = [], ImageStore._read

    def reading(self, rel):
        read.append((rel, exclusive_lock_free(tmp_path)))
        return real_read(self, rel)
    monkeypatch.setattr(ImageStore, "_read", reading)
    read_back = []
    version = store.commit({"a.py": b"x = 2\n", "new.py": b"n = 1\n", "gone.py": None}, base,
                           user="alice", session_id="s-1", read_back=read_back)
    [snapshot] = read_back
    assert snapshot.files == {"a.py": b"x = 2\n", "b.py": b"y = 1\n", "new.py": b"n = 1\n"}
    assert snapshot.version == version == 1
    assert read == [("b.py", False)]   # under the lock, and what it wrote not read again


def test_a_commit_with_nothing_left_to_write_reads_the_image_back_too(tmp_path):
    store = make_image(tmp_path, {"a.py": "x = 1\n"})
    base = {rel: sha256(data) for rel, data in store.read_snapshot().files.items()}
    (tmp_path / "a.py").write_text("x = 2\n")   # made so by another already
    already, read_back = [], []
    assert store.commit({"a.py": b"x = 2\n"}, base, user="alice", session_id="s-1",
                        already_committed=already, read_back=read_back) == 0
    assert already == ["a.py"] and read_back[0].files == {"a.py": b"x = 2\n"}


def test_a_commit_whose_read_back_fails_stands_and_leaves_it_empty(tmp_path, monkeypatch, caplog):
    store = make_image(tmp_path, {"a.py": "x = 1\n", "b.py": "y = 1\n"})
    base = {rel: sha256(data) for rel, data in store.read_snapshot().files.items()}

    def failing(self, rel):
        raise OSError(errno.EIO, "Input/output error")
    monkeypatch.setattr(ImageStore, "_read", failing)
    read_back = []
    assert store.commit({"a.py": b"x = 2\n"}, base, user="alice", session_id="s-1", read_back=read_back) == 1
    monkeypatch.undo()
    assert read_back == [] and (tmp_path / "a.py").read_text() == "x = 2\n" and exclusive_lock_free(tmp_path)
    assert "could not be read back under the commit's lock: [Errno 5] Input/output error" in caplog.text


def test_conflict_writes_nothing_and_names_the_file(tmp_path):
    store = make_image(tmp_path, {"a.py": "x = 1\n", "b.py": "y = 1\n"})
    base = {rel: sha256(data) for rel, data in store.read_snapshot().files.items()}
    (tmp_path / "a.py").write_text("x = 'someone else'\n")
    with pytest.raises(CommitConflict) as raised:
        store.commit({"a.py": b"x = 2\n", "b.py": b"y = 2\n"}, base, user="u", session_id="s")
    assert raised.value.files == ["a.py"] and raised.value.how == {"a.py": "changed"}
    assert (tmp_path / "a.py").read_text() == "x = 'someone else'\n"
    assert (tmp_path / "b.py").read_text() == "y = 1\n"
    assert store.journal() == []


def test_adding_a_file_that_appeared_meanwhile_conflicts(tmp_path):
    store = make_image(tmp_path, {"a.py": ""})
    (tmp_path / "c.py").write_text("theirs\n")
    with pytest.raises(CommitConflict) as raised:
        store.commit({"c.py": b"ours\n"}, {}, user="u", session_id="s")
    assert raised.value.how == {"c.py": "created"}


def test_a_conflict_says_of_each_file_whether_it_was_changed_created_or_removed(tmp_path):
    # All were "changed on disk since this session read it", one the session never read.
    store = make_image(tmp_path, {"a.py": "a = 1\n", "b.py": "b = 1\n", "p/__init__.py": "", "p/m.py": "m = 1\n"})
    base = {rel: sha256(data) for rel, data in store.read_snapshot().files.items()}
    (tmp_path / "a.py").write_text("a = 'theirs'\n")
    (tmp_path / "b.py").unlink()
    (tmp_path / "c.py").write_text("theirs\n")
    (tmp_path / "q").mkdir()
    (tmp_path / "q/__init__.py").write_text("")                 # q.py's other form
    (tmp_path / "p/new.py").write_text("")                      # into the package ours removes
    changes = {"a.py": b"a = 2\n", "b.py": b"b = 2\n", "c.py": b"ours\n", "q.py": b"",
               "p/__init__.py": None, "p/m.py": None}
    with pytest.raises(CommitConflict) as raised:
        store.commit(changes, base, user="u", session_id="s")
    assert raised.value.how == {"a.py": "changed", "b.py": "removed", "c.py": "created",
                                "q/__init__.py": "created", "p/new.py": "created"}
    assert raised.value.files == sorted(raised.value.how)
    (tmp_path / "p/new.py").unlink()
    (tmp_path / "p/__init__.py").unlink()
    with pytest.raises(CommitConflict) as raised:
        store.commit({"p/m2.py": b""}, base, user="u", session_id="s")
    assert raised.value.how == {"p/__init__.py": "removed"}


def _fail_when(monkeypatch, name, should_fail):
    """Make store.os.<name> raise OSError for the calls `should_fail(*args)` picks."""
    real = getattr(store_module.os, name)

    def failing(*args, **kwargs):
        if should_fail(*args):
            raise OSError("injected failure")
        return real(*args, **kwargs)

    monkeypatch.setattr(store_module.os, name, failing)


def _leftovers(root):
    return sorted(p.name for p in root.rglob("*") if ".tmp-" in p.name)


def test_a_commit_killed_past_its_commit_point_reads_as_finished_until_the_next_commit_finishes_it(
        tmp_path, monkeypatch):
    store = make_image(tmp_path, {"a.py": "x = 'old a'\n", "b.py": "x = 'old b'\n", "gone.py": "z = 1\n",
                                  "c.py": "c = 1\n"})
    snap = store.read_snapshot()
    base = {rel: sha256(data) for rel, data in snap.files.items()}
    with monkeypatch.context() as patch:   # the disk fails after a.py is in place
        _fail_when(patch, "replace", lambda src, dst: str(dst).endswith("b.py"))
        with pytest.raises(store_module.CommitPending, match="not yet fully applied"):
            store.commit({"a.py": b"x = 'new a'\n", "b.py": b"x = 'new b'\n", "gone.py": None,
                          "pkg/__init__.py": b"", "pkg/new.py": b"n = 1\n"}, base, user="u", session_id="s")
    # On disk: half done. Through the store: done, journal line and all.
    assert (tmp_path / "a.py").read_text() == "x = 'new a'\n"
    assert (tmp_path / "b.py").read_text() == "x = 'old b'\n"
    assert (tmp_path / ".gsmcpd" / "commit.intent").exists()
    fresh = ImageStore(tmp_path)
    seen = fresh.read_snapshot()
    assert seen.version == 1
    assert seen.files == {"a.py": b"x = 'new a'\n", "b.py": b"x = 'new b'\n", "c.py": b"c = 1\n",
                          "pkg/__init__.py": b"", "pkg/new.py": b"n = 1\n"}
    assert [r["user"] for r in fresh.journal()] == ["u"]
    # The next commit finishes it first, then commits on top of the finished state.
    version = fresh.commit({"c.py": b"c = 2\n"}, {"c.py": sha256(b"c = 1\n")}, user="v", session_id="t")
    assert version == 2
    assert (tmp_path / "b.py").read_text() == "x = 'new b'\n"
    assert not (tmp_path / "gone.py").exists()
    assert (tmp_path / "pkg" / "new.py").read_text() == "n = 1\n"
    assert not (tmp_path / ".gsmcpd" / "commit.intent").exists()
    assert _leftovers(tmp_path) == []
    records = fresh.journal()
    assert [r["user"] for r in records] == ["u", "v"] and len({r["id"] for r in records}) == 2
    assert fresh.read_snapshot().files == {"a.py": b"x = 'new a'\n", "b.py": b"x = 'new b'\n",
                                           "c.py": b"c = 2\n", "pkg/__init__.py": b"",
                                           "pkg/new.py": b"n = 1\n"}


def test_finishing_a_commit_is_safe_to_repeat_from_any_step(tmp_path, monkeypatch):
    store = make_image(tmp_path, {"a.py": "a = 1\n", "b.py": "b = 1\n", "pkg/__init__.py": "",
                                  "pkg/only.py": "o = 1\n"})
    base = {rel: sha256(data) for rel, data in store.read_snapshot().files.items()}
    changes = {"a.py": b"a = 2\n", "b.py": b"b = 2\n", "pkg/only.py": None, "pkg/__init__.py": None}
    # Killed after the files and the journal line, before the intent went away.
    with monkeypatch.context() as patch:
        _fail_when(patch, "unlink", lambda path, *rest: str(path).endswith("commit.intent"))
        with pytest.raises(store_module.CommitPending):
            store.commit(changes, base, user="u", session_id="s")
    assert len(store.journal()) == 1 and store.read_snapshot().version == 1
    assert store.recover() is True             # nothing left to move: only the intent goes
    assert store.recover() is False
    assert len(store.journal()) == 1            # the journal line is not written twice
    assert not (tmp_path / "pkg").exists()
    assert store.read_snapshot().files == {"a.py": b"a = 2\n", "b.py": b"b = 2\n"}


@pytest.mark.parametrize("line", [b"not json", b"[1]", b"[" * 100000 + b"]" * 100000])
def test_a_line_that_is_no_record_after_a_pending_commits_journal_line_is_passed_over_when_finishing_it(
        tmp_path, monkeypatch, line):
    # Whether the pending commit's line was written looked at the journal's last line only:
    # another account's line that is no record after it had the line appended twice (not
    # JSON), or failed the finish, and so every commit after it (a JSON list: AttributeError;
    # nested past the parser's depth: RecursionError).
    store = make_image(tmp_path, {"a.py": "a = 1\n"})
    base = {rel: sha256(data) for rel, data in store.read_snapshot().files.items()}
    with monkeypatch.context() as patch:   # killed after the journal line, before the intent went
        _fail_when(patch, "unlink", lambda path, *rest: str(path).endswith("commit.intent"))
        with pytest.raises(store_module.CommitPending):
            store.commit({"a.py": b"a = 2\n"}, base, user="u", session_id="s", commit_id="c0ffee")
    with open(store.journal_file, "ab") as journal:
        journal.write(line + b"\n")
    assert store.recover() is True
    ids = [json.loads(line).get("id") for line in Path(store.journal_file).read_bytes().splitlines()
           if line.startswith(b"{")]
    assert ids == ["c0ffee"] and not (tmp_path / ".gsmcpd" / "commit.intent").exists()


@pytest.mark.parametrize("where", ["second temp file", "the intent"])
def test_a_commit_failing_before_its_commit_point_changes_nothing(tmp_path, monkeypatch, where):
    store = make_image(tmp_path, {"a.py": "a = 1\n", "b.py": "b = 1\n"})
    base = {rel: sha256(data) for rel, data in store.read_snapshot().files.items()}
    if where == "the intent":
        fails = lambda src, dst: str(dst).endswith("commit.intent")    # noqa: E731
        name = "replace"
    else:
        calls = []
        fails = lambda fd: calls.append(fd) or len(calls) == 2          # noqa: E731
        name = "fsync"
    with monkeypatch.context() as patch:
        _fail_when(patch, name, fails)
        with pytest.raises(OSError, match="injected"):
            store.commit({"a.py": b"a = 2\n", "b.py": b"b = 2\n"}, base, user="u", session_id="s")
    assert (tmp_path / "a.py").read_text() == "a = 1\n" and (tmp_path / "b.py").read_text() == "b = 1\n"
    assert _leftovers(tmp_path) == [] and not (tmp_path / ".gsmcpd" / "commit.intent").exists()
    assert store.journal() == [] and store.read_snapshot().version == 0
    assert store.commit({"a.py": b"a = 3\n"}, base, user="u", session_id="s") == 1


def test_a_journal_line_cut_off_mid_append_is_no_commit_and_the_next_append_drops_it(tmp_path):
    store = make_image(tmp_path, {"m.py": "A = 0\n"})
    _commit_n(store, 1)
    with open(Path(store.journal_file), "ab") as journal:
        journal.write(b'{"id": "cut", "files": [{"fi')       # a kill between two pages
    assert store.read_snapshot().version == 1
    assert len(store.journal()) == 1
    _commit_n(store, 1)
    records = store.journal()
    assert len(records) == 2 and all("cut" != r["id"] for r in records)
    assert store.read_snapshot().version == 2
    assert Path(store.journal_file).read_bytes().endswith(b"}\n")


def _pending(store, changes, monkeypatch):
    """Commit `changes` and stop right after the commit point: nothing moved yet."""
    base = {rel: sha256(data) for rel, data in store.read_snapshot().files.items()}
    with monkeypatch.context() as patch:
        _fail_when(patch, "replace", lambda src, dst: not str(dst).endswith("commit.intent"))
        with pytest.raises(store_module.CommitPending):
            store.commit(changes, base, user="u", session_id="s")   # the whole base: a removed
            # package's modules are checked too, and one that stays is left where it was


def test_a_pending_commit_that_makes_or_unmakes_a_package_is_read_with_its_modules(tmp_path, monkeypatch):
    store = make_image(tmp_path, {"a.py": "", "made/orphan.py": "o = 1\n",
                                  "unmade/__init__.py": "", "unmade/left.py": "l = 1\n"})
    assert sorted(store.read_snapshot().files) == ["a.py", "unmade/__init__.py", "unmade/left.py"]
    # On disk nothing has moved: made/ has no __init__.py yet, unmade/ still has one.
    _pending(store, {"made/__init__.py": b"", "unmade/__init__.py": None}, monkeypatch)
    assert sorted(ImageStore(tmp_path).read_snapshot().files) == ["a.py", "made/__init__.py", "made/orphan.py"]
    ImageStore(tmp_path).recover()
    assert sorted(ImageStore(tmp_path).read_snapshot().files) == ["a.py", "made/__init__.py", "made/orphan.py"]


def test_a_failure_making_the_commit_point_durable_is_a_pending_commit_not_a_failed_one(tmp_path, monkeypatch):
    store = make_image(tmp_path, {"a.py": "a = 1\n"})
    real = store_module._fsync_dir

    def failing_fsync_dir(fd):   # the store fsyncs directories it holds by descriptor
        if os.path.samestat(os.fstat(fd), os.stat(store.state_dir)):
            raise OSError(5, "injected failure")
        real(fd)

    monkeypatch.setattr(store_module, "_fsync_dir", failing_fsync_dir)
    with pytest.raises(store_module.CommitPending):
        store.commit({"a.py": b"a = 2\n"}, {"a.py": sha256(b"a = 1\n")}, user="u", session_id="s")
    monkeypatch.undo()
    assert store.read_snapshot().files == {"a.py": b"a = 2\n"}
    assert store.commit({"a.py": b"a = 3\n"}, {"a.py": sha256(b"a = 2\n")}, user="u", session_id="t") == 2


def test_recovery_sweeps_temp_files_of_killed_commits_image_wide(tmp_path):
    store = make_image(tmp_path, {"a.py": "", "pkg/__init__.py": "", "pkg/deep/__init__.py": ""})
    store.read_snapshot()
    stale = [tmp_path / "pkg" / "deep" / ".m.py.tmp-4242", tmp_path / ".gsmcpd" / ".commit.intent.tmp-4242"]
    for path in stale:
        path.write_text("left by a killed commit")
    keep = tmp_path / "pkg" / ".notes.tmp-x"   # not a temp file's name
    keep.write_text("mine")
    assert store.recover() is False             # no commit to finish, but tidied
    assert not any(path.exists() for path in stale) and keep.exists()


@pytest.mark.parametrize("text,says", [
    ("{not json", "Expecting property name"), ("[]", "not a JSON object"),
    ("{}", '"writes" is not an object'), ('{"writes": {}, "removes": [1]}', '"removes" is not a list'),
    ('{"writes": {}, "removes": []}', '"record" is not a journal record')])
def test_a_garbled_intent_is_named_in_the_error(tmp_path, text, says):
    store = make_image(tmp_path, {"a.py": "a = 1\n"})
    store.read_snapshot()
    (tmp_path / ".gsmcpd" / "commit.intent").write_text(text)
    with pytest.raises(ValueError, match="commit.intent is not a commit intent") as refused:
        store.read_snapshot()
    assert says in str(refused.value)


REC = '"record": {"id": "1"}'


@pytest.mark.parametrize("text,says", [
    ('{"writes": {"/tmp/victim.py": "a.py"}, "removes": [], %s}' % REC, "/outside/victim.py', not a module file"),
    ('{"writes": {"../victim.py": ".victim.py.tmp-1"}, "removes": [], %s}' % REC, "'../victim.py', not a module"),
    ('{"writes": {"a.py": "../../x"}, "removes": [], %s}' % REC, "'../../x', not a temporary file beside 'a.py'"),
    ('{"writes": {"a.py": "pkg/.a.py.tmp-1"}, "removes": [], %s}' % REC, "not a temporary file beside"),
    ('{"writes": {".gsmcpd/journal.py": ".gsmcpd/.journal.py.tmp-1"}, "removes": [], %s}' % REC,
     "not a module file"),
    ('{"writes": {}, "removes": ["../../home/b/notes.py"], %s}' % REC, "'../../home/b/notes.py', not a module"),
    ('{"writes": {}, "removes": ["pkg//a.py"], %s}' % REC, "not a module file"),
])
def test_an_intent_naming_a_path_outside_the_image_is_refused_and_nothing_applied(tmp_path, text, says):
    # With per-user workers another account can write the intent: the next committer
    # would apply it with its own rights.
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "victim.py"
    victim.write_text("mine\n")
    store = make_image(tmp_path / "image", {"a.py": "a = 1\n", "pkg/__init__.py": ""})
    store.read_snapshot()
    text = text.replace("/tmp/victim.py", str(victim))
    (tmp_path / "image" / ".gsmcpd" / "commit.intent").write_text(text)
    with pytest.raises(ValueError, match="commit.intent is not a commit intent") as refused:
        store.commit({"a.py": b"a = 2\n"}, {"a.py": sha256(b"a = 1\n")}, user="u", session_id="t")
    assert says in str(refused.value)
    assert victim.read_text() == "mine\n" and (tmp_path / "image" / "a.py").read_text() == "a = 1\n"


def test_an_intent_written_by_a_commit_passes_the_path_checks(tmp_path):
    store = make_image(tmp_path, {"pkg/__init__.py": "", "pkg/m.py": "x = 1\n"})
    store.read_snapshot()
    intent = {"writes": {"pkg/m.py": "pkg/.m.py.tmp-4194304"}, "removes": ["pkg/old.py"],
              "record": {"id": "1"}}
    assert _intent_shape_problem(intent) is None


CRASHER = textwrap.dedent('''
    import sys
    from gsmcpd.image.store import ImageStore, sha256
    store = ImageStore(sys.argv[1])
    versions = [sys.argv[2], sys.argv[3]]   # new, old: odd versions are new
    turn = 0
    while True:
        snapshot = store.read_snapshot()
        files = snapshot.files
        base = {rel: sha256(data) for rel, data in files.items()}
        content = open(versions[snapshot.version % 2], "rb").read()
        store.commit({rel: content for rel in files}, base, user="crash", session_id="k")
        turn += 1
        print(turn, flush=True)
''')


def test_sigkill_mid_commit_leaves_all_files_old_or_all_new(tmp_path):
    old = "".join(f"value_{i} = {i!r}  # old\n" for i in range(3000))
    new = "".join(f"value_{i} = {str(i) * 3!r}  # new\n" for i in range(3000))
    (tmp_path / "old.txt").write_text(old)
    (tmp_path / "new.txt").write_text(new)
    image = tmp_path / "image"
    make_image(image, {f"m{i}.py": old for i in range(3)})
    for round_number in range(4):
        child = subprocess.Popen([sys.executable, "-c", CRASHER, str(image), str(tmp_path / "new.txt"),
                                  str(tmp_path / "old.txt")], stdout=subprocess.PIPE, cwd=REPO)
        for _ in range(1 + round_number % 2):
            child.stdout.readline()
        child.send_signal(signal.SIGKILL)
        child.wait()
        child.stdout.close()
        for i in range(3):
            ast.parse((image / f"m{i}.py").read_text())     # on disk: never torn
        # Through the store: one version for the whole set, the one the journal
        # counts (the crasher alternates, new first: odd versions are new).
        snapshot = ImageStore(image).read_snapshot()
        expected = new if snapshot.version % 2 else old
        assert snapshot.files == {f"m{i}.py": expected.encode() for i in range(3)}
        assert len(ImageStore(image).journal()) == snapshot.version
        ImageStore(image).recover()
        assert {(image / f"m{i}.py").read_text() for i in range(3)} == {expected}
        for record in ImageStore(image).journal():
            assert record["user"] == "crash"


def test_default_image_is_created_once_and_never_overwritten(tmp_path):
    image = ensure_default_image(tmp_path / "state")
    assert sorted(str(p.relative_to(image)) for p in image.rglob("*.py")) == sorted(EXAMPLE_FILES)
    (image / "shop/models.py").write_text("# my edit\n")
    (image / "shop/cart_extra.py").write_text("")
    assert ensure_default_image(tmp_path / "state") == image
    assert (image / "shop/models.py").read_text() == "# my edit\n"
    assert (image / "shop/cart_extra.py").exists()
    assert [p.name for p in (tmp_path / "state").iterdir()] == ["image"]


def test_a_commit_keeps_each_file_mode(tmp_path):
    store = make_image(tmp_path / "image", {"secret.py": "X = 1\n", "open.py": "Y = 1\n"})
    image = store.image_dir
    os.chmod(image / "secret.py", 0o600)
    snap = store.read_snapshot()
    store.commit({"secret.py": b"X = 2\n", "open.py": b"Y = 2\n"},
                 {rel: sha256(snap.files[rel]) for rel in ("secret.py", "open.py")},
                 user="u", session_id="s")
    assert (image / "secret.py").read_text() == "X = 2\n"
    assert (image / "secret.py").stat().st_mode & 0o777 == 0o600
    assert (image / "open.py").stat().st_mode & 0o777 == 0o644


def test_lock_and_journal_are_created_group_writable_whatever_the_umask(tmp_path):
    store = make_image(tmp_path / "image", {"m.py": "A = 1\n"})
    image = store.image_dir
    old = os.umask(0o077)
    try:
        snap = store.read_snapshot()
        store.commit({"m.py": b"A = 2\n"}, {"m.py": sha256(snap.files["m.py"])}, user="u", session_id="s")
    finally:
        os.umask(old)
    assert (image / ".gsmcpd" / "lock").stat().st_mode & 0o777 == 0o664
    assert (image / ".gsmcpd" / "journal.jsonl").stat().st_mode & 0o777 == 0o664
    assert (image / ".gsmcpd" / "journal.count").stat().st_mode & 0o777 == 0o664


def _commit_n(store, n):
    for i in range(n):
        snap = store.read_snapshot()
        store.commit({"m.py": b"A = %d\n" % i}, {"m.py": sha256(snap.files.get("m.py"))},
                     user="u", session_id="s")


def test_the_version_is_read_from_the_count_file_not_the_whole_journal(tmp_path):
    store = make_image(tmp_path, {"m.py": "A = 0\n"})
    _commit_n(store, 3)
    count = store.state_dir / "journal.count"
    journal = Path(store.journal_file).stat()
    assert count.read_text().split() == ["3", str(journal.st_size), str(journal.st_ino)]
    # Proof the journal's remembered prefix is not read again: blank it out (same
    # size); the version still says 3, and a line appended after it is counted.
    size = Path(store.journal_file).stat().st_size
    Path(store.journal_file).write_bytes(b" " * (size - 1) + b"\n")
    assert store.read_snapshot().version == 3
    with open(Path(store.journal_file), "ab") as journal:
        journal.write(b'{"killed": "between its journal line and the count"}\n')
    assert store.read_snapshot().version == 4


NO_RECORDS = [b"not json", b"[1, 2]", b'"a string"', b"[" * 100000 + b"]" * 100000]   # the last: past the parser's depth


def test_the_journal_passes_over_lines_that_are_no_record_as_every_read_of_it_does(tmp_path, monkeypatch):
    # journal() raised on them (ValueError, RecursionError), where _records_from_end (a
    # conflict's who, has_commit, commits_of_call) and compaction pass them over.
    store = make_image(tmp_path, {"m.py": "A = 0\n"})
    _commit_n(store, 1)
    with open(store.journal_file, "ab") as journal:
        journal.write(b"".join(line + b"\n" for line in NO_RECORDS) + b"   \n")
    committed = json.loads(Path(store.journal_file).read_bytes().splitlines()[0])
    assert store.journal() == [committed]
    _commit_n(store, 1)
    assert len(store.journal()) == 2
    with monkeypatch.context() as patch:   # a pending commit's record comes last, after them
        _fail_when(patch, "unlink", lambda path, *rest: str(path).endswith("commit.intent"))
        with pytest.raises(store_module.CommitPending):
            store.commit({"m.py": b"A = 9\n"}, {"m.py": sha256(b"A = 0\n")}, user="u", session_id="s",
                         commit_id="c0ffee")
    assert [record["id"] for record in store.journal()][-1] == "c0ffee" and len(store.journal()) == 3


def test_a_line_that_is_no_record_counts_toward_the_version_as_the_commit_path_counts_it(tmp_path, monkeypatch):
    # The version counts the journal's lines, as appended (_journal_length), not its
    # records: the count file and a compaction's "dropped" hold such counts, older gsmcpd
    # wrote them, and a version must never go back. Kept so, through a compaction too.
    monkeypatch.setattr(store_module, "JOURNAL_KEEP", 3)
    store = make_image(tmp_path, {"m.py": "A = 0\n"})
    store.journal_limit = 1024
    _commit_n(store, 1)
    with open(store.journal_file, "ab") as journal:
        journal.write(b"".join(line + b"\n" for line in NO_RECORDS[:3]) + b"   \n")   # a blank line: none
    assert store.read_snapshot().version == 4
    snap = store.read_snapshot()
    assert store.commit({"m.py": b"A = 5\n"}, {"m.py": sha256(snap.files["m.py"])}, user="u", session_id="s") == 5
    _commit_n(store, 8)                    # compacted on the way
    assert _compaction_count(store) is not None
    assert store.read_snapshot().version == 13
    Path(store.count_file).unlink()        # counted afresh, from the compaction's count
    assert store.read_snapshot().version == 13


def _compaction_count(store):
    return store_module._compaction(Path(store.journal_file).read_bytes().split(b"\n")[0] + b"\n")


@pytest.mark.parametrize("content", [b"", b"garbage", b"-1 10", b"2 999999", b"1 5", b"7"])
def test_an_unusable_count_file_means_counting_the_whole_journal(tmp_path, content):
    store = make_image(tmp_path, {"m.py": "A = 0\n"})
    _commit_n(store, 2)
    Path(store.count_file).write_bytes(content)   # "1 5" is not a line boundary
    assert store.read_snapshot().version == 2
    _commit_n(store, 1)                      # and the next commit mends it
    assert Path(store.count_file).read_text().split()[0] == "3"
    assert store.read_snapshot().version == 3


def test_a_count_of_the_journal_a_compaction_replaced_is_not_taken_for_the_new_one(tmp_path):
    # Killed between renaming the compacted journal and writing its count: the old count's
    # size and line boundary can fit the new journal too.
    store = make_image(tmp_path, {"m.py": "A = 0\n"})
    _commit_n(store, 3)
    lines, size, inode = Path(store.count_file).read_text().split()
    Path(store.count_file).write_text(f"{int(lines) + 5} {size} {inode}\n")
    assert store.read_snapshot().version == 8     # trusted, of this journal (its inode)
    Path(store.count_file).write_text(f"{int(lines) + 5} {size} {int(inode) + 1}\n")
    assert store.read_snapshot().version == 3     # of another: counted afresh


def _commits_to(store, files, rounds):
    """`rounds` commits to each of `files`, one file a commit, in turn; `old.py` first, once."""
    _committed(store, {"old.py": b"old = 1\n"})
    for round_ in range(rounds):
        for rel in files:
            _committed(store, {rel: b"v = %d\n" % round_})


def test_the_journal_is_compacted_past_its_limit_keeping_each_files_last_commit_and_the_version(
        tmp_path, monkeypatch):
    # It grew by a line a commit, forever, and a conflict read it from the end under the
    # exclusive lock: a file last committed long ago had the whole history read for it.
    monkeypatch.setattr(store_module, "JOURNAL_KEEP", 10)
    store = make_image(tmp_path / "image", {"old.py": "old = 0\n"})
    store.journal_limit = 8 * 1024
    files = [f"m{i}.py" for i in range(5)]
    _commits_to(store, files, 30)             # 151 commits: ~45 KiB unbounded
    journal = Path(store.journal_file)
    assert journal.stat().st_size <= store.journal_limit
    first = json.loads(journal.read_bytes().split(b"\n")[0])
    records = store.journal()
    assert first["dropped"] + len(records) == 151 == store.read_snapshot().version
    assert len(records) >= 10 and records[-1]["files"][0]["file"] == "m4.py"
    # old.py's only commit is kept: a conflict on it still names who made it so.
    assert [record["files"][0]["file"] for record in records].count("old.py") == 1
    with pytest.raises(CommitConflict) as conflict:
        store.commit({"old.py": b"mine\n"}, {"old.py": sha256(b"old = 0\n")}, user="u", session_id="late")
    assert conflict.value.by["old.py"]["user"] == "ben"
    # The count file names the new journal: a count of the old one is never taken for it.
    assert Path(store.count_file).read_text().split() == ["151", str(journal.stat().st_size),
                                                          str(journal.stat().st_ino)]


def test_compaction_keeps_the_record_of_a_commit_marked_unsettled_until_it_is_released(tmp_path, monkeypatch):
    # A session that could not tell whether its commit stood settles it by its record, at
    # its next commit, refresh or abort: compaction left it out once later commits named
    # its files, and the settle took a standing commit for one that never stood.
    monkeypatch.setattr(store_module, "JOURNAL_KEEP", 3)
    store = make_image(tmp_path / "image", {"a.py": "a = 0\n"})
    store.journal_limit = 256
    base = {"a.py": sha256(b"a = 0\n")}
    store.commit({"a.py": b"a = 1\n"}, base, user="u", session_id="s", commit_id="0ddba11")
    store.keep_record("0ddba11")
    assert (store.state_dir / "unsettled.0ddba11").exists()
    _commits_to(store, ["a.py"], 10)
    ids = [record["id"] for record in store.journal()]
    assert ids[0] == "0ddba11" and store.has_commit("0ddba11") and len(ids) < 12
    store.release_record("0ddba11")
    assert not (store.state_dir / "unsettled.0ddba11").exists()
    _commits_to(store, ["a.py"], 30)   # past twice the size after the last compaction: compacted again
    assert not store.has_commit("0ddba11")
    store.release_record("0ddba11")    # released twice (a settle broken after it): nothing to do


def _mark_held_by_a_process(store, commit_id, *, stay=False):
    """A separate process marks `commit_id` (keep_record) and exits without releasing it,
    as a worker killed with its commit undecided does, or, `stay`, lives on (returned)."""
    code = (f"import sys\nfrom gsmcpd.image.store import ImageStore\n"
            f"ImageStore({str(store.root)!r}).keep_record({commit_id!r})\nprint('marked', flush=True)\n"
            f"sys.stdin.read()\n")
    holder = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True, env={**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent)})
    assert holder.stdout.readline() == "marked\n"
    if stay:
        return holder
    holder.stdin.close()
    holder.wait(timeout=30)
    return None


def test_recover_removes_the_unsettled_marks_of_processes_gone_and_only_those(tmp_path):
    # A worker killed (kill -9) with its commit undecided left its mark for good, and
    # compaction kept that commit's record for good.
    store = make_image(tmp_path / "image", {"a.py": ""})
    store.commit({"a.py": b"a = 1\n"}, {"a.py": sha256(b"")}, user="u", session_id="s", commit_id="0ddba11")
    state = store.state_dir
    store.keep_record("0ddba11")                      # this process's: live
    started = Path(f"/proc/{os.getpid()}/stat").read_bytes().rsplit(b")", 1)[1].split()[19]
    assert (state / "unsettled.0ddba11").read_bytes() == b"%d %s\n" % (os.getpid(), started)
    _mark_held_by_a_process(store, "call3-dead")     # its holder gone
    other = _mark_held_by_a_process(store, "call4-11fe", stay=True)   # another daemon's live worker, say
    (state / "unsettled.feed").write_bytes(b"%d %d\n" % (os.getpid(), int(started) + 1))   # a pid reused since
    (state / "unsettled.01d").write_bytes(b"")         # naming no holder: see the test after this one
    zombie = _mark_held_by_a_process(store, "call5-2b1e", stay=True)   # exited, its parent not yet told
    zombie.stdin.close()
    assert wait_until(lambda: Path(f"/proc/{zombie.pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0] == b"Z")
    try:
        store.recover()
        assert sorted(path.name for path in state.glob("unsettled.*")) == [
            "unsettled.0ddba11", "unsettled.call4-11fe"]
    finally:
        zombie.wait(timeout=30)
        other.stdin.close()
        other.wait(timeout=30)
    store.recover()
    assert sorted(path.name for path in state.glob("unsettled.*")) == ["unsettled.0ddba11"]


def test_a_mark_naming_no_holder_is_removed_only_if_its_commit_has_no_record(tmp_path, monkeypatch):
    # An older gsmcpd's marks name no holder, and were never removed. One whose commit has
    # no record keeps nothing (and no record of it comes later): removed. One whose commit
    # has a record may be a live session's of an older daemon sharing the image: kept.
    store = make_image(tmp_path / "image", {"a.py": "a = 0\n"})
    state = store.state_dir
    store.commit({"a.py": b"a = 1\n"}, {"a.py": sha256(b"a = 0\n")}, user="u", session_id="s", commit_id="0ddba11")
    with monkeypatch.context() as patch:   # pending at the recover, which finishes it first
        _fail_when(patch, "unlink", lambda path, *rest: str(path).endswith("commit.intent"))
        with pytest.raises(store_module.CommitPending):
            store.commit({"a.py": b"a = 2\n"}, {"a.py": sha256(b"a = 1\n")}, user="u", session_id="s",
                         commit_id="call2-beef")
    for commit_id in ("0ddba11", "call2-beef", "01d", "call3-f00d"):
        (state / f"unsettled.{commit_id}").write_bytes(b"")
    (state / "unsettled.0bad").write_bytes(b"not a holder\n")   # no holder named either
    os.mkfifo(state / "unsettled.0ff")                            # no mark: never judged, never opened blocking
    store.recover()
    assert sorted(path.name for path in state.glob("unsettled.*")) == [
        "unsettled.0ddba11", "unsettled.0ff", "unsettled.call2-beef"]


def test_compaction_keeps_the_record_of_a_mark_naming_no_holder_and_removes_a_recordless_one(tmp_path, monkeypatch):
    monkeypatch.setattr(store_module, "JOURNAL_KEEP", 3)
    store = make_image(tmp_path / "image", {"a.py": "a = 0\n"})
    store.journal_limit = 256
    store.commit({"a.py": b"a = 1\n"}, {"a.py": sha256(b"a = 0\n")}, user="u", session_id="s", commit_id="0ddba11")
    (store.state_dir / "unsettled.0ddba11").write_bytes(b"")   # an older gsmcpd's
    (store.state_dir / "unsettled.01d").write_bytes(b"")
    _commits_to(store, ["a.py"], 10)
    assert store.journal()[0]["id"] == "0ddba11" and (store.state_dir / "unsettled.0ddba11").exists()
    assert not (store.state_dir / "unsettled.01d").exists()


def test_compaction_leaves_out_the_record_of_a_commit_whose_marks_holder_is_gone(tmp_path, monkeypatch):
    monkeypatch.setattr(store_module, "JOURNAL_KEEP", 3)
    store = make_image(tmp_path / "image", {"a.py": "a = 0\n"})
    store.journal_limit = 256
    store.commit({"a.py": b"a = 1\n"}, {"a.py": sha256(b"a = 0\n")}, user="u", session_id="s",
                 commit_id="call1-dead")
    _mark_held_by_a_process(store, "call1-dead")
    _commits_to(store, ["a.py"], 10)
    assert not store.has_commit("call1-dead")
    assert not (store.state_dir / "unsettled.call1-dead").exists()


@pytest.mark.parametrize("commit_id", ["", "../journal", "ABC", "0" * 65, "call-0ddba11", "call7-"])
def test_a_commit_id_that_cannot_name_an_unsettled_mark_is_refused_naming_it(tmp_path, commit_id):
    store = make_image(tmp_path / "image", {"a.py": ""})
    with pytest.raises(ValueError, match=re.escape(f"commit id {commit_id!r} is not a commit's: a call tag")):
        store.keep_record(commit_id)


def test_a_commit_id_with_its_calls_tag_is_marked_and_released(tmp_path):
    """A commit's id begins with its call's tag (call_tag): its mark must be made as a bare one's."""
    store = make_image(tmp_path / "image", {"a.py": ""})
    commit_id = store_module.call_tag(7) + "0ddba11"
    store.commit({"a.py": b"a = 1\n"}, {"a.py": sha256(b"")}, user="u", session_id="s", commit_id=commit_id)
    store.keep_record(commit_id)
    assert (store.state_dir / f"unsettled.{commit_id}").exists()
    store.release_record(commit_id)
    assert not (store.state_dir / f"unsettled.{commit_id}").exists()


def test_a_journal_whose_kept_records_come_near_the_limit_is_not_rewritten_every_commit(tmp_path, monkeypatch):
    store = make_image(tmp_path / "image", {"old.py": "old = 0\n"})
    store.journal_limit = 4096
    _commits_to(store, [f"m{i}.py" for i in range(40)], 3)   # each file's last record: > the limit
    rewrites = []
    replace = store_module.ImageStore._replace_state_file
    monkeypatch.setattr(store_module.ImageStore, "_replace_state_file",
                        lambda self, name, *args: rewrites.append(name) or replace(self, name, *args))
    _commits_to(store, ["m0.py"], 20)
    assert rewrites.count(store_module.JOURNAL_NAME) <= 1
    assert store.read_snapshot().version == 1 + 40 * 3 + 1 + 20


def test_a_journal_past_its_limit_with_no_record_to_leave_out_is_not_read_whole_every_commit(
        tmp_path, monkeypatch):
    # Every record some file's last (many modules, each committed once): nothing could be
    # left out, so nothing was written, and with no count line to measure "twice its size
    # after the last compaction" by, each commit read and parsed the whole journal again.
    monkeypatch.setattr(store_module, "JOURNAL_KEEP", 10)
    store = make_image(tmp_path / "image", {"old.py": "old = 0\n"})
    store.journal_limit = 4096
    for i in range(40):
        _committed(store, {f"m{i}.py": b"v = 1\n"})
    examined = []
    worth_keeping = store_module._worth_keeping
    monkeypatch.setattr(store_module, "_worth_keeping",
                        lambda lines, *rest: examined.append(len(lines)) or worth_keeping(lines, *rest))
    for i in range(40, 60):
        _committed(store, {f"m{i}.py": b"v = 1\n"})
    assert len(examined) <= 1
    records = store.journal()
    assert len(records) == 60 == store.read_snapshot().version
    assert json.loads(Path(store.journal_file).read_bytes().split(b"\n")[0])["dropped"] == 0


@pytest.mark.skipif(os.geteuid() != 0, reason="sets a group this account is not in: root only")
def test_a_compacted_journal_keeps_the_group_the_accounts_sharing_the_image_write_it_through(tmp_path, monkeypatch):
    # Made by the compacting account, it took that account's own group: with per-user
    # workers, another account sharing the image through a group could no longer append.
    monkeypatch.setattr(store_module, "JOURNAL_KEEP", 3)
    store = make_image(tmp_path / "image", {"old.py": "old = 0\n"})
    _commits_to(store, ["a.py"], 2)
    os.chown(store.journal_file, -1, 4242)
    store.journal_limit = 64
    _commits_to(store, ["a.py", "b.py"], 3)
    assert Path(store.journal_file).read_bytes().startswith(b'{"dropped": ')
    assert Path(store.journal_file).stat().st_gid == 4242


@pytest.mark.parametrize("step", ["write", "rename"])
def test_a_crash_mid_compaction_loses_no_record_and_fails_no_commit(tmp_path, monkeypatch, step):
    # Killed as it wrote the new journal, or before renaming it over the old one: the old
    # one is whole, the commit stands (compaction only bounds the journal), the temp swept.
    monkeypatch.setattr(store_module, "JOURNAL_KEEP", 3)
    store = make_image(tmp_path / "image", {"old.py": "old = 0\n"})
    _commits_to(store, ["a.py", "b.py"], 5)
    before = Path(store.journal_file).read_bytes()
    store.journal_limit = len(before)          # the next commit's line passes it
    write_all, replace = store_module._write_all, os.replace

    def write_crashing(fd, data):
        if data.startswith(b'{"dropped"'):
            raise OSError(errno.EIO, "crash")
        return write_all(fd, data)

    def replace_crashing(source, target, **kwargs):
        if target == store_module.JOURNAL_NAME:
            raise OSError(errno.EIO, "crash")
        return replace(source, target, **kwargs)

    with monkeypatch.context() as patched:
        if step == "write":
            patched.setattr(store_module, "_write_all", write_crashing)
        else:
            patched.setattr(store_module.os, "replace", replace_crashing)
        _committed(store, {"a.py": b"last\n"})
    assert Path(store.journal_file).read_bytes().startswith(before)   # appended to, not replaced
    assert store.read_snapshot().version == 12 and (store.image_dir / "a.py").read_bytes() == b"last\n"
    _committed(store, {"b.py": b"last\n"})   # compacts now, and sweeps any temp left
    assert not [name for name in os.listdir(store.state_dir) if ".tmp-" in name]
    assert Path(store.journal_file).read_bytes().startswith(b'{"dropped": 9, ')
    assert store.read_snapshot().version == 13
    # old.py's last record, then the last three (a.py's last among them).
    assert [record["files"][0]["file"] for record in store.journal()] == ["old.py", "b.py", "a.py", "b.py"]


def _shop(image, lock):
    make_image(image, {"shop/__init__.py": "", "shop/models.py": "class Cart:\n    pass\n"})
    if lock:
        ImageStore(image).read_snapshot()   # a first session, while the image was writable


def test_an_unwritable_image_without_its_lock_is_a_problem_and_with_it_serves(tmp_path):
    from gsmcpd.image.default import image_dir_problem
    with unwritable_dir(tmp_path / "bare", lambda image: _shop(image, lock=False)) as image:
        problem = image_dir_problem(image)
        assert problem.startswith("is not writable and has no .gsmcpd/lock yet: every session reads")
        with pytest.raises(OSError):
            ImageStore(image).read_snapshot()   # what each session would meet
    with unwritable_dir(tmp_path / "locked", lambda image: _shop(image, lock=True)) as image:
        assert image_dir_problem(image) is None
        assert sorted(ImageStore(image).read_snapshot().files) == ["shop/__init__.py", "shop/models.py"]
    assert image_dir_problem(make_image(tmp_path / "writable", {"m.py": ""}).image_dir) is None


def test_an_image_whose_lock_cannot_be_made_is_a_problem_whatever_its_mode_says():
    # /proc: os.access says writable to root, and mkdir there fails (ENOENT); each session
    # failed making its lock. Not root, its mode says no already.
    from gsmcpd.image.default import image_dir_problem
    problem = image_dir_problem(Path("/proc"))
    assert problem.startswith("is not writable") and "has no .gsmcpd/lock yet" in problem, problem
    if os.geteuid() == 0:
        assert problem.startswith(f"is not writable (making a directory in it fails: {os.strerror(errno.ENOENT)})")
    with pytest.raises(OSError):
        ImageStore(Path("/proc")).read_snapshot()   # what each session would meet


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to read the image as another account")
def test_an_account_sees_only_the_modules_it_may_read():
    import shutil
    import tempfile
    shared = Path(tempfile.mkdtemp(prefix="gsmcpd-shared-"))  # pytest's tmp_path is root-only
    os.chmod(shared, 0o755)
    image = make_image(shared / "image", {"public.py": "A = 1\n", "private.py": "B = 1\n"}).image_dir
    ImageStore(image).read_snapshot()  # root creates the lock first, as the daemon's first worker might
    os.chmod(image / "private.py", 0o600)
    code = textwrap.dedent("""
        import os, sys
        from gsmcpd.image.store import ImageStore  # imports first: root's own Python is 0700
        os.setgid(65534); os.setuid(65534)
        print(sorted(ImageStore(sys.argv[1]).read_snapshot().files))
    """)
    out = subprocess.run([sys.executable, "-c", code, str(image)], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)})
    shutil.rmtree(shared)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "['public.py']"


def test_has_commit_knows_a_commit_by_its_id_applied_or_pending(tmp_path, monkeypatch):
    store = make_image(tmp_path, {"a.py": "a = 1\n"})
    assert store.has_commit("0123456789abcdef") is False       # no journal yet
    store.commit({"a.py": b"a = 2\n"}, {"a.py": sha256(b"a = 1\n")}, user="u", session_id="s",
                 commit_id="0123456789abcdef")
    assert store.has_commit("0123456789abcdef") is True
    assert store.has_commit("fedcba9876543210") is False
    assert [r["id"] for r in store.journal()] == ["0123456789abcdef"]
    with monkeypatch.context() as patch:
        _fail_when(patch, "replace", lambda src, dst: not str(dst).endswith("commit.intent"))
        with pytest.raises(store_module.CommitPending):
            store.commit({"a.py": b"a = 3\n"}, {"a.py": sha256(b"a = 2\n")}, user="u", session_id="s",
                         commit_id="00000000000000aa")
    assert store.has_commit("00000000000000aa") is True          # pending: decided all the same


def test_the_commits_of_a_call_are_found_by_its_session_and_tag_applied_or_pending(tmp_path, monkeypatch):
    # The router asks, once a worker died in a call, whether the call's commit stands.
    store = make_image(tmp_path, {"a.py": "a = 1\n", "b.py": "b = 1\n"})
    assert store.commits_of_call("s", 7) == []                   # never committed to
    tag = store_module.call_tag(7)
    store.commit({"a.py": b"a = 2\n"}, {"a.py": sha256(b"a = 1\n")}, user="u", session_id="s",
                 commit_id=store_module.call_tag(6) + "earlier")
    assert store.commits_of_call("s", 7) == []                   # an earlier call's is not this one's
    store.commit({"b.py": b"b = 2\n"}, {"b.py": sha256(b"b = 1\n")}, user="u", session_id="s",
                 commit_id=tag + "0a")
    store.commit({"a.py": b"a = 3\n"}, {"a.py": sha256(b"a = 2\n")}, user="v", session_id="other",
                 commit_id=tag + "0b")                           # another session's call 7
    assert [r["id"] for r in store.commits_of_call("s", 7)] == [tag + "0a"]
    assert [f["file"] for f in store.commits_of_call("s", 7)[0]["files"]] == ["b.py"]
    with monkeypatch.context() as patch:   # killed past its commit point: pending
        _fail_when(patch, "replace", lambda src, dst: not str(dst).endswith("commit.intent"))
        with pytest.raises(store_module.CommitPending):
            store.commit({"a.py": b"a = 4\n"}, {"a.py": sha256(b"a = 3\n")}, user="u", session_id="s",
                         commit_id=store_module.call_tag(8) + "0c")
    assert [r["id"] for r in store.commits_of_call("s", 8)] == [store_module.call_tag(8) + "0c"]
    assert store.commits_of_call("s", 9) == []


def test_the_commits_of_a_call_are_asked_without_waiting_for_the_lock(tmp_path, monkeypatch):
    # Asked on the router's loop: a lock held elsewhere is not waited for. A record found
    # stands all the same; none found cannot be told (the holder may be the dying worker).
    import fcntl
    store = make_image(tmp_path, {"a.py": "a = 1\n"})
    with monkeypatch.context() as patch:
        _fail_when(patch, "replace", lambda src, dst: not str(dst).endswith("commit.intent"))
        with pytest.raises(store_module.CommitPending):
            store.commit({"a.py": b"a = 2\n"}, {"a.py": sha256(b"a = 1\n")}, user="u", session_id="s",
                         commit_id=store_module.call_tag(3) + "0a")
    holder = os.open(store.lock_file, os.O_RDONLY)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)
        assert [r["id"] for r in store.commits_of_call("s", 3)] == [store_module.call_tag(3) + "0a"]
        assert store.commits_of_call("s", 4) is None
    finally:
        os.close(holder)
    assert store.commits_of_call("s", 4) == []


def _journal_of_others(store, file):
    """`store`, its journal 2000 records of another session's commits of `file` (about 500 KB)."""
    store.state_dir.mkdir(exist_ok=True)
    others = [{"id": str(n), "session": "other", "files": [{"file": file, "new": "x" * 200}]} for n in range(2000)]
    (store.state_dir / "journal.jsonl").write_text("".join(json.dumps(r) + "\n" for r in others))
    return store


def test_the_commits_of_a_call_are_looked_for_only_so_far_back_in_the_journal(tmp_path, monkeypatch):
    # Others' records from the end: past the bound, whether the call's commit stands cannot be told.
    store = _journal_of_others(make_image(tmp_path, {"a.py": ""}), "a.py")
    monkeypatch.setattr(store_module, "CALL_SCAN_LIMIT", 100_000)
    assert store.commits_of_call("s", 1) is None
    monkeypatch.setattr(store_module, "CALL_SCAN_LIMIT", 10_000_000)
    assert store.commits_of_call("s", 1) == []


def test_a_call_s_commit_found_before_the_scan_bound_is_told_though_the_scan_then_passes_it(tmp_path, monkeypatch):
    # A session's first commit: no earlier record of the session stops the scan, so it reads
    # on back to the bound; the record it found on the way stands all the same.
    store = _journal_of_others(make_image(tmp_path, {"a.py": ""}), "b.py")
    monkeypatch.setattr(store_module, "CALL_SCAN_LIMIT", 100_000)
    store.commit({"a.py": b"a = 1\n"}, {"a.py": sha256(b"")}, user="u", session_id="s",
                 commit_id=store_module.call_tag(1) + "0a")
    assert [r["id"] for r in store.commits_of_call("s", 1)] == [store_module.call_tag(1) + "0a"]
    with monkeypatch.context() as patch:   # killed past its commit point: pending, found in the intent
        _fail_when(patch, "replace", lambda src, dst: not str(dst).endswith("commit.intent"))
        with pytest.raises(store_module.CommitPending):
            store.commit({"a.py": b"a = 2\n"}, {"a.py": sha256(b"a = 1\n")}, user="u", session_id="t",
                         commit_id=store_module.call_tag(2) + "0b")
    assert [r["id"] for r in store.commits_of_call("t", 2)] == [store_module.call_tag(2) + "0b"]
    assert store.commits_of_call("t", 3) == []     # its call 2's record ends the scan
    assert store.commits_of_call("u", 1) is None   # none found within the bound: cannot be told


SID = "5e55105e55105e55105e55105e55105e"   # a session id as the router makes them: 32 hex digits


def _journal_lines(store, *lines):
    """`store`, its journal these lines (records are written as a commit writes them)."""
    store.state_dir.mkdir(parents=True, exist_ok=True)
    (store.state_dir / "journal.jsonl").write_bytes(b"".join(
        (line if isinstance(line, bytes) else json.dumps(line, sort_keys=True).encode()) + b"\n" for line in lines))
    return store


def _record(session, record_id, file="a.py", **more):
    return {"id": record_id, "session": session, "user": "u", "files": [{"file": file, "new": "h"}], **more}


def _padding(length):
    """A journal line of another session's `length` bytes long (its newline left out)."""
    line = json.dumps(_record("other", "call1-ff", pad=""), sort_keys=True).encode()
    return line.replace(b'"pad": ""', b'"pad": "' + b"x" * (length - len(line)) + b'"')


def test_a_call_s_commits_are_told_by_the_session_s_own_records_not_its_id_in_another_s(tmp_path):
    # The scan looks for the session's id in the journal's bytes: another session's record
    # may hold it too (a file name, a user name), and is no record of the session's.
    store = _journal_lines(make_image(tmp_path, {}),
                           _record(SID, "call3-aa"),
                           _record("other", "call3-bb", file=f"{SID}.py"),            # this call's tag
                           _record("other", "call2-cc", file=f"pkg/{SID}/m.py"),      # an earlier call's
                           _record("other", "call9-dd", user=SID))
    assert [r["id"] for r in store.commits_of_call(SID, 3)] == ["call3-aa"]
    assert store.commits_of_call(SID, 4) == []      # its call 3's record ends the scan


def test_a_call_s_record_straddling_a_chunk_of_the_read_back_is_found_whole(tmp_path):
    # The journal is read back 64 KiB at a time from its end: a line that begins in one
    # chunk and ends in the next is found whole, its session's id on either side.
    ours = json.dumps(_record(SID, "call3-aa"), sort_keys=True).encode()
    at = ours.index(SID.encode())
    for cut in (at - 10, at + 10, at + len(SID) + 10):   # the chunk's start, in our line
        store = _journal_lines(make_image(tmp_path / str(cut), {}), ours, _padding(65536 + cut - len(ours) - 2))
        size = Path(store.journal_file).stat().st_size
        assert size - 65536 == cut    # the later chunk begins inside our line
        assert [r["id"] for r in store.commits_of_call(SID, 3)] == ["call3-aa"]


def test_a_call_s_record_straddling_the_scan_bound_is_not_read(tmp_path, monkeypatch):
    # A line only partly within CALL_SCAN_LIMIT of the end is not read, though the session's
    # id is in the part within it: none is found, so it cannot be told.
    ours = json.dumps(_record(SID, "call3-aa"), sort_keys=True).encode()
    cut = ours.index(SID.encode()) - 10   # the bound, in our line
    store = _journal_lines(make_image(tmp_path, {}), _record("other", "call1-ee"), ours,
                           _padding(65536 + cut - len(ours) - 2))
    monkeypatch.setattr(store_module, "CALL_SCAN_LIMIT", 65536)
    assert store.commits_of_call(SID, 3) is None
    monkeypatch.setattr(store_module, "CALL_SCAN_LIMIT", 2 * 65536)
    assert [r["id"] for r in store.commits_of_call(SID, 3)] == ["call3-aa"]


def test_lines_holding_the_session_s_id_that_are_no_record_are_passed_over(tmp_path):
    store = _journal_lines(make_image(tmp_path, {}),
                           _record(SID, "call2-aa"),
                           _record(SID, "call3-bb"),
                           f'not json {SID} call2-x'.encode(),
                           json.dumps([SID, "call2-x"]).encode(),
                           json.dumps(SID).encode(),
                           b"[" * 100000 + SID.encode() + b"]" * 100000,   # past the parser's depth
                           f'{{"session": "{SID}", "id": "call2-x"'.encode())   # cut short
    with open(store.journal_file, "ab") as journal:   # cut off mid-append: not yet a line
        journal.write(json.dumps(_record(SID, "call2-y")).encode())
    assert [r["id"] for r in store.commits_of_call(SID, 3)] == ["call3-bb"]


def test_the_scan_stops_at_the_session_s_record_of_another_call_whatever_its_tag(tmp_path):
    # Its tag is "call<seq>-": call 1's is no prefix of call 12's.
    store = _journal_lines(make_image(tmp_path / "a", {}),
                           _record(SID, "call1-aa"), _record(SID, "call12-bb"), _record(SID, "call12-cc"))
    assert [r["id"] for r in store.commits_of_call(SID, 12)] == ["call12-cc", "call12-bb"]
    assert store.commits_of_call(SID, 1) == []      # call 12's record, last, ends the scan
    assert store.commits_of_call(SID, 2) == []
    store = _journal_lines(make_image(tmp_path / "b", {}),
                           _record(SID, "call12-bb"), _record(SID, "call1-aa"), _record(SID, "call4-dd"))
    assert store.commits_of_call(SID, 1) == []      # call 4's ends it first
    assert [r["id"] for r in store.commits_of_call(SID, 4)] == ["call4-dd"]


def test_asked_again_the_journal_is_read_again_only_once_it_changed(tmp_path, monkeypatch):
    # The router asks every few milliseconds while it cannot be told: an unchanged
    # journal is not read back again; one appended to, or replaced, is.
    store = _journal_of_others(make_image(tmp_path, {"a.py": ""}), "b.py")
    reads = []
    read_back = ImageStore._records_from_end

    def counted(self, *args, **kwargs):
        reads.append(kwargs)
        return read_back(self, *args, **kwargs)

    monkeypatch.setattr(ImageStore, "_records_from_end", counted)
    assert store.commits_of_call("s", 1) == store.commits_of_call("s", 1) == []
    assert len(reads) == 1
    assert store.commits_of_call("s", 2) == [] and len(reads) == 2   # another call: another scan
    store.commit({"a.py": b"a = 1\n"}, {"a.py": sha256(b"")}, user="u", session_id="s",
                 commit_id=store_module.call_tag(2) + "0a")
    reads.clear()
    assert [r["id"] for r in store.commits_of_call("s", 2)] == [store_module.call_tag(2) + "0a"]
    assert len(reads) == 1
    journal = Path(store.journal_file).read_bytes()
    replaced = journal.replace(b'"session": "s"', b'"session": "t"')
    assert len(replaced) == len(journal)
    Path(store.journal_file + ".new").write_bytes(replaced)
    os.replace(store.journal_file + ".new", store.journal_file)   # same size: another file (compaction's rename)
    assert store.commits_of_call("s", 2) == [] and len(reads) == 2


def test_a_store_with_a_step_reads_the_journal_back_a_step_a_call_and_answers_alike(tmp_path):
    # The router's: each call stalls its loop only for a step; the answer is the same.
    store = _journal_of_others(make_image(tmp_path, {"a.py": ""}), "b.py")   # about 500 KB
    store.commit({"a.py": b"a = 1\n"}, {"a.py": sha256(b"")}, user="u", session_id="s",
                 commit_id=store_module.call_tag(1) + "0a")
    with open(store.journal_file, "ab") as journal:   # others' commits since, about 150 KB
        journal.write(Path(store.journal_file).read_bytes()[:150_000].rpartition(b"\n")[0] + b"\n")
    # Call 1's record is the session's first: read on to the journal's start (about 650 KB,
    # 128 KiB a call); later calls' scans stop at it, about 150 KB back.
    for seq, expected, calls in ((1, [store_module.call_tag(1) + "0a"], range(5, 7)), (2, [], range(2, 3))):
        stepped, answers = ImageStore(tmp_path, call_scan_step=2 * 65536), []
        while not answers or answers[-1] is store_module.READING_ON:
            answers.append(stepped.commits_of_call("s", seq))
        assert [r["id"] for r in answers[-1]] == expected == [r["id"] for r in store.commits_of_call("s", seq)]
        assert len(answers) in calls


def test_a_stepped_look_whose_read_fails_begins_again(tmp_path, monkeypatch):
    # What it had read is not taken for the whole: the record lies further back.
    store = _journal_of_others(make_image(tmp_path, {"a.py": ""}), "b.py")
    journal = Path(store.journal_file).read_bytes()
    Path(store.journal_file).write_bytes(json.dumps(_record("s", "call1-0a")).encode() + b"\n" + journal)
    stepped = ImageStore(tmp_path, call_scan_step=65536)
    assert stepped.commits_of_call("s", 1) is store_module.READING_ON
    with monkeypatch.context() as patch:
        _fail_when(patch, "pread", lambda *args: True)
        with pytest.raises(OSError):
            stepped.commits_of_call("s", 1)
    answers = [stepped.commits_of_call("s", 1)]
    while answers[-1] is store_module.READING_ON:
        answers.append(stepped.commits_of_call("s", 1))
    assert [r["id"] for r in answers[-1]] == ["call1-0a"]


def test_the_shared_lock_is_held_until_closed_or_dropped_and_a_failed_take_holds_nothing(tmp_path, monkeypatch):
    import fcntl
    store = make_image(tmp_path / "image", {"shop/__init__.py": "", "shop/models.py": "X = 1\n"})
    held = store.hold_shared()
    assert not exclusive_lock_free(store.root)
    assert "shop/models.py" in store.read_snapshot(held).files
    assert exclusive_lock_free(store.root)              # read_snapshot(held) let it go
    held.close()                                    # closing twice is harmless
    dropped = store.hold_shared()
    assert not exclusive_lock_free(store.root)
    del dropped                                     # e.g. a break before a `with` took it
    assert exclusive_lock_free(store.root)

    def interrupted(fd, mode):
        raise KeyboardInterrupt("soft break")

    with steady_descriptors():
        before = len(os.listdir("/proc/self/fd"))
        monkeypatch.setattr(fcntl, "flock", interrupted)
        with pytest.raises(KeyboardInterrupt):
            store.hold_shared()
        assert len(os.listdir("/proc/self/fd")) == before   # its descriptor was closed


def test_the_store_keeps_plain_string_paths_resolved_and_gives_its_directories_as_paths(tmp_path):
    image = make_image(tmp_path / "image", {"a.py": ""}).image_dir
    linked = tmp_path / "linked"
    linked.symlink_to(image)
    store = ImageStore(str(linked))
    assert store.root == str(image.resolve()) and store.image_dir == image.resolve()
    assert store.state_dir == image.resolve() / ".gsmcpd"
    assert store.intent_file == str(image.resolve() / ".gsmcpd" / "commit.intent")
    assert store.journal_file.endswith("/.gsmcpd/journal.jsonl") and store.count_file.endswith("/.gsmcpd/journal.count")


def test_a_commit_failing_before_its_commit_point_leaves_no_directory_it_made(tmp_path, monkeypatch):
    store = make_image(tmp_path, {"a.py": "a = 1\n", "kept/__init__.py": ""})
    base = {rel: sha256(data) for rel, data in store.read_snapshot().files.items()}
    changes = {"a.py": b"a = 2\n", "new/deep/mod.py": b"m = 1\n", "kept/more/mod.py": b"k = 1\n"}
    with monkeypatch.context() as patch:
        _fail_when(patch, "replace", lambda src, dst: str(dst).endswith("commit.intent"))
        with pytest.raises(OSError, match="injected"):
            store.commit(changes, {rel: base.get(rel) for rel in changes}, user="u", session_id="s")
    # what the commit made for its new files is gone; what was there before stays
    assert not (tmp_path / "new").exists() and not (tmp_path / "kept" / "more").exists()
    assert (tmp_path / "kept" / "__init__.py").exists()
    assert _leftovers(tmp_path) == [] and store.journal() == []
    assert store.commit(changes, {rel: base.get(rel) for rel in changes}, user="u", session_id="s") == 1
    assert (tmp_path / "new" / "deep" / "mod.py").read_bytes() == b"m = 1\n"


# -- links another account planted in a shared image (per-user workers) -----------------
# Every account sharing the image may create entries in its directories; a link at a name
# a commit writes must never make the committing account's process write where it points.

def _committed(store, changes):
    base = {rel: sha256(data) for rel, data in store.read_snapshot().files.items()}
    return store.commit(changes, {rel: base.get(rel) for rel in changes}, user="ben", session_id="s")


def test_the_temps_directories_are_fsynced_before_the_intent_names_the_temps(tmp_path, monkeypatch):
    # POSIX makes a new file's name durable by its directory's fsync, not the file's: an
    # intent that outlived a power cut its temps did not would be applied without them
    # (_apply takes a missing temp for one moved already), the files old, the journal new.
    store = make_image(tmp_path / "image", {"a.py": "a = 1\n", "pkg/__init__.py": "", "pkg/b.py": "b = 1\n"})
    events = []
    real_fsync_dir, real_write_intent = store_module._fsync_dir, ImageStore._write_intent

    def fsync_dir(fd):
        events.append(("fsync", os.path.relpath(os.readlink(f"/proc/self/fd/{fd}"), store.image_dir)))
        real_fsync_dir(fd)

    def write_intent(self, intent):
        events.append(("intent", None))
        real_write_intent(self, intent)

    monkeypatch.setattr(store_module, "_fsync_dir", fsync_dir)
    monkeypatch.setattr(ImageStore, "_write_intent", write_intent)
    _committed(store, {"a.py": b"a = 2\n", "pkg/b.py": b"b = 2\n", "new/c.py": b"c = 1\n"})
    before_intent = {name for kind, name in events[:events.index(("intent", None))] if kind == "fsync"}
    assert {".", "pkg", "new"} <= before_intent, events


def test_a_link_planted_at_a_commits_temp_name_is_not_followed(tmp_path):
    store = make_image(tmp_path / "image", {"a.py": "a = 1\n"})
    victim = tmp_path / "bens" / "planted"
    victim.parent.mkdir()
    link = store.image_dir / store_module.temp_name("a.py", os.getpid())
    link.symlink_to(victim)                       # dangling: the temp's open would create it
    _committed(store, {"a.py": b"a = 2\n"})
    assert not victim.exists()
    assert (store.image_dir / "a.py").read_bytes() == b"a = 2\n" and not (store.image_dir / "a.py").is_symlink()


@pytest.mark.parametrize("name", [store_module.COUNT_NAME, store_module.JOURNAL_NAME,
                                  store_module.temp_name(store_module.INTENT_NAME, os.getpid())],
                         ids=["count", "journal", "intent-temp"])   # the same in every collecting process
def test_a_link_planted_at_a_state_file_is_not_written_through(tmp_path, name):
    store = make_image(tmp_path / "image", {"a.py": "a = 1\n"})
    _committed(store, {"a.py": b"a = 2\n"})       # the state directory and its files exist
    victim = tmp_path / "bens-file"
    victim.write_text("ben's own\n")
    (store.state_dir / name).unlink(missing_ok=True)
    (store.state_dir / name).symlink_to(victim)
    try:
        _committed(store, {"a.py": b"a = 3\n"})
    except OSError as error:                      # refusing is fine; writing through is not
        assert error.errno == errno.ELOOP or isinstance(error.__cause__, OSError), error
    assert victim.read_text() == "ben's own\n"


def test_a_linked_cache_in_a_package_a_commit_empties_goes_without_what_it_points_to(tmp_path):
    store = make_image(tmp_path / "image", {"pkg/__init__.py": "", "pkg/m.py": "m = 1\n"})
    bens = tmp_path / "bens-home"
    bens.mkdir()
    (bens / "notes.txt").write_text("keep me\n")
    (store.image_dir / "pkg" / "__pycache__").symlink_to(bens)
    _committed(store, {"pkg/__init__.py": None, "pkg/m.py": None})
    assert not (store.image_dir / "pkg").exists()
    assert (bens / "notes.txt").read_text() == "keep me\n"


OTHER_UID = 1234
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="making a link another account's "
                                "(lchown to another uid) needs root")


@needs_root
@pytest.mark.parametrize("rel", ["linked/new.py", "linked/m.py", "linked/deeper/new.py"])
def test_a_commit_through_a_linked_directory_another_account_owns_is_refused_and_writes_nothing(
        tmp_path, rel):
    store = make_image(tmp_path / "image", {"a.py": "a = 1\n"})
    bens = tmp_path / "bens-dir"
    bens.mkdir()
    (bens / "__init__.py").write_text("")
    (bens / "m.py").write_text("m = 1\n")
    (store.image_dir / "linked").symlink_to(bens, target_is_directory=True)
    os.lchown(store.image_dir / "linked", OTHER_UID, OTHER_UID)     # ben planted it
    before = sorted(p.name for p in bens.rglob("*"))
    with pytest.raises(store_module.UnsafePath, match="symbolic link") as refused:
        _committed(store, {rel: b"x = 1\n", "a.py": b"a = 2\n"})
    assert refused.value.errno == errno.ELOOP
    assert sorted(p.name for p in bens.rglob("*")) == before and (bens / "m.py").read_text() == "m = 1\n"
    assert (store.image_dir / "a.py").read_text() == "a = 1\n"     # all or nothing


@needs_root
def test_a_link_another_account_owns_deeper_on_the_way_or_at_a_links_target_is_refused(tmp_path):
    store = make_image(tmp_path / "image", {"pkg/__init__.py": "", "pkg/m.py": "m = 1\n"})
    bens = tmp_path / "bens-dir"
    bens.mkdir()
    (store.image_dir / "pkg" / "sub").symlink_to(bens, target_is_directory=True)
    os.lchown(store.image_dir / "pkg" / "sub", OTHER_UID, OTHER_UID)
    (store.image_dir / "mine").symlink_to("pkg/sub", target_is_directory=True)  # mine, to ben's
    for rel in ("pkg/sub/new.py", "mine/new.py"):
        with pytest.raises(store_module.UnsafePath, match="symbolic link"):
            _committed(store, {rel: b"x = 1\n"})
    assert list(bens.iterdir()) == []


def test_a_commit_to_a_module_whose_file_is_a_link_is_refused_and_writes_nothing(tmp_path):
    # The rename over it replaced the link with a file: what it pointed to never got the
    # change, and later edits to it no longer reached the image.
    store = make_image(tmp_path / "image", {"a.py": "a = 1\n", "pkg/__init__.py": ""})
    outside = tmp_path / "src" / "tool.py"
    outside.parent.mkdir()
    outside.write_text("t = 1\n")
    (store.image_dir / "pkg" / "tool.py").symlink_to(outside)
    assert "pkg/tool.py" in store.read_snapshot().files   # read through it, as ever
    with pytest.raises(store_module.LinkedModule) as refused:
        store.commit({"a.py": b"a = 2\n", "pkg/tool.py": b"t = 2\n"},
                     {"a.py": sha256(b"a = 1\n"), "pkg/tool.py": sha256(b"t = 1\n")}, user="u", session_id="s")
    assert str(refused.value).endswith(f"pkg/tool.py is a symbolic link (to {outside}): a commit would "
                                       "replace the link with a file, leaving what it points to unchanged, "
                                       "so nothing was written; link the module's directory instead (a "
                                       "commit follows a linked directory), or put the file itself in the image")
    assert (store.image_dir / "pkg" / "tool.py").is_symlink() and outside.read_text() == "t = 1\n"
    assert (store.image_dir / "a.py").read_text() == "a = 1\n" and store.journal() == []
    assert sorted(os.listdir(store.image_dir / "pkg")) == ["__init__.py", "tool.py"]   # no temp left
    # removing it removes the link, not what it points to
    assert store.commit({"pkg/tool.py": None}, {"pkg/tool.py": sha256(b"t = 1\n")},
                        user="u", session_id="s") == 1
    assert not (store.image_dir / "pkg" / "tool.py").exists() and outside.read_text() == "t = 1\n"


@pytest.mark.parametrize("rel", ["q.py", "pkg/__init__.py"])
def test_a_new_module_whose_path_is_a_directory_is_refused_before_the_commit_point(tmp_path, rel):
    # Past the commit point the rename onto the directory failed (EISDIR): the commit
    # was read as made by every session, yet could never be finished, and every later
    # commit failed finishing it first.
    store = make_image(tmp_path / "image", {"a.py": "a = 1\n"})
    (store.image_dir / rel).mkdir(parents=True)   # made behind gsmcpd's back
    with pytest.raises(store_module.DirectoryInTheWay) as refused:
        store.commit({"a.py": b"a = 2\n", rel: b"q = 1\n"}, {"a.py": sha256(b"a = 1\n")},
                     user="u", session_id="s")
    assert refused.value.errno == errno.EISDIR
    assert str(refused.value).endswith(f"{rel} is a directory in the image, not a module's file: a commit "
                                       "cannot put the module's file in its place, so nothing was written; "
                                       "move the directory away and commit again")
    assert not (store.state_dir / "commit.intent").exists() and store.journal() == []
    assert (store.image_dir / "a.py").read_text() == "a = 1\n"
    assert not [p for p in store.image_dir.rglob(".*.tmp-*")]
    assert sorted(store.read_snapshot().files) == ["a.py"]
    (store.image_dir / rel).rmdir()
    assert _committed(store, {"a.py": b"a = 2\n", rel: b"q = 1\n"}) == 1   # once it is moved away
    assert (store.image_dir / rel).read_bytes() == b"q = 1\n"


def test_a_link_this_account_made_to_a_package_outside_the_image_is_committed_through(tmp_path):
    # image/mypkg -> ~/src/mypkg, a link the user made: no other account is involved
    store = make_image(tmp_path / "image", {"a.py": "a = 1\n"})
    src = tmp_path / "src" / "mypkg"
    src.mkdir(parents=True)
    (src / "__init__.py").write_text("")
    (src / "m.py").write_text("m = 1\n")
    (src / "sub").mkdir()
    (store.image_dir / "mypkg").symlink_to(src, target_is_directory=True)
    assert os.lstat(store.image_dir / "mypkg").st_uid == os.geteuid()
    assert "mypkg/m.py" in store.read_snapshot().files
    assert _committed(store, {"mypkg/m.py": b"m = 2\n", "mypkg/sub/new.py": b"n = 1\n",
                              "mypkg/deeper/new.py": b"d = 1\n"}) == 1
    assert (src / "m.py").read_bytes() == b"m = 2\n"
    assert (src / "sub" / "new.py").read_bytes() == b"n = 1\n"
    assert (src / "deeper" / "new.py").read_bytes() == b"d = 1\n"
    assert (store.image_dir / "mypkg").is_symlink()                 # the link stays a link
    gone = {"mypkg/__init__.py": b"", "mypkg/m.py": b"m = 2\n", "mypkg/sub/new.py": b"n = 1\n",
            "mypkg/deeper/new.py": b"d = 1\n"}
    assert store.commit(dict.fromkeys(gone), {rel: sha256(data) for rel, data in gone.items()},
                        user="u", session_id="s") == 2
    assert (store.image_dir / "mypkg").is_symlink() and src.is_dir()   # emptied, not removed
    assert not (src / "m.py").exists() and not (src / "deeper").exists()


def test_a_directory_a_commit_makes_takes_its_parents_mode_whatever_the_umask(tmp_path):
    store = make_image(tmp_path / "image", {"a.py": "a = 1\n"})
    os.chmod(store.image_dir, 0o2775)              # a shared image: group-writable, setgid
    old_umask = os.umask(0o077)                    # the unit's
    try:
        _committed(store, {"pkg/__init__.py": b"", "pkg/sub/__init__.py": b"", "pkg/sub/m.py": b"m = 1\n"})
    finally:
        os.umask(old_umask)
    for made in (store.image_dir / "pkg", store.image_dir / "pkg" / "sub"):
        assert stat.S_IMODE(made.stat().st_mode) == 0o2775, oct(made.stat().st_mode)


def test_the_packages_a_file_lies_in_and_its_modules_other_form():
    assert store_module.packages_of("a/b/m.py") == ["a/__init__.py", "a/b/__init__.py"]
    assert store_module.packages_of("a/b/__init__.py") == ["a/__init__.py"]
    assert store_module.packages_of("m.py") == [] == store_module.packages_of("a/__init__.py")
    assert store_module.other_form("a/q.py") == "a/q/__init__.py"
    assert store_module.other_form("a/q/__init__.py") == "a/q.py"



def _past_the_recursion_limit():
    return sys.getrecursionlimit() + 100


@pytest.fixture(scope="module")
def deep_tree(tmp_path_factory):
    """One tree of packages nested past the recursion limit, shared by the tests below that
    each write only paths of their own in it (each tree costs a second to make and remove):
    (its directory, the deepest package's path in it)."""
    root = tmp_path_factory.mktemp("deep")
    yield root, nested_packages(root, _past_the_recursion_limit())
    remove_tree(root)   # pytest's own cleanup of old runs would recurse per level


def test_a_commit_into_a_package_nested_past_the_recursion_limit_is_written(deep_tree):
    deep_dir, deepest = deep_tree
    store = ImageStore(deep_dir)
    _committed(store, {f"{deepest}/leaf.py": b"x = 2\n", f"{deepest}/new/__init__.py": b""})
    assert (deep_dir / deepest / "leaf.py").read_bytes() == b"x = 2\n"
    assert (deep_dir / deepest / "new" / "__init__.py").exists()


def test_recovery_sweeps_temp_files_in_a_tree_nested_past_the_recursion_limit(deep_tree):
    deep_dir, deepest = deep_tree
    store = make_image(deep_dir, {"a.py": ""})
    _committed(store, {"a.py": b"a = 1\n"})   # the state directory, as at a daemon's start
    stale = deep_dir / deepest / ".m.py.tmp-4242"
    stale.write_text("left by a killed commit")
    assert store.recover() is False
    assert not stale.exists()


def test_image_dirs_open_and_make_directories_nested_past_the_recursion_limit(deep_tree):
    deep_dir, deepest = deep_tree
    with ImageDirs(str(deep_dir)) as dirs:
        assert os.path.samestat(os.fstat(dirs.open(deepest)), os.stat(deep_dir / deepest))
        made = "q/" + deepest
        dirs.open(made, make=True)
        assert (deep_dir / made).is_dir() and len(dirs.made) == _past_the_recursion_limit() + 1
        with pytest.raises(ValueError, match=r"'p/\./p' is not a directory path inside the image"):
            dirs.open("p/./p")


def test_files_and_packages_whose_path_passes_path_max_are_left_out_and_named(deep_dir):
    # A package past PATH_MAX was left out silently; a module file past it failed the
    # whole read (File name too long), so no session could open on the image.
    deepest, long_module, package_past = too_long_tree(deep_dir)
    (deep_dir / "a.py").write_text("")
    snapshot = ImageStore(deep_dir).read_snapshot()
    assert f"{deepest}/leaf.py" in snapshot.files and "a.py" in snapshot.files
    assert snapshot.too_long == sorted([long_module, package_past])
    assert not any(rel.startswith(package_past) for rel in snapshot.files)
    # The tree is nested past the recursion limit too (PATH_MAX allows some 2000 levels),
    # and read whole up to PATH_MAX: each package's __init__.py, leaf.py and a.py.
    depth = deepest.count("/") + 1
    assert depth > _past_the_recursion_limit()
    assert len(snapshot.files) == depth + 2


@pytest.fixture
def shared_tmp():
    """A directory other accounts may reach (pytest's tmp_path lies in a 0700 one)."""
    import shutil
    import tempfile
    top = Path(tempfile.mkdtemp(prefix="gsmcpd-shared-", dir="/tmp"))
    os.chmod(top, 0o755)
    yield top
    shutil.rmtree(top, ignore_errors=True)


def _shared_image(top, files):
    """An image group-writable (setgid) for OTHER_UID's group, as per-user workers share one."""
    store = make_image(top / "image", files)
    for path in [store.image_dir, *store.image_dir.rglob("*")]:
        os.chown(path, 0, OTHER_UID)
        os.chmod(path, 0o2775 if path.is_dir() else 0o664)
    return store


@needs_root
def test_accounts_sharing_a_setgid_image_through_its_group_commit_to_the_state_the_first_made(shared_tmp):
    # The state directory the first account's session made lost the setgid bit it took
    # from the image's (made 0775 by fchmod): the journal then had that account's own
    # group, and another account of the image's group could not append to it, each of its
    # commits left pending ("Permission denied: 'journal.jsonl'").
    store = _shared_image(shared_tmp, {"a.py": "a = 1\n", "b.py": "b = 1\n"})
    first, second = OTHER_UID + 10, OTHER_UID + 11   # each in its own group, and the image's
    assert as_account(first, first, lambda: _committed(store, {"a.py": b"a = 2\n"}), [OTHER_UID]) == (
        "returned", 1)
    assert os.stat(store.state_dir).st_mode & stat.S_ISGID and os.stat(store.journal_file).st_gid == OTHER_UID
    assert as_account(second, second, lambda: _committed(store, {"b.py": b"b = 2\n"}), [OTHER_UID]) == (
        "returned", 2)
    assert [record["files"][0]["file"] for record in store.journal()] == ["a.py", "b.py"]


@needs_root
@pytest.mark.parametrize("change", [b"a = 2\n", None])
def test_a_commit_to_a_module_file_the_account_may_not_write_is_refused_and_writes_nothing(shared_tmp, change):
    # The rename needs only the (group-writable) directory: another account's 0644
    # module was replaced, or removed, whatever its own permissions said.
    store = _shared_image(shared_tmp, {"a.py": "a = 1\n", "b.py": "b = 1\n"})
    os.chmod(store.image_dir / "a.py", 0o644)           # root's, not group-writable
    outcome = as_account(OTHER_UID + 1, OTHER_UID, lambda: store.commit(
        {"a.py": change, "b.py": b"b = 2\n"}, {"a.py": sha256(b"a = 1\n"), "b.py": sha256(b"b = 1\n")},
        user="ben", session_id="s"))
    assert outcome == ("raised", "UnwritableModule: [Errno 13] a.py may not be changed by this account "
                       "(its file is not writable by it: owner root, mode 0644), so nothing was written; "
                       "its owner must make it writable to you (group-writable in a shared image)")
    assert (store.image_dir / "a.py").read_text() == "a = 1\n" and (store.image_dir / "b.py").read_text() == "b = 1\n"
    assert store.journal() == [] and not list(store.image_dir.rglob(".*.tmp-*"))
    assert os.stat(store.image_dir / "a.py").st_uid == 0


@needs_root
def test_a_commit_by_an_account_outside_the_group_sharing_the_image_names_the_group_to_join(shared_tmp):
    # "its owner must make it writable to you" of a 0664 file sent the user to its owner,
    # who could do nothing: the account lacks the image's group, which an administrator grants.
    store = _shared_image(shared_tmp, {"a.py": "a = 1\n"})
    store.read_snapshot()                                # its lock made, as a member's session would
    outsider = OTHER_UID + 3                             # in its own group only
    outcome = as_account(outsider, outsider, lambda: store.commit(
        {"a.py": b"a = 2\n"}, {"a.py": sha256(b"a = 1\n")}, user="cat", session_id="s"))
    group, account = group_name(OTHER_UID), account_name(outsider)
    assert outcome == ("raised", f"UnwritableModule: [Errno 13] a.py may not be changed by this account "
                       f"(its file is writable by its group {group}, and this account is not in it: "
                       "owner root, mode 0664), so nothing was written; an administrator must add "
                       f"{account} to {group} (usermod -aG {group} {account}; the sessions it opens after "
                       "that are in it)")
    assert (store.image_dir / "a.py").read_text() == "a = 1\n" and store.journal() == []


@needs_root
@pytest.mark.parametrize("rel", ["pkg/a.py", "a.py"])
def test_a_module_refused_in_a_directory_not_writable_either_says_the_directory_must_be_made_writable(
        shared_tmp, rel):
    # Only "its owner must make it writable to you": the file writable, its rename in the
    # directory would still have been refused.
    store = _shared_image(shared_tmp, {"pkg/__init__.py": "", "pkg/a.py": "a = 1\n", "a.py": "a = 1\n"})
    store.read_snapshot()                                # its lock made: the account cannot make it there
    os.chmod(store.image_dir / posixpath.dirname(rel), 0o755)   # root's, not group-writable
    os.chmod(store.image_dir / rel, 0o644)
    outcome = as_account(OTHER_UID + 1, OTHER_UID, lambda: store.commit(
        {rel: b"a = 2\n"}, {rel: sha256(b"a = 1\n")}, user="ben", session_id="s"))
    where = "its directory pkg/" if rel == "pkg/a.py" else "the image's directory"
    assert outcome == ("raised", f"UnwritableModule: [Errno 13] {rel} may not be changed by this account "
                       "(its file is not writable by it: owner root, mode 0644), so nothing was written; "
                       f"its owner must make it writable to you, and {where} (owner root) must be made "
                       "writable to you too (group-writable in a shared image)")
    assert (store.image_dir / rel).read_text() == "a = 1\n" and store.journal() == []


@needs_root
def test_in_a_sticky_directory_a_commit_to_another_accounts_module_is_refused_before_the_commit_point(shared_tmp):
    # There the rename over it fails (EPERM) past the commit point: a commit recorded
    # that could never be finished.
    store = _shared_image(shared_tmp, {"pkg/__init__.py": "", "pkg/a.py": "a = 1\n"})
    os.chmod(store.image_dir / "pkg", 0o3777)
    outcome = as_account(OTHER_UID + 1, OTHER_UID, lambda: store.commit(
        {"pkg/a.py": b"a = 2\n"}, {"pkg/a.py": sha256(b"a = 1\n")}, user="ben", session_id="s"))
    assert outcome[0] == "raised" and "pkg/a.py may not be changed by this account (its directory is " \
        "sticky and the file another account's: owner root, mode 0664)" in outcome[1], outcome
    # Its mode is no remedy there: only its owner, or the directory's, may replace it.
    assert outcome[1].endswith("nothing was written; its owner must change it, or its directory pkg/ "
                               "lose its sticky bit (chmod -t, by its owner root)"), outcome
    assert store.journal() == [] and not (store.state_dir / "commit.intent").exists()


@needs_root
def test_a_group_writable_module_of_another_account_is_committed_and_a_new_one_is_left_group_writable(shared_tmp):
    store = _shared_image(shared_tmp, {"a.py": "a = 1\n"})
    old_umask = os.umask(0o077)                    # the unit's, inherited by every worker
    try:
        outcome = as_account(OTHER_UID + 1, OTHER_UID, lambda: store.commit(
            {"a.py": b"a = 2\n", "pkg/__init__.py": b"", "pkg/new.py": b"n = 1\n", "top.py": b"t = 1\n"},
            {"a.py": sha256(b"a = 1\n")}, user="ben", session_id="s"))
    finally:
        os.umask(old_umask)
    assert outcome == ("returned", 1)
    assert (store.image_dir / "a.py").read_text() == "a = 2\n"
    for new in ("pkg/__init__.py", "pkg/new.py", "top.py"):   # another account may commit to them
        assert stat.S_IMODE((store.image_dir / new).stat().st_mode) == 0o664, new
    outcome = as_account(OTHER_UID + 2, OTHER_UID, lambda: store.commit(
        {"pkg/new.py": b"n = 2\n"}, {"pkg/new.py": sha256(b"n = 1\n")}, user="cat", session_id="s"))
    assert outcome == ("returned", 2)


@contextlib.contextmanager
def _read_only(path):
    """`path` bind-mounted read-only onto itself (skipped where mounting is not allowed):
    an image outside a unit's ReadWritePaths= under ProtectSystem=strict."""
    mounted = subprocess.run(["mount", "--bind", str(path), str(path)], capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"root cannot bind-mount here: {mounted.stderr.strip()}")
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(path)], check=True)
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=True)


@needs_root
@pytest.mark.parametrize("change", [b"a = 2\n", None])
def test_a_commit_to_an_image_on_a_read_only_file_system_fails_as_unwritten_not_as_the_files_owners_to_fix(
        shared_tmp, change):
    # Its own group-writable module was refused as "not writable by it ... its owner must
    # make it writable to you": the file system, not the file, refused (EROFS).
    store = _shared_image(shared_tmp, {"a.py": "a = 1\n"})
    store.read_snapshot()                               # its lock made: a read-only image serves
    with _read_only(store.image_dir):
        outcome = as_account(OTHER_UID + 1, OTHER_UID, lambda: store.commit(
            {"a.py": change}, {"a.py": sha256(b"a = 1\n")}, user="ben", session_id="s"))
    assert outcome[0] == "raised" and outcome[1].startswith("OSError: [Errno 30] Read-only file system"), outcome
    assert (store.image_dir / "a.py").read_text() == "a = 1\n" and store.journal() == []


def test_a_new_module_takes_its_directorys_read_and_write_bits(tmp_path):
    store = make_image(tmp_path / "image", {"a.py": "a = 1\n"})
    os.chmod(store.image_dir, 0o700)               # a private image
    _committed(store, {"new.py": b"n = 1\n"})
    assert stat.S_IMODE((store.image_dir / "new.py").stat().st_mode) == 0o600
    os.chmod(store.image_dir, 0o777)               # one every account may write to
    _committed(store, {"open.py": b"o = 1\n"})
    assert stat.S_IMODE((store.image_dir / "open.py").stat().st_mode) == 0o664   # not 0666


def test_a_lock_held_past_the_wait_fails_the_read_and_the_commit_naming_its_holder(tmp_path):
    # Any account that may read the image can flock its lock: a session open, refresh
    # or commit then waited for ever, every user's at once.
    import fcntl
    import pwd

    make_image(tmp_path / "image", {"a.py": "a = 1\n"}).read_snapshot()   # its lock made
    store = ImageStore(tmp_path / "image", lock_wait=0.2)
    with open(store.lock_file) as holding:
        fcntl.flock(holding, fcntl.LOCK_EX)
        said = ("the image lock %s was not free after 0.2s (GS_MCP_IMAGE_LOCK_WAIT): held by pid %d (account %s); "
                "nothing was read or written; the administrator can end the session holding it "
                "(gsmcpd status, gsmcpd end)" % (store.lock_file, os.getpid(), pwd.getpwuid(os.geteuid()).pw_name))
        with pytest.raises(store_module.ImageLockTimeout) as refused:
            store.read_snapshot()
        assert refused.value.strerror == said and refused.value.errno == errno.ETIMEDOUT
        with pytest.raises(store_module.ImageLockTimeout):
            _committed(store, {"a.py": b"a = 2\n"})
        assert (store.image_dir / "a.py").read_text() == "a = 1\n"
        fcntl.flock(holding, fcntl.LOCK_SH)              # a reader's: reads go on, a commit waits
        assert store.read_snapshot().files == {"a.py": b"a = 1\n"}
        with pytest.raises(store_module.ImageLockTimeout):
            _committed(store, {"a.py": b"a = 2\n"})
    assert _committed(store, {"a.py": b"a = 2\n"}) == 1   # once it is let go


@needs_root
def test_a_module_another_account_made_meanwhile_unwritable_is_a_conflict_first(shared_tmp):
    # The session never saw it: "created on disk since", which a refresh shows, says more
    # than "may not be changed".
    store = _shared_image(shared_tmp, {"a.py": "a = 1\n"})
    (store.image_dir / "new.py").write_text("n = 0\n")
    os.chmod(store.image_dir / "new.py", 0o644)
    outcome = as_account(OTHER_UID + 1, OTHER_UID, lambda: store.commit(
        {"new.py": b"n = 1\n"}, {"a.py": sha256(b"a = 1\n")}, user="ben", session_id="s"))
    assert outcome == ("raised", "CommitConflict: new.py"), outcome


def test_a_change_the_disk_already_holds_is_taken_as_committed_not_written_or_journalled(tmp_path):
    # Another commit made a.py and removed c.py just as this one does: no conflict, and
    # only b.py is written and journalled.
    store = make_image(tmp_path, {"a.py": "a = 1\n", "b.py": "b = 1\n", "c.py": "c = 1\n"})
    base = {rel: sha256(data) for rel, data in store.read_snapshot().files.items()}
    store.commit({"a.py": b"a = 2\n", "c.py": None}, base, user="u", session_id="t")
    theirs = (tmp_path / "a.py").stat().st_ino
    already = []
    assert store.commit({"a.py": b"a = 2\n", "b.py": b"b = 2\n", "c.py": None}, base, user="u",
                        session_id="s", already_committed=already) == 2
    assert already == ["a.py", "c.py"]
    assert (tmp_path / "a.py").stat().st_ino == theirs          # not written again
    assert [f["file"] for f in store.journal()[1]["files"]] == ["b.py"]
    # All of it there already: no commit at all.
    already = []
    assert store.commit({"a.py": b"a = 2\n"}, base, user="u", session_id="s", already_committed=already) == 2
    assert already == ["a.py"] and len(store.journal()) == 2


def test_a_change_the_disk_holds_does_not_save_the_rest_of_the_commit_from_its_conflict(tmp_path):
    store = make_image(tmp_path, {"a.py": "a = 1\n", "b.py": "b = 1\n"})
    base = {rel: sha256(data) for rel, data in store.read_snapshot().files.items()}
    store.commit({"a.py": b"a = 2\n", "b.py": b"b = 'theirs'\n"}, base, user="u", session_id="t")
    with pytest.raises(CommitConflict) as raised:
        store.commit({"a.py": b"a = 2\n", "b.py": b"b = 2\n"}, base, user="u", session_id="s")
    assert raised.value.how == {"b.py": "changed"}
    assert (tmp_path / "b.py").read_text() == "b = 'theirs'\n" and len(store.journal()) == 1


def test_a_conflict_says_which_commit_made_each_file_as_the_disk_has_it_or_that_none_did(tmp_path):
    store = make_image(tmp_path, {"a.py": "a = 1\n", "b.py": "b = 1\n", "c.py": "c = 1\n", "d.py": "d = 1\n"})
    base = {rel: sha256(data) for rel, data in store.read_snapshot().files.items()}
    store.commit({"a.py": b"a = 2\n", "d.py": None}, base, user="alice", session_id="5e55104a-long-id")
    store.commit({"c.py": b"c = 2\n"}, {"c.py": base["c.py"]}, user="bob", session_id="b0b")
    (tmp_path / "b.py").write_text("b = 'editor'\n")     # never committed
    (tmp_path / "c.py").write_text("c = 'editor'\n")     # committed by bob, then edited
    alice = {key: store.journal()[0][key] for key in ("user", "session", "time")}
    with pytest.raises(CommitConflict) as raised:
        store.commit({rel: b"x = 3\n" for rel in ("a.py", "b.py", "c.py", "d.py")}, base, user="u", session_id="s")
    assert raised.value.by == {"a.py": alice, "b.py": None, "c.py": None, "d.py": alice}
    assert alice["session"] == "5e55104a-long-id" and alice["user"] == "alice"
    # A record another account wrote with no strings where they belong: nothing but strings.
    with open(store.journal_file, "a") as journal:
        journal.write(json.dumps({"id": "x", "user": 7, "session": ["s"], "files": [
            {"file": "b.py", "old": None, "new": sha256(b"b = 'editor'\n")}]}) + "\n")
    with pytest.raises(CommitConflict) as raised:
        store.commit({"b.py": b"x = 3\n"}, base, user="u", session_id="s")
    assert raised.value.by == {"b.py": {"user": None, "session": None, "time": None}}


def test_journal_records_of_another_shape_are_passed_over_when_a_conflict_names_who(tmp_path):
    # Another account sharing the image can write the journal: a record whose "files" is
    # no list of objects, or a line nested past the parser's depth, made the conflict a
    # TypeError or RecursionError, answered instead of the conflict.
    store = make_image(tmp_path, {"a.py": "a = 1\n"})
    base = {rel: sha256(data) for rel, data in store.read_snapshot().files.items()}
    store.commit({"a.py": b"a = 2\n"}, base, user="alice", session_id="5e55104a")
    alice = {key: store.journal()[0][key] for key in ("user", "session", "time")}
    odd = [{"id": "n", "files": 7}, {"id": "l", "files": [{"file": ["a.py"], "new": None}]},
           {"id": "s", "files": ["a.py", 3]}, {"id": "f", "files": [{"file": 3}]}]
    with open(store.journal_file, "a") as journal:
        journal.write("".join(json.dumps(record) + "\n" for record in odd))
        journal.write("[" * 100000 + "]" * 100000 + "\n")
    with pytest.raises(CommitConflict) as raised:
        store.commit({"a.py": b"a = 3\n"}, base, user="u", session_id="s")
    assert raised.value.by == {"a.py": alice}


def test_the_journal_is_read_back_from_its_end_whole_across_chunks(tmp_path):
    # A conflict reads the journal last record first, 64 KiB at a time: records that
    # straddle a chunk, and one longer than a chunk, come back whole and in order.
    store = make_image(tmp_path, {"a.py": ""})
    records = [{"id": str(n), "files": [{"file": f"m{n}.py", "new": "x" * (n % 7) * 40}]} for n in range(3000)]
    records[1500]["files"] *= 2000                       # ~100 KiB on one line
    store.state_dir.mkdir(exist_ok=True)
    (store.state_dir / "journal.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records)
                                                   + '{"id": "cut off mid-app')
    assert list(store._records_from_end()) == records[::-1]


def _sticky_refusal(state_dir, owner):
    return (f"StickyStateDirectory: [Errno 1] the image's state directory {state_dir} is sticky (mode 3775, "
            f"owner {owner}): there only a file's owner may replace or remove it, and every account's commit "
            "replaces and removes the commit intent there, so a commit another account left pending would "
            f"fail every other's; remove the bit: chmod -t {state_dir} (as {owner} or root)")


@needs_root
def test_a_sticky_state_directory_refuses_other_accounts_opens_and_commits_naming_the_fix(shared_tmp, monkeypatch):
    # There a commit one account left pending (its intent, its file) failed every other
    # account's commit, "Operation not permitted: 'commit.intent'", until it committed again.
    from gsmcpd.image.default import image_dir_problem
    store = _shared_image(shared_tmp, {"a.py": "a = 1\n", "b.py": "b = 1\n"})
    ann, ben = OTHER_UID + 1, OTHER_UID + 2
    assert as_account(ann, OTHER_UID, lambda: _pending(store, {"a.py": b"a = 2\n"}, monkeypatch)) == (
        "returned", None)
    assert os.stat(store.intent_file).st_uid == os.stat(store.state_dir).st_uid == ann   # its first session made it
    os.chmod(store.state_dir, 0o3775)
    refusal = _sticky_refusal(store.state_dir, f"uid {ann}")
    assert as_account(ben, OTHER_UID, lambda: store.read_snapshot()) == ("raised", refusal)
    assert as_account(ben, OTHER_UID, lambda: store.commit(
        {"b.py": b"b = 2\n"}, {"b.py": sha256(b"b = 1\n")}, user="ben", session_id="s")) == ("raised", refusal)
    assert (store.image_dir / "b.py").read_text() == "b = 1\n" and os.path.exists(store.intent_file)
    # Root, and the directory's owner, may replace and remove any file there: not refused,
    # but serving per-user workers (any account) is.
    assert as_account(ann, OTHER_UID, lambda: sorted(store.read_snapshot().files)) == ("returned", ["a.py", "b.py"])
    assert image_dir_problem(store.image_dir) is None
    assert image_dir_problem(store.image_dir, per_user=True) == "cannot be served: " + refusal.split("] ", 1)[1]
    os.chmod(store.state_dir, 0o2775)   # the fix: ben's commit then finishes ann's pending one
    assert as_account(ben, OTHER_UID, lambda: _committed(store, {"b.py": b"b = 2\n"})) == ("returned", 2)
    assert [(store.image_dir / rel).read_text() for rel in ("a.py", "b.py")] == ["a = 2\n", "b = 2\n"]
    assert not os.path.exists(store.intent_file)
