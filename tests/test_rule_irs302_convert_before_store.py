"""IRS302 convert-before-store on the real fixtures, checked against the TTGIR text itself.

Fires on the NVIDIA GEMM epilogue (MMA accumulator -> blocked through shared memory before
`tt.store`) and on the unhinted tile copy (blocked -> blocked through LDS before its store);
stays silent where the store takes the value in the layout it has (gfx942 GEMM, hinted tile
copy), where the epilogue conversion uses lane shuffles (gfx950) and before `tl.atomic_add`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import FIXTURES, fixture_findings, pick_fixture

from irscope.rules.irs302_convert_before_store import ConvertBeforeStore

VERSIONS = ("3.2", "3.6", "3.9")
CONVERT = re.compile(r"= (?:ttg|triton_gpu)\.convert_layout %[\w.-]+ : \(?tensor<(\d+)x(\d+)x(f16|f32), (#\w+)>\)? -> "
                     r"tensor<\d+x\d+x\w+, (#\w+)>")


@pytest.fixture(scope="module")
def reports():
    return fixture_findings(ConvertBeforeStore, *(FIXTURES / "caches" / f"triton-{v}" for v in VERSIONS))


def pick(reports, fixture, arch, version):
    return pick_fixture(reports, fixture, arch, version, required=False)


def ttgir_lines(report) -> list[str]:
    return Path(report.kernel.artifact("ttgir").path).read_text().splitlines()


def json_shared(report) -> int:
    return json.loads((Path(report.kernel.directory) / f"{report.kernel.name}.json").read_text())["shared"]


def kernel_source_line(finding) -> str:
    return (FIXTURES / "kernels" / Path(finding.python_file).name).read_text().splitlines()[finding.python_line - 1]


def check_against_ttgir(report, finding) -> re.Match:
    text = ttgir_lines(report)
    converts = [n for n, line in enumerate(text, 1) if CONVERT.search(line)]
    match = CONVERT.search(text[finding.line - 1])
    assert match and finding.line in converts
    assert re.match(r"\s*tt\.store ", text[finding.line])  # the very next op stores the converted value
    assert finding.lines == (finding.line, finding.line + 1)
    assert f"feeds tt.store at line {finding.line + 1}" in finding.message
    rows, cols, element, source, target = match.groups()
    assert f"{element} {rows}x{cols}, from {source} (" in finding.message and f" to {target} (" in finding.message
    nbytes = int(rows) * int(cols) * (2 if element == "f16" else 4)
    assert f"; {nbytes} B tile" in finding.message and finding.number("tile_bytes") == nbytes
    assert finding.number("kernel_lds_bytes") == json_shared(report)
    assert "tl.store(" in kernel_source_line(finding) and f"(Python line {finding.python_line})" in finding.message
    assert finding.severity == "info" and finding.stage == "ttgir"
    return match


@pytest.mark.parametrize("version", VERSIONS)
def test_nvidia_gemm_epilogue_converts_the_accumulator_through_shared_memory(reports, version):
    ((report, findings),) = pick(reports, "gemm_aligned", "sm_90", version)
    (finding,) = findings
    match = check_against_ttgir(report, finding)
    assert match.group(4) == "#mma" and "the dot result" in finding.message
    assert "goes through shared memory" in finding.message and finding.number("from_mma") == 1
    assert f"kernel shared memory: {json_shared(report)} B in all" in finding.message


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("arch", ["gfx942", "sm_90"])
def test_unhinted_tile_copy_fires_and_hinted_is_silent(reports, version, arch):
    nohint = pick(reports, "tile_copy_nohint", arch, version)
    if version == "3.2" and arch == "sm_90":
        assert nohint == []  # not in the 3.2 cache
        return
    ((report, findings),) = nohint
    (finding,) = findings
    match = check_against_ttgir(report, finding)
    assert match.group(4) == "#blocked" and finding.number("from_mma") == 0
    mem = "LDS" if arch.startswith("gfx") else "shared memory"
    # no other LDS user in the TTGIR: the kernel's whole allocation is this conversion's scratch
    assert f"the kernel's {json_shared(report)} B of {mem} are this conversion's scratch" in finding.message
    for report, findings in pick(reports, "tile_copy_hint", arch, version):
        assert not any("convert_layout" in line for line in ttgir_lines(report))
        assert findings == []


@pytest.mark.parametrize("version", ("3.6", "3.9"))
def test_gfx950_shuffle_epilogue_is_silent(reports, version):
    """gfx950 converts the MFMA result right before the store too, but with lane shuffles: no LDS."""
    ((report, findings),) = pick(reports, "gemm_aligned", "gfx950", version)
    text = ttgir_lines(report)
    before_store = [n for n, line in enumerate(text, 1)
                    if CONVERT.search(line) and n < len(text) and text[n].lstrip().startswith("tt.store ")]
    assert len(before_store) == 1
    assert findings == []


@pytest.mark.parametrize("version", VERSIONS)
def test_gfx942_gemm_stores_from_the_mfma_layout(reports, version):
    ((report, findings),) = pick(reports, "gemm_aligned", "gfx942", version)
    assert not any("convert_layout" in line for line in ttgir_lines(report))
    assert findings == []


@pytest.mark.parametrize("version", ("3.6", "3.9"))
def test_atomic_add_epilogue_is_not_a_store(reports, version):
    ((report, findings),) = pick(reports, "splitk_gemm", "gfx942", version)
    assert any("convert_layout" in line for line in ttgir_lines(report))
    assert findings == []
