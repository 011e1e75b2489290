"""Seeded, randomized sessions on one image: 2-4 views edit, add and remove modules
(as the mutation tools do, through the view's own calls), commit, abort, refresh, open
and close; now and then a commit fails before or past its commit point (the disk
full, or a break: the view lives on) or is killed there (the worker is gone), and the
next store user recovers it. After every step the image, every view and the journal
are checked against a small model of the documented rules (DESIGN.md "The Python
image", README "Refresh" and "Commit"):

* the committed image is the files on disk: every commit's files, nothing else, and
  never a module in no package (no view would see it) or one module in two files;
* a view sees its base snapshot plus its own changes, nothing of another view's
  uncommitted changes and no commit made after its base until it refreshes,
  aborts or commits; a commit's base is the image as that commit left it, not with
  another's landing right after it;
* a commit takes a file it changes that the disk already holds as changed (another's
  identical commit) as committed: not written, not journalled; it conflicts exactly
  when another file it stands on differs on disk from its base (that file's base
  being the disk's if it is already committed): a file it changes, the
  `__init__.py` of a package it writes into (gone), a module in a package it
  removes, a new module's other form (`q.py`, `q/__init__.py`).
  A conflict, or any failure before the commit point, writes nothing and keeps
  the view as it was;
* refresh brings in what others committed and keeps this view's changes; a file
  changed on both sides, or one of theirs that ours stand on, keeps ours and its
  old base (so its commit conflicts), unless theirs is ours: its base moves onto it;
* a commit killed past its commit point reads as done and is finished by the next
  store user; one killed before it changed nothing;
* the journal has one record per commit, with its files and their old/new hashes;
* a view's changed modules and version are the model's.

Deterministic per seed; a failure names its seed and its last steps. Run this file
as a script to try many more seeds:
PYTHONPATH=.:tests python tests/test_image_transactions_properties.py FIRST COUNT
"""

from __future__ import annotations

import errno
import json
import logging
import os
import random
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

import pytest

from gsmcpd.image import store as store_module
from gsmcpd.image.store import CommitConflict, ImageStore, module_name_of, relpath_of, sha256
from gsmcpd.image.view import View
from helpers import sweep_seeds

SEEDS = range(50)
STEPS = 30
MAX_VIEWS = 4

INITIAL = {"a.py": "A = 0\n", "b.py": "B = 0\n", "pkg/__init__.py": "", "pkg/c.py": "C = 0\n"}
# Names a session may create, as the create-dictionary tool does (a dotted name makes
# its missing packages); "q" and "q.r" make the module q and the package q.
NEW_NAMES = ["a", "n1", "pkg.c", "pkg.d", "pkg.d", "pkg.sub.e", "pkg.sub.e", "q", "q.r", "q.r"]


class Crash(BaseException):
    """The worker killed mid-commit (a BaseException, as a kill is no error to handle)."""


# -- the model -----------------------------------------------------------------------

def enclosing_packages(rel: str) -> list[str]:
    """The __init__.py of each package `rel` lies in (a package's own not counted)."""
    parts = rel.split("/")
    return [os.path.join(*parts[:depth], "__init__.py") for depth in range(1, len(parts))
            if os.path.join(*parts[:depth], "__init__.py") != rel]


def twin_of(rel: str) -> str:
    """The same module's file in the other form: q.py <-> q/__init__.py."""
    if rel.endswith("/__init__.py"):
        return rel.removesuffix("/__init__.py") + ".py"
    return rel.removesuffix(".py") + "/__init__.py"


def visible(files: dict[str, str]) -> dict[str, str]:
    """The module files a snapshot reads: those in the root or in packages all the way."""
    return {rel: text for rel, text in files.items()
            if all(init in files for init in enclosing_packages(rel))}


def relpath_in(texts: dict[str, str], module: str) -> str | None:
    for rel in (relpath_of(module), relpath_of(module, package=True)):
        if rel in texts:
            return rel
    return None


def digest(text: str | None) -> str | None:
    return None if text is None else sha256(text.encode())


