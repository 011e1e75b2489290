"""A big image through the real daemon: a big module's edits share one parse per text
(gsmcpd.image.parsing), and every call still sees the module's current text, after
this session's edits, another session's commit brought in by refresh, and an abort;
list_all_classes and every other listing that grows with the image answer a page at a
time; a refresh re-imports what imports a changed module, as its imports stand in the
text of the moment (kept per text); a session's first listing parses every module with the
cyclic collector paused."""

from gsmcpd.worker.paging import PAGE
from helpers import open_session, tool_text
from test_e2e_tools import error, ok, structured
from test_image_parsing import big_module
from test_tools_support import daemon_on_image


def test_edits_of_a_big_module_follow_its_text_across_sessions(tmp_path):
    files = {"huge/__init__.py": "", "huge/big.py": big_module()}
    with daemon_on_image(tmp_path, files) as daemon:
        ours, theirs = open_session(daemon), open_session(daemon)

        def method(client, selector):
            return structured(client, "get_method_source", className="huge.big.Big",
                              selector=selector)["source"]

        def run(client, code):
            return structured(client, "execute_code", code=code)

        for n in range(2):
            ok(ours, "compile_method", className="huge.big.Big",
               source=f"def op1(self, x):\n    return 'ours{n}'\n")
            assert f"'ours{n}'" in method(ours, "op1")
        ok(theirs, "refresh")
        ok(theirs, "compile_method", className="huge.big.Big", source="def op2(self, x):\n    return 'theirs'\n")
        assert "x + 2\n" in method(ours, "op2")            # not seen before a refresh
        ok(ours, "refresh")
        assert "'theirs'" in method(ours, "op2") and "'ours1'" in method(ours, "op1")
        ok(ours, "compile_method", className="huge.big.Big", source="def op3(self, x):\n    return 'again'\n")
        text = (daemon.image / "huge" / "big.py").read_text()
        assert all(word in text for word in ("'ours1'", "'theirs'", "'again'"))
        assert "'ours0'" not in text
        ok(ours, "compile_method", className="huge.big.Big", source="def op4(self, x):\n    return 'gone'\n")
        ok(theirs, "abort")                                # brings in our commits
        assert "'gone'" in method(theirs, "op4")
        assert "again" in str(run(theirs, "import huge.big\nhuge.big.Big().op3(0)"))
        ours.close()
        theirs.close()


def test_the_classes_of_a_big_image_are_listed_a_page_at_a_time(tmp_path):
    many = PAGE + 10
    files = {"many.py": "".join(f"class K{i:04d}:\n    pass\n\n\n" for i in range(many))}
    with daemon_on_image(tmp_path, files) as daemon:
        client = open_session(daemon)
        first = ok(client, "list_all_classes")
        total = first["structuredContent"]["total"]
        assert len(first["structuredContent"]["classes"]) == PAGE and total > many
        assert tool_text(first).endswith(f"(showing 1-{PAGE} of {total} classes; {total - PAGE} more: "
                                         f"call again with offset {PAGE}, or list_classes for one dictionary)")
        rest = structured(client, "list_all_classes", offset=first["structuredContent"]["nextOffset"])
        classes = first["structuredContent"]["classes"] + rest["classes"]
        assert len(classes) == total and classes[:many] == [f"many.K{i:04d}" for i in range(many)]
        assert error(client, "list_all_classes", "invalidParams", offset=-5) == (
            "list_all_classes: argument 'offset' must be 0 or more, got -5")
        client.close()


def test_a_page_past_the_end_of_a_listing_of_one_names_it_in_the_singular(tmp_path):
    # It said "of 1 test classes".
    test = "import unittest\n\n\nclass OnlyTest(unittest.TestCase):\n    def test_a(self):\n        pass\n"
    with daemon_on_image(tmp_path, {"test_one.py": test}) as daemon:
        client = open_session(daemon)
        assert tool_text(ok(client, "list_test_classes", offset=5)) == (
            "(showing none from offset 5 of 1 test class)")
        client.close()


