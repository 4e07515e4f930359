"""IRS202 on the real-world corpus and on a compiled ping-pong GEMM: what each barrier is for,
the fix that follows from it, the unroll from the loop's own accumulator chains, and the loops
whose barriers are the norm (a two-dot pipelined attention loop, Triton's block ping-pong).

The expectations are recounted from the artifact text (barriers between `stmatrix` and
`ld.shared` of one Python line, MFMA accumulator operands), not from the rule's helpers.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest
from conftest import REPO, triton_cache_at

from irscope.isa.assembly import read_assembly
from irscope.pipeline.analyze import scan
from irscope.engine.context import KernelContext
from irscope.engine.selection import RuleSelection
from irscope.rules.irs202_barriers_per_iteration import BarriersPerIteration

sys.path.insert(0, str(REPO / "fixtures" / "real_world"))
import corpus  # noqa: E402


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return corpus.extract(tmp_path_factory.mktemp("real-world-irs202"))


def kernel_dir(runs, target: str, script: str, prefix: str) -> Path:
    for meta in (runs[(target, script)] / "cache").glob("*/*.json"):
        if f'"hash": "{prefix}' in meta.read_text():
            return meta.parent
    raise KeyError(prefix)


def findings(path: Path):
    report = scan(path, index=None, rules=RuleSelection.only(BarriersPerIteration))
    (kr,) = report.kernels
    return kr, [f for f in kr.findings if f.code == "IRS202"]


def loops(kr):
    ctx = KernelContext(kr.kernel, kr.resources, read_assembly(kr.kernel).programs, kr.occupancy)
    program = ctx.program("amdgcn") or ctx.program("ptx")
    return ctx.loops(program, program.functions[0])


def test_conversion_rounds_are_named_and_no_tile_is_suggested(runs):
    """fla's recompute_w_u (num_warps=2, sm_90): the b_u store convert at wy_fast.py:90 runs in 8
    rounds of stmatrix / bar.sync / ld.shared / bar.sync: 15 of the loop's 16 barriers."""
    kr, found = findings(kernel_dir(runs, "sm_90", "fla_linear_attention", "3868a0310355"))
    f = next(f for f in found if f.python_line == 82)
    text = Path(f.path).read_text().splitlines()
    rounds = [n for n in f.lines if text[n - 2].lstrip().startswith("stmatrix")]
    between = [n for n in f.lines if text[n - 2].lstrip().startswith(("stmatrix", "ld.shared"))]
    assert len(rounds) == 8 and len(between) == 15 and f.number("count") == 16
    assert "15 for the convert_layout at .ttgir line" in f.message and "(wy_fast.py:90), in 8 rounds" in f.message
    assert f.fix.startswith("15 of the 16 barriers are layout conversions")
    assert "BLOCK_K" not in f.fix and "num_stages" not in f.fix and "no tile size removes them" in f.fix


def test_recurrent_state_staged_as_a_dot_operand_gets_no_tile_advice(runs):
    """fla's chunk_gated_delta_rule h kernel (gfx942, num_stages=2): b_h1 and b_h2, carried by the
    time loop and updated by tl.dot, are written to LDS (ds_write_b16 at chunk_delta_h.py:185/193)
    as the B operand of the next step's dots."""
    kr, (f,) = findings(kernel_dir(runs, "gfx942", "fla_linear_attention", "1b6e3b2bb5cf"))
    assert "loop-carried state staged in LDS as a dot operand" in f.message
    assert "(chunk_delta_h.py:185)" in f.message and "(chunk_delta_h.py:193)" in f.message
    assert "recurrence" in f.fix and "neither a tile size nor num_stages removes them" in f.fix
    assert "BLOCK_K" not in f.fix and "trade" not in f.fix
    ttgir = (Path(kr.kernel.directory) / f"{kr.kernel.name}.ttgir").read_text().splitlines()
    for n in re.findall(r"ttg.local_alloc at .ttgir line (\d+) \(chunk_delta_h.py:18[5]\)", f.message):
        assert "ttg.local_alloc %" in ttgir[int(n) - 1] and "#mma>" in ttgir[int(n) - 1]


