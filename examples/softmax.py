"""Fused row softmax, written like Triton's softmax tutorial (one program per row).

    irscope scan examples/softmax.py --target sm_90
"""

import os

import torch
import triton
import triton.language as tl

DEVICE = triton.runtime.driver.active.get_active_torch_device()


@triton.jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols,
                   BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    row_start_ptr = input_ptr + row * input_row_stride
    col_offsets = tl.arange(0, BLOCK_SIZE)
    mask = col_offsets < n_cols
    row_values = tl.load(row_start_ptr + col_offsets, mask=mask, other=-float("inf"))
    row_minus_max = row_values - tl.max(row_values, axis=0)
    numerator = tl.exp(row_minus_max)
    denominator = tl.sum(numerator, axis=0)
    out_row_ptr = output_ptr + row * output_row_stride
    tl.store(out_row_ptr + col_offsets, numerator / denominator, mask=mask)


def softmax(x: torch.Tensor) -> torch.Tensor:
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    block = triton.next_power_of_2(n_cols)
    softmax_kernel[(n_rows,)](y, x, x.stride(0), y.stride(0), n_rows, n_cols, BLOCK_SIZE=block,
                              num_warps=8 if block >= 2048 else 4)
    return y


if __name__ == "__main__":
    torch.manual_seed(0)
    x = torch.randn(1823, 781, device=DEVICE)
    y = softmax(x)
    if os.environ.get("IRSCOPE_TARGET"):  # irscope scan --target: kernels compile, nothing runs
        print("no GPU: outputs not computed, check skipped")
    else:
        assert torch.allclose(y, torch.softmax(x, axis=1), atol=1e-6), "softmax differs from torch"
        print("softmax matches torch")
