"""How wide each global access could be, from the TTGIR layout, and how wide the ISA made it.

Triton vectorizes a global load or store up to the elements a thread holds contiguously in
the value's layout (at most 16 bytes), and then only as far as the pointer's known
alignment and contiguity allow (tt.divisibility, tl.multiple_of, tl.max_contiguous). So an
ISA access narrower than what the layout gives a thread points at missing alignment facts;
one as wide as the layout allows is the layout's limit. The one layout limit reported is a
store straight from an MMA accumulator whose runs lie across the memory-contiguous dimension
(one element a lane at a time, where the transposed tile would store whole runs). Copies into
LDS are held to their hardware's limit (MAX_VECTOR_BYTES, or a dword a lane on AMD before gfx950).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from irscope.ir.types import PointerType, TensorType
from irscope.ir.mlir import MlirModule
from irscope.ir.pointer_strides import RUNTIME, PointerStrides, Stride, address_strides

MAX_VECTOR_BYTES = 16


MATRIX_LAYOUTS = ("AmdMfma", "AmdWmma", "NvidiaMma", "DotOperand")
ACCUMULATOR_LAYOUTS = ("AmdMfma", "AmdWmma", "NvidiaMma")

# The TTGIR ops that touch global memory, by what can be said of their width (names canonical:
# 3.0-3.2's triton_gpu./triton_nvidia_gpu./amdgpu. spellings read as ttg./ttng./amdg.). Each op's
# per-thread tensor carries the layout, its address operand the strides (irscope/ir/pointer_strides.py).
#   register loads and stores: a load's result; `tt.store %ptr, %value`, `amdg.buffer_store %value,
#     %base[%offsets]`. Triton 3.5+ lowers most gfx942 loads and stores to the buffer forms.
#   copies into LDS with no register (pipelined loads): `ttg.async_copy_global_to_local %ptrs, %dst`
#     (PTX cp.async of 4/8/16 B; AMD global_load_lds_*), `amdg.buffer_load_to_local %base[%offsets]`
#     (buffer_load_* ... lds): per-lane widths like a load's, held by the address tensor.
#   TMA (and gfx1250's TDM) copies: one thread moves a whole box (cp.async.bulk.tensor), no per-lane
#     width, never narrow; read so that their lines are known.
#   atomics: widths fixed by the hardware's atomic forms (gfx942: 4 B, pk_add_f16/bf16 packs two
#     halves; sm_90: red .v8.f16), so no width finding; a line holding one is left out of the width
#     join, because its compare-and-swap loop issues plain loads (global_load_dword) of its own.
LOADS = {"tt.load": None, "amdg.buffer_load": None}  # the tensor is the result
STORES = {"tt.store": 1, "amdg.buffer_store": 0}
COPIES = {"ttg.async_copy_global_to_local": 0, "amdg.buffer_load_to_local": 1}  # the address tensor
TMA = frozenset({
    "tt.descriptor_load", "tt.descriptor_store", "tt.descriptor_gather", "tt.descriptor_scatter",
    "tt.descriptor_reduce", "tt.experimental_descriptor_load", "tt.experimental_descriptor_store",
    "ttng.async_tma_copy_global_to_local", "ttng.async_tma_copy_local_to_global", "ttng.async_tma_gather",
    "ttng.async_tma_scatter", "ttng.async_tma_reduce", "amdg.async_tdm_copy_global_to_local",
    "amdg.async_tdm_copy_local_to_global",
})
ATOMICS = frozenset({"tt.atomic_rmw", "tt.atomic_cas", "amdg.buffer_atomic_rmw", "amdg.buffer_atomic_cas"})
_ACCESS_OPS = frozenset({*LOADS, *STORES, *COPIES, *TMA, *ATOMICS})  # what ir_accesses reads

# What each family of ops is joined with in the ISA (irscope/isa/model.py kinds).
REGISTER, COPY = "register", "copy"


@dataclass(frozen=True)
class IrAccess:
    """One TTGIR op that reads or writes global memory, as the TTGIR has it."""

    op: str  # the TTGIR op: "tt.load", "amdg.buffer_store", "ttg.async_copy_global_to_local", ...
    line: int  # in the .ttgir
    python_line: int | None
    loop_depth: int
    element_bytes: int
    contiguous_elements: int  # per thread, along the layout's most contiguous dimension
    elements_per_thread: int
    matrix_layout: bool  # an MFMA/WMMA/MMA accumulator or dot operand: its own fixed shape
    coalesced: bool  # a blocked layout: Triton's coalescing chose it from the pointer facts
    # How far apart in memory consecutive elements are along each dimension (irscope/ir/pointer_strides.py):
    # 1 contiguous, RUNTIME a stride argument, another int or DATA never contiguous; None unknown.
    memory_strides: tuple[Stride, ...] | None = None
    dim: int = -1  # the layout's fastest dimension, the one `contiguous_elements` counts along
    # The layout's run: (dimension, elements) of the register bases that step 1, 2, 4, ... from the
    # first one, whichever dimension that is (an MFMA layout's run may lie along either).
    run: tuple[int, int] = (-1, 1)
    shape: tuple[int, ...] = ()
    base_layout: str = ""  # "AmdMfma", "Blocked", ...: the layout under any slice
    # Every lane of a warp holds the same elements (the layout's lane bases are all zero): a tensor smaller
    # than the warp, such as a per-row scalar [2, 1] in a layout whose 32 lanes run along the size-1 dimension.
    # Triton gives a load with fewer elements than threads its consumer's layout on purpose (it is cheap:
    # isExpensiveLoadOrStore), so each instruction reads one address for the whole warp: one transaction,
    # whatever its width, and no pointer fact widens it (the registers along the lanes' dimension repeat).
    lanes_broadcast: bool = False

    @property
    def direction(self) -> str:
        if self.op in STORES:
            return "store"
        if self.op in ATOMICS:
            return "atomic"
        return "tma" if self.op in TMA else "load"

    @property
    def family(self) -> str:
        return COPY if self.op in COPIES else REGISTER

    @property
    def layout_bytes(self) -> int:
        """The widest access per lane the layout allows (capped at 16 bytes)."""
        return min(MAX_VECTOR_BYTES, self.element_bytes * self.contiguous_elements)


def ir_accesses(module: MlirModule, user_file: str | None = None,
                op_names: Sequence[str] | None = None) -> list[IrAccess]:
    """Every global-memory op of the module; those with no per-thread tensor (TMA, scalar atomics)
    with element_bytes 0, so that their lines are known to hold them. `op_names`, when given, are
    the ops' canonical names (LayoutFacts.op_names), read instead of recomputed."""
    from irscope.ir.source_map import kernel_file, user_line

    user_file = user_file or kernel_file(module)
    strides = PointerStrides(module)
    out = []
    if op_names is None:
        op_names = [op.canonical_name for op in module.ops]
    for op, name in zip(module.ops, op_names):
        if name not in _ACCESS_OPS:
            continue
        python = user_line(module, op, user_file)
        ty = _held_type(module, op)
        size = _element_bytes(_pointee(module, op, ty)) if isinstance(ty, TensorType) else None
        shape = _register_shape(ty) if size and ty.encoding is not None and name not in TMA else None
        if shape is None:
            if name in TMA or name in ATOMICS:  # no per-lane width, but the line holds it
                out.append(IrAccess(name, op.line, python, op.loop_depth, 0, 1, 1, False, False))
            continue  # scalar accesses have no per-thread vector
        run, per_thread, dim, first, broadcast = shape
        base = _base_layout(ty.encoding).__class__.__name__
        matrix = base in MATRIX_LAYOUTS
        coalesced = type(ty.encoding).__name__ == "Blocked"  # a slice of one comes from its consumer, not coalescing
        address = address_strides(strides, op)
        out.append(IrAccess(name, op.line, python, op.loop_depth, size, run, per_thread, matrix, coalesced, address,
                            dim, first, tuple(ty.shape), base, broadcast))
    return out


