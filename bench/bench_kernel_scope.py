"""Per-kernel ISA analysis: irscope beside kernel_scope (wafer-core) on the same .amdgcn files.

    python bench/bench_kernel_scope.py DIR --kscope-python /path/to/venv/bin/python [--repeat 3] [--json out.json]

kernel_scope is optional and lives in its own environment (its dependencies are not
irscope's): `python3 -m venv V && V/bin/pip install wafer-core httpx`. It runs in a child
process of that python, which imports `wafer_core.lib.kernel_scope` once (the start-up,
reported apart) and then, file by file as the parent asks, times `analyze_isa_file(path)`
in-process: its parse plus its analysis (instruction mix, spills, occupancy, packed-op
opportunities). irscope runs in this process, after its own imports, through its public
functions, per kernel found under DIR (irscope.pipeline.harvester): read and parse the .amdgcn
(`read_assembly`), then per function the CFG and loops, the instruction mix and the
s_waitcnt analysis (`KernelContext.graph` / `.waits`, as a scan does), then the rules that
read only the ISA (IRS201, IRS501). Beside it, "its part": what kernel_scope computes (the parse, resources,
occupancy and the instruction mix) without the s_waitcnt dataflow and the rules, which kernel_scope does not
have. The two alternate file by file, so that a machine that
slows down mid-run slows both; each file's time is its best over --repeat passes.

Without --kscope-python, or when that python cannot import wafer-core, the script says so,
times irscope alone and exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

# The child: import kernel_scope (timed), then answer one JSON line per path read from stdin.
CHILD = r"""
import json, sys, time
out = sys.stdout
sys.stdout = sys.stderr  # kernel_scope's own prints must not mix with the answers
t0 = time.perf_counter()
try:
    from wafer_core.lib.kernel_scope import analyze_isa_file
except Exception as exc:  # noqa: BLE001
    out.write(json.dumps({"error": f"{type(exc).__name__}: {exc}"}) + "\n")
    out.flush()
    sys.exit(0)
out.write(json.dumps({"import_s": time.perf_counter() - t0}) + "\n")
out.flush()
for line in sys.stdin:
    path = line.rstrip("\n")
    t0 = time.perf_counter()
    try:
        result = analyze_isa_file(path)
        ok, error = result.success, result.error
    except Exception as exc:  # noqa: BLE001
        ok, error = False, f"{type(exc).__name__}: {exc}"
    out.write(json.dumps({"s": time.perf_counter() - t0, "ok": ok, "error": error}) + "\n")
    out.flush()
"""


class KernelScope:
    """The child process running kernel_scope, or the reason there is none."""

    def __init__(self, python: str | None) -> None:
        self.proc: subprocess.Popen | None = None
        self.problem: str | None = None
        self.startup_s = self.import_s = None
        if python is None:
            self.problem = "no --kscope-python given"
            return
        t0 = time.perf_counter()
        try:
            self.proc = subprocess.Popen([python, "-c", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.DEVNULL, text=True, bufsize=1)
        except OSError as exc:
            self.problem = f"cannot run {python}: {exc.strerror}"
            return
        hello = self._read()
        if hello is None or "error" in hello:
            self.problem = f"{python} cannot import wafer_core.lib.kernel_scope: " + (
                hello["error"] if hello else "the child exited")
            self.close()
            return
        self.startup_s = time.perf_counter() - t0  # interpreter start + import
        self.import_s = hello["import_s"]

    def _read(self) -> dict | None:
        line = self.proc.stdout.readline()
        return json.loads(line) if line else None

    def analyze(self, path: str) -> dict:
        self.proc.stdin.write(path + "\n")
        answer = self._read()
        if answer is None:
            raise RuntimeError("kernel_scope's child process exited")
        return answer

    def close(self) -> None:
        if self.proc is not None:
            self.proc.stdin.close()
            self.proc.wait()
            self.proc = None


def isa_rules():
    """The registered rules that read nothing but the AMDGCN (IRS201, IRS501)."""
    from irscope.engine.selection import load_rules

    return tuple(r for r in load_rules() if r.stages and set(r.stages) <= {"amdgcn"})


def with_target(kernel):
    """The kernel with its target read from the IR when no metadata gave one (a bare .amdgcn), as a
    scan does before the analysis: the rules that apply only to AMD kernels need it."""
    if kernel.target is not None:
        return kernel
    from dataclasses import replace

    from irscope.ir.targets import infer_from_ir

    ir = infer_from_ir(kernel)
    return replace(kernel, target=ir.target.value) if ir.target is not None else kernel


def irscope_analysis(kernel, selection) -> int:
    """irscope's per-kernel ISA analysis, as `irscope scan` runs it; returns a count to keep it honest."""
    from irscope.isa.assembly import read_assembly
    from irscope.isa.mix import instruction_mix
    from irscope.engine.context import KernelContext
    from irscope.engine.selection import run_rules

    assembly = read_assembly(kernel)
    ctx = KernelContext(kernel, None, assembly.programs)
    count = 0
    for program in assembly.programs:
        for fn in program.functions:
            graph = ctx.graph(program, fn)
            count += len(graph.loops) + instruction_mix(program, fn, graph).total
            if program.isa == "amdgcn":
                count += len(ctx.waits(program, fn))
    findings, _ = run_rules(ctx, selection)
    return count + len(findings)


