"""session, listing, browsing and search tool handlers on a throwaway image."""

import errno
import json
import os

import pytest

from gsmcpd.image import splice
from gsmcpd.worker.toolsets import browsing
from gsmcpd.worker.toolsets.search import code_units
from test_tools_support import Client, client, image, text, views, without_dog, write_image  # noqa: F401  (fixtures)


# -- session ---------------------------------------------------------------------

def test_status_reports_identity_version_and_changes(client, image):
    structured = client.ok("status")["structuredContent"]
    assert structured["user"] == "tester" and structured["sessionId"] == "a"
    assert structured["pid"] == os.getpid() and structured["image"] == str(image.resolve())
    assert structured["viewVersion"] == 0 and structured["uncommittedChanges"] is False
    client.view.set_source("zoo.keeper", "x = 1\n", live=False)
    structured = client.ok("status")["structuredContent"]
    assert structured["uncommittedChanges"] is True and structured["changedModules"] == ["zoo.keeper"]


def test_status_says_in_its_text_whether_the_session_is_read_only(image, views):
    # Only structuredContent.readOnly said it, which a client showing the text never shows.
    for read_only, said in ((True, "read-only: yes (this session cannot commit or change the image)"),
                            (False, "read-only: no")):
        result = Client(views(image, "ro" if read_only else "rw", install=False), read_only=read_only).ok("status")
        assert said in text(result).splitlines() and result["structuredContent"]["readOnly"] is read_only


# What a conflict's answer says to do next.
FORWARD = ("Use abort to take the committed version (discarding your changes), then make them "
           "again on it; refresh only shows which modules both changed: it keeps yours on "
           "their old base, so committing them still conflicts.")


def test_commit_abort_refresh_and_conflict(image, views):
    a, b = Client(views(image, "a")), Client(views(image, "b", install=False))
    a.view.set_source("zoo.keeper", "x = 'a'\n", live=False)
    b.view.set_source("zoo.keeper", "x = 'b'\n", live=False)
    assert a.ok("commit")["structuredContent"]["committed"] == ["zoo.keeper"]
    message = b.error("commit", "conflict")
    assert "zoo/keeper.py" in message and "abort" in message and "refresh" in message
    # The way forward, and no false one: a refresh leaves the conflict as it is.
    assert message.endswith(FORWARD), message
    assert b.ok("refresh")["structuredContent"]["keptOurs"] == ["zoo.keeper"]
    assert b.ok("abort")["structuredContent"]["discarded"] == ["zoo.keeper"]
    assert b.view.source("zoo.keeper") == "x = 'a'\n"
    assert "Nothing to commit" in text(b.ok("commit"))


def test_a_conflict_names_the_commit_that_made_each_file_so_or_an_edit_outside_gsmcpd(image, views):
    a, b = Client(views(image, "a")), Client(views(image, "session-b-long-id", install=False, user="bob"))
    b.view.set_source("zoo.keeper", "x = 'b'\n", live=False)
    b.ok("commit")
    made = b.view.store.journal()[-1]["time"]                # e.g. 2026-12-01T09:00:00Z
    a.view.set_source("zoo.keeper", "x = 'a'\n", live=False)
    result = a.call("commit")
    when = made.replace("T", " ").removesuffix("Z") + " UTC"
    assert text(result).startswith("commit failed: zoo/keeper.py was changed on disk since this session "
                                   f"read the image (by bob's session session- at {when}); nothing was written")
    assert result["structuredContent"]["error"]["files"] == [
        {"file": "zoo/keeper.py", "module": "zoo.keeper", "how": "changed",
         "by": {"user": "bob", "session": "session-b-long-id", "time": made}}]
    (image / "zoo" / "animals.py").write_text("edited = 'outside'\n")
    a.view.set_source("zoo.animals", "x = 'a'\n", live=False)
    both = a.call("commit")
    assert text(both).startswith("commit failed: zoo/animals.py was changed, zoo/keeper.py was changed on "
                                 "disk since this session read the image (zoo/animals.py by an edit outside "
                                 f"gsmcpd; zoo/keeper.py by bob's session session- at {when}); ")
    assert [(f["file"], f["by"]) for f in both["structuredContent"]["error"]["files"]] == [
        ("zoo/animals.py", None), ("zoo/keeper.py", {"user": "bob", "session": "session-b-long-id", "time": made})]


def test_commit_and_refresh_take_the_same_change_committed_by_another_as_committed(image, views):
    a, b = Client(views(image, "a")), Client(views(image, "b", install=False))
    for view in (a.view, b.view):
        view.set_source("zoo.keeper", "x = 'same'\n", live=False)
    b.view.set_source("zoo.animals", "y = 'b'\n", live=False)
    a.ok("commit")
    done = b.ok("commit")
    assert (done["structuredContent"]["committed"], done["structuredContent"]["alreadyCommitted"],
            done["structuredContent"]["broughtIn"]) == (["zoo.animals"], ["zoo.keeper"], [])
    assert text(done) == ("Committed zoo.animals; already committed by another, with the same text: "
                          "zoo.keeper (view version 2)")
    assert b.ok("status")["structuredContent"]["uncommittedChanges"] is False
    a.ok("refresh")
    for view in (a.view, b.view):
        view.set_source("zoo.keeper", "x = 'again'\n", live=False)
    a.ok("commit")
    refreshed = b.ok("refresh")
    assert (refreshed["structuredContent"]["alreadyCommitted"], refreshed["structuredContent"]["keptOurs"]) == (
        ["zoo.keeper"], [])
    assert "already committed by another, with the same text: zoo.keeper" in text(refreshed)
    assert "kept ours" not in text(refreshed)
    assert b.ok("status")["structuredContent"]["uncommittedChanges"] is False
    # and the tool says so to a client choosing it (it said only: fails if another changed the file)
    tools = b.server.handle({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})["result"]["tools"]
    assert {t["name"]: t for t in tools}["commit"]["description"] == (
        "Write this session's changes to the image atomically; fails with kind conflict if another "
        "session changed the same file, unless it committed the same change (no conflict: listed "
        "alreadyCommitted).")


def test_a_module_made_a_package_is_committed_though_another_removed_its_old_file_alike(image, views):
    # zoo.keeper's file removed by both is taken as committed, but its package's new
    # __init__.py was written: the answer said "Nothing to write" and named zoo.keeper
    # only as already committed (written and not were told apart by module name, not file).
    a, b = Client(views(image, "a")), Client(views(image, "b", install=False))
    a.view.remove_module("zoo.keeper")
    b.view.remove_module("zoo.keeper")
    b.view.add_module("zoo.keeper", "x = 'a package now'\n", package=True)
    a.ok("commit")
    done = b.ok("commit")
    assert (done["structuredContent"]["committed"], done["structuredContent"]["alreadyCommitted"],
            done["structuredContent"]["broughtIn"]) == (["zoo.keeper"], [], [])
    assert text(done) == "Committed zoo.keeper (view version 2)"
    assert (image / "zoo" / "keeper" / "__init__.py").read_text() == "x = 'a package now'\n"


def test_refresh_names_a_module_kept_ours_not_also_already_committed(image, views):
    # Both made zoo.keeper a package, with other texts: the old file's removal is committed
    # alike, the __init__.py is kept ours. Refresh named zoo.keeper under both, though it is
    # still uncommitted here (telling them apart by module name, not by file).
    a, b = Client(views(image, "a")), Client(views(image, "b", install=False))
    for view, text_of in ((a.view, "x = 'A'\n"), (b.view, "x = 'B'\n")):
        view.remove_module("zoo.keeper")
        view.add_module("zoo.keeper", text_of, package=True)
    a.ok("commit")
    refreshed = b.ok("refresh")
    assert (refreshed["structuredContent"]["keptOurs"], refreshed["structuredContent"]["alreadyCommitted"],
            refreshed["structuredContent"]["broughtIn"]) == (["zoo.keeper"], [], [])
    assert "already committed" not in text(refreshed)
    assert b.ok("status")["structuredContent"]["changedModules"] == ["zoo.keeper"]


def test_refresh_names_a_module_another_made_a_package_once(image, views):
    # Its old file removed, its __init__.py made: two files, one module.
    a, b = Client(views(image, "a")), Client(views(image, "b", install=False))
    a.view.remove_module("zoo.keeper")
    a.view.add_module("zoo.keeper", "x = 'A'\n", package=True)
    a.ok("commit")
    refreshed = b.ok("refresh")
    assert refreshed["structuredContent"]["broughtIn"] == ["zoo.keeper"]
    assert "brought in: zoo.keeper\n" in text(refreshed) + "\n"


def test_a_commit_says_which_modules_others_commits_brought_in(image, views):
    a, b = Client(views(image, "a")), Client(views(image, "b", install=False))
    a.view.set_source("zoo.keeper", "x = 'a'\n", live=False)
    a.ok("commit")
    nothing = b.ok("commit")
    assert nothing["structuredContent"]["broughtIn"] == ["zoo.keeper"]
    assert text(nothing) == ("Nothing to commit; view refreshed; brought in others' commits to "
                             "zoo.keeper (view version 1)")
    a.view.set_source("zoo.animals", "y = 'a'\n", live=False)
    a.ok("commit")
    b.view.set_source("zoo.keeper", "x = 'b'\n", live=False)
    ours = b.ok("commit")["structuredContent"]
    assert (ours["committed"], ours["broughtIn"]) == (["zoo.keeper"], ["zoo.animals"])
    assert a.ok("commit")["structuredContent"]["broughtIn"] == ["zoo.keeper"]



def test_a_commit_names_the_loaded_modules_others_commits_leave_failing_to_import(image, views):
    # Such a commit re-imports what the session loaded, as refresh does; a module that
    # now fails to import is news the answer must carry, as refresh's does.
    a, b = Client(views(image, "a")), views(image, "b", install=False)
    assert a.view.module("zoo.keeper") is not None
    without_dog(b)
    nothing = a.ok("commit")
    errors = nothing["structuredContent"]["importErrors"]
    assert list(errors) == ["zoo.keeper"] and errors["zoo.keeper"].startswith(
        "ImportError: cannot import name 'Dog' from 'zoo.animals'")
    assert text(nothing).endswith("\nimport error in zoo.keeper: " + errors["zoo.keeper"])
    # Said once: the next commit re-imports nothing, so it has nothing new to say.
    again = a.ok("commit")
    assert again["structuredContent"]["importErrors"] == {} and "import error" not in text(again)



def test_an_abort_names_the_modules_others_commits_brought_in_as_refresh_does(image, views):
    a, b = Client(views(image, "a")), views(image, "b", install=False)
    a.view.set_source("zoo.keeper", "x = 'a'\n", live=False)
    b.set_source("zoo.animals", b.source("zoo.animals") + "THEIRS = 1\n", live=False)
    b.set_source("zoo.keeper", "x = 'b'\n", live=False)
    b.commit()
    aborted = a.ok("abort")
    # zoo.keeper: ours discarded, theirs taken; zoo.animals: theirs, ours untouched.
    assert (aborted["structuredContent"]["discarded"], aborted["structuredContent"]["broughtIn"]) == (
        ["zoo.keeper"], ["zoo.animals", "zoo.keeper"])
    assert text(aborted).startswith("Aborted: discarded changes to zoo.keeper\nview version 1\n"
                                    "brought in others' commits to zoo.animals, zoo.keeper")
    quiet = a.ok("abort")
    assert quiet["structuredContent"]["broughtIn"] == [] and "brought in" not in text(quiet)


# -- listing ---------------------------------------------------------------------

def test_list_dictionaries_in_lookup_order_then_builtins(client):
    assert client.ok("list_dictionaries")["structuredContent"]["dictionaries"] == [
        "json", "kern", "zoo", "zoo.animals", "zoo.keeper", "zoo.test_zoo", "builtins"]


def test_list_classes_and_all_classes(client):
    assert client.ok("list_classes", dictionaryName="zoo.animals")["structuredContent"]["classes"] == [
        "Animal", "Dog"]
    assert "int" in client.ok("list_classes", dictionaryName="builtins")["structuredContent"]["classes"]
    everything = client.ok("list_all_classes")["structuredContent"]["classes"]
    assert "zoo.keeper.Keeper" in everything and "builtins.ValueError" in everything
    assert everything.index("zoo.keeper.Keeper") < everything.index("builtins.ValueError")
    client.error("list_classes", "notFound", dictionaryName="nope")
    client.error("list_classes", "invalidParams", dictionaryName="zoo", extra=1)


