"""Kernels are analyzed in worker processes when there are enough of them, in input order."""

from __future__ import annotations

import os

import pytest

from conftest import FIXTURES

import irscope.pipeline.analyze as pipeline
from irscope.pipeline.harvester import harvest
from irscope.engine.selection import RuleSelection


def _pid_and_key(kernel, *args, **kwargs):
    return os.getpid(), kernel.key


def _analyze_many(work, sass, selection, jobs):
    """pipeline.Analyses over `work` (what scan runs), results in input order."""
    done = dict(pipeline.Analyses(list(enumerate(work)), sass, selection, jobs))
    return [done[i] for i in range(len(work))]


def _work(count):
    kernels = harvest(FIXTURES / "caches" / "triton-3.9").kernels[:count]
    assert len(kernels) == count
    return [(k, (), ()) for k in kernels]


def test_many_kernels_go_to_workers_and_come_back_in_order(monkeypatch):
    monkeypatch.setattr(pipeline, "analyze_kernel", _pid_and_key)  # forked workers inherit the stand-in
    work = _work(24)
    results = _analyze_many(work, False, RuleSelection(), jobs=2)
    assert [key for _, key in results] == [k.key for k, _, _ in work]
    assert os.getpid() not in {pid for pid, _ in results}


def test_a_few_kernels_or_one_job_stay_in_this_process(monkeypatch):
    monkeypatch.setattr(pipeline, "analyze_kernel", _pid_and_key)
    few = _work(pipeline.PARALLEL_FROM - 1)
    many = _work(pipeline.PARALLEL_FROM + 4)
    assert {pid for pid, _ in _analyze_many(few, False, RuleSelection(), jobs=2)} == {os.getpid()}
    assert {pid for pid, _ in _analyze_many(many, False, RuleSelection(), jobs=1)} == {os.getpid()}


def test_a_worker_that_dies_costs_speed_not_results(monkeypatch):
    parent = os.getpid()

    def dies_in_a_worker(kernel, *args, **kwargs):
        if os.getpid() != parent:
            os._exit(1)  # what the out-of-memory killer does
        return parent, kernel.key

    monkeypatch.setattr(pipeline, "analyze_kernel", dies_in_a_worker)
    work = _work(12)
    results = _analyze_many(work, False, RuleSelection(), jobs=2)
    assert results == [(parent, k.key) for k, _, _ in work]


def test_a_kernel_whose_analysis_raises_is_reported_and_the_others_are_kept(monkeypatch, capsys):
    real = pipeline.analyze_kernel
    work = _work(12)
    broken = work[5][0].key

    def raises_for_one(kernel, *args, **kwargs):
        if kernel.key == broken:
            raise IndexError("list index out of range")
        return real(kernel, *args, **kwargs)

    monkeypatch.setattr(pipeline, "analyze_kernel", raises_for_one)
    monkeypatch.delenv("IRSCOPE_DEBUG", raising=False)
    results = _analyze_many(work, False, RuleSelection(), jobs=2)
    assert [r.kernel.key for r in results] == [k.key for k, _, _ in work]
    failed = results[5]
    assert not failed.ok and failed.findings == () and failed.resources is None
    (problem,) = failed.problems
    assert problem.path == work[5][0].directory
    assert "IndexError: list index out of range" in problem.message and "--debug" in problem.message
    assert all(r.ok for i, r in enumerate(results) if i != 5)
    assert results[0] == real(work[0][0])
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize("count,size,jobs", [(0, 1, 2), (5, 1, 2), (100, 6, 4), (1016, 15, 16), (9, 16, 1)])
def test_chunks_cover_every_kernel_once_and_end_one_kernel_a_chunk(count, size, jobs):
    from irscope.pipeline.analyze import chunk_bounds

    bounds = chunk_bounds(count, size, jobs)
    assert [i for start, end in bounds for i in range(start, end)] == list(range(count))
    assert all(end - start <= size for start, end in bounds)
    assert all(end - start == 1 for start, end in bounds[-min(count, 2 * jobs):])


def test_streamed_work_is_handed_out_as_it_comes_and_each_kernel_once(monkeypatch):
    """A scan hands kernels to the workers while the harvest still runs (Analyses.add); the last 2 x jobs
    wait for `finish`, one a chunk, so that the workers finish together."""
    monkeypatch.setattr(pipeline, "analyze_kernel", _pid_and_key)
    work = _work(36)
    analyses = pipeline.Analyses([], False, RuleSelection(), jobs=2, streaming=True)
    for i, w in enumerate(work[:30]):
        analyses.add((i, w))
    handed = [len(chunk) for chunk in analyses.futures.values()]
    assert analyses.pool is not None and 0 < sum(handed) <= 30 - 2 * 2
    for i, w in enumerate(work[30:], 30):
        analyses.add((i, w))
    analyses.finish()
    chunks = [len(chunk) for chunk in analyses.futures.values()]
    assert sum(chunks) == 36 and chunks[-4:] == [1, 1, 1, 1]
    done = dict(analyses)
    assert [done[i][1] for i in range(36)] == [k.key for k, _, _ in work]
    assert os.getpid() not in {pid for pid, _ in done.values()}


def test_a_streamed_scan_reports_what_a_harvested_one_does():
    cache = FIXTURES / "caches" / "triton-3.9"
    streamed = pipeline.ScanRun(cache, jobs=2, stream=True).report()
    whole = pipeline.ScanRun(cache, jobs=2).report()
    assert streamed.kernels == whole.kernels and len(streamed.kernels) == len(harvest(cache).kernels)


def test_an_item_added_while_the_results_are_read_goes_to_a_worker(monkeypatch):
    """A suspected twin that is none (irscope/pipeline/twins.py) is known only once its first kernel's result
    is read: it goes to a worker, not to a queue the parent works through alone after the workers."""
    monkeypatch.setattr(pipeline, "analyze_kernel", _pid_and_key)
    work = _work(12)
    analyses = pipeline.Analyses(list(enumerate(work[:10])), False, RuleSelection(), jobs=2)
    done = {}
    for i, result in analyses:
        if not done:
            analyses.add_late((10, work[10]))
        done[i] = result
    assert sorted(done) == list(range(11)) and done[10] == (done[10][0], work[10][0].key)
    assert os.getpid() not in {pid for pid, _ in done.values()}
    analyses.add_late((11, work[11]))  # the workers are gone: analyzed here
    assert dict(analyses)[11] == (os.getpid(), work[11][0].key)
