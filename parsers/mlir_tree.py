"""The token tree the MLIR grammar produces, before any MLIR meaning is given to it.

Plain slotted classes, not frozen dataclasses: tens of thousands are built per file and
thrown away once parsers/mlir_build.py has turned them into the model.

Leaves are tokens: `Tok` from the fast reader (parsers/mlir_fast.py), lark's `Token` from
the lark reader (parsers/mlir_lark.py, the reference and the fallback). Both have type,
value, start_pos, end_pos and line; code that reads the tree uses only those, never a
token as a str (lark's Token is one, Tok is not).
"""

from __future__ import annotations


class Tok:
    """A leaf of the fast reader: a slotted object is ~3x cheaper to build than lark's Token."""

    __slots__ = ("type", "value", "start_pos", "end_pos", "line")

    def __init__(self, type: str, value: str, start_pos: int, end_pos: int, line: int) -> None:
        self.type = type
        self.value = value
        self.start_pos = start_pos
        self.end_pos = end_pos
        self.line = line

    def __str__(self) -> str:
        return self.value

    def __repr__(self) -> str:
        return f"Tok({self.type!r}, {self.value!r})"


# The classes of leaves, tested with `type(x) in TOKEN_CLASSES`. A set, so that the lark
# reader can add lark's Token when it is first built and importers of this name see it:
# the fast path never imports lark (~90 ms).
TOKEN_CLASSES: set[type] = {Tok}


class Node:
    __slots__ = ("start", "end", "line")

    def __init__(self, start: int, end: int, line: int) -> None:
        self.start = start  # character offsets into the file, for the text as written
        self.end = end
        self.line = line


# The subclasses set Node's fields themselves: super().__init__ would double the cost of a node.
class Group(Node):
    """`( ... )`, `[ ... ]`, `< ... >` or `{ ... }` (an attribute dict)."""

    __slots__ = ("kind", "items")

    def __init__(self, kind: str, items: list, start: int, end: int, line: int) -> None:
        self.start, self.end, self.line = start, end, line
        self.kind = kind
        self.items = items


class Param(Node):
    """A name glued to `<...>`: `tensor<...>`, `#ttg.blocked<{...}>`, `!tt.ptr<f16>`, `dense<0>`."""

    __slots__ = ("head", "items")

    def __init__(self, head: str, items: list, start: int, end: int, line: int) -> None:
        self.start, self.end, self.line = start, end, line
        self.head = head  # without the `<`
        self.items = items


class RegionNode(Node):
    __slots__ = ("statements",)

    def __init__(self, statements: list, start: int, end: int, line: int) -> None:
        self.start, self.end, self.line = start, end, line
        self.statements = statements


class Statement(Node):
    """One op, block label or alias definition: its items in order."""

    __slots__ = ("items",)

    def __init__(self, items: list, start: int, end: int, line: int) -> None:
        self.start, self.end, self.line = start, end, line
        self.items = items


class LocNode(Node):
    """A `loc(...)`. kind: file | ref | name | callsite | fused | unknown."""

    __slots__ = ("kind", "args")

    def __init__(self, kind: str, args: tuple, start: int, end: int, line: int) -> None:
        self.start, self.end, self.line = start, end, line
        self.kind = kind
        self.args = args


class LineOp(Node):
    """A whole one-line op the fast reader matched at once (read_statements(lines=True)):
    `%x = arith.addi %a, %b : T loc(#loc3)`. match: its match of the fast reader's token
    regex, whose groups parsers/mlir_build.py reads; end: the `)` of its `loc(`, as a
    Statement's. Not a lark tree: only the model's build reads these."""

    __slots__ = ("match",)
    items = ()  # no token items: code that looks for a label or an alias in a statement finds none

    def __init__(self, match, start: int, end: int, line: int) -> None:
        self.start, self.end, self.line = start, end, line
        self.match = match


def span(item) -> tuple[int, int]:
    if isinstance(item, Node):
        return item.start, item.end
    return item.start_pos, item.end_pos
