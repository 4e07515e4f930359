"""What a tile that IRS301 sees going through LDS is, read from the TTGIR around it.

The rule's fix follows from this: a tile a global load returned and a dot reads is operand
staging; a dot's result read by another dot (attention's P) crosses warps when the two dots'
MMA layouts differ; a loop-carried state (a recurrence's h) is the algorithm's; a tile computed
elementwise from loaded data (a dequantized weight) may be staged raw and converted after the
read; a reduction's result or a loaded vector broadcast into another layout is small bookkeeping.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from irscope.ir.types import TensorType, element_of, encoding_of
from irscope.ir.layouts.graph import GLOBAL_LOADS
from irscope.ir.mlir import FOR_INIT_OPERANDS, iter_args
from irscope.ir.opgraph import value_flow

DOTS = frozenset({"tt.dot", "tt.dot_scaled", "ttng.warp_group_dot", "ttng.dot_async"})
# Ops that only move a tile's elements between threads or positions.
MOVES = frozenset({"ttg.convert_layout", "amdg.in_thread_transpose", "tt.trans", "tt.reshape"})
# Ops that rearrange elements (an interleave, a transpose): after one, the tile as loaded is gone.
SHUFFLES = frozenset({"tt.join", "tt.split", "tt.reshape", "tt.trans", "tt.cat", "tt.gather"})
# Ops that change the element type only: a raw fp8/int8 tile read from LDS and converted is staging.
CASTS = frozenset({"tt.fp_to_fp", "tt.bitcast", "arith.extf", "arith.extsi", "arith.extui", "arith.sitofp",
                   "arith.uitofp", "arith.truncf", "arith.trunci", "arith.fptosi", "arith.fptoui", "arith.bitcast"})
# Ops that give a tile another shape or spread without computing: followed like elementwise work.
SPREADS = frozenset({"tt.broadcast", "tt.expand_dims", "tt.splat", "tt.unsplat"})
ASYNC_COPIES = frozenset({"ttg.async_copy_global_to_local", "amdg.buffer_load_to_local",
                          "ttng.async_tma_copy_global_to_local"})
MMA_NAMES = frozenset({"amd_mfma", "amd_wmma", "nvidia_mma"})
REDUCTIONS = frozenset({"tt.reduce", "tt.scan", "tt.histogram"})
BUFFER_VIEWS = frozenset({"ttg.memdesc_index", "ttg.memdesc_subview", "ttg.memdesc_trans", "ttg.memdesc_reshape",
                          "ttg.memdesc_subslice"})


def is_elementwise(name: str) -> bool:
    return name.startswith(("arith.", "math.")) or name in CASTS or name in ("tt.precise_sqrt", "tt.precise_divf",
                                                                            "tt.clampf", "tt.mulhiui")


@dataclass
class Tile:
    """Where a stored tile's values come from (a backward walk over its producers)."""

    loads: list = field(default_factory=list)  # global load ops (or async copies read back from LDS)
    dots: list = field(default_factory=list)  # the nearest dots whose results it is made of
    reductions: list = field(default_factory=list)
    state: list = field(default_factory=list)  # (loop op, iter_arg position): loop-carried state it is made of
    shuffles: set = field(default_factory=set)  # tt.join / tt.trans / ... crossed on the way
    accumulated: list = field(default_factory=list)  # loops whose result it is (read after the loop)
    computed: bool = False  # any arithmetic on the way (not only moves, casts and spreads)
    arith: list = field(default_factory=list)  # the ops that computed (not moves, casts or spreads)
    constants: int = 0
    other: set = field(default_factory=set)

    @property
    def loaded(self) -> bool:
        """What global loads returned, moved or cast but not computed (a pipeliner's zero fill aside)."""
        return bool(self.loads) and not (self.dots or self.reductions or self.state or self.computed or self.other)

    def raw_bits(self, module) -> int | None:
        """The element width of the biggest tile the loads brought in (the weights, not their scales)."""
        biggest = max(self.loads, key=lambda op: numel(module, op), default=None)
        return load_bits(module, biggest) if biggest is not None else None


def numel(module, op) -> int:
    ty = module.values[op.results[0]].type if op.results else None
    return getattr(ty, "numel", None) or 0


def load_bits(module, op) -> int | None:
    """A load's element width: its result's, or for an async copy the LDS buffer's."""
    vid = op.operands[1] if op.canonical_name in ASYNC_COPIES and len(op.operands) > 1 else \
        (op.results[0] if op.results else None)
    return getattr(element_of(module.values[vid].type), "bits", None) if vid is not None else None


