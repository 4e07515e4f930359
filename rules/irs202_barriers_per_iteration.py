"""IRS202 barriers-per-iteration, and the loop facts it shares with IRS103.

`kernel_loops` maps each loop of an assembly function (irscope/isa/graph.py: natural loops
from back edges) to what a per-iteration count needs: the instructions whose innermost loop
it is, the blocks every iteration runs, the TTGIR `scf.for` it came from (its Python line),
and how many iterations of that `scf.for` one pass of the machine loop holds. LLVM unrolls
some of Triton's loops (Triton 3.9 splits the 64x64x64 split-K GEMM's K loop in two), so a
count per machine iteration is not yet a count per K step: the accumulator chains of the
matrix instructions tell (`_TtgirLoops.unroll`), and where LLVM left a remainder loop for a trip
count it does not know, the remainder's matrix work is one iteration's (`_with_remainders`).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, replace

import networkx as nx

from irscope.isa import model as isa
from irscope.ir.layouts.graph import GLOBAL_TO_LDS
from irscope.engine.rule import Rule
from irscope.rules._barrier_causes import attribute, loop_ops
from irscope.rules._barrier_fixes import LoopShape, breakdown, excess, fix_text

# A loop with this many barriers per K step is reported as a warning: twice the two that
# Triton's software-pipelined loop needs (see the docstring).
PIPELINED = 2  # what a software-pipelined loop needs per K step: not reported
REPORTED = 3
EXCESSIVE = 4
DOT_OPS = ("tt.dot", "tt.dot_scaled", "ttng.warp_group_dot", "ttng.dot_async")


@dataclass(frozen=True)
class LoopFacts:
    header: int  # block index of the machine loop's header
    depth: int
    instructions: tuple[int, ...]  # indices of the instructions whose innermost loop this is
    every_iteration: frozenset[int]  # its blocks that each iteration runs (they dominate every latch)
    first_line: int  # artifact lines the loop spans
    last_line: int
    python_file: str | None
    python_line: int | None  # the `for` of the scf.for it came from
    ttgir_loop: int | None  # that scf.for's op index
    unroll: int | None  # scf.for iterations per machine iteration; None when the matrix work does not tell
    matrix: int  # matrix instructions per machine iteration

    @property
    def python_name(self) -> str:
        return (self.python_file or "?").rsplit("/", 1)[-1]

    def per_step(self, count: int) -> int | None:
        """A per-machine-iteration count as a count per scf.for iteration, when that is exact."""
        if not self.unroll or count % self.unroll:
            return None
        return count // self.unroll


def counts_as_barrier(instr: isa.Instruction) -> bool:
    """A workgroup barrier that waits: `s_barrier`, gfx12's `s_barrier_wait` (its
    `s_barrier_signal` half is not counted again), PTX `bar.sync`/`barrier.sync`/`bar.red`,
    not `bar.arrive`, which does not wait."""
    if instr.kind != isa.BARRIER:
        return False
    op = instr.opcode
    if op.startswith("s_"):
        return op in ("s_barrier", "s_barrier_wait")
    parts = op.split(".")
    return parts[0] in ("bar", "barrier") and "arrive" not in parts


def kernel_loops(ctx, program, fn) -> list[LoopFacts]:
    """The function's loops with their TTGIR loop and unroll factor (IRS103 and IRS202 both ask)."""
    return ctx.shared(("kernel_loops", program.path, fn.name), lambda: _kernel_loops(ctx, program, fn))


