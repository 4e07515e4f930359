"""Kernels are analyzed in worker processes when there are enough of them, in input order."""

from __future__ import annotations

import os

from conftest import FIXTURES

import irscope.pipeline as pipeline
from irscope.harvester import harvest
from irscope.rule_engine import RuleSelection


def _pid_and_key(kernel, *args, **kwargs):
    return os.getpid(), kernel.key


def _work(count):
    kernels = harvest(FIXTURES / "caches" / "triton-3.9").kernels[:count]
    assert len(kernels) == count
    return [(k, (), ()) for k in kernels]


def test_many_kernels_go_to_workers_and_come_back_in_order(monkeypatch):
    monkeypatch.setattr(pipeline, "analyze_kernel", _pid_and_key)  # forked workers inherit the stand-in
    work = _work(24)
    results = pipeline.analyze_many(work, False, RuleSelection(), jobs=2)
    assert [key for _, key in results] == [k.key for k, _, _ in work]
    assert os.getpid() not in {pid for pid, _ in results}


def test_a_few_kernels_or_one_job_stay_in_this_process(monkeypatch):
    monkeypatch.setattr(pipeline, "analyze_kernel", _pid_and_key)
    few = _work(pipeline.PARALLEL_FROM - 1)
    many = _work(pipeline.PARALLEL_FROM + 4)
    assert {pid for pid, _ in pipeline.analyze_many(few, False, RuleSelection(), jobs=2)} == {os.getpid()}
    assert {pid for pid, _ in pipeline.analyze_many(many, False, RuleSelection(), jobs=1)} == {os.getpid()}


def test_a_worker_that_dies_costs_speed_not_results(monkeypatch):
    parent = os.getpid()

    def dies_in_a_worker(kernel, *args, **kwargs):
        if os.getpid() != parent:
            os._exit(1)  # what the out-of-memory killer does
        return parent, kernel.key

    monkeypatch.setattr(pipeline, "analyze_kernel", dies_in_a_worker)
    work = _work(12)
    results = pipeline.analyze_many(work, False, RuleSelection(), jobs=2)
    assert results == [(parent, k.key) for k, _, _ in work]
