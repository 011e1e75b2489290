"""mutation and testing tool handlers: source edits, live updates, commits, the kernel guard."""

import dataclasses
import enum
import sys
from pathlib import Path

import pytest

from gsmcpd.image import trial
from gsmcpd.worker.toolsets import mutation
from test_tools_support import (Client, client, image, misordered_fields_error,  # noqa: F401  (fixtures)
                                missing_member_error, text, utf8_carries, views, without_dog, write_image)


# Each tool's commit writes the image; its flushes to disk are no test's subject here.
pytestmark = pytest.mark.usefixtures("fsync_skipped")


def disk(image, rel="zoo/animals.py"):
    return (image / rel).read_text()


def test_compile_method_updates_live_instances_source_and_commits(client, image):
    dog = client.view.module("zoo.animals").Dog("rex")
    result = client.ok("compile_method", className="Dog",
                       source="def noise(self):\n    return super().noise() + '!'\n")
    assert result["structuredContent"]["replaced"] is True
    assert dog.noise() == "...!"                     # the existing instance, zero-arg super()
    assert "        return super().noise() + '!'\n" in disk(image)
    assert "# A comment that must survive edits.\n" in disk(image)
    assert client.view.store.journal()[0]["files"][0]["file"] == "zoo/animals.py"
    assert not client.view.has_changes


@pytest.mark.parametrize("decorator", [
    "def _deco(f):\n    def wrapper(self):\n        return 'D>' + f(self)\n    return wrapper\n",
    "import functools\n_deco = functools.cache\n",
], ids=["plain-wrapper", "functools.cache"])
def test_a_compiled_method_behind_a_decorator_keeps_its_zero_argument_super(client, image, decorator):
    # Its super() cell is reached only through the wrapper's closure or `__wrapped__` on a
    # non-function: left on the throwaway class, super() raised TypeError here, not in a
    # new session.
    (image / "zoo" / "wrapped.py").write_text(
        decorator + "\n\nclass Base:\n    def m(self):\n        return 'base'\n\n\n"
        "class A(Base):\n    @_deco\n    def m(self):\n        return 'old'\n")
    client.ok("refresh")
    client.ok("compile_method", className="A",
              source="@_deco\ndef m(self):\n    return 'new>' + super().m()\n")
    namespace = {}
    exec(disk(image, "zoo/wrapped.py"), namespace)   # as a new session's import runs it
    assert client.view.module("zoo.wrapped").A().m() == namespace["A"]().m()
    assert namespace["A"]().m().endswith("new>base")


def test_compile_method_appends_and_meta_makes_it_class_side(client, image):
    client.ok("compile_method", className="Animal", source="def create(cls):\n    return cls('new')\n",
              meta=True, category="ignored")
    animal = client.view.module("zoo.animals").Animal
    assert animal.create().name == "new"
    assert "    @classmethod\n    def create(cls):\n" in disk(image)


@pytest.mark.parametrize("selector, source, meta, said", [
    ("named", "def named(cls, name):\n    return 1\n", None,
     "zoo.animals.Animal.named is a classmethod; this def (without meta, an instance method) "
     "would replace it, as a Python class has one namespace for both sides. To change that "
     "method, send meta true (or the defs as get_method_source gives them) to replace it; to "
     "make named an instance method instead, delete_method it first."),
    ("kingdom", "def kingdom(self):\n    return 1\n", False, "is a staticmethod; this def"),
    ("title", "def title(self):\n    return 1\n", None,
     "is a property; this def (without meta, an instance method) would replace it, as a Python "
     "class has one namespace for both sides. To change that method, send the defs as "
     "get_method_source gives them to replace it"),
    ("speak", "def speak(cls):\n    return 1\n", True,
     "zoo.animals.Animal.speak is an instance method; this def (with meta true, a classmethod) "
     "would replace it, as a Python class has one namespace for both sides. To change that "
     "method, send it without meta to replace it; to make speak a classmethod instead, "
     "delete_method it first."),
    ("title", "def title(cls):\n    return 1\n", True, "is a property; this def (with meta true"),
], ids=["classmethod-without-meta", "staticmethod-meta-false", "property-plain-def",
        "instance-with-meta", "property-with-meta"])
def test_a_def_of_the_other_side_is_refused_not_put_over_the_method(client, image, selector,
                                                                    source, meta, said):
    # GemStone keeps the two sides apart; in Python they share one namespace: a forgotten
    # meta replaced the classmethod with an instance method, its decorator dropped.
    before = disk(image)
    arguments = {} if meta is None else {"meta": meta}
    message = client.error("compile_method", "refused", className="Animal", source=source, **arguments)
    assert said in message
    assert disk(image) == before and not client.view.has_changes


def test_a_kind_written_in_the_source_or_the_same_side_replaces_the_method(client, image):
    client.ok("compile_method", className="Animal", meta=True, source="def named(cls, name):\n    return 1\n")
    client.ok("compile_method", className="Animal", meta=True, source="def kingdom(cls):\n    return 2\n")
    client.ok("compile_method", className="Animal", source="@classmethod\ndef speak(cls):\n    return 3\n")
    client.ok("compile_method", className="Animal", source="@property\ndef noise(self):\n    return 4\n")
    animal = client.view.module("zoo.animals").Animal
    assert (animal.named("x"), animal.kingdom(), animal.speak(), animal("a").noise) == (1, 2, 3, 4)
    client.ok("delete_method", className="Animal", selector="named")
    client.ok("compile_method", className="Animal", source="def named(self):\n    return 5\n")
    assert animal("a").named() == 5


@pytest.mark.parametrize("signature", ["()", "(*, key=None)"])
def test_meta_refuses_a_def_that_could_not_take_the_class(client, image, signature):
    # Written in as @classmethod, it raised TypeError at every call.
    before = disk(image)
    message = client.error("compile_method", "refused", className="Animal",
                           source=f"def create{signature}:\n    return 1\n", meta=True)
    assert "takes no positional argument; write def create(cls, ...), or mark it @staticmethod" in message
    assert disk(image) == before
    for taking in ("(*args)", "(klass, /)"):   # the class is passed to either
        client.ok("compile_method", className="Animal", source=f"def made{taking}:\n    return 1\n", meta=True)
        assert client.view.module("zoo.animals").Animal.made() == 1


@pytest.mark.parametrize("source", [
    "def __init__(self, name):\n    self.name = name.upper()\n", "def __repr__(self):\n    return 'a dog'\n",
    "def __eq__(self, other):\n    return True\n", "def __hash__(self):\n    return 1\n",
    "def __call__(self):\n    return 1\n", "def __getattr__(self, name):\n    return name\n",
    "def __len__(self):\n    return 1\n", "def __add__(self, other):\n    return 1\n"])
def test_meta_refuses_a_special_method_python_calls_on_instances(client, image, source):
    # Made a classmethod, Dog's own __init__ was handed the class: Dog("rex") no longer set
    # the dog's name; a __repr__, __eq__... the same for every dog.
    name = source[len("def "):source.index("(")]
    before = disk(image)
    message = client.error("compile_method", "refused", className="Dog", source=source, meta=True)
    assert message.startswith(f"meta makes {name} a classmethod, but {name} is a special method Python "
                              f"calls on Dog's instances (type(x).{name}(x, ...) for an instance x): a "
                              "classmethod would be handed Dog itself, not x, and Dog's instances would break. "
                              "Send the def without meta for Dog's instances; for Dog itself, as an object, "
                              f"{name} belongs on its metaclass: compile_method it on a metaclass of the image"), message
    assert disk(image) == before and not client.view.has_changes
    assert client.ok("execute_code", code="from zoo.animals import Dog\nDog('rex').name")[
        "structuredContent"]["result"] == "'rex'"


def test_meta_refuses_a_dataclass_s_post_init(client, image):
    # Made a classmethod, __post_init__ was handed the class by the __init__ the decorator
    # wrote (self.__post_init__()): every Point(1) then raised AttributeError.
    (image / "zoo" / "points.py").write_text("import dataclasses\n\n\n@dataclasses.dataclass\n"
                                             "class Point:\n    x: int\n")
    client.ok("refresh")
    before = disk(image, "zoo/points.py")
    message = client.error("compile_method", "refused", className="Point", meta=True,
                           source="def __post_init__(self):\n    self.x += 1\n")
    assert message.startswith("meta makes __post_init__ a classmethod, but __post_init__ is a special "
                              "method Python calls on Point's instances"), message
    assert disk(image, "zoo/points.py") == before and not client.view.has_changes
    client.ok("compile_method", className="Point", source="def __post_init__(self):\n    self.x += 1\n")
    assert client.ok("execute_code", code="from zoo.points import Point\nPoint(1)")[
        "structuredContent"]["result"] == "Point(x=2)"


# Class-side as written, classmethods by design, or no protocol (bytearray.__alloc__, a
# CPython detail; float.__getformat__, type.__subclasses__: methods called by name).
NOT_INSTANCE_PROTOCOL = {"__new__", "__init_subclass__", "__class_getitem__", "__subclasshook__",
                         "__prepare__", "__alloc__", "__getformat__", "__subclasses__"}


def test_every_special_method_of_the_builtin_types_is_instance_protocol_or_class_side_by_design():
    # The hand list against the running Python's own types: a slot a new Python adds
    # (3.12's __buffer__) is named here rather than made a classmethod by meta.
    import builtins
    import types
    from gsmcpd.worker.special_methods import INSTANCE_PROTOCOL
    kinds = [value for value in vars(builtins).values() if isinstance(value, type)] + [
        types.FunctionType, types.MethodType, types.ModuleType, types.GeneratorType, types.CoroutineType,
        types.AsyncGeneratorType, type(iter([])), type({}.keys())]
    special = {name for kind in kinds for name, value in vars(kind).items()
               if name.startswith("__") and name.endswith("__") and callable(value)}
    assert special - NOT_INSTANCE_PROTOCOL - INSTANCE_PROTOCOL == set()
    assert {"__post_init__", "__replace__"} <= INSTANCE_PROTOCOL   # called so by dataclasses and copy


def test_meta_takes_a_special_method_written_class_side_or_one_that_is_a_classmethod_by_design(client):
    client.ok("compile_method", className="Dog", meta=True, source="@classmethod\ndef __repr__(cls):\n    return 'D'\n")
    client.ok("compile_method", className="Dog", meta=True,
              source="def __subclasshook__(cls, other):\n    return NotImplemented\n")
    client.ok("compile_method", className="Dog", source="def __len__(self):\n    return 4\n")   # no meta
    assert client.ok("execute_code", code="from zoo.animals import Dog\nrepr(Dog('rex')), len(Dog('rex')), "
                                          "Dog.__subclasshook__(int)")["structuredContent"]["result"] == (
        "('D', 4, NotImplemented)")


SHAPES = '''\
import abc


class Shape(abc.ABC):
    @abc.abstractmethod
    def area(self):
        ...


class Circle(Shape):
    pass


class Ring(Circle):
    pass
'''


def test_an_abc_is_abstract_as_its_source_now_says_whatever_tool_changed_it(client):
    # Python reckons an ABC's abstract methods once, as the class is made: Circle given
    # area() still could not be instantiated, and Ring lost nothing when Shape gained
    # an abstract method, though a new session read them as their source says.
    client.view.add_module("zoo.shapes", SHAPES)
    shapes = client.view.module("zoo.shapes")

    def abstract():
        return {name: set(vars(shapes)[name].__abstractmethods__) for name in ("Shape", "Circle", "Ring")}

    client.ok("compile_method", className="Circle", source="def area(self):\n    return 1\n")
    assert abstract() == {"Shape": {"area"}, "Circle": set(), "Ring": set()}
    assert shapes.Ring().area() == 1
    client.ok("compile_method", className="Shape", source="@abc.abstractmethod\ndef size(self):\n    ...\n")
    assert abstract() == {"Shape": {"area", "size"}, "Circle": {"size"}, "Ring": {"size"}}
    client.ok("compile_class_definition", source="class Circle(Shape):\n    def size(self):\n        return 2\n")
    assert abstract() == {"Shape": {"area", "size"}, "Circle": set(), "Ring": set()}
    client.ok("delete_method", className="Circle", selector="area")
    assert abstract() == {"Shape": {"area", "size"}, "Circle": {"area"}, "Ring": {"area"}}
    with pytest.raises(TypeError, match="abstract method '?area'?"):   # Python 3.12 quotes the name
        shapes.Ring()


LAZY_MODEL = """\
import abc


class Lazy:
    def __getattr__(self, name):
        Model.built = True   # as pydantic's MockValSer builds its model when first touched
        raise AttributeError(name)


class Model(abc.ABC):
    def m(self):
        return 1


Model.validator = Lazy()   # once the class is made, as pydantic's metaclass sets it
"""


def test_a_class_whose_member_adds_to_it_when_asked_if_it_is_abstract_takes_a_method(client, image):
    # Reckoning the abstract methods asks each member for __isabstractmethod__: a pydantic
    # model's not yet built (mcp_types' SamplingMessage) bound __signature__ on its class as
    # that was read, and the compile failed, RuntimeError: dictionary changed size during iteration.
    client.view.add_module("zoo.lazy", LAZY_MODEL)
    model = client.view.module("zoo.lazy").Model
    client.ok("compile_method", className="zoo.lazy.Model", source="def m(self):\n    return 2\n")
    assert model().m() == 2 and model.built is True
    assert "    def m(self):\n        return 2\n" in disk(image, "zoo/lazy.py")


def test_a_dataclass_is_made_again_when_its_methods_change(client):
    # Its generated __init__ calls __post_init__ only if the class had one when it was
    # made: one compiled later never ran here, though it did in a new session.
    client.view.add_module("zoo.points", "import dataclasses\n\n\n@dataclasses.dataclass\n"
                                         "class Point:\n    x: int = 0\n\n    def norm(self):\n"
                                         "        return abs(self.x)\n")
    point_class = client.view.module("zoo.points").Point
    old = point_class(-1)
    client.ok("compile_method", className="Point",
              source="def __post_init__(self):\n    self.x = abs(self.x)\n")
    assert point_class(-3).x == 3 and old.norm() == 1 and client.view.module("zoo.points").Point is point_class
    client.ok("compile_method", className="Point", source="def norm(self):\n    return -self.x\n")
    assert point_class(-3).norm() == -3 and old.norm() == 1   # old.x is -1
    client.ok("delete_method", className="Point", selector="__post_init__")
    assert point_class(-3).x == -3 and not hasattr(point_class, "__post_init__")
    client.ok("compile_method", className="Point", source="def __eq__(self, other):\n    return True\n")
    assert point_class(1) == point_class(2) and point_class.__hash__ is None   # as Python makes it


def test_a_dataclass_made_again_keeps_the_state_its_class_attributes_hold(client):
    # Every value of the class body made again was copied: a registry the session had
    # filled was emptied by compiling an unrelated method.
    client.view.add_module("zoo.kept", "import dataclasses\nfrom typing import ClassVar\n\n\n"
                                       "@dataclasses.dataclass\nclass Kept:\n    registry: ClassVar[list] = []\n"
                                       "    count = 0\n    x: int = 0\n\n    def norm(self):\n"
                                       "        return abs(self.x)\n")
    kept = client.view.module("zoo.kept").Kept
    kept.registry.append("state")
    kept.count = 5
    client.ok("compile_method", className="Kept", source="def norm(self):\n    return -abs(self.x)\n")
    assert kept.registry == ["state"] and kept.count == 5 and kept(3).norm() == -3
    client.ok("compile_method", className="Kept", source="def __post_init__(self):\n    self.x += 1\n")
    client.ok("delete_method", className="Kept", selector="norm")
    assert kept.registry == ["state"] and kept.count == 5 and kept(3).x == 4 and not hasattr(kept, "norm")


def test_a_dataclass_made_again_keeps_state_its_body_writes_however_written(client):
    # What the class body does not write plainly (a tuple target, a class-level `if`), and
    # what __init_subclass__ sets, was taken for what the decorator made, and emptied.
    client.view.add_module("zoo.stateful", "import dataclasses\n\n\nclass Hooked:\n"
                           "    def __init_subclass__(cls):\n        cls.seen = []\n\n\n"
                           "@dataclasses.dataclass\nclass Stateful(Hooked):\n    registry, count = [], 0\n"
                           "    if True:\n        cache = {}\n    x: int = 0\n\n    def norm(self):\n"
                           "        return 1\n")
    stateful = client.view.module("zoo.stateful").Stateful
    stateful.registry.append("r")
    stateful.count, stateful.cache["k"] = 5, "v"
    stateful.seen.append("s")
    client.ok("compile_method", className="Stateful", source="def norm(self):\n    return 2\n")
    assert (stateful.registry, stateful.count, stateful.cache, stateful.seen) == (["r"], 5, {"k": "v"}, ["s"])
    assert stateful().norm() == 2


def test_a_dataclass_made_again_loses_what_the_decorator_no_longer_makes(client):
    # eq=False with an __eq__ of its own: type() set __hash__ = None; that __eq__ deleted,
    # the None stayed on the live class, so hash() raised here and not in a new session.
    client.view.add_module("zoo.uneq", "import dataclasses\n\n\n@dataclasses.dataclass(eq=False)\n"
                           "class P:\n    x: int = 0\n\n    def __eq__(self, other):\n        return True\n")
    p_class = client.view.module("zoo.uneq").P
    assert p_class.__hash__ is None
    client.ok("delete_method", className="P", selector="__eq__")
    assert "__hash__" not in vars(p_class) and hash(p_class(1)) and p_class(1) != p_class(1)


def test_a_dataclass_made_again_keeps_what_the_module_set_on_it_below_the_class(client, image):
    # eq=False: the decorator makes no __eq__/__hash__, the module's lines below set them.
    # Made again for an unrelated method, both were deleted as "no longer made".
    (image / "zoo" / "patched.py").write_text(
        "import dataclasses\n\n\n@dataclasses.dataclass(eq=False)\nclass E:\n    x: int = 0\n\n"
        "    def m(self):\n        return 1\n\n\nE.__eq__ = lambda a, b: a.x == b.x\n"
        "E.__hash__ = lambda a: 7\n")
    client.ok("refresh")
    client.ok("compile_method", className="E", source="def m(self):\n    return 2\n")
    e_class = client.view.module("zoo.patched").E
    assert e_class() == e_class() and hash(e_class()) == 7 and e_class().m() == 2


