"""Reading each encoding's parameters into the classes of irscope.ir.layouts.encodings.

One builder per mnemonic; each raises BadParams with a sentence a user can read when a key
is missing or has the wrong type, and `build_layout` (below) turns that into an
UnknownLayout.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Mapping
from dataclasses import replace

from irscope.ir.layouts.encodings import (
    AmdMfma,
    AmdRotatingShared,
    AmdWmma,
    Bases,
    Blocked,
    CtaLayout,
    DotOperand,
    Ints,
    Layout,
    Linear,
    NvidiaMma,
    NvmmaShared,
    PaddedShared,
    SharedMemory,
    Slice,
    SwizzledShared,
    UnknownLayout,
)

DIALECTS = ("ttg", "triton_gpu", "ttng", "triton_nvidia_gpu", "amdg", "amdgpu")
_CTA_KEYS = ("CTAsPerCGA", "CTASplitNum", "CTAOrder")


class BadParams(ValueError):
    """Raised inside a builder when the parameters do not fit the encoding."""


def _blocked(p: dict | None, raw: str) -> Layout:
    p = _need_dict(p)
    order = _perm(p, "order")
    rank = len(order)
    layout = Blocked(
        _ints(p, "sizePerThread", rank), _ints(p, "threadsPerWarp", rank), _ints(p, "warpsPerCTA", rank),
        order, _cta(p, rank),
    )
    return _with_extras(layout, p, ("sizePerThread", "threadsPerWarp", "warpsPerCTA", "order", *_CTA_KEYS))


def _slice(p: dict | None, raw: str) -> Layout:
    p = _need_dict(p)
    parent = _parent(p)
    dim = _int(p, "dim")
    if dim < 0:
        raise BadParams(f"slice dim {dim} is negative")
    return Slice(dim, parent)


def _dot_op(p: dict | None, raw: str) -> Layout:
    p = _need_dict(p)
    op_idx = _int(p, "opIdx")
    if op_idx not in (0, 1):
        raise BadParams(f"dot_op opIdx {op_idx} is neither 0 nor 1")
    k_width = _int(p, "kWidth") if "kWidth" in p else None
    return DotOperand(op_idx, _parent(p), k_width)


def _amd_mfma(p: dict | None, raw: str) -> Layout:
    p = _need_dict(p)
    if "version" in p:
        version, minor = _int(p, "version"), None
    else:
        version, minor = _int(p, "versionMajor"), _int(p, "versionMinor")
    warps = _ints(p, "warpsPerCTA")
    instr = _ints(p, "instrShape")
    if len(instr) not in (2, 3):
        raise BadParams(f"instrShape {list(instr)} has neither 2 nor 3 entries")
    tiles = _ints(p, "tilesPerWarp", len(warps)) if "tilesPerWarp" in p else None
    bits = _int(p, "elementBitWidth") if "elementBitWidth" in p else None
    if bits is None and isinstance(p.get("elementType"), str):  # `elementType = f64` (3.5-3.7)
        digits = re.search(r"\d+$", str(p["elementType"]))
        bits = int(digits.group()) if digits else None
    layout = AmdMfma(version, warps, instr, _bool(p, "isTransposed"), minor, tiles, bits, _cta(p, len(warps)))
    return _with_extras(layout, p, ("version", "versionMajor", "versionMinor", "warpsPerCTA", "instrShape",
                                    "isTransposed", "tilesPerWarp", "elementBitWidth", "elementType",
                                    *_CTA_KEYS))


def _amd_wmma(p: dict | None, raw: str) -> Layout:
    p = _need_dict(p)
    warps = _ints(p, "warpsPerCTA") if "warpsPerCTA" in p else None
    warp_bases = None
    if isinstance(p.get("ctaLayout"), Mapping):  # 3.9: ctaLayout = {warp = [[0, 1], [1, 0]]}
        warp_bases = _bases({"warp": p["ctaLayout"].get("warp", ())}, "warp")
    if warps is None and warp_bases is None:
        raise BadParams("amd_wmma has neither warpsPerCTA nor ctaLayout")
    version = _int(p, "version") if "version" in p else 1  # 3.0-3.2 print no version: it was 1
    transposed = _bool(p, "isTranspose") if "isTranspose" in p else False
    instr = _ints(p, "instrShape") if "instrShape" in p else None
    rank = len(warps) if warps is not None else None
    layout = AmdWmma(version, transposed, warps, warp_bases, instr, _cta(p, rank) if rank else None)
    return _with_extras(layout, p, ("version", "isTranspose", "warpsPerCTA", "ctaLayout", "instrShape", *_CTA_KEYS))


def _nvidia_mma(p: dict | None, raw: str) -> Layout:
    p = _need_dict(p)
    warps = _ints(p, "warpsPerCTA")
    layout = NvidiaMma(_int(p, "versionMajor"), _int(p, "versionMinor"), warps, _ints(p, "instrShape"),
                       _cta(p, len(warps)))
    return _with_extras(layout, p, ("versionMajor", "versionMinor", "warpsPerCTA", "instrShape", *_CTA_KEYS))


def _linear(p: dict | None, raw: str) -> Layout:
    p = _need_dict(p)
    layout = Linear(_bases(p, "register"), _bases(p, "lane"), _bases(p, "warp"), _bases(p, "block", required=False))
    widths = {len(b) for b in (*layout.register, *layout.lane, *layout.warp, *layout.block)}
    if len(widths) > 1:
        raise BadParams("linear bases have different ranks")
    return layout


def _swizzled(p: dict | None, raw: str) -> Layout:
    p = _need_dict(p)
    order = _perm(p, "order")
    lead = _bool(p, "hasLeadingOffset") if "hasLeadingOffset" in p else None
    layout = SwizzledShared(_int(p, "vec"), _int(p, "perPhase"), _int(p, "maxPhase"), order, lead, _cta(p, len(order)))
    return _with_extras(layout, p, ("vec", "perPhase", "maxPhase", "order", "hasLeadingOffset", *_CTA_KEYS))


def _rotating(p: dict | None, raw: str) -> Layout:
    p = _need_dict(p)
    order = _perm(p, "order")
    layout = AmdRotatingShared(_int(p, "vec"), _int(p, "perPhase"), _int(p, "maxPhase"), order, _cta(p, len(order)))
    return _with_extras(layout, p, ("vec", "perPhase", "maxPhase", "order", *_CTA_KEYS))


def _nvmma(p: dict | None, raw: str) -> Layout:
    p = _need_dict(p)
    fp4 = _bool(p, "fp4Padded") if "fp4Padded" in p else False
    rank = len(p["CTAOrder"]) if isinstance(p.get("CTAOrder"), tuple) else None
    layout = NvmmaShared(_int(p, "swizzlingByteWidth"), _bool(p, "transposed"), _int(p, "elementBitWidth"), fp4,
                         _cta(p, rank) if rank else None)
    return _with_extras(layout, p, ("swizzlingByteWidth", "transposed", "elementBitWidth", "fp4Padded", *_CTA_KEYS))


# #ttg.padded_shared<[512:+8] {offset = [[0, 1], [0, 2]], block = []}>
# #ttg.padded_shared<[128:+8,256:+4] {order = [1, 0], shape = [16, 128]}>
_PADDED_INTERVALS = re.compile(r"<\s*\[\s*(?P<pairs>\d+\s*:\s*\+\s*\d+(?:\s*,\s*\d+\s*:\s*\+\s*\d+)*)\s*\]")
_PADDED_ENTRY = re.compile(r"(?P<key>\w+)\s*=\s*(?P<value>\[[\[\]\d,\s-]*\])")


def _padded(p: dict | None, raw: str) -> Layout:
    m = _PADDED_INTERVALS.search(raw)
    if m is None:
        raise BadParams("padded_shared without an [interval:+padding] list")
    intervals = tuple(
        (int(a), int(b)) for a, b in (pair.replace(" ", "").split(":+") for pair in m["pairs"].split(","))
    )
    body = {e["key"]: _to_tuple(ast.literal_eval(e["value"])) for e in _PADDED_ENTRY.finditer(raw[m.end():])}
    offset = _bases(body, "offset", required=False) if "offset" in body else None
    block = _bases(body, "block", required=False) if "block" in body else None
    order = _perm(body, "order") if "order" in body else None
    shape = _ints(body, "shape") if "shape" in body else None
    extras = tuple(sorted((k, v) for k, v in body.items() if k not in ("offset", "block", "order", "shape")))
    return PaddedShared(intervals, offset, block, order, shape, extras)


def _shared_memory(p: dict | None, raw: str) -> Layout:
    return SharedMemory()


BUILDERS: dict[str, Callable[[dict | None, str], Layout]] = {
    "blocked": _blocked,
    "slice": _slice,
    "dot_op": _dot_op,
    "amd_mfma": _amd_mfma,
    "amd_wmma": _amd_wmma,
    "nvidia_mma": _nvidia_mma,
    "linear": _linear,
    "shared": _swizzled,  # 3.0-3.2
    "swizzled_shared": _swizzled,
    "amd_rotating_shared": _rotating,
    "nvmma_shared": _nvmma,
    "padded_shared": _padded,
    "shared_memory": _shared_memory,
}


# -- parameter readers: each raises BadParams with a sentence a user can read ----------------


def _need_dict(p: dict | None) -> dict:
    if p is None:
        raise BadParams("expected a {key = value} body")
    return p


def _int(p: Mapping, key: str) -> int:
    value = p.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadParams(f"{key} is missing or not an integer")
    return value


def _bool(p: Mapping, key: str) -> bool:
    value = p.get(key)
    if isinstance(value, str) and value in ("true", "false"):
        return value == "true"
    if not isinstance(value, bool):
        raise BadParams(f"{key} is missing or not true/false")
    return value


def _ints(p: Mapping, key: str, rank: int | None = None) -> Ints:
    value = p.get(key)
    if not isinstance(value, tuple) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise BadParams(f"{key} is missing or not a list of integers")
    if rank is not None and len(value) != rank:
        raise BadParams(f"{key} has {len(value)} entries, expected {rank}")
    if any(v < 0 for v in value):
        raise BadParams(f"{key} has a negative entry")
    return value


def _perm(p: Mapping, key: str) -> Ints:
    order = _ints(p, key)
    if sorted(order) != list(range(len(order))):
        raise BadParams(f"{key} {list(order)} is not a permutation of the dimensions")
    return order


def _bases(p: Mapping, key: str, required: bool = True) -> Bases:
    value = p.get(key, None if required else ())
    if not isinstance(value, tuple):
        raise BadParams(f"{key} is missing or not a list of bases")
    for basis in value:
        if not isinstance(basis, tuple) or not all(isinstance(v, int) and not isinstance(v, bool) for v in basis):
            raise BadParams(f"{key} has a basis that is not a list of integers")
    return value


def _parent(p: Mapping) -> Layout:
    parent = p.get("parent")
    if not isinstance(parent, Layout):
        raise BadParams("parent is missing or not a layout")
    return parent


def _cta(p: Mapping, rank: int | None) -> CtaLayout | None:
    if not any(k in p for k in _CTA_KEYS):
        return None
    return CtaLayout(_ints(p, "CTAsPerCGA", rank), _ints(p, "CTASplitNum", rank), _perm(p, "CTAOrder"))


def _with_extras(layout: Layout, p: Mapping, known: tuple[str, ...]):
    """Keep parameters a newer Triton added (`CGALayout`, ...) so nothing read is lost."""
    extras = tuple(sorted((k, _freeze(v)) for k, v in p.items() if k not in known))
    return replace(layout, extras=extras) if extras else layout


def _freeze(value: object) -> object:
    if isinstance(value, Mapping):
        return tuple(sorted((str(k), _freeze(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    try:
        hash(value)
    except TypeError:
        return repr(value)
    return value


def _to_tuple(value: object) -> object:
    return tuple(_to_tuple(v) for v in value) if isinstance(value, list) else value


def build_layout(name: str, params: Mapping[str, object] | None, raw: str) -> Layout:
    """The typed layout for one encoding attribute; never raises.

    `name` is the mnemonic as written without `#` (`ttg.blocked`, `triton_gpu.amd_mfma`),
    `params` the converted `{...}` body (None for other bodies), `raw` the attribute text.
    Alias references (`parent = #mma`) must already be Layout values.
    """
    dialect, _, mnemonic = name.rpartition(".")
    builder = BUILDERS.get(mnemonic) if dialect in DIALECTS else None
    if builder is None:
        return UnknownLayout(name, params, raw)
    try:
        return builder(dict(params) if isinstance(params, Mapping) else None, raw)
    except BadParams as e:
        return UnknownLayout(name, params, raw, str(e))
    except Exception as e:  # noqa: BLE001  # a builder bug must not stop a scan: keep the text
        return UnknownLayout(name, params, raw, f"could not read the parameters ({type(e).__name__}: {e})")
