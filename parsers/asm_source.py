"""Source positions in assembly comments, shared by the AMDGCN and PTX parsers.

Triton 3.2+ (AMDGCN) and 3.3-3.8 (PTX) print the inline chain after each `.loc`:
`; standard.py:43:17 @[ gemm.py:32:27 ]` (`//` in PTX). The call sites name files by
basename only; `by_basename` maps a basename back to the `.file` path when exactly one
`.file` has it.
"""

from __future__ import annotations

import re
from typing import Iterable

_CALL_SITE = re.compile(r"@\[\s*([^\s@\]]+):(\d+):(\d+)")


def call_sites(comment: str) -> list[tuple[str, int, int]]:
    """(basename, line, column) of each `@[ file:line:col ]`, innermost call site first."""
    return [(name, int(line), int(col)) for name, line, col in _CALL_SITE.findall(comment)]


def by_basename(paths: Iterable[str]) -> dict[str, str]:
    seen: dict[str, set[str]] = {}
    for path in paths:
        seen.setdefault(path.rsplit("/", 1)[-1], set()).add(path)
    return {base: next(iter(found)) for base, found in seen.items() if len(found) == 1}
