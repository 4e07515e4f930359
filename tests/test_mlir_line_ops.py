"""One-line ops read whole (parsers/mlir_fast.py LINE_OP/LINE_OP0, parsers/mlir_build.py build_line_op) give the model
the token-by-token read gives: every field of every op, value, alias, problem and module attribute."""

from __future__ import annotations

from pathlib import Path

import pytest

from irscope.parsers.mlir_build import build_module
from irscope.parsers.mlir_fast import read_statements
from irscope.parsers.mlir_parser import parse_mlir
from irscope.parsers.mlir_trailing import split_trailing_locations
from irscope.parsers.mlir_tree import LineOp

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
FILES = sorted(FIXTURES.rglob("*.ttgir")) + sorted(FIXTURES.rglob("*.ttir"))


def _models(text: str) -> tuple[str, str, int]:
    """repr of the model built with and without LineOps, and how many LineOps the reader made."""
    cut, trailing = split_trailing_locations(text)
    above = text[:cut] if trailing else text
    lines, tokens = read_statements(above, lines=True), read_statements(above)
    assert lines is not None and tokens is not None
    return (repr(build_module(lines, text, "k.ttgir", [], trailing)),
            repr(build_module(tokens, text, "k.ttgir", [], trailing)), _line_ops(lines))


def _line_ops(statements) -> int:
    count = 0
    for st in statements:
        if type(st) is LineOp:
            count += 1
            continue
        for item in st.items:
            count += _line_ops(item.statements) if hasattr(item, "statements") else 0
    return count


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_fixture_models_are_the_same_with_line_ops(path):
    with_lines, without, _ = _models(path.read_text())
    assert with_lines == without


MODULE = """#blocked = #ttg.blocked<{{sizePerThread = [1], threadsPerWarp = [64], warpsPerCTA = [4], order = [0]}}>
#loc = loc("/k.py":3:0)
module attributes {{"ttg.num-warps" = 4 : i32}} {{
  tt.func public @k(%p: !tt.ptr<f32> loc("p"(#loc)), %n: i32 loc("n"(#loc))) attributes {{noinline = false}} {{
{body}
    tt.return loc(#loc1)
  }} loc(#loc)
}} loc(#loc)
#loc1 = loc("/k.py":5:4)
#loc2 = loc("/k.py":6:4)
"""

BODIES = {
    "shapes": """\
    %r = tt.make_range {end = 64 : i32, start = 0 : i32} : tensor<64xi32, #blocked> loc(#loc1)
    %s = tt.splat %n : i32 -> tensor<64xi32, #blocked> loc(#loc2)
    %m = arith.cmpi slt, %r, %s : tensor<64xi32, #blocked> loc(#loc1)
    %e = tt.expand_dims %r {axis = 0 : i32} : tensor<64xi32, #blocked> -> tensor<1x64xi32, #blocked> loc(#loc1)
    %ps = tt.splat %p : !tt.ptr<f32> -> tensor<64x!tt.ptr<f32>, #blocked> loc(#loc2)
    %a = tt.addptr %ps, %r : tensor<64x!tt.ptr<f32>, #blocked>, tensor<64xi32, #blocked> loc(#loc1)
    %x = tt.load %a, %m : tensor<64x!tt.ptr<f32>, #blocked> loc(#loc1)
    %c = arith.constant dense<0.000000e+00> : tensor<64xf32, #blocked> loc(#loc1)
    %c1 = arith.constant 1 : i32 loc(#loc1)
    %t = arith.truncf %x : tensor<64xf32, #blocked> to tensor<64xf16, #blocked> loc(#loc2)
    %sel = arith.select %m, %x, %c : tensor<64xi1, #blocked>, tensor<64xf32, #blocked> loc(#loc2)
    %pid = tt.get_program_id x : i32 loc(#loc2)
    %u = arith.addi %undefined, %c1 : i32 loc(#loc9)
    %w = ttg.async_wait %c1 {num = 0 : i32} : i32 loc(#loc1)
    tt.store %a, %x, %m : tensor<64x!tt.ptr<f32>, #blocked> loc(#loc1)
    gpu.barrier loc(#loc2)
    ttg.local_dealloc %undefined2 : !ttg.memdesc<64xf32, #shared, #smem, mutable> loc(#loc1)""",
    # a line that continues the op line above it: the op is read token by token
    "continued": """\
    %s = tt.splat %n : i32 -> tensor<64xi32, #blocked> loc(#loc2)
    %a = arith.addi %s, %s : tensor<64xi32, #blocked> loc(#loc1)
      : tensor<64xi32, #blocked>
    %b = arith.addi %a, %a : tensor<64xi32, #blocked> loc(#loc1)""",
    # an op line inside a statement the line above left open (`,` ends it): read token by token
    "inside": """\
    %s = tt.splat %n : i32 -> tensor<64xi32, #blocked> loc(#loc2)
    %v = "tt.foo"(%s,
    %a = arith.addi %s, %s : tensor<64xi32, #blocked> loc(#loc1)
    ) : (tensor<64xi32, #blocked>) -> tensor<64xi32, #blocked> loc(#loc1)
    %b = arith.addi %s, %s : tensor<64xi32, #blocked> loc(#loc1)""",
}


@pytest.mark.parametrize("name", sorted(BODIES))
def test_op_lines_build_the_same_model(name):
    text = MODULE.format(body=BODIES[name])
    with_lines, without, line_ops = _models(text)
    assert with_lines == without
    assert line_ops >= 2
    assert parse_mlir(text, "k.ttgir").problems == parse_mlir(text, "k.ttgir", reader="lark").problems


def test_an_op_line_first_in_the_text_and_last_without_a_newline():
    text = "%a = arith.addi %x, %y : i32 loc(#loc1)\n%b = arith.addi %a, %a : i32 loc(#loc1)"
    with_lines, without, line_ops = _models(text)
    assert with_lines == without and line_ops == 1
