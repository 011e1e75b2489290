"""compile_method and the browsing tools on a class's two sides, end to end through the
real daemon: a def of the other side than the method it would replace is refused (a
Python class has one namespace for both); a metaclass's methods are its classes' class side,
edited on the metaclass (a def on the class that would hide one is refused);
what wrapped a method as its class was made, not run again for a compiled def, is said, and
what a dataclass's class statement, run again, ran again with it; a
def written only inside a class-level if/try is refused, as delete_method refuses it.

One daemon per module on a throwaway image; each test works on classes of its own.
"""

import pytest

from helpers import open_session, tool_text

from test_e2e_image_tools import daemon, run  # noqa: F401  (the daemon fixture: on this module's image)
from test_e2e_tools import error, ok, structured
from test_tools_support import write_image

FILES = {
    "sides.py": "class Maker:\n    @classmethod\n    def make(cls):\n        return 'class side'\n\n"
                "    @property\n    def size(self):\n        return 1\n\n"
                "    def use(self):\n        return 'instance side'\n",
    "metas.py": "class Meta(type):\n    def meta_method(cls):\n        return 'meta ' + cls.__name__\n\n\n"
                "class WithMeta(metaclass=Meta):\n    pass\n",
    "metaprops.py": "class Sized(type):\n    def make(cls):\n        return cls()\n\n    build = make\n\n"
                    "    @property\n    def label(cls):\n        return cls.__name__.lower()\n\n\n"
                    "class Box(metaclass=Sized):\n    pass\n",
    "hooked.py": "def shout(cls):\n    say = cls.say\n    cls.say = lambda self: say(self).upper()\n"
                 "    return cls\n\n\n@shout\nclass Loud:\n    def say(self):\n        return 'hello'\n",
    "registered.py": "import dataclasses\n\nregistry = []\n\n\nclass Registered:\n"
                     "    def __init_subclass__(cls, **kwargs):\n"
                     "        super().__init_subclass__(**kwargs)\n"
                     "        registry.append(cls.__name__)\n\n\n@dataclasses.dataclass\n"
                     "class Point(Registered):\n    x: int = 0\n\n    def norm(self):\n"
                     "        return abs(self.x)\n",
    "tally.py": "class Tally:\n    count = 0\n\n    def add(self, n):\n        self.count += n\n        return self\n",
    "spots.py": "import dataclasses\n\n\n@dataclasses.dataclass\nclass Spot:\n    x: int\n",
    "paired.py": "import sys\n\n\nclass Pair:\n    if sys.platform == 'nowhere':\n        def go(self):\n"
                 "            return 1\n    else:\n        def go(self):\n            return 2\n",
}


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    return write_image(tmp_path_factory.mktemp("sides") / "image", FILES)


def test_a_def_of_the_other_side_is_refused_and_the_method_kept(c, image):
    before = (image / "sides.py").read_text()
    assert "sides.Maker.make is a classmethod; this def (without meta, an instance method) would " \
           "replace it" in error(c, "compile_method", "refused", className="Maker",
                                 source="def make(cls):\n    return 'lost'\n")
    assert "sides.Maker.size is a property" in error(c, "compile_method", "refused", className="Maker",
                                                     source="def size(self):\n    return 2\n")
    assert "sides.Maker.use is an instance method; this def (with meta true, a classmethod)" in error(
        c, "compile_method", "refused", className="Maker", meta=True, source="def use(cls):\n    return 3\n")
    assert (image / "sides.py").read_text() == before
    assert run(c, "import sides\nsides.Maker.make(), sides.Maker().size, sides.Maker().use()") == repr(
        ("class side", 1, "instance side"))
    ok(c, "compile_method", className="Maker", meta=True, source="def make(cls):\n    return 'new'\n")
    assert run(c, "sides.Maker.make()") == repr("new")
    assert "    @classmethod\n    def make(cls):\n        return 'new'\n" in (image / "sides.py").read_text()


