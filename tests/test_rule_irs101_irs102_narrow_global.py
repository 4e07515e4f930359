"""IRS101 narrow-global-load and IRS102 narrow-global-store on the real fixtures.

The counts are checked against the artifact text itself: every line a finding names holds
the narrow opcode, and the findings of a kernel cover every narrow access of that kind.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import FIXTURES, load_manifest

from irscope.pipeline import scan
from irscope.rule_engine import RuleSelection
from irscope.rules.irs101_narrow_global_load import NarrowGlobalLoad
from irscope.rules.irs102_narrow_global_store import NarrowGlobalStore

VERSIONS = ("3.2", "3.6", "3.9")
PREDICATE = r"(?:@!?%\w+\s+)?"  # PTX guards: `@%p2 ld.global.b16`
NARROW_LOAD = re.compile(r"^\s*" + PREDICATE + r"(global_load_(?:ushort|short_d16\w*|ubyte|sbyte|sshort|dword|dwordx2)|"
                         r"ld\.global(?:\.nc)?\.b16)\b")
NARROW_STORE = re.compile(r"^\s*" + PREDICATE + r"(global_store_(?:short_d16_hi|short|byte|dword|dwordx2)|"
                          r"st\.global\.b16)\b")


@pytest.fixture(scope="module")
def reports():
    manifest = load_manifest()
    report = scan([FIXTURES / "caches" / f"triton-{v}" for v in (*VERSIONS, "3.0")],
                  rules=RuleSelection.only(NarrowGlobalLoad, NarrowGlobalStore))
    fixture_of = {e["dir"]: e["fixture"] for e in manifest["kernels"]}
    return [(fixture_of.get(Path(r.kernel.directory).name), r) for r in report.kernels]


def pick(reports, fixture, arch, version):
    return [r for f, r in reports if f == fixture and r.kernel.target.arch == arch
            and r.kernel.triton_version.value.startswith(version)]


def artifact_lines(path: str) -> list[str]:
    return Path(path).read_text().splitlines()


@pytest.mark.parametrize("version", ("3.6", "3.9"))
@pytest.mark.parametrize("arch,isa", [("gfx942", "amdgcn"), ("sm_90", "ptx")])
def test_unaligned_gemm_loads_fire_on_both_operand_lines(reports, version, arch, isa):
    (kr,) = pick(reports, "gemm_unaligned", arch, version)
    loads = [f for f in kr.findings if f.code == "IRS101"]
    assert sorted(f.python_line for f in loads) == [48, 49]  # a = tl.load(...), b = tl.load(...)
    text = artifact_lines(loads[0].path)
    narrow = [n for n, line in enumerate(text, 1) if NARROW_LOAD.match(line)]
    assert sorted(n for f in loads for n in f.lines) == narrow  # every narrow load, each once
    for f in loads:
        assert f.stage == isa and f.severity == "warning"
        assert f.number("width_bytes") == 2 and f.number("count") == len(f.lines)
        assert f.number("in_loop") > 0 and f.python_file.endswith("gemm.py")
        op = NARROW_LOAD.match(text[f.line - 1]).group(1)
        assert f"of 2 B per lane ({op};" in f.message


@pytest.mark.parametrize("version", VERSIONS)
def test_tile_copy_without_hints_fires_and_with_hints_does_not(reports, version):
    """The GEMM tuning thread's case: global_store_short -> global_store_dwordx4 with hints."""
    for arch in ("gfx942", "sm_90"):
        for kr in pick(reports, "tile_copy_nohint", arch, version):
            (store,) = [f for f in kr.findings if f.code == "IRS102"]
            text = artifact_lines(store.path)
            assert all(NARROW_STORE.match(text[n - 1]) for n in store.lines)
            assert store.python_line == 34 and store.number("width_bytes") == 2
            assert "could not prove any of them contiguous and aligned" in store.message
        for kr in pick(reports, "tile_copy_hint", arch, version):
            assert kr.findings == ()


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("fixture", ["add", "softmax", "gemm_aligned", "layernorm", "flash_attn"])
def test_vectorized_kernels_are_silent(reports, fixture, version):
    for kr in pick(reports, fixture, "gfx942", version) + pick(reports, fixture, "sm_90", version):
        assert kr.findings == (), (kr.kernel.key, [str(f) for f in kr.findings])


def test_mfma_stores_as_wide_as_their_layout_are_left_alone(reports):
    """Triton 3.0's aligned GEMM stores its non-transposed MFMA accumulator with
    global_store_short: one element per lane along N, so no pointer fact would widen it."""
    (kr,) = pick(reports, "gemm_aligned", "gfx942", "3.0")
    text = "\n".join(artifact_lines(kr.kernel.artifact("amdgcn").path))
    assert "global_store_short" in text
    assert kr.findings == ()
