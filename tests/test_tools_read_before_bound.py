"""compile_method and compile_class_definition refuse a class statement that reads, as it
runs, a name its module binds only below the class (or only in the session's live
module): the session's live compile finds it, so the change was committed, and every new
session's import of the module was a NameError."""

import sys

import pytest

from gsmcpd.image import live
from test_tools_support import Client, views, write_image  # noqa: F401  (fixtures)

BELOW = '''\
class Early:
    def go(self):
        return 1


def later(f):
    return f


LIMIT = 3


class Base:
    pass
'''


@pytest.fixture
def below(tmp_path, views):
    image = write_image(tmp_path / "image", {"below.py": BELOW})
    return image, Client(views(image))


def test_a_base_bound_below_the_class_is_refused_changing_nothing(below):
    image, client = below
    message = client.error("compile_class_definition", "refused",
                           source="class Early(Base):\n    pass\n")
    assert message.startswith("below.Early would read Base as its class statement runs "
                              "(line 1: 'class Early(Base):')")
    assert "a new session's import of below would fail, NameError" in message
    # The way out it names says where a new class goes: last, above a closing main block.
    assert message.endswith("puts the new class last in its module, above an "
                            "`if __name__ == \"__main__\":` block ending it).")
    assert (image / "below.py").read_text() == BELOW
    assert client.view.store.journal() == []
    assert client.view.module("below").Early.__bases__ == (object,)


def test_a_decorator_or_default_bound_below_the_class_is_refused_changing_nothing(below):
    image, client = below
    message = client.error("compile_method", "refused", className="Early",
                           source="@later\ndef m(self, k=LIMIT):\n    return k\n")
    assert message.startswith("below.Early would read later, LIMIT as its class statement runs "
                              "(line 5: '@later')")
    assert (image / "below.py").read_text() == BELOW
    assert not hasattr(client.view.module("below").Early, "m")


def test_a_name_only_the_sessions_live_module_binds_is_refused(below):
    image, client = below
    client.ok("execute_code", code="import below\nbelow.EXTRA = 5")
    client.error("compile_method", "refused", className="Early",
                 source="def m(self, k=EXTRA):\n    return k\n")
    assert (image / "below.py").read_text() == BELOW


def test_a_name_bound_nowhere_is_still_the_live_compiles_error(below):
    client = below[1]
    assert "NameError" in client.error("compile_method", "compileError", className="Early",
                                       source="@nowhere\ndef m(self):\n    return 1\n")


def test_names_bound_by_then_are_accepted(below):
    image, client = below
    client.ok("compile_class_definition", dictionaryName="below",
              source="class Late(Base, metaclass=type):\n    squares = [i * i for i in range(LIMIT)]\n"
                     "    if squares:\n        first = 1\n    second = first\n\n"
                     "    @later\n    def m(self, k=LIMIT) -> Base:\n        return k if k else Undefined\n")
    assert client.ok("execute_code", code="import below\nbelow.Late().m(), below.Late.second")[
        "structuredContent"]["result"] == "(3, 1)"
    assert "class Late(Base, metaclass=type):" in (image / "below.py").read_text()


def test_a_class_naming_the_exception_its_body_handles_is_accepted(below):
    # Refused: "would read error as its class statement runs ... nothing above binds it".
    image, client = below
    client.ok("compile_class_definition", dictionaryName="below",
              source="class Loader:\n    try:\n        import no_such_module_here\n"
                     "    except ImportError as error:\n        why = type(error).__name__\n")
    assert client.ok("execute_code", code="import below\nbelow.Loader.why")[
        "structuredContent"]["result"] == "'ModuleNotFoundError'"


def test_a_read_the_class_already_made_before_its_binding_does_not_block_other_edits(below):
    # Not made worse by the edit: the module already read it so (found bound some other way).
    image, client = below
    source = BELOW.replace("class Early:", "class Early(Base):")
    assert [name for name, _ in live.read_before_bound(source, "Early")] == ["Base"]
    (image / "below.py").write_text(source)
    client.view.refresh()
    client.ok("compile_method", className="Early", source="def go(self):\n    return 2\n")


