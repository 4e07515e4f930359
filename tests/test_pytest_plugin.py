"""The pytest plugin (`pytest --irscope PATH`), run by pytester over the real fixture caches.

fixtures/before_after/before holds 3 kernels with 14 findings (tests/snapshots/findings.txt),
among them IRS102 narrow-global-store in each; fixtures/before_after/after's 3 kernels have
only IRS403 and IRS501 findings, on matmul_kernel.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import FIXTURES

from irscope.cli.main import main

pytest_plugins = ["pytester"]

BEFORE = FIXTURES / "before_after" / "before"
AFTER = FIXTURES / "before_after" / "after"
TILE_GFX942 = "irscope::JR36GY4NIZ3XWFDMNJXMCQYNVFRGK6WJPWXVMKAKKHPY5BEIM7FA/tile_copy_kernel@gfx942::IRS1xx"


@pytest.fixture(autouse=True, scope="module")
def _irscope_imported():
    """pytester's in-process runs restore sys.modules after each run, so a module first imported in one
    (a rule, a parser) would be imported anew by the next, with new classes that what stayed loaded
    does not recognise. Everything of irscope is imported first; the TUI is not part of a scan."""
    import importlib
    import pkgutil

    import irscope

    for module in pkgutil.walk_packages(irscope.__path__, "irscope."):
        if not module.name.startswith("irscope.tui") and not module.name.endswith("__main__"):
            importlib.import_module(module.name)
    irscope.load(BEFORE)  # and what the analysis imports lazily (rich, yaml, the rules' entry points)


@pytest.fixture(autouse=True)
def _only_this_plugin(monkeypatch):
    """The inner runs load irscope's plugin alone: other installed plugins are not under test here
    (and some, such as pytest-textual-snapshot, keep state that a second in-process run breaks)."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")


def pytest_run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("-p", "_irscope_pytest", "-p", "no:cacheprovider", *args)


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    # `--irscope=PATH`, not `--irscope PATH`: pytest picks its rootdir before it knows plugin options,
    # and would take a bare PATH for a test path (and the repository's pyproject.toml for its ini file).
    return pytest_run(pytester, "--irscope-only", *args)


def baseline_of(path, capsys, *flags: str) -> dict:
    assert main(["baseline", str(path), *flags]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_run_without_findings_passes(pytester):
    result = run(pytester, f"--irscope={AFTER}", "--irscope-select=IRS1,IRS2,IRS3", "-v")
    result.assert_outcomes(passed=9)  # 3 kernels x 3 families
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["irscope::*/tile_copy_kernel@sm_90::IRS3xx PASSED*",
                                 "irscope::*/matmul_kernel@gfx942::IRS1xx PASSED*",
                                 "irscope: 3 kernel(s) under *after: 0 finding(s)"])


def test_a_finding_fails_its_item_and_shows_as_scan_prints_it(pytester):
    result = run(pytester, f"--irscope={BEFORE}", "--irscope-select=IRS102")
    result.assert_outcomes(failed=3)  # IRS102 in each kernel
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([
        "*_ matmul_kernel@gfx942 IRS1xx _*",
        "matmul_kernel  gfx942  DNJLTEIORMFVQKYKKSO62XZMPICNRLGPDKQJ4YLLC24DTMFWMJ5A",
        "  warning IRS102 narrow-global-store  *matmul_kernel.amdgcn:2456 (*gemm.py:59)",
        "      64 global stores of 2 B per lane (global_store_short; none in a loop) from line 59*",
        "      fix: *",
        "1 new finding(s) of IRS1xx (global and LDS memory). `irscope explain IRS102` says more",
    ])
    assert "Traceback" not in result.stdout.str() and "runtest" not in result.stdout.str()
    result.stdout.fnmatch_lines([f"FAILED {TILE_GFX942}"])


