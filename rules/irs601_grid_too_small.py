"""IRS601 grid-too-small.

Launch grids are not recorded yet: `KernelContext.has("launch")` is False, so the engine
never runs this rule. The check is written against the attribute a later issue adds,
`ctx.launch`, with (as assumed here):

- `grid`: the launch's (x, y, z) workgroups (blocks);
- `compute_units`: CUs (AMD) or SMs (NVIDIA) of the device the launch ran on;
- `path`, `line`: the script line that launched it.
"""

from __future__ import annotations

from math import prod

from irscope.rule import Rule

GUIDE_WORKGROUPS = 1024  # ROCm's guide: "For AMD MI300X, the grid should have at least 1024 ... WGs"


class GridTooSmall(Rule):
    """A launch grid too small to fill the GPU.

    ## What it does
    Compares a launch's workgroup (block) count with what the device holds at once: its
    CUs (SMs) times the workgroups per CU that the kernel's occupancy allows. Fewer
    workgroups than that leave CUs idle for the whole launch (warning). On AMD it also
    reports grids under the 1024 workgroups ROCm's guide asks for on MI300X (info). It
    needs the launch, which irscope does not record yet: until it does, the rule never
    runs.

    ## Why is this bad?
    Each workgroup runs on one CU. MI300X has 304 CUs: a 128x128-tile GEMM of 1024x1024
    has 64 workgroups and leaves 240 CUs with nothing to do, whatever the kernel's code
    looks like. Even a grid of a few hundred workgroups leaves a tail where only some CUs
    work. The ROCm guide: "For AMD MI300X, the grid should have at least 1024 thread
    blocks/workgroups (WGs)".

    ## Example
    Not yet reproducible from the fixtures, which hold compiled kernels but no launches.
    A gfx942 `matmul_kernel` with 128x128 tiles at 2 workgroups per CU (fixture
    `gemm_aligned`, `shared` 32768) holds 304 x 2 = 608 workgroups at once on MI300X; an
    M = N = 2048 launch has 16 x 16 = 256.

    ## How to fix it in the kernel
    Make more, smaller workgroups: smaller `BLOCK_M`/`BLOCK_N`, split-K (`SPLIT_K` with an
    atomic or a second reduction pass) for GEMMs with small M and N, or a persistent
    kernel sized to the CU count.
    """

    code = "IRS601"
    slug = "grid-too-small"
    summary = "fewer workgroups in the launch grid than the GPU holds at once"
    severity = "warning"
    stages = ("launch",)

    def check(self, ctx):
        launch = getattr(ctx, "launch", None)  # future: see the module docstring
        if launch is None or ctx.occupancy is None:
            return []
        groups, per_unit = prod(launch.grid), ctx.occupancy.occupancy.groups
        resident = launch.compute_units * per_unit
        unit = "SM" if ctx.backend == "cuda" else "CU"
        where = {"stage": "launch", "path": launch.path, "lines": [launch.line], "python": (launch.path, launch.line)}
        evidence = {"workgroups": groups, "resident": resident, "compute_units": launch.compute_units}
        if groups < resident:
            units = launch.compute_units
            idle = (f"{units - groups} {unit}s get none" if groups < units
                    else f"{groups / units:.1f} per {unit} where {per_unit} fit")
            return [self.finding(
                ctx, **where, evidence=evidence,
                message=f"grid {'x'.join(map(str, launch.grid))} = {groups} workgroups; the device holds {resident} "
                        f"at once ({units} {unit}s x {per_unit}): {idle}",
                fix="smaller BLOCK_M/BLOCK_N, split-K, or a persistent kernel sized to the device")]
        if ctx.backend == "hip" and groups < GUIDE_WORKGROUPS:
            return [self.finding(
                ctx, **where, evidence=evidence, severity="info",
                message=f"grid {'x'.join(map(str, launch.grid))} = {groups} workgroups, under the "
                        f"{GUIDE_WORKGROUPS} that ROCm's guide asks for on MI300X",
                fix="smaller BLOCK_M/BLOCK_N or split-K for more workgroups")]
        return []
