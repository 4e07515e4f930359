"""What a PTX opcode alone says: its kind, memory access, matrix shape, wait counter and branch type.

Kinds and widths are in docs/isa-nvidia.md. Classification is by opcode alone and cached: a
kernel uses a few dozen distinct opcodes over thousands of lines (parsers/ptx.py reads them).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

from irscope.isa.model import (
    ASYNC_COPY, BARRIER, BRANCH, GLOBAL_ATOMIC, GLOBAL_LOAD, GLOBAL_STORE, LOCAL_LOAD, LOCAL_STORE, MATRIX,
    OTHER, SCALAR_LOAD, SHARED_ATOMIC, SHARED_LOAD, SHARED_STORE, VECTOR_ALU, WAIT, MatrixOp, MemoryAccess,
)

# mma.sync.aligned.m16n8k16...   ldmatrix.sync.aligned.m8n8.x4...
_SHAPE = re.compile(r"^m(\d+)n(\d+)(?:k(\d+))?$")

# Bytes per element of a PTX type modifier (`.v4.b32` is 4 x 4).
_TYPE_BYTES = {
    "b8": 1, "u8": 1, "s8": 1, "e4m3": 1, "e5m2": 1, "b16": 2, "u16": 2, "s16": 2, "f16": 2, "bf16": 2,
    "e4m3x2": 2, "e5m2x2": 2, "b32": 4, "u32": 4, "s32": 4, "f32": 4, "f16x2": 4, "bf16x2": 4, "tf32": 4,
    "b64": 8, "u64": 8, "s64": 8, "f64": 8, "f32x2": 8, "b128": 16,
}
_MATRIX_TYPES = frozenset(_TYPE_BYTES) | {"s4", "u4", "b1", "e2m1", "e3m2", "e2m3", "f8f6f4"}
_SPACES = {
    "global": "global", "shared": "shared", "shared::cta": "shared", "shared::cluster": "shared",
    "local": "local", "param": "param", "param::entry": "param", "param::func": "param", "const": "const",
}
_LOAD_KIND = {"global": GLOBAL_LOAD, "generic": GLOBAL_LOAD, "shared": SHARED_LOAD, "local": LOCAL_LOAD,
              "param": SCALAR_LOAD, "const": SCALAR_LOAD}
_STORE_KIND = {"global": GLOBAL_STORE, "generic": GLOBAL_STORE, "shared": SHARED_STORE, "local": LOCAL_STORE}
_ATOMIC_KIND = {"global": GLOBAL_ATOMIC, "generic": GLOBAL_ATOMIC, "shared": SHARED_ATOMIC}

# PTX ISA instruction names (the part before the first dot) that are arithmetic, logic,
# conversion, moves and lane exchanges: one VALU-like instruction per thread.
_ALU_ROOTS = frozenset("""
    abs activemask add addc and bfe bfi bfind bmsk brev clz cnot copysign cos cvt cvta div dp2a dp4a ex2 fma
    fns getctarank isspacep istypeof lg2 lop3 mad mad24 madc mapa match max min mov movmatrix mul mul24 neg
    not or popc prmt rcp redux rem rsqrt sad selp set setp shf shfl shl shr sin slct sqrt sub subc szext tanh
    testp vabsdiff vadd vmad vmax vmin vote vset vshl vshr vsub xor
""".split())
# Known PTX instructions that are neither memory, ALU nor control flow: fences, hints,
# async-group commits, TMA descriptor edits, elect, calls. An unknown name is Unparsed.
_OTHER_ROOTS = frozenset("""
    alloca applypriority brkpt call clusterlaunchcontrol createpolicy discard elect fence griddepcontrol
    membar multimem nanosleep pmevent prefetch prefetchu setmaxnreg stackrestore stacksave suld suq sured
    sust tcgen05 tensormap tex tld4 txq
