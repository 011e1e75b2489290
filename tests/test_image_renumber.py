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

from gsmcpd.image.renumber import code_within, def_moves, def_spans, renumber_moved_code, shifted

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
    code = compile(OLD, filename, "exec")
    exec(code, vars(made))
    COMPILED[made.__name__] = code_within([code])
    yield made
    sys.modules.pop(made.__name__, None)
    linecache.cache.pop(filename, None)


COMPILED = {}   # module name -> the code its text was compiled to, as the view keeps it


def renumber(module, new_text, old_text=OLD):
    renumber_moved_code(module.__file__, COMPILED[module.__name__], old_text,
                        def_spans(ast.parse(old_text)), new_text, def_spans(ast.parse(new_text)))


def show(module, text):
    linecache.cache[module.__file__] = (len(text), None, text.splitlines(True), module.__file__)


def source_of(function):
    return inspect.getsource(function).strip().splitlines()[0].strip()


def test_every_def_below_the_edit_is_where_the_new_text_has_it(module):
    renumber(module, NEW)
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


def test_every_class_below_the_edit_shows_its_own_source(module):
    # Python 3.13's inspect.getsource reads a class's __firstlineno__ (3.11 searches the
    # text for its name): Line kept its old line, and getsource gave the lines above it.
    renumber(module, NEW)
    show(module, NEW)
    assert inspect.getsource(module.Cart.Line).splitlines()[:2] == ["    class Line:", "        def cost(self):"]
    assert source_of(module.Cart) == "class Cart:"   # the edit is inside it: its first line stays
    if sys.version_info >= (3, 13):
        assert module.Cart.Line.__firstlineno__ == NEW.splitlines().index("    class Line:") + 1


def test_a_class_a_tool_remade_from_the_new_text_keeps_its_line(module):
    fresh = {"__name__": module.__name__}
    exec(compile(NEW, module.__file__, "exec"), fresh)
    module.Cart.Line = fresh["Cart"].Line            # as compile_class_definition would
    renumber(module, NEW)
    show(module, NEW)
    assert source_of(module.Cart.Line) == "class Line:"


def test_a_traceback_quotes_the_line_that_raised(module):
    renumber(module, NEW)
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
    renumber(module, NEW)
    assert module.wrap.__code__ is wrap_code
    assert module.Cart.total.__code__ is fresh["Cart"].total.__code__
    show(module, NEW)
    assert inspect.getsource(module.Cart.total).count("\n") == 5


def test_code_is_moved_only_onto_a_def_of_its_own_name(module):
    # Cart renamed above its methods: their def lines are kept as they were, but what
    # stands there now is Basket's, which no code compiled from OLD is.
    changed = OLD.replace("class Cart:\n", "# a line more\nclass Basket:\n")
    old_code = module.Cart.total.__code__
    renumber(module, changed)
    assert module.Cart.total.__code__ is old_code


def test_def_moves_pairs_the_defs_of_a_name_by_their_text_and_not_one_changed():
    old = "def f():\n    return 1\n\n\ndef f():\n    return 2\n\n\ndef g():\n    pass\n"
    new = "def f():\n    return 1\n\n\n# more\ndef f():\n    return 2\n\n\ndef g():\n    return 3\n"
    moves = def_moves(old, def_spans(ast.parse(old)), new, def_spans(ast.parse(new)), {"f", "g"})
    assert moves == {("f", 1): 1, ("f", 5): 6}


def test_def_spans_count_a_decorated_def_from_its_first_decorator():
    spans = def_spans(ast.parse("class K:\n    @staticmethod\n    @other\n    def m():\n        f = lambda: 0\n"))
    assert spans == {"K": [(1, 1, 5)], "K.m": [(2, 2, 5)], "K.m.<locals>.<lambda>": [(5, 5, 5)]}


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
    renumber(module, NEW)
    show(module, NEW)
    assert source_of(module.tail) == "def tail():"


