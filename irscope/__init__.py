"""irscope: why is this Triton kernel slow at the codegen level?

`irscope.scan(path)` harvests every kernel under a Triton cache (or dump directory, or
one artifact) and returns a Report. Importing irscope imports neither triton, torch nor
textual: a copied cache is analyzed on any machine.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__", "harvest", "scan", "Report"]


def __getattr__(name: str):
    # Lazy so `import irscope` stays cheap for the CLI's start-up and for pytest plugins.
    if name == "harvest":
        from irscope.harvest import harvest
        return harvest
    if name == "scan":
        from irscope.scan import scan
        return scan
    if name == "Report":
        from irscope.report import Report
        return Report
    raise AttributeError(f"module 'irscope' has no attribute {name!r}")
