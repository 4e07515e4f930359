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

from .mlir_fast import odd_space
from .mlir_tree import LocNode

_NAME = r"#[\w$.\-]+"
_STRING = r'"[^"\\\n]*+(?:\\.[^"\\\n]*+)*+"'
# One line, as DEF_LOC or the tokens of `loc(callsite(#a at #b))` read it: no blanks but the single ones shown.
_BODY = (rf'({_NAME}) = loc\((?:(unknown)|({_NAME})|callsite\(({_NAME}) at ({_NAME})\)|({_STRING})\(({_NAME})\)'
         rf'|({_STRING}):(\d+):(\d+)|fused\[({_NAME}(?:, {_NAME})*)\])\)')
_LINE = re.compile(_BODY + r"\n?")
_RUN = re.compile(rf"(?:{_BODY}\n)*(?:{_BODY})?")  # the lines to the end of the text


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
    cut = text.rfind("\n}") + 1  # the module's last line: Triton writes the aliases after it
    cut = text.find("\n", cut) + 1 if cut else 0
    if cut == 0 or _RUN.match(text, cut).end() != len(text) or not _ends_statement(text, cut) \
            or odd_space(text[cut:]):
        return len(text), []
    line = text.count("\n", 0, cut) + 1
    found = []
    for m in _LINE.finditer(text, cut):
        name, unknown, ref, callee, caller, label, inner, file, row, col, fused = m.groups()
        start, close = m.start(), m.end() - (2 if text[m.end() - 1] == "\n" else 1)
        at = start + len(name) + 7  # after `loc(`
        if ref is not None:
            node = LocNode("ref", (ref,), m.start(3), m.end(3), line)
        elif unknown is not None:
            node = LocNode("unknown", (), m.start(2), m.end(2), line)
        elif callee is not None:
            node = LocNode("callsite", (LocNode("ref", (callee,), m.start(4), m.end(4), line),
                                        LocNode("ref", (caller,), m.start(5), m.end(5), line)), at, close, line)
        elif label is not None:
            node = LocNode("name", (label[1:-1], LocNode("ref", (inner,), m.start(7), m.end(7), line)), at, close, line)
        elif file is not None:
            node = LocNode("file", (file[1:-1], int(row), int(col)), at, close, line)
        else:  # fused[#a, #b]
            node = LocNode("fused", tuple(LocNode("ref", (part,), at, close, line) for part in fused.split(", ")),
                           at, close, line)
        found.append((name, node))
        line += 1
    return cut, found


__all__ = ["split_trailing_locations"]
