"""An answer telling many modules' import errors holds them within a budget, all told
(toolset.budgeted): 80 modules failing with a 1 MB message each made an 80 MB answer,
past the frame's cap, so a commit that happened was answered "the result cannot be sent".
One budget for the whole answer (session.ToldImportErrors): a mutation's note and its
commit's lines each had one."""

import json

import pytest

from gsmcpd.wire.frames import MAX_FRAME
from gsmcpd.worker.toolset import (ERRORS_BUDGET, PAST_BUDGET_CAP, REPEAT_CAP, ErrorsBudget, budgeted,
                                   repeats_of_budgeted)
from gsmcpd.worker.toolsets.session import ToldImportErrors, import_errors_data
from test_tools_support import Client, text, views, write_image  # noqa: F401  (fixtures)

MODULES = [f"m{i:02}" for i in range(80)]
MESSAGE = "x" * 900_000
IMPORTER = "import base\nif base.BROKEN:\n    raise ValueError('x' * 900_000)\n"


def files(broken: bool) -> dict[str, str]:
    return {"base.py": f"BROKEN = {broken}\n", **{f"{name}.py": IMPORTER for name in MODULES}}


def assert_bounded(result, lines_of_errors: list[str], data: list[str]):
    """The answer fits a frame with room to spare, each module's error told in it: those
    within the budget whole, the one crossing it and those past it cut saying how much."""
    size = len(json.dumps(result, ensure_ascii=False).encode())
    assert size < MAX_FRAME   # 72 MB it was: the answer could not be sent
    assert size < ERRORS_BUDGET + 100 * (PAST_BUDGET_CAP + 300) + len(data) * (REPEAT_CAP + 300)
    assert len(lines_of_errors) == len(MODULES)
    for line in lines_of_errors[:2]:   # 900 KB each: two within the budget
        assert "ValueError: " + MESSAGE in line and "more characters" not in line
    for line in lines_of_errors[2:]:
        assert f"more characters of {'the reason' if 'not loaded' in line else 'the import error'} cut" in line
    assert all(len(line) < PAST_BUDGET_CAP + 400 for line in lines_of_errors[3:])
    assert "[... 899,0" in lines_of_errors[-1]   # of the 900,0xx its error (or reason) had
    for said in data:
        assert len(said) < REPEAT_CAP + 400


def error_lines(answer: str, start: str) -> list[str]:
    """Each error's text (with its cut note's lines) from the line naming it on."""
    return [start + part for part in answer.split(start)[1:]]


def test_a_commit_breaking_80_modules_tells_their_errors_within_the_budget(tmp_path, views):
    client = Client(views(write_image(tmp_path / "image", files(broken=False))))
    client.ok("list_test_classes")   # loads them all: the commit re-imports them
    client.view.set_source("base", "BROKEN = True\n", live=False)
    result = client.ok("commit")
    assert text(result).startswith("Committed base (view version")
    said = result["structuredContent"]["importErrors"]
    assert sorted(said) == MODULES
    assert_bounded(result, error_lines(text(result), "import error in "), list(said.values()))


def test_a_refresh_bringing_in_a_break_of_80_modules_tells_them_within_the_budget(tmp_path, views):
    image = write_image(tmp_path / "image", files(broken=False))
    client = Client(views(image))
    client.ok("list_test_classes")
    other = views(image, session_id="b", install=False)
    other.set_source("base", "BROKEN = True\n", live=False)
    other.commit()
    result = client.ok("refresh")
    said = result["structuredContent"]["importErrors"]
    assert sorted(said) == MODULES
    assert_bounded(result, error_lines(text(result), "import error in "), list(said.values()))


def test_a_deletion_breaking_80_modules_tells_their_errors_within_the_budget(tmp_path, views):
    importer = "import base\nif not hasattr(base, 'Base'):\n    raise ValueError('x' * 900_000)\n"
    image = write_image(tmp_path / "image", {"base.py": "class Base:\n    pass\n",
                                             **{f"{name}.py": importer for name in MODULES}})
    client = Client(views(image))
    client.ok("list_test_classes")
    result = client.ok("delete_class", className="base.Base")
    said = result["structuredContent"]["importErrors"]
    assert sorted(said) == MODULES
    assert_bounded(result, error_lines(text(result), " now fails to import: "), list(said.values()))


def test_list_test_classes_tells_80_modules_not_loaded_within_the_budget(tmp_path, views):
    client = Client(views(write_image(tmp_path / "image", files(broken=True))))
    result = client.ok("list_test_classes")
    said = result["structuredContent"]["notLoaded"]
    assert len(said) == len(MODULES)
    assert_bounded(result, error_lines(text(result), "(not loaded, "), said)


