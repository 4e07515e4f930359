"""Attribute values, types and locations from the token tree, with aliases resolved.

    {tt.divisibility = 16 : i32}            -> {"tt.divisibility": 16}
    [[0, 1], [1, 0]]  array<i32: 1, 0>      -> ((0, 1), (1, 0))   (1, 0)
    #ttg.blocked<{sizePerThread = [1, 8], ...}>  -> an irscope.ir.layouts.encodings Layout
    tensor<128x64x!tt.ptr<f16>, #blocked>   -> TensorType(shape, PointerType(f16), Layout)
    loc(callsite(#loc3 at #loc44))          -> Location(frames=(standard.py:129, k.py:25))
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Optional

from irscope.ir.types import MemDescType, OtherType, PointerType, ScalarType, TensorType
from irscope.ir.mlir import Location, SourceFrame
from irscope.model.kernel import Problem

from .mlir_fast import read_items
from .mlir_syntax import is_tok, split_commas
from .mlir_tree import TOKEN_CLASSES, Group, LocNode, Node, Param

# Dialects whose attributes are layout encodings (irscope.ir.layouts.encodings builds them).
_LAYOUT_DIALECTS = ("ttg.", "triton_gpu.", "ttng.", "triton_nvidia_gpu.")
_MEMDESC_HEADS = ("!ttg.memdesc", "!tt.memdesc", "!triton_gpu.memdesc")


@dataclass(frozen=True)
class RawAttribute:
    """An attribute irscope keeps as written: `dense<0.0>`, `#amdgpu.OpIdx<0>`."""

    text: str

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class ReadLayout:
    """An alias's `#ttg.blocked<{...}>` read before the token tree (parsers/mlir_trailing.py): the layout
    layout_of gives for `raw`, its text. Its alias resolves to it as to the layout of its tokens."""

    layout: object
    raw: str


@lru_cache(maxsize=1024)
def layout_of(raw: str) -> object:
    """The layout of an alias body `#ttg.blocked<{...}>` that names no alias (no `#` after the first), as
    AttributeReader.value_of reads its tokens; None where that is not a known layout. Keyed by the text: the
    configs of a family, and most kernels, define the same few. Known layouts are frozen all through."""
    from irscope.ir.layouts.encodings import Layout, UnknownLayout

    if "#" in raw[1:]:
        return None
    try:
        items = read_items(raw, 0, len(raw))
    except Exception:  # noqa: BLE001  # text the tokens do not read alone: the reader reads the line
        return None
    if len(items) != 1 or type(items[0]) is not Param:
        return None
    value = AttributeReader(raw, _no_alias, [], "").value_of(items)
    return value if isinstance(value, Layout) and not isinstance(value, UnknownLayout) else None


def _no_alias(name: str) -> None:
    return None


# Location and SourceFrame are frozen dataclasses; their __init__ sets each field through object.__setattr__.
# A file resolves ~150 locations: their fields go into a new instance's __dict__ at once, as __init__ would.
_new = object.__new__
_EMPTY = Location()
_UNKNOWN = object()  # not in a cache
_MATCH = type(re.match("", ""))


def _location(frames: tuple, names: tuple) -> Location:
    loc = _new(Location)
    loc.__dict__.update(frames=frames, names=names)
    return loc


# The written types most LineOps have (~70% of a TTGIR's distinct ones), read by one match rather than as tokens:
# `i32`, `!tt.ptr<f16>`, `tensor<128x64x!tt.ptr<f16>, #blocked>` (or an inline `#ttg.slice<{...}>`, whose text
# alone is read as tokens), `!ttg.memdesc<64x64xf16, #shared, #smem, mutable>`. Each gives what _read_type gives
# for the tokens the fast reader reads from the same text.
_ELEMENT = r"[A-Za-z][\w$.]*|!tt\.ptr<[A-Za-z][\w$.]*>"
_WRITTEN_TYPE = re.compile(
    r"(?P<word>[A-Za-z_][\w$.]*)|!tt\.ptr<(?P<pointee>[A-Za-z][\w$.]*)>"
    rf"|tensor<(?P<dims>\d+(?:x\d+)*)x(?P<elem>{_ELEMENT})(?:, (?:(?P<enc>#[\w$.\-]+)|(?P<inline>#[A-Za-z_].*)))?>"
    rf"|!ttg\.memdesc<(?P<mdims>\d+(?:x\d+)*)x(?P<melem>{_ELEMENT}), (?P<menc>#[\w$.\-]+), (?P<space>#[\w$.\-]+)"
    r"(?P<mutable>, mutable)?>")

# Aliases resolved inside the resolution of another: Triton's chains (`#loc12 = loc(callsite(#loc10
# at #loc11))`) are as long as the inlining is deep, a handful; 3,000 overflowed Python's stack.
MAX_ALIAS_CHAIN = 100


class AttributeReader:
    def __init__(self, text: str, alias_items: Callable[[str], Optional[list]], problems: list[Problem],
                 path: str) -> None:
        self.text = text
        self.alias_items = alias_items
        self.problems = problems
        self.path = path
        self._aliases: dict[str, object] = {}
        self._resolving: set[str] = set()
        self._types: dict[str, object] = {}
        self._layouts: dict[str, object] = {}

    def source(self, items: list) -> str:
        first, last = items[0], items[-1]  # span(), inlined: asked for every type and attribute
        start = first.start if isinstance(first, Node) else first.start_pos
        end = last.end if isinstance(last, Node) else last.end_pos
        return self.text[start:end]

    # -- aliases ----------------------------------------------------------------------
    def alias_value(self, name: str) -> object:
        if name in self._aliases:
            return self._aliases[name]
        items = self.alias_items(name)
        if items is None or name in self._resolving:
            if name in self._resolving:
                self.problems.append(Problem(self.path, f"alias {name} refers to itself", None, "warning"))
            return RawAttribute(name)
        if len(self._resolving) >= MAX_ALIAS_CHAIN:  # each link is a few frames of Python's stack
            self.problems.append(Problem(self.path, f"alias {name} is reached through more than {MAX_ALIAS_CHAIN} "
                                                    "other aliases: left unresolved", None, "warning"))
            return RawAttribute(name)
        self._resolving.add(name)
        try:
            only = items[0] if len(items) == 1 else None
            if isinstance(only, LocNode):
                value = self.location(only)
            elif type(only) is _MATCH:  # a `#loc` line's match (parsers/mlir_trailing.py)
                value = self.line_location(only)
            elif type(only) is ReadLayout:  # as dialect_attribute would give its tokens' layout
                value = self._layouts.setdefault(only.raw, only.layout)
            elif name.startswith("!"):
                value = self.type_of(items)
            else:
                value = self.value_of(items)
        finally:
            self._resolving.discard(name)
        self._aliases[name] = value
        return value

    # -- attribute values --------------------------------------------------------------
    def value_of(self, items: list) -> object:
        if not items:
            return True  # a unit attribute: `{tt.divisibility}`, `allow_reorder`
        first = items[0]
        if type(first) in TOKEN_CLASSES:
            kind = first.type
            if kind == "INT":
                return int(first.value)
            if kind == "FLOAT":
                return float(first.value)
            if kind == "HEX":
                return int(first.value, 16)
            if kind == "STRING":
                return first.value[1:-1]
            if kind == "BARE_ID" and len(items) == 1:
                return {"true": True, "false": False}.get(first.value, first.value)
            if kind == "ATTR_REF" and len(items) == 1:
                return self.alias_value(first.value)
        elif isinstance(first, Group):
            if first.kind == "[":
                return tuple(self.value_of(part) for part in split_commas(first.items) if part)
            if first.kind == "{":
                return self.dict_of(first)
        elif isinstance(first, Param):
            if first.head == "array":  # array<i32: 1, 0>
                after = first.items[2:] if len(first.items) > 1 and is_tok(first.items[1], "COLON") else []
                return tuple(self.value_of(part) for part in split_commas(after) if part)
            if first.head.startswith("#"):
                return self.dialect_attribute(first)
        elif isinstance(first, LocNode):
            return self.location(first)
        return RawAttribute(self.source(items))

    def dict_of(self, group: Group) -> dict:
        out = {}
        for entry in split_commas(group.items):
            if not entry:
                continue
            key = entry[0]
            name = key.value[1:-1] if is_tok(key, "STRING") else getattr(key, "value", self.source([key]))
            has_value = len(entry) > 1 and is_tok(entry[1], "EQUAL")
            out[name] = self.value_of(entry[2:]) if has_value else True
        return out

    def dialect_attribute(self, param: Param) -> object:
        raw = self.text[param.start:param.end]
        name = param.head[1:]
        if not name.startswith(_LAYOUT_DIALECTS):
            return RawAttribute(raw)
        if raw in self._layouts:
            return self._layouts[raw]
        from irscope.ir.layouts.params import build_layout

        body = param.items
        params = self.dict_of(body[0]) if len(body) == 1 and isinstance(body[0], Group) and body[0].kind == "{" \
            else None
        layout = build_layout(name, params, raw)
        self._layouts[raw] = layout
        return layout

    # -- types -------------------------------------------------------------------------
    def type_of(self, items: list) -> object:
        if not items:
            return None
        key = self.source(items)
        if key not in self._types:
            self._types[key] = self._read_type(items, key)
        return self._types[key]

    def type_at(self, start: int, end: int) -> object:
        """type_of the items of text[start:end], one type on one line: read only if not yet known."""
        key = self.text[start:end]
        known = self._types.get(key, _UNKNOWN)
        if known is _UNKNOWN:
            known = self._written_type(key, start)
            if known is _UNKNOWN:
                known = self._read_type(read_items(self.text, start, end), key)
            self._types[key] = known
        return known

    def _written_type(self, key: str, start: int) -> object:
        """_read_type of the type `key` (at `start` in the text) for the forms of _WRITTEN_TYPE, else _UNKNOWN."""
        m = _WRITTEN_TYPE.fullmatch(key)
        if m is None:
            return _UNKNOWN
        word, pointee, dims, elem, enc, inline, mdims, melem, menc, space, mutable = m.groups()
        if word is not None:
            return ScalarType(word)
        if pointee is not None:
            return PointerType(self._element(pointee), 1)
        if dims is not None:
            element = self._element(elem)
            if inline is not None:  # `#ttg.slice<{...}>`: as its tokens, if they are one `#name<...>`
                at = start + m.start("inline")
                try:
                    items = read_items(self.text, at, at + len(inline))
                except Exception:  # noqa: BLE001  # text the tokens would not read alone: read the whole
                    return _UNKNOWN
                if len(items) != 1 or type(items[0]) is not Param or items[0].end != at + len(inline):
                    return _UNKNOWN
                return TensorType(_shape(dims), element, self.value_of(items), inline)
            return TensorType(_shape(dims), element, self.alias_value(enc) if enc else None, enc)
        element = self._element(melem)
        encoding = self.alias_value(menc)
        space_name = getattr(self.alias_value(space), "name", None) or space
        return MemDescType(_shape(mdims), element, encoding, space_name, mutable is not None, (), menc)

    def _element(self, key: str) -> object:
        """type_of a _WRITTEN_TYPE's element, `f16` or `!tt.ptr<f16>`, cached alike."""
        known = self._types.get(key, _UNKNOWN)
        if known is _UNKNOWN:
            known = PointerType(self._element(key[8:-1]), 1) if key[0] == "!" else ScalarType(key)
            self._types[key] = known
        return known

    def _read_type(self, items: list, text: str) -> object:
        first = items[0]
        if len(items) == 1 and is_tok(first, "BARE_ID"):
            return ScalarType(first.value)
        if len(items) == 1 and is_tok(first, "TYPE_REF"):
            return self.alias_value(first.value) if self.alias_items(first.value) else OtherType(first.value)
        if isinstance(first, Param):
            if first.head == "tensor":
                shape, element, encoding = self._shaped(first.items)
                return TensorType(shape, element, encoding[0], encoding[1]) if element is not None \
                    else OtherType(text)
            if first.head in ("!tt.ptr",):
                parts = split_commas(first.items)
                space = int(parts[1][0].value) if len(parts) > 1 and parts[1] and is_tok(parts[1][0], "INT") else 1
                return PointerType(self.type_of(parts[0]) if parts else None, space)
            if first.head in _MEMDESC_HEADS:
                return self._memdesc(first.items, text)
        if isinstance(first, Group) and first.kind == "<":  # `-> <128x64xf16, #shared, mutable>`
            return self._memdesc(first.items, text)
        return OtherType(text)

    def _shaped(self, items: list) -> tuple[tuple, object, tuple]:
        parts = split_commas(items)
        if not parts or not parts[0]:
            return (), None, (None, None)
        head = parts[0]
        shape: tuple = ()
        if is_tok(head[0], "DIMS"):
            shape = tuple(None if d == "?" else int(d) for d in head[0].value[:-1].split("x"))
            head = head[1:]
        element = self.type_of(head)
        encoding = (None, None)
        if len(parts) > 1 and parts[1]:
            enc_items = parts[1]
            encoding = (self.value_of(enc_items), self.source(enc_items))
        return shape, element, encoding

    def _memdesc(self, items: list, text: str) -> object:
        shape, element, encoding = self._shaped(items)
        if element is None:
            return OtherType(text)
        space, mutable, alloc = None, False, ()
        for part in split_commas(items)[2:]:
            word = self.source(part) if part else ""
            if word == "mutable":
                mutable = True
            elif word.startswith("#"):
                value = self.value_of(part)
                space = getattr(value, "name", None) or word
            elif word[:1].isdigit():
                alloc = tuple(int(d) for d in word.replace(" ", "").split("x") if d.isdigit())
        return MemDescType(shape, element, encoding[0], space, mutable, alloc, encoding[1])

    # -- locations ---------------------------------------------------------------------
    def ref_location(self, name: str) -> Location:
        """`loc(#loc3)`, most ops' location."""
        value = self._aliases.get(name)  # alias_value's cache, inlined
        if value is None:
            value = self.alias_value(name)
        return value if isinstance(value, Location) else Location()

    def line_location(self, m: re.Match) -> Location:
        """location() of the LocNode of a `#loc` line's _BODY match (parsers/mlir_trailing.py _loc_node), read
        from its groups: each `#locN` of a TTGIR (~120) is resolved once, in the order location() would."""
        name, unknown, ref, callee, caller, label, inner, file, row, col, fused = m.groups()[:11]
        if label is not None:  # loc("a_ptr"(#loc))
            inner_loc = self.ref_location(inner)
            return _location(inner_loc.frames, (label[1:-1], *inner_loc.names))
        if file is not None:
            frame = _new(SourceFrame)
            frame.__dict__.update(file=file[1:-1], line=int(row), column=int(col))
            return _location((frame,), ())
        if callee is not None:
            callee_loc, caller_loc = self.ref_location(callee), self.ref_location(caller)
            return _location(callee_loc.frames + caller_loc.frames, caller_loc.names + callee_loc.names)
        if ref is not None:
            return self.ref_location(ref)
        if unknown is not None:
            return Location()
        parts = [self.ref_location(part) for part in fused.split(", ")]
        frames = next((p.frames for p in parts if p.frames), ())
        return Location(frames, tuple(n for p in parts for n in p.names))

    def location(self, node: LocNode) -> Location:
        kind, args = node.kind, node.args
        if kind == "ref":
            return self.ref_location(args[0])
        if kind == "name":
            name, inner = args
            inner_loc = self.location(inner) if inner is not None else _EMPTY
            return _location(inner_loc.frames, (name, *inner_loc.names))
        if kind == "callsite":
            callee, caller = self.location(args[0]), self.location(args[1])
            return _location(callee.frames + caller.frames, caller.names + callee.names)
        if kind == "file":
            frame = _new(SourceFrame)
            frame.__dict__.update(file=args[0], line=args[1], column=args[2])
            return _location((frame,), ())
        if kind == "fused":
            parts = [self.location(p) for p in args]
            frames = next((p.frames for p in parts if p.frames), ())
            return Location(frames, tuple(n for p in parts for n in p.names))
        return Location()


def _shape(dims: str) -> tuple:
    return tuple(int(d) for d in dims.split("x"))
