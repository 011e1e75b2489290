"""Source splicing: edits land at the AST position; everything else stays byte-identical."""

import ast
import symtable

import pytest

from gsmcpd.image import overlay, splice

SOURCE = '''\
"""Module doc."""
import os  # keep me


# Comment above the class.
@decorated
class Thing(Base):  # trailing comment
    """Doc."""

    size = 3  # size comment

    def first(self):
        return 1  # first body

    # Comment between methods.
    @staticmethod
    def second():
        return 2


def tail():   # odd   spacing
    pass
'''


def unchanged_outside(before: str, after: str, first: int, last: int, added: int):
    lines_before = before.splitlines(True)
    lines_after = after.splitlines(True)
    assert lines_after[:first - 1] == lines_before[:first - 1]
    assert lines_after[first - 1 + added:] == lines_before[last:]


def test_replacing_a_method_keeps_everything_else_byte_identical():
    new, replaced = splice.put_method(SOURCE, "Thing", "def first(self):\n    return 'one'\n")
    assert replaced
    unchanged_outside(SOURCE, new, 12, 13, 2)
    assert "        return 'one'\n" in new
    ast.parse(new)


def test_replacing_a_decorated_method_replaces_its_decorators_too():
    new, _ = splice.put_method(SOURCE, "Thing", "@classmethod\ndef second(cls):\n    return cls\n")
    assert "@staticmethod" not in new and "    @classmethod\n    def second(cls):\n" in new
    assert "    # Comment between methods.\n" in new


def test_appending_a_method_and_filling_a_pass_only_class():
    new, replaced = splice.put_method(SOURCE, "Thing", "async def third(self):\n    return 3\n")
    assert not replaced
    assert new.startswith(SOURCE[:SOURCE.index("\n\ndef tail")])
    assert "        return 2\n\n    async def third(self):\n        return 3\n" in new
    empty = "class E:\n    pass  # placeholder\n\nx = 1\n"
    filled, _ = splice.put_method(empty, "E", "def m(self):\n    return 1\n")
    assert filled == "class E:\n    def m(self):\n        return 1\n\nx = 1\n"


@pytest.mark.parametrize("source, added", [
    # Filled, the comment became the method's and went with it.
    ("class X:\n    # c\n    pass\n", "class X:\n    # c\n    pass\n\n    def m(self):\n        return 1\n"),
    # Filled, the docstring was left alone: a class of a docstring only.
    ('class X:\n    """Doc."""\n    pass\n',
     'class X:\n    """Doc."""\n    pass\n\n    def m(self):\n        return 1\n'),
    ("class X:\n    pass\n", "class X:\n    def m(self):\n        return 1\n"),
    ("class X:\n    # c\n\n    pass\n", "class X:\n    # c\n\n    def m(self):\n        return 1\n"),
], ids=["comment-above-pass", "docstring-and-pass", "pass-alone", "comment-apart"])
def test_a_method_added_then_deleted_gives_back_the_text_it_was_added_to(source, added):
    new, replaced = splice.put_method(source, "X", "def m(self):\n    return 1\n")
    assert (new, replaced) == (added, False)
    assert splice.remove_method(new, "X", "m") == source


def test_removing_methods_and_the_last_one_leaves_pass():
    new = splice.remove_method(SOURCE, "Thing", "first")
    assert "def first" not in new and "    # Comment between methods.\n" in new
    assert "\n\n\n    # Comment" not in new
    bare = splice.remove_method("class C:\n    def m(self):\n        pass\n", "C", "m")
    assert bare == "class C:\n    pass\n"
    with pytest.raises(splice.SpliceError):
        splice.remove_method(SOURCE, "Thing", "nope")


def test_docstring_set_replace_and_remove():
    replaced = splice.set_class_docstring(SOURCE, "Thing", "New doc.")
    assert '    """New doc."""\n' in replaced
    unchanged_outside(SOURCE, replaced, 8, 8, 1)
    added = splice.set_class_docstring("class C:\n    x = 1\n", "C", 'say "hi"')
    assert ast.get_docstring(ast.parse(added).body[0]) == 'say "hi"'
    removed = splice.set_class_docstring("class C:\n    '''d'''\n", "C", "")
    assert removed == "class C:\n    pass\n"


@pytest.mark.parametrize("comment", ["a\x00b", "a\\", 'a"', '"""', "a\rb", "line\nline",
                                     "\x0b\x1c\u2028\x85", "é𝄞", "a\ud800b"])
def test_a_docstring_is_a_literal_of_exactly_the_comment(comment):
    # A NUL byte, written raw, made the module text Python refuses to compile at all;
    # a lone surrogate (JSON's "\ud800"), one no file encoding can carry.
    added = splice.set_class_docstring("class C:\n    x = 1\n", "C", comment)
    assert ast.get_docstring(ast.parse(added).body[0], clean=False) == comment
    added.encode("utf-8")   # and the module can be written


def test_class_definition_has_header_and_assignments_but_no_methods():
    definition = splice.class_definition(SOURCE, "Thing")
    assert definition.startswith("@decorated\nclass Thing(Base):  # trailing comment\n")
    assert "size = 3  # size comment" in definition and "def " not in definition
    ast.parse(definition)


def test_put_and_remove_class():
    replaced = splice.put_class(SOURCE, "Thing", "class Thing:\n    pass\n")
    assert "@decorated" not in replaced and "# Comment above the class.\n" in replaced
    assert replaced.endswith("def tail():   # odd   spacing\n    pass\n")
    appended = splice.put_class(SOURCE, "Other", "class Other:\n    pass\n")
    assert appended == SOURCE + "\n\nclass Other:\n    pass\n"
    removed = splice.remove_class(SOURCE, "Thing")
    assert "class Thing" not in removed and "import os  # keep me\n" in removed
    ast.parse(removed)


PROGRAM = ('import unittest\n\n\nclass OldTest(unittest.TestCase):\n    def test_a(self):\n        pass\n'
           '\n\n# run the tests\nif __name__ == "__main__":\n    unittest.main()\n')


def test_a_new_class_or_function_goes_above_the_main_block_that_ends_the_module():
    # Below it, `python test_x.py` would run (and exit in) unittest.main() before
    # defining the new test class: its tests would never run.
    above = PROGRAM.index("# run the tests")
    with_class = splice.put_class(PROGRAM, "NewTest", "class NewTest(unittest.TestCase):\n    pass\n")
    assert with_class == PROGRAM[:above] + "class NewTest(unittest.TestCase):\n    pass\n\n\n" + PROGRAM[above:]
    assert splice.remove_class(with_class, "NewTest") == PROGRAM
    with_function, replaced = splice.put_function(PROGRAM, "def helper():\n    return 1\n")
    assert not replaced
    assert with_function == PROGRAM[:above] + "def helper():\n    return 1\n\n\n" + PROGRAM[above:]
    assert splice.remove_function(with_function, "helper") == PROGRAM


@pytest.mark.parametrize("above, spaced", [
    ("import unittest\n", "import unittest\n\n\n"),
    ("import unittest\n\n", "import unittest\n\n\n"),
    ("# licence\n# more\n", "# licence\n# more\n\n\n"),
    ("#!/usr/bin/env python\n", "#!/usr/bin/env python\n\n\n"),
    ("", ""),
])
def test_a_definition_put_above_the_main_block_has_two_blank_lines_above_it(above, spaced):
    # Right under the line above the block, it stood with one blank line above it, or none.
    main = 'if __name__ == "__main__":\n    unittest.main()\n'
    put, _ = splice.put_function(above + main, "def helper():\n    return 1\n")
    assert put == spaced + "def helper():\n    return 1\n\n\n" + main
    crlf = (above + main).replace("\n", "\r\n")
    assert splice.put_class(crlf, "New", "class New:\n    pass\n") == (
        spaced + "class New:\n    pass\n\n\n" + main).replace("\n", "\r\n")


def test_a_main_block_with_code_below_it_leaves_a_new_class_last():
    source = PROGRAM + "\n\ndef later():\n    pass\n"
    assert splice.put_class(source, "New", "class New:\n    pass\n") == source + "\n\nclass New:\n    pass\n"


def test_crlf_sources_stay_crlf():
    source = "class C:\r\n    def m(self):\r\n        return 1\r\n"
    new, _ = splice.put_method(source, "C", "def n(self):\n    return 2\n")
    assert "\n" not in new.replace("\r\n", "")
    assert new.startswith(source)


def test_one_line_class_is_refused():
    with pytest.raises(splice.SpliceError, match="one line"):
        splice.put_method("class C: pass\n", "C", "def m(self):\n    pass\n")


LAYOUT = '''\
@register
class Layout(
    Base,
):
    """Doc."""

    x = 1

    # about helper: goes with it
    @staticmethod
    def helper():
        return 1

    y = 2
    # about z
    z: int = 3

    def method(self):
        return 2


class After:
    pass
'''


def test_class_definition_keeps_the_sources_own_layout():
    assert splice.class_definition(LAYOUT, "Layout") == (
        '@register\nclass Layout(\n    Base,\n):\n    """Doc."""\n\n    x = 1\n\n'
        '    y = 2\n    # about z\n    z: int = 3\n')
    leading = "class C:\n    # about p\n    @property\n    def p(self):\n        return 1\n\n    w = 1\n"
    assert splice.class_definition(leading, "C") == "class C:\n    w = 1\n"
    assert splice.class_definition("class D:\n\n    def m(self):\n        pass\n", "D") == (
        "class D:\n    pass\n")


def test_removing_the_last_method_or_class_leaves_no_trailing_blank_line():
    two = "class A:\n    def f(self):\n        return 1\n\n    def g(self):\n        return 2\n"
    assert splice.remove_method(two, "A", "g") == "class A:\n    def f(self):\n        return 1\n"
    followed = two + "\n\nclass B:\n    pass\n"
    assert splice.remove_method(followed, "A", "g") == (
        "class A:\n    def f(self):\n        return 1\n\n\nclass B:\n    pass\n")
    classes = "class A:\n    pass\n\n\nclass B:\n    pass\n"
    assert splice.remove_class(classes, "B") == "class A:\n    pass\n"
    assert splice.remove_class(classes, "A") == "class B:\n    pass\n"
    assert splice.remove_class('"""d"""\n\n\n' + classes, "A") == '"""d"""\n\n\nclass B:\n    pass\n'


# -- string literals keep their lines whatever the indentation -------------------

BANNER = 'def banner(self):\n    return """\nline\n  indented\n"""\n'
FBANNER = 'def banner(self):\n    return f"""\n{self.n}\n"""\n'


def value_of(source, class_name, method, *args):
    namespace = {}
    exec(source, namespace)
    return getattr(namespace[class_name](*args), method)()


def test_put_method_never_indents_lines_inside_a_string_literal():
    new, _ = splice.put_method("class C:\n    pass\n", "C", BANNER)
    assert value_of(new, "C", "banner") == "\nline\n  indented\n"
    classdef = splice.top_level_class(ast.parse(new), "C")
    assert splice.segment(new, splice.method_nodes(classdef, "banner")[0]) == BANNER


def test_put_method_leaves_f_strings_and_backslash_continued_strings_alone():
    source = "class C:\n    n = 7\n"
    new, _ = splice.put_method(source, "C", FBANNER)
    assert value_of(new, "C", "banner") == "\n7\n"
    continued = "def joined(self):\n    return 'a\\\nb'\n"
    new, _ = splice.put_method(source, "C", continued)
    assert value_of(new, "C", "joined") == "ab"


