"""A dictionary's module-level functions through the method tools: className the
dictionary (an image module), selector the function, as a GemStone dictionary holds
globals. get_method_source reads one, compile_method defines or replaces it, live and in
source, and delete_method removes it."""

import inspect

from gsmcpd.image import trial
from test_tools_support import Client, client, image, text, views  # noqa: F401  (fixtures)


def disk(image, rel="zoo/animals.py"):
    return (image / rel).read_text()


def write(image, rel, source, client):
    (image / rel).write_text(source)
    client.ok("refresh")


def test_get_method_source_of_a_module_level_function(client):
    # The searches answer `zoo.animals.make_dog`; no tool showed its source.
    answer = client.ok("get_method_source", className="zoo.animals", selector="make_dog")
    assert text(answer) == 'def make_dog():\n    return Dog("rex").speak()\n'
    assert answer["structuredContent"] == {"dictionary": "zoo.animals", "selector": "make_dog",
                                           "kind": "function", "source": text(answer)}


def test_a_function_the_dictionary_does_not_define_is_answered_with_the_name_meant(client):
    assert client.error("get_method_source", "notFound", className="zoo.animals",
                        selector="make_dgo") == "zoo.animals defines no function make_dgo (did you mean make_dog?)"
    assert client.error("get_method_source", "notFound", className="zoo.animals", selector="Dog") == (
        "zoo.animals.Dog is a class, not a function: to name one of its methods, pass className "
        "zoo.animals.Dog")
    assert client.error("get_method_source", "notFound", className="builtins", selector="len") == (
        "builtins.len is a kernel function: no Python source")


def test_a_builtins_name_that_is_no_kernel_function_is_told_what_it_is(client):
    # Every name was told it is "a kernel function", a mistyped one and a class too.
    assert client.error("get_method_source", "notFound", className="builtins", selector="lenn") == (
        "builtins has no lenn (did you mean len?)")
    assert client.error("get_method_source", "notFound", className="builtins", selector="object") == (
        "builtins.object is a kernel class, not a function: to name one of its methods, pass "
        "className builtins.object")
    assert client.error("get_method_source", "notFound", className="builtins", selector="Ellipsis") == (
        "builtins.Ellipsis is no function (ellipsis): no source to show")


def test_meta_is_refused_for_a_dictionary(client):
    said = ("meta selects a class's side, and zoo.animals is a dictionary (image module): its "
            "functions have no class side; omit meta")
    assert client.error("get_method_source", "invalidParams", className="zoo.animals",
                        selector="make_dog", meta=True) == said
    assert client.error("compile_method", "invalidParams", className="zoo.animals",
                        source="def make_dog():\n    return 1\n", meta=False) == said


def test_a_function_given_as_a_class_says_to_pass_its_dictionary(client):
    assert client.error("describe_class", "notFound", className="zoo.animals.make_dog") == (
        "zoo.animals defines no class make_dog; zoo.animals.make_dog is a function, not a class: "
        "get_method_source, compile_method and delete_method take a function as className its "
        "dictionary, selector its name (className zoo.animals, selector make_dog)")


def test_compile_method_replaces_a_function_in_place_for_those_that_imported_it(client, image):
    write(image, "zoo/user.py", "from zoo.animals import make_dog\n\n\ndef call():\n    return make_dog()\n",
          client)
    user = client.view.module("zoo.user")
    taken = user.make_dog
    result = client.ok("compile_method", className="zoo.animals",
                       source="def make_dog(name='rex'):\n    return Dog(name).speak() + '!'\n")
    assert result["structuredContent"]["replaced"] is True
    assert text(result).startswith("replaced function zoo.animals.make_dog; committed")
    assert user.call() == "rex says woof!" and taken("ivy") == "ivy says woof!"
    assert client.view.module("zoo.animals").make_dog is taken       # the same object, updated
    assert "def make_dog(name='rex'):\n    return Dog(name).speak() + '!'\n" in disk(image)
    assert "# A comment that must survive edits.\n" in disk(image)
    assert not client.view.has_changes
    assert inspect.getsource(taken) == "def make_dog(name='rex'):\n    return Dog(name).speak() + '!'\n"


