"""Every finding points at a real artifact line and, where the artifact has line info, at the
kernel's Python line. Checked on three fixtures of different shape and vendor, every rule."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import FIXTURES, load_manifest

from irscope.pipeline.analyze import scan

KERNELS = FIXTURES / "kernels"
# (fixture, arch, Triton version): an unhinted GEMM on AMD, a tile copy on NVIDIA, a spilling kernel
CASES = [("gemm_unaligned", "gfx942", "3.6"), ("tile_copy_nohint", "sm_90", "3.9"), ("spill", "gfx90a", "3.6")]
INSTRUCTION = re.compile(r"^\s*(@!?%\w+\s+)?[a-z_][\w.]*")  # an ISA line starts with a mnemonic
ISA_STAGES = ("amdgcn", "ptx")


def kernel_report(fixture, arch, version):
    manifest = load_manifest()
    (entry,) = [e for e in manifest["kernels"] if e["fixture"] == fixture and e["target_name"] == arch
                and e["triton_version"].startswith(version) and e["cache"].startswith("caches/")]
    (r,) = scan(FIXTURES / entry["cache"] / entry["dir"]).kernels
    return r


@pytest.mark.parametrize("fixture,arch,version", CASES)
def test_findings_point_at_artifact_and_python_lines(fixture, arch, version):
    r = kernel_report(fixture, arch, version)
    assert len({f.code for f in r.findings}) >= 2, [f.code for f in r.findings]  # several rules to check
    for f in r.findings:
        assert f.kernel == r.kernel.key and Path(f.path).is_file(), f
        if f.stage in ("cubin",):
            continue
        text = Path(f.path).read_text().splitlines()
        assert f.line is not None and f.line == min(f.lines or (f.line,)), f
        for n in f.lines or (f.line,):
            assert 1 <= n <= len(text), f
            if f.stage in ISA_STAGES and f.code not in ("IRS401", "IRS402", "IRS403", "IRS404"):
                assert INSTRUCTION.match(text[n - 1]) and not text[n - 1].lstrip().startswith((";", "//", ".")), \
                    (f.code, n, text[n - 1])
        if f.python_line is not None:
            source = KERNELS / Path(f.python_file).name
            assert source.is_file(), f.python_file
            line = source.read_text().splitlines()[f.python_line - 1]
            assert "tl." in line or "for " in line, (f.code, f.python_line, line)


def test_isa_findings_carry_the_python_line():
    """AMDGCN and PTX carry `.loc` line info: every instruction-level finding has its Python line."""
    for case in CASES:
        r = kernel_report(*case)
        for f in r.findings:
            if f.stage in ISA_STAGES and f.code not in ("IRS401", "IRS402", "IRS403", "IRS404"):
                assert f.python_line is not None, f
