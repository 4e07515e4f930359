"""The Textual browser, driven by its pilot over real fixture scans."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest
from conftest import FIXTURES, require_nvdisasm

from irscope.ir.line_map import line_map
from irscope.pipeline.analyze import scan

pytest.importorskip("textual")

from irscope.tui.app import IrscopeApp  # noqa: E402
from irscope.tui.code_view import CodeView  # noqa: E402
from irscope.tui.kernel_table import KernelTable  # noqa: E402
from textual.widgets import DataTable, TabbedContent  # noqa: E402

SIZE = (160, 48)
SOURCES = (str(FIXTURES / "kernels"),)


@pytest.fixture(scope="module")
def report():
    return scan(FIXTURES / "caches" / "triton-3.9", jobs=1)


def _gemm_key(report):
    return next(r.kernel.key for r in report.kernels
                if r.kernel.name == "matmul_kernel" and r.kernel.target.arch == "gfx942" and r.findings)


def _column(name: str) -> int:
    from irscope.tui.kernels import TABLE_COLUMNS

    return next(i for i, c in enumerate(TABLE_COLUMNS) if c.name == name)


async def _open_kernel(pilot, key):
    pilot.app.screen.query_one(KernelTable).move_to(key)
    await pilot.press("enter")
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def test_the_kernel_table_lists_filters_and_sorts(report):
    async def run():
        app = IrscopeApp(report=report)
        async with app.run_test(size=SIZE) as pilot:
            table = app.screen.query_one(KernelTable)
            assert table.row_count == len(report.kernels)
            await pilot.press("slash", *"softmax")
            await pilot.pause()
            names = {r.kernel.name for r in report.kernels if "softmax" in r.kernel.name}
            assert 0 < table.row_count == sum(r.kernel.name in names for r in report.kernels)
            await pilot.press("escape")
            await pilot.pause()
            assert table.row_count == len(report.kernels)
            vgprs = _column("VGPR/regs")
            app.screen.sort_column = vgprs
            app.screen.reverse = True
            app.screen.refill()
            column = [table.cells[key][vgprs] for key in table.keys]
            values = [int(cell.split()[0].replace(",", "")) for cell in column if cell[0].isdigit()]
            assert int(column[0].split()[0].replace(",", "")) == max(values) > min(values)

    asyncio.run(run())


def test_a_rule_code_filters_to_the_kernels_with_that_finding(report):
    async def run():
        app = IrscopeApp(report=report)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("slash", *"IRS201")
            await pilot.pause()
            expected = sum(any(f.code == "IRS201" for f in r.findings) for r in report.kernels)
            assert 0 < app.screen.query_one(KernelTable).row_count == expected

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
    from irscope.occupancy.calculator import occupancy_for

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
    from irscope.diff.compare import diff_reports

    before = scan(FIXTURES / "before_after" / "before", jobs=1)
    after = scan(FIXTURES / "before_after" / "after", jobs=1)
    diff = diff_reports(before, after)

    async def run():
        app = IrscopeApp(diff=diff)
        async with app.run_test(size=SIZE) as pilot:
            table = app.screen.query_one(DataTable)
            assert table.row_count == len(diff.pairs)
            instructions = [table.get_row_at(i)[5] for i in range(table.row_count)]
            assert all(" -> " in c.plain and c.style == "green" for c in instructions)  # every pair got shorter
            await pilot.press("enter")
            await pilot.pause()
            shown = _static_text(app.screen.query_one("#details"))
            assert app.screen.pairs[0].label.split()[0] in shown

    asyncio.run(run())


def test_hostile_names_are_shown_literally(report):
    hostile = "[bold red]x[/] \x1b[31mred"
    first = report.kernels[0]
    renamed = dataclasses.replace(report, kernels=(dataclasses.replace(
        first, kernel=dataclasses.replace(first.kernel, name=hostile)),) + report.kernels[1:])

    async def run():
        app = IrscopeApp(report=renamed)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            table = app.screen.query_one(KernelTable)
            lines = ["".join(seg.text for seg in table.render_line(y)) for y in range(table.size.height)]
            shown = next(line for line in lines if "bold red" in line)
            assert "[bold red]x[/]" in shown and "\x1b" not in "".join(lines)

    asyncio.run(run())


def _static_text(widget) -> str:
    from io import StringIO

    from rich.console import Console

    out = Console(file=StringIO(), width=200)
    out.print(widget.content)
    return out.file.getvalue()


def test_the_table_opens_before_the_results_and_fills_in_as_they_arrive(report, tmp_path):
    from irscope.pipeline.analyze import ScanRun
    from irscope.tui.kernels import PENDING

    run = ScanRun(FIXTURES / "caches" / "triton-3.9", index=tmp_path, jobs=2)
    assert run.found.kernels and len(run._analyses.work) == len(run.found.kernels)  # nothing held yet

    async def go():
        app = IrscopeApp(run=run)
        async with app.run_test(size=SIZE) as pilot:
            screen = app.screen
            table = screen.query_one(KernelTable)
            assert table.row_count == len(report.kernels)  # every kernel, before any result
            key = table.keys[0]
            if key in screen.pending:
                assert table.cells[key][_column("VGPR/regs")] is PENDING
                await pilot.press("enter")  # a kernel still analyzed: said so, not opened
                await pilot.pause()
                assert app.screen is screen
            for _ in range(600):
                if screen.report is not None:
                    break
                await pilot.pause(0.05)
            assert not screen.pending and screen.report == dataclasses.replace(
                report, created=screen.report.created)
            assert "analyzing" not in str(screen.query_one("#title").content)
            assert all(PENDING not in cells for cells in table.cells.values())

    asyncio.run(go())


def test_the_pass_timeline_shows_what_the_picked_pass_changed(report):
    import gzip
    import sys

    from irscope.pipeline.runner import attach_timelines
    from irscope.tui.passes_view import PassesPanel

    dump = FIXTURES / "dumps" / "mlir-dump_triton-3.9_gfx942_add.txt.gz"
    with_passes = attach_timelines(report, dump, sys.stderr)
    kernel = next(r for r in with_passes.kernels
                  if r.passes is not None and r.kernel.name == "add_kernel" and r.kernel.target.arch == "gfx942")
    dump_lines = gzip.decompress(dump.read_bytes()).decode().splitlines()

    async def run():
        app = IrscopeApp(report=with_passes)
        async with app.run_test(size=SIZE) as pilot:
            await _open_kernel(pilot, kernel.kernel.key)
            app.screen.query_one(TabbedContent).active = "passes"
            panel = app.screen.query_one(PassesPanel)
            await pilot.app.workers.wait_for_complete()
            await pilot.pause()
            first_change = next(p for p in kernel.passes.passes if p.changed)
            heading = str(app.screen.query_one("#pass-heading").content)
            assert f"pass {first_change.index} {first_change.name}: IR before it at" in heading
            view = panel.query_one("#view-pass", CodeView)
            changed = [n for n, line in enumerate(view.lines, 1) if line[:1] in "+-" and n in view.mix_gutter]
            assert changed
            for n in changed:  # every line shown is the dump's line that its gutter names
                dump_line = int(view.mix_gutter[n].split(":")[1])
                assert view.lines[n - 1][1:] == dump_lines[dump_line - 1].expandtabs(8)
            unchanged = next(p for p in kernel.passes.passes if p.changed is False)
            panel.query_one("#pass-list").highlighted = kernel.passes.passes.index(unchanged)
            await pilot.pause()
            assert "it changed nothing" in str(app.screen.query_one("#pass-heading").content)

    asyncio.run(run())


def test_the_source_tab_annotates_python_lines_with_their_findings(report):
    key = _gemm_key(report)
    kernel = next(r for r in report.kernels if r.kernel.key == key)
    finding = next(f for f in kernel.findings if f.python_line is not None)

    async def run():
        app = IrscopeApp(report=report, source_dirs=SOURCES)
        async with app.run_test(size=SIZE) as pilot:
            await _open_kernel(pilot, key)
            view = app.screen.query_one("#view-source", CodeView)
            assert finding.code in view.mix_gutter[finding.python_line]
            assert finding.python_line in view.line_styles
            clean = [n for n in view.mix_gutter if not any(f.python_line == n for f in kernel.findings)]
            assert clean and all(n not in view.line_styles for n in clean)

    asyncio.run(run())


def test_stage_views_are_colored_by_syntax_and_keep_the_text(report):
    key = _gemm_key(report)

    async def run():
        app = IrscopeApp(report=report, source_dirs=SOURCES)
        async with app.run_test(size=SIZE) as pilot:
            await _open_kernel(pilot, key)
            for stage, token in (("ttgir", "tt.dot"), ("amdgcn", "s_waitcnt"), ("llir", "getelementptr"),
                                 ("source", "tl.dot")):
                view = app.screen.query_one(f"#view-{stage}", CodeView)
                line = next(n for n, text in enumerate(view.lines, 1) if token in text)
                segments = list(view._build(line))
                assert "".join(s.text for s in segments).endswith(view.lines[line - 1])
                assert len({s.style.color for s in segments if s.style and s.style.color}) >= 2, stage

    asyncio.run(run())


def test_an_nvidia_kernel_has_a_sass_tab_with_the_mix_of_scan_sass(tmp_path):
    require_nvdisasm()
    report = scan(FIXTURES / "caches" / "triton-3.9", jobs=1, sass=True)
    kernel = next(r for r in report.kernels if r.kernel.target.arch == "sm_90" and any(m.isa == "sass" for m in r.mix))
    mix = next(m for m in kernel.mix if m.isa == "sass")

    async def run():
        app = IrscopeApp(report=report)
        async with app.run_test(size=SIZE) as pilot:
            await _open_kernel(pilot, kernel.kernel.key)
            await app.workers.wait_for_complete()
            await pilot.pause()
            view = app.screen.query_one("#view-sass", CodeView)
            loads = [n for row in mix.rows if row.kind == "global_load" for n in row.lines]
            assert loads
            for n in loads:  # the mix's line numbers (from scan --sass) fit the text the tab shows
                assert "LDG" in view.lines[n - 1] and view.mix_gutter[n].startswith("gload")

    asyncio.run(run())


def test_the_name_column_stays_and_the_key_tells_same_named_kernels_apart(report):
    from irscope.render.console import short_key

    async def run():
        app = IrscopeApp(report=report)
        async with app.run_test(size=(80, 40)) as pilot:  # narrower than the table: it scrolls right
            table = app.screen.query_one(KernelTable)
            await pilot.pause()
            names = [report_by_key[key].kernel.name for key in table.keys]
            twins = next(n for n in names if names.count(n) > 1)
            rows = [i for i, n in enumerate(names) if n == twins][:2]
            keys = [short_key(table.keys[i]) for i in rows]
            assert keys[0] != keys[1]
            lines = ["".join(s.text for s in table.render_line(1 + i)) for i in rows]
            assert all(k in line for k, line in zip(keys, lines))  # the key shows beside the name
            table.scroll_to(x=table.virtual_size.width, animate=False)
            await pilot.pause()
            assert table.scroll_offset.x > 0
            header = "".join(s.text for s in table.render_line(0))
            assert header.startswith("kernel") and "info" in header  # the name pinned, the last column shown
            for i in rows:
                assert "".join(s.text for s in table.render_line(1 + i)).startswith(twins[:8])

    report_by_key = {r.kernel.key: r for r in report.kernels}
    asyncio.run(run())


@pytest.mark.parametrize("key, status", [(b"\x03", 130), (b"\x11", 0)], ids=["ctrl-c", "ctrl-q"])
def test_ctrl_c_quits_irscope_tui_with_130_and_ctrl_q_with_0(tmp_path, key, status):
    """End to end: the command in a terminal (a pty), the key typed, the process's exit status."""
    import os
    import pty
    import select
    import sys
    import time

    pid, fd = pty.fork()
    if pid == 0:  # the child: irscope tui on a small cache, its result index kept out of the user's
        os.environ.update(XDG_CACHE_HOME=str(tmp_path), TERM="xterm-256color", COLUMNS="120", LINES="40")
        os.execv(sys.executable, [sys.executable, "-m", "irscope", "tui", str(FIXTURES / "before_after" / "before"),
                                  "--no-cache", "-j", "1"])
    seen, deadline = b"", time.monotonic() + 60
    try:
        while b"kernels under" not in seen and time.monotonic() < deadline:
            if select.select([fd], [], [], 0.5)[0]:
                try:
                    seen += os.read(fd, 65536)
                except OSError:
                    break
        assert b"kernels under" in seen, seen[-2000:]
        os.write(fd, key)
        while time.monotonic() < deadline:  # keep reading: a child blocked on a full pty never exits
            done, code = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if select.select([fd], [], [], 0.2)[0]:
                try:
                    os.read(fd, 65536)
                except OSError:
                    pass
        else:
            os.kill(pid, 9)
            pytest.fail("irscope tui did not quit")
    finally:
        os.close(fd)
    assert os.waitstatus_to_exitcode(code) == status


