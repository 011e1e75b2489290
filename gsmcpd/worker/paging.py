"""paging: a listing that grows with the image answers PAGE entries at a time.

An image of thousands of classes, modules or names would answer hundreds of
kilobytes, more than a client takes into a model's context. Every such listing
takes the same `offset` argument, puts the same fields in structuredContent
(`total` always; `offset` and `nextOffset` when it is not the whole list) and ends
with the same note."""

from __future__ import annotations

from dataclasses import dataclass, field

from gsmcpd.worker.toolset import integer_prop

PAGE = 1000   # read at each call, so a test can make a small image cross a page
PAGED = f"{PAGE} at a time: a note gives the offset of the rest"   # for a tool's description
# The largest integer every JSON reader takes exactly (RFC 8259 section 6): an answer echoes
# the offset, and no list comes near it (`1e308`, an integer to JSON Schema, came back as
# a 309-digit `offset`).
MAX_OFFSET = 2 ** 53 - 1


def offset_prop(what: str) -> dict:
    return {"offset": integer_prop(f"how many {what} of the whole list to skip (default 0); "
                                   f"an answer lists at most {PAGE}", minimum=0, maximum=MAX_OFFSET)}


@dataclass
class Page:
    items: list
    fields: dict                                    # for structuredContent
    note: list[str] = field(default_factory=list)   # the text's last line, when paged


def page_of(every: list, arguments: dict, what: str, elsewhere: str = "") -> Page:
    """The page of `every` from `arguments`' offset; `what` names the entries (plural),
    `elsewhere` the tool that lists a part of them whole (optional)."""
    offset = arguments.get("offset", 0)   # 0 to MAX_OFFSET: offset_prop's minimum and maximum
    items = every[offset:offset + PAGE]
    page = Page(items, {"total": len(every)})
    if len(items) == len(every) and not offset:   # an offset past an empty list's end is said as any
        return page
    end = offset + len(items)
    page.fields["offset"] = offset
    shown = f"{offset + 1}-{end}" if items else f"none from offset {offset}"
    rest = ""
    if end < len(every):
        page.fields["nextOffset"] = end
        rest = f"; {len(every) - end} more: call again with offset {end}" + (
            f", or {elsewhere}" if elsewhere else "")
    page.note.append(f"(showing {shown} of {counted(len(every), what)}{rest})")
    return page


def counted(n: int, what: str) -> str:
    """"5 classes", "1 class": `what` is a listing's plural (classes, subclasses, test
    classes, dictionaries, entries), its singular made by rule."""
    if n != 1:
        return f"{n} {what}"
    one = what[:-3] + "y" if what.endswith("ies") else what[:-2] if what.endswith("sses") else what[:-1]
    return f"1 {one}"
