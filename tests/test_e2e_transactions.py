"""Transactions under concurrency, end to end: a team of sessions editing, committing,
refreshing and aborting at once through the real daemon, then the image checked as a
careful user would: the files on disk byte for byte against the journal and against
what the winning commits said, a session that never refreshed still on its old view,
and a new session seeing exactly the disk.

Which session wins a race is up to the scheduler; what is checked holds for any order.
"""

import hashlib
import json
import random
import re
import threading

import pytest

from helpers import open_session, tool_text
from test_tools_support import daemon_on_image

MODULES, METHODS = 3, 4


def module_text(n):
    body = "".join(f"\n    def m{j}(self):\n        return 'init'\n" for j in range(METHODS))
    return f'"""Module {n}."""\n\n\nclass K{n}:\n    """K{n}."""\n{body}'


FILES = {f"mod{n}.py": module_text(n) for n in range(MODULES)}


@pytest.fixture
def team(tmp_path):
    with daemon_on_image(tmp_path, FILES) as daemon:
        yield daemon


def view_source(client, module):
    """The module's text as this session's view has it (its loader's, as tracebacks show it)."""
    code = f"import importlib\nimportlib.import_module({module!r}).__loader__.get_source({module!r})"
    result = client.tool("execute_code", code=code)
    assert not result.get("isError"), result
    return eval(result["structuredContent"]["result"])   # the repr of a str


def edits(daemon, member, operations, wins, problems):
    """One member of the team: random edits of the methods, each committed by
    compile_method; a lost race is aborted (or first refreshed, which must not make it
    committable). `wins` gets this session's committed edits, in order."""
    rnd, client = random.Random(member), open_session(daemon)
    session_id = client.tool("status")["structuredContent"]["sessionId"]
    mine = []
    try:
        for step in range(operations):
            n, j, token = rnd.randrange(MODULES), rnd.randrange(METHODS), f"s{member}e{step}"
            choice = rnd.random()
            if choice < 0.15:
                client.tool("refresh")
                continue
            answer = client.tool("compile_method", className=f"mod{n}.K{n}",
                                 source=f"def m{j}(self):\n    return {token!r}\n")
            if not answer.get("isError"):
                mine.append((n, j, token))
                if f"return {token!r}" not in view_source(client, f"mod{n}"):
                    problems.append(f"{token}: the winner's own view lacks its edit")
                continue
            kind, message = answer["structuredContent"]["error"]["kind"], tool_text(answer)
            if kind != "conflict" or f"mod{n}.py was changed on disk" not in message:
                problems.append(f"{token}: {kind}: {message}")
            if choice < 0.5:
                kept = client.tool("refresh")["structuredContent"]["keptOurs"]
                if f"mod{n}" not in kept or not client.tool("commit").get("isError"):
                    problems.append(f"{token}: a refresh made a lost race committable: {kept}")
            discarded = client.tool("abort")["structuredContent"]["discarded"]
            if discarded != [f"mod{n}"]:
                problems.append(f"{token}: abort discarded {discarded}")
    finally:
        wins[session_id] = mine
        client.close()


def test_a_team_racing_on_the_same_methods_loses_no_commit_and_leaves_the_disk_as_the_journal_says(team):
    reader = open_session(team)   # never refreshes until the end
    before = {n: view_source(reader, f"mod{n}") for n in range(MODULES)}
    wins, problems = {}, []
    members = [threading.Thread(target=edits, args=(team, member, 25, wins, problems))
               for member in range(6)]
    for member in members:
        member.start()
    for member in members:
        member.join()
    assert problems == []

    # The journal: one record per winning edit, in each session's order, each file's
    # hashes a chain from the first text to the disk's.
    records = [json.loads(line) for line in
               (team.image / ".gsmcpd" / "journal.jsonl").read_text().splitlines()]
    assert len(records) == sum(len(mine) for mine in wins.values()) > 0
    hashes = {rel: hashlib.sha256(text.encode()).hexdigest() for rel, text in FILES.items()}
    latest = {(n, j): "init" for n in range(MODULES) for j in range(METHODS)}
    replayed = {session_id: iter(mine) for session_id, mine in wins.items()}
    for record in records:
        n, j, token = next(replayed[record["session"]])
        assert [entry["file"] for entry in record["files"]] == [f"mod{n}.py"]
        assert record["files"][0]["old"] == hashes[f"mod{n}.py"], record
        hashes[f"mod{n}.py"] = record["files"][0]["new"]
        latest[(n, j)] = token

    # The disk: each file as the last commit wrote it, each method the last winner's.
    fresh = open_session(team)
    for n in range(MODULES):
        disk = (team.image / f"mod{n}.py").read_bytes()
        assert hashlib.sha256(disk).hexdigest() == hashes[f"mod{n}.py"]
        found = dict(re.findall(r"def (m\d)\(self\):\n        return '([^']*)'", disk.decode()))
        assert found == {f"m{j}": latest[(n, j)] for j in range(METHODS)}
        assert view_source(fresh, f"mod{n}").encode() == disk
        assert view_source(reader, f"mod{n}") == before[n] == FILES[f"mod{n}.py"]
    assert sorted(path.name for path in team.image.rglob("*") if path.is_file()) == sorted(
        ["lock", "journal.jsonl", "journal.count"] + list(FILES))   # no temp file left

    reader.tool("refresh")
    assert all(view_source(reader, f"mod{n}").encode() == (team.image / f"mod{n}.py").read_bytes()
               for n in range(MODULES))


def test_a_mutation_undoing_the_sessions_conflicted_change_says_it_committed_nothing(team):
    # a adds m9 over a stale mod0 (b added its own m9 meanwhile): the conflict keeps it
    # uncommitted; a's delete of m9 leaves mod0 as a read it, so nothing is committed and
    # b's mod0, m9 and all, is brought in: the answer must not say a deletion was committed.
    a, b = open_session(team), open_session(team)
    assert not b.tool("compile_method", className="mod0.K0",
                      source="def m9(self):\n    return 'b'\n").get("isError")
    kept = a.tool("compile_method", className="mod0.K0", source="def m9(self):\n    return 'a'\n")
    assert kept["structuredContent"]["error"]["kind"] == "conflict"
    done = a.tool("delete_method", className="mod0.K0", selector="m9")
    assert not done.get("isError") and done["structuredContent"]["committed"] == []
    assert tool_text(done) == ("deleted mod0.K0.m9; nothing to commit, the change leaving this session's "
                               "modules as it had read them (now view version 1)\n"
                               "brought in others' commits to mod0")
    assert "return 'b'" in (team.image / "mod0.py").read_text()
    assert a.tool("get_method_source", className="mod0.K0", selector="m9")["structuredContent"]["source"] \
        == "def m9(self):\n    return 'b'\n"
