"""Code shape (issue 24, docs/architecture.md "Invariants"): files under irscope/, parsers/, rules/ and tui/ stay
at most 600 lines; a function stays at most 80 lines and at most 25 in cyclomatic complexity unless a comment on
its def line or the line just above says why (`# long: <why>`, `# complex: <why>`, `# long, complex: <why>`).

Measured with `ast`: a function's length is end_lineno - lineno + 1 (its decorators not counted); its complexity
is 1 + its decision points, the branches mccabe counts and a few it does not: each if/elif, for, while, except,
with, assert, match case and comprehension `if`, and each extra operand of `and`/`or` (a conditional expression
`a if c else b` is not counted). A nested function is measured on its own, and its decisions are not counted in
the function around it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("irscope", "parsers", "rules", "tui")
MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 80
MAX_COMPLEXITY = 25
# `# long: <why>`, `# complex: <why>`, or both: `# long, complex: <why>`
_MARKER = r"#\s*(?:(?:long|complex)\s*,\s*)?{}(?:\s*,\s*(?:long|complex))?:\s*\S"
LONG = re.compile(_MARKER.format("long"))
COMPLEX = re.compile(_MARKER.format("complex"))

_DECISIONS = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.ExceptHandler, ast.With, ast.AsyncWith, ast.Assert,
              ast.match_case)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def complexity(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """1 + the decision points of `function`'s own body (not of the functions and classes defined in it)."""
    count = 1
    todo = list(ast.iter_child_nodes(function))
    while todo:
        node = todo.pop()
        if isinstance(node, (*_FUNCTIONS, ast.ClassDef)):
            continue
        if isinstance(node, _DECISIONS):
            count += 1
        elif isinstance(node, ast.BoolOp):
            count += len(node.values) - 1
        elif isinstance(node, ast.comprehension):
            count += len(node.ifs)
        todo.extend(ast.iter_child_nodes(node))
    return count


def sources() -> list[Path]:
    return sorted(p for package in PACKAGES for p in (REPO / package).rglob("*.py"))


def functions(tree: ast.AST):
    return [node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]


def exempt(lines: list[str], function: ast.FunctionDef | ast.AsyncFunctionDef, marker: re.Pattern) -> bool:
    """The marker on the def line or on the line just above it (above the decorators, if any)."""
    first = min([function.lineno] + [d.lineno for d in function.decorator_list])
    return any(marker.search(lines[i - 1]) for i in {function.lineno, first - 1, function.lineno - 1} if i >= 1)


def shape_problems(path: Path, root: Path = REPO) -> list[str]:
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    where = path.relative_to(root)
    problems = []
    if len(lines) > MAX_FILE_LINES:
        problems.append(f"{where}: {len(lines)} lines (at most {MAX_FILE_LINES})")
    for function in functions(ast.parse(text, str(path))):
        length = function.end_lineno - function.lineno + 1
        if length > MAX_FUNCTION_LINES and not exempt(lines, function, LONG):
            problems.append(f"{where}:{function.lineno} {function.name}: {length} lines "
                            f"(at most {MAX_FUNCTION_LINES}, or a `# long: <why>` comment)")
        score = complexity(function)
        if score > MAX_COMPLEXITY and not exempt(lines, function, COMPLEX):
            problems.append(f"{where}:{function.lineno} {function.name}: complexity {score} "
                            f"(at most {MAX_COMPLEXITY}, or a `# complex: <why>` comment)")
    return problems


def test_files_and_functions_keep_their_shape():
    problems = [problem for path in sources() for problem in shape_problems(path)]
    assert not problems, "\n".join(problems)


def _shape_of(tmp_path: Path, source: str) -> list[str]:
    path = tmp_path / "probe.py"
    path.write_text(source, encoding="utf-8")
    return shape_problems(path, tmp_path)


def test_complexity_counts_each_decision_point():
    tree = ast.parse("def f(a, b):\n"
                     "    if a and b or a:\n"          # if +1, two extra operands +2
                     "        return [x for x in a if x]\n"  # the comprehension's if +1
                     "    elif b:\n"                   # +1
                     "        pass\n"
                     "    for x in a:\n"               # +1
                     "        while x:\n"              # +1
                     "            x = 1 if b else 2\n"  # not counted
                     "    try:\n"
                     "        pass\n"
                     "    except ValueError:\n"        # +1
                     "        pass\n"
                     "    with a:\n"                   # +1
                     "        assert b\n"              # +1
                     "    def inner():\n"              # measured on its own
                     "        if a:\n"
                     "            pass\n")
    outer, inner = functions(tree)
    assert complexity(outer) == 11
    assert complexity(inner) == 2


@pytest.mark.parametrize("marker,flagged", [("", True), ("  # long: a read loop, measured faster whole", False),
                                            ("  # long, complex: a read loop", False),
                                            ("  # complex: says nothing of its length", True)])
def test_a_long_function_is_named_unless_a_comment_says_why(tmp_path, marker, flagged):
    body = "".join(f"    x = {i}\n" for i in range(MAX_FUNCTION_LINES))
    problems = _shape_of(tmp_path, f"def long_one():{marker}\n{body}")
    assert bool(problems) == flagged
    if flagged:
        assert problems == [f"probe.py:1 long_one: {MAX_FUNCTION_LINES + 1} lines "
                            f"(at most {MAX_FUNCTION_LINES}, or a `# long: <why>` comment)"]


@pytest.mark.parametrize("above", ["", "# complex: one branch per opcode, a table would hide the order\n"])
def test_a_complex_function_is_named_unless_a_comment_says_why(tmp_path, above):
    body = "".join(f"    if x == {i}:\n        return {i}\n" for i in range(MAX_COMPLEXITY))
    problems = _shape_of(tmp_path, f"{above}def branchy(x):\n{body}")
    line = 2 if above else 1
    expected = [] if above else [f"probe.py:{line} branchy: complexity {MAX_COMPLEXITY + 1} "
                                 f"(at most {MAX_COMPLEXITY}, or a `# complex: <why>` comment)"]
    assert problems == expected


def test_a_long_file_is_named(tmp_path):
    problems = _shape_of(tmp_path, "x = 1\n" * (MAX_FILE_LINES + 1))
    assert problems == [f"probe.py: {MAX_FILE_LINES + 1} lines (at most {MAX_FILE_LINES})"]
