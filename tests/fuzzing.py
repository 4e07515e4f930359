"""A seeded mutator of real fixture files, and the parser entry points it is aimed at.

Every input is a real fixture file (fixtures/caches/*, fixtures/kernel_dump, fixtures/dumps)
changed by one named mutation; nothing here writes IR or ISA. A case is (file, kind, seed):
`make_case` rebuilds the same bytes from those three, so a failure printed as
`seed=..., case=..., file=...` is reproduced by `python bench/fuzz.py --replay SEED KIND FILE`.

tests/test_fuzz.py runs a bounded number of cases with a fixed seed in CI; bench/fuzz.py
runs thousands.
"""

from __future__ import annotations

import gzip
import io
import random
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from fuzz_mutations import (  # noqa: F401 - the mutations are fuzzing's API too
    BINARY_MUTATIONS, HUGE_LINE, JSON_MUTATIONS, RUN_CHARS, TEXT_MUTATIONS, line_shapes, mutations_for, run_probes,
)

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"
CACHES = ("triton-3.0", "triton-3.2", "triton-3.6", "triton-3.9")

# ---- cases -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Case:
    file: Path  # the real fixture file
    kind: str  # the mutation's name
    seed: int
    data: bytes

    def __str__(self) -> str:
        return f"seed={self.seed}, case={self.kind}, file={self.file.relative_to(REPO)}"


_ORIGINALS: dict[Path, bytes] = {}


def original(path: Path) -> bytes:
    if path not in _ORIGINALS:
        _ORIGINALS[path] = path.read_bytes()
    return _ORIGINALS[path]


def make_case(file: Path, kind: str, seed: int) -> Case:
    """The same bytes for the same (file, kind, seed), on every machine."""
    file = Path(file) if Path(file).is_absolute() else REPO / file
    rng = random.Random(f"{seed}:{kind}:{file.relative_to(REPO).as_posix()}")
    return Case(file, kind, seed, mutations_for(file)[kind](original(file), rng))


def cases(files: list[Path], count: int, seed: int, kinds: list[str] | None = None, skip: tuple[str, ...] = ()):
    """`count` cases over `files`, every mutation kind in turn, from one master seed
    (only `kinds` if given, never those in `skip`)."""
    master = random.Random(seed)
    for i in range(count):
        file = files[i % len(files)] if i < len(files) else master.choice(files)
        names = [k for k in mutations_for(file) if (kinds is None or k in kinds) and k not in skip]
        if not names:
            continue
        yield make_case(file, names[i % len(names)] if i < 4 * len(names) else master.choice(names),
                        master.getrandbits(32))


# ---- the files of a fixture cache ------------------------------------------------------------

def fixture_files(*patterns: str, caches: tuple[str, ...] = CACHES) -> list[Path]:
    """Files of the fixture caches matching each glob (`*.amdgcn`), over every version given."""
    out: set[Path] = set()
    for cache in caches:
        for pattern in patterns:
            found = (FIXTURES / "caches" / cache).glob(f"*/{pattern}")
            out.update(p for p in found if not p.name.startswith("__grp__"))
    return sorted(out)


def spread(files: list[Path], n: int, max_size: int | None = None) -> list[Path]:
    """Up to n files spread over the sorted list (so every version is in it), smallest-first tie-break."""
    if max_size is not None:
        files = [f for f in files if f.stat().st_size <= max_size]
    if len(files) <= n:
        return files
    step = len(files) / n
    return [files[int(i * step)] for i in range(n)]


# ---- the parser entry points and their contract ----------------------------------------------

def _text(parse):
    def run(data: bytes, path: str):
        from irscope.model.errors import decode_text

        return parse(decode_text(data, path), path)
    return run


def _kernel_name(path: str) -> str:
    return Path(path).name.split(".")[0]


def _amdgcn(text: str, path: str):
    from irscope.parsers.amdgcn import parse_amdgcn, read_metadata

    program = parse_amdgcn(text, path)
    read_metadata(program)
    return program


