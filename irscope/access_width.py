"""How wide each global access could be, from the TTGIR layout, and how wide the ISA made it.

Triton vectorizes a global load or store up to the elements a thread holds contiguously in
the value's layout (at most 16 bytes), and then only as far as the pointer's known
alignment and contiguity allow (tt.divisibility, tl.multiple_of, tl.max_contiguous). So an
ISA access narrower than what the layout gives a thread points at missing alignment facts;
one as wide as the layout allows is the layout's limit (e.g. an MFMA accumulator stored
without a convert_layout).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from irscope.ir_types import TensorType
from irscope.mlir import MlirModule
from irscope.pointer_strides import RUNTIME, PointerStrides, Stride, address_strides

MAX_VECTOR_BYTES = 16


MATRIX_LAYOUTS = ("AmdMfma", "AmdWmma", "NvidiaMma", "DotOperand")


# The TTGIR ops that load or store a tensor through registers, and where each holds the tensor:
# a load's result; a tt.store's second operand (`tt.store %ptr, %value`), an AMD buffer store's
# first (`amdg.buffer_store %value, %base[%offsets]`). Triton 3.5+ lowers most gfx942 loads and
# stores to the buffer forms (buffer_load_dword*, buffer_store_* in the ISA). Copies to LDS
# (ttg.async_copy_global_to_local, amdg.buffer_load_to_local) and TMA descriptors move no
# per-thread register vector and are not width-checked here.
LOADS = frozenset({"tt.load", "amdg.buffer_load"})  # (amdgpu.* before 3.3: names are canonical)
STORES = {"tt.store": 1, "amdg.buffer_store": 0}


@dataclass(frozen=True)
class IrAccess:
    """One tensor load or store (tt.load/tt.store, amdg.buffer_load/buffer_store), as the TTGIR has it."""

    op: str  # the TTGIR op: "tt.load", "amdg.buffer_store", ...
    line: int  # in the .ttgir
    python_line: int | None
    loop_depth: int
    element_bytes: int
    contiguous_elements: int  # per thread, along the layout's most contiguous dimension
    elements_per_thread: int
    matrix_layout: bool  # an MFMA/WMMA/MMA accumulator or dot operand: its own fixed shape
    coalesced: bool  # a blocked layout: Triton's coalescing chose it from the pointer facts
    # How far apart in memory consecutive elements are along each dimension (irscope/pointer_strides.py):
    # 1 contiguous, RUNTIME a stride argument, another int or DATA never contiguous; None unknown.
    memory_strides: tuple[Stride, ...] | None = None
    dim: int = -1  # the layout's fastest dimension, the one `contiguous_elements` counts along

    @property
    def direction(self) -> str:
        return "load" if self.op in LOADS else "store"

    @property
    def layout_bytes(self) -> int:
        """The widest access per lane the layout allows (capped at 16 bytes)."""
        return min(MAX_VECTOR_BYTES, self.element_bytes * self.contiguous_elements)


def ir_accesses(module: MlirModule, user_file: str | None = None) -> list[IrAccess]:
    from irscope.source_map import kernel_file, user_line

    user_file = user_file or kernel_file(module)
    strides = PointerStrides(module)
    out = []
    for op in module.ops_named(*LOADS, *STORES):
        name = op.canonical_name
        held = (op.results[:1] if name in LOADS else op.operands[STORES[name]:STORES[name] + 1]) or (None,)
        vid = held[0]
        ty = module.values[vid].type if vid is not None else None
        if not isinstance(ty, TensorType) or ty.encoding is None:
            continue  # scalar accesses and tensor descriptors (TMA) have no per-thread vector
        size = _element_bytes(ty.element)
        shape = _register_shape(ty)
        if size is None or shape is None:
            continue
        run, per_thread, dim = shape
        matrix = _base_layout(ty.encoding).__class__.__name__ in MATRIX_LAYOUTS
        coalesced = type(ty.encoding).__name__ == "Blocked"  # a slice of one comes from its consumer, not coalescing
        address = address_strides(strides, op)
        out.append(IrAccess(op.canonical_name, op.line, user_line(module, op, user_file), op.loop_depth, size, run,
                            per_thread, matrix, coalesced, address, dim))
    return out


def by_python_line(accesses: list[IrAccess]) -> dict[tuple[str, int | None], list[IrAccess]]:
    """("load" or "store", Python line) -> the accesses of that line."""
    grouped: dict[tuple[str, int | None], list[IrAccess]] = defaultdict(list)
    for a in accesses:
        grouped[(a.direction, a.python_line)].append(a)
    return grouped


def _base_layout(layout: object) -> object:
    while hasattr(layout, "parent"):  # a slice of an MFMA layout is still an MFMA layout
        layout = layout.parent
    return layout


def _register_shape(ty: TensorType) -> tuple[int, int, int] | None:
    """(elements a thread holds contiguously, elements it holds, along which dimension): the run of leading register
    bases that step 1, 2, 4, ... along the memory-contiguous dimension: the layout's
    `order[0]` (what Triton's coalescing chose), else the last one (row-major)."""
    from irscope.layout_to_linear import layout_to_linear

    try:
        layout = layout_to_linear(ty.encoding, tuple(ty.shape))
    except (ValueError, NotImplementedError):
        return None
    if layout is None or "register" not in layout.in_names:
        return None
    bases = layout.basis("register")
    distinct = [b for b in bases if any(b)]  # zero bases broadcast: the same element again
    order = getattr(ty.encoding, "order", None)  # a slice's parent order names other dims
    dim = order[0] if order else len(layout.out_names) - 1  # matrix layouts: assume row-major
    best = 1
    for basis in bases:
        if tuple(basis) != tuple(best if d == dim else 0 for d in range(len(basis))):
            break
        best *= 2
    return best, 2 ** len(distinct), dim


def _element_bytes(element: object) -> int | None:
    bits = getattr(element, "bits", None)
    return bits // 8 if bits and bits >= 8 else None


@dataclass(frozen=True)
class NarrowAccess:
    """The ISA's global loads (or stores) of one Python line that are narrower than they could be."""

    kind: str  # "global_load" or "global_store"
    python_line: int | None
    width: int  # the narrowest ISA access, bytes per lane
    count: int  # ISA instructions of that width from this line
    in_loop: int  # of which inside loops
    lines: tuple[int, ...]  # their artifact lines
    layout_bytes: int  # what the layout gives a thread contiguously (<= 16)
    elements_per_thread: int
    cause: str  # "alignment", "stride" (a runtime stride along the layout's run), "contiguity" (1-element runs)


def narrow_accesses(program, fn, graph, ir: list[IrAccess], kind: str) -> list[NarrowAccess]:
    """Join the ISA's `kind` accesses with the TTGIR's by Python line; keep those narrower
    than 16 bytes per lane that better pointer facts would widen (see the module docstring)."""
    direction = "load" if kind == "global_load" else "store"
    by_line = by_python_line(ir)
    isa: dict[int | None, list] = defaultdict(list)
    for ins in fn.instructions:
        if ins.kind == kind and ins.memory is not None and ins.memory.width_bytes and not ins.memory.to_lds:
            isa[ins.source.line if ins.source else None].append(ins)
    out = []
    for python_line, instrs in isa.items():
        accesses = by_line.get((direction, python_line), [])
        if python_line is None or not accesses:
            continue
        width = min(i.memory.width_bytes for i in instrs)
        if width >= MAX_VECTOR_BYTES:
            continue
        causes = {_cause(a, width) for a in accesses}
        if len(causes) != 1 or None in causes:
            continue  # one access of the line is as wide as its data allows: the narrow one may be it
        (cause,) = causes
        best = min(accesses, key=lambda a: (a.layout_bytes, a.elements_per_thread))
        narrow = [i for i in instrs if i.memory.width_bytes == width]
        out.append(NarrowAccess(kind, python_line, width, len(narrow),
                                sum(1 for i in narrow if graph.instruction_depth[i.index]),
                                tuple(i.line for i in narrow), best.layout_bytes, best.elements_per_thread, cause))
    return sorted(out, key=lambda n: n.lines[0])


def _cause(access: IrAccess, width: int) -> str | None:
    """Why an access of `width` bytes per lane is narrower than it could be, or None when it is not.

    Only adjacent data can be loaded wider: a stride of 1 along the layout's fastest dimension
    with more contiguous bytes per thread than the ISA moves means unproven alignment (of the
    pointers, or of a mask's bound). Where coalescing (a blocked layout) gave each thread 1-element
    runs of data that is contiguous along a dimension, or may be (a runtime stride), Triton could
    not prove it: the facts are missing. A layout another pass chose (a linear or dot-operand
    layout) is not the pointers' doing. A constant stride other than 1, a
    broadcast, a gather or an address this reader cannot follow are the data's own shape."""
    strides = access.memory_strides or ()
    fastest = strides[access.dim] if 0 <= access.dim < len(strides) else None
    if fastest == 1 and width < access.layout_bytes:
        return "alignment"
    if fastest == RUNTIME and width < access.layout_bytes:
        return "stride"  # contiguous in the layout, but its memory stride is a runtime value
    if access.coalesced and access.contiguous_elements == 1 and access.elements_per_thread > 1 and \
            (1 in strides or RUNTIME in strides):
        return "contiguity"  # coalescing gave 1-element runs to data that is (or may be) contiguous
    return None
