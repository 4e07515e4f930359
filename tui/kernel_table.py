"""The kernel list, drawn a line at a time: a 1,000-kernel cache paints what one screen shows.

Textual's DataTable measures and renders every cell it holds; at 1,000 kernels and 16
columns that was most of a second before anything appeared, and again whenever results
came in. Here rows are plain lists of cells, widths grow as cells arrive, and only the
visible lines are built. Line 0 is the header, which stays put when the rows scroll; the
first column (the kernel's name) stays put when they scroll right.
Cells are `printable()` strings or Text made from them: nothing is read as markup.
"""

from __future__ import annotations

import time
from typing import Sequence

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from irscope.render.table import Column

Cell = str | Text
GAP = 2  # spaces between columns
PINNED_SHARE = 2  # the pinned name column takes at most 1/PINNED_SHARE of the width: the rest must show

_HEADER = Style(bold=True)
_SORTED = Style(bold=True, underline=True)
_CURSOR = Style(bgcolor="grey30")
_ZEBRA = Style(bgcolor="grey11")


class KernelTable(ScrollView, can_focus=True):
    BINDINGS = [
        Binding("up,k", "move(-1)", "Up", show=False),
        Binding("down,j", "move(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home,g", "go(0)", "Top", show=False),
        Binding("end,G", "go(-1)", "End", show=False),
        Binding("enter", "choose", "Open"),
    ]

    class Chosen(Message):
        """Enter (or a click on the cursor's row) on a kernel."""

        def __init__(self, key: str) -> None:
            super().__init__()
            self.key = key

    class HeaderClicked(Message):
        def __init__(self, column: int) -> None:
            super().__init__()
            self.column = column

    def __init__(self, columns: Sequence[Column], **kwargs) -> None:
        super().__init__(**kwargs)
        self.columns = tuple(columns)
        self.widths = [cell_len(c.name) for c in self.columns]
        self.keys: list[str] = []
        self.cells: dict[str, list[Cell]] = {}
        self.cursor = 0
        self.sorted_column: int | None = None
        self._strips: dict[int, Strip] = {}
        self.first_painted: float | None = None  # time.perf_counter() of the first rows drawn (bench/)

    # -- contents ----------------------------------------------------------------------------
    @property
    def row_count(self) -> int:
        return len(self.keys)

    def show(self, keys: Sequence[str], cells: dict[str, list[Cell]]) -> None:
        """Show these rows, in this order; the cursor stays on its kernel when it still shows."""
        current = self.current_key
        self.keys, self.cells = list(keys), cells
        for key in self.keys:
            for i, cell in enumerate(cells[key]):
                n = cell_len(cell.plain if isinstance(cell, Text) else cell)
                if n > self.widths[i]:
                    self.widths[i] = n
        self.cursor = self.keys.index(current) if current in self.cells and current in self.keys else \
            min(self.cursor, max(0, len(self.keys) - 1))
        self.virtual_size = Size(sum(self.widths) + GAP * len(self.widths), len(self.keys) + 1)
        self._strips.clear()
        self.refresh()

    @property
    def current_key(self) -> str | None:
        return self.keys[self.cursor] if self.keys else None

    def move_to(self, key: str) -> None:
        self._go(self.keys.index(key))

    # -- actions -----------------------------------------------------------------------------
    def action_move(self, delta: int) -> None:
        self._go(self.cursor + delta)

    def action_page(self, direction: int) -> None:
        self._go(self.cursor + direction * max(1, self.size.height - 2))

    def action_go(self, where: int) -> None:
        self._go(0 if where == 0 else len(self.keys) - 1)

    def action_choose(self) -> None:
        if self.keys:
            self.post_message(self.Chosen(self.keys[self.cursor]))

    def _go(self, row: int) -> None:
        if not self.keys:
            return
        self.cursor = max(0, min(len(self.keys) - 1, row))
        rows_shown = max(1, self.size.height - 1)
        top = self.scroll_offset.y
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False)
        elif self.cursor >= top + rows_shown:
            self.scroll_to(y=self.cursor - rows_shown + 1, animate=False)
        self._strips.clear()
        self.refresh()

    def pinned_width(self) -> int:
        """Cells the name column keeps on the left whatever the horizontal scroll."""
        if not self.widths:
            return 0
        return min(self.widths[0] + GAP, max(1, self.size.width // PINNED_SHARE))

    def on_click(self, event: events.Click) -> None:
        pinned = self.pinned_width()
        x = event.x if event.x < pinned else event.x + self.scroll_offset.x
        if event.y == 0:
            edge = 0
            for i, w in enumerate(self.widths):
                edge += w + GAP
                if x < edge:
                    self.post_message(self.HeaderClicked(i))
                    return
            return
        row = self.scroll_offset.y + event.y - 1
        if row == self.cursor:
            self.action_choose()
        elif 0 <= row < len(self.keys):
            self._go(row)

    # -- drawing -----------------------------------------------------------------------------
    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        if y == 0:
            strip = self._header()
        else:
            row = scroll_y + y - 1
            if row >= len(self.keys):
                return Strip.blank(self.size.width)
            strip = self._strips.get(row)
            if self.first_painted is None:
                self.first_painted = time.perf_counter()
            if strip is None:
                if len(self._strips) > 1024:
                    self._strips.clear()
                strip = self._strips[row] = self._row(row)
        # Exactly the width: a shorter strip would leave the previous frame's cells behind.
        if not scroll_x:
            return strip.crop_extend(0, self.size.width, None)
        pinned = self.pinned_width()
        head = strip.crop_extend(0, pinned, None)
        return Strip.join([head, strip.crop_extend(pinned + scroll_x, scroll_x + self.size.width, None)])

    def _header(self) -> Strip:
        segments = []
        for i, (c, w) in enumerate(zip(self.columns, self.widths)):
            style = _SORTED if i == self.sorted_column else _HEADER
            segments.append(Segment(_fit(c.name, w, c.justify), style))
            segments.append(Segment(" " * GAP))
        return Strip(segments)

    def _row(self, row: int) -> Strip:
        base = _CURSOR if row == self.cursor else (_ZEBRA if row % 2 else Style())
        segments = []
        for cell, c, w in zip(self.cells[self.keys[row]], self.columns, self.widths):
            if isinstance(cell, Text):
                own = cell.style if isinstance(cell.style, Style) else Style.parse(cell.style or "none")
                segments.append(Segment(_fit(cell.plain, w, c.justify), base + own))
            else:
                segments.append(Segment(_fit(cell, w, c.justify), base))
            segments.append(Segment(" " * GAP, base))
        return Strip(segments)


def _fit(text: str, width: int, justify: str) -> str:
    pad = width - cell_len(text)
    if pad < 0:
        return set_cell_size(text, width)
    return " " * pad + text if justify == "right" else text + " " * pad
