"""What search derives from a module's source (its tree, calls, names, symbol table, lines)
is made once per text of the module, per view: never again for an unchanged module, and
never served for a text the module no longer has (after an edit, a refresh or an abort)."""

import ast
import symtable

import pytest

from gsmcpd.image import splice, walking
from test_tools_support import Client, image, views  # noqa: F401  (fixtures)

SEARCHES = [("find_senders", {"selector": "speak"}), ("find_senders", {"selector": "__hide"}),
            ("find_implementors", {"selector": "noise"}),
            ("find_references_to", {"name": "Dog"}), ("find_references_to", {"name": "zoo.animals.Dog"}),
            ("find_references_to", {"name": "builtins.len"}),
            ("search_method_source", {"pattern": "says"}), ("search_method_source", {"pattern": "return"})]

# Each changes what the searches answer: a sender of speak and of a private, an implementor
# of noise, references to Dog (also by its dotted name, and in a def's own import), to len.
CAT = '''

class Cat(Animal):
    def noise(self):
        return "meow" * (not isinstance(self, Dog))

    def __hide(self):
        return len(self.name)

    def purr(self):
        from zoo.animals import Dog
        return self.__hide() + Dog("x").speak().count("says")
'''


def answers(client):
    return [client.ok(tool, **arguments)["structuredContent"] for tool, arguments in SEARCHES]


def fresh(image, views, name, texts=None):
    """The answers of a view that never searched before, given the module texts `texts`
    (module -> text), left uncommitted."""
    client = Client(views(image, name, install=False))
    for module, text in (texts or {}).items():
        client.view.set_source(module, text, live=False)
    return answers(client)


@pytest.fixture
def derivations(monkeypatch):
    """Counts, by what, the parsing, walking, symbol tables and tokenizing done meanwhile."""
    counts = {}

    def counting(what, function):
        def counted(*args, **kwargs):
            counts[what] = counts.get(what, 0) + 1
            return function(*args, **kwargs)
        return counted
    for owner, name in [(ast, "parse"), (ast, "walk"), (walking, "walk"), (walking, "statements_in"),
                        (symtable, "symtable"), (splice, "string_lines")]:
        monkeypatch.setattr(owner, name, counting(name, getattr(owner, name)))
    return counts


def test_the_view_derives_once_per_text_and_again_after_an_edit_an_abort_or_a_refresh(image, views):
    a, b = views(image, "a", install=False), views(image, "b", install=False)
    made = []

    def size(text):
        made.append(text)
        return len(text)
    original = a.source("zoo.keeper")
    assert a.derived("zoo.keeper", "size", size) == a.derived("zoo.keeper", "size", size) == len(original)
    assert made == [original]

    a.set_source("zoo.keeper", "x = 1\n", live=False)
    assert a.derived("zoo.keeper", "size", size) == len("x = 1\n")
    a.abort()
    assert a.derived("zoo.keeper", "size", size) == len(original)

    b.set_source("zoo.keeper", original + "y = 2\n", live=False)
    b.commit()
    assert a.derived("zoo.keeper", "size", size) == len(original)          # not refreshed: its view
    a.refresh()
    assert a.derived("zoo.keeper", "size", size) == len(original + "y = 2\n")
    assert made == [original, "x = 1\n", original, original + "y = 2\n"]


def test_searching_again_derives_nothing_from_unchanged_modules(image, views, derivations):
    client = Client(views(image, "a", install=False))
    before = answers(client)
    derivations.clear()
    assert answers(client) == before
    assert derivations == {}, "searched again, unchanged modules were parsed, walked or tokenized anew"

    animals = client.view.source("zoo.animals") + CAT
    client.view.set_source("zoo.animals", animals, live=False)
    derivations.clear()
    after = answers(client)
    assert derivations["parse"] == 1 and derivations["symtable"] == 1   # that module alone
    assert after != before and after == fresh(image, views, "fresh", {"zoo.animals": animals})


def test_searches_answer_as_a_fresh_view_after_edits_commits_refresh_and_abort(image, views):
    a, b = Client(views(image, "a", install=False)), Client(views(image, "b", install=False))
    untouched = answers(a)
    answers(b)                                        # both have searched: what they derived is kept
    animals = a.view.source("zoo.animals") + CAT

    a.view.set_source("zoo.animals", animals, live=False)
    assert answers(a) == fresh(image, views, "edited", {"zoo.animals": animals}) != untouched
    a.ok("abort")
    assert answers(a) == untouched

    b.view.set_source("zoo.animals", animals, live=False)
    b.ok("commit")
    assert answers(b) == fresh(image, views, "committed") != untouched
    assert answers(a) == untouched                    # another session's commit: not seen yet
    a.ok("refresh")
    assert answers(a) == answers(b)

    keeper = a.view.source("zoo.keeper").replace("dog.speak()", "dog.noise()")
    a.view.set_source("zoo.keeper", keeper, live=False)
    assert answers(a) == fresh(image, views, "both", {"zoo.keeper": keeper})
    a.ok("abort")
    assert answers(a) == answers(b)


