"""irscope: why is this Triton kernel slow at the codegen level?

`irscope.scan(path)` harvests every kernel under a Triton cache (or dump directory, or
one artifact) and returns a Report; `irscope.load(path)` does the same with the rules
`[tool.irscope]` selects, or reads a saved report (for a test suite's own checks, with
`irscope.testing`). Importing irscope imports neither triton, torch nor textual: a copied
cache is analyzed on any machine.
"""

from __future__ import annotations

from irscope.model.version import __version__

# The rest is imported on first use (PEP 562): `irscope --version` and the CLI's start-up must not
# pay for the pipeline and the model (tests/test_import.py; bench/RESULTS.md, issue 25).
_LAZY = {"harvest": "irscope.pipeline.harvester", "HarvestError": "irscope.pipeline.harvester",
         "scan": "irscope.pipeline.analyze", "Report": "irscope.model.report",
         "ReportError": "irscope.model.report", "load": "irscope.api"}

__all__ = ["__version__", "harvest", "scan", "load", "Report", "HarvestError", "ReportError"]


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'irscope' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
