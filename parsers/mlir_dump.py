"""MLIR_ENABLE_DUMP output: the IR before each pass, split into kernels and passes.

Header forms (../shared/reference/triton_artifacts.md §3):
    3.0-3.7  // -----// IR Dump Before TritonGPUCoalesce (tritongpu-coalesce) ('builtin.module' operation) //----- //
    3.8-3.9  // -----// IR Dump Before TritonGPUCoalesce: tritongpu-coalesce ('builtin.module' operation) //----- //
Function-scoped passes print the whole module too. No header names the kernel: a kernel
starts at its first Inliner / InlinerPass, and its name is the public `tt.func` of that dump.
"""

from __future__ import annotations

import bisect
import gzip
import io
import os
import re
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import BinaryIO

from irscope.model.errors import ArtifactError, decode_text

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


class DumpLines(Sequence[str]):
    """The dump's lines, kept as the blocks of text they were decoded in (about 1 MiB each): the
    text costs its own size, not 50 bytes more per line. A block is split into lines when asked
    for; the last one split is kept, so reading the passes in order splits each block once."""

    def __init__(self, blocks: list[str], firsts: list[int], count: int) -> None:
        self._blocks, self._firsts, self._count = blocks, firsts, count  # firsts: 0-based first line of each block
        self._cached: tuple[int, list[str]] = (-1, [])

    def __len__(self) -> int:
        return self._count

    def _block_lines(self, b: int) -> list[str]:
        if self._cached[0] != b:
            self._cached = (b, self._blocks[b].splitlines())
        return self._cached[1]

    def __getitem__(self, index):  # type: ignore[override]
        if isinstance(index, slice):
            start, stop, step = index.indices(self._count)
            if step != 1:
                return tuple(self[i] for i in range(start, stop, step))
            out: list[str] = []
            while start < stop:
                b = bisect.bisect_right(self._firsts, start) - 1
                lines = self._block_lines(b)
                first = self._firsts[b]
                taken = lines[start - first:stop - first]
                out.extend(taken)
                start += len(taken)
            return tuple(out)
        if index < 0:
            index += self._count
        if not 0 <= index < self._count:
            raise IndexError(index)
        b = bisect.bisect_right(self._firsts, index) - 1
        return self._block_lines(b)[index - self._firsts[b]]


@dataclass(frozen=True)
class MlirDump:
    path: str
    kernels: tuple[DumpKernel, ...]
    lines: Sequence[str]  # the file, for the timeline to read sections from

    def text(self, p: PassDump) -> list[str]:
        return list(self.lines[p.first_line - 1:p.last_line])


