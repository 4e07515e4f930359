"""Issue 21 on the real-world corpus: IRS302, IRS40x and IRS601 fixes follow from what the kernel is.

Each test reads real compiler output (fixtures/real_world, public kernels compiled by Triton 3.9)
and checks a finding against the artifact lines it rests on: the fix names a knob the kernel has,
or says there is none.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from conftest import REPO

sys.path.insert(0, str(REPO / "fixtures" / "real_world"))
import corpus  # noqa: E402


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    return corpus.scan_runs(corpus.extract(tmp_path_factory.mktemp("real-world")))


def kernel(reports, target, script, prefix):
    (kr,) = [k for k in reports[(target, script)].kernels if k.kernel.hash.startswith(prefix)]
    return kr


def found(kr, code):
    return [f for f in kr.findings if f.code == code]


def ttgir(kr) -> list[str]:
    return Path(kr.kernel.artifact("ttgir").path).read_text().splitlines()


def amdgcn(kr) -> str:
    return Path(kr.kernel.artifact("amdgcn").path).read_text()


# -- IRS302 ------------------------------------------------------------------------------------

def test_a_scale_converted_into_the_mfma_layout_is_not_the_stores(reports):
    """Defect 6: on gfx942 the GEMM stores from the MFMA layout; a row/column scale (or inductor's 2-D
    broadcast scale tile) converted into #mma on its way to the product is not a convert before the store."""
    checked = 0
    for kr in reports[("gfx942", "torchao_int8_matmul")].kernels:
        lines = ttgir(kr)
        into_mma = [n for n, line in enumerate(lines, 1) if "ttg.convert_layout" in line and "#mma> loc" in line
                    and "-> tensor<" in line and line.split("->")[1].strip().startswith("tensor<")
                    and ", #mma>" in line.split("->")[1]]
        stores = [line for line in lines if "amdg.buffer_store" in line]
        if into_mma and stores and all("#mma>" in s for s in stores):
            checked += 1
            assert not [f for f in found(kr, "IRS302") if f.line in into_mma], kr.kernel.hash
    assert checked >= 4  # _scaled_int8_mm_kernel configs and scaled_matmul_kernel_with_block_pointers


def test_an_accumulator_already_16_bytes_a_lane_gets_no_pointer_facts_fix(reports):
    """Defect 9: liger's RMSNorm backward stores its dW row (8 f32 a lane from the bf16 loads) through LDS
    into 4 f32 a lane: both are buffer_store_dwordx4 widths, so the convert is the coalescing choice."""
    kr = kernel(reports, "gfx942", "liger_kernel_ops", "8f12bf465547")
    (f,) = found(kr, "IRS302")
    line = ttgir(kr)[f.line - 1]
    assert "ttg.convert_layout" in line and "buffer_store_dwordx4" in amdgcn(kr)
    assert "blocked[8|64|8|0]" in f.message and "blocked[4|64|8|0]" in f.message
    assert "tl.multiple_of" not in f.fix
    assert f.fix.startswith("both layouts store 16 B a lane (the value holds 8 contiguous elements a lane, "
                            "the store takes 4)")


def test_a_reduction_result_and_a_flattened_tile_say_what_they_are(reports):
    kr = kernel(reports, "gfx942", "fla_linear_attention", "d7cf311c41df")  # l2norm's rstd: tl.sum's result
    (f,) = found(kr, "IRS302")
    origin = int(re.search(r"TTGIR line (\d+)", f.fix).group(1))
    assert '"tt.reduce"' in ttgir(kr)[origin - 1] and "tl.multiple_of" not in f.fix
    kr = kernel(reports, "gfx942", "bitsandbytes_triton_quant", "d0ccac464a9a")  # codes from a [1, 256] tile
    for f in found(kr, "IRS302"):
        origin = int(re.search(r"TTGIR line (\d+)", f.fix).group(1))
        assert "tt.reshape" in ttgir(kr)[origin - 1] and "flattened by tl.reshape" in f.fix


