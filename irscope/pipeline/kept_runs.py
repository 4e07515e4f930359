"""Script runs kept after `irscope scan script.py`, so their reports can be opened again.

A script run compiles into a cache of its own. Its report names that cache's artifacts, so the
TUI and `diff --stage` can show them later only if the cache outlives the run: each run is
kept under `runs/` in irscope's own directory (irscope/pipeline/home.py), never in the user's caches.
The newest IRSCOPE_KEEP_RUNS runs (default 10) are kept and older ones removed when a new run
starts; `--keep` pins a run (never removed but by `irscope runs rm`), `--no-keep` removes it
when irscope exits, `--out DIR` puts it in DIR, outside this listing.

A run directory holds `run.json` (what ran), `cache/`, `launches.jsonl`, `outcome.json` and,
once analyzed, `report.json`. Everything read back here is treated as untrusted: a broken
`run.json` lists the run with what is known, and only plain directories directly under
`runs/` are ever removed.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from irscope.pipeline.home import irscope_home

DEFAULT_KEEP = 10
_ID = re.compile(r"^[0-9]{8}-[0-9]{6}-[A-Za-z0-9_.-]{1,80}$")


@dataclass(frozen=True)
class KeptRun:
    id: str
    path: Path
    script: str
    target: str | None
    started: float  # seconds since the epoch
    pinned: bool
    kernels: int | None  # kernels in its report (None: not analyzed, e.g. interrupted)
    exit_code: int | None  # the script's
    size: int  # bytes on disk

    @property
    def report(self) -> Path:
        return self.path / "report.json"


def runs_dir() -> Path:
    return irscope_home() / "runs"


def keep_count() -> int:
    """How many unpinned runs are kept: IRSCOPE_KEEP_RUNS, else DEFAULT_KEEP."""
    try:
        return max(0, int(os.environ.get("IRSCOPE_KEEP_RUNS", DEFAULT_KEEP)))
    except ValueError:
        return DEFAULT_KEEP


def new_run(script: str, target: str | None, pinned: bool) -> Path:
    """A fresh run directory, named by time, script and target: `20261124-131500-matmul-gfx942-3fa1`."""
    stem = re.sub(r"[^A-Za-z0-9_.-]", "_", Path(script).stem)[:40] or "script"
    name = f"{time.strftime('%Y%m%d-%H%M%S')}-{stem}-{target or 'gpu'}-{secrets.token_hex(2)}"
    path = runs_dir() / name
    path.mkdir(parents=True)
    (path / "run.json").write_text(json.dumps({"script": os.path.realpath(script), "target": target,
                                               "started": time.time(), "pinned": pinned}), encoding="utf-8")
    return path


def list_runs() -> list[KeptRun]:
    """The kept runs, newest first."""
    root = runs_dir()
    try:
        entries = list(os.scandir(root))
    except OSError:
        return []
    runs = [_read(Path(e.path)) for e in entries if _ID.match(e.name) and e.is_dir(follow_symlinks=False)]
    return sorted(runs, key=lambda r: (r.started, r.id), reverse=True)


def remove(ids: list[str]) -> tuple[list[str], list[str]]:
    """Remove runs by id (a unique prefix will do): (removed, not found or ambiguous)."""
    runs = list_runs()
    removed, unknown = [], []
    for wanted in ids:
        match = [r for r in runs if r.id == wanted] or [r for r in runs if r.id.startswith(wanted)]
        if len(match) != 1:
            unknown.append(wanted)
            continue
        _delete(match[0].path)
        removed.append(match[0].id)
    return removed, unknown


def prune(keep: int, spare: Path | None = None) -> list[str]:
    """Remove the unpinned runs beyond the newest `keep`, never `spare` (the run starting now)."""
    unpinned = [r for r in list_runs() if not r.pinned and r.path != spare]
    old = unpinned[keep:]
    for run in old:
        _delete(run.path)
    return [r.id for r in old]


def _delete(path: Path) -> None:
    if path.parent == runs_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)


def _read(path: Path) -> KeptRun:
    meta: dict = {}
    try:
        with open(path / "run.json", "rb") as f:
            data = json.loads(f.read(1 << 16))
        meta = data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        pass

    def field(name, kinds, default):
        value = meta.get(name)
        if isinstance(value, bool) != (kinds is bool):  # True is an int: not a time, nor a count
            return default
        return value if isinstance(value, kinds) else default

    started = field("started", (int, float), None)
    if started is None:
        try:
            started = path.stat().st_mtime
        except OSError:
            started = 0.0
    return KeptRun(path.name, path, field("script", str, "?"), field("target", str, None), float(started),
                   field("pinned", bool, False), field("kernels", int, None), field("exit_code", int, None),
                   _size(path))


def finish(path: Path, kernels: int, exit_code: int) -> None:
    """Note in run.json what the run gave, for the listing."""
    try:
        meta = json.loads((path / "run.json").read_text(encoding="utf-8"))
        meta.update(kernels=kernels, exit_code=exit_code)
        (path / "run.json").write_text(json.dumps(meta), encoding="utf-8")
    except (OSError, ValueError, AttributeError):
        pass


def _size(path: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total
