"""Shared fixtures: the committed corpus of real Triton caches (fixtures/) and its manifest."""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import os
import shutil
import stat
import tempfile
from pathlib import Path

import pytest

# The CLI keeps a result index in irscope's cache directory: give the test session its own, and
# remove it when the session's process ends (worker processes inherit the path, not the cleanup).
os.environ["IRSCOPE_CACHE_DIR"] = _SESSION_CACHE = tempfile.mkdtemp(prefix="irscope-test-cache-")
atexit.register(shutil.rmtree, _SESSION_CACHE, ignore_errors=True)

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"
MANIFEST = FIXTURES / "manifest.json"


def require_nvdisasm() -> str:
    """nvdisasm's path. Triton's wheel ships it (irscope.isa.nvtools.find_tool looks there), so without it
    a test fails where triton is installed and skips only where triton itself is missing."""
    import importlib.util

    from irscope.isa import nvtools

    found = nvtools.find_tool("nvdisasm")
    if found is None:
        if importlib.util.find_spec("triton") is None:
            pytest.skip("triton is not installed, so neither is the nvdisasm it ships")
        pytest.fail("triton is installed but nvdisasm was not found: irscope.isa.nvtools.find_tool looks in "
                    "$TRITON_NVDISASM_PATH, <triton>/backends/nvidia/bin, PATH and $CUDA_HOME/bin")
    return found.path


def load_manifest() -> dict:
    return json.loads(MANIFEST.read_text())


@pytest.fixture(scope="session")
def manifest() -> dict:
    return load_manifest()


@pytest.fixture(scope="session")
def corpus_roots(manifest) -> list[Path]:
    """Every cache directory the manifest describes."""
    return sorted({FIXTURES / e["cache"] for e in manifest["kernels"]})


@pytest.fixture(scope="session")
def corpus_report(corpus_roots):
    import irscope

    return irscope.scan(corpus_roots)


def kernel_dirs(manifest: dict, **where) -> list[Path]:
    """Hash directories of manifest entries matching every `key=value` (target keys allowed)."""
    out = []
    for e in manifest["kernels"]:
        flat = {**e, **{f"target_{k}": v for k, v in e["target"].items()}, "target_arch": e["target_name"]}
        if all(flat.get(k) == v for k, v in where.items()):
            out.append(FIXTURES / e["cache"] / e["dir"])
    return out


def backend_entries(backend: str) -> list[dict]:
    """Manifest entries of one backend ("hip" or "cuda")."""
    return [e for e in load_manifest()["kernels"] if e["target"]["backend"] == backend]


def artifact_files(backend: str, ext: str, version: str | None = None) -> list[Path]:
    """Every fixture `<kernel>.<ext>` of a backend, optionally of one Triton version."""
    return sorted({FIXTURES / e["cache"] / e["dir"] / f"{e['name']}.{ext}"
                   for e in backend_entries(backend) if version is None or e["triton_version"] == version})


def copy_tree(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, symlinks=True)
    return dst


def tree_digest(root: Path) -> dict[str, str]:
    """Every file and directory under root, with its content hash, mode and mtime: a tree's identity.

    A directory's mtime changes when an entry is made or removed in it, so a temporary file
    written and deleted again under root shows too."""
    out = {"./": f"{oct(root.lstat().st_mode)} {root.lstat().st_mtime_ns}"}
    for dirpath, dirnames, filenames in os.walk(root):
        for d in dirnames:
            p = Path(dirpath, d)
            st = p.lstat()
            out[str(p.relative_to(root)) + "/"] = f"{oct(st.st_mode)} {st.st_mtime_ns}"
        for f in filenames:
            p = Path(dirpath, f)
            st = p.lstat()
            # A link or a FIFO is identified by its target or mode: reading one could block or leave the tree.
            what = hashlib.sha256(p.read_bytes()).hexdigest() if stat.S_ISREG(st.st_mode) else \
                (os.readlink(p) if p.is_symlink() else "")
            out[str(p.relative_to(root))] = f"{oct(st.st_mode)} {st.st_mtime_ns} {what}"
    return out


def unprivileged() -> list[str]:
    """A command prefix under which file modes hold: [] when not root; as root, `unshare -U` (a user
    namespace: root's files keep their modes and nothing overrides them). Skips the test when root
    has no such way (a container that forbids user namespaces): root reads a chmod 000 file."""
    import subprocess

    if os.geteuid() != 0:
        return []
    if shutil.which("unshare") and subprocess.run(["unshare", "-U", "true"], capture_output=True).returncode == 0:
        return ["unshare", "-U"]
    pytest.skip("running as root, which ignores file modes, and `unshare -U` is not allowed here")


def irscope_with_locked_dir(locked: Path, mode: int, *argv: str):
    """`python -m irscope ARGV` where file modes hold (unprivileged), with the directory `locked` made
    and set to `mode` for the run, then opened again (pytest must be able to remove it)."""
    import subprocess
    import sys

    prefix = unprivileged()
    locked.mkdir()
    locked.chmod(mode)
    try:
        return subprocess.run([*prefix, sys.executable, "-m", "irscope", *map(str, argv)],
                              capture_output=True, text=True, timeout=300)
    finally:
        locked.chmod(0o755)


