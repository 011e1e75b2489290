"""session: abort, commit, refresh, status — the view's transaction."""

from __future__ import annotations

import contextlib
import os

from gsmcpd.image.store import (CommitConflict, DirectoryInTheWay, ImageLockTimeout, LinkedModule, ProtectedFile,
                                StickyStateDirectory, UnlistedDirectory, UnwritableModule, module_name_of)
from gsmcpd.router.trace import shown_user
from gsmcpd.worker.registry import Tool
from gsmcpd.worker.toolset import ErrorsBudget, ToolError, Toolset, object_schema, repeat_of_told


@contextlib.contextmanager
def _lock_refused(tool: str, settled: list[str] = ()):
    """A refresh or abort that waited out the image lock, or was refused it (a sticky
    state directory), is answered as a tool's failure saying why, not as the bare
    ImageLockTimeout: the view reads the image before it changes anything, so nothing did
    but what settling the session's own earlier commit did first (`settled`: it stands,
    and the view already took it as committed)."""
    try:
        yield
    except (ImageLockTimeout, StickyStateDirectory) as error:
        if not settled:
            raise ToolError("other", f"{tool} failed: {error.strerror}; the session's view, and "
                            "its uncommitted changes, are as they were") from None
        raise ToolError("other", f"{tool} failed: {error.strerror}; nothing was discarded, but "
                        f"first {settled_text(settled)}, so the view now takes it as committed "
                        "(no longer among the uncommitted changes); the rest of the view, and its "
                        "other uncommitted changes, are as they were", {"settled": list(settled)}) from None


def conflict_error(error: CommitConflict, *, kept: str = "") -> ToolError:
    details = {"files": [{"file": rel, "module": module_name_of(rel), "how": error.how[rel],
                          **({"by": error.by[rel]} if rel in error.by else {})} for rel in error.files]}
    if not error.unreadable:
        # Refresh is no way out: it keeps ours on the old base (View.refresh).
        return ToolError("conflict", f"commit failed: {_happened(error)}; nothing was written{kept}. "
                         "Use abort to take the committed version (discarding your changes), then "
                         "make them again on it; refresh only shows which modules both changed: "
                         "it keeps yours on their old base, so committing them still conflicts.", details)
    changed = f" ({_happened(error, 'also ')})" if error.files else ""
    return ToolError("conflict", f"commit failed: {', '.join(error.unreadable)} cannot be read by "
                     f"this account (another account's module, in a package this commit removes or "
                     f"in the other form of a module it creates: the commit would leave it in no "
                     f"package, or make two files of one module){changed}; nothing was written{kept}. "
                     "Its owner must move or remove it first; or abort to discard your changes.",
                     {**details, "unreadable": list(error.unreadable)})


def _happened(error: CommitConflict, also: str = "") -> str:
    """'a.py was changed, b.py was created on disk since...': a file the session never
    read (created) or that is gone (removed) is not said to have changed."""
    files = ", ".join(f"{rel} was {also}{error.how[rel]}" for rel in error.files)
    return f"{files} on disk since this session read the image ({_made_by(error)})"


def _made_by(error: CommitConflict) -> str:
    """Who made the files as the disk has them: 'by bob's session 1a2b3c4d at ...', said
    of each file when there are several."""
    known = [rel for rel in error.files if rel in error.by]
    if not known:
        return "by another session's commit or an edit"
    if error.files == known[:1]:
        return _by(error.by[known[0]])
    return "; ".join(f"{rel} {_by(error.by[rel])}" for rel in known)


def _by(commit: dict | None) -> str:
    """'by bob's session 1a2b3c4d at 2026-12-01 09:00:00 UTC' for a journal's commit
    (its user if known); None is content no commit recorded."""
    if commit is None:
        return "by an edit outside gsmcpd"
    user, session, when = commit.get("user"), commit.get("session"), commit.get("time")
    name = f"session {session[:8]}" if session else "commit"
    # Shown as the log shows it, cut and escaped: the name is another user's token claim,
    # which that user may choose, read here by this user's model (structuredContent has it whole).
    text = f"by {shown_user(user)}'s {name}" if user else f"by {name}" if session else "by a commit"
    return text + (f" at {when.replace('T', ' ').removesuffix('Z')} UTC" if when else "")


