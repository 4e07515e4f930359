"""irscope: why is this Triton kernel slow at the codegen level?

`irscope.scan(path)` harvests every kernel under a Triton cache (or dump directory, or
one artifact) and returns a Report; `irscope.load(path)` does the same with the rules
`[tool.irscope]` selects, or reads a saved report (for a test suite's own checks, with
`irscope.testing`). Importing irscope imports neither triton, torch nor textual: a copied
cache is analyzed on any machine.
"""

from __future__ import annotations

__version__ = "0.1.0"

from irscope.pipeline.harvester import HarvestError, harvest  # noqa: E402
from irscope.pipeline.analyze import scan  # noqa: E402
from irscope.model.report import Report, ReportError  # noqa: E402
from irscope.api import load  # noqa: E402

__all__ = ["__version__", "harvest", "scan", "load", "Report", "HarvestError", "ReportError"]
