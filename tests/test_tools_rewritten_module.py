"""Classes whose body rewrites `__module__` (`__module__ = "pkg"`, as pluggy and pytest write
so that reprs show the public package): browsed, listed and named under the module whose file
holds the class statement; changed by the mutation tools there, `__module__` kept as written."""

import ast
import subprocess
import sys

import pytest

from gsmcpd.image import splice
from gsmcpd.image import view as view_module
from gsmcpd.image.view import View
from test_tools_support import Client, text, views, write_image  # noqa: F401  (fixtures)

CORE = '''\
class Hook:
    __module__ = "pkg"

    def run(self):
        return 1


class Marker:
    __module__ = "pkg"


class Plain:
    def go(self):
        return 2
'''

FILES = {
    "pkg/__init__.py": "from pkg._core import Hook, Marker\n",
    "pkg/_core.py": CORE,
    "pkg/sub.py": ('from pkg._core import Hook\n\n\nclass Caller(Hook):\n    __module__ = "elsewhere"\n\n'
                   '    def more(self):\n        return self.run()\n'),
    "plugins.py": "from pkg import Hook\n\n\nclass Plugin(Hook):\n    pass\n",
    "pkg/_meta.py": 'class Meta(type):\n    __module__ = "pkg"\n\n    def hello(cls):\n        return "hi"\n',
    "widgets.py": "from pkg._meta import Meta\n\n\nclass Widget(metaclass=Meta):\n    pass\n",
    "shapes.py": "class Shape:\n    pass\n",
    "fancy.py": ('from shapes import Shape\n\n\nclass Fancy(Shape):\n    __module__ = "shapes"\n\n\n'
                 'class Holder:\n    __module__ = "elsewhere"\n\n    class Inner(Shape):\n        pass\n'),
}


@pytest.fixture
def client(tmp_path, views):
    return Client(views(write_image(tmp_path / "image", FILES)))


def test_browsing_names_such_a_class_and_its_kin_by_the_module_holding_its_class_statement(client):
    # Said `pkg.Hook` and `elsewhere.Caller` (their __module__), and left Caller out of
    # Hook's subclasses: the image's subclasses were judged by __module__ too.
    described = client.ok("describe_class", className="Caller")["structuredContent"]
    assert described["bases"] == ["pkg._core.Hook"]
    assert described["mro"] == ["pkg.sub.Caller", "pkg._core.Hook", "object"]
    hierarchy = client.ok("get_class_hierarchy", className="Hook")["structuredContent"]
    assert hierarchy["superclasses"] == ["object", "pkg._core.Hook"]
    assert hierarchy["subclasses"] == ["pkg.sub.Caller", "plugins.Plugin"]
    methods = client.ok("list_methods", className="Caller")["structuredContent"]["methods"]["instance"]
    assert {"name": "run", "definedIn": "pkg._core.Hook", "inherited": True} in methods
    assert client.error("get_method_source", "notFound", className="Caller", selector="run") == (
        "pkg.sub.Caller defines no method run (it inherits it from pkg._core.Hook)")
    assert text(client.ok("get_method_source", className="Hook", selector="run")) == (
        "def run(self):\n    return 1\n")
    assert text(client.ok("get_class_definition", className="Marker")) == 'class Marker:\n    __module__ = "pkg"\n'
    assert text(client.ok("find_implementors", selector="more")) == "pkg.sub.Caller"


def test_a_metaclass_whose_body_rewrites_module_gives_its_classes_their_class_side(client):
    # Widget's class side was empty, and hello not found: the metaclass was taken for the
    # kernel's, its module judged by __module__.
    methods = client.ok("list_methods", className="Widget")["structuredContent"]["methods"]["class"]
    assert methods == [{"name": "hello", "definedIn": "pkg._meta.Meta", "metaclass": True}]
    found = client.ok("get_method_source", className="Widget", selector="hello")["structuredContent"]
    assert (found["definedIn"], found["source"]) == ("pkg._meta.Meta", 'def hello(cls):\n    return "hi"\n')


def test_the_public_package_s_name_for_it_points_at_its_module_not_at_a_run_time_class(client):
    # Said "pkg.Hook is a class made at run time (bound at line 1) by no class statement":
    # pkg binds it by an import, and its __module__ named pkg.
    said = client.error("get_class_definition", "notFound", className="pkg.Hook")
    assert said == "pkg defines no class Hook (did you mean pkg._core.Hook?)"


