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
from bisect import bisect_left
from dataclasses import FrozenInstanceError, dataclass
from functools import lru_cache
from operator import itemgetter
from typing import Literal

from irscope.isa import model as isa
from irscope.isa.model import Instruction, IsaFunction
from irscope.isa.graph import FunctionGraph
from irscope.isa.wait_queues import Queues, merge, run_block
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
    has_def = _has_def(instr.opcode, instr.kind, args)
    uses = tuple(u for a in (args[1:] if has_def else args) for u in _units(a))
    return (_units(args[0]) if has_def else ()), uses


def _has_def(opcode: str, kind: str, args: tuple[str, ...]) -> bool:
    if kind == isa.GLOBAL_ATOMIC:
        return ops.returns_value(args)
    return _writes(opcode, kind)


@lru_cache(maxsize=16384)
def _writes(opcode: str, kind: str) -> bool:
    """Whether an (opcode, kind) writes its first operand; global atomics depend on their operands."""
    return not (
        kind in _NO_DEF_KINDS
        or (kind == isa.SHARED_ATOMIC and "_rtn_" not in opcode)
        or (kind == isa.SCALAR_ALU and opcode.startswith(_NO_DEF_SCALAR))
    )


# ---- waits ---------------------------------------------------------------------------------

# The wait counters (parsers/amdgcn_opcodes.py names them): gfx9-gfx11 and gfx12's.
WaitCounter = Literal["vmcnt", "vscnt", "lgkmcnt", "expcnt",
                      "loadcnt", "storecnt", "samplecnt", "bvhcnt", "dscnt", "kmcnt"]

class WaitedOp:
    """One operation a wait waits for: `instruction`, the index of the memory operation, and `distance`,
    the instructions between its issue and the wait on the shortest path (-1: no path).

    Immutable and compared, hashed and printed as the frozen dataclass it was. The distance is worked
    out when first read: a scan's rules read only `instruction`, and the shortest paths were a third
    of the analysis on a GEMM of 900 blocks."""

    __slots__ = ("instruction", "_distance", "_wait", "_distances")

    def __init__(self, instruction: int, distance: int) -> None:
        _set_instruction(self, instruction)
        _set_distance(self, distance)
        _set_wait(self, None)
        _set_distances(self, None)

    @classmethod
    def _lazy(cls, instruction: int, wait: int, distances: _Distances) -> WaitedOp:
        op = _new_object(cls)
        _set_instruction(op, instruction)
        _set_distance(op, None)
        _set_wait(op, wait)
        _set_distances(op, distances)
        return op

    @property
    def distance(self) -> int:
        distance = self._distance
        if distance is None:
            distance = self._distances.between(self.instruction, self._wait)
            _set_distance(self, distance)
            _set_distances(self, None)
        return distance

    def __setattr__(self, name, value):
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name):
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return (self.instruction, self.distance) == (other.instruction, other.distance)
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.instruction, self.distance))

    def __repr__(self) -> str:
        return f"WaitedOp(instruction={self.instruction!r}, distance={self.distance!r})"

    def __reduce__(self):
        return (WaitedOp, (self.instruction, self.distance))


# The slots' own setters (WaitedOp.__setattr__ refuses every assignment from outside).
_set_instruction = WaitedOp.instruction.__set__
_set_distance = WaitedOp._distance.__set__
_set_wait = WaitedOp._wait.__set__
_set_distances = WaitedOp._distances.__set__
_new_object = object.__new__


@dataclass(frozen=True)
class CounterWait:
    """One counter of one wait instruction and what it waits for."""

    wait: int  # index of the wait instruction
    counter: WaitCounter
    value: int
    outstanding: int  # most operations that may be outstanding on this counter just before it
    waited: tuple[WaitedOp, ...]  # oldest-issued first


_WIDEN_AFTER = 3  # visits of a block before growing positions jump to the counter's limit


