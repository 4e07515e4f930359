"""IRS103 narrow-lds-access on the real fixtures.

Per-iteration counts are checked against the artifact text with LLVM's own loop comments
(`=>This Inner Loop Header: Depth=1`, `in Loop: Header=BB0_n Depth=1`, Triton 3.2+), not the
rule's control-flow graph; every line a finding names must hold the opcode it names.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import FIXTURES, fixture_findings, pick_fixture, triton_cache_at

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
    """Triton 3.9's split-K GEMM transposes B into LDS 2 K elements (4 bytes) at a time. The count is
    per machine iteration: IRS202's unroll estimate counts warps that repeat a small tile as unrolled
    iterations (issue 21 defect 3), so IRS103 names no unroll factor."""
    ((_, findings),) = pick(found, "splitk_gemm", "gfx942", "3.9")
    (f,) = [f for f in findings if f.python_line == 28]
    text = [t for t in scan_text(f.path, NARROW) if t[0] in f.lines]
    assert {op for _, op, _, _ in text} == {"ds_write_b32"} and len(text) == len(f.lines)
    assert f.severity == "info" and f.number("width_bytes") == 4
    assert f.number("per_iteration") == sum(1 for t in text if t[3]) == 16 and f.number("unroll") is None
    assert "16 per iteration of the loop at splitk_gemm.py:26;" in f.message and "unrolled" not in f.message
    assert "so it writes 2 K element(s) at a time" in f.message
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


# -- the real-world corpus (fixtures/real_world): issue 21 defects 7 and 10, and IRS103's misses --------


@pytest.fixture(scope="module")
def corpus_findings(tmp_path_factory):
    """IRS103's findings on the public-kernel corpus, keyed as the ledger keys them, and the unpacked root."""
    import sys

    from conftest import REPO

    from irscope.model.launches import read_launches
    from irscope.pipeline.analyze import scan
    from irscope.engine.selection import RuleSelection

    sys.path.insert(0, str(REPO / "fixtures" / "real_world"))
    import corpus

    runs = corpus.extract(tmp_path_factory.mktemp("rw-irs103"))
    reports = {key: scan(run / "cache", launches=read_launches(run / "launches.jsonl"), index=None,
                         rules=RuleSelection.only(NarrowLdsAccess)) for key, run in runs.items()}
    return {s.key: s for s in corpus.findings(reports)}


def _at(findings, prefix: str):
    return [s for key, s in findings.items() if key.startswith(prefix)]


def test_an_inlined_helpers_lds_traffic_is_named_by_its_own_line(corpus_findings):
    """sage's `_attn_fwd_inner` (inlined at line 76) converts P (line 31) through LDS; the call-site line
    also stages the int8 K tile. The instructions carry `attn...:31 @[ attn...:76 ]`: they are P's."""
    (write,) = _at(corpus_findings, "gfx942/sageattention_int8/941703a39d06/IRS103/amdgcn:1047")
    assert "from attn_qk_int8_per_block_h96.py:31 (inlined at attn_qk_int8_per_block_h96.py:76)" in write.message
    assert "the dot's A tile goes through LDS (#mma -> #shared3 -> #mma1)" in write.message
    assert "#blocked1" not in write.message  # the K tile it was named as before
    assert "warps [8, 1]" in write.message and "[4, 2]" in write.fix
    # alpha, a 128x1 column converted #mma -> #mma1 in the same helper, is no tile
    assert not _at(corpus_findings, "gfx942/sageattention_int8/941703a39d06/IRS103/amdgcn:1023")


def test_a_lock_loops_broadcast_is_not_the_dots_tile(corpus_findings):
    """cut-cross-entropy's tl_lock_add spin loop (tl_utils.py:42 @ cce_backward.py:54 @ 189) broadcasts
    its atomic's result through LDS; matched by the call-site line alone it was 'the dot's B tile'."""
    for key in ("gfx942/cut_cross_entropy_loss/22264f52bd8d/IRS103/amdgcn:3849",
                "gfx942/cut_cross_entropy_loss/87c5168b1d42/IRS103/amdgcn:4127"):
        assert not _at(corpus_findings, key)


