"""IRS202's words: what the barriers of a loop are for (rules/_barrier_causes.py) and what helps.

The fix follows from the dominant cause and from what the loop is:
- a conversion's rounds grow with the tile, so no tile size helps: match the layouts;
- register state staged as a dot operand is the recurrence's own: no knob of the kernel removes it;
- a dot's result passed to the next dot through LDS: one MMA layout for both dots keeps it in registers;
- a tile allocated inside the iteration at num_stages=1: num_stages=2, when the LDS holds it;
- per-step staging in a reduction loop over a tile (a K loop: the accumulator is carried through
  the dot): a larger tile along the loop halves it per element, when the LDS holds it;
- a lock: a barrier pair per acquisition.
Only the pipeline's own barriers (staged tiles, async copies, wgmma stages) are the norm.
"""

from __future__ import annotations

from collections import Counter

from irscope.ir.types import MemDescType, TensorType
from irscope.rules._barrier_causes import (
    ATOMIC, CHAINED, CONVERT, OPERAND, OTHER, PIPELINE, REDUCTION, STATE, TILE, Cause, loop_ops)

_WHAT = {
    CONVERT: "a layout conversion through LDS",
    STATE: "loop-carried state staged in LDS as a dot operand",
    CHAINED: "a dot's result passed to the next dot through LDS",
    OPERAND: "an operand computed in registers and written to LDS for the dot",
    TILE: "a loaded tile allocated in LDS inside the iteration",
    PIPELINE: "the pipeline's stages",
    REDUCTION: "a reduction's exchange",
    ATOMIC: "global atomics (a lock)",
    OTHER: "LDS traffic not told apart",
}


def breakdown(module, causes: list[Cause]) -> str:
    """`8 for the convert_layout at .ttgir line 114 (wy_fast.py:90), in 8 rounds of 1,024 B; 1 for ...`"""
    parts = []
    merged: dict[str, list[Cause]] = {}
    for c in causes:
        merged.setdefault(c.kind if c.kind in (PIPELINE, OTHER, ATOMIC) else f"{c.kind}:{c.ops}", []).append(c)
    for group in sorted(merged.values(), key=lambda g: -sum(len(c.barriers) for c in g)):
        n = sum(len(c.barriers) for c in group)
        parts.append(f"{n} for {_describe(module, group)}")
    return "; ".join(parts)


def _describe(module, group: list[Cause]) -> str:
    c = group[0]
    where = _where(module, c)
    if c.kind == CONVERT:
        text = f"the convert_layout {where}"
        size = _bytes(module, c.ops)
        if c.rounds > 1 and size:
            text += f", in {c.rounds} rounds of about {size // c.rounds:,} B of its {size:,} B tile"
        return text
    if c.kind in (PIPELINE, OTHER, ATOMIC):
        lines = sorted({p for g in group for p in ([g.python] if g.python else [])})
        return _WHAT[c.kind] + (f" ({', '.join(lines)})" if lines else "")
    return f"{_WHAT[c.kind]} ({_op_names(module, c.ops)} {where})"


def _where(module, c: Cause) -> str:
    lines = sorted({module.ops[i].line for i in c.ops}) if module is not None else []
    at = f"at .ttgir line{'s' if len(lines) > 1 else ''} {', '.join(map(str, lines))}" if lines else ""
    return f"{at} ({c.python})" if c.python and at else (at or (f"({c.python})" if c.python else ""))


def _op_names(module, ops) -> str:
    names = sorted({module.ops[i].canonical_name for i in ops}) if module is not None else []
    return "/".join(names) or "ops"


def _bytes(module, ops) -> int:
    """Bytes of the tensor a convert_layout / local_alloc moves (its result or operand type)."""
    total = 0
    for i in ops:
        op = module.ops[i]
        ty = module.values[op.results[0]].type if op.results else None
        if isinstance(ty, MemDescType) and op.operands:
            ty = module.values[op.operands[0]].type
        total += _type_bytes(ty)
    return total