def _held_type(module: MlirModule, op):
    """The tensor a thread holds a share of: a load's result, a store's value, a copy's addresses."""
    name = op.canonical_name
    if name in LOADS or name in ("tt.atomic_rmw", "tt.atomic_cas", "amdg.buffer_atomic_rmw",
                                 "amdg.buffer_atomic_cas"):
        vids = op.results[:1]
    elif name in STORES:
        vids = op.operands[STORES[name]:STORES[name] + 1]
    elif name in COPIES:
        vids = op.operands[COPIES[name]:COPIES[name] + 1]
    else:
        return None
    return module.values[vids[0]].type if vids else None


def _pointee(module: MlirModule, op, ty: TensorType) -> object:
    """The element moved: a copy's address tensor holds pointers (or buffer offsets: then the base's pointee)."""
    element = ty.element
    if isinstance(element, PointerType):
        return element.pointee
    if op.canonical_name == "amdg.buffer_load_to_local" and op.operands:
        base = module.values[op.operands[0]].type
        return base.pointee if isinstance(base, PointerType) else None
    return element


def by_python_line(accesses: list[IrAccess]) -> dict[tuple[str, str, int | None], list[IrAccess]]:
    """(direction, family, Python line) -> the accesses of that line."""
    grouped: dict[tuple[str, str, int | None], list[IrAccess]] = defaultdict(list)
    for a in accesses:
        grouped[(a.direction, a.family, a.python_line)].append(a)
    return grouped