def commit_view(view) -> tuple[list[str], list[str], dict[str, str]]:
    """Commit: the modules committed, those others' commits brought in, and the loaded
    modules that re-importing them left failing to import (module -> error); those another's
    commit had already made as this one would are in view.already_committed. A conflict or
    a failure to write (disk full, a read-only or unwritable image) is the tool error
    that says whether anything was written."""
    commits_before = view.commit_count
    errors_before = dict(view.import_errors)
    try:
        committed = view.commit()
    except CommitConflict as error:
        raise conflict_error(error, kept=" and your changes are kept uncommitted "
                             f"({', '.join(view.changed_modules())})") from None
    except (LinkedModule, DirectoryInTheWay, UnlistedDirectory, UnwritableModule, ProtectedFile,
            StickyStateDirectory) as error:   # no commit may write there
        raise ToolError("refused", f"commit refused: {error.strerror}; your changes are kept "
                        f"uncommitted ({', '.join(view.changed_modules())})") from None
    except OSError as error:
        if view.commit_count > commits_before:   # failed past the commit point: it stands
            raise ToolError("other", f"the commit of {', '.join(view.last_commit)} stands, but "
                            f"reading the image back failed: {error}") from None
        if view.undecided:   # neither "failed" nor "stands" would be known true
            raise ToolError("other", f"the commit of {', '.join(view.undecided)} failed ({error}), and "
                            f"{UNDECIDED}", {"undecided": list(view.undecided)}) from None
        if view.already_committed:   # nothing to write, yet the view moved onto them: none is kept
            modules = ", ".join(view.already_committed)
            raise ToolError("other", f"commit wrote nothing: the image already had {modules} as this "
                            "session changed it (already committed by another, with the same text), so "
                            f"nothing is left uncommitted; but reading the image back failed: "
                            f"{error.strerror or error}; refresh to see the image as it is now",
                            {"alreadyCommitted": list(view.already_committed)}) from None
        if isinstance(error, ImageLockTimeout):   # no room to make, nor permissions to fix: its holder
            raise ToolError("other", f"commit failed: {error.strerror}; your changes are kept "
                            f"uncommitted ({', '.join(view.changed_modules())})") from None
        raise ToolError("other", f"commit failed: the image could not be written ({error}); "
                        "nothing was written and your changes are kept uncommitted "
                        f"({', '.join(view.changed_modules())}). Make room or fix the "
                        "permissions and commit again, or abort to discard them.") from None
    # A commit also brings in others' commits (the view re-reads the image): every tool
    # that commits says which, as refresh does, so a module never changes under the
    # session unsaid.
    brought_in = view.brought_in
    # The commit re-imports what they changed and what imports that: a loaded module
    # their change breaks (a class it imports deleted) now fails here, unsaid otherwise.
    still_failing = _committed_failing(view, committed)
    broken = {name: error for name, error in sorted(view.import_errors.items())
              if errors_before.get(name) != error or name in still_failing}
    return committed, brought_in, broken


def _committed_failing(view, committed: list[str]) -> set[str]:
    """The modules just committed that fail to import, each tried on the text committed
    (a new one too, in a package that fails): one that failed before the change (a
    mutation tool edits a failing module's source) and still does fails in every new
    session too, which the answer must say, though its error is the one it had. A
    program (`__main__`) failing was the session's code's import: it is tried again as
    that re-import (View._failing_now), else its old error stood after the fix."""
    return {name for name in committed
            if view.has_module(name) and view.module(name, again=name in view.import_errors) is None
            and name in view.import_errors}


# Of a commit that failed, or was broken, not knowing whether it stands (View.undecided).
UNDECIDED = ("whether it stands could not be told (the journal that records it could not be read "
             "under the image lock); commit again or refresh to settle it: the answer then says "
             "whether it stands (settled), and a commit writes anything else")


