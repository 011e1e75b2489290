"""Module files that are not plain UTF-8: a coding declaration is honoured both ways,
and a file whose bytes do not decode breaks only the tools that need that file."""

import pytest

from test_tools_support import Client, image, text, views  # noqa: F401  (fixtures)

LATIN = b'# -*- coding: latin-1 -*-\n# caf\xe9 stays as it is\n\n\nclass Latin:\n    def f(self):\n        return "caf\xe9"\n'
BROKEN = b'class Broken:\n    def f(self):\n        return "caf\xe9"\n'


def test_a_module_with_a_coding_declaration_is_read_and_committed_in_it(image, views):
    (image / "latin.py").write_bytes(LATIN)
    client = Client(views(image))
    assert "return \"café\"" in text(client.ok("get_method_source", className="Latin", selector="f"))
    assert client.ok("execute_code", code="import latin\nlatin.Latin().f()")[
        "structuredContent"]["result"] == repr("café")
    client.ok("compile_method", className="Latin", source="def g(self):\n    return 'thé'\n")
    on_disk = (image / "latin.py").read_bytes()
    assert on_disk.startswith(LATIN) and "return 'thé'".encode("latin-1") in on_disk
    assert client.ok("execute_code", code="import latin\nlatin.Latin().g()")[
        "structuredContent"]["result"] == repr("thé")


@pytest.mark.parametrize("tool, arguments, line", [
    ("compile_method", {"className": "Latin", "source": "def euro(self):\n    return '€'\n"}, 10),
    ("compile_method", {"className": "Latin", "source": "def f(self):\n    return '€'\n"}, 7),
    ("compile_class_definition", {"source": "class Latin:\n    sign = '€'\n"}, 6),
    ("set_class_comment", {"className": "Latin", "comment": "costs 5 €"}, 6),
])
def test_text_its_declared_encoding_cannot_carry_is_refused_before_anything_changes(
        image, views, tool, arguments, line):
    (image / "latin.py").write_bytes(LATIN)
    client = Client(views(image))
    live = client.view.module("latin").Latin
    message = client.error(tool, "invalidParams", **arguments)
    assert message.startswith(f"latin.py declares the encoding iso-8859-1, which cannot carry '€' "
                              f"(line {line}); nothing was changed")
    # Nothing half-applied: not the file, not the view's text, not the live class.
    assert (image / "latin.py").read_bytes() == LATIN and client.view.changed_modules() == []
    assert client.view.module("latin").Latin is live
    assert not hasattr(live, "euro") and not hasattr(live, "sign") and live.__doc__ is None
    assert live().f() == "café"
    # The session needs no abort: the next edit commits.
    client.ok("compile_method", className="Latin", source="def euro(self):\n    return '\\u20ac'\n")
    assert live().euro() == "€" and b"return '\\u20ac'" in (image / "latin.py").read_bytes()


def test_text_set_other_than_by_the_tools_is_still_refused_at_commit(image, views):
    (image / "latin.py").write_bytes(LATIN)
    client = Client(views(image))
    client.view.set_source("latin", LATIN.decode("latin-1") + "EURO = '€'\n", live=False)
    message = client.error("commit", "refused")
    assert "latin.py declares the encoding iso-8859-1, which cannot carry '€' (line 8)" in message
    assert (image / "latin.py").read_bytes() == LATIN
    assert client.view.changed_modules() == ["latin"]


def test_a_file_that_does_not_decode_breaks_only_what_needs_it(image, views):
    (image / "broken.py").write_bytes(BROKEN)
    client = Client(views(image))
    assert "zoo.animals.Dog" in client.ok("list_all_classes")["structuredContent"]["classes"]
    assert "zoo.animals.Animal.speak" in text(client.ok("find_senders", selector="noise"))
    assert "zoo.animals.Animal.noise" in text(client.ok("search_method_source", pattern="return"))
    assert "zoo.test_zoo.ZooTest" in text(client.ok("list_test_classes"))
    assert text(client.ok("list_classes", dictionaryName="broken")).startswith(
        "(not listed: image module broken does not compile: line 3: byte b'\\xe9' is not valid")
    client.ok("compile_method", className="Dog", source="def wag(self):\n    return 1\n")
    assert (image / "broken.py").read_bytes() == BROKEN
    # A class cannot be spliced into it: said as for its own classes, not as a codec error.
    message = client.error("compile_class_definition", "other", source="class New:\n    pass\n",
                           dictionaryName="broken")
    assert message.startswith("image module broken does not compile: line 3: byte b'\\xe9' is not valid")
    assert (image / "broken.py").read_bytes() == BROKEN and not client.view.has_changes


BOM = b"\xef\xbb\xbf"
PLAIN = b"SIGN = 'caf\xc3\xa9'\n"


@pytest.mark.parametrize("disk_bom", [True, False])
def test_the_same_text_on_disk_but_for_a_bom_is_already_committed_with_the_disks_bom(image, views, disk_bom):
    # An editor saved the session's very text, adding (or dropping) the BOM: the commit
    # conflicted ("changed on disk ... by an edit outside gsmcpd") over bytes that hold
    # the same text, as Python reads it.
    (image / "sign.py").write_bytes((b"" if disk_bom else BOM) + PLAIN)
    view = views(image)
    view.set_source("sign", "SIGN = 'thé'\n", live=False)
    saved = (BOM if disk_bom else b"") + "SIGN = 'thé'\n".encode()
    (image / "sign.py").write_bytes(saved)
    assert view.commit() == [] and view.already_committed == ["sign"]
    assert (image / "sign.py").read_bytes() == saved and not view.has_changes
    view.set_source("sign", "SIGN = 'tea'\n", live=False)
    view.commit()
    assert (image / "sign.py").read_bytes() == (BOM if disk_bom else b"") + b"SIGN = 'tea'\n"   # kept


