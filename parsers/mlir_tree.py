"""The token tree the MLIR grammar produces, before any MLIR meaning is given to it.

Plain slotted classes, not frozen dataclasses: tens of thousands are built per file and
thrown away once parsers/mlir_build.py has turned them into the model.
"""

from __future__ import annotations

from lark import Token


class Node:
    __slots__ = ("start", "end", "line")

    def __init__(self, start: int, end: int, line: int) -> None:
        self.start = start  # character offsets into the file, for the text as written
        self.end = end
        self.line = line


class Group(Node):
    """`( ... )`, `[ ... ]`, `< ... >` or `{ ... }` (an attribute dict)."""

    __slots__ = ("kind", "items")

    def __init__(self, kind: str, items: list, start: int, end: int, line: int) -> None:
        super().__init__(start, end, line)
        self.kind = kind
        self.items = items


class Param(Node):
    """A name glued to `<...>`: `tensor<...>`, `#ttg.blocked<{...}>`, `!tt.ptr<f16>`, `dense<0>`."""

    __slots__ = ("head", "items")

    def __init__(self, head: str, items: list, start: int, end: int, line: int) -> None:
        super().__init__(start, end, line)
        self.head = head  # without the `<`
        self.items = items


class RegionNode(Node):
    __slots__ = ("statements",)

    def __init__(self, statements: list, start: int, end: int, line: int) -> None:
        super().__init__(start, end, line)
        self.statements = statements


class Statement(Node):
    """One op, block label or alias definition: its items in order."""

    __slots__ = ("items",)

    def __init__(self, items: list, start: int, end: int, line: int) -> None:
        super().__init__(start, end, line)
        self.items = items


class LocNode(Node):
    """A `loc(...)`. kind: file | ref | name | callsite | fused | unknown."""

    __slots__ = ("kind", "args")

    def __init__(self, kind: str, args: tuple, start: int, end: int, line: int) -> None:
        super().__init__(start, end, line)
        self.kind = kind
        self.args = args


def span(item) -> tuple[int, int]:
    if isinstance(item, Token):
        return item.start_pos, item.end_pos
    return item.start, item.end
