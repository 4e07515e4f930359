"""IRS101 narrow-global-load."""

from __future__ import annotations

from irscope.ir.layouts.access_width import narrow_accesses
from irscope.rules._memory import narrow_findings
from irscope.engine.rule import Rule


class NarrowGlobalLoad(Rule):
    """Global loads narrower than 16 bytes per lane where the data allows wider ones.

    ## What it does
    Finds global (and buffer) loads narrower than 16 bytes per lane, such as
    `global_load_ushort` or `global_load_dword` instead of `global_load_dwordx4`, or PTX
    `ld.global.b16` instead of `ld.global.v4.b32`. It reports them only where better pointer
    facts would widen them: the TTGIR layout of the load gives each thread more contiguous
    bytes than the ISA moves at once (the alignment is unknown), or gives each thread
    several elements but no contiguous run at all (the contiguity is unknown). Loads as
    wide as their layout allows are left alone, and so is a broadcast: a tensor whose lanes
    all hold the same elements, such as inductor's per-row scalar `tensor<2x1x!tt.ptr<f32>>`
    in a layout whose 32 lanes run along the size-1 dimension. Triton gives a load smaller
    than the CTA its consumer's layout on purpose; each of its 4-byte loads (or `cp.async`
    copies) reads one address for the whole warp, a single transaction, and no pointer fact
    widens it. Offsets carried by a loop count as contiguous only where what the loop yields
    keeps their strides (`ptrs += BLOCK_K * stride`), as in Triton's AxisInfo; `offs = offs * 3`
    does not.

    It reads every op of Triton 3.0-3.9 that loads from global memory: `tt.load` and
    `amdg.buffer_load` (registers), and the copies of pipelined operands straight into LDS,
    `ttg.async_copy_global_to_local` (PTX `cp.async.ca/.cg ... 4/8/16`, AMD `global_load_lds_*`)
    and `amdg.buffer_load_to_local` (`buffer_load_* ... lds`). A 4-byte `cp.async` of a tile
    is as narrow as a 4-byte `ld.global` and is named as such; the limit of a copy into LDS is
    the hardware's: 16 B for `cp.async` and gfx950, one dword a lane on gfx942 and older, so a
    `buffer_load_dword ... lds` there is as wide as it gets. TMA copies (`tt.descriptor_load`,
    `ttng.async_tma_copy_global_to_local`, `cp.async.bulk.tensor`) have no per-lane width and
    are never narrow. Atomics are not width-checked (their widths are the hardware's atomic
    forms), and a line that holds one is left out: an fp16 atomic's compare-and-swap loop
    issues `global_load_dword`s of its own that must not be taken for the line's `tl.load`.

    ## Why is this bad?
    Every load instruction costs issue slots and a memory request per lane. Reading fp16
    data with 2-byte loads takes 8 times the instructions, and 8 times the vmcnt slots, of
    16-byte loads, and starves the MFMA units of a GEMM's main loop. The ROCm guide calls
    `global_load_dwordx4` the sign of a vectorized load.

    ## Example
    A GEMM whose strides are runtime values of unknown divisibility:

        a = tl.load(a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak)

    compiles (gfx942, fixture `gemm_unaligned`) to 32 `global_load_ushort` per lane in the
    K loop, where the aligned build has 4 `global_load_dwordx4`. An fp32 GEMM with such
    strides, pipelined on sm_90, copies its operands with `cp.async.ca.shared.global [..], 0x4`
    (64 per K step): "copies into shared memory of 4 B per lane".

    ## How to fix it in the kernel
    Tell Triton what is true about the pointers: pass unit strides as `tl.constexpr`
    (`stride_ak: tl.constexpr = 1`) or let the JIT specialize them (a stride of 1 and
    16-divisible integers are specialized by default), keep base pointers 16-byte aligned,
    and state what the compiler cannot see with `tl.multiple_of(offs, 8)` and
    `tl.max_contiguous(offs, 8)` on the offsets.
    """

    code = "IRS101"
    slug = "narrow-global-load"
    summary = "global loads narrower than 16 B per lane where the layout allows wider"
    stages = ("ttgir",)
    kind = "global_load"
    what = "global load"

    def check(self, ctx):
        return narrow_findings(self, ctx, narrow_accesses)