class _Splitter:
    """Headers and kernel names, read a block of lines at a time."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.count = 0  # lines so far
        self.headers: list[tuple[int, re.Match]] = []
        self.names: list[str | None] = []  # per header: the kernel named in its section, if any
        self.blocks: list[str] = []
        self.firsts: list[int] = []

    def feed(self, text: str) -> None:
        lines = text.splitlines()
        self.blocks.append(text)
        self.firsts.append(self.count)
        for n, line in enumerate(lines, self.count + 1):
            if line.startswith("// -----// IR Dump"):
                m = HEADER.match(line)
                if m is None:
                    raise ArtifactError(self.path, "an IR dump header irscope cannot read", n)
                self.headers.append((n, m))
                self.names.append(None)
            elif self.names and self.names[-1] is None and "tt.func" in line:
                found = _KERNEL.search(line)
                if found:
                    self.names[-1] = found.group(1)
        self.count += len(lines)

    def dump(self) -> MlirDump:
        if not self.headers:
            raise ArtifactError(self.path, "no `// -----// IR Dump Before ...` header: not an MLIR_ENABLE_DUMP log")
        headers, kernels, names = self.headers, [], []
        for i, (n, m) in enumerate(headers):
            end = headers[i + 1][0] - 1 if i + 1 < len(headers) else self.count
            name_m = _NAME.match(m.group(2))
            name = name_m.group(1) if name_m else m.group(2).split()[0]
            argument = (name_m.group(2) or name_m.group(3)) if name_m else None
            if name in _INLINER or not kernels:
                kernels.append([])
                names.append(self.names[i])  # a kernel is named by the public tt.func of its first dump
            kernels[-1].append(PassDump(len(kernels[-1]), name, argument, m.group(3), m.group(4), n, n + 1, end))
        out = tuple(DumpKernel(name, tuple(passes)) for name, passes in zip(names, kernels))
        return MlirDump(self.path, out, DumpLines(self.blocks, self.firsts, self.count))


def parse_mlir_dump(text: str, path: str) -> MlirDump:
    splitter = _Splitter(path)
    splitter.feed(text)
    return splitter.dump()


_CHUNK = 1 << 20


def read_dump(path: str, limit: int | None = None) -> MlirDump:
    """An MLIR_ENABLE_DUMP log from a file, plain or gzipped, of at most `limit` bytes as text
    (default: DUMP_FACTOR times the per-artifact limit, irscope/model/limits.py).

    Read, decompressed, checked and split a block at a time: the working set is the text once
    (as one string per block) and one block, whatever the file holds; binary data (a NUL byte)
    is rejected in the block where it starts, a gzip bomb as soon as it passes the limit."""
    from irscope.model.limits import DUMP_FACTOR, DUMP_LIMIT, max_file_size, too_large

    limit = max_file_size() * DUMP_FACTOR if limit is None else limit
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size > limit:
            raise too_large(path, size, limit, DUMP_LIMIT)
        return _read_stream(f, path, limit)


def read_dump_bytes(data: bytes, path: str, limit: int | None = None) -> MlirDump:
    from irscope.model.limits import DUMP_FACTOR, max_file_size

    return _read_stream(io.BytesIO(data), path, max_file_size() * DUMP_FACTOR if limit is None else limit)


def _read_stream(f: BinaryIO, path: str, limit: int) -> MlirDump:
    splitter, lines_before = _Splitter(path), 0
    for block in _blocks(_chunks(f, path, limit), path):
        try:
            text = decode_text(block, path)
        except ArtifactError as exc:  # its line is the block's: make it the file's
            raise ArtifactError(path, exc.message, None if exc.line is None else lines_before + exc.line) from None
        lines_before += block.count(b"\n")
        splitter.feed(text)
    return splitter.dump()


def _chunks(f: BinaryIO, path: str, limit: int) -> Iterator[bytes]:
    """The file's bytes (decompressed if gzipped) a chunk at a time; an error once past `limit`."""
    from irscope.model.limits import DUMP_LIMIT, format_size, too_large

    gzipped = f.read(2) == b"\x1f\x8b"
    f.seek(0)
    source: BinaryIO = gzip.GzipFile(fileobj=f) if gzipped else f  # type: ignore[assignment]
    total = 0
    try:
        while chunk := source.read(_CHUNK):
            total += len(chunk)
            if total > limit:
                if gzipped:  # the rest stays compressed
                    raise ArtifactError(path, f"decompresses to more than {format_size(limit)}, the limit for "
                                              f"{DUMP_LIMIT}; --max-file-size raises it")
                raise too_large(path, None, limit, DUMP_LIMIT)
            yield chunk
    except (OSError, EOFError, zlib.error) as exc:  # BadGzipFile is an OSError; a cut file is EOFError
        if not gzipped:
            raise
        reason = str(exc) or "it ends too early (truncated?)"
        raise ArtifactError(path, f"not a readable gzip file: {reason}") from None


def _blocks(chunks: Iterator[bytes], path: str) -> Iterator[bytes]:
    """Whole lines, about a chunk at a time (a line is never split between blocks); a NUL byte is
    binary data, rejected in the first chunk that holds one, before any more is read."""
    carry: list[bytes] = []  # the start of a line longer than a chunk: joined once, when it ends
    lines_before = 0
    for chunk in chunks:
        nul = chunk.find(b"\0")
        if nul >= 0:
            line = lines_before + chunk.count(b"\n", 0, nul) + 1
            raise ArtifactError(path, "contains NUL bytes (binary data?)", line)
        cut = chunk.rfind(b"\n") + 1
        if not cut:
            carry.append(chunk)
            continue
        lines_before += chunk.count(b"\n", 0, cut)
        yield b"".join((*carry, chunk[:cut]))
        carry = [chunk[cut:]]
    if any(carry):
        yield b"".join(carry)


def is_dump(path: str) -> bool:
    """Whether a file (plain or .gz) starts like an MLIR_ENABLE_DUMP log."""
    try:
        with (gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")) as f:
            return b"// -----// IR Dump" in f.read(1 << 16)
    except (OSError, EOFError, zlib.error):
        return False
