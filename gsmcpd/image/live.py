"""Updating live objects from edited source, in place where Python allows.

A method is compiled inside a synthetic class body made of the *edited
module's* text (its other lines blank, so line numbers and tracebacks match it), then set on
the existing class object; its `__class__` cell is pointed at that class so
zero-argument super() works. A class redefinition with unchanged bases and
`__slots__`, and no Enum members (an Enum refuses to have them reassigned), is copied
onto the existing class object (instances and subclasses keep working); otherwise the
module is rebound to the new class.
"""

from __future__ import annotations

import __future__
import ast
import builtins
import contextlib
import copy
import ctypes
import dataclasses
import functools
import gc
import inspect
from types import FunctionType, GetSetDescriptorType, MappingProxyType, MemberDescriptorType, ModuleType

from gsmcpd.image import own, parsing, splice
from gsmcpd.image.splice import NESTED_TOO_DEEPLY, nested_too_deeply
from gsmcpd.image.surely_run import surely_run
from gsmcpd.worker.toolset import ToolError

# `__module__` is copied: a class body may set it (`__module__ = "pkg"`), or stop setting it.
_NOT_COPIED = {"__dict__", "__weakref__", "__qualname__"}
# type's data descriptors whose setter binds the name in the class's namespace.
_BOUND_BY_TYPE = {"__doc__", "__annotations__", "__abstractmethods__", "__module__", "__type_params__"}


def compile_members(module: ModuleType, filename: str, source: str, class_name: str,
                    names: list[str], cls: type | None = None) -> tuple[type, dict[str, object]]:
    """Evaluate the named members of `class_name` in `source` (module globals, and what
    the live class `cls` binds of the names they read as they run: `sep=sep`, `@_wrap`),
    without re-running the class's own bases or decorators: (the throwaway class
    they were made in, the members). Raises what the definitions raise."""
    with _compiling():
        tree = parsing.parse(source)
    classdef = splice.class_statement(tree, class_name)
    body = [node for node in classdef.body
            if isinstance(node, splice.FunctionNode) and node.name in names]
    # Keyed by the name the class binds: `__secret` is set as `_Kitchen__secret`.
    names = [splice.mangled(class_name, name) for name in names]
    namespace: dict = {}
    # Keyed as the class body reads them: `__x` there is `_Class__x`, as the stub's name is the class's.
    readable = {} if cls is None else {
        key: vars(cls)[key] for node in body for name in splice.names_read_now(node)
        if (key := splice.mangled(class_name, name)) in vars(cls)}
    header = f"class {class_name}:"
    if readable:
        namespace[_PREFILLED] = _prefilled(readable)
        header = f"class {class_name}(metaclass={_PREFILLED}):"
    with _compiling():
        code = compile(_alone(source, body, header, classdef.lineno), filename, "exec",
                       flags=future_flags(tree), dont_inherit=True)
    exec(code, module.__dict__, namespace)
    temp = namespace[class_name]
    return temp, {name: temp.__dict__[name] for name in names if name in temp.__dict__}


# The name the throwaway class's metaclass has where its class statement runs (exec's
# locals, not the module's globals); no module's own name.
_PREFILLED = "__gsmcpd_prefilled__"


def _prefilled(values: dict[str, object]) -> type:
    """A metaclass whose class body starts with `values` bound, as the live class's body
    had them, and whose class is a plain one holding only what the body bound itself:
    `values` not rebound are left out, so no descriptor's `__set_name__` sees the
    throwaway class."""
    class Prefilled(type):
        @classmethod
        def __prepare__(mcs, name, bases, **keywords):
            return dict(values)

        def __new__(mcs, name, bases, namespace, **keywords):
            own = {key: value for key, value in namespace.items()
                   if not (key in values and values[key] is value)}
            return type.__new__(type, name, bases, own)

    return Prefilled


def future_flags(tree: ast.Module) -> int:
    """The compiler flags of the module's own `from __future__ import ...` (they lead
    it, after its docstring): a class or method compiled alone must be compiled as its
    module is (with `annotations`, a forward reference in an annotation is no NameError)."""
    flags = 0
    for index, node in enumerate(tree.body):
        if index == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue   # the docstring
        if not (isinstance(node, ast.ImportFrom) and node.module == "__future__"):
            break
        for alias in node.names:
            feature = getattr(__future__, alias.name, None)
            flags |= getattr(feature, "compiler_flag", 0)
    return flags


def set_members(cls: type, members: dict[str, object], made: type) -> None:
    """Set `members`, made in the throwaway class `made`, on `cls`."""
    for name, value in members.items():
        point_class_cell(value, cls, made)
        set_member(cls, name, value)
    if "__eq__" in members and "__hash__" not in vars(cls):
        cls.__hash__ = None   # as type() makes a class that defines __eq__ and no __hash__
    settle_abstract_methods(cls)


def set_member(cls: type, name: str, value) -> None:
    """Bind `name` in the namespace of `cls`, as its class body does. setattr does not
    for a name its metaclass has a data descriptor for: it runs that instead, so a body's
    `__class__` property (unittest.mock.NonCallableMock's) raised TypeError, and a body's
    `__name__` would have renamed the class."""
    if _metaclass_data_descriptor(cls, name):
        _namespace(cls)[name] = value
        _type_modified(cls)
    else:
        setattr(cls, name, value)


def remove_member(cls: type, name: str) -> None:
    """Unbind `name` from the namespace of `cls` (set_member's reverse)."""
    if _metaclass_data_descriptor(cls, name):
        del _namespace(cls)[name]
        _type_modified(cls)
    else:
        delattr(cls, name)


def _metaclass_data_descriptor(cls: type, name: str) -> bool:
    """Whether setattr(cls, name, ...) runs a data descriptor of the metaclass that binds
    nothing in the namespace of `cls` (type's own for _BOUND_BY_TYPE do, with their
    bookkeeping)."""
    for owner in type(cls).__mro__:   # as attribute lookup goes: the first found decides
        if name in vars(owner):
            return (owner is not type or name not in _BOUND_BY_TYPE) and hasattr(type(vars(owner)[name]), "__set__")
    return False


def _namespace(cls: type) -> dict:
    """The dict behind `cls.__dict__` (a read-only proxy of it)."""
    [namespace] = gc.get_referents(vars(cls))
    return namespace


def _type_modified(cls: type) -> None:
    # What the C API asks after changing a type's dict by hand: attribute lookups of
    # `cls` and its subclasses are cached by type version.
    ctypes.pythonapi.PyType_Modified(ctypes.py_object(cls))


def settle_abstract_methods(cls: type) -> None:
    """Recompute the abstract methods of an ABC whose members changed, and of its
    subclasses (bases first): Python computes them once, as a class is made, so an
    implementation added later still left the class refusing to be instantiated, and
    an abstract method added to a base left its subclasses instantiable."""
    for member in [cls] + subclasses_of(cls):
        _update_abstract_methods(member)


def _update_abstract_methods(cls: type) -> None:
    """abc.update_abstractmethods, reading the class's namespace from a copy: asking a
    member for `__isabstractmethod__` may add to it (a pydantic model not built yet binds
    `__signature__` as its MockValSer is first touched), and abc's loop over the namespace
    itself raised RuntimeError (dictionary changed size during iteration)."""
    if _abstract_methods(cls) is None:
        return   # a class that is no ABC is left as it is
    abstracts = {name for base in cls.__bases__ for name in _abstract_methods(base) or ()
                 if getattr(getattr(cls, name, None), "__isabstractmethod__", False)}
    abstracts |= {name for name, value in list(vars(cls).items())
                  if getattr(value, "__isabstractmethod__", False)}
    cls.__abstractmethods__ = frozenset(abstracts)


_ABSTRACT_METHODS = type.__dict__["__abstractmethods__"]


def _abstract_methods(cls: type):
    """cls.__abstractmethods__, or None for a class that has none (no ABC), read from type's
    own descriptor: a metaclass's __getattr__ is never asked, which may raise anything
    (`cls._registry[name]`, a KeyError) and failed the edit half made, the live class
    changed and its source not."""
    try:
        return _ABSTRACT_METHODS.__get__(cls)
    except AttributeError:
        return None


