"""The first screen: one row per kernel, sortable by any column, filtered as you type.

Given a scan under way (pipeline.ScanRun), it shows every harvested kernel at once, with
what its metadata json says, and fills in the rest as the result index and the workers
deliver: a thread collects results and hands them over in batches.
"""

from __future__ import annotations

import time

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Input, Static

from irscope.model.kernel import KernelReport
from irscope.render.console import COLUMNS, KEY_COLUMN, kernel_row, short_key, sort_key
from irscope.model.safe_text import printable, shorten
from irscope.render.table import Column
from irscope.model.report import Report
from irscope.tui.kernel_table import KernelTable

# The name, then the short key that tells apart kernels of one name (autotune configs), as `scan` shows it.
TABLE_COLUMNS = (Column(COLUMNS[0].name), Column(KEY_COLUMN.name), *(Column(c.name, c.justify) for c in COLUMNS[1:]),
                 Column("errors", "right"), Column("warnings", "right"), Column("info", "right"))
# Columns a harvest knows (name, key, arch, Triton version, warps/stages, LDS); the rest wait for analysis.
KNOWN_BEFORE_ANALYSIS = 6
PENDING = Text("…", style="dim")
BATCH_SECONDS = 0.2  # how often arriving results are shown


def _findings_cells(r: KernelReport) -> list[str]:
    return [str(sum(f.severity == s for f in r.findings)) for s in ("error", "warning", "info")]


def _sort_value(cell) -> tuple:
    """Numbers by value ("1,889 (423)" -> 1889), anything else as text; pending rows last."""
    text = cell.plain if isinstance(cell, Text) else str(cell)
    if text == PENDING.plain:
        return (2, 0.0, text)
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
        Binding("f", "families", "Families"),
    ]

    def __init__(self, report: Report | None = None, source_dirs: tuple[str, ...] = (), run=None) -> None:
        super().__init__()
        self.source_dirs = source_dirs
        self.scan_run = run  # a pipeline.ScanRun still delivering, or None
        if report is not None:
            self.roots = report.roots
            self.by_key = {r.kernel.key: r for r in report.kernels}
            self.pending: set[str] = set()
        else:
            self.roots = run.found.roots
            self.by_key = {k.key: KernelReport(kernel=k, problems=tuple(run.found.problems.get(k.key, ())))
                           for k in run.found.kernels}
            self.pending = set(self.by_key)
        self.cells = {key: self._cells(r) for key, r in self.by_key.items()}
        self.report = report
        self.filter_text = ""
        self.sort_column = 0
        self.reverse = False

    def _cells(self, r: KernelReport) -> list:
        row = kernel_row(r)
        cells = [row[0], printable(short_key(r.kernel.key)), *row[1:], *_findings_cells(r)]
        if r.kernel.key in self.pending:
            cells[KNOWN_BEFORE_ANALYSIS:] = [PENDING] * (len(cells) - KNOWN_BEFORE_ANALYSIS)
        return cells

    def compose(self) -> ComposeResult:
        yield Static(self._title(), id="title")
        yield Input(placeholder="filter: name, arch, key or rule code", id="filter")
        yield KernelTable(TABLE_COLUMNS, id="kernels")
        yield Footer()

    def _title(self) -> Text:
        count = len(self.by_key)
        text = f"{count:,} kernels under {', '.join(self.roots)}"
        if self.pending:
            text += f"   analyzing: {count - len(self.pending):,} of {count:,} done"
        return Text(text)

    def on_mount(self) -> None:
        self.query_one(Input).display = False
        self.refill()
        self.query_one(KernelTable).focus()
        if self.scan_run is not None:  # once the table is on screen: reading results competes with drawing
            self.call_after_refresh(self.run_worker, self._collect, thread=True, exit_on_error=False, group="scan")

    # -- results arriving (in a thread; shown on the app's loop) ----------------------------
    def _collect(self) -> None:
        from irscope.pipeline.analyze import paused_gc

        batch: list[KernelReport] = []
        shown = time.monotonic()
        results: dict[int, KernelReport] = {}
        with paused_gc():
            for i, result in self.scan_run.results():
                results[i] = result
                batch.append(result)
                if time.monotonic() - shown > BATCH_SECONDS:
                    self.app.call_from_thread(self._arrived, batch)
                    batch, shown = [], time.monotonic()
        report = self.scan_run.report_of(results)
        self.app.call_from_thread(self._arrived, batch, report)

    def _arrived(self, batch: list[KernelReport], report: Report | None = None) -> None:
        for r in batch:
            key = r.kernel.key
            self.pending.discard(key)
            self.by_key[key] = r
            self.cells[key] = self._cells(r)
        if report is not None:
            self.report, self.scan_run, self.pending = report, None, set()
        self.query_one("#title", Static).update(self._title())
        self.refill()

    # -- rows ------------------------------------------------------------------------------
    def visible(self) -> list[KernelReport]:
        words = self.filter_text.lower().split()
        out = []
        for r in self.by_key.values():
            if words:
                hay = " ".join([r.kernel.name, r.kernel.key, r.kernel.target.arch if r.kernel.target else "",
                                *(f.code for f in r.findings), *(f.slug for f in r.findings)]).lower()
                if not all(w in hay for w in words):
                    continue
            out.append(r)
        return out

    def refill(self) -> None:
        rows = sorted(self.visible(), key=sort_key)
        column = self.sort_column
        if column:
            rows.sort(key=lambda r: _sort_value(self.cells[r.kernel.key][column]))
        if self.reverse:
            rows.reverse()
        table = self.query_one(KernelTable)
        table.sorted_column = column
        table.show([r.kernel.key for r in rows], self.cells)

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
        self.query_one(KernelTable).focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        self.filter_text = event.value
        self.refill()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.query_one(KernelTable).focus()

    def action_sort_next(self) -> None:
        self.sort_column = (self.sort_column + 1) % len(TABLE_COLUMNS)
        self.refill()

    def action_reverse(self) -> None:
        self.reverse = not self.reverse
        self.refill()

    def on_kernel_table_header_clicked(self, event: KernelTable.HeaderClicked) -> None:
        self.reverse = not self.reverse if event.column == self.sort_column else False
        self.sort_column = event.column
        self.refill()

    def action_families(self) -> None:
        """The kernel families and their config sweeps (tui/families_view.py), every kernel's."""
        from irscope.tui.families_view import FamiliesScreen

        if self.pending:
            self.notify("families are shown once every kernel is analyzed", markup=False)
            return
        self.app.push_screen(FamiliesScreen(list(self.by_key.values()), self.source_dirs))

    def on_kernel_table_chosen(self, event: KernelTable.Chosen) -> None:
        from irscope.tui.kernel_view import KernelScreen

        if event.key in self.pending:
            name = shorten(self.by_key[event.key].kernel.name)
            self.notify(printable(f"{name} is still being analyzed"), markup=False)
            return
        self.app.push_screen(KernelScreen(self.by_key[event.key], self.source_dirs))
