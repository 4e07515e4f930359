"""IRS403 lds-limited-occupancy."""

from __future__ import annotations

from irscope.occupancy.amd import AMD_ARCHES
from irscope.occupancy.calculator import occupancy_for
from irscope.occupancy.nvidia import nvidia_arch
from irscope.engine.rule import Rule
from irscope.rules._inductor import config_fix, inductor_kernel
from irscope.rules._occupancy_input import input_artifact

WHAT = {"lds": "workgroup", "shared": "block"}
NAMES = {"vgprs": "VGPRs", "sgprs": "SGPRs", "registers": "registers per thread", "barriers": "named barriers"}


class LdsLimitedOccupancy(Rule):
    """Occupancy limited by LDS (shared memory) per workgroup.

    ## What it does
    Reports a kernel whose LDS per workgroup (AMD: Triton's dynamic `shared` plus any static
    LDS) or shared memory per block (NVIDIA: dynamic `shared`, static shared and the 1 KiB
    reserve) is what stops a CU (SM) from holding more of its workgroups, while occupancy is
    below the hardware's maximum. It names the step irscope's occupancy calculator finds:
    the most bytes that reach the next occupancy, and how many bytes that is less. When
    another resource (VGPRs, registers) binds at the same point, the finding is info and
    says that both must be cut. With `waves_per_eu=N` set, LLVM pads the VGPR allocation so
    that no more than N waves fit: a step past N says the cap must be raised (a VGPR "cut"
    down to what the kernel uses is only that padding). A kernel that already spills is not
    told to cut registers: only smaller tiles reach the step. A workgroup that needs more
    LDS than the CU has cannot launch at all: an error with the numbers (Triton refuses it
    with `OutOfResources`; an autotuner drops the config, so compiling it was time spent for
    nothing).

    ## Why is this bad?
    A CU holds only as many workgroups as fit in its LDS: 64 KiB on gfx90a and gfx942 in
    512 B granules, 160 KiB on gfx950 in 1280 B granules. A gfx942 GEMM with 32 KiB of LDS
    runs 2 workgroups per CU, 2 waves per SIMD with 4-wave workgroups, whatever its VGPRs
    allow; LLVM's `; Occupancy:` comment never sees Triton's dynamic LDS, so it does not say
    so. Fewer waves per SIMD leave less work to switch to while loads are in flight.
    Pipelining (`num_stages`) spends LDS to hide latency in another way: the trade-off is
    worth measuring, not assuming.

    ## Example
    `matmul_kernel` with `waves_per_eu=3` (fixture `gemm_wpe3`, gfx942, Triton 3.6 and 3.9)
    got its 168 VGPRs (3 waves), but `shared` is 32768 B: 65536 // 32768 = 2 workgroups, 2
    waves per SIMD. At 21504 B (11264 B less) 3 workgroups fit. `tile_copy_kernel` (fixture
    `tile_copy_nohint`, Triton 3.2) uses 8320 B, allocated as 8704: 7 workgroups, 7 waves;
    128 B less gives 8.

    ## How to fix it in the kernel
    Cut the LDS per workgroup: fewer `num_stages` (each stage keeps a copy of the A and B
    tiles), a smaller `BLOCK_K`, or smaller `BLOCK_M`/`BLOCK_N` tiles. When VGPRs bind as
    well, cut both (`waves_per_eu` for the VGPRs); when `waves_per_eu` is already set below the
    step, raise it (gemlite's `waves_per_eu=2` config with 32 KiB of LDS and 208 VGPRs needs
    21504 B, 168 VGPRs and `waves_per_eu=3` for 3 waves). A spilling kernel gets there only with
    smaller tiles.
    A kernel torch.compile (inductor) generated has no BLOCK_K to edit: the fix says which of
    inductor's choices sets the bytes (a max-autotune GEMM template config, timed by its autotuner;
    a mix-order reduction's pipelined row loop) and which `torch._inductor.config` knob reaches it.
    """

    code = "IRS403"
    slug = "lds-limited-occupancy"
    summary = "LDS / shared memory per workgroup limits occupancy: bytes to cut for the next step"
    severity = "warning"
    stages = ("occupancy",)
    quotes_options = ("num_stages",)  # "fewer num_stages (now 3)"

    def check(self, ctx):
        occ = ctx.occupancy
        o = occ.occupancy
        limiter = next((r for r in ("lds", "shared") if r in o.limiters), None)
        if limiter is None or o.active >= o.max_active:
            return []
        if not o.launchable:
            return [self._cannot_launch(ctx, limiter)]
        step = next((s for s in occ.steps if s.name == limiter), None)
        if step is None:  # a slot limit binds at the same point: cutting LDS gains nothing
            return []
        group = WHAT[limiter]
        count = o.allowed(limiter)
        what, pool = _limited_pool(occ, limiter, step)
        others = [s for s in occ.steps if s.name in step.also]
        after = step.active
        if others:  # what the cuts give together, from the calculator itself
            values = {i.name: i.value for i in occ.inputs} | {s.name: s.to for s in (step, *others)}
            after = occupancy_for(o.arch, values).occupancy.active
        message = (f"{what} fit {count} {group}{'s' if count != 1 else ''} {pool}: {o.active} {o.unit} of "
                   f"{o.max_active}; at most {step.to} B ({step.now - step.to} less) give {after}")
        stages = ctx.kernel.options.num_stages
        fix = f"fewer num_stages (now {stages.value})" if stages is not None else "fewer num_stages"
        fix += ", a smaller BLOCK_K or smaller tiles"
        cuts, fixes = _other_cuts(ctx, others, after)
        if cuts:
            message += f" only with {' and '.join(cuts)} as well"
            if others:
                message += f": both bind at {o.active}"
            fix += "; " + "; ".join(fixes)
        # Info where LDS is not alone, on NVIDIA (pipelined GEMMs trade occupancy for stages by
        # design), and at 5+ waves per SIMD, which usually hide latency already.
        generated = inductor_kernel(ctx)
        if generated is not None:  # inductor picks the config: no BLOCK_K or num_stages to edit by hand
            fix = config_fix(generated, f"this {step.now} B" + (" (with its registers)" if others else ""))
        alone = not step.also and limiter == "lds" and o.active <= o.max_active // 2
        return [self.finding(
            ctx, **input_artifact(ctx, limiter), fix=fix, severity="warning" if alone else "info",
            message=message,
            evidence={"bytes": step.now, "step_bytes": step.to, "cut": step.now - step.to, "active": o.active,
                      "active_after": after, "groups": o.allowed(limiter)},
        )]

    def _cannot_launch(self, ctx, limiter):
        """Not one workgroup fits: Triton refuses the launch (OutOfResources) and an autotuner drops the config."""
        occ, o = ctx.occupancy, ctx.occupancy.occupancy
        needed = occ.input(limiter)
        if limiter == "lds":
            arch = AMD_ARCHES.get(o.arch)
            has, what = (arch.lds_pool if arch else None), "LDS per workgroup"
        else:
            nv = nvidia_arch(o.arch)
            has, what = (nv.shared_optin if nv else None), "shared memory per block"
        limit = f", {o.arch} has {has:,}" if has else f", more than {o.arch} has"
        stages = ctx.kernel.options.num_stages
        fix = ((f"fewer num_stages (now {stages.value})" if stages is not None else "fewer num_stages")
               + ", a smaller BLOCK_K or smaller tiles; or drop the config from the autotune list")
        generated = inductor_kernel(ctx)
        if generated is not None and generated.kind == "gemm":  # inductor's autotuner fails it and times the rest
            fix = (f"nothing to change by hand: this is one config of inductor's GEMM template ({generated.name}, "
                   "max-autotune); its autotuner compiles it, fails it (OutOfMemoryError: Required: "
                   f"{needed} Hardware limit: {has}) and keeps the fastest of the configs that launch: the cost is "
                   "compile time only")
        elif generated is not None:
            fix = config_fix(generated, f"this {needed} B")
        return self.finding(
            ctx, **input_artifact(ctx, limiter), severity="error",
            message=f"cannot launch: {needed:,} B of {what}{limit}; Triton refuses it (OutOfResources) and an "
                    "autotuner skips this config",
            fix=fix,
            evidence={"bytes": needed or 0, "limit": has or 0},
        )