@pytest.mark.parametrize("source", [
    # an annotation is not evaluated under `from __future__ import annotations`
    "from __future__ import annotations\n\n\nclass A:\n    x: Later = 0\n\n"
    "    def m(self) -> Later:\n        pass\n\n\nclass Later:\n    pass\n",
    # a `*` import may bind it
    "from os.path import *\n\n\nclass A:\n    f = join\n",
    # the block the class is written in may bind it above the class
    "try:\n    from os.path import join as J\n\n    class A:\n        f = J\nexcept ImportError:\n    pass\n",
    # a name a class-level block binds above its read (ssl.SSLContext, subprocess.Popen)
    "import sys\n\n\nclass A:\n    if sys.platform:\n        @property\n        def p(self):\n"
    "            return 1\n\n        @p.setter\n        def p(self, v):\n            pass\n\n"
    "        q = p\n",
    # a module's own dunders, a lambda's and a walrus's names
    "class A:\n    m = __name__\n    f = lambda a, b=1: a + b + c\n    w = (q := 3) + q\n",
    # an exception's name, bound by its handler (it was refused: "would read error")
    "class A:\n    try:\n        import yaml\n    except ImportError as error:\n        why = str(error)\n",
    # a match statement's capture patterns
    "import sys\n\n\nclass A:\n    match sys.argv:\n        case [first, *rest]:\n"
    "            head, tail = first, rest\n        case {'k': 1, **others}:\n            o = others\n"
    "        case str() as whole:\n            w = whole\n",
])
def test_read_before_bound_finds_nothing_where_the_name_may_be_there(source):
    assert live.read_before_bound(source, "A") == []


def test_read_before_bound_finds_each_read_in_order():
    source = ("class A(B, metaclass=M):\n    @deco\n    def m(self, k=K):\n        return Body\n"
              "    class N(NB):\n        x = nested_body\n\n\nB = M = deco = K = NB = object\n")
    assert [(name, node.lineno) for name, node in live.read_before_bound(source, "A")] == \
        [("B", 1), ("M", 1), ("deco", 2), ("K", 3), ("NB", 5)]


@pytest.mark.skipif(sys.version_info < (3, 12), reason="type parameter syntax is Python 3.12's")
def test_read_before_bound_leaves_type_parameters_alone():
    source = "class A[T](list[T]):\n    def m[U](self, x: U) -> T:\n        return x\n"
    assert live.read_before_bound(source, "A") == []


SETUP = "def setup():\n    global LIMIT\n    LIMIT = 3\n\n\n"


@pytest.mark.parametrize("source", [
    SETUP + "setup()\n\n\nclass A:\n    x = LIMIT\n",
    # called as a value, and under a block; the def binding it under the function's own `if`
    "def setup(flag=True):\n    global LIMIT\n    if flag:\n        LIMIT = 3\n    return 1\n\n\n"
    "try:\n    ok = setup()\nexcept OSError:\n    pass\n\n\nclass A(dict if LIMIT else list):\n    pass\n",
    # a def the global statement names is bound by it too
    "def install():\n    global handler\n\n    def handler():\n        return 1\n\n\ninstall()\n\n\n"
    "class A:\n    h = staticmethod(handler)\n",
])
def test_read_before_bound_sees_a_global_a_function_called_above_the_class_binds(source):
    # Refused: "would read LIMIT as its class statement runs", though importing it binds it.
    assert live.read_before_bound(source, "A") == []


@pytest.mark.parametrize("source", [
    SETUP + "class A:\n    x = LIMIT\n\n\nsetup()\n",                       # called below the class
    SETUP + "def main():\n    setup()\n\n\nclass A:\n    x = LIMIT\n",      # called by no top-level statement
    SETUP + "f = lambda: setup()\n\n\nclass A:\n    x = LIMIT\n",      # a lambda's body is not run
    "def setup():\n    global LIMIT\n    return LIMIT\n\n\nsetup()\n\n\nclass A:\n    x = LIMIT\n",   # declared, never bound
    "def setup():\n    LIMIT = 3\n\n\nsetup()\n\n\nclass A:\n    x = LIMIT\n",   # a local, not the module's
    "def setup():\n    def inner():\n        global LIMIT\n        LIMIT = 3\n\n\nsetup()\n\n\n"
    "class A:\n    x = LIMIT\n",                                              # only a nested def's global
    "async def setup():\n    global LIMIT\n    LIMIT = 3\n\n\nsetup()\n\n\nclass A:\n    x = LIMIT\n",   # not run by the call
])
def test_read_before_bound_still_finds_a_global_no_call_above_the_class_binds(source):
    assert [name for name, _ in live.read_before_bound(source, "A")] == ["LIMIT"]


def test_a_class_reading_a_global_its_module_binds_by_calling_a_function_above_it_is_compiled(tmp_path, views):
    image = write_image(tmp_path / "image", {"configured.py": SETUP + "setup()\n"})
    client = Client(views(image))
    client.ok("compile_class_definition", dictionaryName="configured",
              source="class A:\n    x = LIMIT\n")
    assert (image / "configured.py").read_text().endswith("setup()\n\n\nclass A:\n    x = LIMIT\n")
    assert client.ok("execute_code", code="import configured\nconfigured.A.x")[
        "structuredContent"]["result"] == "3"
