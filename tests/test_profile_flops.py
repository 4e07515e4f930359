"""Achieved against possible (issue 26): each profiled kernel's dot FLOPs from its TTIR and its launches'
arguments, the device's peaks, and the roofline plot, over fixtures/profile/h100-triton3.6.tar.xz (recorded
on an H100 by `irscope scan SCRIPT --profile --out DIR`). The expected FLOPs are the textbook formulas of
each kernel (2MNK for the matmul, 4 x heads x N_CTX^2 x HEAD_DIM for the attention), from the launches
file's arguments."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


@pytest.fixture(scope="module")
def runs(profile_runs) -> dict[str, Path]:
    return profile_runs["time"]


@pytest.fixture(scope="module")
def report_of(scan_run):
    """run directory -> its report as `irscope scan SCRIPT --profile` gives it."""
    from irscope.model.launches import ScriptRun
    from irscope.pipeline.profiling import attach_profile

    def report(run: Path):
        report, profile = attach_profile(scan_run(run), run / "profile.hatchet", run / "launches.jsonl")
        return replace(report, run=ScriptRun(f"{run.name}.py", (), None, 0, 1, profile=profile))
    return report


def _launches(run: Path) -> list[dict]:
    return [d for d in map(json.loads, (run / "launches.jsonl").read_text().splitlines())
            if "record" not in d and not d["autotune"]]


def test_the_matmul_s_flops_are_2mnk_per_launch(runs, report_of):
    report = report_of(runs["matmul"])
    (kr,) = [kr for kr in report.kernels if kr.time and kr.time.launches]
    expected = sum(2 * a["M"] * a["N"] * a["K"] for a in (dict(d["args"]) for d in _launches(runs["matmul"])))
    assert kr.time.flops == expected == 2 * 1024 ** 3
    assert kr.time.element == "f16" and kr.time.tflops == pytest.approx(expected / kr.time.total_ns / 1e3)


def test_the_attention_s_flops_are_its_two_dots_over_the_whole_sequence(runs, report_of):
    report = report_of(runs["flash_attention"])
    (kr,) = [kr for kr in report.kernels if kr.time and kr.time.launches]
    (launch,) = _launches(runs["flash_attention"])
    n_ctx, heads, head_dim = dict(launch["args"])["N_CTX"], launch["grid"][1], kr.config and dict(
        kr.config.constexprs)["HEAD_DIM"]
    assert kr.time.flops == 4 * heads * n_ctx ** 2 * int(head_dim) == 4_294_967_296


def test_kernels_without_a_dot_have_no_flops_and_no_tflops_cell(runs, report_of):
    report = report_of(runs["liger"])
    timed = [kr for kr in report.kernels if kr.time and kr.time.launches]
    assert timed and all(kr.time.flops == 0 and kr.time.tflops is None for kr in timed)


def test_a_loop_bound_the_launch_does_not_tell_gives_no_flops_and_names_the_loop():
    from irscope.ir.dot_flops import program_dot_flops
    from irscope.parsers.mlir_parser import parse_mlir

    path = next((FIXTURES / "caches" / "triton-3.0").glob("*/matmul_kernel.ttir"))
    module = parse_mlir(path.read_text(), str(path))  # Triton 3.0 names its arguments %arg0, %arg1, ...
    unknown = program_dot_flops(module, {"M": 1024, "N": 1024, "K": 1024}, [])
    assert unknown.flops is None and unknown.why.startswith("the loop at line ")
    func = module.functions()[0]
    names = [f"p{i}" for i in range(len(func.regions[0].blocks[0].arguments))]
    loop = module.enclosing_loops(next(module.ops_named("tt.dot")))[0]
    upper = module.value(loop.operands[1])  # the K loop's bound, computed from one argument
    assert upper.kind == "result"
    known = [program_dot_flops(module, {name: 1024 for name in names}, names)]
    assert known[0].flops is not None and known[0].flops > 0


def test_the_device_and_its_peaks_come_from_the_profile(runs, report_of):
    from irscope.model.device_peaks import device_of, matrix_peak

    report = report_of(runs["matmul"])
    profile = report.run.profile
    assert (profile.arch, profile.units) == ("90", 132)  # the profile's device facts, not its display line
    device = profile.device
    assert device.name == "NVIDIA H100 SXM" and "nvidia.com" in device.source
    assert device_of("90", 132, 4.8e12).name == "NVIDIA H200 SXM"
    assert device_of("90", 114, None).name == "NVIDIA H100 PCIe"
    assert device_of("80", 108, None) is None
    assert matrix_peak(device, "f16") == 989.5 and matrix_peak(device, "f32") == 494.5  # TF32 on NVIDIA
    assert matrix_peak(device, "f8E4M3FN") == 1979.0 and matrix_peak(device, "i8") is None


def test_the_console_puts_tflops_against_the_peak(runs, report_of):
    import io

    from rich.console import Console

    from irscope.render.console import render

    report = report_of(runs["flash_attention"])
    out = io.StringIO()
    render(report, Console(file=out, width=160, color_system=None))
    (kr,) = [kr for kr in report.kernels if kr.time and kr.time.launches]
    text = out.getvalue()
    assert f"{kr.time.tflops:,.0f} ({round(kr.time.tflops / 989.5 * 100)}%)" in text
    assert "NVIDIA H100 SXM's dense matrix peak" in text


@pytest.mark.parametrize("suffix, magic", [(".png", b"\x89PNG"), (".svg", b"<?xml")])
def test_the_roofline_is_drawn(runs, tmp_path, suffix, magic, report_of):
    from irscope.render.roofline import write_roofline

    report = report_of(runs["flash_attention"])
    path = tmp_path / f"roofline{suffix}"
    assert write_roofline(report, str(path)) is None
    assert path.read_bytes().startswith(magic)
    if suffix == ".svg":
        assert "attn_fwd" in path.read_text()


def test_the_roofline_without_matplotlib_says_how_to_get_it(runs, tmp_path, monkeypatch, report_of):
    import builtins

    from irscope.render.roofline import write_roofline

    real = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    assert "pip install 'irscope[plot]'" in write_roofline(report_of(runs["matmul"]), str(tmp_path / "r.png"))


def test_profile_plot_is_refused_without_profile_or_with_another_suffix(capsys):
    from irscope.cli.main import main

    script = str(FIXTURES.parent / "examples" / "matmul.py")
    assert main(["scan", script, "--target", "gfx942", "--profile-plot", "r.png"]) == 2
    assert "--profile-plot draws what --profile measures" in capsys.readouterr().err
    assert main(["scan", script, "--profile", "--profile-plot", "r.pdf"]) == 2
    assert ".png or .svg" in capsys.readouterr().err


def test_launches_that_shared_their_kernel_s_scope_leave_the_flops_unknown_not_undercounted(runs, report_of):
    """Past the first 20,000 launches Proton sums a kernel's launches under one scope: their time is in the
    total, their arguments are not, so the FLOPs are unknown rather than those of the numbered launches only
    (which would undercount the TFLOP/s), and a kernel with only such launches is not taken for one without a dot."""
    from irscope.pipeline.profiling import _flops, _Tally

    report = report_of(runs["matmul"])
    (kr,) = [kr for kr in report.kernels if kr.time and kr.time.launches]
    (launch,) = _launches(runs["matmul"])
    numbered = _Tally()
    numbered.launches, numbered.runs = 1, [(tuple(map(tuple, launch["args"])), 64, 1)]
    assert _flops(kr, numbered)[0] == 2 * 1024 ** 3
    for runs_seen in ([], numbered.runs):
        shared = _Tally()
        shared.launches, shared.runs = 3, runs_seen
        flops, why, _ = _flops(kr, shared)
        assert flops is None and "past the first 20,000" in why
