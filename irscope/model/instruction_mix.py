"""What a kernel's assembly is made of, per kind of instruction, loop and Python line: the result
irscope/isa/mix.py computes and a KernelReport keeps."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Mapping

from irscope.model.line_ranges import LineRanges


@dataclass(frozen=True)
class MixRow:
    kind: str
    detail: str  # "global:16B", "lds:8Bx2", "mfma 32x32x8 f16", or "" when the kind says it all
    in_loop: bool
    count: int
    lines: LineRanges  # artifact lines of the counted instructions


@dataclass(frozen=True)
class LineMix:
    """What one Python source line became."""

    file: str
    line: int
    counts: Mapping[str, int]  # kind -> count, most first
    lines: LineRanges  # artifact lines


@dataclass(frozen=True)
class InstructionMix:
    path: str
    isa: str
    function: str
    total: int
    loops: int  # natural loops in the function's control flow
    rows: tuple[MixRow, ...]
    python_lines: tuple[LineMix, ...]

    def count(self, kind: str | None = None, in_loop: bool | None = None, detail: str | None = None) -> int:
        return sum(r.count for r in self.rows if (kind is None or r.kind == kind)
                   and (in_loop is None or r.in_loop == in_loop) and (detail is None or r.detail == detail))

    def details(self, kind: str) -> dict[str, int]:
        """detail -> count for one kind, loops and outside together: {"global:16B": 8, ...}."""
        out: dict[str, int] = defaultdict(int)
        for r in self.rows:
            if r.kind == kind:
                out[r.detail] += r.count
        return dict(out)