def _type_bytes(ty) -> int:
    if not isinstance(ty, (TensorType, MemDescType)) or not ty.shape or None in ty.shape:
        return 0
    bits = getattr(ty.element, "bits", None)
    if not bits:
        return 0
    n = 1
    for d in ty.shape:
        n *= d
    return n * bits // 8


def excess(causes: list[Cause]) -> int:
    return sum(len(c.barriers) for c in causes if c.kind != PIPELINE)


_DOT_NAMES = ("tt.dot", "tt.dot_scaled", "ttng.warp_group_dot")
_ORDER = (CONVERT, STATE, CHAINED, TILE, OPERAND, ATOMIC, REDUCTION, OTHER)


class LoopShape:
    """What the loop does with its dots: a reduction over a tile (K loop), or not."""

    def __init__(self, module, loop_index: int | None) -> None:
        from irscope.ir.mlir import iter_args

        self.module = module
        self.reduction = False
        self.attention = False  # a dot whose A operand another dot of the loop computed: P @ V after Q @ K^T
        self.buffers = 0  # bytes of LDS buffers the loop reads: stages allocated outside, tiles inside
        self.staged = 0  # of which multi-buffered stages allocated outside the loop
        self.tiles_inside = 0  # of which loaded tiles allocated inside the iteration
        # the multi-buffered allocations: (bytes of one buffer, buffers); not every one has
        # num_stages buffers (gemlite's packed B gets 2 at num_stages=3, its A tile 3)
        self.stage_buffers: list[tuple[int, int]] = []
        if module is None or loop_index is None:
            return
        loop = module.ops[loop_index]
        carried = set(iter_args(loop))
        inside = loop_ops(module, loop_index)
        users: Counter = Counter()
        for op in inside:
            for v in op.operands:
                users[v] += 1
        dots = [op for op in inside if op.canonical_name in ("tt.dot", "tt.dot_scaled", "ttng.warp_group_dot")]
        for dot in dots:
            acc = dot.operands[2] if len(dot.operands) > 2 else None
            # acc += dot(a, b): the carried accumulator goes only into this dot, directly or through
            # elementwise work on it (attention's online softmax rescales it: acc * alpha[:, None])
            source = _carried_source(module, acc, carried) if acc is not None else None
            if source is not None and users[source] == 1:
                self.reduction = True
        names = {op.canonical_name for op in dots}
        self.attention = any(dot.operands and module.producer_named(dot.operands[0], names, 16) is not None
                             for dot in dots)
        seen = set()
        indexed = {op.operands[0] for op in inside if op.canonical_name == "ttg.memdesc_index" and op.operands}
        for op in inside:
            for v in op.operands:
                value = module.values[v]
                if value.kind != "result" or v in seen:
                    continue
                owner = module.ops[value.owner]
                if owner.canonical_name == "ttg.local_alloc" and owner.index not in {o.index for o in inside}:
                    seen.add(v)
                    size = _type_bytes(value.type)
                    self.buffers += size
                    self.staged += size
                    shape = getattr(value.type, "shape", ())
                    # a stage ring is indexed by memdesc_index: its leading dimension counts the buffers
                    ring = v in indexed and len(shape) > 2 and shape[0]
                    count = shape[0] if ring else 1
                    self.stage_buffers.append((size // count, count))
            if op.canonical_name == "ttg.local_alloc" and op.operands:
                size = _type_bytes(module.values[op.operands[0]].type)
                self.buffers += size


ELEMENTWISE = ("arith.", "math.")


def _carried_source(module, value: int, carried: set, depth: int = 4) -> int | None:
    """The loop-carried value `value` is, or is computed from by at most `depth` elementwise ops
    (arith/math, layout conversions) on tensors of its shape; None if it is not."""
    if value in carried:
        return value
    op = module.defining_op(value)
    if depth == 0 or op is None or not (op.canonical_name.startswith(ELEMENTWISE)
                                        or op.canonical_name == "ttg.convert_layout"):
        return None
    shape = getattr(module.values[value].type, "shape", None)
    for operand in op.operands:
        if getattr(module.values[operand].type, "shape", None) == shape:
            found = _carried_source(module, operand, carried, depth - 1)
            if found is not None:
                return found
    return None


def fix_text(ctx, module, loop_index, causes: list[Cause], count: int, unpipelined: bool) -> str:
    from irscope.occupancy.amd import AMD_ARCHES
    from irscope.occupancy.nvidia import nvidia_arch

    opts = ctx.kernel.options
    shared = opts.shared.value if opts.shared is not None else 0
    stages = opts.num_stages.value if opts.num_stages is not None else None
    arch = ctx.kernel.target.arch if ctx.kernel.target else ""
    amd, nv = AMD_ARCHES.get(arch), nvidia_arch(arch)
    most = amd.lds_pool if amd else (nv.shared_optin if nv else None)
    shape = LoopShape(module, loop_index)
    out = []
    if unpipelined and stages == 1:
        # what this config holds at its peak, plus a second buffer for each tile loaded in the loop;
        # on NVIDIA the pipeliner also gives an async-copy buffer to each load that feeds the dot
        # through register math (gemlite's packed int32 B: 128 KB at 128x256, dequantized after)
        need = shared + sum(_bytes(module, c.ops) for c in causes if c.kind == TILE)
        if nv is not None:
            need += _computed_operand_loads(module, loop_index)
        if most and need > most:
            out.append(f"num_stages=1 leaves the loop unpipelined, but num_stages=2 would need at least {need:,} B of "
                       f"LDS for these tiles (one more buffer for each loaded tile), over the {most:,} B a workgroup "
                       "may have: only a smaller tile with num_stages=2 fits")
        else:
            out.append("num_stages=1 allocates the loaded tiles inside the iteration; num_stages=2 stages them "
                       f"through multi-buffered LDS (2 barriers a step when pipelined; at least {need:,} B of LDS"
                       + (f" of the {most:,})" if most else ")"))
    kinds = _tied(causes)
    for main in kinds:
        out.append(_clause(module, causes, main, count, shape, unpipelined, stages, shared, most))
    if not kinds and not unpipelined:
        dots = sum(1 for op in loop_ops(module, loop_index) if op.canonical_name in _DOT_NAMES) if module else 0
        out.append(f"all {count} barriers order the pipeline's stages (async copies, TMA, mbarriers, wgmma), "
                   f"{max(count - 1 - max(dots, 1), 0)} more than one stage hand-over and one per dot; the schedule is "
                   "the compiler's: compare num_stages and Triton versions (the sm_90 TMA GEMM fixture's extra "
                   "bar.sync guard its single-thread mbarrier and copy issues)")
    return "; ".join(x for x in out if x)


def _tied(causes: list[Cause]) -> list[str]:
    """The non-pipeline causes with the most barriers (all of them on a tie), costliest first."""
    counts = Counter()
    for c in causes:
        if c.kind != PIPELINE:
            counts[c.kind] += len(c.barriers)
    if not counts:
        return []
    most = max(counts.values())
    return sorted((k for k, n in counts.items() if n == most), key=_ORDER.index)


def _clause(module, causes, main, count, shape, unpipelined, stages, shared, most) -> str:  # noqa: C901
    out = []
    n_main = sum(len(c.barriers) for c in causes if c.kind == main)
    top = max((c for c in causes if c.kind == main), key=lambda c: len(c.barriers), default=None)
    if top is not None:
        where = _where(module, top)
        share = f"{n_main} of the {count} barriers"
        if main == CONVERT:
            rounds = max(c.rounds for c in causes if c.kind == CONVERT)
            # rounds are not predictable from this build: the layouts are picked per shape (fla's kkt_solve,
            # 16x32 -> 16x64: two rounds at num_warps=2, still one at num_warps=4)
            if shape.reduction and rounds <= 1:
                out.append(f"{share} are layout conversions done in one round each (the largest: the convert_layout "
                           f"{where}): in this reduction loop they are a fixed cost per step, like staging, so "
                           + _larger_tile(shape, shared, stages, most).replace("this is a reduction loop: ", "")
                           + " only while each conversion stays in one round, and Triton picks new layouts for "
                           "the longer tile that may convert it in two rounds, twice the barriers: compare that "
                           "build's count; matching the layouts removes them outright")
            else:
                out.append(f"{share} are layout conversions (the largest: the convert_layout {where}"
                           + (f", in {rounds} rounds" if rounds > 1 else "") + "): they come with the conversion, "
                           "not with the loop's tiling, and a larger tile converts more per iteration, so no tile size "
                           "removes them; make the producer's and the consumer's layouts match (see IRS301/IRS302), or "
                           "compare configs (num_warps, tile shape) where Triton does the conversion in fewer rounds")
        elif main == STATE:
            out.append(f"{share} stage loop-carried register state ({where}) in LDS as a dot operand each step: "
                       "the loop is a recurrence, its step is the algorithm's chunk, and neither a tile size nor "
                       "num_stages removes them; only a dot that reads the state in the layout it already has "
                       "(an MMA result as the A operand of a dot with the same MMA layout) would")
        elif main == CHAINED:
            layouts = _chain_layouts(module, top)
            if layouts and layouts[0] != layouts[1]:
                out.append(f"{share} pass one dot's result to the next dot through LDS ({where}): the dots use "
                           f"different MMA layouts ({layouts[0]} and {layouts[1]}); with one layout for both "
                           "(the same instrShape and warpsPerCTA) Triton converts the result in registers")
            else:
                out.append(f"{share} pass one dot's result to the next dot through LDS ({where}): that is the "
                           "operand layout change the second dot needs; as the A operand of a dot with the same MMA "
                           "layout the result stays in registers")
        elif main == ATOMIC:
            out.append(f"{share} surround global atomics ({top.python or 'a lock'}): a lock costs barriers "
                       "per acquisition; fewer acquisitions (more work per lock) or a lock-free update "
                       "(tl.atomic_add) remove them")
        elif main in (OPERAND, TILE) and not (unpipelined and stages == 1):
            what = ("an operand computed in registers" if main == OPERAND else "a loaded tile")
            out.append(f"{share} write {what} to LDS for the dot every step ({where})")
            if shape.reduction:
                out.append(_larger_tile(shape, shared, stages, most))
            else:
                out.append("the loop walks output tiles (each iteration a whole dot), so a larger tile along it "
                           "does not shorten a reduction; only fewer, larger output tiles per program would")
        elif main == REDUCTION:
            out.append(f"{share} come from {_WHAT[main]} ({where or top.python or 'the loop body'})"
                       + _across_warps(module, causes))
        elif main == OTHER:
            out.append(f"{share} come from {_WHAT[main]} ({where or top.python or 'the loop body'})")
    return "; ".join(x for x in out if x)


def _across_warps(module, causes: list[Cause]) -> str:
    """Why a reduction exchanges through LDS, when its tile's layout says: the reduced axis is
    spread over several warps (attention's row max/sum on a 16-row MMA tile whose 4 warps split
    the columns: warpsPerCTA [1, 4]). Each row then crosses warps every step; a tile with rows for
    every warp lets Triton put the warps along the rows and keep each row's reduction in one warp."""
    from irscope.ir.types import encoding_of

    for c in causes:
        if c.kind != REDUCTION:
            continue
        for i in c.ops:
            op = module.ops[i]
            axis = op.attributes.get("axis") if hasattr(op, "attributes") else None
            if not op.operands or not isinstance(axis, int):
                continue
            ty = module.values[op.operands[0]].type
            layout, shape = encoding_of(ty), getattr(ty, "shape", ())
            warps = getattr(layout, "warps_per_cta", None)
            instr = getattr(layout, "instr_shape", None)
            if not warps or not instr or len(warps) != 2 or axis != 1 or warps[1] <= 1 or warps[0] != 1:
                continue
            rows = instr[0] * warps[1]
            return (f": the tt.reduce at .ttgir line {op.line} reduces axis 1 of a {shape[0]}-row tile whose "
                    f"{warps[1]} warps split that axis (warpsPerCTA [{warps[0]}, {warps[1]}]), so every row "
                    f"crosses warps each step; a tile of {rows} rows ({instr[0]} per warp) or fewer warps lets "
                    "Triton give each warp its own rows and keep the reduction in one warp")
    return ""


def _larger_tile(shape: LoopShape, shared: int, stages: int | None, most: int | None) -> str:
    """A larger tile along the K loop, when the LDS holds it: the same stages, fewer, or none."""
    along = "(the KV tile, the loop's step)" if shape.attention else "(BLOCK_K)"
    if not most or not shared:
        return f"a larger tile along the loop {along} halves them per element, LDS permitting"
    grow = shape.buffers  # doubling BLOCK_K doubles every buffer the loop reads
    need = shared + grow
    if need <= most:
        return (f"this is a reduction loop: a tile twice as long along it {along} halves them per element and needs "
                f"about {need:,} B of the {most:,} B of LDS")
    if stages and stages > 2 and shape.staged:
        for fewer in range(stages - 1, 1, -1):
            # each ring loses as many buffers as stages go, down to one; each buffer is twice as large
            trimmed = need - sum(2 * one * (count - max(count - (stages - fewer), 1))
                                 for one, count in shape.stage_buffers)
            if trimmed <= most:
                return (f"this is a reduction loop: a tile twice as long along it {along} with num_stages={fewer} "
                        f"halves them per element and needs about {trimmed:,} B of the {most:,} B of LDS")
    return (f"a tile twice as long along the loop would need about {need:,} B of LDS, over the {most:,} B, even with "
            "fewer stages: no tile or stage change of this config removes them")


def _computed_operand_loads(module, loop_index) -> int:
    """Bytes of the tile loads in the loop that reach an LDS operand (`ttg.local_alloc`) through
    register math, not as they are (those are `tile` causes, counted apart)."""
    from irscope.ir.opgraph import value_flow

    if module is None or loop_index is None:
        return 0
    flow = value_flow(module)
    inside = {op.index for op in loop_ops(module, loop_index)}
    found: dict[int, int] = {}
    for alloc in loop_ops(module, loop_index):
        if alloc.canonical_name != "ttg.local_alloc" or not alloc.operands:
            continue
        seen: set[int] = set()
        stack = [(alloc.operands[0], False)]
        while stack:
            vid, math = stack.pop()
            op = flow.defining(vid)
            if vid in seen or op is None or op.index not in inside:
                continue
            seen.add(vid)
            if op.canonical_name in ("tt.load", "amdg.buffer_load"):
                ty = module.values[vid].type
                if math and all(d and d > 1 for d in getattr(ty, "shape", (1,))):
                    found[op.index] = _type_bytes(ty)
                continue
            step = math or op.canonical_name not in _MOVE_OPS
            stack.extend((v, step) for v in op.operands)
    return sum(found.values())


_MOVE_OPS = ("ttg.convert_layout", "tt.trans", "tt.reshape", "tt.broadcast", "tt.expand_dims", "ttg.local_load")


def _chain_layouts(module, cause: Cause) -> tuple[str, str] | None:
    """The MMA layout a chained value comes from and the one its reader's dot uses."""
    from irscope.ir.layouts.graph import layout_key

    for i in cause.ops:
        op = module.ops[i]
        if op.canonical_name != "ttg.local_alloc" or not op.operands:
            continue
        src = layout_key(module.values[op.operands[0]].type)
        for user in module.ops:
            if user.canonical_name == "ttg.local_load" and op.results and op.results[0] in user.operands:
                dst = layout_key(module.values[user.results[0]].type) if user.results else None
                parent = _parent(dst)
                if src and parent:
                    return src, parent
    return None


def _parent(layout: str | None) -> str | None:
    if not layout or "parent = " not in layout:
        return None
    return layout.split("parent = ", 1)[1].split(",", 1)[0].split("}", 1)[0].strip()
