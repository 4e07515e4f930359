"""Twins (irscope/pipeline/twins.py): kernels whose files are the same bytes share one analysis.

fixtures/real_world's gfx942 liger_kernel_ops holds 18 pairs of `_dyt_*` kernels compiled with
num_stages 1 and 2: each pair's IR and assembly are byte for byte the same. fixtures/twins holds three
such configs of a GEMM whose IRS202 fix quotes num_stages.
"""

from __future__ import annotations

import tarfile
import time
from dataclasses import replace
from pathlib import Path

import pytest

from conftest import FIXTURES

import irscope.pipeline.analyze as analyze
from irscope.engine.rule import Rule
from irscope.engine.selection import load_rules
from irscope.model.serde import to_data
from irscope.pipeline.harvester import harvest
import irscope.pipeline.twins as twins_module
from irscope.pipeline.twins import Twins


@pytest.fixture(scope="module")
def dyt_cache(tmp_path_factory) -> Path:
    """liger_kernel_ops's `_dyt_*` kernels for gfx942, unpacked from the real-world corpus archive."""
    root = tmp_path_factory.mktemp("twins")
    with tarfile.open(FIXTURES / "real_world" / "gfx942.tar.xz") as tar:
        members = [m for m in tar.getmembers() if m.isfile() and "/liger_kernel_ops/" in m.name]
        dyt = {str(Path(m.name).parent) for m in members if Path(m.name).name.startswith("_dyt_")}
        tar.extractall(root, members=[m for m in members if str(Path(m.name).parent) in dyt], filter="data")
    (cache,) = {p.parent.parent for p in root.rglob("*.amdgcn")}
    return cache


@pytest.fixture(scope="module")
def quoting_twins(tmp_path_factory) -> Path:
    """fixtures/twins: one gfx942 GEMM compiled with num_stages 1, 2 and 3 into the same bytes, whose IRS202
    fix quotes num_stages."""
    root = tmp_path_factory.mktemp("quoting")
    with tarfile.open(FIXTURES / "twins" / "gfx942.tar.xz") as tar:
        tar.extractall(root, filter="data")
    return root / "gfx942" / "cache"


def _scan(cache: Path, monkeypatch, twins: bool, jobs: int = 1):
    analyzed = []
    real = analyze.analyze_kernel
    with monkeypatch.context() as m:
        m.setattr(analyze, "analyze_kernel", lambda k, *a, **kw: analyzed.append(k.key) or real(k, *a, **kw))
        if not twins:
            m.setattr(Twins, "fingerprint", lambda *a: None)
        report = analyze.ScanRun(cache, jobs=jobs, stream=True).report()
    data = to_data(report)
    data.pop("created")
    return data, analyzed


def test_a_twin_shares_the_first_kernels_analysis_and_reports_the_same(dyt_cache, monkeypatch):
    shared, once = _scan(dyt_cache, monkeypatch, twins=True)
    alone, each = _scan(dyt_cache, monkeypatch, twins=False)
    kernels = len(harvest(dyt_cache).kernels)
    assert kernels == 36 and len(each) == kernels and len(once) == kernels - 18
    assert shared == alone
    pooled, _ = _scan(dyt_cache, monkeypatch, twins=True, jobs=2)  # twins of kernels the workers analyzed
    assert pooled == alone


def test_with_workers_a_worker_reads_the_twins_files_not_the_parent(dyt_cache, monkeypatch):
    """Confirming a twin reads and hashes its files (~2 MB for a GEMM): done by the parent, it kept 16
    workers waiting on the bench corpus. The workers fork in ScanRun(); what is patched after is the
    parent's alone."""
    alone, _ = _scan(dyt_cache, monkeypatch, twins=False)
    run = analyze.ScanRun(dyt_cache, jobs=2, stream=True)

    def refuse(*args, **kwargs):
        raise AssertionError("the parent read a twin's file")

    monkeypatch.setattr(twins_module, "read_artifact", refuse)
    data = to_data(run.report())
    data.pop("created")
    assert data == alone


def test_twins_go_to_the_workers_while_the_harvest_goes_on(dyt_cache, monkeypatch):
    """A twin waits for its first kernel's report. Taken as the workers finish it, not after the harvest: on the
    bench corpus the harvest is half a 16-worker scan, and twins handed out after it were its tail. The harvest
    is held here at its 12th kernel until a worker has finished one, so that the test does not race the workers."""
    alone, _ = _scan(dyt_cache, monkeypatch, twins=False)
    real_add, real_twins = analyze.Analyses.add, analyze.Analyses.add_twins

    def add(self, item):
        real_add(self, item)
        deadline = time.monotonic() + 60
        while len(self.work) == 12 and self.pool is not None and not self._finished and time.monotonic() < deadline:
            time.sleep(0.01)

    handed = []
    monkeypatch.setattr(analyze.Analyses, "add", add)
    monkeypatch.setattr(analyze.Analyses, "add_twins", lambda self, *a: handed.append(a) or real_twins(self, *a))
    run = analyze.ScanRun(dyt_cache, jobs=2, stream=True)
    during = len(handed)
    data = to_data(run.report())
    data.pop("created")
    assert during > 0 and data == alone


