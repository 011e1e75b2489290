"""docs/internals.md's package map names every module of the package, so a module added
without a row (three of today's were) is caught here rather than by a reader."""

import re

from helpers import REPO


def _mapped_paths():
    """The paths the map's first column names: one per backquoted entry, a bare name
    (`breaks.py` beside `gsmcpd/router/pending.py`) in the directory of the one before it."""
    text = (REPO / "docs" / "internals.md").read_text()
    table = text.split("## Package map", 1)[1].split("\n## ", 1)[0]
    paths = []
    for line in table.splitlines():
        if not line.startswith("| `gsmcpd/"):
            continue
        first = line.split("|")[1]
        directory = ""
        for entry in re.findall(r"`([^`]+)`", first):
            path = entry if "/" in entry else directory + entry
            directory = path.rsplit("/", 1)[0] + "/"
            paths.append(path)
    return paths


def _covered(module, mapped):
    for path in mapped:
        if path.endswith("/*"):   # a whole package: gsmcpd/auth/*
            if module.startswith(path[:-1]):
                return True
        elif path.endswith("/*.py"):
            if module.startswith(path[:-4]) and "/" not in module[len(path) - 4:]:
                return True
        elif path == module:
            return True
    return False


def test_every_module_of_the_package_has_a_row_in_the_package_map():
    mapped = _mapped_paths()
    modules = sorted(str(path.relative_to(REPO)) for path in (REPO / "gsmcpd").rglob("*.py")
                     if path.name != "__init__.py")
    assert [module for module in modules if not _covered(module, mapped)] == []


def test_every_module_the_package_map_names_exists():
    missing = [path for path in _mapped_paths() if "*" not in path and not (REPO / path).is_file()]
    assert missing == []


def test_the_readme_architecture_table_names_every_subpackage_and_top_level_module():
    # Its rows name packages (`gsmcpd/wire/`) and top-level modules; four modules added
    # since it was written (readypipe.py, exitcodes.py, knob_words.py, raised.py) had none.
    text = (REPO / "README.md").read_text()
    table = text.split("## Architecture", 1)[1].split("\n## ", 1)[0]
    named = set()
    for line in table.splitlines():
        if line.startswith("| `gsmcpd/"):
            first = line.split("|")[1]
            named.update(entry.removeprefix("gsmcpd/") for entry in re.findall(r"`([^`]+)`", first))
    package = REPO / "gsmcpd"
    wanted = {f"{path.name}/" for path in package.iterdir() if (path / "__init__.py").is_file()}
    wanted |= {path.name for path in package.glob("*.py") if path.name != "__init__.py"}
    assert sorted(wanted - named) == []
