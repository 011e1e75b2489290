"""A session's view of the image: one snapshot, its own import hook, its transaction.

The whole image is read once under the shared lock; image modules are imported
only from that in-memory snapshot by a meta-path finder this view installs, so
another session's commit stays invisible until `refresh`, `abort` or this
view's own `commit`. Mutations change the snapshot's text (and, through
`gsmcpd.image.live`, the live objects); `commit` writes the changed files.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import importlib.abc
import importlib.resources.abc
import importlib.util
import io
import linecache
import logging
import os
import secrets
import sys
import threading
import tokenize
import unicodedata
from importlib._bootstrap import _call_with_frames_removed
from types import CodeType, ModuleType
from dataclasses import dataclass, field
from pathlib import Path

from gsmcpd.image import kernel_ties, own, parsing, splice, walking
from gsmcpd.image.splice import NESTED_TOO_DEEPLY, nested_too_deeply
from gsmcpd.image.surely_run import surely_run
from gsmcpd.image.renumber import code_of_live_functions, code_within, renumber_moved_code, spans_of
from gsmcpd.raised import raised_importing
from gsmcpd.worker.toolset import BREAKS, ToolError, raise_if_break, recursion_limit_note
from gsmcpd.image.store import (JOURNAL_LIMIT, LOCK_WAIT, CommitConflict, CommitPending, ImageStore,
                                Snapshot, alike_hashes, check_writable, module_name_of, other_form, packages_of,
                                relpath_of, sha256)

KERNEL = "builtins"
log = logging.getLogger("gsmcpd.image")


@dataclass
class RefreshReport:
    brought_in: list[str] = field(default_factory=list)     # modules others changed
    kept_ours: list[str] = field(default_factory=list)      # changed both here and there
    already_committed: list[str] = field(default_factory=list)   # changed alike here and there
    settled: list[str] = field(default_factory=list)   # this view's undecided commit, found standing
    reloaded: list[str] = field(default_factory=list)
    import_errors: dict[str, str] = field(default_factory=dict)


class _SnapshotLoader(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds and loads image modules from the view's snapshot, never from disk."""

    def __init__(self, view: "View"):
        self.view = view
        self._running = threading.local()   # .names: the image modules whose code runs, innermost last

    def find_spec(self, fullname, path=None, target=None):
        rel = self.view.relpath(fullname)
        if rel is None or self.view.shadowed(fullname):
            # A package is one side's whole: the kernel's json gets no json.tool of the image.
            return None
        is_package = rel.endswith("/__init__.py")
        spec = importlib.util.spec_from_loader(
            fullname, self, origin=self.view.filename(rel), is_package=is_package)
        spec.has_location = True
        if is_package:
            # No directory: submodules come from the snapshot (this finder), never the disk.
            # The one entry is the view's own, which its path hook (and no other) takes, so
            # pkgutil.iter_modules(pkg.__path__) lists the submodules the view has.
            spec.submodule_search_locations = [self.view.path_entry(fullname)]
        return spec

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        # Filed as importlib's (below): keep it to the module's compile and run, the rest in
        # _text_of and _compiled. Both run through _call_with_frames_removed, as Python's own
        # loader runs them: a SyntaxError's traceback, too, shows no frame of the server's.
        text, filename = self._text_of(module)
        code = _call_with_frames_removed(compile, text, filename, "exec", dont_inherit=True)
        running = self._compiled(module, text, code)
        running.append(module.__spec__.name)
        try:
            _call_with_frames_removed(exec, code, module.__dict__)
        finally:
            running.pop()
        self.view.note_stand_in(module.__spec__.name, module)

    def _text_of(self, module) -> tuple[str, str]:
        """The module's text in the view and its file name, the module noted as running."""
        name = module.__spec__.name
        self.view.note_running(name)
        rel = self.view.relpath(name)
        filename = self.view.filename(rel)
        module.__file__ = filename
        self.view.cache_lines(rel)
        return self.view.texts[rel], filename

    def _compiled(self, module, text: str, code: CodeType) -> list[str]:
        """Notes the module's compiled `code` as live; the names of the image modules whose
        code runs now (this one's importers), innermost last."""
        name = module.__spec__.name
        self.view.live_texts[name] = text
        self.view.live_code[name] = code_within([code])
        ran = self.view.ran_imports.get(name)
        if ran:   # of its earlier runs' imports, those not loaded now it runs again if its code still does
            ran.intersection_update([imported for imported in ran if imported in sys.modules])
        running = self._running.__dict__.setdefault("names", [])
        if running:   # its import started by another's top-level code: an importer no statement names
            self.view.ran_imports.setdefault(running[-1], set()).add(name)
        return running

    def get_source(self, fullname):
        rel = self.view.relpath(fullname)
        return None if rel is None else self.view.texts[rel]

    def get_filename(self, fullname):
        rel = self.view.relpath(fullname)
        return None if rel is None else self.view.filename(rel)

    def get_resource_reader(self, fullname):
        # importlib.resources.files() reads a package's data files (certifi's cacert.pem)
        # through this: without it each is an "orphan path" no read can open.
        filename = self.get_filename(fullname)
        return None if filename is None else _FilesBeside(os.path.dirname(filename))

    def get_data(self, path):
        # pkgutil.get_data's (and pkg_resources') way in: it answers None for a loader without it.
        with open(path, "rb") as file:
            return file.read()


# A failed import's traceback leaves out a run of importlib's frames ending in its
# _call_with_frames_removed (CPython's import.c), so it shows the importer's frame, then
# the module's. Filed as importlib's, the view's exec_module joins that run, as Python's
# own file loader's does: the module's frames are shown, not the server's.
_SnapshotLoader.exec_module.__code__ = _SnapshotLoader.exec_module.__code__.replace(
    co_filename="<frozen importlib._bootstrap_external>")


class _SubmodulesOf:
    """The path entry finder of a view's package `__path__` entry (View.path_entry): finds
    and lists the package's submodules as the view has them (pkgutil.iter_modules, for
    plugin discovery), so the standard PathFinder, asked after the view's finder, never
    reads the disk for them."""

    def __init__(self, view: "View", package: str):
        self.view = view
        self.package = package

    def find_spec(self, fullname, target=None):
        if fullname.rpartition(".")[0] != self.package:
            return None
        return self.view._loader.find_spec(fullname)

    def iter_modules(self, prefix=""):
        # pkgutil's protocol: (name with prefix, whether a package) of each direct submodule.
        for name in self.view.module_names():
            parent, _, child = name.rpartition(".")
            if parent == self.package:
                yield prefix + child, self.view.relpath(name).endswith("/__init__.py")

    def invalidate_caches(self):
        pass   # nothing cached: each answer reads the view's texts as they are


class _FilesBeside(importlib.resources.abc.TraversableResources):
    """A module's resources: the files in its directory of the image, on disk, as a file
    system path loader gives them (the snapshot holds only modules, no data files)."""

    def __init__(self, directory: str):
        self.directory = directory

    def files(self):
        return Path(self.directory)


