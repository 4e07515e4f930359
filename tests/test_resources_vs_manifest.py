"""irscope's resource numbers against the compiler's own, for every kernel in the corpus.

fixtures/manifest.json was written by fixtures/build.py from the compiler's outputs with
its own code (PyYAML over the amdhsa metadata, the bundled cuobjdump over each cubin),
so these tests compare irscope with an independent reading.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import FIXTURES, load_manifest

from irscope.model.kernel import AmdResources, NvidiaResources

ENTRIES = load_manifest()["kernels"]
AMD_FIELDS = {
    "vgpr_count": "vgpr_total",
    "agpr_count": "agpr",
    "sgpr_count": "sgpr",
    "vgpr_spill_count": "vgpr_spill",
    "sgpr_spill_count": "sgpr_spill",
    "private_segment_fixed_size": "scratch_bytes",
    "group_segment_fixed_size": "lds_static",
    "llvm_occupancy": "llvm_occupancy",
}


def _id(entry: dict) -> str:
    return f"{entry['cache']}:{entry['fixture']}:{entry['target']['arch']}"


@pytest.fixture(scope="module")
def by_directory(corpus_report):
    return {Path(r.kernel.directory).resolve(): r for r in corpus_report.kernels}


@pytest.mark.parametrize("entry", ENTRIES, ids=_id)
def test_kernel_matches_compiler(entry, by_directory):
    report = by_directory.get((FIXTURES / entry["cache"] / entry["dir"]).resolve())
    assert report is not None, f"irscope did not find {entry['cache']}/{entry['dir']}"
    kernel, res = report.kernel, report.resources
    assert report.problems == ()
    assert kernel.name == entry["name"]
    assert kernel.target.backend == entry["target"]["backend"]
    assert kernel.target.warp_size == entry["target"]["warp_size"]
    assert kernel.triton_version is not None

    for key in ("shared", "num_warps", "num_stages"):
        fact = getattr(kernel.options, key)
        assert fact is not None and fact.value == entry["metadata"][key], key

    if "amdgcn" in entry:
        assert isinstance(res, AmdResources)
        for key, field in AMD_FIELDS.items():
            fact = getattr(res, field)
            expected = entry["amdgcn"][key]
            if key == "agpr_count" and expected is None:
                # RDNA has no AGPRs and its YAML no .agpr_count; LLVM's `.set num_agpr, 0` says so.
                assert fact.value == 0 and fact.origin.detail == ".set num_agpr", fact
                continue
            assert (fact.value if fact else None) == expected, f"{field} vs compiler's {key}"
    else:
        assert isinstance(res, NvidiaResources)
        dump = entry["cuobjdump"]
        assert res.registers.value == dump["REG"]
        assert res.local_bytes.value == dump["LOCAL"]
        assert res.stack_bytes.value == dump["STACK"]
        # cuobjdump's SHARED adds the sm_90+ per-block reserve that the cubin keeps apart.
        reserved = res.reserved_shared.value if res.reserved_shared else 0
        assert res.static_shared.value + reserved == dump["SHARED"]
        ptx = entry.get("ptx") or {}
        if ptx.get("reqntid") is not None:
            assert res.reqntid.value[0] == ptx["reqntid"][0]
            assert res.reqntid.value[0] == entry["metadata"]["num_warps"] * 32
        if ptx.get("maxnreg") is not None:
            assert res.maxnreg.value == ptx["maxnreg"]


def test_corpus_covers_every_target_and_version(corpus_report):
    seen = {(r.kernel.target.arch, r.kernel.triton_version.value) for r in corpus_report.kernels}
    arches = {a for a, _ in seen}
    assert {"gfx942", "gfx950", "gfx90a", "sm_90", "sm_80"} <= arches
    versions = {v for _, v in seen}
    assert {"3.6.0", "3.9.0"} <= versions
    assert "3.2" in versions  # 3.2 writes no triton_version; its urlsafe-base64 naming tells


def test_every_manifest_kernel_found_and_nothing_more(corpus_report):
    found = {Path(r.kernel.directory).resolve() for r in corpus_report.kernels}
    listed = {(FIXTURES / e["cache"] / e["dir"]).resolve() for e in ENTRIES}
    assert found == listed


def _text_facts(report):
    res = report.resources
    for obj in (res, report.kernel.options):
        if obj is None:
            continue
        for name in obj.__dataclass_fields__:
            fact = getattr(obj, name)
            if fact is not None and fact.origin.line is not None:
                yield name, fact


def test_every_number_points_at_the_line_it_came_from(corpus_report):
    checked = 0
    for report in corpus_report.kernels:
        for name, fact in _text_facts(report):
            line = Path(fact.origin.path).read_text().splitlines()[fact.origin.line - 1]
            value = fact.value if not isinstance(fact.value, tuple) else fact.value[0]
            assert str(value) in line, f"{name}={fact.value} not on {fact.origin}: {line!r}"
            checked += 1
    assert checked > 10 * len(corpus_report.kernels)