def test_a_refresh_takes_the_same_text_but_for_a_bom_as_committed_and_keeps_the_disks_bom(image, views):
    # It kept ours on the old base ("commit will conflict"), and a BOM an editor put on a
    # file whose text the session had not changed was dropped by its next commit.
    (image / "sign.py").write_bytes(PLAIN)
    (image / "other.py").write_bytes(PLAIN)
    view = views(image)
    view.set_source("sign", "SIGN = 'thé'\n", live=False)
    (image / "sign.py").write_bytes(BOM + "SIGN = 'thé'\n".encode())
    (image / "other.py").write_bytes(BOM + PLAIN)
    report = view.refresh()
    assert (report.already_committed, report.kept_ours, report.brought_in) == (["sign"], [], [])
    assert not view.has_changes
    view.set_source("other", "SIGN = 'tea'\n", live=False)
    view.commit()
    assert (image / "other.py").read_bytes() == BOM + b"SIGN = 'tea'\n"


@pytest.mark.parametrize("disk_bom", [True, False])
def test_a_bom_put_on_or_taken_off_is_no_module_an_abort_or_commit_brought_in(image, views, disk_bom):
    # Told by hash, the module whose bytes changed but not its text was named brought in
    # by abort and commit, where refresh, told by text, named none.
    (image / "sign.py").write_bytes((BOM if disk_bom else b"") + PLAIN)
    aborting, committing = views(image, "a"), views(image, "b")
    (image / "sign.py").write_bytes((b"" if disk_bom else BOM) + PLAIN)
    base, base_texts = dict(aborting.base_hashes), dict(aborting.base_texts)
    aborting.abort()
    assert aborting.moved_since(base, base_texts) == []
    assert committing.commit() == [] and committing.brought_in == []


@pytest.mark.parametrize("disk_bom", [True, False])
def test_a_change_commits_over_a_bom_put_on_or_taken_off_since_keeping_the_disks_bom(image, views, disk_bom):
    # It conflicted ("changed on disk ... by an edit outside gsmcpd") over a file holding
    # the very text the session stood on, where a refresh took the BOM as the file's.
    (image / "sign.py").write_bytes((b"" if disk_bom else BOM) + PLAIN)
    view = views(image)
    (image / "sign.py").write_bytes((BOM if disk_bom else b"") + PLAIN)
    view.set_source("sign", "SIGN = 'tea'\n", live=False)
    assert view.commit() == ["sign"] and view.brought_in == [] and not view.has_changes
    assert (image / "sign.py").read_bytes() == (BOM if disk_bom else b"") + b"SIGN = 'tea'\n"
    view.set_source("sign", "SIGN = 'tee'\n", live=False)
    assert view.commit() == ["sign"]   # on the file as it wrote it
    assert (image / "sign.py").read_bytes() == (BOM if disk_bom else b"") + b"SIGN = 'tee'\n"


def test_a_bom_put_on_with_another_text_still_conflicts(image, views):
    from gsmcpd.image.store import CommitConflict
    (image / "sign.py").write_bytes(PLAIN)
    view = views(image)
    (image / "sign.py").write_bytes(BOM + b"SIGN = 'other'\n")
    view.set_source("sign", "SIGN = 'tea'\n", live=False)
    with pytest.raises(CommitConflict):
        view.commit()
    assert (image / "sign.py").read_bytes() == BOM + b"SIGN = 'other'\n"


def test_only_utf8_source_has_a_bom_twin():
    from gsmcpd.image.store import alike_hashes, sha256
    assert alike_hashes(PLAIN) == {sha256(PLAIN), sha256(BOM + PLAIN)} == alike_hashes(BOM + PLAIN)
    for data in (b"# -*- coding: latin-1 -*-\nx = 1\n", b"x = 'caf\xe9'\n"):   # another codec; not UTF-8
        assert alike_hashes(data) == {sha256(data)}
    assert alike_hashes(None) == {None}


@pytest.mark.parametrize("disk_bom", [True, False])
@pytest.mark.parametrize("saved", ["pkg/__init__.py", "pkg/sub.py"])
def test_a_package_removes_over_a_bom_put_on_or_taken_off_since(image, views, disk_bom, saved):
    # A module of the removed package whose bytes changed by a BOM alone conflicted
    # ("changed on disk ... by an edit outside gsmcpd"), where a file written went over it.
    (image / "pkg").mkdir()
    for rel in ("pkg/__init__.py", "pkg/sub.py"):
        (image / rel).write_bytes((b"" if disk_bom else BOM) + PLAIN)
    view = views(image)
    (image / saved).write_bytes((BOM if disk_bom else b"") + PLAIN)
    assert view.remove_module("pkg") == ["pkg", "pkg.sub"]
    assert view.commit() == ["pkg", "pkg.sub"] and not view.has_changes
    assert not (image / "pkg" / "__init__.py").exists() and not (image / "pkg" / "sub.py").exists()


def test_a_package_removed_over_another_text_in_it_still_conflicts(image, views):
    from gsmcpd.image.store import CommitConflict
    (image / "pkg").mkdir()
    (image / "pkg/__init__.py").write_bytes(PLAIN)
    (image / "pkg/sub.py").write_bytes(PLAIN)
    view = views(image)
    (image / "pkg/sub.py").write_bytes(BOM + b"SIGN = 'other'\n")
    view.remove_module("pkg")
    with pytest.raises(CommitConflict) as raised:
        view.commit()
    assert raised.value.how == {"pkg/sub.py": "changed"}
    assert (image / "pkg/sub.py").read_bytes() == BOM + b"SIGN = 'other'\n"
