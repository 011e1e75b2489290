"""live.needed_on_import, attribute_reader and reads_attribute: what running a module
still reads; the dataclass basis; and members set on a live class as its body binds them."""

import ast
import dataclasses
import enum
import sys
import types
from pathlib import Path

import pytest

from gsmcpd.image import live
from gsmcpd.image.live import attribute_reader, needed_on_import
from gsmcpd.worker.toolset import ToolError


@pytest.mark.parametrize("source, needed", [
    ("class B(A):\n    pass\n", True),
    ("class B(metaclass=A):\n    pass\n", True),
    ("@A\ndef f():\n    pass\n", True),
    ("def f(x=A()):\n    pass\n", True),
    ("def f(x: A):\n    pass\n", True),
    ("class C:\n    x: A = 1\n", True),
    ("class C:\n    def m(self, d=A):\n        pass\n", True),
    ("X = [A for _ in range(1)]\n", True),
    ("def f():\n    return A\n", False),                      # runs when called
    ("f = lambda: A\n", False),
    ("class C:\n    def m(self):\n        return A\n", False),
    ("from __future__ import annotations\ndef f(x: A):\n    pass\n", False),
    ("from __future__ import annotations\nclass C:\n    x: A = 1\n", False),
    ("from m import A\nclass B(A):\n    pass\n", False),        # bound otherwise
    ("if X:\n    from m import A\nclass B(A):\n    pass\n", False),
    ("A = object\nclass B(A):\n    pass\n", False),
    ("from m import *\nclass B(A):\n    pass\n", False),
    # Names bound in a scope of their own are not the module's.
    ("class B(A):\n    pass\nxs = [A for A in range(3)]\n", True),
    ("class B(A):\n    pass\nxs = {A: 1 for A in range(3)}\n", True),
    ("class B(A):\n    pass\nf = lambda A=1: A\n", True),
    ("if X:\n    def f():\n        A = 1\nclass B(A):\n    pass\n", True),
    ("try:\n    class C:\n        A = 1\nexcept E:\n    pass\nclass B(A):\n    pass\n", True),
    ("if X:\n    def A():\n        pass\nclass B(A):\n    pass\n", False),
    ("for A in []:\n    pass\nclass B(A):\n    pass\n", False),
    # A comprehension's own `A` is no read of the module's; its first iterable is.
    ("xs = [A for A in range(3)]\n", False),
    ("xs = {A: A for A in range(3)}\n", False),
    ("xs = [B for A in range(3) for B in A]\n", False),
    ("xs = [A for A in A.items]\n", True),
    ("xs = [[A for A in range(2)] for _ in A]\n", True),
    # `A += x` reads A before it binds it, `del A` deletes it: both NameError when A is gone.
    ("A += X\n", True),
    ("if X:\n    A += Y\n", True),
    ("del A\n", True),
    ("A = X\nA += Y\n", False),
    # Calling a class of the module runs its __new__ and __init__ (_strptime's `TimeRE()`).
    ("class C:\n    def __init__(self):\n        self.a = A()\nX = C()\n", True),
    ("class C:\n    def __new__(cls):\n        return A\nX = C()\n", True),
    ("class C:\n    def other(self):\n        return A\nX = C()\n", False),
    ("class C:\n    def __init__(self):\n        self.a = A()\n", False),
    # A dataclass's generated __init__ calls its __post_init__; a plain class's does not.
    ("from dataclasses import dataclass\n@dataclass\nclass C:\n    def __post_init__(self):\n"
     "        self.a = A()\nX = C()\n", True),
    ("import dataclasses\n@dataclasses.dataclass(frozen=True)\nclass C:\n    def __post_init__(self):\n"
     "        self.a = A()\nX = C()\n", True),
    ("class C:\n    def __post_init__(self):\n        self.a = A()\nX = C()\n", False),
    # A subclass of the module's that writes none runs its base's __init__.
    ("class B:\n    def __init__(self):\n        self.a = A()\nclass C(B):\n    pass\nX = C()\n", True),
    ("class B:\n    def __init__(self):\n        self.a = A()\nclass C(B):\n    def __init__(self):\n"
     "        pass\nX = C()\n", False),
    ("class C(C):\n    pass\nX = C()\n", False),
    # A dataclass's generated __init__ replaces its base's; its base's __post_init__ runs.
    ("from dataclasses import dataclass\nclass B:\n    def __init__(self):\n        self.a = A()\n"
     "@dataclass\nclass C(B):\n    pass\nX = C()\n", False),
    ("from dataclasses import dataclass\nclass B:\n    def __post_init__(self):\n        self.a = A()\n"
     "@dataclass\nclass C(B):\n    pass\nX = C()\n", True),
])
def test_needed_on_import(source, needed):
    assert needed_on_import(ast.parse(source), "A") is needed


@pytest.mark.parametrize("below, line", [
    ("handler = A.run\n", 4),
    ("@A.run\ndef f():\n    pass\n", 5),
    ("def f(x=A.run):\n    pass\n", 4),
    ("if X:\n    class B:\n        h = A.run\n", 6),                 # the innermost statement
    ("@A.run\ndef f():\n    h = A.run\n", 5),
    ("try:\n    import x\nexcept ImportError:\n    h = A.run\n", 7),   # in a handler: not `try:`
    ("try:\n    import x\nexcept* ImportError:\n    h = A.run\n", 7),
    ("match X:\n    case 1:\n        pass\n    case _:\n        h = A.run\n", 8),   # in a case
    ("with X:\n    h = A.run\n", 5),
    ("while X:\n    pass\nelse:\n    h = A.run\n", 7),
    ("def f():\n    return A.run\n", None),                   # runs when called
    ("f = lambda: A.run\n", None),
    ("A.run = print\n", None),
    ("handler = A.other\n", None),
    ("handler = getattr(A, 'run')\n", 4),                     # a literal name: A.run
    ("handler = getattr(A, 'run', None)\n", None),            # a default: no error
    ("handler = getattr(A, 'other')\n", None),
    ("handler = getattr(B, 'run')\n", None),
    # A function of the module called as it runs: its body runs then (one level deep).
    ("def pick():\n    return A.run\n\n\nhandler = pick()\n", 8),
    ("def pick():\n    return A.run\n\n\nclass B:\n    h = pick()\n", 9),
    ("def deco(f):\n    A.run\n    return f\n\n\n@deco\ndef g():\n    pass\n", 10),
    ("def pick():\n    return A.run\n\n\nhandler = pick\n", None),          # not called
    ("def pick():\n    yield A.run\n\n\nhandler = pick()\n", None),         # a generator
    ("async def pick():\n    return A.run\n\n\nhandler = pick()\n", None),   # a coroutine
    ("def pick():\n    def inner():\n        return A.run\n    return inner\n\n\nh = pick()\n", None),
    ("def pick():\n    return A.run\n\n\ndef outer():\n    return pick()\n\n\nh = outer()\n", None),
])
def test_attribute_reader(below, line):
    tree = ast.parse("class A:\n    pass\n\n" + below)
    reader = attribute_reader(tree, "A", "run")
    assert (reader and reader.lineno) == line


