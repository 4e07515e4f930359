"""Benchmarks "cuBLAS" with torch.matmul beside a Triton kernel, as Triton's matmul tutorial does
(tests/test_stand_in.py): under --target the fp16 matmul inside do_bench must not run on the CPU."""

import json
import sys
import time

import torch
import triton
import triton.language as tl


@triton.jit
def scale(x, y, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y + offsets, tl.load(x + offsets, mask=offsets < n) * 2, mask=offsets < n)


a = torch.randn((2048, 2048), device="cuda", dtype=torch.float16)
b = torch.randn((2048, 2048), device="cuda", dtype=torch.float16)
seen = {}


def blas():
    seen["c"] = torch.matmul(a, b)
    seen["d"] = a[:64] @ b


start = time.perf_counter()
triton.testing.do_bench(blas)
bench_seconds = time.perf_counter() - start
y = torch.empty_like(a)
triton.testing.do_bench(lambda: scale[(a.numel() // 1024,)](a, y, a.numel(), BLOCK=1024))
small = torch.ones((8, 8), device="cuda")
# One element of the product, computed outside do_bench (a 2048-long dot): the benchmarked matmul's
# result holds it only if the matmul ran.
c00 = float((a[0].float() * b[:, 0].float()).sum())
json.dump({"bench_seconds": bench_seconds, "c": [list(seen["c"].shape), str(seen["c"].dtype), seen["c"].is_cuda],
           "c00": [float(seen["c"][0, 0]), c00],
           "d": list(seen["d"].shape), "outside": float((small @ small).sum())}, open(sys.argv[1], "w"))
