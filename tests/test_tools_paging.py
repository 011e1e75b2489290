"""Every listing that grows with the image (dictionaries, one dictionary's classes or
entries, test classes, a class's subclasses) answers a page at a time, as list_all_classes does: the same
`offset`, the same `total`/`offset`/`nextOffset` fields, the same note
(gsmcpd.worker.paging; PAGE made small here so a small image crosses a page)."""

import pytest

from gsmcpd.worker import paging, tool_plans
from test_tools_support import FILES, Client, image, text, views, write_image  # noqa: F401  (fixtures)

SMALL = 3
BIG = "class Base:\n    pass\n\n\n" + "".join(f"class K{i}(Base):\n    pass\n\n\n" for i in range(4)) + "x = 1\n"
TESTS = "import unittest\n\n\n" + "".join(
    f"class T{i}Test(unittest.TestCase):\n    def test_a(self):\n        pass\n\n\n" for i in range(4))


@pytest.fixture
def client(tmp_path, views, monkeypatch):
    monkeypatch.setattr(paging, "PAGE", SMALL)
    # The built-in tools are made once per process (tool_plans), their offsets' descriptions
    # saying PAGE: made here with the small one, kept for this test only, not for the next.
    monkeypatch.setattr(tool_plans, "_plans", {})
    files = {**FILES, "big.py": BIG, "test_many.py": TESTS, "broken.py": "class B(:\n    def m(self): pass\n",
             "unloadable.py": "import no_such_module_xyz\n" + "".join(f"class U{i}:\n    pass\n" for i in range(4)),
             "subs.py": "from unloadable import U0\n\n\n" + "".join(f"class S{i}(U0):\n    pass\n" for i in range(4)),
             "nested.py": "from big import Base\n\n\nclass Holder:\n    class Inner(Base):\n        pass\n",
             "nested_src.py": "from unloadable import U0\n\n\nclass Holder:\n    class Deep:\n"
                              "        class Under(U0):\n            pass\n"}
    return Client(views(write_image(tmp_path / "image", files)))


def pages(client, tool, key, **arguments):
    """Every page of `tool` by following nextOffset, checking each page's fields and note."""
    listed, offset = [], 0
    while True:
        answer = client.ok(tool, **arguments, offset=offset)
        got = answer["structuredContent"]
        total = got["total"]
        assert got["offset"] == offset and len(got[key]) == min(SMALL, total - offset)
        end = offset + len(got[key])
        rest = f"; {total - end} more: call again with offset {end}" if end < total else ""
        assert text(answer).endswith(f"(showing {offset + 1}-{end} of {total} {tool_what[tool]}{rest})")
        listed += got[key]
        if end == total:
            assert "nextOffset" not in got
            return listed, total
        assert got["nextOffset"] == end
        offset = end


tool_what = {"list_dictionaries": "dictionaries", "list_classes": "classes",
             "list_dictionary_entries": "entries", "list_test_classes": "test classes",
             "get_class_hierarchy": "subclasses"}


def test_dictionaries_are_listed_a_page_at_a_time(client):
    listed, total = pages(client, "list_dictionaries", "dictionaries")
    assert total == len(listed) > SMALL and listed[-1] == "builtins" and "big" in listed


def test_one_dictionarys_classes_are_listed_a_page_at_a_time(client):
    listed, total = pages(client, "list_classes", "classes", dictionaryName="big")
    assert listed == ["Base"] + [f"K{i}" for i in range(4)] and total == 5


def test_one_dictionarys_entries_are_listed_a_page_at_a_time(client):
    listed, total = pages(client, "list_dictionary_entries", "entries", dictionaryName="big")
    assert listed == [{"name": name, "kind": "class"} for name in ["Base", "K0", "K1", "K2", "K3"]] + [
        {"name": "x", "kind": "global"}]


def test_entries_read_from_source_are_listed_a_page_at_a_time(client):
    listed, total = pages(client, "list_dictionary_entries", "entries", dictionaryName="unloadable")
    assert listed == [{"name": f"U{i}", "kind": "class"} for i in range(4)] + [
        {"name": "no_such_module_xyz", "kind": "module"}]
    answer = client.ok("list_dictionary_entries", dictionaryName="broken")
    assert (answer["structuredContent"]["entries"], answer["structuredContent"]["total"]) == ([], 0)


def test_test_classes_are_listed_a_page_at_a_time(client):
    listed, total = pages(client, "list_test_classes", "testClasses")
    assert listed == ["test_many.T0Test", "test_many.T1Test", "test_many.T2Test", "test_many.T3Test",
                      "zoo.test_zoo.ZooTest"]
    first = client.ok("list_test_classes")
    # A broken module is still named on every page: what it holds is unknown.
    assert "(not loaded, so its tests are unknown" in text(first)


def test_a_classs_subclasses_are_listed_a_page_at_a_time(client):
    listed, total = pages(client, "get_class_hierarchy", "subclasses", className="big.Base")
    # A class nested in another is one too, by its dotted name, counted in the total.
    assert listed == [f"big.K{i}" for i in range(4)] + ["nested.Holder.Inner"] and total == 5
    first = client.ok("get_class_hierarchy", className="big.Base")
    assert text(first).startswith("superclasses: object > big.Base\nsubclasses: big.K0, big.K1, big.K2\n")


def test_subclasses_read_from_source_are_listed_a_page_at_a_time(client):
    listed, total = pages(client, "get_class_hierarchy", "subclasses", className="unloadable.U0")
    assert listed == ["nested_src.Holder.Deep.Under"] + [f"subs.S{i}" for i in range(4)] and total == 5


