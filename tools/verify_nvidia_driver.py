"""Check irscope's cubin figures against the CUDA driver on a real GPU.

For every cubin in the corpus whose arch the GPU can load, the driver's own
`n_regs` and `n_spills` (Triton's `load_binary`: CU_FUNC_ATTRIBUTE_NUM_REGS and
LOCAL_SIZE_BYTES / 4) must equal irscope's `registers` and local memory / 4.

Run on a machine with an NVIDIA GPU and Triton (the device tool's H100):
    python tools/verify_nvidia_driver.py fixtures/caches/triton-3.6 [more paths] [--json OUT]
It needs irscope importable; without an install, point PYTHONPATH at a staged copy
(see the comment in main()). Exit 1 on any mismatch.
"""

from __future__ import annotations

import argparse
import json
import sys


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--json")
    args = parser.parse_args()

    import torch
    import triton

    import irscope  # staged: cp -r irscope S/; cp -r parsers S/irscope/parsers (rules, tui alike)

    major, minor = torch.cuda.get_device_capability()
    gpu_arch = f"sm_{major}{minor}"
    utils = triton.runtime.driver.active.utils
    device = torch.cuda.current_device()

    rows, mismatches = [], 0
    for r in irscope.scan(args.paths).kernels:
        k, res = r.kernel, r.resources
        cubin = k.artifact("cubin")
        if cubin is None or k.target is None or k.target.arch != gpu_arch:
            continue
        shared = k.options.shared.value if k.options.shared else 0
        _mod, _fn, n_regs, n_spills, *_ = utils.load_binary(k.name, cubin.read_bytes(), shared, device)
        ours_regs = res.registers.value
        ours_spills = res.local_memory_bytes // 4
        ok = n_regs == ours_regs and n_spills == ours_spills
        mismatches += not ok
        rows.append(dict(kernel=k.name, key=k.key, driver_n_regs=n_regs, irscope_registers=ours_regs,
                         driver_n_spills=n_spills, irscope_local_bytes_div4=ours_spills, ok=ok))
        print(f"{'OK ' if ok else 'BAD'} {k.name:28} {k.key[:20]:20} regs driver={n_regs} irscope={ours_regs}  "
              f"spills driver={n_spills} irscope={ours_spills}")
    print(f"{len(rows)} cubins for {gpu_arch} on {torch.cuda.get_device_name()}; {mismatches} mismatches")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"gpu": torch.cuda.get_device_name(), "arch": gpu_arch, "triton": triton.__version__,
                       "rows": rows, "mismatches": mismatches}, f, indent=1)
    return 1 if mismatches or not rows else 0


if __name__ == "__main__":
    sys.exit(main())
