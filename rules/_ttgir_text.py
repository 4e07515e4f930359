"""How IRS301 and IRS302 name what they report: the memory, a layout, a tile, lines."""

from __future__ import annotations

from math import prod

from irscope.ir.source_map import user_frame
from irscope.ir.types import element_of


def memory_word(ctx) -> str:
    return "shared memory" if ctx.backend == "cuda" else "LDS"


def layout_name(ref: str, layout) -> str:
    """`#linear (linear[r4 l6 w2 b0])` for an alias, the summary alone for an inline encoding."""
    summary = layout.summary() if layout is not None else None
    if summary is None:
        return ref
    if ref.startswith("#") and "<" not in ref:
        return f"{ref} ({summary})"
    return summary


def tile_text(ty) -> str:
    shape = "x".join(str(d) for d in getattr(ty, "shape", ()))
    return f"{element_of(ty)} {shape}"


def tile_bytes(ty) -> int:
    bits = getattr(element_of(ty), "bits", None)
    shape = getattr(ty, "shape", ())
    if not bits or not shape:
        return 0
    return prod(shape) * bits // 8


def python_of(module, op, user_file):
    frame = user_frame(op, user_file)
    return (frame.file, frame.line) if frame else None


def lines_text(lines) -> str:
    lines = sorted(set(lines))
    return ("line " if len(lines) == 1 else "lines ") + ", ".join(str(n) for n in lines)
