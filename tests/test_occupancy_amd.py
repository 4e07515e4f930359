"""AMD occupancy against the tables LLVM produces (../shared/reference/occupancy.md §1.3, §1.7).

Each case is a measured LLVM `; Occupancy:` figure (static LDS, one VGPR count forced) or
a worked example of the reference; the calculator must reproduce it.
"""

from __future__ import annotations

import pytest

from irscope.occupancy.amd import AMD_ARCHES, amd_occupancy, vgprs_for_waves, waves_for_sgprs, waves_for_vgprs

CDNA_VGPR_TABLE = {64: 8, 65: 7, 72: 7, 73: 6, 80: 6, 81: 5, 96: 5, 97: 4, 128: 4, 129: 3, 168: 3, 169: 2,
                   170: 2, 256: 2, 512: 1}
RDNA_VGPR_TABLE = {96: 16, 97: 12, 120: 12, 128: 10, 144: 10, 168: 9, 192: 8, 216: 7, 256: 5}


@pytest.mark.parametrize("arch", ["gfx90a", "gfx942", "gfx950"])
@pytest.mark.parametrize("vgprs,waves", sorted(CDNA_VGPR_TABLE.items()))
def test_cdna_vgpr_table(arch, vgprs, waves):
    assert waves_for_vgprs(AMD_ARCHES[arch], vgprs) == waves


@pytest.mark.parametrize("arch", ["gfx1100", "gfx1200", "gfx1201"])
@pytest.mark.parametrize("vgprs,waves", sorted(RDNA_VGPR_TABLE.items()))
def test_rdna_wave32_vgpr_table(arch, vgprs, waves):
    assert waves_for_vgprs(AMD_ARCHES[arch], vgprs) == waves


@pytest.mark.parametrize("sgprs,waves", [(64, 8), (66, 8), (84, 7), (96, 7), (98, 6), (108, 6)])
def test_gfx9_sgprs_as_current_llvm_measures(sgprs, waves):
    assert waves_for_sgprs(AMD_ARCHES["gfx942"], sgprs) == waves
    assert waves_for_sgprs(AMD_ARCHES["gfx1100"], sgprs) == 16  # gfx10+: SGPRs never limit


def test_170_vgprs_allocate_as_176_and_168_gains_a_wave():
    gfx942 = AMD_ARCHES["gfx942"]
    assert amd_occupancy(gfx942, 170, 0, 4).active == 2
    assert amd_occupancy(gfx942, 168, 0, 4).active == 3
    assert vgprs_for_waves(gfx942, 3) == 168


def test_lds_limits_eight_warps_at_64k_and_gfx950_pool_doubles_it():
    gfx942 = amd_occupancy(AMD_ARCHES["gfx942"], 128, 65536, 8)
    assert (gfx942.groups, gfx942.active, gfx942.limiters) == (1, 2, ("lds",))
    assert gfx942.allowed("vgpr") == 2
    gfx950 = amd_occupancy(AMD_ARCHES["gfx950"], 128, 65536, 8)  # 163840 // align(65536, 1280) = 2
    assert (gfx950.groups, gfx950.active) == (2, 4)
    assert set(gfx950.limiters) == {"vgpr", "lds"}


def test_barrier_limit_and_one_wave_workgroups():
    gfx942 = AMD_ARCHES["gfx942"]
    one = amd_occupancy(gfx942, 32, 0, 1)  # 8 waves x 4 SIMDs, no 16-workgroup cap for 1-wave groups
    assert (one.groups, one.active) == (32, 8)
    two = amd_occupancy(gfx942, 32, 0, 2)  # 8 waves x 4 / 2 = 16: registers and the barrier cap tie
    assert (two.groups, two.active, two.allowed("slots")) == (16, 8, 16)
    assert "slots" in two.limiters
