"""mutation: change the image's source and live objects, then commit.

Every tool here edits the module's text at the AST position (gsmcpd.image.splice),
updates the live objects (gsmcpd.image.live), then commits like the seed. A
failed commit (conflict) leaves the change in the session, uncommitted, and says so; a
failure before the commit undoes what the tool changed (whole_or_none).
Everything the image does not itself define is refused (the kernel guard).
"""

from __future__ import annotations

import ast
import builtins
import enum
import functools
import importlib.util
import inspect
import keyword
import sys
import typing

from gsmcpd.image import catalog, live, overlay, own, parsing, splice, trial
from gsmcpd.image.store import module_name_of, relpath_of
from gsmcpd.image.splice import NESTED_TOO_DEEPLY, nested_too_deeply
from gsmcpd.image.view import KERNEL, is_program
from gsmcpd.raised import raised, raised_where
from gsmcpd.worker import module_functions, special_methods
from gsmcpd.worker.registry import Tool
from gsmcpd.worker.toolset import (BREAKS, ToolError, Toolset, bool_prop, object_schema, recursion_limit_note,
                                    repeated, string_prop)
from gsmcpd.worker.toolsets.browsing import (CLASS_NAME, META, SELECTOR, filter_by_meta, live_kind,
                                              metaclass_method_text, metaclass_owner, no_def_hint,
                                              qualname)
from gsmcpd.worker.toolsets.search import capped, senders
from gsmcpd.worker.toolsets.session import (ToldImportErrors, already_committed_text, brought_in_text,
                                            commit_view, settled_text)

DICTIONARY = {"dictionaryName": string_prop("an image module, dotted name (e.g. shop.models)",
                                             min_length=1)}


def parse_single(source: str, wanted, what: str):
    """Parse `source`, which must be exactly one statement of type `wanted`."""
    text, body = _parse_statements(source)
    if len(body) != 1 or not isinstance(body[0], wanted):
        raise ToolError("refused", f"the source must be a single {what} and nothing else; "
                        + _class_source_hint(body))
    return text, body[0]


def _class_source_hint(body: list[ast.stmt]) -> str:
    """What to send instead of several classes, or of a function, to compile_class_definition
    (execute_code would define either in the workspace alone)."""
    if len(body) > 1 and all(isinstance(node, ast.ClassDef) for node in body):
        return "send each class in a compile_class_definition call of its own"
    if any(isinstance(node, splice.FunctionNode) for node in body):
        return ("a module-level function is defined by compile_method with className its "
                "dictionary, a method by compile_method with className its class")
    return _other_statements_hint(body)


def parse_method(source: str):
    """Parse a method's source: one def, or the defs of one name that make a property
    (getter, setter, deleter), as get_method_source gives them. Returns (text, defs)."""
    text, body = _parse_statements(source)
    if not body or not all(isinstance(node, splice.FunctionNode) for node in body) or len(
            {node.name for node in body}) != 1:
        raise ToolError("refused", "the source must be a single def or async def (or the defs "
                        "of one property, as get_method_source gives them) and nothing else; "
                        + _method_source_hint(body))
    return text, body


def _method_source_hint(body: list[ast.stmt]) -> str:
    """What to send instead of several methods, or of a class attribute, to compile_method."""
    if body and all(isinstance(node, splice.FunctionNode) for node in body):
        return "send each method in a compile_method call of its own"
    if any(isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) for node in body):
        return ("a class attribute is set by compile_class_definition (get_class_definition "
                "gives the class statement to edit)")
    if any(isinstance(node, ast.ClassDef) for node in body):
        return ("a class is defined by compile_class_definition, a nested one written in the "
                "statement of the class holding it (get_class_definition gives it to edit)")
    return _other_statements_hint(body)


# No tool writes a module's top-level statements; execute_code runs an import in the
# workspace only, so sending someone there for one would leave the module without it.
ADD_TO_MODULE_FILE = ("add it at the top of the module's file in an editor, then refresh (an "
                      "edit outside gsmcpd is seen as another session's commit)")


def _other_statements_hint(body: list[ast.stmt]) -> str:
    if any(isinstance(node, (ast.Import, ast.ImportFrom)) for node in body):
        return ("no tool writes a module's imports (execute_code's bind names in its "
                "workspace only): " + ADD_TO_MODULE_FILE + ", and send the definition alone")
    return "use execute_code to run other code"


def _parse_statements(source: str) -> tuple[str, list[ast.stmt]]:
    text = splice.dedent_code(source).strip("\r\n") + "\n"
    try:
        body = ast.parse(text).body
        # The compiler's own errors ('return' outside function, a nonlocal with no binding)
        # as the parser's are, by the line of the text sent: met compiling the spliced
        # module, they named the line of the module's file it would have gone to.
        compile(text, "<source>", "exec", dont_inherit=True)
        return text, body
    except SyntaxError as error:   # one about the whole text (a NUL byte) has no line
        where = f"line {error.lineno}: " if error.lineno else ""
        raise ToolError("compileError", where + error.msg) from None
    except NESTED_TOO_DEEPLY as error:
        raise ToolError("compileError", nested_too_deeply(error)) from None


# Python imports each package of a dotted name by recursing into its parent's import:
# a module nested a few hundred deep fails to import (RecursionError), and a commit
# walking its directories failed the same way. No real package comes near this.
MAX_DICTIONARY_PARTS = 100


def dictionary_name_parts(name: str, program: bool = False) -> list[str]:
    """The parts of a dotted module name (catalog.dictionary_name) that can be imported,
    or invalidParams; with `program`, a package's `__main__` (is_program) is one too."""
    parts = name.split(".")
    for part in parts[:-1] if program and is_program(name) else parts:
        if keyword.iskeyword(part):
            raise ToolError("invalidParams", f"{catalog.quoted(name)}: {part} is a Python keyword, "
                            "so the module could never be imported; choose another name")
        if part.startswith("__") and part.endswith("__") and part.strip("_"):   # `___` is none
            raise ToolError("invalidParams", f"{catalog.quoted(name)}: {catalog.echoed(part)} is a "
                            "dunder name (__init__ and __main__ are special to Python's packages); "
                            "choose another name")
    return parts


def removed_text(name: str, removed: list[str]) -> str:
    """remove_dictionary's answer: the dictionary, then a package's submodules gone with it."""
    submodules = [module for module in removed if module != name]
    text = f"removed dictionary {catalog.echoed(name)}"
    if submodules:
        text += (f" and its submodule{'s' if len(submodules) > 1 else ''} "
                 f"{', '.join(map(catalog.echoed, submodules))}")
    return text


def definition_error(error: BaseException, module, module_name: str, view, filename: str) -> ToolError:
    """The error evaluating a definition in `module` (module_name's live one, its file
    `filename`) raised, and where, when code the definition called raised it (a decorator):
    its text alone does not say. Named by module_name: what code put in sys.modules in its
    place may have no __name__."""
    if isinstance(error, ToolError):   # said already: live's code nested too deeply to compile
        return error
    message = f"evaluating the definition raised {raised(error)}"
    where = raised_where(error, filename, lambda name: _image_module_of(view, name))
    if where is not None:
        message += f" (raised in {where})"
    name = getattr(error, "name", None) if type(error) is NameError else None
    if (module is not None and isinstance(name, str) and name not in own.namespace(module)
            and not hasattr(builtins, name)):
        # A decorator, base, default or annotation is read in the module as the class or
        # def is made: a name the module never binds needs an import there, or a fix.
        message += (f" ({module_name} binds no {catalog.echoed(name)} at its top level; if it is to be "
                    f"imported, {ADD_TO_MODULE_FILE}; else correct the name)")
    return ToolError("compileError", message)


def whole_or_none(tool):
    """A mutation tool that fails past its first change and before its commit (user code
    raising as the live class is set, a bug) leaves the session as it was: the texts as
    they were, the live modules it changed (_changing) imported again from them with
    their importers, as abort does; the error says so. A break puts the texts back and
    forgets those modules, to run no code of the session's while it stops the call."""
    @functools.wraps(tool)
    def run(self, arguments):
        texts, errors = dict(self.view.texts), dict(self.view.import_errors)
        self._changed, self._committing = set(), False
        try:
            return tool(self, arguments)
        except BaseException as error:
            if self._committing or (not self._changed and self.view.texts == texts):
                raise   # nothing changed yet, or the commit's own error (its changes kept, said)
            self._put_back(tool.__name__, texts, errors, error)
        finally:
            self._changed = None
    return run


def _image_module_of(view, filename: str) -> str | None:
    """The image module whose file `filename` is, or None (the standard library's, a package's)."""
    root = view.filename("")
    rel = filename[len(root):] if filename.startswith(root) else None
    return module_name_of(rel) if rel in view.texts else None


