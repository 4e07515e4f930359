"""The rules engine: registration, definition checks, selection, config, robustness, docs."""

from __future__ import annotations

import sys
import textwrap

import pytest
from conftest import FIXTURES, REPO

from irscope.cli.main import main
from irscope.pipeline.analyze import scan
from irscope.engine.rule import Rule, RuleDefinitionError
from irscope.engine.docs import expected_files
from irscope.engine.selection import RuleConfigError, RuleSelection, find_rule, load_config, load_rules

DOC = """Title.

    ## What it does
    x
    ## Why is this bad?
    x
    ## Example
    x
    ## How to fix it in the kernel
    x
    """
BEFORE = FIXTURES / "before_after" / "before"


def test_builtin_rules_are_registered_through_the_entry_point_group():
    from importlib.metadata import entry_points

    registered = {ep.name: ep.value for ep in entry_points(group="irscope.rules")}
    codes = [r.code for r in load_rules()]
    assert codes == sorted(codes) and len(set(codes)) == len(codes)
    assert set(registered) == set(codes)
    from irscope.rules import BUILTIN

    assert {r.code for r in BUILTIN} == set(codes)


@pytest.mark.parametrize("attrs,message", [
    ({"code": "X1", "slug": "a", "summary": "s", "stages": ("ttgir",)}, "is not like IRS101"),
    ({"code": "IRS999", "slug": "Not_Kebab", "summary": "s", "stages": ("ttgir",)}, "kebab-case"),
    ({"code": "IRS999", "slug": "a", "summary": "s", "stages": ("nope",)}, "unknown"),
    ({"code": "IRS999", "slug": "a", "summary": "s", "stages": ("ttgir",), "severity": "fatal"}, "severity"),
    ({"code": "IRS999", "slug": "a", "stages": ("ttgir",)}, "no `summary`"),
])
def test_a_malformed_rule_fails_when_defined(attrs, message):
    with pytest.raises(RuleDefinitionError, match=message):
        type("Bad", (Rule,), {"__doc__": DOC, **attrs})


def test_a_rule_without_its_doc_sections_fails_when_defined():
    with pytest.raises(RuleDefinitionError, match="How to fix it in the kernel"):
        type("Undocumented", (Rule,), {"__doc__": "Title.\n\n## What it does\nx\n## Why is this bad?\nx\n"
                                                  "## Example\nx\n", "code": "IRS998", "slug": "b",
                                       "summary": "s", "stages": ("ttgir",)})


def make_rule(code="IRS990", raises=False):
    def check(self, ctx):
        if raises:
            raise RuntimeError("boom")
        return [self.finding(ctx, message="seen", fix="none", stage="json", path=ctx.kernel.directory)]

    return type("Probe", (Rule,), {"__doc__": DOC, "code": code, "slug": "probe", "summary": "s",
                                   "stages": ("json",), "check": check})


def test_a_rule_that_raises_is_a_warning_and_the_others_still_run():
    good, bad = make_rule("IRS990"), make_rule("IRS991", raises=True)
    report = scan(BEFORE, rules=RuleSelection(universe=(good, bad)))
    for r in report.kernels:
        assert [f.code for f in r.findings] == ["IRS990"]
        (problem,) = [p for p in r.problems if "IRS991" in p.message]
        assert problem.severity == "warning" and "RuntimeError: boom" in problem.message


@pytest.mark.parametrize("select,ignore,expected", [
    (("ALL",), (), {"IRS101", "IRS102"}),
    (("IRS1",), ("IRS102",), {"IRS101"}),
    (("narrow-global-store",), (), {"IRS102"}),
    (("ALL",), ("IRS10",), set()),
    (("IRS101",), ("IRS1",), {"IRS101"}),  # the more specific selector wins, as in ruff
])
def test_selection(select, ignore, expected):
    universe = tuple(r for r in load_rules() if r.code in ("IRS101", "IRS102"))
    chosen = RuleSelection(select, ignore, universe=universe).rules()
    assert {r.code for r in chosen} == expected


def test_a_selector_that_names_no_rule_is_an_error():
    with pytest.raises(RuleConfigError, match="'IRS9' selects no rule"):
        RuleSelection(("IRS9",))


def write_pyproject(tmp_path, body: str):
    (tmp_path / "pyproject.toml").write_text(textwrap.dedent(body))
    (tmp_path / "sub").mkdir()
    return tmp_path / "sub"


