"""Concurrent writers (issue 12): scanning a cache while Triton writes into it, or while kernels
are deleted from it, ends in a consistent report, never a crash.

A writer process replays Triton's own protocol (triton/runtime/cache.py, FileCacheManager.put,
3.2 to 3.9) with the files of real fixture kernels: each file is written into a fresh
`<hash>/tmp.pid_<pid>_<uuid>/`, moved into the hash directory with os.replace, and the temporary
directory removed with os.removedirs; the files go in Triton's order (the order of the fixture's
own `__grp__` child paths) and the `__grp__<name>.json` comes last. Meanwhile the test scans
again and again, with one process and with two workers, with and without the result index.

A last test has Triton itself (3.6+) compile 12 kernels for gfx942 into the cache while it is
scanned, the protocol untouched.

Each kernel of each report must be either complete and equal to the clean scan of its fixture
(its paths aside), or marked incomplete with a warning; with deletions, a kernel may also carry
errors, each naming a file or directory that went away. Never an exception, never "irscope could
not analyze".
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import shutil
import time
import uuid
from pathlib import Path

import pytest
from conftest import FIXTURES, load_manifest

from irscope.pipeline.analyze import scan
from irscope.model.serde import to_data

BASE32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
SCAN_SECONDS = 5  # per variant: scans run in a loop this long while the writer works


def small_kernels(count: int = 10) -> list[Path]:
    """The smallest 3.9 fixture kernels, of every arch among them (AMD and NVIDIA alike)."""
    found = []
    for e in load_manifest()["kernels"]:
        if e["cache"] == "caches/triton-3.9":
            d = FIXTURES / e["cache"] / e["dir"]
            found.append((sum(f.stat().st_size for f in d.iterdir()), d))
    return [d for _, d in sorted(found)[:count]]


def put(hashdir: str, filename: str, data: bytes) -> str:
    """triton/runtime/cache.py FileCacheManager.put (Triton 3.2+), step by step."""
    os.makedirs(hashdir, exist_ok=True)
    filepath = os.path.join(hashdir, filename)
    temp_dir = os.path.join(hashdir, f"tmp.pid_{os.getpid()}_{uuid.uuid4()}")
    os.makedirs(temp_dir, exist_ok=True)
    temp_path = os.path.join(temp_dir, filename)
    with open(temp_path, "wb") as f:
        f.write(data)
    os.replace(temp_path, filepath)
    os.removedirs(temp_dir)
    return filepath


def write_kernel(cache: str, source: Path, rng: random.Random) -> str:
    """One compile's files, as Triton puts them: the stages in order, the group file last."""
    hashdir = os.path.join(cache, "".join(rng.choice(BASE32) for _ in range(52)))
    (grp,) = source.glob("__grp__*.json")
    group = {}
    for filename in json.loads(grp.read_text())["child_paths"]:  # Triton's put order
        group[filename] = put(hashdir, filename, (source / filename).read_bytes())
        time.sleep(rng.uniform(0, 0.02))  # compiling the next stage
    put(hashdir, grp.name, json.dumps({"child_paths": group}).encode())  # FileCacheManager.put_group
    return hashdir


def writer(cache: str, sources: list[str], stop, evict: bool, seed: int) -> None:
    """Write kernels until told to stop (at most 60 without eviction); with `evict`, keep about 8
    by deleting others as Triton's cache eviction or a user's `rm -rf` would: a whole directory,
    or some of its files."""
    rng = random.Random(seed)
    written: list[str] = []
    while not stop.is_set() and (evict or len(written) < 60):
        written.append(write_kernel(cache, Path(sources[len(written) % len(sources)]), rng))
        while evict and len(written) > 8:
            victim = written.pop(rng.randrange(len(written) - 1))
            if rng.random() < 0.5:
                shutil.rmtree(victim, ignore_errors=True)
            else:
                for name in rng.sample(sorted(os.listdir(victim)), 3):
                    os.remove(os.path.join(victim, name))


def comparable(r) -> str:
    """A KernelReport as JSON, its directory and key written the same for every copy."""
    return json.dumps(to_data(r)).replace(r.kernel.directory, "<dir>").replace(r.kernel.key, "<key>")


@pytest.fixture(scope="module")
def sources():
    return small_kernels()


@pytest.fixture(scope="module")
def clean(sources):
    """The clean scan of each source kernel, by its metadata hash (every copy has the same json)."""
    return {r.kernel.hash: comparable(r) for r in scan([str(s) for s in sources], jobs=1).kernels}


def check(report, clean: dict[str, str], deleting: bool) -> dict[str, int]:
    """Assert the report is consistent; count kernels by what they were."""
    counts = {"complete": 0, "incomplete": 0, "lost files": 0}
    for p in report.problems:  # a directory removed while the walk listed it
        assert deleting and "cannot read" in p.message, p
    for r in report.kernels:
        messages = [str(p) for p in r.problems]
        assert not any("could not analyze" in m for m in messages), messages
        errors = [p for p in r.problems if p.severity == "error"]
        if errors:
            assert deleting, messages
            for p in errors:  # each names what went away, in this kernel's directory
                assert "No such file or directory" in p.message and p.path.startswith(r.kernel.directory), p
            counts["lost files"] += 1
        elif not r.kernel.complete:
            assert any("incomplete" in m for m in messages), messages
            counts["incomplete"] += 1
        else:
            assert comparable(r) == clean[r.kernel.hash], f"{r.kernel.key} differs from its clean scan"
            counts["complete"] += 1
    return counts


