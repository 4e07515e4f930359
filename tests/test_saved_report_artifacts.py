"""A crafted saved report reads no file it names (issue 22 item 1).

`irscope diff base.json pr.json --stage amdgcn` and `irscope tui pr.json` read the artifacts a
report names. A report is untrusted input: before this, one whose `.amdgcn` path was
`/proc/self/environ` printed the environment (CI secrets), and one naming a FIFO hung. Now an
artifact of a loaded report is read only under its scan roots on this machine (or `--artifacts
DIR`), through no link, and only when its bytes match the digest the scan recorded; otherwise the
stage is unavailable with one line naming the file. The hostile reports below are hand-edited from
a real scan of a bundled fixture (malformed input by construction).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES, copy_tree

from irscope.model.errors import ArtifactError
from irscope.pipeline.analyze import scan
from irscope.model.report import Report
from irscope.diff.stage import stage_diff

TIMEOUT = 120  # seconds for a child irscope; a diff of two saved reports takes about one
SECRET = "IRSCOPE-TEST-SECRET-7f3a9c"
BEFORE_AFTER = FIXTURES / "before_after"


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> dict:
    """Real scans of the before/after fixture caches (copied), saved as reports."""
    root = tmp_path_factory.mktemp("saved")
    out = {}
    for side in ("before", "after"):
        cache = copy_tree(BEFORE_AFTER / side, root / "caches" / side)
        out[side] = json.loads(scan(cache, jobs=1).to_json())
    out["root"] = root
    return out


def _write(data: dict, path: Path) -> Path:
    path.write_text(json.dumps(data))
    return path


def _irscope(*args, cwd=None, env_extra=None) -> subprocess.CompletedProcess:
    env = {**os.environ, SECRET: SECRET, **(env_extra or {})}
    proc = subprocess.run([sys.executable, "-m", "irscope", *map(str, args)], capture_output=True, text=True,
                          timeout=TIMEOUT, env=env, cwd=cwd)
    proc.stdout = " ".join(proc.stdout.split())  # the console wraps long lines; the words are what is checked
    return proc


def _hostile(data: dict, path: str, roots: list[str], digest: str | None) -> dict:
    """The report with every kernel's `.amdgcn` pointing at `path` (with `digest`) and the given roots."""
    data = json.loads(json.dumps(data))
    data["roots"] = roots
    for kr in data["kernels"]:
        for artifact in kr["kernel"]["artifacts"]:
            if artifact["stage"] == "amdgcn":
                artifact["path"], artifact["digest"] = path, digest
    return data


def _amd_pair(report: Report):
    return next(kr for kr in report.kernels if kr.kernel.artifact("amdgcn") is not None)


@pytest.mark.parametrize("root", ["/", "/proc"])
@pytest.mark.parametrize("digest", [None, "0" * 40])
def test_a_report_naming_proc_self_environ_prints_nothing_of_it(saved, tmp_path, root, digest):
    hostile = _write(_hostile(saved["before"], "/proc/self/environ", [root], digest), tmp_path / "pr.json")
    proc = _irscope("diff", hostile, hostile, "--stage", "amdgcn")
    assert proc.returncode != 2, proc.stderr
    assert SECRET not in proc.stdout + proc.stderr
    assert "not compared: /proc/self/environ: not read" in proc.stdout
    reason = "no digest" if digest is None else "digest does not match"
    assert reason in proc.stdout


def test_a_report_naming_a_fifo_does_not_hang(saved, tmp_path):
    fifo_dir = tmp_path / "cache"
    fifo_dir.mkdir()
    os.mkfifo(fifo_dir / "k.amdgcn")
    hostile = _write(_hostile(saved["before"], str(fifo_dir / "k.amdgcn"), [str(fifo_dir)], "0" * 40),
                     tmp_path / "pr.json")
    proc = _irscope("diff", hostile, hostile, "--stage", "amdgcn")  # subprocess.run's timeout fails a hang
    assert proc.returncode != 2, proc.stderr
    assert "not a regular file" in proc.stdout


def test_a_linked_directory_under_the_root_is_not_followed(saved, tmp_path):
    root = tmp_path / "cache"
    root.mkdir()
    (root / "proc").symlink_to("/proc/self")
    report = Report.from_json(json.dumps(_hostile(saved["before"], str(root / "proc" / "environ"), [str(root)],
                                                  "0" * 40)))
    a = _amd_pair(report).kernel.artifact("amdgcn")
    (line,) = stage_diff(a, a)
    assert "real path leaves" in line and SECRET not in line


def test_a_link_is_not_read_even_with_the_right_digest(saved, tmp_path):
    """The digest is of the file the link points at: the link is still refused (O_NOFOLLOW)."""
    root = tmp_path / "cache"
    root.mkdir()
    target = root / "real.amdgcn"
    target.write_text("s_endpgm\n")
    (root / "k.amdgcn").symlink_to(target)
    digest = hashlib.blake2b(target.read_bytes(), digest_size=20).hexdigest()
    report = Report.from_json(json.dumps(_hostile(saved["before"], str(root / "k.amdgcn"), [str(root)], digest)))
    a = _amd_pair(report).kernel.artifact("amdgcn")
    (line,) = stage_diff(a, a)
    assert "symbolic link" in line and "not followed" in line and str(root / "k.amdgcn") in line


def test_an_artifact_outside_every_root_is_not_read(saved, tmp_path):
    real = json.loads(json.dumps(saved["before"]))
    report = Report.from_json(json.dumps({**real, "roots": [str(tmp_path / "elsewhere")]}))
    a = _amd_pair(report).kernel.artifact("amdgcn")
    (line,) = stage_diff(a, a)
    assert "under none of the report's scan roots" in line and "--artifacts" in line