def _kernel_loops(ctx, program, fn) -> list[LoopFacts]:
    graph = ctx.graph(program, fn)
    loops = graph.loops
    if not loops:
        return []
    module = ctx.ttgir
    innermost: dict[int, list[int]] = defaultdict(list)
    for ins in fn.instructions:
        loop = graph.loop_of(ins.index)
        if loop is not None:
            innermost[loop.header].append(ins.index)
    facts = ctx.layout_facts
    ttgir = _TtgirLoops(module, facts.user_file if facts else None) if module is not None else None
    out = []
    for loop in loops:
        members = tuple(innermost.get(loop.header, ()))
        lines = [fn.instructions[i].line for b in loop.blocks
                 for i in range(fn.blocks[b].start, fn.blocks[b].end)]
        python_file = python_line = ttgir_loop = unroll = None
        matrix = [fn.instructions[i] for i in members if fn.instructions[i].kind == isa.MATRIX]
        if ttgir is not None:
            ttgir_loop = ttgir.match(fn.instructions[i] for i in members)
            if ttgir_loop is not None:
                python_file, python_line = ttgir.user_file, ttgir.lines[ttgir_loop]
                unroll = ttgir.unroll(ttgir_loop, matrix, [fn.instructions[i] for i in members])
        if python_line is None:  # the back edge's branch usually carries the `for` line
            branch = fn.instructions[fn.blocks[loop.latches[0]].end - 1]
            if branch.source is not None:
                python_file, python_line = branch.source.file, branch.source.line
        out.append(LoopFacts(loop.header, loop.depth, members, _every_iteration(graph, loop),
                             min(lines), max(lines), python_file, python_line, ttgir_loop, unroll, len(matrix)))
    return _with_remainders(out, fn)


def _with_remainders(loops: list[LoopFacts], fn) -> list[LoopFacts]:
    """LLVM unrolls a loop whose trip count it does not know into a main loop and a remainder loop
    that runs the leftover scf.for iterations one at a time: two machine loops of one scf.for, the
    same body u times and once, so the main loop's matrix instructions are u times the remainder's.
    That is a second witness of the unroll, and the only one where the accumulator chains do not
    tell (LLVM renames an unrolled copy's accumulators; PTX's are fresh registers each time); where
    the two disagree, no unroll is claimed. vLLM's prefix-prefill attention, unrolled 4x, has one
    on gfx942 and on sm_90."""
    by_scf: dict[int, list[int]] = defaultdict(list)
    for i, loop in enumerate(loops):
        if loop.matrix and loop.ttgir_loop is not None:
            by_scf[loop.ttgir_loop].append(i)
    for members in by_scf.values():
        if len(members) < 2:
            continue
        once = min(loops[i].matrix for i in members)
        if any(loops[i].matrix % once for i in members):
            continue
        for i in members:
            witnessed = loops[i].matrix // once
            if loops[i].unroll != witnessed:
                loops[i] = replace(loops[i], unroll=witnessed if loops[i].unroll is None else None)
    return loops


def _every_iteration(graph, loop) -> frozenset[int]:
    """Blocks of the loop that dominate all its latches: every iteration passes them."""
    body = graph.cfg.subgraph(loop.blocks).copy()
    body.remove_edges_from([(latch, loop.header) for latch in loop.latches])
    idom = nx.immediate_dominators(body, loop.header)

    def dominates(a: int, b: int) -> bool:
        while True:
            if a == b:
                return True
            up = idom.get(b)
            if up is None or up == b:
                return False
            b = up

    return frozenset(b for b in loop.blocks if all(dominates(b, latch) for latch in loop.latches))


def _base(path: str) -> str:
    return path.rsplit("/", 1)[-1]


