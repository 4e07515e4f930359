"""A re-scan of an unchanged cache prints the kept view (irscope/pipeline/console_views.py), and
anything that could change the output runs the scan again."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time

import pytest
from conftest import FIXTURES, copy_tree, tree_digest

import irscope.pipeline.analyze as analyze
import irscope.pipeline.console_views as console_views
from irscope.cli.main import main
from irscope.pipeline.console_views import Watched, encode_view, invocation_key


@pytest.fixture
def cache(tmp_path):
    return copy_tree(FIXTURES / "caches" / "triton-3.9", tmp_path / "cache")


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("IRSCOPE_CACHE_DIR", str(tmp_path / "home"))
    return tmp_path / "home"


@pytest.fixture
def settled(monkeypatch):
    """Files as old as the racy window: the copies made for a test are seconds old at most."""
    monkeypatch.setattr(console_views, "RACY_SECONDS", 0)


@pytest.fixture
def scans(monkeypatch):
    """How many scans really ran (a replayed view runs none)."""
    ran = []
    real = analyze.scan
    monkeypatch.setattr(analyze, "scan", lambda *a, **kw: ran.append(1) or real(*a, **kw))
    return ran


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def views(home):
    with sqlite3.connect(home / "index" / "results.sqlite3") as db:
        return db.execute("SELECT count(*) FROM views").fetchone()[0]


def test_the_same_scan_of_an_unchanged_cache_prints_the_kept_view(cache, home, settled, scans, capsys):
    tree = tree_digest(cache)
    first = run(capsys, "scan", str(cache), "--fail-on", "info")
    assert first[0] == 1 and first[1] and "finding(s) at info" in first[2]  # a gate that trips, said on stderr
    assert run(capsys, "scan", str(cache), "--fail-on", "info") == first  # stdout, stderr, exit status
    assert len(scans) == 1 and views(home) == 1
    assert tree_digest(cache) == tree  # nothing written where irscope reads


def test_a_changed_added_or_removed_file_runs_the_scan_again(cache, home, settled, scans, capsys):
    first = run(capsys, "scan", str(cache))
    amdgcn = next(cache.rglob("*.amdgcn"))
    with open(amdgcn, "a") as f:
        f.write("; a comment the compiler did not write\n")
    run(capsys, "scan", str(cache))
    assert len(scans) == 2
    (amdgcn.parent / "notes.txt").write_text("a file irscope does not read, but the listing changed")
    run(capsys, "scan", str(cache))
    (amdgcn.parent / "notes.txt").unlink()
    again = run(capsys, "scan", str(cache))
    assert len(scans) == 4 and again == first
    assert run(capsys, "scan", str(cache)) == first and len(scans) == 4


def test_another_command_line_width_or_config_runs_the_scan_again(cache, home, settled, scans, capsys, monkeypatch,
                                                                    tmp_path):
    wide = run(capsys, "scan", str(cache))  # not a terminal: 200 columns
    run(capsys, "scan", str(cache), "--wide")
    monkeypatch.setenv("COLUMNS", "80")
    narrow = run(capsys, "scan", str(cache))
    assert len(scans) == 3 and narrow[1] != wide[1]
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[tool.irscope]\nignore = ["IRS4"]\n')
    ignoring = run(capsys, "scan", str(cache))
    assert len(scans) == 4 and "IRS40" not in ignoring[1]
    (tmp_path / "pyproject.toml").write_text('[tool.irscope]\nignore = ["IRS5"]\n')
    run(capsys, "scan", str(cache))
    assert len(scans) == 5


@pytest.mark.parametrize("flag", [["--json", "-"], ["--no-cache"], ["--csv", "-"]])
def test_a_scan_with_another_output_or_no_index_is_never_kept(cache, home, settled, scans, capsys, flag):
    for _ in range(2):
        run(capsys, "scan", str(cache), *flag)
    assert len(scans) == 2
    assert not (home / "index" / "results.sqlite3").exists() or views(home) == 0


def test_files_younger_than_the_racy_window_are_not_kept(cache, home, scans, capsys):
    run(capsys, "scan", str(cache))  # copied a moment ago: a change could share these timestamps
    assert views(home) == 0
    run(capsys, "scan", str(cache))
    assert len(scans) == 2


def test_a_file_changed_while_the_scan_ran_is_not_kept(cache, home, settled, scans, capsys, monkeypatch):
    real = analyze.scan
    victim = next(cache.rglob("*.ttgir"))

    def touching(*args, **kwargs):
        report = real(*args, **kwargs)
        os.utime(victim, ns=(time.time_ns(), time.time_ns()))
        return report

    monkeypatch.setattr(analyze, "scan", touching)
    run(capsys, "scan", str(cache))
    assert views(home) == 0


def test_a_forged_view_reaches_the_terminal_without_its_escapes(cache, home, settled, capsys):
    run(capsys, "scan", str(cache))
    argv = ["scan", str(cache)]
    hostile = "\x1b]0;pwned\x07\x1b[2J\x1b[31mred\x1b[0m\x9bX\rline\n"
    payload = encode_view(Watched({str(cache): console_views.identity(str(cache))}), hostile, "\x1b[1Aerr\n", 0)
    with sqlite3.connect(home / "index" / "results.sqlite3") as db:
        db.execute("DELETE FROM views")
        from irscope.pipeline.index_db import checksum

        db.execute("INSERT INTO views VALUES (?, 0, ?, ?)", (invocation_key(argv), checksum(payload), payload))
    code, out, err = run(capsys, *argv)
    # Each ESC that starts anything but colour is dropped: what follows it is inert text.
    assert code == 0 and out == "]0;pwned[2J\x1b[31mred\x1b[0mXline\n" and err == "[1Aerr\n"


@pytest.mark.parametrize("damage", ["checksum", "not zlib", "not a view", "another format"])
def test_a_damaged_view_is_a_miss_and_the_scan_runs(cache, home, settled, scans, capsys, damage):
    first = run(capsys, "scan", str(cache))
    good = {"not zlib": b"garbage", "not a view": __import__("zlib").compress(b'{"format": 1, "folders": 3}'),
            "another format": __import__("zlib").compress(b'{"format": 99}')}
    with sqlite3.connect(home / "index" / "results.sqlite3") as db:
        from irscope.pipeline.index_db import checksum

        if damage == "checksum":
            db.execute("UPDATE views SET checksum = ?", (b"0" * 16,))
        else:
            db.execute("UPDATE views SET payload = ?, checksum = ?", (good[damage], checksum(good[damage])))
    assert run(capsys, "scan", str(cache)) == first and len(scans) == 2


def test_an_index_inside_the_scanned_tree_is_neither_read_nor_written(cache, settled, capsys, monkeypatch):
    monkeypatch.setenv("IRSCOPE_CACHE_DIR", str(cache / "irscope-home"))
    tree = tree_digest(cache)
    for _ in range(2):
        code, out, err = run(capsys, "scan", str(cache))
        assert code == 0 and "uses no index" in err
    assert tree_digest(cache) == tree


def test_a_replayed_scan_imports_no_harvester_rule_or_model(cache, home, tmp_path):
    # Subprocesses, with the real racy window: the copy must first be two seconds old.
    time.sleep(console_views.RACY_SECONDS + 0.1)
    env = {**os.environ, "IRSCOPE_CACHE_DIR": str(home)}
    probe = ("import sys; from irscope.cli.main import main; code = main(sys.argv[1:]); "
             "print('MODULES', sorted(m for m in sys.modules if m.startswith('irscope'))); sys.exit(code)")
    outputs = [subprocess.run([sys.executable, "-c", probe, "scan", str(cache)], env=env, capture_output=True,
                              text=True, cwd=tmp_path) for _ in range(2)]
    assert [o.returncode for o in outputs] == [0, 0]
    first, second = (o.stdout.rsplit("MODULES", 1) for o in outputs)
    assert first[0] == second[0] and "irscope.pipeline.harvester" in first[1]
    assert not any(name in second[1] for name in ("harvester", "irscope.rules.", "irscope.model.kernel",
                                                  "irscope.engine", "'irscope.render.console'"))


def test_a_tree_of_more_paths_than_a_view_watches_is_not_kept(cache, home, settled, scans, capsys, monkeypatch):
    monkeypatch.setattr(console_views, "MAX_WATCHED", 5)
    for _ in range(2):
        run(capsys, "scan", str(cache))
    assert len(scans) == 2 and views(home) == 0
