"""IRS402 vgprs-above-step, IRS403 lds-limited-occupancy, IRS404 occupancy-one on the real fixtures.

The expected numbers come from the ROCm guide's own occupancy steps (occ_vgpr from the VGPR
table, occ_lds = pool // LDS, occ = min(occ_vgpr * 4 // nW, occ_lds) * nW / 4, with the
allocation granules and the 16-workgroup slot limit), computed here from `.vgpr_count` in
the .amdgcn text and `shared` in the json, not from irscope's calculator.
"""

from __future__ import annotations

import json
import re

import pytest
from conftest import FIXTURES, load_manifest

from irscope.rules.irs402_vgprs_above_step import VgprsAboveStep
from irscope.rules.irs403_lds_limited_occupancy import LdsLimitedOccupancy
from irscope.rules.irs404_occupancy_one import OccupancyOne

VERSIONS = ("3.2", "3.6", "3.9")
MANIFEST = load_manifest()
CDNA = {"gfx90a": (65536, 512), "gfx942": (65536, 512), "gfx950": (163840, 1280)}  # LDS pool, granule


def ceil(value: int, unit: int) -> int:
    return -(-value // unit) * unit


def guide_waves(arch: str, vgprs: int, lds: int, warps: int) -> int:
    """Waves per SIMD on CDNA: 512 VGPRs per lane in granules of 8, at most 8 waves, 4 SIMDs."""
    pool, granule = CDNA[arch]
    occ_vgpr = min(512 // max(ceil(vgprs, 8), 8), 8)
    groups = min(occ_vgpr * 4 // warps, pool // ceil(lds, granule) if lds else 99, 8 * 4 // warps,
                 16 if warps > 1 else 99)
    return groups * warps // 4


def largest(now: int, gains) -> int:
    """The largest value below `now` for which `gains(value)` holds (linear, from the top)."""
    return next(v for v in range(now - 1, -1, -1) if gains(v))


@pytest.fixture(scope="module")
def found():
    """{(rule, version): {kernel key: (report, findings of the rule)}}: one scan per version, as
    conftest.rule_findings does for one rule."""
    from irscope.pipeline.analyze import scan
    from irscope.engine.selection import RuleSelection

    rules = (VgprsAboveStep, LdsLimitedOccupancy, OccupancyOne)
    out = {}
    for v in VERSIONS:
        report = scan([str(FIXTURES / "caches" / f"triton-{v}")], rules=RuleSelection.only(*rules))
        for rule in rules:
            out[(rule, v)] = {r.kernel.key: (r, [f for f in r.findings if f.code == rule.code])
                              for r in report.kernels}
    return out


def entries(version: str, **where) -> list[dict]:
    return [e for e in MANIFEST["kernels"] if e["cache"] == f"caches/triton-{version}"
            and all((e["target_name"] if k == "arch" else e[k]) == v for k, v in where.items())]


def amd_inputs(e: dict) -> tuple[int, int, int, list[str]]:
    """(vgprs, lds, warps, amdgcn lines), read from the artifacts' text."""
    directory = FIXTURES / e["cache"] / e["dir"]
    lines = (directory / f"{e['name']}.amdgcn").read_text().splitlines()
    (vgprs,) = [int(m.group(1)) for t in lines if (m := re.match(r"\s*\.vgpr_count:\s+(\d+)$", t))]
    meta = json.loads((directory / f"{e['name']}.json").read_text())
    return vgprs, meta["shared"], meta["num_warps"], lines


def only(found, rule, version, e):
    report, findings = found[(rule, version)][e["dir"]]
    assert not [p for p in report.problems if rule.code in p.message]
    return findings


def json_line(e: dict, f) -> str:
    path = FIXTURES / e["cache"] / e["dir"] / f"{e['name']}.json"
    assert (f.stage, f.path, f.lines) == ("json", str(path), (1,))
    return path.read_text().splitlines()[f.line - 1]


# -- IRS402 ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version, fixture, severity", [("3.6", "autotune_gemm", "info"),
                                                        ("3.9", "autotune_gemm", "info"),
                                                        ("3.9", "gemm_nw16", "warning")])
def test_402_fires_a_few_vgprs_above_a_step(found, version, fixture, severity):
    fired = [e for e in entries(version, fixture=fixture, arch="gfx942")
             if only(found, VgprsAboveStep, version, e)]
    assert len(fired) == 1  # autotune_gemm: the 64x64 config; the other has 98 / 126 VGPRs
    e = fired[0]
    vgprs, lds, warps, lines = amd_inputs(e)
    now = guide_waves("gfx942", vgprs, lds, warps)
    to = largest(vgprs, lambda v: guide_waves("gfx942", v, lds, warps) > now)
    after = guide_waves("gfx942", to, lds, warps)
    assert 0 < vgprs - to <= 8
    (f,) = only(found, VgprsAboveStep, version, e)
    assert f.severity == severity and (f.stage, f.path) == ("amdgcn", str(FIXTURES / e["cache"] / e["dir"] /
                                                                        f"{e['name']}.amdgcn"))
    assert lines[f.line - 1].strip() == f".vgpr_count:     {vgprs}"
    assert f.message == (f"{vgprs} VGPRs (.vgpr_count) are {vgprs - to} above an occupancy step: at most {to} give "
                         f"{after} waves/SIMD instead of {now}")
    assert f"waves_per_eu={after}" in f.fix


