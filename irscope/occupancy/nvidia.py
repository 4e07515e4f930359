"""NVIDIA occupancy: blocks per SM as the CUDA occupancy calculator computes them.

A port of cudaOccMaxActiveBlocksPerMultiprocessor (cuda_occupancy.h, compute capability
8.0 and later): registers in units of 256 per warp with the per-sub-partition floor, shared
memory with the 1 KiB per-block reserve and the carve-out steps, warp, block and (sm_90+)
barrier limits. Constants and sources: ../shared/reference/occupancy.md §2; the port is
checked against the H100 driver in tests/data/nvidia_occupancy_h100.csv.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from irscope.model.occupancy_result import UNBOUNDED, Occupancy, occupancy_of

KIB = 1024
DEFAULT_SHARED_PER_BLOCK = 48 * KIB  # what a block gets without the opt-in attribute; static shared's limit too
SUB_PARTITIONS = 4
REGISTER_UNIT = 256  # registers are allocated per warp in units of 256
SHARED_GRANULE = 128


@dataclass(frozen=True)
class NvidiaArch:
    name: str
    cc: int  # 90 for sm_90 / sm_90a
    max_warps: int  # per SM
    max_blocks: int  # per SM
    shared_per_sm: int  # bytes, the largest carve-out
    carveout_kib: tuple[int, ...]  # the shared-memory sizes an SM can be configured to
    reserved_shared: int = KIB  # per block, cc >= 8.0
    registers_per_sm: int = 65536
    registers_per_block: int = 65536
    max_registers_per_thread: int = 255
    named_barriers: int = 16  # per block (PTX bar.sync 0..15)

    @property
    def shared_optin(self) -> int:
        """The most shared memory one block may opt in to (cudaDevAttrMaxSharedMemoryPerBlockOptin)."""
        return self.shared_per_sm - self.reserved_shared

    @property
    def barrier_slots(self) -> int | None:
        """Named barriers per SM, in units of the block limit; None before sm_90 (no limit)."""
        if self.cc < 90:
            return None
        return self.max_blocks * 2 if self.cc in (90, 100) else self.max_blocks


_AMPERE_STEPS = (0, 8, 16, 32, 64, 100)
_BIG_STEPS = (0, 8, 16, 32, 64, 100, 132, 164, 196, 228)
NVIDIA_ARCHES = {
    a.name: a for a in (
        NvidiaArch("sm_80", 80, 64, 32, 164 * KIB, (0, 8, 16, 32, 64, 100, 132, 164)),
        NvidiaArch("sm_86", 86, 48, 16, 100 * KIB, _AMPERE_STEPS),
        NvidiaArch("sm_89", 89, 48, 24, 100 * KIB, _AMPERE_STEPS),
        NvidiaArch("sm_90", 90, 64, 32, 228 * KIB, _BIG_STEPS),
        NvidiaArch("sm_100", 100, 64, 32, 228 * KIB, _BIG_STEPS),
        NvidiaArch("sm_120", 120, 48, 24, 100 * KIB, _AMPERE_STEPS),
    )
}


def nvidia_arch(name: str) -> NvidiaArch | None:
    """`sm_90a`, `sm_90`, `90` -> the sm_90 row; None for an arch with no row."""
    m = re.fullmatch(r"(?:sm_)?(\d+)[af]?", name.strip())
    return NVIDIA_ARCHES.get(f"sm_{m.group(1)}") if m else None


def round_up(value: int, unit: int) -> int:
    return -(-value // unit) * unit


def triton_max_dynamic_shared(arch: NvidiaArch, dynamic: int, static: int) -> int | None:
    """The MAX_DYNAMIC_SHARED_SIZE_BYTES Triton's launcher sets: opt-in minus static above
    48 KiB (triton/backends/nvidia/driver.c loadBinary); None leaves the driver's default."""
    return arch.shared_optin - static if dynamic > DEFAULT_SHARED_PER_BLOCK else None


def blocks_for_registers(arch: NvidiaArch, registers: int, warps: int) -> int:
    per_warp = round_up(registers * 32, REGISTER_UNIT)
    if registers > 256 or (  # 256: the allocation maximum (cuda_occupancy.h); the ISA stops at 255
            arch.registers_per_block < per_warp * round_up(warps, SUB_PARTITIONS)):
        return 0
    if per_warp == 0:
        return UNBOUNDED
    # Each sub-partition holds a quarter of the file and whole warps only.
    warps_per_sm = (arch.registers_per_sm // SUB_PARTITIONS) // per_warp * SUB_PARTITIONS
    return warps_per_sm // warps


def shared_per_block(arch: NvidiaArch, dynamic: int, static: int) -> int:
    """Bytes one block takes from the SM: static + dynamic + the reserve, in 128 B units."""
    return round_up(static + arch.reserved_shared + dynamic, SHARED_GRANULE)


def blocks_for_shared(arch: NvidiaArch, dynamic: int, static: int, max_dynamic: int | None,
                      carveout_percent: int | None = None) -> int:
    if max_dynamic is None:
        max_dynamic = DEFAULT_SHARED_PER_BLOCK - static
    alloc = shared_per_block(arch, dynamic, static)
    opted_in = static + arch.reserved_shared + max_dynamic > DEFAULT_SHARED_PER_BLOCK
    limit = (arch.shared_optin if opted_in else DEFAULT_SHARED_PER_BLOCK) + arch.reserved_shared
    if dynamic > max_dynamic or alloc > limit:
        return 0
    wanted = arch.shared_per_sm if carveout_percent is None else -(-carveout_percent * arch.shared_per_sm // 100)
    per_sm = _carveout_step(arch, wanted)
    if per_sm < alloc:  # the driver picks a bigger carve-out rather than fail the launch
        per_sm = _carveout_step(arch, alloc)
    return per_sm // alloc


def _carveout_step(arch: NvidiaArch, nbytes: int) -> int:
    return next((s * KIB for s in arch.carveout_kib if s * KIB >= nbytes), arch.shared_per_sm)


def nvidia_occupancy(arch: NvidiaArch, registers: int, threads: int, dynamic_shared: int = 0,
                     static_shared: int = 0, max_dynamic_shared: int | None = None, barriers: int = 1,
                     carveout_percent: int | None = None) -> Occupancy:
    """Blocks of `threads` threads per SM, each thread using `registers`, each block
    `static_shared` bytes from the cubin (without the sm_90+ reserve) plus `dynamic_shared`
    bytes at launch (Triton's `shared`). `max_dynamic_shared` is the function attribute;
    None means the driver's default. `barriers`: named barriers the block uses."""
    warps = -(-threads // 32)
    allows = {
        "registers": blocks_for_registers(arch, registers, warps),
        "shared": blocks_for_shared(arch, dynamic_shared, static_shared, max_dynamic_shared, carveout_percent),
        "warps": 0 if threads > 1024 else arch.max_warps // warps,
        "blocks": arch.max_blocks,
        "barriers": UNBOUNDED if arch.barrier_slots is None or barriers <= 0 else arch.barrier_slots // barriers,
    }
    return occupancy_of(arch.name, "warps/SM", warps, arch.max_warps, 1, allows)
