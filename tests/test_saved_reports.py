"""Saved reports and other JSON given where irscope reads a report are untrusted (issue 22 items 17, 21).

The reports here are real: made by scanning a copy of two fixture kernels of Triton 3.9. The hostile
and malformed inputs (`{}`, a diff report, bad `schema_version`s, deep nesting) are written by the
tests, as an attacker or a careless user would give them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import copy_tree, kernel_dirs

import irscope
from irscope.cli.main import main
from irscope.pipeline.harvester import HarvestError
from irscope.model.report import Report, ReportError


@pytest.fixture(scope="module")
def saved(manifest, tmp_path_factory) -> dict[str, Path]:
    """A copied cache of two Triton 3.9 kernels, its saved report, a diff report and a baseline of it."""
    root = tmp_path_factory.mktemp("saved")
    cache = root / "cache"
    for entry in kernel_dirs(manifest, cache="caches/triton-3.9")[:2]:
        copy_tree(entry, cache / entry.name)
    paths = {"cache": cache, "report": root / "base.json", "diff": root / "diff.json",
             "baseline": root / "baseline.json"}
    assert main(["scan", str(cache), "--no-cache", "--json", str(paths["report"])]) == 0
    assert main(["diff", str(paths["report"]), str(paths["report"]), "--json", str(paths["diff"])]) == 0
    assert json.loads(paths["diff"].read_text())["schema"] == "irscope.diff"
    return paths


def _run(capsys, *argv) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main([str(a) for a in argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


def _hostile(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / f"hostile-{name}.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return path


def _report_with(saved, tmp_path: Path, name: str, **fields) -> Path:
    """The real saved report with `fields` replaced (malformed on purpose); `None` values as JSON null."""
    data = json.loads(saved["report"].read_text())
    data.update(fields)
    return _hostile(tmp_path, name, json.dumps(data))


NOT_REPORTS = {
    "empty-object": ("{}", "none of the keys Triton's metadata has"),
    "array": ("[1, 2]", "a JSON array, not an object"),
    "not-json": ("{\"schema\": ", "not valid JSON"),
    "not-utf8": (b"{\"name\": \"\xff\"}", "not UTF-8"),
    "huge-integer": ("{\"name\": " + "9" * 5000 + "}", "not JSON irscope reads"),
}


# Item 17: a side of `diff` that is no scan report used to be one empty "kernel", and the gate passed.
@pytest.mark.parametrize("kind", sorted(NOT_REPORTS))
@pytest.mark.parametrize("side", ["before", "after"])
def test_hostile_input_not_a_report_as_a_diff_side_is_exit_2(saved, tmp_path, capsys, kind, side):
    content, reason = NOT_REPORTS[kind]
    hostile = _hostile(tmp_path, kind, content)
    sides = (hostile, saved["report"]) if side == "before" else (saved["report"], hostile)
    rc, out, err = _run(capsys, "diff", *sides, "--fail-on", "regression", "--no-cache")
    assert rc == 2, (out, err)
    assert f"{hostile}: " in err and reason in err and "neither a report saved by `irscope scan --json`" in err
    assert "internal error" not in err and "kernel pairs" not in out


@pytest.mark.parametrize("made", ["diff", "baseline"])
def test_hostile_input_other_irscope_json_as_a_diff_side_is_exit_2(saved, tmp_path, capsys, made):
    if made == "baseline":
        rc, out, _ = _run(capsys, "baseline", saved["cache"], "--no-cache")
        assert rc == 0 and json.loads(out)["schema"] == "irscope.baseline"
        saved["baseline"].write_text(out)
    rc, out, err = _run(capsys, "diff", saved["report"], saved[made], "--fail-on", "regression", "--no-cache")
    assert rc == 2
    assert f"{saved[made]}: a file of schema 'irscope.{made}', not a scan report" in err


def test_hostile_input_any_json_named_to_scan_or_occupancy_is_exit_2(saved, tmp_path, capsys):
    empty = _hostile(tmp_path, "empty-object", "{}")
    for command in ("scan", "occupancy"):
        rc, out, err = _run(capsys, command, empty, *(["--no-cache"] if command == "scan" else []))
        assert rc == 2 and f"{empty}: " in err and "1 kernels" not in out, (command, out, err)
    with pytest.raises(HarvestError, match="hostile-empty-object.json"):
        irscope.load(empty, index=False)


def test_a_saved_report_named_to_scan_says_what_reads_it(saved, capsys):
    rc, out, err = _run(capsys, "scan", saved["report"], "--no-cache")
    assert rc == 2 and f"{saved['report']}: a report saved by `irscope scan --json`, not a Triton artifact" in err


def test_real_metadata_json_is_still_harvested_in_a_cache_and_named(saved, capsys):
    rc, out, _ = _run(capsys, "scan", saved["cache"], "--no-cache")
    assert rc == 0 and "2 kernels" in out
    meta = next(p for p in sorted(saved["cache"].glob("*/*.json")) if not p.name.startswith("__grp__"))
    rc, out, err = _run(capsys, "scan", meta, "--no-cache", "--json", "-")
    assert rc == 0, err
    (kernel,) = json.loads(out)["kernels"]
    assert kernel["kernel"]["name"] == meta.stem and kernel["kernel"]["target"] is not None


def test_real_saved_reports_still_diff_and_load(saved, capsys):
    rc, out, err = _run(capsys, "diff", saved["report"], saved["report"], "--fail-on", "regression")
    assert rc == 0 and "2 kernel pairs" in out, err
    assert len(irscope.load(saved["report"]).kernels) == 2


# Item 21: `schema_version` of another type or out of range was "newer than this irscope reads".
@pytest.mark.parametrize("version, message", [
    ("2", "`schema_version` is \"2\", not an integer (1 to 2)"),
    (None, "`schema_version` is null, not an integer (1 to 2)"),
    (2.0, "`schema_version` is 2.0, not an integer (1 to 2)"),
    (True, "`schema_version` is true, not an integer (1 to 2)"),
    (-1, "`schema_version` -1 is no version (1 to 2)"),
    (0, "`schema_version` 0 is no version (1 to 2)"),
    (3, "report schema version 3 is newer than this irscope reads (2)"),
])
def test_hostile_input_schema_version_of_wrong_type_or_range(saved, tmp_path, capsys, version, message):
    hostile = _report_with(saved, tmp_path, "schema-version", schema_version=version)
    rc, out, err = _run(capsys, "diff", hostile, saved["report"], "--no-cache")
    assert rc == 2 and f"{hostile}: " in err and message in err, err
    if version != 3:
        assert "newer" not in err
    with pytest.raises(ReportError, match=str(hostile.name)):
        Report.load(hostile)


def test_hostile_input_schema_version_missing(saved, tmp_path):
    data = json.loads(saved["report"].read_text())
    del data["schema_version"]
    hostile = _hostile(tmp_path, "no-schema-version", json.dumps(data))
    with pytest.raises(ReportError, match="no `schema_version`"):
        Report.load(hostile)


@pytest.mark.parametrize("depth", [500, 100_000])
def test_hostile_input_deeply_nested_report_is_an_error_naming_the_file(saved, tmp_path, capsys, depth):
    data = json.loads(saved["report"].read_text())
    text = json.dumps(data)[:-1] + ', "nested": ' + "[" * depth + "]" * depth + "}"
    hostile = _hostile(tmp_path, f"nested-{depth}", text)
    rc, out, err = _run(capsys, "diff", hostile, saved["report"], "--fail-on", "regression", "--no-cache")
    assert rc == 2 and f"{hostile}: " in err and "nested" in err and "internal error" not in err, err
    with pytest.raises(ReportError, match=f"{hostile.name}: .*nested"):
        Report.load(hostile)
    with pytest.raises((ReportError, HarvestError), match=hostile.name):
        irscope.load(hostile)


def test_real_reports_nest_far_less_than_the_limit(saved):
    from irscope.model.report import MAX_DEPTH, _depth

    assert _depth(json.loads(saved["report"].read_text())) * 4 < MAX_DEPTH


def test_a_mutated_report_is_read_or_refused_naming_the_file(tmp_path):
    """Every kind of tree and text mutation of a real report (tests/fuzz_reports.py) twice: read and
    rendered every way and diffed both ways, or refused by a ReportError naming the file; never an
    exception or the CLI's "internal error". bench/fuzz.py --reports runs thousands of these."""
    import fuzz_reports

    clean = fuzz_reports.clean_report(tmp_path, per_cache=1)
    kinds = len(fuzz_reports.TREE_MUTATIONS) + len(fuzz_reports.TEXT_MUTATIONS)
    outcomes = [fuzz_reports.check(case, clean, tmp_path)
                for case in fuzz_reports.cases(clean.read_text(encoding="utf-8"), 2 * kinds, seed=22)]
    bugs = [f"{o.case}\n{o.detail}" for o in outcomes if o.status == "bug"]
    assert not bugs, "\n\n".join(bugs)
    assert {o.status for o in outcomes} == {"ok", "report-error"}  # the mutations reach past the first check


