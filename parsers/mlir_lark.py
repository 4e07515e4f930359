"""The lark reader of Triton's MLIR text: LALR, basic lexer, tree-less.

The reference for parsers/mlir_fast.py, and its fallback for input the fast reader leaves
alone (bracket repairs, a wrapped-line guess to retry, anything the grammar rejects).
Imported only then: importing lark costs ~90 ms. The grammar (mlir.lark, shipped as
package data) yields a token tree; the transformer runs inside the parser, so no lark
Tree is ever built.
"""

from __future__ import annotations

import threading
from typing import Iterator

from lark import Lark, Token, Transformer
from lark.indenter import PostLex

from irscope.model.kernel import Problem

from .mlir_fast import CONTINUES_AT_LINE_END as _CONTINUES_AT_LINE_END
from .mlir_fast import CONTINUES_FROM_LINE_START as _CONTINUES_FROM_LINE_START
from .mlir_fast import MAX_NESTING
from .mlir_fast import is_keyword as _is_keyword
from .mlir_tree import TOKEN_CLASSES, Group, LocNode, Param, RegionNode, Statement, span

TOKEN_CLASSES.add(Token)

_CLOSER = {"LPAR": "RPAR", "LSQB": "RSQB", "LANGLE": "RANGLE", "PARAM_OPEN": "RANGLE",
           "LBRACE": "RBRACE", "LOC_OPEN": "RPAR", "CALLSITE_OPEN": "RPAR"}
_TEXT = {"RPAR": ")", "RSQB": "]", "RANGLE": ">", "RBRACE": "}", "REGION_CLOSE": "}"}


class TooDeep(Exception):
    """Brackets or regions nested deeper than MAX_NESTING: not compiler output."""

    def __init__(self, line: int) -> None:
        super().__init__(line)
        self.line = line


class MlirPostLexer(PostLex):
    """Newlines end statements only at region level; brackets are always balanced.

    A `{` that is the last token on its line opens a region (MLIR prints regions that
    way); any other `{` is an attribute dict. A closer that does not match the open
    bracket becomes a STRAY item; brackets still open at the end of the text (a
    truncated file) are closed, and each repair is reported through `problems` as
    (line, message, severity): a truncation is an error (what was cut off is lost), a
    stray closer a warning.
    """

    always_accept = ("_NL",)

    def __init__(self) -> None:
        self.problems: list[tuple[int, str, str]] = []
        self.join_lines = True  # off for the retry when a wrapped-line guess went wrong

    def _joins(self, tok: Token, kind: str, last: Token | None) -> bool:
        """Whether the line that starts with `tok` continues the op on the held line above."""
        return self.join_lines and last is not None and last.type != "REGION_OPEN" and (
            kind in _CONTINUES_FROM_LINE_START or (kind == "BARE_ID" and _is_keyword(tok.value)))

    def _bracket(self, tok: Token, kind: str, stack: list) -> Token:
        """`tok` as the parser gets it, its bracket pushed or popped: a region's `}`, or STRAY when unmatched."""
        if kind in _CLOSER:
            stack.append((_CLOSER[kind], tok))
        elif kind == "RBRACE" and stack and stack[-1][0] == "REGION_CLOSE":
            stack.pop()
            tok = Token.new_borrow_pos("REGION_CLOSE", "}", tok)
        elif kind in ("RPAR", "RSQB", "RANGLE", "RBRACE"):
            if stack and stack[-1][0] == kind:
                stack.pop()
            else:
                self.problems.append((tok.line, f"unmatched {tok.value!r} kept as text", "warning"))
                tok = Token.new_borrow_pos("STRAY", tok.value, tok)
        return tok

    def _at_the_end(self, stack: list, pending_brace: Token | None, held_newline: Token | None,
                    last: Token | None) -> Iterator[Token]:
        """What the stream's end leaves to yield: the held newline, the undecided `{`, a closer per open bracket."""
        if held_newline is not None:
            last = held_newline
            yield held_newline
        if pending_brace is not None:
            stack.append(("RBRACE", pending_brace))
            last = pending_brace
            yield pending_brace
        if stack:
            opener = stack[0][1]
            self.problems.append((opener.line, f"text ends inside {len(stack)} open bracket(s) or region(s); "
                                               f"the outermost opened here (truncated file?)", "error"))
        for closer, opener in reversed(stack):
            if closer == "REGION_CLOSE" and last is not None and last.type != "_NL":
                yield Token.new_borrow_pos("_NL", "\n", last)
            last = Token.new_borrow_pos(closer, _TEXT[closer], last or opener)
            yield last

    def process(self, stream: Iterator[Token]) -> Iterator[Token]:
        self.problems = []
        stack: list[tuple[str, Token]] = []  # (closer type, opening token)
        pending_brace: Token | None = None
        held_newline: Token | None = None
        last: Token | None = None
        head = None  # the first token type of the current statement
        for tok in stream:
            kind = tok.type
            if len(stack) >= MAX_NESTING:
                raise TooDeep(tok.line)
            if pending_brace is not None:
                # Decide what the previous `{` was now that we see what follows it.
                if kind == "_NL":
                    stack.append(("REGION_CLOSE", pending_brace))
                    last = Token.new_borrow_pos("REGION_OPEN", "{", pending_brace)
                    yield last
                else:
                    stack.append(("RBRACE", pending_brace))
                    yield pending_brace
                pending_brace = None
            if held_newline is not None and kind == "_NL":
                continue  # blank or comment-only lines between a wrapped op's lines
            if held_newline is not None:
                # A line that starts with `:`, `->`, `*`, `{` or a keyword (`iter_args`, `default`,
                # `partition0`: never an op name, which has a dialect prefix) continues the op
                # above; so does one after a line ending in `:` `,` `->` `=`. Triton prints
                # warp_specialize's regions that way, and hand-written lit tests wrap long ops.
                if not self._joins(tok, kind, last):
                    last = held_newline
                    yield held_newline
                held_newline = None
            if kind == "_NL":
                if (not stack or stack[-1][0] == "REGION_CLOSE") and last is not None and last.type != "_NL" \
                        and (not self.join_lines or last.type not in _CONTINUES_AT_LINE_END
                             or head == "BLOCK_ID"):  # `^bb0(...):` ends a block label
                    held_newline = tok
                continue
            if last is None or last.type in ("_NL", "REGION_OPEN"):
                head = kind
            if kind == "LBRACE":
                pending_brace = tok
                continue
            closes_region = kind == "RBRACE" and stack and stack[-1][0] == "REGION_CLOSE"
            if closes_region and last is not None and last.type != "_NL":  # a region's `}` ends its last line
                yield Token.new_borrow_pos("_NL", "\n", tok)
            tok = self._bracket(tok, kind, stack)
            last = tok
            yield tok
        yield from self._at_the_end(stack, pending_brace, held_newline, last)