class ToldImportErrors:
    """The import errors (module -> error) one answer tells, each once, under one budget
    (toolset.ErrorsBudget) over all the parts telling some: a mutation's notes, then its
    commit's lines. structuredContent's importErrors (data) repeats each as it was told."""

    WHAT = "the import error"

    def __init__(self):
        self._budget = ErrorsBudget()
        self._told = {}   # module -> (its error, as told, the characters it was cut to or None)

    def told(self, errors: dict[str, str]) -> dict[str, str]:
        """Those of `errors` not yet told (as they are), by module (sorted), as the text tells them."""
        told = {}
        for module in sorted(errors):
            if self._told.get(module, (None,))[0] != errors[module]:
                self._told[module] = (errors[module], *self._budget.tell(errors[module], self.WHAT))
                told[module] = self._told[module][1]
        return told

    def lines(self, errors: dict[str, str]) -> list[str]:
        return [f"import error in {module}: {error}" for module, error in self.told(errors).items()]

    def data(self, errors: dict[str, str]) -> dict[str, str]:
        """`importErrors` of an answer whose text told `errors`: of each error, its start, or
        as told there when the budget cut it shorter (toolset.repeat_of_told)."""
        self.told(errors)   # one its text did not tell still counts
        return {module: repeat_of_told(*self._told[module], self.WHAT) for module in sorted(errors)}


def import_error_lines(errors: dict[str, str]) -> list[str]:
    """The lines telling `errors`, of an answer telling no others."""
    return ToldImportErrors().lines(errors)


def import_errors_data(errors: dict[str, str]) -> dict[str, str]:
    """`importErrors` of an answer whose text has import_error_lines of `errors`."""
    return ToldImportErrors().data(errors)


def brought_in_text(brought_in: list[str]) -> str:
    return f"brought in others' commits to {', '.join(brought_in)}"


def settled_text(modules: list[str]) -> str:
    """For the session's own earlier commit that could not tell whether it stands, found standing."""
    return f"this session's own earlier commit, which could not tell whether it stood, stands: {', '.join(modules)}"


def already_committed_text(modules: list[str]) -> str:
    """For changes the image already had, byte for byte: taken as committed, nothing written."""
    return f"already committed by another, with the same text: {', '.join(modules)}"


