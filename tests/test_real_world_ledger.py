"""The real-world corpus (fixtures/real_world/) and its reviewed findings ledger.

The corpus is eight public kernel libraries, vLLM's attention kernels and Triton's tutorials compiled
for gfx942 and sm_90 (486 kernels), and inductor's kernels from an H100 (235). Every
finding irscope reports on it is in the ledger with its review; a finding the ledger does not
know, or one that disappears or changes severity, fails here, so each change to a rule shows
its effect on precision (fixtures/real_world/README.md says how to update and review).
"""

from __future__ import annotations

import sys
from collections import defaultdict

import pytest
from conftest import REPO

sys.path.insert(0, str(REPO / "fixtures" / "real_world"))
import corpus  # noqa: E402


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    return corpus.scan_runs(corpus.extract(tmp_path_factory.mktemp("real-world")))


@pytest.fixture(scope="module")
def seen(reports):
    return corpus.findings(reports)


def test_the_corpus_is_what_its_manifest_says(reports):
    import json

    manifest = json.loads((REPO / "fixtures" / "real_world" / "manifest.json").read_text())
    for target, runs in manifest["runs"].items():
        for script, kernels in runs.items():
            report = reports[(target, script.removesuffix(".py"))]
            assert len(report.kernels) == kernels, (target, script)
            assert all(k.kernel.target.arch == target for k in report.kernels)
    for gpu_run in manifest["gpu_runs"].values():  # made on an H100 by another Triton than the libraries'
        for script, kernels in gpu_run["runs"].items():
            report = reports[("sm_90", script.removesuffix(".py"))]
            assert len(report.kernels) == kernels, script
            assert {k.kernel.triton_version.value for k in report.kernels} == {gpu_run["triton"]}
    assert sum(len(r.kernels) for r in reports.values()) >= 640


def test_inductor_launches_are_recorded_on_a_real_gpu(reports):
    """torch.compile launches through a static CUDA launcher of its own; the script runner turns it
    off (irscope/pipeline/runner_child.py), so an H100 run of a compiled Llama block records its launches:
    197 of its 235 kernels have their grids, the GEMM templates' included (the rest are autotuning
    candidates compiled and benchmarked outside the launcher: 31 GEMM-template configs, 7 others)."""
    report = reports[("sm_90", "inductor_llama_block")]
    launched = [k for k in report.kernels if k.launches]
    assert len(launched) >= 0.8 * len(report.kernels)
    assert sum(k.kernel.name.startswith("triton_mm") for k in launched) >= 10


def test_the_ledger_knows_every_finding(seen):
    ledger = corpus.read_ledger()
    now = {s.key: s for s in seen}
    new = sorted(set(now) - set(ledger))
    gone = sorted(set(ledger) - set(now))
    assert not new and not gone, (
        f"{len(new)} findings the ledger does not know, {len(gone)} it knows are gone (first: {(new + gone)[:3]}); "
        "run `python fixtures/real_world/corpus.py update`, review what changed, and commit the ledger")
    changed = [k for k, s in now.items() if ledger[k]["severity"] != s.severity]
    assert not changed, f"severity changed: {changed[:3]}; update the ledger and review them again"


def test_every_review_is_complete():
    for key, entry in corpus.read_ledger().items():
        assert entry["label"] in corpus.LABELS, key
        if entry["label"] != "unreviewed":
            assert entry["reason"].strip(), f"{key}: a review says why, from the artifact"
            # None: the fix text changed since the review (corpus.py update cleared it); judge it again
            assert entry["fix_fits"] in (True, False, None), f"{key}: a review says whether the fix fits the kernel"


def test_precision_page_is_generated_from_the_ledger():
    page = corpus.precision_page(corpus.read_ledger(), corpus.read_misses())
    assert corpus.PRECISION.read_text() == page, "regenerate: python fixtures/real_world/corpus.py precision"


def test_narrow_buffer_loads_fire_on_gfx942_where_narrow_loads_fire_on_sm_90(reports):
    """Issue 21, defect 1: Triton 3.9 lowers gfx942 loads to amdg.buffer_load (buffer_load_dword in the
    ISA); IRS101/IRS102 read only tt.load/tt.store and never fired on gfx942. fla's L2 norm loads and
    stores its per-row rstd 4 B at a time where the layout gives 8-16 contiguous bytes (the mask's
    bound T is not specialized): the same lines on both targets, buffer ops on gfx942."""
    lines = defaultdict(set)
    for target in ("gfx942", "sm_90"):
        for kr in reports[(target, "fla_linear_attention")].kernels:
            for f in kr.findings:
                if f.code in ("IRS101", "IRS102") and kr.kernel.name.startswith("l2norm"):
                    lines[target].add((f.code, f.python_line))
                    assert target == "sm_90" or "buffer_load_dword" in f.message or "buffer_store_dword" in f.message
    assert lines["gfx942"] == lines["sm_90"] == {("IRS101", 105), ("IRS102", 84)}


