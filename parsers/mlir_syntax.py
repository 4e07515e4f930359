"""Read one op statement of the token tree: results, name, operands, types, attributes.

MLIR's pretty forms differ per op, but Triton's ops follow a few conventions that this
module spells out once:

    %r = arith.addi %a, %b : i32                           one type: the result's
    %r = tt.splat %x : i32 -> tensor<128xi32, #blocked>    `->`: what follows is the result
    %r = arith.truncf %x : tensor<..xf32> to tensor<..xf16>
    %r = tt.addptr %p, %o : tensor<..x!tt.ptr<f16>>, tensor<..xi32>   first type is the result
    %r:3 = ttng.warp_group_dot_wait %a, %b, %c {pendings = 1 : i32} : T0, T1, T2
    %r = "tt.reduce"(%x) <{axis = 0 : i32}> ({ ... }) : (tensor<1024xf32>) -> f32
    %r:2 = scf.for %i = %lb to %ub step %s iter_args(%a = %x, %b = %y) -> (T0, T1) : i32 {

Value names written as `%x = ...` or `%x: T` inside the op's own parentheses are not
uses: they declare the arguments of the op's next region (loop variables, function
arguments, warp_specialize partitions).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from irscope.ir.mlir import canonical_op_name

from .mlir_tree import TOKEN_CLASSES, Group, LocNode, RegionNode

# Ops whose result type is not the printed type (the printed one is an operand's).
POINTEE_RESULT = frozenset({"tt.load"})  # `tt.load %p : tensor<..x!tt.ptr<f16>>` -> f16 elements
I1_RESULT = frozenset({"arith.cmpi", "arith.cmpf"})
TOKEN_RESULT = frozenset({"ttg.async_copy_global_to_local", "ttg.async_commit_group", "ttg.async_wait",
                          "amdg.buffer_load_to_local", "ttng.async_tma_copy_global_to_local"})
# tcgen05 MMAs return only a token; the printed types are their operands'.
TOKEN_ONLY_PREFIXES = ("ttng.tc_gen5_mma",)
# Ops that return N values of the one printed type: `%lo, %hi = tt.split %x : T -> U`.
REPEATED_RESULT = frozenset({"tt.split"})
# Ops that print no result type at all: `%w = ttg.warp_id {omitUniformHint}` (3.9).
IMPLICIT_RESULT = {"ttg.warp_id": "i32"}
FIRST_TYPE_RESULT = frozenset({"tt.addptr", "amdg.buffer_load"})
LAST_TYPE_RESULT = frozenset({"arith.select"})  # `: tensor<..xi1>, tensor<..xf32>`


@dataclass
class HeaderDef:
    """`%i` in `scf.for %i = %lb`, `%a` in `iter_args(%a = %x)`, `%x` in `@f(%x: T)`."""

    name: str
    line: int
    type_items: Optional[list] = None  # written type, if any
    init: Optional[str] = None  # the operand it is initialised from (`= %x`)
    attributes: Optional[Group] = None  # a function argument's `{tt.divisibility = 16 : i32}`


@dataclass
class OpSyntax:
    results: list[tuple[str, int]]  # (name, count) for `%r` and `%r:3`
    name: str
    generic: bool
    operands: list[str] = field(default_factory=list)
    header_defs: list[list[HeaderDef]] = field(default_factory=list)  # per region, in order
    regions: list[RegionNode] = field(default_factory=list)
    attr_groups: list[Group] = field(default_factory=list)  # `{...}` dicts and `<{...}>` props
    inline_attrs: list[tuple[str, list]] = field(default_factory=list)  # `inputPrecision = tf32`
    keywords: list[str] = field(default_factory=list)  # `slt`, `x`, `fadd`
    result_type_items: Optional[list] = None  # list of item-lists, one per result
    induction_type_items: Optional[list] = None  # scf.for's `: i32`
    location: Optional[LocNode] = None
    header_end: int = 0  # offset where the op's first region starts


def is_tok(item, *types: str) -> bool:
    return type(item) in TOKEN_CLASSES and item.type in types


def split_commas(items: list) -> list[list]:
    parts, current = [], []
    tokens = TOKEN_CLASSES
    for item in items:
        if type(item) in tokens and item.type == "COMMA":  # is_tok, inlined: ~40k lists a file
            parts.append(current)
            current = []
        else:
            current.append(item)
    if current or parts:
        parts.append(current)
    return parts


def read_results(items: list) -> tuple[list[tuple[str, int]], int]:
    """`%a, %b:3 =` at the start of a statement -> ([(%a, 1), (%b, 3)], index after `=`)."""
    tokens, size = TOKEN_CLASSES, len(items)
    results, i = [], 0
    while i < size:
        item = items[i]
        if type(item) not in tokens or item.type != "VALUE":
            break
        name, count = item.value, 1
        i += 1
        if i + 1 < size and is_tok(items[i], "COLON") and is_tok(items[i + 1], "INT"):
            count = int(items[i + 1].value)
            i += 2
        results.append((name, count))
        if i < size and is_tok(items[i], "COMMA"):
            i += 1
            continue
        break
    if results and i < size and is_tok(items[i], "EQUAL"):
        return results, i + 1
    return [], 0


def read_op(items: list) -> Optional[OpSyntax]:
    """Split an op statement; None when it has no op name (a stray line)."""
    results, i = read_results(items)
    if i >= len(items):
        return None
    head = items[i]
    if is_tok(head, "BARE_ID"):
        syntax = OpSyntax(results, head.value, generic=False)
    elif is_tok(head, "STRING"):
        syntax = OpSyntax(results, head.value[1:-1], generic=True)
    else:
        return None
    body = items[i + 1:]
    if body and isinstance(body[-1], LocNode):
        syntax.location = body.pop()
    marks = _walk_header(syntax, body)
    _read_signature(syntax, body, canonical_op_name(syntax.name), marks)
    return syntax


# One pass over the op's items, tokens first (most items are); it also marks the `->` and `:`
# before the first region, which _read_signature would otherwise look for again.
# complex: one branch per kind of item, as the op's syntax has them
def _walk_header(syntax: OpSyntax, body: list) -> tuple[int, int, int]:
    """Operands, header defs, regions, attributes and keywords; and the index of the first `->`,
    of the last `:` before the first region (-1: none) and of the last region (-1: none)."""
    pending: list[HeaderDef] = []
    prev_kind = None  # the token type of the previous item (None: not a token)
    in_types = False  # after the top-level `:`, bare words are type names, not keywords
    arrow = colon = last_region = -1
    before_region = True
    tokens, operands, generic = TOKEN_CLASSES, syntax.operands, syntax.generic
    size = len(body)
    for pos, item in enumerate(body):
        if type(item) in tokens:
            kind = item.type
            if kind == "VALUE":
                nxt = body[pos + 1] if pos + 1 < size else None
                if not generic and type(nxt) in tokens and nxt.type == "EQUAL":  # scf.for %i = ...
                    pending.append(HeaderDef(item.value, item.line))
                else:
                    operands.append(item.value)
            elif kind == "BARE_ID":
                nxt = body[pos + 1] if pos + 1 < size else None
                if type(nxt) in tokens and nxt.type == "EQUAL" and prev_kind != "COLON":
                    syntax.inline_attrs.append((item.value, _value_after(body, pos + 2)))
                elif prev_kind != "EQUAL" and not in_types:
                    syntax.keywords.append(item.value)
            elif kind == "COLON":
                in_types = True
                if before_region:
                    colon = pos
            elif kind == "ARROW" and before_region and arrow < 0:
                arrow = pos
            prev_kind = kind
            continue
        prev_kind = None
        if isinstance(item, RegionNode):
            _add_region(syntax, item, pending)
            pending = []
            before_region, last_region = False, pos
        elif isinstance(item, Group):
            if item.kind == "(":
                _walk_paren(syntax, item, pending, successor=pos > 0 and is_tok(body[pos - 1], "BLOCK_ID"))
            elif item.kind == "{":
                syntax.attr_groups.append(item)
            elif item.kind == "[":
                _collect_uses(syntax, item.items)
            elif item.kind == "<" and any(isinstance(x, Group) and x.kind == "{" for x in item.items):
                syntax.attr_groups.extend(x for x in item.items if isinstance(x, Group) and x.kind == "{")
    if pending and syntax.regions:  # defs after the last region: none in Triton, keep them anyway
        syntax.header_defs[-1].extend(pending)
    return arrow, colon, last_region


def _value_after(body: list, pos: int) -> list:
    out = []
    while pos < len(body) and not is_tok(body[pos], "COMMA", "COLON"):
        out.append(body[pos])
        pos += 1
    return out


def _add_region(syntax: OpSyntax, region: RegionNode, defs: list[HeaderDef]) -> None:
    if not syntax.regions:
        syntax.header_end = region.start
    syntax.regions.append(region)
    syntax.header_defs.append(list(defs))


def _walk_paren(syntax: OpSyntax, group: Group, pending: list[HeaderDef], successor: bool) -> None:
    """Operands, or argument declarations `(%x: T {attrs} loc(..), %a = %init)`."""
    for part in split_commas(group.items):
        if not part:
            continue
        first = part[0]
        if isinstance(first, RegionNode) or (isinstance(first, Group) and first.kind == "("):
            for inner in part:  # generic form: `({ region }, { region })`
                if isinstance(inner, RegionNode):
                    _add_region(syntax, inner, pending)
                    pending.clear()
            continue
        if is_tok(first, "VALUE") and len(part) > 1 and not successor:
            if is_tok(part[1], "EQUAL"):
                init = part[2].value if len(part) > 2 and is_tok(part[2], "VALUE") else None
                pending.append(HeaderDef(first.value, first.line, init=init))
                if init:
                    syntax.operands.append(init)
                continue
            if is_tok(part[1], "COLON"):
                type_items = [x for x in part[2:] if not isinstance(x, LocNode)]
                attrs = None
                if type_items and isinstance(type_items[-1], Group) and type_items[-1].kind == "{":
                    attrs = type_items.pop()
                pending.append(HeaderDef(first.value, first.line, type_items, attributes=attrs))
                continue
        _collect_uses(syntax, part)


def _collect_uses(syntax: OpSyntax, items: list) -> None:
    for item in items:
        if is_tok(item, "VALUE"):
            syntax.operands.append(item.value)
        elif isinstance(item, Group) and item.kind in "([":
            _collect_uses(syntax, item.items)


def _top_level_index(body: list, kind: str, last: bool = False) -> int:
    """Index of the first (or last) `kind` token before the first region, or -1."""
    found = -1
    for pos, item in enumerate(body):
        if isinstance(item, RegionNode):
            break
        if is_tok(item, kind):
            found = pos
            if not last:
                break
    return found


def _read_signature(syntax: OpSyntax, body: list, name: str, marks: tuple[int, int, int]) -> None:
    """marks: _walk_header's first `->` and last `:` before the first region of `body`, and its last region."""
    arrow, colon, last_region = marks
    if arrow < 0 and colon < 0 and last_region >= 0:
        # `ttg.warp_specialize(%a) default {...} partition0(...) {...} : (i32) -> i64`: the signature
        # follows the last region (a broken file may leave regions only inside a group: none here)
        tail = body[last_region + 1:]
        if _top_level_index(tail, "COLON") >= 0:
            body = tail
            arrow = _top_level_index(body, "ARROW")
            colon = _top_level_index(body, "COLON", last=True)
    if name == "scf.for" and colon >= 0:
        syntax.induction_type_items = [body[colon + 1]] if colon + 1 < len(body) else None
    if arrow >= 0:
        syntax.result_type_items = _results_after_arrow(body[arrow + 1:])
    elif colon >= 0:
        syntax.result_type_items = _results_after_colon(body[colon + 1:])


def _results_after_arrow(after_arrow: list) -> list:
    """`: A -> B`, `: (A, B) -> (C, D)`, `iter_args(...) -> (T0, T1) : i32`."""
    first = after_arrow[0] if after_arrow else None
    if isinstance(first, Group) and first.kind == "(":
        return [p for p in split_commas(first.items) if p]
    listed = []  # `-> T0, T1` (elementwise_inline_asm), up to `: i32`, an attr dict or a region
    for item in after_arrow:
        if isinstance(item, RegionNode) or is_tok(item, "COLON") or (isinstance(item, Group) and item.kind == "{"):
            break
        listed.append(item)
    return [p for p in split_commas(listed) if p]


def _results_after_colon(after_colon: list) -> list:
    """`: T0, T1` up to an attr dict or a region; `: tensor<..xf32> to tensor<..xf16>` gives the part after `to`."""
    sig = []
    for item in after_colon:
        if isinstance(item, RegionNode) or (isinstance(item, Group) and item.kind == "{"):
            break
        sig.append(item)
    for pos, item in enumerate(sig):
        if is_tok(item, "BARE_ID") and item.value == "to":
            return [sig[pos + 1:]]
    return [p for p in split_commas(sig) if p]
