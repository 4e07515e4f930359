"""Kernel families in the browser: `f` on the kernel table lists them, Enter shows one's config sweep.

A family is the configs of one kernel that differ only by autotune parameters (irscope/occupancy/families.py).
The sweep screen is what `irscope scan --sweep` prints for it, with the same cells
(irscope/render/families.py): every config a row, numbered #1.. most serious first, then which
configs cannot launch and why, and the family's findings once per rule and Python line. Enter on
a config opens its kernel in the kernel view; Esc goes back.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from rich.console import Group
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from irscope.occupancy.families import Family
from irscope.model.kernel import KernelReport
from irscope.render.families import (HEADERS, autotune_line, config_columns, config_row, counts, family_heading,
                                     launch_lines, shared_finding_lines)
from irscope.model.safe_text import printable, printable_name
from irscope.render.table import Column
from irscope.tui.kernel_table import KernelTable

FAMILY_COLUMNS = (Column("family"), Column("arch"), Column("triton"), Column("configs", "right"),
                  Column("cannot launch", "right"), Column("spill", "right"), Column("findings", "right"),
                  Column("varying"), Column("autotune"))


def family_cells(family: Family) -> list[str | Text]:
    cannot, spilling = counts(family)
    varying = ", ".join(HEADERS.get(n, printable_name(n)) for n in family.varying) or "-"
    return [printable_name(family.name), printable_name(family.arch or "?"), printable_name(family.triton or "?"),
            str(len(family.configs)), Text(str(cannot), style="bold red") if cannot else "0",
            Text(str(spilling), style="yellow") if spilling else "0", str(len(family.findings)), varying,
            family.autotune or "-"]


class FamiliesScreen(Screen):
    """The families of more than one config (a family of one is a row of the kernel table)."""

    BINDINGS = [Binding("escape", "app.pop_screen", "Back"), Binding("backspace", "app.pop_screen", "Back",
                                                                     show=False)]

    def __init__(self, kernels: Sequence[KernelReport], source_dirs: tuple[str, ...] = ()) -> None:
        from irscope.occupancy.families import families

        super().__init__()
        self.kernels = {r.kernel.key: r for r in kernels}
        self.families = [f for f in families(kernels) if len(f.configs) > 1]
        self.source_dirs = source_dirs

    def compose(self) -> ComposeResult:
        configs = sum(len(f.configs) for f in self.families)
        title = (f"{len(self.families):,} kernel families ({configs:,} of {len(self.kernels):,} kernels): "
                 "the configs of one kernel that differ only by autotune parameters")
        if not self.families:
            title = "No kernel family of more than one config: every kernel compiled once"
        yield Static(Text(title), id="title")
        yield KernelTable(FAMILY_COLUMNS, id="families")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(KernelTable)
        table.show([str(i) for i in range(len(self.families))],
                   {str(i): family_cells(f) for i, f in enumerate(self.families)})
        table.focus()

    def on_kernel_table_chosen(self, event: KernelTable.Chosen) -> None:
        event.stop()
        self.app.push_screen(FamilyScreen(self.families[int(event.key)], self.kernels, self.source_dirs))


class FamilyScreen(Screen):
    """One family's config sweep: the configs' table, what cannot launch or spills, its findings."""

    BINDINGS = [Binding("escape", "app.pop_screen", "Back"), Binding("backspace", "app.pop_screen", "Back",
                                                                     show=False)]

    def __init__(self, family: Family, kernels: Mapping[str, KernelReport], source_dirs: tuple[str, ...] = ()) -> None:
        super().__init__()
        self.family = family
        self.kernels = kernels
        self.source_dirs = source_dirs

    def compose(self) -> ComposeResult:
        yield Static(family_heading(self.family, self.app.size.width - 2), id="title")
        yield KernelTable(config_columns(self.family), id="configs")
        with VerticalScroll(id="family-details"):
            yield Static(self._details(self.app.size.width), id="sweep-details")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(KernelTable)
        keys = [c.kernel for c in self.family.configs]
        table.show(keys, {c.kernel: config_row(self.family, i, self.kernels[c.kernel])
                          for i, c in enumerate(self.family.configs)})
        table.refresh(layout=True)  # its height follows its rows
        table.focus()

    def on_resize(self, event: events.Resize) -> None:
        self.query_one("#title", Static).update(family_heading(self.family, event.size.width - 2))
        self.query_one("#sweep-details", Static).update(self._details(event.size.width))

    def _details(self, width: int) -> Group:
        """What cannot launch (and why), spills or leaves the device idle, then the findings."""
        width = max(40, width - 4)  # the scroll bar and the padding
        lines = [*launch_lines(self.family), *filter(None, [autotune_line(self.family)])]
        count = len(self.family.findings)
        lines.append(Text(f"\nFindings ({count} once per rule and Python line; Enter on a config opens its kernel)"
                          if count else "\nNo findings in any config", style="bold"))
        for shared in self.family.findings:
            lines.extend(shared_finding_lines(self.family, shared, None, width))
        return Group(*lines)

    def on_kernel_table_chosen(self, event: KernelTable.Chosen) -> None:
        from irscope.tui.kernel_view import KernelScreen

        event.stop()
        r = self.kernels.get(event.key)
        if r is None:
            self.notify(printable(f"{event.key} is not in the report"), markup=False)
            return
        self.app.push_screen(KernelScreen(r, self.source_dirs))
