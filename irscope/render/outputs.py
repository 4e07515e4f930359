"""The files irscope writes because the user named them (`--json/--sarif/--csv/--parquet/--markdown FILE`).

Checked before anything is scanned, so that a long scan does not end in a file that cannot be
written, and refused inside a scanned path: `scan C --json C/<hash>/k.json` would overwrite an
artifact, and nothing under a scanned path is ever written. A write that still fails (a full
disk, /dev/full) raises OutputError naming the file: the command exits 2 (README: Exit codes).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Iterable

from irscope.model.paths import overlapping_root, real  # noqa: F401 (public here)

STDOUT = "-"


class OutputError(Exception):
    """An output file could not be written; the message names it."""


def check_outputs(files: Iterable[str | None], roots: Iterable[str | os.PathLike]) -> str | None:
    """Why one of `files` cannot be written (one line naming it), or None. '-' (stdout) is skipped."""
    roots = list(roots)
    for file in files:
        if not file or file == STDOUT:
            continue
        root = overlapping_root(file, roots)
        if root is not None:
            return f"{file}: will not write an output inside the scanned path {root} (nothing there is written)"
        problem = _unwritable(file)
        if problem:
            return f"{file}: cannot write: {problem}"
    return None


def _unwritable(file: str) -> str | None:
    # Without opening it: opening would truncate an existing report, or block on a FIFO.
    path = Path(file)
    if os.path.isdir(path):
        return "it is a directory"
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.exists():
        return f"no directory {parent}"
    if not parent.is_dir():
        return f"{parent} is not a directory"
    if path.exists():
        return None if os.access(path, os.W_OK) else "permission denied"
    return None if os.access(parent, os.W_OK | os.X_OK) else f"permission denied in {parent}"


def write_text(file: str, text: str) -> None:
    """Write `text` to `file` (UTF-8); an I/O error is an OutputError naming the file."""
    written(file, lambda: Path(file).write_text(text, encoding="utf-8"))


def written(file: str, write: Callable[[], object]) -> None:
    """Run `write`, which writes `file`; an I/O error is an OutputError naming the file."""
    try:
        write()
    except OSError as exc:  # pyarrow's I/O errors are OSErrors too
        raise OutputError(f"{file}: cannot write: {exc.strerror or exc}") from None
