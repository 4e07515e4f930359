"""Public Triton kernel libraries run under `irscope scan SCRIPT --target` with no shim of ours.

Each script in fixtures/libraries/ imports a pip-installed library (the test extra pins them)
and calls its own entry points, as a user would on a GPU. For gfx942 and sm_90 each run must
exit 0, and irscope must report exactly the kernels the run compiled, counted here without
irscope from the run's cache (each hash directory's metadata json), including every kernel a
launch was recorded for. Libraries that ask the device (fla at import, liger's
`torch.version.hip` and `multi_processor_count`, autotuners that call `do_bench`) get the
target's answers, and their launches come out as on the real GPU: liger's grids under
`--target sm_90` are those recorded on an H100 (tests/data/library_launches_h100.json).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import REPO

pytest.importorskip("triton")
pytest.importorskip("torch")

from irscope.pipeline.runner import run_script  # noqa: E402

LIBRARIES = REPO / "fixtures" / "libraries"
TARGETS = ("gfx942", "sm_90")
# script -> (the pip distribution it imports, kernel families it must compile on every target)
SCRIPTS = {
    "liger_kernel_ops.py": ("liger-kernel", {
        "_rms_norm_forward_kernel", "_rms_norm_backward_kernel", "_layer_norm_forward_kernel",
        "_layer_norm_backward_kernel", "_swiglu_forward_kernel", "_swiglu_backward_kernel", "_triton_rope",
        "liger_cross_entropy_kernel", "_dyt_fwd_kernel", "_dyt_bwd_kernel"}),
    "fla_linear_attention.py": ("fla-core", {
        "l2norm_fwd_kernel", "l2norm_bwd_kernel", "layer_norm_fwd_kernel_row", "layer_norm_bwd_kernel_row",
        "chunk_local_cumsum_scalar_kernel", "chunk_gated_delta_rule_fwd_kkt_solve_kernel", "recompute_w_u_fwd_kernel",
        "chunk_gated_delta_rule_fwd_kernel_h_blockdim64", "chunk_fwd_kernel_o",
        "fused_recurrent_gated_delta_rule_fwd_kernel"}),
    "sageattention_int8.py": ("sageattention", {"quant_per_block_int8_kernel", "_attn_fwd"}),
    "cut_cross_entropy_loss.py": ("cut-cross-entropy", {
        "_cce_lse_forward_kernel", "_indexed_neg_dot_forward_kernel", "_cce_backward_kernel"}),
    "torchao_int8_matmul.py": ("torchao", {
        "_scaled_int8_mm_kernel", "scaled_matmul_kernel_with_block_pointers", "_fp8_blockwise_act_quant_kernel_impl",
        "_fp8_blockwise_weight_quant_kernel_impl", "_fp8_blockwise_weight_dequant_kernel_impl"}),
    "bitsandbytes_triton_quant.py": ("bitsandbytes", {
        "quantize_8bit_blockwise_kernel", "dequant_8bit_kernel", "quantize_nf4_blockwise_kernel",
        "quantize_fp4_blockwise_kernel", "dequant_nf4_kernel", "dequant_fp4_kernel", "dequant_4bit_kernel",
        "_optimizer_update_2state_32bit_triton_kernel", "_optimizer_update_2state_8bit_blockwise_triton_kernel"}),
    "gemlite_lowbit_gemm.py": ("gemlite", {
        "pack_weights_over_cols_kernel", "gemv_INT_revsplitK_kernel", "gemm_splitK_INT_kernel", "gemm_INT_kernel"}),
    "xformers_ops.py": ("xformers", {
        "_rms_norm_kernel", "_rms_norm_add_kernel", "_rope_padded_kernel", "_splitK_reduce", "_splitK_reduce_varargs",
        "index_select_cat_fwd_kernel", "index_select_cat_bwd_kernel", "scaled_index_add_fwd_kernel",
        "scaled_index_add_bwd_kernel"}),
}
_RUNS: dict = {}


def _run(script: str, target: str, root: Path):
    """One run a (script, target), kept in `root` so its cache can be counted."""
    if (script, target) not in _RUNS:
        out = root / f"{Path(script).stem}-{target}"
        _RUNS[(script, target)] = (run_script(str(LIBRARIES / script), (), target, out=str(out)), out)
    return _RUNS[(script, target)]


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return tmp_path_factory.mktemp("library-runs")


def cache_kernels(cache: Path) -> dict[str, str]:
    """Metadata hash -> kernel name of every compiled kernel in a Triton cache, read without irscope:
    a hash directory whose json has a "name" and whose assembly is there."""
    found = {}
    for directory in cache.iterdir():
        for meta in directory.glob("*.json"):
            if meta.name.startswith("__grp__") or meta.name.endswith(".autotune.json"):
                continue
            data = json.loads(meta.read_text())
            name = data.get("name") if isinstance(data, dict) else None
            if name and any((directory / f"{name}.{ext}").exists() for ext in ("amdgcn", "cubin")):
                found[data["hash"]] = name
    return found


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_library_runs_and_every_kernel_is_reported(script, target, root):
    result, out = _run(script, target, root)
    assert result.exit_code == 0, f"{script} failed under --target {target}"
    report = result.report
    in_cache = cache_kernels(out / "cache")
    assert in_cache, "the run compiled kernels"
    assert sorted(k.kernel.hash for k in report.kernels) == sorted(in_cache)
    assert sorted(k.kernel.name for k in report.kernels) == sorted(in_cache.values())
    launched = {json.loads(line)["hash"] for line in (out / "launches.jsonl").read_text().splitlines()}
    assert launched <= set(in_cache), "every launch is of a kernel found in the cache"
    assert SCRIPTS[script][1] <= set(in_cache.values())
    for kr in report.kernels:
        assert kr.kernel.target.arch == target and not [p for p in kr.problems if p.severity == "error"]
    assert report.run.device and report.run.stand_in


def test_the_matrix_covers_eight_libraries_and_many_families(root):
    families = {k.kernel.name for script in SCRIPTS for target in TARGETS
                for k in _run(script, target, root)[0].report.kernels}
    assert len(SCRIPTS) >= 6 and len(families) >= 12, (len(SCRIPTS), sorted(families))
    assert {p.stem for p in LIBRARIES.glob("*.py")} == {Path(s).stem for s in SCRIPTS}, "every script is in the matrix"


def _asked(script: str, target: str, root: Path) -> dict[str, int]:
    return {a.question: a.count for a in _run(script, target, root)[0].report.run.stand_in}


def test_an_autotuner_benchmarks_with_do_bench(root):
    """liger's DyT autotunes with triton.testing.do_bench: every config compiles, none is measured."""
    for target in TARGETS:
        asked = _asked("liger_kernel_ops.py", target, root)
        assert asked["triton.testing.do_bench"] >= 2
        configs = {(k.kernel.options.num_warps.value, k.kernel.options.num_stages.value)
                   for k in _run("liger_kernel_ops.py", target, root)[0].report.kernels
                   if k.kernel.name == "_dyt_bwd_kernel"}
        assert len(configs) >= 2


