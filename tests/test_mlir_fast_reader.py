"""The fast MLIR reader (parsers/mlir_fast.py) against lark's (parsers/mlir_lark.py), the reference.

Over every MLIR text of the repository (fixture TTIR/TTGIR, MLIR_ENABLE_DUMP sections, the
malformed inputs) the fast reader builds lark's tree exactly, or declines and lark reads
the text as before. Mutations of real files (lines joined, wrapped, commented out, cut)
exercise MlirPostLexer's newline, brace and repair rules, which well-formed files barely do.
"""

from __future__ import annotations

import dataclasses
import random
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import pytest
from conftest import FIXTURES, REPO

from irscope.parsers.mlir_dump import read_dump
from irscope.parsers.mlir_fast import LARK_TERMINALS, read_statements
from irscope.parsers.mlir_parser import parse_mlir, parse_statements
from irscope.parsers.mlir_tree import Group, LocNode, Param, RegionNode, Statement

IR_FILES = sorted(p for root in (FIXTURES, REPO / "tests") for pattern in ("*.ttir", "*.ttgir")
                  for p in root.rglob(pattern))
MALFORMED = sorted(p for p in (REPO / "tests" / "malformed").iterdir() if p.is_file())
# Texts the fast reader leaves to lark, and why. Every well-formed text of the repository
# is read by the fast reader; only malformed ones may be here.
DECLINED = {
    "malformed_unknown_lines.amdgcn": "`[unclosed`: lark closes the bracket at the end and reports it",
}
# Dump sections above this size are 15 LLVM-dialect modules of 0.5-8 MB, 28 MB in all, that
# take lark minutes: the fast reader must read them; the trees are compared below it.
LARK_COMPARED_MAX = 200_000


@lru_cache(maxsize=None)
def dump_sections() -> dict[str, str]:
    """Every distinct section of every MLIR_ENABLE_DUMP fixture, by `dump:header line:pass`."""
    out: dict[str, str] = {}
    seen: set[str] = set()
    for path in sorted((FIXTURES / "dumps").glob("*.txt.gz")):
        dump = read_dump(str(path))
        for kernel in dump.kernels:
            for p in kernel.passes:
                text = "\n".join(dump.text(p))
                if text not in seen:
                    seen.add(text)
                    out[f"{path.name.removesuffix('.txt.gz')}:{p.header_line}:{p.name}"] = text
    return out


def canonical(node):
    """A tree as nested tuples: node kinds, heads, offsets and lines; leaves as lark tokens' fields."""
    if isinstance(node, list):
        return tuple(canonical(x) for x in node)
    if isinstance(node, Statement):
        return ("Statement", node.start, node.end, node.line, canonical(node.items))
    if isinstance(node, Group):
        return ("Group", node.kind, node.start, node.end, node.line, canonical(node.items))
    if isinstance(node, Param):
        return ("Param", node.head, node.start, node.end, node.line, canonical(node.items))
    if isinstance(node, RegionNode):
        return ("RegionNode", node.start, node.end, node.line, canonical(node.statements))
    if isinstance(node, LocNode):
        args = tuple(canonical(a) if isinstance(a, LocNode) else a for a in node.args)
        return ("LocNode", node.kind, node.start, node.end, node.line, args)
    assert isinstance(node.value, str)
    return (node.type, str(node.value), node.start_pos, node.end_pos, node.line)


def lark_tree(text: str, name: str):
    statements, problems = parse_statements(text, name, reader="lark")
    return canonical(statements), problems


_declined: dict[str, bool] = {}  # by text name, as the tests below find it


def fast_tree(text: str, name: str):
    fast = read_statements(text)
    _declined[name] = fast is None
    return fast


def check_same_tree(text: str, name: str) -> bool:
    """The fast reader's tree is lark's; False if it declined (the caller says whether it may)."""
    fast = fast_tree(text, name)
    if fast is None:
        return False
    tree, problems = lark_tree(text, name)
    assert problems == [], f"{name}: lark repaired what the fast reader took as it is"
    assert canonical(fast) == tree, name
    return True


def _ids(paths: list[Path]) -> list[str]:
    return [str(p.relative_to(REPO)) for p in paths]


def test_regex_follows_lark_terminals():
    # _TOKEN is derived by hand from mlir.lark's terminals: a change there must be made here too.
    from irscope.parsers.mlir_lark import _parser

    lexer = _parser()[0].parser.lexer.lexer
    scanned = [(t.name, t.pattern.to_regexp()) for t in lexer.scanner.terminals if t.name not in lexer.ignore_types]
    assert scanned == list(LARK_TERMINALS)
    folded = {t.name: t.pattern.value for t in lexer.callback["STRAY"].scanner.terminals}
    assert folded == {"LPAR": "(", "RPAR": ")", "LSQB": "[", "RSQB": "]", "LANGLE": "<", "RANGLE": ">",
                      "LBRACE": "{", "RBRACE": "}", "COMMA": ",", "COLON": ":", "EQUAL": "=", "STAR": "*",
                      "PLUS": "+", "QMARK": "?"}


@pytest.mark.parametrize("path", IR_FILES + MALFORMED, ids=_ids(IR_FILES + MALFORMED))
def test_file_tree_is_lark_tree(path):
    read = check_same_tree(path.read_text(), str(path.relative_to(REPO)))
    assert read or path.name in DECLINED, f"{path}: the fast reader declined a file lark reads"


