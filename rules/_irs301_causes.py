"""IRS301's cause and fix for one LDS trip, from what the tile is (rules/_irs301_tiles.py).

Each explanation names what the tile is, why Triton sends it through LDS, and the kernel's knob
when it has one. `knob` is False when nothing in the kernel's source or options removes the trip
(a recurrence's state, a reduction's result, a loaded vector meeting a tile of another layout):
the rule then reports it at info, with its cost, and says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from irscope.ir.types import TensorType, element_of, encoding_of

from irscope.ir.layouts.graph import GLOBAL_LOADS

from . import _irs301_tiles as tiles

FIX_PACKED = ("keep the work before the dot elementwise on the tile as loaded (for quantized weights: pack them "
              "offline in the order the dot operand reads them, with no tl.join/tl.permute/tl.reshape "
              "interleave in the loop), so that Triton can stage the narrow raw tile and compute after the "
              "LDS read; recheck the TTGIR: the local_alloc should then take the raw integer tile")
FIX_SHUFFLE = ("the layout change comes from the {ops} on the way: make the producer and the consumer agree "
               "(drop the transpose/reshape by loading or packing the data in the order the consumer reads it), "
               "or move it out of the loop")
NO_KNOB = "irscope knows no change to the kernel's source or options that removes it"
# A reduction's result this small, converted once (outside loops), costs a barrier: not reported (issue 21's
# noise: 8-64 B row sums of norms). IRS302 leaves the same size alone before a store.
SMALL_REDUCTION_BYTES = 64
REDUCTION_RESULT = "a reduction's result"


@dataclass(frozen=True)
class Cause:
    what: str  # what the tile is, for the message
    fix: str
    knob: bool  # the kernel can remove the trip (a warning in a loop); else info


def mma_words(layout) -> str:
    return layout.summary() if layout is not None else "?"


def cost(nbytes: int, looped: bool) -> str:
    return f"{nbytes} B {'every iteration' if looped else 'once'}"


def warps_knob(module, head, tail, rows: int | None, k_width: int | None) -> str | None:
    """The option that gives two chained dots one MMA layout on AMD, or None.

    Triton (AccelerateAMDMatmul) spreads the first dot of a chain over all warps along M
    ({num_warps, 1}) and the second over at most BLOCK_M / mDim warps along M; when BLOCK_M holds
    fewer mDim-row MFMA tiles than there are warps, the two layouts differ and the second dot's
    operand crosses warps. Fewer warps, or 16-row MFMAs, make them equal, and Triton then converts
    the result into the operand in registers; that needs 16- or 8-bit operands (kWidth 4 or 8):
    an f32 operand (kWidth 1) goes through LDS even when the layouts match (fla's kkt solve at
    num_warps=1 does)."""
    num_warps = getattr(module, "num_warps", None)
    if (getattr(head, "name", None) != "amd_mfma" or getattr(tail, "name", None) != "amd_mfma" or not rows
            or not num_warps or head.warps_per_cta == tail.warps_per_cta or k_width not in (4, 8)
            or tuple(head.instr_shape[:2]) != tuple(tail.instr_shape[:2])):
        return None
    m_dim = head.instr_shape[0]
    fits = rows // m_dim
    if tuple(head.warps_per_cta) != (num_warps, 1) or tail.warps_per_cta[0] != min(num_warps, fits):
        return None
    options = [f"num_warps={fits} (fewer warps for the rest of the program: weigh it)"] if fits >= 1 else []
    if m_dim == 32 and rows // 16 >= num_warps:
        options.append("matrix_instr_nonkdim=16 (16-row MFMAs: BLOCK_M/16 = "
                       f"{rows // 16} row tiles for {num_warps} warps)")
    if not options:
        return None
    return (f"the two dots' MFMA layouts split the {num_warps} warps differently ({mma_words(head)} vs "
            f"{mma_words(tail)}): Triton gives the second dot of a chain at most BLOCK_M/{m_dim} = {fits} warps "
            f"along M, so its operand crosses warps. With " + " or ".join(options) + " both dots put every warp "
            "along M and Triton converts the tile in registers, with no LDS trip or barrier")


def operand_k_width(module, mma) -> int | None:
    """The kWidth of operand A of the dot whose result has layout `mma` (the chain's second dot)."""
    for op in module.ops:
        if op.canonical_name in tiles.DOTS and op.operands and tiles.result_layout(module, op) == mma:
            return getattr(encoding_of(module.values[op.operands[0]].type), "k_width", None)
    return None


def relation(src, dst_mma, op_idx) -> str:
    """Why an MMA-layout tile is not already the dot operand's layout."""
    if src is None or dst_mma is None:
        return "its layout is not the operand's"
    if tuple(src.warps_per_cta) != tuple(dst_mma.warps_per_cta):
        return f"the two MMA layouts split the warps differently ({mma_words(src)} vs {mma_words(dst_mma)})"
    if tuple(src.instr_shape) != tuple(dst_mma.instr_shape):
        return (f"the dots use different MMA instructions ({mma_words(src)} vs {mma_words(dst_mma)}), whose "
                "layouts do not line up")
    k_dim = 1 if op_idx == 0 else 0  # the result's dimension that is the next dot's K
    if op_idx in (0, 1) and src.warps_per_cta[k_dim] > 1:
        return (f"the result splits its {'columns' if op_idx == 0 else 'rows'}, the next dot's K, over "
                f"{src.warps_per_cta[k_dim]} warps ({mma_words(src)}), while each warp's operand "
                f"{'AB'[op_idx]} spans all of K")
    if op_idx == 1:
        return "an MMA result read as operand B runs K along its rows, which Triton gathers through shared memory"
    return "Triton does not convert this MMA result into the operand layout in registers"


def round_trip_cause(module, kind: str, traced: list, stored_ty, read_layout, dots, nbytes: int,
                     looped: bool) -> Cause:
    op_idx = getattr(read_layout, "op_idx", None)
    operand = "AB"[op_idx] if op_idx in (0, 1) else "?"
    dst_mma = tiles.mma_of(read_layout)
    src = tiles.mma_of(encoding_of(stored_ty))
    shuffles = sorted(set().union(*(t.shuffles for t in traced)))
    spend = cost(nbytes, looped)
    if kind == "chain":
        dot = next(d for t in traced for d in t.dots)
        head = tiles.mma_of(tiles.result_layout(module, dot)) or src
        what = f"a dot's result (the dot at line {dot.line})"
        if "tt.trans" in shuffles:
            return Cause(f"{what}, transposed", f"the dot's result is transposed (tt.trans) to become operand "
                         f"{operand} of another dot: the transpose moves elements across lanes and warps, so Triton "
                         "goes through shared memory; the transpose is the product's own (as in a gradient "
                         f"X^T @ Y): {NO_KNOB} ({spend})", False)
        knob = warps_knob(module, head, dst_mma, stored_ty.shape[0] if op_idx == 0 else None,
                          getattr(read_layout, "k_width", None))
        if knob:
            return Cause(what, f"it is read as operand A of the next dot and {knob} ({spend} now)", True)
        return Cause(what, f"it is read as operand {operand} of another dot and {relation(head, dst_mma, op_idx)}; "
                           f"this follows from the chain of products and their shapes and types: {NO_KNOB} "
                           f"({spend})", False)
    if kind == "state":
        loop = module.ops[traced[0].state[0][0]] if traced[0].state else None
        where = f"the loop at line {loop.line}" if loop is not None else "a loop"
        return Cause(f"loop-carried state of {where}",
                     f"the tile is state that {where} carries in registers ({mma_words(src) if src else 'its layout'}"
                     f") and updates every iteration, and a dot in the same iteration reads it as operand {operand}: "
                     f"it is written to LDS and read back each iteration. That is the recurrence itself; nothing in "
                     f"the kernel's hands changes it ({spend})", False)
    if kind == "dequantized":
        raw = traced[0].raw_bits(module) or 0
        raw_shape = _raw_shape(module, traced)
        raw_bytes = prod(raw_shape) * raw // 8 if raw_shape and raw else 0
        if raw_bytes and raw_bytes >= nbytes:
            same = raw_shape == tuple(stored_ty.shape)
            return Cause(
                f"dequantized in registers from a loaded {raw}-bit tile",
                f"the loaded tile is {raw}-bit per element{' and has the same shape' if same else ''}"
                f"{' (each packed word is loaded again for every value it holds)' if same else ''}: "
                f"{raw_bytes} B, {raw_bytes / nbytes:g}x the {element_of(stored_ty)} tile it becomes, so staging it "
                "raw would move more bytes through LDS, not fewer; load each packed word once (a tile shorter along "
                "K by the values per word) and pack the weights offline in the order the dot operand reads them, "
                "so that Triton can stage the narrow packed tile and unpack after the LDS read "
                f"({spend} now)", True)
        what = f"computed in registers from a loaded {raw}-bit tile"
        if raw and _scalar_scaled(module, traced):  # elementwise: the raw tile has the stored tile's shape
            raw_bytes = prod(stored_ty.shape) * raw // 8
            ops = "/".join(sorted({o.canonical_name for t in traced for o in t.arith}))
            return Cause(what, f"the work is already elementwise: a cast of the loaded {raw}-bit tile times one "
                         f"scalar (a per-tensor scale, {ops}); Triton moves a bare cast past the LDS read, not the "
                         f"multiply, so it stages the {element_of(stored_ty)} result ({nbytes} B) instead of the "
                         f"{raw}-bit tile ({raw_bytes} B). Cast the loaded tile straight to the dot's type and apply "
                         "the scale to the dot's result (tl.dot(a, b.to(a.dtype)) * scale); the local_alloc then takes "
                         f"the raw tile and the cast runs after the read ({spend} now)", True)
        return Cause(what, FIX_PACKED, True)
    if shuffles:
        return Cause("computed in registers", FIX_SHUFFLE.format(ops="/".join(shuffles)), True)
    what = "computed in registers from reductions" if kind == "reduction" else "computed in registers"
    return Cause(what, f"it is read as operand {operand} of a dot and {relation(src, dst_mma, op_idx)}; {NO_KNOB} "
                       f"({spend})", False)


def _scalar_scaled(module, traced) -> bool:
    """Whether the tile is its loads cast and multiplied (or divided) by one scalar: every op that
    computed on the way is an arith.mulf/divf whose other operand is a tt.splat of a scalar (a
    per-tensor dequantization scale), with no shuffle or other producer on the way."""
    ops = [op for t in traced for op in t.arith]
    if not ops or any(t.shuffles or t.other or t.dots or t.reductions or t.state for t in traced):
        return False
    for op in ops:
        if op.canonical_name not in ("arith.mulf", "arith.divf") or len(op.operands) != 2:
            return False
        scalars = [i for i, v in enumerate(op.operands) if _splat_of_scalar(module, v)]
        if not scalars or (op.canonical_name == "arith.divf" and scalars != [1]):
            return False
    return True


def _splat_of_scalar(module, vid: int) -> bool:
    value = module.values[vid]
    if value.kind != "result" or value.owner < 0:
        return False
    owner = module.ops[value.owner]
    return owner.canonical_name == "tt.splat" and bool(owner.operands) and not isinstance(
        module.values[owner.operands[0]].type, TensorType)


def _raw_shape(module, traced) -> tuple:
    """The shape of the biggest tile loaded (the packed weights, not their scales)."""
    loads = [op for t in traced for op in t.loads if op.results]
    biggest = max(loads, key=lambda op: tiles.numel(module, op), default=None)
    return tuple(getattr(module.values[biggest.results[0]].type, "shape", ())) if biggest is not None else ()


ATOMICS = frozenset({"tt.atomic_rmw", "amdg.buffer_atomic_rmw", "tt.atomic_cas"})


def invariant_load(module, traced, op):
    """The load whose tile `op` converts, when it reads the same addresses every iteration of the
    innermost loop around `op` (pointer, mask and fill defined outside that loop): (load, loop), else None."""
    loops = module.enclosing_loops(op)
    if not loops or not traced.loads:
        return None
    loop, memo = loops[0], {}
    if all(_invariant(module, v, loop, memo) for load in traced.loads for v in load.operands):
        return max(traced.loads, key=lambda o: o.line), loop
    return None


def _invariant(module, vid: int, loop, memo: dict, depth: int = 0) -> bool:
    if vid in memo:
        return memo[vid]
    value = module.values[vid]
    owner = module.ops[value.owner] if value.owner >= 0 else None
    inside = owner is not None and (owner.index == loop.index
                                    or any(o.index == loop.index for o in module.enclosing_loops(owner)))
    if not inside:
        memo[vid] = True
    elif value.kind != "result" or depth > 24 or owner.regions or owner.canonical_name in GLOBAL_LOADS \
            or not owner.canonical_name.startswith(("arith.", "tt.splat", "tt.broadcast", "tt.expand_dims",
                                                     "tt.addptr", "tt.make_range")):
        memo[vid] = False  # an iter_arg, the induction variable, a load's data or an op with effects
    else:
        memo[vid] = False  # provisional, for cycles
        memo[vid] = all(_invariant(module, v, loop, memo, depth + 1) for v in owner.operands)
    return memo[vid]


def conversion_cause(module, backend: str, op, consumers, nbytes: int, looped: bool, generated=None) -> Cause:
    src_ty = module.values[op.operands[0]].type
    dst_ty = module.values[op.results[0]].type
    src, dst = encoding_of(src_ty), encoding_of(dst_ty)
    traced = tiles.trace(module, op.operands[0])
    kind = tiles.kind_of([traced])
    spend = cost(nbytes, looped)
    src_mma, dst_mma = tiles.mma_of(src), tiles.mma_of(dst)
    used = {name for _, name in consumers}
    if src_mma is not None and getattr(src, "name", None) in tiles.MMA_NAMES and used & ATOMICS:
        if backend == "cuda":
            return Cause("a dot's accumulator", "this converts the MMA accumulator for tl.atomic_add and runs once, "
                         "after the loop: usually small next to the loop; weigh it only if its shared memory limits "
                         "occupancy", False)
        return Cause("a dot's accumulator", "this converts the MMA accumulator for tl.atomic_add and runs once, after "
                     "the loop; the ROCm guide notes that storing from the MFMA layout (OPTIMIZE_EPILOGUE=1) works "
                     "with tt.store but not tt.atomic_add, so a split-K epilogue keeps it: weigh it only if its LDS "
                     "limits occupancy", False)
    if src_mma is not None and dst_mma is not None and src_mma != dst_mma:
        rows = src_ty.shape[0] if src_ty.shape else None
        k_width = operand_k_width(module, dst_mma)
        knob = warps_knob(module, src_mma, dst_mma, rows, k_width)
        what = "a value between two dots' MMA layouts"
        if knob:
            return Cause(what, f"{knob} ({spend} now)", True)
        return Cause(what, f"{relation(src_mma, dst_mma, None)}: the tile moves from one dot's layout to the "
                           f"other's; {NO_KNOB} ({spend})", False)
    producer = module.values[op.operands[0]]
    beside = {name for _, name in consumers} | ({module.ops[producer.owner].canonical_name}
                                               if producer.kind == "result" else set())
    shuffles = sorted(beside & tiles.SHUFFLES)
    if shuffles:  # the transpose/reshape right before or after it is what wants the layout
        return Cause("moved by a transpose or reshape", FIX_SHUFFLE.format(ops="/".join(shuffles)), True)
    if kind == "state":
        return Cause("loop-carried state", "the value is state a loop carries in registers and another op of the "
                     f"iteration needs in another layout; that is the recurrence itself, nothing in the kernel's "
                     f"hands changes it ({spend})", False)
    if kind == "reduction" or (traced.reductions and getattr(src, "name", None) == "slice"):
        return Cause(REDUCTION_RESULT, f"a reduction's result takes a slice of the reduced tile's layout, "
                     f"and what consumes it wants {_layout_kind(dst)}; {NO_KNOB}; {spend}, small", False)
    hoistable = invariant_load(module, traced, op) if kind == "loaded" and looped else None
    if hoistable:
        load, loop = hoistable
        same = (f"the load at line {load.line} reads the same addresses every iteration of the loop at line "
                f"{loop.line} (its address is computed outside the loop), so this conversion moves the same values "
                "through shared memory each time")
        if generated is not None:
            return Cause("loaded from global memory, the same every iteration",
                         f"{same}; inductor emits the load inside its loop and Triton keeps loads where they are "
                         f"written. The kernel is inductor's ({generated.name}): nothing is edited by hand ({spend})",
                         False)
        return Cause("loaded from global memory, the same every iteration",
                     f"{same}: load it once before the loop (Triton then converts it once, outside the loop) "
                     f"({spend} now)", True)
    if kind == "loaded":
        return Cause("loaded from global memory", f"Triton gives a load its own coalesced layout and converts "
                     f"the loaded values where they meet a tile of another layout ({_layout_kind(dst)}); {NO_KNOB} "
                     f"({spend})", False)
    if kind == "chain":
        return Cause("a dot's result", f"the dot's result ({_layout_kind(src)}) is consumed in {_layout_kind(dst)}; "
                     f"{NO_KNOB} ({spend})", False)
    what = "computed from loaded data" if kind == "dequantized" else "computed in registers"
    return Cause(what, f"Triton picked different layouts for the producer ({_layout_kind(src)}) and the consumer "
                       f"({_layout_kind(dst)}); {NO_KNOB} ({spend})", False)


def _layout_kind(layout) -> str:
    name = getattr(layout, "name", None)
    if name == "slice":
        return f"a slice of {_layout_kind(layout.parent)}"
    if name == "dot_op":
        return f"a dot operand layout ({layout.summary()})"
    if name in tiles.MMA_NAMES:
        return f"the MMA layout {layout.summary()}"
    return f"the layout {layout.summary()}" if layout is not None else "another layout"
