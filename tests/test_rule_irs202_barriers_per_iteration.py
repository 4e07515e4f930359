"""IRS202 barriers-per-iteration on the real fixtures.

Counts are checked against the artifact text with LLVM's own loop comments
(`=>This Inner Loop Header: Depth=1`, `in Loop: Header=BB0_n Depth=1` on every block of the
loop, Triton 3.2+), not the rule's control-flow graph.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import FIXTURES, fixture_findings, pick_fixture

from irscope.isa.graph import FunctionGraph
from irscope.parsers.amdgcn import parse_amdgcn
from irscope.isa.assembly import read_assembly
from irscope.engine.context import KernelContext
from irscope.rules.irs202_barriers_per_iteration import BarriersPerIteration

BLOCK = re.compile(r"^(\.LBB\w+:|\$L__BB\w+:|;\s*%bb\.\d+:|//\s*%bb\.\d+:)")
IN_LOOP = re.compile(r"Loop Header: Depth=1|in Loop: Header=\w+ Depth=1")
S_BARRIER = re.compile(r"^\s*(s_barrier|s_barrier_wait)\b")
PTX_BARRIER = re.compile(r"^\s*(bar\.sync|barrier\.sync)\b")
ANY_BARRIER = re.compile(r"^\s*(s_barrier\w*|bar\.sync|barrier\.sync)\b")
MFMA = re.compile(r"^\s*v_mfma_")
COMMENT = re.compile(r"^\s*(;|//)")


@pytest.fixture(scope="module")
def found():
    caches = [FIXTURES / "caches" / f"triton-{v}" for v in ("3.0", "3.2", "3.6", "3.9")]
    return fixture_findings(BarriersPerIteration, *caches)


def pick(found, fixture, arch, version, required=True):
    return pick_fixture(found, fixture, arch, version, required)


def loop_lines(path: str, pattern: re.Pattern) -> list[int]:
    """Lines matching `pattern` in the blocks LLVM marks as belonging to a depth-1 loop."""
    out, in_loop, header = [], False, False
    for n, line in enumerate(Path(path).read_text().splitlines(), 1):
        if BLOCK.match(line):
            in_loop, header = bool(IN_LOOP.search(line)), True
        elif header and COMMENT.match(line):  # the loop comment may sit on the next line
            in_loop = in_loop or bool(IN_LOOP.search(line))
        else:
            header = False
            if in_loop and pattern.match(line):
                out.append(n)
    return out


def text_at(path: str, line: int) -> str:
    return Path(path).read_text().splitlines()[line - 1]


@pytest.mark.parametrize("version", ["3.2", "3.6", "3.9"])
def test_unpipelined_unaligned_gemm_warns_with_four_barriers_per_iteration(found, version):
    ((report, findings),) = pick(found, "gemm_unaligned", "gfx942", version)
    (f,) = findings
    barriers = loop_lines(f.path, S_BARRIER)
    assert len(barriers) == 4 and list(f.lines) == barriers and f.line == barriers[0]
    assert f.severity == "warning" and f.stage == "amdgcn"
    assert f.number("count") == 4 and f.number("per_step") == 4 and f.number("unroll") == 1
    assert f.number("matrix") == len(loop_lines(f.path, MFMA)) == 32
    assert f.python_file.endswith("gemm.py") and f.python_line == 47  # for k in range(0, tl.cdiv(K, BLOCK_K))
    assert f.message.startswith("4 barriers per iteration of the loop at gemm.py:47 (4 s_barrier at .amdgcn lines "
                                + ", ".join(map(str, barriers)))
    assert "it is not software-pipelined" in f.message  # ttg.local_alloc %a inside the scf.for
    ttgir = Path(report.kernel.directory) / "matmul_kernel.ttgir"
    allocs = re.findall(r"\.ttgir lines? ([\d, ]+)\)", f.message)[0].split(", ")
    for n in allocs:
        assert re.search(r"= (ttg|triton_gpu)\.local_alloc %", text_at(str(ttgir), int(n)))


@pytest.mark.parametrize("version", ["3.6", "3.9"])
def test_pipelined_gemm_with_two_barriers_is_the_norm_and_silent(found, version):
    for fixture in ("gemm_aligned", "gemm_mfma16", "gemm_bufferops"):
        ((report, findings),) = pick(found, fixture, "gfx942", version)
        assert findings == []
        assert len(loop_lines(report.kernel.artifact("amdgcn").path, S_BARRIER)) == 2


def test_unrolled_loop_is_counted_per_k_step(found):
    """Triton 3.9's split-K GEMM: LLVM unrolled the K loop twice, 4 s_barrier for 2 K steps:
    the pipelined norm, so silent (counted per machine iteration, 4 would be a warning)."""
    ((report, findings),) = pick(found, "splitk_gemm", "gfx942", "3.9")
    assert findings == []
    path = report.kernel.artifact("amdgcn").path
    assert len(loop_lines(path, S_BARRIER)) == 4
    # one scf.for iteration: a 64x64x64 tl.dot on 4 waves of v_mfma_f32_32x32x8_f16
    ttgir = (Path(report.kernel.directory) / "splitk_matmul_kernel.ttgir").read_text()
    assert "tensor<64x64xf16" in ttgir and "num-warps\" = 4" in ttgir
    per_step = 64 * 64 * 64 // (32 * 32 * 8) // 4
    assert len(loop_lines(path, MFMA)) == 2 * per_step
    ctx = KernelContext(report.kernel, report.resources, read_assembly(report.kernel).programs, report.occupancy)
    program = ctx.program("amdgcn")
    (loop,) = ctx.loops(program, program.functions[0])
    assert loop.unroll == 2 and loop.per_step(4) == 2


@pytest.mark.parametrize("version", ["3.6", "3.9"])
def test_gfx12_split_barrier_counts_once(found, version):
    """Two signal/wait pairs per K step: the norm, silent; counted twice they would be 4, a warning."""
    ((report, findings),) = pick(found, "gemm_aligned", "gfx1200", version)
    path = report.kernel.artifact("amdgcn").path
    signals = loop_lines(path, re.compile(r"^\s*s_barrier_signal\b"))
    waits = loop_lines(path, re.compile(r"^\s*s_barrier_wait\b"))
    assert len(signals) == len(waits) == 2
    assert findings == []


@pytest.mark.parametrize("version", ["3.6", "3.9"])
def test_nvidia_loops(found, version):
    ((_, findings),) = pick(found, "tma_gemm", "sm_90", version)
    (f,) = findings
    bars = loop_lines(f.path, PTX_BARRIER)
    assert list(f.lines) == bars and len(bars) == 4
    assert f.stage == "ptx" and f.severity == "warning" and f.number("per_step") == 4 and f.python_line == 27
    ((report, findings),) = pick(found, "gemm_aligned", "sm_90", version)
    assert findings == [] and len(loop_lines(report.kernel.artifact("ptx").path, PTX_BARRIER)) == 2


def test_triton_30_gemm_without_loop_comments(found):
    """3.0 writes no loop comments; the loops come from the CFG all the same."""
    ((_, findings),) = pick(found, "gemm_aligned", "gfx942", "3.0")
    (f,) = findings
    assert f.severity == "warning" and f.number("count") == 4 and f.python_line == 47
    assert all(S_BARRIER.match(text_at(f.path, n)) for n in f.lines)


@pytest.mark.parametrize("version", ["3.6", "3.9"])
def test_barriers_outside_loops_are_not_counted(found, version):
    """Softmax and layernorm have several barriers per function and no loop: nothing to report."""
    seen = 0
    for fixture in ("softmax", "layernorm"):
        for arch in ("gfx942", "sm_90"):
            for report, findings in pick(found, fixture, arch, version, required=False):
                seen += 1
                assert findings == []
                path = report.kernel.artifact("amdgcn" if arch == "gfx942" else "ptx").path
                text = Path(path).read_text().splitlines()
                assert sum(1 for line in text if ANY_BARRIER.match(line)) >= 2
    assert seen >= 3


def test_one_barrier_per_iteration_is_not_reported(found):
    """Triton 3.9 on gfx950 loads the GEMM tiles straight into LDS: one s_barrier per K step."""
    for fixture in ("gemm_aligned", "gemm_mfma16"):
        ((report, findings),) = pick(found, fixture, "gfx950", "3.9")
        assert findings == []
        assert len(loop_lines(report.kernel.artifact("amdgcn").path, S_BARRIER)) == 1


def test_every_iteration_blocks(found):
    """The execz-guarded global loads of the pipelined GEMM's K loop are on a conditional path;
    the barriers dominate the back edge."""
    ((report, _),) = pick(found, "gemm_aligned", "gfx942", "3.6")
    path = report.kernel.artifact("amdgcn").path
    fn = parse_amdgcn(Path(path).read_text(), path).functions[0]
    graph = FunctionGraph(fn)
    (loop,) = graph.loops
    every = graph.every_iteration(loop)
    by_line = {i.line: i for i in fn.instructions}
    barriers = loop_lines(path, S_BARRIER)
    assert len(barriers) == 2
    for n in barriers:
        assert fn.block_of(by_line[n].index).index in every
    guarded = [i for i in fn.instructions if i.kind == "global_load" and fn.block_of(i.index).index in loop.blocks]
    assert guarded and all(fn.block_of(i.index).index not in every for i in guarded)
