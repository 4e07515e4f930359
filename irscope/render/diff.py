"""The console view of a DiffReport: a summary table of the pairs, then what changed in each.

Reads DiffReport values only (irscope/diff/compare.py); every string from an artifact goes through
`printable()`. A stage text diff arrives as lines, already computed.
"""

from __future__ import annotations

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from irscope.diff.compare import Change, DiffReport, PairDiff
from irscope.render.console import short_key
from irscope.model.safe_text import printable, printable_message, printable_name
from irscope.render.table import Column, draw_table

STYLE = {"better": "green", "worse": "red", "changed": "yellow", "same": "dim"}


def _pair_of(p: PairDiff, *names: str) -> Text:
    for name in names:
        c = p.change(name)
        if c is not None and (c.before is not None or c.after is not None):
            return _cell(c)
    return Text("-")


def _cell(c: Change) -> Text:
    show = lambda v: "-" if v is None else f"{v:,}"  # noqa: E731
    if not c.changed:
        return Text(show(c.after), style="dim")
    return Text(f"{show(c.before)} -> {show(c.after)}", style=STYLE[c.verdict])


def _width_cell(p: PairDiff, kind: str) -> Text:
    c = p.change(kind)
    if c is None or (c.before is None and c.after is None):
        return Text("-")
    show = lambda v: "-" if v is None else f"{v}B"  # noqa: E731
    text = show(c.after) if not c.changed else f"{show(c.before)} -> {show(c.after)}"
    return Text(text, style=STYLE[c.verdict] if c.changed else "dim")


# Most important first: the terminal's width hides columns from the right (--wide shows all).
COLUMNS = (Column("kernel", shrink=True, min_width=12), Column("key", keep=True), Column("arch"), Column("verdict"),
           Column("VGPR/regs", "right"), Column("LDS/smem B", "right"), Column("occupancy"),
           Column("instrs", "right"), Column("findings", "right"), Column("narrowest ld"),
           Column("narrowest st"), Column("triton"))


def pair_order(p: PairDiff) -> tuple:
    """Regressions first, then improvements, then the rest; each by name, arch, Triton version, key."""
    rank = 0 if p.regressions else 1 if p.improvements else 2
    return (rank, p.label.split()[0] if p.label else "", p.arch, p.after_version or "", p.after_key)


def summary_table(report: DiffReport, width: int | None = None) -> Text:
    """One row a pair, in pair_order; `width`: the terminal's, None shows every column (--wide)."""
    rows = []
    for p in sorted(report.pairs, key=pair_order):
        introduced = sum(f.status == "introduced" for f in p.findings)
        fixed = sum(f.status == "fixed" for f in p.findings)
        findings = Text(f"+{introduced} -{fixed}", style="red" if introduced else ("green" if fixed else "dim"))
        verdict = (Text("regression", style="bold red") if p.regressions else
                   Text("improvement", style="green") if p.improvements else Text("same", style="dim"))
        versions = (p.after_version if p.before_version == p.after_version
                    else f"{p.before_version} -> {p.after_version}")
        rows.append([printable_name(p.label.split()[0] if p.label else "?"), printable(short_key(p.after_key)),
                     printable_name(p.arch), verdict, _pair_of(p, "VGPRs", "registers"),
                     _pair_of(p, "LDS/shared bytes"), _cell(next(c for c in p.changes if c.group == "occupancy")),
                     _pair_of(p, "instructions"), findings, _width_cell(p, "global_load"),
                     _width_cell(p, "global_store"), printable_name(str(versions))])
    return draw_table(f"{len(report.pairs)} kernel pairs", COLUMNS, rows, width)


def pair_details(p: PairDiff, stage_lines: list[str] | None = None) -> list:
    parts: list = [Text.assemble((printable_name(p.label), "bold"), "  ",
                                 (f"{printable_name(p.before_key)} -> {printable_name(p.after_key)} "
                                  f"(by {p.matched_by})", "dim"))]
    for reason in p.regressions:
        parts.append(Text("  regression: " + printable(reason), style="red"))
    for reason in p.improvements:
        parts.append(Text("  improvement: " + printable(reason), style="green"))
    changed = [c for c in p.changes if c.changed]
    if changed:
        table = Table(show_header=True, header_style="bold", box=None, padding=(0, 2, 0, 2))
        for name in ("", "before", "after", ""):
            table.add_column(name, justify="right" if name in ("before", "after") else "left")
        for c in changed:
            table.add_row(Text(printable(c.name)), "-" if c.before is None else f"{c.before:,}",
                          "-" if c.after is None else f"{c.after:,}", Text(c.verdict, style=STYLE[c.verdict]))
        parts.append(table)
    for f in p.findings:
        if f.status == "unchanged":
            continue
        style = "red" if f.status == "introduced" else "green"
        where = f" (line {f.python_line})" if f.python_line is not None else ""
        parts.append(Text.assemble("  ", (f"{f.status} {f.code} {f.slug}{where}", style), ": ",
                                   printable_message(f.message)))
    for change in p.layouts:
        loop = " in a loop" if change.in_loop else ""
        where = f" (line {change.python_line})" if change.python_line is not None else ""
        parts.append(Text(f"  {change.status}: {printable(change.description)}{loop}{where}",
                          style="yellow" if change.status == "added" else "green"))
    if stage_lines is not None:
        parts.append(_stage_text(stage_lines))
    return parts


def _stage_text(lines: list[str]) -> Text:
    if not lines:
        return Text("  the stage is the same once names, registers, labels and locations are normalized", style="dim")
    out = Text()
    for line in lines:
        style = "green" if line.startswith("+") else "red" if line.startswith("-") else (
            "cyan" if line.startswith("@@") else "")
        out.append(printable(line) + "\n", style=style)
    return out


def render(report: DiffReport, console: Console, stages: dict[str, list[str]] | None = None,
           wide: bool = False) -> None:
    # The table is drawn to the width already: printed unwrapped, as the scan table is.
    console.print(summary_table(report, None if wide else console.width), soft_wrap=True)
    parts: list = []
    for p in sorted(report.pairs, key=pair_order):
        parts.append(Text(""))
        parts.extend(pair_details(p, (stages or {}).get(p.after_key) if stages is not None else None))
    for side, keys in (("before", report.only_before), ("after", report.only_after)):
        if keys:
            parts.append(Text(f"\nOnly {side} ({len(keys)}, no partner; pair them with --pair A=B):", style="bold"))
            parts.extend(Text("  " + printable_name(k)) for k in keys)
    if report.regressed:
        parts.append(Text(f"\n{sum(bool(p.regressions) for p in report.pairs)} pair(s) regressed "
                          f"(checks: {', '.join(report.policy.checks)})", style="bold red"))
    if parts:
        console.print(Group(*parts))
