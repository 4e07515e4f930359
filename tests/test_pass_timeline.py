"""The pass timeline of the fixtures' MLIR_ENABLE_DUMP logs (Triton 3.2 and 3.9)."""

from __future__ import annotations

import gzip
import re

import pytest
from conftest import FIXTURES, REPO

from irscope.cli.main import main
from irscope.model.errors import ArtifactError
from irscope.parsers.mlir_dump import parse_mlir_dump
from irscope.ir.pass_timeline import timelines

DUMPS = FIXTURES / "dumps"


def load(version, target, fixture="gemm_aligned"):
    path = DUMPS / f"mlir-dump_triton-{version}_{target}_{fixture}.txt.gz"
    dump = parse_mlir_dump(gzip.decompress(path.read_bytes()).decode(), str(path))
    (timeline,) = timelines(dump)
    return dump, timeline


# Before-headers per kernel, from ../shared/reference/triton_artifacts.md §3 (matmul)
@pytest.mark.parametrize("version,target,passes", [("3.2", "gfx942", 48), ("3.9", "gfx942", 69),
                                                   ("3.2", "sm_90", 54), ("3.9", "sm_90", 80)])
def test_kernels_and_passes(version, target, passes):
    dump, t = load(version, target)
    assert t.kernel == "matmul_kernel" and len(t.passes) == passes
    assert t.passes[0].name in ("Inliner", "InlinerPass")
    lowering = "ConvertTritonAMDGPUToLLVM" if target == "gfx942" else "ConvertTritonGPUToLLVM"
    assert t.passes[t.final_ttgir].name == lowering
    assert "ConvertTritonToTritonGPU" in t.changed


def section(dump, t, index):
    return dump.text(dump.kernels[0].passes[index])


@pytest.mark.parametrize("version", ["3.2", "3.9"])
def test_the_epilogue_convert_comes_from_remove_layout_conversions(version):
    """sm_90 GEMM: the final TTGIR converts the f16 wgmma accumulator (#mma) to a blocked
    layout before the store (gemm.py:59, IRS302 in the cache's TTGIR). Before the second
    TritonGPURemoveLayoutConversions the store's convert came from another blocked layout
    and the accumulator went mma -> blocked in f32; that pass folded the two, leaving one
    convert straight from #mma."""
    dump, t = load(version, "sm_90")
    (origin,) = [o for o in t.origins if o.op == "convert_layout"]
    assert origin.python_line == 59 and origin.introduced_by == "TritonGPURemoveLayoutConversions"
    assert "mma" in origin.types.split(" -> ")[0] and "blocked" in origin.types.split(" -> ")[1]

    def f16_converts(lines):  # from the accumulator's MMA layout, as each dump spells its alias
        return sum(1 for line in lines if "convert_layout" in line
                   and re.search(r"tensor<128x128xf16, #mma\d*> -> tensor<128x128xf16", line))

    assert f16_converts(section(dump, t, origin.pass_index)) == 0
    assert f16_converts(section(dump, t, origin.pass_index + 1)) == 1
    assert f16_converts(section(dump, t, t.final_ttgir)) == 1


@pytest.mark.parametrize("version,pipeliner", [("3.2", "TritonAMDGPUStreamPipelineV2"),
                                               ("3.9", "TritonAMDGPUPipeline")])
def test_lds_buffers_come_from_the_pipeliner(version, pipeliner):
    dump, t = load(version, "gfx942")
    allocs = {o.python_line: o for o in t.origins if o.op == "local_alloc"}
    assert set(allocs) == {48, 49} and allocs[48].introduced_by == pipeliner
    before = section(dump, t, allocs[48].pass_index)
    after = section(dump, t, allocs[48].pass_index + 1)
    assert not any("local_alloc" in line for line in before) and any("local_alloc" in line for line in after)


def test_in_thread_transpose_reshapes_the_b_buffer():
    """Triton 3.9 on gfx942 gives the B tile an amd_rotating_shared buffer after the pipeliner."""
    _, t = load("3.9", "gfx942")
    (b,) = [o for o in t.origins if o.op == "local_alloc" and o.python_line == 49]
    assert b.introduced_by == "TritonAMDGPUInThreadTranspose" and "amd_rotating_shared" in b.types


def test_passes_command_and_scan_of_a_dump(capsys):
    path = str(DUMPS / "mlir-dump_triton-3.2_sm_90_gemm_aligned.txt.gz")
    assert main(["passes", path]) == 0
    out = capsys.readouterr().out
    assert "TritonGPURemoveLayoutConversions" in out and "convert_layout (line 59)" in out
    assert main(["scan", path]) == 0
    assert "convert_layout (line 59)" in capsys.readouterr().out
    assert main(["passes", path, "--json"]) == 0
    assert '"introduced_by": "TritonGPURemoveLayoutConversions"' in capsys.readouterr().out


def test_a_broken_header_names_the_file_and_line(capsys):
    path = REPO / "tests" / "malformed" / "malformed_dump_header.txt"
    with pytest.raises(ArtifactError) as info:
        parse_mlir_dump(path.read_text(), str(path))
    assert info.value.line == 1
    assert main(["passes", str(path)]) == 2
    assert f"{path}:1" in capsys.readouterr().err
