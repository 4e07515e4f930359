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
from conftest import FIXTURES, fixture_findings, pick_fixture, rule_findings, triton_cache_at

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
    # dequantized from the int8-packed int4 weights, through the tl.join/tl.reshape unpacking
    assert (f"f16 {rows}x{cols} tile, computed in registers from a loaded 8-bit tile, layout {layout} ("
            in finding.message)
    assert "pack them offline in the order the dot operand reads them" in finding.fix
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


# -- the real-world corpus (fixtures/real_world/): what each tile is decides the finding and its fix --------------

REAL_WORLD = FIXTURES / "real_world"
CORPUS_KERNELS = {  # (target, cache directory prefix): what the kernel shows
    ("gfx942", "EITKSLGX"): "gemlite gemm_INT_kernel: 1x256 scales staged and applied after the read",
    ("gfx942", "LMNQG3SR"): "sageattention _attn_fwd num_warps=4: int8 K staged, read into the loop's iter_args",
    ("gfx942", "SQLQHI45"): "sageattention _attn_fwd num_warps=8: P between two dots of different MFMA layouts",
    ("gfx942", "6K4I4LE2"): "fla recompute_w_u_fwd: buffer_load + in_thread_transpose stores, a pipeliner zero fill",
    ("gfx942", "DNXDWK5V"): "fla chunk_gated_delta_rule_fwd_h: the recurrent state h as operand B every chunk",
    ("gfx942", "5O5F4E6M"): "vLLM kernel_unified_attention, fp8 KV cache: K and V dequantized by a per-tensor scale",
    ("sm_90", "DA2EROKD"): "vLLM kernel_unified_attention, fp8 KV cache (sm_90): the same, K and V cp.async'd as fp8",
}


@pytest.fixture(scope="module")
def corpus_reports(tmp_path_factory):
    import tarfile

    root = tmp_path_factory.mktemp("irs301-real-world")
    found = {}
    for target in {t for t, _ in CORPUS_KERNELS}:
        prefixes = [p for t, p in CORPUS_KERNELS if t == target]
        with tarfile.open(REAL_WORLD / f"{target}.tar.xz") as tar:
            members = [m for m in tar.getmembers() if m.isfile() and any(f"/cache/{p}" in m.name for p in prefixes)]
            tar.extractall(root, members=members, filter="data")
        for prefix in prefixes:
            (directory,) = {root / Path(m.name).parent for m in members if f"/cache/{prefix}" in m.name}
            ((report, findings),) = rule_findings(LdsRoundTrip, directory).values()
            found[(target, prefix)] = (report, findings)
    return found


def trip_findings(findings):
    return [f for f in findings if "ttg.local_load" in f.message]


def test_scales_applied_after_the_lds_read_are_staging(corpus_reports):
    # gemlite gemm_INT_kernel (gfx942): the 1x256 scales and zeros are buffer_load'ed, staged
    # (local_alloc at 97/100) and read in the dot_op B layout, broadcast and fma'd into the operand
    # after its read (ttgir:107-109): the compute-after-read pattern, not a round trip to report.
    report, findings = corpus_reports[("gfx942", "EITKSLGX")]
    text = ttgir_lines(report)
    assert "ttg.local_alloc %scales_65" in text[96] and "math.fma %b_74, %b_75, %b_76" in text[108]
    assert not {97, 98, 100, 101} & {line for f in findings for line in f.lines}
    # the 128x256 f16 tile dequantized from per-element i32 loads (ttgir:102-105) is reported, with
    # the packing as the cause: staging the raw i32 tile would move twice the bytes
    (dequantized,) = trip_findings(findings)
    assert dequantized.line == 105 and dequantized.severity == "warning"
    assert "dequantized in registers from a loaded 32-bit tile" in dequantized.message
    assert ("same shape (each packed word is loaded again for every value it holds): 131072 B, 2x the f16"
            in dequantized.fix)