@pytest.mark.parametrize("below, line", [
    ("handler = Sub.run\n", 8),
    ("handler = getattr(Sub, 'run')\n", 8),
    ("handler = Other.run\n", None),
])
def test_attribute_reader_through_a_subclass_having_it_from_the_class(below, line):
    # `Sub.run` is A's run: a read through it failed as the module ran, unnoted.
    tree = ast.parse("class A:\n    pass\n\n\nclass Sub(A):\n    pass\n\n" + below)
    reader = attribute_reader(tree, "A", "run", through=("Sub",))
    assert (reader and reader.lineno) == line


@pytest.mark.parametrize("source, line", [
    ("try:\n    class A:\n        pass\nfinally:\n    h = A.run\n", 5),
    ("try:\n    class A:\n        pass\nexcept E:\n    pass\nelse:\n    h = A.run\n", 7),
    ("try:\n    import x\nexcept E:\n    class A:\n        pass\nfinally:\n    h = A.run\n", 7),
    ("try:\n    pass\nexcept E:\n    pass\nelse:\n    class A:\n        pass\nfinally:\n    h = A.run\n", 9),
    ("try:\n    if X:\n        class A:\n            pass\n    h = A.run\nexcept E:\n    pass\n", 5),
    ("for _ in []:\n    class A:\n        pass\nelse:\n    h = A.run\n", 5),
    ("while X:\n    class A:\n        pass\n    X = 0\nelse:\n    h = A.run\n", 6),
    # What runs only when the class's own clause did not, or failed: not after it.
    ("if X:\n    class A:\n        pass\nelse:\n    h = A.run\n", None),
    ("try:\n    import x\nexcept E:\n    class A:\n        pass\nelse:\n    h = A.run\n", None),
    ("try:\n    class A:\n        pass\nexcept E:\n    h = A.run\n", None),
])
def test_attribute_reader_of_a_class_in_a_block_looks_at_the_clauses_that_run_after_it(source, line):
    # Only the statements after the class in its own block and at the top level were looked
    # at: a read in the try's `finally` or `else`, or in the try's body below an `if`
    # holding the class, was not noted, and a new session's import failed unannounced.
    reader = attribute_reader(ast.parse(source), "A", "run")
    assert (reader and reader.lineno) == line


@pytest.mark.parametrize("source, reads", [
    ("LIMIT = Job.limit\n", True),
    ("LIMIT = jobs.Job.limit\n", True),
    ("LIMIT = getattr(Job, 'limit')\n", True),
    ("LIMIT = getattr(Job, 'limit', 3)\n", False),
    ("LIMIT = getattr(Job, name)\n", False),
    ("def f():\n    return Job.limit\n", False),             # runs when called
    ("def f():\n    return Job.limit\n\n\nLIMIT = f()\n", True),
    ("if X:\n    def f():\n        return Job.limit\nLIMIT = f()\n", True),
    ("from m import f\nLIMIT = f()\n", False),                 # another module's: not followed
])
def test_reads_attribute(source, reads):
    assert live.reads_attribute(ast.parse(source), {"limit"}) is reads


def test_a_dataclass_basis_changes_with_fields_post_init_or_frozen_and_runs_no_user_eq():
    import dataclasses

    class Loud:
        def __eq__(self, other):
            raise AssertionError("user code ran")

        __hash__ = object.__hash__     # (an unhashable default is refused as mutable)

    def make(extra="", frozen=False, default=0):
        namespace = {"dataclasses": dataclasses, "default": default}
        exec(f"@dataclasses.dataclass(frozen={frozen})\nclass A:\n    x: int = default\n"
             f"    t: tuple = (1, 'a')\n{extra}", namespace)
        return live.dataclass_basis(namespace["A"])

    same = live.same_dataclass_basis
    assert same(make(), make())                     # made again from the same text
    assert not same(make(), make("    y: int = 1\n"))
    assert not same(make(), make("    def __post_init__(self):\n        pass\n"))
    assert not same(make(), make(frozen=True))
    assert not same(make(), make(default=1))
    assert not same(make(default=Loud()), make(default=Loud()))   # not compared: counted changed
    assert live.dataclass_basis(int) == ([], False, None)
    # What alone can leave a subclass unmakeable: a __post_init__ cannot.
    alike = live.same_fields_and_frozen
    assert alike(make(), make("    def __post_init__(self):\n        pass\n"))
    assert not alike(make(), make("    y: int = 1\n"))
    assert not alike(make(), make(frozen=True))
    assert not alike(make(), make(default=1))


def test_basis_changes_names_what_a_dataclass_was_made_from_before():
    fields = live.dataclass_basis(int)[0]
    assert live.basis_changes(([], False, False), ([], False, True)) == ["frozen=False"]
    assert live.basis_changes(([], False, None), ([], True, None)) == ["no __post_init__"]
    assert live.basis_changes((fields, True, True), (fields, False, True)) == ["a __post_init__"]


def _dataclasses(source):
    import dataclasses
    namespace = {"dataclasses": dataclasses}
    exec("import dataclasses\n" + source, namespace)
    return namespace


@pytest.mark.parametrize("base, sub, conflict", [
    ("(frozen=True)", "", "cannot inherit non-frozen dataclass from a frozen one"),
    ("", "(frozen=True)", "cannot inherit frozen dataclass from a non-frozen one"),
    ("", "", None),
    ("(frozen=True)", "(frozen=True)", None),
])
def test_frozen_conflict_is_what_the_dataclass_decorator_would_raise_on_the_bases_as_they_are(base, sub, conflict):
    # Made with agreeing bases, then the base swapped for one of the other frozen-ness:
    # what a base's frozen change compiled in place leaves.
    agreeing = "(frozen=True)" if sub else ""
    namespace = _dataclasses(f"@dataclasses.dataclass{agreeing}\nclass A:\n    x: int = 0\n\n\n"
                             f"@dataclasses.dataclass{sub}\nclass B(A):\n    y: int = 1\n")
    changed = _dataclasses(f"@dataclasses.dataclass{base}\nclass A:\n    x: int = 0\n")["A"]
    B = namespace["B"]
    B.__bases__[0].__dataclass_params__ = changed.__dataclass_params__
    assert live.frozen_conflict(B) == conflict
    assert live.frozen_conflict(int) is None
    made_anew = (f"@dataclasses.dataclass{base}\nclass A:\n    x: int = 0\n\n\n"
                 f"@dataclasses.dataclass{sub}\nclass B(A):\n    y: int = 1\n")
    if conflict:       # as the decorator itself says it
        with pytest.raises(TypeError, match=conflict):
            _dataclasses(made_anew)
    else:
        _dataclasses(made_anew)


