"""What the commands of irscope/cli/ share: the console, one-line errors, the exit status of an analysis,
the rule selection of the command line, and the checks of paths made before anything is read."""

from __future__ import annotations

import argparse
import os
import sys

from irscope.cli.exit_codes import EXIT_GATE, EXIT_OK, EXIT_PARTIAL, worst


def stdout_console():
    from irscope.render.closed_stdout import console

    out = console(highlight=False)
    if not out.is_terminal and not os.environ.get("COLUMNS", "").isdigit():
        out = console(highlight=False, width=200)  # a pipe or a file: don't squeeze tables into 80 columns
    return out


def error(message: str) -> None:
    # Plain print: a path in a message must not be wrapped, styled or read as markup.
    from irscope.model.safe_text import printable_message

    print(f"irscope: {printable_message(message)}", file=sys.stderr)


def status(reports, gate: str | None = None) -> int:
    """The exit status of an analysis: 3 when a kernel could not be analyzed in full, else 1 when
    `gate` (what tripped the user's --fail-on) is given, else 0. Both are said on stderr."""
    from irscope.cli.exit_codes import unanalyzed

    lost = [where for report in reports for where in unanalyzed(report)]
    if gate:
        error(gate)
    if lost:
        some = ", ".join(lost[:3]) + (f" and {len(lost) - 3} more" if len(lost) > 3 else "")
        error(f"partial results: {len(lost)} kernel(s) or path(s) could not be analyzed in full ({some}); "
              "the report lists their problems")
    return worst(EXIT_PARTIAL if lost else EXIT_OK, EXIT_GATE if gate else EXIT_OK)


def findings_gate(report, fail_on: str | None) -> str | None:
    """What tripped `scan --fail-on SEVERITY`, or None."""
    from irscope.cli.exit_codes import findings_at_or_above

    count = findings_at_or_above(report, fail_on) if fail_on else 0
    return f"{count} finding(s) at {fail_on} severity or above (--fail-on {fail_on})" if count else None


def rule_selection(args: argparse.Namespace):
    """[tool.irscope] from the nearest pyproject.toml, then the command line's flags."""
    from irscope.engine.selection import load_config

    def split(values: list[str]) -> list[str]:
        return [v.strip() for value in values for v in value.split(",") if v.strip()]

    return load_config().extended(split(args.select), split(args.ignore))


def refused_paths(paths) -> str | None:
    """Why these paths are not scanned before anything is read: an empty one is the working directory
    to os.walk (`irscope scan "$UNSET"`), never what was meant."""
    from irscope.pipeline.harvester import EMPTY_PATH

    return EMPTY_PATH if any(p == "" for p in paths) else None


def no_terminal() -> str | None:
    """Why the TUI cannot start here: without a terminal on stdin and stdout it would spin."""
    if sys.stdin.isatty() and sys.stdout.isatty():
        return None
    return "the TUI needs a terminal (stdin and stdout are not one here); `irscope scan` prints a table"


def saved_report(path: str, artifacts: str | None = None):
    """The Report saved at `path` (a `*.json` whose schema says so), else None: anything else is
    scanned, and the harvest refuses a named `.json` that is not Triton's metadata either.
    `artifacts` (--artifacts DIR): where its artifacts are read (irscope/model/saved_artifacts.py)."""
    from irscope.model.json_input import REPORT, json_kind
    from irscope.model.report import Report

    if path.endswith(".json") and json_kind(path)[0] == REPORT:
        return Report.load(path, artifacts)
    return None


def artifacts_problem(args: argparse.Namespace) -> str | None:
    """--artifacts DIR must be a directory: a mistyped one would make every stage unavailable."""
    if args.artifacts is not None and not os.path.isdir(args.artifacts):
        return f"--artifacts {args.artifacts}: not a directory (give a copy of the cache the report scanned)"
    return None


def load_side(path: str, selection, index: bool = True, jobs: int | None = None, artifacts: str | None = None,
              on_progress=None, shared: dict | None = None):
    """A saved report (`*.json` holding a Report), or a scan of a directory or artifact (`shared`: the
    results of the other side's scan, irscope.pipeline.analyze.scan)."""
    from irscope.pipeline.analyze import scan

    saved = saved_report(path, artifacts)
    return saved if saved is not None else scan(path, rules=selection, index=index, jobs=jobs,
                                                on_progress=on_progress, shared=shared)

