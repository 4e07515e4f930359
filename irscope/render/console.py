"""The console view of a Report: one row per kernel, then the problems.

Every cell is built as rich `Text` from `printable()` strings, so nothing a kernel
name or path contains is taken as markup or as a terminal escape.
"""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, Sequence

from rich.console import Console
from rich.text import Text

from irscope.model.kernel import KernelReport
from irscope.render.cells import _instructions, _num, _registers, _v, duration, share, short_key  # noqa: F401
from irscope.render.occupancy import occupancy_cell, short_step
from irscope.model.safe_text import printable, printable_message, printable_name
from irscope.render.table import Column, draw_table, wrapped
from irscope.model.report import Report

if TYPE_CHECKING:
    from irscope.model.findings import Finding
    from irscope.ir.source_roots import SourceRoots


COLUMNS = (Column("kernel", shrink=True, min_width=12), Column("arch", min_width=7), Column("triton"),
           Column("warps/stages", "right"), Column("LDS/smem B", "right"), Column("VGPR/regs", "right"),
           Column("SGPR", "right"), Column("spills", "right"), Column("scratch B", "right"),
           Column("instrs (loop)", "right"), Column("occupancy"), Column("to gain"), Column("status"))

# The console table's columns, most important first: the terminal's width hides them from the right.
# `key` tells apart rows that look alike (autotune configs). COLUMNS' order stays the TUI's.
CONSOLE_ORDER = ("kernel", "key", "arch", "status", "occupancy", "VGPR/regs", "spills", "LDS/smem B",
                 "warps/stages", "instrs (loop)", "to gain", "scratch B", "SGPR", "triton")
KEY_COLUMN = Column("key", keep=True)
_BY_NAME = {c.name: i for i, c in enumerate(COLUMNS)}
CONSOLE_COLUMNS = tuple(KEY_COLUMN if n == "key" else COLUMNS[_BY_NAME[n]] for n in CONSOLE_ORDER)
# With --profile: the kernel's GPU time in the run and its share of all of it, right after the key.
# Then the bandwidth it achieved; its launches come last, the first column the width hides.
TIME_COLUMNS = (Column("GPU time", "right", keep=True), Column("share", "right", keep=True),
                Column("GB/s (peak)", "right"), Column("TFLOP/s (peak)", "right"))
PROFILED_COLUMNS = CONSOLE_COLUMNS[:2] + TIME_COLUMNS + CONSOLE_COLUMNS[2:] + (Column("launches", "right"),)


def time_order(r: KernelReport) -> tuple:
    """Most GPU time first (the unprofiled last), then the one order of kernels."""
    return (-(r.time.total_ns if r.time else -1), sort_key(r))


def time_cells(r: KernelReport, dram_peak: float | None = None, device=None) -> tuple[list[str], list[str]]:
    """([GPU time, share, achieved GB/s and TFLOP/s, each with its share of the device's peak], [launches]) of a
    profiled kernel's row: the bytes are its launches' distinct tensors, the least they move; the FLOPs its
    dots' (docs/profile.md)."""
    from irscope.model.device_peaks import matrix_peak

    t = r.time
    if not t or not t.launches:
        return ["-", "-", "-", "-"], ["-"]
    rate = t.gb_per_s
    bandwidth = "-" if rate is None else f"{rate:,.0f}" + (f" ({share(rate * 1e9 / dram_peak)})" if dram_peak else "")
    peak = matrix_peak(device, t.element)
    tflops = "" if t.flops == 0 else "?" if t.tflops is None else f"{t.tflops:,.0f}" + (
        f" ({share(t.tflops / peak)})" if peak else "")
    return [duration(t.total_ns), share(t.share), bandwidth, tflops], [f"{t.launches:,}"]


def sort_key(r: KernelReport) -> tuple:
    """The one order of kernels everywhere (table, findings, diff pairs): by name, arch, Triton version, key."""
    k = r.kernel
    return (k.name, k.target.arch if k.target else "", k.triton_version.value if k.triton_version else "", k.key)


