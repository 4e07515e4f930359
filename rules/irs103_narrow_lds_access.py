"""IRS103 narrow-lds-access."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from irscope import isa
from irscope.rule import Rule
from irscope.rules.irs202_barriers_per_iteration import kernel_loops

# Narrower than this is reported: 8 bytes is the K group of 4 fp16/bf16 that one lane feeds
# an MFMA (v_mfma_f32_32x32x8_f16, 16x16x16_f16: a 2-VGPR operand), and the vector of
# Triton's swizzled LDS layouts for them (vec = 4).
OPERAND_BYTES = 8
# Below a dword a lane leaves part of its 4-byte LDS bank slot unused: bandwidth is lost,
# not just instructions. In a loop that is a warning.
DWORD = 4
_OP_INDEX = re.compile(r"opIdx\s*=\s*(\d)")


@dataclass
class _Group:
    direction: str  # "read" or "write"
    python_line: int
    width: int
    instructions: list = field(default_factory=list)


class NarrowLdsAccess(Rule):
    """LDS (shared memory) reads and writes narrower than 8 bytes per lane on a tile.

    ## What it does
    Finds LDS accesses of less than 8 bytes per lane (`ds_read_u16`, `ds_write_b16`,
    `ds_write_b32`, `ds_read2_b32`, gfx11/12 `ds_load_u16` / `ds_store_b32`; PTX
    `ld.shared` / `st.shared` of `.b16`, `.b32`, `.v2.b16`) on the tiles Triton moves
    through LDS: `ttg.local_alloc` / `local_store` / `local_load` and `convert_layout`s
    lowered through shared memory, matched by Python line. It counts them per iteration of
    the innermost loop they sit in (and per K step when LLVM unrolled the loop) and outside
    loops, grouped by Python line, width and direction, and says why they are narrow: the
    tile arrived from narrow global loads, the dot operand is read along a dimension the LDS
    layout does not keep contiguous, the tile is transposed on its way in, or a layout
    conversion. `ds_read2*`/`ds_write2*` count by their per-access width.

    Not reported: 8-byte accesses (`ds_read_b64`, `ds_read2st64_b64`, `ds_write_b64`, and
    gfx950's transposing `ds_read_b64_tr_b16`), which are the natural width of an fp16 MFMA
    operand on CDNA2/3: each lane holds 4 elements of K in 2 VGPRs, which one `ds_read_b64`
    fills. `ldmatrix`/`stmatrix` (16 bytes per thread at `.x4`), `cp.async` and TMA copies
    are not LDS reads or writes of registers. Reduction scratch (the one value per warp
    `tl.sum` / `tl.max` exchange) and the TMA descriptors Triton writes to shared memory
    are not tiles and are skipped.

    Accesses below 4 bytes inside a loop are warnings: a lane then uses part of its 4-byte
    LDS bank slot, so they cost LDS bandwidth as well as 4 to 8 times the instructions.
    4-byte accesses, and anything outside loops, are info: a dword access still uses the
    full bank width, and costs instructions (and the packing VALU work) only.

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
    Fix narrow global loads first (IRS101: 16-divisible strides, `tl.multiple_of`): the
    tile is written to LDS as wide as it was loaded. Keep dot operands K-contiguous in
    memory where you can (A row-major, B as an N x K tensor used through `tl.trans` or `.T`,
    as fixture `trans_dot` does: `ds_write_b128` and `ds_read2_b64`), so the tile reaches
    LDS in the order the matrix instruction reads it; a bigger tile per thread (BLOCK_K,
    or fewer warps) lets a transposing write pack 4 elements instead of 2. Newer Triton
    versions move the transpose to the write side (3.6 on gfx942) or use transposing reads
    (gfx950).
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
        tiles = _tile_lines(facts)
        findings = []
        for program in ctx.programs:
            if program.isa not in ("amdgcn", "ptx"):
                continue
            for fn in program.functions:
                groups = _narrow_groups(fn, tiles, facts)
                if not groups:
                    continue
                loops = {loop.header: loop for loop in kernel_loops(ctx, program, fn)}
                graph = ctx.graph(program, fn)
                feeds = _matrix_feeds(fn) if program.isa == "amdgcn" else {}
                threads = (module.num_warps or 0) * (module.threads_per_warp or 0)
                for group in groups:
                    if threads and tiles[group.python_line] // threads <= group.width:
                        continue  # each thread's whole share of the tile in one access: nothing wider to do
                    operand = _dot_operand(facts, module, group.python_line, group.direction)
                    if operand is not None and _element_bytes(operand.element) >= DWORD and group.width >= DWORD:
                        continue  # 32-bit operands (f32, tf32 matrix instructions) move 4 bytes a lane by nature
                    findings.append(self._finding(ctx, program, fn, graph, loops, feeds, facts, module, group))
        return findings

    def _finding(self, ctx, program, fn, graph, loops, feeds, facts, module, group: _Group):
        per_loop: Counter = Counter()
        conditional: Counter = Counter()
        outside = 0
        for ins in group.instructions:
            loop = graph.loop_of(ins.index)
            if loop is None:
                outside += 1
                continue
            per_loop[loop.header] += 1
            if fn.block_of(ins.index).index not in loops[loop.header].every_iteration:
                conditional[loop.header] += 1
        opcodes = Counter(i.opcode for i in group.instructions)
        what = ", ".join(op for op, _ in opcodes.most_common())
        parts = []
        for header, n in per_loop.most_common():
            loop = loops[header]
            where = f"the loop at {loop.python_name}:{loop.python_line}" if loop.python_line else "a loop"
            text = f"{n} per iteration of {where}"
            step = loop.per_step(n)
            if loop.unroll and loop.unroll > 1 and step is not None:
                text += f" (unrolled {loop.unroll}x: {step} per K step)"
            if conditional[header]:
                text += f" ({conditional[header]} of them on a path not every iteration takes)"
            parts.append(text)
        if outside:
            parts.append(f"{outside} outside loops")
        in_loop = sum(per_loop.values())
        source = group.instructions[0].source
        name = source.file.rsplit("/", 1)[-1]
        kind = "reads" if group.direction == "read" else "writes"
        message = (f"LDS {kind} of {group.width} B per lane ({what}) from {name}:{group.python_line}: "
                   f"{'; '.join(parts)}")
        cause, fix = _cause(fn, feeds, facts, module, group, None if in_loop and outside else bool(in_loop))
        message += f"; {cause}"
        severity = "warning" if in_loop and group.width < DWORD else "info"
        first_loop = loops[per_loop.most_common(1)[0][0]] if per_loop else None
        evidence = {"width_bytes": group.width, "count": len(group.instructions), "in_loop": in_loop,
                    "outside_loops": outside}
        if first_loop is not None:
            evidence["per_iteration"] = per_loop[first_loop.header]
            if first_loop.unroll:
                evidence["unroll"] = first_loop.unroll
        return self.finding(ctx, stage=program.isa, path=program.path, lines=[i.line for i in group.instructions],
                            python=(source.file, group.python_line), severity=severity, message=message, fix=fix,
                            evidence=evidence)


# A vector (one dimension above 1) or a tile of at most this many bytes moves through LDS once
# or twice per lane: a reduction's result, a row's statistics, a block's scales. The real-world
# ledger found every such finding to cost nothing (fixtures/real_world/ledger/IRS103.jsonl).
SMALL_TILE_BYTES = 2048


def _tile_lines(facts) -> dict[int, int]:
    """Python line -> bytes of the largest tile (two dimensions, over 2 KiB) the TTGIR moves through LDS there."""
    lines: dict[int, int] = {}
    moved = [(m.python_line, m.element, m.shape) for m in facts.moves
             if m.kind in ("ttg.local_alloc", "ttg.local_store", "ttg.local_load")]
    moved += [(c.python_line, c.element, c.shape) for c in facts.conversions if c.lowering == "shared_memory"]
    for line, element, shape in moved:
        size = _tile_bytes(element, shape)
        if line and size > SMALL_TILE_BYTES:
            lines[line] = max(lines.get(line, 0), size)
    return lines


def _tile_bytes(element: str, shape: tuple) -> int:
    """A tile's bytes; 0 for a vector (one dimension above 1); a dimension the type does not give counts large."""
    dims = [d for d in shape if d != 1]
    if len(dims) < 2:
        return 0
    count = 1
    for d in dims:
        count *= d if isinstance(d, int) else 1 << 20
    return count * _element_bytes(element)


def _narrow_groups(fn, tiles: dict[int, int], facts) -> list[_Group]:
    user = (facts.user_file or "").rsplit("/", 1)[-1]
    groups: dict[tuple[str, int, int], _Group] = {}
    for ins in fn.instructions:
        mem = ins.memory
        if ins.kind not in (isa.SHARED_LOAD, isa.SHARED_STORE) or mem is None or mem.space not in ("lds", "shared"):
            continue
        if not mem.width_bytes or mem.width_bytes >= OPERAND_BYTES:
            continue
        if ins.opcode.startswith(("ldmatrix", "stmatrix")) or "_tr_" in ins.opcode:
            continue
        src = ins.source
        if src is None or src.line not in tiles or src.file.rsplit("/", 1)[-1] != user:
            continue
        direction = "read" if ins.kind == isa.SHARED_LOAD else "write"
        key = (direction, src.line, mem.width_bytes)
        groups.setdefault(key, _Group(direction, src.line, mem.width_bytes)).instructions.append(ins)
    return sorted(groups.values(), key=lambda g: g.instructions[0].line)


def _matrix_feeds(fn) -> dict[int, set[tuple[isa.Instruction, str]]]:
    """LDS read index -> the matrix instructions it feeds, with the operand ("A"/"B")."""
    from irscope.amdgcn_dataflow import matrix_feeds

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


def _dot_operand(facts, module, line: int, direction: str = "read", in_loop: bool | None = None,
                 operand: str | None = None) -> _Operand | None:
    """The dot operand written to or read from LDS at a Python line: a round trip that is read
    back as a dot operand (MFMA, mma), or a ttg.local_alloc that a wgmma reads in place.

    One line may stage both operands (`tl.dot(a, b)`, each tile through LDS): the trip whose
    operand the ISA feeds (`operand`, "A"/"B"), and whose LDS writes or reads sit where the
    instructions do (`in_loop`: True if all are in loops, False if none is, None if some are),
    is the one meant; ties keep the TTGIR's order."""
    trips = [t for t in facts.round_trips if t.feeds_dot and line in t.python_lines]
    if trips:
        def fit(trip) -> tuple[bool, bool]:
            index = _OP_INDEX.search(trip.loaded_layout)
            name = None if index is None else "A" if index.group(1) == "0" else "B"
            depths = [module.ops[i].loop_depth for i in (trip.writers if direction == "write" else trip.readers)]
            placed = in_loop is not None and any((depth > 0) == in_loop for depth in depths)
            return operand is not None and name == operand, placed

        trip = max(trips, key=fit)  # max keeps the first of equals
        index = _OP_INDEX.search(trip.loaded_layout)
        return _operand(module, index.group(1) if index else None, len(trip.shape), trip.stored_layout,
                        trip.shared_layout, trip.element)
    from irscope.layout_graph import layout_key
    from irscope.source_map import user_line

    values = module.values
    for dot in module.ops_named("ttng.warp_group_dot", "ttng.dot_async", "tt.dot"):
        for position, vid in enumerate(dot.operands[:2]):
            alloc = module.defining_op(vid)
            if alloc is None or alloc.canonical_name != "ttg.local_alloc" or not alloc.operands:
                continue
            if user_line(module, alloc) != line:
                continue
            stored, shared = values[alloc.operands[0]].type, values[vid].type
            return _operand(module, str(position), len(getattr(shared, "shape", ())), layout_key(stored) or "?",
                            layout_key(shared) or "?", str(getattr(shared, "element", "")))
    return None


def _operand(module, op_index: str | None, rank: int, stored: str, shared: str, element: str) -> _Operand:
    k_dim = None if op_index is None or rank < 2 else (rank - 1 if op_index == "0" else rank - 2)
    order = getattr(module.aliases.get(shared), "order", None)
    return _Operand("A" if op_index == "0" else "B", k_dim, stored, shared, tuple(order) if order else None, element)


def _cause(fn, feeds, facts, module, group: _Group, in_loop: bool | None = None) -> tuple[str, str]:
    """Why the accesses are narrow, and the fix that goes with it."""
    loads = [i for i in fn.instructions if i.kind == isa.GLOBAL_LOAD and i.memory and i.memory.width_bytes
             and i.source is not None and i.source.line == group.python_line]
    if group.direction == "write" and loads and max(i.memory.width_bytes for i in loads) <= group.width:
        widest = max(loads, key=lambda i: i.memory.width_bytes)
        return (f"the tile arrives from {widest.memory.width_bytes}-byte global loads ({widest.opcode}) of the "
                f"same line and is written as loaded (see IRS101)",
                "make the global loads wide first (IRS101: 16-divisible strides, unit strides as constexpr, "
                "tl.multiple_of / tl.max_contiguous); the tile is then written to LDS 8-16 bytes at a time")
    fed = sorted({(m.opcode, name, m.args[1] if name == "A" else m.args[2])
                  for i in group.instructions for m, name in feeds.get(i.index, ()) if len(m.args) > 2})
    fed_operands = {name for _, name, _ in fed}
    operand = _dot_operand(facts, module, group.python_line, group.direction, in_loop,
                           fed_operands.pop() if len(fed_operands) == 1 else None)
    if operand is not None:
        feeding = ""
        if fed:
            from irscope.parsers.amdgcn_opcodes import operand as typed

            opcode, _, token = fed[0]
            feeding = f"; they feed {opcode}, whose operand is {typed(token).count * 4} B per lane"
        order, k_dim = operand.order, operand.k_dim
        if order and k_dim is not None and order[0] != k_dim and group.direction == "read":
            return (f"LDS keeps the dot's {operand.name} tile contiguous along dim {order[0]} ({operand.shared}, "
                    f"order {list(order)}) and the matrix instruction reads it along K (dim {k_dim}){feeding}",
                    "keep the operand K-contiguous in memory (A row-major, B as an N x K tensor used through "
                    "tl.trans), so the tile reaches LDS in the order the matrix instruction reads it; newer "
                    "Triton versions transpose on the LDS write instead (3.6 on gfx942), and gfx950 has "
                    "transposing LDS reads (ds_read_b64_tr_b16)")
        per_thread = group.width // _element_bytes(operand.element)
        if order and k_dim is not None and order[0] == k_dim and group.direction == "write":
            return (f"the dot's {operand.name} tile is transposed on its way into LDS ({operand.stored} -> "
                    f"{operand.shared}, K-contiguous, order {list(order)}): each thread packs the {per_thread} "
                    f"K elements it holds",
                    "keep the operand K-contiguous in memory (B as an N x K tensor used through tl.trans), so "
                    "no transpose is needed; or give each thread more K rows of the tile (a larger BLOCK_K, or "
                    "fewer warps): with 4 K rows a thread writes 8 bytes (ds_write_b64)")
        return (f"the dot's {operand.name} tile goes through LDS ({operand.stored} -> {operand.shared}) "
                f"{per_thread} elements at a time{feeding}",
                "give each thread more contiguous elements of the tile along the dimension the LDS layout keeps "
                "contiguous (for a tile computed in registers, such as a dequantized operand, produce it along "
                "that dimension), so it moves 8-16 bytes at a time")
    conv = next((c for c in facts.conversions
                 if c.lowering == "shared_memory" and c.python_line == group.python_line), None)
    if conv is not None:
        text = f"a convert_layout through LDS ({conv.source} -> {conv.target}, .ttgir line {conv.line})"
        source = module.aliases.get(conv.source)
        if type(source).__name__ in ("AmdMfma", "AmdWmma", "NvidiaMma"):
            return (f"{text} takes the dot accumulator to the layout of the op at this line, once per tile",
                    "this epilogue conversion runs once per tile, after the K loop, and its width is the "
                    "compiler's choice: Triton 3.6 writes it 16 B per lane (st.shared.v4.b32 in the sm_90 GEMM, "
                    "ds_write_b128 in the gfx942 split-K GEMM)")
        return (f"{text} moves the tile {group.width} B at a time",
                "find why the op at this line wants another layout: a store whose pointers lost their "
                "contiguity facts (IRS102) gets a 1-element layout, and restoring them with tl.multiple_of / "
                "tl.max_contiguous removes the conversion")
    return ("the tile goes through LDS", "keep the tile contiguous along the dimension its consumer reads")


def _element_bytes(element: str) -> int:
    """bf16 -> 2, f8E4M3FN -> 1 (the width is the first number: fp8 names carry more digits), i1 -> 1."""
    match = re.match(r"[a-zA-Z]*(\d+)", element)
    return max(1, int(match.group(1)) // 8) if match else 2
