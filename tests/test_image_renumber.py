"""renumber: the live code an edit moved is renumbered to where its def now is, so
tracebacks and inspect.getsource show the right lines in the session that made the edit."""

import ast
import inspect
import linecache
import sys
import traceback
import types

import pytest

from test_tools_support import Client, views  # noqa: F401  (fixtures)

from gsmcpd.image.renumber import def_lines, moved_lines, renumber_moved_code, shifted

OLD = '''\
import functools


def wrap(f):
    @functools.wraps(f)
    def inner(*args):
        return f(*args)
    return inner


class Cart:
    def total(self):
        return 1

    @classmethod
    def of(cls):
        return cls()

    @wrap
    def wrapped(self):
        return 2

    @property
    def size(self):
        return 3

    class Line:
        def cost(self):
            return 4

    def fails(self):
        helper = lambda: 1 // 0
        return helper()


def tail():
    def inner():
        return 5
    return inner
'''
# total made three lines longer: everything below it moves three lines down.
NEW = OLD.replace("        return 1\n", "        one = 1\n        two = one + one\n        three = two + one\n"
                                       "        return one\n")


@pytest.fixture
def module(tmp_path):
    """OLD imported as a module whose file is `tmp_path/moved.py` (its lines cached, as the
    view caches them), and that name's linecache entry dropped afterwards."""
    filename = str(tmp_path / "moved.py")
    made = types.ModuleType("moved_under_test")
    made.__file__ = filename
    sys.modules[made.__name__] = made
    exec(compile(OLD, filename, "exec"), vars(made))
    yield made
    sys.modules.pop(made.__name__, None)
    linecache.cache.pop(filename, None)


def show(module, text):
    linecache.cache[module.__file__] = (len(text), None, text.splitlines(True), module.__file__)


def source_of(function):
    return inspect.getsource(function).strip().splitlines()[0].strip()


def test_every_def_below_the_edit_is_where_the_new_text_has_it(module):
    renumber_moved_code(module, module.__file__, OLD, NEW, ast.parse(NEW))
    show(module, NEW)
    cart = module.Cart
    assert source_of(cart.of) == "@classmethod"
    assert source_of(vars(cart)["of"].__func__).startswith("@classmethod")
    assert source_of(cart.wrapped.__wrapped__) == "@wrap"
    assert source_of(cart.size.fget) == "@property"
    assert source_of(cart.Line.cost) == "def cost(self):"
    assert source_of(cart.fails) == "def fails(self):"
    assert source_of(module.tail) == "def tail():"
    assert source_of(module.tail()) == "def inner():"      # nested code moves with its def


def test_a_traceback_quotes_the_line_that_raised(module):
    renumber_moved_code(module, module.__file__, OLD, NEW, ast.parse(NEW))
    show(module, NEW)
    try:
        module.Cart().fails()
    except ZeroDivisionError:
        frames = traceback.extract_tb(sys.exc_info()[2])
    assert [frame.line for frame in frames[-2:]] == ["return helper()", "helper = lambda: 1 // 0"]
    assert frames[-1].lineno == NEW.splitlines().index("        helper = lambda: 1 // 0") + 1


def test_defs_above_the_edit_and_code_made_from_the_new_text_are_left_alone(module):
    wrap_code = module.wrap.__code__
    fresh = {}
    exec(compile(NEW, module.__file__, "exec"), fresh)
    module.Cart.total = fresh["Cart"].total          # as compile_method sets what it compiled
    renumber_moved_code(module, module.__file__, OLD, NEW, ast.parse(NEW))
    assert module.wrap.__code__ is wrap_code
    assert module.Cart.total.__code__ is fresh["Cart"].total.__code__
    show(module, NEW)
    assert inspect.getsource(module.Cart.total).count("\n") == 5


def test_code_is_moved_only_onto_a_def_of_its_own_name(module):
    # Cart renamed above its methods: their def lines are kept as they were, but what
    # stands there now is Basket's, which no code compiled from OLD is.
    changed = OLD.replace("class Cart:\n", "# a line more\nclass Basket:\n")
    old_code = module.Cart.total.__code__
    renumber_moved_code(module, module.__file__, OLD, changed, ast.parse(changed))
    assert module.Cart.total.__code__ is old_code


def test_moved_lines_maps_lines_kept_and_not_those_changed():
    moved = moved_lines("a\nb\nc\nd\n", "a\nB\nB2\nc\nd\n")
    assert moved == {1: 1, 3: 4, 4: 5}


def test_def_lines_counts_a_decorated_def_from_its_first_decorator():
    lines = def_lines(ast.parse("class K:\n    @staticmethod\n    @other\n    def m():\n        f = lambda: 0\n"))
    assert lines == {2: {"K.m"}, 5: {"K.m.<locals>.<lambda>"}}


def test_shifted_moves_nested_code_too():
    code = compile("def outer():\n    def inner():\n        pass\n", "x.py", "exec").co_consts[0]
    moved = shifted(code, 10)
    inner = next(const for const in moved.co_consts if isinstance(const, types.CodeType))
    assert (moved.co_firstlineno, inner.co_firstlineno) == (11, 12)


def test_a_global_whose___class___raises_is_skipped_and_the_rest_renumbered(module):
    class Hostile:
        @property
        def __class__(self):   # isinstance() asks it
            raise RuntimeError("no")

    module.hostile = Hostile()
    renumber_moved_code(module, module.__file__, OLD, NEW, ast.parse(NEW))
    show(module, NEW)
    assert source_of(module.tail) == "def tail():"


def test_shifted_moves_code_nested_as_deeply_as_python_compiles():
    # Recursing, it met the recursion limit at about 500 lambdas.
    code = compile("f = " + "lambda: " * 1500 + "1\n", "x.py", "exec").co_consts[0]
    moved = shifted(code, 10)
    depth = 0
    while moved is not None:
        assert moved.co_firstlineno == 11
        moved = next((const for const in moved.co_consts if isinstance(const, types.CodeType)), None)
        depth += 1
    assert depth == 1500


# -- through the mutation tools --------------------------------------------------

DEEP = "class Cart:\n    def total(self):\n        return 1\n\n\nf = " + "lambda: " * 1500 + "1\n"


@pytest.fixture
def deep_client(tmp_path, views):
    image = tmp_path / "image"
    (image / "shop").mkdir(parents=True)
    (image / "shop" / "__init__.py").write_text("")
    (image / "shop" / "deep.py").write_text(DEEP)
    client = Client(views(image))
    client.view.module("shop.deep")
    return client


def test_an_edit_above_lambdas_nested_as_deeply_as_python_compiles_answers_ok_and_moves_them(deep_client):
    # renumber met the recursion limit after the edit had landed: compile_method answered
    # an error, though the method was compiled and committed.
    deep_client.ok("compile_method", className="Cart", source="def total(self):\n    one = 1\n    return one\n")
    module = deep_client.view.module("shop.deep")
    assert module.Cart().total() == 1
    assert module.f.__code__.co_firstlineno == 7


def test_a_renumber_that_fails_leaves_the_edit_standing_and_says_so_in_the_log(deep_client, monkeypatch, caplog):
    def failing(*args):
        raise RuntimeError("renumber failed")

    monkeypatch.setattr("gsmcpd.image.view.renumber_moved_code", failing)
    deep_client.ok("compile_method", className="Cart", source="def total(self):\n    return 2\n")
    assert deep_client.view.module("shop.deep").Cart().total() == 2
    assert not deep_client.view.has_changes                      # committed
    assert "shop.deep keeps the line numbers it had before the edit" in caplog.text
