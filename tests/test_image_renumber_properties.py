"""renumber, attacked: random (seeded) modules edited by random mutation tools; after every
step each function the editing session's live module reaches starts on the line a new
session's import of the new text gives it (inspect.getsource and tracebacks follow)."""

import functools
import inspect
import random
import types

import pytest

from gsmcpd.image.view import View
from test_tools_support import Client, views  # noqa: F401  (fixtures)

# Each step's commit writes the image; its flushes to disk are no test's subject here.
pytestmark = pytest.mark.usefixtures("fsync_skipped")

MODULE = "zoo.fuzz"
HEAD = '''\
import functools


def deco(f):
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        return f(*args, **kwargs)
    return wrapper


def tagged(check):
    def wrap(f):
        def tagged_wrapper(*args):
            check()
            return f(*args)
        return tagged_wrapper
    return wrap
'''


def body(rng, indent, lines=None):
    """A few statements: plain lines, a comprehension, a lambda, a nested def."""
    pad = " " * indent
    out = []
    for i in range(rng.randint(1, 3) if lines is None else lines):
        kind = rng.choice(["plain", "plain", "comp", "lambda", "nested"])
        if kind == "plain":
            out.append(f"{pad}x{i} = {rng.randint(0, 99)}\n")
        elif kind == "comp":
            out.append(f"{pad}c{i} = [k for k in range({rng.randint(1, 5)})]\n")
        elif kind == "lambda":
            out.append(f"{pad}f{i} = lambda: {rng.randint(0, 9)}\n")
        else:
            out.append(f"{pad}def inner{i}():\n{pad}    return {i}\n")
    return "".join(out) + f"{pad}return {rng.randint(0, 9)}\n"


def method(rng, name, kind=None):
    kind = kind or rng.choice(["plain", "plain", "property", "static", "class", "deco", "tagged", "cached"])
    if kind == "property":
        return (f"@property\ndef {name}(self):\n{body(rng, 4)}\n"
                f"@{name}.setter\ndef {name}(self, value):\n{body(rng, 4)}")
    decorator = {"plain": "", "static": "@staticmethod\n", "class": "@classmethod\n", "deco": "@deco\n",
                 "tagged": "@tagged(\n    lambda: None)\n", "cached": "@functools.cached_property\n"}[kind]
    first = "" if kind == "static" else ("cls" if kind == "class" else "self, key=lambda: 0")
    return f"{decorator}def {name}({first}):\n{body(rng, 4)}"


def indented(text, by=4):
    return "".join(" " * by + line if line.strip() else line for line in text.splitlines(True))


def class_text(rng, name, methods=None):
    # A lambda made in a comprehension: Python 3.12 names it `C0.<lambda>`, 3.11 `C0.<listcomp>.<lambda>`.
    parts = [f"class {name}:\n", f"    LIMIT = {rng.randint(0, 9)}\n", "    pick = [lambda self: 1 for _ in '_'][0]\n",
             "    OPS = {'k': lambda: 2, 'held': [functools.partial(lambda x: x, 3)]}\n"]
    if rng.random() < 0.5:
        parts.append("    TABLE = [i * 2 for i in range(3)]\n")
    if rng.random() < 0.5:
        parts.append("    key = lambda self: 1\n")
    for index in range(rng.randint(1, 4) if methods is None else methods):
        parts.append("\n" + indented(method(rng, f"m{index}")))
    if rng.random() < 0.4:
        parts.append(f"\n    class Inner:\n        def deep(self):\n{body(rng, 12)}")
    return "".join(parts)


def module_text(rng):
    parts = [HEAD]
    for index in range(rng.randint(1, 3)):
        parts.append("\n\n" + class_text(rng, f"C{index}"))
        if rng.random() < 0.5:
            decorator = rng.choice(["", "@deco\n", "@tagged(lambda: 1)\n"])
            parts.append(f"\n\n{decorator}def top{index}():\n{body(rng, 4)}")
    parts.append("\n\nif True:\n    def in_if():\n" + body(rng, 8))
    parts.append("\n\ntry:\n    def in_try():\n" + body(rng, 8) + "except Exception:\n    pass\n")
    return "".join(parts)


def reachable(namespace, module_name):
    """(path, function) for every function the module's globals and its own classes hold,
    with what a function closes over, wraps, takes by default, or a descriptor, a
    container or a partial holds."""
    found = []
    seen = set()

    def visit(path, value, depth=0):
        if depth > 8 or id(value) in seen:
            return
        if isinstance(value, type):
            if vars(value).get("__module__") != module_name:
                return
            seen.add(id(value))
            for key, member in sorted(vars(value).items()):
                visit(path + (key,), member, depth + 1)
        elif isinstance(value, types.FunctionType):
            seen.add(id(value))
            found.append((path, value))
            for index, cell in enumerate(value.__closure__ or ()):
                try:
                    visit(path + (f"cell{index}",), cell.cell_contents, depth + 1)
                except ValueError:
                    pass
            visit(path + ("__wrapped__",), vars(value).get("__wrapped__"), depth + 1)
            for index, default in enumerate(value.__defaults__ or ()):
                visit(path + (f"default{index}",), default, depth + 1)
        elif isinstance(value, dict):
            for key, item in sorted(value.items()):
                visit(path + (key,), item, depth + 1)
        elif isinstance(value, list):
            for index, item in enumerate(value):
                visit(path + (index,), item, depth + 1)
        elif isinstance(value, functools.partial):
            visit(path + ("func",), value.func, depth + 1)
        elif isinstance(value, (staticmethod, classmethod)):
            visit(path + ("__func__",), value.__func__, depth + 1)
        elif isinstance(value, functools.cached_property):
            visit(path + ("func",), value.func, depth + 1)
        elif isinstance(value, property):
            for part in ("fget", "fset", "fdel"):
                visit(path + (part,), getattr(value, part), depth + 1)

    for key, value in sorted(namespace.items()):
        visit((key,), value)
    return found


