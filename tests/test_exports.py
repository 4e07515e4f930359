"""Exports (docs/exports.md): the JSON Schema, SARIF 2.1.0, the DataFrames with CSV and Parquet,
and Markdown that interprets nothing from an artifact. Every report here is a scan of the real
fixtures; hostile text is put into a kernel's name or message with dataclasses.replace."""

from __future__ import annotations

import copy
import dataclasses
import gzip
import json
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from conftest import FIXTURES, REPO

from irscope.cli.main import main
from irscope.model.report import Report

HOSTILE = ("[bold red]x|y*z_w`v`` <script>alert(1)</script> <b>&amp; \x1b[31m\x07\u202e\n# h @user "
           "http://evil.example www.evil.example $x$ ~~s~~ :rocket: ![i](http://e/i.png) [l](http://e)")
BA = FIXTURES / "before_after"


@pytest.fixture(scope="module")
def hostile_report(corpus_report) -> Report:
    """The corpus with one finding-bearing kernel renamed, and its first finding's message, hostile."""
    i, kr = next((i, kr) for i, kr in enumerate(corpus_report.kernels) if kr.findings and kr.occupancy)
    finding = dataclasses.replace(kr.findings[0], message=HOSTILE, fix=HOSTILE)
    bad = dataclasses.replace(kr, kernel=dataclasses.replace(kr.kernel, name=HOSTILE),
                              findings=(finding, *kr.findings[1:]))
    return dataclasses.replace(corpus_report, kernels=(*corpus_report.kernels[:i], bad,
                                                       *corpus_report.kernels[i + 1:]))


# -- JSON -----------------------------------------------------------------------------------
def _report_schema() -> dict:
    return json.loads((REPO / "docs" / "report.schema.json").read_text())


def _strict(schema: dict) -> dict:
    """The schema with no key allowed that it does not name: the report has no undocumented field."""
    out = copy.deepcopy(schema)

    def walk(node):
        if isinstance(node, dict):
            if "properties" in node:
                node["additionalProperties"] = False
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(out)
    return out


def test_committed_json_schema_is_current():
    from irscope.render.schema import schema_text

    assert (REPO / "docs" / "report.schema.json").read_text() == schema_text(), \
        "regenerate: python -m irscope.render.schema docs/report.schema.json"


def test_json_report_matches_its_schema(corpus_report):
    schema = _report_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    data = json.loads(corpus_report.to_json())
    jsonschema.Draft202012Validator(schema).validate(data)
    jsonschema.Draft202012Validator(_strict(schema)).validate(data)
    broken = copy.deepcopy(data)
    broken["kernels"][0]["findings"] = [{"code": 101}]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(schema).validate(broken)


def test_a_script_run_report_matches_its_schema(corpus_report):
    """run, launches and passes are empty in a cache scan: fill them from a real MLIR dump."""
    from irscope.model.launches import Launch, ScriptRun, StandInAnswer
    from irscope.parsers.mlir_dump import parse_mlir_dump
    from irscope.ir.pass_timeline import timelines

    path = FIXTURES / "dumps" / "mlir-dump_triton-3.9_gfx942_gemm_aligned.txt.gz"
    (timeline,) = timelines(parse_mlir_dump(gzip.decompress(path.read_bytes()).decode(), str(path)))
    kr = dataclasses.replace(corpus_report.kernels[0], passes=timeline,
                             launches=(Launch((8, 4, 1), 4, 2, 32768, 304, "gemm.py", 70, count=3),
                                       Launch((7, 1, 1), 4, 2, 32768, 304, "gemm.py", 71,
                                              "grid x = 7 = os.cpu_count() on this machine")))
    report = dataclasses.replace(corpus_report, kernels=(kr,), run=ScriptRun(
        "gemm.py", ("--size", "512"), "gfx942", 0, 4, "AMD Instinct MI300X",
        (StandInAnswer("torch.cuda.get_device_properties", 2),), None, "/tmp/runs/1"))
    data = json.loads(report.to_json())
    assert data["kernels"][0]["passes"]["origins"] and data["run"]["argv"] == ["--size", "512"]
    jsonschema.Draft202012Validator(_strict(_report_schema())).validate(data)


def test_every_schema_field_is_documented():
    doc = (REPO / "docs" / "json-schema.md").read_text()
    schema = _report_schema()
    names = set(schema["properties"]) | {p for d in schema["$defs"].values() for p in d.get("properties", {})}
    missing = sorted(n for n in names if f"`{n}`" not in doc and f'`"{n}"`' not in doc)
    assert not missing, f"docs/json-schema.md does not name: {missing}"


