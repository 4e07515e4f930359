"""IRS102 narrow-global-store."""

from __future__ import annotations

from irscope.access_width import narrow_accesses
from irscope.rules._memory import narrow_findings
from irscope.rule import Rule


class NarrowGlobalStore(Rule):
    """Global stores narrower than 16 bytes per lane where the data allows wider ones.

    ## What it does
    Finds global (and buffer) stores narrower than 16 bytes per lane, such as
    `global_store_short` instead of `global_store_dwordx4` (PTX `st.global.b16` instead of
    `st.global.v4.b32`), where the TTGIR layout of the stored value gives each thread more
    contiguous bytes than the ISA writes at once, or several elements with no contiguous
    run (the pointer's contiguity is unknown). Stores of an MFMA/MMA accumulator in its own
    layout are left to IRS302.

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

    ## How to fix it in the kernel
    Restate the facts the translation hid: `offs = tl.max_contiguous(tl.multiple_of(offs,
    (16, 16)), (16, 16))` before forming the pointer (the thread's fix), keep strides
    16-divisible (or `tl.constexpr` when they are 1) and base pointers 16-byte aligned.
    """

    code = "IRS102"
    slug = "narrow-global-store"
    summary = "global stores narrower than 16 B per lane where the layout allows wider"
    stages = ("ttgir",)
    kind = "global_store"
    what = "global store"

    def check(self, ctx):
        return narrow_findings(self, ctx, narrow_accesses)
