"""scan: harvest -> parse -> model -> Report. The one pipeline every command runs."""

from __future__ import annotations

import os
from dataclasses import replace
from datetime import datetime, timezone
from typing import Iterable

from irscope import __version__
from irscope.harvester import harvest
from irscope.model import Kernel, KernelReport
from irscope.report import Report
from irscope.resources import read_resources
from irscope.targets import infer_target


def scan(paths: str | os.PathLike | Iterable[str | os.PathLike] | None = None) -> Report:
    """Analyze every kernel under `paths` (default: the user's Triton cache)."""
    found = harvest(paths)
    kernels = tuple(analyze_kernel(k, found.problems.get(k.key, ())) for k in found.kernels)
    return Report(
        irscope_version=__version__,
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        roots=found.roots,
        kernels=kernels,
        problems=found.problems.get("", ()),
        skipped=found.skipped,
    )


def analyze_kernel(kernel: Kernel, problems=()) -> KernelReport:
    if kernel.target is None:
        inferred = infer_target(kernel)
        if inferred is not None:
            kernel = replace(kernel, target=inferred.value)
    resources, more = read_resources(kernel, kernel.target)
    return KernelReport(kernel=kernel, resources=resources, problems=tuple(problems) + tuple(more))
