"""`scan --source DIR` and `[tool.irscope] source-roots` (irscope/ir/source_roots.py): the Python paths an
artifact carries are the build machine's; SARIF, the console and Markdown give them relative to the
repository when a root maps them, and as they are when none does.

The "build machine" is a copy of examples/ in one temporary directory, compiled there for gfx942 by a
real script run (Triton in a child process); the "checkout" is another copy somewhere else.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
from conftest import REPO
from test_exports import _validate_sarif

pytest.importorskip("triton")
pytest.importorskip("torch")

EXAMPLE = "examples/matmul.py"


def _irscope(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "irscope", *args], capture_output=True, text=True, cwd=cwd)


def _copy_example(root: Path) -> Path:
    (root / "examples").mkdir(parents=True)
    shutil.copy(REPO / EXAMPLE, root / EXAMPLE)
    return root


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(build dir, checkout, the script run's SARIF with --source checkout, the run's cache, the work dir)."""
    tmp = tmp_path_factory.mktemp("roots")
    build, checkout = _copy_example(tmp / "build" / "machine"), _copy_example(tmp / "checkout")
    work = tmp / "work"
    work.mkdir()
    proc = _irscope("scan", str(build / EXAMPLE), "--target", "gfx942", "--out", str(tmp / "run"),
                    "--sarif", "out.sarif", "--source", str(checkout), cwd=work)
    assert proc.returncode in (0, 1), proc.stderr  # 1: findings
    return build, checkout, json.loads((work / "out.sarif").read_text()), tmp / "run" / "cache", work


def _python_locations(log: dict) -> list[dict]:
    """The artifactLocation of every result location that is a Python file."""
    out = []
    for result in log["runs"][0]["results"]:
        for loc in result["locations"] + result.get("relatedLocations", []):
            artifact = loc["physicalLocation"]["artifactLocation"]
            if artifact["uri"].endswith(".py"):
                out.append(artifact)
    return out


def _srcroot(log: dict) -> Path:
    return Path(unquote(urlparse(log["runs"][0]["originalUriBaseIds"]["SRCROOT"]["uri"]).path))


def test_script_run_sarif_has_repo_relative_uris_under_source_dir(built):
    build, checkout, log, _, _ = built
    _validate_sarif(log)
    assert _srcroot(log) == checkout
    python = _python_locations(log)
    assert python, "the example's findings carry its Python lines"
    for artifact in python:
        assert artifact == {"uri": EXAMPLE, "uriBaseId": "SRCROOT"}
        assert not artifact["uri"].startswith("/") and (checkout / artifact["uri"]).is_file()
    assert str(build) not in json.dumps(python)


def test_artifact_paths_under_no_root_stay_absolute(built):
    _, _, log, _, _ = built
    related = [r["relatedLocations"][0]["physicalLocation"]["artifactLocation"]
               for r in log["runs"][0]["results"] if r.get("relatedLocations")]
    related = [a for a in related if not a["uri"].endswith(".py")]  # the run's cache, under no root
    assert related and all(a["uri"].startswith("file:///") and "uriBaseId" not in a for a in related)


def test_pyproject_source_roots_give_the_same_sarif_locations(built):
    build, checkout, log, cache, _ = built
    repo = checkout.parent / "repo"
    _copy_example(repo)
    (repo / "pyproject.toml").write_text(f'[tool.irscope]\nsource-roots = {{"{build.as_posix()}" = "."}}\n')
    proc = _irscope("scan", str(cache), "--sarif", "-", cwd=repo)  # the run's cache, scanned again
    assert proc.returncode in (0, 1), proc.stderr
    mapped = json.loads(proc.stdout)
    _validate_sarif(mapped)
    assert _srcroot(mapped) == repo
    # the same locations as --source gave the script run (which also has its launches' grid findings)
    assert {tuple(a.items()) for a in _python_locations(mapped)} == {tuple(a.items()) for a in _python_locations(log)}
    assert all((repo / a["uri"]).is_file() for a in _python_locations(mapped))


def test_python_path_outside_every_root_stays_absolute(built, tmp_path):
    build, _, _, cache, work = built
    elsewhere = tmp_path / "elsewhere"  # holds no matmul.py: nothing may be guessed
    (elsewhere / "examples").mkdir(parents=True)
    proc = _irscope("scan", str(cache), "--sarif", "-", "--source", str(elsewhere), cwd=work)
    assert proc.returncode in (0, 1), proc.stderr
    log = json.loads(proc.stdout)
    _validate_sarif(log)
    python = _python_locations(log)
    assert python and all(a == {"uri": (build / EXAMPLE).as_uri()} for a in python)


def test_console_and_markdown_show_the_repo_relative_path(built):
    build, checkout, _, cache, work = built
    proc = _irscope("scan", str(cache), "--wide", "--all", "--source", str(checkout), cwd=work)
    assert proc.returncode in (0, 1), proc.stderr
    assert f"({EXAMPLE}:" in proc.stdout and str(build / EXAMPLE) not in proc.stdout
    family = _irscope("scan", str(cache), "--wide", "--source", str(checkout), cwd=work)  # its 2 configs: a family
    assert "Kernel families" in family.stdout
    assert f"  {EXAMPLE}:" in family.stdout and str(build / EXAMPLE) not in family.stdout
    proc = _irscope("scan", str(cache), "--markdown", "-", "--source", str(checkout), cwd=work)
    assert f"`{EXAMPLE}:" in proc.stdout
    unmapped = _irscope("scan", str(cache), "--wide", "--all", cwd=work)  # no root: the path as the artifact gave it
    assert f"({build / EXAMPLE}:" in unmapped.stdout


def test_a_source_that_is_not_a_directory_is_refused_before_the_scan(built, tmp_path):
    _, _, _, cache, work = built
    proc = _irscope("scan", str(cache), "--source", str(tmp_path / "missing"), cwd=work)
    assert proc.returncode == 2 and "--source" in proc.stderr and "not a directory" in proc.stderr


def test_a_bad_source_roots_table_names_the_file(built, tmp_path):
    _, _, _, cache, _ = built
    (tmp_path / "pyproject.toml").write_text('[tool.irscope]\nsource-roots = ["/build"]\n')
    proc = _irscope("scan", str(cache), cwd=tmp_path)
    assert proc.returncode == 2 and str(tmp_path / "pyproject.toml") in proc.stderr and "source-roots" in proc.stderr


def test_longest_trailing_path_is_found_first(tmp_path):
    from irscope.ir.source_roots import find_under

    (tmp_path / "a" / "k").mkdir(parents=True)
    (tmp_path / "a" / "k" / "x.py").write_text("")
    (tmp_path / "x.py").write_text("")
    assert find_under("/elsewhere/a/k/x.py", (str(tmp_path),)) == str(tmp_path / "a" / "k" / "x.py")
    assert find_under("/elsewhere/b/x.py", (str(tmp_path),)) == str(tmp_path / "x.py")  # the TUI's base name
    assert find_under("/elsewhere/b/y.py", (str(tmp_path),)) is None
