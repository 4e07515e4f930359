"""irscope against its floors on a bench corpus (bench/corpus.py), in one run.

    python bench/run.py ~/.cache/irscope-bench/corpus-1000 [--repeat 3]

Each scenario runs as a child process (its time is wall clock, its memory the child's peak
RSS) beside its floor, measured in the same run:

- floor: one multi-pattern `grep -c` over every text artifact of the corpus (the patterns
  of the instruction classes the rules look at): the cost of reading the bytes;
- cold scan: `irscope scan CORPUS --no-cache --json /dev/null`, all rules and occupancy;
- warm re-scan: the same with the result index filled by one scan before (a fresh index
  directory for the run);
- ISA only: every .amdgcn parsed and its instruction mix computed, no IR, no rules;
- diff: `irscope diff CORPUS CORPUS --no-cache --json /dev/null`, against one cold scan.

Ratios, not absolute times, are the claims (bench/RESULTS.md).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PATTERNS = [r"global_load", r"global_store", r"buffer_load", r"buffer_store", r"ds_read", r"ds_write", r"ds_load",
            r"ds_store", r"s_waitcnt", r"s_barrier", r"v_mfma", r"scratch_", r"ld\.global", r"st\.global",
            r"ld\.shared", r"st\.shared", r"bar\.sync", r"convert_layout", r"local_alloc", r"local_load",
            r"\.vgpr_count", r"\.sgpr_count"]
TEXT = ("*.amdgcn", "*.ptx", "*.ttgir", "*.ttir", "*.llir", "*.json")
ISA_ONLY = """
import sys
from pathlib import Path
from irscope.parsers.amdgcn import parse_amdgcn
from irscope.instruction_mix import instruction_mix
for p in Path(sys.argv[1]).rglob("*.amdgcn"):
    instruction_mix(parse_amdgcn(p.read_text(), str(p)))
"""


def timed(command: list[str], repeat: int) -> tuple[float, int]:
    """Best wall time of `repeat` runs, and the largest peak RSS (KiB) of them. The peak is
    GNU time's %M for that child alone where /usr/bin/time exists, else getrusage's (which
    is the largest of all children so far)."""
    best, rss = float("inf"), 0
    gnu_time = Path("/usr/bin/time").exists()
    for _ in range(repeat):
        start = time.perf_counter()
        if gnu_time:
            done = subprocess.run(["/usr/bin/time", "-f", "%M", *command], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True, check=False)
            best = min(best, time.perf_counter() - start)
            last = done.stderr.strip().splitlines()[-1:] or ["0"]
            rss = max(rss, int(last[0]) if last[0].isdigit() else 0)
        else:
            subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
            best = min(best, time.perf_counter() - start)
            rss = max(rss, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    return best, rss


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", help="also write the figures here")
    args = ap.parse_args()
    corpus = str(Path(args.corpus).expanduser())
    kernels = sum(1 for p in Path(corpus).iterdir() if p.is_dir() and any(p.glob("*.json")))
    files = [str(p) for pattern in TEXT for p in Path(corpus).rglob(pattern)]
    grep = ["grep", "-c", "-E", "|".join(PATTERNS), *files]
    py = sys.executable
    scan = [py, "-m", "irscope", "scan", corpus, "--json", os.devnull]
    os.environ["IRSCOPE_CACHE_DIR"] = tempfile.mkdtemp(prefix="irscope-bench-index-")  # a fresh result index
    rows = {
        "floor: grep -c": timed(grep, args.repeat),
        "cold scan (--no-cache)": timed([*scan, "--no-cache"], max(1, args.repeat - 2)),
        "ISA only (.amdgcn parse + mix)": timed([py, "-c", ISA_ONLY, corpus], max(1, args.repeat - 2)),
        "diff of the corpus with itself": timed([py, "-m", "irscope", "diff", corpus, corpus, "--no-cache",
                                                 "--json", os.devnull], 1),
    }
    subprocess.run(scan, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)  # fill the index
    rows["warm re-scan (result index)"] = timed(scan, args.repeat)
    floor = rows["floor: grep -c"][0]
    cold = rows["cold scan (--no-cache)"][0]
    print(f"{kernels} kernels, {len(files)} text artifacts, {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cores, Python {platform.python_version()}")
    print(f"{'scenario':36} {'seconds':>8} {'x grep':>8} {'kernels/s':>10} {'peak RSS MB':>12}")
    for name, (seconds, rss) in rows.items():
        ratio = seconds / floor
        print(f"{name:36} {seconds:8.2f} {ratio:8.1f} {kernels / seconds:10.0f} {rss / 1024:12.0f}")
    print(f"diff / cold scan: {rows['diff of the corpus with itself'][0] / cold:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"kernels": kernels, "files": len(files),
                                               "rows": {k: {"seconds": s, "peak_rss_kib": r}
                                                        for k, (s, r) in rows.items()}}, indent=1) + "\n")


if __name__ == "__main__":
    main()
