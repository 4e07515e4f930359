"""Which TTGIR tile an LDS instruction of the ISA belongs to (IRS103).

An instruction and the TTGIR op it was lowered from carry the same source position, with the
whole inline chain: `; attn.py:31:13 @[ attn.py:76:16 ]` in AMDGCN, `.loc ... inlined_at` in
PTX, `loc(callsite(#a at #b))` in TTGIR. Matching on the outermost frame alone (the kernel's
call-site line) puts every LDS access of an inlined helper on every tile of that call: sage's
P tile (line 31 of `_attn_fwd_inner`) was named as the K tile that line 76 also stages. So the
match is on the site: the chain of the user's frames (Triton's own library frames left out),
innermost first, with the innermost column as a tie-break (gemlite's scales and B tile share a
line but not a column).

LLVM gives some instructions of a dot's operand tiles the dot's own position (torchao's int8 B
tile: the `ds_read_u8` / `st.shared.b8` carry the `tl.dot` line, not the load line the TTGIR
`local_load` has). An instruction whose site holds no LDS op but a dot is matched to the tiles
that feed that dot.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from irscope.ir.layouts.graph import BUFFER_VIEWS, layout_key

# Frames inside Triton's own library (tl.sum's combine in standard.py, tl.cdiv): not the user's site.
_LIBRARY = re.compile(r"/triton/(language|runtime|experimental|tools)/")
_DOTS = ("tt.dot", "ttng.warp_group_dot", "ttng.dot_async", "tt.dot_scaled")
# Ops a dot operand may pass through between its LDS read and the dot (a dequantized or upcast tile).
_PASS = ("arith.", "math.", "tt.fp_to_fp", "tt.bitcast", "ttg.convert_layout", "tt.trans", "tt.reshape")
_OP_INDEX = re.compile(r"opIdx\s*=\s*(\d)")
_PARENT = re.compile(r"parent\s*=\s*(#[\w.]+)")

Site = tuple[tuple[str, int], ...]  # (file basename, line) of the user's frames, innermost first


@dataclass(frozen=True)
class LdsOp:
    """One TTGIR op that moves a tile through LDS, as the rule reasons about it."""

    op: int
    kind: str  # "round_trip" (local_alloc / local_store / local_load) or "convert"
    directions: frozenset  # {"write"}, {"read"} or both (a convert_layout through LDS)
    element: str
    shape: tuple
    source: str  # the register layout written (a convert's source)
    shared: str  # the LDS layout (a convert: its target register layout)
    loaded: str  # the register layout read back
    site: Site
    column: int
    python: tuple[str, int] | None  # the innermost user frame: (path, line)
    trip: object = None  # the RoundTrip, for round-trip ops
    conversion: object = None  # the Conversion, for converts
    via_dot: int | None = None  # set when matched through the dot it feeds (the dot's op index)

    @property
    def key(self) -> tuple:
        """What one finding groups: the same tile staged in a prologue and in the loop is one."""
        return (self.kind, self.element, self.shape, self.source, self.shared, self.loaded)


@lru_cache(maxsize=1024)  # a kernel's frames name a handful of files, the same in every config
def _in_library(path: str) -> bool:
    return _LIBRARY.search(path) is not None


def _learn_library(op, library: set[str]) -> None:
    """Add the base names of the op's frames inside Triton's library to `library` (op_site's side effect)."""
    for f in op.location.frames if op.location else ():
        if _in_library(f.file):
            library.add(_base(f.file))


def op_site(op, library: set[str]) -> tuple[Site, int, tuple[str, int] | None]:
    frames = op.location.frames if op.location else ()
    user = [f for f in frames if not _in_library(f.file)]
    library.update(_base(f.file) for f in frames if _in_library(f.file))
    site = tuple((_base(f.file), f.line) for f in user)
    return site, (user[0].column if user else 0), ((user[0].file, user[0].line) if user else None)


def instruction_site(source, library: set[str]) -> tuple[Site, int, tuple[str, int] | None]:
    if source is None:
        return (), 0, None
    frames = [*source.inlined, source]
    user = [f for f in frames if not _in_library(f.file) and _base(f.file) not in library]
    site = tuple((_base(f.file), f.line) for f in user)
    return site, (user[0].column if user else 0), ((user[0].file, user[0].line) if user else None)


def _base(path: str) -> str:
    return path.rsplit("/", 1)[-1]


class TileIndex:
    """The TTGIR's LDS ops by site, and the operand tiles of each dot by the dot's site."""

    def __init__(self, facts, module) -> None:
        self.module = module
        self.library: set[str] = set()
        for op in module.ops:  # first pass: learn the library's file names
            _learn_library(op, self.library)
        # attribute() and site_of() per ISA instruction: many instructions share a site, width and operand
        self._attributed: dict[tuple, LdsOp | None] = {}
        self._sites: dict[object, tuple[Site, int, tuple[str, int] | None]] = {}
        self.by_site: dict[Site, list[LdsOp]] = {}
        self.by_op: dict[int, LdsOp] = {}
        for trip in facts.round_trips:
            for index in trip.writers + trip.readers:
                op = module.ops[index]
                if op.canonical_name == "ttg.local_alloc" and not op.operands:
                    continue  # an empty buffer: the writes are its local_stores
                direction = "write" if index in trip.writers else "read"
                self._add(LdsOp(index, "round_trip", frozenset({direction}), trip.element, trip.shape,
                                trip.stored_layout, trip.shared_layout, trip.loaded_layout,
                                *op_site(op, self.library), trip=trip))
        for move in facts.moves:
            op = module.ops[move.op]
            if move.op in self.by_op:
                continue
            if move.kind == "ttg.local_alloc" and op.operands:  # read in place by a wgmma: no local_load
                self._add(LdsOp(move.op, "round_trip", frozenset({"write"}), move.element, move.shape, move.source,
                                move.target, "", *op_site(op, self.library)))
            elif move.kind == "ttg.local_load":  # a buffer an async copy filled: no register writer
                self._add(LdsOp(move.op, "round_trip", frozenset({"read"}), move.element, move.shape, "", move.source,
                                move.target, *op_site(op, self.library)))
        for conv in facts.conversions:
            if conv.lowering == "shared_memory":
                op = module.ops[conv.op]
                self._add(LdsOp(conv.op, "convert", frozenset({"read", "write"}), conv.element, conv.shape,
                                conv.source, conv.target, conv.target, *op_site(op, self.library), conversion=conv))
        self.by_dot_site: dict[Site, list[LdsOp]] = {}
        self.dot_converts: dict[int, int] = {}  # convert_layout op -> the dot whose operand it prepares
        for dot, name in zip(module.ops, facts.op_names):
            if name in _DOTS:
                site = op_site(dot, self.library)[0]
                for vid in dot.operands[:2]:
                    for tile in self._feeding(vid, dot.index):
                        self.by_dot_site.setdefault(site, []).append(
                            LdsOp(**{**tile.__dict__, "via_dot": dot.index}))

    def _add(self, lds: LdsOp) -> None:
        self.by_op[lds.op] = lds
        self.by_site.setdefault(lds.site, []).append(lds)

    def _feeding(self, vid: int, dot: int) -> list[LdsOp]:
        """The LDS ops of the tile behind a dot operand: its round trip's writers and readers, or the
        local_alloc a wgmma reads."""
        module = self.module
        seen, frontier, found = set(), [vid], []
        while frontier:
            current = frontier.pop()
            if current in seen:
                continue
            seen.add(current)
            op = module.defining_op(current)
            if op is None:
                continue
            name = op.canonical_name
            if name == "ttg.convert_layout":
                self.dot_converts.setdefault(op.index, dot)
            if op.index in self.by_op and name in ("ttg.local_load", "ttg.local_alloc"):
                lds = self.by_op[op.index]
                trip = lds.trip
                ops = (trip.writers + trip.readers) if trip is not None else (op.index,)
                found += [self.by_op[i] for i in ops if i in self.by_op]
            elif name.startswith(_PASS) or name in _PASS or name in BUFFER_VIEWS:
                frontier.extend(op.operands[:1] if name in BUFFER_VIEWS else op.operands)
        return found

    def site_of(self, source) -> tuple[Site, int, tuple[str, int] | None]:
        """instruction_site of an ISA instruction's source position, once per distinct position (the
        library's names are all known once the index is built)."""
        if source not in self._sites:
            self._sites[source] = instruction_site(source, self.library)
        return self._sites[source]

    def attribute(self, direction: str, width: int, site: Site, column: int, fed: set[str] = frozenset()
                  ) -> LdsOp | None:
        """The tile an LDS access of `direction` and `width` bytes at `site` moves, if any; `fed` names
        the matrix operands ("A", "B") the access feeds, where the ISA's dataflow tells."""
        key = (direction, width, site, column, frozenset(fed))
        if key not in self._attributed:
            self._attributed[key] = self._attribute(direction, width, site, column, fed)
        return self._attributed[key]

    def _attribute(self, direction: str, width: int, site: Site, column: int, fed: set[str]) -> LdsOp | None:
        for table in (self.by_site, self.by_dot_site):
            found = [t for t in table.get(site, ()) if direction in t.directions
                     and element_bytes(t.element) <= max(width, 1)]
            if found:
                return max(found, key=lambda t: (self.isa_operand(t) in fed, t.column == column,
                                                 direction == "read" and self.read_across(t),
                                                 tile_bytes(t.element, t.shape)))
        return None

    def read_across(self, tile: LdsOp) -> bool:
        """A dot operand LDS keeps contiguous along another dimension than K: the one of a dot's two
        operands that narrow reads gather (PTX has no dataflow to tell which operand a read feeds)."""
        name = operand_index(tile.loaded)
        order = getattr(self.module.aliases.get(tile.shared), "order", None)
        if name is None or not order or len(tile.shape) != 2:
            return False
        return order[0] != (1 if name == "A" else 0)

    def isa_operand(self, tile: LdsOp) -> str | None:
        """The matrix instruction's operand ("A" = src0, "B" = src1) a dot-operand tile becomes: an MFMA
        layout with isTransposed computes C^T = B^T A^T, so Triton passes the dot's B as src0."""
        name = operand_index(tile.loaded)
        parent = _PARENT.search(tile.loaded or "")
        layout = self.module.aliases.get(parent.group(1)) if parent else None
        if name is not None and getattr(layout, "is_transposed", False):
            return "B" if name == "A" else "A"
        return name


def tile_bytes(element: str, shape: tuple) -> int:
    """A tile's bytes; 0 for a vector (one dimension above 1); a dimension the type does not give counts large."""
    dims = [d for d in shape if d != 1]
    if len(dims) < 2:
        return 0
    count = 1
    for d in dims:
        count *= d if isinstance(d, int) else 1 << 20
    return count * element_bytes(element)


@lru_cache(maxsize=256)  # a few element type names
def element_bytes(element: str) -> int:
    """bf16 -> 2, f8E4M3FN -> 1 (the width is the first number: fp8 names carry more digits), i1 -> 1."""
    match = re.match(r"[a-zA-Z]*(\d+)", element)
    return max(1, int(match.group(1)) // 8) if match else 2


def operand_index(layout: str) -> str | None:
    """"A" or "B" for a dot-operand layout as written, else None."""
    match = _OP_INDEX.search(layout or "")
    return None if match is None else "A" if match.group(1) == "0" else "B"


__all__ = ["LdsOp", "TileIndex", "element_bytes", "instruction_site", "layout_key", "op_site", "operand_index",
           "tile_bytes"]
