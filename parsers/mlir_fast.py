"""A fast reader of Triton's MLIR text: the same token tree as the lark reader, ~10x sooner.

parsers/mlir_lark.py is the reference: lark's basic lexer, MlirPostLexer and an LALR parse
of mlir.lark, at several microseconds a token (Token objects, generators, parse tables):
most of a cold scan. This module does the three steps in one loop: one compiled regex for
lark's terminals, MlirPostLexer's decisions (region `{` or attribute dict, which newline
ends a statement, wrapped lines), and a stack of open brackets whose closers build the
nodes of parsers/mlir_tree.py.

It reads only what it reads exactly as lark does. Anything else (a bracket MlirPostLexer
would repair, a location the grammar rejects, a character no terminal matches) makes
read_statements return None, and the caller hands the text to lark, whose repairs, retries
and errors stay the only ones. It never imports lark (~90 ms).
"""

from __future__ import annotations

import gc
import re

from .mlir_tree import Group, LineOp, LocNode, Param, RegionNode, Statement, Tok

# MlirPostLexer's wrapped-line rules (parsers/mlir_lark.py uses these too): a newline after
# one of the first does not end the statement, nor one before one of the second or before
# a keyword (`iter_args`, `default`, `partition0`: never an op name, which has a dialect).
CONTINUES_AT_LINE_END = frozenset({"COLON", "COMMA", "ARROW", "EQUAL", "STAR"})
CONTINUES_FROM_LINE_START = frozenset({"COLON", "ARROW", "LBRACE", "STAR"})


def is_keyword(word: str) -> bool:
    return "." not in word and word not in ("module", "func")


# The lark terminals _TOKEN is derived from, in the order lark's basic lexer tries them
# (-priority, -max width, -len(pattern), name; the first that matches wins). The tests check
# this against lark: change mlir.lark and _TOKEN must follow. Not listed: the ignored COMMENT
# and blanks, and the one-character string terminals, which lark folds into STRAY.
LARK_TERMINALS = (
    ("CALLSITE_OPEN", r"callsite\("), ("UNKNOWN", r"unknown(?=\))"), ("FUSED", r"fused(?=[<\[])"),
    ("LOC_OPEN", r"loc\("), ("PARAM_OPEN", r"[#!]?[A-Za-z_][\w$.]*<"), ("DIMS", r"(\d+|\?)(x(\d+|\?))*x(?=[A-Za-z!<])"),
    ("HEX", r"0x[0-9A-Fa-f]+\b"), ("ARROW", r"\->"), ("FLOAT", r"[-+]?\d+\.\d*([eE][-+]?\d+)?|[-+]?\d+[eE][-+]?\d+"),
    ("SYMBOL", r'@[\w$.\-]+|@"[^"]*"'), ("VALUE", r"%[\w$.\-]+(#\d+)?"), ("BARE_ID", r"[A-Za-z_][\w$.]*"),
    ("STRING", '"(\\\\.|[^"\\\\\n])*"'), ("_NL", "(\r?\n[\t \x0c]*)+"), ("BLOCK_ID", r"\^[\w$.\-]+"),
    ("ATTR_REF", r"#[\w$.\-]+"), ("TYPE_REF", r"![\w$.\-]+"), ("INT", r"[-+]?\d+"), ("STRAY", r"[^\s]"),
)
# The same tokens, faster. Python's regex engine skips an alternative whose first opcode is
# a literal or a character set that cannot match, but enters one that starts with a group,
# as lark's `(?P<NAME>...)` do; here each alternative starts with a character and ends with
# an empty group naming its token (m.lastgroup is the last group closed). Alternatives that
# can start with the same character keep lark's order; others go by frequency. A match
# starts with the blanks before its token (group 1 ends where the token starts); finditer
# would skip any other whitespace, so read_statements declines text that has any.
#
# Per token the Python loop costs more than the regex, so the commonest sequences are read
# in one match, each as lark's terminals split it (tests compare whole trees with lark's):
#   X_P        VALUE, ATTR_REF, BARE_ID or INT and the `=`, `,` or `:` after it: `%a, `
#   RESULT_OP  `%x = tt.load `: VALUE EQUAL BARE_ID (a blank next: neither a PARAM_OPEN nor a
#              location keyword, which need `<`, `(`, `)` or `[` next)
#   SHAPED     `tensor<128x64xf16, #blocked>`: PARAM_OPEN DIMS? BARE_ID (COMMA ATTR_REF)?
#              RANGLE, or `!tt.ptr<f16>` (PARAM_OPEN BARE_ID RANGLE) for the element (that
#              starts with a letter or `!`, as DIMS's lookahead wants)
#   LOC        `loc(#loc3)`, `loc("x_ptr"(#loc))`, `loc("/k.py":7:24)` and the newlines after
#              it (a quarter of a TTGIR's tokens are in its locations); DEF_LOC: `#loc3 = ` too
# STRING, lark's `"(\\.|[^"\\\n])*"` unrolled: the regex engine takes a branch per escape, not per character
_STRING = r'"[^"\\\n]*+(?:\\.[^"\\\n]*+)*+"'
_EOL = r"(?:[\t \x0c]*+\n[\n\t \x0c]*+)?"
_LOCATION = rf'loc\((?:#[\w$.\-]+\)|{_STRING}(?:\(#[\w$.\-]+\)\)|:\d+:\d+\))){_EOL}'
# LINE_OP (read_statements(lines=True), for parse_mlir): a whole one-line op, `%x = op args {dict} : types
# (-> | to) type loc(#ref)` and the newlines after it, in one match; parsers/mlir_build.py reads its groups
# for the model (with LINE_OP0 below, ~90% of the ops of fixtures/caches and fixtures/real_world). It matches
# only text whose tokens hold no bracket but balanced `<...>`, `<{...}>` and `{...}`, no string, comment, `@`,
# `-` or location keyword: text the token-by-token reader never declines and reads as lark does.
_TYPE_CHARS = r"[\w$.#!?+ ,=:]"
_TYPE = (r"(?!to[ ,\n])[A-Za-z!][\w$.]*+(?:(?<!fused)<(?:" + _TYPE_CHARS + r"|(?<!fused)<(?:" + _TYPE_CHARS
         + r"|\{" + _TYPE_CHARS + r"*+\})*+>)*+>)?")
