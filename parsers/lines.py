"""Offset -> line number lookups for parsers that match over a whole text at once.

Scanning with one compiled regex over the whole file is several times faster than a
Python loop over its lines; this index turns a match's offset back into a line.
"""

from __future__ import annotations

from bisect import bisect_right


class LineIndex:
    def __init__(self, text: str) -> None:
        self._text = text
        self._starts: list[int] | None = None

    def line_of(self, offset: int) -> int:
        """1-based line number of a character offset."""
        if self._starts is None:
            starts = [0]
            find = self._text.find
            pos = find("\n")
            while pos >= 0:
                starts.append(pos + 1)
                pos = find("\n", pos + 1)
            self._starts = starts
        return bisect_right(self._starts, offset)
