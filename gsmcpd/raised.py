"""An exception as messages name it."""

from gsmcpd.image import own
from gsmcpd.wire.frames import carried


def raised(exc: BaseException) -> str:
    """`ValueError: bad`, or the class alone for one with no text (`SystemExit`, a bare
    `NotImplementedError`), not `SystemExit: ` with nothing after its colon."""
    try:
        text = str(exc)
    except Exception:   # the user's own __str__ raising: said as Python's traceback says it
        text = "<exception str() failed>"
    text = carried(text)
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