def test_an_indented_method_text_is_dedented_by_its_code_lines_only():
    indented = "    def banner(self):\n        return '''\nline\n'''\n"
    new, _ = splice.put_method("class C:\n    pass\n", "C", indented)
    assert value_of(new, "C", "banner") == "\nline\n"


def test_class_definition_shows_a_line_of_several_statements_once():
    source = "class C:\n    x = 1; y = 2\n    z = (3,\n         4); w = 5\n\n    def m(self): return 1\n"
    assert splice.class_definition(source, "C") == "class C:\n    x = 1; y = 2\n    z = (3,\n         4); w = 5\n"


def test_segment_and_class_definition_keep_string_lines():
    source = 'class C:\n    text = """\n    kept\n    """\n\n    def m(self):\n        return 1\n'
    assert splice.class_definition(source, "C") == 'class C:\n    text = """\n    kept\n    """\n'
    classdef = splice.top_level_class(ast.parse(source), "C")
    body = splice.segment(source, classdef.body[0])
    assert body == 'text = """\n    kept\n    """\n'


def test_dedent_and_indent_code_round_trip_a_string():
    text = 'x = """\n  a\n"""\n'
    assert splice.indent_code(text, "    ") == '    x = """\n  a\n"""\n'
    assert splice.dedent_code(splice.indent_code(text, "    ")) == text
    assert splice.string_lines("x = (\n") == set()     # does not tokenize: no lines known


def test_attribute_nodes_finds_non_def_bindings_of_a_name():
    classdef = ast.parse("class C:\n    a = 1\n    b: int\n    c: int = 2\n    d, (a, e) = 1, (2, 3)\n"
                         "    class a:\n        pass\n    def f(self):\n        a = 5\n").body[0]
    assert [n.lineno for n in splice.attribute_nodes(classdef, "a")] == [2, 5, 6]
    assert splice.attribute_nodes(classdef, "b") == []      # an annotation alone binds nothing
    assert [n.lineno for n in splice.attribute_nodes(classdef, "c")] == [4]
    assert splice.attribute_nodes(classdef, "f") == []


def test_attribute_nodes_finds_what_a_walrus_or_a_match_pattern_binds():
    # Neither was counted: compile_method let a def replace such a name.
    classdef = ast.parse("class C:\n    size = (width := 3)\n    if (n := 2):\n        inner = (deep := 1)\n"
                         "    match {}:\n        case {'a': a, **rest} if (g := 1):\n            pass\n"
                         "        case [first, *others] as whole:\n            pass\n"
                         "    def m(self, d=(dflt := 1)):\n        x = (local := 2)\n"
                         "    f = lambda: (lam := 1)\n").body[0]
    found = {name: [n.lineno for n in splice.attribute_nodes(classdef, name, blocks=True)]
             for name in ("width", "n", "deep", "a", "rest", "g", "first", "others", "whole", "dflt",
                          "local", "lam")}
    assert found == {"width": [2], "n": [3], "deep": [4], "a": [5], "rest": [5], "g": [5], "first": [5],
                     "others": [5], "whole": [5], "dflt": [10], "local": [], "lam": []}
    # Not the block's own statements without `blocks`: `deep` is bound only where `if` runs it.
    assert [n.lineno for n in splice.attribute_nodes(classdef, "n")] == [3]
    assert splice.attribute_nodes(classdef, "deep") == []


def test_attribute_nodes_finds_what_a_loop_a_with_or_an_import_binds():
    # None was counted: compile_method let a def replace such a name, which the class body
    # binds again as a new session's import runs it.
    classdef = ast.parse("class C:\n    for i, (j, k) in []:\n        pass\n"
                         "    with a() as h, b() as (p, q):\n        pass\n"
                         "    import os.path\n    import json as codec\n    from m import run, x as y\n"
                         "    if True:\n        for deep in []:\n            pass\n"
                         "    submit.__doc__ = d[key] = 'only read'\n").body[0]
    found = {name: [n.lineno for n in splice.attribute_nodes(classdef, name, blocks=True)]
             for name in ("i", "j", "k", "h", "p", "q", "os", "codec", "run", "y", "x", "m", "json",
                          "deep", "submit", "d", "key")}
    assert found == {"i": [2], "j": [2], "k": [2], "h": [4], "p": [4], "q": [4], "os": [6], "codec": [7],
                     "run": [8], "y": [8], "x": [], "m": [], "json": [], "deep": [10], "submit": [],
                     "d": [], "key": []}
    assert splice.attribute_nodes(classdef, "deep") == []    # in a block: only with `blocks`


def test_a_class_body_deleting_a_name_it_does_not_bind_is_a_name_error():
    # `del run` in a class body deletes from the class's namespace alone: the module's run
    # does not count, so with the class's def of it gone running it is a NameError.
    with pytest.raises(NameError):
        exec("class C:\n    del run\n", {"run": 1})
    assert splice.names_deleted_now(ast.parse("if x:\n    del run, box.y\n").body[0]) == {"run"}
    source = "class C:\n    if True:\n        del run\n"
    assert splice.unbound_reader(source, "C", "run").lineno == 2
    assert splice.unbound_reader("run = 0\n" + source, "C", "run").lineno == 3
    assert splice.unbound_reader("class C:\n    def run(self): pass\n    del run\n", "C", "run") is None


def test_an_augmented_assignment_reads_its_name_before_it_binds_it():
    # `run += 1` in a class body reads run (the class's, else the module's) first: with
    # neither bound, running it is a NameError. Only its binding was seen.
    with pytest.raises(NameError):
        exec("class C:\n    run += 1\n", {})
    namespace = {"run": 1}
    exec("class C:\n    run += 1\n", namespace)
    assert vars(namespace["C"])["run"] == 2 and namespace["run"] == 1
    statement = ast.parse("run += size").body[0]
    assert splice.names_read_now(statement) == {"run", "size"}
    assert splice.names_read_now(ast.parse("box.run += 1").body[0]) == {"box"}
    source = "class C:\n    run += 1\n"
    assert splice.unbound_reader(source, "C", "run").lineno == 2
    assert splice.unbound_reader("run = 0\n" + source, "C", "run") is None


def test_a_name_the_class_body_declares_global_is_no_class_attribute():
    # `run = 5` below `global run` binds the module's run (the class has none): it was taken
    # for a class attribute, and a def of a global name carried into such a class.
    source = "run = 1\n\n\nclass C:\n    if True:\n        global run\n    run = 5\n    other = 2\n"
    namespace = {}
    exec(source, namespace)
    assert "run" not in vars(namespace["C"]) and namespace["run"] == 5
    classdef = ast.parse(source).body[1]
    assert splice.attribute_nodes(classdef, "run", blocks=True) == []
    assert splice.attribute_nodes(classdef, "run") == []
    assert [n.lineno for n in splice.attribute_nodes(classdef, "other")] == [8]
    assert [n.lineno for n in splice.global_declarations(classdef, "run")] == [6]
    old = ast.parse("class C:\n    def run(self):\n        return 1\n    def go(self):\n        return 2\n").body[0]
    new = ast.parse("class C:\n    global run\n").body[0]
    assert [node.name for node in splice.carried_members(old, new)] == ["go"]


def test_a_def_of_a_name_the_class_body_declares_global_is_no_method():
    # `def run` below `global run` binds the module's run: it was listed as the class's
    # method (get_method_source showed it, describe_class from source named it).
    source = ("def run():\n    return 0\n\n\nclass C:\n    global run\n    def run():\n        return 1\n\n"
              "    if True:\n        def run():\n            return 2\n\n    def m(self):\n        return 3\n")
    namespace = {}
    exec(source, namespace)
    assert not hasattr(namespace["C"], "run") and namespace["run"]() == 2
    classdef = ast.parse(source).body[1]
    assert [node.name for node in splice.methods_of(classdef)] == ["m"]
    assert splice.method_nodes(classdef, "run") == [] and splice.guarded_method_nodes(classdef, "run") == []


@pytest.mark.parametrize("declared, written", [("__x", "__x"), ("__x", "_C__x"), ("_C__x", "__x")])
def test_a_private_name_declared_global_in_a_class_body_is_mangled_as_python_mangles_it(declared, written):
    # `global __x` in class C declares the module's `_C__x` (symtable says so): compared as
    # written, `global _C__x` above `def __x` (or the reverse) left the def a method.
    source = f"class C:\n    global {declared}\n    def {written}(self):\n        return 1\n\n    def m(self):\n        return 2\n"
    namespace = {}
    exec(source, namespace)
    assert "_C__x" in namespace and not hasattr(namespace["C"], "_C__x")
    (scope,) = symtable.symtable(source, "<m>", "exec").get_children()
    assert scope.lookup("_C__x").is_declared_global()
    classdef = ast.parse(source).body[0]
    assert [node.lineno for node in splice.global_declarations(classdef, "_C__x")] == [2]
    assert [node.lineno for node in splice.global_declarations(classdef, "__x")] == [2]
    assert [node.name for node in splice.methods_of(classdef)] == ["m"]
    assert splice.attribute_nodes(classdef, "__x") == []


@pytest.mark.parametrize("declared", ["__x", "_C__x"])
def test_a_private_member_a_redefinition_declares_global_either_spelling_is_not_carried(declared):
    # `global _C__x` sent for a class with `def __x`: the def was carried below it, where it
    # bound the module's `_C__x`.
    old = ast.parse("class C:\n    def __x(self):\n        return 1\n    def go(self):\n        return 2\n").body[0]
    new = ast.parse(f"class C:\n    global {declared}\n").body[0]
    assert [node.name for node in splice.carried_members(old, new)] == ["go"]


# -- a removal reads as if the method or class had never been written ---------------

SPACED = '''\
# -*- coding: utf-8 -*-
class Spaced(Base):
    """Doc."""

    x = 1

    def first(self):
        return 1

    # About middle: it goes with middle.
    @staticmethod
    def middle():
        return 2

    def last(self):
        return 3


def tail():
    pass
'''


@pytest.mark.parametrize("selector, expected", [
    ("first", SPACED.replace("    def first(self):\n        return 1\n\n", "")),
    ("middle", SPACED.replace("    # About middle: it goes with middle.\n    @staticmethod\n"
                              "    def middle():\n        return 2\n\n", "")),
    ("last", SPACED.replace("\n    def last(self):\n        return 3\n", "")),
])
def test_removing_a_method_first_middle_or_last_leaves_pep8_spacing(selector, expected):
    assert splice.remove_method(SPACED, "Spaced", selector) == expected


def test_removing_every_method_leaves_the_docstring_and_statements_spaced():
    source = SPACED
    for selector in ("middle", "first", "last"):
        source = splice.remove_method(source, "Spaced", selector)
    assert source == ('# -*- coding: utf-8 -*-\nclass Spaced(Base):\n    """Doc."""\n\n'
                      '    x = 1\n\n\ndef tail():\n    pass\n')
    doc_only = 'class D:\n    """Doc."""\n\n    def m(self):\n        pass\n\n\nx = 1\n'
    assert splice.remove_method(doc_only, "D", "m") == 'class D:\n    """Doc."""\n\n\nx = 1\n'
    compile(splice.remove_method(doc_only, "D", "m"), "d.py", "exec")


