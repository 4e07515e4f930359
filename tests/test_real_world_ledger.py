"""The real-world corpus (fixtures/real_world/) and its reviewed findings ledger.

The corpus is seven public kernel libraries compiled for gfx942 and sm_90 (420 kernels). Every
finding irscope reports on it is in the ledger with its review; a finding the ledger does not
know, or one that disappears or changes severity, fails here, so each change to a rule shows
its effect on precision (fixtures/real_world/README.md says how to update and review).
"""

from __future__ import annotations

import sys
from collections import defaultdict

import pytest
from conftest import REPO

sys.path.insert(0, str(REPO / "fixtures" / "real_world"))
import corpus  # noqa: E402


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    return corpus.scan_runs(corpus.extract(tmp_path_factory.mktemp("real-world")))


@pytest.fixture(scope="module")
def seen(reports):
    return corpus.findings(reports)


def test_the_corpus_is_what_its_manifest_says(reports):
    import json

    manifest = json.loads((REPO / "fixtures" / "real_world" / "manifest.json").read_text())
    for target, runs in manifest["runs"].items():
        for script, kernels in runs.items():
            report = reports[(target, script.removesuffix(".py"))]
            assert len(report.kernels) == kernels, (target, script)
            assert all(k.kernel.target.arch == target for k in report.kernels)
    assert sum(len(r.kernels) for r in reports.values()) >= 400


def test_the_ledger_knows_every_finding(seen):
    ledger = corpus.read_ledger()
    now = {s.key: s for s in seen}
    new = sorted(set(now) - set(ledger))
    gone = sorted(set(ledger) - set(now))
    assert not new and not gone, (
        f"{len(new)} findings the ledger does not know, {len(gone)} it knows are gone (first: {(new + gone)[:3]}); "
        "run `python fixtures/real_world/corpus.py update`, review what changed, and commit the ledger")
    changed = [k for k, s in now.items() if ledger[k]["severity"] != s.severity]
    assert not changed, f"severity changed: {changed[:3]}; update the ledger and review them again"


def test_every_review_is_complete():
    for key, entry in corpus.read_ledger().items():
        assert entry["label"] in corpus.LABELS, key
        if entry["label"] != "unreviewed":
            assert entry["reason"].strip(), f"{key}: a review says why, from the artifact"
            assert entry["fix_fits"] in (True, False), f"{key}: a review says whether the fix fits the kernel"


def test_precision_page_is_generated_from_the_ledger():
    page = corpus.precision_page(corpus.read_ledger(), corpus.read_misses())
    assert corpus.PRECISION.read_text() == page, "regenerate: python fixtures/real_world/corpus.py precision"


def test_narrow_buffer_loads_fire_on_gfx942_where_narrow_loads_fire_on_sm_90(reports):
    """Issue 21, defect 1: Triton 3.9 lowers gfx942 loads to amdg.buffer_load (buffer_load_dword in the
    ISA); IRS101 read only tt.load and never fired on gfx942. liger's RoPE loads cos/sin rows (rope.py
    lines 69, 70) narrower than their layouts allow, on both targets."""
    lines = defaultdict(set)
    for target in ("gfx942", "sm_90"):
        for kr in reports[(target, "liger_kernel_ops")].kernels:
            if kr.kernel.name == "_triton_rope":
                for f in kr.findings:
                    if f.code == "IRS101":
                        lines[target].add(f.python_line)
                        assert target == "sm_90" or "buffer_load_dword" in f.message
    assert lines["gfx942"] == lines["sm_90"] == {69, 70}
    counts = {t: sum(1 for (target, _), r in reports.items() if target == t for k in r.kernels for f in k.findings
                     if f.code == "IRS101") for t in ("gfx942", "sm_90")}
    assert counts["gfx942"] >= 50 and counts["sm_90"] >= 50  # before the fix: 0 on gfx942
