"""Register def-use, wait-counter and MFMA-operand analyses over an AMDGCN function.

- `waits(fn, arch)`: for each `s_waitcnt` (and the gfx10+/gfx12 forms), which outstanding
  memory operations it waits for and how many instructions separate their issue from the
  wait. The hardware counters count in issue order: `vmcnt(N)` returns once at most N
  vector-memory operations are outstanding, so it waits for every operation older than
  the N youngest. The analysis tracks, per counter, which operations may sit at each
  position of that queue (youngest first), merged over all paths into a block, to a fixed
  point around loops. (SMEM can return out of order; LLVM then waits for lgkmcnt(0), and
  this analysis still counts in issue order.)
- `matrix_feeds(fn)`: for each MFMA/WMMA, the loads whose results reach its A and B
  operands, followed back through register definitions and the VALU ops in between
  (conversions, packs, the int4 dequantization).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from functools import lru_cache

from irscope import isa
from irscope.isa import Instruction, IsaFunction
from irscope.isa_graph import FunctionGraph
from irscope.parsers import amdgcn_opcodes as ops

_NO_DEF_KINDS = frozenset({isa.GLOBAL_STORE, isa.SHARED_STORE, isa.LOCAL_STORE, isa.WAIT, isa.BARRIER,
                           isa.BRANCH, isa.ASYNC_COPY})
_NO_DEF_SCALAR = ("s_cmp", "s_bitcmp", "s_nop", "s_setprio", "s_sendmsg", "s_sleep", "s_trap", "s_dcache",
                  "s_icache", "s_set_gpr_idx", "s_setreg", "s_waitcnt_depctr", "s_wait_alu", "s_barrier")
LOAD_KINDS = frozenset({isa.GLOBAL_LOAD, isa.SHARED_LOAD, isa.LOCAL_LOAD, isa.SCALAR_LOAD})


@lru_cache(maxsize=65536)
def _units(token: str) -> tuple[str, ...]:
    return ops.operand(token).units()


def defs_uses(instr: Instruction) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Register units an instruction writes and reads. LLVM prints the destination first;
    stores, waits, branches, compares and atomics without return have none."""
    args = instr.args
    if not args:
        return (), ()
    has_def = not (
        instr.kind in _NO_DEF_KINDS
        or (instr.kind == isa.GLOBAL_ATOMIC and not ops.returns_value(args))
        or (instr.kind == isa.SHARED_ATOMIC and "_rtn_" not in instr.opcode)
        or (instr.kind == isa.SCALAR_ALU and instr.opcode.startswith(_NO_DEF_SCALAR))
    )
    uses = tuple(u for a in (args[1:] if has_def else args) for u in _units(a))
    return (_units(args[0]) if has_def else ()), uses


# ---- waits ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class WaitedOp:
    instruction: int  # index of the memory operation
    distance: int  # instructions between its issue and the wait, on the shortest path


@dataclass(frozen=True)
class CounterWait:
    """One counter of one wait instruction and what it waits for."""

    wait: int  # index of the wait instruction
    counter: str
    value: int
    outstanding: int  # most operations that may be outstanding on this counter just before it
    waited: tuple[WaitedOp, ...]  # oldest-issued first


# counter -> {operation index: (fewest, most) younger operations on that counter}: the
# operation's position in the counter's queue, youngest = 0, over all paths.
Queues = dict[str, dict[int, tuple[int, int]]]
_WIDEN_AFTER = 3  # visits of a block before growing positions jump to the counter's limit