def test_narrow_accesses_the_data_forces_are_left_alone(reports):
    """The ledger's review of IRS101 (35 of 38 false): strided rows (`o_t * H`, H = 16), gathers,
    broadcasts, slices of a consumer's layout and a line with a wide sibling load are as wide as their
    data allows (irscope/ir/pointer_strides.py). None of those kernels has a narrow-load finding now."""
    for key in ("gfx942/fla_linear_attention/e8ef0accc21f", "gfx942/bitsandbytes_triton_quant/d0ccac464a9a",
                "gfx942/liger_kernel_ops/22d0526763e3", "sm_90/bitsandbytes_triton_quant/06dc34a04b5b",
                "gfx942/gemlite_lowbit_gemm/efeb358e660d", "sm_90/fla_linear_attention/50f9ca43ab55"):
        target, script, prefix = key.split("/")
        (kr,) = [k for k in reports[(target, script)].kernels if k.kernel.hash.startswith(prefix)]
        assert not [f for f in kr.findings if f.code in ("IRS101", "IRS102")], key


def test_a_config_over_the_cus_lds_cannot_launch(reports):
    """Issue 21, defect 11: torchao's int8 GEMM autotunes over configs of up to 122,880 B of LDS; on
    gfx942 (64 KiB per CU) those fit nowhere. They were shown as "0/8 lds" with a warning."""
    over = [k for k in reports[("gfx942", "torchao_int8_matmul")].kernels if k.kernel.options.shared.value > 65536]
    assert len(over) == 5
    for kr in over:
        o = kr.occupancy.occupancy
        assert not o.launchable and o.active == 0 and o.limiters == ("lds",)
        (f,) = [f for f in kr.findings if f.code == "IRS403"]
        assert f.severity == "error" and f.message.startswith(
            f"cannot launch: {kr.kernel.options.shared.value:,} B of LDS per workgroup, gfx942 has 65,536")
    from irscope.render.occupancy import occupancy_cell

    assert occupancy_cell(over[0].occupancy) == "no launch: lds"


def test_a_cu_with_fewer_waves_than_simds_is_one_wave_per_simd(reports):
    """Issue 21, defect 11: a 2-warp fla kernel whose 36 KiB of LDS let one workgroup in a CU runs 1 wave
    on 2 of the 4 SIMDs. It was shown as "0/8" and IRS404 stayed silent."""
    from irscope.render.occupancy import occupancy_cell

    partial = [k for r in reports.values() for k in r.kernels
               if k.occupancy and k.occupancy.occupancy.partial and k.occupancy.occupancy.groups == 1]
    assert partial
    for kr in partial:
        o = kr.occupancy.occupancy
        assert o.active == 1 and o.simds_used == kr.kernel.options.num_warps.value < o.simds == 4
        assert occupancy_cell(kr.occupancy).startswith(f"1/8 on {o.simds_used}/4")
        (f,) = [f for f in kr.findings if f.code == "IRS404"]
        assert f"1 wave per SIMD, on {o.simds_used} of the CU's 4 SIMDs" in f.message


def test_a_local_array_is_not_a_spill(reports):
    """Inductor's RoPE kernels call sin/cos; libdevice's slow path for huge arguments keeps a 28-byte
    array in local memory (`__local_depot0[28]`, filled from `__cudart_i2opi_f`). Its ld/st.local are
    in the PTX, and the cubin's 32-byte frame is that array: IRS401 called it a spill (warning) on 40
    kernels. It is info and says no register spilled; where the frame is larger (72 B), the rest is
    what ptxas spilled (40 B, 9 STL/LDL pairs in the SASS), still a warning."""
    arrays, spills = 0, 0
    for kr in reports[("sm_90", "inductor_llama_block")].kernels:
        res = kr.resources
        if res is None or res.local_depot is None:
            continue
        assert res.local_depot.value == 28 and "__local_depot" in _line(res.local_depot.origin)
        assert res.trig_reduction is not None and "__cudart_i2opi_f" in _line(res.trig_reduction.origin)
        (finding,) = [f for f in kr.findings if f.code == "IRS401"]
        if res.stack_bytes.value == 32:
            arrays += 1
            assert finding.severity == "info" and finding.message.startswith("no register spilled")
            assert finding.stage == "ptx" and "st.local" in _line_of(finding)
        else:
            spills += 1
            assert finding.severity == "warning" and "40 B of spilled registers" in finding.message
    assert arrays >= 30 and spills >= 1


