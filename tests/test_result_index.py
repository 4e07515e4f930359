"""The result index: a re-scan of an unchanged cache reads its results instead of re-analyzing."""

from __future__ import annotations

import sqlite3

import pytest
from conftest import FIXTURES, copy_tree, tree_digest

import irscope.pipeline.analyze as pipeline
from irscope.pipeline.analyze import scan
from irscope.engine.selection import RuleSelection
from irscope.model.serde import to_data


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
    with sqlite3.connect(index / "results.sqlite3") as db:  # one bit flipped in every stored entry
        for key, payload in db.execute("SELECT key, payload FROM entries").fetchall():
            db.execute("UPDATE entries SET payload = ? WHERE key = ?", (bytes([payload[0] ^ 1]) + payload[1:], key))
    db.close()
    analyzed = []
    real = pipeline.analyze_kernel
    monkeypatch.setattr(pipeline, "analyze_kernel", lambda k, *a, **kw: analyzed.append(k.key) or real(k, *a, **kw))
    repaired = scan(cache, index=index, jobs=1)
    assert len(analyzed) == len(repaired.kernels)  # every broken entry was ignored and rewritten
    analyzed.clear()
    scan(cache, index=index, rules=RuleSelection(("IRS501",)), jobs=1)
    assert len(analyzed) == len(repaired.kernels)  # another selection, another salt


def test_a_result_stored_while_its_files_were_young_is_found_once_they_are_old(cache, tmp_path, monkeypatch):
    """A scan right after a copy keys files whose ctime is seconds old. Their bytes used to go into
    the key, so a re-scan two seconds later, the files no longer young, missed every such entry
    (the suite's order made it happen: this file after test_resources_vs_manifest.py)."""
    import irscope.pipeline.result_index as result_index

    index = tmp_path / "index"
    monkeypatch.setattr(result_index, "RACY_SECONDS", 10**9)  # every file young
    cold = scan(cache, index=index)
    monkeypatch.setattr(result_index, "RACY_SECONDS", 0)  # every file old

    def refuse(*args, **kwargs):
        raise AssertionError("analyzed again")

    monkeypatch.setattr(pipeline, "analyze_kernel", refuse)
    assert kernels_data(scan(cache, index=index)) == kernels_data(cold)


def test_young_bytes_that_changed_under_the_same_timestamps_are_not_trusted(cache, tmp_path, monkeypatch):
    """On a filesystem with coarse times a change can keep a file's stat: the entry stored while the
    file was young holds its bytes' digest, and a mismatch is a miss."""
    import irscope.pipeline.result_index as result_index
    from irscope.pipeline.harvester import harvest

    monkeypatch.setattr(result_index, "RACY_SECONDS", 10**9)
    kernel = next(k for k in harvest(cache).kernels if k.artifact("amdgcn"))
    report = scan(cache, index=None).kernels[0]
    store = result_index.ResultIndex(tmp_path / "index")
    key = store.key(kernel)
    store.put(key, report)
    assert store.get(key) == report
    path = kernel.artifact("amdgcn").path
    text = open(path).read()
    open(path, "w").write(text.replace("s_endpgm", "s_endpgX", 1))  # same size, other bytes
    assert store.get(key) is None  # the key as a coarse filesystem would give it again