@pytest.mark.parametrize("source, expected", [
    # The first statement after the header: the next one moves up to the header.
    ("class C:\n    def a(self):\n        pass\n\n    def b(self):\n        pass\n",
     "class C:\n    def b(self):\n        pass\n"),
    # Duplicates go together.
    ("class C:\n    def m(self):\n        pass\n\n    def m(self):\n        pass\n\n"
     "    def n(self):\n        pass\n", "class C:\n    def n(self):\n        pass\n"),
    # The only statement, under a header written on several lines, with a comment.
    ("class C(\n    Base,\n):\n    # about m\n    def m(self):\n        pass\n\n\nx = 1\n",
     "class C(\n    Base,\n):\n    pass\n\n\nx = 1\n"),
    ("class C:\n\n    def m(self):\n        pass\n\n\nx = 1\n", "class C:\n\n    pass\n\n\nx = 1\n"),
    # A comment set off by a blank line is not the method's, nor one at another indentation.
    ("class C:\n    x = 1\n\n    # section\n\n    def m(self):\n        pass\n        # inner\n"
     "    def n(self):\n        pass\n",
     "class C:\n    x = 1\n\n    # section\n\n    def m(self):\n        pass\n        # inner\n"),
])
def test_removing_a_method_in_other_layouts(source, expected):
    selector = "n" if "# inner" in source else "a" if "def a" in source else "m"
    removed = splice.remove_method(source, "C", selector)
    assert removed == expected
    compile(removed, "c.py", "exec")


def test_add_and_delete_cycles_give_back_the_source_byte_for_byte():
    for source in (SPACED, SPACED.split("\n\n\ndef tail")[0] + "\n", SPACED + "\n\nclass Z:\n    pass\n"):
        for _ in range(3):
            source_after, _ = splice.put_method(source, "Spaced", "def extra(self):\n    pass\n")
            assert splice.remove_method(source_after, "Spaced", "extra") == source
            with_class = splice.put_class(source, "Extra", "class Extra:\n    pass\n")
            assert splice.remove_class(with_class, "Extra") == source


def test_removing_a_class_takes_its_comments_but_never_the_encoding_declaration():
    source = ("# -*- coding: latin-1 -*-\nclass A:\n    pass\n\n\n"
              "# About B.\n@decorated\nclass B:\n    pass\n\n\nclass C:\n    pass\n")
    assert splice.remove_class(source, "B") == (
        "# -*- coding: latin-1 -*-\nclass A:\n    pass\n\n\nclass C:\n    pass\n")
    assert splice.remove_class(source, "A") == (
        "# -*- coding: latin-1 -*-\n# About B.\n@decorated\nclass B:\n    pass\n\n\n"
        "class C:\n    pass\n")
    shebang = "#!/usr/bin/env python\nclass A:\n    pass\n\n\nclass B:\n    pass\n"
    assert splice.remove_class(shebang, "A") == "#!/usr/bin/env python\nclass B:\n    pass\n"


# -- found by the randomized edits (test_image_splice_properties.py) ---------------

def test_a_docstring_goes_above_a_decorated_first_statement_and_its_comments():
    # Inserted at the def's line, it stood between the decorator and the def: a module
    # Python refuses, committed by set_class_comment.
    source = "class C:\n    # about m\n    @staticmethod\n    def m():\n        pass\n"
    added = splice.set_class_docstring(source, "C", "Doc.")
    assert added == ('class C:\n    """Doc."""\n    # about m\n    @staticmethod\n'
                     '    def m():\n        pass\n')
    assert splice.set_class_docstring(added, "C", "") == source


@pytest.mark.parametrize("source, comment, expected", [
    # What shares the docstring's line stays: replacing the lines lost `x = 1`.
    ('class C:\n    """d"""; x = 1\n', "New.", 'class C:\n    """New."""; x = 1\n'),
    ('class C:\n    """d"""; x = 1\n', "", "class C:\n    x = 1\n"),
    ('class C:\n    """d"""  # about d\n    x = 1\n', "New.", 'class C:\n    """New."""  # about d\n    x = 1\n'),
    ('class C:\n    ("d é"\n    ); x = 1\n', "New.", 'class C:\n    """New."""; x = 1\n'),
    ('class C:\n    "d"; pass\n', "", "class C:\n    pass\n"),
    # A comment after the closing quotes went with a removed docstring: it stays on its own line.
    ('class C:\n    """d"""  # about d\n    x = 1\n', "", "class C:\n    # about d\n    x = 1\n"),
    ('class C:\n    """d\n    more""";  # about d\n', "", "class C:\n    # about d\n    pass\n"),
    ('class C:\n\t"""d"""  # about d', "", "class C:\n\t# about d\n\tpass"),
])
def test_replacing_or_removing_a_docstring_keeps_what_shares_its_lines(source, comment, expected):
    assert splice.set_class_docstring(source, "C", comment) == expected


def test_filling_a_class_keeps_a_docstring_that_shares_the_placeholders_line():
    # `pass` was replaced with its whole line, the docstring with it.
    new, _ = splice.put_method('class C:\n    """Doc."""; pass\n', "C", "def m(self):\n    return 1\n")
    assert new == 'class C:\n    """Doc."""; pass\n\n    def m(self):\n        return 1\n'


@pytest.mark.parametrize("client_newline", ["\r\n", "\r"])
@pytest.mark.parametrize("module_newline", ["\n", "\r\n", "\r"])
def test_a_clients_newlines_become_the_modules_own(client_newline, module_newline):
    # A CRLF text spliced into a CRLF module came out with "\r\r\n": a blank line more
    # after every line, and inside a string literal a changed value.
    source = "class C:\n    x = 1\n".replace("\n", module_newline)
    method = "def m(self):\n    return '''a\nb'''\n".replace("\n", client_newline)
    new, _ = splice.put_method(source, "C", method)
    assert new == source + ("\n    def m(self):\n        return '''a\nb'''\n").replace("\n", module_newline)
    assert value_of(new, "C", "m") == "a\nb"
    documented = splice.set_class_docstring(source, "C", "two\nlines")
    assert documented == 'class C:\n    """two\nlines"""\n    x = 1\n'.replace("\n", module_newline)
    redefined = splice.put_class(source, "C", "class C:\n    y = 2\n".replace("\n", client_newline))
    assert redefined == "class C:\n    y = 2\n".replace("\n", module_newline)


def test_a_class_carried_over_from_a_crlf_module_keeps_its_methods_exactly():
    # compile_class_definition's path: the old methods (CRLF) into the client's text (LF),
    # then into the module (CRLF).
    source = "class C:\r\n    def m(self):\r\n        return '''a\r\nb'''\r\n"
    old = splice.top_level_class(ast.parse(source), "C")
    class_text = splice.with_methods("class C:\n    y = 2\n", "C", source, splice.methods_of(old))
    new = splice.put_class(source, "C", class_text)
    assert new == "class C:\r\n    y = 2\r\n\r\n    def m(self):\r\n        return '''a\r\nb'''\r\n"


def test_a_property_getter_and_setter_are_carried_over_together():
    # One by one, the setter replaced the getter: a redefined class lost its property.
    source = ("class C:\n    @property\n    def p(self):\n        return 1\n\n"
              "    @p.setter\n    def p(self, value):\n        pass\n\n    def q(self):\n        pass\n")
    old = splice.top_level_class(ast.parse(source), "C")
    class_text = splice.with_methods("class C:\n    pass\n", "C", source, splice.methods_of(old))
    assert class_text == source


@pytest.mark.parametrize("source", [
    "class C(Base\n        ): x = 1\n",
    "class C(\n    Base,\n): pass\n",
])
def test_a_class_whose_body_is_on_its_headers_last_line_is_refused(source):
    # The method went in at the indentation of the body's line: an unexpected indent.
    for edit in (lambda: splice.put_method(source, "C", "def m(self):\n    pass\n"),
                 lambda: splice.set_class_docstring(source, "C", "Doc."),
                 lambda: splice.remove_method(source, "C", "m")):
        with pytest.raises(splice.SpliceError, match="header"):
            edit()
    assert splice.class_definition(source, "C") == source


@pytest.mark.parametrize("source", [
    "class C:\n    def a(self):\n        pass",
    "x = 1\n\n\nclass C:\n    pass",
    "class C:\r\n    def a(self):\r\n        pass",
])
def test_a_module_without_a_final_newline_keeps_none_through_add_and_delete(source):
    added, _ = splice.put_method(source, "C", "def extra(self):\n    pass\n")
    assert added.endswith("    def extra(self):" + splice.newline_of(source) + "        pass")
    assert splice.remove_method(added, "C", "extra") == source
    appended = splice.put_class(source, "Extra", "class Extra:\n    pass\n")
    assert appended.endswith("class Extra:" + splice.newline_of(source) + "    pass")
    assert splice.remove_class(appended, "Extra") == source


def test_blank_lines_kept_by_a_removal_are_kept_as_written():
    # Spaces on a blank line, or the blank line that ended the module, came back changed.
    for source in ("class C:\n    x = 1\n  \n    def a(self):\n        pass\n\n\n\ny = 2\n",
                   "class C:\n    def a(self):\n        pass\n\n"):
        added, _ = splice.put_method(source, "C", "def extra(self):\n    pass\n")
        assert splice.remove_method(added, "C", "extra") == source


@pytest.mark.parametrize("header", ["", "#!/usr/bin/env python\n", "# -*- coding: utf-8 -*-\n"])
def test_the_comment_lines_that_open_the_file_stay_when_the_first_class_goes(header):
    # They went with the class under them: a deleted first class took the licence with it.
    source = (header + "# Copyright ACME.\n# SPDX-License-Identifier: MIT\nclass A:\n    pass\n\n\n"
              "class B:\n    pass\n")
    assert splice.remove_class(source, "A") == (
        header + "# Copyright ACME.\n# SPDX-License-Identifier: MIT\nclass B:\n    pass\n")
    # Below anything else, comment lines right above a class still go with it.
    assert splice.remove_class(source, "B") == (
        header + "# Copyright ACME.\n# SPDX-License-Identifier: MIT\nclass A:\n    pass\n")
    assert splice.remove_class("x = 1\n# About A.\nclass A:\n    pass\n", "A") == "x = 1\n"


@pytest.mark.parametrize("after", ["", "\n    def q(self):\n        pass\n"])
def test_replacing_a_propertys_defs_with_its_defs_leaves_no_stray_blank_lines(after):
    # The later def went but the blank line that set it off stayed, one more per edit.
    pair = ("    @property\n    def p(self):\n        return {}\n\n"
            "    @p.setter\n    def p(self, value):\n        pass\n")
    source = "class C:\n" + pair.format(1) + after
    text = "@property\ndef p(self):\n    return 2\n\n@p.setter\ndef p(self, value):\n    pass\n"
    new, replaced = splice.put_method(source, "C", text)
    assert replaced and new == "class C:\n" + pair.format(2) + after


OVERLOADED = '''\
import typing


class Conv:
    @typing.overload
    def conv(self, x: int) -> int: ...
    @typing.overload
    def conv(self, x: str) -> str: ...
    def conv(self, x):
        return x

    def other(self):
        return 1
'''


def test_a_plain_def_replaces_an_overloaded_methods_implementation_and_keeps_its_signatures():
    source, replaced = splice.put_method(OVERLOADED, "Conv", "def conv(self, x):\n    return [x]\n")
    assert replaced and source == OVERLOADED.replace("        return x\n", "        return [x]\n")


