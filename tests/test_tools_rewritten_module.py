"""Classes whose body rewrites `__module__` (`__module__ = "pkg"`, as pluggy and anyio write
so that reprs show the public package): browsed, listed and named under the module whose file
holds the class statement; refused by the mutation tools for that reason, said so."""

import pytest

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


def test_the_public_package_s_name_for_it_points_at_its_module_not_at_a_run_time_class(client):
    # Said "pkg.Hook is a class made at run time (bound at line 1) by no class statement":
    # pkg binds it by an import, and its __module__ named pkg.
    said = client.error("get_class_definition", "notFound", className="pkg.Hook")
    assert said == "pkg defines no class Hook (did you mean pkg._core.Hook?)"


@pytest.mark.parametrize("tool, arguments", [
    ("compile_method", {"className": "Hook", "source": "def run(self):\n    return 5\n"}),
    ("delete_method", {"className": "pkg._core.Hook", "selector": "run"}),
    ("set_class_comment", {"className": "Marker", "comment": "A marker."}),
    ("delete_class", {"className": "Marker"}),
    ("compile_class_definition", {"source": 'class Hook:\n    __module__ = "pkg"\n', "dictionaryName": "pkg._core"}),
], ids=["compile_method", "delete_method", "set_class_comment", "delete_class", "compile_class_definition"])
def test_the_mutation_tools_refuse_it_saying_its_class_statement_rewrites_module(client, tool, arguments):
    # Said "pkg._core.Hook is bound to pkg.Hook once pkg._core is imported, not to the class
    # its class statement makes", which it is.
    name = "Marker" if "Marker" in str(arguments) else "Hook"
    line = 1 if name == "Hook" else 8
    said = client.error(tool, "refused", **arguments)
    assert said == (
        f"pkg._core.{name} cannot be modified by the tools: its class statement (pkg._core line "
        f"{line}) sets __module__ to 'pkg', so __module__ does not name the module it is written "
        "in, and the mutation tools change only a class whose __module__ names its own module. "
        "To change it, edit pkg._core's file in an editor, then refresh; or take the __module__ "
        "line out of the class statement there (its repr then names pkg._core), after which the "
        "tools change it")
    assert client.view.source("pkg._core") == CORE and not client.view.has_changes
    assert client.view.module("pkg._core").Hook().run() == 1
    client.ok("compile_method", className="Plain", source="def go(self):\n    return 3\n")   # the class beside it
    assert client.view.module("pkg._core").Plain().go() == 3


def test_delete_class_counts_a_subclass_in_another_module_whose_body_rewrites_module(client):
    # fancy.Fancy, whose __module__ says shapes, and the class nested in fancy.Holder, whose
    # __module__ says elsewhere, were no subclasses of the image's: the delete went through
    # and fancy failed to import.
    said = client.error("delete_class", "refused", className="Shape")
    assert ("shapes.Shape has subclasses in the image: fancy.Fancy (fancy line 4), fancy.Holder.Inner "
            "(fancy line 11, in the class statement of fancy.Holder)") in said
    assert "class Shape" in client.view.source("shapes")
