"""A module text is parsed once for all the checks of one edit (gsmcpd.image.parsing):
a big module's edit parsed it a dozen times. The shared tree must follow the text: an
edit, another session's commit brought in by refresh, or an abort gives a new one.
The cyclic collector does not run while a text is parsed (its tree holds no cycle; a
session's first image-wide call parses every module)."""

import ast
import gc

import pytest

from gsmcpd.image import parsing
from test_tools_support import Client, image, views, write_image  # noqa: F401  (fixtures)

BIG_METHODS = 400   # some 20,000 characters: above parsing.SMALLEST_KEPT


def big_module(methods=BIG_METHODS, extra=""):
    body = "".join(f"    def op{k}(self, x):\n        return x + {k}\n\n" for k in range(methods))
    return f"class Big:\n{body}{extra}"


@pytest.fixture(autouse=True)
def no_kept_trees():
    parsing.forget()
    yield
    parsing.forget()


def test_the_same_big_text_is_parsed_once_and_a_different_one_anew():
    text = big_module()
    assert len(text) >= parsing.SMALLEST_KEPT
    tree = parsing.parse(text)
    assert parsing.parse(str(text[:10] + text[10:])) is tree   # an equal text, not the same object
    other = parsing.parse(big_module(extra="    def more(self):\n        return 1\n"))
    assert other is not tree
    assert [n.name for n in other.body[0].body][-1] == "more"
    assert ast.dump(parsing.parse(text)) == ast.dump(ast.parse(text))


def test_a_small_text_is_not_kept():
    assert parsing.parse("x = 1\n") is not parsing.parse("x = 1\n")


def test_a_text_that_does_not_parse_raises_every_time_and_is_not_kept():
    broken = big_module() + "def (:\n"
    for _ in range(2):
        with pytest.raises(SyntaxError):
            parsing.parse(broken)
    assert broken not in parsing._trees


def test_only_the_last_few_texts_are_kept():
    texts = [big_module(extra=f"    v{i} = {i}\n") for i in range(parsing.KEPT + 1)]
    first = parsing.parse(texts[0])
    for text in texts[1:]:
        parsing.parse(text)
    assert len(parsing._trees) == parsing.KEPT
    assert parsing.parse(texts[0]) is not first          # the oldest was let go
    assert parsing.parse(texts[-1]) is parsing._trees[texts[-1]]


@pytest.fixture
def collections_in_parse(monkeypatch):
    """The generations the cyclic collector collected while ast.parse ran."""
    collected, parsing_now = [], []
    real = ast.parse

    def marked(*args, **kwargs):
        parsing_now.append(True)
        try:
            return real(*args, **kwargs)
        finally:
            parsing_now.pop()

    def seen(phase, info):
        if phase == "start" and parsing_now:
            collected.append(info["generation"])

    monkeypatch.setattr(ast, "parse", marked)
    assert gc.isenabled()
    gc.callbacks.append(seen)
    yield collected
    gc.callbacks.remove(seen)


def test_the_collector_does_not_run_while_a_text_is_parsed(collections_in_parse):
    small = "".join(f"x{k} = [{k}, ({k}, {k})]\n" for k in range(300))   # thousands of nodes
    assert len(small) < parsing.SMALLEST_KEPT
    for text in (big_module(), small):
        assert isinstance(parsing.parse(text), ast.Module)
    assert collections_in_parse == []
    assert gc.isenabled()
    with pytest.raises(SyntaxError):
        parsing.parse(big_module(extra="def (:\n"))
    assert gc.isenabled()


def test_listing_every_class_of_an_image_parses_each_module_with_the_collector_paused(
        tmp_path, views, collections_in_parse):
    files = {f"m{n}.py": big_module(methods=100 + n) for n in range(6)}
    client = Client(views(write_image(tmp_path / "image", files)))
    listed = client.ok("list_all_classes")["structuredContent"]
    assert listed["imageCount"] == 6 and listed["classes"][:6] == [f"m{n}.Big" for n in range(6)]
    assert collections_in_parse == [] and gc.isenabled()


def count_parses(monkeypatch, big_text_start):
    """How often ast.parse is called on a text starting `big_text_start`."""
    parsed = []
    real = ast.parse

    def counting(source, *args, **kwargs):
        if isinstance(source, str) and source.startswith(big_text_start):
            parsed.append(source)
        return real(source, *args, **kwargs)

    monkeypatch.setattr(ast, "parse", counting)
    return parsed


def test_an_edit_of_a_big_module_parses_each_of_its_texts_once(tmp_path, views, monkeypatch):
    image = write_image(tmp_path / "image", {"huge/__init__.py": "", "huge/big.py": big_module()})
    client = Client(views(image))
    client.ok("get_method_source", className="huge.big.Big", selector="op5")   # the view's tree made
    parsed = count_parses(monkeypatch, "class Big:")
    client.ok("compile_method", className="huge.big.Big", source="def op5(self, x):\n    return x * 5\n")
    assert len(parsed) == len(set(parsed)) <= 2     # the old text (maybe) and the new one
    client.ok("compile_method", className="huge.big.Big", source="def op6(self, x):\n    return x * 6\n")
    assert len(parsed) == len(set(parsed)) <= 3     # the previous edit's text was kept


def test_edits_refresh_and_abort_of_a_big_module_each_see_its_current_text(tmp_path, views):
    image = write_image(tmp_path / "image", {"huge/__init__.py": "", "huge/big.py": big_module()})
    ours = Client(views(image, "ours"))

    def source_of(selector):
        return ours.ok("get_method_source", className="huge.big.Big",
                       selector=selector)["structuredContent"]["source"]

    ours.ok("compile_method", className="huge.big.Big", source="def op1(self, x):\n    return 'ours'\n")
    assert "'ours'" in source_of("op1")
    assert ours.view.module("huge.big").Big().op1(0) == "ours"
    theirs = views(image, "theirs", install=False)   # opened on our commit
    theirs.set_source("huge.big", theirs.source("huge.big").replace("return x + 2\n", "return 'theirs'\n"),
                      live=False)
    theirs.commit()
    assert "x + 2\n" in source_of("op2")                # not brought in yet
    ours.ok("refresh")
    assert "'theirs'" in source_of("op2") and "'ours'" in source_of("op1")
    assert ours.view.module("huge.big").Big().op2(0) == "theirs"
    ours.ok("compile_method", className="huge.big.Big", source="def op3(self, x):\n    return 'again'\n")
    text = (image / "huge" / "big.py").read_text()
    assert "'ours'" in text and "'theirs'" in text and "'again'" in text
    ours.view.set_source("huge.big", text.replace("'again'", "'uncommitted'"), live=False)
    assert "'uncommitted'" in source_of("op3")
    ours.ok("abort")
    assert "'again'" in source_of("op3")
    assert ours.view.module("huge.big").Big().op3(0) == "again"
