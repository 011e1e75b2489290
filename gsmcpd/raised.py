"""An exception as messages name it."""

from traceback import TracebackException
from types import CodeType

from gsmcpd.image import own
from gsmcpd.wire.frames import carried
from gsmcpd.wire.jsonrpc import echoed


# What Python's traceback says in place of the text of an exception whose __str__ raises.
STR_FAILED = "<exception str() failed>"


def exception_text(exc: BaseException) -> str:
    """str(exc), or STR_FAILED when the user's own __str__ raises: an answer must tell the
    exception raised, not the one its __str__ raised."""
    try:
        return str(exc)
    except Exception:
        return STR_FAILED


def raised(exc: BaseException) -> str:
    """`ValueError: bad`, or the class alone for one with no text (`SystemExit`, a bare
    `NotImplementedError`), not `SystemExit: ` with nothing after its colon."""
    text = carried(exception_text(exc))
    name = own.NAME(type(exc))
    return f"{name}: {text}" if text else name


def raised_importing(exc: BaseException, package: str) -> str:
    """raised(exc) for an import of `package` that failed, naming the submodule of it whose
    top-level code the exception came out of, the innermost, if one did: a package
    importing its plugins in a loop (`importlib.import_module(f"{__name__}.{name}")`)
    fails with the error of the one that failed, which its text alone does not name. The
    submodule comes first: an answer cutting a long message (REPEAT_CAP, PAST_BUDGET_CAP)
    keeps its start."""
    found = None
    traceback = exc.__traceback__
    while traceback is not None:
        frame = traceback.tb_frame
        name = frame.f_globals.get("__name__")
        if frame.f_code.co_name == "<module>" and isinstance(name, str) and name.startswith(package + "."):
            found = name
        traceback = traceback.tb_next
    return raised(exc) if found is None else f"raised importing its submodule {found}: {raised(exc)}"


def raised_where(exc: BaseException, filename: str, image_module_of) -> str | None:
    """Where code a definition called as it was evaluated (a decorator, a base's
    __init_subclass__, a metaclass) raised `exc`, which its text alone does not say:
    `zoo.decos line 3, in needs_doc`, the innermost frame of an image module
    (`image_module_of(filename)` names it, or is None), else the function outside the
    image the definition called (`dataclasses.dataclass`). None when the definition's own
    code raised it (a name it reads, its own `raise`): the definition's code is what ran
    `<module>` of `filename` first, with the class bodies and functions compiled in it."""
    own, callees = None, []
    traceback = exc.__traceback__
    while traceback is not None:
        code = traceback.tb_frame.f_code
        if own is None:
            if code.co_filename == filename and code.co_name == "<module>":
                own = _nested_codes(code)
        elif id(code) in own:
            callees = []   # called back into the definition's own code (a lambda it passed)
        else:
            callees.append(traceback)
        traceback = traceback.tb_next
    for called in reversed(callees):
        code = called.tb_frame.f_code
        module = image_module_of(code.co_filename)
        if module is not None:
            inside = "" if code.co_name == "<module>" else f", in {echoed(code.co_qualname)}"
            return f"{echoed(module)} line {called.tb_lineno}{inside}"
    if not callees:
        return None
    frame = callees[0].tb_frame
    module = frame.f_globals.get("__name__")
    qualname = echoed(frame.f_code.co_qualname)
    return carried(f"{echoed(module)}.{qualname}" if isinstance(module, str) else qualname)


def _nested_codes(code) -> set[int]:
    """The ids of `code` and of every code object compiled in it (its classes' bodies,
    its functions and lambdas, theirs)."""
    found, pending = set(), [code]
    while pending:
        one = pending.pop()
        found.add(id(one))
        pending += [const for const in one.co_consts if isinstance(const, CodeType)]
    return found


def traceback_text(error: BaseException, tb, *, compact: bool = False) -> str:
    """traceback.format_exception's text, each exception of the chain (causes, contexts, a
    group's) named by its class's `__module__` and `__qualname__` as type keeps them: the
    traceback module asks the class, whose metaclass may make either raise (it then failed
    with that error, not the one raised). Such a chain is told through stand-ins, so named,
    as no version's TracebackException lets its names be given (3.13 asks as it is made)."""
    chain = _chain(error)
    if all(type(type(one)) is type for one in chain):   # a plain class's names are type's own
        shown = error
    else:
        made: dict[int, BaseException] = {}
        for one in reversed(chain):   # a group's exceptions before it
            made[id(one)] = _stand_in(one, made)
        for one in chain:
            stand_in = made[id(one)]
            stand_in.__traceback__ = one.__traceback__
            stand_in.__cause__ = None if one.__cause__ is None else made[id(one.__cause__)]
            stand_in.__context__ = None if one.__context__ is None else made[id(one.__context__)]
            stand_in.__suppress_context__ = one.__suppress_context__
        shown = made[id(error)]
    return "".join(TracebackException(type(shown), shown, tb, compact=compact).format())


def _chain(error: BaseException) -> list[BaseException]:
    """`error` and every exception the traceback tells with it, each once, each before
    the exceptions of a group (its causes, contexts and a group's exceptions)."""
    found, pending, seen = [], [error], set()
    while pending:
        one = pending.pop(0)
        if one is None or id(one) in seen:
            continue
        seen.add(id(one))
        found.append(one)
        pending += [one.__cause__, one.__context__,
                    *(one.exceptions if isinstance(one, BaseExceptionGroup) else ())]
    return found


_SYNTAX_FIELDS = ("filename", "lineno", "offset", "text", "end_lineno", "end_offset", "msg", "print_file_and_line")


def _stand_in(error: BaseException, made: dict) -> BaseException:
    """An exception told as `error` is, its class named as type keeps `error`'s: its text,
    its notes, a SyntaxError's place, a group's exceptions (their stand-ins, in `made`)."""
    kind = type(error)
    text = exception_text(error)
    base = (SyntaxError if issubclass(kind, SyntaxError) else
            (ExceptionGroup if issubclass(kind, Exception) else BaseExceptionGroup)
            if issubclass(kind, BaseExceptionGroup) else Exception if issubclass(kind, Exception) else BaseException)
    named = type(own.NAME(kind), (base,), {"__module__": own.module_of(kind), "__qualname__": own.QUALNAME(kind),
                                          "__str__": lambda self: text})
    if issubclass(base, BaseExceptionGroup):
        stand_in = named(error.message, [made[id(one)] for one in error.exceptions])
    else:
        stand_in = named()
    if base is SyntaxError:
        for field in _SYNTAX_FIELDS:
            setattr(stand_in, field, getattr(error, field, None))
    notes = getattr(error, "__notes__", None)
    if notes is not None:
        stand_in.__notes__ = notes
    return stand_in
