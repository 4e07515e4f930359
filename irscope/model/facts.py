"""Every number irscope reports is a `Fact`: the value plus the `Origin` (artifact file, line, and what on
that line) it was read from. On their own so that the result types beside irscope/model/kernel.py can use
them without importing it (kernel.py imports them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Origin:
    """Where a value was read: a file, a 1-based line when the file is text, and what."""

    path: str
    line: int | None = None
    detail: str | None = None

    def __str__(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        return f"{where} ({self.detail})" if self.detail else where


@dataclass(frozen=True)
class Fact(Generic[T]):
    """A value and the artifact line it came from."""

    value: T
    origin: Origin
