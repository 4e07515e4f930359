"""How far apart in memory the elements of a tensor of addresses are, dimension by dimension.

A narrow global load is only worth a finding when better facts could widen it: its elements
must be adjacent in memory along the layout's fastest dimension. Triton knows this from its
AxisInfo analysis and writes nothing of it down (but `contiguity` on gfx942's buffer ops), so
the width rules (irscope/ir/layouts/access_width.py) re-derive the part they need: the stride, in
elements, of each dimension of the offsets, from the ops that build them:

    tt.make_range            stride 1 along its one dimension
    casts (ext, trunc, pointer <-> integer), convert_layout   the operand's strides
    tt.splat, constants      stride 0 (the same address everywhere)
    tt.expand_dims           a new dimension of stride 0
    tt.broadcast             stride 0 along the broadcast dimensions
    arith.addi/subi, addptr  strides add (subtract)
    arith.muli by a splat    strides scale by the constant, or become RUNTIME (a runtime stride)
    a loop's iter_arg        its initial value's strides, where the body yields the same strides
                             (pointers advance by a splat); DATA along a dimension where not
    anything else            DATA: a gather, a division or remainder, a select: never contiguous

A stride of 1 is contiguous, RUNTIME may be 1 at run time (a stride argument the JIT did not
specialize), an integer other than 1 and DATA never are.
"""

from __future__ import annotations

import re
from typing import Union

from irscope.ir.types import TensorType
from irscope.ir.mlir import FOR_INIT_OPERANDS, MlirModule, iter_args

RUNTIME = "runtime"  # a scalar the kernel reads at run time: a stride argument, a loop counter
DATA = "data"  # from loaded data, or a pattern this reader does not follow
Stride = Union[int, str]
Strides = tuple[Stride, ...]

_INT_CONSTANT = re.compile(r"arith\.constant\s+(?:dense<)?(-?\d+)>?\s*:")
_PASS_THROUGH = frozenset({"arith.extsi", "arith.extui", "arith.trunci", "arith.index_cast", "ttg.convert_layout",
                           "tt.bitcast", "arith.bitcast", "tt.ptr_to_int", "tt.int_to_ptr"})


def _add(a: Stride, b: Stride, sign: int = 1) -> Stride:
    if DATA in (a, b):
        return DATA
    if RUNTIME in (a, b):
        return b if a == 0 and b == RUNTIME else (a if b == 0 else RUNTIME)
    return a + sign * b


def _scale(a: Stride, factor: Stride) -> Stride:
    if a == 0 or factor == 0:
        return 0
    if DATA in (a, factor):
        return DATA
    if RUNTIME in (a, factor):
        return RUNTIME
    return a * factor


