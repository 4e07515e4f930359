"""Tables that fit the terminal (issue 23): at 80, 120 and 200 columns every table's lines fit the
width, a number in a shown column is the wide table's whole, the note names exactly the hidden
columns, long names are cut in the middle, and rows come in the one documented order."""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path

import pytest
from rich.cells import cell_len
from rich.console import Console

from irscope.diff.compare import diff_reports
from irscope.pipeline.analyze import scan
from irscope.render.console import kernel_table, short_key, sort_key
from irscope.render.diff import pair_order, summary_table
from irscope.render.table import HIDDEN_PREFIX, HIDDEN_SUFFIX

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
WIDTHS = (80, 120, 200)
LONG_NAME = "triton_per_fused_native_layer_norm_backward_" + "x" * 60 + "_tail_kernel_7"


@pytest.fixture(scope="module")
def reports():
    before = scan([str(FIXTURES / "caches" / "triton-3.6")], jobs=1)
    after = scan([str(FIXTURES / "caches" / "triton-3.9")], jobs=1)
    # one kernel with a name longer than any terminal's kernel column
    first = before.kernels[0]
    renamed = dataclasses.replace(first, kernel=dataclasses.replace(first.kernel, name=LONG_NAME))
    before = dataclasses.replace(before, kernels=(renamed, *before.kernels[1:]))
    return before, after


def _parse(text: str) -> tuple[list[str], list[list[str]], list[str]]:
    """(header names, rows of cells, hidden column names) of a table drawn by render/table.py."""
    lines = text.splitlines()
    top = next(i for i, line in enumerate(lines) if line.startswith("┏"))
    header = [c.strip() for c in lines[top + 1].strip("┃").split("┃")]
    bottom = next(i for i, line in enumerate(lines) if line.startswith("└"))
    rows = [[c.strip() for c in line.strip("│").split("│")] for line in lines[top + 3:bottom]]
    after = lines[bottom + 1:]
    ends = next((i for i, line in enumerate(after) if not line or line.startswith(" ")), len(after))
    note = " ".join(after[:ends]).strip()
    hidden: list[str] = []
    if note.startswith(HIDDEN_PREFIX):
        assert note.endswith(HIDDEN_SUFFIX.strip())
        hidden = note[len(HIDDEN_PREFIX):-len(HIDDEN_SUFFIX.strip())].strip().split(", ")
    return header, rows, hidden


def _check_fits(fitted: str, wide: str, width: int, name_column: str = "kernel",
                key: str | None = "key") -> list[list[str]]:
    assert all(cell_len(line) <= width for line in fitted.splitlines()), \
        max(fitted.splitlines(), key=cell_len)
    header, rows, hidden = _parse(fitted)
    wide_header, wide_rows, wide_hidden = _parse(wide)
    assert wide_hidden == []
    assert name_column in header and (key is None or key in header)
    assert hidden == [name for name in wide_header if name not in header]  # exactly the dropped, in order
    assert header == [name for name in wide_header if name in header]  # shown columns keep their order
    assert len(rows) == len(wide_rows)
    for row, wide_row in zip(rows, wide_rows):
        whole = dict(zip(wide_header, wide_row))
        for name, cell in zip(header, row):
            if name == name_column and "…" in cell:  # cut in the middle: its start and its end kept
                head, tail = cell.split("…")
                assert whole[name].startswith(head) and whole[name].endswith(tail) and head and tail
            else:
                assert cell == whole[name], (name, cell, whole[name])  # numbers never cut
    return rows


@pytest.mark.parametrize("width", WIDTHS)
def test_scan_table_fits(reports, width):
    report = reports[0]
    fitted = kernel_table(report, width).plain
    rows = _check_fits(fitted, kernel_table(report, None).plain, width)
    if width < 200:
        assert "hidden to fit" in fitted
    # the documented order: name, arch, Triton version, key (the key column tells apart alike rows)
    assert [r[1] for r in rows] == [short_key(k.kernel.key) for k in sorted(report.kernels, key=sort_key)]
    long_rows = [r[0] for r in rows if r[0].startswith("triton_per")]
    assert len(long_rows) == 1 and long_rows[0].endswith("kernel_7") and "…" in long_rows[0]


@pytest.mark.parametrize("width", WIDTHS)
def test_diff_table_fits_with_regressions_first(reports, width):
    report = diff_reports(*reports)
    fitted = summary_table(report, width).plain
    rows = _check_fits(fitted, summary_table(report, None).plain, width)
    ordered = sorted(report.pairs, key=pair_order)
    assert [r[1] for r in rows] == [short_key(p.after_key) for p in ordered]
    ranks = [pair_order(p)[0] for p in ordered]
    assert ranks == sorted(ranks) and ranks[0] == 0  # the fixtures hold regressions: they come first
    assert "verdict" in _parse(fitted)[0]


def test_the_diff_cell_the_issue_saw_cut_is_whole_at_80(reports):
    """`308 -> 2` for 308 -> 216, `improvemen`, `sm_9`: cut cells of the old diff table."""
    fitted = summary_table(diff_reports(*reports), 80).plain
    assert "improvement" in fitted and "sm_90" in fitted
    assert all(c.count("->") == 0 or c.split("->")[1].strip() for line in fitted.splitlines()
               for c in line.split("│"))


