"""Which loaded modules import a changed one (View._importers_of, re-imported by every
refresh, abort, commit and class edit) is read from each module's tree once per text,
not by walking every loaded module's tree again on each of those calls; and it follows
the text: an import added or removed by an edit or a refresh counts at once."""

import ast

from test_tools_support import views, write_image  # noqa: F401  (fixtures)

FILES = {
    "pkg/__init__.py": "",
    "pkg/base.py": "class Base:\n    def who(self):\n        return 'base'\n",
    "pkg/user.py": "from .base import Base\n\n\nclass User(Base):\n    pass\n",
    "pkg/loner.py": "class Loner:\n    pass\n",
    "pkg/other.py": "X = 1\n",
}


def commit_from(views, image, name, module, old, new):
    other = views(image, name, install=False)
    other.set_source(module, other.source(module).replace(old, new), live=False)
    other.commit()


def load_all(view):
    for name in ("pkg.base", "pkg.user", "pkg.loner", "pkg.other"):
        assert view.module(name) is not None


def test_a_refresh_walks_no_tree_of_a_module_whose_text_it_already_read(tmp_path, views, monkeypatch):
    image = write_image(tmp_path / "image", FILES)
    view = views(image, "a")
    load_all(view)
    commit_from(views, image, "b", "pkg.other", "X = 1", "X = 2")
    assert "pkg.other" in view.refresh().reloaded   # each loaded module's imports read once here
    unchanged = {id(view.tree(name)) for name in ("pkg.base", "pkg.user", "pkg.loner")}
    walked = []
    real_walk = ast.walk
    monkeypatch.setattr(ast, "walk", lambda node: walked.append(id(node)) or real_walk(node))
    commit_from(views, image, "c", "pkg.other", "X = 2", "X = 3")
    assert view.refresh().reloaded == ["pkg.other"]
    assert not unchanged & set(walked)


def test_an_import_added_or_removed_counts_at_once(tmp_path, views):
    image = write_image(tmp_path / "image", FILES)
    view = views(image, "a")
    load_all(view)
    commit_from(views, image, "b", "pkg.base", "'base'", "'base2'")
    assert view.refresh().reloaded == ["pkg.base", "pkg.user"]
    # loner comes to import base: a change of base now re-imports it too
    commit_from(views, image, "c", "pkg.loner", "class Loner:", "from pkg import base\n\n\nclass Loner:")
    assert view.refresh().reloaded == ["pkg.loner"]
    commit_from(views, image, "d", "pkg.base", "'base2'", "'base3'")
    assert view.refresh().reloaded == ["pkg.base", "pkg.loner", "pkg.user"]
    assert view.module("pkg.user").User().who() == "base3"
    # user stops importing base (an edit of this session's own): no longer re-imported with it
    view.set_source("pkg.user", "class User:\n    pass\n")
    commit_from(views, image, "e", "pkg.base", "'base3'", "'base4'")
    assert view.refresh().reloaded == ["pkg.base", "pkg.loner"]


def test_a_module_whose_re_import_fails_is_not_said_reloaded(tmp_path, views):
    image = write_image(tmp_path / "image", FILES)
    view = views(image, "a")
    load_all(view)
    commit_from(views, image, "b", "pkg.other", "X = 1", "X = 1 / 0")
    report = view.refresh()
    assert "ZeroDivisionError" in report.import_errors["pkg.other"]
    assert "pkg.other" not in report.reloaded
    commit_from(views, image, "c", "pkg.base", "class Base:", "1 / 0\n\n\nclass Base:")
    aborted = view.abort()   # every loaded module re-imported, base from the text committed since
    assert "ZeroDivisionError" in aborted.import_errors["pkg.base"]
    assert "pkg.base" not in aborted.reloaded and "pkg.loner" in aborted.reloaded