def kernel_row(r: KernelReport) -> list[str | Text]:
    """One kernel's cells, in COLUMNS' order."""
    k = r.kernel
    opts = k.options
    regs, sgpr, spill, scratch = _registers(r)
    errors = sum(p.severity == "error" for p in r.problems)
    warnings = len(r.problems) - errors
    status = Text("error", style="bold red") if errors else (
        Text("incomplete" if not k.complete else "warning", style="yellow") if warnings
        else Text("ok", style="green"))
    return [
        printable_name(k.name), printable_name(k.target.arch) if k.target else "?",
        printable_name(k.triton_version.value) if k.triton_version else "?",
        f"{_num(_v(opts.num_warps))}/{_num(_v(opts.num_stages))}", _num(_v(opts.shared)),
        regs, sgpr, spill, scratch, _instructions(r), occupancy_cell(r.occupancy),
        short_step(r.occupancy) if r.occupancy else "-", status,
    ]


def kernel_table(report: Report | Sequence[KernelReport], width: int | None = None, title: str | None = None,
                 dram_peak: float | None = None, device=None) -> Text:
    """`width`: the terminal's; None shows every column (--wide). `dram_peak`: the profiled device's, bytes/s;
    `device`: its DevicePeaks (irscope/model/device_peaks.py)."""
    kernels = report.kernels if isinstance(report, Report) else report
    profiled = any(r.time is not None for r in kernels)
    rows = []
    for r in sorted(kernels, key=time_order if profiled else sort_key):
        cells = dict(zip((c.name for c in COLUMNS), kernel_row(r)))
        cells["key"] = printable(short_key(r.kernel.key))
        row = [cells[n] for n in CONSOLE_ORDER]
        if profiled:
            measured, after = time_cells(r, dram_peak, device)
            row = row[:2] + measured + row[2:] + after
        rows.append(row)
    return draw_table(title or f"{len(kernels)} kernels", PROFILED_COLUMNS if profiled else CONSOLE_COLUMNS, rows,
                      width)


def problem_lines(report: Report) -> list[Text]:
    lines = []
    for r in sorted(report.kernels, key=sort_key):
        for p in r.problems:
            style = "red" if p.severity == "error" else "yellow"
            lines.append(Text.assemble((f"{p.severity}: ", style), printable_name(r.kernel.name), ": ",
                                       printable_message(str(p))))
    for p in report.problems:
        lines.append(Text.assemble((f"{p.severity}: ", "red" if p.severity == "error" else "yellow"),
                                   printable_message(str(p))))
    return lines


def finding_lines(report: Report | Sequence[KernelReport], roots: SourceRoots | None = None,
                  width: int | None = None) -> list[Text]:
    """Findings grouped by kernel in the table's order, most serious first, each with its line and the fix."""
    lines: list[Text] = []
    kernels = report.kernels if isinstance(report, Report) else report
    profiled = any(r.time is not None for r in kernels)
    for r in sorted(kernels, key=time_order if profiled else sort_key):
        if r.findings:
            lines.extend(kernel_finding_lines(r, r.findings, roots, width))
    return lines


def finding_where(f: Finding, roots: SourceRoots | None = None) -> str:
    """`f.where`, its paths repository-relative where `roots` (--source, source-roots) maps them."""
    if roots is None or not roots.configured:
        return f.where
    import dataclasses

    return dataclasses.replace(f, path=roots.shown(f.path),
                               python_file=f.python_file and roots.shown(f.python_file)).where


def kernel_finding_lines(r: KernelReport, findings: Sequence[Finding], roots: SourceRoots | None = None,
                         width: int | None = None) -> list[Text]:
    """One kernel's heading and the given findings of it, as `scan` prints them (the pytest plugin
    and irscope.testing show a failure with these too, as plain text); messages wrapped to `width`."""
    from irscope.model.findings import SEVERITIES

    arch = r.kernel.target.arch if r.kernel.target else "?"
    heading = Text.assemble((printable_name(r.kernel.name), "bold"), f"  {printable_name(arch)}  ",
                            (printable_name(r.kernel.key), "dim"))
    note = Text.assemble(*_time_note(r))
    if width is not None and heading.cell_len + note.cell_len > width:  # the share on a line of its own
        lines = [heading] + ([Text("  ") + note[2:]] if note.plain else [])
    else:
        lines = [heading + note]
    for f in sorted(findings, key=lambda f: (SEVERITIES.index(f.severity), f.code, f.line or 0)):
        style = {"error": "red", "warning": "yellow"}.get(f.severity, "cyan")
        lines.append(Text.assemble("  ", (f"{f.severity} {f.code}", style), f" {f.slug}  ",
                                   printable(finding_where(f, roots))))
        lines.extend(wrapped(printable_message(f.message), width))
        lines.extend(wrapped("fix: " + printable(f.fix), width, style="dim"))
    return lines