def waits(fn: IsaFunction, arch: str | None, graph: FunctionGraph | None = None) -> tuple[CounterWait, ...]:
    """Every counter of every wait instruction reached from the entry, in (wait, counter) order.
    `graph` is accepted for callers that hold one; the analysis walks the blocks' successors."""
    limits = ops.counter_limits(arch)
    events = _events(fn, arch)
    rank = {b: k for k, b in enumerate(_reverse_postorder(fn))}
    entry: dict[int, Queues] = {0: {}} if fn.blocks else {}
    visits: dict[int, int] = {}
    # The worklist, lowest reverse-postorder rank first. A block's last run happens after the
    # last change to its entry state (each change queues it again), so what that run records
    # at the waits is what a final pass over the fixed point would record.
    work = [(0, 0)] if fn.blocks else []
    queued = {0} if fn.blocks else set()
    recorded: dict[int, dict] = {}
    while work:
        _, b = heapq.heappop(work)
        queued.discard(b)
        found: dict[tuple[int, str], tuple[int, int, set[int]]] = {}
        out = run_block(events[b], entry[b], limits, found)
        recorded[b] = found
        for s in fn.blocks[b].successors:
            before = entry.get(s)
            seen = visits.get(s, 0)
            # Widening (after a few changes) is done in the same pass as the join: it changes only
            # positions the join grew, so whether the entry changed does not depend on it.
            merged = merge(before, out, limits, seen >= _WIDEN_AFTER)
            if merged is not before:
                visits[s] = seen + 1
                entry[s] = merged
                if s not in queued:
                    queued.add(s)
                    heapq.heappush(work, (rank[s], s))
    found = {}
    for b in entry:
        found.update(recorded[b])
    pairs = [(w, counter, value, outstanding, sorted(waited))
             for (w, counter), (value, outstanding, waited) in sorted(found.items())]
    distances = _Distances(fn, [(w, waited) for w, _, _, _, waited in pairs])
    lazy = WaitedOp._lazy
    return tuple(CounterWait(w, counter, value, outstanding, tuple(lazy(i, w, distances) for i in waited))
                 for w, counter, value, outstanding, waited in pairs)


# arch -> {opcode: (kind, counters it issues)}; a corpus has a few thousand opcodes.
_ISSUED: dict[str | None, dict[str, tuple[str, tuple[str, ...]]]] = {}


def _events(fn: IsaFunction, arch: str | None) -> list[list[tuple[int, tuple, tuple]]]:
    """Per block, the instructions that wait or count: (index, wait counters, issued counters).
    The rest (most of a kernel: ALU ops) leave the queues alone, so the fixed point skips them.
    The counters an opcode issues are looked up once per opcode (and kind: buffer ops to
    scratch change it), not worked out per instruction."""
    issued = _ISSUED.get(arch)
    if issued is None or len(issued) > 65536:
        issued = _ISSUED[arch] = {}
    get = issued.get
    atomic = isa.GLOBAL_ATOMIC
    events = []
    append = events.append
    for i, opcode, kind, wait in map(_EVENT_FIELDS, fn.instructions):
        known = get(opcode)
        if known is None or known[0] != kind:
            known = issued[opcode] = (kind, ops.counters_of(opcode, kind, (), arch))
        counters = known[1]
        if kind == atomic:  # counts in a store counter unless it returns the old value
            counters = ops.counters_of(opcode, kind, fn.instructions[i].args, arch)
        if counters or wait is not None:
            append((i, () if wait is None else wait.counters, counters))
    out: list[list[tuple[int, tuple, tuple]]] = []
    k = 0
    for block in fn.blocks:
        first = k
        while k < len(events) and events[k][0] < block.end:
            k += 1
        out.append(events[first:k])
    return out


_EVENT_FIELDS = itemgetter(0, 2, 4, 6)  # Instruction's index, opcode, kind, wait (a named tuple)


def _reverse_postorder(fn: IsaFunction) -> list[int]:
    if not fn.blocks:
        return []
    blocks = fn.blocks
    seen, post = {0}, []
    stack = [(0, iter(blocks[0].successors))]
    while stack:
        b, it = stack[-1]
        for nxt in it:
            if nxt not in seen:
                seen.add(nxt)
                stack.append((nxt, iter(blocks[nxt].successors)))
                break
        else:
            post.append(b)
            stack.pop()
    return post[::-1]