@pytest.mark.parametrize("width", WIDTHS)
def test_findings_follow_the_table_order(reports, width):
    from irscope.render.console import render

    report = reports[0]
    out = io.StringIO()
    render(report, Console(file=out, width=width, color_system=None))
    text = out.getvalue().split("\nKernel families")[0]  # the kernels alone; a family block orders its own
    table_keys = [r[1] for r in _parse(text.split("\nFindings")[0])[1]]
    headings = [line for line in text.split("\nFindings")[1].splitlines() if line and not line.startswith(" ")]
    finding_keys = [h.split()[-1][:8] for h in headings[1:] if "  " in h]
    assert finding_keys == [k for k in table_keys if k in finding_keys]
    assert finding_keys  # the fixtures have findings


@pytest.mark.parametrize("width", WIDTHS)
def test_runs_and_passes_tables_fit(tmp_path, width):
    from irscope.pipeline.kept_runs import KeptRun
    from irscope.parsers.mlir_dump import read_dump
    from irscope.ir.pass_timeline import timelines
    from irscope.render.passes import timeline_view
    from irscope.render.runs import runs_table

    runs = [KeptRun(f"20261124-13195{i}-{'liger_kernel_ops_' * 4}-gfx942-d96{i}", tmp_path, "s.py", "gfx942",
                    0.0, i == 0, 1234 * i, 0, 10 ** (i + 3)) for i in range(3)]
    table = runs_table(runs, tmp_path, width).plain
    assert all(cell_len(line) <= width for line in table.splitlines()[1:])  # the title line holds a path
    for run in runs:
        assert f"{run.kernels:,}" in table
    dump = str(FIXTURES / "dumps" / "mlir-dump_triton-3.9_gfx942_gemm_aligned.txt.gz")
    for t in timelines(read_dump(dump)):
        view = timeline_view(t, True, width).plain.splitlines()
        # the table and its note; the heading names the dump's path and the origin lines quote MLIR types
        table = view[next(i for i, s in enumerate(view) if s.startswith("┏")):]
        table = table[:next(i for i, s in enumerate(table) if s.startswith("  In the final"))]
        rows = _check_fits("\n".join(table), timeline_view(t, True, None).plain, width, "on", key=None)
        assert [int(r[0]) for r in rows] == sorted(int(r[0]) for r in rows)  # passes in the order they ran


@pytest.mark.parametrize("width", WIDTHS)
def test_occupancy_view_fits(reports, width):
    from irscope.render.occupancy import occupancy_table

    kernel = next(r for r in reports[0].kernels if r.kernel.name == LONG_NAME)
    out = io.StringIO()
    Console(file=out, width=width, color_system=None).print(
        occupancy_table(f"{LONG_NAME * 3}  gfx942  {kernel.kernel.key}", kernel.occupancy, width))
    lines = out.getvalue().splitlines()
    assert all(cell_len(line) <= width for line in lines)
    assert "…" in lines[0] and lines[0].rstrip().endswith(kernel.kernel.key[-4:])


def test_wide_flag_shows_every_column(monkeypatch, capsys):
    from irscope.cli.main import main

    monkeypatch.setenv("COLUMNS", "80")
    path = str(FIXTURES / "caches" / "triton-3.9")
    assert main(["scan", path]) == 0
    narrow = capsys.readouterr().out
    assert "hidden to fit" in narrow
    assert all(cell_len(line) <= 80 for line in narrow.split("\nFindings")[0].splitlines())
    assert main(["scan", path, "--wide"]) == 0
    wide = capsys.readouterr().out
    assert "hidden to fit" not in wide and "SGPR" in wide and "scratch B" in wide


def test_diff_wide_flag_shows_every_column(monkeypatch, capsys):
    from irscope.cli.main import main

    monkeypatch.setenv("COLUMNS", "80")
    paths = [str(FIXTURES / "caches" / "triton-3.6"), str(FIXTURES / "caches" / "triton-3.9")]
    main(["diff", *paths])
    narrow = capsys.readouterr().out
    table = narrow[:narrow.index("(--wide shows all)")]
    assert all(cell_len(line) <= 80 for line in table.splitlines()) and "kernel" in table
    main(["diff", *paths, "--wide"])
    wide = capsys.readouterr().out
    assert "hidden to fit" not in wide and "narrowest st" in wide


@pytest.mark.parametrize("width", WIDTHS)
def test_a_many_config_corpus_fits(sweep_reports, width, monkeypatch, capsys):
    """fixtures/sweep/: 84 autotune configs a run. The per-config scan table (`--all`), the diff of the
    H100 run (Triton 3.6) against the sm_90 --target run (3.9), 84 pairs, and `irscope occupancy` of
    every config fit the width; the family view's own test is in tests/test_families.py."""
    from irscope.cli.main import main

    report = sweep_reports["sm_90"]
    rows = _check_fits(kernel_table(report, width).plain, kernel_table(report, None).plain, width)
    assert len(rows) == 84 and len({r[1] for r in rows}) == 84  # the key tells the configs apart
    diff = diff_reports(sweep_reports["sm_90-h100"], report)
    assert len(diff.pairs) == 84
    _check_fits(summary_table(diff, width).plain, summary_table(diff, None).plain, width)
    monkeypatch.setenv("COLUMNS", str(width))
    cache = str(next(Path(p) for p in report.roots))
    assert main(["occupancy", cache]) in (0, 1)
    out = capsys.readouterr().out
    assert out.count("matmul_kernel") >= 84
    assert all(cell_len(line) <= width for line in out.splitlines())
