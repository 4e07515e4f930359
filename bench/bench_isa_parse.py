"""ISA parse throughput on the fixture corpus, beside `grep -c` over the same bytes, in one run.

    python bench/bench_isa_parse.py [--repeat 3] [--json out.json]

The floor is what users do today: one `grep -c -E` with the instruction classes the
rules look at, over every .amdgcn / .ptx file (and the SASS text nvdisasm prints for
every cubin, written to a temporary directory first). irscope's rows are the parse into
the instruction model, then the parse plus the CFG, loops, instruction mix and (AMDGCN)
the s_waitcnt and MFMA-operand analyses, also as ms per file. Best of `--repeat` runs;
ratios are the claim. bench/bench_kernel_scope.py compares the per-kernel analysis with
kernel_scope's, and bench/bench_big_isa.py times one 50,000-line file.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GREP_PATTERNS = {
    "amdgcn": r"global_load|global_store|buffer_load|buffer_store|scratch_|ds_read|ds_write|ds_load|ds_store"
              r"|s_waitcnt|s_wait_|s_barrier|v_mfma|v_wmma",
    "ptx": r"ld\.global|st\.global|ld\.shared|st\.shared|ld\.local|st\.local|cp\.async|ldmatrix"
           r"|mma|bar\.sync|wait_group",
    "sass": r"LDG|STG|LDS|STS|LDL|STL|LDGSTS|LDSM|HMMA|HGMMA|BAR|DEPBAR",
}


def best(fn, repeat: int):
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), result


def grep_count(pattern: str, paths: list[str]) -> int:
    out = subprocess.run(["grep", "-c", "-E", pattern, *paths], capture_output=True, text=True).stdout
    return sum(int(line.rsplit(":", 1)[-1]) for line in out.splitlines() if line)


def analyze(program) -> int:
    from irscope.isa.amdgcn_dataflow import matrix_feeds, waits
    from irscope.isa.mix import instruction_mix
    from irscope.isa.graph import FunctionGraph

    count = 0
    for fn in program.functions:
        graph = FunctionGraph(fn)
        count += len(graph.loops) + instruction_mix(program, fn, graph).total
        if program.isa == "amdgcn":
            count += len(waits(fn, program.target, graph)) + len(matrix_feeds(fn))
    return count


def sass_texts(tmp: Path) -> list[tuple[str, str]]:
    from irscope.isa.nvtools import disassemble

    out = []
    for i, cubin in enumerate(sorted((REPO / "fixtures").rglob("*.cubin"))):
        text, problem = disassemble(str(cubin))
        if text is None:
            print(f"SASS skipped: {problem}", file=sys.stderr)
            return []
        path = tmp / f"{i:03d}_{cubin.stem}.sass"
        path.write_text(text)
        out.append((str(path), text))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)

    from irscope.parsers.amdgcn import parse_amdgcn
    from irscope.parsers.ptx import parse_ptx
    from irscope.parsers.sass import parse_sass

    parsers = {"amdgcn": parse_amdgcn, "ptx": parse_ptx, "sass": parse_sass}
    results = {"python": platform.python_version(), "machine": platform.machine(), "isas": {}}
    with tempfile.TemporaryDirectory(prefix="irscope-bench-") as tmp:
        corpora = {
            isa_: [(str(p), p.read_text()) for p in sorted((REPO / "fixtures").rglob(f"*.{isa_}"))]
            for isa_ in ("amdgcn", "ptx")
        }
        corpora["sass"] = sass_texts(Path(tmp))
        print(f"{'ISA':7} {'files':>5} {'lines':>8} {'grep -c':>9} {'parse':>9} {'ratio':>6} "
              f"{'parse+analyses':>15} {'ratio':>6} {'ms/file':>8} {'parse lines/s':>14}")
        for isa_, texts in corpora.items():
            if not texts:
                continue
            parse = parsers[isa_]
            lines = sum(t.count("\n") for _, t in texts)
            grep_s, hits = best(lambda texts=texts, isa_=isa_: grep_count(GREP_PATTERNS[isa_], [p for p, _ in texts]),
                                args.repeat)
            parse_s, _ = best(lambda texts=texts, parse=parse: [parse(t, p) for p, t in texts], args.repeat)
            full_s, _ = best(lambda texts=texts, parse=parse: sum(analyze(parse(t, p)) for p, t in texts),
                             args.repeat)
            results["isas"][isa_] = {
                "files": len(texts), "lines": lines, "grep_seconds": round(grep_s, 4), "grep_hits": hits,
                "parse_seconds": round(parse_s, 4), "parse_ratio": round(parse_s / grep_s, 1),
                "full_seconds": round(full_s, 4), "full_ratio": round(full_s / grep_s, 1),
                "full_ms_per_file": round(full_s / len(texts) * 1e3, 3), "parse_lines_per_s": round(lines / parse_s),
            }
            print(f"{isa_:7} {len(texts):5} {lines:8} {grep_s:8.3f}s {parse_s:8.3f}s {parse_s / grep_s:5.1f}x "
                  f"{full_s:14.3f}s {full_s / grep_s:5.1f}x {full_s / len(texts) * 1e3:8.2f} {lines / parse_s:14,.0f}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
