"""IRS201 drained-wait-in-loop on the real fixtures.

The distances, MFMA counts, cycle estimates and load counts are recounted from the `.amdgcn`
text itself: instruction lines between the load and the wait (across the back edge by following
the `s_branch` to its label), 64 cycles an MFMA or LDS wait, 16 a transcendental, 4 any other
instruction (the rule's documented costs), and loop membership from LLVM's `Loop Header` comments.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import FIXTURES, load_manifest

from irscope.pipeline.analyze import scan
from irscope.engine.selection import RuleSelection
from irscope.rules.irs201_drained_wait_in_loop import DrainedWaitInLoop

VERSIONS = ("3.2", "3.6", "3.9")
# gfx9-11 vmcnt(0); gfx12 s_wait_loadcnt 0x0, or the combined form with loadcnt (bits 13:8) zero
DRAIN = re.compile(r"^\s*(s_waitcnt\s.*\bvmcnt\(0\)|s_wait_loadcnt\s+0x0\b|s_wait_loadcnt_dscnt\s+0x[0-9a-f]{1,2}\b)")
GLOBAL_LOAD = re.compile(r"^\s*(global_load_\w+|buffer_load_\w+)\s")
LABEL = re.compile(r"^(\.LBB\d+_\d+):")
# What fires, per version: (fixture, arch). Everything else in the caches is silent.
EXPECTED = {
    "3.0": {("gemm_aligned", "gfx942")},
    "3.2": {("gemm_unaligned", "gfx942")},
    "3.6": {("flash_attn", "gfx90a"), ("flash_attn", "gfx950"), ("gemm_aligned", "gfx1100"),
            ("gemm_aligned", "gfx1200"), ("gemm_unaligned", "gfx942"), ("gemm_unaligned", "gfx90a"),
            ("gemm_wpe3", "gfx942"), ("autotune_gemm", "gfx942")},
    "3.9": {("gemm_aligned", "gfx942"), ("gemm_mfma16", "gfx942"), ("gemm_mfma32", "gfx942"),
            ("gemm_aligned", "gfx1100"), ("gemm_aligned", "gfx1200"), ("gemm_unaligned", "gfx942"),
            ("gemm_wpe3", "gfx942"), ("flash_attn", "gfx942")},
}


@pytest.fixture(scope="module")
def reports():
    manifest = load_manifest()
    report = scan([FIXTURES / "caches" / f"triton-{v}" for v in ("3.0", *VERSIONS)],
                  rules=RuleSelection.only(DrainedWaitInLoop))
    fixture_of = {e["dir"]: e["fixture"] for e in manifest["kernels"]}
    return [(fixture_of.get(Path(r.kernel.directory).name), r) for r in report.kernels]


def pick(reports, fixture, arch, version):
    return [r for f, r in reports if f == fixture and r.kernel.target.arch == arch
            and r.kernel.triton_version.value.startswith(version)]


def only(kr):
    found = [f for f in kr.findings if f.code == "IRS201"]
    assert len(found) == 1, [f.message for f in found]
    return found[0]


def text_of(finding) -> list[str]:
    return Path(finding.path).read_text().splitlines()


def is_instruction(line: str) -> bool:
    s = line.strip()
    return bool(s) and not s.startswith((";", ".")) and not LABEL.match(s)


def gap(text: list[str], load: int, wait: int) -> list[str]:
    """Instruction lines executed between a load and a later wait (1-based lines). Straight
    down when the wait follows; otherwise down to the load's `s_branch` and on from its label."""
    if load < wait:
        body = text[load:wait - 1]
        assert not any(re.match(r"\s*s_c?branch", s) for s in body), "a branch between: not straight-line"
        return [s for s in body if is_instruction(s)]
    out = []
    for n in range(load, len(text)):
        if is_instruction(text[n]):
            out.append(text[n])
        m = re.match(r"\s*s_branch\s+(\.LBB\d+_\d+)", text[n])
        if m:
            target = next(k for k, s in enumerate(text) if s.startswith(m.group(1) + ":"))
            return out + [s for s in text[target + 1:wait - 1] if is_instruction(s)]
    raise AssertionError("no back-edge branch after the load")