class SessionToolset(Toolset):
    name = "session"
    tool_names = ("abort", "commit", "refresh", "status")
    read_only_safe = frozenset({"abort", "refresh", "status"})
    destructive = frozenset({"abort"})
    idempotent = frozenset({"abort", "refresh", "status", "commit"})

    def register(self, registry):
        empty = object_schema()
        registry.add(Tool("abort", "Discard this session's uncommitted changes and re-read the "
                          "image (also brings in other sessions' commits).", empty, self.abort))
        registry.add(Tool("commit", "Write this session's changes to the image atomically; fails "
                          "with kind conflict if another session changed the same file, unless it "
                          "committed the same change (no conflict: listed alreadyCommitted).",
                          empty, self.commit))
        registry.add(Tool("refresh", "See other sessions' commits, keeping this session's "
                          "uncommitted changes.", empty, self.refresh))
        registry.add(Tool("status", "Session user, id, worker pid, image path, view version and "
                          "uncommitted changes.", empty, self.status))

    def abort(self, arguments):
        with _lock_refused("abort"):
            # The session's own earlier commit, if it stands, is no change to discard, nor another's.
            settled = self.view.settle()
        # Settled, the view has moved: a lock waited out now must not say it is as it was.
        with _lock_refused("abort", settled):
            discarded, base = self.view.changed_modules(), dict(self.view.base_hashes)
            base_texts = dict(self.view.base_texts)
            report = self.view.abort()
        # Abort takes the image as it is now: others' commits change modules under the
        # session as a refresh's do, and are named as refresh names them.
        brought_in = self.view.moved_since(base, base_texts)
        lines = ["Aborted: " + (f"discarded changes to {', '.join(discarded)}" if discarded
                                else "no uncommitted changes"),
                 f"view version {self.view.version}"]
        if settled:
            lines.append(settled_text(settled))
        if brought_in:
            lines.append(brought_in_text(brought_in))
        lines += _reload_lines(report)
        return {"text": "\n".join(lines), "structured": {
            "discarded": discarded, "broughtIn": brought_in, "version": self.view.version,
            "reloaded": report.reloaded, "importErrors": import_errors_data(report.import_errors),
            **({"settled": settled} if settled else {})}}

    def commit(self, arguments):
        committed, brought_in, broken = commit_view(self.view)
        already = self.view.already_committed
        settled = self.view.settled
        text = (f"Committed {', '.join(committed)}" if committed
                else "Nothing to write" if already or settled else "Nothing to commit; view refreshed")
        for part, names in ((settled_text, settled), (already_committed_text, already),
                            (brought_in_text, brought_in)):
            if names:
                text += "; " + part(names)
        lines = [f"{text} (view version {self.view.version})"] + import_error_lines(broken)
        structured = {"committed": committed, "alreadyCommitted": already, "broughtIn": brought_in,
                      "version": self.view.version, "importErrors": import_errors_data(broken)}
        if settled:   # only then: an earlier commit's, not this one's
            structured["settled"] = settled
        return {"text": "\n".join(lines), "structured": structured}

    def refresh(self, arguments):
        with _lock_refused("refresh"):
            report = self.view.refresh()
        lines = [f"Refreshed to view version {self.view.version}"]
        if report.settled:
            lines.append(settled_text(report.settled))
        if report.brought_in:
            lines.append("brought in: " + ", ".join(report.brought_in))
        if report.kept_ours:
            lines.append("changed both here and in a commit, kept ours (commit will conflict; "
                         "abort takes theirs): " + ", ".join(report.kept_ours))
        if report.already_committed:   # no longer uncommitted here
            lines.append(already_committed_text(report.already_committed))
        lines += _reload_lines(report)
        return {"text": "\n".join(lines), "structured": {
            "version": self.view.version, "broughtIn": report.brought_in,
            "keptOurs": report.kept_ours, "alreadyCommitted": report.already_committed,
            "reloaded": report.reloaded, "importErrors": import_errors_data(report.import_errors),
            **({"settled": report.settled} if report.settled else {})}}

    def status(self, arguments):
        view = self.view
        info = (self.server.session_info or {}) if self.server is not None else {}
        changed = view.changed_modules()
        structured = {
            "user": view.user or info.get("user"),
            "sessionId": view.session_id or info.get("session_id"),
            "pid": os.getpid(),
            "image": str(view.image_dir),
            "viewVersion": view.version,
            "uncommittedChanges": bool(changed),
            "changedModules": changed,
            "readOnly": bool(getattr(self.server, "read_only", False)),
        }
        text = "\n".join([
            f"user: {structured['user']}", f"session: {structured['sessionId']}",
            f"worker pid: {structured['pid']}", f"image: {structured['image']}",
            "read-only: " + ("yes (this session cannot commit or change the image)"
                             if structured["readOnly"] else "no"),
            f"view version: {structured['viewVersion']}",
            "uncommitted changes: " + (", ".join(changed) if changed else "none"),
        ])
        if view.unlisted:   # left out of the view; a commit there is refused
            structured["unlisted"] = [f"{directory}/" for directory in view.unlisted]
            text += ("\nnot seen (directories this account may not list or enter; a commit "
                     "into them is refused): " + ", ".join(structured["unlisted"]))
        if view.too_long:   # left out of the view: no file there can be opened
            structured["tooLong"] = list(view.too_long)
            text += ("\nnot seen (paths longer than the system can open, PATH_MAX, the image's "
                     "own path counted): " + ", ".join(view.too_long))
        return {"text": text, "structured": structured}


def _reload_lines(report) -> list[str]:
    lines = []
    if report.reloaded:
        lines.append("reloaded: " + ", ".join(report.reloaded))
    return lines + import_error_lines(report.import_errors)
