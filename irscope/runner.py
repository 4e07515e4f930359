"""`irscope scan script.py`: run a script in a child process with a cache of its own, then scan it.

The child (irscope/runner_child.py) gets a fresh TRITON_CACHE_DIR and TRITON_HOME under a
temporary directory and TRITON_ALWAYS_COMPILE=1, so the user's own caches are neither read
nor written; the directory is removed afterwards unless the user keeps it. The script's
output goes straight to the terminal, between two lines that mark where it starts and ends.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from irscope.launches import ScriptRun, read_launches
from irscope.report import Report
from irscope.rule_engine import RuleSelection

NO_TRITON = 3  # the child's exit code when the script's Python has no triton


@dataclass(frozen=True)
class RunResult:
    report: Report
    exit_code: int  # the script's
    kept: Path | None  # the run directory, when kept


def run_script(script: str, args: tuple[str, ...] = (), target: str | None = None, keep: bool = False,
               out: str | None = None, sass: bool = False, rules: RuleSelection | None = None,
               python: str | None = None, log=None, dump: bool = False) -> RunResult:
    from irscope.pipeline import scan

    log = log or sys.stderr
    work = Path(out) if out else Path(tempfile.mkdtemp(prefix="irscope-run-"))
    work.mkdir(parents=True, exist_ok=True)
    cache, launches = work / "cache", work / "launches.jsonl"
    env = dict(os.environ, TRITON_CACHE_DIR=str(cache), TRITON_HOME=str(work / "home"), TRITON_ALWAYS_COMPILE="1",
               PYTHONUNBUFFERED="1")
    dump_file = work / "mlir-dump.txt"
    if dump:  # Triton 3.3+ writes the dump to this file; older ones print it to stderr
        env.update(MLIR_ENABLE_DUMP="1", MLIR_DUMP_PATH=str(dump_file))
    command = [python or sys.executable, "-m", "irscope.runner_child", "--launches", str(launches)]
    command += ["--target", target] if target else []
    command += [script, *args]
    mode = f"for {target} (kernels compile, nothing runs)" if target else "on this machine's GPU"
    print(f"irscope: running {script} {mode}; its output follows", file=log, flush=True)
    print("-" * 30 + " script output " + "-" * 30, file=log, flush=True)
    try:
        code = subprocess.run(command, env=env).returncode
    except KeyboardInterrupt:
        code = 130
    print("-" * 30 + f" script exited with {code} " + "-" * 30, file=log, flush=True)
    kept = work if (keep or out) else None
    try:
        recorded = read_launches(launches)
        report = scan(cache, sass=sass, rules=rules, launches=recorded) if cache.exists() else None
        if report is None:
            from irscope.pipeline import empty_report

            report = empty_report((str(cache),))
        if dump:
            report = attach_timelines(report, dump_file, log)
    finally:  # the run's own directory, and only it, goes, even when the scan is interrupted
        if kept is None:
            shutil.rmtree(work, ignore_errors=True)
    total = sum(launch.count for group in recorded.values() for launch in group)
    report = replace(report, run=ScriptRun(script, tuple(args), target, code, total))
    return RunResult(report, code, kept)


def attach_timelines(report: Report, dump_file: Path, log) -> Report:
    """Give each kernel the pass timeline of its compile: matched by name, and by num_warps
    and `shared` where several compiles share a name (autotune configs)."""
    from irscope.parsers.errors import ArtifactError
    from irscope.parsers.mlir_dump import read_dump
    from irscope.pass_timeline import timelines

    if not dump_file.exists():
        print("irscope: no MLIR dump was written (Triton 3.0-3.2 print it to stderr only)", file=log)
        return report
    try:
        found = list(timelines(read_dump(str(dump_file))))
    except ArtifactError as exc:
        print(f"irscope: {exc.path}:{exc.line or ''} {exc.message}", file=log)
        return report
    kernels = []
    for kr in report.kernels:
        opts = kr.kernel.options
        warps = opts.num_warps.value if opts.num_warps else None
        shared = opts.shared.value if opts.shared else None
        same = [t for t in found if t.kernel == kr.kernel.name]
        exact = [t for t in same if (t.num_warps, t.shared) == (warps, shared)]
        pick = exact[-1] if exact else (same[-1] if len(same) == 1 else None)
        kernels.append(replace(kr, passes=pick) if pick else kr)
    return replace(report, kernels=tuple(kernels))
