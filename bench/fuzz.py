"""The long fuzz run: tests/fuzzing.py's mutations of the real fixtures, thousands of cases.

    nice -n 10 python bench/fuzz.py --cases 5000 --seed 1 [--minutes N] [--pipeline N] [--reports N]
    python bench/fuzz.py --replay SEED KIND FILE [--parser NAME]     # one case again
    nice -n 10 python bench/fuzz.py --index 500 --seed 1 [--minutes N] [--kind K]  # the result index

Parser level: every parser entry point gets cases in turn; each returns or raises ArtifactError
naming its file and a line of it (tests/fuzzing.py `check`). Pipeline level (--pipeline N):
one file of one kernel of a small cache copy is mutated and the copy scanned; the other
kernels' reports must equal the clean scan's. Saved reports (--reports N, or alone with
--cases 0): a real report mutated anywhere in its tree or as text is read, rendered every way
and diffed both ways (tests/fuzz_reports.py); anything but a result or a ReportError naming
the file, or an "internal error" from the CLI, is a failure. Prints the cases by kind and by parser, the
failures with the seed, kind and file that reproduce them, the slowest cases and the time.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import fuzzing  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=int, default=5000, help="parser-level cases in all (default 5000)")
    ap.add_argument("--pipeline", type=int, default=None, help="pipeline-level cases (default: cases / 20)")
    ap.add_argument("--reports", type=int, default=0, help="saved-report cases (tests/fuzz_reports.py)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--minutes", type=float, default=None, help="stop starting cases after this long")
    ap.add_argument("--parser", action="append", help="only these parsers (repeatable)")
    ap.add_argument("--kind", action="append", help="only these mutation kinds (repeatable)")
    ap.add_argument("--skip", action="append", default=[], help="not these mutation kinds (repeatable)")
    ap.add_argument("--slow", type=float, default=5.0, help="report cases slower than this many seconds")
    ap.add_argument("--replay", nargs=3, metavar=("SEED", "KIND", "FILE"), help="run one case again")
    ap.add_argument("--probe", type=int, metavar="FILES", help="instead: every line shape x character run x "
                    "token start of FILES files per parser (backtracking regexes; slow cases are failures)")
    ap.add_argument("--index", type=int, metavar="CASES", help="instead: CASES damaged or forged result indexes "
                    "of a small cache copy, each scanned twice (bench/fuzz_index.py)")
    args = ap.parse_args()
    if args.index:
        import fuzz_index

        return fuzz_index.run(args)
    parsers = fuzzing.PARSERS()
    if args.replay:
        return replay(parsers, args)
    if args.probe:
        return probe(parsers, args)
    deadline = time.monotonic() + args.minutes * 60 if args.minutes else None
    started = time.monotonic()
    names = [n for n in parsers if not args.parser or n in args.parser]
    failures, slow = [], []
    by_kind: Counter = Counter()
    by_parser: dict[str, Counter] = defaultdict(Counter)
    # lark, the reference MLIR reader, reads 0.2 MB/s: irscope gives it broken text up to 1 MiB only
    # (parsers/mlir_parser.py), so no 10 MB lines for it here.
    streams = {n: fuzzing.cases(fuzzing.parser_files(n), args.cases, args.seed + i, args.kind,
                                tuple(args.skip) + (("huge_line",) if n == "mlir_lark" else ()))
               for i, n in enumerate(names)}
    for i in range(args.cases):
        if deadline and time.monotonic() > deadline:
            break
        name = names[i % len(names)]
        case = next(streams[name], None)
        if case is None:
            continue
        outcome = fuzzing.check(name, parsers[name][0], case)
        by_kind[case.kind] += 1
        by_parser[name][outcome.status] += 1
        if outcome.status == "bug":
            failures.append(outcome)
            print(f"FAIL {name}: {case}\n{outcome.detail}", flush=True)
        if outcome.seconds > args.slow:
            slow.append(outcome)
    parser_seconds = time.monotonic() - started
    pipeline = run_pipeline(args, deadline) if not args.parser else None
    reports = run_reports(args, deadline)
    total = time.monotonic() - started

    print(f"\nparser level: {sum(by_kind.values())} cases in {parser_seconds:.0f} s (seed {args.seed})")
    print("  by kind:   " + ", ".join(f"{k} {n}" for k, n in sorted(by_kind.items())))
    for name in names:
        c = by_parser[name]
        print(f"  {name:17} {sum(c.values()):5} cases: {c['ok']} read, {c['artifact-error']} ArtifactError, "
              f"{c['bug']} bugs")
    if slow:
        print(f"  slower than {args.slow} s: " + "; ".join(f"{o.parser} {o.seconds:.1f} s ({o.case})"
                                                          for o in sorted(slow, key=lambda o: -o.seconds)[:10]))
    if pipeline:
        print(pipeline)
    if reports:
        print(reports)
    failed = len(failures) + sum(text.count("FAIL") for text in (pipeline, reports) if text)
    print(f"failures: {failed}; total {total:.0f} s")
    for o in failures:
        print(f"  {o.parser}: {o.case}: {o.detail.strip().splitlines()[-1]}")
    return 1 if failed else 0


def run_reports(args, deadline) -> str:
    """Saved-report cases: a real report mutated, read, rendered and diffed (tests/fuzz_reports.py)."""
    if args.reports <= 0:
        return ""
    import fuzz_reports

    started = time.monotonic()
    by_kind: dict[str, Counter] = defaultdict(Counter)
    lines, slowest = [], (0.0, "")
    with tempfile.TemporaryDirectory(prefix="irscope-fuzz-reports-") as work:
        clean = fuzz_reports.clean_report(Path(work))
        text = clean.read_text(encoding="utf-8")
        # A case is slow when it costs more per byte than the clean report does, several times over:
        # a list grown 50-fold is 50 times the work, a quadratic step far more.
        per_byte = min(fuzz_reports.check(fuzz_reports.ReportCase("clean", 0, text), clean, Path(work)).seconds
                       for _ in range(3)) / len(text)
        for case in fuzz_reports.cases(text, args.reports, args.seed):
            if deadline and time.monotonic() > deadline:
                break
            outcome = fuzz_reports.check(case, clean, Path(work))
            by_kind[case.kind][outcome.status] += 1
            slowest = max(slowest, (outcome.seconds, str(case)))
            slow = outcome.seconds > args.slow and outcome.seconds > 10 * per_byte * max(len(case.text), len(text))
            if outcome.status == "bug" or slow:
                lines.append(f"FAIL reports: {case}: {outcome.seconds:.1f} s\n{outcome.detail}")
                print(lines[-1], flush=True)
    total = sum(sum(c.values()) for c in by_kind.values())
    head = (f"saved reports: {total} cases in {time.monotonic() - started:.0f} s, slowest {slowest[0]:.2f} s "
            f"({slowest[1]})")
    kinds = [f"  {kind:17} " + ", ".join(f"{k} {v}" for k, v in sorted(c.items()))
             for kind, c in sorted(by_kind.items())]
    return "\n".join([head] + kinds + lines)


def run_pipeline(args, deadline) -> str:
    """Pipeline cases over small copies of each fixture cache (a handful of hash directories)."""
    count = args.cases // 20 if args.pipeline is None else args.pipeline
    if count <= 0:
        return ""
    started = time.monotonic()
    outcomes: Counter = Counter()
    by_kind: dict[str, Counter] = defaultdict(Counter)
    lines = []
    per_cache = max(1, count // len(fuzzing.CACHES))
    for n, cache in enumerate(fuzzing.CACHES):
        dirs = sorted(p for p in (fuzzing.FIXTURES / "caches" / cache).iterdir() if p.is_dir())
        dirs = fuzzing.spread(dirs, 4)
        with tempfile.TemporaryDirectory(prefix="irscope-fuzz-") as work:
            copy = fuzzing.CacheCopy(dirs, Path(work) / "cache")
            for case in fuzzing.cases(copy.files(), per_cache, args.seed * 100 + n, args.kind, tuple(args.skip)):
                if deadline and time.monotonic() > deadline:
                    break
                problems, how = copy.check(case)
                outcomes[how] += 1
                by_kind[case.kind][how] += 1
                if problems:
                    lines.append(f"FAIL pipeline: {case}: " + "\n  ".join(problems))
                    print(lines[-1], flush=True)
    head = (f"pipeline level: {sum(outcomes.values())} cases in {time.monotonic() - started:.0f} s, the mutated "
            "kernel came out: " + ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items())))
    kinds = [f"  {kind:17} " + ", ".join(f"{k} {v}" for k, v in sorted(c.items()))
             for kind, c in sorted(by_kind.items())]
    return "\n".join([head] + kinds + lines)


def probe(parsers, args) -> int:
    started = time.monotonic()
    deadline = started + args.minutes * 60 if args.minutes else None
    bad = 0
    for name in [n for n in parsers if n not in ("cubin", "mlir_dump", "metadata")
                 and (not args.parser or n in args.parser)]:
        count, worst = 0, (0.0, "")
        for file in fuzzing.spread(fuzzing.parser_files(name), args.probe):
            for what, data in fuzzing.run_probes(fuzzing.original(file)):
                if deadline and time.monotonic() > deadline:
                    break
                outcome = fuzzing.check(name, parsers[name][0], fuzzing.Case(file, "probe", 0, data))
                count += 1
                where = f"{file.relative_to(fuzzing.REPO)} {what}"
                worst = max(worst, (outcome.seconds, where))
                if outcome.status == "bug" or outcome.seconds > args.slow:
                    bad += 1
                    print(f"FAIL {name}: {where}: {outcome.seconds:.1f} s\n{outcome.detail}", flush=True)
        print(f"{name:17} {count:6} probes, slowest {worst[0]:.2f} s ({worst[1]})", flush=True)
    print(f"failures: {bad}; total {time.monotonic() - started:.0f} s")
    return 1 if bad else 0


def replay(parsers, args) -> int:
    seed, kind, file = args.replay
    if file.endswith(".sass"):
        fuzzing.sass_texts(8)
    case = fuzzing.make_case(Path(file), kind, int(seed))
    ext = "txt.gz" if file.endswith(".txt.gz") else file.rsplit(".", 1)[-1]
    names = args.parser or [n for n, (_, e) in parsers.items() if e == ext or (e == "ttgir" and ext == "ttir")]
    bad = 0
    for name in names:
        outcome = fuzzing.check(name, parsers[name][0], case)
        print(f"{name}: {case}: {outcome.status} in {outcome.seconds:.2f} s\n{outcome.detail}")
        bad += outcome.status == "bug"
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
