"""The result index: a re-scan of an unchanged cache reads its results instead of re-analyzing."""

from __future__ import annotations

import pytest
from conftest import FIXTURES, copy_tree, tree_digest

import irscope.pipeline as pipeline
from irscope.pipeline import scan
from irscope.rule_engine import RuleSelection
from irscope.serde import to_data


def kernels_data(report):
    return [to_data(k) for k in report.kernels]


@pytest.fixture
def cache(tmp_path):
    return copy_tree(FIXTURES / "caches" / "triton-3.9", tmp_path / "cache")


def test_a_warm_scan_reads_every_kernel_from_the_index(cache, tmp_path, monkeypatch):
    index = tmp_path / "index"
    tree = tree_digest(cache)
    cold = scan(cache, index=index)
    assert index.is_dir() and not str(index).startswith(str(cache))
    assert tree_digest(cache) == tree  # nothing written where irscope reads

    def refuse(*args, **kwargs):
        raise AssertionError("analyzed again")

    monkeypatch.setattr(pipeline, "analyze_kernel", refuse)
    warm = scan(cache, index=index)
    assert kernels_data(warm) == kernels_data(cold)


def test_a_changed_artifact_is_analyzed_again(cache, tmp_path, monkeypatch):
    index = tmp_path / "index"
    cold = scan(cache, index=index)
    victim = next(k for k in cold.kernels if k.kernel.artifact("amdgcn"))
    path = victim.kernel.artifact("amdgcn").path
    with open(path, "a") as f:
        f.write("; a comment the compiler did not write\n")
    analyzed = []
    real = pipeline.analyze_kernel
    monkeypatch.setattr(pipeline, "analyze_kernel", lambda k, *a, **kw: analyzed.append(k.key) or real(k, *a, **kw))
    warm = scan(cache, index=index, jobs=1)  # in this process, where analyze_kernel is watched
    assert analyzed == [victim.kernel.key]
    assert len(warm.kernels) == len(cold.kernels)


def test_other_rules_or_a_broken_entry_mean_a_fresh_analysis(cache, tmp_path, monkeypatch):
    index = tmp_path / "index"
    scan(cache, index=index)
    for entry in index.rglob("*.pickle"):
        entry.write_bytes(b"not a pickle")
    analyzed = []
    real = pipeline.analyze_kernel
    monkeypatch.setattr(pipeline, "analyze_kernel", lambda k, *a, **kw: analyzed.append(k.key) or real(k, *a, **kw))
    repaired = scan(cache, index=index, jobs=1)
    assert len(analyzed) == len(repaired.kernels)  # every broken entry was ignored and rewritten
    analyzed.clear()
    scan(cache, index=index, rules=RuleSelection(("IRS501",)), jobs=1)
    assert len(analyzed) == len(repaired.kernels)  # another selection, another salt