def test_a_real_report_still_shows_its_stage_diff(saved, tmp_path):
    before = _write(saved["before"], tmp_path / "base.json")
    after = _write(saved["after"], tmp_path / "pr.json")
    proc = _irscope("diff", before, after, "--stage", "amdgcn")
    assert proc.returncode in (0, 1), proc.stderr
    assert "@@ " in proc.stdout and "not compared" not in proc.stdout


def test_an_edited_artifact_is_not_shown(saved, tmp_path):
    """The report's own file, changed since its scan (or another file renamed over it): refused."""
    cache = copy_tree(BEFORE_AFTER / "before", tmp_path / "cache")
    data = json.loads(scan(cache, jobs=1).to_json())
    amdgcn = next(cache.rglob("matmul_kernel.amdgcn"))
    amdgcn.write_text(amdgcn.read_text() + "\n; edited\n")
    report = Report.from_json(json.dumps(data))
    (kr,) = [kr for kr in report.kernels if kr.kernel.artifact("amdgcn") is not None
             and kr.kernel.artifact("amdgcn").path == str(amdgcn)]
    (line,) = stage_diff(kr.kernel.artifact("amdgcn"), kr.kernel.artifact("amdgcn"))
    assert "digest does not match" in line and str(amdgcn) in line


def test_artifacts_dir_finds_a_copied_cache(saved, tmp_path):
    """A report from another machine: its roots do not exist here; --artifacts names a local copy."""
    before, after = (_write(saved[side], tmp_path / f"{side}.json") for side in ("before", "after"))
    moved = saved["root"] / "caches"
    copy = tmp_path / "copy"
    for side in ("before", "after"):  # one directory holding both caches' hash directories
        shutil.copytree(moved / side, copy, dirs_exist_ok=True)
    gone = saved["root"] / "caches-moved"
    moved.rename(gone)  # the roots the reports name no longer exist on "this machine"
    try:
        without = _irscope("diff", before, after, "--stage", "amdgcn")
        with_copy = _irscope("diff", before, after, "--stage", "amdgcn", "--artifacts", copy)
        missing = _irscope("diff", before, after, "--stage", "amdgcn", "--artifacts", tmp_path / "nope")
    finally:
        gone.rename(moved)
    assert "under none of the report's scan roots" in without.stdout
    assert with_copy.returncode in (0, 1), with_copy.stderr
    assert "@@ " in with_copy.stdout and "not compared" not in with_copy.stdout
    assert str(copy) in with_copy.stdout  # the files read are the copy's
    assert missing.returncode == 2 and "--artifacts" in missing.stderr and "not a directory" in missing.stderr


def test_the_tui_kernel_view_shows_no_file_a_report_names_outside_its_roots(saved):
    pytest.importorskip("textual")
    from irscope.tui.app import IrscopeApp
    from irscope.tui.code_view import CodeView
    from irscope.tui.kernel_table import KernelTable

    environ = Path("/proc/self/environ").read_bytes().decode("utf-8", "replace").split("\0")
    secrets = [v for v in environ if len(v) >= 12]
    report = Report.from_json(json.dumps(_hostile(saved["before"], "/proc/self/environ", ["/proc"], None)))
    key = _amd_pair(report).kernel.key

    async def run() -> list[str]:
        app = IrscopeApp(report=report)
        async with app.run_test(size=(160, 48)) as pilot:
            app.screen.query_one(KernelTable).move_to(key)
            await pilot.press("enter")
            await pilot.pause()
            await app.workers.wait_for_complete()
            await pilot.pause()
            return list(app.screen.query_one("#view-amdgcn", CodeView).lines)

    lines = asyncio.run(run())
    assert any("not shown" in line and "/proc/self/environ" in line for line in lines)
    text = "\n".join(lines)
    assert secrets and not any(s in text for s in secrets)


def test_an_old_report_without_digests_still_loads(saved):
    data = json.loads(json.dumps(saved["before"]))
    for kr in data["kernels"]:
        for artifact in kr["kernel"]["artifacts"]:
            del artifact["digest"]
    report = Report.from_json(json.dumps(data))
    a = _amd_pair(report).kernel.artifact("amdgcn")
    assert a.digest is None
    (line,) = stage_diff(a, a)
    assert "no digest" in line


def test_a_report_cannot_set_the_machine_local_fields_that_confine_it(saved, tmp_path):
    """`from_report`, `confined_to`, `identity` and `opened` are what this machine decides about an
    artifact: a report that writes them (`"from_report": false` would read the path as a scan does)
    is read as if they were absent (serde.saved_fields)."""
    data = _hostile(saved["before"], "/proc/self/environ", ["/proc"], None)
    for kr in data["kernels"]:
        for artifact in kr["kernel"]["artifacts"]:
            if artifact["stage"] == "amdgcn":
                artifact.update(from_report=False, confined_to="/", identity=[0, 0], opened="/proc/self/environ")
    report = Report.from_json(json.dumps(data))
    artifact = _amd_pair(report).kernel.artifact("amdgcn")
    assert artifact.from_report and artifact.confined_to == "/proc" and artifact.identity is None
    with pytest.raises(ArtifactError, match="no digest"):
        artifact.read_bytes()
    hostile = _write(data, tmp_path / "pr.json")
    proc = _irscope("diff", hostile, hostile, "--stage", "amdgcn")
    assert SECRET not in proc.stdout + proc.stderr and proc.returncode != 2, proc.stderr
