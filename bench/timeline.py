"""Where the workers' time goes in a cold scan: when each task ran in each worker, against the scan's wall time.

    python bench/timeline.py CORPUS [-j N] [--json FILE]

The scan runs as `irscope scan CORPUS --no-cache` runs it (streamed harvest, collection paused), after the
imports. Each worker notes the start and end of each task it runs (a chunk of kernels, or a first kernel's
suspected twins), on the clock all processes share. Printed: the wall time; the workers' busy time against
the time they had (jobs x wall); where the rest went: before each worker's first task (the harvest has not
handed out enough yet), between tasks (waiting for the parent), after its last task (the others' tail); the
tasks that ended last. bench/RESULTS.md (issue 25) reads it.
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path


def _noting(function, log_dir: str, kind: str):
    """`function` (a task the pool runs) wrapped to append (start, end, kind, kernels) to its worker's log."""

    def task(*args, **kwargs):
        start = time.perf_counter()
        out = function(*args, **kwargs)
        names = [w[0].name for w in (args[0] if kind == "chunk" else args[2])]
        with open(os.path.join(log_dir, str(os.getpid())), "a") as log:
            log.write(json.dumps([start, time.perf_counter(), kind, names]) + "\n")
        return out

    task.__module__, task.__qualname__, task.__name__ = function.__module__, function.__qualname__, function.__name__
    return task


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus")
    ap.add_argument("-j", type=int, default=None)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    import irscope.pipeline.analyze as analyze
    from irscope.engine.selection import RuleSelection

    selection = RuleSelection()
    selection.rules()
    log_dir = tempfile.mkdtemp(prefix="irscope-timeline-")
    # The workers fork from this process: they run the wrapped tasks, found by the same names.
    analyze._analyze_chunk = _noting(analyze._analyze_chunk, log_dir, "chunk")
    analyze._twin_chunk = _noting(analyze._twin_chunk, log_dir, "twins")
    with analyze.paused_gc():
        t0 = time.perf_counter()
        run = analyze.ScanRun(args.corpus, rules=selection, jobs=args.j, stream=True)
        harvested = time.perf_counter()
        results = dict(run.results())
        t1 = time.perf_counter()
    tasks = {int(p): [json.loads(line) for line in open(os.path.join(log_dir, p))] for p in os.listdir(log_dir)}
    jobs = run._analyses.jobs
    wall = t1 - t0
    busy = sum(end - start for log in tasks.values() for start, end, _, _ in log)
    before = sum(min(s for s, _, _, _ in log) - t0 for log in tasks.values())
    after = sum(t1 - max(e for _, e, _, _ in log) for log in tasks.values())
    idle_workers = jobs - len(tasks)
    between = jobs * wall - busy - before - after - idle_workers * wall
    every = sorted((task for log in tasks.values() for task in log), key=lambda t: t[1])
    print(f"{len(results)} kernels, {jobs} workers, {sum(len(t[3]) for t in every)} analyzed or confirmed by them")
    print(f"wall {wall:.2f} s (harvest and hand-out {harvested - t0:.2f} s); workers busy {busy:.2f} of "
          f"{jobs * wall:.2f} worker-s ({busy / (jobs * wall):.0%})")
    print(f"idle: before the first task {before:.2f} worker-s, between tasks {between:.2f}, after the last "
          f"{after:.2f}" + (f", {idle_workers} workers never ran a task" if idle_workers else ""))
    print("the tasks that ended last (ended at, took, kind, kernels):")
    for start, end, kind, names in every[-6:]:
        print(f"  {end - t0:6.2f} s  {end - start:5.2f} s  {kind:6}  {len(names)} x {names[0] if names else ''}")
    if args.json:
        args.json.write_text(json.dumps({"wall_s": wall, "jobs": jobs, "busy_s": busy, "before_s": before,
                                         "between_s": between, "after_s": after,
                                         "tasks": [[s - t0, e - t0, k, n] for s, e, k, n in every]}))


if __name__ == "__main__":
    main()
