"""A kernel whose compile-time assertion fails for the config launched (tests/test_stand_in.py)."""

import torch
import triton
import triton.language as tl


@triton.jit
def tiled_copy(src, dst, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK <= 1024, "BLOCK must be at most 1024")
    offsets = tl.arange(0, BLOCK)
    tl.store(dst + offsets, tl.load(src + offsets))


x = torch.randn(4096, device="cuda")
tiled_copy[(1,)](x, torch.empty_like(x), BLOCK=4096)