@pytest.mark.parametrize("base, sub, decorator", [
    ("    x: int = 0\n", "    y: int\n", ""),                                     # given a default
    ("    x: int\n    z: int = 0\n", "    y: int\n", ""),                         # a new field with one
    ("    x: int = 0\n", "    y: int = 1\n", ""),
    ("    x: int = 0\n", "    y: int = dataclasses.field(kw_only=True)\n", ""),   # not positional
    ("    x: int = 0\n", "    _: dataclasses.KW_ONLY\n    y: int\n", ""),
    ("    x: int = 0\n", "    y: dataclasses.InitVar[int]\n", ""),                # a parameter too
    ("    x: int = 0\n", "    y: typing.ClassVar[int]\n", ""),                    # none
    ("    x: int = 0\n", "    x: int\n", ""),                                     # in x's place
    ("    x: int = dataclasses.field(default=0, init=False)\n", "    y: int\n", ""),
    ("    x: int = 0\n", "    y: int\n", "(init=False)"),                         # no __init__ made
])
def test_field_order_conflict_is_what_the_decorator_would_raise_on_the_bases_as_they_are(base, sub, decorator):
    # A base's field given a default, compiled in place: a subclass's field without one
    # then follows it, and a new session's import of its module fails.
    namespace = _dataclasses(f"import typing\n@dataclasses.dataclass\nclass A:\n    x: int\n\n\n"
                             f"@dataclasses.dataclass{decorator}\nclass B(A):\n{sub}")
    changed = _dataclasses(f"@dataclasses.dataclass\nclass A:\n{base}")["A"]
    B = namespace["B"]
    A = B.__bases__[0]   # as compile_class_definition's in-place update leaves it
    A.__dataclass_fields__, A.__annotations__ = changed.__dataclass_fields__, changed.__annotations__
    try:   # what the decorator itself says, the class made anew on the changed base
        _dataclasses(f"import typing\n@dataclasses.dataclass\nclass A:\n{base}\n\n"
                     f"@dataclasses.dataclass{decorator}\nclass B(A):\n{sub}")
        expected = None
    except TypeError as error:
        expected = str(error)
    assert live.field_order_conflict(B) == expected
    assert live.field_order_conflict(int) is None


@pytest.mark.parametrize("base, sub, expected", [
    ("    x: int = 0\n", "    y: int\n", (("x", "A"), ("y", "B"))),                      # given a default
    ("    x: int\n    w: int\n", "    x: int = 0\n    y: int = 1\n", (("x", "B"), ("w", "A"))),
    ("    x: int = 0\n", "    y: int = dataclasses.field(kw_only=True)\n", None),    # not positional
    ("    x: int = 0\n", "    y: int = 1\n", None),
])
def test_misordered_fields_names_the_defaulted_field_and_the_one_following_it(base, sub, expected):
    # For compile_method's refusal: which field, declared where, follows which.
    B = _dataclasses(f"@dataclasses.dataclass\nclass A:\n    x: int\n\n\n"
                     f"@dataclasses.dataclass\nclass B(A):\n{sub}")["B"]
    changed = _dataclasses(f"@dataclasses.dataclass\nclass A:\n{base}")["A"]
    A = B.__bases__[0]
    A.__dataclass_fields__, A.__annotations__ = changed.__dataclass_fields__, changed.__annotations__
    pair = live.misordered_fields(B)
    named = None if pair is None else tuple((name, owner.__name__) for name, owner in pair)
    assert named == expected
    assert (live.field_order_conflict(B) is None) == (expected is None)


@pytest.mark.parametrize("between, sub, pair", [
    ("    def n(self):\n        return 1\n", "    z: int\n", (("x", "A"), ("z", "C"))),   # no field of its own
    ("    y: int\n", "    z: int\n", (("x", "A"), ("y", "B"))),   # one failing itself anew
    # x declared again without a value: made anew, it takes A's (getattr(B, 'x')).
    ("    x: int\n", "    z: int\n", (("x", "B"), ("z", "C"))),
    ("    def n(self):\n        return 1\n", "    z: int = 2\n", None),
])
def test_field_order_conflict_sees_through_a_base_left_stale_as_a_new_session_does(between, sub, pair):
    # A's x given a default in place: B, between A and C, keeps the fields it was made
    # with (x without one), so C's z seemed to follow no default, while every new session,
    # making B anew first, refused C.
    namespace = _dataclasses("@dataclasses.dataclass\nclass A:\n    x: int\n\n\n"
                             f"@dataclasses.dataclass\nclass B(A):\n{between}\n\n"
                             f"@dataclasses.dataclass\nclass C(B):\n{sub}")
    changed = _dataclasses("@dataclasses.dataclass\nclass A:\n    x: int = 0\n")["A"]
    A, C = namespace["A"], namespace["C"]
    live.update_in_place(A, changed, set())   # as compile_class_definition does
    try:   # what the decorator itself says, all three made anew
        _dataclasses("@dataclasses.dataclass\nclass A:\n    x: int = 0\n\n\n"
                     f"@dataclasses.dataclass\nclass B(A):\n{between}\n\n"
                     f"@dataclasses.dataclass\nclass C(B):\n{sub}")
        expected = None
    except TypeError as error:
        expected = str(error)
    assert live.field_order_conflict(C) == expected
    # Made again here, on B as it is, C is made: a re-import here would not fail.
    assert live.field_order_conflict(C, here=True) is None
    found = live.misordered_fields(C)
    assert (None if found is None else tuple((name, owner.__name__) for name, owner in found)) == pair
    assert (expected is None) == (pair is None)


