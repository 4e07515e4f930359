"""Measure what the CUDA occupancy API answers, on a GPU, for irscope's NVIDIA calculator.

Run on a machine with an NVIDIA GPU, PyTorch and Triton (the `device` tool's H100):

    python3 tools/measure_nvidia_occupancy.py OUT_DIR

It writes OUT_DIR/nvidia_occupancy_<gpu>.csv with one row per (kernel, block size, dynamic
shared) configuration, answered by both the runtime API
(cudaOccupancyMaxActiveBlocksPerMultiprocessor on a cudaKernel_t) and the driver API
(cuOccupancyMaxActiveBlocksPerMultiprocessor), and OUT_DIR/device.json with the device's
limits. Two kinds of kernel:

- sweep: PTX written here with a register-hungry body (300 live floats) compiled by the
  driver's JIT under a register cap (`.maxnreg`), with 0 or 4 KiB of static shared memory
  and 1, 4 or 16 named barriers, then queried at every block size from 32 to 1024 and nine
  dynamic shared sizes. The registers and static shared the driver reports are recorded.
  These are measurement probes, not fixtures: nothing here feeds a rule.
- fixture: every sm_90 cubin in fixtures/manifest.json, loaded the way Triton's launcher
  loads it (triton.runtime.driver.active.utils.load_binary, which opts in above 48 KiB),
  at its own num_warps*32 threads and metadata `shared`.

Nothing is launched. tests/test_occupancy_nvidia.py checks irscope against the CSV.
"""

from __future__ import annotations

import csv
import ctypes
import glob
import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BLOCK_SIZES = range(32, 1025, 32)
DYNAMIC_SHARED = (0, 1024, 8192, 20000, 47 * 1024, 64 * 1024, 100 * 1024, 150 * 1024, 200 * 1024)
REGISTER_CAPS = (24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 112, 128, 144, 168, 192, 216, 232, 255)
STATIC_SHARED = (0, 4096)
BARRIERS = (1, 4, 16)

CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1
CU_FUNC_ATTRIBUTE_NUM_REGS = 4
CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
CUDA_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_MEMORY_SIZE = 8  # cudaFuncAttributeMaxDynamicSharedMemorySize
DEVICE_ATTRIBUTES = {  # CUdevice_attribute values (cuda.h)
    "max_threads_per_sm": 39, "shared_per_sm": 81, "registers_per_sm": 82,
    "shared_optin_per_block": 97, "max_blocks_per_sm": 106, "reserved_shared_per_block": 111,
    "cc_major": 75, "cc_minor": 76, "sm_count": 16,
}


def load_library(names: list[str]) -> ctypes.CDLL:
    for name in names:
        for path in [name, *glob.glob(name)]:
            try:
                return ctypes.CDLL(path)
            except OSError:
                continue
    raise OSError(f"none of {names} could be loaded")


def cudart() -> ctypes.CDLL:
    import site
    roots = site.getsitepackages() + [os.path.dirname(os.__file__)]
    patterns = [f"{r}/nvidia/cuda_runtime/lib/libcudart.so*" for r in roots]
    patterns += [f"{r}/nvidia/cu13/lib/libcudart.so*" for r in roots]
    patterns += [f"{r}/torch/lib/libcudart*.so*" for r in roots]
    patterns += ["/usr/local/cuda/lib64/libcudart.so*", "libcudart.so"]
    found = [p for pat in patterns for p in sorted(glob.glob(pat))] or ["libcudart.so"]
    return load_library(found)


