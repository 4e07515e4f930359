"""Kernel launches recorded while `irscope scan script.py` ran the script.

The child process (irscope/runner_child.py) appends one JSON line per launch; here they are
read back, the identical ones counted together, and matched to the harvested kernels by
Triton's cache hash.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from math import prod
from pathlib import Path


@dataclass(frozen=True)
class Launch:
    grid: tuple[int, ...]  # workgroups (blocks) in x, y, z
    num_warps: int | None
    num_stages: int | None
    shared: int | None
    compute_units: int | None  # CUs / SMs of the device (for --target: the usual device of that arch)
    path: str | None  # the script line that launched it
    line: int | None
    # Under --target: why the grid looks sized from this machine's CPU, not the target's GPU
    # (runner_child.cpu_shaped: "grid x = 16 = os.cpu_count() on this machine"); None when it does not.
    cpu_shaped: str | None = None
    count: int = 1  # identical launches

    @property
    def workgroups(self) -> int:
        return prod(self.grid)


@dataclass(frozen=True)
class StandInAnswer:
    """A question the script (or a library it calls) asked the stand-in device, and how often."""

    question: str  # "torch.cuda.get_device_properties", "triton.testing.do_bench"
    count: int


@dataclass(frozen=True)
class ScriptRun:
    """What `irscope scan script.py` ran."""

    script: str
    argv: tuple[str, ...]
    target: str | None  # None: the real GPU
    exit_code: int
    launches: int  # launches recorded, all kernels
    device: str | None = None  # under --target: the device the stand-in answered for ("AMD Instinct MI300X")
    stand_in: tuple[StandInAnswer, ...] = ()  # under --target: what the stand-in answered, most asked first
    reason: str | None = None  # why the script failed, when irscope can name it (a config Triton rejects)
    kept: str | None = None  # the run's directory while it is kept (its cache, launches, report)


def read_launches(path: str | Path) -> dict[str, tuple[Launch, ...]]:
    """Kernel hash -> its distinct launches, in first-seen order. Unreadable lines are skipped:
    a script killed mid-write leaves at most one."""
    counts: Counter = Counter()
    order: dict[str, list[tuple]] = {}
    try:
        lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return {}
    for line in lines:
        try:
            d = json.loads(line)
            key = (tuple(int(g) for g in d["grid"]), d.get("num_warps"), d.get("num_stages"), d.get("shared"),
                   d.get("compute_units"), d.get("path"), d.get("line"),
                   d["cpu_shaped"] if isinstance(d.get("cpu_shaped"), str) else None)
        except (ValueError, KeyError, TypeError):
            continue
        h = d.get("hash") or ""
        if (h, key) not in counts:
            order.setdefault(h, []).append(key)
        counts[(h, key)] += 1
    return {h: tuple(Launch(*key, count=counts[(h, key)]) for key in keys) for h, keys in order.items()}
