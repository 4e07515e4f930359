"""A set of artifact lines kept as its ranges, "14-18,1901,2073".

An instruction mix keeps the line of every instruction it counts, twice (by kind and by
Python line): as tuples of ints that was ~140 KB a kernel, most of the memory of a
1,000-kernel report. The range text is 5-10x smaller, and it is also how the JSON report
writes them. Iterating gives the lines in the order they were given.
"""

from __future__ import annotations

from typing import Iterable, Iterator


class LineRanges:
    __slots__ = ("text",)

    def __init__(self, text: str = "") -> None:
        object.__setattr__(self, "text", text)

    @classmethod
    def of(cls, lines: Iterable[int]) -> "LineRanges":
        return cls(ranges_text(lines))

    @classmethod
    def parse(cls, text: str) -> "LineRanges":
        """From saved text; ValueError when it is not ranges of positive ints."""
        lines = parse_ranges(text)
        if any(n < 0 for n in lines):
            raise ValueError(f"negative line in {text!r:.40}")
        return cls(ranges_text(lines))

    def __setattr__(self, name, value):
        raise AttributeError("LineRanges is immutable")

    def __iter__(self) -> Iterator[int]:
        return iter(parse_ranges(self.text))

    def __len__(self) -> int:
        count = 0
        for part in self.text.split(",") if self.text else ():
            low, _, high = part.partition("-")
            count += int(high or low) - int(low) + 1
        return count

    def __bool__(self) -> bool:
        return bool(self.text)

    def __getitem__(self, index):
        return parse_ranges(self.text)[index]

    def __contains__(self, line: object) -> bool:
        return line in parse_ranges(self.text)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LineRanges):
            return self.text == other.text
        if isinstance(other, (tuple, list)):
            return parse_ranges(self.text) == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.text)

    def __repr__(self) -> str:
        return f"LineRanges({self.text!r})"

    def __reduce__(self):
        return (LineRanges, (self.text,))


def ranges_text(lines: Iterable[int]) -> str:
    out: list[str] = []
    first = last = None
    for n in lines:
        if last is not None and n == last + 1:
            last = n
            continue
        if first is not None:
            out.append(str(first) if first == last else f"{first}-{last}")
        first = last = n
    if first is not None:
        out.append(str(first) if first == last else f"{first}-{last}")
    return ",".join(out)


def parse_ranges(text: str) -> tuple[int, ...]:
    lines: list[int] = []
    for part in text.split(",") if text else ():
        low, _, high = part.partition("-")
        lines.extend(range(int(low), int(high or low) + 1))
    return tuple(lines)
