"""The Textual browser, driven by its pilot over real fixture scans."""

from __future__ import annotations

import asyncio

import pytest
from conftest import FIXTURES

from irscope.line_map import line_map
from irscope.pipeline import scan

pytest.importorskip("textual")

from irscope.tui.app import IrscopeApp  # noqa: E402
from irscope.tui.code_view import CodeView  # noqa: E402
from textual.widgets import DataTable, TabbedContent  # noqa: E402

SIZE = (160, 48)
SOURCES = (str(FIXTURES / "kernels"),)


@pytest.fixture(scope="module")
def report():
    return scan(FIXTURES / "caches" / "triton-3.9", jobs=1)


def _gemm_key(report):
    return next(r.kernel.key for r in report.kernels
                if r.kernel.name == "matmul_kernel" and r.kernel.target.arch == "gfx942" and r.findings)


async def _open_kernel(pilot, key):
    table = pilot.app.screen.query_one(DataTable)
    table.move_cursor(row=table.get_row_index(key))
    await pilot.press("enter")
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def test_the_kernel_table_lists_filters_and_sorts(report):
    async def run():
        app = IrscopeApp(report=report)
        async with app.run_test(size=SIZE) as pilot:
            table = app.screen.query_one(DataTable)
            assert table.row_count == len(report.kernels)
            await pilot.press("slash", *"softmax")
            await pilot.pause()
            names = {r.kernel.name for r in report.kernels if "softmax" in r.kernel.name}
            assert 0 < table.row_count == sum(r.kernel.name in names for r in report.kernels)
            await pilot.press("escape")
            await pilot.pause()
            assert table.row_count == len(report.kernels)
            app.screen.sort_column = 5  # VGPR/regs
            app.screen.reverse = True
            app.screen.refill()
            first = table.get_row_at(0)[5].plain
            values = [int(table.get_row_at(i)[5].plain.split()[0].replace(",", "")) for i in range(table.row_count)
                      if table.get_row_at(i)[5].plain[0].isdigit()]
            assert int(first.split()[0].replace(",", "")) == max(values)

    asyncio.run(run())


def test_a_rule_code_filters_to_the_kernels_with_that_finding(report):
    async def run():
        app = IrscopeApp(report=report)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("slash", *"IRS201")
            await pilot.pause()
            expected = sum(any(f.code == "IRS201" for f in r.findings) for r in report.kernels)
            assert 0 < app.screen.query_one(DataTable).row_count == expected

    asyncio.run(run())


def test_picking_a_python_line_marks_its_lines_in_every_stage(report):
    key = _gemm_key(report)
    kernel = next(r for r in report.kernels if r.kernel.key == key)
    isa = line_map(kernel, "amdgcn")
    python_line = max(set(isa.to_python.values()), key=lambda n: len(isa.lines_of(n)))

    async def run():
        app = IrscopeApp(report=report, source_dirs=SOURCES)
        async with app.run_test(size=SIZE) as pilot:
            await _open_kernel(pilot, key)
            screen = app.screen
            screen.query_one(TabbedContent).active = "source"
            source = screen.query_one("#view-source", CodeView)
            assert "def matmul_kernel(" in "\n".join(source.lines)  # found under --source
            source.focus()
            source.go_to(python_line)
            await pilot.press("enter")
            await pilot.pause()
            assert screen.query_one("#view-amdgcn", CodeView).marked == set(isa.lines_of(python_line))
            assert screen.query_one("#view-ttgir", CodeView).marked == set(
                line_map(kernel, "ttgir").lines_of(python_line))
            assert source.marked == {python_line}

    asyncio.run(run())