_ARG = r"(?>%[\w$.\-]+(?:#\d+)?|dense<[+\w.]+>|[A-Za-z_][\w$.]*+(?!\()|[-+]?\d+(?:\.\d*(?:[eE][-+]?\d+)?)?)"
_INT_ENTRY = r"[A-Za-z_][\w$.]* = -?\d+ : [A-Za-z_][\w$.]*"
_LINE_OP = (r" = (?P<l_op>[A-Za-z_][\w$.]*+)(?P<l_args>(?: " + _ARG + "(?:, " + _ARG
            + r")*+)?+)(?: (?P<l_dict>\{" + _INT_ENTRY + "(?:, " + _INT_ENTRY + r")*+\}))?+ : (?P<l_t1>" + _TYPE
            + ")(?P<l_trest>(?:, " + _TYPE + r")*+)(?: (?:->|to) (?P<l_rt>" + _TYPE
            + r"))?+ loc\((?P<l_loc>#[\w$.\-]++)\)[\t \x0c]*+\n[\n\t \x0c]*+(?P<LINE_OP>)")

# LINE_OP0: an op of no result (`scf.yield`, `tt.store`, `tt.return`), its name dotted (no keyword nor type
# is), its types optional: they are not read. Its operands are values only: tried at every dotted word, it
# must not scan on over a list of words (`[a.b, a.b, ...]`) from each of them.
_VALUE = r"%[\w$.\-]+(?:#\d+)?"
_LINE_OP0 = (r"(?P<n_args>(?: " + _VALUE + "(?:, " + _VALUE + r")*+)?+)(?: (?P<n_dict>\{" + _INT_ENTRY + "(?:, "
             + _INT_ENTRY + r")*+\}))?+(?: : " + _TYPE + "(?:, " + _TYPE + r")*+(?: (?:->|to) " + _TYPE
             + r")?+)?+ loc\((?P<n_loc>#[\w$.\-]++)\)[\t \x0c]*+\n[\n\t \x0c]*+(?P<LINE_OP0>)")


