"""A class's own attributes as `type` keeps them, whatever its metaclass binds to those
names (a property, a raising `__getattr__`): what the image tools read of a class whose
code they must not run."""

NAME = type.__dict__["__name__"].__get__
QUALNAME = type.__dict__["__qualname__"].__get__
DICT = type.__dict__["__dict__"].__get__
_FLAGS = type.__dict__["__flags__"].__get__
_HEAP_TYPE = 1 << 9


def is_heap_type(cls: type) -> bool:
    """Whether `cls` was made at run time (a class statement, `type(...)`), not a C type."""
    return bool(_FLAGS(cls) & _HEAP_TYPE)
