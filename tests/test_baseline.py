"""`irscope baseline` and irscope/engine/baseline.py: the key, the file, and judging a report against it."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from conftest import FIXTURES

import irscope
from irscope.engine.baseline import Baseline, BaselineError, finding_key, judge
from irscope.cli.main import main

BEFORE = FIXTURES / "before_after" / "before"


@pytest.fixture(scope="module")
def before():
    return irscope.load(BEFORE, config=False)


def test_the_key_survives_a_recompile(before):
    (matmul,) = before.find("matmul_kernel")
    keys = {finding_key(matmul.kernel, f) for f in matmul.findings}
    assert ("matmul_kernel", "gfx942", "IRS102", "gemm.py:59") in keys  # the Python line, not the artifact's
    assert ("matmul_kernel", "gfx942", "IRS404", "amdgcn") in keys  # no Python line: the stage


def test_cli_writes_a_stable_baseline(capsys, before):
    assert main(["baseline", str(BEFORE)]) == 0
    out, err = capsys.readouterr()
    assert "14 finding(s) of 3 kernel(s)" in err
    data = json.loads(out)
    assert (data["schema"], data["schema_version"]) == ("irscope.baseline", 1)
    lines = out.splitlines()
    assert len(lines) == 2 + len(data["findings"]) and lines[-1] == "]}"  # one entry a line, for diffs
    assert out == Baseline.of(before).to_json()  # no timestamp: the same findings write the same file
    (tile_lds,) = [e for e in data["findings"] if e["code"] == "IRS103" and e["kernel"] == "tile_copy_kernel"]
    assert (tile_lds["where"], tile_lds["count"]) == ("tile_copy.py:34", 2)  # LDS writes and reads, one line

    assert main(["baseline", str(BEFORE), "--select", "IRS102"]) == 0
    assert {e["code"] for e in json.loads(capsys.readouterr().out)["findings"]} == {"IRS102"}


@pytest.mark.parametrize("args", [["no-such-dir"], [str(BEFORE), "--select", "IRS999"]])
def test_cli_unusable_input_exits_2(capsys, args):
    assert main(["baseline", *args]) == 2
    assert capsys.readouterr().out == ""


def test_round_trip_and_counts(before, tmp_path):
    path = tmp_path / "b.json"
    path.write_text(Baseline.of(before).to_json())
    loaded = Baseline.load(path)
    assert loaded.counts == Baseline.of(before).counts
    verdict = judge(before, loaded)
    assert not verdict.new and not verdict.unused and sum(map(len, verdict.accepted.values())) == 14

    # One of the two IRS103 at tile_copy.py:34 accepted: the other is new; a gone entry is unused.
    key = ("tile_copy_kernel", "gfx942", "IRS103", "tile_copy.py:34")
    gone = ("add_kernel", "gfx942", "IRS101", "vector_add.py:1")
    verdict = judge(before, replace(loaded, counts={**loaded.counts, key: 1, gone: 1}))
    assert [f.code for fs in verdict.new.values() for f in fs] == ["IRS103"]
    assert verdict.unused == {gone: 1}
    assert judge(before, replace(loaded, counts={gone: 1}), lambda code: code != "IRS101").unused == {}


@pytest.mark.parametrize(("text", "message"), [
    ("not json", "not a JSON baseline"),
    ('{"schema": "irscope.report"}', "not an irscope baseline"),
    ('{"schema": "irscope.baseline", "schema_version": 99}', "newer than this irscope reads"),
    ('{"schema": "irscope.baseline", "schema_version": 1, "findings": [{"kernel": "k"}]}', r"findings\[0\]"),
    # Malformed input (issue 22): nesting deeper than json's decoder recurses, a cut-off file (its line
    # and column), a count no int holds, findings that are no list.
    ("[" * 100_000, "not a JSON baseline: nested too deeply"),
    ('{"a": ' * 100_000, "not a JSON baseline: nested too deeply"),
    ('{"schema": "irscope.baseline", "schema_version": 1, "findings": [\n  {"kernel": "k"',
     r"not a JSON baseline: Expecting ',' delimiter: line 2 column 17"),
    ('{"schema": "irscope.baseline", "schema_version": 1, "findings": [{"kernel": "k", "arch": "a", "code": "c", '
     '"where": "w", "count": 1e999}]}', r"findings\[0\] is not an entry"),
    ('{"schema": "irscope.baseline", "schema_version": 1, "findings": 5}', '"findings" is not a list'),
], ids=["not-json", "a-report", "newer", "no-arch", "malformed-deep-lists", "malformed-deep-objects",
        "malformed-truncated", "malformed-count-1e999", "malformed-findings-not-a-list"])
def test_a_bad_baseline_is_an_error_naming_the_file(tmp_path, text, message):
    path = tmp_path / "b.json"
    path.write_text(text)
    with pytest.raises(BaselineError, match=message) as error:
        Baseline.load(path)
    assert str(path) in str(error.value)
