"""End to end: image packages named like standard-library ones. The worker has loaded the
standard library's `json`, so the image's json/ is shadowed; it has not loaded `email`,
so the image's email/ is that name for the session. Either way a package is one side's
whole: no module of the other is imported into it. A standard-library module the image
holds a copy of under another name (vendored.enum) is the image's.
"""

import enum
import json
import numbers
import shutil
from pathlib import Path

import pytest

from test_e2e_image_tools import daemon, run  # noqa: F401  (the daemon fixture: on this module's image)
from test_e2e_tools import call_tool, error, structured

STDLIB_JSON = Path(json.__file__).parent


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    root = tmp_path_factory.mktemp("shadowed") / "image"
    shutil.copytree(STDLIB_JSON, root / "json", ignore=shutil.ignore_patterns("__pycache__"))
    with open(root / "json" / "tool.py", "a") as tool:
        tool.write("\nMARK = 'the image'\n")
    (root / "email").mkdir()
    (root / "email" / "__init__.py").write_text('"""The image\'s email."""\n')
    (root / "email" / "extra.py").write_text("MARK = 'the image'\n")
    (root / "vendored").mkdir()
    (root / "vendored" / "__init__.py").write_text("")
    shutil.copy(enum.__file__, root / "vendored" / "enum.py")
    (root / "vendored" / "levels.py").write_text("from vendored import enum\n\n\nclass Level(enum.Enum):\n"
                                                  "    LOW = 1\n\n    def label(self):\n        return self.name\n")
    shutil.copy(numbers.__file__, root / "numbers.py")   # not loaded by the worker: the image's
    return root


def test_a_re_import_that_drops_what_the_kernel_tied_to_an_image_module_says_so(c):
    # _decimal registers Decimal with the numbers.Number it imported, the image's; abort made a
    # new numbers without it, silently: isinstance False here, True in a new session.
    assert run(c, "import decimal, numbers\nisinstance(decimal.Decimal(1), numbers.Number)") == "True"
    aborted = call_tool(c, "abort", {})
    assert aborted["structuredContent"]["kernelTies"] == {
        "numbers": ["decimal.Decimal (registered with numbers.Number)"]}
    assert ("note: re-importing numbers made its classes anew, but the kernel's modules are not re-imported "
            "and stay tied to the old ones: decimal.Decimal (registered with numbers.Number)") \
        in aborted["content"][0]["text"]
    assert "kernelTies" not in structured(c, "refresh")   # numbers unchanged: not re-imported
    assert run(c, "import decimal, numbers\nisinstance(decimal.Decimal(1), numbers.Number)") == "False"


def test_a_shadowed_package_is_the_standard_librarys_whole(c, image):
    # `import json.tool` loaded the image's json/tool.py under the standard library's json.
    found = run(c, "import json.tool\njson.tool.__file__, getattr(json.tool, 'MARK', None)")
    assert found == repr((str(STDLIB_JSON / "tool.py"), None))
    not_loaded = structured(c, "list_test_classes")["notLoaded"]
    assert ("image module json.tool is shadowed: its package's name json belongs to the "
            "already-loaded kernel module of that name, whose own modules are imported by that "
            "name; rename the image package json") in not_loaded


def test_a_package_the_image_holds_is_the_images_whole(c, image):
    assert run(c, "import email.extra\nemail.__file__, email.extra.MARK") == repr(
        (str(image / "email" / "__init__.py"), "the image"))
    said = run(c, "try:\n    import email.utils\nexcept ModuleNotFoundError as e:\n    r = str(e)\nr")
    assert said == repr("No module named 'email.utils'")


def test_every_browsing_tool_answers_a_shadowed_class_from_source_saying_so(c):
    # get_class_hierarchy answered kind other ("shadowed") where describe_class answered from source.
    said = ("image module json.decoder is shadowed: its package's name json belongs to the "
            "already-loaded kernel module of that name, whose own modules are imported by that "
            "name; rename the image package json")
    hierarchy = structured(c, "get_class_hierarchy", className="JSONDecodeError")
    assert (hierarchy["bases"], hierarchy["subclasses"], hierarchy["fromSource"]) == (["ValueError"], [], said)
    described = structured(c, "describe_class", className="JSONDecodeError")
    assert (described["bases"], described["fromSource"]) == (["ValueError"], said)
    methods = structured(c, "list_methods", className="JSONDecodeError")
    assert methods["fromSource"] == said and {"name": "__reduce__", "definedIn": "json.decoder.JSONDecodeError"} \
        in methods["methods"]["instance"]
    assert "class JSONDecodeError(ValueError):" in structured(c, "export_class_source",
                                                               className="JSONDecodeError")["source"]


def test_a_change_to_a_module_of_a_shadowed_package_is_refused_naming_the_package(c, image):
    # It said "json.tool is shadowed by a kernel module of that name" (remove_dictionary: "names
    # an already-loaded kernel module"): the kernel has no json.tool loaded; its json holds the name.
    why = ("image module json.tool is shadowed: its package's name json belongs to the already-loaded "
           "kernel module of that name, whose own modules are imported by that name; rename the image "
           "package json")
    assert error(c, "compile_class_definition", "refused", source="class Tool:\n    pass\n",
                 dictionaryName="json.tool") == f"no class can be defined in json.tool: {why}"
    assert error(c, "remove_dictionary", "refused", dictionaryName="json.tool") == (
        f"json.tool cannot be removed in a session: {why}")
    assert structured(c, "status")["uncommittedChanges"] is False


def test_an_enum_of_the_images_copy_of_enum_redefined_is_replaced_as_a_standard_librarys_is(c, image):
    # Its metaclass, the copy's EnumType, is no enum.EnumType: it was copied in place, which
    # stopped half done ("cannot reassign member 'LOW'", kind other), the live class given
    # the new member list while the source stayed as it was.
    redefined = structured(c, "compile_class_definition",
                           source="class Level(enum.Enum):\n    LOW = 1\n    HIGH = 2\n")
    assert (redefined["outcome"], redefined["carried"]) == ("replaced", ["label"])
    assert run(c, "from vendored.levels import Level\n[m.label() for m in Level], type(Level).__module__") == repr(
        (["LOW", "HIGH"], "vendored.enum"))
    assert "    HIGH = 2\n" in (image / "vendored" / "levels.py").read_text()
