"""The progress line (irscope/render/progress.py): counts on stderr when it is a terminal, nothing
in a pipe or with --quiet, never on stdout, cleared before the report."""

from __future__ import annotations

import io
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES

from irscope.pipeline.analyze import ScanCounts, ScanRun
from irscope.render.progress import ProgressLine, scan_progress

CACHE = FIXTURES / "caches" / "triton-3.6"
CLEAR = "\r\x1b[K"


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _drawn(text: str) -> list[str]:
    """Each state the line showed, in order."""
    return [part.removesuffix("\x1b[K") for part in text.split("\r") if part.removesuffix("\x1b[K")]


def _screen(text: str) -> list[str]:
    """The lines a terminal shows after `text`: `\r` returns to the line's start, ESC[K erases to its end."""
    lines: list[str] = []
    row: list[str] = []
    column = at = 0
    while at < len(text):
        if text.startswith("\x1b[K", at):
            del row[column:]
            at += 3
            continue
        char = text[at]
        if char == "\r":
            column = 0
        elif char == "\n":
            lines.append("".join(row))
            row, column = [], 0
        else:
            row[column:column + 1] = [char]
            column += 1
        at += 1
    return lines + ["".join(row)] if row else lines


def test_a_scan_draws_its_counts_and_clears_the_line(tmp_path):
    kernels = len(ScanRun(CACHE).found.kernels)
    for attempt, index_part in ((1, ""), (2, f" ({kernels} from the index)")):
        stream = io.StringIO()
        line = ProgressLine(stream, width=200)
        report = ScanRun(CACHE, index=tmp_path / "index", jobs=2, on_progress=line).report()
        drawn = _drawn(stream.getvalue())
        assert len(report.kernels) == kernels
        assert drawn[0].endswith("harvesting kernels (0 s)"), drawn
        assert drawn[-1].startswith(f"analyzing [{'#' * 24}] {kernels}/{kernels} kernels{index_part}, "), attempt
        assert stream.getvalue().endswith(CLEAR)  # the report printed next starts on a clean line