class MutationToolset(Toolset):
    name = "mutation"
    tool_names = ("add_dictionary", "compile_class_definition", "compile_method", "delete_class",
                  "delete_method", "remove_dictionary", "set_class_comment")
    destructive = frozenset({"delete_class", "delete_method", "remove_dictionary"})
    # Each, called again alike, changes nothing more (add_dictionary: "already exists").
    idempotent = frozenset(tool_names)

    def __init__(self, server=None):
        super().__init__(server)
        self.call_starting()
        self._changed: set[str] | None = None   # the modules whose live objects the call changes
        self._committing = False

    def call_starting(self) -> None:
        # One budget over all the import errors a call's answer tells, each told once.
        self._errors_told = ToldImportErrors()

    def register(self, registry):
        add = registry.add
        add(Tool("add_dictionary", "Create an image module (parent packages as needed), commit.",
                 object_schema(DICTIONARY, ["dictionaryName"]), self.add_dictionary))
        add(Tool("compile_class_definition",
                 "Define or redefine a class from a single class statement, commit. Methods (and "
                 "nested classes) of an existing class that the source leaves out are carried "
                 "over, as get_class_definition leaves them out, unless "
                 "recompileMethods is false; failures are reported. A change of bases or __slots__ "
                 "is refused while the class has subclasses in the image. A new class needs "
                 "dictionaryName.",
                 object_schema({"source": string_prop("one class statement"),
                                "recompileMethods": bool_prop("carry the existing methods over (default true)"),
                                "dictionaryName": string_prop("the image module for a new class",
                                                              min_length=1)},
                               ["source"]), self.compile_class_definition))
        add(Tool("compile_method", "Add or replace one method (a single def, decorators allowed, "
                 "or a property's defs of one name together) on a class, live and in source, "
                 "commit; className a dictionary for a module-level function. A name the class "
                 "binds to an attribute "
                 "is refused, and so is a def of the other side than the method it would replace "
                 "(no kind decorator, without meta over a classmethod), and with meta a plain def of a "
                 "special method Python calls on instances (__init__, __repr__, __eq__...). category is "
                 "accepted and ignored (Python has no method categories).",
                 object_schema({**CLASS_NAME, "source": string_prop("one def / async def"),
                                "category": string_prop("ignored"), **META},
                               ["className", "source"]), self.compile_method))
        add(Tool("delete_class", "Remove a class from its module, commit. Refused while image "
                 "classes are built on it (its subclasses, classes it is the metaclass of): delete "
                 "or redefine them first.",
                 object_schema(CLASS_NAME, ["className"]), self.delete_class))
        add(Tool("delete_method", "Remove a method from a class (or a function from a "
                 "dictionary given as className), commit; a class attribute the "
                 "source also binds to that name is what the class then has.",
                 object_schema({**CLASS_NAME, **SELECTOR, **META}, ["className", "selector"]),
                 self.delete_method))
        add(Tool("remove_dictionary", "Delete an image module (a package with its submodules), "
                 "commit. Refused while classes of other image modules are built on its classes "
                 "(their subclasses, classes they are the metaclass of): delete, redefine or remove "
                 "those first. The modules importing it, which then fail to import, are named.",
                 object_schema(DICTIONARY, ["dictionaryName"]), self.remove_dictionary))
        add(Tool("set_class_comment", "Set a class's docstring, commit.",
                 object_schema({**CLASS_NAME, "comment": string_prop("the new docstring")},
                               ["className", "comment"]), self.set_class_comment))

    # -- shared steps ----------------------------------------------------

    def _guarded(self, class_name: str):
        ref, cls = catalog.mutable_class(self.view, class_name)
        if cls is not None:
            self.assert_mutable(cls, ref.qualified)
        return ref, cls

    def _changing(self, module_name: str) -> None:
        """Say the live objects of `module_name` are about to change (whole_or_none)."""
        if self._changed is not None:
            self._changed.add(module_name)

    def _put_back(self, tool: str, texts: dict[str, str], errors: dict[str, str], error: BaseException):
        """Undo the change `tool` made before `error` (whole_or_none), and raise the error
        saying so: the break itself, or a ToolError of its kind ("other" for any other).
        `errors`: the import errors as the call began (one failing so before is not new)."""
        modules = sorted(self._changed)
        again = not isinstance(error, BREAKS)
        put_back = self.view.put_back(texts, modules, again)
        if not again:
            raise error
        failing = {name: self.view.import_errors[name] for name in put_back
                   if name in self.view.import_errors and errors.get(name) != self.view.import_errors[name]}
        note = recursion_limit_note(error)   # as the server says an error no tool means
        said = error.message if isinstance(error, ToolError) else raised(error) + ("" if note is None else "\n" + note)
        message = f"{said}\n{tool} failed part way, and nothing was changed: "
        message += (f"{', '.join(put_back)} {'was' if len(put_back) == 1 else 'were'} imported again "
                    "from the source as it was, as abort does" if put_back else "the source is as it was")
        if failing:   # their code raising on its re-run (a registry refusing a name twice)
            message += "; " + "; ".join(f"{name} now fails to import: {text}" for name, text in failing.items())
        details = {**(error.details if isinstance(error, ToolError) else {}), "reimported": put_back}
        if failing:
            details["importErrors"] = failing
        raise ToolError(error.kind if isinstance(error, ToolError) else "other", message, details) from None

    def _finish(self, message, structured: dict) -> dict:
        """Commit, and answer `message` (a function: the message as the commit leaves things)."""
        self._committing = True   # its failure is the commit's, which keeps the change and says so
        committed, brought_in, broken = commit_view(self.view)
        if callable(message):
            message = message()
        structured = {**structured, "committed": committed, "version": self.view.version}
        already = self.view.already_committed   # by another's identical commit: not written again
        if already and not committed:   # "committed" would claim a write that never was
            text = (f"{message}; {already_committed_text(already)}, so nothing was written "
                    f"(view version {self.view.version})")
        elif committed or self.view.settled:
            text = f"{message}; committed (view version {self.view.version})"
        else:   # the change undid the session's own uncommitted ones: nothing is on disk as said
            text = (f"{message}; nothing to commit, the change leaving this session's modules as it "
                    f"had read them (now view version {self.view.version})")
        if self.view.settled:   # this session's earlier undecided commit, found standing
            structured["settled"] = self.view.settled
            text += "\n" + settled_text(self.view.settled)
        if already:
            structured["alreadyCommitted"] = already
            if committed:
                text += "\n" + already_committed_text(already)
        if brought_in:   # only then, as commit's answer does
            structured["broughtIn"] = brought_in
            text += "\n" + brought_in_text(brought_in)
        if broken:       # what bringing them in broke here, added to what the change itself did
            said = structured.get("importErrors", {})   # in the change's note ("... now fails to import")
            structured["importErrors"] = {**said, **broken}
            unsaid = self._errors_told.lines(broken)   # not in a note already
            if unsaid:
                text += "\n" + "\n".join(unsaid)
        if "importErrors" in structured:   # each as the text (a note or its lines) told it
            structured["importErrors"] = self._errors_told.data(structured["importErrors"])
        return {"text": text, "structured": structured}

    def _reimport_importers(self, modules, itself: bool = False) -> tuple[str, dict]:
        """Re-import the loaded image modules that import `modules` (a class or module
        just removed), so this session sees what a fresh one would: an importer that
        names what is gone now fails to import here too; so does the class's own module
        (`itself`) when it may still need the class as it runs. Returns a note and its data."""
        return self._reimported_note(sorted({name for module in modules
                                             for name in self.view.reload_importers_of(module, itself)}))

    def _reimport_readers(self, module_name: str, attributes: set[str]) -> tuple[str, dict]:
        """Re-import the image modules importing `module_name` that read an attribute
        named in `attributes` as they run (`LIMIT = Job.limit`), after its class lost
        them: one that reads it of that class now fails here as in a new session, named,
        not committed silently. Only those (a static check first): re-importing every
        importer on each edit would replace their live classes for nothing. ('', {}) when
        none reads them."""
        readers = []
        for name in sorted(self.view.image_importers_of(module_name)):
            source, tree = self.view.source(name), self.view.tree(name)
            # `.limit` or `getattr(Job, "limit")`: the name is in the text either way.
            if (tree is not None and any(attribute in source for attribute in attributes)
                    and live.reads_attribute(tree, attributes)):
                readers.append(name)
        if not readers:
            return "", {}
        return self._load_and_reimport(module_name, readers)

    def _load_dataclass_importers(self, module_name: str, names=()) -> None:
        """Load the image modules importing `module_name` whose source names a dataclass
        (and, if `names` are given, annotates one of them in a class, or imports such a
        module, `module_name` included: its dataclass subclasses inherit that field), before a class of it changes
        its fields or frozen, or binds or unbinds a name a field may take as its default (`names`,
        _base_binding_conflicts), what alone can leave its dataclass subclasses unmakeable
        (compile_class_definition, compile_method, or made again by _rebuilt_dataclass):
        theirs of it are then made from it as it was, so _reimport_unmakeable tells one
        that no longer imports from one failing for another reason."""
        importers = sorted(name for name in self.view.image_importers_of(module_name)
                           if "dataclass" in (self.view.source(name) or ""))
        if names:
            declaring = {name for name in [module_name, *importers]
                         if _annotates_in_a_class(self.view.tree(name), names)}
            inheriting = set().union(*(self.view.image_importers_of(name) for name in declaring))
            importers = [name for name in importers if name in declaring | inheriting]
        for name in importers:
            self.view.module(name)

    def _reimport_unmakeable(self, module_name: str, cls) -> tuple[str, dict]:
        """Re-import the modules, other than `module_name`, that define live dataclass
        subclasses of `cls` the dataclass decorator would no longer make, their `frozen`
        no longer agreeing with their bases' (live.frozen_conflict) or a field without a
        default now following one with (live.field_order_conflict): they now fail to
        import here as in a new session, named (`reimported`, `importErrors`), with those
        importing them. Only those: the others keep their live classes. The class's own
        module is not (that would replace `cls`), nor one whose conflict comes through a
        base left stale in it (made from `cls` as it was: a re-import here still makes it,
        a new session's does not). _stale_dataclass_subclasses, asked before, names them
        all (`frozenConflicts`, `fieldOrderConflicts`). ('', {}) when none is."""
        modules = {self.view.home(sub) for sub in live.subclasses_of(cls)
                   if self.view.home(sub) != module_name and "__dataclass_fields__" in vars(sub)
                   and self.view.makes(sub) and (
                       live.frozen_conflict(sub) is not None
                       or live.field_order_conflict(sub, here=True, unvalued=self._unvalued) is not None)}
        if not modules:
            return "", {}
        return self._load_and_reimport(module_name, modules)

    def _load_and_reimport(self, module_name: str, modules) -> tuple[str, dict]:
        """Load the whole image (so an importer not loaded yet is re-imported and named
        too), then re-import `modules` and their importers after a change to `module_name`:
        _reimported_note's note and data, naming too each importer of `module_name` the
        loading left failing (one making an instance the change broke, as it runs), which
        fails in a new session as well, whatever the re-imports say."""
        errors_before = dict(self.view.import_errors)
        self.view.load_all()
        reimported = self.view.reload_with_importers(modules)
        importers = self.view.image_importers_of(module_name)
        failed = [name for name, error in self.view.import_errors.items()
                  if name in importers and name not in reimported and errors_before.get(name) != error]
        return self._reimported_note(reimported, failed)

    def _stale_and_unmakeable(self, qualified: str, module_name: str, cls, basis, gained=frozenset(),
                              lost=frozenset()) -> tuple[tuple[str, dict], tuple[str, dict]]:
        """_stale_dataclass_subclasses of `cls` (of `module_name`), asked first, on the live
        subclasses, or else _base_binding_conflicts of the names the change bound in `cls`
        (`gained`) or unbound (`lost`), and _reimport_unmakeable when either names one (a
        subclass made again may leave its own subclasses unmakeable): (note, data) of each,
        the first naming too the modules failing with one not re-imported
        (_failing_importers)."""
        stale = self._stale_dataclass_subclasses(qualified, cls, basis)
        if "staleSubclasses" not in stale[1]:
            stale = self._base_binding_conflicts(qualified, cls, gained, lost)
            if not stale[1]:
                return stale, ("", {})
        # Each subclass's module, by the name the conflicts give it (`m2.Outer.Inner` may be
        # nested), read before the re-import: the old classes of a module it replaces may
        # be collected by the time they are looked for.
        modules = {qualname(self.view, sub): self.view.home(sub) for sub in live.subclasses_of(cls)}
        unmakeable = self._reimport_unmakeable(module_name, cls)
        failing = self._failing_importers(modules, stale[1], unmakeable[1])
        return (stale[0] + failing[0], {**stale[1], **failing[1]}), unmakeable

    def _base_binding_conflicts(self, qualified: str, cls, gained, lost=()) -> tuple[str, dict]:
        """A note and its data (`fieldOrderConflicts`) naming the image's live dataclass
        subclasses of `cls` that a name the change bound in `cls` (`gained`) or unbound
        (`lost`) leaves unmakeable: a field declared without a value (`label: str`) takes
        what a base binds to its name as its default (the decorator's getattr), so a gained
        `def label` puts a default before a later field without one, and a lost one leaves
        such a field after one with a default without its own (told by its source,
        _unvalued: made, it holds the default as if written `label: str = 3`). Their
        dataclass_basis is not what changed, so _stale_dataclass_subclasses does not name
        them. ('', {}) when none is."""
        if cls is None or not (gained or lost):
            return "", {}
        note, misordered = "", {}
        for sub in live.subclasses_of(cls):
            if ("__dataclass_fields__" not in vars(sub) or not self.view.makes(sub)
                    or live.frozen_conflict(sub) is not None):   # the decorator checks it first
                continue
            conflict = live.field_order_conflict(sub, unvalued=self._unvalued)
            pair = live.misordered_fields(sub, self._unvalued) if conflict is not None else None
            if pair is None or not (pair[0][0] in gained or pair[1][0] in lost):
                continue
            name = qualname(self.view, sub)
            misordered[name] = conflict
            field = catalog.echoed(pair[1][0])   # a name the change bound or unbound: any length
            had = (f"declared without a value, {field} had what {qualified} bound to it as its "
                   f"default, which is gone; " if pair[1][0] in lost else "")
            note += (f"; {name} cannot be made again as written: "
                     f"{_misordered_fields_text(self.view, sub, pair, self._unvalued)} ({had}the dataclass "
                     f"decorator now raises TypeError: {conflict}), so a new "
                     f"session's import of {self.view.home(sub)} fails until compile_class_definition"
                     f"{_on_enclosing(self.view, sub)} gives {field} a default (or kw_only), or {qualified} "
                     "is changed back")
        return note, ({"fieldOrderConflicts": misordered} if misordered else {})

    def _unvalued(self, cls) -> frozenset[str]:
        """The names the class statement making the image class `cls` annotates without a
        value (live.unvalued_names), in every statement that may make it (`if`/`else`
        twins): its dataclass fields of them took a base's binding as their default. Empty
        for a class no image module's source makes."""
        if not self.view.makes(cls):
            return frozenset()
        statements = splice.nested_class_statements(self.view.tree(self.view.home(cls)), own.QUALNAME(cls))
        return frozenset.intersection(*(frozenset(live.unvalued_names(node)) for node in statements)
                                      ) if statements else frozenset()

    def _failing_importers(self, modules: dict, stale_data: dict, reimported_data: dict) -> tuple[str, dict]:
        """A note and its data (`failingImporters`: module, its importers) naming the image
        modules that surely import, as they run, a module left failing in a new session by
        its unmakeable dataclass subclass (`stale_data`'s conflicts, each subclass's module
        in `modules`) but not re-imported (`reimported_data`): the class's own module, or
        one whose conflict comes through a base left stale. A new session's import of them
        fails too; here they import, and are not re-imported (the own module's re-import
        would replace the class). Those named in importErrors already are left out. ('',
        {}) when there are none."""
        conflicting = {**stale_data.get("frozenConflicts", {}), **stale_data.get("fieldOrderConflicts", {})}
        failing = {modules[name] for name in conflicting} - set(reimported_data.get("reimported", ()))
        named = failing | set(reimported_data.get("importErrors", {}))
        importers = {module: sorted(self.view.importers_failing_with(module) - named)
                     for module in sorted(failing)}
        importers = {module: names for module, names in importers.items() if names}
        if not importers:
            return "", {}
        note = "".join(f"; a new session's import of {', '.join(names)}, importing {module} as "
                       f"{'it runs' if len(names) == 1 else 'they run'}, fails too"
                       for module, names in importers.items())
        return note, {"failingImporters": importers}

    def _inheritors(self, cls, module_name: str, bound: str) -> tuple[str, ...]:
        """The names, as the module's code spells them, of the classes `module_name` makes
        on `cls` (its live subclasses, nested in a class too: `Outer.Inner`) that have `bound`
        from `cls` alone: no other class of their MRO binds it, nor their metaclass. Without
        it in `cls`, a read through them (`Sub.run`) fails as `cls`'s does."""
        if not isinstance(cls, type):
            return ()
        return tuple(_spelled(own.QUALNAME(sub)) for sub in live.subclasses_of(cls)
                     if self.view.home(sub) == module_name and self.view.makes(sub)
                     and not any(bound in vars(owner) for owner in sub.__mro__ + type(sub).__mro__
                                 if owner is not cls))

    def _reimported_note(self, reimported: list[str], failed=()) -> tuple[str, dict]:
        """The note and data naming the modules `reimported` and those now failing, of
        them and of the modules `failed` (loaded for the first time)."""
        errors = {name: self.view.import_errors[name] for name in sorted({*reimported, *failed})
                  if name in self.view.import_errors}
        note = f"; re-imported {', '.join(reimported)}" if reimported else ""
        for name, error in self._errors_told.told(errors).items():   # not in an earlier note
            note += f"; {name} now fails to import: {error}"
        return note, {"reimported": reimported, "importErrors": errors}

    def _splice(self, function, *args):
        try:
            return function(*args)
        except splice.IndentationMismatch as error:
            raise ToolError("invalidParams", str(error)) from None
        except splice.SpliceError as error:
            raise ToolError("refused", str(error)) from None

    # -- tools -----------------------------------------------------------

    @whole_or_none
    def compile_method(self, arguments):
        dictionary = catalog.function_dictionary(self.view, arguments["className"])
        if dictionary is not None:
            return self._compile_function(dictionary, arguments)
        ref, cls = self._guarded(arguments["className"])
        # A property's defs come together: compiling its getter alone would drop its setter.
        text, defs = parse_method(arguments["source"])
        node = defs[0]
        meta = arguments.get("meta")
        if meta and any(splice.method_kind(item) not in ("class", "static") for item in defs):
            refusal = special_methods.meta_refusal(ref.name, node.name)
            if refusal:
                raise ToolError("refused", refusal)
            if len(defs) > 1:
                raise ToolError("refused", f"meta makes one def a classmethod; {node.name} "
                                f"is {len(defs)} defs (a property is not class-side)")
            if not (node.args.posonlyargs or node.args.args or node.args.vararg):
                # Written in, it would fail at every call: the class is always passed.
                raise ToolError("refused", f"meta makes {node.name} a classmethod, which is called "
                                f"with the class as its first argument, and {node.name} takes no "
                                f"positional argument; write def {node.name}(cls, ...), or mark "
                                "it @staticmethod")
            text = "@classmethod\n" + text
        classdef = catalog.class_node(self.view, ref)
        existing = splice.replaced_by(classdef, node.name, defs)
        self._refuse_unfit_def(ref, cls, classdef, defs, existing, bool(meta))
        module_name = ref.module
        old_source = self.view.source(module_name)
        new_source, replaced = self._splice(splice.put_method, old_source, ref.name, text)
        _refuse_own_name_read_unbound(ref, node.name, old_source, new_source)
        self.view.check_encodable(module_name, new_source)
        basis = live.dataclass_basis(cls) if cls is not None else None
        if cls is not None:
            module = self.view.module(module_name)
            filename = self.view.filename(self.view.relpath(module_name))
            try:
                made, members = live.compile_members(module, filename, new_source, ref.name,
                                                     [node.name], cls)
            except BREAKS:
                raise
            except BaseException as error:   # the user's code may raise SystemExit too
                raise definition_error(error, module, module_name, self.view, filename) from None
            _check_by_class_statement(ref, cls, module, filename, new_source)
        _refuse_read_before_bound(module_name, ref.name, self.view.source(module_name), new_source)
        # A name new to the class may be a dataclass subclass's field's default from now on.
        gained = ({splice.mangled(ref.name, node.name)} - set(vars(cls))) if cls is not None else set()
        if gained:
            self._load_dataclass_importers(module_name, gained)
        hooks, hooks_data = "", {}
        rebuilt = (self._rebuilt_dataclass(ref, cls, new_source, classdef, node.name)
                   if cls is not None else None)
        if rebuilt is not None:
            hooks, hooks_data = rebuilt
        elif cls is not None:
            hooks, hooks_data = self._hooks_note(ref, cls, classdef, node.name, existing)
            self._changing(module_name)
            live.set_members(cls, members, made)
        self.view.set_source(module_name, new_source, live=cls is not None)
        verb = "replaced" if replaced else "added"
        (stale, data), unmakeable = self._stale_and_unmakeable(ref.qualified, module_name, cls, basis,
                                                               gained)
        stale, data = stale + unmakeable[0], {**data, **unmakeable[1]}
        if cls is not None:
            captured, captured_data = _captured_note(new_source, ref.name, node.name)
            stale, data = stale + captured, {**data, **captured_data}
        return self._finish(f"{verb} {_shown(ref.module, ref.name, node.name)}{stale}{hooks}",
                            {"class": ref.qualified, "selector": node.name, "replaced": replaced,
                             **data, **hooks_data})

    def _compile_function(self, module_name: str, arguments: dict) -> dict:
        """compile_method on a dictionary: define or replace a module-level function."""
        module_functions.refuse_meta(module_name, arguments)
        module = module_functions.mutable_dictionary(self.view, module_name)
        text, defs = parse_method(arguments["source"])
        name = defs[0].name
        module_functions.refuse_unsure(self.view, module_name, name, module)
        existing = splice.replaced_of(splice.function_nodes(self.view.tree(module_name), name), defs)
        if len(existing) > len(defs):   # one @overload of several would replace them all
            raise ToolError("refused", _fewer_defs(f"{module_name}.{name}", existing, defs))
        old_source = self.view.source(module_name)
        new_source, replaced = self._splice(splice.put_function, old_source, text)
        self.view.check_encodable(module_name, new_source)
        _refuse_function_read_before_bound(module_name, name, old_source, new_source)
        rebound, old = False, None
        if module is not None:
            filename = self.view.filename(self.view.relpath(module_name))
            try:
                made = live.evaluate_function(module, filename, new_source, name)
            except BREAKS:
                raise
            except BaseException as error:   # the user's code may raise SystemExit too
                raise definition_error(error, module, module_name, self.view, filename) from None
            old = own.namespace(module).get(name)
            self._changing(module_name)
            # In place, so what took the function before (`from m import f`) runs the new code.
            if not (self.view.defines(old) and live.update_function(old, made)):
                rebound = old is not None
                setattr(module, name, made)
        self.view.set_source(module_name, new_source, live=module is not None)
        qualified = _shown(module_name, name)   # as the answer shows it
        note, data = self._reimport_importers([module_name]) if rebound else ("", {})
        if rebound:
            note += _rebound_note(catalog.echoed(module_name), catalog.echoed(name))
            data["rebound"] = True
        if module is not None and old is not None:
            rerun, rerun_data = _decorators_rerun_note(
                qualified, module_functions.decorators_run(parsing.parse(new_source), name), rebound)
            note, data = note + rerun, {**data, **rerun_data}
        verb = "replaced" if replaced else "added"
        return self._finish(f"{verb} function {qualified}{note}",
                            {"dictionary": module_name, "selector": name, "replaced": replaced, **data})

    def _delete_function(self, module_name: str, arguments: dict) -> dict:
        """delete_method on a dictionary: remove a module-level function."""
        module_functions.refuse_meta(module_name, arguments)
        module = module_functions.mutable_dictionary(self.view, module_name)
        name = catalog.require_selector(arguments["selector"])
        module_functions.refuse_unsure(self.view, module_name, name, module)
        if not splice.function_nodes(self.view.tree(module_name), name):
            raise module_functions.no_function(self.view, module_name, name)
        old_source = self.view.source(module_name)
        new_source = splice.remove_function(old_source, name)
        tree = parsing.parse(new_source)
        _refuse_used_by_its_module(_shown(module_name, name), module_name, old_source, new_source,
                                   live.sure_import_readers(tree, name))
        tried, tried_data = _refuse_failing_trial(self.view, _shown(module_name, name), module_name,
                                                  old_source, new_source)
        if module is not None:
            self.view.load_all()   # else an importer the session had not loaded goes unnamed
            self._changing(module_name)
            vars(module).pop(name, None)
        self.view.set_source(module_name, new_source, live=module is not None)
        # An importer taking it by name (`from m import f`) now fails, here as in a new session;
        # so does the module itself where a read that may run (under an `if`, caught) does.
        itself = live.needed_on_import(tree, name, star=False)
        note, data = self._reimport_importers([module_name], itself) if module is not None else ("", {})
        listed, listed_data = _all_note(module_name, name, new_source, tree)
        called, called_data = _still_called_note(self.view, name, senders(self.view, name),
                                                 f"where one means {_shown(module_name, name)}, it now fails "
                                                 "(NameError; AttributeError through its module)")
        note, data = note + listed + called + tried, {**data, **listed_data, **called_data, **tried_data}
        return self._finish(f"deleted function {_shown(module_name, name)}{note}",
                            {"dictionary": module_name, "selector": name, **data})

    def _refuse_unfit_def(self, ref, cls, classdef, defs: list, existing: list, meta: bool) -> None:
        """Refuse (ToolError) compile_method's `defs` where the class could not take them as
        methods: a name the class writes in a block, as an attribute, an annotation or a
        slot, a name it declares global, a change of side, fewer defs than the ones they
        replace."""
        node = defs[0]
        name = catalog.echoed(node.name)   # the source's, any length
        member = f"{ref.qualified}.{name}"
        declared = splice.global_declarations(classdef, node.name)
        if declared:
            # The live class would get the def; a new session's import binds the module's name.
            raise ToolError("refused", f"the class body of {ref.qualified} declares {name} global "
                            f"({ref.module} line {declared[0].lineno}), so a def of that name there "
                            f"binds the module's {name}, not a method of the class. Name the "
                            "method otherwise, or change that statement with compile_class_definition.")
        guarded = splice.guarded_method_nodes(classdef, node.name)
        if guarded and not splice.method_nodes(classdef, node.name):
            # Appended after the block, it would be what the class has whichever branch ran
            # (get_method_source's text of an if/else pair, both defs): delete_method refuses too.
            raise _written_in_block(ref, node.name, guarded[0][0], "a def compiled for it would go "
                                    "after that statement, and the class would have it whichever "
                                    "branch ran", "(get_class_definition shows it), or name the "
                                    "method otherwise")
        written = splice.method_nodes(classdef, node.name)
        again = [statement for statement, guarded_def in guarded
                 if written and guarded_def.lineno > written[-1].lineno]
        if again:
            # Where that branch runs, the def below is what the class has, not the one compiled.
            raise ToolError("refused", f"{member} is written again inside the "
                            f"class-level {splice.statement_kind(again[0])} statement at {ref.module} "
                            f"line {again[0].lineno}, below its def, and the class has that one where "
                            "its branch runs: edit that statement with compile_class_definition "
                            "(get_class_definition shows it)")
        if existing:
            old_kind = live_kind(cls, ref.name, node.name) or splice.method_kind(existing[0])
            refusal = _side_change(member, old_kind,
                                   splice.method_kind(node), meta)
            if refusal:
                raise ToolError("refused", refusal)
        else:
            refusal = _metaclass_side_change(self.view, ref.qualified, cls, node, meta)
            if refusal:
                raise ToolError("refused", refusal)
        if len(existing) > len(defs):
            # A property's getter alone would replace its setter too; one @overload, the rest.
            raise ToolError("refused", _fewer_defs(member, existing, defs))
        attributes = splice.attribute_nodes(classdef, node.name, blocks=True)
        if attributes:
            # Methods and attributes share the class namespace: the def would replace it.
            raise ToolError("refused", f"{member} is a class attribute, not a "
                            f"method ({ref.module} line {attributes[0].lineno}); a def of that "
                            "name would replace it. Name the method otherwise, or change the "
                            "attribute with compile_class_definition.")
        annotations = [] if existing else splice.annotation_nodes(classdef, node.name)
        if annotations:
            # The def would be the field's default: the field no longer required, a function.
            declared = splice.statement_line(self.view.source(ref.module), annotations[0])
            raise ToolError("refused", f"{member} is declared an attribute by the "
                            f"class body's annotation {catalog.quoted(declared)} ({ref.module} line "
                            f"{annotations[0].lineno}; a dataclass's or NamedTuple's field); a def "
                            "of that name would replace it (a field's default would become the "
                            "function, the field no longer required). Name the method otherwise, "
                            "or change the annotation with compile_class_definition.")
        if splice.mangled(ref.name, node.name) in _slots_of(cls, classdef):
            # Python refuses to build the class: the module would no longer import.
            raise ToolError("refused", f"{member} is in the class's __slots__ "
                            "(an instance variable); a def of that name makes the class fail to "
                            f"build ('{name}' in __slots__ conflicts with class variable). Name "
                            "the method otherwise, or change __slots__ with compile_class_definition.")

    def _hooks_note(self, ref, cls, classdef, name: str, existing: list) -> tuple[str, dict]:
        """A note and its data naming what, as the class was made, may have wrapped its
        methods (class decorators, the image's metaclass, a base's `__init_subclass__`):
        only the def is compiled, so they do not run on it (running them again would
        repeat their side effects, a registry entry). A replaced method they left as its
        def (`existing`) made it needs none; that def is compiled again to tell, unless its
        decorators would run user code again. Call before the new def is set. ('', {}) when
        none is."""
        hooks = self._class_hooks(ref, cls, classdef)
        if not hooks:
            return "", {}
        bound, as_written = splice.mangled(ref.name, name), {}
        if existing and all(splice.only_kind_decorators(node) for node in existing):
            module = self.view.module(ref.module)
            filename = self.view.filename(self.view.relpath(ref.module))
            try:
                _, as_written = live.compile_members(module, filename, self.view.source(ref.module),
                                                     ref.name, [name], cls)
            except BREAKS:
                raise
            except BaseException:   # the old def no longer compiles alone: say what may be
                pass
            if as_written and live.made_alike(vars(cls).get(bound), as_written.get(bound)):
                return "", {}
        # One hook or several: the note's verbs and pronouns agree with them.
        (are, they, do, made, wrap, make, them) = (
            ("is", "it", "does", "it made", "wraps or changes", "it makes", "it") if len(hooks) == 1
            else ("are", "they", "do", "they made", "wrap or change", "they make", "them"))
        shown = catalog.echoed(name)   # the source's, any length
        changed = (f"{made} the old {shown} other than its def (wrapped it), so " if as_written
                   else f"if {they} {wrap} methods, ")
        return (f"; note: {ref.qualified} was made by its {', '.join(hooks)}, which {are} not run "
                f"again for one compiled method (that would repeat what else {they} {do}, such as "
                f"a registry entry); {changed}this session has {shown} as its def makes it while a "
                f"new session's import has what {make} of it: compile_class_definition with "
                f"the class's definition as it stands runs {them} again here, or abort re-imports "
                "the committed image (it discards uncommitted changes)", {"notRerun": hooks})

    def _class_hooks(self, ref, cls, classdef) -> list[str]:
        """What runs user code as the class is made, besides its body: its class
        decorators, a metaclass of the image with __new__, __init__ or __prepare__, a base's
        __init_subclass__. Not the dataclass decorator: it makes only its own methods
        (remade with them when they change, _rebuilt_dataclass) and has no other effect."""
        module = self.view.module(ref.module)
        hooks = [f"class decorator @{ast.unparse(decorator)}" for decorator in classdef.decorator_list
                 if not live.is_dataclass_decorator(module, decorator)]
        # Nested in an image class too (`class Outer: class Base: def __init_subclass__`).
        hooks += [f"metaclass {qualname(self.view, owner)}" for owner in type(cls).__mro__
                  if self.view.makes(owner) and _MAKING.intersection(vars(owner))]
        hooks += [f"{qualname(self.view, owner)}.__init_subclass__" for owner in cls.__mro__[1:]
                  if self.view.makes(owner) and "__init_subclass__" in vars(owner)]
        return hooks

    @whole_or_none
    def compile_class_definition(self, arguments):
        text, node = parse_single(arguments["source"], ast.ClassDef, "class statement")
        name = node.name
        module_name, exists = self._class_target(name, arguments.get("dictionaryName"))
        if not exists:
            _refuse_new_class_over_a_binding(self.view, module_name, node)
        cls = old_node = None
        if exists:
            ref, cls = self._guarded(f"{module_name}.{name}")
            old_node = catalog.class_node(self.view, ref)
        carried = []
        if old_node is not None and arguments.get("recompileMethods", True):
            carried = splice.carried_members(old_node, node)
        if carried and splice.body_on_header_line(splice.lines_of(text), node):
            # Refused by the splice too, but as if the class in the module were written so.
            names = ", ".join(dict.fromkeys(member.name for member in carried))
            raise ToolError("refused", f"the class statement writes its body on its header's "
                            f"line, where the members it leaves out cannot be carried over ({names}): "
                            "write the body on lines of its own, or pass recompileMethods false to "
                            "drop them")
        old_source = self.view.source(module_name)
        module = catalog.live_module(self.view, module_name)
        filename = self.view.filename(self.view.relpath(module_name))

        statement, below = splice.comments_below(text)

        def build(methods):
            # Written over the class's own lines, what the text leaves as it was stays byte
            # for byte, the carried members in their places.
            class_text = overlay.written_over(statement, name, old_source, methods) if exists else None
            if class_text is None:
                class_text = self._splice(splice.with_methods, statement, name, old_source, methods)
            return self._splice(splice.put_class, old_source, name, class_text + below)

        new_source, failed = build(carried), []
        self.view.check_encodable(module_name, new_source)   # a rebuild below only drops methods
        new_class = None
        if module is not None:
            try:
                new_class = live.evaluate_class(module, filename, new_source, name)
            except BREAKS:
                raise
            except BaseException as error:   # the user's code may raise SystemExit too
                if not carried:
                    raise definition_error(error, module, module_name, self.view, filename) from None
                failed = list(dict.fromkeys(m.name for m in carried
                                             if _fails(module, filename, new_source, name, m.name)))
                new_source = build([m for m in carried if m.name not in failed])
                try:
                    new_class = live.evaluate_class(module, filename, new_source, name)
                except BREAKS:
                    raise
                except BaseException as again:
                    raise definition_error(again, module, module_name, self.view, filename) from None
        if new_class is not None:
            live.named_as_set_below(new_class, new_source, name)
        _refuse_read_before_bound(module_name, name, old_source if exists else None, new_source)
        self._refuse_dropping_sure_reads(module_name, name, cls, old_node, new_class, old_source, new_source)
        basis = live.dataclass_basis(cls) if cls is not None else None
        # Only other fields or frozen can leave a subclass unmakeable (a __post_init__ gained
        # or lost cannot): a subclass module loaded for nothing else has its classes made
        # from the class as it was, stale here for nothing (so compile_method does too).
        if new_class is not None and basis is not None and not live.same_fields_and_frozen(
                basis, live.dataclass_basis(new_class)):
            self._load_dataclass_importers(module_name)
        elif new_class is not None and cls is not None and set(vars(new_class)) ^ set(vars(cls)):
            # A name it gains may be a dataclass subclass's field's default from now on, one
            # it loses may have been one.
            self._load_dataclass_importers(module_name, set(vars(new_class)) ^ set(vars(cls)))
        bound_before = set(vars(cls)) if cls is not None else set()
        outcome = self._apply_class(module, module_name, name, cls, old_node, new_class)
        self.view.set_source(module_name, new_source, live=module is not None)
        # A new class: its importers take it again, and one reading what it no longer has
        # (`DEFAULT = Level.HIGH`) fails here as in a new session, named, not silently; so
        # does its own module when its code below the class read it as it ran (what that
        # made, `DEFAULT = Level.HIGH`, a field default, held the old class's members).
        imported, imported_data = (self._reimport_importers(
            [module_name], live.read_below_its_class(parsing.parse(new_source), name))
            if outcome == "replaced" else ("", {}))
        dropped = _dropped_names(old_node, new_source, name, bound_before, getattr(module, name, None)
                                 if outcome in ("updated", "replaced") else None)
        if dropped and outcome == "updated":
            # The same class lost them: only the importers reading them need re-importing.
            imported, imported_data = self._reimport_readers(module_name, dropped)
        (stale, data), unmakeable = self._stale_and_unmakeable(
            f"{module_name}.{name}", module_name, cls if outcome == "updated" else None, basis,
            set(vars(cls)) - bound_before if outcome == "updated" else (),
            bound_before - set(vars(cls)) if outcome == "updated" else ())
        imported, imported_data = _both_reimports((imported, imported_data), unmakeable)
        reads = {}
        tree = parsing.parse(new_source)
        for dropped_name in sorted(dropped):   # through its subclasses too, kept only when updated
            reader = live.attribute_reader(tree, name, dropped_name, self._inheritors(
                cls if outcome == "updated" else None, module_name, dropped_name))
            if reader is not None:
                reads[dropped_name] = splice.statement_line(new_source, reader)
        if reads:   # noted, as delete_method does: the sure, unguarded ones were refused
            imported = _read_as_it_runs_note(module_name, name, reads) + imported
            imported_data = {**imported_data, "readAsItRuns": reads}
        shown = _shown(module_name, name)
        carried_names = list(dict.fromkeys(m.name for m in carried if m.name not in failed))

        def described() -> str:   # once committed: the commit re-imports a module it fixes
            message = {"defined": f"defined {shown}",
                       "updated": f"redefined {shown} in place",
                       "replaced": f"redefined {shown} with a new shape (bases, "
                                   "__slots__, or an Enum's members); existing instances keep the "
                                   "old class",
                       "source": self._source_only(shown, module_name, module)}[outcome]
            if carried_names:
                message += f"; carried over {_listed(carried_names)}"
            if failed:
                message += f"; could not carry over (dropped): {_listed(failed)}"
            return message + imported + stale
        return self._finish(described, {"class": f"{module_name}.{name}", "outcome": outcome,
                                        "carried": carried_names, "failed": failed, **imported_data, **data})

    def _refuse_dropping_sure_reads(self, module_name: str, name: str, cls, old_node, new_class,
                                    old_source: str, new_source: str) -> None:
        """Refuse (before anything changes) a definition of `cls` that drops a member its
        module reads, surely and unguarded, below it as it runs (_refuse_sure_reads): the
        class made from it (`new_class`) tells, as the live class does after the change."""
        if old_node is None:
            return
        made = new_class if cls is not None else None
        losing = _dropped_names(old_node, new_source, name, set(vars(cls)) if cls is not None else set(), made)
        tree = parsing.parse(new_source)
        _refuse_sure_reads(_shown(module_name, name), module_name, old_source, new_source, {
            dropped: live.unguarded_attribute_reader(tree, name, dropped, self._inheritors(cls, module_name, dropped))
            for dropped in sorted(losing)}, "redefined so", "send the definition again (or keep what they read in it)")

    def _class_target(self, name: str, module_name: str | None) -> tuple[str, bool]:
        """(module, exists) for the class a class statement (re)defines."""
        view = self.view
        if module_name is not None:
            module_name = catalog.dictionary_name(module_name)
            catalog.require_editable(view, module_name, "builtins is the kernel dictionary; classes "
                                     "cannot be added to or changed in it",
                                     f"no class can be defined in {module_name}")
            return module_name, any(r.name == name for r in catalog.classes_in(view, module_name))
        candidates = [ref for ref in catalog.image_classes(view) if ref.name == name]
        if len(candidates) > 1:
            raise ToolError("ambiguous", f"class name {name} is defined in several modules: "
                            + ", ".join(r.qualified for r in candidates) + "; pass dictionaryName")
        if candidates:
            return candidates[0].module, True
        if catalog.is_kernel_class(name):
            raise ToolError("refused", f"{name} is a kernel class (builtins) and cannot be "
                            "redefined; pass dictionaryName to define an image class of that name")
        raise ToolError("invalidParams", f"{catalog.echoed(name)} is a new class: pass dictionaryName to say "
                        "which image module it belongs in")

    def _apply_class(self, module, module_name, name, cls, old_node, new_class) -> str:
        if module is None or (cls is None and old_node is not None):
            return "source"     # a class the module, as it ran, did not bind is not bound now
        if cls is None:
            self._changing(module_name)
            setattr(module, name, new_class)
            return "defined"
        if live.same_shape(cls, new_class):
            self._changing(module_name)
            live.update_in_place(cls, new_class, live.class_member_names(old_node)
                                 | live.unfrozen_leftovers(cls, new_class))
            return "updated"
        self.view.load_all()
        subclasses = catalog.image_subclass_classes(self.view, cls)
        if subclasses:
            nested = list(dict.fromkeys(_enclosing(self.view, sub) for sub in subclasses if "." in own.QUALNAME(sub)))
            holding = (f"; a nested one, which no tool addresses, through the class statement holding "
                       f"it: compile_class_definition on {', '.join(nested)}{_NESTED_ANEW}" if nested else "")
            raise ToolError("refused", f"{module_name}.{name} has subclasses in the image: "
                            f"{self._placed(subclasses)}; changing its bases or __slots__ would "
                            f"orphan them. Change or delete the subclasses first{holding}.")
        self._changing(module_name)
        setattr(module, name, new_class)
        return "replaced"

    @whole_or_none
    def delete_method(self, arguments):
        dictionary = catalog.function_dictionary(self.view, arguments["className"])
        if dictionary is not None:
            return self._delete_function(dictionary, arguments)
        ref, cls = self._guarded(arguments["className"])
        selector = catalog.require_selector(arguments["selector"])
        classdef = catalog.class_node(self.view, ref)
        nodes = splice.method_nodes(classdef, selector)
        guarded = splice.guarded_method_nodes(classdef, selector)
        if not nodes and guarded:
            raise _written_in_block(ref, selector, guarded[0][0], "removing it from there could "
                                    "leave that block empty or change what it means")
        owner = None if nodes else metaclass_owner(self.view, cls, selector)
        if owner is not None:
            raise ToolError("notFound", f"{ref.qualified} defines no method {catalog.echoed(selector)}: "
                            + metaclass_method_text(self.view, ref.qualified, owner, selector))
        if not nodes:
            raise ToolError("notFound", f"{ref.qualified} defines no method {catalog.echoed(selector)}"
                            + no_def_hint(self.view, ref, cls, classdef, selector))
        filter_by_meta(nodes, arguments.get("meta"), ref.qualified, selector,
                       live_kind(cls, ref.name, selector))
        new_source = self._splice(splice.remove_method, self.view.source(ref.module), ref.name, selector)
        reader = splice.unbound_reader(new_source, ref.name, selector)
        if reader is not None:
            # Deleted, the class could not be made: its module would import nowhere.
            raise ToolError("refused", f"{ref.qualified}.{selector} is used by the class body "
                            f"as it runs ({catalog.quoted(splice.statement_line(new_source, reader))}); deleted, the class "
                            f"could not be made and {ref.module} would no longer import. Change "
                            "that statement first (compile_class_definition).")
        bound, tree = splice.mangled(ref.name, selector), parsing.parse(new_source)
        through = self._inheritors(cls, ref.module, bound)
        reader = live.attribute_reader(tree, ref.name, bound, through)
        if reader is not None and not _still_has(cls, tree, ref.name, selector, bound):
            _refuse_sure_reads(_shown(ref.module, ref.name), ref.module, self.view.source(ref.module), new_source,
                               {bound: live.unguarded_attribute_reader(tree, ref.name, bound, through)},
                               "deleted", "delete it")
        elif reader is not None and not _written_by_its_body(tree, ref.name, selector):
            # A base's serves a read, not `del Job.run`: that takes from the class's own namespace.
            _refuse_sure_reads(_shown(ref.module, ref.name), ref.module, self.view.source(ref.module), new_source,
                               {bound: live.unguarded_attribute_reader(tree, ref.name, bound, deleted=True)},
                               "deleted", "delete it")
        tried, tried_data = _refuse_failing_trial(self.view, _shown(ref.module, ref.name, selector), ref.module,
                                                  self.view.source(ref.module), new_source)
        basis = live.dataclass_basis(cls) if cls is not None else None
        bound_before = set(vars(cls)) if cls is not None else set()
        if bound in bound_before:   # a dataclass subclass's field may have had it as its default
            self._load_dataclass_importers(ref.module, {bound})
        rebuilt = (self._rebuilt_dataclass(ref, cls, new_source, classdef, selector)
                   if cls is not None else None)
        if rebuilt is None and cls is not None:
            self._unset_method(ref, cls, new_source, selector)
        # Not when the class still has it: as a class attribute of that name, or a base's
        # (told by the live class: one bound in a class-level block that did not run is not;
        # with none, a block's binding counts, as for compile_method: its branch may run).
        kept = (any(bound in vars(owner) for owner in cls.__mro__ + type(cls).__mro__) if cls is not None
                else bool(splice.attribute_nodes(splice.class_statement(tree, ref.name), selector,
                                                 blocks=True)))
        note, data = "", {}
        if reader is not None and not kept:
            # A note: a read sure to fail was refused above; this one may be guarded
            # (try/hasattr), conditional, or in a function the module calls.
            read = splice.statement_line(new_source, reader)
            note = _read_as_it_runs_note(ref.module, ref.name, {bound: read})
            data = {"readAsItRuns": read}
        if rebuilt is not None:
            note, data = note + rebuilt[0], {**data, **rebuilt[1]}
        note, data = note + tried, {**data, **tried_data}
        self.view.set_source(ref.module, new_source, live=cls is not None)
        imported, imported_data = "", {}
        if cls is not None and not kept:
            # Another module reading it as it runs (`handler = Job.run`) fails, named.
            imported, imported_data = self._reimport_readers(ref.module, {bound})
        (stale, stale_data), unmakeable = self._stale_and_unmakeable(
            ref.qualified, ref.module, cls, basis, lost=bound_before - set(vars(cls)) if cls is not None else ())
        imported, imported_data = _both_reimports((imported, imported_data), unmakeable)
        note, data = note + imported, {**data, **imported_data}
        if not kept:   # else a base's (or an attribute) answers those calls
            called, called_data = _still_called_note(
                self.view, selector, senders(self.view, selector, bare=False),
                f"where one is on a {ref.qualified} (or a subclass without its own), it now fails (AttributeError)")
            note, data = note + called, {**data, **called_data}
        return self._finish(f"deleted {_shown(ref.module, ref.name, selector)}{note}{stale}",
                            {"class": ref.qualified, "selector": selector, **data, **stale_data})

    def _rebuilt_dataclass(self, ref, cls, new_source: str, old_node: ast.ClassDef,
                           selector: str) -> tuple[str, dict] | None:
        """A dataclass's generated methods depend on some of its own (`__init__` calls a
        `__post_init__` only if the class had one when it was made; `__hash__` follows
        `__eq__`), so one whose method `selector` is such is made again from the new
        source, its decorators run, and that method and what the dataclass decorator
        makes are copied onto the live class (or removed from it, when no longer made:
        the `__hash__ = None` type() gave an `__eq__` now deleted); every other attribute
        keeps what the session made of it (a registry filled, a counter, what
        `__init_subclass__` set). Returns a note and its data naming the hooks that ran
        again with the class statement ('', {} if none). None, running nothing, when it is
        no dataclass, or `selector` is none the decorator reads and what it generated still
        follows the bases (a base made again since: it is made again now); None too when
        the new class's shape cannot be copied in place (a method leaves its bases and
        __slots__ as they were, so that is not expected). Refused when its `frozen` no
        longer agrees with its bases' (live.frozen_conflict), or a field without a default
        would now follow one with a default (live.field_order_conflict)."""
        if "__dataclass_fields__" not in vars(cls):
            return None
        conflict = live.frozen_conflict(cls)
        if conflict is not None:
            # A base's `frozen` changed since: made again or not, its module no longer imports.
            agreeing = live.agreeing_frozen(cls)
            remedy = (f"Make it frozen={agreeing} first (compile_class_definition, its definition "
                      "with that decorator argument), or change its base back" if agreeing is not None
                      else f"Neither frozen value agrees with its dataclass bases, {_MIXED_FROZEN}: "
                      "change its base back")
            raise ToolError("refused", f"{ref.qualified} cannot be made again as written: its "
                            f"frozen no longer agrees with its dataclass bases' (the dataclass "
                            f"decorator raises TypeError: {conflict}), so a new session's import "
                            f"of {ref.module} fails. {remedy}")
        misordered = live.field_order_conflict(cls, unvalued=self._unvalued)
        if misordered is not None:
            # A base's field given a default since (the decorator checks it after frozen).
            raise ToolError("refused", _misordered_refusal(self.view, ref, cls, misordered, self._unvalued))
        reads = splice.mangled(ref.name, selector) in _DATACLASS_READS
        writes_init = "__init__" in live.class_member_names(old_node)
        if not reads and live.dataclass_follows_its_bases(cls, writes_init):
            return None
        module = self.view.module(ref.module)
        filename = self.view.filename(self.view.relpath(ref.module))
        try:
            new_class = live.evaluate_class(module, filename, new_source, ref.name)
        except BREAKS:
            raise
        except BaseException as error:   # the user's code may raise SystemExit too
            raise definition_error(error, module, ref.module, self.view, filename) from None
        if not live.same_shape(cls, new_class):
            return None
        if not live.same_fields_and_frozen(live.dataclass_basis(cls), live.dataclass_basis(new_class)):
            # Made again from a base changed since: a subclass module not loaded yet may no
            # longer import, as compile_class_definition's change of the class finds it.
            self._load_dataclass_importers(ref.module)
        made = _DATACLASS_MADE | {splice.mangled(ref.name, selector)}
        self._changing(ref.module)
        live.update_in_place(cls, new_class, live.class_member_names(old_node), only=made)
        # The None type() set for an `__eq__` now deleted (eq=False, the class's own): a
        # name of the list the new class lacks is otherwise left, as something other than
        # the class statement (`E.__eq__ = ...` below it) may have set it.
        if "__hash__" not in vars(new_class) and vars(cls).get("__hash__", ...) is None:
            del cls.__hash__
        why = (f"what the dataclass decorator generates depends on {selector}" if reads else
               f"what the dataclass decorator generated for {ref.qualified} followed its bases as "
               "they were before one was made again")
        return _dataclass_rerun_note(ref.qualified, why, self._class_hooks(ref, cls, old_node))

    def _stale_dataclass_subclasses(self, qualified: str, cls, basis) -> tuple[str, dict]:
        """A note and its data naming the image's live dataclass subclasses of `cls` that
        were made from what the change altered (dataclass_basis `basis`, from before it).
        They are not made again with it (that would run class statements, and
        `__init_subclass__` hooks, the change did not touch): what the decorator generated
        for them (`__init__`, `__repr__`, `__eq__`...) still follows the old fields and
        `__post_init__`. One whose `frozen` no longer agrees with its bases'
        (`frozenConflicts`), or with a field without a default now following one with a
        default (`fieldOrderConflicts`: a base's field given one), cannot be made again as
        written: its module's next import fails until it is changed too (in another module,
        it is then re-imported: _stale_and_unmakeable). ('', {}) when none is."""
        if cls is None or live.same_dataclass_basis(basis, live.dataclass_basis(cls)):
            return "", {}
        subclasses = [sub for sub in live.subclasses_of(cls)
                      if "__dataclass_fields__" in vars(sub) and self.view.makes(sub)]
        if not subclasses:
            return "", {}
        stale = [qualname(self.view, sub) for sub in subclasses]
        changes = ", ".join(live.basis_changes(basis, live.dataclass_basis(cls)))
        note = (f"; note: the dataclass subclasses {', '.join(stale)} were made from what "
                f"{qualified} was before this change ({changes}) and keep what the dataclass "
                "decorator generated then (__init__, __repr__, __eq__...) until made again")
        conflicts, misordered = {}, {}
        for sub, name in zip(subclasses, stale):
            conflict = live.frozen_conflict(sub)   # the decorator checks it first
            order = live.field_order_conflict(sub, unvalued=self._unvalued) if conflict is None else None
            if order is not None:
                misordered[name] = order
                note += (f"; {name} cannot be made again as written (the dataclass decorator now "
                         f"raises TypeError: {order}), so a new session's import of {self.view.home(sub)} "
                         f"fails until compile_class_definition{_on_enclosing(self.view, sub)} gives it a default "
                         f"(or kw_only) for each field it adds without one, or {qualified} is changed back")
            if conflict is not None:
                conflicts[name] = conflict
                agreeing = live.agreeing_frozen(sub)
                until = (f"compile_class_definition{_on_enclosing(self.view, sub)} makes it frozen={agreeing} as "
                         f"well, or {qualified} is changed back" if agreeing is not None else
                         f"{qualified} is changed back (neither frozen value agrees with its "
                         f"dataclass bases, {_MIXED_FROZEN})")
                note += (f"; {name} cannot be made again as written (the dataclass decorator now "
                         f"raises TypeError: {conflict}), so a new session's import of "
                         f"{self.view.home(sub)} fails until {until}")
        rest = [name if "." not in own.QUALNAME(sub) else f"{_enclosing(self.view, sub)} (holding {name})"
                for sub, name in zip(subclasses, stale) if name not in conflicts and name not in misordered]
        if rest:
            note += (f"; compile_class_definition on {'each of ' if len(rest) > 1 else ''}"
                     f"{', '.join(rest)} (its definition as it stands) makes it again, or abort "
                     "re-imports the committed image (it discards uncommitted changes)")
        data = {"staleSubclasses": stale}
        if conflicts:
            data["frozenConflicts"] = conflicts
        if misordered:
            data["fieldOrderConflicts"] = misordered
        return note, data

    def _source_only(self, shown: str, module_name: str, module) -> str:
        """What a class statement that made no live class did, said once committed: a
        module that did not import and now does (the change fixed it) was re-imported
        by the commit, the class live in it."""
        if module is None and self.view.owns_module(module_name) and module_name not in self.view.import_errors:
            echoed = catalog.echoed(module_name)
            return (f"changed {shown} in source, and {echoed}, which did not import, imports now "
                    f"(re-imported as committed): {shown} is live")
        return (f"changed {shown} in source only ({catalog.echoed(module_name)} "
                f"{self._not_loaded_why(module_name, module)})")

    def _not_loaded_why(self, module_name: str, module) -> str:
        """Why a class statement of the module, `module` live or None, made no live class."""
        if module is not None:
            return "ran no class statement of it as it was imported: it is in a block that did not run"
        if is_program(module_name) and module_name not in self.view.import_errors:
            return "is a program, which the tools do not import, as that runs it"
        return "does not import"

    def _unset_method(self, ref, cls, new_source: str, selector: str) -> None:
        """Make the live class lose the method, keeping what the source still binds
        to that name (a class attribute the def shadowed)."""
        value = missing = object()
        evaluated = None
        bound = splice.mangled(ref.name, selector)     # `__secret` is bound as `_Kitchen__secret`
        # In a class-level block too (`if ...: run = ...`, a def there): the class statement
        # run again tells whether its branch binds it.
        if bound in live.class_member_names(splice.class_statement(parsing.parse(new_source), ref.name)):
            module = self.view.module(ref.module)
            filename = self.view.filename(self.view.relpath(ref.module))
            try:
                evaluated = live.evaluate_class(module, filename, new_source, ref.name)
            except Exception as error:
                raise definition_error(error, module, ref.module, self.view, filename) from None
            value = vars(evaluated).get(bound, missing)
        self._changing(ref.module)
        if value is not missing:
            live.set_members(cls, {bound: value}, evaluated)
        elif bound in vars(cls):
            live.remove_member(cls, bound)
            if (bound == "__eq__" and "__hash__" in vars(cls) and cls.__hash__ is None
                    and not splice.attribute_nodes(splice.class_statement(parsing.parse(new_source),
                                                                          ref.name), "__hash__")):
                del cls.__hash__   # the None type() set for that __eq__
            live.settle_abstract_methods(cls)

    @whole_or_none
    def delete_class(self, arguments):
        ref, cls = self._guarded(arguments["className"])
        if cls is not None:
            self.view.load_all()
            # Its nested classes go with its statement: a class built on them counts too.
            self._refuse_if_built_on({qualname(self.view, c): c for c in catalog.with_nested(self.view, cls)},
                                     ref.qualified)
        old_source = self.view.source(ref.module)
        new_source = self._splice(splice.remove_class, old_source, ref.name)
        tree = parsing.parse(new_source)
        _refuse_used_by_its_module(_shown(ref.module, ref.name), ref.module, old_source, new_source,
                                   live.sure_import_readers(tree, ref.name))
        tried, tried_data = _refuse_failing_trial(self.view, _shown(ref.module, ref.name), ref.module,
                                                  old_source, new_source)
        if cls is not None:
            self._changing(ref.module)
            vars(self.view.module(ref.module)).pop(ref.name, None)
        self.view.set_source(ref.module, new_source, live=cls is not None)
        # A read that may run (under an `if`, caught, in a function the module calls), or
        # one a `*` import may serve
        # (dis.py's `from opcode import *` above `UNKNOWN = _Unknown()`): re-imported,
        # named if it fails here.
        itself = live.needed_on_import(tree, ref.name, star=False)
        imported, data = self._reimport_importers([ref.module], itself) if cls is not None else ("", {})
        listed, listed_data = _all_note(ref.module, ref.name, new_source, tree)
        return self._finish(f"deleted class {_shown(ref.module, ref.name)}{imported}{listed}{tried}",
                            {"class": ref.qualified, **data, **listed_data, **tried_data})

    def _refuse_if_built_on(self, classes: dict[str, type], gone: str, removed=()) -> None:
        """Refuse to delete `classes` (qualified name: live class), or to remove the modules
        `removed` that hold them (`gone` is what goes), while the image's classes are still
        built on them (their subclasses, the classes they are the metaclass of, nested in
        another class too): their class statements name them, so the commit would leave
        their modules failing to import, in every new session too. Classes going with them
        (in `classes`, in `removed`), and classes deleted before (no longer bound by their
        modules), do not count."""
        where = f" outside {gone}" if removed else ""
        going = {id(cls) for cls in classes.values()}

        def staying(found):
            return [sub for sub in found if id(sub) not in going and self.view.home(sub) not in removed]
        said, subclasses, made, nested = [], set(), set(), {}
        for qualified, cls in classes.items():
            built = staying(catalog.image_subclass_classes(self.view, cls))
            meta = staying(catalog.image_class_objects_made_by(self.view, cls))
            if built:
                said.append(f"{qualified} has subclasses in the image{where}: {self._placed(built)}")
            if meta:
                said.append(f"{qualified} is the metaclass of image classes{where}: {self._placed(meta)}")
            subclasses.update(qualname(self.view, sub) for sub in built)
            made.update(qualname(self.view, sub) for sub in meta)
            nested.update((id(sub), sub) for sub in built + meta if "." in own.QUALNAME(sub))
        if not said:
            return
        # A nested class is not addressable: its enclosing top-level class statement is what changes.
        holding = ""
        if nested:
            enclosing = sorted({_enclosing(self.view, sub) for sub in nested.values()})
            holding = (f"; a nested class, which no tool addresses, through the class statement "
                       f"holding it: compile_class_definition on {', '.join(enclosing)}{_NESTED_ANEW}")
        if removed:
            way = ("; removed, their modules would no longer import (nor could their class "
                   "statements run). Delete those classes first (delete_class), redefine them "
                   f"without {gone}'s classes (compile_class_definition with other bases or "
                   f"metaclass{holding}), or remove their modules first (remove_dictionary), "
                   f"then remove {gone}.")
        else:
            way = ("; deleted, their class statements could not run (NameError) and their modules "
                   "would no longer import. Delete those classes first (delete_class), or "
                   f"redefine them without {gone} (compile_class_definition with other bases or "
                   f"metaclass{holding}), then delete it.")
        raise ToolError("refused", "; ".join(said) + way,
                        {"subclasses": sorted(subclasses), "metaclassOf": sorted(made)})

    def _placed(self, classes: list[type]) -> str:
        """`m.A (m line 3), n.Outer.B (n line 7, in the class statement of n.Outer)`: where
        each of the image's classes is written, sorted by qualified name."""
        placed = []
        for cls in sorted(classes, key=lambda cls: qualname(self.view, cls)):
            tree = self.view.tree(self.view.home(cls))
            if tree is None:
                node = None
            elif "." in own.QUALNAME(cls):
                found = splice.nested_class_statements(tree, own.QUALNAME(cls))
                node = found[0] if len(found) == 1 else None
            else:
                node = splice.class_statement(tree, own.QUALNAME(cls))
            inside = f", in the class statement of {_enclosing(self.view, cls)}" if "." in own.QUALNAME(cls) else ""
            placed.append(qualname(self.view, cls) if node is None else
                          f"{qualname(self.view, cls)} ({self.view.home(cls)} line {node.lineno}{inside})")
        return ", ".join(placed)

    @whole_or_none
    def set_class_comment(self, arguments):
        ref, cls = self._guarded(arguments["className"])
        comment = arguments["comment"]
        new_source = self._splice(splice.set_class_docstring, self.view.source(ref.module),
                                  ref.name, comment)
        self.view.check_encodable(ref.module, new_source)
        if cls is not None:
            self._changing(ref.module)
            cls.__doc__ = comment or None
        self.view.set_source(ref.module, new_source, live=cls is not None)
        return self._finish(f"set the comment of {_shown(ref.module, ref.name)}", {"class": ref.qualified})

    @whole_or_none
    def add_dictionary(self, arguments):
        # As `import` reads it: a file named `ｐkg.py` no import statement would reach.
        name = catalog.dictionary_name(arguments["dictionaryName"])
        view = self.view
        parts = dictionary_name_parts(name)
        if len(parts) > MAX_DICTIONARY_PARTS:
            raise ToolError("invalidParams", f"dictionary name {catalog.quoted(name)} is nested "
                            f"{len(parts)} deep: at most {MAX_DICTIONARY_PARTS} parts, as Python could "
                            "not import a module nested much deeper; choose a shallower name")
        if name == KERNEL or parts[0] == KERNEL:
            raise ToolError("refused", "builtins is the kernel dictionary")
        if view.has_module(name):
            raise ToolError("refused", f"dictionary {name} already exists")
        if not view.has_module(parts[0]) and (
                parts[0] in sys.modules or importlib.util.find_spec(parts[0]) is not None):
            raise ToolError("refused", f"{parts[0]} is a kernel (standard library or installed) "
                            "module name; choose another name")
        created = []
        for depth in range(1, len(parts)):
            parent = ".".join(parts[:depth])
            rel = view.relpath(parent)
            if rel is None:
                created.append(parent)
            elif not rel.endswith("__init__.py"):
                # No tool turns a module into a package: the refusal says how, or it is a dead end.
                raise ToolError("refused", f"{parent} is a module, not a package, so {catalog.echoed(name)} "
                                f"cannot live under it: to make {parent} a package, move {rel} to "
                                f"{rel[:-len('.py')]}/__init__.py in the image's directory, then refresh")
        # Checked before the view changes: a file that cannot be written would fail this
        # commit and every later one of the session.
        for rel in [relpath_of(parent, package=True) for parent in created] + [relpath_of(name)]:
            problem = view.store.name_problem(rel)
            if problem is not None:
                raise ToolError("invalidParams", f"dictionary name {catalog.quoted(name)} is too long: {problem}; "
                                "choose a shorter name")
        for parent in created:
            view.add_module(parent, "", package=True)
        view.add_module(name, f'"""The {name} dictionary."""\n')
        created.append(name)
        return self._finish(f"added dictionary {catalog.echoed(name)}", {"dictionary": name, "created": created})

    @whole_or_none
    def remove_dictionary(self, arguments):
        name = catalog.dictionary_name(arguments["dictionaryName"])
        if name == KERNEL:
            raise ToolError("refused", "builtins is the kernel dictionary and cannot be removed")
        # A package's `__main__.py` may go like any module: load_all leaves a program unrun.
        dictionary_name_parts(name, program=True)
        catalog.require_module(self.view, name)
        catalog.refuse_unless_views(self.view, name, f"{name} cannot be removed in a session")
        # Loaded, every importer is found: one the session had not loaded was left out of
        # the answer, and committed failing to import, silently.
        self.view.load_all()
        going = self.view.modules_of(name)
        self._refuse_if_built_on(self._classes_of(going), name, frozenset(going))
        for module in going:
            self._changing(module)
        removed = self.view.remove_module(name)
        imported, data = self._reimport_importers(removed)
        failing = sorted(data["importErrors"])
        if failing:
            # Noted, not refused: an agent removing a module and its importers may take
            # them in either order, and no tool edits an import (an editor does).
            fail, them, their = ("fails", "it", "its") if len(failing) == 1 else ("fail", "them", "their")
            imported += (f"; note: {', '.join(failing)} {fail} to import in every new session "
                         f"too: remove {them} as well (remove_dictionary), or change {their} "
                         f"imports of {name} in an editor, then refresh")
        return self._finish(removed_text(name, removed) + imported, {"removed": removed, **data})

    def _classes_of(self, modules: list[str]) -> dict[str, type]:
        """The live classes the `modules` define themselves, and those nested in them, by
        qualified name."""
        classes = {}
        for name in modules:
            module = self.view.module(name)
            for obj in list(own.namespace(module).values()):
                if isinstance(obj, type) and self.view.written_in(obj, name):
                    classes.update((qualname(self.view, cls), cls) for cls in catalog.with_nested(self.view, obj))
        return classes


