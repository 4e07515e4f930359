"""`irscope diff` on the fixtures' before/after builds, saved reports and two Triton versions."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest
from conftest import FIXTURES

from irscope.cli.main import main
from irscope.diff.compare import Change, Metric, RegressionPolicy, _judge, diff_reports
from irscope.pipeline.analyze import scan

BA = FIXTURES / "before_after"


@pytest.fixture(scope="module")
def sides():
    return {name: scan(BA / name) for name in ("before", "after", "mfma_nonkdim/before", "mfma_nonkdim/after",
                                               "waves_per_eu/before", "waves_per_eu/after")}


def pair(report, label):
    (p,) = [p for p in report.pairs if p.label == label]
    return p


def mix_count(side, name, arch, kind, detail):
    (kr,) = [k for k in side.kernels if k.kernel.name == name and k.kernel.target.arch == arch]
    return kr.mix[0].count(kind, detail=detail)


@pytest.mark.parametrize("arch,narrow", [("gfx942", "global:2B"), ("sm_90", "global:2B")])
def test_tile_copy_stores_become_16_bytes_and_fewer_instructions(sides, arch, narrow):
    """The GEMM tuning thread's change: global_store_short xN -> global_store_dwordx4 xM."""
    report = diff_reports(sides["before"], sides["after"])
    assert not report.only_before and not report.only_after
    p = pair(report, f"tile_copy_kernel {arch}")
    assert p.matched_by == "name+arch"  # the hint changed the specialization
    n_before = mix_count(sides["before"], "tile_copy_kernel", arch, "global_store", narrow)
    m_after = mix_count(sides["after"], "tile_copy_kernel", arch, "global_store", "global:16B")
    assert n_before >= 16 and m_after >= 1
    assert (p.change(f"global_store {narrow}").before, p.change(f"global_store {narrow}").after) == (n_before, 0)
    assert (p.change("global_store global:16B").before, p.change("global_store global:16B").after) == (0, m_after)
    assert (p.change("global_store").before, p.change("global_store").after) == (2, 16)  # narrowest, bytes
    total = p.change("instructions")
    assert total.after < total.before and total.verdict == "better"
    assert "narrowest global_store 2 B -> 16 B" in p.improvements and not p.regressions
    assert [f.code for f in p.findings if f.status == "fixed"][:1] == ["IRS102"]


def test_unaligned_to_aligned_gemm(sides):
    p = pair(diff_reports(sides["before"], sides["after"]), "matmul_kernel gfx942")
    assert (p.change("global_load").before, p.change("global_load").after) == (2, 16)  # ushort -> dwordx4
    assert p.change("global_load global:2B (in loops)").before > 0 == p.change("global_load global:2B").after
    assert p.change("VGPRs").after < p.change("VGPRs").before
    occ = p.change("occupancy (waves/SIMD)")
    assert (occ.before, occ.after, occ.verdict) == (1, 2, "better")
    fixed = {f.code for f in p.findings if f.status == "fixed"}
    assert {"IRS101", "IRS102", "IRS404"} <= fixed


def test_mfma_32x32_to_16x16(sides):
    report = diff_reports(sides["mfma_nonkdim/before"], sides["mfma_nonkdim/after"])
    (p,) = report.pairs
    shapes = {c.name: (c.before, c.after) for c in p.changes if c.name.startswith("matrix mfma")
              and not c.name.endswith("(in loops)")}
    (big,) = [v for k, v in shapes.items() if "32x32" in k]
    (small,) = [v for k, v in shapes.items() if "16x16" in k]
    assert big[0] > 0 == big[1] and small[0] == 0 < small[1]
    assert p.change("VGPRs").changed
    assert [f.code for f in p.findings if f.status == "fixed"] == ["IRS501"]


def test_waves_per_eu_that_spills_is_a_regression(sides):
    (p,) = diff_reports(sides["waves_per_eu/before"], sides["waves_per_eu/after"]).pairs
    assert p.change("VGPRs").after == 168 < p.change("VGPRs").before
    assert any(r.startswith("VGPR spills 0 -> ") for r in p.regressions)
    assert any("IRS401" in r for r in p.regressions)
    relaxed = diff_reports(sides["waves_per_eu/before"], sides["waves_per_eu/after"],
                           policy=RegressionPolicy(("occupancy",)))
    assert not relaxed.regressed


def test_spills_are_judged_by_the_metric_not_its_label():
    policy = RegressionPolicy(("spills",))
    scratch = Change("resources", "scratch bytes", 0, 64, "lower", Metric.SCRATCH_BYTES)
    local = Change("resources", "local memory bytes", 32, 0, "lower", Metric.LOCAL_MEMORY_BYTES)
    assert _judge((local, scratch), (), policy) == (("scratch bytes 0 -> 64",), ("local memory bytes 32 -> 0",))
    # A mix row that happens to read like a resource is no spill; VGPRs going up is not one either.
    lookalike = Change("mix", "VGPR spills", 0, 9, "lower")
    vgprs = Change("resources", "VGPRs", 100, 200, "lower", Metric.VGPRS)
    assert _judge((lookalike, vgprs), (), policy) == ((), ())
    assert "metric" not in {f for f in Change.__dataclass_fields__ if Change.__dataclass_fields__[f].metadata.get(
        "saved", True)}  # the diff's JSON is unchanged


def run(capsys, *args):
    code = main(["diff", *map(str, args)])
    return code, capsys.readouterr()


