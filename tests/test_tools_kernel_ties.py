"""A re-import of an image module the kernel tied its classes to (gsmcpd.image.kernel_ties):
the answer of the tool that re-imported it names the kernel's classes that lost their tie."""

import importlib
import sys

import pytest

from test_tools_support import client, image, views  # noqa: F401  (fixtures)

UNITS = ("import abc\n\n\nclass Quantity(abc.ABC):\n    pass\n\n\n"
         "Quantity.register(int)   # made again by the re-import: not lost\n")
# A module the kernel loads (not the image's), as decimal is, importing the image's module.
KERNEL_SIDE = ("import tied_units\n\n\nclass Meter:\n    pass\n\n\ntied_units.Quantity.register(Meter)\n\n\n"
               "class Foot(tied_units.Quantity):\n    pass\n")
# A module putting in its place in sys.modules an object with no dict (__slots__).
STAND_IN = ("import sys\n\n\nclass StandIn:\n    __slots__ = ()\n    __spec__ = __spec__\n\n\n"
            "sys.modules[__name__] = StandIn()\n")


@pytest.fixture
def kernel_side(tmp_path):
    (tmp_path / "kernel_side_ties.py").write_text(KERNEL_SIDE)
    sys.path.insert(0, str(tmp_path))
    try:
        yield lambda: importlib.import_module("kernel_side_ties")
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("kernel_side_ties", None)


def test_a_re_import_names_the_kernels_classes_tied_to_the_old_classes_alone(client, image, kernel_side):
    (image / "tied_units.py").write_text(UNITS)
    (image / "other_units.py").write_text("from tied_units import Quantity\n\n\nclass Yard(Quantity):\n    pass\n")
    client.ok("refresh")
    kernel_side()
    client.ok("execute_code", code="import other_units, tied_units\n\n\nclass Mine(tied_units.Quantity):\n    pass\n")
    aborted = client.ok("abort")
    # Not the image's Yard (re-imported with it), the workspace's Mine, nor int (registered again).
    assert aborted["structuredContent"]["kernelTies"] == {"tied_units": [
        "kernel_side_ties.Foot (a subclass of tied_units.Quantity)",
        "kernel_side_ties.Meter (registered with tied_units.Quantity)"]}
    assert ("note: re-importing tied_units made its classes anew, but the kernel's modules are not "
            "re-imported and stay tied to the old ones") in aborted["content"][0]["text"]
    assert "kernelTies" not in client.ok("abort")["structuredContent"]   # the old classes' ties: told once



def test_ties_of_a_module_failing_to_import_again_are_told_once_it_imports(client, image, kernel_side):
    # The note said the re-import "made its classes anew", isinstance with them False here
    # and True in a new session, which imports the module no more than this one; and named
    # int, which the module's own code registers again once it runs.
    (image / "tied_units.py").write_text(UNITS)
    client.ok("refresh")
    kernel_side()
    (image / "tied_units.py").write_text(UNITS + "raise RuntimeError('broken')\n")
    refreshed = client.ok("refresh")
    assert "import error in tied_units: RuntimeError: broken" in refreshed["content"][0]["text"]
    assert "kernelTies" not in refreshed["structuredContent"]
    assert "kernel's modules" not in refreshed["content"][0]["text"]
    (image / "tied_units.py").write_text(UNITS)
    fixed = client.ok("refresh")   # imported again, against the classes it makes now
    assert fixed["structuredContent"]["kernelTies"] == {"tied_units": [
        "kernel_side_ties.Foot (a subclass of tied_units.Quantity)",
        "kernel_side_ties.Meter (registered with tied_units.Quantity)"]}
    assert "kernelTies" not in client.ok("abort")["structuredContent"]   # told once


def test_ties_of_a_module_removed_are_not_told(client, image, kernel_side):
    (image / "tied_units.py").write_text(UNITS)
    client.ok("refresh")
    kernel_side()
    removed = client.ok("remove_dictionary", dictionaryName="tied_units")
    assert "kernelTies" not in removed["structuredContent"]
    assert "kernel's modules" not in removed["content"][0]["text"]


def test_a_class_that_cannot_be_read_is_skipped_and_the_others_ties_kept():
    import gc
    import types

    from gsmcpd.image import kernel_ties
    module = types.ModuleType("tied_units")

    class Unnamed:   # a heap type whose __module__ is gone: reading it raises
        pass
    del gc.get_referents(Unnamed.__dict__)[0]["__module__"]

    class Quantity:
        pass
    Quantity.__module__, Quantity.__qualname__ = "tied_units", "Quantity"
    foot = type("Foot", (Quantity,), {"__module__": "kernel_side"})
    module.Unnamed, module.Quantity = Unnamed, Quantity   # the one that raises read first
    assert kernel_ties.ties("tied_units", module, lambda name: name == "kernel_side") == \
        [(foot, "subclass", "Quantity")]


