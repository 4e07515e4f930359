"""Where a path really is, and whether it lies in a scanned root: the check that keeps every
write (an output file the user named, the result index) out of the caches irscope reads."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable


def real(path: str | os.PathLike) -> Path:
    """`path` with links and `..` resolved as far as it exists, so a link into a cache is seen as the cache."""
    return Path(os.path.realpath(os.path.abspath(path)))


def overlapping_root(path: str | os.PathLike, roots: Iterable[str | os.PathLike]) -> str | None:
    """The first of `roots` that `path` lies in or is, else None."""
    target = real(path)
    for root in roots:
        base = real(root)
        if target == base or base in target.parents:
            return str(root)
    return None