# -- SARIF ----------------------------------------------------------------------------------
def _validate_sarif(log: dict) -> None:
    schema = json.loads((REPO / "tests" / "data" / "sarif-schema-2.1.0.json").read_text())
    validator = jsonschema.Draft4Validator(schema, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER)
    errors = sorted(validator.iter_errors(log), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message[:200]}" for e in errors[:10])


def test_sarif_validates_with_one_result_per_finding(corpus_report):
    from irscope.render.sarif import _ordered, sarif_log

    log = sarif_log(corpus_report, base=REPO)
    _validate_sarif(log)
    assert log["version"] == "2.1.0"
    (run,) = log["runs"]
    findings = [f for kr in corpus_report.kernels for f in _ordered(kr.findings)]  # the results' order
    assert len(findings) > 100 and len(run["results"]) == len(findings)
    levels = {"error": "error", "warning": "warning", "info": "note"}
    python = artifact = 0
    for result, f in zip(run["results"], findings, strict=True):
        assert (result["ruleId"], result["properties"]["kernel"]) == (f.code, f.kernel)
        assert result["level"] == levels[f.severity]
        assert run["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == f.code
        assert result["message"]["text"] == f"{f.message.rstrip('. ')}. Fix: {f.fix}"
        loc = result["locations"][0]["physicalLocation"]
        line = loc.get("region", {}).get("startLine")
        if f.python_line is not None:  # the kernel's source line, the artifact line beside it
            python += 1
            assert loc["artifactLocation"]["uri"] == Path(f.python_file).as_uri() and line == f.python_line
            related = result["relatedLocations"][0]["physicalLocation"]
            assert related["artifactLocation"] == {"uri": _under_repo(f.path), "uriBaseId": "SRCROOT"}
            assert related.get("region", {}).get("startLine") == f.line
        else:  # the artifact line, relative to the checkout; no region for a cubin
            artifact += 1
            assert loc["artifactLocation"] == {"uri": _under_repo(f.path), "uriBaseId": "SRCROOT"} and line == f.line
    assert python and artifact  # both kinds of location occur in the corpus


def _under_repo(path: str) -> str:
    return Path(path).resolve().relative_to(REPO).as_posix()


def test_sarif_rules_come_from_the_rules_docs(corpus_report):
    from irscope.render.sarif import sarif_log
    from irscope.engine.docs import page
    from irscope.engine.selection import load_rules

    rules = {r["id"]: r for r in sarif_log(corpus_report)["runs"][0]["tool"]["driver"]["rules"]}
    installed = load_rules()
    assert set(rules) == {r.code for r in installed}
    for rule in installed:
        d = rules[rule.code]
        assert d["name"] == rule.slug and d["shortDescription"]["text"] == rule.summary
        assert d["help"]["markdown"] == page(rule) and d["fullDescription"]["text"]
        assert d["defaultConfiguration"]["level"] == {"error": "error", "warning": "warning", "info": "note"}[
            rule.severity]
        assert (REPO / d["properties"]["docs"]).is_file()


def test_sarif_carries_hostile_text_as_data(hostile_report):
    from irscope.render.sarif import sarif_text

    text = sarif_text(hostile_report)
    assert "\x1b" not in text and "\x07" not in text  # escaped by JSON, not dropped
    log = json.loads(text)
    _validate_sarif(log)
    hits = [r for r in log["runs"][0]["results"] if r["properties"]["kernelName"] == HOSTILE]
    assert hits and hits[0]["message"]["text"] == f"{HOSTILE.rstrip('. ')}. Fix: {HOSTILE}"


def test_scan_sarif_flag(tmp_path):
    out = tmp_path / "r.sarif"
    proc = _run("scan", str(FIXTURES / "caches" / "triton-3.6"), "--sarif", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "kernels" in proc.stdout  # the table too
    _validate_sarif(json.loads(out.read_text()))
    proc = _run("scan", str(FIXTURES / "caches" / "triton-3.6"), "--sarif", "-")
    assert proc.returncode == 0, proc.stderr
    _validate_sarif(json.loads(proc.stdout))  # stdout holds the SARIF only


# -- DataFrames, CSV, Parquet ---------------------------------------------------------------
def _documented_columns(heading: str) -> dict[str, str]:
    text = (REPO / "docs" / "exports.md").read_text()
    section = text.split(f"### {heading}\n", 1)[1].split("\n#", 1)[0]
    return dict(re.findall(r"^\| `(\w+)` \| (\w+) \|", section, re.M))


def test_frame_columns_and_dtypes_match_the_docs(corpus_report):
    kernels, findings = corpus_report.to_frame(), corpus_report.findings_frame()
    for frame, heading in ((kernels, "Kernels frame"), (findings, "Findings frame")):
        documented = _documented_columns(heading)
        assert list(frame.columns) == list(documented), heading
        assert {c: str(t) for c, t in frame.dtypes.items()} == documented, heading
    assert len(kernels) == len(corpus_report.kernels)
    assert len(findings) == sum(len(k.findings) for k in corpus_report.kernels)


def test_kernels_frame_holds_the_tables_facts(corpus_report):
    from irscope.model.kernel import AmdResources, NvidiaResources

    frame = corpus_report.to_frame()
    for i, kr in enumerate(corpus_report.kernels):
        row = frame.iloc[i]
        assert row["key"] == kr.kernel.key and row["name"] == kr.kernel.name
        res = kr.resources
        if isinstance(res, AmdResources) and res.vgpr_total:
            assert row["registers"] == res.vgpr_total.value and row["sgpr"] == res.sgpr.value
        if isinstance(res, NvidiaResources) and res.registers:
            assert row["registers"] == res.registers.value and row["scratch_bytes"] == res.local_memory_bytes
        if kr.occupancy:
            o = kr.occupancy.occupancy
            assert (row["occupancy"], row["occupancy_max"], row["groups"]) == (o.active, o.max_active, o.groups)
        assert row["findings"] == len(kr.findings) == \
            row["findings_error"] + row["findings_warning"] + row["findings_info"]
        if kr.mix:
            assert row["instructions"] == kr.mix[0].total


def test_csv_and_parquet_round_trip(corpus_roots, tmp_path):
    import pandas as pd

    from irscope.pipeline.analyze import scan
    from irscope.model.frames import read_csv

    roots = [str(r) for r in corpus_roots]
    assert main(["scan", *roots, "--csv", str(tmp_path / "k.csv"), "--parquet", str(tmp_path / "k.parquet"),
                 "--json", str(tmp_path / "r.json")]) == 0
    report = Report.load(tmp_path / "r.json")
    assert report.kernels == scan(roots).kernels
    kernels, findings = report.to_frame(), report.findings_frame()
    pd.testing.assert_frame_equal(read_csv(tmp_path / "k.csv"), kernels)
    pd.testing.assert_frame_equal(read_csv(tmp_path / "k-findings.csv", "findings"), findings)
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "k.parquet"), kernels)
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "k-findings.parquet"), findings)


