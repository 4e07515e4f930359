"""A file swapped after the harvest looked at it is never read (issue 22 item 3).

The harvest checks each file with lstat; analysis reads it later. Before this, every reader opened
the path again, so a link swapped in between was followed (an outside file's content reached
`kernel.metadata`) and a FIFO swapped in blocked the scan forever. Now each read opens the path
once with O_NOFOLLOW|O_NONBLOCK and checks the descriptor: a regular file with the device and inode
the harvest recorded. These tests swap files in between, which is hostile input by construction;
every kernel is a copy of a real fixture. A read that would block is failed by SIGALRM.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
from pathlib import Path

import pytest
from conftest import copy_tree, kernel_dirs

from irscope.model import artifact_reader
from irscope.pipeline import harvester
from irscope.pipeline.harvester import harvest
from irscope.pipeline.analyze import analyze_kernel
from irscope.model.serde import to_data

HANG_LIMIT = 60  # seconds; analyzing one kernel takes well under one


@pytest.fixture
def add_dir(manifest, tmp_path) -> Path:
    src = kernel_dirs(manifest, cache="caches/triton-3.9", fixture="add", target_arch="gfx942")[0]
    return copy_tree(src, tmp_path / "cache" / src.name)


@pytest.fixture
def secret(tmp_path) -> Path:
    path = tmp_path / "outside" / "secret.txt"
    path.parent.mkdir()
    path.write_text('{"name": "SECRET-FROM-OUTSIDE", "target": {"backend": "hip", "arch": "gfx90a"}}\n')
    return path


@pytest.fixture
def no_hang():
    """Fails the test (TimeoutError) instead of blocking when a read waits on a FIFO."""
    def on_alarm(signum, frame):
        raise TimeoutError(f"a read blocked for {HANG_LIMIT} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(HANG_LIMIT)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def _analyze_only(cache: Path):
    found = harvest(cache)
    (kernel,) = found.kernels
    return found, kernel


def _file(directory: Path, ext: str) -> Path:
    return next(p for p in directory.glob(f"*.{ext}") if not p.name.startswith("__grp__"))


def _problem(report, path: Path):
    return [p for p in report.problems if p.path == str(path)]


def test_a_link_swapped_in_after_the_harvest_is_not_followed(add_dir, secret):
    found, kernel = _analyze_only(add_dir.parent)
    amdgcn = _file(add_dir, "amdgcn")
    amdgcn.unlink()
    amdgcn.symlink_to(secret)  # between harvest and analysis
    report = analyze_kernel(kernel, found.problems.get(kernel.key, ()))
    (problem,) = _problem(report, amdgcn)
    assert problem.severity == "error" and "symbolic link" in problem.message and "not followed" in problem.message
    assert "SECRET-FROM-OUTSIDE" not in json.dumps(to_data(report))
    assert report.resources is None and report.layouts is not None  # the TTGIR was still analyzed
    assert report.kernel.artifact("amdgcn").digest is None and report.kernel.artifact("ttgir").digest


def test_another_file_renamed_over_an_artifact_is_refused(add_dir, secret):
    found, kernel = _analyze_only(add_dir.parent)
    ttgir = _file(add_dir, "ttgir")
    replacement = add_dir / "replacement.tmp"
    replacement.write_bytes(ttgir.read_bytes())  # the same bytes, another file: still not the harvested one
    os.replace(replacement, ttgir)
    report = analyze_kernel(kernel, found.problems.get(kernel.key, ()))
    (problem,) = _problem(report, ttgir)
    assert "replaced since it was harvested" in problem.message
    assert report.resources is not None  # the .amdgcn was still read


def test_a_fifo_swapped_in_after_the_harvest_does_not_hang(add_dir, no_hang):
    found, kernel = _analyze_only(add_dir.parent)
    ttgir = _file(add_dir, "ttgir")
    ttgir.unlink()
    os.mkfifo(ttgir)  # an open() without O_NONBLOCK would wait for a writer forever
    report = analyze_kernel(kernel, found.problems.get(kernel.key, ()))
    assert any("not a regular file" in p.message for p in _problem(report, ttgir))
    assert report.resources is not None


def test_a_fifo_is_refused_by_the_reader_itself(tmp_path, no_hang):
    fifo = tmp_path / "named.ttgir"
    os.mkfifo(fifo)
    with pytest.raises(artifact_reader.ArtifactError, match="not a regular file"):
        artifact_reader.read_file(str(fifo))


def test_the_metadata_json_swapped_during_the_harvest_is_not_read(add_dir, secret, monkeypatch):
    """The issue's case: the json passed the lstat, then became a link to an outside file before
    the harvest read it; the outside file's content ended up in kernel.metadata."""
    meta = _file(add_dir, "json")
    look = harvester._look

    def look_then_swap(stage, path, directory, follow=False):
        result = look(stage, path, directory, follow)
        if path == str(meta):
            os.unlink(path)
            os.symlink(secret, path)
        return result

    monkeypatch.setattr(harvester, "_look", look_then_swap)
    found = harvest(add_dir.parent)
    (kernel,) = found.kernels
    assert "SECRET-FROM-OUTSIDE" not in json.dumps(kernel.metadata) and kernel.name != "SECRET-FROM-OUTSIDE"
    (problem,) = [p for p in found.problems[kernel.key] if p.path == str(meta)]
    assert "symbolic link" in problem.message


def test_a_metadata_json_replaced_by_another_file_is_not_read(add_dir, secret, monkeypatch):
    meta = _file(add_dir, "json")
    look = harvester._look

    def look_then_replace(stage, path, directory, follow=False):
        result = look(stage, path, directory, follow)
        if path == str(meta):
            os.replace(secret, path)  # a regular file beside it now, but not the one lstat'ed
        return result

    monkeypatch.setattr(harvester, "_look", look_then_replace)
    found = harvest(add_dir.parent)
    (kernel,) = found.kernels
    assert kernel.name == "add_kernel" and "SECRET-FROM-OUTSIDE" not in json.dumps(kernel.metadata)
    assert any("replaced since it was harvested" in p.message for p in found.problems[kernel.key])


def test_each_artifact_is_read_once_per_analysis_and_its_digest_kept(add_dir, monkeypatch):
    found, kernel = _analyze_only(add_dir.parent)
    reads: list[str] = []
    read_file = artifact_reader.read_file

    def counting(path, *args, **kwargs):
        reads.append(path)
        return read_file(path, *args, **kwargs)

    monkeypatch.setattr(artifact_reader, "read_file", counting)
    report = analyze_kernel(kernel, found.problems.get(kernel.key, ()))
    assert reads and len(reads) == len(set(reads)), reads  # the .amdgcn alone has three readers
    for artifact in report.kernel.artifacts:
        if artifact.path in reads:
            expected = hashlib.blake2b(Path(artifact.path).read_bytes(), digest_size=20).hexdigest()
            assert artifact.digest == expected, artifact.stage
    assert report.kernel.artifact("json").digest  # read at harvest, through the same reader
