"""An autotuned add with three configs, called for three sizes and then the first size again
(tests/test_run_configs.py): three tuning keys, two of which compile to the same kernels, and a
key-cache hit that benchmarks nothing."""

import torch
import triton
import triton.language as tl

CONFIGS = [
    triton.Config({"BLOCK": 256, "UNROLL": 1}, num_warps=2, num_stages=1),
    triton.Config({"BLOCK": 512, "UNROLL": 2}, num_warps=4, num_stages=2),
    triton.Config({"BLOCK": 1024, "UNROLL": 1}, num_warps=8, num_stages=1),
]


@triton.autotune(configs=CONFIGS, key=["n"])
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, SCALE: tl.constexpr, BLOCK: tl.constexpr, UNROLL: tl.constexpr):
    for u in tl.static_range(UNROLL):
        offsets = (tl.program_id(0) * UNROLL + u) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        x = tl.load(x_ptr + offsets, mask=mask)
        tl.store(out_ptr + offsets, x * SCALE + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def add(x, y):
    out = torch.empty_like(x)
    grid = lambda meta: (triton.cdiv(x.numel(), meta["BLOCK"] * meta["UNROLL"]),)  # noqa: E731
    add_kernel[grid](x, y, out, x.numel(), SCALE=3)
    return out


for size in (4096, 10001, 8192, 4096):  # 4096 and 8192 compile alike (multiples of 16)
    x = torch.randn(size, device="cuda")
    add(x, x)