def test_switching_tabs_focuses_the_tabs_list_or_text(report):
    from textual.widgets import OptionList

    async def run():
        app = IrscopeApp(report=report, source_dirs=SOURCES)
        async with app.run_test(size=SIZE) as pilot:
            await _open_kernel(pilot, _gemm_key(report))
            screen = app.screen
            await pilot.press("right_square_bracket")  # Findings -> Source
            await pilot.pause()
            assert screen.focused is screen.query_one("#view-source")
            await pilot.press("down", "down")  # arrows act on the tab shown at once
            assert screen.query_one("#view-source").cursor == 3
            await pilot.press("left_square_bracket")
            await pilot.pause()
            assert screen.focused is screen.query_one("#finding-list", OptionList)
            await pilot.press("slash", "v", "left_square_bracket")  # the search box still types brackets
            assert screen.query_one("#search").value == "v[" and screen.query_one(TabbedContent).active == "findings"
            await pilot.press("enter")  # searched, the box hidden
            screen.query_one(TabbedContent).active = "layouts"  # as a click on the tab does
            await pilot.pause()
            assert screen.focused is not None and screen.query_one("#layouts") in screen.focused.ancestors_with_self

    asyncio.run(run())


def test_the_occupancy_tab_takes_digits_and_backspace_and_says_the_what_if_was_typed_here(report):
    key = _gemm_key(report)

    async def run():
        app = IrscopeApp(report=report, source_dirs=SOURCES)
        async with app.run_test(size=SIZE) as pilot:
            await _open_kernel(pilot, key)
            screen = app.screen
            await pilot.press(str(screen._tab_ids().index("occupancy") + 1))  # its tab by number
            await pilot.pause()
            assert screen.focused is screen.query(".what-if-field Input").first()  # the first field
            await pilot.press("tab")
            box = screen.query_one("#what-if-vgprs")
            assert screen.focused is box
            box.value = ""
            await pilot.press("1", "2", "9", "backspace", "8")  # digits type; Backspace deletes, not closes
            await pilot.pause()
            assert app.screen is screen and screen.query_one(TabbedContent).active == "occupancy"
            assert box.value == "128"
            await pilot.press("enter")
            await pilot.pause()
            shown = _static_text(screen.query_one("#what-if-result"))
            assert "vgprs = 128  what-if (typed here)" in shown and "command line" not in shown
            await pilot.press("right_square_bracket")  # `]` is no number: from a field it still switches tabs
            await pilot.pause()
            assert screen.query_one(TabbedContent).active != "occupancy" and box.value == "128"
            await pilot.press("left_square_bracket")
            await pilot.pause()
            assert screen.query_one(TabbedContent).active == "occupancy"
            screen.query_one("#occupancy").query_one("OccupancyPanel").focus()  # off the fields (a click beside)
            await pilot.press("1", "backspace")
            await pilot.pause()
            assert app.screen is screen and screen.query_one(TabbedContent).active == "occupancy"
            await pilot.press("left_square_bracket", "backspace")  # elsewhere Backspace still goes back
            await pilot.pause()
            assert app.screen is not screen

    asyncio.run(run())


