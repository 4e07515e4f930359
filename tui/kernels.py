"""The first screen: one row per kernel, sortable by any column, filtered as you type."""

from __future__ import annotations

from rich.cells import cell_len
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Input, Static

from irscope.model import KernelReport
from irscope.render.console import COLUMNS, kernel_rows, sort_key
from irscope.report import Report

FINDING_COLUMNS = ("errors", "warnings", "info")


def _findings_cells(r: KernelReport) -> list[int]:
    return [sum(f.severity == s for f in r.findings) for s in ("error", "warning", "info")]


def _sort_value(cell) -> tuple:
    """Numbers by value ("1,889 (423)" -> 1889), anything else as text."""
    text = cell.plain if isinstance(cell, Text) else str(cell)
    head = text.split(" ")[0].split("/")[0].replace(",", "")
    try:
        return (0, float(head), text)
    except ValueError:
        return (1, 0.0, text)


class KernelsScreen(Screen):
    BINDINGS = [
        Binding("slash", "filter", "Filter"),
        Binding("escape", "clear_filter", "Clear filter", show=False),
        Binding("s", "sort_next", "Sort"),
        Binding("r", "reverse", "Reverse"),
    ]

    def __init__(self, report: Report, source_dirs: tuple[str, ...] = ()) -> None:
        super().__init__()
        self.report = report
        self.source_dirs = source_dirs
        self.kernels = sorted(report.kernels, key=sort_key)
        self.rows = dict(zip((r.kernel.key for r in self.kernels), kernel_rows(report)))
        self.by_key = {r.kernel.key: r for r in self.kernels}
        self.filter_text = ""
        self.sort_column = 0
        self.reverse = False

    def compose(self) -> ComposeResult:
        yield Static(Text(f"{len(self.kernels)} kernels under {', '.join(self.report.roots)}"), id="title")
        yield Input(placeholder="filter: name, arch, key or rule code", id="filter")
        yield DataTable(id="kernels", cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        # Widths measured here, once, from the plain text: left to itself DataTable measures
        # every cell as a renderable (1.1 s of the first paint of 1,000 kernels).
        names = [c.name for c in COLUMNS] + list(FINDING_COLUMNS)
        widths = [len(n) for n in names]
        for r in self.kernels:
            for i, cell in enumerate([*self.rows[r.kernel.key], *_findings_cells(r)]):
                widths[i] = max(widths[i], cell_len(cell.plain if isinstance(cell, Text) else str(cell)))
        for name, width in zip(names, widths):
            table.add_column(name, key=name, width=width)
        self.query_one(Input).display = False
        self.refill()
        table.focus()

    # -- rows ------------------------------------------------------------------------------
    def visible(self) -> list[KernelReport]:
        words = self.filter_text.lower().split()
        out = []
        for r in self.kernels:
            hay = " ".join([r.kernel.name, r.kernel.key, r.kernel.target.arch if r.kernel.target else "",
                            *(f.code for f in r.findings), *(f.slug for f in r.findings)]).lower()
            if all(w in hay for w in words):
                out.append(r)
        return out

    def refill(self) -> None:
        table = self.query_one(DataTable)
        table.clear()
        rows = [(r, [*self.rows[r.kernel.key], *_findings_cells(r)]) for r in self.visible()]
        rows.sort(key=lambda item: _sort_value(item[1][self.sort_column]), reverse=self.reverse)
        for r, cells in rows:
            table.add_row(*(c if isinstance(c, Text) else Text(str(c)) for c in cells), key=r.kernel.key)

    # -- actions ---------------------------------------------------------------------------
    def action_filter(self) -> None:
        box = self.query_one(Input)
        box.display = True
        box.focus()

    def action_clear_filter(self) -> None:
        box = self.query_one(Input)
        box.value, box.display = "", False
        self.filter_text = ""
        self.refill()
        self.query_one(DataTable).focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        self.filter_text = event.value
        self.refill()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.query_one(DataTable).focus()

    def action_sort_next(self) -> None:
        self.sort_column = (self.sort_column + 1) % (len(COLUMNS) + len(FINDING_COLUMNS))
        self.refill()

    def action_reverse(self) -> None:
        self.reverse = not self.reverse
        self.refill()

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        index = event.column_index
        self.reverse = not self.reverse if index == self.sort_column else False
        self.sort_column = index
        self.refill()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        from irscope.tui.kernel_view import KernelScreen

        self.app.push_screen(KernelScreen(self.by_key[event.row_key.value], self.source_dirs))
