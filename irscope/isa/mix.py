"""Instruction mix of a kernel: counts by kind, inside loops and outside, and per Python line.

Every count keeps the artifact lines of the instructions it counts, so a number in a
table can always be traced to the lines that make it up. Memory kinds are split by
path and width (`global:16B`, `lds:8Bx2` for ds_read2_b64), matrix ops by shape, so the
diff can show `global_store_short` becoming `global_store_dwordx4` as a row moving from
`global:2B` to `global:16B`.
"""

from __future__ import annotations

from collections import defaultdict
from operator import itemgetter
from typing import TYPE_CHECKING

from irscope.isa.model import IsaFunction, IsaProgram
from irscope.model.instruction_mix import InstructionMix, LineMix, MixRow  # noqa: F401 (public here)
from irscope.model.line_ranges import LineRanges
from irscope.parsers.gc_pause import collections_paused

if TYPE_CHECKING:
    from irscope.isa.graph import FunctionGraph




@collections_paused
def instruction_mix(program: IsaProgram, fn: IsaFunction | None = None,
                    graph: FunctionGraph | None = None) -> InstructionMix:
    from irscope.isa.graph import FunctionGraph

    fn = fn or program.function()
    if fn is None:
        return InstructionMix(program.path, program.isa, "", 0, 0, (), ())
    graph = graph or FunctionGraph(fn)
    instrs = fn.instructions
    # The lines of each (kind, detail) row, outside loops and inside ([False], [True]): an ALU op
    # (most of a kernel) finds its pair by kind alone, a memory or matrix op by its kind and its
    # MemoryAccess/MatrixOp objects (the parser shares one per mnemonic), whose detail text is
    # worked out once. Ops whose details read alike share the pair, so lines stay in code order.
    plain: dict[str, tuple[list[int], list[int]]] = {}
    by_objects: dict[tuple[str, int, int], tuple[list[int], list[int]]] = {}
    by_detail: dict[tuple[str, str], tuple[list[int], list[int]]] = {}
    per_line: dict[tuple[str, int], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    per_line_lines: dict[tuple[str, int], list[int]] = defaultdict(list)
    # The (file, line) key and its tallies are looked up once per run of instructions under the
    # same SourceLine (one `.loc`).
    prev = counts = at = None
    for (kind, line, memory, matrix, source), d in zip(map(_MIX_FIELDS, instrs), graph.instruction_depth):
        if memory is None and matrix is None:
            pair = plain.get(kind)
            if pair is None:
                pair = plain[kind] = by_detail.setdefault((kind, ""), ([], []))
        else:
            key = (kind, id(memory), id(matrix))
            pair = by_objects.get(key)
            if pair is None:
                pair = by_objects[key] = by_detail.setdefault((kind, _detail(memory, matrix)), ([], []))
        pair[d > 0].append(line)
        if source is not prev:
            prev = source
            if source is not None:
                key = (source.file, source.line)
                counts, at = per_line[key], per_line_lines[key]
        if source is not None:
            counts[kind] += 1
            at.append(line)
    groups = {(kind, detail, loop): lines for (kind, detail), pair in by_detail.items()
              for loop, lines in ((False, pair[0]), (True, pair[1])) if lines}
    rows = tuple(MixRow(k, d, loop, len(ls), LineRanges.of(ls)) for (k, d, loop), ls in sorted(groups.items()))
    python_lines = tuple(
        LineMix(file, line, _by_count(per_line[(file, line)]), LineRanges.of(per_line_lines[(file, line)]))
        for file, line in sorted(per_line)
    )
    return InstructionMix(program.path, program.isa, fn.name, len(instrs), len(graph.loops), rows, python_lines)


# kind, line, memory, matrix, source: by position (Instruction is a named tuple), not through its field descriptors
_MIX_FIELDS = itemgetter(4, 1, 5, 7, 8)


def _by_count(counts: dict[str, int]) -> dict[str, int]:
    """Kinds by count, most first, then by name; most Python lines have one kind, and sorted() would
    still call its key on it."""
    if len(counts) == 1:
        return dict(counts)
    return dict(sorted(counts.items(), key=_count_order))


def _count_order(kv: tuple[str, int]) -> tuple[int, str]:
    return -kv[1], kv[0]


def _detail(memory, matrix) -> str:
    if memory is not None:
        width = "?" if memory.width_bytes is None else f"{memory.width_bytes}B"
        return f"{memory.space}:{width}" + (f"x{memory.accesses}" if memory.accesses > 1 else "")
    return " ".join(p for p in (matrix.family, matrix.shape, matrix.in_type) if p)
