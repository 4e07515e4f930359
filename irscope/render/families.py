"""The console's family blocks: one table of configs per kernel family, its findings once each.

A family of one config is not a block: it stays a row of the kernel table. Configs are numbered
in the block's order (most serious first), and the findings and launch reasons below the table
name configs by that number (`#3`).
"""

from __future__ import annotations

from typing import Mapping, Sequence

from rich.cells import cell_len
from rich.text import Text

from irscope.occupancy.families import Family, SharedFinding
from irscope.model.kernel import KernelReport
from irscope.render.cells import _instructions, _registers, duration, share, short_key
from irscope.render.occupancy import occupancy_cell
from irscope.model.safe_text import printable, printable_message, printable_name
from irscope.render.table import Column, draw_table, middle_ellipsis, wrapped
from irscope.ir.source_roots import SourceRoots

# Short headers for the compile options; constexprs keep their own names.
HEADERS = {"num_warps": "warps", "num_stages": "stages", "waves_per_eu": "wpe", "matrix_instr_nonkdim": "mfma",
           "kpack": "kpack", "num_ctas": "ctas", "maxnreg": "maxnreg"}
# After the parameters, most important first: the width hides them from the right.
FACT_COLUMNS = (Column("launch"), Column("occupancy"), Column("spills", "right"), Column("LDS/smem B", "right"),
                Column("VGPR/regs", "right"), Column("findings", "right"), Column("grid/slots", "right"),
                Column("instrs (loop)", "right"), Column("key", keep=False))
SHOWN = 8  # config numbers named in one line before "+N more"
ROWS = 10  # config rows a family shows unless --sweep asks for every one


def label(n: int) -> str:
    return f"#{n + 1}"


def labels(positions: Sequence[int], most: int = SHOWN) -> str:
    """`#1-#4 #7 +3 more`: config numbers, runs joined, at most `most` runs named."""
    runs: list[list[int]] = []
    for p in sorted(positions):
        if runs and p == runs[-1][1] + 1:
            runs[-1][1] = p
        else:
            runs.append([p, p])
    named = [label(a) if a == b else f"{label(a)}-{label(b)}" for a, b in runs[:most]]
    rest = sum(b - a + 1 for a, b in runs[most:])
    return " ".join(named) + (f" +{rest} more" if rest else "")


def config_columns(family: Family, profiled: bool = False) -> list[Column]:
    """`#`, the family's parameters (the varying ones, else every one), then FACT_COLUMNS; with `profiled`
    (--profile), each config's GPU time in the run and its share of it."""
    columns = [Column("#", "right", keep=True)]
    columns += [Column(HEADERS.get(n, printable_name(n)), "right", keep=True) for n in config_params(family)]
    measured = [Column("GPU time", "right", keep=True), Column("TFLOP/s", "right")] if profiled else []
    tuned = [Column("tuned ms", "right")] if timed(family) else []
    return columns + measured + list(FACT_COLUMNS[:1]) + tuned + list(FACT_COLUMNS[1:])


def profiled(kernels) -> bool:
    """Whether any of these kernel reports has a GPU time (irscope scan script.py --profile)."""
    return any(r.time is not None for r in kernels)


def timed(family: Family) -> bool:
    """Whether the autotuner timed the configs on a GPU (the `tuned ms` column)."""
    return any(c.ms is not None for c in family.configs)


def config_params(family: Family) -> tuple[str, ...]:
    return family.varying or tuple(n for n, _ in family.configs[0].params)


def config_row(family: Family, i: int, r: KernelReport, measured: bool = False) -> list[str | Text]:
    """The cells of config `i` (its kernel `r`) under config_columns; `*` marks the autotuner's choice."""
    c = family.configs[i]
    regs, _, spill, _ = _registers(r)
    shared = r.kernel.options.shared
    launch = (Text("no", style="bold red") if c.fit.launches is False
              else Text("yes") if c.fit.launches else Text("?", style="dim"))
    grid = "-" if c.workgroups is None else f"{c.workgroups:,}/{c.slots:,}" if c.slots else f"{c.workgroups:,}/?"
    tuned = ["-" if c.ms is None else f"{c.ms:.3f}"] if timed(family) else []
    ran = r.time is not None and r.time.launches
    time = [f"{duration(r.time.total_ns)} {share(r.time.share)}" if ran else "-",
            f"{r.time.tflops:,.0f}" if ran and r.time.tflops else "-"] if measured else []
    return [label(i) + ("*" if c.chosen else ""), *(printable(c.param(n)) for n in config_params(family)), *time,
            launch, *tuned, occupancy_cell(r.occupancy), spill, "-" if shared is None else f"{shared.value:,}", regs,
            str(c.findings), grid, _instructions(r), printable(short_key(c.kernel))]


def config_table(family: Family, kernels: Mapping[str, KernelReport], width: int | None,
                 positions: Sequence[int] | None = None) -> Text:
    """The configs at `positions` (all by default) as rows, numbered by their place in the family."""
    measured = profiled(kernels[c.kernel] for c in family.configs)
    rows = [config_row(family, i, kernels[family.configs[i].kernel], measured)
            for i in (range(len(family.configs)) if positions is None else positions)]
    return draw_table("", config_columns(family, measured), rows, width)


def counts(family: Family) -> tuple[int, int]:
    """(configs that cannot launch, configs that spill)."""
    return (sum(c.fit.launches is False for c in family.configs), sum(bool(c.spills) for c in family.configs))


