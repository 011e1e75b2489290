"""Shared fixtures for the image and tool tests: a throwaway image in tmp_path,
views that are always closed (they touch sys.modules / sys.meta_path), and a
server with the core toolsets over a view. No tests here."""

import contextlib
import dataclasses
import enum
import json
from pathlib import Path

import pytest

from gsmcpd.image.view import View
from gsmcpd.worker.server import McpServer
from gsmcpd.worker.toolsets import resolve_toolsets

ANIMALS = '''\
"""Animals."""
import json  # a kernel import


# A comment that must survive edits.
class Animal:
    """An animal."""

    legs = 4

    def __init__(self, name):
        self.name = name
        self.sound = None

    def speak(self):
        return f"{self.name} says {self.noise()}"

    def noise(self):
        return "..."

    @classmethod
    def named(cls, name):
        return cls(name)

    @staticmethod
    def kingdom():
        return "animalia"

    @property
    def title(self):
        return self.name.title()


class Dog(Animal):
    def noise(self):  # dogs bark
        return "woof"


def make_dog():
    return Dog("rex").speak()
'''

KEEPER = '''\
from zoo.animals import Dog


class Keeper:
    __slots__ = ("dogs",)

    def __init__(self):
        self.dogs = [Dog("a")]

    def feed(self):
        return [dog.speak() for dog in self.dogs]
'''

TESTS = '''\
import unittest

from zoo.animals import Dog


class ZooTest(unittest.TestCase):
    def test_pass(self):
        self.assertEqual(Dog("rex").noise(), "woof")

    def test_fail(self):
        self.assertEqual(Dog("rex").noise(), "meow")

    def test_error(self):
        return 1 / 0
'''

KERN = '''\
import builtins


class Exception(builtins.Exception):
    pass


class object:
    pass


object = builtins.object
'''

FILES = {
    "zoo/__init__.py": "",
    "zoo/animals.py": ANIMALS,
    "zoo/keeper.py": KEEPER,
    "zoo/test_zoo.py": TESTS,
    "kern.py": KERN,
    "json.py": "class JSONDecoder:\n    pass\n",
}


def write_image(root: Path, files=None) -> Path:
    for rel, text in (FILES if files is None else files).items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@contextlib.contextmanager
def daemon_on_image(tmp_path: Path, files):
    """A daemon serving a throwaway image of `files`, which it holds as `.image`."""
    from helpers import Daemon

    image = write_image(tmp_path / "image", files)
    with Daemon(tmp_path, env={"GS_MCP_IMAGE": str(image)}) as daemon:
        daemon.image = image
        yield daemon


def without_dog(view):
    """Commit, from another session's `view`, zoo.animals with its Dog class deleted
    (zoo.keeper and zoo.test_zoo import it)."""
    source = view.source("zoo.animals")
    start, end = source.index("class Dog(Animal):"), source.index("def make_dog():")
    view.set_source("zoo.animals", source[:start] + source[end:], live=False)
    view.commit()


@pytest.fixture
def image(tmp_path):
    return write_image(tmp_path / "image")


@pytest.fixture
def views():
    """open(image_dir, session_id='a', install=True) -> View; all closed afterwards."""
    opened = []

    def open_view(image_dir, session_id="a", install=True, user="tester"):
        view = View.open(image_dir, user=user, session_id=session_id, install=install)
        opened.append(view)
        return view

    yield open_view
    for view in reversed(opened):
        view.close()


class Client:
    def __init__(self, view, read_only=False):
        self.view = view
        self.server = McpServer(resolve_toolsets(), view=view, read_only=read_only,
                                session_info={"user": view.user, "session_id": view.session_id})
        self.progress = []

    def call(self, tool, **arguments):
        request = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                   "params": {"name": tool, "arguments": arguments, "_meta": {"progressToken": "p"}}}
        response = self.server.handle(request, notify=self.progress.append)
        assert "result" in response, response
        return response["result"]

    def ok(self, tool, **arguments):
        result = self.call(tool, **arguments)
        assert not result.get("isError"), result
        return result

    def error(self, tool, kind, **arguments):
        result = self.call(tool, **arguments)
        assert result.get("isError"), result
        assert result["structuredContent"]["error"]["kind"] == kind, result
        return result["content"][0]["text"]


def utf8_carries(result) -> bool:
    """Whether the worker can send `result` (as UTF-8 JSON)."""
    try:
        json.dumps(result, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def text(result) -> str:
    return result["content"][0]["text"]


def missing_member_error(enum_name: str, member: str) -> str:
    """The error reading the enum `enum_name`'s member `member`, which it lacks, raises on
    the running Python, as an import error is said (3.11: `AttributeError: BLUE`, 3.12 on
    names the class too)."""
    try:
        getattr(enum.Enum(enum_name, ["OTHER"]), member)
    except AttributeError as error:
        return f"AttributeError: {error}"
    raise AssertionError(f"{enum_name}.{member} read")


def misordered_fields_error(defaulted: str, following: str) -> str:
    """The TypeError the running Python's dataclass decorator raises on the field
    `following`, without a default, after `defaulted`, which has one (3.13 on names
    `defaulted` too)."""
    try:
        dataclasses.dataclass(type("Misordered", (), {"__annotations__": {defaulted: int, following: int},
                                                      defaulted: 0}))
    except TypeError as error:
        return str(error)
    raise AssertionError(f"{following} made after {defaulted}")


@pytest.fixture
def client(image, views):
    return Client(views(image))
