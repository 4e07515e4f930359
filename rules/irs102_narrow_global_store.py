"""IRS102 narrow-global-store."""

from __future__ import annotations

from irscope.ir.layouts.access_width import narrow_accesses
from irscope.rules._memory import narrow_findings
from irscope.engine.rule import Rule


class NarrowGlobalStore(Rule):
    """Global stores narrower than 16 bytes per lane where the data allows wider ones.

    ## What it does
    Finds global (and buffer) stores narrower than 16 bytes per lane, such as
    `global_store_short` instead of `global_store_dwordx4` (PTX `st.global.b16` instead of
    `st.global.v4.b32`), where the TTGIR layout of the stored value gives each thread more
    contiguous bytes than the ISA writes at once, or several elements with no contiguous
    run (the pointer's contiguity is unknown); a broadcast value whose lanes all hold the same
    elements is one address a warp and left alone. It reads `tt.store` and `amdg.buffer_store`;
    TMA stores (`tt.descriptor_store`, `ttng.async_tma_copy_local_to_global`) are never narrow.

    It also reports a tile stored straight from an MFMA/WMMA/MMA accumulator one element at
    a time (2-byte stores of a bf16 tile) when the accumulator layout gives each lane a run of
    consecutive elements along one dimension while memory is contiguous along the other: no
    pointer fact helps there, the layout does. An accumulator stored as wide as its runs
    (`buffer_store_dwordx2` of 4 fp16) is left alone; its conversion to a blocked layout,
    when Triton inserts one, is IRS302's.

    ## Why is this bad?
    Each store is an instruction and a memory transaction per lane: 2-byte stores of an
    fp16 tile take 8 times the instructions of 16-byte stores and, in the GEMM tuning
    thread, the kernel's assembly shrank from 2014 to 1151 lines once they became
    `global_store_dwordx4`.

    ## Example
    A tile copy through translated (heap-relative) pointers, which lose Triton's
    contiguity facts:

        tl.store(dst_ptr + translate(offs), tile)

    compiles (gfx942, fixture `tile_copy_nohint`) to 16 `global_store_short` per lane.

    A GEMM writing a column-major C (`stride_cm` = 1) on gfx942 stores its accumulator from
    the transposed MFMA layout, 4 consecutive elements of N a lane: 64 `buffer_store_short`
    per lane, where the row-major C of the same kernel is 16 `buffer_store_dwordx2`. Triton
    3.0's non-transposed MFMA (4 consecutive rows a lane) stores a row-major C the same way.

    ## How to fix it in the kernel
    Restate the facts the translation hid: `offs = tl.max_contiguous(tl.multiple_of(offs,
    (16, 16)), (16, 16))` before forming the pointer (the thread's fix), keep strides
    16-divisible (or `tl.constexpr` when they are 1) and base pointers 16-byte aligned.

    For an accumulator stored across its runs, move the runs: compute the transposed tile
    (`acc = tl.dot(tl.trans(b), tl.trans(a), acc)`, shape `[BLOCK_N, BLOCK_M]`) and store it
    through pointers transposed to match; the column-major C above then stores with
    `buffer_store_dwordx2`. `matrix_instr_nonkdim` does not move the runs. On Triton 3.0-3.1,
    3.2+ transposes the MFMA layout of a plain GEMM itself.
    """

    code = "IRS102"
    slug = "narrow-global-store"
    summary = "global stores narrower than 16 B per lane where the layout allows wider"
    stages = ("ttgir",)
    kind = "global_store"
    what = "global store"

    def check(self, ctx):
        return narrow_findings(self, ctx, narrow_accesses)