def _line(origin) -> str:
    from pathlib import Path

    return Path(origin.path).read_text().splitlines()[origin.line - 1]


def _line_of(finding) -> str:
    from pathlib import Path

    return Path(finding.path).read_text().splitlines()[finding.line - 1]


def _by_hash(reports, target, script, prefix):
    import json
    from pathlib import Path

    for kr in reports[(target, script)].kernels:
        meta = Path(kr.kernel.directory) / f"{kr.kernel.name}.json"
        if meta.is_file() and json.loads(meta.read_text()).get("hash", "").startswith(prefix):
            return kr
    raise AssertionError(f"no kernel {prefix} in {target}/{script}")


def test_drains_are_judged_by_the_cycles_that_cover_them(reports):
    """Issue 21, defect 12: IRS201's fixed 16-instruction window missed drains 16-23 instructions after the
    load; it now weighs the wave's own work in cycles (MFMA and LDS wait 64, transcendental 16, else 4)
    against a 500-cycle HBM load, and the waves per SIMD that can fill the stall."""
    fla = _by_hash(reports, "gfx942", "fla_linear_attention", "1b6e3b2bb5cf")
    (f,) = [f for f in fla.findings if f.code == "IRS201"]  # 23 instructions, 2 MFMAs, 1 LDS wait; 1 wave/SIMD
    assert f.severity == "warning" and f.number("distance") == 23 and f.number("cover_cycles") == 272
    ao = _by_hash(reports, "gfx942", "torchao_int8_matmul", "ae3b23e2f107")
    (f,) = [f for f in ao.findings if f.code == "IRS201"]  # 16 instructions, no MFMA; 8 waves/SIMD can fill it
    assert f.severity == "info" and (f.number("cover_cycles"), f.number("waves_per_simd")) == (64, 8)
    assert "8 waves per SIMD have about 512 cycles" in f.message and "more waves" not in f.fix
    # 472 cycles of its own work (2 MFMAs, 4 LDS waits) and 8 waves/SIMD: covered, silent by design
    quiet = _by_hash(reports, "gfx942", "torchao_int8_matmul", "7f66a4ddbfda")
    assert not [f for f in quiet.findings if f.code == "IRS201"]


def test_a_drain_is_covered_through_the_exec_masked_blocks_a_diverged_wave_runs(reports):
    """liger's DyT backward computes tanh inline: its slow path sits behind `s_cbranch_execz`, which jumps
    over it only when no lane needs it. The load's cover runs through those blocks (2 transcendentals, 39
    instructions), not the 11-instruction jump that the shortest path would take."""
    kr = _by_hash(reports, "gfx942", "liger_kernel_ops", "0ff105b6e1fa")
    (f,) = [f for f in kr.findings if f.code == "IRS201"]
    assert f.number("distance") == 39 and f.number("cover_cycles") == 37 * 4 + 2 * 16
    assert f.severity == "info" and f.number("waves_per_simd") == 8


def test_a_local_array_ptxas_kept_in_registers_is_not_reported(reports):
    """xformers' rope_padded kernel (sm_90) has libdevice's 28-byte sin/cos reduction array in its PTX
    (`__local_depot`, with ld.local/st.local), but ptxas kept it in registers: the cubin's stack frame
    is 0 bytes. IRS401 said 'the 0-byte stack frame is the 28-byte local array'; nothing spills."""
    from pathlib import Path

    (kr,) = [k for k in reports[("sm_90", "xformers_ops")].kernels if k.kernel.name == "_rope_padded_kernel"]
    ptx = Path(kr.kernel.artifact("ptx").path).read_text()
    assert ".local .align" in ptx and "__local_depot" in ptx and "ld.local" in ptx
    assert kr.resources.stack_bytes.value == 0 and kr.resources.local_depot.value == 28
    assert not [f for f in kr.findings if f.code == "IRS401"]