def test_every_family_of_a_kernel_is_an_item(pytester):
    result = run(pytester, f"--irscope={BEFORE}", "--collect-only", "-q")
    ids = [line for line in result.outlines if line.startswith("irscope::")]
    # matmul_kernel and tile_copy_kernel on gfx942 get all five families that apply to any cache;
    # the sm_90 kernel has no IRS5xx (MFMA) items; no kernel has a launch (IRS6xx) without a script run.
    assert len(ids) == 14 and not any(i.endswith("IRS6xx") for i in ids), ids
    assert sum("@sm_90" in i for i in ids) == 4


def test_baseline_accepts_existing_findings_and_fails_only_new_ones(pytester, capsys):
    data = baseline_of(BEFORE, capsys)
    assert data["schema"] == "irscope.baseline" and sum(e["count"] for e in data["findings"]) == 14
    (pytester.path / "all.json").write_text(json.dumps(data))
    result = run(pytester, f"--irscope={BEFORE}", "--irscope-baseline=all.json")
    result.assert_outcomes(passed=14)
    result.stdout.fnmatch_lines(["irscope: 3 kernel(s) under *before: 14 finding(s), 14 accepted by the baseline "
                                 "all.json"])

    # Without the gfx942 tile copy's IRS102 entry, exactly that finding fails; its IRS103s stay accepted.
    dropped = [e for e in data["findings"] if (e["kernel"], e["arch"], e["code"]) ==
               ("tile_copy_kernel", "gfx942", "IRS102")]
    assert [e["where"] for e in dropped] == ["tile_copy.py:34"]
    (pytester.path / "less.json").write_text(json.dumps({**data, "findings": [e for e in data["findings"]
                                                                              if e not in dropped]}))
    result = run(pytester, f"--irscope={BEFORE}", "--irscope-baseline=less.json")
    result.assert_outcomes(passed=13, failed=1)
    result.stdout.fnmatch_lines(["1 new finding(s) of IRS1xx (global and LDS memory); 2 more accepted by the "
                                 "baseline less.json*", f"FAILED {TILE_GFX942}"])
    assert "IRS103 narrow-lds-access" not in result.stdout.str()


def test_baseline_entries_that_no_longer_occur_are_reported(pytester, capsys):
    data = baseline_of(BEFORE, capsys)
    gone = {"kernel": "matmul_kernel", "arch": "gfx942", "code": "IRS101", "where": "gemm.py:99", "count": 2}
    (pytester.path / "b.json").write_text(json.dumps({**data, "findings": data["findings"] + [gone]}))
    result = run(pytester, f"--irscope={BEFORE}", "--irscope-baseline=b.json")
    result.assert_outcomes(passed=14)
    result.stdout.fnmatch_lines(["irscope: 2 baseline entr* no longer occur (fixed, or the kernel was not compiled)*",
                                 "  matmul_kernel gfx942 IRS101 gemm.py:99 (x2)"])


def test_baseline_survives_a_new_hash_directory(pytester, capsys, tmp_path):
    # Recompiling renames the hash directory: the key has no hash and no artifact line.
    import shutil

    data = baseline_of(BEFORE, capsys)
    moved = tmp_path / "cache"
    shutil.copytree(BEFORE / "JR36GY4NIZ3XWFDMNJXMCQYNVFRGK6WJPWXVMKAKKHPY5BEIM7FA", moved / "NEWHASH")
    (pytester.path / "b.json").write_text(json.dumps(data))
    result = run(pytester, f"--irscope={moved}", "--irscope-baseline=b.json")
    result.assert_outcomes(passed=5)


def test_select_and_ignore_choose_rules_as_scan_does(pytester):
    result = run(pytester, f"--irscope={BEFORE}", "--irscope-select=IRS1",
                 "--irscope-ignore=narrow-global-load,IRS103")
    result.assert_outcomes(failed=3)
    out = result.stdout.str()
    assert "IRS102 narrow-global-store" in out and "IRS101" not in out and "IRS103" not in out

    pytester.makepyprojecttoml('[tool.irscope]\nignore = ["IRS1", "IRS2", "IRS4", "IRS5"]\n')
    result = run(pytester, f"--irscope={AFTER}")
    result.assert_outcomes(passed=3)  # only IRS3xx is left, and it finds nothing there


