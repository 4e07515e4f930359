"""The one error type parsers raise: it names the file and, for text, the line."""

from __future__ import annotations

import re
import sys


class ArtifactError(Exception):
    def __init__(self, path: str, message: str, line: int | None = None) -> None:
        self.path = path
        self.line = line
        self.message = message
        where = path if line is None else f"{path}:{line}"
        super().__init__(f"{where}: {message}")


def decode_text(data: bytes, path: str) -> str:
    """Decode an artifact as UTF-8; binary junk is an error at the line where it starts.

    Triton writes its IR and assembly as UTF-8 text. A NUL byte or invalid UTF-8 means
    the file was truncated, overwritten or is not what its name says.
    """
    nul = data.find(b"\0")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad = exc.start if nul < 0 else min(nul, exc.start)
        raise ArtifactError(path, "not UTF-8 text (binary data?)", data.count(b"\n", 0, bad) + 1) from None
    if nul >= 0:
        raise ArtifactError(path, "contains NUL bytes (binary data?)", data.count(b"\n", 0, nul) + 1)
    _check_numbers(data, text, path)
    return text


# Python's int() refuses decimal strings longer than this (sys.get_int_max_str_digits), and
# would take quadratic time on them if allowed. Compilers write numbers of a few dozen digits;
# the parsers' `\d+` captures go to int(), so a longer run is rejected here, once per file.
MAX_DIGITS = 4300
_DIGIT_MASK = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))  # digits -> "0", else " "


def _check_numbers(data: bytes, text: str, path: str) -> None:
    limit = getattr(sys, "get_int_max_str_digits", lambda: 0)() or MAX_DIGITS
    limit = min(limit, MAX_DIGITS)
    if data.isascii():  # the usual case: a byte scan, 2 ms per MB
        at = data.translate(_DIGIT_MASK).find(b"0" * (limit + 1))
        line = data.count(b"\n", 0, at) + 1
    else:  # other scripts' digits are digits to int() and to `\d` too
        m = re.search(r"(?<!\d)\d{%d}" % (limit + 1), text)
        at = m.start() if m else -1
        line = text.count("\n", 0, at) + 1
    if at >= 0:
        raise ArtifactError(path, f"a number of more than {limit:,} digits: not compiler output", line)
