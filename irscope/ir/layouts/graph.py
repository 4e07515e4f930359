"""Where values change layout and memory: the layout-conversion graph and its facts.

Nodes are layouts as the TTGIR writes them (`#blocked`, `#ttg.dot_op<{opIdx = 0, ...}>`,
`#shared`) plus `global` for global memory. An edge is one kind of op moving values of
one element type and shape from one node to another: `ttg.convert_layout`,
`ttg.local_alloc`/`local_store` (registers to LDS), `ttg.local_load` (LDS to registers),
`ttg.memdesc_trans`/`tt.trans`, the copies from global memory into LDS, and the global
loads and stores at the graph's edges. Each edge counts its ops and keeps their IR and
Python lines and how deeply they sit in loops.

The facts rules read from it:
- `round_trips`: a register value stored to LDS and read back into registers (the
  ROCm guide's transpose pattern: blocked -> shared -> trans -> blocked -> dot_op);
- `conversions`: each convert_layout, with whether it goes through LDS, stays in
  registers, uses warp shuffles, or cannot be decided from the layouts;
- `epilogue_converts`: a convert_layout whose result is (after elementwise ops) stored.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from irscope.ir.types import MemDescType, PointerType, TensorType, element_of, encoding_of
from irscope.ir.mlir import MlirModule, Op
from irscope.ir.opgraph import value_flow

if TYPE_CHECKING:
    import networkx as nx

GLOBAL = "global"
# Ops that view a buffer without copying it: the buffer behind them is their operand's.
BUFFER_VIEWS = ("ttg.memdesc_index", "ttg.memdesc_subview", "ttg.memdesc_trans", "ttg.memdesc_reshape",
                "ttg.memdesc_reinterpret", "ttg.memdesc_subslice")
GLOBAL_TO_LDS = frozenset({"ttg.async_copy_global_to_local", "amdg.buffer_load_to_local",
                           "ttng.async_tma_copy_global_to_local", "ttng.async_copy_global_to_local"})
GLOBAL_LOADS = frozenset({"tt.load", "amdg.buffer_load", "tt.descriptor_load", "tt.experimental_descriptor_load"})
GLOBAL_STORES = frozenset({"tt.store", "amdg.buffer_store", "tt.descriptor_store"})
# The ops _record turns into moves or conversions.
_RECORDED = frozenset({"ttg.convert_layout", "ttg.local_alloc", "ttg.local_store", "ttg.local_load",
                       "ttg.memdesc_trans", "tt.trans"}) | GLOBAL_TO_LDS | GLOBAL_LOADS | GLOBAL_STORES
# Elementwise steps between a convert and the store it feeds (the epilogue case).
_ELEMENTWISE_PREFIXES = ("arith.", "math.")
_ELEMENTWISE_OPS = frozenset({"tt.fp_to_fp", "tt.bitcast", "tt.precise_sqrt", "tt.precise_divf"})


def layout_key(ty) -> Optional[str]:
    """The node a tensor or buffer type sits on: its encoding as written."""
    if isinstance(ty, (TensorType, MemDescType)):
        return ty.encoding_ref
    return None


@dataclass(frozen=True)
class Move:
    """One op moving a value between two nodes of the graph."""

    op: int  # op index
    kind: str  # canonical op name
    source: str
    target: str
    element: str
    shape: tuple
    line: int  # IR line
    python_line: Optional[int]
    loop_depth: int


@dataclass(frozen=True)
class Conversion:
    """A convert_layout and how Triton lowers it, decided from the two layouts."""

    op: int
    line: int
    python_line: Optional[int]
    source: str
    target: str
    shape: tuple
    element: str
    lowering: str  # noop | registers | warp_shuffle | shared_memory | unknown
    reason: str
    loop_depth: int


@dataclass(frozen=True)
class RoundTrip:
    """Register values stored to an LDS buffer and read back into registers.

    One per (buffer, layout written, layout read): a pipelined loop's prologue and
    steady-state stores into the same buffer are one round trip with several writers.
    """

    buffer: int  # the op that allocates the LDS buffer (ttg.local_alloc)
    stored_layout: str
    shared_layout: str
    loaded_layout: str
    element: str
    shape: tuple
    writers: tuple[int, ...]  # local_store / local_alloc ops
    readers: tuple[int, ...]  # local_load ops
    through: tuple[str, ...]  # buffer views on the way, e.g. ("ttg.memdesc_trans",)
    loop_depth: int  # deepest loop among writers and readers
    python_lines: tuple[int, ...]
    feeds_dot: bool  # read back as a dot operand: staging, the usual GEMM shape
    from_global_load: bool  # the stored value comes straight from a global load

    @property
    def layout_change(self) -> bool:
        return self.stored_layout != self.loaded_layout


@dataclass(frozen=True)
class EpilogueConvert:
    convert: int
    store: int
    source: str
    target: str
    lowering: str
    python_line: Optional[int]


class LayoutFacts:
    """Everything about layout movement in one module; build once, read by many rules."""

    def __init__(self, module: MlirModule, triton_version: Optional[str] = None,
                 user_file: Optional[str] = None) -> None:
        from irscope.ir.source_map import kernel_file, user_line

        self.module = module
        self.triton_version = triton_version
        user_file = user_file or kernel_file(module)  # once, not per op
        self.user_file = user_file  # the kernel's own source file, for the rules' Python lines
        self._user_line = lambda op: user_line(module, op, user_file)
        self.moves: list[Move] = []
        self.conversions: list[Conversion] = []
        self._layouts: dict[str, object] = {}
        # Each op's canonical name once, for the walks over the ops here and in the rules that read the facts.
        self.op_names: tuple[str, ...] = tuple(op.canonical_name for op in module.ops)
        for op, name in zip(module.ops, self.op_names):
            if name in _RECORDED:  # the types of the others' values are never looked at
                self._record(op, name)
        self.round_trips = self._round_trips()
        self.epilogue_converts = self._epilogue_converts()

    # -- moves -------------------------------------------------------------------------
    def _type(self, vid: int):
        return self.module.values[vid].type

    def _add(self, op: Op, source_ty, target_ty, source: Optional[str] = None, target: Optional[str] = None) -> None:
        source = source or layout_key(source_ty)
        target = target or layout_key(target_ty)
        if source is None or target is None:
            return
        for ty in (source_ty, target_ty):
            enc = encoding_of(ty)
            key = layout_key(ty)
            if enc is not None and key is not None:
                self._layouts.setdefault(key, enc)
        shaped = target_ty if isinstance(target_ty, (TensorType, MemDescType)) else source_ty
        self.moves.append(Move(op.index, op.canonical_name, source, target, str(element_of(shaped)),
                               tuple(getattr(shaped, "shape", ())), op.line, self._user_line(op), op.loop_depth))

    def _record(self, op: Op, name: str) -> None:
        operands = [self._type(v) for v in op.operands]
        results = [self._type(v) for v in op.results]
        if name == "ttg.convert_layout" and operands and results:
            self._add(op, operands[0], results[0])
            self._conversion(op, operands[0], results[0])
        elif name in ("ttg.local_alloc",) and operands and results:
            self._add(op, operands[0], results[0])
        elif name == "ttg.local_store" and len(operands) >= 2:
            self._add(op, operands[0], operands[1])
        elif name == "ttg.local_load" and operands and results:
            self._add(op, operands[0], results[0])
        elif name in ("ttg.memdesc_trans", "tt.trans") and operands and results:
            self._add(op, operands[0], results[0])
        elif name in GLOBAL_TO_LDS and len(operands) >= 2:
            self._add(op, None, operands[1], source=GLOBAL)
        elif name in GLOBAL_LOADS and results:
            self._add(op, None, results[0], source=GLOBAL)
        elif name in GLOBAL_STORES and operands:
            value = next((t for t in operands if isinstance(t, TensorType)
                          and not _is_pointer_tensor(t)), None)
            if value is not None:
                self._add(op, value, None, target=GLOBAL)

    def _conversion(self, op: Op, src_ty, dst_ty) -> None:
        src, dst = encoding_of(src_ty), encoding_of(dst_ty)
        shape = tuple(getattr(dst_ty, "shape", ()))
        if src is None or dst is None:
            lowering, reason = "unknown", "a side has no layout encoding"
        else:
            from irscope.ir.layouts.conversion import classify_conversion

            decided = classify_conversion(src, dst, shape, self.triton_version, str(element_of(dst_ty)))
            lowering, reason = decided.kind, decided.reason
        self.conversions.append(Conversion(op.index, op.line, self._user_line(op), layout_key(src_ty) or "?",
                                           layout_key(dst_ty) or "?", shape, str(element_of(dst_ty)), lowering,
                                           reason, op.loop_depth))

    # -- the graph ---------------------------------------------------------------------
    def graph(self) -> nx.MultiDiGraph:
        import networkx as nx  # here: a scan that never draws the graph (each one) does not pay its import

        graph = nx.MultiDiGraph()
        graph.add_node(GLOBAL, memory="global", layout=None)
        grouped: dict[tuple, list[Move]] = defaultdict(list)
        for move in self.moves:
            grouped[(move.source, move.target, move.kind, move.element, move.shape)].append(move)
        for (source, target, kind, element, shape), moves in grouped.items():
            for node in (source, target):
                if node not in graph:
                    layout = self._layouts.get(node)
                    graph.add_node(node, layout=layout, memory=_memory_of(layout))
            graph.add_edge(source, target, key=(kind, element, shape), op=kind, count=len(moves), element=element,
                           shape=shape, ops=tuple(m.op for m in moves), ir_lines=tuple(m.line for m in moves),
                           python_lines=tuple(sorted({m.python_line for m in moves if m.python_line})),
                           in_loop=any(m.loop_depth for m in moves), loop_depth=max(m.loop_depth for m in moves))
        return graph

    # -- round trips -------------------------------------------------------------------
    def _buffers(self, vid: int) -> frozenset[int]:
        return value_flow(self.module).origins(vid, BUFFER_VIEWS)

    def _views_between(self, vid: int) -> tuple[str, ...]:
        """Buffer views that change how a buffer is read (e.g. memdesc_trans), between a read and its buffer."""
        crossed = value_flow(self.module).crossed(vid, BUFFER_VIEWS)
        return tuple(v for v in crossed if v not in ("ttg.memdesc_index", "ttg.memdesc_subview"))

    def _round_trips(self) -> list[RoundTrip]:
        module = self.module
        writes: dict[int, list[tuple[Op, int, int]]] = defaultdict(list)  # buffer -> (op, value, memdesc)
        reads: dict[int, list[Op]] = defaultdict(list)
        for op, name in zip(module.ops, self.op_names):
            if name == "ttg.local_store" and len(op.operands) >= 2:
                for buf in self._buffers(op.operands[1]):
                    writes[buf].append((op, op.operands[0], op.operands[1]))
            elif name == "ttg.local_alloc" and op.operands and op.results:
                writes[op.index].append((op, op.operands[0], op.results[0]))
            elif name == "ttg.local_load" and op.operands:
                for buf in self._buffers(op.operands[0]):
                    reads[buf].append(op)
        trips: dict[tuple, dict] = {}
        for buf, writers in writes.items():
            for writer, value, memdesc in writers:
                stored_ty = self._type(value)
                if not isinstance(stored_ty, TensorType):
                    continue
                for reader in reads.get(buf, ()):
                    loaded_ty = self._type(reader.results[0]) if reader.results else None
                    key = (buf, layout_key(stored_ty), layout_key(self._type(memdesc)), layout_key(loaded_ty))
                    entry = trips.setdefault(key, {"writers": set(), "readers": set(), "through": set(),
                                                   "element": str(element_of(stored_ty)),
                                                   "shape": tuple(stored_ty.shape), "from_global": False})
                    entry["writers"].add(writer.index)
                    entry["readers"].add(reader.index)
                    entry["through"].update(self._views_between(reader.operands[0]))
                    entry["from_global"] |= self._from_global_load(value)
        out = []
        for (buf, stored, shared, loaded), e in trips.items():
            ops = [module.ops[i] for i in sorted(e["writers"] | e["readers"])]
            lines = tuple(sorted({ln for ln in (self._user_line(o) for o in ops) if ln}))
            loaded_layout = self._layouts.get(loaded)
            out.append(RoundTrip(buf, stored or "?", shared or "?", loaded or "?", e["element"], e["shape"],
                                 tuple(sorted(e["writers"])), tuple(sorted(e["readers"])), tuple(sorted(e["through"])),
                                 max(o.loop_depth for o in ops), lines, _is_dot_operand(loaded_layout),
                                 e["from_global"]))
        return sorted(out, key=lambda t: (module.ops[t.buffer].line, t.loaded_layout))

    def _from_global_load(self, vid: int) -> bool:
        return any(self.module.ops[i].canonical_name in GLOBAL_LOADS for i in value_flow(self.module).origins(vid))

    # -- epilogue ----------------------------------------------------------------------
    def _epilogue_converts(self) -> list[EpilogueConvert]:
        by_op = {c.op: c for c in self.conversions}
        out = []
        flow = value_flow(self.module)
        for op, name in zip(self.module.ops, self.op_names):
            if name not in GLOBAL_STORES:
                continue
            for vid in op.operands:
                ty = self._type(vid)
                if not isinstance(ty, TensorType) or _is_pointer_tensor(ty):
                    continue
                for convert in self._converts_feeding(vid, flow, depth=6):
                    c = by_op[convert]
                    out.append(EpilogueConvert(convert, op.index, c.source, c.target, c.lowering, c.python_line))
        return out

    def _converts_feeding(self, vid: int, flow, depth: int) -> list[int]:
        found, frontier, seen = [], [vid], set()
        for _ in range(depth):
            nxt = []
            for current in frontier:
                if current in seen:
                    continue
                seen.add(current)
                op = flow.defining(current)
                if op is None:
                    continue
                name = op.canonical_name
                if name == "ttg.convert_layout":
                    found.append(op.index)
                elif name.startswith(_ELEMENTWISE_PREFIXES) or name in _ELEMENTWISE_OPS:
                    nxt.extend(v for v in op.operands if isinstance(self._type(v), TensorType))
            frontier = nxt
        return sorted(set(found))


def _is_pointer_tensor(ty: TensorType) -> bool:
    return isinstance(ty.element, PointerType)


def _is_dot_operand(layout) -> bool:
    return getattr(layout, "name", None) == "dot_op"


def _memory_of(layout) -> str:
    if layout is None:
        return "unknown"
    if getattr(layout, "is_shared", False):
        return "shared"
    return "registers"