def cycles(between: list[str]) -> int:
    """The rule's cover estimate, recounted: what one wave's own work between load and wait costs."""
    def cost(line: str) -> int:
        s = line.strip()
        if s.startswith("v_mfma") or (s.startswith("s_waitcnt") and "lgkmcnt" in s):
            return 64
        return 16 if re.match(r"v_(exp|log|rcp|rsq|sqrt|sin|cos)_", s) else 4
    return sum(cost(line) for line in between)


def loop_lines(text: list[str], header: str) -> list[int]:
    """1-based lines of the blocks LLVM marks as the loop of `header` (`.LBB0_36`)."""
    tag = "Header=BB" + header[len(".LBB"):]
    inside, out = False, []
    for n, line in enumerate(text):
        if LABEL.match(line) or line.startswith("; %bb."):
            nxt = text[n + 1] if n + 1 < len(text) else ""
            inside = tag in line or tag in nxt or (line.startswith(header + ":") and "Loop Header" in line)
        elif inside:
            out.append(n + 1)
    return out


def source_line(finding) -> str:
    return (FIXTURES / "kernels" / Path(finding.python_file).name).read_text().splitlines()[finding.python_line - 1]


def loop_label(finding) -> str:
    return re.search(r"the loop at (\.LBB\d+_\d+)", finding.message).group(1)


@pytest.mark.parametrize("fixture", ["gemm_aligned", "gemm_mfma32", "gemm_mfma16"])
def test_triton_39_gemm_waits_for_its_b_tile_13_instructions_after_loading_it(reports, fixture):
    (kr,) = pick(reports, fixture, "gfx942", "3.9")
    f = only(kr)
    text = text_of(f)
    wait_line, load_line = (int(n) for n in re.search(r"at line (\d+) in .* at line (\d+) \(gemm", f.message).groups())
    assert text[wait_line - 1].strip() == "s_waitcnt vmcnt(0)"
    assert text[load_line - 1].strip().startswith("global_load_dwordx4")
    assert load_line > wait_line and "(across the back edge)" in f.message
    between = gap(text, load_line, wait_line)
    assert len(between) == 13 == f.number("distance")
    mfma = [s for s in between if s.strip().startswith("v_mfma")]
    assert len(mfma) == 1 == f.number("matrix_between")
    # 11 instructions at issue rate, the MFMA, and the lgkmcnt(0) that waits for its ds_reads
    assert cycles(between) == 11 * 4 + 64 + 64 == f.number("cover_cycles")
    assert ("13 instructions after it is issued (across the back edge), with 1 matrix instruction between "
            "(at most about 172 cycles of this wave's work)") in f.message
    assert "so the wave idles for at least 328 of them" in f.message
    assert sorted(f.lines) == sorted({wait_line, load_line}) and f.line == wait_line
    # The drain waits for all eight 16-byte loads of the iteration (A and B tiles).
    loads = [n for n in loop_lines(text, loop_label(f)) if GLOBAL_LOAD.match(text[n - 1])]
    assert len(loads) == 8 == f.number("global_loads")
    assert f.python_line == 49 and "b = tl.load(b_ptrs" in source_line(f)
    assert f.severity == "warning" and f.stage == "amdgcn"


@pytest.mark.parametrize("version,cache", [("3.6", "caches/triton-3.6"), ("3.2", "caches/triton-3.2")])
def test_same_gemm_from_older_triton_hides_the_load_behind_mfma_work(reports, version, cache):
    """Triton 3.6 and 3.2 put 32 and 18 MFMAs between the last load and its vmcnt(0)."""
    (kr,) = pick(reports, "gemm_aligned", "gfx942", version)
    assert [f for f in kr.findings if f.code == "IRS201"] == []
    path = next(Path(kr.kernel.directory).glob("*.amdgcn"))
    text = path.read_text().splitlines()
    header = next(LABEL.match(s).group(1) for s in text if LABEL.match(s) and "Loop Header" in s)
    body = loop_lines(text, header)
    drains = [n for n in body if DRAIN.match(text[n - 1])]
    last_load = max(n for n in body if GLOBAL_LOAD.match(text[n - 1]))
    assert len(drains) == 1 and last_load > drains[0]  # the loop-carried drain of the next tile
    between = gap(text, last_load, drains[0])
    mfma = sum(s.strip().startswith("v_mfma") for s in between)
    assert mfma >= 8 and cycles(between) >= 500, (len(between), mfma)


