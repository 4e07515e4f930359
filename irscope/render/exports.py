"""`scan --sarif/--csv/--parquet/--markdown` and `diff --markdown`: the flags and the files they write.

The formats are in irscope/render/ (sarif.py, frames.py, markdown.py) and docs/exports.md. Each
flag takes a FILE, or `-` for stdout (not `--parquet`, which is binary); only one output may go
to stdout, and then the console table is not printed. Checked before anything is scanned, so a
missing pyarrow, an unwritable FILE or a FILE inside a scanned path is said at once, not after a
long scan (irscope/render/outputs.py); a write that fails is an OutputError naming the file.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from typing import Iterable

from irscope.render.outputs import check_outputs, write_text, written
from irscope.model.safe_text import printable, surrogates_escaped

STDOUT = "-"
SCAN_EXPORTS = ("json", "sarif", "csv", "parquet", "markdown")


def add_scan_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sarif", metavar="FILE",
                        help="write the findings as SARIF 2.1.0 to FILE ('-' for stdout), for code scanning")
    parser.add_argument("--csv", metavar="FILE",
                        help="write one row per kernel to FILE ('-' for stdout) and one per finding to "
                             "FILE-findings (out.csv -> out-findings.csv); columns in docs/exports.md")
    parser.add_argument("--parquet", metavar="FILE",
                        help="the same two tables as Parquet (FILE, FILE-findings); needs pyarrow "
                             "(pip install 'irscope[parquet]')")
    parser.add_argument("--markdown", metavar="FILE",
                        help="write a summary for a pull-request comment to FILE ('-' for stdout)")
    parser.add_argument("--source", action="append", default=[], metavar="DIR",
                        help="the repository checkout (repeatable): Python paths found under DIR, by their trailing "
                             "components, are shown and exported relative to the first DIR (SARIF's SRCROOT); "
                             "[tool.irscope] source-roots maps them too")


def add_diff_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--markdown", metavar="FILE",
                        help="write a summary for a pull-request comment, regressions first, to FILE ('-' for stdout)")


def check(args: argparse.Namespace, names: tuple[str, ...] = SCAN_EXPORTS, roots: Iterable[str] = ()) -> str | None:
    """Why these export flags cannot be honoured, or None: two on stdout, no pyarrow, a FILE that
    cannot be written or lies inside one of `roots` (the paths to be scanned)."""
    from irscope.engine.selection import RuleConfigError
    from irscope.ir.source_roots import source_dir_problem

    problem = source_dir_problem(getattr(args, "source", None) or ())
    if problem:
        return problem
    try:  # [tool.irscope] source-roots, read before a long scan
        source_roots(args)
    except RuleConfigError as exc:
        return str(exc)
    given = {n: getattr(args, n, None) for n in names if getattr(args, n, None)}
    to_stdout = [n for n, v in given.items() if v == STDOUT]
    if len(to_stdout) > 1:
        return f"only one output can go to stdout; give a FILE to {' or '.join('--' + n for n in to_stdout[1:])}"
    if given.get("parquet") == STDOUT:
        return "--parquet writes a binary file: give a FILE, not '-'"
    if "parquet" in given and not pyarrow_installed():
        return ("--parquet needs pyarrow, which is not installed: "
                "pip install 'irscope[parquet]' (or: pip install pyarrow)")
    return check_outputs(output_files(given), roots)


def output_files(given: dict[str, str]) -> list[str]:
    """Every file the flags write: --csv and --parquet write FILE-findings beside FILE."""
    from irscope.model.frames import findings_path

    files = []
    for name, value in given.items():
        files.append(value)
        if name in ("csv", "parquet") and value != STDOUT:
            files.append(findings_path(value))
    return files


def pyarrow_installed() -> bool:
    return importlib.util.find_spec("pyarrow") is not None


def _write(path: str, text: str, terminal_safe: bool = False) -> None:
    # A file name that is not UTF-8 (or a lone `\ud800` escape) is a lone surrogate no UTF-8 writer
    # can write: written as a visible escape instead of losing the whole file.
    text = surrogates_escaped(text)
    if path == STDOUT:
        # CSV keeps an artifact's text as it is; on a terminal its escapes would act: show them.
        from irscope.render.closed_stdout import write_stdout

        write_stdout(printable(text) if terminal_safe and sys.stdout.isatty() else text)
    else:
        write_text(path, text)


def source_roots(args: argparse.Namespace):
    """The roots that map the report's Python paths into the repository: --source DIR (repeatable)
    and [tool.irscope] source-roots (irscope/ir/source_roots.py); checked by `check`."""
    from irscope.ir.source_roots import load_source_roots

    return load_source_roots(getattr(args, "source", None) or ())


def write_scan(report, args: argparse.Namespace) -> bool:
    """Write every export asked for (not --json, which the command writes); True when one went to stdout."""
    roots = source_roots(args) if args.sarif or args.markdown else None
    if args.sarif:
        from irscope.render.sarif import sarif_text

        _write(args.sarif, sarif_text(report, roots=roots))
    if args.csv or args.parquet:
        from irscope.model.frames import findings_frame, findings_path, kernels_frame

        kernels, findings = kernels_frame(report), findings_frame(report)
        if args.csv:
            _write(args.csv, kernels.to_csv(index=False, lineterminator="\n"), terminal_safe=True)
            if args.csv != STDOUT:
                _write(findings_path(args.csv), findings.to_csv(index=False, lineterminator="\n"))
        if args.parquet:
            written(args.parquet, lambda: kernels.to_parquet(args.parquet, index=False))
            more = findings_path(args.parquet)
            written(more, lambda: findings.to_parquet(more, index=False))
    if args.markdown:
        from irscope.render.markdown import scan_markdown

        _write(args.markdown, scan_markdown(report, roots=roots))
    return STDOUT in (args.sarif, args.csv, args.markdown)


def write_diff(diff, args: argparse.Namespace) -> bool:
    if args.markdown:
        from irscope.render.markdown import diff_markdown

        _write(args.markdown, diff_markdown(diff))
    return args.markdown == STDOUT
