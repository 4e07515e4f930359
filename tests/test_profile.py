"""`irscope scan script.py --profile` (issue 26), over fixtures/profile/h100-triton3.6.tar.xz: the bundled
examples and liger-kernel's ops run on an H100 under `irscope scan SCRIPT --profile --out DIR` (Proton's
profile.hatchet, the launches file, the run's cache; fixtures/README.md). Each expectation is counted here
from the raw profile JSON, without irscope's reader."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
RUNS = ("vector_add", "softmax", "matmul", "flash_attention", "liger")


@pytest.fixture(scope="module")
def runs(profile_runs) -> dict[str, Path]:
    return profile_runs["time"]


@pytest.fixture(scope="module")
def profiled(runs, scan_run) -> dict:
    """Each run as `irscope scan SCRIPT --profile` reports it: (report, RunProfile)."""
    from irscope.model.launches import ScriptRun
    from irscope.pipeline.profiling import attach_profile

    out = {}
    for name, run in runs.items():
        report, profile = attach_profile(scan_run(run), run / "profile.hatchet", run / "launches.jsonl")
        out[name] = (replace(report, run=ScriptRun(f"{name}.py", (), None, 0, 1, profile=profile)), profile)
    return out


def _raw_kernels(path: Path):
    """(scope names above it, name, count, ns) of every node with a time, by plain recursion."""
    def walk(node, scopes):
        metrics = node.get("metrics", {})
        name = node["frame"]["name"]
        if metrics.get("count") and "time (ns)" in metrics:
            yield scopes, name, metrics["count"], metrics["time (ns)"]
        for child in node.get("children", []):
            yield from walk(child, scopes + (name,))
    return list(walk(json.loads(path.read_text())[0], ()))


def _launch_lines(path: Path) -> list[dict]:
    return [d for d in map(json.loads, path.read_text().splitlines()) if "record" not in d]


@pytest.mark.parametrize("name", RUNS)
def test_every_recorded_launch_is_timed_and_every_nanosecond_is_counted_once(runs, profiled, name):
    report, profile = profiled[name]
    raw = _raw_kernels(runs[name] / "profile.hatchet")
    assert profile.gpu_ns == sum(ns for *_, ns in raw) > 0
    triton = sum(ns for scopes, *_, ns in raw if any(s.startswith("irscope:launch:") for s in scopes))
    assert profile.triton_ns == triton == sum(kr.time.total_ns for kr in report.kernels if kr.time)
    assert profile.others_ns == sum(o.total_ns for o in profile.others)
    assert profile.untimed == 0
    profiled_launches = [d for d in _launch_lines(runs[name] / "launches.jsonl") if not d["autotune"]]
    timed = sum(kr.time.launches for kr in report.kernels if kr.time)
    assert profile.triton_launches == len(profiled_launches) == timed
    assert sum(kr.time.share for kr in report.kernels if kr.time) == pytest.approx(triton / profile.gpu_ns)


def test_each_launch_time_is_its_scope_s_kernel(runs, profiled):
    report, _ = profiled["liger"]
    raw = {scopes[-1]: ns for scopes, _, _, ns in _raw_kernels(runs["liger"] / "profile.hatchet") if scopes}
    lines = {d["launch"]: d for d in _launch_lines(runs["liger"] / "launches.jsonl")}
    for kr in report.kernels:
        if kr.time is None:
            continue
        numbers = sorted(n for n, d in lines.items() if d["hash"] == kr.kernel.hash and not d["autotune"])
        assert kr.time.first_launch == numbers[0]
        assert kr.time.launch_ns == tuple(raw[f"irscope:launch:{n}"] for n in numbers)
        assert kr.time.bytes == sum(lines[n]["bytes"] for n in numbers)


def test_the_autotuner_s_timing_launches_are_not_in_the_profile(runs, profiled):
    """matmul.py autotunes two configs: only the chosen one ran as the script's work, and Proton was paused
    while the autotuner timed both (hundreds of launches in the launches file, none in the profile)."""
    report, _ = profiled["matmul"]
    lines = _launch_lines(runs["matmul"] / "launches.jsonl")
    assert sum(d["autotune"] for d in lines) > 50
    timed = [kr for kr in report.kernels if kr.time and kr.time.launches]
    (chosen,) = [a.hash for kr in report.kernels for a in kr.autotune]
    assert [kr.kernel.hash for kr in timed] == [chosen]
    assert len(report.kernels) == 2 and timed[0].time.launches == 1


def test_other_kernels_are_named_and_ranked(profiled):
    _, profile = profiled["flash_attention"]
    assert [o.total_ns for o in profile.others] == sorted((o.total_ns for o in profile.others), reverse=True)
    assert any("gemm" in o.name for o in profile.others)  # the reference torch computes with cuBLAS
    assert profile.devices == ("CUDA 0: arch 90, 132 SMs",)


def test_the_console_ranks_by_gpu_time_and_fits_80_columns(profiled):
    import io

    from rich.console import Console

    from irscope.render.console import render

    report, _ = profiled["liger"]
    out = io.StringIO()
    render(report, Console(file=out, width=80, color_system=None))
    text = out.getvalue()
    assert text.startswith("GPU time on CUDA 0: arch 90, 132 SMs")
    table = [line for line in text.splitlines() if line[:1] in "┏┃┡│└"]
    assert table and all(len(line) <= 80 for line in table)
    rows = [line for line in table if line.startswith("│")]
    times = [kr.time.total_ns for kr in sorted(report.kernels, key=lambda kr: -(kr.time.total_ns if kr.time else 0))
             if kr.time and kr.time.launches and kr.kernel.key in text]
    assert rows[0].split("│")[1].strip().startswith("liger_cross")  # the most GPU time of the kernels alone
    assert times == sorted(times, reverse=True)
    shares = [line for line in text.splitlines() if "of GPU time (" in line]
    assert shares  # each kernel's findings say its share
    assert all(len(line) <= 80 for line in shares)  # on a line of its own when the heading leaves no room


def test_the_family_view_shows_the_time_of_the_config_that_ran(profiled):
    import io

    from rich.console import Console

    from irscope.render.console import render

    report, _ = profiled["matmul"]
    out = io.StringIO()
    render(report, Console(file=out, width=120, color_system=None))
    text = out.getvalue()
    (row,) = [line for line in text.splitlines() if line.startswith("│") and "*" in line.split("│")[1]]
    (kr,) = [kr for kr in report.kernels if kr.time and kr.time.launches]
    from irscope.render.cells import duration, share

    assert f"{duration(kr.time.total_ns)} {share(kr.time.share)}" in row
    assert "of GPU time" in text


def test_the_profile_is_saved_and_loaded_with_the_report(profiled):
    from irscope.model.report import Report

    report, _ = profiled["softmax"]
    loaded = Report.from_json(report.to_json())
    assert loaded.run.profile == report.run.profile
    assert [kr.time for kr in loaded.kernels] == [kr.time for kr in report.kernels]


@pytest.mark.parametrize("text, line", [
    ('[\n  {"frame": {"name": "ROOT"},\n  "children": [\n', 4),  # malformed input (hand-written): truncated
    ("\x00\x01binary", 1),
])
def test_a_broken_profile_names_its_file_and_line(tmp_path, text, line):
    from irscope.model.errors import ArtifactError
    from irscope.parsers.proton import read_hatchet

    path = tmp_path / "profile.hatchet"
    path.write_text(text)
    with pytest.raises(ArtifactError) as caught:
        read_hatchet(str(path))
    assert str(caught.value).startswith(f"{path}:{line}: not a Proton profile")


def test_a_profile_that_is_not_a_call_tree_is_refused(tmp_path):
    from irscope.model.errors import ArtifactError
    from irscope.parsers.proton import read_hatchet

    path = tmp_path / "profile.hatchet"
    path.write_text('{"frame": {"name": "ROOT"}}')  # malformed input (hand-written): an object, not a list
    with pytest.raises(ArtifactError, match="no call tree"):
        read_hatchet(str(path))


def test_scope_names_are_the_readers(monkeypatch):
    """The child names its scopes as parsers/proton.py reads them, pauses Proton around an autotuner's timing,
    and opens no scope while paused."""
    from irscope.pipeline.profile_session import ProfileSession

    calls = []

    class FakeProton:
        def enter_scope(self, name):
            calls.append(("enter", name))

        def exit_scope(self):
            calls.append(("exit",))

        def deactivate(self, session):
            calls.append(("deactivate", session))

        def activate(self, session):
            calls.append(("activate", session))

    session = ProfileSession("x")
    session.proton, session.session = FakeProton(), 7
    with session.launch_scope(3, "abc"):
        pass
    with session.paused():
        with session.launch_scope(4, "abc"):
            pass
    with session.launch_scope(10**6, "abc"):
        pass
    assert calls == [("enter", "irscope:launch:3"), ("exit",), ("deactivate", 7), ("activate", 7),
                     ("enter", "irscope:kernel:abc"), ("exit",)]


def test_tensor_bytes_counts_each_distinct_tensor_once():
    from irscope.pipeline.profile_session import tensor_bytes

    class Tensor:
        def __init__(self, ptr, n, size):
            self.ptr, self.n, self.size = ptr, n, size

        def data_ptr(self):
            return self.ptr

        def numel(self):
            return self.n

        def element_size(self):
            return self.size

    a, b = Tensor(1000, 256, 2), Tensor(5000, 64, 4)
    assert tensor_bytes([a, 7, b, a, None, 1.5]) == 256 * 2 + 64 * 4
    assert tensor_bytes([3, "x"]) is None


@pytest.mark.skipif(not __import__("sys").platform.startswith("linux"), reason="the GPU check reads Linux's /dev")
def test_profile_is_refused_without_a_gpu_and_under_target(monkeypatch, capsys):
    from irscope.cli.main import main
    from irscope.pipeline import profile_session

    script = str(FIXTURES.parent / "examples" / "vector_add.py")
    assert main(["scan", script, "--profile", "--target", "gfx942"]) == 2
    assert capsys.readouterr().err.strip().count("\n") == 0
    monkeypatch.setattr(profile_session, "GPU_DEVICE_NODES", ("/nonexistent/nvidiactl", "/nonexistent/kfd"))
    assert main(["scan", script, "--profile"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--profile measures the kernels on a GPU" in err and "nothing was run" in err
    assert main(["scan", str(FIXTURES / "caches"), "--profile"]) == 2
    assert "go with a script" in capsys.readouterr().err


def test_a_run_whose_profile_is_missing_or_broken_says_why(runs, profiled, tmp_path):
    import io

    from rich.console import Console

    from irscope.pipeline.run_profile import attach_measurements
    from irscope.render.console import render

    report, _ = profiled["softmax"]
    log = io.StringIO()
    (tmp_path / "launches.jsonl").write_text((runs["softmax"] / "launches.jsonl").read_text())
    missing = attach_measurements(report, "time", tmp_path, None, log)
    assert missing[1] is None and "Proton wrote no profile" in missing[2] in log.getvalue()
    (tmp_path / "profile.hatchet").write_text("[{")  # malformed input (hand-written): a truncated profile
    broken = attach_measurements(report, "time", tmp_path, None, log)
    assert broken[2].startswith(f"{tmp_path / 'profile.hatchet'}:1: not a Proton profile")
    child = attach_measurements(report, "time", tmp_path, "no CUPTI", log)
    assert child[1:] == (None, "no CUPTI")
    counters = attach_measurements(report, "counters", tmp_path, None, log)
    assert "cannot read Nsight Compute's counters" in counters[2] and "--profile=counters: " in log.getvalue()
    out = io.StringIO()
    render(replace(report, run=replace(report.run, profile=None, unprofiled="no CUPTI")),
           Console(file=out, width=80, color_system=None))
    assert out.getvalue().startswith("Profile: nothing measured: no CUPTI")


def test_the_csv_export_carries_the_times(profiled):
    report, _ = profiled["liger"]
    frame = report.to_frame()
    timed = {kr.kernel.key: kr.time for kr in report.kernels if kr.time}
    rows = frame[frame["gpu_time_ns"].notna()]
    assert sorted(rows["key"]) == sorted(timed)
    for key, ns, share in zip(rows["key"], rows["gpu_time_ns"], rows["gpu_share"]):
        assert (ns, share) == (timed[key].total_ns, timed[key].share)


def test_the_device_s_dram_bandwidth_comes_from_the_profile_s_device_facts(runs, profiled):
    import io

    from rich.console import Console

    from irscope.render.console import render

    facts = json.loads((runs["vector_add"] / "profile.hatchet").read_text())[1]["CUDA"]["0"]
    report, profile = profiled["vector_add"]
    assert profile.dram_peak == 2 * facts["memory_clock_rate"] * 1000 * facts["bus_width"] / 8 == 3.35232e12
    (kr,) = [kr for kr in report.kernels if kr.time]
    lines = _launch_lines(runs["vector_add"] / "launches.jsonl")
    assert kr.time.bytes == sum(d["bytes"] for d in lines) == 3 * 4 * 98432  # x, y and the output: 98,432 floats
    out = io.StringIO()
    render(report, Console(file=out, width=100, color_system=None))
    rate = kr.time.bytes / kr.time.total_ns
    assert f"{rate:,.0f} ({round(rate * 1e9 / profile.dram_peak * 100)}%)" in out.getvalue()