def test_a_packages_entries_are_not_its_submodules_some_earlier_call_imported(client):
    # The import system binds each submodule imported in the session on its package: a fresh
    # session's zoo had "no entries", and after any tool loaded zoo.animals it had animals
    # (module). They are dictionaries of their own (list_dictionaries lists them).
    def entries(dictionary="zoo"):
        return client.ok("list_dictionary_entries", dictionaryName=dictionary)["structuredContent"]["entries"]
    first = entries()
    client.ok("describe_class", className="zoo.animals.Dog")
    client.ok("list_test_classes")
    assert entries() == first == []
    # one the package's own code binds is its entry
    client.view.set_source("zoo", "from . import animals\nfrom .keeper import Keeper\n", live=False)
    client.ok("commit")   # re-imports zoo
    assert entries() == [{"name": "Keeper", "kind": "class"}, {"name": "animals", "kind": "module"}]
    # a bare annotation `animals: object` binds nothing: the package's code binds no animals
    client.view.set_source("zoo", "animals: object\n", live=False)
    client.ok("commit")
    client.ok("describe_class", className="zoo.animals.Dog")
    assert entries() == []


def test_list_dictionary_entries_tags_kinds(client):
    entries = {e["name"]: e["kind"] for e in
               client.ok("list_dictionary_entries", dictionaryName="zoo.animals")["structuredContent"]["entries"]}
    assert entries == {"Animal": "class", "Dog": "class", "make_dog": "function", "json": "module"}
    client.view.set_source("zoo.keeper", "import os\nLIMIT = 3\ndef f():\n    pass\nraise RuntimeError('x')\n",
                           live=False)
    result = client.ok("list_dictionary_entries", dictionaryName="zoo.keeper")
    assert {e["name"]: e["kind"] for e in result["structuredContent"]["entries"]} == {
        "os": "module", "LIMIT": "global", "f": "function"}
    assert "RuntimeError" in result["structuredContent"]["note"]
    # A bare annotation binds nothing: `Cart (global)` was listed, which the module never has.
    client.view.set_source("zoo.keeper", "Cart: int\nLIMIT: int = 3\nraise RuntimeError('x')\n", live=False)
    result = client.ok("list_dictionary_entries", dictionaryName="zoo.keeper")
    assert result["structuredContent"]["entries"] == [{"name": "LIMIT", "kind": "global"}]


def test_list_dictionary_entries_leaves_out_the_names_starting_with_two_underscores_saying_so(client):
    client.view.set_source("zoo.keeper", "__all__ = ['f']\n__version__ = '1'\n_private = 1\n"
                           "def f():\n    pass\n")
    listed = client.ok("list_dictionary_entries", dictionaryName="zoo.keeper")["structuredContent"]["entries"]
    assert [e["name"] for e in listed] == ["_private", "f"]
    # and the tool says so to a client looking for __version__ (it said "every top-level name")
    tools = client.server.handle({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})["result"]["tools"]
    assert "but those starting with __ (__all__, __version__, what Python sets)" in {
        t["name"]: t for t in tools}["list_dictionary_entries"]["description"]


PROXIED = '''\
import functools
from os.path import join


class Proxy:
    """As a web framework's `request` outside a request: every attribute lookup raises."""

    def __call__(self):
        return 1

    def __getattr__(self, name):
        raise RuntimeError("working outside of a request")


request = Proxy()
part = functools.partial(join, "a")


@functools.cache
def cached(x):
    return x
'''


def test_list_dictionary_entries_tags_kinds_without_running_a_global_s_own_code(client):
    # A proxy's __getattr__ raised through the tagging (kind other), and a def wrapped by
    # @functools.cache was tagged global.
    client.view.add_module("zoo.proxied", PROXIED)
    result = client.ok("list_dictionary_entries", dictionaryName="zoo.proxied")
    assert {e["name"]: e["kind"] for e in result["structuredContent"]["entries"]} == {
        "Proxy": "class", "request": "global", "part": "global", "cached": "function",
        "join": "function", "functools": "module"}


# -- browsing --------------------------------------------------------------------

def test_describe_class(client):
    described = client.ok("describe_class", className="Dog")["structuredContent"]
    assert described["bases"] == ["zoo.animals.Animal"]
    assert described["mro"] == ["zoo.animals.Dog", "zoo.animals.Animal", "object"]
    assert described["methods"] == ["noise"]
    animal = client.ok("describe_class", className="zoo.animals.Animal")["structuredContent"]
    assert animal["instanceVariables"] == ["name", "sound"] and animal["doc"] == "An animal."
    keeper = client.ok("describe_class", className="Keeper")["structuredContent"]
    assert keeper["instanceVariables"] == ["dogs"]
    assert client.ok("describe_class", className="int")["structuredContent"]["bases"] == ["object"]


CLASS_TOOLS = [("describe_class", {}), ("list_methods", {}), ("get_class_hierarchy", {}),
               ("set_class_comment", {"comment": "x"}), ("compile_method", {"source": "def f(self):\n    pass\n"})]


@pytest.mark.parametrize("name,said", [
    # getattr(builtins, "__class__") is the module type: describe_class answered "class
    # builtins.__class__" with mro module -> object, and compile_method called it a kernel
    # class; __loader__ is the import system's BuiltinImporter, which list_classes leaves out.
    ("__class__", "no class named __class__ in the image or builtins"),
    ("__loader__", "no class named __loader__ in the image or builtins"),
    ("builtins.__class__", "builtins has no class __class__; list_classes builtins shows them"),
    # builtins.<no class of it> was "KeyError: None" (kind other): the hints read builtins' source.
    ("builtins.Nope", "builtins has no class Nope; list_classes builtins shows them"),
    ("builtins.len", "builtins has no class len; list_classes builtins shows them"),
    ("builtins.Dog", "builtins has no class Dog (did you mean zoo.animals.Dog?)"),
    ("builtins.flaot", "builtins has no class flaot (did you mean float?)"),
])
def test_a_name_builtins_lists_no_class_under_is_no_kernel_class(client, name, said):
    assert name.rpartition(".")[2] not in client.ok("list_classes", dictionaryName="builtins")[
        "structuredContent"]["classes"]
    for tool, arguments in CLASS_TOOLS:
        assert said in client.error(tool, "notFound", className=name, **arguments)
    assert not client.view.has_changes


def test_no_kernel_class_is_made_of_what_builtins_binds_no_class_to(client):
    assert "kernel class" not in client.error("compile_class_definition", "invalidParams",
                                             source="class __loader__:\n    pass\n")
    assert "builtins has no __class__" in client.error("get_method_source", "notFound",
                                                         className="builtins", selector="__class__")
    assert "builtins.__loader__ is no function (type)" in client.error(
        "get_method_source", "notFound", className="builtins", selector="__loader__")


@pytest.mark.parametrize("class_name,selector,said", [
    ("int", "bit_length", "int.bit_length is a kernel method: no Python source"),
    ("builtins.type", "mro", "type.mro is a kernel method: no Python source"),
    # Each was "<class>.<selector> is a kernel method", whatever the selector named.
    ("type", "speak", "builtins.type defines no method speak; list_methods shows its methods"),
    ("int", "bitlength", "builtins.int defines no method bitlength (did you mean bit_length?)"),
    ("int", "mro", "builtins.int defines no method mro (mro is a method of type, its metaclass"),
    ("dict", "__module__", "builtins.dict defines no method __module__ (__module__ is an attribute, not a method"),
])
def test_get_method_source_of_a_kernel_class_says_whether_it_has_the_method(client, class_name, selector, said):
    assert said in client.error("get_method_source", "notFound", className=class_name, selector=selector)


def test_get_method_source_of_a_kernel_class_cuts_the_selector_it_echoes(client):
    # The whole selector was echoed: a 1 MB one made a 1 MB error.
    message = client.error("get_method_source", "notFound", className="int", selector="x" * 100_000)
    assert "x" * 200 + "... (100000 characters)" in message and len(message) < 400, message[:500]


def test_describe_class_of_a_class_whose_annotations_are_a_descriptor(client):
    # type's __dict__ holds a descriptor for its instances' __annotations__, not its own:
    # describe_class answered kind other, "'getset_descriptor' object is not iterable".
    described = client.ok("describe_class", className="type")["structuredContent"]
    assert (described["bases"], described["instanceVariables"]) == (["object"], [])
    assert "mro" in described["methods"]


@pytest.mark.parametrize("member", ["__doc__", "__annotations__"])
def test_describe_class_of_a_class_whose_doc_or_annotations_a_def_replaced(client, member):
    # describe_class answered kind other: "the result cannot be sent: not JSON: Object of
    # type function ..." (its doc), or "ValueError: ....__annotations__ is neither a dict nor None".
    client.ok("compile_method", className="zoo.animals.Dog", source=f"def {member}(self):\n    return 1\n")
    result = client.ok("describe_class", className="zoo.animals.Dog")
    json.dumps(result)   # what the worker sends
    assert result["structuredContent"]["doc"] is None and "noise" in result["structuredContent"]["methods"]


def test_class_resolution_errors(client, image, views):
    client.error("describe_class", "notFound", className="Unicorn")
    client.error("describe_class", "notFound", className="zoo.animals.Unicorn")
    client.error("describe_class", "invalidParams", className="not a name")
    (image / "zoo/more.py").write_text("class Dog:\n    pass\n")
    other = Client(views(image, "b", install=False))
    message = other.error("describe_class", "ambiguous", className="Dog")
    assert "zoo.animals.Dog" in message and "zoo.more.Dog" in message
    assert text(other.ok("export_class_source", className="zoo.more.Dog")) == "class Dog:\n    pass\n"


def test_a_mistyped_class_or_dictionary_name_is_answered_with_the_names_meant(client):
    # An agent's slip ("dog", "Dgo", "zoo.animal") was answered only "no class named dog ...;
    # list_all_classes shows them": a page of every class to read for one letter.
    assert client.error("describe_class", "notFound", className="dog") == (
        "no class named dog in the image or builtins (did you mean Dog?); list_all_classes shows them")
    assert "(did you mean Dog?)" in client.error("describe_class", "notFound", className="Dgo")
    assert client.error("describe_class", "notFound", className="zoo.animals.Anmal") == (
        "zoo.animals defines no class Anmal (did you mean Animal?)")
    # A class put in its package for its module was answered with no word of where it is.
    assert client.error("describe_class", "notFound", className="zoo.Dog") == (
        "zoo defines no class Dog (did you mean zoo.animals.Dog?)")
    assert "(did you mean zoo.animals?)" in client.error("describe_class", "notFound",
                                                         className="zoo.animal.Dog")
    assert client.error("list_classes", "notFound", dictionaryName="zoo.animal") == (
        "no dictionary (image module) named 'zoo.animal' (did you mean zoo.animals?); "
        "list_dictionaries shows them")
    assert "did you mean" not in client.error("describe_class", "notFound", className="Giraffe")


def test_a_method_the_class_does_not_define_is_answered_with_the_name_meant_or_where_to_look(client):
    # It answered only "zoo.animals.Dog defines no method nois": no way forward.
    assert client.error("get_method_source", "notFound", className="Animal", selector="nois") == (
        "zoo.animals.Animal defines no method nois (did you mean noise?)")
    assert client.error("get_method_source", "notFound", className="Animal", selector="fly") == (
        "zoo.animals.Animal defines no method fly; list_methods shows its methods")


ATTRIBUTE = "{} is an attribute, not a method: "


@pytest.mark.parametrize("class_name, selector, hint", [
    # Said "(it inherits it from zoo.animals.Animal)": every class has its own __module__.
    ("Dog", "__module__", ATTRIBUTE.format("__module__") + "Python set it as it made the class"),
    # Said "(did you mean __init__?)".
    ("Animal", "__dict__", ATTRIBUTE.format("__dict__") + "Python set it as it made the class"),
    ("Animal", "__qualname__", ATTRIBUTE.format("__qualname__") + "the class has it from type, its metaclass"),
    ("Animal", "__name__", ATTRIBUTE.format("__name__") + "the class has it from type, its metaclass"),
    # Said "(it inherits it from object)": the docstring is the class's own.
    ("Animal", "__doc__", ATTRIBUTE.format("__doc__") + "Python set it as it made the class"),
    ("Dog", "__dict__", ATTRIBUTE.format("__dict__") + "it inherits it from zoo.animals.Animal"),
    ("Dog", "legs", ATTRIBUTE.format("legs") + "it inherits it from zoo.animals.Animal"),
    ("Keeper", "dogs", "dogs is an attribute of zoo.keeper.Keeper, not a method"),   # a slot
    ("Animal", "mro", "mro is a method of type, its metaclass: it runs on the class itself, not on its instances"),
    ("Dog", "speak", "it inherits it from zoo.animals.Animal"),
    ("Dog", "__repr__", "it inherits it from object"),
])
@pytest.mark.parametrize("tool", ["get_method_source", "delete_method"])
def test_a_name_the_class_has_but_not_as_a_def_of_its_body_is_said_what_it_is_and_where_from(
        client, tool, class_name, selector, hint):
    qualified = client.ok("describe_class", className=class_name)["structuredContent"]["class"]
    assert client.error(tool, "notFound", className=class_name, selector=selector) == (
        f"{qualified} defines no method {selector} ({hint})")