def test_what_was_derived_from_a_module_that_left_the_view_is_not_kept(image, views):
    # It was never served again, yet held for the view's whole life: a module another
    # session's commit removed (brought in by a refresh), or one removed or added here.
    def kept(client):
        return {module for module, _ in client.view._derived}

    def stale(client):   # what no module of the view has the text of: never to be served
        view = client.view
        return [key for key, (text, _) in view._derived.items()
                if not view.has_module(key[0]) or view.source(key[0]) is not text]

    a, b = Client(views(image, "a", install=False)), Client(views(image, "b", install=False))
    b.ok("add_dictionary", dictionaryName="zoo.pens")
    a.ok("refresh")
    answers(a)
    assert "zoo.pens" in kept(a) and kept(a) == set(a.view.module_names())
    size = len(a.view._derived)

    b.ok("remove_dictionary", dictionaryName="zoo.pens")
    a.ok("refresh")                                   # zoo.pens leaves a's view; the rest is as it was
    assert kept(a) == set(a.view.module_names()) and stale(a) == []
    assert len(a.view._derived) < size

    a.view.add_module("zoo.cage", "class Cage:\n    pass\n")   # uncommitted
    answers(a)
    assert "zoo.cage" in kept(a)
    a.view.remove_module("zoo.cage")
    assert kept(a) == set(a.view.module_names()) and stale(a) == []
    a.view.add_module("zoo.cage", "class Cage:\n    pass\n")
    answers(a)
    a.ok("abort")                                     # every text read anew
    assert stale(a) == [] and "zoo.cage" not in kept(a)
    assert answers(a) == answers(b)


def test_a_commit_an_abort_or_a_refresh_keeps_what_was_derived_from_the_modules_it_left_alone(
        image, views, derivations):
    # Each re-reads the whole image; an unchanged module keeps its text object, so its
    # tree is not made again (0.3-1 s for a large image, on every search after a commit).
    a, b = Client(views(image, "a", install=False)), Client(views(image, "b", install=False))
    answers(a)
    keeper = a.view.source("zoo.keeper").replace("dog.speak()", "dog.noise()")
    a.view.set_source("zoo.keeper", keeper, live=False)
    answers(a)                                        # the edited module derived: as committed
    a.ok("commit")
    derivations.clear()
    after_commit = answers(a)
    assert derivations == {}, "after a commit, unchanged modules were parsed, walked or tokenized anew"
    assert after_commit == fresh(image, views, "committed")

    a.view.set_source("zoo.animals", a.view.source("zoo.animals") + CAT, live=False)
    answers(a)
    a.ok("abort")
    derivations.clear()
    assert answers(a) == after_commit
    assert derivations["parse"] == 1, "after an abort, modules it left alone were parsed anew"

    b.ok("refresh")
    b.view.set_source("zoo.animals", b.view.source("zoo.animals") + CAT, live=False)
    b.ok("commit")
    a.ok("refresh")
    derivations.clear()
    answers(a)
    assert derivations["parse"] == 1, "after a refresh, modules it left alone were parsed anew"
    a.ok("commit")                                    # nothing of its own: the image read again
    derivations.clear()
    after_refresh = answers(a)
    assert derivations == {}, "after a commit following a refresh, unchanged modules were parsed anew"
    assert after_refresh == answers(b) == fresh(image, views, "refreshed")


def test_a_committed_text_that_reads_back_as_another_is_the_one_read(image, views):
    # Its bytes hash as the view's base, yet they decode to another text: the view must
    # hold what the disk says, not the text it wrote.
    view = views(image, "a", install=False)
    escaped = view.source("zoo.keeper") + 'z = "\udcc3\udca9"\n'   # the bytes of é, escaped
    view.set_source("zoo.keeper", escaped, live=False)
    view.commit()
    assert view.source("zoo.keeper").endswith('z = "é"\n')
    assert not view.has_changes


def test_references_read_the_import_statements_the_views_imports_read(image, views, derivations):
    # One walk of a module's statements serves both the imports a refresh or a commit reads
    # (View._imports) and the spellings of a name search looks for.
    client = Client(views(image, "a", install=False))
    for module in client.view.module_names():
        client.view._imports(module)
    derivations.clear()
    assert client.ok("find_references_to", name="zoo.animals.Dog")["structuredContent"]["total"] > 0
    assert "statements_in" not in derivations, "the import statements were walked again for search"