def test_a_16x16_accumulator_block_is_not_sent_to_a_tensor_descriptor(reports):
    kr = kernel(reports, "sm_90", "fla_linear_attention", "fa38c5ab150c")  # kkt solve: ten 16x16 bf16 blocks
    small = [f for f in found(kr, "IRS302") if "; 512 B tile" in f.message]
    assert small and all("tensor descriptor per tile this small" in f.fix for f in small)
    kr = kernel(reports, "sm_90", "gemlite_lowbit_gemm", "de3c20d52ac6")  # a 64x256 GEMM epilogue: TMA fits
    (f,) = found(kr, "IRS302")
    assert "32768 B tile" in f.message and f.fix.startswith("store the tile with a tensor descriptor")


# -- IRS601 ------------------------------------------------------------------------------------

def test_a_grid_of_whole_rows_says_there_is_nothing_to_tune(reports):
    """Defect 9 for IRS601: RMSNorm forward is one 4096-wide row per program, reduced whole."""
    kr = kernel(reports, "gfx942", "liger_kernel_ops", "db20651a9424")
    (f,) = found(kr, "IRS601")
    line = ttgir(kr)[int(re.search(r"TTGIR line (\d+)", f.message).group(1)) - 1]
    assert '"tt.reduce"' in line and "tensor<4096xf32" in " ".join(ttgir(kr))
    assert f.severity == "info" and f.fix.startswith("nothing to tune") and "BLOCK" not in f.fix


@pytest.mark.parametrize("target,script,prefix,start", [
    ("gfx942", "fla_linear_attention", "348d1f904d38", "fewer rows per program"),  # l2norm: 128 rows a program
    ("gfx942", "torchao_int8_matmul", "ded1758e08be", "a smaller output tile (the accumulator is"),  # GEMM
    ("sm_90", "fla_linear_attention", "ea9ef496ad76", "a smaller state block"),  # chunk_h: state through the loop
])
def test_a_grid_too_small_names_the_split_the_kernel_has(reports, target, script, prefix, start):
    (f,) = found(kernel(reports, target, script, prefix), "IRS601")
    assert f.fix.startswith(start)


@pytest.mark.parametrize("target,prefix,start_line", [("gfx942", "8228d31a50cc", 154), ("sm_90", "555e3046c8f7", 176)])
def test_a_loop_split_over_a_grid_axis_takes_more_pieces(reports, target, prefix, start_line):
    """vLLM's MLA decode stage 1 (grid batch x head blocks x num_kv_splits = 8x1x4) runs its KV loop from
    kv_len_per_split * split_kv_id (program id z): its split is more KV pieces, not halving the 16 heads
    that share the one latent KV head (the fix said "fewer rows per program", 8 rows)."""
    kr = kernel(reports, target, "vllm_attention", prefix)
    lines = ttgir(kr)
    assert "%split_kv_id = tt.get_program_id z" in " ".join(lines)
    assert lines[start_line - 1].strip().startswith("%split_kv_start = arith.muli") and "%split_kv_id" in lines[
        start_line - 1]
    (f,) = found(kr, "IRS601")
    assert f.severity == "warning" and f.message.startswith("grid 8x1x4 = 32 workgroups")
    assert f.fix.startswith("more pieces of the loop it already splits") and "rows" not in f.fix
    assert f"(TTGIR line {start_line})" in f.fix and "grid axis z has 4 now, 8 give 64 programs" in f.fix