def test_attention_p_through_lds_names_the_two_mma_layouts(runs):
    """sageattention on gfx942: QK runs on #mma, PV on #mma1, so P goes through LDS (ds_write_b16,
    ds_read_u16 at attn_qk_int8_per_block.py:30)."""
    kr, (f,) = findings(kernel_dir(runs, "gfx942", "sageattention_int8", "c56719bf8d61"))
    assert "2 for a dot's result passed to the next dot through LDS" in f.message
    assert "different MMA layouts (#mma and #mma1)" in f.fix
    assert "BLOCK_K" not in f.fix


def test_two_dot_pipelined_attention_loop_is_the_norm(runs):
    """sageattention on sm_90: 3 bar.sync per KV step, each right after a cp.async.wait_group or a
    wgmma.wait_group (a stage made ready, then released by QK and by PV): not reported."""
    kr, found = findings(kernel_dir(runs, "sm_90", "sageattention_int8", "e68a3046f7c1"))
    assert found == []
    (loop,) = [lp for lp in loops(kr) if lp.matrix]
    text = Path(kr.kernel.artifact("ptx").path).read_text().splitlines()
    bars = [n for n in range(loop.first_line, loop.last_line + 1) if text[n - 1].lstrip().startswith("bar.sync")]
    assert len(bars) == 3
    for n in bars:
        before = next(t.strip() for t in reversed(text[:n - 1]) if t.strip() and not t.strip().startswith("//"))
        assert before.startswith(("cp.async.wait_group", "wgmma.wait_group"))


def test_unpipelined_dequant_gemm_gets_num_stages_two_only_where_it_fits(runs):
    """gemlite gemm_INT_kernel at num_stages=1 on gfx942: 32 KB of A and B fit twice in 64 KiB,
    the 64x256x128 config (A 16 KB, dequantized B 64 KB) does not."""
    _, (fits,) = findings(kernel_dir(runs, "gfx942", "gemlite_lowbit_gemm", "edc7d8d2a87b"))
    assert "num_stages=2 stages them through multi-buffered LDS" in fits.fix
    assert "narrow" not in fits.fix and "buffer_load" not in fits.fix  # those loads are scales and zeros
    _, (big,) = findings(kernel_dir(runs, "gfx942", "gemlite_lowbit_gemm", "2226a92cd76a"))
    assert "only a smaller tile with num_stages=2 fits" in big.fix


def test_unroll_comes_from_the_accumulator_chains(runs):
    """torchao's int8 GEMM (gfx942, num_warps=8, warpsPerCTA [8, 1]): the 32x64 tile is too short
    for 8 waves, so every wave computes all of it: 2 accumulators x K/k = 32/16 = 4 MFMAs per K
    step, which is what one machine iteration has. Dividing the dot's work among the waves read
    it as two K steps (unroll 2); the chains (C operand = previous D) say 1. gemlite's 4-bit GEMM
    (gfx942) is really unrolled twice: each accumulator chain is 4 MFMAs where a K step has 2."""
    kr, _ = findings(kernel_dir(runs, "gfx942", "torchao_int8_matmul", "1c95925b1982"))
    (loop,) = [lp for lp in loops(kr) if lp.matrix]
    text = Path(kr.kernel.artifact("amdgcn").path).read_text().splitlines()[loop.first_line - 1:loop.last_line]
    mfma = [t.split() for t in text if t.strip().startswith("v_mfma")]
    assert len(mfma) == 4 and {m[1].rstrip(",") for m in mfma} == {"v[0:15]", "v[16:31]"}
    assert loop.unroll == 1
    kr, _ = findings(kernel_dir(runs, "gfx942", "gemlite_lowbit_gemm", "a8c854fdb05e"))
    (loop,) = [lp for lp in loops(kr) if lp.matrix]
    text = Path(kr.kernel.artifact("amdgcn").path).read_text().splitlines()[loop.first_line - 1:loop.last_line]
    a_tile_writes = [t for t in text if t.strip().startswith("ds_write_b64") and "offset:4096" not in t]
    assert len(a_tile_writes) == 2 and loop.unroll == 2  # two A-tile stage writes: two K steps


@pytest.mark.parametrize("target,prefix,isa",
                         [("gfx942", "2a1cbb1d7b70", "v_mfma"), ("sm_90", "57b8ea82b03d", "wgmma")])
