"""The read-side tools (listing, browsing, search) end to end, through the real daemon, on
Python that is more than plain classes and defs. Each answer is checked against what
Python itself says (inspect, the class's __mro__, the source).

One daemon per module on a throwaway image.
"""

import pytest

from test_e2e_image_tools import daemon  # noqa: F401  (the daemon fixture: on this module's image)
from test_e2e_tools import error, structured
from test_tools_browse import DISPATCHING, PROXIED, SCOPED
from test_tools_support import write_image

FILES = {
    "kinds/__init__.py": "",
    "kinds/dispatching.py": DISPATCHING,
    "kinds/scoped.py": SCOPED,
    "kinds/proxied.py": PROXIED,
    "kinds/hiding.py": "class Base:\n    @property\n    def flag(self):\n        return True\n\n"
                       "    def run(self):\n        return 1\n\n\nclass Sub(Base):\n    flag = False\n    run = None\n",
    "kinds/huge.py": "class Huge:\n" + "".join(f"    def m{i}(self):\n        return self.base + {i}\n"
                                               for i in range(3000)),
}


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    return write_image(tmp_path_factory.mktemp("browse") / "image", FILES)


def test_describe_class_of_the_kernel_metaclass(c):
    described = structured(c, "describe_class", className="builtins.type")
    assert described["mro"] == [cls.__qualname__ for cls in type.__mro__]
    assert described["instanceVariables"] == []
    assert set(described["methods"]) >= {"mro", "__call__", "__prepare__", "__name__"}


def test_methods_made_by_functools_descriptors_are_listed_and_found(c):
    methods = structured(c, "list_methods", className="Dispatching")["methods"]
    assert [m["name"] for m in methods["instance"]] == ["_", "double", "scale", "show"]
    assert [m["name"] for m in methods["class"]] == ["parse"]
    assert structured(c, "describe_class", className="Dispatching")["methods"] == [
        "_", "double", "parse", "scale", "show"]
    assert structured(c, "get_method_source", className="Dispatching", selector="parse",
                      meta=True)["kind"] == "class"


def test_a_base_method_a_subclass_hides_under_a_plain_attribute_is_not_listed_as_inherited(c):
    methods = structured(c, "list_methods", className="kinds.hiding.Sub")["methods"]
    assert methods == {"instance": [], "class": [], "static": [], "property": []}
    assert structured(c, "execute_code", code="from kinds.hiding import Sub\n(Sub.flag, Sub.run)")[
        "result"] == "(False, None)"


def test_a_huge_class_is_listed_whole_and_searched_capped(c):
    methods = structured(c, "list_methods", className="Huge")["methods"]["instance"]
    assert [m["name"] for m in methods] == sorted(f"m{i}" for i in range(3000))
    found = structured(c, "search_method_source", pattern="self.base + ", dictionaryName="kinds.huge")
    assert found["total"] == 3000 and found["results"] == [f"kinds.huge.Huge.m{i}" for i in range(200)]
    assert structured(c, "search_method_source", pattern="return self.base + 2999\n")["results"] == [
        "kinds.huge.Huge.m2999"]


def test_references_to_a_global_are_not_its_namesakes_in_a_def_s_own_scope(c):
    found = structured(c, "find_references_to", name="kinds.scoped.textwrap")["results"]
    assert found == ["kinds.scoped.global_read", "kinds.scoped.declared_global",
                     "kinds.scoped.default_runs_in_the_module", "kinds.scoped.nested_global_read",
                     "kinds.scoped.Holder.method_global"]


def test_dictionary_entries_are_tagged_without_running_a_global_s_own_code(c):
    entries = structured(c, "list_dictionary_entries", dictionaryName="kinds.proxied")["entries"]
    assert {e["name"]: e["kind"] for e in entries} == {
        "Proxy": "class", "request": "global", "part": "global", "cached": "function",
        "join": "function", "functools": "module"}


def test_get_method_source_of_a_kernel_class_names_only_methods_it_has_as_kernel_methods(c):
    # A fuzzer found every selector answered "<class>.<selector> is a kernel method", echoed
    # whole: type.speak, int.bitlength, a 1 MB one as a 1 MB error.
    assert error(c, "get_method_source", "notFound", className="int", selector="bit_length") == (
        "int.bit_length is a kernel method: no Python source")
    assert error(c, "get_method_source", "notFound", className="int", selector="bitlength") == (
        "builtins.int defines no method bitlength (did you mean bit_length?)")
    long_one = error(c, "get_method_source", "notFound", className="type", selector="y" * 100_000)
    assert long_one.startswith("builtins.type defines no method " + "y" * 200 + "... (100000 characters)")
