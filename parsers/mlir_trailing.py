"""The `#loc` definitions Triton writes after the module, read with one regex a line.

A TTGIR ends with its location aliases, ~45% of its lines:

    #loc98 = loc("a"(#loc38))
    #loc111 = loc(callsite(#loc5 at #loc65))
    #loc3 = loc("/k.py":7:24)
    #loc42 = loc(fused[#loc3, #loc41])

parsers/mlir_fast.py would read each as tokens and a statement that parsers/mlir_build.py
then only files under its name. Here the run of such lines at the end of the file, in the
few forms Triton writes, becomes (name, LocNode) pairs at once, nodes equal to the fast
reader's; the reader reads the text before them. A line in any other form ends the run:
it and all above it go to the reader, as before.
"""

from __future__ import annotations

import re

from .mlir_attributes import ReadLayout, layout_of
from .mlir_fast import odd_space
from .mlir_tree import LocNode, Tok

_NAME = r"#[\w$.\-]+"
_STRING = r'"[^"\\\n]*+(?:\\.[^"\\\n]*+)*+"'
# One line, as DEF_LOC or the tokens of `loc(callsite(#a at #b))` read it: no blanks but the single ones shown.
_BODY = (rf'({_NAME}) = loc\((?:(unknown)|({_NAME})|callsite\(({_NAME}) at ({_NAME})\)|({_STRING})\(({_NAME})\)'
         rf'|({_STRING}):(\d+):(\d+)|fused\[({_NAME}(?:, {_NAME})*)\])\)')
_LINE = re.compile(_BODY + r"\n?")


def _ends_statement(text: str, cut: int) -> bool:
    """Whether the reader ends the statement on the line before `cut` there, as the `#loc` line after it would.

    Its last token must be a `}` or `)` (a `,` or `=` there joins the next line to it; a `//` may hide one),
    and no `@"...` may run across lines (the lines after would be in its string).
    """
    if cut == 0:
        return True
    before = text[text.rfind("\n", 0, cut - 1) + 1:cut].rstrip(" \t\x0c\n")
    return before.endswith(("}", ")")) and "//" not in before and '@"' not in text


def split_trailing_locations(text: str) -> tuple[int, list[tuple[str, LocNode]]]:
    """Where the run of `#loc` lines that ends `text` starts (len(text): none), and its aliases in order."""
    cut, found = trailing_location_lines(text)
    line = text.count("\n", 0, cut) + 1
    return cut, [(name, _loc_node(m, text, line + i)) for i, (name, m) in enumerate(found)]


def trailing_location_lines(text: str) -> tuple[int, list[tuple[str, re.Match]]]:
    """split_trailing_locations with each alias's line as its match of _BODY, not as a LocNode: parse_mlir's
    model reads the location from its groups (parsers/mlir_attributes.py line_location), ~2x sooner."""
    cut = text.rfind("\n}") + 1  # the module's last line: Triton writes the aliases after it
    cut = text.find("\n", cut) + 1 if cut else 0
    if cut == 0 or not _ends_statement(text, cut) or odd_space(text[cut:]):
        return len(text), []
    found = []
    at, end = cut, len(text)
    while at < end:  # `_BODY\n` lines to the end, each matched once (the last may lack its `\n`): else none
        m = _LINE.match(text, at)
        if m is None:
            return end, []
        at = m.end()
        if text[at - 1] != "\n" and at != end:
            return end, []
        found.append((m.group(1), m))
    return cut, found


def _loc_node(m: re.Match, text: str, line: int) -> LocNode:
    """The LocNode of a _BODY match, as the fast reader reads its `loc(...)`."""
    name, unknown, ref, callee, caller, label, inner, file, row, col, fused = m.groups()[:11]
    start, close = m.start(), m.end() - (2 if text[m.end() - 1] == "\n" else 1)
    at = start + len(name) + 7  # after `loc(`
    if ref is not None:
        return LocNode("ref", (ref,), m.start(3), m.end(3), line)
    if unknown is not None:
        return LocNode("unknown", (), m.start(2), m.end(2), line)
    if callee is not None:
        return LocNode("callsite", (LocNode("ref", (callee,), m.start(4), m.end(4), line),
                                    LocNode("ref", (caller,), m.start(5), m.end(5), line)), at, close, line)
    if label is not None:
        return LocNode("name", (label[1:-1], LocNode("ref", (inner,), m.start(7), m.end(7), line)), at, close, line)
    if file is not None:
        return LocNode("file", (file[1:-1], int(row), int(col)), at, close, line)
    return LocNode("fused", tuple(LocNode("ref", (part,), at, close, line) for part in fused.split(", ")),
                   at, close, line)  # fused[#a, #b]


# The alias lines Triton writes before the module: a layout that names no alias (`#blocked = #ttg.blocked<{...}>`),
# one that is another's name (`#smem = #ttg.shared_memory`), or a location (_BODY). Their values are what the
# reader's tokens give (parsers/mlir_attributes.py layout_of, read once per distinct text).
_LEADING = re.compile(rf"{_BODY}\n|({_NAME}) = (?:(#[A-Za-z_][\w$.]*<\{{[^#\n]*\}}>)|({_NAME}))\n")
_BODY_GROUPS = 11


def split_leading_aliases(text: str) -> tuple[int, int, list[tuple[str, list]]]:
    """Where the run of alias lines that starts `text` ends (0: none), the number of the line after it, and the
    aliases as the reader's statements would define them: (name, [_BODY match | ReadLayout | ATTR_REF Tok]).

    The run ends at a line of another form; the text after must start a statement (`module`, an alias), so that
    reading from there gives the reader's statements for it."""
    at, line, found = 0, 1, []
    while True:
        m = _LEADING.match(text, at)
        if m is None:
            break
        if m.start(1) >= 0:  # a location: its match, read as trailing_location_lines' are
            item = m
            name = m.group(1)
        else:
            name, raw, other = m.group(_BODY_GROUPS + 1, _BODY_GROUPS + 2, _BODY_GROUPS + 3)
            if raw is not None:
                layout = layout_of(raw)
                if layout is None:
                    break
                item = ReadLayout(layout, raw)
            else:
                start = m.start(_BODY_GROUPS + 3)
                item = Tok("ATTR_REF", other, start, start + len(other), line)
        found.append((name, [item]))
        at, line = m.end(), line + 1
    if not found or not text.startswith(("#", "!", "module ", "builtin.module "), at):
        return 0, 1, []
    return at, line, found


__all__ = ["split_trailing_locations", "trailing_location_lines", "split_leading_aliases"]
