"""`irscope scan` as a user runs it: the table, the JSON report, the exit codes."""

from __future__ import annotations

import json
import subprocess
import sys


from conftest import FIXTURES, copy_tree, kernel_dirs

from irscope.cli.main import main
from irscope.model.report import Report


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "irscope", *args], capture_output=True, text=True)


def test_scan_lists_every_kernel_of_the_corpus(corpus_roots, manifest, capsys):
    assert main(["scan", *map(str, corpus_roots)]) == 0
    out = capsys.readouterr().out
    assert f"{len(manifest['kernels'])} kernels" in out
    for name in {e["name"] for e in manifest["kernels"]}:
        assert name in out
    for arch in ("gfx942", "gfx950", "gfx90a", "sm_90", "sm_80"):
        assert arch in out


def test_json_to_stdout_is_a_loadable_report(corpus_roots, manifest):
    proc = run("scan", str(FIXTURES / "caches" / "triton-3.6"), "--json", "-")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["schema"] == "irscope.report" and data["schema_version"] == 2
    report = Report.from_json(proc.stdout)
    expected = [e for e in manifest["kernels"] if e["cache"] == "caches/triton-3.6"]
    assert len(report.kernels) == len(expected)


def test_json_to_file_and_table_together(tmp_path, capsys):
    out = tmp_path / "r.json"
    assert main(["scan", str(FIXTURES / "caches" / "triton-3.2"), "--json", str(out)]) == 0
    assert "kernels" in capsys.readouterr().out
    assert Report.load(out).kernels


def test_missing_path_exits_2_with_a_clear_message(tmp_path):
    proc = run("scan", str(tmp_path / "absent"))
    assert proc.returncode == 2
    assert f"{tmp_path / 'absent'}: no such file or directory" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_empty_directory_exits_2(tmp_path):
    proc = run("scan", str(tmp_path))
    assert proc.returncode == 2
    assert "no Triton kernels found" in proc.stderr


def test_a_file_that_is_no_artifact_exits_2(tmp_path):
    f = tmp_path / "notes.txt"
    f.write_text("hello")
    proc = run("scan", str(f))
    assert proc.returncode == 2 and "not a Triton artifact" in proc.stderr


def test_broken_kernel_is_shown_with_its_file_and_the_rest_still_listed(manifest, tmp_path):
    cache = copy_tree(FIXTURES / "caches" / "triton-3.2", tmp_path / "cache")
    victim = next(p for p in cache.glob("*/*.amdgcn"))
    victim.write_bytes(victim.read_bytes()[:200] + b"\x00\x01\x02binary")
    proc = run("scan", str(cache))
    assert proc.returncode == 3, proc.stderr  # partial results (README: Exit codes)
    assert "error" in proc.stdout and str(victim) in proc.stdout.replace("\n", "")
    n = len([e for e in manifest["kernels"] if e["cache"] == "caches/triton-3.2"])
    assert f"{n} kernels" in proc.stdout


def test_kernel_names_are_never_markup_or_escapes(manifest, tmp_path):
    src = kernel_dirs(manifest, cache="caches/triton-3.6", fixture="add", target_arch="gfx942")[0]
    hashdir = copy_tree(src, tmp_path / "c" / src.name)
    meta = next(p for p in hashdir.glob("*.json") if not p.name.startswith("__grp__"))
    data = json.loads(meta.read_text())
    data["name"] = "[bold red]evil[/] \x1b]0;pwned\x07\x1b[2J"
    meta.write_text(json.dumps(data))
    proc = run("scan", str(tmp_path / "c"), "--wide")  # the whole name: a narrow table cuts it in the middle
    assert proc.returncode == 0
    assert "\x1b" not in proc.stdout and "\x07" not in proc.stdout
    assert "[bold red]evil[/]" in proc.stdout
    assert "\\x1b]0;pwned\\x07" in proc.stdout


def test_a_script_without_a_gpu_needs_a_target(tmp_path):
    """This machine has no GPU: without --target the script is not run, and irscope says why."""
    script = tmp_path / "kernel.py"
    script.write_text("print('the script ran')\n")
    proc = run("scan", str(script))
    assert proc.returncode == 2 and "no GPU driver is active here" in proc.stderr and "--target" in proc.stderr
    assert "the script ran" not in proc.stdout


def test_version_and_help():
    assert run("--version").stdout.startswith("irscope ")
    assert "scan" in run("--help").stdout
    assert run().returncode == 2
