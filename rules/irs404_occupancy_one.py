"""IRS404 occupancy-one."""

from __future__ import annotations

from irscope.occupancy.calculator import occupancy_for
from irscope.occupancy.amd import AMD_ARCHES
from irscope.occupancy.nvidia import SUB_PARTITIONS
from irscope.engine.rule import Rule
from irscope.rules._inductor import config_fix, inductor_kernel
from irscope.rules._occupancy_input import input_artifact

# The input that sets each limiter: the artifact line the finding points at.
INPUT_OF = {"vgpr": "vgprs", "sgpr": "sgprs", "lds": "lds", "slots": "warps", "registers": "registers",
            "shared": "shared", "warps": "warps", "blocks": "warps", "barriers": "barriers"}
WORDS = {"vgprs": "VGPRs (.vgpr_count)", "sgprs": "SGPRs (.sgpr_count)", "lds": "B of LDS per workgroup",
         "warps": "warps per workgroup", "registers": "registers per thread (cubin)",
         "shared": "B of dynamic shared memory per block", "barriers": "named barriers"}


class OccupancyOne(Rule):
    """One wave per SIMD (one warp per SM scheduler): nothing hides latency.

    ## What it does
    Reports a kernel whose occupancy is one wave per SIMD on AMD, or at most 4 warps per SM
    on NVIDIA (an SM has 4 warp schedulers, one per sub-partition, and a block's warps are
    spread over them: 4 resident warps leave each scheduler at most one). It names the
    resource that sets the limit, at the artifact line it was read from (`.vgpr_count`,
    the metadata json's `shared`, the cubin's register count), and the step irscope's
    occupancy calculator finds to reach two. A CU that holds fewer waves than it has SIMDs
    (one 2-wave workgroup: 1 wave on 2 of 4 SIMDs) counts as one wave per SIMD, with the
    idle SIMDs named. Where LLVM padded the VGPR allocation above what the kernel uses to
    hold a `waves_per_eu` cap (`.amdhsa_next_free_vgpr` above `.vgpr_count`; Triton 3.6+
    asks `"N,N"`, so `waves_per_eu=1` caps too), it names both counts and the occupancy
    without the cap: vLLM's MLA decode (stage 1, `waves_per_eu=1`, gfx942) uses 200 VGPRs
    and is allocated 257, 1 wave per SIMD where its registers allow 2.

    ## Why is this bad?
    A SIMD switches between its resident waves to hide the latency of memory, LDS and MFMA
    results. With one wave there is nothing to switch to: every `s_waitcnt vmcnt` stalls
    the SIMD for the full memory latency (hundreds of cycles on MI300), and only the
    instruction-level parallelism inside the one wave (software pipelining, independent
    MFMAs) keeps it busy. The same holds for an NVIDIA scheduler with one warp.

    ## Example
    `spill_kernel` (fixture `spill`, gfx942, Triton 3.0 to 3.9) uses all 512 VGPRs
    (`.vgpr_count: 512`, 256 VGPRs and 256 AGPRs): one wave per SIMD. `matmul_kernel` with
    runtime strides (fixture `gemm_unaligned`, gfx942, Triton 3.6 and 3.9) has
    `.vgpr_count: 308`: 512 // 312 = 1 wave per SIMD, where 256 VGPRs would give 2.

    ## How to fix it in the kernel
    Cut what the limiter names. VGPRs: smaller `BLOCK_M`/`BLOCK_N`, more `num_warps` for
    the same tile, better pointer facts (`tl.multiple_of`, `tl.constexpr` unit strides: the
    unaligned GEMM's 2-byte loads cost VGPRs), then `waves_per_eu=2` to hold the compiler
    to 256. LDS / shared memory: fewer `num_stages`, a smaller `BLOCK_K`. NVIDIA registers:
    `maxnreg`, smaller tiles. A `waves_per_eu` cap that pads the allocation: raise it or drop it.
    An inductor kernel's config is inductor's (its autotuner or heuristics): the fix says so.
    A config that cannot launch at all is IRS403's error, not reported here.
    """

    code = "IRS404"
    slug = "occupancy-one"
    summary = "one wave per SIMD (one warp per SM scheduler): nothing hides latency"
    severity = "warning"
    stages = ("occupancy",)

    def check(self, ctx):
        occ = ctx.occupancy
        o = occ.occupancy
        if not o.launchable:  # not one workgroup fits: IRS403 reports that it cannot launch (an error)
            return []
        if o.unit == "waves/SIMD":
            if o.active != 1 or o.waves > o.simds:  # 6 waves on 4 SIMDs: two of them hold 2
                return []
            state = "1 wave per SIMD"
            if o.partial:  # fewer waves in the CU than SIMDs: some SIMDs idle for the kernel's whole run
                state += f", on {o.simds_used} of the CU's {o.simds} SIMDs (the others hold none)"
        elif o.unit == "warps/SM":
            if o.active > SUB_PARTITIONS:
                return []
            state = f"{o.active} warp{'s' if o.active != 1 else ''} per SM, at most one per scheduler"
        else:
            return []
        names = [INPUT_OF[r] for r in o.limiters if INPUT_OF.get(r) and occ.input(INPUT_OF[r]) is not None]
        if not names:
            return []
        name = names[0]
        padded = _padded(ctx) if "vgprs" in names else None
        limit = " and ".join(padded[0] if n == "vgprs" and padded else f"{occ.input(n)} {WORDS.get(n, n)}"
                             for n in dict.fromkeys(names))
        step = next((s for s in occ.steps if s.name == name), None) or next(iter(occ.steps), None)
        unit = "workgroup" if o.unit == "waves/SIMD" else "block"
        message = f"{state}: {limit} limit the {_where(o)} to {o.groups} {unit}{'s' if o.groups != 1 else ''}"
        spilled = getattr(ctx.resources, "vgpr_spill", None)
        fix = ("cut what limits it: registers with smaller tiles or more num_warps (then "
               + ("maxnreg" if o.unit == "warps/SM" else "waves_per_eu=2")
               + "), LDS / shared memory with fewer num_stages or a smaller BLOCK_K")
        if padded is not None and name == "vgprs":  # the cap, not the kernel's registers, sets occupancy
            message += f"; {padded[1]}"
            fix = padded[2]
        elif step is not None and step.name == "vgprs" and spilled is not None and spilled.value:
            message += (f"; {step.to} VGPRs would give {step.active} {o.unit}, but it already spills {spilled.value} "
                        f"VGPRs: cut live values, not the register budget")
        elif step is not None:
            message += f"; {step.hint}"
        generated = inductor_kernel(ctx)
        if generated is not None:  # inductor picks the config: nothing in it is edited by hand
            fix = config_fix(generated, f"the {limit} that limit it")
        return [self.finding(
            ctx, **input_artifact(ctx, name), message=message, fix=fix,
            evidence={"active": o.active, "groups": o.groups, name: occ.input(name)},
        )]