def test_a_def_bound_as_a_classs_annotations_counts_as_none():
    # A function is not iterable: a plain base's `def __annotations__` (the decorator reads
    # only the class's own) raised TypeError as compile_method's refusal named the misordered
    # fields; so did one bound on a dataclass since, as it was asked whether it is stale.
    namespace = _dataclasses("class Odd:\n    def __annotations__(self):\n        return 1\n\n\n"
                             "@dataclasses.dataclass\nclass A:\n    x: int\n\n\n"
                             "@dataclasses.dataclass\nclass B(Odd, A):\n    y: int\n\n\n"
                             "@dataclasses.dataclass\nclass C(A):\n    pass\n\n\n"
                             "C.__annotations__ = vars(Odd)['__annotations__']\n")
    A, B, C = namespace["A"], namespace["B"], namespace["C"]
    assert live.dataclass_follows_its_bases(C, writes_init=False)
    assert live.field_order_conflict(C) is None
    live.update_in_place(A, _dataclasses("@dataclasses.dataclass\nclass A:\n    x: int = 0\n")["A"], set())
    assert live.field_order_conflict(B).startswith("non-default argument 'y' follows default argument")
    assert [(name, owner.__name__) for name, owner in live.misordered_fields(B)] == [("x", "A"), ("y", "B")]


def test_a_field_declared_without_a_value_loses_the_default_a_base_bound_once_the_base_unbinds_it():
    # Made, `label: str` holds Plain's 3 as its own default, as `label: str = 3` does: told
    # apart by the class statement's unvalued names only, it lost it when Plain lost label.
    source = ("class Plain:\n    label = 3\n\n\n@dataclasses.dataclass\nclass B(Plain):\n"
              "    if True:\n        __kept: int\n    n: int = 0\n    label: str\n    later: int\n"
              "    later = 1\n")
    namespace = _dataclasses(source)
    Plain, B = namespace["Plain"], namespace["B"]
    assert live.unvalued_names(ast.parse(source).body[1]) == {"label", "_B__kept"}
    def unvalued(cls):
        return {"label", "_B__kept"} if cls is B else set()
    assert live.field_order_conflict(B, unvalued=unvalued) is None   # Plain binds it still
    del Plain.label
    assert live.field_order_conflict(B) is None   # as it looks live
    said = live.field_order_conflict(B, unvalued=unvalued)
    assert said is not None and said.startswith("non-default argument 'label' follows default argument")
    assert [(name, owner.__name__) for name, owner in live.misordered_fields(B, unvalued)] == [
        ("n", "B"), ("label", "B")]
    assert live.lost_default(B, "label", unvalued) and not live.lost_default(B, "n", unvalued)


def test_frozen_conflict_sees_through_a_base_left_stale_too():
    # A made frozen in place: B, between A and C, is not made again; C is refused anyway,
    # frozen being each class's own decorator argument, read of every base as it is.
    namespace = _dataclasses("@dataclasses.dataclass\nclass A:\n    x: int = 0\n\n\n"
                             "@dataclasses.dataclass\nclass B(A):\n    pass\n\n\n"
                             "@dataclasses.dataclass\nclass C(B):\n    z: int = 1\n")
    A, C = namespace["A"], namespace["C"]
    live.update_in_place(A, _dataclasses("@dataclasses.dataclass(frozen=True)\nclass A:\n"
                                         "    x: int = 0\n")["A"], set())
    assert live.frozen_conflict(C) == "cannot inherit non-frozen dataclass from a frozen one"


def test_subclasses_of_come_bases_first_then_by_module_and_name_in_every_run():
    # Classes of one MRO length came in set order (by address), which varied between runs.
    base = type("Base", (), {})
    made = [type(f"Sub{n}", (base,), {"__module__": f"mod{n % 2}"}) for n in range(9, -1, -1)]
    deeper = type("Deeper", (made[-1],), {"__module__": "mod0"})
    assert live.subclasses_of(base) == sorted(made, key=lambda c: (c.__module__, c.__name__)) + [deeper]


@pytest.mark.parametrize("missing", ["marker", "field type"])
def test_field_order_is_not_judged_on_a_python_without_the_dataclass_internals_it_reads(monkeypatch, missing):
    # The ClassVar pseudo-field's marker and each Field's kind are dataclasses' private
    # names: where a Python lacks them, no conflict is claimed (AttributeError before).
    B = _dataclasses("@dataclasses.dataclass\nclass A:\n    x: int = 0\n\n\n"
                     "@dataclasses.dataclass\nclass B(A):\n    y: int = 1\n")["B"]
    B.__dataclass_fields__["y"].default = dataclasses.MISSING   # y misordered, as its base changed
    assert (live.field_order_conflict(B), live.misordered_fields(B)) != (None, None)
    if missing == "marker":
        monkeypatch.delattr(dataclasses, "_FIELD_CLASSVAR")
    else:
        del B.__dataclass_fields__["y"]._field_type
    assert (live.field_order_conflict(B), live.misordered_fields(B)) == (None, None)


def _made_again(frozen, bases):
    """The TypeError message the running Python's dataclass decorator raises making a
    dataclass of that `frozen` on `bases`, None if it makes it."""
    try:
        dataclasses.dataclass(frozen=frozen)(type("Again", bases, {}))
    except TypeError as error:
        return str(error)
    return None


@pytest.mark.parametrize("frozen", [True, False])
@pytest.mark.parametrize("bases", [
    ("frozen",), ("thawed",), ("frozen", "frozen"), ("frozen", "thawed"), ("thawed", "frozen"),
    ("thawed", "thawed"), ("mixin on frozen",), ("mixin on thawed",), ("mixin on frozen", "thawed"),
    ("mixin on thawed", "frozen"), ("mixin on frozen", "frozen"), (),
], ids=lambda bases: " + ".join(bases) or "no dataclass base")
def test_frozen_conflict_follows_the_running_pythons_dataclass_decorator(frozen, bases):
    # A frozen dataclass on one frozen and one non-frozen base was told made again without
    # error on Python 3.13, whose decorator refuses it (gh-109409: all must be frozen).
    def base(kind, made_frozen):
        made = dataclasses.dataclass(frozen=made_frozen)(type("Base", (), {}))
        return type("Mixin", (made,), {}) if kind.startswith("mixin") else made

    # Made with bases agreeing with it, then each base's frozen set as `bases` says: what
    # compiling a base with a changed `frozen` in place leaves.
    made = [base(kind, frozen) for kind in bases]
    sub = dataclasses.dataclass(frozen=frozen)(type("Sub", tuple(made), {}))
    for kind, made_base in zip(bases, made):
        changed = dataclasses.dataclass(frozen=kind.endswith("frozen"))(type("Changed", (), {}))
        dataclass_base = made_base.__mro__[1] if kind.startswith("mixin") else made_base
        dataclass_base.__dataclass_params__ = changed.__dataclass_params__
    assert live.frozen_conflict(sub) == _made_again(frozen, sub.__bases__)
    # What to make it instead: the one `frozen` the decorator accepts, None if neither (or
    # both, on no dataclass base) is.
    accepted = {value for value in (True, False) if _made_again(value, sub.__bases__) is None}
    assert {live.agreeing_frozen(sub)} - {None} == (accepted if bases else set())


