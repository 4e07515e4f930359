"""The parsed form of one TTIR or TTGIR file: ops, SSA values, regions, locations.

Ops sit in one flat tuple in textual order; an op's `parent` and `region` say where it
is nested, so walking, slicing by loop and graph building need no recursion. Every op
and value carries the 1-based line of the artifact it was read from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Iterator, Mapping, Optional

from irscope.model.kernel import Fact, Problem

# Dialect spellings over versions: 3.0-3.2 `triton_gpu.`, `triton_nvidia_gpu.`; 3.3+ `ttg.`,
# `ttng.`; AMD `amdgpu.` until 3.5, `amdg.` from 3.6.
DIALECT_ALIASES = {"triton_gpu": "ttg", "triton_nvidia_gpu": "ttng", "amdgpu": "amdg"}
CORE_DIALECTS = frozenset({"tt", "ttg", "ttng", "amdg", "scf", "arith", "math", "cf"})
LOOP_OPS = frozenset({"scf.for", "scf.while"})
# Ops whose body is a function (IsolatedFromAbove in MLIR).
FUNCTION_OPS = frozenset({"tt.func", "llvm.func", "func.func"})
# The ops that multiply tiles on the matrix units (MFMA, mma/wgmma), in every Triton version.
DOT_OPS = ("tt.dot", "tt.dot_scaled", "ttng.warp_group_dot", "ttng.dot_async")


@lru_cache(maxsize=4096)  # a few hundred distinct op names; asked ~30 times per op (rules, the build)
def canonical_op_name(name: str) -> str:
    """`triton_gpu.local_load` -> `ttg.local_load`, so rules match every version."""
    dialect, dot, rest = name.partition(".")
    return DIALECT_ALIASES.get(dialect, dialect) + dot + rest if dot else name


@dataclass(frozen=True)
class SourceFrame:
    file: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


@dataclass(frozen=True)
class Location:
    """An op's location with `#loc` aliases, NameLocs and callsites resolved.

    `frames` runs from the innermost call (e.g. inside triton/language/standard.py for
    an inlined `tl.cdiv`) out to the caller in the user's kernel.
    """

    frames: tuple[SourceFrame, ...] = ()
    names: tuple[str, ...] = ()  # NameLoc names, outermost first: ("acc",)

    @property
    def outermost(self) -> Optional[SourceFrame]:
        return self.frames[-1] if self.frames else None

    @property
    def innermost(self) -> Optional[SourceFrame]:
        return self.frames[0] if self.frames else None


@dataclass(frozen=True)
class Value:
    """An SSA value: an op result, a block or function argument, or a use never defined."""

    id: int
    name: str  # as written: "%acc_35#4", "%arg0"
    type: object  # an irscope.ir.types type, or None when the text does not say
    owner: int  # index of the defining op, or of the op whose region declares the argument
    kind: str  # "result", "argument" or "undefined"
    line: int


@dataclass(frozen=True)
class Block:
    label: Optional[str]  # "^bb0"; None for a region's unlabeled entry block
    arguments: tuple[int, ...]  # value ids
    ops: tuple[int, ...]  # op indices, directly inside this block


@dataclass(frozen=True)
class Region:
    blocks: tuple[Block, ...]


@dataclass(frozen=True, eq=False)  # hashed by identity: attributes is a dict
class Op:
    index: int
    name: str  # as written: "triton_gpu.convert_layout"
    results: tuple[int, ...]  # value ids
    operands: tuple[int, ...]  # value ids
    attributes: Mapping[str, object]
    regions: tuple[Region, ...]
    line: int
    location: Optional[Location]
    parent: Optional[int]  # index of the op whose region holds this one
    loop_depth: int  # how many scf.for / scf.while enclose this op
    structured: bool  # False: the op's custom syntax was not understood; see `text`
    text: str  # the op as written, up to its first region

    @property
    def canonical_name(self) -> str:
        return canonical_op_name(self.name)

    @property
    def dialect(self) -> str:
        return self.canonical_name.partition(".")[0]


# An scf.for's operands: lower bound, upper bound, step, then one init per iter_arg.
FOR_INIT_OPERANDS = 3


def iter_args(loop: Op) -> tuple[int, ...]:
    """An scf.for's iter_args (its body's block arguments after the induction variable), in the
    order of its inits (operands from FOR_INIT_OPERANDS) and of its results; () for another op."""
    if loop.canonical_name != "scf.for" or not loop.regions or not loop.regions[0].blocks:
        return ()
    return loop.regions[0].blocks[0].arguments[1:]


@dataclass(frozen=True, eq=False)
class MlirModule:
    path: str
    ops: tuple[Op, ...]
    values: tuple[Value, ...]
    aliases: Mapping[str, object]  # "#blocked" -> Layout, "#loc3" -> Location, ...
    problems: tuple[Problem, ...] = ()
    line_count: int = 0
    _module_attrs: Mapping[str, Fact] = field(default_factory=dict, repr=False)

    # -- module attributes, with both `triton_gpu.` and `ttg.` spellings ---------------
    def module_attribute(self, short: str) -> Optional[Fact]:
        """`num-warps`, `threads-per-warp`, `num-ctas`, `target`, `shared`."""
        return self._module_attrs.get(short)

    @property
    def num_warps(self) -> Optional[int]:
        fact = self.module_attribute("num-warps")
        return fact.value if fact else None

    @property
    def threads_per_warp(self) -> Optional[int]:
        fact = self.module_attribute("threads-per-warp")
        return fact.value if fact else None

    @property
    def target(self) -> Optional[str]:
        fact = self.module_attribute("target")
        return fact.value if fact else None

    # -- navigation ---------------------------------------------------------------------
    def value(self, value_id: int) -> Value:
        return self.values[value_id]

    def functions(self) -> list[Op]:
        return [op for op in self.ops if op.canonical_name in FUNCTION_OPS]

    def ops_named(self, *names: str) -> Iterator[Op]:
        wanted = set(names)
        return (op for op in self.ops if op.canonical_name in wanted)

    def defining_op(self, value_id: int) -> Optional[Op]:
        value = self.values[value_id]
        return self.ops[value.owner] if value.kind == "result" else None

    def producer_named(self, value_id: int, names, limit: int, follow=None) -> Optional[Op]:
        """The nearest op named in `names` behind `value_id`, walking back through the operands of
        other ops (those `follow(value_id)` accepts, when given) over at most `limit` values."""
        todo, seen = [value_id], set()
        while todo and len(seen) < limit:
            vid = todo.pop()
            seen.add(vid)
            op = self.defining_op(vid)
            if op is None:
                continue
            if op.canonical_name in names:
                return op
            todo += [v for v in op.operands if v not in seen and (follow is None or follow(v))]
        return None

    def enclosing_loops(self, op: Op) -> list[Op]:
        """The scf.for / scf.while ops around `op`, innermost first."""
        loops, parent = [], op.parent
        while parent is not None:
            if self.ops[parent].canonical_name in LOOP_OPS:
                loops.append(self.ops[parent])
            parent = self.ops[parent].parent
        return loops

    def unstructured(self, dialects: frozenset[str] = CORE_DIALECTS) -> list[Op]:
        return [op for op in self.ops if not op.structured and op.dialect in dialects]
