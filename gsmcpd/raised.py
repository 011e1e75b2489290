"""An exception as messages name it."""

from gsmcpd.wire.frames import carried


def raised(exc: BaseException) -> str:
    """`ValueError: bad`, or the class alone for one with no text (`SystemExit`, a bare
    `NotImplementedError`), not `SystemExit: ` with nothing after its colon."""
    try:
        text = str(exc)
    except Exception:   # the user's own __str__ raising: said as Python's traceback says it
        text = "<exception str() failed>"
    text = carried(text)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