def fresh_import(image, code: str) -> str:
    """What `code` prints in a new Python process importing the image as it is on disk, as a
    new session's import does."""
    done = subprocess.run([sys.executable, "-c", code], cwd=image, capture_output=True, text=True,
                          check=True)
    return done.stdout.strip()


def test_compile_method_changes_it_live_for_its_subclasses_on_disk_and_for_a_new_session(client):
    # Refused: "pkg._core.Hook is bound to pkg.Hook once pkg._core is imported, not to the
    # class its class statement makes", which it is.
    client.ok("compile_method", className="Hook", source="def run(self):\n    return 5\n")
    live = client.view.module("pkg._core").Hook
    assert (live().run(), live.__module__, client.view.module("pkg").Hook) == (5, "pkg", live)
    assert client.view.module("pkg.sub").Caller().more() == 5
    assert client.view.module("plugins").Plugin().run() == 5
    on_disk = (client.view.image_dir / "pkg" / "_core.py").read_text()
    assert on_disk.startswith('class Hook:\n    __module__ = "pkg"\n\n    def run(self):\n        return 5\n')
    assert not client.view.has_changes
    assert fresh_import(client.view.image_dir, "from pkg.sub import Caller; from pkg import Hook; "
                        "print(Caller().more(), repr(Hook))") == "5 <class 'pkg.Hook'>"
    client.ok("compile_method", className="pkg.sub.Caller", source="def more(self):\n    return super().run() * 10\n")
    assert client.view.module("pkg.sub").Caller().more() == 50


def test_its_comment_and_methods_are_set_and_deleted(client):
    client.ok("set_class_comment", className="Marker", comment="A marker.")
    client.ok("delete_method", className="Hook", selector="run")
    core = client.view.module("pkg._core")
    assert core.Marker.__doc__ == "A marker." and not hasattr(core.Hook, "run")
    assert fresh_import(client.view.image_dir, "import pkg; print(pkg.Marker.__doc__, hasattr(pkg.Hook, 'run'))") == (
        "A marker. False")


def test_a_class_definition_keeping_or_dropping_its_module_line_leaves_the_live_class_as_a_new_session_has_it(
        client):
    # Dropped, the live class kept __module__ "pkg", then refused every edit as bound to
    # another's class.
    client.ok("compile_class_definition", dictionaryName="pkg._core",
              source='class Hook:\n    __module__ = "pkg"\n    x = 1\n')
    hook = client.view.module("pkg._core").Hook
    assert (hook.x, hook().run(), hook.__module__) == (1, 1, "pkg")
    client.ok("compile_class_definition", dictionaryName="pkg._core", source="class Hook:\n    x = 2\n")
    assert client.view.module("pkg._core").Hook is hook and (hook.x, hook.__module__) == (2, "pkg._core")
    assert fresh_import(client.view.image_dir, "import pkg; print(repr(pkg.Hook))") == "<class 'pkg._core.Hook'>"
    client.ok("compile_method", className="Hook", source="def run(self):\n    return 3\n")
    assert client.view.module("pkg.sub").Caller().more() == 3


def test_a_class_definition_rebinding_it_re_imports_the_package_that_exports_it(client):
    client.ok("compile_class_definition", dictionaryName="pkg._core",
              source='class Marker(Exception):\n    __module__ = "pkg"\n')
    core, package = client.view.module("pkg._core"), client.view.module("pkg")
    assert package.Marker is core.Marker and issubclass(core.Marker, Exception)
    client.ok("set_class_comment", className="Marker", comment="Raised.")    # found again, the new class
    assert package.Marker.__doc__ == "Raised."


def test_delete_class_refuses_it_while_classes_of_other_modules_are_built_on_it(client):
    said = client.error("delete_class", "refused", className="Hook")
    assert said.startswith("pkg._core.Hook has subclasses in the image: pkg.sub.Caller (pkg.sub line 4), "
                           "plugins.Plugin (plugins line 4)")
    assert client.view.source("pkg._core") == CORE