def test_the_findings_tab_shows_each_findings_fix(report):
    from textual.widgets import OptionList

    kernel = next(r for r in report.kernels if r.kernel.key == _gemm_key(report))

    async def run():
        app = IrscopeApp(report=report, source_dirs=SOURCES)
        async with app.run_test(size=SIZE) as pilot:
            await _open_kernel(pilot, kernel.kernel.key)
            listing = app.screen.query_one("#finding-list", OptionList)
            labels = [listing.get_option_at_index(i).prompt.plain for i in range(listing.option_count)]
            assert len(labels) == len(kernel.findings)
            for label, finding in zip(labels, kernel.findings):
                assert f"fix: {finding.fix}" in label

    asyncio.run(run())


def test_diff_mode_shows_the_stage_diff_opens_both_kernels_and_names_the_unpaired():
    from irscope.diff.compare import diff_reports
    from irscope.diff.stage import stage_diff
    from irscope.tui.kernel_view import KernelScreen

    before = scan(FIXTURES / "before_after" / "before", jobs=1)
    after = scan(FIXTURES / "before_after" / "after", jobs=1)
    dropped = after.kernels[-1]  # a kernel the after build no longer has: its partner is unpaired
    after = dataclasses.replace(after, kernels=after.kernels[:-1])
    diff = diff_reports(before, after)
    assert diff.only_before

    async def run():
        app = IrscopeApp(diff=diff, sides=(before, after))
        async with app.run_test(size=SIZE) as pilot:
            screen = app.screen
            unpaired = _static_text(screen.query_one("#unpaired"))
            for key in diff.only_before:
                assert next(r.kernel.name for r in before.kernels if r.kernel.key == key) in unpaired
            assert dropped.kernel.name in unpaired
            await pilot.press("enter")
            await pilot.app.workers.wait_for_complete()
            await pilot.pause()
            p = screen.pairs[0]
            old = next(r for r in before.kernels if r.kernel.key == p.before_key)
            new = next(r for r in after.kernels if r.kernel.key == p.after_key)
            lines = stage_diff(old.kernel.artifact(screen.stage), new.kernel.artifact(screen.stage))
            shown = _static_text(screen.query_one("#stage-diff"))
            assert f"{screen.stage} diff" in shown and lines and lines[-1].strip() in shown
            first = screen.stage
            await pilot.press("t")  # the next stage
            await pilot.app.workers.wait_for_complete()
            await pilot.pause()
            assert screen.stage != first and f"{screen.stage} diff" in _static_text(screen.query_one("#stage-diff"))
            await pilot.press("a")
            await pilot.pause()
            assert isinstance(app.screen, KernelScreen) and app.screen.report is new
            await pilot.press("escape", "b")
            await pilot.pause()
            assert isinstance(app.screen, KernelScreen) and app.screen.report is old

    asyncio.run(run())


