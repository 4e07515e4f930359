"""What a tile that IRS103 sees in LDS is, followed back from the value written to LDS.

The fix for a narrow LDS access follows from what the tile is: loaded from memory (reorder it
in memory), a load through broadcast pointers (load the vector), a dot's result or loop-carried
state (the matrix instruction's layout, which nothing in memory changes), or computed in
registers (produce it along the dimension LDS keeps contiguous). `held_elements` says how many
elements a thread holds along each dimension of the layout written.
"""

from __future__ import annotations

from dataclasses import dataclass

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
    from irscope.opgraph import value_flow

    if tile.trip is None and not tile.source:  # read from a buffer an async copy filled
        return Origin("memory", "loaded from memory")
    writers = tile.trip.writers if tile.trip is not None else (tile.op,)
    stored = [module.ops[i].operands[0] for i in writers if module.ops[i].operands]
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
                return Origin("broadcast", "a broadcast load", shape)
            found.add(("memory", pure))
        elif name in _DOT_OPS:
            found.add(("dot", pure))
        elif name.startswith(_WALK) or name in _WALK:
            copy = name.startswith(_COPIES) or name in _COPIES
            found.add(("computed", pure and not copy))
            frontier.extend((v, pure and copy) for v in definer.operands if hasattr(module.values[v].type, "shape"))
        else:
            found.add(("computed", pure))
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
    from irscope.pointer_strides import PointerStrides, address_strides

    strides = address_strides(PointerStrides(module), load)
    shape = tuple(getattr(module.values[load.results[0]].type, "shape", ())) if load.results else ()
    if not strides or len(strides) != len(shape):
        return ()
    if not any(s == 0 and d != 1 for s, d in zip(strides, shape)):
        return ()
    return tuple(1 if s == 0 else d for s, d in zip(strides, shape))


def held_elements(module, tile: LdsOp) -> dict[int, int] | None:
    """Elements a thread holds along each dimension of the written register layout (from its register
    bases: each one that steps along a single dimension doubles that dimension's count)."""
    from irscope.layout_to_linear import layout_to_linear

    layout = module.aliases.get(tile.source)
    if layout is None:
        return None
    try:
        linear = layout_to_linear(layout, tuple(tile.shape))
    except (ValueError, NotImplementedError, TypeError):
        return None
    if linear is None or "register" not in linear.in_names:
        return None
    held = dict.fromkeys(range(len(tile.shape)), 1)
    for basis in linear.basis("register"):
        dims = [d for d, step in enumerate(basis) if step]
        if len(dims) == 1:
            held[dims[0]] *= 2
    return held