def test_paths_from_the_ini_file_and_keyword_selection(pytester):
    pytester.makeini(f"[pytest]\nirscope_paths = {AFTER}\n")
    pytester.makepyfile(test_mine="def test_mine(): pass\n")
    result = pytest_run(pytester, "-m", "irscope", "-k", "matmul_kernel and IRS5xx")
    result.assert_outcomes(failed=1)  # IRS501: 32x32 MFMA in the aligned GEMM
    result.stdout.fnmatch_lines(["  info IRS501 mfma-32x32  *"])

    result = pytest_run(pytester, "--irscope-select=IRS1")
    result.assert_outcomes(passed=4)  # test_mine and the 3 kernels' IRS1xx: no --irscope-only here


def test_a_saved_report_is_checked_like_a_cache(pytester, tmp_path):
    saved = tmp_path / "report.json"
    assert main(["scan", str(BEFORE), "--json", str(saved), "--select", "IRS1,IRS3"]) == 0
    result = run(pytester, f"--irscope={saved}", "--irscope-select=IRS3")
    result.assert_outcomes(failed=2, passed=1)  # IRS302 in both tile copies


def test_a_kernel_that_cannot_be_read_in_full_fails_its_problems_item(pytester, tmp_path):
    import shutil

    src = AFTER / "MEKZWVOF2C66DWJSLMMSWIC7Y3OPN4WCEYGEUDS65N6RCEIV4FNA"  # the gfx942 tile copy: no findings
    broken = shutil.copytree(src, tmp_path / "cache" / src.name)
    (broken / "tile_copy_kernel.json").write_bytes(b'{"hash": "\x00\xff\xfe\x01')  # as test_harvest does
    result = run(pytester, f"--irscope={tmp_path / 'cache'}", "-rf")
    result.assert_outcomes(failed=1, passed=5)  # IRS4xx is gone: without the json no occupancy
    result.stdout.fnmatch_lines(["tile_copy_kernel  MEKZWVOF2C66DWJSLMMSWIC7Y3OPN4WCEYGEUDS65N6RCEIV4FNA: could not be "
                                 "read in full", "  error: *tile_copy_kernel.json:1: *",
                                 "FAILED irscope::*/tile_copy_kernel@gfx942::problems"])


@pytest.mark.parametrize(("flags", "message"), [
    ([f"--irscope={FIXTURES / 'no-such-dir'}"], "irscope: */no-such-dir: no such file or directory"),
    ([f"--irscope={BEFORE}", "--irscope-select=IRS999"], "irscope: *'IRS999' selects no rule*"),
    ([f"--irscope={BEFORE}", "--irscope-baseline=missing.json"], "irscope: missing.json: cannot read the baseline*"),
])
def test_unusable_input_is_a_collection_error(pytester, flags, message):
    result = run(pytester, *flags)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*ERROR collecting irscope*", message])


def test_without_irscope_the_plugin_imports_nothing(tmp_path):
    (tmp_path / "test_x.py").write_text("def test_x(): pass\n")
    code = ("import sys, pytest\n"
            f"assert pytest.main(['-q', '-p', 'no:cacheprovider', {str(tmp_path)!r}]) == 0\n"
            "assert '_irscope_pytest' in sys.modules, 'the entry point is not installed: pip install -e .'\n"
            "loaded = [m for m in sys.modules if m == 'irscope' or m.startswith('irscope.')]\n"
            "assert not loaded, loaded\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_DISABLE_PLUGIN_AUTOLOAD"}  # the entry point's run
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# Hostile input (issue 22): a kernel name holding an SGR, an OSC 0 (window title) and an OSC 8 (link)
# escape, BEL, CR, NUL and U+202E (right-to-left override); pytest prints node IDs as they are.
HOSTILE_NAME = ("evil\x1b[31mRED\x1b]0;TITLE\x07\x1b]8;;https://example.invalid\x1b\\LINK\x1b]8;;\x1b\\"
                "\r\x00\u202eRTL")
