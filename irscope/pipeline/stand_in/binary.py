"""What `load_binary` tells Triton of a compiled kernel, read from the binary it is given.

A real driver loads the binary and asks it: HIP and CUDA return the registers per thread
(`*_FUNC_ATTRIBUTE_NUM_REGS`), the local memory per thread (`*_LOCAL_SIZE_BYTES`, which Triton
divides by 4 and calls spills) and the largest workgroup it may run with. Scripts size grids
from them (Triton's softmax tutorial divides the register file by `kernel.n_regs`), so the
stand-in answers from the same binary:

- an AMD code object (hsaco) carries them in its AMDGPU metadata note, a msgpack map per kernel
  with `.vgpr_count`, `.private_segment_fixed_size` and `.max_flat_workgroup_size`; a single-
  kernel code object names each key once, so the value after the key's msgpack string is it;
- a cubin carries them in its `.nv.info` attributes (parsers/cubin.py).
"""

from __future__ import annotations

import struct

from irscope.model.errors import ArtifactError

DEFAULT = (0, 0, 1024)  # what the stand-in said before it read binaries: n_regs, n_spills, n_max_threads


def kernel_limits(kernel: bytes, name: str, backend: str) -> tuple[int, int, int]:
    """(n_regs, n_spills, n_max_threads) as the real driver would report them; DEFAULT where the
    binary does not say."""
    try:
        if backend == "hip":
            return _hsaco(kernel)
        return _cubin(kernel, name)
    except (ArtifactError, ValueError, IndexError, struct.error):
        return DEFAULT


def _hsaco(data: bytes) -> tuple[int, int, int]:
    regs = _msgpack_uint_after(data, b".vgpr_count")
    scratch = _msgpack_uint_after(data, b".private_segment_fixed_size")
    threads = _msgpack_uint_after(data, b".max_flat_workgroup_size")
    return (regs if regs is not None else DEFAULT[0], (scratch or 0) // 4,
            threads if threads is not None else DEFAULT[2])


def _msgpack_uint_after(data: bytes, key: bytes) -> int | None:
    """The unsigned integer that follows `key` encoded as a msgpack fixstr, or None."""
    at = data.find(bytes([0xA0 | len(key)]) + key)
    if at < 0:
        return None
    i = at + 1 + len(key)
    tag = data[i]
    if tag < 0x80:  # positive fixint
        return tag
    sizes = {0xCC: ">B", 0xCD: ">H", 0xCE: ">I", 0xCF: ">Q"}
    if tag not in sizes:
        return None
    return struct.unpack_from(sizes[tag], data, i + 1)[0]


def _cubin(data: bytes, name: str) -> tuple[int, int, int]:
    from irscope.parsers.cubin import parse_cubin

    facts = parse_cubin(data, "<cubin>", name)
    local = sum(facts[k].value for k in ("stack_bytes", "local_bytes") if k in facts)
    return facts["registers"].value, local // 4, DEFAULT[2]