def test_csv_keeps_hostile_names(hostile_report, tmp_path):
    import pandas as pd

    from irscope.model.frames import kernels_frame, read_csv

    kernels = list(hostile_report.kernels)
    i = next(i for i, kr in enumerate(kernels) if kr.kernel.name != HOSTILE)
    kernels[i] = dataclasses.replace(kernels[i], kernel=dataclasses.replace(kernels[i].kernel, name="NA"))
    frame = kernels_frame(dataclasses.replace(hostile_report, kernels=tuple(kernels)))
    frame.to_csv(tmp_path / "h.csv", index=False)
    back = read_csv(tmp_path / "h.csv")
    pd.testing.assert_frame_equal(back, frame)
    assert HOSTILE in set(back["name"]) and "NA" in set(back["name"])


def test_parquet_without_pyarrow_says_what_to_install(monkeypatch, tmp_path, capsys):
    import irscope.render.exports

    monkeypatch.setattr(irscope.render.exports, "pyarrow_installed", lambda: False)
    assert main(["scan", str(FIXTURES / "caches" / "triton-3.6"), "--parquet", str(tmp_path / "k.parquet")]) == 2
    err = capsys.readouterr().err
    assert "pyarrow" in err and "irscope[parquet]" in err and not (tmp_path / "k.parquet").exists()


@pytest.mark.parametrize("flags", [["--json", "-", "--markdown", "-"], ["--csv", "-", "--sarif", "-"],
                                   ["--parquet", "-"]])
def test_one_output_on_stdout(flags, capsys):
    assert main(["scan", str(FIXTURES / "caches" / "triton-3.6"), *flags]) == 2
    assert capsys.readouterr().out == ""