""".split())


class PtxOp(NamedTuple):
    """What an opcode alone says; operands fill in cp.async widths and wait counts."""

    kind: str
    memory: MemoryAccess | None = None
    matrix: MatrixOp | None = None
    wait: str | None = None  # counter name; the value is the first operand unless wait_value is set
    wait_value: int | None = None
    branch: int = 0  # 1: jump to the first operand; 2: jump to unknown targets; 3: return / exit
    width_arg: int | None = None  # operand index holding cp.async's cp-size


@lru_cache(maxsize=4096)
def ptx_class(opcode: str) -> PtxOp | None:
    """Kind, memory access, matrix shape, wait counter and branch type of an opcode; None if unknown."""
    parts = opcode.split(".")
    root = parts[0]
    mods = parts[1:]
    if root in ("ld", "ldu", "st", "atom", "red"):
        space = next((_SPACES[m] for m in mods if m in _SPACES), "generic")
        table = _LOAD_KIND if root in ("ld", "ldu") else _STORE_KIND if root == "st" else _ATOMIC_KIND
        kind = table.get(space)
        if kind is None:  # st.param: argument passing to a call
            return PtxOp(OTHER)
        return PtxOp(kind, _access(space, mods))
    if root == "cp":
        return _cp_class(opcode, mods)
    if root in ("ldmatrix", "stmatrix"):
        return PtxOp(SHARED_LOAD if root == "ldmatrix" else SHARED_STORE, _matrix_access(mods))
    if root in ("mma", "wgmma", "wmma", "tcgen05"):
        if root == "wgmma" and mods and mods[0] != "mma_async":
            if mods[0] == "wait_group":
                return PtxOp(WAIT, wait="wgmma_group")
            return PtxOp(OTHER)  # wgmma.fence, wgmma.commit_group
        if root in ("wmma", "tcgen05") and mods[:1] != ["mma"]:
            return PtxOp(OTHER)  # wmma.load/store (Triton never emits them), tcgen05.alloc/ld/st/commit
        return PtxOp(MATRIX, matrix=_matrix_op(root, mods))
    if root in ("bar", "barrier"):
        return PtxOp(OTHER if mods[:1] == ["warp"] else BARRIER)  # bar.warp.sync: warp convergence only
    if root == "mbarrier":
        # try_wait / test_wait is where threads block for a TMA copy or another warp's arrive
        if mods and mods[0] in ("try_wait", "test_wait"):
            return PtxOp(WAIT, wait="mbarrier", wait_value=0)
        return PtxOp(OTHER)
    if root in ("bra", "brx"):
        return PtxOp(BRANCH, branch=1 if root == "bra" else 2)
    if root in ("ret", "exit", "trap"):
        return PtxOp(BRANCH, branch=3)
    if root in _ALU_ROOTS:
        return PtxOp(VECTOR_ALU)
    if root in _OTHER_ROOTS:
        return PtxOp(OTHER)
    return None


def _cp_class(opcode: str, mods: list[str]) -> PtxOp:
    # cp.async.cg.shared.global [ %r22 + 0 ], [ %rd39 + 0 ], 0x10, %r24;
    # cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd2, {%r3, %r4}], [%r5];
    if mods[:1] == ["reduce"]:
        return PtxOp(ASYNC_COPY, MemoryAccess("tensor" if "tensor" in mods else "bulk", None))
    if mods[:1] != ["async"]:
        return PtxOp(OTHER)
    rest = mods[1:]
    if not rest:
        return PtxOp(OTHER)
    if rest[0] == "bulk":
        tail = rest[1:2]
        if tail == ["commit_group"] or tail[:1] and tail[0].startswith("prefetch"):
            return PtxOp(OTHER)
        if tail == ["wait_group"]:
            return PtxOp(WAIT, wait="bulk_group")
        return PtxOp(ASYNC_COPY, MemoryAccess("tensor" if "tensor" in rest else "bulk", None))
    if rest[0] == "wait_group":
        return PtxOp(WAIT, wait="async_group")
    if rest[0] == "wait_all":
        return PtxOp(WAIT, wait="async_group", wait_value=0)
    if rest[0] in ("ca", "cg"):
        return PtxOp(ASYNC_COPY, width_arg=2)
    return PtxOp(OTHER)  # cp.async.commit_group, cp.async.mbarrier.arrive


@lru_cache(maxsize=None)
def _memory(space: str, width: int | None, signed: bool) -> MemoryAccess:
    return MemoryAccess(space, width, signed=signed)


def _access(space: str, mods: list[str]) -> MemoryAccess:
    """`ld.global.v4.b32` -> 16 bytes; cache hints (`.L1::evict_last`, `.nc`) do not change it."""
    vec, elem, signed = 1, None, False
    for m in mods:
        if m in _TYPE_BYTES:
            elem = _TYPE_BYTES[m]
            signed = m in ("s8", "s16")
        elif m in ("v2", "v4", "v8"):
            vec = int(m[1])
    return _memory(space, None if elem is None else vec * elem, signed)


def _matrix_access(mods: list[str]) -> MemoryAccess:
    """ldmatrix.sync.aligned.m8n8.x4.shared.b16: each thread gets count x m*n*bytes/32 (16 here)."""
    shape = next((m for m in mods if _SHAPE.match(m)), "m8n8")
    sm = _SHAPE.match(shape)
    count = next((int(m[1:]) for m in mods if m in ("x1", "x2", "x4")), 1)
    elem = next((_TYPE_BYTES[m] for m in mods if m in _TYPE_BYTES), 2)
    width = count * int(sm[1]) * int(sm[2]) * elem // 32
    return _memory("shared", width or None, False)


def _matrix_op(family: str, mods: list[str]) -> MatrixOp:
    """`mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32`: types are d, a, b[, c]."""
    m = n = k = None
    for mod in mods:
        sm = _SHAPE.match(mod)
        if sm and sm[3]:
            m, n, k = int(sm[1]), int(sm[2]), int(sm[3])
            break
    types = [t for t in mods if t in _MATRIX_TYPES] + [None, None, None]
    in_type = types[1] if types[2] in (None, types[1]) else f"{types[1]}.{types[2]}"
    return MatrixOp(family, m, n, k, types[0], in_type)
