"""Print what torch and Triton's driver report about this machine's GPU, as JSON.

Run on a real GPU to check the stand-in device of `irscope scan --target` against it:

    python tools/device_properties.py > h100.json
    python tools/device_properties.py --compare sm_90 h100.json   # any machine: lists the differences

irscope/pipeline/stand_in/devices.py holds the stand-in's numbers; tests/data/device_properties_h100.json
is this tool's output on an H100 SXM (NVIDIA H100 80GB HBM3), which tests compare with sm_90.
"""

from __future__ import annotations

import argparse
import json
import sys

FIELDS = ("name", "major", "minor", "total_memory", "multi_processor_count", "warp_size",
          "max_threads_per_multi_processor", "regs_per_multiprocessor", "shared_memory_per_block",
          "shared_memory_per_block_optin", "shared_memory_per_multiprocessor", "L2_cache_size", "gcnArchName",
          "clock_rate", "memory_clock_rate", "memory_bus_width")


def read_device() -> dict:
    import torch
    import triton

    props = torch.cuda.get_device_properties(0)
    driver = triton.runtime.driver.active
    return {"torch": {f: getattr(props, f) for f in FIELDS if hasattr(props, f)},
            "capability": list(torch.cuda.get_device_capability(0)),
            "driver": driver.utils.get_device_properties(driver.get_current_device()),
            "version_hip": torch.version.hip, "version_cuda": torch.version.cuda,
            "torch_version": torch.__version__, "triton_version": triton.__version__}


def differences(arch: str, measured: dict) -> list[str]:
    """Where the stand-in for `arch` answers otherwise than the device `measured` on."""
    sys.path.insert(0, __file__.rsplit("/tools/", 1)[0])
    from irscope.pipeline.stand_in.devices import DEVICES
    from irscope.pipeline.stand_in.torch import DeviceProperties

    device = DEVICES[arch]
    ours = DeviceProperties(device)
    out = [f"torch.{f}: stand-in {getattr(ours, f)!r}, device {v!r}" for f, v in measured["torch"].items()
           if hasattr(ours, f) and getattr(ours, f) != v]
    out += [f"driver.{k}: stand-in {device.driver_properties().get(k)!r}, device {v!r}"
            for k, v in measured["driver"].items() if device.driver_properties().get(k) != v]
    if list(device.capability) != measured["capability"]:
        out.append(f"capability: stand-in {device.capability}, device {measured['capability']}")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compare", nargs=2, metavar=("ARCH", "JSON"))
    args = parser.parse_args()
    if args.compare:
        with open(args.compare[1]) as f:
            found = differences(args.compare[0], json.load(f))
        print("\n".join(found) or "no differences")
        return 1 if found else 0
    json.dump(read_device(), sys.stdout, indent=1, default=str)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
