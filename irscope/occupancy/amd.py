"""AMD occupancy as the hardware schedules it: waves per SIMD from VGPRs, SGPRs, LDS and num_warps.

The algorithm is LLVM's (AMDGPUBaseInfo getNumWavesPerEUWithNumVGPRs, AMDGPUSubtarget
getOccupancyWithWorkGroupSizes), applied with Triton's dynamic LDS, which LLVM's own
`; Occupancy:` comment never sees. Constants and sources: ../shared/reference/occupancy.md
§1 (each row cites LLVM or ROCm). Waves are spread evenly over the EUs of a CU (WGP on RDNA).
"""

from __future__ import annotations

from dataclasses import dataclass

from irscope.model.occupancy_result import UNBOUNDED, Occupancy, occupancy_of


@dataclass(frozen=True)
class AmdArch:
    name: str
    wave_size: int
    eus: int  # SIMDs one workgroup's waves spread over (per CU; per WGP on RDNA)
    max_waves_per_eu: int
    vgpr_file: int  # VGPRs per lane per SIMD (arch + AGPR unified on gfx90a+)
    vgpr_granule: int
    lds_pool: int  # bytes per CU (WGP) available to resident workgroups
    lds_granule: int
    max_workgroups: int  # barrier limit per CU; not applied to one-wave workgroups
    sgprs_limit: bool  # gfx9 SGPR file can cost waves; gfx10+ never
    # What one wave or workgroup may hold at all (occupancy.md §1 table): a what-if beyond is refused.
    max_vgprs_per_wave: int  # 256 arch + 256 AGPR on gfx90a+; 256 on RDNA
    max_sgprs: int  # `.sgpr_count` at most: 102 addressable + VCC, FLAT_SCRATCH, XNACK_MASK (gfx9); 106 + VCC
    max_lds_per_workgroup: int


AMD_ARCHES = {
    a.name: a for a in (
        AmdArch("gfx90a", 64, 4, 8, 512, 8, 65536, 512, 16, True, 512, 108, 65536),
        AmdArch("gfx942", 64, 4, 8, 512, 8, 65536, 512, 16, True, 512, 108, 65536),
        AmdArch("gfx950", 64, 4, 8, 512, 8, 163840, 1280, 16, True, 512, 108, 163840),
        AmdArch("gfx1100", 32, 4, 16, 1536, 24, 131072, 512, 32, False, 256, 108, 65536),
        AmdArch("gfx1200", 32, 4, 16, 1536, 24, 131072, 512, 32, False, 256, 108, 65536),
        AmdArch("gfx1201", 32, 4, 16, 1536, 24, 131072, 512, 32, False, 256, 108, 65536),
    )
}


def align_to(value: int, granule: int) -> int:
    return -(-value // granule) * granule


def waves_for_vgprs(arch: AmdArch, vgprs: int) -> int:
    """Waves per SIMD the VGPR file allows (LLVM getNumWavesPerEUWithNumVGPRs)."""
    if vgprs < arch.vgpr_granule:
        return arch.max_waves_per_eu
    return min(max(arch.vgpr_file // align_to(vgprs, arch.vgpr_granule), 1), arch.max_waves_per_eu)


def waves_for_sgprs(arch: AmdArch, sgprs: int | None) -> int:
    """gfx9: 800 SGPRs per SIMD, granule 16 plus a 16-SGPR trap reserve, as the LLVM in
    Triton 3.9 measures (occupancy.md §1.2 SGPR note); gfx10+ SGPRs never limit."""
    if not arch.sgprs_limit or not sgprs:
        return arch.max_waves_per_eu
    return min(arch.max_waves_per_eu, 800 // (align_to(sgprs, 16) + 16))


def amd_occupancy(arch: AmdArch, vgprs: int, lds_bytes: int, num_warps: int, sgprs: int | None = None) -> Occupancy:
    """Occupancy of a workgroup of `num_warps` waves using `vgprs` (the unified `.vgpr_count`),
    `lds_bytes` (Triton's dynamic `shared` plus any static LDS) and `sgprs`."""
    allows = {
        "vgpr": waves_for_vgprs(arch, vgprs) * arch.eus // num_warps,
        "sgpr": waves_for_sgprs(arch, sgprs) * arch.eus // num_warps,
        "lds": arch.lds_pool // align_to(lds_bytes, arch.lds_granule) if lds_bytes > 0 else UNBOUNDED,
        "slots": arch.max_waves_per_eu * arch.eus // num_warps if num_warps == 1
        else min(arch.max_waves_per_eu * arch.eus // num_warps, arch.max_workgroups),
    }
    return occupancy_of(arch.name, "waves/SIMD", num_warps, arch.max_waves_per_eu, arch.eus, allows)


def vgprs_for_waves(arch: AmdArch, waves: int) -> int | None:
    """The most VGPRs a wave may use and still fit `waves` per SIMD (170 -> 168 for 3 on gfx942)."""
    if waves > arch.max_waves_per_eu:
        return None
    return arch.vgpr_file // waves // arch.vgpr_granule * arch.vgpr_granule
