"""`irscope tui --diff BEFORE AFTER`: the pairs side by side, regressions first, a pair's
changes and the text diff of one stage (as `diff --stage` makes it) below the table, the
kernels of one side only by name. `a` and `b` open a pair's after and before kernel in the
kernel view. The stage diff reads both artifacts, so it is made in a worker thread."""

from __future__ import annotations

from rich.console import Group
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from irscope.diff.compare import DiffReport, PairDiff
from irscope.model.kernel import KernelReport
from irscope.render.console import short_key
from irscope.render.diff import _stage_text as stage_text  # as `irscope diff --stage` prints it
from irscope.render.diff import pair_details
from irscope.model.safe_text import printable, printable_name
from irscope.model.report import Report
from irscope.diff.stage import STAGES

# The stage diffed first: the ISA, where a change to the kernel shows in what runs; `t` cycles through the rest.
FIRST_STAGES = ("amdgcn", "ptx", "ttgir", "llir", "ttir")

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
    BINDINGS = [
        Binding("r", "regressions_only", "Regressions only"),
        Binding("t", "next_stage", "Next stage"),
        Binding("a", "open('after')", "Open after"),
        Binding("b", "open('before')", "Open before"),
    ]

    def __init__(self, report: DiffReport, sides: tuple[Report, Report] | None = None,
                 source_dirs: tuple[str, ...] = ()) -> None:
        """`sides`: the two scans the diff was made of; without them, no stage diff and no kernel view."""
        super().__init__()
        self.report = report
        self.source_dirs = source_dirs
        self.before = {r.kernel.key: r for r in sides[0].kernels} if sides else {}
        self.after = {r.kernel.key: r for r in sides[1].kernels} if sides else {}
        # Regressions first, then improvements, then the rest; stable within each.
        self.pairs = sorted(report.pairs, key=lambda p: (not p.regressions, not p.improvements))
        self.only_regressions = False
        self.shown: PairDiff | None = None  # the pair whose changes are shown
        self.stage: str | None = None  # its stage diffed

    def compose(self) -> ComposeResult:
        title = (f"{len(self.report.pairs)} pairs: {', '.join(self.report.before)} -> "
                 f"{', '.join(self.report.after)}; {sum(bool(p.regressions) for p in self.pairs)} regressed, "
                 f"{len(self.report.only_before)} only before, {len(self.report.only_after)} only after")
        yield Static(Text(printable(title)), id="title")
        yield DataTable(id="pairs", cursor_type="row", zebra_stripes=True)
        with VerticalScroll(id="pair-details"):
            yield Static(Text("Select a pair (Enter) to see what changed; a and b open its after and before "
                              "kernel."), id="details")
            yield Static(Text(""), id="stage-diff")
            yield Static(self._unpaired(), id="unpaired")
        yield Footer()

    def _unpaired(self) -> Text:
        """The kernels with no partner, by name (and arch and key, which tell same-named ones apart)."""
        text = Text()
        for side, keys, kernels in (("before", self.report.only_before, self.before),
                                    ("after", self.report.only_after, self.after)):
            if not keys:
                continue
            text.append(f"\nOnly {side} ({len(keys)}, no partner):\n", style="bold")
            for key in keys:
                r = kernels.get(key)
                if r is None:
                    text.append(f"  {printable_name(key)}\n")
                    continue
                arch = r.kernel.target.arch if r.kernel.target else "?"
                text.append(f"  {printable_name(r.kernel.name)}  {printable_name(arch)}  ")
                text.append(printable(short_key(key)) + "\n", style="dim")
        return text

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
        self.shown = p
        self.query_one("#details", Static).update(Group(*pair_details(p)))
        stages = self._stages(p)
        if self.stage not in stages:
            self.stage = next((s for s in FIRST_STAGES if s in stages), None)
        self.show_stage()

    def _kernels(self, p: PairDiff) -> tuple[KernelReport | None, KernelReport | None]:
        return self.before.get(p.before_key), self.after.get(p.after_key)

    def _stages(self, p: PairDiff) -> list[str]:
        """The stages both kernels of the pair have, in pipeline order."""
        a, b = self._kernels(p)
        if a is None or b is None:
            return []
        return [s for s in STAGES if a.kernel.artifact(s) is not None and b.kernel.artifact(s) is not None]

    def action_next_stage(self) -> None:
        stages = self._stages(self.shown) if self.shown else []
        if not stages:
            return
        self.stage = stages[(stages.index(self.stage) + 1) % len(stages)] if self.stage in stages else stages[0]
        self.show_stage()

    def show_stage(self) -> None:
        box = self.query_one("#stage-diff", Static)
        if self.shown is None:
            return
        if self.stage is None:
            why = "the scans are not at hand" if not self.before else "no stage is on both sides"
            box.update(Text(f"\nNo stage diff: {why}.", style="dim"))
            return
        box.update(Text(f"\n{self.stage} diff: reading both ...", style="dim"))
        self.diff_stage(self.shown, self.stage)

    @work(thread=True, exclusive=True, group="stage-diff")
    def diff_stage(self, p: PairDiff, stage: str) -> None:
        from irscope.diff.stage import stage_diff

        a, b = self._kernels(p)
        lines = stage_diff(a.kernel.artifact(stage), b.kernel.artifact(stage))
        self.app.call_from_thread(self._stage_ready, p, stage, lines)

    def _stage_ready(self, p: PairDiff, stage: str, lines: list[str]) -> None:
        if (p, stage) != (self.shown, self.stage):  # another pair or stage was asked for since
            return
        others = [s for s in self._stages(p) if s != stage]
        heading = Text(f"\n{stage} diff (names, registers, labels and locations normalized"
                       f"{'; t: ' + ', '.join(others) if others else ''}):", style="bold")
        self.query_one("#stage-diff", Static).update(Group(heading, stage_text(lines)))

    def action_open(self, side: str) -> None:
        """The kernel view of the cursor's pair's kernel on one side."""
        from irscope.tui.kernel_view import KernelScreen

        table = self.query_one(DataTable)
        if not table.row_count:
            return
        p = self.pairs[int(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value)]
        before, after = self._kernels(p)
        kernel = after if side == "after" else before
        if kernel is None:
            self.notify("the scans are not at hand: open the kernel with irscope tui PATH", severity="warning",
                        markup=False)
            return
        self.app.push_screen(KernelScreen(kernel, self.source_dirs))