class Cuda:
    def __init__(self) -> None:
        self.rt = cudart()
        self.drv = load_library(["libcuda.so.1", "libcuda.so"])
        self.check_rt(self.rt.cudaFree(ctypes.c_void_p(0)), "cudaFree(0)")  # creates the primary context
        dev = ctypes.c_int()
        self.check_drv(self.drv.cuCtxGetDevice(ctypes.byref(dev)), "cuCtxGetDevice")
        self.device = dev.value

    def check_rt(self, code: int, what: str) -> None:
        if code != 0:
            self.rt.cudaGetErrorString.restype = ctypes.c_char_p
            raise RuntimeError(f"{what}: cuda error {code} {self.rt.cudaGetErrorString(code).decode()}")

    def check_drv(self, code: int, what: str) -> None:
        if code != 0:
            raise RuntimeError(f"{what}: CUresult {code}")

    def device_attributes(self) -> dict[str, int]:
        out = {}
        for name, attr in DEVICE_ATTRIBUTES.items():
            v = ctypes.c_int()
            self.check_drv(self.drv.cuDeviceGetAttribute(ctypes.byref(v), attr, self.device), name)
            out[name] = v.value
        name = ctypes.create_string_buffer(256)
        self.drv.cuDeviceGetName(name, 256, self.device)
        out["name"] = name.value.decode()
        return out

    def load_kernel(self, image: bytes, name: str) -> ctypes.c_void_p:
        """cudaLibraryLoadData + cudaLibraryGetKernel: a runtime kernel handle (cubin or PTX)."""
        lib, kernel = ctypes.c_void_p(), ctypes.c_void_p()
        buf = ctypes.create_string_buffer(image, len(image) + 1)
        self.check_rt(self.rt.cudaLibraryLoadData(ctypes.byref(lib), buf, None, None, 0, None, None, 0),
                      f"cudaLibraryLoadData({name})")
        self.check_rt(self.rt.cudaLibraryGetKernel(ctypes.byref(kernel), lib, name.encode()),
                      f"cudaLibraryGetKernel({name})")
        return kernel

    def function_of(self, kernel: ctypes.c_void_p) -> ctypes.c_void_p:
        func = ctypes.c_void_p()
        self.check_drv(self.drv.cuKernelGetFunction(ctypes.byref(func), kernel), "cuKernelGetFunction")
        return func

    def attribute(self, func: ctypes.c_void_p, attr: int) -> int:
        v = ctypes.c_int()
        self.check_drv(self.drv.cuFuncGetAttribute(ctypes.byref(v), attr, func), f"cuFuncGetAttribute({attr})")
        return v.value

    def set_max_dynamic(self, kernel: ctypes.c_void_p, func: ctypes.c_void_p, value: int) -> None:
        self.check_rt(self.rt.cudaFuncSetAttribute(kernel, CUDA_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_MEMORY_SIZE,
                                                   ctypes.c_int(value)), "cudaFuncSetAttribute")
        self.check_drv(self.drv.cuFuncSetAttribute(func, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                   ctypes.c_int(value)), "cuFuncSetAttribute")

    def runtime_blocks(self, kernel: ctypes.c_void_p, threads: int, dynamic: int) -> int:
        n = ctypes.c_int()
        code = self.rt.cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            ctypes.byref(n), kernel, ctypes.c_int(threads), ctypes.c_size_t(dynamic))
        return n.value if code == 0 else -code

    def driver_blocks(self, func: ctypes.c_void_p, threads: int, dynamic: int) -> int:
        n = ctypes.c_int()
        code = self.drv.cuOccupancyMaxActiveBlocksPerMultiprocessor(
            ctypes.byref(n), func, ctypes.c_int(threads), ctypes.c_size_t(dynamic))
        return n.value if code == 0 else -code


def probe_ptx(cap: int, static: int, barriers: int, name: str) -> str:
    live = 300
    lines = [".version 8.0", ".target sm_90", ".address_size 64", "",
             f".visible .entry {name}(.param .u64 p) .maxnreg {cap}", "{",
             f"  .reg .f32 %f<{live + 2}>;", "  .reg .u64 %rd<3>;"]
    if static:
        lines.append(f"  .shared .align 16 .b8 smem[{static}];")
    lines.append("  ld.param.u64 %rd1, [p];")
    lines += [f"  ld.volatile.global.f32 %f{i}, [%rd1+{4 * i}];" for i in range(live)]
    for b in range(barriers):
        lines.append(f"  bar.sync {b};")
    lines.append(f"  mov.f32 %f{live}, 0f00000000;")
    lines += [f"  add.f32 %f{live}, %f{live}, %f{i};" for i in range(live)]
    lines += [f"  mul.f32 %f{live + 1}, %f{i}, %f{live};\n  st.global.f32 [%rd1+{4 * i}], %f{live + 1};"
              for i in range(live)]
    if static:
        lines.append(f"  st.shared.f32 [smem+{static - 4}], %f{live};")
    lines += ["  ret;", "}", ""]
    return "\n".join(lines)


def row(cuda: Cuda, writer: csv.DictWriter, kind: str, kernel_id: str, kernel, func, barriers,
        threads: int, dynamic: int, max_dynamic) -> None:
    writer.writerow({
        "source": kind, "kernel": kernel_id,
        "registers": cuda.attribute(func, CU_FUNC_ATTRIBUTE_NUM_REGS),
        "static_shared": cuda.attribute(func, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES),
        "barriers": barriers, "threads": threads, "dynamic_shared": dynamic,
        "max_dynamic_shared": cuda.attribute(func, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES),
        "max_dynamic_set": "" if max_dynamic is None else max_dynamic,
        "runtime_blocks": cuda.runtime_blocks(kernel, threads, dynamic),
        "driver_blocks": cuda.driver_blocks(func, threads, dynamic),
    })