def subclasses_of(cls: type) -> list[type]:
    """Every live subclass of `cls`, through any depth, bases before their subclasses,
    then by module and name: the same order in every run (a set's was not)."""
    # type.__subclasses__(cls), not cls.__subclasses__(): on a metaclass the lookup
    # finds type's own method unbound. Ties (one name twice) stay in the order found.
    family, todo = {cls: None}, [cls]
    while todo:
        for sub in type.__subclasses__(todo.pop()):
            if sub not in family:
                family[sub] = None
                todo.append(sub)
    return sorted(list(family)[1:], key=_bases_first_by_name)


def _bases_first_by_name(cls: type) -> tuple:
    return len(cls.__mro__), own.module_of(cls) or "", own.QUALNAME(cls)


def dataclass_basis(cls: type) -> tuple:
    """What the dataclass decorator reads of `cls` as it makes a subclass: its fields,
    whether it has a `__post_init__` (the subclass's `__init__` calls one only if so),
    and whether it is frozen. Compare two with same_dataclass_basis."""
    fields = inspect.getattr_static(cls, "__dataclass_fields__", None)
    params = inspect.getattr_static(cls, "__dataclass_params__", None)
    return (list(fields.values()) if isinstance(fields, dict) else [],
            inspect.getattr_static(cls, "__post_init__", None) is not None, getattr(params, "frozen", None))


def basis_changes(old: tuple, new: tuple) -> list[str]:
    """What differs between two dataclass_basis of one class, as it was in `old`, for an
    answer: `other fields`, `no __post_init__` (or `a __post_init__`), `frozen=False`."""
    (old_fields, old_post_init, old_frozen), (new_fields, new_post_init, new_frozen) = old, new
    changes = []
    if not same_dataclass_basis((old_fields, None, None), (new_fields, None, None)):
        changes.append("other fields")
    if old_post_init != new_post_init:
        changes.append("a __post_init__" if old_post_init else "no __post_init__")
    if old_frozen != new_frozen:
        changes.append(f"frozen={old_frozen}")
    return changes


def _frozen_needs_every_base_frozen() -> bool:
    """Whether the running dataclasses module refuses a frozen dataclass unless all its
    dataclass bases are frozen (Python 3.13 on, gh-109409) rather than unless one is.
    Asked of the decorator itself, so a backport or a later change is followed too."""
    @dataclasses.dataclass(frozen=True)
    class Frozen:
        pass

    @dataclasses.dataclass
    class Thawed:
        pass

    try:
        dataclasses.dataclass(frozen=True)(type("Both", (Frozen, Thawed), {}))
    except TypeError:
        return True
    return False


FROZEN_NEEDS_EVERY_BASE_FROZEN = _frozen_needs_every_base_frozen()


def frozen_conflict(cls: type) -> str | None:
    """The TypeError Python's dataclass decorator would raise making the dataclass `cls`
    again on its bases as they are now (a base's `frozen` changed since): a non-frozen one
    on a frozen base, or a frozen one on a non-frozen base (with no frozen one besides,
    before Python 3.13: FROZEN_NEEDS_EVERY_BASE_FROZEN). None when they agree, or `cls` is
    no dataclass."""
    params = vars(cls).get("__dataclass_params__")
    if params is None or not _dataclass_bases_frozen(cls) or params.frozen == agreeing_frozen(cls):
        return None
    if params.frozen:
        return "cannot inherit frozen dataclass from a non-frozen one"
    return "cannot inherit non-frozen dataclass from a frozen one"


def field_order_conflict(cls: type, here: bool = False, unvalued=None) -> str | None:
    """The TypeError Python's dataclass decorator would raise making the dataclass `cls`
    again as a new session's import does (its dataclass bases made anew too, see
    _init_fields) because a field without a default would follow one with a default among
    its `__init__`'s positional parameters (a base's field given a default since:
    `non-default argument 'y' follows default argument`, from Python 3.13 with ` 'x'`
    after it); with `here`, making it again in
    this session, on its bases' fields as they were made (a base stale since keeps the old
    ones). Asked of the decorator itself, on stand-ins of the fields as it would collect
    them (their names, whether each has a default, init, kw_only), so no user code runs.
    None when it would make it, or `cls` is no dataclass generating its `__init__` (or on
    a Python without the dataclasses internals _init_fields reads). `unvalued`: see
    _declared_fields."""
    fields = _init_fields(cls, here, unvalued)
    if fields is None:
        return None
    stand_ins = [(field.name, object, dataclasses.field(
        init=field.init, kw_only=field.kw_only is True, **({"default": None} if _has_default(field) else {})))
        for field in fields]
    try:
        dataclasses.make_dataclass("Again", stand_ins)
    except TypeError as error:
        return str(error)
    return None


def misordered_fields(cls: type, unvalued=None) -> tuple[tuple[str, type], tuple[str, type]] | None:
    """For a dataclass `cls` that field_order_conflict refuses: the first field with a
    default among its `__init__`'s positional parameters, and the first without one
    following it, each as (name, the class declaring it). None when there is no such pair."""
    fields = _init_fields(cls, unvalued=unvalued) or []
    positional = [field for field in fields if field.init and field.kw_only is not True]
    defaulted = next((field for field in positional if _has_default(field)), None)
    if defaulted is None:
        return None
    after = positional[positional.index(defaulted) + 1:]
    following = next((field for field in after if not _has_default(field)), None)
    if following is None:
        return None
    return (defaulted.name, _declaring(cls, defaulted.name)), (following.name, _declaring(cls, following.name))


def _init_fields(cls: type, here: bool = False, unvalued=None) -> list[dataclasses.Field] | None:
    """The fields of the dataclass `cls` as its decorator would collect them making it again
    as a new session's import does: each dataclass base's fields made anew too, from its
    own declared ones and its bases' as they are now, so a base whose base changed since
    (itself stale, keeping the fields it was made with) is seen through. With `here`, on
    the fields its bases have in this session, as a re-import here collects them.
    ClassVars left out (no parameter of __init__; an InitVar is). None when `cls` is no
    dataclass generating its `__init__`, or when this Python's dataclasses lacks the
    private marks of a ClassVar pseudo-field read here: its field order is then not judged."""
    params = vars(cls).get("__dataclass_params__")
    classvar = getattr(dataclasses, "_FIELD_CLASSVAR", None)
    if (classvar is None or params is None or not params.init
            or not isinstance(vars(cls).get("__dataclass_fields__"), dict)):
        return None
    if here:
        fields = {}
        for base in cls.__mro__[-1:0:-1]:   # as the decorator collects them
            inherited = inspect.getattr_static(base, "__dataclass_fields__", None)
            if isinstance(inherited, dict):
                fields.update(inherited)
        fields.update(_declared_fields(cls, unvalued))
    else:
        fields = _fields_made_anew(cls, {}, unvalued)
    kinds = [getattr(field, "_field_type", None) for field in fields.values()]
    if None in kinds:
        return None
    return [field for field, kind in zip(fields.values(), kinds) if kind is not classvar]


def _fields_made_anew(cls: type, made: dict, unvalued=None) -> dict[str, dataclasses.Field]:
    """The fields (by name) the dataclass decorator gives the dataclass `cls` in a new
    session, where its dataclass bases are made anew before it: as it collects them, each
    base's own (the nearest dataclass of the base's MRO: a plain mixin has its base's),
    then its declared ones. `made` keeps each class's, so a deep hierarchy is walked once."""
    if cls not in made:
        fields = {}
        for base in cls.__mro__[-1:0:-1]:
            owner = next((klass for klass in base.__mro__
                          if isinstance(vars(klass).get("__dataclass_fields__"), dict)), None)
            if owner is not None:
                fields.update(_fields_made_anew(owner, made, unvalued))
        fields.update(_declared_fields(cls, unvalued))
        made[cls] = fields
    return made[cls]


