"""Parse Triton's own TTGIR lit tests with irscope's MLIR parser and report what stayed unstructured.

The lit tests (`test/TritonGPU/**/*.mlir` in triton-lang/triton) are hand-written MLIR
with every op and layout the TritonGPU dialects have. They are not committed here:
fetch them into a folder outside the repo and point this script at it:

    python tools/parse_lit_tests.py /path/to/triton/test/TritonGPU [--json out.json]

Each file is split at `// -----` lines, as `triton-opt -split-input-file` does. A file
"fails" only if the parser raises; ops whose custom syntax was not understood are
counted by name.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter
from pathlib import Path

from irscope.ir.mlir import CORE_DIALECTS
from irscope.parsers.mlir_parser import parse_mlir

SPLIT = re.compile(r"^// -----.*$", re.M)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", type=Path)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    files = sorted(args.root.rglob("*.mlir"))
    stats = Counter()
    unstructured: Counter = Counter()
    unstructured_core: Counter = Counter()
    problems: Counter = Counter()
    failed: list[str] = []
    started = time.perf_counter()
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        stats["files"] += 1
        stats["lines"] += text.count("\n")
        try:
            for case in SPLIT.split(text):
                module = parse_mlir(case, str(path))
                stats["cases"] += 1
                stats["ops"] += len(module.ops)
                for op in module.ops:
                    if not op.structured:
                        unstructured[op.canonical_name] += 1
                        if op.dialect in CORE_DIALECTS:
                            unstructured_core[op.canonical_name] += 1
                for p in module.problems:
                    problems[re.sub(r"%[\w#.$-]+", "%v", p.message)] += 1
        except Exception as exc:  # the parser promises never to raise: count and show any breach
            failed.append(f"{path}: {type(exc).__name__}: {exc}")
    seconds = time.perf_counter() - started
    result = {"files": stats["files"], "cases": stats["cases"], "lines": stats["lines"], "ops": stats["ops"],
              "unstructured_ops": sum(unstructured.values()), "unstructured": dict(unstructured.most_common()),
              "unstructured_core": dict(unstructured_core.most_common()), "failed_files": failed,
              "problems": dict(problems.most_common(20)), "seconds": round(seconds, 2)}
    print(f"{result['files']} files, {result['cases']} cases, {result['lines']} lines, {result['ops']} ops "
          f"in {seconds:.1f} s; {len(failed)} failed file(s)")
    print(f"unstructured: {result['unstructured_ops']} ops; core dialects: {sum(unstructured_core.values())}")
    for name, n in unstructured.most_common(40):
        print(f"  {n:6d}  {name}")
    for message, n in problems.most_common(10):
        print(f"  problem x{n}: {message}")
    for line in failed[:20]:
        print("FAILED", line)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
