"""Paths (issue 12): irscope follows no path out of what it was asked to scan.

- a `__grp__*.json`'s child paths are never read (the harvester only notes that the file exists);
- a path inside an artifact (the Python file of a `loc(...)` or a `.file`) is read only when it
  is a regular `.py` file: never a FIFO, a device or a directory;
- a symbolic link to a directory is not descended into (a warning names it; to a directory
  above it, a loop, says so); a kernel's file that links out of its own directory is not read,
  and neither is a FIFO (an error names each); a link loop is an error naming the file;
- unreadable files and directories are errors naming them; the other kernels are analyzed.
Before this, the harvester followed a file symlink anywhere (a `.ttgir` linked to /etc/passwd was
read as the kernel's TTGIR), hung forever on a FIFO named like an artifact, and skipped directory
symlinks without a word.

Every kernel is a copy of a real fixture; FIFOs stand for anything that must not be opened: a
scan that opened one would block, so those scans run in a child process with a timeout.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import copy_tree, kernel_dirs, unprivileged

from irscope.pipeline.harvester import harvest
from irscope.pipeline.analyze import scan
from irscope.model.serde import to_data

TIMEOUT = 60  # seconds; a scan of a few kernels takes one or two


def kernel(manifest, fixture: str, arch: str = "gfx942") -> Path:
    return kernel_dirs(manifest, cache="caches/triton-3.9", fixture=fixture, target_arch=arch)[0]


@pytest.fixture
def cache(manifest, tmp_path) -> Path:
    for fixture in ("add", "gemm_aligned"):
        src = kernel(manifest, fixture)
        copy_tree(src, tmp_path / "cache" / src.name)
    return tmp_path / "cache"


def scan_in_child(*paths, prefix: list[str] | None = None) -> tuple[int, dict]:
    """`irscope scan PATHS --json -` in a child process that must finish within TIMEOUT."""
    proc = subprocess.run([*(prefix or []), sys.executable, "-m", "irscope", "scan", *map(str, paths), "--json", "-",
                           "--no-cache", "-j", "1"], capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.stdout, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def problems_of(data: dict) -> dict[str, list[dict]]:
    """{kernel key or "" for the run: its problems} of a JSON report."""
    out = {k["kernel"]["key"]: k["problems"] for k in data["kernels"] if k["problems"]}
    if data["problems"]:
        out[""] = data["problems"]
    return out


def results(report) -> dict[str, dict]:
    return {r.kernel.key: to_data(r) for r in report.kernels}


# -- __grp__ child paths and paths inside artifacts ------------------------------------------
def test_grp_child_paths_are_never_followed(cache, manifest, tmp_path):
    clean = results(scan(cache, jobs=1))
    outside = tmp_path / "outside"
    outside.mkdir()
    add = cache / kernel(manifest, "add").name
    grp = next(add.glob("__grp__*.json"))
    children = json.loads(grp.read_text())["child_paths"]
    # Every child path now names a FIFO outside the kernel's directory, or a file of another kernel.
    for i, name in enumerate(children):
        os.mkfifo(outside / name)
        children[name] = str(outside / name) if i % 2 else str(cache / kernel(manifest, "gemm_aligned").name / name)
    children["../../etc/passwd"] = "/etc/passwd"
    grp.write_text(json.dumps({"child_paths": children}))
    code, data = scan_in_child(cache)  # would block on a FIFO it opened
    assert code == 0
    for k in data["kernels"]:
        assert all(Path(a["path"]).parent == Path(k["kernel"]["directory"]) for a in k["kernel"]["artifacts"])
    assert results(scan(cache, jobs=1)) == clean


def test_a_group_file_nested_too_deep_for_json_is_a_warning(cache, manifest):
    """100,000 `[` made json.loads raise RecursionError, which `irscope scan` showed as an internal error."""
    clean = results(scan(cache, jobs=1))
    add = cache / kernel(manifest, "add").name
    next(add.glob("__grp__*.json")).write_text("[" * 100_000)  # hostile input, not an artifact's text
    report = scan(cache, jobs=1)
    broken = next(r for r in report.kernels if r.kernel.directory == str(add))
    assert [p.severity for p in broken.problems] == ["warning"]
    assert "not a Triton group file" in broken.problems[0].message
    assert {k: v for k, v in results(report).items() if k != broken.kernel.key} == \
        {k: v for k, v in clean.items() if k != broken.kernel.key}


def test_a_python_file_named_in_an_artifact_is_read_only_if_it_is_one(cache, manifest, tmp_path):
    """The kernel's Python file is outside the cache by nature: it is read (for source lines and the
    TUI's Source tab) only when it is a regular `.py` file; here the artifacts name a FIFO."""
    gemm = cache / kernel(manifest, "gemm_aligned").name
    fifo = tmp_path / "kernel.py"
    os.mkfifo(fifo)
    for ext, pattern, repl in (("ttgir", r'loc\("[^"]*gemm\.py"', f'loc("{fifo}"'),
                               ("amdgcn", r'(\.file\s+1\s+)"[^"]*"\s+"[^"]*"', rf'\g<1>"{tmp_path}" "kernel.py"')):
        (artifact,) = gemm.glob(f"*.{ext}")
        text, n = re.subn(pattern, repl, artifact.read_text())
        assert n, ext
        artifact.write_text(text)
    code = ("import sys\n"
            "from irscope.pipeline.analyze import scan\n"
            "from irscope.ir.source_map import python_lines\n"
            "from irscope.ir.line_map import line_map\n"
            f"(r,) = [r for r in scan({str(gemm)!r}, jobs=1).kernels]\n"
            "lines = python_lines(r.kernel)\n"
            f"assert lines and all(p.file == {str(fifo)!r} and p.text is None for p in lines), lines[:1]\n"
            "assert line_map(r, 'amdgcn').to_python\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr


# -- symbolic links ----------------------------------------------------------------------------
def test_a_directory_linked_to_its_parent_is_a_warning_not_a_loop(cache):
    clean = results(scan(cache, jobs=1))
    hashdir = next(cache.iterdir())
    (hashdir / "up").symlink_to("..")
    (cache / "self").symlink_to(".")
    report = scan(cache, jobs=1)
    assert results(report) == clean
    warnings = {Path(p.path).name: p for p in report.problems}
    assert set(warnings) == {"up", "self"} and all(p.severity == "warning" for p in warnings.values())
    assert "symbolic link loop" in warnings["up"].message and "not followed" in warnings["up"].message


def test_a_file_link_loop_is_an_error_naming_the_file(cache, manifest):
    add = cache / kernel(manifest, "add").name
    (add / "loop_kernel.ttgir").symlink_to("loop_kernel.ttir")
    (add / "loop_kernel.ttir").symlink_to("loop_kernel.ttgir")
    report = scan(cache, jobs=1)
    (looped,) = [r for r in report.kernels if r.kernel.name == "loop_kernel"]
    assert {(Path(p.path).name, p.severity) for p in looped.problems} >= {
        ("loop_kernel.ttgir", "error"), ("loop_kernel.ttir", "error")}
    assert all("Too many levels of symbolic links" in p.message for p in looped.problems if p.severity == "error")
    assert len(report.kernels) == 3


def test_links_out_of_the_cache_are_not_followed(cache, manifest, tmp_path):
    """Today's behaviour, tested: a directory link is not descended into, a file link out of its
    kernel's directory is not read; a link to a file beside it is."""
    elsewhere = copy_tree(kernel(manifest, "softmax"), tmp_path / "elsewhere" / "softmax")
    (cache / "linked_cache").symlink_to(tmp_path / "elsewhere")
    add = cache / kernel(manifest, "add").name
    (amdgcn,) = add.glob("*.amdgcn")
    amdgcn.unlink()
    amdgcn.symlink_to(next(elsewhere.glob("*.amdgcn")))  # another kernel's assembly, outside
    (meta,) = [p for p in add.glob("*.json") if not p.name.startswith("__grp__")]
    meta.rename(add / "moved.bin")
    meta.symlink_to("moved.bin")  # a link to a file beside it: followed
    report = scan(cache, jobs=1)
    assert {r.kernel.name for r in report.kernels} == {"add_kernel", "matmul_kernel"}  # no softmax
    (link_warning,) = report.problems
    assert link_warning.path == str(cache / "linked_cache") and link_warning.severity == "warning"
    (r,) = [r for r in report.kernels if r.kernel.name == "add_kernel"]
    assert r.kernel.artifact("amdgcn") is None and r.kernel.artifact("json") is not None
    assert r.kernel.target.arch == "gfx942"  # its json was read through the link beside it
    (refused,) = [p for p in r.problems if p.path == str(amdgcn)]
    assert refused.severity == "error" and "symbolic link to" in refused.message and "not followed" in refused.message


def test_a_linked_metadata_json_out_of_the_directory_is_not_read(cache, manifest, tmp_path):
    add = cache / kernel(manifest, "add").name
    (meta,) = [p for p in add.glob("*.json") if not p.name.startswith("__grp__")]
    secret = tmp_path / "secret.json"
    secret.write_text('{"name": "a secret from elsewhere"}')
    meta.unlink()
    meta.symlink_to(secret)
    (r,) = [r for r in scan(cache, jobs=1).kernels if r.kernel.directory == str(add)]
    assert r.kernel.name == "add_kernel" and "a secret from elsewhere" not in json.dumps(to_data(r))
    assert any(p.path == str(meta) and "not followed" in p.message for p in r.problems)


def test_a_path_the_user_names_may_be_a_link(cache, manifest, tmp_path):
    (tmp_path / "cache-link").symlink_to(cache)
    assert len(harvest(tmp_path / "cache-link").kernels) == 2
    (amdgcn,) = (cache / kernel(manifest, "add").name).glob("*.amdgcn")
    (tmp_path / "linked.amdgcn").symlink_to(amdgcn)
    (one,) = scan(tmp_path / "linked.amdgcn").kernels
    assert one.resources is not None and not [p for p in one.problems if p.severity == "error"]


def test_a_fifo_named_like_an_artifact_is_not_opened(cache, manifest):
    add = cache / kernel(manifest, "add").name
    os.mkfifo(add / "pipe_kernel.ttgir")
    os.mkfifo(add / "pipe_kernel.json")
    code, data = scan_in_child(cache)  # would block forever on open()
    assert code == 3
    (problems,) = [[p for p in ps if p["severity"] == "error"]
                   for key, ps in problems_of(data).items() if key.endswith("pipe_kernel")]
    assert {Path(p["path"]).name for p in problems} == {"pipe_kernel.ttgir", "pipe_kernel.json"}
    assert all("not a regular file" in p["message"] for p in problems)


# -- unreadable files and directories ----------------------------------------------------------
def test_unreadable_files_and_directories_are_problems(cache, manifest, tmp_path):
    prefix = unprivileged()
    add, gemm = (cache / kernel(manifest, f).name for f in ("add", "gemm_aligned"))
    locked_dir = cache / "locked"
    copy_tree(kernel(manifest, "softmax"), locked_dir)
    (amdgcn,) = add.glob("*.amdgcn")
    (meta,) = [p for p in gemm.glob("*.json") if not p.name.startswith("__grp__")]
    clean = {r.kernel.key: r for r in scan(cache, jobs=1).kernels}
    locked = [amdgcn, meta, locked_dir]
    for path in locked:
        path.chmod(0)
    try:
        code, data = scan_in_child(cache, prefix=prefix)
    finally:
        for path in locked:
            path.chmod(0o755 if path.is_dir() else 0o644)
    assert code == 3
    problems = problems_of(data)
    denied = {p["path"] for ps in problems.values() for p in ps if "Permission denied" in p["message"]}
    assert denied == {str(amdgcn), str(meta), str(locked_dir)}
    assert {k["kernel"]["key"] for k in data["kernels"]} == set(clean) - {"locked"}
    # Without its json, gemm still has its assembly's figures; add keeps its json's facts.
    by_key = {k["kernel"]["key"]: k for k in data["kernels"]}
    assert by_key[gemm.name]["resources"]["vgpr_total"]["value"] == clean[gemm.name].resources.vgpr_total.value
    assert by_key[add.name]["kernel"]["target"]["arch"] == "gfx942"