def _declared_fields(cls: type, unvalued=None) -> dict[str, dataclasses.Field]:
    """The fields the dataclass statement of `cls` declares itself (its own annotations),
    as making it again gives them: one without a default takes, as the decorator does
    (`x: int` reads getattr(cls, 'x')), what a base now binds to its name (a base's field
    given a default since). One made with what a base bound then (set on `cls` by the
    decorator) looks live as if written `x: int = 3`: `unvalued(cls)`, the names its
    statement annotates without a value (its source says), tells them apart, so a base
    that no longer binds it leaves it none. A Field declared without a default
    (`field(repr=False)`) over such a name is told from `x: int` by no live object, and
    taken as one."""
    own = vars(cls).get("__dataclass_fields__")
    if not isinstance(own, dict):
        return {}
    without_value = unvalued(cls) if unvalued is not None else ()
    declared = {}
    for name in _own_annotations(cls):
        if name not in own:
            continue
        field = own[name]
        if name in without_value or (not _has_default(field) and name not in vars(cls)):
            field, giver = copy.copy(field), _giving_base(cls, name)
            inherited = dataclasses.MISSING if giver is None else vars(giver)[name]
            # A base binding a Field (`label = field(default_factory=list)`) gives it whole.
            given = inherited if isinstance(inherited, dataclasses.Field) else None
            field.default = inherited if given is None else given.default
            field.default_factory = dataclasses.MISSING if given is None else given.default_factory
        declared[name] = field
    return declared


def _giving_base(cls: type, name: str) -> type | None:
    """The nearest base of `cls` binding `name`, whose binding a field `name: str` declared
    without a value takes as its default; None when none binds it, or for a slotted base's
    field (a member descriptor there: no default to the decorator)."""
    giver = next((base for base in cls.__mro__[1:] if name in vars(base)), None)
    return None if giver is None or isinstance(vars(giver)[name], MemberDescriptorType) else giver


def default_giver(cls: type, name: str, unvalued=None) -> type | None:
    """The class of the MRO of the dataclass `cls` whose binding of `name` (a def, `name =
    3`) its field `name`, declared without a value (`name: str`), takes as its default, as
    the decorator's getattr does (see _declared_fields); None when the field has a default
    of its own, or nothing binds that name. `unvalued`: see _declared_fields."""
    declaring = _declaring(cls, name)
    own = vars(declaring).get("__dataclass_fields__")
    field = own.get(name) if isinstance(own, dict) else None
    if field is None or (name not in (unvalued(declaring) if unvalued is not None else ())
                         and (_has_default(field) or name in vars(declaring))):
        return None
    return _giving_base(declaring, name)


def lost_default(cls: type, name: str, unvalued) -> bool:
    """Whether the field `name` the dataclass statement of `cls` declares without a value
    (`unvalued`: see _declared_fields) was made with what a base bound to it then as its
    default, and no base binds it now: a new session makes it with none."""
    own = vars(cls).get("__dataclass_fields__")
    field = own.get(name) if isinstance(own, dict) else None
    return (field is not None and _has_default(field) and name in unvalued(cls)
            and _giving_base(cls, name) is None)


def _declaring(cls: type, name: str) -> type:
    """The class of `cls`'s MRO whose dataclass statement declares the field `name`."""
    return next((owner for owner in cls.__mro__
                 if name in _own_annotations(owner)
                 and isinstance(vars(owner).get("__dataclass_fields__"), dict)), cls)


def _own_annotations(cls: type) -> dict:
    """The annotations the class statement of `cls` wrote; {} when what its namespace binds
    to the name is no dict (a `def __annotations__`: in a plain base, which the dataclass
    decorator never reads, or set on the class since)."""
    own = vars(cls).get("__annotations__")
    return own if isinstance(own, dict) else {}


def _has_default(field: dataclasses.Field) -> bool:
    return field.default is not dataclasses.MISSING or field.default_factory is not dataclasses.MISSING


def agreeing_frozen(cls: type) -> bool | None:
    """The `frozen` the dataclass decorator accepts making `cls` on its bases as they are
    now: True on frozen dataclass bases, False on non-frozen ones; None when it refuses
    both (frozen and non-frozen bases, from Python 3.13) or accepts both (none is a
    dataclass)."""
    frozen = _dataclass_bases_frozen(cls)
    if not frozen or (FROZEN_NEEDS_EVERY_BASE_FROZEN and any(frozen) and not all(frozen)):
        return None
    return any(frozen)


def _dataclass_bases_frozen(cls: type) -> list[bool]:
    """Whether each of the dataclass bases of `cls` is frozen, as the decorator reads them:
    every base with dataclass fields, inherited ones too."""
    bases = [inspect.getattr_static(base, "__dataclass_params__", None) for base in cls.__mro__[1:]
             if isinstance(inspect.getattr_static(base, "__dataclass_fields__", None), dict)]
    return [getattr(base, "frozen", False) for base in bases]


def unfrozen_leftovers(old: type, new: type) -> set[str]:
    """What the dataclass decorator generated for the frozen dataclass `old` that `new`,
    the same class made unfrozen, lacks: its `__setattr__` and `__delattr__` (a frozen
    dataclass's body cannot write them), to be removed as the class is updated in place,
    or its instances stay frozen."""
    was = inspect.getattr_static(old, "__dataclass_params__", None)
    now = inspect.getattr_static(new, "__dataclass_params__", None)
    if "__dataclass_params__" not in vars(old) or not getattr(was, "frozen", False) or getattr(now, "frozen", False):
        return set()
    return {"__setattr__", "__delattr__"} - set(vars(new))


def is_dataclass_decorator(module: ModuleType, decorator: ast.expr) -> bool:
    """Whether a class decorator written in `module` is the standard library's dataclass
    (`@dataclass`, `@dataclasses.dataclass(frozen=True)`), told by its names alone, as
    the module's globals bind them: no user code runs to tell."""
    names = splice.dotted_names(decorator.func if isinstance(decorator, ast.Call) else decorator)
    if names is None:
        return False
    value = own.namespace(module).get(names[0], vars(builtins).get(names[0]))
    for attribute in names[1:]:
        if not isinstance(value, ModuleType):   # a module's attribute is a plain lookup
            return False
        value = vars(value).get(attribute)
    return value is dataclasses.dataclass


def dataclass_follows_its_bases(cls: type, writes_init: bool) -> bool:
    """Whether what the dataclass decorator generated for `cls` still follows its bases
    as they are now: the fields it inherited are theirs (as same_dataclass_basis compares
    them: a base made again has new Field objects) and, unless its body writes its own
    __init__ (`writes_init`), its generated __init__ calls a __post_init__ only if it has one."""
    own = _own_annotations(cls)
    inherited = {}
    for base in cls.__mro__[-1:0:-1]:   # as the decorator collects them
        fields = vars(base).get("__dataclass_fields__")
        if isinstance(fields, dict):
            inherited.update(fields)
    fields = vars(cls).get("__dataclass_fields__", {})
    if any(name not in fields or not _same_field(fields[name], field)
           for name, field in inherited.items() if name not in own):
        return False
    init = vars(cls).get("__init__")
    if writes_init or not isinstance(init, FunctionType):
        return True
    has_post_init = inspect.getattr_static(cls, "__post_init__", None) is not None
    return ("__post_init__" in init.__code__.co_names) == has_post_init


_FIELD_PARTS = ("name", "type", "default", "default_factory", "init", "repr", "hash", "compare",
                "metadata", "kw_only", "_field_type")


def same_dataclass_basis(old: tuple, new: tuple) -> bool:
    """Whether a subclass made from `old` (a dataclass_basis) is what one made from `new`
    would be. A value made again (a default `Decimal(1)`, a factory closing over a name)
    counts as changed unless it is a plain immutable equal one, or a function of the same
    code (a lambda factory): no user code runs to compare."""
    (old_fields, *old_rest), (new_fields, *new_rest) = old, new
    return old_rest == new_rest and len(old_fields) == len(new_fields) and all(
        _same_field(a, b) for a, b in zip(old_fields, new_fields))


def same_fields_and_frozen(old: tuple, new: tuple) -> bool:
    """same_dataclass_basis on what alone can leave a subclass unmakeable (frozen_conflict,
    field_order_conflict): the fields and frozen, not whether there is a `__post_init__`."""
    return same_dataclass_basis((old[0], None, old[2]), (new[0], None, new[2]))


