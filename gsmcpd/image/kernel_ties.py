"""The kernel's classes tied to the classes of an image module about to be re-imported.

An image module the kernel imported (`numbers.py` in the image: the standard library's
`decimal` imports `numbers` as it loads, and gets the image's, README "Kernel guard") may
hold classes the kernel built on (`fractions.Fraction` subclasses `numbers.Rational`) or
registered with (`_decimal` registers `Decimal` with `numbers.Number`). A re-import (abort,
refresh, a commit, a mutation's) makes new classes without them, and the kernel's modules
are never re-imported: `isinstance(Decimal(1), numbers.Number)` is then False here, though
True in a new session, which imports both anew. Only these two ties are told, read off the
old classes (their subclasses, their ABC registry): exact, and a look at the module's own
classes alone. A kernel module's global bound to the old module or class, or one its C code
keeps, is not (finding those would walk every kernel module, or cannot be done).
"""

from __future__ import annotations

import abc
import sys

from gsmcpd.image import own

try:
    from _abc import _get_dump   # the C ABCs' registry (CPython's, as test.support reads it)
except ImportError:   # pragma: no cover - the pure-Python _py_abc keeps it as an attribute
    _get_dump = None


def ties(name: str, module, is_kernel) -> list[tuple[type, str, str]]:
    """(kernel class, "subclass" or "registered", bound name) for each class of a kernel
    module (`is_kernel(name)`) tied so to a class `module` (the module `name`) made and binds:
    named as the browsing tools name it, by the name the module binds it under (live_class
    reads `module.__dict__[name]`), not its __qualname__, which an alias (`Public = _Base`),
    a factory's class (`Foo = make()`, `make.<locals>.X`) or a name bound again below
    (`Old = Q` / `class Q`) leaves naming another class or none."""
    found = []
    items = list(own.namespace(module).items())   # none of a stand-in with no namespace
    for value, bound in _bound_names(name, items).values():
        try:
            found += [(tied, how, bound) for tied, how in _tied_to(value) if is_kernel(own.module_of(tied))]
        except Exception:   # what one class does (a metaclass's __subclasses__): the others are still told
            continue
    return found


def _bound_names(name: str, items) -> dict[int, tuple[type, str]]:
    """id -> (class, the name it is told by) for each class of the module `name` (of its
    `items`, its namespace's) that it binds: its class statement's name (its __qualname__)
    where the module binds that to it, as the browsing tools list it; else the first
    name binding it. A class bound under two names is one class, its ties told once."""
    classes: dict[int, tuple[type, str]] = {}
    for bound, value in items:
        try:
            if not (isinstance(value, type) and own.module_of(value) == name):
                continue
            if id(value) not in classes or bound == own.QUALNAME(value):
                classes[id(value)] = (value, bound)
        except Exception:   # a class whose reading raises (a heap type with no __module__)
            continue
    return classes


def lost(module_name: str, found: list[tuple[type, str, str]], now) -> list[str]:
    """Of `found` (ties() of the old module), those the module `now` (the new one, or None)
    does not make again, the class tied to told by the name it is bound under in both:
    'decimal.Decimal (registered with numbers.Number)' or 'fractions.Fraction (a subclass
    of numbers.Rational)'. The new module's own code re-registers some (numbers registers
    int with its Integral): not lost."""
    named = set()
    for tied, how, bound in found:
        try:
            cls = None if now is None else own.namespace(now).get(bound)   # its own dict: no __getattr__ of the module's runs
            kept = isinstance(cls, type) and (tied, how) in _tied_to(cls)
        except Exception:
            kept = False
        if not kept:
            relation = "a subclass of" if how == "subclass" else "registered with"
            named.add(f"{_named(tied)} ({relation} {module_name}.{bound})")
    return sorted(named)


def _tied_to(cls) -> list[tuple[type, str]]:
    return [(sub, "subclass") for sub in type.__subclasses__(cls)] + \
        [(registered, "registered") for registered in _registered(cls)]


def _registered(cls) -> list[type]:
    """The classes registered with `cls`, an ABC (none if it is not one)."""
    if not isinstance(cls, abc.ABCMeta):
        return []
    if _get_dump is None:
        refs = vars(cls).get("_abc_registry", ())
    else:
        try:
            refs = _get_dump(cls)[0]
        except TypeError:   # not a C ABC's data
            return []
    return [registered for ref in list(refs) if (registered := ref()) is not None]


def _named(cls) -> str:
    """A kernel class told as its module binds it, as _bound_names tells an image module's
    class (a factory's `Meter = make()`, not `make.<locals>.X`); one its module does not
    bind (or that is gone from sys.modules) by its __qualname__."""
    module_name = own.module_of(cls)
    items = list(own.namespace(sys.modules.get(module_name or "")).items())
    _, bound = _bound_names(module_name, items).get(id(cls), (cls, own.QUALNAME(cls)))
    return f"{module_name}.{bound}"


def is_kernel_module(name: str | None, image_loader) -> bool:
    """Whether `name` is a loaded module the kernel imported: found by an import system
    loader (its spec's) that is not the image's, so not the session's workspace either."""
    loader = getattr(getattr(sys.modules.get(name or ""), "__spec__", None), "loader", None)
    return loader is not None and loader is not image_loader
