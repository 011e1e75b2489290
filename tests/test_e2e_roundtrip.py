"""Round trips end to end through the real daemon: a class's get_class_definition and a
method's get_method_source, sent back unchanged, leave the committed module byte for byte;
a one-line change changes that line alone (the shapes: test_tools_roundtrip)."""

import pytest

from test_e2e_image_tools import daemon, run  # noqa: F401  (the daemon fixture: on this module's image)
from test_e2e_tools import ok, structured
from test_tools_roundtrip import ATTRIBUTE_ADDED, MADE_FROM_DEFS, SHAPES, TAKEN_OUT, changed_lines
from test_tools_support import write_image

CHOSEN = ("blank_after_header", "interleaved", "crlf", "whitespace_blank_lines", "class_level_default",
          "semicolons")


COMMENTED = "class A:\n    # Says hello.\n    def m(self):\n        return 1\n"
OPENING = "# Helpers.\ndef hello():\n    return 1\n"


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    return write_image(tmp_path_factory.mktemp("roundtrip") / "image",
                       {"rt/__init__.py": "", "rt/commented.py": COMMENTED, "rt/opening.py": OPENING,
                        **{f"rt/{shape}.py": SHAPES[shape] for shape in CHOSEN}})


def disk(image, shape) -> str:
    return (image / "rt" / f"{shape}.py").read_bytes().decode()


@pytest.mark.parametrize("shape", CHOSEN)
def test_definitions_and_methods_sent_back_unchanged_leave_the_module_as_it_was(image, c, shape):
    # From the shape as written, whatever another test of the module changed.
    (image / "rt" / f"{shape}.py").write_bytes(SHAPES[shape].encode())
    ok(c, "refresh")
    definition = structured(c, "get_class_definition", className=f"rt.{shape}.A")["definition"]
    ok(c, "compile_class_definition", source=definition, dictionaryName=f"rt.{shape}")
    assert disk(image, shape) == SHAPES[shape]
    source = structured(c, "get_method_source", className=f"rt.{shape}.A", selector="m")["source"]
    ok(c, "compile_method", className=f"rt.{shape}.A", source=source)
    assert disk(image, shape) == SHAPES[shape]


def test_one_line_changed_in_a_definition_changes_that_line_alone(image, c):
    definition = structured(c, "get_class_definition", className="rt.interleaved.A")["definition"]
    ok(c, "compile_class_definition", source=definition.replace("y = 2", "y = 3"),
       dictionaryName="rt.interleaved")
    assert changed_lines(SHAPES["interleaved"], disk(image, "interleaved")) == [
        "-     y = 2  # why\n", "+     y = 3  # why\n"]
    assert run(c, "from rt.interleaved import A\n(A.y, A().m())") == repr((3, 1))


def test_a_statement_added_above_the_first_keeps_the_blank_line_under_the_header_in_place(image, c):
    # The definition shows no blank line under the header; a line added above `x = 1` went
    # below that blank line, so the module and the next definition read a blank line between
    # the two that the client never sent.
    (image / "rt" / "blank_header.py").write_bytes(SHAPES["blank_above_a_statement"].encode())
    ok(c, "refresh")
    assert structured(c, "get_class_definition", className="rt.blank_header.A")["definition"] == (
        "class A:\n    x = 1\n")
    ok(c, "compile_class_definition", source="class A:\n    y = 0\n    x = 1\n", dictionaryName="rt.blank_header")
    assert (image / "rt" / "blank_header.py").read_bytes().decode() == (
        "class A:\n\n    y = 0\n    x = 1\n\n    def m(self):\n        return 1\n")
    assert structured(c, "get_class_definition", className="rt.blank_header.A")["definition"] == (
        "class A:\n    y = 0\n    x = 1\n")
    assert run(c, "from rt.blank_header import A\n(A.y, A.x, A().m())") == repr((0, 1, 1))


def test_a_statement_added_back_below_the_def_it_reads_leaves_the_module_as_it_was(image, c):
    # fractions.Fraction's `__mod__, __rmod__ = _operator_fallbacks(_mod, ...)` taken out of the
    # definition and sent back: it went above the `_mod` it reads, and the class was rebuilt
    # with each member above its first reader, hundreds of lines moved.
    (image / "rt" / "made.py").write_bytes(MADE_FROM_DEFS.encode())
    ok(c, "refresh")
    definition = structured(c, "get_class_definition", className="rt.made.A")["definition"]
    ok(c, "compile_class_definition", source=definition.replace("\n    mod = helper(_mod)\n", ""),
       dictionaryName="rt.made")
    ok(c, "compile_class_definition", source=definition, dictionaryName="rt.made")
    assert (image / "rt" / "made.py").read_bytes().decode() == MADE_FROM_DEFS
    assert run(c, "from rt.made import A\n(A.mod(None), A().first())") == repr((2, 0))