def trace(module, vid: int) -> Tile:
    """Walk back from `vid` through moves, casts, spreads, elementwise work and region plumbing."""
    flow = value_flow(module)
    tile = Tile()
    stack, seen = [vid], set()
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        value = module.values[current]
        if value.kind == "argument" and _carried_state(module, tile, current):
            continue
        back = flow.sources(current)
        if back:
            stack.extend(_through_region(module, tile, value, current, back, seen))
            continue
        op = flow.defining(current)
        if op is None:
            tile.other.add("argument")
            continue
        stack.extend(_through_op(module, flow, tile, op, current))
    return tile


def _carried_state(module, tile: Tile, argument: int) -> bool:
    """Whether the block argument is a loop's recurrent iter_arg (then recorded in `tile.state`, once)."""
    slot = _loop_slot(module, argument)
    if slot is not None and slot not in tile.state and recurrent(module, *slot):
        tile.state.append(slot)
        return True
    return False


def _through_region(module, tile: Tile, value, current: int, back: list[int], seen: set[int]) -> list[int]:
    """What flows into an iter_arg or a loop's or if's result: the values to follow."""
    loop = module.ops[value.owner] if value.kind == "result" else None
    if loop is not None and loop.canonical_name == "scf.for":
        # what a loop computed (an accumulator after its K loop): follow what the body yields,
        # through its own iter_arg, so that `acc = dot(a, b, acc)` reads as a dot's result
        position = loop.results.index(current)
        tile.accumulated.append(loop)
        seen.update(iter_args(loop)[position:position + 1])
        if len(loop.operands) > FOR_INIT_OPERANDS + position:
            back = back[:-1]  # the init (a zero accumulator) comes last
    return back


def _through_op(module, flow, tile: Tile, op, current: int) -> list[int]:
    """Record what the defining op makes of the tile; the values to follow further back through it."""
    name = op.canonical_name
    if name in GLOBAL_LOADS:
        tile.loads.append(op)
    elif name in DOTS:
        tile.dots.append(op)
    elif name in REDUCTIONS:
        tile.reductions.append(op)
    elif name == "arith.constant":
        tile.constants += 1
    elif name == "ttg.local_load":
        origins = flow.origins(op.operands[0], BUFFER_VIEWS)
        copies, writers = _writes_into(module, origins)
        tile.loads.extend(copies)
        if not copies and not writers:
            tile.other.add(name)
        return list(writers)
    elif name in MOVES or name in SHUFFLES or name in CASTS or name in SPREADS or is_elementwise(name):
        if name in SHUFFLES:
            tile.shuffles.add(name)
        if not (name in MOVES or name in CASTS or name in SPREADS or name in SHUFFLES):
            tile.computed = True
            tile.arith.append(op)
        return [v for v in op.operands if isinstance(module.values[v].type, TensorType)]
    elif name in ("tt.make_range", "tt.get_program_id"):
        pass  # index arithmetic (a shift amount, a mask): not where the data comes from
    elif name == "ttng.warp_group_dot_wait":
        return list(op.operands[op.results.index(current):][:1])
    else:
        tile.other.add(name)
    return []


def _writes_into(module, buffers) -> tuple[list, list[int]]:
    """What fills the given LDS buffers: async copies from global memory, and register values
    written by local_alloc %v / local_store."""
    copies, values = [], []
    flow = value_flow(module)
    for op in module.ops:
        name = op.canonical_name
        if name == "ttg.local_alloc" and op.operands and op.index in buffers:
            values.append(op.operands[0])
        elif name == "ttg.local_store" and len(op.operands) >= 2:
            if flow.origins(op.operands[1], BUFFER_VIEWS) & buffers:
                values.append(op.operands[0])
        elif name in ASYNC_COPIES and len(op.operands) >= 2:
            if flow.origins(op.operands[1], BUFFER_VIEWS) & buffers:
                copies.append(op)
    return copies, values


def _loop_slot(module, vid: int):
    """(scf.for op, iter_arg position) when `vid` is a loop's iter_arg."""
    value = module.values[vid]
    owner = module.ops[value.owner] if value.owner >= 0 else None
    if owner is None or owner.canonical_name != "scf.for":
        return None
    carried = iter_args(owner)
    return (owner.index, carried.index(vid)) if vid in carried else None


