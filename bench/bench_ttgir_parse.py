"""TTGIR parse throughput on the fixture corpus, beside a regex line count over the same bytes.

    python bench/bench_ttgir_parse.py [--repeat 3] [--json out.json]

The regex baseline is what users do today (`grep -c` for op lines): it reads the same
text and counts op lines, and gives the ceiling a line-oriented scan reaches in Python.
irscope's parse builds the whole model (ops, SSA values, types, layouts, locations).
Best of `--repeat` runs; the grammar is compiled before timing starts.
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# The grep a user runs: an op line, with or without results.
#     %a_ptrs_21 = tt.addptr %a_ptrs_19, %a_ptrs_20 : tensor<...>
OP_LINE = re.compile(r'^\s*(?:%[\w#:, -]+=\s*)?(?:"[a-z_]+\.[\w.]+"|[a-z_]+\.[\w.]+|module\b)', re.M)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)

    from irscope.parsers.mlir_lark import _parser
    from irscope.parsers.mlir_parser import parse_mlir

    texts = [(str(p), p.read_text()) for p in sorted((REPO / "fixtures").rglob("*.ttgir"))]
    lines = sum(t.count("\n") for _, t in texts)
    size = sum(len(t.encode()) for _, t in texts)
    _parser()  # compile the grammar outside the timing

    def best(fn) -> tuple[float, int]:
        times, result = [], 0
        for _ in range(args.repeat):
            start = time.perf_counter()
            result = fn()
            times.append(time.perf_counter() - start)
        return min(times), result

    parse_s, ops = best(lambda: sum(len(parse_mlir(t, p).ops) for p, t in texts))
    regex_s, op_lines = best(lambda: sum(len(OP_LINE.findall(t)) for _, t in texts))
    result = {
        "files": len(texts), "lines": lines, "bytes": size, "python": platform.python_version(),
        "parse_seconds": round(parse_s, 3), "parse_lines_per_s": round(lines / parse_s),
        "parse_ops": ops,
        "regex_seconds": round(regex_s, 4), "regex_lines_per_s": round(lines / regex_s),
        "regex_op_lines": op_lines,
    }
    print(f"{len(texts)} TTGIR files, {lines} lines, {size / 1e6:.2f} MB")
    print(f"irscope parse : {parse_s:7.3f} s  {lines / parse_s:12,.0f} lines/s  ({ops} ops)")
    print(f"regex op count: {regex_s:7.3f} s  {lines / regex_s:12,.0f} lines/s  ({op_lines} op lines)")
    if ops != op_lines:
        print("note: op counts differ", file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