def test_a_twin_in_another_quoted_option_runs_only_the_quoting_rules_again(quoting_twins, monkeypatch):
    requoted = []
    real = analyze.quoting_findings
    monkeypatch.setattr(analyze, "quoting_findings",
                        lambda k, codes, **kw: requoted.append(codes) or real(k, codes, **kw))
    shared, once = _scan(quoting_twins, monkeypatch, twins=True)
    alone, each = _scan(quoting_twins, monkeypatch, twins=False)
    assert len(each) == 3 and len(once) == 1 and requoted == [frozenset({"IRS202", "IRS403"})] * 2
    assert shared == alone
    fixes = {k["kernel"]["options"]["num_stages"]["value"]: [f["fix"] for f in k["findings"] if f["code"] == "IRS202"]
             for k in alone["kernels"]}
    assert fixes[1] and fixes[1] != fixes[2]  # the twins' own fixes, not the first kernel's


def test_a_suspected_twin_with_other_bytes_is_analyzed_on_its_own(dyt_cache, tmp_path, monkeypatch):
    """Malformed input, named as such: one byte of a twin's TTGIR changed in a copy (its size kept), so
    that the harvest's sizes match and only the digest tells them apart."""
    import shutil

    cache = tmp_path / "cache"
    shutil.copytree(dyt_cache, cache)
    ttgir = sorted(cache.rglob("*.ttgir"))[-1]
    text = ttgir.read_bytes()
    at = text.index(b"tt.func")
    ttgir.write_bytes(text[:at] + b"tt.fund" + text[at + len(b"tt.func"):])
    shared, once = _scan(cache, monkeypatch, twins=True)
    alone, _ = _scan(cache, monkeypatch, twins=False)
    assert len(once) == 36 - 17 and shared == alone


def test_findings_never_depend_on_an_option_they_do_not_quote():
    """What lets twins differ in num_stages: a rule reads it only into its text, and says so
    (`Rule.quotes_options`). Every kernel of two fixture caches, analyzed again with each other
    num_stages of 1-3: every finding fires the same, and only a quoting rule's text may change."""
    quoting = {r.code for r in load_rules() if "num_stages" in r.quotes_options}
    assert quoting == {"IRS202", "IRS403"}
    changed = set()
    for cache in ("triton-3.6", "triton-3.9"):
        for k in harvest(FIXTURES / "caches" / cache).kernels:
            own = k.options.num_stages
            a = analyze.analyze_kernel(k)
            for stages in (1, 2, 3):
                if own is None or own.value == stages:
                    continue
                other = replace(k, options=replace(k.options, num_stages=replace(own, value=stages)),
                                metadata={**k.metadata, "num_stages": stages})
                b = analyze.analyze_kernel(other)
                assert [f.code for f in a.findings] == [f.code for f in b.findings]
                for fa, fb in zip(a.findings, b.findings):
                    if fa.code in quoting:
                        changed |= {fa.code} if fa != fb else set()
                        fa, fb = replace(fa, message="", fix=""), replace(fb, message="", fix="")
                    assert fa == fb
                assert replace(a, kernel=None, findings=()) == replace(b, kernel=None, findings=())
    assert changed == quoting  # each quoting rule's text does quote it in some fixture kernel


def test_a_plugin_rule_turns_twins_off():
    class Plugin(Rule):
        """A third-party rule.

        ## What it does
        x
        ## Why is this bad?
        x
        ## Example
        x
        ## How to fix it in the kernel
        x
        """
        code, slug, summary, stages = "XYZ001", "a-plugin", "a third-party rule", ("ttgir",)

        def check(self, ctx):
            return []

    assert Twins(load_rules()).enabled and not Twins(load_rules() + (Plugin,)).enabled


def test_a_twin_whose_path_has_as_many_characters_but_more_bytes_is_analyzed_on_its_own(dyt_cache, tmp_path,
                                                                                          monkeypatch):
    """A pickle gives each string its length in bytes: a folder renamed to as many characters, one of them
    not ASCII, must not take its first kernel's report by a byte replacement."""
    import shutil

    cache = tmp_path / "cache"
    shutil.copytree(dyt_cache, cache)
    folder = sorted(p for p in cache.iterdir() if p.is_dir())[-1]
    folder.rename(folder.with_name("É" + folder.name[1:]))
    shared, once = _scan(cache, monkeypatch, twins=True)
    alone, _ = _scan(cache, monkeypatch, twins=False)
    assert len(once) == 36 - 17 and shared == alone