@pytest.mark.parametrize("version", VERSIONS)
def test_402_silent_where_the_cut_is_large_or_vgprs_do_not_limit(found, version):
    fired = {e["fixture"] for e in MANIFEST["kernels"] if e["cache"] == f"caches/triton-{version}"
             and only(found, VgprsAboveStep, version, e)}
    assert fired == {"3.2": set(), "3.6": {"autotune_gemm"}, "3.9": {"autotune_gemm", "gemm_nw16"}}[version]
    # flash attention on gfx942: VGPRs alone limit it to 2 waves, but 3 need 168 of its 202-248.
    for e in entries(version, fixture="flash_attn", arch="gfx942"):
        vgprs, lds, warps, _ = amd_inputs(e)
        assert guide_waves("gfx942", vgprs, lds, warps) == 2 and vgprs - 168 > 8
        assert not only(found, VgprsAboveStep, version, e)


# -- IRS403 ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["3.6", "3.9"])
def test_403_lds_alone_holds_the_waves_per_eu_gemm(found, version):
    """waves_per_eu=3 got the VGPRs down to 168 (3 waves), but 32 KiB of LDS fit twice in 64 KiB."""
    (e,) = entries(version, fixture="gemm_wpe3", arch="gfx942")
    vgprs, lds, warps, _ = amd_inputs(e)
    now = guide_waves("gfx942", vgprs, lds, warps)
    assert guide_waves("gfx942", vgprs, 0, warps) > now  # the VGPRs would allow more
    to = largest(lds, lambda b: guide_waves("gfx942", vgprs, b, warps) > now)
    (f,) = only(found, LdsLimitedOccupancy, version, e)
    assert f.severity == "warning" and f'"shared": {lds},' in json_line(e, f)
    assert f.message == (f"{lds} B of LDS per workgroup fit {65536 // ceil(lds, 512)} workgroups in the CU's 64 KiB: "
                         f"{now} waves/SIMD of 8; at most {to} B ({lds - to} less) give "
                         f"{guide_waves('gfx942', vgprs, to, warps)}")
    assert "fewer num_stages (now 2)" in f.fix


@pytest.mark.parametrize("version", VERSIONS)
def test_403_lds_and_vgprs_bind_together_in_the_default_gemm(found, version):
    (e,) = entries(version, fixture="gemm_aligned", arch="gfx942")
    vgprs, lds, warps, _ = amd_inputs(e)
    now = guide_waves("gfx942", vgprs, lds, warps)
    assert now == 2 and guide_waves("gfx942", vgprs, 0, warps) == guide_waves("gfx942", 0, lds, warps) == now
    to_lds = largest(lds, lambda b: guide_waves("gfx942", 0, b, warps) > now)
    to_vgprs = largest(vgprs, lambda v: guide_waves("gfx942", v, 0, warps) > now)
    (f,) = only(found, LdsLimitedOccupancy, version, e)
    assert f.severity == "info" and f'"shared": {lds},' in json_line(e, f)
    assert f.message.endswith(f"at most {to_lds} B ({lds - to_lds} less) give "
                              f"{guide_waves('gfx942', to_vgprs, to_lds, warps)} only with VGPRs to {to_vgprs} "
                              f"(now {vgprs}) as well: both bind at {now}")


def test_403_granule_step_in_the_tile_copy(found):
    """8320 B allocate as 8704 in 512 B granules: 7 workgroups; 128 B less gives 8."""
    (e,) = entries("3.2", fixture="tile_copy_nohint", arch="gfx942")
    (f,) = only(found, LdsLimitedOccupancy, "3.2", e)
    assert '"shared": 8320,' in json_line(e, f) and 65536 // ceil(8320, 512) == 7
    assert f.message == ("8320 B of LDS per workgroup fit 7 workgroups in the CU's 64 KiB: 7 waves/SIMD of 8; "
                         "at most 8192 B (128 less) give 8")
    assert f.severity == "info"  # 7 of 8 waves already hide latency


