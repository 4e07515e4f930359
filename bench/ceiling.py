"""The machine's own ceiling for N analyses at once: what no scheduling of irscope's workers can beat.

    python bench/ceiling.py CORPUS [--kernels 120]                      # one process: prints its seconds
    for i in $(seq 16); do python bench/ceiling.py CORPUS & done; wait  # 16 at once: each prints its own

Each process harvests CORPUS, analyzes its first 5 kernels (imports, caches), then times `analyze_kernel`
over the first --kernels kernels: no start-up, no harvest, no parent, no result transfer. The throughput of
N at once against one alone is N x (one's seconds) / (the slowest one's seconds): a machine whose cores
slow down when all are busy (clock, memory bandwidth) shows it here (bench/RESULTS.md, issue 25).
"""
from __future__ import annotations

import argparse
import gc
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus")
    ap.add_argument("--kernels", type=int, default=120)
    args = ap.parse_args()
    from irscope.pipeline.analyze import ANALYSIS_GC_THRESHOLD, analyze_kernel
    from irscope.pipeline.harvester import harvest

    kernels = harvest(args.corpus).kernels[: args.kernels]
    gc.set_threshold(*ANALYSIS_GC_THRESHOLD)
    for k in kernels[:5]:
        analyze_kernel(k)
    start = time.perf_counter()
    for k in kernels:
        analyze_kernel(k)
    print(f"{time.perf_counter() - start:.3f}")


if __name__ == "__main__":
    main()
