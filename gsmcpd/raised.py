"""An exception as messages name it."""


def raised(exc: BaseException) -> str:
    """`ValueError: bad`, or the class alone for one with no text (`SystemExit`, a bare
    `NotImplementedError`), not `SystemExit: ` with nothing after its colon."""
    try:
        text = str(exc)
    except Exception:   # the user's own __str__ raising: said as Python's traceback says it
        text = "<exception str() failed>"
    text = carried(text)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def carried(text: str) -> str:
    """`text` with what UTF-8 cannot carry (a lone surrogate, `ValueError('\\udcff')`) as
    its escape: a message the user's code made, going to the client, else made the whole
    answer 'the result cannot be sent'."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