def _same_field(a, b) -> bool:
    return a is b or all(_same_value(getattr(a, part, None), getattr(b, part, None))
                         for part in _FIELD_PARTS)


def _same_value(a, b) -> bool:
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, FunctionType):   # a factory the class statement made again (lambda: [])
        return _same_function(a, b)
    if not _plain(a):
        return False
    try:
        return bool(a == b)
    except Exception:
        return False


def _same_function(a, b) -> bool:
    """Made from equal code in the same globals, with no closure and the same defaults."""
    return (a.__code__ == b.__code__ and a.__globals__ is b.__globals__
            and a.__closure__ is None and b.__closure__ is None
            and _same_value(a.__defaults__, b.__defaults__) and _same_value(a.__kwdefaults__, b.__kwdefaults__))


def made_alike(a, b) -> bool:
    """Whether two class attributes are made alike from their code: of one type, holding
    functions of equal code (not the same object: a wrapper a hook made is not a def's)."""
    codes = [function.__code__ for function in functions_in(a)]
    return type(a) is type(b) and codes == [function.__code__ for function in functions_in(b)]


def _plain(value) -> bool:
    """A value of Python's own types (`0`, `"s"`, `list[int]`), its items too for a tuple,
    and its keys and values for a mapping (a field's metadata): `==` compares them."""
    if own.module_of(type(value)) not in ("builtins", "types", "typing"):
        return False
    if isinstance(value, (dict, MappingProxyType)):
        return all(_plain(key) and _plain(item) for key, item in value.items())
    return not isinstance(value, (tuple, frozenset, list, set)) or all(_plain(item) for item in value)


def point_class_cell(value, cls: type, made: type) -> None:
    """Point every closure cell in `value` holding `made`, the throwaway class it was
    made in, at `cls`: zero-argument super()'s `__class__`, and a frozen dataclass's
    `__setattr__`, which names its class (left on a throwaway one, it raised TypeError,
    not FrozenInstanceError). A cell holding another class is left: `go = Base.go` in
    the body is Base's own function, its super() Base's."""
    for function in functions_in(value):
        for cell in function.__closure__ or ():
            try:
                if cell.cell_contents is made:
                    cell.cell_contents = cls
            except ValueError:   # an empty cell
                pass


def functions_in(value, depth=0):
    """The functions a class attribute holds: itself, what it wraps (`__wrapped__`:
    functools.wraps, functools.cache), a static/class method's, a property's parts, and
    what a plain decorator's wrapper closes over (the method whose super() it calls)."""
    if depth > 8 or value is None:
        return
    if isinstance(value, FunctionType):
        yield value
        for cell in value.__closure__ or ():
            try:
                inner = cell.cell_contents
            except ValueError:   # an empty cell
                continue
            if isinstance(inner, FunctionType):
                yield from functions_in(inner, depth + 1)
    elif isinstance(value, (staticmethod, classmethod)):
        yield from functions_in(value.__func__, depth + 1)
    elif isinstance(value, property):
        for part in (value.fget, value.fset, value.fdel):
            yield from functions_in(part, depth + 1)
    elif isinstance(value, functools.cached_property):
        yield from functions_in(value.func, depth + 1)
    # Looked up statically: a user object's __getattr__ runs no code here.
    yield from functions_in(inspect.getattr_static(value, "__wrapped__", None), depth + 1)


def evaluate_class(module: ModuleType, filename: str, source: str, class_name: str) -> type:
    """Run the class statement from `source` in the module's globals, binding nothing."""
    with _compiling():
        tree = parsing.parse(source)
        classdef = splice.class_statement(tree, class_name)
        # In a module-level block (`if TYPE_CHECKING:`), the class is indented: a block opens it.
        opened = "if True:" if classdef.col_offset else None
        text = _alone(source, [classdef], opened, splice.first_line(classdef) - 1)
        code = compile(text, filename, "exec", flags=future_flags(tree), dont_inherit=True)
    namespace: dict = {}
    exec(code, module.__dict__, namespace)
    return namespace[class_name]


def named_as_set_below(cls: type, source: str, class_name: str) -> None:
    """Give the class just made from its statement in `source` the `__module__` the
    module's top level assigns it below that statement (`Hook.__module__ = "pkg"`), which
    the module's import runs after it: the live class is then as a new session has it."""
    strings = splice.module_strings_set_below(parsing.parse(source)).get(class_name, set())
    if len(strings) == 1:
        cls.__module__ = next(iter(strings))


def evaluate_function(module: ModuleType, filename: str, source: str, name: str):
    """Run the module's top-level defs of function `name` from `source` (decorators and
    all, @overload signatures first) in the module's globals, binding nothing: what the
    last made, as its import binds it."""
    with _compiling():
        tree = parsing.parse(source)
        text = _alone(source, splice.function_nodes(tree, name), None, 0)
        code = compile(text, filename, "exec", flags=future_flags(tree), dont_inherit=True)
    namespace: dict = {}
    exec(code, module.__dict__, namespace)
    return namespace[name]


def update_function(old, new) -> bool:
    """Make the live function `old` what `new` (made from its edited def) is, in place: its
    code, defaults, annotations, doc, attributes, and what its closure holds (a decorator's
    wrapper then calls the new wrapped def), so what took it before (`from m import f` in
    another module, a registry, a callback) runs the new code. False, changing nothing,
    when that cannot be done: either is no plain function (`functools.cache`'s wrapper),
    or their closures hold other names."""
    if not (type(old) is FunctionType and type(new) is FunctionType
            and old.__code__.co_freevars == new.__code__.co_freevars
            and old.__globals__ is new.__globals__):
        return False
    if _same_decoration(old, new) and update_function(inspect.getattr_static(old, "__wrapped__"),
                                                      inspect.getattr_static(new, "__wrapped__")):
        # The wrapper keeps what its decorator holds for it (singledispatch's registry, which
        # the module's `@f.register` defs below it filled), as the import fills it again.
        for name in ("__doc__", "__annotations__"):
            setattr(old, name, getattr(new, name))
        return True
    old.__code__ = new.__code__
    for mine, theirs in zip(old.__closure__ or (), new.__closure__ or ()):
        try:
            mine.cell_contents = theirs.cell_contents
        except ValueError:   # an empty cell
            del mine.cell_contents
    for name in ("__defaults__", "__kwdefaults__", "__annotations__", "__doc__", "__type_params__"):
        if hasattr(new, name):
            setattr(old, name, getattr(new, name))
    # What the decorators set (`__wrapped__`), over what module code set below the def, kept
    # as a new session's import sets it too.
    vars(old).update(vars(new))
    return True


def _same_decoration(old: FunctionType, new: FunctionType) -> bool:
    """Whether `new` is the wrapper the same decorator, given the same arguments, made of
    the edited def `old` wraps (`__wrapped__`): the same code, its closure holding equal
    values (functions: the same code), so the wrapped def is all that differs."""
    if old.__code__ != new.__code__ or not all(
            type(inspect.getattr_static(f, "__wrapped__", None)) is FunctionType for f in (old, new)):
        return False
    for mine, theirs in zip(old.__closure__ or (), new.__closure__ or ()):
        try:
            held, made = mine.cell_contents, theirs.cell_contents
            if isinstance(held, FunctionType) and isinstance(made, FunctionType):
                if held.__code__ != made.__code__:
                    return False
            elif held is not made and not (type(held) is type(made) and held == made):
                return False
        except Exception:   # an empty cell, or an __eq__ of the user's that raised
            return False
    return True


@contextlib.contextmanager
def _compiling():
    """Python refusing code nested too deeply (as it parses or compiles it, a few frames
    deeper than the tool's own parse of it) is a compileError saying so, not an error
    the definition raised as it ran."""
    try:
        yield
    except NESTED_TOO_DEEPLY as error:
        raise ToolError("compileError", nested_too_deeply(error)) from None


