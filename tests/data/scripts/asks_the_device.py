"""Asks what libraries ask about the GPU and writes the answers to argv[1] as JSON
(tests/test_stand_in.py). Under `irscope scan --target` the stand-in device answers."""

import json
import os
import sys

import torch
import triton
import triton.language as tl
import triton.testing


@triton.autotune(configs=[triton.Config({"BLOCK": 256}, num_warps=4), triton.Config({"BLOCK": 512}, num_warps=8)],
                 key=["n"], warmup=5, rep=5)  # warmup=/rep=: the autotuner benchmarks with triton.testing.do_bench
@triton.jit
def scale_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2, mask=mask)


class Doubled(torch.autograd.Function):
    """A library's autograd Function whose backward checks its gradient is on the GPU (xformers' indexing ops)."""

    @staticmethod
    def forward(ctx, t):
        return t * 2

    @staticmethod
    def backward(ctx, grad):
        seen.extend([grad.is_cuda, grad[:2].reshape(-1).is_cuda])
        return grad * 2


@torch.library.custom_op("irscope_test::twice", mutates_args=(), device_types="cuda")
def twice(t: torch.Tensor) -> torch.Tensor:  # an op registered for CUDA alone, with its autograd formula
    return t * 2


twice.register_autograd(lambda ctx, grad: grad * 2)
seen = []
driver = triton.runtime.driver.active
props = torch.cuda.get_device_properties(0)
x = torch.randn(4096, device="cuda")
y = torch.empty(16, device=x.device)
# Host buffers pinned for an asynchronous copy to the device (xformers' attention biases)
pinned = torch.tensor([0, 1, 2], dtype=torch.int32, pin_memory=True).to(x.device, non_blocking=True)
staged = torch.zeros(3).pin_memory().to(x.device, non_blocking=True)
scale_kernel[lambda meta: (triton.cdiv(x.numel(), meta["BLOCK"]),)](x, x.numel())
with torch.cuda.device(0):
    torch.cuda.synchronize()
leaf = torch.randn(8, device="cuda", requires_grad=True)
Doubled.apply(leaf).sum().backward()
op_out = twice(leaf)
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
start.record()
end.record()
answers = {
    "is_available": torch.cuda.is_available(), "device_count": torch.cuda.device_count(),
    "current_device": torch.cuda.current_device(), "name": torch.cuda.get_device_name(),
    "capability": list(torch.cuda.get_device_capability()), "multi_processor_count": props.multi_processor_count,
    "gcnArchName": props.gcnArchName, "warp_size": props.warp_size, "total_memory": props.total_memory,
    "version_hip": torch.version.hip, "version_cuda": torch.version.cuda,
    "x_device": str(x.device), "x_is_cuda": x.is_cuda, "y_device": str(y.device),
    "backward_grads_on_device": seen, "cuda_op_has_grad_fn": op_out.requires_grad,
    "pinned_devices": [str(pinned.device), str(staged.device)], "cpu_device": str(x.cpu().device),
    "driver_properties": driver.utils.get_device_properties(driver.get_current_device()),
    "device_interface_is_torch_cuda": driver.get_device_interface() is torch.cuda,
    "active_torch_device": str(driver.get_active_torch_device()),
    "do_bench": triton.testing.do_bench(lambda: None),
    "do_bench_quantiles": triton.testing.do_bench(lambda: None, quantiles=[0.5, 0.2, 0.8]),
    "event_ms": start.elapsed_time(end), "stream": torch.cuda.current_stream().cuda_stream,
    "irscope_target": os.environ.get("IRSCOPE_TARGET"),
}
with open(sys.argv[1], "w") as f:
    json.dump(answers, f)
print("the script's own output")