def test_a_frozen_dataclass_made_again_is_still_frozen(client):
    # Its __setattr__, made for the throwaway class, raised TypeError (super(type, obj))
    # for a name that is no field.
    client.view.add_module("zoo.frozen", "import dataclasses\n\n\n@dataclasses.dataclass(frozen=True)\n"
                                         "class Frozen:\n    y: int = 0\n")
    frozen_class = client.view.module("zoo.frozen").Frozen
    client.ok("compile_method", className="Frozen", source="def double(self):\n    return 2 * self.y\n")
    frozen = frozen_class(2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        frozen.z = 3
    with pytest.raises(dataclasses.FrozenInstanceError):
        del frozen.z
    assert frozen.double() == 4
    client.ok("compile_class_definition", source="@dataclasses.dataclass(frozen=True)\n"
                                                 "class Frozen:\n    y: int = 1\n")
    with pytest.raises(dataclasses.FrozenInstanceError):
        frozen_class().z = 3


def test_a_class_attribute_aliasing_another_class_s_method_keeps_that_method_s_super(client):
    # Every __class__ cell in the copied namespace was pointed at the live class: Base.go,
    # aliased as A.go, then had A as its super() class, and Base().go() raised TypeError.
    base = "class Base:\n    def go(self):\n        return super().__repr__()[:5]\n\n\n"
    client.view.add_module("zoo.alias", base + "import dataclasses\n\n\n@dataclasses.dataclass\n"
                           "class A:\n    x: int = 0\n    go = Base.go\n\n    def norm(self):\n"
                           "        return 1\n")
    client.view.add_module("zoo.plain", base + "class P:\n    go = Base.go\n\n    def go(self):\n"
                           "        return 2\n")
    alias, plain = client.view.module("zoo.alias"), client.view.module("zoo.plain")
    client.ok("compile_method", className="A", source="def norm(self):\n    return 2\n")
    assert alias.Base().go() == "<zoo." and alias.A().norm() == 2
    client.ok("compile_class_definition", source="class A:\n    go = Base.go\n", dictionaryName="zoo.alias")
    assert alias.Base().go() == "<zoo."
    client.ok("delete_method", className="P", selector="go")   # the attribute is what P has then
    assert plain.Base().go() == "<zoo." and plain.P.go is plain.Base.go


def test_a_dataclass_subclass_follows_its_bases_post_init_once_made_again_itself(client):
    # The limit README states: B is not made again with A (that would run class
    # statements the change did not touch); compiling one of B's methods makes it again.
    client.view.add_module("zoo.sub", "import dataclasses\n\n\n@dataclasses.dataclass\nclass A:\n"
                                      "    x: int = 0\n\n\n@dataclasses.dataclass\nclass B(A):\n    y: int = 0\n")
    sub = client.view.module("zoo.sub")
    client.ok("compile_method", className="A", source="def __post_init__(self):\n    self.x = 7\n")
    assert sub.A().x == 7 and sub.B().x == 0
    client.ok("compile_method", className="B", source="def twice(self):\n    return 2 * self.y\n")
    assert sub.B().x == 7


REGISTERED = """\
import dataclasses

registry = []


class Registered:
    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        registry.append(cls.__name__)


def register(cls):
    registry.append("@" + cls.__name__)
    return cls


@dataclasses.dataclass
class Point(Registered):
    x: int = 0

    def norm(self):
        return abs(self.x)


@register
@dataclasses.dataclass
class Tagged:
    y: int = 0
"""


def test_a_dataclass_method_the_decorator_does_not_read_runs_no_hook_again(tmp_path, views):
    # Compiling or deleting any method of a dataclass ran its whole class statement again,
    # so Registered.__init_subclass__ registered a throwaway Point, silently.
    image = write_image(tmp_path / "image", {"registered.py": REGISTERED})
    client = Client(views(image))
    registered = client.view.module("registered")
    point = registered.Point
    replaced = client.ok("compile_method", className="Point", source="def norm(self):\n    return -self.x\n")
    added = client.ok("compile_method", className="Point", source="def twice(self):\n    return 2 * self.x\n")
    deleted = client.ok("delete_method", className="Point", selector="twice")
    assert registered.registry == ["Point", "@Tagged"]
    assert point(3).norm() == -3 and not hasattr(point, "twice")
    for answer in (replaced, added, deleted):
        assert "rerun" not in answer["structuredContent"], answer
    # A new method, as for any class a hook made: it may wrap it (the dataclass decorator is no such hook).
    assert added["structuredContent"]["notRerun"] == ["registered.Registered.__init_subclass__"]
    client.ok("compile_method", className="Tagged", source="def show(self):\n    return self.y\n")
    assert registered.registry == ["Point", "@Tagged"] and registered.Tagged(4).show() == 4


def test_a_hook_of_a_class_nested_in_an_image_class_is_named_as_not_run_again(client):
    # Only top-level image classes' hooks were looked at: a compiled method of a class made
    # by a nested base's __init_subclass__ or a nested metaclass said nothing of them.
    client.view.add_module("zoo.hooks", "class Kit:\n    class Meta(type):\n        def __new__(mcs, *args):\n"
                                        "            return super().__new__(mcs, *args)\n\n"
                                        "    class Base:\n        def __init_subclass__(cls):\n"
                                        "            cls.seen = True\n\n\n"
                                        "class Hooked(Kit.Base, metaclass=Kit.Meta):\n    pass\n")
    added = client.ok("compile_method", className="zoo.hooks.Hooked", source="def m(self):\n    return 1\n")
    assert added["structuredContent"]["notRerun"] == ["metaclass zoo.hooks.Kit.Meta",
                                                      "zoo.hooks.Kit.Base.__init_subclass__"]
    assert "; note: zoo.hooks.Hooked was made by its metaclass zoo.hooks.Kit.Meta, " in text(added)


def test_a_dataclass_made_again_names_the_hooks_its_class_statement_ran_again(tmp_path, views):
    # Made again for what the decorator generates from __post_init__, its class statement
    # ran Registered.__init_subclass__ (and @register) again, and the answer did not say so.
    image = write_image(tmp_path / "image", {"registered.py": REGISTERED})
    client = Client(views(image))
    registered = client.view.module("registered")
    point = registered.Point
    added = client.ok("compile_method", className="Point",
                      source="def __post_init__(self):\n    self.x = abs(self.x)\n")
    assert point(-3).x == 3 and registered.registry == ["Point", "@Tagged", "Point"]
    assert added["structuredContent"]["rerun"] == ["registered.Registered.__init_subclass__"]
    assert "notRerun" not in added["structuredContent"]
    assert ("; note: what the dataclass decorator generates depends on __post_init__, so "
            "registered.Point's class statement ran again, on a throwaway class, and with it its "
            "registered.Registered.__init_subclass__: what else it does (a registry entry) was done "
            "again, for that throwaway class; the live registered.Point keeps what it did for it as "
            "it was made") in text(added)
    deleted = client.ok("delete_method", className="Point", selector="__post_init__")
    assert point(-3).x == -3
    assert deleted["structuredContent"]["rerun"] == ["registered.Registered.__init_subclass__"]
    tagged = client.ok("compile_method", className="Tagged",
                       source="def __eq__(self, other):\n    return True\n")
    # Not @dataclasses.dataclass: it makes only what it generates.
    assert tagged["structuredContent"]["rerun"] == ["class decorator @register"]
    assert registered.registry == ["Point", "@Tagged", "Point", "Point", "@Tagged"]


def test_a_dataclass_left_stale_by_its_base_is_made_again_for_any_method(tmp_path, views):
    # What the decorator generated for B follows A's old fields until B is made again: a
    # method of B that the decorator does not read still makes it again then, saying so.
    image = write_image(tmp_path / "image", {"registered.py": REGISTERED + (
        "\n\n@dataclasses.dataclass\nclass Base(Registered):\n    a: int = 0\n\n\n"
        "@dataclasses.dataclass\nclass Sub(Base):\n    b: int = 0\n")})
    client = Client(views(image))
    registered = client.view.module("registered")
    client.ok("compile_method", className="Base", source="def __post_init__(self):\n    self.a = 7\n")
    assert registered.Sub().a == 0
    answer = client.ok("compile_method", className="Sub", source="def twice(self):\n    return 2\n")
    assert registered.Sub().a == 7 and answer["structuredContent"]["rerun"] == [
        "registered.Registered.__init_subclass__"]
    assert ("; note: what the dataclass decorator generated for registered.Sub followed its bases "
            "as they were before one was made again, so registered.Sub's class statement ran "
            "again") in text(answer)
    again = client.ok("compile_method", className="Sub", source="def twice(self):\n    return 3\n")
    assert "rerun" not in again["structuredContent"] and registered.Sub().twice() == 3
    # Base made again with the same fields and __post_init__ (for __eq__): Sub still follows it.
    client.ok("compile_method", className="Base", source="def __eq__(self, other):\n    return True\n")
    same = client.ok("compile_method", className="Sub", source="def twice(self):\n    return 4\n")
    assert "rerun" not in same["structuredContent"] and registered.Sub().twice() == 4


FAMILY = """\
import dataclasses


@dataclasses.dataclass
class A:
    x: int = 0

    def norm(self):
        return abs(self.x)


@dataclasses.dataclass
class B(A):
    y: int = 1


class Plain(A):
    pass


@dataclasses.dataclass
class C(Plain):
    z: int = 2
"""


def test_the_answer_names_the_dataclass_subclasses_a_change_of_their_base_leaves_stale(client):
    # B and C were made from A's old fields and __post_init__ and are not made again with
    # A; nothing said so, and B() silently lacked the field A gained.
    client.view.add_module("zoo.family", FAMILY)
    family = client.view.module("zoo.family")
    result = client.ok("compile_class_definition",
                       source="@dataclasses.dataclass\nclass A:\n    x: int = 0\n    w: int = 5\n")
    assert result["structuredContent"]["staleSubclasses"] == ["zoo.family.B", "zoo.family.C"]
    assert ("note: the dataclass subclasses zoo.family.B, zoo.family.C were made from what "
            "zoo.family.A was before this change (other fields)") in text(result)
    assert ("compile_class_definition on each of zoo.family.B, zoo.family.C (its definition as it "
            "stands) makes it again, or abort re-imports the committed image") in text(result)
    assert repr(family.A()) == "A(x=0, w=5)" and repr(family.B()) == "B(x=0, y=1)"   # the limit noted
    for tool, arguments in [("compile_method", {"source": "def __post_init__(self):\n    self.x = 7\n"}),
                            ("delete_method", {"selector": "__post_init__"})]:
        result = client.ok(tool, className="A", **arguments)
        assert result["structuredContent"]["staleSubclasses"] == ["zoo.family.B", "zoo.family.C"]
        assert "frozenConflicts" not in result["structuredContent"]
    assert "was before this change (a __post_init__)" in text(result)
    for tool, arguments in [("compile_method", {"source": "def norm(self):\n    return -self.x\n"}),
                            ("delete_method", {"selector": "norm"}),
                            ("compile_method", {"source": "def norm(self):\n    return 0\n"})]:
        result = client.ok(tool, className="A", **arguments)      # nothing B or C is made from
        assert "staleSubclasses" not in result["structuredContent"] and "note" not in text(result)
    client.ok("abort")
    family = client.view.module("zoo.family")
    assert repr(family.B()) == "B(x=0, w=5, y=1)" and repr(family.C()) == "C(x=0, w=5, z=2)"


FROSTY = """\
import dataclasses


@dataclasses.dataclass
class A:
    x: int = 0


@dataclasses.dataclass
class B(A):
    y: int = 1

    def norm(self):
        return self.y
"""


@pytest.mark.parametrize("was, becomes", [(False, True), (True, False)])
def test_a_base_made_frozen_or_not_names_the_subclasses_it_leaves_unmakeable_and_refuses_their_methods(
        client, image, was, becomes):
    # The answer said to make B again as it stands, which Python refuses, and compile_method
    # on B was then accepted with no word while every new session's import of zoo.frosty failed.
    def dataclass(frozen):
        return "@dataclasses.dataclass(frozen=True)" if frozen else "@dataclasses.dataclass"
    (image / "zoo" / "frosty.py").write_text(FROSTY.replace("@dataclasses.dataclass", dataclass(was)))
    client.ok("refresh")
    result = client.ok("compile_class_definition", source=f"{dataclass(becomes)}\nclass A:\n    x: int = 0\n")
    conflict = ("cannot inherit non-frozen dataclass from a frozen one" if becomes
                else "cannot inherit frozen dataclass from a non-frozen one")
    assert result["structuredContent"]["staleSubclasses"] == ["zoo.frosty.B"]
    assert result["structuredContent"]["frozenConflicts"] == {"zoo.frosty.B": conflict}
    assert (f"was before this change (frozen={was}) and keep what the dataclass decorator generated "
            f"then (__init__, __repr__, __eq__...) until made again; zoo.frosty.B cannot be made again "
            f"as written (the dataclass decorator now raises TypeError: {conflict}), so a new "
            "session's import of zoo.frosty fails until compile_class_definition makes it "
            f"frozen={becomes} as well, or zoo.frosty.A is changed back") in text(result)
    assert "as it stands" not in text(result)        # made again as written, it fails
    for tool, arguments in [("compile_method", {"source": "def m(self):\n    return 1\n"}),
                            ("delete_method", {"selector": "norm"})]:
        message = client.error(tool, "refused", className="B", **arguments)
        assert message == (f"zoo.frosty.B cannot be made again as written: its frozen no longer agrees "
                           f"with its dataclass bases' (the dataclass decorator raises TypeError: "
                           f"{conflict}), so a new session's import of zoo.frosty fails. Make it "
                           f"frozen={becomes} first (compile_class_definition, its definition with "
                           "that decorator argument), or change its base back")
    client.ok("compile_class_definition", source=f"{dataclass(becomes)}\nclass B(A):\n    y: int = 1\n")
    client.ok("compile_method", className="B", source="def m(self):\n    return 1\n")
    namespace = {}
    exec(disk(image, "zoo/frosty.py"), namespace)    # as a new session's import runs it
    assert namespace["B"]().m() == client.view.module("zoo.frosty").B().m() == 1


# A's frozen made True, or its x given a default: B(A) adding y cannot be made again.
A_CHANGED_UNDER_B = pytest.mark.parametrize("base, conflicts, said", [
    ("@dataclasses.dataclass(frozen=True)\nclass A:\n    x: int\n", "frozenConflicts",
     "cannot inherit non-frozen dataclass from a frozen one"),
    ("@dataclasses.dataclass\nclass A:\n    x: int = 0\n", "fieldOrderConflicts",
     misordered_fields_error("x", "y")),
], ids=["frozen", "field-order"])


@A_CHANGED_UNDER_B
def test_a_subclass_in_another_module_the_decorator_would_refuse_is_re_imported_either_way(
        client, image, base, conflicts, said):
    # A's frozen changed: zoo.thawed's B was only noted (frozenConflicts), kept live and
    # not named failing, while a field-order conflict there was re-imported and named.
    (image / "zoo" / "based.py").write_text("import dataclasses\n\n\n@dataclasses.dataclass\nclass A:\n"
                                            "    x: int\n")
    (image / "zoo" / "thawed.py").write_text("import dataclasses\n\nfrom zoo.based import A\n\n\n"
                                             "@dataclasses.dataclass\nclass B(A):\n    y: int\n")
    (image / "zoo" / "thawread.py").write_text("from zoo.thawed import B\n")
    client.ok("refresh")
    result = client.ok("compile_class_definition", dictionaryName="zoo.based", source=base)["structuredContent"]
    assert result["reimported"] == ["zoo.thawed", "zoo.thawread"]
    assert result["importErrors"]["zoo.thawed"] == f"TypeError: {said}"
    assert result["importErrors"]["zoo.thawread"] == f"TypeError: {said}"
    # Named as before the re-import too: the key a client may rely on stays.
    assert (result["staleSubclasses"], result[conflicts]) == (["zoo.thawed.B"], {"zoo.thawed.B": said})
    with pytest.raises(TypeError, match=said):
        exec(disk(image, "zoo/thawed.py").replace("from zoo.based import A", disk(image, "zoo/based.py")), {})


# A (x without a default) and B on it, no field of its own: B is made again by a change
# of its method n, which the two tools below make.
A_AND_B = ("import dataclasses\n\n\n@dataclasses.dataclass\nclass A:\n    x: int\n\n\n"
           "@dataclasses.dataclass\nclass B(A):\n    def n(self):\n        return 1\n")
B_MADE_AGAIN = pytest.mark.parametrize("tool, arguments", [
    ("compile_method", {"source": "def n(self):\n    return 2\n"}),
    ("delete_method", {"selector": "n"}),
])
C_ON_B = "import dataclasses\n\nfrom zoo.based import B\n\n\n@dataclasses.dataclass\nclass C(B):\n    z: int\n"
A_GIVEN_A_DEFAULT = "@dataclasses.dataclass\nclass A:\n    x: int = 0\n"


@B_MADE_AGAIN
def test_a_subclass_made_again_by_a_method_change_re_imports_the_modules_it_leaves_unmakeable(
        client, image, tool, arguments):
    # B (no field of its own) made again from A's x given a default: zoo.far's C, whose
    # `z: int` now follows x, was named in fieldOrderConflicts but kept live, its module
    # not named failing, as compile_class_definition names it.
    (image / "zoo" / "based.py").write_text(A_AND_B)
    (image / "zoo" / "far.py").write_text(C_ON_B)
    client.ok("refresh")
    client.ok("compile_class_definition", dictionaryName="zoo.based", source=A_GIVEN_A_DEFAULT)
    result = client.ok(tool, className="B", **arguments)["structuredContent"]
    said = misordered_fields_error("x", "z")
    assert (result["fieldOrderConflicts"], result["reimported"], result["importErrors"]) == (
        {"zoo.far.C": said}, ["zoo.far"], {"zoo.far": f"TypeError: {said}"})
    assert client.view.module("zoo.far") is None


@B_MADE_AGAIN
def test_a_subclass_made_again_by_a_method_change_loads_the_subclass_modules_not_yet_loaded(
        client, image, tool, arguments):
    # zoo.later (C on B, `z: int`) brought in after A's x was given a default, never loaded
    # here: B made again from A's new x, C was no live subclass, and its module, failing in
    # every new session, went unnamed (only compile_class_definition loaded such modules).
    (image / "zoo" / "based.py").write_text(A_AND_B)
    client.ok("refresh")
    client.ok("compile_class_definition", dictionaryName="zoo.based", source=A_GIVEN_A_DEFAULT)
    (image / "zoo" / "later.py").write_text(C_ON_B)
    client.ok("refresh")
    assert "zoo.later" not in client.view.loaded_modules()
    result = client.ok(tool, className="B", **arguments)["structuredContent"]
    said = misordered_fields_error("x", "z")
    assert (result["staleSubclasses"], result["fieldOrderConflicts"]) == (["zoo.later.C"], {"zoo.later.C": said})
    assert (result["reimported"], result["importErrors"]) == (["zoo.later"], {"zoo.later": f"TypeError: {said}"})
    with pytest.raises(TypeError, match=said):
        exec(disk(image, "zoo/later.py").replace("from zoo.based import B", disk(image, "zoo/based.py")), {})


def test_a_post_init_gained_or_lost_loads_no_subclass_module(client, image):
    # A __post_init__ leaves every subclass makeable: a module loaded for it would only have
    # its subclasses made from A as it was, stale here for nothing.
    (image / "zoo" / "based.py").write_text("import dataclasses\n\n\n@dataclasses.dataclass\nclass A:\n"
                                            "    x: int\n")
    (image / "zoo" / "later.py").write_text("import dataclasses\n\nfrom zoo.based import A\n\n\n"
                                            "@dataclasses.dataclass\nclass C(A):\n    z: int\n")
    client.ok("refresh")
    for tool, arguments in [("compile_method", {"source": "def __post_init__(self):\n    self.x += 1\n"}),
                            ("delete_method", {"selector": "__post_init__"})]:
        result = client.ok(tool, className="A", **arguments)["structuredContent"]
        assert "staleSubclasses" not in result and "zoo.later" not in client.view.loaded_modules()
    assert repr(client.view.module("zoo.later").C(1, 2)) == "C(x=1, z=2)"


def test_a_class_definition_leaving_fields_and_frozen_as_they_were_loads_no_subclass_module(client, image):
    # compile_class_definition loaded zoo.later (C on A) for a __post_init__ gained or lost,
    # which compile_method and delete_method do not: C made from A as it was, for nothing.
    (image / "zoo" / "based.py").write_text("import dataclasses\n\n\n@dataclasses.dataclass\nclass A:\n"
                                            "    x: int\n")
    (image / "zoo" / "later.py").write_text("import dataclasses\n\nfrom zoo.based import A\n\n\n"
                                            "@dataclasses.dataclass\nclass C(A):\n    z: int\n")
    client.ok("refresh")
    head = "@dataclasses.dataclass\nclass A:\n    x: int\n"
    for body in ["\n    def __post_init__(self):\n        self.x += 1\n",    # gained
                 "\n    def __post_init__(self):\n        self.x += 2\n",    # its body changed
                 "\n    def n(self):\n        return 1\n"]:                  # lost, a method added
        result = client.ok("compile_class_definition", source=head + body,
                           recompileMethods=False)["structuredContent"]
        assert result["outcome"] == "updated" and "staleSubclasses" not in result
        assert "zoo.later" not in client.view.loaded_modules()
    assert repr(client.view.module("zoo.later").C(1, 2)) == "C(x=1, z=2)"


def test_the_modules_importing_a_class_s_own_module_left_failing_are_named_failing_too(client, image):
    # B (A's own module) made unmakeable by A's x given a default: zoo.shelves was named
    # failing in a new session, not the modules importing it as they run, which fail with it.
    (image / "zoo" / "shelves.py").write_text(
        "import dataclasses\n\n\n@dataclasses.dataclass\nclass A:\n    x: int\n\n\n"
        "@dataclasses.dataclass\nclass B(A):\n    y: int\n")
    (image / "zoo" / "shelfread.py").write_text("from zoo.shelves import B\n")
    (image / "zoo" / "shelfuse.py").write_text("import zoo.shelfread\n")
    (image / "zoo" / "shelflazy.py").write_text("def load():\n    from zoo.shelves import B\n    return B\n")
    client.ok("refresh")
    shelves = client.view.module("zoo.shelves")
    result = client.ok("compile_class_definition", dictionaryName="zoo.shelves",
                       source=A_GIVEN_A_DEFAULT)
    said = misordered_fields_error("x", "y")
    data = result["structuredContent"]
    assert (data["fieldOrderConflicts"], data["failingImporters"]) == (
        {"zoo.shelves.B": said}, {"zoo.shelves": ["zoo.shelfread", "zoo.shelfuse"]})
    assert ("; a new session's import of zoo.shelfread, zoo.shelfuse, importing zoo.shelves as "
            "they run, fails too") in text(result)
    assert "reimported" not in data and client.view.module("zoo.shelves") is shelves   # not re-imported
    namespace = {}
    with pytest.raises(TypeError, match=said):
        exec(disk(image, "zoo/shelves.py"), namespace)        # as a new session's import runs it
    # B given a default, zoo.shelves imports again: nothing is named failing.
    result = client.ok("compile_class_definition", dictionaryName="zoo.shelves",
                       source="@dataclasses.dataclass\nclass B(A):\n    y: int = 1\n")
    assert "failingImporters" not in result["structuredContent"]


NESTED_ON_A = ("import dataclasses\n\nfrom zoo.based import A\n\n\nclass Outer:\n    class Mid:\n"
               "        @dataclasses.dataclass\n        class Inner(A):\n            y: int\n")


@A_CHANGED_UNDER_B
def test_a_dataclass_subclass_nested_in_a_class_of_another_module_is_judged_and_re_imported(
        client, image, base, conflicts, said):
    # Outer.Mid.Inner was never judged (View.defines takes top-level classes only): nothing
    # was said, and zoo.nests and zoo.nestread were committed failing in every new session.
    (image / "zoo" / "based.py").write_text("import dataclasses\n\n\n@dataclasses.dataclass\nclass A:\n"
                                            "    x: int\n")
    (image / "zoo" / "nests.py").write_text(NESTED_ON_A)
    (image / "zoo" / "nestread.py").write_text("from zoo.nests import Outer\n")
    client.ok("refresh")
    result = client.ok("compile_class_definition", dictionaryName="zoo.based", source=base)
    data = result["structuredContent"]
    assert (data["staleSubclasses"], data[conflicts]) == (["zoo.nests.Outer.Mid.Inner"],
                                                          {"zoo.nests.Outer.Mid.Inner": said})
    assert (data["reimported"], data["importErrors"]) == (
        ["zoo.nestread", "zoo.nests"], {"zoo.nestread": f"TypeError: {said}", "zoo.nests": f"TypeError: {said}"})
    # Nested classes are not addressed by the tools: the class statement holding it is named.
    assert ("so a new session's import of zoo.nests fails until compile_class_definition on zoo.nests.Outer "
            "(whose class statement holds it)") in text(result)
    with pytest.raises(TypeError, match=said):
        exec(disk(image, "zoo/nests.py").replace("from zoo.based import A", disk(image, "zoo/based.py")), {})


def test_the_importers_of_a_module_left_failing_by_a_nested_dataclass_subclass_are_named_failing(
        client, image):
    # Inner, nested in Outer of A's own module, after A's x was given a default: neither
    # zoo.nestshelf nor zoo.nestread was named, and once Inner was judged, its module was
    # taken from its name (`zoo.nestshelf.Outer`), so its importers still went unnamed.
    (image / "zoo" / "nestshelf.py").write_text(
        "import dataclasses\n\n\n@dataclasses.dataclass\nclass A:\n    x: int\n\n\n"
        "class Outer:\n    @dataclasses.dataclass\n    class __Inner(A):\n        y: int\n")
    (image / "zoo" / "nestread.py").write_text("from zoo.nestshelf import Outer\n")
    client.ok("refresh")
    client.view.module("zoo.nestread")
    result = client.ok("compile_class_definition", dictionaryName="zoo.nestshelf", source=A_GIVEN_A_DEFAULT)
    data = result["structuredContent"]
    said = misordered_fields_error("x", "y")
    assert (data["fieldOrderConflicts"], data["failingImporters"]) == (
        {"zoo.nestshelf.Outer.__Inner": said}, {"zoo.nestshelf": ["zoo.nestread"]})
    assert "; a new session's import of zoo.nestread, importing zoo.nestshelf as it runs, fails too" in text(result)
    with pytest.raises(TypeError, match=said):
        exec(disk(image, "zoo/nestshelf.py"), {})        # as a new session's import runs it


def test_a_plain_base_binding_a_name_a_nested_dataclass_subclass_declares_names_it_misordered(client, image):
    (image / "zoo" / "plains.py").write_text("class Plain:\n    pass\n")
    (image / "zoo" / "nestplains.py").write_text(
        "import dataclasses\n\nfrom zoo.plains import Plain\n\n\nclass Outer:\n"
        "    @dataclasses.dataclass\n    class Labelled(Plain):\n        label: str\n        n: int\n")
    client.ok("refresh")
    result = client.ok("compile_method", className="Plain", source="def label(self):\n    return 'plain'\n")
    data = result["structuredContent"]
    said = misordered_fields_error("label", "n")
    assert data["fieldOrderConflicts"] == {"zoo.nestplains.Outer.Labelled": said}
    assert (data["reimported"], data["importErrors"]) == (["zoo.nestplains"], {"zoo.nestplains": f"TypeError: {said}"})
    assert ("so a new session's import of zoo.nestplains fails until compile_class_definition on "
            "zoo.nestplains.Outer (whose class statement holds it) gives n a default (or kw_only)") in text(result)


def test_a_stale_nested_dataclass_subclass_is_made_again_by_its_enclosing_class_as_the_note_says(
        client, image):
    # A gains a __post_init__: Outer.Inner, made before, does not call it until made again,
    # and compile_class_definition addresses Outer, not Outer.Inner.
    (image / "zoo" / "based.py").write_text("import dataclasses\n\n\n@dataclasses.dataclass\nclass A:\n"
                                            "    x: int\n")
    (image / "zoo" / "nests.py").write_text(
        "import dataclasses\n\nfrom zoo.based import A\n\n\nclass Outer:\n"
        "    @dataclasses.dataclass\n    class Inner(A):\n        y: int\n")
    client.ok("refresh")
    client.view.module("zoo.nests")
    result = client.ok("compile_method", className="A", source="def __post_init__(self):\n    self.x += 1\n")
    assert result["structuredContent"]["staleSubclasses"] == ["zoo.nests.Outer.Inner"]
    assert ("; compile_class_definition on zoo.nests.Outer (holding zoo.nests.Outer.Inner) (its definition "
            "as it stands) makes it again") in text(result)
    assert client.view.module("zoo.nests").Outer.Inner(1, 2).x == 1
    client.ok("compile_class_definition", dictionaryName="zoo.nests",
              source=disk(image, "zoo/nests.py").split("\n\n\n")[1])
    assert client.view.module("zoo.nests").Outer.Inner(1, 2).x == 2


def test_the_importers_of_a_module_failing_through_a_stale_base_are_named_until_it_is_re_imported(
        client, image):
    # zoo.tiered's C, on B left stale, still imports here (not re-imported) while every new
    # session's import of it, and of zoo.tierread importing it, fails.
    (image / "zoo" / "tiers.py").write_text(A_AND_B)
    (image / "zoo" / "tiered.py").write_text("import dataclasses\n\nfrom zoo.tiers import B\n\n\n"
                                             "@dataclasses.dataclass\nclass C(B):\n    z: int\n")
    (image / "zoo" / "tierread.py").write_text("from zoo.tiered import C\n")
    client.ok("refresh")
    said = misordered_fields_error("x", "z")
    data = client.ok("compile_class_definition", dictionaryName="zoo.tiers",
                     source=A_GIVEN_A_DEFAULT)["structuredContent"]
    assert (data["fieldOrderConflicts"], data["failingImporters"]) == (
        {"zoo.tiered.C": said}, {"zoo.tiered": ["zoo.tierread"]})
    assert "reimported" not in data
    # B made again, both are re-imported and named failing there (importErrors) instead.
    data = client.ok("compile_method", className="B", source="def n(self):\n    return 2\n")["structuredContent"]
    assert (data["reimported"], sorted(data["importErrors"])) == (
        ["zoo.tiered", "zoo.tierread"], ["zoo.tiered", "zoo.tierread"])
    assert "failingImporters" not in data


PLAIN_AND_LABELLED = ("import dataclasses\n\n\nclass Plain:\n    pass\n\n\n"
                      "@dataclasses.dataclass\nclass Labelled(Plain):\n    label: str\n    n: int\n")
LABELLED_ELSEWHERE = ("import dataclasses\n\nfrom zoo.plains import Plain\n\n\n"
                      "@dataclasses.dataclass\nclass Far(Plain):\n    label: str\n    n: int\n")


@pytest.mark.parametrize("tool, arguments", [
    ("compile_method", {"className": "Plain", "source": "def label(self):\n    return 'plain'\n"}),
    ("compile_class_definition", {"source": "class Plain:\n    label = 3\n"}),
])
def test_a_plain_base_binding_a_name_a_dataclass_subclass_declares_names_it_misordered(
        client, image, tool, arguments):
    # Plain given `label`: Labelled's `label: str` takes it as its default (the decorator's
    # getattr), and `n: int` then follows a default. Nothing was said, and zoo.plains (its
    # own module), zoo.plainread importing it, and zoo.farplains (never loaded here) were
    # committed failing in every new session.
    (image / "zoo" / "plains.py").write_text(PLAIN_AND_LABELLED)
    (image / "zoo" / "plainread.py").write_text("from zoo.plains import Labelled\n")
    (image / "zoo" / "farplains.py").write_text(LABELLED_ELSEWHERE)
    client.ok("refresh")
    client.view.module("zoo.plains")
    assert "zoo.farplains" not in client.view.loaded_modules()
    result = client.ok(tool, **arguments)
    data = result["structuredContent"]
    said = misordered_fields_error("label", "n")
    assert data["fieldOrderConflicts"] == {"zoo.farplains.Far": said, "zoo.plains.Labelled": said}
    assert data["failingImporters"] == {"zoo.plains": ["zoo.plainread"]}
    assert (data["reimported"], data["importErrors"]) == (["zoo.farplains"], {"zoo.farplains": f"TypeError: {said}"})
    assert ("; zoo.plains.Labelled cannot be made again as written: its field n, without a default, would "
            "follow the field label of zoo.plains.Labelled, which has one (declared without a value, it "
            "takes what zoo.plains.Plain binds to label as its default), in its __init__ (the dataclass "
            f"decorator now raises TypeError: {said}), so a new session's import of zoo.plains fails until "
            "compile_class_definition gives n a default (or kw_only), or zoo.plains.Plain is changed back") in text(result)
    with pytest.raises(TypeError, match=said):
        exec(disk(image, "zoo/plains.py"), {})        # as a new session's import runs it
    message = client.error("compile_method", "refused", className="Labelled", source="def m(self):\n    return 1\n")
    assert message.endswith("Give n a default (or kw_only) first (compile_class_definition, its definition "
                            "with that), or change zoo.plains.Plain back")


MID = "@dataclasses.dataclass\nclass Mid(Plain):\n    label: str\n"


@pytest.mark.parametrize("tool, arguments", [
    ("compile_method", {"className": "Plain", "source": "def label(self):\n    return 'plain'\n"}),
    ("compile_class_definition", {"source": "class Plain:\n    label = 3\n"}),
])
@pytest.mark.parametrize("mid_module", ["zoo.mids", "zoo.plains"])
def test_a_plain_base_binding_a_name_names_a_dataclass_subclass_inheriting_that_field_elsewhere(
        client, image, tool, arguments, mid_module):
    # Plain given `label`: Mid's `label: str` takes it as its default in a new session, so
    # Leaf's `n: int`, inherited field after it, follows a default. zoo.leaves annotates no
    # `label` itself, so it was not loaded for the change, and nothing was said of it or of
    # zoo.leafread, both committed failing in every new session.
    beside = mid_module == "zoo.plains"
    (image / "zoo" / "plains.py").write_text("import dataclasses\n\n\nclass Plain:\n    pass\n"
                                             + ("\n\n" + MID if beside else ""))
    if not beside:
        (image / "zoo" / "mids.py").write_text("import dataclasses\n\nfrom zoo.plains import Plain\n\n\n" + MID)
    (image / "zoo" / "leaves.py").write_text(f"import dataclasses\n\nfrom {mid_module} import Mid\n\n\n"
                                             "@dataclasses.dataclass\nclass Leaf(Mid):\n    n: int\n")
    (image / "zoo" / "leafread.py").write_text("from zoo.leaves import Leaf\n")
    client.ok("refresh")
    client.view.module("zoo.plains")
    data = client.ok(tool, **arguments)["structuredContent"]
    said = misordered_fields_error("label", "n")
    assert data["fieldOrderConflicts"] == {"zoo.leaves.Leaf": said}
    assert data["failingImporters"] == {"zoo.leaves": ["zoo.leafread"]}
    namespace = {}
    exec(disk(image, "zoo/plains.py"), namespace)
    if not beside:
        exec(disk(image, "zoo/mids.py").replace("from zoo.plains import Plain", ""), namespace)
    with pytest.raises(TypeError, match=said):   # as a new session's import runs it
        exec(disk(image, "zoo/leaves.py").replace(f"from {mid_module} import Mid", ""), namespace)


def test_a_plain_base_binding_a_name_a_dataclass_annotates_in_a_class_level_block_names_it(client, image):
    # `label: str` under a class-level `if` is a field all the same (the class body's
    # annotations), but only the class statement's own lines were looked at: zoo.ifplains
    # was not loaded, and nothing was said of it, committed failing in every new session.
    (image / "zoo" / "plains.py").write_text("class Plain:\n    pass\n")
    (image / "zoo" / "ifplains.py").write_text(
        "import dataclasses\n\nfrom zoo.plains import Plain\n\n\n@dataclasses.dataclass\n"
        "class Guarded(Plain):\n    if True:\n        label: str\n    n: int\n")
    client.ok("refresh")
    client.view.module("zoo.plains")
    data = client.ok("compile_method", className="Plain", source="def label(self):\n    return 'plain'\n")["structuredContent"]
    said = misordered_fields_error("label", "n")
    assert data["fieldOrderConflicts"] == {"zoo.ifplains.Guarded": said}
    assert (data["reimported"], data["importErrors"]) == (["zoo.ifplains"], {"zoo.ifplains": f"TypeError: {said}"})


LABELLING_PLAIN = "import dataclasses\n\n\nclass Plain:\n    label = 3\n"
LABELLED_AFTER_A_DEFAULT = "@dataclasses.dataclass\nclass Labelled(Plain):\n    n: int = 0\n    label: str\n"
DEF_LABELLING_PLAIN = "import dataclasses\n\n\nclass Plain:\n    def label(self):\n        return 'plain'\n"


@pytest.mark.parametrize("plain, tool, arguments", [
    (LABELLING_PLAIN, "compile_class_definition", {"source": "class Plain:\n    pass\n"}),
    (DEF_LABELLING_PLAIN, "delete_method", {"className": "Plain", "selector": "label"}),
], ids=["redefined without it", "its def deleted"])
def test_a_plain_base_losing_a_name_a_dataclass_subclass_declares_names_it_misordered(
        client, image, monkeypatch, plain, tool, arguments):
    # Plain's `label` was Labelled's `label: str`'s default (the decorator's getattr, which
    # then set it on Labelled); Plain losing it, that field has none in a new session and
    # follows `n: int = 0`. Nothing was said, and zoo.plains, zoo.plainread and
    # zoo.farplains (never loaded here) were committed failing in every new session.
    (image / "zoo" / "plains.py").write_text(plain + "\n\n" + LABELLED_AFTER_A_DEFAULT)
    (image / "zoo" / "plainread.py").write_text("from zoo.plains import Labelled\n")
    (image / "zoo" / "farplains.py").write_text("import dataclasses\n\nfrom zoo.plains import Plain\n\n\n"
                                                + LABELLED_AFTER_A_DEFAULT.replace("Labelled", "Far"))
    client.ok("refresh")
    client.view.module("zoo.plains")
    assert "zoo.farplains" not in client.view.loaded_modules()
    monkeypatch.setattr(trial, "TIMEOUT", 1e-6)   # tried, refused (test_tools_trial_import)
    result = client.ok(tool, **arguments)
    data = result["structuredContent"]
    said = misordered_fields_error("n", "label")
    assert data["fieldOrderConflicts"] == {"zoo.farplains.Far": said, "zoo.plains.Labelled": said}
    assert data["failingImporters"] == {"zoo.plains": ["zoo.plainread"]}
    assert (data["reimported"], data["importErrors"]) == (["zoo.farplains"], {"zoo.farplains": f"TypeError: {said}"})
    assert ("; zoo.plains.Labelled cannot be made again as written: its field label, without a default, would "
            "follow the field n of zoo.plains.Labelled, which has one, in its __init__ (declared without a "
            "value, label had what zoo.plains.Plain bound to it as its default, which is gone; "
            f"the dataclass decorator now raises TypeError: {said}), so a new session's import of zoo.plains "
            "fails until compile_class_definition gives label a default (or kw_only), or zoo.plains.Plain "
            "is changed back") in text(result)
    with pytest.raises(TypeError, match=said):
        exec(disk(image, "zoo/plains.py"), {})        # as a new session's import runs it
    message = client.error("compile_method", "refused", className="Labelled", source="def m(self):\n    return 1\n")
    assert message.startswith("zoo.plains.Labelled cannot be made again as written: its field label, without "
                              "a default, would follow the field n of zoo.plains.Labelled, which has one"), message
    assert message.endswith("Give label a default (or kw_only) first (compile_class_definition, its definition "
                            "with that), or bind label in a base of zoo.plains.Labelled again (declared without "
                            "a value, it takes its default from one)")
    # As the note says: label given a default, zoo.plains imports again and nothing is named.
    result = client.ok("compile_class_definition", source="@dataclasses.dataclass\nclass Labelled(Plain):\n"
                                                          "    n: int = 0\n    label: str = 'x'\n")
    assert "fieldOrderConflicts" not in result["structuredContent"]
    exec(disk(image, "zoo/plains.py"), {})


def test_a_plain_base_losing_a_name_a_dataclass_subclass_binds_itself_names_nothing(client, image):
    # `label: str = 3` is Labelled's own default, as `label: str` taking Plain's looks live.
    (image / "zoo" / "plains.py").write_text(LABELLING_PLAIN + "\n\n" + LABELLED_AFTER_A_DEFAULT.replace(
        "label: str", "label: str = 3"))
    client.ok("refresh")
    client.view.module("zoo.plains")
    data = client.ok("compile_class_definition", source="class Plain:\n    pass\n")["structuredContent"]
    assert "fieldOrderConflicts" not in data and "failingImporters" not in data
    exec(disk(image, "zoo/plains.py"), {})


def test_a_name_no_dataclass_subclass_declares_gained_by_a_plain_base_loads_nothing(client, image):
    (image / "zoo" / "plains.py").write_text(PLAIN_AND_LABELLED)
    (image / "zoo" / "farplains.py").write_text(LABELLED_ELSEWHERE)
    client.ok("refresh")
    data = client.ok("compile_method", className="Plain", source="def other(self):\n    return 1\n")["structuredContent"]
    assert "fieldOrderConflicts" not in data and "zoo.farplains" not in client.view.loaded_modules()


def test_compile_method_and_delete_method_on_a_subclass_left_with_misordered_fields_say_why_they_refuse(
        client, image):
    # Record's x given a default: Near's `y: int` follows it. compile_method and
    # delete_method on Near answered a bare compileError from the class statement.
    (image / "zoo" / "recorded.py").write_text(
        "import dataclasses\n\n\n@dataclasses.dataclass\nclass Record:\n    x: int\n\n\n"
        "@dataclasses.dataclass\nclass Near(Record):\n    y: int\n\n    def norm(self):\n"
        "        return self.y\n")
    client.ok("refresh")
    client.ok("compile_class_definition", dictionaryName="zoo.recorded",
              source="@dataclasses.dataclass\nclass Record:\n    x: int = 0\n")
    before = disk(image, "zoo/recorded.py")
    for tool, arguments in [("compile_method", {"source": "def m(self):\n    return 1\n"}),
                            ("delete_method", {"selector": "norm"})]:
        message = client.error(tool, "refused", className="Near", **arguments)
        assert message == ("zoo.recorded.Near cannot be made again as written: its field y, without a "
                           "default, would follow the field x of zoo.recorded.Record, which has one, in "
                           "its __init__ (the dataclass decorator raises TypeError: "
                           f"{misordered_fields_error('x', 'y')}), so a new session's import of zoo.recorded "
                           "fails. Give y a default (or kw_only) first (compile_class_definition, its "
                           "definition with that), or change zoo.recorded.Record back")
    assert disk(image, "zoo/recorded.py") == before
    client.ok("compile_class_definition", source="@dataclasses.dataclass\nclass Near(Record):\n"
                                                 "    y: int = dataclasses.field(kw_only=True)\n")
    client.ok("compile_method", className="Near", source="def m(self):\n    return 1\n")
    namespace = {}
    exec(disk(image, "zoo/recorded.py"), namespace)    # as a new session's import runs it
    assert namespace["Near"](y=2).m() == client.view.module("zoo.recorded").Near(y=2).m() == 1


def test_a_dataclass_left_on_a_frozen_and_a_thawed_base_is_told_the_frozen_that_agrees_if_any(client, image):
    # B was told to be made frozen=True, which Python 3.13's dataclass decorator refuses
    # too while one of its dataclass bases (H) is not frozen.
    (image / "zoo" / "slushy.py").write_text(
        "import dataclasses\n\n\n@dataclasses.dataclass\nclass A:\n    x: int = 0\n\n\n"
        "@dataclasses.dataclass\nclass H:\n    h: int = 0\n\n\n"
        "@dataclasses.dataclass\nclass B(A, H):\n    y: int = 1\n")
    client.ok("refresh")
    result = client.ok("compile_class_definition", dictionaryName="zoo.slushy",
                       source="@dataclasses.dataclass(frozen=True)\nclass A:\n    x: int = 0\n")
    conflict = "cannot inherit non-frozen dataclass from a frozen one"
    assert result["structuredContent"]["frozenConflicts"] == {"zoo.slushy.B": conflict}
    try:    # B made frozen, as the running Python's decorator takes it
        made_frozen = disk(image, "zoo/slushy.py").replace("dataclass\nclass B",
                                                           "dataclass(frozen=True)\nclass B")
        exec(made_frozen, {})
        remedy, until = ("Make it frozen=True first",
                         "until compile_class_definition makes it frozen=True as well, or zoo.slushy.A")
    except TypeError:
        remedy, until = ("Neither frozen value agrees with its dataclass bases, some frozen and some "
                         "not, which this Python's dataclass decorator refuses either way: change its "
                         "base back", "until zoo.slushy.A is changed back (neither frozen value agrees")
    assert until in text(result)
    message = client.error("compile_method", "refused", className="B", source="def m(self):\n    return 1\n")
    assert f"fails. {remedy}" in message


def test_a_frozen_dataclass_redefined_unfrozen_lets_its_instances_be_assigned(client, image):
    # Its frozen __setattr__ and __delattr__ were left on the live class: A().x = 5 raised
    # FrozenInstanceError in the session, not in a new one.
    (image / "zoo" / "icy.py").write_text("import dataclasses\n\n\n@dataclasses.dataclass(frozen=True)\n"
                                          "class A:\n    x: int = 0\n")
    client.ok("refresh")
    old = client.view.module("zoo.icy").A()
    client.ok("compile_class_definition", source=A_GIVEN_A_DEFAULT)
    fresh = client.view.module("zoo.icy").A()
    fresh.x, old.x = 5, 6
    del fresh.x
    assert old.x == 6 and "__setattr__" not in vars(client.view.module("zoo.icy").A)


MIXED = """\
import dataclasses


class Mixin:
    def hello(self):
        return 1


@dataclasses.dataclass
class D(Mixin):
    x: int = 0
"""


def test_a_mixin_given_a_post_init_names_its_dataclass_subclasses_which_are_made_again_with_a_method(client):
    client.view.add_module("zoo.mixed", MIXED)
    mixed = client.view.module("zoo.mixed")
    result = client.ok("compile_method", className="Mixin", source="def __post_init__(self):\n    self.x = 9\n")
    assert result["structuredContent"]["staleSubclasses"] == ["zoo.mixed.D"]
    assert ("the dataclass subclasses zoo.mixed.D were made from what zoo.mixed.Mixin was before this "
            "change (no __post_init__)") in text(result)
    assert mixed.D().x == 0                                  # the limit noted
    client.ok("compile_method", className="D", source="def m(self):\n    return 1\n")
    assert mixed.D().x == 9                                  # made again: it follows its bases


def test_a_dataclass_made_again_with_its_lambda_factory_leaves_no_subclass_stale(client):
    # The method's compile makes A again: its new lambda was taken for a changed field.
    client.view.add_module("zoo.factory", FAMILY.replace(
        "    x: int = 0\n", "    x: int = 0\n    xs: list = dataclasses.field(default_factory=lambda: [])\n"))
    client.view.module("zoo.factory")
    result = client.ok("compile_method", className="zoo.factory.A", source="def norm(self):\n    return 0\n")
    assert "staleSubclasses" not in result["structuredContent"] and "note" not in text(result)


def test_the_answer_says_what_the_class_body_made_from_a_compiled_method_still_holds(client):
    # Only the def is compiled: `x = property(get_x)` kept the old get_x here while a new
    # session's had the new one, and nothing said so.
    client.view.add_module("zoo.derived", "class P:\n    def get_x(self):\n        return 1\n\n"
                                          "    x = property(get_x)\n    alias = get_x\n")
    result = client.ok("compile_method", className="P", source="def get_x(self):\n    return 2\n")
    assert result["structuredContent"]["stillOld"] == ["alias", "x"]
    assert ("note: the class body read get_x as the class was made ('x = property(get_x)', "
            "'alias = get_x'), so alias, x still hold the old get_x in this session") in text(result)
    p_class = client.view.module("zoo.derived").P
    assert (p_class().get_x(), p_class().x) == (2, 1)          # the limit the note states
    client.ok("compile_class_definition", source="class P:\n    x = property(get_x)\n    alias = get_x\n")
    assert (p_class().x, p_class().alias()) == (2, 2)
    result = client.ok("compile_method", className="P", source="def other(self):\n    return 3\n")
    assert "stillOld" not in result["structuredContent"] and "note" not in text(result)


def test_what_a_walrus_or_a_match_capture_made_from_a_compiled_method_is_named_as_still_old(client):
    # Not counted among what the reading statement bound: the note named nothing ("so  still hold").
    client.view.add_module("zoo.held", "class H:\n    def get_x(self):\n        return 1\n\n"
                                       "    if (x := property(get_x)):\n        pass\n"
                                       "    match get_x:\n        case held:\n            pass\n")
    result = client.ok("compile_method", className="H", source="def get_x(self):\n    return 2\n")
    assert result["structuredContent"]["stillOld"] == ["held", "x"]
    assert "so held, x still hold the old get_x in this session" in text(result)
    h_class = client.view.module("zoo.held").H
    assert (h_class().get_x(), h_class().x, h_class.held(None)) == (2, 1, 1)


def test_what_a_statement_in_a_class_level_block_made_from_a_compiled_method_is_named_as_still_old(client):
    # The block's own statement was judged: an `if`'s `:=` in its test (flag, which holds
    # True) was named, not the x its body made; a `for` body's y, or a statement binding
    # nothing, named nothing ("so  still hold").
    client.view.add_module("zoo.blocks", "REGISTRY = []\n\n\nclass B:\n    def get_x(self):\n"
                                         "        return 1\n\n    if (flag := True):\n"
                                         "        x = property(get_x)\n    for _ in range(1):\n"
                                         "        y = property(get_x)\n")
    result = client.ok("compile_method", className="B", source="def get_x(self):\n    return 2\n")
    assert result["structuredContent"]["stillOld"] == ["x", "y"]
    assert ("the class body read get_x as the class was made ('x = property(get_x)', "
            "'y = property(get_x)'), so x, y still hold the old get_x in this session") in text(result)
    b_class = client.view.module("zoo.blocks").B
    assert (b_class().get_x(), b_class().x, b_class().y, b_class.flag) == (2, 1, 1, True)
    client.view.add_module("zoo.registered", "REGISTRY = []\n\n\nclass R:\n    def get_x(self):\n"
                                             "        return 1\n\n    REGISTRY.append(get_x)\n")
    result = client.ok("compile_method", className="R", source="def get_x(self):\n    return 2\n")
    assert result["structuredContent"]["stillOld"] == []
    assert ("the class body read get_x as the class was made ('REGISTRY.append(get_x)'), so what "
            "it made from it still holds the old get_x in this session") in text(result)


def test_a_class_given_eq_and_no_hash_is_unhashable_as_python_makes_it(client):
    client.view.add_module("zoo.keys", "class Key:\n    def __init__(self, k):\n        self.k = k\n")
    key_class = client.view.module("zoo.keys").Key
    client.ok("compile_method", className="Key", source="def __eq__(self, other):\n    return self.k == other.k\n")
    assert key_class(1) == key_class(1) and key_class.__hash__ is None
    client.ok("delete_method", className="Key", selector="__eq__")
    assert "__hash__" not in vars(key_class) and hash(key_class(1))


def test_methods_and_classes_go_into_a_module_in_its_own_indentation(client, image):
    # A method sent with spaces into a tab-indented class was prefixed as sent ("\t    return"),
    # and a tab-indented one into a spaced class the reverse: both styles in one file.
    (image / "zoo" / "tabbed.py").write_text("class Tabbed:\n\tdef first(self):\n\t\treturn 1\n")
    client.ok("refresh")
    client.ok("compile_method", className="Tabbed", source="def second(self):\n    if self:\n        return 2\n")
    client.ok("compile_class_definition", dictionaryName="zoo.tabbed",
              source="class Made:\n    def m(self):\n        return Tabbed().second()\n")
    client.ok("compile_class_definition", source="class Tabbed:\n    x = 3\n")
    assert disk(image, "zoo/tabbed.py") == (
        "class Tabbed:\n\tx = 3\n\n\tdef first(self):\n\t\treturn 1\n\n\tdef second(self):\n"
        "\t\tif self:\n\t\t\treturn 2\n\n\nclass Made:\n\tdef m(self):\n\t\treturn Tabbed().second()\n")
    assert client.view.module("zoo.tabbed").Made().m() == 2
    client.ok("compile_method", className="Dog", source="def noise(self):\n\tif self:\n\t\treturn 'grr'\n")
    assert "    def noise(self):\n        if self:\n            return 'grr'\n" in disk(image)
    assert client.view.module("zoo.animals").Dog("d").noise() == "grr"


def test_compile_method_errors(client):
    assert "line 1" in client.error("compile_method", "compileError", className="Dog", source="def (:")
    # The compiler's own errors named the line of the module's file the def would go to,
    # "evaluating the definition raised SyntaxError: ... (animals.py, line 40)".
    assert client.error("compile_method", "compileError", className="Dog",
                        source="def f(self):\n    nonlocal x\n") == "line 2: no binding for nonlocal 'x' found"
    assert client.error("compile_class_definition", "compileError", dictionaryName="zoo.animals",
                        source="class Fresh:\n    return 1\n") == "line 2: 'return' outside function"
    assert client.error("compile_method", "compileError", className="Dog",   # no "line None: "
                        source="def f(self):\n    return '\x00'\n") == "source code string cannot contain null bytes"
    # A class attribute, or several methods, were sent to execute_code "to run other code".
    assert client.error("compile_method", "refused", className="Dog", source="x = 1").endswith(
        "; a class attribute is set by compile_class_definition (get_class_definition gives the "
        "class statement to edit)")
    assert client.error("compile_method", "refused", className="Dog",
                        source="def a(self):\n    pass\n\n\ndef b(self):\n    pass\n").endswith(
        "; send each method in a compile_method call of its own")
    assert "execute_code" in client.error("compile_method", "refused", className="Dog", source="print(1)")
    # A class, to compile_method, or a def or two classes, to compile_class_definition, were
    # sent to execute_code too, which would make them in the workspace alone.
    assert client.error("compile_method", "refused", className="Dog", source="class Inner:\n    pass\n").endswith(
        "; a class is defined by compile_class_definition, a nested one written in the statement of "
        "the class holding it (get_class_definition gives it to edit)")
    assert client.error("compile_class_definition", "refused", dictionaryName="zoo.animals",
                        source="def helper():\n    return 1\n").endswith(
        "; a module-level function is defined by compile_method with className its dictionary, a "
        "method by compile_method with className its class")
    assert client.error("compile_class_definition", "refused", dictionaryName="zoo.animals",
                        source="class A:\n    pass\n\n\nclass B:\n    pass\n").endswith(
        "; send each class in a compile_class_definition call of its own")
    assert "execute_code" in client.error("compile_class_definition", "refused", source="print(1)")
    client.error("compile_method", "compileError", className="Dog",
                 source="@undefined_decorator\ndef noise(self):\n    pass\n")
    assert client.view.module("zoo.animals").Dog("r").noise() == "woof"
    assert not client.view.has_changes
    client.error("compile_method", "notFound", className="Unicorn", source="def f(self): pass")
    client.error("compile_method", "invalidParams", className="Dog")


@pytest.mark.parametrize("class_name", ["int", "object", "builtins.dict", "kern.object", "json.JSONDecoder"])
def test_kernel_guard_refuses_by_name_and_identity(client, class_name):
    message = client.error("compile_method", "refused", className=class_name, source="def f(self):\n    pass\n")
    assert class_name.rpartition(".")[2] in message
    assert not hasattr(object, "f") and not hasattr(int, "f")


def test_a_class_of_a_loaded_kernel_module_is_refused_as_the_kernel_guard_says(client):
    # collections is the kernel's and no image module: this was "notFound: no dictionary
    # named collections", where the kernel guard refuses what the image does not define.
    message = client.error("compile_method", "refused", className="collections.OrderedDict",
                           source="def f(self):\n    pass\n")
    assert message.startswith("collections.OrderedDict is a class of the kernel module collections, "
                              "not the image's, and cannot be modified; "), message
    assert not hasattr(__import__("collections").OrderedDict, "f")
    # Not a class of it: no such class, and said so.
    client.error("compile_method", "notFound", className="collections.NoSuchThing",
                 source="def f(self):\n    pass\n")


def test_an_image_class_named_like_a_kernel_class_is_its_own(client, image):
    client.ok("set_class_comment", className="kern.Exception", comment="Ours.")
    assert client.view.module("kern").Exception.__doc__ == "Ours."
    assert BaseException.__doc__ != "Ours." and Exception.__doc__ != "Ours."
    client.ok("set_class_comment", className="Exception", comment="Still ours.")   # unique in the image
    assert client.view.module("kern").Exception.__doc__ == "Still ours."
    assert Exception.__doc__ != "Still ours."
    client.error("set_class_comment", "refused", className="builtins.Exception", comment="x")


def test_set_class_comment_and_delete_method(client, image):
    client.ok("set_class_comment", className="Dog", comment="A dog.")
    dog = client.view.module("zoo.animals").Dog
    assert dog.__doc__ == "A dog." and 'class Dog(Animal):\n    """A dog."""\n' in disk(image)
    client.ok("delete_method", className="Dog", selector="noise")
    assert dog("r").noise() == "..." and "woof" not in disk(image)
    client.error("delete_method", "notFound", className="Dog", selector="noise")
    client.error("delete_method", "notFound", className="Animal", selector="speak", meta=True)


def test_a_comment_with_a_nul_byte_leaves_the_module_compiling(client, image):
    client.ok("set_class_comment", className="Dog", comment="nul\x00here")
    assert client.view.module("zoo.animals").Dog.__doc__ == "nul\x00here"
    assert "class Dog(Animal):\n    'nul\\x00here'\n" in disk(image)
    assert "Dog" in client.ok("list_classes", dictionaryName="zoo.animals")["structuredContent"]["classes"]


def test_compile_class_definition_in_place_carries_methods(client, image):
    animals = client.view.module("zoo.animals")
    old_dog_class = animals.Dog
    result = client.ok("compile_class_definition", source="class Dog(Animal):\n    legs = 3\n")
    assert result["structuredContent"]["outcome"] == "updated"
    assert result["structuredContent"]["carried"] == ["noise"]
    assert animals.Dog is old_dog_class and old_dog_class.legs == 3 and old_dog_class("r").noise() == "woof"
    assert "    legs = 3\n" in disk(image) and "dogs bark" in disk(image)


def test_compile_class_definition_without_recompile_drops_methods(client, image):
    client.ok("compile_class_definition", source="class Dog(Animal):\n    pass\n", recompileMethods=False)
    assert client.view.module("zoo.animals").Dog("r").noise() == "..."
    assert "woof" not in disk(image)


def test_a_one_line_class_statement_that_would_carry_methods_is_refused_saying_so(client, image):
    # It was refused as "the body of class Dog is written on one line with its header;
    # redefine it with compile_class_definition first": the tool being called, of the
    # class in the module, whose body is on lines of its own.
    before = disk(image)
    message = client.error("compile_class_definition", "refused", source="class Dog(Animal): legs = 3")
    assert message == ("the class statement writes its body on its header's line, where the members it "
                       "leaves out cannot be carried over (noise): write the body on lines of its own, "
                       "or pass recompileMethods false to drop them")
    assert disk(image) == before and not client.view.has_changes
    client.ok("compile_class_definition", source="class Dog(Animal): legs = 3", recompileMethods=False)
    assert client.view.module("zoo.animals").Dog.legs == 3


REGISTRY_META = '''\
class Meta(type):
    _registry = {}

    def __getattr__(cls, name):
        return cls._registry[name]   # a KeyError, not an AttributeError, for a name it lacks

    @property
    def __doc__(cls):
        raise RuntimeError("no doc here")


class Registered(metaclass=Meta):
    """Its own doc."""

    def run(self):
        return 1
'''


def test_a_class_whose_metaclass_getattr_raises_is_edited_whole_and_described(client, image):
    # Asked for __abstractmethods__, its metaclass raised KeyError: compile_method failed
    # with the live class changed and its source not; describe_class failed on __doc__.
    (image / "zoo" / "registry.py").write_text(REGISTRY_META)
    client.ok("refresh")
    client.ok("compile_method", className="Registered", source="def other(self):\n    return 2\n")
    assert "    def other(self):\n        return 2\n" in (image / "zoo" / "registry.py").read_text()
    assert client.view.module("zoo.registry").Registered().other() == 2
    client.ok("delete_method", className="Registered", selector="other")
    assert client.ok("describe_class", className="Registered")["structuredContent"]["doc"] == "Its own doc."


def test_shape_change_refused_with_subclasses_allowed_without(client, image):
    message = client.error("compile_class_definition", "refused",
                           source="class Animal(Exception):\n    pass\n")
    assert "zoo.animals.Dog" in message and not client.view.has_changes
    result = client.ok("compile_class_definition", source='class Keeper:\n    __slots__ = ("dogs", "cats")\n')
    assert result["structuredContent"]["outcome"] == "replaced"
    keeper = client.view.module("zoo.keeper").Keeper()
    keeper.cats = 1
    assert keeper.feed() == ["a says woof"]


@pytest.fixture(params=["enum", "zoo.zenum"], ids=["standard library", "image's copy"])
def importing_enum(request, client):
    """The import statement giving a module `enum`: the standard library's, or a copy of it
    the image holds under another name, whose EnumType is no enum.EnumType."""
    if request.param == "enum":
        return "import enum"
    client.view.add_module("zoo.zenum", Path(enum.__file__).read_text())
    return "from zoo import zenum as enum"


def test_an_enum_redefined_is_replaced_with_its_new_members(client, image, importing_enum):
    # EnumType guards its members against setattr: copied in place, the new namespace
    # half-landed (the member list replaced, then "cannot reassign member 'RED'", kind
    # other) in the live class, while the source stayed as it was; so it did for an Enum
    # of the image's copy of the enum module, after the standard library's was replaced.
    client.view.add_module("zoo.colors", f"{importing_enum}\n\n\nclass Color(enum.Enum):\n    RED = 1\n\n"
                                         "    def label(self):\n        return self.name\n")
    client.ok("commit")
    result = client.ok("compile_class_definition",
                       source="class Color(enum.Enum):\n    RED = 1\n    BLUE = 3\n")
    assert result["structuredContent"]["outcome"] == "replaced"
    color = client.view.module("zoo.colors").Color
    assert [m.name for m in color] == ["RED", "BLUE"] and color.BLUE.label() == "BLUE"
    assert "    BLUE = 3\n" in (image / "zoo" / "colors.py").read_text()


PARTS = ("import enum\nfrom dataclasses import dataclass\n\n\nclass Shape(enum.Enum):\n    ROUND = 1\n\n\n"
          "@dataclass\nclass Part:\n    shape: Shape = Shape.ROUND\n\n    def is_round(self):\n"
          "        return self.shape is Shape.ROUND\n\n\nDEFAULT = Shape.ROUND\n")


def test_a_class_made_anew_is_taken_again_by_what_its_module_made_from_it_below(client, image):
    # The module's own code below the enum kept the old one's members (a field default, a
    # constant): Part().is_round() was False in the session, True in every new one.
    (image / "zoo" / "parts.py").write_text(PARTS)
    client.ok("refresh")
    result = client.ok("compile_class_definition", source="class Shape(enum.Enum):\n    ROUND = 1\n    SQUARE = 2\n",
                       dictionaryName="zoo.parts")
    assert result["structuredContent"]["outcome"] == "replaced"
    assert "; re-imported zoo.parts;" in text(result), text(result)
    parts = client.view.module("zoo.parts")
    assert parts.Part().is_round() and parts.DEFAULT is parts.Shape.ROUND


def test_a_class_made_anew_that_its_module_does_not_read_below_leaves_the_module_as_it_is(client, image):
    (image / "zoo" / "parts.py").write_text(PARTS.replace("ROUND = 1\n\n\n@", "ROUND = 1\n\n\nclass Other:\n"
                                                            "    pass\n\n\n@"))
    client.ok("refresh")
    part = client.view.module("zoo.parts").Part
    result = client.ok("compile_class_definition", source='class Other:\n    __slots__ = ("a",)\n',
                       dictionaryName="zoo.parts")
    assert result["structuredContent"]["outcome"] == "replaced" and "re-imported" not in text(result)
    assert client.view.module("zoo.parts").Part is part


def test_an_enum_redefined_without_a_member_an_importer_reads_names_that_importer(client, image):
    # The importer was re-imported and failed, and the answer said nothing: committed, it
    # imported in no new session (`DEFAULT = Color.BLUE`: AttributeError).
    (image / "zoo" / "colors.py").write_text("import enum\n\n\nclass Color(enum.Enum):\n    RED = 1\n    BLUE = 2\n")
    (image / "zoo" / "palette.py").write_text("from zoo.colors import Color\n\nDEFAULT = Color.BLUE\n")
    client.ok("refresh")
    result = client.ok("compile_class_definition", source="class Color(enum.Enum):\n    RED = 1\n")
    said = missing_member_error("Color", "BLUE")
    assert (result["structuredContent"]["outcome"], result["structuredContent"]["importErrors"]) == (
        "replaced", {"zoo.palette": said})
    assert f"; re-imported zoo.palette; zoo.palette now fails to import: {said}" in text(result)


def test_delete_method_refuses_taking_what_a_comprehensions_first_iterable_reads_as_it_runs(client, image):
    # The first iterable is evaluated as the statement runs: it was taken as maybe not, so
    # the method was deleted with a note, and zoo.jobs committed importing in no new session.
    source = ("class Job:\n    @staticmethod\n    def steps():\n        return (1, 2)\n\n\n"
              "DOUBLED = [step * 2 for step in Job.steps()]\n")
    (image / "zoo" / "jobs.py").write_text(source)
    client.ok("refresh")
    result = client.call("delete_method", className="zoo.jobs.Job", selector="steps")
    assert result["structuredContent"]["error"]["usedBy"] == [
        {"attribute": "steps", "statement": "DOUBLED = [step * 2 for step in Job.steps()]", "line": 7}]
    assert disk(image, "zoo/jobs.py") == source


def test_delete_method_read_only_in_an_asserts_message_is_noted_not_refused(client, image):
    # The message runs only when the assertion fails: the module still imports, yet the
    # deletion was refused as a sure read, with no way through but an editor.
    source = ("class Job:\n    @staticmethod\n    def explain(n):\n        return str(n)\n\n\n"
              "LIMIT = 3\nassert LIMIT > 0, Job.explain(LIMIT)\n")
    (image / "zoo" / "jobs.py").write_text(source)
    client.ok("refresh")
    deleted = client.ok("delete_method", className="zoo.jobs.Job", selector="explain")
    assert deleted["structuredContent"]["readAsItRuns"] == "assert LIMIT > 0, Job.explain(LIMIT)"
    assert "def explain" not in disk(image, "zoo/jobs.py")


def test_compile_class_definition_refuses_dropping_an_attribute_its_module_reads_as_it_runs(client, image):
    # `OWN = Job.limit` below the class: "redefined in place", committed with a note, and the
    # module imported in no new session.
    source = ("class Job:\n    limit = 3\n    size = 1\n\n    def run(self):\n        return 1\n\n\n"
              "OWN = Job.limit\nRUN = Job.run\n")
    (image / "zoo" / "jobs.py").write_text(source)
    client.ok("refresh")
    result = client.call("compile_class_definition", source="class Job:\n    size = 2\n",
                         recompileMethods=False)
    assert result["structuredContent"]["error"]["usedBy"] == [
        {"attribute": "limit", "statement": "OWN = Job.limit", "line": 9},
        {"attribute": "run", "statement": "RUN = Job.run", "line": 10}]
    assert text(result).startswith(
        "zoo.jobs's own top-level code reads, unguarded, as it runs: zoo.jobs.Job.limit on line 9 "
        "('OWN = Job.limit'); zoo.jobs.Job.run on line 10 ('RUN = Job.run'); redefined so, zoo.jobs "
        "would no longer import (AttributeError)")
    assert disk(image, "zoo/jobs.py") == source and client.view.module("zoo.jobs").Job.size == 1
    # What it keeps, or carries over, is not noted.
    result = client.ok("compile_class_definition", source="class Job:\n    size = 3\n    limit = 4\n")
    assert "note" not in text(result) and "readAsItRuns" not in result["structuredContent"]


def test_compile_class_definition_notes_a_dropped_attribute_its_module_reads_guarded(client, image):
    # A read that may not run, or whose failure is caught, may be meant: noted, not refused.
    (image / "zoo" / "jobs.py").write_text(
        "class Job:\n    limit = 3\n    size = 1\n\n    def run(self):\n        return 1\n\n\n"
        "try:\n    OWN = Job.limit\nexcept AttributeError:\n    OWN = None\n"
        "RUN = Job.run if hasattr(Job, 'run') else None\n")
    client.ok("refresh")
    result = client.ok("compile_class_definition", source="class Job:\n    size = 2\n",
                       recompileMethods=False)
    assert result["structuredContent"]["outcome"] == "updated"
    assert result["structuredContent"]["readAsItRuns"] == {
        "limit": "OWN = Job.limit", "run": "RUN = Job.run if hasattr(Job, 'run') else None"}
    assert ("redefined zoo.jobs.Job in place; note: zoo.jobs reads Job.limit as it runs "
            "('OWN = Job.limit'), Job.run as it runs (\"RUN = Job.run if hasattr(Job, 'run') else None\"), "
            "so unless those reads are guarded, a new session's import of zoo.jobs fails "
            "(AttributeError); committed") in text(result)
    namespace = {}
    exec(disk(image, "zoo/jobs.py"), namespace)   # as a new session's import runs it
    assert (namespace["OWN"], namespace["RUN"]) == (None, None)


def test_a_dropped_attribute_read_through_a_subclass_of_the_module_is_refused(client, image):
    # `OWN = Sub.limit` is Job's limit: the module was committed importing in no new
    # session, unsaid. Not through a subclass binding it itself.
    source = ("class Job:\n    limit = 3\n    size = 1\n\n    def run(self):\n        return 1\n\n\n"
              "class Sub(Job):\n    pass\n\n\nclass Own(Job):\n    size = 2\n\n\n"
              "OWN = Sub.limit\nSIZE = Own.size\nRUN = Sub.run\n")
    (image / "zoo" / "jobs.py").write_text(source)
    client.ok("refresh")
    result = client.call("compile_class_definition", source="class Job:\n    pass\n", recompileMethods=False)
    assert [(use["attribute"], use["statement"]) for use in result["structuredContent"]["error"]["usedBy"]] == [
        ("limit", "OWN = Sub.limit"), ("run", "RUN = Sub.run")]
    assert disk(image, "zoo/jobs.py") == source


def test_a_dropped_attribute_read_through_a_nested_subclass_is_refused(client, image):
    # `OWN = Outer.Inner.limit` (and through a private nested one, spelled mangled) is
    # Job's limit: only top-level subclasses were looked through, so the module was
    # committed importing in no new session, unsaid.
    source = ("class Job:\n    limit = 3\n\n    def run(self):\n        return 1\n\n\n"
              "class Outer:\n    class Inner(Job):\n        pass\n\n    class __Hidden:\n"
              "        class Deep(Job):\n            pass\n\n\n"
              "OWN = Outer.Inner.limit\nRUN = Outer._Outer__Hidden.Deep.run\n")
    (image / "zoo" / "jobs.py").write_text(source)
    client.ok("refresh")
    deleted = client.call("delete_method", className="Job", selector="run")
    assert [use["statement"] for use in deleted["structuredContent"]["error"]["usedBy"]] == [
        "RUN = Outer._Outer__Hidden.Deep.run"]
    result = client.call("compile_class_definition", source="class Job:\n    pass\n", recompileMethods=False)
    assert [use["statement"] for use in result["structuredContent"]["error"]["usedBy"]] == [
        "OWN = Outer.Inner.limit", "RUN = Outer._Outer__Hidden.Deep.run"]
    assert disk(image, "zoo/jobs.py") == source


def test_compile_class_definition_names_another_module_reading_a_dropped_attribute(client, image):
    (image / "zoo" / "jobs.py").write_text("class Base:\n    size = 0\n\n\nclass Job(Base):\n"
                                           "    limit = 3\n    size = 1\n    name = 'job'\n")
    (image / "zoo" / "limits.py").write_text("from zoo.jobs import Job\n\nLIMIT = Job.limit\nSIZE = Job.size\n")
    (image / "zoo" / "named.py").write_text("from zoo import jobs\n\n\ndef name():\n    return jobs.Job.name\n")
    client.ok("refresh")
    client.view.module("zoo.jobs")
    named = client.view.module("zoo.named")
    # size dropped, but a base has one: nothing to name, nothing re-imported.
    result = client.ok("compile_class_definition", source="class Job(Base):\n    limit = 3\n    name = 'job'\n")
    assert "reimported" not in result["structuredContent"]
    result = client.ok("compile_class_definition", source="class Job(Base):\n    pass\n")
    assert result["structuredContent"]["outcome"] == "updated"
    assert result["structuredContent"]["reimported"] == ["zoo.limits"]   # zoo.named reads name when called
    assert result["structuredContent"]["importErrors"] == {
        "zoo.limits": "AttributeError: type object 'Job' has no attribute 'limit'"}
    assert ("redefined zoo.jobs.Job in place; re-imported zoo.limits; zoo.limits now fails to "
            "import: AttributeError: type object 'Job' has no attribute 'limit'; committed") in text(result)
    assert client.view.module("zoo.named") is named


def test_a_memberless_enum_base_is_redefined_in_place_and_its_subclasses_see_it(client, image, importing_enum):
    client.view.add_module("zoo.tones", f"{importing_enum}\n\n\nclass Base(enum.Enum):\n"
                                        "    def label(self):\n        return self.name\n\n\n"
                                        "class Tone(Base):\n    LOW = 1\n")
    client.ok("commit")
    result = client.ok("compile_class_definition", source="class Base(enum.Enum):\n"
                       "    def label(self):\n        return self.name.lower()\n")
    assert result["structuredContent"]["outcome"] == "updated"
    assert client.view.module("zoo.tones").Tone.LOW.label() == "low"


def test_shape_change_of_a_metaclass_with_subclasses_is_refused(client, image):
    client.view.add_module("zoo.meta", "class Meta(type):\n    pass\n\n\nclass SubMeta(Meta):\n    pass\n")
    client.ok("commit")
    message = client.error("compile_class_definition", "refused",
                           source="class Meta(type, metaclass=type):\n    __slots__ = ()\n")
    assert "zoo.meta.SubMeta" in message and not client.view.has_changes


@pytest.mark.parametrize("class_name, source, quoted", [
    ("Animal", "@title.setter\ndef title(self, value):\n    self.name = value\n", "'@title.setter'"),
    ("Animal", "@title.deleter\ndef title(self):\n    del self.name\n", "'@title.deleter'"),
    ("Dog", "def noise(self, fallback=noise):\n    return 'grr'\n", "'def noise(self, fallback=noise):'"),
], ids=["setter", "deleter", "own-default"])
def test_a_def_reading_its_own_name_as_it_is_made_is_refused_once_nothing_binds_it_above(
        client, image, class_name, source, quoted):
    # A setter alone replaced the getter: the session's live compile found the live
    # class's `title`, committed, and every new session's import then failed, NameError.
    before = disk(image)
    said = client.error("compile_method", "refused", className=class_name, source=source)
    name = "noise" if class_name == "Dog" else "title"
    assert said == (
        f"zoo.animals.{class_name}.{name}: {quoted} reads {name} as the class body runs, and with "
        "the defs it replaces gone nothing binds it there: every new session's import of "
        f"zoo.animals would fail (NameError). Send all the defs of {name} together, the one binding "
        "it first (a property's getter) above, as get_method_source gives them; or have it read "
        "another name")
    assert disk(image) == before and not client.view.has_changes


def test_a_setter_of_a_name_the_class_has_no_def_of_is_refused_too(client, image):
    said = client.error("compile_method", "refused", className="Dog",
                        source="@size.setter\ndef size(self, value):\n    self.s = value\n")
    assert "'@size.setter' reads size as the class body runs" in said


def test_a_def_reading_its_own_name_the_module_binds_above_the_class_is_taken(client, image):
    (image / "zoo" / "own.py").write_text("label = 'module'\n\n\nclass A:\n    def label(self):\n"
                                         "        return 1\n")
    client.ok("refresh")
    client.ok("compile_method", className="zoo.own.A",
              source="def label(self, default=label):\n    return default\n")
    namespace = {}
    exec(disk(image, "zoo/own.py"), namespace)   # as a new session's import runs it
    assert namespace["A"]().label() == "module"


def test_a_propertys_getter_and_setter_sent_together_replace_it(client, image):
    client.ok("compile_method", className="Animal",
              source="@property\ndef title(self):\n    return self.name.title()\n\n"
                     "@title.setter\ndef title(self, value):\n    self.name = value\n")
    namespace = {}
    exec(disk(image), namespace)   # as a new session's import runs it
    animal = namespace["Animal"]("rex")
    animal.title = "max"
    assert animal.title == "Max"


@pytest.mark.parametrize("tool, arguments", [
    ("compile_method", {"className": "Dog",
                        "source": "from functools import cache\n@cache\ndef noise(self):\n    pass\n"}),
    ("compile_class_definition", {"dictionaryName": "zoo.animals",
                                  "source": "import dataclasses\nclass Spot:\n    pass\n"}),
], ids=["def", "class"])
def test_an_import_sent_with_a_definition_is_refused_saying_how_a_module_gets_one(client, image, tool, arguments):
    # execute_code, which the refusal used to point at, imports into the workspace only:
    # the module would still lack the name.
    said = client.error(tool, "refused", **arguments)
    assert "no tool writes a module's imports" in said
    assert "add it at the top of the module's file in an editor, then refresh" in said
    assert "use execute_code" not in said
    assert not client.view.has_changes


@pytest.mark.parametrize("tool, arguments", [
    ("compile_method", {"className": "Dog", "source": "@cache\ndef noise(self):\n    pass\n"}),
    ("compile_class_definition", {"dictionaryName": "zoo.animals",
                                  "source": "@dataclass\nclass Spot:\n    x: int = 0\n"}),
], ids=["decorator-of-a-def", "class-decorator"])
def test_a_name_the_module_never_binds_is_named_with_where_to_import_it(client, tool, arguments):
    said = client.error(tool, "compileError", **arguments)
    name = "cache" if tool == "compile_method" else "dataclass"
    assert said == (f"evaluating the definition raised NameError: name '{name}' is not defined "
                    f"(zoo.animals binds no {name} at its top level; if it is to be imported, add "
                    "it at the top of the module's file in an editor, then refresh (an edit outside "
                    "gsmcpd is seen as another session's commit); else correct the name)")
    assert not client.view.has_changes


def test_a_long_name_from_the_source_is_echoed_cut(client):
    # Each was echoed whole: a 5000-character base or class name came back once or twice.
    long_name = "Y" * 5000
    shown = "Y" * 200 + "... (5000 characters)"
    said = client.error("compile_class_definition", "compileError", dictionaryName="zoo.animals",
                        source=f"class Spot({long_name}):\n    pass\n")
    # (Python's own message cuts it at 200 characters.)
    assert said.startswith(f"evaluating the definition raised NameError: name '{'Y' * 200}' is not defined "
                           f"(zoo.animals binds no {shown} at its top level;") and len(said) < 1000, said[:300]
    said = client.error("compile_class_definition", "invalidParams", source=f"class {long_name}:\n    pass\n")
    assert said == f"{shown} is a new class: pass dictionaryName to say which image module it belongs in"
    assert not client.view.has_changes


LONG_NAME = "Y" * 5000
LONG_SHOWN = "Y" * 200 + "... (5000 characters)"
LONG_MEMBERS = (f"class Bound:\n    {LONG_NAME} = 1\n\n\nclass Declared:\n    global {LONG_NAME}\n\n\n"
                f"class Slots:\n    __slots__ = ({LONG_NAME!r},)\n\n\nclass Noted:\n    {LONG_NAME}: int\n\n\n"
                f"class Guarded:\n    if True:\n        def {LONG_NAME}(self):\n            pass\n")


@pytest.mark.parametrize("class_name, refusal", [
    ("Bound", f"zoo.long.Bound.{LONG_SHOWN} is a class attribute, not a method"),
    ("Declared", f"the class body of zoo.long.Declared declares {LONG_SHOWN} global"),
    ("Slots", f"zoo.long.Slots.{LONG_SHOWN} is in the class's __slots__"),
    ("Noted", f"zoo.long.Noted.{LONG_SHOWN} is declared an attribute by the class body's annotation "
              f"'{'Y' * 200}... (5005 characters)'"),
    ("Guarded", f"zoo.long.Guarded.{LONG_SHOWN} is written inside the class-level if statement")])
def test_a_long_def_name_the_class_writes_otherwise_is_echoed_cut(client, image, class_name, refusal):
    # compile_method's refusals named the def whole, once or twice, and delete_method's of a
    # def written in a block the selector whole.
    (image / "zoo" / "long.py").write_text(LONG_MEMBERS)
    client.ok("refresh")
    said = client.error("compile_method", "refused", className=f"zoo.long.{class_name}",
                        source=f"def {LONG_NAME}(self):\n    return 1\n")
    assert said.startswith(refusal) and len(said) < 1000, said[:600]
    if class_name == "Guarded":
        said = client.error("delete_method", "refused", className="zoo.long.Guarded", selector=LONG_NAME)
        assert said.startswith(refusal) and len(said) < 1000, said[:600]
    assert (image / "zoo" / "long.py").read_text() == LONG_MEMBERS


def test_a_comment_sent_below_a_class_statement_goes_below_the_members_carried_over(client, image):
    # At the class's margin below its statement, it was written above Dog's carried noise,
    # so inside the class: it is the class's end, as the text sent had it.
    source = "class Dog(Animal):\n    legs = 3\n# end of Dog\n"
    client.ok("compile_class_definition", source=source)
    written = disk(image)
    assert ('class Dog(Animal):\n    legs = 3\n\n    def noise(self):  # dogs bark\n        return "woof"\n'
            "# end of Dog\n\n\ndef make_dog():\n") in written
    assert client.ok("compile_class_definition", source=source)["structuredContent"]["committed"] == []
    assert disk(image) == written


def test_a_comment_sent_below_a_new_method_stays_below_it_as_more_are_added(client, image):
    # The next method added went right below fetch's statements, above fetch's comment.
    client.ok("compile_method", className="Dog", source="def fetch(self):\n    return 1\n# fetch ends here\n")
    client.ok("compile_method", className="Dog", source="def sit(self):\n    return 2\n")
    assert ("    def fetch(self):\n        return 1\n    # fetch ends here\n\n"
            "    def sit(self):\n        return 2\n") in disk(image)


def test_a_name_error_raised_by_code_the_definition_runs_gets_no_import_advice(client, image):
    # The module binds the name the error is about: importing it again would not help.
    (image / "zoo" / "raising.py").write_text(
        "def _deco(f):\n    raise NameError('broken deco', name='_deco')\n\n\n"
        "class A:\n    def m(self):\n        return 1\n")
    client.ok("refresh")
    said = client.error("compile_method", "compileError", className="zoo.raising.A",
                        source="@_deco\ndef m(self):\n    return 2\n")
    assert said == "evaluating the definition raised NameError: broken deco (raised in zoo.raising line 2, in _deco)"


DECOS = ("def needs_doc(f):\n    if not f.__doc__:\n        raise TypeError(f'{f.__name__} needs a docstring')\n"
         "    return f\n\n\nclass Registered:\n    def __init_subclass__(cls):\n"
         "        raise ValueError(f'{cls.__name__} is registered twice')\n")
DECORATED = ("import dataclasses\n\nfrom zoo.decos import Registered, needs_doc\n\n\n"
             "def local(thing):\n    raise LookupError('no room')\n\n\n"
             "class A:\n    def m(self):\n        return 1\n\n\ndef f():\n    return 1\n")


@pytest.mark.parametrize("tool, arguments, said", [
    ("compile_method", {"className": "zoo.decorated.A", "source": "@needs_doc\ndef g(self):\n    pass\n"},
     "TypeError: g needs a docstring (raised in zoo.decos line 3, in needs_doc)"),
    ("compile_method", {"className": "zoo.decorated", "source": "@needs_doc\ndef f():\n    return 2\n"},
     "TypeError: f needs a docstring (raised in zoo.decos line 3, in needs_doc)"),
    ("compile_class_definition", {"source": "class A(Registered):\n    pass\n"},
     "ValueError: A is registered twice (raised in zoo.decos line 9, in Registered.__init_subclass__)"),
    ("compile_class_definition", {"source": "@local\nclass A:\n    pass\n", "recompileMethods": False},
     "LookupError: no room (raised in zoo.decorated line 7, in local)"),
], ids=["method-decorator", "function-decorator", "base-init-subclass", "class-decorator-same-module"])
def test_an_error_code_the_definition_called_raised_says_where_in_the_image(client, image, tool, arguments, said):
    # "evaluating the definition raised TypeError: g needs a docstring" named no place: which
    # decorator (or base, or metaclass) of those the definition runs raised it was left to guess.
    (image / "zoo" / "decos.py").write_text(DECOS)
    (image / "zoo" / "decorated.py").write_text(DECORATED)
    client.ok("refresh")
    assert client.error(tool, "compileError", **arguments) == "evaluating the definition raised " + said
    assert disk(image, "zoo/decorated.py") == DECORATED


def test_an_error_raised_outside_the_image_names_the_function_the_definition_called(client, image):
    (image / "zoo" / "decos.py").write_text(DECOS)
    (image / "zoo" / "decorated.py").write_text(DECORATED)
    client.ok("refresh")
    said = client.error("compile_class_definition", "compileError", dictionaryName="zoo.decorated",
                        source="@dataclasses.dataclass\nclass Fresh:\n    x: list = []\n")
    assert said.startswith("evaluating the definition raised ValueError: mutable default"), said
    assert said.endswith(" (raised in dataclasses.dataclass)"), said


def test_an_error_with_no_message_is_named_alone_not_with_a_dangling_colon(client, image):
    # Read "evaluating the definition raised SystemExit: ", and so did every message naming
    # an exception: a failed import, a class statement run again, a handler's crash.
    assert client.error("compile_class_definition", "compileError", dictionaryName="zoo.keeper",
                        source="class Fresh:\n    raise SystemExit\n") == (
        "evaluating the definition raised SystemExit")
    (image / "zoo" / "exits.py").write_text("raise NotImplementedError\n")
    client.ok("refresh")
    assert ("image module zoo.exits failed to import: NotImplementedError"
            in client.ok("list_test_classes")["structuredContent"]["notLoaded"])


def test_an_error_whose_str_raises_is_named_as_python_names_it(client, image):
    # The error str() raised was answered in its place: "RuntimeError: no str", kind other.
    (image / "zoo" / "errs.py").write_text("class Odd(Exception):\n    def __str__(self):\n"
                                           "        raise RuntimeError('no str')\n")
    client.ok("refresh")
    assert client.error("compile_class_definition", "compileError", dictionaryName="zoo.keeper",
                        source="class Fresh:\n    from zoo.errs import Odd\n    raise Odd()\n") == (
        "evaluating the definition raised Odd: <exception str() failed>")


def test_an_error_message_utf8_cannot_carry_is_named_escaped(client, image):
    # A lone surrogate in it: the answer was "the result cannot be sent: not JSON ...".
    said = client.call("compile_class_definition", dictionaryName="zoo.keeper",
                       source="class Fresh:\n    raise ValueError('odd \\udcff')\n")
    assert utf8_carries(said)   # first: a report showing a lone surrogate breaks pytest-xdist
    assert said["content"][0]["text"] == "evaluating the definition raised ValueError: odd \\udcff"
    (image / "zoo" / "odd.py").write_text("class Odd:\n    pass\n\n\nraise ValueError('odd \\udcff')\n")
    client.ok("refresh")
    said = client.call("describe_class", className="zoo.odd.Odd")
    assert utf8_carries(said)
    assert "image module zoo.odd failed to import: ValueError: odd \\udcff" in said["content"][0]["text"]


def test_compile_class_definition_new_class_and_errors(client, image):
    client.error("compile_class_definition", "invalidParams", source="class Fresh:\n    pass\n")
    client.error("compile_class_definition", "refused", source="class int:\n    pass\n")
    client.error("compile_class_definition", "refused", source="x = 1")
    client.error("compile_class_definition", "refused", source="class A:\n    pass\nclass B:\n    pass\n")
    client.error("compile_class_definition", "compileError", source="class Broken(Undefined):\n    pass\n",
                 dictionaryName="zoo.keeper")
    client.error("compile_class_definition", "refused", source="class X:\n    pass\n", dictionaryName="builtins")
    # refused by the schema (minLength), as every other tool's dictionaryName is
    assert client.error("compile_class_definition", "invalidParams", source="class Fresh:\n    pass\n",
                        dictionaryName="") == ("compile_class_definition: argument 'dictionaryName' "
                                               "must not be empty")
    client.ok("compile_class_definition", source="class Fresh:\n    pass\n", dictionaryName="zoo.keeper")
    assert client.view.module("zoo.keeper").Fresh
    assert disk(image, "zoo/keeper.py").endswith("\n\n\nclass Fresh:\n    pass\n")


def test_a_new_class_named_as_its_module_binds_a_name_is_refused(client, image):
    # It went last in the module, over the binding: `class Dog` in zoo.keeper, which imports
    # Dog, made every later Keeper hold the new, empty Dog; `class make_dog` hid the function.
    keeper, animals = disk(image, "zoo/keeper.py"), disk(image)
    assert client.error("compile_class_definition", "refused", dictionaryName="zoo.keeper",
                        source="class Dog:\n    pass\n") == (
        "zoo.keeper.Dog is bound already by a top-level statement (line 1: "
        "'from zoo.animals import Dog'): a new class of that name, written last in the module, would "
        "take that binding's place for the code reading it; name the class otherwise, or edit that "
        "statement in the module's file, then refresh")
    assert client.error("compile_class_definition", "refused", dictionaryName="zoo.animals",
                        source="class make_dog:\n    pass\n") == (
        "zoo.animals.make_dog is a function, not a class: a new class of that name, written last in "
        "the module, would take its place; name the class otherwise, or delete the function first "
        "(delete_method className zoo.animals, selector make_dog)")
    assert "'import json  # a kernel import'" in client.error(
        "compile_class_definition", "refused", dictionaryName="zoo.animals", source="class json:\n    pass\n")
    assert (disk(image, "zoo/keeper.py"), disk(image)) == (keeper, animals)
    assert client.view.module("zoo.keeper").Dog is client.view.module("zoo.animals").Dog
    # nor by a `*` import that brought the name in (what it brings is the live module's)
    client.view.set_source("zoo.keeper", "from zoo.animals import *\n\ndef dog():\n    return Dog('a')\n",
                           live=False)
    client.ok("commit")
    assert client.error("compile_class_definition", "refused", dictionaryName="zoo.keeper",
                        source="class Dog:\n    pass\n").startswith(
        "zoo.keeper.Dog is bound already by a top-level statement (line 1: 'from zoo.animals import *')")
    client.ok("compile_class_definition", dictionaryName="zoo.keeper", source="class Cat:\n    pass\n")
    # a class made from the one it replaces means to replace it
    client.ok("compile_class_definition", dictionaryName="zoo.keeper",
              source="class Dog(Dog):\n    def noise(self):\n        return 'yip'\n")
    assert client.view.module("zoo.keeper").dog().noise() == "yip"
    # what only running the module as a program binds is no binding an import makes
    client.ok("add_dictionary", dictionaryName="zoo.prog")
    client.view.set_source("zoo.prog", 'if __name__ == "__main__":\n    Fresh = 1\n', live=False)
    client.ok("commit")
    client.ok("compile_class_definition", dictionaryName="zoo.prog", source="class Fresh:\n    pass\n")


def test_a_new_class_named_as_a_handlers_exception_is_no_binding_it_replaces(client, image):
    # Python deletes `except E as Error`'s name as the handler ends: a class written last
    # replaces no binding, and was refused as one "bound already by a top-level statement".
    client.ok("add_dictionary", dictionaryName="zoo.guarded")
    client.view.set_source("zoo.guarded", "try:\n    import no_such_module\nexcept ImportError as Error:\n"
                                          "    REASON = str(Error)\n", live=False)
    client.ok("commit")
    client.ok("compile_class_definition", dictionaryName="zoo.guarded",
              source="class Error(Exception):\n    pass\n")
    assert issubclass(client.view.module("zoo.guarded").Error, Exception)


def test_a_new_class_named_as_a_bare_annotation_is_no_binding_it_replaces(client, image):
    # `Cart: int` (no value) records an annotation and binds nothing: a class written last
    # replaces no binding, and was refused as one "bound already by a top-level statement".
    client.ok("add_dictionary", dictionaryName="zoo.annotated")
    client.view.set_source("zoo.annotated", "Cart: int\nLIMIT: int = 3\n", live=False)
    client.ok("commit")
    client.ok("compile_class_definition", dictionaryName="zoo.annotated", source="class Cart:\n    pass\n")
    assert isinstance(client.view.module("zoo.annotated").Cart, type)
    # an annotation with a value binds: still refused
    assert client.error("compile_class_definition", "refused", dictionaryName="zoo.annotated",
                        source="class LIMIT:\n    pass\n").startswith(
        "zoo.annotated.LIMIT is bound already by a top-level statement (line 2: 'LIMIT: int = 3')")


def annotated_module(client, name, source):
    client.ok("add_dictionary", dictionaryName=name)
    client.view.set_source(name, source, live=False)
    client.ok("commit")


def test_a_bare_annotation_below_a_class_statement_is_no_rebinding_of_it(client, image):
    # `Cart: type` below `class Cart` binds nothing: a class of no method was taken for "a
    # class made at run time (at line 1) once zoo.noted is imported", compile_method refused.
    annotated_module(client, "zoo.noted", "class Cart:\n    x = 1\n\n\nCart: type\n")
    client.ok("compile_method", className="zoo.noted.Cart", source="def run(self):\n    return 2\n")
    assert client.view.module("zoo.noted").Cart().run() == 2
    # rebound by code run since: that code did it, the file is fine (it said "once
    # zoo.noted is imported ...; edit the module's file in an editor, then refresh")
    client.ok("execute_code", code="import zoo.noted\nzoo.noted.Cart = 5")
    assert client.error("compile_method", "refused", className="zoo.noted.Cart",
                        source="def run(self):\n    return 3\n").startswith(
        "zoo.noted.Cart is bound to an instance of builtins.int in this session, not to the class its "
        "class statement makes: no statement of its module below its class statement binds the name")


def test_a_class_made_at_run_time_is_said_bound_where_assigned_not_where_annotated(client, image):
    annotated_module(client, "zoo.made2", "Cart = type('Cart', (), {})\nCart: type\n")
    assert client.error("describe_class", "notFound", className="zoo.made2.Cart") == (
        "zoo.made2 defines no class Cart; zoo.made2.Cart is a class made at run time (bound at line 1) "
        "by no class statement, so its source cannot be browsed or edited")


def test_a_name_only_annotated_above_is_read_unbound_by_a_new_session(client, image):
    # `Base: type` binds nothing: a class statement reading Base (bound only in this session)
    # was compiled, and every new session's import of the module failed, NameError.
    annotated_module(client, "zoo.based2", "Base: type\n")
    client.ok("execute_code", code="import zoo.based2\nzoo.based2.Base = object")
    assert client.error("compile_class_definition", "refused", dictionaryName="zoo.based2",
                        source="class A(Base):\n    pass\n").startswith(
        "zoo.based2.A would read Base as its class statement runs")
    assert client.view.source("zoo.based2") == "Base: type\n"
    # nor does it keep a class its module's code reads from being deleted: refused, quoting the read
    annotated_module(client, "zoo.hooked", "Hook: type\n\n\nclass Hook:\n    pass\n\n\nDEFAULT = Hook()\n")
    assert client.error("delete_class", "refused", className="zoo.hooked.Hook").startswith(
        "zoo.hooked.Hook is used by zoo.hooked's own top-level code as it runs (line 8: 'DEFAULT = Hook()')")


def test_code_raising_a_base_exception_while_compiling_is_a_compile_error(client, image):
    before = disk(image)
    assert "SystemExit" in client.error("compile_method", "compileError", className="Dog",
                                        source="@exit\ndef g(self): pass")
    assert "SystemExit: 1" in client.error("compile_class_definition", "compileError",
                                           source="class Boom:\n    raise SystemExit(1)",
                                           dictionaryName="zoo.keeper")
    # an existing class, whose methods are carried over: the retry without them raises too
    assert "GeneratorExit" in client.error("compile_class_definition", "compileError",
                                           source="class Dog(Animal):\n    raise GeneratorExit")
    assert disk(image) == before and not client.view.has_changes


def test_delete_class(client, image):
    client.ok("delete_class", className="Keeper")
    assert not hasattr(client.view.module("zoo.keeper"), "Keeper")
    assert "class Keeper" not in disk(image, "zoo/keeper.py")
    client.error("delete_class", "refused", className="ValueError")


def test_delete_class_and_function_say_the_modules_all_still_names_them(client, image):
    # Deleted with nothing said: `from zoo.listed import *` then failed, AttributeError.
    (image / "zoo" / "listed.py").write_text(
        "__all__ = ['Hook', 'hook', 'Kept']\n\n\nclass Hook:\n    pass\n\n\n"
        "def hook():\n    return 1\n\n\nclass Kept:\n    pass\n")
    client.ok("refresh")
    for tool, arguments, name in (("delete_class", {"className": "zoo.listed.Hook"}, "Hook"),
                                  ("delete_method", {"className": "zoo.listed", "selector": "hook"}, "hook")):
        said = client.ok(tool, **arguments)
        assert (f"; note: zoo.listed's __all__ still names {name} (\"__all__ = ['Hook', 'hook', 'Kept']\", "
                f"line 1), so `from zoo.listed import *` now fails (AttributeError): take {name} out of it "
                "in the module's file, then refresh") in said["content"][0]["text"]
        assert said["structuredContent"]["stillInAll"] == {"line": 1, "statement": "__all__ = ['Hook', 'hook', 'Kept']"}
    unlisted = client.ok("delete_class", className="Keeper")
    assert "stillInAll" not in unlisted["structuredContent"] and "__all__" not in unlisted["content"][0]["text"]


def test_delete_class_says_nothing_of_an_all_that_leaves_the_name_out(client, image):
    # `"Hook"` is a string the statement binding `__all__` excludes: the note said
    # `from zoo.computed import *` now fails, though `__all__` never named Hook.
    (image / "zoo" / "computed.py").write_text(
        "class Hook:\n    pass\n\n\ndef hook():\n    return 1\n\n\n"
        "__all__ = [name for name in dir() if name not in ('Hook', 'hook') and not name.startswith('_')]\n")
    client.ok("refresh")
    for tool, arguments in (("delete_class", {"className": "zoo.computed.Hook"}),
                            ("delete_method", {"className": "zoo.computed", "selector": "hook"})):
        said = client.ok(tool, **arguments)
        assert "stillInAll" not in said["structuredContent"] and "__all__" not in said["content"][0]["text"]


def test_delete_function_refuses_a_helper_its_module_deletes_as_it_runs(client, image):
    # As opcode.py's `del def_op, name_op, jrel_op, jabs_op`: the unused helper's def deleted,
    # the `del` raised NameError in every new session, committed without a word.
    source = ("def helper(x):\n    return x\n\n\ndef unused(x):\n    return x\n\n\n"
              "VALUE = helper(1)\ndel helper, unused\n")
    (image / "zoo" / "tidy.py").write_text(source)
    client.ok("refresh")
    result = client.call("delete_method", className="zoo.tidy", selector="unused")
    assert result["structuredContent"]["error"]["usedBy"] == [{"line": 10, "statement": "del helper, unused"}]
    assert disk(image, "zoo/tidy.py") == source


def test_delete_class_says_nothing_of_an_all_that_takes_the_name_out_again(client, image):
    # `__all__ = ["Hook", ...]` then `__all__.remove("Hook")`: the note said
    # `from zoo.pruned import *` now fails, though `__all__` no longer held Hook.
    (image / "zoo" / "pruned.py").write_text(
        "class Hook:\n    pass\n\n\ndef hook():\n    return 1\n\n\nKEPT = 1\n"
        "__all__ = ['Hook', 'hook', 'KEPT']\n__all__.remove('Hook')\n__all__ = [n for n in __all__ if n != 'hook']\n")
    client.ok("refresh")
    for tool, arguments in (("delete_class", {"className": "zoo.pruned.Hook"}),
                            ("delete_method", {"className": "zoo.pruned", "selector": "hook"})):
        said = client.ok(tool, **arguments)
        assert "stillInAll" not in said["structuredContent"] and "__all__" not in said["content"][0]["text"]


def test_delete_class_refuses_a_class_image_classes_are_still_built_on(client, image):
    # It deleted and committed, only noting the classes still naming it: their module
    # then imported in no session (class Child(Made): NameError).
    source = ("class Meta(type):\n    pass\n\n\nclass Made(metaclass=Meta):\n    pass\n\n\n"
              "class Child(Made):\n    pass\n")
    (image / "zoo" / "meta.py").write_text(source)
    (image / "zoo" / "far.py").write_text("from zoo.meta import Made\n\n\nclass Far(Made):\n    pass\n")
    client.ok("refresh")
    result = client.call("delete_class", className="zoo.meta.Made")
    assert result["structuredContent"]["error"] == {
        "kind": "refused", "subclasses": ["zoo.far.Far", "zoo.meta.Child"], "metaclassOf": [],
        "message": "zoo.meta.Made has subclasses in the image: zoo.far.Far (zoo.far line 4), "
                   "zoo.meta.Child (zoo.meta line 9); deleted, their class statements could not run "
                   "(NameError) and their modules would no longer import. Delete those classes first "
                   "(delete_class), or redefine them without zoo.meta.Made (compile_class_definition "
                   "with other bases or metaclass), then delete it."}
    message = client.error("delete_class", "refused", className="zoo.meta.Meta")
    assert message.startswith("zoo.meta.Meta is the metaclass of image classes: zoo.far.Far (zoo.far "
                              "line 4), zoo.meta.Child (zoo.meta line 9), zoo.meta.Made (zoo.meta line 5); ")
    assert disk(image, "zoo/meta.py") == source and not client.view.has_changes
    # Once the classes built on it are gone, it goes: deleted leaves first, each in turn.
    for name in ("zoo.far.Far", "zoo.meta.Child", "zoo.meta.Made", "zoo.meta.Meta"):
        assert text(client.ok("delete_class", className=name)).startswith(f"deleted class {name};")
    namespace = {}
    exec(disk(image, "zoo/meta.py"), namespace)   # as a new session's import runs it
    assert not {"Meta", "Made", "Child"} & set(namespace)


NESTED_ON_MADE = ("from zoo.meta import Made, Meta\n\n\nclass Outer:\n    class Inner(Made):\n        pass\n\n"
                  "    if True:\n        class Deep:\n            class Made2(metaclass=Meta):\n"
                  "                pass\n")


def test_delete_class_refuses_a_class_a_nested_class_is_built_on(client, image):
    # Only top-level classes were looked at: Made went, committed, and zoo.far's
    # `class Outer: class Inner(Made)` failed in every new session (NameError).
    source = "class Meta(type):\n    pass\n\n\nclass Made(metaclass=Meta):\n    pass\n"
    (image / "zoo" / "meta.py").write_text(source)
    (image / "zoo" / "far.py").write_text(NESTED_ON_MADE)
    client.ok("refresh")
    result = client.call("delete_class", className="zoo.meta.Made")
    assert result["structuredContent"]["error"] == {
        "kind": "refused", "subclasses": ["zoo.far.Outer.Inner"], "metaclassOf": [],
        "message": "zoo.meta.Made has subclasses in the image: zoo.far.Outer.Inner (zoo.far line 5, "
                   "in the class statement of zoo.far.Outer); deleted, their class statements could "
                   "not run (NameError) and their modules would no longer import. Delete those classes "
                   "first (delete_class), or redefine them without zoo.meta.Made "
                   "(compile_class_definition with other bases or metaclass; a nested class, which no "
                   "tool addresses, through the class statement holding it: compile_class_definition "
                   "on zoo.far.Outer with it written anew, or left out with recompileMethods false), "
                   "then delete it."}
    meta = client.call("delete_class", className="zoo.meta.Meta")["structuredContent"]["error"]
    assert meta["metaclassOf"] == ["zoo.far.Outer.Deep.Made2", "zoo.far.Outer.Inner", "zoo.meta.Made"]
    assert meta["message"].startswith(
        "zoo.meta.Meta is the metaclass of image classes: zoo.far.Outer.Deep.Made2 (zoo.far line 10, "
        "in the class statement of zoo.far.Outer), zoo.far.Outer.Inner (zoo.far line 5, in the class "
        "statement of zoo.far.Outer), zoo.meta.Made (zoo.meta line 5); ")
    assert disk(image, "zoo/meta.py") == source and not client.view.has_changes
    # As the refusal says: the enclosing class redefined without them, both go.
    client.ok("compile_class_definition", source="class Outer:\n    pass\n", dictionaryName="zoo.far",
              recompileMethods=False)
    client.ok("delete_class", className="zoo.meta.Made")
    client.ok("delete_class", className="zoo.meta.Meta")


def test_delete_class_refuses_a_class_whose_nested_class_is_built_on(client, image):
    # Its nested classes go with its class statement: `class Far(Holder.Base)` would fail.
    (image / "zoo" / "meta.py").write_text(
        "class Holder:\n    class Base:\n        pass\n\n    class Sub(Base):\n        pass\n")
    (image / "zoo" / "far.py").write_text("from zoo.meta import Holder\n\n\nclass Far(Holder.Base):\n    pass\n")
    client.ok("refresh")
    error = client.call("delete_class", className="zoo.meta.Holder")["structuredContent"]["error"]
    assert error["subclasses"] == ["zoo.far.Far"]     # not Holder.Sub: it goes with Holder
    assert error["message"].startswith("zoo.meta.Holder.Base has subclasses in the image: zoo.far.Far "
                                       "(zoo.far line 4); deleted,")
    client.ok("delete_class", className="zoo.far.Far")
    client.ok("delete_class", className="zoo.meta.Holder")     # Holder.Sub, built on Holder.Base, goes too


def test_remove_dictionary_refuses_a_module_a_nested_class_outside_it_is_built_on(client, image):
    # A class nested in one of zoo.meta itself does not count (its module is its
    # __module__, not its name cut at the last dot, `zoo.meta.Outer`).
    (image / "zoo" / "meta.py").write_text("class Meta(type):\n    pass\n\n\nclass Made(metaclass=Meta):\n"
                                           "    pass\n\n\nclass Outer:\n    class Inner(Made):\n        pass\n")
    (image / "zoo" / "far.py").write_text(NESTED_ON_MADE)
    client.ok("refresh")
    error = client.call("remove_dictionary", dictionaryName="zoo.meta")["structuredContent"]["error"]
    assert (error["subclasses"], error["metaclassOf"]) == (["zoo.far.Outer.Inner"],
                                                           ["zoo.far.Outer.Deep.Made2", "zoo.far.Outer.Inner"])
    assert "compile_class_definition on zoo.far.Outer with it written anew" in error["message"]
    assert client.view.has_module("zoo.meta") and not client.view.has_changes


def test_a_new_shape_is_refused_while_a_nested_class_is_built_on_the_class(client, image):
    (image / "zoo" / "meta.py").write_text("class Meta(type):\n    pass\n\n\nclass Made(metaclass=Meta):\n    pass\n")
    (image / "zoo" / "far.py").write_text(NESTED_ON_MADE)
    client.ok("refresh")
    message = client.error("compile_class_definition", "refused", dictionaryName="zoo.meta",
                           source="class Made(metaclass=Meta):\n    __slots__ = ('x',)\n")
    assert message == ("zoo.meta.Made has subclasses in the image: zoo.far.Outer.Inner (zoo.far line 5, in "
                       "the class statement of zoo.far.Outer); changing its bases or __slots__ would orphan "
                       "them. Change or delete the subclasses first; a nested one, which no tool addresses, "
                       "through the class statement holding it: compile_class_definition on zoo.far.Outer "
                       "with it written anew, or left out with recompileMethods false.")
    assert client.view.module("zoo.far").Outer.Inner.__mro__[1] is client.view.module("zoo.meta").Made


def test_delete_method_refuses_a_method_the_class_body_uses_as_it_runs(client, image):
    # Deleted, `x = property(getx)` was a NameError: the module imported in no new session.
    source = ("import json\n\n\nclass Used:\n    def getx(self):\n        return 1\n\n"
              "    x = property(getx)\n\n    def _deco(f):\n        return f\n\n    @_deco\n"
              "    def m(self):\n        return 2\n\n    def json(self):\n        return 3\n\n"
              "    j = json\n\n    def late(self):\n        return 4\n\n    late = late\n")
    (image / "zoo" / "used.py").write_text(source)
    client.ok("refresh")
    message = client.error("delete_method", "refused", className="Used", selector="getx")
    assert "zoo.used.Used.getx is used by the class body as it runs ('x = property(getx)')" in message
    assert "'@_deco'" in client.error("delete_method", "refused", className="Used", selector="_deco")
    assert (image / "zoo" / "used.py").read_text() == source and not client.view.has_changes
    client.ok("delete_method", className="Used", selector="json")   # the module's json then
    client.ok("delete_method", className="Used", selector="m")
    client.ok("delete_method", className="Used", selector="_deco")  # no longer used


def test_a_module_binding_after_the_class_does_not_bind_what_its_body_reads(client, image):
    # The class body runs before the module's later `def getx`: deleted, A.getx was a
    # NameError, committed, and the module imported in no new session.
    source = ("class A:\n    def getx(self):\n        return 1\n\n    x = property(getx)\n\n\n"
              "def getx():\n    return 2\n")
    (image / "zoo" / "later.py").write_text(source)
    client.ok("refresh")
    assert "('x = property(getx)')" in client.error("delete_method", "refused", className="A", selector="getx")
    assert (image / "zoo" / "later.py").read_text() == source and not client.view.has_changes
    # Redefined without getx, it is carried back above its user, not after it.
    client.ok("compile_class_definition", source="class A:\n    x = property(getx)\n")
    assert client.view.module("zoo.later").A().x == 1


def test_delete_method_deletes_a_method_the_module_binds_under_a_block_above_the_class(client, image):
    # The module's `def getx` under a top-level `if` was not counted: refused, though
    # the class body then reads the module's getx and the module imports.
    (image / "zoo" / "blocked.py").write_text(
        "if True:\n    def getx(self):\n        return 1\n\n\n"
        "class A:\n    def getx(self):\n        return 2\n\n    x = property(getx)\n")
    client.ok("refresh")
    client.ok("delete_method", className="A", selector="getx")
    namespace = {}
    exec(disk(image, "zoo/blocked.py"), namespace)   # as a new session's import runs it
    assert "getx" not in vars(namespace["A"]) and namespace["A"]().x == 1


def test_a_binding_only_a_type_checker_sees_binds_nothing_for_the_class_body(client, image):
    # `if TYPE_CHECKING: from os.path import getx` binds no getx as the module runs: it
    # was counted as binding it, the delete committed a module importing nowhere, and
    # compile_class_definition no longer carried getx above its user.
    source = ("from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from os.path import getx\n\n\n"
              "class A:\n    def getx(self):\n        return 1\n\n    x = property(getx)\n")
    (image / "zoo" / "typed.py").write_text(source)
    client.ok("refresh")
    assert "('x = property(getx)')" in client.error("delete_method", "refused", className="A", selector="getx")
    assert disk(image, "zoo/typed.py") == source and not client.view.has_changes
    client.ok("compile_class_definition", source="class A:\n    y = 2\n    x = property(getx)\n")
    namespace = {}
    exec(disk(image, "zoo/typed.py"), namespace)   # as a new session's import runs it
    assert namespace["A"]().x == 1 and client.view.module("zoo.typed").A().x == 1


def test_delete_method_refuses_a_method_the_module_reads_unguarded_as_it_runs(client, image):
    # Deleted, `handler = Job.run` is an AttributeError in a new session's import: it was
    # deleted with a note and committed, the module importing in no new session. A guarded
    # read is deleted with a note (test_delete_method_deletes_a_method_the_module_reads_guarded).
    source = ("class Base:\n    def stop(self):\n        return 0\n\n\nclass Job(Base):\n"
              "    def run(self):\n        return 1\n\n    def stop(self):\n        return 2\n\n"
              "    def idle(self):\n        return 3\n\n\nhandler = Job.run\nstopper = Job.stop\n\n\n"
              "def later():\n    return Job.idle\n")
    (image / "zoo" / "jobs.py").write_text(source)
    client.ok("refresh")
    result = client.call("delete_method", className="Job", selector="run")
    assert result["structuredContent"]["error"]["usedBy"] == [
        {"attribute": "run", "statement": "handler = Job.run", "line": 17}]
    assert text(result) == (
        "zoo.jobs's own top-level code reads, unguarded, as it runs: zoo.jobs.Job.run on line 17 "
        "('handler = Job.run'); deleted, zoo.jobs would no longer import (AttributeError), here or "
        "in a new session, nor would the modules importing it. Change that statement first (in the "
        "module's file, then refresh; a read guarded by try/except AttributeError or hasattr is only "
        "noted), then delete it.")
    assert disk(image, "zoo/jobs.py") == source and client.view.module("zoo.jobs").Job.run
    for selector in ("stop", "idle"):   # Base's then; read only when called
        result = client.ok("delete_method", className="Job", selector=selector)
        assert "note" not in text(result) and "readAsItRuns" not in result["structuredContent"]


def test_delete_method_names_another_module_reading_it_as_it_runs(client, image):
    # `handler = Job.run` in another module: committed, that module imported in no new
    # session, and the answer said nothing.
    (image / "zoo" / "jobs.py").write_text(
        "class Job:\n    def run(self):\n        return 1\n\n    def stop(self):\n        return 2\n")
    (image / "zoo" / "runner.py").write_text(
        "from zoo.jobs import Job\n\nhandler = Job.run\n\n\ndef later(job):\n    return job.stop()\n")
    client.ok("refresh")
    client.view.module("zoo.jobs")                      # zoo.runner not loaded: named all the same
    result = client.ok("delete_method", className="Job", selector="run")
    assert result["structuredContent"]["reimported"] == ["zoo.runner"]
    assert result["structuredContent"]["importErrors"] == {
        "zoo.runner": "AttributeError: type object 'Job' has no attribute 'run'"}
    assert ("deleted zoo.jobs.Job.run; re-imported zoo.runner; zoo.runner now fails to import: "
            "AttributeError: type object 'Job' has no attribute 'run'; committed") in text(result)
    # A method read only in a function body: no importer is re-imported (nor replaced).
    result = client.ok("delete_method", className="Job", selector="stop")["structuredContent"]
    assert "reimported" not in result and "importErrors" not in result


def test_delete_method_and_function_name_the_callers_still_in_the_image(client, image):
    # Committed with nothing said, though find_senders listed each caller: every call of
    # the deleted method or function then failed (AttributeError, NameError).
    (image / "zoo" / "jobs.py").write_text(
        "class Base:\n    def stop(self):\n        return 0\n\n\n"
        "class Job(Base):\n    def run(self):\n        return 1\n\n    def stop(self):\n        return 2\n\n"
        "    def twice(self):\n        return self.run() + self.run()\n\n    def alone(self):\n        return 3\n\n\n"
        "def helper():\n    return 4\n\n\ndef use():\n    return helper()\n")
    (image / "zoo" / "runner.py").write_text(
        "import zoo.jobs\n\n\ndef go(job):\n    return job.run(), zoo.jobs.helper()\n\n\n"
        "def run():\n    return 5\n\n\ndef bare():\n    return run()\n")
    client.ok("refresh")
    result = client.ok("delete_method", className="Job", selector="run")
    assert result["structuredContent"]["stillCalledBy"] == {
        "results": ["zoo.jobs.Job.twice", "zoo.runner.go"], "total": 2}   # not zoo.runner.bare's run()
    assert ("deleted zoo.jobs.Job.run; note: the image still calls run by name, in zoo.jobs.Job.twice, "
            "zoo.runner.go: where one is on a zoo.jobs.Job (or a subclass without its own), it now fails "
            "(AttributeError); committed") in text(result)
    assert {"class", "selector", "committed", "version"} <= set(result["structuredContent"])
    result = client.ok("delete_method", className="zoo.jobs", selector="helper")
    assert result["structuredContent"]["stillCalledBy"] == {"results": ["zoo.jobs.use", "zoo.runner.go"],
                                                            "total": 2}
    assert ("; note: the image still calls helper by name, in zoo.jobs.use, zoo.runner.go: where one means "
            "zoo.jobs.helper, it now fails (NameError; AttributeError through its module)") in text(result)
    # Base's stop still answers job.stop(); nothing calls alone.
    (image / "zoo" / "stopper.py").write_text("def halt(job):\n    return job.stop()\n")
    client.ok("refresh")
    for selector in ("stop", "alone"):
        result = client.ok("delete_method", className="Job", selector=selector)
        assert "stillCalledBy" not in result["structuredContent"] and "still calls" not in text(result)


def test_a_deletes_note_names_ten_callers_and_counts_the_rest(client, image):
    (image / "zoo" / "many.py").write_text(
        "def target():\n    return 1\n" + "".join(f"\n\ndef call{n:02}():\n    return target()\n"
                                                  for n in range(12)))
    client.ok("refresh")
    result = client.ok("delete_method", className="zoo.many", selector="target")
    assert result["structuredContent"]["stillCalledBy"]["total"] == 12
    assert ("in " + ", ".join(f"zoo.many.call{n:02}" for n in range(10)) + " and 2 more (find_senders lists "
            "them): ") in text(result)


def test_an_importer_the_re_import_loads_failing_is_named_too(client, image):
    # zoo.checked (not loaded here) needs Job.run as it runs, without reading it (hasattr):
    # loaded to re-import zoo.runner, it failed, as in every new session, and went unnamed.
    (image / "zoo" / "jobs.py").write_text("class Job:\n    def run(self):\n        return 1\n")
    (image / "zoo" / "runner.py").write_text("from zoo.jobs import Job\n\nhandler = Job.run\n")
    (image / "zoo" / "checked.py").write_text(
        "from zoo.jobs import Job\n\nif not hasattr(Job, 'run'):\n    raise ImportError('Job cannot run')\n")
    client.ok("refresh")
    client.view.module("zoo.jobs")
    result = client.ok("delete_method", className="Job", selector="run")
    assert result["structuredContent"]["reimported"] == ["zoo.runner"]
    assert result["structuredContent"]["importErrors"] == {
        "zoo.checked": "ImportError: Job cannot run",
        "zoo.runner": "AttributeError: type object 'Job' has no attribute 'run'"}
    assert "; zoo.checked now fails to import: ImportError: Job cannot run" in text(result)


def test_delete_method_re_imports_no_importer_that_does_not_read_it_as_it_runs(client, image):
    # Re-importing every importer on each delete_method would replace their live classes.
    keeper = client.view.module("zoo.keeper")
    result = client.ok("delete_method", className="Dog", selector="noise")["structuredContent"]
    assert "reimported" not in result and client.view.module("zoo.keeper") is keeper


def test_delete_method_deletes_a_method_the_module_reads_guarded(client, image):
    (image / "zoo" / "guarded.py").write_text(
        "class A:\n    def run(self):\n        return 1\n\n\n"
        "try:\n    h = A.run\nexcept AttributeError:\n    h = None\n")
    client.ok("refresh")
    assert "'h = A.run'" in text(client.ok("delete_method", className="A", selector="run"))
    namespace = {}
    exec(disk(image, "zoo/guarded.py"), namespace)   # as a new session's import runs it
    assert "run" not in vars(namespace["A"]) and namespace["h"] is None


def test_delete_class_refuses_a_class_its_own_module_still_needs_as_it_runs(client, image):
    # The module was left live with the class in it: its tests still passed here, while
    # every new session found the module failing to import (kind = Shape: NameError).
    # Then it was re-imported, failing here too, but committed so all the same.
    (image / "zoo" / "shapes.py").write_text(
        "class Shape:\n    pass\n\n\nclass Square:\n    kind = Shape\n\n\nclass Other:\n    pass\n")
    (image / "zoo" / "test_shapes.py").write_text(
        "import unittest\n\nfrom zoo.shapes import Square\n\n\n"
        "class ShapesTest(unittest.TestCase):\n    def test_square(self):\n        Square()\n")
    client.ok("refresh")
    before = disk(image, "zoo/shapes.py")
    said = client.error("delete_class", "refused", className="zoo.shapes.Shape")
    assert said.startswith("zoo.shapes.Shape is used by zoo.shapes's own top-level code as it runs "
                           "(line 6: 'kind = Shape'); deleted, zoo.shapes would no longer import")
    assert disk(image, "zoo/shapes.py") == before
    assert client.ok("run_test_class", className="ShapesTest")["structuredContent"]["passed"] == 1
    # A class its module does not need as it runs leaves the module live as it was.
    animals = client.view.module("zoo.animals")
    result = client.ok("delete_class", className="zoo.animals.Dog")["structuredContent"]
    assert "zoo.animals" not in result["reimported"] and client.view.module("zoo.animals") is animals


def test_delete_class_named_only_in_an_except_clause_as_the_module_runs_is_deleted(client, image):
    # The clause's class is evaluated only when its try body raises: the module imports
    # without it, yet the deletion was refused as a sure read, with no way through but an editor.
    source = ("class Missing(Exception):\n    pass\n\n\ntry:\n    LIMIT = int('3')\n"
              "except Missing:\n    LIMIT = 0\n")
    (image / "zoo" / "limits.py").write_text(source)
    client.ok("refresh")
    result = client.ok("delete_class", className="zoo.limits.Missing")["structuredContent"]
    assert "importErrors" not in result or "zoo.limits" not in result["importErrors"]
    assert "class Missing" not in disk(image, "zoo/limits.py")
    namespace = {}
    exec(disk(image, "zoo/limits.py"), namespace)   # as a new session's import runs it
    assert namespace["LIMIT"] == 3


def test_delete_method_the_module_sets_anew_above_its_read_as_it_runs_is_deleted(client, image):
    # `Job.run = fast_run` gives the class the attribute before `RUN = Job.run` reads it: the
    # module imports without the def, yet the deletion was refused as a sure read.
    source = ("class Job:\n    def run(self):\n        return 1\n\n\ndef fast_run(self):\n    return 2\n\n\n"
              "Job.run = fast_run\nRUN = Job.run\n")
    (image / "zoo" / "jobs.py").write_text(source)
    client.ok("refresh")
    client.ok("delete_method", className="zoo.jobs.Job", selector="run")
    assert "def run" not in disk(image, "zoo/jobs.py")
    namespace = {}
    exec(disk(image, "zoo/jobs.py"), namespace)   # as a new session's import runs it
    assert namespace["RUN"] is namespace["fast_run"]


def test_delete_function_a_function_the_module_calls_binds_again_is_deleted(client, image):
    # `install()` binds `encode` as a global before `DEFAULT = encode` reads it: the module
    # imports without the def, yet the deletion was refused as a sure read.
    source = ("def encode(text):\n    return text\n\n\ndef install():\n    global encode\n"
              "    encode = str.upper\n\n\ninstall()\nDEFAULT = encode\n")
    (image / "zoo" / "codec.py").write_text(source)
    client.ok("refresh")
    client.ok("delete_method", className="zoo.codec", selector="encode")
    assert "def encode" not in disk(image, "zoo/codec.py")
    namespace = {}
    exec(disk(image, "zoo/codec.py"), namespace)   # as a new session's import runs it
    assert namespace["DEFAULT"] is str.upper


def test_delete_method_a_function_the_module_calls_sets_anew_above_its_read_is_deleted(client, image):
    # `install()` sets Job.run before `RUN = Job.run` reads it: the module imports without
    # the def, yet the deletion was refused as a sure read.
    source = ("class Job:\n    def run(self):\n        return 1\n\n\ndef fast_run(self):\n    return 2\n\n\n"
              "def install():\n    Job.run = fast_run\n\n\ninstall()\nRUN = Job.run\n")
    (image / "zoo" / "installed.py").write_text(source)
    client.ok("refresh")
    client.ok("delete_method", className="zoo.installed.Job", selector="run")
    assert "def run" not in disk(image, "zoo/installed.py")
    namespace = {}
    exec(disk(image, "zoo/installed.py"), namespace)   # as a new session's import runs it
    assert namespace["RUN"] is namespace["fast_run"]


def test_delete_class_named_only_in_a_later_case_of_a_match_as_the_module_runs_is_deleted(client, image):
    # The second case is tried only when the first does not match: refused as a sure read before.
    source = ("import sys\n\n\nclass Unknown:\n    pass\n\n\nmatch sys.byteorder:\n"
              "    case 'little' | 'big':\n        ORDER = sys.byteorder\n    case Unknown():\n"
              "        ORDER = None\n")
    (image / "zoo" / "order.py").write_text(source)
    client.ok("refresh")
    client.ok("delete_class", className="zoo.order.Unknown")
    assert "class Unknown" not in disk(image, "zoo/order.py")
    namespace = {}
    exec(disk(image, "zoo/order.py"), namespace)   # as a new session's import runs it
    assert namespace["ORDER"] == sys.byteorder


def test_delete_method_of_what_only_an_except_clause_reads_as_the_module_runs_is_deleted(client, image):
    # `except Job.error()`: evaluated only when the try body raises, yet refused as a sure read.
    source = ("class Job:\n    @staticmethod\n    def error():\n        return ValueError\n\n\n"
              "try:\n    LIMIT = int('3')\nexcept Job.error():\n    LIMIT = 0\n")
    (image / "zoo" / "jobs.py").write_text(source)
    client.ok("refresh")
    client.ok("delete_method", className="zoo.jobs.Job", selector="error")
    assert "def error" not in disk(image, "zoo/jobs.py")


def test_delete_class_re_imports_its_importers(client):
    client.ok("run_test_class", className="ZooTest")          # zoo.test_zoo imports Dog
    result = client.ok("delete_class", className="Dog")
    assert "zoo.test_zoo now fails to import" in text(result)
    assert "cannot import name 'Dog'" in text(result)
    # as in any session opened after the commit, not against the deleted class
    message = client.error("run_test_class", "other", className="zoo.test_zoo.ZooTest")
    assert "cannot import name 'Dog'" in message


def test_remove_dictionary_re_imports_its_importers(client, image):
    assert "zoo.test_zoo.ZooTest" in text(client.ok("list_test_classes"))
    result = client.ok("remove_dictionary", dictionaryName="zoo.animals")
    assert "zoo.keeper" in text(result) and "zoo.test_zoo" in text(result)
    assert client.view.module("zoo.keeper") is None
    assert "No module named 'zoo.animals'" in client.view.import_errors["zoo.keeper"]
    assert "ZooTest" not in text(client.ok("list_test_classes"))


def test_remove_dictionary_refuses_a_module_whose_classes_other_modules_build_on(client, image):
    # It removed and committed zoo.meta, zoo.far then importing in no session (`class
    # Far(Made)`), without a word if the session had not loaded zoo.far.
    source = ("class Meta(type):\n    pass\n\n\nclass Made(metaclass=Meta):\n    pass\n\n\n"
              "class Child(Made):\n    pass\n")
    (image / "zoo" / "meta.py").write_text(source)
    (image / "zoo" / "far.py").write_text("from zoo.meta import Made\n\n\nclass Far(Made):\n    pass\n")
    (image / "zoo" / "other.py").write_text("from zoo.meta import Meta\n\n\nclass Other(metaclass=Meta):\n"
                                            "    pass\n")
    client.ok("refresh")
    result = client.call("remove_dictionary", dictionaryName="zoo.meta")
    assert result["structuredContent"]["error"] == {
        "kind": "refused", "subclasses": ["zoo.far.Far"], "metaclassOf": ["zoo.far.Far", "zoo.other.Other"],
        "message": "zoo.meta.Meta is the metaclass of image classes outside zoo.meta: zoo.far.Far "
                   "(zoo.far line 4), zoo.other.Other (zoo.other line 4); zoo.meta.Made has subclasses "
                   "in the image outside zoo.meta: zoo.far.Far (zoo.far line 4); removed, their modules "
                   "would no longer import (nor could their class statements run). Delete those classes "
                   "first (delete_class), redefine them without zoo.meta's classes "
                   "(compile_class_definition with other bases or metaclass), or remove their modules "
                   "first (remove_dictionary), then remove zoo.meta."}
    assert disk(image, "zoo/meta.py") == source and not client.view.has_changes
    # Those built on it removed or deleted first, in turn, it goes; its importer is named.
    client.ok("remove_dictionary", dictionaryName="zoo.other")
    assert client.call("remove_dictionary", dictionaryName="zoo.meta")["structuredContent"]["error"][
        "metaclassOf"] == ["zoo.far.Far"]
    client.ok("delete_class", className="zoo.far.Far")
    result = client.ok("remove_dictionary", dictionaryName="zoo.meta")
    assert result["structuredContent"]["importErrors"] == {"zoo.far": "ModuleNotFoundError: No module named 'zoo.meta'"}
    assert text(result).startswith(
        "removed dictionary zoo.meta; re-imported zoo.far; zoo.far now fails to import: "
        "ModuleNotFoundError: No module named 'zoo.meta'; note: zoo.far fails to import in every new "
        "session too: remove it as well (remove_dictionary), or change its imports of zoo.meta in an "
        "editor, then refresh; committed")
    assert not (image / "zoo" / "meta.py").exists()


def test_remove_dictionary_of_a_package_counts_no_class_built_on_within_it(client, image):
    (image / "zoo" / "far.py").write_text("from zoo.animals import Animal\n\n\nclass Far(Animal):\n    pass\n")
    client.ok("refresh")
    assert client.call("remove_dictionary", dictionaryName="zoo.animals")["structuredContent"]["error"][
        "subclasses"] == ["zoo.far.Far"]      # zoo.animals.Dog, removed with it, is not one
    assert sorted(client.ok("remove_dictionary", dictionaryName="zoo")["structuredContent"]["removed"]) == [
        "zoo", "zoo.animals", "zoo.far", "zoo.keeper", "zoo.test_zoo"]


def test_remove_dictionary_of_a_package_names_it_and_its_submodules_apart():
    # "removed dictionary zoo, zoo.animals, ...": one dictionary named, a list after it.
    assert mutation.removed_text("zoo", ["zoo"]) == "removed dictionary zoo"
    assert mutation.removed_text("zoo", ["zoo", "zoo.animals"]) == "removed dictionary zoo and its submodule zoo.animals"
    assert mutation.removed_text("zoo", ["zoo", "zoo.animals", "zoo.far"]) == (
        "removed dictionary zoo and its submodules zoo.animals, zoo.far")


def test_remove_dictionary_names_the_importers_the_session_had_not_loaded(client, image):
    # Nothing loaded them: they were left out of the answer, committed failing to import.
    result = client.ok("remove_dictionary", dictionaryName="zoo.animals")["structuredContent"]
    assert result["reimported"] == ["zoo.keeper", "zoo.test_zoo"]
    assert sorted(result["importErrors"]) == ["zoo.keeper", "zoo.test_zoo"]


def test_delete_method_of_a_function_names_the_importers_the_session_had_not_loaded(client, image):
    (image / "zoo" / "uses.py").write_text("from zoo.animals import make_dog\n")
    client.ok("refresh")
    result = client.ok("delete_method", className="zoo.animals", selector="make_dog")["structuredContent"]
    assert "zoo.uses" in result["reimported"]
    assert result["importErrors"]["zoo.uses"].startswith(
        "ImportError: cannot import name 'make_dog' from 'zoo.animals'")


def test_add_and_remove_dictionary(client, image):
    client.ok("add_dictionary", dictionaryName="aviary.birds")
    assert (image / "aviary/__init__.py").exists() and (image / "aviary/birds.py").exists()
    assert "aviary.birds" in client.ok("list_dictionaries")["structuredContent"]["dictionaries"]
    client.error("add_dictionary", "refused", dictionaryName="aviary.birds")
    client.error("add_dictionary", "refused", dictionaryName="os")
    client.error("add_dictionary", "refused", dictionaryName="builtins")
    client.error("add_dictionary", "refused", dictionaryName="kern.sub")
    client.error("add_dictionary", "invalidParams", dictionaryName="not-valid")
    client.ok("remove_dictionary", dictionaryName="aviary")
    assert not (image / "aviary").exists()
    client.error("remove_dictionary", "notFound", dictionaryName="aviary")
    client.error("remove_dictionary", "refused", dictionaryName="builtins")
    client.error("remove_dictionary", "refused", dictionaryName="json")


def test_a_dictionary_name_is_read_as_import_reads_it(client, image):
    # `import ｐkg.wide` imports pkg.wide (NFKC): a file named ｐkg/wide.py no import
    # statement could reach was created and listed as dictionary ｐkg.wide.
    client.ok("add_dictionary", dictionaryName="ｚoo.ｗide")
    assert (image / "zoo/wide.py").exists() and not (image / "ｚoo").exists()
    assert client.ok("list_dictionaries")["structuredContent"]["dictionaries"].count("zoo.wide") == 1
    client.ok("compile_class_definition", source="class Wide:\n    pass\n", dictionaryName="ｚoo.wide")
    assert client.ok("list_classes", dictionaryName="zoo.ｗide")["structuredContent"] == {
        "dictionary": "zoo.wide", "classes": ["Wide"], "total": 1}
    assert client.ok("list_dictionary_entries", dictionaryName="ｚoo.wide")["structuredContent"]["dictionary"] == "zoo.wide"
    assert client.ok("search_method_source", pattern="woof",
                     dictionaryName="zoo.ａnimals")["structuredContent"]["total"] == 1
    # ｉｆ is `if`, a keyword: no module can be named so.
    client.error("add_dictionary", "invalidParams", dictionaryName="zoo.ｉｆ")
    client.ok("remove_dictionary", dictionaryName="ｚoo.wide")
    assert not (image / "zoo/wide.py").exists()


@pytest.mark.parametrize("dot", ["\ufe52", "\u2024"])   # small full stop, one dot leader
def test_a_dot_only_nfkc_makes_is_no_dictionary_name_separator(client, image, dot):
    # NFKC turns both into `.`: add_dictionary made zoo/x.py from a name no import
    # statement spells, and remove_dictionary removed zoo.animals so named.
    for tool, arguments in [("add_dictionary", {}), ("remove_dictionary", {}), ("list_classes", {}),
                            ("list_dictionary_entries", {}), ("search_method_source", {"pattern": "woof"}),
                            ("compile_class_definition", {"source": "class Dotted:\n    pass\n"})]:
        name = f"zoo{dot}x" if tool == "add_dictionary" else f"zoo{dot}animals"
        message = client.error(tool, "invalidParams", dictionaryName=name, **arguments)
        assert f"{name!r} is not a dotted module name" in message
    assert not (image / "zoo/x.py").exists() and (image / "zoo/animals.py").exists()
    assert not client.view.has_changes
    assert "is not a class name" in client.error("describe_class", "invalidParams", className=f"zoo{dot}animals.Dog")
    assert "is not a global name" in client.error("find_references_to", "invalidParams", name=f"zoo{dot}Dog")


def test_a_packages_init_file_is_no_dictionary_of_its_own(client, image):
    # zoo.__init__ named zoo's file, imported a second time as a module of that name:
    # compile_class_definition wrote to zoo/__init__.py and answered zoo.__init__.Pen, a
    # class other than zoo.Pen, and every tool took the name list_dictionaries never gives.
    for tool, arguments in [("list_classes", {}), ("list_dictionary_entries", {}),
                            ("search_method_source", {"pattern": "woof"}),
                            ("compile_class_definition", {"source": "class Pen:\n    pass\n"})]:
        message = client.error(tool, "notFound", dictionaryName="zoo.__init__", **arguments)
        assert "zoo/__init__.py is the package zoo's own module: pass zoo" in message
    assert "pass zoo" in client.error("describe_class", "notFound", className="zoo.__init__.Pen")
    assert (image / "zoo/__init__.py").read_text() == "" and not client.view.has_changes
    assert client.view.module("zoo.__init__") is None and "zoo.__init__" not in client.view.loaded_modules()


def test_a_file_no_import_statement_reaches_is_no_dictionary(client, image):
    # `import ｐkg` looks for pkg, never for the file ｐkg.py: it is no image module.
    (image / "ｗide.py").write_text("class Wide:\n    pass\n")
    (image / "ｗider").mkdir()
    (image / "ｗider" / "__init__.py").write_text("")
    client.ok("refresh")
    names = client.ok("list_dictionaries")["structuredContent"]["dictionaries"]
    assert not [name for name in names if "ide" in name]


def test_a_class_cannot_be_added_to_a_module_that_does_not_compile(client, image):
    (image / "zoo" / "typo.py").write_text("x = 1\n\n\nclass Typo(:\n    pass\n")
    client.ok("refresh")
    message = client.error("compile_class_definition", "other", source="class New:\n    pass\n",
                           dictionaryName="zoo.typo")
    assert message == "image module zoo.typo does not compile: line 4: invalid syntax"
    assert not client.view.has_changes


def test_a_dictionary_name_too_long_for_a_file_is_refused_and_leaves_nothing_to_commit(client, image):
    # Refused before the view changes: added, it could never be committed, and every
    # later mutation of the session (each one commits) would fail on it too.
    for name in ("a" * 250, "p" * 256 + ".leaf", ".".join(["d" * 200] * 21)):
        message = client.error("add_dictionary", "invalidParams", dictionaryName=name)
        assert "too long" in message and not client.view.has_changes
    client.ok("set_class_comment", className="Dog", comment="Still commits.")
    client.ok("add_dictionary", dictionaryName="b" * 200)
    assert (image / ("b" * 200 + ".py")).exists()


def test_a_dictionary_under_a_module_is_refused_with_its_name_cut(client):
    # The whole name was echoed: 5000 characters of it came back in the refusal.
    name = "zoo.animals." + "y" * 5000
    message = client.error("add_dictionary", "refused", dictionaryName=name)
    assert message == (f"zoo.animals is a module, not a package, so {name[:200]}... (5012 characters) cannot live "
                       "under it: to make zoo.animals a package, move zoo/animals.py to zoo/animals/__init__.py "
                       "in the image's directory, then refresh")
    assert not client.view.has_changes


def test_a_conflicting_mutation_stays_uncommitted_and_says_so(image, views):
    a, b = Client(views(image, "a")), views(image, "b", install=False)
    b.set_source("zoo.animals", b.source("zoo.animals").replace('class Dog(Animal):\n',
                 'class Dog(Animal):\n    """From b."""\n'), live=False)
    b.commit()
    message = a.error("set_class_comment", "conflict", className="Dog", comment="From a.")
    assert "kept uncommitted" in message and "zoo.animals" in message
    assert a.view.changed_modules() == ["zoo.animals"]
    assert a.view.module("zoo.animals").Dog.__doc__ == "From a."
    assert '"""From b."""' in disk(image)


def test_a_mutation_says_which_of_its_changes_another_session_committed_the_same(image, views):
    # a's change to zoo.animals conflicts with b's and stays uncommitted; c then commits
    # exactly a's text: a's next mutation writes only its own module.
    a, b = Client(views(image, "a")), views(image, "b", install=False)
    b.set_source("zoo.animals", b.source("zoo.animals") + "# b\n", live=False)
    b.commit()
    a.error("compile_method", "conflict", className="Dog", source="def noise(self):\n    return 'grr'\n")
    c = views(image, "c", install=False)
    c.set_source("zoo.animals", a.view.source("zoo.animals"), live=False)
    c.commit()
    done = a.ok("set_class_comment", className="Keeper", comment="Kept.")
    assert (done["structuredContent"]["committed"], done["structuredContent"]["alreadyCommitted"]) == (
        ["zoo.keeper"], ["zoo.animals"])
    assert "\nalready committed by another, with the same text: zoo.animals" in text(done)
    assert not a.view.has_changes
    assert [[f["file"] for f in r["files"]] for r in a.view.store.journal()][-1] == ["zoo/keeper.py"]


def test_a_mutation_another_session_already_committed_alike_says_nothing_was_written(image, views):
    # It answered "...; committed (view version N)" though it had written nothing.
    # a's change conflicts with b's and stays uncommitted; c then commits exactly a's text.
    a, b = Client(views(image, "a")), views(image, "b", install=False)
    b.set_source("zoo.animals", b.source("zoo.animals") + "# b\n", live=False)
    b.commit()
    noise = "def noise(self):\n    return 'grr'\n"
    a.error("compile_method", "conflict", className="Dog", source=noise)
    c = views(image, "c", install=False)
    c.set_source("zoo.animals", a.view.source("zoo.animals"), live=False)
    c.commit()
    done = a.ok("compile_method", className="Dog", source=noise)   # the same again: only that to commit
    assert (done["structuredContent"]["committed"], done["structuredContent"]["alreadyCommitted"]) == (
        [], ["zoo.animals"])
    assert text(done) == ("replaced zoo.animals.Dog.noise; already committed by another, with the same text: "
                          f"zoo.animals, so nothing was written (view version {a.view.version})")


def test_a_mutation_names_the_modules_others_commits_brought_in(image, views):
    a, b = Client(views(image, "a")), views(image, "b", install=False)
    b.set_source("zoo.keeper", b.source("zoo.keeper") + "KEPT_BY_B = 1\n", live=False)
    b.commit()
    compiled = a.ok("compile_method", className="Dog", source="def noise(self):\n    return 'grr'\n")
    assert (compiled["structuredContent"]["committed"], compiled["structuredContent"]["broughtIn"]) == (
        ["zoo.animals"], ["zoo.keeper"])
    assert text(compiled).endswith("\nbrought in others' commits to zoo.keeper")
    assert "KEPT_BY_B = 1" in a.view.source("zoo.keeper")
    # Nothing new from others: neither the key nor the line.
    quiet = a.ok("set_class_comment", className="Dog", comment="Quiet.")
    assert "broughtIn" not in quiet["structuredContent"] and "brought in" not in text(quiet)
    b.refresh()
    b.add_module("zoo.extra", "X = 1\n")
    b.set_source("zoo.keeper", b.source("zoo.keeper") + "AGAIN = 2\n", live=False)
    b.commit()
    added = a.ok("add_dictionary", dictionaryName="zoo.mine")
    assert added["structuredContent"]["broughtIn"] == ["zoo.extra", "zoo.keeper"]
    assert text(added).endswith("\nbrought in others' commits to zoo.extra, zoo.keeper")



def test_a_mutation_names_the_loaded_modules_others_commits_leave_failing_to_import(image, views):
    # The module just changed here is among them: its commit brought in the removal of
    # a class it imports, so this session's re-import of it failed, as a new session's would.
    a, b = Client(views(image, "a")), views(image, "b", install=False)
    assert a.view.module("zoo.keeper") is not None
    without_dog(b)
    compiled = a.ok("compile_method", className="Keeper", source="def count(self):\n    return 0\n")
    errors = compiled["structuredContent"]["importErrors"]
    assert list(errors) == ["zoo.keeper"] and "cannot import name 'Dog'" in errors["zoo.keeper"]
    assert text(compiled).endswith("\nbrought in others' commits to zoo.animals"
                                   "\nimport error in zoo.keeper: " + errors["zoo.keeper"])
    quiet = a.ok("set_class_comment", className="Animal", comment="Quiet.")
    assert "importErrors" not in quiet["structuredContent"] and "import error" not in text(quiet)


def test_read_only_session_has_no_mutation_tools(image, views):
    reader = Client(views(image), read_only=True)
    response = reader.server.handle({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                     "params": {"name": "compile_method", "arguments": {}}})
    assert response["error"]["data"]["kind"] == "readOnly"
    assert reader.ok("status")["structuredContent"]["readOnly"] is True


# -- testing ---------------------------------------------------------------------

def test_list_and_run_test_classes_with_progress(client):
    assert client.ok("list_test_classes")["structuredContent"]["testClasses"] == ["zoo.test_zoo.ZooTest"]
    result = client.ok("run_test_class", className="ZooTest")["structuredContent"]
    assert (result["run"], result["passed"], result["failures"], result["errors"]) == (3, 1, 1, 1)
    assert {f["test"].rpartition(".")[2]: f["outcome"] for f in result["failed"]} == {
        "test_fail": "failure", "test_error": "error"}
    progress = [n["params"] for n in client.progress]
    assert [(p["progress"], p["total"]) for p in progress] == [(1, 3), (2, 3), (3, 3)]
    assert progress[0]["message"].startswith("zoo.test_zoo.ZooTest.test_")


def test_run_test_method_and_describe_failure(client):
    passed = client.ok("run_test_method", className="ZooTest", selector="test_pass")["structuredContent"]
    assert (passed["run"], passed["passed"]) == (1, 1)
    detail = client.ok("describe_test_failure", className="ZooTest", selector="test_error")["structuredContent"]
    assert detail["exception"] == "ZeroDivisionError" and "1 / 0" in detail["traceback"]
    assert "no failure" in text(client.ok("describe_test_failure", className="ZooTest", selector="test_pass"))
    client.error("run_test_method", "notFound", className="ZooTest", selector="test_nope")
    client.error("run_test_class", "notFound", className="Dog")


def test_tests_run_against_the_sessions_uncommitted_changes(client):
    client.view.set_source("zoo.test_zoo", client.view.source("zoo.test_zoo"), live=False)
    client.ok("compile_method", className="Dog", source="def noise(self):\n    return 'meow'\n")
    failing = client.ok("list_failing_tests")["structuredContent"]["failing"]
    assert sorted(f["test"].rpartition(".")[2] for f in failing) == ["test_error", "test_pass"]
    assert len(client.progress) == 3
    named = client.ok("list_failing_tests", classNames=["zoo.test_zoo.ZooTest"])["structuredContent"]
    assert named["run"] == 3


PROPERTY = ("@property\ndef age(self):\n    return self._age\n\n"
            "@age.setter\ndef age(self, value):\n    self._age = value\n")


def test_compile_method_takes_a_propertys_defs_together(client, image):
    # One def only was accepted: a getter compiled from get_method_source's text (getter and
    # setter) had to go alone, and replaced the setter with it.
    client.ok("compile_method", className="Dog", source=PROPERTY)
    shown = client.ok("get_method_source", className="Dog", selector="age")["structuredContent"]["source"]
    assert shown == PROPERTY
    client.ok("compile_method", className="Dog",
              source=shown.replace("return self._age", "return self._age + 1"))
    dog = client.view.module("zoo.animals").Dog("rex")
    dog.age = 3
    assert dog.age == 4
    assert ("    @property\n    def age(self):\n        return self._age + 1\n\n"
            "    @age.setter\n    def age(self, value):\n        self._age = value\n") in disk(image)
    for source in ("def a(self):\n    pass\n\ndef b(self):\n    pass\n",
                   "def a(self):\n    pass\n\nx = 1\n"):
        assert "the defs of one property" in client.error("compile_method", "refused",
                                                          className="Dog", source=source)
    assert "meta makes one def a classmethod" in client.error("compile_method", "refused",
                                                              className="Dog", source=PROPERTY, meta=True)
    # The getter alone would replace the setter too: refused, nothing changed.
    before = disk(image)
    getter_alone = "@property\ndef age(self):\n    return 0\n"
    assert ("zoo.animals.Dog.age is written as 2 defs (a property's getter, setter...) and the "
            "source has 1; send them together") in client.error("compile_method", "refused",
                                                                 className="Dog", source=getter_alone)
    assert disk(image) == before
    assert not client.view.has_changes


def test_delete_method_of_a_method_the_class_does_not_define_names_the_one_meant(client):
    # It answered only "zoo.animals.Animal defines no method speek".
    assert client.error("delete_method", "notFound", className="Animal", selector="speek") == (
        "zoo.animals.Animal defines no method speek (did you mean speak?)")
    assert client.error("delete_method", "notFound", className="Animal", selector="fly") == (
        "zoo.animals.Animal defines no method fly; list_methods shows its methods")


def test_delete_method_refuses_a_selector_that_is_no_method_name(client):
    for selector in ("", "a b", "noise()"):
        client.error("delete_method", "invalidParams", className="Dog", selector=selector)


VAULT = '''\
class Vault:
    def __secret(self):
        return "old"

    def open(self):
        return self.__secret()


class _Hidden:
    def __key(self):
        return 1
'''


def test_a_private_method_is_changed_and_deleted_live_under_either_spelling(client, image):
    client.view.add_module("zoo.vault", VAULT)
    vault_class = client.view.module("zoo.vault").Vault
    vault = vault_class()
    client.ok("compile_method", className="Vault", source="def __secret(self):\n    return 'new'\n")
    assert vault.open() == "new"                       # the live class, as its source now says
    assert "return 'new'" in disk(image, "zoo/vault.py")
    client.ok("compile_method", className="Vault", source="def _Vault__secret(self):\n    return 'newer'\n")
    assert vault.open() == "newer" and disk(image, "zoo/vault.py").count("__secret(self)") == 1
    client.ok("delete_method", className="Vault", selector="_Vault__secret")   # as list_methods shows it
    assert not hasattr(vault_class, "_Vault__secret") and "__secret(self)" not in disk(image, "zoo/vault.py")
    # Python strips a class name's leading underscores before mangling.
    client.ok("delete_method", className="_Hidden", selector="_Hidden__key")
    assert not hasattr(client.view.module("zoo.vault")._Hidden, "_Hidden__key")


def test_a_class_redefined_without_its_private_method_loses_it_live(client):
    client.view.add_module("zoo.vault", VAULT)
    vault_class = client.view.module("zoo.vault").Vault
    client.ok("compile_class_definition", source="class Vault:\n    pass\n", recompileMethods=False)
    assert not hasattr(vault_class, "_Vault__secret")


def test_compile_method_of_an_overloaded_name_replaces_the_implementation_live(client, image):
    client.view.add_module("zoo.conv", "from typing import overload\n\n\nclass Conv:\n"
                                       "    @overload\n    def conv(self, x: int) -> int: ...\n"
                                       "    @overload\n    def conv(self, x: str) -> str: ...\n"
                                       "    def conv(self, x):\n        return x\n")
    conv = client.view.module("zoo.conv").Conv()
    client.ok("compile_method", className="Conv", source="def conv(self, x):\n    return [x]\n")
    assert conv.conv(1) == [1]
    assert disk(image, "zoo/conv.py").count("@overload") == 2
    client.ok("delete_method", className="Conv", selector="conv")    # the name goes, signatures too
    assert "conv" not in disk(image, "zoo/conv.py").partition("class Conv")[2]


def test_fewer_defs_than_an_overloaded_name_has_are_refused_naming_the_overloads(client, image):
    # The refusal spoke only of "a property's getter, setter...".
    conv = ("from typing import overload\n\n\nclass Conv:\n"
            "    @overload\n    def conv(self, x: int) -> int: ...\n"
            "    @overload\n    def conv(self, x: str) -> str: ...\n"
            "    def conv(self, x):\n        return x\n")
    client.view.add_module("zoo.conv", conv)
    client.ok("commit")
    one_signature = "@overload\ndef conv(self, x: int) -> int: ...\n"
    assert client.error("compile_method", "refused", className="Conv", source=one_signature) == (
        "zoo.conv.Conv.conv is written as 3 defs (2 @overload signatures and the implementation) "
        "and the source has 1, which would replace all 3; send the overloads and the "
        "implementation together, as get_method_source gives them, or a def without @overload "
        "alone to replace only the implementation and keep the signatures")
    assert disk(image, "zoo/conv.py") == conv and not client.view.has_changes
    # Signatures with no implementation yet: a def without @overload adds it.
    client.view.add_module("zoo.stubs", conv.replace("    def conv(self, x):\n        return x\n", ""))
    assert client.error("compile_method", "refused", className="zoo.stubs.Conv", source=one_signature) == (
        "zoo.stubs.Conv.conv is written as 2 defs (2 @overload signatures) and the source has 1, "
        "which would replace all 2; send the overloads together, as get_method_source gives them, "
        "or a def without @overload alone to add the implementation and keep the signatures")
    # A name written twice as plain defs is no property.
    client.view.add_module("zoo.dup", "class Dup:\n    def d(self):\n        return 1\n\n"
                                      "    def d(self):\n        return 2\n")
    assert client.error("compile_method", "refused", className="Dup", source="def d(self):\n    pass\n") == (
        "zoo.dup.Dup.d is written as 2 defs and the source has 1; send them together, as "
        "get_method_source gives them, so none is dropped")


def test_a_helper_a_redefined_class_decorates_with_is_carried_above_its_user(client, image):
    # The helper went after the def it decorates: "name '_twice' is not defined", refused.
    client.view.add_module("zoo.wrapped", "class Wrapped:\n    def _twice(f):\n"
                                          "        return lambda self: 2 * f(self)\n\n"
                                          "    @_twice\n    def value(self):\n        return 1\n\n"
                                          "    def other(self):\n        return 'other'\n")
    wrapped = client.view.module("zoo.wrapped").Wrapped()
    result = client.ok("compile_class_definition",
                       source="class Wrapped:\n    @_twice\n    def value(self):\n        return 5\n")
    assert result["structuredContent"]["carried"] == ["_twice", "other"]
    assert result["structuredContent"]["failed"] == []
    assert wrapped.value() == 10 and wrapped.other() == "other"
    assert disk(image, "zoo/wrapped.py") == (
        "class Wrapped:\n    def _twice(f):\n        return lambda self: 2 * f(self)\n\n"
        "    @_twice\n    def value(self):\n        return 5\n\n"
        "    def other(self):\n        return 'other'\n")


def test_a_class_whose_carried_method_is_decorated_by_a_carried_helper_compiles_back(client, image):
    # get_class_definition gives `alias = h` alone; h went above it, its decorator _wrap at
    # the end, after it: the definition did not compile back as it was given.
    from test_image_splice import CHAINED
    client.view.add_module("zoo.chained", CHAINED)
    a = client.view.module("zoo.chained").A()
    definition = text(client.ok("get_class_definition", className="A"))
    result = client.ok("compile_class_definition", source=definition)
    assert result["structuredContent"]["carried"] == ["_wrap", "h", "other"]
    assert result["structuredContent"]["failed"] == []
    assert a.alias() == "h" and a.other() == 1
    assert disk(image, "zoo/chained.py") == CHAINED


def test_a_def_inside_a_class_level_try_is_not_deleted_out_of_it(client, image):
    from test_tools_browse import GUARDED
    client.view.add_module("zoo.guarded", GUARDED)
    client.ok("commit")
    message = client.error("delete_method", "refused", className="Guarded", selector="tried")
    assert "class-level try statement at zoo.guarded line 8" in message
    assert disk(image, "zoo/guarded.py") == GUARDED
    # compile_method alike: appended after the block, the def was what the class had
    # whichever branch ran; get_method_source's text of an if/else pair appended both.
    message = client.error("compile_method", "refused", className="Guarded",
                           source="def tried(self):\n    return 2\n")
    assert message == ("zoo.guarded.Guarded.tried is written inside the class-level try statement "
                       "at zoo.guarded line 8, not as a method of the class body; a def compiled "
                       "for it would go after that statement, and the class would have it whichever "
                       "branch ran: edit that statement with compile_class_definition "
                       "(get_class_definition shows it), or name the method otherwise")
    assert disk(image, "zoo/guarded.py") == GUARDED and not client.view.has_changes


def test_get_method_source_s_text_of_an_if_else_pair_is_refused_not_appended(client, image):
    source = ("import sys\n\n\nclass Pair:\n    if sys.platform == 'nowhere':\n        def go(self):\n"
              "            return 1\n    else:\n        def go(self):\n            return 2\n")
    client.view.add_module("zoo.pair", source)
    client.ok("commit")
    shown = client.ok("get_method_source", className="Pair", selector="go")["structuredContent"]["source"]
    assert "if statement at zoo.pair line 5" in client.error("compile_method", "refused",
                                                             className="Pair", source=shown)
    assert disk(image, "zoo/pair.py") == source
    # The way forward the refusal names: the statement, edited in the class's definition.
    definition = client.ok("get_class_definition", className="Pair")["structuredContent"]["definition"]
    client.ok("compile_class_definition", source=definition.replace("return 2", "return 3"))
    assert client.view.module("zoo.pair").Pair().go() == 3


def test_a_class_redefined_from_get_class_definition_keeps_everything_it_left_out(client, image):
    from test_image_splice import USED_AT_CLASS_LEVEL
    client.view.add_module("zoo.kitchen", USED_AT_CLASS_LEVEL)
    k_class = client.view.module("zoo.kitchen").K
    k = k_class()
    definition = text(client.ok("get_class_definition", className="K"))
    result = client.ok("compile_class_definition", source=definition.replace("limit = 3", "limit = 4"))
    assert result["structuredContent"]["carried"] == ["Inner", "greet", "get_limit", "other"]
    assert k.alias() == "hi" and k.limit_prop == 4 and k_class.Inner.__qualname__ == "K.Inner"
    assert "    class Inner:\n        pass\n" in disk(image, "zoo/kitchen.py")


def test_a_nested_class_left_out_of_a_redefinition_is_carried_over_not_lost(client, image):
    client.view.add_module("zoo.nest", "class Outer:\n    x = 1\n\n    class Inner:\n        y = 2\n")
    client.ok("compile_class_definition", source="class Outer:\n    x = 5\n")
    assert client.view.module("zoo.nest").Outer.Inner.y == 2
    assert disk(image, "zoo/nest.py") == "class Outer:\n    x = 5\n\n    class Inner:\n        y = 2\n"
    client.ok("compile_class_definition", source="class Outer:\n    x = 6\n", recompileMethods=False)
    assert not hasattr(client.view.module("zoo.nest").Outer, "Inner")


def test_delete_class_of_a_class_written_twice_leaves_no_definition_behind(client, image):
    client.view.add_module("zoo.twice", "class Twice:\n    def first(self):\n        return 1\n\n\n"
                                        "class Twice:\n    def second(self):\n        return 2\n")
    client.view.module("zoo.twice")
    client.ok("delete_class", className="Twice")
    assert "Twice" not in disk(image, "zoo/twice.py")
    assert client.ok("list_classes", dictionaryName="zoo.twice")["structuredContent"]["classes"] == []
    client.error("describe_class", "notFound", className="Twice")


def test_a_def_named_like_a_slot_is_refused_so_the_module_still_imports(client, image):
    source = "class Made:\n    __slots__ = ('a', '__b')\n\n    def __init__(self):\n        self.a = 1\n"
    client.view.add_module("zoo.slots", source)
    client.ok("commit")
    for name in ("a", "__b", "_Made__b"):
        message = client.error("compile_method", "refused", className="Made",
                               source=f"def {name}(self):\n    return 5\n")
        assert "__slots__" in message
    assert disk(image, "zoo/slots.py") == source and client.view.module("zoo.slots").Made().a == 1
    # From source too, when the module does not import.
    client.view.add_module("zoo.unslotted", source.replace("Made", "Unmade") + "raise RuntimeError('no')\n")
    assert "__slots__" in client.error("compile_method", "refused", className="Unmade",
                                       source="def a(self):\n    return 5\n")


def test_a_huge_dictionary_name_is_not_echoed_whole(client):
    for name in ("a" * 100_000, "a b" * 50_000):
        message = client.error("add_dictionary", "invalidParams", dictionaryName=name)
        assert len(message) < 1000 and "characters)" in message


@pytest.mark.parametrize("docstring", ["", '"""Forward references in annotations."""\n'])
def test_a_module_with_future_annotations_compiles_its_methods_and_classes_as_its_import_does(
        client, image, docstring):
    # Compiled alone, a method or class took none of its module's __future__ imports: a
    # forward reference in an annotation, fine at import, raised NameError live.
    client.view.add_module("zoo.later", docstring + "from __future__ import annotations\n\n\n"
                           "class Node:\n    def child(self) -> Node:\n        return self\n")
    node = client.view.module("zoo.later").Node()
    client.ok("compile_method", className="zoo.later.Node",
              source="def parent(self) -> Later | None:\n    return None\n")
    assert node.parent() is None and node.parent.__annotations__ == {"return": "Later | None"}
    client.ok("compile_class_definition", dictionaryName="zoo.later",
              source="class Node:\n    weight: Later = 0\n")
    assert client.view.module("zoo.later").Node.__annotations__ == {"weight": "Later"}
    assert node.parent() is None                       # carried over, in place


def test_after_abort_the_workspaces_names_for_image_modules_and_classes_are_the_live_ones(client):
    # abort re-imports the modules as new objects: `animals.Dog` read through the
    # workspace's earlier import was still the patched class the abort had undone.
    client.ok("execute_code", code="import zoo.animals as animals\nfrom zoo.animals import Dog, make_dog\n"
                                   "import zoo\nkept = Dog('rex')\nanimals.Dog.noise = lambda self: 'patched'\n"
                                   "animals.ADDED = 1")
    client.ok("abort")
    shown = client.ok("execute_code", code="(animals.Dog('a').noise(), Dog('b').noise(), "
                                           "make_dog is animals.make_dog, hasattr(animals, 'ADDED'), "
                                           "zoo.animals is animals, kept.noise())")
    # an object the workspace holds keeps the class it was made from
    assert text(shown) == "('woof', 'woof', True, False, True, 'patched')"


def test_source_nested_too_deeply_to_compile_is_a_compile_error(client, image):
    message = client.error("compile_method", "compileError", className="Dog",
                           source="def f(self):\n    return " + "-" * 100000 + "1\n")
    assert message.startswith("code is nested too deeply to compile (")
    assert "def f" not in disk(image)


def test_a_class_and_a_method_nested_as_deeply_as_python_compiles_text_are_compiled(client, image):
    # Compiled from their AST, both met the recursion limit at about 1000 levels: "evaluating
    # the definition raised RecursionError", where Python's compile of the module manages it.
    deep = "-" * 2000 + "1"
    client.ok("compile_class_definition", source=f"class Nested:\n    depth = {deep}\n",
              dictionaryName="zoo.animals")
    client.ok("compile_method", className="Nested", source=f"def depth_of(self):\n    return {deep}\n")
    client.ok("compile_class_definition", source=f"class Nested:\n    depth = -{deep}\n")
    shown = client.ok("execute_code", code="from zoo.animals import Nested\n(Nested.depth, Nested().depth_of())")
    assert text(shown) == "(-1, 1)"
    assert f"    def depth_of(self):\n        return {deep}\n" in disk(image)
    # Written in a module-level block, the class is compiled indented as it stands.
    client.view.add_module("zoo.blocked", "import sys\n\nif sys:\n    class Guarded:\n        depth = 0\n")
    client.ok("compile_class_definition", source=f"class Guarded:\n    depth = {deep}\n")
    assert text(client.ok("execute_code", code="from zoo.blocked import Guarded\nGuarded.depth")) == "1"


def test_a_module_whose_whole_text_does_not_parse_is_named_without_a_line(client, image):
    (image / "zoo/nul.py").write_text("x = 1\n\x00\n")
    client.ok("refresh")
    assert client.ok("list_all_classes")["structuredContent"]["notListed"] == [
        "image module zoo.nul does not compile: source code string cannot contain null bytes"]


def test_an_image_module_code_imported_around_the_view_is_refused_as_such_not_as_a_kernel_module(client, image):
    import importlib.util
    import sys
    spec = importlib.util.spec_from_file_location("zoo.keeper", image / "zoo/keeper.py")
    around = importlib.util.module_from_spec(spec)
    sys.modules["zoo.keeper"] = around   # as execute_code could
    spec.loader.exec_module(around)
    try:
        said = "image module zoo.keeper was imported from its file by code run in this session"
        refusals = [
            client.error("compile_method", "refused", className="Keeper", source="def feed(self):\n    return []\n"),
            client.error("compile_class_definition", "refused", source="class Other:\n    pass\n",
                         dictionaryName="zoo.keeper"),
            client.error("remove_dictionary", "refused", dictionaryName="zoo.keeper"),
        ]
        for refusal in refusals:
            assert said in refusal and "abort imports it from the view again" in refusal, refusal
            assert "kernel" not in refusal, refusal
        client.ok("abort")
        client.ok("compile_method", className="Keeper", source="def feed(self):\n    return []\n")
        assert "return []" in disk(image, "zoo/keeper.py")
    finally:
        if sys.modules.get("zoo.keeper") is around:
            del sys.modules["zoo.keeper"]


def test_a_linked_image_module_code_imported_around_the_view_is_refused_as_such(client, image, tmp_path):
    # Its file is a link out of the image (as a linked directory's modules are): imported
    # through it, the module's origin resolves outside, and it was taken for a kernel module.
    import importlib.util
    import os
    import sys
    target = tmp_path / "elsewhere" / "keeper.py"
    target.parent.mkdir()
    target.write_text(disk(image, "zoo/keeper.py"))
    (image / "zoo/keeper.py").unlink()
    os.symlink(target, image / "zoo/keeper.py")
    client.ok("refresh")
    spec = importlib.util.spec_from_file_location("zoo.keeper", image / "zoo/keeper.py")
    around = importlib.util.module_from_spec(spec)
    sys.modules["zoo.keeper"] = around   # as execute_code could
    spec.loader.exec_module(around)
    try:
        refusal = client.error("compile_method", "refused", className="Keeper",
                               source="def feed(self):\n    return []\n")
        assert "image module zoo.keeper was imported from its file by code run in this session" in refusal
        assert "kernel" not in refusal
        client.ok("abort")
        assert client.view.owns_module("zoo.keeper")
    finally:
        if sys.modules.get("zoo.keeper") is around:
            del sys.modules["zoo.keeper"]


@pytest.mark.parametrize("tool", ["add_dictionary", "remove_dictionary"])
@pytest.mark.parametrize("name", ["zoo" * 100_000 + ".class", "zoo.__" + "x" * 100_000 + "__"])
def test_a_refused_dictionary_name_is_echoed_cut(client, tool, name):
    # A keyword or dunder part refused the name echoing it whole: 300,000 characters back.
    message = client.error(tool, "invalidParams", dictionaryName=name)
    assert len(message) < 1000 and f"({len(name)} characters)" in message


@pytest.mark.parametrize("name", ["__", "___", "_____", "pkg.___"])
def test_a_dictionary_name_of_underscores_alone_is_no_dunder_name(client, image, name):
    # `___` starts and ends with `__`: it was refused as "a dunder name", which it is not
    # (a dunder has a name between its underscores), and it imports as any module does.
    client.ok("add_dictionary", dictionaryName=name)
    assert client.ok("execute_code", code=f"import {name}\n{name}.__name__")["structuredContent"][
        "result"] == repr(name)
    client.ok("remove_dictionary", dictionaryName=name)


def test_a_dictionary_name_nested_deeper_than_import_manages_is_refused(client, image):
    # 300 parts made 300 packages and committed a module no import could load
    # (RecursionError); 1000 failed its commit with "RecursionError: maximum recursion
    # depth exceeded", kind other, and left the session 1000 uncommitted modules.
    for parts in (300, 1000):
        message = client.error("add_dictionary", "invalidParams", dictionaryName="deep." * (parts - 1) + "end")
        assert f"is nested {parts} deep: at most 100 parts" in message
    assert not client.view.has_changes and not (image / "deep").exists()
    name = "deep." * 99 + "end"
    client.ok("add_dictionary", dictionaryName=name)
    assert client.ok("execute_code", code=f"import {name}\n{name}.__name__")["structuredContent"][
        "result"] == repr(name)


def test_a_shadowed_module_is_refused_naming_the_kernel_module_that_holds_its_name(client):
    # An image module in a package whose name the kernel's holds (unittest.extra, the kernel
    # having loaded unittest) was refused as "an already-loaded kernel module" itself, which
    # it is not: the rename the answer must point at is the package's.
    import sys
    assert "unittest" in sys.modules and "unittest.extra" not in sys.modules
    client.view.add_module("unittest", "", package=True)
    client.view.add_module("unittest.extra", "class Extra:\n    def m(self):\n        return 1\n")
    why = ("image module unittest.extra is shadowed: its package's name unittest belongs to the already-"
           "loaded kernel module of that name, whose own modules are imported by that name; rename the "
           "image package unittest")
    assert client.error("compile_class_definition", "refused", source="class Extra:\n    pass\n",
                        dictionaryName="unittest.extra") == f"no class can be defined in unittest.extra: {why}"
    assert client.error("compile_method", "refused", className="unittest.extra.Extra",
                        source="def m(self):\n    return 2\n") == f"unittest.extra.Extra cannot be modified: {why}"
    assert client.error("remove_dictionary", "refused", dictionaryName="unittest.extra") == (
        f"unittest.extra cannot be removed in a session: {why}")
    # Its own name the kernel's: said so.
    assert client.error("remove_dictionary", "refused", dictionaryName="json") == (
        "json cannot be removed in a session: image module json is shadowed by the already-loaded kernel "
        "module of that name; rename the image module")


@pytest.mark.parametrize("source", [
    "import dataclasses\n\n\n@dataclasses.dataclass\nclass F:\n    x: int\n    y: int = 0\n",
    "from typing import NamedTuple\n\n\nclass F(NamedTuple):\n    x: int\n    y: int = 0\n",
])
def test_compile_method_refuses_a_new_def_named_like_an_annotated_field(tmp_path, views, source):
    # Added, the def was the field's default: x no longer required, and holding a function.
    image = write_image(tmp_path / "image", {"fields.py": source})
    client = Client(views(image))
    message = client.error("compile_method", "refused", className="F",
                           source="def x(self):\n    return 1\n")
    line = source.splitlines().index("    x: int") + 1
    assert message.startswith("fields.F.x is declared an attribute by the class body's annotation "
                              f"'x: int' (fields line {line}; a dataclass's or NamedTuple's field)")
    assert (image / "fields.py").read_text() == source
    assert "x" not in vars(client.view.module("fields").F) or not callable(client.view.module("fields").F.x)
    # A def already written beside the annotation is replaced as any other.
    (image / "fields.py").write_text(source + "\n    def x(self):\n        return 1\n")
    client.view.refresh()
    client.ok("compile_method", className="F", source="def x(self):\n    return 2\n")


@pytest.mark.parametrize("module, class_name, name, raised", [
    ("from typing import NamedTuple\n\n\nclass P(NamedTuple):\n    x: int\n", "P", "_asdict",
     "AttributeError: Cannot overwrite NamedTuple attribute _asdict"),
    ("from typing import NamedTuple\n\n\nclass P(NamedTuple):\n    x: int\n", "P", "__init__",
     "AttributeError: Cannot overwrite NamedTuple attribute __init__"),
    ("import enum\n\n\nclass P(enum.Enum):\n    RED = 1\n", "P", "_foo_",
     "ValueError: _sunder_ names, such as '_foo_', are reserved for future Enum use"),
])
def test_compile_method_refuses_a_name_the_class_statement_of_a_namedtuple_or_enum_refuses(
        tmp_path, views, module, class_name, name, raised):
    # Compiled live (its class statement not run), committed, then no new session could
    # import the module.
    image = write_image(tmp_path / "image", {"made.py": module})
    client = Client(views(image))
    before = vars(client.view.module("made").P).get(name)
    message = client.error("compile_method", "compileError", className=class_name,
                           source=f"def {name}(self, *args):\n    return 1\n")
    assert message == (f"made.{class_name}'s class statement, run with this def as an import of made "
                       f"runs it, raised {raised}; nothing was changed")
    assert (image / "made.py").read_text() == module
    assert vars(client.view.module("made").P).get(name) is before
    client.ok("compile_method", className=class_name, source="def norm(self):\n    return 1\n")


def test_a_subclass_of_a_namedtuple_is_a_plain_class_taking_any_name(tmp_path, views):
    image = write_image(tmp_path / "image", {"tup.py": "from typing import NamedTuple\n\n\n"
                                             "class P(NamedTuple):\n    x: int\n\n\nclass Q(P):\n    pass\n"})
    Client(views(image)).ok("compile_method", className="Q", source="def _asdict(self):\n    return {}\n")


IMPLICIT = ("class Meta(type):\n    def __new__(mcls, name, bases, ns):\n        ns['tag'] = 1\n"
            "        return super().__new__(mcls, name, bases, ns)\n\n\n"
            "class Base:\n    def __init_subclass__(cls, **kw):\n        cls.sub = 1\n\n\n"
            "class K(Base, metaclass=Meta):\n    pass\n")


def test_meta_keeps_a_def_python_makes_class_side_as_written(tmp_path, views):
    # list_methods shows __new__ static and __init_subclass__ class-side; sent back with
    # meta true, each was wrapped in @classmethod: the metaclass then failed on every
    # class it made, and the module imported nowhere.
    image = write_image(tmp_path / "image", {"imp.py": IMPLICIT})
    client = Client(views(image))
    client.ok("compile_method", className="Meta", meta=True,
              source="def __new__(mcls, name, bases, ns):\n    ns['tag'] = 2\n"
                     "    return super().__new__(mcls, name, bases, ns)\n")
    client.ok("compile_method", className="Base", meta=True,
              source="def __init_subclass__(cls, **kw):\n    cls.sub = 2\n")
    assert "classmethod" not in (image / "imp.py").read_text()
    assert client.ok("execute_code", code="import imp\nclass L(imp.Base, metaclass=imp.Meta):\n"
                                          "    pass\nL.tag, L.sub")["structuredContent"]["result"] == "(2, 2)"


HOOKED = '''\
registry = []


def _upper(f):
    return lambda self: f(self).upper()


def shout(cls):
    cls.say = _upper(cls.say)
    return cls


class Meta(type):
    def __new__(mcls, name, bases, ns):
        ns["say"] = _upper(ns["say"])
        return super().__new__(mcls, name, bases, ns)


class Base:
    def __init_subclass__(cls):
        registry.append(cls.__name__)
        cls.say = _upper(cls.say)


@shout
class ByDecorator:
    def say(self):
        return "hello"

    def plain(self):
        return "plain"


class ByMetaclass(metaclass=Meta):
    def say(self):
        return "hello"


class ByHook(Base):
    def say(self):
        return "hello"
'''


@pytest.mark.parametrize("class_name, hook", [
    ("ByDecorator", "class decorator @shout"), ("ByMetaclass", "metaclass hooked.Meta"),
    ("ByHook", "hooked.Base.__init_subclass__")])
def test_compile_method_says_what_wrapped_the_method_it_does_not_run_again(tmp_path, views,
                                                                            class_name, hook):
    # The session kept the def as written ('hello'), a new session's import had it wrapped
    # ('HELLO'), and nothing said so.
    image = write_image(tmp_path / "image", {"hooked.py": HOOKED})
    client = Client(views(image))
    hooked = client.view.module("hooked")
    result = client.ok("compile_method", className=class_name, source="def say(self):\n    return 'hi'\n")
    assert result["structuredContent"]["notRerun"] == [hook]
    # One hook: "which is", "it" (the note said "which are", "they" for one too).
    assert (f"note: hooked.{class_name} was made by its {hook}, which is not run again for one "
            "compiled method (that would repeat what else it does, such as a registry entry); it "
            "made the old say other than its def (wrapped it), so this session has say as its def "
            "makes it while a new session's import has what it makes of it: "
            "compile_class_definition with the class's definition as it stands runs it "
            "again here") in text(result)
    assert getattr(hooked, class_name)().say() == "hi" and hooked.registry == ["ByHook"]
    namespace = {}
    exec(disk(image, "hooked.py"), namespace)     # as a new session's import runs it
    assert namespace[class_name]().say() == "HI"
    # A new method: they may; a method they left as its def made it: nothing to say.
    added = client.ok("compile_method", className=class_name, source="def other(self):\n    return 1\n")
    assert "if it wraps or changes methods, this session has other" in text(added)
    replaced = client.ok("compile_method", className=class_name, source="def other(self):\n    return 2\n")
    assert "note" not in text(replaced) and "notRerun" not in replaced["structuredContent"]


def test_compile_method_s_note_on_several_hooks_speaks_of_them_in_the_plural(tmp_path, views):
    image = write_image(tmp_path / "image", {"hooked.py": HOOKED + "\n\n@shout\nclass ByBoth(Base):\n"
                                             "    def say(self):\n        return 'hello'\n"})
    client = Client(views(image))
    result = client.ok("compile_method", className="ByBoth", source="def say(self):\n    return 'hi'\n")
    assert result["structuredContent"]["notRerun"] == ["class decorator @shout", "hooked.Base.__init_subclass__"]
    assert ("which are not run again for one compiled method (that would repeat what else they do, "
            "such as a registry entry); they made the old say other than its def (wrapped it), so "
            "this session has say as its def makes it while a new session's import has what they "
            "make of it: compile_class_definition with the class's definition as it stands runs "
            "them again here") in text(result)


def test_a_method_s_own_decorator_is_not_run_again_to_tell_what_hooks_did(tmp_path, views):
    image = write_image(tmp_path / "image", {"hooked.py": HOOKED.replace(
        "registry = []\n", "registry = []\n\n\ndef noted(f):\n    registry.append(f.__name__)\n    return f\n")
        .replace("class ByDecorator:\n", "class ByDecorator:\n    @noted\n    def tag(self):\n        return 1\n\n")})
    client = Client(views(image))
    hooked = client.view.module("hooked")
    result = client.ok("compile_method", className="ByDecorator",
                       source="@noted\ndef tag(self):\n    return 2\n")
    assert "if it wraps or changes methods, this session has tag" in text(result)
    assert hooked.registry == ["tag", "ByHook", "tag"]     # the import's, the new def's: no third


def test_compile_method_on_a_class_no_hook_made_has_no_such_note(client):
    assert "notRerun" not in client.ok("compile_method", className="Dog",
                                       source="def fetch(self):\n    return 1\n")["structuredContent"]


METACLASS = """\
class Meta(type):
    def meta_method(cls):
        return "meta " + cls.__name__

    def __call__(cls, *args):
        return super().__call__(*args)

    def __private(cls):
        return "private"

    @property
    def label(cls):
        return "meta label"


class WithMeta(metaclass=Meta):
    pass
"""


def test_a_def_named_like_a_metaclass_method_the_class_reaches_is_refused_unless_its_kind_is_written(
        tmp_path, views):
    # A plain def meta_method on WithMeta was added: it hid Meta's, the class side
    # browsing shows, and WithMeta.meta_method() broke.
    image = write_image(tmp_path / "image", {"metas.py": METACLASS})
    client = Client(views(image))
    before = disk(image, "metas.py")
    refused = client.error("compile_method", "refused", className="WithMeta",
                           source="def meta_method(self):\n    return 'own'\n")
    assert refused == (
        "metas.WithMeta defines no method meta_method: meta_method is metas.Meta's method, reached "
        "as metas.WithMeta's class side (metas.Meta is its metaclass); compile_method or "
        "delete_method on metas.Meta changes it, for every class metas.Meta makes. This def "
        "(without meta, an instance method) would hide it, metas.WithMeta.meta_method() no longer "
        "calling it; to shadow it deliberately, write @classmethod (or @staticmethod) over the "
        "def; else name the method otherwise.")
    # get_method_source's text sent back with meta true was Meta's to change, not a new classmethod.
    assert "would shadow it for metas.WithMeta alone, metas.Meta's left as it is" in client.error(
        "compile_method", "refused", className="WithMeta", meta=True,
        source="def meta_method(cls):\n    return 'new'\n")
    assert disk(image, "metas.py") == before
    assert client.view.module("metas").WithMeta.meta_method() == "meta WithMeta"
    # Written kind: meant. A special method is looked up on the type, a private one mangled
    # per class (_WithMeta__private), and the metaclass's property wins: none hides anything.
    for name in ("__call__", "__private", "label"):
        client.ok("compile_method", className="WithMeta", source=f"def {name}(self):\n    return 1\n")
    assert client.view.module("metas").WithMeta.label == "meta label"
    client.ok("compile_method", className="WithMeta",
              source="@classmethod\ndef meta_method(cls):\n    return 'own'\n")
    assert client.view.module("metas").WithMeta.meta_method() == "own"
    client.ok("compile_method", className="Meta", source="def meta_method(cls):\n    return 'changed'\n")


def test_delete_method_of_a_metaclass_method_on_its_class_points_to_the_metaclass(tmp_path, views):
    # It answered only "metas.WithMeta defines no method meta_method".
    image = write_image(tmp_path / "image", {"metas.py": METACLASS})
    client = Client(views(image))
    for meta in (None, True, False):
        assert client.error("delete_method", "notFound", className="WithMeta", selector="meta_method",
                            **({} if meta is None else {"meta": meta})) == (
            "metas.WithMeta defines no method meta_method: meta_method is metas.Meta's method, reached "
            "as metas.WithMeta's class side (metas.Meta is its metaclass); compile_method or "
            "delete_method on metas.Meta changes it, for every class metas.Meta makes")
    client.ok("delete_method", className="Meta", selector="meta_method")
    assert "meta_method" not in disk(image, "metas.py")


# A client-given name of 100,000 characters (a valid identifier) was repeated whole in the
# success message of each mutation tool: a 100 KB answer line. Cut there, kept whole in
# structuredContent, which must carry the real name.
HUGE = "m" * 100_000
CUT = "m" * 200 + "... (100000 characters)"


def short_text_naming(result, *heads):
    message = text(result)
    assert len(message) < 2000, message[:300]
    for head in heads:
        assert head in message, message[:500]
    return result["structuredContent"]


def test_a_huge_method_name_is_cut_in_the_answers_of_compile_and_delete(client):
    added = client.ok("compile_method", className="zoo.animals.Dog", source=f"def {HUGE}(self):\n    return 1\n")
    assert short_text_naming(added, f"added zoo.animals.Dog.{CUT}")["selector"] == HUGE
    deleted = client.ok("delete_method", className="zoo.animals.Dog", selector=HUGE)
    assert short_text_naming(deleted, f"deleted zoo.animals.Dog.{CUT}")["selector"] == HUGE


def test_a_huge_function_name_is_cut_in_the_answers_of_compile_and_delete(client):
    source = f"def {HUGE}():\n    return 1\n"
    added = client.ok("compile_method", className="zoo.animals", source=source)
    assert short_text_naming(added, f"added function zoo.animals.{CUT}")["selector"] == HUGE
    replaced = client.ok("compile_method", className="zoo.animals", source=source.replace("1", "2"))
    assert short_text_naming(replaced, f"replaced function zoo.animals.{CUT}")["selector"] == HUGE
    deleted = client.ok("delete_method", className="zoo.animals", selector=HUGE)
    assert short_text_naming(deleted, f"deleted function zoo.animals.{CUT}")["selector"] == HUGE


def test_a_huge_class_name_is_cut_in_the_answers_of_define_comment_and_delete(client):
    name = "C" + HUGE[1:]
    cut = "C" + CUT[1:]
    defined = client.ok("compile_class_definition", dictionaryName="zoo.animals", source=f"class {name}:\n    pass\n")
    assert short_text_naming(defined, f"defined zoo.animals.{cut}")["class"] == f"zoo.animals.{name}"
    redefined = client.ok("compile_class_definition", dictionaryName="zoo.animals",
                          source=f"class {name}:\n    x = 1\n")
    assert short_text_naming(redefined, f"redefined zoo.animals.{cut}")["class"] == f"zoo.animals.{name}"
    commented = client.ok("set_class_comment", className=f"zoo.animals.{name}", comment="big")
    assert short_text_naming(commented, f"set the comment of zoo.animals.{cut}")["class"] == f"zoo.animals.{name}"
    deleted = client.ok("delete_class", className=f"zoo.animals.{name}")
    assert short_text_naming(deleted, f"deleted class zoo.animals.{cut}")["class"] == f"zoo.animals.{name}"


def test_a_long_dictionary_name_is_cut_in_the_answers_of_add_and_remove(client):
    parts = [f"p{i}" + "d" * 200 for i in range(5)]   # 1,014 characters, a file name each part
    name = ".".join(parts)
    added = client.ok("add_dictionary", dictionaryName=name)
    assert short_text_naming(added, f"added dictionary {name[:200]}... ({len(name)} characters)")[
        "dictionary"] == name
    removed = client.ok("remove_dictionary", dictionaryName=parts[0])
    assert name in short_text_naming(removed, "removed dictionary p0ddd")["removed"]


def test_a_huge_method_name_on_the_other_side_is_cut_in_the_not_found(client):
    client.ok("compile_method", className="zoo.animals.Dog", source=f"def {HUGE}(self):\n    return 1\n")
    message = client.error("get_method_source", "notFound", className="zoo.animals.Dog", selector=HUGE, meta=True)
    assert f"zoo.animals.Dog.{CUT} is an instance-side method" in message and len(message) < 1000, message[:300]


# The notes and refusals beyond the first line repeated such a name whole: the hooks note
# twice, the carried-over list, the note on a class body's read of the method, on __all__
# still naming a function, on a read as the module runs, and refusals of a function name
# the module binds otherwise.
def test_a_huge_method_name_is_cut_in_the_hooks_note(client, image):
    (image / "zoo" / "hooked.py").write_text("def tag(cls):\n    return cls\n\n\n@tag\nclass Hooked:\n    pass\n")
    client.ok("refresh")
    added = client.ok("compile_method", className="zoo.hooked.Hooked", source=f"def {HUGE}(self):\n    return 1\n")
    assert short_text_naming(added, f"this session has {CUT} as its def makes it")["notRerun"]


def test_a_huge_method_name_is_cut_in_the_carried_over_list(client):
    client.ok("compile_method", className="zoo.animals.Dog", source=f"def {HUGE}(self):\n    return 1\n")
    redefined = client.ok("compile_class_definition", source="class Dog(Animal):\n    pass\n")
    assert HUGE in short_text_naming(redefined, f"carried over noise, {CUT}")["carried"]


def test_a_huge_method_name_is_cut_in_the_note_on_the_class_body_reading_it(client, image):
    (image / "zoo" / "captured.py").write_text(
        f"class Captured:\n    def {HUGE}(self):\n        return 1\n\n    alias = {HUGE}\n")
    client.ok("refresh")
    message = text(client.ok("compile_method", className="zoo.captured.Captured",
                             source=f"def {HUGE}(self):\n    return 2\n"))
    assert f"; note: the class body read {CUT} as the class was made (" in message
    assert f"alias still hold the old {CUT} in this session" in message


def test_a_huge_function_name_is_cut_in_the_note_on_all_still_naming_it(client, image):
    (image / "zoo" / "listed.py").write_text(f"__all__ = ['{HUGE}']\n\n\ndef {HUGE}():\n    return 1\n")
    client.ok("refresh")
    message = text(client.ok("delete_method", className="zoo.listed", selector=HUGE))
    assert f"zoo.listed's __all__ still names {CUT} (" in message
    assert f"take {CUT} out of it in the module's file" in message


def test_a_huge_method_name_is_cut_where_the_module_reads_it_as_it_runs(client, image):
    read = f"class Reads:\n    def {HUGE}(self):\n        return 1\n\n\nh = Reads.{HUGE}\n"
    (image / "zoo" / "reads.py").write_text(read)
    (image / "zoo" / "guarded.py").write_text(read.replace("\nh = ", "\ntry:\n    h = ").replace(
        "Reads", "Guarded") + "except AttributeError:\n    h = None\n")
    client.ok("refresh")
    refused = client.error("delete_method", "refused", className="zoo.reads.Reads", selector=HUGE)
    assert f"as it runs: zoo.reads.Reads.{CUT} on line 6 (" in refused
    noted = text(client.ok("delete_method", className="zoo.guarded.Guarded", selector=HUGE))
    assert f"; note: zoo.guarded reads Guarded.{CUT} as it runs (" in noted


def test_a_huge_function_name_the_module_binds_otherwise_is_cut_in_the_refusals(client, image):
    (image / "zoo" / "classy.py").write_text(f"class {HUGE}:\n    pass\n")
    client.ok("refresh")
    for tool, arguments in (("compile_method", {"source": f"def {HUGE}():\n    return 1\n"}),
                            ("delete_method", {"selector": HUGE})):
        refused = client.error(tool, "refused", className="zoo.classy", **arguments)
        assert refused == (f"zoo.classy.{CUT} is a class, not a function: compile_class_definition "
                           "and delete_class change it")


def test_a_huge_method_name_is_cut_in_the_note_on_a_field_order_it_breaks(client, image):
    (image / "zoo" / "dbase.py").write_text("class Base:\n    pass\n")
    (image / "zoo" / "dsub.py").write_text(f"import dataclasses\n\nfrom zoo.dbase import Base\n\n\n"
                                           f"@dataclasses.dataclass\nclass Sub(Base):\n    {HUGE}: int\n    y: int\n")
    client.ok("refresh")
    client.view.module("zoo.dsub")
    message = text(client.ok("compile_method", className="zoo.dbase.Base", source=f"def {HUGE}(self):\n    return 1\n"))
    assert (f"its field y, without a default, would follow the field {CUT} of zoo.dsub.Sub, which has one "
            f"(declared without a value, it takes what zoo.dbase.Base binds to {CUT} as its default)") in message


def test_delete_method_refuses_a_method_the_module_deletes_though_a_base_has_it(client, image):
    # `del Job.run` takes from Job's own namespace: a base's run did not count as the
    # module still having it, so run was deleted and every new session's import failed.
    source = ("class Base:\n    def run(self):\n        return 0\n\n\nclass Job(Base):\n    def run(self):\n"
              "        return 1\n\n\ndel Job.run\n")
    (image / "zoo" / "deleting.py").write_text(source)
    client.ok("refresh")
    result = client.call("delete_method", className="zoo.deleting.Job", selector="run")
    assert result["structuredContent"]["error"]["usedBy"] == [
        {"attribute": "run", "statement": "del Job.run", "line": 11}]
    assert disk(image, "zoo/deleting.py") == source


def test_delete_method_refuses_a_method_the_module_deletes_by_delattr(client, image):
    # delattr(Job, "stop") and delattr(Job, "run") (a base has run) failed every new
    # session's import once the defs were gone; neither was taken for a sure read.
    source = ("class Base:\n    def run(self):\n        return 0\n\n\nclass Job(Base):\n    def run(self):\n"
              "        return 1\n\n    def stop(self):\n        return 2\n\n\n"
              "delattr(Job, 'stop')\ndelattr(Job, 'run')\n")
    (image / "zoo" / "delattrs.py").write_text(source)
    client.ok("refresh")
    for selector, line in (("stop", 14), ("run", 15)):
        result = client.call("delete_method", className="zoo.delattrs.Job", selector=selector)
        assert result["structuredContent"]["error"]["usedBy"] == [
            {"attribute": selector, "statement": f"delattr(Job, {selector!r})", "line": line}]
    assert disk(image, "zoo/delattrs.py") == source


def test_a_mutation_that_undoes_the_sessions_uncommitted_change_says_it_committed_nothing(image, views):
    # a's new method conflicts with b's commit and stays uncommitted; deleting it leaves a's
    # module as a read it, so nothing is committed, and b's version (which has a growl of
    # its own) is brought in: the answer must not say the deletion was committed.
    a, b = Client(views(image, "a")), views(image, "b", install=False)
    b.set_source("zoo.animals", b.source("zoo.animals").replace(
        "class Dog(Animal):\n", "class Dog(Animal):\n    def growl(self):\n        return 'b'\n\n"), live=False)
    b.commit()
    a.error("compile_method", "conflict", className="Dog", source="def growl(self):\n    return 'a'\n")
    done = a.ok("delete_method", className="Dog", selector="growl")
    assert done["structuredContent"]["committed"] == [] and "alreadyCommitted" not in done["structuredContent"]
    assert done["structuredContent"]["broughtIn"] == ["zoo.animals"]
    assert text(done).startswith(
        "deleted zoo.animals.Dog.growl; nothing to commit, the change leaving this session's modules "
        "as it had read them (now view version 1)\nbrought in others' commits to zoo.animals")
    assert "return 'b'" in disk(image) and not a.view.has_changes


# The source statements those notes and refusals quote were repeated whole, each holding the
# name: a 100 KB quote, several times in one answer. Cut as the name is; the structured
# fields keep each statement whole.
def short_quoting(message: str, *quotes: str) -> None:
    assert len(message) < 3000, message[:300]
    for quote in quotes:
        assert repr(f"{quote[:200]}... ({len(quote)} characters)") in message, message[:800]


def test_a_statement_quoted_in_a_refusal_of_a_function_read_as_the_module_runs_is_cut(client, image):
    (image / "zoo" / "runs.py").write_text(f"def {HUGE}():\n    return 1\n\n\nCONFIG = {HUGE}()\n")
    client.ok("refresh")
    result = client.call("delete_method", className="zoo.runs", selector=HUGE)
    short_quoting(text(result), f"CONFIG = {HUGE}()")
    assert result["structuredContent"]["error"]["usedBy"] == [{"line": 5, "statement": f"CONFIG = {HUGE}()"}]


def test_a_statement_quoted_in_the_refusal_and_note_on_a_method_read_as_the_module_runs_is_cut(client, image):
    read = f"class Reads:\n    def {HUGE}(self):\n        return 1\n\n\nh = Reads.{HUGE}\n"
    (image / "zoo" / "reads.py").write_text(read)
    (image / "zoo" / "guarded.py").write_text(read.replace("\nh = ", "\ntry:\n    h = ").replace(
        "Reads", "Guarded") + "except AttributeError:\n    h = None\n")
    client.ok("refresh")
    refused = client.call("delete_method", className="zoo.reads.Reads", selector=HUGE)
    short_quoting(text(refused), f"h = Reads.{HUGE}")
    assert refused["structuredContent"]["error"]["usedBy"][0]["statement"] == f"h = Reads.{HUGE}"
    noted = client.ok("delete_method", className="zoo.guarded.Guarded", selector=HUGE)
    short_quoting(text(noted), f"h = Guarded.{HUGE}")
    assert noted["structuredContent"]["readAsItRuns"] == f"h = Guarded.{HUGE}"


def test_the_all_statement_quoted_in_the_note_is_cut(client, image):
    (image / "zoo" / "listed.py").write_text(f"__all__ = ['{HUGE}']\n\n\ndef {HUGE}():\n    return 1\n")
    client.ok("refresh")
    result = client.ok("delete_method", className="zoo.listed", selector=HUGE)
    short_quoting(text(result), f"__all__ = ['{HUGE}']")
    assert result["structuredContent"]["stillInAll"] == {"line": 1, "statement": f"__all__ = ['{HUGE}']"}


def test_the_class_body_statement_quoted_in_the_captured_note_is_cut(client, image):
    (image / "zoo" / "captured.py").write_text(
        f"class Captured:\n    def {HUGE}(self):\n        return 1\n\n    alias = {HUGE}\n")
    client.ok("refresh")
    short_quoting(text(client.ok("compile_method", className="zoo.captured.Captured",
                                 source=f"def {HUGE}(self):\n    return 2\n")), f"alias = {HUGE}")


def test_the_statements_quoted_in_refusals_of_a_def_are_cut(client, image):
    (image / "zoo" / "bound.py").write_text(f"def {HUGE}():\n    return 1\n\n\n{HUGE} = staticmethod({HUGE})\n")
    (image / "zoo" / "noted.py").write_text(f"class Noted:\n    {HUGE}: int\n")
    client.ok("refresh")
    short_quoting(client.error("compile_method", "refused", className="zoo.bound",
                               source=f"def {HUGE}():\n    return 2\n"), f"{HUGE} = staticmethod({HUGE})")
    short_quoting(client.error("compile_method", "refused", className="zoo.noted.Noted",
                               source=f"def {HUGE}(self):\n    return 2\n"), f"{HUGE}: int")
    short_quoting(client.error("compile_method", "refused", className="zoo.animals",
                               source=f"def early(limit={HUGE}):\n    return limit\n\n\n"),
                  f"def early(limit={HUGE}):")


def test_a_huge_class_name_read_as_its_module_runs_is_cut_in_the_refusals(client, image):
    name, cut = "C" + HUGE[1:], "C" + CUT[1:]
    (image / "zoo" / "used.py").write_text(f"class {name}:\n    def run(self):\n        return 1\n\n\n"
                                           f"ALIAS = {name}\nh = {name}.run\n")
    client.ok("refresh")
    refused = client.error("delete_class", "refused", className=f"zoo.used.{name}")
    assert refused.startswith(f"zoo.used.{cut} is used by zoo.used's own top-level code")
    short_quoting(refused, f"ALIAS = {name}")
    refused = client.error("delete_method", "refused", className=f"zoo.used.{name}", selector="run")
    assert f"zoo.used.{cut}.run on line 7 (" in refused
    short_quoting(refused, f"h = {name}.run")


def test_a_method_compiled_in_a_subclass_of_a_class_nested_in_a_stand_in_module(client, image):
    # stand_in put in its place in sys.modules an object with no dict (__slots__): reading
    # it for the class nesting Inner raised TypeError at every compile_method in Mine.
    (image / "stand_in.py").write_text(
        "import sys\n\n\nclass Outer:\n    class Inner:\n        pass\n\n\n"
        "class StandIn:\n    __slots__ = ()\n    __spec__ = __spec__\n    Outer = Outer\n\n\n"
        "sys.modules[__name__] = StandIn()\n")
    (image / "user.py").write_text("from stand_in import Outer\n\n\nclass Mine(Outer.Inner):\n"
                                   "    def f(self):\n        return 1\n")
    client.ok("refresh")
    client.ok("compile_method", className="user.Mine", source="def f(self):\n    return 2\n")
    assert client.view.module("user").Mine().f() == 2