class _Distances:
    """Fewest instructions executed between two instructions, over the CFG.

    Built for the (issue, wait) pairs it will be asked about: one Dijkstra backwards from each
    block holding waits (there are a third as many of those as of issuing blocks), over the
    reversed CFG, stopping once the issuing blocks it was asked about are settled. Nothing is
    worked out before the first question (WaitedOp.distance), and a wait block's search only
    when one of its pairs is asked about."""

    def __init__(self, fn: IsaFunction, waits: list[tuple[int, list[int]]]) -> None:
        self.fn = fn
        self.waits = waits  # (wait, the operations it waits for)
        self.block: list[int] = []
        self.wanted: dict[int, set[int]] = {}  # wait block -> issuing blocks
        self.to_block: dict[int, dict[int, int]] = {}  # wait block -> its search
        self.preds: list[list[int]] = []
        self.prepared = False

    def _prepare(self) -> None:
        self.prepared = True
        blocks = self.fn.blocks
        self.block = block = [0] * (blocks[-1].end if blocks else 0)
        for b in blocks:
            block[b.start:b.end] = [b.index] * (b.end - b.start)
        wanted = self.wanted
        for wait, waited in self.waits:
            dst = block[wait]
            for issue in waited:
                src = block[issue]
                if src != dst or issue >= wait:
                    wanted.setdefault(dst, set()).add(src)
        self.preds = [[] for _ in blocks]
        for b in blocks:
            for s in b.successors:
                self.preds[s].append(b.index)

    def between(self, issue: int, wait: int) -> int:
        if not self.prepared:
            self._prepare()
        blocks = self.fn.blocks
        src, dst = blocks[self.block[issue]], blocks[self.block[wait]]
        if src.index == dst.index and issue < wait:
            return wait - issue - 1
        from_end = self.to_block.get(dst.index)
        if from_end is None:
            from_end = self.to_block[dst.index] = self._dijkstra(dst.index, self.wanted[dst.index], self.preds)
        if src.index not in from_end:
            return -1
        return (src.end - issue - 1) + from_end[src.index] + (wait - dst.start)

    def _dijkstra(self, block: int, sources: set[int], preds: list[list[int]]) -> dict[int, int]:
        """Instructions executed from the end of each block to the start of `block`, until every
        source block is settled. A shortest path reaches `block` only at its end, so it is not
        walked through: what precedes it is reached through its own predecessors."""
        blocks = self.fn.blocks
        best: dict[int, int] = {}
        heap = [(0, p) for p in preds[block]]
        heapq.heapify(heap)
        left = len(sources)
        while heap:
            d, b = heapq.heappop(heap)
            if b in best:
                continue
            best[b] = d
            if b in sources:
                left -= 1
                if not left:
                    break
            if b == block:
                continue
            blk = blocks[b]
            d += blk.end - blk.start
            for p in preds[b]:
                if p not in best:
                    heapq.heappush(heap, (d, p))
        return best


# ---- MFMA operands ---------------------------------------------------------------------------

MatrixOperand = Literal["A", "B"]


@dataclass(frozen=True)
class Feed:
    load: int  # index of the load instruction
    operand: MatrixOperand
    hops: int  # register definitions followed from the load to the matrix op (1 = direct)


def matrix_feeds(fn: IsaFunction, max_hops: int = 8) -> dict[int, tuple[Feed, ...]]:
    """For each matrix instruction, the loads whose results reach its A and B operands."""
    matrix = [instr for instr in fn.instructions if instr.kind == isa.MATRIX and len(instr.args) >= 3]
    if not matrix:  # most kernels: no def-use chains to build
        return {}
    reach = _ReachingDefs(fn)
    out: dict[int, tuple[Feed, ...]] = {}
    # The walk back from an operand is a breadth-first search over (definition, unit) nodes, so what
    # it finds depends only on the nodes of its first hop: MFMAs that read the same registers after
    # the same definitions (an unrolled K loop's chain) share one walk.
    walks: dict[frozenset[tuple[int, str]], dict[int, int]] = {}
    vector_uses: dict[int, tuple[str, ...]] = {}  # a VALU definer's vector register units read
    for instr in matrix:
        feeds: dict[tuple[int, str], int] = {}
        for operand, token in (("A", instr.args[1]), ("B", instr.args[2])):
            first = frozenset((d, u) for u in _units(token) for d in reach.defs_before(instr.index, u))
            loads = walks.get(first)
            if loads is None:
                loads = walks[first] = _walk(fn, reach, first, max_hops, vector_uses)
            for d, hops in loads.items():
                feeds[(d, operand)] = hops
        out[instr.index] = tuple(Feed(d, op, h) for (d, op), h in sorted(feeds.items()))
    return out


