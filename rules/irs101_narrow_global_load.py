"""IRS101 narrow-global-load."""

from __future__ import annotations

from irscope.access_width import narrow_accesses
from irscope.rules._memory import narrow_findings
from irscope.rule import Rule


class NarrowGlobalLoad(Rule):
    """Global loads narrower than 16 bytes per lane where the data allows wider ones.

    ## What it does
    Finds global (and buffer) loads narrower than 16 bytes per lane, such as
    `global_load_ushort` or `global_load_dword` instead of `global_load_dwordx4`, or PTX
    `ld.global.b16` instead of `ld.global.v4.b32`. It reports them only where better pointer
    facts would widen them: the TTGIR layout of the load gives each thread more contiguous
    bytes than the ISA moves at once (the alignment is unknown), or gives each thread
    several elements but no contiguous run at all (the contiguity is unknown). Loads as
    wide as their layout allows are left alone.

    ## Why is this bad?
    Every load instruction costs issue slots and a memory request per lane. Reading fp16
    data with 2-byte loads takes 8 times the instructions, and 8 times the vmcnt slots, of
    16-byte loads, and starves the MFMA units of a GEMM's main loop. The ROCm guide calls
    `global_load_dwordx4` the sign of a vectorized load.

    ## Example
    A GEMM whose strides are runtime values of unknown divisibility:

        a = tl.load(a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak)

    compiles (gfx942, fixture `gemm_unaligned`) to 32 `global_load_ushort` per lane in the
    K loop, where the aligned build has 4 `global_load_dwordx4`.

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
