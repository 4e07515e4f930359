"""What a kernel was specialized for, read once at analysis time: its argument signature and tiles.

Triton compiles one kernel per specialization: the argument types with the facts the JIT proved
about them (`tt.divisibility`, `tt.pointer_range`), the constexprs (folded into tensor shapes and
constants) and the compile options. Configs of one autotuned kernel share the signature and differ
in constexprs and options; kernel families (irscope/occupancy/families.py) group them by it. A `tt.dot`'s
operand shapes give the config's tile, M x N x K, with the TTGIR line it was read from.
"""

from __future__ import annotations

import re

from irscope.ir.mlir import DOT_OPS, MlirModule
from irscope.model.facts import Origin
from irscope.model.specialization import Specialization, Tile  # noqa: F401 (public here)

_FUNC = re.compile(r"tt\.func\s+(?:public\s+)?@[\w$.]+\((.*?)\)\s*(?:attributes|\{|loc)", re.S)
_ARG_ATTR = re.compile(r"(tt\.divisibility|tt\.pointer_range)\s*=\s*(\d+)")
_LOC = re.compile(r"\s*loc\([^()]*(?:\([^()]*\)[^()]*)*\)")


def function_signature(text: str) -> tuple[tuple[str, tuple[tuple[str, str], ...]], ...] | None:
    """(type, specialization facts) per argument of the first `tt.func` in MLIR text; None: no function."""
    m = _FUNC.search(text)
    if m is None:
        return None
    args = []
    for raw in _split_args(_LOC.sub("", m.group(1))):
        kind = raw.split(":", 1)[1].split("{")[0].strip() if ":" in raw else raw
        args.append((kind, tuple(sorted(_ARG_ATTR.findall(raw)))))
    return tuple(args)


def _split_args(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch in "<({[" and 1 or 0
        depth -= ch in ">)}]" and 1 or 0
        if ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def specialization_of(module: MlirModule) -> Specialization:
    """The signature of the module's kernel function and the shapes of its dots."""
    functions = module.functions()
    args = (function_signature(functions[0].text) if functions else None) or ()
    signature = ",".join(kind + ("{" + ",".join(f"{name.split('.')[-1]}={v}" for name, v in facts) + "}"
                                 if facts else "") for kind, facts in args)
    tiles: dict[str, Tile] = {}
    for op in module.ops_named(*DOT_OPS):
        tile = _tile(module, op)
        if tile is not None:
            tiles.setdefault(str(tile), tile)
    return Specialization(signature, tuple(tiles.values()))


def _tile(module: MlirModule, op) -> Tile | None:
    if not op.results or not op.operands:
        return None
    out = getattr(module.value(op.results[0]).type, "shape", None)
    a = getattr(module.value(op.operands[0]).type, "shape", None)
    if not out or not a or len(out) < 2 or len(a) < 2 or None in (out[-2], out[-1], a[-1]):
        return None
    return Tile(out[-2], out[-1], a[-1], Origin(module.path, op.line, op.canonical_name))
