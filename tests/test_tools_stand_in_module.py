"""An image module that puts in its place in sys.modules an object with no namespace (an
object of __slots__, or one whose __dict__ raises), with its __spec__ or none (the view's by
what its import left there: View.note_stand_in), read through own.namespace: each tool
answers from source, or refuses naming the module, where vars() of it raised TypeError
(or the object's own error) out of the tool."""

import json
import sys
import types

import pytest

from gsmcpd.image import own
from test_tools_support import client, image, views  # noqa: F401  (fixtures)

_MODULE = ("import sys\nimport unittest\n\n\nclass Widget:\n    \"\"\"A widget.\"\"\"\n\n"
           "    def spin(self):\n        return 1\n\n\n"
           "class WidgetTest(unittest.TestCase):\n    def test_spin(self):\n"
           "        self.assertEqual(Widget().spin(), 2)\n\n\n"
           "def helper():\n    return 3\n\n\n")
# Its __spec__ kept, so the view still takes it for its module; Widget reachable by import.
SLOTTED = _MODULE + ("class StandIn:\n    __slots__ = ()\n    __spec__ = __spec__\n    Widget = Widget\n\n\n"
                     "sys.modules[__name__] = StandIn()\n")
# No __spec__ either: told the view's by what its import left in sys.modules, not a kernel
# module's of that name shadowing it (no such module exists).
NO_SPEC = _MODULE + ("class StandIn:\n    __slots__ = ()\n    Widget = Widget\n\n\n"
                     "sys.modules[__name__] = StandIn()\n")
RAISING = _MODULE + ("class StandIn:\n    __spec__ = __spec__\n    Widget = Widget\n\n"
                     "    @property\n    def __dict__(self):\n        raise RuntimeError('no dict here')\n\n\n"
                     "sys.modules[__name__] = StandIn()\n")
USER = "from stand_in import Widget\n\n\nclass Mine(Widget):\n    def spin(self):\n        return 5\n"
NAMED = "image module stand_in is held in sys.modules as a 'StandIn' object with no namespace (__dict__)"


@pytest.fixture(params=[SLOTTED, NO_SPEC, RAISING], ids=["slots", "slots-no-spec", "raising-dict"])
def stand_in(request, client, image):
    """The client's session with stand_in imported (and user, whose class builds on its Widget)."""
    (image / "stand_in.py").write_text(request.param)
    (image / "user.py").write_text(USER)
    client.ok("refresh")
    client.ok("execute_code", code="import stand_in, user")
    return client


def test_the_namespace_of_an_object_without_one_is_empty_and_told_apart_from_an_empty_one():
    class Slotted:
        __slots__ = ()

    class Raising:
        @property
        def __dict__(self):
            raise RuntimeError("no dict here")

    for held in (Slotted(), Raising(), None):
        assert dict(own.namespace(held)) == {} and not own.has_namespace(held)
    empty = types.ModuleType("empty")
    empty.__dict__.clear()
    assert own.namespace(empty) is vars(empty) and own.has_namespace(empty)
    assert own.namespace(types)["ModuleType"] is types.ModuleType


def test_its_entries_are_listed_from_source_saying_why(stand_in):
    listed = stand_in.ok("list_dictionary_entries", dictionaryName="stand_in")["structuredContent"]
    assert {"name": "Widget", "kind": "class"} in listed["entries"]
    assert {"name": "helper", "kind": "function"} in listed["entries"]
    assert listed["note"].startswith(NAMED)


@pytest.mark.parametrize("tool, arguments, shown", [
    ("describe_class", {}, "methods: spin\n"), ("get_class_hierarchy", {}, "subclasses: user.Mine\n"),
    ("list_methods", {}, "instance:\n  spin\n")])
def test_its_classes_are_browsed_from_source_saying_why(stand_in, tool, arguments, shown):
    text = stand_in.ok(tool, className="stand_in.Widget", **arguments)["content"][0]["text"]
    assert shown in text and f"(from source: {NAMED}" in text


