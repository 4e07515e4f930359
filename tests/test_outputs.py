"""Where irscope writes and which paths it takes (issue 22, items 5, 6, 18, 19): the result index is
never written under a scanned path, an output FILE is never written inside one, an output that cannot
be written is refused before the scan (and a failed write is exit 2 naming it), an empty path is
refused rather than taken for the working directory, and `tui` refuses to start without a terminal.
Every case runs the real CLI on copies of real fixture caches."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES, copy_tree, irscope_with_locked_dir, tree_digest

import irscope.pipeline.analyze
from irscope.cli.main import main
from irscope.pipeline.harvester import HarvestError, harvest

pytest_plugins = ["pytester"]

CACHE = FIXTURES / "caches" / "triton-3.9"
BA = FIXTURES / "before_after"


@pytest.fixture
def cache(tmp_path) -> Path:
    return copy_tree(CACHE, tmp_path / "cache")


@pytest.fixture
def no_scan(monkeypatch):
    """Fail the test if anything is harvested: what these tests refuse is refused before the scan."""
    def scanned(*args, **kwargs):
        raise AssertionError("scanned, though the command should have been refused first")

    monkeypatch.setattr(irscope.pipeline.analyze, "harvest", scanned)


def cli(capsys, *args) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "internal error" not in lines[0] and "Traceback" not in err
    return lines[0]


def artifact(cache: Path) -> Path:
    return next(cache.glob("*/*.json"))


# -- item 5: the result index never lands under a scanned path -------------------------------------------
@pytest.mark.parametrize("variable", ["HOME", "XDG_CACHE_HOME", "IRSCOPE_CACHE_DIR"])
def test_an_index_directory_under_the_scanned_path_is_not_used(tmp_path, monkeypatch, capsys, variable):
    """`irscope scan ~`: the index would be written into ~/.cache/irscope/index, inside what is scanned."""
    home = tmp_path / "home"
    copy_tree(CACHE, home / ".triton" / "cache")
    for name in ("IRSCOPE_CACHE_DIR", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(variable, str(home if variable == "HOME" else home / "own-cache"))
    before = tree_digest(home)
    code, out, err = cli(capsys, "scan", home, "-j", "1")
    assert code == 0 and "kernels" in out
    line = one_line(err)
    assert "uses no index" in line and str(home) in line
    assert tree_digest(home) == before  # nothing was written under the scanned path


def test_an_index_directory_holding_the_scanned_path_is_not_used(tmp_path, monkeypatch, capsys):
    own = tmp_path / "irscope-cache"
    copy_tree(CACHE, own / "index" / "cache")
    monkeypatch.setenv("IRSCOPE_CACHE_DIR", str(own))
    before = tree_digest(own)
    code, _, err = cli(capsys, "scan", own / "index" / "cache", "-j", "1")
    assert code == 0 and "uses no index" in one_line(err)
    assert tree_digest(own) == before


def test_an_index_directory_elsewhere_is_used_and_nothing_is_said(cache, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("IRSCOPE_CACHE_DIR", str(tmp_path / "elsewhere"))
    code, _, err = cli(capsys, "scan", cache, "-j", "1")
    assert code == 0 and err == ""
    assert (tmp_path / "elsewhere" / "index" / "results.sqlite3").is_file()


def test_the_api_keeps_the_index_out_of_the_scanned_path_too(tmp_path, monkeypatch, capsys):
    cache = copy_tree(CACHE, tmp_path / "cache")
    monkeypatch.setenv("IRSCOPE_CACHE_DIR", str(cache / ".irscope"))
    before = tree_digest(cache)
    assert irscope.load(cache, config=False, jobs=1).kernels
    assert "uses no index" in capsys.readouterr().err
    assert tree_digest(cache) == before


# -- item 6: no output inside a scanned path ---------------------------------------------------------------
@pytest.mark.parametrize("flag", ["--json", "--sarif", "--markdown", "--csv", "--parquet"])
def test_an_output_inside_the_scanned_cache_is_refused_before_scanning(cache, capsys, no_scan, flag):
    """`irscope scan C --json C/<hash>/add_kernel.json` would overwrite the kernel's metadata."""
    target = artifact(cache)
    before = tree_digest(cache)
    code, out, err = cli(capsys, "scan", cache, flag, target)
    assert code == 2 and out == ""
    line = one_line(err)
    assert str(target) in line and "inside the scanned path" in line
    assert tree_digest(cache) == before


def test_the_findings_file_beside_a_csv_is_checked_too(cache, capsys, no_scan):
    """`--csv X/k.csv` also writes X/k-findings.csv: here that one would land in the cache."""
    (cache.parent / "link").symlink_to(cache)
    code, _, err = cli(capsys, "scan", cache, "--csv", cache.parent / "link" / "k.csv")
    assert code == 2 and "inside the scanned path" in one_line(err)
    assert not list(cache.glob("*.csv"))


def test_a_link_into_the_scanned_cache_is_refused(cache, tmp_path, capsys, no_scan):
    link = tmp_path / "out.json"
    link.symlink_to(artifact(cache))
    code, _, err = cli(capsys, "scan", cache, "--json", link)
    assert code == 2 and str(link) in one_line(err)


