"""IRS201 drained-wait-in-loop."""

from __future__ import annotations

import heapq
import os
import re
from bisect import bisect_left
from functools import lru_cache
from itertools import accumulate
from operator import itemgetter
from dataclasses import dataclass

from irscope.ir.mlir import DOT_OPS, canonical_op_name
from irscope.isa import model as isa
from irscope.isa.amdgcn_dataflow import WaitCounter
from irscope.engine.rule import Rule
from irscope.model.errors import ArtifactError

# The counters global loads increment: vmcnt on gfx9-gfx11 (gfx10/11 count stores apart, in
# vscnt), loadcnt on gfx12.
LOAD_COUNTERS: tuple[WaitCounter, ...] = ("vmcnt", "loadcnt")
LDS_COUNTERS: tuple[WaitCounter, ...] = ("lgkmcnt", "dscnt")
GLOBAL_KINDS = (isa.GLOBAL_LOAD, isa.ASYNC_COPY)
# How much of a global load's latency the wave's own work between the load and its drain can
# cover, in cycles of one wave on its SIMD. Upper estimates, so that a drain reported is one
# that no schedule detail rescues:
# - a wave issues at most one instruction every 4 cycles (CDNA/GCN offer each SIMD an issue
#   slot once per 4 cycles; a wave64 VALU op takes those 4 on a SIMD16), and a transcendental
#   (v_exp, v_log, v_rcp, v_rsq, v_sqrt, v_sin, v_cos) runs at quarter rate: 16;
ISSUE_CYCLES = 4
TRANSCENDENTAL_CYCLES = 16
TRANSCENDENTAL = ("v_exp_", "v_log_", "v_rcp_", "v_rsq_", "v_sqrt_", "v_sin_", "v_cos_")
# - an MFMA occupies the SIMD for up to 16 passes of 4 cycles (32x32 f16/bf16/i8 on gfx90a;
#   gfx942 and gfx950 run the same shapes in 8 or fewer passes);
MATRIX_CYCLES = 64
# - an LDS wait (lgkmcnt) in between stalls for one LDS read: 52-64 cycles without bank
#   conflicts, as measured on gfx942 with s_memtime (github.com/tingqli/pyhip docs/mem_latency.md).
LDS_WAIT_CYCLES = 64
# A global load that goes to HBM takes 500-800 cycles on gfx942 (the same measurement, one wave
# per CU). A drain whose wave has fewer cycles of work than the lower end between the load and
# the wait stalls for the rest, unless other waves on the SIMD fill it.
LATENCY_FLOOR = 500
# No path of this many instructions can be under the floor: the search stops there.
MAX_GAP = LATENCY_FLOOR // ISSUE_CYCLES


@dataclass(frozen=True)
class _Drain:
    wait: int  # instruction indices
    load: int  # the closest global load it waits for, in the same loop
    gap: int  # instructions between the two, on the shortest path inside the loop
    matrix: int  # matrix instructions among them
    cycles: int  # the wave's own work among them, in cycles (upper estimate: see ISSUE_CYCLES)
    loads: frozenset[int]  # every in-loop global load it waits for
    reload: int | None  # a scratch reload issued after `load` that the wait is also for (a spill)


