"""Which artifact lines came from which Python line of the kernel, per stage.

The TUI highlights, in every stage, the lines one Python line became, and jumps from an
IR or ISA line back to its Python line. A LineMap is that relation for one artifact, built
on demand (not part of a scan's Report: most users never ask for it):

- TTIR, TTGIR: each op's location, resolved through `#loc` aliases and callsites to the
  outermost frame in the kernel's own file (irscope/ir/source_map.py);
- LLIR: each instruction's `!dbg` DILocation, its inlinedAt chain followed outwards;
- AMDGCN, PTX, SASS: the instruction mix of the report, which already keeps the artifact
  lines of each Python line (`InstructionMix.python_lines`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Mapping

from irscope.model.kernel import KernelReport

# `  %5 = load <4 x i32>, ptr addrspace(1) %4, align 16, !dbg !12`
_DBG = re.compile(r"!dbg !(\d+)")


@dataclass(frozen=True)
class LineMap:
    stage: str
    path: str
    python_file: str | None
    to_python: Mapping[int, int] = field(default_factory=dict)  # artifact line -> kernel line

    def lines_of(self, python_line: int) -> tuple[int, ...]:
        """The artifact lines that came from one Python line, in file order."""
        return tuple(sorted(n for n, py in self.to_python.items() if py == python_line))


def line_map(report: KernelReport, stage: str) -> LineMap | None:
    """The LineMap of one stage of a kernel; None when the kernel has no such artifact."""
    if stage in ("amdgcn", "ptx", "sass"):
        return _from_mix(report, stage)
    artifact = report.kernel.artifact(stage)
    if artifact is None:
        return None
    from irscope.model.errors import ArtifactError, decode_text

    try:
        data = artifact.read_bytes()
    except (OSError, ArtifactError):  # gone, or over the size limit
        return LineMap(stage, artifact.path, None)
    try:
        text = decode_text(data, artifact.path)
    except ArtifactError:
        return LineMap(stage, artifact.path, None)
    if stage in ("ttir", "ttgir"):
        return _from_mlir(text, artifact.path, stage)
    if stage == "llir":
        return _from_llir(text, artifact.path)
    return LineMap(stage, artifact.path, None)


def _from_mix(report: KernelReport, stage: str) -> LineMap | None:
    mix = next((m for m in report.mix if m.isa == stage), None)
    if mix is None:
        return None
    files = {p.file for p in mix.python_lines}
    user = _kernel_file(report, files)
    to_python = {n: p.line for p in mix.python_lines if p.file == user for n in p.lines}
    return LineMap(stage, mix.path, user, to_python)


def _kernel_file(report: KernelReport, files: set[str]) -> str | None:
    """The kernel's own file among those an artifact names (Triton's library files are named
    too): the one that defines the kernel, else the first."""
    if not files:
        return None
    from irscope.ir.source_file import kernel_source

    return kernel_source(report.kernel.name, files)[0] or sorted(files)[0]


def _from_mlir(text: str, path: str, stage: str) -> LineMap:
    from irscope.parsers.mlir_parser import parse_mlir
    from irscope.ir.source_map import kernel_file, user_line

    module = parse_mlir(text, path)
    user = kernel_file(module)
    to_python = {}
    for op in module.ops:
        line = user_line(module, op, user)
        if line is not None:
            to_python[op.line] = line
    return LineMap(stage, path, user, to_python)


def _from_llir(text: str, path: str) -> LineMap:
    from irscope.parsers.llir import debug_info

    debug = debug_info(text)
    located = {}
    for number, line in enumerate(text.splitlines(), 1):
        m = _DBG.search(line)
        if m is None or line.startswith("!"):
            continue
        where = debug.location(int(m.group(1)))
        if where is not None:
            located[number] = where
    files: dict[str, int] = {}
    for where in located.values():
        files[where.file] = files.get(where.file, 0) + 1
    user = max(files, key=files.get) if files else None
    return LineMap("llir", path, user, {n: w.line for n, w in located.items() if w.file == user})