def test_a_name_a_decorator_made_or_a_class_not_loaded_has_is_said_what_it_is_and_a_typo_its_near_name(client):
    client.view.add_module("zoo.made", "import dataclasses\n\n\n@dataclasses.dataclass\nclass Pen:\n"
                                       "    size: int = 0\n")
    client.view.add_module("zoo.lost", "import no_such_module_zz\n\n\nclass Lost:\n    def run(self):\n"
                                       "        pass\n")
    for tool in ("get_method_source", "delete_method"):
        # It said "(it inherits it from object)": the dataclass made Pen's own.
        assert client.error(tool, "notFound", className="Pen", selector="__init__") == (
            "zoo.made.Pen defines no method __init__ (the live class has one, but no def in its class "
            "body: a decorator or code run on the class set it)")
        assert client.error(tool, "notFound", className="Lost", selector="__dict__") == (
            "zoo.lost.Lost defines no method __dict__ (__dict__ is an attribute Python gives classes, not a method)")
        assert client.error(tool, "notFound", className="Lost", selector="runn") == (
            "zoo.lost.Lost defines no method runn (did you mean run?)")
        assert client.error(tool, "notFound", className="Animal", selector="__init_") == (
            "zoo.animals.Animal defines no method __init_ (did you mean __init__?)")


def test_a_function_module_or_search_label_given_as_a_class_says_what_it_is_and_what_to_pass(client):
    # A search answers functions (zoo.animals.make_dog) and methods (zoo.animals.Dog.noise)
    # by dotted name; given back to a class tool they were only "no class named make_dog",
    # "no dictionary named zoo.animals.Dog", "'Dog.noise' is not a method name".
    function = ("zoo.animals.make_dog is a function, not a class: get_method_source, compile_method "
                "and delete_method take a function as className its dictionary, selector its name "
                "(className zoo.animals, selector make_dog)")
    # Pointed once: it ended "...(className zoo.animals, selector make_dog); list_all_classes shows them".
    assert client.error("describe_class", "notFound", className="make_dog") == (
        f"no class named make_dog in the image or builtins; {function}")
    assert client.error("describe_class", "notFound", className="zoo.animals.make_dog") == (
        f"zoo.animals defines no class make_dog; {function}")
    assert client.error("describe_class", "notFound", className="zoo.animals") == (
        "zoo defines no class animals; zoo.animals is a dictionary (image module), not a class: "
        "list_dictionary_entries shows its functions and classes")
    # builtins, which View.module_names leaves out, had no such hint; a bare dictionary name is
    # pointed once (it said "...shows its functions and classes; list_all_classes shows them").
    assert client.error("set_class_comment", "notFound", className="builtins", comment="x") == (
        "no class named builtins in the image or builtins; builtins is the kernel dictionary, not a "
        "class: list_dictionary_entries shows its functions and classes")
    assert client.error("describe_class", "notFound", className="zoo") == (
        "no class named zoo in the image or builtins; zoo is a dictionary (image module), not a "
        "class: list_dictionary_entries shows its functions and classes")
    assert client.error("get_method_source", "notFound", className="zoo.animals.Dog.noise",
                        selector="noise") == (
        "no dictionary named zoo.animals.Dog (for class zoo.animals.Dog.noise); to name the method "
        "noise of zoo.animals.Dog, pass className zoo.animals.Dog and selector noise")
    assert client.error("get_method_source", "invalidParams", className="Dog", selector="Dog.noise") == (
        "'Dog.noise' is not a method name (a Python identifier); pass the method name alone: noise")


def test_a_kernel_function_given_as_a_class_says_what_it_is(client):
    # Only "no class named len in the image or builtins", and for print "(did you mean int?)",
    # though an image module's function given so is said to be one.
    for name in ("len", "print", "__import__"):
        assert client.error("describe_class", "notFound", className=name) == (
            f"no class named {name} in the image or builtins; builtins.{name} is a kernel function, "
            "not a class; list_all_classes shows them")
    # a name builtins binds to no function is no such hint, nor one the image's function shadows
    assert client.error("describe_class", "notFound", className="Ellipsis").startswith(
        "no class named Ellipsis in the image or builtins; list_all_classes")
    assert "builtins.make_dog" not in client.error("describe_class", "notFound", className="make_dog")


def test_a_class_of_a_loaded_kernel_module_is_said_to_be_the_kernels(client):
    # Was only "no dictionary named collections (for class collections.OrderedDict)",
    # as if the name were mistyped.
    assert client.error("describe_class", "notFound", className="collections.OrderedDict") == (
        "no dictionary named collections (for class collections.OrderedDict); collections is a "
        "kernel module (loaded in this session, not an image module): the class tools read and "
        "change the image's classes and builtins' only (execute_code can inspect it)")
    # A name no module of the session holds is a plain miss.
    assert "kernel" not in client.error("describe_class", "notFound", className="nosuchmodule.Thing")


def test_sources_and_definition(client):
    exported = text(client.ok("export_class_source", className="Dog"))
    assert exported == 'class Dog(Animal):\n    def noise(self):  # dogs bark\n        return "woof"\n'
    definition = text(client.ok("get_class_definition", className="Animal"))
    assert "legs = 4" in definition and "def " not in definition
    client.error("export_class_source", "notFound", className="int")


def test_get_method_source_and_meta(client):
    assert text(client.ok("get_method_source", className="Animal", selector="named", meta=True)).startswith(
        "@classmethod\ndef named(cls, name):")
    client.error("get_method_source", "notFound", className="Animal", selector="named", meta=False)
    client.error("get_method_source", "notFound", className="Animal", selector="speak", meta=True)
    message = client.error("get_method_source", "notFound", className="Dog", selector="speak")
    assert "inherits it from zoo.animals.Animal" in message
    client.error("get_method_source", "notFound", className="dict", selector="get")


def test_hierarchy_and_list_methods(client):
    hierarchy = client.ok("get_class_hierarchy", className="Animal")["structuredContent"]
    assert hierarchy["superclasses"] == ["object", "zoo.animals.Animal"]
    assert hierarchy["subclasses"] == ["zoo.animals.Dog"]
    methods = client.ok("list_methods", className="Dog")["structuredContent"]["methods"]
    assert {m["name"] for m in methods["class"]} == {"named"}
    assert {m["name"] for m in methods["static"]} == {"kingdom"}
    assert {m["name"] for m in methods["property"]} == {"title"}
    noise = [m for m in methods["instance"] if m["name"] == "noise"][0]
    speak = [m for m in methods["instance"] if m["name"] == "speak"][0]
    assert "inherited" not in noise and speak == {"name": "speak", "definedIn": "zoo.animals.Animal",
                                                  "inherited": True}


def test_hierarchy_of_a_metaclass_and_of_type(client):
    # type.__subclasses__ is a method of type itself, so a metaclass's own lookup
    # finds it unbound: Meta.__subclasses__() raised TypeError.
    client.view.add_module("zoo.meta", "class Meta(type):\n    pass\n\n\nclass SubMeta(Meta):\n    pass\n")
    hierarchy = client.ok("get_class_hierarchy", className="Meta")["structuredContent"]
    assert hierarchy["superclasses"] == ["object", "type", "zoo.meta.Meta"]
    assert hierarchy["subclasses"] == ["zoo.meta.SubMeta"]
    hierarchy = client.ok("get_class_hierarchy", className="type")["structuredContent"]
    assert hierarchy["subclasses"] == ["zoo.meta.Meta"]


# -- search ----------------------------------------------------------------------

def test_find_implementors_in_image_and_builtins(client):
    assert client.ok("find_implementors", selector="noise")["structuredContent"]["results"] == [
        "zoo.animals.Animal", "zoo.animals.Dog"]
    assert "builtins.dict" in client.ok("find_implementors", selector="keys")["structuredContent"]["results"]


def test_find_references_and_senders(client):
    refs = client.ok("find_references_to", name="Dog")["structuredContent"]["results"]
    assert refs == ["zoo.animals.make_dog", "zoo.keeper.Keeper.__init__", "zoo.test_zoo.ZooTest.test_pass",
                    "zoo.test_zoo.ZooTest.test_fail"]
    senders = client.ok("find_senders", selector="speak")["structuredContent"]["results"]
    assert senders == ["zoo.animals.make_dog", "zoo.keeper.Keeper.feed"]
    assert "no senders" in text(client.ok("find_senders", selector="nobody_calls_this"))


def test_a_decorator_written_without_arguments_is_a_send(client):
    # Python calls it with the def: @staticmethod is staticmethod(kingdom).
    assert client.ok("find_senders", selector="staticmethod")["structuredContent"]["results"] == \
        ["zoo.animals.Animal.kingdom"]
    assert client.ok("find_senders", selector="classmethod")["structuredContent"]["results"] == \
        ["zoo.animals.Animal.named"]
    # and the tool says so to a client choosing it (it said calls only)
    tools = client.server.handle({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})["result"]["tools"]
    assert "decorated @selector or @obj.selector" in {t["name"]: t for t in tools}["find_senders"]["description"]


def test_senders_are_capped_with_the_true_total(client):
    calls = "".join(f"def f{i}():\n    return target()\n" for i in range(230))
    client.view.set_source("zoo.keeper", calls, live=False)
    result = client.ok("find_senders", selector="target")["structuredContent"]
    assert len(result["results"]) == 200 and result["total"] == 230 and "230" in result["note"]


def test_search_method_source(client):
    assert client.ok("search_method_source", pattern="says")["structuredContent"]["results"] == [
        "zoo.animals.Animal.speak"]
    assert client.ok("search_method_source", pattern="Dog(",
                     dictionaryName="zoo.keeper")["structuredContent"]["results"] == ["zoo.keeper.Keeper.__init__"]
    client.error("search_method_source", "notFound", pattern="x", dictionaryName="nope")
    client.error("search_method_source", "invalidParams", pattern="")


def test_search_method_source_splits_each_module_into_lines_once(client, monkeypatch):
    # Each def's text was cut from its module split anew, so a module's search took time
    # in its size times its defs: 24 s for one module of 10,000 methods.
    from gsmcpd.image import splice

    source = "class Many:\n" + "".join(f"    def m{i}(self):\n        return {i}\n" for i in range(300))
    client.view.add_module("zoo.many", source)
    split, lines_of = [], splice.lines_of
    monkeypatch.setattr(splice, "lines_of", lambda text: split.append(text == source) or lines_of(text))
    result = client.ok("search_method_source", pattern="return 299\n", dictionaryName="zoo.many")
    assert result["structuredContent"]["results"] == ["zoo.many.Many.m299"]
    assert split.count(True) == 1


def test_search_method_source_tokenizes_only_the_defs_that_may_hold_the_pattern(client, monkeypatch):
    # Every def was tokenized (to keep its strings' lines whole as its indentation is cut):
    # 1.5 s a megabyte of source, whatever the pattern. A def, or a module, whose source
    # lacks a line's piece of the pattern cannot hold it.
    source = "class Many:\n" + "".join(f"    def m{i}(self):\n        return {i}\n" for i in range(300))
    client.view.add_module("zoo.many", source)
    tokenized, string_lines = [], splice.string_lines
    monkeypatch.setattr(splice, "string_lines", lambda text: tokenized.append(text) or string_lines(text))
    result = client.ok("search_method_source", pattern="(self):\n    return 299\n")
    assert result["structuredContent"]["results"] == ["zoo.many.Many.m299"]
    assert tokenized == ["    def m299(self):\n        return 299\n"]


def test_search_method_source_finds_a_pattern_in_the_comments_that_end_a_def(client):
    # The prefilter looked at the def's lines down to its last statement, while its
    # segment (what the pattern is matched in) runs on through the comments ending it.
    client.view.add_module("zoo.tail", "class T:\n    def f(self):\n        x = 1\n        # TODO marker\n"
                           "\n    def g(self):\n        pass\n")
    assert client.ok("search_method_source", pattern="TODO marker")["structuredContent"]["results"] == [
        "zoo.tail.T.f"]
    assert client.ok("search_method_source", pattern="x = 1\n    # TODO")["structuredContent"]["results"] == [
        "zoo.tail.T.f"]


