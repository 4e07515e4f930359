"""A Triton driver that compiles every launch for a chosen target and runs nothing.

Installed only inside the child process of `irscope scan script.py --target ARCH`
(irscope/pipeline/runner_child.py): it imports triton and torch, which irscope itself never does.
It answers the whole driver surface Triton 3.4-3.9 calls (../shared/reference/
triton_artifacts.md §5): the current target, device and stream, a launcher, `load_binary`,
device properties, the benchmarker, the device interface, the L2-flush buffer that
`triton.testing.do_bench` clears, and the tutorial idiom `get_active_torch_device()`.
`torch.cuda`'s device queries are answered too, and tensors put on "cuda" are made on the
CPU (irscope/pipeline/stand_in/torch.py), so a script written for the GPU runs unchanged. Kernels
compile exactly as for the real device; nothing executes, so outputs are not computed and
timings are a constant.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from irscope.pipeline.stand_in.binary import kernel_limits
from irscope.pipeline.stand_in.devices import DEVICES
from irscope.pipeline.stand_in.torch import STAND_IN_MS, Questions, benchmarking, install_torch


def constant_timing(call: int) -> float:
    """The stand-in's timing of every benchmark: STAND_IN_MS, so the first config an autotuner tries wins."""
    return STAND_IN_MS


def stand_in_bench(questions: Questions, name: str, timing: Callable[[], float]):
    """`triton.testing.do_bench` and its kin without a GPU: each call launches (so compiles) the
    kernel once and says `timing()` ms. Every autotune config compiles; with the constant timing the
    first one "wins". Its matmuls on the stand-in's tensors are not computed (stand_in_torch.BENCHED_MATH)."""

    def bench(fn, *args, quantiles=None, grad_to_none=None, return_mode="mean", **kwargs):
        questions[name] += 1
        with benchmarking():
            fn()
        ms = timing()
        if quantiles:
            return [ms] * len(quantiles) if len(quantiles) > 1 else ms
        return [ms] * 5 if return_mode == "all" else ms

    return bench


def install(arch: str, on_launcher, questions: Questions | None = None,
            timing: Callable[[int], float] = constant_timing) -> Questions:
    """Make `arch` the active Triton target; `on_launcher(src, metadata, launch)` wraps each launcher;
    `timing(n)` is what the n-th benchmark (from 1, over every benchmarker) says, in ms.
    Returns the questions the stand-in answers, counted as the script asks them."""
    import triton
    import triton.testing
    from triton.backends.compiler import GPUTarget

    if not hasattr(triton.runtime.driver, "set_active"):
        raise RuntimeError(f"--target needs Triton 3.4 or newer to install a stand-in driver (this is "
                           f"{triton.__version__}); on a GPU, run without --target")
    device = DEVICES[arch]
    questions = Questions() if questions is None else questions
    ask = questions.answer
    target = GPUTarget(device.backend, int(arch[3:]) if device.backend == "cuda" else arch, device.warp_size)
    install_torch(device, questions)
    calls = itertools.count(1)
    bench = stand_in_bench(questions, "triton.testing.do_bench", lambda: timing(next(calls)))
    # Autotuners built with warmup=/rep= call triton.testing.do_bench; scripts benchmark with it.
    triton.testing.do_bench = bench
    triton.testing.do_bench_cudagraph = stand_in_bench(questions, "triton.testing.do_bench_cudagraph",
                                                       lambda: timing(next(calls)))

    triton.runtime.driver.set_active(_stand_in_driver(device, target, ask, bench, on_launcher))
    return questions


def _stand_in_driver(device, target, ask, bench, on_launcher):
    """The object Triton's `driver.active` becomes: the real drivers' methods, answered for `device`."""
    import torch

    class Utils:
        def load_binary(self, name, kernel, shared, device_index):
            # module, function, then n_regs, n_spills, n_max_threads as the real driver reads them
            return (None, object(), *kernel_limits(kernel, name, device.backend))

        def unload_module(self, module):
            pass

        def get_device_properties(self, device_index):
            return ask("driver.utils.get_device_properties", device.driver_properties())

    class StandInDriver:
        utils = Utils()
        compute_units = device.compute_units

        def is_active(self):
            return True

        def get_current_target(self):
            return target

        def get_current_device(self):
            return 0

        def set_current_device(self, device_index):
            pass

        def get_current_stream(self, device_index=None):
            return 0

        def get_device_capability(self, device_index=None):
            return ask("driver.get_device_capability", device.capability)

        def get_active_torch_device(self):
            return torch.device("cuda", 0)  # as the real drivers say; tensors made there stay on the CPU

        def get_device_interface(self):
            return torch.cuda  # answered by install_torch, as the real drivers return torch.cuda

        def get_benchmarker(self):
            return bench

        def get_empty_cache_for_benchmark(self):
            return torch.empty(1, dtype=torch.int)  # the L2 flush buffer; the real one is 256 MB on the GPU

        def clear_cache(self, cache):
            cache.zero_()

        def launcher_cls(self, src, metadata):
            return on_launcher(src, metadata, lambda *args, **kwargs: None)

        def map_python_to_cpp_type(self, ty):
            return ty

    return StandInDriver()
