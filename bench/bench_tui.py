"""Time to first paint of `irscope tui` on a bench corpus (issue 10).

    python bench/bench_tui.py ~/.cache/irscope-bench/corpus-1000

Headless (Textual's run_test at 160x48), each the best of --repeat, Python start-up and
imports excluded (bench/run.py measures those):
- first paint: `irscope tui CORPUS` as a user runs it: the harvest, the result index keyed
  and the workers started (pipeline.ScanRun), then the app mounted and the kernel table,
  one row per kernel, drawn;
- all results: until the last kernel's row is filled in, with the result index warm, and
  (with --cold) empty;
- from a Report in memory (`irscope scan --tui`, a saved report): mount to the table drawn.
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import os
import shutil
import tempfile
import time


async def _open(count: int, **kwargs) -> tuple[float, float]:
    """(first paint, all results) in seconds, counted from `start` in kwargs."""
    from irscope.tui.app import IrscopeApp
    from irscope.tui.kernel_table import KernelTable

    start = kwargs.pop("start")
    run = kwargs.pop("paths", None)
    if run is not None:
        from irscope.pipeline.analyze import ScanRun

        kwargs["run"] = ScanRun(run, index=True)
    app = IrscopeApp(**kwargs)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        table = app.screen.query_one(KernelTable)
        assert table.row_count == count and table.first_painted is not None
        painted = table.first_painted - start
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert not app.screen.pending and app.screen.report is not None
        return painted, time.perf_counter() - start


def measure(corpus: str, count: int, **kwargs) -> tuple[float, float]:
    return asyncio.run(_open(count, start=time.perf_counter(), **kwargs))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cold", action="store_true", help="also open with an empty result index (slow)")
    args = ap.parse_args()
    corpus = os.path.expanduser(args.corpus)
    index = tempfile.mkdtemp(prefix="irscope-bench-index-")
    atexit.register(shutil.rmtree, index, ignore_errors=True)
    os.environ["IRSCOPE_CACHE_DIR"] = index
    from irscope.pipeline.analyze import scan

    report = scan(corpus, index=True)  # fill the index
    count = len(report.kernels)
    warm = [measure(corpus, count, paths=corpus) for _ in range(args.repeat)]
    memory = [measure(corpus, count, report=report)[0] for _ in range(args.repeat)]
    print(f"{count} kernels, `irscope tui CORPUS`, result index warm: first paint {min(p for p, _ in warm):.2f} s, "
          f"all results {min(a for _, a in warm):.2f} s")
    print(f"from a Report in memory: first paint {min(memory):.2f} s")
    if args.cold:
        shutil.rmtree(index)
        paint, done = measure(corpus, count, paths=corpus)
        print(f"with the result index empty: first paint {paint:.2f} s, all results {done:.2f} s")
    shutil.rmtree(index, ignore_errors=True)


if __name__ == "__main__":
    main()
