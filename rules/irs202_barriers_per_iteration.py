"""IRS202 barriers-per-iteration.

The loops come from `ctx.loops` (irscope/isa/loops.py): each machine loop with its TTGIR
`scf.for`, Python line and unroll factor, which IRS103 reads too.
"""

from __future__ import annotations

from collections import Counter

from irscope.ir.layouts.graph import GLOBAL_TO_LDS
from irscope.ir.mlir import DOT_OPS
from irscope.isa.barriers import counts_as_barrier
from irscope.isa.loops import LoopFacts
from irscope.engine.rule import Rule
from irscope.rules._barrier_causes import attribute, loop_ops
from irscope.rules._barrier_fixes import LoopShape, breakdown, excess, fix_text

# A loop with this many barriers per K step is reported as a warning: twice the two that
# Triton's software-pipelined loop needs (see the docstring).
PIPELINED = 2  # what a software-pipelined loop needs per K step: not reported
REPORTED = 3
EXCESSIVE = 4


def _ping_pong(module, loop: LoopFacts, fn) -> bool:
    """Triton's block ping-pong (gfx942, gfx950; TritonAMDGPUBlockPingpong, num_stages > 1): an
    `amdg.cond_barrier` before the loop holds half of the waves back one phase, and in the loop
    `rocdl.s.setprio 1` / `0` pairs raise the priority of each MFMA cluster (`s_setprio` in the
    ISA) between the `s_barrier`s that keep the two wave groups alternating: one group computes
    while the other loads. Those barriers are the schedule, not a cost the tiling adds."""
    if module is None or loop.ttgir_loop is None:
        return False
    if not any(True for _ in module.ops_named("amdg.cond_barrier", "amdgpu.cond_barrier")):
        return False
    prio = [op for op in loop_ops(module, loop.ttgir_loop) if op.canonical_name == "rocdl.s.setprio"]
    setprio = sum(1 for i in loop.instructions if fn.instructions[i].opcode == "s_setprio")
    return bool(prio) and setprio >= 2


