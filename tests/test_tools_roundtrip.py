"""Round trips through the browse and mutation tools: a class's get_class_definition sent
back to compile_class_definition, a method's get_method_source sent back to compile_method,
leave the module byte for byte; one line changed changes that line alone.

One synthetic case per shape a sweep over the standard library's classes found changed
(or that the same code paths handle): each names the stdlib class it stands for."""

import difflib

import pytest

from test_tools_support import Client, views  # noqa: F401  (fixtures)

SHAPES = {
    # argparse._StoreAction: a blank line after the header, above the first (carried) method.
    "blank_after_header": "class A:\n\n    def m(self):\n        return 1\n\n"
                          "    def n(self):\n        return 2\n",
    # asyncio.selector_events._SelectorSocketTransport: a blank line after the header, above
    # a class-level statement.
    "blank_above_a_statement": "class A:\n\n    x = 1\n\n    def m(self):\n        return 1\n",
    # ast.Index: no blank line between the docstring and the first method.
    "docstring_then_def": 'class A:\n    """Doc."""\n    def m(self):\n        return 1\n',
    # ast._Unparser: class-level statements between the methods, and comments ending the body.
    "interleaved": "class A:\n    x = 1\n\n    def m(self):\n        return 1\n\n"
                   "    y = 2  # why\n\n\n    def n(self):\n        pass\n\n    # trailing\n",
    # argparse.BooleanOptionalAction: two blank lines between two methods.
    "two_blank_lines": "class A:\n    def m(self):\n        return 1\n\n\n"
                       "    def n(self):\n        return 2\n",
    "crlf": "class A:\r\n\r\n    def m(self):\r\n        return 1\r\n    z = 3\r\n",
    "cr": "class A:\r\r    def m(self):\r        return 1\r    z = 3\r",
    "tabs_and_nested_class": "class A:\n\tx = 1\n\n\tdef m(self, a,\n\t      b):\n\t\treturn a   \n\n\n"
                             "\tclass Inner:\n\t\tpass\n",
    # Blank lines holding the indentation's spaces, in a statement and in a method.
    "whitespace_blank_lines": "class A:\n    x = [\n        1,\n    \n        2]\n    \n    def m(self):\n"
                              "        a = 1\n        \n        return a\n",
    "comments_and_decorators": "class A:  \n    x = 1   \n\n    # about m\n    @staticmethod\n    # between\n"
                               "    def m():\n        return 1\n        # else:\n        #     return 2\n",
    "class_level_try_and_property": "class A:\n    try:\n        import os\n    except ImportError:\n"
                                    "        os = None\n    @property\n    def p(self):\n        return 1\n"
                                    "    @p.setter\n    def p(self, v):\n        pass\n\n    q = p\n",
    # pathlib._PosixFlavour.splitroot: a default read from the class body (`sep=sep`).
    "class_level_default": 'class A:\n    sep = "/"\n\n    def m(self, part, sep=sep):\n        return sep\n',
    "form_feed_no_final_newline": "class A:\n    x = 1\n\x0c\n    def m(self):\n        return 1",
    # Several statements on a line: get_class_definition showed the line once per statement.
    "semicolons": "class A:\n    x = 1; y = 2\n    z = (3,\n         4); w = 5\n\n    def m(self): return 1\n",
}


@pytest.fixture
def shapes(tmp_path, views):  # noqa: F811
    image = tmp_path / "image"
    (image / "rt").mkdir(parents=True)
    (image / "rt" / "__init__.py").write_text("")
    for name, text in SHAPES.items():
        (image / "rt" / f"{name}.py").write_bytes(text.encode())
    return image, Client(views(image))


def disk(image, shape) -> str:
    return (image / "rt" / f"{shape}.py").read_bytes().decode()


def definition_of(client, shape) -> str:
    return client.ok("get_class_definition", className=f"rt.{shape}.A")["structuredContent"]["definition"]


@pytest.mark.parametrize("shape", SHAPES)
def test_a_class_definition_sent_back_unchanged_leaves_the_module_byte_for_byte(shapes, shape):
    image, client = shapes
    client.ok("compile_class_definition", source=definition_of(client, shape), dictionaryName=f"rt.{shape}")
    assert disk(image, shape) == SHAPES[shape]


@pytest.mark.parametrize("shape", SHAPES)
def test_a_method_source_sent_back_unchanged_leaves_the_module_byte_for_byte(shapes, shape):
    # (and compiles: a default read from the class body was a NameError)
    image, client = shapes
    for selector in ("m", "n", "p"):
        if f"def {selector}(" in SHAPES[shape]:
            source = client.ok("get_method_source", className=f"rt.{shape}.A",
                               selector=selector)["structuredContent"]["source"]
            client.ok("compile_method", className=f"rt.{shape}.A", source=source)
            assert disk(image, shape) == SHAPES[shape], selector