def _walk(fn: IsaFunction, reach: _ReachingDefs, nodes: frozenset[tuple[int, str]], max_hops: int,
          vector_uses: dict[int, tuple[str, ...]]) -> dict[int, int]:
    """The loads reached from the first hop's (definition, unit) nodes, each with the fewest hops."""
    loads: dict[int, int] = {}
    seen = set(nodes)
    level = list(nodes)
    for hops in range(1, max_hops + 1):
        following = []
        for d, _unit in level:
            definer = fn.instructions[d]
            if definer.kind in LOAD_KINDS:
                if d not in loads:  # the first hop that reaches it is the fewest
                    loads[d] = hops
            elif definer.kind == isa.VECTOR_ALU:
                uses = vector_uses.get(d)
                if uses is None:
                    uses = vector_uses[d] = tuple(u for u in defs_uses(definer)[1] if u[0] in "va")
                following.extend((d, u) for u in uses)
        if not following or hops == max_hops:
            break
        level = []
        for at, unit in following:
            for d in reach.defs_before(at, unit):
                if (d, unit) not in seen:
                    seen.add((d, unit))
                    level.append((d, unit))
    return loads


_DEF_ITEMS = itemgetter(0, 2, 3, 4)  # Instruction's index, opcode, args, kind (a named tuple)


class _ReachingDefs:
    """Which instructions may define a register unit last before a given instruction.

    Each unit's defining instructions are kept in order, so the last one before a point of a
    block is a bisection, not a walk back over the block's instructions."""

    def __init__(self, fn: IsaFunction) -> None:
        self.fn = fn
        self.block: list[int] = []  # block index of every instruction
        for b in fn.blocks:
            self.block.extend([b.index] * (b.end - b.start))
        # The destinations are grouped by token first (a kernel writes v[50:65] dozens of times),
        # so each distinct token is split into units once. Whether an opcode writes is looked up
        # once per opcode (with its kind; None: a global atomic, which writes when it returns).
        by_token: dict[str, list[int]] = {}
        writes: dict[str, tuple[str, bool | None]] = {}
        get_writes, get_token = writes.get, by_token.get
        returns_value = ops.returns_value
        for index, opcode, args, kind in map(_DEF_ITEMS, fn.instructions):
            if not args:
                continue
            known = get_writes(opcode)
            if known is None or known[0] != kind:
                known = writes[opcode] = (kind, None if kind == isa.GLOBAL_ATOMIC else _writes(opcode, kind))
            if not known[1] and (known[1] is not None or not returns_value(args)):
                continue
            at = get_token(args[0])
            if at is None:
                by_token[args[0]] = [index]
            else:
                at.append(index)
        self.defined: dict[str, list[int]] = {}  # unit -> indices of the instructions writing it, ascending
        merged: set[str] = set()  # units written through more than one token: their lists need sorting
        defined = self.defined
        for token, indices in by_token.items():
            units = _units(token)
            for unit in units:
                at = defined.get(unit)
                if at is None:
                    defined[unit] = indices if len(units) == 1 else list(indices)
                else:
                    at.extend(indices)
                    merged.add(unit)
        for unit in merged:
            defined[unit].sort()
        self._reaching: dict[tuple[int, str], frozenset[int]] = {}
        self.preds: dict[int, list[int]] = {b.index: [] for b in fn.blocks}
        for b in fn.blocks:
            for s in b.successors:
                self.preds[s].append(b.index)

    def defs_before(self, at: int, unit: str) -> frozenset[int]:
        block = self.fn.blocks[self.block[at]] if 0 <= at < len(self.block) else self.fn.block_of(at)
        defined = self.defined.get(unit)
        if not defined:
            return frozenset()
        k = bisect_left(defined, at) - 1
        if k >= 0 and defined[k] >= block.start:
            return frozenset((defined[k],))
        key = (block.index, unit)  # the same for every use of `unit` in the block before its first def
        found = self._reaching.get(key)
        if found is None:
            found = self._reaching[key] = self._into(block.index, defined)
        return found

    def _into(self, block: int, defined: list[int]) -> frozenset[int]:
        found: set[int] = set()
        seen: set[int] = set()
        stack = list(self.preds[block])
        while stack:
            b = stack.pop()
            if b in seen:
                continue
            seen.add(b)
            blk = self.fn.blocks[b]
            k = bisect_left(defined, blk.end) - 1
            if k >= 0 and defined[k] >= blk.start:
                found.add(defined[k])
            else:
                stack.extend(self.preds[b])
        return frozenset(found)
