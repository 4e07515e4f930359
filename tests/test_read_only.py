"""Read-only (issue 12): no command creates, changes or deletes anything under the paths it reads.

Each tree is hashed before and after (tests/conftest.py tree_digest: every file's bytes, mode and
mtime, every directory's listing, mode and mtime, so a temporary file made and removed shows).
The trees are copies of real fixtures, with the awkward parts a real cache may hold: a kernel
with a truncated `.amdgcn`, a kernel Triton is still writing, a `tmp.pid_` directory, a link loop.
Already tested elsewhere, not repeated here: `irscope.scan` on a cache (tests/test_harvest.py),
the result index's place (tests/test_result_index.py), a script run leaving the user's own Triton
cache alone (tests/test_run_script.py).
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path

import pytest
from conftest import FIXTURES, REPO, copy_tree, kernel_dirs, tree_digest

from irscope.cli.main import main


def kernel(manifest, fixture: str, arch: str = "gfx942") -> Path:
    return kernel_dirs(manifest, cache="caches/triton-3.9", fixture=fixture, target_arch=arch)[0]


@pytest.fixture
def trees(manifest, tmp_path, monkeypatch):
    """{name: root} of the trees read (a cache, two diff sides, a dump), irscope's own cache
    directory (the result index), and a place for outputs."""
    cache = tmp_path / "read" / "cache"
    for fixture, arch in (("add", "gfx942"), ("gemm_aligned", "gfx942"), ("add", "sm_90"), ("softmax", "gfx942")):
        copy_tree(kernel(manifest, fixture, arch), cache / kernel(manifest, fixture, arch).name)
    truncated = next((cache / kernel(manifest, "softmax").name).glob("*.amdgcn"))
    truncated.write_bytes(truncated.read_bytes()[:2000])
    writing = cache / kernel(manifest, "add", "sm_90").name
    next(writing.glob("__grp__*.json")).unlink()
    (writing / "tmp.pid_4242_0123456789abcdef").mkdir()
    (cache / kernel(manifest, "add").name / "up").symlink_to("..")
    read = {"cache": cache,
            "before": copy_tree(FIXTURES / "before_after" / "before", tmp_path / "read" / "before"),
            "after": copy_tree(FIXTURES / "before_after" / "after", tmp_path / "read" / "after")}
    dumps = tmp_path / "read" / "dumps"
    dumps.mkdir()
    shutil.copy(FIXTURES / "dumps" / "mlir-dump_triton-3.9_gfx942_add.txt.gz", dumps)
    read["dumps"] = dumps
    own = tmp_path / "irscope-cache"
    monkeypatch.setenv("IRSCOPE_CACHE_DIR", str(own))
    out = tmp_path / "out"
    out.mkdir()
    return read, own, out


def digests(read: dict[str, Path]) -> dict[str, dict[str, str]]:
    return {name: tree_digest(root) for name, root in read.items()}


def test_every_command_leaves_what_it_reads_untouched(trees, capsys):
    read, own, out = trees
    before = digests(read)
    cache, dump = read["cache"], next(read["dumps"].iterdir())
    commands = [
        ["scan", cache, "--json", out / "r.json", "--sarif", out / "r.sarif", "--csv", out / "r.csv",
         "--markdown", out / "r.md"],
        ["scan", cache, "--json", "-"],  # a second time: results read from the index
        ["scan", cache, "--sass", "--no-cache", "-j", "2"],
        ["diff", read["before"], read["after"], "--stage", "amdgcn", "--json", out / "d.json", "--markdown",
         out / "d.md"],
        ["diff", out / "r.json", cache],  # a saved report on one side
        ["baseline", cache],
        ["occupancy", cache],
        ["occupancy", cache, "--vgprs", "128", "--json"],
        ["passes", dump],
        ["scan", dump],
    ]
    for args in commands:
        code = main([str(a) for a in args])
        assert code in (0, 3), (args, capsys.readouterr().err)  # 3: the truncated kernel
    capsys.readouterr()
    assert digests(read) == before
    assert (own / "index" / "results.sqlite3").is_file(), "the result index lives in $IRSCOPE_CACHE_DIR"
    assert sorted(p.name for p in out.iterdir()) == ["d.json", "d.md", "r-findings.csv", "r.csv", "r.json",
                                                      "r.md", "r.sarif"]


def test_the_tui_leaves_the_cache_untouched(trees):
    pytest.importorskip("textual")
    from irscope.pipeline.analyze import ScanRun
    from irscope.tui.app import IrscopeApp

    read, _, _ = trees
    cache = read["cache"]
    before = tree_digest(cache)

    async def run():
        # As `irscope tui CACHE` opens it: the table first, results from workers and the index after.
        app = IrscopeApp(run=ScanRun(cache, index=True, jobs=2), source_dirs=(str(FIXTURES / "kernels"),))
        app.copy_to_clipboard = lambda text: None
        async with app.run_test(size=(160, 48)) as pilot:
            for _ in range(600):
                if app.screen.report is not None:
                    break
                await pilot.pause(0.05)
            assert app.screen.report is not None
            await pilot.press("enter")  # open a kernel, walk its tabs, search, copy, back, quit
            await pilot.pause()
            await app.workers.wait_for_complete()
            for tab in range(1, 10):
                await pilot.press(str(tab))
            await pilot.press("slash", "s", "enter", "c", "escape", "q")

    asyncio.run(run())
    assert tree_digest(cache) == before


def test_a_script_run_removes_only_the_cache_it_made(manifest, tmp_path, monkeypatch, capfd):
    """`irscope scan kernel.py --no-keep` runs the script with a Triton cache of its own under the
    temporary directory, and removes that directory, and nothing else, after. One small kernel, for speed.
    (Without --no-keep the run is kept in irscope's own directory: tests/test_stand_in.py.)"""
    pytest.importorskip("triton")
    pytest.importorskip("torch")
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    script = shutil.copy(REPO / "examples" / "vector_add.py", scripts / "kernel.py")
    temp = tmp_path / "tmp"
    temp.mkdir()
    (temp / "someone-elses-file").write_text("not irscope's\n")
    monkeypatch.setattr(tempfile, "tempdir", str(temp))  # where the run's cache goes
    monkeypatch.setenv("TMPDIR", str(temp))
    user_cache = copy_tree(kernel(manifest, "add").parent, tmp_path / "user-cache")
    monkeypatch.setenv("TRITON_CACHE_DIR", str(user_cache))
    before = {"scripts": tree_digest(scripts), "user cache": tree_digest(user_cache)}
    temp_before = tree_digest(temp)
    assert main(["scan", str(script), "--target", "gfx942", "--no-cache", "--no-keep"]) == 0
    out = capfd.readouterr()
    assert "add_kernel" in out.out and "now removed" in out.err
    assert {"scripts": tree_digest(scripts), "user cache": tree_digest(user_cache)} == before
    left = {k for k in tree_digest(temp)} - set(temp_before)
    assert not left, f"left behind in the temporary directory: {sorted(left)[:5]}"
    assert (temp / "someone-elses-file").read_text() == "not irscope's\n"