def test_a_commit_the_disk_refuses_says_nothing_was_written(image, views, monkeypatch):
    from gsmcpd.image.store import ImageStore

    def disk_full(self, rel, data, made):
        raise OSError(errno.ENOSPC, "No space left on device", rel)

    client = Client(views(image))
    before = (image / "zoo/keeper.py").read_text()
    monkeypatch.setattr(ImageStore, "_write_temp", disk_full)
    message = client.error("compile_method", "other", className="Keeper",
                           source="def count(self):\n    return len(self.dogs)\n")
    assert message.startswith("commit failed: the image could not be written ([Errno 28] No space "
                              "left on device: 'zoo/keeper.py'); nothing was written and your "
                              "changes are kept uncommitted (zoo.keeper).")
    assert (image / "zoo/keeper.py").read_text() == before and client.view.has_changes
    monkeypatch.undo()
    assert client.ok("commit")["structuredContent"]["committed"] == ["zoo.keeper"]
    assert "def count(self)" in (image / "zoo/keeper.py").read_text()


def test_a_commit_that_waited_out_the_image_lock_names_its_holder_not_a_disk_to_fix(image, views):
    # Another process holding the lock leaves no room to make nor permissions to fix: the
    # answer said "the image could not be written", and to do both.
    import fcntl
    client = Client(views(image))
    client.view.store.lock_wait = 0.05
    with open(client.view.store.lock_file) as holding:
        fcntl.flock(holding, fcntl.LOCK_EX)
        message = client.error("compile_method", "other", className="Keeper",
                               source="def count(self):\n    return len(self.dogs)\n")
    assert message.startswith(f"commit failed: the image lock {client.view.store.lock_file} was not free "
                              f"after 0.05s (GS_MCP_IMAGE_LOCK_WAIT): held by pid {os.getpid()} "), message
    assert message.endswith("nothing was read or written; the administrator can end the session holding "
                            "it (gsmcpd status, gsmcpd end); your changes are kept uncommitted (zoo.keeper)")
    assert client.ok("commit")["structuredContent"]["committed"] == ["zoo.keeper"]


def test_a_commit_of_changes_already_on_disk_whose_read_back_fails_says_they_were_not_kept(image, views,
                                                                                          monkeypatch):
    # Every change was already on disk (another's identical commit): the view moved onto
    # them, then reading the image back waited out the lock. The answer said "commit
    # failed ...; your changes are kept uncommitted ()", with nothing left uncommitted.
    from gsmcpd.image.store import ImageLockTimeout
    a, b = Client(views(image, "a")), Client(views(image, "b", install=False))
    for view in (a.view, b.view):
        view.set_source("zoo.keeper", "x = 'same'\n", live=False)
    a.ok("commit")

    def timed_out(*args, **kwargs):
        raise ImageLockTimeout(b.view.store.lock_file, 0.05, ["pid 1"])

    monkeypatch.setattr(b.view, "_load_snapshot", timed_out)
    failed = b.call("commit")
    assert failed["structuredContent"]["error"]["kind"] == "other"
    assert failed["structuredContent"]["error"]["alreadyCommitted"] == ["zoo.keeper"]
    assert text(failed).startswith(
        "commit wrote nothing: the image already had zoo.keeper as this session changed it "
        "(already committed by another, with the same text), so nothing is left uncommitted; "
        f"but reading the image back failed: the image lock {b.view.store.lock_file} was not free "
        "after 0.05s"), text(failed)
    assert "kept uncommitted" not in text(failed)
    monkeypatch.undo()
    assert b.ok("status")["structuredContent"]["changedModules"] == []


def commits_fail_undecided(client, patcher):
    """Through `patcher` (a monkeypatch), `client`'s commits fail once decided (the disk
    failing once their intent is written), and asking whether they stand waits out the lock."""
    from gsmcpd.image import store as store_module
    write_intent = store_module.ImageStore._write_intent

    def failing_once_written(self, intent):
        write_intent(self, intent)
        raise OSError(5, "Input/output error")

    def timed_out(commit_id):
        raise store_module.ImageLockTimeout(client.view.store.lock_file, 0.05, [])

    patcher.setattr(store_module.ImageStore, "_write_intent", failing_once_written)
    patcher.setattr(client.view.store, "has_commit", timed_out)


@pytest.mark.parametrize("settling", ["commit", "refresh"])
def test_a_commit_that_cannot_tell_whether_it_stands_says_so_not_that_it_failed(image, views, monkeypatch,
                                                                                settling):
    # The disk failed once the commit was decided (its intent written), and asking whether it
    # stands waited out the lock: that ImageLockTimeout was answered, "commit failed ...; your
    # changes are kept uncommitted (zoo.keeper)", of a commit that stands.
    client = Client(views(image))
    commits_fail_undecided(client, monkeypatch)
    client.view.set_source("zoo.keeper", "x = 'mine'\n", live=False)
    failed = client.call("commit")
    assert failed["structuredContent"]["error"]["undecided"] == ["zoo.keeper"]
    assert text(failed) == (
        "the commit of zoo.keeper failed ([Errno 5] Input/output error), and whether it stands could "
        "not be told (the journal that records it could not be read under the image lock); commit "
        "again or refresh to settle it: the answer then says whether it stands (settled), and a "
        "commit writes anything else")
    monkeypatch.undo()
    # The error said "commit again or refresh": each settles it (the message said commit only).
    answer = client.ok(settling)
    settled = answer["structuredContent"]
    # The session's own commit: it was "already committed by another, with the same text".
    assert (settled["alreadyCommitted"], settled["settled"]) == ([], ["zoo.keeper"])
    if settling == "commit":
        assert settled["committed"] == []
        assert text(answer).startswith("Nothing to write; this session's own earlier commit, which could "
                                       "not tell whether it stood, stands: zoo.keeper (view version 1)")
    else:
        assert settled["broughtIn"] == [] and settled["keptOurs"] == []
        assert text(answer).startswith("Refreshed to view version 1\nthis session's own earlier commit, "
                                       "which could not tell whether it stood, stands: zoo.keeper")
    assert client.view.changed_modules() == []
    # Finished on disk by the settle, whichever tool settled it: nothing left pending.
    assert (image / "zoo/keeper.py").read_bytes() == b"x = 'mine'\n"
    assert not os.path.exists(client.view.store.intent_file)


def test_an_abort_after_an_undecided_commit_that_stands_names_it_settled_not_discarded_nor_others(
        image, views, monkeypatch):
    # Abort answered "discarded changes to zoo.keeper" and "brought in others' commits to
    # zoo.keeper" of the session's own commit, which stands: nothing was discarded, and
    # no other session committed anything.
    client = Client(views(image))
    with monkeypatch.context() as patched:
        commits_fail_undecided(client, patched)
        client.view.set_source("zoo.keeper", "x = 'mine'\n", live=False)
        assert client.call("commit")["structuredContent"]["error"]["undecided"] == ["zoo.keeper"]
    answer = client.ok("abort")
    structured = answer["structuredContent"]
    assert (structured["discarded"], structured["broughtIn"], structured["settled"]) == (
        [], [], ["zoo.keeper"])
    assert text(answer).startswith("Aborted: no uncommitted changes\nview version 1\nthis session's own "
                                   "earlier commit, which could not tell whether it stood, stands: zoo.keeper")
    assert client.view.source("zoo.keeper") == "x = 'mine'\n" and not client.view.has_changes
    assert (image / "zoo/keeper.py").read_bytes() == b"x = 'mine'\n"
    assert not os.path.exists(client.view.store.intent_file)


def test_an_abort_that_settled_its_earlier_commit_then_waited_out_the_lock_says_what_settling_did(
        image, views, monkeypatch):
    # It said "the session's view, and its uncommitted changes, are as they were", while
    # settling had already moved the view onto the session's own commit, which it did not name.
    import fcntl
    from gsmcpd.image import store as store_module
    client = Client(views(image))
    write_intent, has_commit = store_module.ImageStore._write_intent, client.view.store.has_commit

    def failing_once_written(self, intent):
        write_intent(self, intent)
        raise OSError(5, "Input/output error")

    def timed_out(commit_id):
        raise store_module.ImageLockTimeout(client.view.store.lock_file, 0.05, [])

    with monkeypatch.context() as patched:
        patched.setattr(store_module.ImageStore, "_write_intent", failing_once_written)
        patched.setattr(client.view.store, "has_commit", timed_out)
        client.view.set_source("zoo.keeper", "x = 'mine'\n", live=False)
        assert client.call("commit")["structuredContent"]["error"]["undecided"] == ["zoo.keeper"]
    client.view.set_source("zoo.animals", client.view.source("zoo.animals") + "\nADDED = 1\n")
    client.view.store.lock_wait = 0.05
    holding = open(client.view.store.lock_file)

    def settled_then_held(commit_id):   # the lock is taken by another right after settling
        stands = has_commit(commit_id)
        fcntl.flock(holding, fcntl.LOCK_EX)
        return stands

    monkeypatch.setattr(client.view.store, "has_commit", settled_then_held)
    try:
        result = client.call("abort")
    finally:
        holding.close()
    assert result["isError"] and result["structuredContent"]["error"]["kind"] == "other", result
    assert result["structuredContent"]["error"]["settled"] == ["zoo.keeper"], result
    message = text(result)
    assert message.startswith("abort failed: the image lock "), message
    assert message.endswith("; nothing was discarded, but first this session's own earlier commit, which "
                            "could not tell whether it stood, stands: zoo.keeper, so the view now takes it "
                            "as committed (no longer among the uncommitted changes); the rest of the view, "
                            "and its other uncommitted changes, are as they were"), message
    assert client.view.changed_modules() == ["zoo.animals"] and client.view.source("zoo.keeper") == "x = 'mine'\n"


@pytest.mark.parametrize("tool", ["refresh", "abort"])
def test_a_refresh_or_abort_that_waited_out_the_image_lock_says_so_and_changes_nothing(image, views, tool):
    # It answered the bare "ImageLockTimeout: [Errno 110] ...".
    import fcntl
    client = Client(views(image))
    client.view.store.lock_wait = 0.05
    client.view.set_source("zoo.keeper", client.view.source("zoo.keeper") + "\nADDED = 1\n")
    with open(client.view.store.lock_file) as holding:
        fcntl.flock(holding, fcntl.LOCK_EX)
        message = client.error(tool, "other")
    assert message.startswith(f"{tool} failed: the image lock {client.view.store.lock_file} was not free "
                              f"after 0.05s (GS_MCP_IMAGE_LOCK_WAIT): held by pid {os.getpid()} "), message
    assert message.endswith("; the session's view, and its uncommitted changes, are as they were"), message
    assert client.view.changed_modules() == ["zoo.keeper"]


# -- what a class name finds, said plainly --------------------------------------

def test_a_class_in_a_module_that_does_not_compile_is_not_found_and_the_answer_says_why(client):
    client.view.add_module("zoo.broken", "class Broken:\n    def a(self)\n        return 1\n")
    for name in ("Broken", "zoo.broken.Broken"):
        message = client.error("describe_class", "notFound", className=name)
        assert "zoo.broken does not compile: line 2" in message, message
    # A name no module writes gets no such hint.
    assert "does not compile" not in client.error("describe_class", "notFound", className="Unicorn")


def test_a_nested_class_name_points_at_its_top_level_class(client):
    client.view.add_module("zoo.nest", "class Outer:\n    class Inner:\n        pass\n")
    message = client.error("describe_class", "notFound", className="zoo.nest.Outer.Inner")
    assert "nested in the class zoo.nest.Outer" in message and "export_class_source zoo.nest.Outer" in message
    # Without its module, the class name was taken for a module's: "no dictionary named Outer".
    message = client.error("compile_method", "notFound", className="Outer.Inner",
                           source="def m(self):\n    pass\n")
    assert message.endswith("; Outer.Inner is nested in the class zoo.nest.Outer, and the tools work "
                            "on an image module's top-level classes: export_class_source zoo.nest.Outer "
                            "shows it")


def test_a_method_or_unknown_name_under_a_class_is_not_said_to_be_a_nested_class(client):
    # "Dog.noise is nested in the class zoo.animals.Dog": noise is a method, and a name
    # the class does not have at all was said to be nested in it too.
    for name in ("Dog.noise", "zoo.animals.Dog.noise", "Dog.Nowhere", "zoo.animals.Dog.Nowhere"):
        message = client.error("describe_class", "notFound", className=name)
        assert "nested" not in message, message
    client.view.add_module("zoo.nest", "class Outer:\n    class Inner:\n        class Deep:\n            pass\n")
    message = client.error("describe_class", "notFound", className="Outer.Inner.Deep")
    assert "Outer.Inner.Deep is nested in the class zoo.nest.Outer" in message


def test_a_huge_name_is_not_echoed_whole(client):
    huge = "A" * 100_000
    for tool, kind, arguments in [("describe_class", "notFound", {"className": huge}),
                                  ("describe_class", "invalidParams", {"className": huge + " x"}),
                                  ("list_classes", "notFound", {"dictionaryName": huge})]:
        message = client.error(tool, kind, **arguments)
        assert len(message) < 1000 and "characters)" in message, (tool, len(message))


