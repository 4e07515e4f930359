"""The FLOPs of a kernel's `tt.dot`s for one launch, from its TTIR and the launch's integer arguments.

One program (workgroup) runs each dot as often as the loops around it iterate: M x N x K multiply-adds
(2 FLOPs each) per run, M x N and K read from the dot's operand types. A loop's trip count comes from its
bounds, `scf.for %i = %lb to %ub step %s`, evaluated through the scalar `arith` ops that compute them
from constants and the function's arguments, whose values the launch recorded by name
(irscope/pipeline/config_recorder.py `scalar_arguments`). Where a bound depends on anything else (a
program id, a loaded value, a `scf.while`), the kernel's FLOPs are unknown: the reason names the loop's
line, and nothing is guessed. The launch's FLOPs are one program's times its grid's programs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping

from irscope.ir.mlir import DOT_OPS, MlirModule, Op

_INT_CONSTANT = re.compile(r"arith\.constant\s+(-?\d+)\s*:\s*(?:i\d+|index)\b")
_ARG_NAME = re.compile(r"%arg\d+")
MAX_DEPTH = 64  # arith ops between a bound and the arguments; deeper reads as unknown


@dataclass(frozen=True)
class ProgramDots:
    """What one program computes in its dots, for one set of argument values."""

    flops: int | None
    why: str | None = None  # when flops is None
    element: str | None = None  # the first dot's A operand element type: "f16", "bf16", "f8E4M3FN", "f32"


def program_dot_flops(module: MlirModule, arguments: Mapping[str, int], order: list[str]) -> ProgramDots:
    """`arguments`: the launch's integer arguments by name; `order`: the names of the TTIR function's
    arguments in order (for TTIR that names them `%arg0`, `%arg1`, ..., Triton 3.0-3.2)."""
    dots = list(module.ops_named(*DOT_OPS))
    if not dots:
        return ProgramDots(0)
    functions = module.functions()
    if not functions:
        return ProgramDots(None, "the TTIR has no function")
    evaluator = _Evaluator(module, functions[0], arguments, order)
    total = 0
    element = None
    for dot in dots:
        shape = _dot_shape(module, dot)
        if shape is None:
            return ProgramDots(None, f"the dot at line {dot.line} has no static M x N x K")
        element = element or _element(module, dot)
        trips = 1
        for loop in module.enclosing_loops(dot):
            count = evaluator.trips(loop)
            if count is None:
                return ProgramDots(None, f"the loop at line {loop.line} around the dot at line {dot.line} runs a "
                                         "number of times the launch's arguments do not tell")
            trips *= count
        m, n, k = shape
        total += 2 * m * n * k * trips
    return ProgramDots(total, None, element)


def _dot_shape(module: MlirModule, dot: Op) -> tuple[int, int, int] | None:
    if not dot.results or not dot.operands:
        return None
    out = getattr(module.value(dot.results[0]).type, "shape", None)
    a = getattr(module.value(dot.operands[0]).type, "shape", None)
    if not out or not a or len(out) < 2 or len(a) < 2 or None in (out[-2], out[-1], a[-1]):
        return None
    batch = 1
    for extent in out[:-2]:
        if extent is None:
            return None
        batch *= extent
    return batch * out[-2], out[-1], a[-1]


def _element(module: MlirModule, dot: Op) -> str | None:
    element = getattr(module.value(dot.operands[0]).type, "element", None)
    return str(element) if element is not None else None


class _Evaluator:
    def __init__(self, module: MlirModule, function: Op, arguments: Mapping[str, int], order: list[str]) -> None:
        self.module = module
        self.arguments = arguments
        entry = function.regions[0].blocks[0].arguments if function.regions and function.regions[0].blocks else ()
        self.names: dict[int, str] = {}
        for position, vid in enumerate(entry):
            written = module.value(vid).name
            if not _ARG_NAME.fullmatch(written):
                self.names[vid] = written.lstrip("%")
            elif position < len(order):
                self.names[vid] = order[position]

    def trips(self, loop: Op) -> int | None:
        if loop.canonical_name != "scf.for" or len(loop.operands) < 3:
            return None
        lb, ub, step = (self.value(v, 0) for v in loop.operands[:3])
        if lb is None or ub is None or not step or step < 0:
            return None
        return max(0, -(-(ub - lb) // step))

    # complex: one short branch per arith op; every other op is unknown
    def value(self, vid: int, depth: int) -> int | None:
        if depth > MAX_DEPTH:
            return None
        v = self.module.value(vid)
        if v.kind == "argument":
            name = self.names.get(vid)
            return self.arguments.get(name) if name is not None else None
        op = self.module.defining_op(vid)
        if op is None:
            return None
        name = op.canonical_name
        if name == "arith.constant":
            match = _INT_CONSTANT.search(op.text)
            return int(match.group(1)) if match else None
        args = [self.value(o, depth + 1) for o in op.operands]
        if any(a is None for a in args):
            return None
        if name in ("arith.extsi", "arith.extui", "arith.trunci", "arith.index_cast", "arith.index_castui"):
            return args[0] if args else None
        if len(args) != 2:
            return None
        a, b = args
        if name == "arith.addi":
            return a + b
        if name == "arith.subi":
            return a - b
        if name == "arith.muli":
            return a * b
        if name in ("arith.divsi", "arith.divui"):
            return None if b == 0 else int(a / b)  # C division: toward zero
        if name == "arith.ceildivsi":
            return None if b == 0 else -(-a // b)
        if name == "arith.floordivsi":
            return None if b == 0 else a // b
        if name in ("arith.remsi", "arith.remui"):
            return None if b == 0 else a - b * int(a / b)
        if name in ("arith.maxsi", "arith.maxui"):
            return max(a, b)
        if name in ("arith.minsi", "arith.minui"):
            return min(a, b)
        return None