@pytest.mark.parametrize("version", ["3.6", "3.9"])
def test_403_nvidia_tma_gemm_shared_memory(found, version):
    """sm_90: 228 KiB per SM, each block takes shared + 1 KiB reserve in 128 B units."""
    (e,) = entries(version, fixture="tma_gemm", arch="sm_90")
    shared = e["metadata"]["shared"]
    blocks = 228 * 1024 // ceil(shared + 1024, 128)
    to = (228 * 1024 // (blocks + 1)) // 128 * 128 - 1024
    (f,) = only(found, LdsLimitedOccupancy, version, e)
    assert f'"shared": {shared},' in json_line(e, f) and f.severity == "info"
    assert f.message == (f"{shared} B of dynamic shared memory per block (plus the 1024 B reserve) fit {blocks} "
                         f"blocks per SM: {blocks * 4} warps/SM of 64; at most {to} B ({shared - to} less) give "
                         f"{(blocks + 1) * 4}")


@pytest.mark.parametrize("version", VERSIONS)
def test_403_silent_without_an_lds_limit(found, version):
    silent = [*entries(version, fixture="add"), *entries(version, fixture="softmax"),
              *entries(version, fixture="gemm_unaligned", arch="gfx942")]
    if version != "3.2":  # 3.2's flash attention has 32 KiB of LDS, binding with its VGPRs
        silent += entries(version, fixture="flash_attn", arch="gfx942")
    assert len(silent) >= 4
    for e in silent:
        if e["target_name"] in CDNA:  # LDS allows more than the kernel gets, or it is at the maximum
            vgprs, lds, warps, _ = amd_inputs(e)
            now = guide_waves(e["target_name"], vgprs, lds, warps)
            assert now == 8 or guide_waves(e["target_name"], vgprs, 0, warps) == now
        assert not only(found, LdsLimitedOccupancy, version, e), (e["fixture"], e["target_name"])


# -- IRS404 ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_404_fires_exactly_on_one_wave_per_simd(found, version):
    expected, fired = set(), set()
    for e in MANIFEST["kernels"]:
        if e["cache"] != f"caches/triton-{version}":
            continue
        if only(found, OccupancyOne, version, e):
            fired.add(e["dir"])
        if e["target_name"] in CDNA and guide_waves(e["target_name"], *amd_inputs(e)[:3]) == 1:
            expected.add(e["dir"])
    assert expected and fired == expected


@pytest.mark.parametrize("version, fixture", [("3.2", "spill"), ("3.6", "spill"), ("3.9", "spill"),
                                              ("3.6", "gemm_unaligned"), ("3.9", "gemm_unaligned")])
def test_404_points_at_the_vgpr_count(found, version, fixture):
    (e,) = entries(version, fixture=fixture, arch="gfx942")
    vgprs, lds, warps, lines = amd_inputs(e)
    groups = min(512 // ceil(vgprs, 8) * 4 // warps, 8 * 4 // warps)
    (f,) = only(found, OccupancyOne, version, e)
    assert f.severity == "warning" and f.stage == "amdgcn"
    assert lines[f.line - 1].strip() == f".vgpr_count:     {vgprs}" and vgprs > 256
    assert f.message.startswith(f"1 wave per SIMD: {vgprs} VGPRs (.vgpr_count) limit the CU to {groups} workgroup")
    spills = int(re.search(r"\.vgpr_spill_count:\s+(\d+)", "\n".join(lines)).group(1))
    if spills:  # the spill kernel: a smaller register budget would only spill more
        assert f"already spills {spills} VGPRs: cut live values" in f.message
    else:
        assert f.message.endswith("use at most 256 VGPRs (now %d): 2 waves/SIMD; ask with waves_per_eu=2" % vgprs)


def test_404_nvidia_one_warp_per_scheduler_what_if():
    """No NVIDIA fixture gets below 8 warps/SM; a real sm_90 GEMM with `shared` raised through
    irscope's what-if (`irscope occupancy --shared`) fits one 4-warp block: one warp per scheduler."""
    from irscope.pipeline.harvester import harvest
    from irscope.occupancy.calculator import kernel_occupancy
    from irscope.isa.resources import read_resources
    from irscope.engine.context import KernelContext

    (e,) = entries("3.9", fixture="gemm_aligned", arch="sm_90")
    (kernel,) = harvest([FIXTURES / e["cache"] / e["dir"]]).kernels
    resources, _ = read_resources(kernel, kernel.target)
    occupancy, _ = kernel_occupancy(kernel, resources)
    assert occupancy.occupancy.active == 8
    assert list(OccupancyOne().check(KernelContext(kernel, resources, (), occupancy))) == []
    occupancy, _ = kernel_occupancy(kernel, resources, {"shared": 150000})
    (f,) = OccupancyOne().check(KernelContext(kernel, resources, (), occupancy))
    assert f.message.startswith("4 warps per SM, at most one per scheduler: 150000 B of dynamic shared memory per "
                                "block limit the SM to 1 block")
    assert (f.stage, f.path) == ("occupancy", "what-if")