def test_abort_undoes_what_code_did_to_it_and_the_tools_still_find_it(client):
    client.ok("execute_code", code="import pkg\npkg.Hook.run = lambda self: 'patched'")
    client.ok("abort")
    assert client.view.module("pkg.sub").Caller().more() == 1
    client.ok("compile_method", className="Hook", source="def run(self):\n    return 4\n")
    assert client.view.module("pkg.sub").Caller().more() == 4


def test_another_session_s_commit_to_it_is_brought_in_by_refresh_and_changed_on(tmp_path, views):
    image = write_image(tmp_path / "image", FILES)
    ours, theirs = Client(views(image, "a")), Client(views(image, "b", install=False))
    ours.view.load_all()
    theirs.view.set_source("pkg._core", CORE.replace("return 1", "return 6"), live=False)
    theirs.view.commit()
    ours.ok("refresh")
    assert ours.view.module("pkg.sub").Caller().more() == 6
    ours.ok("compile_method", className="Hook", source="def run(self):\n    return 7\n")
    assert ours.view.module("pkg.sub").Caller().more() == 7
    assert '    __module__ = "pkg"\n' in (image / "pkg" / "_core.py").read_text()


def test_the_workspace_s_name_for_it_is_bound_to_the_class_re_imported(client):
    # Kept the old pkg.sub.Caller: looked for in the module its __module__ names, none.
    client.ok("execute_code", code="from pkg.sub import Caller")
    client.ok("compile_class_definition", dictionaryName="pkg.sub",
              source='class Caller(Hook, Exception):\n    __module__ = "elsewhere"\n')
    check = "import pkg.sub\nCaller is pkg.sub.Caller and issubclass(Caller, Exception)"
    assert client.ok("execute_code", code=check)["structuredContent"]["result"] == "True"


@pytest.mark.parametrize("statement", [
    'class Caller:\n    __module__ = "elsewhere"\n    x = 1\n',
    'class Plain:\n    __module__ = "pkg._core"\n    x = 1\n',
], ids=["found-where-its-class-statement-is", "found-in-the-module-its-module-names"])
def test_a_class_the_workspace_makes_alike_stays_the_workspace_s(client, statement):
    # Was bound to the image's class of its name and __module__ the next call, no re-import
    # at all: any class those led to was taken for a copy a re-import left behind.
    client.ok("execute_code", code="import pkg.sub\n" + statement)
    name = statement.split()[1].rstrip(":")
    assert client.ok("execute_code", code=f"{name}.x")["structuredContent"]["result"] == "1"


@pytest.mark.parametrize("files", [
    {"comp.py": 'class Dyn:\n    __module__ = "comp".upper()\n'},
    {"twin_a.py": 'class T:\n    __module__ = "x"\n',
     "twin_b.py": 'class T:\n    __module__ = "x"\n\n\nfrom twin_a import T\n'},
], ids=["computed", "another-module-says-the-same"])
def test_one_it_cannot_tell_apart_is_refused_saying_why(tmp_path, views, files):
    client = Client(views(write_image(tmp_path / "image", files)))
    name, module = ("comp.Dyn", "'COMP'") if "comp.py" in files else ("twin_a.T", "'x'")
    said = client.error("compile_method", "refused", className=name, source="def m(self):\n    pass\n")
    assert said == (
        f"{name} cannot be modified: {name.split('.')[0]} binds it to a class whose __module__ is "
        f"{module}, and the tools cannot tell that class is the one its class statement makes: they "
        "can when the statement assigns that very string to __module__ (`__module__ = \"pkg\"`) and no "
        "other image module binds the class by such a statement of its own; edit the module's file in "
        "an editor, then refresh")


def test_delete_class_counts_a_subclass_in_another_module_whose_body_rewrites_module(client):
    # fancy.Fancy, whose __module__ says shapes, and the class nested in fancy.Holder, whose
    # __module__ says elsewhere, were no subclasses of the image's: the delete went through
    # and fancy failed to import.
    said = client.error("delete_class", "refused", className="Shape")
    assert ("shapes.Shape has subclasses in the image: fancy.Fancy (fancy line 4), fancy.Holder.Inner "
            "(fancy line 11, in the class statement of fancy.Holder)") in said
    assert "class Shape" in client.view.source("shapes")