def test_compile_method_adds_a_function_last_and_keeps_its_decorators(client, image):
    write(image, "zoo/tools.py", "import functools\n\n\ndef first():\n    return 1\n\n\nCOUNT = 2\n", client)
    client.ok("compile_method", className="zoo.tools",
              source="@functools.cache\ndef later():\n    return first() + COUNT\n")
    assert disk(image, "zoo/tools.py").endswith(
        "COUNT = 2\n\n\n@functools.cache\ndef later():\n    return first() + COUNT\n")
    later = client.view.module("zoo.tools").later
    assert later() == 3 and later.cache_info().hits == 0


def test_a_decorated_function_is_updated_through_its_wrapper(client, image):
    write(image, "zoo/wrapped.py", "import functools\n\n\ndef deco(f):\n    @functools.wraps(f)\n"
          "    def wrapper():\n        return '<' + f() + '>'\n    return wrapper\n\n\n"
          "@deco\ndef tag():\n    return 'old'\n", client)
    taken = client.view.module("zoo.wrapped").tag
    client.ok("compile_method", className="zoo.wrapped", source="@deco\ndef tag():\n    return 'new'\n")
    assert taken() == "<new>" and client.view.module("zoo.wrapped").tag is taken


SINGLEDISPATCH = ("import functools\n\n\n@functools.singledispatch\ndef show(x):\n    return 'obj'\n\n\n"
                  "@show.register\ndef _(x: int):\n    return 'int'\n")


def test_a_singledispatch_function_keeps_the_implementations_registered_below_it(client, image):
    # Its wrapper took the new def's registry, empty but for it: show(1) answered 'OBJ' here,
    # 'int' in every new session, whose import registers `_` again.
    write(image, "zoo/shows.py", SINGLEDISPATCH, client)
    taken = client.view.module("zoo.shows").show
    client.ok("compile_method", className="zoo.shows",
              source='@functools.singledispatch\ndef show(x):\n    """Shown."""\n    return "OBJ"\n')
    assert (taken("a"), taken(1)) == ("OBJ", "int")
    assert client.view.module("zoo.shows").show is taken and taken.__doc__ == "Shown."


def test_a_wrapper_made_with_other_decorator_arguments_takes_them(client, image):
    write(image, "zoo/tagged.py", "import functools\n\n\ndef tag(mark):\n    def deco(f):\n"
          "        @functools.wraps(f)\n        def wrapper():\n            return mark + f()\n"
          "        return wrapper\n    return deco\n\n\n@tag('<')\ndef name():\n    return 'rex'\n", client)
    taken = client.view.module("zoo.tagged").name
    client.ok("compile_method", className="zoo.tagged", source="@tag('>')\ndef name():\n    return 'rex'\n")
    assert taken() == ">rex"


def test_a_function_that_cannot_be_updated_in_place_is_rebound_and_its_importers_reimported(client, image):
    write(image, "zoo/cached.py", "import functools\n\n\n@functools.cache\ndef value():\n    return 1\n", client)
    write(image, "zoo/reader.py", "from zoo.cached import value\n", client)
    client.view.module("zoo.reader")
    result = client.ok("compile_method", className="zoo.cached",
                       source="@functools.cache\ndef value():\n    return 2\n")
    assert result["structuredContent"]["reimported"] == ["zoo.reader"]
    assert client.view.module("zoo.reader").value() == 2


def test_an_edit_that_moves_the_functions_below_keeps_their_line_numbers_true(client, image):
    write(image, "zoo/lines.py", "def top():\n    return 1\n\n\ndef below():\n    return 1 // 0\n", client)
    below = client.view.module("zoo.lines").below
    client.ok("compile_method", className="zoo.lines", source="def top():\n    a = 1\n    b = 2\n    return a + b\n")
    assert below.__code__.co_firstlineno == 7
    assert inspect.getsource(below) == "def below():\n    return 1 // 0\n"


def test_compile_method_refuses_what_a_def_could_not_replace(client, image):
    write(image, "zoo/bound.py", "import json\n\ntry:\n    import fast\nexcept ImportError:\n"
          "    def speed():\n        return 1\n\n\ndef cached():\n    return 1\n\n\ncached = staticmethod(cached)\n"
          "dumps = json.dumps\n", client)
    before = disk(image, "zoo/bound.py")
    assert client.error("compile_method", "refused", className="zoo.bound",
                        source="def cached():\n    return 2\n") == (
        "zoo.bound.cached is bound by a top-level statement that is no def (line 14: "
        "'cached = staticmethod(cached)'), so a def of it would not be what the module binds; "
        "name the function otherwise, or edit that statement in the module's file, then refresh")
    assert client.error("compile_method", "refused", className="zoo.bound",
                        source="def speed():\n    return 2\n").startswith(
        "zoo.bound.speed is written inside the module-level try statement at line 3: ")
    assert client.error("compile_method", "refused", className="zoo.animals",
                        source="def Dog():\n    return 2\n") == (
        "zoo.animals.Dog is a class, not a function: compile_class_definition and delete_class change it")
    assert client.error("compile_method", "refused", className="builtins",
                        source="def len(x):\n    return 2\n").startswith("builtins is the kernel dictionary")
    assert disk(image, "zoo/bound.py") == before