def test_a_selector_or_name_that_could_never_be_found_is_invalid_not_absent(client):
    for selector in ("", " ", "a b", "x.y", "1st"):
        for tool, arguments in [("get_method_source", {"className": "Dog"}),
                                ("find_senders", {}), ("find_implementors", {})]:
            client.error(tool, "invalidParams", selector=selector, **arguments)
    for name in (" ", "a b", "zoo..Dog", "Dog."):
        client.error("find_references_to", "invalidParams", name=name)
    for tool in ("list_classes", "list_dictionary_entries"):
        client.error(tool, "invalidParams", dictionaryName="")
    client.error("search_method_source", "invalidParams", pattern="x", dictionaryName="")
    # A pattern is any text: spaces and dots are what a search may well look for.
    assert client.ok("search_method_source", pattern="self.name = ")["structuredContent"]["results"] == [
        "zoo.animals.Animal.__init__"]
    huge = "a" * 100_000
    for tool in ("find_senders", "find_implementors"):
        assert len(text(client.ok(tool, selector=huge))) < 1000
    assert len(text(client.ok("search_method_source", pattern=huge))) < 1000


def test_a_private_method_is_found_as_written_and_as_list_methods_shows_it(client):
    client.view.add_module("zoo.vault", "class Vault:\n    def __secret(self):\n        return 1\n\n"
                                        "    def open(self):\n        return self.__secret()\n")
    listed = client.ok("list_methods", className="Vault")["structuredContent"]["methods"]["instance"]
    assert {"name": "_Vault__secret", "definedIn": "zoo.vault.Vault"} in listed
    for selector in ("__secret", "_Vault__secret"):
        assert text(client.ok("get_method_source", className="Vault", selector=selector)).startswith(
            "def __secret(self):")
        assert client.ok("find_implementors", selector=selector)["structuredContent"]["results"] == [
            "zoo.vault.Vault"]
        assert client.ok("find_senders", selector=selector)["structuredContent"]["results"] == [
            "zoo.vault.Vault.open"]


def test_a_method_written_as_several_defs_has_one_implementor(client):
    client.view.add_module("zoo.shapes", '''\
from typing import overload


class Box:
    @property
    def size(self):
        return 1

    @size.setter
    def size(self, value):
        pass

    @overload
    def fit(self, x: int) -> int: ...
    @overload
    def fit(self, x: str) -> str: ...
    def fit(self, x):
        return x
''')
    for selector in ("size", "fit"):
        result = client.ok("find_implementors", selector=selector)["structuredContent"]
        assert result == {"results": ["zoo.shapes.Box"], "total": 1}, selector


def test_a_method_written_as_several_defs_is_one_sender_reference_and_match(client):
    # Each def that matched was listed: a property's getter and setter both sending
    # compute() came back as Box.size twice, and the total counted it twice.
    client.view.add_module("zoo.sizes", '''\
from typing import TYPE_CHECKING


class Box:
    @property
    def size(self):
        return compute(self._size)

    @size.setter
    def size(self, value):
        self._size = compute(value)

    if TYPE_CHECKING:
        def fit(self) -> int: return compute(0)
    else:
        def fit(self):
            return compute(1)


def compute(x):
    return x
''')
    expected = {"results": ["zoo.sizes.Box.size", "zoo.sizes.Box.fit"], "total": 2}
    assert client.ok("find_senders", selector="compute")["structuredContent"] == expected
    assert client.ok("find_references_to", name="compute")["structuredContent"] == expected
    assert client.ok("search_method_source", pattern="compute(",
                     dictionaryName="zoo.sizes")["structuredContent"] == {
        "results": expected["results"] + ["zoo.sizes.compute"], "total": 3}


GUARDED = '''\
from typing import TYPE_CHECKING


class Guarded:
    if TYPE_CHECKING:
        def typed(self) -> int: ...

    try:
        def tried(self):
            return self.helper()
    except Exception:
        pass

    def helper(self):
        return 1
'''


def test_a_def_inside_a_class_level_if_or_try_is_shown_and_searched(client):
    client.view.add_module("zoo.guarded", GUARDED)
    listed = client.ok("list_methods", className="Guarded")["structuredContent"]["methods"]["instance"]
    assert "tried" in {m["name"] for m in listed}      # live, it is a method like any other
    result = client.ok("get_method_source", className="Guarded", selector="tried")
    assert result["structuredContent"]["source"] == "def tried(self):\n    return self.helper()\n"
    assert ("written inside the class-level try statement at line 8: the class has it when that "
            "branch runs") in text(result)
    assert "class-level if statement at line 5" in text(
        client.ok("get_method_source", className="Guarded", selector="typed"))
    assert client.ok("find_implementors", selector="tried")["structuredContent"]["results"] == [
        "zoo.guarded.Guarded"]
    assert client.ok("find_senders", selector="helper")["structuredContent"]["results"] == [
        "zoo.guarded.Guarded.tried"]
    assert client.ok("search_method_source", pattern="self.helper()")["structuredContent"]["results"] == [
        "zoo.guarded.Guarded.tried"]


def test_a_method_bound_by_assignment_is_not_a_def_and_the_answer_says_where_it_is(client):
    client.view.add_module("zoo.alias", "class Greeter:\n    def greet(self):\n        return 1\n\n"
                                        "    hello = greet\n\n    class Inner:\n        pass\n")
    listed = client.ok("list_methods", className="Greeter")["structuredContent"]["methods"]["instance"]
    assert "hello" in {m["name"] for m in listed}
    message = client.error("get_method_source", "notFound", className="Greeter", selector="hello")
    assert "'hello = greet' at line 5" in message and "get_class_definition" in message
    assert "'class Inner' at line 7" in client.error("get_method_source", "notFound",
                                                     className="Greeter", selector="Inner")


def test_answers_about_the_whole_image_say_which_modules_do_not_compile(client):
    client.view.add_module("zoo.broken", "class Broken:\n    def a(self)\n        return 1\n\n\n"
                                         "def sender():\n    return x.speak()\n")
    reason = "image module zoo.broken does not compile: line 2: expected ':'"
    everything = client.ok("list_all_classes")
    assert everything["structuredContent"]["notListed"] == [reason]
    assert text(everything).endswith(f"\n(not listed: {reason})")
    for tool, arguments in [("find_senders", {"selector": "speak"}), ("find_implementors", {"selector": "a"}),
                            ("find_references_to", {"name": "x"}), ("search_method_source", {"pattern": "x"})]:
        result = client.ok(tool, **arguments)
        assert result["structuredContent"]["notSearched"] == [reason], tool
        assert text(result).endswith(f"\n(not searched: {reason})"), tool
    # One other module searched: nothing left out, nothing said.
    result = client.ok("search_method_source", pattern="x", dictionaryName="zoo.animals")
    assert "notSearched" not in result["structuredContent"] and "not searched" not in text(result)
    # list_classes of that very module names it with its error too; of another, nothing said.
    one = client.ok("list_classes", dictionaryName="zoo.broken")
    assert one["structuredContent"]["notListed"] == [reason] and text(one) == f"(not listed: {reason})"
    other = client.ok("list_classes", dictionaryName="zoo.animals")
    assert "notListed" not in other["structuredContent"] and "not listed" not in text(other)


def test_a_c_types_computed_attributes_are_properties_and_its_classmethods_class_side(client):
    methods = client.ok("list_methods", className="int")["structuredContent"]["methods"]
    assert {"real", "imag", "numerator", "denominator"} <= {m["name"] for m in methods["property"]}
    assert "from_bytes" in {m["name"] for m in methods["class"]}
    assert not {"real", "from_bytes"} & {m["name"] for m in methods["instance"]}
    client.view.add_module("zoo.meta", "class Meta(type):\n    def __call__(cls):\n        return 1\n")
    inherited = client.ok("list_methods", className="Meta", includeKernelInherited=True)[
        "structuredContent"]["methods"]
    assert "__name__" not in {m["name"] for m in inherited["instance"]}
    assert {"name": "__name__", "definedIn": "type", "inherited": True} in inherited["property"]


def test_a_class_its_module_rebinds_below_its_statement_is_browsed_from_its_source(client):
    # collections' `try: from _collections import OrderedDict`: the tools showed the C class
    # (its methods as the class's own, collections.OrderedDict in its MRO) as the image's.
    client.view.add_module("zoo.fast", "class Fast:\n    def f(self):\n        return 2\n")
    client.view.add_module("zoo.slow", "class OrderedDict(dict):\n    def mine(self):\n        return 1\n\n\n"
                                       "class Fast:\n    def f(self):\n        return 1\n\n\n"
                                       "try:\n    from _collections import OrderedDict\n    from zoo.fast import Fast\n"
                                       "except ImportError:\n    pass\n\n\n"
                                       "class Renamed(Warning):\n    __module__ = 'zoo'\n\n"
                                       "    def why(self):\n        return 1\n")
    for name, bound in (("zoo.slow.OrderedDict", "collections.OrderedDict"), ("zoo.slow.Fast", "zoo.fast.Fast")):
        why = f"{name} is bound to {bound} once zoo.slow is imported, not to the class its class statement makes"
        listed = client.ok("list_methods", className=name)["structuredContent"]
        assert listed["fromSource"] == why
        assert [m["name"] for m in listed["methods"]["instance"]] == ["f" if "Fast" in name else "mine"]
        described = client.ok("describe_class", className=name)["structuredContent"]
        assert described["fromSource"] == why and described["mro"] == []
        assert client.ok("get_class_hierarchy", className=name)["structuredContent"]["fromSource"] == why
    # A class whose body sets its own __module__ (pluggy's warnings) is still the live one,
    # named by the module holding its class statement (View.home).
    from zoo.slow import Renamed
    assert Renamed.__module__ == "zoo"
    described = client.ok("describe_class", className="zoo.slow.Renamed")["structuredContent"]
    assert "fromSource" not in described and described["mro"][:2] == ["zoo.slow.Renamed", "Warning"]


# A class attribute that raises on any attribute read (werkzeug's LocalProxy outside its context).
PROXY_HELD = ("class Proxy:\n    def __getattr__(self, name):\n        raise RuntimeError('outside its context')\n\n\n"
           "class Shown:\n    proxy = Proxy()\n\n    def f(self):\n        return 2\n")


def test_a_class_bound_over_a_statement_is_told_apart_without_reading_its_attributes(client):
    # The browse and the refusal failed with the attribute's RuntimeError: telling whether
    # the module made it read `__func__` and `__code__` of each of its class attributes.
    client.view.add_module("zoo.held", PROXY_HELD)
    client.view.add_module("zoo.over", "class Shown:\n    def mine(self):\n        return 1\n\n\n"
                                       "from zoo.held import Shown\n")
    why = "zoo.over.Shown is bound to zoo.held.Shown once zoo.over is imported, not to the class its class statement makes"
    assert client.ok("describe_class", className="zoo.over.Shown")["structuredContent"]["fromSource"] == why
    said = client.error("compile_method", "refused", className="zoo.over.Shown", source="def g(self):\n    pass\n")
    assert said.startswith(why)


def test_list_methods_lists_no_base_method_a_subclass_hides_under_a_plain_attribute(client):
    # email's Domain(TokenList) binds `as_ew_allowed = False` over TokenList's property:
    # list_methods said Domain inherited that property, which Domain.as_ew_allowed is not.
    client.view.add_module("zoo.hiding", "class Base:\n    @property\n    def flag(self):\n"
                                         "        return True\n\n    def run(self):\n        return 1\n\n"
                                         "    def kept(self):\n        return 2\n\n\n"
                                         "class Sub(Base):\n    flag = False\n    run = None\n\n\n"
                                         "class Bag(dict):\n    get = 'no method'\n")
    from zoo.hiding import Sub   # what Python says: Sub has neither as a method
    assert Sub.flag is False and Sub.run is None
    assert client.ok("list_methods", className="Sub")["structuredContent"]["methods"] == {
        "instance": [{"name": "kept", "definedIn": "zoo.hiding.Base", "inherited": True}],
        "class": [], "static": [], "property": []}
    # A kernel base's method hidden so is neither listed nor counted.
    everything = client.ok("list_methods", className="Bag", includeKernelInherited=True)["structuredContent"]
    assert "get" not in {m["name"] for group in everything["methods"].values() for m in group}
    counted = client.ok("list_methods", className="Bag")["structuredContent"]["kernelInherited"]
    assert counted["count"] == len([m for group in everything["methods"].values() for m in group])