class DrainedWaitInLoop(Rule):
    """A loop waits for its global loads to drain right after issuing them.

    ## What it does
    Finds `s_waitcnt vmcnt(0)` (gfx12: `s_wait_loadcnt 0x0`) inside a loop that waits for a
    global or buffer load of the same loop with too little of the wave's own work between
    them to cover the load. The work is counted in cycles along the shortest path inside the
    loop (around the back edge for a load issued at the end of the previous iteration, and
    through exec-masked blocks that `s_cbranch_execz` skips only when no lane needs them): 4
    cycles an instruction, 16 a transcendental, 64 an MFMA or an LDS wait (upper estimates,
    so a reported drain is one that no schedule detail rescues). A global load that goes to
    HBM takes 500-800 cycles on gfx942 (measured with `s_memtime`, one wave per CU:
    github.com/tingqli/pyhip, docs/mem_latency.md). A drain with fewer than 500 cycles of
    work before it is reported as a warning when the kernel's waves per SIMD together have
    fewer than 500 (the SIMD idles), and as info when they have more but the wave still waits
    longer than it works (under 250 cycles); otherwise other waves fill the stall and it is
    not reported. It names the wait, the load, the instructions, MFMAs and cycles between, the
    Python line of the load and the loop, one finding per loop. A wait that is there for a
    scratch reload (a register spill) still drains every older global load, since the
    counter counts in issue order; the message says so. LDS waits (`lgkmcnt(0)` /
    `s_wait_dscnt`) are not reported: LDS latency is short and most of them guard the
    `s_barrier` that hands an LDS tile from writers to readers.

    ## Why is this bad?
    `vmcnt(0)` stops the wave until every vector-memory operation it issued has returned.
    A global load takes hundreds of cycles; a wave that issues its loads and waits for them
    a few instructions later spends those cycles idle, and only other waves on the SIMD can
    fill them. Triton's AMD pipeliner (`num_stages=2`) issues the next tile's `tt.load` at
    the top of the K loop and its `ttg.local_store` at the bottom, with the `tt.dot` on the
    current tile in between, so that the MFMAs run while the loads are in flight. A
    `vmcnt(0)` scheduled before those MFMAs gives that back. The ROCm guide's "Assembly
    analysis" section asks you to check the `s_waitcnt` placement for this.

    ## Example
    The aligned GEMM (fixture `gemm_aligned`, Triton 3.9, gfx942) issues the B tile's last
    `global_load_dwordx4` at the end of the K loop body (`.amdgcn` line 1048, gemm.py:49)
    and, across the back edge, waits for it after eight `ds_read2st64_b64` and one MFMA:

        ds_read2st64_b64 v[206:209], v176 offset0:32 offset1:48
        s_waitcnt lgkmcnt(0)
        v_mfma_f32_32x32x8_f16 v[50:65], v[178:179], v[126:127], v[50:65]
        s_barrier
        s_waitcnt vmcnt(0)                               ; line 843, 13 instructions later
        ds_write2st64_b64 v151, v[70:71], v[66:67] offset1:8

    That is about 172 cycles of work (the MFMA and the LDS wait 64 each), and the kernel's 2
    waves per SIMD have 344 between them: the SIMD idles for the rest of the load.
    The other 31 MFMAs of the iteration come after the wait, although the TTGIR puts the
    `tt.dot` before the `ttg.local_store`. The same kernel from Triton 3.6 has 32 MFMAs
    between its last load and its `vmcnt(0)` and is not reported. The unaligned GEMM (gfx942,
    gfx90a) waits 1-5 instructions after the last of its 64 `global_load_ushort`.

    ## How to fix it in the kernel
    The placement is the compiler's schedule, so look for a configuration that schedules
    the MFMAs before the wait: in the fixtures, Triton 3.9 with `num_warps=8, num_stages=3`
    (`gemm_nw8_s3`) has 15 MFMAs between the last load and the wait, and Triton 3.6 puts
    all 32 there for this very kernel. More waves per SIMD (fewer VGPRs, smaller tiles) let
    other waves fill the stall (the message says when the kernel already runs the SIMD's
    maximum). In a loop with no `tl.dot` (a row reduction, a recurrence), Triton's pipeliner
    does not stage the loads: load the next block into a loop-carried variable one iteration
    ahead. Keep the loads wide (IRS101) so there are fewer to drain.
    Where the wait is for a spill reload, remove the spills first: smaller
    `BLOCK_M`/`BLOCK_N`, fewer stages, no `waves_per_eu` that caps the VGPRs below what the
    loop needs.
    """

    code = "IRS201"
    slug = "drained-wait-in-loop"
    summary = "vmcnt(0) in a loop right after the global loads it waits for: memory latency not hidden"
    stages = ("amdgcn",)
    backends = ("hip",)

    def check(self, ctx):
        program = ctx.program("amdgcn")
        if program is None:
            return []
        findings = []
        waves = _waves_per_simd(ctx)
        for fn in program.functions:
            graph = ctx.graph(program, fn)
            paths = _Paths(fn)
            groups: dict[tuple[int, str], list[_Drain]] = {}
            for w in ctx.waits(program, fn):
                if w.value != 0 or w.counter not in LOAD_COUNTERS:
                    continue
                loop = graph.loop_of(w.wait)
                if loop is None:
                    continue
                drain = _drain(fn, paths, loop, w)
                # Other waves may fill the stall: then only a wave that waits longer than it works is news.
                if drain is not None and (drain.cycles * waves < LATENCY_FLOOR or drain.cycles < LATENCY_FLOOR // 2):
                    groups.setdefault((loop.header, w.counter), []).append(drain)
            for (header, counter), drains in sorted(groups.items()):
                findings.append(self._finding(ctx, program, fn, fn.blocks[header], counter, drains))
        return findings

    def _finding(self, ctx, program, fn, header, counter, drains):
        worst = min(drains, key=lambda d: (d.cycles, d.wait))
        wait, load = fn.instructions[worst.wait], fn.instructions[worst.load]
        where = f"{os.path.basename(load.source.file)}:{load.source.line}" if load.source else "no source line"
        loop = f"the loop at {header.label} (line {header.line})" if header.label else \
            f"the loop whose header starts at line {header.line}"
        if worst.gap == 0:
            gap = "right after it is issued, with no instruction between"
        else:
            gap = (f"{worst.gap} instruction{'s' if worst.gap != 1 else ''} after it is issued"
                   f"{' (across the back edge)' if worst.load > worst.wait else ''}{_matrix_words(worst.matrix)}"
                   f" (at most about {worst.cycles} cycles of this wave's work)")
        closest = f"waits for the {load.opcode} at line {load.line} ({where}) {gap}"
        if len(drains) == 1:
            message = f"`{wait.text}` at line {wait.line} in {loop} {closest}"
        else:
            waits = ", ".join(str(fn.instructions[d.wait].line) for d in sorted(drains, key=lambda d: d.wait))
            message = (f"{len(drains)} {counter} drains in {loop} (waits at lines {waits}) each wait for a global "
                       f"load with less work between than its latency; the closest, `{wait.text}` at "
                       f"line {wait.line}, {closest}")
        message += (f": a global load from HBM takes at least {LATENCY_FLOOR} cycles (measured on gfx942), so the wave "
                    f"idles for at least {LATENCY_FLOOR - worst.cycles} of them")
        waves = _waves_per_simd(ctx)
        covered = waves * worst.cycles >= LATENCY_FLOOR
        if covered:
            message += (f"; the kernel's {waves} waves per SIMD have about {waves * worst.cycles} cycles of such work "
                        "between them, enough to fill the stall while they do not all wait at once")
        elif waves > 1:
            message += (f", and the kernel's {waves} waves per SIMD together have about {waves * worst.cycles} cycles "
                        "of such work: the SIMD idles too")
        spills = [d for d in drains if d.reload is not None]
        if spills:
            first = fn.instructions[min(spills, key=lambda d: (d.cycles, d.wait)).reload]
            who = "the wait is" if len(drains) == 1 else f"{len(spills)} of these waits are"
            message += (f"; {who} there for a scratch reload (a register spill: {first.opcode} at line {first.line}"
                        f"{'' if len(spills) == 1 else ' and others'}), and {counter} counts in issue order, so "
                        "waiting for the reload drains the global loads too")
        room = _room_for_waves(ctx)  # no "more waves" advice for a kernel already at the SIMD's maximum
        more_waves = "" if covered or not room else "; more waves per SIMD hide the stall"
        if _has_dot(ctx):
            fix = ("find a schedule that puts the loop's MFMAs between the loads and the wait: try other num_warps / "
                   f"num_stages (or Triton versions) and compare this distance{more_waves}")
        else:  # a reduction or elementwise loop: no matrix work to hide the loads behind
            fix = ("with no matrix work in the kernel, load the next block one iteration ahead (Triton's pipeliner "
                   "stages the loads that feed tl.dot, not these)")
            if not covered and room:
                fix += ", or run more waves per SIMD (fewer VGPRs or LDS per wave, a smaller BLOCK per program)"
        if spills:
            fix += "; first remove the spills that force the waits (smaller tiles, fewer stages, no waves_per_eu cap)"
        lines = [fn.instructions[d.wait].line for d in drains] + [fn.instructions[d.load].line for d in drains]
        loads = frozenset().union(*(d.loads for d in drains))
        return self.finding(
            ctx, stage="amdgcn", path=program.path, lines=lines,
            python=(load.source.file, load.source.line) if load.source else None,
            message=message, fix=fix, severity="info" if covered else "warning",
            evidence={"waits": len(drains), "distance": worst.gap, "matrix_between": worst.matrix,
                      "cover_cycles": worst.cycles, "waves_per_simd": waves,
                      "global_loads": len(loads), "spill_waits": len(spills)},
        )


def _has_dot(ctx) -> bool:
    """Whether the kernel's TTGIR has a dot op. A scan has parsed the TTGIR before the rules run (for the
    layouts), and the model answers; where nothing has (the ISA-only bench), the text does, without a
    parse for this alone: an op line whose name is one of DOT_OPS in any dialect spelling."""
    if not ctx.ttgir_read():
        artifact = ctx.kernel.artifact("ttgir")
        if artifact is None:
            return False
        try:
            return _text_has_dot(artifact.read_bytes())
        except (OSError, ArtifactError):
            pass  # ctx.ttgir meets the error again and records the problem
    module = ctx.ttgir
    return module is not None and any(True for _ in module.ops_named(*DOT_OPS))


def _text_has_dot(data: bytes) -> bool:
    for m in _DOT_NAME.finditer(data):
        start = data.rfind(b"\n", 0, m.start()) + 1
        prefix = _OP_LINE_HEAD.fullmatch(data, start, m.start())
        if prefix is not None and canonical_op_name(f"{prefix[1].decode()}.{m[1].decode()}") in DOT_OPS:
            return True
    return False


# `.dot` and the like: found by a literal-led search, then checked to be an op's name at the start
# of its line (`%12 = tt.dot ...`, `%5:2 = "ttng.warp_group_dot"(...)`), not a location or an attribute.
_DOT_NAME = re.compile(rb"\.(dot_scaled|dot_async|warp_group_dot|dot)\b")
_OP_LINE_HEAD = re.compile(rb"[ \t]*(?:%[^=\n]*=[ \t]*)?\"?([A-Za-z_][\w$]*)")


def _room_for_waves(ctx) -> bool:
    occ = ctx.occupancy.occupancy if ctx.occupancy is not None else None
    return occ is None or occ.active < occ.max_active


def _waves_per_simd(ctx) -> int:
    """The waves per SIMD the occupancy calculator gives the kernel; 1 when it is not known."""
    occ = ctx.occupancy.occupancy if ctx.occupancy is not None else None
    return max(occ.active, 1) if occ is not None and occ.unit == "waves/SIMD" else 1


def _matrix_words(n: int) -> str:
    if n == 0:
        return ", with no matrix instruction between"
    return f", with {n} matrix instruction{'s' if n > 1 else ''} between"


def _drain(fn, paths, loop, w) -> _Drain | None:
    """The in-loop global load a drain waits for with the least work between, if too little to
    cover a global load's latency; else None."""
    best = None
    loads = set()
    for op in w.waited:
        instr = fn.instructions[op.instruction]
        if instr.kind not in GLOBAL_KINDS or paths.block[op.instruction] not in loop.blocks:
            continue
        loads.add(op.instruction)
        # A path of MAX_GAP instructions or more is over the floor, whichever load is closest:
        # the search stops there (cost() says None, as for a load the loop cannot reach, or a
        # load completed by an earlier drain on the way).
        cycles = paths.cost(op.instruction, w.wait, loop.blocks, MAX_GAP, w.counter)
        if cycles is not None and cycles < LATENCY_FLOOR and (best is None or cycles < best[1]):
            best = (op.instruction, cycles)
    if best is None:
        return None
    load, cycles = best
    segments = paths.segments(load, w.wait, loop.blocks, MAX_GAP)
    gap = [i for a, b in segments for i in range(a, b)]
    matrix = sum(fn.instructions[i].kind == isa.MATRIX for i in gap)
    reload = next((i for i in reversed(gap) if fn.instructions[i].kind == isa.LOCAL_LOAD), None)
    return _Drain(w.wait, load, len(gap), matrix, cycles, frozenset(loads), reload)


def _cycles(instr) -> int:
    """One instruction's share of the work that covers a load in flight (upper estimate)."""
    if instr.kind == isa.MATRIX:
        return MATRIX_CYCLES
    if instr.opcode.startswith(TRANSCENDENTAL):
        return TRANSCENDENTAL_CYCLES
    if instr.kind == isa.WAIT and instr.wait is not None and any(
            instr.wait.get(c) is not None for c in LDS_COUNTERS):
        return LDS_WAIT_CYCLES
    return ISSUE_CYCLES


_CYCLE_FIELDS = itemgetter(4, 2, 6)  # Instruction's kind, opcode, wait (a named tuple)


@lru_cache(maxsize=4096)
def _cycles_of(fields: tuple[str, str, isa.Wait | None]) -> int:
    """_cycles by (kind, opcode, wait), all immutable: a kernel has a few hundred distinct ones."""
    kind, opcode, wait = fields
    return _cycles(isa.Instruction(0, 0, opcode, (), kind, wait=wait))


def _drains(instr, counter: WaitCounter) -> bool:
    return instr.wait is not None and instr.wait.get(counter) == 0


_UNSEEN = object()  # a cache's "not worked out yet", where None is an answer


class _Paths:
    """Shortest instruction paths between two instructions, staying inside a loop's blocks.

    A path is kept as [start, end) ranges of instruction indices, and the block chain between
    two blocks is found once per (from, to, loop): a loop's waits ask about dozens of loads
    that share their blocks, and most paths are only read for their length and for a drain
    on the way (looked up by bisection in the drains' positions)."""

    def __init__(self, fn) -> None:
        self.fn = fn
        self.block: list[int] = []  # block index of every instruction
        for b in fn.blocks:
            self.block.extend([b.index] * (b.end - b.start))
        self._chains: dict[tuple[int, int, int], list[int] | None] = {}
        self._drains: dict[WaitCounter, list[int]] = {}
        self._near: dict[tuple[int, int, int], dict[int, int]] = {}
        self._preds: list[list[int]] | None = None
        self._cycle_sums: list[int] | None = None
        self._trees: dict[tuple[int, int], tuple[dict[int, int], dict[int, int | None]]] = {}
        self._successors: list[tuple[int, ...]] | None = None
        self._inside_successors: dict[int, list[tuple[int, ...]]] = {}
        self._sizes: list[int] | None = None
        self._middles: dict[tuple, int | None] = {}  # cost(): the chain's blocks' cycles, None with a drain

    def segments(self, start: int, end: int, blocks, limit: int | None = None) -> list[tuple[int, int]] | None:
        """Ranges of the instructions executed strictly between `start` and `end` on the shortest
        path, in execution order, or None; with `limit`, also None for paths of `limit` or more
        instructions (the search does not go that far)."""
        route = self._route(start, end, blocks, limit)
        if route is None:
            return None
        src, dst, key = route
        if key is None:
            return [(start + 1, end)]
        blocks_of = self.fn.blocks
        return [(start + 1, src.end), *((blocks_of[b].start, blocks_of[b].end) for b in self._chains[key]),
                (dst.start, end)]

    def _route(self, start: int, end: int, blocks, limit: int | None):
        """(the start's block, the end's, the key of the chain of blocks between in `_chains`), the key None
        within one block; None where segments() is None."""
        fn = self.fn
        src, dst = fn.blocks[self.block[start]], fn.blocks[self.block[end]]
        if src.index == dst.index and start < end:
            return src, dst, None
        bound = limit  # the searches for this limit need not go past it (_chain)
        if limit is not None:
            # The two ends count too; and a load whose block is too far from the wait's, as one
            # backward search from the wait finds for all its loads, needs no search of its own.
            head = end - dst.start
            limit -= (src.end - start - 1) + head
            if limit <= 0 or self._near_blocks(dst.index, blocks, limit + (src.end - start - 1)).get(
                    src.index, limit) >= limit:
                return None
        key = (src.index, dst.index, id(blocks), limit)
        chain = self._chains.get(key, _UNSEEN)
        if chain is _UNSEEN:
            chain = self._chains[key] = self._chain(src, dst, blocks, limit, bound)
        return None if chain is None else (src, dst, key)

    def cost(self, start: int, end: int, blocks, limit: int, counter: WaitCounter) -> int | None:
        """cycles_in(segments(start, end, blocks, limit)), or None where that is None or drains_in(...,
        counter) holds. The blocks between are summed and searched for a drain once per (chain, counter):
        a loop's waits ask about dozens of loads that share their blocks; the two ends are read here."""
        route = self._route(start, end, blocks, limit)
        if route is None:
            return None
        src, dst, key = route
        sums = self._cycle_sums
        if sums is None:
            self.cycles_in(())
            sums = self._cycle_sums
        at = self._drains.get(counter)
        if at is None:
            self.drains_in((), counter)
            at = self._drains[counter]
        if key is None:  # one block: the instructions strictly between
            first = start + 1
            if bisect_left(at, first) < bisect_left(at, end):
                return None
            return sums[end] - sums[first] if end > first else 0
        middle = self._middles.get((key, counter), _UNSEEN)
        if middle is _UNSEEN:
            blocks_of = self.fn.blocks
            inner = [(blocks_of[b].start, blocks_of[b].end) for b in self._chains[key]]
            middle = self._middles[(key, counter)] = None if self.drains_in(inner, counter) else self.cycles_in(inner)
        if middle is None:
            return None
        first, last = start + 1, src.end
        if bisect_left(at, first) < bisect_left(at, last) or bisect_left(at, dst.start) < bisect_left(at, end):
            return None
        return middle + (sums[last] - sums[first] if last > first else 0) + (
            sums[end] - sums[dst.start] if end > dst.start else 0)

    def cycles_in(self, segments: list[tuple[int, int]]) -> int:
        """The work (_cycles) of the instructions in the ranges, from running sums made once per function:
        a loop of 9,000 instructions asked for the same sums thousands of times (a third of this rule)."""
        sums = self._cycle_sums
        if sums is None:
            sums = self._cycle_sums = [0, *accumulate(map(_cycles_of, map(_CYCLE_FIELDS, self.fn.instructions)))]
        total = 0
        for a, b in segments:
            if b > a:
                total += sums[b] - sums[a]
        return total

    def between(self, start: int, end: int, blocks) -> list[int] | None:
        """Instructions executed strictly between `start` and `end` on the shortest path, or None."""
        segments = self.segments(start, end, blocks)
        return None if segments is None else [i for a, b in segments for i in range(a, b)]

    def drains_in(self, segments: list[tuple[int, int]], counter: WaitCounter) -> bool:
        """Whether an instruction in the ranges waits for `counter` to reach 0."""
        at = self._drains.get(counter)
        if at is None:
            at = self._drains[counter] = [i.index for i in self.fn.instructions
                                          if i.wait is not None and i.wait.get(counter) == 0]  # _drains(i)
        for a, b in segments:
            if bisect_left(at, a) < bisect_left(at, b):
                return True
        return False

    def _near_blocks(self, dst: int, blocks, budget: int) -> dict[int, int]:
        """Blocks inside `blocks` whose end is fewer than `budget` instructions before the start
        of `dst`, with that distance (the instructions of the blocks between)."""
        key = (dst, id(blocks), budget)
        near = self._near.get(key)
        if near is not None:
            return near
        fn = self.fn
        if self._preds is None:
            self._preds = [[] for _ in fn.blocks]
            for b in fn.blocks:
                for s in b.successors:
                    self._preds[s].append(b.index)
        preds = self._preds
        near = self._near[key] = {}
        heap = [(0, p) for p in preds[dst] if p in blocks]
        heapq.heapify(heap)
        while heap:
            d, b = heapq.heappop(heap)
            if b in near:
                continue
            near[b] = d
            if b == dst:  # a path reaches dst at its end: nothing before it is nearer through it
                continue
            d += fn.blocks[b].end - fn.blocks[b].start
            if d >= budget:
                continue
            for p in preds[b]:
                if p in blocks and p not in near:
                    heapq.heappush(heap, (d, p))
        return near

    def _taken(self, block) -> tuple[int, ...]:
        """The successors a wave goes on to. An `s_cbranch_execz` jumps over exec-masked code only
        when no lane of the wave is active in it; a wave whose lanes diverge (tanh's two paths, a
        masked tail) runs it: the path that covers a load goes through it."""
        last = self.fn.instructions[block.end - 1] if block.end > block.start else None
        if last is not None and last.opcode == "s_cbranch_execz" and block.index + 1 in block.successors:
            return (block.index + 1,)
        return block.successors

    def _chain(self, src, dst, blocks, limit: int | None, bound: int | None) -> list[int] | None:
        """The blocks strictly between `src` and `dst` on the shortest path inside `blocks`; None
        if there is none of fewer than `limit` instructions in all. A search with a limit pops, in the
        same order, every entry shorter than it that the whole search pops (ties broken alike), and
        reaches `dst` exactly when the whole search reaches it in fewer: so one search from `src`, cut
        at `bound` (at least every `limit` it answers for), answers for every `dst` and limit (a long
        loop asked thousands of times; the cut spares walking a loop of hundreds of blocks from each)."""
        key = (src.index, id(blocks), bound)
        tree = self._trees.get(key)
        if tree is None:
            tree = self._trees[key] = self._shortest_from(src, blocks, bound)
        best, came = tree
        reached = best.get(dst.index)
        if reached is None or (limit is not None and reached >= limit):
            return None
        chain, b = [], came[dst.index]
        while b is not None:
            chain.append(b)
            b = came[b]
        return chain[::-1]

    def _inside(self, blocks) -> list[tuple[int, ...]]:
        """Each block's taken successors that are in `blocks` (a loop), worked out once per loop."""
        key = id(blocks)
        inside = self._inside_successors.get(key)
        if inside is None:
            if self._successors is None:
                self._successors = [self._taken(b) for b in self.fn.blocks]
            inside = self._inside_successors[key] = [tuple(s for s in succ if s in blocks)
                                                     for succ in self._successors]
        return inside

    def _shortest_from(self, src, blocks, bound: int | None) -> tuple[dict[int, int], dict[int, int | None]]:
        """Dijkstra from `src`'s successors over `blocks`: each block's distance (the instructions of the
        blocks before it) and the block it is reached from (None: a successor of `src`), for the blocks
        nearer than `bound` (all with None). Block sizes are not negative, so the entries come off the
        heap in ascending order, and those under `bound` come off as in the uncut search."""
        successors = self._inside(blocks)
        if self._sizes is None:
            self._sizes = [b.end - b.start for b in self.fn.blocks]
        sizes = self._sizes
        best: dict[int, int] = {}
        came: dict[int, int | None] = {}
        heap = [(0, s, -1) for s in successors[src.index]]
        pop, push = heapq.heappop, heapq.heappush
        while heap:
            d, b, prev = pop(heap)
            if b in best:
                continue
            best[b], came[b] = d, (None if prev < 0 else prev)
            nd = d + sizes[b]
            if bound is not None and nd >= bound:
                continue
            for s in successors[b]:
                if s not in best:
                    push(heap, (nd, s, b))
        return best, came