def test_a_module_standing_in_sys_modules_as_an_object_without_a_dict_is_reimported(client, image):
    # A module may put an object in its place in sys.modules; one of __slots__ has no
    # vars() to read classes from: it has no kernel ties to tell, and the re-import goes on.
    (image / "stand_in.py").write_text(STAND_IN)
    client.ok("refresh")
    client.ok("execute_code", code="import stand_in")
    aborted = client.ok("abort")
    assert "kernelTies" not in aborted["structuredContent"]
    client.ok("refresh")


def test_a_stand_in_without_a_dict_has_no_ties():
    from gsmcpd.image import kernel_ties

    class StandIn:
        __slots__ = ()
    assert kernel_ties.ties("stand_in", StandIn(), lambda name: True) == []


def _module(source: str):
    import types
    module = types.ModuleType("tied_units")
    exec(source, vars(module))
    return module


# Classes bound under another name than their __qualname__: by a factory (make.<locals>.Made),
# and by a name the module binds a second class statement's class to below (Old = Quantity).
FACTORY = ("import abc\n\n\ndef make():\n    class Made(abc.ABC):\n        pass\n    return Made\n\n\n"
           "Quantity = make()\nQuantity.register(int)   # made again by the re-import: not lost\n")
REBOUND = ("import abc\n\n\nclass Quantity(abc.ABC):\n    pass\n\n\nOld = Quantity\n\n\n"
           "class Quantity(abc.ABC):\n    pass\n\n\nQuantity.register(complex)\n")


def test_a_class_is_told_by_the_name_its_module_binds_it_under():
    # Looked up by __qualname__, a factory's class was never found in the new module: what
    # its own code registers again (int) was named lost, and named as make.<locals>.Made.
    from gsmcpd.image import kernel_ties
    old = _module(FACTORY)
    tied = kernel_ties.ties("tied_units", old, lambda name: True)
    assert tied == [(int, "registered", "Quantity")]
    assert kernel_ties.lost("tied_units", tied, _module(FACTORY)) == []
    old.Quantity.register(float)   # as the kernel would
    assert kernel_ties.lost("tied_units", kernel_ties.ties("tied_units", old, lambda name: True),
                            _module(FACTORY)) == ["builtins.float (registered with tied_units.Quantity)"]


def test_a_class_whose_qualname_names_another_class_of_its_module_is_told_by_its_own_name():
    # Old's __qualname__ is Quantity, the second class's name: the kernel's registration with
    # Old was looked for on the new Quantity, which its module's code registers complex with.
    from gsmcpd.image import kernel_ties
    old = _module(REBOUND)
    old.Old.register(complex)   # as the kernel would, with the first class
    tied = kernel_ties.ties("tied_units", old, lambda name: True)
    assert sorted(tied, key=repr) == [(complex, "registered", "Old"), (complex, "registered", "Quantity")]
    assert kernel_ties.lost("tied_units", tied, _module(REBOUND)) == \
        ["builtins.complex (registered with tied_units.Old)"]


def test_a_class_bound_under_two_names_is_told_once_by_its_class_statements_name():
    from gsmcpd.image import kernel_ties
    source = "import abc\n\n\nclass Quantity(abc.ABC):\n    pass\n\n\nAlias = Quantity\n"
    old = _module(source)
    old.Quantity.register(float)
    tied = kernel_ties.ties("tied_units", old, lambda name: True)
    assert tied == [(float, "registered", "Quantity")]
    assert kernel_ties.lost("tied_units", tied, _module(source)) == \
        ["builtins.float (registered with tied_units.Quantity)"]


# A kernel module whose classes tied to the image's are a factory's (make.<locals>.Made): one
# it binds (Meter), one it does not (told by its __qualname__, though Unbound has that too).
KERNEL_FACTORY = ("import tied_units\n\n\ndef make():\n    class Made:\n        pass\n    return Made\n\n\n"
                  "Meter = make()\ntied_units.Quantity.register(Meter)\nUnbound = make()\n"
                  "tied_units.Quantity.register(make())\n")