class View:
    def __init__(self, store: ImageStore, *, user: str, session_id: str):
        self.store = store
        self.user = user
        self.session_id = session_id
        self.texts: dict[str, str] = {}         # relpath -> current text (with our changes)
        self.base_hashes: dict[str, str] = {}   # relpath -> hash the view started from
        self.base_texts: dict[str, str] = {}
        self.live_texts: dict[str, str] = {}    # module -> text its live objects reflect
        # module -> the code compiled from that text (by id): what an edit's renumber moves.
        self.live_code: dict[str, dict[int, CodeType]] = {}
        # module -> what its own code, imported by the view, put in its place in sys.modules
        # (note_stand_in): the view's, though it may keep no __spec__ naming the view's loader.
        self._stand_ins: dict[str, object] = {}
        # The modules the view's loader ran this session (their import failing or not), and
        # the other loader's module the import of one put in its place (`sys.modules[__name__]
        # = json`): kept as it is forgotten, as what holds its name then is code's doing, not
        # a kernel module's (put_by).
        self._ran: set[str] = set()
        self._left_by_import: dict[str, object] = {}
        self.import_errors: dict[str, str] = {}
        # module -> the image modules whose import its top-level code started, by a statement
        # or not (a plugin package's importlib.import_module in a loop): importers of them
        # (_importers_of). Kept over its re-imports, those still loaded (a re-run finds them
        # cached), not those it re-runs without importing (exec_module).
        self.ran_imports: dict[str, set[str]] = {}
        # module -> the kernel's classes tied to its old classes, as its re-imports in this tool
        # call found them (kernel_ties); the call's answer names those lost (lost_kernel_ties takes them).
        self.kernel_ties: dict[str, list] = {}
        # module -> such ties of a module no call's end found imported again (it failed to).
        self._kernel_ties_awaiting: dict[str, list] = {}
        # A failed import is tried again only once something that may change its outcome
        # happened (see forget_import_failures): load_all re-imported every failing module
        # on each image-wide call, seconds on a large image.
        self._import_epoch = 0
        self._failed_in_epoch: dict[str, int] = {}   # module -> the epoch its import failed in
        self.encodings: dict[str, str] = {}     # relpath -> the codec its bytes are in (PEP 263)
        self.unlisted: list[str] = []           # image directories this account may not list or enter
        self.too_long: list[str] = []           # image files and directories ("d/") past PATH_MAX
        self.version = 0
        # Commits of this view that stand, and the modules of the last: a break that
        # lands past a commit point is answered with what it did not stop.
        self.commit_count = 0
        self.last_commit: list[str] = []
        self.already_committed: list[str] = []  # the last commit's modules another's had made so
        self.brought_in: list[str] = []         # the modules others' commits the last commit brought in
        self.undecided: list[str] = []          # the last commit's, if it failed not knowing whether it stands
        self.settled: list[str] = []            # the last commit's or refresh's: an undecided one found standing
        self._unsettled = None                  # that undecided commit: (id, what it wrote, the base it stood on)
        self.call_tag = ""                      # how the ids of the running call's commits begin (store.call_tag)
        self._reserved = None                   # the shared lock held until load()
        self._derived: dict[tuple[str, str], tuple[str, object]] = {}   # see derived()
        self._rewriting: dict | None = None    # see _rewriting_index(); None once a text changes
        self._loader = _SnapshotLoader(self)
        # Begins each of this view's package `__path__` entries (path_entry): no directory
        # name, so no other path hook takes one, and this view's alone (another's differs).
        self._path_prefix = f"<gsmcpd image view {secrets.token_hex(6)}>:"
        self._installed = False
        self._before_hook: frozenset[str] = frozenset()   # sys.modules as the hook went in

    @classmethod
    def open(cls, image_dir: Path | str, *, user: str, session_id: str, install: bool = True,
             lock_wait: float = LOCK_WAIT, journal_limit: int = JOURNAL_LIMIT) -> "View":
        view = cls.reserve(image_dir, user=user, session_id=session_id, lock_wait=lock_wait,
                           journal_limit=journal_limit)
        view.load(install=install)
        return view

    @classmethod
    def reserve(cls, image_dir: Path | str, *, user: str, session_id: str,
                lock_wait: float = LOCK_WAIT, journal_limit: int = JOURNAL_LIMIT) -> "View":
        """A view of the image as it is now, read later by load(): the shared lock is
        taken now and held until then, so no commit can land in between. A worker
        answers its session's initialize in that gap, off the session open's path."""
        view = cls(ImageStore(image_dir, lock_wait, journal_limit), user=user, session_id=session_id)
        view._reserved = view.store.hold_shared()
        return view

    @property
    def reserved(self) -> bool:
        """Fixed, with the shared lock held, and its files not read yet (load() reads them)."""
        return self._reserved is not None

    def load(self, install: bool = True) -> None:
        """Read the reserved snapshot (releasing the lock), then install the hook."""
        reserved, self._reserved = self._reserved, None
        if reserved is not None:
            self._load_snapshot(reserved)
        if install:
            self.install()

    @property
    def image_dir(self) -> Path:
        return self.store.image_dir

    def install(self) -> None:
        if not self._installed:
            self._before_hook = frozenset(sys.modules)
            sys.meta_path.insert(0, self._loader)
            self._install_path_hook()
            self._installed = True

    def path_entry(self, package: str) -> str:
        """The one entry of an image package's `__path__`: a name for the package in this
        view, which only this view's path hook takes (to a _SubmodulesOf)."""
        return self._path_prefix + package

    def _path_hook(self, entry: str) -> _SubmodulesOf:
        if not (isinstance(entry, str) and entry.startswith(self._path_prefix)):
            raise ImportError("not an entry of this image view", path=entry)
        return _SubmodulesOf(self, entry[len(self._path_prefix):])

    def _install_path_hook(self) -> None:
        """This view's path hook first in sys.path_hooks (put back there if code moved it),
        and any of its entries the import system cached while the hook was away (None, or
        another hook's finder) forgotten: the cache outlives the hook, and pkgutil and
        PathFinder ask it first, so the package listed nothing again until the session ended."""
        if self._path_hook in sys.path_hooks:
            sys.path_hooks.remove(self._path_hook)
        sys.path_hooks.insert(0, self._path_hook)
        self._forget_path_entries(keep_own=True)

    def _remove_path_hook(self) -> None:
        if self._path_hook in sys.path_hooks:
            sys.path_hooks.remove(self._path_hook)
        self._forget_path_entries(keep_own=False)

    def _forget_path_entries(self, keep_own: bool) -> None:
        """This view's entries out of sys.path_importer_cache (but for its own finders, if `keep_own`)."""
        for entry, finder in list(sys.path_importer_cache.items()):
            if (isinstance(entry, str) and entry.startswith(self._path_prefix)
                    and not (keep_own and isinstance(finder, _SubmodulesOf) and finder.view is self)):
                sys.path_importer_cache.pop(entry, None)

    def close(self) -> None:
        """Uninstall the import hook and forget this view's modules."""
        reserved, self._reserved = self._reserved, None
        if reserved is not None:
            reserved.close()
        self.release_unsettled()
        if self._loader in sys.meta_path:
            sys.meta_path.remove(self._loader)
        self._remove_path_hook()
        self._installed = False
        for name in self.loaded_modules():
            sys.modules.pop(name, None)
        for rel in self.texts:
            linecache.cache.pop(self.filename(rel), None)
        self.live_texts.clear()
        self.live_code.clear()
        self._stand_ins.clear()
        self._ran.clear()
        self._left_by_import.clear()

    def release_unsettled(self) -> None:
        """The session ends with its commit undecided: nothing will settle it now, so
        compaction need not keep its record (keep_record)."""
        if self._unsettled is not None:
            self.store.release_record(self._unsettled[0])

    # -- snapshot --------------------------------------------------------

    def _load_snapshot(self, held=None, snapshot: Snapshot | None = None) -> None:
        """Step onto `snapshot`, or the image as it is now (read under the lock `held`, if given)."""
        if snapshot is None:
            snapshot = self.store.read_snapshot(held)
        decoded = {rel: _decode(data) for rel, data in snapshot.files.items()}
        hashes = {rel: sha256(data) for rel, data in snapshot.files.items()}
        texts = self._held_if_unchanged({rel: text for rel, (text, _) in decoded.items()}, hashes)
        encodings = {rel: encoding for rel, (_, encoding) in decoded.items()}
        if texts != self.texts:   # held texts are the very objects: compared by identity first
            self._texts_changing()
        # One statement of plain stores: a break (raised at a call or a loop) lands
        # before it or after it, so the view is never half the old and half the new.
        (self.texts, self.base_texts, self.base_hashes, self.encodings, self.version, self.unlisted,
         self.too_long) = (texts, dict(texts), hashes, encodings, snapshot.version,
                           list(snapshot.unlisted), list(snapshot.too_long))
        self._drop_stale_derived()

    def _held_if_unchanged(self, texts: dict[str, str], hashes: dict[str, str]) -> dict[str, str]:
        """`texts` just read (their files' hashes `hashes`), each one equal to the text the
        view holds for the module given as that very object: a commit, abort or refresh
        re-reads the whole image, and what derived() made from the held text (a tree: 0.3-1 s
        for a large image) stays valid. The hashes pick the candidates; the texts are still
        compared (a memcmp, well under 1 ms for 4.5 MB), as a committed text's bytes can
        read back as another text (surrogate escapes, a changed coding declaration)."""
        for rel, text in texts.items():
            base = self.base_texts.get(rel)
            if base is not None and hashes[rel] == self.base_hashes.get(rel) and base == text:
                current = self.texts.get(rel)
                texts[rel] = current if current == base else base
        return texts

    def filename(self, rel: str) -> str:
        return os.path.join(self.store.root, rel)

    def cache_lines(self, rel: str) -> None:
        """Make tracebacks and inspect show the view's text, not the disk's
        (an mtime of None tells linecache.checkcache to leave the entry alone)."""
        text = self.texts[rel]
        filename = self.filename(rel)
        # Split as Python numbers lines: str.splitlines also ends one at a form feed.
        linecache.cache[filename] = (len(text), None, splice.lines_of(text), filename)

    # -- modules (the image's dictionaries) ------------------------------

    def module_names(self) -> list[str]:
        """Image modules in lookup order (by name: a package before its modules)."""
        return sorted(module_name_of(rel) for rel in self.texts)

    def relpath(self, module: str) -> str | None:
        for rel in (relpath_of(module), relpath_of(module, package=True)):
            if rel in self.texts:
                return rel
        return None

    def has_module(self, module: str) -> bool:
        """Whether `module` is one of module_names(). Not `pkg.__init__`, though relpath
        finds its file: that names pkg, and importing it under that name would make a
        second live copy of the package, its classes other objects than pkg's."""
        rel = self.relpath(module)
        return rel is not None and module_name_of(rel) == module

    def source(self, module: str) -> str:
        return self.texts[self.relpath(module)]

    def tree(self, module: str) -> ast.Module | None:
        """The module's AST, or None if its current text does not parse."""
        parsed = self.derived(module, "tree", _parsed)
        return parsed if isinstance(parsed, ast.Module) else None

    def syntax_error(self, module: str) -> SyntaxError | None:
        parsed = self.derived(module, "tree", _parsed)
        return parsed if isinstance(parsed, SyntaxError) else None

    def derived(self, module: str, kind: str, compute):
        """`compute(text)` for the module's current text, made once and kept while the
        module has that very text: the image-wide tools ask for a module's tree (and what
        they find in it) on every call, and most modules did not change in between. An
        edit gives a module a new text object, and so do a refresh, an abort or a commit
        that re-read it as another text, so nothing made from an older text is served (held
        by identity; a re-read text equal to the held one keeps that object, see
        _held_if_unchanged).
        What `compute` makes must follow from the module's name and text alone (its tree
        does), nothing else of the view: no import resolved, no live object."""
        text = self.source(module)
        cached = self._derived.get((module, kind))
        if cached is None or cached[0] is not text:
            cached = (text, compute(text))
            self._derived[(module, kind)] = cached
        return cached[1]

    def _drop_stale_derived(self) -> None:
        """Forget what derived() made from a text no module of the view has any more (the
        module removed, or its text replaced by a refresh or an abort): never served
        again, it would only be held, a removed module's for the view's whole life."""
        for key, (text, _) in list(self._derived.items()):
            rel = self.relpath(key[0])
            if rel is None or self.texts[rel] is not text:
                del self._derived[key]
        self.forget_import_failures()   # the texts may have changed
        for name in (self.import_errors.keys() | self._failed_in_epoch.keys()) - set(self.module_names()):
            self._forget_failure(name)   # a module removed here, or by a commit brought in

    def set_source(self, module: str, text: str, *, live: bool = True) -> None:
        """Change a module's text in this view; `live` says the live objects
        already reflect it (so a later reload leaves them alone)."""
        rel = self.relpath(module)
        if rel is None:   # a None file in `texts` failed status and commit for the session's life
            raise ValueError(f"no module {module!r} in the image: set_source changes an existing "
                             f"module's text (add_module makes a new one)")
        old_defs = self._derived.get((module, "defs"))   # the last edit's, most likely of the live text
        self._texts_changing()
        self.texts[rel] = text
        self.forget_import_failures()
        if live and self.owns_module(module):
            reflected = self.live_texts.get(module)
            self.live_texts[module] = text
            self.cache_lines(rel)
            # Last: a break landing in it costs line numbers, not the view's state.
            old_code = self.live_code.pop(module, {})
            if reflected is not None and self.tree(module) is not None:
                try:
                    if old_defs is None or old_defs[0] != reflected:
                        old_defs = (reflected, spans_of(_parsed(reflected)))
                    # From the old text's: the statements the edit left are not walked again.
                    new_defs = self.derived(module, "defs", lambda _: spans_of(
                        self.tree(module), text, old_defs))
                    self.live_code[module] = renumber_moved_code(
                        self.filename(rel), old_code, reflected, old_defs[1].defs, text, new_defs.defs)
                except Exception:   # the edit has landed: wrong line numbers must not fail it
                    log.warning("session %s: %s keeps the line numbers it had before the edit",
                                self.session_id[:8], module, exc_info=True)
                    # Else the module would have no live code for later edits to move until re-imported.
                    self.live_code[module] = self._live_code_or(rel, old_code)

    def _live_code_or(self, rel: str, fallback: dict[int, CodeType]) -> dict[int, CodeType]:
        """The code the functions compiled from the module's file have now, or `fallback` if that fails."""
        try:
            return code_of_live_functions(self.filename(rel))
        except Exception:   # what failed the renumber may fail this too
            return fallback

    def add_module(self, module: str, text: str, *, package: bool = False) -> None:
        self._texts_changing()
        self.texts[relpath_of(module, package=package)] = text
        self.forget_import_failures()

    def _files_of(self, module: str) -> list[str]:
        """The module's file, or a package's files with all its submodules'."""
        rel = self.relpath(module)
        if not rel.endswith("/__init__.py"):
            return [rel]
        prefix = rel[: -len("__init__.py")]
        return [r for r in self.texts if r.startswith(prefix)]

    def modules_of(self, module: str) -> list[str]:
        """The module, or a package with all its submodules: what remove_module drops."""
        return [module_name_of(r) for r in self._files_of(module)]

    def remove_module(self, module: str) -> list[str]:
        """Drop the module (a package with all its submodules); returns the names removed."""
        removed = self._files_of(module)
        names = [module_name_of(r) for r in removed]
        self._texts_changing()
        for r in removed:
            del self.texts[r]
        self._forget_live(names)
        self._drop_stale_derived()
        return names

    # -- live modules ----------------------------------------------------

    def owns_module(self, module: str) -> bool:
        """Whether sys.modules holds the view's import of `module` under its name: a module
        the view's loader made, or what that module's code put in its place (note_stand_in)."""
        loaded = sys.modules.get(module)
        if loaded is not None and loaded is self._stand_ins.get(module):
            return True
        return _loader_of(loaded) is self._loader

    def note_stand_in(self, module: str, made: ModuleType) -> None:
        """Once the view's loader ran `module`'s code into `made`: keep what that code put in
        its place in sys.modules (`sys.modules[__name__] = StandIn()`), with no __spec__ to
        tell it the view's by (an object of __slots__, a bare ModuleType): it was taken for a
        kernel module of that name shadowing the image's (View.shadowing), and never
        forgotten. Not a module another loader made (`sys.modules[__name__] = json`): that
        one is the kernel's, which the view must not take for its own to change."""
        held = sys.modules.get(module)
        # None there halts the import: no stand-in.
        if held is made or held is None or _loader_of(held) is not None:
            self._stand_ins.pop(module, None)
            if held is not made and held is not None:
                self._left_by_import[module] = held
        else:
            self._stand_ins[module] = held

    def note_running(self, module: str) -> None:
        """The view's loader starts running `module`'s code: the name is the view's then
        (module() imports none a kernel module holds), so whatever holds it later, the
        import failing or not, was put there by code (put_by)."""
        self._ran.add(module)
        self._left_by_import.pop(module, None)   # an earlier run's: this one may fail

    def put_by(self, module: str) -> str | None:
        """Who put what holds `module`'s name in sys.modules, not the view's, once the view
        ran it this session (note_running): "import" (its own code put the other loader's module there,
        note_stand_in), "code" (code run in the session since); None where the view never ran
        it (a kernel module of that name, loaded first), or the name is the view's."""
        held = sys.modules.get(module)
        if module not in self._ran or held is None or self.owns_module(module):
            return None
        return "import" if held is self._left_by_import.get(module) else "code"

    def lost_kernel_ties(self) -> dict[str, list[str]]:
        """module -> the kernel's classes tied to its old classes and not to those its
        re-import made (kernel_ties.lost): what this tool call's re-imports dropped, and a
        broken call's before it (its answer was the break's). One not imported again (it
        fails to, now) has no new classes to tell apart yet: told at the end of the call
        that has it imported; one removed, never."""
        awaiting, self._kernel_ties_awaiting = self._kernel_ties_awaiting, {}
        for name, tied in self.kernel_ties.items():
            awaiting[name] = awaiting.get(name, []) + tied
        self.kernel_ties.clear()
        found = {}
        for name, tied in sorted(awaiting.items()):
            now = sys.modules.get(name) if self.owns_module(name) else None
            if now is not None:
                found[name] = kernel_ties.lost(name, tied, now)
            elif self.has_module(name):
                self._kernel_ties_awaiting[name] = tied
        return {name: named for name, named in found.items() if named}

    def _is_kernel(self, module: str | None) -> bool:
        return kernel_ties.is_kernel_module(module, self._loader)

    def loaded_modules(self) -> list[str]:
        return sorted(name for name in list(sys.modules) if self.owns_module(name))

    def shadowing(self, module: str) -> str | None:
        """The already-loaded module, not the view's, that holds `module`'s name or its
        package's (outermost first): `json` for an image's json and json.tool, as the
        worker has loaded the standard library's; None if the name is the view's."""
        parts = module.split(".")
        for depth in range(1, len(parts) + 1):
            name = ".".join(parts[:depth])
            if name in sys.modules and not self.owns_module(name):
                return name
        return None

    def shadowed(self, module: str) -> bool:
        """Its name belongs to the kernel (see shadowing): the view neither imports nor changes it."""
        return self.shadowing(module) is not None

    def module(self, name: str, *, again: bool = False):
        """The live image module, imported from the snapshot; None if it is
        shadowed by a kernel module or fails to import (see import_errors), or is a
        program's `__main__` not loaded (is_program), unless `again` (re-importing
        one the session's code had imported)."""
        if not self.has_module(name) or self.shadowed(name):
            return None
        if name in sys.modules:
            return sys.modules[name]
        if is_program(name) and not again:
            return None   # importing it runs the program: only the session's own code does that
        if name in self.import_errors and self._failed_in_epoch.get(name) == self._import_epoch:
            return None   # nothing that could change the outcome happened since it failed
        self.install()
        try:
            module = importlib.import_module(name)
        except BaseException as error:         # the module's own KeyboardInterrupt, GeneratorExit...
            raise_if_break(error)              # ...unless the call is being broken, not the import
            note = recursion_limit_note(error)
            self.import_errors[name] = raised_importing(error, name) + ("" if note is None else " " + note)
            if isinstance(error, (RecursionError, MemoryError)):   # the stack's depth, the memory free now
                self._failed_in_epoch.pop(name, None)
            else:
                self._failed_in_epoch[name] = self._import_epoch
            return None
        self._forget_failure(name)
        return module if self.owns_module(name) else None

    def _forget_failure(self, name: str) -> None:
        """The module no longer fails, or is gone: its error and its epoch go together (the
        epoch alone was kept, a removed module's for the session's whole life)."""
        self.import_errors.pop(name, None)
        self._failed_in_epoch.pop(name, None)

    def load_all(self) -> None:
        """Import every image module but a program's `__main__` (module() leaves those)."""
        for name in self.module_names():
            self.module(name)

    def forget_import_failures(self) -> None:
        """Have module() try each failed import again: called when what an import's outcome
        depends on may have changed (a text of the view, a live module forgotten or
        re-imported, the session's code run: it may have changed sys.path or sys.modules)."""
        self._import_epoch += 1

    def defines(self, obj, name: str | None = None) -> bool:
        """True iff `obj` is a class or function bound at top level of an image
        module by that module's own source (by identity, not by name), a class or def
        statement at its top level or in a module-level block; the module found by its
        `__module__` (`writes` counts a class whose body rewrote that too)."""
        module_name, qualname = own.module_of(obj), own.qualname_of(obj)
        if not (module_name is not None and qualname is not None and "." not in qualname):
            return False
        if name is not None and name not in (qualname, f"{module_name}.{qualname}"):
            return False
        if not self.has_module(module_name) or not self.owns_module(module_name):
            return False
        if own.namespace(sys.modules[module_name]).get(qualname) is not obj:
            return False
        tree = self.tree(module_name)
        # Written in a module-level `if`/`try` block too: the module's own source made it.
        return (tree is not None and any(node.name == qualname for _, node in splice.defs_in_blocks(tree.body))
                and not self.rebound_from(obj, module_name, qualname))

    def rebound_below(self, module: str, name: str) -> bool:
        """Whether each module-level class or def statement of `name` in `module` has a
        statement below it binding the name anew (`X = type("X", ...)`, a namedtuple of the
        name): the class the name then holds, of that module and name too, is not the
        statement's. Not `X = total_ordering(X)`, which hands back the class it was given,
        most often."""
        return name in self._rebound_below_statements(module)

    def rebound_from(self, obj, module: str, name: str) -> bool:
        """Whether `obj`, which `module` binds to `name`, is taken for another object than
        the one its class or def statement makes (rebound_below): not when all its own code
        (a function's, a class's methods') was compiled from the module's file within those
        statements, the rebinding below having not run or handed it back (`try: from
        fastparser import Parser` / `except ImportError: pass`, with no fastparser;
        distutils' `MSVCCompiler`, whose `if get_build_version() >= 8.0:` rebinding did not
        run). Its own code is what the module's file compiled under its name (`Parser.parse`):
        not a method another module's decorator made (contextlib.contextmanager's `helper`),
        nor a function of the module it aliases (`size = _size`), which tell nothing of the
        statement. An object with no such code cannot tell: a `type(...)` class, a C type,
        a namedtuple (its `__new__` compiled from no file of the image)."""
        if not self.rebound_below(module, name):
            return False
        nodes = [node for _, node in splice.defs_in_blocks(self.tree(module).body) if node.name == name]
        filename = self.filename(self.relpath(module))
        codes = [code for code in own.codes(obj) if code.co_filename == filename
                 and (code.co_qualname == name or code.co_qualname.startswith(name + "."))]
        return not codes or not all(_statement_of(code, filename, nodes) for code in codes)

    def _rebound_below_statements(self, module: str) -> frozenset[str]:
        """The names rebound_below is true of. Kept per text (derived)."""
        def find(text):
            tree = self.tree(module)
            if tree is None:
                return frozenset()
            statements: dict[str, list] = {}
            for _, node in splice.defs_in_blocks(tree.body):
                statements.setdefault(node.name, []).append(node)
            # Looked below each statement only for a name bound otherwise too: a module of
            # thousands of defs is read once, not once a def.
            walrus = ":=" in text
            stored = _names_stored(tree, walrus)
            made_by_statements = statements.keys() - stored
            bound: dict[int, set[str]] = {}   # by statement: each is below many (typing_extensions)

            def rebinds(statement, name):
                if id(statement) not in bound:
                    bound[id(statement)] = _bound_names(statement, walrus)
                return name in bound[id(statement)] and _rebinds(statement, name, made_by_statements)
            return frozenset(name for name, nodes in statements.items()
                             if (name in stored or len(nodes) > 1) and all(
                                 any(rebinds(statement, name) for statement in splice.statements_below(tree, node))
                                 for node in nodes))
        return self.derived(module, "names rebound below their statements", find)

    def rewritten_home(self, obj) -> str | None:
        """For a class whose body rewrites `__module__` (`__module__ = "pkg"`, as pluggy and
        pytest write so that reprs show the public package), the image module whose class
        statement made it, which `__module__` no longer names: the one module binding `obj`
        by its qualified name (at its top level, a nested one in its enclosing class), whose
        class statement of that name assigns the very string `obj` has as `__module__`. None
        for any other object, or when no single module does so."""
        if not isinstance(obj, type) or self.defines(obj):
            return None
        # Each such module loaded (few are): whether another binds it too must not depend
        # on which the session has imported yet.
        found = [module for module in self.rewriting_modules(obj)
                 if self.module(module) is not None
                 and _bound_at(sys.modules[module], own.QUALNAME(obj)) is obj]
        return found[0] if len(found) == 1 else None

    def rewriting_modules(self, cls: type) -> list[str]:
        """The image modules with a class statement of the class's qualified name (module-level,
        or nested in one: `Outer.Inner`) assigning `__module__` the very string the class has:
        where a class whose body rewrote it may have been made (rewritten_home says whether it
        was). None looked for a C type or a class its `__module__`'s non-image module binds
        (the kernel's, every base of a hierarchy's listing)."""
        name = own.QUALNAME(cls) if issubclass(type(cls), type) else None   # not its metaclass's
        if not isinstance(name, str) or not own.is_heap_type(cls):
            return []
        home = own.module_of(cls)
        if home is None or (home in sys.modules and not self.has_module(home)
                                         and own.namespace(sys.modules.get(home)).get(name) is cls):
            return []
        return self._rewriting_index().get((name, home), [])

    def _rewriting_index(self) -> dict[tuple[str, str], list[str]]:
        """(class qualified name, string): the image modules, in lookup order, whose class
        statement of that name (nested too) assigns that string to `__module__`. Kept until a text
        changes (_texts_changing): every class a browse names is asked about (a namedtuple
        base's each time, each workspace class execute_code rebinds), and asking each module's
        costs a millisecond a class in an image of 500 modules; comparing all the texts on each
        lookup cost execute_code 60 ms with 3,000 workspace classes."""
        if self._rewriting is None:
            self._rewriting = self._build_rewriting_index()
        return self._rewriting

    def _build_rewriting_index(self) -> dict[tuple[str, str], list[str]]:
        index = {}
        for module in self.module_names():
            for name, strings in self._modules_written(module).items():
                for string in strings:
                    index.setdefault((name, string), []).append(module)
        return index

    def _texts_changing(self) -> None:
        """Called before any of the view's texts changes (an edit, a module added or removed,
        a refresh, abort or commit re-reading one): what is kept of them all goes. Before, so
        a break landing in the change leaves nothing stale."""
        self._rewriting = None

    def _modules_written(self, module: str) -> dict[str, set[str]]:
        """The strings each class statement the module runs (module-level, or nested in one,
        splice.nested_class_statements) assigns to `__module__` in its body (`__module__ =
        "pkg"`), or the module's top level below a top-level one (`Hook.__module__ = "pkg"`),
        by qualified name; a class none does is left out. Kept per text (derived)."""
        def find(text):
            # Not parsed for it (a browse of a run-time class's kin asks of every module):
            # without the name, as Python reads identifiers (NFKC), it has no such statement.
            if "__module__" not in (text if text.isascii() else unicodedata.normalize("NFKC", text)):
                return {}
            tree = self.tree(module)
            found = {}
            pending = [] if tree is None else [(node.name, node) for node in splice.module_level_classes(tree)]
            while pending:
                qualname, node = pending.pop()
                strings = _module_strings(node)
                if strings:
                    found.setdefault(qualname, set()).update(strings)
                pending += [(f"{qualname}.{inner.name}", inner) for _, inner in splice.defs_in_blocks(node.body)
                            if isinstance(inner, ast.ClassDef)]
            if tree is not None:
                for name, strings in splice.module_strings_set_below(tree).items():
                    found.setdefault(name, set()).update(strings)
            return found
        return self.derived(module, "strings assigned to __module__", find)

    def writes(self, obj) -> bool:
        """Whether an image module's own source makes `obj` at its top level: it `defines`
        it, or its class statement there set `__module__` to another name (rewritten_home)."""
        return self.defines(obj) or (self.rewritten_home(obj) is not None and "." not in own.QUALNAME(obj))

    def written_in(self, obj, module: str) -> bool:
        """Whether `obj` is a class or function that `module`'s own source makes at its top
        level (defines), its `__module__` rewritten or not (rewritten_home). Not `writes(obj)
        and home(obj) == module`: a nested class whose body rewrote `__module__`, bound at the
        top level too (`Inner = Outer.Inner`), is written in its module here, not by writes."""
        return (self.defines(obj) and own.module_of(obj) == module) or self.rewritten_home(obj) == module

    def home(self, cls: type) -> str | None:
        """The module a class is named under: the image module whose class statement made it
        (rewritten_home) when its body rewrote `__module__`, else its `__module__` (as its
        dictionary holds it, own.module_of); None when that is no str (`__module__ = 42`)."""
        return self.rewritten_home(cls) or own.module_of(cls)

    def qualified(self, cls: type) -> str:
        """A class's dotted name as the tools give it: its home and its qualified name, as
        `type` keeps both; one whose home is none by its qualified name alone, as Python's
        repr names a class whose `__module__` is no str."""
        home = self.home(cls)
        return own.QUALNAME(cls) if home is None else f"{home}.{own.QUALNAME(cls)}"

    def makes(self, obj) -> bool:
        """True iff the image module's own source makes the class `obj` as it runs: it
        `writes` it, or `obj` is a class nested in such a one (`Outer.Inner`, any depth),
        bound under its name in the enclosing class and written there by a class
        statement (in a class-level block too; one whose body rewrote `__module__` found
        by rewritten_home). The tools address top-level classes only;
        this is for judging what a change to a base leaves a module unable to make (its
        import then fails however deep the class statement is). Not one made in a def
        (`make.<locals>.C`), which runs only when called."""
        if self.defines(obj) or self.rewritten_home(obj) is not None:
            return True
        module_name, path = own.module_of(obj), own.qualname_of(obj)
        if not (module_name is not None and isinstance(obj, type)):
            return False
        path = path.split(".")
        if len(path) < 2 or not self.has_module(module_name) or not self.owns_module(module_name):
            return False
        enclosing = own.namespace(sys.modules[module_name]).get(path[0])
        if not (isinstance(enclosing, type) and self.written_in(enclosing, module_name)):
            return False
        for depth, name in enumerate(path[1:], start=2):
            # A private `__Inner` is bound as `_Outer__Inner`, its qualname keeps `__Inner`.
            enclosing = vars(enclosing).get(splice.mangled(path[depth - 2], name))
            if not (isinstance(enclosing, type) and own.QUALNAME(enclosing) == ".".join(path[:depth])
                    and self._made_in(enclosing, module_name)):
                return False
        return enclosing is obj and bool(splice.nested_class_statements(self.tree(module_name),
                                                                         own.QUALNAME(obj)))

    def _made_in(self, nested: type, module: str) -> bool:
        """Whether a class bound in a class of `module` may be made by that module: named
        by it, or its body there rewrote `__module__` (`class Inner: __module__ = "pkg"`),
        not another module's class bound there (`Inner = other.Outer.Inner`)."""
        return own.module_of(nested) == module or module in self.rewriting_modules(nested)

    def assert_mutable(self, obj, name: str) -> None:
        """The kernel guard (McpServer.assert_mutable forwards here): only what
        an image module's own source defines may be changed."""
        if not self.writes(obj):
            raise ToolError("refused", f"{name} is not defined by the image (it is a kernel, "
                            "standard-library or site-packages object) and cannot be modified; "
                            "define your own in an image module, or use execute_code deliberately")

    # -- transaction -----------------------------------------------------

    def changed_files(self) -> list[str]:
        rels = set(self.texts) | set(self.base_hashes)
        return sorted(rel for rel in rels if self.texts.get(rel) != self.base_texts.get(rel))

    def changed_modules(self) -> list[str]:
        # Each once: a module turned into a package changes two files (`q.py`, `q/__init__.py`).
        return sorted({module_name_of(rel) for rel in self.changed_files()})

    @property
    def has_changes(self) -> bool:
        return bool(self.changed_files())

    def commit(self) -> list[str]:
        """Write this view's changes; then the view is the image as this commit left it
        (a new transaction, as GemStone's commit starts): every commit before it brought
        in, none made after it (the next refresh, commit or abort brings those in), so the
        view holds what it just committed. Returns the
        modules written: one the disk already holds exactly as changed (another's
        identical commit) is taken as committed, not written, and named in
        `already_committed`; the modules others' commits it brought in are in `brought_in`,
        and this view's earlier undecided commit, settled first, in `settled` if it stands.
        Raises CommitConflict (nothing written, changes kept), ReadOnlySession in a
        read-only session's worker, changes or none (its changes kept)."""
        check_writable("a commit")
        self.already_committed, self.undecided, self.brought_in = [], [], []
        self.settled = self.settle()
        changed = self.changed_files()
        base, texts_before = dict(self.base_hashes), dict(self.base_texts)
        already: list[str] = []                # files the disk held as changed: filled by the store
        read_back: list[Snapshot] = []         # the image as the commit left it: filled by the store
        stand = None
        if changed:
            changes = {rel: (self._encoded(rel) if rel in self.texts else None) for rel in changed}
            commit_id = self.call_tag + secrets.token_hex(8)
            # The view's base once the commit stands, made ready before it: the view
            # steps onto it (_stand) as soon as the commit is known to stand, and a
            # break landing on the way is caught to step onto it all the same: the view
            # never conflicts with its own commit, which is counted for the worker to
            # say it stands.
            base_texts, base_hashes = _stepped_onto(self.base_texts, self.base_hashes, {
                rel: None if data is None else (self.texts[rel], sha256(data)) for rel, data in changes.items()})
            stand = (base_texts, base_hashes, self.commit_count, changed)
            try:
                self.store.commit(changes, self.base_hashes, user=self.user, session_id=self.session_id,
                                  commit_id=commit_id, already_committed=already, read_back=read_back,
                                  rebased=stand[1])   # written with the disk's BOM: the hash it made
                self._stand(*stand, already)
            except CommitPending as pending:   # decided: every snapshot reads it as done
                self._stand(*stand, already)
                log.warning("session %s: %s", self.session_id[:8], pending)
            except CommitConflict:
                raise                          # refused before anything was written
            except BaseException:
                # A break (or any failure) past the commit point: the commit stands. One that
                # never took the lock (timed out, or broken as it waited) wrote nothing, and
                # has_commit would wait for the lock again.
                if self.store.locked_for == commit_id and self._commit_stands(commit_id, changed, stand):
                    self._stand(*stand, already)
                    with contextlib.suppress(OSError):   # what failed the commit is what is said
                        self._load_snapshot(snapshot=read_back[0] if read_back else None)
                raise
        else:
            self._finish_left_pending()
        # Read under the commit's lock; else (it failed, or nothing was to be written) now.
        self._load_snapshot(snapshot=read_back[0] if read_back else None)
        written = _modules_of(rel for rel in changed if rel not in already)
        # A module is named in one list: one with a file brought in is theirs now (its text
        # changed under the session), though another file of it was changed alike (as refresh).
        self.brought_in = sorted({*(module for module in self.moved_since(base, texts_before, leaving_out=changed)
                                    if module not in written), *self._overtaken(stand, already)})
        self.already_committed = [module for module in self.already_committed if module not in self.brought_in]
        self._reload()
        return written

    def _finish_left_pending(self) -> None:
        """Finish a commit left pending on disk (its journal append failed past the commit
        point), as a commit that writes does first: one with nothing to write left it
        pending until the next real commit or a restart."""
        if not os.path.exists(self.store.intent_file):   # the common case: no lock taken
            return
        try:
            self.store.finish_pending()
        except OSError as error:   # every snapshot still reads it as finished
            log.warning("session %s: a commit pending on disk is left to the next commit to "
                        "finish: %s", self.session_id[:8], error)

    def _overtaken(self, stand: tuple | None, already: list[str]) -> list[str]:
        """The modules of this view's commit (`stand`: the base it made) whose files the view
        now has otherwise than it wrote them: another's commit, landing after it and before
        the image was read back (the read under the commit's lock failed), changed them."""
        if stand is None:
            return []
        made, changed = stand[1], stand[3]
        return _modules_of(rel for rel in changed
                           if rel not in already and made.get(rel) != self.base_hashes.get(rel))

    def moved_since(self, base: dict[str, str | None], base_texts: dict[str, str],
                    leaving_out=()) -> list[str]:
        """The modules whose committed text the view stands on is no longer what it was in
        `base` (the view's base hashes before) and `base_texts` (its base texts then), but
        for the files `leaving_out`: others' commits a commit or abort brought in. A file
        whose bytes changed but not its text (a BOM put on or taken off) is no module
        brought in, as refresh tells them."""
        return _modules_of(rel for rel in sorted(set(base) | set(self.base_hashes))
                           if base.get(rel) != self.base_hashes.get(rel) and rel not in leaving_out
                           and base_texts.get(rel) != self.base_texts.get(rel))

    def _commit_stands(self, commit_id: str, changed: list[str], stand: tuple) -> bool | None:
        """Whether the failed commit of `changed` stands; None if that could not be told (the
        lock waited out once more, say): the modules go in `undecided`, the commit (`stand`:
        the base it makes) is kept for the next commit, refresh or abort to settle (settle), and the
        failure that raised the question stays the one raised, never replaced by this one;
        but a break landing as it waits for the lock (a cancel, the deadline's hard break)
        ends the call then, as it says, rather than leave the view neither on the commit nor
        knowing it undecided."""
        try:
            self.store.keep_record(commit_id)   # so compaction keeps it until it is settled
            stands = self.store.has_commit(commit_id)
            self.store.release_record(commit_id)
            return stands
        except (OSError, *BREAKS) as error:
            base_texts, base_hashes = stand[:2]
            self.undecided, self._unsettled = _modules_of(changed), (
                commit_id, {rel: (base_texts[rel], base_hashes[rel]) if rel in base_hashes else None
                            for rel in changed},
                {rel: self.base_hashes.get(rel) for rel in changed})
            log.warning("session %s: whether the commit of %s stands could not be told: %s",
                        self.session_id[:8], ", ".join(self.undecided), error or type(error).__name__)
            if isinstance(error, BREAKS):
                raise
            return None

    def settle(self) -> list[str]:
        """Settle this view's earlier commit that could not tell whether it stands (see
        `undecided`): if it does, the files whose base is still the one it stood on step
        onto what it wrote (one a refresh moved since is already the disk's), so what the
        session commits next neither conflicts with its own earlier write nor takes it for
        another's (nor an abort discards it, or names it as another's), and if a failure left
        it pending on disk it is finished there. Returns that commit's modules if it stands;
        still not known (the lock waited out again), it is left for the next commit, refresh
        or abort. Found by its record however many commits others made since: compaction
        keeps the record until then (keep_record)."""
        if self._unsettled is None:
            return []
        commit_id, wrote, stood_on = self._unsettled
        try:
            stands = self.store.has_commit(commit_id)
        except OSError as error:
            log.warning("session %s: whether its earlier commit stands could not be told yet: %s",
                        self.session_id[:8], error)
            return []
        if stands:
            try:   # finished on disk now, as a commit does first, not left to whichever comes next
                self.store.finish_pending()
            except OSError as error:   # every snapshot still reads it as finished
                log.warning("session %s: its earlier commit stands, left to the next commit to "
                            "finish on disk: %s", self.session_id[:8], error)
            base_texts, base_hashes = _stepped_onto(self.base_texts, self.base_hashes, {
                rel: written for rel, written in wrote.items() if self.base_hashes.get(rel) == stood_on[rel]})
            # One statement of plain stores, as _stand's.
            self.base_texts, self.base_hashes, self._unsettled = base_texts, base_hashes, None
        else:
            self._unsettled = None
        self.store.release_record(commit_id)   # last: a break before it leaves the record kept, not lost
        return _modules_of(wrote) if stands else []

    def _stand(self, base_texts: dict, base_hashes: dict, count: int, changed: list[str],
               already: list[str]) -> None:
        """Step onto the commit of `changed` that stands (the view's commit count was
        `count` before it), less the files `already` on disk, which it did not write.
        One statement of plain stores, so it is done whole or not at all, and again
        the same if a break made it be done twice."""
        written = _modules_of(rel for rel in changed if rel not in already)
        # By file, not module name: a module made a package may have one file there, one written.
        untouched = [module for module in _modules_of(already) if module not in written]
        (self.base_texts, self.base_hashes, self.commit_count, self.last_commit,
         self.already_committed) = (base_texts, base_hashes, count + 1 if written else count,
                                    written or self.last_commit, untouched)

    def _holds(self, rel: str, digest: str | None) -> bool:
        """Whether the view has `rel` as the bytes hashing to `digest` (None: as absent),
        as its commit would write them, or but for a BOM (alike_hashes)."""
        if rel not in self.texts:
            return digest is None
        try:
            return digest in alike_hashes(self._encoded(rel))
        except ToolError:   # the commit would refuse it: not what is there
            return False

    def _codec(self, rel: str) -> str:
        return self.encodings.get(rel, "utf-8")

    def _encoded(self, rel: str) -> bytes:
        """The text's bytes in the codec the file was read in (its coding declaration).
        The mutation tools refuse such text up front (check_encodable); this is for
        text set otherwise (code calling set_source)."""
        encoding = self._codec(rel)
        text = self.texts[rel]
        try:
            return text.encode(encoding, "surrogateescape")
        except UnicodeEncodeError as error:
            raise ToolError("refused", _cannot_carry(rel, encoding, text, error)
                            + "; nothing was written and the change stays uncommitted: change "
                            "its coding declaration or the text, or abort") from None

    def check_encodable(self, module: str, text: str) -> None:
        """Refuse (invalidParams) a new text for `module` that its file's encoding
        cannot carry, before anything changes: the commit could not write it."""
        rel = self.relpath(module)
        encoding = self._codec(rel)
        try:
            text.encode(encoding, "surrogateescape")
        except UnicodeEncodeError as error:
            raise ToolError("invalidParams", _cannot_carry(rel, encoding, text, error)
                            + "; nothing was changed: write the character as an escape in a "
                            "string (\\u...) or change the module's coding declaration") from None

    def abort(self) -> RefreshReport:
        """Back to the committed image: the texts, and every loaded image module
        re-imported from them, so what code run in the session did to live objects
        (a class attribute set, a function patched) goes too. Objects the workspace
        already holds keep the classes they were made from."""
        discarded = self.changed_modules()
        self._load_snapshot()
        around = self._reclaim_imports()
        report = RefreshReport(brought_in=discarded)
        report.reloaded = self._reload(everything=True)
        for name in around:
            if self.has_module(name) and name not in report.reloaded and self.module(name, again=True) is not None:
                report.reloaded.append(name)
        report.reloaded.sort()
        report.import_errors = self._failing_now()
        report.reloaded = _imported(report)
        return report

    def put_back(self, texts: dict[str, str], modules, again: bool = True) -> list[str]:
        """Undo a change a tool made only in part: the texts as `texts` (taken before it),
        and `modules`, whose live objects it changed, imported again from them with the
        loaded modules importing them, as abort does every module. Not `again` (a break:
        no code of the session's runs), those are forgotten, imported when next used.
        Returns the modules imported again or forgotten."""
        changed = [rel for rel, text in texts.items() if self.texts.get(rel) is not text]
        self._texts_changing()
        self.texts.clear()
        self.texts.update(texts)
        self._drop_stale_derived()
        for rel in changed:   # tracebacks show the text the module has again
            self.cache_lines(rel)
        stale = self._importers_of(set(modules), self.loaded_modules())
        if not again:
            self._forget_live(stale)
            return sorted(stale)
        return self._with_failing_packages(set(self._reimported(stale)))

    def _failing_now(self) -> dict[str, str]:
        """import_errors, each module in it tried again (abort and refresh moved the epoch):
        theirs named a module failing as it did before, fixed by a commit brought in or the
        edit discarded, and one no longer in the image, though neither failed any more."""
        for name in sorted(self.import_errors):
            # `again`: a program's failure is its re-import's (the session's code loaded it),
            # else it was never tried and its old error stood after the fix.
            if not self.has_module(name) or self.module(name, again=True) is not None:
                self._forget_failure(name)
        return dict(self.import_errors)

    def _reclaim_imports(self) -> list[str]:
        """Undo what code did to how the session imports image modules: the view's hook
        goes back first in sys.meta_path (code may have taken it out, or put a finder
        before it), and image modules code imported from the image's files around it
        (importlib.util.spec_from_file_location, or a sys.path entry into the image
        with the hook out of the way) are
        forgotten, to be imported from the view again, as are those whose name holds what
        code put there since the view imported them (put_by). Returns those modules."""
        if self._loader in sys.meta_path:
            sys.meta_path.remove(self._loader)
        sys.meta_path.insert(0, self._loader)
        self._install_path_hook()
        self._installed = True
        around = [name for name in self.module_names()
                  if self.imported_around(name) or self.put_by(name) is not None]
        for name in around:
            _unbind(name)
        return around

    def imported_around(self, module: str) -> bool:
        """Loaded from one of the image's own files since the view's hook went in, but not
        by the view: code imported it around the hook. (A kernel module an image module
        shadows never is, nor one loaded before the hook, from an image holding the
        daemon's own code, say.)"""
        loaded = sys.modules.get(module)
        if loaded is None or module in self._before_hook or self.owns_module(module):
            return False
        spec = getattr(loaded, "__spec__", None)
        origin = getattr(spec, "origin", None) or getattr(loaded, "__file__", None)
        if not isinstance(origin, str):
            return False
        # Its own file may be a link out of the image (a linked module, or directory).
        origin, rel = os.path.realpath(origin), self.relpath(module)
        return origin.startswith(self.store.root + os.sep) or (
            rel is not None and origin == os.path.realpath(self.filename(rel)))

    def refresh(self) -> RefreshReport:
        """Bring in others' commits, keeping this view's changes. A file changed
        both here and there keeps ours and its old base, so committing it
        conflicts until the session aborts. So does a file of theirs that ours
        stands on (see _entangled): brought in, it would leave a module of the
        view in no package, or one module in two files. Unless theirs is byte for
        byte ours: it is then committed, and the base moves onto it. This view's own
        earlier commit that could not tell whether it stands is settled first (settle)."""
        # The files ours remove that the walk may no longer see (their directory no longer a
        # package) are read too: still on disk as our base had them, their removal is not
        # yet committed, as the commit, checking their hashes, would tell.
        removed = [rel for rel in self.changed_files() if rel not in self.texts]
        snapshot = self.store.read_snapshot(unwalked=removed)   # first: if it fails, the view is as it was
        settled = self.settle()
        decoded = {rel: _decode(data) for rel, data in snapshot.files.items()}
        fresh_hashes = {rel: sha256(data) for rel, data in snapshot.files.items()}
        fresh = self._held_if_unchanged({rel: text for rel, (text, _) in decoded.items()}, fresh_hashes)
        report = RefreshReport(settled=settled)
        ours_changed = set(self.changed_files())
        for rel in sorted(set(fresh) | set(self.base_texts) | set(self.texts)):
            ours = rel in ours_changed or _entangled(rel, ours_changed, self.texts, fresh)
            unseen = snapshot.unwalked.get(rel)   # on disk in no package: told by its hash
            theirs = (fresh.get(rel) != self.base_texts.get(rel) if unseen is None
                      else unseen != self.base_hashes.get(rel))
            if theirs and ours:
                if not self._holds(rel, fresh_hashes.get(rel, unseen)):
                    report.kept_ours.append(module_name_of(rel))
                    continue
                report.already_committed.append(module_name_of(rel))   # theirs is ours: the base moves
            elif theirs:
                report.brought_in.append(module_name_of(rel))
                self._texts_changing()
                if rel in fresh:
                    self.texts[rel], self.encodings[rel] = decoded[rel]
                else:
                    self.texts.pop(rel, None)
            if rel in fresh:   # the base moves, and with it the file's codec (a BOM put on or taken off)
                self.base_texts[rel], self.base_hashes[rel] = fresh[rel], fresh_hashes[rel]
                self.encodings[rel] = decoded[rel][1]
            elif unseen is None:
                self.base_texts.pop(rel, None)
                self.base_hashes.pop(rel, None)
        # Each module once, in one list, though its two forms are two files: as commit tells
        # them (by file, _stand), one with a file kept ours is not yet committed, whatever the
        # other; and one with a file brought in is theirs now (its text changed under the
        # session), though the other was changed alike.
        report.brought_in, report.kept_ours = _once(report.brought_in), _once(report.kept_ours)
        report.already_committed = [module for module in _once(report.already_committed)
                                    if module not in report.kept_ours and module not in report.brought_in]
        self.version, self.unlisted, self.too_long = (snapshot.version, list(snapshot.unlisted),
                                                      list(snapshot.too_long))
        self._drop_stale_derived()
        report.reloaded = self._reload()
        report.import_errors = self._failing_now()
        report.reloaded = _imported(report)
        return report

    # -- reloading -------------------------------------------------------

    def _reload(self, everything: bool = False) -> list[str]:
        """Re-import the live modules whose text changed (every loaded one if
        `everything`), and the image modules that import them, so later calls see
        the new code."""
        loaded = self.loaded_modules()
        stale = {name for name in loaded
                 if everything or not self.has_module(name) or self.live_texts.get(name) != self.source(name)}
        if not stale:
            return []
        stale |= self._importers_of(stale, loaded)
        self._forget_live(stale)
        reloaded = []
        for name in sorted(stale):
            if self.has_module(name):
                self.module(name, again=True)   # each was loaded
                reloaded.append(name)
        self._bind_submodules(reloaded)
        # A package that now fails leaves its loaded submodules live (`pkg.sub` unchanged),
        # though a new session's import of them fails with it: they go the same way.
        return self._with_failing_packages(set(reloaded))

    def reload_importers_of(self, module: str, itself: bool = False) -> list[str]:
        """Re-import modules that import `module` (after a class was replaced), and
        `module` too if `itself` (its own source no longer runs as its live copy did), and
        the loaded submodules of a package among them that now fails (`module` too)."""
        loaded = self.loaded_modules()
        importers = self._importers_of({module}, loaded)
        if not (itself and module in loaded):
            importers.discard(module)
        return self._with_failing_packages(set(self._reimported(importers)))

    def image_importers_of(self, module: str) -> set[str]:
        """The image's modules that import `module`, directly or through others, loaded
        or not (read from their source): `module` itself not among them."""
        return self._importers_of({module}, self.module_names()) - {module}

    def importers_failing_with(self, module: str) -> set[str]:
        """The image's modules that surely import `module` as they run (imports_as_it_runs),
        directly or through others, loaded or not, and the submodules of a package among
        them (`pkg.sub` of `pkg`), whose import runs the package's first: a new session's
        import of each fails when `module`'s does. `module` itself not among them."""
        def imports(name):
            return self.imports_as_it_runs(name) | _packages_of(name)
        return self._importers_of({module}, self.module_names(), imports) - {module}

    def reload_with_importers(self, modules) -> list[str]:
        """Re-import `modules`, and the loaded modules importing them (which hold what
        the old ones bound), and the loaded submodules of a package among them that now
        fails to import (importing one runs it first), with theirs: what a new session's
        import of them does now."""
        return self._with_failing_packages(
            set(self._reimported(self._importers_of(set(modules), self.loaded_modules()))))

    def _with_failing_packages(self, reimported: set[str]) -> list[str]:
        """`reimported`, and the loaded submodules of a package among them that now fails
        to import (importing one runs it first) re-imported too, with their importers."""
        while True:
            failing = {name for name in reimported if name in self.import_errors}
            under = {name for name in self.loaded_modules()
                     if name not in reimported and _packages_of(name) & failing}
            if not under:
                return sorted(reimported)
            reimported |= set(self._reimported(self._importers_of(under, self.loaded_modules()) - reimported))

    def _reimported(self, stale: set[str]) -> list[str]:
        """Import the modules `stale` anew (their live copies forgotten), in name order."""
        loaded = set(self.loaded_modules())
        self._forget_live(stale)
        for name in sorted(stale):
            self.module(name, again=name in loaded)
        self._bind_submodules(stale)
        return sorted(stale)

    def _bind_submodules(self, packages) -> None:
        """Bind in each package of `packages` imported anew its loaded submodules: Python
        binds a submodule in its package only as it loads it, so one that stayed loaded
        (`pkg.a`, unchanged) was missing from the new `pkg` (`pkg.a` an AttributeError),
        though a new session's import has it. A name the package binds itself is left."""
        for package in packages:
            module = sys.modules.get(package)
            # Its dict, not hasattr: the module's own __getattr__ may raise anything (`_LAZY[name]`);
            # and a module at all: a stand-in it put in sys.modules may have no dict (__slots__).
            if (not isinstance(module, ModuleType) or not self.owns_module(package)
                    or "__path__" not in vars(module)):
                continue
            prefix = package + "."
            for name in self.loaded_modules():
                child = name[len(prefix):]
                if name.startswith(prefix) and "." not in child and child not in vars(module):
                    setattr(module, child, sys.modules[name])

    def _importers_of(self, targets: set[str], loaded: list[str], imports=None) -> set[str]:
        imports = imports or self._imports_as_run
        found = set(targets)
        grew = True
        while grew:
            grew = False
            for name in loaded:
                if name not in found and self.has_module(name) and imports(name) & found:
                    found.add(name)
                    grew = True
        return found

    def _imports_as_run(self, module: str) -> frozenset[str] | set[str]:
        """The modules `module` imports (_imports), and those its top-level code started
        importing otherwise (ran_imports): a package importing its plugins in a loop, whose
        re-import fails once one of them does, as a new session's import of it."""
        ran = self.ran_imports.get(module)
        return self._imports(module) | ran if ran else self._imports(module)

    def imported_from(self, module: str, node: ast.ImportFrom) -> str:
        """The absolute name of the module a `from ... import` in `module` reads: a
        relative one (`from .m import x`) is resolved against `module`'s package."""
        base = node.module or ""
        if not node.level:
            return base
        package = module if self.relpath(module).endswith("__init__.py") else module.rpartition(".")[0]
        parts = package.split(".")
        parts = parts[: len(parts) - (node.level - 1)]
        return ".".join(p for p in parts + [base] if p)

    def _imports(self, module: str) -> frozenset[str]:
        """The modules `module` imports, its packages included. Kept per text (derived):
        each refresh, commit or edit asks it of every loaded module, and walking every
        tree each time cost half a second on an image of 300 big modules. A relative
        import reads the module's package, so a module and a package of that name and
        text are kept apart."""
        package = self.relpath(module).endswith("__init__.py")
        return self.derived(module, "imports of a package" if package else "imports",
                            lambda _: self._imports_in(module))

    def import_statements(self, module: str) -> list[ast.Import | ast.ImportFrom]:
        """Every import statement of the module, anywhere in it (in defs too); none if it
        does not parse. Kept per text (derived): the module's imports and search's spellings
        of a name are both read from them."""
        def find(_):
            tree = self.tree(module)
            return [] if tree is None else [node for node in walking.statements_in(tree.body)
                                            if isinstance(node, (ast.Import, ast.ImportFrom))]
        return self.derived(module, "import statements", find)

    def imports_as_it_runs(self, module: str) -> frozenset[str]:
        """The modules `module` surely imports as it runs, a TypeError their import raises
        (the dataclass decorator's) going through, its packages included: by an import
        statement at its top level, or in a class body, `with` block or `try: ...
        finally:` there, or first in a `try` or `with suppress(...)` whose handlers cannot
        catch it (`except ImportError:`), or alike in each branch of an `if` with an
        `else:`; not in a def, another `if` (`if TYPE_CHECKING:`), or a block that may
        catch it (surely_run). Kept per text (derived)."""
        package = self.relpath(module).endswith("__init__.py")
        def find(_):
            tree = self.tree(module)
            return self._imports_in(module, [] if tree is None else [
                node for node in surely_run(tree.body) if isinstance(node, (ast.Import, ast.ImportFrom))])
        return self.derived(module, "imports as it runs of a package" if package else "imports as it runs", find)

    def _imports_in(self, module: str, statements=None) -> frozenset[str]:
        names = set()
        for node in self.import_statements(module) if statements is None else statements:
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = self.imported_from(module, node)
                names.add(base)
                names.update(f"{base}.{alias.name}" for alias in node.names)
        return frozenset(names).union(*map(_packages_of, names))

    def _forget_live(self, names) -> None:
        self.forget_import_failures()   # an importer of these may import otherwise now
        for name in names:
            if self.owns_module(name):
                tied = kernel_ties.ties(name, sys.modules[name], self._is_kernel)
                if tied:
                    self.kernel_ties.setdefault(name, []).extend(tied)
                _unbind(name)
            self.live_texts.pop(name, None)
            self.live_code.pop(name, None)
            self._stand_ins.pop(name, None)
            self._forget_failure(name)


