"""A class definition, as get_class_definition gives it and a client sends it back
(changed or not), written over the class's own lines.

Its changes, line by line against the definition the class has now, are made to the
class's lines, so the carried methods keep their places and the blank and comment lines
around them, and every line the client did not change stays byte for byte: a definition
sent back unchanged leaves the module as it was.
"""

from __future__ import annotations

import ast
import bisect
import difflib

from gsmcpd.image import parsing, splice


def written_over(class_text: str, class_name: str, source: str, methods: list) -> str | None:
    """The class text `class_text` (the class statement `class_name` of `source`, redefined)
    makes with the carried `methods` (defs or nested classes of that statement) in their
    places, as put_class takes it; None where that cannot be told or would not do (the
    class's body shares its header's line, the changes leave no class statement, or one
    puts a carried method below a statement that reads it as the class body runs):
    splice.with_methods places them then."""
    classdef = splice.class_statement(parsing.parse(source), class_name)
    lines = splice.lines_of(source)
    if classdef is None or splice.body_on_header_line(lines, classdef):
        return None
    shown = splice.definition_line_numbers(lines, classdef)
    first, last = splice.first_line(classdef), splice.last_line(lines, classdef)
    own = splice.lines_of(splice.strip_indent(lines[first - 1:last],
                                              splice.indent_of(lines[classdef.lineno - 1])))
    if not own[-1].endswith(("\n", "\r")):
        own[-1] += "\n"     # the module's last line, which lines may now follow (put_class ends it)
    kept = _kept_lines(lines, classdef, set(shown), {node.lineno for node in methods})
    definition = splice.lines_of(splice.class_definition(source, class_name, classdef))
    new = splice.lines_of(splice.fit_indentation(splice.dedent_code(class_text),
                                                 splice.class_indent_unit(source, class_name)))
    if methods and _only_pass(new) is not None and _only_pass(definition) is None:
        # `pass` alone, as get_class_definition shows a body of methods only, stands for
        # no statement: written, it stayed above the carried methods. Their blank and
        # comment lines stay theirs, so adding a statement and sending `pass` back is
        # no change.
        del new[_only_pass(new) - 1]
    elif (methods and _only_pass(definition) is not None and shown[_only_pass(definition) - 1] is None
          and _pass_beside_statements(new) is not None):
        # The `pass` shown for a body of methods only, kept with statements written beside
        # it, stands for no statement too: they replace it (written, it stayed above the
        # methods, and one reading a method moved them all).
        del new[_pass_beside_statements(new) - 1]
    matcher = difflib.SequenceMatcher(None, splice.comparable(definition), splice.comparable(new),
                                      autojunk=False)
    # What each line of the definition becomes: its own line, the lines replacing it, or
    # none; and the lines inserted right after it (-1: above the class).
    becomes: dict[int, list[str]] = {}
    after: dict[int, list[str]] = {}
    opcodes = matcher.get_opcodes()
    for tag, i1, i2, j1, j2 in opcodes:
        if tag == "equal":
            for offset in range(i2 - i1):
                becomes[i1 + offset] = [definition[i1 + offset]]
        elif tag == "insert":
            after.setdefault(i1 - 1, []).extend(new[j1:j2])
        else:
            becomes[i1] = new[j1:j2]
    _move_above_the_members_they_follow(after, becomes, definition, shown, kept)
    _keep_the_gap_of_the_statement_below(opcodes, becomes, definition, shown, kept, lines)
    text = after.get(-1, [])
    # The blank lines the definition drops above the first statement are the class's,
    # unless the text sent has its own there (export_class_source's does): then those.
    # Read from the text, not the diff: a changed header takes them into its replacement.
    # Not the blank line shown below a first statement the text leaves out, above the
    # first member's: that one stays where it was, and so do the member's.
    if _opens_with_blank_line(new) and not _first_statement_gone_below_a_member(
            opcodes, new, classdef, splice.header_last_line(lines, classdef) - first):
        blank = splice.header_last_line(lines, classdef) + 1
        while blank <= last and not lines[blank - 1].strip():
            kept.discard(blank)
            blank += 1
    kept -= _blanks_above_a_first_statement_gone(lines, classdef, shown, becomes, kept)
    for index in _blanks_above_a_later_statement_gone(lines, classdef, shown, becomes, kept):
        becomes[index] = []
    previous = first - 1
    header = splice.header_last_line(lines, classdef)
    pending = _pending_members(source, class_name, methods)
    for index, number in enumerate(shown):
        if number is not None:
            text += [own[n - first] for n in range(previous + 1, number) if n in kept]
            previous = number
            text += [own[number - first] if line == definition[index] else line
                     for line in becomes.get(index, [])]
            if number == header and index in after:
                # Lines added under the header go below the blank lines the definition
                # drops there, which stay right under it: not into the first statement's gap.
                previous = _below_header_blanks(lines, classdef, kept, previous)
                text += [own[n - first] for n in range(number + 1, previous + 1)]
            if index in after and number == header and not _taken_back(after[index], own, first, kept, previous):
                # The blank lines under the header are the first carried member's: a statement
                # taken out from above it left them (and its comment, taken back below them).
                # Lines added that end set apart from it leave them under the header.
                blanks = _kept_blanks_below(own, first, kept, previous)
                if _taken_back(after[index], own, first, kept, previous + len(blanks)) \
                        or not after[index][-1].strip():
                    text += blanks
                    previous += len(blanks)
            if index in after and not _taken_back(after[index], own, first, kept, previous):
                # The comment left was that of a carried member further down: taken back there.
                found = _taken_back_further_down(after[index], own, first, kept, previous,
                                                 _next_shown(shown[index + 1:], last))
                text += [own[n - first] for n in range(previous + 1, found + 1) if n in kept]
                previous = found
            if index in after and _taken_back(after[index], own, first, kept, previous):
                gap = _leading_gap(after[index])
                previous += len(gap)
                previous += len(_trailing_blanks_kept(after[index], own, first, kept, previous))
                after[index] = after[index] + _apart_from_the_member_below(after[index], gap, own, first,
                                                                           kept, previous)
            elif index in after:
                # Lines added below a statement that read a carried member written further
                # down, before the next statement shown, go below that member, which stays
                # put (reading none, they stay right below it: an attribute added below the
                # last one shown goes above the methods, as a user adding one expects).
                below = _last_member_read(after[index], pending, lines, shown[index + 1:], previous)
                text += [own[n - first] for n in range(previous + 1, below + 1) if n in kept]
                if below > previous:
                    after[index] = _set_apart_from_the_member_above(after[index], own, first, kept, below)
                previous = below
        elif not kept or becomes.get(index) != [definition[index]]:
            # The `pass` shown for a body of methods only: what replaces it is set apart
            # from the first of them, as a new statement above a def is, unless the
            # comment lines above the first are the ones it opens with (taken back).
            # (Taken back below the blank lines the definition drops under the header too.)
            replacement = becomes.get(index, [])
            blanks = _kept_blanks_below(own, first, kept, previous) if replacement[:1] and replacement[0].strip() else []
            if _taken_back(replacement, own, first, kept, previous + len(blanks)):
                text += blanks + replacement
                previous += len(blanks) + len(_leading_gap(replacement))
            elif _last_member_read(replacement, pending, lines, shown[index + 1:], previous) > previous:
                # Reading a carried member as the class body runs, it goes right below the
                # last one it reads, set apart from it, as a line added below a statement shown.
                below = _last_member_read(replacement, pending, lines, shown[index + 1:], previous)
                text += [own[n - first] for n in range(previous + 1, below + 1) if n in kept]
                text += ["\n"] + replacement
                previous = below
            else:
                text += replacement
                below = min((n for n in kept if n > previous), default=None)
                if replacement and below is not None and own[below - first].strip():
                    text.append("\n")
        text += after.get(index, [])
    text += [own[n - first] for n in range(previous + 1, last + 1) if n in kept]
    merged = "".join(text)
    return merged if _members_in_order(merged, class_name, source, methods) else None