# How a nested class changes: compile_class_definition carries over one left out.
_NESTED_ANEW = " with it written anew, or left out with recompileMethods false"


# What a metaclass runs as it makes a class (and so may wrap its methods with).
_MAKING = {"__new__", "__init__", "__prepare__"}


# What the dataclass decorator may make (with type()'s `__hash__ = None` for an `__eq__`).
# Named, not reckoned as what the class body does not write: tuple targets, class-level
# `if` blocks, and what a metaclass or `__init_subclass__` sets were taken for made.
_DATACLASS_MADE = {"__init__", "__repr__", "__eq__", "__hash__", "__lt__", "__le__", "__gt__",
                   "__ge__", "__setattr__", "__delattr__", "__match_args__", "__dataclass_fields__",
                   "__dataclass_params__", "__doc__", "__annotations__", "__getstate__",
                   "__setstate__"}


# What the dataclass decorator reads of the class's own methods as it makes it: a change
# to another method leaves what it generated as it is, so the class is not made again.
_DATACLASS_READS = _DATACLASS_MADE | {"__post_init__"}

# Why no `frozen` makes a dataclass again (live.agreeing_frozen None), Python 3.13's rule.
_MIXED_FROZEN = "some frozen and some not, which this Python's dataclass decorator refuses either way"


