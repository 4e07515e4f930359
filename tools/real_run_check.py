"""Run real Triton kernels on the GPU, then check `irscope scan` of the cache they filled.

The launches return Triton's CompiledKernel, whose n_regs / n_spills the driver filled;
irscope, reading only the files in TRITON_CACHE_DIR, must report the same numbers and
the same dynamic shared memory. Run on the device machine:
    TRITON_CACHE_DIR=/tmp/real-cache python tools/real_run_check.py --json OUT
Exit 1 on any mismatch.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pm, pn = tl.program_id(0), tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * sam + (k + rk)[None, :] * sak)
        b = tl.load(b_ptr + (k + rk)[:, None] * sbk + rn[None, :] * sbn)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :] * scn, acc.to(tl.float16))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json")
    args = parser.parse_args()
    cache = os.environ["TRITON_CACHE_DIR"]

    x = torch.randn(1 << 20, device="cuda")
    y = torch.randn_like(x)
    out = torch.empty_like(x)
    launched = {"add_kernel": add_kernel[(x.numel() // 1024,)](x, y, out, x.numel(), BLOCK=1024)}
    assert torch.allclose(out, x + y)
    a = torch.randn(512, 512, device="cuda", dtype=torch.float16)
    b = torch.randn(512, 512, device="cuda", dtype=torch.float16)
    c = torch.empty(512, 512, device="cuda", dtype=torch.float16)
    launched["matmul_kernel"] = matmul_kernel[(4, 4)](a, b, c, 512, 512, 512, *a.stride(), *b.stride(), *c.stride(),
                                                      BM=128, BN=128, BK=64, num_stages=3)
    assert torch.allclose(c.float(), (a.float() @ b.float()), atol=1.0, rtol=0.05)
    torch.cuda.synchronize()

    import irscope

    report = irscope.scan(cache)
    rows, bad = [], 0
    for r in report.kernels:
        ck = launched[r.kernel.name]
        res = r.resources
        mine = dict(n_regs=res.registers.value, n_spills=res.local_memory_bytes // 4,
                    shared=r.kernel.options.shared.value, arch=r.kernel.target.arch)
        theirs = dict(n_regs=ck.n_regs, n_spills=ck.n_spills, shared=ck.metadata.shared,
                      arch=f"sm_{torch.cuda.get_device_capability()[0]}{torch.cuda.get_device_capability()[1]}")
        ok = mine == theirs
        bad += not ok
        rows.append(dict(kernel=r.kernel.name, irscope=mine, triton_runtime=theirs, ok=ok,
                         registers_origin=str(res.registers.origin)))
        print("OK " if ok else "BAD", r.kernel.name, "irscope", mine, "runtime", theirs)
    print(f"{len(rows)} kernels scanned from the real cache; {bad} mismatches; problems: "
          f"{[str(p) for k in report.kernels for p in k.problems]}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"gpu": torch.cuda.get_device_name(), "triton": triton.__version__, "rows": rows}, f, indent=1)
    return 1 if bad or len(rows) != 2 else 0


if __name__ == "__main__":
    sys.exit(main())
