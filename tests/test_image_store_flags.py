"""A commit meeting a file or directory that is immutable or append-only (chattr +i, +a):
the rename would fail even root's, so it is refused before the commit point, whole."""

import pytest

from gsmcpd.image.fsflags import protection_of
from gsmcpd.image.store import ProtectedFile, ImageStore, sha256
from helpers import chattr_flagged

pytestmark = pytest.mark.usefixtures("fsync_skipped")

FILES = {"pkg/__init__.py": "", "pkg/a.py": "x = 1\n", "pkg/gone.py": "y = 1\n", "top.py": ""}


def image(root):
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    store = ImageStore(root)
    store.commit({"pkg/a.py": b"x = 0\n"}, {"pkg/a.py": sha256(b"x = 1\n")}, user="u", session_id="s-0")
    return store


def base(store):
    return {rel: sha256(data) for rel, data in store.read_snapshot().files.items()}


@pytest.mark.parametrize("flagged, flag, said", [
    ("pkg/a.py", "i", "pkg/a.py in the image is immutable (chattr +i, shown by lsattr), so it cannot be replaced "
                      "or removed, even by root"),
    ("pkg/a.py", "a", "pkg/a.py in the image is append-only (chattr +a, shown by lsattr), so it cannot be replaced"),
    ("pkg/gone.py", "i", "pkg/gone.py in the image is immutable"),
    ("pkg", "a", "pkg in the image is append-only (chattr +a, shown by lsattr), so pkg/a.py cannot be written or "
                 "removed in it"),
    (".", "a", "the image's directory is append-only (chattr +a, shown by lsattr), so top.py cannot be written"),
    ("pkg", "i", "pkg in the image is immutable"),
    (".gsmcpd", "a", ".gsmcpd in the image is append-only (chattr +a, shown by lsattr), so the commit's intent"),
    (".gsmcpd/journal.jsonl", "i", ".gsmcpd/journal.jsonl in the image is immutable (chattr +i, shown by "
                                   "lsattr), so the commit's record cannot be added"),
])
def test_a_commit_meeting_a_protected_file_is_refused_whole_and_made_once_it_is_cleared(tmp_path, flagged, flag, said):
    # Root's commit was let past its commit point, where the rename failed: it stood on
    # disk half applied ("committed"), and failed every commit after it.
    store = image(tmp_path)
    changes = {"pkg/a.py": b"x = 2\n", "pkg/gone.py": None, "pkg/new.py": b"z = 1\n", "top.py": b"t = 1\n"}
    before = sorted(str(path.relative_to(tmp_path)) for path in tmp_path.rglob("*"))
    with chattr_flagged(tmp_path / flagged, flag):
        with pytest.raises(ProtectedFile) as refused:
            store.commit(changes, base(store), user="u", session_id="s-1")
        assert said in refused.value.strerror and "nothing was written" in refused.value.strerror
    assert sorted(str(path.relative_to(tmp_path)) for path in tmp_path.rglob("*")) == before
    assert (tmp_path / "pkg/a.py").read_text() == "x = 0\n" and len(store.journal()) == 1
    assert store.commit(changes, base(store), user="u", session_id="s-1") == 2
    assert (tmp_path / "pkg/a.py").read_text() == "x = 2\n" and not (tmp_path / "pkg/gone.py").exists()


def test_an_append_only_journal_takes_the_commit(tmp_path):
    store = image(tmp_path)
    with chattr_flagged(tmp_path / ".gsmcpd/journal.jsonl", "a"):
        assert store.commit({"pkg/a.py": b"x = 2\n"}, base(store), user="u", session_id="s-1") == 2
    assert (tmp_path / "pkg/a.py").read_text() == "x = 2\n"


def test_protection_of_what_is_no_regular_file_or_cannot_be_opened_is_none(tmp_path):
    import os
    os.mkfifo(tmp_path / "pipe")
    fd = os.open(tmp_path, os.O_PATH)
    try:
        assert protection_of("pipe", fd) is None and protection_of("missing", fd) is None
        (tmp_path / "plain").write_text("")
        assert protection_of("plain", fd) is None
        with chattr_flagged(tmp_path / "plain", "i"):
            assert protection_of("plain", fd) == "immutable"
        assert protection_of(".", fd) is None
        with chattr_flagged(tmp_path, "a"):
            assert protection_of(".", fd) == "append-only"
    finally:
        os.close(fd)
