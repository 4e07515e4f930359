"""MLIR_ENABLE_DUMP output: the IR before each pass, split into kernels and passes.

Header forms (../shared/reference/triton_artifacts.md §3):
    3.0-3.7  // -----// IR Dump Before TritonGPUCoalesce (tritongpu-coalesce) ('builtin.module' operation) //----- //
    3.8-3.9  // -----// IR Dump Before TritonGPUCoalesce: tritongpu-coalesce ('builtin.module' operation) //----- //
Function-scoped passes print the whole module too. No header names the kernel: a kernel
starts at its first Inliner / InlinerPass, and its name is the public `tt.func` of that dump.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from irscope.parsers.errors import ArtifactError

HEADER = re.compile(r"^// -----// IR Dump (Before|After) (.+?) \('([\w.]+)' operation(?:: @(.*))?\) //----- //$")
_NAME = re.compile(r"^(\w+)(?: \(([^)]*)\)|: ([^{\s]+)(\{.*\})?)?$")
_KERNEL = re.compile(r"tt\.func\s+public\s+@([\w$.]+)")
_INLINER = ("Inliner", "InlinerPass")


@dataclass(frozen=True)
class PassDump:
    index: int  # within its kernel
    name: str  # "TritonGPUCoalesce", "CanonicalizerPass"
    argument: str | None  # "tritongpu-coalesce"
    anchor: str  # the operation the pass ran on: "builtin.module", "tt.func", "llvm.func"
    symbol: str | None  # the function, for function-scoped passes
    header_line: int  # 1-based, in the dump file
    first_line: int  # the IR: lines first_line..last_line
    last_line: int


@dataclass(frozen=True)
class DumpKernel:
    name: str | None
    passes: tuple[PassDump, ...]


@dataclass(frozen=True)
class MlirDump:
    path: str
    kernels: tuple[DumpKernel, ...]
    lines: tuple[str, ...]  # the file, for the timeline to read sections from

    def text(self, p: PassDump) -> list[str]:
        return list(self.lines[p.first_line - 1:p.last_line])


def parse_mlir_dump(text: str, path: str) -> MlirDump:
    lines = tuple(text.splitlines())
    headers = []
    for n, line in enumerate(lines, 1):
        if line.startswith("// -----// IR Dump"):
            m = HEADER.match(line)
            if m is None:
                raise ArtifactError(path, "an IR dump header irscope cannot read", n)
            headers.append((n, m))
    if not headers:
        raise ArtifactError(path, "no `// -----// IR Dump Before ...` header: not an MLIR_ENABLE_DUMP log")
    kernels: list[list[PassDump]] = []
    for i, (n, m) in enumerate(headers):
        end = headers[i + 1][0] - 1 if i + 1 < len(headers) else len(lines)
        name_m = _NAME.match(m.group(2))
        name = name_m.group(1) if name_m else m.group(2).split()[0]
        argument = (name_m.group(2) or name_m.group(3)) if name_m else None
        if name in _INLINER or not kernels:
            kernels.append([])
        kernels[-1].append(PassDump(len(kernels[-1]), name, argument, m.group(3), m.group(4), n, n + 1, end))
    out = []
    for passes in kernels:
        first = passes[0]
        head = "\n".join(lines[first.first_line - 1:first.last_line])
        found = _KERNEL.search(head)
        out.append(DumpKernel(found.group(1) if found else None, tuple(passes)))
    return MlirDump(path, tuple(out), lines)


def read_dump(path: str, limit: int | None = None) -> MlirDump:
    """An MLIR_ENABLE_DUMP log from a file, plain or gzipped, of at most `limit` bytes as text
    (default: DUMP_FACTOR times the per-artifact limit, parsers/limits.py)."""
    from irscope.parsers.limits import DUMP_FACTOR, DUMP_LIMIT, max_file_size, read_limited

    limit = max_file_size() * DUMP_FACTOR if limit is None else limit
    return read_dump_bytes(read_limited(path, limit, DUMP_LIMIT), path, limit)


def read_dump_bytes(data: bytes, path: str, limit: int | None = None) -> MlirDump:
    from irscope.parsers.errors import decode_text
    from irscope.parsers.limits import DUMP_FACTOR, max_file_size

    if data[:2] == b"\x1f\x8b":
        data = _gunzip(data, path, max_file_size() * DUMP_FACTOR if limit is None else limit)
    return parse_mlir_dump(decode_text(data, path), path)


def _gunzip(data: bytes, path: str, limit: int) -> bytes:
    """Decompress at most limit + 1 bytes: a small .gz may hold gigabytes (a gzip bomb)."""
    import gzip
    import io
    import zlib

    from irscope.parsers.limits import DUMP_LIMIT, format_size

    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as f:
            out = f.read(limit + 1)
    except (OSError, EOFError, zlib.error) as exc:  # BadGzipFile is an OSError; a cut file is EOFError
        reason = str(exc) or "it ends too early (truncated?)"
        raise ArtifactError(path, f"not a readable gzip file: {reason}") from None
    if len(out) > limit:  # the rest stays compressed
        raise ArtifactError(path, f"decompresses to more than {format_size(limit)}, the limit for {DUMP_LIMIT}; "
                                  "--max-file-size raises it")
    return out


def is_dump(path: str) -> bool:
    """Whether a file (plain or .gz) starts like an MLIR_ENABLE_DUMP log."""
    import gzip
    import zlib

    try:
        with (gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")) as f:
            return b"// -----// IR Dump" in f.read(1 << 16)
    except (OSError, EOFError, zlib.error):
        return False
