"""A mutation tool failing past its first change, before its commit: the session is left as
it was (the texts, the live modules imported again from them), and the error says so."""

import pytest

from gsmcpd.image.view import View
from gsmcpd.worker.toolset import SoftBreak
from gsmcpd.worker.toolsets.mutation import MutationToolset
from test_tools_support import client, image, views  # noqa: F401  (fixtures)

pytestmark = pytest.mark.usefixtures("fsync_skipped")

NOTHING_CHANGED = "nothing was changed"

# Once made, its classes' private and special names are sealed: the second set of a
# compile_method (the ABC's __abstractmethods__, after the method) raises.
SEALED = '''\
from abc import ABCMeta


class Sealed(ABCMeta):
    def __init__(cls, *args, **kwargs):
        super().__init__(*args, **kwargs)
        type.__setattr__(cls, "_sealed", True)

    def __setattr__(cls, name, value):
        if name.startswith("_") and vars(cls).get("_sealed"):
            raise AttributeError(f"{name} of {cls.__name__} is sealed")
        super().__setattr__(name, value)

    def __delattr__(cls, name):
        super().__delattr__(name)


class Job(metaclass=Sealed):
    def run(self):
        return "old"

    def stop(self):
        return "stopped"
'''

# Once made, its classes take functions only: redefined in place, the methods are set
# before the setting below them raises.
STRICT = '''\
class Strict(type):
    def __setattr__(cls, name, value):
        if not callable(value) and not name.startswith("__"):
            raise TypeError(f"{cls.__name__}.{name} is fixed once the class is made")
        super().__setattr__(name, value)


class Task(metaclass=Strict):
    def run(self):
        return "old"

    limit = 1
'''


@pytest.fixture
def sealed(client, image):
    (image / "zoo" / "sealed.py").write_text(SEALED)
    (image / "zoo" / "strict.py").write_text(STRICT)
    (image / "zoo" / "uses.py").write_text("from zoo.sealed import Job\n")
    client.ok("refresh")
    return client


def disk(image, module):
    return (image / "zoo" / f"{module}.py").read_text()


def as_it_was(client, image, module, source):
    """The session's live code, its source and the image all still what they were, with
    nothing left to commit."""
    assert disk(image, module) == source
    assert client.view.source(f"zoo.{module}") == source
    assert not client.view.has_changes
    client.ok("commit")
    assert disk(image, module) == source


def test_compile_method_whose_metaclass_raises_on_its_second_set_changes_nothing(sealed, image):
    message = sealed.error("compile_method", "other", className="Job",
                           source="def run(self):\n    return 'new'\n")
    job = sealed.view.module("zoo.sealed").Job
    assert job().run() == "old"
    assert sealed.view.module("zoo.uses").Job is job   # its importer takes the class imported again
    assert "AttributeError: __abstractmethods__ of Job is sealed" in message
    assert NOTHING_CHANGED in message and "zoo.sealed" in message
    as_it_was(sealed, image, "sealed", SEALED)


def test_delete_method_whose_metaclass_raises_after_the_delete_changes_nothing(sealed, image):
    message = sealed.error("delete_method", "other", className="Job", selector="stop")
    assert sealed.view.module("zoo.sealed").Job().stop() == "stopped"
    assert NOTHING_CHANGED in message
    as_it_was(sealed, image, "sealed", SEALED)


def test_compile_class_definition_whose_metaclass_raises_half_way_changes_nothing(sealed, image):
    message = sealed.error("compile_class_definition", "other",
                           source="class Task(metaclass=Strict):\n    def run(self):\n        return 'new'\n\n"
                                  "    limit = 2\n")
    task = sealed.view.module("zoo.strict").Task
    assert (task().run(), task.limit) == ("old", 1)
    assert "TypeError: Task.limit is fixed once the class is made" in message and NOTHING_CHANGED in message
    as_it_was(sealed, image, "strict", STRICT)


