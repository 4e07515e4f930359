"""A Triton driver that compiles every launch for a chosen target and runs nothing.

Installed only inside the child process of `irscope scan script.py --target ARCH`
(irscope/runner_child.py): it imports triton and torch, which irscope itself never does.
What Triton's runtime asks of a driver (Triton 3.4-3.9) is in
../shared/reference/triton_artifacts.md §5: the current target and device, a launcher,
`load_binary`, device properties, a benchmarker for the autotuner, and the tutorial idiom
`get_active_torch_device()`, which answers the CPU so a tutorial-style script runs unchanged
on CPU tensors. Kernels compile exactly as for the real device; nothing executes, so the
script's outputs are not computed and its own checks may fail (irscope says so).
"""

from __future__ import annotations

# (backend, warp size, max shared bytes per block the compiler may use, CUs/SMs of the
# device this target is usually found in: what the grid rule compares a launch with).
TARGETS = {
    "gfx942": ("hip", 64, 65536, 304),     # MI300X
    "gfx950": ("hip", 64, 163840, 256),    # MI355X
    "gfx90a": ("hip", 64, 65536, 110),     # MI250X, one GCD
    "gfx1100": ("hip", 32, 65536, 48),     # RX 7900 XTX: 48 WGPs
    "gfx1200": ("hip", 32, 65536, 32),     # RX 9070: 32 WGPs
    "gfx1201": ("hip", 32, 65536, 32),
    "sm_90": ("cuda", 32, 232448, 132),    # H100 SXM
    "sm_80": ("cuda", 32, 166912, 108),    # A100
    "sm_89": ("cuda", 32, 101376, 128),    # L40S
    "sm_100": ("cuda", 32, 232448, 148),   # B200
    "sm_120": ("cuda", 32, 101376, 170),   # RTX 5090
}


def install(arch: str, on_launcher) -> None:
    """Make `arch` the active Triton target; `on_launcher(metadata)` wraps each launcher."""
    import torch
    import triton
    from triton.backends.compiler import GPUTarget

    if not hasattr(triton.runtime.driver, "set_active"):
        raise RuntimeError(f"--target needs Triton 3.4 or newer to install a stand-in driver (this is "
                           f"{triton.__version__}); on a GPU, run without --target")
    backend, warp, max_shared, units = TARGETS[arch]
    target = GPUTarget(backend, int(arch[3:]) if backend == "cuda" else arch, warp)
    calls = {"n": 0}

    class Utils:
        def load_binary(self, name, kernel, shared, device):
            return (None, object(), 0, 0, 1024)  # module, function, n_regs, n_spills, n_max_threads

        def unload_module(self, module):
            pass

        def get_device_properties(self, device):
            return {"max_shared_mem": max_shared, "multiprocessor_count": units, "warpSize": warp,
                    "sm_clock_rate": 0, "mem_clock_rate": 0, "mem_bus_width": 0}

    def bench(kernel_call, quantiles=None, **kwargs):
        # No GPU, no timing: each autotune config is launched (so compiled) once, and the
        # first config "wins". These are not measurements.
        kernel_call()
        calls["n"] += 1
        t = float(calls["n"])
        return [t] * len(quantiles) if quantiles else t

    class StandInDriver:
        utils = Utils()
        compute_units = units

        def is_active(self):
            return True

        def get_current_target(self):
            return target

        def get_current_device(self):
            return 0

        def set_current_device(self, device):
            pass

        def get_current_stream(self, device=None):
            return 0

        def get_active_torch_device(self):
            return torch.device("cpu")

        def get_benchmarker(self):
            return bench

        def launcher_cls(self, src, metadata):
            return on_launcher(metadata, lambda *args, **kwargs: None)

        def map_python_to_cpp_type(self, ty):
            return ty

    triton.runtime.driver.set_active(StandInDriver())
