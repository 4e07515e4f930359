"""The `.llir` debug-info reader over every real LLVM IR file in fixtures/ (Triton 3.0-3.9, AMD and NVIDIA).

Every `!dbg !N` an instruction carries resolves to a line of the kernel file it was compiled
from (fixtures/kernels), or, for a helper Triton inlined, to triton/language with the kernel
line outermost.
"""

from __future__ import annotations

import random
import re
from functools import cache
from pathlib import Path

import pytest
from conftest import FIXTURES, load_manifest

from irscope.parsers.llir import debug_info

MANIFEST = load_manifest()
ALL_LLIR = sorted(FIXTURES.rglob("*.llir"))
KERNEL_SOURCES = FIXTURES / "kernels"
NEUTRAL_KERNELS = MANIFEST["neutral_path"] + "/kernels/"  # where build.py compiled the kernels from
_DBG = re.compile(r"!dbg !(\d+)")


@cache
def _text(path: Path) -> str:
    return path.read_text()


def _located(path: Path):
    """(instruction line, its resolved location) for every instruction with a `!dbg`."""
    text = _text(path)
    debug = debug_info(text)
    for line in text.split("\n"):
        m = _DBG.search(line)
        if m and line.startswith("  "):
            yield line, debug.location(int(m.group(1)))


def test_the_corpus_is_all_there():
    assert len(ALL_LLIR) >= 40


@pytest.mark.parametrize("path", ALL_LLIR, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_debug_locations_point_into_the_kernel_sources(path):
    located = list(_located(path))
    assert located
    for line, where in located:
        assert where is not None and where.file.startswith(NEUTRAL_KERNELS), (line, where)
        source = (KERNEL_SOURCES / where.file[len(NEUTRAL_KERNELS):]).read_text().split("\n")
        assert 1 <= where.line <= len(source) and where.column >= 0
        for frame in where.inlined:  # helpers Triton inlined: tl.cdiv, tl.max, ... in triton/language
            assert "/triton/language/" in frame.file and frame.line >= 1


def test_some_locations_come_through_inlined_helpers():
    inlined = [where for p in ALL_LLIR for _, where in _located(p) if where is not None and where.inlined]
    assert inlined and all(d.inlined[0].file.endswith("/triton/language/standard.py") for d in inlined)
    assert max(len(d.inlined) for d in inlined) == 2  # softmax's max inside a reduce


def test_unknown_and_missing_references_are_none():
    debug = debug_info(_text(ALL_LLIR[0]))
    assert debug.location(None) is None and debug.location(10**9) is None
    assert debug_info("").location(1) is None


@pytest.mark.parametrize("path", ALL_LLIR[::9], ids=lambda p: str(p.relative_to(FIXTURES)))
def test_cut_or_garbled_metadata_never_raises(path):
    """Metadata cut anywhere, lines swapped or replaced by junk nodes: locations or None, no exception."""
    junk = ['!1 = !DILocation(line: "x", scope: !1, inlinedAt: "y")', "!2 = !DIFile(", "!3 = distinct !DISubprogram(",
            "!4 = !DILocation(line: 1, scope: !4, inlinedAt: !4)"]
    text = _text(path)
    refs = [int(m) for m in _DBG.findall(text)][:50]
    rng = random.Random(path.name)
    lines = text.split("\n")
    for i in range(1, 30):
        garbled = lines[: len(lines) * i // 30] if i % 2 else lines[:]
        for _ in range(rng.randint(1, 20)):
            j = rng.randrange(len(garbled))
            garbled[j] = rng.choice(junk) if rng.random() < 0.5 else garbled[j][: rng.randrange(len(garbled[j]) + 1)]
        debug = debug_info("\n".join(garbled))
        for ref in refs:
            where = debug.location(ref)
            assert where is None or isinstance(where.line, int)