def family_heading(family: Family, width: int | None = None) -> Text:
    """`name  arch  triton V  84 configs, 12 cannot launch, 10 spill`; the name cut in the middle to fit."""
    n = len(family.configs)
    cannot, spilling = counts(family)
    parts = [f"{n} configs", f"{cannot} cannot launch" if cannot else "", f"{spilling} spill" if spilling else ""]
    rest = (f"  {printable_name(family.arch or '?')}  triton {printable_name(family.triton or '?')}  "
            + ", ".join(p for p in parts if p))
    name = printable_name(family.name)
    if width is not None:
        name = middle_ellipsis(name, max(12, width - cell_len(rest)))
    return Text.assemble((name, "bold"), rest)


def autotune_line(family: Family) -> Text | None:
    if family.autotune == "measured":
        return Text("  * the config the autotuner chose; tuned ms: its own timing of each config on the GPU",
                    style="dim")
    if family.autotune == "not measured":
        chosen = next((label(i) for i, c in enumerate(family.configs) if c.chosen), None)
        return Text(f"  autotuner: not measured (--target compiles every config and times none; it kept "
                    f"the first, {chosen or 'none'})", style="dim")
    return None


def launch_lines(family: Family) -> list[Text]:
    """The configs that cannot launch, one line per reason (the resources over the hardware's)."""
    by_reason: dict[str, list[int]] = {}
    for i, c in enumerate(family.configs):
        if c.fit.launches is False:
            by_reason.setdefault("; ".join(c.fit.why), []).append(i)
    lines = [Text.assemble("  ", (f"{labels(positions)} cannot launch: ", "red"), printable(reason))
             for reason, positions in by_reason.items()]
    spilling = [i for i, c in enumerate(family.configs) if c.spills]
    if spilling:
        lines.append(Text(f"  {labels(spilling)} spill registers", style="yellow"))
    grid = [i for i, c in enumerate(family.configs) if c.workgroups is not None and c.slots and c.workgroups < c.slots]
    if grid:
        lines.append(Text(f"  {labels(grid)} launch fewer workgroups than the device holds at once "
                          "(CUs x workgroups per CU)", style="yellow"))
    return lines


def shared_finding_lines(family: Family, shared: SharedFinding, roots: SourceRoots | None = None,
                         width: int | None = None, kernels: Mapping[str, KernelReport] | None = None) -> list[Text]:
    """One rule at one Python line across the family; with `kernels` of a profiled run, the share of the GPU
    time the configs that have it held."""
    style = {"error": "red", "warning": "yellow"}.get(shared.severity, "cyan")
    n, total = len(shared.configs), len(family.configs)
    f = shared.example
    python = f"{roots.shown(f.python_file)}:{f.python_line}" if shared.python and roots and f.python_file \
        else shared.python
    where = printable(python) if python else printable(f.stage)
    spared = family.spared(shared)
    # Name the smaller side: the configs it is in, or those it spares.
    spares = "" if not spared else f": {labels(shared.configs)}" if n <= len(spared) else f"; spares {labels(spared)}"
    example = label(shared.configs[0])
    times = [kernels[family.configs[i].kernel].time for i in shared.configs] if kernels else []
    held = sum(t.share for t in times if t is not None and t.launches) if any(t and t.launches for t in times) else None
    head = Text.assemble("  ", (f"{shared.severity} {shared.code}", style), f" {shared.slug}  {where}  ",
                         (f"in {n} of {total} configs{spares}", "bold"),
                         *(("  ", (f"{share(held)} of GPU time", "bold magenta")) if held is not None else ()))
    heads = [head] if width is None or head.cell_len <= width else wrapped(head.plain.strip(), width, "  ")
    return [*heads, *wrapped(f"{example}: " + printable_message(shared.example.message), width),
            *wrapped("fix: " + printable(shared.example.fix), width, style="dim")]


def family_block(family: Family, kernels: Mapping[str, KernelReport], width: int | None,
                 sweep: bool = False, roots: SourceRoots | None = None) -> list[Text]:
    """The family's heading, what cannot launch or spills, its configs (every one with `sweep`, else
    the ROWS most serious that can launch) and its findings, one line per rule and Python line."""
    lines = [Text(""), family_heading(family, width)]
    for line in [*launch_lines(family), *filter(None, [autotune_line(family)])]:
        lines.extend([line] if width is None or line.cell_len <= width
                     else wrapped(line.plain.strip(), width, "  ", str(line.style) or None))
    positions = None
    if not sweep:
        launching = [i for i, c in enumerate(family.configs) if c.fit.launches is not False]
        # the autotuner's choice always, and when it timed them, the fastest configs too
        fastest = sorted((i for i in launching if family.configs[i].ms is not None), key=lambda i: family.configs[i].ms)
        chosen = [i for i, c in enumerate(family.configs) if c.chosen]
        ran = [i for i, c in enumerate(family.configs) if (t := kernels[c.kernel].time) is not None and t.launches]
        positions = sorted(set(launching[:ROWS]) | set(chosen) | set(fastest[:3]) | set(ran))
    lines.append(config_table(family, kernels, width, positions))
    if positions is not None and len(positions) < len(family.configs):
        lines.append(Text(f"  {len(positions)} of {len(family.configs)} configs shown; --sweep shows every one",
                          style="dim"))
    for shared in family.findings:
        lines.extend(shared_finding_lines(family, shared, roots, width, kernels))
    return lines


def family_blocks(blocks: Sequence[Family], kernels: Mapping[str, KernelReport], width: int | None,
                  sweep: bool = False, roots: SourceRoots | None = None) -> list[Text]:
    out: list[Text] = []
    for family in blocks:
        out.extend(family_block(family, kernels, width, sweep, roots))
    return out


