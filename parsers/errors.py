"""The one error type parsers raise: it names the file and, for text, the line."""

from __future__ import annotations


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
    return text