def is_program(module: str) -> bool:
    """A package's `__main__` (what `python -m pkg` runs): importing it runs the program,
    which may parse the worker's argv and exit (pip's vendored certifi's does), or worse."""
    return module.rpartition(".")[2] == "__main__"


def code_started_in(obj, filename: str, nodes: list[ast.stmt]) -> ast.stmt | None:
    """The statement of `nodes` (defs and class statements of the module compiled as
    `filename`) where code of `obj` starts (own.codes); None when none does, or `obj` has
    no such code to tell by."""
    return next(filter(None, (_statement_of(code, filename, nodes) for code in own.codes(obj))), None)


def _statement_of(code: CodeType, filename: str, nodes: list[ast.stmt]) -> ast.stmt | None:
    """The statement of `nodes` the code was compiled within, from `filename`."""
    if code.co_filename != filename:
        return None
    for node in nodes:
        # A def's code starts at its first decorator.
        start = min([node.lineno] + [decorator.lineno for decorator in node.decorator_list])
        if start <= code.co_firstlineno <= node.end_lineno:
            return node
    return None


def _bound_at(module, qualname: str):
    """What `module` binds under the qualified name (`Outer.Inner`: Inner in Outer's
    namespace, a private `__Inner` as `_Outer__Inner`), or None."""
    path = qualname.split(".")
    found = own.namespace(module).get(path[0])
    for outer, name in zip(path, path[1:]):
        found = vars(found).get(splice.mangled(outer, name)) if isinstance(found, type) else None
    return found