def test_list_methods_counts_an_image_classs_kernel_inherited_methods_unless_asked_for_them(client):
    # A TestCase subclass listed its two methods among some 90 of unittest's.
    client.view.add_module("zoo.test_few", "import unittest\n\n\nclass Base(unittest.TestCase):\n"
                                           "    def helper(self):\n        pass\n\n\n"
                                           "class FewTest(Base):\n    def setUp(self):\n        pass\n\n"
                                           "    def test_one(self):\n        pass\n\n\nclass Bare(dict):\n    pass\n")
    import unittest
    kernel = {name for owner in unittest.TestCase.__mro__[:-1] for name, value in vars(owner).items()
              if browsing.member_kind(value) and name not in browsing.NOT_METHODS} - {"setUp"}
    result = client.ok("list_methods", className="FewTest")
    assert result["structuredContent"] == {
        "class": "zoo.test_few.FewTest",
        "methods": {"instance": [{"name": "setUp", "definedIn": "zoo.test_few.FewTest"},
                                 {"name": "test_one", "definedIn": "zoo.test_few.FewTest"},
                                 {"name": "helper", "definedIn": "zoo.test_few.Base", "inherited": True}],
                    "class": [], "static": [], "property": []},
        "kernelInherited": {"count": len(kernel), "classes": {"unittest.case.TestCase": len(kernel)}}}
    assert text(result) == (
        "instance:\n  setUp\n  test_one\n  helper  (inherited from zoo.test_few.Base)\n"
        f"(not listed: {len(kernel)} methods inherited from kernel classes, {len(kernel)} from "
        "unittest.case.TestCase; includeKernelInherited true lists them)")
    everything = client.ok("list_methods", className="FewTest", includeKernelInherited=True)["structuredContent"]
    listed = [m for group in everything["methods"].values() for m in group]
    assert {m["name"] for m in listed} == kernel | {"setUp", "test_one", "helper"}
    assert "kernelInherited" not in everything
    assert {"name": "assertEqual", "definedIn": "unittest.case.TestCase", "inherited": True} in \
        everything["methods"]["instance"]
    # A class with no methods but a kernel base's says so; a kernel class lists all as before.
    bare = client.ok("list_methods", className="Bare")
    assert text(bare).startswith("zoo.test_few.Bare has no methods of its own or from image classes\n"
                                 "(not listed: ")
    assert bare["structuredContent"]["kernelInherited"]["classes"] == {"dict": bare["structuredContent"][
        "kernelInherited"]["count"]}
    kernel_class = client.ok("list_methods", className="bool")["structuredContent"]
    assert "kernelInherited" not in kernel_class and {"name": "bit_length", "definedIn": "int",
                                                      "inherited": True} in kernel_class["methods"]["instance"]


def test_a_class_its_module_rebinds_is_browsed_from_source_saying_what_the_name_is_bound_to(client):
    client.view.add_module("zoo.rebound", "class Gone:\n    def a(self):\n        return 1\n\n\nGone = None\n")
    described = text(client.ok("describe_class", className="Gone"))
    assert "methods: a" in described
    assert "(from source: zoo.rebound.Gone is not bound to a class once zoo.rebound is imported " \
           "(found NoneType))" in described and "unknown error" not in described
    hierarchy = client.ok("get_class_hierarchy", className="Gone")["structuredContent"]
    assert "found NoneType" in hierarchy["fromSource"] and hierarchy["bases"] == []


def test_a_class_rebound_by_code_run_since_its_import_is_not_said_rebound_by_its_module(client):
    # Its file binds it once: "not bound to a class once zoo.live is imported" was untrue.
    client.view.add_module("zoo.live", "class Here:\n    def a(self):\n        return 1\n\n\nHere.b = 2\n")
    client.ok("execute_code", code="import zoo.live\nzoo.live.Here = None")
    described = text(client.ok("describe_class", className="Here"))
    assert "methods: a" in described
    assert ("(from source: zoo.live.Here is not bound to a class in this session (found NoneType): no "
            "statement of its module below its class statement binds the name, so code run since did "
            "(execute_code or a test in this session, a function the module calls, another module's "
            "code); abort re-imports the session's modules, undoing what this session's code did)") in described


@pytest.mark.parametrize("source, said", [
    ("def reset():\n    global Here\n    Here = None\n\n\nreset()\n",
     "zoo.live.Here is bound to None once zoo.live is imported"),
    ("try:\n    raise ValueError\nexcept ValueError as Here:\n    pass\n",
     "zoo.live.Here is not bound once zoo.live is imported (the module deletes the name"),
])
def test_a_class_its_file_rebinds_through_a_call_or_a_handler_is_not_said_rebound_by_code_since(client, source, said):
    # "code run since did ...; abort ... undoing" sent the user to abort, which runs the
    # module's file again: its own call or handler unbinds the class again.
    client.view.add_module("zoo.live", "class Here:\n    def a(self):\n        return 1\n\n\n" + source)
    client.ok("execute_code", code="import zoo.live")
    message = client.error("delete_method", "refused", className="zoo.live.Here", selector="a")
    assert message.startswith(said) and "abort" not in message and "editor" in message, message


def test_a_class_of_a_shadowed_module_is_browsed_from_source_by_every_tool_saying_so(client):
    # get_class_hierarchy answered kind other ("shadowed") where describe_class answered
    # from source; list_methods answered from source saying nothing.
    client.view.add_module("zoo.users", "import json\nfrom json import JSONDecoder as D\n\n\n"
                                        "class Strict(json.JSONDecoder):\n    pass\n\n\n"
                                        "class Loose(D):\n    pass\n\n\nclass Own:\n    pass\n")
    client.view.add_module("json", "class JSONDecoder(dict):\n    def decode(self):\n        pass\n")
    said = ("image module json is shadowed by the already-loaded kernel module of that name; "
            "rename the image module")
    hierarchy = client.ok("get_class_hierarchy", className="json.JSONDecoder")
    assert hierarchy["structuredContent"] == {
        "class": "json.JSONDecoder", "superclasses": [], "bases": ["dict"],
        "subclasses": ["zoo.users.Loose", "zoo.users.Strict"], "fromSource": said, "total": 2}
    assert text(hierarchy) == ("bases (as written): dict\nsubclasses: zoo.users.Loose, zoo.users.Strict\n"
                               f"(from source: {said})")
    for tool in ("describe_class", "list_methods"):
        answer = client.ok(tool, className="json.JSONDecoder")
        assert answer["structuredContent"]["fromSource"] == said
        assert text(answer).endswith(f"(from source: {said})")
    assert client.ok("list_methods", className="json.JSONDecoder")["structuredContent"]["methods"][
        "instance"] == [{"name": "decode", "definedIn": "json.JSONDecoder"}]


def test_private_instance_variables_are_listed_as_they_are_stored(client):
    client.view.add_module("zoo.token", "class Token:\n    __slots__ = ('__raw', 'kind')\n\n"
                                        "    def __init__(self):\n        self.__raw = 1\n        self.kind = 2\n\n\n"
                                        "class Plain:\n    def __init__(self):\n        self.__dict__.update()\n"
                                        "        self.__hidden = 3\n")
    assert client.ok("describe_class", className="Token")["structuredContent"]["instanceVariables"] == [
        "_Token__raw", "kind"]
    assert client.ok("describe_class", className="Plain")["structuredContent"]["instanceVariables"] == [
        "_Plain__hidden"]


SLOTTED = """\
class Strict:
    __slots__ = ("y", "_size")
    limit = 3

    def __init__(self):
        self.y = 0
        self.x = 1
        self.limit = 4
        self.size = 5

    @property
    def size(self):
        return self._size

    @size.setter
    def size(self, value):
        self._size = value


class Heir(Strict):
    __slots__ = ("z",)

    def grow(self):
        self.y = 1
        self.z = 2
        self.w = 3


class Open(Strict):
    __slots__ = ("__dict__",)

    def grow(self):
        self.w = 3


class Unslotted(Strict):
    def grow(self):
        self.w = 3
"""


@pytest.mark.parametrize("class_name, variables, refused", [
    ("Strict", ["y", "_size", "size"], ["x", "limit"]),
    ("Heir", ["z", "y"], ["w"]),   # its base's slot is its instances' too
    ("Open", ["w"], None),         # "__dict__" among the slots: any name is held
    ("Unslotted", ["w"], None),    # no __slots__ of its own: a __dict__
])
def test_a_slotted_classs_instance_variables_are_those_its_instances_can_hold(client, class_name, variables,
                                                                               refused):
    # A name its methods assign that no slot holds (AttributeError as they run) was listed
    # as an instance variable of the class.
    client.view.add_module("zoo.slotted", SLOTTED)
    answer = client.ok("describe_class", className=class_name)
    assert answer["structuredContent"]["instanceVariables"] == variables
    assert answer["structuredContent"].get("notInSlots") == refused
    said = [line for line in text(answer).splitlines() if line.startswith("not in its __slots__")]
    assert said == ([] if refused is None else [
        "not in its __slots__ (no instance can hold them: assigning one raises AttributeError): "
        + ", ".join(refused)])


def test_names_are_read_as_python_reads_identifiers(client):
    # Python folds identifiers to NFKC: the source's `ﬁnd` (a ligature) is bound as `find`.
    client.view.add_module("zoo.folded", "class Ｋ:\n    def ﬁnd(self):\n        return 1\n")
    for class_name, selector in [("Ｋ", "ﬁnd"), ("K", "find"), ("zoo.folded.Ｋ", "find")]:
        result = client.ok("get_method_source", className=class_name, selector=selector)
        assert result["structuredContent"]["class"] == "zoo.folded.K"
    assert "zoo.folded.K" in client.ok("find_implementors", selector="ﬁnd")["structuredContent"]["results"]


def test_search_sees_the_definition_a_name_is_bound_to_not_an_earlier_one(client):
    client.view.add_module("zoo.twice", "class Twice:\n    def first(self):\n        return helper()\n\n\n"
                                        "class Twice:\n    def second(self):\n        return helper()\n\n\n"
                                        "def helper():\n    return 0\n\n\ndef helper():\n    return later()\n")
    assert client.ok("find_implementors", selector="first")["structuredContent"]["results"] == []
    client.error("get_method_source", "notFound", className="Twice", selector="first")   # alike
    assert client.ok("find_implementors", selector="second")["structuredContent"]["results"] == [
        "zoo.twice.Twice"]
    assert client.ok("find_senders", selector="helper")["structuredContent"]["results"] == [
        "zoo.twice.Twice.second"]
    assert client.ok("find_senders", selector="later")["structuredContent"]["results"] == ["zoo.twice.helper"]


def test_the_defs_of_one_name_are_shown_as_the_source_spaces_them(client):
    source = ("from typing import overload\n\n\nclass Conv:\n    @overload\n    def conv(self, x: int) -> int: ...\n"
              "    @overload\n    def conv(self, x: str) -> str: ...\n    def conv(self, x):\n        return x\n\n"
              "    @property\n    def p(self):\n        return 1\n\n    @p.setter\n    def p(self, value):\n"
              "        pass\n")
    client.view.add_module("zoo.conv", source)
    assert text(client.ok("get_method_source", className="Conv", selector="conv")) == (
        "@overload\ndef conv(self, x: int) -> int: ...\n@overload\ndef conv(self, x: str) -> str: ...\n"
        "def conv(self, x):\n    return x\n")
    assert text(client.ok("get_method_source", className="Conv", selector="p")) == (
        "@property\ndef p(self):\n    return 1\n\n@p.setter\ndef p(self, value):\n    pass\n")



def test_search_method_source_matches_lines_whatever_the_modules_line_endings(client):
    client.view.add_module("zoo.crlf", "class Crlf:\r\n    def a(self):\r\n        x = 1\r\n        return x\r\n")
    for pattern in ("x = 1\n    return", "x = 1\r\n    return"):
        assert client.ok("search_method_source", pattern=pattern)["structuredContent"]["results"] == [
            "zoo.crlf.Crlf.a"], repr(pattern)


SEARCHED = """\
\"\"\"A module docstring with def fake(): inside.\"\"\"
import functools


def top(x):
    \"\"\"Top-level docstring.
        indented inside the docstring
    back.\"\"\"
    text = ("implicit "
            "concatenation")
    # a comment: return self.value
    joined = 'continued \\
    string'
    return f\"\"\"{x}
    f-string line {text!r:>{10}}\"\"\" + joined


class Outer:
    attribute = \"\"\"class-level
        string\"\"\"

    @functools.lru_cache(maxsize=None)
    def cached(self, y="default\\tvalue"):
        def nested(z):
            return \"\"\"nested
  string\"\"\" + z
        return nested(y)

    class Inner:
        def method(self):
            if True:
                return {"key": 'value'}  # trailing comment

    @property
    def value(self):
        return 1

    @value.setter
    def value(self, new):
        self._value = new


async def coroutine():
	await something(
		\"\"\"tab-indented
	string\"\"\")
"""