def test_a_page_past_the_end_of_an_empty_listing_says_so_as_any_other(tmp_path):
    # It said "fx defines no classes", with no offset echoed and no note.
    with daemon_on_image(tmp_path, {"fx.py": "x = 1\n"}) as daemon:
        client = open_session(daemon)
        past = ok(client, "list_classes", dictionaryName="fx", offset=2)
        assert tool_text(past) == "(showing none from offset 2 of 0 classes)"
        assert past["structuredContent"] == {"dictionary": "fx", "classes": [], "total": 0, "offset": 2}
        assert tool_text(ok(client, "list_classes", dictionaryName="fx")) == "fx defines no classes"
        client.close()


def test_a_refresh_reimports_the_importers_the_modules_texts_name_now(tmp_path):
    files = {"pkg/__init__.py": "", "pkg/base.py": "WHO = 'base1'\n",
             "pkg/user.py": "from pkg.base import WHO\n", "pkg/loner.py": "WHO = 'loner'\n"}
    with daemon_on_image(tmp_path, files) as daemon:
        ours, theirs = open_session(daemon), open_session(daemon)
        code = "import pkg.user, pkg.loner\n(pkg.user.WHO, pkg.loner.WHO)"
        assert structured(ours, "execute_code", code=code)["result"] == "('base1', 'loner')"

        def commit_theirs(module, text):
            ok(theirs, "refresh")
            ok(theirs, "execute_code", code=f"open({str(daemon.image / module)!r}, 'w').write({text!r})")
            ok(theirs, "refresh")   # an edit outside gsmcpd is to the image what a commit is

        commit_theirs("pkg/base.py", "WHO = 'base2'\n")
        assert structured(ours, "refresh")["reloaded"] == ["pkg.base", "pkg.user"]
        commit_theirs("pkg/loner.py", "from pkg.base import WHO\n")
        assert structured(ours, "refresh")["reloaded"] == ["pkg.loner"]
        commit_theirs("pkg/base.py", "WHO = 'base3'\n")
        assert structured(ours, "refresh")["reloaded"] == ["pkg.base", "pkg.loner", "pkg.user"]
        assert structured(ours, "execute_code", code=code)["result"] == "('base3', 'base3')"
        ours.close()
        theirs.close()


def test_every_listing_of_a_big_image_is_answered_a_page_at_a_time(tmp_path):
    many = PAGE + 10
    files = {f"p{i:04d}.py": "" for i in range(PAGE)}
    files["many.py"] = "".join(f"class K{i:04d}:\n    pass\n\n\n" for i in range(many))
    files["test_many.py"] = "import unittest\n\n\n" + "".join(
        f"class T{i:04d}Test(unittest.TestCase):\n    def test_a(self):\n        pass\n\n\n" for i in range(many))
    with daemon_on_image(tmp_path, files) as daemon:
        client = open_session(daemon)
        for tool, key, what, arguments in [
                ("list_dictionaries", "dictionaries", "dictionaries", {}),
                ("list_classes", "classes", "classes", {"dictionaryName": "many"}),
                ("list_dictionary_entries", "entries", "entries", {"dictionaryName": "many"}),
                ("list_test_classes", "testClasses", "test classes", {}),
                ("get_class_hierarchy", "subclasses", "subclasses", {"className": "object"})]:
            first = ok(client, tool, **arguments)
            total = first["structuredContent"]["total"]
            assert len(first["structuredContent"][key]) == PAGE and first["structuredContent"]["nextOffset"] == PAGE
            assert tool_text(first).endswith(f"(showing 1-{PAGE} of {total} {what}; {total - PAGE} more: "
                                             f"call again with offset {PAGE})")
            rest = structured(client, tool, **arguments, offset=PAGE)
            assert rest["offset"] == PAGE and "nextOffset" not in rest
            assert len(first["structuredContent"][key] + rest[key]) == total
            assert error(client, tool, "invalidParams", **arguments, offset=-1) == (
                f"{tool}: argument 'offset' must be 0 or more, got -1")
            # 1e308 (an integer to JSON Schema) was echoed back as a 309-digit offset.
            assert error(client, tool, "invalidParams", **arguments, offset=1e308) == (
                f"{tool}: argument 'offset' must be 9007199254740991 or less, got 1e+308")
        assert structured(client, "list_classes", dictionaryName="many", offset=PAGE)["classes"] == [
            f"K{i:04d}" for i in range(PAGE, many)]
        assert structured(client, "list_test_classes", offset=PAGE)["testClasses"] == [
            f"test_many.T{i:04d}Test" for i in range(PAGE, many)]
        client.close()