def test_unfrozen_leftovers_are_the_frozen_dataclass_methods_the_unfrozen_class_lacks():
    frozen = _dataclasses("@dataclasses.dataclass(frozen=True)\nclass A:\n    x: int = 0\n")["A"]
    plain = _dataclasses("@dataclasses.dataclass\nclass A:\n    x: int = 0\n")["A"]
    assert live.unfrozen_leftovers(frozen, plain) == {"__setattr__", "__delattr__"}
    assert live.unfrozen_leftovers(plain, frozen) == set() == live.unfrozen_leftovers(frozen, frozen)


def test_a_dataclass_basis_compares_no_metadata_value_with_user_code():
    # A field's metadata is a mapping of Python's own type, so it was compared with `==`,
    # which ran the __eq__ of the values in it.
    import dataclasses

    compared = []

    class Recorded:
        def __eq__(self, other):
            compared.append(self)
            return True

        __hash__ = object.__hash__

    def make():
        namespace = {"dataclasses": dataclasses, "Recorded": Recorded}
        exec("@dataclasses.dataclass\nclass A:\n    x: int = dataclasses.field(default=0, "
             "metadata={'doc': 'x', 'check': Recorded()})\n", namespace)
        return live.dataclass_basis(namespace["A"])

    assert not live.same_dataclass_basis(make(), make())   # not compared: counted changed
    assert compared == []


def test_a_dataclass_basis_made_again_with_the_same_lambda_factory_is_the_same():
    # A method's compile makes a dataclass again from its text: its `default_factory=lambda: []`
    # is a new function, and every dataclass subclass was named stale (staleSubclasses).
    import dataclasses

    namespace = {"dataclasses": dataclasses}

    def make(factory):
        exec(f"@dataclasses.dataclass\nclass A:\n    x: list = dataclasses.field(default_factory={factory})\n",
             namespace)
        return live.dataclass_basis(namespace["A"])

    same = live.same_dataclass_basis
    assert same(make("lambda: []"), make("lambda: []"))
    assert not same(make("lambda: []"), make("lambda: [0]"))
    assert not same(make("lambda: []"), make("lambda n=1: [n]"))
    assert same(make("lambda n=1: [n]"), make("lambda n=1: [n]"))
    assert not same(make("lambda n=1: [n]"), make("lambda n=2: [n]"))


MASQUERADE = """
class Proxy:
    def __init__(self, spec=None):
        self._spec = spec

    @property
    def __class__(self):
        return type(self) if self._spec is None else self._spec
"""


def made(source, name):
    namespace = {}
    exec(source, namespace)
    return namespace[name]


def test_a_class_body_binding_dunder_class_is_copied_in_place_as_the_body_binds_it():
    # unittest.mock.NonCallableMock's: setattr took the property for the class's own new
    # class (TypeError "__class__ must be set to a class"), the copy stopped half done.
    proxy_class = made(MASQUERADE, "Proxy")
    child_class = type("Child", (proxy_class,), {})
    proxy, child = proxy_class(int), child_class(float)
    assert (proxy.__class__, child.__class__) == (int, float)   # looked up, so cached
    live.update_in_place(proxy_class, made(MASQUERADE.replace("else self._spec", "else str"), "Proxy"),
                         {"__init__", "__class__"})
    assert (proxy.__class__, child.__class__, proxy_class().__class__) == (str, str, proxy_class)
    assert type(proxy_class) is proxy_class.__class__ is type
    evaluated = made(MASQUERADE.replace("else self._spec", "else bytes"), "Proxy")
    live.set_members(proxy_class, {"__class__": vars(evaluated)["__class__"]}, evaluated)
    assert (proxy.__class__, child.__class__) == (bytes, bytes)
    live.remove_member(proxy_class, "__class__")
    assert (proxy.__class__, child.__class__) == (proxy_class, child_class)


def test_a_class_body_binding_dunder_name_or_bases_leaves_the_class_its_own():
    # setattr renamed the class, and rebased it.
    source = "class Q(dict):\n    __name__ = 'alias'\n    __bases__ = ()\n"
    cls = made(source, "Q")
    live.update_in_place(cls, made(source.replace("alias", "other"), "Q"), {"__name__", "__bases__"})
    assert (cls.__name__, cls.__bases__) == ("Q", (dict,))
    assert (vars(cls)["__name__"], vars(cls)["__bases__"]) == ("other", ())


def test_a_docstring_is_still_set_as_type_sets_it():
    cls = made("class D:\n    'old'\n", "D")
    live.update_in_place(cls, made("class D:\n    'new'\n", "D"), {"__doc__"})
    assert cls.__doc__ == vars(cls)["__doc__"] == "new"


@pytest.mark.parametrize("depth", [2000, 100_000])
def test_a_class_nested_deeply_is_compiled_as_its_text_is_or_refused_saying_so(depth):
    # Compiled from the AST, 2000 levels met the recursion limit; 100000, past what Python's
    # parser manages at all, raised its MemoryError as if the class body had.
    source = "import sys\n\nif sys:\n    class Deep:\n        def f(self):\n            return " + "-" * depth + "1\n"
    module = types.ModuleType("deep")
    module.sys = sys
    if depth > 10_000:
        for compiling in (lambda: live.evaluate_class(module, "deep.py", source, "Deep"),
                          lambda: live.compile_members(module, "deep.py", source, "Deep", ["f"])):
            with pytest.raises(ToolError) as refused:
                compiling()
            assert refused.value.kind == "compileError"
            assert refused.value.message.startswith("code is nested too deeply to compile (")
        return
    assert live.evaluate_class(module, "deep.py", source, "Deep")().f() == 1
    made, members = live.compile_members(module, "deep.py", source, "Deep", ["f"])
    assert members["f"](None) == 1 and members["f"].__code__.co_firstlineno == 5


def test_an_enum_of_a_copy_of_the_enum_module_has_its_members_copied_by_no_one():
    # Its EnumType is no enum.EnumType: same_shape said yes, and the copy in place stopped
    # half done at "cannot reassign member 'RED'".
    copy = types.ModuleType("zenum")
    exec(compile(Path(enum.__file__).read_text(), "zenum.py", "exec"), vars(copy))
    source = "class Color(zenum.Enum):\n    RED = 1\n"
    module = types.ModuleType("colors")
    module.zenum = copy
    old, new = (live.evaluate_class(module, "colors.py", source, "Color") for _ in range(2))
    assert not isinstance(old, enum.EnumType) and not live.same_shape(old, new)
    memberless = "class Base(zenum.Enum):\n    def label(self):\n        return 1\n"
    assert live.same_shape(*(live.evaluate_class(module, "colors.py", memberless, "Base") for _ in range(2)))


