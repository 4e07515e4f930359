"""`irscope tui --diff BEFORE AFTER`: the pairs side by side, regressions first, a pair's
changes below the table."""

from __future__ import annotations

from rich.console import Group
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from irscope.diff import DiffReport, PairDiff
from irscope.render.diff import pair_details
from irscope.render.safe import printable, printable_name

COLUMNS = ("kernel", "arch", "VGPR/regs", "LDS/smem B", "occupancy", "instrs", "findings +/-", "verdict")


VERDICT_STYLES = {"better": "green", "worse": "bold red", "changed": "yellow", "same": ""}


def _pair(p: PairDiff, *names: str) -> Text:
    """`before -> after`, green when better, red when worse; one number when unchanged."""
    c = next((c for c in p.changes if c.name in names), None)
    if c is None:
        return Text("-")
    fmt = lambda v: "-" if v is None else f"{v:,}"  # noqa: E731
    if not c.changed:
        return Text(fmt(c.before))
    return Text(f"{fmt(c.before)} -> {fmt(c.after)}", style=VERDICT_STYLES[c.verdict])


def _verdict(p: PairDiff) -> Text:
    if p.regressions:
        return Text("regression", style="bold red")
    return Text("improvement", style="green") if p.improvements else Text("same", style="dim")


class DiffScreen(Screen):
    BINDINGS = [Binding("r", "regressions_only", "Regressions only")]

    def __init__(self, report: DiffReport) -> None:
        super().__init__()
        self.report = report
        # Regressions first, then improvements, then the rest; stable within each.
        self.pairs = sorted(report.pairs, key=lambda p: (not p.regressions, not p.improvements))
        self.only_regressions = False

    def compose(self) -> ComposeResult:
        title = (f"{len(self.report.pairs)} pairs: {', '.join(self.report.before)} -> "
                 f"{', '.join(self.report.after)}; {sum(bool(p.regressions) for p in self.pairs)} regressed, "
                 f"{len(self.report.only_before)} only before, {len(self.report.only_after)} only after")
        yield Static(Text(printable(title)), id="title")
        yield DataTable(id="pairs", cursor_type="row", zebra_stripes=True)
        with VerticalScroll(id="pair-details"):
            yield Static(Text("Select a pair (Enter) to see what changed."), id="details")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        for name in COLUMNS:
            table.add_column(name, key=name)
        self.refill()
        table.focus()

    def refill(self) -> None:
        table = self.query_one(DataTable)
        table.clear()
        for i, p in enumerate(self.pairs):
            if self.only_regressions and not p.regressions:
                continue
            introduced = sum(f.status == "introduced" for f in p.findings)
            fixed = sum(f.status == "fixed" for f in p.findings)
            occupancy = next((c.name for c in p.changes if c.group == "occupancy"), "")
            findings = Text(f"+{introduced} -{fixed}", style="bold red" if introduced else ("green" if fixed else ""))
            table.add_row(Text(printable_name(p.label.split()[0])), Text(printable_name(p.arch)),
                          _pair(p, "VGPRs", "registers"), _pair(p, "LDS/shared bytes"), _pair(p, occupancy),
                          _pair(p, "instructions"), findings, _verdict(p), key=str(i))

    def action_regressions_only(self) -> None:
        self.only_regressions = not self.only_regressions
        self.refill()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        p = self.pairs[int(event.row_key.value)]
        self.query_one("#details", Static).update(Group(*pair_details(p)))
