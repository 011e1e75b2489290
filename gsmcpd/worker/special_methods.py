"""special_methods: the special methods Python calls on a class's instances, which
compile_method's `meta` (a plain def made a classmethod) refuses.

Python looks such a method up on the type of the object it acts on (`repr(x)` runs
`type(x).__repr__(x)`; the reference's "Special method lookup"), so a def of one in a
class serves its instances; as a classmethod it would be handed the class where the
instance belongs. The class itself, as an object, is served by its metaclass's."""

from __future__ import annotations

# The data model's ("Special method names"), and those the standard library calls the
# same way (iteration, pickle, copy, os.fspath, sys.getsizeof, a dataclass's __init__
# calling self.__post_init__). Not __new__, __init_subclass__ or __class_getitem__
# (class-side as written), nor __subclasshook__ or __prepare__ (classmethods by design).
# A hand list: the library's are named nowhere Python can be asked (the builtin types'
# own are checked against it by the tests).
INSTANCE_PROTOCOL = frozenset({
    # basic customization
    "__init__", "__del__", "__repr__", "__str__", "__bytes__", "__format__", "__lt__", "__le__",
    "__eq__", "__ne__", "__gt__", "__ge__", "__hash__", "__bool__",
    # attribute access, descriptors, a base that is no class, isinstance with an instance
    "__getattr__", "__getattribute__", "__setattr__", "__delattr__", "__dir__", "__get__", "__set__",
    "__delete__", "__set_name__", "__mro_entries__", "__instancecheck__", "__subclasscheck__",
    # calls, containers, iteration
    "__call__", "__len__", "__length_hint__", "__getitem__", "__setitem__", "__delitem__", "__missing__",
    "__iter__", "__reversed__", "__contains__", "__next__",
    # numbers
    "__add__", "__sub__", "__mul__", "__matmul__", "__truediv__", "__floordiv__", "__mod__", "__divmod__",
    "__pow__", "__lshift__", "__rshift__", "__and__", "__xor__", "__or__",
    "__radd__", "__rsub__", "__rmul__", "__rmatmul__", "__rtruediv__", "__rfloordiv__", "__rmod__",
    "__rdivmod__", "__rpow__", "__rlshift__", "__rrshift__", "__rand__", "__rxor__", "__ror__",
    "__iadd__", "__isub__", "__imul__", "__imatmul__", "__itruediv__", "__ifloordiv__", "__imod__",
    "__ipow__", "__ilshift__", "__irshift__", "__iand__", "__ixor__", "__ior__",
    "__neg__", "__pos__", "__abs__", "__invert__", "__complex__", "__int__", "__float__", "__index__",
    "__round__", "__trunc__", "__floor__", "__ceil__",
    # with, buffers, coroutines and async iteration
    "__enter__", "__exit__", "__buffer__", "__release_buffer__", "__await__", "__aiter__", "__anext__",
    "__aenter__", "__aexit__",
    # pickle, copy (copy.replace from 3.13), os.fspath, sys.getsizeof, dataclasses
    "__reduce__", "__reduce_ex__", "__getstate__", "__setstate__", "__getnewargs__", "__getnewargs_ex__",
    "__copy__", "__deepcopy__", "__replace__", "__fspath__", "__sizeof__", "__post_init__",
})


def meta_refusal(class_name: str, name: str) -> str | None:
    """Why `meta` may not make a plain def of `name` a classmethod on class `class_name`
    (what to send instead), or None when it may."""
    if name not in INSTANCE_PROTOCOL:
        return None
    return (f"meta makes {name} a classmethod, but {name} is a special method Python calls on "
            f"{class_name}'s instances (type(x).{name}(x, ...) for an instance x): a classmethod "
            f"would be handed {class_name} itself, not x, and {class_name}'s instances would break. "
            f"Send the def without meta for {class_name}'s instances; for {class_name} itself, as "
            f"an object, {name} belongs on its metaclass: compile_method it on a metaclass of the "
            f"image (class Meta(type)) and make {class_name} with metaclass=Meta "
            "(compile_class_definition). Written @classmethod or @staticmethod over the def, it is "
            "taken as meant.")
