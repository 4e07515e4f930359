"""The console view of pass timelines: the passes in order, which changed the IR, and which
pass introduced each layout conversion and LDS buffer of the final TTGIR."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text

from irscope.pass_timeline import PassTimeline
from irscope.render.safe import printable, printable_name


def timeline_view(t: PassTimeline, all_passes: bool = False) -> Group:
    parts: list = [Text.assemble((printable_name(t.kernel or "?"), "bold"), "  ", (printable(t.path), "dim"),
                                 f"  {len(t.passes)} passes, {len(t.changed)} changed the IR")]
    table = Table(header_style="bold", box=None, padding=(0, 2, 0, 2))
    for name in ("#", "pass", "on", "changed", "dump line"):
        table.add_column(name, justify="right" if name in ("#", "dump line") else "left")
    for p in t.passes:
        if not all_passes and not p.changed and p.index != t.final_ttgir:
            continue
        on = p.anchor + (f" @{p.symbol}" if p.symbol else "")
        mark = "final TTGIR before this" if p.index == t.final_ttgir else ("yes" if p.changed else "-")
        table.add_row(str(p.index), Text(printable(p.name)), Text(printable(on)), mark, str(p.header_line))
    parts.append(table)
    if t.origins:
        parts.append(Text("  In the final TTGIR, introduced by:", style="bold"))
        for o in t.origins:
            count = f"{o.count} x " if o.count > 1 else ""
            line = f" (line {o.python_line})" if o.python_line else ""
            parts.append(Text.assemble("    ", (printable(o.introduced_by), "cyan"), f" (pass {o.pass_index}): ",
                                       f"{count}{o.op}{line} ", (printable(o.types), "dim")))
    return Group(*parts)