def _token_regex(lines: bool) -> re.Pattern:
    value = r"%[\w$.\-]+(?:#\d+)?(?:" + (_LINE_OP + "|" if lines else "") \
        + r"[\t \x0c]*+=[\t \x0c]*+[A-Za-z_][\w$.]*+(?=[\t \x0c])(?P<RESULT_OP>)" \
        + r"|[\t \x0c]*+[=,:](?P<VALUE_P>)|(?P<VALUE>))"
    return re.compile(r"[\t \x0c]*+()(?:" + "|".join(pattern + (f"(?P<{name}>)" if name else "") for name, pattern in (
        ("", value),
        ("LOC", _LOCATION), ("LOC_OPEN", r"loc\("),
        ("CALLSITE_OPEN", r"callsite\("), ("UNKNOWN", r"unknown(?=\))"), ("FUSED", r"fused(?=[<\[])"),
        ("", r"[A-Za-z_](?:" + (r"[\w$]*+\.[\w$.]*+" + _LINE_OP0 + "|" if lines else "")
             + r"[\w$.]*(?:[\t \x0c]*+[=,:](?P<BARE_P>)|<(?:(?P<dims>(?:\d+|\?)(?:x(?:\d+|\?))*x)?"
             r"(?:(?P<elem>[A-Za-z][\w$.]*)|(?P<ptr>![A-Za-z_][\w$.]*)<(?P<pointee>[A-Za-z][\w$.]*)>)"
             r"(?:,[\t \x0c]*+(?P<enc>#[\w$.\-]+))?>(?P<SHAPED>)|(?P<PARAM_OPEN>))|(?P<BARE_ID>)))"),
        ("DEF_LOC", r"#[\w$.\-]+[\t \x0c]*+=[\t \x0c]*+" + _LOCATION),
        ("", r"#(?:[A-Za-z_][\w$.]*<(?P<PARAM_REF>)|[\w$.\-]+(?:[\t \x0c]*+[=,:](?P<ATTR_P>)|(?P<ATTR_REF>)))"),
        ("DIMS", r"\d\d*(?:x(?:\d+|\?))*x(?=[A-Za-z!<])"), ("HEX", r"0x[0-9A-Fa-f]+\b"),
        ("", r"\d\d*(?:(?:\.\d*(?:[eE][-+]?\d+)?|[eE][-+]?\d+)(?P<FLOAT>)|[\t \x0c]*+[=,:](?P<INT_P>)|(?P<INT>))"),
        ("RANGLE", ">"), ("COMMA", ","), ("LBRACE", r"\{"), ("RBRACE", r"\}"), ("ARROW", r"\->"),
        ("_NL", "\n[\n\t \x0c]*"), ("COLON", ":"), ("EQUAL", "="), ("RPAR", r"\)"),
        ("LSQB", r"\["), ("RSQB", r"\]"), ("LPAR", r"\("), ("STRING", _STRING),
        ("", r"!(?:[A-Za-z_][\w$.]*<(?P<PARAM_TYPE>)|[\w$.\-]+(?P<TYPE_REF>))"),
        ("", r"[-+]\d\d*(?:(?:\.\d*(?:[eE][-+]?\d+)?|[eE][-+]?\d+)(?P<SIGNED_FLOAT>)|(?P<SIGNED_INT>))"),
        ("SYMBOL", r'@(?:[\w$.\-]+|"[^"]*")'), ("BLOCK_ID", r"\^[\w$.\-]+"),
        ("QMARK_DIMS", r"\?(?:x(?:\d+|\?))*x(?=[A-Za-z!<])"),
        ("QMARK", r"\?"), ("PLUS", r"\+"), ("STAR", r"\*"), ("LANGLE", "<"), ("COMMENT", r"//[^\n]*"),
        ("STRAY", r"[^\s]"),
    )) + ")")


_TOKEN, _TOKEN_LINES = _token_regex(False), _token_regex(True)
# The groups a SHAPED match's Param is built from, per regex (LINE_OP's groups come first in _TOKEN_LINES).
_SHAPED_GROUPS = {regex: tuple(regex.groupindex[name] for name in ("dims", "elem", "ptr", "pointee", "enc"))
                  for regex in (_TOKEN, _TOKEN_LINES)}
