"""The Report round-trips through JSON, and refuses what is not one of ours."""

from __future__ import annotations

import json
import re
from dataclasses import fields, is_dataclass

import pytest

from conftest import REPO

from irscope.model import kernel as model
from irscope.isa.mix import InstructionMix, LineMix, MixRow
from irscope.model.report import SCHEMA_VERSION, Report, ReportError
from irscope.model.serde import saved_fields


def test_round_trip_is_exact(corpus_report, tmp_path):
    path = tmp_path / "report.json"
    corpus_report.save(path)
    loaded = Report.load(path)
    assert loaded == corpus_report
    assert loaded.kernels[0].kernel.metadata == corpus_report.kernels[0].kernel.metadata


def test_mix_lines_are_written_as_ranges_and_read_back(corpus_report):
    data = json.loads(corpus_report.to_json())
    mixes = [m for k in data["kernels"] for m in k["mix"]]
    written = [row["lines"] for m in mixes for row in m["rows"]]
    assert written and all(isinstance(w, str) and re.fullmatch(r"(\d+(-\d+)?)(,\d+(-\d+)?)*|", w) for w in written)
    assert any("-" in w for w in written)  # runs of consecutive lines are folded
    first = corpus_report.kernels[0].mix[0].rows[0]
    assert first.lines == tuple(sorted(first.lines)) and len(first.lines) == first.count


@pytest.mark.parametrize("lines,text", [((), ""), ((7,), "7"), ((3, 4, 5, 9, 11, 12), "3-5,9,11-12"),
                                        ((5, 2, 3), "5,2-3")])
def test_line_ranges_round_trip(lines, text):
    from irscope.model.line_ranges import LineRanges, parse_ranges, ranges_text

    assert ranges_text(lines) == text
    assert parse_ranges(text) == lines
    held = LineRanges.of(lines)
    assert held == lines and tuple(held) == lines and len(held) == len(lines) and bool(held) == bool(lines)
    assert held == LineRanges.parse(text) and hash(held) == hash(LineRanges.parse(text))


def test_schema_1_reports_with_line_lists_still_load(corpus_report):
    from irscope.model.line_ranges import parse_ranges

    data = json.loads(corpus_report.to_json())
    data["schema_version"] = 1
    for kernel in data["kernels"]:
        for mix in kernel["mix"]:
            for row in mix["rows"] + mix["python_lines"]:
                row["lines"] = list(parse_ranges(row["lines"]))
    assert Report.from_json(json.dumps(data)).kernels == corpus_report.kernels


def test_facts_keep_their_origin_through_json(corpus_report):
    data = json.loads(corpus_report.to_json())
    amd = next(k for k in data["kernels"] if k["resources"] and k["resources"]["type"] == "AmdResources")
    vgpr = amd["resources"]["vgpr_total"]
    assert isinstance(vgpr["value"], int)
    assert vgpr["origin"]["path"].endswith(".amdgcn") and vgpr["origin"]["line"] > 0
    assert vgpr["origin"]["detail"] == ".vgpr_count"


@pytest.mark.parametrize("text,message", [
    ("not json", "not a JSON report"),
    ('{"kernels": []}', "not an irscope report"),
    (json.dumps({"schema": "irscope.report", "schema_version": SCHEMA_VERSION + 1}), "newer"),
    (json.dumps({"schema": "irscope.report", "schema_version": 1, "irscope_version": "0", "created": "",
                 "roots": [], "kernels": [{"kernel": 3}]}), "malformed report"),
])
def test_bad_reports_are_refused_with_a_reason(text, message):
    with pytest.raises(ReportError, match=message):
        Report.from_json(text, "r.json")


def _model_fields() -> set[tuple[str, str]]:
    out = set()
    for obj in vars(model).values():
        if isinstance(obj, type) and is_dataclass(obj) and obj.__module__ == model.__name__:
            out |= {(obj.__name__, f.name) for f in saved_fields(obj)}  # machine-local ones are not saved
    out |= {("Report", f.name) for f in fields(Report)}
    for cls in (InstructionMix, MixRow, LineMix):  # saved inside KernelReport.mix
        out |= {(cls.__name__, f.name) for f in fields(cls)}
    return out


def test_schema_doc_describes_every_field():
    doc = (REPO / "docs" / "json-schema.md").read_text()
    missing = [f"{cls}.{name}" for cls, name in sorted(_model_fields())
               if not re.search(rf"`{re.escape(name)}`", doc)]
    assert not missing, f"docs/json-schema.md does not mention: {missing}"
    assert f"schema_version` | {SCHEMA_VERSION}" in doc or f"version {SCHEMA_VERSION}" in doc