def test_overloads_sent_together_replace_every_def_of_the_name():
    text = "@typing.overload\ndef conv(self, x: int) -> int: ...\ndef conv(self, x):\n    return 0\n"
    source, replaced = splice.put_method(OVERLOADED, "Conv", text)
    assert replaced and "x: str" not in source and source.count("def conv") == 2
    assert "        return 0\n\n    def other(self):" in source


def test_an_implementation_for_signatures_alone_goes_right_after_them():
    stubs_only = OVERLOADED.replace("    def conv(self, x):\n        return x\n", "")
    source, replaced = splice.put_method(stubs_only, "Conv", "def conv(self, x):\n    return x\n")
    assert not replaced and source == OVERLOADED


USED_AT_CLASS_LEVEL = '''\
class K:
    limit = 3

    class Inner:
        pass

    def greet(self):
        return "hi"

    alias = greet

    def get_limit(self):
        return self.limit

    limit_prop = property(get_limit)

    def other(self):
        return 1
'''


def test_redefining_a_class_from_its_definition_keeps_methods_its_statements_use_and_nested_classes():
    old = splice.top_level_class(ast.parse(USED_AT_CLASS_LEVEL), "K")
    definition = splice.class_definition(USED_AT_CLASS_LEVEL, "K").replace("limit = 3", "limit = 4")
    new = ast.parse(definition).body[0]
    carried = splice.carried_members(old, new)
    assert [node.name for node in carried] == ["Inner", "greet", "get_limit", "other"]
    class_text = splice.with_methods(definition, "K", USED_AT_CLASS_LEVEL, carried)
    namespace = {}
    exec(class_text, namespace)          # greet and get_limit exist before the statements using them
    k = namespace["K"]()
    assert k.alias() == "hi" and k.limit_prop == 4 and namespace["K"].Inner and k.other() == 1
    assert class_text == ("class K:\n    limit = 4\n\n    def greet(self):\n        return \"hi\"\n\n"
                          "    alias = greet\n\n    def get_limit(self):\n        return self.limit\n\n"
                          "    limit_prop = property(get_limit)\n\n    class Inner:\n        pass\n\n"
                          "    def other(self):\n        return 1\n")


WRAPPING = '''\
class A:
    def _wrap(f):
        return f

    @_wrap
    def g(self):
        return 1

    def h(self):
        return "h"
'''


@pytest.mark.parametrize("user", [
    "@_wrap\n    def g(self):\n        return 2\n",                    # decorator
    "@_wrap\n    async def g(self):\n        return 2\n",
    "def g(self, x=_wrap):\n        return 2\n",                        # default
    "def g(self, *, x=_wrap):\n        return 2\n",
    "def g(self, x: _wrap(int)) -> None:\n        return 2\n",          # annotations
    "def g(self) -> _wrap(int):\n        return 2\n",
    "class g(_wrap(object)):\n        pass\n",                          # a nested class's base
    "class g(metaclass=_wrap(type)):\n        pass\n",
    "@_wrap\n    class g:\n        pass\n",
])
def test_a_carried_member_a_def_or_nested_class_statement_uses_goes_above_it(user):
    # Defs and nested classes were not looked at as users: _wrap went after its user, and
    # the class failed to build with "name '_wrap' is not defined".
    new_text = "class A:\n    x = 1\n\n    " + user
    old = splice.top_level_class(ast.parse(WRAPPING), "A")
    carried = splice.carried_members(old, ast.parse(new_text).body[0])
    assert [node.name for node in carried] == ["_wrap", "h"]
    class_text = splice.with_methods(new_text, "A", WRAPPING, carried)
    assert class_text == ("class A:\n    x = 1\n\n    def _wrap(f):\n        return f\n\n    " + user
                          + "\n    def h(self):\n        return \"h\"\n")
    namespace = {}
    exec(class_text, namespace)
    assert namespace["A"]().h() == "h"


CHAINED = '''\
class A:
    def _wrap(f):
        return f

    @_wrap
    def h(self):
        return "h"

    alias = h

    def other(self):
        return 1
'''


def test_a_carried_member_that_another_carried_member_uses_goes_above_that_ones_user():
    # _wrap, used only by the carried h, was appended at the end while h went above
    # `alias = h`: get_class_definition's text did not compile back (NameError).
    definition = splice.class_definition(CHAINED, "A")
    assert definition == "class A:\n    alias = h\n"
    old = splice.top_level_class(ast.parse(CHAINED), "A")
    carried = splice.carried_members(old, ast.parse(definition).body[0])
    class_text = splice.with_methods(definition, "A", CHAINED, carried)
    assert class_text == CHAINED
    namespace = {}
    exec(class_text, namespace)
    assert namespace["A"]().alias() == "h"


def test_a_name_only_a_def_body_or_a_nested_class_body_reads_is_no_user():
    # Those run later, or (a nested class's body) look the name up in the module, not the class.
    for user in ("def g(self):\n        return _wrap\n",
                 "class g:\n        y = _wrap\n\n        def k(self, v=_wrap):\n            pass\n"):
        new_text = "class A:\n    x = 1\n\n    " + user
        old = splice.top_level_class(ast.parse(WRAPPING), "A")
        carried = splice.carried_members(old, ast.parse(new_text).body[0])
        class_text = splice.with_methods(new_text, "A", WRAPPING, carried)
        assert class_text.startswith(new_text + "\n    def _wrap(f):"), class_text


SHADOWING = '''\
import json


class A:
    def g(self, x=json.dumps):
        return x

    def json(self):
        return "the method"
'''


def test_a_carried_member_named_like_a_global_stays_after_the_class_level_reader_of_that_global():
    # Moved above `def g(self, x=json.dumps)`, the carried method json shadowed the
    # module json there: the class failed to build ('function' has no attribute 'dumps').
    new_text = "class A:\n    def g(self, x=json.dumps):\n        return x\n"
    old = splice.top_level_class(ast.parse(SHADOWING), "A")
    carried = splice.carried_members(old, ast.parse(new_text).body[0])
    class_text = splice.with_methods(new_text, "A", SHADOWING, carried)
    assert class_text == SHADOWING.partition("\n\n\n")[2]
    namespace = {}
    exec("import json\n" + class_text, namespace)
    assert namespace["A"]().g() is namespace["json"].dumps
    assert namespace["A"]().json() == "the method"


def test_the_defs_of_one_name_are_set_apart_by_the_sources_own_newline():
    # A CRLF module's overloads came back with a bare "\n" between them: mixed newlines.
    source = ("class A:\n    @overload\n    def f(self, x: int) -> int: ...\n"
              "    @overload\n    def f(self, x: str) -> str: ...\n\n    def f(self, x):\n"
              "        return x")
    expected = ("@overload\ndef f(self, x: int) -> int: ...\n@overload\ndef f(self, x: str) -> str: ...\n"
                "\ndef f(self, x):\n    return x")
    for newline in ("\n", "\r\n", "\r"):
        text = source.replace("\n", newline)
        nodes = splice.method_nodes(splice.top_level_class(ast.parse(text), "A"), "f")
        assert splice.segments(text, nodes) == expected.replace("\n", newline)


def test_a_name_the_new_class_text_binds_itself_is_not_carried():
    old = splice.top_level_class(ast.parse(USED_AT_CLASS_LEVEL), "K")
    new = ast.parse("class K:\n    greet = None\n\n    def other(self):\n        return 2\n").body[0]
    assert [node.name for node in splice.carried_members(old, new)] == ["Inner", "get_limit"]


@pytest.mark.parametrize("source", [
    "class K:\n    run = 5\n\n    def run(self):\n        return 1\n",
    "class K:\n    def run(self):\n        return 1\n\n    run = 5\n",
], ids=["assigned-above", "assigned-below"])
def test_a_member_beside_an_assignment_of_its_name_is_carried_back_with_the_definition(source):
    # The definition shows `run = 5`, which counted as the text binding run itself: the def
    # was not carried, and the definition sent back unchanged dropped it (the class's run 5).
    old = splice.top_level_class(ast.parse(source), "K")
    definition = splice.class_definition(source, "K")
    carried = splice.carried_members(old, ast.parse(definition).body[0])
    assert [node.name for node in carried] == ["run"]
    assert overlay.written_over(definition, "K", source, carried) == source
    changed = ast.parse(definition.replace("run = 5", "run = 6")).body[0]
    assert [node.name for node in splice.carried_members(old, changed)] == ["run"]


@pytest.mark.parametrize("statement", ["run = classmethod(run)\n", "run += 1\n",
                                       "if True:\n        run = staticmethod(run)\n"])
def test_a_member_the_new_class_text_rebinds_from_itself_is_carried(statement):
    # distutils.msvc9compiler.Reg: `run = classmethod(run)` counted as the text binding run
    # itself, the def was not carried, and the class body failed to read it (NameError).
    old = ast.parse("class K:\n    def run(self):\n        return 1\n\n"
                    "    def other(self):\n        return 2\n").body[0]
    new = ast.parse("class K:\n    " + statement).body[0]
    assert [node.name for node in splice.carried_members(old, new)] == ["run", "other"]


def test_a_member_rebound_from_itself_taken_out_and_sent_back_goes_back_where_it_was():
    source = ('class A:\n    """Doc."""\n\n    def get(cls, key):\n        return key\n    get = classmethod(get)\n\n'
              '    def keys(cls):\n        return []\n    keys = classmethod(keys)\n')
    definition = splice.class_definition(source, "A")
    without = redefined(source, definition.replace("    get = classmethod(get)\n", "", 1))
    assert "def get" in without and "get = classmethod" not in without
    assert redefined(without, definition) == source


@pytest.mark.parametrize("statement", [
    "for run in range(2):\n        pass\n",
    "with ctx() as (run, other_name):\n        pass\n",
    "import json as run\n",
    "from json import dumps as run\n",
    "size = (run := 3)\n",
    "match {}:\n        case {**run}:\n            pass\n",
], ids=["loop-target", "with-target", "import", "from-import", "walrus", "match-capture"])
def test_a_name_the_new_class_text_binds_by_any_statement_is_not_carried(statement):
    # Only defs, nested classes and assignments counted: the old def was carried and, put
    # below the statement, overrode what it binds.
    old = ast.parse("class K:\n    def run(self):\n        return 1\n\n"
                    "    def other(self):\n        return 2\n").body[0]
    new = ast.parse("class K:\n    " + statement).body[0]
    assert [node.name for node in splice.carried_members(old, new)] == ["other"]


@pytest.mark.parametrize("statement", [
    "if True:\n        run = 5\n",
    "try:\n        run = 5\n    except Exception:\n        pass\n",
    "for _ in [1]:\n        run = 5\n",
    "if True:\n        def run(self):\n            return 3\n",
], ids=["if", "try", "loop-body", "def-in-if"])
def test_a_name_the_new_class_text_binds_in_a_class_level_block_is_not_carried(statement):
    # Only the body's own statements counted: the old def was carried, put below the
    # block, and overrode what it binds (the live run the old def, the file saying both).
    old = ast.parse("class K:\n    def run(self):\n        return 1\n\n"
                    "    def other(self):\n        return 2\n").body[0]
    new = ast.parse("class K:\n    " + statement).body[0]
    assert [node.name for node in splice.carried_members(old, new)] == ["other"]