def test_a_class_whose_metaclass_redefines_its_dict_and_class_is_moved_all_the_same(module):
    class Odd(type):
        __dict__ = property(lambda cls: 1 // 0)
        __class__ = property(lambda cls: 1 // 0)

    odd = Odd("Line", (), {"__module__": module.__name__, "__qualname__": "Cart.Line",
                           "__firstlineno__": OLD.splitlines().index("    class Line:") + 1})
    module.Cart.Line = odd
    renumber(module, NEW)
    show(module, NEW)
    if sys.version_info >= (3, 13):
        assert type.__dict__["__dict__"].__get__(odd)["__firstlineno__"] == NEW.splitlines().index("    class Line:") + 1
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


def test_an_edit_after_a_renumber_that_failed_still_moves_the_code_below_it(tmp_path, views, monkeypatch):
    # The failed renumber left the module no live code to move: every later edit renumbered
    # nothing of it until it was re-imported, and `later` kept line 5 though it stood on 7.
    from gsmcpd.image import view as view_module
    client, module = edited(tmp_path, views, "class Cart:\n    def total(self):\n        return 1\n\n"
                            "    def later(self):\n        return 2\n")
    calls, renumber = [], view_module.renumber_moved_code

    def failing_once(*args):
        calls.append(args)
        if len(calls) == 1:
            raise RuntimeError("renumber failed")
        return renumber(*args)

    monkeypatch.setattr(view_module, "renumber_moved_code", failing_once)
    client.ok("compile_method", className="Cart", source="def total(self):\n    return 3\n")   # nothing moves
    client.ok("compile_method", className="Cart", source="def total(self):\n    one = 1\n    two = 2\n"
              "    return one + two\n")
    assert len(calls) == 2
    assert module.Cart.later.__code__.co_firstlineno == 7
    assert inspect.getsource(module.Cart.later).splitlines()[0] == "    def later(self):"


def edited(tmp_path, views, text):
    """A client whose view has imported `text` as shop.edited."""
    image = tmp_path / "edited-image"
    (image / "shop").mkdir(parents=True)
    (image / "shop" / "__init__.py").write_text("")
    (image / "shop" / "edited.py").write_text(text)
    client = Client(views(image))
    return client, client.view.module("shop.edited")


def test_a_setter_moved_onto_its_getters_old_line_is_moved_too(tmp_path, views):
    # Its qualname stood at its old line in the new text (the getter's), so it was taken
    # for code compiled from the new text and left: getsource gave the getter.
    client, module = edited(tmp_path, views, "class Box:\n    def pad(self):\n        return 0\n\n"
                            "    @property\n    def size(self):\n        return self._size\n\n"
                            "    @size.setter\n    def size(self, value):\n        self._size = value\n")
    client.ok("compile_method", className="Box",
              source="def pad(self):\n    a = 1\n    b = 2\n    c = 3\n    d = 4\n    return 0\n")
    assert (module.Box.size.fget.__code__.co_firstlineno, module.Box.size.fset.__code__.co_firstlineno) == (9, 13)
    assert inspect.getsource(module.Box.size.fset).splitlines()[0] == "    @size.setter"


def test_a_decorated_method_below_a_deleted_decorated_one_is_moved_to_its_own_decorator(tmp_path, views):
    # The lines were diffed: the deleted method's `@deco` line was kept for the one below,
    # whose own `@deco` then counted as removed, and its code was left at its old line.
    client, module = edited(tmp_path, views, "import functools\n\n\ndef deco(f):\n"
                            "    @functools.wraps(f)\n    def wrapper(*args):\n        return f(*args)\n"
                            "    return wrapper\n\n\nclass Cart:\n    @deco\n    def a(self):\n        return 1\n\n"
                            "    @deco\n    def b(self):\n        return 2\n")
    client.ok("delete_method", className="Cart", selector="a")
    assert module.Cart.b.__wrapped__.__code__.co_firstlineno == 12
    assert inspect.getsource(module.Cart.b.__wrapped__) == "    @deco\n    def b(self):\n        return 2\n"


def test_a_lambda_in_a_methods_decorator_is_moved_as_the_class_names_it(tmp_path, views):
    # Taken for the method's own (`Cart.checked.<locals>.<lambda>`), it was never moved.
    client, module = edited(tmp_path, views, "def tagged(check):\n    def wrap(f):\n"
                            "        def wrapper(*args):\n            check()\n            return f(*args)\n"
                            "        return wrapper\n    return wrap\n\n\nclass Cart:\n    def pad(self):\n"
                            "        return 0\n\n    @tagged(lambda: None)\n    def checked(self):\n        return 1\n")
    client.ok("compile_method", className="Cart", source="def pad(self):\n    a = 1\n    b = 2\n    return 0\n")
    check = inspect.getclosurevars(module.Cart.checked).nonlocals["check"]
    assert check.__qualname__ == "Cart.<lambda>"
    assert check.__code__.co_firstlineno == 16


def test_two_alike_lambdas_in_decorators_are_told_apart_by_their_defs(tmp_path, views):
    # Alike, `lambda: None` of one method's decorator was taken for the other's.
    client, module = edited(tmp_path, views, "def tagged(check):\n    def wrap(f):\n"
                            "        def wrapper(*args):\n            check()\n            return f(*args)\n"
                            "        return wrapper\n    return wrap\n\n\nclass Cart:\n    def first(self):\n"
                            "        return 0\n\n    @tagged(lambda: None)\n    def second(self):\n        return 1\n")
    client.ok("compile_method", className="Cart", source="@tagged(lambda: None)\ndef first(self):\n    return 0\n")
    check = inspect.getclosurevars(module.Cart.second).nonlocals["check"]
    assert check.__code__.co_firstlineno == 15


def compiled_spans(text):
    """Qualname -> first lines of the functions and class bodies Python compiles `text` to:
    what def_spans must name."""
    found = {}
    for code in code_within([compile(text, "x.py", "exec")]).values():
        if (code.co_name not in ("<module>", "<listcomp>", "<setcomp>", "<dictcomp>", "<genexpr>")
                and not code.co_name.startswith("<generic parameters of ")):   # PEP 695's, run once at the def
            found.setdefault(code.co_qualname, []).append(code.co_firstlineno)
    return {name: sorted(lines) for name, lines in found.items()}


def test_def_spans_name_a_def_or_class_its_scope_declares_global_bare_as_python_does():
    # Named `install.<locals>.handler`, the code Python names `handler` paired with no def.
    text = ("def install(flag):\n    if flag:\n        try:\n            pass\n        except Exception:\n"
            "            global handler\n    def handler():\n        return 1\n    def local():\n        pass\n"
            "    global Made\n    class Made:\n        def m(self):\n            pass\n\n\n"
            "class K:\n    global kf\n    def kf(self):\n        pass\n")
    spans = {name: [span[0] for span in found] for name, found in def_spans(ast.parse(text)).items()}
    assert spans == compiled_spans(text)
    assert {"handler", "Made.m", "kf", "install.<locals>.local"} <= set(spans)


def test_a_def_a_function_declares_global_is_moved_by_an_edit_above_it(tmp_path, views):
    client, module = edited(tmp_path, views, "class Pad:\n    def pad(self):\n        return 0\n\n\n"
                            "def install():\n    global handler\n\n    def handler():\n        return 1\n\n\n"
                            "install()\n")
    client.ok("compile_method", className="Pad", source="def pad(self):\n    a = 1\n    b = 2\n    return 0\n")
    assert module.handler.__code__.co_firstlineno == 11
    assert inspect.getsource(module.handler) == "    def handler():\n        return 1\n"


def test_def_spans_name_lambdas_in_comprehensions_as_this_python_compiles_them():
    # Python 3.12 inlines list, set and dict comprehensions (PEP 709): a lambda in one is
    # `f.<locals>.<lambda>`, not `f.<locals>.<listcomp>.<lambda>`, and paired with no def.
    text = ("fs = [lambda: i for i in range(2)]\nds = {k: (lambda: k) for k in range(2)}\n"
            "gs = list(lambda: j for j in range(2))\n\n\nclass K:\n    ts = {lambda: i for i in range(2)}\n\n"
            "    def m(self):\n        return [[lambda: a for a in b] for b in [(1, 2)]]\n\n\n"
            "async def a(xs):\n    return [(lambda: x) async for x in xs if (lambda: x)]\n\n\n"
            "def g():\n    return [(lambda y: y for y in z) for z in [()]]\n")
    spans = {name: [span[0] for span in found] for name, found in def_spans(ast.parse(text)).items()}
    assert spans == compiled_spans(text)


HELD = '''\
import functools
import types


class Pad:
    def pad(self):
        return 0


def plain(x=lambda: 1):
    return x


def keyed(*, key=lambda: 2):
    return key


def make():
    def made():
        return 3
    return made


HANDLERS = {"a": lambda: 4}
LISTED = [lambda: 5, make()]
PARTIAL = functools.partial(lambda y: y, 6)
BOUND = types.MethodType(lambda self: 7, object())
FACTORIES = (lambda: (lambda: 8),)
'''


def held_elsewhere(namespace):
    """HELD's functions the module's namespace and classes do not hold themselves: only a
    container, a default, a partial or a bound method does (and one made after the edit)."""
    return {"dict": namespace["HANDLERS"]["a"], "list": namespace["LISTED"][0],
            "closure": namespace["LISTED"][1], "default": namespace["plain"].__defaults__[0],
            "kwdefault": namespace["keyed"].__kwdefaults__["key"], "partial": namespace["PARTIAL"].func,
            "bound": namespace["BOUND"].__func__, "made later": namespace["FACTORIES"][0]()}


@pytest.mark.skipif(sys.version_info < (3, 12), reason="`type` statements are Python 3.12's (PEP 695)")
def test_def_spans_name_a_type_aliass_value_as_python_does():
    # Its value is code named as the alias, evaluated when first asked for: it was
    # walked as its scope's, and a lambda in it named `<lambda>`.
    # (No lambda in one in a class: Python 3.12 refuses that.)
    text = ("type A = (lambda: 1)\n\n\nclass K[T]:\n    type B = int\n\n    def m[U](self):\n"
            "        type C = int\n        global D\n        type D = (lambda: U)\n        return C\n\n\n"
            "def f():\n    type E[V] = list[V]\n")
    spans = {name: [span[0] for span in found] for name, found in def_spans(ast.parse(text)).items()}
    assert spans == compiled_spans(text)
    assert {"A", "A.<locals>.<lambda>", "K.B", "K.m.<locals>.C", "D", "D.<locals>.<lambda>", "f.<locals>.E"} <= set(spans)


@pytest.mark.skipif(sys.version_info < (3, 12), reason="`type` statements are Python 3.12's (PEP 695)")
def test_a_type_alias_an_edit_moved_raises_at_its_own_line(tmp_path, views):
    client, module = edited(tmp_path, views, "class Pad:\n    def pad(self):\n        return 0\n\n\n"
                            "type Broken = list[Undefined]\n")
    client.ok("compile_method", className="Pad", source="def pad(self):\n    a = 1\n    b = 2\n    return 0\n")
    with pytest.raises(NameError) as raised:
        module.Broken.__value__
    assert traceback.extract_tb(raised.tb)[-1].lineno == 8


def test_functions_held_only_by_containers_defaults_partials_and_bound_methods_are_moved(tmp_path, views):
    # Only those the namespace and its classes held were moved: a traceback from a registry's
    # handler, or a default's, quoted the line its def had before the edit.
    client, module = edited(tmp_path, views, HELD)
    for lines in ("    a = 1\n    b = 2\n", "    a = 1\n"):   # the second edit moves what the first moved
        client.ok("compile_method", className="Pad", source=f"def pad(self):\n{lines}    return 0\n")
        fresh = {}
        exec(compile(client.view.source("shop.edited"), module.__file__, "exec"), fresh)
        got = {kind: function.__code__.co_firstlineno for kind, function in held_elsewhere(vars(module)).items()}
        assert got == {kind: function.__code__.co_firstlineno for kind, function in held_elsewhere(fresh).items()}
        assert inspect.getsource(module.HANDLERS["a"]) == 'HANDLERS = {"a": lambda: 4}\n'


def test_code_a_tool_compiled_that_only_a_container_holds_is_moved_by_a_later_edit(tmp_path, views):
    # The next edit moved only the code the module's namespace and classes held: the lambda
    # of the redefined class's dict kept line 8 when the edit above moved it to 9.
    client, module = edited(tmp_path, views, "class Pad:\n    def pad(self):\n        return 0\n\n\n"
                            "class K:\n    OPS = {'a': lambda: 1}\n")
    client.ok("compile_class_definition", source="class K:\n    X = 1\n    OPS = {'a': lambda: 1}\n",
              dictionaryName="shop.edited")
    client.ok("compile_method", className="Pad", source="def pad(self):\n    a = 1\n    return 0\n")
    assert module.K.OPS["a"].__code__.co_firstlineno == 9
    assert inspect.getsource(module.K.OPS["a"]) == "    OPS = {'a': lambda: 1}\n"