def test_the_dataclass_decorator_is_told_by_the_names_the_module_binds():
    # Listed as a hook that may wrap a compiled method, it was noise: it wraps none.
    module = types.ModuleType("decorated")
    exec("import dataclasses\nfrom dataclasses import dataclass as dc\nimport functools\n"
         "class Holder:\n    dataclass = dataclasses.dataclass\n", vars(module))
    told = {text: live.is_dataclass_decorator(module, ast.parse(text, mode="eval").body)
            for text in ("dataclasses.dataclass", "dataclasses.dataclass(frozen=True)", "dc", "dc(eq=False)",
                         "functools.total_ordering", "Holder.dataclass", "unbound", "make()()")}
    assert told == {"dataclasses.dataclass": True, "dataclasses.dataclass(frozen=True)": True, "dc": True,
                    "dc(eq=False)": True, "functools.total_ordering": False,
                    "Holder.dataclass": False, "unbound": False, "make()()": False}


def test_a_slotted_bases_field_gives_a_subclass_redeclaring_it_no_default():
    # A slots=True base binds its field as a member descriptor, which the decorator takes
    # for no default: C's `x: int` was judged defaulted, C's y misordered, and every
    # compile_method of C refused though its module imports.
    C = _dataclasses("@dataclasses.dataclass(slots=True)\nclass A:\n    x: int\n\n\n"
                     "@dataclasses.dataclass\nclass C(A):\n    x: int\n    y: int\n")["C"]
    assert (live.field_order_conflict(C), live.field_order_conflict(C, here=True)) == (None, None)
    assert live.misordered_fields(C) is None


def test_the_base_giving_a_field_declared_without_a_value_its_default_is_named():
    # Plain binds label after C was made: C's `label: str` takes it as its default in a new
    # session; D's label has its own; a slotted base's member descriptor gives none.
    names = _dataclasses("class Plain:\n    pass\n\n\n@dataclasses.dataclass\nclass C(Plain):\n"
                         "    label: str\n    n: int\n\n\n@dataclasses.dataclass\nclass D(Plain):\n"
                         "    label: str = 'd'\n\n\n@dataclasses.dataclass(slots=True)\nclass S:\n"
                         "    label: str\n\n\n@dataclasses.dataclass\nclass E(S):\n    label: str\n")
    Plain, C, D, E = names["Plain"], names["C"], names["D"], names["E"]
    assert [live.default_giver(cls, "label") for cls in (C, D, E)] == [None, None, None]
    Plain.label = lambda self: "plain"
    assert [live.default_giver(cls, "label") for cls in (C, D, E)] == [Plain, None, None]
    assert live.misordered_fields(C) == (("label", C), ("n", C))


@pytest.mark.parametrize("body, names", [
    ("    x = 1\n    a, (b, c) = 1, (2, 3)\n    n += 1\n    t: int\n    u: int = 0\n", {"x", "a", "b", "c", "n", "u"}),
    ("    if True:\n        x = 1\n\n        def m(self):\n            inner = 1\n    else:\n        y = 2\n",
     {"x", "m", "y"}),
    ("    try:\n        import json as codec, os.path\n    except ImportError as error:\n        codec = None\n"
     "    finally:\n        z = 1\n", {"codec", "os", "z"}),   # `error` is unbound as the handler ends
    ("    with open('f') as (handle, other), open('g'):\n        pass\n    for i, j in []:\n        pass\n"
     "    else:\n        k = 1\n    while False:\n        w = 1\n", {"handle", "other", "i", "j", "k", "w"}),
    ("    match 1:\n        case 1:\n            hit = 1\n", {"hit"}),
    ("    if True:\n        class Inner:\n            deep = 1\n        __secret = 1\n", {"Inner", "_K__secret"}),
    # Neither `:=` nor a `match` pattern's captures were counted (not a lambda's own, nor a def body's).
    ("    size = (width := 3)\n    if (n := 2):\n        pass\n    match {}:\n"
     "        case {'a': a, **rest} if (g := 1):\n            pass\n        case [first, *others] as whole:\n"
     "            pass\n    def m(self, d=(dflt := 1)):\n        x = (local := 2)\n    f = lambda: (lam := 1)\n",
     {"size", "width", "n", "a", "rest", "g", "first", "others", "whole", "m", "dflt", "f"}),
], ids=["direct", "if", "try", "with-and-loops", "match", "nested-and-private", "walrus-and-captures"])
def test_class_member_names_are_those_the_body_binds_in_its_blocks_too(body, names):
    assert live.class_member_names(ast.parse("class K:\n" + body).body[0]) == names