def test_picking_an_isa_line_jumps_to_its_python_line(report):
    key = _gemm_key(report)
    kernel = next(r for r in report.kernels if r.kernel.key == key)
    isa = line_map(kernel, "amdgcn")
    isa_line, python_line = sorted(isa.to_python.items())[len(isa.to_python) // 2]

    async def run():
        app = IrscopeApp(report=report, source_dirs=SOURCES)
        async with app.run_test(size=SIZE) as pilot:
            await _open_kernel(pilot, key)
            screen = app.screen
            screen.query_one(TabbedContent).active = "amdgcn"
            view = screen.query_one("#view-amdgcn", CodeView)
            view.focus()
            view.go_to(isa_line)
            await pilot.press("enter")
            await pilot.pause()
            assert screen.query_one(TabbedContent).active == "source"
            assert screen.query_one("#view-source", CodeView).cursor == python_line
            assert isa_line in view.marked

    asyncio.run(run())


def test_picking_a_finding_jumps_to_its_line(report):
    key = _gemm_key(report)
    kernel = next(r for r in report.kernels if r.kernel.key == key)
    first = kernel.findings[0]

    async def run():
        app = IrscopeApp(report=report, source_dirs=SOURCES)
        async with app.run_test(size=SIZE) as pilot:
            await _open_kernel(pilot, key)
            screen = app.screen
            findings = screen.query_one("#finding-list")
            findings.focus()
            findings.highlighted = 0
            await pilot.press("enter")
            await pilot.pause()
            assert first.stage in ("amdgcn", "ttgir", "ttir", "llir", "ptx", "json") and first.line is not None
            assert screen.query_one(TabbedContent).active == first.stage
            view = screen.query_one(f"#view-{first.stage}", CodeView)
            assert view.cursor == first.line and first.line in view.marked

    asyncio.run(run())


def test_the_what_if_recomputes_occupancy(report):
    from irscope.occupancy import occupancy_for

    key = _gemm_key(report)
    kernel = next(r for r in report.kernels if r.kernel.key == key)
    values = {i.name: i.value for i in kernel.occupancy.inputs}
    values["vgprs"] = 64
    expected = occupancy_for(kernel.occupancy.occupancy.arch, values).occupancy

    async def run():
        app = IrscopeApp(report=report, source_dirs=SOURCES)
        async with app.run_test(size=SIZE) as pilot:
            await _open_kernel(pilot, key)
            screen = app.screen
            screen.query_one(TabbedContent).active = "occupancy"
            await pilot.pause()
            box = screen.query_one("#what-if-vgprs")
            box.value = "64"
            box.focus()
            await pilot.press("enter")
            await pilot.pause()
            shown = _static_text(screen.query_one("#what-if-result"))
            assert f"{expected.active} of {expected.max_active}" in shown

    asyncio.run(run())


def test_diff_mode_lists_pairs_and_shows_a_pairs_changes():
    from irscope.diff import diff_reports

    before = scan(FIXTURES / "before_after" / "before", jobs=1)
    after = scan(FIXTURES / "before_after" / "after", jobs=1)
    diff = diff_reports(before, after)

    async def run():
        app = IrscopeApp(diff=diff)
        async with app.run_test(size=SIZE) as pilot:
            table = app.screen.query_one(DataTable)
            assert table.row_count == len(diff.pairs)
            await pilot.press("enter")
            await pilot.pause()
            shown = _static_text(app.screen.query_one("#details"))
            assert app.screen.pairs[0].label.split()[0] in shown

    asyncio.run(run())


def test_hostile_names_are_shown_literally(report):
    import dataclasses

    hostile = "[bold red]x[/] \x1b[31mred"
    first = report.kernels[0]
    renamed = dataclasses.replace(report, kernels=(dataclasses.replace(
        first, kernel=dataclasses.replace(first.kernel, name=hostile)),) + report.kernels[1:])

    async def run():
        app = IrscopeApp(report=renamed)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            cells = [str(app.screen.query_one(DataTable).get_row_at(i)[0]) for i in range(len(renamed.kernels))]
            shown = next(c for c in cells if "bold red" in c)
            assert "[bold red]x[/]" in shown and "\x1b" not in shown

    asyncio.run(run())


def _static_text(widget) -> str:
    from io import StringIO

    from rich.console import Console

    out = Console(file=StringIO(), width=200)
    out.print(widget.content)
    return out.file.getvalue()
