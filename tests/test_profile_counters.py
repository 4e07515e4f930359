"""`irscope scan script.py --profile=counters` (issue 26), over fixtures/profile/h100-triton3.6-counters.tar.xz:
the bundled examples and liger-kernel's ops run on an H100 under `irscope scan SCRIPT --profile=counters
--out DIR` (Nsight Compute 2025.3's counters.csv, the launches file, the run's cache; fixtures/README.md).
The expected values are read here from the CSV with the csv module, not with irscope's reader."""

from __future__ import annotations

import csv
import json
from dataclasses import replace
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
RUNS = ("vector_add", "softmax", "matmul", "flash_attention", "liger")


@pytest.fixture(scope="module")
def runs(profile_runs) -> dict[str, Path]:
    return profile_runs["counters"]


@pytest.fixture(scope="module")
def counted(runs, scan_run) -> dict:
    from irscope.model.launches import ScriptRun
    from irscope.pipeline.profiling import attach_counters

    return {name: replace(attach_counters(scan_run(run), run / "counters.csv", run / "launches.jsonl"),
                          run=ScriptRun(f"{name}.py", (), None, 0, 1))
            for name, run in runs.items()}


def _csv_rows(path: Path) -> list[dict]:
    lines = path.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('"ID",'))
    rows = list(csv.DictReader(lines[start:]))
    return rows[1:]  # the units row


def _num(text: str) -> float:
    return float(text.replace(",", ""))


@pytest.mark.parametrize("name", RUNS)
def test_irscope_s_occupancy_equals_nsight_compute_s_theoretical_for_every_profiled_kernel(counted, name):
    report = counted[name]
    profiled = [kr for kr in report.kernels if kr.counters is not None]
    assert profiled
    for kr in profiled:
        assert kr.counters.agrees is True, kr.kernel.name
        assert kr.counters.irscope_warps == kr.occupancy.occupancy.active == round(kr.counters.theoretical_warps)
        # and the blocks per SM each resource allows. Nsight Compute's shared-memory limit is under the carveout
        # the driver chose for the launch (launch__shared_mem_config_size: 32 KB for add_kernel's 1 KB blocks),
        # irscope's under the largest the SM allows; the driver's choice never held a kernel here below the
        # other limits, so the occupancies agree.
        mine = {limit.resource: limit.groups for limit in kr.occupancy.occupancy.limits}
        for resource, blocks in kr.counters.block_limits:
            assert mine[resource] == blocks if resource != "shared" else mine[resource] >= blocks >= \
                kr.occupancy.occupancy.groups, (kr.kernel.name, resource)


def test_the_fixtures_hold_fifteen_kernels(counted):
    assert sum(kr.counters is not None for report in counted.values() for kr in report.kernels) == 15


@pytest.mark.parametrize("name", RUNS)
def test_each_launch_gets_its_own_row_and_sums_are_the_rows(runs, counted, name):
    rows = _csv_rows(runs[name] / "counters.csv")
    launches = [d for d in map(json.loads, (runs[name] / "launches.jsonl").read_text().splitlines())
                if "record" not in d and not d["autotune"]]
    triton_rows = [r for r in rows if r["Kernel Name"] in {d["name"] for d in launches}]
    assert len(triton_rows) == len(launches)  # the autotuners' timing launches were not profiled
    for kr in counted[name].kernels:
        if kr.counters is None:
            continue
        ids = [i for i, d in enumerate(launches) if d["hash"] == kr.kernel.hash]
        mine = [triton_rows[i] for i in ids]
        assert kr.counters.launches == len(mine)
        assert kr.counters.dram_bytes == round(sum(_num(r["dram__bytes.sum"]) for r in mine))
        assert kr.counters.instructions == round(sum(_num(r["smsp__inst_executed.sum"]) for r in mine))
        assert kr.counters.theoretical_pct == _num(mine[0]["sm__maximum_warps_per_active_cycle_pct"])