def test_a_persistent_grid_one_per_cu_where_three_fit(reports):
    """The known miss: liger's DyT backward launches 304 programs (one per CU) that loop over rows with
    tl.num_programs, where its 72 VGPRs and 16 KiB of LDS let 3 share a CU."""
    kr = kernel(reports, "gfx942", "liger_kernel_ops", "ec5f21038fe0")
    assert "tt.get_num_programs" in " ".join(ttgir(kr)) and ".vgpr_count:     72" in amdgcn(kr)
    (f,) = found(kr, "IRS601")
    assert f.severity == "info" and f.message.startswith("grid 1x304x1 = 304 workgroups, 1 per CU on 304 CUs")
    assert "lets 3 share a CU (912 at once), so it runs at 2 waves/SIMD where 6 fit" in f.message
    # one per CU where only one fits (or latency is mostly hidden already): nothing to say
    for kr in reports[("gfx942", "liger_kernel_ops")].kernels:
        o = kr.occupancy.occupancy if kr.occupancy else None
        if o is not None and o.groups == 1:
            assert not [f for f in found(kr, "IRS601") if "a grid sized to the CU count" in f.message]


# -- IRS403 / IRS402 ---------------------------------------------------------------------------

def test_an_lds_step_past_waves_per_eu_needs_the_cap_raised(reports):
    """The two false IRS403 findings: gemlite configs with waves_per_eu=4 and 2 named a VGPR cut that the
    padded allocation would undo; the step now says the cap must go up."""
    for prefix, wpe, after in (("0ceb431ae463", 4, 5), ("cecbf13d87c8", 2, 3)):
        kr = kernel(reports, "gfx942", "gemlite_lowbit_gemm", prefix)
        assert f'"waves_per_eu": {wpe}' in Path(kr.kernel.artifact("json").path).read_text()
        (f,) = found(kr, "IRS403")
        assert f"give {after} only with" in f.message and f"waves_per_eu raised to {after} (now {wpe}" in f.message
        assert f"raise waves_per_eu to {after}" in f.fix


def test_no_register_cut_is_offered_to_a_spilling_kernel(reports):
    kr = kernel(reports, "gfx942", "sageattention_int8", "941703a39d06")
    assert re.search(r"\.vgpr_spill_count:\s+18", amdgcn(kr))
    (f,) = found(kr, "IRS403")
    assert "cut VGPRs" not in f.fix and "already spills 18 VGPRs" in f.fix
    kr = kernel(reports, "sm_90", "fla_linear_attention", "16ce6998d275")  # 255 registers, 440 B of stack
    (f,) = found(kr, "IRS403")
    assert "cut registers" not in f.fix and "440 B of stack" in f.fix


@pytest.mark.parametrize("prefix,used", [("e095abcddc50", 50), ("b27b3731e248", 58), ("a8c854fdb05e", 54)])
def test_a_waves_per_eu_cap_that_pads_the_vgprs_is_reported(reports, prefix, used):
    """The IRS402 misses: gemlite's waves_per_eu=2 configs use ~50 VGPRs, LLVM allocates 169 to hold the
    cap (LLVM's own '; Occupancy: 2'), and nothing said so."""
    kr = kernel(reports, "gfx942", "gemlite_lowbit_gemm", prefix)
    asm = amdgcn(kr)
    assert ".amdhsa_next_free_vgpr 169" in asm and f".vgpr_count:     {used}" in asm and "; Occupancy: 2" in asm
    (f,) = found(kr, "IRS402")
    assert "next_free_vgpr" in asm.splitlines()[f.line - 1]
    assert f.message.startswith(f"waves_per_eu=2 caps occupancy at 2 waves/SIMD: LLVM allocates 169 VGPRs a wave "
                                f"(.amdhsa_next_free_vgpr) where the kernel uses {used}")
    assert f.fix.startswith("raise waves_per_eu to") and json.loads(
        Path(kr.kernel.artifact("json").path).read_text())["waves_per_eu"] == 2


