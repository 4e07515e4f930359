"""Reading a Python file that an artifact names (a `loc(...)` in the IR, a `.file` in the ISA).

That path comes from the artifact, so from whoever wrote the cache: it may name `/dev/zero`,
a FIFO that blocks forever, or any file on this machine. The kernel's source is by nature
outside its cache directory, so irscope reads it only when it is what it claims to be: a
regular `.py` file of a source file's size. The text is shown to the user who asked (the TUI's
Source tab, `source_map.python_lines`); it never goes into a report.
"""

from __future__ import annotations

import os
import stat

# The largest Python file in the stdlib is under 1 MB; a kernel file 4 times that is no kernel file.
MAX_SOURCE_BYTES = 4 * 1024 * 1024


def read_source(path: str) -> str | None:
    """The text of the Python file at `path`, or None when it is not a readable regular `.py` file."""
    if not path.endswith(".py"):
        return None
    try:
        # O_NONBLOCK: a FIFO put in the file's place after a check must not block the open.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except (OSError, ValueError):  # ValueError: a NUL in the path
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_SOURCE_BYTES:
            return None
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(MAX_SOURCE_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(data) > MAX_SOURCE_BYTES:
        return None
    return data.decode("utf-8", "replace")


def kernel_source(name: str, files, source_dirs=()) -> tuple[str | None, str | None]:
    """(path, text) of kernel `name`'s own Python file among the `files` an artifact names: the
    one that defines `def name(`, read where the artifact says and then under `source_dirs` by its
    trailing path components (the kernel was compiled on another machine: source_roots.find_under,
    which maps SARIF and report paths too); a lone file is taken as it is. (None, None) when none
    is readable."""
    from irscope.ir.source_roots import find_under

    candidates = sorted(files)
    elsewhere = [found for f in candidates if (found := find_under(os.path.abspath(f), tuple(source_dirs)))]
    for path in candidates + elsewhere:
        text = read_source(path)
        if text is not None and (f"def {name}(" in text or len(candidates) == 1):
            return path, text
    return None, None
