"""End to end: a re-import of an image module the kernel's classes are tied to, through a
real daemon (gsmcpd.image.kernel_ties): what the answer says of those ties."""

import contextlib

from helpers import Daemon, open_session
from test_e2e_tools import call_tool, error, structured
from test_tools_kernel_ties import BASE, FACTORY, KERNEL_SIDE, STAND_IN, UNITS
from test_tools_support import write_image


@contextlib.contextmanager
def tied_session(tmp_path, units, others=None, env=None):
    """A session on a daemon (given `env` too) whose image's tied_units.py holds `units` (and
    its files `others`, path -> text), the kernel's kernel_side_ties (a subclass and a
    registration) tied to its Quantity; and the image."""
    image = write_image(tmp_path / "image", {"tied_units.py": units, **(others or {})})
    (tmp_path / "kernel" / "kernel_side_ties.py").parent.mkdir()
    (tmp_path / "kernel" / "kernel_side_ties.py").write_text(KERNEL_SIDE)
    with Daemon(tmp_path, env={"GS_MCP_IMAGE": str(image), **(env or {})}) as daemon:
        c = open_session(daemon)
        structured(c, "execute_code", code=f"import sys\nsys.path.insert(0, {str(tmp_path / 'kernel')!r})\n"
                                            "import kernel_side_ties")
        yield c, image
        c.close()


def test_ties_of_a_module_that_fails_to_import_again_are_told_once_it_imports(tmp_path):
    # The refresh leaving it failing said its re-import "made its classes anew", where a new
    # session says True to isinstance: no session imports it then. Once it imports, nothing.
    with tied_session(tmp_path, UNITS) as (c, image):
        (image / "tied_units.py").write_text(UNITS + "raise RuntimeError('broken')\n")
        broken = structured(c, "refresh")
        assert broken["importErrors"] == {"tied_units": "RuntimeError: broken"} and "kernelTies" not in broken
        (image / "tied_units.py").write_text(UNITS)
        assert structured(c, "refresh")["kernelTies"] == {"tied_units": [
            "kernel_side_ties.Foot (a subclass of tied_units.Quantity)",
            "kernel_side_ties.Meter (registered with tied_units.Quantity)"]}


def test_a_class_that_cannot_be_read_leaves_the_other_classes_ties_told(tmp_path):
    # A class whose __module__ is gone (a heap type made so) raised as its ties were read,
    # and the module's other classes' ties went untold with it.
    unnamed = ("import gc\n\n\nclass Unnamed:\n    pass\n\n\n"
               "del gc.get_referents(Unnamed.__dict__)[0]['__module__']\n")
    with tied_session(tmp_path, unnamed + UNITS) as (c, image):
        (image / "tied_units.py").write_text(unnamed + UNITS + "# changed\n")
        assert structured(c, "refresh")["kernelTies"] == {"tied_units": [
            "kernel_side_ties.Foot (a subclass of tied_units.Quantity)",
            "kernel_side_ties.Meter (registered with tied_units.Quantity)"]}


def test_abort_and_refresh_go_on_past_a_module_standing_in_as_an_object_without_a_dict(tmp_path):
    # Its re-import read vars() of the stand-in for classes and a package's __path__: a
    # TypeError answered every abort and refresh of the session.
    image = write_image(tmp_path / "image", {"stand_in.py": STAND_IN})
    with Daemon(tmp_path, env={"GS_MCP_IMAGE": str(image)}) as daemon:
        c = open_session(daemon)
        structured(c, "execute_code", code="import stand_in")
        assert "kernelTies" not in structured(c, "abort")
        structured(c, "refresh")
        c.close()