def waits(fn: IsaFunction, arch: str | None, graph: FunctionGraph | None = None) -> tuple[CounterWait, ...]:
    graph = graph or FunctionGraph(fn)
    limits = ops.counter_limits(arch)
    issues = [ops.counters_of(i.opcode, i.kind, i.args, arch) for i in fn.instructions]
    order = _reverse_postorder(fn)
    rank = {b: k for k, b in enumerate(order)}
    entry: dict[int, Queues] = {0: {}} if fn.blocks else {}
    visits: dict[int, int] = {}
    work = {0} if fn.blocks else set()
    while work:
        b = min(work, key=lambda x: rank.get(x, len(rank)))
        work.discard(b)
        out = _run_block(fn, fn.blocks[b], entry[b], issues, limits, None)
        for s in fn.blocks[b].successors:
            merged = _merge(entry.get(s), out)
            if merged != entry.get(s):
                visits[s] = visits.get(s, 0) + 1
                if visits[s] > _WIDEN_AFTER:
                    merged = _widen(entry.get(s, {}), merged, limits)
                entry[s] = merged
                work.add(s)
    found: dict[tuple[int, str], tuple[int, int, set[int]]] = {}
    for b, state in entry.items():
        _run_block(fn, fn.blocks[b], state, issues, limits, found)
    distances = _Distances(fn)
    result = []
    for (w, counter), (value, outstanding, waited) in sorted(found.items()):
        ops_ = tuple(WaitedOp(i, distances.between(i, w)) for i in sorted(waited))
        result.append(CounterWait(w, counter, value, outstanding, ops_))
    return tuple(result)


def _run_block(fn, block, state: Queues, issues, limits, found) -> Queues:
    queues = dict(state)
    for i in range(block.start, block.end):
        instr = fn.instructions[i]
        if instr.wait is not None:
            for counter, value in instr.wait.counters:
                queue = queues.get(counter)
                if not queue:
                    if found is not None:
                        _record(found, i, counter, value, 0, ())
                    continue
                if found is not None:
                    deepest = max(hi for _, hi in queue.values()) + 1
                    _record(found, i, counter, value, deepest, (op for op, (_, hi) in queue.items() if hi >= value))
                # Definitely older than the `value` youngest: complete. Maybe older: complete on
                # the paths where it is, still outstanding (and among the youngest) on the others.
                queues[counter] = {op: (lo, min(hi, value - 1)) for op, (lo, hi) in queue.items() if lo < value}
        for counter in issues[i]:
            limit = limits.get(counter, 63)
            queue = queues.get(counter, {})
            aged = {op: (lo + 1, min(hi + 1, limit - 1)) for op, (lo, hi) in queue.items() if lo + 1 < limit}
            aged[i] = (0, 0)
            queues[counter] = aged
    return queues


def _record(found, i: int, counter: str, value: int, deepest: int, waited) -> None:
    old = found.get((i, counter))
    if old is None:
        found[(i, counter)] = (value, deepest, set(waited))
    else:
        old[2].update(waited)
        found[(i, counter)] = (value, max(old[1], deepest), old[2])


def _merge(a: Queues | None, b: Queues) -> Queues:
    if a is None:
        return {c: dict(q) for c, q in b.items()}
    out = {c: dict(q) for c, q in a.items()}
    for counter, queue in b.items():
        mine = out.setdefault(counter, {})
        for op, (lo, hi) in queue.items():
            if op in mine:
                lo0, hi0 = mine[op]
                mine[op] = (min(lo, lo0), max(hi, hi0))
            else:
                mine[op] = (lo, hi)
    return out


def _widen(old: Queues, new: Queues, limits) -> Queues:
    """Positions still growing after a few trips round a loop go straight to the limit."""
    out = {}
    for counter, queue in new.items():
        before = old.get(counter, {})
        top = limits.get(counter, 63) - 1
        out[counter] = {op: (lo, top if op in before and hi > before[op][1] else hi) for op, (lo, hi) in queue.items()}
    return out


def _reverse_postorder(fn: IsaFunction) -> list[int]:
    seen, post = set(), []
    stack = [(0, iter(fn.blocks[0].successors))] if fn.blocks else []
    seen.add(0)
    while stack:
        b, it = stack[-1]
        nxt = next((s for s in it if s not in seen), None)
        if nxt is None:
            post.append(b)
            stack.pop()
        else:
            seen.add(nxt)
            stack.append((nxt, iter(fn.blocks[nxt].successors)))
    return post[::-1]