def _spills(ctx) -> str | None:
    """"18 VGPRs" / "440 B of stack" where the kernel already spills registers: a register cut is no fix then."""
    res = ctx.resources
    vgpr = getattr(res, "vgpr_spill", None)
    if vgpr is not None and vgpr.value:
        return f"{vgpr.value} VGPRs"
    stack = getattr(res, "stack_bytes", None)
    if stack is not None and stack.value:
        return f"{stack.value} B of stack (local memory)"
    return None


def _limited_pool(occ, limiter, step) -> tuple[str, str]:
    """What the limiter holds ("N B of LDS per workgroup", with NVIDIA's static part and reserve) and the pool."""
    o = occ.occupancy
    if limiter == "lds":
        arch = AMD_ARCHES.get(o.arch)
        where = "WGP" if arch is not None and arch.wave_size == 32 else "CU"
        what = f"{step.now} B of LDS per workgroup"
        pool = f"in the {where}'s {arch.lds_pool // 1024} KiB" if arch is not None else f"per {where}"
        return what, pool
    nv = nvidia_arch(o.arch)
    static = occ.input("static_shared") or 0
    extra = [f"{static} B static"] if static else []
    extra += [f"the {nv.reserved_shared} B reserve"] if nv is not None else []
    what = f"{step.now} B of dynamic shared memory per block"
    what += f" (plus {' and '.join(extra)})" if extra else ""
    return what, "per SM"


def _other_cuts(ctx, others, after) -> tuple[list[str], list[str]]:
    """The cuts of the resources that bind at the same step as LDS (and a waves_per_eu cap), each with its fix."""
    occ = ctx.occupancy
    o = occ.occupancy
    cuts, fixes = [], []
    # waves_per_eu=N makes LLVM pad the VGPR allocation so that no more than N waves fit: a step past N
    # needs the cap raised, and a VGPR "cut" down to what the kernel uses is that padding, nothing more.
    asked = occ.input("waves_per_eu") if o.unit == "waves/SIMD" else None
    capped = asked is not None and after > asked
    used = getattr(ctx.resources, "vgpr_total", None)
    spills = _spills(ctx)
    for other in others:
        name = NAMES.get(other.name, other.name)
        if other.name == "vgprs" and capped and used is not None and other.to >= used.value:
            continue  # only the padding: raising waves_per_eu removes it
        cuts.append(f"{name} to {other.to} (now {other.now})")
        if other.name in ("vgprs", "registers") and spills:
            fixes.append(f"{name} cannot be cut: the kernel already spills {spills}, so only smaller tiles "
                         "(fewer live values) reach the step")
        else:
            fixes.append(f"cut {name} to {other.to} too")
    if capped:
        cuts.append(f"waves_per_eu raised to {after} (now {asked}: LLVM pads the VGPR allocation to hold at most "
                    f"{asked} waves per SIMD)")
        fixes.append(f"raise waves_per_eu to {after} (or drop it)")
    return cuts, fixes
