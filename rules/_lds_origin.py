"""What a tile that IRS103 sees in LDS is, followed back from the value written to LDS.

The fix for a narrow LDS access follows from what the tile is: loaded from memory (reorder it
in memory), a load through broadcast pointers (load the vector), a dot's result or loop-carried
state (the matrix instruction's layout, which nothing in memory changes), or computed in
registers (produce it along the dimension LDS keeps contiguous). `held_elements` says how many
elements a thread holds along each dimension of a layout, and `convert_transpose` whether a
convert_layout through LDS transposes a tile (the kernel's tensors run along different dimensions).
"""

from __future__ import annotations

from dataclasses import dataclass

from irscope.ir.layouts.graph import layout_key
from irscope.rules._lds_tiles import LdsOp


@dataclass(frozen=True)
class Origin:
    kind: str  # "memory", "broadcast", "state" (loop-carried), "dot" (a dot's result), "computed"
    text: str  # what the tile is, in words
    detail: tuple = ()  # for "broadcast": the shape broadcast from


_LOADS = ("tt.load", "amdg.buffer_load", "tt.descriptor_load")
_DOT_OPS = ("tt.dot", "ttng.warp_group_dot", "tt.dot_scaled")
# Ops that carry values over unchanged in what they are (a layout, a width, a type).
_COPIES = ("ttg.convert_layout", "amdg.in_thread_transpose", "arith.trunc", "arith.ext", "tt.fp_to_fp", "tt.bitcast",
           "tt.trans", "tt.reshape", "ttg.local_load")
_WALK = ("arith.", "math.", *_COPIES)


def tile_origin(module, tile: LdsOp) -> Origin:
    """What the tile is, followed back from the value written to LDS (a read: what its writers stored)
    through copies (converts, casts, loop plumbing): loaded from memory, a broadcast load, a dot's
    result, loop-carried state (an iter_arg), or computed in registers (and from what)."""
    if tile.trip is None and not tile.source:  # read from a buffer an async copy filled
        return Origin("memory", "loaded from memory")
    writers = tile.trip.writers if tile.trip is not None else (tile.op,)
    stored = [module.ops[i].operands[0] for i in writers if module.ops[i].operands]
    broadcast, found = _walk_back(module, stored)
    return broadcast if broadcast is not None else _origin_of(found)


def _walk_back(module, stored) -> tuple[Origin | None, set[tuple[str, bool]]]:
    """The origins the stored values come from, each with whether it was reached through copies only; or,
    found on the way, a broadcast load reached through copies only (the walk stops there)."""
    from irscope.ir.opgraph import value_flow

    flow = value_flow(module)
    frontier = [(vid, True) for vid in stored]  # (value, reached through copies only)
    seen, found = set(), set()
    while frontier:
        vid, pure = frontier.pop()
        if (vid, pure) in seen or len(seen) > 96:
            continue
        seen.add((vid, pure))
        copies = flow.sources(vid)
        if copies:  # an iter_arg, or a loop's or if's result: what flows into it
            if pure and module.values[vid].kind == "argument":
                found.add(("state", True))
            frontier.extend((c, pure) for c in copies)
            continue
        definer = flow.defining(vid)
        if definer is None:
            continue
        name = definer.canonical_name
        if name in _LOADS:
            shape = broadcast_from(module, definer)
            if shape and pure:
                return Origin("broadcast", "a broadcast load", shape), found
            found.add(("memory", pure))
        elif name in _DOT_OPS:
            found.add(("dot", pure))
        elif name.startswith(_WALK) or name in _WALK:
            copy = name.startswith(_COPIES) or name in _COPIES
            found.add(("computed", pure and not copy))
            frontier.extend((v, pure and copy) for v in definer.operands if hasattr(module.values[v].type, "shape"))
        else:
            found.add(("computed", pure))
    return None, found


def _origin_of(found: set[tuple[str, bool]]) -> Origin:
    """The origin reached through copies only, if one kind is; else what the registers computed it from."""
    pure = {kind for kind, p in found if p}
    if "state" in pure:
        return Origin("state", "loop-carried state (an iter_arg: e.g. a dot's accumulator, staged as the next "
                                "dot's operand)")
    if "dot" in pure:
        return Origin("dot", "the result of a dot, staged as the next dot's operand")
    if pure <= {"memory"} and "memory" in pure:
        return Origin("memory", "loaded from memory")
    inputs = {kind for kind, _ in found}
    if "dot" in inputs:
        return Origin("computed", "computed in registers from a dot's result")
    if "memory" in inputs:
        return Origin("computed", "computed in registers from loaded data (e.g. a dequantized operand)")
    return Origin("computed", "computed in registers")


