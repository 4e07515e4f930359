"""Issue 22 items 12-15: memory stays within a stated multiple of an artifact's size.

The large artifacts here are real compiler text, only more of it: a fixture's functions (MLIR)
or lines (AMDGCN) repeated to a few MB.
"""

from __future__ import annotations

import gzip
import io
import re
import tracemalloc

import pytest

from conftest import FIXTURES, copy_tree
from rich.text import Text

from irscope.model.errors import ArtifactError
from irscope.model.limits import STAGE_LIMITS, limit_for
from irscope.pipeline.analyze import scan

TTGIR = FIXTURES / "caches/triton-3.6/XB3WGP47NKIFUCOTCSH5IFSZY7FW6XEJYFJZHULLPKODQGZD2GPQ/attn_fwd_kernel.ttgir"
AMDGCN = FIXTURES / "caches/triton-3.6/XHY6TJUJGWU4GNU5UGWBDPGJ2MLLTXQXRRFP6HYY4RTFUI4YQ4LQ/spill_kernel.amdgcn"
# The parse's tracemalloc peak over the file's size (measured: MLIR 46x, AMDGCN 11x), with room.
PEAK_MULTIPLE = {"ttgir": 60, "amdgcn": 16}


def repeated_functions(text: str, size: int) -> str:
    """A module holding the fixture's kernel function copied under new names until `size` bytes."""
    lines = text.splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line.startswith("  tt.func"))
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("  } loc("))
    func = "".join(lines[start:end + 1])
    name = re.search(r"@([\w$.]+)\(", lines[start])[1]
    copies, total, n = [], 0, 0
    while total < size:
        copy = func if n == 0 else func.replace(f"@{name}(", f"@{name}_{n}(", 1).replace("public", "private", 1)
        copies.append(copy)
        total, n = total + len(copy), n + 1
    return "".join(lines[:start]) + "".join(copies) + "".join(lines[end + 1:])


def _peak(parse, text: str, path: str) -> int:
    tracemalloc.start()
    try:
        parse(text, path)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_large_ttgir_parses_within_a_multiple_of_its_size(tmp_path):
    from irscope.parsers.mlir_parser import parse_mlir

    text = repeated_functions(TTGIR.read_text(), 600_000)  # 4 times the largest real .ttgir (153 KB)
    module = parse_mlir(text, "big.ttgir")
    assert len([op for op in module.ops if op.name == "tt.func"]) > 15
    peak = _peak(parse_mlir, text, "big.ttgir")
    assert peak < PEAK_MULTIPLE["ttgir"] * len(text), f"{peak / len(text):.1f} times the file"  # 46x
    # ... so the default limit keeps the largest .ttgir read under 1 GB.
    assert PEAK_MULTIPLE["ttgir"] * STAGE_LIMITS["ttgir"] < 1 << 30