LINE_GROUPS = tuple(_TOKEN_LINES.groupindex[name] for name in ("l_op", "l_args", "l_dict", "l_t1", "l_trest",
                                                                "l_rt", "l_loc"))
LINE0_GROUPS = tuple(_TOKEN_LINES.groupindex[name] for name in ("n_args", "n_dict", "n_loc"))
LINE_OP0 = _TOKEN_LINES.groupindex["LINE_OP0"]
RENAMED = {"PARAM_REF": "PARAM_OPEN", "PARAM_TYPE": "PARAM_OPEN", "SIGNED_FLOAT": "FLOAT", "SIGNED_INT": "INT",
           "QMARK_DIMS": "DIMS"}
# Whitespace lark's lexer has no terminal for (outside comments and strings, where it may
# be harmless: lark then reads it all the same). In ASCII text, `in` is ~20x quicker.
_ODD_SPACE = re.compile(r"[^\S \t\x0c\n]")
_ODD_ASCII_SPACE = "\r\x0b\x1c\x1d\x1e\x1f"


def odd_space(text: str) -> bool:
    if text.isascii():
        return any(ch in text for ch in _ODD_ASCII_SPACE)
    return _ODD_SPACE.search(text) is not None


# Leaves named as lark names them (FUSED and UNKNOWN only inside `loc(`; SYMBOL apart: `@"..."`
# may hold a newline; RENAMED ones apart).
_LEAVES = frozenset({"VALUE", "BLOCK_ID", "BARE_ID", "ATTR_REF", "TYPE_REF", "INT", "FLOAT", "HEX", "STRING", "DIMS",
                     "COMMA", "COLON", "EQUAL", "ARROW", "STAR", "PLUS", "QMARK", "STRAY", "FUSED", "UNKNOWN"})
# opener -> (its closer, the frame's kind); a frame: (closer, kind, enclosing items, start, line, extra)
_OPENERS = {"LPAR": ("RPAR", "("), "LSQB": ("RSQB", "["), "LANGLE": ("RANGLE", "<"), "PARAM_OPEN": ("RANGLE", "param"),
            "PARAM_REF": ("RANGLE", "param"), "PARAM_TYPE": ("RANGLE", "param"), "LOC_OPEN": ("RPAR", "loc"),
            "CALLSITE_OPEN": ("RPAR", "callsite")}
_CLOSERS = frozenset({"RPAR", "RSQB", "RANGLE", "RBRACE"})
_PAIRS = {"VALUE_P": "VALUE", "ATTR_P": "ATTR_REF", "BARE_P": "BARE_ID", "INT_P": "INT"}
_PUNCT = {"=": "EQUAL", ",": "COMMA", ":": "COLON"}
# Tokens that need more than a place in the tree (or no place).
_SPECIAL = frozenset({"_NL", "COMMENT", "LBRACE", "RBRACE", "SYMBOL", "FUSED", "UNKNOWN"})
# Tokens that, first on a line, always end the statement above (MlirPostLexer's join rules).
_NEW_STATEMENT = frozenset(_TOKEN_LINES.groupindex) - _SPECIAL - CONTINUES_FROM_LINE_START - {"BARE_ID", "BARE_P"}


# Triton's MLIR nests brackets and regions at most 8 deep in fixtures/ (dumps included). The
# tree's readers (parsers/mlir_build.py, mlir_syntax.py) recurse per level: 10,000 `(` in a
# broken file would overflow Python's stack, so deeper text is declined here and rejected by lark.
MAX_NESTING = 128


class _Decline(Exception):
    """Input the lark reader must read: it repairs, retries or rejects it."""




def read_statements(text: str, lines: bool = False, begin: int = 0, line: int = 1) -> list[Statement] | None:
    """The statements lark's reader would build for `text`, or None where only lark can tell.

    lines: one-line ops as LineOp nodes (parsers/mlir_build.py builds the model from them, not lark).
    begin, line: where to start (a line's start, after statements read otherwise) and that line's number."""
    collecting = gc.isenabled()
    gc.disable()  # the tree has no cycles: collections while it grows would only walk it again and again
    try:
        if odd_space(text):
            raise _Decline
        return _read(text, _TOKEN_LINES if lines else _TOKEN, begin, None, line)
    except Exception:  # _Decline, or input this reader did not foresee: lark reads it, as it always did
        return None
    finally:
        if collecting:
            gc.enable()


