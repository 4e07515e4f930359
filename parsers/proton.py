"""A reader for the profile Proton (`triton.profiler`) writes: `<name>.hatchet`, Triton 3.0-3.9.

The file is JSON: a list whose first item is the call tree and whose second, when present, describes the
devices. Each node is `{"frame": {"name": ..., "type": ...}, "metrics": {...}, "children": [...]}`. A GPU
kernel is a node with metrics `"count"` (launches) and `"time (ns)"` (their summed GPU time), filed under
the scopes that were open on the CPU when it was launched; irscope's own scopes
(irscope/pipeline/profile_session.py) say which launch or which kernel it was. The file comes from the
script's own process: every value is checked, the tree is walked without recursion, and a file that is not
such a tree raises ArtifactError with its path and, for bad JSON, its line.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from irscope.model.artifact_reader import read_measurement
from irscope.model.errors import ArtifactError
from irscope.model.serde import loads_bounded

LAUNCH_SCOPE = "irscope:launch:"  # the names profile_session.py gives its scopes (kept equal by a test)
KERNEL_SCOPE = "irscope:kernel:"
TIME = "time (ns)"
MAX_NODES = 5_000_000  # a profile bigger than this is not Proton's of one script
MAX_BYTES = 512 * 1024 * 1024


@dataclass(frozen=True)
class TimedKernel:
    """One kernel node: `count` launches of `name` taking `ns` in all, under irscope's scope `launch` (its
    number in the launches file) or `kernel` (its hash), or under neither (a kernel irscope did not
    launch: cuBLAS, torch's own)."""

    name: str
    count: int
    ns: int
    launch: int | None = None
    kernel: str | None = None


@dataclass(frozen=True)
class ProtonProfile:
    path: str
    kernels: tuple[TimedKernel, ...]
    devices: tuple[str, ...]  # "CUDA 0: arch 90, 132 SMs"
    # The first device's DRAM bandwidth from its facts: 2 (double data rate) x memory_clock_rate (kHz) x 1,000
    # x bus_width / 8, bytes per second; CUDA's cudaDeviceProp gives the same two numbers. None when absent.
    dram_peak: float | None = None
    arch: str | None = None  # the first device's, as its facts write it: "90", "gfx942"
    units: int | None = None  # its SMs / CUs


def read_hatchet(path: str) -> ProtonProfile:
    raw = read_measurement(path, MAX_BYTES, "the profile")
    try:
        data = loads_bounded(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ArtifactError(path, f"not a Proton profile: not UTF-8 text (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise ArtifactError(path, f"not a Proton profile: {exc.msg}", exc.lineno) from None
    except (ValueError, RecursionError) as exc:
        raise ArtifactError(path, f"not a Proton profile: {exc}") from None
    if not isinstance(data, list) or not data or not isinstance(data[0], dict) or "children" not in data[0]:
        raise ArtifactError(path, "not a Proton profile: no call tree (a JSON list whose first item has "
                                  "\"children\")")
    devices, arch, units, dram_peak = _read_devices(data[1] if len(data) > 1 else None)
    return ProtonProfile(path, tuple(_kernels(data[0], path)), devices, dram_peak, arch, units)


def _kernels(root: dict, path: str):
    # (node, launch number, kernel hash), depth first, in the file's order
    stack = [(root, None, None)]
    seen = 0
    while stack:
        node, launch, kernel = stack.pop()
        seen += 1
        if seen > MAX_NODES:
            raise ArtifactError(path, f"the profile has more than {MAX_NODES:,} nodes")
        if not isinstance(node, dict):
            continue
        frame = node.get("frame")
        name = frame.get("name") if isinstance(frame, dict) else None
        if isinstance(name, str) and node is not root:
            if name.startswith(LAUNCH_SCOPE):
                number = name[len(LAUNCH_SCOPE):]
                launch = int(number) if number.isdigit() and len(number) < 12 else launch
            elif name.startswith(KERNEL_SCOPE):
                kernel = name[len(KERNEL_SCOPE):][:64] or kernel
            else:
                timed = _timed(name, node.get("metrics"), launch, kernel)
                if timed is not None:
                    yield timed
        children = node.get("children")
        if isinstance(children, list):
            stack.extend((child, launch, kernel) for child in reversed(children))


def _timed(name: str, metrics: object, launch, kernel) -> TimedKernel | None:
    if not isinstance(metrics, dict):
        return None
    count, ns = metrics.get("count"), metrics.get(TIME)
    if not (_natural(count) and _natural(ns)) or count == 0:
        return None  # a scope of the script's own, or a node without time
    return TimedKernel(name[:500], count, ns, launch, kernel)


def _natural(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << 63


def _read_devices(info: object) -> tuple[tuple[str, ...], str | None, int | None, float | None]:
    """The device facts, `{"CUDA": {"0": {"arch": "90", "num_sms": 132, "memory_clock_rate": ..., "bus_width":
    ...}}}`: (one line a device, "CUDA 0: arch 90, 132 SMs"; the first device's arch and SM/CU count; the DRAM
    bandwidth of the first that names its memory clock and bus width)."""
    lines, arch, units, dram_peak = [], None, None, None
    for kind, devices in list(info.items())[:8] if isinstance(info, dict) else ():
        for index, facts in list(devices.items())[:64] if isinstance(devices, dict) else ():
            if not isinstance(facts, dict):
                continue
            this_arch, sms = facts.get("arch"), facts.get("num_sms")
            this_arch = str(this_arch)[:32] if isinstance(this_arch, (str, int)) else None
            sms = sms if _natural(sms) else None
            parts = [f"arch {this_arch}" if this_arch else None, f"{sms} SMs" if sms is not None else None]
            lines.append(f"{str(kind)[:16]} {str(index)[:8]}: " + ", ".join(p for p in parts if p))
            if len(lines) == 1:
                arch, units = this_arch, sms
            clock, width = facts.get("memory_clock_rate"), facts.get("bus_width")
            if dram_peak is None and _natural(clock) and _natural(width) and clock and width:
                dram_peak = 2 * clock * 1e3 * width / 8
    return tuple(lines), arch, units, dram_peak
    for devices in info.values():
        for facts in devices.values() if isinstance(devices, dict) else ():
            if isinstance(facts, dict) and _natural(clock := facts.get("memory_clock_rate")) and \
                    _natural(width := facts.get("bus_width")) and clock and width:
                return 2 * clock * 1e3 * width / 8
    return None
