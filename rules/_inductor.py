"""Kernels that torch.compile (inductor) generated: what kind each is, and which knobs reach it.

Inductor writes these kernels itself and picks their configs: XBLOCK/R0_BLOCK and num_warps of a
pointwise or reduction kernel by its heuristics (and autotuner), a GEMM template's BLOCK_M/N/K,
num_stages and num_warps from its max-autotune config list, timed on the GPU. A user never edits
their BLOCK sizes; the fix for one is a torch._inductor.config setting, max-autotune, or the
model's shapes. The real-world corpus (an H100 run of a Llama block, fixtures/real_world/gpu/)
found "fewer num_stages, a smaller BLOCK_K" on such kernels, where no such edit exists.

A kernel is inductor's when its TTGIR locations point into inductor's code cache
(`/tmp/torchinductor_<user>/...`). Its kind comes from the name inductor gives it:
`triton_poi_*` pointwise, `triton_red_*` a reduction looped over R0_BLOCK pieces, `triton_per_*`
a persistent reduction, `triton_mm`/`triton_bmm`/`triton_tem_*` a GEMM template, and `triton_` a
kernel compiled under a placeholder name for benchmarking: a mix-order reduction (a `ws_ptr`
workspace of partial column sums) or a fused kernel timed during autotuning.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from irscope.ir.source_map import kernel_file

GEMM_NAMES = ("triton_mm", "triton_bmm", "triton_tem_")


@dataclass(frozen=True)
class InductorKernel:
    kind: str  # "pointwise", "reduction", "persistent", "gemm", "mix_order", "benchmark"
    name: str
    stages: int | None = None  # a mix-order reduction's loop num_stages (its NUM_STAGES)
    stages_line: int | None = None  # the TTGIR line of that loop
    split: int | None = None  # a mix-order reduction's split size: the rows one program takes


def inductor_kernel(ctx) -> InductorKernel | None:
    """What inductor kernel this is, or None for a kernel someone wrote."""
    module = ctx.ttgir
    if module is None:
        return None
    path = kernel_file(module) or ""
    if "torchinductor" not in path:
        return None
    name = ctx.kernel.name or ""
    functions = module.functions()
    args = {v.name.lstrip("%") for f in functions for v in module.values if v.kind == "argument" and v.owner == f.index}
    dots = any(op.canonical_name in ("tt.dot", "ttng.warp_group_dot") for op in module.ops)
    if name.startswith(GEMM_NAMES) or dots:
        return InductorKernel("gemm", name)
    if name.startswith("triton_poi_"):
        return InductorKernel("pointwise", name)
    if name.startswith("triton_red_"):
        return InductorKernel("reduction", name)
    if name.startswith("triton_per_"):
        return InductorKernel("persistent", name)
    if "ws_ptr" in args:
        loops = [op for op in module.ops if op.canonical_name == "scf.for" and op.loop_depth == 0]
        staged = [op for op in loops if isinstance(op.attributes.get("tt.num_stages"), int)]
        loop = staged[0] if staged else None
        return InductorKernel("mix_order", name, loop.attributes["tt.num_stages"] if loop else None,
                              loop.line if loop else None, _split_size(module))
    return InductorKernel("benchmark", name)


def config_fix(kernel: InductorKernel, what: str, grid: bool = False) -> str:
    """Where this kernel's config comes from and which knob reaches it; `what` is what the config sets,
    `grid`: the knob wanted is the one for the number of programs (a mix-order reduction's split size)."""
    if kernel.kind == "gemm":
        return (f"{what} is one config of inductor's GEMM template ({kernel.name}, max-autotune): its autotuner "
                "compiles and times each config of its list on the GPU and keeps the fastest, so nothing is edited "
                "by hand; other configs of the list have fewer stages or smaller tiles "
                "(torch._inductor.config.max_autotune_gemm_search_space='EXHAUSTIVE' widens it)")
    if kernel.kind == "mix_order":
        stages = (f" (the row loop at TTGIR line {kernel.stages_line} is pipelined with num_stages={kernel.stages}: "
                  "copies of each loaded row in flight)") if kernel.stages else ""
        return (f"{what} is inductor's: a mix-order reduction (row sums and column partials in one pass, the "
                f"partials in a workspace) compiled as one of its autotuning candidates{stages}; inductor picks its "
                "split size and stages, so nothing is edited by hand: "
                + ("torch._inductor.config.triton.mix_order_reduction_split_size sets the rows a program takes"
                   if grid else "its autotuner times this candidate against ones with fewer stages")
                + ", and torch._inductor.config.triton.mix_order_reduction=False turns the fusion off")
    return (f"{what} is inductor's ({kernel.name}): its heuristics pick XBLOCK/R0_BLOCK and num_warps (and "
            "max-autotune or torch._inductor.config.coordinate_descent_tuning time others), so nothing is edited "
            "by hand")


def _split_size(module) -> int | None:
    """The rows one program of a mix-order reduction takes: `split_size = min(xnumel - xoffset, N)`."""
    for op in module.ops:
        if op.canonical_name != "arith.minsi" or not module.values[op.results[0]].name.startswith("%split_size"):
            continue
        for vid in op.operands:
            const = module.defining_op(vid)
            found = re.search(r"arith\.constant (\d+) : i32", const.text) if const is not None else None
            if found:
                return int(found.group(1))
    return None