@pytest.mark.parametrize("version", VERSIONS)
def test_unaligned_gemm_drains_its_64_two_byte_loads(reports, version):
    (kr,) = pick(reports, "gemm_unaligned", "gfx942", version)
    f = only(kr)
    text = text_of(f)
    loads = [n for n in loop_lines(text, loop_label(f)) if GLOBAL_LOAD.match(text[n - 1])]
    assert len(loads) == 64 == f.number("global_loads")
    assert all(text[n - 1].strip().startswith("global_load_ushort") for n in loads)
    wait_line = int(re.search(r"`s_waitcnt vmcnt\(0\)` at line (\d+)", f.message).group(1))
    load_line = int(re.search(r"global_load_ushort at line (\d+)", f.message).group(1))
    assert DRAIN.match(text[wait_line - 1]) and load_line in loads
    between = gap(text, load_line, wait_line)
    assert len(between) == f.number("distance") < 16
    assert cycles(between) == f.number("cover_cycles") < 250
    assert f.python_line == 49 and "tl.load(b_ptrs" in source_line(f)


def test_spill_reload_that_drains_the_global_queue_is_named(reports):
    (kr,) = pick(reports, "gemm_wpe3", "gfx942", "3.9")
    f = only(kr)
    text = text_of(f)
    reload = int(re.search(r"scratch_load_dword at line (\d+)", f.message).group(1))
    assert "Folded Reload" in text[reload - 1] and text[reload - 1].strip().startswith("scratch_load_dword")
    wait_line = int(re.search(r"at line (\d+) in", f.message).group(1))
    load_line = int(re.search(r"global_load_dwordx4 at line (\d+)", f.message).group(1))
    between = gap(text, load_line, wait_line)
    assert len(between) == 7 == f.number("distance")
    assert text[reload - 1] in between  # the reload sits between the load and the wait
    assert f.number("spill_waits") == 1 and "the wait is there for a scratch reload" in f.message


@pytest.mark.parametrize("arch,wait", [("gfx1100", "s_waitcnt vmcnt(0)"), ("gfx1200", "s_wait_loadcnt 0x0")])
def test_rdna_gemm_drains_are_one_finding_per_loop(reports, arch, wait):
    (kr,) = pick(reports, "gemm_aligned", arch, "3.9")
    f = only(kr)
    text = text_of(f)
    waits = [int(n) for n in re.search(r"\(waits at lines ([\d, ]+)\)", f.message).group(1).split(", ")]
    assert len(waits) == 15 == f.number("waits")
    assert all(DRAIN.match(text[n - 1]) for n in waits)
    body = set(loop_lines(text, loop_label(f)))
    assert set(waits) <= body
    # every other line a finding names is one of the loop's global loads
    assert all(GLOBAL_LOAD.match(text[n - 1]) and n in body for n in set(f.lines) - set(waits))
    assert f.number("spill_waits") == 10 and "scratch reload" in f.message
    closest = int(re.search(r"the closest, `[^`]+` at line (\d+)", f.message).group(1))
    assert text[closest - 1].strip() == wait and GLOBAL_LOAD.match(text[closest - 2])  # issued right before it
    assert f.number("distance") == 0 and "right after it is issued" in f.message


@pytest.mark.parametrize("version", ("3.0", *VERSIONS))
def test_what_fires_and_where_it_points(reports, version):
    fired = set()
    for fixture, kr in reports:
        if not kr.kernel.triton_version.value.startswith(version):
            continue
        for f in kr.findings:
            assert kr.kernel.target.backend == "hip"
            fired.add((fixture, kr.kernel.target.arch))
            text = text_of(f)
            assert f.stage == "amdgcn"
            assert all(DRAIN.match(text[n - 1]) or GLOBAL_LOAD.match(text[n - 1]) for n in f.lines)
            assert "tl.load(" in source_line(f)
            # under the 500-cycle floor, and either the SIMD idles or the wave waits longer than it works
            own, waves = f.number("cover_cycles"), f.number("waves_per_simd")
            assert own < 500 and (own * waves < 500 or own < 250)
            assert (f.severity == "warning") == (own * waves < 500)
    assert fired == EXPECTED[version]


@pytest.mark.parametrize("fixture", ["add", "softmax", "layernorm", "spill", "tile_copy_hint"])
def test_kernels_without_a_load_loop_are_silent(reports, fixture):
    krs = [kr for f, kr in reports if f == fixture]
    assert krs
    assert all(not kr.findings for kr in krs)
