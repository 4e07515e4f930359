"""IRS301 lds-round-trip on the real fixtures, checked against the TTGIR text itself.

The int4 GEMM's dequantized B tile goes register -> LDS -> register inside the K loop
(`ttg.local_alloc %b...` then `ttg.local_load` into the dot-operand layout); the split-K
GEMM converts its MFMA/MMA accumulator through LDS for `tl.atomic_add`. Every GEMM's operand
staging (global load -> LDS -> dot operand) is present in the same TTGIRs and must stay silent.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import FIXTURES, fixture_findings, pick_fixture

from irscope.rules.irs301_lds_round_trip import LdsRoundTrip

VERSIONS = ("3.2", "3.6", "3.9")
ALLOC_OF_VALUE = re.compile(r"^\s*(%[\w.-]+) = ttg\.local_alloc %[\w.-]+ : \(tensor<(\d+)x(\d+)xf16, (#\w+)>\)")
STAGING_KERNELS = ("gemm_aligned", "gemm_unaligned", "gemm_mfma16", "gemm_mfma32", "gemm_wpe3", "gemm_bufferops",
                   "gemm_nw16", "gemm_nw8_s3", "autotune_gemm", "flash_attn", "trans_dot")


@pytest.fixture(scope="module")
def reports():
    return fixture_findings(LdsRoundTrip, *(FIXTURES / "caches" / f"triton-{v}" for v in VERSIONS))


def pick(reports, fixture, arch, version):
    return pick_fixture(reports, fixture, arch, version, required=False)


def ttgir_lines(report) -> list[str]:
    return Path(report.kernel.artifact("ttgir").path).read_text().splitlines()


def loop_lines(text: list[str]) -> set[int]:
    """1-based lines inside any scf.for body, by indentation (the printer's nesting)."""
    inside: set[int] = set()
    for n, line in enumerate(text, 1):
        if " scf.for " in line:
            indent = len(line) - len(line.lstrip())
            for m in range(n + 1, len(text) + 1):
                body = text[m - 1]
                if body.strip().startswith("}") and len(body) - len(body.lstrip()) == indent:
                    break
                inside.add(m)
    return inside


def kernel_source_line(finding) -> str:
    return (FIXTURES / "kernels" / Path(finding.python_file).name).read_text().splitlines()[finding.python_line - 1]


@pytest.mark.parametrize("arch,version", [("gfx942", "3.6"), ("gfx950", "3.6"), ("gfx942", "3.9")])
def test_int4_dequantized_tile_round_trip_fires_in_the_loop(reports, arch, version):
    ((report, findings),) = pick(reports, "int4_gemm", arch, version)
    text = ttgir_lines(report)
    # every local_alloc that takes a register value, and the local_loads that read its buffer
    allocs = {n: m for n, line in enumerate(text, 1) if (m := ALLOC_OF_VALUE.match(line))}
    loads = {n for n, line in enumerate(text, 1) for m in allocs.values()
             if re.search(rf"= ttg\.local_load {re.escape(m.group(1))} :", line)}
    assert len(allocs) == 2 and len(loads) == 2  # the loop body and the copy after the loop
    in_loop = loop_lines(text)
    assert len([n for n in allocs if n in in_loop]) == 1

    (finding,) = findings  # the A tile's staging in the same loop is not reported
    assert finding.severity == "warning" and finding.stage == "ttgir"
    assert set(finding.lines) == set(allocs) | loads
    assert "ttg.local_alloc" in text[finding.line - 1]
    (first,) = [m for n, m in allocs.items() if n == finding.line]
    rows, cols, layout = int(first.group(2)), int(first.group(3)), first.group(4)
    assert f"f16 {rows}x{cols} tile computed in registers, layout {layout} (" in finding.message
    assert f"{rows * cols * 2} B per trip" in finding.message and finding.number("tile_bytes") == rows * cols * 2
    loop_alloc = next(n for n in allocs if n in in_loop)
    assert f"in a loop (line {loop_alloc})" in finding.message
    assert "as dot operand B, dot_op[B," in finding.message
    assert finding.number("writes_in_loop") == 1 and finding.number("computed") == 1
    assert "b.to(tl.float16)" in kernel_source_line(finding)
    assert f"Python line {finding.python_line}" in finding.message


@pytest.mark.parametrize("arch,version", [("gfx942", "3.6"), ("sm_90", "3.6"), ("gfx942", "3.9")])
def test_split_k_accumulator_convert_for_atomic_add_is_info(reports, arch, version):
    ((report, findings),) = pick(reports, "splitk_gemm", arch, version)
    text = ttgir_lines(report)
    converts = [n for n, line in enumerate(text, 1) if "ttg.convert_layout" in line]
    (finding,) = findings
    assert finding.severity == "info" and finding.lines == tuple(converts)
    assert re.search(r"tensor<64x64xf32, #mma> -> tensor<64x64xf32, #blocked\d*>", text[finding.line - 1])
    assert "tt.atomic_rmw" in text[finding.line]  # the next op
    assert f"used by tt.atomic_rmw at line {finding.line + 1}" in finding.message
    assert f"{64 * 64 * 4} B tile" in finding.message and "outside loops" in finding.message
    assert "tl.atomic_add" in kernel_source_line(finding)


@pytest.mark.parametrize("version", VERSIONS)
def test_gemm_operand_staging_is_silent(reports, version):
    checked = 0
    for fixture, report, findings in reports:
        if fixture not in STAGING_KERNELS or not report.kernel.triton_version.value.startswith(version):
            continue
        assert findings == [], (fixture, report.kernel.target.arch)
        text = "\n".join(ttgir_lines(report))
        # a register tile written to LDS (not an async copy from global) and read back
        if re.search(r"(ttg|triton_gpu)\.local_(alloc|store) %", text) and "local_load" in text:
            checked += 1
    assert checked >= 4


@pytest.mark.parametrize("version", VERSIONS)
def test_epilogue_converts_are_left_to_irs302(reports, version):
    for report, findings in pick(reports, "tile_copy_nohint", "gfx942", version):
        assert "ttg.convert_layout" in "\n".join(ttgir_lines(report)) or version == "3.2"
        assert findings == []