def changed_lines(before: str, after: str) -> list[str]:
    return [line for line in difflib.ndiff(before.splitlines(True), after.splitlines(True))
            if line[:1] in "+-"]


def test_one_line_changed_in_a_class_definition_changes_that_line_alone(shapes):
    image, client = shapes
    changed = definition_of(client, "interleaved").replace("y = 2", "y = 3")
    client.ok("compile_class_definition", source=changed, dictionaryName="rt.interleaved")
    assert changed_lines(SHAPES["interleaved"], disk(image, "interleaved")) == [
        "-     y = 2  # why\n", "+     y = 3  # why\n"]
    assert client.view.module("rt.interleaved").A.y == 3


def test_a_statement_added_above_the_first_stays_below_the_blank_line_the_definition_drops(shapes):
    # get_class_definition shows no blank line under the header (the class keeps it): a line
    # added above the first statement went below it, into that statement's gap, so the
    # module read `y = 0`, a blank line the client never sent, then `x = 1`.
    image, client = shapes
    assert definition_of(client, "blank_above_a_statement") == "class A:\n    x = 1\n"
    client.ok("compile_class_definition", source="class A:\n    y = 0\n    x = 1\n",
              dictionaryName="rt.blank_above_a_statement")
    assert disk(image, "blank_above_a_statement") == (
        "class A:\n\n    y = 0\n    x = 1\n\n    def m(self):\n        return 1\n")
    assert definition_of(client, "blank_above_a_statement") == "class A:\n    y = 0\n    x = 1\n"


# fractions.Fraction: each operator made from the helper def right above it.
MADE_FROM_DEFS = ("class A:\n    x = 1\n\n    def first(self):\n        return 0\n\n"
                  "    def helper(f):\n        return f\n\n"
                  "    def _add(self):\n        return 1\n\n    add = helper(_add)\n\n"
                  "    def _mod(self):\n        return 2\n\n    mod = helper(_mod)\n\n"
                  "    def last(self):\n        return 3\n")


def test_a_statement_added_back_below_the_def_it_reads_leaves_the_other_members_in_place(shapes):
    # `mod = helper(_mod)` added after `add = ...` went right below that statement, above the
    # `_mod` it reads; so the class was rebuilt with each member right above its first
    # reader: `helper` and the defs below it moved up above `first`.
    image, client = shapes
    (image / "rt" / "made.py").write_text(MADE_FROM_DEFS)
    client.ok("refresh")
    definition = client.ok("get_class_definition", className="rt.made.A")["structuredContent"]["definition"]
    assert definition == "class A:\n    x = 1\n\n    add = helper(_add)\n\n    mod = helper(_mod)\n"
    client.ok("compile_class_definition", source=definition.replace("\n    mod = helper(_mod)\n", ""),
              dictionaryName="rt.made")
    assert (image / "rt" / "made.py").read_text() == MADE_FROM_DEFS.replace("    mod = helper(_mod)\n\n", "")
    client.ok("compile_class_definition", source=definition, dictionaryName="rt.made")
    assert (image / "rt" / "made.py").read_text() == MADE_FROM_DEFS
    assert client.view.module("rt.made").A.mod(None) == 2


def test_one_line_changed_in_a_method_changes_that_line_alone(shapes):
    image, client = shapes
    source = client.ok("get_method_source", className="rt.whitespace_blank_lines.A",
                       selector="m")["structuredContent"]["source"]
    client.ok("compile_method", className="rt.whitespace_blank_lines.A",
              source=source.replace("a = 1", "a = 2"))
    assert changed_lines(SHAPES["whitespace_blank_lines"], disk(image, "whitespace_blank_lines")) == [
        "-         a = 1\n", "+         a = 2\n"]


def test_a_blank_line_inside_a_string_is_written_as_sent(shapes):
    # Only a blank line outside a string keeps the module's whitespace: inside, it is the value.
    image, client = shapes
    (image / "rt" / "text.py").write_text('class A:\n    def m(self):\n        return """\n    \n"""\n')
    client.ok("refresh")
    client.ok("compile_method", className="rt.text.A", source='def m(self):\n    return """\n\n"""\n')
    assert (image / "rt" / "text.py").read_text() == 'class A:\n    def m(self):\n        return """\n\n"""\n'
    assert client.view.module("rt.text").A().m() == "\n\n"


