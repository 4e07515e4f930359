"""Exit codes (README "Exit codes", irscope/cli/exit_codes.py): 0 clean, 1 a gate tripped, 2 unusable
input, 3 partial results; 2 > 3 > 1 > 0 when several apply. Every case runs the real CLI on real
fixture kernels, or on copies of them made broken here."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import FIXTURES, copy_tree, irscope_with_locked_dir, kernel_dirs

import irscope.pipeline.analyze
from irscope.cli.main import main
from irscope.cli.exit_codes import EXIT_GATE, EXIT_OK, EXIT_PARTIAL, EXIT_USAGE, worst

BA = FIXTURES / "before_after"


def kernel(manifest, fixture: str):
    return kernel_dirs(manifest, cache="caches/triton-3.9", fixture=fixture, target_arch="gfx942")[0]


@pytest.fixture
def cache(manifest, tmp_path):
    """Two real kernels: `add` (no finding) and `gemm_aligned` (warning and info findings, none an error)."""
    for fixture in ("add", "gemm_aligned"):
        src = kernel(manifest, fixture)
        copy_tree(src, tmp_path / "cache" / src.name)
    return tmp_path / "cache"


def truncate(directory, ext: str = "amdgcn") -> None:
    """Cut the kernel's `.amdgcn` to its first quarter: its register figures are lost (an error)."""
    (artifact,) = directory.glob(f"*.{ext}")
    data = artifact.read_bytes()
    artifact.write_bytes(data[: len(data) // 4])


def broken(cache, manifest):
    """The cache with `add`'s .amdgcn truncated."""
    truncate(cache / kernel(manifest, "add").name)
    return cache


def cli(capsys, *args) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `irscope ARGS --no-cache -j 1`."""
    code = main([str(a) for a in (*args, "--no-cache", "-j", "1")])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_precedence():
    assert worst() == EXIT_OK
    assert worst(EXIT_OK, EXIT_GATE) == EXIT_GATE
    assert worst(EXIT_GATE, EXIT_PARTIAL) == EXIT_PARTIAL
    assert worst(EXIT_PARTIAL, EXIT_USAGE, EXIT_GATE) == EXIT_USAGE


# -- 0 and 1: clean, and gates -----------------------------------------------------------------
def test_a_clean_scan_exits_0_whatever_it_finds(cache, capsys):
    code, out, err = cli(capsys, "scan", cache)
    assert code == 0 and "IRS201" in out and err == ""  # findings alone never fail a scan not asked to gate


@pytest.mark.parametrize("severity,code", [("error", 0), ("warning", 1), ("info", 1)])
def test_scan_fail_on_gates_on_findings_at_or_above(cache, capsys, severity, code):
    got, _, err = cli(capsys, "scan", cache, "--fail-on", severity)
    assert got == code
    assert (f"--fail-on {severity}" in err) == bool(code)


def test_scan_fail_on_counts_only_the_findings_selected(cache, capsys):
    assert cli(capsys, "scan", cache, "--fail-on", "warning", "--ignore", "IRS201")[0] == 0


def test_fail_on_gates_every_output(cache, capsys, tmp_path):
    for output in (("--json", "-"), ("--sarif", "-"), ("--markdown", "-"), ("--json", tmp_path / "r.json")):
        assert cli(capsys, "scan", cache, "--fail-on", "warning", *output)[0] == 1, output


def test_diff_fail_on_regression(capsys):
    assert cli(capsys, "diff", BA / "before", BA / "after", "--fail-on", "regression")[0] == 0
    assert cli(capsys, "diff", BA / "after", BA / "before", "--fail-on", "regression")[0] == 1
    assert cli(capsys, "diff", BA / "after", BA / "before")[0] == 0  # a diff not asked to gate


def test_a_kernel_triton_is_still_writing_is_a_warning_not_partial(cache, capsys, manifest):
    next((cache / kernel(manifest, "add").name).glob("__grp__*.json")).unlink()  # Triton writes it last
    code, out, _ = cli(capsys, "scan", cache)
    assert code == 0 and "incomplete" in out


# -- 2: unusable input ---------------------------------------------------------------------------
def test_unusable_input_exits_2(tmp_path, capsys, cache):
    assert cli(capsys, "scan", tmp_path / "absent")[0] == 2
    (tmp_path / "empty").mkdir()
    assert cli(capsys, "scan", tmp_path / "empty")[0] == 2
    (tmp_path / "notes.txt").write_text("not an artifact\n")
    assert cli(capsys, "scan", tmp_path / "notes.txt")[0] == 2
    assert cli(capsys, "diff", tmp_path / "absent", cache)[0] == 2
    assert cli(capsys, "baseline", tmp_path / "empty")[0] == 2
    assert main(["occupancy", str(cache), "--kernel", "no_such_kernel"]) == 2


@pytest.mark.parametrize("args", [["scan", "--fail-on", "sometimes"], ["scan", "-j", "0"], ["frobnicate"], []])
def test_a_bad_argument_exits_2(args):
    proc = subprocess.run([sys.executable, "-m", "irscope", *args], capture_output=True, text=True)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


def test_an_internal_error_exits_2_in_one_line(cache, capsys, monkeypatch):
    def boom(*args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr(irscope.pipeline.analyze, "scan", boom)
    code, _, err = cli(capsys, "scan", cache)
    assert code == 2
    assert err.strip().splitlines() == [
        "irscope: internal error: RuntimeError: a bug (this is irscope's bug; --debug shows the traceback)"]
    with pytest.raises(RuntimeError):
        main(["--debug", "scan", str(cache)])
    assert "IRSCOPE_DEBUG" not in os.environ  # set for worker processes while main ran, then restored


# -- 3: partial results --------------------------------------------------------------------------
def test_a_broken_kernel_makes_a_scan_partial(cache, capsys, manifest):
    code, _, err = cli(capsys, "scan", broken(cache, manifest))
    assert code == 3
    assert "partial results: 1 kernel(s)" in err and kernel(manifest, "add").name in err
    assert "gemm_aligned" not in err  # the other kernel is analyzed in full
    assert cli(capsys, "scan", cache, "--json", "-")[0] == 3  # whatever the output


def test_partial_results_outrank_a_gate(cache, capsys, manifest):
    code, _, err = cli(capsys, "scan", broken(cache, manifest), "--fail-on", "warning")
    assert code == 3
    assert "--fail-on warning" in err and "partial results" in err  # both are said


def test_diff_with_a_partial_side_exits_3_even_when_it_regressed(tmp_path, capsys):
    before, after = (copy_tree(BA / side, tmp_path / side) for side in ("after", "before"))
    assert cli(capsys, "diff", before, after, "--fail-on", "regression")[0] == 1
    truncate(next(d for d in after.iterdir() if any(d.glob("*.amdgcn"))))
    assert cli(capsys, "diff", before, after, "--fail-on", "regression")[0] == 3
    assert cli(capsys, "diff", before, after)[0] == 3


def test_baseline_of_a_partial_scan_exits_3(cache, capsys, manifest):
    assert cli(capsys, "baseline", cache)[0] == 0
    code, out, _ = cli(capsys, "baseline", broken(cache, manifest))
    assert code == 3 and '"findings"' in out  # still written: the kernels that were read


def test_occupancy_with_a_kernel_it_cannot_read_exits_3(cache, capsys, manifest):
    assert main(["occupancy", str(cache)]) == 0
    capsys.readouterr()
    assert main(["occupancy", str(broken(cache, manifest))]) == 3  # the other kernel still printed
    out = capsys.readouterr()
    assert "occupancy" in out.out and kernel(manifest, "add").name in out.err


def test_an_unreadable_directory_is_partial(cache):
    """A run-level error problem (a directory os.walk could not list) is partial results too."""
    locked = cache / "locked"
    proc = irscope_with_locked_dir(locked, 0, "scan", cache, "--no-cache")
    assert proc.returncode == 3, proc.stderr
    assert f"{locked}: cannot read: Permission denied" in proc.stdout
