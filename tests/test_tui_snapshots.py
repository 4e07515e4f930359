"""Snapshots of the main screens at a fixed terminal size (pytest-textual-snapshot).

A change to what a screen shows is a diff of an SVG to review; rewrite them with
`python -m pytest tests/test_tui_snapshots.py --snapshot-update`. textual and the
snapshot plugin are pinned in the `test` extra, so the pictures do not drift with releases.
"""

from __future__ import annotations

import pytest
from conftest import FIXTURES

from irscope.pipeline.analyze import scan

pytest.importorskip("pytest_textual_snapshot")

from irscope.tui.app import IrscopeApp  # noqa: E402

SIZE = (150, 40)
CACHE = FIXTURES / "caches" / "triton-3.9"


@pytest.fixture(scope="module")
def report():
    import os

    # Relative paths: the pictures must not depend on where the repository is checked out.
    here = os.getcwd()
    os.chdir(FIXTURES.parent)
    try:
        return scan(os.path.relpath(CACHE, FIXTURES.parent), jobs=1)
    finally:
        os.chdir(here)


def _gemm_row(report) -> int:
    from irscope.render.console import sort_key

    ordered = sorted(report.kernels, key=sort_key)
    return next(i for i, r in enumerate(ordered)
                if r.kernel.name == "matmul_kernel" and r.kernel.target.arch == "gfx942" and r.findings)


def test_kernel_table(snap_compare, report):
    assert snap_compare(IrscopeApp(report=report), terminal_size=SIZE)


def test_kernel_view_findings(snap_compare, report):
    async def open_gemm(pilot):
        await pilot.press(*["down"] * _gemm_row(report), "enter")
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()

    assert snap_compare(IrscopeApp(report=report, source_dirs=(str(FIXTURES / "kernels"),)),
                        terminal_size=SIZE, run_before=open_gemm)


def test_kernel_view_isa_after_picking_a_finding(snap_compare, report):
    async def pick_first_finding(pilot):
        await pilot.press(*["down"] * _gemm_row(report), "enter")
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()

    assert snap_compare(IrscopeApp(report=report, source_dirs=(str(FIXTURES / "kernels"),)),
                        terminal_size=SIZE, run_before=pick_first_finding)


def test_kernel_view_occupancy_what_if(snap_compare, report):
    async def what_if(pilot):
        await pilot.press(*["down"] * _gemm_row(report), "enter")
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        pilot.app.screen.query_one("#tabs").active = "occupancy"
        await pilot.pause()
        box = pilot.app.screen.query_one("#what-if-vgprs")
        box.value = "128"
        box.focus()
        await pilot.press("enter")
        await pilot.pause()

    assert snap_compare(IrscopeApp(report=report, source_dirs=(str(FIXTURES / "kernels"),)),
                        terminal_size=SIZE, run_before=what_if)


def test_diff_screen(snap_compare):
    import os

    from irscope.diff.compare import diff_reports

    here = os.getcwd()
    os.chdir(FIXTURES.parent)
    try:
        before = scan(os.path.join("fixtures", "before_after", "before"), jobs=1)
        after = scan(os.path.join("fixtures", "before_after", "after"), jobs=1)
    finally:
        os.chdir(here)

    async def show_first_pair(pilot):
        await pilot.press("enter")
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()

    # As `irscope tui --diff` opens it: with both scans, for the stage diff.
    assert snap_compare(IrscopeApp(diff=diff_reports(before, after), sides=(before, after)), terminal_size=SIZE,
                        run_before=show_first_pair)


def test_kernel_view_source_with_findings_and_mix(snap_compare, report):
    async def open_source(pilot):
        await pilot.press(*["down"] * _gemm_row(report), "enter")
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.press("2")
        await pilot.pause()
        pilot.app.screen.query_one("#view-source").go_to(47)
        await pilot.pause()

    assert snap_compare(IrscopeApp(report=report, source_dirs=(str(FIXTURES / "kernels"),)),
                        terminal_size=SIZE, run_before=open_source)


def test_family_sweep(snap_compare, report):
    """`f`, then Enter on the family with the most configs: its sweep table, spills and shared findings."""
    from irscope.occupancy.families import families

    many = [f for f in families(report.kernels) if len(f.configs) > 1]
    biggest = many.index(max(many, key=lambda f: len(f.configs)))

    async def open_sweep(pilot):
        await pilot.press("f", *["down"] * biggest, "enter")
        await pilot.pause()

    assert snap_compare(IrscopeApp(report=report), terminal_size=SIZE, run_before=open_sweep)