def test_the_tools_answer_of_a_module_standing_in_as_an_object_without_a_dict(tmp_path):
    # vars() of the stand-in raised TypeError out of browse, test, edit and execute_code
    # calls (after a workspace binding one of its classes, every later execute_code).
    from test_tools_stand_in_module import NAMED, SLOTTED, USER
    image = write_image(tmp_path / "image", {"stand_in.py": SLOTTED, "user.py": USER})
    with Daemon(tmp_path, env={"GS_MCP_IMAGE": str(image)}) as daemon:
        c = open_session(daemon)
        structured(c, "execute_code", code="from stand_in import Widget\nw = Widget()")
        assert structured(c, "execute_code", code="w.spin()")["result"] == "1"
        assert structured(c, "describe_class", className="stand_in.Widget")["fromSource"].startswith(NAMED)
        assert structured(c, "list_dictionary_entries", dictionaryName="stand_in")["note"].startswith(NAMED)
        assert structured(c, "describe_class", className="user.Mine")["bases"] == ["stand_in.Widget"]
        assert error(c, "run_test_class", "other", className="stand_in.WidgetTest").startswith(NAMED)
        assert error(c, "compile_method", "refused", className="stand_in.Widget",
                     source="def spin(self):\n    return 7\n").startswith(NAMED)
        structured(c, "compile_method", className="user.Mine", source="def spin(self):\n    return 6\n")
        assert structured(c, "execute_code", code="import user\nuser.Mine().spin()")["result"] == "6"
        c.close()


def test_a_factorys_class_is_told_by_the_name_its_module_binds_it_under(tmp_path):
    # Found by __qualname__ (make.<locals>.Made), the new class was never found: int, which
    # the module's own code registers again, was named lost, all named make.<locals>.Made.
    with tied_session(tmp_path, FACTORY) as (c, image):
        (image / "tied_units.py").write_text(FACTORY + "# changed\n")
        assert structured(c, "refresh")["kernelTies"] == {"tied_units": [
            "kernel_side_ties.Foot (a subclass of tied_units.Quantity)",
            "kernel_side_ties.Meter (registered with tied_units.Quantity)"]}


def test_ties_dropped_by_a_call_that_then_fails_are_told_in_its_error(tmp_path):
    # delete_class re-imports the importers of its module (tied_units), then commits: the
    # conflict's answer said nothing of them, and the next call's start cleared them.
    with tied_session(tmp_path, "import base\n" + UNITS, {"base.py": BASE}) as (c, image):
        (image / "base.py").write_text(BASE + "# edited outside\n")
        failed = call_tool(c, "delete_class", {"className": "base.Gone"})
        assert failed["isError"] and failed["structuredContent"]["error"]["kind"] == "conflict"
        assert failed["structuredContent"]["kernelTies"] == {"tied_units": [
            "kernel_side_ties.Foot (a subclass of tied_units.Quantity)",
            "kernel_side_ties.Meter (registered with tied_units.Quantity)"]}
        assert "note: re-importing tied_units made its classes anew" in failed["content"][0]["text"]
        assert "kernelTies" not in structured(c, "abort")


def test_ties_dropped_by_a_call_its_deadline_broke_are_told_in_the_deadlines_answer(tmp_path):
    # refresh re-imported tied_units, then its importer, which ran past the deadline: the
    # -32001 answer said nothing of the ties, the next call's answer did.
    slow = "import tied_units\nimport time\n\nif getattr(tied_units, 'SLOW', False):\n    time.sleep(60)\n"
    with tied_session(tmp_path, UNITS, {"slow_user.py": slow},
                      env={"GS_MCP_REQUEST_TIMEOUT": "3", "GS_MCP_BREAK_GRACE": "5"}) as (c, image):
        structured(c, "execute_code", code="import slow_user")
        (image / "tied_units.py").write_text(UNITS + "SLOW = True\n")
        error = c.call("tools/call", {"name": "refresh", "arguments": {}}).json()["error"]
        assert error["code"] == -32001 and error["data"] == {"kernelTies": {"tied_units": [
            "kernel_side_ties.Foot (a subclass of tied_units.Quantity)",
            "kernel_side_ties.Meter (registered with tied_units.Quantity)"]}}
        assert error["message"].startswith("request timed out after 3s (GS_MCP_REQUEST_TIMEOUT) and was "
                                           "interrupted: soft break\nnote: re-importing tied_units made "
                                           "its classes anew"), error
        assert "kernelTies" not in structured(c, "status")   # told once