def _base_layout(layout: object) -> object:
    while hasattr(layout, "parent"):  # a slice of an MFMA layout is still an MFMA layout
        layout = layout.parent
    return layout


def _register_shape(ty: TensorType) -> tuple[int, int, int, tuple[int, int], bool] | None:
    """(elements a thread holds contiguously, elements it holds, along which dimension, the run, whether all
    lanes of a warp hold the same elements): the run of
    leading register bases that step 1, 2, 4, ... along the memory-contiguous dimension: the layout's
    `order[0]` (what Triton's coalescing chose), else the last one (row-major). The run is the same count
    along the first register basis's own dimension (an MFMA layout's may be along either)."""
    shape = tuple(ty.shape)
    try:  # cached by value: a family's configs hold the same few (encoding, shape) pairs
        return _cached_register_shape(ty.encoding, shape)
    except TypeError:  # an unhashable parameter kept as parsed
        return _encoding_register_shape(ty.encoding, shape)


@lru_cache(maxsize=4096)
def _cached_register_shape(encoding: object, shape: tuple) -> tuple[int, int, int, tuple[int, int], bool] | None:
    return _encoding_register_shape(encoding, shape)


def _encoding_register_shape(encoding: object, shape: tuple) -> tuple[int, int, int, tuple[int, int], bool] | None:
    from irscope.ir.layouts.to_linear import layout_to_linear

    try:
        layout = layout_to_linear(encoding, shape)
    except (ValueError, NotImplementedError):
        return None
    if layout is None or "register" not in layout.in_names:
        return None
    bases = layout.basis("register")
    distinct = [b for b in bases if any(b)]  # zero bases broadcast: the same element again
    order = getattr(encoding, "order", None)  # a slice's parent order names other dims
    dim = order[0] if order else len(layout.out_names) - 1  # matrix layouts: assume row-major
    best, first = _run_along(bases, dim), (dim, 1)
    if bases and sum(1 for c in bases[0] if c) == 1 and 1 in bases[0]:
        first_dim = list(bases[0]).index(1)
        first = (first_dim, _run_along(bases, first_dim))
    lanes = layout.basis("lane") if "lane" in layout.in_names else []
    broadcast = bool(lanes) and not any(any(b) for b in lanes)
    return best, 2 ** len(distinct), dim, first, broadcast


def _run_along(bases, dim: int) -> int:
    best = 1
    for basis in bases:
        if tuple(basis) != tuple(best if d == dim else 0 for d in range(len(basis))):
            break
        best *= 2
    return best


def _element_bytes(element: object) -> int | None:
    bits = getattr(element, "bits", None)
    return bits // 8 if bits and bits >= 8 else None


@dataclass(frozen=True)
class NarrowAccess:
    """The ISA's global loads (or stores, or copies into LDS) of one Python line that are narrower than they
    could be."""

    kind: str  # "global_load" or "global_store"
    python_line: int | None
    width: int  # the narrowest ISA access, bytes per lane
    count: int  # ISA instructions of that width from this line
    in_loop: int  # of which inside loops
    lines: tuple[int, ...]  # their artifact lines
    layout_bytes: int  # what the layout gives a thread contiguously (<= 16, or the copy's hardware limit)
    elements_per_thread: int
    # "alignment", "stride" (a runtime stride along the layout's run), "contiguity" (1-element runs),
    # "matrix" (a store straight from an MMA layout whose runs lie across the contiguous dimension)
    cause: str
    family: str = REGISTER  # REGISTER: loads and stores through registers; COPY: global -> LDS copies
    access: IrAccess | None = None  # the TTGIR op the numbers come from


# Copies into LDS with no register (AMD buffer_load ... lds, global_load_lds_*) move at most a dword a
# lane before CDNA4 (gfx950 adds dwordx3/dwordx4); PTX cp.async moves 4, 8 or 16 B.
AMD_WIDE_LDS_COPIES = ("gfx95", "gfx12")


