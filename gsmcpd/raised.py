"""An exception as messages name it."""


def raised(exc: BaseException) -> str:
    """`ValueError: bad`, or the class alone for one with no text (`SystemExit`, a bare
    `NotImplementedError`), not `SystemExit: ` with nothing after its colon."""
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
