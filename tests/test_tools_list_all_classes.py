"""list_all_classes answers a page of at most paging.PAGE classes, saying how many
there are and at which offset the rest start, so a big image's list reaches a client."""

import pytest

from gsmcpd.image.catalog import kernel_classes
from gsmcpd.worker.paging import PAGE
from test_tools_support import Client, client, image, views, write_image  # noqa: F401  (fixtures)

MANY = PAGE + 150


@pytest.fixture
def many(tmp_path, views):
    text = "".join(f"class K{i:04d}:\n    pass\n\n\n" for i in range(MANY))
    return Client(views(write_image(tmp_path / "image", {"many.py": text, "broken.py": "class B(:\n"})))


def test_a_big_image_is_listed_a_page_at_a_time_with_the_offset_of_the_rest(many):
    total = MANY + len(kernel_classes())
    first = many.ok("list_all_classes")
    listed = first["structuredContent"]
    assert listed["classes"][:2] == ["many.K0000", "many.K0001"] and len(listed["classes"]) == PAGE
    assert (listed["total"], listed["imageCount"], listed["offset"], listed["nextOffset"]) == (
        total, MANY, 0, PAGE)
    assert listed["notListed"][0].startswith("image module broken does not compile")
    text = first["content"][0]["text"]
    assert text.endswith(f"(showing 1-{PAGE} of {total} classes; {total - PAGE} more: call again "
                         f"with offset {PAGE}, or list_classes for one dictionary)")
    assert "(not listed: image module broken does not compile" in text
    rest = many.ok("list_all_classes", offset=PAGE)["structuredContent"]
    assert "nextOffset" not in rest and rest["offset"] == PAGE
    assert listed["classes"] + rest["classes"] == [f"many.K{i:04d}" for i in range(MANY)] + [
        f"builtins.{name}" for name in kernel_classes()]
    assert many.ok("list_all_classes", offset=total)["content"][0]["text"].endswith(
        f"(showing none from offset {total} of {total} classes)")


def test_a_small_image_is_listed_whole_as_before(client):
    listed = client.ok("list_all_classes")["structuredContent"]
    assert "offset" not in listed and "nextOffset" not in listed
    assert listed["total"] == len(listed["classes"])
    assert "(showing" not in client.ok("list_all_classes")["content"][0]["text"]


def test_a_negative_offset_is_refused(client):
    result = client.call("list_all_classes", offset=-1)
    assert result["isError"] and result["structuredContent"]["error"]["kind"] == "invalidParams"
    assert result["content"][0]["text"] == "list_all_classes: argument 'offset' must be 0 or more, got -1"