@pytest.mark.parametrize("name", list(dump_sections()))
def test_dump_section_tree_is_lark_tree(name):
    text = dump_sections()[name]
    if len(text) > LARK_COMPARED_MAX:
        assert fast_tree(text, name) is not None, name
    else:
        assert check_same_tree(text, name), f"{name}: the fast reader declined a section lark reads"


def test_fast_reader_declines_only_the_named_inputs():
    texts = {str(p.relative_to(REPO)): p.read_text() for p in IR_FILES + MALFORMED}
    texts.update(dump_sections())
    declined = sorted(name for name, text in texts.items()  # what the tests above found, or read again
                      if (_declined[name] if name in _declined else read_statements(text) is None))
    print(f"{len(declined)} of {len(texts)} texts left to lark: {declined}")
    assert {Path(name).name for name in declined} <= set(DECLINED)
    assert not [name for name in declined if not name.startswith("tests/malformed/")]


def _module_summary(module):
    return ([(op.name, op.line, tuple(repr(module.values[v].type) for v in op.results)) for op in module.ops],
            module.problems)


def _fields(op) -> tuple:  # Op compares by identity
    return tuple(getattr(op, f.name) for f in dataclasses.fields(op))


@pytest.mark.parametrize("path", IR_FILES, ids=_ids(IR_FILES))
def test_parse_mlir_is_the_same_with_either_reader(path):
    text = path.read_text()
    fast, lark = parse_mlir(text, str(path)), parse_mlir(text, str(path), reader="lark")
    assert _module_summary(fast) == _module_summary(lark)
    assert [_fields(op) for op in fast.ops] == [_fields(op) for op in lark.ops]
    assert (fast.values, fast.aliases, fast.line_count) == (lark.values, lark.aliases, lark.line_count)


def test_parse_mlir_of_dump_sections_is_the_same_with_either_reader():
    for name, text in dump_sections().items():
        if "tt.func" in text and len(text) <= LARK_COMPARED_MAX:  # TTIR/TTGIR sections
            assert _module_summary(parse_mlir(text, name)) == _module_summary(parse_mlir(text, name, reader="lark"))


def _truncated():
    path = next(p for p in IR_FILES if p.suffix == ".ttgir" and ("gemm" in str(p) or "matmul" in p.name))
    text = path.read_text()
    return path, text[: len(text) // 2]


@pytest.mark.parametrize("case", ["truncated", "malformed"])
def test_malformed_input_goes_to_lark_with_its_problems(case):
    if case == "truncated":  # text ending inside the module's region and an op's brackets
        path, text = _truncated()
    else:
        path = REPO / "tests" / "malformed" / "malformed_unknown_lines.amdgcn"
        text = path.read_text()
    assert read_statements(text) is None
    statements, problems = parse_statements(text, str(path))
    assert (canonical(statements), problems) == lark_tree(text, str(path))
    assert any("open bracket" in p.message for p in problems)
    assert parse_mlir(text, str(path)).problems == parse_mlir(text, str(path), reader="lark").problems


# -- mutations of real files ---------------------------------------------------------------


def _mutate(text: str, rng: random.Random) -> str:
    lines = text.split("\n")
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(lines))
        op = rng.choice(("join", "wrap", "comment", "trail", "blank", "delete", "swap", "cut", "indent"))
        if op == "join" and i + 1 < len(lines):  # two lines as one
            lines[i:i + 2] = [lines[i] + " " + lines[i + 1].lstrip()]
        elif op == "wrap":  # a long op wrapped at a blank, as lit tests do
            blanks = [k for k, ch in enumerate(lines[i]) if ch == " " and k > 0]
            if blanks:
                k = rng.choice(blanks)
                lines[i:i + 1] = [lines[i][:k], "      " + lines[i][k + 1:]]
        elif op == "comment":
            lines[i] = "// " + lines[i]
        elif op == "trail":  # a comment after a line: another line's text
            lines[i] = lines[i] + "  // " + rng.choice(lines)
        elif op == "blank":
            lines.insert(i, rng.choice(("", "  ", "\t")))
        elif op == "delete":
            del lines[i]
        elif op == "swap":
            j = rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == "cut":
            lines[i] = lines[i][:rng.randrange(len(lines[i]) + 1)]
        elif op == "indent":
            lines[i] = lines[i].lstrip()
        if not lines:
            lines = [""]
    return "\n".join(lines)


def test_mutated_real_files_read_as_lark_reads_them():
    rng = random.Random(20240607)
    sources = [p for p in IR_FILES if len(p.read_text()) < 12_000]
    assert sources
    read = 0
    for n in range(300):
        path = rng.choice(sources)
        text = _mutate(path.read_text(), rng)
        name = f"{path.name} mutation {n}"
        statements, problems = parse_statements(text, name)
        assert (canonical(statements), problems) == lark_tree(text, name), repr(text)
        read += check_same_tree(text, name)
    assert read > 100  # most mutations stay well formed: the fast reader must have read them


def test_fast_path_never_imports_lark():
    path = next(p for p in IR_FILES if p.suffix == ".ttgir")
    code = ("import sys\nfrom irscope.parsers.mlir_parser import parse_mlir\n"
            f"module = parse_mlir(open({str(path)!r}).read(), 'k.ttgir')\n"
            "assert module.ops and 'lark' not in sys.modules, sorted(m for m in sys.modules if 'lark' in m)\n")
    subprocess.run([sys.executable, "-c", code], check=True)
