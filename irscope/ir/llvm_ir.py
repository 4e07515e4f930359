"""Where an LLVM IR (`.llir`) instruction came from: a kernel source line read from `!dbg` metadata.

`irscope.parsers.llir.debug_info` resolves `!dbg !N` to a SourceLine; the ISA parsers (PTX,
AMDGCN, SASS) use the same record for their `.loc` lines.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class SourceLine:
    """A kernel source position from a `!dbg` location.

    `file`/`line`/`column` are the outermost frame: the line in the user's kernel. When
    the op came from a helper Triton inlined (e.g. `tl.cdiv` in triton/language/standard.py),
    `inlined` holds the helper frames, innermost first.
    """

    file: str  # directory + filename, as the DIFile wrote them
    line: int
    column: int
    inlined: tuple[SourceLine, ...] = ()

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"

    @classmethod
    def from_frames(cls, frames: Sequence[SourceLine]) -> SourceLine:
        """[innermost, ..., outermost] -> the outermost frame, with the others as `inlined`."""
        outer = frames[-1]
        return cls(outer.file, outer.line, outer.column, tuple(frames[:-1]))