class ModelView:
    def __init__(self, committed: dict[str, str], version: int):
        self.base = visible(committed)
        self.texts = dict(self.base)
        self.version = version

    def changed(self) -> list[str]:
        return sorted(rel for rel in set(self.texts) | set(self.base)
                      if self.texts.get(rel) != self.base.get(rel))


class Model:
    def __init__(self):
        self.committed = dict(INITIAL)      # the module files on disk, once every commit is applied
        self.journal: list[tuple[str, list]] = []
        self.views: dict[str, ModelView] = {}

    def open(self, name: str) -> None:
        self.views[name] = ModelView(self.committed, len(self.journal))

    def already(self, view: ModelView) -> list[str]:
        """The files `view` changed that the disk already holds as it has them."""
        return [rel for rel in view.changed() if self.committed.get(rel) == view.texts.get(rel)]

    def to_write(self, view: ModelView) -> list[str]:
        already = self.already(view)
        return [rel for rel in view.changed() if rel not in already]

    def conflicts(self, view: ModelView) -> list[str]:
        """The files a commit of `view` finds on disk not as its base had them (once
        those already committed are taken as its base)."""
        changed, already = self.to_write(view), self.already(view)
        base = {rel: text for rel, text in view.base.items() if rel not in already}
        base.update({rel: self.committed[rel] for rel in already if rel in self.committed})
        found = {rel for rel in changed if self.committed.get(rel) != base.get(rel)}
        modules = visible(self.committed)
        for rel in changed:
            if rel not in view.texts:        # removed; a package removed takes what is in it
                if rel.endswith("/__init__.py"):
                    package = rel[:-len("__init__.py")]
                    found |= {other for other, text in modules.items() if other.startswith(package)
                              and other not in changed and text != base.get(other)}
                continue
            for init in enclosing_packages(rel):   # written: the packages it goes into are still there
                if init not in changed and init in base and init not in self.committed:
                    found.add(init)
            twin = twin_of(rel)
            if (rel not in base and twin not in changed and twin not in base
                    and twin in self.committed):   # made meanwhile in the other form
                found.add(twin)
        return sorted(found)

    def commit(self, name: str, session: str) -> list[str]:
        """Apply the view's commit (no conflict); returns the files it wrote."""
        view = self.views[name]
        changed = self.to_write(view)
        if changed:
            for rel in changed:
                if rel in view.texts:
                    self.committed[rel] = view.texts[rel]
                else:
                    self.committed.pop(rel, None)
            self.journal.append((session, [(rel, digest(view.base.get(rel)), digest(view.texts.get(rel)))
                                           for rel in changed]))
        self.views[name] = ModelView(self.committed, len(self.journal))
        return changed

    def abort(self, name: str) -> None:
        self.views[name] = ModelView(self.committed, len(self.journal))

    def refresh(self, name: str) -> None:
        view = self.views[name]
        fresh = visible(self.committed)
        changed = set(view.changed())
        written = {rel for rel in changed if rel in view.texts}
        removed_packages = {rel[:-len("__init__.py")] for rel in changed - written
                            if rel.endswith("/__init__.py")}

        def stands_on(rel: str) -> bool:
            """Ours leave `rel` alone but a change of theirs to it would clash with ours."""
            if any(rel.startswith(package) for package in removed_packages):
                return True               # in a package ours removes
            if rel.endswith("/__init__.py") and rel not in fresh and any(
                    other.startswith(rel[:-len("__init__.py")]) for other in written):
                return True               # a package they removed, ours write into
            return twin_of(rel) in written and rel in fresh   # one module, made in both forms

        for rel in sorted(set(fresh) | set(view.base) | set(view.texts)):
            ours = rel in changed or stands_on(rel)
            theirs = fresh.get(rel) != view.base.get(rel)
            if ours and theirs and view.texts.get(rel) != fresh.get(rel):
                continue                          # ours kept, on its old base
            for side in ((view.base,) if ours else (view.base, view.texts)):
                if rel in fresh:
                    side[rel] = fresh[rel]
                else:
                    side.pop(rel, None)
        view.version = len(self.journal)


