"""Short names of occupancy limiters and steps, as the console's table and the pandas/CSV/Markdown exports
(irscope/model/frames.py) both print them."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from irscope.model.kernel import KernelOccupancy

STEP_LABELS = {"vgprs": "VGPR", "sgprs": "SGPR", "lds": "LDS", "registers": "regs", "shared": "smem",
               "barriers": "barriers"}


LIMITER_LABELS = {"registers": "regs", "shared": "smem"}


def short_step(occ: KernelOccupancy) -> str:
    """The first step as a table cell: `LDS<=21504: 3`, `warps=4: 3`; `-` when there is none."""
    if not occ.steps:
        return "max" if occ.occupancy.active >= occ.occupancy.max_active else "-"
    step = occ.steps[0]
    if step.name == "warps":
        return f"warps={step.to}: {step.active}"
    return f"{STEP_LABELS[step.name]}<={step.to}: {step.active}" + ("+" if step.also else "")