def test_fail_on_regression_exit_codes(capsys):
    assert run(capsys, BA / "before", BA / "after", "--fail-on", "regression")[0] == 0
    code, out = run(capsys, BA / "after", BA / "before", "--fail-on", "regression")
    assert code == 1 and "regressed" in out.out
    assert run(capsys, BA / "after", BA / "before")[0] == 0  # without the flag, a diff is a report


def test_saved_reports_diff_like_the_caches(tmp_path, capsys):
    for side in ("before", "after"):
        assert main(["scan", str(BA / side), "--json", str(tmp_path / f"{side}.json")]) == 0
    capsys.readouterr()
    code, out = run(capsys, tmp_path / "before.json", tmp_path / "after.json", "--json", "-")
    assert code == 0
    from_reports = json.loads(out.out)
    code, out = run(capsys, BA / "before", BA / "after", "--json", "-")
    from_caches = json.loads(out.out)
    assert from_reports["schema"] == "irscope.diff" and from_reports["pairs"] == from_caches["pairs"]


def test_stage_diff_shows_the_store_change(capsys):
    code, out = run(capsys, BA / "before", BA / "after", "--stage", "amdgcn", "--pair",
                    "tile_copy_kernel@gfx942=tile_copy_kernel@gfx942")
    assert code == 0
    lines = out.out.splitlines()
    assert any(re.match(r"-\s+global_store_short\b", line) for line in lines)
    assert any(re.match(r"\+\s+global_store_dwordx4\b", line) for line in lines)
    assert "(by --pair)" in out.out


def test_two_triton_versions_pair_by_specialization(capsys):
    report = diff_reports(scan(FIXTURES / "caches" / "triton-3.6"), scan(FIXTURES / "caches" / "triton-3.9"))
    assert len(report.pairs) >= 30 and all(p.matched_by == "specialization" for p in report.pairs)
    assert {p.before_version for p in report.pairs} == {"3.6.0"}
    assert {p.after_version for p in report.pairs} == {"3.9.0"}
    names = {p.label for p in report.pairs}
    assert "matmul_kernel gfx942" in names and "softmax_kernel sm_90" in names
    # the builds only 3.9 has (num_warps=16 and 8) are listed, not forced into a pair
    assert len(report.only_after) == 2
    code, out = run(capsys, FIXTURES / "caches" / "triton-3.6", FIXTURES / "caches" / "triton-3.9", "--stage", "ttgir")
    assert code == 0 and "3.6.0 -> 3.9.0" in out.out and "Only before" in out.out


@pytest.mark.parametrize("args,message", [
    (["--pair", "nope"], "expected A=B"),
    (["--pair", "missing_kernel=tile_copy_kernel@gfx942"], "no kernel on the before side"),
])
def test_usage_errors(capsys, args, message):
    code, out = run(capsys, BA / "before", BA / "after", *args)
    assert code == 2 and message in out.err


def test_regression_policy_from_pyproject(tmp_path, monkeypatch, capsys):
    (tmp_path / "pyproject.toml").write_text(textwrap.dedent("""
        [tool.irscope]
        regression = ["occupancy"]
        """))
    monkeypatch.chdir(tmp_path)
    wpe = BA / "waves_per_eu"
    assert run(capsys, wpe / "before", wpe / "after", "--fail-on", "regression")[0] == 0
    (tmp_path / "pyproject.toml").write_text("[tool.irscope]\nregression = ['speed']\n")
    code, out = run(capsys, wpe / "before", wpe / "after")
    assert code == 2 and "unknown regression check" in out.err and str(Path(tmp_path) / "pyproject.toml") in out.err


def test_two_kernel_directories(capsys):
    before = next((BA / "before").glob("*/tile_copy_kernel.amdgcn")).parent
    after = next((BA / "after").glob("*/tile_copy_kernel.amdgcn")).parent
    code, out = run(capsys, before, after, "--json", "-")
    data = json.loads(out.out)
    (p,) = data["pairs"]
    assert code == 0 and p["label"] == "tile_copy_kernel gfx942" and p["regressions"] == []


def test_a_kernel_both_sides_hold_unchanged_is_analyzed_once(tmp_path, capsys, monkeypatch):
    import irscope.pipeline.analyze as analyze
    from conftest import copy_tree

    cache = copy_tree(FIXTURES / "caches" / "triton-3.9", tmp_path / "cache")
    analyzed = []
    real = analyze.analyze_kernel
    monkeypatch.setattr(analyze, "analyze_kernel", lambda k, *a, **kw: analyzed.append(k.key) or real(k, *a, **kw))
    assert main(["diff", str(cache), str(cache), "--no-cache", "-j", "1", "--json", "-"]) == 0
    data = json.loads(capsys.readouterr().out)
    kernels = len(scan(cache).kernels)
    assert len(data["pairs"]) == kernels and sorted(analyzed) == sorted(set(analyzed)) and len(analyzed) == kernels
    assert all(c["before"] == c["after"] for p in data["pairs"] for c in p["changes"])  # the build against itself
    # One file changed between the sides' scans: that kernel is analyzed afresh, the others are not.
    victim = next(cache.rglob("*.amdgcn"))
    real_scan = analyze.scan

    def touch_between(path, **kwargs):
        report = real_scan(path, **kwargs)
        if not touched:
            touched.append(victim.write_text(victim.read_text() + "; a comment\n"))
        return report

    touched, analyzed[:] = [], []
    monkeypatch.setattr(analyze, "scan", touch_between)
    assert main(["diff", str(cache), str(cache), "--no-cache", "-j", "1", "--json", "-"]) == 0
    capsys.readouterr()
    assert len(analyzed) == kernels + 1
