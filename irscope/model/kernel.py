"""The typed values every stage of irscope passes along.

harvest -> parse -> model -> analyses -> Report -> renderers. Everything here is a
frozen dataclass so a value can be shared between analyses, hashed, and saved.
Every number irscope reports is a `Fact`: the value plus the `Origin` (artifact
file, line, and what on that line) it was read from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Mapping

from irscope.model.facts import Fact, Origin, T  # noqa: F401 (T: public here)
from irscope.model.findings import Finding
from irscope.model.instruction_mix import InstructionMix
from irscope.model.launches import AutotuneChoice, CompiledConfig, Launch
from irscope.model.layout_summary import LayoutSummary
from irscope.model.occupancy_result import KernelOccupancy
from irscope.model.pass_timeline import PassTimeline
from irscope.model.profile import KernelCounters, KernelTime
from irscope.model.specialization import Specialization


# Triton's own stage names (triton/backends/*/compiler.py add_stages), in pipeline order,
# plus the metadata json. The value is the file extension in a cache directory.
STAGES: tuple[str, ...] = (
    "source", "ttir", "ttgir", "llir", "amdgcn", "hsaco", "ptx", "cubin", "json",
)


@dataclass(frozen=True)
class Target:
    """Mirrors triton.backends.compiler.GPUTarget, with the arch always a string.

    CUDA arches are spelled `sm_90`; Triton's json writes the int 90.
    """

    backend: str  # "hip" or "cuda"
    arch: str  # "gfx942", "sm_90"
    warp_size: int

    def __str__(self) -> str:
        return self.arch


@dataclass(frozen=True)
class Problem:
    """Something irscope could not read, recorded against the file that caused it."""

    path: str
    message: str
    line: int | None = None
    severity: Literal["error", "warning"] = "error"  # "error": data lost; "warning": data may be incomplete

    def __str__(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        return f"{where}: {self.message}"


@dataclass(frozen=True)
class Skipped:
    """A path that was looked at and is, rightly, not a kernel (autotune results, tmp files)."""

    path: str
    reason: str


# A field with this metadata is machine-local: serde neither saves nor loads it.
LOCAL = {"saved": False}


@dataclass(frozen=True)
class Artifact:
    """One compiler output of a kernel. The text is read only when asked for, through
    irscope/model/artifact_reader.py (opened once, no link followed, checked to be the harvested file)."""

    stage: str
    path: str
    size: int
    # blake2b of the bytes the scan's analysis read (None: never read). Saved: a loaded report's
    # artifact is read only when its bytes still match (a report is untrusted input).
    digest: str | None = field(default=None, compare=False)
    # (st_dev, st_ino) at harvest: a read of another file under this name is refused.
    identity: tuple[int, int] | None = field(default=None, compare=False, repr=False, metadata=LOCAL)
    # A link the harvest accepted (to a file beside it, or named by the user): its target, opened instead.
    opened: str | None = field(default=None, compare=False, repr=False, metadata=LOCAL)
    # Loaded from a saved report: read only under `confined_to` (None: under no directory allowed).
    from_report: bool = field(default=False, compare=False, repr=False, metadata=LOCAL)
    confined_to: str | None = field(default=None, compare=False, repr=False, metadata=LOCAL)

    def read_bytes(self) -> bytes:
        """The file's bytes; ArtifactError when it is over the size limit (irscope/model/limits.py), is
        no longer the harvested regular file, or (from a saved report) cannot be checked."""
        from irscope.model.artifact_reader import read_artifact

        return read_artifact(self)[0]


@dataclass(frozen=True)
class KernelOptions:
    """The compile options Triton recorded in the metadata json (`options.__dict__`)."""

    num_warps: Fact[int] | None = None
    num_stages: Fact[int] | None = None
    num_ctas: Fact[int] | None = None
    shared: Fact[int] | None = None  # dynamic shared memory / LDS bytes per block
    waves_per_eu: Fact[int] | None = None
    matrix_instr_nonkdim: Fact[int] | None = None
    kpack: Fact[int] | None = None
    maxnreg: Fact[int] | None = None


@dataclass(frozen=True)
class AmdResources:
    """What the AMDGPU backend wrote about register, scratch and LDS use.

    `vgpr_total` is the unified arch+AGPR count (`.vgpr_count`), the figure that
    limits occupancy on gfx90a and later. `lds_static` is only the static part:
    Triton's LDS is dynamic and lives in KernelOptions.shared.
    """

    vgpr_total: Fact[int] | None = None
    vgpr_arch: Fact[int] | None = None
    agpr: Fact[int] | None = None
    sgpr: Fact[int] | None = None
    vgpr_spill: Fact[int] | None = None
    sgpr_spill: Fact[int] | None = None
    scratch_bytes: Fact[int] | None = None
    lds_static: Fact[int] | None = None
    llvm_occupancy: Fact[int] | None = None
    code_bytes: Fact[int] | None = None
    wavefront_size: Fact[int] | None = None
    max_flat_workgroup_size: Fact[int] | None = None
    # The kernel descriptor's `.amdhsa_next_free_vgpr`: what a wave is allocated. Above
    # `.vgpr_count` when `waves_per_eu` caps occupancy: LLVM pads the allocation ("N,N" asks
    # at most N waves too), so the hardware runs no more waves than asked.
    vgpr_allocated: Fact[int] | None = None


@dataclass(frozen=True)
class NvidiaResources:
    """Registers and memory from the cubin, launch bounds from the PTX.

    `static_shared` excludes the 1 KiB that sm_90+ cubins reserve per block (kept in
    `reserved_shared`; the driver adds it itself); cuobjdump's SHARED adds both.
    `barriers`: named barriers per block, which limit blocks per SM from sm_90 on.
    `stack_bytes` is the per-thread stack frame, where ptxas puts register spills;
    `local_bytes` is statically allocated local memory. Both are local memory to the
    driver; Triton's `n_spills` is their sum / 4.
    """

    registers: Fact[int] | None = None
    local_bytes: Fact[int] | None = None
    stack_bytes: Fact[int] | None = None
    static_shared: Fact[int] | None = None
    reserved_shared: Fact[int] | None = None
    barriers: Fact[int] | None = None
    sm: Fact[int] | None = None  # the SM number the cubin was built for
    reqntid: Fact[tuple[int, ...]] | None = None
    maxnreg: Fact[int] | None = None
    ptx_version: Fact[str] | None = None
    ptx_target: Fact[str] | None = None
    # From the PTX: local arrays LLVM allocated (`.local ... __local_depot0[N]`) are part of
    # the stack frame but are not spills; libdevice's sin/cos slow path is the usual one.
    local_depot: Fact[int] | None = None
    trig_reduction: Fact[str] | None = None

    @property
    def local_memory_bytes(self) -> int | None:
        """Per-thread local memory the driver allocates: stack frame + static local."""
        parts = [f.value for f in (self.stack_bytes, self.local_bytes) if f is not None]
        return sum(parts) if parts else None


Resources = AmdResources | NvidiaResources


@dataclass(frozen=True)
class Kernel:
    """One compiled specialization of a Triton kernel, as found on disk."""

    key: str  # unique within a scan: the directory relative to the scanned root, plus name
    name: str
    directory: str
    layout: str  # "triton-cache", "kernel-dump" or "file"
    artifacts: tuple[Artifact, ...]
    target: Target | None = None
    hash: str | None = None
    triton_version: Fact[str] | None = None
    options: KernelOptions = KernelOptions()
    complete: bool = True  # False while Triton is still writing the directory
    # The raw metadata json (the full specialization); kept for diffing, never compared.
    metadata: Mapping[str, object] = field(default_factory=dict, compare=False, repr=False)

    def artifact(self, stage: str) -> Artifact | None:
        for a in self.artifacts:
            if a.stage == stage:
                return a
        return None

    @property
    def stages(self) -> tuple[str, ...]:
        return tuple(a.stage for a in self.artifacts)


@dataclass(frozen=True)
class KernelReport:
    """A kernel and everything irscope derived from it."""

    kernel: Kernel
    resources: Resources | None = None
    problems: tuple[Problem, ...] = ()
    mix: tuple[InstructionMix, ...] = ()  # one per assembly read: AMDGCN, or PTX (and SASS)
    occupancy: KernelOccupancy | None = None
    findings: tuple[Finding, ...] = ()  # what the rules found, most serious first
    layouts: LayoutSummary | None = None  # the TTGIR's conversions and LDS round trips
    launches: tuple[Launch, ...] = ()  # recorded by `irscope scan script.py`
    passes: PassTimeline | None = None  # from `irscope scan script.py --dump`
    # The TTGIR's signature and dot tiles: what groups configs into families (irscope/occupancy/families.py).
    specialization: Specialization | None = None
    # From `irscope scan script.py`: its constexprs and options, and the autotuners' choices of it (one a tuning key)
    config: CompiledConfig | None = None
    autotune: tuple[AutotuneChoice, ...] = ()
    time: KernelTime | None = None  # from `irscope scan script.py --profile`: its GPU time in the run
    counters: KernelCounters | None = None  # from `--profile=counters`: Nsight Compute's counters of its launches

    @property
    def ok(self) -> bool:
        return not any(p.severity == "error" for p in self.problems)
