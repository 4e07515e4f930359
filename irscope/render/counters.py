"""The console's view of `irscope scan script.py --profile=counters`: Nsight Compute's counters of each
kernel beside irscope's own occupancy. Every number is one row's value, or a sum of rows, of the CSV the
heading names; a kernel whose occupancy differs is an irscope bug, said in its problems."""

from __future__ import annotations

from rich.text import Text

from irscope.model.kernel import KernelReport
from irscope.model.safe_text import printable, printable_name
from irscope.render.cells import short_key
from irscope.render.table import Column, draw_table, wrapped

COLUMNS = (Column("kernel", shrink=True, min_width=12), Column("key", keep=True),
           Column("irscope", "right", keep=True), Column("ncu theoretical", "right", keep=True),
           Column("achieved", "right"), Column("DRAM MB", "right"), Column("instructions", "right"))


def counters_lines(kernels: tuple[KernelReport, ...], width: int | None) -> list[Text]:
    counted = [r for r in kernels if r.counters is not None]
    if not counted:
        return []
    rows = [_row(r) for r in sorted(counted, key=lambda r: (r.kernel.name, r.kernel.key))]
    differ = sum(r.counters.agrees is False for r in counted)
    lines = wrapped(f"Nsight Compute's counters of {len(counted)} kernels; occupancy in warps per SM, irscope's "
                    f"against Nsight Compute's theoretical: "
                    f"{'all agree' if not differ else f'{differ} differ (irscope bugs, in Problems)'}:",
                    width, indent="", style="bold")
    lines.append(draw_table("", COLUMNS, rows, width))
    lines.append(Text())
    return lines


def _row(r: KernelReport) -> list[str | Text]:
    c = r.counters
    theoretical = "-" if c.theoretical_warps is None else f"{c.theoretical_warps:g} ({c.theoretical_pct:g}%)" \
        if c.theoretical_pct is not None else f"{c.theoretical_warps:g}"
    mine = "-" if c.irscope_warps is None else str(c.irscope_warps)
    if c.agrees is False:
        mine = Text(mine + " differs", style="bold red")
    return [printable_name(r.kernel.name), printable(short_key(r.kernel.key)), mine, theoretical,
            "-" if c.achieved_pct is None else f"{c.achieved_pct:.1f}%",
            "-" if c.dram_bytes is None else f"{c.dram_bytes / 1e6:,.1f}",
            "-" if c.instructions is None else f"{c.instructions:,}"]
