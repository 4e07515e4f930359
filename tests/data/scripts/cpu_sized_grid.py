"""Sizes a persistent grid from this machine's CPU threads, as a library that reads "the
device" of a CPU tensor would (tests/test_stand_in.py)."""

import torch
import triton
import triton.language as tl


@triton.jit
def persistent_copy(src, dst, n, BLOCK: tl.constexpr):
    for start in range(tl.program_id(0) * BLOCK, n, tl.num_programs(0) * BLOCK):
        offsets = start + tl.arange(0, BLOCK)
        tl.store(dst + offsets, tl.load(src + offsets, mask=offsets < n), mask=offsets < n)


torch.set_num_threads(7)
src = torch.randn(1 << 20, device="cuda")
dst = torch.empty_like(src)
persistent_copy[(torch.get_num_threads(),)](src, dst, src.numel(), BLOCK=1024)
