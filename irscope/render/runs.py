"""`irscope runs`: the kept script runs, newest first, in a table that fits 80 columns."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from rich.text import Text

from irscope.pipeline.kept_runs import KeptRun
from irscope.model.safe_text import printable
from irscope.render.table import Column, draw_table

# The id says when, which script and which target: 20261124-131957-liger_kernel_ops-gfx942-d967.
COLUMNS = (Column("id", shrink=True, min_width=24), Column("kernels", "right"), Column("exit", "right"),
           Column("size", "right"), Column("kept"))


def runs_table(runs: Sequence[KeptRun], root: Path, width: int | None) -> Text:
    """One row a run; `width`: the terminal's, the id column is cut to fit (ids are unique by prefix)."""
    rows = [[printable(r.id), "-" if r.kernels is None else f"{r.kernels:,}",
             "-" if r.exit_code is None else str(r.exit_code), _size(r.size), "pinned" if r.pinned else "newest"]
            for r in runs]
    return draw_table(f"{len(runs)} kept runs in {printable(str(root))}", COLUMNS, rows, width)


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"