def _mlir(reader: str):
    def run(text: str, path: str):
        from irscope.parsers.mlir_parser import parse_mlir

        return parse_mlir(text, path, reader)
    return run


def _dump(data: bytes, path: str):
    from irscope.parsers.mlir_dump import read_dump_bytes

    return read_dump_bytes(data, path)


def _llir_locations(text: str, path: str):
    """What irscope reads from a `.llir`: each `!dbg !N` resolved to a source line (irscope.ir.line_map)."""
    import re

    from irscope.parsers.llir import debug_info

    debug = debug_info(text)
    return [debug.location(int(ref)) for ref in re.findall(r"!dbg !(\d+)", text)]


def _parser_table() -> dict[str, tuple[Callable[[bytes, str], object], str]]:
    """name -> (parse bytes at a path, the fixture extension it reads)."""
    from irscope.parsers.amdgcn_resources import parse_amd_resources
    from irscope.parsers.cubin import parse_cubin
    from irscope.parsers.metadata import parse_metadata
    from irscope.parsers.ptx import parse_ptx
    from irscope.parsers.ptx_directives import parse_ptx_directives
    from irscope.parsers.sass import parse_sass

    return {
        "amdgcn": (_text(_amdgcn), "amdgcn"),
        "amdgcn_resources": (_text(lambda t, p: parse_amd_resources(t, p, _kernel_name(p))), "amdgcn"),
        "ptx": (_text(parse_ptx), "ptx"),
        "ptx_directives": (_text(parse_ptx_directives), "ptx"),
        "sass": (_text(parse_sass), "sass"),
        "llir": (_text(_llir_locations), "llir"),
        "mlir_fast": (_text(_mlir("fast")), "ttgir"),
        "mlir_lark": (_text(_mlir("lark")), "ttgir"),
        "metadata": (parse_metadata, "json"),
        "cubin": (lambda d, p: parse_cubin(d, p, _kernel_name(p)), "cubin"),
        "mlir_dump": (_dump, "txt.gz"),
    }


PARSERS = _parser_table


@dataclass
class Outcome:
    case: Case
    parser: str
    status: str  # "ok", "artifact-error", or "bug"
    seconds: float
    detail: str = ""


def check(parser: str, parse: Callable[[bytes, str], object], case: Case, path: str | None = None) -> Outcome:
    """Run one parser on one case: it returns, or raises ArtifactError naming this path and a line
    of the file; anything else is a bug, with its traceback in `detail`."""
    from irscope.model.errors import ArtifactError

    path = path or str(case.file)
    started = time.perf_counter()
    try:
        result = parse(case.data, path)
    except ArtifactError as exc:
        seconds = time.perf_counter() - started
        lines = _line_count(case.data)
        if exc.path != path:
            return Outcome(case, parser, "bug", seconds, f"ArtifactError names {exc.path!r}, not {path!r}: {exc}")
        if exc.line is not None and not (isinstance(exc.line, int) and 1 <= exc.line <= lines + 1):
            return Outcome(case, parser, "bug", seconds, f"ArtifactError line {exc.line!r} outside 1..{lines + 1}")
        if not exc.message or len(exc.message) > 400:
            return Outcome(case, parser, "bug", seconds, f"ArtifactError message empty or long: {exc.message[:500]!r}")
        return Outcome(case, parser, "artifact-error", seconds, exc.message)
    except RecursionError:
        return Outcome(case, parser, "bug", time.perf_counter() - started, _traceback())
    except Exception:  # noqa: BLE001 - any other exception is what the fuzzing looks for
        return Outcome(case, parser, "bug", time.perf_counter() - started, _traceback())
    seconds = time.perf_counter() - started
    bad = _bad_problem_lines(result, path, _line_count(case.data))
    return Outcome(case, parser, "bug" if bad else "ok", seconds, bad)


# A parse faster than this is linear enough whatever the machine's load; a slower one is timed again
# against the same case with half the inserted text (min of three runs each: load only adds time).
FAST_SECONDS = 0.05


