"""What one program of a kernel does, read from its TTGIR: the split a too-small grid can take.

IRS601 names a way to get more programs only where the kernel has one. The real-world ledger
(fixtures/real_world/ledger/IRS601.jsonl) found "smaller tiles" wrong for kernels whose program
is one unit of the algorithm: a row reduced whole (RMSNorm, cross-entropy), a chunk scanned
whole (a cumulative sum), a block solved by a sequential recurrence. Those grids are the
problem's own size; only a cross-program reduction (a second pass) would split them.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from irscope.ir.types import TensorType
from irscope.ir.layouts.graph import GLOBAL_LOADS, GLOBAL_STORES

DOTS = frozenset({"tt.dot", "tt.dot_scaled", "ttng.warp_group_dot", "ttng.tc_gen5_mma"})


@dataclass(frozen=True)
class ProgramWork:
    # "whole": reduces or scans its whole row/chunk (or solves it sequentially); "rows": reduces each
    # of several rows whole; "gemm": a dot accumulated over a loop; "recurrence": a dot state carried
    # through a loop that stores it each step; "dots": dots, no loop over them; "split": a dot loop
    # whose range a grid axis already splits (split-K, split-KV); "elementwise": none of those.
    kind: str
    what: str  # what one program does, for the message: "reduces a 4096-element row (TTGIR line 52)"
    shape: tuple[int, ...] = ()  # the tile the split acts on (the accumulator, the reduced rows, the widest load)
    axis: int | None = None  # "split": the grid axis (0, 1, 2 for x, y, z) whose programs take the loop's pieces


def _shape(module, vid) -> tuple[int, ...]:
    ty = module.values[vid].type
    return tuple(d or 0 for d in ty.shape) if isinstance(ty, TensorType) else ()


def program_work(module) -> ProgramWork:
    """The first kind of work that fits, tried in order: a split loop, a scan, a reduction, dots, elementwise."""
    dots = [op for op in module.ops if op.canonical_name in DOTS]
    dot_loops = {loop.index for op in dots for loop in module.enclosing_loops(op)}
    # Each tried only when the ones before found nothing (a ProgramWork is always true).
    return (_split_loop(module, dot_loops) or _scan(module) or _reduction(module, dot_loops)
            or _dots(module, dots) or _elementwise(module))


def _scan(module) -> ProgramWork | None:
    scans = [op for op in module.ops if op.canonical_name == "tt.scan"]
    if not scans:
        return None
    shape = _shape(module, scans[0].operands[0])
    return ProgramWork("whole", f"scans a whole {'x'.join(map(str, shape))} chunk (tt.scan, TTGIR line "
                                f"{scans[0].line})", shape)


def _reduction(module, dot_loops) -> ProgramWork | None:
    """A reduction over a whole row or block (or a recurrence in a loop with no dot) first, else one over rows."""
    rows = None
    for op in module.ops:
        if op.canonical_name != "tt.reduce" or not op.operands:
            continue
        shape = _shape(module, op.operands[0])
        loops = module.enclosing_loops(op)
        if len(shape) == 1 or (loops and not any(loop.index in dot_loops for loop in loops)):
            what = (f"reduces a whole {shape[0]}-element row or block" if len(shape) == 1 else
                    "runs a sequential recurrence over its block (a reduction inside a loop with no dot)")
            return ProgramWork("whole", f"{what} (TTGIR line {op.line})", shape)
        axis = op.attributes.get("axis")
        if rows is None and len(shape) == 2 and isinstance(axis, int) and shape[1 - axis] > 1:
            rows = ProgramWork("rows", f"reduces {shape[1 - axis]} rows of {shape[axis]} (TTGIR line {op.line})",
                               (shape[1 - axis], shape[axis]))
    return rows


def _dots(module, dots) -> ProgramWork | None:
    """A recurrence, a GEMM or plain dots, by the first dot (one in a loop if any is)."""
    if not dots:
        return None
    looped = [op for op in dots if module.enclosing_loops(op)]
    dot = (looped or dots)[0]
    shape = _shape(module, dot.results[0])
    tile = "x".join(map(str, shape))
    loop = module.enclosing_loops(dot)[0] if looped else None
    stores_in = loop is not None and any(op.canonical_name in GLOBAL_STORES and loop in module.enclosing_loops(op)
                                         for op in module.ops)
    if stores_in:  # a state carried and written each step (a chunked recurrence), not a K reduction
        return ProgramWork("recurrence", f"carries a {tile} state through a loop that stores it each step "
                                         f"(dot at TTGIR line {dot.line})", shape)
    if looped:
        return ProgramWork("gemm", f"accumulates a {tile} dot over a loop (TTGIR line {dot.line})", shape)
    return ProgramWork("dots", f"computes {len(dots)} dot(s) of {tile} tiles (TTGIR line {dot.line})", shape)


def _elementwise(module) -> ProgramWork:
    ops = module.ops
    loads = [op for op in ops if op.canonical_name in GLOBAL_LOADS and op.results]
    shapes = [_shape(module, op.results[0]) for op in loads]
    # A kernel that only writes (an arange, a fill) has its tile in what it stores.
    shapes += [_shape(module, vid) for op in ops if op.canonical_name in GLOBAL_STORES for vid in op.operands[1:2]]
    shape = max(shapes, key=lambda s: prod(s) if s else 0, default=())
    return ProgramWork("elementwise", f"works elementwise on a {'x'.join(map(str, shape)) or 'scalar'} tile", shape)


def _split_loop(module, dot_loops) -> ProgramWork | None:
    """A dot loop that starts at `program id * length` runs one piece of its range per program: the
    kernel already splits the loop over that grid axis (vLLM's MLA decode: split_kv_start = kv_len_per_split
    * split_kv_id, the id from axis z), and more pieces are its way to more programs."""
    for loop in module.ops:
        if loop.index not in dot_loops or loop.canonical_name != "scf.for" or not loop.operands:
            continue
        start = module.defining_op(loop.operands[0])
        if start is None or start.canonical_name != "arith.muli":
            continue
        for vid in start.operands:
            pid = module.defining_op(vid)
            axis = (pid.attributes.get("keywords") or (None,))[0] if pid is not None else None
            if pid is not None and pid.canonical_name == "tt.get_program_id" and axis in ("x", "y", "z"):
                return ProgramWork("split", f"runs one piece of its dot loop (TTGIR line {loop.line}), from "
                                            f"program id {axis} x the piece's length (TTGIR line {start.line})",
                                   axis="xyz".index(axis))
    return None


def loops_over_a_share(module) -> bool:
    """A persistent program: it reads the grid size (a grid-stride loop over tl.num_programs) or runs a loop
    whose lower bound comes from its program id (rows pid * rows_per_program onward). A GEMM's K loop starts
    at a constant and is neither."""
    if any(op.canonical_name == "tt.get_num_programs" for op in module.ops):
        return True
    for op in module.ops:
        if op.canonical_name == "scf.for" and op.operands and _from_program_id(module, op.operands[0]):
            return True
    return False


def _from_program_id(module, vid: int, limit: int = 24) -> bool:
    return module.producer_named(vid, ("tt.get_program_id",), limit) is not None