def _alone(source: str, statements: list[ast.stmt], header: str | None, at: int) -> str:
    """`source` with every line blank but the statements' own (decorators included), and
    `header` written on line `at`: their code keeps the lines and columns the module gives
    it, and compiled from this text, it nests as deeply as Python's compile of the module
    does (a compiled AST meets the recursion limit at a third of that; execute_code
    compiles text for the same reason)."""
    lines = splice.lines_of(source)
    kept = [""] * len(lines)
    for statement in statements:
        first, last = splice.first_line(statement), statement.end_lineno
        kept[first - 1:last] = lines[first - 1:last]
    if header is not None:
        kept[at - 1] = header
    return "".join(line if line.endswith(("\n", "\r")) else line + "\n" for line in kept)


def same_shape(old: type, new: type) -> bool:
    """Whether `new` can be copied onto `old` (update_in_place). Not for an Enum with
    members: it refuses to have them reassigned, so the copy would stop half done. (A
    memberless Enum, the usual base of others, takes methods like any class.)"""
    return (old.__bases__ == new.__bases__ and type(old) is type(new)
            and old.__dict__.get("__slots__") == new.__dict__.get("__slots__")
            and not _enum_members(old))


def _enum_members(cls: type) -> dict:
    """The members an Enum's metaclass refuses to reassign, kept where it looks for them
    (`_member_map_` in the class's own namespace): the standard library's EnumType, and a
    copy of its module the image holds (`vendored.enum`), whose EnumType is no
    enum.EnumType; {} for any other class."""
    members = vars(cls).get("_member_map_")
    return members if isinstance(members, dict) else {}


def update_in_place(old: type, new: type, old_member_names: set[str],
                    only: set[str] | None = None) -> None:
    """Copy `new`'s namespace (only the names in `only`, if given) onto `old`; members
    the old source defined and the new one does not are removed."""
    for name, value in new.__dict__.items():
        if name in _NOT_COPIED or _is_slot_descriptor(value, new) or (only is not None and name not in only):
            continue
        point_class_cell(value, old, new)
        set_member(old, name, value)
    for name in old_member_names - set(new.__dict__):
        if name in old.__dict__ and name not in _NOT_COPIED:
            remove_member(old, name)
    settle_abstract_methods(old)


def _is_slot_descriptor(value, owner: type) -> bool:
    # By type, not its name: a value of the code's may be named so, or its class's `__name__` raise.
    return type(value) in (MemberDescriptorType, GetSetDescriptorType) and getattr(
        value, "__objclass__", None) is owner


def class_member_names(classdef: ast.ClassDef) -> set[str]:
    """The names the class body binds, as bound (private names mangled)."""
    return {splice.mangled(classdef.name, name) for name in _written_member_names(classdef)}


def unvalued_names(classdef: ast.ClassDef) -> set[str]:
    """The names the class body annotates without a value (`label: str`, in a class-level
    block too) and binds in no other way, as bound: a dataclass field of one takes what a
    base binds to it as its default (see _declared_fields)."""
    annotated = {splice.mangled(classdef.name, node.target.id) for node in splice.class_level_statements(classdef)
                 if isinstance(node, ast.AnnAssign) and node.value is None and isinstance(node.target, ast.Name)}
    return annotated - class_member_names(classdef)


def _written_member_names(classdef: ast.ClassDef) -> set[str]:
    """The names the class body's statements may bind: in its class-level `if`/`try`/
    `with`/loop/`match` blocks too, whichever branch (one that did not run bound nothing,
    so there is nothing of it on the live class to remove)."""
    return {name for node in splice.class_level_statements(classdef) for name in splice.may_bind_names(node)}


def needed_on_import(tree: ast.Module, name: str, star: bool = True) -> bool:
    """Whether running the module reads the global `name` that nothing at its top level
    binds any more, or nothing above the read (a base, metaclass, decorator or default
    naming a deleted class; `DEFAULT = Parser()` above `except ImportError: Parser = None`):
    it then fails to import, NameError. Function bodies do not run on import, but for those
    of the module's own functions it calls as it runs, one call deep (`X = make()` with
    `def make(): return Hook()`). With `star` false only a binding sure to run is taken to
    bind it (splice.surely_binds): not a `*` import, nor an import in a `try` whose handler
    passes (`try: from fastparser import Parser` / `except ImportError: pass`), nor one
    under an `if` (only a re-import tells whether it does)."""
    return import_reader(tree, name, star, through_calls=True) is not None


def read_below_its_class(tree: ast.Module, name: str) -> bool:
    """Whether the module's top-level code below the class statement of `name` reads it as
    it runs (`DEFAULT = Kind.B`, another class's field default `kind: Kind = Kind.A`, a
    decorator; in a function of the module it calls, one call deep): what that made holds
    the class object the statement made, stale once the class is made anew (a new shape)
    until the module runs again. A class written in a block: any read of it at all."""
    classdef = splice.class_statement(tree, name)
    below = tree.body[tree.body.index(classdef) + 1:] if classdef in tree.body else tree.body
    lazy_annotations = bool(future_flags(tree) & __future__.annotations.compiler_flag)
    functions = _functions(tree)
    return any(_reads(node, lambda sub: _name_read(sub) == name, lazy_annotations, functions)
               for node in below)


def import_reader(tree: ast.Module, name: str, star: bool = True,
                  through_calls: bool = False) -> ast.stmt | None:
    """The first top-level statement that makes needed_on_import true, or None (reading
    `name` itself, or, `through_calls`, in a function of the module it calls), no
    statement above it binding the name (surely, with `star` false)."""
    lazy_annotations = bool(future_flags(tree) & __future__.annotations.compiler_flag)
    own = _comprehension_reads(tree)
    functions = _functions(tree) if through_calls else None
    for node in tree.body:
        # A `del` of it too (opcode.py's `del def_op, ..., jabs_op` of helpers it ran): NameError.
        if _reads(node, lambda sub: _name_read(sub) == name and id(sub) not in own, lazy_annotations, functions):
            return node
        # Bound from here on: a binding below a read does not serve it (read first, in its statement too).
        if splice.binds([node], name, augmented=False, handled=False) if star else splice.surely_binds([node], name):
            return None
    return None


def _name_read(node: ast.AST) -> str | None:
    """The name `node` reads, a NameError where it is bound nowhere: a Name loaded, a
    Name deleted (`del Hook`), an augmented assignment's (`Hook += x` reads it first)."""
    if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Load, ast.Del)):
        return node.id
    if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
        return node.target.id
    return None


def _comprehension_reads(tree: ast.AST) -> set[int]:
    """The ids of the Name nodes reading a name a comprehension binds itself (`A` in
    `[A for A in xs]`): its own scope's, not the module's global. Its first iterable is
    evaluated in the enclosing scope, so a read there is the module's."""
    own = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            bound = set().union(*(splice.target_names(each.target) for each in node.generators))
            outside = {id(sub) for sub in ast.walk(node.generators[0].iter)}
            own.update(id(sub) for sub in ast.walk(node) if isinstance(sub, ast.Name)
                       and sub.id in bound and id(sub) not in outside)
    return own


def read_before_bound(source: str, class_name: str) -> list[tuple[str, ast.AST]]:
    """The globals the class statement reads as it runs (a base, metaclass or decorator
    of it; a class-level statement's value, a def's decorator or default) that nothing
    may have bound by then: not the class body above the read, nor the module above the
    class (the block it is written in counts whole; a function it calls there, declaring
    the name `global`, too), nor the builtins. A live compile
    finds them in the module as the session has it (bound below the class, or by
    `execute_code`), but a new session's import of the module is a NameError.
    (name, the node reading it), in the order read."""
    tree = parsing.parse(source)
    classdef = splice.class_statement(tree, class_name)
    if classdef is None:
        return []
    above = splice.statements_before(source, class_name)
    if classdef not in tree.body:
        above = tree.body[:len(above) + 1]
    lazy_annotations = bool(future_flags(tree) & __future__.annotations.compiler_flag)
    found, type_params = [], _type_params(classdef)
    for expression in classdef.decorator_list + classdef.bases + [k.value for k in classdef.keywords]:
        found += _unbound_reads(expression, above, [], lazy_annotations, type_params)
    for index, statement in enumerate(classdef.body):
        found += _unbound_reads(statement, above, classdef.body[:index], lazy_annotations, type_params)
    return sorted(found, key=lambda item: (item[1].lineno, item[1].col_offset))