def read_items(text: str, start: int, end: int, line: int = 1) -> list:
    """The items of text[start:end], part of one line of `text` read by read_statements: a LineOp's type."""
    statements = _read(text, _TOKEN, start, end, line)
    if len(statements) != 1:
        raise ValueError(f"not one statement: {text[start:end]!r}")
    return statements[0].items


def _line_tokens(text: str, start: int, close: int, line: int) -> list:
    """The items of a LINE_OP up to its location's `)` at `close`, read token by token."""
    return read_items(text, start, close + 1, line)


# long, complex: lexer, post-lexer and bracket stack in one loop with its state in locals: ~10x lark (docstring)
def _read(text: str, token: re.Pattern, begin: int = 0, stop: int | None = None, line: int = 1) -> list[Statement]:
    dims_group, elem_group, ptr_group, pointee_group, enc_group = _SHAPED_GROUPS[token]
    line_loc, line0_loc = LINE_GROUPS[-1], LINE0_GROUPS[-1]
    leaves, openers, closers, special, pairs, punct, locations, line_start = \
        _LEAVES, _OPENERS, _CLOSERS, _SPECIAL, _PAIRS, _PUNCT, ("LOC", "DEF_LOC"), _NEW_STATEMENT
    at_end, from_start = CONTINUES_AT_LINE_END, CONTINUES_FROM_LINE_START
    root = stmts = []  # the statements of the region being read
    cur: list = []  # the items of the innermost open statement or bracket
    stack: list[tuple] = []  # open brackets and regions, innermost last
    pending = None  # (start, line) of a `{`: a region if a newline follows it, else a dict
    held = False  # a newline that ends the statement unless the next line continues it
    region_nl = False  # a region was just opened: the grammar's `REGION_OPEN _NL` is next
    last = None  # the type of the last token the post-lexer passed on (not a dict's `{`)
    head = None  # the first token type of the current statement (None: none yet)
    in_loc = 0  # open `loc(`s: only there may `callsite(`, `fused`, `unknown` appear
    alert = True  # pending, held, or the first token (whose type is the head): look closer
    for m in token.finditer(text, begin, len(text) if stop is None else stop):
        kind = m.lastgroup
        start, pos = m.end(1), m.end()
        if held and (kind == "LINE_OP" or kind == "LINE_OP0") and len(cur) == 1 and type(cur[0]) is LineOp \
                and not region_nl:  # the usual: a one-line op after another, which it ends, as below at once
            stmts.append(cur[0])
            close = m.end(line_loc if kind == "LINE_OP" else line0_loc)
            cur, head = [LineOp(m, start, close, line)], kind  # held and alert stay set, `last` "RPAR"
            line += text.count("\n", close, pos)
            continue
        if alert or kind in special:  # MlirPostLexer's decisions; most tokens need none
            if held and kind in line_start:  # the usual: a line that starts a statement ends the one above
                _end_statement(cur, stmts, region_nl)
                cur, region_nl, head, held, alert = [], False, kind, False, False
            else:
                if kind == "COMMENT":  # lark drops comments before MlirPostLexer sees a token
                    continue
                if pending is not None:
                    if len(stack) >= MAX_NESTING:
                        raise _Decline
                    if kind == "_NL":
                        stack.append(("REGION_CLOSE", "region", cur, pending[0], pending[1], stmts))
                        stmts, cur, last, head, region_nl = [], [], "REGION_OPEN", None, True
                    else:
                        stack.append(("RBRACE", "{", cur, pending[0], pending[1], None))
                        cur = []
                    pending = None
                if kind == "_NL":  # held if at region level, after a token that does not continue the line
                    if not held and last is not None and last != "_NL" and (last not in at_end or head == "BLOCK_ID") \
                            and (not stack or stack[-1][0] == "REGION_CLOSE"):  # `^bb0(...):` ends a block label
                        held = alert = True
                    line += text.count("\n", start, pos)
                    continue
                if held:
                    held = False
                    word = text[start:pos].rstrip(" \t\x0c=,:") if kind == "BARE_ID" or kind == "BARE_P" else ""
                    if last == "REGION_OPEN" or not (kind in from_start or (word and is_keyword(word))):
                        _end_statement(cur, stmts, region_nl)
                        cur, region_nl, last, head = [], False, "_NL", None
                if kind == "LBRACE":
                    pending, alert = (start, line), True
                    continue  # MlirPostLexer does not make a dict's `{` its `last`, nor a statement's head
                alert = False
                if head is None:
                    head = kind
                if kind == "RBRACE" and stack and stack[-1][0] == "REGION_CLOSE":
                    if last != "_NL":  # MlirPostLexer ends the last statement before the `}`
                        _end_statement(cur, stmts, region_nl)
                        region_nl = False
                    _, _, outer, first, first_line, outer_stmts = stack.pop()
                    node = RegionNode(stmts, first, pos, first_line)
                    stmts, cur, last = outer_stmts, outer, "REGION_CLOSE"
                    cur.append(node)
                    continue
                if kind == "SYMBOL":
                    value = text[start:pos]
                    cur.append(Tok(kind, value, start, pos, line))
                    line += value.count("\n")  # `@"..."` may hold a newline
                    last = kind
                    continue
                if (kind == "FUSED" or kind == "UNKNOWN") and not in_loc:
                    raise _Decline  # a location keyword outside `loc(`: the grammar rejects it
        if kind in leaves:
            cur.append(Tok(kind, text[start:pos], start, pos, line))
            last = kind
            continue
        if kind in pairs:  # `%x = `, `%a, `, `axis = `, `1 : `
            value = text[start:pos - 1].rstrip(" \t\x0c")
            cur.append(Tok(pairs[kind], value, start, start + len(value), line))
            value = text[pos - 1]
            last = punct[value]
            cur.append(Tok(last, value, pos - 1, pos, line))
            continue
        if kind in closers:
            if not stack or stack[-1][0] != kind:
                raise _Decline  # a stray closer: MlirPostLexer keeps it as text and reports it
            _, frame, outer, first, first_line, extra = stack.pop()
            if frame == "param":
                node = Param(extra, cur, first, pos, first_line)
            elif frame == "loc":
                in_loc -= 1
                node, used = _loc(cur, 0)
                if used != len(cur):
                    raise _Decline
            else:  # a callsite's group is read by _loc, the only place it may be
                node = Group(frame, cur, first, pos, first_line)
            cur = outer
            cur.append(node)
        elif kind in locations:
            if kind == "DEF_LOC":  # `#loc3 = `: ATTR_REF EQUAL
                equal = text.index("=", start)
                value = text[start:equal].rstrip(" \t\x0c")
                cur.append(Tok("ATTR_REF", value, start, start + len(value), line))
                cur.append(Tok("EQUAL", "=", equal, equal + 1, line))
                start = text.index("(", equal) - 3
            close = text.rindex(")", start, pos)
            if text[start + 4] == "#":  # loc(#loc3)
                cur.append(LocNode("ref", (text[start + 4:close],), start + 4, close, line))
            else:
                cur.append(_location(text, start + 4, close, line))
            last = "RPAR"
            if pos > close + 1:  # and the newlines after it: an _NL, as above
                if not stack or stack[-1][0] == "REGION_CLOSE":
                    held = alert = True
                line += text.count("\n", close, pos)
            continue
        elif kind == "LINE_OP" or kind == "LINE_OP0":  # a whole one-line op, and the newlines after it
            close = m.end(line_loc if kind == "LINE_OP" else line0_loc)
            if cur or (stack and stack[-1][0] != "REGION_CLOSE"):  # not first on its line at region level
                cur.extend(_line_tokens(text, start, close, line))
            else:
                cur.append(LineOp(m, start, close, line))
            if not stack or stack[-1][0] == "REGION_CLOSE":  # as after a LOC's newlines
                held = alert = True
            line += text.count("\n", close, pos)
            last = "RPAR"
            continue
        elif kind == "RESULT_OP":  # `%x = tt.load`
            equal = text.index("=", start)
            value = text[start:equal].rstrip(" \t\x0c")
            cur.append(Tok("VALUE", value, start, start + len(value), line))
            cur.append(Tok("EQUAL", "=", equal, equal + 1, line))
            value = text[equal + 1:pos].lstrip(" \t\x0c")
            cur.append(Tok("BARE_ID", value, pos - len(value), pos, line))
            kind = "BARE_ID"
        elif kind == "SHAPED":
            (dims_start, dims_end), (elem_start, elem_end) = m.span(dims_group), m.span(elem_group)
            items = [Tok("DIMS", text[dims_start:dims_end], dims_start, dims_end, line)] if dims_start >= 0 else []
            if elem_start >= 0:
                items.append(Tok("BARE_ID", text[elem_start:elem_end], elem_start, elem_end, line))
            else:  # `!tt.ptr<f16>`
                (elem_start, ptr_end), (pointee_start, elem_end) = m.span(ptr_group), m.span(pointee_group)
                pointee = Tok("BARE_ID", text[pointee_start:elem_end], pointee_start, elem_end, line)
                elem_end += 1
                items.append(Param(text[elem_start:ptr_end], [pointee], elem_start, elem_end, line))
            enc_start, enc_end = m.span(enc_group)
            if enc_start >= 0:
                items.append(Tok("COMMA", ",", elem_end, elem_end + 1, line))
                items.append(Tok("ATTR_REF", text[enc_start:enc_end], enc_start, enc_end, line))
            head_end = (dims_start if dims_start >= 0 else elem_start) - 1
            cur.append(Param(text[start:head_end], items, start, pos, line))
            kind = "RANGLE"
        elif kind in openers:
            closer, frame = openers[kind]
            extra = None
            if frame == "loc":
                in_loc += 1
            elif frame == "param":
                extra = text[start:pos - 1]
            elif frame == "callsite" and not in_loc:
                raise _Decline
            if len(stack) >= MAX_NESTING:
                raise _Decline
            stack.append((closer, frame, cur, start, line, extra))
            cur = []
        elif kind in RENAMED:  # SIGNED_INT, SIGNED_FLOAT, QMARK_DIMS
            kind = RENAMED[kind]
            cur.append(Tok(kind, text[start:pos], start, pos, line))
        else:
            raise _Decline
        last = kind
    if held:
        _end_statement(cur, stmts, region_nl)
        cur = []
    if pending is not None or stack:
        raise _Decline  # text ends inside brackets or regions: MlirPostLexer closes and reports them
    if cur:
        _end_statement(cur, stmts, False)
    return root