def _annotates_in_a_class(tree: ast.Module | None, names) -> bool:
    """Whether a class statement of `tree` annotates one of `names` (`label: str`, in a
    class-level `if` too): a field its dataclass may declare, taking a base's binding of
    it as its default. (One in a def of the class counts too: it only loads a module more.)"""
    return tree is not None and any(
        isinstance(node, ast.ClassDef) and any(
            isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) and item.target.id in names
            for item in ast.walk(node))
        for node in ast.walk(tree))


def _spelled(qualname: str) -> str:
    """How a module's code reaches its class `qualname`: `Outer._Outer__Inner` for a
    private nested `Outer.__Inner` (bound mangled; the qualname keeps `__Inner`)."""
    parts = qualname.split(".")
    return ".".join([parts[0]] + [splice.mangled(outer, name) for outer, name in zip(parts, parts[1:])])


def _enclosing(view, cls) -> str:
    """The top-level class whose statement makes the nested class `cls` (`m2.Outer` for
    `m2.Outer.Inner`): what compile_class_definition, addressing top-level classes only,
    redefines to make it again."""
    # Its own home: a nested class statement's body does not see the enclosing class's
    # namespace, so a `__module__` that one rewrote is not this one's.
    return f"{view.home(cls)}.{own.QUALNAME(cls).partition('.')[0]}"