def _time_note(r: KernelReport) -> tuple:
    """`  18% of GPU time (10.5 us, 1 launch)` after a profiled kernel's heading."""
    t = r.time
    if t is None or not t.launches:
        return ()
    return ("  ", (f"{share(t.share)} of GPU time ({duration(t.total_ns)}, {t.launches:,} "
                   f"launch{'es' if t.launches != 1 else ''})", "bold magenta"))


def render(report: Report, console: Console, wide: bool = False, every_config: bool = False,
           sweep: bool = False, roots: SourceRoots | None = None) -> None:
    """The table of kernels, then (unless `every_config`, --all) one block per family of configs
    (irscope/render/families.py; `sweep`: every config a row), then the problems."""
    from irscope.occupancy.families import families
    from irscope.render.families import family_blocks

    width = None if wide else console.width
    blocks = [] if every_config else [f for f in families(report.kernels) if len(f.configs) > 1]
    if any(r.time is not None for r in report.kernels):  # --profile: the families that held the most GPU time first
        by_key = {r.kernel.key: r for r in report.kernels}
        blocks.sort(key=lambda f: -sum(t.total_ns for c in f.configs if (t := by_key[c.kernel].time) is not None))
    grouped = {c.kernel for f in blocks for c in f.configs}
    alone = [r for r in report.kernels if r.kernel.key not in grouped]
    # One Text, printed without wrapping: thousands of findings as separate renderables took
    # seconds; a finding's lines are short, and a terminal wraps a long path by itself.
    parts = []
    if report.run is not None and (report.run.profile is not None or report.run.unprofiled):
        from irscope.render.profile import profile_lines

        parts.extend(profile_lines(report, width))
    if any(r.counters is not None for r in report.kernels):
        from irscope.render.counters import counters_lines

        parts.extend(counters_lines(report.kernels, width))
    if alone or not blocks:
        title = f"{len(alone)} kernels" if not blocks else (f"{len(report.kernels)} kernels: {len(alone)} alone here, "
                                                            f"{len(grouped)} in {len(blocks)} families below "
                                                            "(--all lists each)")
        profile = report.run.profile if report.run is not None else None
        device = profile.device if profile else None
        parts.append(kernel_table(alone, width, title, profile.dram_peak if profile else None, device))
    findings = finding_lines(alone, roots, width)
    if findings:
        count = sum(len(r.findings) for r in alone)
        parts.append(Text(f"\nFindings ({count}; `irscope explain CODE` says more):", style="bold"))
        parts.extend(findings)
    if blocks:
        count = sum(len(r.findings) for r in report.kernels if r.kernel.key in grouped)
        lines = sum(len(f.findings) for f in blocks)
        heading = (f"Kernel families ({len(grouped)} configs in {len(blocks)} families; their {count} findings "
                   f"as {lines}, one per rule and Python line; --all lists each config):")
        parts.append(Text("\n" + "\n".join(textwrap.wrap(heading, width) if width else [heading]), style="bold"))
        parts.extend(family_blocks(blocks, {r.kernel.key: r for r in report.kernels}, width, sweep, roots))
    problems = problem_lines(report)
    if problems:
        parts.append(Text("\nProblems (the other kernels are analyzed in full):", style="bold"))
        parts.extend(problems)
    if report.skipped:
        parts.append(Text(f"\nSkipped {len(report.skipped)} path(s) that hold no kernel "
                          "(autotune results, launchers, files Triton is writing).", style="dim"))
    print_text(Text("\n").join(parts), console)


def print_text(text: Text, console: Console) -> None:
    """Print one Text without wrapping (a terminal wraps a long path by itself)."""
    if console.color_system is None and not console.record:
        # No styles will be written (a pipe, a file, NO_COLOR): skip rich's segment
        # rendering, which is most of the time of a 1,000-kernel view.
        try:
            console.file.write(text.plain + "\n")
            console.file.flush()
        except BrokenPipeError:  # the reader left (`| head`): the console decides, as rich's print does
            console.on_broken_pipe()
    else:
        console.print(text, soft_wrap=True)