class BarriersPerIteration(Rule):
    """Workgroup barriers executed on every iteration of a loop.

    ## What it does
    Counts, for each loop of the AMDGCN or PTX (the natural loops of the control-flow graph,
    not the function), the barriers in its innermost body: `s_barrier` (gfx12:
    `s_barrier_signal` + `s_barrier_wait`, counted once), PTX `bar.sync` / `barrier.sync`.
    It reports the loop's Python line (the `for` of the TTGIR `scf.for` it came from, matched
    by whole source-frame chains, so a loop inside an inlined helper is told from the loop
    around its call), the count, the artifact lines of the barriers, and what each barrier is
    for: the TTGIR op whose LDS traffic it orders (the first LDS access after it, else the last
    before it; rules/_barrier_causes.py): a `convert_layout` through LDS (with its rounds when
    the scratch holds a part of the tile), loop-carried register state staged as a dot operand
    (a recurrence's `b_h`), one dot's result passed to the next (attention's P), an operand
    computed in registers (a dequantized tile), a loaded tile allocated inside the iteration,
    a lock's atomics, or the pipeline's own stages.

    When LLVM unrolled the loop, the count is also given per `scf.for` iteration, from the
    K step's own instructions: the accumulator chains (an MFMA whose C input is an earlier
    one's D continues its chain; one iteration of a dot chains K / k of them per accumulator,
    whatever the waves' split of M and N), or on sm_90 the `wgmma.commit_group`s per dot;
    and, where LLVM left a remainder loop for a trip count it does not know, the remainder,
    which holds one iteration's matrix instructions. Where the witnesses disagree, the count
    is given per machine iteration only.

    Two barriers per K step is what Triton's software-pipelined loop needs: one before the
    iteration overwrites the LDS stage the previous one read, one before it reads the stage
    just written. That norm, or fewer, is not reported (`irscope scan` would otherwise list
    nearly every GEMM), nor is a loop whose every barrier hands a pipeline stage over and that
    has at most one per dot beyond the first (sm_90 attention: the cp.async wait, then QK's and
    PV's wgmma waits), nor Triton's block ping-pong (gfx942: `amdg.cond_barrier` before the loop,
    `s_setprio` pairs around its MFMA clusters), whose barriers pace two wave groups on purpose.
    3 per K step is info, with the count; 4 or more, twice the norm, a warning.

    ## Why is this bad?
    A barrier stops every wave of the workgroup until the slowest one arrives; the waves
    that wait issue nothing, and the MFMA pipe drains around it. The GEMM tuning thread
    (gfx942, fp16) counts "2 `s_barrier` per K-iteration x 224 iterations = 448 barriers
    per tile" among the four causes of its gap to peak, and BLOCK_K=128, which halves the
    number of K iterations and so of barriers, won at M <= 256 (+20% at M=256).

    ## Example
    The unaligned GEMM (fixture `gemm_unaligned`, Triton 3.6, gfx942) has 4 `s_barrier` per
    K iteration of `for k in range(0, tl.cdiv(K, BLOCK_K))` (gemm.py:47): its TTGIR loop
    allocates each tile in LDS inside the iteration (`ttg.local_alloc %a_77`, not
    software-pipelined), so A and B are written and read in turn:

        s_barrier                                   ; .amdgcn line 1225
        ds_write_b64 v0, v[238:239]                 ; A tile (gemm.py:48)
        s_barrier                                   ; line 1253
        ds_read2st64_b64 v[194:197], v0 offset1:16
        s_barrier                                   ; line 1264
        ds_write_b16 v189, v205                     ; B tile (gemm.py:49)
        s_barrier                                   ; line 1299
        ds_read2st64_b64 v[204:207], v189 offset1:16

    The aligned build of the same kernel (`gemm_aligned`) stages the tiles through the
    pipeliner's buffers and has 2 per iteration: not reported. The TMA GEMM on sm_90 (`tma_gemm`, 3.6 and
    3.9) has 4 `bar.sync` per K step: one before its mbarrier wait, and one before each of
    the three single-thread ops that refill a stage (`mbarrier.arrive.expect_tx` and the two
    `cp.async.bulk.tensor` copies); ptxas keeps all four (`BAR.SYNC.DEFER_BLOCKING` in the
    SASS loop). Triton 3.9's split-K GEMM (gfx942) has 4 `s_barrier` per machine iteration,
    but LLVM unrolled the loop twice (each accumulator chains 16 MFMAs where one K step has 8):
    2 per K step, the norm. vLLM's prefix-prefill attention (gfx942, sm_90) loops over the
    cached context, a trip count LLVM does not know: it unrolls the loop 4x and leaves a
    remainder loop of one iteration (128 and 32 MFMAs on gfx942); the main loop's 16 barriers
    are 4 per iteration, as in the remainder. In fla's `recompute_w_u_fwd_kernel` (sm_90, num_warps=2) 15 of 16
    `bar.sync` per output tile are the store convert at wy_fast.py:90, done in 8 rounds of
    `stmatrix` / `bar.sync` / `ld.shared.v4` / `bar.sync`.

    ## How to fix it in the kernel
    The fix follows the dominant cause and what the loop is:
    - conversion rounds grow with the tile, so no tile size removes them: make the producer's
      and the consumer's layouts match, or compare configs where Triton needs fewer rounds
      (in a reduction loop, one-round conversions are a fixed cost per step like staging);
    - loop-carried state staged as a dot operand is the recurrence's own (its step is the
      algorithm's chunk): no tile or num_stages knob removes it;
    - a dot's result going to the next dot through LDS: one MMA layout for both dots keeps it
      in registers (sageattention on gfx942 runs QK on `#mma` and PV on `#mma1`);
    - tiles allocated inside the iteration at `num_stages=1`: `num_stages=2`, when the LDS holds
      one more buffer per loaded tile (the rule says how much; otherwise a smaller tile);
    - staging per step in a reduction (K) loop: a tile twice as long along the loop halves it
      per element, with the LDS it needs computed from the loop's buffers, at the same or fewer
      stages (never fewer than 2); a loop over output tiles gets no such advice (attention's loop,
      whose accumulator is rescaled each step, is a reduction over KV tiles: its step is the KV tile);
    - a reduction's exchange: where the reduced axis of the tile is split over warps (attention's
      row max/sum on a 16-row MMA tile with `warpsPerCTA [1, 4]`), every row crosses warps each
      step; a tile with rows for every warp, or fewer warps, keeps each row in one warp;
    - a lock: a barrier pair per acquisition; fewer acquisitions or `tl.atomic_add`.
    """

    code = "IRS202"
    slug = "barriers-per-iteration"
    summary = "3 or more workgroup barriers per loop iteration (2 per K step is the pipelined norm)"
    severity = "info"
    stages = ("ttgir",)
    quotes_options = ("num_stages",)  # "num_stages=1 allocates the loaded tiles inside the iteration; ..."

    def check(self, ctx):
        findings = []
        for program in ctx.programs:
            if program.isa not in ("amdgcn", "ptx"):
                continue
            for fn in program.functions:
                for loop in ctx.loops(program, fn):
                    found = self._loop(ctx, program, fn, loop)
                    if found is not None:
                        findings.append(found)
        return findings

    def _loop(self, ctx, program, fn, loop: LoopFacts):
        # A loop with no matrix work (a reduction's tl.sum/tl.max exchange through LDS) is not
        # this rule's; nor is a one-warp workgroup, where no warp waits for another.
        warps = ctx.kernel.options.num_warps
        if not loop.matrix or (warps is not None and warps.value == 1):
            return None
        bars = [fn.instructions[i] for i in loop.instructions if counts_as_barrier(fn.instructions[i])]
        count = len(bars)
        step = loop.per_step(count)
        if (step if step is not None else count) < REPORTED:
            return None
        conditional = sum(1 for b in bars if fn.block_of(b.index).index not in loop.every_iteration)
        names = Counter(b.opcode for b in bars)
        what = ", ".join(f"{n} {op}" for op, n in sorted(names.items()))
        at = ", ".join(str(b.line) for b in bars)
        where = f"the loop at {loop.python_name}:{loop.python_line}" if loop.python_line else "a loop"
        pairs = ""
        if "s_barrier_wait" in names:
            pairs = " (each the wait half of an s_barrier_signal / s_barrier_wait pair)"
        message = (f"{count} barriers per iteration of {where} ({what}{pairs} at .{program.isa} line"
                   f"{'s' if count > 1 else ''} {at}; the loop spans lines {loop.first_line}-{loop.last_line})")
        sources = sorted({b.source.line for b in bars if b.source is not None})
        if sources:
            message += f", from {loop.python_name}:{', '.join(map(str, sources))}"
        if conditional:
            message += f"; {conditional} of them on a path not every iteration takes"
        module = ctx.ttgir
        causes = attribute(module, loop.ttgir_loop, fn, loop.instructions)
        shape = LoopShape(module, loop.ttgir_loop)
        dots = len(self._dots(ctx, loop))
        # A loop whose every barrier hands over a pipeline stage is the norm: one to hand a stage
        # over and one per dot that reads a stage (sm_90 attention: cp.async wait, QK and PV).
        if excess(causes) == 0 and count <= 1 + max(dots, 1):
            return None
        if _ping_pong(module, loop, fn):
            return None  # Triton's block ping-pong: its barriers pace two wave groups on purpose
        unit = "K step" if shape.reduction else "scf.for iteration"
        if loop.unroll and loop.unroll > 1:
            message += (f"; LLVM unrolled the loop {loop.unroll}x ({loop.matrix} matrix instructions per "
                        f"iteration where one {unit} has {loop.matrix // loop.unroll})")
            if step is not None:
                message += f": {step} per {unit}"
        unpipelined = self._unpipelined(ctx, loop)
        if unpipelined:
            message += (f"; the TTGIR loop allocates its LDS tiles inside the iteration (ttg.local_alloc of a "
                        f"value at .ttgir line{'s' if len(unpipelined) > 1 else ''} "
                        f"{', '.join(map(str, unpipelined))}): it is not software-pipelined")
        excessive = step is not None and step >= EXCESSIVE
        if excessive:
            message += f"; that is {step} per {unit} where Triton's software-pipelined loops have {PIPELINED}"
        if causes:
            message += f"; they are: {breakdown(module, causes)}"
        fix = fix_text(ctx, module, loop.ttgir_loop, causes, count, bool(unpipelined))
        python = (loop.python_file, loop.python_line) if loop.python_line else None
        evidence = {"count": count, "matrix": loop.matrix, "conditional": conditional}
        if loop.unroll:
            evidence["unroll"] = loop.unroll
        if step is not None:
            evidence["per_step"] = step
        return self.finding(ctx, stage=program.isa, path=program.path, lines=[b.line for b in bars],
                            python=python, severity="warning" if excessive else "info",
                            message=message, fix=fix, evidence=evidence)

    @staticmethod
    def _dots(ctx, loop: LoopFacts) -> list:
        module = ctx.ttgir
        if module is None or loop.ttgir_loop is None:
            return []
        return [op for op in loop_ops(module, loop.ttgir_loop) if op.canonical_name in DOT_OPS]

    @staticmethod
    def _unpipelined(ctx, loop: LoopFacts) -> list[int]:
        """TTGIR lines of the `ttg.local_alloc %value` ops directly in the loop's scf.for, when
        nothing there writes a buffer that lives across iterations (`ttg.local_store`, an
        async copy into LDS): the tiles are allocated, written and read within the iteration."""
        module = ctx.ttgir
        if module is None or loop.ttgir_loop is None:
            return []
        allocs, staged = [], False
        for op in module.ops:
            enclosing = module.enclosing_loops(op)
            if not enclosing or enclosing[0].index != loop.ttgir_loop:
                continue
            name = op.canonical_name
            if name == "ttg.local_alloc" and op.operands:
                allocs.append(op.line)
            elif name == "ttg.local_store" or name in GLOBAL_TO_LDS:
                staged = True
        return [] if staged else allocs