def test_one_wave_from_a_waves_per_eu_1_cap_names_the_padded_allocation(reports):
    """vLLM's MLA decode stage 1 asks waves_per_eu=1 on ROCm: the kernel uses 200 VGPRs and LLVM allocates 257
    so that one wave fits. IRS404 said "257 VGPRs (.vgpr_count)" at the .amdhsa_next_free_vgpr line and told
    the kernel to cut registers it does not use; the cap is what to raise."""
    kr = kernel(reports, "gfx942", "vllm_attention", "8228d31a50cc")
    asm = amdgcn(kr)
    assert ".amdhsa_next_free_vgpr 257" in asm and ".vgpr_count:     200" in asm
    assert json.loads(Path(kr.kernel.artifact("json").path).read_text())["waves_per_eu"] == 1
    (f,) = found(kr, "IRS404")
    assert "next_free_vgpr" in asm.splitlines()[f.line - 1]
    assert "257 VGPRs (.vgpr_count)" not in f.message
    assert f.message.startswith("1 wave per SIMD: 257 VGPRs allocated a wave (.amdhsa_next_free_vgpr; the kernel "
                                "uses 200, .vgpr_count)")
    assert "waves_per_eu=1's cap; without the cap 2 waves/SIMD fit" in f.message
    assert f.fix.startswith("raise waves_per_eu to 2 or drop it")


def test_spills_under_a_waves_per_eu_cap_name_the_cap_first(reports):
    """Triton's tutorial 03 GEMM, 64x64x32 config with waves_per_eu=8 on gfx942: LLVM holds it to 64 VGPRs
    (512 // 8) and spills 7; the fix led with smaller tiles for a tile that is already the smallest."""
    kr = kernel(reports, "gfx942", "tutorial_03-matrix-multiplication", "31e9b89d8be2")
    asm = amdgcn(kr)
    assert ".vgpr_count:     64" in asm and ".vgpr_spill_count: 7" in asm
    assert json.loads(Path(kr.kernel.artifact("json").path).read_text())["waves_per_eu"] == 8
    (f,) = found(kr, "IRS401")
    assert f.fix.startswith("waves_per_eu=8 holds the kernel to 64 VGPRs (.vgpr_count 64) and LLVM spills the "
                            "rest: ask for fewer waves (waves_per_eu=7 allows 72 VGPRs) or drop it")
    spilling = kernel(reports, "gfx942", "sageattention_int8", "941703a39d06")  # spills with no cap set
    (f,) = found(spilling, "IRS401")
    assert f.fix.startswith("keep fewer values live")


# -- inductor's kernels (an H100 run of a Llama block, Triton 3.6): their configs are inductor's ------------------

INDUCTOR = ("sm_90", "inductor_llama_block")


def test_inductor_occupancy_fixes_name_inductors_knobs_not_block_k(reports):
    """A triton_mm template config and a mix-order reduction candidate (a ws_ptr workspace, its row loop
    pipelined with tt.num_stages = 5 while the kernel's num_stages is 1) are picked by inductor: no BLOCK_K edit."""
    mix = kernel(reports, *INDUCTOR, "072036358f3d")
    assert mix.kernel.options.num_stages.value == 1
    assert any("ws_ptr" in line for line in ttgir(mix)) and any("tt.num_stages = 5" in line for line in ttgir(mix))
    (lds,) = found(mix, "IRS403")
    assert "mix-order reduction" in lds.fix and "num_stages=5" in lds.fix and "BLOCK_K" not in lds.fix
    mm = kernel(reports, *INDUCTOR, "e1b14cc419f1")
    for f in found(mm, "IRS403") + found(mm, "IRS404"):
        assert "inductor's GEMM template" in f.fix and "BLOCK_K" not in f.fix


def test_an_inductor_config_that_cannot_launch_is_one_error_not_occupancy_one(reports):
    """262144 B of shared memory (json) over sm_90's 232448: IRS403's error, and no "0 warps per SM" IRS404."""
    kr = kernel(reports, *INDUCTOR, "fb54d9b0b194")
    assert json.loads(Path(kr.kernel.artifact("json").path).read_text())["shared"] == 262144
    (error,) = found(kr, "IRS403")
    assert error.severity == "error" and "232448" in error.fix and "autotune list" not in error.fix
    assert found(kr, "IRS404") == []