def irscope_counts(kernel) -> int:
    """What kernel_scope's analyze_isa_file computes, done by irscope: the parse, the resources and occupancy, and
    the instruction mix (by loop: its CFG and loops too), without the s_waitcnt dataflow and the rules."""
    from irscope.isa.assembly import read_assembly
    from irscope.isa.mix import instruction_mix
    from irscope.isa.resources import read_resources
    from irscope.engine.context import KernelContext
    from irscope.model.artifact_reader import one_read_each
    from irscope.occupancy.calculator import kernel_occupancy

    with one_read_each():
        resources, _ = read_resources(kernel, kernel.target)
        occupancy, _ = kernel_occupancy(kernel, resources) if resources is not None else (None, [])
        assembly = read_assembly(kernel)
    ctx = KernelContext(kernel, resources, assembly.programs, occupancy)
    count = 0
    for program in assembly.programs:
        for fn in program.functions:
            count += instruction_mix(program, fn, ctx.graph(program, fn)).total
    return count


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("directory", type=Path)
    ap.add_argument("--kscope-python", help="a python with wafer-core (and httpx) installed")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    from irscope.pipeline.harvester import harvest
    from irscope.engine.selection import RuleSelection

    selection = RuleSelection.only(*isa_rules())
    irscope_import_s = time.perf_counter() - t0
    kernels = [with_target(k) for k in harvest(args.directory).kernels if k.artifact("amdgcn") is not None]
    if not kernels:
        print(f"no .amdgcn kernels under {args.directory}")
        return 0
    kscope = KernelScope(args.kscope_python)
    if kscope.problem:
        print(f"kernel_scope skipped: {kscope.problem}; timing irscope alone")
    paths = [kernel.artifact("amdgcn").path for kernel in kernels]
    lines = sum(Path(p).read_text(errors="replace").count("\n") for p in paths)
    mine = [float("inf")] * len(kernels)
    counts = [float("inf")] * len(kernels)
    theirs = [float("inf")] * len(kernels)
    failed: dict[str, str] = {}
    try:
        for _ in range(args.repeat):
            for k, (kernel, path) in enumerate(zip(kernels, paths)):
                if kscope.proc is not None:
                    answer = kscope.analyze(path)
                    theirs[k] = min(theirs[k], answer["s"])
                    if not answer["ok"]:
                        failed[path] = answer["error"]
                start = time.perf_counter()
                irscope_analysis(kernel, selection)
                mine[k] = min(mine[k], time.perf_counter() - start)
                start = time.perf_counter()
                irscope_counts(kernel)
                counts[k] = min(counts[k], time.perf_counter() - start)
    finally:
        kscope.close()

    n = len(kernels)
    ms = sum(mine) / n * 1e3
    counts_ms = sum(counts) / n * 1e3
    results = {
        "python": platform.python_version(), "machine": platform.machine(), "cores": os.cpu_count(),
        "directory": str(args.directory), "kernels": n, "lines_per_kernel": round(lines / n),
        "repeat": args.repeat, "rules": [r.code for r in isa_rules()],
        "irscope": {"ms_per_kernel": round(ms, 3), "import_s": round(irscope_import_s, 3),
                    "counts_ms_per_kernel": round(counts_ms, 3)},
    }
    print(f"{n} kernels under {args.directory}, {lines / n:,.0f} lines per .amdgcn; best of {args.repeat} per file")
    print(f"irscope      {ms:8.2f} ms/kernel  (parse, CFG, mix, waits, {', '.join(results['rules'])}; "
          f"start-up {irscope_import_s * 1e3:.0f} ms imports)")
    print(f"  its part   {counts_ms:8.2f} ms/kernel  (what kernel_scope computes: parse, resources, occupancy, mix)")
    if kscope.problem is None:
        theirs_ms = sum(theirs) / n * 1e3
        results["kernel_scope"] = {"ms_per_kernel": round(theirs_ms, 3), "startup_s": round(kscope.startup_s, 3),
                                   "import_s": round(kscope.import_s, 3), "failed": len(failed)}
        results["ratio"] = round(theirs_ms / ms, 2)
        results["ratio_counts"] = round(theirs_ms / counts_ms, 2)
        print(f"kernel_scope {theirs_ms:8.2f} ms/kernel  (analyze_isa_file; start-up {kscope.startup_s:.2f} s, "
              f"of which import {kscope.import_s:.2f} s)")
        print(f"ratio        {theirs_ms / ms:8.1f}x  (kernel_scope / irscope; "
              f"{theirs_ms / counts_ms:.1f}x on its part)")
        if failed:
            print(f"kernel_scope failed on {len(failed)} files, e.g. {next(iter(failed.items()))}")
    else:
        results["kernel_scope"] = {"skipped": kscope.problem}
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
