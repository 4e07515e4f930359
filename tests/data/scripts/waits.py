"""Launches a kernel, writes argv[1], then waits: tests/test_stand_in.py presses Ctrl-C."""

import sys
import time

import torch
import triton
import triton.language as tl


@triton.jit
def fill(x_ptr, BLOCK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, BLOCK), tl.zeros((BLOCK,), dtype=tl.float32))


x = torch.empty(128, device="cuda")
fill[(1,)](x, BLOCK=128)
open(sys.argv[1], "w").close()
time.sleep(120)