def test_a_bare_annotation_of_the_name_is_no_binding_a_def_would_override(client, image):
    # `handler: Callable` (no value) binds nothing: compile_method refused a new def as "bound
    # by a top-level statement that is no def (line 1: 'handler: object'), above its def", and
    # get_method_source said the module "binds handler by a top-level statement that is no def".
    write(image, "zoo/hooks.py", "handler: object\n", client)
    assert client.error("get_method_source", "notFound", className="zoo.hooks", selector="handler") == (
        "zoo.hooks defines no function handler; list_dictionary_entries shows its functions")
    client.ok("compile_method", className="zoo.hooks", source="def handler():\n    return 2\n")
    assert disk(image, "zoo/hooks.py") == "handler: object\n\n\ndef handler():\n    return 2\n"
    assert client.view.module("zoo.hooks").handler() == 2


def test_a_def_reading_a_name_bound_only_below_it_is_refused(client, image):
    write(image, "zoo/order.py", "def early():\n    return 1\n\n\nLIMIT = 3\n", client)
    assert client.error("compile_method", "refused", className="zoo.order",
                        source="def early(limit=LIMIT):\n    return limit\n").startswith(
        "zoo.order.early would read LIMIT as its def runs (line 1: 'def early(limit=LIMIT):'), "
        "and nothing above the def in zoo.order binds it")
    assert client.error("compile_method", "refused", className="zoo.order",
                        source="def early(limit=LIMIT):\n    return limit\n").endswith(
        "puts a new function last in its module, above an `if __name__ == \"__main__\":` block ending it.")
    # Added, it goes last, below LIMIT: fine.
    client.ok("compile_method", className="zoo.order", source="def late(limit=LIMIT):\n    return limit\n")
    assert client.view.module("zoo.order").late() == 3


def test_delete_method_removes_a_function_and_its_importers_fail_here_as_in_a_new_session(client, image):
    write(image, "zoo/user.py", "from zoo.animals import make_dog\n", client)
    client.view.module("zoo.user")
    result = client.ok("delete_method", className="zoo.animals", selector="make_dog")
    # Every importer of zoo.animals is re-imported (the image loaded first, as delete_class does).
    assert text(result).startswith("deleted function zoo.animals.make_dog; re-imported zoo.keeper, "
                                   "zoo.test_zoo, zoo.user; zoo.user now fails to import: ImportError")
    assert "make_dog" not in disk(image) and disk(image).endswith('        return "woof"\n')
    assert not hasattr(client.view.module("zoo.animals"), "make_dog")


def test_delete_method_refuses_a_function_the_module_calls_as_it_runs(client, image):
    write(image, "zoo/setup.py", "def configure():\n    return 1\n\n\nCONFIG = configure()\n", client)
    assert client.error("delete_method", "refused", className="zoo.setup", selector="configure") == (
        "zoo.setup.configure is used by zoo.setup's own top-level code as it runs (line 5: "
        "'CONFIG = configure()'); deleted, zoo.setup would no longer import (NameError), here or in "
        "a new session, nor would the modules importing it. Change that statement first (a class "
        "statement with compile_class_definition, a function's def with compile_method on zoo.setup, "
        "any other in the module's file, then refresh), then delete it.")
    assert client.error("delete_method", "notFound", className="zoo.setup", selector="configur") == (
        "zoo.setup defines no function configur (did you mean configure?)")


def test_delete_method_quotes_every_statement_surely_calling_the_function(client, image):
    write(image, "zoo/setup.py", "def configure():\n    return 1\n\n\nA = configure()\n"
          "with open(__file__) as f:\n    B = configure()\n", client)
    result = client.call("delete_method", className="zoo.setup", selector="configure")
    assert result["structuredContent"]["error"]["usedBy"] == [
        {"line": 5, "statement": "A = configure()"}, {"line": 7, "statement": "B = configure()"}]


