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

from irscope.model.kernel import Fact, KernelOptions, Origin, Target
from irscope.model.errors import ArtifactError, decode_text
from irscope.model.safe_text import surrogates_escaped
from irscope.model.json_input import ALWAYS_KEYS


@dataclass(frozen=True)
class Metadata:
    name: str | None
    hash: str | None
    target: Target | None
    triton_version: Fact[str] | None
    options: KernelOptions
    raw: Mapping[str, Any]
    # (line, message) of keys whose values have the wrong type: ignored, and said so
    wrong_types: tuple[tuple[int, str], ...] = ()


_INT_OPTIONS = (
    "num_warps", "num_stages", "num_ctas", "shared", "waves_per_eu",
    "matrix_instr_nonkdim", "kpack", "maxnreg",
)


# ALWAYS_KEYS (irscope/model/json_input.py): keys of every json in fixtures/ (Triton 3.0-3.9, hip and
# cuda) that irscope reads: one missing is a file edited or cut, and said so; the others come and go
# between versions.


def parse_metadata(data: bytes, path: str) -> Metadata:
    text = decode_text(data, path)
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ArtifactError(path, f"not valid JSON: {exc.msg} (column {exc.colno})", exc.lineno) from None
    except RecursionError:  # json's decoder recurses per `[` / `{`: Triton's nest 3 deep
        raise ArtifactError(path, "JSON nested too deep to read: not Triton's metadata", 1) from None
    if not isinstance(raw, dict):
        raise ArtifactError(path, f"expected a JSON object of kernel metadata, found {type(raw).__name__}", 1)

    def origin(key: str) -> Origin:
        return Origin(path, _line_of_key(text, key), key)

    options = {}
    wrong: list[tuple[int, str]] = []
    raw, escaped = _surrogates_escaped(raw, text)
    for key in escaped:
        wrong.append((origin(key).line, f"`{key}` holds a lone surrogate (a `\\ud800`-style escape), not text: "
                      "kept with it written as an escape"))
    for key in _INT_OPTIONS:
        value = raw.get(key)
        # bool is an int subclass; no option here is a bool. None is Triton's "not set" (maxnreg).
        if isinstance(value, int) and not isinstance(value, bool):
            if value in _OPTION_RANGE:
                options[key] = Fact(value, origin(key))
            else:
                wrong.append((origin(key).line, f"`{key}` is {_size(value)}, out of any option's range: ignored"))
        elif value is not None:
            wrong.append((origin(key).line, f"`{key}` is {_kind(value)}, not an integer: ignored"))
    for key in ("name", "hash", "triton_version"):
        if raw.get(key) is not None and not isinstance(raw[key], str):
            wrong.append((origin(key).line, f"`{key}` is {_kind(raw[key])}, not a string: ignored"))
    missing = [key for key in ALWAYS_KEYS if key not in raw]
    if missing:
        names = ", ".join(f"`{k}`" for k in missing)
        wrong.append((1, f"{names} missing: every Triton version writes {'it' if len(missing) == 1 else 'them'}"))

    version = raw.get("triton_version")
    return Metadata(
        name=raw["name"] if isinstance(raw.get("name"), str) else None,
        hash=raw["hash"] if isinstance(raw.get("hash"), str) else None,
        target=_target(raw.get("target"), path, origin("target")),
        triton_version=Fact(version, origin("triton_version")) if isinstance(version, str) else None,
        options=KernelOptions(**options),
        raw=raw,
        wrong_types=tuple(wrong),
    )


# Every option here is a count of warps, stages, bytes or registers: far below 2**31. A bigger one
# is not Triton's, and would not fit the int64 columns of `--csv` and `to_frame()`.
_OPTION_RANGE = range(-(1 << 31), 1 << 31)
# Where json.loads can make a lone surrogate: an escape of one half of a pair.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _surrogates_escaped(raw: dict, text: str) -> tuple[dict, list[str]]:
    """`raw` with every lone surrogate (`"\\ud800"` in the file, in a key or a value at any depth)
    written as the visible escape `\\ud800`, and the top-level keys where one was. A lone surrogate
    is no text: no UTF-8 file, terminal or CSV can hold one."""
    if not _SURROGATE_ESCAPE.search(text):  # decode_text is strict: only an escape makes one
        return raw, []
    top, escaped = {}, []
    for key, value in raw.items():
        clean, changed = _escaped_value(value)
        new_key = surrogates_escaped(key)
        if changed or new_key != key:
            escaped.append(new_key)
        top[new_key] = clean
    return top, escaped


def _escaped_value(value: Any) -> tuple[Any, bool]:
    """`value` with lone surrogates escaped in every string and key, and whether one was. Walked
    without recursion: the json may nest as deep as json.loads allows."""
    if not isinstance(value, (list, dict)):
        clean = surrogates_escaped(value) if isinstance(value, str) else value
        return clean, clean is not value and clean != value
    changed = False
    out: Any = [] if isinstance(value, list) else {}
    stack = [(value, out)]
    while stack:
        source, target = stack.pop()
        for k, v in (source.items() if isinstance(source, dict) else enumerate(source)):
            if isinstance(v, (list, dict)):
                child: Any = [] if isinstance(v, list) else {}
                stack.append((v, child))
            else:
                child = surrogates_escaped(v) if isinstance(v, str) else v
                changed = changed or (isinstance(v, str) and child != v)
            if isinstance(target, dict):
                clean_key = surrogates_escaped(k)
                changed = changed or clean_key != k
                target[clean_key] = child
            else:
                target.append(child)
    return out, changed


def _size(value: int) -> str:
    return str(value) if abs(value) < 10**20 else f"an integer of {len(str(abs(value)))} digits"


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", float: "a number"}.get(
        type(value), type(value).__name__)


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