class PointerStrides:
    """Strides of the tensors of one module, each computed once."""

    def __init__(self, module: MlirModule) -> None:
        self.module = module
        self._strides: dict[int, Strides | None] = {}
        self._scalars: dict[int, Stride] = {}

    def of(self, value_id: int) -> Strides | None:
        """Per-dimension strides of a tensor value (None: not a ranked tensor)."""
        if value_id not in self._strides:
            self._strides[value_id] = None  # a cycle through a loop reads as unknown
            self._strides[value_id] = self._compute(value_id)
        return self._strides[value_id]

    def scalar(self, value_id: int) -> Stride:
        """A scalar's value when it is a constant, else RUNTIME."""
        if value_id not in self._scalars:
            op = self.module.defining_op(value_id)
            match = _INT_CONSTANT.search(op.text) if op is not None and op.canonical_name == "arith.constant" \
                else None
            self._scalars[value_id] = int(match.group(1)) if match else RUNTIME
        return self._scalars[value_id]

    # complex: a dispatcher, one short branch per op (make_range, splat, expand_dims, broadcast, add, mul)
    def _compute(self, vid: int) -> Strides | None:
        ty = self.module.values[vid].type
        if not isinstance(ty, TensorType) or not ty.shape:
            return None
        rank = len(ty.shape)
        value = self.module.values[vid]
        if value.kind == "argument":
            return self._loop_carried(vid, rank)
        op = self.module.defining_op(vid)
        if op is None:
            return (DATA,) * rank
        name, args = op.canonical_name, op.operands
        if name == "tt.make_range":
            return (1,)
        if name in ("tt.splat", "arith.constant"):
            return (0,) * rank
        if name in _PASS_THROUGH and args:
            return self.of(args[0]) or (DATA,) * rank
        if name == "tt.expand_dims" and args:
            inner, axis = self.of(args[0]), int(str(op.attributes.get("axis", -1)))
            if inner is None or not 0 <= axis <= len(inner):
                return (DATA,) * rank
            return inner[:axis] + (0,) + inner[axis:]
        if name == "tt.broadcast" and args:
            inner, src = self.of(args[0]), self.module.values[args[0]].type
            if inner is None or not isinstance(src, TensorType) or len(inner) != rank:
                return (DATA,) * rank
            return tuple(0 if n == 1 else s for s, n in zip(inner, src.shape))
        if name in ("arith.addi", "tt.addptr", "arith.subi") and len(args) == 2:
            a, b = self.of(args[0]), self.of(args[1])
            if a is None or b is None or len(a) != len(b):
                return (DATA,) * rank
            return tuple(_add(x, y, -1 if name == "arith.subi" else 1) for x, y in zip(a, b))
        if name == "arith.muli" and len(args) == 2:
            return self._product(args, rank)
        return (DATA,) * rank

    def _product(self, args: tuple[int, ...], rank: int) -> Strides:
        a, b = self.of(args[0]), self.of(args[1])
        if a is None or b is None:
            return (DATA,) * rank
        for strides, same, kept in ((a, args[0], b), (b, args[1], a)):
            if all(s == 0 for s in strides):  # this side is the same everywhere: a splat factor
                factor = self._splat_value(same)
                return tuple(_scale(s, factor) for s in kept)
        return (DATA,) * rank  # two varying factors: not an affine address

    def _splat_value(self, vid: int) -> Stride:
        op = self.module.defining_op(vid)
        if op is None:
            return RUNTIME
        if op.canonical_name == "tt.splat" and op.operands:
            return self.scalar(op.operands[0])
        if op.canonical_name == "arith.constant":
            return self.scalar(vid)
        return RUNTIME

    def _loop_carried(self, vid: int, rank: int) -> Strides:
        """An scf.for iter_arg: its initial value's strides where what the body yields for it has the same
        (pointers advanced by a splat step), a dimension where they differ DATA: the join of the init and
        the yield that Triton's AxisInfo makes, iterated to a fixpoint."""
        owner = self.module.ops[self.module.values[vid].owner]
        carried = iter_args(owner)
        if vid not in carried or FOR_INIT_OPERANDS + carried.index(vid) >= len(owner.operands):
            return (DATA,) * rank
        position = carried.index(vid)
        assumed = self.of(owner.operands[FOR_INIT_OPERANDS + position]) or (DATA,) * rank
        yielded = _yielded(self.module, owner, position)
        if yielded is None:
            return (DATA,) * rank
        for _ in range(rank + 1):  # each round turns at least one dimension to DATA
            # The yield under this assumption, in a scratch cache: values still being computed here (the
            # walk may have entered the loop through the yielded value) are computed afresh there.
            scratch = PointerStrides(self.module)
            scratch._strides = {k: v for k, v in self._strides.items() if v is not None}
            scratch._strides[vid] = assumed
            scratch._scalars = self._scalars
            step = scratch.of(yielded)
            joined = tuple(a if a == b else DATA for a, b in zip(assumed, step)) \
                if step is not None and len(step) == rank else (DATA,) * rank
            if joined == assumed:
                return assumed
            assumed = joined
        return (DATA,) * rank


def _yielded(module: MlirModule, loop, position: int) -> int | None:
    """The value a loop's body yields for its iter_arg at `position`."""
    body = loop.regions[0].blocks[0]
    terminator = module.ops[body.ops[-1]] if body.ops else None
    if terminator is None or terminator.canonical_name != "scf.yield" or position >= len(terminator.operands):
        return None
    return terminator.operands[position]

# Where each op holds the addresses it reads or writes: the pointer tensor of tt.load/tt.store,
# ttg.async_copy_global_to_local and the tt.atomic_* ops, the offsets tensor of the buffer ops
# (`amdg.buffer_load %base[%offsets]`, `amdg.buffer_store %value, %base[%offsets]`,
# `amdg.buffer_load_to_local %base[%offsets] into %dst`, `amdg.buffer_atomic_rmw op, sem, scope, %value,
# %base[%offsets]`, `amdg.buffer_atomic_cas sem, scope, %cmp, %value, %base[%offsets]`).
ADDRESS_OPERAND = {"tt.load": 0, "tt.store": 0, "amdg.buffer_load": 1, "amdg.buffer_store": 2,
                   "ttg.async_copy_global_to_local": 0, "amdg.buffer_load_to_local": 1,
                   "tt.atomic_rmw": 0, "tt.atomic_cas": 0, "amdg.buffer_atomic_rmw": 2, "amdg.buffer_atomic_cas": 3}


def address_strides(strides: PointerStrides, op) -> Strides | None:
    index = ADDRESS_OPERAND.get(op.canonical_name)
    if index is None or index >= len(op.operands):
        return None
    return strides.of(op.operands[index])
