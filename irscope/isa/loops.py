"""Loops of an assembly function as a per-iteration count needs them, matched to the TTGIR.

`machine_loops` maps each loop of an assembly function (irscope/isa/graph.py: natural loops
from back edges) to the instructions whose innermost loop it is, the blocks every iteration
runs, the TTGIR `scf.for` it came from (its Python line), and how many iterations of that
`scf.for` one pass of the machine loop holds. LLVM unrolls some of Triton's loops (Triton 3.9
splits the 64x64x64 split-K GEMM's K loop in two), so a count per machine iteration is not yet
a count per K step: the accumulator chains of the matrix instructions tell (`TtgirLoops.unroll`),
and where LLVM left a remainder loop for a trip count it does not know, the remainder's matrix
work is one iteration's (`_with_remainders`). IRS103 and IRS202 read it through `ctx.loops`.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace

from irscope.ir.mlir import DOT_OPS, LOOP_OPS
from irscope.ir.source_map import kernel_file, user_line
from irscope.ir.types import MemDescType, TensorType
from irscope.isa import model as isa
from irscope.isa.graph import FunctionGraph


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


def machine_loops(fn, graph: FunctionGraph, module, user_file: str | None) -> list[LoopFacts]:
    """The function's loops with their TTGIR loop and unroll factor; `module` is the kernel's
    TTGIR (None: no loop is matched) and `user_file` the kernel's Python file, when known."""
    loops = graph.loops
    if not loops:
        return []
    innermost = graph.innermost_members()
    ttgir = TtgirLoops(module, user_file) if module is not None else None
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
        out.append(LoopFacts(loop.header, loop.depth, members, graph.every_iteration(loop),
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


def _base(path: str) -> str:
    return path.rsplit("/", 1)[-1]


class TtgirLoops:
    """The TTGIR's scf.for ops: the Python lines of the ops directly in each, and its dots."""

    def __init__(self, module, user_file: str | None = None) -> None:
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