def test_config_from_the_nearest_pyproject_and_per_kernel_ignores(tmp_path):
    start = write_pyproject(tmp_path, """
        [tool.irscope]
        select = ["IRS101", "narrow-global-store"]
        ignore = ["IRS101"]
        per-kernel-ignores = { "tile_*" = ["narrow-global-store"] }
        """)
    selection = load_config(start)
    assert {r.code for r in selection.rules()} == {"IRS102"}
    report = scan(BEFORE, rules=selection)
    by_name = {}
    for r in report.kernels:
        by_name.setdefault(r.kernel.name, []).extend(f.code for f in r.findings)
    assert by_name["tile_copy_kernel"] == [] and by_name["matmul_kernel"] == ["IRS102"]


@pytest.mark.parametrize("body,message", [
    ("[tool.irscope]\nselct = ['ALL']\n", "unknown key"),
    ("[tool.irscope]\nselect = 'ALL'\n", "must be a list of strings"),
    ("[tool.irscope]\nselect = ['NOPE1']\n", "selects no rule"),
    ("[tool.irscope\n", "cannot read"),
])
def test_bad_config_names_the_file(tmp_path, body, message):
    start = write_pyproject(tmp_path, body)
    with pytest.raises(RuleConfigError, match=message) as info:
        load_config(start)
    assert str(tmp_path / "pyproject.toml") in str(info.value)


def test_scan_flags_and_bad_config_exit_2(tmp_path, monkeypatch, capsys):
    assert main(["scan", str(BEFORE), "--select", "IRS102", "--ignore", "IRS101"]) == 0
    out = capsys.readouterr().out
    assert "IRS102" in out and "IRS101 " not in out
    monkeypatch.chdir(write_pyproject(tmp_path, "[tool.irscope]\nignore = ['BOGUS']\n"))
    assert main(["scan", str(BEFORE)]) == 2
    assert "selects no rule" in capsys.readouterr().err


def test_third_party_rule_plugs_in_through_the_same_entry_point(tmp_path, monkeypatch):
    (tmp_path / "thirdparty_rule.py").write_text(textwrap.dedent('''
        from irscope.engine.rule import Rule

        class Hello(Rule):
            """Says hello to every kernel.

            ## What it does
            x
            ## Why is this bad?
            x
            ## Example
            x
            ## How to fix it in the kernel
            x
            """
            code = "ZZZ001"
            slug = "hello"
            summary = "hello"
            stages = ("json",)

            def check(self, ctx):
                return [self.finding(ctx, message="hello", fix="-", stage="json", path=ctx.kernel.directory)]
        '''))
    dist = tmp_path / "thirdparty_rule-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: thirdparty-rule\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[irscope.rules]\nZZZ001 = thirdparty_rule:Hello\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    load_rules.cache_clear()
    try:
        assert find_rule("ZZZ001") is not None and find_rule("hello").code == "ZZZ001"
        report = scan(BEFORE, rules=RuleSelection(("ZZZ001",)))
        assert all([f.message for f in r.findings] == ["hello"] for r in report.kernels)
    finally:
        sys.modules.pop("thirdparty_rule", None)
        monkeypatch.undo()
        load_rules.cache_clear()
    assert find_rule("ZZZ001") is None


def test_docs_rules_are_generated_from_the_rules():
    directory = REPO / "docs" / "rules"
    expected = expected_files()
    on_disk = {p.name: p.read_text() for p in directory.glob("*.md")}
    stale = sorted(name for name in set(expected) | set(on_disk) if expected.get(name) != on_disk.get(name))
    assert not stale, f"regenerate with `python -m irscope.engine.docs docs/rules`: {stale}"


def test_rules_and_explain_commands(capsys):
    assert main(["rules"]) == 0
    out = capsys.readouterr().out
    for rule in load_rules():
        assert rule.code in out and rule.slug in out
    assert main(["explain", "irs101"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# IRS101 narrow-global-load") and "## How to fix it in the kernel" in out
    assert main(["explain", "narrow-global-store"]) == 0
    assert "# IRS102" in capsys.readouterr().out
    assert main(["explain", "IRS000"]) == 2
    assert "no rule 'IRS000'" in capsys.readouterr().err