def function_read_before_bound(source: str, name: str) -> list[tuple[str, ast.AST]]:
    """read_before_bound for the module's top-level defs of function `name`: the globals
    their decorators, defaults and annotations read as they are made that nothing above
    them may have bound (nor the builtins)."""
    tree = parsing.parse(source)
    lazy_annotations = bool(future_flags(tree) & __future__.annotations.compiler_flag)
    found = []
    for node in splice.function_nodes(tree, name):
        above = tree.body[:tree.body.index(node)]
        found += _unbound_reads(node, above, [], lazy_annotations, _type_params(node))
    return sorted(found, key=lambda item: (item[1].lineno, item[1].col_offset))


def _type_params(scope: ast.AST) -> set[str]:
    """Python 3.12's `class A[T]` and `def m[T]`: their own scope binds T."""
    return {param.name for sub in ast.walk(scope) for param in getattr(sub, "type_params", None) or []}


def _unbound_reads(node: ast.AST, above: list[ast.stmt], body_above: list[ast.stmt],
                   lazy_annotations: bool, type_params: set[str]) -> list[tuple[str, ast.AST]]:
    """(name, node reading it) for each global running `node` reads that neither the
    module's statements `above` nor the body's `body_above` may have bound."""
    evaluated = list(splice.evaluated_now(node, lazy_annotations, class_bodies=False))
    # A comprehension's or walrus's own names are bound as it runs.
    stored = {sub.id for sub in evaluated if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store)}
    found = []
    for sub in evaluated:
        name = getattr(sub, "id", None)
        if (isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load)
                and name not in stored and name not in type_params
                and not (name.startswith("__") and name.endswith("__"))   # module dunders
                and name not in vars(builtins) and not splice.binds(above, name, annotated=False)
                and not splice.binds_by_call(above, name)   # `def setup(): global X` ... `setup()`
                # A statement binding it too may do so first: `if x: def f` ... `g = f`.
                and not splice.binds(body_above + [node], name, annotated=False)):
            found.append((name, sub))
    return found


def attribute_reader(tree: ast.Module, class_name: str, attribute: str,
                     through: tuple[str, ...] = ()) -> ast.stmt | None:
    """The first statement below the class that reads `Class.attribute` as the module
    runs (`handler = A.run`, `@A.run` above a def, `getattr(A, "run")`), or reads it
    through a name in `through` (the module's subclasses having it from the class alone,
    `handler = Sub.run`, dotted for a nested one, `Outer.Inner.run`): without that
    attribute, an AttributeError as the module is imported, unless the read is guarded
    (try, hasattr), which this does not judge.
    Function bodies do not run then, but for the module's own functions it calls as it
    runs (see _reads)."""
    classdef = splice.class_statement(tree, class_name)
    lazy_annotations = bool(future_flags(tree) & __future__.annotations.compiler_flag)
    wanted = _reads_of(attribute, {class_name, *through})
    below, functions = splice.statements_below(tree, classdef), _functions(tree)
    reader = next((node for node in below if _reads(node, wanted, lazy_annotations, functions)), None)
    # The innermost statement, as quoted: `h = A.run`, not the `try:` around it.
    while reader is not None and not isinstance(reader, (ast.FunctionDef, ast.AsyncFunctionDef)):
        inner = next((sub for sub in splice.child_statements(reader)
                      if _reads(sub, wanted, lazy_annotations, functions)), None)
        if inner is None:
            break
        reader = inner
    return reader


def _reads_of(attribute: str, names: set[str], deleted: bool = False):
    """A test of a node: whether it reads `attribute` of a class spelled as one of `names`
    (with `deleted`, whether it deletes it: `del A.run`)."""
    def wanted(sub):
        if deleted and not _deletes_attribute(sub):
            return False
        read = _attribute_read(sub)
        # A nested subclass is read through its enclosing class: `Outer.Inner.run`.
        spelled = None if read is None else splice.dotted_names(read[0])
        return (read is not None and read[1] == attribute and spelled is not None
                and ".".join(spelled) in names)
    return wanted


def unguarded_attribute_reader(tree: ast.Module, class_name: str, attribute: str,
                               through: tuple[str, ...] = (), deleted: bool = False) -> ast.stmt | None:
    """The first statement below the class that surely runs as the module is imported,
    no handler or `suppress` catching AttributeError around it (surely_run), and reads
    `Class.attribute` (or through `through`, as attribute_reader does) itself, not in a
    part of an expression that may not run (`A.run if hasattr(A, "run") else None`,
    `hasattr(A, "run") and A.run`, a comprehension's element): without that attribute
    the module surely fails to import, AttributeError. A read under an `if`, or in a
    function the module calls, is not told sure (attribute_reader finds it); nor one
    below a top-level statement that may set the attribute (`Job.run = other`,
    `setattr(Job, "run", other)`, in a block too), giving the class it anew, or that
    calls, below its def, a function of the module that sets it so (`def install():
    Job.run = other` ... `install()`; one call deep, as binds_by_call follows names). With
    `deleted`, only a `del A.run`: it fails where the class has it from a base alone too."""
    classdef = splice.class_statement(tree, class_name)
    if classdef is None:
        return None
    names = {class_name, *through}
    installers = [node for _, node in splice.defs_in_blocks(tree.body) if isinstance(node, ast.FunctionDef)
                  and any(_sets_attribute(statement, attribute, names)
                          for statement in splice.statements_within(node.body))]
    setters = [statement for statement in splice.statements_within(tree.body)
               if statement.lineno > classdef.end_lineno and (
                   _sets_attribute(statement, attribute, names) or _calls_below(statement, installers))]
    return next((reader for reader in _sure_reads(tree, _reads_of(attribute, names, deleted), AttributeError,
                                                  after=classdef.end_lineno, name_read=_first_name_read)
                 if not any(_written_above(setter, reader) for setter in setters)), None)


def _sets_attribute(statement: ast.stmt, attribute: str, names: set[str]) -> bool:
    """Whether the statement itself (not its blocks) sets `attribute` of a class spelled
    as one of `names`: `Job.run = f`, `Job.run: T = f`, `setattr(Job, "run", f)`."""
    for sub in splice.evaluated_now(statement, class_bodies=False, blocks=False):
        if isinstance(sub, ast.Attribute) and isinstance(sub.ctx, ast.Store):
            target, name = sub.value, sub.attr
        elif _called(sub, ("setattr",)) and len(sub.args) == 3 and isinstance(sub.args[1], ast.Constant):
            target, name = sub.args[0], sub.args[1].value
        else:
            continue
        spelled = splice.dotted_names(target)
        if name == attribute and spelled is not None and ".".join(spelled) in names:
            return True
    return False


def _calls_below(statement: ast.stmt, functions: list[ast.FunctionDef]) -> bool:
    """Whether the statement itself (not its blocks) calls one of `functions` by its name
    below its def (`install()`, `@install` above a def): it has been made by then."""
    return any(name == function.name and sub.lineno > function.end_lineno
               for sub in splice.evaluated_now(statement, class_bodies=False, blocks=False)
               for name in _names_called(sub) for function in functions)


def _written_above(statement: ast.stmt, below: ast.stmt) -> bool:
    """Whether `statement` ends before `below` starts: it has run when `below` runs, if it runs."""
    return (statement.end_lineno, statement.end_col_offset) <= (below.lineno, below.col_offset)


def _first_name_read(node: ast.AST) -> str | None:
    """The name an attribute read starts from: `Job` of `Job.run`, `Outer` of `Outer.Inner.run`."""
    read = _attribute_read(node)
    spelled = None if read is None else splice.dotted_names(read[0])
    return spelled[0] if spelled else None


