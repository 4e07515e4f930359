"""Where a cold scan's wall time goes in the parent process: imports, the harvest (which hands each kernel
to the workers as it goes), the wait for the last result, the report and its drawing.

    python bench/phases.py CORPUS [-j N]

The workers analyze from the 8th kernel the harvest finds; the parent's own CPU time is printed beside each
phase, since the parent shares the cores with its workers (bench/RESULTS.md, issue 25). Cyclic garbage collection
is paused, as `irscope` pauses it for a whole command (irscope/cli/main.py): without that, collections walking
the results piled up cost the parent ~0.7 s of a 1,000-kernel scan that the command never spends.
"""
from __future__ import annotations

import argparse
import io
import time


def main() -> None:
    t0, c0 = time.perf_counter(), time.process_time()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus")
    ap.add_argument("-j", type=int, default=None)
    args = ap.parse_args()
    from rich.console import Console

    import irscope.pipeline.analyze as analyze
    from irscope.engine.selection import RuleSelection
    from irscope.render.console import render

    selection = RuleSelection()
    selection.rules()
    t1 = time.perf_counter()
    with analyze.paused_gc():
        run = analyze.ScanRun(args.corpus, rules=selection, jobs=args.j, stream=True)
        t2, c2 = time.perf_counter(), time.process_time()
        results = dict(run.results())
        t3, c3 = time.perf_counter(), time.process_time()
        render(run.report_of(results), Console(file=io.StringIO(), width=120))
        t4 = time.perf_counter()
    print(f"imports {t1 - t0:.2f} s | harvest and hand-out {t2 - t1:.2f} s (parent CPU since start {c2 - c0:.2f}) | "
          f"last result {t3 - t2:.2f} s later (parent CPU {c3 - c2:.2f}) | report and drawing {t4 - t3:.2f} s | "
          f"total {t4 - t0:.2f} s; {len(results)} kernels")


if __name__ == "__main__":
    main()