def _blanks_above_a_first_statement_gone(lines: list[str], classdef: ast.ClassDef, shown: list,
                                         becomes: dict[int, list[str]], kept: set[int]) -> set[int]:
    """The kept blank lines right above the first statement shown (the definition drops them)
    when the text sent leaves none of that statement and a kept blank line follows it: they
    set it apart from what is above it, and the blank lines below it do that now (kept too,
    there were two blank runs where one was, between two methods or under the header)."""
    statement = next((node for node in classdef.body
                      if not isinstance(node, splice.FunctionNode + (ast.ClassDef,))), None)
    if statement is None:
        return set()
    end = splice.last_line(lines, statement)
    indices = [index for index, number in enumerate(shown)
               if number is not None and splice.header_last_line(lines, classdef) < number <= end]
    if not indices or any(becomes.get(index) for index in indices) or end + 1 not in kept \
            or lines[end].strip():
        return set()
    blanks, number = set(), shown[indices[0]] - 1
    while number in kept and not lines[number - 1].strip():
        blanks.add(number)
        number -= 1
    return blanks


def _move_above_the_members_they_follow(after: dict[int, list[str]], becomes: dict[int, list[str]],
                                        definition: list[str], shown: list, kept: set[int]) -> None:
    """Lines added below a run of blank lines the definition shows, ending with as many
    blank lines, where carried members lie between that run and the statement shown above
    it, go right below that statement instead (the same text: the diff could as well have
    put them there). A statement taken out from above the members and sent back goes back
    there, as one added below the statement above them goes right below it."""
    for index in sorted(after):
        steps = _blank_lines_above_the_members(after, becomes, definition, shown, kept, index)
        if steps:
            after[index - steps] = definition[index - steps + 1:index + 1] + after[index][:-steps]
            del after[index]


