"""A package's `__main__` is a program (`python -m app`): importing it runs it (pip's vendored
certifi's parses the worker's argv and exits 2). The tools never import one the session's
code has not (the whole-image calls load every other module); its classes are read from
source, as a failing module's are, and code may still import it."""

import pytest

from test_tools_support import Client, views, write_image  # noqa: F401  (fixtures)

# Run, it leaves a line in the file RAN names, then exits 2 as certifi's does on a bad argv.
PROGRAM = ('import sys\nopen({ran!r}, "a").write("ran\\n")\nfrom app import Base\n\n\n'
           'class Cli(Base):\n    pass\n\n\nsys.exit(2)\n')
TEST = "import unittest\n\n\nclass TestApp(unittest.TestCase):\n    def test_ok(self):\n        pass\n"


def files(ran):
    return {"app/__init__.py": "class Base:\n    pass\n", "app/__main__.py": PROGRAM.format(ran=str(ran)),
            "app/test_app.py": TEST}


NOT_IMPORTED = ("image module app.__main__ is a program (python -m app), which the tools do not import, "
                "as that runs it: its classes are read from source (execute_code `import app.__main__` runs it)")


def runs_of(ran) -> int:
    return len(ran.read_text().splitlines()) if ran.exists() else 0


@pytest.fixture
def ran(tmp_path):
    return tmp_path / "ran.txt"


@pytest.fixture
def client(tmp_path, views, ran):
    return Client(views(write_image(tmp_path / "image", files(ran))))


def test_whole_image_calls_do_not_run_a_program_and_still_list_its_classes_from_source(client, ran):
    assert client.ok("get_class_hierarchy", className="app.Base")["structuredContent"]["subclasses"] == []
    assert "app.__main__.Cli" in str(client.ok("list_all_classes")["structuredContent"])
    assert client.ok("list_test_classes")["structuredContent"]["notLoaded"] == [NOT_IMPORTED]
    client.ok("search_method_source", pattern="pass")
    client.ok("find_references_to", name="Base")
    client.ok("find_implementors", selector="test_ok")
    definition = client.ok("get_class_definition", className="app.__main__.Cli")["structuredContent"]
    assert definition["definition"].startswith("class Cli(Base):")
    assert runs_of(ran) == 0 and "app.__main__" not in client.view.import_errors


def test_a_class_of_a_program_is_browsed_from_source_and_code_may_still_run_it(client, ran):
    hierarchy = client.ok("get_class_hierarchy", className="app.__main__.Cli")
    assert NOT_IMPORTED in hierarchy["content"][0]["text"]
    assert runs_of(ran) == 0
    ran_it = client.call("execute_code", code="import app.__main__")
    assert "SystemExit" in str(ran_it) and runs_of(ran) == 1


def test_a_program_the_sessions_code_imported_is_re_imported_as_any_loaded_module(tmp_path, views, ran):
    program = {**files(ran), "app/__main__.py": 'open({ran!r}, "a").write("ran\\n")\n'.format(ran=str(ran))}
    client = Client(views(write_image(tmp_path / "image", program)))
    client.ok("execute_code", code="import app.__main__")
    assert client.ok("abort")["structuredContent"]["reloaded"] == ["app", "app.__main__"]
    assert runs_of(ran) == 2


def test_a_program_fixed_after_its_re_import_failed_is_no_longer_named_failing(tmp_path, views):
    # Its failure came from a re-import (the session's code had loaded it); refresh did not
    # try it again, and named the error the fix had removed.
    image = write_image(tmp_path / "image", {"app/__init__.py": "", "app/__main__.py": "X = 1\n"})
    client = Client(views(image))
    client.ok("execute_code", code="import app.__main__")
    (image / "app/__main__.py").write_text("raise ValueError('broken')\n")
    assert client.ok("refresh")["structuredContent"]["importErrors"] == {"app.__main__": "ValueError: broken"}
    (image / "app/__main__.py").write_text("X = 2\n")
    assert client.ok("refresh")["structuredContent"]["importErrors"] == {}
    assert "app.__main__" not in client.view.import_errors
    assert client.ok("execute_code", code="import app.__main__\napp.__main__.X")["structuredContent"]["result"] == "2"