def test_its_methods_source_is_shown(stand_in):
    answer = stand_in.ok("get_method_source", className="stand_in.Widget", selector="spin")
    assert answer["structuredContent"]["source"] == "def spin(self):\n    return 1\n"


@pytest.mark.parametrize("tool", ["describe_class", "get_class_hierarchy"])
def test_a_class_built_on_one_of_its_classes_is_browsed_live(stand_in, tool):
    assert "stand_in.Widget" in stand_in.ok(tool, className="user.Mine")["content"][0]["text"]


def test_a_method_of_a_class_built_on_one_of_its_classes_is_compiled(stand_in):
    stand_in.ok("compile_method", className="user.Mine", source="def spin(self):\n    return 6\n")
    assert stand_in.view.module("user").Mine().spin() == 6


def test_its_tests_are_said_not_loaded_and_not_run(stand_in):
    for tool in ("list_test_classes", "list_failing_tests"):
        assert NAMED in stand_in.ok(tool)["content"][0]["text"]
    for tool, arguments in [("run_test_class", {}), ("run_test_method", {"selector": "test_spin"}),
                            ("describe_test_failure", {"selector": "test_spin"})]:
        assert stand_in.error(tool, "other", className="stand_in.WidgetTest", **arguments).startswith(NAMED)
    assert stand_in.error("list_failing_tests", "other", classNames=["stand_in.WidgetTest"]).startswith(NAMED)


@pytest.mark.parametrize("tool, arguments", [
    ("compile_method", {"className": "stand_in.Widget", "source": "def spin(self):\n    return 7\n"}),
    ("compile_method", {"className": "stand_in", "source": "def helper():\n    return 4\n"}),
    ("compile_method", {"className": "stand_in", "source": "def other():\n    return 4\n"}),
    ("compile_class_definition", {"dictionaryName": "stand_in", "source": "class Widget:\n    pass\n"}),
    ("compile_class_definition", {"dictionaryName": "stand_in", "source": "class Gadget:\n    pass\n"}),
    ("set_class_comment", {"className": "stand_in.Widget", "comment": "Another."}),
    ("delete_method", {"className": "stand_in.Widget", "selector": "spin"}),
    ("delete_method", {"className": "stand_in", "selector": "helper"}),
    ("delete_class", {"className": "stand_in.Widget"})])
def test_an_edit_of_it_is_refused_naming_it(stand_in, tool, arguments):
    before = stand_in.view.source("stand_in")
    refused = stand_in.error(tool, "refused", **arguments)
    assert refused == f"{NAMED}, which code put in the module's place, so the tools cannot read or change " \
                      "its live objects; edit its file in an editor, then refresh"
    assert stand_in.view.source("stand_in") == before


# One with a namespace but no __name__: the tools read and change it as the module.
NAMELESS = ("class Widget:\n    pass\n\n\nclass StandIn:\n    pass\n\n\nheld = StandIn()\n"
            "held.__spec__ = __spec__\nheld.Widget = Widget\nsys.modules[__name__] = held\n")
UNDEFINED_SAID = ("evaluating the definition raised NameError: name 'Undefined' is not defined (nameless "
                  "binds no Undefined at its top level; if it is to be imported")


@pytest.mark.parametrize("tool, arguments", [
    ("compile_method", {"className": "nameless.Widget", "source": "def spin(self, x=Undefined):\n    pass\n"}),
    ("compile_class_definition", {"dictionaryName": "nameless", "source": "class Gadget(Undefined):\n    pass\n"})])
def test_a_definition_failing_in_one_with_no_name_is_a_compile_error_naming_the_module(client, image, tool,
                                                                                      arguments):
    # Its __name__ was read to name the module: AttributeError out of the tool.
    (image / "nameless.py").write_text("import sys\n\n\n" + NAMELESS)
    client.ok("refresh")
    client.ok("execute_code", code="import nameless")
    assert client.error(tool, "compileError", **arguments).startswith(UNDEFINED_SAID)


