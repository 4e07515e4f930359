"""The stand-in device of `irscope scan script.py --target ARCH`, and how a script run ends.

Each test runs a real script (tests/data/scripts/) in irscope's child process, with the real
Triton compiler: what the script asks of "the GPU" is answered as the target's usual device
would; its output never mixes with irscope's; Ctrl-C stops everything; a config Triton
refuses is named in one line; runs are kept, listed and removed.
"""

from __future__ import annotations

import json
import math
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO

pytest.importorskip("triton")
pytest.importorskip("torch")

from irscope.pipeline import kept_runs  # noqa: E402
from irscope.cli.main import main  # noqa: E402
from irscope.render.runs import runs_table  # noqa: E402
from irscope.model.report import Report  # noqa: E402
from irscope.pipeline.runner import run_script  # noqa: E402
from irscope.pipeline.stand_in.devices import DEVICES  # noqa: E402

SCRIPTS = REPO / "tests" / "data" / "scripts"


@pytest.fixture
def home(tmp_path, monkeypatch):
    """irscope's own directory for this test: where runs are kept."""
    monkeypatch.setenv("IRSCOPE_CACHE_DIR", str(tmp_path / "irscope-home"))
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    return tmp_path


@pytest.mark.parametrize("target", ["gfx942", "sm_90"])
def test_the_device_answers_as_the_target(home, target):
    answers_file = home / "answers.json"
    result = run_script(str(SCRIPTS / "asks_the_device.py"), (str(answers_file),), target, keep=False)
    assert result.exit_code == 0, "the script ran to its end"
    got = json.loads(answers_file.read_text())
    device = DEVICES[target]
    amd = device.backend == "hip"
    assert got["is_available"] is True and got["device_count"] == 1 and got["current_device"] == 0
    assert got["name"] == device.name == ("AMD Instinct MI300X" if amd else "NVIDIA H100 80GB HBM3")
    assert got["capability"] == ([9, 4] if amd else [9, 0])
    assert got["multi_processor_count"] == got["driver_properties"]["multiprocessor_count"] == (304 if amd else 132)
    assert got["warp_size"] == got["driver_properties"]["warpSize"] == (64 if amd else 32)
    assert got["gcnArchName"] == ("gfx942:sramecc+:xnack-" if amd else "NVIDIA H100 80GB HBM3")
    assert got["driver_properties"]["max_shared_mem"] == (65536 if amd else 232448)
    # torch.version.hip is how a library tells a ROCm build of torch
    assert (got["version_hip"] is not None, got["version_cuda"] is not None) == (amd, not amd)
    assert got["x_device"] == got["y_device"] == got["active_torch_device"] == "cuda:0" and got["x_is_cuda"]
    assert got["cpu_device"] == "cpu" and got["device_interface_is_torch_cuda"]
    assert got["pinned_devices"] == ["cuda:0", "cuda:0"]  # pinned host memory, copied to the device
    # a custom Function's backward gets its gradient on the device and what it makes of it stays there;
    # an op registered for CUDA alone goes through its autograd formula, as on the GPU
    assert got["backward_grads_on_device"] == [True, True] and got["cuda_op_has_grad_fn"]
    assert got["do_bench"] == 1.0 and got["do_bench_quantiles"] == [1.0, 1.0, 1.0] and got["event_ms"] == 1.0
    assert got["stream"] == 0 and got["irscope_target"] == target
    run = result.report.run
    asked = {a.question: a.count for a in run.stand_in}
    assert asked["torch.cuda.get_device_properties"] == 1 and asked["torch.cuda.get_device_name"] == 1
    assert asked["torch pin_memory=True"] == 1 and asked["torch.Tensor.pin_memory"] == 1
    # The autotuner built with warmup=/rep= benchmarked both configs with triton.testing.do_bench, so
    # both compiled; the script's own two calls count too.
    assert asked["triton.testing.do_bench"] == 4
    assert {k.kernel.options.num_warps.value for k in result.report.kernels} == {4, 8}
    assert run.device == device.name and run.target == target


