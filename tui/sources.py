"""What the kernel view shows beside its text: the kernel's Python source, and per line what
the instruction mix counts there (the gutter). Everything comes from the Report."""

from __future__ import annotations

import os

from rich.style import Style

from irscope.model.kernel import KernelReport

# Short gutter names for the mix's instruction kinds.
KIND_SHORT = {"global_load": "gload", "global_store": "gstore", "global_atomic": "gatom", "shared_load": "lds_rd",
              "shared_store": "lds_wr", "shared_atomic": "lds_at", "async_copy": "async", "local_load": "spill_rd",
              "local_store": "spill_wr", "scalar_load": "sload", "wait": "wait", "barrier": "barrier",
              "matrix": "mma", "branch": "branch", "scalar_alu": "salu", "vector_alu": "valu", "other": "other"}


def gutter_for_isa(report: KernelReport, isa: str) -> dict[int, str]:
    """ISA line -> its instruction's kind and detail (`gload 16B`), memory and matrix first."""
    mix = next((m for m in report.mix if m.isa == isa), None)
    out: dict[int, str] = {}
    if mix is None:
        return out
    for row in mix.rows:
        label = KIND_SHORT.get(row.kind, row.kind)
        if row.detail:
            label += " " + row.detail.split(":")[-1]
        for line in row.lines:
            out[line] = label[:16]
    return out


def gutter_for_source(report: KernelReport, python_file: str | None) -> dict[int, str]:
    """Python line -> its findings' codes, then the two largest counts of what it became in
    the first ISA (`IRS201 34 valu 8 mma`)."""
    if python_file is None:
        return {}
    base = os.path.basename(python_file)
    out: dict[int, str] = {}
    for line, codes in _finding_codes(report, base).items():
        out[line] = " ".join(codes)
    for p in report.mix[0].python_lines if report.mix else ():
        if os.path.basename(p.file) != base:
            continue
        top = " ".join(f"{n} {KIND_SHORT.get(k, k)}" for k, n in list(p.counts.items())[:2])
        out[p.line] = f"{out[p.line]} {top}" if p.line in out else top
    return {line: text[:28] for line, text in out.items()}


FINDING_STYLES = {"error": Style(color="red", bold=True), "warning": Style(color="yellow"), "info": Style(color="cyan")}


def source_styles(report: KernelReport, python_file: str | None) -> dict[int, Style]:
    """Python lines that have findings, colored by the most serious one."""
    if python_file is None:
        return {}
    from irscope.model.findings import SEVERITIES

    base = os.path.basename(python_file)
    worst: dict[int, str] = {}
    for f in report.findings:
        if f.python_line is not None and os.path.basename(f.python_file or base) == base:
            if f.python_line not in worst or SEVERITIES.index(f.severity) < SEVERITIES.index(worst[f.python_line]):
                worst[f.python_line] = f.severity
    return {line: FINDING_STYLES.get(severity, Style()) for line, severity in worst.items()}


def _finding_codes(report: KernelReport, base: str) -> dict[int, list[str]]:
    codes: dict[int, list[str]] = {}
    for f in report.findings:
        if f.python_line is not None and os.path.basename(f.python_file or base) == base:
            line = codes.setdefault(f.python_line, [])
            if f.code not in line:
                line.append(f.code)
    return codes


def read_python_source(report: KernelReport, files: set[str], source_dirs: tuple[str, ...]) -> tuple[str | None, str]:
    """(the kernel's file, its text). The artifacts name the file where it was compiled; when
    that path is not on this machine, a file of the same name under `source_dirs` is used."""
    from irscope.ir.source_file import kernel_source

    path, text = kernel_source(report.kernel.name, files, source_dirs)
    if text is not None:
        return path, text
    candidates = sorted(files)
    where = ", ".join(candidates) or "no Python file is named in the assembly's line info"
    return (candidates[0] if candidates else None), (
        f"The kernel's Python source is not readable here ({where}).\n"
        "Pass the directory that holds it: irscope tui PATH --source DIR")