def scan_while_writing(tmp_path, sources, clean, evict: bool, seed: int) -> dict[str, int]:
    cache = tmp_path / "cache"
    cache.mkdir()
    for source in sources[:8]:  # enough for two workers to be used from the first scan
        shutil.copytree(source, cache / source.name)
    context = multiprocessing.get_context("fork")
    stop = context.Event()
    process = context.Process(target=writer, args=(str(cache), [str(s) for s in sources], stop, evict, seed))
    process.start()
    totals = {"complete": 0, "incomplete": 0, "lost files": 0, "scans": 0}
    try:
        end = time.monotonic() + SCAN_SECONDS
        while time.monotonic() < end or totals["scans"] < 4:
            n = totals["scans"]
            report = scan(cache, jobs=1 + n % 2, index=tmp_path / "index" if n % 4 >= 2 else False)
            for what, count in check(report, clean, evict).items():
                totals[what] += count
            totals["scans"] += 1
    finally:
        stop.set()
        process.join(10)
        if process.is_alive():
            process.kill()
    assert process.exitcode == 0, "the writer failed"
    return totals


def test_scans_while_triton_writes_are_consistent(tmp_path, sources, clean):
    totals = scan_while_writing(tmp_path, sources, clean, evict=False, seed=1)
    assert totals["complete"] > 8 and totals["lost files"] == 0
    # Every kernel the writer finished is complete in a final scan, with its clean results.
    final = check(scan(tmp_path / "cache", jobs=2), clean, deleting=False)
    assert final["incomplete"] == 0 and final["complete"] > 8


def test_scans_while_kernels_are_deleted_name_what_went_away(tmp_path, sources, clean):
    totals = scan_while_writing(tmp_path, sources, clean, evict=True, seed=2)
    assert totals["complete"] > 8


@pytest.mark.parametrize("version", ["3.2", "3.9"])
def test_an_entry_between_two_puts_is_incomplete_not_a_kernel_dump(tmp_path, version):
    """Between two files no tmp.pid_ directory exists, and the first files are IR alone: what a
    TRITON_KERNEL_DUMP directory holds. Beside other cache entries (3.0-3.2), or with its `.source`
    (3.6+: put first), it is an entry being written."""
    cache = FIXTURES / "caches" / f"triton-{version}"
    done, writing = sorted(d for d in cache.iterdir() if list(d.glob("__grp__*.json")))[:2]
    shutil.copytree(done, tmp_path / done.name)
    (grp,) = writing.glob("__grp__*.json")
    first_two = list(json.loads(grp.read_text())["child_paths"])[:2]  # Triton's first two puts
    target = str(tmp_path / writing.name)
    for filename in first_two:
        put(target, filename, (writing / filename).read_bytes())
    for root in (tmp_path, tmp_path / writing.name):  # the cache, or the entry alone (3.9's .source tells)
        if root != tmp_path and version == "3.2":
            continue
        (r,) = [r for r in scan(root, jobs=1).kernels if r.kernel.directory == target]
        assert r.kernel.layout == "triton-cache" and not r.kernel.complete
        assert [p.severity for p in r.problems if "incomplete" in p.message] == ["warning"]


COMPILER = """
import sys
sys.path.insert(0, sys.argv[1])
import triton
from triton.compiler import ASTSource
from triton.backends.compiler import GPUTarget
from vector_add import add_kernel

signature = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n_elements": "i32", "BLOCK": "constexpr"}
for warps in (1, 2, 4, 8):
    for block in (256, 512, 1024):
        triton.compile(ASTSource(add_kernel, signature, {"BLOCK": block}), target=GPUTarget("hip", "gfx942", 64),
                       options={"num_warps": warps})
"""


def test_scans_while_the_triton_compiler_writes_are_consistent(tmp_path):
    """The real thing: Triton itself compiles 12 kernels into the cache while it is scanned."""
    triton = pytest.importorskip("triton")
    if tuple(int(p) for p in triton.__version__.split(".")[:2]) < (3, 6):
        pytest.skip("Triton 3.0-3.4 link AMD code with an external ld.lld")
    import subprocess
    import sys

    cache = tmp_path / "cache"
    env = dict(os.environ, TRITON_CACHE_DIR=str(cache), TRITON_HOME=str(tmp_path / "home"),
               TRITON_DEFAULT_FP_FUSION="1")
    compiler = subprocess.Popen([sys.executable, "-c", COMPILER, str(FIXTURES / "kernels")], env=env,
                                stderr=subprocess.PIPE, text=True)
    seen = {"complete": 0, "incomplete": 0, "scans": 0}
    try:
        while compiler.poll() is None or seen["scans"] < 3:
            if cache.exists():
                report = scan(cache, jobs=1 + seen["scans"] % 2)
                for r in report.kernels:
                    errors = [p for p in r.problems if p.severity == "error"]
                    assert not errors, [str(p) for p in errors]
                    assert r.kernel.complete or any("incomplete" in p.message for p in r.problems)
                    seen["complete" if r.kernel.complete else "incomplete"] += 1
                seen["scans"] += 1
            time.sleep(0.05)
    finally:
        if compiler.poll() is None:
            compiler.kill()
    assert compiler.wait() == 0, compiler.stderr.read()[-2000:]
    final = scan(cache, jobs=2)
    assert len(final.kernels) == 12 and all(r.kernel.complete and r.ok for r in final.kernels)
    assert {r.kernel.options.num_warps.value for r in final.kernels} == {1, 2, 4, 8}
    assert seen["scans"] > 3, seen
