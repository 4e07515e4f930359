"""IRS601 grid-too-small.

Launches are recorded by `irscope scan script.py` (irscope/pipeline/runner_child.py); a kernel
harvested from a cache has none, `KernelContext.has("launch")` is False and the engine does
not run this rule. Each of `ctx.launches` (irscope/model/launches.py Launch) has `grid`,
`compute_units` (the device's CUs or SMs; for --target, the usual device of that arch) and
the script `path` and `line` that launched it.
"""

from __future__ import annotations

from math import prod

from irscope.engine.rule import Rule
from irscope.rules._inductor import config_fix, inductor_kernel
from irscope.rules._program_work import loops_over_a_share, program_work

# A launch that covers at most this many elements per CU (SM) in all (the output of an elementwise
# kernel, or of dots with no K loop) is small for the device however it is split: one 1024-thread
# workgroup per CU would take it in one element a thread, so launch latency, not the grid, sets its time.
SMALL_PER_UNIT = 1024


class GridTooSmall(Rule):
    """A launch grid too small to fill the GPU.

    ## What it does
    Reports a launch with fewer workgroups (blocks) than the device has CUs (SMs): some
    CUs get no work for the whole launch (a warning when fewer than half of them get any,
    info otherwise). It says how many the device holds at once: its CUs times the
    workgroups per CU the kernel's occupancy allows. The fix follows from what one program
    does, read from the TTGIR: a GEMM's accumulator tile and K loop (smaller tiles,
    split-K), a block of rows each reduced whole (fewer rows per program), a state carried
    through a chunk loop (a smaller state block), elementwise work (pieces on a grid axis), a
    loop a grid axis already splits (more pieces of it).
    A program that reduces or scans its whole row or chunk (RMSNorm, a cumulative sum, a
    solve) makes the grid the problem's own size: the finding is info and says there is
    nothing to tune. A single workgroup is a kernel meant to run alone (the final pass over
    partial results) and is left alone, and so is a grid with every CU busy (a tail of
    partly filled CUs), except a persistent grid: k workgroups per CU whose programs loop
    over a share of the work (a grid-stride loop over `tl.num_programs`, or rows from
    `pid * rows_per_program`) while the occupancy lets more share a CU and fewer than half
    the hardware's waves run (info). It needs the launch, which `irscope scan script.py`
    records; a kernel read from a cache has none, and the rule does not run.

    ## Why is this bad?
    Each workgroup runs on one CU. MI300X has 304 CUs: a 128x128-tile GEMM of 1024x1024
    has 64 workgroups and leaves 240 CUs with nothing to do, whatever the kernel's code
    looks like. The ROCm guide asks for more still: "For AMD MI300X, the grid should have
    at least 1024 thread blocks/workgroups (WGs)".

    ## Example
    `irscope scan examples/matmul.py --target gfx942` records each launch. A gfx942
    `matmul_kernel` with 128x128 tiles at 2 workgroups per CU (fixture
    `gemm_aligned`, `shared` 32768) holds 304 x 2 = 608 workgroups at once on MI300X; an
    M = N = 2048 launch has 16 x 16 = 256.

    A persistent grid: liger's DyT backward (real-world corpus, gfx942) launches 304
    programs, one per CU, that loop over rows with `tl.num_programs`, while its 72 VGPRs and
    16 KiB of LDS let 3 share a CU: 2 waves per SIMD where 6 fit. RMSNorm forward launches
    one program per row (256 rows of 4096) and reduces each row whole: 48 CUs idle, info,
    nothing to tune.

    Under `--target`, a library that sizes its grid from this machine (its CPU count)
    rather than from the device gets an info finding that says so, not a warning.

    ## How to fix it in the kernel
    Make more programs where the kernel has a split: smaller `BLOCK_M`/`BLOCK_N` or split-K
    (`SPLIT_K` with an atomic or a second reduction pass) for GEMMs with small M and N, a
    smaller row block for row reductions, a smaller state block (`BV`) for chunked
    recurrences. A kernel whose dot loop starts at `program_id * piece length` already splits
    it over that grid axis (vLLM's MLA decode stage 1: `split_kv_start = kv_len_per_split *
    split_kv_id`, axis z, `num_kv_splits`): more pieces give more programs, where halving its
    16-head row block would read each piece of the KV cache twice. Size a persistent grid to the
    workgroups that fit at once (CUs times the occupancy's workgroups per CU), not to the CU count.
    Where each program is one row or chunk reduced whole, the problem is small for the device:
    only a larger batch (or a two-pass redesign, worth it only if the launch shows in a profile)
    fills it.
    An elementwise launch (or dots with no K loop) that covers at most 1024 elements per CU in
    all is a small problem however it is split: info, nothing to tune. Inductor's kernels take
    their split from inductor: XBLOCK for a reduction, the split size of a mix-order reduction
    (`torch._inductor.config.triton.mix_order_reduction_split_size`), which is already a
    cross-program reduction with a workspace of partials.
    """

    code = "IRS601"
    slug = "grid-too-small"
    summary = "fewer workgroups in the launch grid than the GPU holds at once"
    severity = "warning"
    stages = ("launch",)

    def check(self, ctx):
        if ctx.occupancy is None:
            return []
        findings = []
        for launch in ctx.launches:
            found = self._launch(ctx, launch)
            if found is not None:
                findings.append(found)
        return findings

    def _launch(self, ctx, launch):
        if not launch.compute_units:
            return None
        groups, per_unit = prod(launch.grid), ctx.occupancy.occupancy.groups
        resident = launch.compute_units * per_unit
        unit = "SM" if ctx.backend == "cuda" else "CU"
        where = {"stage": "launch", "path": launch.path or ctx.kernel.directory,
                 "lines": [launch.line] if launch.line else [],
                 "python": (launch.path, launch.line) if launch.line else None}
        evidence = {"workgroups": groups, "resident": resident, "compute_units": launch.compute_units,
                    "launches": launch.count}
        grid = "x".join(map(str, launch.grid))
        if launch.cpu_shaped:  # sized from this machine, not the target: say so, and claim nothing louder than info
            if groups < resident:
                return self.finding(
                    ctx, **where, evidence=evidence, severity="info",
                    message=f"grid {grid} = {groups} workgroups, under the {resident} the device holds at once, but "
                            f"it looks sized from this CPU, not the target ({launch.cpu_shaped}): on the GPU the "
                            "launch may differ",
                    fix="run on the target GPU to see the real grid, or size the grid from "
                        "torch.cuda.get_device_properties(...).multi_processor_count, which --target answers")
            return None
        units = launch.compute_units
        module = ctx.ttgir
        if groups >= units:
            return self._persistent(ctx, launch, where, evidence, grid, groups, per_unit, unit, module)
        # One workgroup is a kernel meant to run alone (a final pass over partial results).
        if groups == 1:
            return None
        work = program_work(module) if module is not None else None
        message = (f"grid {grid} = {groups} workgroups; the device holds {resident} at once ({units} {unit}s x "
                   f"{per_unit}): {units - groups} {unit}{' gets' if units - groups == 1 else 's get'} none")
        # Most CUs busy (256 workgroups on 304 CUs) is a small loss: info. Fewer than half of the CUs with
        # work: a warning, unless the grid is the problem's own size and nothing in the kernel splits it.
        severity = "warning" if 2 * groups < units else "info"
        generated = inductor_kernel(ctx)
        fix = split_fix(work, groups, units, unit, launch.grid)
        if generated is not None and generated.kind == "mix_order" and generated.split:
            # Already a cross-program reduction: each program takes split-size rows, partials go to a workspace.
            message += (f"; each program reduces {generated.split} rows and adds their column sums into a "
                        "workspace (inductor's mix-order reduction: a second pass sums the partials)")
            return self.finding(ctx, **where, evidence=evidence, severity=severity, message=message,
                                fix=f"a smaller split size gives more programs ({generated.split // 2} rows give "
                                    f"{2 * groups}, with a workspace twice as tall): "
                                    + config_fix(generated, "the split size", grid=True))
        total = groups * prod(work.shape) if work is not None and work.shape else 0
        if work is not None and work.kind in ("elementwise", "dots") and 0 < total <= units * SMALL_PER_UNIT:
            severity = "info"
            message += (f"; the whole launch covers {total} elements ({groups} programs of "
                        f"{'x'.join(map(str, work.shape))})")
            fix = (f"nothing to tune: {total} elements are a small problem for {units} {unit}s, split any way "
                   f"(under {SMALL_PER_UNIT} per {unit}); the launch costs its latency, not its grid; a larger "
                   "batch fills the device")
            if generated is not None:
                fix += "; " + config_fix(generated, "the tile")
        elif work is not None and work.kind == "whole":
            severity = "info"
            message += f"; each program {work.what}"
        elif generated is not None and work is not None and work.kind == "rows":
            fix = (f"fewer rows per program: each program {work.what}; {config_fix(generated, 'XBLOCK')}, and its "
                   f"configs with half the rows ({work.shape[0] // 2}) give {2 * groups} programs")
        elif generated is not None:
            fix += "; " + config_fix(generated, "the tile")
        return self.finding(ctx, **where, evidence=evidence, severity=severity, message=message, fix=fix)

    def _persistent(self, ctx, launch, where, evidence, grid, groups, per_unit, unit, module):
        """A grid of k workgroups per CU (sized to the CU count, the program looping over its share of the
        work) where the kernel's occupancy lets more than k share a CU: the CUs run below what fits."""
        units = launch.compute_units
        if groups % units or groups // units >= per_unit or module is None or not loops_over_a_share(module):
            return None  # a tail of partly filled CUs, or one that fills what the occupancy allows
        each = groups // units
        occ = ctx.occupancy.occupancy
        warps = ctx.kernel.options.num_warps.value if ctx.kernel.options.num_warps else None
        if warps is None or not occ.simds:
            return None
        now = max(each * warps // occ.simds, 1)  # waves per SIMD (AMD) or warps per SM (simds is 1 there)
        if 2 * now >= occ.max_active:  # half the hardware's waves or more: latency is mostly hidden already
            return None
        return self.finding(
            ctx, **where, evidence=evidence, severity="info",
            message=f"grid {grid} = {groups} workgroups, {each} per {unit} on {units} {unit}s (a grid sized to the "
                    f"{unit} count; its programs loop over their share): the occupancy lets {per_unit} share a "
                    f"{unit} ({units * per_unit} at once), so it runs at {now} {occ.unit} where {occ.active} fit",
            fix=f"size the grid to the workgroups that fit at once ({unit}s x {per_unit} = {units * per_unit}, "
                f"from the occupancy) rather than to the {unit} count: each program's share of the loop shrinks and "
                f"each {unit} has {occ.active} {occ.unit} to switch between while loads are in flight (partial "
                "results sized by the grid grow with it)")


def split_fix(work, groups: int, units: int, unit: str, grid: tuple[int, ...] = ()) -> str:
    """The split that gives this kernel more programs, or that its grid is the problem's own size."""
    if work is not None and work.kind == "split" and work.axis is not None and work.axis < len(grid):
        pieces, axis = grid[work.axis], "xyz"[work.axis]
        return (f"more pieces of the loop it already splits: each program {work.what}; grid axis {axis} has "
                f"{pieces} now, {2 * pieces} give {2 * groups} programs (each piece half as long; the pass that "
                "merges the partials reads twice as many)")
    if work is None:
        return ("more, smaller programs: a smaller BLOCK size (BLOCK_M/BLOCK_N in a GEMM), split-K, or a "
                "persistent kernel sized to the device")
    tile = "x".join(map(str, work.shape))
    if work.kind == "whole":
        return (f"nothing to tune in the kernel's parameters: the grid is the problem's own size ({groups} programs, "
                f"one row, chunk or block each, for {units} {unit}s); more programs would need a cross-program "
                "reduction (partial results and a second pass), a redesign worth it only if this launch shows in a "
                "profile; a larger batch fills the device")
    if work.kind == "rows":
        return (f"fewer rows per program: each program {work.what}; half the row block ({work.shape[0] // 2} "
                f"rows) gives {2 * groups} programs")
    if work.kind == "gemm":
        return (f"a smaller output tile (the accumulator is {tile}: BLOCK_M/BLOCK_N) or split-K (the loop's K range "
                "split over programs, partials added with tl.atomic_add or a second pass)")
    if work.kind == "recurrence":
        return (f"a smaller state block (each program {work.what}: a smaller block of its columns, e.g. BV, gives "
                "more programs); the loop itself is sequential, so splitting it needs a split of the sequence with "
                "a pass that merges the pieces")
    if work.kind == "dots":
        return (f"more programs from the output: each program {work.what}; a smaller tile along a grid axis, or a "
                "grid axis over the output tiles one program computes in turn, splits them")
    return (f"more, smaller programs: each program {work.what}; pieces of it (a smaller BLOCK, with a grid axis over "
            "the pieces where the grid is one program per row) give more programs over the same data")