@pytest.mark.parametrize("case", TAKEN_OUT)
def test_a_definition_sent_back_after_an_edit_leaves_the_module_as_it_was(image, c, case):
    # A comment left in the definition became the def's below it and was written twice.
    source, edited = TAKEN_OUT[case]
    path = image / "rt" / f"{case}.py"
    path.write_bytes(source.encode())
    ok(c, "refresh")
    definition = structured(c, "get_class_definition", className=f"rt.{case}.A")["definition"]
    ok(c, "compile_class_definition", source=edited, dictionaryName=f"rt.{case}")
    assert path.read_bytes().decode() != source
    ok(c, "compile_class_definition", source=definition, dictionaryName=f"rt.{case}")
    assert path.read_bytes().decode() == source
    assert run(c, f"from rt.{case} import A\nA().m()") == "1"


# (module, its text, the definition sent, the text after, a call and what it answers)
STATEMENTS_TAKEN_OUT = [
    # Two blank lines were left between the methods: the one above the statement and the one below.
    ("between", b"class A:\n    def m(self):\n        return 1\n\n    # about x\n    x = 1\n\n"
                b"    def n(self):\n        return 2\n",
     "class A:\n    pass\n",
     b"class A:\n    def m(self):\n        return 1\n\n    def n(self):\n        return 2\n",
     "(hasattr(A, 'x'), A().n())", repr((False, 2))),
    # The blank line shown between the two statements is the second's: it went with the
    # first, the second glued to the method above it, the first's own blank line left under
    # the header.
    ("first_out", b"class A:\n    x = 1\n\n    def m(self):\n        return 1\n\n    y = m\n",
     "class A:\n    y = m\n",
     b"class A:\n    def m(self):\n        return 1\n\n    y = m\n",
     "(hasattr(A, 'x'), A().y())", repr((False, 1))),
    # Only the last one's gap was kept: the methods were glued (`return 1\n    def b`),
    # and the first one's blank line left under the header.
    ("two_out", b"class A:\n    x = 1\n\n    def a(self):\n        return 1\n\n    y = 2\n\n"
                b"    def b(self):\n        return 2\n\n    z = 3\n",
     "class A:\n    z = 3\n",
     b"class A:\n    def a(self):\n        return 1\n\n    def b(self):\n        return 2\n\n    z = 3\n",
     "(hasattr(A, 'x'), hasattr(A, 'y'), A().b())", repr((False, False, 2))),
    # With no blank line of its own, it was glued to the method above it: `return 1\n    y = 2`.
    ("tight_out", b"class A:\n    x = 1\n    def a(self):\n        return 1\n\n    y = 2\n",
     "class A:\n    y = 2\n",
     b"class A:\n    def a(self):\n        return 1\n\n    y = 2\n",
     "(hasattr(A, 'x'), A.y)", repr((False, 2))),
]


@pytest.mark.parametrize("name, before, sent, after, call, answer", STATEMENTS_TAKEN_OUT,
                         ids=[case[0] for case in STATEMENTS_TAKEN_OUT])
def test_statements_taken_out_leave_the_members_set_apart_as_they_were(image, c, name, before, sent, after,
                                                                       call, answer):
    path = image / "rt" / f"{name}.py"
    path.write_bytes(before)
    ok(c, "refresh")
    ok(c, "compile_class_definition", source=sent, dictionaryName=f"rt.{name}")
    assert path.read_bytes() == after
    assert run(c, f"from rt.{name} import A\n{call}") == answer


def test_an_attribute_added_below_the_last_one_shown_goes_above_the_methods(image, c):
    # It went at the end of the body, below the last def with no blank line.
    source, sent, expected = ATTRIBUTE_ADDED
    path = image / "rt" / "added.py"
    path.write_bytes(source.encode())
    ok(c, "refresh")
    ok(c, "compile_class_definition", source=sent, dictionaryName="rt.added")
    assert path.read_bytes().decode() == expected
    assert run(c, "from rt.added import C\n(C.y, C().b())") == repr((2, 2))


def test_a_method_sent_again_with_comment_lines_above_it_has_them_once_in_place_of_its_own(image, c):
    # Each compile_method of this text wrote its comment again, above the one written before.
    sent = "# Says hello, reworded.\ndef m(self):\n    return 2\n"
    for _ in range(2):
        ok(c, "compile_method", className="rt.commented.A", source=sent)
    assert disk(image, "commented") == "class A:\n    # Says hello, reworded.\n    def m(self):\n        return 2\n"


def test_a_class_sent_again_with_comment_lines_above_it_has_them_once_in_place_of_its_own(image, c):
    sent = "# A greeter.\nclass B:\n    size = 2\n"
    for _ in range(2):
        ok(c, "compile_class_definition", source=sent, dictionaryName="rt.commented")
    assert disk(image, "commented").endswith("\n\n# A greeter.\nclass B:\n    size = 2\n")
    ok(c, "compile_class_definition", source=sent.replace("greeter", "wide greeter"), dictionaryName="rt.commented")
    assert disk(image, "commented").endswith("\n\n# A wide greeter.\nclass B:\n    size = 2\n")


def test_a_function_sent_again_with_comment_lines_above_it_below_those_opening_the_file_has_them_once(image, c):
    # The comment lines opening the file are the module's: each send wrote the sent one again below them.
    sent = "# Says hello.\ndef hello():\n    return 2\n"
    for _ in range(2):
        ok(c, "compile_method", className="rt.opening", source=sent)
    assert disk(image, "opening") == "# Helpers.\n" + sent