def narrow_accesses(program, fn, graph, ir: list[IrAccess], kind: str, arch: str | None = None) -> list[NarrowAccess]:
    """Join the ISA's `kind` accesses (for loads also the copies into LDS) with the TTGIR's by Python line;
    keep those narrower than 16 bytes per lane that better facts would widen (see the module docstring).
    A line that holds an atomic is left out: its compare-and-swap loop loads of its own."""
    direction = "load" if kind == "global_load" else "store"
    by_line = by_python_line(ir)
    atomic_lines = {a.python_line for a in ir if a.direction == "atomic"}
    if not any(key[0] == direction for key in by_line):
        return []  # no TTGIR access of this direction to join with
    isa: dict[tuple[str, int | None], list] = defaultdict(list)
    for ins in fn.instructions:
        if ins.memory is None:  # most instructions: no memory access (_isa_family's first test, inline)
            continue
        family = _isa_family(ins, kind)
        if family is not None:
            isa[(family, ins.source.line if ins.source else None)].append(ins)
    copy_cap = 4 if program.isa == "amdgcn" and not str(arch or "").startswith(AMD_WIDE_LDS_COPIES) \
        else MAX_VECTOR_BYTES
    out = []
    for (family, python_line), instrs in isa.items():
        accesses = by_line.get((direction, family, python_line), [])
        if python_line is None or not accesses or python_line in atomic_lines:
            continue
        cap = copy_cap if family == COPY else MAX_VECTOR_BYTES
        width = min(i.memory.width_bytes for i in instrs)
        if width >= cap:
            continue
        causes = {_cause(a, width, cap) for a in accesses}
        if len(causes) != 1 or None in causes:
            continue  # one access of the line is as wide as its data allows: the narrow one may be it
        (cause,) = causes
        best = min(accesses, key=lambda a: (a.layout_bytes, a.elements_per_thread))
        narrow = [i for i in instrs if i.memory.width_bytes == width]
        out.append(NarrowAccess(kind, python_line, width, len(narrow),
                                sum(1 for i in narrow if graph.instruction_depth[i.index]),
                                tuple(i.line for i in narrow), min(best.layout_bytes, cap),
                                best.elements_per_thread, cause, family, best))
    return sorted(out, key=lambda n: n.lines[0])


def _isa_family(ins, kind: str) -> str | None:
    memory = ins.memory
    if memory is None or not memory.width_bytes:
        return None  # TMA (cp.async.bulk.tensor) has no per-lane width: never narrow
    if ins.kind == kind and not memory.to_lds:
        return REGISTER
    if kind == "global_load" and ins.kind == "async_copy":  # cp.async.ca/cg [..], 4/8/16; *_lds loads
        return COPY
    return None


def _cause(access: IrAccess, width: int, cap: int = MAX_VECTOR_BYTES) -> str | None:
    """Why an access of `width` bytes per lane is narrower than it could be, or None when it is not.

    Only adjacent data can be loaded wider: a stride of 1 along the layout's fastest dimension
    with more contiguous bytes per thread than the ISA moves means unproven alignment (of the
    pointers, or of a mask's bound). Where coalescing (a blocked layout) gave each thread 1-element
    runs of data that is contiguous along a dimension, or may be (a runtime stride), Triton could
    not prove it: the facts are missing. A layout another pass chose (a linear or dot-operand
    layout) is not the pointers' doing, but for a store straight from an MMA accumulator whose
    runs lie along a dimension other than the contiguous one: each lane writes one element at a
    time where a layout with its runs along that dimension would write several. A constant stride
    other than 1, a broadcast, a gather or an address this reader cannot follow are the data's own shape; so is
    a tensor whose lanes all hold the same elements (IrAccess.lanes_broadcast): a per-row scalar that every
    lane of the warp reads at one address."""
    strides = access.memory_strides or ()
    layout_bytes = min(access.layout_bytes, cap)
    if access.lanes_broadcast:
        return None  # the warp reads one address per instruction: one transaction, whatever its width
    if _matrix_across(access, width):
        return "matrix"
    fastest = strides[access.dim] if 0 <= access.dim < len(strides) else None
    if fastest == 1 and width < layout_bytes:
        return "alignment"
    if fastest == RUNTIME and width < layout_bytes:
        return "stride"  # contiguous in the layout, but its memory stride is a runtime value
    if access.coalesced and access.contiguous_elements == 1 and access.elements_per_thread > 1 and \
            (1 in strides or RUNTIME in strides) and width < cap:
        return "contiguity"  # coalescing gave 1-element runs to data that is (or may be) contiguous
    return None


def _matrix_across(access: IrAccess, width: int) -> bool:
    """A store straight from an MFMA/WMMA/MMA accumulator, one element per lane at a time, whose layout
    runs along a dimension of memory stride other than 1 while another dimension is contiguous."""
    strides = access.memory_strides or ()
    if access.direction != "store" or access.base_layout not in ACCUMULATOR_LAYOUTS or access.elements_per_thread < 2:
        return False
    if width > access.element_bytes or strides.count(1) != 1:
        return False
    run_dim, run = access.run
    contiguous = strides.index(1)
    return run > 1 and run_dim != contiguous and len(access.shape) > contiguous and access.shape[contiguous] > 1
