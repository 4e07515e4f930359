"""What a rule reports: a typed, saveable finding that points at an artifact line.

Rules live in `rules/` (installed as `irscope.rules`), the engine in irscope/engine/selection.py.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass
from typing import Literal

# Most serious first. A Literal: a saved report's finding with any other severity is malformed
# (irscope/model/serde.py checks it when a report is read), not a ValueError in a renderer's sort.
Severity = Literal["error", "warning", "info"]
SEVERITIES: tuple[str, ...] = typing.get_args(Severity)


@dataclass(frozen=True)
class Evidence:
    """One number behind a finding: a count, a width in bytes, a distance in instructions."""

    name: str
    value: int


@dataclass(frozen=True)
class Finding:
    code: str  # "IRS101": stable, never reused
    slug: str  # "narrow-global-load"
    severity: Severity
    message: str  # what is wrong, with the numbers
    fix: str  # how to fix it in the kernel
    kernel: str  # the kernel's key in the report
    stage: str  # the artifact the finding is about: "amdgcn", "ptx", "ttgir", "json", ...
    path: str  # that artifact
    line: int | None  # its first line the finding covers (None for a binary artifact)
    lines: tuple[int, ...] = ()  # every artifact line the finding covers
    python_file: str | None = None
    python_line: int | None = None
    evidence: tuple[Evidence, ...] = ()

    def number(self, name: str) -> int | None:
        return next((e.value for e in self.evidence if e.name == name), None)

    @property
    def where(self) -> str:
        at = self.path if self.line is None else f"{self.path}:{self.line}"
        if self.python_line is not None and (self.python_file, self.python_line) != (self.path, self.line):
            at += f" ({self.python_file}:{self.python_line})"
        return at

    def __str__(self) -> str:
        return f"{self.where}: {self.code} [{self.severity}] {self.message}"