def test_small_vectors_are_not_reported_beside_a_tile_of_the_same_line(corpus_findings):
    """gemlite's 1x256 scales and zeros (utils.py:103:13, 2 writes a loop iteration) share a line with the
    dequantized B tile (utils.py:103:20); fla's 64-element beta (wy_fast.py:88) with a 64x64 tile."""
    gemlite = _at(corpus_findings, "gfx942/gemlite_lowbit_gemm/2226a92cd76a/IRS103/")
    assert not [s for s in gemlite if "ds_write_b16" in s.message]
    (reads,) = gemlite
    assert "128 per iteration" in reads.message and "dot's B tile" in reads.message
    assert not _at(corpus_findings, "sm_90/fla_linear_attention/3868a0310355/IRS103/ptx:268")


@pytest.mark.parametrize("key, opcode", [
    ("gfx942/torchao_int8_matmul/655152b56592/IRS103/amdgcn:419", "ds_read_u8"),
    ("gfx942/torchao_int8_matmul/97847b6a764a/IRS103/amdgcn:352", "ds_read_u8"),
])
def test_int8_operand_traffic_on_the_dots_line_belongs_to_the_tile_feeding_the_dot(corpus_findings, key, opcode):
    """torchao's int8 B tile is read a byte at a time on gfx942; LLVM gives those instructions the
    tl.dot line, not the load line of the TTGIR local_alloc/local_load."""
    (f,) = _at(corpus_findings, key)
    assert f.severity == "warning" and f"of 1 B per lane ({opcode})" in f.message
    assert "the dot's B tile (the instructions carry the dot's line; the tile is staged at" in f.message


@pytest.mark.parametrize("key", ["sm_90/torchao_int8_matmul/431a563ea70e/IRS103/ptx:830",
                                 "sm_90/torchao_int8_matmul/77a6217a5616/IRS103/ptx:344"])
def test_int8_b_tile_transposed_in_inline_asm_is_the_b_tile_at_its_load_line(corpus_findings, key):
    """On sm_90 the byte stores that transpose torchao's N-contiguous int8 B tile into K-major shared
    memory are inline asm (prmt byte extraction); LLVM writes a .loc before each asm line, counting up
    from the load line. With a block's first .loc kept they carry the load line and are the B tile
    itself, a transpose: 431a563ea70e holds 16x16 per thread, its 16-element run along N."""
    (f,) = _at(corpus_findings, key)
    assert f.severity == "warning" and "of 1 B per lane (st.shared.b8)" in f.message
    assert "the dot's B tile is transposed on its way into LDS" in f.message
    assert "N x K tensor used through tl.trans" in f.fix


def test_fix_texts_follow_what_the_tile_is(corpus_findings):
    """Register state is no tensor in memory (fla's b_h1); a row scale loaded as a 2-D broadcast is no
    lost contiguity fact (torchao); two dots' warp layouts are no 'produce it along a dimension' (fla)."""
    (state,) = _at(corpus_findings, "gfx942/fla_linear_attention/38dcfd3d65f0/IRS103/amdgcn:710")
    assert "register state, not a tensor in memory" in state.fix and "N x K tensor" not in state.fix
    (scale,) = _at(corpus_findings, "gfx942/torchao_int8_matmul/97847b6a764a/IRS103/amdgcn:736")
    assert "broadcast from 128x1" in scale.message and "contiguity" not in scale.fix
    assert "as a vector" in scale.fix
    (chained,) = _at(corpus_findings, "gfx942/fla_linear_attention/57efa48b8813/IRS103/amdgcn:1386")
    assert "warps [8, 1]" in chained.message and "produce it along" not in chained.fix


@pytest.mark.parametrize("key, element, opcode", [
    ("sm_90/inductor_llama_block/4a5cf39637dc/IRS103/ptx:216", "64x32 bf16", "ld.shared.b16"),
    ("sm_90/inductor_llama_block/dbae46e784fa/IRS103/ptx:1235", "32x32 f32", "st.shared.b32"),
])
def test_an_inductor_transpose_is_the_datas_not_a_lost_contiguity_fact(corpus_findings, key, element, opcode):
    """inductor's RoPE kernels (H100 run) load the cos/sin table (in_ptr1) along dim 0 and the bf16
    activations and output along dim 1, and transpose each tile through LDS (#blocked [1, 8] order [1, 0]
    vs #blocked1 [4, 1] order [0, 1]). Each thread's run lies along another dimension in each layout, so a
    side moves one element at a time; the fix was 'restore the store's contiguity facts (tl.multiple_of)'
    for a store already 16 B a lane, in a kernel nobody edits by hand."""
    (f,) = _at(corpus_findings, key)
    assert f"({opcode})" in f.message and f"transposes the {element} tile" in f.message
    assert "one side moves one element at a time" in f.message
    assert "in_ptr1 loaded along dim 0" in f.message and "out_ptr0 stored along dim 1" in f.message
    assert "tl.multiple_of" not in f.fix and "IRS102" not in f.fix
    assert "inductor generated this kernel" in f.fix and "laid out alike" in f.fix


