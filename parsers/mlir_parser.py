"""Parse Triton's MLIR text (TTIR, TTGIR) into an irscope.ir.mlir.MlirModule.

`parse_mlir(text, path)` is the entry point. The text becomes a token tree
(parsers/mlir_tree.py) read by parsers/mlir_fast.py, or, for input that reader leaves
alone, by the lark grammar mlir.lark (parsers/mlir_lark.py, the reference: both give the
same tree); parsers/mlir_build.py gives the tree its MLIR meaning. A file never fails as
a whole: the lark reader balances brackets, the grammar accepts any balanced token
sequence as a statement, and what an op's syntax does not say is recorded as an
unstructured op, not an exception.
"""

from __future__ import annotations

from irscope.ir.mlir import MlirModule
from irscope.model.kernel import Problem

from .gc_pause import collections_paused
from .mlir_fast import read_statements
from .mlir_trailing import split_leading_aliases, trailing_location_lines
from .mlir_tree import Statement


def parse_statements(text: str, path: str, reader: str = "fast") -> tuple[list[Statement], list[Problem]]:
    """The token tree of a file, and the repairs made to it.

    reader="fast" (the default) falls back to lark for any input the fast reader declines;
    reader="lark" always uses lark, the reference (tests compare the two).
    """
    if reader not in ("fast", "lark"):
        raise ValueError(f"reader must be 'fast' or 'lark', not {reader!r}")
    if reader == "fast":
        statements = read_statements(text)
        if statements is not None:
            return statements, []
    return _declined(text, path, reader)


def _declined(text: str, path: str, reader: str) -> tuple[list[Statement], list[Problem]]:
    """The lark reader's statements, for text the fast reader declined (reader="fast") or not asked."""
    if reader == "fast" and len(text) > REPAIR_MAX_CHARS:
        return [], [_unrepaired(text, path)]
    from .mlir_lark import parse_statements as lark_statements

    return lark_statements(text, path)


# lark reads 0.2-0.5 MB/s, the fast reader 3-5 MB/s. Every well-formed file is the fast reader's;
# broken text larger than this (a 10 MB line, a file cut and glued) would keep lark busy for
# minutes, so it is reported instead. Triton's TTGIR is 2-30 KB in fixtures/, its lines < 5 KB.
REPAIR_MAX_CHARS = 1 << 20
LONG_LINE = 1 << 16


def _unrepaired(text: str, path: str) -> Problem:
    start, line = 0, 1
    while start < len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        if end - start > LONG_LINE:
            return Problem(path, f"MLIR text irscope cannot read: line {line} is {end - start:,} characters long "
                                 "(Triton writes lines of a few KB)", line)
        start, line = end + 1, line + 1
    return Problem(path, f"MLIR text irscope cannot read, and at {len(text):,} characters too large to repair")


# The token tree and the model are acyclic: a collection while they grow would only walk
# them, and everything the caller holds, again and again (a quarter of the build's time).
@collections_paused
def parse_mlir(text: str, path: str, reader: str = "fast") -> MlirModule:
    """Parse one TTIR/TTGIR file (or an MLIR_ENABLE_DUMP section, or a lit test)."""
    from .mlir_build import build_module

    if reader == "fast":  # the `#loc` lines after the module by one regex, the text above by the fast reader
        cut, trailing = trailing_location_lines(text)
        above = text[:cut] if trailing else text
        begin, line, leading = split_leading_aliases(above)  # and the alias lines before the module
        statements = read_statements(above, True, begin, line)  # one-line ops as LineOps (parsers/mlir_build.py)
        if statements is not None:
            return build_module(statements, text, path, [], trailing, leading)
        if len(above) <= REPAIR_MAX_CHARS:  # as without LineOps, and lark reads it
            statements = read_statements(above)
        if statements is not None:
            return build_module(statements, text, path, [], trailing)
        # it declines the text above the lines iff it declines the whole (parsers/mlir_trailing.py)
        statements, problems = _declined(text, path, reader)
    else:
        statements, problems = parse_statements(text, path, reader)
    return build_module(statements, text, path, problems)


def __getattr__(name: str):
    if name == "MlirPostLexer":  # now in parsers/mlir_lark.py, imported on demand: lark costs ~90 ms to import
        from .mlir_lark import MlirPostLexer

        return MlirPostLexer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["parse_mlir", "parse_statements"]
