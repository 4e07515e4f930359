"""Assertions for a test suite's own checks of its kernels' generated code.

    import irscope
    from irscope.testing import assert_no_findings, assert_occupancy

    report = irscope.load(os.environ["TRITON_CACHE_DIR"])
    for kernel in report.find("matmul_*", arch="gfx942"):
        assert_no_findings(kernel, select=["IRS1"])      # no narrow global or LDS access
        assert_occupancy(kernel, at_least=2)             # waves per SIMD (warps per SM on NVIDIA)

Each takes a KernelReport, a Report or a sequence of KernelReports, and raises AssertionError
with the findings as `irscope scan` prints them, or the occupancy as `irscope occupancy` does.
No pytest needed: any test runner reports an AssertionError.
"""

from __future__ import annotations

from typing import Iterable

from irscope.api import selectors
from irscope.model.kernel import KernelReport
from irscope.model.safe_text import shorten
from irscope.model.report import Report
from irscope.engine.selection import RuleSelection

Kernels = KernelReport | Report | Iterable[KernelReport]


def _kernels(target: Kernels, what: str) -> list[KernelReport]:
    kernels = [target] if isinstance(target, KernelReport) else list(
        target.kernels if isinstance(target, Report) else target)
    if not kernels:  # an empty report or a `find` that matched nothing would otherwise pass
        raise AssertionError(f"{what}: no kernel to check (an empty report, or a name that matches none)")
    return kernels


def _title(r: KernelReport) -> str:
    k = r.kernel
    return f"{shorten(k.name)}  {shorten(k.target.arch) if k.target else '?'}  {shorten(k.key)}"


def assert_no_findings(target: Kernels, select: str | Iterable[str] | None = None,
                       ignore: str | Iterable[str] | None = None) -> None:
    """No finding of the selected rules (codes, prefixes like IRS1, slugs or ALL; default ALL) in
    any of the kernels. The kernels' own findings are filtered: the rules ran when they were loaded."""
    from rich.text import Text

    from irscope.render.console import kernel_finding_lines

    chosen = RuleSelection(selectors(select) or ("ALL",), selectors(ignore), source="assert_no_findings")
    lines, codes = [], []
    for r in _kernels(target, "assert_no_findings"):
        found = [f for f in r.findings if chosen.reports(f, r.kernel.name)]
        if found:
            codes += [f.code for f in found]
            lines.append(Text("\n").join(kernel_finding_lines(r, found)).plain)
    if codes:
        picked = ", ".join(chosen.select) + (f" (ignoring {', '.join(chosen.ignore)})" if chosen.ignore else "")
        raise AssertionError(f"{len(codes)} finding(s) of {picked}:\n" + "\n".join(lines)
                             + f"\n`irscope explain {min(codes)}` says more")


def assert_occupancy(target: Kernels, at_least: int) -> None:
    """Each kernel's occupancy is at least `at_least`, in the hardware's unit: waves per SIMD on AMD,
    warps per SM on NVIDIA (what `irscope scan` shows as `2/8`)."""
    failures = []
    for r in _kernels(target, "assert_occupancy"):
        occ = r.occupancy
        if occ is None:
            why = "; ".join(p.message for p in r.problems if "occupancy" in p.message) or "not computed"
            failures.append(f"{_title(r)}: occupancy unknown ({why})")
        elif occ.occupancy.active < at_least:
            o = occ.occupancy
            failures.append(f"occupancy {o.active} of {o.max_active} {o.unit}, expected at least {at_least}:\n"
                            + _occupancy_text(r))
    if failures:
        raise AssertionError("\n\n".join(failures))


def _occupancy_text(r: KernelReport) -> str:
    """`irscope occupancy`'s table for the kernel, as plain text: the limiter, the inputs with their
    lines, and the steps to the next occupancy."""
    import io

    from rich.console import Console

    from irscope.render.occupancy import occupancy_table

    out = io.StringIO()
    Console(file=out, width=160, color_system=None, highlight=False).print(occupancy_table(_title(r), r.occupancy))
    return "\n".join(line.rstrip() for line in out.getvalue().splitlines())