def test_f_lists_the_families_enter_shows_a_sweep_and_opens_a_configs_kernel(report):
    """The family view: the list, a family's config sweep, a config's kernel, and back with Esc each step."""
    from irscope.occupancy.families import families
    from irscope.tui.families_view import FamiliesScreen, FamilyScreen
    from irscope.tui.kernel_view import KernelScreen
    from irscope.tui.kernels import KernelsScreen

    many = [f for f in families(report.kernels) if len(f.configs) > 1]
    biggest = max(many, key=lambda f: len(f.configs))
    assert len(biggest.configs) > 2 and biggest.findings

    async def run():
        app = IrscopeApp(report=report, source_dirs=SOURCES)
        async with app.run_test(size=SIZE) as pilot:
            shown = {(a.binding.key, a.binding.description) for a in app.screen.active_bindings.values()
                     if a.binding.show}
            assert ("f", "Families") in shown  # in the footer
            await pilot.press("f")
            await pilot.pause()
            screen = app.screen
            assert isinstance(screen, FamiliesScreen)
            table = screen.query_one(KernelTable)
            assert screen.focused is table and table.row_count == len(many)
            rows = [table.cells[k] for k in table.keys]
            assert [(r[0], r[1], r[3]) for r in rows] == [(f.name, f.arch, str(len(f.configs))) for f in many]
            await pilot.press(*["down"] * many.index(biggest), "enter")
            await pilot.pause()
            sweep = app.screen
            assert isinstance(sweep, FamilyScreen) and sweep.family == biggest
            configs = sweep.query_one(KernelTable)
            assert sweep.focused is configs and configs.keys == [c.kernel for c in biggest.configs]
            assert [configs.cells[k][0] for k in configs.keys][:2] == ["#1", "#2"]
            details = " ".join(_static_text(sweep.query_one("#sweep-details")).split())
            for shared in biggest.findings:  # each rule and Python line once, with how many configs have it
                same_rule = sum(s.code == shared.code for s in biggest.findings)
                assert details.count(f"{shared.severity} {shared.code} {shared.slug}") == same_rule
                assert f"in {len(shared.configs)} of {len(biggest.configs)} configs" in details
            await pilot.press("down", "enter")
            await pilot.pause()
            await app.workers.wait_for_complete()
            assert isinstance(app.screen, KernelScreen) and app.screen.report.kernel.key == biggest.configs[1].kernel
            await pilot.press("escape")
            await pilot.pause()
            assert app.screen is sweep and sweep.focused is configs and configs.cursor == 1
            await pilot.press("escape")
            await pilot.pause()
            assert app.screen is screen and screen.focused is table
            await pilot.press("escape")
            await pilot.pause()
            assert isinstance(app.screen, KernelsScreen)

    asyncio.run(run())


def test_the_families_list_waits_for_a_scan_under_way(report):
    """`f` before every kernel is analyzed says so rather than grouping half-known kernels."""
    from irscope.tui.kernels import KernelsScreen

    async def run():
        app = IrscopeApp(report=report)
        async with app.run_test(size=SIZE) as pilot:
            screen = app.screen
            screen.pending = {report.kernels[0].kernel.key}
            await pilot.press("f")
            await pilot.pause()
            assert app.screen is screen and isinstance(screen, KernelsScreen)
            assert any("analyzed" in str(n.message) for n in app._notifications)

    asyncio.run(run())


@pytest.mark.parametrize("key, status", [("ctrl+c", 130), ("ctrl+q", 0)], ids=["ctrl-c", "ctrl-q"])
def test_the_family_sweep_quits_as_every_screen_does(report, key, status):
    from irscope.tui.families_view import FamilyScreen

    async def run():
        app = IrscopeApp(report=report)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("f", "enter")
            await pilot.pause()
            assert isinstance(app.screen, FamilyScreen)
            await pilot.press(key)
            await pilot.pause()
        return app.return_code

    assert asyncio.run(run()) == status