RAW = ("\x1b", "\x07", "\r", "\x00", "\u202e")


def errors(result: pytest.RunResult) -> int:
    outcomes = result.parseoutcomes()
    return outcomes.get("errors", 0) + outcomes.get("error", 0)


def hostile_cache(manifest, where, name: str):
    """A real fixture kernel (3.9 gemm_aligned for gfx942: it has findings) with only the name in its
    metadata json made hostile."""
    import shutil

    from conftest import kernel_dirs

    src = kernel_dirs(manifest, cache="caches/triton-3.9", fixture="gemm_aligned", target_arch="gfx942")[0]
    hashdir = shutil.copytree(src, where / "cache" / src.name)
    meta = next(p for p in hashdir.glob("*.json") if not p.name.startswith("__grp__"))
    data = json.loads(meta.read_text())
    data["name"] = name
    meta.write_text(json.dumps(data))  # ensure_ascii: a lone surrogate is written as the escape `\ud800`
    return where / "cache"


def test_hostile_kernel_name_is_escaped_in_test_ids_and_headers(pytester, manifest, tmp_path):
    from irscope.model.safe_text import printable

    cache = hostile_cache(manifest, tmp_path, HOSTILE_NAME)
    gone = {"kernel": HOSTILE_NAME, "arch": "gfx942", "code": "IRS101", "where": "x.py:1", "count": 1}
    (pytester.path / "b.json").write_text(json.dumps({"schema": "irscope.baseline", "schema_version": 1,
                                                     "findings": [gone]}))
    result = run(pytester, f"--irscope={cache}", "--irscope-baseline=b.json", "-v", "-rA")
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED and not errors(result), out
    acting = {ch for ch in RAW if ch in out}
    assert not acting, f"raw {sorted(map(repr, acting))} reach the terminal"
    shown = printable(HOSTILE_NAME)  # as the console shows it; compared as text: it holds `[`, which fnmatch reads
    lines = result.outlines
    assert any(t.startswith("FAILED irscope::") and t.endswith(f"/{shown}@gfx942::IRS2xx") for t in lines), out
    assert any(t.startswith("_") and f" {shown}@gfx942 IRS2xx " in t for t in lines), out  # the failure's header
    assert f"  {shown} gfx942 IRS101 x.py:1" in lines, out  # the baseline's unused entry


def test_hostile_kernel_name_with_a_lone_surrogate_is_no_pytest_error(pytester, manifest, tmp_path):
    cache = hostile_cache(manifest, tmp_path, "evil\ud800name")
    result = run(pytester, f"--irscope={cache}", "-v", "-rA")
    out = result.stdout.str()
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), out
    assert not errors(result) and "INTERNALERROR" not in out, out
    result.stdout.re_match_lines([r"irscope::.*/evil\\ud800name@gfx942::IRS1xx (PASSED|FAILED)"])


@pytest.mark.parametrize(("text", "message"), [
    ("[" * 100_000, "irscope: *b.json: not a JSON baseline: nested too deeply to read*"),
    ('{"schema": "irscope.baseline", "schema_version": 1, "findings": [\n  {"kernel": "k"',
     "irscope: *b.json: not a JSON baseline: Expecting ',' delimiter: line 2 column 17*"),
], ids=["malformed-deep-lists", "malformed-truncated"])
def test_a_malformed_baseline_is_a_collection_error_naming_the_file(pytester, text, message):
    (pytester.path / "b.json").write_text(text)
    result = run(pytester, f"--irscope={BEFORE}", "--irscope-baseline=b.json")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*ERROR collecting irscope*", message])
    assert "RecursionError" not in result.stdout.str() and "INTERNALERROR" not in result.stdout.str()
