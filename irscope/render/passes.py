"""The console view of pass timelines: the passes in order, which changed the IR, and which
pass introduced each layout conversion and LDS buffer of the final TTGIR.

One Text drawn by render/table.py, not a rich Table: a dump of 200,000 tiny modules has as many
rows, and rich's Table costs about 0.4 ms a row (95 s for it; the JSON path took 1.35 s)."""

from __future__ import annotations

from rich.text import Text

from irscope.ir.pass_timeline import PassTimeline
from irscope.model.safe_text import printable, printable_name
from irscope.render.table import Column, draw_table

COLUMNS = (Column("#", "right"), Column("pass"), Column("on", shrink=True, min_width=12), Column("changed"),
           Column("dump line", "right"))


def timeline_view(t: PassTimeline, all_passes: bool = False, width: int | None = None) -> Text:
    heading = Text.assemble((printable_name(t.kernel or "?"), "bold"), "  ", (printable(t.path), "dim"),
                            f"  {len(t.passes)} passes, {len(t.changed)} changed the IR")
    rows = []
    for p in t.passes:
        if not all_passes and not p.changed and p.index != t.final_ttgir:
            continue
        on = p.anchor + (f" @{p.symbol}" if p.symbol else "")
        mark = "final TTGIR before this" if p.index == t.final_ttgir else ("yes" if p.changed else "-")
        rows.append([str(p.index), printable_name(p.name), printable(on), mark, str(p.header_line)])
    parts = [heading, draw_table("", COLUMNS, rows, width)]
    if t.origins:
        parts.append(Text("  In the final TTGIR, introduced by:", style="bold"))
        for o in t.origins:
            count = f"{o.count} x " if o.count > 1 else ""
            line = f" (line {o.python_line})" if o.python_line else ""
            parts.append(Text.assemble("    ", (printable(o.introduced_by), "cyan"), f" (pass {o.pass_index}): ",
                                       f"{count}{o.op}{line} ", (printable(o.types), "dim")))
    return Text("\n").join(parts)