def _group(kind: str):
    def build(self, children):
        first, last = children[0], children[-1]
        return Group(kind, children[1:-1], first.start_pos, last.end_pos, first.line)
    return build


class _TreeBuilder(Transformer):
    """Runs inside the LALR parser: each rule becomes a slotted node, never a Tree."""

    paren = _group("(")
    bracket = _group("[")
    angle = _group("<")
    brace = _group("{")

    def param(self, children):
        head = children[0]
        return Param(head.value[:-1], children[1:-1], head.start_pos, children[-1].end_pos, head.line)

    def region(self, children):
        first, last = children[0], children[-1]
        return RegionNode(children[1:-1], first.start_pos, last.end_pos, first.line)

    def statement(self, children):
        start, _ = span(children[0])
        _, end = span(children[-1])
        return Statement(children, start, end, children[0].line)

    def start(self, children):
        return children

    def location(self, children):
        return children[1]

    def loc_file(self, children):
        file, line, col = children[0], children[2], children[4]
        return LocNode("file", (file.value[1:-1], int(line), int(col)), file.start_pos, children[-1].end_pos,
                       file.line)

    def loc_ref(self, children):
        (ref,) = children
        return LocNode("ref", (ref.value,), ref.start_pos, ref.end_pos, ref.line)

    def loc_name(self, children):
        name = children[0]
        inner = children[2] if len(children) > 1 else None
        return LocNode("name", (name.value[1:-1], inner), name.start_pos, children[-1].end_pos, name.line)

    def loc_callsite(self, children):
        head, callee, _at, caller = children[0], children[1], children[2], children[3]
        return LocNode("callsite", (callee, caller), head.start_pos, children[-1].end_pos, head.line)

    def loc_fused(self, children):
        head = children[0]
        parts = tuple(c for c in children if isinstance(c, LocNode))
        return LocNode("fused", parts, head.start_pos, children[-1].end_pos, head.line)

    def loc_unknown(self, children):
        (tok,) = children
        return LocNode("unknown", (), tok.start_pos, tok.end_pos, tok.line)


_per_thread = threading.local()


def _parser() -> tuple[Lark, MlirPostLexer]:
    """One parser per thread: the post-lexer keeps the repairs of the parse in progress."""
    built = getattr(_per_thread, "parser", None)
    if built is None:
        postlex = MlirPostLexer()
        lark = Lark.open("mlir.lark", rel_to=__file__, parser="lalr", lexer="basic",
                         transformer=_TreeBuilder(), postlex=postlex, maybe_placeholders=False,
                         propagate_positions=False)
        built = _per_thread.parser = (lark, postlex)
    return built


def parse_statements(text: str, path: str) -> tuple[list[Statement], list[Problem]]:
    """The token tree of a file, and the repairs the post-lexer made to it."""
    from lark.exceptions import UnexpectedInput

    lark, postlex = _parser()
    try:
        try:
            statements = lark.parse(text)
        except UnexpectedInput:  # a wrapped-line guess joined what it should not: read lines as printed
            postlex.join_lines = False
            statements = lark.parse(text)
    except UnexpectedInput as exc:  # the grammar accepts any balanced input; keep the promise anyway
        line = getattr(exc, "line", None)
        return [], [Problem(path, f"MLIR text could not be parsed: {str(exc).splitlines()[0]}", line)]
    except TooDeep as exc:
        return [], [Problem(path, f"brackets or regions nested more than {MAX_NESTING} deep: not compiler output",
                            exc.line)]
    finally:
        postlex.join_lines = True
    problems = [Problem(path, message, line, severity) for line, message, severity in postlex.problems]
    return statements, problems


__all__ = ["parse_statements", "MlirPostLexer"]