def test_a_module_that_is_no_string_is_no_crash_where_another_class_of_the_name_writes_one(tmp_path, views):
    # TypeError (unhashable type: 'list'): it was looked up among the strings a.T writes.
    files = {"a.py": 'class T:\n    __module__ = "x"\n', "b.py": 'class T:\n    __module__ = ["x"]\n',
             "c.py": "from b import T\n\n\nclass U(T):\n    pass\n"}
    client = Client(views(write_image(tmp_path / "image", files)))
    # Named by its qualified name alone, as Python's repr names a class whose __module__ is no str.
    assert client.ok("describe_class", className="U")["structuredContent"]["bases"] == ["T"]


def test_naming_a_run_time_class_parses_no_module_without_module_and_asks_each_once(tmp_path, views, monkeypatch):
    # Point (a namedtuple) is bound in the image module its __module__ names by no class
    # statement, so every module was parsed to look for one rewriting __module__ (2.9 s in an
    # image of pip's 491 modules), and each again at every name given (1 ms a class there).
    files = {"rt.py": 'import collections\nPoint = collections.namedtuple("Point", "x y")\n\n\n'
                      'class Sub(Point):\n    pass\n',
             "other.py": "class Other:\n    pass\n",
             "wide.py": 'class Wide:\n    __\uff4dodule__ = "elsewhere"\n\n    def go(self):\n        return "\xe9"\n'}
    client = Client(views(write_image(tmp_path / "image", files)))
    parsed, asked = [], []
    real_parsed, real_written = view_module._parsed, View._modules_written
    monkeypatch.setattr(view_module, "_parsed", lambda text: parsed.append(text) or real_parsed(text))
    monkeypatch.setattr(View, "_modules_written", lambda view, module: asked.append(module) or real_written(view, module))
    assert client.ok("describe_class", className="rt.Sub")["structuredContent"]["mro"] == [
        "rt.Sub", "rt.Point", "tuple", "object"]
    assert files["other.py"] not in parsed
    asked.clear()
    client.ok("list_methods", className="rt.Sub")
    assert asked == []
    # Python reads `__ｍodule__` as __module__ (NFKC): still found where its statement is.
    assert client.ok("describe_class", className="wide.Wide")["structuredContent"]["mro"] == ["wide.Wide", "object"]


NESTED = {
    "pkg/__init__.py": "from pkg._core import Outer\n",
    "pkg/_core.py": 'class Outer:\n    class Inner:\n        __module__ = "pkg"\n',
    "other.py": "from pkg._core import Outer\n\n\nclass Sub(Outer.Inner):\n    pass\n",
    "shapes.py": "class Shape:\n    pass\n",
    "holder.py": ('from shapes import Shape\n\n\nclass Holder:\n    class Inner(Shape):\n'
                  '        __module__ = "elsewhere"\n'),
}


def test_a_nested_class_whose_body_rewrites_module_is_named_and_counted_where_its_statement_is(tmp_path, views):
    # Named pkg.Outer.Inner and elsewhere.Holder.Inner, and no image class: delete_class of
    # Outer or of Shape went through, and other or holder failed to import.
    client = Client(views(write_image(tmp_path / "image", NESTED)))
    assert client.ok("describe_class", className="other.Sub")["structuredContent"]["bases"] == [
        "pkg._core.Outer.Inner"]
    said = client.error("delete_class", "refused", className="pkg._core.Outer")
    assert said.startswith("pkg._core.Outer.Inner has subclasses in the image: other.Sub (other line 4)")
    said = client.error("delete_class", "refused", className="shapes.Shape")
    assert said.startswith("shapes.Shape has subclasses in the image: holder.Holder.Inner (holder line 5, "
                           "in the class statement of holder.Holder)")
    assert "compile_class_definition on holder.Holder" in said
    assert (client.view.source("pkg._core"), client.view.source("shapes")) == (NESTED["pkg/_core.py"],
                                                                              NESTED["shapes.py"])


