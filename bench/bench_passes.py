"""`irscope passes` on a dump of many tiny modules: the console view beside the JSON, for n and 2n.

    python bench/bench_passes.py [--modules 20000] [--out /tmp/irscope-bench-passes]

Issue 22 item 15: 200,000 tiny modules (35 MB) took 95 s on the console and 1.35 s as JSON; a
rich Table rendered every cell as its own renderable (about 0.4 ms a row). The dump is
hand-made hostile input (one Inliner, then `--modules` Canonicalizer dumps of a module whose
attribute flips, so every pass changed the IR and has its row); it is written under --out, never
into the repository. Prints the wall time of each run and the ratio 2n / n (2 is linear).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HEADER = "// -----// IR Dump Before {} ('builtin.module' operation) //----- //\n"


def write_dump(path: Path, modules: int) -> None:
    parts = [HEADER.format("Inliner (inline)"), "module {\n}\n"]
    for i in range(modules):
        parts += [HEADER.format("Canonicalizer (canonicalize)"), f"module attributes {{a = {i % 2}}} {{\n}}\n"]
    path.write_text("".join(parts))


def run(*argv: str) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "irscope", "passes", *argv], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--modules", type=int, default=20000)
    ap.add_argument("--out", type=Path, default=Path("/tmp/irscope-bench-passes"))
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    times = {}
    for n in (args.modules, 2 * args.modules):
        dump = args.out / f"tiny-{n}.txt"
        write_dump(dump, n)
        times[n] = (run(str(dump)), run(str(dump), "--json"))
        print(f"{n:>9,} modules ({dump.stat().st_size / 1e6:.1f} MB): console {times[n][0]:.2f} s, "
              f"json {times[n][1]:.2f} s")
    n = args.modules
    print(f"2n / n: console {times[2 * n][0] / times[n][0]:.2f}, json {times[2 * n][1] / times[n][1]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
