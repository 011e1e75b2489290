"""A class's own attributes as `type` keeps them, whatever its metaclass binds to those
names (a property, a raising `__getattr__`): what the image tools read of a class whose
code they must not run."""

import types

NAME = type.__dict__["__name__"].__get__
QUALNAME = type.__dict__["__qualname__"].__get__
DICT = type.__dict__["__dict__"].__get__
_FLAGS = type.__dict__["__flags__"].__get__
_HEAP_TYPE = 1 << 9
# Read through the base's slot: a subclass (abc.abstractclassmethod) may bind `__func__` otherwise.
_STATIC_FUNC = staticmethod.__dict__["__func__"].__get__
_CLASS_FUNC = classmethod.__dict__["__func__"].__get__


def is_heap_type(cls: type) -> bool:
    """Whether `cls` was made at run time (a class statement, `type(...)`), not a C type."""
    return bool(_FLAGS(cls) & _HEAP_TYPE)


def function_codes(cls: type) -> list[types.CodeType]:
    """The code of the functions, static and class methods the class's own dictionary holds
    (of subclasses of staticmethod and classmethod too: abc.abstractclassmethod), read by
    type: a class attribute's own `__getattr__` is not run (a proxy raising outside
    its context made the browse or the refusal fail with its error)."""
    codes = []
    for value in DICT(cls).values():
        kind = type(value)   # not isinstance: it would read the value's own `__class__`
        function = (_STATIC_FUNC(value) if issubclass(kind, staticmethod)
                    else _CLASS_FUNC(value) if issubclass(kind, classmethod) else value)
        if type(function) is types.FunctionType:
            codes.append(function.__code__)
    return codes


def codes(obj) -> list[types.CodeType]:
    """The code of a function, or of the functions, static and class methods a class's own
    namespace holds (function_codes), read by type: no user `__getattr__` runs."""
    if isinstance(obj, type):
        return function_codes(obj)
    return [obj.__code__] if type(obj) is types.FunctionType else []
