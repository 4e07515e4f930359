"""irscope: why is this Triton kernel slow at the codegen level?

`irscope.scan(path)` harvests every kernel under a Triton cache (or dump directory, or
one artifact) and returns a Report; `irscope.load(path)` does the same with the rules
`[tool.irscope]` selects, or reads a saved report (for a test suite's own checks, with
`irscope.testing`). Importing irscope imports neither triton, torch nor textual: a copied
cache is analyzed on any machine.
"""

from __future__ import annotations

from irscope.model.version import __version__
from irscope.pipeline.harvester import HarvestError, harvest
from irscope.pipeline.analyze import scan
from irscope.model.report import Report, ReportError
from irscope.api import load

__all__ = ["__version__", "harvest", "scan", "load", "Report", "HarvestError", "ReportError"]