def test_a_member_beside_a_binding_in_a_block_is_carried_back_with_the_definition():
    source = "class K:\n    if True:\n        run = 5\n\n    def run(self):\n        return 1\n"
    old = splice.top_level_class(ast.parse(source), "K")
    definition = splice.class_definition(source, "K")
    carried = splice.carried_members(old, ast.parse(definition).body[0])
    assert [node.name for node in carried] == ["run"]
    assert overlay.written_over(definition, "K", source, carried) == source


def test_a_member_beside_an_import_of_its_name_is_carried_back_with_the_definition():
    source = "class K:\n    from json import dumps as run\n\n    def run(self):\n        return 1\n"
    old = splice.top_level_class(ast.parse(source), "K")
    definition = splice.class_definition(source, "K")
    carried = splice.carried_members(old, ast.parse(definition).body[0])
    assert overlay.written_over(definition, "K", source, carried) == source


def redefined(source: str, class_text: str) -> str:
    """`source` with its class A redefined to `class_text` as compile_class_definition does it."""
    old = splice.top_level_class(ast.parse(source), "A")
    carried = splice.carried_members(old, ast.parse(class_text).body[0])
    return splice.put_class(source, "A", overlay.written_over(class_text, "A", source, carried))


TAKEN_OUT_AND_BACK = {
    "comment-left-under-the-header": (
        "class A:\n\n    # about x\n    x = 1\n\n    def m(self):\n        return 1\n\n    y = m\n",
        "    x = 1\n",
        "class A:\n\n    # about x\n\n    def m(self):\n        return 1\n\n    y = m\n"),
    "first-under-a-blank-line": (
        "class A:\n\n    z = 2\n\n    def m(self):\n        return 1\n\n    y = 3\n",
        "    z = 2\n",
        "class A:\n\n    def m(self):\n        return 1\n\n    y = 3\n"),
    "below-the-docstring": (
        'class A:\n    """Doc."""\n\n    __slots__ = ()\n\n    def m(self):\n        return 1\n\n    y = 3\n',
        "    __slots__ = ()\n",
        'class A:\n    """Doc."""\n\n    def m(self):\n        return 1\n\n    y = 3\n'),
    # statistics.NormalDist: the comment and blank line above it are the def's once it is out.
    "below-the-docstrings-comment": (
        'class A:\n    "Doc"\n    # c1\n\n    __slots__ = {\n        1: 2,\n    }\n\n    def m(self):\n'
        '        return 1\n\n    y = m\n',
        "    __slots__ = {\n        1: 2,\n    }\n",
        'class A:\n    "Doc"\n    # c1\n\n    def m(self):\n        return 1\n\n    y = m\n'),
    # mailbox.Mailbox: the comment left is the def's below it, written below another def.
    "comment-left-between-methods": (
        'class A:\n    """Doc."""\n\n    def m(self):\n        return 1\n\n    # about x\n    x = 1\n\n'
        '    def n(self):\n        return 2\n\n    y = 3\n',
        "    x = 1\n",
        'class A:\n    """Doc."""\n\n    def m(self):\n        return 1\n\n    # about x\n\n'
        '    def n(self):\n        return 2\n\n    y = 3\n'),
    "below-a-statement": (
        "class A:\n    x = 1\n\n    z = 2\n\n    def m(self):\n        return 1\n\n    y = 3\n",
        "    z = 2\n",
        "class A:\n    x = 1\n\n    def m(self):\n        return 1\n\n    y = 3\n"),
    # optparse.Option: two blank lines between the statements and the methods.
    "below-two-blank-lines": (
        "class A:\n    x = 1\n\n\n    # about y\n    y = 2\n\n\n    def m(self):\n        return 1\n\n\n"
        "    z = 3\n",
        "    y = 2\n",
        "class A:\n    x = 1\n\n\n    # about y\n\n\n    def m(self):\n        return 1\n\n\n    z = 3\n"),
    # distutils.command.build.build: the blank line under the header is the class's.
    "first-under-a-blank-line-above-a-statement": (
        "class A:\n\n    x = 1\n\n    y = 2\n\n    def m(self):\n        return 1\n",
        "    x = 1\n",
        "class A:\n\n    y = 2\n\n    def m(self):\n        return 1\n"),
    # collections.UserString: the first statement shown, reading a method, under a blank line.
    "first-reading-a-method": (
        "class A:\n\n    def m(self):\n        return 1\n\n    x = m\n\n    def n(self):\n        return 2\n\n"
        "    y = 2\n",
        "    x = m\n",
        "class A:\n\n    def m(self):\n        return 1\n\n    def n(self):\n        return 2\n\n    y = 2\n"),
}


@pytest.mark.parametrize("case", TAKEN_OUT_AND_BACK)
def test_a_statement_taken_out_of_the_definition_and_sent_back_goes_back_where_it_was(case):
    # The comment left was written twice, the blank line under the header lost; taken out
    # below another statement, two blank lines were left; sent back, the statement went
    # right above the next statement shown, below the methods.
    source, statement, taken_out = TAKEN_OUT_AND_BACK[case]
    definition = splice.class_definition(source, "A")
    without = redefined(source, definition.replace(statement, "", 1))
    assert without == taken_out
    assert redefined(without, definition) == source


def test_the_only_statement_reading_a_method_taken_out_and_sent_back_goes_back_where_it_was():
    # inspect._ClassFinder: `pass` sent in its place, then the definition sent back, it
    # moved the first method below itself.
    source = ("class A:\n    def m(self):\n        return 1\n\n    def n(self):\n        return 2\n\n"
              "    o = n\n\n    def p(self):\n        return 3\n")
    definition = splice.class_definition(source, "A")
    without = redefined(source, "class A:\n    pass\n")
    assert without == source.replace("    o = n\n\n", "")
    assert redefined(without, definition) == source


@pytest.mark.parametrize("sent, expected", [
    # Reading a method, it fell to with_methods: `pass` written, the methods swapped.
    ("class A:\n    pass\n    o = n\n", "class A:\n    def m(self):\n        return 1\n\n"
     "    def n(self):\n        return 2\n\n    o = n\n"),
    ("class A:\n    pass\n    o = m\n", "class A:\n    def m(self):\n        return 1\n\n"
     "    o = m\n\n    def n(self):\n        return 2\n"),
    # Reading none, it was not set apart from the first method.
    ("class A:\n    pass\n    z = 3\n", "class A:\n    z = 3\n\n    def m(self):\n        return 1\n\n"
     "    def n(self):\n        return 2\n"),
    ("class A:\n    z = 3\n    pass\n", "class A:\n    z = 3\n\n    def m(self):\n        return 1\n\n"
     "    def n(self):\n        return 2\n"),
])
def test_statements_written_beside_the_pass_shown_for_methods_only_replace_it(sent, expected):
    source = "class A:\n    def m(self):\n        return 1\n\n    def n(self):\n        return 2\n"
    assert splice.class_definition(source, "A") == "class A:\n    pass\n"
    assert redefined(source, sent) == redefined(source, sent.replace("    pass\n", "")) == expected


def test_a_statement_added_with_a_blank_line_below_it_below_the_method_it_reads_is_set_apart_from_it():
    # It went right below the method, the blank line it ends with written twice below it.
    source = "class A:\n    x = 1\n\n    def m(self):\n        return 1\n\n    def n(self):\n        return 2\n"
    assert redefined(source, "class A:\n    x = 1\n    y = m\n\n") == (
        "class A:\n    x = 1\n\n    def m(self):\n        return 1\n\n    y = m\n\n"
        "    def n(self):\n        return 2\n")


def test_removing_a_class_written_twice_removes_both_definitions():
    source = "class T:\n    a = 1\n\n\nclass U:\n    pass\n\n\nclass T:\n    b = 2\n"
    assert splice.remove_class(source, "T") == "class U:\n    pass\n"


@pytest.mark.parametrize("above, read", [
    ("", True),
    ("def getx(self):\n    return 1\n", False),
    # Under a top-level if/try/with it is bound too when surely run: only plain statements
    # counted, delete_method refused a method the module still imported without.
    ("if True:\n    def getx(self):\n        return 1\n", False),
    ("if X:\n    def getx(self):\n        return 1\nelse:\n    getx = None\n", False),
    ("try:\n    from m import getx\nexcept ImportError:\n    getx = None\n", False),
    ("try:\n    pass\nfinally:\n    getx = None\n", False),
    ("with open(__file__) as getx:\n    pass\n", False),
    # ...and not where it may not be: a class body reading it fails then. `if TYPE_CHECKING`
    # bound it for the check, and delete_method committed a module importing nowhere.
    ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from os.path import getx\n", True),
    ("if False:\n    def getx(self):\n        return 1\n", True),
    ("try:\n    from m import getx\nexcept ImportError:\n    pass\n", True),
    ("for getx in []:\n    pass\n", True),
    ("getx: object\n", True),
    # A scope of its own binds nothing in the module.
    ("def f():\n    getx = 1\n", True),
    ("xs = [getx for getx in range(3)]\n", True),
    ("if True:\n    class C:\n        getx = 1\n", True),
    ("from m import *\n", True),
])
def test_unbound_reader_counts_what_the_module_binds_above_the_class(above, read):
    source = above + "\n\nclass A:\n    x = property(getx)\n"
    reader = splice.unbound_reader(source, "A", "getx")
    assert (reader is not None) is read


@pytest.mark.parametrize("above, read", [
    # An import and a `with`'s target surely bind: they were not counted, and delete_method
    # refused a method the class body still had bound that way.
    ("from m import getx\n", False),
    ("import getx\n", False),
    ("with ctx() as (getx, other):\n        pass\n", False),
    # An annotation alone binds nothing: counted, delete_method let the class body's read of
    # the name fail in every new session's import (NameError).
    ("getx: object\n", True),
    ("for getx in []:\n        pass\n", True),
    ("if (getx := 1):\n        pass\n", True),
    ("getx = 1\n", False),
])
def test_unbound_reader_counts_what_the_class_body_surely_binds_above_the_reader(above, read):
    source = "class A:\n    " + above + "    x = property(getx)\n"
    reader = splice.unbound_reader(source, "A", "getx")
    assert (reader is not None) is read


TAB_INDENTED = "class Tabbed:\n\tdef first(self):\n\t\treturn 1\n"
SPACE_INDENTED = "class Spaced:\n    def first(self):\n        return 1\n"


@pytest.mark.parametrize("text", [
    "def second(self):\n\tif self:\n\t\treturn 2\n",
    "\tdef second(self):\n\t\tif self:\n\t\t\treturn 2\n",
    "def second(self):\n    if self:\n        return 2\n",
    "    def second(self):\n      if self:\n         return 2\n",
], ids=["tabs", "tabs-indented", "spaces", "spaces-indented-oddly"])
def test_a_method_goes_into_a_tab_indented_class_indented_with_tabs(text):
    # Prefixed as sent, a spaced method left lines like "\t    return" in a tabbed module.
    new, _ = splice.put_method(TAB_INDENTED, "Tabbed", text)
    assert new == TAB_INDENTED + "\n\tdef second(self):\n\t\tif self:\n\t\t\treturn 2\n"


def test_a_one_line_method_goes_into_a_tab_indented_class_at_its_level():
    new, _ = splice.put_method(TAB_INDENTED, "Tabbed", "def second(self): return 2")
    assert new == TAB_INDENTED + "\n\tdef second(self): return 2\n"


