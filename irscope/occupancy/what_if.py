"""The numbers `irscope occupancy` is given (--vgprs, --lds, ...): which arch reads which, what is missing
for a what-if, what no hardware holds, and re-targeting a harvested kernel with --arch.

Each check returns the message to print (a usage error, exit 2) or None. The limits are the arch tables'
(irscope/occupancy/amd.py, occupancy_nvidia.py; ../shared/reference/occupancy.md), never copies.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Mapping

from irscope.model.kernel import AmdResources, Kernel, Resources
from irscope.occupancy.calculator import MAX_WORKGROUP_THREADS, WARP_CHOICES, KernelOccupancy
from irscope.occupancy.amd import AMD_ARCHES
from irscope.occupancy.nvidia import DEFAULT_SHARED_PER_BLOCK, nvidia_arch

AMD_FLAGS = ("vgprs", "sgprs", "lds")
NVIDIA_FLAGS = ("registers", "shared", "static_shared", "barriers")
# What a what-if without a kernel needs, then what it may add (a default in brackets).
NEEDED = {"amd": ("--vgprs N", "--warps N"), "nvidia": ("--registers N", "--warps N")}
OPTIONAL = {"amd": ("--lds N (default 0)", "--sgprs N"),
            "nvidia": ("--shared N (default 0)", "--static-shared N", "--barriers N")}


def flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def vendor(arch: str) -> str | None:
    if arch in AMD_ARCHES:
        return "amd"
    return "nvidia" if nvidia_arch(arch) is not None else None


def given(args) -> dict[str, int]:
    """The numbers given on the command line, by the name of their flag (dest)."""
    return {name: getattr(args, name) for name in ("warps", *AMD_FLAGS, *NVIDIA_FLAGS)
            if getattr(args, name, None) is not None}


def missing(arch: str, numbers: Mapping[str, int]) -> str | None:
    """A what-if without PATH: the flags it still needs, and what else it reads."""
    side = vendor(arch)
    if side is None:
        return None  # the calculator names the known arches
    lacking = [f for f in NEEDED[side] if f.split()[0][2:] not in numbers]
    if not lacking:
        return None
    what = "no numbers" if not numbers else "not enough numbers"
    return (f"occupancy --arch {arch} with {what}: give {' and '.join(lacking)}, and optionally "
            f"{', '.join(OPTIONAL[side])}; or give a PATH to harvested kernels")


def refused(arch: str, numbers: Mapping[str, int]) -> str | None:
    """Why these numbers cannot describe a kernel on `arch` (a what-if without PATH): the other
    vendor's flag, or more than the hardware holds."""
    side = vendor(arch)
    if side is None:
        return None
    # --lds and --shared are one number by either vendor's name
    other = [flag(n) for n in (("registers", "static_shared", "barriers") if side == "amd" else ("vgprs", "sgprs"))
             if n in numbers]
    if other:
        takes = "--vgprs, --sgprs, --lds (or --shared)" if side == "amd" else \
            "--registers, --shared (or --lds), --static-shared, --barriers"
        return f"{', '.join(other)}: not a number {arch} reads ({'NVIDIA' if side == 'amd' else 'AMD'}'s); " \
               f"{arch} takes {takes} and --warps"
    return beyond_hardware(arch, numbers)


def beyond_hardware(arch: str, numbers: Mapping[str, int]) -> str | None:
    """The first number more than `arch` holds. With PATH each kernel reads its own vendor's flags
    (a cache holds both), so only this is checked there."""
    side = vendor(arch)
    if side is None:
        return None
    return _warps_refused(arch, numbers) or (_amd_refused(arch, numbers) if side == "amd"
                                             else _nvidia_refused(arch, numbers))


def _warps_refused(arch: str, numbers: Mapping[str, int]) -> str | None:
    wave = AMD_ARCHES[arch].wave_size if arch in AMD_ARCHES else 32
    legal = [w for w in WARP_CHOICES if w * wave <= MAX_WORKGROUP_THREADS]
    warps = numbers.get("warps")
    if warps is None or warps in legal:
        return None
    return (f"--warps {warps}: num_warps on {arch} is one of {', '.join(map(str, legal))} (a power of two, "
            f"at most {MAX_WORKGROUP_THREADS} threads in waves of {wave})")


def _memory_flag(numbers: Mapping[str, int], own: str) -> str:
    """The name the user gave LDS / dynamic shared memory by: the vendor's own, else the other's."""
    return own if own in numbers else ("shared" if own == "lds" else "lds")


def _first_over(arch: str, numbers: Mapping[str, int], limits) -> str | None:
    return next((f"{flag(name)} {numbers[name]}: {arch} has at most {most} {what}"
                 for name, most, what in limits if numbers.get(name, 0) > most), None)


def _amd_refused(arch: str, numbers: Mapping[str, int]) -> str | None:
    table = AMD_ARCHES[arch]
    return _first_over(arch, numbers, (("vgprs", table.max_vgprs_per_wave, "VGPRs per wave"),
                                       ("sgprs", table.max_sgprs, "SGPRs per wave (.sgpr_count)"),
                                       (_memory_flag(numbers, "lds"), table.max_lds_per_workgroup,
                                        "bytes of LDS per workgroup")))


def _nvidia_refused(arch: str, numbers: Mapping[str, int]) -> str | None:
    table = nvidia_arch(arch)
    static = numbers.get("static_shared", 0)
    return _first_over(arch, numbers, (
        ("registers", table.max_registers_per_thread, "registers per thread"),
        ("static_shared", DEFAULT_SHARED_PER_BLOCK, "bytes of static shared memory per block"),
        (_memory_flag(numbers, "shared"), table.shared_optin - min(static, table.shared_optin),
         "bytes of dynamic shared memory per block" + (f" beside {static} static" if static else "")),
        ("barriers", table.named_barriers, "named barriers per block")))


def retarget(kernel: Kernel, resources: Resources | None, arch: str) -> tuple[Kernel, Resources | None] | str:
    """The kernel's own numbers on `arch` (--arch with PATH), or why that is refused: another vendor, or
    another wave size, compiles to different code altogether."""
    own = kernel.target
    if own is None or own.arch == arch:
        return kernel, resources
    if vendor(own.arch) != vendor(arch) or (arch in AMD_ARCHES and AMD_ARCHES[arch].wave_size != own.warp_size):
        return (f"--arch {arch}: {kernel.name} ({kernel.key}) was compiled for {own.arch}, and its numbers do not "
                f"carry over to {arch}: choose kernels of the same vendor and wave size with --kernel, or compile "
                f"for {arch} (`irscope scan script.py --target {arch}`)")
    if isinstance(resources, AmdResources):
        resources = replace(resources, llvm_occupancy=None)  # LLVM's comment is about the kernel's own arch
    return replace(kernel, target=replace(own, arch=arch)), resources


def retarget_note(result: KernelOccupancy, own: str, arch: str) -> KernelOccupancy:
    if own == arch:
        return result
    return replace(result, notes=(f"--arch {arch}: the numbers compiled for {own}, placed on {arch}; "
                                  f"a build for {arch} may use different ones",) + result.notes)