def searched_def_by_def(view, pattern):
    """search_method_source's answer as it was before it ruled defs out: every def's
    segment made (tokenized, to keep its strings' lines whole) and searched."""
    pattern = splice.with_newlines(pattern, "\n")
    return list(dict.fromkeys(
        label for module, label, node, _ in code_units(view)
        if pattern in splice.with_newlines(splice.segment(view.source(module), node), "\n")))


def test_search_method_source_answers_as_searching_every_defs_segment_does(client):
    # Each def was tokenized to cut its indentation (1.5 s a megabyte of source); now a
    # def whose source lacks a piece of the pattern is ruled out first. The answers are
    # the same: patterns cut from each def's segment and from its source, across lines,
    # strings, comments and nested defs, whatever the module's line endings.
    modules = {"zoo.searched": SEARCHED, "zoo.searched_crlf": SEARCHED.replace("\n", "\r\n"),
               "zoo.searched_cr": SEARCHED.replace("\n", "\r")}
    for name, source in modules.items():
        client.view.add_module(name, source)
    patterns = {"zz_nowhere", "\n", "    ", "\t", "self", "string", "return", "\"\"\"", "\\\n"}
    segments = [splice.segment(SEARCHED, node) for _, _, node, _ in code_units(client.view, "zoo.searched")]
    for text in [SEARCHED] + segments:   # the source, indentation and all, and each def as the search sees it
        lines = splice.lines_of(text)
        for i, line in enumerate(lines):
            patterns.update({line, line.strip(), line[:12], line[-12:], "".join(lines[i:i + 2]),
                             line[-6:] + "".join(lines[i + 1:i + 2])[:14]})
    patterns.discard("")
    answered = 0
    for pattern in sorted(patterns):
        result = client.ok("search_method_source", pattern=pattern)["structuredContent"]
        assert result["results"] == searched_def_by_def(client.view, pattern), repr(pattern)
        answered += bool(result["results"])
    # the corpus is one where the patterns tell the answers apart
    assert len(patterns) > 250 and 0 < answered < len(patterns)
    # the indentation a string keeps is found; the one a def's segment cuts is not
    found = client.ok("search_method_source", pattern="nested\n  string")["structuredContent"]["results"]
    assert sorted(found) == sorted(f"{module}.Outer.cached" for module in modules)
    assert client.ok("search_method_source", pattern="\n        def nested")["structuredContent"]["results"] == []


STACKED = '''\
import functools


def wrapping(f):
    @functools.wraps(f)
    def wrapper(*args):
        return f.__func__(type(args[0]))
    return wrapper


def registering(f):
    return f


class Stacked:
    @wrapping
    @classmethod
    def wrapped(cls):
        return cls

    @registering
    @classmethod
    def registered(cls):
        return cls
'''


def test_meta_is_judged_by_what_the_live_class_binds_under_stacked_decorators(client):
    client.view.add_module("zoo.stacked", STACKED)
    methods = client.ok("list_methods", className="Stacked")["structuredContent"]["methods"]
    assert [m["name"] for m in methods["instance"]] == ["wrapped"]       # a plain function, live
    assert [m["name"] for m in methods["class"]] == ["registered"]
    result = client.ok("get_method_source", className="Stacked", selector="wrapped", meta=False)
    assert result["structuredContent"]["kind"] == "instance"
    client.error("get_method_source", "notFound", className="Stacked", selector="wrapped", meta=True)
    assert client.ok("get_method_source", className="Stacked", selector="registered",
                     meta=True)["structuredContent"]["kind"] == "class"


DISPATCHING = '''\
import functools


class Dispatching:
    @functools.singledispatchmethod
    def show(self, arg):
        return "object"

    @show.register
    def _(self, arg: int):
        return "int"

    @functools.singledispatchmethod
    @classmethod
    def parse(cls, arg):
        return cls

    def scale(self, factor, x):
        return factor * x

    double = functools.partialmethod(scale, 2)
'''


def test_methods_made_by_singledispatchmethod_and_partialmethod_are_listed(client):
    # Neither descriptor is callable itself, so both were left out as plain attributes,
    # though the class binds a method to each name (inspect.classify_class_attrs: method).
    client.view.add_module("zoo.dispatching", DISPATCHING)
    methods = client.ok("list_methods", className="Dispatching")["structuredContent"]["methods"]
    assert [m["name"] for m in methods["instance"]] == ["_", "double", "scale", "show"]
    assert [m["name"] for m in methods["class"]] == ["parse"]
    described = client.ok("describe_class", className="Dispatching")["structuredContent"]
    assert described["methods"] == ["_", "double", "parse", "scale", "show"]
    assert client.ok("get_method_source", className="Dispatching", selector="parse",
                     meta=True)["structuredContent"]["kind"] == "class"
    client.error("get_method_source", "notFound", className="Dispatching", selector="show", meta=True)


def test_a_class_browsed_from_source_names_its_private_methods_as_the_live_one_would(client):
    client.view.add_module("zoo.unloaded", "class Vault:\n    def __secret(self):\n        return 1\n\n\n"
                                           "raise RuntimeError('not today')\n")
    assert client.ok("describe_class", className="Vault")["structuredContent"]["methods"] == ["_Vault__secret"]
    listed = client.ok("list_methods", className="Vault")["structuredContent"]["methods"]["instance"]
    assert listed == [{"name": "_Vault__secret", "definedIn": "zoo.unloaded.Vault"}]


def test_find_references_to_a_dotted_name_is_to_that_modules_global(client):
    # `zoo.animals.Dog` matched every bare Dog, another module's own included, and missed
    # `animals.Dog` and `a.Dog` where the module was imported.
    client.view.add_module("zoo.kennel", '''\
import zoo.animals as a
from zoo import animals
from .animals import Dog as Hound


class Dog:
    pass


def own():
    return Dog()


def by_module():
    return animals.Dog("a")


def by_alias():
    return a.Dog("b")


def by_name():
    return Hound("c")


def by_path():
    import zoo.animals
    return zoo.animals.Dog("d")
''')
    refs = client.ok("find_references_to", name="zoo.animals.Dog")["structuredContent"]["results"]
    assert set(refs) == {"zoo.animals.make_dog", "zoo.kennel.by_alias", "zoo.kennel.by_module",
                         "zoo.kennel.by_name", "zoo.kennel.by_path", "zoo.keeper.Keeper.__init__",
                         "zoo.test_zoo.ZooTest.test_fail", "zoo.test_zoo.ZooTest.test_pass"}
    assert client.ok("find_references_to", name="zoo.kennel.Dog")["structuredContent"]["results"] == [
        "zoo.kennel.own"]
    assert "zoo.kennel.own" in client.ok("find_references_to", name="Dog")["structuredContent"]["results"]


def test_find_references_to_a_kernel_name_is_to_the_builtin_wherever_not_rebound(client):
    # `builtins.len` (as find_implementors names kernel classes) found nothing: no image
    # module is named builtins.
    client.view.add_module("zoo.counts", "import builtins\nfrom zoo.animals import *\n\n\n"
                                         "def bare(x):\n    return len(x)\n\n\n"
                                         "def dotted(x):\n    return builtins.len(x)\n")
    client.view.add_module("zoo.ownlen", "def len(x):\n    return 0\n\n\ndef mine(x):\n    return len(x)\n")
    # a bare `len: int` binds nothing: `len(x)` there calls the builtin (it was left out)
    client.view.add_module("zoo.annotated", "len: int\n\n\ndef counted(x):\n    return len(x)\n")
    refs = client.ok("find_references_to", name="builtins.len")["structuredContent"]["results"]
    assert refs == ["zoo.annotated.counted", "zoo.counts.bare", "zoo.counts.dotted"]


SCOPED = '''\
import textwrap


def global_read(text):
    return textwrap.dedent(text)


def parameter(textwrap):
    return textwrap


def enclosing_local():
    textwrap = 1

    def inner():
        return textwrap
    return inner


def comprehension_own(items):
    return [textwrap for textwrap in items] + list(map(lambda textwrap: textwrap, items))


def declared_global():
    global textwrap
    textwrap = None


def default_runs_in_the_module(x=textwrap):
    return x


def nested_global_read():
    return [lambda: textwrap.fill(s) for s in "ab"]


class Holder:
    def method_parameter(self, textwrap):
        return textwrap

    def method_global(self):
        return textwrap.indent("a", " ")
'''


def test_find_references_to_a_bare_name_leaves_out_parameters_and_locals_of_that_name(client):
    # A parameter, local, or comprehension variable named textwrap was taken for the global.
    client.view.add_module("zoo.scoped", SCOPED)
    expected = ["zoo.scoped.global_read", "zoo.scoped.declared_global",
                "zoo.scoped.default_runs_in_the_module", "zoo.scoped.nested_global_read",
                "zoo.scoped.Holder.method_global"]
    for name in ("textwrap", "zoo.scoped.textwrap"):
        assert client.ok("find_references_to", name=name)["structuredContent"]["results"] == expected


ANNOTATED = """\
from __future__ import annotations


class Context:
    pass


class Walker:
    def find(self):
        node: Context | None = None
        return node

    def make(self):
        def inner(x: Context) -> None:
            return None
        return inner

    def local(self):
        Context = 1
        return Context
"""


def test_find_references_to_counts_annotations_in_a_body_of_a_future_annotations_module(client):
    # click's Context.find_object (`node: Context | None = self`) was no reference: under
    # `from __future__ import annotations` the symbol table leaves the body's annotations out.
    client.view.add_module("zoo.annotated", ANNOTATED)
    for name in ("Context", "zoo.annotated.Context"):
        assert client.ok("find_references_to", name=name)["structuredContent"]["results"] == [
            "zoo.annotated.Walker.find", "zoo.annotated.Walker.make"]


def test_a_functions_overload_signatures_are_searched_with_it(client):
    # anyio.functools.cache: only its implementation was read, so the AsyncLRUCacheWrapper
    # its @overload signatures return was no reference, though a method's signatures are
    # read; a function written twice is still read in its last definition alone.
    client.view.add_module("zoo.overloaded", (
        "from typing import overload\n\n\nclass Crate:\n    pass\n\n\n"
        "@overload\ndef pack(x: int) -> Crate: ...\n@overload\ndef pack(x: str) -> str: ...\n"
        "def pack(x):\n    return x\n\n\ndef redone():\n    return Crate\n\n\ndef redone():\n    return 2\n"))
    assert client.ok("find_references_to", name="zoo.overloaded.Crate")["structuredContent"]["results"] == [
        "zoo.overloaded.pack"]
    for pattern, hits in (("-> Crate", ["zoo.overloaded.pack"]), ("return Crate", [])):
        assert client.ok("search_method_source", pattern=pattern,
                         dictionaryName="zoo.overloaded")["structuredContent"]["results"] == hits


def test_find_references_to_reads_a_name_as_python_does(client):
    client.view.add_module("zoo.folded", "def f():\n    return ﬁle\n")
    for name in ("ﬁle", "file"):
        assert client.ok("find_references_to", name=name)["structuredContent"]["results"] == ["zoo.folded.f"]


NESTED = '''\
class Outer:
    def top(self):
        return 1

    class Mid:
        class Leaf:
            def __hidden(self):
                return target.greet()

            def leaf(self):
                return self.__hidden() + helper(1)


def helper(n):
    return n
'''


def test_methods_of_nested_classes_are_searched_too(client):
    # Their calls were never searched: "no senders of greet" was wrong.
    client.view.add_module("zoo.nested", NESTED)
    assert client.ok("find_senders", selector="greet")["structuredContent"]["results"] == [
        "zoo.nested.Outer.Mid.Leaf.__hidden"]
    assert "zoo.nested.Outer.Mid.Leaf.leaf" in client.ok("find_references_to", name="zoo.nested.helper")[
        "structuredContent"]["results"]
    assert client.ok("search_method_source", pattern="target.greet()")["structuredContent"]["results"] == [
        "zoo.nested.Outer.Mid.Leaf.__hidden"]
    # a private is mangled with its own class's name, as Python mangles it
    assert "zoo.nested.Outer.Mid.Leaf" in client.ok("find_implementors", selector="_Leaf__hidden")[
        "structuredContent"]["results"]


TOP_LEVEL_GUARDED = '''\
import sys

try:
    import ssl
except ImportError:
    def fallback():
        return make_plain()
else:
    class Secure:
        def connect(self):
            return ssl.wrap_socket(self)

if sys.platform == "win32":
    def pick():
        return "win"
else:
    def pick():
        return helper()

with open(__file__) as f:
    def opened():
        return f.read()

for _ in range(1):
    def looped():
        return helper()

if sys.version_info > (3,):
    def shadowed():
        return helper()


def shadowed():
    return 0
'''