def lines_of(code):
    """The first lines of a code object and of the code nested in it, in order."""
    out = [(code.co_qualname, code.co_firstlineno)]
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            out += lines_of(const)
    return out


def assert_numbers_true(view, where):
    """Each function both the live module and a fresh run of its text reach (by the same
    path) has the fresh one's lines, and so its source."""
    live = view.module(MODULE)
    text = view.source(MODULE)
    fresh = {"__name__": MODULE}
    exec(compile(text, live.__file__, "exec"), fresh)
    expected = dict(reachable(fresh, MODULE))
    got = dict(reachable(vars(live), MODULE))
    assert set(expected) <= set(got), (where, set(expected) - set(got))
    for path, function in expected.items():
        assert lines_of(got[path].__code__) == lines_of(function.__code__), (where, path, text)
        assert inspect.getsource(got[path]) == inspect.getsource(function), (where, path)


def step(client, rng, view):
    live = view.module(MODULE)
    classes = sorted(name for name, value in vars(live).items()
                     if isinstance(value, type) and value.__module__ == MODULE)
    name = rng.choice(classes)
    methods = sorted(key for key, value in vars(getattr(live, name)).items()
                     if key.startswith("m") and not isinstance(value, int))
    action = rng.choice(["add", "replace", "replace", "delete", "class", "newclass", "comment",
                         "abort", "refresh"])
    if action == "comment":
        comment = "\n".join(f"line {k}" for k in range(rng.randint(0, 4)))
        client.ok("set_class_comment", className=f"{MODULE}.{name}", comment=comment)
        return f"comment {name} {comment.count(chr(10)) + 1}"
    if action == "abort":
        client.ok("abort")
        return "abort"
    if action == "refresh":
        # Another session moves every def down a line and commits; this one brings it in.
        other = View.open(view.image_dir, user="other", session_id="b", install=False)
        other.set_source(MODULE, "# another session's line\n" + other.source(MODULE), live=False)
        other.commit()
        other.close()
        client.ok("refresh")
        return "refresh"
    if action == "add" or (action in ("replace", "delete") and not methods):
        new = f"m{rng.randint(10, 99)}"
        client.ok("compile_method", className=name, source=method(rng, new))
        return f"add {name}.{new}"
    if action == "replace":
        target = rng.choice(methods)
        value = vars(getattr(live, name))[target]
        if isinstance(value, property):
            kind = "property"
        elif isinstance(value, (staticmethod, classmethod, functools.cached_property)):
            # A def with no kind written over them is refused (it would replace the other side's).
            kind = rng.choice(["static", "class", "cached"])
        else:
            kind = rng.choice(["plain", "static", "class", "deco", "tagged", "cached"])
        client.ok("compile_method", className=name, source=method(rng, target, kind))
        return f"replace {name}.{target}"
    if action == "delete":
        target = rng.choice(methods)
        client.ok("delete_method", className=name, selector=target)
        return f"delete {name}.{target}"
    if action == "class":
        definition = client.ok("get_class_definition", className=f"{MODULE}.{name}")
        source = definition["content"][0]["text"]
        lines = source.splitlines(True)
        at = rng.randint(1, len(lines))
        extra = "".join(f"    EXTRA{rng.randint(0, 999)} = {k}\n" for k in range(rng.randint(0, 3)))
        source = "".join(lines[:at]) + extra + "".join(lines[at:])
        client.ok("compile_class_definition", source=source)
        return f"class {name} +{extra.count(chr(10))}"
    new = f"C{rng.randint(10, 99)}"
    if new in classes:
        client.ok("delete_class", className=f"{MODULE}.{new}")
        return f"delete class {new}"
    client.ok("compile_class_definition", source=class_text(rng, new), dictionaryName=MODULE)
    return f"new class {new}"


@pytest.mark.parametrize("seed", range(10))
def test_random_edits_keep_every_live_number_true(tmp_path, views, seed):
    rng = random.Random(seed)
    image = tmp_path / "image"
    (image / "zoo").mkdir(parents=True)
    (image / "zoo" / "__init__.py").write_text("")
    (image / "zoo" / "fuzz.py").write_text(module_text(rng))
    view = views(image)
    client = Client(view)
    view.module(MODULE)
    done = []
    for _ in range(12):
        done.append(step(client, rng, view))
        assert_numbers_true(view, done)
