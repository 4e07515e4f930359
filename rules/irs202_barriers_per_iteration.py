"""IRS202 barriers-per-iteration, and the loop facts it shares with IRS103.

`kernel_loops` maps each loop of an assembly function (irscope/isa_graph.py: natural loops
from back edges) to what a per-iteration count needs: the instructions whose innermost loop
it is, the blocks every iteration runs, the TTGIR `scf.for` it came from (its Python line),
and how many iterations of that `scf.for` one pass of the machine loop holds. LLVM unrolls
some of Triton's loops (Triton 3.9 splits the 64x64x64 split-K GEMM's K loop in two), so a
count per machine iteration is not yet a count per K step: the matrix instructions tell,
since one `scf.for` iteration issues a known amount of MFMA/WMMA/MMA work.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

import networkx as nx

from irscope import isa
from irscope.layout_graph import GLOBAL_TO_LDS
from irscope.rule import Rule

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
                unroll = ttgir.unroll(ttgir_loop, matrix)
        if python_line is None:  # the back edge's branch usually carries the `for` line
            branch = fn.instructions[fn.blocks[loop.latches[0]].end - 1]
            if branch.source is not None:
                python_file, python_line = branch.source.file, branch.source.line
        out.append(LoopFacts(loop.header, loop.depth, members, _every_iteration(graph, loop),
                             min(lines), max(lines), python_file, python_line, ttgir_loop, unroll, len(matrix)))
    return out


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


class _TtgirLoops:
    """The TTGIR's scf.for ops: the Python lines of the ops directly in each, and its dots."""

    def __init__(self, module, user_file: str | None = None) -> None:
        from irscope.mlir import LOOP_OPS
        from irscope.source_map import kernel_file, user_line

        self.module = module
        self.user_file = user_file or kernel_file(module)
        self.lines: dict[int, int | None] = {}
        self.body_lines: dict[int, set[int]] = defaultdict(set)
        self.dots: dict[int, list] = defaultdict(list)
        for op in module.ops:
            if op.canonical_name in LOOP_OPS:
                self.lines[op.index] = user_line(module, op, self.user_file)
        for op in module.ops:
            enclosing = module.enclosing_loops(op)
            if not enclosing:
                continue
            inner = enclosing[0].index
            line = user_line(module, op, self.user_file)
            if line is not None:
                self.body_lines[inner].add(line)
            if op.canonical_name in DOT_OPS:
                self.dots[inner].append(op)

    def match(self, instructions) -> int | None:
        """The scf.for whose body shares the most Python lines with a machine loop's own
        instructions; the deeper one on a tie."""
        if self.user_file is None:
            return None
        name = self.user_file.rsplit("/", 1)[-1]
        lines = {i.source.line for i in instructions
                 if i.source is not None and i.source.file.rsplit("/", 1)[-1] == name}
        scored = [(len(lines & body), self.module.ops[op].loop_depth, op) for op, body in self.body_lines.items()]
        best = max(scored, default=None)
        return best[2] if best and best[0] else None

    def unroll(self, loop: int, matrix: list[isa.Instruction]) -> int | None:
        """Machine-loop matrix work / one scf.for iteration's dot work, per wave, when a whole number.

        A wave's share of a dot is its MACs over the waves that split it; a tile smaller than the
        waves' matrix tiles (64x32 over 4 waves of 32x32 MFMAs) is computed by several waves
        alike, each doing a whole instruction tile, so it is split among fewer waves."""
        warps = self.module.num_warps
        if not matrix or not warps:
            return None
        done = 0
        for ins in matrix:
            m = ins.matrix
            if m is None or None in (m.m, m.n, m.k):
                return None
            done += m.m * m.n * m.k * m.blocks
        first = matrix[0].matrix
        # MFMA/WMMA/MMA run per wave (warp); wgmma per warpgroup of 4 warps.
        issuers = max(warps // 4, 1) if first.family == "wgmma" else warps
        expected = 0
        for dot in self.dots.get(loop, ()):
            macs, tile = self._macs(dot), self._out_elements(dot)
            if not macs or not tile:
                return None
            splits = max(1, min(issuers, tile // (first.m * first.n * first.blocks)))
            if macs % splits:
                return None
            expected += macs // splits
        if not expected or done % expected:
            return None
        return done // expected or None

    def _out_elements(self, dot) -> int | None:
        from irscope.ir_types import TensorType

        out = self.module.values[dot.results[0]].type if dot.results else None
        if not isinstance(out, TensorType) or not out.shape or None in out.shape:
            return None
        count = 1
        for d in out.shape:
            count *= d
        return count

    def _macs(self, dot) -> int | None:
        from irscope.ir_types import MemDescType, TensorType

        values = self.module.values
        if not dot.results or not dot.operands:
            return None
        # wgmma reads A (and B) straight from shared memory: a memdesc, not a tensor
        out, a = values[dot.results[0]].type, values[dot.operands[0]].type
        if not isinstance(out, TensorType) or not isinstance(a, (TensorType, MemDescType)) or not a.shape:
            return None
        macs = a.shape[-1]
        for d in out.shape:
            if d is None or macs is None:
                return None
            macs *= d
        return macs


class BarriersPerIteration(Rule):
    """Workgroup barriers executed on every iteration of a loop.

    ## What it does
    Counts, for each loop of the AMDGCN or PTX (the natural loops of the control-flow graph,
    not the function), the barriers in its innermost body: `s_barrier` (gfx12:
    `s_barrier_signal` + `s_barrier_wait`, counted once), PTX `bar.sync` / `barrier.sync`.
    It reports the loop's Python line (the `for` of the TTGIR `scf.for` it came from), the
    count, the artifact lines of the barriers and the Python lines they come from. When
    LLVM unrolled the loop, the count is also given per `scf.for` iteration (per K step),
    from the matrix work: one iteration of a 64x64x64 `tl.dot` with 4 waves is 8
    `v_mfma_f32_32x32x8_f16` per wave, so a machine loop with 16 holds two K steps.

    Two barriers per K step is what Triton's software-pipelined loop needs: one before the
    iteration overwrites the LDS stage the previous one read, one before it reads the stage
    just written. That norm, or fewer, is not reported (`irscope scan` would otherwise list
    nearly every GEMM); 3 per K step is info, with the count; 4 or more, twice the norm, a
    warning.

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
    but LLVM unrolled the loop twice (16 MFMAs where one K step has 8): 2 per K step, the norm.

    ## How to fix it in the kernel
    Fewer iterations, fewer barriers: a larger BLOCK_K (128 instead of 64, where LDS allows)
    halves them per unit of K. Where the loop is not software-pipelined, make it so: the
    unaligned GEMM's 2-byte loads lack the facts the aligned build has (16-divisible strides,
    unit strides as `tl.constexpr`, `tl.multiple_of`, see IRS101), and with them the same
    kernel is pipelined at `num_stages=2` with 2 barriers per iteration. Triton 3.0 does not
    pipeline the gfx942 GEMM through LDS at all; 3.2 does.
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
        if loop.unroll and loop.unroll > 1:
            message += (f"; LLVM unrolled the loop {loop.unroll}x ({loop.matrix} matrix instructions per "
                        f"iteration where one K step has {loop.matrix // loop.unroll})")
            if step is not None:
                message += f": {step} per K step"
        unpipelined = self._unpipelined(ctx, loop)
        if unpipelined:
            message += (f"; the TTGIR loop allocates its LDS tiles inside the iteration (ttg.local_alloc of a "
                        f"value at .ttgir line{'s' if len(unpipelined) > 1 else ''} "
                        f"{', '.join(map(str, unpipelined))}): it is not software-pipelined")
        excessive = step is not None and step >= EXCESSIVE
        if excessive:
            message += f"; that is {step} per K step where Triton's software-pipelined loops have {PIPELINED}"
        fix = self._tile_fix(ctx)
        narrow = [i for i in (fn.instructions[j] for j in loop.instructions)
                  if i.kind == isa.GLOBAL_LOAD and i.memory and i.memory.width_bytes and i.memory.width_bytes < 16]
        if unpipelined and narrow:
            fix = (f"make the loop's {len(narrow)} narrow global loads ({narrow[0].opcode}) wide so that Triton "
                   "software-pipelines it (16-divisible strides, unit strides as constexpr, tl.multiple_of; see "
                   "IRS101): pipelined, a GEMM loop has 2 barriers per K step; " + fix)
        elif unpipelined:
            fix = ("this Triton version did not software-pipeline the loop through LDS; newer ones do (from 3.2 the "
                   "gfx942 GEMM fixture has 2 barriers per K step); " + fix)
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
    def _tile_fix(ctx) -> str:
        """What halves the barriers per element of the loop, as far as this kernel's LDS and stages allow."""
        from irscope.occupancy_amd import AMD_ARCHES
        from irscope.occupancy_nvidia import nvidia_arch

        opts = ctx.kernel.options
        shared = opts.shared.value if opts.shared is not None else 0
        arch = ctx.kernel.target.arch if ctx.kernel.target else ""
        amd, nv = AMD_ARCHES.get(arch), nvidia_arch(arch)
        most = amd.lds_pool if amd else (nv.shared_optin if nv else None)
        if most and 2 * shared > most:
            fix = (f"this tiling already holds {shared:,} B of LDS of the {most:,} a workgroup may have: no larger "
                   "tile fits, so compare configs that trade num_stages for a larger tile along the loop")
        else:
            fix = ("a larger tile along the loop's dimension (BLOCK_K in a GEMM's K loop, the key block in "
                   "attention), LDS permitting, halves the barriers per element the loop covers")
        if opts.num_stages is not None and opts.num_stages.value == 1:
            fix = ("num_stages=1 leaves the loop unpipelined (num_stages=2 or more overlaps the next tile's "
                   "loads); " + fix)
        return fix

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
