"""Where the artifacts a loaded report names may be read from (a saved report is untrusted input).

A report names files by path; anyone can write one, with `/proc/self/environ` or a FIFO as a
kernel's `.amdgcn`. Each artifact of a loaded report is confined to a directory the user named:
the report's scan root it lies under, when that root exists on this machine, or, with
`--artifacts DIR`, DIR itself, where the artifact's path relative to its root is looked up (a
report from a CI machine read against a local copy of the cache). irscope/model/artifact_reader.py
then reads it only there, through no link, and only when its bytes match the report's digest.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from irscope.model.kernel import Artifact, KernelReport
    from irscope.model.report import Report


def confine(report: Report, artifacts_dir: str | None = None) -> Report:
    """The report with each artifact marked as a saved report's, and given the directory it may be read under."""
    kernels = tuple(_confine_kernel(kr, report.roots, artifacts_dir) for kr in report.kernels)
    return replace(report, kernels=kernels)


def _confine_kernel(kr: KernelReport, roots: tuple[str, ...], artifacts_dir: str | None) -> KernelReport:
    artifacts = tuple(_confine(a, roots, kr.kernel.layout == "file", artifacts_dir) for a in kr.kernel.artifacts)
    return replace(kr, kernel=replace(kr.kernel, artifacts=artifacts))


def _confine(artifact: Artifact, roots: tuple[str, ...], root_is_file: bool, artifacts_dir: str | None) -> Artifact:
    path = os.path.normpath(artifact.path)
    for root in roots:
        # A file named on the command line (layout "file") has its directory as the root.
        base = os.path.normpath(os.path.dirname(root) if root_is_file else root)
        rel = _relative(path, base)
        if rel is None:
            continue
        if artifacts_dir is not None:
            return replace(artifact, path=os.path.join(artifacts_dir, rel), from_report=True,
                           confined_to=artifacts_dir)
        return replace(artifact, from_report=True, confined_to=base if os.path.isdir(base) else None)
    return replace(artifact, from_report=True, confined_to=None)


def _relative(path: str, base: str) -> str | None:
    """`path` relative to `base` when it lies under it (compared as written: no `..` left after
    normalizing, no file system consulted), else None."""
    if base in ("", "."):
        return None if path.startswith(("/", "..")) else path
    if path == base:
        return None  # the root itself is a directory, never an artifact
    prefix = base if base.endswith(os.sep) else base + os.sep
    return path[len(prefix):] if path.startswith(prefix) else None