def halved(case: Case) -> Case:
    """`case` with half of what its mutation inserted into the original file (a run, a long line)."""
    data, base = case.data, original(case.file)
    head = 0
    while head < min(len(data), len(base)) and data[head] == base[head]:
        head += 1
    tail = 0
    while tail < min(len(data), len(base)) - head and data[-1 - tail] == base[-1 - tail]:
        tail += 1
    inserted = data[head:len(data) - tail]
    return Case(case.file, f"{case.kind}/2", case.seed,
                data[:head] + inserted[:len(inserted) // 2] + data[len(data) - tail:])


def superlinear(outcome: Outcome, parse: Callable[[bytes, str], object]) -> str | None:
    """Why the parse of outcome's case grows faster than the text inserted into it, else None.

    A regex that backtracks over a run costs its square (or worse): doubling the run at least
    quadruples it, while a linear parse at most doubles. No absolute bound on seconds, which a
    loaded 2-core machine breaks; bench/fuzz.py reports slow cases by the clock."""
    if outcome.seconds < FAST_SECONDS:
        return None
    half = halved(outcome.case)
    full_s = min([outcome.seconds] + [check(outcome.parser, parse, outcome.case).seconds for _ in range(2)])
    half_s = min(check(outcome.parser, parse, half).seconds for _ in range(3))
    if full_s <= 3 * half_s + FAST_SECONDS:
        return None
    return f"{outcome.case}: {full_s:.2f} s, but {half_s:.2f} s with half the inserted text"


def _line_count(data: bytes) -> int:
    """Lines of the text a parser read: a gzipped dump's are those of its contents."""
    if data[:2] == b"\x1f\x8b":
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(data)) as f:
                data = f.read(1 << 30)
        except Exception:  # noqa: BLE001 - unreadable: the parser names no line then
            pass
    return data.count(b"\n") + 1


def _bad_problem_lines(result: object, path: str, lines: int) -> str:
    """Problems a parser returns (MLIR, LLVM IR) must name the file and a line of it, too."""
    for problem in getattr(result, "problems", ()) or ():
        line = getattr(problem, "line", None)
        if getattr(problem, "path", path) != path:
            return f"Problem names {problem.path!r}, not {path!r}"
        if line is not None and not 1 <= line <= lines + 1:
            return f"Problem line {line} outside 1..{lines + 1}: {problem}"
    return ""


def _traceback() -> str:
    import traceback

    return traceback.format_exc(limit=-8)


def sass_texts(limit: int = 2) -> list[Path]:
    """nvdisasm's listings of a few fixture cubins (the real tool's output), as `<cubin>.sass`
    originals for make_case; [] without nvdisasm."""
    from irscope.isa import nvtools

    if nvtools.find_tool("nvdisasm") is None:
        return []
    out = []
    for cubin in spread(fixture_files("*.cubin", caches=("triton-3.6", "triton-3.9")), limit, max_size=60_000):
        text, problem = nvtools.disassemble(str(cubin))
        if text is not None and problem is None:
            _ORIGINALS[cubin.with_suffix(".sass")] = text.encode()
            out.append(cubin.with_suffix(".sass"))
    return out


# ---- the whole pipeline on a cache with one file broken --------------------------------------

ANALYSIS_RAISED = "irscope could not analyze"  # pipeline.failed_kernel: analysis raised, a bug
RULE_RAISED = re.compile(r"rule IRS\d+ \(.*\) failed: ")  # rule_engine.run_rules: a rule raised, a bug too


class CacheCopy:
    """Hash directories copied into `work`, scanned clean once; then one file at a time is
    replaced by a case's bytes, scanned at the same path, and put back."""

    def __init__(self, dirs: list[Path], work: Path) -> None:
        import shutil

        from irscope.pipeline.analyze import scan

        self.root = work
        for d in dirs:
            shutil.copytree(d, work / d.name, symlinks=True)
        self.dirs = dirs
        self.clean = {k.kernel.key: k for k in scan(str(work), index=False, jobs=1).kernels}

    def files(self) -> list[Path]:
        """The fixture files these directories hold (what cases mutate)."""
        return sorted(f for d in self.dirs for f in d.iterdir() if f.is_file())

    def check(self, case: Case) -> tuple[list[str], str]:
        """(what is wrong with the scan of the copy with `case.file` replaced, how the mutated
        kernel came out: "unchanged", "problem" (it carries one) or "changed" (valid but other input))."""
        target = self.root / case.file.parent.name / case.file.name
        target.write_bytes(case.data)
        try:
            return self._compare(str(target.parent))
        finally:
            target.write_bytes(original(case.file))

    def _compare(self, directory: str) -> tuple[list[str], str]:
        from irscope.pipeline.analyze import scan

        try:
            report = scan(str(self.root), index=False, jobs=1)
        except Exception:  # noqa: BLE001 - the scan must never raise
            return [f"scan raised:\n{_traceback()}"], "raised"
        failures = []
        got = {k.kernel.key: k for k in report.kernels}
        if set(got) != set(self.clean):
            failures.append(f"kernels differ: lost {sorted(set(self.clean) - set(got))}, "
                            f"gained {sorted(set(got) - set(self.clean))}")
        mine = []
        for key, kr in got.items():
            if kr.kernel.directory != directory:
                if kr != self.clean.get(key):
                    failures.append(f"{key}: another kernel's report changed")
                continue
            mine.append(kr)
            for p in kr.problems:
                if ANALYSIS_RAISED in p.message:
                    failures.append(f"{key}: {p.message}\n{_analysis_traceback(kr.kernel)}")
                elif RULE_RAISED.match(p.message):
                    failures.append(f"{key}: {p.message}")
                elif not (p.path == directory or p.path.startswith(directory + "/")):
                    failures.append(f"{key}: a problem names {p.path}, outside {directory}")
                elif len(p.message) > 400:
                    failures.append(f"{key}: a problem's message is {len(p.message)} characters long")
        if all(_same_but_sizes(k, self.clean.get(k.kernel.key)) for k in mine):
            return failures, "unchanged"
        return failures, "problem" if any(k.problems for k in mine) else "changed"


def _same_but_sizes(got, clean) -> bool:
    """The same report, but for the mutated file's size in the kernel's artifact list."""
    from dataclasses import replace

    if clean is None or [a.path for a in got.kernel.artifacts] != [a.path for a in clean.kernel.artifacts]:
        return False
    return replace(got, kernel=replace(got.kernel, artifacts=clean.kernel.artifacts)) == clean


def _analysis_traceback(kernel) -> str:
    """The traceback the pipeline's guard swallowed, by analyzing the kernel again unguarded."""
    from irscope.pipeline.analyze import analyze_kernel

    try:
        analyze_kernel(kernel)
    except Exception:  # noqa: BLE001
        return _traceback()
    return "(analyzing it again did not raise)"


def parser_files(parser: str) -> list[Path]:
    """Every real fixture file a parser reads (nvdisasm listings made on the spot for sass)."""
    dump_dirs = sorted((FIXTURES / "kernel_dump").iterdir())
    if parser == "sass":
        return sass_texts(4)
    if parser == "mlir_dump":
        return sorted((FIXTURES / "dumps").glob("*.txt.gz"))
    if parser == "metadata":
        return [p for p in fixture_files("*.json") if not p.name.endswith(".autotune.json")]
    ext = {"amdgcn": "amdgcn", "amdgcn_resources": "amdgcn", "ptx": "ptx", "ptx_directives": "ptx",
           "llir": "llir", "cubin": "cubin"}.get(parser)
    patterns = (f"*.{ext}",) if ext else ("*.ttir", "*.ttgir")
    files = fixture_files(*patterns) + sorted(p for d in dump_dirs for pat in patterns for p in d.glob(pat))
    if parser == "mlir_lark":  # the reference reader reads 0.5 MB/s: small files only
        files = [p for p in files if p.stat().st_size <= 20_000]
    return files
