"""Hostile input in one kernel of a cache (issue 22, items 7-10) must not lose the run.

Each test copies two real fixture kernels (a gfx942 GEMM, an sm_90 kernel) into tmp_path and edits
only the one name or metadata field under test: a directory name that is not UTF-8, a lone surrogate
escape (`\\ud800`) in the json, a list or object as an option, an option of 2**63 or more. This is
hand-made malformed input, never IR. Then the CLI runs as a user would (the default scan with the
result index, `--no-cache` with every export, diff, occupancy, the TUI), and each must exit as for
any warning, report the other kernel, and name the hostile file in a problem.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest
from conftest import copy_tree, kernel_dirs

from irscope.cli.main import main
from irscope.render.exports import pyarrow_installed
from irscope.model.report import Report

pytest.importorskip("pandas")


@pytest.fixture
def two_kernels(manifest, tmp_path, monkeypatch) -> tuple[Path, Path]:
    """(cache, the GEMM's hash directory) — a fresh result index for this test alone."""
    monkeypatch.setenv("IRSCOPE_CACHE_DIR", str(tmp_path / "irscope-home"))
    gemm = kernel_dirs(manifest, cache="caches/triton-3.6", fixture="gemm_mfma32", target_arch="gfx942")[0]
    other = kernel_dirs(manifest, cache="caches/triton-3.6", fixture="spill", target_arch="sm_90")[0]
    cache = tmp_path / "cache"
    copy_tree(other, cache / other.name)
    return cache, copy_tree(gemm, cache / gemm.name)


def _edit_json(hashdir: Path, edit) -> Path:
    """Rewrite the kernel's metadata json with `edit(data)` applied; json.dumps writes a lone surrogate
    as its `\\udXXX` escape, as a hostile file would hold it."""
    meta = next(p for p in hashdir.glob("*.json") if not p.name.startswith("__grp__"))
    data = json.loads(meta.read_text())
    edit(data)
    meta.write_text(json.dumps(data))
    return meta


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main([str(a) for a in argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


def _exports(out: Path) -> list[str]:
    flags = ["--json", out / "r.json", "--csv", out / "r.csv", "--markdown", out / "r.md", "--sarif", out / "r.sarif"]
    return flags + (["--parquet", out / "r.parquet"] if pyarrow_installed() else [])


def _assert_every_export(out: Path, names: set[str]) -> Report:
    """Every export written, as UTF-8; the JSON report loads back with both kernels."""
    for name in ("r.json", "r.csv", "r-findings.csv", "r.md", "r.sarif"):
        (out / name).read_bytes().decode("utf-8")  # strict: a lone surrogate could not have been written
    if pyarrow_installed():
        assert (out / "r.parquet").stat().st_size and (out / "r-findings.parquet").stat().st_size
    report = Report.load(out / "r.json")
    assert {r.kernel.name for r in report.kernels} == names
    json.loads((out / "r.sarif").read_text())
    return report


def _scan_everything(capsys, cache: Path, out: Path, names: set[str], problem_path: str, expected_rc: int = 0):
    """The default scan twice (the index written, then read), then --no-cache with every export."""
    for _ in range(2):
        rc, stdout, stderr = _run(capsys, "scan", cache)
        assert rc == expected_rc, stderr
        assert "internal error" not in stderr
        assert "2 kernels" in stdout and all(n in stdout for n in names)
        assert problem_path in stdout.replace("\n", "")
    out.mkdir()
    rc, _, stderr = _run(capsys, "scan", cache, "--no-cache", *_exports(out))
    assert rc == expected_rc, stderr
    return _assert_every_export(out, names)


# Item 7: a file or directory name that is not UTF-8.

def test_hostile_input_non_utf8_directory_name_scans_indexes_and_exports(two_kernels, tmp_path, capsys):
    cache, gemm = two_kernels
    bad = os.fsdecode(bytes(cache) + b"/bad\xff")
    os.rename(gemm, bad)
    report = _scan_everything(capsys, cache, tmp_path / "out", {"matmul_kernel", "spill_kernel"}, "bad\\udcff")
    gemm_report = next(r for r in report.kernels if r.kernel.name == "matmul_kernel")
    assert gemm_report.kernel.directory == bad  # the saved report still names the directory on disk
    assert any(p.path == bad and "not UTF-8" in p.message for p in gemm_report.problems)
    assert "bad%FF/" in (tmp_path / "out" / "r.sarif").read_text()  # the URI holds the byte itself
    assert "bad\\udcff" in (tmp_path / "out" / "r.csv").read_text()
    rc, stdout, _ = _run(capsys, "occupancy", cache)
    assert rc == 0 and "matmul_kernel" in stdout and "spill_kernel" in stdout


def test_hostile_input_non_utf8_file_name_is_read_and_reported(two_kernels, tmp_path, capsys):
    cache, gemm = two_kernels
    ttir = next(gemm.glob("*.ttir"))
    bad = os.fsdecode(bytes(gemm) + b"/matmul\xfekernel.ttir")  # one more kernel's IR, beside the GEMM's
    (tmp_path / "out").mkdir()
    Path(bad).write_bytes(ttir.read_bytes())
    rc, stdout, stderr = _run(capsys, "scan", cache, "--no-cache", *_exports(tmp_path / "out"))
    assert rc == 0 and "internal error" not in stderr, stderr
    report = _assert_every_export(tmp_path / "out", {"matmul_kernel", "spill_kernel", "matmul\udcfekernel"})
    assert any(p.path == bad and "not UTF-8" in p.message for r in report.kernels for p in r.problems)
    assert f"{gemm}/matmul\\udcfekernel.ttir" in stdout.replace("\n", "")


def test_hostile_input_non_utf8_directory_name_in_the_tui(two_kernels, tmp_path):
    pytest.importorskip("textual")
    from irscope.pipeline.analyze import ScanRun
    from irscope.tui.app import IrscopeApp
    from irscope.tui.kernel_table import KernelTable

    cache, gemm = two_kernels
    os.rename(gemm, os.fsdecode(bytes(cache) + b"/bad\xff"))
    run = ScanRun(cache, index=tmp_path / "index", jobs=1)

    async def go():
        app = IrscopeApp(run=run)
        async with app.run_test(size=(160, 48)) as pilot:
            screen = app.screen
            for _ in range(600):
                if screen.report is not None:
                    break
                await pilot.pause(0.05)
            assert screen.report is not None and len(screen.report.kernels) == 2
            table = screen.query_one(KernelTable)
            lines = "".join(seg.text for y in range(table.size.height) for seg in table.render_line(y))
            assert "matmul_kernel" in lines and "spill_kernel" in lines
            assert any(r.kernel.directory.endswith("bad\udcff") for r in screen.report.kernels)

    try:
        asyncio.run(go())
    finally:
        run.close()


# Item 8: a lone surrogate (`"\ud800"`) anywhere in one kernel's json.

@pytest.mark.parametrize("field", ["name", "triton_version", "hash", "a key"])
def test_hostile_input_lone_surrogate_in_metadata(two_kernels, tmp_path, capsys, field):
    cache, gemm = two_kernels
    before = copy_tree(cache, tmp_path / "before")  # the same kernels, untouched, for diff

    def edit(data):
        if field == "a key":
            data["debug\ud800"] = data.pop("debug")
        else:
            data[field] += "\ud800"

    meta = _edit_json(gemm, edit)
    assert "\\ud800" in meta.read_text()
    name = "matmul_kernel\\ud800" if field == "name" else "matmul_kernel"
    report = _scan_everything(capsys, cache, tmp_path / "out", {name, "spill_kernel"}, str(meta))
    gemm_report = next(r for r in report.kernels if r.kernel.name == name)
    assert any(p.path == str(meta) and "lone surrogate" in p.message for p in gemm_report.problems)
    if field == "triton_version":
        assert gemm_report.kernel.triton_version.value == "3.6.0\\ud800"

    rc, stdout, stderr = _run(capsys, "occupancy", cache)
    assert rc == 0 and "spill_kernel" in stdout, stderr
    rc, stdout, stderr = _run(capsys, "diff", before, cache, "--json", tmp_path / "diff.json")
    assert rc == 0, stderr
    pairs = json.loads((tmp_path / "diff.json").read_text())["pairs"]
    assert len(pairs) == (1 if field == "name" else 2)  # a renamed kernel is no longer paired by name


# Item 9: a list or an object where Triton writes a number.

def test_hostile_input_object_and_list_options_diff_and_tui_diff(two_kernels, tmp_path, capsys):
    cache, gemm = two_kernels
    before = copy_tree(cache, tmp_path / "before")

    def edit(data):
        data["num_stages"] = {}
        data["kpack"] = [1]
        data["enable_fp_fusion"] = [[]]

    meta = _edit_json(gemm, edit)
    _scan_everything(capsys, cache, tmp_path / "out", {"matmul_kernel", "spill_kernel"}, str(meta))
    rc, stdout, stderr = _run(capsys, "scan", cache)
    assert "`num_stages` is an object, not an integer: ignored" in stdout
    for sides in ((before, cache), (cache, cache)):
        rc, stdout, stderr = _run(capsys, "diff", *sides, "--json", tmp_path / "diff.json")
        assert rc == 0 and "internal error" not in stderr, stderr
        assert len(json.loads((tmp_path / "diff.json").read_text())["pairs"]) == 2

    pytest.importorskip("textual")
    from irscope.diff.compare import diff_reports
    from irscope.pipeline.analyze import scan
    from irscope.tui.app import IrscopeApp
    from textual.widgets import DataTable

    diff = diff_reports(scan(before, jobs=1), scan(cache, jobs=1))  # what `tui --diff` does

    async def go():
        async with IrscopeApp(diff=diff).run_test(size=(160, 48)) as pilot:
            await pilot.pause()
            assert pilot.app.screen.query_one(DataTable).row_count == 2

    asyncio.run(go())


# Item 10: an option of 2**63 or more.

def test_hostile_input_option_beyond_int64_every_export_written(two_kernels, tmp_path, capsys):
    cache, gemm = two_kernels

    def edit(data):
        data["num_warps"] = 2**63
        data["shared"] = 10**30

    meta = _edit_json(gemm, edit)
    report = _scan_everything(capsys, cache, tmp_path / "out", {"matmul_kernel", "spill_kernel"}, str(meta))
    gemm_report = next(r for r in report.kernels if r.kernel.name == "matmul_kernel")
    messages = [p.message for p in gemm_report.problems if p.path == str(meta)]
    assert "`num_warps` is 9223372036854775808, out of any option's range: ignored" in messages
    assert any(m.startswith("`shared` is an integer of 31 digits") for m in messages)
    # The json's num_warps ignored, the TTGIR's is used (ttg.num-warps); `shared` has no other source.
    assert gemm_report.kernel.options.num_warps.origin.path.endswith(".ttgir")
    assert gemm_report.kernel.options.shared is None
    from irscope.model.frames import read_csv

    frame = read_csv(tmp_path / "out" / "r.csv")
    gemm_row = frame[frame["name"] == "matmul_kernel"]
    assert gemm_row["shared_bytes"].isna().all() and (gemm_row["num_warps"] == 4).all()
    # The GEMM's occupancy needs `shared`: without it, that kernel's is unknown (exit 3), the other's shown.
    rc, stdout, stderr = _run(capsys, "occupancy", cache)
    assert rc == 3 and "spill_kernel" in stdout and gemm.name in stderr


def test_hostile_input_int64_overflow_in_a_saved_report_still_makes_a_frame(two_kernels):
    """A saved report is untrusted too: a number no reader would pass is <NA> in the frame, not an error."""
    import dataclasses

    from irscope.model.kernel import Fact, Origin
    from irscope.pipeline.analyze import scan
    from irscope.model.frames import kernels_frame

    cache, _ = two_kernels
    report = scan(cache, jobs=1)
    first = report.kernels[0]
    huge = Fact(2**63, Origin("hostile.json"))
    options = dataclasses.replace(first.kernel.options, num_warps=huge, shared=huge)
    hostile = dataclasses.replace(report, kernels=(dataclasses.replace(
        first, kernel=dataclasses.replace(first.kernel, options=options, name="x\ud800")),) + report.kernels[1:])
    saved = Report.from_json(hostile.to_json())
    frame = kernels_frame(saved)
    assert len(frame) == 2 and frame["num_warps"].isna()[0] and frame["name"][0] == "x\\ud800"


# Item 14: a kernel name of 10 MB (hostile input).

def test_hostile_input_10mb_kernel_name_gives_a_bounded_console_report(two_kernels, tmp_path, capsys):
    from irscope.pipeline.analyze import scan
    from irscope.pytest_plugin import kernel_node_name

    cache, gemm = two_kernels
    huge = "matmul_kernel" + "\x1b]0;x" * 2_000_000  # 10 MB, with an OSC 0 (window title) in every step
    _edit_json(gemm, lambda data: data.update(name=huge))
    rc, stdout, stderr = _run(capsys, "scan", cache, "--no-cache", "--json", tmp_path / "r.json")
    assert rc == 0 and "spill_kernel" in stdout and "\x1b]" not in stdout
    assert len(stdout) < 20_000, f"{len(stdout):,} characters printed"  # was 120 MB, for a 10 MB name
    assert "…[9,999,813 characters]…" in stdout
    # Saved reports are data: they keep the name whole.
    saved = json.loads((tmp_path / "r.json").read_text())
    assert huge in {k["kernel"]["name"] for k in saved["kernels"]}
    for argv in (("occupancy", cache), ("diff", cache, cache, "--no-cache")):
        rc, stdout, stderr = _run(capsys, *argv)
        assert rc == 0 and len(stdout) < 20_000 and "\x1b]" not in stdout, (argv, len(stdout))
    report = scan(str(cache), index=False, jobs=1)
    assert max(len(kernel_node_name(r)) for r in report.kernels) < 1_000


def test_hostile_input_10mb_name_quoted_in_a_problem_message_is_cut_too(two_kernels, capsys):
    """The NVIDIA kernel's cubin holds no kernel of the json's name, and the problem says so quoting
    the name: a 10 MB message. Messages are cut in the middle past model.safe_text.MESSAGE_LIMIT as
    names are (found by measuring issue 22 item 14 end to end: 10 MB printed)."""
    cache, _ = two_kernels
    spill = next(p for p in cache.iterdir() if any(p.glob("*.cubin")))
    huge = "spill_kernel" * 900_000
    _edit_json(spill, lambda data: data.update(name=huge))
    rc, stdout, stderr = _run(capsys, "scan", cache, "--no-cache")
    assert "no register count for kernel" in stdout
    assert len(stdout) < 20_000 and len(stderr) < 5_000, (len(stdout), len(stderr))