def test_the_default_cache_is_a_scanned_path(cache, monkeypatch, capsys, no_scan):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(cache))
    code, _, err = cli(capsys, "scan", "--json", cache / "report.json")
    assert code == 2 and "inside the scanned path" in one_line(err)
    assert not (cache / "report.json").exists()


def test_diff_writes_nothing_into_either_side(tmp_path, capsys):
    before, after = (copy_tree(BA / side, tmp_path / side) for side in ("before", "after"))
    saved = tmp_path / "r.json"
    assert main(["scan", str(before), "--json", str(saved), "--no-cache"]) == 0
    capsys.readouterr()
    digest = tree_digest(tmp_path)
    for args in ([before, after, "--json", after / "d.json"], [before, after, "--markdown", before / "d.md"],
                 [saved, after, "--json", saved]):  # a saved report read as a side is not overwritten either
        code, _, err = cli(capsys, "diff", *args)
        assert code == 2 and "inside the scanned path" in one_line(err), args
    assert tree_digest(tmp_path) == digest


# -- item 18: an output that cannot be written -------------------------------------------------------------
@pytest.mark.parametrize("where", ["missing directory", "a directory", "a file as directory"])
def test_an_unwritable_output_is_refused_before_scanning(cache, tmp_path, capsys, no_scan, where):
    (tmp_path / "notes.txt").write_text("a file\n")
    target = {"missing directory": tmp_path / "absent" / "r.json", "a directory": tmp_path,
              "a file as directory": tmp_path / "notes.txt" / "r.json"}[where]
    for flag in ("--json", "--sarif", "--csv", "--markdown"):
        code, _, err = cli(capsys, "scan", cache, flag, target)
        assert code == 2
        assert one_line(err).startswith(f"irscope: {target}: cannot write: "), err


def test_diff_checks_its_outputs_before_reading_either_side(capsys, no_scan, tmp_path):
    code, _, err = cli(capsys, "diff", BA / "before", BA / "after", "--json", tmp_path / "absent" / "d.json")
    assert code == 2 and "cannot write: no directory" in one_line(err)


def test_an_output_in_a_read_only_directory_is_refused_before_scanning(cache, tmp_path):
    locked = tmp_path / "locked"
    proc = irscope_with_locked_dir(locked, 0o555, "scan", cache, "--no-cache", "--json", locked / "r.json")
    assert proc.returncode == 2 and proc.stdout == ""
    assert one_line(proc.stderr) == f"irscope: {locked / 'r.json'}: cannot write: permission denied in {locked}"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
@pytest.mark.parametrize("flag", ["--json", "--sarif", "--markdown"])
def test_a_failed_write_is_exit_2_naming_the_file(cache, capsys, flag):
    """/dev/full passes every check and fails on write (ENOSPC): as a full disk does, after the scan."""
    code, _, err = cli(capsys, "scan", cache, "--no-cache", "-j", "1", flag, "/dev/full")
    assert code == 2
    assert one_line(err) == "irscope: /dev/full: cannot write: No space left on device"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
def test_a_failed_diff_write_is_exit_2_naming_the_file(capsys):
    code, _, err = cli(capsys, "diff", BA / "before", BA / "after", "--no-cache", "--json", "/dev/full")
    assert code == 2 and one_line(err) == "irscope: /dev/full: cannot write: No space left on device"


# -- item 19: an empty path, and the TUI without a terminal ------------------------------------------------
@pytest.mark.parametrize("args", [["scan", ""], ["scan", "", "--json", "-"], ["baseline", ""], ["occupancy", ""],
                                  ["diff", "", "{cache}"], ["diff", "{cache}", ""], ["tui", ""],
                                  ["tui", "--diff", "", "{cache}"]])
def test_an_empty_path_is_refused_not_taken_for_the_working_directory(cache, monkeypatch, capsys, no_scan, args):
    """`irscope scan "$TRITON_CACHE_DIR"` with the variable unset: "" is "." to os.walk."""
    monkeypatch.chdir(cache)  # a cache here, which an empty path would scan
    code, out, err = cli(capsys, *[a.format(cache=cache) for a in args])
    assert code == 2 and out == ""
    assert "an empty path" in one_line(err)


def test_harvest_refuses_an_empty_path(cache, monkeypatch):
    monkeypatch.chdir(cache)
    for paths in ("", [""], [cache, ""]):
        with pytest.raises(HarvestError, match="an empty path"):
            harvest(paths)


def test_the_pytest_plugin_refuses_an_empty_path(pytester, monkeypatch):
    """The README's recipe `--irscope="$TRITON_CACHE_DIR"` with the variable unset."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    copy_tree(CACHE, pytester.path / "cache")  # under the working directory: an empty path would find it
    result = pytester.runpytest("-p", "_irscope_pytest", "-p", "no:cacheprovider", "--irscope-only", "--irscope=")
    assert result.ret != pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*irscope: an empty path*"])


@pytest.mark.parametrize("args", [["tui", "{cache}"], ["scan", "{cache}", "--tui"], ["tui", "--diff", "{cache}",
                                                                                   "{cache}"]])
def test_the_tui_without_a_terminal_exits_2_at_once(cache, args):
    """With stdin and stdout not a terminal, textual's app spun at full CPU and never returned."""
    proc = subprocess.run([sys.executable, "-m", "irscope", *[a.format(cache=cache) for a in args]],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stdout == ""
    assert "needs a terminal" in one_line(proc.stderr)
