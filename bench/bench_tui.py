"""Time to first paint of `irscope tui` on a bench corpus (issue 10).

    python bench/bench_tui.py ~/.cache/irscope-bench/corpus-1000

Two figures, each the best of --repeat, headless (Textual's run_test at 160x48):
- the app on a Report already in memory: mount to the kernel table filled and drawn;
- `irscope tui CORPUS` as a user runs it with a warm result index: the scan that reads the
  index, then the same first paint (Python start-up and imports excluded: see bench/run.py).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time


async def first_paint(report) -> float:
    from textual.widgets import DataTable

    from irscope.tui.app import IrscopeApp

    start = time.perf_counter()
    app = IrscopeApp(report=report)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        assert app.screen.query_one(DataTable).row_count == len(report.kernels)
        return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    corpus = os.path.expanduser(args.corpus)
    os.environ.setdefault("IRSCOPE_CACHE_DIR", tempfile.mkdtemp(prefix="irscope-bench-index-"))
    from irscope.pipeline import scan

    scan(corpus, index=True)  # fill the index
    paint, warm = [], []
    for _ in range(args.repeat):
        start = time.perf_counter()
        report = scan(corpus, index=True)
        warm.append(time.perf_counter() - start)
        paint.append(asyncio.run(first_paint(report)))
    print(f"{len(report.kernels)} kernels: first paint {min(paint):.2f} s from a Report in memory; "
          f"{min(warm) + min(paint):.2f} s with the warm index read first ({min(warm):.2f} s of it)")


if __name__ == "__main__":
    main()