def test_a_module_standing_in_as_an_object_with_no_spec_is_told_so_not_shadowed(tmp_path):
    # With no __spec__ naming the view's loader, it was taken for a kernel module of its name:
    # "shadowed by the already-loaded kernel module of that name; rename the image module".
    from test_tools_stand_in_module import NAMED, NO_SPEC, USER
    image = write_image(tmp_path / "image", {"stand_in.py": NO_SPEC, "user.py": USER})
    with Daemon(tmp_path, env={"GS_MCP_IMAGE": str(image)}) as daemon:
        c = open_session(daemon)
        structured(c, "execute_code", code="import stand_in, user")
        assert structured(c, "describe_class", className="stand_in.Widget")["fromSource"].startswith(NAMED)
        assert error(c, "compile_method", "refused", className="stand_in.Widget",
                     source="def spin(self):\n    return 7\n").startswith(NAMED)
        assert error(c, "run_test_class", "other", className="stand_in.WidgetTest").startswith(NAMED)
        assert structured(c, "abort")["reloaded"] == ["stand_in", "user"]   # the view's: imported anew
        c.close()


def test_a_name_code_or_its_own_import_put_another_object_in_is_told_so_not_shadowed(tmp_path):
    # Both were said "shadowed by the already-loaded kernel module of that name; rename the
    # image module": for alias, no kernel module of that name exists; abort left plain's stand-in.
    from test_tools_stand_in_module import PLAIN, REPLACED
    image = write_image(tmp_path / "image", {"plain.py": PLAIN,
                                             "alias.py": "import json, sys\nsys.modules[__name__] = json\n"})
    with Daemon(tmp_path, env={"GS_MCP_IMAGE": str(image)}) as daemon:
        c = open_session(daemon)
        structured(c, "execute_code", code="import sys\nclass S: __slots__=()\nimport plain\nsys.modules['plain'] = S()")
        assert structured(c, "describe_class", className="plain.A")["fromSource"] == REPLACED
        assert structured(c, "list_dictionary_entries", dictionaryName="alias")["note"].startswith(
            "image module alias is not the view's: its import put the kernel module json in its place")
        assert structured(c, "abort")["reloaded"] == ["plain"]
        assert structured(c, "describe_class", className="plain.A")["bases"] == ["object"]
        c.close()


def test_a_submodule_standing_in_is_no_entry_of_its_package(tmp_path):
    # The import system bound the stand-in on its package, as it binds a module, and the
    # package listed it as an entry ('sub (global)'), a module never.
    from test_tools_stand_in_module import NO_SPEC
    image = write_image(tmp_path / "image", {"pkg/__init__.py": "", "pkg/sub.py": NO_SPEC})
    with Daemon(tmp_path, env={"GS_MCP_IMAGE": str(image)}) as daemon:
        c = open_session(daemon)
        structured(c, "execute_code", code="import pkg.sub")
        assert structured(c, "list_dictionary_entries", dictionaryName="pkg")["entries"] == []
        c.close()


def test_a_failing_module_code_stubbed_in_sys_modules_is_told_so_and_taken_back_by_abort(tmp_path):
    # Its import having failed, the view had not "run" it: the stub was said a kernel module
    # shadowing it ('rename the image module'), and abort left it for the next import to find.
    image = write_image(tmp_path / "image", {"broken.py": "raise ValueError('no')\n"})
    with Daemon(tmp_path, env={"GS_MCP_IMAGE": str(image)}) as daemon:
        c = open_session(daemon)
        error(c, "execute_code", "other", code="import broken")
        structured(c, "execute_code", code="import sys, types\nsys.modules['broken'] = types.ModuleType('stub')")
        assert structured(c, "list_dictionary_entries", dictionaryName="broken")["note"].startswith(
            "image module broken is not the view's: code run in this session put a 'module' object in its place")
        assert structured(c, "abort")["importErrors"] == {"broken": "ValueError: no"}
        assert "ValueError: no" in error(c, "execute_code", "other", code="import broken")
        c.close()


def test_a_workspace_holding_a_module_standing_in_with_no_spec_fails_no_later_call(tmp_path):
    # Each execute_code's end read the live stand-in's __spec__.loader: a bare module put in
    # the module's place (its __spec__ None) failed that call and every later one.
    from test_tools_stand_in_module import BARE
    image = write_image(tmp_path / "image", {"stand_in.py": BARE})
    with Daemon(tmp_path, env={"GS_MCP_IMAGE": str(image)}) as daemon:
        c = open_session(daemon)
        structured(c, "execute_code", code="import stand_in\nm = stand_in")
        assert structured(c, "execute_code", code="m.__name__")["result"] == "'stand_in'"
        c.close()
