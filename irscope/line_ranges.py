"""A set of artifact lines kept as its ranges, "14-18,1901,2073".

An instruction mix keeps the line of every instruction it counts, twice (by kind and by
Python line): as tuples of ints that was ~140 KB a kernel, most of the memory of a
1,000-kernel report. The range text is 5-10x smaller, and it is also how the JSON report
writes them. Iterating gives the lines in the order they were given.
"""

from __future__ import annotations

import re
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
        """From saved text; ValueError when it is not ranges of positive ints. Ranges as
        ranges_text writes them are kept as written; other text ("+4", " 4", "1_0" that int()
        reads) is brought to that form run by run, never line by line ("1-1000000000")."""
        if not text or _SYNTAX.fullmatch(text):
            return cls(text)
        out: list[str] = []
        first = last = None
        for part in text.split(",") if text else ():
            low, _, high = part.partition("-")
            a, b = int(low), int(high or low)
            if a < 0:
                raise ValueError(f"negative line in {text!r:.40}")
            if b < a:
                continue  # an empty run, as range(a, b + 1) reads it
            if last is not None and a == last + 1:
                last = b
                continue
            if first is not None:
                out.append(str(first) if first == last else f"{first}-{last}")
            first, last = a, b
        if first is not None:
            out.append(str(first) if first == last else f"{first}-{last}")
        return cls(",".join(out))

    def __setattr__(self, name, value):
        raise AttributeError("LineRanges is immutable")

    def __iter__(self) -> Iterator[int]:
        return iter(parse_ranges(self.text))

    def __len__(self) -> int:
        count = 0
        for part in self.text.split(",") if self.text else ():
            low, _, high = part.partition("-")
            count += max(0, int(high or low) - int(low) + 1)  # "5-3" is empty, as iterating it says
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


_NUMBER = r"(?:0|[1-9][0-9]{0,17})"
# What ranges_text writes, and what is kept as it is: the result index reads ~40 of these a kernel,
# and merging runs by hand cost half of reading an entry. A run "5-3" or runs that touch ("1-2,3")
# only come from a hand-edited file; every method reads them consistently (empty, or as given).
_SYNTAX = re.compile(rf"{_NUMBER}(?:-{_NUMBER})?(?:,{_NUMBER}(?:-{_NUMBER})?)*")


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
