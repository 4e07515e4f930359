"""IRS601 grid-too-small: a cache holds no launches, so it never runs on the fixtures.

The last test runs its check against a real fixture's occupancy with launches of the kind
`irscope scan script.py` records (grid, compute_units, path, line); tests/test_run_script.py
shows it on real launches.
"""

from __future__ import annotations

import pytest

from irscope.model.launches import Launch
from conftest import FIXTURES, load_manifest, rule_findings

from irscope.rules.irs601_grid_too_small import GridTooSmall

VERSIONS = ("3.6", "3.9")


@pytest.fixture(scope="module")
def found():
    return {v: rule_findings(GridTooSmall, FIXTURES / "caches" / f"triton-{v}") for v in VERSIONS}


def test_declares_the_launch_stage():
    assert GridTooSmall.stages == ("launch",)


@pytest.mark.parametrize("version", VERSIONS)
def test_silent_on_the_fixtures_without_launches(found, version):
    assert len(found[version]) > 10
    for report, findings in found[version].values():
        assert findings == []
        assert not [p for p in report.problems if "IRS601" in p.message]


def context(version: str, fixture: str, arch: str):
    from irscope.pipeline.harvester import harvest
    from irscope.occupancy.calculator import kernel_occupancy
    from irscope.isa.resources import read_resources
    from irscope.engine.context import KernelContext

    (e,) = [e for e in load_manifest()["kernels"] if e["cache"] == f"caches/triton-{version}"
            and e["fixture"] == fixture and e["target_name"] == arch]
    (kernel,) = harvest([FIXTURES / e["cache"] / e["dir"]]).kernels
    resources, _ = read_resources(kernel, kernel.target)
    occupancy, _ = kernel_occupancy(kernel, resources)
    return KernelContext(kernel, resources, (), occupancy)


def test_the_engine_skips_it_because_launch_is_not_recorded():
    ctx = context("3.9", "gemm_aligned", "gfx942")
    assert ctx.has("occupancy") and not ctx.has("launch")
    assert GridTooSmall().check(ctx) == []  # and with no launches the check itself says nothing


def test_check_against_a_recorded_launch():
    """gfx942 GEMM at 2 workgroups per CU; MI300X has 304 CUs, so 608 fit at once."""
    ctx = context("3.9", "gemm_aligned", "gfx942")
    assert ctx.occupancy.occupancy.groups == 2
    rule = GridTooSmall()

    def run(grid):
        ctx.launches = (Launch(grid, 4, 2, 32768, 304, "bench.py", 12),)
        return rule.check(ctx)

    (f,) = run((16, 16, 1))  # M = N = 2048 with 128x128 tiles: most CUs busy, info
    assert f.severity == "info" and (f.stage, f.path, f.line, f.python_line) == ("launch", "bench.py", 12, 12)
    assert f.message == "grid 16x16x1 = 256 workgroups; the device holds 608 at once (304 CUs x 2): 48 CUs get none"
    (f,) = run((8, 8, 1))  # M = N = 1024: fewer than half of the CUs get work, a warning
    assert f.severity == "warning" and f.message.endswith("240 CUs get none")
    # Every CU with work (a tail; 304 GEMM tiles, whose loop runs over K from 0, not over a share of the work
    # as a persistent grid's does), and a lone workgroup: no finding (fixtures/real_world/ledger/IRS601.jsonl).
    assert run((512, 1, 1)) == run((304, 1, 1)) == run((800, 1, 1)) == run((1, 1, 1)) == []
    (f,) = run((303, 1, 1))
    assert f.message.endswith("1 CU gets none")


TWO_PASS_SUM = '''
import torch
import triton
import triton.language as tl


@triton.jit
def partial_sums(x_ptr, partial_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(partial_ptr + pid, tl.sum(tl.load(x_ptr + offs, mask=offs < n, other=0.0), axis=0))


@triton.jit
def combine(partial_ptr, out_ptr, parts, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr, tl.sum(tl.load(partial_ptr + offs, mask=offs < parts, other=0.0), axis=0))


x = torch.randn(1 << 20, device="cuda")
parts = triton.cdiv(x.numel(), 4096)
partial = torch.empty(parts, device="cuda")
out = torch.empty(1, device="cuda")
partial_sums[(parts,)](x, partial, x.numel(), BLOCK=4096)
combine[(1,)](partial, out, parts, BLOCK=256)
'''


def test_a_one_workgroup_final_pass_is_not_reported(tmp_path):
    """Issue 21, defect 8: the second kernel of a two-pass reduction is 1x1x1 by design; the first pass
    (256 programs on 304 CUs) is the one a too-small grid concerns. A real compile and launch for gfx942."""
    pytest.importorskip("triton")
    pytest.importorskip("torch")
    from irscope.pipeline.runner import run_script

    script = tmp_path / "two_pass_sum.py"
    script.write_text(TWO_PASS_SUM)
    report = run_script(str(script), (), "gfx942", keep=False).report
    kernels = {kr.kernel.name: kr for kr in report.kernels}
    (launch,) = kernels["combine"].launches
    assert launch.grid == (1, 1, 1)
    assert not [f for f in kernels["combine"].findings if f.code == "IRS601"]
    (first,) = [f for f in kernels["partial_sums"].findings if f.code == "IRS601"]
    assert first.message.startswith("grid 256x1x1 = 256 workgroups")
    # each program reduces its whole 4096-element block: nothing in the kernel's parameters splits it further
    assert first.fix.startswith("nothing to tune")