def test_large_amdgcn_parses_within_a_multiple_of_its_size():
    from irscope.parsers.amdgcn import parse_amdgcn

    real = AMDGCN.read_text()
    text = real * (2_000_000 // len(real) + 1)
    peak = _peak(parse_amdgcn, text, "big.amdgcn")
    assert peak < PEAK_MULTIPLE["amdgcn"] * len(text), f"{peak / len(text):.1f} times the file"
    assert PEAK_MULTIPLE["amdgcn"] * STAGE_LIMITS["amdgcn"] < 1 << 30


def test_ttgir_over_its_stage_limit_is_reported_with_the_flag(tmp_path, monkeypatch):
    monkeypatch.delenv("IRSCOPE_MAX_FILE_SIZE", raising=False)
    root = copy_tree(TTGIR.parent, tmp_path / "cache" / TTGIR.parent.name).parent
    big = root / TTGIR.parent.name / TTGIR.name
    with open(big, "r+b") as f:  # 9 MiB of zeros past the text, without writing them
        f.truncate(limit_for("ttgir") + (1 << 20))
    report = scan(str(root), index=False, jobs=1)
    messages = {str(p) for kr in report.kernels for p in kr.problems}
    assert f"{big}: 9 MiB is over the 8 MiB limit for one .ttgir; --max-file-size raises it" in messages
    # The flag raises the limit of every stage.
    monkeypatch.setenv("IRSCOPE_MAX_FILE_SIZE", "64M")
    assert limit_for("ttgir") == limit_for("llir") == 64 << 20


@pytest.mark.parametrize("stage", sorted(STAGE_LIMITS))
def test_stage_limits_leave_a_wide_margin_over_real_artifacts(stage):
    largest = max((p.stat().st_size for p in FIXTURES.rglob(f"*.{stage}")), default=0)
    assert largest * 20 < STAGE_LIMITS[stage]



def _traced(call) -> tuple[object, int]:
    """What call() returned or raised, and its tracemalloc peak."""
    tracemalloc.start()
    try:
        try:
            result: object = call()
        except ArtifactError as exc:
            result = exc
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _real_dump_text() -> bytes:
    return gzip.decompress(sorted((FIXTURES / "dumps").glob("*_add.txt.gz"))[0].read_bytes())


def test_gzip_bomb_of_dump_text_stops_at_the_limit_in_bounded_memory(tmp_path, monkeypatch):
    """A small .gz of real dump text repeated to 32 MiB, against a 4 MiB dump limit: the error at
    the limit, having held at most the limit's worth of text (it used to decompress, decode and
    split everything up to the limit: about four times it)."""
    from irscope.parsers.mlir_dump import read_dump

    monkeypatch.setenv("IRSCOPE_MAX_FILE_SIZE", "256K")  # a dump may be 16 times that: 4 MiB
    limit = 4 << 20
    real = _real_dump_text()
    bomb = tmp_path / "bomb.txt.gz"
    with gzip.open(bomb, "wb", compresslevel=1) as f:
        for _ in range((32 << 20) // len(real)):
            f.write(real)
    assert bomb.stat().st_size < limit
    err, peak = _traced(lambda: read_dump(str(bomb)))
    assert isinstance(err, ArtifactError) and err.path == str(bomb), err
    assert err.message.startswith("decompresses to more than 4 MiB, the limit for an MLIR dump")
    assert err.message.endswith("; --max-file-size raises it")
    assert peak < 2.5 * limit, f"{peak:,} bytes for a {limit:,}-byte limit"  # the text, a block or two: 8.6 MB


def test_dump_of_nul_bytes_is_rejected_at_the_first_chunk(tmp_path, monkeypatch):
    from irscope.parsers.mlir_dump import read_dump

    monkeypatch.setenv("IRSCOPE_MAX_FILE_SIZE", "4M")  # dumps up to 64 MiB
    nuls = tmp_path / "dump.txt"
    with open(nuls, "wb") as f:
        f.truncate(60 << 20)  # 60 MB of NULs (hostile input), under the limit
    err, peak = _traced(lambda: read_dump(str(nuls)))
    assert isinstance(err, ArtifactError) and err.line == 1 and "contains NUL bytes" in err.message, err
    assert peak < 4 << 20, f"{peak:,} bytes"
    gz = tmp_path / "dump.txt.gz"
    gz.write_bytes(gzip.compress(_real_dump_text() + b"\0" * (60 << 20), compresslevel=1))
    err, peak = _traced(lambda: read_dump(str(gz)))
    assert isinstance(err, ArtifactError) and "contains NUL bytes" in err.message and err.line > 1000, err
    assert peak < 8 << 20, f"{peak:,} bytes"


def test_dump_under_the_limit_costs_about_its_text(tmp_path):
    from irscope.parsers.mlir_dump import read_dump
    from irscope.ir.pass_timeline import timelines

    real = _real_dump_text() * 40  # 8 MB
    dump = tmp_path / "dump.txt.gz"
    dump.write_bytes(gzip.compress(real, compresslevel=1))
    found, peak = _traced(lambda: timelines(read_dump(str(dump))))
    assert len(found) == 40 and len({(t.kernel, tuple(p.changed for p in t.passes), t.origins) for t in found}) == 1
    assert peak < 2 * len(real), f"{peak / len(real):.1f} times the text"


def _dump_of_copies(tmp_path, copies: int):
    """A real dump's kernel run `copies` times in one log (each copy is a kernel, as in an autotuned run)."""
    path = tmp_path / f"dump{copies}.txt"
    path.write_bytes(_real_dump_text() * copies)
    return path


def test_passes_view_costs_rich_renders_per_view_not_per_row(tmp_path, monkeypatch, capsys):
    """`irscope passes` on a dump of 200,000 tiny modules took 95 s (its JSON 1.35 s): a rich Table
    renders every cell as its own renderable. The view is one Text now: the number of rich renders
    is the same for n and 2n kernels, and the rows printed double."""
    from rich.console import Console

    from irscope.cli.main import main
    from irscope.parsers.mlir_dump import read_dump
    from irscope.ir.pass_timeline import timelines
    from irscope.render.console import print_text
    from irscope.render.passes import timeline_view

    renders = {"n": 0}
    original = Console.render

    def counted(self, *args, **kwargs):
        renders["n"] += 1
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Console, "render", counted)
    work = {}
    for copies in (4, 8):
        path = _dump_of_copies(tmp_path, copies)
        renders["n"] = 0
        assert main(["passes", str(path), "--all"]) == 0
        rows = capsys.readouterr().out.count("\n│")
        found = timelines(read_dump(str(path)))
        colour = Console(file=io.StringIO(), force_terminal=True, color_system="truecolor", width=120)
        print_text(Text("\n").join(timeline_view(t, True, 120) for t in found), colour)
        work[copies] = (renders["n"], rows)
    (renders4, rows4), (renders8, rows8) = work[4], work[8]
    assert rows8 == 2 * rows4 and rows4 >= 4 * 40, work
    assert renders8 == renders4, work  # was one render per cell: 5 per row and more
