"""Scale: cold scans of 1,000 to 10,000 kernels, and the speed-up from 1 worker to one per core.

    python bench/scale.py ~/.cache/irscope-bench/corpus-1000 [--copies 10] [--json out.json]

The bench corpus (bench/corpus.py, ~1,000 config variants) is laid out again --copies times, each
copy a folder of hard links beside the corpus (`<corpus>-copies/copyNN/`):
the same files under other directories, so every kernel is analyzed (a kernel's results are keyed by
its directory; nothing in a scan dedupes identical bytes) and the corpus itself is never written.
Each scan is `irscope scan DIR --no-cache` in a child process (bench/run.py's run_once: wall time and
the peak summed PSS of the process tree), output to /dev/null.

- linear: 1, 1/4, 1/2 and all of --copies with a worker per core: kernels per second at each size,
  and the largest's throughput against the smallest's (issue 25: within 10%);
- workers: the corpus itself with -j 1, 2, 4, 8, ... up to the cores: the speed-up over -j 1
  (issue 25: 16 workers at least 12x one);
- with --at-scale, the largest scan again with -j 1: the speed-up of a worker per core at 10,000 kernels,
  where a run's fixed cost (imports, the last results) is spread over ten times the kernels and each
  worker's memoized layouts have seen ten times as many of a family's configs.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import kernel_dirs, run_once  # noqa: E402  (bench/run.py, beside this file)


def replicas(corpus: Path, copies: int) -> list[Path]:
    """`copies` folders, each the corpus's kernel directories again as hard links."""
    dirs = kernel_dirs(corpus)
    out = corpus.parent / f"{corpus.name}-copies"
    folders = [out / f"copy{n:02d}" for n in range(copies)]
    for folder in folders:
        if folder.is_dir() and len(kernel_dirs(folder)) == len(dirs):
            continue
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
        for source in dirs:
            (folder / source.name).mkdir(parents=True)
            for f in source.iterdir():
                if f.is_file():
                    os.link(f, folder / source.name / f.name)
    return folders


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus")
    ap.add_argument("--copies", type=int, default=10, help="the largest scan: this many copies of the corpus")
    ap.add_argument("--json")
    ap.add_argument("--at-scale", action="store_true", help="also the largest scan with -j 1 (minutes)")
    args = ap.parse_args()
    corpus = Path(args.corpus).expanduser().resolve()
    per_copy = len(kernel_dirs(corpus))
    folders = replicas(corpus, args.copies)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    scan = [sys.executable, "-m", "irscope", "scan", "--no-cache", "--quiet"]
    rows: dict[str, list] = {"linear": [], "workers": []}
    for copies in sorted({1, max(1, args.copies // 4), max(1, args.copies // 2), args.copies}):
        seconds, rss = run_once([*scan, *map(str, folders[:copies])])
        count = copies * per_copy
        rows["linear"].append({"kernels": count, "seconds": seconds, "peak_rss_kib": rss})
        print(f"  {count} kernels, {cores} workers: {seconds:.2f} s, {count / seconds:,.0f} kernels/s, "
              f"{rss / 1024:,.0f} MB", file=sys.stderr)
    jobs = sorted({1, *(j for j in (2, 4, 8, 16, 32, 64) if j < cores), cores})
    for j in jobs:
        seconds, rss = run_once([*scan, str(corpus), "-j", str(j)])
        rows["workers"].append({"jobs": j, "seconds": seconds, "peak_rss_kib": rss})
        print(f"  {per_copy} kernels, -j {j}: {seconds:.2f} s, {rss / 1024:,.0f} MB", file=sys.stderr)

    print(f"{platform.machine()}, {cores} cores, Python {platform.python_version()}")
    print("| kernels | seconds | kernels/s | peak PSS MB |\n|---:|---:|---:|---:|")
    for r in rows["linear"]:
        print(f"| {r['kernels']:,} | {r['seconds']:.2f} | {r['kernels'] / r['seconds']:,.0f} | "
              f"{r['peak_rss_kib'] / 1024:,.0f} |")
    small, large = rows["linear"][0], rows["linear"][-1]
    ratio = (large["kernels"] / large["seconds"]) / (small["kernels"] / small["seconds"])
    print(f"throughput at {large['kernels']:,} kernels / at {small['kernels']:,}: {ratio:.2f}")
    one = rows["workers"][0]["seconds"]
    print("| workers | seconds | speed-up | peak PSS MB |\n|---:|---:|---:|---:|")
    for r in rows["workers"]:
        print(f"| {r['jobs']} | {r['seconds']:.2f} | {one / r['seconds']:.1f}x | {r['peak_rss_kib'] / 1024:,.0f} |")
    if args.at_scale:
        seconds, rss = run_once([*scan, *map(str, folders), "-j", "1"])
        rows["at_scale"] = {"kernels": large["kernels"], "seconds_one": seconds, "peak_rss_kib_one": rss}
        print(f"{large['kernels']:,} kernels: -j 1 {seconds:.2f} s, -j {cores} {large['seconds']:.2f} s: "
              f"{seconds / large['seconds']:.1f}x")
    if args.json:
        Path(args.json).write_text(json.dumps({"cores": cores, "per_copy": per_copy, **rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