def _padded(ctx) -> tuple[str, str, str] | None:
    """Where LLVM padded the VGPR allocation above what the kernel uses (`.amdhsa_next_free_vgpr` above
    `.vgpr_count`: Triton 3.6+ asks `"amdgpu-waves-per-eu"="N,N"`, and LLVM pads so that no more than N
    waves fit, N=1 included; vLLM's MLA decode: 200 used, 257 allocated): the limit's words, the
    occupancy without the cap and the fix."""
    occ = ctx.occupancy
    used, allocated = getattr(ctx.resources, "vgpr_total", None), occ.input("vgprs")
    if used is None or allocated is None or allocated <= used.value:
        return None
    option = ctx.kernel.options.waves_per_eu
    asked = option.value if option is not None and option.value else None
    words = f"{allocated} VGPRs allocated a wave (.amdhsa_next_free_vgpr; the kernel uses {used.value}, .vgpr_count)"
    free = occupancy_for(occ.occupancy.arch, {i.name: i.value for i in occ.inputs} | {"vgprs": used.value}).occupancy
    cap = f"waves_per_eu={asked}'s cap" if asked else "a waves_per_eu cap"
    hint = f"LLVM pads the allocation to hold {cap}; without the cap {free.active} {free.unit} fit"
    fix = (f"raise waves_per_eu to {free.active} or drop it: the kernel needs only {used.value} VGPRs; keep the cap "
           f"only where a measurement shows fewer waves run faster")
    return words, hint, fix


def _where(o) -> str:
    if o.unit == "warps/SM":
        return "SM"
    arch = AMD_ARCHES.get(o.arch)
    return "WGP" if arch is not None and arch.wave_size == 32 else "CU"