@pytest.mark.parametrize("tool, arguments, module", [
    ("compile_method", {"className": "Dog", "source": "def noise(self):\n    return 'new'\n"}, "animals"),
    ("compile_method", {"className": "zoo.animals", "source": "def make_dog():\n    return 'new'\n"}, "animals"),
    ("compile_class_definition", {"source": "class Dog(Animal):\n    def noise(self):\n        return 'new'\n"},
     "animals"),
    ("delete_method", {"className": "Dog", "selector": "noise"}, "animals"),
    ("set_class_comment", {"className": "Dog", "comment": "new"}, "animals"),
])
def test_a_step_failing_between_the_live_change_and_the_source_changes_nothing(client, image, monkeypatch,
                                                                               tool, arguments, module):
    # Whatever raises there: the live module is imported again from the source as it was.
    before = disk(image, module)
    live_before = client.view.module(f"zoo.{module}")
    # Read now: update_function changes the live function in place.
    as_made = (live_before.Dog.noise.__code__.co_consts, live_before.make_dog.__code__.co_consts,
               live_before.Dog.__doc__)

    def fails(*args, **kwargs):
        raise RuntimeError("the disk went away")
    monkeypatch.setattr(View, "set_source", fails)
    message = client.error(tool, "other", **arguments)
    monkeypatch.undo()
    assert message.startswith("RuntimeError: the disk went away") and NOTHING_CHANGED in message
    live_now = client.view.module(f"zoo.{module}")
    assert (live_now.Dog.noise.__code__.co_consts, live_now.make_dog.__code__.co_consts,
            live_now.Dog.__doc__) == as_made
    as_it_was(client, image, module, before)


@pytest.mark.parametrize("tool, arguments", [
    ("compile_method", {"className": "Dog", "source": "def noise(self):\n    return 'new'\n"}),
    ("delete_class", {"className": "Dog"}),
    ("add_dictionary", {"dictionaryName": "zoo.fresh"}),
    ("remove_dictionary", {"dictionaryName": "zoo.animals"}),
])
def test_a_step_failing_after_the_source_changed_before_the_commit_changes_nothing(client, image, monkeypatch,
                                                                                   tool, arguments):
    before = disk(image, "animals")

    def fails(*args, **kwargs):
        raise RuntimeError("a bug")
    monkeypatch.setattr(MutationToolset, "_finish", fails)
    message = client.error(tool, "other", **arguments)
    monkeypatch.undo()
    assert NOTHING_CHANGED in message
    assert client.view.module("zoo.animals").Dog("a").noise() == "woof"
    assert client.view.module("zoo.keeper").Dog is client.view.module("zoo.animals").Dog
    assert not client.view.has_module("zoo.fresh")
    as_it_was(client, image, "animals", before)


def test_a_refusal_before_anything_changed_is_left_as_it_was(client):
    # Nothing changed, nothing imported again: the refusal is the answer, unchanged.
    dog = client.view.module("zoo.animals").Dog
    message = client.error("compile_method", "compileError", className="Dog", source="def noise(self)\n")
    assert NOTHING_CHANGED not in message
    assert client.view.module("zoo.animals").Dog is dog


def test_a_break_landing_half_way_leaves_the_texts_and_forgets_the_live_module(client, image, monkeypatch):
    # No code of the session's runs under a break: the module is imported again when next used.
    before = disk(image, "animals")

    def breaks(*args, **kwargs):
        raise SoftBreak("deadline")
    monkeypatch.setattr(View, "set_source", breaks)
    with pytest.raises(SoftBreak):
        next(toolset for toolset in client.server.toolsets if isinstance(toolset, MutationToolset)).compile_method(
            {"className": "Dog", "source": "def noise(self):\n    return 'new'\n"})
    monkeypatch.undo()
    assert "zoo.animals" not in client.view.loaded_modules()
    assert client.view.module("zoo.animals").Dog("a").noise() == "woof"
    as_it_was(client, image, "animals", before)


def test_a_module_whose_code_refuses_to_run_twice_is_said_to_fail_to_import_once_put_back(client, image,
                                                                                         monkeypatch):
    # Its top-level code claims its name once per process: imported again, as abort would, it
    # raises, and the error says the module now fails to import here.
    (image / "zoo" / "claims.py").write_text(
        "CLAIMED = set()\n\n\ndef claim(name):\n    if name in CLAIMED:\n"
        "        raise ValueError(f'{name} claimed twice')\n    CLAIMED.add(name)\n")
    (image / "zoo" / "once.py").write_text(
        "from zoo.claims import claim\n\nclaim(__name__)\n\n\nclass Job:\n    def run(self):\n        return 'old'\n")
    client.ok("refresh")
    assert client.view.module("zoo.once").Job().run() == "old"

    def fails(*args, **kwargs):
        raise RuntimeError("the disk went away")
    monkeypatch.setattr(View, "set_source", fails)
    result = client.call("compile_method", className="Job", source="def run(self):\n    return 'new'\n")
    monkeypatch.undo()
    said = result["structuredContent"]["error"]
    assert "zoo.once now fails to import: ValueError: zoo.once claimed twice" in said["message"]
    assert said["importErrors"] == {"zoo.once": "ValueError: zoo.once claimed twice"}
    assert said["reimported"] == ["zoo.once"]
    assert client.view.module("zoo.once") is None
    assert not client.view.has_changes
