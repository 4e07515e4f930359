"""irscope against its floors on a bench corpus (bench/corpus.py), in one run.

    python bench/run.py ~/.cache/irscope-bench/corpus-1000 [--repeat 3] [--json out.json]

Each scenario runs as a child process beside its floor, measured in the same run. Its time
is wall clock (best of --repeat); its memory is the peak, over the run, of the summed PSS
(proportional set size: shared pages divided among their sharers) of the child and every
process under it (the analysis workers included), sampled from /proc.

- floor: one multi-pattern `grep -c` over every text artifact of the corpus (the patterns
  of the instruction classes the rules look at): the cost of reading the bytes;
- cold scan: `irscope scan CORPUS --no-cache`, all rules and occupancy, the console view
  written to /dev/null; once with a worker per core (the default), once with `-j 1`;
- warm re-scan: the same with the result index filled by one scan before (a fresh index
  directory for the run), and again writing the JSON report;
- ISA only: every .amdgcn parsed and its instruction mix computed, no IR, no rules;
- diff: `irscope diff CORPUS CORPUS --no-cache`, against one cold scan;
- scaling: cold scans of the first 250 and 500 kernels (hard links into a scratch
  directory beside the corpus, so the corpus itself is never written).

Ratios, not absolute times, are the claims (bench/RESULTS.md).
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
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
from irscope.isa.mix import instruction_mix
for p in Path(sys.argv[1]).rglob("*.amdgcn"):
    instruction_mix(parse_amdgcn(p.read_text(), str(p)))
"""


def _tree_rss_kib(pid: int) -> int:
    """Summed memory of `pid` and its descendants (Linux /proc; 0 where it cannot be read): each one's PSS
    (smaps_rollup), its share of the pages it uses. Forked workers share the parent's pages copy-on-write;
    summing their RSS counted those pages once per worker (16 idle workers: 440 MB), PSS counts them once."""
    total, stack = 0, [pid]
    while stack:
        p = stack.pop()
        try:
            try:
                with open(f"/proc/{p}/smaps_rollup") as f:
                    total += next((int(line.split()[1]) for line in f if line.startswith("Pss:")), 0)
            except FileNotFoundError:  # a kernel without smaps_rollup (before 4.14): RSS
                with open(f"/proc/{p}/status") as f:
                    total += next((int(line.split()[1]) for line in f if line.startswith("VmRSS:")), 0)
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    stack.extend(int(c) for c in f.read().split())
        except (OSError, ValueError):
            continue
    return total


def run_once(command: list[str]) -> tuple[float, int]:
    """Wall seconds and the peak summed RSS (KiB) of the command's process tree."""
    peak = 0
    start = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, _tree_rss_kib(child.pid))
            done.wait(0.01)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    child.wait()
    seconds = time.perf_counter() - start
    done.set()
    sampler.join()
    if child.returncode not in (0, 1):
        raise SystemExit(f"failed ({child.returncode}): {' '.join(command)}")
    return seconds, peak


def timed(command: list[str], repeat: int) -> tuple[float, int]:
    runs = [run_once(command) for _ in range(max(1, repeat))]
    return min(s for s, _ in runs), max(r for _, r in runs)


def kernel_dirs(corpus: Path) -> list[Path]:
    return sorted(p for p in corpus.iterdir() if p.is_dir() and any(p.glob("*.json")))


def subset(corpus: Path, count: int) -> Path:
    """The first `count` kernel directories, hard-linked (or copied) into a scratch directory."""
    out = corpus.parent / f"{corpus.name}-first{count}"
    if out.is_dir() and len(kernel_dirs(out)) == count:
        return out
    shutil.rmtree(out, ignore_errors=True)
    for d in kernel_dirs(corpus)[:count]:
        (out / d.name).mkdir(parents=True)
        for f in d.iterdir():
            if f.is_file():
                try:
                    os.link(f, out / d.name / f.name)
                except OSError:
                    shutil.copy2(f, out / d.name / f.name)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", help="also write the figures here")
    ap.add_argument("--no-scaling", action="store_true", help="skip the 250- and 500-kernel scans")
    args = ap.parse_args()
    corpus = Path(args.corpus).expanduser().resolve()
    kernels = len(kernel_dirs(corpus))
    files = [str(p) for pattern in TEXT for p in corpus.rglob(pattern)]
    grep = ["grep", "-c", "-E", "|".join(PATTERNS), *files]
    py = sys.executable
    scan = [py, "-m", "irscope", "scan"]
    work = tempfile.mkdtemp(prefix="irscope-bench-")  # a fresh result index and the report, removed at exit
    atexit.register(shutil.rmtree, work, ignore_errors=True)
    os.environ["IRSCOPE_CACHE_DIR"] = os.path.join(work, "index")
    report = os.path.join(work, "report.json")
    once = max(1, args.repeat - 2)
    rows: dict[str, tuple[float, int, int]] = {}

    def row(name: str, command: list[str], repeat: int, count: int = kernels) -> None:
        seconds, rss = timed(command, repeat)
        rows[name] = (seconds, rss, count)
        print(f"  {name}: {seconds:.2f} s, {rss / 1024:.0f} MB", file=sys.stderr)

    row("floor: grep -c", grep, args.repeat)
    row("cold scan (--no-cache)", [*scan, str(corpus), "--no-cache"], once)
    row("cold scan, one process (-j 1)", [*scan, str(corpus), "--no-cache", "-j", "1"], 1)
    row("ISA only (.amdgcn parse + mix)", [py, "-c", ISA_ONLY, str(corpus)], once)
    row("diff of the corpus with itself", [py, "-m", "irscope", "diff", str(corpus), str(corpus), "--no-cache"], 1)
    run_once([*scan, str(corpus)])  # fill the index
    row("warm re-scan (result index)", [*scan, str(corpus)], args.repeat)
    row("warm re-scan, --json FILE", [*scan, str(corpus), "--json", report], args.repeat)
    if not args.no_scaling:
        for count in (250, 500):
            if count < kernels:
                row(f"cold scan, first {count} kernels", [*scan, str(subset(corpus, count)), "--no-cache"], once,
                    count)

    floor = rows["floor: grep -c"][0]
    cold = rows["cold scan (--no-cache)"][0]
    print(f"{kernels} kernels, {len(files)} text artifacts, {platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}")
    print("| scenario | seconds | x grep | kernels/s | peak PSS MB |\n|---|---:|---:|---:|---:|")
    for name, (seconds, rss, count) in rows.items():
        print(f"| {name} | {seconds:.2f} | {seconds / floor:.1f} | {count / seconds:,.0f} | {rss / 1024:,.0f} |")
    print(f"diff / cold scan: {rows['diff of the corpus with itself'][0] / cold:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"kernels": kernels, "files": len(files),
                                               "rows": {k: {"seconds": s, "peak_rss_kib": r, "kernels": n}
                                                        for k, (s, r, n) in rows.items()}}, indent=1) + "\n")


if __name__ == "__main__":
    main()