def _location(text: str, start: int, end: int, line: int) -> LocNode:
    """A LOC match's node, but `loc(#loc3)`: its text runs from `start` (after `loc(`) to its `)` at `end`."""
    if text[end - 1] == ")":  # "x_ptr"(#loc)
        ref_start = text.rindex("(", start, end) + 1
        ref = LocNode("ref", (text[ref_start:end - 1],), ref_start, end - 1, line)
        return LocNode("name", (text[start + 1:ref_start - 2], ref), start, end, line)
    col = text.rindex(":", start, end)  # "/k.py":7:24 (a file name may hold a `:`; the numbers do not)
    row = text.rindex(":", start, col)
    return LocNode("file", (text[start + 1:row - 1], int(text[row + 1:col]), int(text[col + 1:end])), start, end, line)


def _end_statement(items: list, stmts: list, region_nl: bool) -> None:
    """The post-lexer's `_NL`: the end of the statement in `items`, or the one after `REGION_OPEN`."""
    if region_nl or not items:
        if items or not region_nl:
            raise _Decline  # two newlines in a row, or none after `REGION_OPEN`: not in the grammar
        return
    first = items[0]
    if type(first) is LineOp:
        if len(items) == 1:
            stmts.append(first)
            return
        items[0:1] = _line_tokens(first.match.string, first.start, first.end, first.line)  # a line continues it
        first = items[0]
    end = items[-1]
    start = first.start_pos if type(first) is Tok else first.start
    stmts.append(Statement(items, start, end.end_pos if type(end) is Tok else end.end, first.line))


