"""A class's own attributes as `type` keeps them, whatever its metaclass binds to those
names (a property, a raising `__getattr__`): what the image tools read of a class whose
code they must not run. And what a module binds in its own namespace, whatever object
sys.modules holds in its place (namespace)."""

import types
from collections.abc import Mapping

# A class's own name, as `type` keeps it (a str, UTF-8 clean): the one way any class the
# user's code made is named (`own.NAME(type(value))`), as a metaclass's own `__name__` (a
# property that raises, or gives a lone surrogate) failed each tool that asked it.
NAME = type.__dict__["__name__"].__get__
QUALNAME = type.__dict__["__qualname__"].__get__
_MODULE = type.__dict__["__module__"].__get__
DICT = type.__dict__["__dict__"].__get__
_FLAGS = type.__dict__["__flags__"].__get__
_HEAP_TYPE = 1 << 9
# Read through the base's slot: a subclass (abc.abstractclassmethod) may bind `__func__` otherwise.
_STATIC_FUNC = staticmethod.__dict__["__func__"].__get__
_CLASS_FUNC = classmethod.__dict__["__func__"].__get__
_NO_NAMESPACE: Mapping = types.MappingProxyType({})


def namespace(obj) -> Mapping:
    """What `obj` binds in its own namespace (vars()), read-only; for an object with none,
    nothing. The one reader of what sys.modules holds: a module's code may put any object
    in its place there, one with no __dict__ (of __slots__), or one whose __dict__ raises
    or is no dict, where vars() raised TypeError or the object's own error at every tool
    reading it."""
    try:
        found = vars(obj)
    except Exception:
        return _NO_NAMESPACE
    return found if isinstance(found, (dict, types.MappingProxyType)) else _NO_NAMESPACE


def module_of(obj) -> str | None:
    """The module an object names as its own `__module__`: a class's as its dictionary
    holds it (a C type's from its name), whatever its metaclass binds to that name (a
    property that raises). None when that is no str (a class body may bind `__module__ =
    42`; Python's repr then names the class by its qualified name alone), when a class has
    none, or when reading another object's raises."""
    kind = type(obj)   # not isinstance: it would read the object's own `__class__`
    if issubclass(kind, type):
        try:
            module = _MODULE(obj)
        except AttributeError:   # `type(...)` called where globals have no __name__
            return None
    else:
        module = _attribute(obj, "__module__")
    return str.__str__(module) if issubclass(type(module), str) else None   # a str subclass's own __str__ not run


def qualname_of(obj) -> str | None:
    """An object's `__qualname__`: a class's as `type` keeps it (QUALNAME), another's (a
    function's, the wrapper functools.lru_cache makes of one) as it answers; None when
    that is no str or reading it raises."""
    name = QUALNAME(obj) if issubclass(type(obj), type) else _attribute(obj, "__qualname__")
    return str.__str__(name) if issubclass(type(name), str) else None


def _attribute(obj, name: str):
    try:   # any object's: a wrapper's may be a property that raises
        return getattr(obj, name, None)
    except Exception:
        return None


def has_namespace(obj) -> bool:
    """Whether `obj` has a namespace of its own to read (namespace), empty or not."""
    return namespace(obj) is not _NO_NAMESPACE


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
