"""The `<kernel>.json` metadata Triton writes next to each kernel's artifacts.

It is `options.__dict__` plus `hash`, `target`, `shared` and `name` (see
shared/reference/triton_artifacts.md §1). Keys come and go between versions:
`triton_version` exists from 3.3, cuda `arch` from 3.3, `cluster_dims` until 3.5.
Everything here is optional except that the file is a JSON object.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Mapping

from irscope.model import Fact, KernelOptions, Origin, Target
from irscope.parsers.errors import ArtifactError, decode_text


@dataclass(frozen=True)
class Metadata:
    name: str | None
    hash: str | None
    target: Target | None
    triton_version: Fact[str] | None
    options: KernelOptions
    raw: Mapping[str, Any]


_INT_OPTIONS = (
    "num_warps", "num_stages", "num_ctas", "shared", "waves_per_eu",
    "matrix_instr_nonkdim", "kpack", "maxnreg",
)


def parse_metadata(data: bytes, path: str) -> Metadata:
    text = decode_text(data, path)
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ArtifactError(path, f"not valid JSON: {exc.msg} (column {exc.colno})", exc.lineno) from None
    if not isinstance(raw, dict):
        raise ArtifactError(path, f"expected a JSON object of kernel metadata, found {type(raw).__name__}", 1)

    def origin(key: str) -> Origin:
        return Origin(path, _line_of_key(text, key), key)

    options = {}
    for key in _INT_OPTIONS:
        value = raw.get(key)
        # bool is an int subclass; no option here is a bool.
        if isinstance(value, int) and not isinstance(value, bool):
            options[key] = Fact(value, origin(key))

    version = raw.get("triton_version")
    return Metadata(
        name=raw["name"] if isinstance(raw.get("name"), str) else None,
        hash=raw["hash"] if isinstance(raw.get("hash"), str) else None,
        target=_target(raw.get("target"), path, origin("target")),
        triton_version=Fact(version, origin("triton_version")) if isinstance(version, str) else None,
        options=KernelOptions(**options),
        raw=raw,
    )


def _target(value: Any, path: str, origin: Origin) -> Target | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ArtifactError(path, "`target` is not an object", origin.line)
    backend, arch, warp = value.get("backend"), value.get("arch"), value.get("warp_size")
    if not isinstance(backend, str) or not isinstance(arch, (str, int)) or not isinstance(warp, int):
        raise ArtifactError(path, f"`target` lacks backend/arch/warp_size: {value!r:.80}", origin.line)
    return Target(backend, normalize_arch(backend, arch), warp)


def normalize_arch(backend: str, arch: str | int) -> str:
    """`90` (cuda json) -> `sm_90`; `sm90` -> `sm_90`; hip arches are already `gfx942`."""
    if backend == "cuda":
        digits = re.sub(r"^sm_?", "", str(arch))
        return f"sm_{digits}"
    return str(arch)


def _line_of_key(text: str, key: str) -> int:
    # Triton writes the json on one line; an edited or pretty-printed file may not be.
    pos = text.find(f'"{key}"')
    return 1 if pos < 0 else text.count("\n", 0, pos) + 1