def test_the_budget_keeps_each_whole_while_the_sum_fits():
    assert budgeted(["a" * 10, "b" * 10], "it") == ["a" * 10, "b" * 10]
    small, crossing, past = budgeted(["a" * (ERRORS_BUDGET - 5_000), "b" * 9_000, "c" * 2_000], "it")
    assert small == "a" * (ERRORS_BUDGET - 5_000)
    assert crossing.startswith("b" * 5_000 + "\n[... 4,000 more characters of it cut: ")
    assert past.startswith("c" * PAST_BUDGET_CAP + "\n[... 1,000 more characters of it cut: ")
    assert past.endswith(f"keeps the first {PAST_BUDGET_CAP:,}]\n")


def test_the_repeat_of_an_error_the_budget_cut_counts_what_the_error_has_past_it():
    # The repeat cut the text's cut again: its count was of the budget's cut text and note
    # (1,990,2xx more characters), not of the error (2,990,000), and the budget's note was lost.
    errors = {"a": "a" * 1_000_000, "b": "b" * 3_000_000, "c": "c" * 3_000_000}
    said = import_errors_data(errors)
    assert said["a"] == "a" * REPEAT_CAP + "\n[... 990,000 more characters of the import error cut: a repeat of the answer's text keeps the first 10,000]\n"
    assert said["b"] == "b" * REPEAT_CAP + "\n[... 2,990,000 more characters of the import error cut: a repeat of the answer's text keeps the first 10,000]\n"
    assert said["c"].startswith("c" * PAST_BUDGET_CAP + "\n[... 2,999,000 more characters of the import error cut: an answer holding")
    # A cut of the budget's to fewer than REPEAT_CAP is repeated as told, its note whole.
    crossing = ["a" * (ERRORS_BUDGET - 9_950), "b" * 20_000]
    told = budgeted(crossing, "it")
    assert len(told[1]) > REPEAT_CAP
    assert repeats_of_budgeted(crossing, "it")[1] == told[1]


def test_a_deletion_and_the_others_commit_it_brings_in_breaking_80_modules_each_share_one_budget(tmp_path, views):
    # The deletion's note and the lines of what the commit it made brought in each had a
    # budget of their own (4 MB of errors in one answer), and structuredContent, budgeted
    # once in module order, said cut to 1,000 what the text held whole.
    deleting = [f"n{i:02}" for i in range(80)]
    importer = "import gone\nif not hasattr(gone, 'Gone'):\n    raise ValueError('x' * 900_000)\n"
    image = write_image(tmp_path / "image", {**files(broken=False), "gone.py": "class Gone:\n    pass\n",
                                             **{f"{name}.py": importer for name in deleting}})
    client = Client(views(image))
    client.ok("list_test_classes")   # loads them all: the commit re-imports the m's
    other = views(image, session_id="b", install=False)
    other.set_source("base", "BROKEN = True\n", live=False)
    other.commit()
    result = client.ok("delete_class", className="gone.Gone")
    answer, said = text(result), result["structuredContent"]["importErrors"]
    assert "brought in others' commits to base" in answer
    assert sorted(said) == MODULES + deleting   # every failing module named
    assert len(answer) < ERRORS_BUDGET + len(said) * (PAST_BUDGET_CAP + 400)   # it was 4 MB
    whole = "ValueError: " + "x" * 900_000
    assert answer.count(whole) == 2   # the first two told (the note's) whole, then each cut
    assert f"n00 now fails to import: {whole}; n01 now fails to import: {whole};" in answer
    for module, error in said.items():
        told = [f"{module} now fails to import: ", f"import error in {module}: "]
        assert sum(answer.count(start) for start in told) == 1, module   # told once
        if "cut: an answer holding over" in error:   # cut to PAST_BUDGET_CAP, so in the text
            assert any(start + error in answer for start in told), module
        else:   # the start of what the text holds (whole, or the one crossing the budget)
            assert error.endswith("a repeat of the answer's text keeps the first 10,000]\n"), module
            assert any(start + error[:REPEAT_CAP] in answer for start in told), module


def test_the_parts_of_one_answer_share_its_budget_each_error_told_once():
    told = ToldImportErrors()
    note = told.told({"b": "b" * ERRORS_BUDGET, "a": "a" * 5})   # a mutation's note, then its commit's lines
    assert note["a"] == "a" * 5 and note["b"].startswith("b" * (ERRORS_BUDGET - 5) + "\n[... 5 more")
    past = ("c" * PAST_BUDGET_CAP + "\n[... 1,000 more characters of the import error cut: "
            f"{ErrorsBudget.KEEPER} keeps the first {PAST_BUDGET_CAP:,}]\n")
    assert told.lines({"a": "a" * 5, "c": "c" * 2_000}) == ["import error in c: " + past]   # a: told already
    assert told.told({"a": "a" * 6}) == {"a": "a" * 6}   # changed since: told as it is now
    said = told.data({"a": "a" * 6, "b": "b" * ERRORS_BUDGET, "c": "c" * 2_000})
    assert said["a"] == "a" * 6 and said["c"] == past   # as told, past the budget the note's
    assert said["b"].endswith("keeps the first 10,000]\n")   # the crossing one's start