def test_the_console_shows_the_comparison_in_80_columns(counted):
    import io

    from rich.console import Console

    from irscope.render.console import render

    out = io.StringIO()
    render(counted["liger"], Console(file=out, width=80, color_system=None))
    text = out.getvalue()
    assert text.startswith("Nsight Compute's counters of 11 kernels") and "all agree" in text
    table = text.split("\n\n")[0].splitlines()
    assert all(len(line) <= 80 for line in table)
    assert any(line.startswith("│ liger_cross_entropy_kernel") for line in table)


def test_a_difference_is_reported_as_an_irscope_bug(runs, counted, tmp_path):
    from irscope.pipeline.profiling import attach_counters

    run = runs["softmax"]
    text = (run / "counters.csv").read_text()
    header = next(line for line in text.splitlines() if line.startswith('"ID",'))
    at = next(csv.reader([header])).index("sm__maximum_warps_avg_per_active_cycle")
    lines = text.splitlines()
    start = lines.index(header)
    # malformed input (derived by hand from the recorded file): one row's theoretical warps changed to 32
    for i in range(start + 2, len(lines)):
        cells = next(csv.reader([lines[i]]))
        if cells[4] == "softmax_kernel":
            cells[at] = "32"
            lines[i] = ",".join(f'"{c}"' for c in cells)
            break
    broken = tmp_path / "counters.csv"
    broken.write_text("\n".join(lines) + "\n")
    report = attach_counters(replace(counted["softmax"], kernels=tuple(replace(kr, counters=None, problems=())
                                                                     for kr in counted["softmax"].kernels)),
                             broken, run / "launches.jsonl")
    (kr,) = [kr for kr in report.kernels if kr.counters is not None]
    assert kr.counters.agrees is False
    (problem,) = kr.problems
    assert problem.path == str(broken) and problem.line == i + 1 and "an irscope bug" in problem.message


def test_a_csv_without_its_header_is_refused_with_ncu_s_error(tmp_path):
    from irscope.model.errors import ArtifactError
    from irscope.parsers.ncu import read_ncu_csv

    path = tmp_path / "counters.csv"
    # malformed input (hand-written): what ncu leaves when it could not profile
    path.write_text("==PROF== Connected to process 1\n==ERROR== ERR_NVGPUCTRPERM - no permission\n")
    with pytest.raises(ArtifactError, match="no header row.*ERR_NVGPUCTRPERM"):
        read_ncu_csv(str(path))


def test_the_child_switches_nsight_compute_on_at_the_first_launch_and_off_while_the_autotuner_times():
    from irscope.pipeline.profile_session import CounterSession

    calls = []

    class FakeCuda:
        def cuProfilerStart(self):
            calls.append("start")

        def cuProfilerStop(self):
            calls.append("stop")

    session = CounterSession()
    session.cuda = FakeCuda()
    with session.launch_scope(1, "a"):
        pass
    with session.launch_scope(2, "a"):
        pass
    with session.paused():
        with session.launch_scope(3, "b"):
            pass
    with session.launch_scope(4, "a"):
        pass
    assert session.finish() is None
    assert calls == ["start", "stop", "start", "stop"]


def test_counters_without_ncu_are_refused_in_one_line(monkeypatch, capsys):
    from irscope.cli.main import main
    from irscope.pipeline import profile_session, run_profile

    monkeypatch.setattr(profile_session, "no_gpu_here", lambda: None)
    monkeypatch.setattr(run_profile, "ncu_path", lambda: None)
    assert main(["scan", str(FIXTURES.parent / "examples" / "vector_add.py"), "--profile=counters"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Nsight Compute" in err and "nothing was run" in err


def test_the_csv_export_carries_the_counters_and_times(counted):
    frame = counted["liger"].to_frame()
    counted_rows = frame[frame["ncu_theoretical_warps"].notna()]
    assert len(counted_rows) == 11 and counted_rows["ncu_agrees"].all()
    assert (counted_rows["ncu_theoretical_warps"] == counted_rows["occupancy"]).all()
    assert frame["gpu_time_ns"].isna().all()  # counters, not Proton's times, in this run