def test_a_statement_replacing_the_pass_shown_for_methods_only_is_set_apart_from_them(shapes):
    image, client = shapes
    assert definition_of(client, "two_blank_lines") == "class A:\n    pass\n"
    client.ok("compile_class_definition", source="class A:\n    x = 1\n",
              dictionaryName="rt.two_blank_lines")
    methods = SHAPES["two_blank_lines"][len("class A:\n"):]
    assert disk(image, "two_blank_lines") == "class A:\n    x = 1\n\n" + methods


def test_a_statement_written_below_the_pass_shown_for_methods_only_replaces_it(shapes):
    # Kept, `pass` was written above the methods, and a statement reading the second
    # method moved it above the first.
    image, client = shapes
    assert definition_of(client, "two_blank_lines") == "class A:\n    pass\n"
    client.ok("compile_class_definition", source="class A:\n    pass\n    o = n\n",
              dictionaryName="rt.two_blank_lines")
    assert disk(image, "two_blank_lines") == SHAPES["two_blank_lines"] + "\n    o = n\n"
    assert client.view.module("rt.two_blank_lines").A().o() == 2


def test_a_statement_added_at_the_end_of_a_module_without_a_final_newline_stays_on_its_line(shapes):
    image, client = shapes
    (image / "rt" / "open_end.py").write_text("class A:\n    def m(self):\n        return 1\n    x = 1")
    client.ok("refresh")
    client.ok("compile_class_definition", source="class A:\n    x = 1\n    y = 2\n", dictionaryName="rt.open_end")
    assert (image / "rt" / "open_end.py").read_text() == (
        "class A:\n    def m(self):\n        return 1\n    x = 1\n    y = 2")


def test_a_compiled_method_reads_the_class_body_as_the_live_class_holds_it(shapes):
    image, client = shapes
    (image / "rt" / "named.py").write_text(
        "class Tracked:\n    owners = []\n\n    def __set_name__(self, owner, name):\n"
        "        self.owners.append(owner.__name__)\n\n\nclass A:\n    t = Tracked()\n\n"
        "    def m(self, t=t):\n        return t\n")
    client.ok("refresh")
    client.ok("compile_method", className="rt.class_level_default.A",
              source="def m(self, part, sep=sep):\n    return part + sep\n")
    assert client.view.module("rt.class_level_default").A().m("x") == "x/"
    client.ok("compile_method", className="rt.named.A", source="def m(self, t=t):\n    return [t]\n")
    named = client.view.module("rt.named")
    assert named.A().m() == [named.A.t]
    assert named.Tracked.owners == ["A"]   # read, not bound again in the class it was compiled in


# (the class, the definition it is redefined to, before its own definition is sent back)
TAKEN_OUT = {
    # The comment left in the definition became the def's below it (comments above a
    # method go with it): sent back, it was written twice.
    "comment_left": ("class A:\n    z = 0\n    # about x\n    x = 1\n    def m(self):\n        return 1\n",
                     "class A:\n    z = 0\n    # about x\n"),
    # The same, the statement the only one, below the blank line the definition drops under
    # the header: `pass` sent in its place.
    "comment_left_under_a_blank_line": ("class A:\n\n    # about x\n    x = 1\n\n    def m(self):\n"
                                        "        return 1\n", "class A:\n    # about x\n    pass\n"),
    # concurrent.futures.thread.ThreadPoolExecutor: the same, a statement shown below the
    # methods; sent back, the comment was written twice, the blank line under the header lost.
    "comment_left_above_the_methods": ("class A:\n\n    # about x\n    x = 1\n\n    def m(self):\n"
                                       "        return 1\n\n    y = m\n", "class A:\n    # about x\n\n    y = m\n"),
    # The same without the comment: sent back, it went right under the header, with two
    # blank lines below it.
    "first_above_the_methods": ("class A:\n\n    z = 2\n\n    def m(self):\n        return 1\n\n"
                                "    y = 3\n", "class A:\n\n    y = 3\n"),
    # mailbox.Mailbox: the same, the statement between two methods; sent back, it went right
    # below the docstring, the comment written twice.
    "comment_left_between_methods": ('class A:\n    """Doc."""\n\n    def m(self):\n        return 1\n\n'
                                     "    # about x\n    x = 1\n\n    def n(self):\n        return 2\n",
                                     'class A:\n    """Doc."""\n\n    # about x\n'),
    # weakref.WeakMethod, difflib.SequenceMatcher: a statement below the docstring, above the
    # methods; taken out, it left two blank lines; sent back, it went below the methods.
    "below_the_docstring": ('class A:\n    """Doc."""\n\n    __slots__ = ()\n\n    def m(self):\n'
                            '        return 1\n\n    y = 3\n', 'class A:\n    """Doc."""\n\n\n    y = 3\n'),
    # inspect._ClassFinder: the only statement, reading a method below the first; sent back,
    # the first method went below it.
    "only_reading_a_method": ("class A:\n    def k(self):\n        return 0\n\n    def m(self):\n        return 1\n\n"
                              "    o = m\n\n    def p(self):\n        return 3\n", "class A:\n    pass\n"),
    # optparse.Option: two blank lines between the statement and the methods; sent back, it
    # went below the methods, its comment written twice.
    "below_two_blank_lines": ("class A:\n    x = 1\n\n\n    # about y\n    y = 2\n\n\n    def m(self):\n"
                              "        return 1\n\n\n    z = 3\n", "class A:\n    x = 1\n\n\n    # about y\n\n\n    z = 3\n"),
    # collections.UserString: the first statement, reading a method; taken out, the blank
    # line under the header went; sent back, it went right below the method, two blank lines
    # below it.
    "first_reading_a_method": ("class A:\n\n    def m(self):\n        return 1\n\n    x = m\n\n    def n(self):\n"
                               "        return 2\n\n    y = 2\n", "class A:\n\n    y = 2\n"),
    # distutils.msvc9compiler.Reg: `m = classmethod(m)` sent back did not carry m (the text
    # binds the name), and the class body failed to read it (NameError).
    "rebinding_a_method": ('class A:\n    """Doc."""\n\n    def m(cls):\n        return 1\n    m = classmethod(m)\n\n'
                           '    def n(cls):\n        return 2\n    n = classmethod(n)\n',
                           'class A:\n    """Doc."""\n    n = classmethod(n)\n'),
}


