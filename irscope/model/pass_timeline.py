"""A `--dump` run's passes for one kernel and where the final TTGIR's layout conversions came from:
the result irscope/ir/pass_timeline.py reads and a KernelReport keeps."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PassStep:
    index: int
    name: str
    anchor: str
    symbol: str | None
    header_line: int
    changed: bool | None  # None for the last pass: no dump after it
    first_line: int | None = None  # the IR before this pass: these lines of the dump
    last_line: int | None = None


@dataclass(frozen=True)
class Origin:
    """A convert_layout or local_alloc of the final TTGIR and the pass that introduced it."""

    op: str  # "convert_layout" or "local_alloc"
    types: str  # "tensor<...> -> tensor<...>" with layouts spelled out
    python_line: int | None
    count: int  # how many such ops the final TTGIR has
    introduced_by: str  # the pass name
    pass_index: int
    dump_line: int  # the line in the dump of that pass's header


@dataclass(frozen=True)
class PassTimeline:
    path: str
    kernel: str | None
    passes: tuple[PassStep, ...]
    final_ttgir: int | None  # index of the pass whose "before" dump is the final TTGIR
    origins: tuple[Origin, ...]
    num_warps: int | None = None  # from the final TTGIR's module attributes: which compile it was
    shared: int | None = None

    @property
    def changed(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.passes if p.changed)
