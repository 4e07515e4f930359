"""Fuzzing of saved reports, the untrusted input of `irscope diff`, `irscope tui` and `irscope.load`.

A real report (a scan of a few fixture kernels of both backends) is mutated anywhere in its tree
(a value of the wrong type, a key gone, a lone surrogate, a 70-bit or 400-digit integer, a list
grown or nested deep) or as text (cut, bytes flipped, not JSON). Each case is then read
(`Report.from_json`) and, when it reads, rendered every way a saved report is (console table,
SARIF, Markdown, CSV frames) and diffed against the clean report in both orders through the CLI.
A case is a bug when anything raises other than ReportError, or the CLI says "internal error".
Used by tests/test_saved_reports.py (a few cases) and bench/fuzz.py --reports N (thousands).
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

import fuzz_mutations as mutations
from fuzzing import FIXTURES

# Kernels of both backends and of Triton 3.6 and 3.9: AMD and NVIDIA facts, layouts, findings.
SOURCES = ("triton-3.6", "triton-3.9")


@dataclass
class ReportCase:
    kind: str
    seed: int
    text: str

    def __str__(self) -> str:
        return f"report seed={self.seed}, case={self.kind}"


@dataclass
class ReportOutcome:
    case: ReportCase
    status: str  # "ok", "report-error" (refused with a message naming the file) or "bug"
    seconds: float
    detail: str = ""


def clean_report(work: Path, per_cache: int = 3) -> Path:
    """A saved report of a few real kernels per fixture cache (a scan, so every field is real)."""
    from irscope.pipeline.analyze import scan

    dirs = []
    for cache in SOURCES:
        found = sorted(p for p in (FIXTURES / "caches" / cache).iterdir() if p.is_dir())
        amd = [p for p in found if any(p.glob("*.amdgcn"))][:per_cache]
        nvidia = [p for p in found if any(p.glob("*.ptx"))][:per_cache]
        dirs += amd + nvidia
    path = work / "clean.json"
    scan([str(d) for d in dirs], index=False, jobs=1).save(path)
    return path


# ---- mutations of the tree -----------------------------------------------------------------

WRONG = ("four", None, {}, [], 1.5, True, -1, 0, 2 ** 70, 10 ** 400, -(2 ** 63) - 1, "", "\ud800", "\x1b]0;x\x07",
         {"path": "/proc/self/environ"}, [[[[]]]])


def _nodes(tree) -> list[tuple[object, object]]:
    """Every (container, key) of the tree: what a mutation may replace or delete."""
    out, stack = [], [tree]
    while stack:
        node = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, value in items:
            out.append((node, key))
            stack.append(value)
    return out


def _wrong_value(tree, rng):
    node, key = rng.choice(_nodes(tree))
    node[key] = json.loads(json.dumps(rng.choice(WRONG)))  # a fresh copy
    return tree


def _key_gone(tree, rng):
    dicts = [(n, k) for n, k in _nodes(tree) if isinstance(n, dict)]
    node, key = rng.choice(dicts)
    del node[key]
    return tree


def _string_made_hostile(tree, rng):
    strings = [(n, k) for n, k in _nodes(tree) if isinstance(n[k], str)]
    node, key = rng.choice(strings)
    node[key] = rng.choice(("\ud800", "\x1b[2J\x1b]8;;http://x\x07", "\u202e" + node[key], node[key] * 5000,
                            "../" * 50 + "etc/passwd", ""))
    return tree


def _number_made_extreme(tree, rng):
    numbers = [(n, k) for n, k in _nodes(tree) if isinstance(n[k], (int, float)) and not isinstance(n[k], bool)]
    node, key = rng.choice(numbers)
    node[key] = rng.choice((2 ** 63, 2 ** 64 + 1, -(2 ** 63) - 1, 10 ** 400, -1, 0, 1e308, 0.5))
    return tree


def _list_grown(tree, rng):
    lists = [(n, k) for n, k in _nodes(tree) if isinstance(n[k], list) and n[k]]
    node, key = rng.choice(lists)
    node[key] = node[key] * rng.choice((2, 50))
    return tree


DEEP = "\0deep:{}\0"  # a placeholder json.dumps writes as text; make_case nests it (dumps would recurse)


def _nested_deep(tree, rng):
    node, key = rng.choice(_nodes(tree))
    node[key] = DEEP.format(rng.choice((40, 70, 5000)))
    return tree


TREE_MUTATIONS = {
    "wrong_value": _wrong_value,
    "key_gone": _key_gone,
    "hostile_string": _string_made_hostile,
    "extreme_number": _number_made_extreme,
    "list_grown": _list_grown,
    "nested_deep": _nested_deep,
}
TEXT_MUTATIONS = {k: mutations.JSON_MUTATIONS[k] for k in ("json_not_json", "truncate", "flip_bytes", "unbalance")}


def make_case(clean: str, kind: str, seed: int) -> ReportCase:
    rng = random.Random(f"{seed}:{kind}")
    if kind in TEXT_MUTATIONS:
        data = TEXT_MUTATIONS[kind](clean.encode(), rng)
        return ReportCase(kind, seed, data.decode("utf-8", "surrogateescape"))
    tree = json.loads(clean)
    for _ in range(rng.choice((1, 1, 3))):
        tree = TREE_MUTATIONS[kind](tree, rng)
    text = json.dumps(tree)
    for depth in (40, 70, 5000):
        text = text.replace(json.dumps(DEEP.format(depth)), "[" * depth + "1" + "]" * depth)
    return ReportCase(kind, seed, text)


def cases(clean: str, count: int, seed: int):
    master = random.Random(seed)
    kinds = sorted(TREE_MUTATIONS) + sorted(TEXT_MUTATIONS)
    for i in range(count):
        yield make_case(clean, kinds[i % len(kinds)], master.getrandbits(32))


# ---- what a saved report goes through -------------------------------------------------------

def check(case: ReportCase, clean_path: Path, work: Path) -> ReportOutcome:
    from irscope.model.report import Report, ReportError

    path = work / "mutated.json"
    path.write_text(case.text, encoding="utf-8", errors="surrogateescape")
    started = time.perf_counter()
    try:
        try:
            report = Report.load(path)
        except ReportError as exc:
            if str(path) not in str(exc):
                return ReportOutcome(case, "bug", time.perf_counter() - started, f"ReportError names no file: {exc}")
            status = "report-error"
        else:
            _render_every_way(report)
            status = "ok"
        for before, after in ((clean_path, path), (path, clean_path)):
            said = _cli("diff", str(before), str(after), "--json", str(work / "diff.json"),
                        "--markdown", str(work / "diff.md"))
            if "internal error" in said or "Traceback" in said:
                return ReportOutcome(case, "bug", time.perf_counter() - started, said[-3000:])
    except Exception:  # noqa: BLE001 - any exception out of reading or rendering is what this looks for
        return ReportOutcome(case, "bug", time.perf_counter() - started, traceback.format_exc())
    return ReportOutcome(case, status, time.perf_counter() - started)


def _render_every_way(report) -> None:
    from rich.console import Console

    from irscope.render.console import render
    from irscope.model.frames import findings_frame, kernels_frame
    from irscope.render.markdown import scan_markdown
    from irscope.render.sarif import sarif_text

    render(report, Console(file=io.StringIO(), width=100, force_terminal=True))
    sarif_text(report)
    scan_markdown(report)
    kernels_frame(report).to_csv(io.StringIO())
    findings_frame(report).to_csv(io.StringIO())


def _cli(*argv: str) -> str:
    """What `irscope ARGV` printed on stderr and stdout, run in this process."""
    from irscope.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(list(argv))
        except SystemExit:
            pass
    return err.getvalue() + out.getvalue()