def _rebinds(statement: ast.stmt, name: str, made_by_statements=frozenset()) -> bool:
    """Whether a module-level statement may bind `name` to another object of that name than
    the one it holds: any binding of it but `name = f(name)` (a decorator applied by hand),
    `name = other` of a name `made_by_statements` (the module binds it by def and class
    statements alone: a class or function named `other`, as urllib3's `if not ssl:
    HTTPSConnection = DummyConnection`), and none in an `if __name__ == "__main__":` block
    (rich's demos import the module's own class)."""
    if splice.runs_as_program_only(statement):
        # The tools import a module, never run it as a program: only the `else` runs.
        return any(_rebinds(inner, name, made_by_statements) for inner in statement.orelse)
    if not splice.binds([statement], name, star=False, annotated=False):   # `name: T` binds nothing
        return False
    kept = {id(target) for node in ast.walk(statement)
            if _wraps(node, name) or _names_other_statement(node, name, made_by_statements)
            for target in node.targets}
    stores = [node for node in ast.walk(statement)
              if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store)]
    # No Name stored: bound by an import, a def, a class or an `except ... as`.
    return not stores or any(id(node) not in kept for node in stores)


# Scopes of their own: what their bodies bind is not the module's (splice.binds skips them too).
_OWN_SCOPES = splice.FunctionNode + (ast.ClassDef, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp,
                                     ast.GeneratorExp)