@pytest.mark.parametrize("lines", [
    "1-1000000000",  # a MemoryError when the ranges were expanded into ints
    ",".join(["130-13116"] * 5000),  # found by bench/fuzz.py --reports: 23 s and 65 million ints
    "5-99999999999",
    "-3",
])
def test_line_ranges_of_a_crafted_report_are_refused_without_expanding_them(saved, tmp_path, lines):
    data = json.loads(saved["report"].read_text())
    mixes = [m for k in data["kernels"] for m in k["mix"] if m["rows"]]
    mixes[0]["rows"][0]["lines"] = lines
    path = tmp_path / "crafted.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ReportError, match=f"^{path}: malformed report: not line ranges: "):
        Report.load(path)


# Every report case bench/fuzz.py --reports found a bug with (docs/robustness.md lists them), replayed
# against the same clean report (fuzz_reports.clean_report's default: three kernels per backend and version).
FOUND_IN_REPORTS = [
    ("hostile_string", 4271340630),  # a severity outside error/warning/info: ValueError in the console's sort
    ("wrong_value", 1692125395),  # a lone surrogate in a name: UnicodeEncodeError in SARIF's fingerprint
    ("hostile_string", 1710511786),  # line ranges repeated 5,000 times: 65 million ints, 23 s
    ("hostile_string", 3480411181),  # an occupancy step named "\u202evgprs": KeyError in the table
    ("extreme_number", 1949949319),  # a 400-digit `active`: OverflowError in Markdown's occupancy sort
]


@pytest.fixture(scope="module")
def fuzz_clean(tmp_path_factory) -> Path:
    import fuzz_reports

    return fuzz_reports.clean_report(tmp_path_factory.mktemp("fuzz-clean"))


@pytest.mark.parametrize("kind, seed", FOUND_IN_REPORTS, ids=[f"{k}-{s}" for k, s in FOUND_IN_REPORTS])
def test_report_cases_the_fuzzing_found_stay_fixed(fuzz_clean, tmp_path, kind, seed):
    import fuzz_reports

    case = fuzz_reports.make_case(fuzz_clean.read_text(encoding="utf-8"), kind, seed)
    outcome = fuzz_reports.check(case, fuzz_clean, tmp_path)
    assert outcome.status != "bug", outcome.detail
