"""`irscope.load`: a Report for a test suite's own checks (irscope/testing.py) and the pytest plugin.

Unlike `scan`, it honours `[tool.irscope]` as the command line does, reads a saved report as
well as a cache, and keeps irscope's result index on, so a test session re-reads an unchanged
cache in a fraction of the analysis time.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Iterable, Sequence

from irscope.model.json_input import REPORT, json_kind
from irscope.model.report import Report
from irscope.engine.selection import RuleSelection, load_config

PathLike = str | os.PathLike


def selectors(values: str | Iterable[str] | None) -> tuple[str, ...]:
    """`"IRS1,IRS201"` or `["IRS1", "IRS201"]` -> ("IRS1", "IRS201"): the CLI's comma lists."""
    if values is None:
        return ()
    if isinstance(values, str):
        values = [values]
    return tuple(v.strip() for value in values for v in value.split(",") if v.strip())


def selection(select: str | Iterable[str] | None = None, ignore: str | Iterable[str] | None = None,
              config: bool | PathLike = True) -> RuleSelection:
    """`[tool.irscope]` of the nearest pyproject.toml at or above `config` (a directory; True: the
    current one; False: none), then `select` (replacing its select) and `ignore` (adding to it)."""
    base = RuleSelection() if config is False else load_config(None if config is True else Path(config))
    return base.extended(selectors(select), selectors(ignore))


def is_saved_report(path: PathLike) -> bool:
    """A `*.json` file holding a Report (`irscope scan --json`), not a kernel's metadata json."""
    return Path(path).suffix == ".json" and json_kind(path)[0] == REPORT


def load(paths: PathLike | Sequence[PathLike] | None = None, *, select: str | Iterable[str] | None = None,
         ignore: str | Iterable[str] | None = None, config: bool | PathLike = True,
         rules: RuleSelection | None = None, sass: bool = False, index: bool | PathLike = True,
         jobs: int | None = None, on_progress=None) -> Report:
    """Every kernel under `paths` with its resources, occupancy and findings.

    `paths`: what `irscope scan` takes (a Triton cache, a kernel directory, an artifact; default:
    the cache Triton itself uses), or one report saved with `irscope scan --json`.
    `select`/`ignore`: rule selectors as on the command line (codes, prefixes, slugs, ALL), over
    `[tool.irscope]` (`config`: see `selection`); `rules` gives a RuleSelection instead.
    A saved report keeps the findings the selection asks for. Raises HarvestError, ReportError
    or RuleConfigError (ValueError) on unusable input. `on_progress`: irscope.pipeline.analyze.scan's (the CLI's
    progress line; default: nothing shown).
    """
    chosen = rules if rules is not None else selection(select, ignore, config)
    many = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths or [])
    saved = [p for p in many if is_saved_report(p)]
    if saved:
        if len(many) > 1:
            raise ValueError(f"give one saved report, or caches and artifacts to scan, not both: {many}")
        return keep_selected(Report.load(saved[0]), chosen)
    from irscope.pipeline.analyze import scan

    return scan(many or None, sass=sass, rules=chosen, index=index, jobs=jobs, on_progress=on_progress)


def keep_selected(report: Report, chosen: RuleSelection) -> Report:
    """The report with only the findings `chosen` asks for (a saved report ran its own rules)."""
    kernels = tuple(replace(r, findings=tuple(f for f in r.findings if chosen.reports(f, r.kernel.name)))
                    for r in report.kernels)
    return replace(report, kernels=kernels)