class _Distances:
    """Fewest instructions executed between two instructions, over the CFG."""

    def __init__(self, fn: IsaFunction) -> None:
        self.fn = fn
        self.from_block: dict[int, dict[int, int]] = {}

    def between(self, issue: int, wait: int) -> int:
        fn = self.fn
        src, dst = fn.block_of(issue), fn.block_of(wait)
        if src.index == dst.index and issue < wait:
            return wait - issue - 1
        to_start = self.from_block.get(src.index)
        if to_start is None:
            to_start = self.from_block[src.index] = self._dijkstra(src.index)
        if dst.index not in to_start:
            return -1
        return (src.end - issue - 1) + to_start[dst.index] + (wait - dst.start)

    def _dijkstra(self, block: int) -> dict[int, int]:
        """Instructions executed from the end of `block` to the start of each block."""
        blocks = self.fn.blocks
        best: dict[int, int] = {}
        heap = [(0, s) for s in blocks[block].successors]
        while heap:
            d, b = heapq.heappop(heap)
            if b in best:
                continue
            best[b] = d
            length = blocks[b].end - blocks[b].start
            for s in blocks[b].successors:
                if s not in best:
                    heapq.heappush(heap, (d + length, s))
        return best


# ---- MFMA operands ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Feed:
    load: int  # index of the load instruction
    operand: str  # "A" or "B"
    hops: int  # register definitions followed from the load to the matrix op (1 = direct)


def matrix_feeds(fn: IsaFunction, max_hops: int = 8) -> dict[int, tuple[Feed, ...]]:
    """For each matrix instruction, the loads whose results reach its A and B operands."""
    reach = _ReachingDefs(fn)
    out: dict[int, tuple[Feed, ...]] = {}
    for instr in fn.instructions:
        if instr.kind != isa.MATRIX or len(instr.args) < 3:
            continue
        feeds: dict[tuple[int, str], int] = {}
        for operand, token in (("A", instr.args[1]), ("B", instr.args[2])):
            frontier = [(instr.index, u) for u in _units(token)]
            seen: set[tuple[int, str]] = set()
            for hops in range(1, max_hops + 1):
                following = []
                for at, unit in frontier:
                    for d in reach.defs_before(at, unit):
                        if (d, unit) in seen:
                            continue
                        seen.add((d, unit))
                        definer = fn.instructions[d]
                        if definer.kind in LOAD_KINDS:
                            key = (d, operand)
                            feeds[key] = min(feeds.get(key, hops), hops)
                        elif definer.kind == isa.VECTOR_ALU:
                            following.extend((d, u) for u in defs_uses(definer)[1] if u[0] in "va")
                frontier = following
                if not frontier:
                    break
        out[instr.index] = tuple(Feed(d, op, h) for (d, op), h in sorted(feeds.items()))
    return out


class _ReachingDefs:
    """Which instructions may define a register unit last before a given instruction."""

    def __init__(self, fn: IsaFunction) -> None:
        self.fn = fn
        self.defs = [defs_uses(i)[0] for i in fn.instructions]
        self.preds: dict[int, list[int]] = {b.index: [] for b in fn.blocks}
        for b in fn.blocks:
            for s in b.successors:
                self.preds[s].append(b.index)

    def defs_before(self, at: int, unit: str) -> frozenset[int]:
        block = self.fn.block_of(at)
        for i in range(at - 1, block.start - 1, -1):
            if unit in self.defs[i]:
                return frozenset((i,))
        return self._into(block.index, unit)

    def _into(self, block: int, unit: str) -> frozenset[int]:
        found: set[int] = set()
        seen: set[int] = set()
        stack = list(self.preds[block])
        while stack:
            b = stack.pop()
            if b in seen:
                continue
            seen.add(b)
            blk = self.fn.blocks[b]
            for i in range(blk.end - 1, blk.start - 1, -1):
                if unit in self.defs[i]:
                    found.add(i)
                    break
            else:
                stack.extend(self.preds[b])
        return frozenset(found)