@pytest.mark.parametrize("case", TAKEN_OUT)
def test_a_definition_sent_back_after_an_edit_gives_back_the_module_byte_for_byte(shapes, case):
    image, client = shapes
    source, edited = TAKEN_OUT[case]
    (image / "rt" / f"{case}.py").write_text(source)
    client.ok("refresh")
    definition = definition_of(client, case)
    client.ok("compile_class_definition", source=edited, dictionaryName=f"rt.{case}")
    assert disk(image, case) != source
    client.ok("compile_class_definition", source=definition, dictionaryName=f"rt.{case}")
    assert disk(image, case) == source
    assert client.view.module(f"rt.{case}").A().m() == 1


def test_a_statement_taken_out_from_below_the_docstring_leaves_one_blank_line_above_the_methods(shapes):
    image, client = shapes
    source, edited = TAKEN_OUT["below_the_docstring"]
    (image / "rt" / "docstring.py").write_text(source)
    client.ok("refresh")
    client.ok("compile_class_definition", source=edited, dictionaryName="rt.docstring")
    assert disk(image, "docstring") == source.replace("    __slots__ = ()\n\n", "")


def test_the_statement_between_two_methods_taken_out_leaves_one_blank_line_between_them(shapes):
    # The blank line above it, which the definition does not show, stayed with the one below:
    # two blank lines between the methods.
    image, client = shapes
    (image / "rt" / "between.py").write_text(
        "class A:\n    def m(self):\n        return 1\n\n    x = 1\n\n    def n(self):\n        return 2\n")
    client.ok("refresh")
    assert definition_of(client, "between") == "class A:\n    x = 1\n"
    client.ok("compile_class_definition", source="class A:\n    pass\n", dictionaryName="rt.between")
    assert disk(image, "between") == "class A:\n    def m(self):\n        return 1\n\n    def n(self):\n        return 2\n"
    assert not hasattr(client.view.module("rt.between").A, "x")


ATTRIBUTE_ADDED = ("class C:\n    x = 1\n\n    def a(self):\n        return 1\n\n    def b(self):\n        return 2\n",
                   "class C:\n    x = 1\n    y = 2\n",
                   "class C:\n    x = 1\n    y = 2\n\n    def a(self):\n        return 1\n\n"
                   "    def b(self):\n        return 2\n")


def test_an_attribute_added_below_the_last_one_shown_goes_above_the_methods(shapes):
    # It went at the end of the body, below `def b` with no blank line.
    image, client = shapes
    source, sent, expected = ATTRIBUTE_ADDED
    (image / "rt" / "added.py").write_text(source)
    client.ok("refresh")
    client.ok("compile_class_definition", source=sent, dictionaryName="rt.added")
    assert disk(image, "added") == expected
    assert client.view.module("rt.added").C.y == 2