def test_redrawn_at_most_every_interval_but_the_last_counts_always():
    stream, clock = io.StringIO(), Clock()
    line = ProgressLine(stream, width=200, clock=clock)
    line(ScanCounts("analyzing", 1000))
    for done in range(1, 1000):  # 999 results within one interval: none drawn
        line(ScanCounts("analyzing", 1000, from_index=done // 2, analyzed=done - done // 2))
    clock.now = 0.5
    line(ScanCounts("analyzing", 1000, from_index=500, analyzed=500))
    assert [d.split("] ")[1] for d in _drawn(stream.getvalue())] == [
        "0/1000 kernels, 0 s", "1000/1000 kernels (500 from the index), 0 s"]


def test_the_line_fits_the_terminal_and_shows_no_escapes_from_a_name():
    stream = io.StringIO()
    line = ProgressLine(stream, label="BEFORE \x1b[31m", width=30)
    line(ScanCounts("analyzing", 960, from_index=318, analyzed=94))
    (drawn,) = _drawn(stream.getvalue())
    assert len(drawn) == 29 and "\x1b[31m" not in drawn and drawn.startswith("BEFORE \\x1b[31manalyzing")


def test_nothing_without_a_terminal_or_with_quiet():
    with scan_progress(False, stream=io.StringIO()) as hook:
        assert hook is None  # a StringIO is not a terminal
    master, slave = pty.openpty()
    try:
        with open(slave, "w", closefd=False) as terminal:
            with scan_progress(True, stream=terminal) as hook:
                assert hook is None
            with scan_progress(False, stream=terminal) as hook:
                assert isinstance(hook, ProgressLine)
    finally:
        os.close(master)
        os.close(slave)


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_message_printed_meanwhile_gets_a_line_of_its_own(monkeypatch):
    """The pipeline's own line on stderr (here: the index refused, as it lies inside the scanned path)
    erases the progress line first instead of being appended to it."""
    terminal = FakeTerminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.setenv("COLUMNS", "200")
    with scan_progress() as hook:
        assert sys.stderr is not terminal  # messages go through the line
        ScanRun(CACHE, index=CACHE / "index-here", jobs=1, on_progress=hook)
    assert sys.stderr is terminal
    screen = _screen(terminal.getvalue())
    assert any(row.startswith("irscope: the result index ") for row in screen), screen
    assert not any("harvesting" in row or "analyzing" in row for row in screen), screen


def _irscope(tmp_path: Path, *argv: str, terminal: bool = True) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of a CLI run with stdout a file and stderr a terminal (or a pipe)."""
    env = dict(os.environ, TERM="xterm", COLUMNS="200")
    with open(tmp_path / "stdout", "wb") as out:
        if not terminal:
            done = subprocess.run([sys.executable, "-m", "irscope", *argv], stdout=out, stderr=subprocess.PIPE,
                                  stdin=subprocess.DEVNULL, env=env, timeout=300)
            return done.returncode, (tmp_path / "stdout").read_text(), done.stderr.decode()
        master, slave = pty.openpty()
        child = subprocess.Popen([sys.executable, "-m", "irscope", *argv], stdout=out, stderr=slave,
                                 stdin=subprocess.DEVNULL, env=env)
        os.close(slave)
        err = b""
        try:
            while True:
                try:
                    data = os.read(master, 65536)
                except OSError:  # EIO: the child closed its end
                    break
                if not data:
                    break
                err += data
        finally:
            os.close(master)
        code = child.wait(timeout=300)
    return code, (tmp_path / "stdout").read_text(), err.decode()


def test_cli_scan_under_a_terminal_shows_the_bar_on_stderr_only(tmp_path):
    kernels = len(ScanRun(CACHE).found.kernels)
    code, out, err = _irscope(tmp_path, "scan", str(CACHE), "--csv", "-", "--no-cache")
    assert code == 0 and out.startswith("key,name,")
    assert f"] {kernels}/{kernels} kernels, " in err and err.endswith(CLEAR)
    assert "analyzing" not in out and "\r" not in out.replace("\r\n", "\n")
    assert not any("analyzing" in row or "harvesting" in row for row in _screen(err))  # cleared


def test_cli_quiet_and_pipes_show_nothing(tmp_path):
    for argv, terminal in ((("scan", str(CACHE), "--csv", "-", "--quiet"), True),
                           (("scan", str(CACHE), "--csv", "-"), False),
                           (("diff", str(CACHE), str(CACHE), "--json", "-", "--quiet"), True),
                           (("baseline", str(CACHE), "--quiet"), True)):
        code, out, err = _irscope(tmp_path, *argv, terminal=terminal)
        assert code == 0 and out, argv
        assert "analyzing" not in err and "harvesting" not in err and "\x1b" not in err, (argv, err)


def test_cli_diff_labels_each_side(tmp_path):
    kernels = len(ScanRun(CACHE).found.kernels)
    code, _, err = _irscope(tmp_path, "diff", str(CACHE), str(CACHE), "--json", "-")
    assert code == 0
    drawn = _drawn(err)
    assert any(re.match(rf"BEFORE analyzing .* {kernels}/{kernels} kernels", d) for d in drawn), drawn
    assert any(re.match(rf"AFTER analyzing .* {kernels}/{kernels} kernels", d) for d in drawn), drawn


def test_script_run_spins_while_the_script_is_quiet_and_passes_its_output(tmp_path):
    script = tmp_path / "quiet_then_talks.py"
    script.write_text("import os, sys, time\ntime.sleep(1)\nprint('to stdout', os.isatty(1))\n"
                      "print('to stderr', file=sys.stderr)\n")
    code, out, err = _irscope(tmp_path, "scan", str(script), "--target", "gfx942", "--no-keep")
    assert code == 2 and "compiled no Triton kernel" in err  # the script compiles nothing
    drawn = _drawn(err)
    assert any(re.match(rf"[|/\\-] running {re.escape(str(script))} \(\d+ s\)", d) for d in drawn), drawn
    # the script's output reaches stderr whole, on lines of its own, and still sees a terminal; no
    # spinner is left on the screen
    screen = _screen(err)
    assert "to stdout True" in screen and "to stderr" in screen, screen
    assert not any("running " + str(script) + " (" in row for row in screen), screen
    assert "to stdout" not in out
    code, _, err = _irscope(tmp_path, "scan", str(script), "--target", "gfx942", "--no-keep", "--quiet")
    assert code == 2 and "running " + str(script) + " (" not in err and "\x1b[K" not in err
    assert "to stdout True" in err


@pytest.mark.parametrize("command", ["scan", "diff", "baseline"])
def test_quiet_is_on_the_commands_that_show_progress(command):
    from irscope.cli.main import _parser

    sub = next(a for a in _parser()._actions if getattr(a, "choices", None))
    assert "--quiet" in sub.choices[command].format_help()