class _TtgirLoops:
    """The TTGIR's scf.for ops: the Python lines of the ops directly in each, and its dots."""

    def __init__(self, module, user_file: str | None = None) -> None:
        from irscope.ir.mlir import LOOP_OPS
        from irscope.ir.source_map import kernel_file, user_line

        self.module = module
        self.user_file = user_file or kernel_file(module)
        self.lines: dict[int, int | None] = {}
        self.body_lines: dict[int, set[tuple]] = defaultdict(set)  # source chains of the ops directly in a loop
        self.dots: dict[int, list] = defaultdict(list)
        for op in module.ops:
            if op.canonical_name in LOOP_OPS:
                self.lines[op.index] = user_line(module, op, self.user_file)
        for op in module.ops:
            enclosing = module.enclosing_loops(op)
            if not enclosing:
                continue
            inner = enclosing[0].index
            if op.location and op.location.frames:
                self.body_lines[inner].add(tuple((_base(f.file), f.line) for f in op.location.frames))
            if op.canonical_name in DOT_OPS:
                self.dots[inner].append(op)

    def match(self, instructions) -> int | None:
        """The scf.for whose body shares the most source positions with a machine loop's own
        instructions; the deeper one on a tie. A position is the whole chain of frames, innermost
        first: the ops of an inlined helper all carry its call site's line, and only their inner
        frames tell a loop in the helper from the loop around the call."""
        if self.user_file is None:
            return None
        lines = {tuple((_base(f.file), f.line) for f in (*i.source.inlined, i.source))
                 for i in instructions if i.source is not None}
        scored = [(len(lines & body), self.module.ops[op].loop_depth, op) for op, body in self.body_lines.items()]
        best = max(scored, default=None)
        return best[2] if best and best[0] else None

    def unroll(self, loop: int, matrix: list[isa.Instruction], body: list[isa.Instruction] = ()) -> int | None:
        """How many scf.for iterations one machine iteration holds, from the K step's own chains.

        One iteration of a dot accumulates each output tile of a wave through K / k matrix
        instructions that read and write the same accumulator registers (`v_mfma ... v[50:65],
        ..., v[50:65]`; wgmma's `{%r..}` list), whatever the warps' split of M and N; dots that
        chain their accumulators (`tl.dot(a, b, tl.dot(c, d))`) make one longer chain. A machine
        loop that LLVM unrolled u times repeats each chain u times, and the peeled remainder is
        another loop: so the longest chain over the longest chain one iteration has is u.
        wgmma's accumulator lists are virtual registers that dots may share, but each dot is one
        `wgmma.commit_group`: commits over the scf.for's dots is u there."""
        if not matrix:
            return None
        if matrix[0].matrix is not None and matrix[0].matrix.family == "wgmma":
            commits = sum(1 for ins in body if ins.opcode.startswith("wgmma.commit_group"))
            dots = len(self.dots.get(loop, ()))
            return commits // dots if dots and commits and commits % dots == 0 else None
        chains = _chains(matrix)
        dots = self.dots.get(loop, ())
        if not chains or not dots:
            return None
        first = matrix[0].matrix
        steps: dict[int, int] = {}  # dot op index -> matrix instructions along K for one accumulator
        for dot in dots:
            k = self._k(dot)
            if not k or first is None or not first.k or k % first.k:
                return None
            steps[dot.index] = k // first.k
        # a dot whose accumulator operand is another dot's result continues that dot's chain
        made_by = {dot.results[0]: dot.index for dot in dots if dot.results}
        total: dict[int, int] = {}
        for dot in dots:  # TTGIR order: a chain's earlier dots come first
            prior = made_by.get(dot.operands[2]) if len(dot.operands) > 2 else None
            total[dot.index] = steps[dot.index] + total.get(prior, 0)
        expected = max(total.values())
        observed = max(chains)
        if observed % expected:
            return None
        return observed // expected or None

    def _k(self, dot) -> int | None:
        from irscope.ir.types import MemDescType, TensorType

        a = self.module.values[dot.operands[0]].type if dot.operands else None
        if not isinstance(a, (TensorType, MemDescType)) or not a.shape:
            return None
        return a.shape[-1]



def _chains(matrix: list[isa.Instruction]) -> list[int]:
    """Lengths of the accumulator chains of a machine loop's matrix instructions, in order: an
    instruction whose accumulator input (`v_mfma D, A, B, C`: C) is an earlier one's output D
    continues that chain (LLVM may move an unrolled copy's accumulators to other registers, so
    the registers alone do not tell one chain from another)."""
    live: dict[str, int] = {}
    lengths = []
    for ins in matrix:
        if len(ins.args) < 4:
            continue
        dst, acc = ins.args[0], ins.args[3]
        n = live.pop(acc, 0) + 1
        live[dst] = n
        lengths.append(n)
    return lengths


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

    def check(self, ctx):
        findings = []
        for program in ctx.programs:
            if program.isa not in ("amdgcn", "ptx"):
                continue
            for fn in program.functions:
                for loop in kernel_loops(ctx, program, fn):
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