def test_it_is_removed(stand_in):
    stand_in.ok("remove_dictionary", dictionaryName="stand_in")
    assert not stand_in.view.has_module("stand_in")


def test_a_workspace_holding_one_of_its_classes_fails_no_later_call(stand_in):
    # Each execute_code's end looks up the module binding what the workspace holds: vars() of
    # the stand-in raised there, and every later execute_code failed.
    stand_in.ok("execute_code", code="from stand_in import Widget\nw = Widget()")
    assert stand_in.ok("execute_code", code="w.spin()")["structuredContent"]["result"] == "1"
    stand_in.ok("abort")



def test_it_is_imported_anew_by_abort_and_forgotten_as_the_session_ends(stand_in):
    # One with no __spec__ was taken for a kernel module's: never re-imported, and left in
    # sys.modules for whatever imported the name after the session.
    held = sys.modules["stand_in"]
    stand_in.ok("abort")
    assert sys.modules["stand_in"] is not held and type(sys.modules["stand_in"]).__name__ == "StandIn"
    stand_in.view.close()
    assert "stand_in" not in sys.modules


def test_a_module_putting_a_kernel_module_in_its_place_is_still_not_the_views(client, image):
    # What its import left there, it is a module the kernel's loader made: taken for the
    # image module's live one, an edit of it would change json.
    (image / "alias.py").write_text("import json\nimport sys\n\n\ndef dumps(obj):\n    return 1\n\n\n"
                                    "sys.modules[__name__] = json\n")
    client.ok("refresh")
    try:
        client.ok("execute_code", code="import alias")
        client.error("compile_method", "refused", className="alias", source="def dumps(obj):\n    return 2\n")
        assert json.dumps({}) == "{}" and not client.view.owns_module("alias")
    finally:
        sys.modules.pop("alias", None)


PLAIN = "class A:\n    pass\n"
REPLACED = ("image module plain is not the view's: code run in this session put a 'S' object in its "
            "place in sys.modules, so the tools do not read or change it; abort imports plain anew")


def test_a_module_code_replaced_in_sys_modules_is_told_so_and_taken_back_by_abort(client, image):
    # Session code, not the module's import, put the stand-in there: it was said "shadowed by
    # the already-loaded kernel module of that name; rename the image module", and abort left it.
    (image / "plain.py").write_text(PLAIN)
    client.ok("refresh")
    client.ok("execute_code", code="import sys\nclass S: __slots__=()\nimport plain\nsys.modules['plain'] = S()")
    assert client.ok("describe_class", className="plain.A")["structuredContent"]["fromSource"] == REPLACED
    assert client.error("compile_method", "refused", className="plain.A",
                        source="def f(self):\n    return 1\n") == f"plain.A cannot be modified: {REPLACED}"
    assert client.ok("abort")["structuredContent"]["reloaded"] == ["plain"]
    assert client.view.owns_module("plain")
    assert "fromSource" not in client.ok("describe_class", className="plain.A")["structuredContent"]


def _package_with_sub(client, image, package, sub):
    """An image package `package` (an empty __init__) whose submodule sub.py holds `sub`, refreshed in."""
    (image / package).mkdir()
    (image / package / "__init__.py").write_text("")
    (image / package / "sub.py").write_text(sub)
    client.ok("refresh")


def test_a_package_code_replaced_in_sys_modules_is_named_for_its_modules(client, image):
    _package_with_sub(client, image, "pk", PLAIN)
    client.ok("execute_code", code="import sys, json\nimport pk.sub\nsys.modules['pk'] = json")
    assert client.ok("describe_class", className="pk.sub.A")["structuredContent"]["fromSource"] == (
        "image module pk.sub is not the view's: code run in this session put the kernel module json "
        "in its package pk's place in sys.modules, so the tools do not read or change it; abort imports pk anew")
    client.ok("abort")
    assert client.view.owns_module("pk") and sys.modules["json"] is json