def _on_enclosing(view, cls) -> str:
    """' on m2.Outer (whose class statement holds it)' for a nested class; '' for a top-level one."""
    return "" if "." not in own.QUALNAME(cls) else f" on {_enclosing(view, cls)} (whose class statement holds it)"


def _misordered_fields_text(view, cls, pair, unvalued) -> str:
    """Which field of the dataclass `cls` would follow which with a default, declared by
    which class, from live.misordered_fields's `pair`; and, for a default the field takes
    from a base's binding of its name (declared without a value), that base."""
    (defaulted, defaulted_by), (field, declared_by) = pair
    of = "" if declared_by is cls else f" (declared by {qualname(view, declared_by)})"
    giver = live.default_giver(cls, defaulted, unvalued)
    field, defaulted = catalog.echoed(field), catalog.echoed(defaulted)   # a def's name may be one
    given = ("" if giver is None else f" (declared without a value, it takes what "
             f"{qualname(view, giver)} binds to {defaulted} as its default)")
    return (f"its field {field}{of}, without a default, would follow the field {defaulted} of "
            f"{qualname(view, defaulted_by)}, which has one{given}, in its __init__")


def _misordered_refusal(view, ref, cls, conflict: str, unvalued) -> str:
    """Why compile_method or delete_method on the dataclass `cls` is refused when the
    decorator would now raise `conflict` on its field order, and what to do (`unvalued`:
    MutationToolset._unvalued)."""
    pair = live.misordered_fields(cls, unvalued)
    if pair is None:   # not expected: the decorator refuses the order
        what, field, back = "", "each field of it without one", "change its base back"
    else:
        (defaulted, defaulted_by), (field, declared_by) = pair
        what = _misordered_fields_text(view, cls, pair, unvalued) + " "
        giver = live.default_giver(cls, defaulted, unvalued)
        back = "change " + qualname(view, giver if giver is not None else
                                    defaulted_by if defaulted_by is not cls else declared_by) + " back"
        if live.lost_default(declared_by, field, unvalued):
            back = (f"bind {catalog.echoed(field)} in a base of {qualname(view, declared_by)} again "
                    "(declared without a value, it takes its default from one)")
    return (f"{ref.qualified} cannot be made again as written: {what}(the dataclass decorator "
            f"raises TypeError: {conflict}), so a new session's import of {ref.module} fails. "
            f"Give {field} a default (or kw_only) first (compile_class_definition, its definition "
            f"with that), or {back}")


