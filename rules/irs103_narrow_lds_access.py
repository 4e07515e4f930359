"""IRS103 narrow-lds-access."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from irscope.isa import model as isa
from irscope.isa.amdgcn_dataflow import LOAD_KINDS, matrix_feeds
from irscope.engine.context import Analysis, SharedKey
from irscope.engine.rule import Rule
from irscope.rules._inductor import InductorKernel, inductor_kernel
from irscope.rules._lds_origin import (Origin, Transpose, contiguous_runs, convert_transpose, held_elements,
                                       tile_origin)
from irscope.rules._lds_tiles import (LdsOp, TileIndex, element_bytes, layout_key, op_site,
                                      operand_index, tile_bytes)

if TYPE_CHECKING:
    from irscope.isa.amdgcn_dataflow import MatrixOperand

# Narrower than this is reported: 8 bytes is the K group of 4 fp16/bf16 that one lane feeds
# an MFMA (v_mfma_f32_32x32x8_f16, 16x16x16_f16: a 2-VGPR operand), and the vector of
# Triton's swizzled LDS layouts for them (vec = 4).
OPERAND_BYTES = 8
# Below a dword a lane leaves part of its 4-byte LDS bank slot unused: bandwidth is lost,
# not just instructions. In a loop that is a warning.
DWORD = 4


class NarrowLdsAccess(Rule):
    """LDS (shared memory) reads and writes narrower than 8 bytes per lane on a tile.

    ## What it does
    Finds LDS accesses of less than 8 bytes per lane (`ds_read_u8`, `ds_read_u16`, `ds_write_b16`,
    `ds_write_b32`, `ds_read2_b32`, gfx11/12 `ds_load_u16` / `ds_store_b32`; PTX `ld.shared` /
    `st.shared` of `.b8`, `.b16`, `.b32`, `.v2.b16`) on the tiles Triton moves through LDS:
    `ttg.local_alloc` / `local_store` / `local_load` and `convert_layout`s lowered through shared
    memory. Each instruction is matched to the TTGIR op it came from by its whole inline chain (the
    user's frames of `; attn.py:31:13 @[ attn.py:76:16 ]`, PTX `.loc ... inlined_at`, TTGIR
    `loc(callsite(...))`), innermost first, with the column as a tie-break: an inlined helper's
    accesses belong to the helper's line, not to every tile of the call site. Accesses that carry a
    dot's own line (LLVM gives torchao's 1-byte int8 operand traffic the `tl.dot` line) belong to the
    tiles that feed that dot, picked by the matrix operand they feed (an MFMA with `isTransposed`
    takes the dot's B as its first operand). The message names the tile's own line (and the call
    site it was inlined at), counts per iteration of the innermost loop and outside loops, and says
    why the accesses are narrow: the tile arrived from narrow global loads, the dot operand is read
    along a dimension the LDS layout does not keep contiguous, it is transposed on its way in
    (contiguous along another dimension in registers than in LDS), two dots with different warp
    layouts hand it over, or a layout conversion (of a broadcast load, preparing a dot operand, or a
    transpose between tensors the kernel reads or writes along different dimensions).

    Not reported: 8-byte accesses, the natural width of an fp16 MFMA operand (4 K elements in 2
    VGPRs), and on AMD any access as wide as the K group the matrix instruction consumes in the
    tile's own element type (kWidth elements: an fp8 tile upcast for an f16 MFMA, float8e4nv on
    gfx942, has 4-byte groups, so a `ds_read2_b32` there reads two whole groups); 32-bit operands
    at 4 bytes. `ldmatrix`/`stmatrix`, `cp.async` and TMA copies are not LDS reads or writes of
    registers. What costs little is left out: vectors (one dimension above 1: a row's statistics, a
    block's scales), a thread's whole share of a tile in one access, tiles of 2 KiB or less moved
    once outside loops, and in a loop accesses that are under 5% of the loop's LDS instructions per
    iteration (gemlite's 1x256 scales: 2 of about 150). Reduction scratch, a lock's broadcast and the
    TMA descriptors Triton writes to shared memory are no tile of the TTGIR and are skipped.

    Accesses below 4 bytes inside a loop are warnings: a lane then uses part of its 4-byte LDS bank
    slot, so they cost LDS bandwidth as well as 4 to 8 times the instructions. 4-byte accesses, and
    anything outside loops, are info. Counts are per machine iteration of the loop.

    ## Why is this bad?
    Every LDS instruction is an issue slot and an `lgkmcnt` entry (at most 15 outstanding on
    gfx9). A GEMM that builds each 8-byte MFMA operand from four 2-byte reads issues four
    times the LDS instructions and spends VALU work packing the halves, in the loop that
    should be feeding the matrix cores.

    ## Example
    The aligned GEMM (fixture `gemm_aligned`, Triton 3.2, gfx942) loads B with
    `stride_bn = 1` (N-contiguous) and keeps it N-contiguous in LDS (`#shared1`, vec = 1),
    but the MFMA wants each lane's 4 B elements contiguous along K. The K loop reads B
    element by element, 64 `ds_read_u16` per iteration at gemm.py:49, and packs pairs
    with `v_perm_b32` into the 8-byte operand (.amdgcn lines 753-775):

        ds_read_u16 v100, v84 offset:256
        ds_read_u16 v101, v84 offset:512
        ds_read_u16 v102, v84 offset:768
        ds_read_u16 v103, v83 offset:16384
        ...
        v_perm_b32 v125, v102, v101, s20
        v_perm_b32 v124, v100, v103, s20
        ...
        v_mfma_f32_32x32x8_f16 a[0:15], v[124:125], v[36:37], a[0:15]

    while the A tile's half, `v[36:37]`, comes from one `ds_read2st64_b64 v[36:39]`. Triton 3.6
    compiles the same kernel with B transposed on the LDS write (`ds_write_b64`) and read
    with `ds_read2st64_b64`: not reported. The unaligned GEMM (3.6, gfx942) writes its B
    tile with 32 `ds_write_b16` per iteration, as its `global_load_ushort`s deliver it.

    ## How to fix it in the kernel
    The fix follows from what the tile is. Loaded from memory: fix narrow global loads first (IRS101),
    and keep dot operands K-contiguous in memory where you can (A row-major, B as an N x K tensor used
    through `tl.trans`, as fixture `trans_dot` does: `ds_write_b128` and `ds_read2_b64`); a larger
    BLOCK_K or fewer warps lets a transposing write pack 4 elements instead of 2. A layer's input in
    another layout is not the kernel's to choose: the transpose is then the cost of reading it. A
    dequantized tile keeps the layout of the packed load it came from: load that K-contiguous. Register
    state (a dot's accumulator carried by the loop and staged as the next dot's operand, fla's `b_h1`)
    or a dot's result handed to a dot with another warp layout: the width follows the matrix
    instruction's output layout, which no stride, hint or block size changes; the message says so. A
    row scale loaded as a 2-D broadcast (a 128x128 tile of 128 values) and converted in the epilogue:
    load the vector and broadcast it after the load. A transpose between tensors read along different
    dimensions (inductor's RoPE kernels load the cos/sin table along dim 0 and the activations along dim 1,
    and a thread's run lies along another dimension in each layout): in any LDS order one side moves one
    element at a time, and no hint or block size changes that; only tensors laid out alike remove it.
    """

    code = "IRS103"
    slug = "narrow-lds-access"
    summary = "LDS reads/writes of a tile narrower than 8 B per lane (the fp16 MFMA operand)"
    severity = "info"
    stages = ("ttgir",)

    def check(self, ctx):
        module = ctx.ttgir
        facts = ctx.layout_facts
        if module is None or facts is None:
            return []
        tiles = ctx.shared(SharedKey(Analysis.LDS_TILES), lambda: TileIndex(facts, module))
        threads = (module.num_warps or 0) * (module.threads_per_warp or 0)
        generated = inductor_kernel(ctx)
        findings = []
        for program in ctx.programs:
            if program.isa not in ("amdgcn", "ptx"):
                continue
            for fn in program.functions:
                feeds = _LazyFeeds(fn) if program.isa == "amdgcn" else {}
                groups = _narrow_groups(fn, tiles, feeds)
                if not groups:
                    continue
                loops = {loop.header: loop for loop in ctx.loops(program, fn)}
                graph = ctx.graph(program, fn)
                for group in groups:
                    size = tile_bytes(group.tile.element, group.tile.shape)
                    if not size:
                        continue  # a vector (a row's statistics, a block's scales): a lane moves a value or two
                    if threads and size // threads <= group.width:
                        continue  # each thread's whole share of the tile in one access: nothing wider to do
                    operand = _operand(tiles, group.tile)
                    if group.width >= _natural_width(operand, program.isa):
                        continue  # as wide as the matrix instruction's K group of this element type
                    per_loop = _per_loop(graph, group)
                    if not _costs(fn, graph, loops, group, per_loop, size):
                        continue
                    findings.append(self._finding(ctx, program, fn, loops, per_loop, feeds, tiles, operand, group,
                                                  generated))
        return findings

    def _finding(self, ctx, program, fn, loops, per_loop, feeds, tiles, operand, group: _Group, generated):
        conditional: Counter = Counter()
        for ins in group.instructions:
            loop = ctx.graph(program, fn).loop_of(ins.index)
            if loop is not None and fn.block_of(ins.index).index not in loops[loop.header].every_iteration:
                conditional[loop.header] += 1
        outside = len(group.instructions) - sum(per_loop.values())
        opcodes = Counter(i.opcode for i in group.instructions)
        what = ", ".join(op for op, _ in opcodes.most_common())
        parts = []
        for header, n in per_loop.most_common():
            loop = loops[header]
            where = _loop_name(tiles, loop)
            # Per machine iteration, with no K-step split: the unroll estimate (IRS202's) counts warps that
            # repeat a small tile as unrolled iterations (issue 21 defect 3); a count per machine loop is exact.
            text = f"{n} per iteration of {where}"
            if conditional[header]:
                text += f" ({conditional[header]} of them on a path not every iteration takes)"
            parts.append(text)
        if outside:
            parts.append(f"{outside} outside loops")
        in_loop = sum(per_loop.values())
        kind = "reads" if group.direction == "read" else "writes"
        file, line = group.python
        message = (f"LDS {kind} of {group.width} B per lane ({what}) from {_where(group.site, file, line)}: "
                   f"{'; '.join(parts)}")
        cause, fix = _cause(fn, feeds, tiles, operand, group, generated)
        message += f"; {cause}"
        severity = "warning" if in_loop and group.width < DWORD else "info"
        first_loop = loops[per_loop.most_common(1)[0][0]] if per_loop else None
        evidence = {"width_bytes": group.width, "count": len(group.instructions), "in_loop": in_loop,
                    "outside_loops": outside}
        if first_loop is not None:
            evidence["per_iteration"] = per_loop[first_loop.header]
        return self.finding(ctx, stage=program.isa, path=program.path, lines=[i.line for i in group.instructions],
                            python=(file, line), severity=severity, message=message, fix=fix, evidence=evidence)


@dataclass
class _Group:
    direction: str  # "read" or "write"
    width: int
    tile: LdsOp  # the TTGIR op whose tile the instructions move
    site: tuple
    python: tuple[str, int]  # the innermost user frame of the instructions: the tile's own line
    instructions: list = field(default_factory=list)


def _narrow_groups(fn, tiles: TileIndex, feeds: dict) -> list[_Group]:
    groups: dict[tuple, _Group] = {}
    for ins in fn.instructions:
        mem = ins.memory
        if ins.kind not in (isa.SHARED_LOAD, isa.SHARED_STORE) or mem is None or mem.space not in ("lds", "shared"):
            continue
        if not mem.width_bytes or mem.width_bytes >= OPERAND_BYTES:
            continue
        if ins.opcode.startswith(("ldmatrix", "stmatrix")) or "_tr_" in ins.opcode:
            continue
        site, column, python = tiles.site_of(ins.source)
        if python is None:
            continue
        direction = "read" if ins.kind == isa.SHARED_LOAD else "write"
        fed = {name for _, name in feeds.get(ins.index, ())}
        tile = tiles.attribute(direction, mem.width_bytes, site, column, fed)
        if tile is None:
            continue  # no tile of the TTGIR at this site: reduction scratch, a TMA descriptor, a lock's broadcast
        key = (direction, site, mem.width_bytes, tile.key)
        groups.setdefault(key, _Group(direction, mem.width_bytes, tile, site, python)).instructions.append(ins)
    return sorted(groups.values(), key=lambda g: g.instructions[0].line)


def _where(site: tuple, file: str, line: int) -> str:
    """`attn.py:31`, or `attn.py:31 (inlined at attn.py:76)` for a helper's line."""
    name = f"{file.rsplit('/', 1)[-1]}:{line}"
    callers = [f"{base}:{ln}" for base, ln in site[1:]]
    return f"{name} (inlined at {', '.join(callers)})" if callers else name


def _loop_name(tiles: TileIndex, loop) -> str:
    """The loop's own `for` line: inside an inlined helper, the helper's line, not the call site."""
    if loop.ttgir_loop is not None:
        site, _, python = op_site(tiles.module.ops[loop.ttgir_loop], set(tiles.library))
        if python is not None:
            return f"the loop at {_where(site, *python)}"
    return f"the loop at {loop.python_name}:{loop.python_line}" if loop.python_line else "a loop"


def _per_loop(graph, group: _Group) -> Counter:
    per_loop: Counter = Counter()
    for ins in group.instructions:
        loop = graph.loop_of(ins.index)
        if loop is not None:
            per_loop[loop.header] += 1
    return per_loop


# A one-time transfer (outside loops) of a tile of at most this many bytes costs a lane a few instructions:
# a reduction's result, a row's statistics, a block's scales.
SMALL_TILE_BYTES = 2048
# In a loop, narrow accesses that are less than this share of the loop's LDS instructions per iteration
# cost little next to the operand traffic the loop already has (gemlite's 1x256 scales: 2 of 150).
LOOP_SHARE = 0.05


def _costs(fn, graph, loops, group: _Group, per_loop: Counter, size: int) -> bool:
    """Whether the accesses cost something: a tile over 2 KiB outside loops, or in a loop at least
    LOOP_SHARE of the LDS instructions a lane issues per iteration (each one an issue slot and an
    lgkmcnt entry, whatever its width)."""
    if not per_loop:
        return size > SMALL_TILE_BYTES
    for header, mine in per_loop.items():
        issued = sum(1 for i in loops[header].instructions
                     if fn.instructions[i].kind in (isa.SHARED_LOAD, isa.SHARED_STORE))
        if issued and mine >= LOOP_SHARE * issued:
            return True
    return False


class _LazyFeeds:
    """_matrix_feeds(fn) at the first lookup: only a narrow LDS access asks (a big GEMM's def-use chains)."""

    def __init__(self, fn) -> None:
        self._fn = fn
        self._feeds: dict | None = None

    def get(self, index: int, default=None):
        if self._fn.instructions[index].kind not in LOAD_KINDS:
            return default  # an LDS write: matrix_feeds' keys are loads
        if self._feeds is None:
            self._feeds = _matrix_feeds(self._fn)
        return self._feeds.get(index, default)


def _matrix_feeds(fn) -> dict[int, set[tuple[isa.Instruction, MatrixOperand]]]:
    """LDS read index -> the matrix instructions it feeds, with the operand ("A"/"B")."""
    out: dict[int, set] = defaultdict(set)
    for index, fed in matrix_feeds(fn).items():
        for feed in fed:
            out[feed.load].add((fn.instructions[index], feed.operand))
    return out


@dataclass(frozen=True)
class _Operand:
    """A dot operand tile that goes through LDS: how it is held in registers and in LDS."""

    name: str  # "A" or "B"
    k_dim: int | None
    stored: str  # register layout as written
    shared: str  # LDS layout as written
    order: tuple[int, ...] | None  # the LDS layout's dimension order, fastest first
    element: str
    k_width: int | None  # elements of K a lane holds together (the dot_op layout's kWidth)
    parent: str  # the matrix layout it feeds (#mma, #mma1), as written
    amd: bool  # an AMD matrix layout (MFMA/WMMA): a lane's K group is kWidth elements


_K_WIDTH = re.compile(r"kWidth\s*=\s*(\d+)")
_PARENT = re.compile(r"parent\s*=\s*(#[\w.]+)")


def _operand(tiles: TileIndex, tile: LdsOp) -> _Operand | None:
    """The dot operand a tile is: a round trip read back in a dot-operand layout, or a local_alloc a
    wgmma reads in place (its position in the dot)."""
    module = tiles.module
    name = operand_index(tile.loaded)
    layout = tile.loaded
    if name is None and tile.kind == "round_trip" and not tile.loaded:
        for dot in module.ops:
            if dot.canonical_name in ("ttng.warp_group_dot", "ttng.dot_async", "tt.dot"):
                for position, vid in enumerate(dot.operands[:2]):
                    alloc = module.defining_op(vid)
                    if alloc is not None and alloc.index == tile.op:
                        name = "A" if position == 0 else "B"
                        layout = layout_key(module.values[dot.results[0]].type) or ""
    if name is None or tile.kind != "round_trip":
        return None
    rank = len(tile.shape)
    k_dim = None if rank < 2 else (rank - 1 if name == "A" else rank - 2)
    shared = module.aliases.get(tile.shared)
    order = getattr(shared, "order", None)
    if order is None and hasattr(shared, "transposed") and rank == 2:  # nvmma_shared: row-major unless transposed
        order = (0, 1) if shared.transposed else (1, 0)
    k_width = _K_WIDTH.search(layout)
    parent = _PARENT.search(layout)
    parent_name = parent.group(1) if parent else layout
    amd = type(module.aliases.get(parent_name)).__name__ in ("AmdMfma", "AmdWmma")
    return _Operand(name, k_dim, tile.source, tile.shared, tuple(order) if order else None, tile.element,
                    int(k_width.group(1)) if k_width else None, parent_name, amd)


def _natural_width(operand: _Operand | None, program_isa: str) -> int:
    """The access width below which a tile's LDS access is narrow.

    8 bytes: an fp16/bf16 MFMA operand (4 K elements) and Triton's swizzle vector for it. A dot
    operand on AMD is read in K groups of kWidth elements of its own type: an fp8 tile that an fp16
    MFMA consumes after an upcast (float8e4nv on gfx942, kWidth 4) has 4-byte K groups, so one
    ds_read2_b32 reads two whole groups; a 32-bit (f32, tf32) operand's group is one 4-byte element."""
    if operand is None:
        return OPERAND_BYTES
    element = _element_bytes(operand.element)
    if operand.amd and operand.k_width:
        return min(OPERAND_BYTES, operand.k_width * element)
    return DWORD if element >= DWORD else OPERAND_BYTES


def _cause(fn, feeds, tiles: TileIndex, operand: _Operand | None, group: _Group,
           generated: InductorKernel | None) -> tuple[str, str]:
    """Why the accesses are narrow, and the fix that goes with what the tile is (loaded from memory,
    computed in registers, a dot's result or loop-carried state, a broadcast) and with its layouts."""
    tile, module = group.tile, tiles.module
    loads = [i for i in fn.instructions if i.kind == isa.GLOBAL_LOAD and i.memory and i.memory.width_bytes
             and tiles.site_of(i.source)[0] == group.site]
    origin = tile_origin(module, tile)
    if group.direction == "write" and origin.kind == "memory" and loads \
            and max(i.memory.width_bytes for i in loads) <= group.width:
        widest = max(loads, key=lambda i: i.memory.width_bytes)
        return (f"the tile arrives from {widest.memory.width_bytes}-byte global loads ({widest.opcode}) of the "
                f"same line and is written as loaded (see IRS101)",
                "make the global loads wide first (IRS101: 16-divisible strides, unit strides as constexpr, "
                "tl.multiple_of / tl.max_contiguous); the tile is then written to LDS 8-16 bytes at a time")
    if operand is not None:
        return _operand_cause(feeds, module, operand, origin, group)
    conv = tile.conversion
    if conv is not None:
        text = f"a convert_layout through LDS ({conv.source} -> {conv.target}, .ttgir line {conv.line})"
        if origin.kind == "broadcast":
            return (f"{text} converts a {_shape(tile.shape)} tile that was loaded through pointers broadcast "
                    f"from {_shape(origin.detail)} (each value loaded and moved {_repeat(tile.shape, origin.detail)} "
                    f"times)",
                    f"load the {_shape(origin.detail)} values once, as a vector (tl.load of the row or column "
                    f"offsets alone), and broadcast them after the load ([:, None] / [None, :]): the convert then "
                    f"moves the vector, not a {_shape(tile.shape)} tile")
        dot = tiles.dot_converts.get(conv.op)
        if dot is not None:
            site, _, python = op_site(module.ops[dot], set(tiles.library))
            where = _where(site, *python) if python else "a dot"
            return (f"{text} prepares an operand of the dot at {where} ({_shape(tile.shape)} {tile.element})",
                    f"the convert brings a tile to the layout the dot at {where} consumes (e.g. the tl.trans "
                    f"of a tile used as both operands); both layouts are the compiler's choice and no load or "
                    f"store hint changes them: the round trip is the cost of this dot's operand, unless the "
                    f"operand can be loaded in the orientation the dot reads")
        source = module.aliases.get(conv.source)
        if type(source).__name__ in ("AmdMfma", "AmdWmma", "NvidiaMma"):
            return (f"{text} takes the dot accumulator to the layout of the op at this line, once per tile",
                    "this epilogue conversion runs once per tile, after the K loop, and its width is the "
                    "compiler's choice: Triton 3.6 writes it 16 B per lane (st.shared.v4.b32 in the sm_90 GEMM, "
                    "ds_write_b128 in the gfx942 split-K GEMM)")
        transpose = convert_transpose(module, conv)
        if transpose is not None:
            return _transpose_cause(text, conv, transpose, generated)
        return (f"{text} moves the tile {group.width} B at a time",
                "find why the op at this line wants another layout: a store whose pointers lost their "
                "contiguity facts (IRS102) gets a 1-element layout, and restoring them with tl.multiple_of / "
                "tl.max_contiguous removes the conversion")
    return ("the tile goes through LDS", "keep the tile contiguous along the dimension its consumer reads")


def _transpose_cause(text: str, conv, transpose: Transpose, generated: InductorKernel | None) -> tuple[str, str]:
    """A convert that transposes a tile between the layouts of tensors read or written along different
    dimensions: the cause is the kernel's data, and the two layouts bound the width."""
    t = transpose
    bound = "one element" if t.bound == 1 else f"at most {t.bound} elements"
    sides = []
    for layout, dim in ((conv.source, t.source_dim), (conv.target, t.target_dim)):
        ops = t.users.get(layout) or []
        if not ops:
            continue
        named = {f"{arg or 'a tensor'} {'loaded' if kind == 'load' else 'stored'}": None for kind, _, arg in ops}
        lines = sorted({line for _, line, _ in ops})
        where = f"line{'s' if len(lines) > 1 else ''} {', '.join(map(str, lines))}"
        sides.append(f"{' and '.join(named)} along dim {dim} ({layout}, .ttgir {where})")
    memory = f" ({'; '.join(sides)})" if sides else ""
    cause = (f"{text} transposes the {_shape(conv.shape)} {conv.element} tile: a thread's run is {t.source_run} "
             f"elements along dim {t.source_dim} in {conv.source} and {t.target_run} along dim {t.target_dim} in "
             f"{conv.target}, so in any LDS order one side moves {bound} at a time{memory}")
    data = ("only tensors laid out alike remove it (e.g. the one read along the other dimension made contiguous "
            "like the rest, once, outside the hot path); which side is narrow is Triton's choice of LDS order "
            "and swizzle")
    if generated is not None:
        return cause, ("the transpose is the computation's, not a missing hint: inductor generated this kernel to "
                       "read these tensors along different dimensions, and no config it picks (tile sizes, "
                       f"num_warps) and nothing edited by hand removes it: {data}")
    return cause, ("the transpose is the computation's: no pointer hint (tl.multiple_of), stride or block size "
                   f"removes it; {data}; otherwise it is the cost of the transposed access")


def _operand_cause(feeds, module, operand: _Operand, origin: Origin, group: _Group) -> tuple[str, str]:
    """The cause and fix of a narrow operand: chained dots, a K read of a tile LDS keeps along another
    dimension, a transposing write, or a tile staged as it is."""
    tile = group.tile
    feeding = _feeding(feeds, group)
    staged = ""
    if tile.via_dot is not None and tile.python is not None:
        staged = f" (the instructions carry the dot's line; the tile is staged at " \
                 f"{tile.python[0].rsplit('/', 1)[-1]}:{tile.python[1]})"
    what = f"the dot's {operand.name} tile{staged}"
    order, k_dim = operand.order, operand.k_dim
    held = held_elements(module, tile.source, tile.shape)
    per_thread = max(1, group.width // _element_bytes(operand.element))
    stored_alias = module.aliases.get(operand.stored)
    if type(stored_alias).__name__ in ("AmdMfma", "AmdWmma", "NvidiaMma") and operand.stored != operand.parent:
        kind = "reads" if group.direction == "read" else "writes"
        cause = (f"{what} goes through LDS ({operand.stored} -> {operand.shared} -> {operand.parent}), {kind} of "
                 f"{per_thread} element(s) at a time{feeding}")
        mine, theirs = _warps(stored_alias), _warps(module.aliases.get(operand.parent))
        return (cause + f": it is the result of one dot ({operand.stored}, warps {mine}) feeding another "
                        f"({operand.parent}, warps {theirs})",
                "Triton picks each dot's matrix layout from that dot's shape and num_warps; the two dots split "
                f"the warps differently ({mine} vs {theirs}), so the tile is rearranged through LDS. No load or "
                "store hint changes this: only dots whose layouts match (the same warps split, e.g. the same "
                "num_warps for shapes Triton splits alike) avoid it, and the chunk shapes are often the "
                "algorithm's own")
    if order and k_dim is not None and order[0] != k_dim and group.direction == "read":
        return _k_read_cause(what, feeding, operand, origin)
    # The dimension a thread's consecutive elements run along: its contiguous run first (a 16x16 share
    # held as 16-wide rows runs along them), then what it holds in all.
    runs = contiguous_runs(module, tile.source, tile.shape) or {}
    major = max(held, key=lambda d: (runs.get(d, 1), held[d], d == k_dim)) if held else None
    transposed = order and k_dim is not None and order[0] == k_dim and major is not None and major != k_dim
    if group.direction == "write" and transposed:
        return _transposed_write_cause(what, operand, origin, held, major, per_thread)
    return _staged_cause(what, feeding, operand, origin, per_thread, stored_alias, tile.shape)


def _feeding(feeds, group: _Group) -> str:
    """The clause naming the matrix instruction the accesses feed and its operand bytes per lane ("" if none)."""
    fed = sorted({(m.opcode, name, m.args[1] if name == "A" else m.args[2])
                  for i in group.instructions for m, name in feeds.get(i.index, ()) if len(m.args) > 2})
    if not fed:
        return ""
    from irscope.parsers.amdgcn_opcodes import operand as typed

    opcode, _, token = fed[0]
    return f"; they feed {opcode}, whose operand is {typed(token).count * 4} B per lane"


def _k_read_cause(what: str, feeding: str, operand: _Operand, origin: Origin) -> tuple[str, str]:
    """LDS keeps the tile along a dimension other than K, which the matrix instruction reads along."""
    order, k_dim = operand.order, operand.k_dim
    cause = (f"LDS keeps {what} contiguous along dim {order[0]} ({operand.shared}, order {list(order)}) and "
             f"the matrix instruction reads it along K (dim {k_dim}){feeding}")
    if origin.kind == "computed" and "loaded data" in origin.text:
        return cause, (f"the tile is {origin.text}: it keeps the layout of the load it came from, contiguous "
                       f"along dim {order[0]}. Load the source data K-contiguous (e.g. the packed weight stored "
                       f"as N x K and used through tl.trans), so the tile reaches LDS in the order the matrix "
                       f"instruction reads it")
    if origin.kind == "memory":
        fix = ("keep the operand K-contiguous in memory (A row-major, B as an N x K tensor used through "
               "tl.trans), so the tile reaches LDS in the order the matrix instruction reads it")
        if operand.amd and _element_bytes(operand.element) == 2:
            fix += " (gfx950 also has transposing LDS reads for 16-bit operands, ds_read_b64_tr_b16)"
        return cause, fix
    return cause, (f"the tile is {origin.text}, and its producer's layout ({operand.stored}) runs along dim "
                   f"{order[0]}: nothing in memory to reorder; produce it along K (dim {k_dim}) if the "
                   f"algorithm allows, so that it reaches LDS in the order the matrix instruction reads it")


def _transposed_write_cause(what: str, operand: _Operand, origin: Origin, held, major,
                            per_thread: int) -> tuple[str, str]:
    """A thread's run lies along another dimension than K, and LDS keeps the tile K-contiguous."""
    order, k_dim = operand.order, operand.k_dim
    state = origin.kind in ("state", "dot")
    k_held = held[k_dim]
    cause = (f"{what} is transposed on its way into LDS ({operand.stored} -> {operand.shared}, K-contiguous, "
             f"order {list(order)}): a thread holds {held[major]} elements along dim {major} and {k_held} along "
             f"K (dim {k_dim}), so it writes {per_thread} K element(s) at a time")
    if state:
        return cause, (f"the tile is {origin.text}: register state, not a tensor in memory, so no stride, "
                       f"tl.trans of an input or block size changes it. Its layout ({operand.stored}) is the "
                       f"matrix instruction's output layout, which gives a lane {k_held} element(s) along the next "
                       f"dot's K; nothing in the kernel widens these writes short of computing the state in the "
                       f"other orientation (its transpose, used through tl.trans) so that a lane's run lies "
                       f"along K")
    if origin.kind == "computed":
        return cause, (f"the tile is {origin.text}; it is laid out along dim {major} in registers "
                       f"({operand.stored}) and the dot reads it along K: nothing in memory to reorder. The "
                       f"width follows the producer's layout; compute it along K if the algorithm allows "
                       f"(e.g. its transpose, used through tl.trans)")
    layout = "A as a row-major M x K tensor" if operand.name == "A" else \
        "B as an N x K tensor used through tl.trans"
    fix = f"keep the operand K-contiguous in memory ({layout}), so no transpose is needed; where the tensor's " \
          f"layout is not the kernel's to choose (a layer's input), the transpose is the cost of reading it so"
    if operand.amd and k_held * _element_bytes(operand.element) < OPERAND_BYTES:
        fix += ("; or give each thread more K rows of the tile (a larger BLOCK_K, or fewer warps): with 8 bytes "
                "of K a thread writes ds_write_b64")
    else:
        fix += " (the matrix instruction then reads the tile as it was loaded)"
    return cause, fix


def _staged_cause(what: str, feeding: str, operand: _Operand, origin: Origin, per_thread: int, stored_alias,
                  shape: tuple) -> tuple[str, str]:
    """The tile goes through LDS as it is: a matrix instruction's output, or a layout that spreads it thin."""
    order = operand.order
    cause = (f"{what} goes through LDS ({operand.stored} -> {operand.shared}) {per_thread} element(s) at a "
             f"time{feeding}")
    if type(stored_alias).__name__ in ("AmdMfma", "AmdWmma", "NvidiaMma"):
        return cause, (f"the tile is {origin.text} in the matrix instruction's output layout ({operand.stored}), "
                       f"staged to become the next dot's {operand.name} operand: the width follows that layout, "
                       f"which no load or store hint changes; the round trip is the cost of chaining the two dots")
    spread = _spread_one_each(stored_alias, order, shape)
    if spread and origin.kind == "computed":
        d, threads = spread
        return cause, (f"the tile is {origin.text}, and its layout ({operand.stored}) already runs along dim {d}, "
                       f"the one LDS keeps contiguous, but spreads its {shape[d]} elements there over "
                       f"{threads} threads, one each: Triton chose it for the ops that produce the tile (for a "
                       f"dequantized operand, the loads of its packed data and its scales). A block longer than "
                       f"{threads} along dim {d}, or fewer warps, leaves each thread a run to write 8-16 bytes at a "
                       f"time")
    return cause, ("give each thread more contiguous elements of the tile along the dimension the LDS layout keeps "
                   "contiguous (for a tile computed in registers, such as a dequantized operand, produce it along "
                   "that dimension), so it moves 8-16 bytes at a time")


def _spread_one_each(layout, order, shape: tuple) -> tuple[int, int] | None:
    """(dim, threads) when a blocked layout gives a thread 1 element along the LDS-contiguous dim
    `order[0]` because the tile's extent there is no more than the threads laid along it."""
    if type(layout).__name__ != "Blocked" or not order:
        return None
    d = order[0]
    threads = layout.threads_per_warp[d] * layout.warps_per_cta[d]
    if layout.size_per_thread[d] == 1 and shape[d] <= threads:
        return d, threads
    return None


def _warps(layout) -> list:
    return list(getattr(layout, "warps_per_cta", None) or getattr(layout, "warpsPerCTA", None) or [])


def _shape(shape: tuple) -> str:
    return "x".join(str(d) for d in shape)


def _repeat(shape: tuple, source: tuple) -> int:
    full = 1
    for d in shape:
        full *= d if isinstance(d, int) else 1
    part = 1
    for d in source:
        part *= d if isinstance(d, int) else 1
    return full // max(part, 1)


_element_bytes = element_bytes
