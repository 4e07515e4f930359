"""Issue 22 items 16 and 20: exit codes that tell the truth about the input.

Item 16: a cut-short or non-IR `.ttgir`/`.ttir`/`.llir`/`.ptx` is exit 3 with an error naming the
file and line, never a clean 0 with its findings or layouts gone. Item 20: overlapping paths count
a kernel once; an unreadable root is named (exit 2), not "no Triton kernels found"; a closed stdout
leaves the exit status to what the command found.

The malformed input here is made from real fixture artifacts copied into tmp_path: cut in half
(MALFORMED_TRUNCATED) or replaced by text that is no IR at all (MALFORMED_NOT_IR).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import FIXTURES, copy_tree, irscope_with_locked_dir, kernel_dirs

from irscope.cli.main import main
from irscope.cli.exit_codes import EXIT_GATE, EXIT_OK, EXIT_PARTIAL, EXIT_USAGE
from irscope.pipeline.harvester import harvest

MALFORMED_NOT_IR = "hello world\n"  # hostile input: plain text under an IR's name


def nvidia_kernel(manifest, tmp_path):
    """A real sm_90 softmax kernel (it has .ttir, .ttgir, .llir, .ptx), copied where it may be broken."""
    (src,) = kernel_dirs(manifest, cache="caches/triton-3.9", fixture="softmax", target_arch="sm_90")
    return copy_tree(src, tmp_path / "cache" / src.name)


def malformed_truncated(directory, stage: str):
    """MALFORMED_TRUNCATED: the kernel's `.<stage>` cut to its first half, as a crash or full disk leaves it."""
    (artifact,) = directory.glob(f"*.{stage}")
    data = artifact.read_bytes()
    artifact.write_bytes(data[: len(data) // 2])
    return artifact


def scan(capsys, *args) -> tuple[int, str, str]:
    code = main(["scan", *(str(a) for a in args), "--no-cache", "-j", "1"])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_the_intact_kernel_is_clean(manifest, tmp_path, capsys):
    code, out, _ = scan(capsys, nvidia_kernel(manifest, tmp_path))
    assert code == EXIT_OK and "error:" not in out


@pytest.mark.parametrize("stage,says", [
    ("ttgir", "truncated file?"),
    ("ttir", "truncated: the ttir ends inside its module"),
    ("llir", "truncated: the file ends inside this function"),
    ("ptx", "truncated: the file ends inside function"),
])
def test_a_truncated_artifact_exits_3_naming_file_and_line(manifest, tmp_path, capsys, stage, says):
    artifact = malformed_truncated(nvidia_kernel(manifest, tmp_path), stage)
    # Partial results outrank the gate too: `--fail-on warning` must not read as a pass or a plain 1.
    code, out, err = scan(capsys, tmp_path / "cache", "--fail-on", "warning")
    assert code == EXIT_PARTIAL, out + err
    line = next(x for x in out.splitlines() if str(artifact) in x)
    assert line.startswith("error:") and says in line
    assert f"{artifact}:" in line  # file:line


@pytest.mark.parametrize("stage,says", [
    ("ttgir", "not MLIR text: no `module` line"),
    ("ttir", "not MLIR text: no `module` line"),
    ("llir", "not LLVM IR: no function definition"),
])
def test_text_that_is_no_ir_exits_3(manifest, tmp_path, capsys, stage, says):
    directory = nvidia_kernel(manifest, tmp_path)
    (artifact,) = directory.glob(f"*.{stage}")
    artifact.write_text(MALFORMED_NOT_IR)
    code, out, err = scan(capsys, tmp_path / "cache")
    assert code == EXIT_PARTIAL, out + err
    assert f"error: softmax_kernel: {artifact}:1: {says}" in out


def test_overlapping_paths_count_each_kernel_once(manifest, tmp_path, capsys, monkeypatch):
    cache = nvidia_kernel(manifest, tmp_path).parent
    monkeypatch.chdir(tmp_path)
    roots = ["cache", "./cache/", str(cache), str(next(cache.iterdir()))]
    assert len(harvest(roots).kernels) == 1
    code, out, _ = scan(capsys, *roots)
    assert code == EXIT_OK and out.startswith("1 kernels")


def test_overlapping_fixture_caches_count_as_one(capsys):
    cache = FIXTURES / "caches" / "triton-3.9"
    once = len(harvest([cache]).kernels)
    assert len(harvest([cache, f"{cache}/", cache.resolve()]).kernels) == once


def test_an_unreadable_root_is_named_and_exits_2(tmp_path):
    locked = tmp_path / "locked"
    proc = irscope_with_locked_dir(locked, 0, "scan", locked, "--no-cache")
    assert proc.returncode == EXIT_USAGE, proc.stderr
    assert f"{locked}: cannot read: Permission denied" in proc.stderr
    assert "no Triton kernels found" not in proc.stderr


def closed_stdout_exit(*args: str) -> int:
    """The exit status of `irscope ARGS` whose reader closed stdout before it wrote (`| head`)."""
    read, write = os.pipe()
    os.close(read)  # no reader: every write to the pipe fails with EPIPE
    try:
        proc = subprocess.run([sys.executable, "-m", "irscope", *args], stdout=write, stderr=subprocess.PIPE,
                              text=True)
    finally:
        os.close(write)
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    return proc.returncode


@pytest.mark.parametrize("args,code", [
    (["occupancy", str(FIXTURES / "caches" / "triton-3.9")], EXIT_OK),
    (["occupancy", "--json", str(FIXTURES / "caches" / "triton-3.9")], EXIT_OK),
    (["passes", "--all", str(FIXTURES / "dumps" / "mlir-dump_triton-3.9_gfx942_gemm_aligned.txt.gz")], EXIT_OK),
    (["scan", "--no-cache", str(FIXTURES / "caches" / "triton-3.9")], EXIT_OK),
    # The gate's verdict stands whether or not anyone read the table.
    (["scan", "--no-cache", "--fail-on", "info", str(FIXTURES / "caches" / "triton-3.9")], EXIT_GATE),
])
def test_a_closed_stdout_is_not_the_gate_code(args, code):
    assert closed_stdout_exit(*args) == code
