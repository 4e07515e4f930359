"""The device each `--target` stands for: what its driver and `torch.cuda` would report.

`irscope scan script.py --target ARCH` compiles for ARCH on any machine; the script and the
libraries it calls still ask about "the GPU" (CU counts to size persistent grids, capability
to pick a code path, shared memory to prune autotune configs). They get the answers the usual
device of that arch gives, so the launches and the compiled configs are the target's. The
numbers are those that `torch.cuda.get_device_properties` and Triton's drivers report on
that device (ROCm reports the capability as gfx9.4.2 -> (9, 4); CUDA's totals are after the
driver's own reserve). sm_90's were read on an H100 SXM by tools/device_properties.py
(tests/data/device_properties_h100.json, which a test compares with them). No torch or
triton is imported here: the command line lists the keys.
"""

from __future__ import annotations

from dataclasses import dataclass

GiB = 1 << 30


@dataclass(frozen=True)
class StandInDevice:
    arch: str  # the --target name
    backend: str  # Triton's: "hip" or "cuda"
    name: str  # torch.cuda.get_device_name()
    warp_size: int
    compute_units: int  # multi_processor_count: CUs (AMD; WGPs on RDNA) or SMs (NVIDIA)
    max_shared: int  # bytes per block the compiler may use (Triton's max_shared_mem)
    total_memory: int
    capability: tuple[int, int]
    sm_clock_khz: int
    mem_clock_khz: int
    mem_bus_width: int
    l2_bytes: int
    shared_per_unit: int  # LDS / shared memory of one CU or SM
    max_threads_per_unit: int
    regs_per_unit: int = 65536
    max_regs_per_block: int = 65536

    @property
    def gcn_arch_name(self) -> str:
        """ROCm's `gcnArchName`: the arch with its target features; CUDA builds of torch give the name."""
        if self.backend == "cuda":
            return self.name
        return f"{self.arch}:sramecc+:xnack-" if self.arch in ("gfx942", "gfx950", "gfx90a") else self.arch

    def driver_properties(self) -> dict:
        """What Triton's `driver.active.utils.get_device_properties(i)` returns on this device."""
        props = {"max_shared_mem": self.max_shared, "max_num_regs": self.max_regs_per_block,
                 "multiprocessor_count": self.compute_units, "warpSize": self.warp_size,
                 "sm_clock_rate": self.sm_clock_khz, "mem_clock_rate": self.mem_clock_khz,
                 "mem_bus_width": self.mem_bus_width}
        if self.backend == "hip":
            props.update(arch=self.gcn_arch_name, max_threads_per_sm=self.max_threads_per_unit, cooperativeLaunch=1)
        return props


def _amd(arch, name, units, max_shared, memory, capability, sm_clock, mem_clock, bus, l2, warp=64, lds=None):
    return StandInDevice(arch, "hip", name, warp, units, max_shared, memory, capability, sm_clock, mem_clock, bus,
                         l2, lds or max_shared, 2048)


def _nvidia(arch, name, sms, optin, memory, sm_clock, mem_clock, bus, l2, per_sm, threads=2048):
    return StandInDevice(arch, "cuda", name, 32, sms, optin, memory, (int(arch[3:-1]), int(arch[-1])), sm_clock,
                         mem_clock, bus, l2, per_sm, threads)


DEVICES: dict[str, StandInDevice] = {d.arch: d for d in (
    # CDNA: 64-lane waves, 64 KiB LDS per CU (160 KiB on CDNA4).
    _amd("gfx942", "AMD Instinct MI300X", 304, 65536, 192 * GiB, (9, 4), 2100000, 1300000, 8192, 4 << 20),
    _amd("gfx950", "AMD Instinct MI355X", 256, 163840, 288 * GiB, (9, 5), 2400000, 2000000, 8192, 4 << 20),
    _amd("gfx90a", "AMD Instinct MI250X", 110, 65536, 64 * GiB, (9, 0), 1700000, 1600000, 4096, 8 << 20),
    # RDNA: Triton uses 32-lane waves; ROCm counts WGPs (two CUs) as multiprocessors.
    _amd("gfx1100", "AMD Radeon RX 7900 XTX", 48, 65536, 24 * GiB, (11, 0), 2500000, 1250000, 384, 6 << 20, 32),
    _amd("gfx1200", "AMD Radeon RX 9060 XT", 32, 65536, 16 * GiB, (12, 0), 3130000, 1250000, 128, 4 << 20, 32),
    _amd("gfx1201", "AMD Radeon RX 9070 XT", 32, 65536, 16 * GiB, (12, 0), 2970000, 1250000, 256, 8 << 20, 32),
    # NVIDIA: max_shared is the opt-in maximum per block (what Triton's driver reports).
    _nvidia("sm_90", "NVIDIA H100 80GB HBM3", 132, 232448, 85_017_493_504, 1980000, 2619000, 5120, 50 << 20, 233472),
    _nvidia("sm_80", "NVIDIA A100-SXM4-80GB", 108, 166912, 85_031_714_816, 1410000, 1593000, 5120, 40 << 20, 167936),
    _nvidia("sm_89", "NVIDIA GeForce RTX 4090", 128, 101376, 25_386_352_640, 2520000, 10501000, 384, 72 << 20,
            102400, 1536),
    _nvidia("sm_100", "NVIDIA B200", 148, 232448, 191_514_935_296, 1965000, 3996000, 7680, 126 << 20, 233472),
    _nvidia("sm_120", "NVIDIA GeForce RTX 5090", 170, 101376, 33_669_447_680, 2407000, 14001000, 512, 96 << 20,
            102400, 1536),
)}
