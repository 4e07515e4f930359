"""A GEMM launched with tiles whose LDS the target does not have: Triton compiles it and
refuses to launch it (OutOfResources), tests/test_stand_in.py."""

import torch
import triton
import triton.language as tl


@triton.jit
def big_tile_matmul(a_ptr, b_ptr, c_ptr, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rm, rn, rk = tl.arange(0, BLOCK_M), tl.arange(0, BLOCK_N), tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * BLOCK_N + rn[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * BLOCK_N + rn[None, :], acc.to(tl.float16))


a = torch.randn(256, 1024, device="cuda", dtype=torch.float16)
b = torch.randn(1024, 256, device="cuda", dtype=torch.float16)
c = torch.empty(256, 256, device="cuda", dtype=torch.float16)
big_tile_matmul[(1,)](a, b, c, 1024, BLOCK_M=256, BLOCK_N=256, BLOCK_K=128, num_warps=8, num_stages=2)
