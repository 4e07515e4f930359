"""Reads what the driver says of a compiled kernel, as Triton's softmax tutorial does to size its
grid (`NUM_REGS // (kernel.n_regs * WARP_SIZE * num_warps)`), and writes it to argv[1]."""

import json
import sys

import torch
import triton
import triton.language as tl

DEVICE = triton.runtime.driver.active.get_active_torch_device()


@triton.jit
def row_exp(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + i, tl.exp(tl.load(x_ptr + i, mask=i < n)), mask=i < n)


x = torch.randn(4096, device=DEVICE)
y = torch.empty_like(x)
kernel = row_exp.warmup(x, y, 4096, BLOCK=1024, num_warps=4, grid=(1,))
kernel._init_handles()
with open(sys.argv[1], "w") as out:
    json.dump({"n_regs": kernel.n_regs, "n_spills": kernel.n_spills, "n_max_threads": kernel.n_max_threads}, out)