def test_delete_method_deletes_a_function_its_module_calls_only_where_a_branch_runs(client, image):
    # Refused as a sure call was: the branch that runs nothing, or a NameError caught, imports.
    write(image, "zoo/setup.py", "def configure():\n    return 1\n\n\nif False:\n    CONFIG = configure()\n"
          "try:\n    OTHER = configure()\nexcept NameError:\n    OTHER = None\n", client)
    result = client.ok("delete_method", className="zoo.setup", selector="configure")
    assert text(result).startswith("deleted function zoo.setup.configure; re-imported zoo.setup; committed")
    assert "def configure" not in disk(image, "zoo/setup.py")
    assert client.view.module("zoo.setup").OTHER is None


CONFIGURED = "import sys\n\n\ndef configure():\n    return 1\n\n\nif sys.platform:\n    CONFIG = configure()\n"


def test_a_function_called_in_a_branch_that_runs_is_refused_as_its_module_would_fail(client, image):
    write(image, "zoo/setup.py", CONFIGURED, client)
    said = client.error("delete_method", "refused", className="zoo.setup", selector="configure")
    assert ("it failed with NameError: name 'configure' is not defined, on line 9 ('CONFIG = configure()')"
            in said)
    assert disk(image, "zoo/setup.py") == CONFIGURED


def test_a_function_deleted_untried_is_named_failing_once(client, image, monkeypatch):
    # The trial apart not finishing, the deletion goes ahead; the module fails here too.
    monkeypatch.setattr(trial, "TIMEOUT", 1e-6)
    write(image, "zoo/setup.py", CONFIGURED, client)
    result = client.ok("delete_method", className="zoo.setup", selector="configure")
    assert result["structuredContent"]["importErrors"] == {
        "zoo.setup": "NameError: name 'configure' is not defined"}
    assert "def configure" not in disk(image, "zoo/setup.py")
    # Said once, in the change's line: not again in a line "import error in zoo.setup: ..." after it.
    assert text(result) == ("deleted function zoo.setup.configure; re-imported zoo.setup; zoo.setup now fails "
                            "to import: NameError: name 'configure' is not defined; note: the trial import of "
                            "zoo.setup apart timed out after 1e-06 s, so whether a new session still imports "
                            f"it was not checked; committed (view version {client.view.version})")


def test_a_dotted_name_that_is_both_a_dictionary_and_a_class_is_ambiguous(client, image):
    (image / "zoo" / "__init__.py").write_text("class keeper:\n    pass\n")
    client.ok("refresh")
    assert client.error("get_method_source", "ambiguous", className="zoo.keeper", selector="x") == (
        "zoo.keeper names both the dictionary (image module) zoo.keeper and the class keeper of zoo; "
        "no name tells them apart: rename one")


def test_a_bare_name_of_a_dictionary_and_a_class_says_the_qualified_name_of_the_class(client, image):
    # Said "no name tells them apart", which is not so: zoo.animals.Dog names the class.
    write(image, "Dog.py", "def bark():\n    return 1\n", client)
    assert client.error("get_method_source", "ambiguous", className="Dog", selector="bark") == (
        "Dog names both the dictionary (image module) Dog and the class Dog of zoo.animals; pass "
        "zoo.animals.Dog for the class; no other name tells the dictionary apart: rename one to reach its functions")
    assert "woof" in text(client.ok("get_method_source", className="zoo.animals.Dog", selector="noise"))


def test_a_dictionary_named_as_a_kernel_class_says_how_to_name_the_class(client, image):
    # `dict` answered "dict defines no function keys", the kernel class it hides unmentioned.
    write(image, "dict.py", "def hello():\n    return 1\n", client)
    hint = ("; dict names both the dictionary (image module) dict and the kernel class dict, and the "
            "dictionary comes first: pass builtins.dict for the class")
    assert client.error("get_method_source", "notFound", className="dict", selector="keys") == (
        "dict defines no function keys; list_dictionary_entries shows its functions" + hint)
    assert client.error("delete_method", "notFound", className="dict", selector="keys") == (
        "dict defines no function keys; list_dictionary_entries shows its functions" + hint)
    assert "return 1" in text(client.ok("get_method_source", className="dict", selector="hello"))
    assert client.error("get_method_source", "notFound", className="builtins.dict", selector="keys") == (
        "dict.keys is a kernel method: no Python source")


