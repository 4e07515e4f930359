"""irscope's AMD occupancy on every fixture, against LLVM's own `; Occupancy:` comment.

LLVM's comment is a per-SIMD bound from VGPRs and SGPRs only. It cannot see Triton's LDS,
which is dynamic (the `.amdgcn` has `.group_segment_fixed_size 0`), and it does not ask
whether a workgroup's waves all fit at once. Where neither binds, irscope must say the
same number; every fixture where one does is listed below with its arithmetic.
"""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest

import irscope
from irscope.occupancy.calculator import occupancy_for
from irscope.occupancy.amd import AMD_ARCHES, align_to, waves_for_sgprs, waves_for_vgprs

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

# fixture directory -> (LLVM's comment, irscope, the arithmetic irscope's figure comes from)
DIFFERS = {
    # LDS binds: workgroups = pool // align(LDS, granule); waves/SIMD = workgroups * num_warps / 4
    "caches/triton-3.2/geSwL7yPDfS6My9o5CaOoq0gbzND2P5z0crTVGptr3U": (8, 7, 65536 // align_to(8320, 512) * 4 // 4),
    "caches/triton-3.6/IRCC5OHJ2Y6CVQC4AVD4YUD2W3OJK7ZOMJ6HLRZH53E5BHPOIZMQ": (3, 2, 65536 // 32768 * 4 // 4),
    "before_after/waves_per_eu/after/IRCC5OHJ2Y6CVQC4AVD4YUD2W3OJK7ZOMJ6HLRZH53E5BHPOIZMQ":
        (3, 2, 65536 // 32768 * 4 // 4),
    "caches/triton-3.9/6I2A3YXEWEE2IUOQQ2DTTD6S5DIQWJHM5AEYGV3KQG7EBQBA4UNA": (3, 2, 65536 // 32768 * 4 // 4),
    "caches/triton-3.9/OOP7GQ45OAUYTSTYC6ZGGTBC67ZC3COFXYR5PFARNVPI7GM3UKOA": (3, 2, 65536 // 32768 * 4 // 4),
    # gfx950: a 160 KiB pool in 1280 B granules
    "caches/triton-3.9/T2G6TWKBR2NAVHHTVL4TREJ5QUIELQIBW3ELNQ3SBTZRG3SJTO3A":
        (3, 2, 163840 // align_to(67520, 1280) * 4 // 4),
    "caches/triton-3.9/YPMR352PJU34FKFL5DPBF4WBCVPFJXEBOHHAKCM7BF2CU42BIMOA":
        (3, 2, 163840 // align_to(68016, 1280) * 4 // 4),
    # RDNA: 128 KiB per WGP, whose 4 SIMDs share the workgroup
    "caches/triton-3.6/7QWSVXSGNTY2OGOLXPGPXDNLH2WBCBUKTOWAANZCJSD4SY6CHT2A": (5, 4, 131072 // 32768 * 4 // 4),
    "caches/triton-3.6/DNGQWDAVQ3KL7ORVXAVJIOVFNYIV7Y4O7FIEU6SR3FBAHDOD4H2A": (5, 4, 131072 // 32768 * 4 // 4),
    "caches/triton-3.9/FGDTSNXJVW5UAFS3P4COZVAJ6BKRHIDWRKPSWUBE52NDTLS4OTLQ": (5, 4, 131072 // 32768 * 4 // 4),
    "caches/triton-3.9/Q742JFJWTUAUEUJZTZL5XLL7GUA73BCNMIFOAMGR7DKS5N3HI6EA": (5, 4, 131072 // 32768 * 4 // 4),
    # Workgroup granularity (gemm_nw16): 71 VGPRs -> 7 waves/SIMD -> 7 * 4 = 28 wave slots per CU,
    # which hold 28 // 16 = 1 workgroup of 16 waves -> 16 / 4 = 4 waves/SIMD
    "caches/triton-3.9/R77ETAE2Z26NZ7O4LHAAOUJ75XA6OLYD5URJO6GMNTY4F2W3DBFQ": (7, 4, (7 * 4 // 16) * 16 // 4),
    # Both (gemm_nw8_s3, the ROCm guide's case): 130 VGPRs -> 3 waves -> 12 slots hold 12 // 8 = 1
    # workgroup, and 65536 B of LDS fit once -> 1 * 8 / 4 = 2 waves/SIMD
    "caches/triton-3.9/UKZOEQ2IGFGDBMEAXLVVGIYCXHJ2MI2PXTFPWTXMGLMVXMGUWJOA":
        (3, 2, min(3 * 4 // 8, 65536 // 65536) * 8 // 4),
}


@pytest.fixture(scope="module")
def amd_reports():
    report = irscope.scan(FIXTURES)
    return [k for k in report.kernels if k.kernel.target and k.kernel.target.backend == "hip"]


def llvm_register_bound(kr) -> int:
    """What LLVM's comment computes: waves per SIMD from VGPRs and SGPRs (capped by waves_per_eu)."""
    arch = AMD_ARCHES[kr.kernel.target.arch]
    res = kr.resources
    waves = min(waves_for_vgprs(arch, res.vgpr_total.value), waves_for_sgprs(arch, res.sgpr.value))
    wpe = kr.occupancy.input("waves_per_eu")
    return min(waves, wpe) if wpe else waves


def test_every_amd_fixture_has_an_occupancy(amd_reports):
    assert len(amd_reports) >= 90
    for kr in amd_reports:
        if kr.kernel.layout == "kernel-dump":  # IR only: Triton's dynamic LDS size is in no file
            assert kr.occupancy is None
            assert any("occupancy" in p.message and "--lds" in p.message and p.severity == "warning"
                       for p in kr.problems)
        else:
            assert kr.occupancy is not None, kr.kernel.key


def test_irscope_equals_llvm_unless_lds_or_granularity_binds(amd_reports):
    compared = differing = 0
    for kr in amd_reports:
        if kr.occupancy is None:
            continue
        llvm = kr.resources.llvm_occupancy
        if llvm is None:  # Triton 3.0's .amdgcn has no `; Kernel info` block
            assert kr.kernel.triton_version.value.startswith("3.0")
            continue
        compared += 1
        key = str(Path(kr.kernel.directory).relative_to(FIXTURES))
        occ = kr.occupancy.occupancy
        assert llvm.value == llvm_register_bound(kr), key  # irscope reads LLVM's own inputs
        if key in DIFFERS:
            differing += 1
            says, ours, arithmetic = DIFFERS[key]
            assert (llvm.value, occ.active) == (says, ours) and ours == arithmetic, key
            assert llvm.value > occ.active  # LLVM can only be optimistic: it sees fewer limits
            assert kr.occupancy.notes and f"`; Occupancy: {says}`" in kr.occupancy.notes[0]
        else:
            assert occ.active == llvm.value, key
            assert not kr.occupancy.notes
    assert differing == len(DIFFERS) and compared > differing


def test_waves_per_eu_that_lds_defeats_is_said(amd_reports):
    """gemm_wpe3: waves_per_eu=3 kept the VGPRs at 168 (3 waves), but 32 KiB of LDS allow 2."""
    wpe = [k for k in amd_reports if k.occupancy and k.occupancy.input("waves_per_eu") == 3]
    assert len(wpe) == 3  # Triton 3.6, 3.9, and the before/after copy
    for kr in wpe:
        assert kr.occupancy.input("vgprs") == 168 and kr.occupancy.occupancy.active == 2
        assert any(n.startswith("waves_per_eu=3 asked the compiler to fit 3 waves per SIMD, but lds limit")
                   for n in kr.occupancy.notes)


def test_granularity_note_shows_the_arithmetic(amd_reports):
    kr = next(k for k in amd_reports if "R77ETAE2Z26" in k.kernel.directory)
    assert "7 x 4 SIMDs = 28 wave slots hold 1 workgroup(s)" in kr.occupancy.notes[0]
    assert "1 workgroup(s) x 16 waves / 4 SIMDs = 4 waves per SIMD" in kr.occupancy.notes[0]


def test_every_input_points_at_its_artifact_line(amd_reports):
    for kr in amd_reports:
        for item in kr.occupancy.inputs if kr.occupancy else ():
            assert Path(item.origin.path).exists(), item
            if item.name in ("vgprs", "sgprs"):
                assert item.origin.path.endswith(".amdgcn") and item.origin.line, item
                line = Path(item.origin.path).read_text().splitlines()[item.origin.line - 1]
                assert str(item.value) in line, (item, line)
            if item.name in ("lds", "warps", "waves_per_eu"):
                assert item.origin.path.endswith(".json"), item
                assert item.origin.detail in ("shared", "num_warps", "waves_per_eu"), item


# --- The traps of ROCm's occ.sh (occupancy.md §1.4) -----------------------------------------

def test_lds_of_zero_does_not_divide_by_zero():
    occ = occupancy_for("gfx942", {"vgprs": 32, "lds": 0, "warps": 4}).occupancy
    assert (occ.active, occ.groups) == (8, 8)
    assert "lds" not in occ.limiters


def test_gfx950_has_160_kib_of_lds():
    """occupancy.md §1.7: 128 VGPRs, num_warps=8, 64 KiB: occ.sh's 65536 pool says 2 waves."""
    gfx942 = occupancy_for("gfx942", {"vgprs": 128, "lds": 65536, "warps": 8}).occupancy
    gfx950 = occupancy_for("gfx950", {"vgprs": 128, "lds": 65536, "warps": 8}).occupancy
    assert (gfx942.active, gfx950.active) == (2, 4)
    assert gfx950.allowed("lds") == 163840 // align_to(65536, 1280) == 2


@pytest.mark.parametrize("warps,vgprs,active,groups", [
    (1, 128, 4, 16),  # 4 waves x 4 SIMDs = 16 one-wave workgroups (no barrier cap for one wave)
    (2, 168, 3, 6),   # 3 x 4 = 12 slots = 6 workgroups of 2 waves
    (6, 128, 3, 2),   # 4 x 4 = 16 slots hold 2 workgroups of 6 = 12 waves (occ.sh: 16/6 = 2.67 workgroups)
    (3, 96, 4, 6),    # 5 x 4 = 20 slots hold 6 workgroups of 3 = 18 waves, 4 per SIMD (LLVM floors too)
])
def test_num_warps_not_a_multiple_of_4_gives_whole_waves(warps, vgprs, active, groups):
    occ = occupancy_for("gfx942", {"vgprs": vgprs, "lds": 0, "warps": warps}).occupancy
    assert (occ.active, occ.groups) == (active, groups)


def test_shared_is_the_figure_both_dump_spellings_print():
    """occ.sh greps `triton_gpu.shared`, which Triton 3.3+ spells `ttg.shared`. irscope reads
    `shared` from the metadata json, which has one spelling; the MLIR dumps of the same GEMM
    (3.2: triton_gpu., 3.9: ttg.) print the same number as the LDS irscope uses."""
    report = irscope.scan(FIXTURES / "caches")
    for version, prefix in (("3.2", "triton_gpu"), ("3.9", "ttg")):
        dump = gzip.decompress((FIXTURES / "dumps" / f"mlir-dump_triton-{version}_gfx942_gemm_aligned.txt.gz")
                               .read_bytes()).decode()
        printed = {int(v) for v in re.findall(rf'"?{prefix}\.shared"? = (\d+)', dump)}
        assert len(printed) == 1
        lds = {k.occupancy.input("lds") for k in report.kernels if f"triton-{version}" in k.kernel.directory
               and k.kernel.target.arch == "gfx942" and k.kernel.name == "matmul_kernel"}
        assert printed <= lds, (version, printed, lds)