# -- locations: mlir.lark's `_loc` alternatives, read from a `loc(`'s items -----------------------


def _tok(items: list, i: int, kind: str) -> Tok:
    item = items[i] if i < len(items) else None
    if type(item) is not Tok or item.type != kind:
        raise _Decline
    return item


def _is(item, kind: str) -> bool:
    return type(item) is Tok and item.type == kind


def _loc(items: list, i: int) -> tuple[LocNode, int]:
    """The location that starts at items[i], and the index after it."""
    item = items[i] if i < len(items) else None
    if type(item) is Group and item.kind == "callsite":  # loc_callsite: CALLSITE_OPEN _loc BARE_ID _loc RPAR
        callee, j = _loc(item.items, 0)
        if callee.kind == "file":  # LALR shifts the BARE_ID into loc_file's range: lark rejects it
            raise _Decline
        _tok(item.items, j, "BARE_ID")
        caller, j = _loc(item.items, j + 1)
        if j != len(item.items):
            raise _Decline
        return LocNode("callsite", (callee, caller), item.start, item.end, item.line), i + 1
    if type(item) is not Tok:
        raise _Decline
    kind, nxt = item.type, items[i + 1] if i + 1 < len(items) else None
    if kind == "ATTR_REF":
        return LocNode("ref", (item.value,), item.start_pos, item.end_pos, item.line), i + 1
    if kind == "UNKNOWN":
        return LocNode("unknown", (), item.start_pos, item.end_pos, item.line), i + 1
    if kind == "STRING" and _is(nxt, "COLON"):
        return _loc_file(items, i)
    if kind == "STRING":  # loc_name: STRING (LPAR _loc RPAR)?
        if type(nxt) is Group and nxt.kind == "(":
            inner, j = _loc(nxt.items, 0)
            if j != len(nxt.items):
                raise _Decline
            return LocNode("name", (item.value[1:-1], inner), item.start_pos, nxt.end, item.line), i + 2
        return LocNode("name", (item.value[1:-1], None), item.start_pos, item.end_pos, item.line), i + 1
    if kind == "FUSED":  # loc_fused: FUSED angle? LSQB _loc (COMMA _loc)* RSQB (`fused` is glued to `<` or `[`)
        j = i + 1
        if type(nxt) is Group and nxt.kind == "<":
            if not _plain(nxt.items):
                raise _Decline
            j += 1
        bracket = items[j] if j < len(items) else None
        if type(bracket) is not Group or bracket.kind != "[":
            raise _Decline
        parts, k = [], 0
        while True:
            part, k = _loc(bracket.items, k)
            parts.append(part)
            if k == len(bracket.items):
                break
            _tok(bracket.items, k, "COMMA")
            k += 1
        return LocNode("fused", tuple(parts), item.start_pos, bracket.end, item.line), j + 1
    raise _Decline


