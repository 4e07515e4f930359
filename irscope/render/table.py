"""A table drawn as one rich Text, for views with hundreds or thousands of rows.

rich's Table measures and wraps every cell as its own renderable: about 2 ms a row, so
two seconds for a 1,000-kernel cache, more than the analysis of that cache read back from
the result index. This draws the same heavy-head box from widths measured once, and
returns one Text that the console prints without wrapping.

Fitting a width: columns come in order of importance. The name column (`shrink`) is first
cut to a readable width, with the ellipsis in the middle; then whole columns are dropped from
the right, and a line under the table names them; then the name is cut to its minimum. A
number is never cut: every other column keeps its full width or is hidden.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import Sequence

from rich.cells import cell_len, set_cell_size
from rich.text import Text


@dataclass(frozen=True)
class Column:
    name: str
    justify: str = "left"  # or "right"
    shrink: bool = False  # cut (in the middle) to fit the width
    min_width: int = 0
    keep: bool = False  # never hidden to fit: what tells the rows apart

    @property
    def readable_width(self) -> int:
        """How far a shrinking column is cut before another column is hidden."""
        return max(self.min_width, 24)


Cell = str | Text


def _total(widths: Sequence[int]) -> int:
    return sum(widths) + 3 * len(widths) + 1  # "│ " before each cell, " " after it, and the last "│"


def fit_widths(columns: Sequence[Column], natural: Sequence[int], width: int | None) -> tuple[list[int], list[int]]:
    """(the width of each shown column, the indices of the shown columns) for a terminal of `width`."""
    widths = list(natural)
    shown = list(range(len(columns)))
    if width is None or _total(widths) <= width:
        return widths, shown

    def total() -> int:
        return _total([widths[i] for i in shown])

    def shrink_to(floor) -> None:
        for i in shown:
            c = columns[i]
            if c.shrink and total() > width:
                least = max(floor(c), cell_len(c.name))
                widths[i] = max(min(widths[i], least), widths[i] - (total() - width))

    shrink_to(lambda c: c.readable_width)
    for i in reversed(range(len(columns))):
        if total() <= width:
            break
        if not columns[i].keep and not columns[i].shrink:
            shown.remove(i)
    shrink_to(lambda c: c.min_width)
    for i in shown:  # a hidden column left room: give it back to the names
        if columns[i].shrink and total() < width:
            widths[i] = min(natural[i], widths[i] + width - total())
    return [widths[i] for i in shown], shown


HIDDEN_PREFIX = "hidden to fit: "
HIDDEN_SUFFIX = " (--wide shows all)"


def hidden_note(columns: Sequence[Column], shown: Sequence[int], width: int | None = None) -> str:
    """The lines under a table that lost columns to the width, wrapped to it; empty when none was hidden."""
    hidden = [c.name for i, c in enumerate(columns) if i not in shown]
    if not hidden:
        return ""
    note = HIDDEN_PREFIX + ", ".join(hidden) + HIDDEN_SUFFIX
    return "\n".join(textwrap.wrap(note, width)) if width and width > 20 else note


def draw_table(title: str, columns: Sequence[Column], rows: Sequence[Sequence[Cell]], width: int | None) -> Text:
    """`rows` of plain strings or styled Text (already made printable by the caller). `width`: the
    terminal's, None to show every column whole (--wide)."""
    natural = [max(cell_len(c.name), c.min_width) for c in columns]
    plain = [[cell.plain if isinstance(cell, Text) else cell for cell in row] for row in rows]
    for row in plain:
        for i, cell in enumerate(row):
            n = cell_len(cell)
            if n > natural[i]:
                natural[i] = n
    widths, shown = fit_widths(columns, natural, width)
    picked = [columns[i] for i in shown]
    out = Text()
    if title:
        out.append(title + "\n", style="italic")

    def rule(left: str, mid: str, right: str, fill: str) -> None:
        out.append(left + mid.join(fill * (w + 2) for w in widths) + right + "\n")

    rule("┏", "┳", "┓", "━")
    out.append("┃")
    for c, w in zip(picked, widths):
        out.append(" ")
        out.append(_fit(c.name, w, c.justify), style="bold")
        out.append(" ┃")
    out.append("\n")
    rule("┡", "╇", "┩", "━")
    for row, texts in zip(plain, rows):
        out.append("│")
        for c, w, i in zip(picked, widths, shown):
            out.append(" ")
            styled = texts[i]
            style = styled.style if isinstance(styled, Text) else ""
            out.append(_fit(row[i], w, c.justify), style=style or None)
            out.append(" │")
        out.append("\n")
    rule("└", "┴", "┘", "─")
    note = hidden_note(columns, shown, width)
    if note:
        out.append(note + "\n", style="dim")
    return out


def middle_ellipsis(text: str, width: int) -> str:
    """`text` in `width` cells, its start and end kept: `matmul_…_kernel` (names differ at both ends)."""
    if cell_len(text) <= width:
        return text
    if width <= 1:
        return "…"[:width]
    tail_cells = (width - 1) // 2
    tail = ""
    for ch in reversed(text):
        if cell_len(ch + tail) > tail_cells:
            break
        tail = ch + tail
    return set_cell_size(text, width - 1 - cell_len(tail)) + "…" + tail


def _fit(text: str, width: int, justify: str) -> str:
    text = middle_ellipsis(text, width)
    pad = " " * (width - cell_len(text))
    return pad + text if justify == "right" else text + pad


def wrapped(text: str, width: int | None, indent: str = "      ", style: str | None = None) -> list[Text]:
    """`text` after `indent` as lines of at most `width` cells (None, or too narrow to help: one line)."""
    if width is None or width <= len(indent) + 20 or cell_len(indent + text) <= width:
        return [Text(indent + text, style=style)]
    return [Text(line, style=style) for line in textwrap.wrap(text, width, initial_indent=indent,
                                                              subsequent_indent=indent, break_on_hyphens=False)]