def test_a_name_bound_to_an_instance_of_such_a_class_is_refused_naming_its_class_where_written(tmp_path, views):
    # Said "an instance of pkg.Hook", a name the tools answer `did you mean pkg._core.Hook?`.
    files = {**FILES, "thing.py": "from pkg._core import Hook\n\n\nclass Thing:\n    pass\n\n\nThing = Hook()\n"}
    client = Client(views(write_image(tmp_path / "image", files)))
    said = client.error("compile_method", "refused", className="thing.Thing", source="def m(self):\n    pass\n")
    assert said.startswith("thing.Thing is bound to an instance of pkg._core.Hook once thing is imported")


@pytest.mark.parametrize("code", [
    "class Liar:\n    __class__ = property(lambda self: type)\n\n\nheld = Liar()\n",
    "class Liar:\n    __class__ = property(lambda self: types.FunctionType)\n\n\nheld = Liar()\n",
    "class Liar:\n    __class__ = property(lambda self: types.ModuleType)\n\n\nheld = Liar()\n",
    "class Meta(type):\n    def __getattribute__(cls, name):\n        if name.endswith('name__'):\n"
    "            raise RuntimeError('no name')\n        return super().__getattribute__(name)\n\n\n"
    "class Odd(metaclass=Meta):\n    pass\n",
], ids=["claims-a-class", "claims-a-function", "claims-a-module", "metaclass-names-raise"])
def test_a_workspace_object_claiming_another_kind_or_names_fails_no_execute_code(client, code):
    # Read as what it claimed (isinstance follows __class__; the metaclass's __qualname__):
    # the call binding it failed as it ended, and every later one as it began, `del` too.
    client.ok("execute_code", code="import types, pkg.sub\n" + code)
    assert client.ok("execute_code", code="1 + 1")["structuredContent"]["result"] == "2"


def test_a_wrapper_the_workspace_makes_of_an_image_function_stays_the_workspace_s(tmp_path, views):
    # functools.wraps names the wrapper as the image's function (__module__, __name__,
    # __qualname__): the next call bound `total` back to shop.total, the wrapper gone unsaid.
    client = Client(views(write_image(tmp_path / "image", {"shop.py": "def total(x):\n    return x\n"})))
    client.ok("execute_code", code=(
        "import functools, shop\n\n\ndef logged(f):\n    @functools.wraps(f)\n    def inner(*args):\n"
        "        return ('logged', f(*args))\n    return inner\n\n\ntotal = logged(shop.total)\n"))
    assert client.ok("execute_code", code="total(1)")["structuredContent"]["result"] == "('logged', 1)"
    # The image's own function, imported, still follows its module's re-import.
    client.ok("execute_code", code="from shop import total")
    client.ok("abort")
    assert client.ok("execute_code", code="total is shop.total")["structuredContent"]["result"] == "True"


def test_an_image_module_s_getattr_raising_fails_no_execute_code(tmp_path, views):
    # Its module-level __getattr__ ran for each workspace class or function naming the module
    # as each call began and ended: a KeyError from it failed that call and every later one.
    lazy = "_LAZY = {}\n\n\ndef __getattr__(name):\n    return _LAZY[name]\n"
    client = Client(views(write_image(tmp_path / "image", {"lazy.py": lazy})))
    client.ok("execute_code", code='import lazy\n\n\nclass Other:\n    __module__ = "lazy"\n')
    assert client.ok("execute_code", code="Other.__name__")["structuredContent"]["result"] == "'Other'"


def test_the_index_of_modules_rewriting_module_is_made_again_exactly_when_a_text_changed(tmp_path, views, monkeypatch):
    # It was kept while every text compared equal, each lookup comparing them all: execute_code
    # asks it of each workspace class whose __module__ names an image module binding no such class
    # (65 -> 121 ms a call with 3,000). Counted by the modules asked, each once a making.
    client = Client(views(write_image(tmp_path / "image", FILES)))
    theirs = views(tmp_path / "image", "b", install=False)
    asked = []
    real_written = View._modules_written
    monkeypatch.setattr(View, "_modules_written",
                        lambda view, module: (module == "shapes" and asked.append(view)) or real_written(view, module))

    def made() -> int:
        client.ok("execute_code", code="1")   # rebinds W: asks the index
        return asked.count(client.view)

    client.ok("execute_code", code="import shapes\nW = type('W', (), {'__module__': 'shapes'})")
    assert made() == 1 and made() == 1
    client.ok("refresh")
    client.ok("abort")
    client.ok("get_class_definition", className="shapes.Shape")
    assert made() == 1   # no text changed
    client.ok("compile_method", className="shapes.Shape", source="def area(self):\n    return 0\n")
    assert made() == 2 and made() == 2
    theirs.set_source("plugins", "from pkg import Hook\n\n\nclass Plugin(Hook):\n    x = 1\n", live=False)
    theirs.commit()
    client.ok("refresh")
    assert made() == 3
    client.view.add_module("added", "X = 1\n")
    assert made() == 4
    client.view.remove_module("added")
    assert made() == 5