def test_a_tab_indented_method_goes_into_a_space_indented_class_indented_with_spaces():
    text = ('def first(self):\n\t"""Doc.\n\n\tkept as written: the string\'s own."""\n'
            "\tvalue = (1,\n\t         2)  # aligned\n\t# about the return\n\treturn value\n")
    new, replaced = splice.put_method(SPACE_INDENTED, "Spaced", text)
    assert replaced
    assert new == ('class Spaced:\n    def first(self):\n        """Doc.\n\n\tkept as written: '
                   'the string\'s own."""\n        value = (1,\n                 2)  # aligned\n'
                   "        # about the return\n        return value\n")


def test_a_comment_line_takes_the_level_of_the_block_it_is_written_at():
    text = "def m(self):\n\tif self:\n\t\tpass\n\t# after the if\n\t\t# still in it\n\treturn 1\n"
    new, _ = splice.put_method(SPACE_INDENTED, "Spaced", text)
    assert ("            pass\n        # after the if\n            # still in it\n"
            "        return 1\n") in new


def test_a_class_goes_into_a_tab_indented_module_indented_with_tabs():
    spaced_class = "class New:\n    def m(self):\n        return 1\n"
    assert splice.put_class(TAB_INDENTED, "New", spaced_class) == (
        TAB_INDENTED + "\n\nclass New:\n\tdef m(self):\n\t\treturn 1\n")
    # Redefined from a spaced text, the class keeps its tabs and its carried method as written.
    text = splice.with_methods("class Tabbed:\n    x = 1\n", "Tabbed", TAB_INDENTED,
                               splice.methods_of(splice.top_level_class(ast.parse(TAB_INDENTED), "Tabbed")))
    assert splice.put_class(TAB_INDENTED, "Tabbed", text) == "class Tabbed:\n\tx = 1\n\n" + TAB_INDENTED[14:]
    # Its own class, written with tabs in a spaced module, keeps them: it is consistent.
    assert splice.class_indent_unit(SPACE_INDENTED + "\n\nclass T:\n\tx = 1\n", "T") == "\t"
    assert splice.class_indent_unit("x = 1\n", "New") == ""    # nothing indented: any style fits


def test_a_form_feed_before_the_class_body_does_not_count_as_its_indentation():
    # Python resets its column at a form feed: "\f\t" indents by a tab, not by "\f\t".
    source = "class F:\n\x0c\tx = 1\n\tdef m(self):\n\t\treturn 1\n"
    new, _ = splice.put_method(source, "F", "def n(self):\n    return 2\n")
    assert new.endswith("\n\tdef n(self):\n\t\treturn 2\n") and ast.parse(new)


def test_a_form_feed_in_a_sent_methods_indentation_is_no_part_of_its_level():
    # "\f\t" opens a line indented by the tab alone, the level of the "\t" lines below it:
    # matched against "\f\t", those lines kept their tab in a spaced class, a TabError refused.
    # Why _leading_whitespace counts a form feed where indent_of does not: a spaced line
    # after one ("\f    x = 1") has its level re-made, as a prefix before the form feed is void.
    for body in ("\x0c\tx = 1\n\treturn x\n", "\tx = 1\n\x0c\treturn x\n", "\x0c    x = 1\n    return x\n"):
        new, _ = splice.put_method(SPACE_INDENTED, "Spaced", "def n(self):\n" + body)
        assert new.endswith("\n    def n(self):\n        x = 1\n        return x\n"), repr(new)


def test_a_comment_after_a_form_feed_at_column_0_is_the_modules_not_the_class_above():
    # Why indent_of stops at a form feed where _leading_whitespace does not: counted in a
    # comment's indentation, "\f" made this section comment deeper than the class, so it
    # went with it, shown and removed.
    source = "class A:\n    pass\n\x0c# Section two\nclass B:\n    pass\n"
    assert splice.segment(source, splice.top_level_class(ast.parse(source), "A")) == "class A:\n    pass\n"
    assert splice.remove_class(source, "A") == "\x0c# Section two\nclass B:\n    pass\n"


def test_a_one_line_class_redefined_takes_the_indentation_of_the_module():
    # Its body on the header line has no indentation of its own: not four spaces in a tabbed module.
    source = TAB_INDENTED + "\n\nclass One: pass\n"
    assert splice.class_indent_unit(source, "One") == "\t"
    assert splice.put_class(source, "One", "class One:\n    x = 1\n") == TAB_INDENTED + "\n\nclass One:\n\tx = 1\n"


def test_an_edit_python_would_read_as_misindented_is_refused_saying_why():
    # No edit above is known to reach it (a module-level function never does: its lines
    # nest in no block of the module); the check keeps any that does from being written.
    # What to do is worded for any kind, not "send the whole class".
    with pytest.raises(splice.IndentationMismatch, match=r"^method m cannot be indented to fit "
                       r"the module: written in, Python would read line 3 as misindented "
                       r"\(unindent does not match any outer indentation level\); nothing was changed\. "
                       r"Send it indented in one style \(tabs or spaces, not both\), or edit the "
                       r"module's file in an editor, then refresh$"):
        splice._importable("class C:\n\tx = 1\n    def m(self): pass\n", "method m")


def test_class_level_readers_are_the_statements_below_a_def_that_read_it_as_the_class_runs():
    classdef = ast.parse(
        "class C:\n    early = get_x  # the module's, above the def\n\n    def get_x(self):\n        return 1\n\n"
        "    x = property(get_x)\n    @property\n    def p(self):\n        return get_x\n\n"
        "    @p.setter\n    def p(self, v):\n        pass\n\n    @get_x.register\n    def h(self):\n        pass\n").body[0]
    readers = splice.class_level_readers(classdef, "get_x")
    assert [(splice.first_line(node), splice.bound_names(node)) for node in readers] == [(7, {"x"}), (16, {"h"})]
    assert splice.class_level_readers(classdef, "p") == []    # its own setter is one of its defs


TRAILING = '''\
class Gen:
    def write_lines(self, lines):
        if lines:
            self.write(lines)
        # XXX logic tells me this else should be needed
        #else:
        #    self.write(self._NL)

    # Comment above last.
    def last(self):
        return 1
        # last's own note
'''


def test_a_methods_trailing_comments_are_its_own():
    # email.generator's _write_lines ends in a commented-out else: a class redefined with
    # its methods carried over lost it, as get_method_source never showed it.
    classdef = splice.top_level_class(ast.parse(TRAILING), "Gen")
    first, last = splice.methods_of(classdef)
    assert splice.segment(TRAILING, first).endswith("\n    #else:\n    #    self.write(self._NL)\n")
    assert splice.segment(TRAILING, last) == "def last(self):\n    return 1\n    # last's own note\n"
    assert splice.with_methods("class Gen:\n    pass\n", "Gen", TRAILING, [first, last]) == TRAILING


def test_replacing_or_removing_a_method_takes_its_trailing_comments_with_it():
    replaced, _ = splice.put_method(TRAILING, "Gen", "def write_lines(self, lines):\n    pass\n")
    assert replaced == TRAILING.replace(TRAILING[TRAILING.index("        if lines"):
                                                 TRAILING.index("\n    # Comment above")],
                                        "        pass\n")
    assert "# XXX" not in splice.remove_method(TRAILING, "Gen", "write_lines")
    assert splice.remove_method(TRAILING, "Gen", "last").endswith("#    self.write(self._NL)\n")
    # a new method goes below the last one's trailing comments, not between
    added, _ = splice.put_method(TRAILING, "Gen", "def more(self):\n    return 2\n")
    assert added == TRAILING + "\n    def more(self):\n        return 2\n"


COMMENTED = '''\
class Parser:
    """Doc."""

    size = 1

    #
    # Public interface
    #

    def feed(self, data):
        return data

    # Non-public interface for supporting the headersonly flag
    def _set_headersonly(self):
        self._headersonly = True
'''


def test_a_replacement_sent_with_comment_lines_above_its_def_takes_the_place_of_those_above_it():
    # They were written above the def and its comments: each compile_method of the same
    # text added the comment again, and a comment reworded kept the old one above it.
    sent = "# Non-public interface for the headersonly flag\ndef _set_headersonly(self):\n    self._headersonly = 1\n"
    once, replaced = splice.put_method(COMMENTED, "Parser", sent)
    assert replaced and once == COMMENTED.replace(
        "    # Non-public interface for supporting the headersonly flag\n",
        "    # Non-public interface for the headersonly flag\n").replace("= True", "= 1")
    assert splice.put_method(once, "Parser", sent) == (once, True)
    # Sent without comments (as get_method_source shows it), the def keeps its own.
    assert splice.put_method(COMMENTED, "Parser", sent.split("\n", 1)[1])[0] == COMMENTED.replace("= True", "= 1")
    module = "import os\n\n\n# Says hello.\ndef hello():\n    return 1\n"
    assert splice.put_function(module, "# Says hello.\ndef hello():\n    return 2\n")[0] == module.replace("1\n", "2\n")


def test_a_class_statement_sent_with_comment_lines_above_it_takes_the_place_of_those_above_it():
    source = "import os\n\n\n# A shelf.\nclass Shelf:\n    slots = 3\n"
    sent = "# A wide shelf.\nclass Shelf:\n    slots = 4\n"
    once = splice.put_class(source, "Shelf", sent)
    assert once == "import os\n\n\n# A wide shelf.\nclass Shelf:\n    slots = 4\n"
    assert splice.put_class(once, "Shelf", sent) == once
    assert splice.put_class(source, "Shelf", "class Shelf:\n    slots = 4\n") == source.replace("3", "4")


@pytest.mark.parametrize("source", ["# Helpers.\ndef hello():\n    return 1\n",
                                    "import os\n\n\ndef hello():\n    return 1\n"])
@pytest.mark.parametrize("sent", ["# Says hello.\ndef hello():\n    return 2\n",
                                  "# Says hello.\n\ndef hello():\n    return 2\n"])
def test_comment_lines_sent_above_a_def_with_none_of_its_own_above_it_are_written_once(source, sent):
    # Those opening the file are the module's, and a comment set apart by a blank line no
    # def's: the comment sent was written again at each send, above the last.
    once = splice.put_function(source, sent)[0]
    assert once == source.replace("def hello():\n    return 1\n", sent)
    assert splice.put_function(once, sent)[0] == once


def test_comment_lines_sent_above_a_def_leave_the_trailing_comments_of_the_method_above_it_to_that_method():
    source = "class A:\n    def a(self):\n        return 1\n        # a's own\n\n    def b(self):\n        return 1\n"
    sent = "# a's own\n\ndef b(self):\n    return 2\n"
    assert splice.put_method(source, "A", sent)[0] == source.replace(
        "    def b(self):\n        return 1\n", "    # a's own\n\n    def b(self):\n        return 2\n")