def test_a_remainder_loop_witnesses_the_unroll(runs, target, prefix, isa):
    """Issue 21 defect 3: the unroll from the loop structure, the peeled remainder included. vLLM's
    prefix-prefill attention loops over the cached context with a trip count LLVM does not know, so
    LLVM unrolls it 4x into a main loop and leaves a remainder loop for the last iterations: two
    machine loops of one scf.for, whose matrix instructions (counted here from the text between the
    loops' first and last lines) are 4 to 1. On gfx942 the accumulator chains do not tell (LLVM renames
    the copies' accumulators), so the remainder is the only witness; the 16 barriers of the main loop
    are 4 per scf.for iteration, as in the remainder."""
    kr, found = findings(kernel_dir(runs, target, "vllm_attention", prefix))
    text = Path(found[0].path).read_text().splitlines()
    mine = [lp for lp in loops(kr) if lp.matrix and lp.python_line == 249]
    assert len(mine) == 2
    main, rest = sorted(mine, key=lambda lp: -lp.matrix)
    counts = [sum(1 for t in text[lp.first_line - 1:lp.last_line] if t.strip().startswith(isa)) for lp in (main, rest)]
    assert counts[0] == 4 * counts[1] > 0
    assert (main.unroll, rest.unroll) == (4, 1)
    by_loop = {f.number("count"): f for f in found if f.python_line == 249}
    assert set(by_loop) == {16, 4} and by_loop[16].number("per_step") == 4 == by_loop[4].number("count")
    assert by_loop[16].severity == by_loop[4].severity == "warning"
    assert by_loop[16].message.count("LLVM unrolled the loop 4x") == 1  # said once, per scf.for iteration


def test_other_dot_loops_are_one_machine_loop(runs):
    """Everywhere else in the corpus (Triton 3.9 for gfx942 and sm_90, 3.6 on an H100) an scf.for
    with a dot is one machine loop: the chains (or wgmma's commits) are the witness there."""
    checked = 0
    for (target, script), root in runs.items():
        if script == "vllm_attention":
            continue
        report = scan(root / "cache", index=None, rules=RuleSelection.only(BarriersPerIteration))
        for kr in report.kernels:
            ttgir = kr.kernel.artifact("ttgir")
            if ttgir is None or "tt.dot" not in Path(ttgir.path).read_text():
                continue
            per_scf: dict[int, int] = {}
            for lp in loops(kr):
                if lp.matrix and lp.ttgir_loop is not None:
                    per_scf[lp.ttgir_loop] = per_scf.get(lp.ttgir_loop, 0) + 1
            assert all(n == 1 for n in per_scf.values()), (target, kr.kernel.name, per_scf)
            checked += bool(per_scf)
    assert checked >= 80


def _compile_pingpong(tmp_path: Path, monkeypatch) -> Path:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    spec = importlib.util.spec_from_file_location("pingpong_gemm", REPO / "fixtures" / "kernels" / "pingpong_gemm.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sig = {"a_ptr": "*bf16", "b_ptr": "*bf16", "c_ptr": "*bf16", "K": "i32", "stride_am": "i32",
           "stride_bk": "i32", "stride_cm": "i32", "BLOCK_M": "constexpr", "BLOCK_N": "constexpr",
           "BLOCK_K": "constexpr"}
    attrs = {(i,): [["tt.divisibility", 16]] for i in range(7)}
    src = ASTSource(module.pingpong_matmul_kernel, sig, constexprs={"BLOCK_M": 256, "BLOCK_N": 256, "BLOCK_K": 64},
                    attrs=attrs)
    with triton_cache_at(tmp_path / "cache") as cache:
        triton.compile(src, target=GPUTarget("hip", "gfx942", 64), options={"num_warps": 8, "num_stages": 2})
    return cache


