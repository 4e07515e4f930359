"""`irscope scan script.py`: run a script in a child process with a cache of its own, then scan it.

The child (irscope/pipeline/runner_child.py) gets a fresh TRITON_CACHE_DIR and TRITON_HOME in the run's
own directory and TRITON_ALWAYS_COMPILE=1, so the user's own caches are neither read nor
written. The run is kept where irscope keeps its data (irscope/pipeline/kept_runs.py) so its report can
be opened again; `keep=False` removes it when the scan is done. The script's output, stdout and
stderr alike, goes to irscope's stderr between two lines that mark where it starts and ends:
irscope's stdout carries only irscope's own output (a table, or an export with `-`).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from irscope.pipeline import kept_runs
from irscope.model.launches import ScriptRun, StandInAnswer, read_autotune, read_compiled, read_launches
from irscope.model.report import Report
from irscope.engine.selection import RuleSelection
from irscope.pipeline.run_profile import attach_measurements, profiled_command

NO_TRITON = 3  # the child's exit code when the script's Python has no triton


@dataclass(frozen=True)
class RunResult:
    report: Report
    exit_code: int  # the script's
    kept: Path | None  # the run directory, when kept


def run_script(script: str, args: tuple[str, ...] = (), target: str | None = None, keep: bool | None = None,
               out: str | None = None, sass: bool = False, rules: RuleSelection | None = None,
               python: str | None = None, log=None, dump: bool = False, on_progress=None,
               run_child=None, profile: str | None = None) -> RunResult:
    """Run `script` and scan what it compiled. `keep`: None keeps the run among the newest
    IRSCOPE_KEEP_RUNS, True pins it, False removes it at the end; `out` puts it in that directory.
    Ctrl-C (or the script's own KeyboardInterrupt) removes the run and raises KeyboardInterrupt.
    `profile`: "time" times every kernel with Proton, "counters" runs the child under Nsight Compute
    (irscope/pipeline/run_profile.py; never with `target`).
    `on_progress`: the scan's (irscope.pipeline.analyze.scan); `run_child(command, env) -> exit code` runs the
    child instead of subprocess.run (the CLI's, which shows a spinner: irscope/render/progress.py)."""
    from irscope.pipeline.analyze import scan

    log = log or sys.stderr
    work, temporary = _run_directory(script, target, keep, out)
    cache, launches, outcome_file = work / "cache", work / "launches.jsonl", work / "outcome.json"
    env = dict(os.environ, TRITON_CACHE_DIR=str(cache), TRITON_HOME=str(work / "home"), TRITON_ALWAYS_COMPILE="1",
               PYTHONUNBUFFERED="1")
    if target:  # what a script reads to know that its outputs are not computed
        env["IRSCOPE_TARGET"] = target
    dump_file = work / "mlir-dump.txt"
    if dump:  # Triton 3.3+ writes the dump to this file; older ones print it to stderr
        env.update(MLIR_ENABLE_DUMP="1", MLIR_DUMP_PATH=str(dump_file))
    command = [python or sys.executable, "-m", "irscope.pipeline.runner_child", "--launches", str(launches),
               "--outcome", str(outcome_file)]
    command += ["--target", target] if target else []
    if profile and not target:
        command = profiled_command(command, profile, work)
    command += [script, *args]
    mode = f"for {target} (kernels compile, nothing runs)" if target else "on this machine's GPU"
    print(f"irscope: running {script} {mode}; its output follows", file=log, flush=True)
    print("-" * 30 + " script output " + "-" * 30, file=log, flush=True)
    removable = out is None  # a directory the user named is theirs
    try:
        # The script's stdout goes to irscope's stderr: `--json -` must print nothing but the report.
        code = run_child(command, env) if run_child else subprocess.run(command, env=env, stdout=2).returncode
    except KeyboardInterrupt:
        code = -signal.SIGINT
    if code in (-signal.SIGINT, 130):
        print("-" * 30 + " script interrupted " + "-" * 30, file=log, flush=True)
        if removable:
            shutil.rmtree(work, ignore_errors=True)
        raise KeyboardInterrupt
    print("-" * 30 + f" script exited with {code} " + "-" * 30, file=log, flush=True)
    answers, reason, unprofiled = _read_outcome(outcome_file)
    kept = None if temporary else work
    try:
        recorded = read_launches(launches)
        report = scan(cache, sass=sass, rules=rules, launches=recorded, on_progress=on_progress) \
            if cache.exists() else None
        if report is None:
            from irscope.pipeline.analyze import empty_report

            report = empty_report((str(cache),))
        report = attach_configs(report, launches)
        if dump:
            report = attach_timelines(report, dump_file, log)
        report, run_profile, unprofiled = attach_measurements(report, profile, work, unprofiled, log) \
            if profile and not target else (report, None, None)
    except BaseException:  # Ctrl-C while analyzing: nothing is reported, the run goes
        if removable:
            shutil.rmtree(work, ignore_errors=True)
        raise
    total = sum(launch.count for group in recorded.values() for launch in group)
    device = None
    if target:
        from irscope.pipeline.stand_in.devices import DEVICES

        device = DEVICES[target].name
    report = replace(report, run=ScriptRun(script, tuple(args), target, code, total, device, answers, reason,
                                           str(kept) if kept else None, run_profile, unprofiled))
    if kept is None:
        shutil.rmtree(work, ignore_errors=True)
    else:
        from irscope.occupancy.families import derived

        report.save(str(work / "report.json"), derived(report))  # with the families, as --json writes it
        kept_runs.finish(work, len(report.kernels), code)
    return RunResult(report, code, kept)


def _run_directory(script: str, target: str | None, keep: bool | None, out: str | None) -> tuple[Path, bool]:
    """(the run's directory, whether it is temporary)."""
    if out:
        work = Path(out)
        work.mkdir(parents=True, exist_ok=True)
        return work, False
    if keep is False or (keep is None and kept_runs.keep_count() == 0):
        return Path(tempfile.mkdtemp(prefix="irscope-run-")), True
    work = kept_runs.new_run(script, target, pinned=keep is True)
    kept_runs.prune(max(kept_runs.keep_count() - 1, 0), spare=work)
    return work, False


def _read_outcome(path: Path) -> tuple[tuple[StandInAnswer, ...], str | None, str | None]:
    """The stand-in's answers, most asked first, the failure the child named (or None), and why Proton gave no
    profile (or None)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return (), None, None  # the script ended the process itself (os._exit) or was killed
    if not isinstance(data, dict):
        return (), None, None
    asked = data.get("questions") if isinstance(data.get("questions"), dict) else {}
    answers = sorted(((q, n) for q, n in asked.items() if isinstance(q, str) and isinstance(n, int)),
                     key=lambda qn: (-qn[1], qn[0]))
    reason, unprofiled = data.get("reason"), data.get("profile_problem")
    return (tuple(StandInAnswer(q, n) for q, n in answers), reason if isinstance(reason, str) else None,
            unprofiled[:500] if isinstance(unprofiled, str) else None)


def attach_configs(report: Report, launches: Path) -> Report:
    """Give each kernel, by its hash, the constexprs it was compiled with and the autotuners' choices
    of it. After the scan, as the timelines are: the analyses do not read them."""
    compiled, chosen = read_compiled(launches), read_autotune(launches)
    if not compiled and not chosen:
        return report
    kernels = tuple(replace(kr, config=compiled.get(kr.kernel.hash or ""),
                            autotune=chosen.get(kr.kernel.hash or "", ()))
                    for kr in report.kernels)
    return replace(report, kernels=kernels)


def attach_timelines(report: Report, dump_file: Path, log) -> Report:
    """Give each kernel the pass timeline of its compile: matched by name, and by num_warps
    and `shared` where several compiles share a name (autotune configs)."""
    from irscope.model.errors import ArtifactError
    from irscope.parsers.mlir_dump import read_dump
    from irscope.ir.pass_timeline import timelines

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
