"""IRS103 narrow-lds-access on the real fixtures.

Per-iteration counts are checked against the artifact text with LLVM's own loop comments
(`=>This Inner Loop Header: Depth=1`, `in Loop: Header=BB0_n Depth=1`, Triton 3.2+), not the
rule's control-flow graph; every line a finding names must hold the opcode it names.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import FIXTURES, fixture_findings, pick_fixture

from irscope.rules.irs103_narrow_lds_access import NarrowLdsAccess

BLOCK = re.compile(r"^(\.LBB\w+:|\$L__BB\w+:|;\s*%bb\.\d+:|//\s*%bb\.\d+:)")
IN_LOOP = re.compile(r"Loop Header: Depth=1|in Loop: Header=\w+ Depth=1")
COMMENT = re.compile(r"^\s*(;|//)")
LOC = re.compile(r"^\s*\.loc\s+\d+\s+(\d+)\s")
PREDICATE = r"(?:@!?%\w+\s+)?"
# Every LDS access narrower than 8 bytes per lane, AMD and PTX spellings.
NARROW = re.compile(r"^\s*" + PREDICATE + r"(ds_(?:read|write|load|store)2?(?:st64)?_(?:u8|i8|u16|i16|b8|b16|b32)"
                    r"(?:_d16(?:_hi)?)?|(?:ld|st)\.shared(?:::cta)?\.(?:v2\.b16|b16|b32|u32|f32|u16))\b")
WIDE = re.compile(r"^\s*(ds_(?:read|write)2?(?:st64)?_b(?:64|128)|ds_read_b64_tr_b16|ldmatrix|stmatrix|"
                  r"ld\.shared\.v4|st\.shared\.v4)")


@pytest.fixture(scope="module")
def found():
    caches = [FIXTURES / "caches" / f"triton-{v}" for v in ("3.0", "3.2", "3.6", "3.9")]
    return fixture_findings(NarrowLdsAccess, *caches)


def pick(found, fixture, arch, version, required=True):
    return pick_fixture(found, fixture, arch, version, required)


def scan_text(path: str, pattern: re.Pattern) -> list[tuple[int, str, int | None, bool]]:
    """(line, opcode, Python line from the last `.loc`, inside LLVM's depth-1 loop) per match."""
    out, in_loop, header, py = [], False, False, None
    for n, line in enumerate(Path(path).read_text().splitlines(), 1):
        if BLOCK.match(line):
            in_loop, header = bool(IN_LOOP.search(line)), True
            continue
        if header and COMMENT.match(line):  # the loop comment may sit on the next line
            in_loop = in_loop or bool(IN_LOOP.search(line))
            continue
        header = False
        if loc := LOC.match(line):
            py = int(loc.group(1))
        elif m := pattern.match(line):
            out.append((n, m.group(1), py, in_loop))
    return out


@pytest.mark.parametrize("version", ["3.2", "3.6", "3.9"])
def test_unaligned_gemm_writes_its_tile_as_narrow_as_it_loads_it(found, version):
    """The fixture README's case: without divisibility facts the tile is loaded and written
    to LDS 2 bytes at a time (`global_load_ushort` -> `ds_write_b16`)."""
    ((_, findings),) = pick(found, "gemm_unaligned", "gfx942", version)
    writes = [f for f in findings if "LDS writes of 2 B" in f.message]
    assert writes
    text = scan_text(writes[0].path, NARROW)
    for f in writes:
        assert f.severity == "warning" and f.stage == "amdgcn" and f.python_file.endswith("gemm.py")
        mine = [t for t in text if t[0] in f.lines]
        assert len(mine) == len(f.lines) and all(op == "ds_write_b16" and py == f.python_line for _, op, py, _ in mine)
        in_loop = sum(1 for t in mine if t[3])
        assert in_loop == f.number("per_iteration") == f.number("in_loop")
        assert f"(ds_write_b16) from gemm.py:{f.python_line}: {in_loop} per iteration of the loop at gemm.py:47" \
            in f.message
        assert "2-byte global loads (global_load_ushort)" in f.message
    # all the ds_write_b16 of the file, and nothing else narrow is written: the 8-byte A writes
    # of 3.6 (ds_write_b64) are the MFMA operand's width and are not reported
    assert sorted(n for f in writes for n in f.lines) == [n for n, op, _, _ in text if op == "ds_write_b16"]


def test_unaligned_gemm_in_3_6_per_iteration_count(found):
    ((_, findings),) = pick(found, "gemm_unaligned", "gfx942", "3.6")
    (f,) = findings
    assert f.python_line == 49 and f.number("per_iteration") == 32 and f.number("outside_loops") == 0


@pytest.mark.parametrize("version", ["3.0", "3.2"])
def test_column_reads_of_the_b_operand(found, version):
    """Triton 3.0/3.2 keep B N-contiguous in LDS and read the MFMA's K-contiguous operand
    element by element: 64 ds_read_u16 per K iteration."""
    ((_, findings),) = pick(found, "gemm_aligned", "gfx942", version)
    (f,) = findings
    text = scan_text(f.path, NARROW)
    assert [n for n, op, _, _ in text] == list(f.lines)
    assert {op for _, op, _, _ in text} == {"ds_read_u16"}
    assert f.severity == "warning" and f.python_line == 49 and f.number("per_iteration") == 64
    if version == "3.2":  # 3.0 writes no loop comments
        assert sum(1 for t in text if t[3]) == 64
    assert "v_mfma_f32_32x32x8_f16, whose operand is 8 B per lane" in f.message
    assert "the matrix instruction reads it along K (dim 0)" in f.message


@pytest.mark.parametrize("version", ["3.6", "3.9"])
def test_mfma_width_lds_accesses_are_not_reported(found, version):
    """From 3.6 the gfx942 GEMM writes B transposed (ds_write_b64) and reads every operand with
    ds_read2st64_b64: 8 bytes, the operand of v_mfma_f32_32x32x8_f16. gfx950 reads with
    ds_read_b128 and the transposing ds_read_b64_tr_b16."""
    for arch in ("gfx942", "gfx950"):
        for fixture in ("gemm_aligned", "gemm_mfma16"):
            for report, findings in pick(found, fixture, arch, version, required=arch == "gfx942"):
                assert findings == []
                text = Path(report.kernel.artifact("amdgcn").path).read_text().splitlines()
                assert not any(NARROW.match(line) for line in text)
                assert sum(1 for line in text if WIDE.match(line)) >= 16


@pytest.mark.parametrize("version", ["3.6", "3.9"])
def test_nvidia_unaligned_gemm(found, version):
    ((_, findings),) = pick(found, "gemm_unaligned", "sm_90", version)
    assert sorted(f.python_line for f in findings) == [48, 49]
    text = scan_text(findings[0].path, NARROW)
    assert sorted(n for f in findings for n in f.lines) == [n for n, _, _, _ in text]
    for f in findings:
        mine = [t for t in text if t[0] in f.lines]
        assert all(op == "st.shared.b16" for _, op, _, _ in mine)
        assert f.stage == "ptx" and f.severity == "warning"
        assert f.number("per_iteration") == sum(1 for t in mine if t[3]) == 64
        assert "2-byte global loads (ld.global.b16)" in f.message
    # the aligned build: ldmatrix and 16-byte st.shared only
    ((report, clean),) = pick(found, "gemm_aligned", "sm_90", version)
    assert clean == []
    assert not any(NARROW.match(line) for line in Path(report.kernel.artifact("ptx").path).read_text().splitlines())


def test_transposing_b32_writes_are_info_and_counted_per_k_step(found):
    """Triton 3.9's split-K GEMM transposes B into LDS 2 K elements (4 bytes) at a time, in a K
    loop LLVM unrolled twice."""
    ((_, findings),) = pick(found, "splitk_gemm", "gfx942", "3.9")
    (f,) = [f for f in findings if f.python_line == 28]
    text = [t for t in scan_text(f.path, NARROW) if t[0] in f.lines]
    assert {op for _, op, _, _ in text} == {"ds_write_b32"} and len(text) == len(f.lines)
    assert f.severity == "info" and f.number("width_bytes") == 4
    assert f.number("per_iteration") == sum(1 for t in text if t[3]) == 16 and f.number("unroll") == 2
    assert "16 per iteration of the loop at splitk_gemm.py:26 (unrolled 2x: 8 per K step)" in f.message
    assert "each thread packs the 2 K elements it holds" in f.message
    # the epilogue's accumulator conversion (line 35) runs once, outside the loop: info
    epilogue = [g for g in findings if g.python_line == 35]
    assert epilogue and all(g.severity == "info" and g.number("in_loop") == 0 for g in epilogue)


@pytest.mark.parametrize("version", ["3.6", "3.9"])
def test_reduction_scratch_is_not_a_tile(found, version):
    """softmax/layernorm exchange one fp32 per warp through LDS (ds_write_b32): not reported."""
    seen = 0
    for fixture in ("softmax", "layernorm"):
        for arch, stage in (("gfx942", "amdgcn"), ("sm_90", "ptx")):
            for report, findings in pick(found, fixture, arch, version, required=False):
                seen += 1
                assert findings == []
                text = Path(report.kernel.artifact(stage).path).read_text().splitlines()
                assert any(NARROW.match(line) for line in text)
    assert seen >= 3


@pytest.mark.parametrize("version", ["3.6", "3.9"])
def test_tile_copy_conversion_is_info_outside_loops(found, version):
    ((_, findings),) = pick(found, "tile_copy_nohint", "gfx942", version)
    assert findings and all(f.severity == "info" and f.python_line == 34 for f in findings)
    text = scan_text(findings[0].path, NARROW)
    assert sorted(n for f in findings for n in f.lines) == [n for n, _, _, _ in text]
    assert all(f.number("in_loop") == 0 and "convert_layout through LDS" in f.message for f in findings)
    ((_, hinted),) = pick(found, "tile_copy_hint", "gfx942", version)
    assert hinted == []