def test_a_big_modules_edits_keep_the_line_numbers_of_the_classes_around_them_true(tmp_path):
    # The classes above and below the edited one keep the spans their statements gave
    # before the edit (moved), not walked again (renumber.spans_of): still true lines.
    before = "class Before:\n    def early(self):\n        raise ValueError('early')\n\n\n"
    after = "\n\nclass After:\n    def late(self):\n        raise ValueError('late')\n"
    files = {"huge/__init__.py": "", "huge/big.py": before + big_module() + after}
    with daemon_on_image(tmp_path, files) as daemon:
        client = open_session(daemon)
        check = ("import inspect, traceback, huge.big as m\n"
                 "def line(f):\n"
                 "    try:\n        f()\n"
                 "    except ValueError as e:\n        return traceback.extract_tb(e.__traceback__)[-1].line\n"
                 "[line(m.Before().early), line(m.After().late), inspect.getsource(m.After.late)]")
        for n in range(3):
            ok(client, "compile_method", className="huge.big.Big",
               source="def op1(self, x):\n" + "    x += 1\n" * n + f"    return 'edit{n}'\n")
            assert structured(client, "execute_code", code=check)["result"] == repr([
                "raise ValueError('early')", "raise ValueError('late')",
                "    def late(self):\n        raise ValueError('late')\n"])
        client.close()


WATCH_PARSES = '''\
import ast, gc
watch = ast.watch = {"parsed": 0, "collected": [], "parsing": []}
real = ast.parse

def marked(source, *args, **kwargs):
    watch["parsed"] += isinstance(source, str) and source.startswith("class Big")
    watch["parsing"].append(True)
    try:
        return real(source, *args, **kwargs)
    finally:
        watch["parsing"].pop()

def seen(phase, info):
    if phase == "start" and watch["parsing"]:
        watch["collected"].append(info["generation"])

ast.parse = marked
gc.callbacks.append(seen)
gc.isenabled()
'''


def test_a_sessions_first_listing_parses_the_image_with_the_collector_paused(tmp_path):
    files = {f"m{n}.py": big_module(methods=100 + n) for n in range(6)}
    with daemon_on_image(tmp_path, files) as daemon:
        client = open_session(daemon)
        assert structured(client, "execute_code", code=WATCH_PARSES)["result"] == "True"
        listed = structured(client, "list_all_classes")
        assert listed["imageCount"] == 6 and listed["classes"][:6] == [f"m{n}.Big" for n in range(6)]
        watched = structured(client, "execute_code", code="import ast, gc\n(ast.watch, gc.isenabled())")
        assert watched["result"] == "({'parsed': 6, 'collected': [], 'parsing': []}, True)"


def test_a_refresh_whose_re_import_fails_does_not_say_the_module_reloaded(tmp_path):
    files = {"pkg/__init__.py": "", "pkg/loner.py": "WHO = 'loner'\n"}
    with daemon_on_image(tmp_path, files) as daemon:
        ours, theirs = open_session(daemon), open_session(daemon)
        ok(ours, "execute_code", code="import pkg.loner")
        ok(theirs, "execute_code", code=f"open({str(daemon.image / 'pkg/loner.py')!r}, 'w').write('1 / 0\\n')")
        refreshed = ok(ours, "refresh")
        assert "ZeroDivisionError" in refreshed["structuredContent"]["importErrors"]["pkg.loner"]
        assert refreshed["structuredContent"]["reloaded"] == []
        assert "pkg.loner" in tool_text(refreshed) and "reloaded:" not in tool_text(refreshed)
        ours.close()
        theirs.close()
