"""Syntax colors for the kernel view, one line at a time (only visible lines are ever colored).

pygments, which rich already depends on, lexes Python, LLVM IR, PTX, JSON and AMDGCN (its GNU
assembler lexer); MLIR has no pygments lexer, so TTIR and TTGIR get a few regexes: comments,
ops (`tt.load`, `ttg.convert_layout`), SSA values, attribute aliases (`#blocked`), types,
strings and numbers. Lines are colored alone: a construct spanning lines (a Python docstring)
may be colored as code, which costs nothing but a color.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Callable

from rich.style import Style
from rich.syntax import ANSI_DARK

Pieces = list[tuple[str, Style]]
Highlighter = Callable[[str], Pieces]

_LEXERS = {"source": "python", "llir": "llvm", "ptx": "ptx", "amdgcn": "gas", "json": "json", "sass": "gas"}

_MLIR = re.compile(r"""
    (?P<comment>//.*$)
  | (?P<string>"(?:[^"\\]|\\.)*")
  | (?P<op>\b(?:tt|ttg|ttng|triton_gpu|triton_nvidia_gpu|amdgpu|tritonamdgpu|arith|scf|math|cf|gpu|llvm|ub|nvvm|rocdl)
        \.[A-Za-z_][\w.]*)
  | (?P<value>%[\w.$#-]+)
  | (?P<alias>\#[\w.$-]+)
  | (?P<symbol>@[\w.$-]+)
  | (?P<type>\b(?:tensor|memdesc|ptr|i1|i8|i16|i32|i64|f16|bf16|f32|f64|index)\b)
  | (?P<number>\b\d+(?:\.\d+)?\b)
""", re.X)
_MLIR_STYLES = {"comment": Style(color="grey50", italic=True), "string": Style(color="green"),
                "op": Style(color="cyan", bold=True), "value": Style(color="yellow"),
                "alias": Style(color="magenta"), "symbol": Style(color="blue", bold=True),
                "type": Style(color="green"), "number": Style(color="bright_blue")}


def highlighter_for(stage: str) -> Highlighter | None:
    if stage in ("ttir", "ttgir"):
        return _mlir_pieces
    name = _LEXERS.get(stage)
    return _pygments(name) if name else None


def _mlir_pieces(line: str) -> Pieces:
    out: Pieces = []
    at = 0
    for m in _MLIR.finditer(line):
        if m.start() > at:
            out.append((line[at:m.start()], Style()))
        out.append((m.group(), _MLIR_STYLES[m.lastgroup]))
        at = m.end()
    if at < len(line):
        out.append((line[at:], Style()))
    return out


@lru_cache(maxsize=None)
def _pygments(name: str) -> Highlighter:
    from pygments.lexers import get_lexer_by_name

    lexer = get_lexer_by_name(name, stripnl=False, ensurenl=False)

    def pieces(line: str) -> Pieces:
        out: Pieces = []
        for token, text in lexer.get_tokens(line):
            if text:
                out.append((text, _style(token)))
        return out

    return pieces


def _style(token) -> Style:
    while token is not None:
        if token in ANSI_DARK:
            return ANSI_DARK[token]
        token = token.parent
    return Style()