def _keep_the_gap_of_the_statement_below(opcodes: list, becomes: dict[int, list[str]], definition: list[str],
                                         shown: list, kept: set[int], lines: list[str]) -> None:
    """A statement taken out with the blank lines shown below it, where carried members lie
    between them (the diff could as well have taken those shown above it): those blank lines
    are the gap above the next statement shown, which stays set apart from the member above
    it; the statement's own blank lines below it, kept, go with it instead (up to as many: it
    may have none). So for each statement of a run taken out (`x = 1` and `y = 2` with
    methods between them)."""
    for tag, i1, i2, _, _ in opcodes:
        if tag != "delete":
            continue
        if i2 >= len(definition) or becomes.get(i2) != [definition[i2]]:
            continue   # no statement kept below: the members end the body, set apart as they were
        # The run's own statements below a blank line too: each gap stays above what follows it.
        below = [i2] + [index for index in range(i1 + 1, i2)
                        if definition[index].strip() and not definition[index - 1].strip()]
        for index in below:
            _keep_the_gap_above(index, i1, becomes, definition, shown, kept, lines)


def _keep_the_gap_above(below: int, start: int, becomes: dict[int, list[str]], definition: list[str],
                        shown: list, kept: set[int], lines: list[str]) -> None:
    """_keep_the_gap_of_the_statement_below for the statement shown at `below`, in or right
    below the run taken out from `start`."""
    blanks = below
    while blanks > start and not definition[blanks - 1].strip() and shown[blanks - 1] is not None:
        blanks -= 1
    if blanks in (start, below) or shown[blanks - 1] is None:
        return
    own_blanks, number = [], shown[blanks - 1] + 1
    while number in kept and not lines[number - 1].strip() and len(own_blanks) < below - blanks:
        own_blanks.append(number)
        number += 1
    if not any(number <= n < shown[blanks] for n in kept):
        return
    for index in range(blanks, below):
        becomes[index] = [definition[index]]
    kept.difference_update(own_blanks)