@pytest.mark.parametrize("below, line", [
    ("h = A.run\n", 5),
    ("h = getattr(A, 'run')\n", 5),
    ("@A.run\ndef f():\n    pass\n", 6),                              # the def's own line
    ("with open(x):\n    h = A.run\n", 6),
    ("class B:\n    h = A.run\n", 6),
    ("try:\n    h = A.run\nexcept ImportError:\n    pass\n", 6),     # not caught
    ("try:\n    pass\nfinally:\n    h = A.run\n", 8),
    # Guarded or maybe not run: only attribute_reader's note.
    ("try:\n    h = A.run\nexcept AttributeError:\n    h = None\n", None),
    ("try:\n    h = A.run\nexcept Exception:\n    h = None\n", None),
    ("with suppress(AttributeError):\n    h = A.run\n", None),
    ("if hasattr(A, 'run'):\n    h = A.run\n", None),
    ("h = A.run if hasattr(A, 'run') else None\n", None),
    ("h = hasattr(A, 'run') and A.run\n", None),
    ("hs = [A.run for _ in range(2)]\n", None),
    ("hs = [h for h in A.run]\n", 5),                                # the first iterable surely runs
    ("hs = {h: 1 for x in range(2) for h in A.run}\n", None),        # a later one may not
    ("assert True, A.run\n", None),                                 # the message: only if it fails
    ("try:\n    import x\nexcept A.run:\n    pass\n", None),         # an except class: only if it raises
    ("assert A.run, 'runs'\n", 5),
    ("h = 0 > 1 > A.run\n", None),                                   # a chain stops at the first False
    ("h = 0 < A.run < 1\n", 5),
    ("h = getattr(A, 'run', None)\n", None),
    # An augmented assignment reads it first; `del` of a missing attribute fails too.
    ("A.run += [1]\n", 5),
    ("del A.run\n", 5),
    ("del B, A.run\n", 5),
    ("delattr(A, 'run')\n", 5),
    ("if hasattr(A, 'run'):\n    del A.run\n", None),
    ("def f():\n    return A.run\n\n\nh = f()\n", None),            # in a function it calls
    ("try:\n    import x\nexcept ImportError:\n    h = A.run\n", None),
    # `A` another object where the read runs (Python runs the module without A.run).
    ("class B:\n    def run(self):\n        pass\n\n\nA = B\nh = A.run\n", None),
    ("with open(x) as A:\n    h = A.run\n", None),
    ("class B:\n    A = C\n    h = A.run\n", None),                 # the class-local A
    ("class B:\n    h = A.run\n    A = C\n", 6),                    # bound after the read
    ("class B:\n    class C:\n        A = D\n    h = A.run\n", 8),  # another class's namespace
    ("class B:\n    A = C\n    class D:\n        h = A.run\n", 8),  # not seen from a nested class
    # The module sets the attribute anew above the read (in a block: it may).
    ("A.run = print\nh = A.run\n", None),
    ("A.run: object = print\nh = A.run\n", None),
    ("setattr(A, 'run', print)\nh = A.run\n", None),
    ("if X:\n    A.run = print\nh = A.run\n", None),
    ("h = A.run\nA.run = print\n", 5),                             # set after the read
    ("A.run = A.run\n", 5),                                         # read before it is set
    ("A.other = print\nh = A.run\n", 6),
    # A function of the module it calls above the read sets it (a call below its def).
    ("def install():\n    A.run = print\n\n\ninstall()\nh = A.run\n", None),
    ("def install():\n    if X:\n        setattr(A, 'run', print)\n\n\nx = [install()]\nh = A.run\n", None),
    ("def install():\n    A.run = print\n\n\nh = A.run\ninstall()\n", 9),   # called after the read
    ("def install():\n    A.other = print\n\n\ninstall()\nh = A.run\n", 10),
    ("def install():\n    def inner():\n        A.run = print\n\n\ninstall()\nh = A.run\n", 11),
])
def test_unguarded_attribute_reader(below, line):
    tree = ast.parse("class A:\n    def run(self):\n        pass\n\n" + below)
    reader = live.unguarded_attribute_reader(tree, "A", "run")
    assert (reader.lineno if reader is not None else None) == line


@pytest.mark.parametrize("source, lines", [
    ("A.x = 1\nB = A\n", [1, 2]),
    ("class C(A):\n    pass\n", [1]),
    ("class C:\n    kind = A\n", [2]),                           # the class body's own statement
    ("@wrap(A)\ndef f():\n    pass\n", [2]),
    ("with x:\n    register(A)\n", [2]),
    ("if X:\n    B = A\n", []),                                  # may not run
    ("try:\n    B = A\nexcept NameError:\n    pass\n", []),
    ("B = X and A\n", []),
    ("B = [A for _ in range(2)]\n", []),
    ("B = [A for A in range(2)]\n", []),
    ("B = list(x for x in A)\n", [1]),                              # the first iterable surely runs
    ("B = [y for x in X for y in A]\n", []),
    ("assert X, A\n", []),
    ("try:\n    import x\nexcept A:\n    pass\n", []),              # only if the body raises
    ("try:\n    import x\nexcept (ValueError, A):\n    pass\n", []),
    ("try:\n    import x\nexcept* A:\n    pass\n", []),
    ("try:\n    import x\nexcept ValueError:\n    pass\nfinally:\n    B = A\n", [6]),
    # A match tries its first case's class or value first; the rest only as it goes on.
    ("match X:\n    case A():\n        pass\n", [1]),
    ("match X:\n    case A.RED | 1:\n        pass\n", [1]),
    ("match X:\n    case 1:\n        pass\n    case A():\n        pass\n", []),
    ("match X:\n    case 1 | A.RED:\n        pass\n", []),
    ("match X:\n    case str() if A:\n        pass\n", []),
    ("match X:\n    case [A.RED]:\n        pass\n", []),
    ("match X:\n    case str(A.RED):\n        pass\n", []),
    ("B = X < Y < A\n", []),
    ("B = X < A < Y\n", [1]),
    ("def f():\n    return A\n", []),
    ("A = 1\nB = A\n", []),                                      # bound otherwise
    ("del A\n", [1]),                                              # deleted: NameError alike
    ("del B, A\n", [1]),
    ("if X:\n    del A\n", []),
    ("def setup():\n    global A\n    A = 1\n\n\nsetup()\nB = A\n", []),   # by a function it calls
    ("def setup():\n    global A\n    A = 1\n\n\nB = A\n", [6]),            # not called
    # The class-local A (Python runs these without the module's A):
    ("class C:\n    A = 1\n    x = A\n", []),
    ("class C:\n    A = 1; x = A\n", []),
    ("class C:\n    with x as A:\n        y = A\n", []),
    ("class C:\n    with x:\n        A = 1\n    y = A\n", []),
    ("class C:\n    x = A\n    A = 1\n", [2]),                      # bound after the read
    ("class C:\n    x = A; A = 1\n", [2]),
    ("class C:\n    A = 1\n    class D:\n        x = A\n", [4]),   # not seen from a nested class
    ("class C:\n    def f(self):\n        A = 1\n    x = A\n", [4]),  # a def's local
    # `A += x` reads A first (binding it only where it was bound); `del A` needs it bound.
    ("A += X\n", [1]),
    ("A += X\nA += Y\n", [1]),
    ("del A\n", [1]),
    ("class C:\n    A += X\n", [2]),
    ("A = X\nA += Y\n", []),
    ("try:\n    del A\nexcept NameError:\n    pass\n", []),
    # `except E as A` deletes A as its handler ends (rebound in it too): no read below it is served.
    ("try:\n    pass\nexcept ValueError as A:\n    pass\nB = A\n", [5]),
    ("try:\n    pass\nexcept ValueError as A:\n    A = 1\nB = A\n", [5]),
    ("try:\n    pass\nexcept ValueError as E:\n    A = 1\nB = A\n", []),      # another name: A may stay
])
def test_sure_import_readers(source, lines):
    assert [node.lineno for node in live.sure_import_readers(ast.parse(source), "A")] == lines


def test_sure_import_readers_count_no_read_of_a_builtin_s_name():
    # enum.py's class `property` shadows the builtin: deleted, `@property` reads the builtin.
    assert live.sure_import_readers(ast.parse("@property\ndef f():\n    pass\n"), "property") == []