def test_a_test_class_whose_body_rewrites_module_is_listed_and_run_where_its_statement_is(tmp_path, views):
    # Left out of list_test_classes (judged by its __module__, the name unittest gives its tests).
    files = {"checks.py": ('import unittest\n\n\nclass RwTest(unittest.TestCase):\n    __module__ = "elsewhere"\n\n'
                           '    def test_ok(self):\n        pass\n')}
    client = Client(views(write_image(tmp_path / "image", files)))
    assert client.ok("list_test_classes")["structuredContent"]["testClasses"] == ["checks.RwTest"]
    ran = client.ok("run_test_class", className="checks.RwTest")["structuredContent"]
    assert (ran["class"], ran["run"], ran["passed"]) == ("checks.RwTest", 1, 1)


DEEP = {
    "shapes.py": "class Shape:\n    pass\n",
    "deep.py": ('from shapes import Shape\n\n\nclass Outer:\n    class Middle:\n        __module__ = "elsewhere"\n\n'
                '        class Leaf(Shape):\n            pass\n'),
}


def test_a_class_nested_in_one_whose_body_rewrites_module_is_made_where_its_statement_is(tmp_path, views):
    # Middle's __module__ (elsewhere) was compared with deep: Leaf counted as no class deep
    # makes, so delete_class of Shape went through and deep failed to import.
    client = Client(views(write_image(tmp_path / "image", DEEP)))
    leaf = client.view.module("deep").Outer.Middle.Leaf
    assert client.view.makes(leaf)
    said = client.error("delete_class", "refused", className="shapes.Shape")
    assert said.startswith("shapes.Shape has subclasses in the image: deep.Outer.Middle.Leaf (deep line 8, "
                           "in the class statement of deep.Outer)")
    assert client.view.source("shapes") == DEEP["shapes.py"]


OUTSIDE = {
    "deco/__init__.py": "from deco._core import Hooked, Empty, Point\n",
    "deco/_core.py": ('import dataclasses\n\n\ndef public(cls):\n    cls.__module__ = "deco"\n    return cls\n\n\n'
                      '@public\nclass Hooked:\n    def run(self):\n        return 1\n\n\n@public\nclass Empty:\n    pass\n'
                      '\n\n@public\n@dataclasses.dataclass\nclass Point:\n    x: int = 0\n'),
}


@pytest.mark.parametrize("name", ["deco._core.Hooked", "deco._core.Empty", "deco._core.Point"])
def test_one_whose_module_a_decorator_sets_is_refused_saying_so(tmp_path, views, name):
    # Said "is bound to deco.Hooked once deco._core is imported, not to the class its class
    # statement makes": it is that class, its __module__ set by a decorator. So was a
    # dataclass with no def of its own (httpx's Limits, anyio's LockStatistics): the methods
    # dataclasses made, compiled from no file of the image, were taken to say where it was made.
    client = Client(views(write_image(tmp_path / "image", OUTSIDE)))
    module, _, short = name.rpartition(".")
    why = (f"{name} is bound to a class whose __module__ ({module.split('.')[0]!r}) is set outside its class "
           "statement (by a decorator, its metaclass, or code below it or in another module), so the tools "
           f"cannot tell it is the class the statement in {module} makes: they name a class by its "
           "__module__, or by the module "
           "whose class statement assigns that in its body (`__module__ = \"pkg\"`) or whose top level does "
           f"below it (`{short}.__module__ = \"pkg\"`)")
    assert client.ok("describe_class", className=name)["structuredContent"]["fromSource"] == why
    said = client.error("compile_method", "refused", className=name, source="def m(self):\n    pass\n")
    assert said == why + "; edit the module's file in an editor, then refresh"
    assert client.view.source(module) == OUTSIDE[module.replace(".", "/") + ".py"]