def sure_import_readers(tree: ast.Module, name: str) -> list[ast.stmt]:
    """The statements that surely run as the module is imported, no handler catching
    NameError around them (surely_run), and read the global `name` that nothing at its
    top level binds any more (as import_readers tells) themselves, not in a part of an
    expression that may not run: with it gone, the module surely fails to import. A read
    under an `if` (a branch that may not run) is import_readers' alone. A builtin's name
    (a class `property` shadowing it) then reads the builtin: no NameError. Nor is a
    name one of its functions it calls binds as a global (`def setup(): global Hook`).
    A `del` of the name counts as a read: it fails alike (`del def_op, jabs_op`)."""
    if (name in vars(builtins) or splice.binds(tree.body, name, augmented=False, handled=False, annotated=False)
            or splice.binds_by_call(tree.body, name)):
        return []
    return _sure_reads(tree, lambda sub: _name_read(sub) == name, NameError, name_read=_name_read)


def _sure_reads(tree: ast.Module, wanted, failure: type[BaseException], after: int = 0,
                name_read=None) -> list[ast.stmt]:
    """The statements below line `after` that surely run (surely_run, `failure` uncaught)
    and evaluate, as parts of their own, a node `wanted` picks that no expression around
    it may skip (_maybe_evaluated). `name_read`: the name such a node reads (`Job` of
    `Job.run`); a read is not sure where that name may be bound otherwise above it, below
    line `after` (`Job = Other`), or in the class body it runs in (`Hook = 1` above `x = Hook`)."""
    lazy_annotations = bool(future_flags(tree) & __future__.annotations.compiler_flag)
    scopes = _class_scopes(tree.body)
    found = []
    for statement in surely_run(tree.body, failure=failure):
        if statement.lineno <= after:
            continue
        maybe = _maybe_evaluated(statement)
        # Its own parts: the statements in its blocks, a class's body, are yielded apart.
        if any(wanted(sub) and id(sub) not in maybe
               and not (name_read is not None and _bound_above(tree, scopes, statement, name_read(sub), after))
               for sub in splice.evaluated_now(statement, lazy_annotations, class_bodies=False, blocks=False)):
            found.append(statement)
    return found


def _class_scopes(body: list[ast.stmt], scope: ast.ClassDef | None = None,
                  scopes: dict | None = None) -> dict[int, ast.ClassDef]:
    """The id of each statement run in a class body (in its blocks too) -> that class:
    the namespace its reads look in before the module's."""
    scopes = {} if scopes is None else scopes
    for node in body:
        if scope is not None:
            scopes[id(node)] = scope
        if isinstance(node, ast.ClassDef):
            _class_scopes(node.body, node, scopes)
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            _class_scopes(splice.child_statements(node), scope, scopes)
    return scopes


def _bound_above(tree: ast.Module, scopes: dict[int, ast.ClassDef], statement: ast.stmt,
                 name: str | None, after: int) -> bool:
    """Whether `name` may be bound before `statement` runs, other than by what its read
    is after: in the class body it runs in, or at the module's top level below line `after`."""
    if name is None:
        return False
    scope = scopes.get(id(statement))
    if scope is not None and splice.binds(list(_written_before(scope.body, statement)), name, handled=False,
                                          annotated=False):
        return True
    # Not a class statement: one there makes the subclass read through (`class Sub(Job)`).
    return splice.binds([node for node in _written_before(tree.body, statement)
                         if node.lineno > after and not isinstance(node, ast.ClassDef)], name, handled=False,
                        annotated=False)


def _written_before(body: list[ast.stmt], statement: ast.stmt):
    """The statements of the scope of `body`, in its blocks too, written before
    `statement`, and the targets of a `with` holding it; not into a def or class holding
    it: its body is a namespace of its own."""
    start = (statement.lineno, statement.col_offset)
    for node in body:
        if node is statement or (node.lineno, node.col_offset) >= start:
            return
        if (node.end_lineno, node.end_col_offset) <= start:
            yield node
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return
        if isinstance(node, (ast.With, ast.AsyncWith)):
            yield from (item.optional_vars for item in node.items if item.optional_vars is not None)
        yield from _written_before(splice.child_statements(node), statement)
        return


def _maybe_evaluated(statement: ast.stmt) -> set[int]:
    """The ids of the nodes of `statement` an expression around them may not evaluate: a
    conditional expression's branches, a boolean operation's operands after its first, a
    chained comparison's operands after its second (`0 < x < A.run`), an `assert`'s
    message (evaluated only when it fails), a comprehension's all but its first iterable,
    an `except` clause's class (evaluated only when its `try` body raises), a `match`'s
    guards and patterns but what its first case tests first (_pattern_maybe)."""
    maybe = set()
    for node in ast.walk(statement):
        if isinstance(node, ast.IfExp):
            parts = [node.body, node.orelse]
        elif isinstance(node, ast.BoolOp):
            parts = node.values[1:]
        elif isinstance(node, ast.Compare):
            parts = node.comparators[1:]
        elif isinstance(node, ast.Assert):
            parts = [node.msg] if node.msg is not None else []
        elif isinstance(node, ast.ExceptHandler):
            parts = [node.type] if node.type is not None else []
        elif isinstance(node, ast.Match):
            parts = [case.guard for case in node.cases if case.guard is not None]
            parts += [case.pattern for case in node.cases[1:]] + _pattern_maybe(node.cases[0].pattern)
        elif isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            first = node.generators[0].iter
            # Its element and its generators' parts, not the generators whole: walking
            # one would take in the first iterable too, which is evaluated surely.
            parts = [child for child in ast.iter_child_nodes(node) if not isinstance(child, ast.comprehension)]
            parts += [child for generator in node.generators for child in ast.iter_child_nodes(generator)
                      if child is not first]
        else:
            continue
        maybe.update(id(sub) for part in parts for sub in ast.walk(part))
    return maybe


def _pattern_maybe(pattern: ast.pattern) -> list[ast.AST]:
    """The parts of a `case` pattern that matching it may not evaluate: all but a class
    pattern's class (`case Hook():`), a value pattern's value (`case Hook.RED:`), or
    those of the first of several alternatives, which are evaluated before anything is
    tested; a sequence or mapping pattern's parts are evaluated only once the subject
    is found one."""
    if isinstance(pattern, ast.MatchClass):
        return pattern.patterns + pattern.kwd_patterns
    if isinstance(pattern, ast.MatchValue):
        return []
    if isinstance(pattern, ast.MatchAs):
        return [] if pattern.pattern is None else _pattern_maybe(pattern.pattern)
    if isinstance(pattern, ast.MatchOr):
        return _pattern_maybe(pattern.patterns[0]) + pattern.patterns[1:]
    return list(ast.iter_child_nodes(pattern))


def reads_attribute(tree: ast.Module, attributes: set[str]) -> bool:
    """Whether running the module reads an attribute of one of those names, of anything
    (`LIMIT = Job.limit`, `handler = jobs.Job.run`, `getattr(Job, "limit")`), as it is
    imported: which object's is not told from the source, so only a re-import says
    whether it fails. Function bodies do not run then, but for the module's own functions
    it calls as it runs (see _reads)."""
    lazy_annotations = bool(future_flags(tree) & __future__.annotations.compiler_flag)

    def wanted(sub):
        read = _attribute_read(sub)
        return read is not None and read[1] in attributes
    functions = _functions(tree)
    return any(_reads(node, wanted, lazy_annotations, functions) for node in tree.body)


def _attribute_read(node: ast.AST) -> tuple[ast.expr, str] | None:
    """(the object, the name) when `node` reads an attribute: `obj.name`, or
    `getattr(obj, "name")` with a literal name and no default (with one, a missing
    attribute is no error); `del obj.name`, `delattr(obj, "name")` and `obj.name += x`
    too (a missing attribute is an AttributeError there as well). None otherwise."""
    if isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Load, ast.Del)):
        return node.value, node.attr
    if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Attribute):
        return node.target.value, node.target.attr
    if (_called(node, ("getattr", "delattr")) and len(node.args) == 2 and not node.keywords
            and not isinstance(node.args[0], ast.Starred)
            and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)):
        return node.args[0], node.args[1].value
    return None


def _deletes_attribute(node: ast.AST) -> bool:
    """Whether `node` deletes an attribute (`del obj.name`, `delattr(obj, ...)`): from the
    object's own namespace, which a base's attribute of that name does not serve."""
    return (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Del)) or _called(node, ("delattr",))


