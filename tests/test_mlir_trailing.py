"""parsers/mlir_trailing.py: the `#loc` lines after the module give the nodes the fast reader gives them, and
parse_mlir's model, which reads those lines' matches (mlir_attributes.AttributeReader.line_location) and the alias
lines before the module (split_leading_aliases) apart from the reader, is the model of the reader's statements."""

from __future__ import annotations

from pathlib import Path

import pytest

from irscope.parsers.mlir_build import build_module
from irscope.parsers.mlir_fast import read_statements
from irscope.parsers.mlir_parser import parse_mlir
from irscope.parsers.mlir_trailing import split_trailing_locations

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
FILES = sorted(FIXTURES.rglob("*.ttgir")) + sorted(FIXTURES.rglob("*.ttir"))


def _node(node) -> tuple:
    return node.kind, tuple(_node(a) if hasattr(a, "kind") else a for a in node.args)


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_trailing_lines_read_as_the_fast_reader_reads_them(path):
    text = path.read_text()
    cut, trailing = split_trailing_locations(text)
    whole = read_statements(text)
    if not trailing:
        assert cut == len(text)
        return
    above = read_statements(text[:cut])
    assert whole is not None and above is not None
    assert len(whole) == len(above) + len(trailing)
    for st, (name, node) in zip(whole[len(above):], trailing):
        assert st.items[0].value == name and st.items[1].type == "EQUAL" and len(st.items) == 3
        assert _node(st.items[2]) == _node(node)


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_the_model_is_that_of_the_readers_statements(path):
    """line_location is location() of the line's LocNode, read from the match for speed: the two must agree."""
    text = path.read_text()
    statements = read_statements(text)
    assert statements is not None
    mine, theirs = repr(parse_mlir(text, "k.ttgir")), repr(build_module(statements, text, "k.ttgir", []))
    # Where they part, a few hundred characters around it: pytest's diff of two whole models takes minutes.
    at = next((i for i, (a, b) in enumerate(zip(mine, theirs)) if a != b), min(len(mine), len(theirs)))
    window = slice(max(0, at - 200), at + 200)
    assert (len(mine), mine[window]) == (len(theirs), theirs[window])


@pytest.mark.parametrize("tail, split", [
    ("} loc(#loc)\n#loc1 = loc(unknown)\n#loc2 = loc(\"k.py\":3:4)\n", True),
    ("} loc(#loc)\n#loc1 = loc(callsite(#loc2 at #loc3))\n#loc4 = loc(\"x\"(#loc1))", True),
    ("}\n#loc1 = loc(fused[#loc2, #loc3])\n", True),
    ("}\n#loc1 = loc(fused<\"x\">[#loc2, #loc3])\n", False),  # a form it leaves to the reader
    ("} loc(#loc)\n#loc1 = loc(#loc2)\n\n", False),  # a blank line after them
    ("  %x = foo, // )\n#loc1 = loc(#loc2)\n", False),  # the line before may join the next
])
def test_split_only_where_the_reader_ends_the_statement_before(tail, split):
    text = "module {\n" + tail
    cut, trailing = split_trailing_locations(text)
    assert bool(trailing) == split and (cut < len(text)) == split
    assert parse_mlir(text, "t.ttgir").aliases.keys() == parse_mlir(text, "t.ttgir", reader="lark").aliases.keys()