def _names_stored(tree: ast.Module, walrus: bool = True) -> set[str]:
    """Every name the module's top-level code binds but by a def or class statement (an
    assignment's, a loop's or `with`'s target, `:=`, an import, `except ... as`, a `match`
    capture), in its blocks too; not looked for in a def's, class's, lambda's or
    comprehension's own scope, nor, without `walrus` (no `:=` in its text), in a value
    read: walking those cost as much as parsing the module (chardet's tables)."""
    names = set()
    pending = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, _OWN_SCOPES) or (
                not walrus and isinstance(node, ast.expr) and not isinstance(getattr(node, "ctx", None), ast.Store)):
            continue
        pending.extend(ast.iter_child_nodes(node))
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update(alias.asname or alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            names.add(node.rest)
    return names


def _names_other_statement(node: ast.AST, name: str, made_by_statements) -> bool:
    """`name = other`, `other` one of `made_by_statements` but `name`."""
    return (isinstance(node, ast.Assign) and isinstance(node.value, ast.Name)
            and node.value.id != name and node.value.id in made_by_statements)


def _bound_names(statement: ast.stmt, walrus: bool) -> set[str]:
    """The names a module-level statement may bind (a superset of those splice.binds
    says it does, `*` imports aside)."""
    return (_names_stored(ast.Module(body=[statement], type_ignores=[]), walrus)
            | {node.name for _, node in splice.defs_in_blocks([statement])})


def _wraps(node: ast.AST, name: str) -> bool:
    """`name = f(name)`, `name = f(...)(name, ...)`, `name = f(g(name))` (attrs's
    `Attribute = _add_hash(_add_eq(_add_repr(Attribute, ...), ...), ...)`)."""
    return (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
            and all(isinstance(target, ast.Name) and target.id == name for target in node.targets)
            and _passes_on(node.value, name))


def _passes_on(call: ast.Call, name: str) -> bool:
    """Whether the call is given `name`, or a call given it, as a positional argument."""
    return any((isinstance(argument, ast.Name) and argument.id == name)
               or (isinstance(argument, ast.Call) and _passes_on(argument, name)) for argument in call.args)


def _module_strings(classdef: ast.ClassDef) -> set[str]:
    """The strings the class body assigns to `__module__` (`__module__ = "pkg"`, annotated
    or not, in a class-level block too)."""
    strings = set()
    for statement in splice.class_level_statements(classdef):
        targets = (statement.targets if isinstance(statement, ast.Assign)
                   else [statement.target] if isinstance(statement, ast.AnnAssign) else [])
        value = getattr(statement, "value", None)
        if (any(isinstance(target, ast.Name) and target.id == "__module__" for target in targets)
                and isinstance(value, ast.Constant) and isinstance(value.value, str)):
            strings.add(value.value)
    return strings




def _packages_of(module: str) -> frozenset[str]:
    """The packages importing `module` imports first (`a`, `a.b` of `a.b.c`)."""
    parts = module.split(".")
    return frozenset(".".join(parts[:i]) for i in range(1, len(parts)))


def _stepped_onto(base_texts: dict, base_hashes: dict, written: dict) -> tuple[dict, dict]:
    """Copies of a view's base texts and hashes with `written` (file -> (text, hash), or
    None: removed) put in: the base a commit of those files makes."""
    base_texts, base_hashes = dict(base_texts), dict(base_hashes)
    for rel, text_and_hash in written.items():
        if text_and_hash is None:
            base_texts.pop(rel, None)
            base_hashes.pop(rel, None)
        else:
            base_texts[rel], base_hashes[rel] = text_and_hash
    return base_texts, base_hashes


def _modules_of(rels) -> list[str]:
    """The modules of the files `rels`, each once, in order (`q.py` and `q/__init__.py` are one)."""
    return _once(module_name_of(rel) for rel in rels)


def _imported(report: RefreshReport) -> list[str]:
    """The modules re-imported that import now: one that failed is named by its error, not
    said to be reloaded too."""
    return [name for name in report.reloaded if name not in report.import_errors]


def _once(names) -> list[str]:
    return list(dict.fromkeys(names))


def _loader_of(held) -> object:
    """The loader a sys.modules entry's __spec__ names, None if it names none."""
    try:   # whatever a user's object in sys.modules does (a __getattr__ raising KeyError)
        return getattr(getattr(held, "__spec__", None), "loader", None)
    except Exception:
        return None


def _unbind(name: str) -> None:
    """Forget a loaded module: its sys.modules entry and its package's attribute for it,
    a module or what stood in its place (note_stand_in: the import system bound that)."""
    held = sys.modules.pop(name)
    parent, _, child = name.rpartition(".")
    bound = own.namespace(sys.modules.get(parent)).get(child)   # its dict: no __getattr__ of the package's runs
    if bound is not None and (bound is held or isinstance(bound, ModuleType)):
        delattr(sys.modules[parent], child)


def _entangled(rel: str, ours: set[str], texts: dict[str, str], fresh: dict[str, str]) -> bool:
    """Whether their change to `rel` would clash with our changes `ours` (the view's
    texts `texts`, the image now `fresh`) though ours leave `rel` alone: it lies in a
    package ours removes, or it is a package's `__init__.py` they removed while ours
    write into that package, or it is a module they made where ours made the same
    module in the other form (`q.py`, `q/__init__.py`). The commit's check conflicts
    on the same files (ImageStore._conflicts)."""
    if any(init in ours and init not in texts for init in packages_of(rel)):
        return True
    if rel.endswith("/__init__.py") and rel not in fresh:
        package = rel[:-len("__init__.py")]
        if any(other in texts and other.startswith(package) for other in ours):
            return True
    twin = other_form(rel)
    return twin in ours and twin in texts and rel in fresh


def _parsed(text: str) -> ast.Module | SyntaxError:
    """The text's AST, or the SyntaxError the tools report for it."""
    try:
        return parsing.parse(text)
    except SyntaxError as error:
        return error
    except ValueError as error:   # one unparseable file must not break image-wide tools
        return _unparseable(text, error)
    except NESTED_TOO_DEEPLY as error:   # nor one Python itself could not compile
        return SyntaxError(nested_too_deeply(error), (None, None, None, None))


def _decode(data: bytes) -> tuple[str, str]:
    """(text, codec): decoded as Python reads source (PEP 263: a BOM or a coding
    declaration, else UTF-8); bytes that do not decode become lone surrogates, so
    encoding the text back in that codec gives the same bytes."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(encoding, errors="surrogateescape"), encoding
    except (SyntaxError, UnicodeError, LookupError):   # a declaration Python would refuse too
        return data.decode("utf-8", errors="surrogateescape"), "utf-8"


def _unparseable(text: str, error: ValueError) -> SyntaxError:
    """A module text ast.parse refuses with a ValueError, as the SyntaxError the tools report."""
    if isinstance(error, UnicodeEncodeError):   # surrogates: bytes _decode could not decode
        lineno = text.count("\n", 0, error.start) + 1
        byte = text[error.start].encode("utf-8", "surrogateescape")
        return SyntaxError(f"byte {byte!r} is not valid in the file's encoding (UTF-8 unless "
                           "a coding declaration says otherwise)", (None, lineno, None, None))
    return SyntaxError(str(error), (None, None, None, None))


__all__ = ["View", "RefreshReport", "CommitConflict", "KERNEL"]


def _cannot_carry(rel: str, encoding: str, text: str, error: UnicodeEncodeError) -> str:
    return (f"{rel} declares the encoding {encoding}, which cannot carry "
            f"{text[error.start:error.end]!r} (line {text.count(chr(10), 0, error.start) + 1})")