def recurrent(module, loop_index: int, position: int) -> bool:
    """Whether the loop's iter_arg at `position` is state: what the body yields for it is made from
    it (h = h * g + dot(k, v)), not a prefetch of the next iteration's load."""
    loop = module.ops[loop_index]
    carried = iter_args(loop)
    if position >= len(carried):
        return False
    target = carried[position]
    body = loop.regions[0].blocks[0]
    terminator = module.ops[body.ops[-1]] if body.ops else None
    if terminator is None or terminator.canonical_name != "scf.yield" or position >= len(terminator.operands):
        return False
    stack, seen = [terminator.operands[position]], set()
    while stack:
        current = stack.pop()
        if current == target:
            return True
        if current in seen:
            continue
        seen.add(current)
        value = module.values[current]
        if value.kind != "result" or value.owner < 0:
            continue
        op = module.ops[value.owner]
        if op.canonical_name in GLOBAL_LOADS or op.canonical_name in ("ttg.local_load", "ttg.local_alloc"):
            continue  # a load's address is not its data
        if op.canonical_name in ("scf.for", "scf.if", "scf.while"):
            stack.extend(value_flow(module).sources(current))
        stack.extend(v for v in op.operands if isinstance(module.values[v].type, TensorType))
    return False


def users_of(module) -> dict[int, list]:
    users: dict[int, list] = {}
    for op in module.ops:
        for vid in op.operands:
            users.setdefault(vid, []).append(op)
    return users


def dots_reached(module, vid: int, users) -> list:
    """The dots that read `vid` as an operand, possibly after moves, casts (a raw fp8/int8 tile converted
    after its LDS read: tt.fp_to_fp, arith.extf/sitofp/..., tt.bitcast), spreads, elementwise work in the
    dot-operand layout (a scale applied after the read), or region plumbing (a loop's iter_args, its
    inits, an if's yield: a pipelined prefetch)."""
    found, stack, seen = [], [vid], set()
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        for op in users.get(current, ()):
            name = op.canonical_name
            if name in DOTS:
                if current in op.operands[:2] or name == "tt.dot_scaled":
                    found.append(op)
            elif name in MOVES or name in CASTS or name in SPREADS:
                stack.extend(r for r in op.results if isinstance(module.values[r].type, TensorType))
            elif is_elementwise(name):  # a scale applied to the operand after its read, not any later use
                stack.extend(r for r in op.results if _is_operand_layout(module, r))
            elif name == "scf.yield":
                stack.extend(_yielded(module, op, current))
            elif name == "scf.for":
                carried = iter_args(op)
                for i, operand in enumerate(op.operands[FOR_INIT_OPERANDS:]):
                    if operand == current and i < len(carried):
                        stack.append(carried[i])
    return found


def _is_operand_layout(module, vid: int) -> bool:
    ty = module.values[vid].type
    return isinstance(ty, TensorType) and getattr(encoding_of(ty), "name", None) == "dot_op"


def _yielded(module, yield_op, vid: int) -> list[int]:
    """What a yield of `vid` becomes: an scf.for's next iter_arg and result, an scf.if's result."""
    if yield_op.parent is None:
        return []
    owner = module.ops[yield_op.parent]
    out = []
    for i, operand in enumerate(yield_op.operands):
        if operand != vid:
            continue
        if owner.canonical_name == "scf.for":
            out += [*iter_args(owner)[i:i + 1], *owner.results[i:i + 1]]
        elif owner.canonical_name in ("scf.if", "scf.while"):
            out += list(owner.results[i:i + 1])
    return out


def mma_of(layout):
    """The MMA layout behind a dot operand, a slice or an MMA layout itself."""
    while layout is not None and getattr(layout, "name", None) in ("dot_op", "slice"):
        layout = layout.parent
    return layout if getattr(layout, "name", None) in MMA_NAMES else None


def result_layout(module, op):
    return encoding_of(module.values[op.results[0]].type) if op.results else None


def kind_of(tiles: list[Tile]) -> str:
    """One word for what the written tiles are: loaded, chain, state, dequantized, reduction, computed."""
    if any(t.loads for t in tiles) and all(t.loaded or _only_constants(t) for t in tiles):
        return "loaded"
    if any(t.dots for t in tiles):
        return "chain"
    if any(t.state for t in tiles):
        return "state"
    if any(t.loads for t in tiles):
        return "dequantized"
    if any(t.reductions for t in tiles):
        return "reduction"
    return "computed"


def _only_constants(tile: Tile) -> bool:
    """A pipeliner's fill of a stage past the loop's end: a constant, no data."""
    return bool(tile.constants) and not (tile.loads or tile.dots or tile.reductions or tile.state or tile.computed
                                         or tile.other)