def test_a_class_defined_in_a_program_is_said_to_be_changed_in_source_only_as_a_program(client, ran):
    # Said "(app.__main__ does not import)", which it does.
    said = client.ok("compile_class_definition", dictionaryName="app.__main__", source="class Fresh:\n    pass\n")
    assert said["content"][0]["text"].startswith(
        "changed app.__main__.Fresh in source only (app.__main__ is a program, which the tools do not "
        "import, as that runs it)")
    assert runs_of(ran) == 0


def test_a_program_is_removed_as_any_module_without_running_it(tmp_path, views, ran):
    # Refused as a dunder name: no tool could remove a package's __main__.py.
    image = write_image(tmp_path / "image", files(ran))
    client = Client(views(image))
    said = client.ok("remove_dictionary", dictionaryName="app.__main__")["structuredContent"]
    assert said["removed"] == ["app.__main__"] and runs_of(ran) == 0
    assert not (image / "app/__main__.py").exists() and (image / "app/__init__.py").exists()
    assert "app.__main__" not in client.ok("list_dictionaries")["structuredContent"]["dictionaries"]


def test_only_a_packages_last_main_part_names_a_program_to_remove(client):
    assert "__init__ is a dunder name" in client.error("remove_dictionary", "invalidParams",
                                                       dictionaryName="app.__init__")
    assert "__main__ is a dunder name" in client.error("remove_dictionary", "invalidParams",
                                                       dictionaryName="app.__main__.cli")
    assert "__main__ is a dunder name" in client.error("add_dictionary", "invalidParams",
                                                       dictionaryName="app.__main__")


def test_a_program_a_commit_fixes_is_not_named_failing_by_it(tmp_path, views):
    # The commit asked for the committed program without again=True, which leaves a program
    # untried: it answered importErrors {app.__main__: the error the change had removed}.
    program = "from app import Base\n\n\nclass Cli(Base):\n    X = 1\n"
    image = write_image(tmp_path / "image", {"app/__init__.py": "class Base:\n    pass\n", "app/__main__.py": program})
    client = Client(views(image))
    client.ok("execute_code", code="import app.__main__")
    (image / "app/__main__.py").write_text("from app import Base\n\n\nclass Cli(Base):\n    X = undefined_name\n")
    assert "app.__main__" in client.ok("refresh")["structuredContent"]["importErrors"]
    fixed = client.ok("compile_class_definition", source="class Cli(Base):\n    X = 2\n", dictionaryName="app.__main__")
    assert fixed["structuredContent"]["committed"] == ["app.__main__"]
    assert "importErrors" not in fixed["structuredContent"] and "import error" not in fixed["content"][0]["text"]
    assert "app.__main__" not in client.view.import_errors
    # It said "changed app.__main__.Cli in source only (app.__main__ does not import)":
    # so it was before the commit, which re-imported it.
    assert fixed["content"][0]["text"].startswith(
        "changed app.__main__.Cli in source, and app.__main__, which did not import, imports now "
        "(re-imported as committed): app.__main__.Cli is live; committed")
    result = client.ok("execute_code", code="import app.__main__\napp.__main__.Cli.X")
    assert result["structuredContent"]["result"] == "2"


def test_a_module_a_class_definition_fixes_is_said_to_import_now(tmp_path, views):
    # Said "changed broken.Cli in source only (broken does not import)", the commit having
    # re-imported it, the class live.
    image = write_image(tmp_path / "image", {"broken.py": "class Cli:\n    X = undefined_name\n"})
    client = Client(views(image))
    assert client.view.module("broken") is None and "broken" in client.view.import_errors
    fixed = client.ok("compile_class_definition", source="class Cli:\n    X = 2\n", dictionaryName="broken")
    assert fixed["content"][0]["text"].startswith(
        "changed broken.Cli in source, and broken, which did not import, imports now "
        "(re-imported as committed): broken.Cli is live; committed")
    assert client.ok("execute_code", code="import broken\nbroken.Cli.X")["structuredContent"]["result"] == "2"


def test_a_module_still_failing_after_a_class_definition_is_said_not_to_import(tmp_path, views):
    image = write_image(tmp_path / "image", {"broken.py": "class Cli:\n    pass\n\n\nY = undefined_name\n"})
    client = Client(views(image))
    assert client.view.module("broken") is None
    said = client.ok("compile_class_definition", source="class Cli:\n    X = 2\n", dictionaryName="broken")
    assert said["content"][0]["text"].startswith("changed broken.Cli in source only (broken does not import)")