def test_an_offset_past_the_end_says_so(client):
    answer = client.ok("list_classes", dictionaryName="big", offset=9)
    assert text(answer) == "(showing none from offset 9 of 5 classes)"
    assert answer["structuredContent"] == {"dictionary": "big", "classes": [], "total": 5, "offset": 9}


def test_an_offset_past_the_end_of_an_empty_list_says_so_as_any_other(client):
    # Taken for the whole list, it said "fx defines no classes", the offset not echoed.
    assert paging.page_of([], {"offset": 2}, "classes") == paging.Page(
        [], {"total": 0, "offset": 2}, ["(showing none from offset 2 of 0 classes)"])
    assert paging.page_of([], {}, "classes") == paging.Page([], {"total": 0})
    answer = client.ok("list_classes", dictionaryName="zoo", offset=2)
    assert text(answer) == "(showing none from offset 2 of 0 classes)"
    assert answer["structuredContent"] == {"dictionary": "zoo", "classes": [], "total": 0, "offset": 2}


def test_an_offset_past_a_module_that_does_not_compile_says_so_in_the_text_too(client):
    # Its entries unknown (none listed), the offset was echoed in structuredContent alone.
    answer = client.ok("list_dictionary_entries", dictionaryName="broken", offset=2)
    assert text(answer).startswith("image module broken does not compile")
    assert text(answer).endswith("\n(showing none from offset 2 of 0 entries)")
    assert answer["structuredContent"]["offset"] == 2


@pytest.mark.parametrize("what, one", [("classes", "class"), ("subclasses", "subclass"),
                                       ("test classes", "test class"), ("dictionaries", "dictionary"),
                                       ("entries", "entry")])
def test_a_listing_of_one_names_it_in_the_singular(what, one):
    # It said "of 1 test classes", "of 1 subclasses".
    assert paging.page_of(["x"], {"offset": 5}, what).note == [f"(showing none from offset 5 of 1 {one})"]
    assert paging.page_of(["x", "y"], {"offset": 5}, what).note == [f"(showing none from offset 5 of 2 {what})"]


def test_an_offset_past_a_listing_of_one_says_so_in_the_singular(tmp_path, views):
    client = Client(views(write_image(tmp_path / "image")))   # one test class, json.py one class
    assert text(client.ok("list_test_classes", offset=5)).endswith("\n(showing none from offset 5 of 1 test class)")
    assert text(client.ok("list_classes", dictionaryName="json", offset=5)) == (
        "(showing none from offset 5 of 1 class)")


def test_a_list_within_one_page_is_answered_whole(client):
    answer = client.ok("list_classes", dictionaryName="zoo.animals")
    assert answer["structuredContent"] == {"dictionary": "zoo.animals", "classes": ["Animal", "Dog"], "total": 2}
    assert "(showing" not in text(answer)


@pytest.mark.parametrize("tool, arguments", [
    ("list_dictionaries", {}), ("list_classes", {"dictionaryName": "big"}),
    ("list_dictionary_entries", {"dictionaryName": "big"}),
    ("list_dictionary_entries", {"dictionaryName": "broken"}), ("list_test_classes", {}),
    ("get_class_hierarchy", {"className": "big.Base"}), ("get_class_hierarchy", {"className": "unloadable.U0"})])
def test_a_negative_offset_is_refused(client, tool, arguments):
    # It said "offset must be 0 or more, got -2", unlike every other argument's error.
    assert client.error(tool, "invalidParams", **arguments, offset=-2) == (
        f"{tool}: argument 'offset' must be 0 or more, got -2")


@pytest.mark.parametrize("tool, arguments", [
    ("list_dictionaries", {}), ("list_all_classes", {}), ("list_classes", {"dictionaryName": "big"}),
    ("list_dictionary_entries", {"dictionaryName": "big"}), ("list_test_classes", {}),
    ("get_class_hierarchy", {"className": "big.Base"}),
])
def test_an_offset_past_what_json_carries_exactly_is_refused_by_every_paged_tool(client, tool, arguments):
    # 1e308, an integer to JSON Schema, answered "(showing none from offset 1000...0336 of ...)",
    # a 309-digit offset in structuredContent too, no JSON reader taking it exactly.
    offset = client.server.registry.get(tool).input_schema["properties"]["offset"]
    assert (offset["minimum"], offset["maximum"]) == (0, paging.MAX_OFFSET) == (0, 2 ** 53 - 1)
    assert client.error(tool, "invalidParams", **arguments, offset=1e308) == (
        f"{tool}: argument 'offset' must be 9007199254740991 or less, got 1e+308")
    answer = client.ok(tool, **arguments, offset=float(paging.MAX_OFFSET))
    assert answer["structuredContent"]["offset"] == paging.MAX_OFFSET
    assert text(answer).endswith(f"(showing none from offset {paging.MAX_OFFSET} of {answer['structuredContent']['total']} "
                                 f"{tool_what.get(tool, 'classes')})")


def test_a_negative_offset_is_refused_by_the_schema_it_is_advertised_in_with_every_other_problem(client):
    offset = client.server.registry.get("list_classes").input_schema["properties"]["offset"]
    assert (offset["type"], offset["minimum"]) == ("integer", 0)
    # The handler refused it alone, after the validation had passed the rest.
    assert client.error("list_classes", "invalidParams", offset=-1) == (
        "list_classes: missing required argument 'dictionaryName'; argument 'offset' must be 0 or more, got -1")
