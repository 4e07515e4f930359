"""A kernel's occupancy, what it was computed from, and what it takes to gain a step.

The inputs are the artifact figures the hardware schedules by, each kept with the line it
came from: on AMD the unified `.vgpr_count`, `.sgpr_count`, Triton's dynamic LDS (metadata
`shared`) plus any static LDS, and num_warps; on NVIDIA the cubin's registers, static shared
and barriers, Triton's dynamic `shared` and num_warps*32 threads. A what-if replaces any
input with a number the user gives (`irscope occupancy ... --vgprs 160`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Mapping

from irscope.model.kernel import AmdResources, Fact, Kernel, NvidiaResources, Origin, Problem, Resources
from irscope.occupancy.amd import AMD_ARCHES, align_to, amd_occupancy, waves_for_sgprs, waves_for_vgprs
from irscope.occupancy.nvidia import nvidia_arch, nvidia_occupancy, triton_max_dynamic_shared
from irscope.model.occupancy_result import Input, KernelOccupancy, Occupancy, Step, StepName  # noqa: F401 (public here)

WHAT_IF = Origin("what-if", None, "given on the command line")
# The input that relieves each limiting resource; slot limits are changed through num_warps.
RELIEF = {"vgpr": "vgprs", "sgpr": "sgprs", "lds": "lds", "registers": "registers", "shared": "shared",
          "barriers": "barriers"}
WARP_CHOICES = (1, 2, 4, 8, 16, 32)
MAX_WORKGROUP_THREADS = 1024  # AMD and NVIDIA alike (occupancy.md §1, §2)


def kernel_occupancy(kernel: Kernel, resources: Resources | None,
                     what_if: Mapping[str, int] | None = None) -> tuple[KernelOccupancy | None, list[Problem]]:
    """Occupancy of one harvested kernel; a Problem (warning) says why when it cannot be computed."""
    what_if = dict(what_if or {})
    where = kernel.artifact("json").path if kernel.artifact("json") else kernel.directory
    if kernel.target is None:
        return None, [Problem(where, "occupancy: the target is unknown", severity="warning")]
    inputs: dict[str, Input] = {}

    def take(name: str, fact: Fact[int] | None) -> None:
        if fact is not None:
            inputs[name] = Input(name, int(fact.value), fact.origin)

    take("warps", kernel.options.num_warps)
    if isinstance(resources, AmdResources):
        take("vgprs", _allocated_vgprs(resources))
        take("sgprs", resources.sgpr)
        take("lds", _lds(kernel, resources))
        # Triton 3.0-3.2 default to 1 and 3.6+ to 0: neither asks the compiler for anything.
        if kernel.options.waves_per_eu is not None and kernel.options.waves_per_eu.value > 1:
            take("waves_per_eu", kernel.options.waves_per_eu)
    elif isinstance(resources, NvidiaResources):
        take("registers", resources.registers)
        take("static_shared", resources.static_shared)
        take("shared", kernel.options.shared)
        take("barriers", resources.barriers)
    for name, value in what_if.items():
        inputs[name] = Input(name, value, WHAT_IF)
    try:
        result = occupancy_for(kernel.target.arch, {k: v.value for k, v in inputs.items()}, inputs)
    except ValueError as exc:
        return None, [Problem(where, f"occupancy: {exc}", severity="warning")]
    notes = (_llvm_note(result, inputs, resources) if not what_if else ()) + _waves_per_eu_note(result) + \
        _padding_note(resources, inputs)
    return replace(result, notes=notes), []


def _allocated_vgprs(resources: AmdResources) -> Fact[int] | None:
    """What a wave is allocated: `.vgpr_count`, or the descriptor's `.amdhsa_next_free_vgpr` when LLVM
    padded it above that to hold occupancy at a waves_per_eu cap (gemlite's configs: 50 used, 169 allocated)."""
    used, allocated = resources.vgpr_total, resources.vgpr_allocated
    if used is None or allocated is None or allocated.value <= used.value:
        return used
    return allocated


def _padding_note(resources: Resources | None, inputs: Mapping[str, Input]) -> tuple[str, ...]:
    """Say where the VGPRs that set occupancy are an allocation padded above what the kernel uses."""
    if not isinstance(resources, AmdResources) or resources.vgpr_total is None or "vgprs" not in inputs:
        return ()
    used, allocated = resources.vgpr_total.value, inputs["vgprs"].value
    if allocated <= used:
        return ()
    cap = inputs.get("waves_per_eu")
    why = f"to hold waves_per_eu={cap.value}'s cap" if cap else "above the kernel's use"
    return (f"LLVM allocates {allocated} VGPRs a wave (.amdhsa_next_free_vgpr) where the kernel uses {used} "
            f"(.vgpr_count), {why}: occupancy follows the allocation",)


def _waves_per_eu_note(result: KernelOccupancy) -> tuple[str, ...]:
    """waves_per_eu only sets the compiler's register budget; say so when something else wins."""
    asked, occ = result.input("waves_per_eu"), result.occupancy
    if asked is None or occ.unit != "waves/SIMD" or occ.active >= asked:
        return ()
    return (f"waves_per_eu={asked} asked the compiler to fit {asked} waves per SIMD, but "
            f"{'+'.join(occ.limiters)} limit the kernel to {occ.active}: the option budgets registers only",)


def occupancy_for(arch: str, values: Mapping[str, int], inputs: Mapping[str, Input] | None = None) -> KernelOccupancy:
    """Occupancy of `arch` for named input values; ValueError names a missing input or arch."""
    negative = [f"{k}={v}" for k, v in values.items() if v < 0]  # a broken json or artifact: no compiler writes them
    if negative:
        raise ValueError(f"{', '.join(negative)} is negative")
    calc = calculator(arch, values)
    occ = calc(dict(values))
    kept = tuple(inputs[k] if inputs and k in inputs else Input(k, v, WHAT_IF) for k, v in values.items())
    return KernelOccupancy(occ, kept, tuple(next_steps(calc, dict(values), occ)))


def calculator(arch: str, values: Mapping[str, int]) -> Callable[[dict[str, int]], Occupancy]:
    if arch in AMD_ARCHES:
        table = AMD_ARCHES[arch]
        _require(arch, values, ("vgprs", "lds", "warps"))

        def amd(v: dict[str, int]) -> Occupancy:
            if not 1 <= v["warps"] * table.wave_size <= MAX_WORKGROUP_THREADS:
                raise ValueError(f"{v['warps']} waves of {table.wave_size} is not a workgroup size "
                                 f"(1 to {MAX_WORKGROUP_THREADS})")
            return amd_occupancy(table, v["vgprs"], v["lds"], v["warps"], v.get("sgprs"))
        return amd
    nv = nvidia_arch(arch)
    if nv is not None:
        _require(arch, values, ("registers", "shared", "warps"))

        def nvidia(v: dict[str, int]) -> Occupancy:
            if v["warps"] < 1:
                raise ValueError(f"{v['warps']} warps is not a block size")
            static, dynamic = v.get("static_shared", 0), v["shared"]
            return nvidia_occupancy(nv, v["registers"], v["warps"] * 32, dynamic, static,
                                    triton_max_dynamic_shared(nv, dynamic, static), v.get("barriers", 1))
        return nvidia
    known = ", ".join([*AMD_ARCHES, "sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"])
    raise ValueError(f"no occupancy table for {arch} (known: {known})")


SOURCES = {
    "vgprs": "`.vgpr_count` in the .amdgcn metadata", "warps": "num_warps",
    "lds": "`shared` in the metadata json (a TRITON_KERNEL_DUMP directory has none: give --lds)",
    "registers": "the register count in the .cubin",
    "shared": "`shared` in the metadata json (a TRITON_KERNEL_DUMP directory has none: give --shared)",
}


def _require(arch: str, values: Mapping[str, int], names: tuple[str, ...]) -> None:
    missing = [SOURCES[n] for n in names if n not in values]
    if missing:
        raise ValueError(f"{arch} needs {'; '.join(missing)}: not found")


def next_steps(calc: Callable[[dict[str, int]], Occupancy], values: dict[str, int], occ: Occupancy) -> list[Step]:
    """For each limiting resource, the value that alone (the other limiters relaxed) gains the next
    step, found by bisection over the calculator itself; then a num_warps that gains one."""
    if occ.active >= occ.max_active:
        return []
    steps = []
    relievable = [RELIEF[r] for r in occ.limiters if RELIEF.get(r) in values]
    for name in relievable:
        also: tuple[str, ...] = ()
        better = _largest_better(calc, values, name, occ.active)
        trial = dict(values)
        if better is None:  # another resource binds at the same point: relax it and say so
            also = tuple(other for other in relievable if other != name)
            trial.update({other: 0 for other in also})
            better = _largest_better(calc, trial, name, occ.active)
        if better is not None:
            trial[name] = better
            gain = calc(trial).active
            hint = _hint(name, values[name], better, gain, occ)
            if also:
                hint += f" (with {' and '.join(also)} cut as well)"
            steps.append(Step(name, values[name], better, gain, hint, also))
    warps = _better_warps(calc, values, occ)
    if warps is not None:
        steps.append(warps)
    return steps


def _largest_better(calc, values: dict[str, int], name: str, active: int) -> int | None:
    lo, hi = 0, values[name] - 1
    if hi < lo or calc({**values, name: lo}).active <= active:
        return None
    while lo < hi:  # invariant: lo gains; find the largest value that still does
        mid = (lo + hi + 1) // 2
        if calc({**values, name: mid}).active > active:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _better_warps(calc, values: dict[str, int], occ: Occupancy) -> Step | None:
    """A num_warps that fits more waves when waves are lost to workgroup granularity or slot limits."""
    per_thread = [r for r in occ.limiters if r in ("vgpr", "sgpr", "registers")]
    slot_bound = any(r in ("slots", "warps", "blocks") for r in occ.limiters)
    if not slot_bound and not per_thread:
        return None
    gains = []
    for n in WARP_CHOICES:
        try:
            active = calc({**values, "warps": n}).active
        except ValueError:
            continue
        if active > occ.active:
            gains.append((-active, abs(n.bit_length() - values["warps"].bit_length()), n))
    if not gains:
        return None
    negative, _, n = min(gains)  # the most waves; of those, the num_warps nearest the kernel's
    active = -negative
    return Step("warps", values["warps"], n, active,
                f"num_warps={n} gives {active} {occ.unit} if the registers per thread stay the same")


def _hint(name: str, now: int, to: int, active: int, occ: Occupancy) -> str:
    gain = f"{active} {occ.unit}"
    if name == "vgprs":
        return f"use at most {to} VGPRs (now {now}): {gain}; ask with waves_per_eu={active}"
    if name == "sgprs":
        return f"use at most {to} SGPRs (now {now}): {gain}"
    if name == "lds":
        return f"cut LDS to {to} bytes per workgroup ({now - to} less: fewer num_stages or smaller tiles): {gain}"
    if name == "registers":
        return f"use at most {to} registers per thread (now {now}; maxnreg={to}): {gain}"
    if name == "shared":
        return f"cut dynamic shared memory to {to} bytes ({now - to} less: fewer num_stages or smaller tiles): {gain}"
    return f"use at most {to} named barriers (now {now}): {gain}"


def _lds(kernel: Kernel, resources: AmdResources) -> Fact[int] | None:
    """Triton's dynamic LDS (metadata `shared`) plus the static LDS LLVM counted (0 for Triton)."""
    dynamic, static = kernel.options.shared, resources.lds_static
    if dynamic is None or static is None or not static.value:
        return dynamic  # unknown without the json: the static figure alone would read as "no LDS"
    return Fact(dynamic.value + static.value, dynamic.origin)


def _llvm_note(result: KernelOccupancy, inputs: dict[str, Input], resources: Resources | None) -> tuple[str, ...]:
    """Why LLVM's `; Occupancy:` comment differs: it counts VGPRs and SGPRs (and waves_per_eu) only."""
    if not isinstance(resources, AmdResources) or resources.llvm_occupancy is None:
        return ()
    llvm, occ = resources.llvm_occupancy, result.occupancy
    if llvm.value == occ.active:
        return ()
    arch = AMD_ARCHES[occ.arch]
    regs = min(waves_for_vgprs(arch, inputs["vgprs"].value), waves_for_sgprs(arch, result.input("sgprs")))
    warps = inputs["warps"].value
    where = f"LLVM's `; Occupancy: {llvm.value}` ({llvm.origin})"
    reasons = []
    if "lds" in occ.limiters:
        lds = inputs["lds"].value
        reasons.append(f"it ignores Triton's dynamic LDS: {lds} B per workgroup, allocated as "
                       f"{align_to(lds, arch.lds_granule)}, fits {occ.allowed('lds')} workgroup(s) "
                       f"in {arch.lds_pool} B")
    if regs > occ.active and occ.allowed("vgpr") == occ.groups:
        reasons.append(f"it counts waves per SIMD from registers alone ({regs}), but a workgroup's {warps} waves "
                       f"must all fit at once: {regs} x {arch.eus} SIMDs = {regs * arch.eus} wave slots hold "
                       f"{occ.allowed('vgpr')} workgroup(s)")
    if not reasons:
        reasons.append(f"it also applies waves_per_eu ({result.input('waves_per_eu')})")
    return (f"{where} differs: {'; and '.join(reasons)}; so {occ.groups} workgroup(s) x {warps} waves / "
            f"{arch.eus} SIMDs = {occ.active} waves per SIMD",)
