"""Is a text IR what its name says, and whole? A cheap check of the shape Triton writes.

`scan` parses the TTGIR and the assembly, but reads the TTIR and LLVM IR only for source
lines and diffs; a `.ttir`/`.llir` that is cut short or not IR at all ("hello world") would
pass unnoticed, and a `.ttgir` of plain text parses as one unknown op, its layouts silently
absent. Each such file is an error-severity problem (exit 3: partial results), naming the
file and line. Triton writes every MLIR stage as one `module ... {` closed by a `}` line
(then `#loc` lines), and every LLVM IR with `define ... {` bodies each closed by a `}` line.
"""

from __future__ import annotations

import re

from irscope.model.kernel import Kernel, Problem
from irscope.model.errors import decode_text
from irscope.isa.resources import parse_artifact

_MLIR_MODULE = re.compile(r"^(?:builtin\.)?module\b", re.MULTILINE)
_LLVM_DEFINE = re.compile(r"^define\b", re.MULTILINE)


def mlir_shape_problem(text: str, path: str, stage: str) -> Problem | None:
    """A Problem when the MLIR text has no `module` line (not IR), or does not end with its `}`."""
    if _MLIR_MODULE.search(text) is None:
        return Problem(path, f"not MLIR text: no `module` line (Triton writes each {stage} as one module)", 1)
    last, line = _last_code_line(text, skip=("#",))
    if not last.startswith("}"):
        return Problem(path, f"truncated: the {stage} ends inside its module (last line: {last[:60]!r})", line)
    return None


def llvm_shape_problem(text: str, path: str) -> Problem | None:
    """A Problem when the LLVM IR has no `define` (not IR), or its last function has no closing `}`."""
    last = _last_define(text)
    if last < 0:
        return Problem(path, "not LLVM IR: no function definition (`define`)", 1)
    if text.find("\n}", last) < 0:  # a `}` line after it (`^}` past `define`, which starts no line with `}`)
        line = text.count("\n", 0, last) + 1
        return Problem(path, "truncated: the file ends inside this function (no closing `}` line)", line)
    return None


def _last_define(text: str) -> int:
    """Where the last line that starts with the word `define` starts, or -1: `^define\\b` (MULTILINE) searched
    from the end with str.rfind, ~50x sooner than the regex over each of a 40 KB file's positions."""
    end = len(text)
    while True:
        at = text.rfind("define", 0, end)
        if at < 0:
            return -1
        if (at == 0 or text[at - 1] == "\n") and _LLVM_DEFINE.match(text, at):
            return at
        end = at + len("define") - 1  # an earlier one (a shorter `end` cannot hold this one again)


def shape_problems(kernel: Kernel, stages: tuple[str, ...] = ("ttir", "llir")) -> list[Problem]:
    """The kernel's `stages` that are not whole IR of their kind (the TTGIR is checked where it is parsed)."""
    problems = []
    for stage in stages:
        artifact = kernel.artifact(stage)
        if artifact is None:
            continue
        text = parse_artifact(artifact, decode_text, problems)
        if text is None:
            continue
        problem = llvm_shape_problem(text, artifact.path) if stage == "llir" else \
            mlir_shape_problem(text, artifact.path, stage)
        if problem is not None:
            problems.append(problem)
    return problems


def _last_code_line(text: str, skip: tuple[str, ...]) -> tuple[str, int]:
    """The last line that is neither blank nor starts with one of `skip`, and its number.

    Read from the end, a `\n` line at a time (a TTGIR's last code line has ~100 `#loc` lines after it, its
    splitlines() ~250 strings); text with another of splitlines' line ends is split as before."""
    if not text.isascii() or any(ch in text for ch in _ASCII_LINE_ENDS):
        return _last_code_line_split(text, skip)
    end = len(text)
    while True:
        start = text.rfind("\n", 0, end) + 1
        stripped = text[start:end].strip()
        if stripped and not stripped.startswith(skip):
            return stripped, text.count("\n", 0, start) + 1
        if start == 0:
            return "", max(text.count("\n") + (not text.endswith("\n")), 1)
        end = start - 1


_ASCII_LINE_ENDS = "\r\x0b\x0c\x1c\x1d\x1e"  # str.splitlines' line ends in ASCII besides "\n"


def _last_code_line_split(text: str, skip: tuple[str, ...]) -> tuple[str, int]:
    lines = text.splitlines()
    for number in range(len(lines), 0, -1):
        stripped = lines[number - 1].strip()
        if stripped and not stripped.startswith(skip):
            return stripped, number
    return "", max(len(lines), 1)