def test_inductor_grids_a_mix_order_split_and_a_tiny_arange(reports):
    """A mix-order reduction is already a cross-program reduction (split_size = min(.., 32) rows a program,
    partials to ws_ptr): its grid follows the split size. A 1024-element arange on 4 programs is info."""
    mix = kernel(reports, *INDUCTOR, "072036358f3d")
    assert any("arith.minsi" in line and "%c32_i32" in line for line in ttgir(mix))
    (grid,) = found(mix, "IRS601")
    assert "reduces 32 rows" in grid.message and "mix_order_reduction_split_size" in grid.fix
    assert "cross-program reduction" not in grid.fix
    arange = kernel(reports, *INDUCTOR, "640b40bbf8ca")
    assert any("dense<1024>" in line for line in ttgir(arange))
    (grid,) = found(arange, "IRS601")
    assert grid.severity == "info" and "covers 1024 elements (4 programs of 256)" in grid.message
    assert "scalar" not in grid.fix


def test_inductor_stores_a_transposed_output_and_a_template_epilogue(reports):
    """The RoPE kernel stores to yindex*512 + x (512 elements apart along the layout's fastest dim): no
    pointer fact widens it. A triton_mm epilogue is inductor's template code: no tensor descriptor to write."""
    rope = kernel(reports, *INDUCTOR, "f60d2fe59813")
    (conv,) = [f for f in found(rope, "IRS302") if f.line == 90]
    assert "512 elements apart" in conv.fix and "tl.multiple_of" not in conv.fix
    mm = kernel(reports, *INDUCTOR, "e1b14cc419f1")
    (epilogue,) = found(mm, "IRS302")
    assert "inductor's GEMM template" in epilogue.fix and "make_tensor_descriptor" not in epilogue.fix


# -- IRS301 -------------------------------------------------------------------------------------

def reduce_results(lines) -> dict[str, int]:
    """TTGIR values a tt.reduce returns: name -> line."""
    return {m.group(1): n for n, line in enumerate(lines, 1)
            if (m := re.match(r'\s*(%[\w.]+) = "tt\.reduce"', line))}


def test_a_few_bytes_of_a_reduction_result_converted_once_are_not_reported(reports):
    """Issue 21 defect 10: inductor's norms convert their 2-16 row sums (8-64 B, f32) once, after the reduction
    loop, to the layout their store or rsqrt uses: a barrier per program, not worth a finding. A 64-row sum
    (256 B) still is one (info), and so are fla's 64 B sums converted inside a loop."""
    checked = 0
    for kr in reports[INDUCTOR].kernels:
        lines = ttgir(kr)
        reduced = reduce_results(lines)
        for n, line in enumerate(lines, 1):
            m = re.match(r"\s*%[\w.]+ = ttg\.convert_layout (%[\w.]+) : tensor<(\d+)xf32, #ttg\.slice", line)
            if m and m.group(1) in reduced and int(m.group(2)) * 4 <= 64 and not line.startswith("      "):
                checked += 1
                assert not [f for f in found(kr, "IRS301") if f.line == n], (kr.kernel.hash, n)
    assert checked >= 20
    sums = kernel(reports, *INDUCTOR, "e98e8653192f")  # 64 rows of 4, f32 64 converted at ttgir:71
    assert "tensor<64xf32, #ttg.slice<{dim = 1, parent = #blocked}>> -> tensor<64xf32" in ttgir(sums)[70]
    (kept,) = [f for f in found(sums, "IRS301") if f.line == 71]
    assert kept.severity == "info" and "a reduction's result" in kept.message and "256 B once" in kept.fix
    fla = kernel(reports, "gfx942", "fla_linear_attention", "e8ef0accc21f")
    (looped,) = [f for f in found(fla, "IRS301") if f.line == 568]
    assert "a reduction's result" in looped.message and "in a loop" in looped.message


