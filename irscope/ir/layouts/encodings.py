"""Typed values for TTGIR layout encodings (`#ttg.blocked<...>`, `#ttg.amd_mfma<...>`, ...).

The MLIR parser converts an encoding's `{...}` body into a dict and calls
`irscope.ir.layouts.params.build_layout`:

    #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [8, 8], warpsPerCTA = [4, 1], order = [1, 0]}>
        -> Blocked(size_per_thread=(1, 8), threads_per_warp=(8, 8), warps_per_cta=(4, 1), order=(1, 0))

Spellings differ across Triton 3.0-3.9: the dialect is `triton_gpu.` before 3.3 and `ttg.` from
3.3; MFMA has `versionMajor/versionMinor` up to 3.4 and `version` from 3.5; `#triton_gpu.shared`
(3.0-3.2) is the swizzled layout of both AMD and NVIDIA (`hasLeadingOffset = true` is the
NVIDIA MMA-swizzled one, `#ttg.nvmma_shared` from 3.3). An encoding irscope does not know, or one
whose parameters do not fit, becomes an `UnknownLayout` that keeps its name and text.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

Ints = tuple[int, ...]
Bases = tuple[Ints, ...]


class Layout:
    """Base of every encoding: what it is called and where the data lives."""

    # Every subclass sets `name` (its mnemonic); UnknownLayout keeps it per instance. The base
    # gives no value, or dataclasses would take it as the default of UnknownLayout's field.
    name: ClassVar[str]
    is_shared: ClassVar[bool] = False  # a shared-memory (LDS) encoding of a memdesc
    is_distributed: ClassVar[bool] = False  # held in registers, spread over lanes and warps
    known: ClassVar[bool] = True

    def summary(self) -> str:
        return self.name


@dataclass(frozen=True)
class CtaLayout:
    """How a tensor is split over the CTAs of a cluster (3.0-3.2 print it only when num_ctas > 1)."""

    ctas_per_cga: Ints
    cta_split_num: Ints
    cta_order: Ints



# -- distributed encodings -----------------------------------------------------------------


@dataclass(frozen=True)
class Blocked(Layout):
    name: ClassVar[str] = "blocked"
    is_distributed: ClassVar[bool] = True

    size_per_thread: Ints
    threads_per_warp: Ints
    warps_per_cta: Ints
    order: Ints
    cta_layout: CtaLayout | None = None
    extras: tuple[tuple[str, object], ...] = ()

    @property
    def rank(self) -> int:
        return len(self.order)

    def summary(self) -> str:
        parts = (self.size_per_thread, self.threads_per_warp, self.warps_per_cta, self.order)
        return "blocked[" + "|".join(_csv(p) for p in parts) + "]"


@dataclass(frozen=True)
class Slice(Layout):
    name: ClassVar[str] = "slice"
    is_distributed: ClassVar[bool] = True

    dim: int
    parent: Layout

    def summary(self) -> str:
        return f"slice[dim={self.dim}]({self.parent.summary()})"


@dataclass(frozen=True)
class DotOperand(Layout):
    """Operand A (op_idx 0) or B (op_idx 1) of a dot whose result has layout `parent`."""

    name: ClassVar[str] = "dot_op"
    is_distributed: ClassVar[bool] = True

    op_idx: int
    parent: Layout
    k_width: int | None = None  # absent for a blocked (FMA) parent

    def summary(self) -> str:
        operand = "AB"[self.op_idx] if self.op_idx in (0, 1) else str(self.op_idx)
        k = f",k{self.k_width}" if self.k_width is not None else ""
        return f"dot_op[{operand}{k}]({self.parent.summary()})"


@dataclass(frozen=True)
class AmdMfma(Layout):
    """`version` is the MFMA generation: 2 = CDNA2 (gfx90a), 3 = CDNA3 (gfx942), 4 = CDNA4 (gfx950)."""

    name: ClassVar[str] = "amd_mfma"
    is_distributed: ClassVar[bool] = True

    version: int
    warps_per_cta: Ints
    instr_shape: Ints  # (M, N) before 3.6, (M, N, K) from 3.6
    is_transposed: bool
    version_minor: int | None = None  # only in the versionMajor/versionMinor spelling (<= 3.4)
    tiles_per_warp: Ints | None = None
    element_bit_width: int | None = None  # 64 for f64 MFMA; absent means 32-bit results
    cta_layout: CtaLayout | None = None
    extras: tuple[tuple[str, object], ...] = ()

    @property
    def m_dim(self) -> int:
        return self.instr_shape[0]

    @property
    def n_dim(self) -> int:
        return self.instr_shape[1]

    @property
    def k_dim(self) -> int | None:
        return self.instr_shape[2] if len(self.instr_shape) > 2 else None

    def summary(self) -> str:
        shape = "x".join(map(str, self.instr_shape))
        t = "|T" if self.is_transposed else ""
        return f"mfma.v{self.version}[{shape}|w{_csv(self.warps_per_cta)}{t}]"


@dataclass(frozen=True)
class AmdWmma(Layout):
    """RDNA WMMA. Warps are `warpsPerCTA` up to 3.8 and linear `ctaLayout = {warp = ...}` in 3.9."""

    name: ClassVar[str] = "amd_wmma"
    is_distributed: ClassVar[bool] = True

    version: int
    is_transposed: bool
    warps_per_cta: Ints | None = None
    warp_bases: Bases | None = None
    instr_shape: Ints | None = None
    cta_layout: CtaLayout | None = None
    extras: tuple[tuple[str, object], ...] = ()

    def summary(self) -> str:
        warps = _csv(self.warps_per_cta) if self.warps_per_cta is not None else f"{len(self.warp_bases or ())}b"
        t = "|T" if self.is_transposed else ""
        return f"wmma.v{self.version}[w{warps}{t}]"


@dataclass(frozen=True)
class NvidiaMma(Layout):
    """mma.sync (version_major 2, Ampere) or wgmma (3, Hopper) accumulators."""

    name: ClassVar[str] = "nvidia_mma"
    is_distributed: ClassVar[bool] = True

    version_major: int
    version_minor: int
    warps_per_cta: Ints
    instr_shape: Ints
    cta_layout: CtaLayout | None = None
    extras: tuple[tuple[str, object], ...] = ()

    def summary(self) -> str:
        shape = "x".join(map(str, self.instr_shape))
        return f"mma.v{self.version_major}[{shape}|w{_csv(self.warps_per_cta)}]"


@dataclass(frozen=True)
class Linear(Layout):
    """Explicit F2 bases: each entry maps one bit of the register/lane/warp/block id to a tensor index."""

    name: ClassVar[str] = "linear"
    is_distributed: ClassVar[bool] = True

    register: Bases
    lane: Bases
    warp: Bases
    block: Bases = ()

    def summary(self) -> str:
        return f"linear[r{len(self.register)} l{len(self.lane)} w{len(self.warp)} b{len(self.block)}]"


# -- shared-memory encodings ---------------------------------------------------------------


@dataclass(frozen=True)
class SwizzledShared(Layout):
    """`#ttg.swizzled_shared` (3.3+) and the 3.0-3.2 `#triton_gpu.shared`."""

    name: ClassVar[str] = "swizzled_shared"
    is_shared: ClassVar[bool] = True

    vec: int
    per_phase: int
    max_phase: int
    order: Ints
    has_leading_offset: bool | None = None  # 3.0-3.2 only; True = NVIDIA MMA (wgmma) swizzling
    cta_layout: CtaLayout | None = None
    extras: tuple[tuple[str, object], ...] = ()

    def summary(self) -> str:
        lead = "|lead" if self.has_leading_offset else ""
        return f"swizzled[v{self.vec} {self.per_phase}/{self.max_phase}|{_csv(self.order)}{lead}]"


@dataclass(frozen=True)
class NvmmaShared(Layout):
    name: ClassVar[str] = "nvmma_shared"
    is_shared: ClassVar[bool] = True

    swizzling_byte_width: int
    transposed: bool
    element_bit_width: int
    fp4_padded: bool = False
    cta_layout: CtaLayout | None = None
    extras: tuple[tuple[str, object], ...] = ()

    def summary(self) -> str:
        t = "|T" if self.transposed else ""
        return f"nvmma[{self.swizzling_byte_width}B|{self.element_bit_width}b{t}]"


@dataclass(frozen=True)
class PaddedShared(Layout):
    """`#ttg.padded_shared<[512:+8] {offset = [[0, 1], ...], block = []}>`: after every
    `interval` elements, `padding` elements are skipped (the interval/padding pairs)."""

    name: ClassVar[str] = "padded_shared"
    is_shared: ClassVar[bool] = True

    intervals: tuple[tuple[int, int], ...]
    offset_bases: Bases | None = None
    block_bases: Bases | None = None
    order: Ints | None = None  # the newer `{order = [1, 0], shape = [16, 128]}` body
    shape: Ints | None = None
    extras: tuple[tuple[str, object], ...] = ()

    def summary(self) -> str:
        return "padded[" + ",".join(f"{i}:+{p}" for i, p in self.intervals) + "]"


@dataclass(frozen=True)
class AmdRotatingShared(Layout):
    name: ClassVar[str] = "amd_rotating_shared"
    is_shared: ClassVar[bool] = True

    vec: int
    per_phase: int
    max_phase: int
    order: Ints
    cta_layout: CtaLayout | None = None
    extras: tuple[tuple[str, object], ...] = ()

    def summary(self) -> str:
        return f"rotating[v{self.vec} {self.per_phase}/{self.max_phase}|{_csv(self.order)}]"


@dataclass(frozen=True)
class SharedMemory(Layout):
    """`#smem = #ttg.shared_memory`: the memory space of a memdesc, not a tensor encoding."""

    name: ClassVar[str] = "shared_memory"

    def summary(self) -> str:
        return "smem"


@dataclass(frozen=True)
class UnknownLayout(Layout):
    """An encoding kept as written: its mnemonic, parameters and text, and why it is unknown."""

    known: ClassVar[bool] = False

    name: str  # type: ignore[misc]  # a field here, a class constant in the known layouts
    params: Mapping[str, object] | None = field(compare=False, hash=False, repr=False)  # as parsed
    raw: str  # the attribute text; identifies the layout
    reason: str = "irscope does not model this encoding"

    def summary(self) -> str:
        return f"{self.name}?"


def _csv(values: Ints | None) -> str:
    return ",".join(map(str, values or ()))