def _both_reimports(first: tuple[str, dict], second: tuple[str, dict]) -> tuple[str, dict]:
    """Two (note, data) of _reimported_note (or ('', {})) as one."""
    if not second[0]:
        return first
    (note, data), (more, more_data) = first, second
    return note + more, {"reimported": sorted({*data.get("reimported", ()), *more_data["reimported"]}),
                         "importErrors": {**data.get("importErrors", {}), **more_data["importErrors"]}}


def _refuse_used_by_its_module(qualified: str, module: str, old_source: str, new_source: str,
                               readers: list[ast.stmt]) -> None:
    """Refuse (ToolError) to delete the class or function `qualified` of `module` while the
    module's own top-level code surely reads its name as it runs (`readers`,
    live.sure_import_readers: `Hook.__module__ = "m"`, `register(Hook)`, `CONFIG =
    configure()`, a class statement's base or class-level value): the module, and every
    module importing it, would import in no new session (NameError). Each statement is
    quoted with its line in the file as it stands."""
    if not readers:
        return
    used = [_use(old_source, new_source, reader) for reader in readers]
    quoted = "; ".join(f"line {use['line']}: {catalog.quoted(use['statement'])}" for use in used)
    those = "that statement" if len(used) == 1 else "those statements"
    raise ToolError("refused", f"{qualified} is used by {module}'s own top-level code as "
                    f"it runs ({quoted}); deleted, {module} would no longer import (NameError), "
                    f"here or in a new session, nor would the modules importing it. Change {those} "
                    f"first (a class statement with compile_class_definition, a function's def with "
                    f"compile_method on {module}, any other in the module's file, then refresh), "
                    "then delete it.", {"usedBy": used})


