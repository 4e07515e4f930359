"""Where irscope keeps its own data: `$IRSCOPE_CACHE_DIR`, else `$XDG_CACHE_HOME/irscope`, else
`~/.cache/irscope`. The result index (`index/`, at most `$IRSCOPE_INDEX_MAX_SIZE`, default 256 MiB:
irscope/pipeline/index_db.py) and kept script runs (`runs/`) live there, never in a tree irscope scans or a
cache Triton writes."""

from __future__ import annotations

import os
from pathlib import Path


def irscope_home() -> Path:
    if os.environ.get("IRSCOPE_CACHE_DIR"):
        return Path(os.environ["IRSCOPE_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "irscope"


def default_cache_dir() -> Path:
    """Where Triton itself caches: $TRITON_CACHE_DIR, else $TRITON_HOME/.triton/cache, else ~/.triton/cache."""
    if os.environ.get("TRITON_CACHE_DIR"):
        return Path(os.environ["TRITON_CACHE_DIR"])
    home = os.environ.get("TRITON_HOME") or os.path.expanduser("~")
    return Path(home) / ".triton" / "cache"
