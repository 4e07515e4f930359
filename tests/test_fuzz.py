"""Real fixture files, mutated (tests/fuzzing.py), must never crash irscope.

Parser level: every parser returns, or raises ArtifactError naming the file and a line of it.
Pipeline level: a cache with one file of one kernel broken scans without raising, every other
kernel's report is the clean scan's, and the broken kernel's problems name its own files.
CLI level: no traceback reaches the user. Limits: files over --max-file-size are reported,
not read; gzip is decompressed only up to the limit. The seed is fixed; bench/fuzz.py runs
thousands of cases more (docs/robustness.md).
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest

import fuzzing
from conftest import FIXTURES, REPO, copy_tree, require_nvdisasm

from irscope.model.errors import ArtifactError
from irscope.model.limits import DEFAULT_MAX_FILE_SIZE, parse_size, read_limited
from irscope.pipeline.analyze import scan

SEED = 12  # issue 12
PARSERS = fuzzing.PARSERS()
SKIP = ("huge_line",)  # one case per parser below: a 10 MB line takes a second or two
# Cases per parser: a few hundred; the reference MLIR reader (lark) is 10 times slower.
CASES = {name: 60 if name == "mlir_lark" else 150 if name == "mlir_dump" else 300 for name in PARSERS}
# lark reads 0.2-0.5 MB/s: 3,000 more lines cost it half a second a case; mlir_fast shares the builder.
SKIP_FOR = {"mlir_lark": ("reference_chain",)}


def files_of(parser: str) -> list[Path]:
    """The real files a parser is fuzzed on; SASS listings need nvdisasm (Triton ships it). An empty
    list is a broken glob, not a missing tool."""
    if parser == "sass":
        require_nvdisasm()
    files = fuzzing.parser_files(parser)
    assert files, f"no fixture files for {parser}: fuzzing.parser_files found none"
    return files


def _failures(outcomes) -> str:
    return "\n\n".join(f"{o.parser}: {o.case}\n{o.detail}" for o in outcomes if o.status == "bug")


@pytest.mark.parametrize("parser", sorted(PARSERS))
def test_parser_returns_or_names_file_and_line(parser):
    files = files_of(parser)
    if parser == "mlir_dump":  # the GEMM dumps are 8-22 MB of text: the add kernels' only, here
        files = [f for f in files if "_add" in f.name]
    parse = PARSERS[parser][0]
    outcomes = [fuzzing.check(parser, parse, case)
                for case in fuzzing.cases(fuzzing.spread(files, 16), CASES[parser], SEED,
                                          skip=SKIP + SKIP_FOR.get(parser, ()))]
    assert not _failures(outcomes), _failures(outcomes)
    # The mutations reach past the first check: some inputs still parse, some are rejected.
    statuses = {o.status for o in outcomes}
    assert statuses == {"ok", "artifact-error"}, statuses


@pytest.mark.parametrize("parser", sorted(set(PARSERS) - {"cubin", "mlir_dump", "metadata"}))
def test_character_runs_stay_linear(parser):
    """20,000 of one character in a real line: no regex backtracks over the run. A linear parse of it
    takes milliseconds and a backtracking regex over 20,000 characters minutes: a slow case is timed
    again with half the run (fuzzing.superlinear), since any bound in seconds fails on a loaded
    2-core machine (bench/fuzz.py measures speed)."""
    files = files_of(parser)
    count = 40 if parser == "mlir_lark" else 120
    outcomes = list(map(lambda c: fuzzing.check(parser, PARSERS[parser][0], c),
                        fuzzing.cases(fuzzing.spread(files, 6), count, SEED, ["line_run"])))
    assert not _failures(outcomes), _failures(outcomes)
    slow = [why for o in outcomes if (why := fuzzing.superlinear(o, PARSERS[parser][0]))]
    assert not slow, slow


# Every case the fuzzing found a bug with (docs/robustness.md lists them), replayed:
# parser, seed, mutation, fixtures/caches/triton-<file>.
FOUND = [line.split() for line in """
mlir_fast 2163037443 unbalance 3.6/77OTTRHSHXGRRIBIP2HIW5BSBVMUKAP2IZ72LJ6IUK5JHV5IAWQQ/softmax_kernel.ttgir
mlir_lark 2634218640 unbalance 3.6/3UHVPS3WLBLH5RFZOEVHZTDQTGB4T7E6L6XMSUQRIIYHO4YOFNLA/matmul_autotuned_kernel.ttgir
mlir_fast 1248794762 huge_line 3.0/5739e50e7185ac85e207bd8bc6a6554fb6c18a89c0193c275cc4d0e2546889d9/add_kernel.ttir
llir 3672367004 char_run 3.6/66CRYLH2TVJTCWRZMSAKKN6Q3FJPMA5S22DK2WNPZSMK6CUJ3QOA/attn_fwd_kernel.llir
sass 913300725 unbalance 3.6/UBX5XJHI6SZRCCN4FI5CEJSVFFSTEUZNRUDX46WGGPGRF3YYW2OA/matmul_autotuned_kernel.sass
sass 1734349671 char_run 3.9/FC2JABTQYKJULP4D6IQP2J3UPHAPCMSMGFTJDYA4LGT6MWQVOOIQ/tma_matmul_kernel.sass
amdgcn 4288897043 char_run 3.6/PEJVYDIPEZE3PEETH4JTJCGA3CYUENZGVWP7RKYZLS6JMSZ5NXHA/layernorm_fwd_kernel.amdgcn
""".strip().splitlines()]


@pytest.mark.parametrize("parser, seed, kind, file", FOUND, ids=[f"{p}-{k}-{s}" for p, s, k, _ in FOUND])
def test_found_bugs_stay_fixed(parser, seed, kind, file):
    if parser == "sass":
        files_of("sass")  # nvdisasm makes the listing the case mutates
    case = fuzzing.make_case(FIXTURES / "caches" / f"triton-{file}", kind, int(seed))
    outcome = fuzzing.check(parser, PARSERS[parser][0], case)
    assert outcome.status != "bug", f"{case}\n{outcome.detail}"
    assert not fuzzing.superlinear(outcome, PARSERS[parser][0])


# Found by `bench/fuzz.py --probe`: (parser, fixture glob, a line's regex, where in it, the run inserted).
PROBED = [
    ("ptx", "triton-3.6/*/add_kernel.ptx", rb"^\tmov\.", rb"^", b";" * 3),  # IndexError: `;` first
    ("llir", "triton-3.9/*/softmax_kernel.llir", rb"^!\d+ = !DILocation", rb"line: ", b"x" * 100_000),  # 50 s
    ("amdgcn", "triton-3.6/*/add_kernel.amdgcn", rb"^\s+\.offset:", rb"\.offset:\s+", b"!" * 20_000),  # long message
    ("metadata", "triton-3.6/*/add_kernel.json", rb"^", rb"^", b"[" * 100_000),  # RecursionError out of json
]


@pytest.mark.parametrize("parser, pattern, line, at, run", PROBED, ids=[p[0] for p in PROBED])
def test_found_by_probing_stays_fixed(parser, pattern, line, at, run):
    import re

    file = sorted((FIXTURES / "caches").glob(pattern))[0]
    data = file.read_bytes()
    start = re.search(line, data, re.M).start()
    where = start + re.search(at, data[start:]).end()
    case = fuzzing.Case(file, "probe", 0, data[:where] + run + data[where:])
    outcome = fuzzing.check(parser, PARSERS[parser][0], case)
    assert outcome.status != "bug", outcome.detail
    assert not fuzzing.superlinear(outcome, PARSERS[parser][0])


def test_deeply_nested_amdhsa_yaml_does_not_kill_the_process():
    """libyaml recursed in C per `[` and crashed Python (SIGSEGV) at 100,000: run in a child."""
    code = (
        "import re, sys; sys.path.insert(0, 'tests'); import fuzzing\n"
        "f = sorted((fuzzing.FIXTURES / 'caches').glob('triton-3.6/*/add_kernel.amdgcn'))[0]\n"
        "d = f.read_bytes(); at = re.search(rb'\\.offset:\\s+', d).end()\n"
        "case = fuzzing.Case(f, 'probe', 0, d[:at] + b'[' * 100_000 + d[at:])\n"
        "print(fuzzing.check('amdgcn', fuzzing.PARSERS()['amdgcn'][0], case).status)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 0 and proc.stdout.strip() == "artifact-error", (proc.returncode, proc.stderr[-2000:])


@pytest.mark.parametrize("parser", sorted(set(PARSERS) - {"mlir_lark", "mlir_dump", "cubin"}))
def test_a_10mb_line_does_not_hang(parser):
    """A 10 MB line in a text artifact: read or rejected in seconds (regexes stay linear).
    (The reference MLIR reader, lark, is left out: irscope gives it broken text up to 1 MiB only.)"""
    files = files_of(parser)
    case = next(fuzzing.cases(fuzzing.spread(files, 1), 1, SEED, ["huge_line"]))
    outcome = fuzzing.check(parser, PARSERS[parser][0], case)
    assert outcome.status != "bug", f"{case}\n{outcome.detail}"
    assert not fuzzing.superlinear(outcome, PARSERS[parser][0])


# ---- the pipeline: one broken file costs only its own kernel ------------------------------------

@pytest.fixture(scope="module")
def cache_copies(tmp_path_factory):
    """Four hash directories of each fixture cache, copied and scanned clean once."""
    out = {}
    for cache in fuzzing.CACHES:
        dirs = sorted(p for p in (FIXTURES / "caches" / cache).iterdir() if p.is_dir())
        out[cache] = fuzzing.CacheCopy(fuzzing.spread(dirs, 4), tmp_path_factory.mktemp(cache) / "cache")
    return out


@pytest.mark.parametrize("cache", fuzzing.CACHES)
def test_one_broken_file_costs_only_its_kernel(cache_copies, cache):
    copy = cache_copies[cache]
    failures, seen = [], {}
    for case in fuzzing.cases(copy.files(), 24, SEED, skip=SKIP):
        problems, how = copy.check(case)
        seen[case.kind] = how
        failures += [f"{case}: {p}" for p in problems]
    assert not failures, "\n\n".join(failures)


# Pipeline cases that found a bug (cache, seed, mutation, file in fixtures/caches/).
FOUND_IN_PIPELINE = [
    ("triton-3.2", 3484531342, "extreme_numbers",  # "num_warps": 0 -> ZeroDivisionError in occupancy
     "triton-3.2/8IrGgiROTppKLTs0i0aPaIGsh4aGxV7Mo2yJ28oEox0/softmax_kernel.json"),
    ("triton-3.2", 3365281358, "truncate",  # cut inside .debug_info: Python lines changed, nothing said
     "triton-3.2/8IrGgiROTppKLTs0i0aPaIGsh4aGxV7Mo2yJ28oEox0/softmax_kernel.ptx"),
]


@pytest.mark.parametrize("cache, seed, kind, file", FOUND_IN_PIPELINE)
def test_found_pipeline_bugs_stay_fixed(tmp_path, cache, seed, kind, file):
    case = fuzzing.make_case(FIXTURES / "caches" / file, kind, seed)
    others = [d for d in sorted((FIXTURES / "caches" / cache).iterdir()) if d.is_dir()][:2]
    copy = fuzzing.CacheCopy(sorted({case.file.parent, *others}), tmp_path / "cache")
    problems, how = copy.check(case)
    assert not problems, problems
    assert how == "problem"


def test_truncated_and_junk_files_are_reported(cache_copies):
    """A cut or junk-filled artifact leaves its kernel with a problem naming the file, not silence."""
    copy = cache_copies["triton-3.6"]
    silent = []
    for file in copy.files():
        if file.suffix not in (".amdgcn", ".ptx", ".cubin", ".json", ".ttgir") or file.name.startswith("__grp__"):
            continue
        for kind in ("json_not_json", "empty") if file.suffix == ".json" else ("truncate", "splice_junk", "empty"):
            case = fuzzing.make_case(file, kind, SEED)
            problems, how = copy.check(case)
            assert not problems, problems
            if how == "changed":
                silent.append(str(case))
    assert not silent, "the kernel's report changed and it carries no problem:\n" + "\n".join(silent)


def test_cli_prints_no_traceback(tmp_path):
    root = copy_tree(FIXTURES / "caches" / "triton-3.0", tmp_path / "cache")
    dirs = sorted(p for p in root.iterdir() if p.is_dir())
    for d, kind, ext in ((dirs[0], "json_wrong_shape", ".json"), (dirs[1], "truncate", ".amdgcn"),
                         (dirs[2], "splice_junk", ".ttgir")):
        target = next((f for f in d.iterdir() if f.suffix == ext and not f.name.startswith("__grp__")), None)
        if target is not None:
            fixture = FIXTURES / "caches" / "triton-3.0" / d.name / target.name
            target.write_bytes(fuzzing.make_case(fixture, kind, SEED).data)
    proc = subprocess.run([sys.executable, "-m", "irscope", "scan", str(root), "--no-cache"],
                          capture_output=True, text=True, timeout=120)
    assert "Traceback" not in proc.stderr + proc.stdout
    assert "internal error" not in proc.stderr and fuzzing.ANALYSIS_RAISED not in proc.stdout + proc.stderr
    assert proc.returncode in (0, 3), proc.stderr  # a result, complete or partial; never a crash
    assert "matmul_kernel" in proc.stdout


def test_mixed_triton_versions_in_one_cache(tmp_path):
    """Hash directories of Triton 3.0, 3.2, 3.6 and 3.9 side by side: each kernel's report is
    the one it gets in a cache of its own version."""
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    expected = {}
    for cache in fuzzing.CACHES:
        dirs = fuzzing.spread(sorted(p for p in (FIXTURES / "caches" / cache).iterdir() if p.is_dir()), 3)
        alone = tmp_path / cache
        for d in dirs:
            copy_tree(d, alone / d.name)
            copy_tree(d, mixed / d.name)
        for kr in scan(str(alone), index=False, jobs=1).kernels:
            expected[kr.kernel.key] = _as_text(kr, alone)
    got = {kr.kernel.key: _as_text(kr, mixed) for kr in scan(str(mixed), index=False, jobs=1).kernels}
    assert got.keys() == expected.keys()
    assert [k for k in got if got[k] != expected[k]] == []


def _as_text(kernel_report, root: Path) -> str:
    from irscope.model.serde import to_data

    return json.dumps(to_data(kernel_report), sort_keys=True).replace(str(root), "<root>")


# ---- limits ------------------------------------------------------------------------------------

def test_sizes():
    assert [parse_size(t) for t in ("65536", "128M", "1G", "1.5GiB", "64MB", "100k")] == \
        [65536, 128 << 20, 1 << 30, 3 << 29, 64 << 20, 102400]
    for bad in ("", "12x", "-1", "0", "M"):
        with pytest.raises(ValueError):
            parse_size(bad)


def _sparse(path: Path, size: int) -> Path:
    with open(path, "r+b" if path.exists() else "wb") as f:
        f.truncate(size)
    return path


def test_200mb_artifact_is_reported_not_read(tmp_path, monkeypatch):
    monkeypatch.delenv("IRSCOPE_MAX_FILE_SIZE", raising=False)
    dirs = fuzzing.spread(sorted(p for p in (FIXTURES / "caches" / "triton-3.6").iterdir()
                                 if any(p.glob("add_kernel.amdgcn")) or any(p.glob("softmax_kernel.ptx"))), 2)
    root = tmp_path / "cache"
    for d in dirs:
        copy_tree(d, root / d.name)
    clean = {k.kernel.key: k for k in scan(str(root), index=False, jobs=1).kernels}
    big = next(root.glob("*/add_kernel.amdgcn"))
    big.write_bytes(b"")
    _sparse(big, 200_000_000)  # 200 MB of zeros, without writing them

    tracemalloc.start()
    try:
        report = scan(str(root), index=False, jobs=1)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 50_000_000, f"{peak:,} bytes allocated: the 200 MB file was read"
    for kr in report.kernels:
        if kr.kernel.directory != str(big.parent):
            assert kr == clean[kr.kernel.key]
            continue
        messages = {str(p) for p in kr.problems}
        assert f"{big}: 200.0 MB is over the 16 MiB limit for one .amdgcn; --max-file-size raises it" in messages
        assert not any(fuzzing.ANALYSIS_RAISED in m for m in messages)


def test_max_file_size_flag_raises_and_lowers_the_limit(tmp_path, monkeypatch):
    monkeypatch.delenv("IRSCOPE_MAX_FILE_SIZE", raising=False)
    src = next((FIXTURES / "caches" / "triton-3.6").glob("*/add_kernel.amdgcn")).parent
    root = copy_tree(src, tmp_path / "cache" / src.name).parent
    amdgcn = next(root.glob("*/add_kernel.amdgcn"))
    small = amdgcn.stat().st_size

    def run(*flags):
        proc = subprocess.run([sys.executable, "-m", "irscope", "scan", str(root), "--no-cache", "--json", "-", *flags],
                              capture_output=True, text=True, timeout=120)
        assert "Traceback" not in proc.stderr, proc.stderr
        return proc, [p["message"] for k in json.loads(proc.stdout)["kernels"] for p in k["problems"]]

    _, problems = run("--max-file-size", str(small - 1))
    assert any("over the" in m and "--max-file-size raises it" in m for m in problems), problems
    _, problems = run("--max-file-size", str(small))
    assert problems == []
    proc = subprocess.run([sys.executable, "-m", "irscope", "scan", str(root), "--max-file-size", "lots"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "not a size" in proc.stderr


def test_read_limited_stats_before_reading(tmp_path):
    path = _sparse(tmp_path / "k.ttgir", DEFAULT_MAX_FILE_SIZE + 1)
    with pytest.raises(ArtifactError, match=r"^.*: 67\.1 MB is over the 64 MiB limit for one artifact") as err:
        read_limited(str(path))
    assert err.value.path == str(path) and err.value.line is None
    assert len(read_limited(str(_sparse(path, 1000)))) == 1000


def test_gzip_bomb_is_decompressed_only_up_to_the_limit(tmp_path, monkeypatch):
    """A dump of 1 MiB of real text, then gigabytes of zeros in a few KB: rejected once the limit
    is passed, without decompressing the rest (the zeros are built here: they are not IR)."""
    from irscope.parsers.mlir_dump import read_dump

    monkeypatch.setenv("IRSCOPE_MAX_FILE_SIZE", "256K")  # a dump may be 16 times that: 4 MiB
    real = gzip.decompress(sorted((FIXTURES / "dumps").glob("*_add.txt.gz"))[0].read_bytes())
    zeros = gzip.compress(b"\0" * (64 << 20), compresslevel=9, mtime=0)  # 64 MiB in ~64 KB
    bomb = tmp_path / "bomb.txt.gz"
    bomb.write_bytes(gzip.compress(real, mtime=0) + zeros * 16)  # gzip members: 1 GiB in all
    assert bomb.stat().st_size < 4 << 20  # the file itself is under the limit: decompression must stop
    tracemalloc.start()
    try:
        # The zeros are NUL bytes: binary, rejected in the first chunk that holds one (issue 22 item 13);
        # a bomb of text is rejected at the limit (tests/test_resource_bounds.py).
        with pytest.raises(ArtifactError, match="contains NUL bytes") as err:
            read_dump(str(bomb))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert err.value.path == str(bomb)
    assert peak < 64 << 20, peak  # the 1 GiB behind the limit was never decompressed
    # Under the limit, the same dump reads as before.
    monkeypatch.delenv("IRSCOPE_MAX_FILE_SIZE")
    small = tmp_path / "dump.txt.gz"
    small.write_bytes(gzip.compress(real, mtime=0))
    assert read_dump(str(small)).kernels


@pytest.mark.parametrize("cut", [0, 1, 10, 100, 0.5, -4])
def test_cut_gzip_dump_is_an_artifact_error(tmp_path, cut):
    from irscope.parsers.mlir_dump import read_dump

    data = sorted((FIXTURES / "dumps").glob("*_add.txt.gz"))[0].read_bytes()
    n = int(len(data) * cut) if isinstance(cut, float) else cut
    path = tmp_path / "cut.txt.gz"
    path.write_bytes(data[:n])
    with pytest.raises(ArtifactError) as err:
        read_dump(str(path))
    assert err.value.path == str(path)


def test_fuzz_cases_reproduce():
    """The seed, kind and file a failure prints rebuild the same bytes."""
    file = fuzzing.parser_files("amdgcn")[0]
    for kind in fuzzing.TEXT_MUTATIONS:
        if kind != "huge_line":
            assert fuzzing.make_case(file, kind, 7).data == fuzzing.make_case(file, kind, 7).data
    case = fuzzing.make_case(file.relative_to(REPO), "truncate", 7)
    assert str(case) == f"seed=7, case=truncate, file={file.relative_to(REPO)}"