def _refuse_failing_trial(view, qualified: str, module: str, old_source: str,
                          new_source: str) -> tuple[str, dict]:
    """Refuse (ToolError) deleting `qualified` where `module`, imported apart with
    `new_source` as a new session would import it (gsmcpd.image.trial), fails as it did
    not with `old_source`: a read the static rules cannot see (through an instance, a
    decorator, a metaclass). A trial that decided nothing is noted: ('', {}) or the note
    and its data (`importNotTried`)."""
    if is_program(module):   # importing it runs the program: no new session does that
        return "", {}
    found = trial.failure_made(view, module, old_source, new_source)
    if isinstance(found, trial.Undecided):
        return (f"; note: the trial import of {module} apart {found.why}, so whether a new session "
                "still imports it was not checked"), {"importNotTried": found.why}
    if found is None:
        return "", {}
    failed = {"module": module, "error": found.kind,
              "message": repeated(found.message, "the message", found.uncut_length)}
    where = ""
    if found.line is not None:
        failed["at"] = _trial_line(old_source, new_source, found.line)
        where = f", on line {failed['at']['line']} ({catalog.quoted(failed['at']['statement'])})"
    run_by = None if found.top in (None, found.line) else _trial_line(old_source, new_source, found.top)
    if run_by is not None and run_by != failed["at"]:   # in a def the module's top-level statement
        failed["runBy"] = run_by                         # called, not a lambda written in it
        where += f", run by line {run_by['line']} ({catalog.quoted(run_by['statement'])})"
    raised = f"{found.kind}: {found.message}" if found.message else found.kind
    message = (f"{qualified} deleted, {module} would no longer import in a new session: imported apart "
               f"as this session would commit it, it failed with {raised}{where}. Nothing changed. "
               "Change what needs it first (in the module's file, then refresh), then delete it.")
    # The trial cut the message (MESSAGE_MAX) or the type name (KIND_MAX), both held in
    # the message: the repeat counts what it had uncut.
    uncut = len(message) + found.cut_out if found.cut_out else None
    raise ToolError("refused", message, {"importFailure": failed}, uncut)


def _trial_line(old_source: str, new_source: str, line: int) -> dict:
    """The statement of `new_source` holding a line a trial failed on, as a refusal quotes
    it: its first line, numbered as the file stands, and its text (splice.statement_at)."""
    first, statement = splice.statement_at(new_source, parsing.parse(new_source), line)
    return {"line": splice.line_before_edit(old_source, new_source, first), "statement": statement}


def _use(old_source: str, new_source: str, reader: ast.stmt) -> dict:
    """A statement of `new_source` a refusal quotes (`usedBy`): its line in the file as it
    stands (`old_source`) and its text."""
    return {"line": splice.line_before_edit(old_source, new_source, splice.first_line(reader)),
            "statement": splice.statement_line(new_source, reader)}


def _still_has(cls, tree: ast.Module, class_name: str, selector: str, bound: str) -> bool:
    """Whether the class would still have `bound` with its def of it gone: from a base or its
    metaclass (live), or by another statement its class body writes it with (in a
    class-level block too, whichever branch runs: only a sure loss is refused)."""
    if cls is not None and any(bound in vars(owner) for owner in cls.__mro__[1:] + type(cls).__mro__):
        return True
    return _written_by_its_body(tree, class_name, selector)


def _written_by_its_body(tree: ast.Module, class_name: str, selector: str) -> bool:
    """Whether the class body binds `selector` by another statement (in a class-level block
    too, whichever branch runs)."""
    return bool(splice.attribute_nodes(splice.class_statement(tree, class_name), selector, blocks=True))


def _refuse_sure_reads(qualified: str, module_name: str, old_source: str, new_source: str,
                       readers: dict, changed: str, then: str) -> None:
    """Refuse (ToolError) a change that takes from class `qualified` the attributes its
    own module reads, surely and unguarded, as it runs (`readers`: attribute, statement
    of new_source or None, live.unguarded_attribute_reader): the module, and every module
    importing it, would import in no new session (AttributeError). A guarded or
    conditional read is noted instead (_read_as_it_runs_note)."""
    used = [{"attribute": attribute, **_use(old_source, new_source, reader)}
            for attribute, reader in readers.items() if reader is not None]
    used.sort(key=lambda use: use["line"])
    if not used:
        return
    quoted = "; ".join(f"{qualified}.{catalog.echoed(use['attribute'])} on line {use['line']} ({catalog.quoted(use['statement'])})"
                       for use in used)
    those = "that statement" if len(used) == 1 else "those statements"
    raise ToolError("refused", f"{module_name}'s own top-level code reads, unguarded, as it runs: "
                    f"{quoted}; {changed}, {module_name} would no longer import (AttributeError), "
                    f"here or in a new session, nor would the modules importing it. Change {those} "
                    "first (in the module's file, then refresh; a read guarded by try/except "
                    f"AttributeError or hasattr is only noted), then {then}.", {"usedBy": used})


def _all_note(module_name: str, name: str, new_source: str, tree: ast.Module) -> tuple[str, dict]:
    """The note, and its data (`stillInAll`: the statement quoted, its line), when the
    module's `__all__` still names what was deleted: `from module import *`, anywhere,
    now fails. No tool edits `__all__`: the module's file is where it changes."""
    statement = live.all_naming(tree, name)
    if statement is None:
        return "", {}
    quoted, name = splice.statement_line(new_source, statement), catalog.echoed(name)
    return (f"; note: {module_name}'s __all__ still names {name} ({catalog.quoted(quoted)}, line {statement.lineno}), "
            f"so `from {module_name} import *` now fails (AttributeError): take {name} out of it "
            "in the module's file, then refresh"), {"stillInAll": {"line": statement.lineno, "statement": quoted}}


CALLERS_TOLD = 10   # callers a delete's note names; its data has up to search's cap, find_senders all


def _still_called_note(view, name: str, callers: list[str], fails: str) -> tuple[str, dict]:
    """The note, and its data (`stillCalledBy`, as find_senders answers), when code in the
    image still calls what was deleted by its name: not refused, as a call by name may be
    to another class's method or another module's function of that name."""
    if not callers:
        return "", {}
    shown = ", ".join(callers[:CALLERS_TOLD])
    if len(callers) > CALLERS_TOLD:
        shown += f" and {len(callers) - CALLERS_TOLD} more (find_senders lists them)"
    return (f"; note: the image still calls {catalog.echoed(name)} by name, in {shown}: {fails}",
            {"stillCalledBy": capped(callers, "")["structured"]})


def _read_as_it_runs_note(module_name: str, class_name: str, reads: dict[str, str]) -> str:
    """The note on the statements of the class's own module that read, as it runs, the
    attributes the class no longer has (`reads`: attribute, statement quoted)."""
    said = ", ".join(f"{class_name}.{catalog.echoed(attribute)} as it runs ({catalog.quoted(read)})"
                     for attribute, read in reads.items())
    that, reads_are = ("that read", "is") if len(reads) == 1 else ("those reads", "are")
    return (f"; note: {module_name} reads {said}, so unless {that} {reads_are} guarded, a new "
            f"session's import of {module_name} fails (AttributeError)")


def _dropped_names(old_node: ast.ClassDef | None, new_source: str, class_name: str,
                   had: set[str], cls) -> set[str]:
    """The names (as bound) the class's old statement bound and its new one does not,
    that the live class `cls` (None: not live) no longer has, not even from a base or
    its metaclass: what a read of them (`OWN = Job.limit`) now fails on. Live, the class
    tells what either statement bound, not their text (a name written in a class-level
    block that did not run, `if sys.version_info < (3, 0):`, was not): those of the old
    one it had (`had`, its names before) and does not have now."""
    if old_node is None:
        return set()
    new_node = splice.class_statement(parsing.parse(new_source), class_name)
    if new_node is None:
        return set()
    dropped = live.class_member_names(old_node)
    if not isinstance(cls, type):
        return dropped - live.class_member_names(new_node)
    return {name for name in dropped & had
            if not any(name in vars(owner) for owner in cls.__mro__ + type(cls).__mro__)}


def _shown(*names: str) -> str:
    """A dotted name as a success message shows it: each part, a client's of any length
    (a 100,000-character method name), cut (structuredContent keeps it whole)."""
    return ".".join(map(catalog.echoed, names))


def _listed(names) -> str:
    """Names as a note lists them, each cut as _shown cuts it (structuredContent keeps them whole)."""
    return ", ".join(map(catalog.echoed, names))


def _rerun_note(ran: str, hooks: list[str], made: str, owner: str, tail: str = "") -> tuple[str, dict]:
    """A note and its data naming the `hooks` that ran again, as `ran` says (with it
    its hooks), on `made`, a new object: what else they do (a registry entry) was done again
    for it, while `owner` keeps what they did for it (then `tail`). ('', {}) when none did."""
    if not hooks:
        return "", {}
    they, do = ("it", "does") if len(hooks) == 1 else ("they", "do")
    return (f"; note: {ran}: what else {they} {do} (a registry entry) was done again, for {made}; "
            f"{owner} keeps what {they} did for it{tail}", {"rerun": hooks})


def _dataclass_rerun_note(qualified: str, why: str, hooks: list[str]) -> tuple[str, dict]:
    """_rerun_note for the `hooks` (_class_hooks) that ran again as a dataclass's class
    statement was run again, `why`, to make what its decorator generates. They cannot be
    left out: the decorator reads the fields of the bases, and only a class statement
    makes a class with them, running their metaclass and __init_subclass__."""
    return _rerun_note(f"{why}, so {qualified}'s class statement ran again, on a throwaway "
                       f"class, and with it its {', '.join(hooks)}", hooks, "that throwaway class",
                       f"the live {qualified}", " as it was made")


def _decorators_rerun_note(qualified: str, decorators: list[str], rebound: bool) -> tuple[str, dict]:
    """_rerun_note for the `decorators` (decorators_run) that ran again as function
    `qualified` was compiled: one that registers what it decorates (`@app.route`,
    `@atexit.register`) registered the new function too."""
    named = f"decorator{'s' if len(decorators) > 1 else ''} {', '.join(decorators)}"
    ran = f"{qualified}'s def ran again, and with it its {named}"
    if rebound:
        return _rerun_note(ran, decorators, f"the new {qualified}", f"the old {qualified}",
                           ", so a registry may hold both: check for a double registration")
    return _rerun_note(ran, decorators, f"the new function it made, which {qualified} was "
                       "updated from in place", f"the live {qualified}",
                       ", so a registry may hold both, each running the new code: check for a "
                       "double registration")


