"""What a kernel was specialized for (its argument signature and dot tiles): the result
irscope/ir/specialization.py reads from the TTGIR and a KernelReport keeps."""

from __future__ import annotations

from dataclasses import dataclass

from irscope.model.facts import Origin


@dataclass(frozen=True)
class Tile:
    """One dot's shape: the result is M x N, the first operand M x K."""

    m: int
    n: int
    k: int
    origin: Origin

    def __str__(self) -> str:
        return f"{self.m}x{self.n}x{self.k}"


@dataclass(frozen=True)
class Specialization:
    signature: str  # the kernel's arguments as `type{facts}`, comma-separated; "" when unread
    tiles: tuple[Tile, ...] = ()  # each distinct dot shape, first seen first

    @property
    def tile(self) -> str | None:
        """The config's tile as a table shows it: the first dot's, `+` when the kernel has more shapes."""
        if not self.tiles:
            return None
        return str(self.tiles[0]) + ("+" if len(self.tiles) > 1 else "")