def test_a_function_of_a_module_that_does_not_import_is_edited_in_source(client, image):
    write(image, "zoo/broken.py", "def helper():\n    return 1\n\n\nraise ImportError('not yet')\n", client)
    result = client.ok("compile_method", className="zoo.broken", source="def helper():\n    return 2\n")
    assert result["structuredContent"]["committed"] == ["zoo.broken"]
    assert disk(image, "zoo/broken.py").startswith("def helper():\n    return 2\n\n\nraise")


def test_a_function_written_in_a_block_is_shown_with_a_note_and_overloads_together(client, image):
    write(image, "zoo/typed.py", "import typing\n\n\n@typing.overload\ndef half(x: int) -> int: ...\n"
          "@typing.overload\ndef half(x: float) -> float: ...\n\n\nCOUNT = 1\n\n"
          "if COUNT:\n    def guarded():\n        return 1\n", client)
    answer = client.ok("get_method_source", className="zoo.typed", selector="guarded")
    assert text(answer) == ("def guarded():\n    return 1\n\n(written inside the module-level if "
                            "statement at line 12: the module has it when that branch runs)")
    # The implementation goes right after its signatures, which it keeps.
    client.ok("compile_method", className="zoo.typed", source="def half(x):\n    return x / 2\n")
    assert "def half(x: float) -> float: ...\n\n\ndef half(x):\n    return x / 2\n\n\nCOUNT" in disk(
        image, "zoo/typed.py")
    assert client.view.module("zoo.typed").half(3) == 1.5
    assert text(client.ok("get_method_source", className="zoo.typed", selector="half")).count("def half") == 3


REGISTERING = '''\
REGISTRY = []


def register(path):
    def add(f):
        REGISTRY.append((path, f))
        return f
    return add


@register("/x")
def index():
    return "old"


def plain():
    return 1
'''


def test_replacing_a_decorated_function_names_the_decorators_that_ran_again(client, image):
    # @register("/x") ran again on the new def and registered it beside the live one,
    # and the answer did not say so.
    write(image, "zoo/routes.py", REGISTERING, client)
    routes = client.view.module("zoo.routes")
    result = client.ok("compile_method", className="zoo.routes",
                       source='@register("/x")\ndef index():\n    return "new"\n')
    assert result["structuredContent"]["rerun"] == ["register"]
    assert "rebound" not in result["structuredContent"]
    assert text(result).startswith(
        "replaced function zoo.routes.index; note: zoo.routes.index's def ran again, and with it "
        "its decorator register: what else it does (a registry entry) was done again, for the new "
        "function it made, which zoo.routes.index was updated from in place; the live "
        "zoo.routes.index keeps what it did for it, so a registry may hold both, each running the "
        "new code: check for a double registration; committed")
    assert [(path, f()) for path, f in routes.REGISTRY] == [("/x", "new"), ("/x", "new")]
    # A plain def, and a decorated one added, run nothing again.
    for source in ("def plain():\n    return 2\n", '@register("/y")\ndef other():\n    return 3\n'):
        answer = client.ok("compile_method", className="zoo.routes", source=source)
        assert "rerun" not in answer["structuredContent"] and "note" not in text(answer)


def test_a_rebound_function_says_what_still_holds_the_old_one(client, image):
    # Rebound, a registry or callback list kept the old function, running the old code,
    # and the answer named only the re-imported modules.
    write(image, "zoo/cached.py", "import functools\n\n\n@functools.cache\ndef value():\n    return 1\n\n\n"
          "CALLBACKS = [value]\n", client)
    cached = client.view.module("zoo.cached")
    result = client.ok("compile_method", className="zoo.cached",
                       source="@functools.cache\ndef value():\n    return 2\n")
    assert result["structuredContent"]["rebound"] is True
    assert result["structuredContent"]["rerun"] == ["functools.cache"]
    assert ("; note: zoo.cached.value could not be updated in place (it is no plain function, such "
            "as functools.cache's wrapper, or its closure changed), so zoo.cached binds a new one: "
            "what holds the old one, other than the modules importing zoo.cached (re-imported), "
            "keeps it and runs the old code (a registry, a callback list, a functools.partial); "
            "note: zoo.cached.value's def ran again, and with it its decorator functools.cache: "
            "what else it does (a registry entry) was done again, for the new zoo.cached.value; "
            "the old zoo.cached.value keeps what it did for it, so a registry may hold both: check "
            "for a double registration; committed") in text(result)
    assert (cached.value(), cached.CALLBACKS[0]()) == (2, 1)


