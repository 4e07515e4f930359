"""A set of artifact lines kept as its ranges, "14-18,1901,2073".

An instruction mix keeps the line of every instruction it counts, twice (by kind and by
Python line): as tuples of ints that was ~140 KB a kernel, most of the memory of a
1,000-kernel report. The range text is 5-10x smaller, and it is also how the JSON report
writes them. Iterating gives the lines in the order they were given.
"""

from __future__ import annotations

import re
from typing import Iterable, Iterator

# What a saved report may name: bench/bench_big_isa.py's GEMM, its K loop unrolled 160 times, is about
# 52,000 lines of AMDGCN, and no artifact within the size limits has more than a few million.
MAX_LINE = 2 ** 31 - 1
MAX_LINES = 2 ** 22


class LineRanges:
    __slots__ = ("text",)

    def __init__(self, text: str = "") -> None:
        object.__setattr__(self, "text", text)

    @classmethod
    def of(cls, lines: Iterable[int]) -> "LineRanges":
        return cls(ranges_text(lines))

    @classmethod
    def parse(cls, text: str) -> "LineRanges":
        """From saved text (untrusted: a report, an index entry); ValueError when it is not ranges of
        ints from 0 to MAX_LINE, or names more than MAX_LINES lines. Ranges as ranges_text writes them are
        kept as written; other text ("+4", " 4", "1_0" that int() reads) is brought to that form run by
        run. Never expanded line by line: `1-1000000000` costs a few comparisons, not a billion ints."""
        if not text:
            return cls(text)
        if _SYNTAX.fullmatch(text):
            _check_count(text, sum(int(b) - int(a) + 1 if b and int(b) >= int(a) else 0 if b else 1
                                   for a, b in _RUN.findall(text)))
            return cls(text)
        out: list[tuple[int, int]] = []
        count = 0
        for part in text.split(","):
            low_text, _, high_text = part.partition("-")
            low = int(low_text)
            high = int(high_text or low_text)
            if low < 0 or high > MAX_LINE:
                raise ValueError(f"line out of range (0 to {MAX_LINE:,}) in {text!r:.40}")
            if high < low:
                continue  # an empty run, as range(low, high + 1) reads it
            count += high - low + 1
            _check_count(text, count)
            if out and out[-1][1] + 1 == low:
                out[-1] = (out[-1][0], high)
            else:
                out.append((low, high))
        return cls(",".join(str(a) if a == b else f"{a}-{b}" for a, b in out))

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


_NUMBER = r"(?:0|[1-9][0-9]{0,8})"  # below MAX_LINE
_RUN = re.compile(r"(\d+)(?:-(\d+))?")
# What ranges_text writes, and what is kept as it is: the result index reads ~40 of these a kernel,
# and merging runs by hand cost half of reading an entry. A run "5-3" or runs that touch ("1-2,3")
# only come from a hand-edited file; every method reads them consistently (empty, or as given).
_SYNTAX = re.compile(rf"{_NUMBER}(?:-{_NUMBER})?(?:,{_NUMBER}(?:-{_NUMBER})?)*")


def _check_count(text: str, count: int) -> None:
    if count > MAX_LINES:
        raise ValueError(f"more than {MAX_LINES:,} lines in {text!r:.40}")


def ranges_text(lines: Iterable[int]) -> str:
    out: list[str] = []
    it = iter(lines)
    for first in it:  # the first line, if any; the loop below takes the rest
        last = first
        for n in it:
            if n != last + 1:  # a run ends (one comparison a line: the mix calls this for ~600,000 lines)
                out.append(str(first) if first == last else f"{first}-{last}")
                first = n
            last = n
        out.append(str(first) if first == last else f"{first}-{last}")
    return ",".join(out)


def parse_ranges(text: str) -> tuple[int, ...]:
    lines: list[int] = []
    for part in text.split(",") if text else ():
        low, _, high = part.partition("-")
        lines.extend(range(int(low), int(high or low) + 1))
    return tuple(lines)
