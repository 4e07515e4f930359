"""A table drawn as one rich Text, for views with hundreds or thousands of rows.

rich's Table measures and wraps every cell as its own renderable: about 2 ms a row, so
two seconds for a 1,000-kernel cache, more than the analysis of that cache read back from
the result index. This draws the same heavy-head box from widths measured once, and
returns one Text that the console prints without wrapping. One column may shrink, with an
ellipsis, so a row fits the terminal; every other column keeps its width.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from rich.cells import cell_len, set_cell_size
from rich.text import Text


@dataclass(frozen=True)
class Column:
    name: str
    justify: str = "left"  # or "right"
    shrink: bool = False  # the one column cut to fit the width
    min_width: int = 0


Cell = str | Text


def draw_table(title: str, columns: Sequence[Column], rows: Sequence[Sequence[Cell]], width: int | None) -> Text:
    """`rows` of plain strings or styled Text (already made printable by the caller)."""
    widths = [max(cell_len(c.name), c.min_width) for c in columns]
    plain = [[cell.plain if isinstance(cell, Text) else cell for cell in row] for row in rows]
    for row in plain:
        for i, cell in enumerate(row):
            n = cell_len(cell)
            if n > widths[i]:
                widths[i] = n
    total = sum(widths) + 3 * len(widths) + 1  # "│ " before each cell, " " after, and the last "│"
    if width is not None and total > width:
        for i, c in enumerate(columns):
            if c.shrink:
                widths[i] = max(c.min_width, cell_len(c.name), widths[i] - (total - width))
    out = Text()
    if title:
        out.append(title + "\n", style="italic")

    def rule(left: str, mid: str, right: str, fill: str) -> None:
        out.append(left + mid.join(fill * (w + 2) for w in widths) + right + "\n")

    rule("┏", "┳", "┓", "━")
    out.append("┃")
    for c, w in zip(columns, widths):
        out.append(" ")
        out.append(_fit(c.name, w, c.justify), style="bold")
        out.append(" ┃")
    out.append("\n")
    rule("┡", "╇", "┩", "━")
    for row, texts in zip(plain, rows):
        out.append("│")
        for c, w, cell, styled in zip(columns, widths, row, texts):
            out.append(" ")
            style = styled.style if isinstance(styled, Text) else ""
            out.append(_fit(cell, w, c.justify), style=style or None)
            out.append(" │")
        out.append("\n")
    rule("└", "┴", "┘", "─")
    return out


def _fit(text: str, width: int, justify: str) -> str:
    n = cell_len(text)
    if n > width:
        return set_cell_size(text, width - 1) + "…" if width > 1 else "…"
    pad = " " * (width - n)
    return pad + text if justify == "right" else text + pad
