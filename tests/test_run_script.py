"""`irscope scan script.py --target ARCH`: the examples compile for AMD and NVIDIA on this CPU.

Each run is a real Triton compile in a child process (triton and torch from the test
extra). The user's own cache, set for the test, must come out byte-identical.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import FIXTURES, REPO, copy_tree, tree_digest

pytest.importorskip("triton")
pytest.importorskip("torch")

from irscope.cli.main import main  # noqa: E402
from irscope.pipeline.runner import run_script  # noqa: E402
from irscope.pipeline.stand_in.devices import DEVICES  # noqa: E402

EXAMPLES = REPO / "examples"
# example -> kernel names; every example runs to its end under --target (its checks are skipped)
CASES = {
    "vector_add.py": {"add_kernel"},
    "softmax.py": {"softmax_kernel"},
    "matmul.py": {"matmul_kernel"},
    "flash_attention.py": {"attn_fwd"},
}


@pytest.fixture(scope="module")
def user_cache(tmp_path_factory):
    """A user's Triton cache, pointed at by TRITON_CACHE_DIR while the examples run."""
    cache = copy_tree(FIXTURES / "caches" / "triton-3.9", tmp_path_factory.mktemp("user") / "cache")
    before = tree_digest(cache)
    old = os.environ.get("TRITON_CACHE_DIR")
    os.environ["TRITON_CACHE_DIR"] = str(cache)
    yield cache, before
    if old is None:
        os.environ.pop("TRITON_CACHE_DIR", None)
    else:
        os.environ["TRITON_CACHE_DIR"] = old


@pytest.fixture(scope="module")
def runs(user_cache):
    out = {}
    for target in ("gfx942", "sm_90"):
        for example in CASES:
            out[(example, target)] = run_script(str(EXAMPLES / example), (), target, keep=False)
    return out


@pytest.mark.parametrize("target,backend", [("gfx942", "hip"), ("sm_90", "cuda")])
@pytest.mark.parametrize("example", sorted(CASES))
def test_examples_compile_for_the_target(runs, example, target, backend):
    names = CASES[example]
    result = runs[(example, target)]
    report = result.report
    assert result.exit_code == 0 and report.run.exit_code == 0 and report.run.target == target
    assert report.run.reason is None and report.run.device == DEVICES[target].name
    assert {k.kernel.name for k in report.kernels} == names
    for kr in report.kernels:
        assert kr.kernel.target.arch == target and kr.kernel.target.backend == backend
        assert kr.occupancy is not None and kr.mix
        (launch, *_) = kr.launches
        assert launch.path == str((EXAMPLES / example).resolve()) and launch.line
        assert launch.num_warps == kr.kernel.options.num_warps.value
    assert report.run.launches == sum(launch.count for kr in report.kernels for launch in kr.launches)
    assert any(kr.findings for kr in report.kernels)
    assert result.kept is None


def test_autotune_compiles_every_config(runs):
    report = runs[("matmul.py", "gfx942")].report
    assert len(report.kernels) == 2  # two triton.Config entries, two specializations
    assert {kr.kernel.options.num_stages.value for kr in report.kernels} == {2, 3}


def test_grid_rule_sees_the_launch(runs):
    """vector_add launches cdiv(98432, 1024) = 97 programs: 207 of MI300X's 304 CUs idle. An
    elementwise launch of under 1024 elements per CU is a small problem, not a tiling choice: info."""
    (kr,) = runs[("vector_add.py", "gfx942")].report.kernels
    (launch,) = kr.launches
    assert launch.grid == (97, 1, 1)
    (f,) = [f for f in kr.findings if f.code == "IRS601"]
    assert f.severity == "info" and "207 CUs get none" in f.message and f.python_line == launch.line
    assert f.fix.startswith("nothing to tune: 99328 elements are a small problem for 304 CUs")
    text = (EXAMPLES / "vector_add.py").read_text().splitlines()[launch.line - 1]
    assert "add_kernel[grid]" in text


def test_the_user_cache_is_untouched(runs, user_cache):
    cache, before = user_cache
    assert tree_digest(cache) == before


def test_cli_exit_codes_and_script_output(tmp_path, capfd, user_cache):
    capsys = capfd  # the script's output comes from the child process's own file descriptors
    script = tmp_path / "fails.py"
    script.write_text("import runpy, sys\nsys.argv = [sys.argv[0]]\n"
                      f"runpy.run_path({str(EXAMPLES / 'softmax.py')!r}, run_name='__main__')\n"
                      "raise AssertionError('a result check failed')\n")
    assert main(["scan", str(script), "--target", "gfx942", "--no-keep"]) == 3
    out = capsys.readouterr()
    assert "script exited with 1" in out.err and "AssertionError: a result check failed" in out.err
    assert 'File "' + str(script) in out.err and "runner_child" not in out.err
    assert "softmax_kernel" in out.out and "failed (exit 1) after compiling 1 kernel" in out.err
    assert "outputs are not computed" in out.err and "no GPU: outputs not computed" in out.err
    script = tmp_path / "nothing.py"
    script.write_text("import sys\nprint('args', sys.argv[1:])\n")
    assert main(["scan", str(script), "--target", "gfx942", "--", "--size", "3"]) == 2
    out = capsys.readouterr()
    assert "args ['--size', '3']" in out.err and "compiled no Triton kernel" in out.err
    assert "args" not in out.out  # the script's stdout never mixes with irscope's
    assert main(["scan", str(script), "--target", "gfx000"]) == 2
    assert "--target gfx000: not one of" in capsys.readouterr().err
    assert main(["scan", str(FIXTURES / "caches"), "--target", "gfx942"]) == 2
    assert main(["scan", str(FIXTURES / "caches"), "--no-keep"]) == 2


def test_out_keeps_the_run(tmp_path, capfd, user_cache):
    capsys = capfd
    out_dir = tmp_path / "run"
    assert main(["scan", str(EXAMPLES / "vector_add.py"), "--target", "sm_90", "--out", str(out_dir)]) == 0
    assert (out_dir / "launches.jsonl").is_file() and (out_dir / "report.json").is_file()
    assert len([p for p in (out_dir / "cache").iterdir() if p.is_dir()]) >= 1
    assert f"kept in {out_dir}" in capsys.readouterr().err
    assert Path(out_dir).is_dir()


def test_dump_gives_each_compile_its_pass_timeline(user_cache):
    """--dump: both autotune configs of the matmul get the timeline of their own compile."""
    result = run_script(str(EXAMPLES / "matmul.py"), (), "gfx942", keep=False, dump=True)
    kernels = result.report.kernels
    assert len(kernels) == 2
    for kr in kernels:
        t = kr.passes
        assert t is not None and t.kernel == "matmul_kernel"
        assert (t.num_warps, t.shared) == (kr.kernel.options.num_warps.value, kr.kernel.options.shared.value)
        allocs = {o.python_line: o.introduced_by for o in t.origins if o.op == "local_alloc"}
        lines = (EXAMPLES / "matmul.py").read_text().splitlines()
        a_line = next(n for n, text in enumerate(lines, 1) if text.strip().startswith("a = tl.load"))
        assert allocs[a_line] == "TritonAMDGPUPipeline"  # the A tile's LDS stages
        assert set(allocs.values()) <= {"TritonAMDGPUPipeline", "TritonAMDGPUInThreadTranspose"}
        assert t.passes[t.final_ttgir].name == "ConvertTritonAMDGPUToLLVM"
    assert kernels[0].passes != kernels[1].passes