def rule_findings(rule_cls, *paths):
    """{kernel key: (KernelReport, [findings of this one rule])} for every kernel under `paths`.

    Runs the rule class directly (registered or not) through the real pipeline, so a rule's
    tests see exactly what `irscope scan` gives it."""
    from irscope.pipeline.analyze import scan
    from irscope.engine.selection import RuleSelection

    report = scan([str(p) for p in paths], rules=RuleSelection.only(rule_cls))
    return {r.kernel.key: (r, [f for f in r.findings if f.code == rule_cls.code]) for r in report.kernels}


def pytest_addoption(parser):
    parser.addoption("--update-snapshots", action="store_true", default=False,
                     help="rewrite tests/snapshots/* from the current output instead of comparing")


def fixture_findings(rule_cls, *paths):
    """[(fixture name from the manifest, KernelReport, [findings of this rule])] under `paths`."""
    fixture_of = {e["dir"]: e["fixture"] for e in load_manifest()["kernels"]}
    return [(fixture_of.get(Path(r.kernel.directory).name), r, fs)
            for r, fs in rule_findings(rule_cls, *paths).values()]


def pick_fixture(found, fixture, arch, version, required=True):
    """[(KernelReport, findings)] of one fixture built for `arch` by a Triton version starting `version`."""
    hits = [(r, fs) for f, r, fs in found if f == fixture and r.kernel.target.arch == arch
            and r.kernel.triton_version.value.startswith(version)]
    assert hits or not required, (fixture, arch, version)
    return hits


@contextlib.contextmanager
def triton_cache_at(path: Path):
    """Triton compiles in this process into `path` for the block: TRITON_CACHE_DIR is set, and any
    value set on `triton.knobs.cache.dir` before (which hides the variable for the rest of the
    process) is lifted for the block and put back after it."""
    import triton

    knobs = triton.knobs.cache
    pinned = knobs.__dict__.pop("dir", None)
    old = os.environ.get("TRITON_CACHE_DIR")
    os.environ["TRITON_CACHE_DIR"] = str(path)
    try:
        yield path
    finally:
        if old is None:
            os.environ.pop("TRITON_CACHE_DIR", None)
        else:
            os.environ["TRITON_CACHE_DIR"] = old
        knobs.__dict__.pop("dir", None)
        if pinned is not None:
            knobs.__dict__["dir"] = pinned


# The two --target runs, and a run on an H100 where the autotuner timed every config (fixtures/README.md).
SWEEP_RUNS = ("gfx942", "sm_90", "sm_90-h100")


@pytest.fixture(scope="session")
def sweep_runs(tmp_path_factory) -> dict[str, Path]:
    """fixtures/sweep/'s runs of gemm_sweep.py (84 autotune configs a target), unpacked: run name
    (gfx942, sm_90, sm_90-h100) -> its directory holding `cache/` and `launches.jsonl`."""
    import tarfile

    root = tmp_path_factory.mktemp("sweep")
    for run in SWEEP_RUNS:
        with tarfile.open(FIXTURES / "sweep" / f"{run}.tar.xz") as tar:
            tar.extractall(root, filter="data")
    return {run: root / run for run in SWEEP_RUNS}


@pytest.fixture(scope="session")
def sweep_reports(sweep_runs) -> dict:
    """Each sweep run scanned as `irscope scan gemm_sweep.py --target` reports it: its launches, each
    compile's constexprs and the autotuner's choice attached."""
    from irscope.model.launches import read_launches
    from irscope.pipeline.analyze import scan
    from irscope.pipeline.runner import attach_configs

    return {target: attach_configs(scan(run / "cache", launches=read_launches(run / "launches.jsonl")),
                                   run / "launches.jsonl")
            for target, run in sweep_runs.items()}


# fixtures/profile/: the bundled examples and liger-kernel's ops run on an H100 (fixtures/README.md)
PROFILE_RUNS = ("vector_add", "softmax", "matmul", "flash_attention", "liger")


@pytest.fixture(scope="session")
def profile_runs(tmp_path_factory) -> dict[str, dict[str, Path]]:
    """The H100 runs of `irscope scan SCRIPT --profile` ("time") and `--profile=counters` ("counters"),
    unpacked: mode -> run name -> its directory (`cache/`, `launches.jsonl`, the profiler's file)."""
    import tarfile

    root = tmp_path_factory.mktemp("profile")
    out = {}
    for mode, archive in (("time", "h100-triton3.6"), ("counters", "h100-triton3.6-counters")):
        with tarfile.open(FIXTURES / "profile" / f"{archive}.tar.xz") as tar:
            tar.extractall(root, filter="data")
        out[mode] = {name: root / archive / name for name in PROFILE_RUNS}
    return out


@pytest.fixture(scope="session")
def scan_run():
    """run directory -> its cache scanned as `irscope scan SCRIPT` reports it: launches and configs attached."""
    from irscope.model.launches import read_launches
    from irscope.pipeline.analyze import scan
    from irscope.pipeline.runner import attach_configs

    def scanned(run: Path):
        launches = run / "launches.jsonl"
        return attach_configs(scan(run / "cache", launches=read_launches(launches), jobs=1), launches)
    return scanned