def test_a_kernel_class_is_told_by_the_name_its_module_binds_it_under(tmp_path, monkeypatch):
    # It was told by its __qualname__: kernel_factory_ties.make.<locals>.Made, both.
    from gsmcpd.image import kernel_ties
    units = _module(UNITS)
    (tmp_path / "kernel_factory_ties.py").write_text(KERNEL_FACTORY)
    monkeypatch.setitem(sys.modules, "tied_units", units)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "kernel_factory_ties", raising=False)   # restored: popped after
    importlib.import_module("kernel_factory_ties")
    tied = kernel_ties.ties("tied_units", units, lambda name: name == "kernel_factory_ties")
    assert kernel_ties.lost("tied_units", tied, None) == [
        "kernel_factory_ties.Meter (registered with tied_units.Quantity)",
        "kernel_factory_ties.make.<locals>.Made (registered with tied_units.Quantity)"]


# An image module the kernel's tied module imports: a mutation of its classes re-imports it.
BASE = "class Gone:\n    pass\n"


def test_ties_dropped_by_a_call_that_then_fails_are_told_in_its_error(client, image, kernel_side):
    # delete_class re-imports its module's importers, then commits: a conflict answered the
    # error alone, the next call cleared the ties, and the session's isinstance said False unsaid.
    (image / "base.py").write_text(BASE)
    (image / "tied_units.py").write_text("import base\n" + UNITS)
    client.ok("refresh")
    kernel_side()
    (image / "base.py").write_text(BASE + "# edited outside\n")
    failed = client.call("delete_class", className="base.Gone")
    assert failed["isError"] and failed["structuredContent"]["error"]["kind"] == "conflict"
    assert failed["structuredContent"]["kernelTies"] == {"tied_units": [
        "kernel_side_ties.Foot (a subclass of tied_units.Quantity)",
        "kernel_side_ties.Meter (registered with tied_units.Quantity)"]}
    assert failed["content"][0]["text"].startswith("commit failed: base.py was changed on disk")
    assert "note: re-importing tied_units made its classes anew" in failed["content"][0]["text"]
    assert "kernelTies" not in client.ok("abort")["structuredContent"]   # told once


def _server_with(view, handler):
    """A server over `view` with the core toolsets and `tied_call`, running `handler(view)`."""
    from gsmcpd.worker.registry import Tool
    from gsmcpd.worker.server import McpServer
    from gsmcpd.worker.toolset import Toolset, object_schema
    from gsmcpd.worker.toolsets import resolve_toolsets

    class Tied(Toolset):
        name = "tied"
        tool_names = ("tied_call",)

        def register(self, registry):
            registry.add(Tool("tied_call", "re-import, then fail", object_schema(), lambda a: handler(view)))
    return McpServer([*resolve_toolsets(), Tied], view=view, session_info={"user": "tester", "session_id": "a"})


def _call(server, tool):
    return server.handle({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                          "params": {"name": tool, "arguments": {}}})["result"]


TOLD = {"tied_units": ["kernel_side_ties.Foot (a subclass of tied_units.Quantity)",
                       "kernel_side_ties.Meter (registered with tied_units.Quantity)"]}


def _raising_after_a_reimport(image, views, kernel_side, error):
    """A server whose tool tied_call re-imports tied_units (its kernel ties made), then raises `error`."""
    def handler(view):
        view.abort()
        raise error
    (image / "tied_units.py").write_text(UNITS)
    server = _server_with(views(image), handler)
    kernel_side()
    return server


def test_ties_dropped_by_a_call_that_then_raises_are_told_in_its_error(image, views, kernel_side):
    server = _raising_after_a_reimport(image, views, kernel_side, RuntimeError("after the re-import"))
    failed = _call(server, "tied_call")
    assert failed["isError"] and failed["structuredContent"]["kernelTies"] == TOLD
    assert failed["content"][0]["text"].startswith("RuntimeError: after the re-import\nnote: re-importing tied_units")
    assert "kernelTies" not in _call(server, "status")["structuredContent"]


def test_ties_dropped_by_a_broken_call_are_left_to_the_breaks_answer(image, views, kernel_side):
    # The break's answer is the worker loop's, which tells them (test_worker_process); the
    # next call's start cleared them once.
    from gsmcpd.worker.toolset import SoftBreak

    server = _raising_after_a_reimport(image, views, kernel_side, SoftBreak("soft break"))
    with pytest.raises(SoftBreak):
        _call(server, "tied_call")
    assert server.view.lost_kernel_ties() == TOLD
    assert "kernelTies" not in _call(server, "status")["structuredContent"]