def test_import_irscope_imports_no_pandas():
    code = ("import irscope, irscope.model.report, irscope.cli.main, sys\n"
            f"r = irscope.scan({str(FIXTURES / 'caches' / 'triton-3.6')!r})\n"
            "assert not {'pandas', 'pyarrow'} & set(sys.modules), {'pandas', 'pyarrow'} & set(sys.modules)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


# -- Markdown -------------------------------------------------------------------------------
def _html(markdown: str) -> str:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(markdown)


def _tables_are_whole(markdown: str) -> None:
    """Every row of every table has as many cells as its header."""
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").enable("table").parse(markdown)
    width = None
    cells = 0
    for t in tokens:
        if t.type == "thead_open":
            width = None
        elif t.type in ("th_open", "td_open"):
            cells += 1
        elif t.type == "tr_open":
            cells = 0
        elif t.type == "tr_close":
            width = cells if width is None else width
            assert cells == width


def test_markdown_interprets_nothing_from_an_artifact(hostile_report):
    from irscope.render.markdown import scan_markdown, visible

    md = scan_markdown(hostile_report, rows=1000, top=1000)
    assert "\x1b" not in md and "\x07" not in md and "\u202e" not in md
    html = _html(md)
    for tag in ("<script", "<b>", "<strong>x", "<em>", "<a ", "<img", "<s>", "<del>", "<h1>"):
        assert tag not in html, tag
    _tables_are_whole(md)
    # The name is shown whole, as a code span, with its control characters visible.
    import html as html_lib

    shown = html_lib.unescape(" ".join(re.findall(r"<code>(.*?)</code>", html, re.S)))
    assert visible(HOSTILE) in shown
    # The message is escaped prose that renders as the same characters.
    texts = html_lib.unescape(re.sub(r"<[^>]+>", "", html))
    assert visible(HOSTILE) in texts


def test_markdown_summary_of_a_scan(corpus_report):
    from irscope.render.markdown import scan_markdown

    md = scan_markdown(corpus_report)
    n = sum(len(k.findings) for k in corpus_report.kernels)
    assert md.startswith(f"## irscope: {len(corpus_report.kernels)} kernels, {n} findings")
    assert "### Findings by rule" in md and "### Kernels" in md and "### Top findings (20 of" in md
    assert "Worst occupancy (waves/SIMD): 1/8" in md and "Worst occupancy (warps/SM)" in md
    _tables_are_whole(md)


def test_markdown_diff_puts_regressions_first(capsys):
    from irscope.diff.compare import diff_reports
    from irscope.pipeline.analyze import scan
    from irscope.render.markdown import diff_markdown

    improved = diff_reports(scan(BA / "before"), scan(BA / "after"))
    regressed = diff_reports(scan(BA / "waves_per_eu" / "before"), scan(BA / "waves_per_eu" / "after"))
    both = dataclasses.replace(improved, pairs=improved.pairs + regressed.pairs)
    md = diff_markdown(both)
    assert md.index("### Regressions") < md.index("### Improvements") < md.index("### Pairs")
    rows = [line for line in md.split("### Pairs", 1)[1].splitlines() if line.startswith("| `")]
    assert "**regression**" in rows[0] and all("regression" not in r for r in rows[1:])
    assert "VGPR spills 0 -&gt; 53" in md
    _tables_are_whole(md)
    assert main(["diff", str(BA / "waves_per_eu" / "before"), str(BA / "waves_per_eu" / "after"),
                 "--markdown", "-"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("## irscope diff: 1 kernel pair, 1 regressed")


def test_scan_markdown_flag_to_file_keeps_the_table(tmp_path, capsys):
    assert main(["scan", str(FIXTURES / "caches" / "triton-3.6"), "--markdown", str(tmp_path / "s.md")]) == 0
    assert "kernels" in capsys.readouterr().out
    assert (tmp_path / "s.md").read_text().startswith("## irscope: ")


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "irscope", *args], capture_output=True, text=True)


def test_readme_and_docs_name_every_export_flag():
    readme = (REPO / "README.md").read_text()
    exports = (REPO / "docs" / "exports.md").read_text()
    for flag in ("--sarif FILE", "--csv FILE", "--parquet FILE", "--markdown FILE"):
        assert f"`{flag}" in readme and flag.split()[0] in exports, flag
    assert "`irscope diff BEFORE AFTER" in readme and "[--markdown FILE]" in readme