def test_block_ping_pong_is_an_intended_schedule(tmp_path, monkeypatch):
    """Triton 3.9 applies its block ping-pong to a 256x256x64 bf16 GEMM with num_warps=8 and
    num_stages=2 on gfx942: `amdg.cond_barrier` before the loop, `rocdl.s.setprio` in it, and in
    the ISA s_setprio 1/0 around each MFMA cluster between the loop's 8 s_barrier."""
    monkeypatch.setenv("TRITON_DEFAULT_FP_FUSION", "1")
    cache = _compile_pingpong(tmp_path, monkeypatch)
    report = scan(cache, index=None, rules=RuleSelection.only(BarriersPerIteration))
    (kr,) = report.kernels
    ttgir = (Path(kr.kernel.directory) / f"{kr.kernel.name}.ttgir").read_text()
    assert "amdg.cond_barrier" in ttgir and "rocdl.s.setprio 1" in ttgir
    (loop,) = [lp for lp in loops(kr) if lp.matrix]
    text = Path(kr.kernel.artifact("amdgcn").path).read_text().splitlines()[loop.first_line - 1:loop.last_line]
    assert sum(t.strip() == "s_barrier" for t in text) == 8
    prio = [t.strip() for t in text if t.strip().startswith("s_setprio")]
    assert len(prio) >= 4 and prio[:2] == ["s_setprio 1", "s_setprio 0"]
    assert [f for f in kr.findings if f.code == "IRS202"] == []


def _ttgir(kr) -> str:
    return (Path(kr.kernel.directory) / f"{kr.kernel.name}.ttgir").read_text()


def test_inline_asm_loc_lines_do_not_move_the_source_line(runs):
    """torchao's int8 mm (sm_90, 033972204be0): LLVM writes a `.loc` before each line of the
    `ld.global` inline asm, counting up (int8_mm.py:110, 111); the B tile's st.shared.b8 after it
    belong to the load at line 110 (its ttg.local_alloc), and the barriers around them are that
    tile's, not 'LDS traffic not told apart'."""
    kr, (f,) = findings(kernel_dir(runs, "sm_90", "torchao_int8_matmul", "033972204be0"))
    ptx = (Path(kr.kernel.directory) / f"{kr.kernel.name}.ptx").read_text()
    blocks = [b.split("// end inline asm", 1)[0] for b in ptx.split("// begin inline asm")[1:]]
    block = next(b for b in blocks if "ld.global.b32" in b)
    assert ".loc\t1 110 17" in block and ".loc\t1 111 17" in block  # the counted-up .loc is there
    program = read_assembly(kr.kernel).program("ptx")
    stores = [i for i in program.functions[0].instructions if i.opcode.startswith("st.shared.b8")]
    assert stores and {s.source.line for s in stores} == {110}
    alloc = next(n for n, line in enumerate(_ttgir(kr).splitlines(), 1) if "ttg.local_alloc %b " in line)
    assert f"2 for a loaded tile allocated in LDS inside the iteration (ttg.local_alloc at .ttgir line {alloc} " \
           "(int8_mm.py:110))" in f.message
    assert "not told apart" not in f.message + f.fix and "BLOCK_K" in f.fix


def _ring_bytes(ttgir: str) -> list[tuple[int, int]]:
    """(bytes of one buffer, buffers) of each `ttg.local_alloc : () -> memdesc<NxAxBxT>` (a stage ring)."""
    sizes = {"f16": 2, "i32": 4, "i8": 1}
    out = []
    for n, a, b, t in re.findall(r"ttg.local_alloc : \(\) -> !ttg.memdesc<(\d+)x(\d+)x(\d+)x(\w+),", ttgir):
        out.append((int(a) * int(b) * sizes[t], int(n)))
    return out


def test_longer_tile_estimate_counts_each_ring_s_own_buffers(runs):
    """gemlite's 64x256x64 int GEMM (sm_90, num_stages=3): the A ring has 3 buffers, the packed B
    ring 2; BLOCK_K x2 at num_stages=2 keeps 2 of A and 1 of B, each twice as large: it fits."""
    kr, (f,) = findings(kernel_dir(runs, "sm_90", "gemlite_lowbit_gemm", "de3c20d52ac6"))
    rings = _ring_bytes(_ttgir(kr))
    assert sorted(count for _, count in rings) == [2, 3]
    dequant = 64 * 256 * 2  # the 64x256 f16 operand allocated in the loop
    need = sum(2 * one * (count - 1) for one, count in rings) + 2 * dequant
    assert need == 229_376 and "with num_stages=2 halves them per element and needs about 229,376 B" in f.fix
    assert "no tile or stage change" not in f.fix