def test_a_dictionary_given_to_a_class_tool_points_to_list_dictionary_entries(client):
    # It pointed to list_classes, which does not list the functions a caller of list_methods wants.
    said = ("zoo defines no class animals; zoo.animals is a dictionary (image module), not a class: "
            "list_dictionary_entries shows its functions and classes")
    assert client.error("list_methods", "notFound", className="zoo.animals") == said
    assert client.error("describe_class", "notFound", className="zoo.animals") == said
    entries = text(client.ok("list_dictionary_entries", dictionaryName="zoo.animals"))
    assert "make_dog" in entries


def test_a_def_an_optional_accelerator_would_replace_is_edited_when_the_live_module_binds_the_def(client, image):
    # Refused as 'bound by a top-level statement that is no def', though with no
    # _gs_no_speedups (nor _gs_no_accel's attribute, tkinter's _cnfmerge) the def is bound.
    write(image, "zoo/speed.py", "import zoo.animals as _accel\n\n\ndef encode(x):\n    return x\n\n\n"
          "def merge(x):\n    return x\n\n\ntry:\n    from _gs_no_speedups import encode\nexcept ImportError:\n"
          "    pass\ntry: merge = _accel.no_such_merge\nexcept AttributeError: pass\n", client)
    encode = client.view.module("zoo.speed").encode
    client.ok("compile_method", className="zoo.speed", source="def encode(x):\n    return x * 2\n")
    client.ok("compile_method", className="zoo.speed", source="def merge(x):\n    return x * 3\n")
    assert (encode(2), client.view.module("zoo.speed").merge(2)) == (4, 6)
    assert "def encode(x):\n    return x * 2\n" in disk(image, "zoo/speed.py")
    client.ok("delete_method", className="zoo.speed", selector="merge")
    assert "def merge" not in disk(image, "zoo/speed.py")
    # A statement that ran and handed the def's function back leaves it what the module binds.
    write(image, "zoo/marked.py", "def mark(f):\n    f.marked = True\n    return f\n\n\n"
          "def job():\n    return 1\n\n\njob = mark(job)\n", client)
    job = client.view.module("zoo.marked").job
    client.ok("compile_method", className="zoo.marked", source="def job():\n    return 2\n")
    assert (job(), job.marked) == (2, True)


def test_a_def_the_live_module_does_not_bind_is_still_refused(client, image):
    write(image, "zoo/other.py", "def dumps(x):\n    return x\n\n\nfrom json import dumps\n\n\n"
          "def inner():\n    def inner():\n        return 1\n    return inner\n\n\ninner = inner()\n\n\n"
          "def first():\n    return 1\n\n\ndef second():\n    return 2\n\n\nfirst = second\n", client)
    before = disk(image, "zoo/other.py")
    for name, line, statement in (("dumps", 5, "from json import dumps"), ("inner", 14, "inner = inner()"),
                                  ("first", 25, "first = second")):
        for tool, given in (("compile_method", {"source": f"def {name}():\n    return 3\n"}),
                            ("delete_method", {"selector": name})):
            assert client.error(tool, "refused", className="zoo.other", **given).startswith(
                f"zoo.other.{name} is bound by a top-level statement that is no def (line {line}: {statement!r})")
    # A module that does not import cannot tell which ran: refused too.
    write(image, "zoo/broken.py", "def encode(x):\n    return x\n\n\ntry:\n    from _gs_no_speedups import encode\n"
          "except ImportError:\n    pass\n\n\n1 / 0\n", client)
    assert client.error("compile_method", "refused", className="zoo.broken",
                        source="def encode(x):\n    return 2\n").startswith(
        "zoo.broken.encode is bound by a top-level statement that is no def (line 5: 'try:')")
    assert disk(image, "zoo/other.py") == before


def test_moving_a_function_into_a_module_importing_it_is_refused_saying_the_import_is_above(client, image):
    # Said "so a def of it would not be what the module binds", while the new def, going last,
    # would be: only the import it leaves unused, which no tool edits, is why.
    write(image, "zoo/mover.py", "from zoo.animals import make_dog\n\n\ndef walk():\n    return make_dog()\n",
          client)
    before = disk(image, "zoo/mover.py")
    assert client.error("compile_method", "refused", className="zoo.mover",
                        source="def make_dog():\n    return 1\n") == (
        "zoo.mover.make_dog is bound by a top-level statement that is no def (line 1: "
        "'from zoo.animals import make_dog'), above its def: the def would override that binding, "
        "and no tool edits that statement; name the function otherwise, or edit that statement in "
        "the module's file, then refresh")
    assert disk(image, "zoo/mover.py") == before
