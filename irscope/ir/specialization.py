"""What a kernel was specialized for, read once at analysis time: its argument signature and tiles.

Triton compiles one kernel per specialization: the argument types with the facts the JIT proved
about them (`tt.divisibility`, `tt.pointer_range`), the constexprs (folded into tensor shapes and
constants) and the compile options. Configs of one autotuned kernel share the signature and differ
in constexprs and options; kernel families (irscope/occupancy/families.py) group them by it. A `tt.dot`'s
operand shapes give the config's tile, M x N x K, with the TTGIR line it was read from.
"""

from __future__ import annotations

from irscope.ir.mlir import DOT_OPS, MlirModule
from irscope.model.facts import Origin
from irscope.model.specialization import Specialization, Tile  # noqa: F401 (public here)


SPECIALIZATION_FACTS = ("tt.divisibility", "tt.pointer_range")


def function_signature(module: MlirModule) -> tuple[tuple[str, tuple[tuple[str, str], ...]], ...] | None:
    """(type, specialization facts) per argument of the module's first function; None: it has none."""
    functions = module.functions()
    if not functions:
        return None
    fn = functions[0]
    arguments = fn.regions[0].blocks[0].arguments if fn.regions and fn.regions[0].blocks else ()
    attributes = fn.attributes.get("arg_attrs", ())
    args = []
    for i, vid in enumerate(arguments):
        facts = attributes[i] if i < len(attributes) else {}
        args.append((str(module.value(vid).type), tuple(sorted(
            (name, str(value)) for name, value in facts.items()
            if name in SPECIALIZATION_FACTS and isinstance(value, int) and not isinstance(value, bool)))))
    return tuple(args)


def specialization_of(module: MlirModule) -> Specialization:
    """The signature of the module's kernel function and the shapes of its dots."""
    args = function_signature(module) or ()
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