def _blank_lines_above_the_members(after: dict[int, list[str]], becomes: dict[int, list[str]],
                                   definition: list[str], shown: list, kept: set[int], index: int) -> int:
    """How many of the blank lines shown up to line `index` of the definition, unchanged and
    matched by as many the lines added below it end with, lie between it and the carried
    members above them (_move_above_the_members_they_follow); 0 when no members are there."""
    added = after[index]
    for steps in range(1, len(added) + 1):
        at = index - steps + 1      # the blank line the added lines go above
        if at < 1 or at - 1 in after or added[-steps].strip() or definition[at].strip() \
                or becomes.get(at) != [definition[at]] \
                or splice.comparable([added[-steps]]) != splice.comparable([definition[at]]) \
                or becomes.get(at - 1) != [definition[at - 1]] \
                or shown[at] is None or shown[at - 1] is None:
            return 0
        if any(shown[at - 1] < number < shown[at] for number in kept):
            return steps
    return 0


def _blanks_above_a_later_statement_gone(lines: list[str], classdef: ast.ClassDef, shown: list,
                                         becomes: dict[int, list[str]], kept: set[int]) -> list[int]:
    """The indices of the blank lines the definition shows right above a statement other than
    the first, which the text sent leaves as they were, when it leaves none of that statement
    and a kept blank line (a carried member's) follows it: those set the member apart now,
    where there were two blank runs (as _blanks_above_a_first_statement_gone, shown lines)."""
    statements = [node for node in classdef.body
                  if not isinstance(node, splice.FunctionNode + (ast.ClassDef,))][1:]
    index_of = {number: index for index, number in enumerate(shown) if number is not None}
    dropped = []
    for statement in statements:
        end = splice.last_line(lines, statement)
        indices = [index_of[number] for number in range(statement.lineno, end + 1) if number in index_of]
        if not indices or any(becomes.get(index) for index in indices) or end + 1 not in kept \
                or lines[end].strip():
            continue
        number = statement.lineno - 1
        while number in index_of and not lines[number - 1].strip() \
                and becomes.get(index_of[number]) == [lines[number - 1]]:
            dropped.append(index_of[number])
            number -= 1
    return dropped


def _taken_back(added: list[str], own: list[str], first: int, kept: set[int], previous: int) -> bool:
    """Whether the comment lines (and the blank lines among them) that the `added` lines
    open with are the kept lines right below line `previous`: a carried member's own
    comments, which it took when the statement they stood above was deleted from the
    definition with them left in. Sent back, they are that statement's again, not written
    twice."""
    gap = _leading_gap(added)
    numbers = range(previous + 1, previous + 1 + len(gap))
    return (any(line.strip() for line in gap) and all(n in kept for n in numbers)
            and splice.comparable([own[n - first] for n in numbers if n - first < len(own)])
            == splice.comparable(gap))


def _taken_back_further_down(added: list[str], own: list[str], first: int, kept: set[int],
                             previous: int, limit: int) -> int:
    """The line below `previous` and above `limit` below which the `added` lines are taken
    back (_taken_back), else `previous`."""
    for number in range(previous + 1, limit - 1):
        if number in kept and _taken_back(added, own, first, kept, number):
            return number
    return previous


def _next_shown(later: list, last: int) -> int:
    """The number of the first line shown among `later`, else the one below the class."""
    return next((number for number in later if number is not None), last + 1)


def _trailing_blanks_kept(added: list[str], own: list[str], first: int, kept: set[int],
                          previous: int) -> list[str]:
    """The blank lines the `added` lines (a statement taken back) end with, when the kept
    lines right below line `previous` open with as many: those set the statement apart from
    the member below it, which kept them when the statement was taken out; not twice."""
    trailing = len(added) - len(_without_trailing_blanks(added))
    if trailing and len(_kept_blanks_below(own, first, kept, previous)) >= trailing:
        return added[len(added) - trailing:]
    return []