def _loc_file(items: list, i: int) -> tuple[LocNode, int]:
    """loc_file: STRING COLON INT COLON INT (BARE_ID COLON? INT? (COLON INT)?)?, read as LALR shifts."""
    file = items[i]
    _tok(items, i + 1, "COLON")
    row, _ = _tok(items, i + 2, "INT"), _tok(items, i + 3, "COLON")
    col = _tok(items, i + 4, "INT")
    j = i + 5
    if j < len(items) and _is(items[j], "BARE_ID"):  # a range: `to :30`, `to 8:30`
        j += 1
        for kind in ("COLON", "INT"):
            if j < len(items) and _is(items[j], kind):
                j += 1
        if j < len(items) and _is(items[j], "COLON"):
            _tok(items, j + 1, "INT")
            j += 2
    return LocNode("file", (file.value[1:-1], int(row.value), int(col.value)), file.start_pos, items[j - 1].end_pos,
                   file.line), j


def _plain(items: list) -> bool:
    """Whether items hold no location keyword outside a location: what `angle: item*` accepts."""
    for item in items:
        if type(item) is Tok:
            if item.type == "FUSED" or item.type == "UNKNOWN":
                return False
        elif type(item) is Group:
            if item.kind == "callsite" or not _plain(item.items):
                return False
        elif type(item) is Param:
            if not _plain(item.items):
                return False
        elif type(item) is not LocNode:
            return False
    return True


__all__ = ["read_statements", "read_items", "LINE_GROUPS", "LINE0_GROUPS", "LINE_OP0", "LARK_TERMINALS", "RENAMED",
           "CONTINUES_AT_LINE_END", "CONTINUES_FROM_LINE_START", "is_keyword"]
