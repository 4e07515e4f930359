"""The console view of one kernel's occupancy: result, inputs with their lines, limits, steps.

Reads KernelOccupancy values only (irscope/occupancy/calculator.py); every string from an artifact goes
through `printable()`.
"""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from irscope.occupancy.calculator import KernelOccupancy
from irscope.model.occupancy_result import UNBOUNDED
from irscope.model.safe_text import NAME_LIMIT, printable, printable_name
from irscope.render.table import middle_ellipsis
from irscope.model.occupancy_labels import LIMITER_LABELS, STEP_LABELS, short_step  # noqa: F401 (public here)

def occupancy_cell(occ: KernelOccupancy | None) -> str:
    """`2/8 lds`: active of the most, and what limits it (nothing shown at the maximum); `1/8 on 2/4 slots`:
    the CU's waves fill 2 of its 4 SIMDs; `no launch: lds`: not one workgroup fits."""
    if occ is None:
        return "-"
    o = occ.occupancy
    limiters = "+".join(LIMITER_LABELS.get(r, r) for r in o.limiters)
    if not o.launchable:
        return f"no launch: {limiters}"
    cell = f"{o.active}/{o.max_active}"
    if o.partial:  # 1 wave on some SIMDs, none on the others
        cell += f" on {o.simds_used}/{o.simds}"
    return cell if o.active >= o.max_active else f"{cell} {limiters}"


def occupancy_table(title: str, occ: KernelOccupancy, width: int | None = None) -> Table:
    """`width`: the terminal's; the title (name, target, key) is cut in the middle to one line of it.
    The values wrap at spaces, so a number is never cut."""
    o = occ.occupancy
    heading = printable_name(title, 3 * NAME_LIMIT)
    if width is not None:
        heading = middle_ellipsis(heading, width)
    group = "workgroup" if o.unit == "waves/SIMD" else "block"
    where = "CU" if o.unit == "waves/SIMD" else "SM"
    table = Table(title=Text(heading), title_justify="left", show_header=False, box=None,
                  padding=(0, 2, 0, 0))
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    if not o.launchable:
        summary = f"none: not one {group} fits a {where} of {o.arch} ({', '.join(o.limiters)}); it cannot launch"
    else:
        summary = (f"{o.active} of {o.max_active} {o.unit} ({o.fraction:.0%}): {o.groups} {group}(s) per {where} "
                   f"on {o.arch}")
        if o.partial:
            summary += f", its waves on {o.simds_used} of the {where}'s {o.simds} SIMDs (the others hold none)"
    table.add_row("occupancy", Text(summary))
    table.add_row("limited by", Text(", ".join(o.limiters)))
    table.add_row("inputs", Text("\n".join(f"{i.name} = {i.value:,}  {printable(str(i.origin))}" for i in occ.inputs)))
    limits = [f"{lim.resource} {lim.groups if lim.groups < UNBOUNDED else 'no limit'}" for lim in o.limits]
    table.add_row(f"{group}s allowed", Text(", ".join(limits)))
    if occ.steps:
        table.add_row("to gain", Text("\n".join(s.hint for s in occ.steps)))
    elif o.active >= o.max_active:
        table.add_row("to gain", Text("nothing: the hardware's maximum"))
    for note in occ.notes:
        table.add_row("note", Text(printable(note)))
    return table
