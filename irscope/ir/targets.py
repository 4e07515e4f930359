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
from dataclasses import dataclass

from irscope.model.kernel import Fact, Kernel, Origin, Target
from irscope.model.errors import ArtifactError
from irscope.parsers.metadata import normalize_arch

_MLIR_TARGET = re.compile(r'(?:ttg|triton_gpu)\.target"?\s*=\s*"(?P<backend>hip|cuda):(?P<arch>\w+)"')
# At most 9 digits: heads are decoded leniently, and a broken file's 5,000-digit run must not reach int().
_MLIR_WARP = re.compile(r'(?:ttg|triton_gpu)\.threads-per-warp"?\s*=\s*(?P<n>\d{1,9})(?!\d)')
# "ttg.num-warps" = 4 : i32   ("triton_gpu.num-warps" before 3.3)
_MLIR_NUM_WARPS = re.compile(r'"?(?P<dialect>ttg|triton_gpu)\.num-warps"?\s*=\s*(?P<n>\d{1,9})(?!\d)')
_AMDGCN_TARGET = re.compile(r'^\s*\.amdgcn_target\s+"[^"]*-(?P<arch>gfx\w+?)(?::[^"]*)?"', re.M)
_PTX_TARGET = re.compile(r"^\s*\.target\s+sm_(?P<arch>\d+)", re.M)

# Wave size when nothing in the file says: Triton uses 32 on RDNA (gfx10+) and NVIDIA.
_DEFAULT_WARP = {"hip": 64, "cuda": 32}
_HEAD_BYTES = 1 << 16  # module attributes and asm headers sit near the top


@dataclass(frozen=True)
class IrFacts:
    target: Fact[Target] | None = None
    num_warps: Fact[int] | None = None
    triton_version: Fact[str] | None = None  # a range, from the dialect prefix


def infer_from_ir(kernel: Kernel) -> IrFacts:
    """Target, num_warps and a version range read from the IR; each file is read once.

    The TTGIR's dialect prefix tells the version range: `triton_gpu.` before 3.3, `ttg.` from 3.3.
    """
    heads = {stage: _head(kernel, stage) for stage in ("ttgir", "ttir", "amdgcn", "ptx")}
    target = None
    for stage, (path, head) in heads.items():
        found = _target_in(stage, head) if head is not None else None
        if found is not None:
            value, pos = found
            target = Fact(value, Origin(path, head.count("\n", 0, pos) + 1, f"{stage} target"))
            break
    path, head = heads["ttgir"]
    m = _MLIR_NUM_WARPS.search(head) if head is not None else None
    if m is None:
        return IrFacts(target)
    line = head.count("\n", 0, m.start()) + 1
    return IrFacts(
        target,
        Fact(int(m["n"]), Origin(path, line, f"{m['dialect']}.num-warps")),
        Fact("<3.3" if m["dialect"] == "triton_gpu" else ">=3.3",
             Origin(path, line, f"dialect prefix {m['dialect']}.")),
    )


def _head(kernel: Kernel, stage: str) -> tuple[str | None, str | None]:
    """(path, text) of a stage: the first 64 KiB, or all of an .amdgcn (.amdgcn_target may sit anywhere)."""
    artifact = kernel.artifact(stage)
    if artifact is None:
        return None, None
    try:
        data = artifact.read_bytes()  # read once for the whole analysis (irscope/model/artifact_reader.py)
    except (OSError, ArtifactError):  # too large, replaced, gone: the readers that need the file say why
        return artifact.path, None
    if stage != "amdgcn":
        data = data[:_HEAD_BYTES]
    return artifact.path, data.decode("utf-8", "replace")


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

