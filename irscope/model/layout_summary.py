"""The layout facts a saved report keeps: each convert_layout and each LDS round trip (built by
irscope/ir/layouts/summary.py)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ConversionSummary:
    source: str  # layout summaries, as LayoutFacts gives them
    target: str
    lowering: str  # noop | registers | warp_shuffle | shared_memory | unknown
    in_loop: bool
    line: int  # in the .ttgir
    python_line: int | None


@dataclass(frozen=True)
class RoundTripSummary:
    stored: str
    loaded: str
    in_loop: bool
    feeds_dot: bool  # GEMM operand staging
    python_line: int | None


@dataclass(frozen=True)
class LayoutSummary:
    path: str  # the .ttgir
    conversions: tuple[ConversionSummary, ...] = ()
    round_trips: tuple[RoundTripSummary, ...] = ()
