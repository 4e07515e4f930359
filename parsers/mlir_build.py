"""Turn the MLIR token tree into the model: ops, values, types, layouts, locations.

Aliases (`#blocked = ...`, `#loc3 = loc(...)`) are collected from the whole file first
and resolved on demand, so an alias may be used before, or defined after, the module
and may refer to aliases defined later. SSA names are scoped by region, as in MLIR: a
name is visible in the region that defines it and in the regions nested in it, and a
sibling region (the other scf.for, the else of an scf.if, another function) may define it
again. Uses resolve once the whole file is read, so one that textually precedes its
definition (a graph region, a branch back to an earlier block) still finds it.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Callable, Optional

from irscope.ir.types import ASYNC_TOKEN, OtherType, PointerType, ScalarType, TensorType, with_element
from irscope.ir.mlir import FUNCTION_OPS, LOOP_OPS, Block, MlirModule, Op, Region, Value, canonical_op_name
from irscope.model.kernel import Fact, Origin, Problem

from .mlir_attributes import AttributeReader
from .mlir_fast import LINE0_GROUPS, LINE_GROUPS, LINE_OP0
from .mlir_syntax import (FIRST_TYPE_RESULT, I1_RESULT, IMPLICIT_RESULT, LAST_TYPE_RESULT, POINTEE_RESULT,
                          REPEATED_RESULT, TOKEN_ONLY_PREFIXES, TOKEN_RESULT, HeaderDef, is_tok, read_op, split_commas)
from .mlir_tree import Group, LineOp, LocNode, Statement

# A LineOp's types after its first, `, T` each (its regex matched them all: a type's commas are inside `<...>`).
_MORE_TYPES = re.compile(r", ([^<>,]+(?:<(?:[^<>]|<(?:[^<>]|<[^<>]*>)*>)*>)?)")

_MODULE_ATTRS = ("num-warps", "threads-per-warp", "num-ctas", "target", "shared")


# Op and Value are frozen dataclasses; their __init__ sets each field through object.__setattr__,
# ~2.6 and 1.3 us, a tenth of the build. A file builds one per op and value, so here their
# fields go into a new instance's __dict__ at once, in field order, as __init__ would put them.
_new = object.__new__


def _op(index: int, name: str, results: tuple, attributes: dict, line: int, location, parent: Optional[int],
        loop_depth: int, structured: bool, text: str) -> Op:
    """An Op whose operands (and, for build_op, regions) are set once known, in its __dict__: the op is new."""
    op = _new(Op)
    op.__dict__.update(index=index, name=name, results=results, operands=(), attributes=attributes, regions=(),
                       line=line, location=location, parent=parent, loop_depth=loop_depth, structured=structured,
                       text=text)
    return op


def _value(vid: int, name: str, ty, owner: int, kind: str, line: int) -> Value:
    value = _new(Value)
    value.__dict__.update(id=vid, name=name, type=ty, owner=owner, kind=kind, line=line)
    return value


class ModuleBuilder:
    def __init__(self, text: str, path: str) -> None:
        self.text = text
        self.path = path
        self.ops: list[Op] = []
        self.uses: list[tuple[list[str], int]] = []  # per op: its operands' names, the region they resolve in
        self.values: list[Value] = []
        self.problems: list[Problem] = []
        # One name table per region, and the region it is nested in (-1: none). Triton reuses a
        # name in sibling regions (`%97` in an scf.for and in the scf.if after it), so a use looks
        # in its own region, then outwards: the innermost definition it can see is the one.
        self.scope_tables: list[dict[str, int]] = [{}]  # 0: the top level, outside any op
        self.scope_parents: list[int] = [-1]
        self.scope = 0  # the region being read
        self.alias_defs: dict[str, list] = {}
        # The reader looks aliases up in the dict, not through a method of the builder: a cycle
        # (builder -> reader -> builder) left each file's builder, token tree included, to the
        # cyclic collector, ~60% of the parse's time in a scan.
        self.attrs = AttributeReader(text, self.alias_defs.get, self.problems, path)

    # -- aliases ---------------------------------------------------------------------
    def collect_aliases(self, statements: list[Statement]) -> list[Statement]:
        rest = []
        for st in statements:
            items = st.items
            if len(items) >= 3 and is_tok(items[0], "ATTR_REF", "TYPE_REF") and is_tok(items[1], "EQUAL"):
                self.alias_defs[items[0].value] = items[2:]
            else:
                rest.append(st)
        return rest

    # -- values ----------------------------------------------------------------------
    def _new_value(self, name: str, ty, owner: int, kind: str, line: int) -> int:
        vid = len(self.values)
        self.values.append(_value(vid, name, ty, owner, kind, line))
        self.scope_tables[self.scope].setdefault(name, vid)
        return vid

    def _lookup(self, name: str, scope: int) -> Optional[int]:
        tables, parents = self.scope_tables, self.scope_parents
        while scope >= 0:
            table = tables[scope]
            vid = table.get(name)
            if vid is None and name.endswith("#0"):  # `%r#0` names the single result `%r` too
                vid = table.get(name[:-2])
            if vid is not None:
                return vid
            scope = parents[scope]
        return None

    def _type_of_name(self, name: str):
        vid = self._lookup(name, self.scope)
        return None if vid is None else self.values[vid].type

    # -- statements --------------------------------------------------------------------
    def build_block_list(self, statements: list, parent: Optional[int], loop_depth: int,
                         entry_defs: list[HeaderDef]) -> Region:
        outer = self.scope
        if parent is not None:  # the top level keeps table 0
            self.scope = len(self.scope_tables)
            self.scope_tables.append({})
            self.scope_parents.append(outer)
        blocks: list[Block] = []
        label, args, ops = None, self._declare_args(entry_defs, parent), []
        for st in statements:
            if type(st) is LineOp:
                ops.append(self.build_line_op(st, parent, loop_depth))
                continue
            items = st.items
            if items and is_tok(items[0], "BLOCK_ID") and is_tok(items[-1], "COLON"):
                if label is not None or args or ops:
                    blocks.append(Block(label, tuple(args), tuple(ops)))
                label, args, ops = items[0].value, self._block_label_args(items, parent), []
                continue
            index = self.build_op(st, parent, loop_depth)
            if index is not None:
                ops.append(index)
        blocks.append(Block(label, tuple(args), tuple(ops)))
        self.scope = outer
        return Region(tuple(blocks))

    def _block_label_args(self, items: list, parent: Optional[int]) -> list[int]:
        defs = []
        if len(items) > 2 and isinstance(items[1], Group):
            for part in split_commas(items[1].items):
                if part and is_tok(part[0], "VALUE"):
                    types = [x for x in part[2:] if not isinstance(x, LocNode)]
                    defs.append(HeaderDef(part[0].value, part[0].line, types))
        return self._declare_args(defs, parent)

    def _declare_args(self, defs: list[HeaderDef], owner: Optional[int]) -> list[int]:
        ids = []
        for d in defs:
            if d.type_items:
                ty = self.attrs.type_of(d.type_items)
            elif d.init:
                ty = self._type_of_name(d.init)
            else:
                ty = None
            ids.append(self._new_value(d.name, ty, -1 if owner is None else owner, "argument", d.line))
        return ids

    def build_op(self, st: Statement, parent: Optional[int], loop_depth: int) -> Optional[int]:
        syntax = read_op(st.items)
        if syntax is None:
            self.problems.append(Problem(self.path, "line is not an op, block label or alias; skipped", st.line,
                                         "warning"))
            return None
        canonical = canonical_op_name(syntax.name)
        index = len(self.ops)
        location = self.attrs.location(syntax.location) if syntax.location else None
        op = _op(index, syntax.name, (), {}, st.line, location, parent, loop_depth, True,
                 self.text[st.start: syntax.header_end or st.end].rstrip(" {\n"))
        self.ops.append(op)
        self.uses.append((syntax.operands, self.scope))
        fields = op.__dict__  # Op is frozen: its fields are filled in here, as they are read
        fields["attributes"] = self._attributes(syntax)
        result_types, fields["structured"] = self._result_types(syntax, canonical)
        flat_names = [name if count == 1 else f"{name}#{i}" for name, count in syntax.results for i in range(count)]
        fields["results"] = tuple([self._new_value(name, ty, index, "result", st.line)
                                   for name, ty in zip(flat_names, result_types)])
        if canonical == "scf.for" and syntax.header_defs and syntax.header_defs[0]:
            first = syntax.header_defs[0][0]
            if first.init is None and syntax.induction_type_items:
                first.type_items = syntax.induction_type_items
        inner_depth = loop_depth + (canonical in LOOP_OPS)
        if canonical in FUNCTION_OPS:
            arg_attrs = [self.attrs.dict_of(d.attributes) if d.attributes else {}
                         for defs in syntax.header_defs[:1] for d in defs]
            if arg_attrs:
                fields["attributes"] = {**fields["attributes"], "arg_attrs": tuple(arg_attrs)}
        fields["regions"] = tuple([self.build_block_list(region.statements, index, inner_depth, defs)
                                   for region, defs in zip(syntax.regions, syntax.header_defs)])
        return index

    def build_line_op(self, st: LineOp, parent: Optional[int], loop_depth: int) -> int:
        """build_op for a one-line op (parsers/mlir_fast.py LINE_OP, LINE_OP0): the same model from its groups."""
        m, text = st.match, self.text
        if m.lastindex == LINE_OP0:  # `scf.yield %a, %b : T0, T1 loc(#loc3)`: no result, no type read
            args_at, dict_at, loc_at = LINE0_GROUPS
            name, result = text[st.start:m.start(args_at)], None
        else:
            op_at, args_at, dict_at, type_at, rest_at, result_at, loc_at = LINE_GROUPS
            name, result = m.group(op_at), text[st.start:m.start(op_at) - 3]
        index = len(self.ops)
        location = self.attrs.ref_location(m.group(loc_at))
        operand_names, keywords = _line_args(m.group(args_at))
        attrs = _int_dict(m.group(dict_at))
        if keywords:
            attrs["keywords"] = tuple(keywords)
        self.uses.append((operand_names, self.scope))
        op_text = text[st.start:st.end].rstrip(" {\n")
        if result is None:  # _typed_results of no result
            self.ops.append(_op(index, name, (), attrs, st.line, location, parent, loop_depth, True, op_text))
            return index
        if m.start(result_at) >= 0:  # `: A -> B`, `: A to B`: B
            spans = [m.span(result_at)]
        else:  # `: A, B`: each
            spans = [m.span(type_at)]
            rest_start, rest_end = m.span(rest_at)
            if rest_start < rest_end:
                spans.extend(found.span(1) for found in _MORE_TYPES.finditer(text, rest_start, rest_end))
        rule = _line_result(name, len(spans))
        if rule == "token":
            ty = ASYNC_TOKEN
        else:  # every written type is read, as _typed_results reads them, whichever gives the result's
            type_of = self.attrs.type_at
            written = [type_of(start, end) for start, end in spans]
            if rule == "first":
                ty = written[0]
            elif rule == "last":
                ty = written[-1]
            else:
                ty = None if rule == "none" else _LINE_RESULT_TYPE[rule](written[0], text[spans[-1][0]:spans[-1][1]])
        vid = len(self.values)  # _new_value, inlined
        self.values.append(_value(vid, result, ty, index, "result", st.line))
        self.scope_tables[self.scope].setdefault(result, vid)
        self.ops.append(_op(index, name, (vid,), attrs, st.line, location, parent, loop_depth, rule != "none",
                            op_text))
        return index

    def _attributes(self, syntax) -> dict:
        attrs: dict = {}
        for group in syntax.attr_groups:
            attrs.update(self.attrs.dict_of(group))
        for key, items in syntax.inline_attrs:
            attrs[key] = self.attrs.value_of(items)
        if syntax.keywords:
            attrs["keywords"] = tuple(syntax.keywords)
        return attrs

    def _result_types(self, syntax, canonical: str) -> tuple[list, bool]:
        count = 0
        for _, n in syntax.results:
            count += n
        return self._typed_results(canonical, count, syntax.keywords, syntax.result_type_items or [],
                                   self.attrs.type_of, self.attrs.source)

    # complex: a table-driven dispatcher, one branch per kind of op result, first match wins
    def _typed_results(self, canonical: str, count: int, keywords: list, type_items: list, type_of: Callable,
                       source: Callable) -> tuple[list, bool]:
        """The result types of an op of `count` results, `type_items` its written result types (read by type_of
        and source: token items, or a LineOp's spans), in the order build_op always read them."""
        if count == 0:
            return [], True
        if canonical in TOKEN_RESULT or canonical.startswith(TOKEN_ONLY_PREFIXES) \
                or "copy_global_to_local" in canonical:  # async copies into LDS return a token
            return [ASYNC_TOKEN] * count, True
        written = [type_of(items) for items in type_items]
        if not written and canonical.endswith("wait"):  # `%w = amdg.async_tdm_wait %0 {num = 0 : i32}`
            return [ASYNC_TOKEN] * count, True
        if canonical in REPEATED_RESULT and len(written) == 1:
            return written * count, True
        if count == len(written) + 1 and canonical.startswith("ttng.tmem_"):
            return written + [ASYNC_TOKEN], True  # `%v, %tok = ttng.tmem_load %t[%dep] : ... -> tensor<...>`
        if canonical in IMPLICIT_RESULT and not written:
            return [ScalarType(IMPLICIT_RESULT[canonical])] * count, True
        if canonical == "arith.constant" and not written and keywords:
            return [ScalarType("i1")] * count, True  # `%true = arith.constant true`
        if canonical == "tt.make_tensor_descriptor" and type_items:
            # `: <f16>, <128x64xf16>`: the printer drops `!tt.ptr` and `!tt.tensordesc`
            return [OtherType("!tt.tensordesc" + source(type_items[-1]))], True
        if canonical in POINTEE_RESULT and len(written) == 1:
            return [_pointee(written[0])], True
        if canonical in I1_RESULT and len(written) == 1:
            return [with_element(written[0], ScalarType("i1"))], True
        if len(written) == count:
            return written, True
        if count == 1 and written:
            if canonical in FIRST_TYPE_RESULT:
                return [written[0]], True
            if canonical in LAST_TYPE_RESULT:
                return [written[-1]], True
        return [None] * count, False

    # -- the whole file ----------------------------------------------------------------
    def build(self, statements: list[Statement], trailing: list[tuple[str, object]] = (),
              leading: list[tuple[str, list]] = ()) -> MlirModule:
        self.alias_defs.update(leading)
        top = self.collect_aliases(statements)
        for name, node in trailing:
            self.alias_defs[name] = [node]
        self.build_block_list(top, None, 0, [])
        self._resolve_operands()
        ops = tuple(self.ops)
        module_attrs = self._module_attributes(ops)
        aliases = {name: self.attrs.alias_value(name) for name in self.alias_defs}
        return MlirModule(self.path, ops, tuple(self.values), aliases, tuple(self.problems),
                          self.text.count("\n") + 1, module_attrs)

    def _resolve_operands(self) -> None:
        for op, (names, scope) in zip(self.ops, self.uses):
            if not names:
                continue  # operands stays ()
            ids = []
            for name in names:
                vid = self._lookup(name, scope)
                if vid is None:
                    self.scope = scope  # later uses in this region then find the same undefined value
                    vid = self._new_value(name, None, op.index, "undefined", op.line)
                    self.problems.append(Problem(self.path, f"{name} is used but never defined", op.line, "warning"))
                ids.append(vid)
            op.__dict__["operands"] = tuple(ids)

    def _module_attributes(self, ops: tuple[Op, ...]) -> dict[str, Fact]:
        found: dict[str, Fact] = {}
        for op in ops:
            if op.name not in ("module", "builtin.module"):
                continue
            for key, value in op.attributes.items():
                short = key.rpartition(".")[2] if isinstance(key, str) else key
                if short in _MODULE_ATTRS and short not in found:
                    found[short] = Fact(value, Origin(self.path, op.line, key))
            break
        return found


def _line_args(args: Optional[str]) -> tuple[list[str], list[str]]:
    """A LineOp's ` %a, slt, 8, dense<0.0>`: its operands and keywords, as _walk_header finds them."""
    operands: list[str] = []
    keywords: list[str] = []
    if args:
        for arg in args[1:].split(", "):  # `%a`, a keyword (`slt`), a number or `dense<...>`: no `, ` inside
            if arg[0] == "%":
                operands.append(arg)
            elif (arg[0].isalpha() or arg[0] == "_") and "<" not in arg:
                keywords.append(arg)
    return operands, keywords


def _int_dict(entries: Optional[str]) -> dict:
    """A LineOp's `{axis = 0 : i32}`: dict_of's {"axis": 0}."""
    attrs: dict = {}
    if entries:
        for entry in entries[1:-1].split(", "):
            key, _, value = entry.partition(" = ")
            attrs[key] = int(value.partition(" : ")[0])
    return attrs


@lru_cache(maxsize=1024)
def _line_result(name: str, written: int) -> str:
    """What ModuleBuilder._typed_results gives a LineOp's one result from its `written` types (>= 1), decided
    once per op name and count: "token", "first" or "last" written type, "none", or a _LINE_RESULT_TYPE key."""
    canonical = canonical_op_name(name)
    if canonical in TOKEN_RESULT or canonical.startswith(TOKEN_ONLY_PREFIXES) or "copy_global_to_local" in canonical:
        return "token"
    if canonical in REPEATED_RESULT and written == 1:
        return "first"
    if canonical == "tt.make_tensor_descriptor":
        return "descriptor"
    if canonical in POINTEE_RESULT and written == 1:
        return "pointee"
    if canonical in I1_RESULT and written == 1:
        return "i1"
    if written == 1 or canonical in FIRST_TYPE_RESULT:
        return "first"
    return "last" if canonical in LAST_TYPE_RESULT else "none"


def _pointee(ty):
    if isinstance(ty, TensorType) and isinstance(ty.element, PointerType):
        return with_element(ty, ty.element.pointee)
    if isinstance(ty, PointerType):
        return ty.pointee  # a scalar load, or a block pointer `!tt.ptr<tensor<...>>`
    return None


# A LineOp's result type from its first written type and the text of its last (_typed_results' other branches).
_LINE_RESULT_TYPE: dict[str, Callable] = {
    "descriptor": lambda first, last_text: OtherType("!tt.tensordesc" + last_text),
    "pointee": lambda first, last_text: _pointee(first),
    "i1": lambda first, last_text: with_element(first, ScalarType("i1")),
}


def build_module(statements: list[Statement], text: str, path: str, problems: list[Problem],
                 trailing: list[tuple[str, object]] = (), leading: list[tuple[str, list]] = ()) -> MlirModule:
    """trailing: the `#loc` aliases defined after `statements` (a LocNode or its line's match), leading: the
    aliases before them, as the reader's alias statements define them (parsers/mlir_trailing.py), in order."""
    builder = ModuleBuilder(text, path)
    builder.problems.extend(problems)
    return builder.build(statements, trailing, leading)


__all__ = ["build_module"]