def broadcast_from(module, load) -> tuple:
    """The shape a load's addresses vary over, where they stay the same along a dimension of the tile
    (stride 0: a 128x1 row scale loaded as 128x128); () when they vary along every dimension."""
    from irscope.ir.pointer_strides import PointerStrides, address_strides

    strides = address_strides(PointerStrides(module), load)
    shape = tuple(getattr(module.values[load.results[0]].type, "shape", ())) if load.results else ()
    if not strides or len(strides) != len(shape):
        return ()
    if not any(s == 0 and d != 1 for s, d in zip(strides, shape)):
        return ()
    return tuple(1 if s == 0 else d for s, d in zip(strides, shape))


def _register_bases(module, layout_name: str, shape: tuple) -> list | None:
    """The register bases of a register layout over `shape` (its linear-layout form), or None."""
    from irscope.ir.layouts.to_linear import layout_to_linear

    layout = module.aliases.get(layout_name)
    if layout is None:
        return None
    try:
        linear = layout_to_linear(layout, tuple(shape))
    except (ValueError, NotImplementedError, TypeError):
        return None
    if linear is None or "register" not in linear.in_names:
        return None
    return list(linear.basis("register"))


def held_elements(module, layout_name: str, shape: tuple) -> dict[int, int] | None:
    """Elements a thread holds along each dimension of a register layout (from its register bases:
    each one that steps along a single dimension doubles that dimension's count)."""
    bases = _register_bases(module, layout_name, shape)
    if bases is None:
        return None
    held = dict.fromkeys(range(len(shape)), 1)
    for basis in bases:
        dims = [d for d, step in enumerate(basis) if step]
        if len(dims) == 1:
            held[dims[0]] *= 2
    return held


def contiguous_runs(module, layout_name: str, shape: tuple) -> dict[int, int] | None:
    """The run of consecutive elements a thread holds along each dimension of a register layout
    (sizePerThread for a blocked layout): register bases stepping 1, 2, 4, ... along that dimension
    alone; the repeats of a layout smaller than the tile are further apart and do not count."""
    bases = _register_bases(module, layout_name, shape)
    if bases is None:
        return None
    runs = dict.fromkeys(range(len(shape)), 1)
    for basis in bases:
        dims = [d for d, step in enumerate(basis) if step]
        if len(dims) == 1 and basis[dims[0]] == runs[dims[0]]:
            runs[dims[0]] *= 2
    return runs


@dataclass(frozen=True)
class Transpose:
    """A convert_layout between two register layouts that keep a thread's elements along different
    dimensions (a 2-D tile read along one and written along the other): LDS keeps one order, so the
    side that crosses it moves at most `bound` elements an access, whatever Triton's swizzle."""

    source_dim: int  # the dimension the source layout keeps a thread's run along
    target_dim: int
    source_run: int  # elements of that run
    target_run: int
    bound: int
    users: dict  # layout -> [(op, ttgir line, pointer argument)]: the memory ops that set each layout


_MEMORY = {"tt.load": "load", "amdg.buffer_load": "load", "tt.store": "store", "amdg.buffer_store": "store"}


def convert_transpose(module, conv) -> Transpose | None:
    """The transpose a convert_layout through LDS is, if it is one (see Transpose)."""
    shape = tuple(conv.shape)
    if len([d for d in shape if d != 1]) != 2:
        return None
    held_s = contiguous_runs(module, conv.source, shape)
    held_t = contiguous_runs(module, conv.target, shape)
    if not held_s or not held_t:
        return None
    ds, dt = max(held_s, key=held_s.get), max(held_t, key=held_t.get)
    if ds == dt or held_s[ds] < 2 or held_t[dt] < 2:
        return None
    users: dict[str, list] = {conv.source: [], conv.target: []}
    for op in module.ops:
        kind = _MEMORY.get(op.canonical_name)
        value = (op.results[:1] if kind == "load" else op.operands[1:2]) if kind else ()
        for vid in value:
            ty = module.values[vid].type
            layout = layout_key(ty)
            if layout in users and tuple(getattr(ty, "shape", ())) == shape:
                users[layout].append((kind, op.line, _pointer_argument(module, op.operands[0])))
    return Transpose(ds, dt, held_s[ds], held_t[dt], max(held_t[ds], held_s[dt]), users)


def _pointer_argument(module, vid: int) -> str | None:
    """The kernel argument a tensor of pointers is built from (through addptr, splat, broadcast)."""
    for _ in range(16):
        value = module.values[vid]
        if value.kind == "argument":
            return value.name.lstrip("%")
        op = module.defining_op(vid)
        if op is None or not op.operands or op.canonical_name not in ("tt.addptr", "tt.splat", "tt.broadcast",
                                                                       "tt.expand_dims", "ttg.convert_layout"):
            return None
        vid = op.operands[0]
    return None