LATE = {
    "late/__init__.py": "from late._core import Hook, Lone\n",
    "late/_core.py": ('class Hook:\n    def run(self):\n        return 1\n\n\nclass Lone:\n    pass\n\n\n'
                      'Hook.__module__ = "late"\nLone.__module__ = "late"\n'),
    "plug.py": "from late import Hook\n\n\nclass Plug(Hook):\n    pass\n",
}


def test_one_whose_module_the_module_sets_below_its_statement_is_browsed_and_changed_where_written(tmp_path, views):
    # Browsed from source ("is bound to late.Hook ... not to the class its class statement
    # makes"), refused every edit, and Plug was no subclass of an image class.
    client = Client(views(write_image(tmp_path / "image", LATE)))
    assert client.ok("describe_class", className="Plug")["structuredContent"]["mro"] == [
        "plug.Plug", "late._core.Hook", "object"]
    assert client.ok("get_class_hierarchy", className="Hook")["structuredContent"]["subclasses"] == ["plug.Plug"]
    client.ok("compile_method", className="Hook", source="def m(self):\n    return 2\n")
    client.ok("compile_class_definition", dictionaryName="late._core",
              source="class Hook:\n    def run(self):\n        return 5\n")
    # Redefined in place, and anew (__slots__): named late as the module's import names it.
    client.ok("compile_class_definition", dictionaryName="late._core", source="class Lone:\n    __slots__ = ()\n")
    check = "import late, plug\n(late.Hook, late.Lone, plug.Plug().run(), plug.Plug().m())"
    assert client.ok("execute_code", code=check)["structuredContent"]["result"] == (
        "(<class 'late.Hook'>, <class 'late.Lone'>, 5, 2)")
    assert client.view.source("late._core").endswith('Hook.__module__ = "late"\nLone.__module__ = "late"\n')
    assert "__slots__" in client.view.source("late._core")


def test_module_strings_set_below_are_those_below_a_top_level_class_statement():
    tree = ast.parse('X.__module__ = "early"\n\n\nclass X:\n    pass\n\n\nX.__module__ = "pkg"\n'
                     'Y.__module__ = "nowhere"\nX.__module__ = name\n')
    assert splice.module_strings_set_below(tree) == {"X": {"pkg"}}


def test_a_class_a_leftover_thread_binds_after_its_call_follows_a_re_import(tmp_path, views):
    # Bound once the call had ended, it was never noted as the module's: after the abort's
    # re-import the name still held the old class.
    client = Client(views(write_image(tmp_path / "image", {"shop.py": "class Cart:\n    pass\n"})))
    client.ok("execute_code", code=(
        "import threading, shop\ngo = threading.Event()\n\n\ndef late():\n    global Late\n"
        "    go.wait()\n    from shop import Cart as Late\n\n\nth = threading.Thread(target=late)\nth.start()\n"))
    [workspace] = [toolset.namespace for toolset in client.server.toolsets if toolset.name == "execution"]
    workspace["go"].set()
    workspace["th"].join()
    client.ok("abort")
    assert client.ok("execute_code", code="Late is shop.Cart")["structuredContent"]["result"] == "True"


def _looks_counted(monkeypatch) -> list:
    """The workspace values execution looks up in the image, as they are looked up."""
    from gsmcpd.worker.toolsets import execution
    looked, real = [], execution._live_counterpart
    monkeypatch.setattr(execution, "_live_counterpart", lambda view, value: looked.append(value) or real(view, value))
    return looked


def test_a_thread_running_before_the_code_s_first_call_makes_no_call_look_at_the_workspace(
        tmp_path, views, monkeypatch):
    # The worker's own router watchdog is always running: every tool call looked up each
    # workspace class and function in the image (55 ms a call with 4,000 of them).
    import threading
    service = threading.Event()
    threading.Thread(target=service.wait, daemon=True).start()
    try:
        client = Client(views(write_image(tmp_path / "image", {"shop.py": "class Cart:\n    pass\n"})))
        client.ok("execute_code", code="from shop import Cart\n\n\ndef f():\n    pass\n")
        looked = _looks_counted(monkeypatch)
        client.ok("get_class_definition", className="shop.Cart")
        assert looked == []
    finally:
        service.set()


