"""Terminal safety (issue 12): text from a cache is shown literally by every renderer.

The hostile cache is a copy of one real fixture kernel (3.9 gemm_aligned for gfx942, which has
findings with Python lines) with these parts made hostile at test time:
- KERNEL: the kernel's name, in its metadata json;
- DIRNAME: its hash directory's name, so its key and every artifact path;
- PYFILE: the Python file its `.amdgcn` names in `.file` directives, so the findings' `where`
  and messages (`from <file>:49`) and the instruction mix;
- IRLINE: a line the AMDGCN parser cannot read, inserted into the `.amdgcn` (a problem quotes
  it; the TUI's AMDGCN tab and `diff --stage amdgcn` show it).
Each holds rich markup, an SGR and an OSC (window title) escape, BEL, CR, BS, a C1 CSI and
U+202E (right-to-left override). Paths cannot hold `/`, so theirs close markup with `[reset]`.

What other files already cover: tests/test_cli.py (KERNEL in `scan`'s plain table),
tests/test_exports.py (a name, message and fix put in with dataclasses.replace: Markdown, SARIF,
CSV), tests/test_tui.py (a name in the kernel table). This file adds: `scan` with colors on,
the paths, Python file and IR line in `scan`'s findings and problems, `occupancy`, `diff` (with a
stage diff), errors on stderr (`scan`, `explain`, `occupancy`), JSON, SARIF, baseline and
Markdown from a real hostile scan, CSV on a terminal, and the TUI's kernel view tabs.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil

import pytest
from conftest import copy_tree, kernel_dirs

from irscope.cli.main import main
from irscope.model.safe_text import printable

ESCAPES = " \x1b[31mRED\x1b]0;TITLE\x07 \r\b\x9b2J\u202eRTL"
KERNEL = "[bold red]kernel[/]" + ESCAPES
DIRNAME = "[bold red]dir[reset]" + ESCAPES
PYFILE = "[bold red]py[reset]" + ESCAPES + ".py"
IRLINE = "\t[bold red]ir[/]" + ESCAPES
# What a terminal would act on. Rich's own SGR codes are taken out first when colors are on.
RAW = ("\x1b", "\x07", "\r", "\b", "\x9b", "\u202e")
RICH_SGR = re.compile(r"\x1b\[[0-9;]*m")


def make_hostile(manifest, where, irline: bool = True):
    """A cache holding the one hostile kernel (under `where`), and its hash directory."""
    src = kernel_dirs(manifest, cache="caches/triton-3.9", fixture="gemm_aligned", target_arch="gfx942")[0]
    hashdir = copy_tree(src, where / DIRNAME)
    meta = next(p for p in hashdir.glob("*.json") if not p.name.startswith("__grp__"))
    data = json.loads(meta.read_text())
    data["name"] = KERNEL
    meta.write_text(json.dumps(data))
    (amdgcn,) = hashdir.glob("*.amdgcn")
    text = amdgcn.read_text()
    # The kernel's own file only (file 1); Triton's library files keep their names.
    text, n = re.subn(r'(\.file\s+1\s+"[^"]*"\s+)"[^"]+"', lambda m: f'{m[1]}"{PYFILE}"', text)
    assert n == 1
    if irline:
        lines = text.split("\n")
        at = next(i for i, t in enumerate(lines) if t.startswith("\tglobal_load"))
        text = "\n".join(lines[:at] + [IRLINE] + lines[at:])
    amdgcn.write_text(text, newline="")
    return where, hashdir


@pytest.fixture(scope="module")
def hostile(manifest, tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    after, hashdir = make_hostile(manifest, root / "after")
    before, _ = make_hostile(manifest, root / "before", irline=False)
    return after, before, hashdir


def assert_literal(text: str, *parts: str, colored: bool = False) -> None:
    """Nothing in `text` acts on a terminal, and each part shows as its visible escape."""
    raw = RICH_SGR.sub("", text) if colored else text
    acting = {ch for ch in RAW if ch in raw}
    assert not acting, f"raw {sorted(map(repr, acting))} reach the terminal"
    for part in parts:
        assert printable(part) in text, f"{part!r} not shown literally"


def strings(data):
    """Every string in loaded JSON, keys and values."""
    if isinstance(data, str):
        yield data
    elif isinstance(data, dict):
        for k, v in data.items():
            yield k
            yield from strings(v)
    elif isinstance(data, list):
        for v in data:
            yield from strings(v)


def cli(capsys, *args) -> tuple[int, str, str]:
    code = main(list(map(str, args)))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("colored", [False, True], ids=["plain", "colors"])
def test_scan_shows_names_paths_and_ir_text_literally(hostile, capsys, monkeypatch, colored):
    cache, _, hashdir = hostile
    if colored:  # a terminal with colors: rich's styled rendering instead of plain text
        monkeypatch.setenv("FORCE_COLOR", "1")
        monkeypatch.setenv("COLUMNS", "400")
    code, out, err = cli(capsys, "scan", cache, "--no-cache", "-j", "1")
    assert code == 0, err
    assert ("\x1b[" in out) == colored
    # KERNEL in the table and the findings; DIRNAME in keys, `where` and problems; PYFILE in the
    # findings (`where` and message); IRLINE in the problem that quotes it.
    assert_literal(out, KERNEL, DIRNAME, PYFILE, colored=colored)
    assert "unrecognized amdgcn line" in out and "[bold red]ir[/]" in out
    assert_literal(err)


def test_errors_on_stderr_are_literal(hostile, capsys):
    cache, _, hashdir = hostile
    code, _, err = cli(capsys, "scan", hashdir / "missing[bold]\x1b]0;x\x07.amdgcn")
    assert code == 2 and "no such file" in err
    assert_literal(err, "missing[bold]\x1b]0;x\x07")
    code, _, err = cli(capsys, "explain", KERNEL)
    assert code == 2 and "[bold red]kernel[/]" in err  # quoted with repr(): escaped its own way
    assert_literal(err)
    code, _, err = cli(capsys, "occupancy", cache, "--kernel", KERNEL + "*nothing")
    assert code == 2
    assert_literal(err, KERNEL)


def test_occupancy_shows_the_kernel_and_its_paths_literally(hostile, capsys, monkeypatch):
    cache, _, _ = hostile
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "400")
    code, out, err = cli(capsys, "occupancy", cache)
    assert code == 0, err
    assert_literal(out, KERNEL, DIRNAME, colored=True)  # the title, and each input's origin


def test_diff_and_its_stage_diff_are_literal(hostile, capsys, monkeypatch):
    after, before, _ = hostile
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "400")
    code, out, err = cli(capsys, "diff", before, after, "--stage", "amdgcn", "--no-cache", "-j", "1")
    assert code == 0, err
    # A stage diff reads lines as Python does: the IR line ends at its \r, and each piece shows literally.
    assert_literal(out, KERNEL, DIRNAME, *(piece.strip() for piece in IRLINE.split("\r")), colored=True)


def test_markdown_json_sarif_and_baseline_keep_it_data(hostile, capsys, tmp_path):
    after, before, _ = hostile
    for fmt in ("--markdown", "--sarif", "--json"):
        code, out, err = cli(capsys, "scan", after, "--no-cache", "-j", "1", fmt, "-")
        assert code == 0, err
        assert_literal(out)  # no printable() check: each format escapes in its own way
        if fmt != "--markdown":
            loaded = "\n".join(strings(json.loads(out)))
            for part in (KERNEL, DIRNAME, PYFILE):  # escaped in the text, the same once loaded
                assert part in loaded, (fmt, part)
    code, out, err = cli(capsys, "diff", before, after, "--markdown", "-", "--no-cache", "-j", "1")
    assert code == 0, err
    assert_literal(out)
    code, out, err = cli(capsys, "baseline", after, "--no-cache", "-j", "1")
    assert code == 0, err
    assert_literal(out)
    assert any(e["kernel"] == KERNEL for e in json.loads(out)["findings"])


def test_csv_is_exact_in_a_file_and_escaped_on_a_terminal(hostile, capsys, monkeypatch, tmp_path):
    after, _, _ = hostile
    cli(capsys, "scan", after, "--no-cache", "-j", "1", "--csv", tmp_path / "k.csv")
    assert KERNEL in (tmp_path / "k.csv").read_bytes().decode()  # data stays data
    monkeypatch.setattr("sys.stdout.isatty", lambda: True)
    code, out, err = cli(capsys, "scan", after, "--no-cache", "-j", "1", "--csv", "-")
    assert code == 0, err
    assert_literal(out, KERNEL)


# -- the TUI ---------------------------------------------------------------------------------
def _screen_text(app) -> str:
    strips = app.screen._compositor.render_strips()
    return "\n".join("".join(segment.text for segment in strip) for strip in strips)


def test_the_tui_kernel_view_shows_everything_literally(hostile):
    pytest.importorskip("textual")
    from irscope.pipeline.analyze import scan
    from irscope.tui.app import IrscopeApp

    cache, _, hashdir = hostile
    report = scan(cache, jobs=1)
    screens: dict[str, str] = {}

    async def run():
        app = IrscopeApp(report=report)
        async with app.run_test(size=(200, 50)) as pilot:
            await pilot.pause()
            screens["table"] = _screen_text(app)
            await pilot.press("enter")  # the one kernel
            await pilot.pause()
            await app.workers.wait_for_complete()
            for tab in app.screen._tab_ids():  # each tab, then Findings again (in Occupancy digits are typed)
                await pilot.press("right_square_bracket")
                await pilot.pause()
                screens[f"after {tab}"] = _screen_text(app)
            await pilot.press("6", "slash", "i", "r", "left_square_bracket", "enter")  # AMDGCN: to IRLINE
            await pilot.pause()
            screens["amdgcn at IRLINE"] = _screen_text(app)

    asyncio.run(run())
    for where, text in screens.items():
        assert "[bold red]" in text, where
        raw = {ch for ch in RAW if ch in text}
        assert not raw, f"{where}: raw {sorted(map(repr, raw))}"
    seen = "\n".join(screens.values())
    assert printable("[bold red]dir[reset] \x1b[31mRED") in seen  # the title's directory
    assert printable("[bold red]ir[/] \x1b[31mRED") in seen  # the AMDGCN tab's hostile line
    assert printable("[bold red]py[reset] \x1b[31mRED") in seen  # a finding's Python file


def test_the_tui_notifications_show_paths_literally(hostile):
    pytest.importorskip("textual")
    from textual.content import Content

    from irscope.pipeline.analyze import scan
    from irscope.tui.app import IrscopeApp

    cache, _, _ = hostile
    report = scan(cache, jobs=1)
    shown = []

    async def run():
        app = IrscopeApp(report=report)
        app.copy_to_clipboard = lambda text: None  # no OSC 52 from a test
        notify = app.notify

        def recording(message, *, markup=True, **kwargs):  # what the toast will show
            shown.append(Content.from_markup(message).plain if markup else message)
            return notify(message, markup=markup, **kwargs)

        app.notify = recording
        async with app.run_test(size=(200, 50)) as pilot:
            await pilot.pause()
            await pilot.press("enter")
            await pilot.pause()
            await app.workers.wait_for_complete()
            await pilot.press("6", "c")  # the AMDGCN tab's path, copied and notified
            await pilot.pause()

    asyncio.run(run())
    (copied,) = [m for m in shown if m.startswith("copied ")]
    assert_literal(copied, "[bold red]dir[reset]")


def test_hostile_parts_survive_the_copy(hostile):
    """The fixture itself: the hostile names really are on disk (a guard for the tests above)."""
    cache, _, hashdir = hostile
    assert hashdir.name == DIRNAME and shutil.os.path.isdir(hashdir)
    assert PYFILE in next(hashdir.glob("*.amdgcn")).read_bytes().decode()