# -- driving real views and the model together ----------------------------------------

class Run:
    def __init__(self, seed: int, root: Path):
        self.rng = random.Random(seed)
        self.root = root
        for rel, text in INITIAL.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
        self.store = ImageStore(root)
        self.model = Model()
        self.views: dict[str, View] = {}
        self.opened = 0
        self.counter = 0
        self.log: list[str] = []
        for _ in range(2):
            self.open_view()

    def close(self) -> None:
        for view in self.views.values():
            view.close()

    def say(self, what: str) -> None:
        self.log.append(what)

    # operations

    def open_view(self) -> None:
        self.opened += 1
        name = f"s{self.opened}"
        self.views[name] = View.open(self.root, user="u", session_id=name, install=False)
        self.model.open(name)
        self.say(f"open {name}")

    def close_view(self, name: str) -> None:
        self.views.pop(name).close()
        del self.model.views[name]
        self.say(f"close {name}")

    def new_text(self, module: str) -> str:
        self.counter += 1
        return f"# {module} é\nX = {self.counter}\n"

    def edit(self, name: str) -> None:
        view, mview = self.views[name], self.model.views[name]
        modules = view.module_names()
        if not modules:
            return
        module = self.rng.choice(modules)
        rel = relpath_in(mview.texts, module)
        choices = [self.new_text(module)] * 3
        if rel in mview.base:
            choices.append(mview.base[rel])                   # changed back: no change
        others = [v.texts[rel] for v in self.model.views.values() if rel in v.texts]
        choices.append(self.rng.choice(others))               # another view's text, the same change
        text = self.rng.choice(choices)
        view.set_source(module, text, live=False)
        mview.texts[rel] = text
        self.say(f"{name} edit {module} -> {text!r}")

    def add(self, name: str) -> None:
        view, mview = self.views[name], self.model.views[name]
        module = self.rng.choice(NEW_NAMES)
        parts = module.split(".")
        if view.has_module(module):
            return
        missing = []
        for depth in range(1, len(parts)):
            parent = ".".join(parts[:depth])
            rel = relpath_in(mview.texts, parent)
            if rel is None:
                missing.append(parent)
            elif not rel.endswith("__init__.py"):
                return                                        # the tool refuses: a module, no package
        for parent in missing:
            view.add_module(parent, "", package=True)
            mview.texts[relpath_of(parent, package=True)] = ""
        text = self.new_text(module)
        view.add_module(module, text)
        mview.texts[relpath_of(module)] = text
        self.say(f"{name} add {module} (with {missing})")

    def remove(self, name: str) -> None:
        view, mview = self.views[name], self.model.views[name]
        modules = view.module_names()
        if not modules:
            return
        packages = [module for module in modules if relpath_in(mview.texts, module).endswith("__init__.py")]
        module = self.rng.choice(packages if packages and self.rng.random() < 0.6 else modules)
        rel = relpath_in(mview.texts, module)
        view.remove_module(module)
        prefix = rel[:-len("__init__.py")] if rel.endswith("/__init__.py") else None
        for other in list(mview.texts):
            if other == rel or (prefix and other.startswith(prefix)):
                del mview.texts[other]
        self.say(f"{name} remove {module}")

    def commit(self, name: str, crash: str | None = None, then: str | None = None) -> None:
        """`then`: another view commits as soon as this one's store lets the image lock go,
        before this view is done: the view stands on its own commit, not on that one."""
        view, mview = self.views[name], self.model.views[name]
        conflicts = self.model.conflicts(mview)
        before = (dict(view.texts), dict(view.base_texts), view.version)
        self.say(f"{name} commit{' crashing ' + crash if crash else ''}"
                 f"{', then ' + then + ' commits' if then else ''}: changed {mview.changed()}, "
                 f"model conflicts {conflicts}")
        if conflicts:
            with pytest.raises(CommitConflict) as raised:
                view.commit()
            assert sorted(raised.value.files) == conflicts, "the conflict names other files"
            assert (view.texts, view.base_texts, view.version) == before, "a conflict changed the view"
            # (a commit left pending by a crash is finished first, conflict or not)
            assert self.disk_files() == self.model.committed, "a conflict changed the disk"
            return
        if crash is None and then is not None and mview.changed():   # else the store is not asked
            store_commit = view.store.commit

            def then_theirs(*args, **kwargs):
                version = store_commit(*args, **kwargs)
                self.model.commit(name, name)
                self.commit(then)
                return version
            view.store.commit = then_theirs
            try:
                view.commit()
            finally:
                del view.store.commit
        elif crash is None:
            view.commit()
            self.model.commit(name, name)
            if then is not None:
                self.commit(then)
        else:
            how, when = crash.split(" ", 1)
            with self.failing(how, when):
                try:
                    view.commit()
                except (Crash, KeyboardInterrupt, OSError) as error:
                    assert "injected" in str(error)
                else:   # past its commit point, a failing disk leaves the commit pending
                    assert not self.model.to_write(mview) or crash == "disk-full past the commit point", \
                        "the failure was never reached"
            if how == "killed":                                # the worker is gone
                if when == "past the commit point":
                    self.model.commit(name, name)
                del self.model.views[name]
                self.views.pop(name).close()
            elif when == "past the commit point" or not self.model.to_write(mview):
                self.model.commit(name, name)                  # the view is on its commit
            else:
                assert (view.texts, view.base_texts, view.version) == before, \
                    "a failed commit changed the view"

    @contextmanager
    def failing(self, how: str, when: str):
        """Make this commit fail `how`: the disk full, a break (KeyboardInterrupt, the
        view lives on), or a kill (the worker is gone); `when`: as it writes its intent,
        or past that commit point, after some of its files are renamed into place or
        before it deletes its intent once all is done (picked at random)."""
        # Only this commit's intent: one a crash left pending is finished first, whole.
        earlier = {record["id"] for record in self.store.journal()}
        real_apply, real_unlink = ImageStore._apply, os.unlink

        def fail():
            if how == "disk-full":
                raise OSError(errno.ENOSPC, "injected: no space left on device")
            raise (KeyboardInterrupt if how == "break" else Crash)("injected")

        def before_intent(store, intent):
            fail()

        def partly_applied(store, intent):
            if intent["record"]["id"] in earlier:
                return real_apply(store, intent)
            writes = sorted(intent["writes"].items())
            for rel, temp in writes[:self.rng.randint(0, len(writes))]:
                os.replace(os.path.join(store.root, temp), os.path.join(store.root, rel))
            fail()

        def unlink(path, *args, **kwargs):   # by its path, or its name in the state directory
            if os.path.basename(os.fsdecode(path)) == store_module.INTENT_NAME and \
                    json.loads(Path(self.store.intent_file).read_bytes())["record"]["id"] not in earlier:
                fail()
            return real_unlink(path, *args, **kwargs)

        with pytest.MonkeyPatch.context() as patch:
            if when == "before the commit point":
                patch.setattr(ImageStore, "_write_intent", before_intent)
            elif self.rng.random() < 0.5:
                patch.setattr(ImageStore, "_apply", partly_applied)
            else:
                patch.setattr(store_module.os, "unlink", unlink)
            yield

    def abort(self, name: str) -> None:
        self.views[name].abort()
        self.model.abort(name)
        self.say(f"{name} abort")

    def refresh(self, name: str) -> None:
        self.views[name].refresh()
        self.model.refresh(name)
        self.say(f"{name} refresh")

    def recover(self) -> None:
        ImageStore(self.root).recover()
        self.say("recover")

    def step(self) -> None:
        names = sorted(self.views)
        name = self.rng.choice(names)
        roll = self.rng.random()
        if roll < 0.26:
            self.edit(name)
        elif roll < 0.38:
            self.add(name)
        elif roll < 0.46:
            self.remove(name)
        elif roll < 0.62:
            then = self.rng.choice([other for other in names if other != name])
            self.commit(name, then=then if self.rng.random() < 0.3 else None)
        elif roll < 0.68:
            self.abort(name)
        elif roll < 0.79:
            self.refresh(name)
        elif roll < 0.85:
            if len(self.views) < MAX_VIEWS:
                self.open_view()
            elif len(self.views) > 2:
                self.close_view(name)
        elif roll < 0.94:
            changing = [other for other in names if self.model.views[other].changed()]
            self.commit(self.rng.choice(changing or names), crash=self.rng.choice(
                ["disk-full before the commit point", "disk-full past the commit point",
                 "break before the commit point",
                 "break past the commit point", "killed before the commit point",
                 "killed past the commit point", "killed past the commit point"]))
        else:
            self.recover()
        if len(self.views) < 2:                              # a killed commit took one
            self.open_view()

    # checks

    def disk_files(self) -> dict[str, str]:
        """The module files on disk (as os.walk finds them, not as the store scans)."""
        found = {}
        for directory, dirs, files in os.walk(self.root):
            dirs[:] = [d for d in dirs if not d.startswith(".") and d != "__pycache__"]
            for file in files:
                assert ".tmp-" not in file or os.path.exists(self.store.intent_file), \
                    f"{file} left behind, with no commit pending"
                if file.endswith(".py") and not file.startswith("."):
                    path = Path(directory, file)
                    found[str(path.relative_to(self.root))] = path.read_bytes().decode()
        return found

    def check(self) -> None:
        model = self.model
        snapshot = ImageStore(self.root).read_snapshot()
        assert {rel: data.decode() for rel, data in snapshot.files.items()} == visible(model.committed), \
            "the committed image is not the model's"
        assert snapshot.version == len(model.journal), "the image's version is not the commit count"
        if not os.path.exists(self.store.intent_file):       # nothing pending: the disk is it
            disk = self.disk_files()
            assert disk == model.committed, "the files on disk are not the model's"
            assert disk == visible(disk), "a module file on disk is in no package: no view sees it"
            names = [module_name_of(rel) for rel in disk]
            assert len(names) == len(set(names)), "a module is two files on disk (q.py and q/__init__.py)"
        journal = [(record["session"], [(f["file"], f["old"], f["new"]) for f in record["files"]])
                   for record in self.store.journal()]
        assert journal == model.journal, "the journal is not one record per commit"
        for name, view in self.views.items():
            mview = model.views[name]
            assert view.base_texts == mview.base, f"{name}'s base is not the model's"
            assert view.texts == mview.texts, f"{name} does not see its base plus its own changes"
            assert view.base_hashes == {rel: digest(text) for rel, text in mview.base.items()}
            assert view.changed_modules() == [module_name_of(rel) for rel in mview.changed()]
            assert view.version == mview.version, f"{name}'s version is not the model's"


def run_case(seed: int, steps: int = STEPS) -> None:
    with tempfile.TemporaryDirectory() as directory:
        run = Run(seed, Path(directory))
        try:
            run.check()
            for number in range(steps):
                try:
                    run.step()
                    run.check()
                except BaseException as error:
                    error.add_note(f"seed {seed}, step {number}; the last steps:\n  "
                                   + "\n  ".join(run.log[-12:]))
                    raise
        finally:
            run.close()


@pytest.fixture(autouse=True)
def no_fsync(monkeypatch):
    """Durability is not what this checks, and hundreds of fsyncs would take seconds."""
    monkeypatch.setattr(store_module.os, "fsync", lambda fd: None)


@pytest.mark.parametrize("seed", SEEDS)
def test_random_sessions_keep_the_transaction_rules(seed):
    run_case(seed)


if __name__ == "__main__":     # many more seeds locally (see the docstring)
    store_module.os.fsync = lambda fd: None
    logging.getLogger("gsmcpd.image").setLevel(logging.ERROR)   # the pending commits' warnings
    sweep_seeds(run_case, sys.argv, __file__)