def sweep(cuda: Cuda, writer: csv.DictWriter, limits: dict) -> int:
    count = 0
    for cap in REGISTER_CAPS:
        for static in STATIC_SHARED:
            for barriers in BARRIERS:
                name = f"probe_r{cap}_s{static}_b{barriers}"
                kernel = cuda.load_kernel(probe_ptx(cap, static, barriers, name).encode(), name)
                func = cuda.function_of(kernel)
                default = cuda.attribute(func, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
                for opt_in in (False, True):  # Triton's launcher opts in above 48 KiB
                    value = limits["shared_optin_per_block"] - static if opt_in else default
                    cuda.set_max_dynamic(kernel, func, value)
                    for dynamic in DYNAMIC_SHARED:
                        if (dynamic > 48 * 1024) != opt_in:
                            continue
                        for threads in BLOCK_SIZES:
                            row(cuda, writer, "sweep", name, kernel, func, barriers, threads, dynamic,
                                value if opt_in else None)
                            count += 1
    return count


def fixtures(cuda: Cuda, writer: csv.DictWriter) -> int:
    from triton.runtime.driver import driver  # the launcher's own loader: its opt-in rule
    utils = driver.active.utils
    manifest = json.loads((REPO / "fixtures" / "manifest.json").read_text())
    count = 0
    for entry in manifest["kernels"]:
        if entry["target"]["backend"] != "cuda" or entry["target"]["arch"] != 90:
            continue
        directory = REPO / "fixtures" / entry["cache"] / entry["dir"]
        image = (directory / f"{entry['name']}.cubin").read_bytes()
        shared = entry["metadata"]["shared"]
        threads = entry["metadata"]["num_warps"] * 32
        kernel_id = f"{entry['cache']}/{entry['dir']}/{entry['name']}"
        try:
            loaded = utils.load_binary(entry["name"], image, shared, cuda.device)
            func = ctypes.c_void_p(loaded[1])
            kernel = cuda.load_kernel(image, entry["name"])
            rt_func = cuda.function_of(kernel)
            max_dynamic = cuda.attribute(func, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
            cuda.set_max_dynamic(kernel, rt_func, max_dynamic)  # the runtime handle, set as Triton set its own
        except Exception as exc:  # noqa: BLE001 - recorded, the other kernels go on
            print(f"fixture {kernel_id}: {exc}", file=sys.stderr)
            continue
        n = ctypes.c_int()
        writer.writerow({
            "source": "fixture", "kernel": kernel_id,
            "registers": cuda.attribute(func, CU_FUNC_ATTRIBUTE_NUM_REGS),
            "static_shared": cuda.attribute(func, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES),
            "barriers": "", "threads": threads, "dynamic_shared": shared,
            "max_dynamic_shared": max_dynamic, "max_dynamic_set": max_dynamic if shared > 48 * 1024 else "",
            "runtime_blocks": cuda.runtime_blocks(kernel, threads, shared),
            "driver_blocks": (n.value if cuda.drv.cuOccupancyMaxActiveBlocksPerMultiprocessor(
                ctypes.byref(n), func, ctypes.c_int(threads), ctypes.c_size_t(shared)) == 0 else -1),
        })
        count += 1
    return count


def main(out: str) -> None:
    Path(out).mkdir(parents=True, exist_ok=True)
    import torch  # initialises the runtime the same way Triton's users do
    torch.cuda.init()
    cuda = Cuda()
    limits = cuda.device_attributes()
    limits["driver_version"] = _driver_version(cuda)
    limits["triton"] = __import__("triton").__version__
    Path(out, "device.json").write_text(json.dumps(limits, indent=1) + "\n")
    gpu = "h100" if "H100" in limits["name"] else limits["name"].split()[-1].lower()
    fields = ["source", "kernel", "registers", "static_shared", "barriers", "threads", "dynamic_shared",
              "max_dynamic_shared", "max_dynamic_set", "runtime_blocks", "driver_blocks"]
    with open(Path(out, f"nvidia_occupancy_{gpu}.csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        n_fix = fixtures(cuda, writer)
        n_sweep = sweep(cuda, writer, limits)
    print(json.dumps(limits), f"fixture rows {n_fix}, sweep rows {n_sweep}")


def _driver_version(cuda: Cuda) -> int:
    v = ctypes.c_int()
    cuda.drv.cuDriverGetVersion(ctypes.byref(v))
    return v.value


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "occupancy_out")
