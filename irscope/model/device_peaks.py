"""The dense matrix peaks of the GPUs `--profile` knows, each with the vendor's source (docs/profile.md).

A profiled kernel's achieved TFLOP/s is put against the peak of its dots' element type on the device the
profile names (Proton's device facts: architecture and SM/CU count; two parts alike there are told apart
by their DRAM bandwidth, measured from the same facts). The DRAM roof itself is never taken from here: it
is the device's own memory clock times its bus width (parsers/proton.py).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DevicePeaks:
    name: str
    arch: str  # as Proton's device facts write it: "90" (CUDA compute capability), "gfx942"
    units: int  # SMs / CUs
    dram_tb_s: float  # the vendor's figure, to tell apart parts of one arch and unit count
    tflops: tuple[tuple[str, float], ...]  # dense matrix TFLOP/s by operand type: f16, bf16, f8, tf32 / f32
    source: str


NVIDIA_H100 = "https://www.nvidia.com/en-us/data-center/h100/ (the H100 datasheet: sparsity figures, 2x dense)"
NVIDIA_H200 = "https://www.nvidia.com/en-us/data-center/h200/ (sparsity figures, 2x dense)"
AMD_MI300 = "https://rocm.docs.amd.com/en/latest/conceptual/gpu-arch/mi300.html (MI300X: peak rates table)"
AMD_MI350 = "https://rocm.docs.amd.com/en/latest/reference/gpu-arch/mi350.html (MI355X: peak rates table)"

PEAKS = (
    DevicePeaks("NVIDIA H100 SXM", "90", 132, 3.35,
                (("f16", 989.5), ("bf16", 989.5), ("f8", 1979.0), ("tf32", 494.5)), NVIDIA_H100),
    DevicePeaks("NVIDIA H100 PCIe", "90", 114, 2.0,
                (("f16", 756.5), ("bf16", 756.5), ("f8", 1513.0), ("tf32", 378.0)), NVIDIA_H100),
    DevicePeaks("NVIDIA H200 SXM", "90", 132, 4.8,
                (("f16", 989.5), ("bf16", 989.5), ("f8", 1979.0), ("tf32", 494.5)), NVIDIA_H200),
    DevicePeaks("AMD Instinct MI300X", "gfx942", 304, 5.3,
                (("f16", 1307.4), ("bf16", 1307.4), ("f8", 2614.9), ("f32", 163.4)), AMD_MI300),
    DevicePeaks("AMD Instinct MI355X", "gfx950", 256, 8.0,
                (("f16", 2500.0), ("bf16", 2500.0), ("f8", 5000.0), ("f32", 157.3)), AMD_MI350),
)

def device_of(arch: str | None, units: int | None, dram_peak: float | None) -> DevicePeaks | None:
    """The known part with this architecture and SM/CU count (the profile's first device), the nearest DRAM
    bandwidth when several are; None when none matches."""
    candidates = [p for p in PEAKS if p.arch == arch and p.units == units]
    if len(candidates) > 1 and dram_peak:
        candidates.sort(key=lambda p: abs(p.dram_tb_s - dram_peak / 1e12))
    return candidates[0] if candidates else None


def matrix_peak(device: DevicePeaks | None, element: str | None) -> float | None:
    """The dense matrix TFLOP/s for dots of `element` (a TTIR type: f16, bf16, f8E4M3FN, f32); an f32 dot runs
    as TF32 on NVIDIA (Triton's default inputPrecision)."""
    if device is None or not element:
        return None
    kind = "f8" if element.startswith("f8") else element
    if kind == "f32" and device.arch.isdigit():
        kind = "tf32"
    return dict(device.tflops).get(kind)
