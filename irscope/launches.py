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
    count: int = 1  # identical launches

    @property
    def workgroups(self) -> int:
        return prod(self.grid)


@dataclass(frozen=True)
class ScriptRun:
    """What `irscope scan script.py` ran."""

    script: str
    argv: tuple[str, ...]
    target: str | None  # None: the real GPU
    exit_code: int
    launches: int  # launches recorded, all kernels


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
                   d.get("compute_units"), d.get("path"), d.get("line"))
        except (ValueError, KeyError, TypeError):
            continue
        h = d.get("hash") or ""
        if (h, key) not in counts:
            order.setdefault(h, []).append(key)
        counts[(h, key)] += 1
    return {h: tuple(Launch(*key, count=counts[(h, key)]) for key in keys) for h, keys in order.items()}