def test_libraries_that_ask_the_device_at_import(tmp_path):
    """fla asks about the device when it is imported (fla/utils/hardware.py): on NVIDIA its name and
    capability (Hopper and Blackwell paths), on both the devices' shared memory (tile choices).
    gemlite reads `torch.cuda.get_device_properties(0)` at import: the SM count, and the name that
    picks its tuned-config file (gemlite/quant_utils.py, core.py)."""
    script = tmp_path / "imports.py"
    script.write_text("import fla.ops  # noqa: F401\nimport gemlite  # noqa: F401\n")
    for target in TARGETS:
        run = run_script(str(script), (), target, keep=False).report.run
        asked = {a.question: a.count for a in run.stand_in}
        assert run.exit_code == 0 and asked["torch.cuda.device_count"] >= 1
        assert asked["driver.utils.get_device_properties"] >= 1  # check_shared_mem: max_shared_mem
        assert asked["torch.cuda.get_device_properties"] >= 2
        if target == "sm_90":
            assert asked["torch.cuda.get_device_capability"] >= 1 and asked["torch.cuda.get_device_name"] >= 1


def test_launch_settings_follow_torch_version_hip(root):
    """liger gives its cross entropy 16 warps on ROCm and 32 on CUDA (`torch.version.hip`)."""
    warps = {target: {k.kernel.options.num_warps.value for k in _run("liger_kernel_ops.py", target, root)[0]
                      .report.kernels if k.kernel.name == "liger_cross_entropy_kernel"} for target in TARGETS}
    assert warps == {"gfx942": {16}, "sm_90": {32}}


def test_grids_sized_from_the_device_are_the_targets(root):
    """liger sizes its RMSNorm and LayerNorm backward grids by the CU/SM count of the tensor's device."""
    for target, units in (("gfx942", 304), ("sm_90", 132)):
        report = _run("liger_kernel_ops.py", target, root)[0].report
        grids = {k.kernel.name: {launch.grid for launch in k.launches} for k in report.kernels}
        assert grids["_rms_norm_backward_kernel"] == {(units, 1, 1)}
        assert grids["_layer_norm_backward_kernel"] == {(units, 1, 1)}
        assert not [launch for k in report.kernels for launch in k.launches if launch.cpu_shaped]


@pytest.mark.parametrize("script", sorted(json.loads((REPO / "tests" / "data" / "library_launches_h100.json")
                                                   .read_text())["scripts"]))
def test_sm_90_launches_what_an_h100_launched(script, root):
    """The same script on an H100 (the device tool, Triton 3.6) and under --target sm_90 here: the
    same kernels and configs, the same grids, also where the library sized them from the device."""
    recorded = json.loads((REPO / "tests" / "data" / "library_launches_h100.json").read_text())["scripts"][script]
    report = _run(script, "sm_90", root)[0].report
    here: dict[str, set] = {}
    for k in report.kernels:
        opts = k.kernel.options
        key = f"{k.kernel.name} num_warps={opts.num_warps.value} num_stages={opts.num_stages.value}"
        here.setdefault(key, set()).update(launch.grid for launch in k.launches)
    assert {key: sorted(map(list, grids)) for key, grids in here.items()} == recorded


def test_pinned_library_versions_are_installed():
    """The test extra pins what the matrix runs; another version may compile other kernels."""
    from importlib.metadata import version

    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib
    extra = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]["test"]
    pins = dict(req.split(";")[0].strip().split("==") for req in extra if "==" in req)
    for dist, _ in SCRIPTS.values():
        assert version(dist) == pins[dist], dist
    assert os.environ.get("IRSCOPE_TARGET") is None  # the stand-in lives only in the child
