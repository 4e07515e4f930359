"""Where an MLIR value comes from, across regions.

A value is an op's result or a region argument (a loop variable, a function argument) of the
op that owns the region. `ValueFlow` follows values through region plumbing: an scf.for's
loop-carried argument is its init operand or whatever the body yields, so a walk from a
`local_load` inside a pipelined loop reaches the `local_alloc` of its buffer.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Iterable, Optional

from irscope.ir.mlir import MlirModule, Op

# Ops that pass a value through unchanged in meaning (region plumbing).
_YIELD_OPS = frozenset({"scf.yield", "scf.condition"})


class ValueFlow:
    """Where a value comes from through region plumbing (loop-carried args, yields, ifs)."""

    def __init__(self, module: MlirModule) -> None:
        self.module = module
        self._arg_slot: dict[int, tuple[int, int, int]] = {}  # arg id -> (owner op, region, position)
        for op in module.ops:
            for r, region in enumerate(op.regions):
                if region.blocks:
                    for pos, vid in enumerate(region.blocks[0].arguments):
                        self._arg_slot[vid] = (op.index, r, pos)

    def _terminators(self, op: Op, region: int = 0) -> list[Op]:
        out = []
        if region < len(op.regions):
            for block in op.regions[region].blocks:
                if block.ops and self.module.ops[block.ops[-1]].canonical_name in _YIELD_OPS:
                    out.append(self.module.ops[block.ops[-1]])
        return out

    def sources(self, vid: int) -> list[int]:
        """The value ids that `vid` may be a copy of, one step back (empty for a real def)."""
        value = self.module.values[vid]
        if value.kind == "argument" and vid in self._arg_slot:
            owner_idx, region, pos = self._arg_slot[vid]
            owner = self.module.ops[owner_idx]
            if owner.canonical_name == "scf.for" and region == 0 and pos >= 1:
                i = pos - 1
                out = [owner.operands[3 + i]] if len(owner.operands) > 3 + i else []
                out += [y.operands[i] for y in self._terminators(owner) if len(y.operands) > i]
                return out
            if owner.canonical_name == "scf.while" and region == 0 and pos < len(owner.operands):
                return [owner.operands[pos]]
            return []
        if value.kind == "result":
            owner = self.module.ops[value.owner]
            if owner.canonical_name in ("scf.for", "scf.if", "scf.while"):
                pos = owner.results.index(vid)
                regions = range(len(owner.regions)) if owner.canonical_name == "scf.if" else [0]
                out = [y.operands[pos] for r in regions for y in self._terminators(owner, r) if len(y.operands) > pos]
                if owner.canonical_name == "scf.for" and len(owner.operands) > 3 + pos:
                    out.append(owner.operands[3 + pos])
                return out
        return []

    def origins(self, vid: int, through: Iterable[str] = ()) -> frozenset[int]:
        """Ops that define `vid`, following region plumbing and the named pass-through ops.

        `through` names ops whose first operand is the same thing seen differently
        (`ttg.memdesc_index` of a buffer is still that buffer).
        """
        return _walk(self, vid, frozenset(through))[0]

    def crossed(self, vid: int, through: Iterable[str]) -> tuple[str, ...]:
        """Which of the `through` ops lie between `vid` and its origins (e.g. a memdesc_trans)."""
        return _walk(self, vid, frozenset(through))[1]

    def defining(self, vid: int) -> Optional[Op]:
        value = self.module.values[vid]
        return self.module.ops[value.owner] if value.kind == "result" else None


def _walk(flow: ValueFlow, vid: int, passthrough: frozenset[str]) -> tuple[frozenset[int], tuple[str, ...]]:
    """The defining ops behind `vid`, and the names of the pass-through ops crossed."""
    seen: set[int] = set()
    found: set[int] = set()
    crossed: set[str] = set()
    stack = [vid]
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        back = flow.sources(current)
        if back:
            stack.extend(back)
            continue
        op = flow.defining(current)
        if op is None:
            continue
        if op.canonical_name in passthrough and op.operands:
            crossed.add(op.canonical_name)
            stack.append(op.operands[0])
        else:
            found.add(op.index)
    return frozenset(found), tuple(sorted(crossed))


@lru_cache(maxsize=8)
def _cached_flow(module: MlirModule) -> ValueFlow:
    return ValueFlow(module)


def value_flow(module: MlirModule) -> ValueFlow:
    return _cached_flow(module)