def test_needed_on_import_without_star_takes_no_star_import_as_binding_the_name():
    # dis.py's `from opcode import *` above `UNKNOWN = _Unknown()`: the import binds no
    # `_Unknown`, so the module is re-imported to tell.
    tree = ast.parse("from os.path import *\n\nX = A()\n")
    assert not live.needed_on_import(tree, "A")
    assert live.needed_on_import(tree, "A", star=False)
    # Nor an import that may fail, its handler passing, nor a binding under an `if`.
    tree = ast.parse("try:\n    from fast import A\nexcept ImportError:\n    pass\n\nX = A()\n")
    assert not live.needed_on_import(tree, "A") and live.needed_on_import(tree, "A", star=False)
    assert live.needed_on_import(ast.parse("if Y:\n    A = 1\n\nX = A\n"), "A", star=False)
    # Bound surely, whichever way the try goes: no re-import needed.
    tree = ast.parse("try:\n    from fast import A\nexcept ImportError:\n    A = None\n\nX = A\n")
    assert not live.needed_on_import(tree, "A", star=False)
    # Bound only below the read (in its own statement too): it reads nothing there.
    for source in ("X = A()\ntry:\n    from fast import A\nexcept ImportError:\n    A = None\n",
                   "if Y:\n    X = A\nA = None\n", "A = A\n"):
        assert live.needed_on_import(ast.parse(source), "A") and live.needed_on_import(ast.parse(source), "A", star=False)


def test_needed_on_import_takes_no_handler_s_name_as_binding_it_below():
    # The handler deletes its `as` name as it ends: it serves no read below the `try`.
    tree = ast.parse("try:\n    pass\nexcept ValueError as A:\n    pass\n\nX = A\n")
    assert live.needed_on_import(tree, "A") and live.needed_on_import(tree, "A", star=False)
    # Nor is a binding in that handler sure: the import may fail, and the handler undo it.
    tree = ast.parse("try:\n    from fast import A\nexcept ImportError as A:\n    A = None\n\nX = A\n")
    assert live.needed_on_import(tree, "A", star=False)
    tree = ast.parse("try:\n    from fast import A\nexcept ImportError as error:\n    A = None\n\nX = A\n")
    assert not live.needed_on_import(tree, "A", star=False)


def test_needed_on_import_counts_a_del_of_the_name():
    # opcode.py's `del def_op, name_op, jrel_op, jabs_op`: with jabs_op's def gone, NameError.
    assert live.needed_on_import(ast.parse("if X:\n    del A\n"), "A")


def test_needed_on_import_follows_the_module_s_own_functions_it_calls_one_call_deep():
    assert live.needed_on_import(ast.parse("def make():\n    return A()\n\n\nX = make()\n"), "A")
    assert not live.needed_on_import(ast.parse("def make():\n    return A()\n"), "A")


@pytest.mark.parametrize("source, line", [
    ("__all__ = ['A', 'B']\n", 1),
    ("__all__ = ('B',)\n__all__ += ('A',)\n", 2),
    ("__all__: list = ['A']\n", 1),
    ("__all__ = []\n__all__.append('A')\n", 2),
    ("try:\n    import x\nexcept ImportError:\n    __all__ = ['A']\n", 4),
    ("__all__ = ['B']\n", None),
    ("__all__ = [name for name in dir() if name.isupper()]\n", None),   # computed: not told
    ("__all__ = [name for name in dir() if name not in ('A',)]\n", None),   # a string it leaves out
    ("__all__ = sorted(set(dir()) - {'A'})\n", None),
    ("__all__ = ['B']\nif 'A' in __all__:\n    __all__.remove('A')\n", None),
    ("__all__ = ['B'] + ['A']\n", 1),
    ("__all__ = ['B']\n__all__.extend(('A',))\n", 2),
    ("__all__ = []\n__all__.insert(0, 'A')\n", 2),
    ("NAMES = ['A']\n", None),
    ("def f():\n    __all__ = ['A']\n", None),                        # a function's local
    # Taken out again below: `from m import *` does not look for it.
    ("__all__ = ['A', 'B']\n__all__.remove('A')\n", None),
    ("__all__ = ['A', 'B']\nif x:\n    __all__.remove('A')\n", None),
    ("__all__ = ['A', 'B']\n__all__ = ['B']\n", None),
    ("__all__ = ['A', 'B']\n__all__ = [n for n in __all__ if n != 'A']\n", None),
    ("__all__ = ['A', 'B']\ndel __all__[0]\n", None),
    ("__all__ = ['A', 'B']\n__all__[:] = ['B']\n", None),
    ("__all__ = ['A', 'B']\ndel __all__\n", None),
    ("__all__ = {'A', 'B'}\n__all__ -= {'A'}\n", None),
    ("__all__ = ['B']\n__all__ -= ['A']\n", None),                    # not an addition
    # Added to, sorted, or named again after: still there.
    ("__all__ = ['A']\n__all__ = __all__ + ['B']\n__all__.sort()\n", 1),
    ("__all__ = ['A', 'B']\n__all__ = sorted(__all__)\n", 1),
    ("__all__ = ['A']\n__all__ = tuple(list(__all__) + ['B'])\n", 1),
    ("__all__ = ['A']\n__all__ = sorted(__all__, key=str.lower)\n", 1),
    ("__all__ = {'B'}\n__all__ |= {'A'}\n", 2),
    ("__all__ = ['A']\n__all__.remove('A')\n__all__.append('A')\n", 3),
])
def test_all_naming(source, line):
    found = live.all_naming(ast.parse(source), "A")
    assert (found.lineno if found is not None else None) == line


def test_unguarded_attribute_reader_with_deleted_takes_a_del_alone():
    # `del A.run` fails where A has run from a base alone; a read does not.
    tree = ast.parse("class A(Base):\n    pass\n\n\nh = A.run\ndel A.run\n")
    assert live.unguarded_attribute_reader(tree, "A", "run").lineno == 5
    assert live.unguarded_attribute_reader(tree, "A", "run", deleted=True).lineno == 6
    assert live.unguarded_attribute_reader(ast.parse("class A:\n    pass\n\n\nh = A.run\n"), "A", "run",
                                           deleted=True) is None


def test_unguarded_attribute_reader_with_deleted_takes_a_delattr_too():
    # `delattr(A, "run")` deletes from A's own namespace as `del A.run` does.
    tree = ast.parse("class A(Base):\n    pass\n\n\nh = getattr(A, 'run')\ndelattr(A, 'run')\n")
    assert live.unguarded_attribute_reader(tree, "A", "run").lineno == 5
    assert live.unguarded_attribute_reader(tree, "A", "run", deleted=True).lineno == 6
