"""The compile target (and num_warps) of a kernel whose metadata json is missing or broken.

TRITON_KERNEL_DUMP directories hold IR only, so the target is read from the IR:
- TTIR/TTGIR module attributes: `ttg.target = "hip:gfx942"` (3.3+) or
  `triton_gpu.target = "cuda:90"` (3.0-3.2), and `threads-per-warp`;
- AMDGCN: `.amdgcn_target "amdgcn-amd-amdhsa--gfx942"` (3.0-3.8) or
  `"amdgpu9.42-amd-amdhsa-unknown-gfx942"` (3.9);
- PTX: `.target sm_90a`.
"""

from __future__ import annotations

import re

from irscope.model import Fact, Kernel, Origin, Target
from irscope.parsers.metadata import normalize_arch

_MLIR_TARGET = re.compile(r'(?:ttg|triton_gpu)\.target"?\s*=\s*"(?P<backend>hip|cuda):(?P<arch>\w+)"')
_MLIR_WARP = re.compile(r'(?:ttg|triton_gpu)\.threads-per-warp"?\s*=\s*(?P<n>\d+)')
# "ttg.num-warps" = 4 : i32   ("triton_gpu.num-warps" before 3.3)
_MLIR_NUM_WARPS = re.compile(r'"?(?P<dialect>ttg|triton_gpu)\.num-warps"?\s*=\s*(?P<n>\d+)')
_AMDGCN_TARGET = re.compile(r'^\s*\.amdgcn_target\s+"[^"]*-(?P<arch>gfx\w+?)(?::[^"]*)?"', re.M)
_PTX_TARGET = re.compile(r"^\s*\.target\s+sm_(?P<arch>\d+)", re.M)

# Wave size when nothing in the file says: Triton uses 32 on RDNA (gfx10+) and NVIDIA.
_DEFAULT_WARP = {"hip": 64, "cuda": 32}
_HEAD_BYTES = 1 << 16  # module attributes and asm headers sit near the top


def infer_target(kernel: Kernel) -> Fact[Target] | None:
    for stage in ("ttgir", "ttir", "amdgcn", "ptx"):
        artifact = kernel.artifact(stage)
        if artifact is None:
            continue
        try:
            with open(artifact.path, "rb") as f:
                # .amdgcn_target may sit anywhere in the asm; MLIR and PTX say it up top.
                data = f.read() if stage == "amdgcn" else f.read(_HEAD_BYTES)
        except OSError:
            continue
        head = data.decode("utf-8", "replace")
        found = _target_in(stage, head)
        if found is not None:
            target, pos = found
            line = head.count("\n", 0, pos) + 1
            return Fact(target, Origin(artifact.path, line, f"{stage} target"))
    return None


def _target_in(stage: str, text: str) -> tuple[Target, int] | None:
    if stage in ("ttgir", "ttir"):
        m = _MLIR_TARGET.search(text)
        if m is None:
            return None
        backend = m["backend"]
        warp = _MLIR_WARP.search(text)
        size = int(warp["n"]) if warp else _default_warp(backend, m["arch"])
        return Target(backend, normalize_arch(backend, m["arch"]), size), m.start()
    if stage == "amdgcn":
        m = _AMDGCN_TARGET.search(text)
        return (Target("hip", m["arch"], _default_warp("hip", m["arch"])), m.start()) if m else None
    m = _PTX_TARGET.search(text)
    return (Target("cuda", f"sm_{m['arch']}", 32), m.start()) if m else None


def _default_warp(backend: str, arch: str) -> int:
    if backend == "hip" and re.match(r"gfx1[0-9]{3}", arch):
        return 32
    return _DEFAULT_WARP[backend]


def infer_ir_options(kernel: Kernel) -> tuple[Fact[int] | None, Fact[str] | None]:
    """num_warps and a Triton version range from the TTGIR module attributes.

    The dialect prefix tells the version range: `triton_gpu.` before 3.3, `ttg.` from 3.3.
    """
    artifact = kernel.artifact("ttgir")
    if artifact is None:
        return None, None
    try:
        with open(artifact.path, "rb") as f:
            head = f.read(_HEAD_BYTES).decode("utf-8", "replace")
    except OSError:
        return None, None
    m = _MLIR_NUM_WARPS.search(head)
    if m is None:
        return None, None
    line = head.count("\n", 0, m.start()) + 1
    warps = Fact(int(m["n"]), Origin(artifact.path, line, f"{m['dialect']}.num-warps"))
    version = Fact("<3.3" if m["dialect"] == "triton_gpu" else ">=3.3",
                   Origin(artifact.path, line, f"dialect prefix {m['dialect']}."))
    return warps, version
