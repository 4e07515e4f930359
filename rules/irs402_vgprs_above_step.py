"""IRS402 vgprs-above-step."""

from __future__ import annotations

from irscope.occupancy.calculator import occupancy_for
from irscope.engine.rule import Rule
from irscope.rules._occupancy_input import input_artifact

# The largest cut reported, in VGPRs: one allocation granule on CDNA (8 on gfx90a/942/950, the
# smallest change that can move the allocation at all; a third of one on RDNA's 24). The ROCm
# guide's example is 170 VGPRs against the 168 step; the waves_per_eu=3 fixture (216 -> 168, a
# 48-VGPR cut) shows what a large cut costs: LLVM met the budget by spilling 53 VGPRs.
MAX_CUT = 8


class VgprsAboveStep(Rule):
    """VGPR use a few registers above an occupancy step.

    ## What it does
    Reports an AMD kernel whose occupancy is limited by VGPRs and which would gain a wave
    per SIMD by using at most 8 VGPRs fewer (one allocation granule on CDNA). It reads the
    unified `.vgpr_count` (architectural VGPRs and AGPRs) and the step irscope's occupancy
    calculator finds for it. A step that needs another resource (LDS) cut as well is left
    to IRS403; a larger cut is not cheap and is not reported. It also reports the opposite
    case: `waves_per_eu=N` on a kernel that uses fewer VGPRs than N waves allow, where LLVM
    pads the allocation (`.amdhsa_next_free_vgpr` above `.vgpr_count`) so that no more than N
    waves fit, and the cap, not the kernel's registers, sets occupancy. It names both counts
    and the occupancy without the cap.

    ## Why is this bad?
    VGPRs are allocated in granules of 8 out of a 512-entry file per SIMD lane on gfx90a,
    gfx942 and gfx950, so occupancy falls in steps: 168 VGPRs fit 3 waves per SIMD, 170
    (allocated as 176) fit only 2. A kernel just above a step pays a whole wave of latency
    hiding for a handful of registers, which the compiler can usually save by rescheduling
    or rematerializing, without spilling. The ROCm guide names this case as the one where
    `waves_per_eu` helps: occupancy limited by VGPRs, and VGPR use only a few above a step.

    ## Example
    `matmul_autotuned_kernel` (fixture `autotune_gemm`, 64x64 config, gfx942, Triton 3.6 and
    3.9) has `.vgpr_count: 72`: 512 // 72 = 7 waves per SIMD, while 64 VGPRs would fit 8.
    `matmul_kernel` with num_warps=16 (fixture `gemm_nw16`) has 71: 7 waves per SIMD give 28
    wave slots per CU and hold one 16-wave workgroup (4 waves per SIMD); at 64 VGPRs two
    workgroups fit, 8 waves per SIMD. gemlite's `gemm_splitK_INT_kernel` with `waves_per_eu=2`
    (real-world corpus, gfx942) uses 50 VGPRs but is allocated 169 (LLVM's `; Occupancy: 2`):
    2 waves per SIMD where its own registers and LDS allow 8.

    ## How to fix it in the kernel
    Ask the compiler for the step: `waves_per_eu=N` (N = the waves per SIMD the step gives;
    LLVM then keeps the kernel within 512 // N VGPRs, rounded down to the granule). Check
    `.vgpr_spill_count` stays 0 afterwards. Otherwise keep fewer values live: a smaller
    tile, fewer `num_stages`, or an epilogue that converts and stores in smaller pieces.
    Where `waves_per_eu` caps a kernel that needs fewer VGPRs, raise it to the waves the
    kernel's own use allows, or drop it; keep it only where a measurement shows fewer waves
    run faster.
    """

    code = "IRS402"
    slug = "vgprs-above-step"
    summary = ("VGPRs a few above an occupancy step, or padded to a waves_per_eu cap: the wave(s) a change of "
               "waves_per_eu or fewer live values gains")
    severity = "warning"
    stages = ("occupancy",)
    backends = ("hip",)

    def check(self, ctx):
        occ = ctx.occupancy
        if "vgpr" not in occ.occupancy.limiters:
            return []
        capped = self._capped(ctx)
        if capped is not None:
            return [capped]
        step = next((s for s in occ.steps if s.name == "vgprs" and not s.also), None)
        if step is None or step.now - step.to > MAX_CUT:
            return []
        used = getattr(ctx.resources, "vgpr_total", None)
        if used is not None and step.now > used.value:  # LLVM padded the allocation to hold waves_per_eu's cap
            return []
        now, unit = occ.occupancy.active, occ.occupancy.unit
        asked = occ.input("waves_per_eu")
        if asked is not None and asked >= step.active:
            fix = (f"waves_per_eu={asked} is already set and LLVM did not get under {step.to + 1} VGPRs: "
                   f"keep fewer values live (smaller tiles, fewer num_stages)")
        else:
            fix = (f"waves_per_eu={step.active} (LLVM then budgets at most {step.to} VGPRs), or keep fewer values "
                   f"live; check .vgpr_spill_count stays 0")
        return [self.finding(
            ctx, **input_artifact(ctx, "vgprs"), fix=fix,
            # 5 or more waves per SIMD usually hide latency already: one more is a small gain.
            severity="warning" if now <= occ.occupancy.max_active // 2 else "info",
            message=f"{step.now} VGPRs (.vgpr_count) are {step.now - step.to} above an occupancy step: at most "
                    f"{step.to} give {step.active} {unit} instead of {now}",
            evidence={"vgprs": step.now, "step_vgprs": step.to, "cut": step.now - step.to, "active": now,
                      "active_after": step.active},
        )]

    def _capped(self, ctx):
        """waves_per_eu=N with fewer VGPRs used than N waves allow: LLVM pads the allocation
        (`.amdhsa_next_free_vgpr` above `.vgpr_count`) so that no more than N waves fit, and the cap, not the
        kernel's registers, sets occupancy (gemlite's configs: 50 used, 169 allocated, 2 waves per SIMD)."""
        occ, o = ctx.occupancy, ctx.occupancy.occupancy
        used = getattr(ctx.resources, "vgpr_total", None)
        allocated, asked = occ.input("vgprs"), occ.input("waves_per_eu")
        if used is None or allocated is None or asked is None or allocated <= used.value:
            return None
        free = occupancy_for(o.arch, {i.name: i.value for i in occ.inputs} | {"vgprs": used.value}).occupancy
        if free.active <= o.active:
            return None  # another resource binds at the same point: the cap costs nothing
        then = ("the hardware's maximum" if free.active >= free.max_active
                else f"{'+'.join(free.limiters)} then limit{'s' if len(free.limiters) == 1 else ''}")
        return self.finding(
            ctx, **input_artifact(ctx, "vgprs"),
            severity="warning" if o.active <= o.max_active // 2 else "info",
            message=f"waves_per_eu={asked} caps occupancy at {o.active} {o.unit}: LLVM allocates {allocated} VGPRs a "
                    f"wave (.amdhsa_next_free_vgpr) where the kernel uses {used.value} (.vgpr_count), so that no more "
                    f"than {asked} waves fit; without the cap {free.active} {o.unit} fit ({then})",
            fix=f"raise waves_per_eu to {free.active} or drop it: the kernel needs only {used.value} VGPRs, and "
                "occupancy then follows its own use; keep the cap only where a measurement shows fewer waves run "
                "faster (less cache thrashing)",
            evidence={"vgprs": used.value, "allocated_vgprs": allocated, "waves_per_eu": asked, "active": o.active,
                      "active_after": free.active},
        )