def test_operand_staged_into_a_loops_iter_args_is_silent(corpus_reports):
    # sageattention _attn_fwd, num_warps=4 (gfx942): K (buffer_load i8) is local_store'd at 210/228/295/370;
    # the read at 257 enters the KV loop as its init operand (%k_486 at line 270), the one at 320 as its
    # yield: both reach the loop's tt.dot at 271. Before, that was a false warning.
    report, findings = corpus_reports[("gfx942", "LMNQG3SR")]
    text = ttgir_lines(report)
    assert "ttg.local_load %k_126" in text[256] and "%k_160" in text[269] and "tt.dot %q_117, %k_486" in text[270]
    assert findings == []


def test_softmax_p_between_two_mfma_layouts_names_the_warps_knob(corpus_reports):
    # sageattention _attn_fwd, num_warps=8, BLOCK_M=128: QK^T gets mfma 32x32x16 w8,1, PV gets w4,2
    # (BLOCK_M/32 = 4 warps along M), so P (f16 128x64) crosses warps through LDS every KV step.
    report, findings = corpus_reports[("gfx942", "SQLQHI45")]
    (p_trip,) = trip_findings(findings)
    assert p_trip.severity == "warning" and "in a loop" in p_trip.message
    assert "f16 128x64 tile, a dot's result" in p_trip.message and "as dot operand A" in p_trip.message
    assert "split the 8 warps differently" in p_trip.fix and "BLOCK_M/32 = 4 warps" in p_trip.fix
    assert "num_warps=4" in p_trip.fix and "matrix_instr_nonkdim=16" in p_trip.fix
    assert "dequantiz" not in p_trip.fix and "pack" not in p_trip.fix
    # alpha[:, None] moves between the same two layouts in the loop, with the same cause
    alpha = [f for f in findings if f.message.startswith("ttg.convert_layout") and f.severity == "warning"]
    assert alpha and all("num_warps=4" in f.fix for f in alpha)


def test_loaded_tiles_with_a_pipeliner_zero_fill_are_staging(corpus_reports):
    # fla recompute_w_u_fwd (gfx942): the writers of b_v/b_k are buffer_load results moved by
    # amdg.in_thread_transpose (ttgir:130, 135) and a constant zero tile for the stage past the end
    # (ttgir:138); the reads are scaled by b_beta in the dot_op layout and go to tt.dot. Before, the
    # constant made the tile "computed in registers".
    report, findings = corpus_reports[("gfx942", "6K4I4LE2")]
    text = ttgir_lines(report)
    assert "amdg.in_thread_transpose %cst_6" in text[136] and "ttg.local_store %b_v_87" in text[137]
    assert trip_findings(findings) == []


def test_recurrent_state_is_info_and_says_nothing_can_change_it(corpus_reports):
    # fla chunk_gated_delta_rule_fwd_kernel_h_blockdim64 (gfx942): b_h (bf16 of the loop-carried f32
    # state) is local_alloc'd and read as dot operand B of tl.dot(b_w, b_h) in every chunk.
    report, findings = corpus_reports[("gfx942", "DNXDWK5V")]
    states = [f for f in trip_findings(findings) if "loop-carried state" in f.message]
    assert states and all(f.severity == "info" for f in states)
    assert all("the recurrence itself; nothing in the kernel's hands" in f.fix for f in states)
    assert all("pack" not in f.fix for f in trip_findings(findings))


@pytest.mark.parametrize("target, prefix, lines", [("gfx942", "5O5F4E6M", (407, 440)),
                                                   ("sm_90", "DA2EROKD", (428, 432))])
def test_per_tensor_scaled_fp8_kv_names_the_scale_not_the_packing(corpus_reports, target, prefix, lines):
    # vLLM's _cast_kv_tile for an fp8 KV cache with a per-tensor scale: K/V = (x.to(f32) * scale).to(bf16)
    # (gfx942 ttgir 398-403: tt.fp_to_fp, arith.mulf by a tt.splat of the scalar tl.load(k_scale), arith.truncf),
    # then local_alloc of the bf16 tile. The work is elementwise already, so "keep it elementwise / pack
    # offline" did not fit; the fix now says to scale the dot's result so Triton stages the fp8 tile.
    report, findings = corpus_reports[(target, prefix)]
    text = ttgir_lines(report)
    assert all("ttg.local_alloc" in text[line - 1] and "bf16" in text[line - 1] for line in lines)
    dequantized = [f for f in trip_findings(findings) if f.line in lines]
    assert len(dequantized) == 2 and all(f.severity == "warning" for f in dequantized)
    for f in dequantized:
        assert "computed in registers from a loaded 8-bit tile" in f.message
        assert "a per-tensor scale, arith.mulf" in f.fix and "4096 B) instead of the 8-bit tile (2048 B)" in f.fix
        assert "tl.dot(a, b.to(a.dtype)) * scale" in f.fix and "pack" not in f.fix