def _rebound_note(module_name: str, name: str) -> str:
    """What a function rebound (live.update_function could not update it) leaves behind:
    its importers are re-imported, but nothing else that holds the old object is found."""
    return (f"; note: {module_name}.{name} could not be updated in place (it is no plain "
            "function, such as functools.cache's wrapper, or its closure changed), so "
            f"{module_name} binds a new one: what holds the old one, other than the modules "
            f"importing {module_name} (re-imported), keeps it and runs the old code (a registry, "
            "a callback list, a functools.partial)")


def _written_in_block(ref, selector: str, statement: ast.stmt, why: str, more: str = "") -> ToolError:
    """The refusal of an edit to a def written only inside a class-level if/try/with:
    `why` the tool would get it wrong; the way forward, compile_class_definition, `more`."""
    selector = catalog.echoed(selector)   # the client's (or its source's), any length
    return ToolError("refused", f"{ref.qualified}.{selector} is written inside the class-level "
                     f"{splice.statement_kind(statement)} statement at {ref.module} line "
                     f"{statement.lineno}, not as a method of the class body; {why}: edit that "
                     f"statement with compile_class_definition{' ' + more if more else ''}")


def _captured_note(source: str, class_name: str, name: str) -> tuple[str, dict]:
    """A note and its data for the class-level statements that read method `name` as the
    class was made (`x = property(get_x)`): what they bound still holds the old def here,
    as only the def is compiled (running them again would run the whole class body)."""
    # The statements reading it themselves, in a class-level block too (`if ...:` holding
    # `x = property(get_x)`), and what each binds (a `:=` or match capture what it read too).
    readers = [statement for statement in splice.statements_within(splice.class_level_readers(
                   splice.class_statement(parsing.parse(source), class_name), name))
               if name in splice.names_read_now(statement, blocks=False)]
    if not readers:
        return "", {}
    bound = sorted({bound for statement in readers for bound in splice.may_bind_names(statement)})
    quoted = ", ".join(catalog.quoted(splice.statement_line(source, statement)) for statement in readers)
    holding = (f"{_listed(bound)} still hold" if bound else
               f"what {'they' if len(readers) > 1 else 'it'} made from it still holds")
    name = catalog.echoed(name)   # the source's, any length
    return (f"; note: the class body read {name} as the class was made ({quoted}), so "
            f"{holding} the old {name} in this session until the class is "
            "made again: compile_class_definition with its definition as it stands, or abort to "
            "re-import the committed image (it discards uncommitted changes); a new session "
            "has the new one", {"stillOld": bound})


_KIND_NAMES = {"instance": "an instance method", "class": "a classmethod",
               "static": "a staticmethod", "property": "a property"}


def _side(kind: str) -> str:
    return "class" if kind in ("class", "static") else kind


def _side_change(qualified: str, old_kind: str, written_kind: str, meta: bool) -> str | None:
    """Why a def whose kind no decorator states (meta, or none: an instance method) is
    refused over a method of another side, or None. GemStone keeps a class's two sides
    apart; a Python class has one namespace, so the def would silently replace the other
    side's method (a classmethod lost for a forgotten meta). A kind decorator written in
    the source (@classmethod over an instance method) is taken as meant."""
    if written_kind != "instance":
        return None
    new_kind = "class" if meta else "instance"
    if _side(new_kind) == _side(old_kind):
        return None
    name = qualified.rsplit(".", 1)[1]
    given = "with meta true, a classmethod" if meta else "without meta, an instance method"
    keep = ("send meta true (or the defs as get_method_source gives them) to replace it"
            if _side(old_kind) == "class" else
            "send the defs as get_method_source gives them to replace it" if old_kind == "property"
            else "send it without meta to replace it")
    return (f"{qualified} is {_KIND_NAMES[old_kind]}; this def ({given}) would replace it, as "
            f"a Python class has one namespace for both sides. To change that method, {keep}; "
            f"to make {name} {_KIND_NAMES[new_kind]} instead, delete_method it first.")


def _metaclass_side_change(view, qualified: str, cls, node, meta: bool) -> str | None:
    """Why a def whose kind no decorator states is refused over a method of the class's
    metaclass that the class reaches as its class side (browsing shows it so), or None: as
    an instance method it would hide it (`WithMeta.meta_method()` broken); with meta, shadow
    it for this class alone where the metaclass's was likely meant. A special method is
    looked up on the type and a private one mangled per class (`_WithMeta__x`), and a
    metaclass's property wins over the class's own attribute: none of those hides it."""
    if node.name.startswith("__") or splice.method_kind(node) != "instance":
        return None
    owner = metaclass_owner(view, cls, node.name)
    if owner is None or inspect.isdatadescriptor(vars(owner)[node.name]):
        return None
    done = (f"shadow it for {qualified} alone, {qualname(view, owner)}'s left as it is" if meta else
            f"hide it, {qualified}.{node.name}() no longer calling it")
    return (f"{qualified} defines no method {node.name}: {metaclass_method_text(view, qualified, owner, node.name)}. "
            f"This def ({'with meta true, a classmethod' if meta else 'without meta, an instance method'}) "
            f"would {done}; to shadow it deliberately, write @classmethod (or @staticmethod) over "
            "the def; else name the method otherwise.")


def _check_by_class_statement(ref, cls: type, module, filename: str, new_source: str) -> None:
    """An Enum's or typing.NamedTuple's class statement refuses some member names
    (`_sunder_` ones, `_asdict`...), which the live compile, not running it, would let
    through to a module no new session could import: run it on the new source, binding
    nothing, as its import would (a dataclass is made again anyway)."""
    if not (isinstance(cls, enum.EnumMeta) or typing.NamedTuple in vars(cls).get("__orig_bases__", ())):
        return
    try:
        live.evaluate_class(module, filename, new_source, ref.name)
    except BREAKS:
        raise
    except BaseException as error:   # the user's code may raise SystemExit too
        raise ToolError("compileError", f"{ref.qualified}'s class statement, run with this def as "
                        f"an import of {ref.module} runs it, raised {raised(error)}; nothing was "
                        "changed") from None


def _new_reads(reader, name: str, old_source: str | None, new_source: str) -> tuple[str, int, str] | None:
    """The names `new_source`'s statement of `name` reads before its module binds them
    (`reader`: live.read_before_bound or function_read_before_bound) that `old_source`'s
    did not, as (the names, the first one's line, that line quoted); None if none."""
    before = {read for read, _ in reader(old_source, name)} if old_source else set()
    reads = [(read, node) for read, node in reader(new_source, name) if read not in before]
    if not reads:
        return None
    line = reads[0][1].lineno
    names = _listed(dict.fromkeys(read for read, _ in reads))
    return names, line, splice.lines_of(new_source)[line - 1].strip()


def _refuse_new_class_over_a_binding(view, module_name: str, node: ast.ClassDef) -> None:
    """Refuse a new class whose name its module's top level binds already (a def, an
    import, an assignment): written last in the module, the class would take that
    binding's place, silently (`class Cart` in a module of `from shop.models import Cart`
    had its tests build the new, empty Cart); a `*` import's too, when it brought the name
    in. Not what only a run as a program binds, nor a class made from what it replaces
    (`class Cart(Cart):`, a base, keyword or decorator reading the name): that is meant."""
    name = node.name
    if any(isinstance(read, ast.Name) and read.id == name
           for part in [*node.bases, *node.keywords, *node.decorator_list] for read in ast.walk(part)):
        return
    tree = view.tree(module_name)
    run = [node for node in (tree.body if tree is not None else []) if not splice.runs_as_program_only(node)]
    # Not `except E as name`'s: Python deletes that name as its handler ends; nor a bare
    # `name: T`'s: it binds nothing, only records the annotation.
    binding = next((node for node in run if splice.binds([node], name, star=False, handled=False,
                                                          annotated=False)), None)
    if binding is None:   # a `*` import's, if the module as it ran has the name
        binding = next((node for node in run if splice.binds([node], name, handled=False,
                                                             annotated=False)), None) if (
            name in own.namespace(view.module(module_name))) else None   # none of a module not imported
    if binding is None:
        return
    shown = catalog.echoed(name)
    if isinstance(binding, splice.FunctionNode):
        raise ToolError("refused", f"{module_name}.{shown} is a function, not a class: a new class "
                        "of that name, written last in the module, would take its place; name the "
                        "class otherwise, or delete the function first (delete_method className "
                        f"{module_name}, selector {shown})")
    written = splice.statement_line(view.source(module_name), binding)
    raise ToolError("refused", f"{module_name}.{shown} is bound already by a top-level statement (line "
                    f"{binding.lineno}: {catalog.quoted(written)}): a new class of that name, written "
                    "last in the module, would take that binding's place for the code reading it; name "
                    "the class otherwise, or edit that statement in the module's file, then refresh")


def _refuse_read_before_bound(module_name: str, class_name: str, old_source: str | None,
                              new_source: str) -> None:
    """Refuse a class statement that would read, as it runs, a name its module binds
    only below it (or only in this session's live module): the session's live compile
    finds it, a new session's import is a NameError. A name the class already read so is
    left alone (the edit does not make it worse)."""
    new_reads = _new_reads(live.read_before_bound, class_name, old_source, new_source)
    if new_reads is None:
        return
    names, line, quoted = new_reads
    raise ToolError("refused", f"{module_name}.{class_name} would read {names} as its class "
                    f"statement runs (line {line}: {catalog.quoted(quoted)}), and nothing above the class in "
                    f"{module_name} binds it (it is bound below the class, or only in this "
                    f"session): a new session's import of {module_name} would fail, NameError. "
                    "Use a name bound above the class, or write the class below what it reads "
                    "(delete_class, then compile_class_definition with dictionaryName puts the "
                    "new class last in its module, above an `if __name__ == \"__main__\":` block "
                    "ending it).")


def _refuse_function_read_before_bound(module_name: str, name: str, old_source: str,
                                       new_source: str) -> None:
    """_refuse_read_before_bound for the module's top-level defs of function `name`."""
    new_reads = _new_reads(live.function_read_before_bound, name, old_source, new_source)
    if new_reads is None:
        return
    names, line, quoted = new_reads
    raise ToolError("refused", f"{module_name}.{name} would read {names} as its def runs (line "
                    f"{line}: {catalog.quoted(quoted)}), and nothing above the def in {module_name} binds it "
                    f"(it is bound below, or only in this session): a new session's import of "
                    f"{module_name} would fail, NameError. Use "
                    "a name bound above the def, or delete_method it and compile it again, which "
                    "puts a new function last in its module, above an `if __name__ == "
                    "\"__main__\":` block ending it.")


def _refuse_own_name_read_unbound(ref, name: str, old_source: str, new_source: str) -> None:
    """Refuse defs that read their own name as they are made (`@width.setter` alone, a
    default `=width`) once the defs they replace no longer bind it above: the live
    compile finds the live class's, every new session's import is a NameError."""
    reader = splice.unbound_reader(new_source, ref.name, name)
    if reader is None or splice.unbound_reader(old_source, ref.name, name) is not None:
        return   # none, or one the class had already: the edit does not make it worse
    raise ToolError("refused", f"{ref.qualified}.{name}: {catalog.quoted(splice.statement_line(new_source, reader))} reads "
                    f"{name} as the class body runs, and with the defs it replaces gone nothing "
                    f"binds it there: every new session's import of {ref.module} would fail "
                    f"(NameError). Send all the defs of {name} together, the one binding it "
                    "first (a property's getter) above, as get_method_source gives them; or "
                    "have it read another name")


def _fewer_defs(qualified: str, existing: list, defs: list) -> str:
    """Why `defs`, fewer than the `existing` defs of their name, are refused (all of
    those would go), in the terms of what those are, with what to send instead."""
    head = f"{qualified} is written as {len(existing)} defs"
    signatures = sum(splice.is_overload(node) for node in existing)
    if not signatures:
        kind = (" (a property's getter, setter...)"
                if any(splice.method_kind(node) == "property" for node in existing) else "")
        return (f"{head}{kind} and the source has {len(defs)}; send them together, as "
                "get_method_source gives them, so none is dropped")
    plural = "s" if signatures > 1 else ""
    implemented = " and the implementation" if signatures < len(existing) else ""
    alone = "replace only the implementation" if implemented else "add the implementation"
    return (f"{head} ({signatures} @overload signature{plural}{implemented}) and the source has "
            f"{len(defs)}, which would replace all {len(existing)}; send the overload{plural}"
            f"{implemented} together, as get_method_source gives them, or a def without "
            f"@overload alone to {alone} and keep the signature{plural}")


def _slots_of(cls: type | None, classdef: ast.ClassDef) -> set[str]:
    """The names the class's __slots__ make (mangled, as bound): the live class's, or,
    for a module that does not import, its source's literal."""
    if cls is not None:
        slots = cls.__dict__.get("__slots__", ())
    else:
        slots = ()
        for node in splice.attribute_nodes(classdef, "__slots__"):
            try:
                slots = ast.literal_eval(node.value)
            except (ValueError, TypeError, SyntaxError, AttributeError):
                slots = ()
    names = [slots] if isinstance(slots, str) else slots
    try:
        return {splice.mangled(classdef.name, name) for name in names if isinstance(name, str)}
    except TypeError:          # __slots__ bound to something odd: nothing to compare
        return set()


def _fails(module, filename, source, class_name, method_name) -> bool:
    try:
        live.compile_members(module, filename, source, class_name, [method_name])
    except BREAKS:
        raise
    except BaseException:
        return True
    return False
