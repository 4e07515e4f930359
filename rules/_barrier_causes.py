"""Why a loop has its barriers: each one attributed to the TTGIR op whose LDS traffic it orders.

A workgroup barrier in a Triton loop sits between two accesses to LDS (shared memory) that
different waves make: a write and the reads of it (read-after-write), or reads and the write
that overwrites them (write-after-read). Triton's Membar pass inserts it before the second
access; LLVM may move it, but not across either access. So the write side names the cause: the
first LDS write after the barrier, else the last one before it (since the previous barrier),
else the reads, else a global atomic next to it (a lock: `tl.atomic_xchg` on a scalar). A
barrier right after a wait for asynchronous copies or wgmma (`cp.async.wait_group`,
`wgmma.wait_group`) hands a pipeline stage over and is the pipeline's own.

The ISA instruction is matched to the TTGIR op of the loop with the same source frames (the
innermost `.loc` frame first: an inlined helper's ops share the call site's outer line), and
the op says what the traffic is:

- `convert`: a `ttg.convert_layout` through LDS; its rounds are the separate write phases (a
  conversion whose scratch holds a part of the tile writes, waits, reads, waits, in rounds);
- `state`: `ttg.local_alloc` of a value the loop carries from a dot of the previous iteration
  (an accumulator or recurrent state staged in LDS as a dot operand, every iteration);
- `chained`: `ttg.local_alloc` of a value a dot of this iteration made (attention's P: the
  first dot's result written to LDS to become the second dot's operand);
- `operand`: `ttg.local_alloc` of a value computed in registers from this iteration's loads
  (a dequantized or scaled tile written to LDS for the dot);
- `tile`: `ttg.local_alloc` of a loaded tile as it is (a tile the pipeliner did not stage);
- `pipeline`: the loop's multi-buffered stages (`ttg.local_store` / `local_load` of a buffer
  that lives across iterations, async copies and their waits, wgmma reading a stage, TMA);
- `reduction`: `tt.reduce` / `tt.scan` exchanging partial results;
- `atomic`: a global atomic with a barrier beside it (the lock of a lock-protected update);
- `other`: none of these could be told.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from irscope.isa import model as isa
from irscope.isa.barriers import counts_as_barrier

CONVERT, STATE, CHAINED, OPERAND, TILE, PIPELINE, REDUCTION, ATOMIC, OTHER = (
    "convert", "state", "chained", "operand", "tile", "pipeline", "reduction", "atomic", "other")
# Ops whose lowering writes LDS, and ops whose lowering reads it.
_WRITES = ("ttg.local_alloc", "ttg.local_store", "ttg.convert_layout", "tt.reduce", "tt.scan",
           "ttg.async_copy_global_to_local", "amdg.buffer_load_to_local", "ttng.async_tma_copy_global_to_local",
           "ttng.barrier_expect", "ttng.init_barrier")
_READS = ("ttg.local_load", "ttg.convert_layout", "tt.reduce", "tt.scan", "ttng.warp_group_dot",
          "ttng.wait_barrier", "ttg.async_wait")
_ATOMICS = ("tt.atomic_rmw", "tt.atomic_cas")
_ASYNC_WAITS = ("cp.async.wait", "cp.async.bulk.wait", "wgmma.wait_group", "mbarrier.try_wait", "mbarrier.wait")
_LOADS = ("tt.load", "amdg.buffer_load", "tt.descriptor_load", "tt.experimental_descriptor_load")
_DOTS = ("tt.dot", "tt.dot_scaled", "ttng.warp_group_dot", "ttng.dot_async")
# Ops that move or view a loaded tile without computing on it.
_MOVES = ("ttg.convert_layout", "amdg.in_thread_transpose", "tt.trans", "tt.reshape", "tt.broadcast",
          "tt.expand_dims", "tt.bitcast", "arith.bitcast", "ttg.local_load", "ttg.local_alloc")


@dataclass(frozen=True)
class Cause:
    kind: str
    ops: tuple[int, ...]  # TTGIR op indices: the ops of that kind at the instruction's source position
    python: str | None  # "file.py:123", the op's innermost frame in the kernel's sources
    barriers: tuple[int, ...]  # artifact lines of the barriers it accounts for
    rounds: int = 0  # write phases of a conversion


@dataclass
class _Index:
    """The TTGIR ops of one scf.for (nested regions included), by source frames."""

    module: object
    ops: list = field(default_factory=list)
    by_chain: dict = field(default_factory=lambda: defaultdict(list))
    by_inner: dict = field(default_factory=lambda: defaultdict(list))
    by_outer: dict = field(default_factory=lambda: defaultdict(list))

    def add(self, op) -> None:
        frames = op.location.frames if op.location else ()
        if not frames:
            return
        chain = tuple((_base(f.file), f.line) for f in frames)
        self.by_chain[chain].append(op)
        self.by_inner[chain[0]].append(op)
        self.by_outer[chain[-1]].append(op)

    def find(self, source, names: tuple[str, ...]) -> list:
        if source is None:
            return []
        frames = (*source.inlined, source)
        chain = tuple((_base(f.file), f.line) for f in frames)
        for table, key in ((self.by_chain, chain), (self.by_inner, chain[0]), (self.by_outer, chain[-1])):
            hits = [op for op in table.get(key, ()) if op.canonical_name in names]
            if hits:
                return hits
        return []


def _base(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def loop_ops(module, loop_index: int) -> list:
    """The ops inside an scf.for, at any depth."""
    out = []
    for op in module.ops:
        parent = op.parent
        while parent is not None and parent != loop_index:
            parent = module.ops[parent].parent
        if parent == loop_index:
            out.append(op)
    return out


def attribute(module, loop_index: int | None, fn, members: tuple[int, ...]) -> list[Cause]:
    """The causes of the barriers among `members` (a machine loop's own instructions, in order)."""
    index = _Index(module)
    if module is not None and loop_index is not None:
        for op in loop_ops(module, loop_index):
            index.add(op)
    seq = [fn.instructions[i] for i in members]
    bars = [n for n, ins in enumerate(seq) if counts_as_barrier(ins)]
    if not bars:
        return []
    classifier = _Classifier(module, loop_index) if module is not None and loop_index is not None else None
    picks: list[tuple[str, tuple[int, ...], str | None, int, int]] = []  # kind, ops, python, barrier, segment
    for k, at in enumerate(bars):
        after = _segment(seq, at, bars[(k + 1) % len(bars)])
        before = _segment(seq, bars[k - 1], at)
        picks.append((*_cause(seq, before, after, index, classifier), seq[at].line, k))
    groups: dict[tuple, list] = defaultdict(list)
    for kind, op, python, line, k in picks:
        groups[(kind, op, python)].append((line, k))
    out = []
    for (kind, ops, python), hits in groups.items():
        rounds = _rounds(seq, bars, ops, index) if kind == CONVERT else 0
        out.append(Cause(kind, ops, python, tuple(line for line, _ in hits), rounds))
    return sorted(out, key=lambda c: (-len(c.barriers), c.barriers[0]))


def _segment(seq, start: int, end: int) -> list[int]:
    """Positions strictly between two barrier positions, going round the back edge if need be."""
    if start < end:
        return list(range(start + 1, end))
    return list(range(start + 1, len(seq))) + list(range(0, end))


def _access(ins) -> str | None:
    kind = ins.kind
    if kind in (isa.SHARED_STORE, isa.SHARED_ATOMIC, isa.ASYNC_COPY):
        return "write"
    if kind == isa.SHARED_LOAD or (kind == isa.MATRIX and ins.matrix is not None and ins.matrix.family == "wgmma"):
        return "read"
    if kind == isa.GLOBAL_ATOMIC:
        return "atomic"
    if kind == isa.GLOBAL_LOAD and ins.memory is not None and ins.memory.to_lds:
        return "write"
    return None


def _cause(seq, before, after, index, classifier) -> tuple[str, tuple[int, ...], str | None]:
    first = next((p for p in after if _access(seq[p]) is not None), None)
    if first is None:
        first = next((p for p in reversed(before) if _access(seq[p]) is not None), None)
    if first is None:
        for pos in reversed(before):  # nothing in LDS around it: a stage handed over by a wait
            if seq[pos].kind == isa.WAIT and seq[pos].opcode.startswith(_ASYNC_WAITS):
                return PIPELINE, (), _where(seq[pos])
        return OTHER, (), None
    ins = seq[first]
    if ins.kind == isa.MATRIX and first in after:  # wgmma reading what was just written to LDS
        last = next((p for p in reversed(before) if _access(seq[p]) is not None), None)
        if last is not None and seq[last].kind == isa.SHARED_STORE:
            ins = seq[last]
    access = _access(ins)
    if access == "atomic":
        return ATOMIC, (), _where(ins)
    if ins.kind in (isa.ASYNC_COPY, isa.MATRIX) or (ins.memory is not None and ins.memory.to_lds):
        return PIPELINE, (), _where(ins)  # a copy into a stage, or wgmma reading one
    ops = index.find(ins.source, _WRITES if access == "write" else _READS)
    if not ops and classifier is not None:
        # LLVM gave the traffic the dot's line (torchao's int8 B tile written byte by byte for
        # wgmma): the dot's operands that the loop allocates in LDS
        ops = [a for dot in index.find(ins.source, _DOTS) for a in classifier.operand_allocs(dot)]
    if not ops or classifier is None:
        return OTHER, (), _where(ins)
    kinds = {classifier.owner(op).index: classifier.kind(op) for op in ops}
    kind = min(kinds.values(), key=_PRIORITY.index)
    return kind, tuple(i for i, k in kinds.items() if k == kind), _where(ins)


# When one source position holds several LDS ops, the costlier reading wins.
_PRIORITY = (CONVERT, STATE, CHAINED, OPERAND, TILE, REDUCTION, ATOMIC, PIPELINE, OTHER)


def _where(ins) -> str | None:
    s = ins.source
    if s is None:
        return None
    inner = s.inlined[0] if s.inlined else s
    return f"{_base(inner.file)}:{inner.line}"


def _rounds(seq, bars, ops: tuple[int, ...], index) -> int:
    """Write phases of a conversion: the barrier-separated segments holding its LDS writes."""
    phases = 0
    for k in range(len(bars)):
        seg = _segment(seq, bars[k], bars[(k + 1) % len(bars)])
        for p in seg:
            ins = seq[p]
            if _access(ins) == "write" and any(o.index in ops for o in index.find(ins.source, _WRITES)):
                phases += 1
                break
    return phases


class _Classifier:
    """What an LDS op of the loop is there for."""

    def __init__(self, module, loop_index: int) -> None:
        from irscope.ir.opgraph import value_flow

        self.module = module
        self.loop = loop_index
        self.flow = value_flow(module)
        self.inside = {op.index for op in loop_ops(module, loop_index)}

    def owner(self, op):
        """The op a barrier is charged to: a `local_load` of a buffer allocated in the loop is
        its `local_alloc`'s second half."""
        if op.canonical_name == "ttg.local_load" and op.operands:
            alloc = self._buffer_alloc(op.operands[0])
            if alloc is not None and alloc.index in self.inside and alloc.operands:
                return alloc
        return op

    def kind(self, op) -> str:
        name = op.canonical_name
        if name == "ttg.convert_layout":
            return CONVERT
        if name in ("tt.reduce", "tt.scan"):
            return REDUCTION
        if name in _ATOMICS:
            return ATOMIC
        if name == "ttg.local_alloc" and op.operands:
            return self._staged(op.operands[0])
        if name in ("ttg.local_store", "ttg.local_load"):
            buffer = op.operands[1] if name == "ttg.local_store" and len(op.operands) > 1 else op.operands[0]
            alloc = self._buffer_alloc(buffer)
            if alloc is not None and alloc.index in self.inside and alloc.operands:
                return self._staged(alloc.operands[0])
            if name == "ttg.local_store" and alloc is not None and alloc.index in self.inside:
                return self._staged(op.operands[0])
            return PIPELINE
        if name.startswith(("ttg.async", "amdg.buffer_load_to_local", "ttng.")):
            return PIPELINE
        return OTHER

    def operand_allocs(self, dot) -> list:
        """The `ttg.local_alloc`s of a value, inside the loop, that a dot reads (directly or
        through a `local_load`)."""
        out = []
        for vid in dot.operands[:2]:
            op = self.flow.defining(vid)
            if op is not None and op.canonical_name == "ttg.local_load" and op.operands:
                vid = op.operands[0]
            alloc = self._buffer_alloc(vid)
            if alloc is not None and alloc.index in self.inside and alloc.operands:
                out.append(alloc)
        return out

    def _accumulates(self, dot) -> bool:
        """Whether a dot's accumulator input comes from a value this loop carries (acc += ...),
        following the accumulator inputs of the dots it chains onto and elementwise steps."""
        seen, stack = set(), [dot.operands[2]] if len(dot.operands) > 2 else []
        while stack:
            vid = stack.pop()
            if vid in seen or len(seen) > 200:
                continue
            seen.add(vid)
            value = self.module.values[vid]
            if value.kind == "argument":
                return value.owner == self.loop
            op = self.flow.defining(vid)
            if op is None or op.canonical_name in _LOADS or op.canonical_name.startswith("arith.constant"):
                continue
            if op.canonical_name in _DOTS:
                stack.extend(op.operands[2:3])
            else:
                stack.extend(op.operands)
        return False

    def _stage_read(self, op) -> bool:
        """A `local_load` of a buffer allocated outside the loop: a pipeline stage."""
        alloc = self._buffer_alloc(op.operands[0]) if op.operands else None
        return alloc is not None and alloc.index not in self.inside and not alloc.operands

    def _buffer_alloc(self, vid: int):
        views = ("ttg.memdesc_index", "ttg.memdesc_subview", "ttg.memdesc_trans", "ttg.memdesc_reshape",
                 "ttg.memdesc_reinterpret", "ttg.memdesc_subslice")
        origins = self.flow.origins(vid, views)
        allocs = [self.module.ops[i] for i in origins if self.module.ops[i].canonical_name == "ttg.local_alloc"]
        return allocs[0] if len(allocs) == 1 else None

    def _staged(self, vid: int) -> str:
        """state (loop-carried or a dot's result), operand (computed from loads), or tile (a load as is)."""
        seen: set[tuple[int, bool]] = set()
        stack = [(vid, False, False)]  # value, computed on the way, carried by the loop on the way
        computed = loaded = chained = state = False
        while stack:
            current, through_math, carried = stack.pop()
            if (current, carried) in seen or len(seen) > 4000:
                continue
            seen.add((current, carried))
            value = self.module.values[current]
            if value.kind == "argument":
                back = self.flow.sources(current)
                owner = self.module.ops[value.owner] if value.owner >= 0 else None
                if owner is not None and owner.index == self.loop:
                    # carried by this loop: what the body yields decides (a prefetched load is a load)
                    yielded = back[1:] if len(back) > 1 else back
                    stack.extend((v, through_math, True) for v in yielded)
                else:
                    stack.extend((v, through_math, carried) for v in back)
                continue
            op = self.flow.defining(current)
            if op is None:
                continue
            name = op.canonical_name
            if name in _DOTS and op.index in self.inside:
                # state: an accumulator the loop carries (acc += dot(...)); a dot that starts from
                # zeros each time (attention's QK, rotated into the previous iteration by the
                # pipeliner) makes an intermediate, whichever iteration computed it
                accumulates = self._accumulates(op)
                state = state or (carried and accumulates)
                chained = chained or not (carried and accumulates)
                continue
            if name in _LOADS or (name == "ttg.local_load" and self._stage_read(op)):
                # a pipelined load arrives through a stage buffer: its local_load is the load
                loaded = True
                computed = computed or through_math
                continue
            if name in ("scf.for", "scf.if", "scf.while"):
                stack.extend((v, through_math, carried) for v in self.flow.sources(current))
                continue
            if name.startswith("arith.constant") or not op.operands:
                continue
            math = through_math or name not in _MOVES
            stack.extend((v, math, carried) for v in op.operands)
        if state:
            return STATE
        if chained:
            return CHAINED
        if loaded:
            return OPERAND if computed else TILE
        return OTHER