def test_json_on_stdout_is_only_the_report(home):
    """`scan SCRIPT --json -` for a script that prints: stdout is the report, the script's output on stderr."""
    proc = subprocess.run([sys.executable, "-m", "irscope", "scan", str(SCRIPTS / "asks_the_device.py"), "--target",
                           "gfx942", "--json", "-", "--", str(home / "answers.json")],
                          capture_output=True, text=True, env=os.environ, timeout=600)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["run"]["target"] == "gfx942" and len(report["kernels"]) == 2
    assert "the script's own output" in proc.stderr and "the script's own output" not in proc.stdout
    json_tool = subprocess.run([sys.executable, "-m", "json.tool"], input=proc.stdout, capture_output=True, text=True)
    assert json_tool.returncode == 0
    sarif = subprocess.run([sys.executable, "-m", "irscope", "scan", str(SCRIPTS / "asks_the_device.py"), "--target",
                            "sm_90", "--sarif", "-", "--no-keep", "--", str(home / "answers.json")],
                           capture_output=True, text=True, env=os.environ, timeout=600)
    assert json.loads(sarif.stdout)["version"] == "2.1.0"


def test_ctrl_c_stops_the_script_and_irscope(home):
    marker = home / "launched"
    proc = subprocess.Popen([sys.executable, "-m", "irscope", "scan", str(SCRIPTS / "waits.py"), "--target", "gfx942",
                             "--", str(marker)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=os.environ, start_new_session=True)
    deadline = time.monotonic() + 300
    while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert marker.exists(), proc.communicate(timeout=60)
    os.killpg(proc.pid, signal.SIGINT)  # what the terminal does on Ctrl-C: the whole foreground group
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert out == "" and "nothing was analyzed" in err and "script interrupted" in err
    assert kept_runs.list_runs() == [] and list((home / "tmp").iterdir()) == []  # nothing left behind


def test_a_config_triton_refuses_is_named_in_one_line(home, capfd):
    assert main(["scan", str(SCRIPTS / "too_much_lds.py"), "--target", "gfx942", "--no-keep"]) == 3
    err = capfd.readouterr().err
    (line,) = [line for line in err.splitlines() if "Triton refuses to launch it" in line]
    assert line.startswith("irscope: big_tile_matmul (BLOCK_M=256, BLOCK_N=256, BLOCK_K=128, num_warps=8, "
                           "num_stages=2) needs ")
    assert line.endswith(" B of LDS, gfx942 has 65,536: Triton refuses to launch it")
    needed = int(line.split(" needs ")[1].split(" B of LDS")[0].replace(",", ""))
    assert needed > 65536
    assert "Traceback" not in err and "result checks" not in err and "outputs are not computed" not in err


def test_a_compile_error_is_named_in_one_line(home, capfd):
    assert main(["scan", str(SCRIPTS / "fails_to_compile.py"), "--target", "sm_90", "--no-keep"]) == 2
    err = capfd.readouterr().err
    assert "irscope: tiled_copy (BLOCK=4096): Triton could not compile it: BLOCK must be at most 1024\n" in err
    assert "Traceback" not in err and "compiled no Triton kernel" in err


def test_a_benchmarked_blas_call_is_not_computed_on_the_cpu(home):
    """Triton's matmul tutorial benchmarks torch.matmul ("cuBLAS") up to 4096x4096 in fp16: on the CPU
    hours of math whose result do_bench throws away. Inside the stand-in do_bench it is not computed."""
    out = home / "bench.json"
    result = run_script(str(SCRIPTS / "benchmarks_a_blas.py"), (str(out),), "gfx942", keep=False)
    assert result.exit_code == 0
    got = json.loads(out.read_text())
    benched, true = got["c00"]  # a 2048^3 fp16 matmul takes ~40 s on this CPU: its result was never computed
    assert not math.isclose(benched, true, rel_tol=0.05, abs_tol=1e-3), (benched, true)
    assert got["c"] == [[2048, 2048], "torch.float16", True] and got["d"] == [64, 2048]
    assert got["outside"] == 512.0, "outside do_bench, torch computes as before"
    (kr,) = result.report.kernels  # the Triton kernel benchmarked beside it still compiled
    assert kr.kernel.name == "scale"


@pytest.mark.parametrize("target", ["gfx942", "sm_90"])
def test_load_binary_tells_the_kernels_registers(home, target):
    """Triton's softmax tutorial sizes its grid from `kernel.n_regs`; the stand-in said 0 (a division
    by zero). It now reads the binary as the driver does: the hsaco's `.vgpr_count` and scratch, the
    cubin's register count and stack; recounted here from the .amdgcn text and the cubin's facts."""
    out = home / "limits.json"
    result = run_script(str(SCRIPTS / "reads_kernel_limits.py"), (str(out),), target, out=str(home / "run"))
    assert result.exit_code == 0
    got = json.loads(out.read_text())
    (kr,) = result.report.kernels
    if target == "gfx942":
        text = Path(kr.kernel.artifact("amdgcn").path).read_text()
        vgprs = int(re.search(r"^\s+\.vgpr_count:\s+(\d+)", text, re.M).group(1))
        threads = int(re.search(r"^\s+\.max_flat_workgroup_size:\s+(\d+)", text, re.M).group(1))
        assert got == {"n_regs": vgprs, "n_spills": 0, "n_max_threads": threads} and vgprs > 0 and threads == 256
    else:
        assert got["n_regs"] == kr.resources.registers.value > 0 and got["n_spills"] == 0


def test_a_grid_sized_from_the_cpu_says_so(home):
    result = run_script(str(SCRIPTS / "cpu_sized_grid.py"), (), "gfx942", keep=False)
    (kr,) = result.report.kernels
    (launch,) = kr.launches
    assert launch.grid == (7, 1, 1) and launch.cpu_shaped == "grid x = 7 = torch.get_num_threads() on this machine"
    (finding,) = [f for f in kr.findings if f.code == "IRS601"]
    assert finding.severity == "info" and "looks sized from this CPU" in finding.message


def test_runs_are_kept_listed_and_removed(home, capfd, monkeypatch):
    monkeypatch.setenv("IRSCOPE_KEEP_RUNS", "2")
    script = str(REPO / "examples" / "vector_add.py")
    pinned = run_script(script, (), "gfx942", keep=True).kept
    kept = [run_script(script, (), target).kept for target in ("gfx942", "sm_90", "gfx942")]
    runs = kept_runs.list_runs()
    # the newest two, and the pinned one, which pruning never takes
    assert [r.path for r in runs] == [kept[2], kept[1], pinned] and not kept[0].exists()
    assert [r.pinned for r in runs] == [False, False, True] and {r.kernels for r in runs} == {1}
    report = Report.load(str(kept[1] / "report.json"))  # a kept run's report opens later, artifacts and all
    assert report.run.kept == str(kept[1])
    for artifact in report.kernels[0].kernel.artifacts:
        assert Path(artifact.path).is_file() and Path(artifact.path).is_relative_to(kept[1])
    capfd.readouterr()
    assert main(["runs"]) == 0
    listing = capfd.readouterr().out
    assert all(r.id[:16] in listing for r in runs) and "pinned" in listing
    for width in (80, 120):  # the id column is cut to fit a terminal; ids stay unique by their first 16
        table = runs_table(runs, kept_runs.runs_dir(), width).plain.splitlines()[1:]
        assert max(len(line) for line in table) <= width and all(r.id[:12] in "".join(table) for r in runs)
    assert main(["runs", "rm", runs[0].id]) == 0 and not kept[2].exists()
    assert main(["runs", "rm", "no-such-run"]) == 2
    assert "no kept run no-such-run" in capfd.readouterr().err
    assert main(["runs", "rm", "--all"]) == 0 and kept_runs.list_runs() == []
    assert main(["runs", "rm"]) == 2


def test_a_hostile_run_directory_is_listed_not_trusted(home):
    """run.json is read back as untrusted input: junk in it lists the run with what is known."""
    root = kept_runs.runs_dir()
    (root / "20260101-000000-x-gfx942-0000").mkdir(parents=True)
    (root / "20260101-000000-x-gfx942-0000" / "run.json").write_bytes(b'{"started": true, "kernels": "9", "pinned": 1}')
    (root / "20260101-000001-y-gfx942-0000").mkdir()
    (root / "20260101-000001-y-gfx942-0000" / "run.json").write_bytes(b"\xff\x00junk")
    (root / "not-a-run").mkdir()
    os.symlink("/", root / "20260101-000002-link-gfx942-0000")
    runs = kept_runs.list_runs()
    assert sorted(r.id for r in runs) == ["20260101-000000-x-gfx942-0000", "20260101-000001-y-gfx942-0000"]
    assert all(r.kernels is None and not r.pinned and r.script == "?" for r in runs)
    assert kept_runs.remove(["20260101-000002-link"]) == ([], ["20260101-000002-link"])
    assert (root / "not-a-run").is_dir()


def test_sm_90_answers_what_an_h100_reported():
    """tools/device_properties.py read torch's and Triton's answers on an H100 SXM (the device tool):
    the stand-in for sm_90 gives every one of them."""
    sys.path.insert(0, str(REPO / "tools"))
    from device_properties import differences

    measured = json.loads((REPO / "tests" / "data" / "device_properties_h100.json").read_text())
    assert measured["torch"]["name"] == "NVIDIA H100 80GB HBM3" and measured["triton_version"] == "3.6.0"
    assert differences("sm_90", measured) == []
    assert differences("sm_80", measured)  # the comparison can fail: another device differs


@pytest.mark.parametrize("keep_flag,kept_after", [("--no-keep", False), (None, True)])
def test_tui_opens_a_run_whose_artifacts_are_there(home, monkeypatch, keep_flag, kept_after):
    """`scan SCRIPT --tui` opens the browser while the run's files exist; --no-keep removes them after."""
    import irscope.cli.main

    seen = {}

    def browser(report, diff, sources):
        seen["artifacts"] = [Path(a.path).is_file() for k in report.kernels for a in k.kernel.artifacts]
        return 0

    monkeypatch.setattr(irscope.cli.main, "_run_tui", browser)
    monkeypatch.setattr(irscope.cli.main, "_no_terminal", lambda: None)  # as in a terminal: pytest's stdin is none
    argv = ["scan", str(REPO / "examples" / "vector_add.py"), "--target", "gfx942", "--tui"]
    assert main(argv + ([keep_flag] if keep_flag else [])) == 0
    assert seen["artifacts"] and all(seen["artifacts"])
    assert bool(kept_runs.list_runs()) == kept_after


def test_on_a_real_gpu_no_grid_is_called_sized_from_the_cpu(tmp_path):
    """A run on a real GPU launches what the GPU answered: a grid of 16 on a 16-core host (the H100
    run of inductor's kernels) is no sign of CPU sizing. Only the stand-in's runs are judged."""
    import json
    import os

    from irscope.pipeline.runner_child import LaunchRecorder

    cores = os.cpu_count()
    for stand_in, expected in ((True, f"grid x = {cores} = os.cpu_count() on this machine"), (False, None)):
        path = tmp_path / f"launches-{stand_in}.jsonl"
        recorder = LaunchRecorder(str(path), "script.py", stand_in=stand_in)
        recorder._units.append(132)  # the device's count, as a driver would answer
        launch = recorder.on_launcher(None, object(), lambda *grid_and_args: None)
        launch(cores, 1, 1)
        recorder.sink.close()
        # the compile's own record ("record": "compiled") comes first; the launch's line has no "record"
        (line,) = [d for d in map(json.loads, path.read_text().splitlines()) if "record" not in d]
        assert line["cpu_shaped"] == (expected if cores > 2 else None)