def _called(node: ast.AST, names: tuple[str, ...]) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names


def _reads(node: ast.AST, wanted, lazy_annotations: bool, functions: dict | None = None) -> bool:
    """Whether running `node` at the module's top level evaluates a node `wanted` picks;
    with `functions` (_functions), in the body of one it calls by that name too (`X =
    pick()`, `@register` above a def): one level deep, not what that body calls in turn,
    nor a function of another module or a method."""
    return any(wanted(sub) or (functions and any(
        _body_reads(function, wanted, lazy_annotations)
        for name in _names_called(sub) for function in functions.get(name, ())))
        for sub in splice.evaluated_now(node, lazy_annotations))


def _body_reads(function: ast.FunctionDef, wanted, lazy_annotations: bool) -> bool:
    """Whether calling `function` evaluates a node `wanted` picks (not in what it calls)."""
    return any(wanted(sub) for statement in function.body
               for sub in splice.evaluated_now(statement, lazy_annotations))


def _functions(tree: ast.Module) -> dict[str, list[ast.FunctionDef]]:
    """The module's defs (at its top level or in a module-level block) whose body runs
    when they are called, by name: not an async def's, nor a generator's. A class's
    `__new__` and `__init__` by its name: calling it runs them (`_cache = TimeRE()` with
    `def __init__(self): self.locale = LocaleTime()`, _strptime); a dataclass's
    `__post_init__` too, which its generated `__init__` calls; those it writes none of
    from its bases of the module (`class Cache(Base)`, by name)."""
    functions = {}
    classes = {node.name: node for node in splice.module_level_classes(tree)}
    for _, node in splice.defs_in_blocks(tree.body):
        defs = _run_by_calling(node, classes) if isinstance(node, ast.ClassDef) else [node]
        for function in defs:
            if isinstance(function, ast.FunctionDef) and not any(
                    isinstance(sub, (ast.Yield, ast.YieldFrom))
                    for statement in function.body for sub in splice.evaluated_now(statement)):
                functions.setdefault(node.name, []).append(function)
    return functions


def _run_by_calling(classdef: ast.ClassDef, classes: dict[str, ast.ClassDef]) -> list[ast.FunctionDef]:
    """The defs calling the class runs: its `__new__` and `__init__`, and a dataclass's
    `__post_init__` (told by its decorator's name alone: `@dataclass`,
    `@dataclasses.dataclass(frozen=True)`); one it writes not, from its bases among the
    module's `classes` (named plainly), as far up as they go. A dataclass writes its
    `__init__` itself: a base's does not run."""
    dataclass = any((splice.dotted_names(decorator.func if isinstance(decorator, ast.Call) else decorator)
                     or [None])[-1] == "dataclass" for decorator in classdef.decorator_list)
    wanted = {"__new__", "__init__", "__post_init__"} if dataclass else {"__new__", "__init__"}
    found, seen, todo = [], set(), [classdef]
    while todo and wanted:
        node = todo.pop(0)
        if id(node) in seen:   # `class C(C)` rebinding a name: no loop
            continue
        seen.add(id(node))
        own = [sub for sub in node.body if isinstance(sub, ast.FunctionDef) and sub.name in wanted]
        found += own
        wanted -= {sub.name for sub in own} | ({"__init__"} if node is classdef and dataclass else set())
        todo += [classes[base.id] for base in node.bases if isinstance(base, ast.Name) and base.id in classes]
    return found


def _names_called(node: ast.AST) -> list[str]:
    """The names `node` calls as it runs: a call's (`f()`), a def's or class's decorators'
    (`@f`)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return [node.func.id]
    decorators = getattr(node, "decorator_list", [])
    return [decorator.id for decorator in decorators if isinstance(decorator, ast.Name)]


def all_naming(tree: ast.Module, name: str) -> ast.stmt | None:
    """The first statement of the module that puts `name` in its `__all__` as a string
    literal (`__all__ = ["Hook"]`, `__all__ += ("Hook",)`, `__all__.append("Hook")`), at
    its top level or in its blocks: with `name` gone, `from module import *` fails
    (AttributeError). A computed `__all__` is not told, nor a string it leaves out
    (`[n for n in dir() if n not in ("Hook",)]`), nor one a statement below may take out
    again (`__all__.remove("Hook")`, `__all__ = ["Other"]`, in a block too)."""
    statements = splice.statements_within(tree.body)
    for index, node in enumerate(statements):
        if any(isinstance(element, ast.Constant) and element.value == name for element in _put_in_all(node)) \
                and not any(_may_take_from_all(later, name) for later in statements[index + 1:]):
            return node
    return None


# The augmented assignments adding to `__all__`: `+=` of a list or tuple, `|=` of a set.
_ADDING = (ast.Add, ast.BitOr)
# What leaves every name `__all__` holds in it: the methods _put_in_all reads, and reads.
_KEEPING_ALL = frozenset({"append", "extend", "insert", "index", "count", "copy", "sort", "reverse"})


def _may_take_from_all(node: ast.stmt, name: str) -> bool:
    """Whether the statement itself (not its blocks) may leave `__all__` without a name it
    holds: binds it anew without `name` (`__all__ = ["Other"]`), deletes it, deletes from
    it or sets part of it (`del __all__[0]`, `__all__[:] = ...`), an augmented assignment
    but `+=` or `|=` (`__all__ -= {"Hook"}`), or a call of one of its methods but those
    that add or read (`__all__.remove("Hook")`)."""
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        method = splice.dotted_names(node.value.func)
        return method is not None and len(method) == 2 and method[0] == "__all__" and method[1] not in _KEEPING_ALL
    if isinstance(node, ast.AugAssign):
        return isinstance(node.target, ast.Name) and node.target.id == "__all__" and not isinstance(node.op, _ADDING)
    targets = (node.targets if isinstance(node, (ast.Assign, ast.Delete))
               else [node.target] if isinstance(node, ast.AnnAssign) and node.value is not None else [])
    for target in targets:
        for sub in ast.walk(target):
            if isinstance(sub, ast.Name) and sub.id == "__all__" and not isinstance(sub.ctx, ast.Load):
                return isinstance(node, ast.Delete) or not (_keeps_all(node.value) or any(
                    isinstance(element, ast.Constant) and element.value == name for element in _put_in_all(node)))
            if isinstance(sub, ast.Subscript) and isinstance(sub.value, ast.Name) and sub.value.id == "__all__":
                return True
    return False


def _put_in_all(node: ast.stmt) -> list[ast.expr]:
    """The elements the statement puts in `__all__` as written: those of the list, tuple
    or set literals it binds it to or adds (`+`, `+=`, `extend`), and what `append` or
    `insert` adds."""
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        call = node.value
        method = splice.dotted_names(call.func)
        if method in (["__all__", "append"], ["__all__", "insert"]) and call.args:
            return [call.args[-1]]
        return _listed(call.args[0]) if method == ["__all__", "extend"] and call.args else []
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, ast.AnnAssign) or (isinstance(node, ast.AugAssign) and isinstance(node.op, _ADDING)):
        targets = [node.target]
    else:
        return []
    named = any(isinstance(target, ast.Name) and target.id == "__all__" for target in targets)
    return _listed(node.value) if named and node.value is not None else []


# The builtins that hand back every element of what they are given, as a new list or tuple.
_COPYING = frozenset({"list", "tuple", "sorted"})


def _keeps_all(value: ast.expr) -> bool:
    """Whether the value holds every name `__all__` holds: it with more added
    (`__all__ + ["Other"]`), or copied (`sorted(__all__)`, `list(__all__) + ["Other"]`)."""
    while True:
        if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
            value = value.left
        elif (isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in _COPYING
              and len(value.args) == 1 and not isinstance(value.args[0], ast.Starred)):
            value = value.args[0]
        else:
            return isinstance(value, ast.Name) and value.id == "__all__"


def _listed(value: ast.expr) -> list[ast.expr]:
    """The elements of a list, tuple or set literal, or of those a `+` joins."""
    if isinstance(value, (ast.List, ast.Tuple, ast.Set)):
        return value.elts
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
        return _listed(value.left) + _listed(value.right)
    return []