def test_a_loop_invariant_vector_converted_every_iteration_says_so(reports):
    """Inductor's mix-order RMSNorm backward loads the norm weight (1x2048 bf16, address made at ttgir:59,
    before the row loop at 68) inside the loop at 82 and converts it through shared memory at 105, every
    iteration. The fix says the load is loop-invariant and that the kernel is inductor's (no hand edit);
    the 2-pass RMSNorm's weight, loaded at each R0 step's offsets, is not called invariant."""
    mix = kernel(reports, *INDUCTOR, "334af55c53bc")
    lines = ttgir(mix)
    assert "tt.addptr %tmp5, %r0_index" in lines[58] and "scf.for" in lines[67] and "tt.load %tmp5_14" in lines[81]
    (conv,) = [f for f in found(mix, "IRS301") if f.line == 105]
    assert conv.severity == "info" and "the same every iteration" in conv.message
    assert "the load at line 82 reads the same addresses every iteration of the loop at line 68" in conv.fix
    assert "inductor's (triton_)" in conv.fix and "load it once before the loop" not in conv.fix
    norm = kernel(reports, *INDUCTOR, "023219a503fd")
    assert "tt.addptr %tmp11, %r0_index_29" in ttgir(norm)[90]
    (weight,) = [f for f in found(norm, "IRS301") if f.line == 101]
    assert "the same every iteration" not in weight.message and "coalesced layout" in weight.fix


# -- IRS101 ------------------------------------------------------------------------------------

@pytest.mark.parametrize("prefix,line,op", [
    ("e23adc9cd19c", 49, "tt.load"),  # mix-order reduction candidate, the row index loop-carried (+2 a step)
    ("d3cda55d325b", 53, "ttg.async_copy_global_to_local"),  # the same, pipelined: cp.async 4 B into shared
    ("dfb6e1b0dca2", 51, "tt.load"),  # triton_red_: the per-row scalar after the row sum
])
def test_a_per_row_scalar_every_lane_reads_is_no_narrow_load(reports, prefix, line, op):
    """Inductor loads a per-row f32 scalar as a [2, 1] tensor in the consumer's #blocked layout, whose 32
    lanes run along the size-1 dimension (threadsPerWarp [1, 32]): every lane of a warp reads the same two
    addresses, so the 4-byte loads (cp.async copies) are one transaction each and no pointer fact widens
    them. Triton gives a tensor smaller than the CTA its consumer's layout on purpose (isExpensiveLoadOrStore)."""
    from irscope.ir.layouts.access_width import ir_accesses
    from irscope.parsers.mlir_parser import parse_mlir

    kr = kernel(reports, *INDUCTOR, prefix)
    ptx = Path(kr.kernel.artifact("ptx").path).read_text()
    narrow = re.compile(r"(ld\.global\.L1::evict_last\.L2::cache_hint\.b32|cp\.async\.ca\.shared\.global.*0x4,)")
    assert narrow.search(ptx)  # the narrow instructions are there ...
    assert not [f for f in found(kr, "IRS101") if f.python_line == line]  # ... and are not a finding
    path = kr.kernel.artifact("ttgir").path
    lines = ttgir(kr)
    accesses = [a for a in ir_accesses(parse_mlir(Path(path).read_text(), path)) if a.python_line == line]
    scalars = [a for a in accesses if a.op == op and a.shape == (2, 1)]
    assert scalars and all(a.lanes_broadcast and a.element_bytes == 4 for a in scalars)
    for a in scalars:
        assert "tensor<2x1x!tt.ptr<f32>, #blocked>" in lines[a.line - 1]
    assert "threadsPerWarp = [1, 32]" in lines[0]
    assert all(not a.lanes_broadcast for a in accesses if a.shape != (2, 1) and a.shape[0] == 2)  # the row tiles
