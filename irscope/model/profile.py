"""GPU time measured while `irscope scan script.py --profile` ran the script (docs/profile.md).

Proton timed every kernel on the GPU (irscope/pipeline/profile_session.py, parsers/proton.py); each
Triton kernel irscope analyzed gets its `KernelTime`, and the run its `RunProfile`: the GPU time of
everything it launched, what Triton's kernels hold of it, and the kernels irscope did not launch
(cuBLAS, torch's own), counted apart. The autotuners' timing of their configs is not in it: Proton is
paused meanwhile (irscope/pipeline/profile_session.py), and their own timings are each config's `ms`
(irscope/model/launches.py). Every time comes from one node of the profile
file (`RunProfile.path`), found by the launch's number in the launches file (`KernelTime.first_launch`).
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_LAUNCH_TIMES = 1_000  # each launch's time is kept for a kernel's first launches


@dataclass(frozen=True)
class KernelTime:
    """One compiled kernel's GPU time in the run."""

    launches: int
    total_ns: int
    share: float  # of the run's GPU time (every kernel, Triton's or not), 0-1
    first_launch: int | None = None  # its number in the launches file: the profile's `irscope:launch:N`
    launch_ns: tuple[int, ...] = ()  # each launch, in order (the first MAX_LAUNCH_TIMES)
    bytes: int | None = None  # the distinct tensors its launches were given, summed over the timed launches
    # its dots' FLOPs over the timed launches (irscope/ir/dot_flops.py): 0 without a dot, None when unknown
    flops: int | None = None
    flops_unknown: str | None = None  # why flops is None
    element: str | None = None  # the dot's operand element type ("f16", "bf16", "f8E4M3FN", "f32")

    @property
    def tflops(self) -> float | None:
        """Achieved TFLOP/s of its dots (FLOPs per ns / 1,000)."""
        return self.flops / self.total_ns / 1e3 if self.flops and self.total_ns else None

    @property
    def mean_ns(self) -> float:
        return self.total_ns / self.launches if self.launches else 0.0

    @property
    def gb_per_s(self) -> float | None:
        """The least bytes its launches must move over their time (GB/s = bytes per ns)."""
        return self.bytes / self.total_ns if self.bytes and self.total_ns else None


@dataclass(frozen=True)
class OtherKernel:
    """A GPU kernel the script ran that irscope did not launch (cuBLAS, cuDNN, torch's elementwise ops)."""

    name: str
    launches: int
    total_ns: int


@dataclass(frozen=True)
class RunProfile:
    path: str  # the profile file Proton wrote
    profiler: str  # "proton"
    devices: tuple[str, ...]  # "CUDA 0: arch 90, 132 SMs"
    gpu_ns: int  # every kernel the profile timed
    triton_ns: int  # of which the launches irscope recorded
    triton_launches: int
    others: tuple[OtherKernel, ...] = ()  # most time first
    untimed: int = 0  # recorded launches with no kernel in the profile (a script that exited mid-run)
    # The device's DRAM bandwidth, bytes/s, from the profile's device facts: 2 x memory clock x bus width / 8
    dram_peak: float | None = None
    arch: str | None = None  # the first device's, from the same facts: "90" (CUDA compute capability), "gfx942"
    units: int | None = None  # its SMs / CUs

    @property
    def device(self):
        """The known part profiled (irscope/model/device_peaks.py: its peaks, with their source), or None."""
        from irscope.model.device_peaks import device_of

        return device_of(self.arch, self.units, self.dram_peak)

    def dram_fraction(self, time: KernelTime) -> float | None:
        """A kernel's achieved bandwidth (its tensors' bytes over its time) against the device's."""
        rate = time.gb_per_s
        return rate * 1e9 / self.dram_peak if rate is not None and self.dram_peak else None

    @property
    def others_ns(self) -> int:
        return self.gpu_ns - self.triton_ns


@dataclass(frozen=True)
class KernelCounters:
    """Nsight Compute's counters of one kernel's launches (`--profile=counters`); each value from its CSV,
    whose row of the first launch is `first_line`."""

    launches: int  # profiled
    first_line: int
    theoretical_warps: float | None  # per SM: sm__maximum_warps_avg_per_active_cycle, the first launch's
    theoretical_pct: float | None  # the same in % of the SM's warps
    achieved_pct: float | None  # sm__warps_active.avg.pct_of_peak_sustained_active, the launches' mean
    block_limits: tuple[tuple[str, int], ...] = ()  # (registers, shared, warps, blocks) -> blocks per SM it allows
    registers: int | None = None  # per thread, as the driver allocated them
    dram_bytes: int | None = None  # summed over the launches
    instructions: int | None = None  # warp instructions executed, summed
    duration_ns: int | None = None  # summed; under Nsight Compute's replay, each launch alone on the GPU
    irscope_warps: int | None = None  # irscope's occupancy of the kernel, warps per SM
    agrees: bool | None = None  # irscope's warps per SM == Nsight Compute's theoretical; None: one is unknown
