"""A class's own attributes as `type` keeps them, whatever its metaclass binds to those
names (a property, a raising `__getattr__`): what the image tools read of a class whose
code they must not run."""

import types

NAME = type.__dict__["__name__"].__get__
QUALNAME = type.__dict__["__qualname__"].__get__
DICT = type.__dict__["__dict__"].__get__
_FLAGS = type.__dict__["__flags__"].__get__
_HEAP_TYPE = 1 << 9


def is_heap_type(cls: type) -> bool:
    """Whether `cls` was made at run time (a class statement, `type(...)`), not a C type."""
    return bool(_FLAGS(cls) & _HEAP_TYPE)


def function_codes(cls: type) -> list[types.CodeType]:
    """The code of the functions, static and class methods the class's own dictionary holds,
    read by type: a class attribute's own `__getattr__` is not run (a proxy raising outside
    its context made the browse or the refusal fail with its error)."""
    codes = []
    for value in DICT(cls).values():
        function = value.__func__ if type(value) in (staticmethod, classmethod) else value
        if type(function) is types.FunctionType:
            codes.append(function.__code__)
    return codes