# -- kernels compiled here with Triton 3.9 for gfx942 ---------------------------------------------------------------

KERNELS = Path(__file__).parent / "data" / "irs301_kernels.py"


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """The kernels of tests/data/irs301_kernels.py compiled for gfx942: name -> [(report, findings)]."""
    pytest.importorskip("triton")
    import importlib.util

    cache = tmp_path_factory.mktemp("irs301-cache")
    spec = importlib.util.spec_from_file_location("irs301_kernels", KERNELS)
    kernels = importlib.util.module_from_spec(spec)
    with triton_cache_at(cache):
        spec.loader.exec_module(kernels)
        kernels.compile_all()
    out: dict = {}
    for report, findings in rule_findings(LdsRoundTrip, cache).values():
        out.setdefault((report.kernel.name, report.kernel.options.num_warps.value), []).append((report, findings))
    return out


def test_raw_fp8_tile_converted_after_the_read_is_staging(compiled):
    # issue 21 defect 5: B holds fp8 e4m3 as bytes; Triton stages the raw i8 tile and does
    # tt.bitcast + tt.fp_to_fp in the dot_op layout after the read. Before, a false warning.
    ((report, findings),) = compiled[("fp8_bytes_gemm", 4)]
    text = "\n".join(ttgir_lines(report))
    assert re.search(r"ttg\.local_alloc %\w+ : \(tensor<64x128xi8", text)
    assert re.search(r"tt\.bitcast %\w+ : tensor<64x128xi8, #ttg\.dot_op", text) and "tt.fp_to_fp" in text
    assert findings == []


def test_the_warps_knob_removes_the_p_round_trip(compiled):
    # int8 QK^T then f16 PV, BLOCK_M=128: at num_warps=8 P goes through LDS (the fix names
    # num_warps=4); at num_warps=4 both dots share one MFMA layout and no trip is reported.
    ((report8, findings8),) = compiled[("int8_attention", 8)]
    (p_trip,) = trip_findings(findings8)
    assert p_trip.severity == "warning" and "num_warps=4" in p_trip.fix
    assert "local_alloc" in "\n".join(ttgir_lines(report8))
    ((report4, findings4),) = compiled[("int8_attention", 4)]
    assert findings4 == []
    assert not re.search(r"ttg\.local_alloc %\w+ : \(tensor<128x64xf16", "\n".join(ttgir_lines(report4)))


def test_scaling_the_dot_result_stages_the_fp8_tile(compiled):
    # The fix of the test above, compiled: (k.to(f32) * scale).to(bf16) before the dot makes Triton stage
    # the bf16 tile (a warning naming the scale); tl.dot(q, k.to(bf16)) * scale stages the raw fp8 tile and
    # converts it in the dot_op layout after the read (tt.fp_to_fp), which is staging, not a finding.
    runs = {"fp8" if re.search(r"ttg\.local_alloc %\w+ : \(tensor<128x16xf8E4M3FNUZ", "\n".join(ttgir_lines(r)))
            else "bf16": (r, f) for r, f in compiled[("fp8_kv_scaled", 4)]}
    report, findings = runs["bf16"]
    (trip,) = trip_findings(findings)
    assert trip.severity == "warning" and "a per-tensor scale, arith.mulf" in trip.fix
    report, findings = runs["fp8"]
    assert re.search(r"tt\.fp_to_fp %\w+ : tensor<128x16xf8E4M3FNUZ, #ttg\.dot_op", "\n".join(ttgir_lines(report)))
    assert findings == []
