"""How large an artifact irscope reads: one limit per file, checked before reading.

Triton's largest artifacts are a few MB: the biggest in fixtures/ is a 0.6 MB `.llir`, and
the 52,397-line AMDGCN of bench/bench_big_isa.py (a GEMM with a 160-step unrolled K loop)
is about 2 MB. 64 MiB is 30 times that, and still small enough that a parser's working set
(several times the file) fits in memory. A file over it is a copy gone wrong or not
Triton's; it is reported, not read, and the kernel's other artifacts are still analyzed.

Per stage, the default is lower where a parser's working set is many times the file
(tracemalloc peak of the parse alone, on text made by repeating a real fixture's functions or
lines; tests/test_resource_bounds.py):

| stage         | largest real artifact (fixtures/, real_world corpus)     | parse peak  | default limit |
|---------------|----------------------------------------------------------|-------------|---------------|
| .ttir, .ttgir | 153 KB (.ttgir of fla chunk_gated_delta_rule, gfx942)    | ~46x file   | 8 MiB (54x)   |
| .amdgcn, .ptx | 396 KB (.ptx of vllm _fwd_kernel, sm_90); 2 MB bench ISA | ~11x file   | 16 MiB (8x)   |
| .llir, others | 2.85 MB (.llir of vllm _fwd_kernel, sm_90)               | ~2x file    | 64 MiB (22x)  |

A whole scan costs about 2-3 times the parse (analyses, rules), so the defaults keep one
artifact well under 1 GB. A 60 MB `.ttgir` (2.9 GB, 37 s before these limits) is now refused
with its size.

`irscope --max-file-size SIZE` sets IRSCOPE_MAX_FILE_SIZE, which worker processes inherit; it
is then the limit for every stage.
"""

from __future__ import annotations

import os
import re

from irscope.model.errors import ArtifactError

DEFAULT_MAX_FILE_SIZE = 64 * 1024 * 1024
ENV = "IRSCOPE_MAX_FILE_SIZE"
# Stages whose parsers cost many times the file (see the table above); others get the default.
STAGE_LIMITS = {"ttir": 8 << 20, "ttgir": 8 << 20, "amdgcn": 16 << 20, "ptx": 16 << 20}
# An MLIR_ENABLE_DUMP log holds the IR before every pass of every kernel of a run: 10-22 MB
# per GEMM in fixtures/dumps. It may be this many times the per-artifact limit (1 GiB).
DUMP_FACTOR = 16
DUMP_LIMIT = f"an MLIR dump ({DUMP_FACTOR} times the limit for one artifact)"

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:I?B)?\s*$", re.I)


def parse_size(text: str) -> int:
    """`65536`, `128M`, `1G`, `1.5GiB`, `64MB` -> bytes (K, M, G, T are powers of 1024)."""
    m = _SIZE.match(text)
    if m is None:
        raise ValueError(f"{text!r} is not a size (give bytes, or a number with K, M or G: 128M, 1G)")
    value = int(float(m[1]) * _UNITS[m[2].upper()])
    if value < 1:
        raise ValueError(f"{text!r}: the limit must be at least 1 byte")
    return value


def max_file_size() -> int:
    """The per-artifact limit in bytes: IRSCOPE_MAX_FILE_SIZE, else 64 MiB."""
    value = os.environ.get(ENV)
    if value:
        try:
            return parse_size(value)
        except ValueError:
            pass  # a bad value in the environment falls back to the default; the CLI checks its flag
    return DEFAULT_MAX_FILE_SIZE


def _explicit_limit() -> int | None:
    value = os.environ.get(ENV)
    if value:
        try:
            return parse_size(value)
        except ValueError:
            return None
    return None


def limit_for(stage: str) -> int:
    """The limit for one artifact of `stage` ("ttgir", "amdgcn", ...): IRSCOPE_MAX_FILE_SIZE when
    set (for every stage), else the stage's default (STAGE_LIMITS, or 64 MiB)."""
    explicit = _explicit_limit()
    return explicit if explicit is not None else STAGE_LIMITS.get(stage, DEFAULT_MAX_FILE_SIZE)


def limits_key() -> str:
    """Every limit in force, for the result index's key: raising one analyzes the kernels again."""
    return ",".join(f"{stage}={limit_for(stage)}" for stage in sorted(STAGE_LIMITS)) + f",*={max_file_size()}"


def format_size(size: int) -> str:
    """Sizes as people read them: `200.0 MB` for a file, `64 MiB` for a power-of-two limit."""
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= factor and size % factor == 0:
            return f"{size // factor} {unit}"
    if size >= 1_000_000:
        return f"{size / 1e6:.1f} MB"
    return f"{size:,} bytes"


def too_large(path: str, size: int | None, limit: int, what: str = "one artifact") -> ArtifactError:
    how_big = f"{format_size(size)} is" if size is not None else "it is"
    return ArtifactError(path, f"{how_big} over the {format_size(limit)} limit for {what}; "
                               "--max-file-size raises it")


def read_limited(path: str, limit: int | None = None, what: str = "one artifact") -> bytes:
    """The bytes of a file no larger than `limit` (default: max_file_size()).

    The size is checked on the open file before reading, so a 200 MB file costs a stat; a
    file that grows past the limit while being read is cut off there and rejected too.
    """
    limit = max_file_size() if limit is None else limit
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size > limit:
            raise too_large(path, size, limit, what)
        data = f.read(size + 1)  # not read(limit + 1): that allocates the whole limit up front
        if len(data) > size:  # it grew since the stat (Triton writing it?): read on, up to the limit
            data += f.read(limit + 1 - len(data))
    if len(data) > limit:
        raise too_large(path, None, limit, what)
    return data
