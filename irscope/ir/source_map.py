"""From IR ops back to the Python lines of the kernel that produced them.

An op's location is resolved through `#loc` aliases, NameLocs and callsites
(parsers/mlir_attributes.py). The user's line is the outermost frame in the kernel's own
file: for `tl.cdiv` inlined from triton/language/standard.py that is the line in the
kernel that called it, and the frame inside Triton's library is kept beside it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union

from irscope.ir.mlir import MlirModule, Op, SourceFrame
from irscope.model.kernel import Kernel


@dataclass(frozen=True)
class PythonLine:
    file: str
    line: int
    ops: tuple[int, ...]  # op indices into the module, in IR order
    op_names: tuple[str, ...]  # canonical names of those ops, same order
    library_frames: tuple[SourceFrame, ...]  # frames inside Triton's library reached from this line
    text: Optional[str] = None  # the source line, when the kernel file is readable here


def kernel_file(module: MlirModule) -> Optional[str]:
    """The file of the first function's location: the @triton.jit kernel's own file."""
    for op in module.functions():
        if op.location and op.location.outermost:
            return op.location.outermost.file
    return None


def user_frame(op: Op, user_file: Optional[str]) -> Optional[SourceFrame]:
    if op.location is None or not op.location.frames:
        return None
    if user_file is None:
        return op.location.outermost
    for frame in reversed(op.location.frames):
        if frame.file == user_file:
            return frame
    return None


def user_line(module: MlirModule, op: Op, user_file: Optional[str] = None) -> Optional[int]:
    frame = user_frame(op, user_file or kernel_file(module))
    return frame.line if frame else None


def python_lines(source: Union[MlirModule, Kernel], user_file: Optional[str] = None) -> list[PythonLine]:
    """The kernel's Python lines in order, each with the ops that come from it.

    `source` is a parsed module, or a harvested Kernel (its TTGIR, else its TTIR, is
    parsed). Ops without a location in the kernel's file (`loc(unknown)`, Triton's
    own helpers) belong to no line.
    """
    module = source if isinstance(source, MlirModule) else _parse_kernel_ir(source)
    user_file = user_file or kernel_file(module)
    if user_file is None:
        return []
    grouped: dict[int, list[Op]] = {}
    library: dict[int, set[SourceFrame]] = {}
    for op in module.ops:
        frame = user_frame(op, user_file)
        if frame is None or frame.file != user_file:
            continue
        grouped.setdefault(frame.line, []).append(op)
        inner = op.location.innermost if op.location else None
        if inner is not None and inner.file != user_file:
            library.setdefault(frame.line, set()).add(inner)
    lines = _read_lines(user_file)
    return [PythonLine(user_file, line, tuple(o.index for o in ops), tuple(o.canonical_name for o in ops),
                       tuple(sorted(library.get(line, ()), key=str)),
                       lines[line - 1].rstrip("\n") if lines and 0 < line <= len(lines) else None)
            for line, ops in sorted(grouped.items())]


def _read_lines(path: str) -> Optional[list[str]]:
    from irscope.ir.source_file import read_source

    text = read_source(path)  # a path from the artifact: only a regular .py file is read
    return None if text is None else text.splitlines()


def _parse_kernel_ir(kernel: Kernel) -> MlirModule:
    from irscope.model.errors import decode_text
    from irscope.parsers.mlir_parser import parse_mlir

    for stage in ("ttgir", "ttir"):
        artifact = next((a for a in kernel.artifacts if a.stage == stage), None)
        if artifact is not None:
            return parse_mlir(decode_text(artifact.read_bytes(), artifact.path), artifact.path)
    raise ValueError(f"{kernel.directory}: no TTGIR or TTIR to map to Python lines")