def test_a_metaclass_s_methods_are_shown_as_the_class_side(c):
    assert structured(c, "describe_class", className="WithMeta")["metaclass"] == "metas.Meta"
    assert {"name": "meta_method", "definedIn": "metas.Meta", "metaclass": True} in structured(
        c, "list_methods", className="WithMeta")["methods"]["class"]
    found = structured(c, "get_method_source", className="WithMeta", selector="meta_method", meta=True)
    assert found["source"] == "def meta_method(cls):\n    return 'meta ' + cls.__name__\n"
    assert found["definedIn"] == "metas.Meta" and "the metaclass of metas.WithMeta" in found["note"]
    assert run(c, "import metas\nmetas.WithMeta.meta_method()") == repr("meta WithMeta")


def test_a_metaclass_method_is_edited_on_the_metaclass_not_hidden_from_its_class(c):
    # get_method_source with meta false and delete_method said only "defines no method".
    where = ("meta_method is metas.Meta's method, reached as metas.WithMeta's class side (metas.Meta "
             "is its metaclass); compile_method or delete_method on metas.Meta changes it")
    refused = error(c, "compile_method", "refused", className="WithMeta",
                    source="def meta_method(self):\n    return 'own'\n")
    # A plain def was added, hiding Meta's: WithMeta.meta_method() broke.
    assert where in refused and "would hide it, metas.WithMeta.meta_method() no longer calling it" in refused
    assert "write @classmethod (or @staticmethod) over the def" in refused
    assert where in error(c, "get_method_source", "notFound", className="WithMeta",
                          selector="meta_method", meta=False)
    assert where in error(c, "delete_method", "notFound", className="WithMeta", selector="meta_method")
    assert run(c, "import metas\nmetas.WithMeta.meta_method()") == repr("meta WithMeta")


def test_a_metaclass_s_property_is_shown_as_one_and_its_assigned_method_pointed_to_its_statement(c):
    # The property was shown as a method "called with the class"; for `build = make` the
    # answer sent the client to compile_method or delete_method on Sized, which find no def.
    listed = structured(c, "list_methods", className="Box")["methods"]["class"]
    assert {"name": "label", "definedIn": "metaprops.Sized", "metaclass": True, "property": True} in listed
    found = structured(c, "get_method_source", className="Box", selector="label")
    assert found["kind"] == "property" and "read on the class (Box.label)" in found["note"]
    message = error(c, "get_method_source", "notFound", className="Box", selector="build")
    assert ("bound by metaprops.Sized's class-level statement 'build = make' at line 5 "
            "(get_class_definition on metaprops.Sized shows it); compile_class_definition on "
            "metaprops.Sized changes it") in message
    assert "build = make" in tool_text(ok(c, "get_class_definition", className="metaprops.Sized"))
    assert run(c, "import metaprops\nmetaprops.Box.label, type(metaprops.Box.build()).__name__") == repr(
        ("box", "Box"))


def test_compile_method_says_a_class_decorator_wrapped_the_method_it_replaces(daemon, c):
    # The session kept the def as written ('hi'), a new session had it wrapped ('HI').
    result = ok(c, "compile_method", className="Loud", source="def say(self):\n    return 'hi'\n")
    assert result["structuredContent"]["notRerun"] == ["class decorator @shout"]
    assert ("which is not run again for one compiled method (that would repeat what else it does, "
            "such as a registry entry); it made the old say other than its def (wrapped it), so this "
            "session has say as its def makes it while a new session's import has what it makes of "
            "it") in tool_text(result)
    assert run(c, "import hooked\nhooked.Loud().say()") == repr("hi")
    fresh = open_session(daemon)
    assert run(fresh, "import hooked\nhooked.Loud().say()") == repr("HI")
    fresh.close()