def test_no_message_names_an_unroll_factor_or_zero_elements(corpus_findings):
    """Issue 21 defect 3 (the unroll estimate) and defect 7 ('0 elements at a time')."""
    assert corpus_findings
    for s in corpus_findings.values():
        assert "unrolled" not in s.message and " 0 element" not in s.message, s.key


# -- defect 7: an fp8 GEMM for gfx942, compiled here by Triton 3.9 -----------------------------------


def _fp8_gemm(tmp_path, monkeypatch, b_k_contiguous: bool, block_k: int, nonk: int):
    """fixtures/kernels/gemm.py with float8e4nv operands: gfx942 has no OCP-fp8 MFMA, so Triton upcasts
    to f16 and feeds v_mfma_f32_*_f16, whose K group (kWidth 4) is 4 bytes of fp8 in LDS."""
    triton = pytest.importorskip("triton", minversion="3.9")
    import sys

    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from irscope.pipeline.analyze import scan
    from irscope.engine.selection import RuleSelection

    sys.path.insert(0, str(FIXTURES / "kernels"))
    from gemm import matmul_kernel

    sig = {"a_ptr": "*fp8e4nv", "b_ptr": "*fp8e4nv", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
           "stride_am": "i32", "stride_ak": "constexpr", "stride_bk": "constexpr" if b_k_contiguous else "i32",
           "stride_bn": "i32" if b_k_contiguous else "constexpr", "stride_cm": "i32", "stride_cn": "constexpr",
           "BLOCK_M": "constexpr", "BLOCK_N": "constexpr", "BLOCK_K": "constexpr", "GROUP_M": "constexpr"}
    constexprs = {"stride_ak": 1, "stride_cn": 1, "BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": block_k, "GROUP_M": 8,
                  "stride_bk" if b_k_contiguous else "stride_bn": 1}
    names = list(sig)
    attrs = {(names.index(n),): [["tt.divisibility", 16]] for n in names if sig[n] != "constexpr" and n != "M"}
    with triton_cache_at(tmp_path):
        kernel = triton.compile(ASTSource(matmul_kernel, sig, constexprs, attrs),
                                target=GPUTarget("hip", "gfx942", 64),
                                options={"num_warps": 4, "num_stages": 2, "matrix_instr_nonkdim": nonk})
    report = scan(tmp_path, index=None, rules=RuleSelection.only(NarrowLdsAccess))
    (kernel_report,) = report.kernels
    return kernel.asm["amdgcn"], list(kernel_report.findings)


def test_fp8_reads_of_a_whole_k_group_are_not_narrow(tmp_path, monkeypatch):
    """Both operands K-contiguous: A and B are written 4 bytes a lane (ds_write2st64_b32, the swizzle
    vector of 4 fp8) and read back with ds_read2_b32, each access the 4 K elements one f16 MFMA lane
    consumes. Nothing to report, and no K-contiguous store called a transpose."""
    asm, findings = _fp8_gemm(tmp_path, monkeypatch, b_k_contiguous=True, block_k=64, nonk=32)
    assert "ds_read2_b32" in asm and "v_mfma_f32_32x32x8_f16" in asm and "ds_write2st64_b32" in asm
    assert findings == []


def test_fp8_b_read_a_byte_at_a_time_is_reported(tmp_path, monkeypatch):
    """B N-contiguous (BLOCK_K 32, 16x16 MFMA): the K group is gathered with ds_read_u8, a warning; A's
    ds_read2_b32 K groups are not."""
    asm, findings = _fp8_gemm(tmp_path, monkeypatch, b_k_contiguous=False, block_k=32, nonk=16)
    assert "ds_read_u8" in asm and "ds_read2_b32" in asm
    (f,) = findings
    assert f.severity == "warning" and "of 1 B per lane (ds_read_u8)" in f.message
    assert "LDS keeps the dot's B tile contiguous along dim 1" in f.message and " 0 element" not in f.message
