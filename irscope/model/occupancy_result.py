"""The answer both occupancy calculators give (irscope/occupancy/amd.py, occupancy_nvidia.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from irscope.model.facts import Origin


@dataclass(frozen=True)
class Limit:
    """How many workgroups (blocks) one resource alone lets a CU (SM) hold."""

    resource: str
    groups: int


@dataclass(frozen=True)
class Occupancy:
    """How many of a kernel's workgroups (blocks) one CU (SM) holds at once, and why no more.

    `active` counts in the hardware's own unit: waves per SIMD on AMD, where the ROCm guide
    and LLVM's `; Occupancy:` count; warps per SM on NVIDIA, as the CUDA calculator does.
    """

    arch: str
    unit: str  # "waves/SIMD" or "warps/SM"
    active: int  # 0 only when no workgroup fits: the kernel cannot launch
    max_active: int
    groups: int  # workgroups per CU (AMD) or blocks per SM (NVIDIA)
    limits: tuple[Limit, ...]  # one per resource, in a fixed order per vendor
    limiters: tuple[str, ...]  # the resources at the minimum
    # The SIMDs of a CU the resident waves occupy (AMD): fewer than `simds` when the CU holds fewer
    # waves than it has SIMDs (one 2-wave workgroup: 1 wave on 2 of 4 SIMDs). 1 and 1 on NVIDIA.
    simds_used: int = 1
    simds: int = 1
    waves: int = 0  # waves (warps) resident in one CU (SM): groups x waves per group; 0 in older reports

    @property
    def launchable(self) -> bool:
        """False when not one workgroup fits a CU (LDS over the CU's, say): Triton refuses to launch it."""
        return self.groups > 0

    @property
    def partial(self) -> bool:
        """Some SIMDs hold no wave of this kernel at all."""
        return 0 < self.simds_used < self.simds

    def allowed(self, resource: str) -> int:
        return next(limit.groups for limit in self.limits if limit.resource == resource)

    @property
    def fraction(self) -> float:
        return self.active / self.max_active

    def __str__(self) -> str:
        return f"{self.active}/{self.max_active} {self.unit} ({', '.join(self.limiters)})"


UNBOUNDED = 1 << 30  # what a resource the kernel does not use allows


def occupancy_of(arch: str, unit: str, warps_per_group: int, max_active: int, per: int,
                 allows: dict[str, int]) -> Occupancy:
    """The minimum over `allows`; `per` is the SIMDs a workgroup spreads over (1 for an SM).

    Waves spread over the CU's SIMDs: `active` is the waves on each SIMD, and where the CU holds
    fewer waves than SIMDs (one 2-wave workgroup on 4 SIMDs) it is the 1 wave of the SIMDs in use,
    with `simds_used` saying how many: never "0" for a kernel that runs."""
    groups = min(allows.values())
    limiters = tuple(k for k, v in allows.items() if v == groups)
    limits = tuple(Limit(k, v) for k, v in allows.items())
    waves = groups * warps_per_group
    active = max(waves // per, 1) if waves else 0
    return Occupancy(arch, unit, active, max_active, groups, limits, limiters, min(waves, per), per, waves)


# What a step changes: a relievable resource, or num_warps. A Literal, so a saved report naming
# anything else is malformed when read (irscope/model/serde.py), not a KeyError in a renderer.
StepName = Literal["vgprs", "sgprs", "lds", "registers", "shared", "barriers", "warps"]


@dataclass(frozen=True)
class Input:
    """One number occupancy was computed from, and the artifact line (or what-if) it came from."""

    name: str
    value: int
    origin: Origin


@dataclass(frozen=True)
class Step:
    """One change that alone reaches the next occupancy step: `name` down to `to` (warps: set to)."""

    name: StepName
    now: int
    to: int
    active: int  # occupancy after the change, in the Occupancy's unit
    hint: str
    also: tuple[str, ...] = ()  # other limiting inputs that must be relieved too (each has its own step)


@dataclass(frozen=True)
class KernelOccupancy:
    occupancy: Occupancy
    inputs: tuple[Input, ...]
    steps: tuple[Step, ...] = ()
    notes: tuple[str, ...] = ()  # why irscope differs from the compiler's own figure, and similar

    def input(self, name: str) -> int | None:
        return next((i.value for i in self.inputs if i.name == name), None)
