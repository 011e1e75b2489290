"""An image directory this account may not list (mode 0311) or enter (0700), another
account's: its sessions read the rest of the image, and no commit writes or removes there.

Root is not stopped by mode bits, so each check runs as `nobody` in a child of the suite's
own process (as_account), on the Python running the suite: one nobody cannot start (a
pyenv build's shared libpython under /root) is checked too. Skipped unless the suite runs
as root, as CI does.
"""

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from gsmcpd.image.store import ImageStore, sha256
from helpers import as_account

NOBODY = 65534

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (to run a check as another account)")


@pytest.fixture
def image():
    """shop/ lists for nobody; locked/ (0311) it may enter but not list; private/ (0700) not
    even enter; pkg/sub/ (0311) in a package it sees; readonly/ (0555) it may not write."""
    top = Path(tempfile.mkdtemp(prefix="gsmcpd-unlisted-", dir="/tmp"))
    root = top / "image"
    files = {"shop/__init__.py": "", "shop/cart.py": "class Cart:\n    pass\n",
             "locked/__init__.py": "class Secret:\n    pass\n", "locked/inner.py": "x = 1\n",
             "private/__init__.py": "", "private/inner.py": "x = 1\n",
             "pkg/__init__.py": "", "pkg/seen.py": "", "pkg/sub/__init__.py": "", "pkg/sub/unseen.py": "",
             "readonly/__init__.py": ""}
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    for path in [top, root, *root.rglob("*")]:
        os.chmod(path, 0o777 if path.is_dir() else 0o666)
    for directory, mode in {"locked": 0o311, "pkg/sub": 0o311, "private": 0o700, "readonly": 0o555}.items():
        os.chmod(root / directory, mode)
    try:
        yield root
    finally:
        shutil.rmtree(top, ignore_errors=True)


def as_nobody(image, work):
    """What `work(store)` returns, run as nobody (no groups), `store` an ImageStore of `image`."""
    outcome = as_account(NOBODY, NOBODY, lambda: work(ImageStore(image)))
    assert outcome[0] == "returned", outcome
    return outcome[1]


def commit(store, changes):
    """What a commit of `changes` onto what `store` reads answers: "committed", or the
    OSError it raised."""
    base = {rel: sha256(data) for rel, data in store.read_snapshot().files.items()}
    try:
        store.commit(changes, base, user="u", session_id="s")
        return "committed"
    except OSError as error:
        return f"{type(error).__name__}: {error}"


def sources(image):
    return {path: path.read_bytes() for path in image.rglob("*.py")}


def test_a_snapshot_leaves_out_what_it_may_not_list_or_enter_and_names_it(image):
    # A 0311 package made every session's open fail: PermissionError ... image/locked.
    def listed(store):
        snapshot = store.read_snapshot()
        return sorted(snapshot.files), snapshot.unlisted
    files, unlisted = as_nobody(image, listed)
    assert files == ["pkg/__init__.py", "pkg/seen.py", "readonly/__init__.py", "shop/__init__.py", "shop/cart.py"]
    assert unlisted == ["locked", "pkg/sub", "private"]


@pytest.mark.parametrize("rel, directory", [
    ("locked/new.py", "locked"), ("locked/__init__.py", "locked"), ("private/new.py", "private"),
    ("private/__init__.py", "private"), ("pkg/sub/new.py", "pkg/sub"),
    ("locked.py", "locked"), ("private.py", "private"),   # the other form of what it never saw
])
def test_a_commit_into_a_directory_it_may_not_list_is_refused_naming_it(image, rel, directory):
    before = sources(image)
    answer = as_nobody(image, lambda store: commit(store, {rel: b"y = 2\n"}))
    assert answer == (
        f"UnlistedDirectory: [Errno 13] {directory}/ is a directory of the image this account may "
        "not list or enter, so this session never saw what is in it and a commit must not write or "
        "remove there; nothing was written; its owner must make it readable (or move it away)")
    assert sources(image) == before


def test_removing_a_package_holding_a_directory_it_may_not_list_is_refused(image):
    # The package's modules it saw would go, and what pkg/sub holds be left in no package.
    answer = as_nobody(image, lambda store: commit(store, {"pkg/__init__.py": None, "pkg/seen.py": None}))
    assert answer.startswith("UnlistedDirectory: [Errno 13] pkg/sub/ is a directory")
    assert (image / "pkg/__init__.py").exists() and (image / "pkg/seen.py").exists()


def test_a_commit_into_a_directory_it_may_not_write_names_the_directory(image):
    # It said "Permission denied: '.new.py.tmp-123'", not where.
    answer = as_nobody(image, lambda store: commit(store, {"readonly/new.py": b"y = 2\n"}))
    assert answer.startswith("PermissionError: [Errno 13] Permission denied: 'readonly/.new.py.tmp-")
    assert not (image / "readonly/new.py").exists()


def test_the_rest_of_the_image_commits_as_usual(image):
    answer = as_nobody(image, lambda store: commit(store, {"shop/cart.py": b"class Cart:\n    n = 1\n"}))
    assert answer == "committed"
    assert (image / "shop/cart.py").read_text() == "class Cart:\n    n = 1\n"