def test_a_thread_the_code_left_makes_each_call_look_only_at_what_was_bound_since(tmp_path, views, monkeypatch):
    client = Client(views(write_image(tmp_path / "image", {"shop.py": "class Cart:\n    pass\n"})))
    client.ok("execute_code", code=(
        "import threading, shop\nfrom shop import Cart\ngo = threading.Event()\n\n\ndef late():\n"
        "    global Late\n    go.wait()\n    from shop import Cart as Late\n\n\n"
        "th = threading.Thread(target=late)\nth.start()\n"))
    looked = _looks_counted(monkeypatch)
    client.ok("get_class_definition", className="shop.Cart")
    assert looked == []
    [workspace] = [toolset.namespace for toolset in client.server.toolsets if toolset.name == "execution"]
    workspace["go"].set()
    workspace["th"].join()
    client.ok("abort")
    assert [value.__name__ for value in looked] == ["Cart"]   # Late, once
    assert client.ok("execute_code", code="Late is shop.Cart and Cart is shop.Cart")["structuredContent"]["result"] == "True"


# Code may put any object in sys.modules: one with no __dict__ here.
ODD_MODULE = ("import sys\n\n\nclass Slotted:\n    __slots__ = ()\n\n\nsys.modules['oddmod'] = Slotted()\n\n\n"
              "class Named:\n    pass\n\n\nNamed.__module__ = 'oddmod'\n")


def test_a_workspace_class_named_after_a_sys_modules_entry_with_no_dict_fails_no_call(tmp_path, views):
    # Looking up where its class statement is raised TypeError (vars() of that entry) as each
    # execute_code ended, so every later one failed; with a thread running, every tool call.
    client = Client(views(write_image(tmp_path / "image", {"shop.py": "class Cart:\n    pass\n"})))
    try:
        client.ok("execute_code", code=ODD_MODULE)
        client.ok("execute_code", code="import threading\ngo = threading.Event()\n"
                                        "th = threading.Thread(target=go.wait)\nth.start()\n")
        client.ok("list_classes", dictionaryName="shop")
        client.ok("execute_code", code="go.set()\nth.join()\n")
        assert client.ok("execute_code", code="Named.__module__")["structuredContent"]["result"] == "'oddmod'"
    finally:
        sys.modules.pop("oddmod", None)


def test_a_class_its_package_imports_and_renames_is_not_called_made_at_run_time(tmp_path, views):
    # tomllib's pattern: the package imports the error and sets `__module__ = __name__`. Said
    # "tomlx.TOMLDecodeError is a class made at run time (bound at line 1) by no class
    # statement", of a class a class statement in tomlx._parser makes.
    files = {"tomlx/__init__.py": ("from ._parser import TOMLDecodeError\n\n"
                                   "TOMLDecodeError.__module__ = __name__\n"),
             "tomlx/_parser.py": "class TOMLDecodeError(ValueError):\n    pass\n"}
    client = Client(views(write_image(tmp_path / "image", files)))
    said = client.error("get_class_definition", "notFound", className="tomlx.TOMLDecodeError")
    assert said == "tomlx defines no class TOMLDecodeError (did you mean tomlx._parser.TOMLDecodeError?)"


def test_one_whose_package_sets_its_module_is_refused_naming_another_module(tmp_path, views):
    # tomllib's package sets `TOMLDecodeError.__module__ = __name__` after importing it: the
    # refusal said only "by a decorator, its metaclass or code below it", none of which did.
    files = {"tomlx/__init__.py": ("from ._parser import TOMLDecodeError\n\n"
                                   "TOMLDecodeError.__module__ = __name__\n"),
             "tomlx/_parser.py": "class TOMLDecodeError(ValueError):\n    pass\n"}
    client = Client(views(write_image(tmp_path / "image", files)))
    said = client.error("set_class_comment", "refused", className="tomlx._parser.TOMLDecodeError",
                        comment="Bad TOML.")
    assert said.startswith("tomlx._parser.TOMLDecodeError is bound to a class whose __module__ ('tomlx') "
                           "is set outside its class statement (by a decorator, its metaclass, or code "
                           "below it or in another module)")