def test_a_dataclass_s_registry_hook_runs_again_only_when_it_must_and_the_answer_says_so(daemon, c):
    # Every compile_method on a dataclass ran its class statement again: the registry
    # gained a throwaway Point each time, and nothing said so.
    replaced = ok(c, "compile_method", className="Point", source="def norm(self):\n    return -self.x\n")
    assert "rerun" not in replaced["structuredContent"]
    assert run(c, "import registered\nregistered.registry, registered.Point(3).norm()") == repr(
        (["Point"], -3))
    # __post_init__ changes what the decorator generates: the class statement must run again.
    added = ok(c, "compile_method", className="Point",
               source="def __post_init__(self):\n    self.x = abs(self.x)\n")
    assert added["structuredContent"]["rerun"] == ["registered.Registered.__init_subclass__"]
    assert ("registered.Point's class statement ran again, on a throwaway class, and with it its "
            "registered.Registered.__init_subclass__: what else it does (a registry entry) was done "
            "again, for that throwaway class") in tool_text(added)
    assert run(c, "registered.registry, registered.Point(-3).x") == repr((["Point", "Point"], 3))
    fresh = open_session(daemon)
    assert run(fresh, "import registered\nregistered.registry, registered.Point(-3).x") == repr(
        (["Point"], 3))
    fresh.close()


def test_a_def_written_in_a_class_level_if_else_is_refused_not_appended(c, image):
    # get_method_source's text (both defs) sent back was appended after the if/else.
    before = (image / "paired.py").read_text()
    shown = structured(c, "get_method_source", className="Pair", selector="go")["source"]
    assert ("paired.Pair.go is written inside the class-level if statement at paired line 5, not as "
            "a method of the class body") in error(c, "compile_method", "refused", className="Pair",
                                                  source=shown)
    assert (image / "paired.py").read_text() == before
    assert run(c, "import paired\npaired.Pair().go()") == "2"


def test_meta_refuses_a_special_method_python_calls_on_instances_unless_written_class_side(c, image):
    # Taken as a classmethod: Tally's own __init__ was handed the class, so Tally(5) set
    # the class's count, shared by every tally, and Tally() failed (start missing).
    before = (image / "tally.py").read_text()
    refused = error(c, "compile_method", "refused", className="Tally", meta=True,
                    source="def __init__(self, start):\n    self.count = start\n")
    assert refused.startswith("meta makes __init__ a classmethod, but __init__ is a special method Python "
                              "calls on Tally's instances (type(x).__init__(x, ...) for an instance x)")
    assert "Send the def without meta for Tally's instances" in refused
    assert "__init__ belongs on its metaclass: compile_method it on a metaclass of the image" in refused
    assert "__eq__ is a special method" in error(c, "compile_method", "refused", className="Tally", meta=True,
                                                 source="def __eq__(self, other):\n    return True\n")
    assert (image / "tally.py").read_text() == before
    assert run(c, "import tally\ntally.Tally().add(2).count, tally.Tally.count, tally.Tally() == tally.Tally()") == (
        repr((2, 0, False)))
    ok(c, "compile_method", className="Tally", meta=True,   # written class-side: taken as meant
       source="@classmethod\ndef __repr__(cls):\n    return 'Tally'\n")
    assert run(c, "repr(tally.Tally())") == repr("Tally")


def test_meta_refuses_a_dataclass_s_post_init(daemon, c, image):
    # Taken as a classmethod, __post_init__ was handed the class by the __init__ the
    # dataclass decorator wrote (self.__post_init__()): Spot(1) raised AttributeError here
    # and in every new session.
    before = (image / "spots.py").read_text()
    refused = error(c, "compile_method", "refused", className="Spot", meta=True,
                    source="def __post_init__(self):\n    self.x += 1\n")
    assert refused.startswith("meta makes __post_init__ a classmethod, but __post_init__ is a special "
                              "method Python calls on Spot's instances")
    assert (image / "spots.py").read_text() == before
    ok(c, "compile_method", className="Spot", source="def __post_init__(self):\n    self.x += 1\n")
    other = open_session(daemon)
    assert run(other, "import spots\nspots.Spot(1)") == "Spot(x=2)"
    other.close()