def test_defs_and_classes_under_a_top_level_if_try_with_or_loop_are_searched(client):
    # `try: import ssl ... else: class HTTPSConnection` (http.client): search said
    # "no methods containing 'wrap_socket'" while the module's class called it.
    client.view.add_module("zoo.toplevel", TOP_LEVEL_GUARDED)
    search = lambda tool, **arguments: client.ok(tool, **arguments)["structuredContent"]["results"]
    assert search("find_implementors", selector="connect") == ["zoo.toplevel.Secure"]
    assert search("find_senders", selector="wrap_socket") == ["zoo.toplevel.Secure.connect"]
    assert search("search_method_source", pattern="ssl.wrap_socket") == ["zoo.toplevel.Secure.connect"]
    assert search("find_references_to", name="ssl") == ["zoo.toplevel.Secure.connect"]
    assert search("find_senders", selector="make_plain") == ["zoo.toplevel.fallback"]
    # both branches' defs of one name are one hit; a def under `with` or a loop is found too
    assert search("find_senders", selector="helper") == ["zoo.toplevel.pick", "zoo.toplevel.looped"]
    assert search("search_method_source", pattern="f.read()") == ["zoo.toplevel.opened"]
    # a plain top-level def below rebinds the name whatever the branch did
    assert search("search_method_source", pattern="return 0") == ["zoo.toplevel.shadowed"]


def test_a_subclass_a_top_level_try_defines_is_a_subclass_in_the_hierarchy(client):
    # http.client's HTTPConnection had "subclasses: -", HTTPSConnection under its try's else.
    client.view.add_module("zoo.conn", "class Conn:\n    pass\n\n\ntry:\n    import ssl\nexcept ImportError:\n"
                                       "    pass\nelse:\n    class SecureConn(Conn):\n        pass\n")
    assert client.ok("get_class_hierarchy", className="Conn")["structuredContent"]["subclasses"] == [
        "zoo.conn.SecureConn"]


GENERIC = ("import typing\n\nT = typing.TypeVar('T')\n\n\nclass Box(typing.Generic[T]):\n    pass\n\n\n"
           "class IntBox(Box[int]):\n    pass\n")
GENERIC_USERS = ("import typing\n\nfrom zoo.generic import Box, T\nimport zoo.generic as g\n\n\n"
                 "class StrBox(Box[str]):\n    pass\n\n\nclass Pair(g.Box[T], typing.Generic[T]):\n    pass\n\n\n"
                 "class Nested(Box[T][int]):\n    pass\n\n\nclass Plain(Box):\n    pass\n")


@pytest.mark.parametrize("broken", [False, True])
def test_a_subclass_of_a_subscripted_base_is_a_subclass_from_source_as_live(client, broken):
    # From source (the module failing to import) only `class Plain(Box)` was one: `Box[int]`
    # was matched as written, where the live class statement subclasses Box all the same.
    client.view.add_module("zoo.generic", GENERIC + ("raise ImportError('broken')\n" if broken else ""))
    client.view.add_module("zoo.generic_users", GENERIC_USERS)
    hierarchy = client.ok("get_class_hierarchy", className="zoo.generic.Box")["structuredContent"]
    assert ("fromSource" in hierarchy) is broken
    assert hierarchy["subclasses"] == ["zoo.generic.IntBox", "zoo.generic_users.Nested",
                                       "zoo.generic_users.Pair", "zoo.generic_users.Plain",
                                       "zoo.generic_users.StrBox"]
    # Its own bases from source are as written, as describe_class shows them from source.
    if broken:
        assert hierarchy["bases"] == ["typing.Generic[T]"]
        assert client.ok("describe_class", className="IntBox")["structuredContent"]["bases"] == ["Box[int]"]


@pytest.mark.parametrize("broken", [False, True])
def test_a_subclass_nested_in_a_class_is_a_subclass_by_its_dotted_name(client, broken):
    # `class Outer: class Inner(Base)` is made as the module runs, a subclass in the image:
    # it was left out, live and from source alike. Not a class of the enclosing body's own
    # name (`Base` there is Outer's own), nor one made in a def (made only when it runs).
    client.view.add_module("zoo.based", "class Base:\n    pass\n" + ("raise ImportError('broken')\n" if broken else ""))
    client.view.add_module("zoo.nests", "from zoo.based import Base\n\n\nclass Outer:\n    class Inner(Base):\n"
                                        "        pass\n\n    if True:\n        class __Hidden:\n"
                                        "            class Deep(Base):\n                pass\n\n\n"
                                        "class Own:\n    class Base:\n        pass\n\n    class Sub(Base):\n"
                                        "        pass\n\n    def make(self):\n        class Made(Base):\n"
                                        "            pass\n\n\n"
                                        # a bare annotation binds nothing: Base is the global still
                                        "class Noted:\n    Base: type\n\n    class Sub(Base):\n        pass\n")
    hierarchy = client.ok("get_class_hierarchy", className="zoo.based.Base")["structuredContent"]
    assert ("fromSource" in hierarchy) is broken
    assert (hierarchy["subclasses"], hierarchy["total"]) == (
        ["zoo.nests.Noted.Sub", "zoo.nests.Outer.Inner", "zoo.nests.Outer.__Hidden.Deep"], 3)


def test_a_def_importing_a_dotted_name_in_its_own_body_references_it(client):
    # email.feedparser's FeedParser.__init__ does `from email.message import Message`
    # (an import cycle broken): find_references_to email.message.Message left it out,
    # the name being a local of the def.
    client.view.add_module("zoo.lazy", "def make():\n    from zoo.animals import Dog\n    return Dog('x')\n\n\n"
                                       "def other():\n    from zoo.keeper import Dog\n    return Dog\n\n\n"
                                       "class Pen:\n    def fill(self):\n        from .animals import Dog as D\n"
                                       "        return D\n")
    hits = client.ok("find_references_to", name="zoo.animals.Dog")["structuredContent"]["results"]
    assert {"zoo.lazy.make", "zoo.lazy.Pen.fill"} <= set(hits) and "zoo.lazy.other" not in hits


def test_a_long_dotted_class_name_looks_up_only_prefixes_that_could_be_modules(client, monkeypatch):
    # Each of its n prefixes was joined and looked up, O(n^2): an 80 KB name took 6 s of
    # the worker, a 1 MB one most of an hour.
    looked_up = []
    has_module = client.view.has_module
    monkeypatch.setattr(client.view, "has_module", lambda name: looked_up.append(name) or has_module(name))
    message = client.error("describe_class", "notFound", className="a." * 10_000 + "B")
    assert message.startswith("no dictionary named a.a.") and "(20001 characters)" in message
    assert len(looked_up) < 10
    # a nested class is still pointed at its top-level class
    client.view.add_module("zoo.nest", "class Outer:\n    class Inner:\n        pass\n")
    assert "export_class_source zoo.nest.Outer" in client.error("describe_class", "notFound",
                                                               className="zoo.nest.Outer.Inner")


def test_find_references_to_reads_a_module_holding_lambdas_nested_as_deeply_as_python_compiles(client):
    # Its walk of the nested scopes recursed once per lambda and answered RecursionError.
    client.view.add_module("zoo.deep", "def uses_dog():\n    return Dog\n\n\nf = " + "lambda: " * 1500 + "1\n")
    refs = client.ok("find_references_to", name="Dog")["structuredContent"]["results"]
    assert any(ref.startswith("zoo.deep.uses_dog") for ref in map(str, refs)), refs


METACLASS = '''\
class Meta(type):
    def meta_method(cls):
        return "meta " + cls.__name__

    def shadowed(cls):
        return "meta"

    alias = meta_method

    @property
    def label(cls):
        return cls.__name__.lower()


class WithMeta(metaclass=Meta):
    def shadowed(self):
        return "own"
'''


def test_a_metaclass_written_in_the_image_is_the_class_side_of_its_classes(tmp_path, views):
    # In GemStone a class's class side is its metaclass: meta_method was listed nowhere for
    # WithMeta, and get_method_source with meta true said WithMeta defined no meta_method.
    image = write_image(tmp_path / "image", {"metas.py": METACLASS, "broken.py": "class Later(metaclass=M):\n    pass\n"})
    client = Client(views(image))
    described = client.ok("describe_class", className="WithMeta")
    assert described["structuredContent"]["metaclass"] == "metas.Meta"
    assert "metaclass: metas.Meta" in text(described)
    assert client.ok("describe_class", className="Meta")["structuredContent"]["metaclass"] is None
    assert client.ok("describe_class", className="Later")["structuredContent"]["metaclass"] == "M"
    listed = client.ok("list_methods", className="WithMeta")
    assert listed["structuredContent"]["methods"]["class"] == [
        {"name": "alias", "definedIn": "metas.Meta", "metaclass": True},
        {"name": "label", "definedIn": "metas.Meta", "metaclass": True, "property": True},
        {"name": "meta_method", "definedIn": "metas.Meta", "metaclass": True}]
    assert "  meta_method  (from metaclass metas.Meta)" in text(listed)
    assert "  label  (property from metaclass metas.Meta)" in text(listed)
    for meta in (True, None):
        found = client.ok("get_method_source", className="WithMeta", selector="meta_method",
                          **({} if meta is None else {"meta": meta}))["structuredContent"]
        assert found["source"] == 'def meta_method(cls):\n    return "meta " + cls.__name__\n'
        assert found["kind"] == "class" and found["definedIn"] == "metas.Meta"
        assert found["note"] == ("defined in metas.Meta, the metaclass of metas.WithMeta: a method "
                                 "of metas.WithMeta's class side, called with the class")
    # meta false: not its class side, but said where it is (it answered only "defines no method").
    assert client.error("get_method_source", "notFound", className="WithMeta", selector="meta_method",
                        meta=False) == (
        "metas.WithMeta defines no method meta_method: meta_method is metas.Meta's method, reached "
        "as metas.WithMeta's class side (metas.Meta is its metaclass); compile_method or "
        "delete_method on metas.Meta changes it, for every class metas.Meta makes; "
        "get_method_source with meta true shows it")
    # Bound by assignment in the metaclass, there is no def to show: said which statement
    # binds it and what changes it (it sent to compile_method or delete_method on Meta,
    # which find no def of alias either).
    alias = ("metas.WithMeta defines no method alias: alias is metas.Meta's method, reached as "
             "metas.WithMeta's class side (metas.Meta is its metaclass), bound by metas.Meta's "
             "class-level statement 'alias = meta_method' at line 8 (get_class_definition on "
             "metas.Meta shows it); compile_class_definition on metas.Meta changes it, for every "
             "class metas.Meta makes")
    assert client.error("get_method_source", "notFound", className="WithMeta", selector="alias",
                        meta=True) == alias
    assert client.error("delete_method", "notFound", className="WithMeta", selector="alias") == alias
    # A metaclass's property is read on the class, not called: shown as one.
    label = client.ok("get_method_source", className="WithMeta", selector="label")["structuredContent"]
    assert label["source"] == "@property\ndef label(cls):\n    return cls.__name__.lower()\n"
    assert label["kind"] == "property" and label["note"] == (
        "defined in metas.Meta, the metaclass of metas.WithMeta: a property of metas.WithMeta's "
        "class side, read on the class (WithMeta.label)")
    assert client.error("delete_method", "notFound", className="WithMeta", selector="label").startswith(
        "metas.WithMeta defines no method label: label is metas.Meta's property, reached as")
    # The class's own def is what WithMeta.shadowed reaches: the metaclass's is not its class side.
    shadowed = client.ok("get_method_source", className="WithMeta", selector="shadowed")["structuredContent"]
    assert "own" in shadowed["source"] and "definedIn" not in shadowed


def test_a_long_selector_the_class_has_otherwise_is_echoed_cut(client, image):
    # Named by the class too (a class-level statement, a `global`, an attribute set on it),
    # it was echoed whole in the hint, once or twice, past the cut in "defines no method".
    long_name = "Y" * 5000
    shown = "Y" * 200 + "... (5000 characters)"
    (image / "zoo" / "longnames.py").write_text(
        f"class Bound:\n    {long_name} = 1\n\n\nclass Declared:\n    global {long_name}\n\n"
        f"    def {long_name}(self):\n        pass\n\n\nclass Set:\n    pass\n\n\n"
        f"setattr(Set, {long_name!r}, 1)\n")
    client.ok("refresh")
    for name, hint in [("Bound", f"(it binds {shown} by a class-level statement, '{'Y' * 200}... "
                                 "(5004 characters)' at line 2;"),
                       ("Declared", f"(its class body declares {shown} global, line 6:"),
                       ("Set", f"({shown} is an attribute of zoo.longnames.Set, not a method)")]:
        for tool in ("get_method_source", "delete_method"):
            said = client.error(tool, "notFound", className=f"zoo.longnames.{name}", selector=long_name)
            assert said.startswith(f"zoo.longnames.{name} defines no method {shown} {hint}") and len(said) < 1000, \
                (tool, said[:600])