def test_a_module_whose_import_put_a_kernel_module_in_its_place_is_told_so(client, image):
    # No kernel module is named alias: it was said shadowed by "the kernel module of that name".
    (image / "alias.py").write_text("import json, sys\nsys.modules[__name__] = json\n")
    client.ok("refresh")
    try:
        assert client.ok("list_dictionary_entries", dictionaryName="alias")["structuredContent"]["note"] == (
            "image module alias is not the view's: its import put the kernel module json in its place in "
            "sys.modules, so the tools do not read or change it; abort imports alias anew (which does "
            "that again while its file does)")
        (image / "alias.py").write_text("X = 1\n")
        client.ok("refresh")
        client.ok("abort")
        assert client.view.owns_module("alias") and sys.modules["alias"].X == 1
    finally:
        if sys.modules.get("alias") is json:
            del sys.modules["alias"]


def test_a_submodule_standing_in_is_unbound_from_its_package_when_it_fails_anew(client, image):
    # The package kept the old stand-in as its attribute: `pkg.sub` still answered, where a new
    # session's import of pkg.sub fails (a forgotten module's binding goes, as for any module).
    _package_with_sub(client, image, "pkg", NO_SPEC)
    client.ok("execute_code", code="import pkg.sub")
    assert client.view.owns_module("pkg.sub")
    (image / "pkg" / "sub.py").write_text("raise ValueError('broken')\n")
    assert "pkg.sub" in client.ok("refresh")["structuredContent"]["importErrors"]
    assert "sub" not in vars(sys.modules["pkg"])


def test_a_submodule_standing_in_is_no_entry_of_its_package(client, image):
    # The import system binds what holds the submodule's place on its package, as it binds a
    # module: a stand-in of no __name__ was listed as the package's entry, a module never.
    _package_with_sub(client, image, "pkg", NO_SPEC)
    client.ok("execute_code", code="import pkg.sub")
    assert "sub" in vars(sys.modules["pkg"])
    listed = client.ok("list_dictionary_entries", dictionaryName="pkg")
    assert listed["structuredContent"]["entries"] == []


def test_a_failing_module_code_put_an_object_in_place_of_is_told_so_and_taken_back_by_abort(client, image):
    # Its import failed, so the view had never "run" it: what session code put there (a stub
    # for the broken module) was said a kernel module shadowing it, and abort left it.
    (image / "broken.py").write_text("raise ValueError('no')\n")
    client.ok("refresh")
    client.error("execute_code", "other", code="import broken")
    client.ok("execute_code", code="import sys\nclass S: __slots__=()\nsys.modules['broken'] = S()")
    try:
        assert client.ok("list_dictionary_entries", dictionaryName="broken")["structuredContent"]["note"] == (
            "image module broken is not the view's: code run in this session put a 'S' object in its place "
            "in sys.modules, so the tools do not read or change it; abort imports broken anew")
        assert client.ok("abort")["structuredContent"]["importErrors"] == {"broken": "ValueError: no"}
        assert "broken" not in sys.modules
    finally:
        sys.modules.pop("broken", None)


KEEPING = NO_SPEC.replace("    __slots__ = ()\n", "    __slots__ = ()\n    _module = sys.modules[__name__]\n")
BARE = "import sys, types\n\nsys.modules[__name__] = types.ModuleType(__name__)\n"


@pytest.mark.parametrize("text, held", [(KEEPING, "types.ModuleType('stand_in')"),
                                        (KEEPING, "sys.modules['stand_in']._module"),
                                        (BARE, "stand_in")], ids=["another", "its-own", "bare"])
def test_a_workspace_module_of_its_name_fails_no_later_call(client, image, text, held):
    # Each execute_code's end compared a workspace module's loader with the live one's
    # __spec__.loader: a stand-in of no __spec__ (the view's since f0a1cfc) raised
    # AttributeError there, and every execute_code from then on failed.
    (image / "stand_in.py").write_text(text)
    client.ok("refresh")
    client.ok("execute_code", code=f"import sys, types\nimport stand_in\nm = {held}")
    assert client.ok("execute_code", code="m.__name__")["structuredContent"]["result"] == "'stand_in'"