def test_num_stages_2_estimate_counts_the_loads_behind_a_computed_operand(runs):
    """gemlite's 128x256x128 int GEMM at num_stages=1 (sm_90): pipelined, the packed int32 B tile
    (128x256, 128 KB) gets an async-copy buffer as well as the A tile: over the 227 KB."""
    kr, found = findings(kernel_dir(runs, "sm_90", "gemlite_lowbit_gemm", "93ce5da0ce8a"))
    (f,) = [f for f in found if f.severity == "warning"]
    ttgir = _ttgir(kr)
    assert "tt.load %b_ptrs_65, %b_mask_38, %cst_1" in ttgir and "tensor<128x256x!tt.ptr<i32>" in ttgir
    need = kr.kernel.options.shared.value + 128 * 128 * 2 + 128 * 256 * 4
    assert need == 262_144 and f"num_stages=2 would need at least {need:,} B" in f.fix
    assert "only a smaller tile with num_stages=2 fits" in f.fix


def test_one_round_conversions_do_not_promise_a_longer_tile(runs):
    """fla's kkt_solve (sm_90, num_warps=2, BK=32): the 16x32 converts are one round each, but the
    BK=64 build of the same kernel (aae1294f76bf) does them in two: the fix says it may."""
    kr, (f,) = findings(kernel_dir(runs, "sm_90", "fla_linear_attention", "8c37c13841f0"))
    assert "only while each conversion stays in one round" in f.fix and "matching the layouts" in f.fix
    longer, _ = findings(kernel_dir(runs, "sm_90", "fla_linear_attention", "aae1294f76bf"))
    assert "16x64xbf16, #blocked1> -> tensor<16x64xbf16, #linear>" in _ttgir(longer)


def test_an_operand_computed_from_a_pipelined_load_is_named(runs):
    """gemlite's 128x128x128 int GEMM (sm_90, num_stages=2): the dequantized B is math on the
    local_load of the packed B's stage buffer; its local_alloc is an operand computed in registers."""
    kr, (f,) = findings(kernel_dir(runs, "sm_90", "gemlite_lowbit_gemm", "2e8967684d09"))
    assert "1 for an operand computed in registers and written to LDS for the dot" in f.message
    assert "not told apart" not in f.message


def test_attention_row_reductions_across_warps_say_why(runs):
    """vLLM's unified attention (sm_90, num_warps=4): the online softmax's row max and sum reduce axis 1
    of a 16-row MMA tile whose four warps split the columns (warpsPerCTA [1, 4], read here from the
    TTGIR text), so each row crosses warps through shared memory every step. The fix says so and
    names what keeps a row in one warp, instead of only naming the reduction."""
    kr, found = findings(kernel_dir(runs, "sm_90", "vllm_attention", "183448b9438a"))
    (f,) = found
    ttgir = Path(kr.kernel.artifact("ttgir").path).read_text()
    assert re.search(r"#mma = #ttg.nvidia_mma<\{versionMajor = 2, versionMinor = 0, warpsPerCTA = \[1, 4\], "
                     r"instrShape = \[16, 8\]\}>", ttgir)
    line = int(re.search(r"the tt.reduce at .ttgir line (\d+)", f.fix).group(1))
    reduce = ttgir.splitlines()[line - 1]
    assert '"tt.reduce"' in reduce and "axis = 1" in reduce
    assert "16-row tile whose 4 warps split that axis (warpsPerCTA [1, 4])" in f.fix
    assert "a tile of 64 rows (16 per warp) or fewer warps" in f.fix


def test_a_rescaled_accumulator_makes_a_reduction_loop(runs):
    """Attention rescales its loop-carried accumulator before the PV dot (acc * alpha[:, None]): the
    dot's accumulator operand is an arith.mulf of the iter_arg, not the iter_arg. That loop reduces
    over the KV tiles; the fix said it 'walks output tiles', and named BLOCK_K for its step."""
    kr, found = findings(kernel_dir(runs, "gfx942", "vllm_attention", "ebba5e13cc58"))
    (f,) = found
    ttgir = Path(kr.kernel.artifact("ttgir").path).read_text()
    pv = re.search(r"%(\w+) = tt.dot %\w+, %V_\w+, %(\w+)", ttgir)
    scaled = re.search(rf"%{pv.group(2)} = arith.mulf %(arg\d+), ", ttgir)
    assert scaled and re.search(rf"iter_args\([^)]*%{scaled.group(1)} = ", ttgir)  # the carried accumulator
    assert "this is a reduction loop: a tile twice as long along it (the KV tile, the loop's step)" in f.fix
    assert "walks output tiles" not in f.fix and "BLOCK_K" not in f.fix