@pytest.mark.parametrize("below", ["# Totals end here.\n", "# Totals end here.\n\n# and here.\n"])
def test_comment_lines_sent_below_a_def_are_written_once_however_often_sent(below):
    # Written below the def, outside its span: each compile_method of the same text wrote
    # them again below the last copy (a method and a module's function alike).
    source = COMMENTED
    sent = "def feed(self, data):\n    return data * 2\n" + below
    once = splice.put_method(source, "Parser", sent)[0]
    assert once == source.replace("        return data\n", "        return data * 2\n" + "".join(
        "    " + line if line.strip() else line for line in splice.lines_of(below)))
    assert splice.put_method(once, "Parser", sent) == (once, True)
    module = "import os\n\n\ndef hello():\n    return 1\n"
    once = splice.put_function(module, "def hello():\n    return 2\n" + below)[0]
    assert once == module.replace("1\n", "2\n" + below)
    assert splice.put_function(once, "def hello():\n    return 2\n" + below)[0] == once
    # and a class statement's (compile_class_definition)
    once = splice.put_class(module + "\n\nclass Shelf:\n    slots = 3\n", "Shelf", "class Shelf:\n    slots = 4\n" + below)
    assert once == module + "\n\nclass Shelf:\n    slots = 4\n" + below
    assert splice.put_class(once, "Shelf", "class Shelf:\n    slots = 4\n" + below) == once


def test_a_new_method_goes_below_the_comment_lines_written_below_the_last_one():
    # Appended right below the last method's statements, it took the comment lines sent
    # below that method (written there at its indentation) from it: they drifted below the
    # new one. A later method is added below them, as a method below body comments is.
    source = "class A:\n    def a(self):\n        return 1\n"
    once = splice.put_method(source, "A", "def b(self):\n    return 2\n# b's end\n")[0]
    assert once == source + "\n    def b(self):\n        return 2\n    # b's end\n"
    assert splice.put_method(once, "A", "def c(self):\n    return 3\n")[0] == (
        once + "\n    def c(self):\n        return 3\n")


@pytest.mark.parametrize("statement, below", [
    ("class Shelf:\n    slots = 3\n", "# the shelf's end\n"),
    ("class Shelf:\n    slots = 3\n", "\n# the shelf's end\n\n# and more\n"),
    ("class Shelf:\n    slots = 3\n    # its last slot\n", "# the shelf's end\n"),
    ("class Shelf:\n# at the margin, yet inside\n    slots = 3\n", ""),
    ("class Shelf:\n    slots = 3\n", ""),
])
def test_the_comment_lines_ending_a_class_statement_at_its_margin_are_parted_from_it(statement, below):
    assert splice.comments_below(statement + below) == (statement, below)


def test_comment_lines_sent_below_a_def_take_none_written_there_but_those_very_lines():
    # The comments of the statement below are its own: a different comment sent is added.
    source = "class A:\n    def a(self):\n        return 1\n    # b's own\n    def b(self):\n        return 1\n"
    assert splice.put_method(source, "A", "def a(self):\n    return 2\n# a's end\n")[0] == source.replace(
        "        return 1\n    # b's", "        return 2\n    # a's end\n    # b's", 1)


def test_a_carried_method_keeps_the_comments_above_it_that_the_class_definition_leaves_out():
    # email.feedparser's "# Non-public interface ..." above _set_headersonly, and
    # email.generator's "# Public interface" block: get_class_definition leaves them out
    # with their methods, and compiling that text back lost them.
    definition = splice.class_definition(COMMENTED, "Parser")
    assert "#" not in definition
    carried = splice.methods_of(splice.top_level_class(ast.parse(COMMENTED), "Parser"))
    assert splice.with_methods(definition, "Parser", COMMENTED, carried) == COMMENTED


def test_the_comments_ending_a_class_body_are_in_its_definition():
    # email.errors' NonASCIILocalPartDefect ends in a comment below its docstring: its
    # definition left it out, and compiling that back lost it.
    source = ('class Defect(Base):\n    """Doc."""\n    # only during unicode parsing\n\n\n'
              'class Other:\n    def f(self):\n        return 1\n    # the end of Other\n')
    assert splice.class_definition(source, "Defect") == 'class Defect(Base):\n    """Doc."""\n    # only during unicode parsing\n'
    definition = splice.class_definition(source, "Other")
    assert definition == "class Other:\n    pass\n    # the end of Other\n"
    carried = splice.methods_of(splice.top_level_class(ast.parse(source), "Other"))
    assert splice.put_class(source, "Other", splice.with_methods(definition, "Other", source, carried)) == source


def test_a_private_name_is_spelled_either_way_on_either_side():
    for selector, name in (("__p", "__p"), ("_C__p", "__p"), ("__p", "_C__p"), ("_C__p", "_C__p")):
        assert splice.spelled(selector, name, "C")
    assert not splice.spelled("__p", "_D__p", "C") and not splice.spelled("__p", "_C__p", None)
    classdef = ast.parse("class C:\n    def _C__p(self):\n        pass\n").body[0]
    assert [node.name for node in splice.method_nodes(classdef, "__p")] == ["_C__p"]


def test_method_kind_of_the_defs_python_makes_class_side():
    body = ast.parse("class C:\n    def __new__(cls): pass\n    def __init_subclass__(cls): pass\n"
                     "    def __class_getitem__(cls, item): pass\n    @staticmethod\n"
                     "    def __init_subclass__(): pass\n    def __init__(self): pass\n").body[0].body
    assert [splice.method_kind(node) for node in body] == ["static", "class", "class", "static", "instance"]


@pytest.mark.parametrize("source, lines", [
    ("try:\n    a\nexcept E:\n    b\nelse:\n    c\nfinally:\n    d\n", [2, 6, 8, 4]),
    ("try:\n    a\nexcept* E:\n    b\nexcept* F:\n    c\n", [2, 4, 6]),
    ("for x in y:\n    a\nelse:\n    b\n", [2, 4]),
    ("while x:\n    a\n    b\nelse:\n    c\n", [2, 3, 5]),
    ("if x:\n    a\nelif y:\n    b\nelse:\n    c\n", [2, 3]),     # the elif is an If in orelse
    ("with x:\n    a\n", [2]),
    ("match x:\n    case 1:\n        a\n    case _:\n        b\n        c\n", [3, 5, 6]),
    ("def f(x=lambda: 0):\n    a\n", [2]),
    ("class C(B):\n    a\n", [2]),
    ("x = 1\n", []),
])
def test_child_statements_are_every_block_of_a_statement_body_else_finally_then_handlers_and_cases(source, lines):
    # live.attribute_reader takes the first of them that reads an attribute: the order is
    # part of what it answers.
    statement = ast.parse(source).body[0]
    assert [child.lineno for child in splice.child_statements(statement)] == lines


@pytest.mark.parametrize("sent", [
    "class A:\n\n    x = 1\n\n    def f(self):\n        return 1\n",   # export_class_source's text
    "class A:\n\n    x = 1\n",                                          # its definition, with that blank line
    "class A:\n    x = 1\n",                                            # get_class_definition's text
])
def test_a_class_opening_with_a_blank_line_sent_back_is_left_as_it_was(sent):
    # calendar's _localized_month opens its body with a blank line, which the definition
    # drops and keeps: a text sent with it too wrote both, one more blank line a round trip.
    source = "class A:\n\n    x = 1\n\n    def f(self):\n        return 1\n"
    old, new = (splice.top_level_class(ast.parse(text), "A") for text in (source, sent))
    class_text = overlay.written_over(sent, "A", source, splice.carried_members(old, new))
    assert splice.put_class(source, "A", class_text) == source


@pytest.mark.parametrize("header", ["class A(object):", "class A(\n    object,\n):"])
def test_a_class_opening_with_a_blank_line_sent_with_a_new_header_keeps_one(header):
    # jwt's exceptions with their docstring removed: the changed header took the text's
    # blank line into its replacement, so the class's was kept too, one more each time.
    source = "class A:\n\n    x = 1\n\n    def f(self):\n        return 1\n"
    sent = header + "\n\n    x = 1\n"
    old, new = (splice.top_level_class(ast.parse(text), "A") for text in (source, sent))
    class_text = overlay.written_over(sent, "A", source, splice.carried_members(old, new))
    assert splice.put_class(source, "A", class_text) == source.replace("class A:", header)


def test_a_blank_line_sent_under_a_class_header_is_written():
    source = "class A:\n    x = 1\n"
    class_text = overlay.written_over("class A:\n\n    x = 1\n", "A", source, [])
    assert splice.put_class(source, "A", class_text) == "class A:\n\n    x = 1\n"


def test_pass_alone_sent_for_a_class_with_statements_leaves_it_methods_only():
    # A client reverting its class to a body of methods only sends `pass`, as
    # get_class_definition shows one: the pass was written above the methods.
    source = "class Y:\n    a = 1\n\n    def f(self):\n        return 1\n"
    old, new = (splice.top_level_class(ast.parse(text), "Y") for text in (source, "class Y:\n    pass\n"))
    class_text = overlay.written_over("class Y:\n    pass\n", "Y", source, splice.carried_members(old, new))
    assert splice.put_class(source, "Y", class_text) == "class Y:\n\n    def f(self):\n        return 1\n"


def test_a_pass_the_class_has_is_kept_when_its_definition_is_sent_back():
    source = "class Z:\n    pass\n\n    def f(self):\n        return 1\n"
    old, new = (splice.top_level_class(ast.parse(text), "Z") for text in (source, "class Z:\n    pass\n"))
    class_text = overlay.written_over("class Z:\n    pass\n", "Z", source, splice.carried_members(old, new))
    assert splice.put_class(source, "Z", class_text) == source


COMMENTED_PROPERTY = ("class P:\n    @property\n    def width(self):\n        return self._w\n\n"
                      "    # setter below\n    @width.setter\n    def width(self, v):\n        self._w = v\n\n"
                      "    def other(self):\n        return 1\n")


def test_the_comments_between_a_propertys_defs_are_shown_with_them_and_kept_by_a_replacement():
    # The comment above the setter was left out of the defs' text, and a replacement by
    # that text moved it below the setter (sent with the comment: written twice).
    nodes = splice.method_nodes(splice.top_level_class(ast.parse(COMMENTED_PROPERTY), "P"), "width")
    text = splice.segments(COMMENTED_PROPERTY, nodes)
    assert text == ("@property\ndef width(self):\n    return self._w\n\n"
                    "# setter below\n@width.setter\ndef width(self, v):\n    self._w = v\n")
    assert splice.put_method(COMMENTED_PROPERTY, "P", text) == (COMMENTED_PROPERTY, True)
    changed = splice.put_method(COMMENTED_PROPERTY, "P", text.replace("self._w\n", "self._w + 1\n"))[0]
    assert changed == COMMENTED_PROPERTY.replace("self._w\n", "self._w + 1\n")


SPLIT_PROPERTY = ("class P:\n    @property\n    def width(self):\n        return self._w\n\n"
                  "    def other(self):\n        return 1\n\n"
                  "    @width.setter\n    def width(self, v):\n        self._w = v\n")


def test_a_propertys_defs_apart_stay_in_their_places_when_replaced():
    # A method between the getter and the setter: the setter was moved up to the getter,
    # so the text get_method_source gave, sent back unchanged, changed the module.
    nodes = splice.method_nodes(splice.top_level_class(ast.parse(SPLIT_PROPERTY), "P"), "width")
    text = splice.segments(SPLIT_PROPERTY, nodes)
    assert splice.put_method(SPLIT_PROPERTY, "P", text) == (SPLIT_PROPERTY, True)
    changed = text.replace("self._w\n", "self._w + 1\n").replace("@width.setter", "# the setter\n@width.setter")
    assert splice.put_method(SPLIT_PROPERTY, "P", changed)[0] == SPLIT_PROPERTY.replace(
        "self._w\n", "self._w + 1\n").replace("    @width.setter", "    # the setter\n    @width.setter")
    # Sent setter first, the defs go together where the getter was, in the order sent.
    swapped = "@width.setter\ndef width(self, v):\n    self._w = v\n\n@property\ndef width(self):\n    return 0\n"
    assert splice.put_method(SPLIT_PROPERTY, "P", swapped)[0] == (
        "class P:\n    @width.setter\n    def width(self, v):\n        self._w = v\n\n    @property\n"
        "    def width(self):\n        return 0\n\n    def other(self):\n        return 1\n")