def _apart_from_the_member_below(added: list[str], gap: list[str], own: list[str], first: int,
                                 kept: set[int], previous: int) -> list[str]:
    """The blank lines the taken-back `gap` ends with, when the `added` lines end with none and
    a kept member's line follows line `previous` right away: the statement took those that set
    it apart from the member with its comments, so they go below it again."""
    below = previous + 1
    if added[-1].strip() and below in kept and below - first < len(own) and own[below - first].strip():
        return gap[len(_without_trailing_blanks(gap)):]
    return []


def _set_apart_from_the_member_above(added: list[str], own: list[str], first: int, kept: set[int],
                                     member_end: int) -> list[str]:
    """The `added` lines, gone below a carried member they read (ending on line `member_end`),
    with the blank lines they end with above them instead, when the member's lines are
    followed by as many kept blank lines: those set them apart from the member below, and
    the ones they end with set them apart from the member they read (not twice below)."""
    trailing = added[len(_without_trailing_blanks(added)):]
    if trailing and len(_kept_blanks_below(own, first, kept, member_end)) >= len(trailing):
        return trailing + added[:len(added) - len(trailing)]
    return added


def _without_trailing_blanks(lines: list[str]) -> list[str]:
    end = len(lines)
    while end and not lines[end - 1].strip():
        end -= 1
    return lines[:end]


def _kept_blanks_below(own: list[str], first: int, kept: set[int], previous: int) -> list[str]:
    """The kept blank lines right below line `previous`."""
    blanks, number = [], previous + 1
    while number in kept and number - first < len(own) and not own[number - first].strip():
        blanks.append(own[number - first])
        number += 1
    return blanks


def _leading_gap(lines: list[str]) -> list[str]:
    """The blank and comment-only lines `lines` open with."""
    count = 0
    while count < len(lines) and (not lines[count].strip() or lines[count].lstrip().startswith("#")):
        count += 1
    return lines[:count]


def _pending_members(source: str, class_name: str, methods: list) -> dict:
    """The carried members by name that a class-level statement cannot read above their
    defs (the module or the builtins do not bind the name)."""
    before = splice.statements_before(source, class_name)
    return {node.name: node for node in methods if not splice.bound_before(before, node.name)}


def _last_member_read(added: list[str], pending: dict, lines: list[str], later: list,
                      previous: int) -> int:
    """The number of the last line of the last carried member the `added` lines read as the
    class body runs that is written below line `previous` and above the next line shown
    (`later`'s first number), or `previous` when none."""
    try:
        statements = parsing.parse(splice.dedent_code("".join(added))).body
    except (SyntaxError, ValueError):
        return previous
    read = set().union(*(splice.names_read_now(statement) for statement in statements))
    limit = next((number for number in later if number is not None), len(lines) + 1)
    ends = [splice.last_line(lines, pending[name]) for name in read & pending.keys()
            if previous < pending[name].lineno < limit]
    return max(ends, default=previous)


def _below_header_blanks(lines: list[str], classdef: ast.ClassDef, kept: set[int], header: int) -> int:
    """The number of the last of the kept blank lines right under the header (`header`, when
    none) that the definition drops above a first statement it shows; a first member that is a
    def or class, not shown, keeps those lines as its own."""
    if isinstance(classdef.body[0], splice.FunctionNode + (ast.ClassDef,)):
        return header
    number = header
    while number + 1 in kept and not lines[number].strip():
        number += 1
    return number


def _first_statement_gone_below_a_member(opcodes: list, new: list[str], classdef: ast.ClassDef,
                                         header: int) -> bool:
    """Whether the class's body opens with a member (the blank lines under the header are
    its own) and the diff's `opcodes` delete the definition's lines right under its header
    (line index `header`), the text `new` going on with the definition's own blank line
    below them: a first statement taken out, the blank line setting it apart left."""
    if not isinstance(classdef.body[0], splice.FunctionNode + (ast.ClassDef,)):
        return False
    for (tag, i1, i2, j1, _), following in zip(opcodes, opcodes[1:] + [None]):
        if i1 == header + 1:
            return (tag == "delete" and following is not None and following[0] == "equal"
                    and j1 < len(new) and not new[j1].strip())
    return False