def test_a_statement_setting_an_attribute_of_a_method_does_not_bind_it():
    # concurrent.futures.thread's `submit.__doc__ = ...`: the method was taken for one the
    # definition binds itself, not carried, and compiling the definition back failed
    # (NameError: submit); `d[k] = ...` reads d likewise.
    source = ('class Pool:\n    def submit(self, fn):\n        return fn()\n    submit.__doc__ = "Submit."\n\n'
              '    def other(self):\n        return 1\n')
    old, new = (splice.top_level_class(ast.parse(text), "Pool")
                for text in (source, 'class Pool:\n    submit.__doc__ = "Submit."\n    table[1] = 2\n'))
    assert [node.name for node in splice.carried_members(old, new)] == ["submit", "other"]
    assert splice.bound_names(new.body[0]) == set() and splice.bound_names(new.body[1]) == set()
    assert splice.bound_names(ast.parse("a, (b, *c) = t").body[0]) == {"a", "b", "c"}


def _sent_over(source: str, sent: str) -> str:
    """`source` with its class A redefined by `sent`, its members carried as
    compile_class_definition carries them."""
    old, new = (splice.top_level_class(ast.parse(text), "A") for text in (source, sent))
    return splice.put_class(source, "A", overlay.written_over(sent, "A", source, splice.carried_members(old, new)))


# (the class, the statement taken out of it, the definition without it)
ROUND_TRIPS = {
    # The comment left in the definition with its statement gone became the next def's:
    # sent back with the statement, it was written twice.
    "comment-left-above-a-def": ("class A:\n    z = 0\n    # about x\n    x = 1\n    def m(self):\n        return 1\n",
                                 "class A:\n    z = 0\n    # about x\n"),
    "comment-left-in-place-of-pass": ("class A:\n    # about x\n    x = 1\n    def m(self):\n        return 1\n",
                                      "class A:\n    # about x\n    pass\n"),
    "comment-left-set-apart": ("class A:\n    z = 0\n\n    # about x\n    x = 1\n\n    def m(self):\n        return 1\n",
                               "class A:\n    z = 0\n\n    # about x\n"),
}


@pytest.mark.parametrize("case", ROUND_TRIPS)
def test_a_definition_sent_back_after_a_statement_was_taken_out_gives_back_the_class(case):
    source, without = ROUND_TRIPS[case]
    definition = splice.class_definition(source, "A")
    edited = _sent_over(source, without)
    assert splice.class_definition(edited, "A") != definition
    assert _sent_over(edited, definition) == source


def test_a_statement_sent_above_the_one_shown_stays_there():
    source = "class A:\n    x = 1\n\n    def m(self):\n        return 1\n"
    assert _sent_over(source, "class A:\n    w = 0\n\n    x = 1\n") == (
        "class A:\n    w = 0\n\n    x = 1\n\n    def m(self):\n        return 1\n")


@pytest.mark.parametrize("sent, expected", [
    ("class C:\n    x = 1\n    y = 2\n", "class C:\n    x = 1\n    y = 2\n\n"),
    ("class C:\n    x = 1\n\n    y = 2\n", "class C:\n    x = 1\n\n    y = 2\n\n"),
], ids=["right-below", "set-apart"])
def test_an_attribute_added_below_the_last_one_shown_goes_above_the_methods(sent, expected):
    # Not at the end of the body, below the last def with no blank line: a user adding an
    # attribute expects it beside the others, above the methods, set apart from them as before.
    methods = "    def a(self):\n        return 1\n\n    def b(self):\n        return 2\n"
    source = "class C:\n    x = 1\n\n" + methods
    old, new = (splice.top_level_class(ast.parse(text), "C") for text in (source, sent))
    written = overlay.written_over(sent, "C", source, splice.carried_members(old, new))
    assert splice.put_class(source, "C", written) == expected + methods


@pytest.mark.parametrize("source, sent, expected", [
    # Between two methods: the blank lines above and below it were both kept.
    ("class A:\n    def m(self):\n        return 1\n\n    # about x\n    x = 1\n\n    def n(self):\n        return 2\n",
     "class A:\n    pass\n", "class A:\n    def m(self):\n        return 1\n\n    def n(self):\n        return 2\n"),
    # Under the header: two blank lines there.
    ("class A:\n\n    x = 1\n\n    def n(self):\n        return 2\n", "class A:\n    pass\n",
     "class A:\n\n    def n(self):\n        return 2\n"),
], ids=["between-methods", "under-the-header"])
def test_the_first_statement_taken_out_of_a_definition_leaves_one_blank_run_where_it_was(source, sent, expected):
    assert _sent_over(source, sent) == expected


_A_ = "    def a(self):\n        return 1\n"
_B_ = "    def b(self):\n        return 2\n"


@pytest.mark.parametrize("source, sent, expected, back", [
    ("class A:\n    x = 1\n\n" + _A_ + "\n    y = 2\n\n" + _B_, "class A:\n    y = 2\n",
     "class A:\n" + _A_ + "\n    y = 2\n\n" + _B_, True),
    ("class A:\n    \"\"\"Doc.\"\"\"\n\n    x = 1\n\n" + _A_ + "\n    y = 2\n",
     "class A:\n    \"\"\"Doc.\"\"\"\n\n    y = 2\n", "class A:\n    \"\"\"Doc.\"\"\"\n\n" + _A_ + "\n    y = 2\n", True),
    ("class A:\n    x = 1\n\n" + _A_ + "\n    y = 2\n\n" + _B_ + "\n    z = 3\n", "class A:\n    x = 1\n\n    z = 3\n",
     "class A:\n    x = 1\n\n" + _A_ + "\n" + _B_ + "\n    z = 3\n", False),
    # Two taken out, a method below each: a's and b's blank lines were one, and one was left under the header.
    ("class A:\n    x = 1\n\n" + _A_ + "\n    y = 2\n\n" + _B_ + "\n    z = 3\n", "class A:\n    z = 3\n",
     "class A:\n" + _A_ + "\n" + _B_ + "\n    z = 3\n", False),
    # Taken out down to the body's end: the methods stay set apart as they were.
    ("class A:\n    x = 1\n\n" + _A_ + "\n    y = 2\n\n" + _B_ + "\n    z = 3\n", "class A:\n    x = 1\n",
     "class A:\n    x = 1\n\n" + _A_ + "\n" + _B_, False),
    # One with no blank line of its own below it: its gap went with it all the same (`return 1\n    y = 2`).
    ("class A:\n    x = 1\n" + _A_ + "\n    y = 2\n", "class A:\n    y = 2\n",
     "class A:\n" + _A_ + "\n    y = 2\n", False),
], ids=["first", "below-the-docstring", "between-methods", "two-in-a-run", "down-to-the-end",
        "no-blank-of-its-own"])
def test_a_statement_taken_out_leaves_the_next_one_set_apart_from_the_method_above_it(source, sent, expected, back):
    # The blank line shown between them is the next statement's: the diff took it with the
    # one taken out, gluing the next statement to the method above it (`return 1\n    y = 2`).
    assert _sent_over(source, sent) == expected
    if back:   # a first statement goes back where it was (a later one right below the one shown above it)
        assert _sent_over(expected, splice.class_definition(source, "A")) == source


STATEMENTS = ("x = dict(\n    a=1,\n    b=_inst.randint,\n)\n@functools.total_ordering\nclass V:\n    pass\n"
              "if (a and\n        b.c):\n    # why\n\n    y = 1\nelse:\n    z = 2\ndef f():\n    return (1 +\n"
              "            2)\n")


@pytest.mark.parametrize("line, first, text", [
    (3, 1, "x = dict(\n    a=1,\n    b=_inst.randint,\n)"),   # the whole statement, not its line
    (5, 5, "@functools.total_ordering"),                     # a decorator, not its class
    (6, 6, "class V:"),
    (9, 8, "if (a and\n        b.c):"),                     # a block's header, not its comments
    (12, 12, "y = 1"),
    (13, 13, "else:"),
    (17, 16, "return (1 +\n        2)"),                    # in a def, its own statement
])
def test_statement_at_is_the_statement_a_line_belongs_to(line, first, text):
    assert splice.statement_at(STATEMENTS, ast.parse(STATEMENTS), line) == (first, text)
    crlf = STATEMENTS.replace("\n", "\r\n")   # quoted with \n as a LF file's is, not '...(\r\n    a=1,...'
    assert splice.statement_at(crlf, ast.parse(crlf), line) == (first, text)


def _lines_matched(monkeypatch) -> list[int]:
    """How many lines of the new text each SequenceMatcher splice makes is given."""
    given = []
    real = splice.difflib.SequenceMatcher

    def matcher(junk, a, b, **options):
        given.append(len(b))
        return real(junk, a, b, **options)

    monkeypatch.setattr(splice.difflib, "SequenceMatcher", matcher)
    return given


def test_line_before_edit_matches_only_what_lies_between_the_edits(monkeypatch):
    # Given the whole texts, the matcher (quadratic in them) took 3 s a quoted line of a
    # module of 16,000 lines: a refusal quoting a few statements took tens of seconds.
    given = _lines_matched(monkeypatch)
    old = "".join(f"x{n} = {n % 7}\n" for n in range(5000))
    deleted = old.replace("x100 = 2\nx101 = 3\n", "").replace("x200 = 4\n", "")   # two edits
    assert splice.line_before_edit(old, deleted, 50) == 50
    assert splice.line_before_edit(old, deleted, 150) == 152
    assert splice.line_before_edit(old, deleted, 4000) == 4003
    assert given and max(given) <= 100


@pytest.mark.parametrize("old, new, line, before", [
    ("a\nb\nc\n", "a\nc\n", 2, 3),
    ("a\nb\nc\n", "a\nb\nc\n", 3, 3),
    ("a\n\n\nb\n", "a\n\nb\n", 3, 4),        # one of two alike lines taken out
    ("a\nb\n", "a\nb\nc\n", 2, 2),
    ("x\nx\nx\n", "x\n", 1, 1),
])
def test_line_before_edit_numbers_a_line_as_the_file_has_it(old, new, line, before):
    assert splice.line_before_edit(old, new, line) == before


def test_a_bare_annotation_binds_nothing_but_a_walrus_in_it_does():
    # `x: (Cart := int)` has no value, yet its annotation runs (no `from __future__ import
    # annotations`, under which a walrus there is a SyntaxError): Cart is bound.
    assert not splice.binds(ast.parse("Cart: int\n").body, "Cart", annotated=False)
    assert splice.binds(ast.parse("Cart: int\n").body, "Cart")
    assert splice.binds(ast.parse("x: (Cart := int)\n").body, "Cart", annotated=False)
    assert not splice.binds(ast.parse("x: (Cart := int)\n").body, "x", annotated=False)