def _class_in(lines: list[str]) -> ast.ClassDef | None:
    """The class statement of the class text, None when it holds none or its body is on its
    header's line (`class A: pass`)."""
    try:
        classdef = parsing.parse("".join(lines)).body[0]
    except (SyntaxError, ValueError, IndexError):
        return None
    if not isinstance(classdef, ast.ClassDef) or splice.body_on_header_line(lines, classdef):
        return None
    return classdef


def _opens_with_blank_line(lines: list[str]) -> bool:
    """Whether the class text's body opens with a blank line below its header."""
    classdef = _class_in(lines)
    if classdef is None:
        return False
    header = splice.header_last_line(lines, classdef)
    return header < len(lines) and not lines[header].strip()


def _only_pass(lines: list[str]) -> int | None:
    """The line number of the class text's one statement when that is a `pass` on a line
    of its own, else None."""
    classdef = _class_in(lines)
    if classdef is None:
        return None
    body = classdef.body
    if (len(body) == 1 and isinstance(body[0], ast.Pass) and body[0].lineno > classdef.lineno
            and lines[body[0].lineno - 1].strip() == "pass"):
        return body[0].lineno
    return None


def _pass_beside_statements(lines: list[str]) -> int | None:
    """The line number of a `pass` on a line of its own among the class text's other
    statements (its body's, not a block's), else None."""
    classdef = _class_in(lines)
    if classdef is None:
        return None
    passes = [node for node in classdef.body if isinstance(node, ast.Pass)]
    if len(passes) == 1 and len(classdef.body) > 1 and lines[passes[0].lineno - 1].strip() == "pass":
        return passes[0].lineno
    return None


def _kept_lines(lines: list[str], classdef: ast.ClassDef, shown: set[int],
                carried: set[int]) -> set[int]:
    """The numbers of the class's lines the definition does not show that stay: those of a
    carried member (with the blank and comment lines above it), and the blank lines the
    definition drops above its first statement, unless a member is above them that is not
    carried (they set that member apart)."""
    kept = set()
    members = [node for node in classdef.body if isinstance(node, splice.FunctionNode + (ast.ClassDef,))]
    first_gone = min((splice.first_line(node) for node in members if node.lineno not in carried),
                     default=None)
    ends = [splice.last_line(lines, node) for node in classdef.body]
    for number in range(splice.first_line(classdef), splice.last_line(lines, classdef) + 1):
        at = bisect.bisect_left(ends, number)     # the statement the line is in or above
        if number in shown or at == len(ends):
            continue
        owner = classdef.body[at]
        if isinstance(owner, splice.FunctionNode + (ast.ClassDef,)):
            if owner.lineno in carried:
                kept.add(number)
        elif first_gone is None or first_gone > number:
            kept.add(number)
    return kept


def _members_in_order(merged: str, class_name: str, source: str, methods: list) -> bool:
    """Whether `merged` is one class statement `class_name` none of whose class-level
    statements reads a carried member as it runs above that member's def (where the module
    or the builtins do not bind the name: there it resolves as it did), or deletes one there
    (`del run`, whatever the module binds)."""
    try:
        body = parsing.parse(merged).body
    except (SyntaxError, ValueError):
        return False
    if len(body) != 1 or not isinstance(body[0], ast.ClassDef) or body[0].name != class_name:
        return False
    before = splice.statements_before(source, class_name)
    pending = {node.name for node in methods if not splice.bound_before(before, node.name)}
    not_yet_made = {node.name for node in methods}   # `del run` ignores what the module binds
    for statement in body[0].body:
        if pending & splice.names_read_now(statement) or not_yet_made & splice.names_deleted_now(statement):
            return False
        pending -= splice.bound_names(statement)
        not_yet_made -= splice.bound_names(statement)
    return True
